//! CPU-only tests of the CUTLASS 3.x (Hopper, sm_90a) kernels: registry metadata, `runs_on` /
//! `supports`, `gemm::plan`, Params built on the host by CUTLASS's own 3.x code through
//! `KernelInfo::prepare` with a fake TMA encoder standing in for the driver's
//! `cuTensorMapEncodeTiled`, stream-K workspaces and fills, and kernel selection (`dispatch`).
//!
//! No GPU is touched. Every expected value follows from `kernel_manifest.yaml` or from CUTLASS's
//! source (cited where used), not from running the code under test.

mod common;
use common::*;

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::c_void;

use cutlass_aot::abi::{self, cutlass_aot_gemm_args};
use cutlass_aot::device::DeviceProps;
use cutlass_aot::dispatch::{self, Policy, Signature};
use cutlass_aot::gemm::{plan, PARAMS_CAPACITY};
use cutlass_aot::model::{
    Api, DType, EpilogueSchedule, KernelSchedule, Layout, OpClass, Shape3, TileScheduler,
};
use cutlass_aot::select::{self, Basis, Row, Table};
use cutlass_aot::{kernels, Error, GemmOperands, GemmProblem, KernelInfo, MatrixShape, Prepared};

/// An A100: runs the 2.x kernels, none of the 3.x ones.
const A100: DeviceProps = DeviceProps {
    name: "NVIDIA A100-SXM4-80GB",
    multiprocessors: 108,
    compute_capability: 80,
    max_shared_memory_per_block_optin: 166_912,
};

const ADDR_WORKSPACE: u64 = 0x7f40_0000_0000;

/// Number of CUTLASS 2.x kernels at the start of the manifest (arch 80 entries).
const COUNT_2X: usize = 13;

/// Number of CUTLASS 2.x kernels after the 3.x ones (the modes and number formats of issue 4).
const COUNT_2X_MODES: usize = 12;

/// Number of f64 kernels of arch 90 (CUTLASS 2.x on Hopper's DMMA) after the modes.
const COUNT_2X_HOPPER_F64: usize = 24;

/// Number of SIMT f32 kernels after them (the other layouts at 128x128, every layout at 128x256
/// and 64x64), and of 64x64 f16/bf16 kernels after those.
const COUNT_2X_SIMT_AND_SMALL: usize = 11 + 8;

/// The arch-90 kernels of `kernel_manifest.yaml`, in manifest order: a family expands in field
/// order (`a`, then `tile`, then `cluster`), and the families follow one another.
const MANIFEST_ORDER_3X: [&str; 26] = [
    "f16_sm90_128x256x64_2x1x1_cooperative",
    "f16_sm90_128x256x64_1x2x1_cooperative",
    "f16_sm90_256x128x64_2x1x1_cooperative",
    "f16_sm90_256x128x64_1x2x1_cooperative",
    "f16_sm90_128x128x64_2x1x1_cooperative",
    "f16_sm90_128x128x64_1x2x1_cooperative",
    "bf16_sm90_128x256x64_2x1x1_cooperative",
    "bf16_sm90_128x256x64_1x2x1_cooperative",
    "bf16_sm90_256x128x64_2x1x1_cooperative",
    "bf16_sm90_256x128x64_1x2x1_cooperative",
    "bf16_sm90_128x128x64_2x1x1_cooperative",
    "bf16_sm90_128x128x64_1x2x1_cooperative",
    "f16_sm90_128x128x64_2x1x1_pingpong",
    "bf16_sm90_128x128x64_2x1x1_pingpong",
    "f16_sm90_128x128x64_streamk",
    "bf16_sm90_128x128x64_streamk",
    "f16_sm90_128x32x128_streamk_tnn",
    "f16_sm90_128x64x128_streamk_tnn",
    "bf16_sm90_128x32x128_streamk_tnn",
    "bf16_sm90_128x64x128_streamk_tnn",
    "tf32_sm90_tn",
    "f32_3xtf32_sm90_tn",
    "e4m3_sm90_tn",
    "s8_sm90_tn",
    "f16_sm90_128x256x64_2x1x1_cooperative_tt",
    "bf16_sm90_128x256x64_2x1x1_cooperative_tt",
];

/// What the manifest says about one 3.x kernel.
struct Spec {
    rust_name: &'static str,
    a: DType,
    c: DType,
    accumulator: DType,
    tile: [u32; 3],
    cluster: [u32; 3],
    schedule: KernelSchedule,
    tile_scheduler: TileScheduler,
}

fn spec(rust_name: &str) -> Spec {
    use KernelSchedule::{Cooperative, Pingpong};
    use TileScheduler::{Persistent, StreamK};
    let (a, c, accumulator) = match rust_name.split('_').next().unwrap() {
        "f16" => (DType::F16, DType::F16, DType::F32),
        "bf16" => (DType::Bf16, DType::Bf16, DType::F32),
        // `a: f32` on tensor cores: TF32.
        "tf32" => (DType::F32, DType::F32, DType::F32),
        // 3xTF32 by splitting K: the same types.
        "f32" => (DType::F32, DType::F32, DType::F32),
        // `c: bf16`; fp8 accumulates in f32.
        "e4m3" => (DType::E4m3, DType::Bf16, DType::F32),
        // `c: s32`; int8 accumulates in s32.
        "s8" => (DType::S8, DType::S32, DType::S32),
        other => panic!("no spec for {other}"),
    };
    let (tile, cluster, schedule, tile_scheduler) = match rust_name {
        n if n.ends_with("_tn") && n.starts_with("tf32") => {
            ([128, 128, 32], [2, 1, 1], Cooperative, Persistent)
        }
        n if n.ends_with("_tn") && n.starts_with("f32_3xtf32") => {
            ([128, 256, 32], [2, 1, 1], Cooperative, Persistent)
        }
        n if n.ends_with("_tn") => ([128, 256, 128], [2, 1, 1], Cooperative, Persistent),
        n if n.ends_with("_streamk") => ([128, 128, 64], [1, 1, 1], Cooperative, StreamK),
        // "{a}_sm90_{tile}_streamk_tnn": the transposed small-M kernels (column-major C).
        n if n.ends_with("_streamk_tnn") => {
            let tile: Vec<u32> = n
                .split('_')
                .nth(2)
                .unwrap()
                .split('x')
                .map(|d| d.parse().unwrap())
                .collect();
            ([tile[0], tile[1], tile[2]], [1, 1, 1], Cooperative, StreamK)
        }
        // "{a}_sm90_{tile}_{cluster}_{schedule}" and its row-major-B "_tt" form.
        n => {
            let n = n.strip_suffix("_tt").unwrap_or(n);
            let parts: Vec<&str> = n.split('_').collect();
            let dims = |s: &str| -> [u32; 3] {
                let v: Vec<u32> = s.split('x').map(|d| d.parse().unwrap()).collect();
                [v[0], v[1], v[2]]
            };
            let schedule = match parts[4] {
                "cooperative" => Cooperative,
                "pingpong" => Pingpong,
                other => panic!("{n}: schedule {other}"),
            };
            (dims(parts[2]), dims(parts[3]), schedule, Persistent)
        }
    };
    Spec {
        rust_name: MANIFEST_ORDER_3X
            .iter()
            .copied()
            .find(|n| *n == rust_name)
            .unwrap(),
        a,
        c,
        accumulator,
        tile,
        cluster,
        schedule,
        tile_scheduler,
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn kernels_3x() -> &'static [&'static KernelInfo] {
    &common::gemm_registry().all()[COUNT_2X..COUNT_2X + MANIFEST_ORDER_3X.len()]
}

fn with_c(mut ops: GemmOperands, layout: Layout, beta: f64) -> GemmOperands {
    let shape = ops.d.shape;
    ops.c = Some(operand(shape, layout, ADDR_C));
    ops.beta = beta;
    ops
}

fn args_for(info: &'static KernelInfo, m: usize, n: usize, k: usize) -> cutlass_aot_gemm_args {
    plan(info, &operands(info, m, n, k), &H100).unwrap_or_else(|e| panic!("plan failed: {e}"))
}

fn assert_contains(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "expected {needle:?} in:\n  {haystack}");
}

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

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `get_max_cta_occupancy` of CUTLASS's tile_scheduler_params.h, for H100's 18 SMs per GPC.
fn max_cta_occupancy(cluster_size: u32, sm_count: u32) -> u32 {
    let max_sm_per_gpc = 18;
    let min_num_gpc = if sm_count < max_sm_per_gpc {
        1
    } else {
        sm_count / max_sm_per_gpc
    };
    let per_gpc = max_sm_per_gpc - max_sm_per_gpc % cluster_size;
    let residual = if sm_count < max_sm_per_gpc {
        0
    } else {
        sm_count % max_sm_per_gpc
    };
    let cta = min_num_gpc * per_gpc + residual - residual % cluster_size;
    cta.min(sm_count)
}

