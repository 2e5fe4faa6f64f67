//! Plans: a dispatch decision made once, with its own scratch memory and its Params built, then
//! launched any number of times. Launching a plan allocates nothing, synchronises nothing and
//! reads nothing back, so it can be captured into a CUDA graph; with the operands it was made for
//! it only enqueues (Params are rebuilt, on the host, only when an address or a scalar changes).
//!
//! The plan owns its workspace (kernel workspace and staging area, [`Workspace::untracked`]): it
//! must outlive every launch of it, graphs that captured one included, and serves one launch at a
//! time — launches on several streams must be ordered by the caller.

use std::sync::Arc;

use super::stage::StagePlan;
use super::{decide, is_empty, skinny, validate, Decision, Dispatched, Policy, Signature};
use crate::device::DeviceProps;
use crate::error::Error;
use crate::gemm::{self, GemmOperands, PreparedGemm};
use crate::matrix::{MatrixMut, MatrixRef};
use crate::registry::Registry;
use crate::select::{device_table, Table, NO_TABLE};
use crate::types::{Element, LayoutTag};
use crate::workspace::Workspace;
use crate::CudaStream;

/// A dispatched GEMM ready to launch (see the module documentation).
pub struct Plan {
    signature: Signature,
    device: DeviceProps,
    dispatched: Dispatched,
    /// `None` for an empty problem (nothing to launch).
    ready: Option<Ready>,
}

/// What a non-empty plan launches.
struct Ready {
    decision: Decision,
    /// The operands the Params were built for.
    operands: GemmOperands,
    /// The plan's memory (`None` when the way needs none) and its base address.
    _memory: Option<Workspace>,
    base: u64,
    /// Bytes of the kernel's own workspace at `base`; staged operands follow it.
    kernel_bytes: usize,
    /// The CUTLASS kernel's Params (`None` for a skinny kernel: its arguments are built per launch).
    prepared: Option<PreparedGemm>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("dispatched", &self.dispatched)
            .field("workspace_bytes", &self.workspace_bytes())
            .finish()
    }
}

impl Plan {
    /// What the plan runs (kernel, why, orientation, split-K, staged operands).
    pub fn dispatched(&self) -> &Dispatched {
        &self.dispatched
    }

    /// Bytes of device memory the plan holds.
    pub fn workspace_bytes(&self) -> usize {
        self.ready
            .as_ref()
            .and_then(|r| r._memory.as_ref())
            .map_or(0, Workspace::bytes)
    }

    /// Runs the plan on `operands` (the same extents, types, layouts, leading dimensions and batch
    /// strides it was made for; addresses and scalars may differ, at the cost of rebuilding
    /// Params on the host).
    ///
    /// # Safety
    /// As [`super::launch_raw`]; and every launch of the plan that may still run on the device
    /// uses its workspace: launches on different streams must be ordered by the caller.
    pub unsafe fn launch_raw(&mut self, stream: &CudaStream, operands: &GemmOperands) -> Result<(), Error> {
        let Some(ready) = self.ready.as_mut() else {
            return Ok(());
        };
        if *operands != ready.operands {
            same_shapes(&ready.operands, operands)?;
            validate(self.signature, operands)?;
            let staging = ready
                .decision
                .staging
                .as_ref()
                .map(|p| StagePlan::new(self.signature, operands, layouts_of(p)));
            ready.decision.staging = staging;
            ready.prepared = prepare(
                &ready.decision,
                operands,
                &self.device,
                ready.base,
                ready.kernel_bytes,
            )?;
            ready.operands = *operands;
        }
        stream
            .context()
            .bind_to_thread()
            .map_err(Error::driver("binding the context"))?;
        let selection = &ready.decision.selection;
        let Some(prepared) = &ready.prepared else {
            let product = skinny::launch_of(selection, self.signature, operands, ready.base)?;
            return unsafe { product.enqueue(stream) };
        };
        let stage_base = ready.base + ready.kernel_bytes as u64;
        if let Some(staging) = &ready.decision.staging {
            unsafe { staging.enqueue_before(stream, stage_base)? };
        }
        unsafe { gemm::enqueue_gemm(selection.kernel, stream, &self.device, prepared, ready.base)? };
        if let Some(staging) = &ready.decision.staging {
            unsafe { staging.enqueue_after(stream, stage_base)? };
        }
        Ok(())
    }

