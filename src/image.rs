//! Embedded fatbin images, loaded lazily once per CUDA context (thread-safe).
//!
//! A loaded module keeps its context alive (cudarc modules hold an `Arc` of it), so the context
//! address is a stable key for the life of the process.

use std::ffi::CStr;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use crate::error::Error;

/// One compiled translation unit: the fatbin of several kernels.
pub struct Image {
    name: &'static str,
    fatbin: Option<&'static [u8]>,
    loaded: Mutex<Vec<LoadedImage>>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("name", &self.name)
            .field("bytes", &self.fatbin.map_or(0, |b| b.len()))
            .finish()
    }
}

struct LoadedImage {
    context: usize,
    module: Arc<CudaModule>,
    functions: Vec<(&'static CStr, LoadedFunction)>,
}

/// A kernel function ready to launch in one context.
#[derive(Clone, Debug)]
pub(crate) struct LoadedFunction {
    pub function: CudaFunction,
    /// The kernel's parameter size as the driver reports it (`sizeof(Params)` on the device side)
    /// when it takes one parameter, as CUTLASS entries do; 0 otherwise.
    pub param_bytes: usize,
    /// Every parameter's (offset, size) in the parameter space, as the driver reports them.
    pub params: Vec<(usize, usize)>,
    /// Dynamic shared memory the function has been allowed so far.
    pub shared_memory_limit: u32,
    /// Resident blocks per multiprocessor, once asked for (block size, shared memory, count).
    occupancy: Option<(u32, u32, u32)>,
}

impl LoadedFunction {
    /// How many blocks of `block` threads with `shared_memory` bytes of dynamic shared memory
    /// fit on one multiprocessor at once (the driver's occupancy calculator).
    pub(crate) fn occupancy(&self, block: u32, shared_memory: u32) -> Result<u32, Error> {
        if let Some((b, s, count)) = self.occupancy {
            if (b, s) == (block, shared_memory) {
                return Ok(count);
            }
        }
        let mut count = 0i32;
        // SAFETY: valid function handle; out-pointer to a local.
        unsafe {
            cudarc::driver::sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut count,
                self.function.cu_function(),
                block as i32,
                shared_memory as usize,
            )
        }
        .result()
        .map_err(Error::driver("asking the driver for the kernel's occupancy"))?;
        Ok(count.max(0) as u32)
    }
}

