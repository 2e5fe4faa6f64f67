//! The extra rules of grouped GEMM kernels (`kind: gemm_grouped`) and of CUTLASS 3.x pointer-array
//! GEMM kernels (`batch_mode: array`), on top of the rules of their generation: what CUTLASS's
//! grouped kernels (2.x `GemmGrouped`) and pointer-array kernels (3.x, over a `GroupProblemShape`
//! or an `ArrayProblemShape`) take of everything a GEMM kernel may be.

use super::Finding;
use crate::model::{Api, DType, GemmKernel, KernelSchedule, SplitK, TileScheduler};

/// Every grouped or pointer-array rule broken by `k`, appended to `out`.
pub fn check(k: &GemmKernel, out: &mut Vec<Finding>) {
    let what = if k.is_grouped() {
        "grouped kernels"
    } else {
        "pointer-array kernels"
    };
    for (field, layout) in [
        ("layout_a", k.layout_a),
        ("layout_b", k.layout_b),
        ("layout_c", k.layout_c),
    ] {
        if layout.interleave().is_some() {
            out.push((
                field,
                format!("{layout} is not supported by {what}; allowed: row, column"),
            ));
        }
    }
    if k.fusion.has_buffers() {
        out.push((
            "bias",
            format!(
                "the epilogue of {what} takes no bias, scale vectors, aux matrix or row sums ({} was asked \
                 for); allowed: an activation, or a clamp (CUTLASS's pointer-array epilogues are the linear \
                 combination and elementwise activations)",
                k.fusion.label()
            ),
        ));
    }
    match k.api() {
        Api::Cutlass2x => check_2x(k, out),
        Api::Cutlass3x => check_3x(k, what, out),
    }
}

fn check_2x(k: &GemmKernel, out: &mut Vec<Finding>) {
    if k.split_k != SplitK::None {
        out.push((
            "split_k",
            "grouped kernels do not split K: each group's tiles are spread over the persistent CTAs \
             instead; remove split_k"
                .to_string(),
        ));
    }
}

fn check_3x(k: &GemmKernel, what: &str, out: &mut Vec<Finding>) {
    if !matches!(k.schedule, KernelSchedule::Cooperative | KernelSchedule::Pingpong) {
        out.push((
            "schedule",
            format!(
                "{} is not supported by {what}; allowed: cooperative (tile M a multiple of 128), pingpong \
                 (CUTLASS's pointer-array schedules)",
                k.schedule
            ),
        ));
    }
    if k.tile_scheduler != TileScheduler::Persistent {
        out.push((
            "tile_scheduler",
            format!(
                "{} is not supported by {what}; allowed: persistent (CUTLASS's pointer-array tile \
                 scheduler has no stream-K)",
                k.tile_scheduler
            ),
        ));
    }
    if !matches!(k.element_a, DType::F16 | DType::Bf16 | DType::E4m3 | DType::E5m2) {
        out.push((
            "a",
            format!(
                "{} is not supported by arch 90 {what}; allowed: f16, bf16, e4m3, e5m2 (use arch 80 for \
                 f32/TF32, f64 and s8)",
                k.element_a
            ),
        ));
    }
}
