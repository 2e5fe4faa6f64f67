//! Host-side verification: test data in every element type, an f64 reference GEMM and the error
//! measure and tolerances the test suite, the examples and the profiler share.

use crate::matrix::MatrixShape;
use crate::model::{DType, Layout, MathOp, OpClass};
use crate::registry::KernelInfo;
use crate::types::{F8E4M3, F8E5M2};

/// Size in bytes of one element.
pub fn element_bytes(dtype: DType) -> usize {
    dtype.bits() as usize / 8
}

/// The nearest value of `dtype` to `v`, as the device converts to it when it stores a result:
/// round to nearest, ties to even, for every type.
///
/// * f16, bf16, f32: IEEE (overflow gives ±infinity).
/// * e4m3, e5m2: saturating to the largest finite value, infinities included, as CUTLASS's
///   conversion (`cvt.rn.satfinite`) does; NaN stays NaN. See [`F8E4M3::from_f64`].
/// * s8, s32: saturating to the type's range, as CUTLASS's `NumericConverter<int8_t, float,
///   round_to_nearest>` (`cvt.rni.sat.s8.f32`) does; NaN gives 0, as `cvt` does.
pub fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::Bf16 => half::bf16::from_f64(v).to_f64(),
        DType::F32 => v as f32 as f64,
        DType::F64 => v,
        DType::E4m3 => F8E4M3::from_f64(v).to_f64(),
        DType::E5m2 => F8E5M2::from_f64(v).to_f64(),
        DType::S8 => round_to_integer(v, i8::MIN.into(), i8::MAX.into()),
        DType::S32 => round_to_integer(v, i32::MIN.into(), i32::MAX.into()),
    }
}

/// Nearest integer (ties to even) clamped to [lo, hi]; NaN gives 0; never −0.
fn round_to_integer(v: f64, lo: f64, hi: f64) -> f64 {
    if v.is_nan() {
        return 0.0;
    }
    // `+ 0.0` turns −0 into +0, the value an integer type decodes to.
    v.round_ties_even().clamp(lo, hi) + 0.0
}

/// Little-endian device bytes of `values` in `dtype`, each rounded as [`round_to`] rounds it (so
/// NaN encodes as 0 in the integer types: they have no NaN to poison an output with).
pub fn encode(dtype: DType, values: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * element_bytes(dtype));
    for &v in values {
        match dtype {
            DType::F16 => out.extend_from_slice(&half::f16::from_f64(v).to_le_bytes()),
            DType::Bf16 => out.extend_from_slice(&half::bf16::from_f64(v).to_le_bytes()),
            DType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&v.to_le_bytes()),
            DType::E4m3 => out.push(F8E4M3::from_f64(v).to_bits()),
            DType::E5m2 => out.push(F8E5M2::from_f64(v).to_bits()),
            DType::S8 => out.extend_from_slice(&(round_to(DType::S8, v) as i8).to_le_bytes()),
            DType::S32 => out.extend_from_slice(&(round_to(DType::S32, v) as i32).to_le_bytes()),
        }
    }
    out
}

/// Values of device bytes in `dtype`.
pub fn decode(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    let size = element_bytes(dtype);
    bytes
        .chunks_exact(size)
        .map(|c| match dtype {
            DType::F16 => half::f16::from_le_bytes([c[0], c[1]]).to_f64(),
            DType::Bf16 => half::bf16::from_le_bytes([c[0], c[1]]).to_f64(),
            DType::F32 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F64 => f64::from_le_bytes(c.try_into().unwrap()),
            DType::E4m3 => F8E4M3::from_bits(c[0]).to_f64(),
            DType::E5m2 => F8E5M2::from_bits(c[0]).to_f64(),
            DType::S8 => f64::from(c[0] as i8),
            DType::S32 => f64::from(i32::from_le_bytes(c.try_into().unwrap())),
        })
        .collect()
}

/// Largest magnitude [`random_values`] gives in an integer type.
pub const RANDOM_INTEGER_MAX: i32 = 4;

