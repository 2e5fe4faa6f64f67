//! The cost model calibrated on a measured table: for a way the table has not timed, the model's
//! time ([`super::cost`]) mapped to what the same kernel showed on the table's rows.
//!
//! Each row is a sample: the model's time x and the measured time y of its way. A kernel's samples
//! of the same split-K (else its family's of that split-K, else all the kernel's) fit y ≈ a·x + b
//! by least squares on relative errors: a
//! scales the model's throughput to the kernel's, b is its fixed cost (launch, tail, a serial
//! split-K's semaphore chain) that the model does not see. The fitted time is then corrected
//! towards the samples of nearby problems: each sample's log error against the fit weighs
//! exp(−d²/2σ²), d the distance of the two problems' extents in octaves, and the weighted mean is
//! shrunk towards 0 by a prior weight, so far-away rows leave the fit alone; only rows of the same
//! layouts correct it. A kernel without rows takes the fit of its family (same generation,
//! architecture, math class and A type). A design calibrated apart (the crate's own kernels whose
//! model is fitted in seconds) keeps a = 1, b = 0 and takes the local correction only. No estimate
//! falls under the fastest row of its family at its split-K, nor under its partial sums' traffic
//! ([`super::cost::split_floor_seconds`]). `except` leaves problems out: how selection is judged on
//! problems a table lacks.

use std::collections::HashMap;

use super::cost::{kernel_seconds, split_floor_seconds, Work};
use super::table::{Key, Row, DIMS};
use crate::kernel::KernelInfo;
use crate::model::{Api, DType, OpClass};

/// Width of the neighbourhood, in octaves of the extents.
const SIGMA: f64 = 1.0;
/// Weight of the prior (no correction) against the neighbours' corrections.
const PRIOR_WEIGHT: f64 = 0.3;
/// Samples of one split-K a fit of that split needs.
const SPLIT_SAMPLES: usize = 3;

/// A kernel family: rows of one family stand in for a kernel of it the table never ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Family {
    api: Api,
    tensor: bool,
    element: Option<DType>,
    /// 2.x kernels of sm_90 (f64 on Hopper's DMMA) run at other rates than sm_80's.
    arch: u32,
    /// Not a CUTLASS kernel (the crate's skinny GEMMs): no CUTLASS rows stand in for it.
    custom: bool,
    /// A design calibrated apart (its `family` value): no other kernels' rows stand in for it.
    apart: Option<&'static str>,
}

