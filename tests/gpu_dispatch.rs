//! GPU suite of `dispatch`: every problem torch.matmul accepts runs, whatever its shape, layouts,
//! leading dimensions, batch strides or element offset, and matches an f64 host reference;
//! empty problems and K = 0 behave as in BLAS; a caller's workspace is used and a too-small one is
//! refused; f32 problems keep f32 accuracy unless TF32 is allowed; the skinny kernels compute every
//! layout, type, batch and split of K; misaligned operands staged straight or transposed (a way
//! forced by a table) give the same D.
//!
//! Where no NVIDIA driver or device exists, every test is reported as *ignored* with the reason.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};
use cutlass_aot::dispatch::{self, Options, Policy, Signature};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{DType, Layout};
use cutlass_aot::select::{Candidate, Row, Table};
use cutlass_aot::verify::{self, HostMatrix};
use cutlass_aot::verify::{is_poison, poison};
use cutlass_aot::{GemmOperands, MatrixShape, Operand, Workspace};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// One problem: extents, the extra leading-dimension padding and batch-stride slack (elements),
/// and the element offset of every operand's first element (0: the buffer's start).
#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    pad: usize,
    slack: usize,
    offset: usize,
    beta: f64,
    broadcast_b: bool,
}

const fn case(name: &'static str, (m, n, k, batch): (usize, usize, usize, usize)) -> Case {
    Case {
        name,
        m,
        n,
        k,
        batch,
        pad: 0,
        slack: 0,
        offset: 0,
        beta: 0.0,
        broadcast_b: false,
    }
}

const CASES: &[Case] = &[
    case("aligned", (128, 256, 64, 1)),
    // K = 700 (a multiple of 4, not of 8) and an odd K: no default kernel reads these directly.
    Case {
        beta: 0.5,
        ..case("k700", (96, 80, 700, 1))
    },
    case("odd_everything", (33, 65, 701, 1)),
    // Odd leading dimensions and an element offset (a view 1 element into its buffer).
    Case {
        pad: 3,
        offset: 1,
        beta: -1.0,
        ..case("odd_ld_offset_view", (40, 72, 136, 1))
    },
    // Batches with strides that are not multiples of anything, and a broadcast B.
    Case {
        slack: 5,
        pad: 1,
        ..case("batched_odd_strides", (24, 40, 56, 3))
    },
    Case {
        broadcast_b: true,
        beta: 1.0,
        ..case("batched_broadcast_b", (64, 48, 96, 4))
    },
    case("tiny", (1, 1, 1, 1)),
    case("decode_m1", (1, 520, 264, 1)),
    // K = 0: D = beta·C (or zeros), computed without reading A or B.
    Case {
        beta: 0.75,
        ..case("k0_beta", (40, 24, 0, 2))
    },
    case("k0_no_c", (17, 9, 0, 1)),
];

/// Problems run with A and B staged whatever dispatch would pick (a table that times a staged way
/// fastest): every operand misaligned (odd leading dimensions, an element offset, odd batch
/// strides), so the copies take their element-by-element edges and shifted 16-byte middles.
const STAGED_CASES: &[Case] = &[
    Case {
        pad: 3,
        offset: 1,
        beta: 0.5,
        ..case("misaligned_deep_k", (70, 36, 1203, 1))
    },
    Case {
        slack: 5,
        pad: 1,
        ..case("misaligned_batched", (129, 65, 300, 3))
    },
];

