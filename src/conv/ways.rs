//! The ways conv dispatch can run a convolution, for the selection engine: every allowed conv
//! kernel of its kind and types at every split-K it supports, and every GEMM kernel that runs a 1×1,
//! unpadded, unit-stride convolution as a matrix product over the tensors as they lie, and, where
//! the channels are not whole 16 bytes, every conv kernel that runs them padded — each with the
//! table key of the problem as the kernel runs it and the work the kernel does.

use super::dispatch::{allowed, as_gemm, gemm_extent_of};
use super::padded::{self, Padding};
use super::{Conv2dProblem, ConvOperands};
use crate::dispatch as gemm_dispatch;
use crate::gemm::GemmOperands;
use crate::kernel::KernelInfo;
use crate::model::{Api, ConvKind, IteratorAlgorithm, SplitK, StrideSupport};
use crate::registry::Registry;
use crate::select::cost::{STAGING_LAUNCH_SECONDS, STAGING_MARGIN};
use crate::select::{Candidate, Key, Piece, Row, Slicing, Work};

/// Table operation names of the three kinds start with this.
pub const OP_PREFIX: &str = "conv2d_";

/// How a way runs the convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvWay {
    /// A conv kernel of the problem's kind.
    Direct,
    /// A GEMM kernel over the tensors viewed as matrices ([`as_gemm`]).
    AsGemm,
    /// A conv kernel on the problem with its channels padded to whole 16 (or 8) bytes
    /// ([`super::padded`]).
    Padded(Padding),
}

/// The table operation name of `kind`: `conv2d_fprop`, `conv2d_dgrad`, `conv2d_wgrad`.
pub fn op_name(kind: ConvKind) -> &'static str {
    match kind {
        ConvKind::Fprop => "conv2d_fprop",
        ConvKind::Dgrad => "conv2d_dgrad",
        ConvKind::Wgrad => "conv2d_wgrad",
    }
}

/// The table key of `problem`.
pub fn key_of(p: &Conv2dProblem) -> Key {
    let (a, b, c) = p.elements;
    Key::new(
        op_name(p.kind),
        [a, b, c],
        None,
        &[
            p.n,
            p.h,
            p.w,
            p.c,
            p.k,
            p.r,
            p.s,
            p.pad[0],
            p.pad[1],
            p.stride[0],
            p.stride[1],
            p.dilation[0],
            p.dilation[1],
        ],
    )
}

/// The problem a key measured.
pub fn problem_of_key(key: &Key) -> Option<Conv2dProblem> {
    let kind = [ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad]
        .into_iter()
        .find(|&k| op_name(k) == key.op)?;
    let d = key.dims;
    let [a, b, c] = key.elements;
    Some(
        Conv2dProblem::new(kind, [d[0], d[1], d[2], d[3]], [d[4], d[5], d[6]], (a, b, c))
            .padding(d[7], d[8])
            .stride(d[9], d[10])
            .dilation(d[11], d[12]),
    )
}

/// A conv row's work, for calibration.
pub fn row_work(row: &Row) -> Option<Work> {
    let problem = problem_of_key(&row.key)?;
    work_of(row.kernel, &problem)
}

/// Bytes of the activation (dx of a dgrad).
fn activation_bytes(p: &Conv2dProblem) -> f64 {
    let element = match p.kind {
        ConvKind::Fprop => p.elements.0,
        ConvKind::Dgrad => p.elements.2,
        ConvKind::Wgrad => p.elements.1,
    };
    (p.n * p.h * p.w * p.c) as f64 * element.bits() as f64 / 8.0
}