/// Launch grid of CUTLASS's SM90 persistent tile scheduler (`PersistentTileSchedulerSm90Params::
/// get_grid_shape` in tile_scheduler_params.h) with the default arguments the glue leaves in place
/// (max_swizzle_size 1, raster order Heuristic, max_active_clusters 0):
/// tiles are rounded up to whole clusters; raster AlongM when there are more tile columns than
/// rows, else AlongN; AlongN: (cluster.m, min(ctas / cluster.m, tiles / cluster.m), 1), AlongM:
/// (min(ctas / cluster.n, tiles / cluster.n), cluster.n, 1), where ctas is the SM count for 1x1
/// clusters and `get_max_cta_occupancy` otherwise; 1x1 clusters take min(SMs, tiles) directly.
fn persistent_grid(tile: Shape3, cluster: Shape3, m: u32, n: u32, batch: u32, sms: u32) -> [u32; 3] {
    let round_up = |x: u32, multiple: u32| x.div_ceil(multiple) * multiple;
    let blocks_m = round_up(m.div_ceil(tile.m), cluster.m);
    let blocks_n = round_up(n.div_ceil(tile.n), cluster.n);
    let total = blocks_m * blocks_n * batch;
    let along_n = blocks_n <= blocks_m;
    let cluster_size = cluster.m * cluster.n;
    if cluster_size == 1 {
        let ctas = sms.min(total);
        return if along_n { [1, ctas, 1] } else { [ctas, 1, 1] };
    }
    let ctas = max_cta_occupancy(cluster_size, sms);
    if along_n {
        [cluster.m, (ctas / cluster.m).min(total / cluster.m), 1]
    } else {
        [(ctas / cluster.n).min(total / cluster.n), cluster.n, 1]
    }
}

// ---------------------------------------------------------------------------------------------
// A fake cuTensorMapEncodeTiled
// ---------------------------------------------------------------------------------------------

/// One call of the fake encoder, with whatever was wrong with its arguments.
#[derive(Clone, Debug)]
struct EncodeCall {
    data_type: i32,
    address: u64,
    problems: Vec<String>,
}

thread_local! {
    /// Calls on this thread (the C++ side calls the encoder on the thread running `prepare`).
    static CALLS: RefCell<Vec<EncodeCall>> = const { RefCell::new(Vec::new()) };
}

/// Written at the start of every fake descriptor, followed by its global address.
const DESCRIPTOR_MAGIC: u64 = 0x5441_4d5f_4641_4b45;

/// The fake encoder's signature must be exactly the ABI's.
const _: abi::cutlass_aot_encode_tiled_fn = Some(fake_encode);

/// Checks its arguments as the driver documents them (cuTensorMapEncodeTiled in cuda.h), records
/// the call, writes a recognisable descriptor and succeeds.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn fake_encode(
    tensor_map: *mut c_void,
    data_type: i32,
    rank: u32,
    global_address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: i32,
    swizzle: i32,
    l2_promotion: i32,
    oob_fill: i32,
) -> i32 {
    let address = global_address as u64;
    let mut problems = Vec::new();
    let mut want = |ok: bool, what: String| {
        if !ok {
            problems.push(what)
        }
    };
    want((3..=5).contains(&rank), format!("rank {rank} is not 3 to 5"));
    // CU_TENSOR_MAP_DATA_TYPE_UINT8 (0) .. CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B (15).
    want((0..=15).contains(&data_type), format!("data type {data_type}"));
    want(interleave == 0, format!("interleave {interleave}"));
    // CU_TENSOR_MAP_SWIZZLE_NONE (0) .. CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B (6).
    want((0..=6).contains(&swizzle), format!("swizzle {swizzle}"));
    want(
        (0..=3).contains(&l2_promotion),
        format!("L2 promotion {l2_promotion}"),
    );
    want((0..=1).contains(&oob_fill), format!("OOB fill {oob_fill}"));
    want(
        [ADDR_A, ADDR_B, ADDR_C, ADDR_D].contains(&address),
        format!("global address {address:#x} is none of the operands'"),
    );
    want(
        address % 16 == 0,
        format!("global address {address:#x} is not 16-byte aligned"),
    );
    let pointers = [
        tensor_map.is_null(),
        global_dim.is_null(),
        global_strides.is_null(),
        box_dim.is_null(),
        element_strides.is_null(),
    ];
    want(
        !pointers.contains(&true),
        format!("null pointer among {pointers:?}"),
    );
    if !pointers.contains(&true) && (1..=5).contains(&rank) {
        let r = rank as usize;
        // SAFETY: the driver's contract: `rank` dims, box dims and element strides, `rank - 1`
        // global strides (the first one is implicitly the element size).
        let (dims, strides, boxes, element) = unsafe {
            (
                std::slice::from_raw_parts(global_dim, r),
                std::slice::from_raw_parts(global_strides, r - 1),
                std::slice::from_raw_parts(box_dim, r),
                std::slice::from_raw_parts(element_strides, r),
            )
        };
        for &d in dims {
            want((1..=1u64 << 32).contains(&d), format!("global dim {d}"));
        }
        for &s in strides {
            want(s % 16 == 0 && s < 1 << 40, format!("global stride {s} bytes"));
        }
        for &b in boxes {
            want((1..=256).contains(&b), format!("box dim {b}"));
        }
        for &e in element {
            want((1..=8).contains(&e), format!("element stride {e}"));
        }
        // SAFETY: a CUtensorMap is 128 bytes, 64-byte aligned.
        unsafe {
            let map = tensor_map.cast::<u64>();
            map.write(DESCRIPTOR_MAGIC);
            map.add(1).write(address);
        }
    }
    let call = EncodeCall {
        data_type,
        address,
        problems,
    };
    CALLS.with(|calls| {
        if let Ok(mut calls) = calls.try_borrow_mut() {
            calls.push(call);
        }
    });
    0
}

/// An encoder that refuses every descriptor with CUresult `CODE`.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn refusing_encode<const CODE: i32>(
    _: *mut c_void,
    _: i32,
    _: u32,
    _: *mut c_void,
    _: *const u64,
    _: *const u64,
    _: *const u32,
    _: *const u32,
    _: i32,
    _: i32,
    _: i32,
    _: i32,
) -> i32 {
    CALLS.with(|calls| {
        if let Ok(mut calls) = calls.try_borrow_mut() {
            calls.push(EncodeCall {
                data_type: -1,
                address: 0,
                problems: Vec::new(),
            });
        }
    });
    CODE
}

/// CU_TENSOR_MAP_DATA_TYPE values (cuda.h) of the (A/B, C/D) descriptors CUTLASS builds for `info`.
fn tensor_map_types(info: &KernelInfo) -> (i32, i32) {
    const UINT8: i32 = 0;
    const UINT16: i32 = 1;
    const UINT32: i32 = 2;
    const INT32: i32 = 3;
    const FLOAT16: i32 = 6;
    const FLOAT32: i32 = 7;
    const BFLOAT16: i32 = 9;
    let ab = match info.gemm().a.element {
        DType::F16 | DType::Bf16 => UINT16,
        DType::E4m3 | DType::E5m2 | DType::S8 => UINT8,
        // The generated mainloop declares TF32 operands as `cutlass::tfloat32_t` (as CUTLASS's own
        // TF32 kernels do), not `float`: no conversion, raw 32-bit loads.
        DType::F32 => UINT32,
        other => panic!("no 3.x kernel takes {other}"),
    };
    let cd = match info.gemm().c.element {
        DType::F16 => FLOAT16,
        DType::Bf16 => BFLOAT16,
        DType::F32 => FLOAT32,
        DType::S32 => INT32,
        other => panic!("no 3.x kernel writes {other}"),
    };
    (ab, cd)
}

/// `prepare` with the fake encoder; returns the result and the encoder calls it made.
fn prepare_fake(
    info: &'static KernelInfo,
    args: &cutlass_aot_gemm_args,
) -> (Result<Prepared, Error>, Vec<EncodeCall>) {
    let mut args = *args;
    args.encode_tiled = Some(fake_encode);
    CALLS.with(|c| c.borrow_mut().clear());
    let result = info.prepare(&args);
    let calls = CALLS.with(|c| std::mem::take(&mut *c.borrow_mut()));
    (result, calls)
}

