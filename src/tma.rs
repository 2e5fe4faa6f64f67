//! The driver's `cuTensorMapEncodeTiled` and `cuTensorMapEncodeIm2col`, handed to CUTLASS 3.x host
//! code through the C ABI.
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
static ENCODE_IM2COL: OnceLock<usize> = OnceLock::new();

/// The driver's entry point `symbol` (looked up once into `slot`), or why there is none.
fn driver_entry(
    slot: &OnceLock<usize>,
    symbol: &'static std::ffi::CStr,
    kernel: &'static str,
) -> Result<usize, Error> {
    if let Some(&address) = slot.get() {
        return Ok(address);
    }
    let mut pfn: *mut c_void = std::ptr::null_mut();
    let mut found = sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS;
    // SAFETY: valid NUL-terminated symbol name and out-pointers to locals.
    unsafe {
        sys::cuGetProcAddress_v2(
            symbol.as_ptr(),
            &mut pfn,
            12000,
            sys::CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT as u64,
            &mut found,
        )
    }
    .result()
    .map_err(Error::driver("looking up a TMA encoder in the driver"))?;
    if pfn.is_null() || found != sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS {
        return Err(Error::UnsupportedDevice {
            kernel,
            message: format!(
                "the driver has no {} (TMA needs CUDA 12.0 or newer); update the NVIDIA driver",
                symbol.to_string_lossy()
            ),
        });
    }
    Ok(*slot.get_or_init(|| pfn as usize))
}

/// The driver's `cuTensorMapEncodeIm2col`, for `cutlass_aot_conv2d_args::encode_im2col` (CUTLASS
/// 3.x convolutions read their activation through im2col descriptors). As [`encode_tiled`].
pub fn encode_im2col(kernel: &'static str) -> Result<abi::cutlass_aot_encode_im2col_fn, Error> {
    let address = driver_entry(&ENCODE_IM2COL, c"cuTensorMapEncodeIm2col", kernel)?;
    // SAFETY: the driver's cuTensorMapEncodeIm2col has exactly this C signature (enums are ints).
    Ok(unsafe { std::mem::transmute::<usize, abi::cutlass_aot_encode_im2col_fn>(address) })
}

/// An im2col encoder that succeeds without writing a descriptor: host-only Params (a workspace's
/// size, a launch shape) without the driver. Params built with it cannot be launched.
///
/// # Safety
/// Writes and reads nothing; callable with any arguments.
pub unsafe extern "C" fn no_im2col_map(
    _: *mut c_void,
    _: i32,
    _: u32,
    _: *mut c_void,
    _: *const u64,
    _: *const u64,
    _: *const i32,
    _: *const i32,
    _: u32,
    _: u32,
    _: *const u32,
    _: i32,
    _: i32,
    _: i32,
    _: i32,
) -> i32 {
    0
}

/// The driver's `cuTensorMapEncodeTiled`, for `cutlass_aot_gemm_args::encode_tiled` when calling a
/// kernel's `prepare` directly (the launch path fills it in itself). The driver must be
/// initialised: call it with a context. `kernel` only labels the error.
pub fn encode_tiled(kernel: &'static str) -> Result<abi::cutlass_aot_encode_tiled_fn, Error> {
    let address = driver_entry(&ENCODE_TILED, c"cuTensorMapEncodeTiled", kernel)?;
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
