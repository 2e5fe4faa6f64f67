//! GEMM dispatch: given a problem, the fastest compiled way to run it, without naming a kernel.
//!
//! The ways ([`candidates`]): every allowed kernel that supports the problem as given or
//! transposed (D^T = B^T·A^T, which lets small-M problems use narrow-N kernels), at every split-K
//! slice count it supports, directly or with the operands in the way staged into the layouts of
//! another kernel ([`stage`]). The selection engine ([`crate::select`]) estimates each — the
//! device's measured table where it timed this very way, else the cost model calibrated on the
//! table's rows, else the bare model — and the lowest estimate runs. Decisions are remembered per
//! problem.
//!
//! Users who know which kernel they want call its typed function (`kernels::<name>::run`) directly.

use crate::error::Error;
use crate::gemm::GemmProblem;
use crate::gemm::{self, GemmOperands, Operand};
use crate::kernel::KernelInfo;
use crate::matrix::{MatrixMut, MatrixRef};
use crate::model::{DType, Layout, MathOp, OperationKind};
use crate::registry::Registry;
use crate::select::{self, device_table, Choice, Table, NO_TABLE};
use crate::types::{Element, LayoutTag};
use crate::CudaStream;

pub mod candidates;
mod memo;
mod plan;
mod refusal;
pub mod skinny;
pub mod stage;

pub use candidates::GemmWay;
pub use plan::{plan, plan_in, plan_raw, Matrices, Plan};

/// What dispatch may trade for speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// f32 problems may run on TF32 products (10-bit mantissas: ~1e-3 relative error, torch's
    /// `allow_tf32`). Default false: f32 problems get f32 accuracy (3xTF32 or CUDA-core kernels),
    /// as torch.matmul and cuBLAS give by default.
    pub allow_tf32: bool,
}

impl Policy {
    /// Whether dispatch may pick `kernel` under this policy (see [`dispatchable`]).
    pub fn allows(&self, kernel: &KernelInfo) -> bool {
        dispatchable(kernel) && (self.allow_tf32 || !rounds_to_tf32(kernel))
    }
}

/// A kernel that rounds f32 operands to TF32 (one TF32 product, not 3xTF32).
pub fn rounds_to_tf32(kernel: &KernelInfo) -> bool {
    let op = kernel.gemm();
    op.a.element == DType::F32
        && kernel.design.opclass() == crate::model::OpClass::TensorOp
        && op.math == MathOp::MultiplyAdd
}

/// Whether the heuristic may pick `kernel` for a problem of its types: not a fused one (it computes
/// something else), not one that trades accuracy for speed (f32 operands rounded to f16/bf16: the
/// caller asked for f32; Hopper's 3xTF32 by splitting K, whose error grows with K because the
/// warpgroup MMA truncates its accumulator: 4.2e-5 at K = 4096 where cuBLAS's SGEMM errs by 1.1e-6,
/// measured on an H100). All stay available by name. (A parallel split-K kernel is a way only with
/// slices, see [`candidates::slice_candidates`].)
pub fn dispatchable(kernel: &KernelInfo) -> bool {
    kernel.operation.kind() == OperationKind::Gemm
        && kernel.is_plain()
        && !gemm::is_split_tf32(kernel)
        && !matches!(
            kernel.gemm().math,
            MathOp::MultiplyAddFastF16 | MathOp::MultiplyAddFastBf16
        )
}

/// How a selected kernel runs the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orientation {
    /// D = A·B as given.
    AsGiven,
    /// D^T = B^T·A^T: the kernel's A is B read transposed, its B is A transposed and its C/D are
    /// C/D transposed (same memory, every layout flipped, M and N swapped). Small-M problems run
    /// this way on kernels with a narrow N tile.
    Transposed,
}

impl Orientation {
    /// `problem` as the kernel sees it in this orientation.
    pub fn problem(self, problem: &GemmProblem) -> GemmProblem {
        match self {
            Orientation::AsGiven => problem.clone(),
            Orientation::Transposed => transposed(problem),
        }
    }

