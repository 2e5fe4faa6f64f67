//! GPU suite of conv2d (`--features conv`): every conv kernel against an f64 host reference —
//! 3×3 with padding, stride 2, dilation 2, a 1×1 stride-2 (dgrad's uncovered pixels), ragged
//! channel counts, `beta ≠ 0`, split-K 1/3/16, convolution mode — and refusals that launch
//! nothing. Each output buffer carries a poisoned tail that must stay untouched.
//!
//! Runs in plain `cargo test --features conv`. Where no NVIDIA driver or device exists, every test
//! is reported as *ignored* with the reason — never as passed.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};
use cutlass_aot::conv::{
    self, Conv2dProblem, ConvGeometry, ConvMode, ConvOperands, ConvTensor, TensorOperand,
};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{Api, ConvKind, ConvLayout, DType, IteratorAlgorithm, StrideSupport};
use cutlass_aot::{device, verify, KernelInfo};
use libtest_mimic::{Arguments, Failed};

#[path = "common/gpu_trial.rs"]
mod gpu_trial;

use gpu_trial::GpuTest;

/// Elements of poison behind every output, which no kernel may write.
const TAIL: usize = 64;

/// One conv problem of a test: activation `[n, h, w, c]`, filter `[k, r, s]`, geometry, split.
#[derive(Clone, Copy, Debug)]
struct Case {
    activation: [usize; 4],
    filter: [usize; 3],
    geometry: ConvGeometry,
    split_k: usize,
    scalars: (f64, f64),
}

impl Case {
    fn new(activation: [usize; 4], filter: [usize; 3]) -> Self {
        Case {
            activation,
            filter,
            geometry: ConvGeometry::default(),
            split_k: 1,
            scalars: (1.0, 0.0),
        }
    }

    fn pad(mut self, p: usize) -> Self {
        self.geometry.pad = [p, p];
        self
    }

    fn stride(mut self, s: usize) -> Self {
        self.geometry.stride = [s, s];
        self
    }

    fn dilation(mut self, d: usize) -> Self {
        self.geometry.dilation = [d, d];
        self
    }

    fn problem(&self, info: &KernelInfo) -> Conv2dProblem {
        let conv = info.operation.conv().expect("a conv kernel");
        let g = &conv.gemm;
        self.problem_of(conv.kind, (g.a.element, g.b.element, g.c.element))
            .layout(conv.layout)
    }

    /// The case as a problem of `kind` over tensors of `elements`.
    fn problem_of(&self, kind: ConvKind, elements: (DType, DType, DType)) -> Conv2dProblem {
        let mut p = Conv2dProblem::new(kind, self.activation, self.filter, elements);
        p.pad = self.geometry.pad;
        p.stride = self.geometry.stride;
        p.dilation = self.geometry.dilation;
        p.mode = self.geometry.mode;
        p.split_k_slices = self.split_k;
        p
    }
}

/// Channel counts the kernel takes: the activation's C and the filter's K, multiples of the
/// alignments that apply to them (`scale` of them, so tests can make them ragged against tiles).
fn channels(info: &KernelInfo, scale_c: usize, scale_k: usize) -> (usize, usize) {
    let conv = info.operation.conv().unwrap();
    let g = &conv.gemm;
    let (a, b, c) = (
        g.a.alignment as usize,
        g.b.alignment as usize,
        g.c.alignment as usize,
    );
    let lcm = |x: usize, y: usize| x / gcd(x, y) * y;
    // Which alignments bind C (activation channels) and K (output channels), by role.
    let (c_align, k_align) = match conv.kind {
        ConvKind::Fprop => (lcm(a, b), c),
        ConvKind::Dgrad => (lcm(b, c), a),
        ConvKind::Wgrad => (lcm(b, c), a),
    };
    // Interleaved tensors hold channels in whole groups.
    let group = conv.layout.interleave().unwrap_or(1) as usize;
    let (c_align, k_align) = (lcm(c_align, group), lcm(k_align, group));
    if conv.iterator.fixed_channel_count() && info.api() == Api::Cutlass2x {
        return (a, k_align * scale_k);
    }
    (c_align * scale_c, k_align * scale_k)
}

fn gcd(x: usize, y: usize) -> usize {
    if y == 0 {
        x
    } else {
        gcd(y, x % y)
    }
}

/// How a tensor is stored: its layout, which tensor it is and its logical extents.
#[derive(Clone, Copy)]
struct Storage {
    layout: ConvLayout,
    tensor: ConvTensor,
    dims: [usize; 4],
}

impl Storage {
    /// `values` (channels-last order) in storage order, or back (`to_storage` false).
    fn permute(&self, values: &[f64], to_storage: bool) -> Result<Vec<f64>, Failed> {
        conv::permute(self.layout, self.tensor, self.dims, values, to_storage)
            .map_err(|e| e.to_string().into())
    }
}

/// A tensor on the device, with its values in channels-last order on the host.
struct Tensor {
    dtype: DType,
    values: Vec<f64>,
    buffer: CudaSlice<u8>,
}

impl Tensor {
    /// Uploads `values` (channels-last order) as `storage` stores them.
    fn upload(
        stream: &Arc<CudaStream>,
        dtype: DType,
        values: Vec<f64>,
        storage: Storage,
    ) -> Result<Self, Failed> {
        // Extents the layout cannot hold (channels off an interleave) stay in channels-last order:
        // only refusal cases have them, and a refused launch reads nothing.
        let stored = storage.permute(&values, true).unwrap_or_else(|_| values.clone());
        Self::stored(stream, dtype, values, &stored)
    }

