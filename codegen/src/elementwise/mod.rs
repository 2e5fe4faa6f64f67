//! Elementwise kernels (`kind: elementwise`): `d = scale·act(alpha·x ⊕ beta·y)` with the types,
//! ⊕ and activation fixed per kernel. [`read`] checks an entry and expands its families, [`cpp`]
//! emits their translation units (two entries per kernel over the glue's template,
//! `cutlass_aot/elementwise.cuh`), [`rust`] their metadata and typed `run`.

mod cpp;
mod read;
mod rust;

pub use cpp::units;
pub use read::read_entry;
pub use rust::{kernel_module, registry_entry};

use crate::model::elementwise::{ElementwiseDesign, ElementwiseOperation};

/// Threads per block and accesses per thread per loop step (the glue's `kThreads`, `kUnroll`).
pub const THREADS: u32 = 256;
pub const UNROLL: u32 = 4;

/// One elementwise kernel of the manifest, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementwiseKernel {
    /// Rust module name, also the stem of its two C entries (`<name>_vector`, `<name>_scalar`).
    pub rust_name: String,
    pub feature: Option<String>,
    /// Manifest `file:line`.
    pub origin: String,
    /// Minimum compute capability.
    pub arch: u32,
    pub operation: ElementwiseOperation,
}

impl ElementwiseKernel {
    pub fn design(&self) -> ElementwiseDesign {
        ElementwiseDesign {
            threads: THREADS,
            unroll: UNROLL,
            vector_elements: self.operation.vector_elements(),
        }
    }
}