/// Skinny products (at most 64 columns as given or transposed), run on the skinny kernels at the
/// given split of K whatever dispatch would pick (a table that times that way fastest).
const SKINNY_CASES: &[(Case, &[usize])] = &[
    (
        Case {
            beta: 0.5,
            pad: 3,
            offset: 1,
            ..case("skinny_m3", (3, 700, 1501, 1))
        },
        &[1, 8],
    ),
    (
        Case {
            slack: 5,
            broadcast_b: true,
            ..case("skinny_n5_batched", (900, 5, 333, 3))
        },
        &[1, 2],
    ),
    (
        Case {
            beta: -1.0,
            ..case("skinny_n16_deep", (301, 16, 4099, 1))
        },
        &[1, 64],
    ),
    (case("skinny_m1", (1, 1000, 77, 1)), &[1, 2]),
    // Short depth: the tiny forms' thread per output, misaligned and batched with C.
    (
        Case {
            beta: 0.75,
            pad: 1,
            offset: 1,
            ..case("tiny_short_k", (37, 300, 19, 2))
        },
        &[1],
    ),
    // 64 slices of 2325: rounding up leaves the last slice nothing (63 run).
    (case("skinny_ragged_slices", (10, 3001, 2325, 1)), &[64]),
    // Wider: the CUDA-core kernels in groups of 16 columns (the last one ragged), the tensor-core
    // kernels (16-bit operands).
    (
        Case {
            slack: 3,
            beta: 0.25,
            ..case("narrow_n40_batched", (517, 40, 777, 2))
        },
        &[1, 4],
    ),
    (
        Case {
            pad: 1,
            offset: 1,
            ..case("narrow_m33", (33, 1200, 3001, 1))
        },
        &[1, 16],
    ),
    // Lines 8-aligned (leading dimensions padded to multiples of 8), each line's length (K = 1029)
    // and the last block of rows (M = 517) ragged, batched; and unpadded multiples of 8 with slices.
    (
        Case {
            pad: 3,
            ..case("narrow_vector_ragged", (517, 24, 1029, 2))
        },
        &[1, 4],
    ),
    (case("narrow_vector_aligned", (1000, 48, 4104, 1)), &[1, 8]),
    // Aligned lines along K: the vector dot form (in the tn layout), a decode step and a batch
    // whose matrices lie 8 elements apart, with C.
    (case("decode_m1", (1, 4096, 2048, 1)), &[1, 4]),
    (
        Case {
            slack: 8,
            beta: 0.5,
            ..case("dot_vector_batched", (5, 700, 1024, 3))
        },
        &[1, 2],
    ),
];

/// Whether the case's operands fit the vector dot form: A row-major and B column-major (both walk
/// K, in either orientation), every line and batch 16-byte aligned.
fn walks_k_in_vectors(dtype: DType, [la, lb]: [Layout; 2], c: &Case) -> bool {
    let vector = 128 / dtype.bits() as usize;
    la == Layout::Row
        && lb == Layout::Column
        && c.offset == 0
        && (c.k + c.pad) % vector == 0
        && (c.batch == 1 || c.slack % vector == 0)
}

/// A host matrix with `pad` extra elements per line and `slack` extra elements between batches.
fn host(
    dtype: DType,
    layout: Layout,
    (rows, cols, batch): (usize, usize, usize),
    c: &Case,
    seed: Option<u64>,
) -> HostMatrix {
    let packed = MatrixShape::packed(rows, cols, layout);
    let ld = packed.ld + c.pad;
    let one = packed.outer(layout) * ld;
    let shape = MatrixShape {
        ld: ld.max(1),
        batch_count: batch,
        batch_stride: one + c.slack,
        ..packed
    };
    let len = shape.required_len(layout).unwrap().max(1);
    let data = match seed {
        Some(seed) => verify::random_values(dtype, len, seed),
        None => vec![poison(dtype); len],
    };
    HostMatrix { shape, layout, data }
}

/// A host matrix on the device, `offset` elements into its buffer (poison before it).
struct OnDevice {
    host: HostMatrix,
    dtype: DType,
    offset: usize,
    buffer: CudaSlice<u8>,
}

impl OnDevice {
    fn upload(
        stream: &Arc<CudaStream>,
        host: HostMatrix,
        dtype: DType,
        offset: usize,
    ) -> Result<Self, Failed> {
        let mut values = vec![poison(dtype); offset];
        values.extend_from_slice(&host.data);
        let buffer = stream
            .clone_htod(&verify::encode(dtype, &values))
            .map_err(|e| format!("upload: {e}"))?;
        Ok(OnDevice {
            host,
            dtype,
            offset,
            buffer,
        })
    }

    fn operand(&self, stream: &CudaStream) -> Operand {
        let (address, _guard) = self.buffer.device_ptr(stream);
        let bytes = verify::element_bytes(self.dtype);
        Operand {
            shape: self.host.shape,
            len: self.host.data.len(),
            address: address + (self.offset * bytes) as u64,
        }
    }

    fn download(&self, stream: &Arc<CudaStream>) -> Result<Vec<f64>, Failed> {
        let bytes = stream
            .clone_dtoh(&self.buffer)
            .map_err(|e| format!("download: {e}"))?;
        Ok(verify::decode(self.dtype, &bytes))
    }
}

