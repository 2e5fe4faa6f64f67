//! CPU tests of fused epilogues: the registry's fusion metadata and discovery, `supports()`
//! reasons (wrong fusion, missing, extra, short or misaligned operands, the fast clamp's K limit),
//! plans (operands in the ABI) and host Params of every fused kernel. `tests/gpu.rs` runs them.

mod common;

use std::ffi::c_void;

use common::{assert_contains, invalid_message, kernel, operand, operands, problem, reasons, H100};
use cutlass_aot::gemm::plan;
use cutlass_aot::model::{
    Activation, Api, AuxInput, AuxOutput, Broadcast, Epilogue, Fusion, Reduction, Residual,
};
use cutlass_aot::{FusionOperands, GemmOperands, GemmProblem, KernelInfo, MatrixShape, VectorOperand};

const ADDR_BIAS: u64 = 0x7f50_0000_0000;
const ADDR_AUX: u64 = 0x7f60_0000_0000;
const ADDR_ALPHA: u64 = 0x7f70_0000_0000;
const ADDR_ROW_SUMS: u64 = 0x7f80_0000_0000;
const ADDR_WORKSPACE: u64 = 0x7f90_0000_0000;

fn bias_gelu() -> &'static KernelInfo {
    kernel("bf16_sm90_128x256x64_bias_gelu")
}

fn bias(len: usize) -> FusionOperands {
    FusionOperands {
        bias: Some(VectorOperand {
            len,
            address: ADDR_BIAS,
        }),
        ..Default::default()
    }
}

/// Operands of `info` for an m×n×k problem with its fused operands: a bias and an aux output
/// where the kernel has them, no scale vectors (they are optional).
fn fused_operands(info: &KernelInfo, (m, n, k): (usize, usize, usize)) -> GemmOperands {
    let mut ops = operands(info, m, n, k);
    if let Some(len) = info.epilogue.fusion.bias.length(m, n) {
        ops.fusion = bias(len);
    }
    if info.epilogue.fusion.aux_output == AuxOutput::PreActivation
        || info.epilogue.fusion.aux_input == AuxInput::PreActivation
    {
        ops.fusion.aux = Some(operand(
            MatrixShape::packed(m, n, info.gemm().c.layout),
            info.gemm().c.layout,
            ADDR_AUX,
        ));
    }
    if info.epilogue.fusion.reduction == Reduction::RowSum {
        ops.fusion.reduction = Some(VectorOperand {
            len: m,
            address: ADDR_ROW_SUMS,
        });
    }
    ops
}

fn fused_kernels() -> impl Iterator<Item = &'static KernelInfo> {
    common::gemm_registry()
        .all()
        .iter()
        .copied()
        .filter(|k| !k.is_plain())
}

// ---------------------------------------------------------------------------------------------
// Metadata and discovery
// ---------------------------------------------------------------------------------------------

#[test]
fn every_activation_is_built_on_both_generations() {
    for &activation in Activation::ALL.iter().filter(|&&a| a != Activation::Identity) {
        for api in [Api::Cutlass2x, Api::Cutlass3x] {
            let found = common::gemm_registry()
                .filter(|k| k.api() == api && k.epilogue.fusion.activation == activation)
                .count();
            assert!(found > 0, "no {api} kernel applies {activation}");
        }
    }
    // Clamps: 2.x (s8 outputs saturate by default), CUTLASS's fast int8 clamp, and the 3.x clamp.
    let clamp_3x = kernel("f16_sm90_clamp");
    assert_eq!(clamp_3x.epilogue.kind, Epilogue::LinearCombinationClamp);
    assert!(!clamp_3x.is_plain());
    // Discovery finds a clamp only when asked for one.
    let p = problem(clamp_3x, 256, 256, 64);
    assert_contains(
        &reasons(clamp_3x, &p),
        "the kernel's epilogue is linear_combination_clamp, which saturates D to f16's range",
    );
    assert!(clamp_3x
        .supports(&p.with_epilogue(Epilogue::LinearCombinationClamp))
        .is_ok());
    let fast = kernel("gemm_s8_tn_s8_fastclamp");
    assert_eq!(fast.epilogue.kind, Epilogue::FastLinearCombinationClamp);
    assert!(
        fast.name.ends_with("_fast_linear_combination_clamp"),
        "{}",
        fast.name
    );
    // An s8 output's default clamp is still a plain GEMM.
    assert!(kernel("gemm_s8_tn_s8").is_plain());
}

