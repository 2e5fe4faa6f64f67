//! The `name` field: a template with `{placeholder}`s, rendered per kernel into a Rust identifier.

use crate::model::GemmKernel;

/// Renders one placeholder for a kernel.
type Render = fn(&GemmKernel) -> String;

/// Every placeholder, with its value for a kernel. `{layout}` is the A and B letters (`t` row,
/// `n` column, as in CUTLASS names) and `{layout_c}` C's letter.
const PLACEHOLDERS: &[(&str, Render)] = &[
    ("arch", |k| k.arch.to_string()),
    ("opclass", |k| k.opclass.to_string()),
    ("a", |k| k.element_a.to_string()),
    ("b", |k| k.element_b.to_string()),
    ("c", |k| k.element_c.to_string()),
    ("acc", |k| k.element_accumulator.to_string()),
    ("epilogue_compute", |k| k.element_epilogue.to_string()),
    ("layout", |k| {
        format!("{}{}", k.layout_a.letter(), k.layout_b.letter())
    }),
    ("layout_c", |k| k.layout_c.letter().to_string()),
    ("align", |k| k.alignment_a.to_string()),
    ("align_c", |k| k.alignment_c.to_string()),
    ("tile", |k| k.tile.to_string()),
    ("warps", |k| k.warps.to_string()),
    ("instruction", |k| k.instruction.to_string()),
    ("stages", |k| k.stages.to_string()),
    ("math", |k| k.math.to_string()),
    ("swizzle", |k| k.swizzle.to_string()),
    ("epilogue", |k| k.epilogue.to_string()),
];

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
        .map(|(p, _)| format!("{{{p}}}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Template {
    /// Parses `text`, reporting every unknown placeholder and unbalanced brace.
    pub fn parse(text: &str) -> Result<Template, Vec<String>> {
        let mut pieces = Vec::new();
        let mut problems = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            pieces.push(Piece::Text(rest[..open].to_string()));
            let close = rest[open..].find('}').map(|c| open + c);
            match close {
                Some(close) if rest.as_bytes()[open] == b'{' => {
                    let key = &rest[open + 1..close];
                    match PLACEHOLDERS.iter().position(|(p, _)| *p == key) {
                        Some(i) => pieces.push(Piece::Hole(i)),
                        None => problems.push(format!(
                            "unknown placeholder `{{{key}}}`; allowed placeholders: {}",
                            allowed_placeholders()
                        )),
                    }
                    rest = &rest[close + 1..];
                }
                _ => {
                    problems.push(format!(
                        "unbalanced `{}` in `{text}`; placeholders are written `{{name}}`, one of {}",
                        &rest[open..open + 1],
                        allowed_placeholders()
                    ));
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
                Piece::Hole(i) => (PLACEHOLDERS[*i].1)(kernel),
            })
            .collect()
    }
}

/// Placeholders whose values differ between two kernels: what a template could add to name them apart.
pub fn distinguishing_placeholders(x: &GemmKernel, y: &GemmKernel) -> Vec<String> {
    PLACEHOLDERS
        .iter()
        .filter(|(_, value)| value(x) != value(y))
        .map(|(p, _)| format!("{{{p}}}"))
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
