//! GPU suite of CUDA-graph capture: every launch path — a dispatched GEMM plan (direct, staged,
//! serial split-K, stream-K), a conv plan (plain, and a strided dgrad's stride phases on side
//! streams, written into dx in place or staged in scratch; ragged channels padded; the direct
//! fprop of few channels), a prepared grouped launch (host-packed and device-resident MoE) and an
//! elementwise kernel — is captured, replayed several times and compared bit for bit with a direct run.
//! A launch that would allocate inside capture is refused with a message that names the fix.
//!
//! cudarc's event tracking is disabled on the context, as capture needs (an event recorded before
//! capture cannot be waited on inside it). Where no NVIDIA driver or device exists, every test is
//! reported as *ignored* with the reason.

use std::sync::Arc;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaGraph, CudaSlice, CudaStream, DevicePtr};
use cutlass_aot::conv::{self, ConvGeometry, ConvOperands, TensorOperand};
use cutlass_aot::dispatch::{self, Policy, Signature};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{Api, ConvKind, DType, Layout, OperationKind, SplitK};
use cutlass_aot::select::{Row, Table};
use cutlass_aot::{verify, GemmOperands, KernelInfo, MatrixShape, Operand};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

type Body = Box<dyn FnOnce(&Arc<CudaContext>) -> Result<(), String> + Send>;

/// Replays of each captured graph.
const REPLAYS: usize = 3;

/// A device buffer of random `dtype` values (or poison), its address taken once.
struct Buffer {
    slice: CudaSlice<u8>,
    address: u64,
    len: usize,
}

impl Buffer {
    fn new(stream: &Arc<CudaStream>, dtype: DType, len: usize, seed: Option<u64>) -> Result<Self, String> {
        let values = match seed {
            Some(seed) => verify::random_values(dtype, len, seed),
            None => vec![verify::poison(dtype); len],
        };
        let slice = stream
            .clone_htod(&verify::encode(dtype, &values))
            .map_err(|e| format!("upload: {e}"))?;
        let address = {
            let (address, _guard) = slice.device_ptr(stream);
            address
        };
        Ok(Buffer { slice, address, len })
    }

    fn bytes(&self, stream: &Arc<CudaStream>) -> Result<Vec<u8>, String> {
        stream.synchronize().map_err(|e| format!("device: {e}"))?;
        stream
            .clone_dtoh(&self.slice)
            .map_err(|e| format!("download: {e}"))
    }

    fn poison(&mut self, stream: &Arc<CudaStream>, dtype: DType) -> Result<(), String> {
        let bytes = verify::encode(dtype, &vec![verify::poison(dtype); self.len]);
        stream
            .memcpy_htod(&bytes, &mut self.slice)
            .map_err(|e| format!("poison: {e}"))?;
        Ok(())
    }
}

/// Captures `body`'s launches on `stream` into a graph (the capture is ended whatever happens).
fn capture(
    stream: &Arc<CudaStream>,
    body: impl FnOnce() -> Result<(), cutlass_aot::Error>,
) -> Result<CudaGraph, String> {
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .map_err(|e| format!("begin capture: {e}"))?;
    let launched = body();
    let graph = stream.end_capture(CUgraphInstantiate_flags(0));
    launched.map_err(|e| format!("launch inside capture: {e}"))?;
    graph
        .map_err(|e| format!("end capture: {e}"))?
        .ok_or_else(|| "the capture recorded nothing".to_string())
}

/// Replays `graph` [`REPLAYS`] times, poisoning `out` before each, and compares every replay's
/// bytes with `direct`.
fn replay_matches(
    stream: &Arc<CudaStream>,
    graph: &CudaGraph,
    out: &mut Buffer,
    dtype: DType,
    direct: &[u8],
) -> Result<(), String> {
    for replay in 0..REPLAYS {
        out.poison(stream, dtype)?;
        graph
            .launch()
            .map_err(|e| format!("graph launch {replay}: {e}"))?;
        let got = out.bytes(stream)?;
        if got != direct {
            let differing = got.iter().zip(direct).filter(|(a, b)| a != b).count();
            return Err(format!(
                "replay {replay}: {differing} bytes differ from the direct run"
            ));
        }
    }
    Ok(())
}

