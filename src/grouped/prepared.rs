//! Prepared grouped launches: checked once, Params built against memory of their own, the argument
//! block uploaded once (host-packed groups) — then launched any number of times with no
//! allocation, no host copy and no synchronisation, so a launch can be captured into a CUDA graph.
//! A device-resident (MoE) launch runs its setup kernel each time, so offsets written on the device
//! between launches are honoured. A prepared launch names the buffers it was made for; it must
//! outlive every launch of it (captured graphs included), and launches on several streams must be
//! ordered by the caller (they share its memory).

use cudarc::driver::CudaStream;

use super::enqueue::{build, issue, upload_block, Built};
use super::{block_launch, moe_launch, GroupedOperands, MoeGemm, MoeOperands};
use crate::device::{self, DeviceProps};
use crate::error::Error;
use crate::gemm::GemmKernel;
use crate::kernel::KernelInfo;
use crate::workspace::Workspace;

/// A grouped launch ready to enqueue (see the module documentation).
pub struct PreparedLaunch {
    kernel: &'static KernelInfo,
    device: DeviceProps,
    built: Built,
    _memory: Workspace,
    /// D = β·C of the groups without products (k = 0).
    fills: Vec<crate::support::Scale4d>,
}

impl std::fmt::Debug for PreparedLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedLaunch")
            .field("kernel", &self.kernel.name)
            .field("bytes", &self.built.capacity)
            .finish()
    }
}

impl PreparedLaunch {
    /// The kernel it runs.
    pub fn kernel(&self) -> &'static KernelInfo {
        self.kernel
    }

    /// Bytes of device memory it holds (argument block and workspace).
    pub fn workspace_bytes(&self) -> usize {
        self.built.capacity
    }

    /// Enqueues the launch on `stream` (the setup kernel first for a device-resident launch).
    ///
    /// # Safety
    /// The buffers the launch was prepared with are still live device memory, and nothing else
    /// runs the launch concurrently on another stream.
    pub unsafe fn launch(&self, stream: &CudaStream) -> Result<(), Error> {
        stream
            .context()
            .bind_to_thread()
            .map_err(Error::driver("binding the context"))?;
        unsafe { issue(self.kernel, stream, &self.device, &self.built)? };
        unsafe { super::k_zero::enqueue(stream, &self.fills) }
    }
}

/// Builds `launch` against memory of its own: sized with a stand-in address first (Params embed
/// addresses, sizes do not), then allocated and built for real.
///
/// # Safety
/// The stream's context is current.
unsafe fn prepare(
    kernel: &'static KernelInfo,
    stream: &CudaStream,
    device: DeviceProps,
    (args, upload, layout): (
        crate::abi::cutlass_aot_grouped_args,
        super::Upload,
        super::BlockLayout,
    ),
) -> Result<PreparedLaunch, Error> {
    const STAND_IN: u64 = 1 << 40;
    let sized = unsafe {
        build(
            kernel,
            stream,
            args,
            upload.clone(),
            layout,
            (STAND_IN, 0),
            &mut |bytes| Ok((STAND_IN, bytes)),
        )
    }?;
    let mut memory = Workspace::untracked(stream, sized.capacity)?;
    let (base, capacity) = memory.lend(stream);
    let built = unsafe {
        build(
            kernel,
            stream,
            args,
            upload,
            layout,
            (base, capacity),
            &mut |bytes| {
                Err(Error::AbiMismatch {
                    kernel: kernel.name,
                    message: format!("asked for {bytes} bytes after sizing {capacity}"),
                })
            },
        )
    }?;
    unsafe { upload_block(stream, &built)? };
    Ok(PreparedLaunch {
        kernel,
        device,
        built,
        _memory: memory,
        fills: Vec::new(),
    })
}

/// Prepares `kernel` over host-packed groups: checked, Params built, the argument block uploaded
/// (stream-ordered, now). Launch it with [`PreparedLaunch::launch`].
///
/// # Safety
/// Each operand's address must point to device memory of at least `len` elements of the kernel's
/// element type for that operand, valid until the last launch completes.
pub unsafe fn prepare_raw(
    kernel: &'static KernelInfo,
    stream: &CudaStream,
    ops: &GroupedOperands<'_>,
) -> Result<PreparedLaunch, Error> {
    let device = device::props(stream.context())?;
    let (mut args, upload, layout, problems, fills) = block_launch(kernel, &device, ops)?;
    args.host_problems = problems.as_ptr();
    stream
        .context()
        .bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    let prepared = unsafe { prepare(kernel, stream, device, (args, upload, layout)) }?;
    Ok(PreparedLaunch { fills, ..prepared })
}

/// Prepares a device-resident (MoE) launch of `kernel`: checked on the host, Params built; each
/// launch runs the setup kernel over the offsets as they are on the device then.
///
/// # Safety
/// As [`super::launch_moe_raw`], for every launch of it.
pub unsafe fn prepare_moe_raw(
    kernel: &'static KernelInfo,
    stream: &CudaStream,
    ops: &MoeOperands,
) -> Result<PreparedLaunch, Error> {
    let device = device::props(stream.context())?;
    let launch = moe_launch(kernel, &device, ops)?;
    stream
        .context()
        .bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    unsafe { prepare(kernel, stream, device, launch) }
}

/// [`prepare_moe_raw`] over a typed [`MoeGemm`] of kernel `K`.
///
/// # Safety
/// The buffers of `args` must stay live (and unmoved) until the last launch completes: the
/// prepared launch records their addresses, not borrows.
pub unsafe fn prepare_moe<K: GemmKernel>(
    stream: &CudaStream,
    args: MoeGemm<'_, K>,
) -> Result<PreparedLaunch, Error> {
    // SAFETY: as the caller promised.
    args.with_operands(stream, |ops| unsafe { prepare_moe_raw(K::info(), stream, ops) })
}
