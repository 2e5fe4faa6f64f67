//! CPU-only integration tests of the runtime: registry and discovery, `supports`, the argument
//! checks of `gemm::plan`, kernel Params built on the host by `KernelInfo::prepare` (CUTLASS's own
//! host code, no GPU touched), matrix geometry, device discovery without a driver and the
//! verification helpers. Every expected value below follows from `kernel_manifest.yaml` or from
//! CUTLASS's source, not from running the code under test.
//!
//! These tests cover the CUTLASS 2.x kernels (the manifest's arch-80 entries, first in the
//! registry); the CUTLASS 3.x (Hopper) kernels that follow them are tested in `runtime_3x.rs`.

mod common;
use common::*;

use std::collections::HashSet;

use cutlass_aot::abi::cutlass_aot_gemm_mode;
use cutlass_aot::device::{self, DeviceProps};
use cutlass_aot::gemm::{plan, PARAMS_CAPACITY};
use cutlass_aot::model::{Api, DType, Layout, MathOp, OpClass, Shape3, Swizzle};
use cutlass_aot::verify::{self, HostMatrix};
use cutlass_aot::{
    kernels, Error, GemmKernel, GemmOperands, GemmProblem, KernelInfo, MatrixShape, Operand, Prepared,
    Unsupported,
};

/// The CUTLASS 2.x kernels (arch-80 entries), in manifest order: the f16 family (line 12), the
/// bf16 family (line 26), then gemm_f16_tn_batched (line 39), the TF32 family, f64 and SIMT. A
/// family expands in field order (layout_a, then layout_b).
const MANIFEST_ORDER_2X: [&str; 13] = [
    "gemm_f16_tt",
    "gemm_f16_tn",
    "gemm_f16_nt",
    "gemm_f16_nn",
    "gemm_bf16_tt",
    "gemm_bf16_tn",
    "gemm_bf16_nt",
    "gemm_bf16_nn",
    "gemm_f16_tn_batched",
    "gemm_tf32_tt",
    "gemm_tf32_tn",
    "gemm_f64_tt",
    "gemm_f32_simt_tt",
];

/// The 2.x kernels at the end of the manifest: 3xTF32, fast f16/bf16, int8, split-K, horizontal.
const MANIFEST_ORDER_MODES: [&str; 12] = [
    "gemm_f32_3xtf32_tt",
    "gemm_f32_3xtf32_tn",
    "gemm_f32_3xtf32_nnn",
    "gemm_f32_multiply_add_fast_f16_tn",
    "gemm_f32_multiply_add_fast_bf16_tn",
    "gemm_s8_tn_s8",
    "gemm_s8_tn_s32",
    "gemm_s8_tn_f32",
    "gemm_s8_n32t32n32_s8",
    "gemm_f16_tn_128x128_splitk_serial",
    "gemm_f16_tn_128x128_splitk_parallel",
    "gemm_f16_tn_horizontal",
];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The CUTLASS 2.x kernels of the registry (its first `MANIFEST_ORDER_2X.len()` entries).
fn kernels_2x() -> &'static [&'static KernelInfo] {
    &common::gemm_registry().all()[..MANIFEST_ORDER_2X.len()]
}

/// Makes an operand a batch of `count` packed matrices (stride = one matrix), resizing its buffer.
fn batched(op: Operand, layout: Layout, count: usize) -> Operand {
    let shape = MatrixShape {
        batch_count: count,
        batch_stride: op.shape.rows * op.shape.cols,
        ..op.shape
    };
    operand(shape, layout, op.address)
}

/// A problem matching `info`'s types and layouts.
fn problem_for(info: &KernelInfo, m: usize, n: usize, k: usize) -> GemmProblem {
    GemmProblem::new(
        (m, n, k),
        (
            info.gemm().a.element,
            info.gemm().b.element,
            info.gemm().c.element,
        ),
        (info.gemm().a.layout, info.gemm().b.layout, info.gemm().c.layout),
    )
}

/// `plan` then `prepare`, both expected to succeed.
fn prepare_ok(info: &'static KernelInfo, ops: &GemmOperands) -> Prepared {
    let args = plan(info, ops, &H100).unwrap_or_else(|e| panic!("plan failed: {e}"));
    info.prepare(&args)
        .unwrap_or_else(|e| panic!("prepare failed: {e}"))
}

/// The message of an `InvalidArgument` error for `info`; panics on anything else.
fn invalid_message<T>(info: &KernelInfo, result: Result<T, Error>) -> String {
    match result {
        Err(Error::InvalidArgument { kernel, message }) => {
            assert_eq!(kernel, info.name, "the error names the wrong kernel");
            message
        }
        Err(other) => panic!("expected InvalidArgument from {}, got {other:?}", info.rust_name),
        Ok(_) => panic!("expected InvalidArgument from {}, got Ok", info.rust_name),
    }
}

fn assert_contains(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "expected {needle:?} in:\n  {haystack}");
}

/// `plan` must reject `ops` with an InvalidArgument mentioning every one of `needles`.
fn assert_plan_rejects(info: &'static KernelInfo, ops: &GemmOperands, needles: &[&str]) {
    let message = invalid_message(info, plan(info, ops, &H100));
    for needle in needles {
        assert_contains(&message, needle);
    }
}