    /// [`Self::launch_raw`] over typed matrices, as [`super::run`] takes them.
    #[allow(clippy::too_many_arguments)]
    pub fn run<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
        &mut self,
        stream: &CudaStream,
        a: MatrixRef<'_, A, LA>,
        b: MatrixRef<'_, B, LB>,
        c: Option<(MatrixRef<'_, C, LC>, f64)>,
        d: MatrixMut<'_, C, LC>,
        alpha: f64,
    ) -> Result<(), Error> {
        let signature = super::signature_of::<A, B, C, LA, LB, LC>();
        if signature != self.signature {
            return Err(Error::invalid(
                "dispatch plan",
                format!("the plan was made for {:?}, not {signature:?}", self.signature),
            ));
        }
        let beta = c.as_ref().map_or(0.0, |(_, beta)| *beta);
        gemm::with_operands(stream, a, b, c.map(|(c, _)| c), d, (alpha, beta, 1), |operands| {
            // SAFETY: every address comes from a live cudarc buffer of the stated length whose
            // element type is the signature's (enforced by the type parameters).
            unsafe { self.launch_raw(stream, operands) }
        })
    }
}

/// Bytes of the kernel's own workspace (a skinny kernel's partial sums), whole 256-byte blocks.
fn kernel_workspace_bytes(
    decision: &Decision,
    operands: &GemmOperands,
    device: &DeviceProps,
) -> Result<usize, Error> {
    let selection = &decision.selection;
    if skinny::elements_of(selection.kernel).is_some() {
        return Ok(skinny::workspace_bytes(selection, operands).next_multiple_of(256));
    }
    // The kernel's workspace depends on extents and tiles, not on addresses: ask with a stand-in
    // base (aligned like a real one); staged operands go behind it.
    const STAND_IN: u64 = 1 << 40;
    let probe_operands = match &decision.staging {
        Some(staging) => selection.kernel_operands(&staging.at(STAND_IN)),
        None => selection.kernel_operands(operands),
    };
    let probe = gemm::tuned_plan(selection.kernel, &probe_operands, device, selection.tuning)?;
    Ok((selection.kernel.workspace_bytes(&probe)? as usize).next_multiple_of(256))
}

fn layouts_of(plan: &StagePlan) -> [crate::model::Layout; 3] {
    let s = plan.signature;
    [s.layout_a, s.layout_b, s.layout_c]
}

/// Operands that differ from `planned` only in addresses and scalars; else an error saying what
/// changed.
fn same_shapes(planned: &GemmOperands, given: &GemmOperands) -> Result<(), Error> {
    let shapes = |o: &GemmOperands| {
        (
            o.a.shape,
            o.b.shape,
            o.c.map(|c| c.shape),
            o.d.shape,
            (o.c.is_some(), o.split_k_slices),
        )
    };
    if shapes(planned) == shapes(given) {
        return Ok(());
    }
    Err(Error::invalid(
        "dispatch plan",
        format!(
            "the plan was made for A {:?}, B {:?}, D {:?}; these operands are A {:?}, B {:?}, D {:?}: make a plan for them",
            planned.a.shape, planned.b.shape, planned.d.shape, given.a.shape, given.b.shape, given.d.shape
        ),
    ))
}

/// The Params of `decision`'s kernel on `operands`, with the plan's memory at `base` (`None` for a
/// skinny kernel, which takes no Params).
fn prepare(
    decision: &Decision,
    operands: &GemmOperands,
    device: &DeviceProps,
    base: u64,
    kernel_bytes: usize,
) -> Result<Option<PreparedGemm>, Error> {
    let selection = &decision.selection;
    if skinny::elements_of(selection.kernel).is_some() {
        return Ok(None);
    }
    let kernel_operands = match &decision.staging {
        Some(staging) => selection.kernel_operands(&staging.at(base + kernel_bytes as u64)),
        None => selection.kernel_operands(operands),
    };
    let mut args = gemm::tuned_plan(selection.kernel, &kernel_operands, device, selection.tuning)?;
    args.workspace = base as *mut std::ffi::c_void;
    args.workspace_capacity = kernel_bytes as u64;
    gemm::prepare_gemm(selection.kernel, &args).map(Some)
}

