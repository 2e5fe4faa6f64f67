//! Host-side verification: test data in every element type, an f64 reference GEMM and the error
//! measure and tolerances the test suite, the examples and the profiler share.

use crate::matrix::MatrixShape;
use crate::model::{DType, Layout, OpClass};
use crate::registry::KernelInfo;

/// Size in bytes of one element.
pub fn element_bytes(dtype: DType) -> usize {
    dtype.bits() as usize / 8
}

/// The nearest value of `dtype` to `v`.
pub fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::Bf16 => half::bf16::from_f64(v).to_f64(),
        DType::F32 => v as f32 as f64,
        DType::F64 => v,
    }
}

/// Little-endian device bytes of `values` in `dtype`.
pub fn encode(dtype: DType, values: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * element_bytes(dtype));
    for &v in values {
        match dtype {
            DType::F16 => out.extend_from_slice(&half::f16::from_f64(v).to_le_bytes()),
            DType::Bf16 => out.extend_from_slice(&half::bf16::from_f64(v).to_le_bytes()),
            DType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&v.to_le_bytes()),
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
        })
        .collect()
}

/// `n` values uniform in [-1, 1], already representable in `dtype` (xorshift; no dependency).
pub fn random_values(dtype: DType, n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
            round_to(dtype, unit * 2.0 - 1.0)
        })
        .collect()
}

/// Offset of element (row, col) of batch `batch`.
pub fn offset(shape: &MatrixShape, layout: Layout, batch: usize, row: usize, col: usize) -> usize {
    let within = match layout {
        Layout::Row => row * shape.ld + col,
        Layout::Column => col * shape.ld + row,
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

/// The relative error a correct kernel stays under on inputs in [-1, 1] (k up to a few thousand):
/// output rounding of the C type, TF32 operand rounding, or low-precision accumulation.
pub fn tolerance(info: &KernelInfo) -> f64 {
    let output = match info.element_c {
        DType::F16 => 2e-3,
        DType::Bf16 => 1e-2,
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
    };
    let math = match (info.opclass, info.element_a, info.element_accumulator) {
        (_, _, DType::F16) => 1e-2,
        (OpClass::TensorOp, DType::F32, _) => 5e-3, // TF32: 10-bit mantissa operands
        _ => 0.0,
    };
    f64::max(output, math)
}
