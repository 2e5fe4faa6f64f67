//! The rules of CUTLASS 2.x kernels (arch 80: universal GEMM for sm_80; f64 on arch 90: Hopper's
//! DMMA).

use super::{alignment_c, list, powers_of_two, stage_bytes, zero_components, Finding};
use crate::model::{DType, GemmKernel, Layout, MathOp, OpClass, OperationKind, Shape3, SplitK};

/// sm_80's shared memory per threadblock (163 KiB, with the opt-in carve-out).
pub const SMEM_LIMIT_BYTES: u64 = 166_912;

/// The element types of A and B on 2.x kernels; the others (8-bit floats) need Hopper's tensor cores.
const TYPES: &[DType] = &[DType::F16, DType::Bf16, DType::F32, DType::F64, DType::S8];

const fn s(m: u32, n: u32, k: u32) -> Shape3 {
    Shape3::new(m, n, k)
}

/// Supported (opclass, a, accumulator) combinations and their instruction shapes.
#[rustfmt::skip]
const COMBINATIONS: &[(OpClass, DType, DType, &[Shape3])] = &[
    (OpClass::TensorOp, DType::F16,  DType::F32, &[s(16, 8, 16), s(16, 8, 8)]),
    (OpClass::TensorOp, DType::F16,  DType::F16, &[s(16, 8, 16), s(16, 8, 8)]),
    (OpClass::TensorOp, DType::Bf16, DType::F32, &[s(16, 8, 16), s(16, 8, 8)]),
    (OpClass::TensorOp, DType::F32,  DType::F32, &[s(16, 8, 8), s(16, 8, 4)]), // TF32
    (OpClass::TensorOp, DType::F64,  DType::F64, &[s(8, 8, 4)]),
    (OpClass::TensorOp, DType::S8,   DType::S32, &[s(16, 8, 32)]),
    (OpClass::Simt,     DType::F32,  DType::F32, &[s(1, 1, 1)]),
    (OpClass::Simt,     DType::F64,  DType::F64, &[s(1, 1, 1)]),
];

/// Every 2.x rule broken by `k`, appended to `out`.
pub fn check(k: &GemmKernel, out: &mut Vec<Finding>) {
    if !TYPES.contains(&k.element_a) {
        // Every other rule depends on A's type: they would only add noise.
        out.push((
            "a",
            format!(
                "{} needs arch 90 (Hopper tensor cores, CUTLASS 3.x); allowed on arch 80: {}",
                k.element_a,
                list(TYPES)
            ),
        ));
        return;
    }
    if k.arch >= 90 && !hopper_f64(k, out) {
        return;
    }
    types(k, out);
    math(k, out);
    // Grouped kernels do not split K (their own rules report a `split_k`).
    if !k.is_grouped() && !matches!(k.split_k, SplitK::Serial | SplitK::Parallel) {
        out.push((
            "split_k",
            format!(
                "{} is not a 2.x split-K mode; allowed: serial (the default: slices add into D in turn), \
                 parallel (partial sums in the workspace, then a reduction kernel)",
                k.split_k
            ),
        ));
    }
    shapes(k, out);
    // Two stages: CUTLASS's register-staged mainloop (MmaPipelined), which also reads operands
    // narrower than cp.async's 4 bytes.
    let (low, high) = (2, 10);
    if !(low..=high).contains(&k.stages) {
        out.push((
            "stages",
            format!(
                "{} is out of range for {}; allowed: {low} to {high}",
                k.stages, k.opclass
            ),
        ));
    }
    alignments(k, out);
    if (low..=high).contains(&k.stages) {
        shared_memory(k, out); // with absurd stages the estimate would only add noise
    }
}

