//! A strided dgrad on a CUTLASS 2.x unit-stride dgrad kernel, as its stride phases
//! ([`super::stride_phases`]) computed into scratch memory and scattered into dx.
//!
//! CUTLASS 2.x conv kernels read and write packed tensors padded alike on both sides, so a phase
//! cannot write its strided view of dx directly as a 3.x kernel does. Each phase with taps runs
//! instead as a packed unit-stride dgrad of symmetric padding `pad' = min(off, pad_end)` (0 where
//! `pad_end` is negative), whose output pixel `h' = i + off − pad'` is the phase's pixel `i`:
//! - its output extent is `P + taps − 1 − 2·pad'` (dy's P, so dy is read as it lies), which holds
//!   every pixel of the phase but those past every filter window;
//! - where beta reads C, C's phase pixels are gathered into the scratch output first;
//! - after the phases, one batched copy scatters each phase's pixels into dx; pixels no tap
//!   reaches get `beta·C` (or zeros), as in the 3.x path.
//!
//! This runs the strided dgrads the strided kernels cannot: C or K odd (the alignment-1 unity
//! kernel), and phases whose last pixels lie past every filter window.

use std::ffi::c_void;

use cudarc::driver::CudaStream;

use super::stride_phases::{self, filter_views, output_view, Axis, Phase, PhaseFilter};
use super::{Conv2dProblem, ConvOperands};
use crate::abi;
use crate::device::DeviceProps;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::{Api, ConvKind, StrideSupport};
use crate::params::Prepared;
use crate::support::{Copy4d, Scale4d, View4};
use crate::workspace::{Scratch, Workspace};

/// Whether kernel `info` runs a convolution of `geometry` as staged stride phases: a strided
/// dgrad on a CUTLASS 2.x unit-stride dgrad kernel.
pub fn applies(info: &KernelInfo, geometry: &super::ConvGeometry) -> bool {
    info.operation
        .conv()
        .is_some_and(|c| c.kind == ConvKind::Dgrad && c.stride_support == StrideSupport::Unity)
        && info.api() == Api::Cutlass2x
        && geometry.stride != [1, 1]
}

/// Where one axis of a phase lies in its packed unit-stride dgrad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// The unit-stride dgrad's padding, both sides.
    pub pad: usize,
    /// Its output extent.
    pub extent: usize,
    /// Output pixels ahead of the phase's first.
    pub skip: usize,
    /// The phase's pixels it computes (the rest lie past every filter window).
    pub covered: usize,
}

/// The window of phase axis `axis` over dy's `out` pixels.
pub(crate) fn window(axis: &Axis, out: usize) -> Window {
    let pad = usize::try_from(axis.pad_end).map_or(0, |end| axis.pad.min(end));
    // out + taps − 1 = pad_end + extent + off ≥ 2·pad.
    let extent = out + axis.taps - 1 - 2 * pad;
    let skip = axis.pad - pad;
    Window {
        pad,
        extent,
        skip,
        covered: axis.extent.min(extent.saturating_sub(skip)),
    }
}

/// A staged phased launch, planned: the whole problem's ABI arguments (checked by
/// [`super::plan`]), its phases, and where everything lies in the scratch memory.
struct Staged {
    full: abi::cutlass_aot_conv2d_args,
    problem: Conv2dProblem,
    phases: Vec<Phase>,
    filters: Vec<PhaseFilter>,
    /// Byte offset of each phase's output (phases with taps; 0 for the others).
    outputs: Vec<usize>,
    kernel_bytes: usize,
    /// Kernel workspaces, then sub-filters, then outputs.
    workspaces: usize,
    filters_bytes: usize,
    bytes: usize,
}

