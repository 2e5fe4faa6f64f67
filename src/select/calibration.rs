//! The cost model calibrated on a measured table: for a way the table has not timed, the model's
//! time ([`super::cost`]) mapped to what the same kernel showed on the table's rows.
//!
//! Each row is a sample: the model's time x, the output tiles t and the K-tile iterations i the
//! busiest SM runs one after another ([`super::cost::busiest_tiles`],
//! [`super::cost::busiest_k_iterations`]), and the measured time y of its way. A kernel's samples
//! of the same split-K (else its family's of that split-K, else all the kernel's) fit
//! y ≈ a·x + c·t + d·i + b by least squares on relative errors (a > 0, c, d and b ≥ 0; of the fits
//! with and without t, i and b, the closest that keeps those signs; t and i only with enough
//! samples): a scales the model's throughput to the kernel's, c is what each tile's start and
//! epilogue cost it (why short-K, many-wave problems run slower than their multiply-adds), d what
//! each K tile costs beyond its multiply-adds (a conv tile of few channels per tap waits on its
//! loads), b its fixed cost (launch, tail, a serial split-K's semaphore chain). The fitted time
//! is then corrected towards the samples of nearby problems: each sample's log error against the
//! fit weighs exp(−d²/2σ²), d the distance of the two problems' extents in octaves, and the
//! weighted mean is shrunk towards 0 by a prior weight, so far-away rows leave the fit alone; only
//! rows of the same layouts correct it. A kernel without rows takes the fit of its family (same
//! generation, architecture, math class and A type). A design calibrated apart (the crate's own
//! kernels whose model is fitted in seconds) keeps its model as it is and takes the local
//! correction only. No estimate falls under the fastest row of its family at its split-K, nor
//! under its partial sums' traffic ([`super::cost::split_floor_seconds`]). `except` leaves problems
//! out: how selection is judged on problems a table lacks.

use std::borrow::Cow;
use std::collections::HashMap;

use super::cost::{busiest_k_iterations, busiest_tiles, kernel_seconds, split_floor_seconds, Work};
use super::table::{Key, Row, DIMS};
use crate::kernel::KernelInfo;
use crate::model::{Api, DType, OpClass};

/// Width of the neighbourhood, in octaves of the extents.
const SIGMA: f64 = 1.25;
/// Weight of the prior (no correction) against the neighbours' corrections.
const PRIOR_WEIGHT: f64 = 0.05;
/// Extents past the first five (a convolution's filter, padding, stride and dilation; a GEMM has
/// four) change how a kernel runs more than its sizes do: their squared octaves weigh this much.
const FORM_WEIGHT: f64 = 6.0;
const SIZE_DIMS: usize = 5;
/// Samples of one split-K a fit of that split needs.
const SPLIT_SAMPLES: usize = 3;
/// Samples a fit needs before it weighs the busiest SM's tiles and K-tile iterations as well.
const TILE_SAMPLES: usize = 8;

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
            element: kernel.operation.gemm_operands().map(|g| twin_type(g.a.element)),
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

/// bf16 and f16 kernels of one configuration run at one speed (the H100 tables' twins differ by
/// 0.995–0.999 in geomean), so each stands in for the other: bf16 is pooled as f16.
fn twin_type(element: DType) -> DType {
    match element {
        DType::Bf16 => DType::F16,
        other => other,
    }
}

/// The name under which a kernel's rows are pooled with its [`twin_type`] twin's.
pub(super) fn speed_twin(name: &str) -> Cow<'_, str> {
    if name.contains("bf16") {
        Cow::Owned(name.replace("bf16", "f16"))
    } else {
        Cow::Borrowed(name)
    }
}