/// Gives `args` a fake workspace of `capacity` bytes.
fn with_workspace(mut args: cutlass_aot_gemm_args, capacity: u64) -> cutlass_aot_gemm_args {
    args.workspace = ADDR_WORKSPACE as *mut c_void;
    args.workspace_capacity = capacity;
    args
}

/// The descriptor the fake encoder writes for an operand at `address`.
fn fake_descriptor(address: u64) -> Vec<u8> {
    [DESCRIPTOR_MAGIC.to_le_bytes(), address.to_le_bytes()].concat()
}

// ---------------------------------------------------------------------------------------------
// 1. Registry
// ---------------------------------------------------------------------------------------------

#[test]
fn registry_lists_the_3x_kernels_after_the_2x_ones_in_manifest_order() {
    let all = common::gemm_registry().all();
    // 2.x kernels, 3.x kernels, the 2.x mode kernels, the f64 kernels of Hopper's DMMA (2.x) and
    // the SIMT f32 kernels, then the fused kernels (fusion.rs).
    let plain =
        COUNT_2X + MANIFEST_ORDER_3X.len() + COUNT_2X_MODES + COUNT_2X_HOPPER_F64 + COUNT_2X_SIMT_AND_SMALL;
    assert!(all[..plain].iter().all(|k| k.is_plain()));
    assert!(all[plain..].iter().all(|k| !k.is_plain()));
    assert!(all[..COUNT_2X].iter().all(|k| k.api() == Api::Cutlass2x));
    assert!(all[COUNT_2X + MANIFEST_ORDER_3X.len()..plain]
        .iter()
        .all(|k| k.api() == Api::Cutlass2x));
    let names: Vec<&str> = kernels_3x().iter().map(|k| k.rust_name).collect();
    let set: HashSet<&str> = names.iter().copied().collect();
    assert_eq!(
        set,
        HashSet::from(MANIFEST_ORDER_3X),
        "the 3.x kernels of the manifest"
    );
    // `Registry::all` is documented as manifest order (and dispatch breaks cost ties by it).
    assert_eq!(names, MANIFEST_ORDER_3X, "registry order is not manifest order");
    let library: HashSet<&str> = kernels_3x().iter().map(|k| k.name).collect();
    assert_eq!(library.len(), MANIFEST_ORDER_3X.len(), "library names are unique");
    // Typed modules point at the registry's statics.
    assert!(std::ptr::eq(
        common::gemm_registry()
            .by_name("bf16_sm90_128x128x64_streamk")
            .unwrap(),
        &kernels::bf16_sm90_128x128x64_streamk::INFO
    ));
    assert!(std::ptr::eq(
        <kernels::e4m3_sm90_tn::Kernel as cutlass_aot::GemmKernel>::info(),
        &kernels::e4m3_sm90_tn::INFO
    ));
}

#[test]
fn registry_3x_metadata_follows_the_manifest() {
    let manifest = include_str!("../kernel_manifest.yaml");
    let lines: Vec<&str> = manifest.lines().collect();
    for k in kernels_3x() {
        let s = spec(k.rust_name);
        let what = s.rust_name;
        assert_eq!(k.api(), Api::Cutlass3x, "{what}");
        assert_eq!(k.min_compute_capability, 90, "{what}");
        assert_eq!(k.design.opclass(), OpClass::TensorOp, "{what}");
        assert_eq!(
            (k.gemm().a.element, k.gemm().b.element, k.gemm().c.element),
            (s.a, s.a, s.c),
            "{what}"
        );
        assert_eq!(k.gemm().accumulator, s.accumulator, "{what}");
        assert_eq!(
            k.epilogue.compute, s.accumulator,
            "{what}: the epilogue computes in the accumulator type"
        );
        // The small-M kernels run problems transposed: their C is column-major.
        let layout_c = if what.ends_with("_tnn") {
            Layout::Column
        } else {
            Layout::Row
        };
        // The "_tt" kernels take a row-major B (16-bit operands may be MN-major).
        let layout_b = if what.ends_with("_tt") {
            Layout::Row
        } else {
            Layout::Column
        };
        assert_eq!(
            (k.gemm().a.layout, k.gemm().b.layout, k.gemm().c.layout),
            (Layout::Row, layout_b, layout_c),
            "{what}"
        );
        // 128-bit accesses: 128 / bits elements.
        assert_eq!(k.gemm().a.alignment, 128 / s.a.bits(), "{what}");
        assert_eq!(k.gemm().b.alignment, 128 / s.a.bits(), "{what}");
        assert_eq!(k.gemm().c.alignment, 128 / s.c.bits(), "{what}");
        assert_eq!(k.tile().as_array(), s.tile, "{what}");
        assert_eq!(k.design.cluster().as_array(), s.cluster, "{what}");
        assert_eq!(k.design.as_3x().unwrap().schedule, s.schedule, "{what}");
        assert_eq!(
            k.design.as_3x().unwrap().epilogue_schedule,
            EpilogueSchedule::Tma,
            "{what}"
        );
        assert_eq!(
            k.design.as_3x().unwrap().tile_scheduler,
            s.tile_scheduler,
            "{what}"
        );
        assert_eq!(
            k.may_need_workspace(1),
            s.tile_scheduler == TileScheduler::StreamK,
            "{what}"
        );
        // Decided by CUTLASS's builders, not the manifest.
        assert!(k.design.as_2x().is_none(), "{what}");
        assert_eq!(k.design.stages(), 0, "{what}");
        assert!(k.has_device_code(), "{what} has no device code");
        assert_eq!(
            k.entry.to_str().unwrap(),
            k.name,
            "{what}: entry symbol is the library name"
        );

        // CUTLASS 3.x library naming (cutlass_library/gemm_operation.py, "sm90a" for arch-
        // conditional code): types A, B, accumulator, C, D; tile; cluster; stages (0 = auto);
        // layouts; alignment; kernel schedule; epilogue schedule; tile scheduler.
        let type_name = |t: DType| {
            if t == DType::F32 && s.a == DType::F32 && s.rust_name.starts_with("tf32") {
                "tf32"
            } else if t == DType::F32 && s.rust_name.starts_with("f32_3xtf32") {
                "3xtf32"
            } else {
                t.manifest_name()
            }
        };
        let dims = |d: [u32; 3]| format!("{}x{}x{}", d[0], d[1], d[2]);
        let schedule = match s.schedule {
            KernelSchedule::Cooperative => "_warpspecialized_cooperative",
            KernelSchedule::Pingpong => "_warpspecialized_pingpong",
            other => panic!("{other:?}"),
        };
        let expected = format!(
            "cutlass3x_sm90a_tensorop_gemm_{a}_{a}_{acc}_{c}_{c}_{tile}_{cluster}_0_t{lb}{lc}_align{align}{schedule}_epi_tma{sk}",
            lb = if what.ends_with("_tt") { "t" } else { "n" },
            a = type_name(s.a),
            acc = s.accumulator.manifest_name(),
            c = s.c.manifest_name(),
            tile = dims(s.tile),
            cluster = dims(s.cluster),
            align = 128 / s.a.bits(),
            sk = if s.tile_scheduler == TileScheduler::StreamK { "_stream_k" } else { "" },
            lc = if what.ends_with("_tnn") { "n" } else { "t" },
        );
        assert_eq!(k.name, expected, "{what}");
        assert!(k.name.starts_with("cutlass3x_sm90a_tensorop_gemm_"));

        // The origin is the `- kind: gemm` line of an arch-90 entry of the manifest.
        let (file, line) = k.origin.split_once(':').unwrap();
        assert_eq!(file, "kernel_manifest.yaml");
        let line: usize = line.parse().unwrap();
        assert_eq!(
            lines[line - 1].trim(),
            "- kind: gemm",
            "{what}: origin {}",
            k.origin
        );
        let entry: Vec<&str> = lines[line..]
            .iter()
            .take_while(|l| !l.trim().starts_with("- kind"))
            .copied()
            .collect();
        assert!(entry.iter().any(|l| l.trim() == "arch: 90"), "{what}: {entry:?}");
    }
    // Spot checks against the manifest text itself.
    let tf32 = kernel("tf32_sm90_tn");
    assert_eq!(tf32.name, "cutlass3x_sm90a_tensorop_gemm_tf32_tf32_f32_f32_f32_128x128x32_2x1x1_0_tnt_align4_warpspecialized_cooperative_epi_tma");
    let s8 = kernel("s8_sm90_tn");
    assert_eq!((s8.gemm().c.element, s8.gemm().c.alignment), (DType::S32, 4));
    let e4m3 = kernel("e4m3_sm90_tn");
    assert_eq!(
        (
            e4m3.gemm().a.alignment,
            e4m3.gemm().c.element,
            e4m3.gemm().c.alignment
        ),
        (16, DType::Bf16, 8)
    );
}

