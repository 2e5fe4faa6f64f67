//! How well selection does on problems a table lacks, offline: each measured problem in turn is
//! left out of the table (its rows hidden from the calibration) and the engine chooses among the
//! ways the table timed on it; the chosen way's measured time is compared with the problem's
//! fastest. No GPU needed: this is what `examples/select_study.rs` prints and what a test holds
//! the committed tables to.

use std::collections::BTreeMap;

use super::{Candidate, Context, Key, Row, Table};

/// One measured problem: the keys of its ways (a GEMM as given and transposed), its fastest time,
/// and the measured time of the way chosen with and without the table's other rows.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub keys: Vec<Key>,
    pub fastest_us: f64,
    /// The fastest way: (kernel name, split-K).
    pub fastest: (&'static str, usize),
    /// The way the calibrated model chose, left out: (kernel name, split-K, measured µs).
    pub calibrated: (&'static str, usize, f64),
    /// The way the bare model chose.
    pub bare: (&'static str, usize, f64),
}

impl Outcome {
    /// Fastest ÷ chosen time of the calibrated choice (1: it chose the fastest).
    pub fn calibrated_ratio(&self) -> f64 {
        self.fastest_us / self.calibrated.2
    }

    /// Fastest ÷ chosen time of the bare model's choice.
    pub fn bare_ratio(&self) -> f64 {
        self.fastest_us / self.bare.2
    }
}

/// Summary of outcomes: the geometric mean of fastest ÷ chosen, and the share within 5 %.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub problems: usize,
    pub geomean: f64,
    pub within_5_percent: f64,
    pub worst: f64,
}

impl Summary {
    pub fn of(ratios: impl Iterator<Item = f64>) -> Summary {
        let ratios: Vec<f64> = ratios.collect();
        let n = ratios.len().max(1) as f64;
        Summary {
            problems: ratios.len(),
            geomean: (ratios.iter().map(|r| r.ln()).sum::<f64>() / n).exp(),
            within_5_percent: ratios.iter().filter(|&&r| r >= 1.0 / 1.05).count() as f64 / n,
            worst: ratios.iter().copied().fold(f64::INFINITY, f64::min),
        }
    }
}

/// Leave-one-out over every problem of `table` whose operation `op_filter` accepts. `group` maps
/// a key to the problem it belongs to (a GEMM's key and its transpose are one problem; `None`
/// keeps each key apart). `context` must be over `table`.
pub fn leave_one_out(
    context: &Context<'_>,
    op_filter: impl Fn(&str) -> bool,
    group: impl Fn(&Key) -> Key,
) -> Vec<Outcome> {
    let table: &Table = context.table;
    judge(
        context,
        table.rows.iter().filter(|r| op_filter(r.key.op)),
        group,
        true,
    )
}

/// Every problem of `rows` (measured apart from the context's table: another session's sweep),
/// chosen among its ways with the context's table as it is: how selection does on problems that
/// table never measured.
pub fn held_out(
    context: &Context<'_>,
    rows: impl IntoIterator<Item = &'static Row>,
    group: impl Fn(&Key) -> Key,
) -> Vec<Outcome> {
    judge(context, rows, group, false)
}

/// Each problem of `rows` chosen among its ways; `leave_out`: the problem's rows in the context's
/// table are hidden from the calibration.
fn judge(
    context: &Context<'_>,
    rows: impl IntoIterator<Item = &'static Row>,
    group: impl Fn(&Key) -> Key,
    leave_out: bool,
) -> Vec<Outcome> {
    let mut problems: BTreeMap<String, Vec<&'static Row>> = BTreeMap::new();
    for row in rows {
        let canonical = group(&row.key);
        problems.entry(format!("{canonical:?}")).or_default().push(row);
    }
    let bare = Context {
        table: &super::NO_TABLE,
        ..*context
    };
    problems
        .values()
        .filter_map(|rows| {
            let mut keys: Vec<Key> = rows.iter().map(|r| r.key).collect();
            keys.sort_by_key(|k| format!("{k:?}"));
            keys.dedup();
            let fastest = rows.iter().min_by(|a, b| a.us.total_cmp(&b.us))?;
            let fastest_us = fastest.us;
            let candidates = || ways_of(rows, context);
            let measured = |kernel: &'static str, split: usize, key: &Key| {
                rows.iter()
                    .filter(|r| r.kernel.name == kernel && r.split_k == split && r.key == *key)
                    .map(|r| r.us)
                    .fold(f64::INFINITY, f64::min)
            };
            let except: &[Key] = if leave_out { &keys } else { &[] };
            let pick = |c: &Context<'_>| {
                let chosen = c.choose_except(candidates(), except)?;
                let name = chosen.kernel.name;
                Some((name, chosen.split_k, measured(name, chosen.split_k, &chosen.key)))
            };
            Some(Outcome {
                calibrated: pick(context)?,
                bare: pick(&bare)?,
                fastest_us,
                fastest: (fastest.kernel.name, fastest.split_k),
                keys,
            })
        })
        .collect()
}

/// The distinct ways `rows` timed, as candidates with their work.
fn ways_of(rows: &[&'static Row], context: &Context<'_>) -> Vec<Candidate<()>> {
    let mut seen: Vec<(&'static str, usize, Key)> = Vec::new();
    let mut out = Vec::new();
    for row in rows {
        let id = (row.kernel.name, row.split_k, row.key);
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let Some(work) = (context.work_of)(row) else {
            continue;
        };
        out.push(Candidate {
            kernel: row.kernel,
            split_k: row.split_k,
            way: (),
            key: row.key,
            work,
            margin: 1.0,
        });
    }
    out
}