/// f64 on arch 90 (the only 2.x kernels there): plain GEMMs on Hopper's DMMA, as CUTLASS's library
/// builds them. False (with a finding) where the kernel is something else.
fn hopper_f64(k: &GemmKernel, out: &mut Vec<Finding>) -> bool {
    let elsewhere = "use arch 80 for it (sm_80 kernels run on sm_90 too)";
    if k.kind != OperationKind::Gemm || k.conv_kind().is_some() {
        let kind = if k.conv_kind().is_some() {
            "a convolution"
        } else {
            "a grouped GEMM"
        };
        out.push((
            "arch",
            format!(
                "90 with a f64 is a CUTLASS 2.x GEMM on Hopper's DMMA; this entry is {kind}: {elsewhere}"
            ),
        ));
        return false;
    }
    if k.opclass != OpClass::TensorOp {
        out.push((
            "opclass",
            format!(
                "{} with a f64 on arch 90 is not built (arch 90 f64 kernels run on Hopper's DMMA, \
                 opclass tensorop); for f64 on CUDA cores {elsewhere}",
                k.opclass
            ),
        ));
        return false;
    }
    true
}

fn types(k: &GemmKernel, out: &mut Vec<Finding>) {
    let (a, acc) = (k.element_a, k.element_accumulator);
    if k.element_b != a {
        out.push(("b", format!(
            "{} differs from a ({a}); mixed-input GEMM is not supported in version 1: b must equal a (or be left out)",
            k.element_b
        )));
    }
    let hopper: &[Shape3] = &[s(16, 8, 4)];
    match COMBINATIONS
        .iter()
        .find(|(op, ca, cacc, _)| (*op, *ca, *cacc) == (k.opclass, a, acc))
        .map(|&(op, ca, cacc, inst)| (op, ca, cacc, if k.arch >= 90 { hopper } else { inst }))
    {
        Some((_, _, _, instructions)) if !instructions.contains(&k.instruction) => {
            out.push((
                "instruction",
                format!(
                    "{} is not supported for {} with a {a} and accumulator {acc}; allowed: {}",
                    k.instruction,
                    k.opclass,
                    list(instructions)
                ),
            ));
        }
        Some(_) => {}
        None => {
            let allowed: Vec<String> = COMBINATIONS
                .iter()
                .filter(|(op, ..)| *op == k.opclass)
                .map(|(_, ca, cacc, _)| {
                    let tf32 = if k.opclass == OpClass::TensorOp && *ca == DType::F32 {
                        " (TF32)"
                    } else {
                        ""
                    };
                    format!("a {ca}{tf32} with accumulator {cacc}")
                })
                .collect();
            // Blame the accumulator if `a` itself is fine for this opclass.
            let field = if COMBINATIONS
                .iter()
                .any(|(op, ca, ..)| (*op, *ca) == (k.opclass, a))
            {
                "accumulator"
            } else {
                "a"
            };
            let op = k.opclass;
            let message = format!(
                "{op} with a {a} and accumulator {acc} is not supported; \
                 allowed {op} combinations: {}",
                allowed.join("; ")
            );
            out.push((field, message));
        }
    }
    let allowed_c: &[DType] = match a {
        DType::F64 => &[DType::F64],
        DType::F16 => &[DType::F16, DType::F32],
        DType::Bf16 => &[DType::Bf16, DType::F32],
        DType::S8 => &[DType::S8, DType::S32, DType::F32],
        _ => &[DType::F32],
    };
    if !allowed_c.contains(&k.element_c) {
        let why = if matches!(k.element_c, DType::E4m3 | DType::E5m2) {
            format!("{} needs arch 90 (CUTLASS 3.x); ", k.element_c)
        } else {
            String::new()
        };
        out.push((
            "c",
            format!(
                "{} is not allowed with a {a}; {why}allowed: {}",
                k.element_c,
                list(allowed_c)
            ),
        ));
    }
    // f16 and s32 accumulators may run their epilogue in f32; otherwise the epilogue computes in
    // the accumulator type.
    let allowed_epilogue: &[DType] = match acc {
        DType::F16 => &[DType::F16, DType::F32],
        DType::S32 => &[DType::S32, DType::F32],
        _ => &[acc],
    };
    if !allowed_epilogue.contains(&k.element_epilogue) {
        out.push((
            "epilogue_compute",
            format!(
                "{} is not allowed with accumulator {acc}; allowed: {}",
                k.element_epilogue,
                list(allowed_epilogue)
            ),
        ));
    } else if k.element_c == DType::S8 && k.element_epilogue != DType::F32 {
        out.push((
            "epilogue_compute",
            format!(
                "{} is not allowed with c s8: an integer epilogue would wrap on conversion to s8 instead of \
                 saturating; allowed: f32 (write `epilogue_compute: f32`, the default)",
                k.element_epilogue
            ),
        ));
    }
    layouts(k, out);
}

