//! The `name` field: a template with `{placeholder}`s, rendered per kernel into a Rust identifier.

use crate::model::{Api, GemmKernel};
use std::collections::HashSet;

/// Renders one placeholder for a kernel.
type Render = fn(&GemmKernel) -> String;

/// Every placeholder: its name, the CUTLASS generation it is for (`None`: both) and its value for a
/// kernel. `{layout}` is the A and B letters (`t` row, `n` column, as in CUTLASS names) and
/// `{layout_c}` C's letter; `{stages}` is `auto` for 3.x kernels that leave stages to CUTLASS.
const PLACEHOLDERS: &[(&str, Option<Api>, Render)] = &[
    ("arch", None, |k| k.arch.to_string()),
    ("opclass", None, |k| k.opclass.to_string()),
    ("a", None, |k| k.element_a.to_string()),
    ("b", None, |k| k.element_b.to_string()),
    ("c", None, |k| k.element_c.to_string()),
    ("acc", None, |k| k.element_accumulator.to_string()),
    ("epilogue_compute", None, |k| k.element_epilogue.to_string()),
    ("layout", None, |k| {
        format!("{}{}", k.layout_a.letter(), k.layout_b.letter())
    }),
    ("layout_c", None, |k| k.layout_c.letter().to_string()),
    ("align", None, |k| k.alignment_a.to_string()),
    ("align_c", None, |k| k.alignment_c.to_string()),
    ("tile", None, |k| k.tile.to_string()),
    ("cluster", Some(Api::Cutlass3x), |k| k.cluster.to_string()),
    ("warps", Some(Api::Cutlass2x), |k| k.warps.to_string()),
    ("instruction", Some(Api::Cutlass2x), |k| k.instruction.to_string()),
    ("stages", None, |k| match k.stages {
        0 => "auto".to_string(),
        n => n.to_string(),
    }),
    ("schedule", Some(Api::Cutlass3x), |k| k.schedule.to_string()),
    ("epilogue_schedule", Some(Api::Cutlass3x), |k| {
        k.epilogue_schedule.to_string()
    }),
    ("tile_scheduler", Some(Api::Cutlass3x), |k| {
        k.tile_scheduler.to_string()
    }),
    ("math", None, |k| k.math.to_string()),
    ("swizzle", Some(Api::Cutlass2x), |k| k.swizzle.to_string()),
    ("split_k", Some(Api::Cutlass2x), |k| k.split_k.to_string()),
    ("epilogue", None, |k| k.epilogue.to_string()),
    ("activation", None, |k| k.fusion.activation.to_string()),
    ("fusion", None, |k| k.fusion.label()),
    ("group_schedule", Some(Api::Cutlass2x), |k| {
        k.group_schedule.to_string()
    }),
    ("batch_mode", Some(Api::Cutlass3x), |k| k.batch_mode.to_string()),
    ("iterator_algorithm", Some(Api::Cutlass2x), |k| {
        k.iterator_algorithm.to_string()
    }),
    ("stride_support", Some(Api::Cutlass2x), |k| {
        k.stride_support.to_string()
    }),
    ("tensor_layout", Some(Api::Cutlass2x), |k| {
        k.conv_layout.to_string()
    }),
];

/// Whether placeholder `i` means something for `kernel`.
fn applies(i: usize, kernel: &GemmKernel) -> bool {
    PLACEHOLDERS[i].1.map_or(true, |api| api == kernel.api())
}

/// How messages name a CUTLASS generation.
fn generation(api: Api) -> &'static str {
    match api {
        Api::Cutlass2x => "arch 80 (CUTLASS 2.x)",
        Api::Cutlass3x => "arch 90 (CUTLASS 3.x)",
    }
}

/// A parsed `name`: literal text and placeholders.
pub struct Template(Vec<Piece>);

enum Piece {
    Text(String),
    /// Index into `PLACEHOLDERS`.
    Hole(usize),
}