/// A GEMM problem: its operands over fresh buffers (A, B random; C random when `beta` ≠ 0; D
/// poisoned).
struct GemmCase {
    dtype: DType,
    layouts: [Layout; 3],
    a: Buffer,
    b: Buffer,
    c: Buffer,
    d: Buffer,
    operands: GemmOperands,
}

fn gemm_case(
    stream: &Arc<CudaStream>,
    dtype: DType,
    layouts: [Layout; 3],
    (m, n, k): (usize, usize, usize),
    beta: f64,
) -> Result<GemmCase, String> {
    let [la, lb, lc] = layouts;
    let shapes = [
        MatrixShape::packed(m, k, la),
        MatrixShape::packed(k, n, lb),
        MatrixShape::packed(m, n, lc),
    ];
    let a = Buffer::new(stream, dtype, (m * k).max(1), Some(1))?;
    let b = Buffer::new(stream, dtype, (k * n).max(1), Some(2))?;
    let c = Buffer::new(stream, dtype, m * n, Some(3))?;
    let d = Buffer::new(stream, dtype, m * n, None)?;
    let op = |shape: MatrixShape, buffer: &Buffer| Operand {
        shape,
        len: buffer.len,
        address: buffer.address,
    };
    let operands = GemmOperands {
        a: op(shapes[0], &a),
        b: op(shapes[1], &b),
        c: (beta != 0.0).then(|| op(shapes[2], &c)),
        d: op(shapes[2], &d),
        alpha: 1.5,
        beta,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    Ok(GemmCase {
        dtype,
        layouts,
        a,
        b,
        c,
        d,
        operands,
    })
}

/// A table that measured every way dispatch weighs for `case`, `kernel` at `split_k` (as given)
/// fastest by far: the plan takes that way.
fn table_forcing(
    case: &GemmCase,
    kernel: &'static KernelInfo,
    split_k: usize,
    device: &cutlass_aot::device::DeviceProps,
) -> Vec<Table> {
    let sig = Signature::uniform(case.dtype, case.layouts);
    let ways = dispatch::ways(&REGISTRY, sig, &case.operands, device, Policy::default());
    let rows: Vec<Row> = ways
        .iter()
        .map(|w| {
            let forced = std::ptr::eq(w.kernel, kernel)
                && w.split_k == split_k
                && w.way.orientation == dispatch::Orientation::AsGiven
                && w.way.staged.is_none();
            Row::new(
                w.key,
                w.kernel,
                w.split_k,
                Default::default(),
                if forced { 1.0 } else { 1000.0 },
            )
        })
        .collect();
    vec![Table::new(
        device.name,
        "test",
        Box::leak(rows.into_boxed_slice()),
    )]
}

/// A GEMM through a dispatch plan: direct run first (and a plain `dispatch::launch_raw`, which must
/// give the same bytes), then captured and replayed. `force`: a kernel name and split-K the plan
/// must use (through a one-row table).
fn gemm_plan(
    ctx: &Arc<CudaContext>,
    dtype: DType,
    shape: (usize, usize, usize),
    beta: f64,
    force: Option<(&str, usize)>,
) -> Result<(), String> {
    gemm_plan_in(
        ctx,
        dtype,
        [Layout::Row, Layout::Column, Layout::Row],
        shape,
        beta,
        force,
    )
}

/// [`gemm_plan`] with operands in `layouts`.
fn gemm_plan_in(
    ctx: &Arc<CudaContext>,
    dtype: DType,
    layouts: [Layout; 3],
    shape: (usize, usize, usize),
    beta: f64,
    force: Option<(&str, usize)>,
) -> Result<(), String> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let mut case = gemm_case(&stream, dtype, layouts, shape, beta)?;
    let sig = Signature::uniform(dtype, layouts);
    let device = cutlass_aot::device::props(ctx).map_err(|e| e.to_string())?;
    let tables = match force {
        Some((name, split)) => {
            let skinny = dispatch::skinny::KERNELS
                .iter()
                .map(|(k, ..)| *k)
                .find(|k| k.rust_name == name);
            let kernel = REGISTRY
                .by_name(name)
                .or(skinny)
                .ok_or(format!("no kernel {name}"))?;
            table_forcing(&case, kernel, split, &device)
        }
        None => Vec::new(),
    };
    let registry = &REGISTRY;
    let tables: &[Table] = if force.is_some() {
        &tables
    } else {
        cutlass_aot::kernels::TABLES
    };
    // SAFETY: every operand is a live buffer of `dtype` holding its shape.
    let mut plan =
        unsafe { dispatch::plan_raw(registry, tables, &stream, sig, &case.operands, Policy::default()) }
            .map_err(|e| format!("plan: {e}"))?;
    let ran = plan.dispatched().describe();
    if let Some((name, split)) = force {
        let d = plan.dispatched();
        if d.kernel.map(|k| k.rust_name) != Some(name) || d.split_k != split {
            return Err(format!("the plan took {ran}, not {name} at split {split}"));
        }
    }
    unsafe { plan.launch_raw(&stream, &case.operands) }.map_err(|e| format!("plan launch: {e}"))?;
    let direct = case.d.bytes(&stream)?;
    if force.is_none() {
        case.d.poison(&stream, dtype)?;
        unsafe { dispatch::launch_raw(&stream, sig, &case.operands, Default::default()) }
            .map_err(|e| format!("dispatch: {e}"))?;
        if case.d.bytes(&stream)? != direct {
            return Err(format!("the plan and dispatch::launch_raw differ ({ran})"));
        }
    }
    let operands = case.operands;
    let graph = capture(&stream, || unsafe { plan.launch_raw(&stream, &operands) })?;
    replay_matches(&stream, &graph, &mut case.d, dtype, &direct).map_err(|e| format!("{ran}: {e}"))
}

