//! The driver's `cuTensorMapEncodeTiled`, handed to CUTLASS 3.x host code through the C ABI.
//!
//! CUTLASS builds TMA descriptors inside `to_underlying_arguments`; the glue routes that call to the
//! function pointer in `cutlass_aot_gemm_args::encode_tiled` (see `gemm_3x.cuh`). The pointer is the
//! driver's own entry point, looked up once, so the C++ side calls the driver directly with its
//! exact C signature.

use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::driver::sys;

use crate::abi;
use crate::error::Error;

static ENCODE_TILED: OnceLock<usize> = OnceLock::new();

/// The driver's `cuTensorMapEncodeTiled`, for `cutlass_aot_gemm_args::encode_tiled` when calling a
/// kernel's `prepare` directly (the launch path fills it in itself). The driver must be
/// initialised: call it with a context. `kernel` only labels the error.
pub fn encode_tiled(kernel: &'static str) -> Result<abi::cutlass_aot_encode_tiled_fn, Error> {
    let address = match ENCODE_TILED.get() {
        Some(&address) => address,
        None => {
            let mut pfn: *mut c_void = std::ptr::null_mut();
            let mut found = sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS;
            // SAFETY: valid NUL-terminated symbol name and out-pointers to locals.
            unsafe {
                sys::cuGetProcAddress_v2(
                    c"cuTensorMapEncodeTiled".as_ptr(),
                    &mut pfn,
                    12000,
                    sys::CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT as u64,
                    &mut found,
                )
            }
            .result()
            .map_err(Error::driver("looking up cuTensorMapEncodeTiled in the driver"))?;
            if pfn.is_null() || found != sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS {
                return Err(Error::UnsupportedDevice {
                    kernel,
                    message: "the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12.0 or newer); \
                              update the NVIDIA driver"
                        .into(),
                });
            }
            *ENCODE_TILED.get_or_init(|| pfn as usize)
        }
    };
    // SAFETY: the driver's cuTensorMapEncodeTiled has exactly this C signature (enums are ints).
    Ok(unsafe { std::mem::transmute::<usize, abi::cutlass_aot_encode_tiled_fn>(address) })
}

/// Names of the driver errors a refused descriptor comes with, for messages.
pub(crate) fn driver_error_name(code: i32) -> &'static str {
    match code {
        1 => "CUDA_ERROR_INVALID_VALUE",
        3 => "CUDA_ERROR_NOT_INITIALIZED",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        _ => "see cuda.h",
    }
}