/// The reasons `info` gives for not supporting `problem` (panics if it does support it).
fn unsupported(info: &KernelInfo, problem: &GemmProblem) -> Unsupported {
    match info.supports(problem) {
        Ok(()) => panic!("{} unexpectedly supports {problem:?}", info.rust_name),
        Err(u) => {
            assert_eq!(u.kernel, info.name);
            u
        }
    }
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn ceil_div(a: u32, b: u32) -> u32 {
    a.div_ceil(b)
}

/// Grid of CUTLASS's `GemmIdentityThreadblockSwizzle<8>` (threadblock_swizzle.h):
/// tiled shape (ceil(m/TM), ceil(n/TN), batch); log_tile 3 if tn >= 6, 2 if tn >= 3, 1 if tn >= 2;
/// grid = (tm << log_tile, ceil(tn / (1 << log_tile)), batch).
fn identity8_grid(tile: Shape3, m: u32, n: u32, batch: u32) -> [u32; 3] {
    let (tm, tn) = (ceil_div(m, tile.m), ceil_div(n, tile.n));
    let log_tile = match tn {
        6.. => 3,
        3.. => 2,
        2 => 1,
        _ => 0,
    };
    let t = 1 << log_tile;
    [tm * t, ceil_div(tn, t), batch]
}

/// Grid of CUTLASS's `GemmBatchedIdentityThreadblockSwizzle`: (tm, tn, batch % 2^16), no swizzle.
fn batched_grid(tile: Shape3, m: u32, n: u32, batch: u32) -> [u32; 3] {
    [ceil_div(m, tile.m), ceil_div(n, tile.n), batch % (1 << 16)]
}

/// Lower bound of a multistage mainloop's shared memory: stages × (A tile + B tile) in bytes.
fn mainloop_smem(info: &KernelInfo) -> u32 {
    let t = info.tile();
    info.design.stages() * (t.m * t.k + t.k * t.n) * info.gemm().a.element.bits() / 8
}

fn threads(info: &KernelInfo) -> u32 {
    info.design.as_2x().expect("a 2.x kernel").threads()
}

// ---------------------------------------------------------------------------------------------
// 1. Registry and discovery
// ---------------------------------------------------------------------------------------------

#[test]
fn registry_lists_the_13_2x_kernels_first_with_unique_names() {
    let all = common::gemm_registry().all();
    // The 13 arch-80 kernels first, in manifest order; the arch-90 (CUTLASS 3.x) ones after them
    // (their list is checked in runtime_3x.rs); then the 2.x kernels of every mode and number
    // format (checked in modes.rs).
    assert!(all.len() > 13, "the manifest also has CUTLASS 3.x kernels");
    let first_modes = all
        .iter()
        .position(|k| k.rust_name == MANIFEST_ORDER_MODES[0])
        .expect("the mode kernels are in the registry");
    let end_modes = first_modes + MANIFEST_ORDER_MODES.len();
    let prefix: Vec<_> = kernels_2x().iter().map(|k| k.rust_name).collect();
    assert_eq!(
        prefix.iter().copied().collect::<HashSet<_>>(),
        HashSet::from(MANIFEST_ORDER_2X),
        "the first 13 kernels are the arch-80 ones"
    );
    assert!(kernels_2x().iter().all(|k| k.api() == Api::Cutlass2x));
    assert!(
        all[13..first_modes].iter().all(|k| k.api() == Api::Cutlass3x),
        "2.x kernels come first"
    );
    let modes: Vec<_> = all[first_modes..end_modes].iter().map(|k| k.rust_name).collect();
    assert_eq!(
        modes, MANIFEST_ORDER_MODES,
        "the 2.x modes follow, in manifest order"
    );
    // Then the 2.x kernels of arch 90 (f64 on Hopper's DMMA: 4 layouts x 4 tiles, and 4 layouts x 2
    // tiles with parallel split-K) and the SIMT f32 kernels of the other layouts, the 128x256 tile
    // and the 64x64 tile; the fused kernels come last (checked in fusion.rs).
    let hopper_f64 = all[end_modes..]
        .iter()
        .take_while(|k| k.api() == Api::Cutlass2x && k.min_compute_capability == 90)
        .count();
    assert_eq!(hopper_f64, 24, "the f64 kernels of arch 90 follow the modes");
    let simt = all[end_modes + hopper_f64..]
        .iter()
        .take_while(|k| k.design.opclass() == OpClass::Simt)
        .count();
    assert_eq!(simt, 11, "the SIMT f32 kernels follow");
    let small = all[end_modes + hopper_f64 + simt..]
        .iter()
        .take_while(|k| k.is_plain() && k.tile().m == 64 && k.api() == Api::Cutlass2x)
        .count();
    assert_eq!(small, 8, "then the 64x64 f16/bf16 kernels");
    let end_plain = end_modes + hopper_f64 + simt + small;
    assert!(all[end_plain..].iter().all(|k| !k.is_plain()));
    assert!(all[..end_plain].iter().all(|k| k.is_plain()));
    // Names are unique across the whole registry.
    let rust_names: Vec<_> = all.iter().map(|k| k.rust_name).collect();
    let names: HashSet<_> = all.iter().map(|k| k.name).collect();
    assert_eq!(names.len(), all.len(), "library names are not unique");
    let rust: HashSet<_> = rust_names.iter().collect();
    assert_eq!(rust.len(), all.len(), "rust names are not unique");
    // No library name is also some kernel's rust name (by_name takes either).
    assert!(names.iter().all(|n| !rust_names.contains(n)));
    // `Registry::all` is documented as "every kernel, in manifest order".
    assert_eq!(prefix, MANIFEST_ORDER_2X, "registry order is not manifest order");
}

#[test]
fn registry_by_name_finds_library_and_rust_names() {
    let info = &kernels::gemm_f16_tn::INFO;
    assert_eq!(
        info.name,
        "cutlass_tensorop_f16_s16816gemm_f16_128x256_64x3_tnt_align8"
    );
    let by_rust = common::gemm_registry().by_name("gemm_f16_tn").unwrap();
    let by_lib = common::gemm_registry()
        .by_name("cutlass_tensorop_f16_s16816gemm_f16_128x256_64x3_tnt_align8")
        .unwrap();
    assert!(std::ptr::eq(by_rust, info));
    assert!(std::ptr::eq(by_lib, info));
    // The typed kernel points at the same static.
    assert!(std::ptr::eq(kernels::gemm_f16_tn::Kernel::info(), info));
    // Every kernel round-trips through both names.
    for k in common::gemm_registry().all() {
        assert!(std::ptr::eq(common::gemm_registry().by_name(k.name).unwrap(), *k));
        assert!(std::ptr::eq(
            common::gemm_registry().by_name(k.rust_name).unwrap(),
            *k
        ));
    }
    assert!(common::gemm_registry().by_name("gemm_f16_xx").is_none());
    assert!(common::gemm_registry().by_name("").is_none());
    // Exact match only: a prefix of a name is not a name.
    assert!(common::gemm_registry().by_name("gemm_f16").is_none());
}

#[test]
fn registry_filter_by_metadata() {
    // Among the plain 2.x kernels (runtime_3x.rs filters the 3.x ones, fusion.rs the fused ones).
    let names = |pred: &dyn Fn(&KernelInfo) -> bool| -> Vec<&str> {
        common::gemm_registry()
            .filter(|k| k.api() == Api::Cutlass2x && k.is_plain() && pred(k))
            .map(|k| k.rust_name)
            .collect()
    };
    assert_eq!(
        names(&|k| k.gemm().a.element == DType::Bf16),
        [
            "gemm_bf16_tt",
            "gemm_bf16_tn",
            "gemm_bf16_nt",
            "gemm_bf16_nn",
            "gemm_bf16_tt_64x64",
            "gemm_bf16_tn_64x64",
            "gemm_bf16_nt_64x64",
            "gemm_bf16_nn_64x64"
        ]
    );
    assert_eq!(
        names(&|k| k.gemm().a.element == DType::F16),
        [
            "gemm_f16_tt",
            "gemm_f16_tn",
            "gemm_f16_nt",
            "gemm_f16_nn",
            "gemm_f16_tn_batched",
            "gemm_f16_tn_128x128_splitk_serial",
            "gemm_f16_tn_128x128_splitk_parallel",
            "gemm_f16_tn_horizontal",
            "gemm_f16_tt_64x64",
            "gemm_f16_tn_64x64",
            "gemm_f16_nt_64x64",
            "gemm_f16_nn_64x64"
        ]
    );
    let f64_on = |cc: u32| names(&|k| k.gemm().a.element == DType::F64 && k.min_compute_capability == cc);
    assert_eq!(f64_on(80), ["gemm_f64_tt"]);
    let hopper = f64_on(90);
    assert_eq!(hopper.len(), 24);
    assert!(hopper
        .iter()
        .all(|n| n.starts_with("gemm_f64_") && n.contains("_sm90_")));
    assert_eq!(
        names(&|k| k.design.opclass() == OpClass::Simt),
        [
            "gemm_f32_simt_tt",
            "gemm_f32_simt_nt",
            "gemm_f32_simt_nn",
            "gemm_f32_simt_tn",
            "gemm_f32_simt_tt_128x256",
            "gemm_f32_simt_nt_128x256",
            "gemm_f32_simt_nn_128x256",
            "gemm_f32_simt_tn_128x256",
            "gemm_f32_simt_tt_64x64",
            "gemm_f32_simt_tn_64x64",
            "gemm_f32_simt_nt_64x64",
            "gemm_f32_simt_nn_64x64"
        ]
    );
    assert_eq!(
        names(&|k| k.design.as_2x().is_some_and(|d| d.swizzle == Swizzle::Batched)),
        ["gemm_f16_tn_batched"]
    );
    assert_eq!(
        names(&|k| k.gemm().a.element == DType::F32
            && k.design.opclass() == OpClass::TensorOp
            && k.gemm().math == MathOp::MultiplyAdd),
        ["gemm_tf32_tt", "gemm_tf32_tn"]
    );
    assert_eq!(
        names(&|k| k.gemm().c.layout == Layout::Column),
        ["gemm_f32_3xtf32_nnn"]
    );
    assert_eq!(
        names(&|k| k.gemm().c.layout == Layout::ColumnInterleaved32),
        ["gemm_s8_n32t32n32_s8"]
    );
    assert_eq!(
        names(&|_| true).len(),
        13 + MANIFEST_ORDER_MODES.len() + hopper.len() + 11 + 8,
        "the 13 first, the modes, Hopper's f64, 11 SIMT f32 and 8 64x64 f16/bf16 kernels after them"
    );
    // Besides it, only the transposed small-M Hopper kernels have a column-major C.
    assert!(common::gemm_registry()
        .filter(|k| k.gemm().c.layout == Layout::Column && k.api() == Api::Cutlass3x)
        .all(|k| k.rust_name.ends_with("_streamk_tnn")));
}

#[test]
fn get_kernels_for_a_4096_cubed_f16_tn_problem() {
    // On an A100 (8.0): only 2.x kernels run.
    let problem = GemmProblem::new(
        (4096, 4096, 4096),
        (DType::F16, DType::F16, DType::F16),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .on_compute_capability(80);
    let found: HashSet<_> = common::gemm_registry()
        .get_kernels(&problem, |_| true)
        .map(|k| k.rust_name)
        .collect();
    // The batched, split-K, horizontal and 64x64 kernels are also f16 row × column → row with
    // alignment 8: they run it too.
    assert_eq!(
        found,
        HashSet::from([
            "gemm_f16_tn",
            "gemm_f16_tn_batched",
            "gemm_f16_tn_128x128_splitk_serial",
            "gemm_f16_tn_128x128_splitk_parallel",
            "gemm_f16_tn_horizontal",
            "gemm_f16_tn_64x64"
        ])
    );
    // On an H100 (9.0) the f16 CUTLASS 3.x kernels (all row × column → row, alignment 8) join
    // them.
    let hopper = problem.clone().on_compute_capability(90);
    let found_3x: Vec<_> = common::gemm_registry()
        .get_kernels(&hopper, |k| k.api() == Api::Cutlass3x)
        .map(|k| k.rust_name)
        .collect();
    let f16_3x: Vec<_> = common::gemm_registry()
        .filter(|k| {
            k.api() == Api::Cutlass3x
                && k.is_plain()
                && k.gemm().a.element == DType::F16
                && k.gemm().b.layout == Layout::Column
                && k.gemm().c.layout == Layout::Row
        })
        .map(|k| k.rust_name)
        .collect();
    assert!(!found_3x.is_empty());
    assert_eq!(found_3x, f16_3x);
    assert!(
        found_3x.iter().all(|n| n.starts_with("f16_sm90_")),
        "{found_3x:?}"
    );
    assert_eq!(
        common::gemm_registry()
            .get_kernels(&hopper, |k| k.api() == Api::Cutlass2x)
            .count(),
        found.len()
    );

    // The metadata predicate narrows the set.
    let identity: Vec<_> = common::gemm_registry()
        .get_kernels(&problem, |k| {
            k.design.as_2x().is_some_and(|d| d.swizzle == Swizzle::Identity8)
        })
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(
        identity,
        [
            "gemm_f16_tn",
            "gemm_f16_tn_128x128_splitk_serial",
            "gemm_f16_tn_128x128_splitk_parallel",
            "gemm_f16_tn_64x64"
        ]
    );
    let big_tiles: Vec<_> = common::gemm_registry()
        .get_kernels(&problem, |k| k.tile().n >= 256)
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(big_tiles, ["gemm_f16_tn", "gemm_f16_tn_horizontal"]);

    // On a Turing device (7.5) nothing runs it.
    let turing = problem.clone().on_compute_capability(75);
    assert_eq!(common::gemm_registry().get_kernels(&turing, |_| true).count(), 0);
    // An extent no f16 kernel can read in 8-element vectors: nothing runs it either, on any device.
    let odd = GemmProblem {
        k: 4095,
        compute_capability: None,
        ..problem
    };
    assert_eq!(common::gemm_registry().get_kernels(&odd, |_| true).count(), 0);
}

#[test]
fn get_kernels_f64_and_f32_problems() {
    // f64 row × row → row: the DMMA kernels, Ampere's and Hopper's (alignment 1, so odd extents
    // are fine; a problem without a compute capability does not filter by architecture).
    let f64_problem = GemmProblem::new(
        (33, 17, 5),
        (DType::F64, DType::F64, DType::F64),
        (Layout::Row, Layout::Row, Layout::Row),
    );
    let found: Vec<_> = common::gemm_registry()
        .get_kernels(&f64_problem, |_| true)
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(
        found,
        [
            "gemm_f64_tt",
            "gemm_f64_tt_sm90_64x128x16",
            "gemm_f64_tt_sm90_128x64x16",
            "gemm_f64_tt_sm90_64x64x16",
            "gemm_f64_tt_sm90_32x32x16",
            "gemm_f64_tt_sm90_32x32x16_parallel",
            "gemm_f64_tt_sm90_64x64x16_parallel"
        ]
    );
    // On an A100 (compute capability 8.0) only Ampere's.
    let on_a100 = GemmProblem {
        compute_capability: Some(80),
        ..f64_problem
    };
    let found: Vec<_> = common::gemm_registry()
        .get_kernels(&on_a100, |_| true)
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(found, ["gemm_f64_tt"]);

    // f32 row × row → row with aligned extents: the TF32 kernel, the SIMT kernels and 3xTF32.
    let f32_problem = GemmProblem::new(
        (256, 256, 256),
        (DType::F32, DType::F32, DType::F32),
        (Layout::Row, Layout::Row, Layout::Row),
    );
    let found: Vec<_> = common::gemm_registry()
        .get_kernels(&f32_problem, |_| true)
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(
        found,
        [
            "gemm_tf32_tt",
            "gemm_f32_simt_tt",
            "gemm_f32_3xtf32_tt",
            "gemm_f32_simt_tt_128x256",
            "gemm_f32_simt_tt_64x64"
        ]
    );
    // n = 255 is not a multiple of TF32's alignment 4: only SIMT (alignment 1) remains, at every tile.
    let odd = GemmProblem {
        n: 255,
        ..f32_problem
    };
    let found: Vec<_> = common::gemm_registry()
        .get_kernels(&odd, |_| true)
        .map(|k| k.rust_name)
        .collect();
    assert_eq!(
        found,
        [
            "gemm_f32_simt_tt",
            "gemm_f32_simt_tt_128x256",
            "gemm_f32_simt_tt_64x64"
        ]
    );
}

#[test]
fn every_kernel_has_device_code_and_manifest_metadata() {
    // Every kernel, 3.x included, has device code and names its manifest entry.
    for k in common::gemm_registry().all() {
        assert!(k.has_device_code(), "{} has no device code", k.rust_name);
        assert_eq!(k.origin.split(':').next(), Some("kernel_manifest.yaml"));
        assert_eq!(
            k.entry.to_str().unwrap(),
            k.name,
            "entry symbol is the library name"
        );
    }
    for k in kernels_2x() {
        assert!(k.has_device_code(), "{} has no device code", k.rust_name);
        assert_eq!(k.min_compute_capability, 80, "{}", k.rust_name);
        assert_eq!(k.origin.split(':').next(), Some("kernel_manifest.yaml"));
        assert_eq!(k.gemm().a.element, k.gemm().b.element);
        assert_eq!(
            k.gemm().a.element,
            k.gemm().c.element,
            "{}: C defaults to A",
            k.rust_name
        );
        assert_eq!(
            k.entry.to_str().unwrap(),
            k.name,
            "entry symbol is the library name"
        );
    }
    let f16 = kernel("gemm_f16_tn");
    assert_eq!(f16.tile(), Shape3::new(128, 256, 64));
    assert_eq!(f16.design.as_2x().unwrap().warps, Shape3::new(2, 4, 1));
    assert_eq!(f16.design.as_2x().unwrap().instruction, Shape3::new(16, 8, 16));
    assert_eq!(f16.design.stages(), 3);
    assert_eq!(f16.gemm().accumulator, DType::F32);
    assert_eq!(
        (
            f16.gemm().a.alignment,
            f16.gemm().b.alignment,
            f16.gemm().c.alignment
        ),
        (8, 8, 8)
    );
    assert_eq!(
        (f16.gemm().a.layout, f16.gemm().b.layout, f16.gemm().c.layout),
        (Layout::Row, Layout::Column, Layout::Row)
    );
    assert_eq!(f16.design.as_2x().unwrap().swizzle, Swizzle::Identity8);
    assert_eq!(f16.origin, "kernel_manifest.yaml:12");

    let batched = kernel("gemm_f16_tn_batched");
    assert_eq!(batched.tile(), Shape3::new(64, 64, 32));
    assert_eq!(batched.design.as_2x().unwrap().warps, Shape3::new(2, 2, 1));
    assert_eq!(batched.design.stages(), 4);
    assert_eq!(batched.design.as_2x().unwrap().swizzle, Swizzle::Batched);

    let tf32 = kernel("gemm_tf32_tn");
    assert_eq!(tf32.tile(), Shape3::new(128, 128, 32));
    assert_eq!(tf32.gemm().a.alignment, 4, "128 bits of f32");
    assert_eq!(tf32.gemm().accumulator, DType::F32);

    let f64k = kernel("gemm_f64_tt");
    assert_eq!(f64k.tile(), Shape3::new(64, 64, 16));
    assert_eq!(
        f64k.gemm().a.alignment,
        1,
        "DMMA crosswise layouts take 1-element accesses"
    );
    assert_eq!(f64k.epilogue.compute, DType::F64);

    let simt = kernel("gemm_f32_simt_tt");
    assert_eq!(simt.design.opclass(), OpClass::Simt);
    assert_eq!(simt.tile(), Shape3::new(128, 128, 8));
    assert_eq!(simt.design.as_2x().unwrap().warps, Shape3::new(4, 2, 1));
    assert_eq!(simt.gemm().a.alignment, 1);
}

// ---------------------------------------------------------------------------------------------
// 2. supports: every reason, in words
// ---------------------------------------------------------------------------------------------

#[test]
fn supports_accepts_a_matching_problem() {
    let info = kernel("gemm_f16_tn");
    let problem = GemmProblem {
        lda: Some(512),
        ldb: Some(512),
        ldc: Some(1024),
        batch_stride_a: Some(0),
        address_a: Some(ADDR_A),
        address_b: Some(ADDR_B + 16),
        address_c: Some(ADDR_C),
        ..problem_for(info, 1000, 1000, 512)
            .batched(4)
            .on_compute_capability(80)
    };
    assert_eq!(info.supports(&problem), Ok(()));
    // m is not a contiguous extent of any operand of a TN kernel: m = 1001 is fine.
    assert_eq!(info.supports(&GemmProblem { m: 1001, ..problem }), Ok(()));
}

#[test]
fn supports_rejects_wrong_element_types() {
    let info = kernel("gemm_f16_tn");
    let problem = GemmProblem {
        element_a: DType::F32,
        element_c: DType::Bf16,
        ..problem_for(info, 128, 128, 128)
    };
    let u = unsupported(info, &problem);
    assert_eq!(
        u.reasons,
        [
            "A is f32 but the kernel takes f16",
            "C/D is bf16 but the kernel takes f16"
        ]
    );
}

#[test]
fn supports_rejects_wrong_layouts() {
    let info = kernel("gemm_f16_tn");
    let problem = GemmProblem {
        layout_b: Layout::Row,
        ..problem_for(info, 128, 128, 128)
    };
    let text = unsupported(info, &problem).to_string();
    assert_contains(&text, "B is row-major but the kernel takes column-major");
    assert!(text.starts_with(
        "cutlass_tensorop_f16_s16816gemm_f16_128x256_64x3_tnt_align8 cannot run this problem: "
    ));
}

#[test]
fn supports_rejects_contiguous_extents_that_are_not_multiples_of_the_alignment() {
    let info = kernel("gemm_f16_tn");
    // k is contiguous in A (row-major) and in B (column-major).
    let u = unsupported(info, &problem_for(info, 128, 128, 100));
    assert_eq!(u.reasons.len(), 2);
    let text = u.to_string();
    assert_contains(
        &text,
        "A has 100 columns (its contiguous extent), not a multiple of the kernel's alignment 8",
    );
    assert_contains(
        &text,
        "B has 100 rows (its contiguous extent), not a multiple of the kernel's alignment 8",
    );
    // n is contiguous in row-major C/D.
    let u = unsupported(info, &problem_for(info, 128, 1001, 128));
    assert_eq!(
        u.reasons,
        ["C/D has 1001 columns (its contiguous extent), not a multiple of the kernel's alignment 8"]
    );
    // m is contiguous in column-major A (NT kernel).
    let nt = kernel("gemm_f16_nt");
    let u = unsupported(nt, &problem_for(nt, 1001, 128, 128));
    assert_eq!(
        u.reasons,
        ["A has 1001 rows (its contiguous extent), not a multiple of the kernel's alignment 8"]
    );
    // The TF32 kernel's alignment is 4: 1004 passes, 1002 does not.
    let tf32 = kernel("gemm_tf32_tt");
    assert_eq!(tf32.supports(&problem_for(tf32, 64, 1004, 64)), Ok(()));
    assert_contains(
        &unsupported(tf32, &problem_for(tf32, 64, 1002, 64)).to_string(),
        "alignment 4",
    );
}

#[test]
fn supports_rejects_leading_dimensions_and_batch_strides_off_the_alignment() {
    let info = kernel("gemm_f16_tn");
    let problem = GemmProblem {
        lda: Some(1001),
        ldc: Some(130),
        batch_stride_b: Some(12),
        ..problem_for(info, 128, 128, 128).batched(2)
    };
    let u = unsupported(info, &problem);
    assert_eq!(u.reasons.len(), 3, "{u}");
    let text = u.to_string();
    assert_contains(
        &text,
        "leading dimension of A (1001) is not a multiple of the alignment 8",
    );
    assert_contains(
        &text,
        "leading dimension of C/D (130) is not a multiple of the alignment 8",
    );
    assert_contains(
        &text,
        "batch stride of B (12) is not a multiple of the alignment 8",
    );
}

#[test]
fn supports_rejects_misaligned_addresses() {
    let info = kernel("gemm_f16_tn");
    let problem = GemmProblem {
        address_a: Some(0x1002),
        address_b: Some(0x1010),
        address_c: Some(0x1008),
        ..problem_for(info, 128, 128, 128)
    };
    let u = unsupported(info, &problem);
    assert_eq!(
        u.reasons,
        [
            "A starts at address 0x1002, which is not 16-byte aligned as the kernel requires",
            "C/D starts at address 0x1008, which is not 16-byte aligned as the kernel requires",
        ]
    );
    // f64 with alignment 1 needs only 8-byte alignment; 4 bytes is not enough.
    let f64k = kernel("gemm_f64_tt");
    let ok = GemmProblem {
        address_a: Some(0x1008),
        ..problem_for(f64k, 3, 5, 7)
    };
    assert_eq!(f64k.supports(&ok), Ok(()));
    let bad = GemmProblem {
        address_b: Some(0x1004),
        ..ok
    };
    assert_contains(
        &unsupported(f64k, &bad).to_string(),
        "B starts at address 0x1004, which is not 8-byte aligned",
    );
    // TF32: 4 f32 = 16 bytes.
    let tf32 = kernel("gemm_tf32_tn");
    let bad = GemmProblem {
        address_a: Some(0x1008),
        ..problem_for(tf32, 64, 64, 64)
    };
    assert_contains(&unsupported(tf32, &bad).to_string(), "not 16-byte aligned");
}

#[test]
fn supports_rejects_old_compute_capabilities() {
    let info = kernel("gemm_f16_tn");
    let problem = problem_for(info, 128, 128, 128);
    let u = unsupported(info, &problem.clone().on_compute_capability(75));
    assert_eq!(
        u.reasons,
        ["the device has compute capability 7.5 but the kernel needs 8.0 or newer"]
    );
    assert_contains(&u.to_string(), "needs 8.0");
    for cc in [80, 86, 89, 90, 100, 120] {
        assert_eq!(
            info.supports(&problem.clone().on_compute_capability(cc)),
            Ok(()),
            "cc {cc}"
        );
    }
}

#[test]
fn supports_rejects_extents_outside_1_to_i32_max() {
    let info = kernel("gemm_f64_tt");
    let u = unsupported(info, &problem_for(info, 0, 8, 8));
    assert_eq!(u.reasons, ["m = 0 must be between 1 and 2147483647"]);
    let too_big = i32::MAX as usize + 1;
    let u = unsupported(info, &problem_for(info, 8, too_big, 8));
    assert_eq!(u.reasons, ["n = 2147483648 must be between 1 and 2147483647"]);
    let u = unsupported(info, &problem_for(info, 8, 8, 8).batched(0));
    assert_contains(&u.to_string(), "batch count = 0 must be between 1 and");
    // i32::MAX itself is allowed.
    assert_eq!(info.supports(&problem_for(info, i32::MAX as usize, 8, 8)), Ok(()));
}

#[test]
fn supports_lists_every_reason_at_once() {
    let info = kernel("gemm_f16_tn");
    let problem = GemmProblem {
        element_a: DType::F32,
        layout_c: Layout::Column,
        address_b: Some(0x1002),
        ..problem_for(info, 0, 128, 128).on_compute_capability(75)
    };
    let u = unsupported(info, &problem);
    assert_eq!(u.reasons.len(), 5, "{u}");
    let text = u.to_string();
    for needle in [
        "A is f32 but the kernel takes f16",
        "C/D is column-major but the kernel takes row-major",
        "m = 0 must be between 1 and",
        "B starts at address 0x1002, which is not 16-byte aligned",
        "needs 8.0",
    ] {
        assert_contains(&text, needle);
    }
    assert_eq!(text.matches("; ").count(), 4, "reasons are joined with '; '");
}

// ---------------------------------------------------------------------------------------------
// 3. Params, grid and block built on the host by CUTLASS's own code
// ---------------------------------------------------------------------------------------------

#[test]
fn prepare_f16_tn_1000x1000x512() {
    let info = kernel("gemm_f16_tn");
    let prepared = prepare_ok(info, &operands(info, 1000, 1000, 512));
    let launch = prepared.launch;
    // 2×4×1 warps.
    assert_eq!(launch.block, [256, 1, 1]);
    assert_eq!(threads(info), 256);
    // tm = ceil(1000/128) = 8, tn = ceil(1000/256) = 4 → log_tile 2 → grid (8·4, ceil(4/4), 1).
    assert_eq!(launch.grid, [32, 1, 1]);
    assert_eq!(launch.grid, identity8_grid(info.tile(), 1000, 1000, 1));
    assert_eq!(launch.cluster, [1, 1, 1]);
    // 3 stages × (128×64 + 64×256) halves.
    assert_eq!(mainloop_smem(info), 147_456);
    assert!(launch.shared_mem_bytes >= 147_456, "{launch:?}");
    assert!(launch.shared_mem_bytes <= H100.max_shared_memory_per_block_optin);
    assert!(launch.params_bytes > 0);
    assert!(launch.params_bytes as usize <= PARAMS_CAPACITY);
    assert_eq!(launch.params_bytes as usize, prepared.params().len());
    assert_eq!(launch.workspace_bytes, 0);
    // The operand pointers are in the Params (no C: D is passed as C, beta = 0).
    let params = prepared.params();
    for (name, addr) in [("A", ADDR_A), ("B", ADDR_B), ("D", ADDR_D)] {
        assert!(
            contains_bytes(params, &addr.to_le_bytes()),
            "{name}'s address {addr:#x} is not in the Params"
        );
    }
    assert!(!contains_bytes(params, &ADDR_C.to_le_bytes()));
}

#[test]
fn prepare_puts_c_alpha_and_beta_into_the_params() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 1000, 1000, 512);
    ops.c = Some(operand(
        MatrixShape::packed(1000, 1000, Layout::Row),
        Layout::Row,
        ADDR_C,
    ));
    ops.alpha = 1.5;
    ops.beta = -0.25;
    let args = plan(info, &ops, &H100).unwrap();
    assert_eq!(args.c as u64, ADDR_C);
    let prepared = info.prepare(&args).unwrap();
    let params = prepared.params();
    for addr in [ADDR_A, ADDR_B, ADDR_C, ADDR_D] {
        assert!(contains_bytes(params, &addr.to_le_bytes()), "{addr:#x}");
    }
    // The epilogue computes in f32: alpha and beta are stored as f32.
    assert_eq!(info.epilogue.compute, DType::F32);
    assert!(contains_bytes(params, &1.5f32.to_le_bytes()));
    assert!(contains_bytes(params, &(-0.25f32).to_le_bytes()));
    // Same problem, same Params size.
    let plain = prepare_ok(info, &operands(info, 1000, 1000, 512));
    assert_eq!(plain.launch.params_bytes, prepared.launch.params_bytes);
}