/// Bytes of the convolution's three tensors, each moved once.
pub(crate) fn tensor_bytes(p: &Conv2dProblem) -> f64 {
    let (out_p, out_q) = p.output_size().unwrap_or((0, 0));
    let (a, b, c) = p.elements;
    let activation = (p.n * p.h * p.w * p.c) as f64;
    let filter = (p.k * p.r * p.s * p.c) as f64;
    let output = (p.n * out_p * out_q * p.k) as f64;
    // A, B, C/D roles by kind: fprop x, w → y; dgrad dy, w → dx; wgrad dy, x → dw.
    let (ea, eb, ec) = match p.kind {
        ConvKind::Fprop => (activation, filter, output),
        ConvKind::Dgrad => (output, filter, activation),
        ConvKind::Wgrad => (output, activation, filter),
    };
    (ea * a.bits() as f64 + eb * b.bits() as f64 + ec * c.bits() as f64) / 8.0
}

/// The work of `kernel` (conv, or GEMM over the matrix view) on `problem`; `None` when the
/// problem has no implicit GEMM. A strided dgrad runs as its stride phases (a 3.x kernel launches
/// one per phase; CUTLASS 2.x's strided dgrad tiles each phase apart), so neither pays for taps
/// that miss a pixel.
pub fn work_of(kernel: &KernelInfo, problem: &Conv2dProblem) -> Option<Work> {
    let bytes = tensor_bytes(problem);
    let extent = problem.gemm_extent().ok()?;
    if kernel.operation.conv().is_none() {
        let (m, n, k) = gemm_extent_of(problem)?;
        return Some(Work::single(Piece::new(m, n, k, 1), bytes));
    }
    if super::small::cols_of(kernel).is_some() {
        // The direct kernel runs the implicit GEMM's extent as it is (its model counts its taps).
        let (m, n, k) = extent;
        return Some(Work::single(Piece::new(m, n, k, 1), bytes));
    }
    if problem.kind == ConvKind::Dgrad && problem.stride != [1, 1] {
        // A 2.x unit-stride kernel computes the phases into scratch and copies them into dx.
        let staged = kernel.api() == Api::Cutlass2x
            && kernel
                .operation
                .conv()
                .is_some_and(|c| c.stride_support == StrideSupport::Unity);
        let phases = if staged {
            super::stride_phases::split(problem)
        } else {
            super::stride_phases::phases(problem)
        };
        let copies = if staged {
            2.0 * activation_bytes(problem)
        } else {
            0.0
        };
        if let Ok(phases) = phases {
            // The staged way's gather and scatter copies, and the fill of phases no tap reaches,
            // are launches of their own.
            let fills = phases.iter().any(|ph| !ph.has_taps());
            let copy_launches = if staged { 2 + usize::from(fills) } else { 0 };
            let launches: Vec<Vec<Piece>> = phases
                .iter()
                .filter(|ph| ph.has_taps())
                .filter_map(|ph| {
                    let unit = ph.rules_problem(problem);
                    let (m, n, k) = padded_extent(kernel, &unit, unit.gemm_extent().ok()?);
                    Some(vec![Piece::new(m, n, k, 1).sliced(slicing(kernel, &unit))])
                })
                .collect();
            return Some(Work {
                launches,
                bytes: bytes + copies,
                extra_seconds: copy_launches as f64 * STAGING_LAUNCH_SECONDS,
                ..Default::default()
            });
        }
    }
    let (m, n, k) = padded_extent(kernel, problem, extent);
    let piece = Piece::new(m, n, k, 1).sliced(slicing(kernel, problem));
    Some(Work::single(piece, bytes))
}

/// How `kernel`'s split-K slices divide the depth of `problem` (CUTLASS's
/// `implicit_gemm_k_iterations`): a 2.x fprop or dgrad kernel of the analytic or optimized
/// iterators gives each slice a share of the channels at every tap, one of fixed or few channels
/// runs the whole depth in every slice; the rest split the depth evenly.
fn slicing(kernel: &KernelInfo, problem: &Conv2dProblem) -> Slicing {
    let Some(channels) = problem.tap_channels().filter(|_| kernel.api() == Api::Cutlass2x) else {
        return Slicing::Depth;
    };
    match kernel.operation.conv().map(|c| c.iterator) {
        Some(IteratorAlgorithm::Analytic | IteratorAlgorithm::Optimized) => Slicing::Channels(channels),
        Some(_) => Slicing::Whole,
        None => Slicing::Depth,
    }
}