    /// A buffer of `len` poison values (an output and the tail behind it).
    fn poisoned(stream: &Arc<CudaStream>, dtype: DType, len: usize) -> Result<Self, Failed> {
        let values = vec![verify::poison(dtype); len];
        Self::stored(stream, dtype, values.clone(), &values)
    }

    /// `stored` on the device; `values` the same elements in channels-last order.
    fn stored(
        stream: &Arc<CudaStream>,
        dtype: DType,
        values: Vec<f64>,
        stored: &[f64],
    ) -> Result<Self, Failed> {
        let buffer = stream
            .clone_htod(&verify::encode(dtype, stored))
            .map_err(|e| format!("upload: {e}"))?;
        Ok(Tensor {
            dtype,
            values,
            buffer,
        })
    }

    fn operand(&self, stream: &CudaStream, dims: [usize; 4]) -> TensorOperand {
        let (address, _guard) = self.buffer.device_ptr(stream);
        TensorOperand {
            dims,
            len: self.values.len(),
            address,
        }
    }

    fn download(&self, stream: &Arc<CudaStream>) -> Result<Vec<f64>, Failed> {
        let bytes = stream
            .clone_dtoh(&self.buffer)
            .map_err(|e| format!("download: {e}"))?;
        stream.synchronize().map_err(|e| format!("sync: {e}"))?;
        Ok(verify::decode(self.dtype, &bytes))
    }
}

/// The tensors of one launch: A, B, optional C and a poisoned D (with its tail).
struct Launch {
    dims: [[usize; 4]; 3],
    /// How C and D are stored.
    output: Storage,
    a: Tensor,
    b: Tensor,
    c: Option<Tensor>,
    d: Tensor,
}

fn tensors(
    stream: &Arc<CudaStream>,
    problem: &Conv2dProblem,
    with_c: bool,
    seed: u64,
) -> Result<Launch, Failed> {
    let dims = problem
        .tensor_dims()
        .map_err(|e| format!("bad test problem: {e}"))?;
    let count = |d: [usize; 4]| d.iter().product::<usize>();
    let (ea, eb, ec) = problem.elements;
    let d_len = count(dims[2]);
    let roles = ConvTensor::roles(problem.kind);
    let storage = |i: usize| Storage {
        layout: problem.layout,
        tensor: roles[i],
        dims: dims[i],
    };
    Ok(Launch {
        dims,
        output: storage(2),
        a: Tensor::upload(
            stream,
            ea,
            verify::random_values(ea, count(dims[0]), seed),
            storage(0),
        )?,
        b: Tensor::upload(
            stream,
            eb,
            verify::random_values(eb, count(dims[1]), seed + 1),
            storage(1),
        )?,
        c: if with_c {
            Some(Tensor::upload(
                stream,
                ec,
                verify::random_values(ec, d_len, seed + 2),
                storage(2),
            )?)
        } else {
            None
        },
        d: Tensor::poisoned(stream, ec, d_len + TAIL)?,
    })
}

fn operands(stream: &CudaStream, t: &Launch, case: &Case) -> ConvOperands {
    let mut d = t.d.operand(stream, t.dims[2]);
    d.len -= TAIL; // the tail is not the kernel's to write
    ConvOperands {
        a: t.a.operand(stream, t.dims[0]),
        b: t.b.operand(stream, t.dims[1]),
        c: t.c.as_ref().map(|c| c.operand(stream, t.dims[2])),
        d,
        geometry: case.geometry,
        alpha: case.scalars.0,
        beta: case.scalars.1,
        split_k_slices: case.split_k,
        activation_arg: 0.1,
    }
}

/// Runs `case` on `info` and compares D with the f64 reference.
fn run_case(ctx: &Arc<CudaContext>, info: &'static KernelInfo, case: Case) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let problem = case.problem(info);
    let with_c = case.scalars.1 != 0.0;
    let t = tensors(&stream, &problem, with_c, 17)?;
    let ops = operands(&stream, &t, &case);
    // SAFETY: every operand is a live buffer of its stated length and the kernel's types.
    unsafe { conv::launch_raw(info, &stream, &ops, None) }.map_err(|e| format!("launch: {e}"))?;
    let out = t.d.download(&stream)?;
    let (body, tail) = out.split_at(out.len() - TAIL);
    if let Some(i) = tail.iter().position(|&v| !verify::is_poison(t.d.dtype, v)) {
        return Err(format!("the kernel wrote {} elements past D (at +{i})", TAIL - i).into());
    }
    let body = &t.output.permute(body, false)?[..];
    // Integer poison is a value a result may take: only floating-point outputs can be checked for
    // unwritten elements (the comparison below catches wrong integers).
    let unwritten = body.iter().position(|&v| verify::is_poison(t.d.dtype, v));
    if let Some(i) = unwritten.filter(|_| !t.d.dtype.is_integer()) {
        return Err(format!("D[{i}] was never written ({} elements)", body.len()).into());
    }
    let c = t.c.as_ref().map_or(Vec::new(), |c| c.values.clone());
    let act = info.epilogue.fusion.activation;
    let reference: Vec<f64> = verify::reference_conv2d(&problem, &t.a.values, &t.b.values, &c, case.scalars)
        .into_iter()
        .map(|v| verify::round_to(t.d.dtype, verify::activation(act, v, 0.1)))
        .collect();
    let error = verify::relative_error(body, &reference);
    let tolerance = verify::tolerance(info);
    if error > tolerance {
        let worst = body
            .iter()
            .zip(&reference)
            .enumerate()
            .max_by(|x, y| (x.1 .0 - x.1 .1).abs().total_cmp(&(y.1 .0 - y.1 .1).abs()))
            .map(|(i, (o, r))| format!("D[{i}] = {o}, reference {r}"))
            .unwrap_or_default();
        return Err(
            format!("relative error {error:.3e} > {tolerance:.1e} on {problem:?}; worst {worst}").into(),
        );
    }
    Ok(())
}