impl Staged {
    fn new(info: &'static KernelInfo, operands: &ConvOperands, device: &DeviceProps) -> Result<Self, Error> {
        let full = super::plan(info, operands, device)?;
        let problem = super::problem_of(info, operands)?;
        let phases = stride_phases::split(&problem).map_err(|m| Error::invalid(info.name, m))?;
        let layout = stride_phases::layout(&phases, &problem, info.gemm().b.element);
        let cd_bytes = info.gemm().c.element.bits() as usize / 8;
        let (p, q) = (full.p as usize, full.q as usize);
        let mut at = 0usize;
        let outputs = phases
            .iter()
            .map(|ph| {
                if !ph.has_taps() {
                    return 0;
                }
                let (rows, cols) = (window(&ph.rows, p), window(&ph.cols, q));
                let here = at;
                at += (problem.n * rows.extent * cols.extent * problem.c * cd_bytes).next_multiple_of(256);
                here
            })
            .collect();
        let kernel_bytes = kernel_workspace(info, &full, &phases)?;
        let workspaces = kernel_bytes * phases.iter().filter(|ph| ph.has_taps()).count();
        Ok(Staged {
            bytes: workspaces + layout.bytes + at,
            full,
            problem,
            phases,
            filters: layout.filters,
            outputs,
            kernel_bytes,
            workspaces,
            filters_bytes: layout.bytes,
        })
    }
}

/// The ABI arguments of phase `ph`'s packed unit-stride dgrad: its sub-filter at `filter`, its
/// output (and C, where `beta` reads it) at `out`.
fn phase_args(
    full: &abi::cutlass_aot_conv2d_args,
    ph: &Phase,
    filter: u64,
    out: u64,
    beta: f64,
) -> abi::cutlass_aot_conv2d_args {
    let (rows, cols) = (
        window(&ph.rows, full.p as usize),
        window(&ph.cols, full.q as usize),
    );
    abi::cutlass_aot_conv2d_args {
        h: rows.extent as i32,
        w: cols.extent as i32,
        r: ph.rows.taps as i32,
        s: ph.cols.taps as i32,
        pad_h: rows.pad as i32,
        pad_w: cols.pad as i32,
        pad_h_end: rows.pad as i32,
        pad_w_end: cols.pad as i32,
        stride_h: 1,
        stride_w: 1,
        mode: abi::cutlass_aot_conv_mode::CUTLASS_AOT_CONV_CROSS_CORRELATION as i32,
        ptr_b: filter as *const c_void,
        ptr_c: out as *const c_void,
        ptr_d: out as *mut c_void,
        cd_pixel_strides: [0; 3],
        beta,
        ..*full
    }
}

/// The phase's computed pixels in its scratch output at `out`, as a 4-D view.
fn staged_view(
    problem: &Conv2dProblem,
    ph: &Phase,
    full: &abi::cutlass_aot_conv2d_args,
    out: u64,
    bytes: usize,
) -> View4 {
    let (rows, cols) = (
        window(&ph.rows, full.p as usize),
        window(&ph.cols, full.q as usize),
    );
    let (h, w, c) = (rows.extent as i64, cols.extent as i64, problem.c as i64);
    let first = (rows.skip as i64 * w + cols.skip as i64) * c;
    View4 {
        base: out + (first * bytes as i64) as u64,
        strides: [h * w * c, w * c, c, 1],
    }
}

/// `view` moved by `rows` and `cols` pixels.
fn shifted(view: View4, rows: usize, cols: usize, bytes: usize) -> View4 {
    let offset = rows as i64 * view.strides[1] + cols as i64 * view.strides[2];
    View4 {
        base: (view.base as i64 + offset * bytes as i64) as u64,
        ..view
    }
}

/// The largest workspace any phase's kernel asks for (256-byte multiple).
fn kernel_workspace(
    info: &'static KernelInfo,
    full: &abi::cutlass_aot_conv2d_args,
    phases: &[Phase],
) -> Result<usize, Error> {
    // Workspace sizes depend on extents and tiles, not on addresses: stand-in addresses.
    const STAND_IN: u64 = 1 << 40;
    let mut most = 0usize;
    for ph in phases.iter().filter(|ph| ph.has_taps()) {
        let mut args = phase_args(full, ph, STAND_IN, STAND_IN, full.beta);
        args.workspace = std::ptr::null_mut();
        args.workspace_capacity = 0;
        if let Err(bytes) = info.prepare_conv_status(&args)? {
            most = most.max(bytes as usize);
        }
    }
    Ok(most.next_multiple_of(256))
}

