//! CPU tests of every GEMM mode and number format beyond the plain GEMM: serial and parallel
//! split-K, array mode, int8, 3xTF32 and fast f16/bf16, the horizontal swizzle — their metadata,
//! `supports()` reasons, plans and host Params. Nothing here needs a GPU; `tests/gpu.rs` runs them.

mod common;

use common::{
    assert_contains, invalid_message, kernel, operand, operands, problem, reasons, ADDR_A, ADDR_B, ADDR_C,
    ADDR_D, H100,
};
use cutlass_aot::abi::{cutlass_aot_gemm_args, cutlass_aot_gemm_mode};
use cutlass_aot::array::{plan_array, ArrayOperand, ArrayOperands};
use cutlass_aot::gemm::plan;
use cutlass_aot::model::{Api, DType, Epilogue, Layout, MathOp, SplitK, Swizzle};
use cutlass_aot::{GemmOperands, GemmProblem, KernelInfo, MatrixShape};

const ADDR_WORKSPACE: u64 = 0x7f40_0000_0000;

/// `ops` with K split into `slices`.
fn split(mut ops: GemmOperands, slices: usize) -> GemmOperands {
    ops.split_k_slices = slices;
    ops
}

/// Planned args with a workspace of `capacity` bytes at ADDR_WORKSPACE.
fn args_with_workspace(
    info: &'static KernelInfo,
    ops: &GemmOperands,
    capacity: u64,
) -> cutlass_aot_gemm_args {
    let mut args = plan(info, ops, &H100).expect("plan");
    args.workspace = ADDR_WORKSPACE as *mut _;
    args.workspace_capacity = capacity;
    args
}

// ---------------------------------------------------------------------------------------------
// Metadata
// ---------------------------------------------------------------------------------------------

#[test]
fn mode_kernels_carry_their_math_split_k_swizzle_and_epilogue() {
    let k = kernel("gemm_f32_3xtf32_tn");
    assert_eq!(
        (k.gemm().math, k.gemm().a.element, k.api()),
        (MathOp::MultiplyAddFastF32, DType::F32, Api::Cutlass2x)
    );
    // CUTLASS's own name for a 3xTF32 kernel has no intermediate type (f32 accuracy is kept).
    assert!(
        k.name.starts_with("cutlass_tensorop_s1688gemm_128x128_32x3_tn"),
        "{}",
        k.name
    );
    assert_eq!(
        kernel("gemm_f32_multiply_add_fast_f16_tn").gemm().math,
        MathOp::MultiplyAddFastF16
    );
    assert!(kernel("gemm_f32_multiply_add_fast_bf16_tn")
        .name
        .contains("s1688bf16gemm"));
    assert!(kernel("gemm_tf32_tn").name.contains("s1688tf32gemm"));
    let nnn = kernel("gemm_f32_3xtf32_nnn");
    assert_eq!(
        (nnn.gemm().a.layout, nnn.gemm().b.layout, nnn.gemm().c.layout),
        (Layout::Column, Layout::Column, Layout::Column)
    );

    let s8 = kernel("gemm_s8_tn_s8");
    assert_eq!(
        (
            s8.gemm().a.element,
            s8.gemm().c.element,
            s8.gemm().accumulator,
            s8.epilogue.compute
        ),
        (DType::S8, DType::S8, DType::S32, DType::F32)
    );
    assert_eq!(
        (s8.gemm().math, s8.epilogue.kind),
        (MathOp::MultiplyAddSaturate, Epilogue::LinearCombinationClamp)
    );
    assert_eq!((s8.gemm().a.alignment, s8.gemm().b.alignment), (16, 16));
    let s32 = kernel("gemm_s8_tn_s32");
    assert_eq!(
        (s32.gemm().c.element, s32.epilogue.compute, s32.epilogue.kind),
        (DType::S32, DType::S32, Epilogue::LinearCombination)
    );
    assert_eq!(kernel("gemm_s8_tn_f32").epilogue.compute, DType::F32);

    assert_eq!(
        kernel("gemm_f16_tn_128x128_splitk_serial").design.split_k(),
        SplitK::Serial
    );
    let parallel = kernel("gemm_f16_tn_128x128_splitk_parallel");
    assert_eq!(parallel.design.split_k(), SplitK::Parallel);
    assert!(parallel.name.ends_with("_splitk_parallel"));
    assert!(
        parallel.split_k_reduction().is_some(),
        "a parallel kernel carries its reduction kernel"
    );
    assert_eq!(
        kernel("gemm_f16_tn_horizontal").design.as_2x().unwrap().swizzle,
        Swizzle::Horizontal
    );

    // Every 2.x kernel splits serially unless it says otherwise; 3.x ones only with stream-K.
    for k in common::gemm_registry().all() {
        let expected = match (k.api(), k.design.as_3x().map(|d| d.tile_scheduler)) {
            (Api::Cutlass2x, _) if k.rust_name.ends_with("_parallel") => SplitK::Parallel,
            (Api::Cutlass2x, _) => SplitK::Serial,
            (Api::Cutlass3x, Some(cutlass_aot::model::TileScheduler::StreamK)) => SplitK::StreamK,
            (Api::Cutlass3x, _) => SplitK::None,
        };
        assert_eq!(k.design.split_k(), expected, "{}", k.rust_name);
        assert_eq!(
            k.split_k_reduction().is_some(),
            k.design.split_k() == SplitK::Parallel,
            "{}",
            k.rust_name
        );
    }
}

