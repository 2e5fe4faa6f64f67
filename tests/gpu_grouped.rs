//! GPU suite of grouped GEMM (`--features grouped`): every grouped kernel against an f64 host
//! reference on ragged, empty and skewed groups, `beta ≠ 0`, repeated launches, and the
//! device-resident (MoE) form — including a launch while the rows per expert are still being
//! written by earlier work on the same stream (no host synchronisation inside the launch).
//!
//! Runs in plain `cargo test --features grouped`. Where no NVIDIA driver or device exists, every
//! test is reported as *ignored* with the reason — never as passed.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};
use cutlass_aot::grouped::{self, GroupOperands, GroupedOperands, MoeOperands};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{Api, DType, Layout, OperationKind};
use cutlass_aot::verify::{self, HostFusion, HostMatrix};
use cutlass_aot::{device, KernelInfo, MatrixShape, Operand};
use libtest_mimic::{Arguments, Failed};

#[path = "common/gpu_trial.rs"]
mod gpu_trial;

use gpu_trial::GpuTest;

/// Extents a kernel takes: contiguous extents must be multiples of its alignments.
fn multiple(info: &KernelInfo) -> usize {
    let op = info.gemm();
    op.a.alignment.max(op.b.alignment).max(op.c.alignment) as usize
}

/// `(alpha, beta)` as given, or integers of the same sign for an integer epilogue (which takes
/// integer scalars only).
fn scalars(info: &KernelInfo, (alpha, beta): (f64, f64)) -> (f64, f64) {
    if info.epilogue.compute.is_integer() {
        (
            alpha.signum() * alpha.abs().ceil(),
            beta.signum() * beta.abs().ceil(),
        )
    } else {
        (alpha, beta)
    }
}

fn round_up(v: usize, to: usize) -> usize {
    v.div_ceil(to) * to
}

/// A matrix with random values (or NaN-like poison for outputs), packed, plus `pad` alignments of
/// extra leading dimension.
fn host_matrix(
    dtype: DType,
    layout: Layout,
    (rows, cols): (usize, usize),
    pad: usize,
    seed: Option<u64>,
) -> HostMatrix {
    let mut shape = MatrixShape::packed(rows, cols, layout);
    shape.ld += pad;
    let len = shape.required_len(layout).unwrap();
    let data = match seed {
        Some(seed) => verify::random_values(dtype, len, seed),
        None => vec![poison(dtype); len],
    };
    HostMatrix { shape, layout, data }
}

fn poison(dtype: DType) -> f64 {
    if dtype.is_integer() {
        -77.0
    } else {
        -1234.5
    }
}

struct DeviceMatrix {
    host: HostMatrix,
    dtype: DType,
    buffer: CudaSlice<u8>,
}