/// `case` must be refused with a message containing `needle`, and nothing written.
fn refused(
    ctx: &Arc<CudaContext>,
    info: &'static KernelInfo,
    case: Case,
    needle: &str,
) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let problem = case.problem(info);
    let t = tensors(&stream, &problem, case.scalars.1 != 0.0, 5)?;
    let ops = operands(&stream, &t, &case);
    // SAFETY: as in run_case.
    match unsafe { conv::launch_raw(info, &stream, &ops, None) } {
        Ok(()) => return Err(format!("expected a refusal mentioning `{needle}`, but it launched").into()),
        Err(e) if !e.to_string().contains(needle) => {
            return Err(format!("refused, but the message lacks `{needle}`: {e}").into())
        }
        Err(_) => {}
    }
    let out = t.d.download(&stream)?;
    if out.iter().any(|&v| !verify::is_poison(t.d.dtype, v)) {
        return Err("a refused launch wrote D".into());
    }
    Ok(())
}

/// A case this kernel must compute, or must refuse with `needle` when `refuse` says so.
fn expect(
    ctx: &Arc<CudaContext>,
    info: &'static KernelInfo,
    case: Case,
    refuse: Option<&str>,
) -> Result<(), Failed> {
    match refuse {
        Some(needle) => refused(ctx, info, case, needle),
        None => run_case(ctx, info, case),
    }
}

fn cases(info: &'static KernelInfo) -> Vec<(String, GpuTest)> {
    let conv = *info.operation.conv().unwrap();
    let is_3x = info.api() == Api::Cutlass3x;
    let stream_k = info.design.split_k() == cutlass_aot::model::SplitK::StreamK;
    let strided_dgrad_2x =
        !is_3x && conv.kind == ConvKind::Dgrad && conv.stride_support == StrideSupport::Strided;
    // Where a stride > 1 is refused: unit-stride dgrad kernels (Hopper's, and CUTLASS 2.x's
    // stride_support: unity) with a fused activation; plain ones run a strided dgrad as stride
    // phases (2.x ones computing them into scratch memory).
    let phased = conv.kind == ConvKind::Dgrad && (is_3x || conv.stride_support == StrideSupport::Unity);
    let stride_refusal = (phased && !info.is_plain()).then_some("plain kernel");
    let hopper_dgrad = is_3x && conv.kind == ConvKind::Dgrad;
    let first_layer = conv.iterator == IteratorAlgorithm::FirstLayer;
    let (c, k) = channels(info, 3, 3);
    let (c_big, k_big) = channels(info, 8, 2);
    let mut out: Vec<(String, GpuTest)> = Vec::new();
    let mut add = |name: &str, case: Case, refuse: Option<&'static str>| {
        out.push((
            format!("{}::{name}", info.rust_name),
            Box::new(move |ctx: &Arc<CudaContext>| expect(ctx, info, case, refuse)),
        ));
    };
    add("3x3_pad1", Case::new([2, 10, 9, c], [k, 3, 3]).pad(1), None);
    add(
        "3x3_pad1_stride2",
        Case::new([2, 11, 10, c], [k, 3, 3]).pad(1).stride(2),
        stride_refusal,
    );
    add(
        "1x1_stride2",
        Case::new([2, 8, 8, c], [k, 1, 1]).stride(2),
        stride_refusal,
    );
    add(
        "3x3_dilation2",
        Case::new([2, 12, 11, c], [k, 3, 3]).pad(2).dilation(2),
        if strided_dgrad_2x { Some("dilation") } else { None },
    );
    add(
        "7x7_stride2_pad3",
        Case::new([1, 20, 18, c], [k, 7, 7]).pad(3).stride(2),
        stride_refusal,
    );
    let mut beta = Case::new([2, 9, 9, c], [k, 3, 3]).pad(1);
    beta.scalars = (1.5, -0.75);
    add("beta_with_c", beta, None);
    // Strided, with C: the pixels no tap reaches (three stride phases of four) get beta·C.
    let mut beta_strided = Case::new([2, 8, 9, c], [k, 1, 1]).stride(2);
    beta_strided.scalars = (1.5, -0.75);
    add("1x1_stride2_beta_with_c", beta_strided, stride_refusal);
    // Stride 3 with a 5x5 filter: phases of 1 and 2 taps, none empty; padding 2.
    add(
        "5x5_stride3_pad2",
        Case::new([2, 13, 11, c], [k, 5, 5]).pad(2).stride(3),
        stride_refusal,
    );
    // dx's last rows past every filter window (6 rows, 3 taps, stride 2, no padding): zero
    // gradient, which a stride phase cannot express; Hopper dgrad refuses it.
    add(
        "3x3_stride2_rows_past_windows",
        Case::new([2, 6, 6, c], [k, 3, 3]).stride(2),
        if hopper_dgrad && info.is_plain() {
            Some("past every filter window")
        } else {
            stride_refusal
        },
    );
    // The same with C, and dx's last columns past every window too: beta·C there.
    let mut past_beta = Case::new([2, 7, 8, c], [k, 3, 3]).stride(2);
    past_beta.scalars = (1.5, -0.75);
    add(
        "3x3_stride2_past_windows_beta_with_c",
        past_beta,
        if hopper_dgrad && info.is_plain() {
            Some("past every filter window")
        } else {
            stride_refusal
        },
    );
    add(
        "resnet_like_14x14",
        Case::new([2, 14, 14, c_big], [k_big, 3, 3]).pad(1),
        None,
    );
    let g = conv.gemm;
    let (c_split, k_split) = channels(info, 8, 8);
    for slices in [3, 16] {
        let mut split = Case::new([4, 16, 16, c_split], [k_split, 3, 3]).pad(1);
        split.split_k = slices;
        // More slices than the implicit GEMM's K has tiles are refused, saying how many fit.
        let (_, _, gemm_k) = split.problem(info).gemm_extent().unwrap();
        let serial_s8 =
            g.c.element == DType::S8 && info.design.split_k() == cutlass_aot::model::SplitK::Serial;
        let refuse = if is_3x && !stream_k {
            Some("split-K")
        } else if first_layer {
            Some("computes each output whole")
        } else if is_3x {
            (split.problem(info).k_tiles_3x(info.tile().k as usize) < slices).then_some("use at most")
        } else if serial_s8 {
            Some("saturate")
        } else if info.k_tiles(gemm_k) < slices {
            Some("use at most")
        } else {
            None
        };
        add(&format!("split_k_{slices}"), split, refuse);
    }
    // Stream-K: a long K over few output tiles, in its own decomposition (1) and split into an
    // odd number of slices that does not divide the K tiles.
    if stream_k {
        for slices in [1, 7] {
            let mut long_k = Case::new([8, 16, 16, 256], [64, 3, 3]).pad(1);
            long_k.split_k = slices;
            add(&format!("stream_k_long_k_split_{slices}"), long_k, None);
        }
    }
    let mut flipped = Case::new([2, 9, 9, c], [k, 3, 3]).pad(1);
    flipped.geometry.mode = ConvMode::Convolution;
    add(
        "convolution_mode",
        flipped,
        if is_3x { Some("cross-correlation") } else { None },
    );
    if first_layer {
        // The stem itself (7x7, stride 2, padding 3) at a width of two and a half column tiles,
        // and K over two CTA columns (one partial).
        add(
            "stem_7x7_stride2_two_channel_tiles",
            Case::new([2, 38, 75, c], [k + 64, 7, 7]).pad(3).stride(2),
            None,
        );
        // A filter whose input patch and filter slice do not fit in shared memory: refused with
        // the bytes it would need.
        add(
            "refuses_filter_past_shared_memory",
            Case::new([1, 48, 48, c], [k, 41, 41]),
            Some("bytes of shared memory"),
        );
    }
    // Channels off the alignment: refused before anything launches.
    let step = g.a.alignment.max(g.b.alignment).max(g.c.alignment) as usize;
    if step > 1 {
        add(
            "refuses_misaligned_channels",
            Case::new([1, 6, 6, c + step / 2], [k + step / 2, 3, 3]).pad(1),
            Some("multiple"),
        );
    }
    out
}