#[test]
fn interleaved_int8_kernel_takes_groups_of_32() {
    let k = kernel("gemm_s8_n32t32n32_s8");
    assert_eq!(
        (k.gemm().a.layout, k.gemm().b.layout, k.gemm().c.layout),
        (
            Layout::ColumnInterleaved32,
            Layout::RowInterleaved32,
            Layout::ColumnInterleaved32
        )
    );
    assert_eq!((k.gemm().a.alignment, k.gemm().c.alignment), (16, 8));
    assert!(k.name.contains("_n32t32_"), "{}", k.name);
    // Packed: a group of 32 columns of A (m×k) is m·32 elements.
    let a = MatrixShape::packed(96, 64, Layout::ColumnInterleaved32);
    assert_eq!(
        (a.ld, a.required_len(Layout::ColumnInterleaved32)),
        (96 * 32, Some(96 * 64))
    );
    assert!(k.supports(&problem(k, 96, 64, 128)).is_ok());
    let r = reasons(k, &problem(k, 96, 48, 128));
    assert_contains(
        &r,
        "C/D has 48 columns (interleaved in groups of 32), not a multiple of the interleave 32",
    );
    let prepared = k
        .prepare(&plan(k, &operands(k, 256, 128, 256), &H100).unwrap())
        .unwrap();
    assert_eq!(prepared.launch.workspace_bytes, 0);
}

#[test]
fn discovery_filters_on_split_k_and_math() {
    let p = problem(kernel("gemm_f32_3xtf32_tn"), 4096, 4096, 4096).on_compute_capability(90);
    let fast: Vec<_> = common::gemm_registry()
        .get_kernels(&p, |k| k.gemm().math == MathOp::MultiplyAddFastF32)
        .map(|k| k.rust_name)
        .collect();
    // 3xTF32: CUTLASS's sm80 mainloop, and the Hopper TF32 kernel fed split operands.
    assert_eq!(fast, ["f32_3xtf32_sm90_tn", "gemm_f32_3xtf32_tn"]);
    let f16 = kernel("gemm_f16_tn");
    let parallel: Vec<_> = common::gemm_registry()
        .get_kernels(&problem(f16, 1024, 1024, 32768).split_k(8), |k| {
            k.design.split_k() == SplitK::Parallel
        })
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(parallel, ["gemm_f16_tn_128x128_splitk_parallel"]);
}

