//! The last step of the pipeline: enqueue a prepared kernel on the caller's stream — its workspace
//! fills first, then the kernel itself, as a plain launch or, for thread-block clusters, through
//! `cuLaunchKernelEx` with the cluster-dimension attribute.

use std::ffi::c_void;

use cudarc::driver::{result, sys, CudaStream};

use crate::abi;
use crate::device;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::params::Prepared;

/// Enqueues `launch`'s workspace fills (at `workspace`) and then the kernel `function` with the
/// single argument at `params`.
///
/// # Safety
/// `function` must take exactly one parameter of `launch.params_bytes` bytes, which `params` points
/// to; `workspace` must hold `launch.workspace_bytes` bytes when that is non-zero; the stream's
/// context must be current on this thread.
pub(crate) unsafe fn enqueue(
    function: sys::CUfunction,
    cu_stream: sys::CUstream,
    launch: &abi::cutlass_aot_launch,
    params: *const u8,
    workspace: sys::CUdeviceptr,
) -> Result<(), Error> {
    let fills = &launch.fills[..(launch.fill_count as usize).min(launch.fills.len())];
    for fill in fills {
        let at = workspace + fill.offset;
        let count = fill.count as usize;
        let status = match fill.element_bytes {
            1 => unsafe { sys::cuMemsetD8Async(at, fill.value as u8, count, cu_stream) },
            2 => unsafe { sys::cuMemsetD16Async(at, fill.value as u16, count, cu_stream) },
            _ => unsafe { sys::cuMemsetD32Async(at, fill.value, count, cu_stream) },
        };
        status
            .result()
            .map_err(Error::driver("clearing the kernel's workspace"))?;
    }
    let mut kernel_params = [params as *mut c_void];
    let [gx, gy, gz] = launch.grid;
    let [bx, by, bz] = launch.block;
    if launch.cluster == [1, 1, 1] {
        return unsafe {
            result::launch_kernel(
                function,
                (gx, gy, gz),
                (bx, by, bz),
                launch.shared_mem_bytes,
                cu_stream,
                &mut kernel_params,
            )
        }
        .map_err(Error::driver("launching the kernel"));
    }
    let mut attribute = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value: unsafe { std::mem::zeroed() },
    };
    let [cx, cy, cz] = launch.cluster;
    attribute.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x: cx, y: cy, z: cz };
    let config = sys::CUlaunchConfig {
        gridDimX: gx,
        gridDimY: gy,
        gridDimZ: gz,
        blockDimX: bx,
        blockDimY: by,
        blockDimZ: bz,
        sharedMemBytes: launch.shared_mem_bytes,
        hStream: cu_stream,
        attrs: &mut attribute,
        numAttrs: 1,
    };
    unsafe {
        sys::cuLaunchKernelEx(
            &config,
            function,
            kernel_params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .map_err(Error::driver("launching the kernel with thread-block clusters"))
}

/// Checks the prepared launch of `entry` (the kernel's, or its reduction's) against the device and
/// the loaded function, then enqueues it.
///
/// # Safety
/// As [`crate::gemm::launch_raw`]; `workspace` holds `prepared.launch.workspace_bytes` bytes.
pub(crate) unsafe fn enqueue_prepared(
    info: &'static KernelInfo,
    entry: &'static std::ffi::CStr,
    stream: &CudaStream,
    device: &device::DeviceProps,
    prepared: &Prepared,
    workspace: u64,
) -> Result<(), Error> {
    unsafe {
        enqueue_prepared_on(
            info,
            entry,
            stream,
            stream.cu_stream(),
            device,
            prepared,
            workspace,
        )
    }
}

/// [`enqueue_prepared`] on `on`, a stream of `stream`'s context other than `stream` (a side stream
/// of [`crate::side_streams`]).
///
/// # Safety
/// As [`enqueue_prepared`]; `on` belongs to `stream`'s context.
pub(crate) unsafe fn enqueue_prepared_on(
    info: &'static KernelInfo,
    entry: &'static std::ffi::CStr,
    stream: &CudaStream,
    on: sys::CUstream,
    device: &device::DeviceProps,
    prepared: &Prepared,
    workspace: u64,
) -> Result<(), Error> {
    let launch = &prepared.launch;
    if launch.shared_mem_bytes > device.max_shared_memory_per_block_optin {
        return Err(Error::UnsupportedDevice {
            kernel: info.name,
            message: format!(
                "needs {} bytes of shared memory per block; this device allows {}",
                launch.shared_mem_bytes, device.max_shared_memory_per_block_optin
            ),
        });
    }
    let function = info
        .image
        .function(stream.context(), entry, info.name, launch.shared_mem_bytes)?;
    if function.param_bytes != launch.params_bytes as usize {
        return Err(Error::AbiMismatch {
            kernel: info.name,
            message: format!(
                "host Params are {} bytes, the device kernel takes {}",
                launch.params_bytes, function.param_bytes
            ),
        });
    }
    // SAFETY: the function takes exactly one parameter of `param_bytes` bytes (checked above),
    // which `prepare` wrote; every pointer inside was checked against its buffer's extent.
    unsafe {
        crate::launch::enqueue(
            function.function.cu_function(),
            on,
            launch,
            prepared.params_ptr(),
            workspace,
        )
    }
}

/// Enqueues the prepared kernel and, where it has one, the reduction that follows it (parallel
/// split-K), whose Params `reduction.1` builds from the kernel's own `args`. Both Params are built
/// before anything is enqueued, so that an error leaves nothing half-launched.
///
/// # Safety
/// As [`enqueue_prepared`]; `workspace` is (address, capacity) of the memory `prepared` (and the
/// reduction) were built with.
pub(crate) unsafe fn enqueue_with_reduction<A>(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    prepared: &Prepared,
    reduction: Option<(&'static std::ffi::CStr, crate::params::PrepareFn<A>, &A, bool)>,
    (address, capacity): (u64, usize),
) -> Result<(), Error> {
    let Some((entry, prepare, args, has_encoder)) = reduction else {
        return unsafe { enqueue_prepared(info, info.entry, stream, device, prepared, address) };
    };
    let reduce = crate::params::run_prepare(info, prepare, args, has_encoder)?.map_err(|needed| {
        Error::AbiMismatch {
            kernel: info.name,
            message: format!(
                "the split-K reduction asked for {needed} bytes of workspace with {capacity} given"
            ),
        }
    })?;
    unsafe { enqueue_prepared(info, info.entry, stream, device, prepared, address)? };
    unsafe { enqueue_prepared(info, entry, stream, device, &reduce, address) }
}