/// Interleaved layouts exist for s8 only, as CUTLASS's one combination (A n32, B t32, C n32); s8
/// otherwise reads both operands K-major (A row, B column).
fn layouts(k: &GemmKernel, out: &mut Vec<Finding>) {
    // A conv kernel's matrix layouts follow from its `tensor_layout` (rules_conv.rs).
    if k.conv_kind().is_some() {
        return;
    }
    let (la, lb, lc) = (k.layout_a, k.layout_b, k.layout_c);
    let interleaved = [la, lb, lc].iter().any(|l| l.interleave().is_some());
    let canonical = (
        Layout::ColumnInterleaved32,
        Layout::RowInterleaved32,
        Layout::ColumnInterleaved32,
    );
    if k.element_a != DType::S8 {
        if interleaved {
            out.push((
                "layout_a",
                format!(
                    "interleaved layouts are only for s8 (layouts are {la}, {lb}, {lc} with a {}); allowed: row, \
                     column",
                    k.element_a
                ),
            ));
        }
        return;
    }
    if interleaved {
        if (la, lb, lc) != canonical {
            out.push((
                "layout_a",
                format!(
                    "layouts {la}, {lb}, {lc} are not an interleaved combination CUTLASS builds; allowed for s8: \
                     layout_a column_interleaved_32, layout_b row_interleaved_32, layout_c column_interleaved_32"
                ),
            ));
        } else if k.alignment_c != 8 {
            out.push((
                "alignment_c",
                format!(
                    "{} is not allowed with an interleaved C; allowed: 8 (CUTLASS's interleaved epilogue \
                     stores 64 bits)",
                    k.alignment_c
                ),
            ));
        }
        if k.split_k == SplitK::Parallel {
            out.push((
                "split_k",
                "parallel split-K reduces row- or column-major outputs only; allowed with an interleaved C: \
                 serial"
                    .to_string(),
            ));
        }
    } else if (la, lb) != (Layout::Row, Layout::Column) {
        out.push((
            "layout_a",
            format!(
                "a {la}-major and b {lb}-major are not supported for s8: the int8 tensor-op instructions read \
                 both operands K-major; allowed: layout_a row with layout_b column (or the interleaved \
                 combination column_interleaved_32, row_interleaved_32, column_interleaved_32)"
            ),
        ));
    }
}

/// The math operator against the types: each fast-math variant exists for f32 operands on tensor
/// cores only, and the s8 instructions only as saturating multiply-adds.
fn math(k: &GemmKernel, out: &mut Vec<Finding>) {
    let (a, op) = (k.element_a, k.math);
    let f32_tensorop = a == DType::F32 && k.opclass == OpClass::TensorOp;
    let problem = match op {
        MathOp::MultiplyAdd if a == DType::S8 => Some(
            "multiply_add is not available for s8; allowed: multiply_add_saturate (the default for s8)".to_string(),
        ),
        MathOp::MultiplyAddSaturate if a != DType::S8 => Some(format!(
            "multiply_add_saturate is only for s8 operands; allowed for {a}: multiply_add{}",
            if f32_tensorop { ", multiply_add_fast_f32, multiply_add_fast_f16, multiply_add_fast_bf16" } else { "" }
        )),
        MathOp::MultiplyAddFastF32 | MathOp::MultiplyAddFastF16 | MathOp::MultiplyAddFastBf16 if !f32_tensorop => {
            Some(format!(
                "{op} is only for f32 operands on tensor cores (opclass tensorop, a f32); this kernel is {} with a {a}; \
                 allowed: {}",
                k.opclass,
                if a == DType::S8 { "multiply_add_saturate" } else { "multiply_add" }
            ))
        }
        MathOp::MultiplyAddFastF16 | MathOp::MultiplyAddFastBf16 if k.instruction != s(16, 8, 8) => Some(format!(
            "{op} multiplies with the 16x8x8 {} instruction, but instruction is {}; allowed: 16x8x8",
            op.f32_intermediate().unwrap_or("f16"),
            k.instruction
        )),
        _ => None,
    };
    if let Some(message) = problem {
        out.push(("math", message));
    }
}