    /// `operands` as the kernel reads them in this orientation.
    pub fn operands(self, operands: &GemmOperands) -> GemmOperands {
        match self {
            Orientation::AsGiven => *operands,
            Orientation::Transposed => transposed_operands(operands),
        }
    }
}

impl Selection {
    /// The operands the selected kernel is launched with: oriented, with its split-K slices.
    pub fn kernel_operands(&self, operands: &GemmOperands) -> GemmOperands {
        self.orientation.operands(&GemmOperands {
            split_k_slices: self.split_k,
            ..*operands
        })
    }
}

/// A kernel choice for a problem.
#[derive(Clone, Copy, Debug)]
pub struct Selection {
    pub kernel: &'static KernelInfo,
    /// Why: how its time was estimated.
    pub choice: Choice,
    pub orientation: Orientation,
    /// Split-K slices to launch with.
    pub split_k: usize,
    /// Run-time rasterisation to launch with (the measured row's; the default otherwise).
    pub tuning: crate::gemm::Tuning,
}

/// The problem D^T = B^T·A^T that computes the same D (see [`Orientation::Transposed`]).
pub fn transposed(p: &GemmProblem) -> GemmProblem {
    GemmProblem {
        m: p.n,
        n: p.m,
        k: p.k,
        batch_count: p.batch_count,
        element_a: p.element_b,
        element_b: p.element_a,
        element_c: p.element_c,
        layout_a: p.layout_b.transposed(),
        layout_b: p.layout_a.transposed(),
        layout_c: p.layout_c.transposed(),
        lda: p.ldb,
        ldb: p.lda,
        ldc: p.ldc,
        batch_stride_a: p.batch_stride_b,
        batch_stride_b: p.batch_stride_a,
        batch_stride_c: p.batch_stride_c,
        address_a: p.address_b,
        address_b: p.address_a,
        address_c: p.address_c,
        compute_capability: p.compute_capability,
        split_k_slices: p.split_k_slices,
        pointer_arrays: p.pointer_arrays,
        // A per-row vector of D is a per-column one of D^T.
        fusion: crate::model::Fusion {
            bias: p.fusion.bias.transposed(),
            scale: p.fusion.scale.transposed(),
            ..p.fusion
        },
        epilogue: p.epilogue,
        fusion_operands: p.fusion_operands,
    }
}

/// The operands of D^T = B^T·A^T: the same buffers, each matrix read transposed.
pub fn transposed_operands(ops: &GemmOperands) -> GemmOperands {
    let t = |op: &Operand| Operand {
        shape: crate::MatrixShape {
            rows: op.shape.cols,
            cols: op.shape.rows,
            ..op.shape
        },
        ..*op
    };
    GemmOperands {
        a: t(&ops.b),
        b: t(&ops.a),
        c: ops.c.as_ref().map(t),
        d: t(&ops.d),
        alpha: ops.alpha,
        beta: ops.beta,
        split_k_slices: ops.split_k_slices,
        fusion: crate::FusionOperands {
            aux: ops.fusion.aux.as_ref().map(t),
            ..ops.fusion
        },
    }
}

/// Types and layouts of a GEMM's operands, for the untyped dispatch path and the table's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    pub element_a: DType,
    pub element_b: DType,
    pub element_c: DType,
    pub layout_a: Layout,
    pub layout_b: Layout,
    pub layout_c: Layout,
}

impl Signature {
    /// One element type for A, B and C/D, with `layouts` of A, B and C/D.
    pub fn uniform(element: DType, [layout_a, layout_b, layout_c]: [Layout; 3]) -> Self {
        Signature {
            element_a: element,
            element_b: element,
            element_c: element,
            layout_a,
            layout_b,
            layout_c,
        }
    }

    /// The types and layouts of `problem`.
    pub fn of(problem: &GemmProblem) -> Self {
        Signature {
            element_a: problem.element_a,
            element_b: problem.element_b,
            element_c: problem.element_c,
            layout_a: problem.layout_a,
            layout_b: problem.layout_b,
            layout_c: problem.layout_c,
        }
    }
}

