//! GPU suite of elementwise kernels: every kernel of the manifest on a ragged, padded, batched
//! view (the scalar entry) and on a contiguous one (the vector entry), against an f64 host
//! reference rounded as the device rounds; every broadcast of y; fp8 quantisation with a scale
//! bit for bit; refusals before launch; discovery.
//!
//! Where no NVIDIA driver or device exists, every test is reported *ignored* with the reason.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use cutlass_aot::elementwise::{
    self, Broadcast, Elementwise, ElementwiseProblem, Op, Shape, Tensor, TensorMut,
};
use cutlass_aot::half::{bf16, f16};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::elementwise::Combine;
use cutlass_aot::model::{Activation, DType};
use cutlass_aot::{device, Element, KernelInfo, F8E4M3, F8E5M2};
use libtest_mimic::{Arguments, Failed, Trial};

#[path = "common/gpu_trial.rs"]
mod gpu_trial;

/// An element type as the host reference sees it.
trait Host: Element + DeviceRepr + ValidAsZeroBits + Copy + Unpin + 'static {
    fn to_f64(self) -> f64;
    /// The device's rounding of an exact value (nearest; 8-bit floats saturate; integers clamp).
    fn from_f64(v: f64) -> Self;
    /// Distance to the next representable value above |v| (the tolerance's unit).
    fn ulp(v: f64) -> f64;
}

macro_rules! float_host {
    ($t:ty, $mantissa:expr, $min_normal_exp:expr) => {
        impl Host for $t {
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            fn ulp(v: f64) -> f64 {
                let e = if v == 0.0 {
                    $min_normal_exp
                } else {
                    (v.abs().log2().floor() as i32).max($min_normal_exp)
                };
                2f64.powi(e - $mantissa)
            }
        }
    };
}
float_host!(f16, 10, -14);
float_host!(bf16, 7, -126);
float_host!(F8E4M3, 3, -6);
float_host!(F8E5M2, 2, -14);

impl Host for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn ulp(v: f64) -> f64 {
        2f64.powi((v.abs().max(1e-30).log2().floor() as i32).max(-126) - 23)
    }
}
impl Host for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn ulp(v: f64) -> f64 {
        2f64.powi((v.abs().max(1e-300).log2().floor() as i32).max(-1022) - 52)
    }
}
macro_rules! int_host {
    ($t:ty) => {
        impl Host for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                v.round_ties_even()
                    .clamp(<$t>::MIN as f64, <$t>::MAX as f64) as $t
            }
            fn ulp(_: f64) -> f64 {
                1.0
            }
        }
    };
}
int_host!(i8);
int_host!(i32);

/// erf to ~1e-15 (Abramowitz–Stegun's series would do for f16, not for f32 outputs): the
/// continued fraction of erfc for |x| > 3, else the Taylor series.
fn erf(x: f64) -> f64 {
    if x.abs() > 3.0 {
        let t = x.abs();
        let mut f = 0.0;
        for k in (1..60).rev() {
            f = k as f64 / 2.0 / (t + f);
        }
        let erfc = (-t * t).exp() / (t + f) / std::f64::consts::PI.sqrt();
        return x.signum() * (1.0 - erfc);
    }
    let mut sum = 0.0;
    let mut term = x;
    for n in 0..200 {
        sum += term / (2 * n + 1) as f64;
        term *= -x * x / (n + 1) as f64;
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

fn activate(a: Activation, v: f64, slope: f64) -> f64 {
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    match a {
        Activation::Identity => v,
        Activation::Relu => v.max(0.0),
        Activation::LeakyRelu => {
            if v > 0.0 {
                v
            } else {
                v * slope
            }
        }
        Activation::Tanh => v.tanh(),
        Activation::Sigmoid => sigmoid(v),
        Activation::Silu => v * sigmoid(v),
        Activation::Hardswish => v * (v + 3.0).clamp(0.0, 6.0) / 6.0,
        Activation::Gelu => 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2)),
        Activation::GeluTaylor => {
            0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
        }
    }
}