// ---------------------------------------------------------------------------------------------
// supports(): split-K and array rules
// ---------------------------------------------------------------------------------------------

#[test]
fn supports_split_k_within_k_tiles() {
    let k = kernel("gemm_f16_tn_128x128_splitk_serial"); // tile K 64
    assert!(k.supports(&problem(k, 512, 512, 16384).split_k(16)).is_ok());
    assert!(k.supports(&problem(k, 512, 512, 640).split_k(10)).is_ok());
    let r = reasons(k, &problem(k, 512, 512, 640).split_k(11));
    assert_contains(&r, "11 split-K slices exceed K's 10 tile(s) of 64 (k = 640)");
    assert_contains(&r, "use at most 10");
    assert_contains(
        &reasons(k, &problem(k, 512, 512, 640).split_k(0)),
        "split-K slices must be at least 1",
    );
}

#[test]
fn supports_refuses_split_k_with_batches_and_on_persistent_3x_kernels() {
    let k = kernel("gemm_f16_tn_128x128_splitk_serial");
    let r = reasons(k, &problem(k, 512, 512, 4096).batched(4).split_k(2));
    assert_contains(
        &r,
        "split-K (2 slices) cannot be combined with a batch of 4 GEMMs",
    );
    let persistent = kernel("f16_sm90_128x128x64_2x1x1_cooperative");
    let r = reasons(persistent, &problem(persistent, 512, 512, 4096).split_k(4));
    assert_contains(&r, "this kernel cannot split K (persistent scheduler)");
    let streamk = kernel("f16_sm90_128x128x64_streamk");
    assert!(streamk
        .supports(&problem(streamk, 512, 512, 4096).split_k(4))
        .is_ok());
}

#[test]
fn supports_refuses_serial_split_k_into_s8_and_batches_on_parallel_kernels() {
    let s8 = kernel("gemm_s8_tn_s8");
    assert!(s8.supports(&problem(s8, 256, 256, 1024)).is_ok());
    let r = reasons(s8, &problem(s8, 256, 256, 1024).split_k(2));
    assert_contains(&r, "serial split-K would clamp the running sum to s8");
    let s32 = kernel("gemm_s8_tn_s32");
    assert!(s32.supports(&problem(s32, 256, 256, 1024).split_k(2)).is_ok());

    let parallel = kernel("gemm_f16_tn_128x128_splitk_parallel");
    assert_contains(
        &reasons(parallel, &problem(parallel, 256, 256, 1024).batched(3)),
        "a parallel split-K kernel reduces one GEMM, not a batch of 3",
    );
    assert_contains(
        &reasons(parallel, &problem(parallel, 256, 256, 1024).pointer_arrays(3)),
        "a parallel split-K kernel reduces one GEMM",
    );
}

#[test]
fn supports_refuses_int8_with_k_off_the_16_element_alignment() {
    let s8 = kernel("gemm_s8_tn_s32");
    let r = reasons(s8, &problem(s8, 256, 256, 1000));
    assert_contains(
        &r,
        "A has 1000 columns (its contiguous extent), not a multiple of the kernel's alignment 16",
    );
    assert_contains(
        &r,
        "B has 1000 rows (its contiguous extent), not a multiple of the kernel's alignment 16",
    );
}

#[test]
fn supports_refuses_array_mode_on_3x_kernels() {
    let k = kernel("f16_sm90_128x128x64_2x1x1_cooperative");
    assert_contains(
        &reasons(k, &problem(k, 256, 256, 256).pointer_arrays(4)),
        "array mode (pointer arrays) needs a CUTLASS 2.x kernel",
    );
    let two = kernel("gemm_f16_tn");
    assert!(two
        .supports(&problem(two, 256, 256, 256).pointer_arrays(4))
        .is_ok());
}

// ---------------------------------------------------------------------------------------------
// plan and prepare: serial and parallel split-K
// ---------------------------------------------------------------------------------------------

