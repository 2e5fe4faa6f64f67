//! Conv plans: a dispatch decision made once, with its own workspace, launched any number of
//! times — no allocation, synchronisation or host read per launch, so a launch can be captured into
//! a CUDA graph (a strided dgrad's stride phases too: their side streams exist before the first
//! launch and are forked and joined with events recorded at launch). The plan must outlive every
//! launch of it, captured graphs included; launches on different streams must be ordered by the
//! caller (they share the workspace).

use cudarc::driver::CudaStream;

use super::dispatch::{checked_problem, decide, launch_on, ConvDispatched, ConvSignature};
use super::{Conv2d, Conv2dProblem, ConvOperands, ConvTypes};
use crate::error::Error;
use crate::registry::Registry;
use crate::select::{device_table, Table, NO_TABLE};
use crate::types::Element;
use crate::workspace::Workspace;

/// A dispatched convolution ready to launch (see the module documentation).
#[derive(Debug)]
pub struct ConvPlan {
    signature: ConvSignature,
    problem: Conv2dProblem,
    dispatched: ConvDispatched,
    workspace: Option<Workspace>,
}

impl ConvPlan {
    /// What the plan runs.
    pub fn dispatched(&self) -> &ConvDispatched {
        &self.dispatched
    }

    /// Bytes of device memory the plan holds.
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, Workspace::bytes)
    }

    /// Runs the plan on `operands` (the problem it was made for; addresses and scalars may differ).
    ///
    /// # Safety
    /// As [`super::dispatch::launch_raw`]; launches of the plan on different streams must be
    /// ordered by the caller.
    pub unsafe fn launch_raw(&mut self, stream: &CudaStream, operands: &ConvOperands) -> Result<(), Error> {
        let problem = checked_problem(self.signature, operands)?;
        if !same_problem(&problem, &self.problem) {
            return Err(Error::invalid(
                "conv plan",
                format!(
                    "the plan was made for {:?}; these tensors describe {:?}: make a plan for them",
                    key_text(&self.problem),
                    key_text(&problem)
                ),
            ));
        }
        let d = &self.dispatched;
        // SAFETY: as the caller promised.
        unsafe {
            launch_on(
                d.kernel,
                d.split_k,
                d.way,
                stream,
                &problem,
                operands,
                self.workspace.as_mut(),
            )
        }
    }

    /// [`Self::launch_raw`] over typed tensors.
    pub fn run<K: ConvTypes>(&mut self, stream: &CudaStream, args: Conv2d<'_, K>) -> Result<(), Error> {
        super::with_operands(stream, args, |operands| {
            // SAFETY: every address comes from a live cudarc buffer of the stated length and type.
            unsafe { self.launch_raw(stream, operands) }
        })
    }
}

fn key_text(p: &Conv2dProblem) -> String {
    format!("{:?}", super::dispatch::key_of(p).dims)
}

fn same_problem(a: &Conv2dProblem, b: &Conv2dProblem) -> bool {
    super::dispatch::key_of(a) == super::dispatch::key_of(b) && a.mode == b.mode
}

/// A plan for `operands` over `registry` and `tables`.
///
/// # Safety
/// The addresses are only recorded here; launching has [`ConvPlan::launch_raw`]'s contract.
pub unsafe fn plan_raw(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    signature: ConvSignature,
    operands: &ConvOperands,
) -> Result<ConvPlan, Error> {
    let device = crate::device::props(stream.context())?;
    let problem = checked_problem(signature, operands)?;
    let table = device_table(tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let dispatched = decide(registry, table, &problem, operands, &device)?;
    let bytes = super::dispatch::workspace_bytes(&dispatched, &problem, operands, &device)?;
    stream
        .context()
        .bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    crate::side_streams::reserve(stream)?;
    // Always some memory: a launch path that may need scratch (split-K, stream-K, the first-layer
    // kernel's counters) asks for it even where the size comes out 0.
    let workspace = Some(Workspace::untracked(stream, bytes.max(256))?);
    Ok(ConvPlan {
        signature,
        problem,
        dispatched,
        workspace,
    })
}

/// Decides how to run `args` (as [`super::dispatch::run`] would) and prepares it: a [`ConvPlan`]
/// holding the decision and its workspace. Nothing is enqueued here.
pub fn plan<K: ConvTypes>(stream: &CudaStream, args: Conv2d<'_, K>) -> Result<ConvPlan, Error> {
    plan_in(&crate::kernels::REGISTRY, crate::kernels::TABLES, stream, args)
}

/// [`plan`] over `registry` and `tables` (a downstream crate's).
pub fn plan_in<K: ConvTypes>(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    args: Conv2d<'_, K>,
) -> Result<ConvPlan, Error> {
    let signature = ConvSignature {
        kind: K::KIND,
        elements: (K::A::DTYPE, K::B::DTYPE, K::C::DTYPE),
    };
    super::with_operands(stream, args, |operands| {
        // SAFETY: addresses of live, typed buffers; only recorded until the plan is launched.
        unsafe { plan_raw(registry, tables, stream, signature, operands) }
    })
}
