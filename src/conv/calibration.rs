//! The dispatch heuristic's cost model, calibrated on a measured table: for a problem the table
//! has not measured, each way to run it is estimated as the model's cost ÷ the rate its kernel
//! (at that split-K) showed on the measured problems.
//!
//! The model ([`super::dispatch::model_cost`]) knows tiles, waves, split-K and stream-K; it does
//! not know how fast each kernel family really runs on a device. The table does: every measured
//! row (a problem, a kernel, a split-K, a time) gives one rate, cost ÷ time. A kernel's rate is the
//! geometric mean of its rows' (per split-K where the table has that split, else over all its
//! rows). Left out of the committed H100 table (2026-11-24) in turn, its 182 problems ran at 0.91
//! of their fastest way this way, against 0.85 with the bare model; on an earlier run's table,
//! 0.91 against 0.83 with the previous rule, the nearest measured problem's kernel
//! (`examples/conv_dispatch_study.rs`).

use std::collections::HashMap;

use super::dispatch::{model_cost, Entry};
use crate::kernel::KernelInfo;
use crate::model::ConvKind;

/// Fitted rates, keyed by kernel name and kind (a GEMM kernel runs 1×1 problems of every kind).
#[derive(Debug, Default)]
pub struct Rates {
    by_split: HashMap<(&'static str, ConvKind, usize), LogMean>,
    by_kernel: HashMap<(&'static str, ConvKind), LogMean>,
}

/// A running mean of logarithms.
#[derive(Clone, Copy, Debug, Default)]
struct LogMean {
    sum: f64,
    count: usize,
}

impl LogMean {
    fn add(&mut self, value: f64) {
        self.sum += value.ln();
        self.count += 1;
    }

    fn geomean(self) -> Option<f64> {
        (self.count > 0).then(|| (self.sum / self.count as f64).exp())
    }
}

impl Rates {
    /// Rates of every kernel with rows in `entries`, on a device of `multiprocessors` SMs (the
    /// table's device).
    pub fn fit(entries: &[Entry], multiprocessors: u32) -> Rates {
        let mut rates = Rates::default();
        for e in entries {
            if !e.us.is_finite() || e.us <= 0.0 {
                continue;
            }
            let Some(cost) = model_cost(e.kernel, &e.problem(), e.split_k, multiprocessors) else {
                continue;
            };
            let kind = e.signature.kind;
            let rate = cost / e.us;
            rates
                .by_split
                .entry((e.kernel.name, kind, e.split_k))
                .or_default()
                .add(rate);
            rates
                .by_kernel
                .entry((e.kernel.name, kind))
                .or_default()
                .add(rate);
        }
        rates
    }

    /// The rate of `kernel` at `slices` split-K slices on problems of `kind`: measured at that
    /// split, else over every split measured; `None` for a kernel the table never ran.
    pub fn rate(&self, kernel: &KernelInfo, kind: ConvKind, slices: usize) -> Option<f64> {
        self.by_split
            .get(&(kernel.name, kind, slices))
            .or_else(|| self.by_kernel.get(&(kernel.name, kind)))
            .and_then(|m| m.geomean())
    }

    /// The estimated time (µs) of `kernel` at `slices` on `problem`: the model's cost ÷ the
    /// kernel's rate.
    pub fn estimate(
        &self,
        kernel: &KernelInfo,
        problem: &super::Conv2dProblem,
        slices: usize,
        multiprocessors: u32,
    ) -> Option<f64> {
        let rate = self.rate(kernel, problem.kind, slices)?;
        Some(model_cost(kernel, problem, slices, multiprocessors)? / rate)
    }
}
