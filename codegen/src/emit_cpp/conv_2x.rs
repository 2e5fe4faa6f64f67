//! CUTLASS 2.x implicit-GEMM conv2d (`cutlass::conv::kernel::DefaultConv2d{Fprop,Dgrad,Wgrad}`),
//! with parallel split-K's reduction kernel: the C++ of one kernel, for `cutlass_aot/conv_2x.cuh`.

use super::gemm_2x::thread_epilogue_2x;
use super::shape;
use crate::model::{ConvKind, Epilogue, GemmKernel, SplitK, StrideSupport, Swizzle};

pub(super) fn kernel_source(k: &GemmKernel) -> String {
    let kind = k.conv_kind().expect("conv emitter called for a conv kernel");
    let default = match kind {
        ConvKind::Fprop => "DefaultConv2dFprop",
        ConvKind::Dgrad => "DefaultConv2dDgrad",
        ConvKind::Wgrad => "DefaultConv2dWgrad",
    };
    let parallel = k.split_k == SplitK::Parallel;
    // As for GEMMs (gemm_2x.rs): a parallel split-K kernel writes unscaled accumulator-type partial
    // sums; the reduction applies the kernel's own epilogue.
    let partial_count = k.alignment_c.min(k.element_accumulator.max_alignment());
    let eacc = k.element_accumulator.cutlass_type();
    let (conv_c, conv_epilogue) = if parallel {
        (
            eacc,
            format!(
                "{}<{eacc}, {partial_count}, {eacc}, {eacc}>",
                Epilogue::LinearCombination.cutlass_template()
            ),
        )
    } else {
        (k.element_c.cutlass_type(), thread_epilogue_2x(k, k.alignment_c))
    };
    let entry = if parallel {
        format!(
            "using {name}_reduction = cutlass::reduction::kernel::ReduceSplitK<\n    \
             cutlass::MatrixShape<4, {columns}>,\n    \
             {epilogue},\n    \
             cutlass::reduction::thread::ReduceAdd<{eacc}, {eacc}, {partial_count}>>;\n\
             CUTLASS_AOT_CONV_2X_SPLIT_K_PARALLEL({name}, {name}_kernel, {name}_reduction)\n",
            name = k.name,
            columns = 32 * partial_count,
            epilogue = thread_epilogue_2x(k, partial_count),
        )
    } else {
        format!("CUTLASS_AOT_CONV_2X({name}, {name}_kernel)\n", name = k.name)
    };
    // The activation's, filter's and output's layouts in the roles of A, B and C.
    let [activation, filter, output] = k.conv_layout.cutlass_types();
    let [la, lb, lc] = match kind {
        ConvKind::Fprop => [activation, filter, output],
        ConvKind::Dgrad => [output, filter, activation],
        ConvKind::Wgrad => [output, activation, filter],
    };
    format!(
        "// {origin}\n\
         using {name}_kernel = typename cutlass::conv::kernel::{default}<\n    \
         {ea}, {la},\n    \
         {eb}, {lb},\n    \
         {ec}, {lc},\n    \
         {eacc}, {opclass}, cutlass::arch::Sm80,\n    \
         {tile},\n    \
         {warp},\n    \
         {inst},\n    \
         {epilogue},\n    \
         {swizzle},\n    \
         {stages}, {math},\n    \
         {iterator}, {stride},\n    \
         {align_a}, {align_b}>::Kernel;\n\
         {entry}",
        origin = k.origin,
        name = k.name,
        ea = k.element_a.cutlass_type(),
        eb = k.element_b.cutlass_type(),
        ec = conv_c,
        opclass = k.opclass.cutlass_type(),
        tile = shape("GemmShape", k.tile),
        warp = shape("GemmShape", k.warp_tile()),
        inst = shape("GemmShape", k.instruction),
        epilogue = conv_epilogue,
        swizzle = swizzle(k, kind),
        stages = k.stages,
        math = k.math.cutlass_type(),
        iterator = k
            .iterator_algorithm
            .cutlass_value()
            .expect("first_layer kernels have their own emitter"),
        stride = k.stride_support.cutlass_value(),
        align_a = k.alignment_a,
        align_b = k.alignment_b,
    )
}

/// The threadblock swizzle: CUTLASS's strided dgrad kernel walks the output in stride phases and
/// needs its own swizzle of the same width.
fn swizzle(k: &GemmKernel, kind: ConvKind) -> String {
    let width = match k.swizzle {
        Swizzle::Identity1 => 1,
        Swizzle::Identity2 => 2,
        Swizzle::Identity4 => 4,
        // The rules allow only the identity swizzles for convolutions.
        _ => 8,
    };
    if kind == ConvKind::Dgrad && k.stride_support == StrideSupport::Strided {
        format!("cutlass::conv::threadblock::StridedDgradIdentityThreadblockSwizzle<{width}>")
    } else {
        format!("cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<{width}>")
    }
}
