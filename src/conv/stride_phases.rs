//! Strided dgrad on CUTLASS 3.x kernels, as unit-stride dgrads over the stride phases of dx.
//!
//! CUTLASS 4.2 has no strided dgrad for sm90: its dgrad mainloop is correct at unit stride only.
//! A stride-`s` dgrad splits exactly into `s_h·s_w` unit-stride ones. Along one axis,
//! `dx[h] = Σ_r dy[(h + pad − r) / s] · w[r]` over the taps `r` with `h + pad − r ≡ 0 (mod s)`.
//! The pixels `h = a, a + s, a + 2s, …` of phase `a` are reached by the taps
//! `r = r0 + s·t` with `r0 = (a + pad) mod s`, and
//! `dx[a + s·i] = Σ_t dy[i + off − t] · w[r0 + s·t]` with `off = ⌊(a + pad) / s⌋`.
//! That is a unit-stride dgrad:
//! - its output is the phase's pixels of dx (a strided view: the kernel writes every s-th pixel);
//! - its filter is the taps `r0, r0 + s, …` (gathered into scratch memory; where they are the
//!   whole filter, as for a 1×1 filter, the caller's filter as it lies);
//! - its padding is `off` before and `P − H_a − off + taps − 1` after, so that its output extent is
//!   dy's P.
//!
//! No multiply is wasted: each tap serves exactly one phase. A phase no tap reaches (a 1×1 filter at
//! stride 2 reaches one phase of four) is `beta·C`, or zeros. The phases are independent (they
//! read the same dy and write disjoint pixels of dx) and run concurrently on side streams, fenced
//! to the caller's stream, the tapless phases' fills on a stream of their own (H100, 2026-11-24:
//! a 1×1 stride-2 dgrad of 14² × 1024 → 2048 channels went from 81 to 65 µs, 0.83x to 1.0x cuDNN,
//! once its fills overlapped its kernel and its filter was no longer copied).
//!
//! What it needs:
//! - **Unit dilation.**
//! - **A plain linear-combination epilogue**: a tapless phase gets no activation.
//! - **A phase padding that is not negative.** It is negative only where the last pixels of a
//!   phase lie past every filter window (then no kernel tile would cover them); such problems keep
//!   to the arch 80 strided kernels.

use std::ffi::c_void;

use cudarc::driver::CudaStream;

use super::{Conv2dProblem, ConvMode, ConvOperands};
use crate::abi;
use crate::device::DeviceProps;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::{ConvKind, DType};
use crate::params::Prepared;
use crate::support::{Copy4d, Scale4d, View4};
use crate::workspace::{Scratch, Workspace};

/// One axis (rows or columns) of a stride phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axis {
    /// The phase's first pixel of dx, `a`.
    pub offset: usize,
    /// Its pixels `a, a + s, … < H`.
    pub extent: usize,
    /// The first filter tap that reaches it, `r0`.
    pub first_tap: usize,
    /// Taps `r0, r0 + s, … < R` (0: none reaches this phase).
    pub taps: usize,
    /// The unit-stride dgrad's padding before the first pixel, `off`.
    pub pad: usize,
    /// And after the last: negative where the last pixels lie past every filter window.
    pub pad_end: isize,
}

/// One stride phase of dx: the pixels `(a + s_h·i, b + s_w·j)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    pub rows: Axis,
    pub cols: Axis,
}

impl Phase {
    /// Whether any filter tap reaches it (else it is `beta·C`).
    pub fn has_taps(&self) -> bool {
        self.rows.taps > 0 && self.cols.taps > 0
    }

    /// Its unit-stride dgrad for the support rules: output channels, taps and element types, which
    /// are what decide alignment and split-K. The padding here only keeps the rules' output
    /// extent non-empty: the true padding is asymmetric and goes to the kernel directly.
    pub fn rules_problem(&self, problem: &Conv2dProblem) -> Conv2dProblem {
        Conv2dProblem {
            h: self.rows.extent,
            w: self.cols.extent,
            r: self.rows.taps,
            s: self.cols.taps,
            pad: [self.rows.taps, self.cols.taps],
            stride: [1, 1],
            addresses: None,
            ..*problem
        }
    }
}