/// A plan for `operands` over `registry` and `tables` (see [`plan`]).
///
/// # Safety
/// The addresses are only recorded here; launching the plan has [`Plan::launch_raw`]'s contract.
pub unsafe fn plan_raw(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
    policy: Policy,
) -> Result<Plan, Error> {
    validate(signature, operands)?;
    let device = crate::device::props(stream.context())?;
    if is_empty(operands) {
        return Ok(Plan {
            signature,
            device,
            dispatched: Dispatched::nothing(),
            ready: None,
        });
    }
    let table = device_table(tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let decision = decide(registry, table, signature, operands, &device, policy)?;
    let selection = decision.selection;
    if gemm::is_split_tf32(selection.kernel) {
        return Err(Error::invalid(
            "dispatch plan",
            "dispatch never picks a 3xTF32-by-splitting kernel; a plan cannot hold one",
        ));
    }
    let kernel_bytes = kernel_workspace_bytes(&decision, operands, &device)?;
    let staging_bytes = decision.staging.as_ref().map_or(0, |s| s.bytes);
    let total = kernel_bytes + staging_bytes;
    let (memory, base) = if total > 0 {
        let mut memory = Workspace::untracked(stream, total)?;
        let (base, _) = memory.lend(stream);
        (Some(memory), base)
    } else {
        (None, 0)
    };
    let prepared = prepare(&decision, operands, &device, base, kernel_bytes)?;
    let dispatched = Dispatched {
        kernel: Some(selection.kernel),
        choice: Some(selection.choice),
        orientation: selection.orientation,
        staged: decision.staging.as_ref().map_or(Vec::new(), |s| s.staged.clone()),
        split_k: selection.split_k,
        tuning: selection.tuning,
    };
    Ok(Plan {
        signature,
        device,
        dispatched,
        ready: Some(Ready {
            decision,
            operands: *operands,
            _memory: memory,
            base,
            kernel_bytes,
            prepared,
        }),
    })
}

/// Decides how to run D = alpha·A·B + beta·C (as [`super::run`] would) and prepares it: a [`Plan`]
/// holding the decision, its workspace and its Params. Launch it with [`Plan::run`]. Nothing is
/// enqueued here.
///
/// ```no_run
/// use cutlass_aot::{dispatch, half::f16, ColumnMajor, MatrixMut, MatrixRef, RowMajor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ctx = cutlass_aot::device::context(0)?;
/// unsafe { ctx.disable_event_tracking() }; // for capture: order the buffers' uses yourself
/// let stream = ctx.new_stream()?;
/// let (m, n, k) = (16, 4096, 4096);
/// let x = stream.alloc_zeros::<f16>(m * k)?;
/// let w = stream.alloc_zeros::<f16>(k * n)?;
/// let mut y = stream.alloc_zeros::<f16>(m * n)?;
/// let a = MatrixRef::<f16, RowMajor>::new(&x, m, k);
/// let b = MatrixRef::<f16, ColumnMajor>::new(&w, k, n);
/// let mut plan = dispatch::plan(&stream, a, b, None, MatrixMut::<f16, RowMajor>::new(&mut y, m, n), 1.0, Default::default())?;
/// stream.begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)?;
/// plan.run(&stream, a, b, None, MatrixMut::<f16, RowMajor>::new(&mut y, m, n), 1.0)?;
/// let graph = stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))?.expect("a graph");
/// for _ in 0..3 {
///     graph.launch()?; // the plan must outlive the graph's launches
/// }
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn plan<'m, A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    stream: &Arc<CudaStream>,
    a: MatrixRef<'m, A, LA>,
    b: MatrixRef<'m, B, LB>,
    c: Option<(MatrixRef<'m, C, LC>, f64)>,
    d: MatrixMut<'m, C, LC>,
    alpha: f64,
    policy: Policy,
) -> Result<Plan, Error> {
    plan_in(
        &crate::kernels::REGISTRY,
        crate::kernels::TABLES,
        stream,
        (a, b, c, d),
        alpha,
        policy,
    )
}

/// The operands of a typed plan: A, B, C with beta, D.
pub type Matrices<'m, A, B, C, LA, LB, LC> = (
    MatrixRef<'m, A, LA>,
    MatrixRef<'m, B, LB>,
    Option<(MatrixRef<'m, C, LC>, f64)>,
    MatrixMut<'m, C, LC>,
);

/// [`plan`] over `registry` and `tables` (a downstream crate's).
pub fn plan_in<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    registry: &Registry,
    tables: &[Table],
    stream: &Arc<CudaStream>,
    (a, b, c, d): Matrices<'_, A, B, C, LA, LB, LC>,
    alpha: f64,
    policy: Policy,
) -> Result<Plan, Error> {
    let signature = super::signature_of::<A, B, C, LA, LB, LC>();
    let beta = c.as_ref().map_or(0.0, |(_, beta)| *beta);
    gemm::with_operands(stream, a, b, c.map(|(c, _)| c), d, (alpha, beta, 1), |operands| {
        // SAFETY: addresses from live, typed buffers; only recorded until the plan is launched.
        unsafe { plan_raw(registry, tables, stream, signature, operands, policy) }
    })
}