/// The typed path: the generated module of one f16 fprop kernel, through `Conv2d`.
fn typed(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use cutlass_aot::conv::{Conv2d, TensorMut, TensorRef};
    use cutlass_aot::kernels::conv_fprop_f16_optimized_sm80 as kernel;
    use half::f16;
    let stream = ctx.default_stream();
    let (n, h, w, c, k) = (2, 12, 12, 16, 24);
    let (p, q) = Conv2d::<kernel::Kernel>::output_size([n, h, w, c], [k, 3, 3], [1, 1], [2, 2], [1, 1])
        .map_err(|e| e.to_string())?;
    let x_host = verify::random_values(DType::F16, n * h * w * c, 3);
    let w_host = verify::random_values(DType::F16, k * 9 * c, 4);
    let to_f16 = |v: &[f64]| v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>();
    let x = stream.clone_htod(&to_f16(&x_host)).map_err(|e| e.to_string())?;
    let wt = stream.clone_htod(&to_f16(&w_host)).map_err(|e| e.to_string())?;
    let mut y = stream
        .alloc_zeros::<f16>(n * p * q * k)
        .map_err(|e| e.to_string())?;
    kernel::run(
        &stream,
        Conv2d::new(
            TensorRef::new(&x, [n, h, w, c]),
            TensorRef::new(&wt, [k, 3, 3, c]),
            TensorMut::new(&mut y, [n, p, q, k]),
            1.0f32,
        )
        .padding(1, 1)
        .stride(2, 2),
    )
    .map_err(|e| e.to_string())?;
    let out: Vec<f64> = stream
        .clone_dtoh(&y)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    let problem = Conv2dProblem::new(
        ConvKind::Fprop,
        [n, h, w, c],
        [k, 3, 3],
        (DType::F16, DType::F16, DType::F16),
    )
    .padding(1, 1)
    .stride(2, 2);
    let reference: Vec<f64> = verify::reference_conv2d(&problem, &x_host, &w_host, &[], (1.0, 0.0))
        .into_iter()
        .map(|v| verify::round_to(DType::F16, v))
        .collect();
    let error = verify::relative_error(&out, &reference);
    if error > 2e-3 {
        return Err(format!("typed fprop: relative error {error:.3e}").into());
    }
    // A wrong output shape is refused with the shape it should have.
    let mut bad = stream
        .alloc_zeros::<f16>(n * p * q * k)
        .map_err(|e| e.to_string())?;
    let err = kernel::run(
        &stream,
        Conv2d::new(
            TensorRef::new(&x, [n, h, w, c]),
            TensorRef::new(&wt, [k, 3, 3, c]),
            TensorMut::new(&mut bad, [n, p + 1, q, k]),
            1.0f32,
        )
        .padding(1, 1)
        .stride(2, 2),
    )
    .err()
    .ok_or("a wrong output shape was launched")?;
    if !err.to_string().contains(&format!("[{n}, {p}, {q}, {k}]")) {
        return Err(format!("the wrong-shape error does not give the right shape: {err}").into());
    }
    Ok(())
}

