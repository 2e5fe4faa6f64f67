//! Host-side verification: test data in every element type, an f64 reference GEMM and the error
//! measure and tolerances the test suite, the examples and the profiler share.

use crate::kernel::KernelInfo;
use crate::matrix::MatrixShape;
use crate::model::{Activation, AuxInput, Broadcast, DType, Epilogue, Layout, MathOp, OpClass, Residual};
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
    for_each_product(a, b, d.shape.batch_count, |batch, row, col, acc| {
        let source = c.map_or(0.0, |c| c.at(batch, row, col));
        let at = offset(&d.shape, d.layout, batch, row, col);
        d.data[at] = alpha * acc + beta * source;
    });
}

/// Calls `f(batch, row, col, A·B at (row, col))` for every element of `batches` products.
fn for_each_product(
    a: &HostMatrix,
    b: &HostMatrix,
    batches: usize,
    mut f: impl FnMut(usize, usize, usize, f64),
) {
    let (m, k, n) = (a.shape.rows, a.shape.cols, b.shape.cols);
    for batch in 0..batches {
        for row in 0..m {
            for col in 0..n {
                let acc = (0..k).map(|i| a.at(batch, row, i) * b.at(batch, i, col)).sum();
                f(batch, row, col, acc);
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
///   parts, three MMAs: f32 accuracy, 250 times tighter than TF32's bound); 5e-4 for Hopper's 3xTF32
///   by splitting K (its warpgroup MMA truncates the f32 accumulator: the error grows with K).
/// * fp8 on tensor cores: 2e-3. Products of fp8 values are exact, but Hopper's fp8 tensor cores sum
///   them at reduced precision before the f32 accumulator sees them: fp8 GEMMs with f32 output on
///   an H200 (cuBLASLt, inputs in [-1, 1]) erred by 8.5e-5 with periodic promotion to f32 (what
///   CUTLASS's non-`FastAccum` schedules do) and by up to 9.6e-4 (k = 4096) without it.
/// * integer accumulation: 0.
pub fn tolerance(info: &KernelInfo) -> f64 {
    let output = match info.gemm().c.element {
        DType::F16 => 2e-3,
        DType::Bf16 => 1e-2,
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
        DType::E4m3 => 5e-2,
        DType::E5m2 => 1e-1,
        DType::S8 | DType::S32 if info.epilogue.compute.is_integer() => 0.0,
        DType::S8 | DType::S32 => 1e-3,
    };
    let math = match (
        info.design.opclass(),
        info.gemm().a.element,
        info.gemm().accumulator,
    ) {
        (_, _, DType::F16) => 1e-2,
        (OpClass::TensorOp, DType::F32, _) => match info.gemm().math {
            // 3xTF32 by splitting K on Hopper: the warpgroup MMA truncates its f32 accumulator,
            // so the error grows with K (H100: 4.2e-5 at K = 4096, 8.1e-5 at 8192).
            MathOp::MultiplyAddFastF32 if info.api() == crate::model::Api::Cutlass3x => 5e-4,
            MathOp::MultiplyAddFastF32 => 2e-5,  // 3xTF32: f32 accuracy
            MathOp::MultiplyAddFastBf16 => 1e-2, // operands rounded to bf16's 8-bit mantissa
            _ => 5e-3,                           // TF32 and fast f16: 10-bit mantissa operands
        },
        (OpClass::TensorOp, DType::E4m3 | DType::E5m2, _) => 2e-3,
        _ => 0.0,
    };
    f64::max(output, math)
}

/// Host copies of a fused epilogue's operands, for [`reference_fused`].
#[derive(Clone, Debug, Default)]
pub struct HostFusion {
    pub bias: Option<Vec<f64>>,
    pub alpha_vector: Option<Vec<f64>>,
    pub beta_vector: Option<Vec<f64>>,
    /// A backward kernel's aux input (the forward pre-activation value), in C's layout.
    pub aux_input: Option<HostMatrix>,
    /// leaky_relu's slope.
    pub activation_arg: f64,
}

/// The derivative of `act` at `z` as CUTLASS's backward epilogues compute it (dReLU from Z; the
/// derivative of the tanh GELU), or `None` where CUTLASS has none.
pub fn activation_derivative(act: Activation, z: f64) -> Option<f64> {
    match act {
        Activation::Relu => Some(if z > 0.0 { 1.0 } else { 0.0 }),
        Activation::GeluTaylor => {
            let (k0, k1, k2) = (0.797_884_560_802_865_4, 0.044715, 0.107_032_224_3);
            let t = (k0 * z * (1.0 + k1 * z * z)).tanh();
            Some(0.5 * z * ((1.0 - t * t) * (k0 + k2 * z * z)) + 0.5 * (1.0 + t))
        }
        _ => None,
    }
}

/// An activation in f64, by its definition (the device computes it in f32, some with fast
/// approximations: see [`fused_tolerance`]).
pub fn activation(act: Activation, x: f64, arg: f64) -> f64 {
    match act {
        Activation::Identity => x,
        Activation::Relu => x.max(0.0),
        Activation::LeakyRelu => {
            if x > 0.0 {
                x
            } else {
                arg * x
            }
        }
        Activation::Tanh => x.tanh(),
        Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Activation::Silu => x / (1.0 + (-x).exp()),
        Activation::Hardswish => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        Activation::Gelu => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
        Activation::GeluTaylor => {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
        }
    }
}

/// The error function, to 1.2e-7 (Numerical Recipes' `erfc` by Chebyshev fit): far below the
/// f32 arithmetic of the device's GELU.
pub fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - erfc
    } else {
        erfc - 1.0
    }
}

/// The largest finite value of `dtype` (the range a clamp epilogue saturates to).
pub fn max_finite(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => half::f16::MAX.to_f64(),
        DType::Bf16 => half::bf16::MAX.to_f64(),
        DType::F32 => f32::MAX as f64,
        DType::F64 => f64::MAX,
        DType::E4m3 => 448.0,
        DType::E5m2 => 57344.0,
        DType::S8 => 127.0,
        DType::S32 => i32::MAX as f64,
    }
}

/// `info`'s whole epilogue in f64 for every element: D (into `d`) and, when `aux` is given, the
/// pre-activation value Z (into `aux`), from A·B, C, alpha, beta and the fused operands:
/// `Z = alpha·acc + beta·C + bias`, `D = act(Z)`; with a residual after the activation,
/// `Z = alpha·acc + bias` and `D = act(Z) + beta·C`. A per-row or per-column vector replaces
/// alpha or beta where given. A clamp epilogue saturates D to C's type. A backward kernel computes
/// `D = act'(Z)·(alpha·acc + beta·C)` with Z its aux input. Returns the row sums of D of the
/// first matrix of the batch (what a `reduction: row_sum` kernel writes).
#[allow(clippy::too_many_arguments)]
pub fn reference_fused(
    info: &KernelInfo,
    a: &HostMatrix,
    b: &HostMatrix,
    c: Option<&HostMatrix>,
    d: &mut HostMatrix,
    mut aux: Option<&mut HostMatrix>,
    (alpha, beta): (f64, f64),
    fused: &HostFusion,
) -> Vec<f64> {
    let f = &info.epilogue.fusion;
    let mut row_sums = vec![0.0; a.shape.rows];
    let pick = |vector: &Option<Vec<f64>>, broadcast: Broadcast, row: usize, col: usize, scalar: f64| match (
        vector, broadcast,
    ) {
        (Some(v), Broadcast::PerRow) => v[row],
        (Some(v), Broadcast::PerCol) => v[col],
        _ => scalar,
    };
    let backward = fused
        .aux_input
        .as_ref()
        .filter(|_| f.aux_input == AuxInput::PreActivation);
    for_each_product(a, b, d.shape.batch_count, |batch, row, col, acc| {
        let source = c.map_or(0.0, |c| c.at(batch, row, col));
        let alpha = pick(&fused.alpha_vector, f.scale, row, col, alpha);
        let beta = pick(&fused.beta_vector, f.scale, row, col, beta);
        let bias = pick(&fused.bias, f.bias, row, col, 0.0);
        let (z, d_value) = if let Some(z_in) = backward {
            let z = z_in.at(batch, row, col);
            let derivative = activation_derivative(f.activation, z).unwrap_or(f64::NAN);
            (z, derivative * (alpha * acc + beta * source))
        } else if f.residual == Residual::AfterActivation {
            let z = alpha * acc + bias;
            (
                z,
                activation(f.activation, z, fused.activation_arg) + beta * source,
            )
        } else {
            let z = alpha * acc + beta * source + bias;
            (z, activation(f.activation, z, fused.activation_arg))
        };
        let d_value = match info.epilogue.kind {
            Epilogue::LinearCombination => d_value,
            Epilogue::LinearCombinationClamp | Epilogue::FastLinearCombinationClamp => {
                let max = max_finite(info.gemm().c.element);
                let min = if info.gemm().c.element.is_integer() {
                    -max - 1.0
                } else {
                    -max
                };
                d_value.clamp(min, max)
            }
        };
        let at = offset(&d.shape, d.layout, batch, row, col);
        d.data[at] = d_value;
        if batch == 0 {
            row_sums[row] += d_value;
        }
        if let Some(aux) = aux.as_deref_mut() {
            let at = offset(&aux.shape, aux.layout, batch, row, col);
            aux.data[at] = z;
        }
    });
    row_sums
}

/// [`tolerance`] for a fused kernel: the device evaluates tanh, sigmoid, SiLU and the tanh GELU
/// with fast f32 approximations (`tanh.approx.f32`, relative error about 2^-11), which adds
/// about 1e-3 of error relative to outputs of order one.
pub fn fused_tolerance(info: &KernelInfo) -> f64 {
    let approximate = matches!(
        info.epilogue.fusion.activation,
        Activation::Tanh
            | Activation::Sigmoid
            | Activation::Silu
            | Activation::GeluTaylor
            | Activation::Hardswish
    );
    let activation = if approximate { 4e-3 } else { 0.0 };
    tolerance(info).max(activation)
}

/// The value an output is filled with before a launch, to catch unwritten or stray elements: NaN
/// for floating-point types, a value no test result takes for integers.
pub fn poison(dtype: DType) -> f64 {
    if dtype.is_integer() {
        -101.0
    } else {
        f64::NAN
    }
}

/// Whether `v` is [`poison`] of `dtype`.
pub fn is_poison(dtype: DType, v: f64) -> bool {
    if dtype.is_integer() {
        v == poison(dtype)
    } else {
        v.is_nan()
    }
}

/// The f64 reference of conv `problem` (any kind): `alpha · conv(a, b) + beta · c`, then
/// clamped to `element_c`'s range where `saturate`, with `a`, `b`, `c` and the result packed
/// channels-last in the roles of [`crate::model::ConvKind`] (`c` of the result's size, or empty
/// when beta is 0). Computed over fprop's index space, each product added into the tensor the
/// kind produces, so that one loop checks all three kinds against one definition.
pub fn reference_conv2d(
    problem: &crate::conv::Conv2dProblem,
    a: &[f64],
    b: &[f64],
    c: &[f64],
    (alpha, beta): (f64, f64),
) -> Vec<f64> {
    use crate::model::ConvKind;
    let pb = problem;
    let (p_out, q_out) = pb.output_size().expect("a valid problem");
    let (n, h, w, ch, k, r, s) = (pb.n, pb.h, pb.w, pb.c, pb.k, pb.r, pb.s);
    let x_at = |ni: usize, hi: usize, wi: usize, ci: usize| ((ni * h + hi) * w + wi) * ch + ci;
    let w_at = |ki: usize, ri: usize, si: usize, ci: usize| ((ki * r + ri) * s + si) * ch + ci;
    let y_at = |ni: usize, pi: usize, qi: usize, ki: usize| ((ni * p_out + pi) * q_out + qi) * k + ki;
    let flip = pb.mode == crate::conv::ConvMode::Convolution;
    let len = match pb.kind {
        ConvKind::Fprop => n * p_out * q_out * k,
        ConvKind::Dgrad => n * h * w * ch,
        ConvKind::Wgrad => k * r * s * ch,
    };
    let mut acc = vec![0.0f64; len];
    for ni in 0..n {
        for pi in 0..p_out {
            for ri in 0..r {
                let hi = (pi * pb.stride[0] + ri * pb.dilation[0]) as isize - pb.pad[0] as isize;
                if hi < 0 || hi >= h as isize {
                    continue;
                }
                for qi in 0..q_out {
                    for si in 0..s {
                        let wi = (qi * pb.stride[1] + si * pb.dilation[1]) as isize - pb.pad[1] as isize;
                        if wi < 0 || wi >= w as isize {
                            continue;
                        }
                        let (hi, wi) = (hi as usize, wi as usize);
                        let (rf, sf) = if flip { (r - 1 - ri, s - 1 - si) } else { (ri, si) };
                        for ki in 0..k {
                            let y = y_at(ni, pi, qi, ki);
                            for ci in 0..ch {
                                let (x, f) = (x_at(ni, hi, wi, ci), w_at(ki, rf, sf, ci));
                                match pb.kind {
                                    ConvKind::Fprop => acc[y] += a[x] * b[f],
                                    ConvKind::Dgrad => acc[x] += a[y] * b[f],
                                    ConvKind::Wgrad => acc[f] += a[y] * b[x],
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    acc.iter()
        .enumerate()
        .map(|(i, &v)| alpha * v + if beta == 0.0 { 0.0 } else { beta * c[i] })
        .collect()
}
