//! The rules of conv kernels, on top of the rules of their generation (a conv kernel is an
//! implicit GEMM, so tile, warps, instruction, stages, alignment and shared memory follow the GEMM
//! rules of `rules_2x.rs` / `rules_3x.rs`).

use super::{list, Finding};
use crate::model::{
    Api, ConvKind, ConvLayout, DType, EpilogueSchedule, GemmKernel, IteratorAlgorithm, KernelSchedule,
    MathOp, OpClass, Shape3, SplitK, StrideSupport, Swizzle, TileScheduler,
};

/// The identity swizzles, the only ones CUTLASS's conv kernels take.
const SWIZZLES: &[Swizzle] = &[
    Swizzle::Identity1,
    Swizzle::Identity2,
    Swizzle::Identity4,
    Swizzle::Identity8,
];

/// Every conv rule broken by `k` (a conv kernel), appended to `out`.
pub fn check(k: &GemmKernel, out: &mut Vec<Finding>) {
    let Some(kind) = k.conv_kind() else { return };
    if k.api() == Api::Cutlass3x {
        return check_3x(k, kind, out);
    }
    if k.element_a == DType::S8 && kind != ConvKind::Fprop {
        out.push((
            "a",
            format!(
                "s8 convolutions exist for fprop only in CUTLASS 2.x (this is {kind}); allowed for {kind}: \
                 f16, bf16, f32"
            ),
        ));
    }
    if k.element_a == DType::F64 && k.opclass == OpClass::TensorOp {
        out.push((
            "opclass",
            "f64 convolutions are built on SIMT cores here; allowed with a: f64: opclass simt".to_string(),
        ));
    }
    match k.iterator_algorithm {
        IteratorAlgorithm::FixedChannels | IteratorAlgorithm::FewChannels => {
            if kind != ConvKind::Fprop {
                out.push((
                    "iterator_algorithm",
                    format!(
                        "{} exists for fprop only (this is {kind}); allowed for {kind}: analytic, optimized",
                        k.iterator_algorithm
                    ),
                ));
            }
            if k.opclass != OpClass::TensorOp {
                out.push((
                    "iterator_algorithm",
                    format!(
                        "{} needs opclass tensorop; allowed on simt: analytic, optimized",
                        k.iterator_algorithm
                    ),
                ));
            }
        }
        IteratorAlgorithm::FirstLayer => first_layer(k, kind, out),
        IteratorAlgorithm::Analytic | IteratorAlgorithm::Optimized => {}
    }
    if k.conv_layout == ConvLayout::Interleaved32 {
        interleaved(k, kind, out);
    }
    if k.stride_support == StrideSupport::Unity && kind != ConvKind::Dgrad {
        out.push((
            "stride_support",
            format!(
                "unity is for dgrad only (CUTLASS's unity-stride dgrad iterators; fprop and wgrad kernels take \
                 any stride); remove it from this {kind} entry, or use strided"
            ),
        ));
    }
    if !SWIZZLES.contains(&k.swizzle) {
        out.push((
            "swizzle",
            format!(
                "{} is not a conv swizzle; allowed: {} (conv kernels walk their tiles in identity order)",
                k.swizzle,
                list(SWIZZLES)
            ),
        ));
    }
}

