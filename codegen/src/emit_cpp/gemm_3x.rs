//! CUTLASS 3.x GEMM from the collective builders (sm_90a): the C++ of one kernel, for
//! `cutlass_aot/gemm_3x.cuh`.

use super::{cute_shape, operand_type_3x, stage_count_3x};
use crate::model::{AuxInput, AuxOutput, Broadcast, DType, Epilogue, GemmKernel, Reduction, Residual};

/// The CUTLASS 3.x fusion operation of a fused kernel (`None`: the builder's default linear
/// combination). Bias and aux take C's type and alignment; scale vectors the compute type.
pub(super) fn fusion_operation_3x(k: &GemmKernel) -> Option<String> {
    let f = &k.fusion;
    let activation = if k.epilogue == Epilogue::LinearCombinationClamp {
        "cutlass::epilogue::thread::Clamp"
    } else {
        f.activation.cutlass_template()
    };
    if f.is_none() && k.epilogue == Epilogue::LinearCombination {
        return None;
    }
    let (ed, eepi, lc, align) = (
        k.element_c.cutlass_type(),
        k.element_epilogue.cutlass_type(),
        k.layout_c.cutlass_type(),
        k.alignment_c,
    );
    let scalar_align = 128 / DType::F32.bits().max(k.element_epilogue.bits());
    let fusion = "cutlass::epilogue::fusion";
    // Backward: the activation's derivative at the aux input, and the row sums of D (f32).
    if f.aux_input == AuxInput::PreActivation {
        let derivative = f.activation.derivative_template().unwrap_or(activation);
        return Some(match f.reduction {
            Reduction::RowSum => format!(
                "{fusion}::LinCombDeEltActDePerRowBias<{lc}, {derivative}, {ed}, {eepi}, {ed}, {eepi}, {ed}, {eepi}, {align}, {scalar_align}>"
            ),
            Reduction::None => format!(
                "{fusion}::LinCombDeEltAct<{lc}, {derivative}, {ed}, {eepi}, {ed}, {ed}, {eepi}, {align}>"
            ),
        });
    }
    let direction = |b: Broadcast| if b == Broadcast::PerRow { "Row" } else { "Col" };
    Some(match (f.bias, f.scale, f.aux_output, f.residual) {
        (_, _, _, Residual::AfterActivation) => format!(
            "{fusion}::PerColResAddPerColBiasEltAct<{activation}, {ed}, {eepi}, {ed}, {ed}, {eepi}, {align}, {scalar_align}>"
        ),
        (_, Broadcast::PerRow | Broadcast::PerCol, _, _) => {
            let dir = direction(f.scale);
            format!(
                "{fusion}::Per{dir}LinCombPer{dir}BiasEltAct<{activation}, {ed}, {eepi}, {ed}, {ed}, {eepi}, {align}, {scalar_align}>"
            )
        }
        (Broadcast::PerRow | Broadcast::PerCol, _, AuxOutput::PreActivation, _) => format!(
            "{fusion}::LinCombPer{}BiasEltActAux<{lc}, {activation}, {ed}, {eepi}, {ed}, {ed}, {ed}, {eepi}, {align}, {align}>",
            direction(f.bias)
        ),
        (Broadcast::PerRow | Broadcast::PerCol, _, _, _) => format!(
            "{fusion}::LinCombPer{}BiasEltAct<{activation}, {ed}, {eepi}, {ed}, {ed}, {eepi}, {align}>",
            direction(f.bias)
        ),
        _ => format!("{fusion}::LinCombEltAct<{activation}, {ed}, {eepi}, {ed}, {eepi}>"),
    })
}

pub(super) fn kernel_source_3x(k: &GemmKernel) -> String {
    let stages = stage_count_3x(k.stages);
    format!(
        "// {origin}\n\
         namespace {name}_types {{\n\
         using TileShape = {tile};\n\
         using ClusterShape = {cluster};\n\
         using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<\n    \
         cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,\n    \
         cutlass::epilogue::collective::EpilogueTileAuto, {eacc}, {eepi},\n    \
         {ec}, {lc}, {align_c},\n    \
         {ec}, {lc}, {align_c},\n    \
         {epilogue_schedule}{fusion}>::CollectiveOp;\n\
         using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<\n    \
         cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,\n    \
         {ea}, {la}, {align_a},\n    \
         {eb}, {lb}, {align_b},\n    \
         {eacc}, TileShape, ClusterShape,\n    \
         {stages},\n    \
         {schedule}>::CollectiveOp;\n\
         using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>,\n    \
         CollectiveMainloop, CollectiveEpilogue, {scheduler}>;\n\
         }} // namespace {name}_types\n\
         CUTLASS_AOT_GEMM_3X({name}, {name}_types::Kernel)\n",
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
        stages = stages,
        schedule = k.schedule.cutlass_type(),
        epilogue_schedule = k.epilogue_schedule.cutlass_type(k.schedule),
        scheduler = k.tile_scheduler.cutlass_type(),
        fusion = fusion_operation_3x(k).map_or(String::new(), |op| format!(",\n    {op}")),
    )
}