#[test]
fn plan_passes_split_k_slices_and_refuses_too_many() {
    let k = kernel("gemm_f16_tn_128x128_splitk_serial");
    let args = plan(k, &split(operands(k, 512, 512, 4096), 8), &H100).unwrap();
    assert_eq!(
        (args.mode, args.batch_count, args.split_k_slices),
        (cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_GEMM as i32, 1, 8)
    );
    let message = invalid_message(plan(k, &split(operands(k, 512, 512, 256), 8), &H100));
    assert_contains(&message, "8 split-K slices exceed K's 4 tile(s)");
}

#[test]
fn serial_split_k_puts_slices_in_grid_z_with_zeroed_semaphores() {
    let k = kernel("gemm_f16_tn_128x128_splitk_serial");
    let ops = split(operands(k, 1000, 600, 8192), 4);
    let tiles = 1000usize.div_ceil(128) * 600usize.div_ceil(128);
    let semaphores = (4 * tiles) as u64;
    assert_eq!(
        k.workspace_bytes(&plan(k, &ops, &H100).unwrap()).unwrap(),
        semaphores
    );
    // Too small a workspace is refused with the size needed.
    let message = invalid_message(k.prepare(&args_with_workspace(k, &ops, semaphores - 4)));
    assert_contains(&message, &format!("needs {semaphores} bytes of workspace"));
    let prepared = k.prepare(&args_with_workspace(k, &ops, semaphores)).unwrap();
    let launch = &prepared.launch;
    assert_eq!(launch.grid[2], 4, "one grid z-slice per split-K slice");
    assert!(
        (launch.grid[0] * launch.grid[1]) as usize >= tiles,
        "a CTA per tile and slice"
    );
    assert_eq!(launch.workspace_bytes, semaphores);
    assert_eq!(
        launch.fill_count, 1,
        "the semaphores are zeroed before every launch"
    );
    let fill = launch.fills[0];
    assert_eq!(
        (fill.offset, fill.count, fill.element_bytes, fill.value),
        (0, semaphores, 1, 0)
    );
    // Without split-K no workspace at all.
    assert_eq!(
        k.workspace_bytes(&plan(k, &operands(k, 1000, 600, 8192), &H100).unwrap())
            .unwrap(),
        0
    );
}

#[test]
fn parallel_split_k_writes_partials_to_the_workspace_and_reduces_them() {
    let k = kernel("gemm_f16_tn_128x128_splitk_parallel");
    let (m, n, slices) = (1000usize, 600usize, 4usize);
    let mut ops = split(operands(k, m, n, 8192), slices);
    ops.c = Some(operand(
        MatrixShape::packed(m, n, Layout::Row),
        Layout::Row,
        ADDR_C,
    ));
    ops.beta = 0.5;
    let partials = (4 * m * n * slices) as u64; // f32 partial sums
    let args = args_with_workspace(k, &ops, partials);
    assert_eq!(k.workspace_bytes(&args).unwrap(), partials);
    let gemm = k.prepare(&args).unwrap();
    assert_eq!(gemm.launch.grid[2], slices as u32);
    assert_eq!(gemm.launch.fill_count, 0, "partial sums need no clearing");
    // The GEMM writes the workspace, never D: D's address is not in its Params; the workspace is.
    let params = gemm.params();
    assert!(contains(params, &ADDR_WORKSPACE.to_le_bytes()));
    assert!(!contains(params, &ADDR_D.to_le_bytes()));
    assert!(!contains(params, &ADDR_C.to_le_bytes()));

    let reduction = k.split_k_reduction().unwrap();
    let prepare = reduction.prepare.expect("built with nvcc");
    let mut launch = cutlass_aot::abi::cutlass_aot_launch::default();
    let mut buffer = [0u8; 1024];
    let status = unsafe { prepare(&args, buffer.as_mut_ptr().cast(), buffer.len(), &mut launch) };
    assert_eq!(status, 0);
    let reduce_params = &buffer[..launch.params_bytes as usize];
    // The reduction reads the workspace and C and writes D, with the real alpha and beta.
    for address in [ADDR_WORKSPACE, ADDR_C, ADDR_D] {
        assert!(contains(reduce_params, &address.to_le_bytes()), "{address:#x}");
    }
    assert!(contains(reduce_params, &0.5f32.to_le_bytes()), "beta 0.5 in f32");
    // Partition count = slices, stride = m·n.
    assert!(contains(reduce_params, &(slices as i32).to_le_bytes()));
    // 4 rows × 32·4 columns per CTA (4 f32 partials per access).
    assert_eq!((launch.block[0], launch.block[1]), (32, 4));
    assert_eq!(
        (launch.grid[0], launch.grid[1]),
        (m.div_ceil(4) as u32, n.div_ceil(128) as u32)
    );
    assert_eq!(launch.shared_mem_bytes, 0);
    // Too small a workspace is refused by the reduction too.
    let mut small = args;
    small.workspace_capacity = partials - 1;
    let status = unsafe { prepare(&small, buffer.as_mut_ptr().cast(), buffer.len(), &mut launch) };
    assert_eq!(
        status,
        cutlass_aot::abi::cutlass_aot_status::CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL as i32
    );
}

