//! The kernel registry and discovery — the CUTLASS API's `get_kernels(args, metadata_filter)`:
//! every compiled kernel is listed with its metadata ([`KernelInfo`]) and can be queried by name,
//! by predicate and by problem, for every operation alike. User kernels (`kind: custom`) are
//! listed beside CUTLASS's: [`Registry::kernels`] walks both, [`Registry::user_kernels`] and
//! [`Registry::get_user_kernels`] them alone. [`Registry::all`] and [`Registry::filter`] list the
//! CUTLASS kernels, whose GEMM operands ([`KernelInfo::gemm`]) a predicate may read.

use crate::kernel::{KernelInfo, Problem};
use crate::model::OperationKind;

/// A set of kernels (generated: `cutlass_aot::kernels::REGISTRY`, or a downstream crate's own).
#[derive(Debug)]
pub struct Registry {
    kernels: &'static [&'static KernelInfo],
    user: &'static [&'static KernelInfo],
    elementwise: &'static [&'static KernelInfo],
}

impl Registry {
    /// CUTLASS kernels and user kernels, each in manifest order.
    pub const fn new(kernels: &'static [&'static KernelInfo], user: &'static [&'static KernelInfo]) -> Self {
        Registry {
            kernels,
            user,
            elementwise: &[],
        }
    }

    /// The registry with these elementwise kernels (`kind: elementwise`).
    pub const fn with_elementwise(self, elementwise: &'static [&'static KernelInfo]) -> Self {
        Registry { elementwise, ..self }
    }

    /// Every elementwise kernel, in manifest order.
    pub fn elementwise(&self) -> &'static [&'static KernelInfo] {
        self.elementwise
    }

    /// Every CUTLASS kernel, in manifest order.
    pub fn all(&self) -> &'static [&'static KernelInfo] {
        self.kernels
    }

    /// Every user kernel (`kind: custom`), in manifest order.
    pub fn user_kernels(&self) -> &'static [&'static KernelInfo] {
        self.user
    }

    /// Every kernel: CUTLASS's GEMM-shaped ones, the elementwise ones, then the user's.
    pub fn kernels(&self) -> impl Iterator<Item = &'static KernelInfo> {
        self.kernels
            .iter()
            .chain(self.elementwise)
            .chain(self.user)
            .copied()
    }

    /// The kernel (CUTLASS's or a user's) with this library name or Rust name.
    pub fn by_name(&self, name: &str) -> Option<&'static KernelInfo> {
        self.kernels().find(|k| k.name == name || k.rust_name == name)
    }

    /// CUTLASS kernels matching a metadata predicate (the CUTLASS API's `metadata_filter`).
    pub fn filter<'s>(
        &'s self,
        predicate: impl Fn(&KernelInfo) -> bool + 's,
    ) -> impl Iterator<Item = &'static KernelInfo> + 's {
        self.kernels.iter().copied().filter(move |k| predicate(k))
    }

    /// Kernels of the problem's operation that support `problem` and match `predicate` (the
    /// CUTLASS API's `get_kernels`), for a problem of any operation. The predicate sees only
    /// kernels of that operation (a GEMM problem's predicate may read `k.gemm()`).
    pub fn get_kernels<'s, P: Problem>(
        &'s self,
        problem: &'s P,
        predicate: impl Fn(&KernelInfo) -> bool + 's,
    ) -> impl Iterator<Item = &'static KernelInfo> + 's {
        let list = match problem.operation() {
            OperationKind::Elementwise => self.elementwise,
            OperationKind::Custom => self.user,
            _ => self.kernels,
        };
        let operation = problem.operation();
        list.iter()
            .copied()
            .filter(move |k| k.operation.kind() == operation && predicate(k) && k.supports(problem).is_ok())
    }

    /// User kernels that support `args` and match `predicate` (a filter on their operation,
    /// parameters and design values: `k.tile().m == 32`,
    /// `k.design.as_custom().and_then(|d| d.value("layout_a"))`, ...).
    pub fn get_user_kernels<'s>(
        &'s self,
        args: &'s crate::custom::Args<'_>,
        predicate: impl Fn(&KernelInfo) -> bool + 's,
    ) -> impl Iterator<Item = &'static KernelInfo> + 's {
        self.user
            .iter()
            .copied()
            .filter(move |k| predicate(k) && k.supports(args).is_ok())
    }
}
