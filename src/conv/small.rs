//! The direct fprop of few channels as ways of conv dispatch: a convolution whose filter has few
//! taps × channels (the stems of image models, C = 1-16) may run on the crate's own CUDA-core
//! kernel (`support::conv_small`: a thread per output pixel, 8, 16 or 32 output channels each)
//! instead of an implicit GEMM whose K tile is mostly padding; so may a unit-stride dgrad of few
//! input channels, as the fprop over dy with the filter flipped. Each kernel is described like any
//! other ([`KernelInfo`]: operands, a design whose values give the cost model its time), so the
//! one selection engine ranks it beside CUTLASS's kernels.

use std::ffi::CStr;

use cudarc::driver::CudaStream;

use super::problem::ConvMode;
use super::ways::{key_of, ConvWay};
use super::{Conv2dProblem, ConvOperands};
use crate::error::Error;
use crate::kernel::{built_in_gemm, KernelInfo};
use crate::model::custom::{CustomDesign, DesignValue, Expr};
use crate::model::{
    Api, ConvKind, ConvLayout, ConvOperation, DType, IteratorAlgorithm, Layout, Operation, Shape3,
    StrideSupport,
};
use crate::select::Candidate;
use crate::support::conv_small::{shared_bytes, ConvSmall, MAX_SHARED_BYTES, THREADS};

const NO_EXPR: Expr = Expr { text: "", code: &[] };

/// The cost model's view (`select::cost::direct_seconds`): a block of 256 pixels × `cols` output
/// channels, blocks resident per SM as their registers allow (ptxas: 40, 54 and 80 a thread at 8,
/// 16 and 32 columns), a fixed time, a time per block and per multiply-add of a thread (narrower
/// blocks read shared memory more often per multiply-add), a time per output; fitted
/// (`bench/conv_small/fit.py`) on 290 harness timings (H100, 2026-11-27), RMS log error 0.19. No
/// table times them: calibrated apart (`family`).
macro_rules! design {
    ($cols:literal, $blocks_per_sm:literal, $ps_per_mac:literal) => {
        CustomDesign {
            code: Api::Cutlass2x,
            tile: Shape3::new(THREADS as u32, $cols, 1),
            values: &[
                ("direct_rows", DesignValue::Int(THREADS as i64)),
                ("direct_cols", DesignValue::Int($cols)),
                ("blocks_per_sm", DesignValue::Int($blocks_per_sm)),
                ("ns_fixed", DesignValue::Int(1989)),
                ("ns_per_block", DesignValue::Int(3396)),
                ("ps_per_mac", DesignValue::Int($ps_per_mac)),
                ("fs_per_output", DesignValue::Int(2854)),
                ("mb_per_second", DesignValue::Int(2_000_000)),
                ("family", DesignValue::Word("conv_small")),
            ],
            grid: [NO_EXPR; 3],
            block: [NO_EXPR; 3],
            shared_memory: NO_EXPR,
            requires: &[],
        }
    };
}
static COLS_8: CustomDesign = design!(8, 6, 10259);
static COLS_16: CustomDesign = design!(16, 4, 6722);
static COLS_32: CustomDesign = design!(32, 3, 4075);

macro_rules! kernel {
    ($static:ident, $kind:ident, $kind_name:literal, $name:literal, $design:ident, $t:ident) => {
        #[doc = concat!("The direct ", $kind_name, " `cutlass_aot_conv_small_", $kind_name, "_", $name, "`.")]
        pub static $static: KernelInfo = KernelInfo::built_in(
            concat!("cutlass_aot_conv_small_", $kind_name, "_", $name),
            concat!("conv_small_", $kind_name, "_", $name),
            "built in (cutlass_aot/conv_small.cuh)",
            Operation::Conv2d(ConvOperation {
                kind: ConvKind::$kind,
                gemm: built_in_gemm(
                    DType::$t,
                    (Layout::Row, Layout::Column),
                    DType::$t,
                    DType::F32,
                ),
                layout: ConvLayout::ChannelsLast,
                iterator: IteratorAlgorithm::Analytic,
                stride_support: StrideSupport::Strided,
            }),
            &$design,
            DType::F32,
            concat_c(concat!("cutlass_aot_conv_small_fprop_", $name, "\0")),
        );
    };
}

