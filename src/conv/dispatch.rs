//! Conv dispatch: given a convolution, the fastest compiled way to run it, without naming a kernel.
//!
//! Three sources, in order:
//! 1. **A measured table** ([`Table`], `bench/dispatch/conv_*.tsv`, written by
//!    `examples/conv_bench.rs --dispatch-out`): every way the benchmark timed each measured problem
//!    (kernel, split-K, µs). A measured problem runs its fastest row ([`Table::exact`]). A row's
//!    kernel is a conv kernel, or a **GEMM kernel**: a 1×1 filter at unit stride without padding is
//!    a plain matrix product over the channels-last tensors as they lie (fprop:
//!    `y[NHW×K] = x[NHW×C] · w[K×C]ᵀ`; dgrad: `dx[NHW×C] = dy[NHW×K] · w[K×C]`; wgrad:
//!    `dw[K×C] = dy[NHW×K]ᵀ · x[NHW×C]`, see [`as_gemm`]), and the benchmark times the GEMM
//!    kernels on it beside the conv kernels.
//! 2. **The cost model calibrated on the table** for a problem the table did not measure
//!    ([`Table::calibrated`], [`super::calibration`]): every way to run it ([`options`]) is
//!    estimated as the model's cost ÷ the rate its kernel (at that split-K) showed on the table's
//!    rows, and the lowest estimate runs.
//! 3. **The bare model** ([`heuristic`]) where the table has no rows of the problem's kind and
//!    types: waves of output tiles (times split-K slices) over the SMs, or stream-K's spread with
//!    its serial fixup, each a tile's multiply-adds (a Hopper kernel's channels rounded up to its
//!    tile at every filter tap) with a per-tile penalty, CUTLASS 2.x kernels at 65 % of a Hopper
//!    kernel's rate and analytic iterators at 75 % of the others'; a strided dgrad as the sum of its
//!    stride phases.
//!
//! The typed entry point is [`run`] with a [`Conv2d`] over the markers [`Fprop`], [`Dgrad`] and
//! [`Wgrad`]; [`launch_raw`] takes untyped operands. Decisions are remembered per problem.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::CudaStream;

use super::calibration::Rates;
use super::{problem_from, Conv2d, Conv2dProblem, ConvOperands, ConvTypes, Krsc, Nhwc, Npqk, TensorOperand};
use crate::device::DeviceProps;
use crate::dispatch::{self as gemm_dispatch, Signature};
use crate::error::Error;
use crate::gemm::{GemmOperands, Operand};
use crate::kernel::KernelInfo;
use crate::matrix::MatrixShape;
use crate::model::{Api, ConvKind, ConvLayout, DType, IteratorAlgorithm, Layout, MathOp, SplitK};
use crate::registry::Registry;
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

/// One measured row: a way to run one conv problem (a kernel and its split-K) and its time. A
/// table holds every way the benchmark measured; the fastest of a problem is its verified winner.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub signature: ConvSignature,
    /// Activation `[n, h, w, c]` and filter `[k, r, s]` extents.
    pub activation: [usize; 4],
    pub filter: [usize; 3],
    pub pad: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// A conv kernel of the entry's kind and types, or a GEMM kernel that runs the problem as a
    /// matrix product ([`as_gemm`]).
    pub kernel: &'static KernelInfo,
    pub split_k: usize,
    /// Its measured time, microseconds.
    pub us: f64,
}

impl Entry {
    /// A row as the build emits it: kind, element types, `[n, h, w, c, k, r, s, pad_h, pad_w,
    /// stride_h, stride_w, dilation_h, dilation_w]`, kernel, split-K, µs.
    pub const fn row(
        kind: ConvKind,
        elements: (DType, DType, DType),
        g: [usize; 13],
        kernel: &'static KernelInfo,
        split_k: usize,
        us: f64,
    ) -> Entry {
        Entry {
            signature: ConvSignature { kind, elements },
            activation: [g[0], g[1], g[2], g[3]],
            filter: [g[4], g[5], g[6]],
            pad: [g[7], g[8]],
            stride: [g[9], g[10]],
            dilation: [g[11], g[12]],
            kernel,
            split_k,
            us,
        }
    }