#[test]
fn registry_filters_3x_kernels_by_schedule_and_cluster() {
    // Among the plain kernels (fusion.rs filters the fused ones).
    let names = |pred: &dyn Fn(&KernelInfo) -> bool| -> Vec<&str> {
        common::gemm_registry()
            .filter(|k| k.is_plain() && pred(k))
            .map(|k| k.rust_name)
            .collect()
    };
    assert_eq!(
        names(&|k| k
            .design
            .as_3x()
            .is_some_and(|d| d.tile_scheduler == TileScheduler::StreamK)),
        [
            "f16_sm90_128x128x64_streamk",
            "bf16_sm90_128x128x64_streamk",
            "f16_sm90_128x32x128_streamk_tnn",
            "f16_sm90_128x64x128_streamk_tnn",
            "bf16_sm90_128x32x128_streamk_tnn",
            "bf16_sm90_128x64x128_streamk_tnn"
        ]
    );
    assert_eq!(
        names(&|k| k
            .design
            .as_3x()
            .is_some_and(|d| d.schedule == KernelSchedule::Pingpong)),
        [
            "f16_sm90_128x128x64_2x1x1_pingpong",
            "bf16_sm90_128x128x64_2x1x1_pingpong"
        ]
    );
    assert_eq!(
        names(&|k| k.design.cluster() == Shape3::new(1, 2, 1)),
        [
            "f16_sm90_128x256x64_1x2x1_cooperative",
            "f16_sm90_256x128x64_1x2x1_cooperative",
            "f16_sm90_128x128x64_1x2x1_cooperative",
            "bf16_sm90_128x256x64_1x2x1_cooperative",
            "bf16_sm90_256x128x64_1x2x1_cooperative",
            "bf16_sm90_128x128x64_1x2x1_cooperative",
        ]
    );
    assert_eq!(
        names(&|k| k.api() == Api::Cutlass3x && k.is_plain() && k.gemm().a.element == DType::Bf16).len(),
        11
    );
    // 2.x kernels have a 2.x design (no 3.x scheduling) and act as 1x1x1 clusters.
    for k in &common::gemm_registry().all()[..COUNT_2X] {
        assert_eq!(k.design.cluster(), Shape3::new(1, 1, 1), "{}", k.rust_name);
        assert!(k.design.as_3x().is_none(), "{}", k.rust_name);
        assert!(!k.may_need_workspace(1));
    }
}

// ---------------------------------------------------------------------------------------------
// 2. runs_on and supports: 3.x kernels on exactly compute capability 9.0
// ---------------------------------------------------------------------------------------------

#[test]
fn kernels_3x_run_only_on_compute_capability_9_0() {
    for k in kernels_3x() {
        assert_eq!(k.runs_on(90), Ok(()), "{}", k.rust_name);
        for (cc, shown) in [(80, "8.0"), (89, "8.9"), (100, "10.0"), (120, "12.0")] {
            let message = k.runs_on(cc).expect_err(&format!("{} runs on {cc}", k.rust_name));
            assert_contains(&message, &format!("compute capability {shown}"));
            assert_contains(&message, "sm_90a");
            assert_contains(&message, "9.0");
            // The same reason from supports().
            let problem = GemmProblem::new(
                (256, 256, 256),
                (k.gemm().a.element, k.gemm().b.element, k.gemm().c.element),
                (k.gemm().a.layout, k.gemm().b.layout, k.gemm().c.layout),
            )
            .on_compute_capability(cc);
            let u = k
                .supports(&problem)
                .expect_err(&format!("{} supports cc {cc}", k.rust_name));
            assert_eq!(u.reasons, [message], "{}", k.rust_name);
            assert_eq!(
                k.supports(&problem.on_compute_capability(90)),
                Ok(()),
                "{}",
                k.rust_name
            );
        }
    }
    // 2.x kernels still run on 8.0 and everything newer, Hopper included.
    for k in &common::gemm_registry().all()[..COUNT_2X] {
        for cc in [80, 86, 89, 90, 100] {
            assert_eq!(k.runs_on(cc), Ok(()), "{} on {cc}", k.rust_name);
        }
        assert_contains(&k.runs_on(75).unwrap_err(), "needs 8.0 or newer");
    }
}

#[test]
fn supports_checks_3x_alignments_in_elements_of_each_type() {
    // e4m3: 16 elements (16 bytes) for A and B; bf16 C: 8 elements.
    let e4m3 = kernel("e4m3_sm90_tn");
    let problem = |m, n, k| {
        GemmProblem::new(
            (m, n, k),
            (DType::E4m3, DType::E4m3, DType::Bf16),
            (Layout::Row, Layout::Column, Layout::Row),
        )
    };
    assert_eq!(e4m3.supports(&problem(8, 16, 32)), Ok(()));
    let u = e4m3.supports(&problem(8, 16, 24)).unwrap_err();
    assert_eq!(u.reasons.len(), 2, "{u}");
    assert_contains(
        &u.to_string(),
        "A has 24 columns (its contiguous extent), not a multiple of the kernel's alignment 16",
    );
    let u = e4m3.supports(&problem(8, 12, 32)).unwrap_err();
    assert_eq!(
        u.reasons,
        ["C/D has 12 columns (its contiguous extent), not a multiple of the kernel's alignment 8"]
    );
    // Addresses: 16 bytes for A (16 × 1 byte) and C/D (8 × 2 bytes).
    let misaligned = GemmProblem {
        address_a: Some(ADDR_A + 8),
        address_c: Some(ADDR_C + 8),
        ..problem(16, 16, 16)
    };
    let u = e4m3.supports(&misaligned).unwrap_err();
    assert_eq!(u.reasons.len(), 2, "{u}");
    assert_contains(&u.to_string(), "not 16-byte aligned");
    // s8 → s32: C/D alignment 4 elements of 4 bytes.
    let s8 = kernel("s8_sm90_tn");
    let p = GemmProblem::new(
        (16, 20, 32),
        (DType::S8, DType::S8, DType::S32),
        (Layout::Row, Layout::Column, Layout::Row),
    );
    assert_eq!(s8.supports(&p), Ok(()));
    assert_contains(
        &s8.supports(&GemmProblem { n: 18, ..p }).unwrap_err().to_string(),
        "alignment 4",
    );
}

// ---------------------------------------------------------------------------------------------
// 3. plan
// ---------------------------------------------------------------------------------------------

#[test]
fn plan_accepts_3x_kernels_on_h100_only() {
    for k in kernels_3x() {
        let ops = operands(k, 4096, 4096, 4096);
        let args = plan(k, &ops, &H100).unwrap_or_else(|e| panic!("{}: {e}", k.rust_name));
        assert_eq!((args.m, args.n, args.k, args.batch_count), (4096, 4096, 4096, 1));
        assert_eq!(args.device_sms, 132);
        assert!(
            args.encode_tiled.is_none(),
            "plan leaves the encoder to the launch path"
        );
        assert!(args.workspace.is_null() && args.workspace_capacity == 0);
        for device in [
            A100,
            DeviceProps {
                name: "NVIDIA A100-SXM4-80GB",
                compute_capability: 100,
                ..H100
            },
        ] {
            match plan(k, &ops, &device) {
                Err(Error::UnsupportedDevice { kernel, message }) => {
                    assert_eq!(kernel, k.name);
                    assert_contains(&message, "sm_90a");
                }
                other => panic!(
                    "{} on cc {}: expected UnsupportedDevice, got {other:?}",
                    k.rust_name, device.compute_capability
                ),
            }
        }
    }
    // The 2.x kernels plan on both.
    let tn = kernel("gemm_bf16_tn");
    assert!(plan(tn, &operands(tn, 256, 256, 256), &H100).is_ok());
    assert!(plan(tn, &operands(tn, 256, 256, 256), &A100).is_ok());
}

// ---------------------------------------------------------------------------------------------
// 4. prepare: CUTLASS 3.x Params on the host
// ---------------------------------------------------------------------------------------------

#[test]
fn prepare_3x_without_an_encoder_says_so() {
    for name in [
        "bf16_sm90_128x256x64_2x1x1_cooperative",
        "f16_sm90_128x128x64_2x1x1_pingpong",
        "s8_sm90_tn",
    ] {
        let info = kernel(name);
        let args = args_for(info, 4096, 4096, 4096);
        assert!(args.encode_tiled.is_none());
        let message = invalid_message(info, info.prepare(&args));
        assert_contains(&message, "TMA encoder");
        assert_contains(&message, "encode_tiled");
    }
}