/// The relative error dispatch must reach for `dtype` under `policy` (f32: f32 accuracy unless
/// TF32 is allowed).
fn tolerance(dtype: DType, policy: Policy) -> f64 {
    match dtype {
        DType::F16 => 5e-3,
        DType::Bf16 => 2e-2,
        DType::F32 if policy.allow_tf32 => 5e-3,
        DType::F32 => 1e-5,
        _ => 1e-12,
    }
}

/// Which skinny kernels a test forces dispatch onto, and at what split of K.
#[derive(Clone, Copy, Debug)]
struct Forced {
    kind: Kind,
    slices: usize,
}

/// The skinny forms a test forces, by what they run on.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// The dot or axpy form (X's layout decides).
    CudaCores,
    /// The dot form on 16-byte vectors (X and Y walk K, aligned).
    DotVector,
    Tensor,
    TinyThread,
    TinyWarp,
}

impl Kind {
    fn of(form: dispatch::skinny::Form) -> Kind {
        use dispatch::skinny::Form;
        match form {
            Form::Dot | Form::Axpy => Kind::CudaCores,
            Form::DotVector => Kind::DotVector,
            Form::Tensor => Kind::Tensor,
            Form::TinyThread => Kind::TinyThread,
            Form::TinyWarp => Kind::TinyWarp,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::CudaCores => "cuda_cores",
            Kind::DotVector => "dot_vector",
            Kind::Tensor => "tensor",
            Kind::TinyThread => "tiny_thread",
            Kind::TinyWarp => "tiny_warp",
        }
    }
}

/// A way forced by a table: a skinny kernel at a split, or a kernel after staging A and B into
/// the given layouts (C/D keep theirs): straight copies where those are the user's, transposing
/// ones where they differ.
#[derive(Clone, Copy, Debug)]
enum Force {
    Skinny(Forced),
    Staged([Layout; 2]),
}

impl Force {
    /// Whether dispatch's way `w` is the forced one.
    fn takes(self, w: &Candidate<dispatch::GemmWay>) -> bool {
        let form = dispatch::skinny::skinny_of(w.kernel).map(|(_, form)| form);
        match self {
            Force::Skinny(force) => form.map(Kind::of) == Some(force.kind) && w.split_k == force.slices,
            Force::Staged(layouts) => {
                form.is_none() && w.way.staged.is_some_and(|[la, lb, _]| [la, lb] == layouts)
            }
        }
    }

    /// Whether dispatch ran the forced way (as far as `ran` tells).
    fn ran(self, ran: &dispatch::Dispatched) -> bool {
        let form = ran
            .kernel
            .and_then(dispatch::skinny::skinny_of)
            .map(|(_, form)| form);
        match self {
            Force::Skinny(force) => form.map(Kind::of) == Some(force.kind) && ran.split_k == force.slices,
            Force::Staged(_) => form.is_none() && !ran.staged.is_empty(),
        }
    }
}

/// A table that times the forced way of `operands` fastest by far (any orientation): dispatch
/// takes it. Err where there is no such way.
fn forcing_table(
    ctx: &Arc<CudaContext>,
    signature: Signature,
    operands: &GemmOperands,
    force: Force,
) -> Result<Vec<Table>, Failed> {
    let device = cutlass_aot::device::props(ctx)?;
    let ways = dispatch::ways(&REGISTRY, signature, operands, &device, Policy::default());
    // A staged way whose kernel also runs the problem directly with the same extents (an
    // alignment-1 kernel) shares its table key with the direct way, which then wins.
    let same = |a: &Candidate<dispatch::GemmWay>, b: &Candidate<dispatch::GemmWay>| {
        a.key == b.key && std::ptr::eq(a.kernel, b.kernel) && a.split_k == b.split_k
    };
    let forced = |w: &Candidate<dispatch::GemmWay>| {
        force.takes(w)
            && (w.way.staged.is_none() || !ways.iter().any(|d| d.way.staged.is_none() && same(d, w)))
    };
    if !ways.iter().any(forced) {
        return Err(format!("no way {force:?}").into());
    }
    let rows: Vec<Row> = ways
        .iter()
        .map(|w| {
            Row::new(
                w.key,
                w.kernel,
                w.split_k,
                Default::default(),
                if forced(w) { 1.0 } else { 1e3 },
            )
        })
        .collect();
    Ok(vec![Table::new(
        device.name,
        "test",
        Box::leak(rows.into_boxed_slice()),
    )])
}

