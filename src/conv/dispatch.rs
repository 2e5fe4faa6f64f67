//! Conv dispatch: given a convolution, the fastest compiled way to run it, without naming a kernel.
//!
//! The ways ([`super::ways`]): every allowed conv kernel of the problem's kind and types at every
//! split-K it supports, and — for a 1×1 filter at unit stride without padding, a plain matrix
//! product over the channels-last tensors as they lie (fprop: `y[NHW×K] = x[NHW×C] · w[K×C]ᵀ`;
//! dgrad: `dx[NHW×C] = dy[NHW×K] · w[K×C]`; wgrad: `dw[K×C] = dy[NHW×K]ᵀ · x[NHW×C]`, see
//! [`as_gemm`]) — every GEMM kernel that takes it. The selection engine ([`crate::select`]) ranks
//! them as it ranks every operation's ways: the device's table where it timed this very way on this
//! very problem, else the cost model calibrated on the table's rows, else the bare model.
//!
//! The typed entry point is [`run`] with a [`Conv2d`] over the markers [`Fprop`], [`Dgrad`] and
//! [`Wgrad`]; [`launch_raw`] takes untyped operands. Decisions are remembered per problem.

use std::marker::PhantomData;

use cudarc::driver::CudaStream;

pub use super::dispatch_plan::{plan, plan_in, plan_raw, ConvPlan};
pub use super::ways::{key_of, op_name, row_work, ConvWay, OP_PREFIX};
use super::{problem_from, Conv2d, Conv2dProblem, ConvOperands, ConvTypes, Krsc, Nhwc, Npqk, TensorOperand};
use crate::device::DeviceProps;
use crate::dispatch::{self as gemm_dispatch, Signature};
use crate::error::Error;
use crate::gemm::{GemmOperands, Operand};
use crate::kernel::KernelInfo;
use crate::matrix::MatrixShape;
use crate::model::{ConvKind, ConvLayout, DType, Layout, MathOp};
use crate::registry::Registry;
use crate::select::memo::Memo;
use crate::select::refusal::Refusal;
use crate::select::{self, device_table, Choice, Table, NO_TABLE};
use crate::types::Element;
use crate::workspace::Workspace;

/// Forward convolution `y = conv2d(x, w)` of `T` tensors with an `O` output, for [`run`].
pub struct Fprop<T, O = T>(PhantomData<(T, O)>);
/// Data gradient `dx = conv_dgrad(dy, w)` of `T` tensors with an `O` output, for [`run`].
pub struct Dgrad<T, O = T>(PhantomData<(T, O)>);
/// Filter gradient `dw = conv_wgrad(dy, x)` of `T` tensors with an `O` output, for [`run`].
pub struct Wgrad<T, O = T>(PhantomData<(T, O)>);

impl<T: Element, O: Element> ConvTypes for Fprop<T, O> {
    const KIND: ConvKind = ConvKind::Fprop;
    type A = T;
    type B = T;
    type C = O;
    type LayoutA = Nhwc;
    type LayoutB = Krsc;
    type LayoutC = Npqk;
    type Scalar = f64;
}

impl<T: Element, O: Element> ConvTypes for Dgrad<T, O> {
    const KIND: ConvKind = ConvKind::Dgrad;
    type A = T;
    type B = T;
    type C = O;
    type LayoutA = Npqk;
    type LayoutB = Krsc;
    type LayoutC = Nhwc;
    type Scalar = f64;
}

impl<T: Element, O: Element> ConvTypes for Wgrad<T, O> {
    const KIND: ConvKind = ConvKind::Wgrad;
    type A = T;
    type B = T;
    type C = O;
    type LayoutA = Npqk;
    type LayoutB = Nhwc;
    type LayoutC = Krsc;
    type Scalar = f64;
}

/// Kind and element types of a convolution (A, B, C/D in the roles of the kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvSignature {
    pub kind: ConvKind,
    pub elements: (DType, DType, DType),
}