/// The implicit GEMM's extent as `kernel` computes it: CUTLASS 3.x kernels and 2.x kernels of the
/// analytic and optimized iterators tile K (fprop, dgrad; 3.x wgrad: N) per filter position, so a
/// channel count below the tile's pays for the whole tile at every tap (CUTLASS's
/// `implicit_gemm_k_iterations`); the fixed-, few-channel and first-layer kernels pack the taps.
fn padded_extent(
    kernel: &KernelInfo,
    problem: &Conv2dProblem,
    (m, n, k): (usize, usize, usize),
) -> (usize, usize, usize) {
    let (tile_n, tile_k) = (kernel.tile().n.max(1) as usize, kernel.tile().k.max(1) as usize);
    let per_tap = match kernel.operation.conv().map(|c| c.iterator) {
        _ if kernel.api() == Api::Cutlass3x => true,
        Some(IteratorAlgorithm::Analytic | IteratorAlgorithm::Optimized) => problem.kind != ConvKind::Wgrad,
        _ => false,
    };
    if !per_tap {
        return (m, n, k);
    }
    match problem.kind {
        ConvKind::Fprop | ConvKind::Dgrad => (m, n, problem.k_tiles_3x(tile_k) * tile_k),
        ConvKind::Wgrad => (m, problem.c.div_ceil(tile_n) * tile_n * problem.r * problem.s, k),
    }
}

/// The split-K slice counts worth trying on a conv `kernel`: powers of two up to 128 for a kernel
/// that splits K (a parallel split-K kernel without slices only adds its reduction pass; a
/// stream-K kernel's 1 is its own stream-K decomposition), 1 for one that cannot or whose slices
/// each run the whole depth ([`Slicing::Whole`]).
pub fn slice_candidates(kernel: &KernelInfo) -> &'static [usize] {
    const POWERS: [usize; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
    // A kernel whose every slice runs the whole depth gains nothing from slices.
    let whole_depth = kernel.api() == Api::Cutlass2x
        && kernel.operation.conv().is_some_and(|c| {
            matches!(
                c.iterator,
                IteratorAlgorithm::FixedChannels
                    | IteratorAlgorithm::FewChannels
                    | IteratorAlgorithm::FirstLayer
            )
        });
    if whole_depth {
        return &POWERS[..1];
    }
    match kernel.design.split_k() {
        SplitK::Parallel => &POWERS[1..],
        SplitK::Serial | SplitK::StreamK => &POWERS,
        SplitK::None => &POWERS[..1],
    }
}

/// Every way dispatch may run `problem` (compute capability and addresses set): each allowed conv
/// kernel of its kind and types at each split-K it supports, each GEMM kernel that takes it as
/// a matrix product (wgrad's long reduction also at 16, 64 and 128 slices), the padded ways and
/// the direct kernel of few channels ([`super::small`]) — what the benchmark measures.
pub fn candidates(
    registry: &Registry,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
) -> Vec<Candidate<ConvWay>> {
    let key = key_of(problem);
    let mut out = Vec::new();
    for (kernel, split_k) in conv_options(registry, problem) {
        if let Some(work) = work_of(kernel, problem) {
            out.push(candidate(kernel, split_k, ConvWay::Direct, key, work));
        }
    }
    let gemm_splits: &[usize] = if problem.kind == ConvKind::Wgrad {
        &[1, 16, 64, 128]
    } else {
        &[1]
    };
    for &split_k in gemm_splits {
        for kernel in gemm_candidates(registry, problem, operands, split_k) {
            if let Some(work) = work_of(kernel, problem) {
                out.push(candidate(kernel, split_k, ConvWay::AsGemm, key, work));
            }
        }
    }
    out.extend(padded_candidates(registry, problem));
    out.extend(super::small::candidates(problem));
    out
}

