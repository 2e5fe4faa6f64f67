//! The rules of CUTLASS 3.x kernels (arch 90: sm_90a code built by CUTLASS's collective builders,
//! TMA loads and warpgroup MMA).

use super::{alignment_c, list, stage_bytes, zero_components, Finding};
use crate::model::{
    BatchMode, DType, EpilogueSchedule, GemmKernel, KernelSchedule, Layout, MathOp, OpClass, OperationKind,
    TileScheduler,
};

/// sm_90's shared memory per threadblock with the opt-in carve-out (227 KiB).
pub const SMEM_LIMIT_BYTES: u64 = 232_448;

/// The fewest pipeline stages: the producer fills one while the consumers read another.
const MIN_STAGES: u32 = 2;

const FP8_C: &[DType] = &[DType::F16, DType::Bf16, DType::F32, DType::E4m3, DType::E5m2];

/// The operand types of the warpgroup MMA, each with its allowed accumulators and C types.
#[rustfmt::skip]
const OPERANDS: &[(DType, &[DType], &[DType])] = &[
    // a           accumulator               c
    (DType::F16,  &[DType::F32, DType::F16], &[DType::F16, DType::F32]),
    (DType::Bf16, &[DType::F32],             &[DType::Bf16, DType::F32]),
    (DType::F32,  &[DType::F32],             &[DType::F32]), // TF32
    (DType::E4m3, &[DType::F32],             FP8_C),
    (DType::E5m2, &[DType::F32],             FP8_C),
    (DType::S8,   &[DType::S32],             &[DType::S32, DType::S8]),
];

/// `a`'s type as messages name it: f32 operands run as TF32.
fn operand(a: DType) -> String {
    if a == DType::F32 {
        "f32 (TF32)".to_string()
    } else {
        a.to_string()
    }
}

fn is_fp8(d: DType) -> bool {
    matches!(d, DType::E4m3 | DType::E5m2)
}

/// Every 3.x rule broken by `k`, appended to `out`.
pub fn check(k: &GemmKernel, out: &mut Vec<Finding>) {
    if k.opclass == OpClass::Simt {
        out.push((
            "opclass",
            "simt is not supported on arch 90; allowed: tensorop (CUTLASS 3.x kernels run on Hopper's \
             tensor cores; use arch 80 for simt kernels)"
                .to_string(),
        ));
    }
    // Layouts, alignments, the tile's K and shared memory depend on A's type: with a bad one they
    // would only add noise.
    let a_ok = types(k, out);
    if a_ok {
        layouts(k, out);
        alignments(k, out);
    }
    let tile_ok = !zero_components(&[("tile", k.tile)], out) && tile(k, a_ok, out);
    if !zero_components(&[("cluster", k.cluster)], out) {
        cluster(k, out);
    }
    schedules(k, tile_ok, out);
    if a_ok && stages(k, out) {
        shared_memory(k, out);
    }
    // multiply_add_fast_f32 on Hopper: an ordinary TF32 kernel that the runtime feeds operands
    // split into big and small TF32 parts along a 3x longer K (3xTF32 by splitting K).
    let split_tf32 = k.math == MathOp::MultiplyAddFastF32
        && k.element_a == DType::F32
        && k.element_b == DType::F32
        && k.kind == OperationKind::Gemm
        && k.batch_mode == BatchMode::Strided;
    if k.math != MathOp::MultiplyAdd && !split_tf32 {
        out.push((
            "math",
            format!(
                "{} is not supported on arch 90 (CUTLASS 3.x has no such Hopper mainloop); allowed: \
                 multiply_add, and multiply_add_fast_f32 for f32 GEMMs with strided batches (3xTF32 by \
                 splitting K; use arch 80 for the other fast-math kernels)",
                k.math
            ),
        ));
    }
}