    /// The measured problem.
    pub fn problem(&self) -> Conv2dProblem {
        let [k, r, s] = self.filter;
        Conv2dProblem::new(
            self.signature.kind,
            self.activation,
            [k, r, s],
            self.signature.elements,
        )
        .padding(self.pad[0], self.pad[1])
        .stride(self.stride[0], self.stride[1])
        .dilation(self.dilation[0], self.dilation[1])
    }

    /// Whether the row measured exactly `problem` (kind, types, extents and geometry).
    pub fn measures(&self, problem: &Conv2dProblem) -> bool {
        self.signature.kind == problem.kind
            && self.signature.elements == problem.elements
            && self.activation == [problem.n, problem.h, problem.w, problem.c]
            && self.filter == [problem.k, problem.r, problem.s]
            && self.pad == problem.pad
            && self.stride == problem.stride
            && self.dilation == problem.dilation
    }
}

/// A measured conv dispatch table, as embedded by the build (one per device).
#[derive(Debug)]
pub struct Table {
    pub device: &'static str,
    pub date: &'static str,
    pub entries: &'static [Entry],
    /// The model's rates fitted on `entries`, on first use ([`super::calibration`]).
    rates: OnceLock<Rates>,
}

impl Table {
    pub const fn new(device: &'static str, date: &'static str, entries: &'static [Entry]) -> Self {
        Table {
            device,
            date,
            entries,
            rates: OnceLock::new(),
        }
    }

    /// The fastest measured way to run exactly `problem` that can run it (a GEMM kernel: `operands`
    /// viewed as a matrix product), with its split-K; `None` when the table did not measure it.
    pub fn exact(&self, problem: &Conv2dProblem, operands: &ConvOperands) -> Option<&'static Entry> {
        self.entries
            .iter()
            .filter(|e| e.measures(problem) && runs(e.kernel, problem, operands, e.split_k))
            .min_by(|a, b| a.us.total_cmp(&b.us))
    }

    /// For a problem the table did not measure: every way to run it ([`options`]) estimated by the
    /// model calibrated on this table's rows ([`super::calibration`]), the fastest with its split-K and
    /// estimated µs. `None` when no candidate's kernel has rows of the problem's kind.
    pub fn calibrated(
        &self,
        registry: &Registry,
        problem: &Conv2dProblem,
        operands: &ConvOperands,
        multiprocessors: u32,
    ) -> Option<(&'static KernelInfo, usize, f64)> {
        let rates = self
            .rates
            .get_or_init(|| Rates::fit(self.entries, multiprocessors));
        options(registry, problem, operands)
            .into_iter()
            .filter_map(|(kernel, slices)| {
                Some((
                    kernel,
                    slices,
                    rates.estimate(kernel, problem, slices, multiprocessors)?,
                ))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
    }

    /// How many distinct problems of `signature` the table measured.
    pub fn problems_of(&self, signature: ConvSignature) -> usize {
        let mut seen: Vec<Conv2dProblem> = Vec::new();
        for e in self.entries.iter().filter(|e| e.signature == signature) {
            let problem = e.problem();
            if !seen.contains(&problem) {
                seen.push(problem);
            }
        }
        seen.len()
    }
}

/// Every way dispatch may run `problem` (compute capability and addresses set): each allowed
/// conv kernel of its kind and types at each split-K it supports ([`slice_candidates`]), and each
/// GEMM kernel that takes it as a matrix product ([`gemm_candidates`]; wgrad's long reduction
/// also at 16, 64 and 128 slices) — what the benchmark measures.
pub fn options(
    registry: &Registry,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
) -> Vec<(&'static KernelInfo, usize)> {
    let mut out: Vec<_> = conv_options(registry, problem).collect();
    let gemm_splits: &[usize] = if problem.kind == ConvKind::Wgrad {
        &[1, 16, 64, 128]
    } else {
        &[1]
    };
    for &slices in gemm_splits {
        out.extend(
            gemm_candidates(registry, problem, operands, slices)
                .into_iter()
                .map(|k| (k, slices)),
        );
    }
    out
}

/// The conv kernels among [`options`]: each allowed conv kernel of `problem`'s kind and types at
/// each split-K it supports, in registry order (what the bare heuristic ranks).
fn conv_options<'r>(
    registry: &'r Registry,
    problem: &'r Conv2dProblem,
) -> impl Iterator<Item = (&'static KernelInfo, usize)> + 'r {
    registry
        .all()
        .iter()
        .copied()
        .filter(|kernel| {
            kernel.operation.conv().is_some_and(|conv| {
                let g = &conv.gemm;
                conv.kind == problem.kind && (g.a.element, g.b.element, g.c.element) == problem.elements
            }) && allowed(kernel)
        })
        .flat_map(|kernel| {
            slice_candidates(kernel)
                .iter()
                .map(move |&slices| (kernel, slices))
        })
        .filter(|&(kernel, slices)| kernel.supports(&with_slices(problem, slices)).is_ok())
}

impl gemm_dispatch::MeasuredOn for Table {
    fn device(&self) -> &str {
        self.device
    }
}

/// Whether `kernel` (conv, or GEMM over [`as_gemm`]'s view) may run `problem` with `slices`.
fn runs(kernel: &KernelInfo, problem: &Conv2dProblem, operands: &ConvOperands, slices: usize) -> bool {
    if kernel.operation.conv().is_some() {
        return allowed(kernel) && kernel.supports(&with_slices(problem, slices)).is_ok();
    }
    let Some((signature, gemm)) = as_gemm(problem, operands) else {
        return false;
    };
    let gemm = GemmOperands {
        split_k_slices: slices,
        ..gemm
    };
    let cc = problem.compute_capability.unwrap_or(90);
    gemm_dispatch::dispatchable(kernel)
        && kernel
            .supports(&gemm_dispatch::problem_of(signature, &gemm, cc))
            .is_ok()
}

/// The GEMM kernels of `registry` that may run `problem` (with compute capability and addresses
/// set) as a matrix product over `operands` with `slices` split-K slices: what the benchmark times
/// beside the conv kernels. Empty when the problem is not a plain product ([`as_gemm`]).
pub fn gemm_candidates(
    registry: &Registry,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    slices: usize,
) -> Vec<&'static KernelInfo> {
    registry
        .all()
        .iter()
        .copied()
        .filter(|k| k.operation.conv().is_none() && runs(k, problem, operands, slices))
        .collect()
}