/// The first plain kernel `pick` accepts, by manifest order.
fn kernel_where(pick: impl Fn(&KernelInfo) -> bool) -> Option<&'static KernelInfo> {
    REGISTRY.all().iter().copied().find(|k| k.is_plain() && pick(k))
}

/// What a conv plan test makes dispatch run.
#[derive(Clone, Copy, PartialEq)]
enum Force {
    /// Whatever it picks.
    Nothing,
    /// A Hopper kernel.
    Hopper,
    /// A Hopper kernel with the channels padded.
    Padded,
    /// The direct fprop of few channels.
    Direct,
}

/// A conv plan: a 3x3 of `channels` (C, K), running what `force` says.
fn conv_plan(
    ctx: &Arc<CudaContext>,
    kind: ConvKind,
    stride: usize,
    force: Force,
    (c, k): (usize, usize),
) -> Result<(), String> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let device = cutlass_aot::device::props(ctx).map_err(|e| e.to_string())?;
    let dtype = DType::F16;
    // Padded: large enough that the copies pay for themselves.
    let [n, h, w] = if force == Force::Padded {
        [8, 64, 64]
    } else {
        [2, 17, 15]
    };
    let problem = conv::Conv2dProblem::new(kind, [n, h, w, c], [k, 3, 3], (dtype, dtype, dtype))
        .padding(1, 1)
        .stride(stride, stride);
    let dims = problem.tensor_dims().map_err(|e| e.to_string())?;
    let count = |d: [usize; 4]| d.iter().product::<usize>();
    let a = Buffer::new(&stream, dtype, count(dims[0]), Some(5))?;
    let b = Buffer::new(&stream, dtype, count(dims[1]), Some(6))?;
    let mut d = Buffer::new(&stream, dtype, count(dims[2]), None)?;
    let tensor = |i: usize, buffer: &Buffer| TensorOperand {
        dims: dims[i],
        len: buffer.len,
        address: buffer.address,
    };
    let operands = ConvOperands {
        a: tensor(0, &a),
        b: tensor(1, &b),
        c: None,
        d: tensor(2, &d),
        geometry: ConvGeometry {
            pad: problem.pad,
            stride: problem.stride,
            dilation: problem.dilation,
            mode: problem.mode,
        },
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: 1,
        activation_arg: 0.0,
    };
    let signature = conv::dispatch::ConvSignature {
        kind,
        elements: problem.elements,
    };
    let forced;
    let tables: &[Table] = if force == Force::Direct {
        let row = Row::new(
            conv::dispatch::key_of(&problem),
            &conv::small::F16_16,
            1,
            Default::default(),
            0.001,
        );
        forced = vec![Table::new(device.name, "test", Box::leak(Box::new([row])))];
        &forced
    } else if force != Force::Nothing {
        let kernel = kernel_where(|k| {
            k.api() == Api::Cutlass3x
                && k.operation
                    .conv()
                    .is_some_and(|c| c.kind == kind && c.gemm.a.element == dtype)
        })
        .ok_or("no Hopper conv kernel of this kind")?;
        // The padded way's row is the problem as its kernel runs it.
        let whole_16_bytes = conv::padded::paddings(&problem).first().copied();
        let runs = match whole_16_bytes {
            Some(padding) if force == Force::Padded => conv::padded::padded_problem(&problem, padding),
            _ => problem,
        };
        let row = Row::new(
            conv::dispatch::key_of(&runs),
            kernel,
            1,
            Default::default(),
            0.001,
        );
        forced = vec![Table::new(device.name, "test", Box::leak(Box::new([row])))];
        &forced
    } else {
        cutlass_aot::kernels::TABLES
    };
    let mut plan = unsafe { conv::dispatch::plan_raw(&REGISTRY, tables, &stream, signature, &operands) }
        .map_err(|e| format!("plan: {e}"))?;
    let ran = plan.dispatched().describe();
    if force == Force::Padded && !matches!(plan.dispatched().way, conv::dispatch::ConvWay::Padded(_)) {
        return Err(format!("the padded way was not chosen: {ran}"));
    }
    if force == Force::Direct && conv::small::cols_of(plan.dispatched().kernel).is_none() {
        return Err(format!("the direct fprop was not chosen: {ran}"));
    }
    unsafe { plan.launch_raw(&stream, &operands) }.map_err(|e| format!("plan launch: {e}"))?;
    let direct = d.bytes(&stream)?;
    let graph = capture(&stream, || unsafe { plan.launch_raw(&stream, &operands) })?;
    replay_matches(&stream, &graph, &mut d, dtype, &direct).map_err(|e| format!("{ran}: {e}"))
}