impl Image {
    /// `fatbin` is `None` when the crate was built without nvcc.
    pub const fn new(name: &'static str, fatbin: Option<&'static [u8]>) -> Self {
        Image {
            name,
            fatbin,
            loaded: Mutex::new(Vec::new()),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn has_code(&self) -> bool {
        self.fatbin.is_some()
    }

    /// Size of the embedded fatbin in bytes.
    pub fn size(&self) -> usize {
        self.fatbin.map_or(0, <[u8]>::len)
    }

    /// The function `entry` in `ctx`, loading the image on first use, with at least
    /// `shared_memory` bytes of dynamic shared memory allowed.
    pub(crate) fn function(
        &self,
        ctx: &Arc<CudaContext>,
        entry: &'static CStr,
        kernel: &'static str,
        shared_memory: u32,
    ) -> Result<LoadedFunction, Error> {
        let function = self.any_function(ctx, entry, kernel, shared_memory)?;
        if function.params.len() != 1 {
            return Err(Error::AbiMismatch {
                kernel,
                message: format!(
                    "the kernel entry does not take exactly one Params argument (the driver reports {} \
                     parameters: (offset, bytes) {:?})",
                    function.params.len(),
                    function.params
                ),
            });
        }
        Ok(function)
    }

    /// [`Image::function`] for an entry of any parameter list (a user kernel's).
    pub(crate) fn any_function(
        &self,
        ctx: &Arc<CudaContext>,
        entry: &'static CStr,
        kernel: &'static str,
        shared_memory: u32,
    ) -> Result<LoadedFunction, Error> {
        let key = ctx.cu_ctx() as usize;
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let image_index = match loaded.iter().position(|l| l.context == key) {
            Some(index) => index,
            None => {
                let bytes = self.fatbin.ok_or(Error::NotBuilt { kernel })?;
                let module = ctx
                    .load_module(Ptx::from_binary(bytes.to_vec()))
                    .map_err(Error::driver(
                        "loading the kernel image (is the GPU older than the image's SASS targets?)",
                    ))?;
                loaded.push(LoadedImage {
                    context: key,
                    module,
                    functions: Vec::new(),
                });
                loaded.len() - 1
            }
        };
        let image = &mut loaded[image_index];
        let function_index = match image.functions.iter().position(|(name, _)| *name == entry) {
            Some(index) => index,
            None => {
                let name = entry.to_str().map_err(|_| Error::AbiMismatch {
                    kernel,
                    message: format!("the entry name {entry:?} is not UTF-8"),
                })?;
                let function = image.module.load_function(name).map_err(|error| {
                    if matches!(error.0, cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_FOUND) {
                        Error::AbiMismatch {
                            kernel,
                            message: format!(
                                "its image has no kernel named `{name}` (is the entry declared \
                                 `extern \"C\" __global__`? a C++ name is mangled)"
                            ),
                        }
                    } else {
                        Error::driver("looking up the kernel in its image")(error)
                    }
                })?;
                let params = param_info(&function)?;
                let param_bytes = match params.as_slice() {
                    [(_, size)] => *size,
                    _ => 0,
                };
                image.functions.push((
                    entry,
                    LoadedFunction {
                        function,
                        param_bytes,
                        params,
                        shared_memory_limit: 48 * 1024,
                        occupancy: None,
                    },
                ));
                image.functions.len() - 1
            }
        };
        let slot = &mut image.functions[function_index].1;
        if shared_memory > slot.shared_memory_limit {
            // Above 48 KiB a kernel must opt in to its dynamic shared memory.
            slot.function
                .set_attribute(
                    cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_memory as i32,
                )
                .map_err(Error::driver("raising the kernel's dynamic shared memory limit"))?;
            slot.shared_memory_limit = shared_memory;
        }
        Ok(slot.clone())
    }

    /// [`LoadedFunction::occupancy`] of `entry` in `ctx`, computed once per context and kept.
    pub(crate) fn occupancy(
        &self,
        ctx: &Arc<CudaContext>,
        entry: &'static CStr,
        kernel: &'static str,
        (block, shared_memory): (u32, u32),
    ) -> Result<u32, Error> {
        let function = self.function(ctx, entry, kernel, shared_memory)?;
        let count = function.occupancy(block, shared_memory)?;
        let key = ctx.cu_ctx() as usize;
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(slot) = loaded
            .iter_mut()
            .filter(|l| l.context == key)
            .flat_map(|l| l.functions.iter_mut())
            .find(|(name, _)| *name == entry)
        {
            slot.1.occupancy = Some((block, shared_memory, count));
        }
        Ok(count)
    }
}

/// Every parameter's (offset, size), from the driver (it numbers them until one is out of range).
fn param_info(function: &CudaFunction) -> Result<Vec<(usize, usize)>, Error> {
    let mut params = Vec::new();
    loop {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: valid function handle; out-pointers to locals.
        let status = unsafe {
            cudarc::driver::sys::cuFuncGetParamInfo(
                function.cu_function(),
                params.len(),
                &mut offset,
                &mut size,
            )
        };
        match status {
            cudarc::driver::sys::CUresult::CUDA_SUCCESS => params.push((offset, size)),
            // Past the last parameter (or none at all).
            cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Ok(params),
            other => {
                return Err(Error::driver("reading the kernel's parameters")(
                    cudarc::driver::DriverError(other),
                ))
            }
        }
    }
}
