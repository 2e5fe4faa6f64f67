//! The message when no way runs a problem: a handful of lines a person can act on, not every
//! kernel with every reason. Each operation collects its candidates' reasons here; the message
//! names the problem, each distinct reason once with the number of kernels it excludes (most
//! first), and the nearest kernel — the one excluded by the fewest reasons — with its manifest
//! entry, where a fix (an entry like it) starts.

use crate::error::Error;
use crate::kernel::KernelInfo;

/// Distinct reasons shown, most frequent first.
const SHOWN_REASONS: usize = 6;

/// Reasons collected over the kernels considered for one problem.
#[derive(Debug, Default)]
pub struct Refusal {
    /// (reason, kernels it excludes), in first-seen order.
    counted: Vec<(String, usize)>,
    nearest: Option<(Vec<String>, &'static KernelInfo)>,
    kernels: usize,
}

impl Refusal {
    pub fn new() -> Self {
        Refusal::default()
    }

    /// Records why `kernel` cannot run the problem (nothing if `reasons` is empty).
    pub fn add(&mut self, kernel: &'static KernelInfo, reasons: Vec<String>) {
        if reasons.is_empty() {
            return;
        }
        self.kernels += 1;
        for reason in &reasons {
            match self.counted.iter_mut().find(|(r, _)| r == reason) {
                Some((_, n)) => *n += 1,
                None => self.counted.push((reason.clone(), 1)),
            }
        }
        if self
            .nearest
            .as_ref()
            .map_or(true, |(fewest, _)| reasons.len() < fewest.len())
        {
            self.nearest = Some((reasons, kernel));
        }
    }

    /// How many kernels were recorded.
    pub fn kernels(&self) -> usize {
        self.kernels
    }

    /// The error of `who`: `headline`, then the reasons, then the nearest kernel; `when_none` is
    /// the line shown when no kernel was considered at all.
    pub fn into_error(mut self, who: &'static str, headline: String, when_none: &str) -> Error {
        let mut lines = vec![headline];
        if self.kernels == 0 {
            lines.push(format!("  {when_none}"));
        }
        self.counted.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        for (reason, n) in self.counted.iter().take(SHOWN_REASONS) {
            let kernels = if *n == 1 { "kernel" } else { "kernels" };
            lines.push(format!("  - {reason} ({n} {kernels})"));
        }
        if self.counted.len() > SHOWN_REASONS {
            lines.push(format!(
                "  - and {} rarer reasons (`KernelInfo::supports` lists each kernel's)",
                self.counted.len() - SHOWN_REASONS
            ));
        }
        if let Some((reasons, kernel)) = self.nearest {
            lines.push(format!(
                "nearest: {} ({}), excluded only by: {}; a manifest entry like it without that would run this problem",
                kernel.rust_name,
                kernel.origin,
                reasons.join("; ")
            ));
        }
        Error::invalid(who, lines.join("\n"))
    }
}