/// A prepared grouped launch over three host-packed groups.
fn grouped_host(ctx: &Arc<CudaContext>) -> Result<(), String> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let dtype = DType::Bf16;
    let kernel = kernel_where(|k| {
        k.operation.kind() == OperationKind::GemmGrouped
            && k.gemm().a.element == dtype
            && k.gemm().a.layout == Layout::Row
            && k.gemm().b.layout == Layout::Column
            && k.gemm().c.layout == Layout::Row
    })
    .ok_or("no bf16 tn grouped kernel")?;
    let shapes = [(128, 256, 64), (40, 256, 128), (0, 256, 64)];
    let mut buffers = Vec::new();
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let a = Buffer::new(&stream, dtype, (m * k).max(1), Some(10 + i as u64))?;
        let b = Buffer::new(&stream, dtype, k * n, Some(20 + i as u64))?;
        let d = Buffer::new(&stream, dtype, (m * n).max(1), None)?;
        buffers.push((a, b, d));
    }
    let groups: Vec<cutlass_aot::grouped::GroupOperands> = shapes
        .iter()
        .zip(&buffers)
        .map(|(&(m, n, k), (a, b, d))| {
            let op = |shape, buffer: &Buffer| Operand {
                shape,
                len: buffer.len,
                address: buffer.address,
            };
            cutlass_aot::grouped::GroupOperands {
                a: op(MatrixShape::packed(m, k, Layout::Row), a),
                b: op(MatrixShape::packed(k, n, Layout::Column), b),
                c: None,
                d: op(MatrixShape::packed(m, n, Layout::Row), d),
            }
        })
        .collect();
    let ops = cutlass_aot::grouped::GroupedOperands {
        groups: &groups,
        alpha: 1.0,
        beta: 0.0,
        activation_arg: 0.0,
        tuning: Default::default(),
    };
    let prepared = unsafe { cutlass_aot::grouped::prepare_raw(kernel, &stream, &ops) }
        .map_err(|e| format!("prepare: {e}"))?;
    unsafe { prepared.launch(&stream) }.map_err(|e| format!("launch: {e}"))?;
    let direct: Vec<Vec<u8>> = buffers
        .iter()
        .map(|(_, _, d)| d.bytes(&stream))
        .collect::<Result<_, _>>()?;
    let graph = capture(&stream, || unsafe { prepared.launch(&stream) })?;
    for (i, (_, _, d)) in buffers.iter_mut().enumerate() {
        replay_matches(&stream, &graph, d, dtype, &direct[i]).map_err(|e| format!("group {i}: {e}"))?;
    }
    Ok(())
}