/// `n` test values, already representable in `dtype` (xorshift; no dependency; the same `seed`
/// gives the same values):
///
/// * floating-point types: uniform in [-1, 1], rounded to `dtype` (for e4m3 and e5m2 that leaves
///   a few dozen distinct values, subnormals included);
/// * s8 and s32: integers uniform in [-4, 4] (±[`RANDOM_INTEGER_MAX`]). A product is at most 16
///   in magnitude, so an s32 accumulator cannot overflow below k = 2^27, and a dot product's
///   typical size (√k · 6.7, the RMS of a product of two such values being 20/3) stays far from
///   i32's range; s8 outputs of such products do saturate (at ±127) once √k · 6.7 nears 127, i.e.
///   for k in the hundreds, which the reference reproduces (see [`round_to`]).
pub fn random_values(dtype: DType, n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
            if dtype.is_integer() {
                let span = f64::from(2 * RANDOM_INTEGER_MAX + 1);
                (unit * span).floor() - f64::from(RANDOM_INTEGER_MAX)
            } else {
                round_to(dtype, unit * 2.0 - 1.0)
            }
        })
        .collect()
}

/// Where CUTLASS's interleaved int8 GEMMs expect column `col` of a `RowInterleaved32` B: permuted
/// within its group of 32 to the order the tensor-core fragments read (`cutlass::reorder_column<32>`
/// of CUTLASS's interleaved test bed).
pub fn reordered_column(col: usize) -> usize {
    (col / 32) * 32 + ((col % 8) / 2) * 8 + ((col % 32) / 8) * 2 + col % 2
}

/// Offset of element (row, col) of batch `batch`.
pub fn offset(shape: &MatrixShape, layout: Layout, batch: usize, row: usize, col: usize) -> usize {
    let within = match layout {
        Layout::Row => row * shape.ld + col,
        Layout::Column => col * shape.ld + row,
        // CUTLASS's ColumnMajorInterleaved<32> and RowMajorInterleaved<32>.
        Layout::ColumnInterleaved32 => (col / 32) * shape.ld + row * 32 + col % 32,
        Layout::RowInterleaved32 => (row / 32) * shape.ld + reordered_column(col) * 32 + row % 32,
    };
    batch * shape.batch_stride + within
}

/// A host matrix (possibly batched) in its device layout, values as f64.
#[derive(Clone, Debug)]
pub struct HostMatrix {
    pub shape: MatrixShape,
    pub layout: Layout,
    pub data: Vec<f64>,
}

impl HostMatrix {
    fn at(&self, batch: usize, row: usize, col: usize) -> f64 {
        // A single matrix is broadcast to every batch.
        let batch = if self.shape.batch_count == 1 { 0 } else { batch };
        self.data[offset(&self.shape, self.layout, batch, row, col)]
    }
}

/// D = alpha·A·B + beta·C in f64, written into `d` (elements outside the matrices are kept).
pub fn reference_gemm(
    a: &HostMatrix,
    b: &HostMatrix,
    c: Option<&HostMatrix>,
    d: &mut HostMatrix,
    alpha: f64,
    beta: f64,
) {
    let (m, k, n) = (a.shape.rows, a.shape.cols, b.shape.cols);
    for batch in 0..d.shape.batch_count {
        for row in 0..m {
            for col in 0..n {
                let mut acc = 0.0;
                for i in 0..k {
                    acc += a.at(batch, row, i) * b.at(batch, i, col);
                }
                let source = c.map_or(0.0, |c| c.at(batch, row, col));
                let at = offset(&d.shape, d.layout, batch, row, col);
                d.data[at] = alpha * acc + beta * source;
            }
        }
    }
}

/// ‖out − reference‖ / ‖reference‖ over all elements; infinite if any output is NaN or infinite,
/// or if the two have different lengths.
pub fn relative_error(out: &[f64], reference: &[f64]) -> f64 {
    if out.len() != reference.len() {
        return f64::INFINITY;
    }
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
        if !o.is_finite() {
            return f64::INFINITY;
        }
        diff += (o - r) * (o - r);
        norm += r * r;
    }
    if norm == 0.0 {
        diff.sqrt()
    } else {
        (diff / norm).sqrt()
    }
}