/// The phases of one axis: `size` pixels of dx, `out` of dy, a `filter`-tap filter.
fn axis_phases(size: usize, out: usize, filter: usize, pad: usize, stride: usize) -> Vec<Axis> {
    (0..stride.min(size))
        .map(|a| {
            let extent = (size - a).div_ceil(stride);
            let first_tap = (a + pad) % stride;
            let taps = if first_tap < filter {
                (filter - 1 - first_tap) / stride + 1
            } else {
                0
            };
            let off = (a + pad) / stride;
            Axis {
                offset: a,
                extent,
                first_tap,
                taps,
                pad: off,
                pad_end: out as isize - extent as isize - off as isize + taps as isize - 1,
            }
        })
        .collect()
}

/// The stride phases of a strided dgrad of unit dilation, some of whose last pixels may lie past
/// every filter window (a `pad_end` below 0; [`phases`] refuses those).
pub fn split(problem: &Conv2dProblem) -> Result<Vec<Phase>, String> {
    if problem.kind != ConvKind::Dgrad {
        return Err(format!(
            "stride phases are a dgrad decomposition, not {}",
            problem.kind
        ));
    }
    if problem.dilation != [1, 1] {
        return Err(format!(
            "dilation {:?} at stride {:?}: a unit-stride dgrad kernel runs a strided dgrad as stride phases, \
             which need dilation 1; use an arch 80 strided dgrad kernel",
            problem.dilation, problem.stride
        ));
    }
    let (p, q) = problem.output_size()?;
    let rows = axis_phases(problem.h, p, problem.r, problem.pad[0], problem.stride[0]);
    let cols = axis_phases(problem.w, q, problem.s, problem.pad[1], problem.stride[1]);
    Ok(rows
        .iter()
        .flat_map(|&rows| cols.iter().map(move |&cols| Phase { rows, cols }))
        .collect())
}

/// The stride phases of a strided dgrad, or why it has none a 3.x kernel can run.
pub fn phases(problem: &Conv2dProblem) -> Result<Vec<Phase>, String> {
    let phases = split(problem)?;
    if let Some(bad) = phases
        .iter()
        .find(|ph| ph.has_taps() && (ph.rows.pad_end < 0 || ph.cols.pad_end < 0))
    {
        let (axis, what) = if bad.rows.pad_end < 0 {
            (bad.rows, "rows")
        } else {
            (bad.cols, "columns")
        };
        return Err(format!(
            "stride {:?}: the last {} of dx's {what} {} + {}·i lie past every filter window, which a stride \
             phase cannot express; use an arch 80 strided dgrad kernel",
            problem.stride,
            -axis.pad_end,
            axis.offset,
            if what == "rows" {
                problem.stride[0]
            } else {
                problem.stride[1]
            },
        ));
    }
    Ok(phases)
}

/// Whether kernel `info` runs a convolution of `geometry` as stride phases: a strided dgrad on a
/// CUTLASS 3.x kernel.
pub fn applies(info: &KernelInfo, geometry: &super::ConvGeometry) -> bool {
    info.operation.conv().is_some_and(|c| c.kind == ConvKind::Dgrad)
        && info.api() == crate::model::Api::Cutlass3x
        && geometry.stride != [1, 1]
}

/// The scratch memory of a phased launch: each phase's sub-filter (256-byte aligned, after the
/// kernels' own workspaces).
pub(super) struct Layout {
    /// Where each phase's filter is.
    pub filters: Vec<PhaseFilter>,
    pub bytes: usize,
}

/// Where a phase's filter comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PhaseFilter {
    /// No tap reaches the phase: no kernel runs.
    None,
    /// Every tap reaches it (a 1×1 filter at stride 2): the caller's filter as it lies.
    Whole,
    /// Its taps gathered into scratch memory at this byte offset.
    Gathered(usize),
}

