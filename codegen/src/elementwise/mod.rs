//! Elementwise kernels (`kind: elementwise`): `d = scale·act(alpha·x ⊕ beta·y)` with the types,
//! ⊕ and activation fixed per kernel. `read` checks an entry and expands its families, `cpp`
//! emits their translation units (two entries per kernel over the glue's template,
//! `cutlass_aot/elementwise.cuh`), `rust` their metadata and typed `run`.

mod cpp;
mod read;
mod rust;

pub use cpp::units;
pub use read::read_entry;
pub use rust::{kernel_module, registry_entry};

use crate::model::elementwise::{ElementwiseDesign, ElementwiseOperation};
use crate::model::Activation;

/// Threads per block (the glue's `kThreads`).
pub const THREADS: u32 = 256;

/// Accesses each thread loads before it computes, by the activation's cost: 1 where it is light and
/// the kernel is bound by memory alone (more only lengthens each block), 2 for one exp or tanh per
/// element, 4 for erf's GELU, so loads stay in flight while it computes (the glue's header has the
/// H100 measurements behind the choice).
pub fn unroll(activation: Activation) -> u32 {
    match activation {
        Activation::Gelu => 4,
        heavy if heavy.is_heavy() => 2,
        _ => 1,
    }
}

/// Accesses per thread of the scalar entry, one element each: more than the vector entry's so that
/// as many bytes are in flight (4 where the activation is light, 8 where it is heavy; measured on
/// an H100, in the glue's header).
pub fn scalar_unroll(activation: Activation) -> u32 {
    if activation.is_heavy() {
        8
    } else {
        4
    }
}

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
            unroll: unroll(self.operation.activation),
            vector_elements: self.operation.vector_elements(),
            scalar_unroll: scalar_unroll(self.operation.activation),
        }
    }
}