/// CUTLASS's interleaved int8 fprop (activation and output NC32HW32, filter C32RSK32): s8 in and
/// out on tensor cores, 128-bit loads of 16 channels, 8-channel output stores, K tiles of whole
/// 32-channel groups, no parallel split-K (its reduction writes packed NPQK).
fn interleaved(k: &GemmKernel, kind: ConvKind, out: &mut Vec<Finding>) {
    let key = "tensor_layout";
    if kind != ConvKind::Fprop {
        out.push((
            key,
            format!("CUTLASS builds interleaved (nc32hw32) convolutions for fprop only (this is {kind}); use nhwc"),
        ));
    }
    if (k.element_a, k.element_b, k.element_c) != (DType::S8, DType::S8, DType::S8)
        || k.opclass != OpClass::TensorOp
    {
        out.push((
            key,
            format!(
                "nc32hw32 convolutions are int8 tensor-op kernels (here a {}, b {}, c {} on {}); allowed: a s8, c s8, \
                 opclass tensorop",
                k.element_a, k.element_b, k.element_c, k.opclass
            ),
        ));
    }
    if !matches!(
        k.iterator_algorithm,
        IteratorAlgorithm::Analytic | IteratorAlgorithm::Optimized
    ) {
        out.push((
            "iterator_algorithm",
            format!(
                "{} does not read interleaved tensors; allowed with tensor_layout nc32hw32: analytic, optimized",
                k.iterator_algorithm
            ),
        ));
    }
    if k.alignment_a != 16 || k.alignment_b != 16 {
        out.push((
            "alignment",
            format!(
                "interleaved convolutions load 16 channels (128 bits) at a time (alignment a {}, b {}); set \
                 alignment: 16",
                k.alignment_a, k.alignment_b
            ),
        ));
    }
    if k.alignment_c != 8 {
        out.push((
            "alignment_c",
            format!(
                "{} is not allowed with an interleaved output; allowed: 8 (CUTLASS's interleaved epilogue stores 64 \
                 bits)",
                k.alignment_c
            ),
        ));
    }
    if k.tile.k % 32 != 0 {
        out.push((
            "tile",
            format!(
                "tile K {} must be a multiple of 32: interleaved kernels read whole 32-channel groups",
                k.tile.k
            ),
        ));
    }
    if k.split_k == SplitK::Parallel {
        out.push((
            "split_k",
            "parallel split-K's reduction writes packed NPQK outputs only; allowed with tensor_layout nc32hw32: \
             serial, none"
                .to_string(),
        ));
    }
}

/// Our first-layer fprop (`cutlass_aot/conv_first_layer.cuh`): one element type throughout, f32
/// accumulation on m16n8k16 tensor-core MMAs, C (the alignment) 2, 4 or 8 channels, 16-byte
/// output vectors, a tile of whole MMA rows, no split-K.
fn first_layer(k: &GemmKernel, kind: ConvKind, out: &mut Vec<Finding>) {
    let name = "first_layer";
    if kind != ConvKind::Fprop {
        out.push((
            "iterator_algorithm",
            format!("{name} exists for fprop only (this is {kind}); allowed for {kind}: analytic, optimized"),
        ));
    }
    if !matches!(k.element_a, DType::F16 | DType::Bf16) || k.element_c != k.element_a {
        out.push((
            "a",
            format!(
                "{name} kernels read and write one 16-bit type (a {}, c {}); allowed: a and c both f16 or both bf16",
                k.element_a, k.element_c
            ),
        ));
    }
    if k.opclass != OpClass::TensorOp || k.element_accumulator != DType::F32 {
        out.push((
            "accumulator",
            format!(
                "{name} kernels accumulate in f32 on tensor cores (here {} on {}); use opclass tensorop, \
                 accumulator f32",
                k.element_accumulator, k.opclass
            ),
        ));
    }
    if ![2, 4, 8].contains(&k.alignment_a) || k.alignment_b != k.alignment_a {
        out.push((
            "alignment",
            format!(
                "{name} kernels read exactly `alignment` channels per pixel (a {}, b {}); allowed: 2, 4, 8 \
                 for both",
                k.alignment_a, k.alignment_b
            ),
        ));
    }
    if k.alignment_c != 8 {
        out.push((
            "alignment_c",
            format!(
                "{name} kernels store 16-byte vectors of 8 output channels (alignment_c {}); set alignment_c: 8",
                k.alignment_c
            ),
        ));
    }
    if k.instruction != Shape3::new(16, 8, 16) || k.tile.k != 16 {
        out.push((
            "tile",
            format!(
                "{name} kernels step K by one m16n8k16 MMA (tile {}, instruction {}); use tile [M, N, 16] and \
                 instruction [16, 8, 16]",
                k.tile, k.instruction
            ),
        ));
    }
    if k.tile.m % 16 != 0 || (k.tile.m / 16) % k.warps.m.max(1) != 0 {
        out.push((
            "tile",
            format!(
                "{name} tiles are rows of 16 output columns split whole over warps.m: tile M {} must be a \
                 multiple of 16·{} = {}",
                k.tile.m,
                k.warps.m,
                16 * k.warps.m
            ),
        ));
    }
    if k.stages > 15 {
        out.push((
            "stages",
            format!(
                "{name} kernels keep at most 15 input patches in flight (stages {})",
                k.stages
            ),
        ));
    }
    if k.split_k != SplitK::Serial {
        out.push((
            "split_k",
            format!(
                "{name} kernels do not split K (split_k {}); remove split_k",
                k.split_k
            ),
        ));
    }
    if k.math != MathOp::MultiplyAdd {
        out.push((
            "math",
            format!(
                "{} is not supported by {name} kernels; allowed: multiply_add",
                k.math
            ),
        ));
    }
}