/// Type rules; false if `a` itself is not an operand type of arch 90.
fn types(k: &GemmKernel, out: &mut Vec<Finding>) -> bool {
    let (a, b, acc, c) = (k.element_a, k.element_b, k.element_accumulator, k.element_c);
    let Some(&(_, accumulators, allowed_c)) = OPERANDS.iter().find(|(oa, ..)| *oa == a) else {
        // f64 on arch 90 is a 2.x kernel (`api_of`) and never reaches these rules.
        let allowed: Vec<String> = OPERANDS.iter().map(|(oa, ..)| operand(*oa)).collect();
        let message = format!(
            "{a} is not supported on arch 90; allowed: {}, and f64 (CUTLASS 2.x on Hopper's DMMA)",
            allowed.join(", ")
        );
        out.push(("a", message));
        return false;
    };
    if is_fp8(a) {
        if !is_fp8(b) {
            out.push((
                "b",
                format!(
                    "{b} is not allowed with a {a}; allowed: e4m3, e5m2 (8-bit float operands may mix \
                     their formats)"
                ),
            ));
        }
    } else if b != a {
        out.push((
            "b",
            format!(
                "{b} differs from a ({a}); on arch 90 b must equal a (or be left out); only the 8-bit \
                 floats e4m3 and e5m2 may be mixed"
            ),
        ));
    }
    if !accumulators.contains(&acc) {
        out.push((
            "accumulator",
            format!(
                "{acc} is not allowed with a {} on arch 90; allowed: {}",
                operand(a),
                list(accumulators)
            ),
        ));
    }
    if !allowed_c.contains(&c) {
        out.push((
            "c",
            format!("{c} is not allowed with a {a}; allowed: {}", list(allowed_c)),
        ));
    }
    if accumulators.contains(&acc) {
        // A wider epilogue is allowed; f16 and s32 accumulators may be scaled in f32.
        let allowed: &[DType] = match acc {
            DType::F16 => &[DType::F16, DType::F32],
            DType::S32 => &[DType::S32, DType::F32],
            _ => &[DType::F32],
        };
        let e = k.element_epilogue;
        if !allowed.contains(&e) {
            out.push((
                "epilogue_compute",
                format!(
                    "{e} is not allowed with accumulator {acc}; allowed: {}",
                    list(allowed)
                ),
            ));
        } else if c == DType::S8 && e != DType::F32 {
            out.push((
                "epilogue_compute",
                format!(
                    "{e} is not allowed with c s8: scaling int32 accumulators into int8 needs a float \
                     epilogue; allowed: f32 (write `epilogue_compute: f32`)"
                ),
            ));
        }
    }
    true
}

/// The warpgroup MMA reads 32-bit (TF32) and 8-bit operands from shared memory only K-major.
fn layouts(k: &GemmKernel, out: &mut Vec<Finding>) {
    for (field, layout) in [
        ("layout_a", k.layout_a),
        ("layout_b", k.layout_b),
        ("layout_c", k.layout_c),
    ] {
        if layout.interleave().is_some() {
            out.push((
                field,
                format!(
                    "{layout} is not supported on arch 90 (TMA reads row- and column-major tensors); allowed: \
                     row, column (interleaved layouts are for s8 on arch 80)"
                ),
            ));
            return;
        }
    }
    let a = k.element_a;
    if !matches!(a, DType::F32 | DType::E4m3 | DType::E5m2 | DType::S8) {
        return; // f16 and bf16 take all four layouts
    }
    let why = format!(
        "the warpgroup MMA reads {} operands only K-major, so A must be row-major and B column-major \
         (\"tn\")",
        operand(a)
    );
    if k.layout_a != Layout::Row {
        out.push((
            "layout_a",
            format!(
                "{} is not allowed for a {a} on arch 90; allowed: row ({why})",
                k.layout_a
            ),
        ));
    }
    if k.layout_b != Layout::Column {
        out.push((
            "layout_b",
            format!(
                "{} is not allowed for a {a} on arch 90; allowed: column ({why})",
                k.layout_b
            ),
        ));
    }
}

fn alignments(k: &GemmKernel, out: &mut Vec<Finding>) {
    let a = k.element_a;
    let want = a.max_alignment();
    if k.alignment_a != want {
        out.push((
            "alignment",
            format!(
                "{} is not allowed for {a} operands on arch 90; allowed: {want} (128 bits: TMA copies \
                 16-byte aligned rows)",
                k.alignment_a
            ),
        ));
    }
    alignment_c(k, out);
}

/// Tile rules; true if M is one the schedules can be checked against.
fn tile(k: &GemmKernel, a_ok: bool, out: &mut Vec<Finding>) -> bool {
    let t = k.tile;
    let m_ok = t.m % 64 == 0 && t.m <= 256;
    if !m_ok {
        out.push((
            "tile",
            format!(
                "{t} has M = {}; on arch 90 M must be a multiple of 64 up to 256 (a warp group's MMA \
                 covers 64 rows): allowed 64, 128, 192, 256",
                t.m
            ),
        ));
    }
    if !(t.n % 16 == 0 && (16..=256).contains(&t.n)) {
        out.push((
            "tile",
            format!(
                "{t} has N = {}; on arch 90 N must be a multiple of 16 from 16 to 256",
                t.n
            ),
        ));
    }
    if a_ok {
        let bits = k.element_a.bits();
        let step = 64 * 8 / bits;
        if t.k % step != 0 {
            out.push((
                "tile",
                format!(
                    "{t} has K = {}; for {} operands on arch 90 K must be a multiple of {step} (K must \
                     span a multiple of 64 bytes of {bits}-bit elements), e.g. {step} or {}",
                    t.k,
                    operand(k.element_a),
                    2 * step
                ),
            ));
        }
    }
    m_ok
}

