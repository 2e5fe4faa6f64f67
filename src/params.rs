//! Running a kernel's generated host code: its `prepare` function fills a Params buffer and a
//! launch shape. Shared by every operation (each has its own argument struct).

use std::ffi::c_void;

use crate::abi;
use crate::error::Error;
use crate::kernel::KernelInfo;

/// Params bytes are copied into a buffer this large and aligned (the driver copies exactly the
/// kernel's parameter size out of it).
pub const PARAMS_CAPACITY: usize = 4096;

#[repr(C, align(64))]
struct ParamsBuffer([u8; PARAMS_CAPACITY]);

/// Host-side result of a kernel's `prepare`: Params bytes and launch shape. Lives on the stack
/// (no allocation per call).
pub struct Prepared {
    params: ParamsBuffer,
    pub launch: abi::cutlass_aot_launch,
}

impl Prepared {
    /// The kernel's Params as bytes.
    pub fn params(&self) -> &[u8] {
        &self.params.0[..self.launch.params_bytes as usize]
    }

    pub(crate) fn params_ptr(&self) -> *const u8 {
        self.params.0.as_ptr()
    }
}

/// A generated `prepare` function over argument struct `A`.
pub(crate) type PrepareFn<A> =
    Option<unsafe extern "C" fn(*const A, *mut c_void, usize, *mut abi::cutlass_aot_launch) -> i32>;

/// Runs one of `info`'s generated prepare functions on `args`: `Ok(Err(bytes))` when the
/// workspace is too small. `has_encoder` says whether `args` carried the driver's TMA encoder (for
/// the message of a failed encode).
pub(crate) fn run_prepare<A>(
    info: &'static KernelInfo,
    prepare: PrepareFn<A>,
    args: &A,
    has_encoder: bool,
) -> Result<Result<Prepared, u64>, Error> {
    let prepare = prepare.ok_or(Error::NotBuilt { kernel: info.name })?;
    let mut prepared = Prepared {
        params: ParamsBuffer([0; PARAMS_CAPACITY]),
        launch: abi::cutlass_aot_launch::default(),
    };
    // SAFETY: the generated function reads `args`, writes at most PARAMS_CAPACITY bytes into
    // `params` (it checks the capacity) and fills `launch`.
    let status = unsafe {
        prepare(
            args,
            prepared.params.0.as_mut_ptr().cast(),
            PARAMS_CAPACITY,
            &mut prepared.launch,
        )
    };
    let (a, b, c) = {
        let g = info.gemm();
        (g.a.alignment, g.b.alignment, g.c.alignment)
    };
    use abi::cutlass_aot_status as S;
    let message = match status {
        s if s == S::CUTLASS_AOT_OK as i32 => return Ok(Ok(prepared)),
        s if s == S::CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL as i32 => {
            return Ok(Err(prepared.launch.workspace_bytes))
        }
        s if s == S::CUTLASS_AOT_ERROR_MISALIGNED_OPERAND as i32 => format!(
            "CUTLASS rejected the problem: an extent is not a multiple of the kernel's alignment (A {a}, B {b}, C {c})"
        ),
        s if s == S::CUTLASS_AOT_ERROR_INVALID_PROBLEM as i32 => format!(
            "CUTLASS's can_implement rejected the problem (extents, strides or alignment: the contiguous \
             extents, leading dimensions and batch strides of A and B must be multiples of {a} and {b} \
             elements, of C/D of {c})"
        ),
        s if s == S::CUTLASS_AOT_ERROR_NOT_SUPPORTED as i32 => {
            "CUTLASS does not support this problem in this mode (split-K slices, batch, array mode and \
             epilogue operands must fit the kernel)"
                .into()
        }
        s if s == S::CUTLASS_AOT_ERROR_GRID_TOO_LARGE as i32 => {
            "the launch grid would exceed 65535 blocks in y or z; split the problem or use a kernel with a \
             larger tile"
                .into()
        }
        s if s == S::CUTLASS_AOT_ERROR_TMA_ENCODE as i32 => {
            let code = prepared.launch.driver_error;
            if !has_encoder {
                "CUTLASS 3.x Params need the driver's TMA encoder (args.encode_tiled), which was not given".into()
            } else {
                format!(
                    "the driver refused a TMA descriptor for this problem (CUresult {code}, {}): TMA needs \
                     16-byte aligned addresses, leading dimensions and batch strides that are multiples of \
                     16 bytes and below 2^40 bytes",
                    crate::tma::driver_error_name(code)
                )
            }
        }
        s if s == S::CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE as i32 => {
            return Err(Error::AbiMismatch {
                kernel: info.name,
                message: format!("Params larger than {PARAMS_CAPACITY} bytes"),
            })
        }
        other => format!("CUTLASS internal error (status {other})"),
    };
    Err(Error::invalid(info.name, message))
}
