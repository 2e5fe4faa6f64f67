//! GPU suite: every kernel of the default manifest against an f64 host reference, on ragged,
//! padded, batched and `beta ≠ 0` problems, plus the typed API and its rejections.
//!
//! Runs in plain `cargo test`. Where no NVIDIA driver or device exists, every test is reported as
//! *ignored* with the reason — never as passed. Build with `--release` for the GPU machine: the
//! host reference is a naive triple loop.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, DevicePtr};
use cutlass_aot::array::{ArrayOperand, ArrayOperands};
use cutlass_aot::kernels::{self, REGISTRY};
use cutlass_aot::model::{
    Activation, Api, AuxInput, AuxOutput, Broadcast, DType, Epilogue, Layout, Reduction, SplitK,
};
use cutlass_aot::verify::{self, HostFusion, HostMatrix};
use cutlass_aot::verify::{is_poison, poison};
use cutlass_aot::{
    device, FusionOperands, Gemm, GemmOperands, KernelInfo, MatrixMut, MatrixRef, MatrixShape, Operand,
    VectorOperand,
};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    with_c: bool,
    alpha: f64,
    beta: f64,
    /// Extra leading-dimension padding, in units of the operand's alignment.
    pad: usize,
    /// B is one matrix broadcast to every batch.
    broadcast_b: bool,
    /// K split into this many slices (the kernel's split-K mode).
    split_k: usize,
}

const CASES: &[Case] = &[
    Case {
        name: "ragged",
        m: 197,
        n: 263,
        k: 71,
        batch: 1,
        with_c: false,
        alpha: 1.0,
        beta: 0.0,
        pad: 0,
        broadcast_b: false,
        split_k: 1,
    },
    Case {
        name: "ragged_padded_beta",
        m: 133,
        n: 77,
        k: 300,
        batch: 1,
        with_c: true,
        alpha: 1.5,
        beta: -0.75,
        pad: 1,
        broadcast_b: false,
        split_k: 1,
    },
    Case {
        name: "batched_beta",
        m: 67,
        n: 45,
        k: 130,
        batch: 3,
        with_c: true,
        alpha: 0.5,
        beta: 0.5,
        pad: 0,
        broadcast_b: false,
        split_k: 1,
    },
    Case {
        name: "batched_broadcast_b",
        m: 64,
        n: 40,
        k: 24,
        batch: 4,
        with_c: false,
        alpha: 1.0,
        beta: 0.0,
        pad: 2,
        broadcast_b: true,
        split_k: 1,
    },
    // Few output tiles and a long K: stream-K kernels split K across CTAs and reduce through
    // their workspace (which the runtime must clear before every launch).
    Case {
        name: "few_tiles_long_k",
        m: 128,
        n: 256,
        k: 4096,
        batch: 1,
        with_c: true,
        alpha: 1.0,
        beta: 0.5,
        pad: 0,
        broadcast_b: false,
        split_k: 1,
    },
    Case {
        name: "square_512",
        m: 512,
        n: 512,
        k: 512,
        batch: 1,
        with_c: true,
        alpha: 1.0,
        beta: 1.0,
        pad: 0,
        broadcast_b: false,
        split_k: 1,
    },
];

/// Split-K cases, for every kernel that can split K: ragged with C, and many thin slices.
const SPLIT_K_CASES: &[Case] = &[
    Case {
        name: "split_k_4_ragged_beta",
        m: 520,
        n: 264,
        k: 3000,
        batch: 1,
        with_c: true,
        alpha: 1.5,
        beta: -0.75,
        pad: 1,
        broadcast_b: false,
        split_k: 4,
    },
    Case {
        name: "split_k_16",
        m: 256,
        n: 136,
        k: 2048,
        batch: 1,
        with_c: false,
        alpha: 1.0,
        beta: 0.0,
        pad: 0,
        broadcast_b: false,
        split_k: 16,
    },
];

/// What every extent of a test problem is rounded up to: the largest alignment, and 32 for
/// kernels with interleaved layouts (whose groups of 32 must be whole).
fn extent_multiple(info: &KernelInfo) -> usize {
    let align = [
        info.gemm().a.alignment,
        info.gemm().b.alignment,
        info.gemm().c.alignment,
    ]
    .into_iter()
    .max()
    .unwrap() as usize;
    let interleaved = [info.gemm().a.layout, info.gemm().b.layout, info.gemm().c.layout]
        .iter()
        .any(|l| l.interleave().is_some());
    if interleaved {
        align.max(32)
    } else {
        align
    }
}

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// A host matrix of `rows × cols` (× batch) in `layout`, ld padded by `pad` alignment units,
/// filled with random values from `seed`, or with the poison of an output without one.
fn host_matrix(
    (dtype, layout, align): (DType, Layout, u32),
    (rows, cols, batch): (usize, usize, usize),
    pad: usize,
    seed: Option<u64>,
) -> HostMatrix {
    // Padding keeps an interleaved layout's groups of 32 whole.
    let align = align as usize * layout.interleave().unwrap_or(1) as usize;
    let packed = MatrixShape::packed(rows, cols, layout);
    let ld = packed.ld + pad * align;
    let batch_stride = round_up(packed.outer(layout) * ld, align);
    let shape = MatrixShape {
        ld,
        batch_count: batch,
        batch_stride,
        ..packed
    };
    let len = shape.required_len(layout).unwrap();
    let data = match seed {
        Some(seed) => verify::random_values(dtype, len, seed),
        None => vec![poison(dtype); len],
    };
    HostMatrix { shape, layout, data }
}

struct DeviceMatrix {
    host: HostMatrix,
    dtype: DType,
    buffer: cudarc::driver::CudaSlice<u8>,
}