/// Whether dispatch may pick conv kernel `kernel`: a plain linear-combination epilogue (a fused
/// activation computes something else), and full accuracy for f32 tensors (no TF32 rounding and
/// no f16/bf16 rounding of the operands: the caller asked for f32, as GEMM dispatch's default
/// policy says). Every kernel stays available by name.
pub fn allowed(kernel: &KernelInfo) -> bool {
    kernel.operation.conv().is_some()
        && kernel.is_plain()
        && !gemm_dispatch::rounds_to_tf32(kernel)
        && !matches!(
            kernel.gemm().math,
            MathOp::MultiplyAddFastF16 | MathOp::MultiplyAddFastBf16
        )
}

/// What a dispatched convolution ran (or will run: a decision).
#[derive(Clone, Debug)]
pub struct ConvDispatched {
    /// A conv kernel, or a GEMM kernel that ran the problem as a matrix product ([`as_gemm`]).
    pub kernel: &'static KernelInfo,
    pub split_k: usize,
    /// How the kernel ran it: directly, as a GEMM, or with the channels padded.
    pub way: ConvWay,
    /// Why: how its time was estimated.
    pub choice: Choice,
}

impl ConvDispatched {
    /// Whether it ran as a matrix product on a GEMM kernel.
    pub fn as_gemm(&self) -> bool {
        self.way == ConvWay::AsGemm
    }

    /// One line for people: the kernel, the route and why.
    pub fn describe(&self) -> String {
        let why = self.choice.describe();
        let padded;
        let route = match self.way {
            ConvWay::Direct => "",
            ConvWay::AsGemm => "; as a GEMM",
            ConvWay::Padded(p) => {
                padded = format!("; channels padded to C = {}, K = {}", p.c, p.k);
                &padded
            }
        };
        let split = if self.split_k > 1 {
            format!("; {} split-K slices", self.split_k)
        } else {
            String::new()
        };
        format!("{} ({why}{route}{split})", self.kernel.rust_name)
    }
}

/// Options of a dispatched convolution.
#[derive(Debug, Default)]
pub struct Options<'w> {
    /// Scratch memory (split-K partial sums, GEMM staging) instead of the per-stream cache.
    pub workspace: Option<&'w mut Workspace>,
}

/// `D = alpha · conv(A, B) + beta · C` on whichever compiled kernel runs it fastest (see the module
/// documentation); returns what ran. Shapes, buffers and alignment are checked before anything is
/// chosen. Split-K is dispatch's choice: `args.split_k_slices` must stay 1.
///
/// ```text
/// use cutlass_aot::conv::{dispatch, Conv2d, TensorMut, TensorRef};
/// let run = dispatch::run(&stream, Conv2d::<dispatch::Fprop<f16>>::new(
///     TensorRef::new(&x, [n, h, w, c]), TensorRef::new(&wt, [k, 3, 3, c]),
///     TensorMut::new(&mut y, [n, p, q, k]), 1.0).padding(1, 1))?;
/// println!("{}", run.describe());
/// ```
pub fn run<K: ConvTypes>(stream: &CudaStream, args: Conv2d<'_, K>) -> Result<ConvDispatched, Error> {
    run_with(stream, args, Options::default())
}

/// [`run`] with [`Options`] (a caller's workspace).
pub fn run_with<K: ConvTypes>(
    stream: &CudaStream,
    args: Conv2d<'_, K>,
    options: Options<'_>,
) -> Result<ConvDispatched, Error> {
    let signature = ConvSignature {
        kind: K::KIND,
        elements: (K::A::DTYPE, K::B::DTYPE, K::C::DTYPE),
    };
    super::with_operands(stream, args, |operands| {
        // SAFETY: every address comes from a live cudarc buffer of the stated length and of the
        // signature's element types (enforced by the type parameters).
        unsafe { launch_raw(stream, signature, operands, options) }
    })
}