#[test]
fn fused_kernels_carry_their_fusion_in_metadata_and_names() {
    let info = bias_gelu();
    assert_eq!(
        info.epilogue.fusion,
        Fusion {
            activation: Activation::Gelu,
            bias: Broadcast::PerCol,
            ..Fusion::NONE
        }
    );
    assert_eq!(info.epilogue.fusion.label(), "bias_gelu");
    assert!(info.name.ends_with("_bias_gelu"), "{}", info.name);
    let aux = kernel("f16_sm90_row_bias_gelu_aux");
    assert_eq!(aux.epilogue.fusion.bias, Broadcast::PerRow);
    assert_eq!(aux.epilogue.fusion.aux_output, AuxOutput::PreActivation);
    let scale = kernel("f16_sm90_row_scale_row_bias_silu");
    assert_eq!(
        (scale.epilogue.fusion.scale, scale.epilogue.fusion.bias),
        (Broadcast::PerRow, Broadcast::PerRow)
    );
    let residual = kernel("f16_sm90_bias_relu_residual");
    assert_eq!(residual.epilogue.fusion.residual, Residual::AfterActivation);
    assert_eq!(
        kernel("gemm_f16_tn_leaky_relu").epilogue.fusion.activation,
        Activation::LeakyRelu
    );
    // Names are unique across fusions of one configuration.
    let mut names: Vec<_> = common::gemm_registry().all().iter().map(|k| k.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), common::gemm_registry().all().len());
}

#[test]
fn discovery_filters_on_the_fusion() {
    let info = bias_gelu();
    let wanted = Fusion {
        activation: Activation::Gelu,
        bias: Broadcast::PerCol,
        ..Fusion::NONE
    };
    let fused = problem(info, 4096, 4096, 4096).fused(wanted, None);
    let found: Vec<_> = common::gemm_registry()
        .get_kernels(&fused, |_| true)
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(
        found,
        [
            "bf16_sm90_128x256x64_bias_gelu",
            "bf16_sm90_128x128x64_pingpong_bias_gelu"
        ]
    );
    // A plain problem finds no fused kernel, and a fused problem no plain one.
    let plain = problem(info, 4096, 4096, 4096);
    assert!(common::gemm_registry()
        .get_kernels(&plain, |_| true)
        .all(|k| k.epilogue.fusion.is_none()));
    assert!(common::gemm_registry().get_kernels(&plain, |_| true).count() > 0);
    // Filtering by metadata alone: every kernel with a per-column bias.
    let with_bias = common::gemm_registry()
        .filter(|k| k.epilogue.fusion.bias == Broadcast::PerCol)
        .count();
    assert!(with_bias >= 4, "{with_bias}");
}

#[test]
fn supports_names_each_fusion_mismatch() {
    let info = bias_gelu();
    let wanted = Fusion {
        activation: Activation::Relu,
        aux_output: AuxOutput::PreActivation,
        ..Fusion::NONE
    };
    let why = reasons(info, &problem(info, 256, 256, 64).fused(wanted, None));
    assert_contains(&why, "the kernel applies gelu but the problem asks for relu");
    assert_contains(&why, "the kernel's bias is per_col but the problem asks for none");
    assert_contains(
        &why,
        "the kernel's aux output is none but the problem asks for pre_activation",
    );
}

// ---------------------------------------------------------------------------------------------
// Operands
// ---------------------------------------------------------------------------------------------