impl DeviceMatrix {
    fn upload(stream: &Arc<CudaStream>, host: HostMatrix, dtype: DType) -> Result<Self, Failed> {
        let buffer = stream
            .clone_htod(&verify::encode(dtype, &host.data))
            .map_err(|e| format!("upload: {e}"))?;
        Ok(DeviceMatrix { host, dtype, buffer })
    }

    fn operand(&self, stream: &CudaStream) -> Operand {
        let (address, _guard) = self.buffer.device_ptr(stream);
        Operand {
            shape: self.host.shape,
            len: self.buffer.len() / verify::element_bytes(self.dtype),
            address,
        }
    }
}

/// Runs `info` on `case` through the registry's untyped path and checks every output element
/// against the reference, and that nothing outside D's matrices was written.
fn run_case(ctx: &Arc<CudaContext>, info: &'static KernelInfo, case: Case) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let align = extent_multiple(info);
    let (m, n, k) = (
        round_up(case.m, align),
        round_up(case.n, align),
        round_up(case.k, align),
    );
    let seed = (info.name.len() * 7919 + case.name.len()) as u64;
    let a = host_matrix(
        (
            info.gemm().a.element,
            info.gemm().a.layout,
            info.gemm().a.alignment,
        ),
        (m, k, case.batch),
        case.pad,
        Some(seed),
    );
    let b_batch = if case.broadcast_b { 1 } else { case.batch };
    let b = host_matrix(
        (
            info.gemm().b.element,
            info.gemm().b.layout,
            info.gemm().b.alignment,
        ),
        (k, n, b_batch),
        case.pad,
        Some(seed + 1),
    );
    let c = case.with_c.then(|| {
        host_matrix(
            (
                info.gemm().c.element,
                info.gemm().c.layout,
                info.gemm().c.alignment,
            ),
            (m, n, case.batch),
            case.pad,
            Some(seed + 2),
        )
    });
    let d = host_matrix(
        (
            info.gemm().c.element,
            info.gemm().c.layout,
            info.gemm().c.alignment,
        ),
        (m, n, case.batch),
        case.pad,
        None,
    );

    // Integer epilogues take integer scalars (fractions are refused): scale the case's.
    let (alpha, beta) = if info.epilogue.compute.is_integer() {
        ((case.alpha * 2.0).round(), (case.beta * 2.0).round())
    } else if clamps_floats(info) {
        // Push most results past the output type's range, so that the clamp is what is tested.
        (case.alpha * 2e4, case.beta)
    } else {
        (case.alpha, case.beta)
    };
    // A fused epilogue's operands: random bias and scale vectors, a poisoned aux output, a random
    // aux input (backward kernels).
    let mut fused = host_fusion(info, (m, n), case.with_c, seed + 3);
    if info.epilogue.fusion.aux_input != AuxInput::None {
        fused.aux_input = Some(host_matrix(
            (
                info.gemm().c.element,
                info.gemm().c.layout,
                info.gemm().c.alignment,
            ),
            (m, n, case.batch),
            case.pad,
            Some(seed + 7),
        ));
    }
    let aux = (info.epilogue.fusion.aux_output != AuxOutput::None).then(|| d.clone());
    let mut expected = d.clone();
    let mut expected_aux = aux.clone();
    let expected_row_sums = verify::reference_fused(
        info,
        &a,
        &b,
        c.as_ref(),
        &mut expected,
        expected_aux.as_mut(),
        (alpha, beta),
        &fused,
    );
    let vectors = DeviceVectors::upload(&stream, info, &fused)?;
    let daux = aux
        .map(|aux| DeviceMatrix::upload(&stream, aux, info.gemm().c.element))
        .transpose()?;
    let daux_input = fused
        .aux_input
        .clone()
        .map(|aux| DeviceMatrix::upload(&stream, aux, info.gemm().c.element))
        .transpose()?;
    let row_sums = (info.epilogue.fusion.reduction != Reduction::None)
        .then(|| stream.clone_htod(&verify::encode(info.epilogue.compute, &vec![f64::NAN; m])))
        .transpose()
        .map_err(|e| format!("upload: {e}"))?;

    let da = DeviceMatrix::upload(&stream, a, info.gemm().a.element)?;
    let db = DeviceMatrix::upload(&stream, b, info.gemm().b.element)?;
    let dc = c
        .map(|c| DeviceMatrix::upload(&stream, c, info.gemm().c.element))
        .transpose()?;
    let poisoned = d.clone();
    let mut dd = DeviceMatrix::upload(&stream, d, info.gemm().c.element)?;
    // A kernel with a workspace (semaphores, partial sums, stream-K) runs twice on the same
    // workspace, D poisoned again in between: the second launch must be right too.
    let rounds = if info.may_need_workspace(case.split_k) {
        2
    } else {
        1
    };
    for round in 0..rounds {
        if round > 0 {
            dd = DeviceMatrix::upload(&stream, poisoned.clone(), info.gemm().c.element)?;
        }
        let operands = GemmOperands {
            a: da.operand(&stream),
            b: db.operand(&stream),
            c: dc.as_ref().map(|c| c.operand(&stream)),
            d: dd.operand(&stream),
            alpha,
            beta,
            split_k_slices: case.split_k,
            fusion: FusionOperands {
                aux: daux
                    .as_ref()
                    .or(daux_input.as_ref())
                    .map(|aux| aux.operand(&stream)),
                reduction: row_sums.as_ref().map(|v| VectorOperand {
                    len: m,
                    address: v.device_ptr(&stream).0,
                }),
                ..vectors.operands(&stream, fused.activation_arg)
            },
        };
        // SAFETY: every operand is a live buffer of the kernel's element type and the stated length.
        unsafe { cutlass_aot::gemm::launch_raw(info, &stream, &operands) }
            .map_err(|e| format!("launch: {e}"))?;
        stream.synchronize().map_err(|e| format!("kernel failed: {e}"))?;
        let download = |m: &DeviceMatrix| -> Result<Vec<f64>, Failed> {
            let bytes = stream
                .clone_dtoh(&m.buffer)
                .map_err(|e| format!("download: {e}"))?;
            Ok(verify::decode(info.gemm().c.element, &bytes))
        };
        check_output(info, case, &expected, &download(&dd)?, (m, n, k))
            .map_err(|e| format!("launch {}: {e}", round + 1))?;
        if let (Some(daux), Some(expected_aux)) = (&daux, &expected_aux) {
            check_output(info, case, expected_aux, &download(daux)?, (m, n, k))
                .map_err(|e| format!("launch {}, aux output: {e}", round + 1))?;
        }
        if let Some(row_sums) = &row_sums {
            let bytes = stream
                .clone_dtoh(row_sums)
                .map_err(|e| format!("download: {e}"))?;
            let got = verify::decode(info.epilogue.compute, &bytes);
            // Sums of n outputs computed in f32 (before D is rounded to its type).
            let error = verify::relative_error(&got, &expected_row_sums);
            if error.is_nan() || error > 1e-2 {
                return Err(format!(
                    "launch {}, row sums: relative error {error:.3e} exceeds 1e-2",
                    round + 1
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Whether `info` clamps a floating-point output to its type's range.
fn clamps_floats(info: &KernelInfo) -> bool {
    info.epilogue.kind != Epilogue::LinearCombination && !info.gemm().c.element.is_integer()
}

/// Random operands of `info`'s fused epilogue for an m×n D: a bias of C's type, alpha and beta
/// vectors of the compute type (alpha in [1, 1.5), beta of both signs; beta only with a C),
/// leaky_relu's slope.
fn host_fusion(info: &KernelInfo, (m, n): (usize, usize), with_c: bool, seed: u64) -> HostFusion {
    let f = &info.epilogue.fusion;
    let vector = |broadcast: Broadcast, dtype: DType, seed: u64| {
        broadcast
            .length(m, n)
            .map(|len| verify::random_values(dtype, len, seed))
    };
    let positive = |v: Option<Vec<f64>>| v.map(|v| v.iter().map(|x| 1.0 + x.abs() / 2.0).collect::<Vec<_>>());
    let alpha_vector = positive(vector(f.scale, info.epilogue.compute, seed + 1));
    let beta_vector = vector(f.scale, info.epilogue.compute, seed + 2).filter(|_| with_c);
    HostFusion {
        bias: vector(f.bias, info.gemm().c.element, seed),
        alpha_vector: alpha_vector.map(|v| {
            v.iter()
                .map(|&x| verify::round_to(info.epilogue.compute, x))
                .collect()
        }),
        beta_vector,
        activation_arg: if f.activation == Activation::LeakyRelu {
            0.125
        } else {
            0.0
        },
        aux_input: None,
    }
}

/// A fused epilogue's vectors on the device.
struct DeviceVectors {
    bias: Option<cudarc::driver::CudaSlice<u8>>,
    alpha: Option<cudarc::driver::CudaSlice<u8>>,
    beta: Option<cudarc::driver::CudaSlice<u8>>,
    bias_len: usize,
    scale_len: usize,
}

impl DeviceVectors {
    fn upload(stream: &Arc<CudaStream>, info: &KernelInfo, fused: &HostFusion) -> Result<Self, Failed> {
        let upload = |v: &Option<Vec<f64>>, dtype: DType| -> Result<_, Failed> {
            v.as_ref()
                .map(|v| stream.clone_htod(&verify::encode(dtype, v)))
                .transpose()
                .map_err(|e| format!("upload: {e}").into())
        };
        Ok(DeviceVectors {
            bias: upload(&fused.bias, info.gemm().c.element)?,
            alpha: upload(&fused.alpha_vector, info.epilogue.compute)?,
            beta: upload(&fused.beta_vector, info.epilogue.compute)?,
            bias_len: fused.bias.as_ref().map_or(0, Vec::len),
            scale_len: fused.alpha_vector.as_ref().map_or(0, Vec::len),
        })
    }

    fn operands(&self, stream: &CudaStream, activation_arg: f64) -> FusionOperands {
        let vector = |buffer: &Option<cudarc::driver::CudaSlice<u8>>, len: usize| {
            buffer.as_ref().map(|b| VectorOperand {
                len,
                address: b.device_ptr(stream).0,
            })
        };
        FusionOperands {
            bias: vector(&self.bias, self.bias_len),
            alpha_vector: vector(&self.alpha, self.scale_len),
            beta_vector: vector(&self.beta, self.scale_len),
            aux: None,
            reduction: None,
            activation_arg,
        }
    }
}

/// Compares D's elements with the reference; every other element must still be the poison.
fn check_output(
    info: &KernelInfo,
    case: Case,
    expected: &HostMatrix,
    out: &[f64],
    (m, n, k): (usize, usize, usize),
) -> Result<(), String> {
    // Compare the matrix elements; every other element must still be the NaN poison.
    let shape = expected.shape;
    let mut inside = vec![false; out.len()];
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for batch in 0..case.batch {
        for row in 0..m {
            for col in 0..n {
                let at = verify::offset(&shape, info.gemm().c.layout, batch, row, col);
                inside[at] = true;
                got.push(out[at]);
                want.push(verify::round_to(info.gemm().c.element, expected.data[at]));
            }
        }
    }
    if let Some(at) = (0..out.len()).find(|&i| !inside[i] && !is_poison(info.gemm().c.element, out[i])) {
        return Err(format!(
            "element {at} outside D's matrices was overwritten ({})",
            out[at]
        ));
    }
    let error = verify::relative_error(&got, &want);
    let tolerance = verify::fused_tolerance(info);
    if error.is_nan() || error > tolerance {
        return Err(format!(
            "{m}x{n}x{k} batch {} split-K {}: relative error {error:.3e} exceeds {tolerance:.1e}",
            case.batch, case.split_k
        ));
    }
    Ok(())
}

/// A·B in f64 for A row-major m×k and B column-major k×n (both packed), D row-major m×n.
fn tn_reference(a: &[f64], b: &[f64], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let mut d = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            d[i * n + j] = (0..k).map(|p| a[i * k + p] * b[j * k + p]).sum();
        }
    }
    d
}

/// The typed API end to end: f16 row × column, checked against the reference.
fn typed_f16_tn(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use half::f16;
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let (m, n, k) = (384, 200, 136);
    let to_f16 = |v: &[f64]| v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>();
    let a_host = verify::random_values(DType::F16, m * k, 11);
    let b_host = verify::random_values(DType::F16, k * n, 12);
    let a = stream.clone_htod(&to_f16(&a_host)).map_err(|e| e.to_string())?;
    let b = stream.clone_htod(&to_f16(&b_host)).map_err(|e| e.to_string())?;
    let mut d = stream
        .clone_htod(&vec![f16::NAN; m * n])
        .map_err(|e| e.to_string())?;
    kernels::gemm_f16_tn::run(
        &stream,
        Gemm::new(
            MatrixRef::new(&a, m, k),
            MatrixRef::new(&b, k, n),
            MatrixMut::new(&mut d, m, n),
            1.0,
        ),
    )?;
    let out: Vec<f64> = stream
        .clone_dtoh(&d)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|x| x.to_f64())
        .collect();
    let want: Vec<f64> = tn_reference(&a_host, &b_host, (m, n, k))
        .into_iter()
        .map(|v| f16::from_f64(v).to_f64())
        .collect();
    let error = verify::relative_error(&out, &want);
    if error > 2e-3 {
        return Err(format!("relative error {error:.3e}").into());
    }
    Ok(())
}

/// The typed API of a fused kernel: bf16 GEMM + per-column bias + GELU through the generated
/// `run` and its `Fused` operands, against the reference; a short bias is refused and launches
/// nothing.
#[cfg(feature = "epilogues")]
fn typed_bias_gelu(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use half::bf16;
    use kernels::bf16_sm90_128x256x64_bias_gelu as kernel;
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let (m, n, k) = (320, 512, 264);
    let to_bf16 = |v: &[f64]| v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>();
    let a_host = verify::random_values(DType::Bf16, m * k, 41);
    let b_host = verify::random_values(DType::Bf16, k * n, 42);
    let bias_host = verify::random_values(DType::Bf16, n, 43);
    let a = stream.clone_htod(&to_bf16(&a_host)).map_err(|e| e.to_string())?;
    let b = stream.clone_htod(&to_bf16(&b_host)).map_err(|e| e.to_string())?;
    let bias = stream
        .clone_htod(&to_bf16(&bias_host))
        .map_err(|e| e.to_string())?;
    let mut d = stream
        .clone_htod(&vec![bf16::NAN; m * n])
        .map_err(|e| e.to_string())?;
    let gemm = Gemm::new(
        MatrixRef::new(&a, m, k),
        MatrixRef::new(&b, k, n),
        MatrixMut::new(&mut d, m, n),
        1.0f32,
    );
    kernel::run(&stream, gemm, kernel::Fused { bias: &bias })?;
    let out: Vec<f64> = stream
        .clone_dtoh(&d)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|x| x.to_f64())
        .collect();
    let acc = tn_reference(&a_host, &b_host, (m, n, k));
    let want: Vec<f64> = (0..m * n)
        .map(|i| {
            let z = acc[i] + bias_host[i % n];
            bf16::from_f64(verify::activation(Activation::Gelu, z, 0.0)).to_f64()
        })
        .collect();
    let error = verify::relative_error(&out, &want);
    if error.is_nan() || error > 1e-2 {
        return Err(format!("bias + GELU: relative error {error:.3e}").into());
    }
    // A bias one vector short: refused before anything is enqueued, D untouched.
    let short = stream
        .clone_htod(&to_bf16(&bias_host[..n - 8]))
        .map_err(|e| e.to_string())?;
    let mut untouched = stream
        .clone_htod(&vec![bf16::NAN; m * n])
        .map_err(|e| e.to_string())?;
    let gemm = Gemm::new(
        MatrixRef::new(&a, m, k),
        MatrixRef::new(&b, k, n),
        MatrixMut::new(&mut untouched, m, n),
        1.0f32,
    );
    match kernel::run(&stream, gemm, kernel::Fused { bias: &short }) {
        Ok(()) => return Err("a bias of n - 8 elements was accepted".into()),
        Err(e) if !e.to_string().contains("bias has 504 elements") => {
            return Err(format!("unexpected refusal: {e}").into())
        }
        Err(_) => {}
    }
    let after = stream.clone_dtoh(&untouched).map_err(|e| e.to_string())?;
    if !after.iter().all(|x| x.is_nan()) {
        return Err("a refused launch wrote D".into());
    }
    Ok(())
}

/// Runs a bf16 row × column → row problem through `dispatch::run` and checks every element
/// against the reference; returns the kernel dispatch chose.
fn dispatch_bf16_tn(
    stream: &Arc<CudaStream>,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) -> Result<&'static KernelInfo, Failed> {
    use half::bf16;
    let a_host = verify::random_values(DType::Bf16, m * k, seed);
    let b_host = verify::random_values(DType::Bf16, k * n, seed + 1);
    let to_bf16 = |v: &[f64]| v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>();
    let a = stream.clone_htod(&to_bf16(&a_host)).map_err(|e| e.to_string())?;
    let b = stream.clone_htod(&to_bf16(&b_host)).map_err(|e| e.to_string())?;
    let mut d = stream
        .clone_htod(&vec![bf16::NAN; m * n])
        .map_err(|e| e.to_string())?;
    let kernel = cutlass_aot::dispatch::run(
        stream,
        MatrixRef::<_, cutlass_aot::RowMajor>::new(&a, m, k),
        MatrixRef::<_, cutlass_aot::ColumnMajor>::new(&b, k, n),
        None,
        MatrixMut::<_, cutlass_aot::RowMajor>::new(&mut d, m, n),
        1.0,
    )?
    .kernel
    .ok_or("dispatch launched nothing for a non-empty problem")?;
    let out: Vec<f64> = stream
        .clone_dtoh(&d)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|x| x.to_f64())
        .collect();
    let want: Vec<f64> = tn_reference(&a_host, &b_host, (m, n, k))
        .into_iter()
        .map(|v| bf16::from_f64(v).to_f64())
        .collect();
    let error = verify::relative_error(&out, &want);
    if error.is_nan() || error > 1e-2 {
        return Err(format!("{m}x{n}x{k} on {}: relative error {error:.3e}", kernel.name).into());
    }
    Ok(kernel)
}

