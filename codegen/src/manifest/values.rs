//! Reading one field's raw YAML value as a single value or a family (a list of values).

use crate::model::Shape3;
use serde_yaml::Value;

/// A value that could not be read; `index` is its position in the family list, if in one.
pub struct BadValue {
    pub index: Option<usize>,
    pub message: String,
}

/// A problem with the field's value as a whole, not with one list element.
fn whole(message: String) -> Vec<BadValue> {
    vec![BadValue { index: None, message }]
}

/// Reads `v` as one value or a non-empty list of values, each read by `one`.
pub fn family<T>(v: &Value, one: impl Fn(&Value) -> Result<T, String>) -> Result<Vec<T>, Vec<BadValue>> {
    match v {
        Value::Sequence(items) => collect(items, |item| match item {
            Value::Sequence(_) => Err(format!(
                "{} is a nested list; give one value or a flat list of values",
                describe(item)
            )),
            _ => one(item),
        }),
        _ => one(v).map(|x| vec![x]).map_err(whole),
    }
}

/// Reads a shape `[M, N, K]` or a non-empty list of shapes `[[M, N, K], ...]`.
pub fn shape_family(v: &Value) -> Result<Vec<Shape3>, Vec<BadValue>> {
    match v {
        // A list of lists is a family; anything else must be one shape.
        Value::Sequence(items) if items.first().is_some_and(Value::is_sequence) => collect(items, shape),
        _ => shape(v).map(|s| vec![s]).map_err(whole),
    }
}

/// Reads every item, gathering all failures with their indices.
fn collect<T>(items: &[Value], one: impl Fn(&Value) -> Result<T, String>) -> Result<Vec<T>, Vec<BadValue>> {
    if items.is_empty() {
        let message = "an empty list expands to no kernels; give a value or a non-empty list of values";
        return Err(whole(message.to_string()));
    }
    let mut values = Vec::new();
    let mut bad = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match one(item) {
            Ok(x) => values.push(x),
            Err(message) => bad.push(BadValue {
                index: Some(index),
                message,
            }),
        }
    }
    if bad.is_empty() {
        Ok(values)
    } else {
        Err(bad)
    }
}

/// One shape: exactly three non-negative integers (zero is rejected later, with the other shape rules).
fn shape(v: &Value) -> Result<Shape3, String> {
    let expected =
        "is not a shape; expected [M, N, K] (three positive integers) or a list of shapes [[M, N, K], ...]";
    let Value::Sequence(items) = v else {
        return Err(format!("{} {expected}", describe(v)));
    };
    let parts: Vec<u32> = items
        .iter()
        .filter_map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()))
        .collect();
    match parts[..] {
        [m, n, k] if items.len() == 3 => Ok(Shape3::new(m, n, k)),
        _ => Err(format!("{} {expected}", describe(v))),
    }
}

/// One unsigned integer (range rules come later, in `validate.rs`).
pub fn integer(v: &Value) -> Result<u32, String> {
    v.as_u64()
        .and_then(|x| u32::try_from(x).ok())
        .ok_or_else(|| format!("{} is not allowed; expected a non-negative integer", describe(v)))
}

/// A `stages` value: a count, or `auto` (as many as fit; CUTLASS 3.x only, checked in `arch_keys.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stages {
    Auto,
    Fixed(u32),
}

/// One `stages` value: a non-negative integer or `auto`.
pub fn stages(v: &Value) -> Result<Stages, String> {
    match v {
        Value::String(s) if s == "auto" => Ok(Stages::Auto),
        _ => integer(v).map(Stages::Fixed).map_err(|_| {
            format!(
                "{} is not allowed; expected a non-negative integer, or `auto` (arch 90 only)",
                describe(v)
            )
        }),
    }
}

/// One enum value or a family of them, by manifest spelling; `allowed` lists the spellings.
pub fn spelled_family<T>(
    v: &Value,
    parse: fn(&str) -> Option<T>,
    allowed: &str,
) -> Result<Vec<T>, Vec<BadValue>> {
    family(v, |x| spelled(x, parse, allowed))
}

fn spelled<T>(v: &Value, parse: fn(&str) -> Option<T>, allowed: &str) -> Result<T, String> {
    v.as_str()
        .and_then(parse)
        .ok_or_else(|| format!("{} is not allowed; allowed values: {allowed}", describe(v)))
}

/// A short rendering of a value for messages: scalars as written, collections compactly.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("`{n}`"),
        // Quote strings that would read as another type (`"1"`), so the message is not puzzling.
        Value::String(s) if !matches!(serde_yaml::from_str(s), Ok(Value::String(_))) => {
            format!("`\"{s}\"`")
        }
        Value::String(s) => format!("`{s}`"),
        Value::Sequence(items) => {
            let inner: Vec<String> = items.iter().map(|x| describe(x).replace('`', "")).collect();
            format!("`[{}]`", inner.join(", "))
        }
        Value::Mapping(_) => "a mapping".to_string(),
        Value::Tagged(t) => format!("tagged value `{}`", t.tag),
    }
}