fn cluster(k: &GemmKernel, out: &mut Vec<Finding>) {
    let c = k.cluster;
    if c.k != 1 {
        out.push((
            "cluster",
            format!(
                "{c} has k = {}; cluster K must be 1 (a cluster shares A and B tiles along M and N only)",
                c.k
            ),
        ));
    }
    let sizes = [1, 2, 4];
    if !sizes.contains(&c.m) || !sizes.contains(&c.n) {
        out.push((
            "cluster",
            format!("{c} is not allowed; cluster M and N must each be 1, 2 or 4"),
        ));
    } else if c.m * c.n > 8 {
        out.push((
            "cluster",
            format!(
                "{c} is {} CTAs; at most 8 are allowed (the portable cluster size limit)",
                c.m * c.n
            ),
        ));
    }
}

/// The kernel schedule against the tile, the epilogue schedule and the tile scheduler.
fn schedules(k: &GemmKernel, tile_ok: bool, out: &mut Vec<Finding>) {
    let (t, schedule) = (k.tile, k.schedule);
    if tile_ok && t.m % 128 != 0 {
        match schedule {
            KernelSchedule::Cooperative => out.push((
                "tile",
                format!(
                    "{t} has M = {}; schedule cooperative needs M a multiple of 128 (128 or 256): two \
                     consumer warp groups split M",
                    t.m
                ),
            )),
            // CUTLASS's builder resolves `auto` to pingpong for M = 64 and to cooperative otherwise.
            KernelSchedule::Auto if t.m != 64 => out.push((
                "tile",
                format!(
                    "{t} has M = {}; with schedule auto CUTLASS picks cooperative for every M but 64, and \
                     cooperative needs M a multiple of 128 (two consumer warp groups split M): use M 64, \
                     128 or 256, or name schedule pingpong or warpspecialized",
                    t.m
                ),
            )),
            _ => {}
        }
    }
    if k.epilogue_schedule != EpilogueSchedule::Auto && schedule == KernelSchedule::Auto {
        out.push((
            "epilogue_schedule",
            format!(
                "{} needs an explicit schedule (warpspecialized, cooperative or pingpong); with schedule \
                 auto CUTLASS's builder picks the epilogue too, so epilogue_schedule must be auto",
                k.epilogue_schedule
            ),
        ));
    }
    // Convolutions have their own stream-K kernels (rules_conv.rs).
    if k.tile_scheduler == TileScheduler::StreamK
        && schedule != KernelSchedule::Cooperative
        && k.conv_kind().is_none()
    {
        let why = match schedule {
            KernelSchedule::WarpSpecialized => {
                "warpspecialized kernels are not persistent: they run one CTA per output tile, so there is \
                 no work to split"
            }
            KernelSchedule::Pingpong => "CUTLASS's pingpong kernel has only the persistent tile scheduler",
            _ => {
                "with schedule auto CUTLASS may pick pingpong, which has no stream-K: write \
                 `schedule: cooperative`"
            }
        };
        out.push((
            "tile_scheduler",
            format!(
                "stream_k needs schedule cooperative, not {schedule} ({why}); allowed with schedule \
                 {schedule}: persistent"
            ),
        ));
    }
}

/// Stage count rules; true if the shared memory estimate makes sense (`auto` or a valid count).
fn stages(k: &GemmKernel, out: &mut Vec<Finding>) -> bool {
    // 0 is `auto` (a literal 0 was rejected by `arch_keys.rs`).
    if k.stages != 0 && k.stages < MIN_STAGES {
        out.push((
            "stages",
            format!(
                "{} is too few; allowed: auto, or {MIN_STAGES} or more (the producer warp group fills one \
                 stage while the consumers read another)",
                k.stages
            ),
        ));
        return false;
    }
    true
}

fn shared_memory(k: &GemmKernel, out: &mut Vec<Finding>) {
    let tile = k.tile;
    let (a_bytes, b_bytes) = stage_bytes(k);
    let per_stage = a_bytes.saturating_add(b_bytes);
    if k.stages == 0 {
        let bytes = per_stage.saturating_mul(u64::from(MIN_STAGES));
        if bytes > SMEM_LIMIT_BYTES {
            out.push((
                "tile",
                format!(
                    "shared memory for {MIN_STAGES} stages, the fewest `stages: auto` can pick, is {bytes} \
                 bytes ({MIN_STAGES} x ({a_bytes} bytes of A + {b_bytes} bytes of B) for tile {tile}), \
                 over sm_90's per-block limit of {SMEM_LIMIT_BYTES} bytes (227 KiB); use a smaller tile"
                ),
            ));
        }
    } else {
        let stages = u64::from(k.stages);
        let bytes = per_stage.saturating_mul(stages);
        if bytes > SMEM_LIMIT_BYTES {
            out.push((
                "tile",
                format!(
                "shared memory estimate {bytes} bytes ({stages} stages x ({a_bytes} bytes of A + {b_bytes} \
                 bytes of B) for tile {tile}) exceeds sm_90's per-block limit of {SMEM_LIMIT_BYTES} bytes \
                 (227 KiB); use a smaller tile, fewer stages or `stages: auto`"
            ),
            ));
        }
    }
}