const fn concat_c(s: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(s.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("an entry name ends in one NUL"),
    }
}

kernel!(F16_8, Fprop, "fprop", "f16_kt8", COLS_8, F16);
kernel!(F16_16, Fprop, "fprop", "f16_kt16", COLS_16, F16);
kernel!(F16_32, Fprop, "fprop", "f16_kt32", COLS_32, F16);
kernel!(BF16_8, Fprop, "fprop", "bf16_kt8", COLS_8, Bf16);
kernel!(BF16_16, Fprop, "fprop", "bf16_kt16", COLS_16, Bf16);
kernel!(BF16_32, Fprop, "fprop", "bf16_kt32", COLS_32, Bf16);
kernel!(F32_8, Fprop, "fprop", "f32_kt8", COLS_8, F32);
kernel!(F32_16, Fprop, "fprop", "f32_kt16", COLS_16, F32);
kernel!(F32_32, Fprop, "fprop", "f32_kt32", COLS_32, F32);
kernel!(DGRAD_F16_8, Dgrad, "dgrad", "f16_kt8", COLS_8, F16);
kernel!(DGRAD_F16_16, Dgrad, "dgrad", "f16_kt16", COLS_16, F16);
kernel!(DGRAD_F16_32, Dgrad, "dgrad", "f16_kt32", COLS_32, F16);
kernel!(DGRAD_BF16_8, Dgrad, "dgrad", "bf16_kt8", COLS_8, Bf16);
kernel!(DGRAD_BF16_16, Dgrad, "dgrad", "bf16_kt16", COLS_16, Bf16);
kernel!(DGRAD_BF16_32, Dgrad, "dgrad", "bf16_kt32", COLS_32, Bf16);
kernel!(DGRAD_F32_8, Dgrad, "dgrad", "f32_kt8", COLS_8, F32);
kernel!(DGRAD_F32_16, Dgrad, "dgrad", "f32_kt16", COLS_16, F32);
kernel!(DGRAD_F32_32, Dgrad, "dgrad", "f32_kt32", COLS_32, F32);

/// Every direct kernel (fprop, and a unit-stride dgrad as the fprop over dy) with the output
/// channels a thread computes.
pub static KERNELS: [(&KernelInfo, usize); 18] = [
    (&F16_8, 8),
    (&F16_16, 16),
    (&F16_32, 32),
    (&BF16_8, 8),
    (&BF16_16, 16),
    (&BF16_32, 32),
    (&F32_8, 8),
    (&F32_16, 16),
    (&F32_32, 32),
    (&DGRAD_F16_8, 8),
    (&DGRAD_F16_16, 16),
    (&DGRAD_F16_32, 32),
    (&DGRAD_BF16_8, 8),
    (&DGRAD_BF16_16, 16),
    (&DGRAD_BF16_32, 32),
    (&DGRAD_F32_8, 8),
    (&DGRAD_F32_16, 16),
    (&DGRAD_F32_32, 32),
];

/// The output channels a thread of `kernel` computes, if it is a direct conv kernel.
pub fn cols_of(kernel: &KernelInfo) -> Option<usize> {
    KERNELS
        .iter()
        .find(|(k, _)| std::ptr::eq(*k, kernel))
        .map(|(_, cols)| *cols)
}

