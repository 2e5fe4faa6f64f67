//! Finding the driver and the device, as error values: cudarc panics when it cannot load
//! `libcuda.so`, so every entry point checks for the driver first.

use std::sync::{Arc, Mutex};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::CudaContext;

use crate::error::Error;

/// Whether an NVIDIA driver (`libcuda.so`) can be loaded on this machine.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the library; no driver call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Number of CUDA devices; an error (never a panic) when there is no driver.
pub fn device_count() -> Result<usize, Error> {
    if !driver_available() {
        return Err(Error::NoDriver);
    }
    match CudaContext::device_count() {
        Ok(n) => Ok(n.max(0) as usize),
        // cuInit reports "no device" as an error.
        Err(e) if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => Ok(0),
        Err(e) => Err(Error::Driver {
            context: "initialising the driver",
            error: e,
        }),
    }
}

/// The primary context of device `ordinal`, after checking that driver and device exist.
pub fn context(ordinal: usize) -> Result<Arc<CudaContext>, Error> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::NoDevice { ordinal, count });
    }
    CudaContext::new(ordinal).map_err(Error::driver("creating the CUDA context"))
}

/// What launches need to know about a device, read once per context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceProps {
    /// The driver's name of the device (`NVIDIA H100 80GB HBM3`).
    pub name: &'static str,
    pub multiprocessors: u32,
    /// `major * 10 + minor`.
    pub compute_capability: u32,
    /// Largest dynamic shared memory a block may opt into, in bytes.
    pub max_shared_memory_per_block_optin: u32,
}

static PROPS: Mutex<Vec<(usize, DeviceProps)>> = Mutex::new(Vec::new());

/// Cached properties of the device behind `ctx`.
pub fn props(ctx: &Arc<CudaContext>) -> Result<DeviceProps, Error> {
    let key = ctx.cu_ctx() as usize;
    if let Some((_, p)) = PROPS.lock().unwrap().iter().find(|(k, _)| *k == key) {
        return Ok(*p);
    }
    let attr = |a: CUdevice_attribute| {
        ctx.attribute(a)
            .map_err(Error::driver("reading device attributes"))
    };
    use CUdevice_attribute::*;
    let props = DeviceProps {
        name: interned_name(ctx)?,
        multiprocessors: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        compute_capability: (attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
            + attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?) as u32,
        max_shared_memory_per_block_optin: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
            as u32,
    };
    PROPS.lock().unwrap().push((key, props));
    Ok(props)
}

/// Device names, leaked once per distinct name (a handful per process) so that `DeviceProps` stays
/// `Copy`.
static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn interned_name(ctx: &Arc<CudaContext>) -> Result<&'static str, Error> {
    let name = ctx.name().map_err(Error::driver("reading the device name"))?;
    let mut names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(known) = names.iter().find(|n| **n == name) {
        return Ok(known);
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.push(leaked);
    Ok(leaked)
}