fn combine(c: Option<Combine>, a: f64, b: f64) -> f64 {
    match c {
        None => a,
        Some(Combine::Add) => a + b,
        Some(Combine::Sub) => a - b,
        Some(Combine::Mul) => a * b,
        Some(Combine::Min) => a.min(b),
        Some(Combine::Max) => a.max(b),
    }
}

/// Values of type T spread over its useful range (integers: whole numbers, including beyond an
/// s8 output's range so that clamping is exercised).
fn value<T: Host>(i: usize, salt: usize) -> T {
    let u = ((i * 7919 + salt * 104_729) % 4001) as f64 / 2000.0 - 1.0;
    let v = match T::DTYPE {
        DType::S8 => (u * 127.0).round(),
        DType::S32 => (u * 1000.0).round(),
        DType::E4m3 | DType::E5m2 => u * 8.0,
        _ => u * 4.0,
    };
    T::from_f64(v)
}

struct View {
    shape: Shape,
    /// Batch and row strides of x, y (when a tensor) and d.
    strides: [usize; 2],
    /// Elements of each buffer before the view's first (1 misaligns it for every vector width).
    offset: usize,
}

impl View {
    /// Elements of each buffer: the offset, then the view's extent.
    fn len(&self) -> usize {
        self.offset
            + (self.shape.batch - 1) * self.strides[0]
            + (self.shape.rows - 1) * self.strides[1]
            + self.shape.cols
    }
}

/// Runs `kernel` (x: X, y: X, d: D) on `view` with y a tensor of the same view and the given
/// alpha, beta and scale, and checks d.
fn check_kernel<X: Host, D: Host>(
    stream: &Arc<CudaStream>,
    kernel: &'static KernelInfo,
    view: &View,
    (alpha, beta, scale): (f64, f64, f64),
) -> Result<(), Failed> {
    let op = *kernel.operation.elementwise().expect("elementwise kernel");
    let n = view.len();
    let xh: Vec<X> = (0..n).map(|i| value(i, 1)).collect();
    let yh: Vec<X> = (0..n).map(|i| value(i, 2)).collect();
    let poison = D::from_f64(3.0);
    let dh = vec![poison; n];
    let (x, y) = (stream.clone_htod(&xh)?, stream.clone_htod(&yh)?);
    let mut d: CudaSlice<D> = stream.clone_htod(&dh)?;
    let slope = 0.1;
    let [sb, sr] = view.strides;
    // The views borrow d until the launch is queued.
    {
        let (x_view, y_view) = (x.slice(view.offset..), y.slice(view.offset..));
        let mut d_view = d.slice_mut(view.offset..);
        let xt = Tensor::new(&x_view, view.shape).with_strides(sb, sr);
        let dt = TensorMut::new(&mut d_view, view.shape).with_strides(sb, sr);
        let args = if op.combine.is_some() {
            Elementwise::<X, X, D>::binary(
                xt,
                Broadcast::tensor(Tensor::new(&y_view, view.shape).with_strides(sb, sr)),
                dt,
            )
        } else {
            Elementwise::unary(xt, dt)
        };
        elementwise::launch(
            kernel,
            stream,
            args.alpha(alpha).beta(beta).scale(scale).slope(slope),
        )?;
    }
    let got = stream.clone_dtoh(&d)?;
    let s = view.shape;
    let mut touched = vec![false; n];
    for b in 0..s.batch {
        for r in 0..s.rows {
            for c in 0..s.cols {
                let at = view.offset + b * sb + r * sr + c;
                touched[at] = true;
                let v = combine(op.combine, alpha * xh[at].to_f64(), beta * yh[at].to_f64());
                let exact = scale * activate(op.activation, v, slope);
                let want = D::from_f64(exact).to_f64();
                let g = got[at].to_f64();
                // One unit of d's rounding, plus the f32 arithmetic's own error; CUTLASS's tanh,
                // sigmoid, silu and tanh-GELU use the hardware's approximate tanh / exp (relative
                // error about 2^-11). The tanh-GELU's 0.5·v·(1 + tanh) keeps tanh's error as an
                // absolute one, which 1 + tanh cancels down to nothing for v well below 0.
                let math = match op.activation {
                    Activation::GeluTaylor => 0.5 * scale.abs() * v.abs() * 2f64.powi(-10),
                    Activation::Tanh | Activation::Sigmoid | Activation::Silu => {
                        1e-3 * (exact.abs() + scale * 1e-3)
                    }
                    _ => 4e-6 * exact.abs(),
                };
                let tol = D::ulp(want) * 1.01 + math + 1e-6;
                let same_nan = g.is_nan() && want.is_nan();
                if !same_nan && (g - want).abs() > tol {
                    return Err(format!(
                        "{}: d[{b},{r},{c}] = {g} but the host says {want} (exact {exact}; x {}, y {})",
                        kernel.name,
                        xh[at].to_f64(),
                        yh[at].to_f64()
                    )
                    .into());
                }
            }
        }
    }
    if let Some(at) = (0..n).find(|&i| !touched[i] && got[i].to_f64() != poison.to_f64()) {
        return Err(format!("{}: wrote element {at}, outside the view", kernel.name).into());
    }
    Ok(())
}

