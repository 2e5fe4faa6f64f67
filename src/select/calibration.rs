//! The cost model calibrated on a measured table: for a way the table has not timed, the model's
//! time ([`super::cost`]) ÷ the rate the same kernel showed on the table's rows.
//!
//! Every row gives a sample: its kernel's log rate, ln(model time ÷ measured time). A kernel's rate
//! for a problem is the mean of its samples (of the same split-K where it has them), corrected
//! towards the samples of nearby problems: each sample's difference from the mean weighs
//! exp(−d²/2σ²), d the distance of the two problems' extents in octaves, and the corrections'
//! weighted mean is shrunk towards 0 by a prior weight, so far-away rows leave the mean alone. A
//! kernel without rows takes the mean rate of its family (same generation, math class and A type).
//! `except` leaves one problem out: how selection is judged on problems a table lacks.

use std::collections::HashMap;

use super::cost::{kernel_seconds, Work};
use super::table::{Key, Row, DIMS};
use crate::kernel::KernelInfo;
use crate::model::{Api, DType, OpClass};

/// Width of the neighbourhood, in octaves of the extents.
const SIGMA: f64 = 1.0;
/// Weight of the prior (no correction) against the neighbours' corrections.
const PRIOR_WEIGHT: f64 = 0.3;

/// A kernel family: rows of one family stand in for a kernel of it the table never ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Family {
    api: Api,
    tensor: bool,
    element: Option<DType>,
}

impl Family {
    fn of(kernel: &KernelInfo) -> Self {
        Family {
            api: kernel.api(),
            tensor: kernel.design.opclass() == OpClass::TensorOp,
            element: kernel.operation.gemm_operands().map(|g| g.a.element),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    key: Key,
    split_k: usize,
    /// log2(1 + extent) of the key's dims.
    octaves: [f32; DIMS],
    log_rate: f64,
}

/// How an estimate was made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fit {
    /// From the kernel's own rows (`rows` of them).
    Kernel { rows: usize },
    /// From the rows of kernels of its family.
    Family { rows: usize },
}

/// Fitted samples of a table, by kernel name and by family.
#[derive(Debug, Default)]
pub struct Rates {
    by_kernel: HashMap<&'static str, Vec<Sample>>,
    by_family: HashMap<Family, Vec<Sample>>,
}

fn octaves(key: &Key) -> [f32; DIMS] {
    key.dims.map(|d| (1.0 + d as f64).log2() as f32)
}

impl Rates {
    /// Samples of every row whose work `work_of` knows, on a device of `multiprocessors` SMs (the
    /// table's device).
    pub fn fit(rows: &[Row], multiprocessors: u32, work_of: &dyn Fn(&Row) -> Option<Work>) -> Rates {
        let mut rates = Rates::default();
        for row in rows {
            if !row.us.is_finite() || row.us <= 0.0 {
                continue;
            }
            let Some(work) = work_of(row) else {
                continue;
            };
            let model = kernel_seconds(row.kernel, &work, row.split_k, multiprocessors);
            let sample = Sample {
                key: row.key,
                split_k: row.split_k,
                octaves: octaves(&row.key),
                log_rate: (model / (row.us * 1e-6)).ln(),
            };
            rates.by_kernel.entry(row.kernel.name).or_default().push(sample);
            rates
                .by_family
                .entry(Family::of(row.kernel))
                .or_default()
                .push(sample);
        }
        rates
    }

    /// Whether any row was fitted.
    pub fn is_empty(&self) -> bool {
        self.by_kernel.is_empty()
    }

    /// The estimated seconds of `kernel` at `split_k` on `work` for the problem `key`, and how it
    /// was made; rows of `except` are left out. `None` where neither the kernel nor its family has
    /// rows.
    pub fn estimate(
        &self,
        kernel: &KernelInfo,
        key: &Key,
        split_k: usize,
        work: &Work,
        multiprocessors: u32,
        except: &[Key],
    ) -> Option<(f64, Fit)> {
        let kept = |s: &&Sample| !except.contains(&s.key);
        let own: Vec<&Sample> = self
            .by_kernel
            .get(kernel.name)
            .into_iter()
            .flatten()
            .filter(kept)
            .collect();
        let (log_rate, fit) = if own.is_empty() {
            let family: Vec<&Sample> = self
                .by_family
                .get(&Family::of(kernel))
                .into_iter()
                .flatten()
                .filter(kept)
                .collect();
            let mean = mean(family.iter().map(|s| s.log_rate))?;
            (mean, Fit::Family { rows: family.len() })
        } else {
            let same_split: Vec<&Sample> = own.iter().copied().filter(|s| s.split_k == split_k).collect();
            let basis = if same_split.is_empty() { &own } else { &same_split };
            let base = mean(basis.iter().map(|s| s.log_rate))?;
            (
                base + local_correction(basis, key, base),
                Fit::Kernel { rows: own.len() },
            )
        };
        let model = kernel_seconds(kernel, work, split_k, multiprocessors);
        Some((model / log_rate.exp(), fit))
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    (count > 0).then(|| sum / count as f64)
}

/// The weighted mean of nearby samples' differences from `base`, shrunk by the prior weight.
fn local_correction(samples: &[&Sample], key: &Key, base: f64) -> f64 {
    let here = octaves(key);
    let (mut weighted, mut weights) = (0.0, PRIOR_WEIGHT);
    for s in samples.iter().filter(|s| s.key.op == key.op) {
        let d2: f64 = here
            .iter()
            .zip(&s.octaves)
            .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
            .sum();
        let w = (-d2 / (2.0 * SIGMA * SIGMA)).exp();
        weighted += w * (s.log_rate - base);
        weights += w;
    }
    weighted / weights
}