pub(super) fn layout(phases: &[Phase], problem: &Conv2dProblem, element: DType) -> Layout {
    let bytes_per = element.bits() as usize / 8;
    let mut at = 0usize;
    let filters = phases
        .iter()
        .map(|ph| {
            if !ph.has_taps() {
                PhaseFilter::None
            } else if (ph.rows.taps, ph.cols.taps) == (problem.r, problem.s) {
                PhaseFilter::Whole
            } else {
                let here = at;
                at += (problem.k * ph.rows.taps * ph.cols.taps * problem.c * bytes_per).next_multiple_of(256);
                PhaseFilter::Gathered(here)
            }
        })
        .collect();
    Layout { filters, bytes: at }
}

/// The ABI arguments of one phase's unit-stride dgrad: `full` are the whole problem's (checked by
/// [`super::plan`]), `filter` the phase's gathered sub-filter, `cd_bytes` the size of an element
/// of C and D.
fn phase_args(
    full: &abi::cutlass_aot_conv2d_args,
    problem: &Conv2dProblem,
    ph: &Phase,
    filter: u64,
    cd_bytes: usize,
) -> abi::cutlass_aot_conv2d_args {
    let (w, c) = (problem.w as i64, problem.c as i64);
    let h = problem.h as i64;
    let first = (ph.rows.offset as i64 * w + ph.cols.offset as i64) * c * cd_bytes as i64;
    abi::cutlass_aot_conv2d_args {
        h: ph.rows.extent as i32,
        w: ph.cols.extent as i32,
        r: ph.rows.taps as i32,
        s: ph.cols.taps as i32,
        pad_h: ph.rows.pad as i32,
        pad_w: ph.cols.pad as i32,
        pad_h_end: ph.rows.pad_end as i32,
        pad_w_end: ph.cols.pad_end as i32,
        stride_h: 1,
        stride_w: 1,
        mode: abi::cutlass_aot_conv_mode::CUTLASS_AOT_CONV_CROSS_CORRELATION as i32,
        ptr_b: filter as *const c_void,
        ptr_c: (full.ptr_c as i64 + first) as *const c_void,
        ptr_d: (full.ptr_d as i64 + first) as *mut c_void,
        // dx's pixels of this phase: every stride-th column and row.
        cd_pixel_strides: [
            problem.stride[1] as i64 * c,
            problem.stride[0] as i64 * w * c,
            h * w * c,
        ],
        ..*full
    }
}

/// The 4-D view of `filter`'s taps of phase `ph` (the flipped filter's in convolution mode), and
/// the packed view of its copy at `to`.
pub(super) fn filter_views(
    problem: &Conv2dProblem,
    ph: &Phase,
    from: u64,
    to: u64,
    element_bytes: usize,
) -> (View4, View4) {
    let (r, s, c) = (problem.r as i64, problem.s as i64, problem.c as i64);
    let (sh, sw) = (problem.stride[0] as i64, problem.stride[1] as i64);
    let (r0, s0) = (ph.rows.first_tap as i64, ph.cols.first_tap as i64);
    // Convolution mode applies w[R−1−r, S−1−s]: walk the filter backwards.
    let (first, row_step, col_step) = match problem.mode {
        ConvMode::CrossCorrelation => ((r0 * s + s0) * c, sh * s * c, sw * c),
        ConvMode::Convolution => (((r - 1 - r0) * s + (s - 1 - s0)) * c, -sh * s * c, -sw * c),
    };
    let src = View4 {
        base: (from as i64 + first * element_bytes as i64) as u64,
        strides: [r * s * c, row_step, col_step, 1],
    };
    let (tr, ts) = (ph.rows.taps as i64, ph.cols.taps as i64);
    let dst = View4 {
        base: to,
        strides: [tr * ts * c, ts * c, c, 1],
    };
    (src, dst)
}

/// Bytes of scratch memory a phased launch of `info` needs: a kernel workspace per phase (the
/// largest any phase asks for; the phases run concurrently) and the sub-filters.
pub(crate) fn workspace_bytes(
    info: &'static KernelInfo,
    operands: &ConvOperands,
    device: &DeviceProps,
) -> Result<usize, Error> {
    Ok(Phased::new(info, operands, device)?.bytes())
}

/// A strided dgrad checked against `info` (the whole problem's ABI arguments, by [`super::plan`])
/// and split into stride phases, with the scratch memory they need.
struct Phased {
    full: abi::cutlass_aot_conv2d_args,
    problem: Conv2dProblem,
    phases: Vec<Phase>,
    layout: Layout,
    /// The largest workspace any phase's kernel asks for; each phase gets one (they run
    /// concurrently).
    kernel_bytes: usize,
}