macro_rules! with_type {
    ($dtype:expr, $t:ident, $body:expr) => {
        match $dtype {
            DType::F16 => {
                type $t = f16;
                $body
            }
            DType::Bf16 => {
                type $t = bf16;
                $body
            }
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            DType::E4m3 => {
                type $t = F8E4M3;
                $body
            }
            DType::E5m2 => {
                type $t = F8E5M2;
                $body
            }
            DType::S8 => {
                type $t = i8;
                $body
            }
            DType::S32 => {
                type $t = i32;
                $body
            }
        }
    };
}

fn every_kernel(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let views = [
        // Ragged, padded rows and batches: the scalar entry.
        View {
            shape: Shape::new(2, 3, 37),
            strides: [3 * 41 + 5, 41],
            offset: 0,
        },
        // Contiguous: merged into one row, the vector entry.
        View {
            shape: Shape::new(2, 8, 64),
            strides: [512, 64],
            offset: 0,
        },
        // Padded but vector-aligned rows: the vector entry over rows.
        View {
            shape: Shape::new(1, 5, 32),
            strides: [0, 48],
            offset: 0,
        },
        // Contiguous over several blocks, the last one partial.
        View {
            shape: Shape::new(1, 3, 4104),
            strides: [0, 4104],
            offset: 0,
        },
        // Contiguous, 222 elements: whole vectors, then a tail of up to 15 elements one by one.
        View {
            shape: Shape::new(2, 3, 37),
            strides: [111, 37],
            offset: 0,
        },
        // Shorter than any vector: the tail alone.
        View {
            shape: Shape::new(1, 1, 1),
            strides: [0, 1],
            offset: 0,
        },
        // Padded rows of ragged width, wide enough for the scalar entry's Rows walk (a row of
        // blocks per row, several blocks across).
        View {
            shape: Shape::new(2, 2, 2100),
            strides: [2 * 2101 + 3, 2101],
            offset: 0,
        },
        // One row starting one element past an aligned address: the scalar entry, indexed linearly.
        View {
            shape: Shape::new(1, 2, 4099),
            strides: [0, 4099],
            offset: 1,
        },
    ];
    // General scalars, and alpha = beta = scale = 1, which the vector entry computes apart.
    let scalar_sets = [(0.75, -1.25, 1.5), (1.0, 1.0, 1.0)];
    assert!(
        REGISTRY.elementwise().len() >= 100,
        "the manifest's elementwise family is built"
    );
    for kernel in REGISTRY.elementwise() {
        let op = kernel.operation.elementwise().unwrap();
        for view in &views {
            for &scalars in &scalar_sets {
                with_type!(
                    op.x,
                    X,
                    with_type!(op.d, D, check_kernel::<X, D>(&stream, kernel, view, scalars)?)
                );
            }
        }
    }
    Ok(())
}