/// The empty table (heuristic only).
pub static NO_TABLE: Table = Table::new("", "", &[]);

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

fn with_slices(problem: &Conv2dProblem, slices: usize) -> Conv2dProblem {
    Conv2dProblem {
        split_k_slices: slices,
        ..*problem
    }
}

/// How a conv kernel was chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConvChoice {
    /// The measured table's fastest way for this very problem.
    Table,
    /// The cost model calibrated on the table's `problems` measured problems of this kind and
    /// types; `estimated_us` is its estimate.
    Calibrated { problems: usize, estimated_us: f64 },
    /// The bare cost model: the table has no rows for this kind and types (or this device).
    Heuristic,
}

/// What a dispatched convolution ran.
#[derive(Clone, Debug)]
pub struct ConvDispatched {
    /// A conv kernel, or a GEMM kernel that ran the problem as a matrix product ([`as_gemm`]).
    pub kernel: &'static KernelInfo,
    pub split_k: usize,
    pub choice: ConvChoice,
}

impl ConvDispatched {
    /// Whether it ran as a matrix product on a GEMM kernel.
    pub fn as_gemm(&self) -> bool {
        self.kernel.operation.conv().is_none()
    }

    /// One line for people: the kernel, the route and why.
    pub fn describe(&self) -> String {
        let why = match self.choice {
            ConvChoice::Table => "measured table, this problem".to_string(),
            ConvChoice::Calibrated {
                problems,
                estimated_us,
            } => format!("model calibrated on {problems} measured problems, estimated {estimated_us:.1} us"),
            ConvChoice::Heuristic => "heuristic (no measured entry for this kind and types)".into(),
        };
        let route = if self.as_gemm() { "; as a GEMM" } else { "" };
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
            crate::kernels::CONV_DISPATCH_TABLES,
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
    conv_tables: &[Table],
    stream: &CudaStream,
    signature: ConvSignature,
    operands: &ConvOperands,
    options: Options<'_>,
) -> Result<ConvDispatched, Error> {
    let device = crate::device::props(stream.context())?;
    let problem = checked_problem(signature, operands)?;
    let table =
        gemm_dispatch::table_for(conv_tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let (kernel, split_k, choice) = decide(registry, table, &problem, operands, &device)?;
    let ran = ConvDispatched {
        kernel,
        split_k,
        choice,
    };
    // SAFETY: as the caller promised for `operands`.
    unsafe { launch_on(kernel, split_k, stream, &problem, operands, options.workspace) }?;
    Ok(ran)
}

/// Launches `kernel` with `slices` split-K slices on `problem`: a conv kernel on `operands`, a GEMM
/// kernel on their matrix-product view ([`as_gemm`]; an error if the problem is not a plain
/// product). What dispatch runs for a decision, and what the benchmark times per candidate.
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_on(
    kernel: &'static KernelInfo,
    slices: usize,
    stream: &CudaStream,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    if kernel.operation.conv().is_some() {
        let ops = ConvOperands {
            split_k_slices: slices,
            ..*operands
        };
        // SAFETY: as the caller promised for `operands`.
        return unsafe { super::launch_raw(kernel, stream, &ops, workspace) };
    }
    let (_, gemm) = as_gemm(problem, operands).ok_or_else(|| {
        Error::invalid(
            kernel.name,
            "a GEMM kernel runs only 1x1, unpadded, unit-stride convolutions (as a matrix product)",
        )
    })?;
    let gemm = GemmOperands {
        split_k_slices: slices,
        ..gemm
    };
    // SAFETY: the GEMM operands are the caller's buffers viewed as matrices of the same elements.
    unsafe { crate::gemm::launch_raw_in(kernel, stream, &gemm, Default::default(), workspace) }
}

/// The problem the operands describe, checked (extents agree, buffers hold their tensors, beta
/// has C) before any kernel is considered.
fn checked_problem(signature: ConvSignature, operands: &ConvOperands) -> Result<Conv2dProblem, Error> {
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

/// The conv kernel, split-K and reason for `problem` (the table, else the heuristic); remembered
/// per problem and device. Err: why no kernel runs it.
pub fn decide(
    registry: &Registry,
    table: &Table,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    device: &DeviceProps,
) -> Result<Decision, Error> {
    let c = operands.c.unwrap_or(operands.d);
    let mut problem = *problem;
    problem.compute_capability = Some(device.compute_capability);
    problem.addresses = Some([
        operands.a.address,
        operands.b.address,
        c.address,
        operands.d.address,
    ]);
    let key = MemoKey::new(registry, table, device, &problem);
    if let Some(remembered) = MEMO.lock().unwrap().as_ref().and_then(|m| m.get(&key)) {
        return Ok(*remembered);
    }
    let signature = ConvSignature {
        kind: problem.kind,
        elements: problem.elements,
    };
    let calibrated = || table.calibrated(registry, &problem, operands, device.multiprocessors);
    let decision = if let Some(entry) = table.exact(&problem, operands) {
        (entry.kernel, entry.split_k, ConvChoice::Table)
    } else if let Some((kernel, slices, estimated_us)) = calibrated() {
        let problems = table.problems_of(signature);
        (
            kernel,
            slices,
            ConvChoice::Calibrated {
                problems,
                estimated_us,
            },
        )
    } else {
        let (kernel, slices) = heuristic(registry, &problem, device.multiprocessors)
            .ok_or_else(|| no_kernel(registry, &problem))?;
        (kernel, slices, ConvChoice::Heuristic)
    };
    let mut guard = MEMO.lock().unwrap();
    let memo = guard.get_or_insert_with(HashMap::new);
    if memo.len() >= MEMO_CAPACITY {
        memo.clear();
    }
    memo.insert(key, decision);
    Ok(decision)
}

/// The 1×1, unit-stride, unpadded convolution as a GEMM over the same buffers: its signature and
/// operands, or `None` when the problem is not one.
pub fn as_gemm(problem: &Conv2dProblem, ops: &ConvOperands) -> Option<(Signature, GemmOperands)> {
    if problem.r != 1 || problem.s != 1 || problem.pad != [0, 0] || problem.stride != [1, 1] {
        return None;
    }
    let pixels = problem.n * problem.h * problem.w;
    let (c, k) = (problem.c, problem.k);
    let matrix = |t: &TensorOperand, rows: usize, cols: usize, layout: Layout| Operand {
        shape: MatrixShape::packed(rows, cols, layout),
        len: t.len,
        address: t.address,
    };
    let (row, col) = (Layout::Row, Layout::Column);
    // (A, B, C/D) shapes and layouts of the product, per kind (see the module documentation).
    let (m, n, kk, la, lb) = match problem.kind {
        ConvKind::Fprop => (pixels, k, c, row, col),
        ConvKind::Dgrad => (pixels, c, k, row, row),
        ConvKind::Wgrad => (k, c, pixels, col, row),
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

/// The heuristic's kernel and split-K for `problem` (see the module documentation).
pub fn heuristic(
    registry: &Registry,
    problem: &Conv2dProblem,
    multiprocessors: u32,
) -> Option<(&'static KernelInfo, usize)> {
    let extent = problem.gemm_extent().ok()?;
    let sms = multiprocessors.max(1) as f64;
    conv_options(registry, problem)
        .map(|(kernel, slices)| (kernel_cost(kernel, problem, extent, slices, sms), kernel, slices))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, kernel, slices)| (kernel, slices))
}

/// The heuristic's relative cost of `kernel` on `problem` at `slices` split-K slices on a device
/// of `multiprocessors` SMs (arbitrary units: only ratios mean something; `None` when the
/// problem has no implicit GEMM). Does not check that the kernel supports the problem.
pub fn model_cost(
    kernel: &KernelInfo,
    problem: &Conv2dProblem,
    slices: usize,
    multiprocessors: u32,
) -> Option<f64> {
    let extent = problem.gemm_extent().ok()?;
    Some(kernel_cost(
        kernel,
        problem,
        extent,
        slices,
        multiprocessors.max(1) as f64,
    ))
}

/// [`estimated_cost`] of `kernel` on `problem`, whose implicit GEMM is `(m, n, k)`. A strided dgrad
/// costs the sum of its stride phases' unit-stride dgrads: a 3.x kernel launches one per phase
/// ([`super::stride_phases`]), and CUTLASS 2.x's strided dgrad tiles each phase apart too, so
/// neither pays for the taps that miss a pixel.
fn kernel_cost(
    kernel: &KernelInfo,
    problem: &Conv2dProblem,
    (m, n, k): (usize, usize, usize),
    slices: usize,
    sms: f64,
) -> f64 {
    if problem.kind == ConvKind::Dgrad && problem.stride != [1, 1] {
        if let Ok(phases) = super::stride_phases::phases(problem) {
            return phases
                .iter()
                .filter(|ph| ph.has_taps())
                .filter_map(|ph| {
                    let unit = ph.rules_problem(problem);
                    let extent = unit.gemm_extent().ok()?;
                    Some(estimated_cost(
                        kernel,
                        padded_extent(kernel, &unit, extent),
                        slices,
                        sms,
                    ))
                })
                .sum();
        }
    }
    estimated_cost(kernel, padded_extent(kernel, problem, (m, n, k)), slices, sms)
}

/// The split-K slice counts worth trying on `kernel`: powers of two up to 128 for a kernel that
/// splits K (a parallel split-K kernel without slices only adds its reduction pass; a stream-K
/// kernel's 1 is its own stream-K decomposition), 1 for one that cannot.
pub fn slice_candidates(kernel: &KernelInfo) -> &'static [usize] {
    const POWERS: [usize; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
    match kernel.design.split_k() {
        SplitK::Parallel => &POWERS[1..],
        SplitK::Serial | SplitK::StreamK => &POWERS,
        SplitK::None => &POWERS[..1],
    }
}

/// The implicit GEMM's extent as `kernel` computes it: a CUTLASS 3.x kernel tiles K (fprop, dgrad)
/// or N (wgrad) per filter position, so a channel count below the tile's pays for the whole tile
/// at every tap.
fn padded_extent(
    kernel: &KernelInfo,
    problem: &Conv2dProblem,
    (m, n, k): (usize, usize, usize),
) -> (usize, usize, usize) {
    if kernel.api() != Api::Cutlass3x {
        return (m, n, k);
    }
    let (tile_n, tile_k) = (kernel.tile().n.max(1) as usize, kernel.tile().k.max(1) as usize);
    match problem.kind {
        ConvKind::Fprop | ConvKind::Dgrad => (m, n, problem.k_tiles_3x(tile_k) * tile_k),
        ConvKind::Wgrad => (m, problem.c.div_ceil(tile_n) * tile_n * problem.r * problem.s, k),
    }
}

/// Relative time of `kernel` on an implicit GEMM of `(m, n, k)` split into `slices`: the busiest
/// SM's multiply-adds (waves of tile-slices), a per-tile penalty for small tiles (more operand
/// re-reads per flop), 5 % per split for the partial-sum traffic, and the kernel family's rate.
fn estimated_cost(kernel: &KernelInfo, (m, n, k): (usize, usize, usize), slices: usize, sms: f64) -> f64 {
    let (tm, tn) = (kernel.tile().m.max(1) as f64, kernel.tile().n.max(1) as f64);
    let tiles = (m as f64 / tm).ceil() * (n as f64 / tn).ceil() * slices as f64;
    let waves = (tiles / sms).ceil() * tm * tn * (k as f64 / slices as f64).ceil();
    let busiest = if kernel.design.split_k() == SplitK::StreamK && slices == 1 {
        // Stream-K spreads the K tiles of all output tiles evenly over the SMs, or runs whole
        // tiles where that is no slower. The SMs sharing an output tile add their partial sums
        // into it one after another (CUTLASS's fixup): with few tiles over many SMs (a narrow
        // wgrad: 9 tiles, ~15 SMs each) that chain costs about a quarter of the spread work per
        // extra SM (H100, 2026-11-24: 194 µs against 100 µs at 8 split-K slices).
        let peers = (sms / tiles).max(1.0);
        waves.min(tiles * tm * tn * k as f64 / sms * 1.05 * (1.0 + 0.25 * (peers - 1.0)))
    } else {
        waves
    };
    let split = if slices > 1 {
        1.0 + 0.05 * slices as f64
    } else {
        1.0
    };
    let rate = match kernel.api() {
        Api::Cutlass3x => 1.0,
        Api::Cutlass2x => 0.65,
    } * match kernel.operation.conv().map(|c| c.iterator) {
        Some(IteratorAlgorithm::Analytic) => 0.75,
        // Ours: 2.8-3.2x CUTLASS's fixed_channels kernels on the ResNet stem (H100, 2026-11-24).
        // A conservative rate: one measured layer, not a model.
        Some(IteratorAlgorithm::FirstLayer) => 2.5,
        _ => 1.0,
    };
    busiest * (1.0 + 32.0 / tm + 32.0 / tn) * split / rate
}

/// Why no kernel runs `problem`: each candidate of its kind and types with its reasons.
fn no_kernel(registry: &Registry, problem: &Conv2dProblem) -> Error {
    let mut reasons = Vec::new();
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
            reasons.push(format!("  {}: {}", kernel.rust_name, u.reasons.join("; ")));
        }
    }
    let (a, b, c) = problem.elements;
    let head = format!(
        "no compiled {} kernel with {a}/{b}/{c} tensors runs this problem (N={}, H={}, W={}, C={}, K={}, R={}, S={}, pad {:?}, stride {:?}, dilation {:?})",
        problem.kind, problem.n, problem.h, problem.w, problem.c, problem.k, problem.r, problem.s,
        problem.pad, problem.stride, problem.dilation
    );
    let body = if reasons.is_empty() {
        "\n  the manifest has none of this kind and these types (build with `--features conv`, or add one to kernel_manifest.yaml)".to_string()
    } else {
        reasons.truncate(8);
        format!(":\n{}", reasons.join("\n"))
    };
    Error::invalid("conv dispatch", format!("{head}{body}"))
}

const MEMO_CAPACITY: usize = 4096;

/// Everything a conv decision depends on; addresses only through their alignment.
#[derive(Clone, PartialEq, Eq, Hash)]
struct MemoKey {
    registry: usize,
    table: usize,
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
            table: table as *const Table as usize,
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

/// A remembered decision: kernel, split-K slices, why.
type Decision = (&'static KernelInfo, usize, ConvChoice);

static MEMO: Mutex<Option<HashMap<MemoKey, Decision>>> = Mutex::new(None);
