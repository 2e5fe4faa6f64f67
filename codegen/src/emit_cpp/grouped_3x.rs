//! CUTLASS 3.x pointer-array kernels (sm_90a warp-specialized): grouped GEMM over a
//! `GroupProblemShape` and the pointer-array batched GEMM over an `ArrayProblemShape` — the C++ of
//! one kernel, for `cutlass_aot/grouped_3x.cuh`. A grouped kernel takes per-group strides through
//! device arrays, so its builders take pointer layouts (`RowMajor *`); an array kernel has one
//! shape and stride for every batch.

use super::{cute_shape, operand_type_3x, stage_count_3x};
use crate::model::{Activation, Epilogue, EpilogueSchedule, GemmKernel, KernelSchedule};

/// The fusion operation: the plain linear combination, or it followed by an elementwise
/// activation (a clamp to D's range for `linear_combination_clamp`) — what CUTLASS's pointer-array
/// epilogues accept.
fn fusion_operation(k: &GemmKernel) -> String {
    let (ed, eepi) = (k.element_c.cutlass_type(), k.element_epilogue.cutlass_type());
    let fusion = "cutlass::epilogue::fusion";
    let activation = if k.epilogue == Epilogue::LinearCombinationClamp {
        Some("cutlass::epilogue::thread::Clamp")
    } else if k.fusion.activation != Activation::Identity {
        Some(k.fusion.activation.cutlass_template())
    } else {
        None
    };
    match activation {
        Some(act) => format!("{fusion}::LinCombEltAct<{act}, {ed}, {eepi}, {ed}, {eepi}>"),
        None => format!("{fusion}::LinearCombination<{ed}, {eepi}, {ed}, {eepi}>"),
    }
}

/// A grouped kernel.
pub(super) fn kernel_source(k: &GemmKernel) -> String {
    source(
        k,
        " *",
        "cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>",
        "CUTLASS_AOT_GROUPED_3X",
    )
}

/// A pointer-array batched GEMM kernel.
pub(super) fn array_kernel_source(k: &GemmKernel) -> String {
    source(
        k,
        "",
        "cutlass::gemm::ArrayProblemShape<cute::Shape<int, int, int, int>>",
        "CUTLASS_AOT_GEMM_3X_ARRAY",
    )
}

fn source(k: &GemmKernel, pointer: &str, problem_shape: &str, entry_macro: &str) -> String {
    let stages = stage_count_3x(k.stages);
    // Validation resolved `auto` to one of the two persistent schedules.
    let cooperative = k.schedule != KernelSchedule::Pingpong;
    let (schedule, epilogue_schedule) = match (cooperative, k.epilogue_schedule) {
        (_, EpilogueSchedule::NoSmem) => (
            if cooperative {
                "cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative"
            } else {
                "cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong"
            },
            "cutlass::epilogue::PtrArrayNoSmemWarpSpecialized",
        ),
        (true, _) => (
            "cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative",
            "cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative",
        ),
        (false, _) => (
            "cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong",
            "cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong",
        ),
    };
    format!(
        "// {origin}\n\
         namespace {name}_types {{\n\
         using TileShape = {tile};\n\
         using ClusterShape = {cluster};\n\
         using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<\n    \
         cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,\n    \
         cutlass::epilogue::collective::EpilogueTileAuto, {eacc}, {eepi},\n    \
         {ec}, {lc}{pointer}, {align_c},\n    \
         {ec}, {lc}{pointer}, {align_c},\n    \
         {epilogue_schedule},\n    \
         {fusion}>::CollectiveOp;\n\
         using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<\n    \
         cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,\n    \
         {ea}, {la}{pointer}, {align_a},\n    \
         {eb}, {lb}{pointer}, {align_b},\n    \
         {eacc}, TileShape, ClusterShape,\n    \
         {stages},\n    \
         {schedule}>::CollectiveOp;\n\
         using Kernel = cutlass::gemm::kernel::GemmUniversal<\n    \
         {problem_shape}, CollectiveMainloop, CollectiveEpilogue>;\n\
         }} // namespace {name}_types\n\
         {entry_macro}({name}, {name}_types::Kernel)\n",
        origin = k.origin,
        name = k.name,
        tile = cute_shape(k.tile),
        cluster = cute_shape(k.cluster),
        ea = operand_type_3x(k.element_a),
        la = k.layout_a.cutlass_type(),
        eb = operand_type_3x(k.element_b),
        lb = k.layout_b.cutlass_type(),
        ec = k.element_c.cutlass_type(),
        lc = k.layout_c.cutlass_type(),
        eacc = k.element_accumulator.cutlass_type(),
        eepi = k.element_epilogue.cutlass_type(),
        align_a = k.alignment_a,
        align_b = k.alignment_b,
        align_c = k.alignment_c,
        fusion = fusion_operation(k),
    )
}