/// Runs `case` with `dtype` operands in layouts `(la, lb, lc)` through `dispatch::launch_raw` (or,
/// with `force`, on that skinny kernel and split) and checks every element of D against the
/// reference, and that nothing outside D was written.
fn run(
    ctx: &Arc<CudaContext>,
    dtype: DType,
    [la, lb, lc]: [Layout; 3],
    c: Case,
    policy: Policy,
    force: Option<Force>,
) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let batch_b = if c.broadcast_b { 1 } else { c.batch };
    let a = host(dtype, la, (c.m, c.k, c.batch), &c, Some(1));
    let b = host(dtype, lb, (c.k, c.n, batch_b), &c, Some(2));
    let cm = host(dtype, lc, (c.m, c.n, c.batch), &c, Some(3));
    let d = host(dtype, lc, (c.m, c.n, c.batch), &c, None);
    let alpha = 1.25;
    let mut expected = d.clone();
    verify::reference_gemm(
        &a,
        &b,
        (c.beta != 0.0).then_some(&cm),
        &mut expected,
        alpha,
        c.beta,
    );
    let (da, db) = (
        OnDevice::upload(&stream, a, dtype, c.offset)?,
        OnDevice::upload(&stream, b, dtype, c.offset)?,
    );
    let dc = OnDevice::upload(&stream, cm, dtype, c.offset)?;
    let dd = OnDevice::upload(&stream, d, dtype, c.offset)?;
    let operands = GemmOperands {
        a: da.operand(&stream),
        b: db.operand(&stream),
        c: (c.beta != 0.0).then(|| dc.operand(&stream)),
        d: dd.operand(&stream),
        alpha,
        beta: c.beta,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    let signature = Signature::uniform(dtype, [la, lb, lc]);
    let options = Options {
        policy,
        workspace: None,
    };
    let forcing = match force {
        Some(force) => forcing_table(ctx, signature, &operands, force)?,
        None => Vec::new(),
    };
    let tables: &[Table] = if force.is_some() {
        &forcing
    } else {
        cutlass_aot::kernels::TABLES
    };
    // SAFETY: live buffers of `dtype` holding every element their shapes name.
    let ran = unsafe { dispatch::launch_raw_with(&REGISTRY, tables, &stream, signature, &operands, options) }
        .map_err(|e| format!("dispatch refused: {e}"))?;
    if let Some(force) = force.filter(|f| !f.ran(&ran)) {
        return Err(format!("forced onto {force:?}, ran {}", ran.describe()).into());
    }
    stream.synchronize().map_err(|e| format!("kernel failed: {e}"))?;
    let out = dd.download(&stream)?;
    let out = &out[c.offset..];
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for (i, (&o, &e)) in out.iter().zip(&expected.data).enumerate() {
        if is_poison(dtype, e) {
            if !is_poison(dtype, o) {
                return Err(format!("{}: element {i} outside D was written ({o})", ran.describe()).into());
            }
        } else {
            got.push(o);
            want.push(verify::round_to(dtype, e));
        }
    }
    if got.len() != c.m * c.n * c.batch {
        return Err(format!("D has {} elements, expected {}", got.len(), c.m * c.n * c.batch).into());
    }
    let error = verify::relative_error(&got, &want);
    let limit = tolerance(dtype, policy);
    if error.is_nan() || error > limit {
        return Err(format!("relative error {error:.3e} > {limit:.0e} with {}", ran.describe()).into());
    }
    Ok(())
}