/// The ways with the channels padded (none where they are whole 16 bytes): each conv kernel that
/// runs the problem with one of its paddings, its copies added to its time and its estimate held
/// to the staging margin.
fn padded_candidates(registry: &Registry, problem: &Conv2dProblem) -> Vec<Candidate<ConvWay>> {
    let mut out = Vec::new();
    for padding in padded::paddings(problem) {
        let padded = padded::padded_problem(problem, padding);
        let (key, copies) = (key_of(&padded), padded::staging_seconds(problem, padding));
        // A kernel that runs the problem as it is gains nothing from the copies.
        let options = conv_options(registry, &padded)
            .filter(|&(kernel, split_k)| kernel.supports(&with_slices(problem, split_k)).is_err());
        for (kernel, split_k) in options {
            if let Some(mut work) = work_of(kernel, &padded) {
                work.extra_seconds = copies;
                out.push(Candidate {
                    margin: STAGING_MARGIN,
                    ..candidate(kernel, split_k, ConvWay::Padded(padding), key, work)
                });
            }
        }
    }
    out
}

fn candidate(
    kernel: &'static KernelInfo,
    split_k: usize,
    way: ConvWay,
    key: Key,
    work: Work,
) -> Candidate<ConvWay> {
    Candidate {
        kernel,
        split_k,
        way,
        key,
        work,
        margin: 1.0,
    }
}

/// The conv kernels among the candidates: each allowed conv kernel of `problem`'s kind and types
/// at each split-K it supports, in registry order.
pub fn conv_options<'r>(
    registry: &'r Registry,
    problem: &'r Conv2dProblem,
) -> impl Iterator<Item = (&'static KernelInfo, usize)> + 'r {
    registry
        .all()
        .iter()
        .copied()
        .filter(|kernel| {
            kernel.operation.conv().is_some_and(|conv| {
                let g = &conv.gemm;
                conv.kind == problem.kind && (g.a.element, g.b.element, g.c.element) == problem.elements
            }) && allowed(kernel)
        })
        .flat_map(|kernel| {
            slice_candidates(kernel)
                .iter()
                .map(move |&slices| (kernel, slices))
        })
        .filter(|&(kernel, slices)| kernel.supports(&with_slices(problem, slices)).is_ok())
}

pub(crate) fn with_slices(problem: &Conv2dProblem, slices: usize) -> Conv2dProblem {
    Conv2dProblem {
        split_k_slices: slices,
        ..*problem
    }
}

/// Whether `kernel` (conv, or GEMM over [`as_gemm`]'s view) may run `problem` with `slices`.
pub fn runs(kernel: &KernelInfo, problem: &Conv2dProblem, operands: &ConvOperands, slices: usize) -> bool {
    if kernel.operation.conv().is_some() {
        return allowed(kernel) && kernel.supports(&with_slices(problem, slices)).is_ok();
    }
    let Some((signature, gemm)) = as_gemm(problem, operands) else {
        return false;
    };
    let gemm = GemmOperands {
        split_k_slices: slices,
        ..gemm
    };
    let cc = problem.compute_capability.unwrap_or(90);
    gemm_dispatch::dispatchable(kernel)
        && kernel
            .supports(&gemm_dispatch::problem_of(signature, &gemm, cc))
            .is_ok()
}

/// The GEMM kernels of `registry` that may run `problem` (with compute capability and addresses
/// set) as a matrix product over `operands` with `slices` split-K slices: what the benchmark times
/// beside the conv kernels. Empty when the problem is not a plain product ([`as_gemm`]).
pub fn gemm_candidates(
    registry: &Registry,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    slices: usize,
) -> Vec<&'static KernelInfo> {
    if as_gemm(problem, operands).is_none() {
        return Vec::new();
    }
    registry
        .all()
        .iter()
        .copied()
        .filter(|k| k.operation.conv().is_none() && runs(k, problem, operands, slices))
        .collect()
}
