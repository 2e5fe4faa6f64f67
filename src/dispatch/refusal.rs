//! The message when no kernel of a build can run a GEMM (see [`crate::select::refusal`]).
//!
//! Dispatch stages operands that no kernel reads as they lie (layouts, alignment, padding), so what
//! is left is what staging cannot change: the operand types, the device's architecture, the
//! accuracy policy, batch limits.

use super::Policy;
use crate::error::Error;
use crate::gemm::GemmProblem;
use crate::model::OperationKind;
use crate::registry::Registry;
use crate::select::refusal::Refusal;

pub(super) fn no_kernel(registry: &Registry, problem: &GemmProblem, policy: Policy) -> Error {
    let p = problem;
    let headline = format!(
        "no kernel of this build can run D = A·B ({}x{}x{}, batch {}; A {} {}-major, B {} {}-major, C/D {} {}-major)",
        p.m, p.n, p.k, p.batch_count, p.element_a, p.layout_a, p.element_b, p.layout_b, p.element_c, p.layout_c
    );
    let mut refusal = Refusal::new();
    for &kernel in registry
        .all()
        .iter()
        .filter(|k| k.operation.kind() == OperationKind::Gemm)
    {
        let mut reasons = match kernel.supports(problem) {
            Ok(()) => Vec::new(),
            Err(unsupported) => unsupported.reasons,
        };
        if !super::dispatchable(kernel) {
            reasons.push(
                "dispatch does not pick it (a fused epilogue, or f32 rounded to f16/bf16): call it by name"
                    .to_string(),
            );
        } else if !policy.allows(kernel) {
            reasons.push(
                "it rounds f32 operands to TF32; allow it with Policy { allow_tf32: true }".to_string(),
            );
        }
        refusal.add(kernel, reasons);
    }
    refusal.into_error(
        "dispatch",
        headline,
        "the build has no GEMM kernels: add some to the manifest",
    )
}