#[test]
fn supports_explains_missing_short_extra_and_misaligned_operands() {
    let info = bias_gelu();
    let p =
        |operands: FusionOperands| problem(info, 256, 512, 64).fused(info.epilogue.fusion, Some(operands));
    assert_contains(
        &reasons(info, &p(FusionOperands::default())),
        "missing bias: this kernel adds a per-column vector of n = 512 elements (bf16); pass one",
    );
    assert_contains(
        &reasons(info, &p(bias(500))),
        "the bias has 500 elements but this kernel's per-column vector needs n = 512",
    );
    let misaligned = FusionOperands {
        bias: Some(VectorOperand {
            len: 512,
            address: ADDR_BIAS + 2,
        }),
        ..Default::default()
    };
    assert_contains(
        &reasons(info, &p(misaligned)),
        "which is not 16-byte aligned as the kernel requires",
    );
    let extra = FusionOperands {
        alpha_vector: Some(VectorOperand {
            len: 512,
            address: ADDR_ALPHA,
        }),
        aux: Some(operand(
            MatrixShape::packed(256, 512, info.gemm().c.layout),
            info.gemm().c.layout,
            ADDR_AUX,
        )),
        ..bias(512)
    };
    let why = reasons(info, &p(extra));
    assert_contains(
        &why,
        "an alpha vector was given but this kernel takes none (bias_gelu)",
    );
    assert_contains(
        &why,
        "an aux matrix was given but this kernel reads or writes none (bias_gelu)",
    );
    assert!(info.supports(&p(bias(512))).is_ok());
    // A bias given to a plain kernel.
    let plain = kernel("bf16_sm90_128x256x64_2x1x1_cooperative");
    let why = reasons(
        plain,
        &problem(plain, 256, 512, 64).fused(Fusion::NONE, Some(bias(512))),
    );
    assert_contains(
        &why,
        "a bias was given but this kernel takes none (linear_combination)",
    );
}

#[test]
fn scale_vectors_are_optional_but_checked_when_given() {
    let info = kernel("f16_sm90_row_scale_row_bias_silu");
    let (m, n) = (256, 128);
    let p = |operands: FusionOperands| problem(info, m, n, 64).fused(info.epilogue.fusion, Some(operands));
    assert!(info.supports(&p(bias(m))).is_ok(), "scalar alpha and beta");
    let short_alpha = FusionOperands {
        alpha_vector: Some(VectorOperand {
            len: m - 4,
            address: ADDR_ALPHA,
        }),
        ..bias(m)
    };
    assert_contains(
        &reasons(info, &p(short_alpha)),
        "the alpha vector has 252 elements but this kernel's per-row vector needs m = 256",
    );
    // A beta vector needs a C (without one, D is passed as C with beta 0).
    let mut ops = operands(info, m, n, 64);
    ops.fusion = FusionOperands {
        beta_vector: Some(VectorOperand {
            len: m,
            address: ADDR_ALPHA,
        }),
        ..bias(m)
    };
    assert_contains(
        &invalid_message(plan(info, &ops, &H100)),
        "a beta vector was given but no C; pass C (`with_c`) or leave the beta vector out",
    );
    // Scale vectors (f32) are read in 128-bit vectors: m must be a multiple of 4.
    let ragged = problem(info, 250, n, 64).fused(info.epilogue.fusion, Some(bias(250)));
    let with_alpha = FusionOperands {
        alpha_vector: Some(VectorOperand {
            len: 250,
            address: ADDR_ALPHA,
        }),
        ..bias(250)
    };
    assert_contains(
        &reasons(
            info,
            &GemmProblem {
                fusion_operands: Some(with_alpha),
                ..ragged
            },
        ),
        "so m = 250 must be a multiple of 4",
    );
}

#[test]
fn fast_clamp_refuses_k_beyond_256() {
    let info = kernel("gemm_s8_tn_s8_fastclamp");
    let p = |k| problem(info, 256, 256, k).with_epilogue(Epilogue::FastLinearCombinationClamp);
    assert!(info.supports(&p(256)).is_ok(), "{:?}", info.supports(&p(256)));
    assert_contains(
        &reasons(info, &p(272)),
        "k = 272 exceeds 256, the largest K fast_linear_combination_clamp is exact for",
    );
}