#[test]
fn prepare_every_3x_kernel_with_a_fake_encoder() {
    let (m, n, k) = (4096u32, 4096u32, 4096u32);
    for info in kernels_3x() {
        let what = info.rust_name;
        let args = with_workspace(args_for(info, m as usize, n as usize, k as usize), 1 << 30);
        let (result, calls) = prepare_fake(info, &args);
        let prepared = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        let launch = prepared.launch;
        // 1 producer warp group + 2 consumer warp groups: MaxThreadsPerBlock is 256 MMA threads +
        // 128 (sm90_gemm_tma_warpspecialized_cooperative.hpp) and 2 × 128 + 128
        // (sm90_gemm_tma_warpspecialized_pingpong.hpp, which static_asserts 384).
        assert_eq!(launch.block, [384, 1, 1], "{what}");
        assert_eq!(launch.cluster, info.design.cluster().as_array(), "{what}");
        let [gx, gy, gz] = launch.grid;
        assert_eq!(gx % info.design.cluster().m, 0, "{what}: grid {:?}", launch.grid);
        assert_eq!(gy % info.design.cluster().n, 0, "{what}: grid {:?}", launch.grid);
        assert_eq!(gz % info.design.cluster().k, 0, "{what}: grid {:?}", launch.grid);
        // Persistent: no more CTAs than SMs.
        assert!(gx * gy * gz <= 132, "{what}: grid {:?}", launch.grid);
        assert!(gx * gy * gz >= 1);
        if info.design.as_3x().unwrap().tile_scheduler == TileScheduler::Persistent {
            // Far more than 132 tiles: the grid fills the machine (see persistent_grid).
            let grid = persistent_grid(info.tile(), info.design.cluster(), m, n, 1, 132);
            assert_eq!(launch.grid, grid, "{what}");
            assert_eq!(grid[0] * grid[1] * grid[2], 132, "{what}");
            assert_eq!(
                launch.workspace_bytes, 0,
                "{what}: persistent kernels need no workspace"
            );
            assert_eq!(launch.fill_count, 0, "{what}");
        }
        assert!(
            launch.shared_mem_bytes > 48 * 1024,
            "{what}: {} bytes of shared memory",
            launch.shared_mem_bytes
        );
        assert!(
            launch.shared_mem_bytes <= H100.max_shared_memory_per_block_optin,
            "{what}: {}",
            launch.shared_mem_bytes
        );
        assert!(
            launch.params_bytes > 0 && launch.params_bytes as usize <= PARAMS_CAPACITY,
            "{what}"
        );
        assert_eq!(prepared.params().len(), launch.params_bytes as usize);
        assert_eq!(launch.driver_error, 0);

        // TMA descriptors: A, B, and for the TMA epilogue C and D.
        assert!(calls.len() >= 2, "{what}: {} encoder calls", calls.len());
        for call in &calls {
            assert!(call.problems.is_empty(), "{what}: bad TMA encode {call:?}");
        }
        let seen: HashSet<u64> = calls.iter().map(|c| c.address).collect();
        for (name, address) in [("A", ADDR_A), ("B", ADDR_B), ("D", ADDR_D)] {
            assert!(
                seen.contains(&address),
                "{what}: no descriptor for {name} ({address:#x}) in {calls:?}"
            );
        }
        // Element types of the descriptors (to_CUtensorMapDataType in copy_sm90_desc.hpp): the
        // mainloops load A and B as raw bits (`uint_bit_t<sizeof_bits<Element>>` in
        // sm90_mma_tma_gmma_ss_warpspecialized.hpp, unless the element is `float`; fp8 maps to
        // UINT8 in the fp8 mainloop); the epilogue loads C and stores D as their own type.
        let (ab_type, cd_type) = tensor_map_types(info);
        for call in &calls {
            let want = if [ADDR_A, ADDR_B].contains(&call.address) {
                ab_type
            } else {
                cd_type
            };
            assert_eq!(call.data_type, want, "{what}: {call:?}");
        }
        // The descriptors are part of the Params (CUTLASS copies them in).
        let params = prepared.params();
        for address in [ADDR_A, ADDR_B, ADDR_D] {
            assert!(
                contains_bytes(params, &fake_descriptor(address)),
                "{what}: descriptor of {address:#x} not in the Params"
            );
        }
    }
}

#[test]
fn prepare_3x_small_problems_launch_only_the_tiles_they_have() {
    // 256×256: one or two tiles, rounded up to whole clusters (worked out in persistent_grid).
    let cases: [(&str, [u32; 3]); 6] = [
        // 128×256 tiles: 2×1 tiles, cluster 2×1 → AlongN → (2, min(66, 1), 1).
        ("bf16_sm90_128x256x64_2x1x1_cooperative", [2, 1, 1]),
        // 2×1 tiles → n rounded up to cluster 1×2: 2×2 → AlongN → (1, min(132, 4), 1).
        ("bf16_sm90_128x256x64_1x2x1_cooperative", [1, 4, 1]),
        // 256×128: 1×2 tiles, m rounded up to cluster 2×1: 2×2 → AlongN → (2, min(66, 2), 1).
        ("f16_sm90_256x128x64_2x1x1_cooperative", [2, 2, 1]),
        // 1×2 tiles, cluster 1×2 → more columns than rows: AlongM → (min(66, 1), 2, 1).
        ("f16_sm90_256x128x64_1x2x1_cooperative", [1, 2, 1]),
        // 128×128: 2×2 tiles, cluster 2×1 → AlongN → (2, min(66, 2), 1).
        ("f16_sm90_128x128x64_2x1x1_cooperative", [2, 2, 1]),
        ("bf16_sm90_128x128x64_2x1x1_pingpong", [2, 2, 1]),
    ];
    for (name, grid) in cases {
        let info = kernel(name);
        let (result, _) = prepare_fake(info, &args_for(info, 256, 256, 256));
        let launch = result.unwrap_or_else(|e| panic!("{name}: {e}")).launch;
        assert_eq!(launch.grid, grid, "{name}");
        assert_eq!(
            launch.grid,
            persistent_grid(info.tile(), info.design.cluster(), 256, 256, 1, 132),
            "{name}"
        );
    }
    // A batch of 3: tiles of every batch count, the grid stays two-dimensional.
    let info = kernel("f16_sm90_128x128x64_2x1x1_cooperative");
    let mut ops = operands(info, 256, 256, 256);
    for (op, layout) in [
        (&mut ops.a, Layout::Row),
        (&mut ops.b, Layout::Column),
        (&mut ops.d, Layout::Row),
    ] {
        let shape = MatrixShape {
            batch_count: 3,
            ..op.shape
        };
        *op = operand(shape, layout, op.address);
    }
    let args = plan(info, &ops, &H100).unwrap();
    assert_eq!(
        args.mode,
        abi::cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_BATCHED as i32
    );
    let (result, _) = prepare_fake(info, &args);
    let launch = result.unwrap().launch;
    // 2×2 tiles × 3 = 12 → AlongN → (2, min(66, 6), 1).
    assert_eq!(launch.grid, [2, 6, 1]);
    assert_eq!(
        launch.grid,
        persistent_grid(info.tile(), info.design.cluster(), 256, 256, 3, 132)
    );
}

#[test]
fn prepare_3x_puts_c_alpha_and_beta_into_the_params() {
    let info = kernel("f16_sm90_128x256x64_2x1x1_cooperative");
    let mut ops = with_c(operands(info, 1024, 1024, 512), Layout::Row, -0.25);
    ops.alpha = 1.5;
    let args = plan(info, &ops, &H100).unwrap();
    assert_eq!(args.c as u64, ADDR_C);
    let (result, calls) = prepare_fake(info, &args);
    let prepared = result.unwrap_or_else(|e| panic!("{e}"));
    let seen: HashSet<u64> = calls.iter().map(|c| c.address).collect();
    assert_eq!(seen, HashSet::from([ADDR_A, ADDR_B, ADDR_C, ADDR_D]), "{calls:?}");
    let params = prepared.params();
    for address in [ADDR_A, ADDR_B, ADDR_C, ADDR_D] {
        assert!(contains_bytes(params, &fake_descriptor(address)), "{address:#x}");
    }
    // The epilogue computes in f32: alpha and beta are stored as f32.
    assert!(contains_bytes(params, &1.5f32.to_le_bytes()));
    assert!(contains_bytes(params, &(-0.25f32).to_le_bytes()));
    // s8 → s32 computes its epilogue in s32: alpha 3, beta -2 as i32.
    let s8 = kernel("s8_sm90_tn");
    let mut ops = with_c(operands(s8, 256, 256, 256), Layout::Row, -2.0);
    ops.alpha = 3.0;
    let (result, _) = prepare_fake(s8, &plan(s8, &ops, &H100).unwrap());
    let params = result.unwrap_or_else(|e| panic!("{e}")).params().to_vec();
    assert!(contains_bytes(&params, &3i32.to_le_bytes()));
    assert!(contains_bytes(&params, &(-2i32).to_le_bytes()));
}