fn shapes(k: &GemmKernel, out: &mut Vec<Finding>) {
    let shapes = [
        ("tile", k.tile),
        ("warps", k.warps),
        ("instruction", k.instruction),
    ];
    if zero_components(&shapes, out) {
        return; // the rules below divide by these shapes
    }
    let (tile, warps, inst) = (k.tile, k.warps, k.instruction);
    if warps.k != 1 {
        out.push((
            "warps",
            format!(
                "{warps} has k = {}; warps.k must be 1 (K is not split across warps)",
                warps.k
            ),
        ));
    }
    let divides =
        |big: Shape3, small: Shape3| big.m % small.m == 0 && big.n % small.n == 0 && big.k % small.k == 0;
    if !divides(tile, warps) {
        // Show the fractional warp tile so the offending dimension stands out.
        let parts: Vec<String> = tile
            .as_array()
            .iter()
            .zip(warps.as_array())
            .map(|(&t, w)| (f64::from(t) / f64::from(w)).to_string())
            .collect();
        out.push(("tile", format!(
            "{tile} is not divisible by warps {warps} (warp tile would be {}); each tile dimension must be a multiple of the warp count",
            parts.join("x")
        )));
    } else if !divides(k.warp_tile(), inst) {
        out.push(("tile", format!(
            "warp tile {} (tile {tile} / warps {warps}) is not divisible by instruction {inst}; each warp tile dimension must be a multiple of the instruction shape",
            k.warp_tile()
        )));
    }
    let warp_count = u64::from(warps.m) * u64::from(warps.n) * u64::from(warps.k);
    if warp_count * 32 > 1024 {
        out.push(("warps", format!(
            "{warps} is {warp_count} warps = {} threads per threadblock; at most 1024 threads (32 warps) are allowed",
            warp_count * 32
        )));
    }
}

fn alignments(k: &GemmKernel, out: &mut Vec<Finding>) {
    let a = k.element_a;
    // cp.async (used by multistage tensorop mainloops) copies 4, 8 or 16 bytes, never fewer; the
    // two-stage mainloop loads through registers and reads any alignment.
    let tensorop = k.opclass == OpClass::TensorOp && k.stages != 2;
    let allowed: Vec<u32> = powers_of_two(crate::model::max_ab_alignment(k.opclass, a))
        .into_iter()
        .filter(|&p| !tensorop || p * a.bits() / 8 >= 4)
        .collect();
    if !allowed.contains(&k.alignment_a) {
        let why = if tensorop {
            " and at least 4 bytes, because cp.async copies 4, 8 or 16 bytes; with stages: 2, any"
        } else {
            ""
        };
        out.push((
            "alignment",
            format!(
            "{} is not allowed for {} {a} operands; allowed: {} (a power of two of at most 128 bits{why})",
            k.alignment_a, k.opclass, list(&allowed)
        ),
        ));
    }
    alignment_c(k, out);
}

fn shared_memory(k: &GemmKernel, out: &mut Vec<Finding>) {
    let (tile, stages) = (k.tile, u64::from(k.stages));
    let (a_bytes, b_bytes) = stage_bytes(k);
    let bytes = stages.saturating_mul(a_bytes.saturating_add(b_bytes));
    if bytes > SMEM_LIMIT_BYTES {
        out.push(("tile", format!(
            "shared memory estimate {bytes} bytes ({stages} stages x ({a_bytes} bytes of A + {b_bytes} bytes of B) for tile {tile}) exceeds sm_80's per-block limit of {SMEM_LIMIT_BYTES} bytes (163 KiB); use a smaller tile or fewer stages"
        )));
    }
}