/// A prepared device-resident (MoE) launch: replays honour offsets rewritten on the device between
/// them (the setup kernel is part of the graph).
fn grouped_moe(ctx: &Arc<CudaContext>) -> Result<(), String> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let dtype = DType::Bf16;
    let kernel = kernel_where(|k| {
        k.operation.kind() == OperationKind::GemmGrouped
            && k.api() == Api::Cutlass3x
            && k.gemm().a.element == dtype
            && k.gemm().a.layout == Layout::Row
            && k.gemm().b.layout == Layout::Column
            && k.gemm().c.layout == Layout::Row
    })
    .ok_or("no Hopper bf16 tn grouped kernel")?;
    let (experts, rows, n, k) = (4, 320, 256, 128);
    let a = Buffer::new(&stream, dtype, rows * k, Some(31))?;
    let b = Buffer::new(&stream, dtype, experts * k * n, Some(32))?;
    let mut d = Buffer::new(&stream, dtype, rows * n, None)?;
    let mut offsets: CudaSlice<i32> = stream
        .clone_htod(&[64i32, 64, 200, 320])
        .map_err(|e| e.to_string())?;
    let offsets_address = {
        let (address, _guard) = offsets.device_ptr(&stream);
        address
    };
    let ops = cutlass_aot::grouped::MoeOperands {
        a: (a.address, a.len),
        offsets: (offsets_address, experts),
        b: (b.address, b.len),
        c: None,
        d: (d.address, d.len),
        experts,
        total_rows: rows,
        n,
        k,
        lda: k,
        ldb: k,
        ldc: n,
        ldd: n,
        b_stride: k * n,
        alpha: 1.0,
        beta: 0.0,
        activation_arg: 0.0,
        tuning: Default::default(),
    };
    let prepared = unsafe { cutlass_aot::grouped::prepare_moe_raw(kernel, &stream, &ops) }
        .map_err(|e| format!("prepare: {e}"))?;
    let graph = capture(&stream, || unsafe { prepared.launch(&stream) })?;
    for (step, ends) in [[64i32, 64, 200, 320], [10, 150, 150, 320], [320, 320, 320, 320]]
        .iter()
        .enumerate()
    {
        stream
            .memcpy_htod(ends, &mut offsets)
            .map_err(|e| e.to_string())?;
        d.poison(&stream, dtype)?;
        unsafe { prepared.launch(&stream) }.map_err(|e| format!("launch: {e}"))?;
        let direct = d.bytes(&stream)?;
        replay_matches(&stream, &graph, &mut d, dtype, &direct)
            .map_err(|e| format!("offsets {step}: {e}"))?;
    }
    Ok(())
}

/// An elementwise kernel captured through its typed run.
fn elementwise(ctx: &Arc<CudaContext>) -> Result<(), String> {
    use cutlass_aot::elementwise::{self, Elementwise, Op, Shape, Tensor, TensorMut};
    use cutlass_aot::model::Activation;
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let (rows, cols) = (37, 1029);
    let values = verify::random_values(DType::F16, rows * cols, 41);
    let host: Vec<half::f16> = values.iter().map(|&v| half::f16::from_f64(v)).collect();
    let x = stream.clone_htod(&host).map_err(|e| e.to_string())?;
    let mut out = stream
        .alloc_zeros::<half::f16>(rows * cols)
        .map_err(|e| e.to_string())?;
    let shape = Shape::new(1, rows, cols);
    let op = Op::unary(Activation::Relu);
    let run = |out: &mut CudaSlice<half::f16>| {
        elementwise::run(
            &stream,
            op,
            Elementwise::unary(Tensor::new(&x, shape), TensorMut::new(out, shape)),
        )
        .map(|_| ())
    };
    run(&mut out).map_err(|e| format!("direct: {e}"))?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let direct = stream.clone_dtoh(&out).map_err(|e| e.to_string())?;
    let graph = capture(&stream, || run(&mut out))?;
    for replay in 0..REPLAYS {
        stream.memset_zeros(&mut out).map_err(|e| e.to_string())?;
        graph.launch().map_err(|e| e.to_string())?;
        stream.synchronize().map_err(|e| e.to_string())?;
        if stream.clone_dtoh(&out).map_err(|e| e.to_string())? != direct {
            return Err(format!("replay {replay} differs from the direct run"));
        }
    }
    Ok(())
}

