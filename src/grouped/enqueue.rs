//! Building and enqueueing a grouped launch: the argument block (uploaded from the host, or written
//! on the device by the setup kernel), the kernel's workspace behind it, and the grouped kernel.
//!
//! [`build`] makes Params against memory given by a callback (the per-stream cache, or a prepared
//! launch's own buffer); [`issue`] enqueues what was built. [`enqueue`] does both with the cache
//! for a one-off launch.

use std::ffi::c_void;

use cudarc::driver::CudaStream;

use super::{prepare_fn, BlockLayout};
use crate::abi;
use crate::device;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::Api;
use crate::params::{run_prepare, Prepared};

/// Where the argument block comes from.
#[derive(Clone)]
pub(crate) enum Upload {
    /// Packed on the host: uploaded (with a host-computed schedule behind it) in one copy.
    Block(Vec<u8>),
    /// Written on the device by the setup kernel with these arguments (arrays filled in here).
    Setup(abi::cutlass_aot_grouped_setup_args),
}

/// A grouped launch built against its memory.
pub(crate) struct Built {
    pub prepared: Prepared,
    /// The argument block's device address; the kernel's workspace follows the block.
    pub base: u64,
    /// Bytes of memory at `base` the Params were built with.
    pub capacity: usize,
    layout: BlockLayout,
    /// What fills the block: host bytes to copy (their length) or the setup kernel's arguments.
    upload: Upload,
    upload_bytes: usize,
}

/// Builds Params for `args` with memory from `memory(bytes) -> (base, capacity)` (called with the
/// bytes needed, block included, until the Params fit; `current` is what is at hand already).
///
/// # Safety
/// The stream's context is current.
pub(crate) unsafe fn build(
    info: &'static KernelInfo,
    stream: &CudaStream,
    mut args: abi::cutlass_aot_grouped_args,
    upload: Upload,
    layout: BlockLayout,
    (mut base, mut capacity): (u64, usize),
    memory: &mut dyn FnMut(usize) -> Result<(u64, usize), Error>,
) -> Result<Built, Error> {
    let prepare = prepare_fn(info)?;
    if info.api() == Api::Cutlass3x {
        args.encode_tiled = crate::tma::encode_tiled(info.name)?;
    } else {
        args.sm_occupancy = occupancy(info, stream, &args)?;
    }
    let mut host = match &upload {
        Upload::Block(block) => block.clone(),
        Upload::Setup(_) => Vec::new(),
    };
    // Only a 2.x host-schedule kernel writes a host workspace (its schedule, uploaded with the
    // block); it gets as much host memory as it asks for, never the whole device workspace.
    let host_schedule = matches!(upload, Upload::Block(_)) && info.api() == Api::Cutlass2x;
    let mut host_room = 0usize;
    let prepared = loop {
        if capacity < layout.bytes {
            (base, capacity) = memory(layout.bytes + (1 << 20))?;
        }
        args.arrays = layout.arrays(base);
        args.workspace = (base + layout.bytes as u64) as *mut c_void;
        args.workspace_capacity = (capacity - layout.bytes) as u64;
        if host_schedule {
            host.resize(layout.bytes + host_room, 0);
            args.host_workspace = host[layout.bytes..].as_mut_ptr().cast();
            args.workspace_capacity = args.workspace_capacity.min(host_room as u64);
        }
        match run_prepare(info, prepare, &args, args.encode_tiled.is_some())? {
            Ok(prepared) => break prepared,
            Err(needed) => {
                let needed = needed as usize;
                let device_short = layout.bytes + needed > capacity;
                let host_short = host_schedule && needed > host_room;
                if !device_short && !host_short {
                    return Err(Error::AbiMismatch {
                        kernel: info.name,
                        message: format!(
                            "prepare asked for {needed} bytes of workspace with {capacity} given"
                        ),
                    });
                }
                if device_short {
                    (base, capacity) = memory(layout.bytes + needed)?;
                }
                if host_short {
                    host_room = needed;
                }
            }
        }
    };
    // The block, and a host-computed schedule behind it (a 2.x kernel's only workspace).
    let upload_bytes = if args.host_problems.is_null() || info.api() == Api::Cutlass3x {
        layout.bytes
    } else {
        layout.bytes + prepared.launch.workspace_bytes as usize
    };
    let upload = match upload {
        Upload::Block(_) => Upload::Block(host),
        Upload::Setup(mut setup) => {
            setup.arrays = layout.arrays(base);
            Upload::Setup(setup)
        }
    };
    Ok(Built {
        prepared,
        base,
        capacity,
        layout,
        upload,
        upload_bytes,
    })
}

/// Persistent CTAs of a 2.x kernel: as many as fit on the device at once (CUTLASS's
/// `sufficient()`), from the driver's occupancy of this kernel with its block and shared memory.
fn occupancy(
    info: &'static KernelInfo,
    stream: &CudaStream,
    args: &abi::cutlass_aot_grouped_args,
) -> Result<i32, Error> {
    let probe = run_prepare(info, prepare_fn(info)?, &probe_args(args), false)?;
    let shape = probe
        .map(|p| (p.launch.block[0], p.launch.shared_mem_bytes))
        .map_err(|_| Error::AbiMismatch {
            kernel: info.name,
            message: "the occupancy probe asked for a workspace".to_string(),
        })?;
    let occupancy = info
        .image
        .occupancy(stream.context(), info.entry, info.name, shape)?;
    if occupancy == 0 {
        return Err(Error::UnsupportedDevice {
            kernel: info.name,
            message: format!(
                "not one block of {} threads with {} bytes of shared memory fits on a multiprocessor",
                shape.0, shape.1
            ),
        });
    }
    Ok(occupancy as i32)
}

