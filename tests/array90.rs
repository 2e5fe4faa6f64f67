//! CPU tests of the Hopper pointer-array batched GEMM (`--features array`): the kernels' model and
//! names, `supports()` in array mode and out of it, and host Params through `array::plan_array`.
//! `tests/gpu.rs` runs them in array mode on a GPU.
#![cfg(feature = "array")]

mod common;

use common::{assert_contains, kernel, H100};
use cutlass_aot::array::{plan_array, ArrayOperand, ArrayOperands};
use cutlass_aot::model::{Api, BatchMode, DType, Layout, SplitK};
use cutlass_aot::{kernels, GemmProblem, KernelInfo, MatrixShape};

fn array_kernels() -> Vec<&'static KernelInfo> {
    kernels::REGISTRY
        .filter(|k| k.design.as_3x().is_some_and(|d| d.batch_mode == BatchMode::Array))
        .collect()
}

fn operands(info: &KernelInfo, (m, n, k): (usize, usize, usize), count: usize) -> ArrayOperands<'static> {
    let op = info.gemm();
    let array = |rows, cols, layout, at: u64| ArrayOperand {
        pointers: 0x7f00_0000_0000 + (at << 20),
        count,
        shape: MatrixShape::packed(rows, cols, layout),
        addresses: None,
    };
    ArrayOperands {
        batch_count: count,
        a: array(m, k, op.a.layout, 0),
        b: array(k, n, op.b.layout, 1),
        c: None,
        d: array(m, n, op.c.layout, 3),
        alpha: 1.0,
        beta: 0.0,
    }
}

#[test]
fn pointer_array_kernels_are_hopper_gemms_that_run_array_mode_only() {
    let all = array_kernels();
    assert_eq!(all.len(), 2);
    for k in &all {
        assert_eq!(k.api(), Api::Cutlass3x);
        assert!(k.name.ends_with("_array"), "{}", k.name);
        assert_eq!(k.design.split_k(), SplitK::None);
        let op = k.gemm();
        let plain = GemmProblem::new(
            (256, 256, 256),
            (op.a.element, op.b.element, op.c.element),
            (op.a.layout, op.b.layout, op.c.layout),
        );
        let why = k.supports(&plain).unwrap_err().reasons.join("\n");
        assert_contains(&why, "it runs array mode only");
        assert!(k.supports(&plain.clone().pointer_arrays(8)).is_ok(), "{}", k.name);
    }
    // A strided 3.x kernel still refuses pointer arrays, naming the kernels that take them.
    let strided = kernel("bf16_sm90_128x256x64_2x1x1_cooperative");
    let problem = GemmProblem::new(
        (256, 256, 256),
        (DType::Bf16, DType::Bf16, DType::Bf16),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .pointer_arrays(4);
    assert_contains(
        &strided.supports(&problem).unwrap_err().reasons.join("\n"),
        "a 3.x pointer-array kernel (`batch_mode: array`)",
    );
}

#[test]
fn pointer_array_kernels_prepare_params_in_array_mode() {
    for info in array_kernels() {
        let mut args = plan_array(info, &operands(info, (1000, 1024, 512), 8), &H100)
            .unwrap_or_else(|e| panic!("{}: {e}", info.name));
        args.encode_tiled = Some(cutlass_aot::gemm::no_tensor_map);
        // CUTLASS's pointer-array kernels keep per-CTA tensor maps in a workspace.
        let bytes = info.workspace_bytes(&args).unwrap();
        assert!(bytes > 0, "{}", info.name);
        let mut workspace = vec![0u8; bytes as usize];
        args.workspace = workspace.as_mut_ptr().cast();
        args.workspace_capacity = bytes;
        let prepared = info
            .prepare(&args)
            .unwrap_or_else(|e| panic!("{}: {e}", info.name));
        let launch = prepared.launch;
        let ctas = launch.grid[0] * launch.grid[1] * launch.grid[2];
        assert!((1..=132).contains(&ctas), "{}: grid {:?}", info.name, launch.grid);
        assert_eq!(launch.block, [384, 1, 1], "{}", info.name);
        // Batched (strided) mode is refused by the host code too.
        args.mode = cutlass_aot::abi::cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_BATCHED as i32;
        assert!(info.prepare(&args).is_err(), "{}", info.name);
    }
}

#[test]
fn array_mode_checks_alignment_of_leading_dimensions() {
    let info = array_kernels()[0];
    let mut ops = operands(info, (64, 64, 64), 2);
    ops.a.shape.ld = 68; // not a multiple of 8 elements (16 bytes)
    let message = match plan_array(info, &ops, &H100) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a misaligned ld was accepted"),
    };
    assert_contains(
        &message,
        "leading dimension of A (68) is not a multiple of the alignment 8",
    );
}