/// `key` as its speed twins run it (elements by [`twin_type`]).
fn twin_key(key: &Key) -> Key {
    Key {
        elements: key.elements.map(twin_type),
        ..*key
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    /// The row's key as its twins run it ([`twin_key`]).
    key: Key,
    split_k: usize,
    /// log2(1 + extent) of the key's dims.
    octaves: [f32; DIMS],
    /// What the fit weighs ([`features`]) and the measured seconds.
    features: [f64; FEATURES],
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
    /// By [`speed_twin`] name: a kernel's rows and its twin's.
    by_kernel: HashMap<Cow<'static, str>, Vec<Sample>>,
    by_family: HashMap<Family, Vec<Sample>>,
}

fn octaves(key: &Key) -> [f32; DIMS] {
    key.dims.map(|d| (1.0 + d as f64).log2() as f32)
}

impl Rates {
    /// Samples of every row whose work `work_of` knows, on a device of `multiprocessors` SMs (the
    /// table's device).
    pub fn fit<'r>(
        rows: impl IntoIterator<Item = &'r Row>,
        multiprocessors: u32,
        work_of: &dyn Fn(&Row) -> Option<Work>,
    ) -> Rates {
        let mut rates = Rates::default();
        for row in rows {
            if !row.us.is_finite() || row.us <= 0.0 {
                continue;
            }
            let Some(work) = work_of(row) else {
                continue;
            };
            let sample = Sample {
                key: twin_key(&row.key),
                split_k: row.split_k,
                octaves: octaves(&row.key),
                features: features(row.kernel, &work, row.split_k, multiprocessors),
                // The row timed the whole way; the fit is of the kernel (estimates add the rest
                // back), never below half the row.
                measured: (row.us * 1e-6 - work.extra_seconds).max(0.5 * row.us * 1e-6),
            };
            rates
                .by_kernel
                .entry(speed_twin(row.kernel.name))
                .or_default()
                .push(sample);
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
        // A problem left out takes its speed twin's rows with it.
        let except: Vec<Key> = except.iter().map(twin_key).collect();
        fn kept_of<'s>(samples: Option<&'s Vec<Sample>>, except: &[Key]) -> Vec<&'s Sample> {
            samples
                .into_iter()
                .flatten()
                .filter(|s| !except.contains(&s.key))
                .collect()
        }
        let of = |samples| kept_of(samples, &except);
        let own = of(self.by_kernel.get(speed_twin(kernel.name).as_ref()));
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
        let fit_of_basis = match family_of_kernel.apart {
            Some(_) if !basis.is_empty() => Coefficients::IDENTITY,
            _ => linear_fit(&basis)?,
        };
        let fitted = fit_of_basis.apply(features(kernel, work, split_k, multiprocessors));
        let split_floor = split_floor_seconds(kernel, work, split_k);
        Some((
            (fitted * local_correction(&basis, key, fit_of_basis).exp())
                .max(floor)
                .max(split_floor),
            fit,
        ))
    }
}

/// Terms of a calibrated estimate: the model's seconds, the output tiles the busiest SM runs
/// ([`busiest_tiles`]), 1 (a fixed cost), and the K-tile iterations the busiest SM runs
/// ([`busiest_k_iterations`]).
const FEATURES: usize = 4;

fn features(kernel: &KernelInfo, work: &Work, split_k: usize, multiprocessors: u32) -> [f64; FEATURES] {
    [
        kernel_seconds(kernel, work, split_k, multiprocessors),
        busiest_tiles(kernel, work, split_k, multiprocessors),
        1.0,
        busiest_k_iterations(kernel, work, split_k, multiprocessors),
    ]
}

/// A kernel's seconds as a weighted sum of its [`features`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct Coefficients([f64; FEATURES]);

impl Coefficients {
    /// The model as it is (the designs calibrated apart).
    const IDENTITY: Coefficients = Coefficients([1.0, 0.0, 0.0, 0.0]);

    fn apply(&self, features: [f64; FEATURES]) -> f64 {
        self.0.iter().zip(features).map(|(c, x)| c * x).sum()
    }
}