/// Why `kernel` (a direct kernel of `cols` output channels a thread) cannot run `problem`.
fn refusal(kernel: &KernelInfo, cols: usize, problem: &Conv2dProblem) -> Option<String> {
    let element = kernel.gemm().a.element;
    let kind = kernel.operation.conv().map(|c| c.kind);
    let (a, b, c) = problem.elements;
    // The taps each output channel reduces over: r·s·c (fprop), r·s·k (dgrad).
    let taps = problem.r * problem.s * problem.tap_channels().unwrap_or(problem.c);
    let shared = shared_bytes(taps, cols);
    if Some(problem.kind) != kind {
        Some(format!("it computes {kind:?}"))
    } else if problem.kind == ConvKind::Dgrad && problem.stride != [1, 1] {
        Some("its dgrad takes unit stride only".into())
    } else if (a, b, c) != (element, element, element) {
        Some(format!("it takes {element:?} tensors"))
    } else if problem.mode != ConvMode::CrossCorrelation || problem.layout != ConvLayout::ChannelsLast {
        Some("it computes a cross-correlation of channels-last tensors".into())
    } else if problem.split_k_slices > 1 {
        Some("it does not split".into())
    } else if shared > MAX_SHARED_BYTES {
        Some(format!(
            "a block takes {shared} bytes of shared memory (the filter slice, {taps} taps × {cols} f32; at \
             most {MAX_SHARED_BYTES})"
        ))
    } else if problem.compute_capability.is_some_and(|cc| cc < 80) {
        Some("it needs compute capability 8.0".into())
    } else {
        None
    }
}

/// Reduction channels per pixel (fprop's C, dgrad's K) up to which dispatch weighs the direct
/// kernels: their model was fitted on 1-16 channels, and a thread reading hundreds of one pixel's
/// channels runs several times slower than it says.
const MAX_SELECTED_CHANNELS: usize = 64;

/// The direct ways of `problem`: each kernel of its types whose filter slice fits, where the
/// reduction has at most 64 channels per pixel (the range their model was fitted near).
pub fn candidates(problem: &Conv2dProblem) -> Vec<Candidate<ConvWay>> {
    let channels = problem.tap_channels().unwrap_or(problem.c);
    if !crate::kernels::IMAGE_SUPPORT.has_code() || channels > MAX_SELECTED_CHANNELS {
        return Vec::new();
    }
    let key = key_of(problem);
    KERNELS
        .iter()
        .filter(|(kernel, cols)| refusal(kernel, *cols, problem).is_none())
        .filter_map(|(kernel, _)| {
            Some(Candidate {
                kernel,
                split_k: 1,
                way: ConvWay::Direct,
                key,
                work: super::ways::work_of(kernel, problem)?,
                margin: 1.0,
            })
        })
        .collect()
}

