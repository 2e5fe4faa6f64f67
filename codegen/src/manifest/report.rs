//! Collects problems while a manifest is read, attaching file, field path and line.

use super::error::{ManifestError, Problem};
use super::source_map::{SourceMap, Step};

pub struct Report<'t> {
    file: &'t str,
    map: SourceMap<'t>,
    problems: Vec<Problem>,
}

impl<'t> Report<'t> {
    pub fn new(file: &'t str, text: &'t str) -> Self {
        Report {
            file,
            map: SourceMap::new(text),
            problems: Vec::new(),
        }
    }

    /// A problem with a top-level key (`version`, `operations`), at the key's line if present.
    pub fn top(&mut self, key: &str, message: String) {
        let line = self.map.line(&[Step::Key(key)]);
        self.push(line, key.to_string(), message);
    }

    /// A problem with entry `entry`: with its field `key` (or the whole entry when `None`), and with
    /// element `index` of that field's family list. The line is the most precise one present in the
    /// text: the element's, else the key's, else the entry's (a defaulted field has no line).
    pub fn at(&mut self, entry: usize, key: Option<&str>, index: Option<usize>, message: String) {
        let mut field = format!("operations[{entry}]");
        let mut path = vec![Step::Key("operations"), Step::Index(entry)];
        let mut line = None;
        if let Some(key) = key {
            field = format!("{field}.{key}");
            path.push(Step::Key(key));
            if let Some(index) = index {
                field = format!("{field}[{index}]");
                path.push(Step::Index(index));
                line = self.map.line(&path);
                path.pop();
            }
            line = line.or_else(|| self.map.line(&path));
        }
        let line = line.or_else(|| self.entry_line(entry));
        self.push(line, field, message);
    }

    /// The line of entry `entry` (its first key, i.e. the `- kind:` line).
    pub fn entry_line(&self, entry: usize) -> Option<usize> {
        self.map.line(&[Step::Key("operations"), Step::Index(entry)])
    }

    /// `FILE:LINE` of entry `entry`, as `GemmKernel::origin`.
    pub fn origin(&self, entry: usize) -> String {
        match self.entry_line(entry) {
            Some(line) => format!("{}:{line}", self.file),
            None => format!("{}: operations[{entry}]", self.file),
        }
    }

    fn push(&mut self, line: Option<usize>, field: String, message: String) {
        let problem = Problem {
            file: self.file.to_string(),
            line,
            field,
            message,
        };
        // A family repeats the same mistake in many kernels: say it once.
        if !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// All problems, in line order (those without a line first), like a compiler's.
    pub fn into_error(mut self) -> ManifestError {
        self.problems.sort_by_key(|p| p.line);
        ManifestError {
            problems: self.problems,
        }
    }
}