impl Phased {
    fn new(info: &'static KernelInfo, operands: &ConvOperands, device: &DeviceProps) -> Result<Self, Error> {
        let full = super::plan(info, operands, device)?;
        let problem = super::problem_of(info, operands)?;
        let phases = phases(&problem).map_err(|m| Error::invalid(info.name, m))?;
        let layout = layout(&phases, &problem, info.gemm().b.element);
        let kernel_bytes = kernel_workspace(info, &full, &problem, &phases)?;
        Ok(Phased {
            full,
            problem,
            phases,
            layout,
            kernel_bytes,
        })
    }

    /// The kernels' workspaces, one per phase with taps, ahead of the sub-filters.
    fn workspaces(&self) -> usize {
        self.kernel_bytes * self.phases.iter().filter(|ph| ph.has_taps()).count()
    }

    fn bytes(&self) -> usize {
        self.workspaces() + self.layout.bytes
    }
}

/// The largest workspace any phase's kernel asks for (256-byte multiple).
fn kernel_workspace(
    info: &'static KernelInfo,
    full: &abi::cutlass_aot_conv2d_args,
    problem: &Conv2dProblem,
    phases: &[Phase],
) -> Result<usize, Error> {
    // Workspace sizes depend on extents and tiles, not on addresses: a stand-in filter address.
    const STAND_IN: u64 = 1 << 40;
    let cd_bytes = info.gemm().c.element.bits() as usize / 8;
    let mut most = 0usize;
    for ph in phases.iter().filter(|ph| ph.has_taps()) {
        let mut args = phase_args(full, problem, ph, STAND_IN, cd_bytes);
        args.workspace = std::ptr::null_mut();
        args.workspace_capacity = 0;
        args.encode_tiled = Some(crate::gemm::no_tensor_map);
        args.encode_im2col = Some(crate::tma::no_im2col_map);
        if let Err(bytes) = info.prepare_conv_status(&args)? {
            most = most.max(bytes as usize);
        }
    }
    Ok(most.next_multiple_of(256))
}

/// Launches the strided dgrad `operands` on 3.x kernel `info` as its stride phases: the
/// sub-filters gathered into scratch memory, then one unit-stride dgrad per phase (or `beta·C`
/// where no tap reaches it), the phases concurrently on side streams fenced to `stream` before and
/// after. Every phase's Params are built before anything is enqueued.
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
    let phased = Phased::new(info, operands, device)?;
    let (workspaces, total) = (phased.workspaces(), phased.bytes());
    let Phased {
        mut full,
        problem,
        phases,
        layout,
        kernel_bytes,
    } = phased;
    full.encode_tiled = crate::tma::encode_tiled(info.name)?;
    full.encode_im2col = crate::tma::encode_im2col(info.name)?;
    let element_bytes = info.gemm().b.element.bits() as usize / 8;
    let cd_bytes = info.gemm().c.element.bits() as usize / 8;
    let mut scratch = Scratch::of(stream, workspace)?;
    let (base, _) = scratch.at_least(stream, total)?;
    let filters_at = base + workspaces as u64;

    // Params of every phase first: an error leaves nothing enqueued.
    let c_given = operands.c.is_some();
    let mut kernels: Vec<(Prepared, u64)> = Vec::new();
    let mut gathers: Vec<Copy4d> = Vec::new();
    let mut fills: Vec<Scale4d> = Vec::new();
    for (ph, &at) in phases.iter().zip(&layout.filters) {
        if at == PhaseFilter::None {
            // No tap reaches these pixels: D = beta·C there (zeros without C).
            let dst = output_view(&problem, ph, full.ptr_d as u64, cd_bytes);
            let src = output_view(&problem, ph, full.ptr_c as u64, cd_bytes);
            fills.push(Scale4d {
                element: info.gemm().c.element,
                src,
                dst,
                extent: [problem.n, ph.rows.extent, ph.cols.extent, problem.c],
                beta: if c_given { full.beta } else { 0.0 },
            });
            continue;
        }
        let filter = match at {
            PhaseFilter::Gathered(offset) => filters_at + offset as u64,
            _ => full.ptr_b as u64,
        };
        let own_workspace = base + (kernel_bytes * kernels.len()) as u64;
        let mut args = phase_args(&full, &problem, ph, filter, cd_bytes);
        args.workspace = own_workspace as *mut c_void;
        args.workspace_capacity = kernel_bytes as u64;
        let prepared = info
            .prepare_conv_status(&args)?
            .map_err(|needed| Error::AbiMismatch {
                kernel: info.name,
                message: format!(
                    "a stride phase asked for {needed} bytes of workspace after saying {kernel_bytes}"
                ),
            })?;
        if at != PhaseFilter::Whole {
            let (src, dst) = filter_views(&problem, ph, full.ptr_b as u64, filter, element_bytes);
            gathers.push(Copy4d::new(
                element_bytes,
                src,
                dst,
                [problem.k, ph.rows.taps, ph.cols.taps, problem.c],
            ));
        }
        kernels.push((prepared, own_workspace));
    }
    // SAFETY: the views lie inside the caller's filter, dx and C (checked by `plan`) and the
    // scratch just sized for them.
    unsafe { crate::support::copy4_batch(stream, &gathers)? };
    unsafe { enqueue_phases(info, stream, device, &kernels, &fills) }
}