/// Options of a dispatched launch.
#[derive(Debug, Default)]
pub struct Options<'w> {
    /// What dispatch may trade for speed (TF32 for f32 problems).
    pub policy: Policy,
    /// Scratch memory for the launch (kernel workspaces, staged operands, the 3xTF32 split)
    /// instead of the per-stream cache; [`workspace_bytes`] says how much a problem needs.
    pub workspace: Option<&'w mut crate::Workspace>,
}

/// What a dispatched launch ran.
#[derive(Clone, Debug)]
pub struct Dispatched {
    /// The kernel, or `None` when there was nothing to compute (M, N or the batch count is 0).
    pub kernel: Option<&'static KernelInfo>,
    /// How it was chosen (`None` when nothing was launched).
    pub choice: Option<Choice>,
    pub orientation: Orientation,
    /// Operands copied into scratch memory first ("A", "B", "C", "D"), where no kernel could read
    /// them as they lie (see [`stage`]); empty on the direct path.
    pub staged: Vec<&'static str>,
    pub split_k: usize,
    pub tuning: crate::gemm::Tuning,
}

impl Dispatched {
    fn nothing() -> Self {
        Dispatched {
            kernel: None,
            choice: None,
            orientation: Orientation::AsGiven,
            staged: Vec::new(),
            split_k: 1,
            tuning: crate::gemm::Tuning::default(),
        }
    }

    /// One line for people: the kernel and why it was chosen.
    pub fn describe(&self) -> String {
        let Some(kernel) = self.kernel else {
            return "nothing launched: the problem is empty (M, N or batch count 0)".into();
        };
        let why = self
            .choice
            .map_or_else(|| "nothing chosen".into(), |c| c.describe());
        let mut line = format!("{} ({why}", kernel.rust_name);
        if self.orientation == Orientation::Transposed {
            line.push_str("; run transposed, D^T = B^T A^T");
        }
        if self.split_k > 1 {
            line.push_str(&format!("; {} split-K slices", self.split_k));
        }
        if self.tuning != crate::gemm::Tuning::default() {
            line.push_str(&format!("; {:?}", self.tuning));
        }
        if !self.staged.is_empty() {
            line.push_str(&format!("; staged {}", self.staged.join(", ")));
        }
        line.push(')');
        line
    }
}

