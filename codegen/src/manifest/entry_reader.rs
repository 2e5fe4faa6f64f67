//! What the readers of entries outside the CUTLASS schema (`kind: custom`, `kind: elementwise`)
//! share: the entry's problem collector and the checks of names and the `feature` key.

use serde_yaml::Value as Yaml;

use super::Report;

/// Collects one entry's problems; `ok` turns false at the first.
pub(crate) struct EntryReader<'r, 't> {
    pub report: &'r mut Report<'t>,
    pub index: usize,
    pub ok: bool,
}

impl<'r, 't> EntryReader<'r, 't> {
    pub fn new(report: &'r mut Report<'t>, index: usize) -> Self {
        EntryReader {
            report,
            index,
            ok: true,
        }
    }

    pub fn bad(&mut self, key: &str, message: String) {
        self.ok = false;
        self.report.at(self.index, Some(key), None, message);
    }

    /// The entry's cargo feature, if it names one.
    pub fn feature(&mut self, value: &Option<Yaml>) -> Option<String> {
        match value {
            None => None,
            Some(Yaml::String(f)) if is_identifier(f, true) => Some(f.clone()),
            Some(other) => {
                self.bad(
                    "feature",
                    format!("{} is not a cargo feature name", super::describe_value(other)),
                );
                None
            }
        }
    }
}

/// A C / Rust identifier (with `dashes`: a cargo feature name).
pub(crate) fn is_identifier(s: &str, dashes: bool) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (dashes && c == '-'))
}