/// M, N or batch 0: Ok, nothing launched, D untouched.
fn empty_problems(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    let buffer: CudaSlice<u8> = stream.alloc_zeros(64).map_err(|e| e.to_string())?;
    let (address, _guard) = buffer.device_ptr(&stream);
    let signature = Signature {
        element_a: DType::F16,
        element_b: DType::F16,
        element_c: DType::F16,
        layout_a: Layout::Row,
        layout_b: Layout::Column,
        layout_c: Layout::Row,
    };
    for (m, n, k, batch) in [(0, 8, 8, 1), (8, 0, 8, 1), (8, 8, 8, 0), (0, 0, 0, 0)] {
        let op = |rows: usize, cols: usize, layout: Layout| Operand {
            shape: MatrixShape {
                batch_count: batch,
                ..MatrixShape::packed(rows, cols, layout)
            },
            len: 0,
            address,
        };
        let operands = GemmOperands {
            a: op(m, k, Layout::Row),
            b: op(k, n, Layout::Column),
            c: None,
            d: op(m, n, Layout::Row),
            alpha: 1.0,
            beta: 0.0,
            split_k_slices: 1,
            fusion: Default::default(),
        };
        // SAFETY: nothing is read or written for an empty problem (len 0 is checked).
        let ran = unsafe { dispatch::launch_raw(&stream, signature, &operands, Options::default()) }
            .map_err(|e| format!("{m}x{n}x{k} batch {batch}: {e}"))?;
        if ran.kernel.is_some() {
            return Err(format!("{m}x{n}x{k} batch {batch} launched {}", ran.describe()).into());
        }
    }
    Ok(())
}

