//! CUTLASS kernels compiled ahead of time: no nvcc, no CUTLASS and no JIT at run time.
//!
//! `build.rs` turns `kernel_manifest.yaml` into fatbin images embedded in this crate and one typed
//! module per kernel under [`kernels`]. At run time an image is loaded once per CUDA context, the
//! kernel's Params are built on the host and the kernel is launched on the caller's stream:
//!
//! registry ([`Registry`], [`KernelInfo::supports`]) → check ([`gemm::launch`]) → Params
//! ([`KernelInfo::prepare`]) → launch.
//!
//! Every kernel is described by one model ([`KernelInfo`]: common metadata, an
//! [`model::Operation`], a [`model::Design`] and a [`model::EpilogueSpec`]); each operation has its
//! own module ([`gemm`], [`grouped`], [`conv`]) over the shared ones (images, launch, workspaces, device).
//!
//! ```no_run
//! use cutlass_aot::{kernels, ColumnMajor, Gemm, MatrixMut, MatrixRef, RowMajor};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = cutlass_aot::device::context(0)?; // an error, not a panic, without a GPU
//! let stream = ctx.default_stream();
//! let (m, n, k) = (256, 256, 128);
//! let a = stream.alloc_zeros::<half::f16>(m * k)?;
//! let b = stream.alloc_zeros::<half::f16>(k * n)?;
//! let mut d = stream.alloc_zeros::<half::f16>(m * n)?;
//! kernels::gemm_f16_tn::run(
//!     &stream,
//!     Gemm::new(MatrixRef::new(&a, m, k), MatrixRef::new(&b, k, n), MatrixMut::new(&mut d, m, n), 1.0),
//! )?;
//! # Ok(()) }
//! ```

// Generated code names this crate `::cutlass_aot`, like a downstream crate's would.
extern crate self as cutlass_aot;

pub mod abi;
pub mod array;
pub mod conv;
pub mod custom;
pub mod device;
pub mod dispatch;
pub mod elementwise;
mod error;
pub mod gemm;
pub mod grouped;
mod image;
mod kernel;
mod launch;
mod matrix;
pub mod operations;
mod params;
mod registry;
pub mod select;
mod side_streams;
mod support;
pub mod tma;
mod types;
pub mod verify;
pub mod workspace;

pub use cudarc;
pub use cudarc::driver::{CudaSlice, CudaStream};
pub use cutlass_aot_model as model;
pub use half;

pub use array::{ArrayGemm, PointerArray, PointerArrayMut};
pub use error::Error;
pub use gemm::fusion::{self, FusedArgs, FusionOperands, VectorOperand};
pub use gemm::{Gemm, GemmKernel, GemmOperands, GemmProblem, Operand, Raster, Tuning};
pub use grouped::{Group, GroupOf, GroupShape, GroupedGemm, GroupedProblem, MoeGemm};
pub use image::Image;
pub use kernel::{HostCode, KernelInfo, Problem, SplitKReduction, Unsupported, Want};
pub use matrix::{MatrixMut, MatrixRef, MatrixShape};
pub use params::Prepared;
pub use registry::Registry;
pub use types::{
    ColumnInterleaved32, ColumnMajor, Element, LayoutTag, RowInterleaved32, RowMajor, Scalar, F8E4M3, F8E5M2,
};
pub use workspace::Workspace;

/// The kernels of this crate's `kernel_manifest.yaml`: one module per kernel, plus `REGISTRY`.
pub mod kernels {
    include!(env!("CUTLASS_AOT_KERNELS_RS"));
}
