//! Epilogue rules of both generations: clamps, activations and the fused operands (bias, scale
//! vectors, aux output, residual). CUTLASS 2.x kernels fuse activations through its generic linear
//! combination; CUTLASS 3.x kernels fuse everything through its fusion operations, which exist
//! for a fixed set of combinations: the rules name the combinations that do.

use super::Finding;
use crate::model::{
    Activation, Api, AuxInput, AuxOutput, Broadcast, DType, Epilogue, EpilogueSchedule, GemmKernel,
    Reduction, Residual,
};

/// Every epilogue rule broken by `k`, appended to `out`.
pub fn check(k: &GemmKernel, out: &mut Vec<Finding>) {
    let f = &k.fusion;
    if k.epilogue != Epilogue::LinearCombination && f.activation != Activation::Identity {
        out.push((
            "activation",
            format!(
                "{} cannot follow epilogue {}: a clamp saturates to the output type and takes no \
                 activation; use `epilogue: linear_combination` with the activation, or no activation",
                f.activation, k.epilogue
            ),
        ));
    }
    if k.epilogue == Epilogue::FastLinearCombinationClamp {
        fast_clamp(k, out);
    }
    match k.api() {
        Api::Cutlass2x => fusion_2x(k, out),
        Api::Cutlass3x => fusion_3x(k, out),
    }
}

/// CUTLASS's fast clamp converts s32 accumulators to s8 through f32.
fn fast_clamp(k: &GemmKernel, out: &mut Vec<Finding>) {
    if k.api() == Api::Cutlass3x {
        out.push((
            "epilogue",
            "fast_linear_combination_clamp is a CUTLASS 2.x epilogue; allowed on arch 90: \
             linear_combination, linear_combination_clamp"
                .to_string(),
        ));
        return;
    }
    let types_ok =
        k.element_c == DType::S8 && k.element_accumulator == DType::S32 && k.element_epilogue == DType::F32;
    if !types_ok {
        out.push((
            "epilogue",
            format!(
                "fast_linear_combination_clamp needs c s8, accumulator s32 and epilogue_compute f32 (CUTLASS's \
                 int8 fast path) but the kernel has c {}, accumulator {}, epilogue_compute {}; use \
                 linear_combination_clamp",
                k.element_c, k.element_accumulator, k.element_epilogue
            ),
        ));
    }
}

/// 2.x kernels fuse activations only (CUTLASS's generic linear combination).
fn fusion_2x(k: &GemmKernel, out: &mut Vec<Finding>) {
    let f = &k.fusion;
    let fused = [
        ("bias", f.bias != Broadcast::None, f.bias.to_string()),
        ("scale", f.scale != Broadcast::None, f.scale.to_string()),
        (
            "aux_output",
            f.aux_output != AuxOutput::None,
            f.aux_output.to_string(),
        ),
        ("residual", f.residual != Residual::None, f.residual.to_string()),
        (
            "aux_input",
            f.aux_input != AuxInput::None,
            f.aux_input.to_string(),
        ),
        (
            "reduction",
            f.reduction != Reduction::None,
            f.reduction.to_string(),
        ),
    ];
    for (field, given, value) in fused {
        if given {
            out.push((
                field,
                format!(
                    "{value} needs arch 90: CUTLASS 2.x kernels (arch 80) fuse activations and clamps only; \
                     bias, scale vectors, aux outputs and inputs, residuals and reductions come from CUTLASS \
                     3.x fusion operations (write `arch: 90`, or remove `{field}`)"
                ),
            ));
        }
    }
}

