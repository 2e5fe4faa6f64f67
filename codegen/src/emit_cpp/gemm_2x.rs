//! CUTLASS 2.x universal GEMM (`cutlass::gemm::device::GemmUniversal`), with parallel split-K's
//! reduction kernel: the C++ of one kernel, for `cutlass_aot/gemm_2x.cuh`.

use super::shape;
use crate::model::{Activation, Epilogue, GemmKernel, SplitK};

pub(super) fn kernel_source(k: &GemmKernel) -> String {
    // Arch 90 (f64 only): Hopper's DMMA instructions exist in CUTLASS's Sm90 specialisations.
    let arch = if k.arch >= 90 {
        "cutlass::arch::Sm90"
    } else {
        "cutlass::arch::Sm80"
    };
    let parallel = k.split_k == SplitK::Parallel;
    // A parallel split-K GEMM writes unscaled partial sums in the accumulator type, in vectors of
    // at most 128 bits; the reduction then applies the kernel's own epilogue.
    let partial_count = k.alignment_c.min(k.element_accumulator.max_alignment());
    let output_epilogue = |count: u32| thread_epilogue_2x(k, count);
    let (gemm_c, gemm_epilogue) = if parallel {
        let acc = k.element_accumulator.cutlass_type();
        (
            acc,
            format!(
                "{}<{acc}, {partial_count}, {acc}, {acc}>",
                Epilogue::LinearCombination.cutlass_template()
            ),
        )
    } else {
        (k.element_c.cutlass_type(), output_epilogue(k.alignment_c))
    };
    let entry = if parallel {
        format!(
            "using {name}_reduction = cutlass::reduction::kernel::ReduceSplitK<\n    \
             cutlass::MatrixShape<4, {columns}>,\n    \
             {epilogue},\n    \
             cutlass::reduction::thread::ReduceAdd<{eacc}, {eacc}, {partial_count}>>;\n\
             CUTLASS_AOT_GEMM_2X_SPLIT_K_PARALLEL({name}, {name}_gemm, {name}_reduction)\n",
            name = k.name,
            columns = 32 * partial_count,
            epilogue = output_epilogue(partial_count),
            eacc = k.element_accumulator.cutlass_type(),
        )
    } else {
        format!("CUTLASS_AOT_GEMM_2X({name}, {name}_gemm)\n", name = k.name)
    };
    format!(
        "// {origin}\n\
         using {name}_gemm = cutlass::gemm::device::GemmUniversal<\n    \
         {ea}, {la},\n    \
         {eb}, {lb},\n    \
         {ec}, {lc},\n    \
         {eacc}, {opclass}, {arch},\n    \
         {tile},\n    \
         {warp},\n    \
         {inst},\n    \
         {epilogue},\n    \
         {swizzle},\n    \
         {stages}, {align_a}, {align_b}, {math}>;\n\
         {entry}",
        origin = k.origin,
        name = k.name,
        ea = k.element_a.cutlass_type(),
        la = k.layout_a.cutlass_type(),
        eb = k.element_b.cutlass_type(),
        lb = k.layout_b.cutlass_type(),
        ec = gemm_c,
        lc = k.layout_c.cutlass_type(),
        eacc = k.element_accumulator.cutlass_type(),
        opclass = k.opclass.cutlass_type(),
        arch = arch,
        tile = shape("GemmShape", k.tile),
        warp = shape("GemmShape", k.warp_tile()),
        inst = shape("GemmShape", k.instruction),
        epilogue = gemm_epilogue,
        swizzle = k.swizzle.cutlass_type(),
        stages = k.stages,
        align_a = k.alignment_a,
        align_b = k.alignment_b,
        math = k.math.cutlass_type(),
    )
}

/// The 2.x thread epilogue writing `count` elements of C per access: CUTLASS's generic linear
/// combination with the activation, or the (fast) clamp, or the plain linear combination.
pub(super) fn thread_epilogue_2x(k: &GemmKernel, count: u32) -> String {
    let (ec, eacc, eepi) = (
        k.element_c.cutlass_type(),
        k.element_accumulator.cutlass_type(),
        k.element_epilogue.cutlass_type(),
    );
    let activation = k.fusion.activation;
    if activation != Activation::Identity {
        let functor = activation.cutlass_template();
        // Heavy activations (GELU, sigmoid, ...) make CUTLASS's epilogue keep fewer fragments live.
        return format!(
            "cutlass::epilogue::thread::LinearCombinationGeneric<{functor}, {ec}, {count}, {eacc}, {eepi},\n        \
             cutlass::epilogue::thread::ScaleType::Default, cutlass::FloatRoundStyle::round_to_nearest,\n        \
             cutlass::epilogue::thread::kIsHeavy_member_or_false<{functor}<{eepi}>>::value>"
        );
    }
    match k.epilogue {
        // Accumulator and compute types are fixed (s32, f32) in CUTLASS's fast clamp.
        Epilogue::FastLinearCombinationClamp => format!("{}<{ec}, {count}>", k.epilogue.cutlass_template()),
        _ => format!("{}<{ec}, {count}, {eacc}, {eepi}>", k.epilogue.cutlass_template()),
    }
}