/// Launches direct `kernel` on `operands` of `problem` (A, B, C, D in the roles of its kind).
///
/// # Safety
/// As [`super::launch_raw`].
pub unsafe fn launch(
    kernel: &KernelInfo,
    stream: &CudaStream,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
) -> Result<(), Error> {
    let cols = cols_of(kernel).ok_or_else(|| Error::invalid(kernel.name, "not a direct conv kernel"))?;
    if let Some(why) = refusal(kernel, cols, problem) {
        return Err(Error::invalid(
            kernel.name,
            format!("it cannot run this problem: {why}"),
        ));
    }
    let (p, q) = problem
        .output_size()
        .map_err(|m| Error::invalid(kernel.name, m))?;
    let dgrad = problem.kind == ConvKind::Dgrad;
    let signed = |v: usize| v as i64;
    // A unit-stride dgrad is the fprop over dy (extents p, q; k channels) into dx (h, w; c), its
    // window shifted by dilation·(taps − 1) − pad.
    let (extents, pad) = if dgrad {
        let shift = |i: usize, taps: usize| signed(problem.dilation[i] * (taps - 1)) - signed(problem.pad[i]);
        (
            [
                problem.n, p, q, problem.k, problem.c, problem.r, problem.s, problem.h, problem.w,
            ],
            [shift(0, problem.r), shift(1, problem.s)],
        )
    } else {
        (
            [
                problem.n, problem.h, problem.w, problem.c, problem.k, problem.r, problem.s, p, q,
            ],
            problem.pad.map(signed),
        )
    };
    let small = ConvSmall {
        entry: kernel.entry,
        cols,
        x: operands.a.address,
        w: operands.b.address,
        c: operands.c.map_or(0, |c| c.address),
        d: operands.d.address,
        extents,
        pad,
        stride: problem.stride,
        dilation: problem.dilation,
        alpha: operands.alpha as f32,
        beta: operands.beta as f32,
        dgrad,
    };
    // SAFETY: the operands hold the problem's packed tensors, as the caller promised.
    unsafe { small.enqueue(stream) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::cost::kernel_seconds;

    fn fprop(nhwc: [usize; 4], krs: [usize; 3], stride: usize, pad: usize, t: DType) -> Conv2dProblem {
        Conv2dProblem::new(ConvKind::Fprop, nhwc, krs, (t, t, t))
            .padding(pad, pad)
            .stride(stride, stride)
    }

    /// Offered for a channels-last cross-correlation of one type whose filter slice fits, each
    /// width of that type; never for wgrad, a strided dgrad, mixed types, the flipped filter,
    /// split-K or more than 64 reduction channels.
    #[test]
    fn offered_where_the_filter_slice_fits() {
        let names =
            |p: &Conv2dProblem| -> Vec<&str> { candidates(p).iter().map(|c| c.kernel.rust_name).collect() };
        let stem = fprop([2, 224, 224, 3], [64, 7, 7], 2, 3, DType::F16);
        assert_eq!(
            names(&stem),
            [
                "conv_small_fprop_f16_kt8",
                "conv_small_fprop_f16_kt16",
                "conv_small_fprop_f16_kt32"
            ]
        );
        // 5·5·48 taps: 38 KB of filter at 8 columns; wider slices do not fit.
        assert_eq!(
            names(&fprop([1, 8, 8, 48], [4, 5, 5], 1, 2, DType::Bf16)),
            ["conv_small_fprop_bf16_kt8"]
        );
        assert!(names(&fprop([1, 8, 8, 64], [4, 5, 5], 1, 2, DType::F32)).is_empty());
        // More than 64 reduction channels: not weighed, though its filter slice fits.
        assert!(names(&fprop([1, 8, 8, 80], [4, 1, 1], 1, 0, DType::F16)).is_empty());
        // A dgrad at unit stride only, its taps r·s·k.
        let mut dgrad = stem;
        dgrad.kind = ConvKind::Dgrad;
        let mut unit = fprop([2, 30, 30, 3], [16, 3, 3], 1, 1, DType::F16);
        unit.kind = ConvKind::Dgrad;
        assert_eq!(
            names(&unit),
            [
                "conv_small_dgrad_f16_kt8",
                "conv_small_dgrad_f16_kt16",
                "conv_small_dgrad_f16_kt32"
            ]
        );
        let mut wgrad = unit;
        wgrad.kind = ConvKind::Wgrad;
        let mut mixed = stem;
        mixed.elements.2 = DType::F32;
        let mut flipped = stem;
        flipped.mode = ConvMode::Convolution;
        let mut split = stem;
        split.split_k_slices = 2;
        for p in [dgrad, wgrad, mixed, flipped, split] {
            assert!(names(&p).is_empty(), "{p:?}");
        }
    }

    /// The model as bench/conv_small/fit.py computes it (the values it prints for these problems).
    #[test]
    fn the_model_is_the_fitted_one() {
        let cases = [
            (
                &F16_8,
                fprop([16, 224, 224, 3], [32, 3, 3], 2, 1, DType::F16),
                42.767,
            ),
            (
                &F16_32,
                fprop([16, 224, 224, 3], [32, 3, 3], 2, 1, DType::F16),
                34.152,
            ),
            (&F16_8, fprop([2, 5, 5, 2], [1, 5, 5], 2, 0, DType::F16), 9.489),
            (
                &F16_16,
                fprop([45, 16, 16, 16], [857, 3, 3], 1, 1, DType::F16),
                124.583,
            ),
        ];
        for (kernel, problem, expected) in cases {
            let way = candidates(&problem)
                .into_iter()
                .find(|c| std::ptr::eq(c.kernel, kernel))
                .expect("offered");
            let us = kernel_seconds(kernel, &way.work, 1, 132) * 1e6;
            assert!(
                (us / expected - 1.0).abs() < 1e-3,
                "{}: {us} vs {expected}",
                kernel.rust_name
            );
        }
    }
}