#[test]
fn prepare_grid_follows_the_identity8_swizzle() {
    let info = kernel("gemm_f16_tn");
    // (m, n) → expected grid, worked out by hand from threadblock_swizzle.h.
    let cases: [((usize, usize), [u32; 3]); 5] = [
        // tm 1, tn 1 → log 0.
        ((128, 256), [1, 1, 1]),
        // tm 2, tn 2 → log 1 → (4, 1).
        ((256, 512), [4, 1, 1]),
        // tm 8, tn 4 → log 2 → (32, 1).
        ((1000, 1000), [32, 1, 1]),
        // tm 32, tn 16 → log 3 → (256, 2).
        ((4096, 4096), [256, 2, 1]),
        // tm 1, tn 7 → log 3 → (8, 1): no-op CTAs beyond n are part of CUTLASS's design.
        ((8, 1792), [8, 1, 1]),
    ];
    for ((m, n), grid) in cases {
        let launch = prepare_ok(info, &operands(info, m, n, 64)).launch;
        assert_eq!(launch.grid, grid, "m={m} n={n}");
        assert_eq!(launch.grid, identity8_grid(info.tile(), m as u32, n as u32, 1));
    }
}

#[test]
fn prepare_tf32_simt_and_f64_launch_shapes() {
    // TF32 128×128×32, 2×2 warps, 3 stages of f32.
    let tf32 = kernel("gemm_tf32_tn");
    let launch = prepare_ok(tf32, &operands(tf32, 512, 512, 512)).launch;
    assert_eq!(launch.block, [128, 1, 1]);
    // tm 4, tn 4 → log 2 → (16, 1).
    assert_eq!(launch.grid, [16, 1, 1]);
    assert_eq!(mainloop_smem(tf32), 98_304);
    assert!(launch.shared_mem_bytes >= 98_304);
    assert_eq!(launch.workspace_bytes, 0);

    // SIMT 128×128×8, 4×2 warps.
    let simt = kernel("gemm_f32_simt_tt");
    let launch = prepare_ok(simt, &operands(simt, 300, 129, 17)).launch;
    assert_eq!(launch.block, [256, 1, 1]);
    // tm 3, tn 2 → log 1 → (6, 1).
    assert_eq!(launch.grid, [6, 1, 1]);
    assert!(launch.shared_mem_bytes >= mainloop_smem(simt));

    // f64 64×64×16, 2×2 warps, 4 stages.
    let f64k = kernel("gemm_f64_tt");
    let launch = prepare_ok(f64k, &operands(f64k, 65, 65, 3)).launch;
    assert_eq!(launch.block, [128, 1, 1]);
    // tm 2, tn 2 → log 1 → (4, 1).
    assert_eq!(launch.grid, [4, 1, 1]);
    assert_eq!(mainloop_smem(f64k), 65_536);
    assert!(launch.shared_mem_bytes >= 65_536);
    assert!(launch.shared_mem_bytes <= H100.max_shared_memory_per_block_optin);
}

