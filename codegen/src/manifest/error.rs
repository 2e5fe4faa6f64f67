//! The error type of the manifest reader: every problem found, each with its file, line and field.

use std::fmt;

/// One thing wrong with a manifest.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Problem {
    /// The file label passed to [`parse`](super::parse) (or the path given to [`load`](super::load)).
    pub file: String,
    /// 1-based line. Every problem [`parse`](super::parse) finds has one (a missing top-level key
    /// is at the document's first line); only a file [`load`](super::load) cannot read has none.
    pub line: Option<usize>,
    /// Where in the manifest, e.g. `operations[2].tile`; empty for YAML syntax errors.
    pub field: String,
    /// What is wrong and what would be allowed instead.
    pub message: String,
}

impl fmt::Display for Problem {
    /// `FILE:LINE: FIELD: MESSAGE`, leaving out the parts that are unknown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found in a manifest (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    pub problems: Vec<Problem>,
}

impl fmt::Display for ManifestError {
    /// One problem per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ManifestError {}

impl Problem {
    /// Turns a serde_yaml error (YAML syntax or a structural mismatch such as an unknown key) into
    /// a problem. serde_yaml renders it as `PATH: MESSAGE at line L column C`; the line goes into
    /// `line` and the path into `field`, so the message reads like our own.
    pub fn from_yaml(file: &str, err: &serde_yaml::Error) -> Problem {
        let mut text = err.to_string();
        let line = err.location().map(|loc| {
            let at = format!(" at line {} column {}", loc.line(), loc.column());
            if let Some(pos) = text.find(&at) {
                text.replace_range(pos..pos + at.len(), "");
            }
            loc.line()
        });
        // A leading `operations[0].b: ` is serde_yaml's path; messages themselves never start
        // with such a token (they start with words separated by spaces).
        let (field, message) = match text.split_once(": ") {
            Some((path, rest))
                if !path.is_empty()
                    && path
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_[].".contains(c)) =>
            {
                (path.to_string(), rest.to_string())
            }
            _ => (String::new(), text),
        };
        Problem {
            file: file.to_string(),
            line,
            field,
            message,
        }
    }
}