/// Chooses a way to run `operands` (see the module documentation) from this crate's registry and the embedded
/// table of this device (see [`device_table`]), and launches it on `stream`.
///
/// # Safety
/// As [`gemm::launch_raw`]: each operand must be device memory of at least `len` elements of the
/// signature's element type, valid until the kernel completes; D must not overlap A or B.
pub unsafe fn launch_raw(
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
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

/// Everything dispatch decides for a problem on a device, before launching.
#[derive(Clone, Debug)]
pub struct Decision {
    pub selection: Selection,
    /// Staging, when the operands cannot be read as they lie.
    pub staging: Option<stage::StagePlan>,
}

/// Chooses how to run `operands`: directly on a kernel that takes them as they lie, or through
/// staging into the layouts whose copies plus kernel are estimated fastest (staging only where no
/// kernel runs the problem directly, or where it is estimated clearly faster than the direct
/// kernel, see `STAGING_MARGIN`). Err: the readable refusal. Pure
/// host code (`device` as [`crate::device::props`] reports it): what [`launch_raw_with`] will do.
///
/// Decisions are remembered per problem (see `memo`): a repeated problem costs a hash lookup.
pub fn decide(
    registry: &Registry,
    table: &Table,
    signature: Signature,
    operands: &GemmOperands,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Result<Decision, Error> {
    let key = memo::Key::new(registry, table, device, policy, signature, operands);
    let (selection, staged_layouts) = memo::MEMO.get_or_try(key, || {
        let decision = decide_afresh(registry, table, signature, operands, device, policy)?;
        let staged = decision.staging.as_ref().map(|plan| {
            let s = plan.signature;
            [s.layout_a, s.layout_b, s.layout_c]
        });
        Ok::<_, Error>((decision.selection, staged))
    })?;
    let staging = staged_layouts.map(|layouts| stage::StagePlan::new(signature, operands, layouts));
    Ok(Decision { selection, staging })
}

/// [`decide`] without the memo.
fn decide_afresh(
    registry: &Registry,
    table: &Table,
    signature: Signature,
    operands: &GemmOperands,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Result<Decision, Error> {
    let problem = problem_of(signature, operands, device.compute_capability);
    let chosen = context(table, device)
        .choose(ways(registry, signature, operands, device, policy))
        .ok_or_else(|| refusal::no_kernel(registry, &problem, policy))?;
    let selection = Selection {
        kernel: chosen.kernel,
        choice: chosen.choice(),
        orientation: chosen.way.orientation,
        split_k: chosen.split_k,
        tuning: chosen.tuning,
    };
    let staging = chosen
        .way
        .staged
        .map(|layouts| stage::StagePlan::new(signature, operands, layouts));
    Ok(Decision { selection, staging })
}

/// The direct way (as given or transposed, any split-K; no staging) of lowest estimate for
/// `problem` on `device`: what [`decide`] chooses among when the operands can be read as they lie.
/// Err lists why no kernel runs it.
pub fn select(
    registry: &Registry,
    table: &Table,
    problem: &GemmProblem,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Result<Selection, Error> {
    let problem = GemmProblem {
        compute_capability: Some(device.compute_capability),
        ..problem.clone()
    };
    let chosen = context(table, device)
        .choose(candidates::direct(
            registry,
            &problem,
            policy,
            device.multiprocessors,
        ))
        .ok_or_else(|| refusal::no_kernel(registry, &problem, policy))?;
    Ok(Selection {
        kernel: chosen.kernel,
        choice: chosen.choice(),
        orientation: chosen.way.orientation,
        split_k: chosen.split_k,
        tuning: chosen.tuning,
    })
}

/// Every way to run `operands` (checked by [`validate`]) on `device`: direct ones where K > 0,
/// staged ones, and the skinny kernels where the product (or its transpose) has at most 64
/// columns ([`skinny`]). What [`decide`] ranks, and what the sweep
/// (`examples/select_sweep.rs`) times.
pub fn ways(
    registry: &Registry,
    signature: Signature,
    operands: &GemmOperands,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Vec<select::Candidate<GemmWay>> {
    let problem = problem_of(signature, operands, device.compute_capability);
    let mut ways = if problem.k > 0 {
        candidates::direct(registry, &problem, policy, device.multiprocessors)
    } else {
        Vec::new()
    };
    ways.extend(candidates::staged(registry, signature, operands, device, policy));
    ways.extend(skinny::ways(&problem, operands, device, policy));
    ways
}

/// The selection engine over `table` on `device`.
pub fn context<'t>(table: &'t Table, device: &crate::device::DeviceProps) -> select::Context<'t> {
    select::Context {
        table,
        multiprocessors: device.multiprocessors,
        work_of: &crate::operations::row_work,
    }
}

/// [`launch_raw`] with an explicit registry and tables (a downstream crate's own kernels).
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_raw_with(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
    validate(signature, operands)?;
    if is_empty(operands) {
        return Ok(Dispatched::nothing());
    }
    let device = crate::device::props(stream.context())?;
    let table = device_table(tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let Decision { selection, staging } =
        decide(registry, table, signature, operands, &device, options.policy)?;
    let kernel = selection.kernel;
    let staged = match &staging {
        None if skinny::elements_of(kernel).is_some() => {
            unsafe { skinny::launch(stream, &selection, signature, operands, options.workspace) }?;
            Vec::new()
        }
        None => {
            unsafe {
                gemm::launch_raw_in(
                    kernel,
                    stream,
                    &selection.kernel_operands(operands),
                    selection.tuning,
                    options.workspace,
                )
            }?;
            Vec::new()
        }
        Some(plan) => {
            stream
                .context()
                .bind_to_thread()
                .map_err(Error::driver("binding the context"))?;
            let kernel_operands = |base: u64| selection.kernel_operands(&plan.at(base));
            let before = |base: u64| unsafe { plan.enqueue_before(stream, base) };
            let after = |base: u64| unsafe { plan.enqueue_after(stream, base) };
            let staging = gemm::Staging {
                bytes: plan.bytes,
                operands: &kernel_operands,
                before: &before,
                after: &after,
            };
            unsafe {
                gemm::enqueue_staged(
                    kernel,
                    stream,
                    &device,
                    selection.tuning,
                    options.workspace,
                    &staging,
                )
            }?;
            plan.staged.clone()
        }
    };
    Ok(Dispatched {
        kernel: Some(kernel),
        choice: Some(selection.choice),
        orientation: selection.orientation,
        staged,
        split_k: selection.split_k,
        tuning: selection.tuning,
    })
}

/// Bytes of scratch memory dispatching `operands` on `stream`'s device needs (a caller's
/// [`crate::Workspace`] must hold at least this many; 0 for none).
pub fn workspace_bytes(
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
    policy: Policy,
) -> Result<usize, Error> {
    validate(signature, operands)?;
    if is_empty(operands) {
        return Ok(0);
    }
    let device = crate::device::props(stream.context())?;
    let tables = crate::kernels::TABLES;
    let table = device_table(tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let registry = &crate::kernels::REGISTRY;
    let Decision { selection, staging } = decide(registry, table, signature, operands, &device, policy)?;
    match &staging {
        None if skinny::elements_of(selection.kernel).is_some() => {
            Ok(skinny::workspace_bytes(&selection, operands))
        }
        None => gemm::workspace_bytes(selection.kernel, &selection.kernel_operands(operands), &device),
        Some(plan) => {
            let kernel = gemm::workspace_bytes(
                selection.kernel,
                &selection.kernel_operands(&plan.at(1 << 40)),
                &device,
            )?;
            Ok(kernel.next_multiple_of(256) + plan.bytes)
        }
    }
}

/// The signature of typed operands.
fn signature_of<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>() -> Signature
{
    Signature {
        element_a: A::DTYPE,
        element_b: B::DTYPE,
        element_c: C::DTYPE,
        layout_a: LA::LAYOUT,
        layout_b: LB::LAYOUT,
        layout_c: LC::LAYOUT,
    }
}

/// M, N or the batch count is 0: nothing to compute (BLAS returns at once).
fn is_empty(ops: &GemmOperands) -> bool {
    ops.a.shape.rows == 0 || ops.b.shape.cols == 0 || ops.d.shape.batch_count == 0
}

/// The problem-level checks, made once before any kernel is considered: extents that fit
/// together, beta without C, batch counts, leading dimensions, buffer lengths, extents that
/// overflow, and D's batches overlapping each other. Errors name the operand and the fix.
pub fn validate(signature: Signature, ops: &GemmOperands) -> Result<(), Error> {
    const WHO: &str = "dispatch";
    let fail = |message: String| Err(Error::invalid(WHO, message));
    let (m, n, k) = gemm::matching_extents(
        &ops.a.shape,
        &ops.b.shape,
        ops.c.as_ref().map(|c| &c.shape),
        &ops.d.shape,
    )
    .map_err(|message| Error::invalid(WHO, message))?;
    gemm::check_beta_has_c(ops.c.is_some(), ops.beta).map_err(|message| Error::invalid(WHO, message))?;
    if !ops.alpha.is_finite() || !ops.beta.is_finite() {
        return fail(format!(
            "alpha = {} and beta = {} must be finite numbers",
            ops.alpha, ops.beta
        ));
    }
    let c_shape = ops.c.as_ref().map(|c| &c.shape);
    let batch = gemm::matching_batches(&ops.a.shape, &ops.b.shape, c_shape, &ops.d.shape)
        .map_err(|message| Error::invalid(WHO, message))?;
    for (what, value) in [("m", m), ("n", n), ("k", k), ("batch count", batch)] {
        if value > i32::MAX as usize {
            return fail(format!(
                "{what} = {value} overflows the kernels' 32-bit extents (at most {})",
                i32::MAX
            ));
        }
    }
    // An empty problem reads and writes nothing (BLAS returns at once): no buffer to check.
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    let named = [
        ("A", Some(&ops.a), signature.layout_a),
        ("B", Some(&ops.b), signature.layout_b),
        ("C", ops.c.as_ref(), signature.layout_c),
        ("D", Some(&ops.d), signature.layout_c),
    ];
    for (name, operand, layout) in named {
        if let Some(op) = operand {
            if op.shape.rows * op.shape.cols == 0 {
                continue;
            }
            gemm::check_buffer(WHO, name, op.len, &op.shape, layout)?;
        }
    }
    gemm::batches_apart(&ops.d.shape, signature.layout_c).map_err(|message| Error::invalid(WHO, message))?;
    Ok(())
}

/// The discovery view of `operands` (extents from A and B, batch from D, strides, addresses).
pub fn problem_of(signature: Signature, operands: &GemmOperands, compute_capability: u32) -> GemmProblem {
    let (a, b, d) = (&operands.a.shape, &operands.b.shape, &operands.d.shape);
    let c = operands.c.as_ref().unwrap_or(&operands.d);
    let stride = |s: &crate::MatrixShape| if s.batch_count == 1 { 0 } else { s.batch_stride };
    GemmProblem {
        lda: Some(a.ld),
        ldb: Some(b.ld),
        ldc: Some(c.shape.ld),
        batch_stride_a: Some(stride(a)),
        batch_stride_b: Some(stride(b)),
        batch_stride_c: Some(stride(&c.shape)),
        address_a: Some(operands.a.address),
        address_b: Some(operands.b.address),
        address_c: Some(c.address),
        compute_capability: Some(compute_capability),
        ..GemmProblem::new(
            (a.rows, b.cols, a.cols),
            (signature.element_a, signature.element_b, signature.element_c),
            (signature.layout_a, signature.layout_b, signature.layout_c),
        )
        .batched(d.batch_count)
    }
}

/// D = alpha·(A @ B) + beta·C with the kernel [`select`](fn@select) picks from this crate's kernels; returns
/// what ran. The typed path for callers who do not want to name a kernel: shapes, buffer lengths
/// and alignment are checked once, before any kernel is considered. Any shape, leading dimension
/// and element-aligned view runs (operands no kernel reads as they lie are staged); M, N or a batch
/// of 0 launch nothing; K = 0 computes D = beta·C.
#[allow(clippy::too_many_arguments)]
pub fn run<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<(MatrixRef<'_, C, LC>, f64)>,
    d: MatrixMut<'_, C, LC>,
    alpha: f64,
) -> Result<Dispatched, Error> {
    run_with(stream, a, b, c, d, alpha, Options::default())
}

/// [`run`] with [`Options`] (a workspace of the caller's, TF32 for f32 problems).
#[allow(clippy::too_many_arguments)]
pub fn run_with<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<(MatrixRef<'_, C, LC>, f64)>,
    d: MatrixMut<'_, C, LC>,
    alpha: f64,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
    run_in(
        &crate::kernels::REGISTRY,
        crate::kernels::TABLES,
        stream,
        a,
        b,
        c,
        d,
        alpha,
        options,
    )
}

/// [`run_with`] choosing from `registry` with `tables` instead of this crate's kernels: a
/// downstream crate's own kernels (its generated `REGISTRY` and `TABLES`; with no table
/// for the device, the bare heuristic of [`select`](fn@select) chooses).
#[allow(clippy::too_many_arguments)]
pub fn run_in<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<(MatrixRef<'_, C, LC>, f64)>,
    d: MatrixMut<'_, C, LC>,
    alpha: f64,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
    let signature = signature_of::<A, B, C, LA, LB, LC>();
    let beta = c.as_ref().map_or(0.0, |(_, beta)| *beta);
    gemm::with_operands(stream, a, b, c.map(|(c, _)| c), d, (alpha, beta, 1), |operands| {
        // SAFETY: every address comes from a live cudarc buffer of the stated length whose element
        // type is the signature's (enforced by the type parameters).
        unsafe { launch_raw_with(registry, tables, stream, signature, operands, options) }
    })
}