#[test]
fn every_kernel_prepares_and_fits_an_h100() {
    // The 2.x kernels (3.x Params need a TMA encoder: runtime_3x.rs).
    for info in kernels_2x() {
        let prepared = prepare_ok(info, &operands(info, 256, 256, 256));
        let launch = prepared.launch;
        assert_eq!(launch.block, [threads(info), 1, 1], "{}", info.rust_name);
        let expected = match info.design.as_2x().unwrap().swizzle {
            Swizzle::Batched => batched_grid(info.tile(), 256, 256, 1),
            Swizzle::Identity8 => identity8_grid(info.tile(), 256, 256, 1),
            other => panic!("no grid rule for {other:?}"),
        };
        assert_eq!(launch.grid, expected, "{}", info.rust_name);
        assert!(
            launch.shared_mem_bytes >= mainloop_smem(info),
            "{}",
            info.rust_name
        );
        assert!(launch.shared_mem_bytes <= H100.max_shared_memory_per_block_optin);
        assert_eq!(launch.params_bytes as usize, prepared.params().len());
        assert_eq!(launch.workspace_bytes, 0);
        assert_eq!(launch.fill_count, 0, "{}", info.rust_name);
        assert_eq!(launch.cluster, [1, 1, 1], "{}", info.rust_name);
    }
}