impl DeviceMatrix {
    fn upload(stream: &Arc<CudaStream>, host: HostMatrix, dtype: DType) -> Result<Self, Failed> {
        // An empty matrix still gets a (one-element) buffer, so that it has an address.
        let mut bytes = verify::encode(dtype, &host.data);
        if bytes.is_empty() {
            bytes = vec![0; verify::element_bytes(dtype)];
        }
        let buffer = stream.clone_htod(&bytes).map_err(|e| format!("upload: {e}"))?;
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

    fn download(&self, stream: &Arc<CudaStream>) -> Result<Vec<f64>, Failed> {
        let bytes = stream
            .clone_dtoh(&self.buffer)
            .map_err(|e| format!("download: {e}"))?;
        stream.synchronize().map_err(|e| format!("sync: {e}"))?;
        let mut values = verify::decode(self.dtype, &bytes);
        values.truncate(self.host.data.len());
        Ok(values)
    }
}

/// One group's host and device matrices.
struct GroupData {
    a: DeviceMatrix,
    b: DeviceMatrix,
    c: Option<DeviceMatrix>,
    d: DeviceMatrix,
}

fn make_groups(
    stream: &Arc<CudaStream>,
    info: &KernelInfo,
    extents: &[(usize, usize, usize)],
    with_c: bool,
    pad: usize,
    seed: u64,
) -> Result<Vec<GroupData>, Failed> {
    let op = info.gemm();
    let mut groups = Vec::new();
    for (g, &(m, n, k)) in extents.iter().enumerate() {
        let s = seed + 10 * g as u64;
        let align = |a: u32| pad * a as usize;
        groups.push(GroupData {
            a: DeviceMatrix::upload(
                stream,
                host_matrix(op.a.element, op.a.layout, (m, k), align(op.a.alignment), Some(s)),
                op.a.element,
            )?,
            b: DeviceMatrix::upload(
                stream,
                host_matrix(
                    op.b.element,
                    op.b.layout,
                    (k, n),
                    align(op.b.alignment),
                    Some(s + 1),
                ),
                op.b.element,
            )?,
            c: if with_c {
                Some(DeviceMatrix::upload(
                    stream,
                    host_matrix(
                        op.c.element,
                        op.c.layout,
                        (m, n),
                        align(op.c.alignment),
                        Some(s + 2),
                    ),
                    op.c.element,
                )?)
            } else {
                None
            },
            d: DeviceMatrix::upload(
                stream,
                host_matrix(op.c.element, op.c.layout, (m, n), align(op.c.alignment), None),
                op.c.element,
            )?,
        });
    }
    Ok(groups)
}

/// Launches `info` over `groups` through the untyped path.
fn launch(
    stream: &Arc<CudaStream>,
    info: &'static KernelInfo,
    groups: &[GroupData],
    (alpha, beta): (f64, f64),
) -> Result<(), Failed> {
    let operands: Vec<GroupOperands> = groups
        .iter()
        .map(|g| GroupOperands {
            a: g.a.operand(stream),
            b: g.b.operand(stream),
            c: g.c.as_ref().map(|c| c.operand(stream)),
            d: g.d.operand(stream),
        })
        .collect();
    let ops = GroupedOperands {
        groups: &operands,
        alpha,
        beta,
        activation_arg: 0.1,
        tuning: Default::default(),
    };
    // SAFETY: every operand is a live buffer of its stated length and the kernel's types.
    unsafe { grouped::launch_raw(info, stream, &ops) }.map_err(|e| format!("launch: {e}").into())
}

/// Checks every group's D (and that nothing around it was written) against the reference.
fn check(
    stream: &Arc<CudaStream>,
    info: &'static KernelInfo,
    groups: &[GroupData],
    (alpha, beta): (f64, f64),
) -> Result<(), Failed> {
    let tolerance = verify::fused_tolerance(info);
    let fused = HostFusion {
        activation_arg: 0.1,
        ..Default::default()
    };
    for (g, group) in groups.iter().enumerate() {
        let out = group.d.download(stream)?;
        let mut expected = group.d.host.clone();
        verify::reference_fused(
            info,
            &group.a.host,
            &group.b.host,
            group.c.as_ref().map(|c| &c.host),
            &mut expected,
            None,
            (alpha, beta),
            &fused,
        );
        let error = verify::relative_error(&out, &expected.data);
        if error.is_nan() || error > tolerance {
            let s = group.d.host.shape;
            return Err(format!(
                "group {g} ({}×{}, k {}): relative error {error:.3e} exceeds {tolerance:.1e}",
                s.rows, s.cols, group.a.host.shape.cols
            )
            .into());
        }
    }
    Ok(())
}

/// Ragged extents rounded to the kernel's alignment; one group empty (m = 0), one with n = 0.
fn ragged(info: &KernelInfo) -> Vec<(usize, usize, usize)> {
    let r = |v| round_up(v, multiple(info));
    vec![
        (r(197), r(263), r(72)),
        (0, r(128), r(64)),
        (r(64), r(64), r(64)),
        (1, r(8), r(16)),
        (r(513), r(200), r(136)),
        (r(40), 0, r(32)),
    ]
}

/// Groups without products (k = 0: D = beta·C) beside ordinary ones.
fn k_zero(info: &KernelInfo) -> Vec<(usize, usize, usize)> {
    let r = |v| round_up(v, multiple(info));
    vec![
        (r(64), r(64), r(64)),
        (r(40), r(72), 0),
        (r(8), r(16), 0),
        (r(24), r(32), r(16)),
    ]
}

/// Many groups of Zipf-like sizes (some empty), as an MoE layer's experts.
fn skewed(info: &KernelInfo) -> Vec<(usize, usize, usize)> {
    let (n, k) = (round_up(96, multiple(info)), round_up(128, multiple(info)));
    (0..37usize)
        .map(|g| {
            let rank = (g * 7) % 37 + 1;
            let rows = (600.0 / (rank as f64).powf(1.2)) as usize;
            (if g % 9 == 4 { 0 } else { rows }, n, k)
        })
        .collect()
}

fn case(
    ctx: &Arc<CudaContext>,
    info: &'static KernelInfo,
    extents: Vec<(usize, usize, usize)>,
    with_c: bool,
    pad: usize,
    scalars: (f64, f64),
) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let groups = make_groups(&stream, info, &extents, with_c, pad, info.name.len() as u64)?;
    launch(&stream, info, &groups, scalars)?;
    check(&stream, info, &groups, scalars)
}