/// Enqueues the phases' `kernels` (Params and workspace address each) and the `fills` of pixels
/// no tap reaches. The phases read the same dy and write disjoint pixels of dx, and the fills
/// write others: side streams run them all concurrently (the fills on a stream of their own), so
/// that one phase's last wave overlaps the next one's first. The caller's stream waits for all of
/// them before anything it enqueues later.
///
/// # Safety
/// As [`super::launch_raw`]; the Params' addresses must stay valid until the kernels complete.
pub(super) unsafe fn enqueue_phases(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &DeviceProps,
    kernels: &[(Prepared, u64)],
    fills: &[Scale4d],
) -> Result<(), Error> {
    let fill_stream = kernels.len();
    let fork = crate::side_streams::fork(stream, kernels.len() + usize::from(!fills.is_empty()))?;
    let enqueued = kernels
        .iter()
        .enumerate()
        .try_for_each(|(i, (prepared, own_workspace))| unsafe {
            crate::launch::enqueue_prepared_on(
                info,
                info.entry,
                stream,
                fork.stream(i),
                device,
                prepared,
                *own_workspace,
            )
        })
        .and_then(|()| {
            let on = fork.stream(fill_stream);
            fills
                .iter()
                .try_for_each(|fill| unsafe { fill.enqueue_on(stream, on) })
        });
    // Joined even after an error: whatever was enqueued stays ordered before the caller's next work.
    let joined = fork.join();
    enqueued.and(joined)
}