#[test]
fn prepare_batched_puts_batches_in_grid_z() {
    // Identity swizzle in batched mode: get_tiled_shape(problem, tile, batch_count) makes the
    // batch count the tiled shape's k, and get_grid_shape puts k in z; the (m, n) part is
    // unchanged. params_universal_base.h only recomputes k for kGemm / split-K, not kBatched.
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 1000, 1000, 512);
    ops.a = batched(ops.a, info.gemm().a.layout, 3);
    ops.b = batched(ops.b, info.gemm().b.layout, 3);
    ops.d = batched(ops.d, info.gemm().c.layout, 3);
    let args = plan(info, &ops, &H100).unwrap();
    assert_eq!(args.mode, cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_BATCHED as i32);
    let prepared = info.prepare(&args).unwrap();
    assert_eq!(prepared.launch.grid, [32, 1, 3]);
    assert_eq!(prepared.launch.workspace_bytes, 0, "batched mode is not split-K");
    // Batch strides are in the Params (B: k·n = 512000 elements).
    assert!(contains_bytes(prepared.params(), &512_000i64.to_le_bytes()));

    // The batched swizzle: (tm, tn, batch) with a 64×64 tile: 16 × 16 × 3, 2×2 warps.
    let info = kernel("gemm_f16_tn_batched");
    let mut ops = operands(info, 1000, 1000, 512);
    ops.a = batched(ops.a, info.gemm().a.layout, 3);
    ops.b = batched(ops.b, info.gemm().b.layout, 3);
    ops.d = batched(ops.d, info.gemm().c.layout, 3);
    let launch = prepare_ok(info, &ops).launch;
    assert_eq!(launch.grid, [16, 16, 3]);
    assert_eq!(launch.grid, batched_grid(info.tile(), 1000, 1000, 3));
    assert_eq!(launch.block, [128, 1, 1]);
    // 4 stages × (64×32 + 32×64) halves.
    assert_eq!(mainloop_smem(info), 32_768);
    assert!(launch.shared_mem_bytes >= 32_768);
    assert_eq!(launch.workspace_bytes, 0);
}

#[test]
fn prepare_runs_cutlass_can_implement() {
    // CUTLASS's can_implement checks the contiguous extent of each operand: m for column-major
    // A. Calling prepare directly (plan would have caught it first) proves the C++ check is wired.
    let nt = kernel("gemm_f16_nt");
    let mut args = plan(nt, &operands(nt, 1000, 1000, 512), &H100).unwrap();
    assert!(nt.prepare(&args).is_ok());
    args.m = 1001;
    let message = invalid_message(nt, nt.prepare(&args));
    assert_contains(&message, "alignment");
    assert_contains(&message, "CUTLASS rejected the problem");
    assert_contains(&message, "alignment (A 8, B 8, C 8)");

    // Row-major C: n is the contiguous extent.
    let tn = kernel("gemm_f16_tn");
    let mut args = plan(tn, &operands(tn, 1000, 1000, 512), &H100).unwrap();
    args.n = 1001;
    assert_contains(&invalid_message(tn, tn.prepare(&args)), "alignment");
    // ... and k (row-major A, column-major B).
    args.n = 1000;
    args.k = 500;
    assert_contains(&invalid_message(tn, tn.prepare(&args)), "alignment");
    // m is contiguous in no operand of a TN kernel: CUTLASS accepts m = 1001.
    args.k = 512;
    args.m = 1001;
    let launch = tn.prepare(&args).unwrap().launch;
    assert_eq!(launch.grid, identity8_grid(tn.tile(), 1001, 1000, 1));

    // Extents that are not positive are refused before CUTLASS sees them.
    args.m = 0;
    assert_contains(
        &invalid_message(tn, tn.prepare(&args)),
        "CUTLASS's can_implement rejected the problem",
    );
    args.m = 1000;
    args.batch_count = -1;
    assert_contains(
        &invalid_message(tn, tn.prepare(&args)),
        "can_implement rejected the problem",
    );
    // An unknown mode.
    args.batch_count = 1;
    args.mode = 7;
    assert_contains(
        &invalid_message(tn, tn.prepare(&args)),
        "does not support this problem",
    );
}