/// A launch that would take scratch memory from the per-stream cache inside capture is refused
/// with the fix; the captured stream stays usable.
fn cache_refused_inside_capture(ctx: &Arc<CudaContext>) -> Result<(), String> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    // K = 0 with beta: D = beta·C through A and B staged as zeros (scratch memory).
    let case = gemm_case(
        &stream,
        DType::F16,
        [Layout::Row, Layout::Column, Layout::Row],
        (64, 64, 0),
        0.5,
    )?;
    let sig = Signature::uniform(DType::F16, case.layouts);
    let ran = std::cell::RefCell::new(String::new());
    let result = capture(&stream, || unsafe {
        let capturing = cutlass_aot::workspace::capturing(&stream);
        dispatch::launch_raw(&stream, sig, &case.operands, Default::default())
            .map(|d| *ran.borrow_mut() = format!("{} (capturing: {capturing})", d.describe()))
    });
    match result {
        Err(e) if e.contains("captured into a CUDA graph") && e.contains("plan") => {}
        Err(e) => return Err(format!("refused, but the message does not say why: {e}")),
        Ok(_) => {
            return Err(format!(
                "a staged launch was captured from the per-stream cache: {}",
                ran.borrow()
            ))
        }
    }
    // Outside capture the same call runs.
    unsafe { dispatch::launch_raw(&stream, sig, &case.operands, Default::default()) }
        .map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let _ = (&case.a, &case.b, &case.c);
    Ok(())
}