#[test]
fn prepare_3x_reports_a_refused_tma_descriptor() {
    let info = kernel("bf16_sm90_128x256x64_2x1x1_cooperative");
    let mut args = args_for(info, 4096, 4096, 4096);
    args.encode_tiled = Some(refusing_encode::<1>);
    CALLS.with(|c| c.borrow_mut().clear());
    let message = invalid_message(info, info.prepare(&args));
    assert!(
        CALLS.with(|c| !c.borrow().is_empty()),
        "the encoder was not called"
    );
    assert_contains(&message, "CUresult 1");
    assert_contains(&message, "CUDA_ERROR_INVALID_VALUE");
    assert_contains(&message, "16-byte aligned");
    // Another code, another name.
    args.encode_tiled = Some(refusing_encode::<801>);
    let message = invalid_message(info, info.prepare(&args));
    assert_contains(&message, "CUresult 801, CUDA_ERROR_NOT_SUPPORTED");
    // The failure does not stick: the next call on this thread succeeds.
    let (result, calls) = prepare_fake(info, &args);
    assert!(result.is_ok(), "{:?}", result.err());
    assert!(!calls.is_empty());
}

#[test]
fn prepare_3x_runs_cutlass_can_implement() {
    // Calling prepare directly (plan would have caught it first) proves the C++ check is wired:
    // TMA needs 16-byte aligned contiguous extents, so K = 1028 (2056 bytes of bf16) is refused.
    let info = kernel("bf16_sm90_128x128x64_2x1x1_cooperative");
    let mut args = args_for(info, 1024, 1024, 1024);
    args.k = 1028;
    args.lda = 1028;
    args.ldb = 1028;
    let (result, calls) = prepare_fake(info, &args);
    assert_contains(
        &invalid_message(info, result),
        "can_implement rejected the problem",
    );
    assert!(calls.is_empty(), "no descriptor is built for a refused problem");
    args.k = 1024;
    args.lda = 1024;
    args.ldb = 1024;
    args.m = 0;
    let (result, _) = prepare_fake(info, &args);
    assert_contains(&invalid_message(info, result), "rejected the problem");
}

// ---------------------------------------------------------------------------------------------
// 5. Stream-K: workspace and fills
// ---------------------------------------------------------------------------------------------

