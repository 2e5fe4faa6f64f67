//! One selection engine for every operation: candidates → calibrated cost → choice.
//!
//! An operation lists the ways it can run a problem ([`Candidate`]: a kernel, its split-K slices,
//! and the operation's own part of the way — an orientation, operands staged into other layouts,
//! a convolution lowered to a matrix product), each with the problem as that kernel runs it (a
//! table [`Key`]) and the [`Work`] it does. The engine estimates each way:
//!
//! 1. **Measured**: the device's table timed exactly this way on exactly this problem — its time.
//! 2. **Calibrated**: otherwise the cost model's time ([`cost`]) mapped to what the kernel showed on
//!    the table's rows (a fitted scale, a cost per output tile of the busiest SM and a fixed cost),
//!    corrected towards its rows of nearby problems ([`calibration`]).
//! 3. **Model**: the bare model, where neither the kernel nor its family has rows.
//!
//! and the lowest estimate runs. Beside measured ways an estimated one must be estimated
//! [`UNMEASURED_MARGIN`] faster, and a bare-model estimate counts [`MODEL_MARGIN`] longer; a way
//! the table could have timed on a problem it measured but did not (a kernel added since) counts
//! only where no measured way exists. The same engine judges
//! itself: [`Context::choose_except`] leaves a problem's rows out, as if the table had never
//! measured it ([`study`]).
//!
//! Operations plug in through [`crate::operations`]; this module imports none of them. Tables have
//! one format ([`table`]), decisions one memo ([`memo`]), refusals one builder ([`refusal`]).

pub mod calibration;
pub mod cost;
pub mod memo;
pub mod occupancy;
pub mod refusal;
pub mod study;
pub mod table;
mod tuning;
pub mod work;

pub use table::{device_table, table_for, Key, MeasuredOn, Row, Table, NO_TABLE};
pub use tuning::{Raster, Tuning};
pub use work::{Piece, Slicing, Work};

use crate::kernel::KernelInfo;

/// How much faster than the fastest measured way an estimated way must be estimated to be chosen
/// over it (about the calibrated model's typical error).
pub const UNMEASURED_MARGIN: f64 = 1.15;

/// Factor on an estimate of the bare model (nothing of the kernel or its family measured on this
/// device): it must win clearly over calibrated ways.
pub const MODEL_MARGIN: f64 = 1.1;

/// One way to run a problem.
#[derive(Clone, Debug)]
pub struct Candidate<W> {
    pub kernel: &'static KernelInfo,
    /// Split-K slices (1: none).
    pub split_k: usize,
    /// The operation's own part of the way.
    pub way: W,
    /// The problem as the kernel runs it (what a table row of this way measures).
    pub key: Key,
    pub work: Work,
    /// Factor on the estimate (above 1 for ways whose extra work is only modelled, such as staging
    /// copies, so that they must win clearly).
    pub margin: f64,
}

/// How a way's time was estimated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Basis {
    /// Timed on this problem by the table.
    Measured,
    /// The model calibrated on the table's rows.
    Calibrated(calibration::Fit),
    /// The bare model (nothing measured of the kernel or its family).
    Model,
}

impl Basis {
    /// A few words for people.
    pub fn describe(&self) -> String {
        match self {
            Basis::Measured => "measured on this problem".into(),
            Basis::Calibrated(calibration::Fit::Kernel { rows }) => {
                format!("model calibrated on {rows} measured rows of this kernel")
            }
            Basis::Calibrated(calibration::Fit::Family { rows }) => {
                format!("model calibrated on {rows} measured rows of kernels like it")
            }
            Basis::Model => "cost model (no measured rows for this kernel)".into(),
        }
    }
}

/// Why a way was chosen: how its time was estimated, and the estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub basis: Basis,
    /// Estimated microseconds of the way (staging included).
    pub estimate_us: f64,
}

impl Choice {
    /// A few words for people.
    pub fn describe(&self) -> String {
        format!("{}, estimated {:.1} us", self.basis.describe(), self.estimate_us)
    }
}

