//! Build-time half of cutlass-aot.
//!
//! The pipeline, one module per step:
//! [`manifest`] (read + validate YAML) → [`model`] (resolved kernels) → [`emit_cpp`] (CUTLASS C++
//! translation units) → [`compile`] (nvcc, parallel, content-addressed cache) → [`emit_rust`]
//! (typed wrappers + registry + the measured [`table`]). [`toolchain`] finds or installs nvcc and CUTLASS; [`builder`] ties
//! it together for a `build.rs`:
//!
//! ```no_run
//! // build.rs
//! cutlass_aot_build::run_build_script(&cutlass_aot_build::Builder::new("kernel_manifest.yaml"));
//! ```

pub mod builder;
pub mod compile;
pub mod custom;
pub mod elementwise;
pub mod emit_cpp;
pub mod emit_rust;
mod fsutil;
pub mod host_batch;
pub mod manifest;
pub mod model;
pub mod static_cxx;
pub mod table;
pub mod toolchain;

pub use builder::{run_build_script, BuildError, BuildSummary, Builder};