/// measured ≈ a·model + c·tiles + b + d·iterations over `samples`, least squares on relative
/// errors, a > 0 and c, b, d ≥ 0: of the fits over the model and any of the other terms that keep
/// those signs, the closest; tiles and iterations only with [`TILE_SAMPLES`] samples.
fn linear_fit(samples: &[&Sample]) -> Option<Coefficients> {
    const SUBSETS: [&[usize]; 8] = [
        &[0, 1, 2, 3],
        &[0, 1, 3],
        &[0, 2, 3],
        &[0, 3],
        &[0, 1, 2],
        &[0, 1],
        &[0, 2],
        &[0],
    ];
    // The subsets without tiles or iterations (the last two) where samples are few.
    let first = if samples.len() >= TILE_SAMPLES { 0 } else { 6 };
    let mut best: Option<(f64, Coefficients)> = None;
    for taken in &SUBSETS[first..] {
        let Some(solution) = weighted_least_squares(samples, taken) else {
            continue;
        };
        let mut coefficients = [0.0; FEATURES];
        for (&i, &c) in taken.iter().zip(&solution) {
            coefficients[i] = c;
        }
        if coefficients[0] <= 0.0 || coefficients[1..].iter().any(|&c| c < 0.0) {
            continue;
        }
        let fit = Coefficients(coefficients);
        let error: f64 = samples
            .iter()
            .map(|s| (1.0 - fit.apply(s.features) / s.measured).powi(2))
            .sum();
        if best.map_or(true, |(e, _)| error < e) {
            best = Some((error, fit));
        }
    }
    best.map(|(_, fit)| fit)
}

/// The least-squares coefficients of the features `taken` (weights 1/y²: every sample's
/// relative error counts alike); `None` where they are not determined.
fn weighted_least_squares(samples: &[&Sample], taken: &[usize]) -> Option<Vec<f64>> {
    let n = taken.len();
    let mut gram = vec![vec![0.0; n + 1]; n];
    for s in samples {
        let f = s.features;
        let w = 1.0 / (s.measured * s.measured);
        for (r, &i) in taken.iter().enumerate() {
            for (c, &j) in taken.iter().enumerate() {
                gram[r][c] += w * f[i] * f[j];
            }
            gram[r][n] += w * f[i] * s.measured;
        }
    }
    solve(gram)
}

/// Gauss-Jordan elimination of an n × (n + 1) augmented system whose left part is a Gram matrix
/// (symmetric, positive semi-definite: no pivoting needed); `None` where a column is (nearly) a
/// combination of the others.
fn solve(mut m: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let n = m.len();
    let diagonal: Vec<f64> = (0..n).map(|i| m[i][i]).collect();
    for col in 0..n {
        if m[col][col].is_nan() || m[col][col] <= 1e-9 * diagonal[col] {
            return None;
        }
        let pivot_row = m[col].clone();
        for (_, values) in m.iter_mut().enumerate().filter(|(row, _)| *row != col) {
            let factor = values[col] / pivot_row[col];
            for (x, p) in values.iter_mut().zip(&pivot_row).skip(col) {
                *x -= factor * p;
            }
        }
    }
    Some((0..n).map(|i| m[i][n] / m[i][i]).collect())
}