/// A way with its estimate.
#[derive(Clone, Debug)]
pub struct Estimated<W> {
    pub kernel: &'static KernelInfo,
    pub split_k: usize,
    /// The tuning to launch with (the measured row's; the default otherwise).
    pub tuning: Tuning,
    pub way: W,
    pub key: Key,
    /// Estimated microseconds (margin included).
    pub estimate_us: f64,
    pub basis: Basis,
    /// Whether the table measured the problem but not this way.
    unmeasured_way: bool,
}

impl<W> Estimated<W> {
    /// Why it was chosen.
    pub fn choice(&self) -> Choice {
        Choice {
            basis: self.basis,
            estimate_us: self.estimate_us,
        }
    }
}

/// Where estimates come from: a device's table, its SM count, and how to cost a row's work.
#[derive(Clone, Copy)]
pub struct Context<'t> {
    pub table: &'t Table,
    pub multiprocessors: u32,
    pub work_of: &'t dyn Fn(&Row) -> Option<Work>,
}

impl Context<'_> {
    /// Every candidate estimated, rows of `except` left out.
    pub fn estimate_all<W>(
        &self,
        candidates: impl IntoIterator<Item = Candidate<W>>,
        except: &[Key],
    ) -> Vec<Estimated<W>> {
        let rates = self.table.rates(self.multiprocessors, self.work_of);
        candidates
            .into_iter()
            .map(|c| {
                let visible = !except.contains(&c.key);
                let extra_us = c.work.extra_seconds * 1e6;
                let measured = visible
                    .then(|| self.table.fastest(&c.key, c.kernel, c.split_k))
                    .flatten();
                let (kernel_us, basis, tuning) = match measured {
                    Some(row) => (row.us, Basis::Measured, row.tuning),
                    None => match rates.estimate(
                        c.kernel,
                        &c.key,
                        c.split_k,
                        &c.work,
                        self.multiprocessors,
                        except,
                    ) {
                        Some((seconds, fit)) => (seconds * 1e6, Basis::Calibrated(fit), Tuning::default()),
                        None => (
                            cost::kernel_seconds(c.kernel, &c.work, c.split_k, self.multiprocessors) * 1e6,
                            Basis::Model,
                            Tuning::default(),
                        ),
                    },
                };
                let unmeasured_way = measured.is_none() && visible && self.table.measured(&c.key);
                let margin = c.margin * if basis == Basis::Model { MODEL_MARGIN } else { 1.0 };
                Estimated {
                    kernel: c.kernel,
                    split_k: c.split_k,
                    tuning,
                    way: c.way,
                    key: c.key,
                    estimate_us: (kernel_us + extra_us) * margin,
                    basis,
                    unmeasured_way,
                }
            })
            .collect()
    }

    /// The way of lowest estimate (see the module documentation); `None` without candidates.
    pub fn choose<W>(&self, candidates: impl IntoIterator<Item = Candidate<W>>) -> Option<Estimated<W>> {
        self.choose_except(candidates, &[])
    }

    /// [`Self::choose`] as if the table had never measured the problems of `except`.
    pub fn choose_except<W>(
        &self,
        candidates: impl IntoIterator<Item = Candidate<W>>,
        except: &[Key],
    ) -> Option<Estimated<W>> {
        let all = self.estimate_all(candidates, except);
        let any_measured = all.iter().any(|e| e.basis == Basis::Measured);
        // Beside measured times, an estimate must win clearly: it errs, a measurement does not.
        let ranked = |e: &Estimated<W>| match (any_measured, e.basis) {
            (true, Basis::Calibrated(_) | Basis::Model) => e.estimate_us * UNMEASURED_MARGIN,
            _ => e.estimate_us,
        };
        all.into_iter()
            .filter(|e| !(any_measured && e.unmeasured_way))
            .fold(None, |best: Option<Estimated<W>>, e| match best {
                Some(b) if ranked(&b) <= ranked(&e) => Some(b),
                _ => Some(e),
            })
    }
}