/// The clusters CUTLASS's generator builds sm90 convolutions with.
const CLUSTERS_3X: &[Shape3] = &[Shape3::new(1, 1, 1), Shape3::new(2, 1, 1), Shape3::new(1, 2, 1)];

/// CUTLASS 4.2's sm90 convolutions: the non-persistent warp-specialized kernel only, f16 and bf16
/// (and TF32 for fprop), an activation as the only fusion.
fn check_3x(k: &GemmKernel, kind: ConvKind, out: &mut Vec<Finding>) {
    let types_ok = match k.element_a {
        DType::F16 | DType::Bf16 => true,
        DType::F32 => kind == ConvKind::Fprop,
        _ => false,
    };
    if !types_ok {
        let allowed = if kind == ConvKind::Fprop {
            "f16, bf16, f32 (TF32)"
        } else {
            "f16, bf16"
        };
        out.push((
            "a",
            format!(
                "{} is not supported for arch 90 {kind}; allowed: {allowed}",
                k.element_a
            ),
        ));
    }
    match k.schedule {
        KernelSchedule::Auto | KernelSchedule::WarpSpecialized => {}
        // Ours (conv_3x_cooperative.hpp): its two consumer warpgroups split the tile's M.
        KernelSchedule::Cooperative if k.tile.m % 128 == 0 => {}
        KernelSchedule::Cooperative => out.push((
            "tile",
            format!(
                "a cooperative conv kernel splits the tile's M over two warpgroups of 64 rows: M = {} must be a \
                 multiple of 128",
                k.tile.m
            ),
        )),
        KernelSchedule::Pingpong => out.push((
            "schedule",
            format!(
                "{} is not supported for convolutions; allowed: auto, warpspecialized (CUTLASS's; with \
                 `tile_scheduler: stream_k` ours, persistent, one consumer warpgroup), cooperative (persistent, two \
                 consumer warpgroups)",
                k.schedule
            ),
        )),
    }
    // Stream-K runs on our persistent kernel, of two consumer warpgroups (cooperative) or one
    // (warpspecialized): which one must be written.
    if k.tile_scheduler == TileScheduler::StreamK && k.schedule == KernelSchedule::Auto {
        out.push((
            "tile_scheduler",
            "stream_k for a convolution needs an explicit schedule: cooperative (two consumer warpgroups, tile M \
             a multiple of 128) or warpspecialized (one consumer warpgroup, tile M a multiple of 64)"
                .to_string(),
        ));
    }
    if !matches!(
        k.epilogue_schedule,
        EpilogueSchedule::Auto | EpilogueSchedule::Tma
    ) {
        out.push((
            "epilogue_schedule",
            format!(
                "{} is not supported for convolutions (their epilogue stores with TMA); allowed: auto, tma",
                k.epilogue_schedule
            ),
        ));
    }
    if !CLUSTERS_3X.contains(&k.cluster) {
        out.push((
            "cluster",
            format!(
                "{} is not supported for convolutions; allowed: {}",
                k.cluster,
                list(CLUSTERS_3X)
            ),
        ));
    }
    if k.math != MathOp::MultiplyAdd {
        out.push((
            "math",
            format!(
                "{} is not supported for arch 90 convolutions; allowed: multiply_add",
                k.math
            ),
        ));
    }
    let f = &k.fusion;
    if f.has_buffers() || f.residual != crate::model::Residual::None {
        out.push((
            "activation",
            "conv kernels fuse an activation only (no bias, scale, aux or residual operands yet)".to_string(),
        ));
    }
}