fn allowed_placeholders() -> String {
    PLACEHOLDERS
        .iter()
        .map(|(p, ..)| format!("{{{p}}}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Template {
    /// Parses `text`, reporting every unknown placeholder and unbalanced brace (each distinct
    /// problem once). Linear in the length of `text`, however many braces it holds.
    pub fn parse(text: &str) -> Result<Template, Vec<String>> {
        let mut pieces = Vec::new();
        let mut problems = Vec::new();
        // `{` and `}` without a partner: each message quotes the whole template, so say it once.
        let mut unbalanced = [false; 2];
        let mut unbalanced_brace = |brace: u8, problems: &mut Vec<String>| {
            let seen = &mut unbalanced[usize::from(brace == b'}')];
            if !std::mem::replace(seen, true) {
                problems.push(format!(
                    "unbalanced `{}` in `{text}`; placeholders are written `{{name}}`, one of {}",
                    char::from(brace),
                    allowed_placeholders()
                ));
            }
        };
        let mut unknown = HashSet::new();
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            pieces.push(Piece::Text(rest[..open].to_string()));
            let brace = rest.as_bytes()[open];
            let close = rest[open..].find('}').map(|c| open + c);
            match close {
                Some(close) if brace == b'{' => {
                    let key = &rest[open + 1..close];
                    match PLACEHOLDERS.iter().position(|(p, ..)| *p == key) {
                        Some(i) => pieces.push(Piece::Hole(i)),
                        None if unknown.insert(key) => problems.push(format!(
                            "unknown placeholder `{{{key}}}`; allowed placeholders: {}",
                            allowed_placeholders()
                        )),
                        None => {}
                    }
                    rest = &rest[close + 1..];
                }
                // No `}` is left: every brace from here on is an unbalanced `{`.
                None => {
                    unbalanced_brace(b'{', &mut problems);
                    rest = "";
                }
                Some(_) => {
                    unbalanced_brace(brace, &mut problems);
                    rest = &rest[open + 1..];
                }
            }
        }
        pieces.push(Piece::Text(rest.to_string()));
        if problems.is_empty() {
            Ok(Template(pieces))
        } else {
            Err(problems)
        }
    }

    pub fn render(&self, kernel: &GemmKernel) -> String {
        self.0
            .iter()
            .map(|piece| match piece {
                Piece::Text(t) => t.clone(),
                Piece::Hole(i) => (PLACEHOLDERS[*i].2)(kernel),
            })
            .collect()
    }

    /// A message for each placeholder of the template that has no meaning for `kernel` (such as
    /// `{warps}` for an arch 90 kernel, whose schedule decides the warps).
    pub fn misused(&self, kernel: &GemmKernel) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|piece| match piece {
                Piece::Hole(i) if !applies(*i, kernel) => {
                    let (name, api, _) = PLACEHOLDERS[*i];
                    let api = api.expect("placeholders for both generations always apply");
                    Some(format!(
                        "placeholder `{{{name}}}` is only for {} kernels, and this one is arch {}; allowed \
                         placeholders for it: {}",
                        generation(api),
                        kernel.arch,
                        allowed_for(kernel)
                    ))
                }
                _ => None,
            })
            .collect()
    }
}

/// The placeholders that mean something for `kernel`.
fn allowed_for(kernel: &GemmKernel) -> String {
    (0..PLACEHOLDERS.len())
        .filter(|&i| applies(i, kernel))
        .map(|i| format!("{{{}}}", PLACEHOLDERS[i].0))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Placeholders whose values differ between two kernels: what a template could add to name them
/// apart (only those that mean something for both).
pub fn distinguishing_placeholders(x: &GemmKernel, y: &GemmKernel) -> Vec<String> {
    (0..PLACEHOLDERS.len())
        .filter(|&i| applies(i, x) && applies(i, y))
        .filter(|&i| (PLACEHOLDERS[i].2)(x) != (PLACEHOLDERS[i].2)(y))
        .map(|i| format!("{{{}}}", PLACEHOLDERS[i].0))
        .collect()
}

/// Rust's strict and reserved keywords (all editions), which cannot name a function.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop",
    "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self", "static",
    "struct", "super", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use", "virtual",
    "where", "while", "yield",
];

/// Checks that `name` can be a snake_case Rust function name.
pub fn check_identifier(name: &str) -> Result<(), String> {
    let rule = "a Rust name must be lowercase ASCII letters, digits and `_`, not start with a digit, and not be a Rust keyword";
    let chars_ok = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if name.is_empty() || name == "_" {
        Err(format!("`{name}` is not a valid Rust name; {rule}"))
    } else if !chars_ok {
        Err(format!("`{name}` has characters outside [a-z0-9_]; {rule}"))
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        Err(format!("`{name}` starts with a digit; {rule}"))
    } else if KEYWORDS.contains(&name) {
        Err(format!("`{name}` is a Rust keyword; {rule}"))
    } else {
        Ok(())
    }
}