/// The typed path of an interleaved int8 kernel: NHWC host tensors packed into NC32HW32 and
/// C32RSK32 with `conv::pack`, the NK32PQ32 output unpacked, checked against the f64 reference;
/// channels off the 32-channel groups are refused before launch.
fn typed_interleaved(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use cutlass_aot::conv::{pack, unpack, C32rsk32, Conv2d, Nc32hw32, Nk32pq32, TensorMut, TensorRef};
    use cutlass_aot::kernels::conv_fprop_s8_nc32hw32_optimized_sm80 as kernel;
    let stream = ctx.default_stream();
    let (n, h, w, c, k) = (3, 9, 11, 64, 96);
    let (p, q) = Conv2d::<kernel::Kernel>::output_size([n, h, w, c], [k, 3, 3], [1, 1], [1, 1], [1, 1])
        .map_err(|e| e.to_string())?;
    let x_host = verify::random_values(DType::S8, n * h * w * c, 7);
    let w_host = verify::random_values(DType::S8, k * 9 * c, 8);
    let to_i8 = |v: &[f64]| v.iter().map(|&x| x as i8).collect::<Vec<_>>();
    let x_packed = pack::<Nc32hw32, _>([n, h, w, c], &to_i8(&x_host)).map_err(|e| e.to_string())?;
    let w_packed = pack::<C32rsk32, _>([k, 3, 3, c], &to_i8(&w_host)).map_err(|e| e.to_string())?;
    let x = stream.clone_htod(&x_packed).map_err(|e| e.to_string())?;
    let wt = stream.clone_htod(&w_packed).map_err(|e| e.to_string())?;
    let mut y = stream
        .alloc_zeros::<i8>(n * p * q * k)
        .map_err(|e| e.to_string())?;
    let alpha = 0.25f32;
    kernel::run(
        &stream,
        Conv2d::new(
            TensorRef::new(&x, [n, h, w, c]),
            TensorRef::new(&wt, [k, 3, 3, c]),
            TensorMut::new(&mut y, [n, p, q, k]),
            alpha,
        )
        .padding(1, 1),
    )
    .map_err(|e| e.to_string())?;
    let stored = stream.clone_dtoh(&y).map_err(|e| e.to_string())?;
    let out: Vec<f64> = unpack::<Nk32pq32, _>([n, p, q, k], &stored)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|&v| f64::from(v))
        .collect();
    let problem = Conv2dProblem::new(
        ConvKind::Fprop,
        [n, h, w, c],
        [k, 3, 3],
        (DType::S8, DType::S8, DType::S8),
    )
    .padding(1, 1)
    .layout(ConvLayout::Interleaved32);
    let reference: Vec<f64> =
        verify::reference_conv2d(&problem, &x_host, &w_host, &[], (f64::from(alpha), 0.0))
            .into_iter()
            .map(|v| verify::round_to(DType::S8, v))
            .collect();
    if let Some(i) = (0..out.len()).find(|&i| (out[i] - reference[i]).abs() > 1.0) {
        return Err(format!(
            "typed interleaved fprop: y[{i}] = {}, reference {}",
            out[i], reference[i]
        )
        .into());
    }
    // 48 channels are not whole groups of 32: refused, naming the rule.
    let c_bad = 48;
    let x_bad = stream
        .alloc_zeros::<i8>(n * h * w * c_bad)
        .map_err(|e| e.to_string())?;
    let w_bad = stream
        .alloc_zeros::<i8>(k * 9 * c_bad)
        .map_err(|e| e.to_string())?;
    let err = kernel::run(
        &stream,
        Conv2d::new(
            TensorRef::new(&x_bad, [n, h, w, c_bad]),
            TensorRef::new(&w_bad, [k, 3, 3, c_bad]),
            TensorMut::new(&mut y, [n, p, q, k]),
            alpha,
        )
        .padding(1, 1),
    )
    .err()
    .ok_or("48 interleaved channels were launched")?;
    if !err.to_string().contains("multiples of 32") {
        return Err(format!("the 48-channel refusal does not name the groups of 32: {err}").into());
    }
    Ok(())
}

/// One dispatched convolution: `kind` over `dtype` tensors, checked against the f64 reference.
/// With `via_gemm` (a 1x1 unit-stride case) dispatch gets a table whose only entry is a GEMM kernel
/// that takes the problem as a matrix product, and must run it so; otherwise the embedded tables.
/// How a dispatch test runs its problem.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Route {
    /// As dispatch decides.
    Chosen,
    /// On a GEMM kernel (a table forces one).
    Gemm,
    /// On a conv kernel of this API with the channels padded (launched as that way directly).
    Padded(Api),
    /// On the direct fprop of few channels computing this many output channels a thread.
    Small(usize),
}

