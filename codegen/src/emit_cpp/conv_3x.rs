//! CUTLASS 3.x implicit-GEMM conv2d for sm_90a: the C++ of one kernel, for `cutlass_aot/conv_3x.cuh`.
//! `schedule: auto | warpspecialized` is CUTLASS 4.2's own (`cutlass::conv::kernel::ConvUniversal`
//! from the conv collective builder, schedule `KernelImplicitTmaWarpSpecializedSm90`: one consumer
//! warpgroup, not persistent); `schedule: cooperative` is ours (`cutlass_aot/conv_3x_cooperative.hpp`:
//! CUTLASS's conv collective under its persistent cooperative GEMM kernel, two consumer warpgroups),
//! with `tile_scheduler: stream_k` under CUTLASS's stream-K tile scheduler (split-K slices); a
//! stream-K entry of another schedule is the same kernel with one consumer warpgroup (64-row tiles).

use super::gemm_3x::fusion_operation_3x;
use crate::model::{ConvKind, GemmKernel, KernelSchedule, TileScheduler};

pub(super) fn kernel_source(k: &GemmKernel) -> String {
    let kind = k.conv_kind().expect("conv emitter called for a conv kernel");
    let (t, c) = (k.tile, k.cluster);
    // The conv builders take the tile's K mode (and wgrad's N mode, which it walks per filter
    // position) as nested shapes.
    let tile_n = match kind {
        ConvKind::Wgrad => format!("cute::Shape<cute::_{}>", t.n),
        ConvKind::Fprop | ConvKind::Dgrad => format!("cute::_{}", t.n),
    };
    // The output's layout tag: the activation (NHWC) for fprop and dgrad, the filter for wgrad.
    let layout_cd = match kind {
        ConvKind::Wgrad => "cutlass::layout::TensorKCSR",
        ConvKind::Fprop | ConvKind::Dgrad => "cutlass::layout::TensorNHWC",
    };
    let stages = if k.stages == 0 {
        "cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(\n        \
         sizeof(typename CollectiveEpilogue::SharedStorage))>"
            .to_string()
    } else {
        format!("cutlass::conv::collective::StageCount<{}>", k.stages)
    };
    let fusion = fusion_operation_3x(k).map_or(String::new(), |f| format!(",\n    {f}"));
    let op = kind.cutlass_operator();
    let (ea, eb, eacc) = (
        k.element_a.cutlass_type(),
        k.element_b.cutlass_type(),
        k.element_accumulator.cutlass_type(),
    );
    let (align_a, align_b) = (k.alignment_a, k.alignment_b);
    // Ours (persistent): the cooperative schedule (two consumer warpgroups), or a stream-K one of
    // one consumer warpgroup; CUTLASS's ConvUniversal otherwise.
    let ours = k.schedule == KernelSchedule::Cooperative || k.tile_scheduler == TileScheduler::StreamK;
    let (epilogue_schedule, mainloop, kernel) = if ours {
        let (epilogue_schedule, warpgroups) = if k.schedule == KernelSchedule::Cooperative {
            ("cutlass::epilogue::TmaWarpSpecializedCooperative", 2)
        } else {
            ("cutlass::epilogue::TmaWarpSpecialized", 1)
        };
        (
            epilogue_schedule,
            format!(
                "typename cutlass_aot::conv_3x::CooperativeConvMainloop<\n    \
                 {op}, {ea}, {align_a}, {eb}, {align_b}, {eacc}, TileShape, ClusterShape,\n    \
                 {stages}, {warpgroups}>::CollectiveOp"
            ),
            format!(
                "cutlass_aot::conv_3x::ConvCooperative<ProblemShape, CollectiveMainloop, CollectiveEpilogue, {}>",
                k.tile_scheduler.cutlass_type()
            ),
        )
    } else {
        (
            "cutlass::epilogue::TmaWarpSpecialized",
            format!(
                "typename cutlass::conv::collective::CollectiveBuilder<\n    \
                 cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, {op},\n    \
                 {ea}, cutlass::layout::TensorNHWC, {align_a},\n    \
                 {eb}, cutlass::layout::TensorNHWC, {align_b},\n    \
                 {eacc}, TileShape, ClusterShape,\n    \
                 {stages},\n    \
                 cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp"
            ),
            "cutlass::conv::kernel::ConvUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue, void>"
                .to_string(),
        )
    };
    format!(
        "// {origin}\n\
         namespace {name}_types {{\n\
         using TileShape = cute::Shape<cute::_{tm}, {tile_n}, cute::Shape<cute::_{tk}>>;\n\
         using ClusterShape = cute::Shape<cute::_{cm}, cute::_{cn}, cute::_{ck}>;\n\
         using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<\n    \
         cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,\n    \
         cutlass::epilogue::collective::EpilogueTileAuto, {eacc}, {eepi},\n    \
         {ec}, {layout_cd}, {align_c},\n    \
         {ec}, {layout_cd}, {align_c},\n    \
         {epilogue_schedule}{fusion}>::CollectiveOp;\n\
         using CollectiveMainloop = {mainloop};\n\
         using ProblemShape = cutlass::conv::ConvProblemShape<{op}, 2>;\n\
         using Kernel = {kernel};\n\
         }} // namespace {name}_types\n\
         CUTLASS_AOT_CONV_3X({name}, {name}_types::Kernel)\n",
        origin = k.origin,
        name = k.name,
        tm = t.m,
        tk = t.k,
        cm = c.m,
        cn = c.n,
        ck = c.k,
        eepi = k.element_epilogue.cutlass_type(),
        ec = k.element_c.cutlass_type(),
        align_c = k.alignment_c,
    )
}