/// The [`relative_error`] a correct kernel stays under on [`random_values`] inputs (k up to a few
/// thousand), its output compared with the reference rounded to the output type ([`round_to`] of
/// `element_c`, as the test suite and the example do): the larger of an output term and a math
/// term.
///
/// Output term, by `element_c`. For the floating-point types it covers the rounding of the output
/// even against an unrounded reference; against the rounded one only results that land on the
/// other side of a rounding boundary differ (by one ulp), so it holds with room to spare.
/// * f16 2e-3, bf16 1e-2, f32 1e-5, f64 1e-12.
/// * e4m3 5e-2, e5m2 1e-1: twice the norm-wise rounding error of their 3 and 2 mantissa bits
///   (2.65e-2 and 5.3e-2 measured against an unrounded reference; the largest relative rounding
///   error of one element is 2^-4 and 2^-3). Against the rounded reference fp8 GEMMs on an H200
///   stayed under 4.1e-3, 1.3e-2 with fast (unpromoted) accumulation, for k from 16 to 8192.
/// * s8 and s32 with an integer epilogue: 0. Integer products and sums are exact, so a correct
///   kernel gives exactly the reference, saturation of s8 to [-128, 127] included (a kernel that
///   wraps instead of saturating is wrong here).
/// * s8 and s32 with a floating-point (f32) epilogue: 1e-3. With dyadic alpha and beta (1, 0.5,
///   1.5, −0.75) and results below 2^24 the f32 epilogue is exact; otherwise an exact result within
///   a few f32 ulps of a half-integer may round to the other neighbour, changing one element by 1.
///   1e-3 allows a handful of such elements in the smallest test matrices, while one wrong element
///   of typical size (tens) in a 10⁴-element matrix already exceeds it.
///
/// Math term, by operation class, A's type and the accumulator:
/// * f16 accumulation: 1e-2.
/// * f32 on tensor cores (TF32, 10-bit mantissa operands): 5e-3; the same for fast f16 (operands
///   rounded to f16), 1e-2 for fast bf16 (8-bit mantissa), 2e-5 for 3xTF32 (big and small TF32
///   parts, three MMAs: f32 accuracy, 250 times tighter than TF32's bound).
/// * fp8 on tensor cores: 2e-3. Products of fp8 values are exact, but Hopper's fp8 tensor cores sum
///   them at reduced precision before the f32 accumulator sees them: fp8 GEMMs with f32 output on
///   an H200 (cuBLASLt, inputs in [-1, 1]) erred by 8.5e-5 with periodic promotion to f32 (what
///   CUTLASS's non-`FastAccum` schedules do) and by up to 9.6e-4 (k = 4096) without it.
/// * integer accumulation: 0.
pub fn tolerance(info: &KernelInfo) -> f64 {
    let output = match info.element_c {
        DType::F16 => 2e-3,
        DType::Bf16 => 1e-2,
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
        DType::E4m3 => 5e-2,
        DType::E5m2 => 1e-1,
        DType::S8 | DType::S32 if info.element_epilogue.is_integer() => 0.0,
        DType::S8 | DType::S32 => 1e-3,
    };
    let math = match (info.opclass, info.element_a, info.element_accumulator) {
        (_, _, DType::F16) => 1e-2,
        (OpClass::TensorOp, DType::F32, _) => match info.math {
            MathOp::MultiplyAddFastF32 => 2e-5,  // 3xTF32: f32 accuracy
            MathOp::MultiplyAddFastBf16 => 1e-2, // operands rounded to bf16's 8-bit mantissa
            _ => 5e-3,                           // TF32 and fast f16: 10-bit mantissa operands
        },
        (OpClass::TensorOp, DType::E4m3 | DType::E5m2, _) => 2e-3,
        _ => 0.0,
    };
    f64::max(output, math)
}