/// Bytes of scratch memory a staged phased launch of `info` needs.
pub(crate) fn workspace_bytes(
    info: &'static KernelInfo,
    operands: &ConvOperands,
    device: &DeviceProps,
) -> Result<usize, Error> {
    Ok(Staged::new(info, operands, device)?.bytes)
}

/// The copies and fills around a staged launch, and its kernels' Params.
#[derive(Default)]
struct Steps {
    /// Sub-filters and C's phase pixels into scratch, before the kernels.
    gathers: Vec<Copy4d>,
    kernels: Vec<(Prepared, u64)>,
    /// `beta·C` where no tap reaches, concurrently with the kernels.
    fills: Vec<Scale4d>,
    /// Computed pixels into dx, after the kernels.
    scatters: Vec<Copy4d>,
}

/// Every step of `staged` with its scratch memory at `base`, before anything is enqueued.
fn steps(info: &'static KernelInfo, staged: &Staged, c_given: bool, base: u64) -> Result<Steps, Error> {
    let Staged {
        full,
        problem,
        phases,
        ..
    } = staged;
    let element = info.gemm().c.element;
    let cd_bytes = element.bits() as usize / 8;
    let b_bytes = info.gemm().b.element.bits() as usize / 8;
    let beta = if c_given { full.beta } else { 0.0 };
    let filters_at = base + staged.workspaces as u64;
    let outputs_at = filters_at + staged.filters_bytes as u64;
    let (d, c) = (full.ptr_d as u64, full.ptr_c as u64);
    let fill = |ph: &Phase, rows: [usize; 2], cols: [usize; 2]| Scale4d {
        element,
        src: shifted(output_view(problem, ph, c, cd_bytes), rows[0], cols[0], cd_bytes),
        dst: shifted(output_view(problem, ph, d, cd_bytes), rows[0], cols[0], cd_bytes),
        extent: [problem.n, rows[1] - rows[0], cols[1] - cols[0], problem.c],
        beta,
    };
    let mut steps = Steps::default();
    for ((ph, &filter), &out) in phases.iter().zip(&staged.filters).zip(&staged.outputs) {
        let (extent_r, extent_c) = (ph.rows.extent, ph.cols.extent);
        if filter == PhaseFilter::None {
            steps.fills.push(fill(ph, [0, extent_r], [0, extent_c]));
            continue;
        }
        let (filter, gathered) = match filter {
            PhaseFilter::Gathered(offset) => (filters_at + offset as u64, true),
            _ => (full.ptr_b as u64, false),
        };
        let out = outputs_at + out as u64;
        let own_workspace = base + (staged.kernel_bytes * steps.kernels.len()) as u64;
        let mut args = phase_args(full, ph, filter, out, beta);
        args.workspace = own_workspace as *mut c_void;
        args.workspace_capacity = staged.kernel_bytes as u64;
        let prepared = info
            .prepare_conv_status(&args)?
            .map_err(|needed| Error::AbiMismatch {
                kernel: info.name,
                message: format!(
                    "a stride phase asked for {needed} bytes of workspace after saying {}",
                    staged.kernel_bytes
                ),
            })?;
        steps.kernels.push((prepared, own_workspace));
        if gathered {
            let (src, dst) = filter_views(problem, ph, full.ptr_b as u64, filter, b_bytes);
            steps.gathers.push(Copy4d::new(
                b_bytes,
                src,
                dst,
                [problem.k, ph.rows.taps, ph.cols.taps, problem.c],
            ));
        }
        let (rows, cols) = (
            window(&ph.rows, full.p as usize),
            window(&ph.cols, full.q as usize),
        );
        let staged_at = staged_view(problem, ph, full, out, cd_bytes);
        let covered = [problem.n, rows.covered, cols.covered, problem.c];
        if beta != 0.0 {
            steps.gathers.push(Copy4d::new(
                cd_bytes,
                output_view(problem, ph, c, cd_bytes),
                staged_at,
                covered,
            ));
        }
        steps.scatters.push(Copy4d::new(
            cd_bytes,
            staged_at,
            output_view(problem, ph, d, cd_bytes),
            covered,
        ));
        // Pixels past every filter window: below the covered rows, then right of the covered columns.
        if rows.covered < extent_r {
            steps
                .fills
                .push(fill(ph, [rows.covered, extent_r], [0, extent_c]));
        }
        if cols.covered < extent_c {
            steps
                .fills
                .push(fill(ph, [0, rows.covered], [cols.covered, extent_c]));
        }
    }
    Ok(steps)
}