fn broadcasts(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    // 72 columns: whole vectors in every row; 73: ragged rows (the scalar entry) and, where the
    // view merges into one row (a scalar y), whole vectors and a tail; 1031: ragged rows wide
    // enough for the scalar entry's Rows walk.
    for cols in [72usize, 73, 1031] {
        let (batch, rows) = (3usize, 5usize);
        let shape = Shape::new(batch, rows, cols);
        let n = batch * rows * cols;
        let xh: Vec<f32> = (0..n).map(|i| value(i, 1)).collect();
        let yh: Vec<f32> = (0..rows * cols).map(|i| value(i, 2)).collect();
        let x = stream.clone_htod(&xh)?;
        let y = stream.clone_htod(&yh)?;
        // (name, y strides, how y's element for (b, r, c) is found)
        type At<'a> = &'a dyn Fn(usize, usize, usize) -> usize;
        let cases: [(&str, [usize; 3], At); 5] = [
            ("row", [0, 0, 1], &|_, _, c| c),
            ("column", [0, 1, 0], &|_, r, _| r),
            ("scalar", [0, 0, 0], &|_, _, _| 0),
            ("matrix per batch", [0, cols, 1], &|_, r, c| r * cols + c),
            ("transposed", [0, 1, 5], &|_, r, c| c * 5 + r),
        ];
        for (name, strides, at) in cases {
            for combine in [Combine::Max, Combine::Sub] {
                let mut d = stream.alloc_zeros::<f32>(n)?;
                let y = match name {
                    "row" => Broadcast::row(&y),
                    "column" => Broadcast::column(&y),
                    "scalar" => Broadcast::scalar(&y),
                    _ => Broadcast::strided(&y, strides),
                };
                let args = Elementwise::binary(Tensor::new(&x, shape), y, TensorMut::new(&mut d, shape))
                    .alpha(2.0)
                    .beta(0.5);
                let kernel = elementwise::run(&stream, Op::binary(combine), args)?;
                let got = stream.clone_dtoh(&d)?;
                for b in 0..batch {
                    for r in 0..rows {
                        for c in 0..cols {
                            let i = (b * rows + r) * cols + c;
                            let want = combine_f32(combine, 2.0 * xh[i], 0.5 * yh[at(b, r, c)]);
                            if got[i] != want {
                                return Err(format!(
                                    "{} with y {name}: d[{b},{r},{c}] = {} not {want}",
                                    kernel.name, got[i]
                                )
                                .into());
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn combine_f32(c: Combine, a: f32, b: f32) -> f32 {
    match c {
        Combine::Max => a.max(b),
        Combine::Sub => a - b,
        _ => unreachable!(),
    }
}

/// Quantisation to e4m3 with a scale, and back with its inverse: bit for bit the host's
/// round-to-nearest, saturating conversion.
fn fp8_with_scale(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let n = 10_000;
    let xh: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 20001) as f32 / 10000.0 - 1.0)
        .collect();
    let amax = xh.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = 448.0 / amax as f64 * 1.5; // some values saturate
    let x = stream.clone_htod(&xh)?;
    let mut q = stream.alloc_zeros::<F8E4M3>(n)?;
    elementwise::run(
        &stream,
        Op::unary(Activation::Identity),
        Elementwise::unary(Tensor::flat(&x), TensorMut::flat(&mut q)).scale(scale),
    )?;
    let got = stream.clone_dtoh(&q)?;
    for (i, (g, v)) in got.iter().zip(&xh).enumerate() {
        let want = F8E4M3::from_f32((*v as f64 * scale as f32 as f64) as f32);
        if g.to_bits() != want.to_bits() {
            return Err(format!("q[{i}] = {} not {} (x {v})", g.to_f32(), want.to_f32()).into());
        }
    }
    let mut back = stream.alloc_zeros::<f32>(n)?;
    elementwise::run(
        &stream,
        Op::unary(Activation::Identity),
        Elementwise::unary(Tensor::flat(&q), TensorMut::flat(&mut back)).alpha(1.0 / scale),
    )?;
    let back = stream.clone_dtoh(&back)?;
    for (i, (b, g)) in back.iter().zip(&got).enumerate() {
        let want = (g.to_f32() as f64 * (1.0 / scale) as f32 as f64) as f32;
        if (b - want).abs() > 1e-6 * want.abs() {
            return Err(format!("dequantised[{i}] = {b} not {want}").into());
        }
    }
    Ok(())
}

fn refusals_and_discovery(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let x = stream.alloc_zeros::<f16>(256)?;
    let mut d = stream.alloc_zeros::<f16>(255)?;
    let shape = Shape::new(1, 4, 64);
    let relu = Op::unary(Activation::Relu);
    let e = elementwise::run(
        &stream,
        relu,
        Elementwise::unary(Tensor::new(&x, shape), TensorMut::new(&mut d, shape)),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("d holds 255 elements"), "{e}");
    let mut d = stream.alloc_zeros::<f16>(256)?;
    let e = elementwise::run(
        &stream,
        relu,
        Elementwise::unary(Tensor::matrix(&x, 2, 64), TensorMut::new(&mut d, shape)),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("x's shape"), "{e}");
    let e = elementwise::run(
        &stream,
        relu,
        Elementwise::unary(
            Tensor::new(&x, shape),
            TensorMut::new(&mut d, shape).with_strides(0, 32),
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("rows would overlap"), "{e}");
    let mut d64 = stream.alloc_zeros::<f64>(256)?;
    let e = elementwise::run(
        &stream,
        relu,
        Elementwise::unary(Tensor::new(&x, shape), TensorMut::new(&mut d64, shape)),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("no compiled kernel computes") && e.contains("relu(alpha·x(f16))"),
        "{e}"
    );
    let e = elementwise::launch(
        &cutlass_aot::kernels::add_f16::INFO,
        &stream,
        Elementwise::<f16, f16, f16>::unary(Tensor::new(&x, shape), TensorMut::new(&mut d, shape)),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("give y"), "{e}");
    // An empty view launches nothing and succeeds.
    elementwise::run(
        &stream,
        relu,
        Elementwise::unary(
            Tensor::new(&x, Shape::new(0, 4, 64)),
            TensorMut::new(&mut d, Shape::new(0, 4, 64)),
        ),
    )?;
    // Discovery: by problem and metadata, beside every other kernel.
    let problem = ElementwiseProblem::new(relu, DType::F16, None, DType::F16);
    let found: Vec<&str> = REGISTRY.get_kernels(&problem, |_| true).map(|k| k.name).collect();
    assert_eq!(found, ["relu_f16"]);
    let bias = ElementwiseProblem::new(
        Op::binary(Combine::Add).then(Activation::Gelu),
        DType::Bf16,
        Some(DType::Bf16),
        DType::Bf16,
    );
    let found: Vec<&str> = REGISTRY
        .get_kernels(&bias, |k| k.tile().m > 0)
        .map(|k| k.name)
        .collect();
    assert_eq!(found, ["add_gelu_bf16"]);
    assert!(REGISTRY.kernels().any(|k| k.name == "convert_s32_to_e5m2"));
    let why = cutlass_aot::kernels::relu_f16::INFO
        .supports(&ElementwiseProblem::new(relu, DType::Bf16, None, DType::F16))
        .unwrap_err()
        .to_string();
    assert!(why.contains("x is bf16 but the kernel reads f16"), "{why}");
    Ok(())
}

fn main() {
    let gpu = device::context(0).map_err(|e| e.to_string());
    let tests: Vec<(&str, gpu_trial::GpuTest)> = vec![
        (
            "elementwise_every_kernel_scalar_and_vector_entries",
            Box::new(every_kernel),
        ),
        ("elementwise_broadcasts", Box::new(broadcasts)),
        ("elementwise_fp8_with_scale", Box::new(fp8_with_scale)),
        (
            "elementwise_refusals_and_discovery",
            Box::new(refusals_and_discovery),
        ),
    ];
    let trials: Vec<Trial> = tests
        .into_iter()
        .map(|(name, body)| gpu_trial::trial(&gpu, name.to_string(), body))
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