/// The weighted mean of nearby samples' log errors against the fit (samples of the same operation
/// and layouts), shrunk by the prior weight.
fn local_correction(samples: &[&Sample], key: &Key, fit: Coefficients) -> f64 {
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
            .enumerate()
            .map(|(i, (p, q))| {
                (*p as f64 - *q as f64).powi(2) * if i >= SIZE_DIMS { FORM_WEIGHT } else { 1.0 }
            })
            .sum();
        let w = (-d2 / (2.0 * SIGMA * SIGMA)).exp();
        weighted += w * (s.measured / fit.apply(s.features)).ln();
        weights += w;
    }
    weighted / weights
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DType;

    fn sample(model: f64, tiles: f64, measured: f64) -> Sample {
        sample_of(model, tiles, 0.0, measured)
    }

    fn sample_of(model: f64, tiles: f64, iterations: f64, measured: f64) -> Sample {
        let key = Key::new("gemm", [DType::F16; 3], None, &[1, 1, 1, 1]);
        Sample {
            key,
            split_k: 1,
            octaves: octaves(&key),
            features: [model, tiles, 1.0, iterations],
            measured,
        }
    }

    /// A problem left out hides its bf16/f16 twin's rows too; other types stay apart.
    #[test]
    fn twins_share_a_key_and_a_name() {
        let bf16 = Key::new("gemm", [DType::Bf16; 3], None, &[5, 6, 7, 1]);
        let f16 = Key::new("gemm", [DType::F16; 3], None, &[5, 6, 7, 1]);
        let f32 = Key::new("gemm", [DType::F32; 3], None, &[5, 6, 7, 1]);
        assert_eq!(twin_key(&bf16), f16);
        assert_ne!(twin_key(&f32), f16);
        assert_eq!(speed_twin("gemm_bf16_tn_64x64"), speed_twin("gemm_f16_tn_64x64"));
        assert_ne!(speed_twin("gemm_f32_tn_64x64"), speed_twin("gemm_f16_tn_64x64"));
    }

    /// A cost per K-tile iteration the model's multiply-adds do not show is fitted back exactly.
    #[test]
    fn fit_recovers_a_cost_per_k_iteration() {
        let samples: Vec<Sample> = (1..=12)
            .map(|i| {
                let (model, iterations) = (i as f64 * 1e-5, ((i * 5) % 7 + 1) as f64 * 40.0);
                sample_of(model, 0.0, iterations, 1.2 * model + 5e-8 * iterations)
            })
            .collect();
        let refs: Vec<&Sample> = samples.iter().collect();
        let Coefficients([a, _, b, d]) = linear_fit(&refs).expect("a fit");
        assert!(
            (a - 1.2).abs() < 1e-6 && (d - 5e-8).abs() < 1e-14 && b.abs() < 1e-12,
            "{a} {d} {b}"
        );
    }

    /// Times made of a scale, a cost per tile and a fixed cost are fitted back exactly.
    #[test]
    fn fit_recovers_scale_tile_cost_and_fixed_cost() {
        let samples: Vec<Sample> = (1..=12)
            .map(|i| {
                let (model, tiles) = (i as f64 * 1e-5, ((i * 7) % 5 + 1) as f64);
                sample(model, tiles, 1.5 * model + 3e-6 * tiles + 2e-6)
            })
            .collect();
        let refs: Vec<&Sample> = samples.iter().collect();
        let Coefficients([a, c, b, _]) = linear_fit(&refs).expect("a fit");
        assert!((a - 1.5).abs() < 1e-6 && (c - 3e-6).abs() < 1e-12 && (b - 2e-6).abs() < 1e-12);
        // Fewer samples than the tile term needs: scale and fixed cost only.
        let Coefficients([_, c, _, _]) = linear_fit(&refs[..TILE_SAMPLES - 1]).expect("a fit");
        assert_eq!(c, 0.0);
    }

    /// A tile count that never changes is no term of its own (it is the fixed cost), and a fit
    /// that would need a negative cost drops that term.
    #[test]
    fn fit_keeps_its_terms_determined_and_non_negative() {
        let same_tiles: Vec<Sample> = (1..=10)
            .map(|i| sample(i as f64 * 1e-5, 4.0, 2.0 * i as f64 * 1e-5 + 1e-6))
            .collect();
        let refs: Vec<&Sample> = same_tiles.iter().collect();
        let fit = linear_fit(&refs).expect("a fit");
        let predicted = fit.apply([5e-5, 4.0, 1.0, 0.0]);
        assert!((predicted / 1.01e-4 - 1.0).abs() < 1e-9, "{fit:?}");
        // Measured times that fall with the tile count: no negative cost per tile.
        let falling: Vec<Sample> = (1..=10)
            .map(|i| sample(1e-5, i as f64, 1e-5 * (2.0 - 0.1 * i as f64)))
            .collect();
        let refs: Vec<&Sample> = falling.iter().collect();
        let Coefficients([a, c, b, _]) = linear_fit(&refs).expect("a fit");
        assert!(a > 0.0 && c >= 0.0 && b >= 0.0);
    }
}