#[test]
fn parallel_split_k_reduces_only_the_slices_cutlass_made() {
    // k = 256 in 4 slices of one 64-wide tile each; CUTLASS rounds a slice up to its K alignment,
    // so the reduction must read exactly the partitions the GEMM's grid has.
    let k = kernel("gemm_f16_tn_128x128_splitk_parallel");
    let args = args_with_workspace(k, &split(operands(k, 256, 256, 256), 4), 1 << 24);
    let gemm = k.prepare(&args).unwrap();
    assert_eq!(gemm.launch.grid[2], 4);
    assert_eq!(gemm.launch.workspace_bytes, 4 * 256 * 256 * 4);
}

#[test]
fn stream_k_kernels_split_k_in_their_scheduler() {
    let k = kernel("f16_sm90_128x128x64_streamk");
    let ops = split(operands(k, 512, 512, 16384), 8);
    let args = plan(k, &ops, &H100).unwrap();
    assert_eq!(args.split_k_slices, 8);
    let split_bytes = k.workspace_bytes(&args).unwrap();
    assert!(
        split_bytes > 0,
        "split-K partials live in the scheduler's workspace"
    );
}

#[test]
fn column_major_c_2x_kernels_prepare_the_transposed_problem() {
    // CUTLASS builds a column-major-C GEMM as the row-major kernel of D^T = B^T A^T: the grid
    // covers N (600) along the M tiles and M (1000) along the N tiles.
    let k = kernel("gemm_f32_3xtf32_nnn");
    let prepared = k
        .prepare(&plan(k, &operands(k, 1000, 600, 256), &H100).unwrap())
        .unwrap();
    let [x, y, _] = prepared.launch.grid;
    let tiles = 600usize.div_ceil(128) * 1000usize.div_ceil(128);
    assert!((x * y) as usize >= tiles, "grid {x}x{y} covers {tiles} tiles");
    // And a problem whose transposed shape is off the alignment is refused by CUTLASS (m = 1001:
    // column-major C's contiguous extent).
    assert!(k.supports(&problem(k, 1001, 600, 256)).is_err());
}

// ---------------------------------------------------------------------------------------------
// Array mode
// ---------------------------------------------------------------------------------------------

const PTRS_A: u64 = 0x7f50_0000_0000;
const PTRS_B: u64 = 0x7f50_0000_1000;
const PTRS_D: u64 = 0x7f50_0000_2000;