/// `dispatch::run` picks a kernel, runs it, and the result matches the reference: on a small
/// problem (where 2.x 64x64 tiles may win), on one large enough for a Hopper kernel on compute
/// capability 9.0, and on a decode-shaped problem (small M, which dispatch may run transposed:
/// D^T = B^T A^T); a product of mismatched shapes is an error.
fn dispatch_bf16(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use half::bf16;
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    dispatch_bf16_tn(&stream, (1000, 512, 256), 21)?;
    let kernel = dispatch_bf16_tn(&stream, (2048, 1024, 512), 22)?;
    let cc = device::props(ctx)?.compute_capability;
    if cc == 90 && kernel.api() != cutlass_aot::model::Api::Cutlass3x {
        return Err(format!(
            "on compute capability 9.0 dispatch chose the 2.x kernel {}",
            kernel.name
        )
        .into());
    }
    dispatch_bf16_tn(&stream, (16, 1024, 512), 23)?;
    let (m, k) = (1000, 256);
    let a = stream.alloc_zeros::<bf16>(m * k).map_err(|e| e.to_string())?;
    let b = stream.alloc_zeros::<bf16>(512 * k).map_err(|e| e.to_string())?;
    let mut d = stream.alloc_zeros::<bf16>(k * k).map_err(|e| e.to_string())?;
    let bad = cutlass_aot::dispatch::run(
        &stream,
        MatrixRef::<_, cutlass_aot::ColumnMajor>::new(&a, k, m),
        MatrixRef::<_, cutlass_aot::RowMajor>::new(&b, 512, k),
        None,
        MatrixMut::<_, cutlass_aot::ColumnMajor>::new(&mut d, k, k),
        1.0,
    );
    if bad.is_ok() {
        return Err("a k×m · n×k product was accepted".into());
    }
    Ok(())
}