/// Dispatches untyped operands over this crate's kernels and tables.
///
/// # Safety
/// As [`super::launch_raw`]: each operand's address must point to device memory of at least `len`
/// elements of its type, valid until the work completes; D must not overlap A or B.
pub unsafe fn launch_raw(
    stream: &CudaStream,
    signature: ConvSignature,
    operands: &ConvOperands,
    options: Options<'_>,
) -> Result<ConvDispatched, Error> {
    unsafe {
        launch_raw_with(
            &crate::kernels::REGISTRY,
            crate::kernels::TABLES,
            stream,
            signature,
            operands,
            options,
        )
    }
}

/// [`launch_raw`] over a given registry and conv tables (a downstream crate's).
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_raw_with(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    signature: ConvSignature,
    operands: &ConvOperands,
    options: Options<'_>,
) -> Result<ConvDispatched, Error> {
    let device = crate::device::props(stream.context())?;
    let problem = checked_problem(signature, operands)?;
    let table = device_table(tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let ran = decide(registry, table, &problem, operands, &device)?;
    // SAFETY: as the caller promised for `operands`.
    unsafe {
        launch_on(
            ran.kernel,
            ran.split_k,
            ran.way,
            stream,
            &problem,
            operands,
            options.workspace,
        )
    }?;
    Ok(ran)
}

/// Launches `kernel` with `slices` split-K slices on `problem` the `way` a candidate names: a conv
/// kernel on `operands` (or on copies with the channels padded), a GEMM kernel on their
/// matrix-product view ([`as_gemm`]; an error if the problem is not a plain product). What
/// dispatch runs for a decision, and what the benchmark times per candidate.
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_on(
    kernel: &'static KernelInfo,
    slices: usize,
    way: ConvWay,
    stream: &CudaStream,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    if let ConvWay::Padded(padding) = way {
        // SAFETY: as the caller promised for `operands`.
        return unsafe {
            super::padded::launch(kernel, slices, stream, problem, operands, padding, workspace)
        };
    }
    if super::small::cols_of(kernel).is_some() {
        // SAFETY: as the caller promised for `operands`.
        return unsafe { super::small::launch(kernel, stream, problem, operands) };
    }
    if kernel.operation.conv().is_some() {
        let ops = ConvOperands {
            split_k_slices: slices,
            ..*operands
        };
        // SAFETY: as the caller promised for `operands`.
        return unsafe { super::launch_raw(kernel, stream, &ops, workspace) };
    }
    let gemm = gemm_operands(kernel, slices, problem, operands)?;
    // SAFETY: the GEMM operands are the caller's buffers viewed as matrices of the same elements.
    unsafe { crate::gemm::launch_raw_in(kernel, stream, &gemm, Default::default(), workspace) }
}

/// The problem the operands describe, checked (extents agree, buffers hold their tensors, beta
/// has C) before any kernel is considered.
pub(crate) fn checked_problem(
    signature: ConvSignature,
    operands: &ConvOperands,
) -> Result<Conv2dProblem, Error> {
    if operands.split_k_slices != 1 {
        return Err(Error::invalid(
            "conv dispatch",
            format!(
                "split_k_slices is {}: dispatch chooses split-K itself; leave it at 1, or launch a kernel by name",
                operands.split_k_slices
            ),
        ));
    }
    if !operands.alpha.is_finite() || !operands.beta.is_finite() {
        return Err(Error::invalid(
            "conv dispatch",
            format!(
                "alpha = {} and beta = {} must be finite numbers",
                operands.alpha, operands.beta
            ),
        ));
    }
    problem_from(
        "conv dispatch",
        signature.kind,
        signature.elements,
        ConvLayout::ChannelsLast,
        operands,
    )
}

/// The kernel, split-K, way and reason for `problem` (see the module documentation); remembered
/// per problem and device. Err: why no kernel runs it.
pub fn decide(
    registry: &Registry,
    table: &Table,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    device: &DeviceProps,
) -> Result<ConvDispatched, Error> {
    let problem = located(problem, operands, device);
    MEMO.get_or_try(MemoKey::new(registry, table, device, &problem), || {
        let chosen = context(table, device)
            .choose(super::ways::candidates(registry, &problem, operands))
            .ok_or_else(|| no_kernel(registry, &problem))?;
        Ok(ConvDispatched {
            kernel: chosen.kernel,
            split_k: chosen.split_k,
            way: chosen.way,
            choice: chosen.choice(),
        })
    })
}

/// Bytes of workspace the decision `dispatched` needs to run `operands` of `problem` on `device`.
pub fn workspace_bytes(
    dispatched: &ConvDispatched,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    device: &DeviceProps,
) -> Result<usize, Error> {
    let (kernel, slices) = (dispatched.kernel, dispatched.split_k);
    match dispatched.way {
        ConvWay::Padded(padding) => {
            super::padded::workspace_bytes(kernel, slices, problem, operands, padding, device)
        }
        ConvWay::Direct if super::small::cols_of(kernel).is_some() => Ok(0),
        ConvWay::Direct => {
            let ops = ConvOperands {
                split_k_slices: slices,
                ..*operands
            };
            super::workspace_bytes(kernel, &ops, device)
        }
        ConvWay::AsGemm => {
            let gemm = gemm_operands(kernel, slices, problem, operands)?;
            crate::gemm::workspace_bytes(kernel, &gemm, device)
        }
    }
}

/// The GEMM operands GEMM `kernel` runs `problem` with at `slices` split-K slices ([`as_gemm`]);
/// an error if the problem is not a plain matrix product.
fn gemm_operands(
    kernel: &KernelInfo,
    slices: usize,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
) -> Result<GemmOperands, Error> {
    let (_, gemm) = as_gemm(problem, operands).ok_or_else(|| {
        Error::invalid(
            kernel.name,
            "a GEMM kernel runs only 1x1, unpadded, unit-stride convolutions (as a matrix product)",
        )
    })?;
    Ok(GemmOperands {
        split_k_slices: slices,
        ..gemm
    })
}

/// `problem` with the device's compute capability and the operands' addresses, as the support
/// rules check them.
pub fn located(problem: &Conv2dProblem, operands: &ConvOperands, device: &DeviceProps) -> Conv2dProblem {
    let c = operands.c.unwrap_or(operands.d);
    Conv2dProblem {
        compute_capability: Some(device.compute_capability),
        addresses: Some([
            operands.a.address,
            operands.b.address,
            c.address,
            operands.d.address,
        ]),
        ..*problem
    }
}

/// The selection engine over `table` on `device`.
pub fn context<'t>(table: &'t Table, device: &DeviceProps) -> select::Context<'t> {
    select::Context {
        table,
        multiprocessors: device.multiprocessors,
        work_of: &crate::operations::row_work,
    }
}