fn dispatched(
    ctx: &Arc<CudaContext>,
    kind: ConvKind,
    dtype: DType,
    case: Case,
    route: Route,
) -> Result<(), Failed> {
    use conv::dispatch::{self, ConvSignature, ConvWay};
    use cutlass_aot::select::{Row, Table};
    let stream = ctx.default_stream();
    let problem = case.problem_of(kind, (dtype, dtype, dtype));
    let with_c = case.scalars.1 != 0.0;
    let t = tensors(&stream, &problem, with_c, 29)?;
    let ops = operands(&stream, &t, &case);
    let signature = ConvSignature {
        kind,
        elements: problem.elements,
    };
    let props = device::props(ctx).map_err(|e| e.to_string())?;
    let mut at = problem;
    at.compute_capability = Some(props.compute_capability);
    at.addresses = Some([ops.a.address, ops.b.address, ops.d.address, ops.d.address]);
    // SAFETY (each launch): every operand is a live buffer of its stated length and the
    // signature's types.
    let ran = match route {
        Route::Chosen => unsafe { dispatch::launch_raw(&stream, signature, &ops, Default::default()) }
            .map_err(|e| format!("dispatch: {e}"))?
            .describe(),
        Route::Gemm => {
            // The last candidate, not the one the benchmark would pick: more kernels get exercised.
            let candidates = conv::ways::gemm_candidates(&REGISTRY, &at, &ops, 1);
            let kernel = *candidates.last().ok_or("no GEMM kernel takes this 1x1 problem")?;
            let row = Row::new(dispatch::key_of(&problem), kernel, 1, Default::default(), 1.0);
            let tables = vec![Table::new(props.name, "test", Box::leak(Box::new([row])))];
            let ran = unsafe {
                dispatch::launch_raw_with(&REGISTRY, &tables, &stream, signature, &ops, Default::default())
            }
            .map_err(|e| format!("dispatch: {e}"))?;
            if !ran.as_gemm() {
                return Err(format!("the GEMM entry was not used: {}", ran.describe()).into());
            }
            ran.describe()
        }
        Route::Padded(api) => {
            let way = conv::ways::candidates(&REGISTRY, &at, &ops)
                .into_iter()
                .rfind(|w| matches!(w.way, ConvWay::Padded(_)) && w.kernel.api() == api)
                .ok_or(format!("no padded {api:?} way for this problem"))?;
            unsafe { dispatch::launch_on(way.kernel, way.split_k, way.way, &stream, &problem, &ops, None) }
                .map_err(|e| format!("{} padded: {e}", way.kernel.rust_name))?;
            format!("{} split {} {:?}", way.kernel.rust_name, way.split_k, way.way)
        }
        Route::Small(cols) => {
            let way = conv::ways::candidates(&REGISTRY, &at, &ops)
                .into_iter()
                .find(|w| conv::small::cols_of(w.kernel) == Some(cols))
                .ok_or(format!("no direct way of {cols} columns for this problem"))?;
            unsafe { dispatch::launch_on(way.kernel, 1, way.way, &stream, &problem, &ops, None) }
                .map_err(|e| format!("{}: {e}", way.kernel.rust_name))?;
            way.kernel.rust_name.to_string()
        }
    };
    let out = t.d.download(&stream)?;
    let (body, tail) = out.split_at(out.len() - TAIL);
    if tail.iter().any(|&v| !verify::is_poison(dtype, v)) {
        return Err(format!("wrote past D ({ran})").into());
    }
    let c = t.c.as_ref().map_or(Vec::new(), |c| c.values.clone());
    let reference: Vec<f64> = verify::reference_conv2d(&problem, &t.a.values, &t.b.values, &c, case.scalars)
        .into_iter()
        .map(|v| verify::round_to(dtype, v))
        .collect();
    let error = verify::relative_error(body, &reference);
    let tolerance = match dtype {
        DType::Bf16 => 1e-2,
        DType::F16 => 2e-3,
        _ => 1e-5,
    };
    if error > tolerance {
        return Err(format!("relative error {error:.3e} > {tolerance:.0e} ({ran})").into());
    }
    Ok(())
}

