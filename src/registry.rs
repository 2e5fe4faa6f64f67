//! The kernel registry and discovery — the CUTLASS API's `get_kernels(args, metadata_filter)`:
//! every compiled kernel is listed with its metadata ([`KernelInfo`]) and can be queried by name,
//! by predicate and by problem, for every operation alike.

use crate::kernel::{KernelInfo, Problem};

/// A set of kernels (generated: `cutlass_aot::kernels::REGISTRY`, or a downstream crate's own).
#[derive(Debug)]
pub struct Registry {
    kernels: &'static [&'static KernelInfo],
}

impl Registry {
    pub const fn new(kernels: &'static [&'static KernelInfo]) -> Self {
        Registry { kernels }
    }

    /// Every kernel, in manifest order.
    pub fn all(&self) -> &'static [&'static KernelInfo] {
        self.kernels
    }

    /// The kernel with this CUTLASS library name or Rust name.
    pub fn by_name(&self, name: &str) -> Option<&'static KernelInfo> {
        self.kernels
            .iter()
            .copied()
            .find(|k| k.name == name || k.rust_name == name)
    }

    /// Kernels matching a metadata predicate (the CUTLASS API's `metadata_filter`).
    pub fn filter<'s>(
        &'s self,
        predicate: impl Fn(&KernelInfo) -> bool + 's,
    ) -> impl Iterator<Item = &'static KernelInfo> + 's {
        self.kernels.iter().copied().filter(move |k| predicate(k))
    }

    /// Kernels that support `problem` and match `predicate` (the CUTLASS API's `get_kernels`), for
    /// a problem of any operation.
    pub fn get_kernels<'s, P: Problem>(
        &'s self,
        problem: &'s P,
        predicate: impl Fn(&KernelInfo) -> bool + 's,
    ) -> impl Iterator<Item = &'static KernelInfo> + 's {
        self.filter(predicate)
            .filter(move |k| k.supports(problem).is_ok())
    }
}