#[test]
fn prepare_refuses_grids_over_65535_in_y() {
    // Batched swizzle: grid y = ceil(n / 64); n = 64 · 65536 gives 65536 > 65535.
    let info = kernel("gemm_f16_tn_batched");
    let n = 64 * 65_536;
    let args = plan(info, &operands(info, 64, n, 32), &H100).unwrap();
    assert_contains(&invalid_message(info, info.prepare(&args)), "65535");
    // One tile fewer fits.
    let args = plan(info, &operands(info, 64, n - 64, 32), &H100).unwrap();
    assert_eq!(info.prepare(&args).unwrap().launch.grid, [1, 65_535, 1]);
}

#[test]
fn prepare_refuses_more_than_65535_batches_on_the_identity_swizzle() {
    // Identity swizzle: grid z = batch count.
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 8, 8, 8);
    ops.d = batched(ops.d, info.gemm().c.layout, 65_536);
    assert_plan_rejects(info, &ops, &["batch count 65536 exceeds 65535"]);
    ops.d = batched(ops.d, info.gemm().c.layout, 65_535);
    let mut args = plan(info, &ops, &H100).unwrap();
    assert_eq!(info.prepare(&args).unwrap().launch.grid, [1, 1, 65_535]);
    // The glue's own grid check refuses it too when prepare is called directly.
    args.batch_count = 65_536;
    assert_contains(&invalid_message(info, info.prepare(&args)), "65535");
}

/// GemmBatchedIdentityThreadblockSwizzle::get_tiled_shape takes `batch_count % (1 << 16)`, so
/// with 65536 or more batches the grid would silently cover fewer batches (or z = 0); the glue's
/// grid check sees z after the modulo, so `supports` must refuse such batch counts.
#[test]
fn batched_swizzle_refuses_65536_batches() {
    let info = kernel("gemm_f16_tn_batched");
    let mut accepted = Vec::new();
    for count in [65_536, 70_000] {
        let mut ops = operands(info, 64, 64, 32);
        ops.d = batched(ops.d, info.gemm().c.layout, count);
        if let Ok(p) = plan(info, &ops, &H100).and_then(|args| info.prepare(&args)) {
            accepted.push(format!(
                "{count} batches → grid {:?} (only {} would run)",
                p.launch.grid, p.launch.grid[2]
            ));
        }
    }
    assert!(accepted.is_empty(), "{}", accepted.join("; "));
}

// ---------------------------------------------------------------------------------------------
// 4. plan: argument checks and the ABI arguments it produces
// ---------------------------------------------------------------------------------------------

#[test]
fn plan_builds_args_for_a_valid_problem() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 1000, 1000, 512);
    ops.a.shape.ld = 520;
    ops.a = operand(ops.a.shape, Layout::Row, ADDR_A);
    ops.alpha = 2.0;
    let args = plan(info, &ops, &H100).unwrap();
    assert_eq!(args.mode, cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_GEMM as i32);
    assert_eq!((args.m, args.n, args.k, args.batch_count), (1000, 1000, 512, 1));
    assert_eq!(args.device_sms, 132);
    assert_eq!((args.lda, args.ldb, args.ldc, args.ldd), (520, 512, 1000, 1000));
    assert_eq!(
        (
            args.batch_stride_a,
            args.batch_stride_b,
            args.batch_stride_c,
            args.batch_stride_d
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(args.a as u64, ADDR_A);
    assert_eq!(args.b as u64, ADDR_B);
    assert_eq!(args.c as u64, ADDR_D, "without C, D is passed as C");
    assert_eq!(args.d as u64, ADDR_D);
    assert!(args.workspace.is_null());
    assert_eq!((args.alpha, args.beta), (2.0, 0.0));
}

#[test]
fn plan_builds_batched_args_with_broadcast_inputs() {
    let info = kernel("gemm_f16_tn_batched");
    let (m, n, k) = (64, 128, 32);
    let mut ops = operands(info, m, n, k);
    // A is one matrix broadcast to every batch; B and D are batches of 5.
    ops.b = batched(ops.b, info.gemm().b.layout, 5);
    ops.d = batched(ops.d, info.gemm().c.layout, 5);
    let c = operand(
        MatrixShape {
            batch_count: 5,
            batch_stride: 2 * m * n,
            ..MatrixShape::packed(m, n, Layout::Row)
        },
        Layout::Row,
        ADDR_C,
    );
    ops.c = Some(c);
    ops.beta = 1.0;
    let args = plan(info, &ops, &H100).unwrap();
    assert_eq!(args.mode, cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_BATCHED as i32);
    assert_eq!(args.batch_count, 5);
    assert_eq!((args.m, args.n, args.k), (64, 128, 32));
    assert_eq!(args.batch_stride_a, 0, "a single A is broadcast: stride 0");
    assert_eq!(args.batch_stride_b, (k * n) as i64);
    assert_eq!(args.batch_stride_c, (2 * m * n) as i64);
    assert_eq!(args.batch_stride_d, (m * n) as i64);
    assert_eq!(args.c as u64, ADDR_C);
    assert_eq!(args.beta, 1.0);
    // A batch of 1 in D is a plain GEMM.
    let single = plan(info, &operands(info, m, n, k), &H100).unwrap();
    assert_eq!(single.mode, cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_GEMM as i32);
    assert_eq!(single.batch_count, 1);
}

#[test]
fn plan_ignores_the_stride_of_a_single_matrix() {
    // batch_count 1 means "one matrix": its stride is never used, even a nonsensical one.
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 128, 128, 128);
    ops.a.shape.batch_stride = 3;
    ops.d.shape.batch_stride = 0;
    let args = plan(info, &ops, &H100).unwrap();
    assert_eq!((args.batch_stride_a, args.batch_stride_d), (0, 0));
}

#[test]
fn plan_rejects_inner_dimensions_that_disagree() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.b = operand(
        MatrixShape::packed(48, 64, Layout::Column),
        Layout::Column,
        ADDR_B,
    );
    assert_plan_rejects(
        info,
        &ops,
        &["A is 64×32 and B is 48×64: B must have 32 rows (A's columns)"],
    );
}

#[test]
fn plan_rejects_a_wrong_d_shape() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.d = operand(MatrixShape::packed(64, 32, Layout::Row), Layout::Row, ADDR_D);
    assert_plan_rejects(info, &ops, &["D is 64×32 but A·B is 64×64"]);
}

#[test]
fn plan_rejects_a_wrong_c_shape() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.c = Some(operand(
        MatrixShape::packed(32, 64, Layout::Row),
        Layout::Row,
        ADDR_C,
    ));
    ops.beta = 1.0;
    assert_plan_rejects(info, &ops, &["C is 32×64 but D is 64×64"]);
}

#[test]
fn plan_rejects_beta_without_c() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.beta = 0.5;
    assert_plan_rejects(info, &ops, &["beta is 0.5", "no C was given"]);
    // Negative zero is zero.
    ops.beta = -0.0;
    assert!(plan(info, &ops, &H100).is_ok());
}

#[test]
fn plan_rejects_buffers_that_are_too_small() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.a.len = 64 * 32 - 1;
    assert_plan_rejects(
        info,
        &ops,
        &[
            "A (64×32, ld 32, batch 1 × stride 2048)",
            "needs a buffer of 2048 elements but the buffer has 2047",
        ],
    );
    // A padded leading dimension needs (rows-1)·ld + cols elements.
    let mut ops = operands(info, 64, 64, 32);
    ops.d.shape.ld = 72;
    ops.d.len = 64 * 64;
    assert_plan_rejects(info, &ops, &["D (", "needs a buffer of 4600 elements"]);
    ops.d.len = 4600;
    assert!(plan(info, &ops, &H100).is_ok());
    // A batch needs (count-1)·stride + one matrix.
    let mut ops = operands(info, 64, 64, 32);
    ops.b = batched(ops.b, Layout::Column, 4);
    ops.d = batched(ops.d, Layout::Row, 4);
    ops.b.len -= 1;
    assert_plan_rejects(info, &ops, &["B (", "needs a buffer of 8192 elements"]);
}

#[test]
fn plan_rejects_a_leading_dimension_below_the_contiguous_extent() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.a.shape.ld = 16;
    assert_plan_rejects(
        info,
        &ops,
        &["leading dimension of A is 16", "ld must be at least 32"],
    );
    // Column-major B: the contiguous extent is its rows (k).
    let mut ops = operands(info, 64, 64, 32);
    ops.b.shape.ld = 24;
    assert_plan_rejects(info, &ops, &["column-major", "must be at least 32"]);
}

#[test]
fn plan_rejects_a_leading_dimension_off_the_alignment() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.a = operand(
        MatrixShape {
            ld: 36,
            ..ops.a.shape
        },
        Layout::Row,
        ADDR_A,
    );
    assert_plan_rejects(
        info,
        &ops,
        &["leading dimension of A (36) is not a multiple of the alignment 8"],
    );
}