fn array_operand<'h>(
    rows: usize,
    cols: usize,
    layout: Layout,
    pointers: u64,
    count: usize,
    addresses: Option<&'h [u64]>,
) -> ArrayOperand<'h> {
    ArrayOperand {
        pointers,
        count,
        shape: MatrixShape::packed(rows, cols, layout),
        addresses,
    }
}

fn array_ops<'h>(
    info: &KernelInfo,
    (m, n, k): (usize, usize, usize),
    count: usize,
    addresses: Option<&'h [u64]>,
) -> ArrayOperands<'h> {
    ArrayOperands {
        batch_count: count,
        a: array_operand(m, k, info.gemm().a.layout, PTRS_A, count, addresses),
        b: array_operand(k, n, info.gemm().b.layout, PTRS_B, count, None),
        c: None,
        d: array_operand(m, n, info.gemm().c.layout, PTRS_D, count, None),
        alpha: 1.0,
        beta: 0.0,
    }
}

#[test]
fn plan_array_builds_array_mode_args() {
    let k = kernel("gemm_f16_tn_batched");
    let args = plan_array(k, &array_ops(k, (200, 136, 64), 7, None), &H100).unwrap();
    assert_eq!(args.mode, cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_ARRAY as i32);
    assert_eq!((args.m, args.n, args.k, args.batch_count), (200, 136, 64, 7));
    assert_eq!(
        (args.a as u64, args.b as u64, args.d as u64),
        (PTRS_A, PTRS_B, PTRS_D)
    );
    assert_eq!(
        args.c as u64, PTRS_D,
        "without C, D's array is passed as C (beta 0: not read)"
    );
    assert_eq!((args.lda, args.ldb, args.ldd), (64, 64, 136));
    let prepared = k.prepare(&args).unwrap();
    assert_eq!(
        prepared.launch.grid[2], 7,
        "one grid z-slice per GEMM of the array"
    );
    assert_eq!(prepared.launch.workspace_bytes, 0);
}

#[test]
fn plan_array_refuses_short_or_misaligned_arrays() {
    let k = kernel("gemm_f16_tn_batched");
    let mut ops = array_ops(k, (200, 136, 64), 7, None);
    ops.b.count = 6;
    assert_contains(
        &invalid_message(plan_array(k, &ops, &H100)),
        "B: the pointer array holds 6 pointers but the batch count is 7",
    );
    let mut ops = array_ops(k, (200, 136, 64), 7, None);
    ops.d.pointers += 4;
    assert_contains(
        &invalid_message(plan_array(k, &ops, &H100)),
        "is not a non-null, 8-byte aligned device address",
    );
    let addresses = [ADDR_A, ADDR_A + 2 * 64, ADDR_A + 2 * 64 * 200 + 2];
    let ops = array_ops(k, (200, 136, 64), 3, Some(&addresses));
    assert_contains(
        &invalid_message(plan_array(k, &ops, &H100)),
        "A: matrix 2 starts at address",
    );
    let mut ops = array_ops(k, (200, 136, 64), 3, None);
    ops.a.shape.ld = 60;
    assert_contains(
        &invalid_message(plan_array(k, &ops, &H100)),
        "leading dimension of A is 60 but its row-major rows/columns hold 64 elements; ld must be at least 64",
    );
    let ops = array_ops(k, (200, 136, 60), 3, None);
    assert_contains(
        &invalid_message(plan_array(k, &ops, &H100)),
        "not a multiple of the kernel's alignment 8",
    );
    let mut ops = array_ops(k, (200, 136, 64), 3, None);
    ops.batch_count = 0;
    assert!(plan_array(k, &ops, &H100).is_err());
    let k3 = kernel("f16_sm90_128x128x64_2x1x1_cooperative");
    assert_contains(
        &invalid_message(plan_array(k3, &array_ops(k3, (256, 256, 64), 2, None), &H100)),
        "array mode (pointer arrays) needs a CUTLASS 2.x kernel",
    );
    let parallel = kernel("gemm_f16_tn_128x128_splitk_parallel");
    assert_contains(
        &invalid_message(plan_array(
            parallel,
            &array_ops(parallel, (256, 256, 64), 2, None),
            &H100,
        )),
        "reduces one GEMM",
    );
}