/// The 1×1, unit-stride, unpadded convolution as a GEMM over the same buffers: its signature and
/// operands, or `None` when the problem is not one.
pub fn as_gemm(problem: &Conv2dProblem, ops: &ConvOperands) -> Option<(Signature, GemmOperands)> {
    if problem.r != 1 || problem.s != 1 || problem.pad != [0, 0] || problem.stride != [1, 1] {
        return None;
    }
    let matrix = |t: &TensorOperand, rows: usize, cols: usize, layout: Layout| Operand {
        shape: MatrixShape::packed(rows, cols, layout),
        len: t.len,
        address: t.address,
    };
    let (row, col) = (Layout::Row, Layout::Column);
    // (A, B, C/D) shapes and layouts of the product, per kind (see the module documentation).
    let (m, n, kk) = gemm_extent_of(problem)?;
    let (la, lb) = match problem.kind {
        ConvKind::Fprop => (row, col),
        ConvKind::Dgrad => (row, row),
        ConvKind::Wgrad => (col, row),
    };
    let (ea, eb, ec) = problem.elements;
    let signature = Signature {
        element_a: ea,
        element_b: eb,
        element_c: ec,
        layout_a: la,
        layout_b: lb,
        layout_c: row,
    };
    let operands = GemmOperands {
        a: matrix(&ops.a, m, kk, la),
        b: matrix(&ops.b, kk, n, lb),
        c: ops.c.as_ref().map(|t| matrix(t, m, n, row)),
        d: matrix(&ops.d, m, n, row),
        alpha: ops.alpha,
        beta: ops.beta,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    Some((signature, operands))
}

/// The matrix product's (m, n, k) of a 1×1, unpadded, unit-stride convolution ([`as_gemm`]).
pub(crate) fn gemm_extent_of(problem: &Conv2dProblem) -> Option<(usize, usize, usize)> {
    if problem.r != 1 || problem.s != 1 || problem.pad != [0, 0] || problem.stride != [1, 1] {
        return None;
    }
    let pixels = problem.n * problem.h * problem.w;
    let (c, k) = (problem.c, problem.k);
    Some(match problem.kind {
        ConvKind::Fprop => (pixels, k, c),
        ConvKind::Dgrad => (pixels, c, k),
        ConvKind::Wgrad => (k, c, pixels),
    })
}

/// Why no kernel runs `problem`: each candidate of its kind and types with its reasons.
fn no_kernel(registry: &Registry, problem: &Conv2dProblem) -> Error {
    let mut refusal = Refusal::new();
    for &kernel in registry.all() {
        let Some(conv) = kernel.operation.conv() else {
            continue;
        };
        let g = &conv.gemm;
        if conv.kind != problem.kind || (g.a.element, g.b.element, g.c.element) != problem.elements {
            continue;
        }
        if !allowed(kernel) {
            continue;
        }
        if let Err(u) = kernel.supports(problem) {
            refusal.add(kernel, u.reasons);
        }
    }
    let (a, b, c) = problem.elements;
    let headline = format!(
        "no compiled {} kernel with {a}/{b}/{c} tensors runs this problem (N={}, H={}, W={}, C={}, K={}, R={}, S={}, pad {:?}, stride {:?}, dilation {:?})",
        problem.kind, problem.n, problem.h, problem.w, problem.c, problem.k, problem.r, problem.s,
        problem.pad, problem.stride, problem.dilation
    );
    refusal.into_error(
        "conv dispatch",
        headline,
        "the manifest has none of this kind and these types (build with `--features conv`, or add one to kernel_manifest.yaml)",
    )
}

/// Everything a conv decision depends on; addresses only through their alignment.
#[derive(Clone, PartialEq, Eq, Hash)]
struct MemoKey {
    registry: usize,
    table: u64,
    device: (usize, u32, u32),
    kind: ConvKind,
    elements: (DType, DType, DType),
    extents: [usize; 7],
    geometry: [usize; 6],
    convolution: bool,
    alignment: [u32; 4],
}

impl MemoKey {
    fn new(registry: &Registry, table: &Table, device: &DeviceProps, p: &Conv2dProblem) -> Self {
        let alignment = p.addresses.unwrap_or_default().map(|a| a.trailing_zeros().min(8));
        MemoKey {
            registry: registry as *const Registry as usize,
            table: table.id(),
            device: (
                device.name.as_ptr() as usize,
                device.multiprocessors,
                device.compute_capability,
            ),
            kind: p.kind,
            elements: p.elements,
            extents: [p.n, p.h, p.w, p.c, p.k, p.r, p.s],
            geometry: [
                p.pad[0],
                p.pad[1],
                p.stride[0],
                p.stride[1],
                p.dilation[0],
                p.dilation[1],
            ],
            convolution: p.mode == super::ConvMode::Convolution,
            alignment,
        }
    }
}

static MEMO: Memo<MemoKey, ConvDispatched> = Memo::new();