#[test]
fn plan_rejects_batch_counts_that_disagree() {
    let info = kernel("gemm_f16_tn_batched");
    let mut ops = operands(info, 64, 64, 32);
    ops.a = batched(ops.a, Layout::Row, 2);
    ops.d = batched(ops.d, Layout::Row, 3);
    assert_plan_rejects(info, &ops, &["A has a batch of 2 but D has 3", "broadcast"]);
    // An input batch with a single D is not a reduction.
    let mut ops = operands(info, 64, 64, 32);
    ops.b = batched(ops.b, Layout::Column, 3);
    assert_plan_rejects(info, &ops, &["B has a batch of 3 but D has 1"]);
    // D with no batches at all.
    let mut ops = operands(info, 64, 64, 32);
    ops.d.shape.batch_count = 0;
    assert_plan_rejects(info, &ops, &["D has a batch count of 0"]);
}

#[test]
fn plan_rejects_d_batches_that_overlap() {
    let info = kernel("gemm_f16_tn_batched");
    let mut ops = operands(info, 64, 64, 32);
    ops.d = batched(ops.d, Layout::Row, 3);
    for stride in [0, 64 * 64 - 8] {
        ops.d.shape.batch_stride = stride;
        assert_plan_rejects(
            info,
            &ops,
            &[
                &format!("D's batch stride {stride} is smaller than one matrix (4096 elements)"),
                "overwrite each other",
            ],
        );
    }
    // Inputs may overlap (or be the same matrix): only D is written.
    let mut ops = operands(info, 64, 64, 32);
    ops.d = batched(ops.d, Layout::Row, 3);
    ops.a = batched(ops.a, Layout::Row, 3);
    ops.a.shape.batch_stride = 8;
    ops.a.len = ops.a.shape.required_len(Layout::Row).unwrap();
    assert!(plan(info, &ops, &H100).is_ok());
}

#[test]
fn plan_rejects_empty_problems() {
    let info = kernel("gemm_f64_tt");
    for (m, n, k) in [(0, 8, 8), (8, 0, 8), (8, 8, 0)] {
        assert_plan_rejects(
            info,
            &operands(info, m, n, k),
            &[&format!("empty problem (m={m}, n={n}, k={k})"), "at least 1"],
        );
    }
}

#[test]
fn plan_rejects_misaligned_pointers() {
    let info = kernel("gemm_f16_tn");
    let mut ops = operands(info, 64, 64, 32);
    ops.a.address = ADDR_A + 2;
    assert_plan_rejects(info, &ops, &["A starts at address", "not 16-byte aligned"]);
    // C and D are both checked against C's alignment.
    let mut ops = operands(info, 64, 64, 32);
    ops.d.address = ADDR_D + 8;
    assert_plan_rejects(info, &ops, &["C/D starts at address 0x7f3000000008"]);
    let mut ops = operands(info, 64, 64, 32);
    ops.c = Some(operand(
        MatrixShape::packed(64, 64, Layout::Row),
        Layout::Row,
        ADDR_C + 4,
    ));
    ops.beta = 1.0;
    assert_plan_rejects(info, &ops, &["C/D starts at address 0x7f2000000004"]);
    // 16-byte aligned but not 256: fine.
    let mut ops = operands(info, 64, 64, 32);
    ops.a.address = ADDR_A + 16;
    assert!(plan(info, &ops, &H100).is_ok());
}

#[test]
fn plan_rejects_old_devices_and_odd_extents() {
    let info = kernel("gemm_f16_tn");
    let turing = DeviceProps {
        name: "NVIDIA GeForce RTX 2080",
        compute_capability: 75,
        ..H100
    };
    // Too old a device is the device's fault, not the arguments'.
    match plan(info, &operands(info, 64, 64, 32), &turing) {
        Err(Error::UnsupportedDevice { message, .. }) => assert_contains(
            &message,
            "compute capability 7.5 but the kernel needs 8.0 or newer",
        ),
        other => panic!("expected UnsupportedDevice, got {other:?}"),
    }
    // An extent the kernel cannot vectorise is caught by plan, before CUTLASS.
    assert_plan_rejects(
        info,
        &operands(info, 64, 60, 32),
        &["C/D has 60 columns (its contiguous extent)"],
    );
}

// ---------------------------------------------------------------------------------------------
// 5. MatrixShape
// ---------------------------------------------------------------------------------------------

#[test]
fn matrix_shape_required_len() {
    let shape = |rows, cols, ld, batch_count, batch_stride| MatrixShape {
        rows,
        cols,
        ld,
        batch_count,
        batch_stride,
    };
    // Packed 3×4.
    assert_eq!(shape(3, 4, 4, 1, 12).required_len(Layout::Row), Some(12));
    assert_eq!(shape(3, 4, 3, 1, 12).required_len(Layout::Column), Some(12));
    // Padded: the last line need not be padded.
    assert_eq!(shape(3, 4, 6, 1, 0).required_len(Layout::Row), Some(2 * 6 + 4));
    assert_eq!(shape(3, 4, 5, 1, 0).required_len(Layout::Column), Some(3 * 5 + 3));
    // Batches: (count-1)·stride + one matrix.
    assert_eq!(shape(3, 4, 6, 2, 20).required_len(Layout::Row), Some(20 + 16));
    assert_eq!(shape(3, 4, 3, 3, 12).required_len(Layout::Column), Some(36));
    // Stride 0: every batch reads the same matrix.
    assert_eq!(shape(3, 4, 6, 5, 0).required_len(Layout::Row), Some(16));
    // Empty.
    assert_eq!(shape(0, 4, 4, 1, 0).required_len(Layout::Row), Some(0));
    assert_eq!(shape(3, 4, 4, 0, 12).required_len(Layout::Row), Some(0));
    // Overflow anywhere is None, not a wrapped length.
    assert_eq!(shape(usize::MAX, 4, 4, 1, 0).required_len(Layout::Row), None);
    assert_eq!(shape(3, 4, usize::MAX, 1, 0).required_len(Layout::Row), None);
    assert_eq!(shape(3, 4, 4, usize::MAX, 2).required_len(Layout::Row), None);
    assert_eq!(shape(3, 4, 4, 2, usize::MAX - 11).required_len(Layout::Row), None);
    assert_eq!(
        shape(3, 4, 4, 2, usize::MAX - 12).required_len(Layout::Row),
        Some(usize::MAX)
    );
}

#[test]
fn matrix_shape_inner_and_outer() {
    let s = MatrixShape {
        rows: 3,
        cols: 4,
        ld: 8,
        batch_count: 1,
        batch_stride: 0,
    };
    assert_eq!((s.inner(Layout::Row), s.outer(Layout::Row)), (4, 3));
    assert_eq!((s.inner(Layout::Column), s.outer(Layout::Column)), (3, 4));
}

// ---------------------------------------------------------------------------------------------
// 6. Device discovery and errors
// ---------------------------------------------------------------------------------------------

#[test]
fn context_is_an_error_not_a_panic() {
    if device::driver_available() {
        match device::context(0) {
            Ok(_) | Err(Error::NoDevice { .. }) => {}
            Err(e) => panic!("unexpected error with a driver present: {e}"),
        }
        match device::context(1_000_000) {
            Err(Error::NoDevice { ordinal, .. }) => assert_eq!(ordinal, 1_000_000),
            Err(e) => panic!("unexpected error: {e}"),
            Ok(_) => panic!("device 1000000 exists?"),
        }
    } else {
        let err = match device::context(0) {
            Ok(_) => panic!("a context without a driver"),
            Err(e) => e,
        };
        assert_eq!(err, Error::NoDriver);
        assert_contains(&err.to_string(), "no NVIDIA driver");
        assert_eq!(device::device_count().unwrap_err(), Error::NoDriver);
    }
}

#[test]
fn error_messages_say_what_to_do() {
    let not_built = Error::NotBuilt { kernel: "gemm_x" };
    let text = not_built.to_string();
    assert_contains(&text, "kernel gemm_x has no device code");
    assert_contains(&text, "CUTLASS_AOT_NO_NVCC");
    let no_driver = Error::NoDriver.to_string();
    assert_contains(&no_driver, "no NVIDIA driver");
    assert_contains(&no_driver, "libcuda.so");
    assert_eq!(
        Error::NoDevice { ordinal: 3, count: 2 }.to_string(),
        "no CUDA device with ordinal 3: the driver reports 2 device(s)"
    );
    assert_eq!(
        Error::InvalidArgument {
            kernel: "k",
            message: "m".into()
        }
        .to_string(),
        "k: m"
    );
    assert_contains(
        &Error::AbiMismatch {
            kernel: "k",
            message: "x".into(),
        }
        .to_string(),
        "build defect",
    );
    assert!(std::error::Error::source(&Error::NoDriver).is_none());
}

// ---------------------------------------------------------------------------------------------
// 7. Verification helpers
// ---------------------------------------------------------------------------------------------