#[test]
fn array_mode_refuses_kernels_with_fused_arguments() {
    let leaky = kernel("gemm_f16_tn_leaky_relu");
    let p = problem(leaky, 128, 128, 64).pointer_arrays(3);
    assert_contains(
        &reasons(leaky, &p),
        "array mode takes no epilogue operands or arguments, and this kernel's fusion (leaky_relu) needs them",
    );
    let relu = kernel("gemm_f16_tn_relu");
    let p = problem(relu, 128, 128, 64)
        .pointer_arrays(3)
        .fused(relu.epilogue.fusion, None);
    assert!(relu.supports(&p).is_ok(), "{:?}", relu.supports(&p));
}

// ---------------------------------------------------------------------------------------------
// Plans and host Params
// ---------------------------------------------------------------------------------------------

#[test]
fn plan_puts_fused_operands_in_the_abi() {
    let info = kernel("f16_sm90_bias_gelu_aux");
    let (m, n, k) = (256, 384, 128);
    let ops = fused_operands(info, (m, n, k));
    let args = plan(info, &ops, &H100).expect("plan");
    assert_eq!(args.bias as u64, ADDR_BIAS);
    assert_eq!(args.aux as u64, ADDR_AUX);
    assert_eq!(args.ldaux, n as i64);
    assert!(args.alpha_vector.is_null() && args.beta_vector.is_null());
    // Plain kernels pass none.
    let plain = kernel("gemm_f16_tn");
    let args = plan(plain, &operands(plain, m, n, k), &H100).unwrap();
    assert!(args.bias.is_null() && args.aux.is_null());
    // leaky_relu's slope.
    let leaky = kernel("gemm_f16_tn_leaky_relu");
    let mut ops = operands(leaky, m, n, k);
    ops.fusion.activation_arg = 0.125;
    assert_eq!(plan(leaky, &ops, &H100).unwrap().activation_arg, 0.125);
}

#[test]
fn plan_refuses_a_missing_or_mismatched_aux_output() {
    let info = kernel("f16_sm90_bias_gelu_aux");
    let (m, n, k) = (256, 384, 128);
    let mut ops = fused_operands(info, (m, n, k));
    ops.fusion.aux = None;
    assert_contains(
        &invalid_message(plan(info, &ops, &H100)),
        "missing aux output: this kernel also writes its pre-activation value, an 256×384 matrix of f16",
    );
    let mut ops = fused_operands(info, (m, n, k));
    ops.fusion.aux = Some(operand(
        MatrixShape::packed(m, n - 8, info.gemm().c.layout),
        info.gemm().c.layout,
        ADDR_AUX,
    ));
    assert_contains(
        &invalid_message(plan(info, &ops, &H100)),
        "the aux matrix is 256×376 (batch 1) but D is 256×384 (batch 1)",
    );
    let mut ops = fused_operands(info, (m, n, k));
    if let Some(aux) = ops.fusion.aux.as_mut() {
        aux.len -= 1;
    }
    assert_contains(
        &invalid_message(plan(info, &ops, &H100)),
        "the aux matrix (256×384",
    );
    let mut ops = fused_operands(info, (m, n, k));
    if let Some(aux) = ops.fusion.aux.as_mut() {
        aux.address += 2;
    }
    assert_contains(
        &invalid_message(plan(info, &ops, &H100)),
        "is not 16-byte aligned",
    );
}

