//! Reads and checks one `kind: custom` entry, expanding its families. Every problem is reported
//! with the key it belongs to; an entry with any problem yields no kernel.

use serde_yaml::Value as Yaml;

use super::{CustomKernel, ExprSpec, ParamSpec, Value};
use crate::manifest::schema::RawOperation;
use crate::manifest::{is_identifier, Report};
use crate::model::custom::{Access, Expr, Name, ScalarType};
use crate::model::{DType, Layout, Shape3};

/// The keys only custom entries take.
pub const RAW_KEYS: &[&str] = &[
    "source",
    "entry",
    "operation",
    "design",
    "params",
    "grid",
    "block",
    "shared_memory",
    "requires",
];

/// A kernel's design values, by key, in manifest order.
type DesignValues = Vec<(String, Value)>;

/// At most this many kernels per entry (as for CUTLASS entries).
const MAX_VARIANTS: usize = 256;

/// Rust keywords (and `stream`, the typed `run`'s first parameter), which no parameter may be
/// called: parameters become the `run` function's argument names.
const RESERVED: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof",
    "unsized", "virtual", "yield", "stream",
];

type Ctx<'r, 't> = crate::manifest::EntryReader<'r, 't>;

/// Reads entry `index` (already known to be `kind: custom`) into its kernels.
pub fn read_entry(raw: &RawOperation, index: usize, report: &mut Report, origin: &str) -> Vec<CustomKernel> {
    let mut cx = Ctx::new(report, index);
    for (key, present) in raw.gemm_keys() {
        if present {
            cx.bad(
                key,
                format!(
                    "`{key}` is not a key of `kind: custom` entries; they take name, feature, arch, tile, \
                     and {}",
                    RAW_KEYS.join(", ")
                ),
            );
        }
    }
    let feature = cx.feature(&raw.feature);
    let source = required_string(
        &mut cx,
        "source",
        &raw.source,
        "the kernel's CUDA source, relative to the manifest",
    );
    let entry = required_string(
        &mut cx,
        "entry",
        &raw.entry,
        "the `extern \"C\" __global__` function to launch",
    );
    if let Some(e) = &entry {
        if !is_identifier(e, false) {
            cx.bad("entry", format!("`{e}` is not a C identifier"));
        }
    }
    let operation = match &raw.operation {
        None => "custom".to_string(),
        Some(Yaml::String(s)) if is_identifier(s, false) => s.clone(),
        Some(other) => {
            cx.bad(
                "operation",
                format!("{} is not a word such as `gemm`", describe(other)),
            );
            String::new()
        }
    };
    let archs = read_archs(&mut cx, &raw.arch);
    let tiles = read_tiles(&mut cx, &raw.tile);
    let design = read_design(&mut cx, &raw.design);
    let params_raw = match &raw.params {
        Some(Yaml::Sequence(items)) if !items.is_empty() => items.clone(),
        Some(other) => {
            cx.bad(
                "params",
                format!("{} is not a list of parameters", describe(other)),
            );
            Vec::new()
        }
        None => {
            cx.bad(
                "params",
                "missing; list the entry's parameters in order, e.g. `- {name: m, type: i32}`".into(),
            );
            Vec::new()
        }
    };
    let grid = read_shape_exprs(&mut cx, "grid", &raw.grid);
    let block = read_shape_exprs(&mut cx, "block", &raw.block);
    let requires = read_requires(&mut cx, &raw.requires);
    // Keep reading after a problem, so that every problem of the entry is reported at once; the
    // entry yields no kernel if there was any.
    let source = source.unwrap_or_default();
    let entry = entry.unwrap_or_default();

    // Families: arch × tile × each design key, the first varying slowest.
    let mut variants: Vec<(u32, Shape3, DesignValues)> = Vec::new();
    for &arch in &archs {
        for &tile in &tiles {
            let mut partial: Vec<Vec<(String, Value)>> = vec![Vec::new()];
            for (key, options) in &design {
                let mut next = Vec::new();
                for prefix in &partial {
                    for option in options {
                        let mut values = prefix.clone();
                        values.push((key.clone(), option.clone()));
                        next.push(values);
                    }
                }
                partial = next;
                if partial.len() > MAX_VARIANTS {
                    break;
                }
            }
            for values in partial {
                variants.push((arch, tile, values));
            }
        }
    }
    if variants.len() > MAX_VARIANTS {
        cx.bad(
            "design",
            format!("the entry expands to more than {MAX_VARIANTS} kernels: shorten its lists or split it"),
        );
        return Vec::new();
    }
    let several = variants.len() > 1;
    let words: Vec<(String, Vec<String>)> = design
        .iter()
        .map(|(key, options)| {
            let words = options
                .iter()
                .filter_map(|o| match o {
                    Value::Word(w) => Some(w.clone()),
                    Value::Int(_) => None,
                })
                .collect();
            (key.clone(), words)
        })
        .collect();
    let mut kernels = Vec::new();
    for (arch, tile, design_values) in variants {
        let mut values: Vec<(String, Value)> = vec![
            ("tile_m".into(), Value::Int(tile.m as i64)),
            ("tile_n".into(), Value::Int(tile.n as i64)),
            ("tile_k".into(), Value::Int(tile.k as i64)),
        ];
        values.extend(design_values);
        let rust_name = match &raw.name {
            Some(Yaml::String(template)) => fill_name(&mut cx, template, arch, &values),
            Some(other) => {
                cx.bad("name", format!("{} is not a name template", describe(other)));
                None
            }
            None if several => {
                cx.bad(
                    "name",
                    "missing; an entry with families needs a name template with a placeholder per \
                     varying value, e.g. `name: my_kernel_{tile_m}x{tile_n}`"
                        .into(),
                );
                None
            }
            None => Some(entry.clone()),
        }
        .unwrap_or_default();
        let Some(params) = read_params(&mut cx, &params_raw, &values, &words) else {
            continue;
        };
        let (grid, block, shared_memory, requires) = {
            let resolve = resolver(&params, &values, &words);
            let compile = |cx: &mut Ctx, key: &str, text: &str| compile_expr(cx, key, text, &resolve);
            let grid = expand_shape(&grid, |text| compile(&mut cx, "grid", text));
            let block = expand_shape(&block, |text| compile(&mut cx, "block", text));
            let shared_memory = match raw.shared_memory.as_ref().map(|v| (v, expr_text(v))) {
                None => Some(constant(0)),
                Some((_, Some(text))) => compile(&mut cx, "shared_memory", &text),
                Some((value, None)) => {
                    cx.bad(
                        "shared_memory",
                        format!("{} is not an expression", describe(value)),
                    );
                    None
                }
            };
            let requires: Vec<Option<(ExprSpec, String)>> = requires
                .iter()
                .map(|(text, reason)| compile(&mut cx, "requires", text).map(|e| (e, reason.clone())))
                .collect();
            (grid, block, shared_memory, requires)
        };
        let (Some(grid), Some(block), Some(shared_memory)) = (grid, block, shared_memory) else {
            continue;
        };
        if let Some(threads) = constant_block_threads(&block) {
            if threads > 1024 {
                cx.bad(
                    "block",
                    format!("the block has {threads} threads for tile {tile}; a block holds at most 1024"),
                );
            }
        }
        let Some(requires) = requires.into_iter().collect::<Option<Vec<_>>>() else {
            continue;
        };
        kernels.push(CustomKernel {
            rust_name,
            feature: feature.clone(),
            origin: origin.to_string(),
            arch,
            source: source.clone(),
            entry: entry.clone(),
            operation: operation.clone(),
            params,
            tile,
            values,
            grid,
            block,
            shared_memory,
            requires,
        });
    }
    if cx.ok {
        kernels
    } else {
        Vec::new()
    }
}