/// Dispatch tests: each kind and type over 1×1 (the GEMM route) and other filters.
fn dispatch_cases() -> Vec<(String, GpuTest)> {
    let mut out: Vec<(String, GpuTest)> = Vec::new();
    let kinds = [ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad];
    for dtype in [DType::F16, DType::Bf16] {
        for kind in kinds {
            let mut beta = Case::new([2, 9, 7, 24], [40, 3, 3]).pad(1);
            beta.scalars = (0.5, 1.25);
            let mut beta_1x1 = Case::new([3, 7, 5, 32], [48, 1, 1]);
            beta_1x1.scalars = (2.0, -0.5);
            let stride2 = Some(Case::new([2, 15, 13, 16], [24, 3, 3]).pad(1).stride(2));
            let mut odd_strided_beta = Case::new([2, 13, 11, 5], [7, 3, 3]).pad(1).stride(2);
            odd_strided_beta.scalars = (2.0, -0.5);
            let list = [
                ("1x1", Some(Case::new([4, 14, 14, 64], [128, 1, 1])), false),
                ("1x1_as_gemm", Some(Case::new([4, 14, 14, 64], [128, 1, 1])), true),
                (
                    "1x1_ragged_as_gemm",
                    Some(Case::new([3, 5, 7, 40], [72, 1, 1])),
                    true,
                ),
                ("1x1_beta_as_gemm", Some(beta_1x1), true),
                (
                    "1x1_stride2",
                    Some(Case::new([2, 8, 8, 32], [64, 1, 1]).stride(2)),
                    false,
                ),
                (
                    "3x3_pad1",
                    Some(Case::new([2, 16, 16, 64], [64, 3, 3]).pad(1)),
                    false,
                ),
                ("3x3_beta", Some(beta), false),
                ("3x3_stride2", stride2, false),
                (
                    "wide_npq",
                    Some(Case::new([8, 28, 28, 16], [32, 3, 3]).pad(1)),
                    false,
                ),
                // Channel counts off every vector width: an RGB stem, a one-channel head, odd both.
                (
                    "rgb_stem_c3",
                    Some(Case::new([2, 33, 35, 3], [16, 7, 7]).pad(3).stride(2)),
                    false,
                ),
                (
                    "one_channel_k1",
                    Some(Case::new([2, 12, 13, 24], [1, 3, 3]).pad(1)),
                    false,
                ),
                (
                    "odd_c5_k7",
                    Some(Case::new([3, 11, 9, 5], [7, 3, 3]).pad(1)),
                    false,
                ),
                ("odd_c5_k7_stride2_beta", Some(odd_strided_beta), false),
                (
                    "odd_c3_k1_stride3_past_windows",
                    Some(Case::new([2, 14, 12, 3], [1, 3, 3]).stride(3)),
                    false,
                ),
                (
                    "odd_c9_k13_1x1_stride2",
                    Some(Case::new([2, 9, 10, 9], [13, 1, 1]).stride(2)),
                    false,
                ),
                (
                    "even_c20_k30",
                    Some(Case::new([2, 14, 14, 20], [30, 3, 3]).pad(1).stride(2)),
                    false,
                ),
            ];
            for (name, case, gemm) in list {
                let Some(case) = case else { continue };
                let route = if gemm { Route::Gemm } else { Route::Chosen };
                out.push((
                    format!("dispatch::{}_{dtype}_{name}", kind.manifest_name()),
                    Box::new(move |ctx: &Arc<CudaContext>| dispatched(ctx, kind, dtype, case, route)),
                ));
            }
            // Channels padded to whole 16 bytes, on Hopper and Ampere kernels: odd C and K, with
            // C (copied where D is computed), strided, and a 1x1.
            let mut odd_beta = Case::new([2, 11, 9, 5], [7, 3, 3]).pad(1);
            odd_beta.scalars = (1.5, -0.75);
            let padded = [
                ("odd_c5_k7_beta", odd_beta),
                (
                    "c3_k16_stride2",
                    Case::new([2, 15, 13, 3], [16, 3, 3]).pad(1).stride(2),
                ),
                ("c20_k1", Case::new([2, 10, 12, 20], [1, 3, 3]).pad(1)),
                ("c13_k21_1x1", Case::new([3, 7, 6, 13], [21, 1, 1])),
            ];
            for (name, case) in padded {
                for (api, tag) in [(Api::Cutlass3x, "sm90"), (Api::Cutlass2x, "sm80")] {
                    let route = Route::Padded(api);
                    out.push((
                        format!("dispatch::{}_{dtype}_padded_{name}_{tag}", kind.manifest_name()),
                        Box::new(move |ctx: &Arc<CudaContext>| dispatched(ctx, kind, dtype, case, route)),
                    ));
                }
            }
        }
    }
    out.extend(direct_cases());
    out.push((
        "dispatch::fprop_f32_3x3".into(),
        Box::new(|ctx: &Arc<CudaContext>| {
            dispatched(
                ctx,
                ConvKind::Fprop,
                DType::F32,
                Case::new([2, 9, 9, 8], [16, 3, 3]).pad(1),
                Route::Chosen,
            )
        }),
    ));
    out
}

/// The direct fprop of few channels, each type and width: stems of 1 to 16 channels, output
/// channels off the width (ragged, one), strides, dilation, padding past the image, with C; and
/// the unit-stride dgrad of few input channels (padding 0 to past the filter, dilation, with C).
fn direct_cases() -> Vec<(String, GpuTest)> {
    let mut out: Vec<(String, GpuTest)> = Vec::new();
    let mut beta = Case::new([3, 11, 9, 5], [7, 3, 3]).pad(1).stride(2);
    beta.scalars = (1.5, -0.75);
    let list = [
        (
            "rgb_stem_c3_k64",
            Case::new([2, 33, 35, 3], [64, 7, 7]).pad(3).stride(2),
        ),
        ("one_channel_k1", Case::new([2, 12, 13, 1], [1, 3, 3]).pad(1)),
        ("c2_k33_ragged", Case::new([3, 19, 17, 2], [33, 5, 5]).pad(2)),
        ("c5_k7_stride2_beta", beta),
        (
            "c16_k40_dilation2",
            Case::new([2, 15, 14, 16], [40, 3, 3]).pad(2).dilation(2),
        ),
        ("c4_k9_pad_past", Case::new([1, 5, 6, 4], [9, 5, 5]).pad(3)),
    ];
    // The dgrad of few input channels at unit stride (dx's channels are the kernel's output).
    let mut dgrad_beta = Case::new([2, 9, 11, 3], [40, 3, 3]).pad(1);
    dgrad_beta.scalars = (1.5, -0.75);
    let dgrads = [
        ("c3_k8_5x5", Case::new([2, 21, 19, 3], [8, 5, 5]).pad(2)),
        ("c1_k5_pad0", Case::new([3, 12, 13, 1], [5, 3, 3])),
        (
            "c7_k9_dilation2",
            Case::new([2, 15, 14, 7], [9, 3, 3]).pad(1).dilation(2),
        ),
        ("c3_k40_beta", dgrad_beta),
    ];
    let kinds = [(ConvKind::Fprop, &list[..]), (ConvKind::Dgrad, &dgrads[..])];
    for dtype in [DType::F16, DType::Bf16, DType::F32] {
        for (kind, cases) in kinds {
            for &(name, case) in cases {
                for cols in [8, 16, 32] {
                    out.push((
                        format!(
                            "dispatch::{}_{dtype}_direct_{name}_kt{cols}",
                            kind.manifest_name()
                        ),
                        Box::new(move |ctx: &Arc<CudaContext>| {
                            dispatched(ctx, kind, dtype, case, Route::Small(cols))
                        }),
                    ));
                }
            }
        }
    }
    out
}