/// dx's pixels of phase `ph` at `d` as a 4-D view (images, rows, columns, channels).
pub(super) fn output_view(problem: &Conv2dProblem, ph: &Phase, d: u64, element_bytes: usize) -> View4 {
    let (h, w, c) = (problem.h as i64, problem.w as i64, problem.c as i64);
    let first = (ph.rows.offset as i64 * w + ph.cols.offset as i64) * c;
    View4 {
        base: d + (first * element_bytes as i64) as u64,
        strides: [
            h * w * c,
            problem.stride[0] as i64 * w * c,
            problem.stride[1] as i64 * c,
            1,
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dgrad(h: usize, r: usize, pad: usize, stride: usize) -> Conv2dProblem {
        Conv2dProblem::new(
            ConvKind::Dgrad,
            [2, h, h, 8],
            [8, r, r],
            (DType::F16, DType::F16, DType::F16),
        )
        .padding(pad, pad)
        .stride(stride, stride)
    }

    /// Every (pixel, tap) pair of the strided dgrad with a dy row in range appears in exactly one
    /// phase, at the dy row the phase's unit-stride formula gives.
    #[test]
    fn phases_cover_every_tap_once() {
        for (h, r, pad, stride) in [
            (56, 3, 1, 2),
            (17, 3, 1, 2),
            (48, 5, 2, 2),
            (56, 1, 0, 2),
            (20, 7, 3, 3),
            (9, 2, 0, 2),
        ] {
            let problem = dgrad(h, r, pad, stride);
            let (p, _) = problem.output_size().unwrap();
            let axes = axis_phases(h, p, r, pad, stride);
            let mut seen = std::collections::HashSet::new();
            for ax in &axes {
                for i in 0..ax.extent {
                    for t in 0..ax.taps {
                        let x = ax.offset + stride * i;
                        let tap = ax.first_tap + stride * t;
                        let y = i as isize + ax.pad as isize - t as isize;
                        // The strided definition: x + pad − tap = stride·y.
                        assert_eq!(x as isize + pad as isize - tap as isize, stride as isize * y);
                        if (0..p as isize).contains(&y) {
                            assert!(seen.insert((x, tap)));
                        }
                    }
                    // The unit-stride problem's output extent is dy's.
                    if ax.taps > 0 {
                        assert_eq!(
                            ax.extent as isize + ax.pad as isize + ax.pad_end - ax.taps as isize + 1,
                            p as isize
                        );
                    }
                }
            }
            let expected = (0..h)
                .flat_map(|x| (0..r).map(move |tap| (x, tap)))
                .filter(|&(x, tap)| {
                    let num = x as isize + pad as isize - tap as isize;
                    num >= 0 && num % stride as isize == 0 && num / (stride as isize) < p as isize
                })
                .count();
            assert_eq!(seen.len(), expected, "h {h} r {r} pad {pad} stride {stride}");
        }
    }

    #[test]
    fn resnet_downsample_phases() {
        // 3x3, stride 2, padding 1 at 56: taps 1, 2 per axis; no negative padding.
        let ph = phases(&dgrad(56, 3, 1, 2)).unwrap();
        assert_eq!(ph.len(), 4);
        let taps: Vec<(usize, usize)> = ph.iter().map(|p| (p.rows.taps, p.cols.taps)).collect();
        assert_eq!(taps, vec![(1, 1), (1, 2), (2, 1), (2, 2)]);
        assert!(ph.iter().all(|p| p.rows.pad_end >= 0 && p.cols.pad_end >= 0));
        // 1x1, stride 2: one phase of four has a tap.
        let ph = phases(&dgrad(56, 1, 0, 2)).unwrap();
        assert_eq!(ph.iter().filter(|p| p.has_taps()).count(), 1);
    }

    /// A phase's C and D start at its first pixel of dx, counted in C/D's elements (an f32 dx under
    /// f16 operands), and step over the other phases' pixels.
    #[test]
    fn phase_views_address_dx_in_its_own_elements() {
        let problem = dgrad(10, 3, 1, 2);
        let ph = phases(&problem).unwrap()[3];
        assert_eq!((ph.rows.offset, ph.cols.offset), (1, 1));
        let full = abi::cutlass_aot_conv2d_args {
            ptr_c: 0x10000 as *const c_void,
            ptr_d: 0x20000 as *mut c_void,
            ..Default::default()
        };
        let args = phase_args(&full, &problem, &ph, 0x30000, 4);
        let first = ((10 + 1) * 8 * 4) as usize;
        assert_eq!(args.ptr_d as usize, 0x20000 + first);
        assert_eq!(args.ptr_c as usize, 0x10000 + first);
        assert_eq!(args.ptr_b as usize, 0x30000);
        assert_eq!(args.cd_pixel_strides, [2 * 8, 2 * 10 * 8, 10 * 10 * 8]);
        assert_eq!((args.stride_h, args.r, args.pad_h, args.pad_h_end), (1, 2, 1, 0));
        let view = output_view(&problem, &ph, 0x20000, 4);
        assert_eq!(view.base as usize, 0x20000 + first);
    }

    #[test]
    fn refusals_say_why() {
        // Dilation.
        let e = phases(&dgrad(56, 3, 1, 2).dilation(2, 2)).unwrap_err();
        assert!(e.contains("dilation"), "{e}");
        // 6 rows, 3 taps, stride 2, no padding: dx's row 5 lies past every window.
        let e = phases(&dgrad(6, 3, 0, 2)).unwrap_err();
        assert!(e.contains("past every filter window"), "{e}");
    }
}