fn describe(value: &Yaml) -> String {
    crate::manifest::describe_value(value)
}

fn required_string(cx: &mut Ctx, key: &str, value: &Option<Yaml>, help: &str) -> Option<String> {
    match value {
        Some(Yaml::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(other) => {
            cx.bad(key, format!("{} is not a string; give {help}", describe(other)));
            None
        }
        None => {
            cx.bad(key, format!("missing; give {help}"));
            None
        }
    }
}

fn read_archs(cx: &mut Ctx, value: &Option<Yaml>) -> Vec<u32> {
    let one = |v: &Yaml| v.as_u64().filter(|a| *a == 80 || *a == 90).map(|a| a as u32);
    let archs = match value {
        None => Some(vec![80]),
        Some(Yaml::Sequence(items)) => items.iter().map(one).collect(),
        Some(v) => one(v).map(|a| vec![a]),
    };
    archs.unwrap_or_else(|| {
        cx.bad(
            "arch",
            "allowed: 80 (portable code, runs on compute capability 8.0 and newer), 90 (sm_90a code, \
             Hopper only), or a list of them"
                .into(),
        );
        vec![80]
    })
}

fn read_tiles(cx: &mut Ctx, value: &Option<Yaml>) -> Vec<Shape3> {
    let shape = |v: &Yaml| -> Option<Shape3> {
        let items = v.as_sequence()?;
        let dims: Option<Vec<u32>> = items
            .iter()
            .map(|d| d.as_u64().filter(|d| (1..=65536).contains(d)).map(|d| d as u32))
            .collect();
        match dims?.as_slice() {
            [m, n] => Some(Shape3::new(*m, *n, 1)),
            [m, n, k] => Some(Shape3::new(*m, *n, *k)),
            _ => None,
        }
    };
    let tiles = match value {
        None => Some(vec![Shape3::new(1, 1, 1)]),
        Some(Yaml::Sequence(items)) if items.iter().all(|i| i.is_sequence()) && !items.is_empty() => {
            items.iter().map(shape).collect()
        }
        Some(v) => shape(v).map(|s| vec![s]),
    };
    tiles.unwrap_or_else(|| {
        cx.bad(
            "tile",
            "give [M, N] or [M, N, K] of positive integers, or a list of them (a family)".into(),
        );
        vec![Shape3::new(1, 1, 1)]
    })
}

/// The `design` mapping: key → its options (one, or a family).
fn read_design(cx: &mut Ctx, value: &Option<Yaml>) -> Vec<(String, Vec<Value>)> {
    let Some(value) = value else {
        return Vec::new();
    };
    let Some(map) = value.as_mapping() else {
        cx.bad(
            "design",
            format!("{} is not a mapping of design values", describe(value)),
        );
        return Vec::new();
    };
    let one = |v: &Yaml| -> Option<Value> {
        match v {
            Yaml::Number(n) => n.as_i64().map(Value::Int),
            Yaml::String(s) if is_identifier(s, false) => Some(Value::Word(s.clone())),
            _ => None,
        }
    };
    let mut design = Vec::new();
    for (key, options) in map {
        let Some(key) = key.as_str().filter(|k| is_identifier(k, false)) else {
            cx.bad(
                "design",
                format!("{} is not a design key (a lower-case word)", describe(key)),
            );
            continue;
        };
        if ["tile_m", "tile_n", "tile_k", "arch"].contains(&key) {
            cx.bad(
                "design",
                format!("`{key}` is set by the entry's `tile` / `arch`, not in `design`"),
            );
            continue;
        }
        let options: Option<Vec<Value>> = match options {
            Yaml::Sequence(items) if !items.is_empty() => items.iter().map(one).collect(),
            v => one(v).map(|v| vec![v]),
        };
        match options {
            Some(options) => design.push((key.to_string(), options)),
            None => cx.bad(
                "design",
                format!("`{key}`: a design value is an integer or a word (or a list of them)"),
            ),
        }
    }
    design
}

/// An expression as written: a string or an integer.
fn expr_text(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

fn read_shape_exprs(cx: &mut Ctx, key: &str, value: &Option<Yaml>) -> Vec<String> {
    let texts: Option<Vec<String>> = match value {
        Some(Yaml::Sequence(items)) if (1..=3).contains(&items.len()) => {
            items.iter().map(expr_text).collect()
        }
        Some(v) => expr_text(v).map(|t| vec![t]),
        None => None,
    };
    texts.unwrap_or_else(|| {
        cx.bad(
            key,
            format!("give 1 to 3 expressions ([x, y, z]; missing ones are 1), e.g. `{key}: [\"ceil_div(n, 32)\", \"ceil_div(m, 32)\"]`"),
        );
        Vec::new()
    })
}

fn read_requires(cx: &mut Ctx, value: &Option<Yaml>) -> Vec<(String, String)> {
    let Some(value) = value else {
        return Vec::new();
    };
    let help = "a list of `{holds: \"m % 4 == 0\", reason: \"m must be a multiple of 4\"}`";
    let Some(items) = value.as_sequence() else {
        cx.bad("requires", format!("{} is not {help}", describe(value)));
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let holds = item.get("holds").and_then(expr_text);
        let reason = item.get("reason").and_then(|r| r.as_str()).map(str::to_string);
        let extra = item
            .as_mapping()
            .is_some_and(|m| m.keys().any(|k| !matches!(k.as_str(), Some("holds" | "reason"))));
        match (holds, reason, extra) {
            (Some(h), Some(r), false) => out.push((h, r)),
            _ => cx.bad("requires", format!("each requirement is {help}")),
        }
    }
    out
}

fn read_params(
    cx: &mut Ctx,
    items: &[Yaml],
    values: &[(String, Value)],
    words: &[(String, Vec<String>)],
) -> Option<Vec<ParamSpec>> {
    // Lengths name scalars, so read every parameter before compiling any length.
    struct Pending {
        name: String,
        kind: Result<ScalarType, (DType, Access, Option<Layout>, String)>,
    }
    let mut pending = Vec::new();
    let help = "a parameter is `{name: m, type: i32}` (i32 i64 u32 u64 f32 f64) or \
                `{name: a, buffer: f32, access: read | write | read_write, len: \"m * k\", layout: row}`";
    for item in items {
        let Some(map) = item.as_mapping() else {
            cx.bad("params", format!("{} is not a parameter; {help}", describe(item)));
            continue;
        };
        let unknown: Vec<String> = map
            .keys()
            .filter_map(|k| k.as_str())
            .filter(|k| !["name", "type", "buffer", "access", "len", "layout"].contains(k))
            .map(|k| format!("`{k}`"))
            .collect();
        if !unknown.is_empty() {
            cx.bad("params", format!("unknown keys {}; {help}", unknown.join(", ")));
            continue;
        }
        let Some(name) = item.get("name").and_then(|n| n.as_str()).map(str::to_string) else {
            cx.bad("params", format!("a parameter without a `name`; {help}"));
            continue;
        };
        if !is_identifier(&name, false) || RESERVED.contains(&name.as_str()) || name.starts_with("__") {
            cx.bad(
                "params",
                format!("`{name}` cannot name a parameter: it becomes a Rust argument name (a word, not a Rust keyword or `stream`)"),
            );
            continue;
        }
        if pending.iter().any(|p: &Pending| p.name == name) {
            cx.bad("params", format!("parameter `{name}` is listed twice"));
            continue;
        }
        if values.iter().any(|(k, _)| *k == name) {
            cx.bad(
                "params",
                format!("parameter `{name}` has the name of a design value; expressions could not tell them apart"),
            );
            continue;
        }
        let kind = match (item.get("type"), item.get("buffer")) {
            (Some(t), None) => {
                let ty = t.as_str().and_then(ScalarType::from_manifest_name);
                let Some(ty) = ty else {
                    cx.bad(
                        "params",
                        format!(
                            "`{name}`: type {} is not one of {}",
                            describe(t),
                            ScalarType::allowed()
                        ),
                    );
                    continue;
                };
                for key in ["access", "len", "layout"] {
                    if item.get(key).is_some() {
                        cx.bad("params", format!("`{name}` is a scalar: `{key}` is for buffers"));
                    }
                }
                Ok(ty)
            }
            (None, Some(b)) => {
                let element = b.as_str().and_then(DType::from_manifest_name);
                let access = item
                    .get("access")
                    .and_then(|a| a.as_str())
                    .and_then(Access::from_manifest_name);
                let len = item.get("len").and_then(expr_text);
                let layout = match item.get("layout") {
                    None => Ok(None),
                    Some(l) => {
                        let word = l.as_str().unwrap_or_default();
                        // A design key whose value is a layout, or a layout itself.
                        let word = values
                            .iter()
                            .find(|(k, _)| k == word)
                            .map_or(word.to_string(), |(_, v)| v.to_string());
                        Layout::from_manifest_name(&word)
                            .filter(|l| matches!(l, Layout::Row | Layout::Column))
                            .map(Some)
                            .ok_or(word)
                    }
                };
                match (element, access, len, layout) {
                    (Some(e), Some(a), Some(len), Ok(layout)) => Err((e, a, layout, len)),
                    (e, a, len, layout) => {
                        let mut why = Vec::new();
                        if e.is_none() {
                            why.push(format!("`buffer` must be an element type ({})", DType::allowed()));
                        }
                        if a.is_none() {
                            why.push(format!("`access` must be one of {}", Access::allowed()));
                        }
                        if len.is_none() {
                            why.push("`len` must give its length in elements (an expression)".to_string());
                        }
                        if let Err(word) = layout {
                            why.push(format!(
                                "`layout` must be row, column or a design key with one of them (not `{word}`)"
                            ));
                        }
                        cx.bad("params", format!("buffer `{name}`: {}", why.join("; ")));
                        continue;
                    }
                }
            }
            _ => {
                cx.bad(
                    "params",
                    format!("`{name}` needs exactly one of `type` and `buffer`; {help}"),
                );
                continue;
            }
        };
        pending.push(Pending { name, kind });
    }
    if pending.len() != items.len() {
        return None;
    }
    let scalars: Vec<ParamSpec> = pending
        .iter()
        .map(|p| match &p.kind {
            Ok(ty) => ParamSpec::Scalar {
                name: p.name.clone(),
                ty: *ty,
            },
            Err((element, ..)) => ParamSpec::Buffer {
                name: p.name.clone(),
                element: *element,
                access: Access::Read,
                layout: None,
                len: constant(0),
            },
        })
        .collect();
    let resolve = resolver(&scalars, values, words);
    let mut params = Vec::new();
    for p in pending {
        match p.kind {
            Ok(ty) => params.push(ParamSpec::Scalar { name: p.name, ty }),
            Err((element, access, layout, len)) => {
                let len = compile_expr(cx, "params", &len, &resolve)?;
                params.push(ParamSpec::Buffer {
                    name: p.name,
                    element,
                    access,
                    layout,
                    len,
                });
            }
        }
    }
    Some(params)
}

/// What names mean in this kernel's expressions.
/// A word-valued design key `key` with option `word` is also the integer `key_word`: 1 in the
/// kernels where `key` is `word`, 0 in the others (the C macros' `KEY_WORD`), so that lengths and
/// requirements can depend on it (`layout_a_row * lda`).
fn resolver<'a>(
    params: &'a [ParamSpec],
    values: &'a [(String, Value)],
    words: &'a [(String, Vec<String>)],
) -> impl Fn(&str) -> Result<Name, String> + 'a {
    move |name: &str| {
        for (key, options) in words {
            if let Some(word) = name.strip_prefix(key.as_str()).and_then(|r| r.strip_prefix('_')) {
                if options.iter().any(|o| o == word) {
                    let chosen = values
                        .iter()
                        .any(|(k, v)| k == key && *v == Value::Word(word.to_string()));
                    return Ok(Name::Const(chosen as i64));
                }
            }
        }
        if let Some((index, param)) = params.iter().enumerate().find(|(_, p)| p.name() == name) {
            return match param {
                ParamSpec::Scalar { ty, .. } if ty.is_integer() => Ok(Name::Arg(index as u16)),
                ParamSpec::Scalar { ty, .. } => Err(format!(
                    "`{name}` is an {ty} parameter; expressions take integers"
                )),
                ParamSpec::Buffer { .. } => Err(format!("`{name}` is a buffer; expressions take integers")),
            };
        }
        match values.iter().find(|(k, _)| k == name) {
            Some((_, Value::Int(v))) => Ok(Name::Const(*v)),
            Some((_, Value::Word(w))) => {
                Err(format!("design value `{name}` is the word `{w}`, not an integer"))
            }
            None => Err(format!("unknown name `{name}`")),
        }
    }
}