/// Launches the strided dgrad `operands` on 2.x unit-stride dgrad kernel `info` as staged stride
/// phases: sub-filters and C gathered into scratch memory, one packed unit-stride dgrad per phase
/// concurrently on side streams (the fills of pixels no tap reaches on one of their own), then the
/// phases scattered into dx. Every phase's Params are built before anything is enqueued.
///
/// # Safety
/// As [`super::launch_raw`].
pub(crate) unsafe fn launch_raw(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &DeviceProps,
    operands: &ConvOperands,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    let staged = Staged::new(info, operands, device)?;
    let mut scratch = Scratch::of(stream, workspace)?;
    let (base, _) = scratch.at_least(stream, staged.bytes)?;
    let steps = steps(info, &staged, operands.c.is_some(), base)?;
    // SAFETY: the views lie inside the caller's filter, dx and C (checked by `plan`) and the
    // scratch just sized for them.
    unsafe { crate::support::copy4_batch(stream, &steps.gathers)? };
    unsafe { stride_phases::enqueue_phases(info, stream, device, &steps.kernels, &steps.fills)? };
    unsafe { crate::support::copy4_batch(stream, &steps.scatters) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(size: usize, filter: usize, pad: usize, stride: usize) -> Vec<(Axis, usize)> {
        let out = (size + 2 * pad - filter) / stride + 1;
        let problem = Conv2dProblem::new(
            ConvKind::Dgrad,
            [1, size, 1, 8],
            [8, filter, 1],
            (
                crate::model::DType::F16,
                crate::model::DType::F16,
                crate::model::DType::F16,
            ),
        )
        .padding(pad, 0)
        .stride(stride, 1);
        let phases = stride_phases::split(&problem).unwrap();
        phases.iter().map(|ph| (ph.rows, out)).collect()
    }

    /// Each covered pixel `i` of a phase is output pixel `i + skip` of its packed dgrad, which
    /// sums dy over exactly the taps the strided dgrad does (checked by brute force).
    #[test]
    fn windows_compute_each_phase_pixel_from_the_right_taps() {
        for (size, filter, pad, stride) in [
            (10, 3, 0, 2),
            (9, 3, 1, 2),
            (15, 7, 3, 2),
            (11, 5, 2, 3),
            (8, 1, 0, 2),
            (6, 3, 0, 2),
        ] {
            for (ax, out) in axis(size, filter, pad, stride) {
                if ax.taps == 0 {
                    continue;
                }
                let win = window(&ax, out);
                assert!(win.skip + win.covered <= win.extent, "{ax:?} {win:?}");
                for i in 0..ax.extent {
                    let h = ax.offset + i * stride;
                    // The strided dgrad: dy[(h + pad − r) / stride] for taps r that divide.
                    let mut want: Vec<(usize, usize)> = (0..filter)
                        .filter(|&r| {
                            h + pad >= r && (h + pad - r) % stride == 0 && (h + pad - r) / stride < out
                        })
                        .map(|r| ((h + pad - r) / stride, r))
                        .collect();
                    want.sort();
                    if i >= win.covered {
                        assert!(
                            want.is_empty(),
                            "{ax:?} pixel {i} uncovered but reached by {want:?}"
                        );
                        continue;
                    }
                    // The packed dgrad: dy[h' + pad' − t] over the phase's taps r0 + stride·t.
                    let hp = i + win.skip;
                    let mut got: Vec<(usize, usize)> = (0..ax.taps)
                        .filter(|&t| hp + win.pad >= t && hp + win.pad - t < out)
                        .map(|t| (hp + win.pad - t, ax.first_tap + stride * t))
                        .collect();
                    got.sort();
                    assert_eq!(
                        got, want,
                        "size {size} filter {filter} pad {pad} stride {stride}, {ax:?} pixel {i}"
                    );
                }
            }
        }
    }
}
