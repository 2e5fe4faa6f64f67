//! The one error type of the runtime: every failure says what was wrong and what would be right.

use std::fmt;

use cudarc::driver::DriverError;

/// Why a kernel could not be launched (nothing was launched when this is returned).
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// No NVIDIA driver could be loaded (`libcuda.so`), so no GPU work is possible.
    NoDriver,
    /// The driver is present but reports no device with this ordinal.
    NoDevice { ordinal: usize, count: usize },
    /// The crate was built without nvcc (`CUTLASS_AOT_NO_NVCC` or `DOCS_RS`): no device code.
    NotBuilt { kernel: &'static str },
    /// The arguments do not describe a valid problem for this kernel.
    InvalidArgument { kernel: &'static str, message: String },
    /// The kernel cannot run on this device (for example too old a compute capability).
    UnsupportedDevice { kernel: &'static str, message: String },
    /// The compiled kernel and the host code disagree (a build defect; please report it).
    AbiMismatch { kernel: &'static str, message: String },
    /// A CUDA driver call failed.
    Driver {
        context: &'static str,
        error: DriverError,
    },
}

impl Error {
    /// An [`Error::InvalidArgument`] of `kernel` (or of the function wrapping it): also for crates
    /// that check their own arguments before running kernels through this one.
    pub fn invalid(kernel: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            kernel,
            message: message.into(),
        }
    }

    pub(crate) fn driver(context: &'static str) -> impl FnOnce(DriverError) -> Error {
        move |error| Error::Driver { context, error }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver => write!(
                f,
                "no NVIDIA driver found (libcuda.so could not be loaded): this machine cannot run GPU kernels; \
                 install the NVIDIA driver (CUDA 13.0 / driver 580 or newer) on a machine with an NVIDIA GPU"
            ),
            Error::NoDevice { ordinal, count } => write!(
                f,
                "no CUDA device with ordinal {ordinal}: the driver reports {count} device(s)"
            ),
            Error::NotBuilt { kernel } => write!(
                f,
                "kernel {kernel} has no device code: this crate was built without nvcc \
                 (CUTLASS_AOT_NO_NVCC or DOCS_RS was set); rebuild without them to run kernels"
            ),
            Error::InvalidArgument { kernel, message } => write!(f, "{kernel}: {message}"),
            Error::UnsupportedDevice { kernel, message } => write!(f, "{kernel}: {message}"),
            Error::AbiMismatch { kernel, message } => write!(
                f,
                "{kernel}: host code and device code disagree ({message}); this is a cutlass-aot build defect"
            ),
            Error::Driver { context, error } => write!(f, "CUDA driver error while {context}: {error}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Driver { error, .. } => Some(error),
            _ => None,
        }
    }
}
