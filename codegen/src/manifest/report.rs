//! Collects problems while a manifest is read, attaching file, field path and line.

use super::error::{ManifestError, Problem};
use super::source_map::{self, SourceMap, Step};
use std::collections::HashSet;

pub struct Report<'t> {
    file: &'t str,
    map: SourceMap<'t>,
    problems: Vec<Problem>,
    /// The problems already reported, so that each is said once (in constant time).
    seen: HashSet<Problem>,
    /// The text's last line: no problem is shown past it.
    last_line: usize,
}

impl<'t> Report<'t> {
    pub fn new(file: &'t str, text: &'t str) -> Self {
        Report {
            file,
            map: SourceMap::new(text),
            problems: Vec::new(),
            seen: HashSet::new(),
            last_line: source_map::last_line(text),
        }
    }

    /// A problem with a top-level key (`version`, `operations`), at the key's line if present,
    /// else at the document's first line (where a missing key belongs).
    pub fn top(&mut self, key: &str, message: String) {
        let line = self
            .map
            .line(&[Step::Key(key)])
            .unwrap_or_else(|| self.document_line());
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
        let line = line
            .or_else(|| self.entry_line(entry))
            .unwrap_or_else(|| self.document_line());
        self.push(line, field, message);
    }

    /// The line of the document's root node (1 for a document without nodes).
    fn document_line(&self) -> usize {
        self.map.line(&[]).unwrap_or(1)
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

    fn push(&mut self, line: usize, field: String, message: String) {
        let problem = Problem {
            file: self.file.to_string(),
            // An empty value at the end of the text may start just past its last line.
            line: Some(line.min(self.last_line)),
            field,
            message,
        };
        // A family repeats the same mistake in many kernels: say it once.
        if !self.seen.contains(&problem) {
            self.seen.insert(problem.clone());
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