#[test]
fn encode_decode_round_trip_every_dtype() {
    let values = [0.0, 1.0, -2.5, 0.15625, 1024.0, -0.0078125];
    for &dtype in DType::ALL {
        let bytes = verify::encode(dtype, &values);
        assert_eq!(bytes.len(), values.len() * verify::element_bytes(dtype));
        // Every value comes back as its nearest `dtype` value (itself where representable).
        let rounded: Vec<f64> = values.iter().map(|&v| verify::round_to(dtype, v)).collect();
        assert_eq!(verify::decode(dtype, &bytes), rounded, "{dtype}");
        // The 16-bit and wider floats represent all of these exactly (2.5 = 1.01b·2, 0.15625 =
        // 1.01b·2^-3, 1024 = 2^10, 0.0078125 = 2^-7); so does e5m2 (max 57344, 2 mantissa bits).
        // e4m3 saturates 1024 to its largest value, 448; the integers round -2.5 to even (-2) and
        // the fractions to 0, and s8 saturates 1024 to 127.
        match dtype {
            DType::F16 | DType::Bf16 | DType::F32 | DType::F64 | DType::E5m2 => {
                assert_eq!(rounded, values, "{dtype}")
            }
            DType::E4m3 => assert_eq!(rounded, [0.0, 1.0, -2.5, 0.15625, 448.0, -0.0078125]),
            DType::S8 => assert_eq!(rounded, [0.0, 1.0, -2.0, 0.0, 127.0, 0.0]),
            DType::S32 => assert_eq!(rounded, [0.0, 1.0, -2.0, 0.0, 1024.0, 0.0]),
        }
        // Values that are not representable come back rounded, like round_to.
        let third = [1.0 / 3.0];
        assert_eq!(
            verify::decode(dtype, &verify::encode(dtype, &third)),
            [verify::round_to(dtype, 1.0 / 3.0)],
            "{dtype}"
        );
    }
    assert_eq!(verify::element_bytes(DType::F16), 2);
    assert_eq!(verify::element_bytes(DType::Bf16), 2);
    assert_eq!(verify::element_bytes(DType::F32), 4);
    assert_eq!(verify::element_bytes(DType::F64), 8);
    for dtype in [DType::E4m3, DType::E5m2, DType::S8] {
        assert_eq!(verify::element_bytes(dtype), 1, "{dtype}");
    }
    assert_eq!(verify::element_bytes(DType::S32), 4);
    // Little-endian device bytes of 1.0.
    assert_eq!(verify::encode(DType::F16, &[1.0]), [0x00, 0x3c]);
    assert_eq!(verify::encode(DType::Bf16, &[1.0]), [0x80, 0x3f]);
    assert_eq!(verify::encode(DType::F32, &[1.0]), [0, 0, 0x80, 0x3f]);
    assert_eq!(verify::encode(DType::F64, &[1.0]), 1.0f64.to_le_bytes());
}

#[test]
fn round_to_each_dtype() {
    let third = 1.0 / 3.0;
    // f16: 11 significant bits; bf16: 8; f32: 24.
    assert_eq!(verify::round_to(DType::F16, third), 0.333251953125);
    assert_eq!(verify::round_to(DType::Bf16, third), 0.333984375);
    assert_eq!(verify::round_to(DType::F32, third), (third as f32) as f64);
    assert_eq!(verify::round_to(DType::F64, third), third);
    // 2049 is not an f16 (ties to even: 2048); 257 is not a bf16 (256).
    assert_eq!(verify::round_to(DType::F16, 2049.0), 2048.0);
    assert_eq!(verify::round_to(DType::Bf16, 257.0), 256.0);
    // Beyond f16's range.
    assert_eq!(verify::round_to(DType::F16, 1e6), f64::INFINITY);
    for &dtype in DType::ALL {
        let once = verify::round_to(dtype, 0.1);
        assert_eq!(verify::round_to(dtype, once), once, "idempotent in {dtype}");
    }
}

#[test]
fn relative_error_measure() {
    assert_eq!(verify::relative_error(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    assert_eq!(verify::relative_error(&[0.0, 0.0], &[3.0, 4.0]), 1.0);
    // ‖(3, -1)‖ / ‖(0, 5)‖ = √10 / 5.
    let e = verify::relative_error(&[3.0, 4.0], &[0.0, 5.0]);
    assert!((e - 10f64.sqrt() / 5.0).abs() < 1e-15, "{e}");
    // Zero reference: absolute norm.
    assert_eq!(verify::relative_error(&[3.0, 4.0], &[0.0, 0.0]), 5.0);
    // NaN or infinite output is infinitely wrong, even when the rest matches.
    assert_eq!(
        verify::relative_error(&[1.0, f64::NAN], &[1.0, 2.0]),
        f64::INFINITY
    );
    assert_eq!(verify::relative_error(&[f64::INFINITY], &[1.0]), f64::INFINITY);
    assert_eq!(
        verify::relative_error(&[f64::NEG_INFINITY, 0.0], &[0.0, 0.0]),
        f64::INFINITY
    );
}

#[test]
fn tolerances_per_kernel() {
    assert_eq!(verify::tolerance(kernel("gemm_tf32_tt")), 5e-3);
    assert_eq!(verify::tolerance(kernel("gemm_tf32_tn")), 5e-3);
    assert_eq!(verify::tolerance(kernel("gemm_f16_tn")), 2e-3);
    assert_eq!(verify::tolerance(kernel("gemm_f16_tn_batched")), 2e-3);
    assert_eq!(verify::tolerance(kernel("gemm_bf16_nn")), 1e-2);
    assert_eq!(verify::tolerance(kernel("gemm_f32_simt_tt")), 1e-5);
    assert_eq!(verify::tolerance(kernel("gemm_f64_tt")), 1e-12);
}

#[test]
fn random_values_are_representable_and_deterministic() {
    // The floating-point types of 16 bits or more (random_values_per_dtype in types_verify.rs
    // covers the 8-bit and integer types, whose values are fewer and differently ranged).
    let wide_floats = DType::ALL.iter().filter(|d| !d.is_integer() && d.bits() >= 16);
    assert_eq!(wide_floats.clone().count(), 4);
    for &dtype in wide_floats {
        let v = verify::random_values(dtype, 1000, 7);
        assert_eq!(v.len(), 1000);
        assert!(v.iter().all(|x| (-1.0..=1.0).contains(x)));
        assert!(v.iter().all(|&x| verify::round_to(dtype, x) == x));
        assert_eq!(v, verify::random_values(dtype, 1000, 7));
        assert_ne!(v, verify::random_values(dtype, 1000, 8));
        // Not degenerate.
        let distinct: HashSet<u64> = v.iter().map(|x| x.to_bits()).collect();
        assert!(distinct.len() > 100, "{dtype}: {} distinct", distinct.len());
    }
}

#[test]
fn offset_and_reference_gemm() {
    let row = MatrixShape {
        rows: 2,
        cols: 3,
        ld: 4,
        batch_count: 2,
        batch_stride: 10,
    };
    assert_eq!(verify::offset(&row, Layout::Row, 1, 1, 2), 10 + 4 + 2);
    let col = MatrixShape { ld: 5, ..row };
    assert_eq!(verify::offset(&col, Layout::Column, 1, 1, 2), 10 + 2 * 5 + 1);

    // A (2×3, row-major, one matrix broadcast) · B (3×2, column-major, batch of 2) + C.
    let a = HostMatrix {
        shape: MatrixShape {
            rows: 2,
            cols: 3,
            ld: 3,
            batch_count: 1,
            batch_stride: 6,
        },
        layout: Layout::Row,
        data: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    };
    let b = HostMatrix {
        shape: MatrixShape {
            rows: 3,
            cols: 2,
            ld: 3,
            batch_count: 2,
            batch_stride: 6,
        },
        layout: Layout::Column,
        // Batch 0: columns (1,0,0), (0,1,0); batch 1: columns (1,1,1), (0,0,2).
        data: vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 2.0],
    };
    let c = HostMatrix {
        shape: MatrixShape {
            rows: 2,
            cols: 2,
            ld: 2,
            batch_count: 1,
            batch_stride: 4,
        },
        layout: Layout::Row,
        data: vec![1.0, 1.0, 1.0, 1.0],
    };
    let mut d = HostMatrix {
        shape: MatrixShape {
            rows: 2,
            cols: 2,
            ld: 3,
            batch_count: 2,
            batch_stride: 7,
        },
        layout: Layout::Row,
        data: vec![-7.0; 14],
    };
    verify::reference_gemm(&a, &b, Some(&c), &mut d, 2.0, 10.0);
    // Batch 0: A·B = [[1,2],[4,5]] → 2·AB + 10 = [[12,14],[18,20]].
    // Batch 1: A·B = [[6,6],[15,12]] → [[22,22],[40,34]].
    // Padding (ld 3, stride 7) is untouched.
    assert_eq!(
        d.data,
        [
            12.0, 14.0, -7.0, 18.0, 20.0, -7.0, -7.0, //
            22.0, 22.0, -7.0, 40.0, 34.0, -7.0, -7.0
        ]
    );
}