/// The typed dispatch path, and its refusals: split-K is dispatch's choice; a wrong output shape
/// says the right one.
fn typed_dispatch(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use cutlass_aot::conv::dispatch::{self, Fprop};
    use cutlass_aot::conv::{Conv2d, TensorMut, TensorRef};
    use half::bf16;
    let stream = ctx.default_stream();
    let (n, h, w, c, k) = (2, 12, 12, 32, 40);
    let (p, q) = Conv2d::<Fprop<bf16>>::output_size([n, h, w, c], [k, 3, 3], [1, 1], [1, 1], [1, 1])
        .map_err(|e| e.to_string())?;
    let x_host = verify::random_values(DType::Bf16, n * h * w * c, 5);
    let w_host = verify::random_values(DType::Bf16, k * 9 * c, 6);
    let to_bf16 = |v: &[f64]| v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>();
    let x = stream.clone_htod(&to_bf16(&x_host)).map_err(|e| e.to_string())?;
    let wt = stream.clone_htod(&to_bf16(&w_host)).map_err(|e| e.to_string())?;
    let mut y = stream
        .alloc_zeros::<bf16>(n * p * q * k)
        .map_err(|e| e.to_string())?;
    type Slice = cudarc::driver::CudaSlice<bf16>;
    fn args<'a>(
        x: &'a Slice,
        wt: &'a Slice,
        y: &'a mut Slice,
        [n, h, w, c, k, p, q]: [usize; 7],
    ) -> Conv2d<'a, Fprop<bf16>> {
        Conv2d::new(
            TensorRef::new(x, [n, h, w, c]),
            TensorRef::new(wt, [k, 3, 3, c]),
            TensorMut::new(y, [n, p, q, k]),
            1.0,
        )
        .padding(1, 1)
    }
    let dims = [n, h, w, c, k, p, q];
    dispatch::run(&stream, args(&x, &wt, &mut y, dims)).map_err(|e| e.to_string())?;
    let out: Vec<f64> = stream
        .clone_dtoh(&y)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    let problem = Conv2dProblem::new(
        ConvKind::Fprop,
        [n, h, w, c],
        [k, 3, 3],
        (DType::Bf16, DType::Bf16, DType::Bf16),
    )
    .padding(1, 1);
    let reference: Vec<f64> = verify::reference_conv2d(&problem, &x_host, &w_host, &[], (1.0, 0.0))
        .into_iter()
        .map(|v| verify::round_to(DType::Bf16, v))
        .collect();
    let error = verify::relative_error(&out, &reference);
    if error > 1e-2 {
        return Err(format!("typed dispatch: relative error {error:.3e}").into());
    }
    let err = dispatch::run(&stream, args(&x, &wt, &mut y, dims).split_k(4))
        .err()
        .ok_or("split_k 4 was accepted")?;
    if !err.to_string().contains("dispatch chooses split-K") {
        return Err(format!("the split-K refusal does not say why: {err}").into());
    }
    let mut short = stream
        .alloc_zeros::<bf16>(n * p * q * k - 1)
        .map_err(|e| e.to_string())?;
    let err = dispatch::run(&stream, args(&x, &wt, &mut short, dims))
        .err()
        .ok_or("a short output buffer was accepted")?;
    if !err.to_string().contains("buffer") {
        return Err(format!("the short-buffer error does not say so: {err}").into());
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let gpu: Result<Arc<CudaContext>, String> = device::context(0).map_err(|e| e.to_string());
    let mut trials = Vec::new();
    let mut add = |name: String, body: GpuTest| trials.push(gpu_trial::trial(&gpu, name, body));
    for info in REGISTRY
        .all()
        .iter()
        .copied()
        .filter(|k| k.operation.conv().is_some())
    {
        for (name, body) in cases(info) {
            add(name, body);
        }
    }
    add("typed::fprop_f16_stride2".into(), Box::new(typed));
    add("typed::fprop_s8_interleaved".into(), Box::new(typed_interleaved));
    for (name, body) in dispatch_cases() {
        add(name, body);
    }
    add("dispatch::typed_bf16".into(), Box::new(typed_dispatch));
    libtest_mimic::run(&args, trials).exit();
}