fn main() {
    let mut args = Arguments::from_args();
    // A capture (global mode) fails other threads' allocations and synchronisations, and theirs
    // invalidate it: the tests run one at a time unless told otherwise.
    args.test_threads.get_or_insert(1);
    let gpu: Result<Arc<CudaContext>, String> = cutlass_aot::device::context(0).map_err(|e| e.to_string());
    if let Ok(ctx) = &gpu {
        // SAFETY: every test of this binary orders its own work on one stream per test.
        unsafe { ctx.disable_event_tracking() };
    }
    let mut trials = Vec::new();
    let mut add = |name: &str, body: Body| {
        let gpu = gpu.clone();
        trials.push(Trial::ignorable_test(name.to_string(), move || match gpu {
            Err(reason) => Ok(Completion::ignored_with(format!("needs a GPU: {reason}"))),
            Ok(ctx) => body(&ctx).map(|()| Completion::Completed).map_err(Failed::from),
        }));
    };
    add(
        "gemm_plan_direct",
        Box::new(|c| gemm_plan(c, DType::F16, (256, 512, 320), 0.5, None)),
    );
    // K = 0: D = beta·C through staged zero A and B (scratch memory of the plan's own).
    add(
        "gemm_plan_staged_k0",
        Box::new(|c| gemm_plan(c, DType::F16, (96, 80, 0), 0.5, None)),
    );
    // An odd K through the narrow-alignment kernels where built (else staged).
    add(
        "gemm_plan_odd_k",
        Box::new(|c| gemm_plan(c, DType::Bf16, (96, 80, 701), 0.0, None)),
    );
    add(
        "gemm_plan_f64",
        Box::new(|c| gemm_plan(c, DType::F64, (65, 33, 129), 1.0, None)),
    );
    add(
        "gemm_plan_serial_split_k",
        Box::new(|c| gemm_plan(c, DType::F16, (128, 128, 4096), 0.0, Some(("gemm_f16_tn", 4)))),
    );
    let stream_k =
        kernel_where(|k| k.design.split_k() == SplitK::StreamK && k.operation.kind() == OperationKind::Gemm)
            .map(|k| (k.rust_name, k.gemm().a.element));
    if let Some((name, dtype)) = stream_k {
        add(
            "gemm_plan_stream_k",
            Box::new(move |c| gemm_plan(c, dtype, (256, 256, 2048), 0.0, Some((name, 1)))),
        );
        add(
            "gemm_plan_stream_k_split_4",
            Box::new(move |c| gemm_plan(c, dtype, (256, 256, 2048), 0.0, Some((name, 4)))),
        );
    }
    // The tiny forms: one launch, a thread or a warp per output.
    add(
        "gemm_plan_tiny_thread",
        Box::new(|c| {
            gemm_plan(
                c,
                DType::F32,
                (37, 300, 19),
                0.5,
                Some(("skinny_tiny_thread_f32", 1)),
            )
        }),
    );
    add(
        "gemm_plan_tiny_warp",
        Box::new(|c| {
            gemm_plan(
                c,
                DType::F16,
                (9, 60, 167),
                1.0,
                Some(("skinny_tiny_warp_f16", 1)),
            )
        }),
    );
    // The skinny kernels, split (partial sums in the plan's workspace, then the reduction).
    add(
        "gemm_plan_skinny_dot_split",
        Box::new(|c| gemm_plan(c, DType::F16, (1000, 7, 3001), 0.5, Some(("skinny_dot_f16", 8)))),
    );
    add(
        "gemm_plan_skinny_tensor_split",
        Box::new(|c| {
            gemm_plan(
                c,
                DType::Bf16,
                (700, 45, 2001),
                1.0,
                Some(("skinny_tensor_bf16", 4)),
            )
        }),
    );
    add(
        "gemm_plan_skinny_axpy_split",
        Box::new(|c| {
            let layouts = [Layout::Column, Layout::Row, Layout::Row];
            gemm_plan_in(
                c,
                DType::Bf16,
                layouts,
                (2049, 3, 999),
                0.0,
                Some(("skinny_axpy_bf16", 4)),
            )
        }),
    );
    add(
        "conv_plan_fprop",
        Box::new(|c| conv_plan(c, ConvKind::Fprop, 1, Force::Nothing, (32, 48))),
    );
    add(
        "conv_plan_wgrad",
        Box::new(|c| conv_plan(c, ConvKind::Wgrad, 1, Force::Nothing, (32, 48))),
    );
    add(
        "conv_plan_fprop_direct_few_channels",
        Box::new(|c| conv_plan(c, ConvKind::Fprop, 2, Force::Direct, (3, 16))),
    );
    add(
        "conv_plan_strided_dgrad_stride_phases",
        Box::new(|c| conv_plan(c, ConvKind::Dgrad, 2, Force::Hopper, (32, 48))),
    );
    // Odd channels: CUTLASS 2.x's alignment-1 unit-stride dgrad, its phases staged in scratch.
    add(
        "conv_plan_strided_dgrad_odd_channels_staged_phases",
        Box::new(|c| conv_plan(c, ConvKind::Dgrad, 2, Force::Nothing, (5, 7))),
    );
    // Ragged channels padded into the workspace around a Hopper kernel (fprop: C and K copied in
    // and out; wgrad: x in, dw out).
    add(
        "conv_plan_fprop_padded_channels",
        Box::new(|c| conv_plan(c, ConvKind::Fprop, 1, Force::Padded, (61, 67))),
    );
    add(
        "conv_plan_wgrad_padded_channels",
        Box::new(|c| conv_plan(c, ConvKind::Wgrad, 1, Force::Padded, (61, 64))),
    );
    add("grouped_prepared_host_groups", Box::new(grouped_host));
    add("grouped_prepared_moe", Box::new(grouped_moe));
    add("elementwise_relu", Box::new(elementwise));
    add(
        "cache_refused_inside_capture",
        Box::new(cache_refused_inside_capture),
    );
    libtest_mimic::run(&args, trials).exit();
}