/// A row-major problem with a small M (A row-major m×k, B column-major k×n, D row-major m×n) run
/// on `info` (t, n, n) through `dispatch::transposed_operands`: the kernel computes D^T = B^T A^T
/// in the same buffers. Checked against the reference on every element.
fn transposed_small_m(ctx: &Arc<CudaContext>, info: &'static KernelInfo) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let (m, n, k) = (16, 520, 1024);
    let a = host_matrix(
        (info.gemm().b.element, Layout::Row, info.gemm().b.alignment),
        (m, k, 1),
        0,
        Some(31),
    );
    let b = host_matrix(
        (info.gemm().a.element, Layout::Column, info.gemm().a.alignment),
        (k, n, 1),
        0,
        Some(32),
    );
    let c = host_matrix(
        (info.gemm().c.element, Layout::Row, info.gemm().c.alignment),
        (m, n, 1),
        0,
        Some(33),
    );
    let d = host_matrix(
        (info.gemm().c.element, Layout::Row, info.gemm().c.alignment),
        (m, n, 1),
        0,
        None,
    );
    let (alpha, beta) = (1.5, -0.5);
    let mut expected = d.clone();
    verify::reference_gemm(&a, &b, Some(&c), &mut expected, alpha, beta);
    let da = DeviceMatrix::upload(&stream, a, info.gemm().b.element)?;
    let db = DeviceMatrix::upload(&stream, b, info.gemm().a.element)?;
    let dc = DeviceMatrix::upload(&stream, c, info.gemm().c.element)?;
    let dd = DeviceMatrix::upload(&stream, d, info.gemm().c.element)?;
    let operands = GemmOperands {
        a: da.operand(&stream),
        b: db.operand(&stream),
        c: Some(dc.operand(&stream)),
        d: dd.operand(&stream),
        alpha,
        beta,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    let transposed = cutlass_aot::dispatch::transposed_operands(&operands);
    // SAFETY: live buffers of the kernel's element types (A of the problem is the kernel's B).
    unsafe { cutlass_aot::gemm::launch_raw(info, &stream, &transposed) }
        .map_err(|e| format!("launch: {e}"))?;
    stream.synchronize().map_err(|e| format!("kernel failed: {e}"))?;
    let out = verify::decode(
        info.gemm().c.element,
        &stream
            .clone_dtoh(&dd.buffer)
            .map_err(|e| format!("download: {e}"))?,
    );
    let want: Vec<f64> = expected
        .data
        .iter()
        .map(|&v| verify::round_to(info.gemm().c.element, v))
        .collect();
    let error = verify::relative_error(&out, &want);
    let tolerance = verify::tolerance(info);
    if error.is_nan() || error > tolerance {
        return Err(
            format!("{m}x{n}x{k} transposed: relative error {error:.3e} exceeds {tolerance:.1e}").into(),
        );
    }
    Ok(())
}

/// Bad arguments are errors and launch nothing: D keeps its poison.
fn typed_rejections(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use half::f16;
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let (m, n, k) = (128, 128, 64);
    let a = stream.alloc_zeros::<f16>(m * k + 8).map_err(|e| e.to_string())?;
    let b = stream.alloc_zeros::<f16>(k * n).map_err(|e| e.to_string())?;
    let mut d = stream
        .clone_htod(&vec![f16::NAN; m * n])
        .map_err(|e| e.to_string())?;
    // Runs the kernel on (A, B, beta) and expects an error containing `needle`.
    let mut expect_error = |a: &dyn DevicePtr<f16>, b: &dyn DevicePtr<f16>, beta: f32, needle: &str| {
        let mut args = Gemm::new(
            MatrixRef::new(a, m, k),
            MatrixRef::new(b, k, n),
            MatrixMut::new(&mut d, m, n),
            1.0,
        );
        args.beta = beta;
        match kernels::gemm_f16_tn::run(&stream, args) {
            Err(e) if e.to_string().contains(needle) => Ok(()),
            other => Err(Failed::from(format!(
                "expected an error containing {needle:?}, got {other:?}"
            ))),
        }
    };
    expect_error(&a.slice(1..), &b, 0.0, "byte aligned")?;
    expect_error(&a, &b.slice(..k * n - 1), 0.0, "needs a buffer of")?;
    expect_error(&a, &b, 1.0, "no C was given")?;
    let untouched = stream
        .clone_dtoh(&d)
        .map_err(|e| e.to_string())?
        .iter()
        .all(|x| x.is_nan());
    if !untouched {
        return Err("a rejected call wrote to D".into());
    }
    Ok(())
}

/// Array mode: `count` GEMMs whose matrices are separate allocations, handed to the kernel as
/// device arrays of pointers, with C and beta; each D is checked against the reference.
fn array_case(ctx: &Arc<CudaContext>, info: &'static KernelInfo) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let align = extent_multiple(info);
    let (m, n, k) = (round_up(133, align), round_up(77, align), round_up(300, align));
    let count = 3;
    let (alpha, beta) = if info.epilogue.compute.is_integer() {
        (2.0, -1.0)
    } else {
        (1.5, -0.75)
    };
    let case = Case {
        name: "array",
        m,
        n,
        k,
        batch: 1,
        with_c: true,
        alpha,
        beta,
        pad: 1,
        broadcast_b: false,
        split_k: 1,
    };
    let seed = info.name.len() as u64 * 31;
    let (mut a, mut b, mut c, mut d, mut expected) = (vec![], vec![], vec![], vec![], vec![]);
    for i in 0..count as u64 {
        let ha = host_matrix(
            (
                info.gemm().a.element,
                info.gemm().a.layout,
                info.gemm().a.alignment,
            ),
            (m, k, 1),
            1,
            Some(seed + 3 * i),
        );
        let hb = host_matrix(
            (
                info.gemm().b.element,
                info.gemm().b.layout,
                info.gemm().b.alignment,
            ),
            (k, n, 1),
            1,
            Some(seed + 3 * i + 1),
        );
        let hc = host_matrix(
            (
                info.gemm().c.element,
                info.gemm().c.layout,
                info.gemm().c.alignment,
            ),
            (m, n, 1),
            1,
            Some(seed + 3 * i + 2),
        );
        let hd = host_matrix(
            (
                info.gemm().c.element,
                info.gemm().c.layout,
                info.gemm().c.alignment,
            ),
            (m, n, 1),
            1,
            None,
        );
        let mut want = hd.clone();
        // The kernel's own epilogue (an activation; array mode takes no fused operands).
        verify::reference_fused(
            info,
            &ha,
            &hb,
            Some(&hc),
            &mut want,
            None,
            (alpha, beta),
            &HostFusion::default(),
        );
        expected.push(want);
        a.push(DeviceMatrix::upload(&stream, ha, info.gemm().a.element)?);
        b.push(DeviceMatrix::upload(&stream, hb, info.gemm().b.element)?);
        c.push(DeviceMatrix::upload(&stream, hc, info.gemm().c.element)?);
        d.push(DeviceMatrix::upload(&stream, hd, info.gemm().c.element)?);
    }
    let addresses =
        |ms: &[DeviceMatrix]| -> Vec<u64> { ms.iter().map(|m| m.operand(&stream).address).collect() };
    let (pa, pb, pc, pd) = (addresses(&a), addresses(&b), addresses(&c), addresses(&d));
    let upload = |p: &Vec<u64>| stream.clone_htod(p).map_err(|e| format!("upload: {e}"));
    let (ua, ub, uc, ud) = (upload(&pa)?, upload(&pb)?, upload(&pc)?, upload(&pd)?);
    let operand = |pointers: &cudarc::driver::CudaSlice<u64>, shape: MatrixShape| ArrayOperand {
        pointers: pointers.device_ptr(&stream).0,
        count,
        shape,
        addresses: None,
    };
    let ops = ArrayOperands {
        batch_count: count,
        a: ArrayOperand {
            addresses: Some(&pa),
            ..operand(&ua, a[0].host.shape)
        },
        b: ArrayOperand {
            addresses: Some(&pb),
            ..operand(&ub, b[0].host.shape)
        },
        c: Some(ArrayOperand {
            addresses: Some(&pc),
            ..operand(&uc, c[0].host.shape)
        }),
        d: ArrayOperand {
            addresses: Some(&pd),
            ..operand(&ud, d[0].host.shape)
        },
        alpha,
        beta,
    };
    // SAFETY: every pointer is a live buffer of the kernel's element types and the stated shape.
    unsafe { cutlass_aot::array::launch_array_raw(info, &stream, &ops) }
        .map_err(|e| format!("launch: {e}"))?;
    stream.synchronize().map_err(|e| format!("kernel failed: {e}"))?;
    for (i, (dm, want)) in d.iter().zip(&expected).enumerate() {
        let out = verify::decode(
            info.gemm().c.element,
            &stream
                .clone_dtoh(&dm.buffer)
                .map_err(|e| format!("download: {e}"))?,
        );
        check_output(info, case, want, &out, (m, n, k)).map_err(|e| format!("GEMM {i} of the array: {e}"))?;
    }
    Ok(())
}

/// The typed array API: four f16 GEMMs through `PointerArray`s and `run_array`, with C.
fn typed_array_f16(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use cutlass_aot::{ArrayGemm, PointerArray, PointerArrayMut};
    use half::f16;
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let (m, n, k, count) = (136, 200, 72, 4);
    let to_f16 = |v: &[f64]| v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>();
    let hosts: Vec<_> = (0..count as u64)
        .map(|i| {
            (
                verify::random_values(DType::F16, m * k, 40 + i),
                verify::random_values(DType::F16, k * n, 50 + i),
                verify::random_values(DType::F16, m * n, 60 + i),
            )
        })
        .collect();
    let up = |v: &[f64]| stream.clone_htod(&to_f16(v)).map_err(|e| e.to_string());
    let mut a = vec![];
    let mut b = vec![];
    let mut c = vec![];
    let mut d = vec![];
    for (ha, hb, hc) in &hosts {
        a.push(up(ha)?);
        b.push(up(hb)?);
        c.push(up(hc)?);
        d.push(
            stream
                .clone_htod(&vec![f16::NAN; m * n])
                .map_err(|e| e.to_string())?,
        );
    }
    let pa = PointerArray::new(&stream, a.iter().map(|x| MatrixRef::new(x, m, k)).collect())?;
    let pb = PointerArray::new(&stream, b.iter().map(|x| MatrixRef::new(x, k, n)).collect())?;
    let pc = PointerArray::new(&stream, c.iter().map(|x| MatrixRef::new(x, m, n)).collect())?;
    let mut pd = PointerArrayMut::new(&stream, d.iter_mut().map(|x| MatrixMut::new(x, m, n)).collect())?;
    kernels::gemm_f16_tn::run_array(&stream, ArrayGemm::new(&pa, &pb, &mut pd, 1.0).with_c(&pc, 0.5))?;
    drop(pd);
    for (i, (ha, hb, hc)) in hosts.iter().enumerate() {
        let out: Vec<f64> = stream
            .clone_dtoh(&d[i])
            .map_err(|e| e.to_string())?
            .iter()
            .map(|x| x.to_f64())
            .collect();
        let want: Vec<f64> = tn_reference(ha, hb, (m, n, k))
            .iter()
            .zip(hc)
            .map(|(ab, c)| f16::from_f64(ab + 0.5 * c).to_f64())
            .collect();
        let error = verify::relative_error(&out, &want);
        if error > 2e-3 {
            return Err(format!("GEMM {i}: relative error {error:.3e}").into());
        }
    }
    Ok(())
}

/// Refused split-K and array launches return an error and leave D untouched.
fn mode_rejections(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use cutlass_aot::{ArrayGemm, PointerArray, PointerArrayMut};
    use half::f16;
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let (m, n, k) = (128, 128, 256);
    let a = stream.alloc_zeros::<f16>(2 * m * k).map_err(|e| e.to_string())?;
    let b = stream.alloc_zeros::<f16>(2 * k * n).map_err(|e| e.to_string())?;
    let mut d = stream
        .clone_htod(&vec![f16::NAN; 2 * m * n])
        .map_err(|e| e.to_string())?;
    let expect = |result: Result<(), cutlass_aot::Error>, needle: &str| match result {
        Err(e) if e.to_string().contains(needle) => Ok(()),
        other => Err(Failed::from(format!(
            "expected an error containing {needle:?}, got {other:?}"
        ))),
    };
    expect(
        kernels::gemm_f16_tn_128x128_splitk_serial::run(
            &stream,
            Gemm::new(
                MatrixRef::new(&a, m, k),
                MatrixRef::new(&b, k, n),
                MatrixMut::new(&mut d, m, n),
                1.0,
            )
            .split_k(5),
        ),
        "5 split-K slices exceed K's 4 tile(s)",
    )?;
    let batched = Gemm::new(
        MatrixRef::new(&a, m, k).batched(2, m * k),
        MatrixRef::new(&b, k, n).batched(2, k * n),
        MatrixMut::new(&mut d, m, n).batched(2, m * n),
        1.0,
    );
    expect(
        kernels::gemm_f16_tn_128x128_splitk_parallel::run(&stream, batched),
        "a parallel split-K kernel reduces one GEMM",
    )?;
    let batched_split = Gemm::new(
        MatrixRef::new(&a, m, k).batched(2, m * k),
        MatrixRef::new(&b, k, n).batched(2, k * n),
        MatrixMut::new(&mut d, m, n).batched(2, m * n),
        1.0,
    )
    .split_k(2);
    expect(
        kernels::gemm_f16_tn::run(&stream, batched_split),
        "cannot be combined with a batch",
    )?;
    if device::props(ctx)?.compute_capability == 90 {
        expect(
            kernels::f16_sm90_128x128x64_2x1x1_cooperative::run(
                &stream,
                Gemm::new(
                    MatrixRef::new(&a, m, k),
                    MatrixRef::new(&b, k, n),
                    MatrixMut::new(&mut d, m, n),
                    1.0,
                )
                .split_k(2),
            ),
            "this kernel cannot split K",
        )?;
    }
    // Pointer arrays: one shape per array, distinct outputs, equal counts.
    let mixed = PointerArray::<f16, cutlass_aot::RowMajor>::new(
        &stream,
        vec![MatrixRef::new(&a, m, k), MatrixRef::new(&a, m, k / 2)],
    );
    match mixed {
        Err(e)
            if e.to_string()
                .contains("every matrix of an array GEMM has one shape") => {}
        other => return Err(format!("mixed shapes: {:?}", other.err()).into()),
    }
    let pa = PointerArray::new(&stream, vec![MatrixRef::new(&a, m, k), MatrixRef::new(&a, m, k)])?;
    let pb = PointerArray::new(&stream, vec![MatrixRef::new(&b, k, n)])?;
    let mut pd = PointerArrayMut::new(&stream, vec![MatrixMut::new(&mut d, m, n)])?;
    expect(
        kernels::gemm_f16_tn::run_array(&stream, ArrayGemm::new(&pa, &pb, &mut pd, 1.0)),
        "A has 2 matrices but D has 1",
    )?;
    drop(pd);
    let untouched = stream
        .clone_dtoh(&d)
        .map_err(|e| e.to_string())?
        .iter()
        .all(|x| x.is_nan());
    if !untouched {
        return Err("a refused call wrote to D".into());
    }
    Ok(())
}

/// A GPU test body, run only when a device exists.
type GpuTest = Box<dyn FnOnce(&Arc<CudaContext>) -> Result<(), Failed> + Send>;

fn main() {
    let args = Arguments::from_args();
    let gpu: Result<Arc<CudaContext>, String> = device::context(0).map_err(|e| e.to_string());
    let mut trials = Vec::new();
    let mut add = |name: String, body: GpuTest| {
        let gpu = gpu.clone();
        trials.push(Trial::ignorable_test(name, move || match gpu {
            Err(reason) => Ok(Completion::ignored_with(format!("needs a GPU: {reason}"))),
            Ok(ctx) => body(&ctx).map(|()| Completion::Completed),
        }));
    };
    // Grouped kernels have their own suite (gpu_grouped.rs).
    for info in REGISTRY
        .all()
        .iter()
        .filter(|k| k.operation.kind() == cutlass_aot::model::OperationKind::Gemm)
    {
        // Hopper pointer-array kernels run array mode only (below).
        let pointer_array = info
            .design
            .as_3x()
            .is_some_and(|d| d.batch_mode == cutlass_aot::model::BatchMode::Array);
        for &case in CASES.iter().filter(|_| !pointer_array) {
            // Parallel split-K kernels reduce one GEMM; their refusal of batches is tested below.
            if info.design.split_k() == SplitK::Parallel && case.batch > 1 {
                continue;
            }
            // The fast clamp is exact for short K only; its refusal of longer K is in fusion.rs.
            if info.epilogue.kind.max_k().is_some_and(|max| case.k > max) {
                continue;
            }
            // Row sums reduce one GEMM; their refusal of batches is in fusion.rs.
            if info.epilogue.fusion.reduction != Reduction::None && case.batch > 1 {
                continue;
            }
            add(
                format!("{}::{}", info.rust_name, case.name),
                Box::new(move |ctx| run_case(ctx, info, case)),
            );
        }
        // Serial split-K into s8 is refused (it would clamp running sums): see modes.rs.
        let splits = info.design.split_k() != SplitK::None
            && !(info.design.split_k() == SplitK::Serial && info.gemm().c.element == DType::S8);
        for &case in SPLIT_K_CASES.iter().filter(|_| splits) {
            add(
                format!("{}::{}", info.rust_name, case.name),
                Box::new(move |ctx| run_case(ctx, info, case)),
            );
        }
        // Array mode takes no fused operands; the fast clamp's K limit is below the case's K.
        let array = (info.api() == Api::Cutlass2x || pointer_array)
            && info.design.split_k() != SplitK::Parallel
            && !info.epilogue.fusion.has_operands()
            && info.epilogue.kind.max_k().is_none();
        if array {
            add(
                format!("{}::array_ragged_beta", info.rust_name),
                Box::new(move |ctx| array_case(ctx, info)),
            );
        }
    }
    add("typed::array_f16_tn".into(), Box::new(typed_array_f16));
    add("modes::refusals_launch_nothing".into(), Box::new(mode_rejections));
    add(
        "typed::gemm_f16_tn_matches_reference".into(),
        Box::new(typed_f16_tn),
    );
    #[cfg(feature = "epilogues")]
    add(
        "typed::bias_gelu_matches_reference_and_refuses_a_short_bias".into(),
        Box::new(typed_bias_gelu),
    );
    add(
        "typed::bad_arguments_launch_nothing".into(),
        Box::new(typed_rejections),
    );
    add(
        "dispatch::bf16_tn_picks_a_kernel_and_matches_reference".into(),
        Box::new(dispatch_bf16),
    );
    // Kernels with a column-major C also serve row-major problems transposed (D^T = B^T A^T).
    for info in REGISTRY.all() {
        if info.gemm().c.layout == Layout::Column
            && info.gemm().a.layout == Layout::Row
            && info.gemm().b.layout == Layout::Column
        {
            add(
                format!("{}::transposed_small_m", info.rust_name),
                Box::new(move |ctx| transposed_small_m(ctx, info)),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