/// A caller's workspace: a staged problem runs in it; one byte short is refused, launching nothing.
fn explicit_workspace(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.new_stream().map_err(|e| format!("stream: {e}"))?;
    // K = 0: D = beta·C through A and B staged as zeros (with the narrow-alignment kernels built,
    // odd K runs directly; K = 0 always stages).
    let (m, n, k) = (64, 64, 0);
    let dtype = DType::F16;
    let c = case("ws", (m, n, k, 1));
    let a = OnDevice::upload(
        &stream,
        host(dtype, Layout::Row, (m, k, 1), &c, Some(4)),
        dtype,
        0,
    )?;
    let b = OnDevice::upload(
        &stream,
        host(dtype, Layout::Column, (k, n, 1), &c, Some(5)),
        dtype,
        0,
    )?;
    let d = OnDevice::upload(&stream, host(dtype, Layout::Row, (m, n, 1), &c, None), dtype, 0)?;
    let operands = GemmOperands {
        a: a.operand(&stream),
        b: b.operand(&stream),
        c: None,
        d: d.operand(&stream),
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    let signature = Signature {
        element_a: dtype,
        element_b: dtype,
        element_c: dtype,
        layout_a: Layout::Row,
        layout_b: Layout::Column,
        layout_c: Layout::Row,
    };
    let need = dispatch::workspace_bytes(&stream, signature, &operands, Policy::default())?;
    if need == 0 {
        return Err("a staged problem (K = 0) reported no workspace".into());
    }
    let mut short = Workspace::new(&stream, need - 1)?;
    let options = Options {
        policy: Policy::default(),
        workspace: Some(&mut short),
    };
    // SAFETY: live buffers of f16 holding every element their shapes name.
    match unsafe { dispatch::launch_raw(&stream, signature, &operands, options) } {
        Ok(ran) => return Err(format!("a workspace one byte short was accepted: {}", ran.describe()).into()),
        Err(e) if !e.to_string().contains(&format!("needs {need} bytes")) => {
            return Err(format!("unexpected refusal: {e}").into())
        }
        Err(_) => {}
    }
    stream.synchronize().map_err(|e| e.to_string())?;
    if !d.download(&stream)?.iter().all(|v| v.is_nan()) {
        return Err("a refused launch wrote D".into());
    }
    let mut enough = Workspace::new(&stream, need)?;
    let before = cutlass_aot::workspace::cached_bytes();
    let options = Options {
        policy: Policy::default(),
        workspace: Some(&mut enough),
    };
    // SAFETY: as above.
    unsafe { dispatch::launch_raw(&stream, signature, &operands, options) }?;
    stream.synchronize().map_err(|e| e.to_string())?;
    if cutlass_aot::workspace::cached_bytes() != before {
        return Err("a launch with a caller's workspace grew the cache".into());
    }
    if d.download(&stream)?.iter().any(|v| v.is_nan()) {
        return Err("D was not computed in the caller's workspace".into());
    }
    Ok(())
}

type GpuTest = Box<dyn Fn(&Arc<CudaContext>) -> Result<(), Failed> + Send + Sync>;

fn main() {
    let args = Arguments::from_args();
    let gpu: Result<Arc<CudaContext>, String> = cutlass_aot::device::context(0).map_err(|e| e.to_string());
    let mut trials = Vec::new();
    let mut add = |name: String, body: GpuTest| {
        let gpu = gpu.clone();
        trials.push(Trial::ignorable_test(name, move || match gpu {
            Err(reason) => Ok(Completion::ignored_with(format!("needs a GPU: {reason}"))),
            Ok(ctx) => body(&ctx).map(|()| Completion::Completed),
        }));
    };
    let letter = |l: Layout| if l == Layout::Row { 't' } else { 'n' };
    for dtype in [DType::F16, DType::Bf16, DType::F32, DType::F64] {
        for la in [Layout::Row, Layout::Column] {
            for lb in [Layout::Row, Layout::Column] {
                for lc in [Layout::Row, Layout::Column] {
                    for &c in CASES {
                        let name = format!("{dtype}_{}{}{}_{}", letter(la), letter(lb), letter(lc), c.name);
                        add(
                            name,
                            Box::new(move |ctx| run(ctx, dtype, [la, lb, lc], c, Policy::default(), None)),
                        );
                    }
                    for &c in STAGED_CASES {
                        // Straight copies (the user's layouts, misaligned) and transposing ones.
                        for (how, layouts) in [
                            ("straight", [la, lb]),
                            ("transposed", [la.transposed(), lb.transposed()]),
                        ] {
                            let name = format!(
                                "{dtype}_{}{}{}_{}_staged_{how}",
                                letter(la),
                                letter(lb),
                                letter(lc),
                                c.name
                            );
                            let force = Some(Force::Staged(layouts));
                            add(
                                name,
                                Box::new(move |ctx| {
                                    run(ctx, dtype, [la, lb, lc], c, Policy::default(), force)
                                }),
                            );
                        }
                    }
                    for &(c, splits) in SKINNY_CASES {
                        let layouts = [la, lb, lc];
                        let name = format!("{dtype}_{}{}{}_{}", letter(la), letter(lb), letter(lc), c.name);
                        add(
                            name.clone(),
                            Box::new(move |ctx| run(ctx, dtype, layouts, c, Policy::default(), None)),
                        );
                        let sixteen_bit = matches!(dtype, DType::F16 | DType::Bf16);
                        let streaming = c.m.min(c.n) <= dispatch::skinny::MAX_COLS;
                        let kinds = [
                            Kind::CudaCores,
                            Kind::DotVector,
                            Kind::Tensor,
                            Kind::TinyThread,
                            Kind::TinyWarp,
                        ];
                        for kind in kinds {
                            // As dispatch offers them: the tiny forms unsplit, a thread per output
                            // over short depth, a warp per output over few outputs and few
                            // multiply-adds.
                            let outputs = c.m * c.n * c.batch;
                            let offered = match kind {
                                Kind::CudaCores => streaming,
                                Kind::DotVector => {
                                    c.m.min(c.n) <= dispatch::skinny::MAX_VECTOR_COLS
                                        && walks_k_in_vectors(dtype, [la, lb], &c)
                                }
                                Kind::Tensor => sixteen_bit,
                                Kind::TinyThread => c.k <= 64,
                                Kind::TinyWarp => {
                                    outputs <= 1 << 16
                                        && outputs * c.k <= dispatch::skinny::TINY_WARP_MAX_MACS
                                }
                            };
                            if !offered {
                                continue;
                            }
                            // Slices at least 32 deep (64 for the tensor form), as dispatch offers them.
                            let min_depth = if kind == Kind::Tensor { 64 } else { 32 };
                            let tiny = matches!(kind, Kind::TinyThread | Kind::TinyWarp);
                            let kept = |&&s: &&usize| s == 1 || (!tiny && c.k / s >= min_depth);
                            for &slices in splits.iter().filter(kept) {
                                let force = Some(Force::Skinny(Forced { kind, slices }));
                                let kind = kind.name();
                                add(
                                    format!("{name}_forced_{kind}_split_{slices}"),
                                    Box::new(move |ctx| {
                                        run(ctx, dtype, layouts, c, Policy::default(), force)
                                    }),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    for &c in &CASES[..4] {
        add(
            format!("f32_tnt_allow_tf32_{}", c.name),
            Box::new(move |ctx| {
                run(
                    ctx,
                    DType::F32,
                    [Layout::Row, Layout::Column, Layout::Row],
                    c,
                    Policy { allow_tf32: true },
                    None,
                )
            }),
        );
    }
    add("empty_problems_launch_nothing".into(), Box::new(empty_problems));
    add("explicit_workspace".into(), Box::new(explicit_workspace));
    libtest_mimic::run(&args, trials).exit();
}
