//! The message when no kernel of a build can run a problem: a handful of lines a person can act
//! on, not every kernel with every reason.
//!
//! Dispatch stages operands that no kernel reads as they lie (layouts, alignment, padding), so what
//! is left is what staging cannot change: the operand types, the device's architecture, the
//! accuracy policy, batch limits. The message names the problem, each distinct reason with the
//! number of kernels it excludes (most first), and the nearest kernel — the one excluded by the
//! fewest reasons — with its manifest entry, which is where a fix (a new entry like it) starts.

use std::collections::HashMap;

use super::Policy;
use crate::error::Error;
use crate::gemm::GemmProblem;
use crate::model::OperationKind;
use crate::registry::Registry;

/// Distinct reasons shown, most frequent first.
const SHOWN_REASONS: usize = 6;

pub(super) fn no_kernel(registry: &Registry, problem: &GemmProblem, policy: Policy) -> Error {
    let p = problem;
    let mut lines = vec![format!(
        "no kernel of this build can run D = A·B ({}x{}x{}, batch {}; A {} {}-major, B {} {}-major, C/D {} {}-major)",
        p.m, p.n, p.k, p.batch_count, p.element_a, p.layout_a, p.element_b, p.layout_b, p.element_c, p.layout_c
    )];
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    // (reasons, kernel) of the kernel excluded by the fewest reasons.
    let mut nearest: Option<(Vec<String>, &'static crate::KernelInfo)> = None;
    let gemm_kernels: Vec<_> = registry
        .all()
        .iter()
        .copied()
        .filter(|k| k.operation.kind() == OperationKind::Gemm)
        .collect();
    for kernel in &gemm_kernels {
        let mut reasons = match kernel.supports(problem) {
            Ok(()) => Vec::new(),
            Err(unsupported) => unsupported.reasons,
        };
        if !super::dispatchable(kernel) {
            reasons.push(
                "dispatch does not pick it (a fused epilogue, f32 rounded to f16/bf16, or parallel split-K): \
                 call it by name"
                    .to_string(),
            );
        } else if !policy.allows(kernel) {
            reasons.push(
                "it rounds f32 operands to TF32; allow it with Policy { allow_tf32: true }".to_string(),
            );
        }
        for reason in &reasons {
            let count = counts.entry(reason.clone()).or_insert(0);
            if *count == 0 {
                order.push(reason.clone());
            }
            *count += 1;
        }
        let closer = match &nearest {
            None => true,
            Some((fewest, _)) => reasons.len() < fewest.len(),
        };
        if !reasons.is_empty() && closer {
            nearest = Some((reasons, kernel));
        }
    }
    if gemm_kernels.is_empty() {
        lines.push("  the build has no GEMM kernels: add some to the manifest".into());
    }
    order.sort_by_key(|reason| std::cmp::Reverse(counts[reason]));
    for reason in order.iter().take(SHOWN_REASONS) {
        let count = counts[reason];
        let kernels = if count == 1 { "kernel" } else { "kernels" };
        lines.push(format!("  - {reason} ({count} {kernels})"));
    }
    if order.len() > SHOWN_REASONS {
        lines.push(format!(
            "  - and {} rarer reasons (`KernelInfo::supports` lists each kernel's)",
            order.len() - SHOWN_REASONS
        ));
    }
    if let Some((reasons, kernel)) = nearest {
        lines.push(format!(
            "nearest: {} ({}), excluded only by: {}; a manifest entry like it without that would run this problem",
            kernel.rust_name,
            kernel.origin,
            reasons.join("; ")
        ));
    }
    Error::InvalidArgument {
        kernel: "dispatch",
        message: lines.join("\n"),
    }
}
