//! Reads and checks one `kind: elementwise` entry, expanding its families (lists of `a`, `b`, `c`,
//! `op` and `activation` give their cross product). Every problem is reported with its key; an
//! entry with any problem yields no kernel.

use serde_yaml::Value as Yaml;

use super::ElementwiseKernel;
use crate::manifest::schema::RawOperation;
use crate::manifest::{is_identifier, Report};
use crate::model::elementwise::{Combine, ElementwiseOperation};
use crate::model::{Activation, DType};

/// The keys an elementwise entry takes.
const KEYS: &str = "kind, name, feature, arch, a, b, c, op, activation";

/// At most this many kernels per entry (as for other entries).
const MAX_VARIANTS: usize = 256;

type Ctx<'r, 't> = crate::manifest::EntryReader<'r, 't>;

/// Reads entry `index` (already known to be `kind: elementwise`) into its kernels.
pub fn read_entry(
    raw: &RawOperation,
    index: usize,
    report: &mut Report,
    origin: &str,
) -> Vec<ElementwiseKernel> {
    let mut cx = Ctx::new(report, index);
    let elementwise_keys = ["a", "b", "c", "activation"];
    for (key, present) in raw.gemm_keys() {
        if present && !elementwise_keys.contains(&key) {
            cx.bad(
                key,
                format!("`{key}` is not a key of `kind: elementwise` entries; they take {KEYS}"),
            );
        }
    }
    for key in raw.custom_keys_present() {
        cx.bad(
            key,
            format!("`{key}` is not a key of `kind: elementwise` entries; they take {KEYS}"),
        );
    }
    if raw.tile.is_some() {
        cx.bad(
            "tile",
            format!("`tile` is not a key of `kind: elementwise` entries; they take {KEYS}"),
        );
    }
    let feature = cx.feature(&raw.feature);
    let arch = match &raw.arch {
        None => 80,
        Some(v) => match v.as_u64() {
            Some(80) => 80,
            _ => {
                cx.bad(
                    "arch",
                    format!(
                        "{} is not allowed; elementwise kernels are sm_80 code, which runs on compute \
                         capability 8.0 and newer: give 80 or leave `arch` out",
                        describe(v)
                    ),
                );
                80
            }
        },
    };
    let xs = words(&mut cx, "a", &raw.a, DType::from_manifest_name, DType::allowed).unwrap_or_default();
    if raw.a.is_none() {
        cx.bad(
            "a",
            format!("missing; give x's element type ({})", DType::allowed()),
        );
    }
    let ys: Vec<Option<DType>> = match words(&mut cx, "b", &raw.b, DType::from_manifest_name, DType::allowed)
    {
        None => vec![None],
        Some(list) => list.into_iter().map(Some).collect(),
    };
    let ds: Vec<Option<DType>> = match words(&mut cx, "c", &raw.c, DType::from_manifest_name, DType::allowed)
    {
        None => vec![None],
        Some(list) => list.into_iter().map(Some).collect(),
    };
    let ops: Vec<Option<Combine>> = match &raw.op {
        None => vec![None],
        Some(v) => {
            let parse = |s: &str| match s {
                "none" => Some(None),
                other => Combine::from_manifest_name(other).map(Some),
            };
            let allowed = || format!("none, {}", Combine::allowed());
            words(&mut cx, "op", &Some(v.clone()), parse, allowed).unwrap_or_default()
        }
    };
    let activations = match words(
        &mut cx,
        "activation",
        &raw.activation,
        Activation::from_manifest_name,
        Activation::allowed,
    ) {
        None => vec![Activation::Identity],
        Some(list) => list,
    };
    let count = xs.len() * ys.len() * ds.len() * ops.len() * activations.len();
    if count > MAX_VARIANTS {
        cx.bad(
            "a",
            format!("the entry expands to {count} kernels; at most {MAX_VARIANTS} per entry are allowed: split it"),
        );
    }
    if !cx.ok {
        return Vec::new();
    }
    let several = count > 1;
    let mut kernels = Vec::new();
    for &x in &xs {
        for &y in &ys {
            for &d in &ds {
                for &combine in &ops {
                    for &activation in &activations {
                        if combine.is_none() && y.is_some() {
                            cx.bad(
                                "b",
                                "a unary kernel (no `op`) reads no y: drop `b`, or give `op`".into(),
                            );
                            return Vec::new();
                        }
                        let operation = ElementwiseOperation {
                            x,
                            y: combine.map(|_| y.unwrap_or(x)),
                            d: d.unwrap_or(x),
                            combine,
                            activation,
                        };
                        let Some(rust_name) = name(&mut cx, raw, &operation, several) else {
                            return Vec::new();
                        };
                        kernels.push(ElementwiseKernel {
                            rust_name,
                            feature: feature.clone(),
                            origin: origin.to_string(),
                            arch,
                            operation,
                        });
                    }
                }
            }
        }
    }
    kernels
}

/// One word or a list of words, each parsed by `parse`; `None` when the key is absent.
fn words<T>(
    cx: &mut Ctx,
    key: &str,
    value: &Option<Yaml>,
    parse: impl Fn(&str) -> Option<T>,
    allowed: impl Fn() -> String,
) -> Option<Vec<T>> {
    let value = value.as_ref()?;
    let items: Vec<&Yaml> = match value {
        Yaml::Sequence(items) if !items.is_empty() => items.iter().collect(),
        Yaml::Sequence(_) => {
            cx.bad(
                key,
                format!("an empty list; give one of {} or a list of them", allowed()),
            );
            return Some(Vec::new());
        }
        single => vec![single],
    };
    let mut out = Vec::new();
    for item in items {
        match item.as_str().and_then(&parse) {
            Some(v) => out.push(v),
            None => cx.bad(
                key,
                format!("{} is not allowed; allowed: {}", describe(item), allowed()),
            ),
        }
    }
    Some(out)
}

/// The kernel's Rust name: the entry's template with `{a}`, `{b}`, `{c}`, `{op}` and
/// `{activation}` filled in, or (a single kernel without `name`) one made of its parts.
fn name(cx: &mut Ctx, raw: &RawOperation, op: &ElementwiseOperation, several: bool) -> Option<String> {
    let op_word = op.combine.map_or("none", Combine::manifest_name);
    let y = op.y.map_or("none".to_string(), |t| t.to_string());
    let fill = |template: &str| {
        template
            .replace("{a}", op.x.manifest_name())
            .replace("{b}", &y)
            .replace("{c}", op.d.manifest_name())
            .replace("{op}", op_word)
            .replace("{activation}", op.activation.manifest_name())
    };
    let name = match &raw.name {
        Some(Yaml::String(template)) => fill(template),
        Some(other) => {
            cx.bad("name", format!("{} is not a name template", describe(other)));
            return None;
        }
        None if several => {
            cx.bad(
                "name",
                "missing; an entry with families needs a name template with a placeholder per varying \
                 value, e.g. `name: \"{op}_{a}\"` (placeholders: {a}, {b}, {c}, {op}, {activation})"
                    .into(),
            );
            return None;
        }
        None => {
            let what = match op.combine {
                Some(c) => c.manifest_name(),
                None => op.activation.manifest_name(),
            };
            format!("ew_{what}_{}_{}", op.x, op.d)
        }
    };
    if !is_identifier(&name, false) {
        cx.bad(
            "name",
            format!("`{name}` is not a Rust identifier (letters, digits and `_`; placeholders {{a}}, {{b}}, {{c}}, {{op}}, {{activation}})"),
        );
        return None;
    }
    Some(name)
}

fn describe(value: &Yaml) -> String {
    crate::manifest::describe_value(value)
}