impl Family {
    fn of(kernel: &KernelInfo) -> Self {
        Family {
            api: kernel.api(),
            tensor: kernel.design.opclass() == OpClass::TensorOp,
            element: kernel.operation.gemm_operands().map(|g| g.a.element),
            arch: kernel.min_compute_capability,
            custom: matches!(kernel.design, crate::model::Design::Custom(_)),
            apart: match kernel.design {
                crate::model::Design::Custom(design) => match design.value("family") {
                    Some(crate::model::custom::DesignValue::Word(family)) => Some(family),
                    _ => None,
                },
                _ => None,
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    key: Key,
    split_k: usize,
    /// log2(1 + extent) of the key's dims.
    octaves: [f32; DIMS],
    /// The model's seconds and the measured seconds.
    model: f64,
    measured: f64,
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
            let sample = Sample {
                key: row.key,
                split_k: row.split_k,
                octaves: octaves(&row.key),
                model: kernel_seconds(row.kernel, &work, row.split_k, multiprocessors),
                measured: row.us * 1e-6,
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
        fn kept_of<'s>(samples: Option<&'s Vec<Sample>>, except: &[Key]) -> Vec<&'s Sample> {
            samples
                .into_iter()
                .flatten()
                .filter(|s| !except.contains(&s.key))
                .collect()
        }
        let of = |samples| kept_of(samples, except);
        let own = of(self.by_kernel.get(kernel.name));
        let family_of_kernel = Family::of(kernel);
        let family = of(self.by_family.get(&family_of_kernel));
        fn of_split<'s>(samples: &[&'s Sample], split_k: usize) -> Vec<&'s Sample> {
            samples.iter().copied().filter(|s| s.split_k == split_k).collect()
        }
        // No way runs faster than the fastest its family measured at the same split: a fit of
        // large problems alone leaves out a split's fixed cost (a serial split's semaphores).
        let floor = family
            .iter()
            .filter(|s| s.split_k == split_k)
            .map(|s| s.measured)
            .reduce(f64::min)
            .unwrap_or(0.0);
        // The kernel's rows of this split-K; else its family's rows of this split-K (a split's
        // fixed cost is the family's more than the kernel's); else all of the kernel's, else all
        // of its family's.
        let own_split = of_split(&own, split_k);
        let (basis, fit) = if own_split.len() >= SPLIT_SAMPLES {
            (own_split, Fit::Kernel { rows: own.len() })
        } else {
            let family_split = of_split(&family, split_k);
            if family_split.len() >= SPLIT_SAMPLES && split_k > 1 {
                let rows = family_split.len();
                (family_split, Fit::Family { rows })
            } else if !own.is_empty() {
                let rows = own.len();
                (own, Fit::Kernel { rows })
            } else {
                let rows = family.len();
                (family, Fit::Family { rows })
            }
        };
        // A design calibrated apart has a model fitted in seconds: its rows correct it locally
        // only (a scale fitted on the rows a sweep chose to time would carry their bias everywhere).
        let (a, b) = match family_of_kernel.apart {
            Some(_) if !basis.is_empty() => (1.0, 0.0),
            _ => affine_fit(&basis)?,
        };
        let model = kernel_seconds(kernel, work, split_k, multiprocessors);
        let fitted = a * model + b;
        let split_floor = split_floor_seconds(kernel, work, split_k);
        Some((
            (fitted * local_correction(&basis, key, (a, b)).exp())
                .max(floor)
                .max(split_floor),
            fit,
        ))
    }
}

/// y ≈ a·x + b over `samples` (x the model's time, y the measured), least squares on relative
/// errors, a > 0 and b ≥ 0; with a single sample, or where the fit would make b negative, b = 0.
fn affine_fit(samples: &[&Sample]) -> Option<(f64, f64)> {
    if samples.is_empty() {
        return None;
    }
    // Weights 1/y²: every sample's relative error counts alike.
    let (mut sxx, mut sx, mut s1, mut sxy, mut sy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for s in samples {
        let w = 1.0 / (s.measured * s.measured);
        sxx += w * s.model * s.model;
        sx += w * s.model;
        s1 += w;
        sxy += w * s.model * s.measured;
        sy += w * s.measured;
    }
    let det = sxx * s1 - sx * sx;
    if samples.len() > 1 && det > 1e-12 * sxx * s1 {
        let a = (sxy * s1 - sx * sy) / det;
        let b = (sxx * sy - sx * sxy) / det;
        if a > 0.0 && b >= 0.0 {
            return Some((a, b));
        }
    }
    (sxx > 0.0).then(|| (sxy / sxx, 0.0))
}

/// The weighted mean of nearby samples' log errors against the fit (samples of the same operation
/// and layouts), shrunk by the prior weight.
fn local_correction(samples: &[&Sample], key: &Key, (a, b): (f64, f64)) -> f64 {
    let here = octaves(key);
    let (mut weighted, mut weights) = (0.0, PRIOR_WEIGHT);
    // Only problems of the same layouts: a layout-generic kernel's speed depends on them.
    for s in samples
        .iter()
        .filter(|s| s.key.op == key.op && s.key.layouts == key.layouts)
    {
        let d2: f64 = here
            .iter()
            .zip(&s.octaves)
            .map(|(p, q)| (*p as f64 - *q as f64).powi(2))
            .sum();
        let w = (-d2 / (2.0 * SIGMA * SIGMA)).exp();
        weighted += w * (s.measured / (a * s.model + b)).ln();
        weights += w;
    }
    weighted / weights
}