#[test]
fn every_fused_kernel_prepares_with_its_operands_and_refuses_foreign_ones() {
    let mut count = 0;
    for info in fused_kernels() {
        let mut args = plan(info, &fused_operands(info, (256, 256, 128)), &H100)
            .unwrap_or_else(|e| panic!("{}: {e}", info.rust_name));
        args.encode_tiled = Some(cutlass_aot::gemm::no_tensor_map);
        if info.may_need_workspace(1) {
            args.workspace = ADDR_WORKSPACE as *mut c_void;
            args.workspace_capacity = 1 << 30;
        }
        let prepared = info
            .prepare(&args)
            .unwrap_or_else(|e| panic!("{}: {e}", info.rust_name));
        assert!(prepared.launch.params_bytes > 0);
        assert!(prepared.launch.shared_mem_bytes <= H100.max_shared_memory_per_block_optin);
        // The host code itself refuses an operand the kernel has no place for (the runtime's
        // checks refuse it first; this guards the ABI).
        if info.epilogue.fusion.aux_output == AuxOutput::None
            && info.epilogue.fusion.aux_input == AuxInput::None
        {
            let mut foreign = args;
            foreign.aux = ADDR_AUX as *mut c_void;
            foreign.ldaux = 256;
            assert!(
                info.prepare(&foreign).is_err(),
                "{} took an aux output",
                info.rust_name
            );
        }
        // CUTLASS's residual operation always takes per-column scale vectors (the runtime lets
        // them through only where the manifest says `scale: per_col`).
        if info.epilogue.fusion.scale == Broadcast::None && info.epilogue.fusion.residual == Residual::None {
            let mut foreign = args;
            foreign.alpha_vector = ADDR_ALPHA as *const c_void;
            assert!(
                info.prepare(&foreign).is_err(),
                "{} took an alpha vector",
                info.rust_name
            );
        }
        count += 1;
    }
    assert!(count >= 31, "{count} fused kernels");
}

#[test]
fn backward_kernels_take_an_aux_input_and_write_row_sums() {
    let info = kernel("f16_sm90_dgelu_taylor_row_sum");
    assert_eq!(info.epilogue.fusion.aux_input, AuxInput::PreActivation);
    assert_eq!(info.epilogue.fusion.reduction, Reduction::RowSum);
    assert!(info.name.ends_with("_dgelu_taylor_row_sum"), "{}", info.name);
    let (m, n, k) = (256, 384, 128);
    // Missing aux input and row-sum buffer.
    let p = problem(info, m, n, k).fused(info.epilogue.fusion, Some(FusionOperands::default()));
    let why = reasons(info, &p);
    assert_contains(
        &why,
        "missing aux input: this backward kernel reads the forward pass's pre-activation value",
    );
    assert_contains(
        &why,
        "missing reduction output: this kernel writes the row sums of D, m = 256 values of f32",
    );
    // A short row-sum buffer, a batch.
    let mut ops = fused_operands(info, (m, n, k));
    if let Some(v) = ops.fusion.reduction.as_mut() {
        v.len = m - 1;
    }
    assert_contains(
        &invalid_message(plan(info, &ops, &H100)),
        "the reduction output has 255 elements but this kernel writes m = 256 row sums",
    );
    assert_contains(
        &reasons(
            info,
            &problem(info, m, n, k)
                .batched(2)
                .fused(info.epilogue.fusion, None),
        ),
        "a kernel with a reduction (row_sum) reduces one GEMM, not a batch of 2",
    );
    // The row sums are reduced across the CTAs of a row in a workspace, which the launch provides.
    assert!(info.may_need_workspace(1));
    let mut args = plan(info, &fused_operands(info, (m, n, k)), &H100).unwrap();
    assert_eq!(args.reduction as u64, ADDR_ROW_SUMS);
    assert_eq!(args.aux as u64, ADDR_AUX);
    args.encode_tiled = Some(cutlass_aot::gemm::no_tensor_map);
    assert_contains(
        &invalid_message(info.prepare(&args)),
        "bytes of workspace but 0 were given",
    );
    // A row-sum buffer given to a kernel without the reduction.
    let plain_backward = kernel("f16_sm90_dgelu_taylor");
    let mut ops = fused_operands(info, (m, n, k));
    ops.fusion.reduction = Some(VectorOperand {
        len: m,
        address: ADDR_ROW_SUMS,
    });
    assert_contains(
        &invalid_message(plan(plain_backward, &ops, &H100)),
        "a reduction output was given but this kernel writes none (dgelu_taylor)",
    );
}