/// Two launches on one stream and one workspace, D poisoned in between, different data.
fn repeated(ctx: &Arc<CudaContext>, info: &'static KernelInfo) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    for round in 0..3u64 {
        let extents = if round % 2 == 0 {
            ragged(info)
        } else {
            skewed(info)
        };
        let groups = make_groups(&stream, info, &extents, true, 0, 1000 * round + 7)?;
        launch(&stream, info, &groups, scalars(info, (1.0, 0.5)))?;
        check(&stream, info, &groups, scalars(info, (1.0, 0.5)))?;
    }
    Ok(())
}

/// The MoE form: one A of all rows, offsets on the device, one B per expert; rows per expert with
/// empty experts. `late_offsets`: the stream is first held by a host function until the launch
/// call has returned, then the offsets are copied, then the launch runs — so the offsets are
/// written after the launch call: a launch that waited for the stream could not return before the
/// hold ends, and one that read the offsets on the host would find zeros there.
fn moe(ctx: &Arc<CudaContext>, info: &'static KernelInfo, late_offsets: bool) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let op = *info.gemm();
    let rows = [0usize, 5, 130, 0, 64, 1, 300, 7, 0];
    let experts = rows.len();
    let total: usize = rows.iter().sum();
    let (n, k) = (round_up(256, multiple(info)), round_up(128, multiple(info)));
    let a = host_matrix(op.a.element, Layout::Row, (total, k), 0, Some(11));
    // B: one k×n matrix per expert, in the kernel's layout, back to back.
    let b_shape = MatrixShape::packed(k, n, op.b.layout);
    let b_one = b_shape.required_len(op.b.layout).unwrap();
    let b_all = verify::random_values(op.b.element, b_one * experts, 12);
    let c = host_matrix(op.c.element, Layout::Row, (total, n), 0, Some(13));
    let d = host_matrix(op.c.element, Layout::Row, (total, n), 0, None);
    let ends: Vec<i32> = rows
        .iter()
        .scan(0i32, |s, &r| {
            *s += r as i32;
            Some(*s)
        })
        .collect();
    let up = |dtype, data: &[f64]| {
        stream
            .clone_htod(&verify::encode(dtype, data))
            .map_err(|e| Failed::from(format!("upload: {e}")))
    };
    let a_dev = up(op.a.element, &a.data)?;
    let b_dev = up(op.b.element, &b_all)?;
    let c_dev = up(op.c.element, &c.data)?;
    let d_dev = up(op.c.element, &d.data)?;
    let mut offsets_dev = if late_offsets {
        stream
            .alloc_zeros::<i32>(experts)
            .map_err(|e| format!("alloc: {e}"))?
    } else {
        stream.clone_htod(&ends).map_err(|e| format!("upload: {e}"))?
    };
    let bytes = |dtype: DType, buffer: &CudaSlice<u8>| buffer.len() / verify::element_bytes(dtype);
    let address = |buffer: &CudaSlice<u8>| buffer.device_ptr(&stream).0;
    let moe_args = |offsets: &CudaSlice<i32>| {
        run_moe(
            info,
            &stream,
            (address(&a_dev), bytes(op.a.element, &a_dev)),
            offsets,
            (address(&b_dev), bytes(op.b.element, &b_dev)),
            (address(&c_dev), bytes(op.c.element, &c_dev)),
            (address(&d_dev), bytes(op.c.element, &d_dev)),
            (experts, total, n, k),
        )
    };
    if late_offsets {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::Duration;
        // The stream's next work is a host function that holds it until `gate` opens (or 2 s
        // pass, so that a broken launch fails instead of hanging).
        unsafe extern "C" fn hold(gate: *mut std::ffi::c_void) {
            // SAFETY: `gate` is an `Arc<AtomicBool>` turned into a raw pointer below.
            let gate = unsafe { Arc::from_raw(gate as *const AtomicBool) };
            let started = Instant::now();
            while !gate.load(Ordering::Acquire) && started.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        // Loading an image may synchronise the context: load it first, as a user would.
        info.load(ctx).map_err(|e| format!("load: {e}"))?;
        let gate = Arc::new(AtomicBool::new(false));
        // SAFETY: `hold` makes no CUDA call; it owns one reference of `gate`.
        unsafe {
            cudarc::driver::sys::cuLaunchHostFunc(
                stream.cu_stream(),
                Some(hold),
                Arc::into_raw(gate.clone()) as *mut std::ffi::c_void,
            )
        }
        .result()
        .map_err(|e| format!("host function: {e}"))?;
        stream
            .memcpy_htod(&ends, &mut offsets_dev)
            .map_err(|e| format!("offsets: {e}"))?;
        let started = Instant::now();
        let launched = moe_args(&offsets_dev);
        let host = started.elapsed();
        gate.store(true, Ordering::Release);
        launched?;
        stream.synchronize().map_err(|e| format!("sync: {e}"))?;
        if host > Duration::from_millis(500) {
            return Err(format!(
                "the MoE launch took {host:?} on the host while its stream was held: it waited for the stream"
            )
            .into());
        }
    } else {
        moe_args(&offsets_dev)?;
    }
    let out = verify::decode(
        op.c.element,
        &stream.clone_dtoh(&d_dev).map_err(|e| format!("download: {e}"))?,
    );
    // Reference, expert by expert.
    let mut expected = d.clone();
    let mut start = 0;
    for (e, &r) in rows.iter().enumerate() {
        for row in start..start + r {
            for col in 0..n {
                let mut acc = 0.0;
                for i in 0..k {
                    let b_at = e * b_one + verify::offset(&b_shape, op.b.layout, 0, i, col);
                    acc += a.data[row * k + i] * b_all[b_at];
                }
                let (alpha, beta) = scalars(info, (1.0, 0.5));
                let z = alpha * acc + beta * c.data[row * n + col];
                expected.data[row * n + col] = verify::activation(info.epilogue.fusion.activation, z, 0.1);
            }
        }
        start += r;
    }
    let error = verify::relative_error(&out, &expected.data);
    let tolerance = verify::fused_tolerance(info);
    if error.is_nan() || error > tolerance {
        return Err(format!("MoE: relative error {error:.3e} exceeds {tolerance:.1e}").into());
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_moe(
    info: &'static KernelInfo,
    stream: &Arc<CudaStream>,
    a: (u64, usize),
    offsets: &CudaSlice<i32>,
    b: (u64, usize),
    c: (u64, usize),
    d: (u64, usize),
    (experts, total_rows, n, k): (usize, usize, usize, usize),
) -> Result<(), Failed> {
    let op = info.gemm();
    let ops = MoeOperands {
        a,
        offsets: (offsets.device_ptr(stream).0, offsets.len()),
        b,
        c: Some(c),
        d,
        experts,
        total_rows,
        n,
        k,
        lda: k,
        ldb: if op.b.layout == Layout::Column { k } else { n },
        ldc: n,
        ldd: n,
        b_stride: k * n,
        alpha: scalars(info, (1.0, 0.5)).0,
        beta: scalars(info, (1.0, 0.5)).1,
        activation_arg: 0.1,
        tuning: Default::default(),
    };
    // SAFETY: the buffers are live and hold the whole problem (checked by the launch too).
    unsafe { grouped::launch_moe_raw(info, stream, &ops) }.map_err(|e| format!("launch: {e}").into())
}

/// The typed API of one kernel (`kernels::NAME::run`) and grouped dispatch (`grouped::run`), on
/// the same bf16 groups (one of them empty), against the reference.
fn typed_and_dispatched(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    use cutlass_aot::half::bf16;
    use cutlass_aot::kernels::grouped_bf16_tn_device as kernel;
    use cutlass_aot::{ColumnMajor, Group, GroupOf, GroupedGemm, MatrixMut, MatrixRef, RowMajor};
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let extents = [(100usize, 64usize, 32usize), (0, 64, 32), (257, 72, 40)];
    let bits = |m: &HostMatrix| m.data.iter().map(|&v| bf16::from_f64(v)).collect::<Vec<_>>();
    let mut host = Vec::new();
    let mut device = Vec::new();
    for (g, &(m, n, k)) in extents.iter().enumerate() {
        let a = host_matrix(DType::Bf16, Layout::Row, (m, k), 0, Some(70 + g as u64));
        let b = host_matrix(DType::Bf16, Layout::Column, (k, n), 0, Some(80 + g as u64));
        let up = |v: Vec<bf16>| stream.clone_htod(&if v.is_empty() { vec![bf16::ZERO] } else { v });
        let (da, db) = (up(bits(&a)), up(bits(&b)));
        let dd = stream.alloc_zeros::<bf16>((m * n).max(1));
        device.push((
            da.map_err(|e| format!("{e}"))?,
            db.map_err(|e| format!("{e}"))?,
            dd.map_err(|e| format!("{e}"))?,
        ));
        host.push((a, b, (m, n, k)));
    }
    let check =
        |device: &[(CudaSlice<bf16>, CudaSlice<bf16>, CudaSlice<bf16>)], what: &str| -> Result<(), Failed> {
            for ((a, b, (m, n, _)), (_, _, d)) in host.iter().zip(device) {
                let out: Vec<f64> = stream
                    .clone_dtoh(d)
                    .map_err(|e| format!("download: {e}"))?
                    .iter()
                    .take(m * n)
                    .map(|v| v.to_f64())
                    .collect();
                let mut expected = host_matrix(DType::Bf16, Layout::Row, (*m, *n), 0, None);
                verify::reference_gemm(a, b, None, &mut expected, 1.0, 0.0);
                let error = verify::relative_error(&out, &expected.data);
                if error.is_nan() || error > 1e-2 {
                    return Err(format!("{what}: {m}x{n}: relative error {error:.3e}").into());
                }
            }
            Ok(())
        };
    // The same groups of the same buffers, for both launches.
    type Buffers = (CudaSlice<bf16>, CudaSlice<bf16>, CudaSlice<bf16>);
    fn groups_of<'a>(
        device: &'a mut [Buffers],
        extents: &[(usize, usize, usize)],
    ) -> Vec<GroupOf<'a, bf16, bf16, bf16, RowMajor, ColumnMajor, RowMajor>> {
        device
            .iter_mut()
            .zip(extents)
            .map(|((a, b, d), &(m, n, k))| {
                GroupOf::new(
                    MatrixRef::new(a, m, k),
                    MatrixRef::new(b, k, n),
                    MatrixMut::new(d, m, n),
                )
            })
            .collect()
    }
    let groups: Vec<Group<'_, kernel::Kernel>> = groups_of(&mut device, &extents);
    kernel::run(&stream, GroupedGemm::new(groups, 1.0f32)).map_err(|e| format!("typed: {e}"))?;
    check(&device, "typed")?;
    for (_, _, d) in device.iter_mut() {
        stream.memset_zeros(d).map_err(|e| format!("memset: {e}"))?;
    }
    let groups = groups_of(&mut device, &extents);
    let chosen = grouped::run(&stream, groups, 1.0, 0.0).map_err(|e| format!("dispatch: {e}"))?;
    let cc = device::props(ctx).map_err(|e| format!("{e}"))?.compute_capability;
    if cc == 90 && chosen.api() != Api::Cutlass3x {
        return Err(format!("dispatch picked {} on a Hopper GPU", chosen.name).into());
    }
    check(&device, chosen.rust_name)
}

/// Refusals launch nothing: D keeps its poison.
fn refusals(ctx: &Arc<CudaContext>, info: &'static KernelInfo) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let extents = ragged(info);
    let groups = make_groups(&stream, info, &extents, false, 0, 5)?;
    // beta without C.
    if launch(&stream, info, &groups, (1.0, 0.5)).is_ok() {
        return Err("beta without C was accepted".into());
    }
    let out = groups[0].d.download(&stream)?;
    let dtype = info.gemm().c.element;
    if out.iter().any(|&v| v != verify::round_to(dtype, poison(dtype))) {
        return Err("a refused launch wrote D".into());
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
        .filter(|k| k.operation.kind() == OperationKind::GemmGrouped)
    {
        let name = info.rust_name;
        add(
            format!("{name}::ragged"),
            Box::new(move |ctx| case(ctx, info, ragged(info), false, 0, (1.0, 0.0))),
        );
        add(
            format!("{name}::ragged_padded_beta"),
            Box::new(move |ctx| case(ctx, info, ragged(info), true, 1, scalars(info, (1.5, -0.75)))),
        );
        add(
            format!("{name}::skewed_37_groups"),
            Box::new(move |ctx| case(ctx, info, skewed(info), true, 0, scalars(info, (0.5, 0.5)))),
        );
        // (k = 0 groups are computed beside plain float kernels; the others refuse them.)
        let float_out = matches!(
            info.gemm().c.element,
            DType::F16 | DType::Bf16 | DType::F32 | DType::F64
        );
        if info.is_plain() && float_out {
            add(
                format!("{name}::k0_groups_are_beta_c"),
                Box::new(move |ctx| case(ctx, info, k_zero(info), true, 0, scalars(info, (1.0, 0.5)))),
            );
        }
        add(
            format!("{name}::repeated_launches"),
            Box::new(move |ctx| repeated(ctx, info)),
        );
        add(
            format!("{name}::refusal_launches_nothing"),
            Box::new(move |ctx| refusals(ctx, info)),
        );
        let op = info.gemm();
        let host_schedule = matches!(info.operation, cutlass_aot::model::Operation::GemmGrouped(g) if g.schedule == cutlass_aot::model::GroupSchedule::Host);
        if op.a.layout == Layout::Row && op.c.layout == Layout::Row && !host_schedule {
            add(
                format!("{name}::moe_device_offsets"),
                Box::new(move |ctx| moe(ctx, info, false)),
            );
            if info.api() == Api::Cutlass3x || op.a.element == DType::F16 {
                add(
                    format!("{name}::moe_offsets_written_after_the_launch_call"),
                    Box::new(move |ctx| moe(ctx, info, true)),
                );
            }
        }
    }
    if REGISTRY.by_name("grouped_bf16_tn_device").is_some() {
        add(
            "typed::bf16_groups_through_a_kernel_and_through_dispatch".into(),
            Box::new(typed_and_dispatched),
        );
    }
    libtest_mimic::run(&args, trials).exit();
}
