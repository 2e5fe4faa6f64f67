//! CUTLASS 2.x grouped GEMM (`cutlass::gemm::kernel::DefaultGemmGrouped`): the C++ of one kernel,
//! for `cutlass_aot/grouped_2x.cuh`. Its scheduling mode (the problem visitor on the device, or a
//! schedule precomputed on the host) is a template parameter, so each mode is its own kernel.

use super::gemm_2x::thread_epilogue_2x;
use super::shape;
use crate::model::{GemmKernel, GroupSchedule};

pub(super) fn kernel_source(k: &GemmKernel) -> String {
    let schedule = match k.group_schedule {
        GroupSchedule::Device => "kDeviceOnly",
        GroupSchedule::Host => "kHostPrecompute",
    };
    format!(
        "// {origin}\n\
         namespace {name}_types {{\n\
         using Kernel = cutlass::gemm::kernel::DefaultGemmGrouped<\n    \
         {ea}, {la}, cutlass::ComplexTransform::kNone, {align_a},\n    \
         {eb}, {lb}, cutlass::ComplexTransform::kNone, {align_b},\n    \
         {ec}, {lc},\n    \
         {eacc}, {opclass}, cutlass::arch::Sm80,\n    \
         {tile},\n    \
         {warp},\n    \
         {inst},\n    \
         {epilogue},\n    \
         // The grouped kernel walks its own tile order; the swizzle is unused.\n    \
         cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>,\n    \
         {stages}, cutlass::gemm::kernel::GroupScheduleMode::{schedule}, {math}>::GemmKernel;\n\
         }} // namespace {name}_types\n\
         CUTLASS_AOT_GROUPED_2X({name}, {name}_types::Kernel)\n",
        origin = k.origin,
        name = k.name,
        ea = k.element_a.cutlass_type(),
        la = k.layout_a.cutlass_type(),
        align_a = k.alignment_a,
        eb = k.element_b.cutlass_type(),
        lb = k.layout_b.cutlass_type(),
        align_b = k.alignment_b,
        ec = k.element_c.cutlass_type(),
        lc = k.layout_c.cutlass_type(),
        eacc = k.element_accumulator.cutlass_type(),
        opclass = k.opclass.cutlass_type(),
        tile = shape("GemmShape", k.tile),
        warp = shape("GemmShape", k.warp_tile()),
        inst = shape("GemmShape", k.instruction),
        epilogue = thread_epilogue_2x(k, k.alignment_c),
        stages = k.stages,
        math = k.math.cutlass_type(),
    )
}