fn compile_expr(
    cx: &mut Ctx,
    key: &str,
    text: &str,
    resolve: &impl Fn(&str) -> Result<Name, String>,
) -> Option<ExprSpec> {
    let why = std::cell::RefCell::new(None);
    let compiled = Expr::compile(text, |name| match resolve(name) {
        Ok(n) => Some(n),
        Err(e) => {
            why.borrow_mut().get_or_insert(e);
            None
        }
    });
    match compiled {
        Ok(code) => Some(ExprSpec {
            text: text.to_string(),
            code,
        }),
        Err(e) => {
            let e = why.into_inner().unwrap_or(e);
            cx.bad(key, format!("`{text}`: {e}"));
            None
        }
    }
}

fn constant(v: i64) -> ExprSpec {
    ExprSpec {
        text: v.to_string(),
        code: vec![crate::model::custom::Op::Const(v)],
    }
}

fn expand_shape(
    texts: &[String],
    mut compile: impl FnMut(&str) -> Option<ExprSpec>,
) -> Option<[ExprSpec; 3]> {
    let mut out = [constant(1), constant(1), constant(1)];
    for (slot, text) in out.iter_mut().zip(texts) {
        *slot = compile(text)?;
    }
    Some(out)
}

/// The block's thread count when every dimension is a constant.
fn constant_block_threads(block: &[ExprSpec; 3]) -> Option<i64> {
    let mut threads = 1i64;
    for e in block {
        match e.code.as_slice() {
            [crate::model::custom::Op::Const(v)] => threads = threads.saturating_mul(*v),
            _ => return None,
        }
    }
    Some(threads)
}

/// The Rust name from a template: `{key}` is a design value (tile values included), `{arch}`.
fn fill_name(cx: &mut Ctx, template: &str, arch: u32, values: &[(String, Value)]) -> Option<String> {
    let mut name = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        name.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            cx.bad("name", format!("`{template}` has a `{{` without its `}}`"));
            return None;
        };
        let key = &rest[open + 1..open + close];
        match (key, values.iter().find(|(k, _)| k == key)) {
            ("arch", _) => name.push_str(&arch.to_string()),
            (_, Some((_, v))) => name.push_str(&v.to_string()),
            (_, None) => {
                let keys: Vec<&str> = values.iter().map(|(k, _)| k.as_str()).collect();
                cx.bad(
                    "name",
                    format!(
                        "`{{{key}}}` is not a design value of this entry (it has: arch, {})",
                        keys.join(", ")
                    ),
                );
                return None;
            }
        }
        rest = &rest[open + close + 1..];
    }
    name.push_str(rest);
    if !is_identifier(&name, false) {
        cx.bad("name", format!("`{name}` is not a Rust identifier"));
        return None;
    }
    Some(name)
}