#[test]
fn stream_k_needs_a_workspace_and_records_its_fills() {
    let info = kernel("bf16_sm90_128x128x64_streamk");
    assert!(info.may_need_workspace(1));
    // 1 × 8 output tiles of 128 K-iterations each on 132 SMs: CUTLASS splits them along K.
    let args = args_for(info, 128, 1024, 8192);

    // With a large workspace: Ok, and we learn how much it needs.
    let (result, calls) = prepare_fake(info, &with_workspace(args, 1 << 30));
    let prepared = result.unwrap_or_else(|e| panic!("{e}"));
    let launch = prepared.launch;
    let bytes = launch.workspace_bytes;
    assert!(bytes > 0, "a split problem needs a workspace");
    assert!(!calls.is_empty());
    assert_eq!(launch.block, [384, 1, 1]);
    assert_eq!(launch.cluster, [1, 1, 1]);
    // The stream-K scheduler's grid is never truncated to the output tiles
    // (PersistentTileSchedulerSm90StreamKParams::get_grid_shape passes truncate_by_problem_size =
    // false): 1×1 clusters, 8 tile columns > 1 tile row → raster AlongM → (132, 1, 1). Its
    // heuristic splits the 8 tiles' 128 K-iterations over 128 units (8 per unit at least): a split
    // that needs partial-sum and barrier workspace.
    assert_eq!(launch.grid, [132, 1, 1]);
    // The barrier part is zeroed on every launch (initialize_workspace in
    // tile_scheduler_params.h), through the runtime: recorded, not executed.
    assert!(
        launch.fill_count >= 1 && launch.fill_count as usize <= launch.fills.len(),
        "{launch:?}"
    );
    for fill in &launch.fills[..launch.fill_count as usize] {
        assert!([1, 2, 4].contains(&fill.element_bytes), "{fill:?}");
        assert!(fill.count > 0, "{fill:?}");
        assert!(
            fill.offset + fill.count * u64::from(fill.element_bytes) <= bytes,
            "fill {fill:?} outside the {bytes}-byte workspace"
        );
        assert_eq!(fill.value, 0, "semaphores start at zero");
    }
    for fill in &launch.fills[launch.fill_count as usize..] {
        assert_eq!(
            (fill.offset, fill.count, fill.element_bytes, fill.value),
            (0, 0, 0, 0),
            "unused fills stay zero"
        );
    }
    // The workspace address is part of the Params.
    assert!(contains_bytes(prepared.params(), &ADDR_WORKSPACE.to_le_bytes()));

    // No workspace: an error naming the bytes needed.
    let (result, calls) = prepare_fake(info, &args);
    let message = invalid_message(info, result);
    assert_contains(
        &message,
        &format!("needs {bytes} bytes of workspace but 0 were given"),
    );
    assert!(
        calls.is_empty(),
        "the workspace is checked before descriptors are built"
    );
    // A workspace one byte too small: the same.
    let (result, _) = prepare_fake(info, &with_workspace(args, bytes - 1));
    assert_contains(
        &invalid_message(info, result),
        &format!("needs {bytes} bytes of workspace but {} were given", bytes - 1),
    );
    // Capacity without an address is no workspace.
    let mut no_address = with_workspace(args, 1 << 30);
    no_address.workspace = std::ptr::null_mut();
    let (result, _) = prepare_fake(info, &no_address);
    assert_contains(
        &invalid_message(info, result),
        &format!("needs {bytes} bytes of workspace"),
    );
    // Exactly enough.
    let (result, _) = prepare_fake(info, &with_workspace(args, bytes));
    assert_eq!(
        result.unwrap_or_else(|e| panic!("{e}")).launch.workspace_bytes,
        bytes
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Dispatch
// ---------------------------------------------------------------------------------------------

static EMPTY: Table = Table::new("", "", &[]);

fn bf16_tn(m: usize, n: usize, k: usize, cc: u32) -> GemmProblem {
    GemmProblem::new(
        (m, n, k),
        (DType::Bf16, DType::Bf16, DType::Bf16),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .on_compute_capability(cc)
}

/// The device of compute capability `cc`: the H100, or an A100.
fn device_of(cc: u32) -> DeviceProps {
    if cc == 90 {
        H100
    } else {
        DeviceProps {
            name: "NVIDIA A100-SXM4-80GB",
            multiprocessors: 108,
            compute_capability: cc,
            max_shared_memory_per_block_optin: 166_912,
        }
    }
}

/// Dispatch's direct choice for `problem` with `table` under `policy`.
fn select_in(problem: &GemmProblem, table: &Table, policy: Policy) -> Result<dispatch::Selection, Error> {
    let cc = problem.compute_capability.unwrap_or(90);
    dispatch::select(common::gemm_registry(), table, problem, &device_of(cc), policy)
}

fn select(problem: &GemmProblem) -> Result<(&'static KernelInfo, Basis), Error> {
    select_in(problem, &EMPTY, Policy::default()).map(|s| (s.kernel, s.choice.basis))
}

/// The bare model's seconds of `kernel` on `problem` (as the kernel sees it) on the H100.
fn model_seconds(kernel: &KernelInfo, problem: &GemmProblem, split_k: usize) -> f64 {
    let work = dispatch::candidates::work_of(problem);
    select::cost::kernel_seconds(kernel, &work, split_k, 132)
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= want.abs() * 1e-12,
        "{what}: {got}, expected {want}"
    );
}

#[test]
fn model_picks_a_3x_kernel_on_hopper_for_4096_cubed() {
    // The busiest SM's multiply-adds on 132 SMs, with the tile penalty (1 + 32/tm + 32/tn):
    //   128×256: 512 tiles → ⌈512/132⌉ = 4 waves × 128·256·4096 × 1.375 = 738,197,504
    //   128×128: 1024 tiles → 8 waves × 128·128·4096 × 1.5 = 805,306,368
    // at 3.7e12 per SM per second, plus a quarter of the memory time (100,663,296 bytes at
    // 3e12/s) and a launch (2.5 µs). Four 128×256 / 256×128 kernels tie; the first in manifest
    // order wins.
    let problem = bf16_tn(4096, 4096, 4096, 90);
    let memory = 100_663_296.0 / 3e12;
    for (name, macs) in [
        ("bf16_sm90_128x256x64_2x1x1_cooperative", 738_197_504.0),
        ("bf16_sm90_256x128x64_1x2x1_cooperative", 738_197_504.0),
        ("bf16_sm90_128x128x64_2x1x1_pingpong", 805_306_368.0),
    ] {
        let want = macs / 3.7e12 + 0.25 * memory + 2.5e-6;
        assert_close(model_seconds(kernel(name), &problem, 1), want, name);
    }
    let (chosen, basis) = select(&problem).unwrap();
    assert_eq!(chosen.rust_name, "bf16_sm90_128x256x64_2x1x1_cooperative");
    assert_eq!(basis, Basis::Model);
    let f16 = GemmProblem {
        element_a: DType::F16,
        element_b: DType::F16,
        element_c: DType::F16,
        ..problem.clone()
    };
    assert_eq!(
        select(&f16).unwrap().0.rust_name,
        "f16_sm90_128x256x64_2x1x1_cooperative"
    );
    // On an A100 only 2.x kernels run.
    let (chosen, _) = select(&bf16_tn(4096, 4096, 4096, 80)).unwrap();
    assert_eq!(chosen.api(), Api::Cutlass2x, "{}", chosen.rust_name);
}

#[test]
fn small_m_problems_run_transposed_on_narrow_n_stream_k_tiles() {
    // m = 16, n = 4096, k = 8192 moves 67 MB (22 µs at 3e12/s): every kernel is bound by memory,
    // and the one wasting the least compute wins. As given, stream-K 128×128 spreads 32 tiles'
    // 128·128·8192 multiply-adds over 132 SMs; transposed (m' = 4096, n' = 16), stream-K 128×32
    // computes a quarter of that.
    let problem = bf16_tn(16, 4096, 8192, 90);
    let t = dispatch::transposed(&problem);
    assert_eq!((t.m, t.n, t.k), (4096, 16, 8192));
    assert_eq!(
        (t.layout_a, t.layout_b, t.layout_c),
        (Layout::Row, Layout::Column, Layout::Column)
    );
    assert_eq!(
        dispatch::transposed(&t),
        problem,
        "transposing twice gives the problem back"
    );
    let narrow = kernel("bf16_sm90_128x32x128_streamk_tnn");
    let square = kernel("bf16_sm90_128x128x64_streamk");
    assert!(model_seconds(narrow, &t, 1) < model_seconds(square, &problem, 1));
    let chosen = select_in(&problem, &EMPTY, Policy::default()).unwrap();
    assert_eq!(chosen.kernel.rust_name, "bf16_sm90_128x32x128_streamk_tnn");
    assert_eq!(chosen.orientation, dispatch::Orientation::Transposed);
    // A large square stays as given.
    let chosen = select_in(&bf16_tn(4096, 4096, 4096, 90), &EMPTY, Policy::default()).unwrap();
    assert_eq!(chosen.orientation, dispatch::Orientation::AsGiven);
    // The transposed operands are the same buffers with rows and columns exchanged.
    let ops = GemmOperands {
        a: operand(MatrixShape::packed(16, 8192, Layout::Row), Layout::Row, ADDR_A),
        b: operand(
            MatrixShape::packed(8192, 4096, Layout::Column),
            Layout::Column,
            ADDR_B,
        ),
        c: None,
        d: operand(MatrixShape::packed(16, 4096, Layout::Row), Layout::Row, ADDR_D),
        alpha: 2.0,
        beta: 0.0,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    let tops = dispatch::transposed_operands(&ops);
    assert_eq!(
        (tops.a.address, tops.b.address, tops.d.address),
        (ADDR_B, ADDR_A, ADDR_D)
    );
    assert_eq!(
        (tops.a.shape.rows, tops.a.shape.cols, tops.a.shape.ld),
        (4096, 8192, 8192)
    );
    assert_eq!(
        (tops.b.shape.rows, tops.b.shape.cols, tops.b.shape.ld),
        (8192, 16, 8192)
    );
    assert_eq!(
        (tops.d.shape.rows, tops.d.shape.cols, tops.d.shape.ld),
        (4096, 16, 4096)
    );
    assert_eq!(tops.alpha, 2.0);
}

#[test]
fn model_falls_back_to_2x_kernels_where_no_3x_kernel_fits() {
    // f64: 2.x DMMA kernels, Hopper's on Hopper (the bare model picks the smallest tile for a
    // 33x17 output), Ampere's on an A100.
    let f64_problem = GemmProblem::new(
        (33, 17, 5),
        (DType::F64, DType::F64, DType::F64),
        (Layout::Row, Layout::Row, Layout::Row),
    )
    .on_compute_capability(90);
    let (chosen, _) = select(&f64_problem).unwrap();
    assert_eq!(chosen.rust_name, "gemm_f64_tt_sm90_32x32x16");
    let (chosen, _) = select(&f64_problem.on_compute_capability(80)).unwrap();
    assert_eq!(chosen.rust_name, "gemm_f64_tt");
    // bf16 row × row: the 3.x "tt" kernel on Hopper, the 2.x one on an A100.
    let tt = GemmProblem {
        layout_b: Layout::Row,
        ..bf16_tn(4096, 4096, 4096, 90)
    };
    assert_eq!(
        select(&tt).unwrap().0.rust_name,
        "bf16_sm90_128x256x64_2x1x1_cooperative_tt"
    );
    assert_eq!(
        select(&tt.clone().on_compute_capability(80)).unwrap().0.rust_name,
        "gemm_bf16_tt"
    );
    // f32 row × column: f32 accuracy by default, so CUTLASS's sm80 3xTF32 (also on Hopper: the
    // Hopper kernel fed split operands is not f32-accurate, see gemm::split_tf32); TF32 only when
    // the policy allows it.
    let f32 = GemmProblem::new(
        (1024, 1024, 1024),
        (DType::F32, DType::F32, DType::F32),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .on_compute_capability(90);
    assert_eq!(select(&f32).unwrap().0.rust_name, "gemm_f32_3xtf32_tn");
    assert_eq!(
        select(&f32.clone().on_compute_capability(80))
            .unwrap()
            .0
            .rust_name,
        "gemm_f32_3xtf32_tn"
    );
    // (On Hopper the model may weigh a 2.x TF32 kernel at split-K against the 3.x one whose 1024²
    // output is 32 tiles for 132 SMs; either is TF32.)
    let tf32 = Policy { allow_tf32: true };
    let pick = |p: &GemmProblem| select_in(p, &EMPTY, tf32).unwrap().kernel;
    assert!(dispatch::rounds_to_tf32(pick(&f32)), "{}", pick(&f32).rust_name);
    assert_eq!(
        pick(&f32.clone().on_compute_capability(80)).rust_name,
        "gemm_tf32_tn"
    );
}

#[test]
fn dispatch_explains_when_no_kernel_fits() {
    // No kernel takes e5m2.
    let e5m2 = GemmProblem::new(
        (128, 128, 128),
        (DType::E5m2, DType::E5m2, DType::Bf16),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .on_compute_capability(90);
    match select(&e5m2) {
        Err(Error::InvalidArgument { kernel, message }) => {
            assert_eq!(kernel, "dispatch");
            assert_contains(
                &message,
                "no kernel of this build can run D = A·B (128x128x128, batch 1; A e5m2 row-major, B e5m2 column-major, C/D bf16 row-major)",
            );
            // A handful of lines: each distinct reason once, with how many kernels it excludes.
            assert!(message.lines().count() <= 15, "{message}");
            assert_contains(&message, "A is e5m2 but the kernel takes");
            assert_contains(&message, " kernels)");
            assert_contains(&message, "nearest: ");
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // The e4m3 kernel exists but not for an A100: the reason is the device.
    let e4m3 = GemmProblem {
        element_a: DType::E4m3,
        element_b: DType::E4m3,
        ..e5m2
    }
    .on_compute_capability(80);
    match select(&e4m3) {
        Err(Error::InvalidArgument { message, .. }) => {
            assert!(message.lines().count() <= 15, "{message}");
            assert_contains(&message, "nearest: e4m3_sm90_tn");
            assert_contains(&message, "sm_90a");
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(
        select(&e4m3.on_compute_capability(90)).unwrap().0.rust_name,
        "e4m3_sm90_tn"
    );
}

/// A row of `problem` (as its kernel ran it) for `kernel`.
fn row(
    problem: &GemmProblem,
    kernel: &'static KernelInfo,
    split_k: usize,
    tuning: cutlass_aot::Tuning,
    us: f64,
) -> Row {
    Row::new(dispatch::candidates::key_of(problem), kernel, split_k, tuning, us)
}

fn table(rows: Vec<Row>) -> &'static Table {
    Box::leak(Box::new(Table::new(
        "NVIDIA H100 80GB HBM3",
        "2026-01-01",
        Box::leak(rows.into_boxed_slice()),
    )))
}

#[test]
fn a_measured_way_runs_as_measured_and_unmeasured_problems_are_estimated() {
    let tuned = cutlass_aot::Tuning {
        raster: cutlass_aot::Raster::AlongM,
        max_swizzle: 4,
    };
    let coop = kernel("bf16_sm90_128x128x64_1x2x1_cooperative");
    let big = bf16_tn(4096, 4096, 4096, 90);
    let decode = bf16_tn(16, 4096, 8192, 80);
    let t = table(vec![
        row(&big, coop, 1, tuned, 200.0),
        row(
            &big,
            kernel("bf16_sm90_128x256x64_2x1x1_cooperative"),
            1,
            Default::default(),
            230.0,
        ),
        row(&decode, kernel("gemm_bf16_tn"), 2, Default::default(), 50.0),
    ]);
    // The fastest measured way, with its row's tuning.
    let chosen = select_in(&big, t, Policy::default()).unwrap();
    assert_eq!(chosen.kernel.rust_name, coop.rust_name);
    assert_eq!(
        (chosen.choice.basis, chosen.choice.estimate_us),
        (Basis::Measured, 200.0)
    );
    assert_eq!(chosen.tuning, tuned);
    // On an A100 the decode row's way (a 2.x kernel at 2 split-K slices).
    let chosen = select_in(&decode, t, Policy::default()).unwrap();
    assert_eq!((chosen.kernel.rust_name, chosen.split_k), ("gemm_bf16_tn", 2));
    assert_eq!(chosen.choice.basis, Basis::Measured);
    // Near the measured problem: estimated from the rows (the kernel's own, or its family's).
    let near = select_in(&bf16_tn(4000, 4096, 4096, 90), t, Policy::default()).unwrap();
    assert!(
        matches!(near.choice.basis, Basis::Calibrated(_)),
        "{:?}",
        near.choice
    );
    // f16: no f16 rows on this table, but a bf16 kernel's rows stand in for its f16 twin (the
    // two run at one speed).
    let f16 = GemmProblem {
        element_a: DType::F16,
        element_b: DType::F16,
        element_c: DType::F16,
        ..big.clone()
    };
    let twin = select_in(&f16, t, Policy::default()).unwrap();
    assert!(
        matches!(
            twin.choice.basis,
            Basis::Calibrated(select::calibration::Fit::Kernel { .. })
        ),
        "{:?}",
        twin.choice
    );
}

#[test]
fn problem_of_reads_extents_from_a_and_b_and_the_batch_from_d() {
    let signature = Signature {
        element_a: DType::Bf16,
        element_b: DType::Bf16,
        element_c: DType::Bf16,
        layout_a: Layout::Row,
        layout_b: Layout::Column,
        layout_c: Layout::Row,
    };
    let (m, n, k) = (64, 256, 128);
    // A: one padded matrix (ld 136) broadcast; B: a batch of 3; D: a batch of 3; no C.
    let a = operand(
        MatrixShape {
            ld: 136,
            batch_stride: 999,
            ..MatrixShape::packed(m, k, Layout::Row)
        },
        Layout::Row,
        ADDR_A,
    );
    let b_shape = MatrixShape {
        batch_count: 3,
        batch_stride: k * n + 64,
        ..MatrixShape::packed(k, n, Layout::Column)
    };
    let b = operand(b_shape, Layout::Column, ADDR_B);
    let d_shape = MatrixShape {
        batch_count: 3,
        ..MatrixShape::packed(m, n, Layout::Row)
    };
    let d = operand(d_shape, Layout::Row, ADDR_D);
    let ops = GemmOperands {
        a,
        b,
        c: None,
        d,
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    let p = dispatch::problem_of(signature, &ops, 90);
    assert_eq!((p.m, p.n, p.k, p.batch_count), (m, n, k, 3));
    assert_eq!(
        (p.element_a, p.element_b, p.element_c),
        (DType::Bf16, DType::Bf16, DType::Bf16)
    );
    assert_eq!(
        (p.layout_a, p.layout_b, p.layout_c),
        (Layout::Row, Layout::Column, Layout::Row)
    );
    assert_eq!(
        (p.lda, p.ldb, p.ldc),
        (Some(136), Some(k), Some(n)),
        "without C, C is D"
    );
    assert_eq!(
        p.batch_stride_a,
        Some(0),
        "a single matrix has stride 0, whatever its shape says"
    );
    assert_eq!(p.batch_stride_b, Some(k * n + 64));
    assert_eq!(p.batch_stride_c, Some(m * n), "without C, D's stride");
    assert_eq!(
        (p.address_a, p.address_b, p.address_c),
        (Some(ADDR_A), Some(ADDR_B), Some(ADDR_D))
    );
    assert_eq!(p.compute_capability, Some(90));

    // With a single C of its own leading dimension.
    let c = operand(
        MatrixShape {
            ld: 264,
            ..MatrixShape::packed(m, n, Layout::Row)
        },
        Layout::Row,
        ADDR_C,
    );
    let ops = GemmOperands {
        c: Some(c),
        beta: 1.0,
        split_k_slices: 1,
        fusion: Default::default(),
        ..ops
    };
    let p = dispatch::problem_of(signature, &ops, 80);
    assert_eq!(
        (p.ldc, p.batch_stride_c, p.address_c),
        (Some(264), Some(0), Some(ADDR_C))
    );
    assert_eq!((p.batch_count, p.compute_capability), (3, Some(80)));
    // Such a problem is what select sees: a 3.x kernel supports it on Hopper.
    let p = dispatch::problem_of(signature, &ops, 90);
    let (chosen, _) = select(&p).unwrap();
    assert_eq!(chosen.api(), Api::Cutlass3x, "{}", chosen.rust_name);
}

#[test]
fn dispatch_follows_the_embedded_measured_table() {
    // Every GEMM problem of the embedded H100 table runs a way at least as fast as each of its rows
    // (measured, or estimated clearly faster, in either orientation).
    let table = select::table_for(kernels::TABLES, H100.name, 90).expect("an H100 table");
    // (Rows of kernels dispatch does not pick by default, such as TF32 ones, are not candidates;
    // nor are the skinny kernels', which `select_in` does not weigh: they need the operands.)
    let rows: Vec<&Row> = table
        .rows
        .iter()
        .filter(|r| {
            r.key.op == "gemm"
                && Policy::default().allows(r.kernel)
                && !narrow_alignment(r.kernel)
                && cutlass_aot::dispatch::skinny::skinny_of(r.kernel).is_none()
        })
        .collect();
    assert!(
        !rows.is_empty(),
        "the build embeds bench/dispatch/nvidia_h100.tsv"
    );
    for r in rows {
        let [la, lb, lc] = r.key.layouts.unwrap();
        let [ea, eb, ec] = r.key.elements;
        let [m, n, k, batch, ..] = r.key.dims;
        let problem = GemmProblem::new((m, n, k), (ea, eb, ec), (la, lb, lc))
            .batched(batch)
            .on_compute_capability(90);
        let chosen = select_in(&problem, table, Policy::default()).unwrap();
        if chosen.choice.basis != Basis::Measured {
            let margin = cutlass_aot::select::UNMEASURED_MARGIN;
            assert!(
                chosen.choice.estimate_us * margin <= r.us,
                "{m}x{n}x{k}: {:?}",
                chosen.choice
            );
        }
        let oriented = chosen.orientation.problem(&problem);
        assert!(chosen.kernel.supports(&oriented).is_ok());
        assert!(
            chosen.choice.estimate_us <= r.us + 1e-9,
            "{m}x{n}x{k}: chose {} at {} us over the row's {} us",
            chosen.kernel.name,
            chosen.choice.estimate_us,
            r.us
        );
    }
}