/// 3.x kernels: the combinations CUTLASS has fusion operations for, in the TMA epilogue.
fn fusion_3x(k: &GemmKernel, out: &mut Vec<Finding>) {
    let f = &k.fusion;
    let fused = !f.is_none() || k.epilogue != Epilogue::LinearCombination;
    if fused && k.epilogue_schedule != EpilogueSchedule::Tma {
        out.push((
            "epilogue_schedule",
            format!(
                "{} cannot fuse {}: CUTLASS 3.x fuses epilogues in its TMA epilogue only; write \
                 `epilogue_schedule: tma` (with a warpspecialized, cooperative or pingpong schedule)",
                k.epilogue_schedule,
                if f.is_none() {
                    k.epilogue.to_string()
                } else {
                    f.label()
                }
            ),
        ));
    }
    backward_3x(k, out);
    if f.aux_output != AuxOutput::None {
        if f.bias == Broadcast::None {
            out.push((
                "aux_output",
                "pre_activation needs a bias (`bias: per_row` or `bias: per_col`): CUTLASS's aux-output \
                 fusion operations are bias + activation (LinCombPerRowBiasEltActAux, \
                 LinCombPerColBiasEltActAux)"
                    .to_string(),
            ));
        }
        if f.scale != Broadcast::None || f.residual != Residual::None {
            out.push((
                "aux_output",
                "pre_activation cannot be combined with scale vectors or a residual: CUTLASS has no such \
                 fusion operation; allowed with aux_output: bias and activation"
                    .to_string(),
            ));
        }
    }
    if f.residual != Residual::None {
        let ok = matches!(f.bias, Broadcast::None | Broadcast::PerCol)
            && matches!(f.scale, Broadcast::None | Broadcast::PerCol);
        if !ok {
            out.push((
                "residual",
                format!(
                    "after_activation takes a per-column bias and per-column scales only (CUTLASS's \
                     PerColResAddPerColBiasEltAct) but the kernel has bias {} and scale {}; use per_col or none",
                    f.bias, f.scale
                ),
            ));
        }
    } else if f.scale != Broadcast::None && !(f.bias == Broadcast::None || f.bias == f.scale) {
        out.push((
            "scale",
            format!(
                "{} scales with a {} bias: CUTLASS's scale-vector fusion operations take a bias of the same \
                 direction (PerRowLinCombPerRowBiasEltAct, PerColLinCombPerColBiasEltAct); write `bias: {}` \
                 or `bias: none`",
                f.scale, f.bias, f.scale
            ),
        ));
    }
    if k.epilogue == Epilogue::LinearCombinationClamp && !f.is_none() {
        out.push((
            "epilogue",
            format!(
                "linear_combination_clamp cannot be combined with {} on arch 90: the clamp takes the \
                 activation's place; use linear_combination",
                f.label()
            ),
        ));
    }
}

/// Backward kernels (the activation's derivative at an aux input, and the row sums of D): CUTLASS
/// has LinCombDeEltAct and LinCombDeEltActDePerRowBias, for the activations it has derivatives of.
fn backward_3x(k: &GemmKernel, out: &mut Vec<Finding>) {
    let f = &k.fusion;
    if f.reduction != Reduction::None && f.aux_input == AuxInput::None {
        out.push((
            "reduction",
            format!(
                "{} needs `aux_input: pre_activation`: CUTLASS's only row-sum fusion operation is the \
                 backward LinCombDeEltActDePerRowBias (the bias gradient after the activation's derivative)",
                f.reduction
            ),
        ));
    }
    if f.aux_input == AuxInput::None {
        return;
    }
    if f.activation.derivative_template().is_none() {
        let with: Vec<&str> = Activation::ALL
            .iter()
            .filter(|a| a.derivative_template().is_some())
            .map(|a| a.manifest_name())
            .collect();
        out.push((
            "activation",
            format!(
                "{} has no derivative in CUTLASS for a backward kernel (`aux_input`); allowed: {}",
                f.activation,
                with.join(", ")
            ),
        ));
    }
    let others = f.bias != Broadcast::None
        || f.scale != Broadcast::None
        || f.aux_output != AuxOutput::None
        || f.residual != Residual::None;
    if others {
        out.push((
            "aux_input",
            "pre_activation cannot be combined with a bias, scale vectors, an aux output or a residual: \
             CUTLASS's backward fusion operations take alpha, beta, C and the aux input only"
                .to_string(),
        ));
    }
}