// ---------------------------------------------------------------------------------------------
// int8 and fast math: Params
// ---------------------------------------------------------------------------------------------

#[test]
fn int8_and_fast_math_kernels_prepare_on_an_h100() {
    for name in [
        "gemm_s8_tn_s8",
        "gemm_s8_tn_s32",
        "gemm_s8_tn_f32",
        "gemm_f32_3xtf32_tt",
        "gemm_f32_3xtf32_tn",
        "gemm_f32_3xtf32_nnn",
        "gemm_f32_multiply_add_fast_f16_tn",
        "gemm_f32_multiply_add_fast_bf16_tn",
        "gemm_f16_tn_horizontal",
    ] {
        let k = kernel(name);
        let prepared = k
            .prepare(&plan(k, &operands(k, 512, 256, 1024), &H100).unwrap())
            .unwrap();
        let l = prepared.launch;
        assert!(
            l.shared_mem_bytes <= H100.max_shared_memory_per_block_optin,
            "{name}"
        );
        assert_eq!(l.workspace_bytes, 0, "{name}");
        assert!(l.block[0] >= 128, "{name}");
    }
    // The horizontal swizzle walks N along grid x: 256 / 256 = 1 column of tiles, 512 / 128 = 4 rows.
    let h = kernel("gemm_f16_tn_horizontal");
    let l = h
        .prepare(&plan(h, &operands(h, 512, 256, 1024), &H100).unwrap())
        .unwrap()
        .launch;
    assert_eq!((l.grid[0], l.grid[1], l.grid[2]), (1, 4, 1));
}

#[test]
fn integer_epilogues_refuse_fractional_scalars_but_f32_ones_take_them() {
    let s32 = kernel("gemm_s8_tn_s32");
    let mut ops = operands(s32, 256, 256, 256);
    ops.alpha = 0.5;
    assert_contains(&invalid_message(plan(s32, &ops, &H100)), "alpha = 0.5");
    let s8 = kernel("gemm_s8_tn_s8");
    let mut ops = operands(s8, 256, 256, 256);
    ops.alpha = 0.5;
    assert!(plan(s8, &ops, &H100).is_ok(), "the s8-out kernel scales in f32");
    let _ = (ADDR_A, ADDR_B);
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn dispatch_keeps_f32_accuracy_and_skips_parallel_kernels_without_slices() {
    use cutlass_aot::dispatch;
    let f32_problem = GemmProblem::new(
        (4096, 4096, 4096),
        (DType::F32, DType::F32, DType::F32),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .on_compute_capability(80);
    let a100 = common::A100;
    let none = &cutlass_aot::select::NO_TABLE;
    let picked = dispatch::select(
        common::gemm_registry(),
        none,
        &f32_problem,
        &a100,
        Default::default(),
    )
    .unwrap()
    .kernel;
    assert!(
        !matches!(
            picked.gemm().math,
            MathOp::MultiplyAddFastF16 | MathOp::MultiplyAddFastBf16
        ),
        "dispatch picked {} for an f32 problem",
        picked.rust_name
    );
    let f16_problem = GemmProblem::new(
        (1024, 1024, 65536),
        (DType::F16, DType::F16, DType::F16),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .on_compute_capability(80);
    let picked = dispatch::select(
        common::gemm_registry(),
        none,
        &f16_problem,
        &a100,
        Default::default(),
    )
    .unwrap();
    // A parallel split-K kernel only ever runs with slices (without, it only adds its reduction).
    if picked.kernel.design.split_k() == SplitK::Parallel {
        assert!(
            picked.split_k >= 2,
            "{} at {} slices",
            picked.kernel.rust_name,
            picked.split_k
        );
    }
}