/// Enqueues the host block's copy (for a host-packed launch): once per launch, or once for a
/// prepared launch whose block stays.
///
/// # Safety
/// `built` was built by [`build`] on `stream`'s context, whose memory is still live.
pub(crate) unsafe fn upload_block(stream: &CudaStream, built: &Built) -> Result<(), Error> {
    let Upload::Block(host) = &built.upload else {
        return Ok(());
    };
    // SAFETY: `host` holds at least `upload_bytes` bytes, the device memory at least `capacity`.
    // A pageable host-to-device copy returns once the bytes are staged, so `host` may change right
    // after; the copy is ordered on the stream before the kernel.
    unsafe {
        cudarc::driver::sys::cuMemcpyHtoDAsync_v2(
            built.base,
            host.as_ptr().cast(),
            built.upload_bytes,
            stream.cu_stream(),
        )
    }
    .result()
    .map_err(Error::driver("uploading the groups' arguments"))
}

/// Enqueues what fills the block on the device (the setup kernel, if any), the workspace fills and
/// the grouped kernel.
///
/// # Safety
/// As [`upload_block`]; the operands `built` names are live device memory.
pub(crate) unsafe fn issue(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    built: &Built,
) -> Result<(), Error> {
    if let Upload::Setup(setup) = &built.upload {
        unsafe { enqueue_setup(info, stream, setup)? };
    }
    let workspace = built.base + built.layout.bytes as u64;
    unsafe { crate::launch::enqueue_prepared(info, info.entry, stream, device, &built.prepared, workspace) }
}

/// Stream-ordered, with memory from the per-stream cache: argument block (upload or setup kernel),
/// workspace fills, the grouped kernel. The cache stays locked until everything is enqueued
/// (Params embed its address). Refused while the stream is being captured into a CUDA graph
/// (see [`crate::workspace`]): a [`super::PreparedLaunch`] owns its memory.
///
/// # Safety
/// As [`super::launch_raw`]; the stream's context is current.
pub(crate) unsafe fn enqueue(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    args: abi::cutlass_aot_grouped_args,
    upload: Upload,
    layout: BlockLayout,
) -> Result<(), Error> {
    if crate::workspace::capturing(stream) {
        return Err(Error::invalid(
            "grouped",
            "the stream is being captured into a CUDA graph: a grouped launch's argument block comes from \
             the per-stream cache and a host copy; prepare the launch first (grouped::prepare_raw, \
             grouped::prepare_moe), which owns its memory",
        ));
    }
    let mut workspaces = crate::workspace::lock();
    let current = workspaces.current(stream);
    let built = unsafe {
        build(info, stream, args, upload, layout, current, &mut |bytes| {
            workspaces.at_least(stream, bytes)
        })
    }?;
    unsafe { upload_block(stream, &built)? };
    unsafe { issue(info, stream, device, &built) }
}

/// Arguments that build Params without a workspace (to learn a 2.x kernel's block and shared
/// memory before its occupancy is known): one CTA, one empty group known on the host (so that a
/// host-schedule kernel has nothing to precompute either).
fn probe_args(args: &abi::cutlass_aot_grouped_args) -> abi::cutlass_aot_grouped_args {
    static EMPTY: abi::cutlass_aot_gemm_coord = abi::cutlass_aot_gemm_coord { m: 0, n: 0, k: 0 };
    let mut probe = *args;
    probe.group_count = 1;
    probe.threadblock_count = 1;
    probe.host_problems = &EMPTY;
    probe.arrays = BlockLayout::new(1).arrays(256);
    probe.workspace = std::ptr::null_mut();
    probe.workspace_capacity = 0;
    probe.host_workspace = std::ptr::null_mut();
    probe
}

/// Enqueues `cutlass_aot_grouped_setup` (from `info`'s image) on `stream`.
///
/// # Safety
/// `setup`'s addresses are live device memory as its documentation says.
unsafe fn enqueue_setup(
    info: &'static KernelInfo,
    stream: &CudaStream,
    setup: &abi::cutlass_aot_grouped_setup_args,
) -> Result<(), Error> {
    let function = info
        .image
        .function(stream.context(), crate::kernel::GROUPED_SETUP_ENTRY, info.name, 0)?;
    let bytes = std::mem::size_of::<abi::cutlass_aot_grouped_setup_args>();
    if function.param_bytes != bytes {
        return Err(Error::AbiMismatch {
            kernel: info.name,
            message: format!(
                "the setup kernel takes {} bytes of parameters, the host struct is {bytes}",
                function.param_bytes
            ),
        });
    }
    let threads = 256u32;
    let launch = abi::cutlass_aot_launch {
        grid: [(setup.group_count.max(1) as u32).div_ceil(threads), 1, 1],
        block: [threads, 1, 1],
        cluster: [1, 1, 1],
        params_bytes: bytes as u32,
        ..Default::default()
    };
    unsafe {
        crate::launch::enqueue(
            function.function.cu_function(),
            stream.cu_stream(),
            &launch,
            (setup as *const abi::cutlass_aot_grouped_setup_args).cast(),
            0,
        )
    }
}
