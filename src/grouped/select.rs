//! Picking a grouped kernel for a grouped problem: among the plain grouped kernels that support
//! it (CUTLASS 3.x kernels first on Hopper, where they measured about twice the 2.x kernels'
//! rate), the lowest estimated cost.
//!
//! Cost = the average work per multiprocessor in output-tile steps, at least one tile's K loop:
//! Σ_g CTAs_g · tile_m · tile_n · k_g / SMs, where CTAs_g counts the tiles of group g padded to
//! whole clusters (a 2x1 cluster over a group of one M tile runs a second, idle CTA — measured
//! 0.65× on DeepSeek-V3's 128-row experts), times the per-tile efficiency penalty of GEMM dispatch
//! (`1 + 32/tile_m + 32/tile_n`: small tiles re-read more operands per flop). Ties go to
//! manifest order. (`bench/results/h100_2026-11-23_issue11_grouped_compare.txt` has every
//! grouped kernel on the MoE workloads.)

use cudarc::driver::CudaStream;

use super::{with_group_operands, GroupOf, GroupShape, GroupedProblem};
use crate::device;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::OperationKind;
use crate::registry::Registry;
use crate::types::{Element, LayoutTag};

/// The estimated cost of `kernel` on `groups` (see the module documentation); the unit is one
/// multiply-add per SM.
pub fn estimated_cost(kernel: &KernelInfo, groups: &[GroupShape], multiprocessors: u32) -> f64 {
    let (t, c) = (kernel.tile(), kernel.design.cluster());
    let (tm, tn) = (t.m.max(1) as f64, t.n.max(1) as f64);
    let (cm, cn) = (c.m.max(1) as f64, c.n.max(1) as f64);
    let mut work = 0.0;
    let mut longest = 0.0f64;
    for g in groups.iter().filter(|g| !g.is_empty()) {
        let ctas = (g.m as f64 / (tm * cm)).ceil() * cm * (g.n as f64 / (tn * cn)).ceil() * cn;
        let tile = tm * tn * g.k as f64;
        work += ctas * tile;
        longest = longest.max(tile);
    }
    let per_sm = (work / multiprocessors.max(1) as f64).max(longest);
    per_sm * (1.0 + 32.0 / tm + 32.0 / tn)
}

/// The grouped kernel of `registry` to run `problem` on a device of `multiprocessors` SMs, or why
/// none can. `problem.groups` may be `None` (extents on the device): the kernel is then picked as
/// for `experts` uniform groups of `rows` each, where `typical` gives (rows, n, k).
pub fn select(
    registry: &Registry,
    problem: &GroupedProblem,
    multiprocessors: u32,
    typical: Option<(usize, usize, usize)>,
) -> Result<&'static KernelInfo, Error> {
    let candidates: Vec<&'static KernelInfo> = registry
        .filter(|k| k.operation.kind() == OperationKind::GemmGrouped && k.is_plain())
        .filter(|k| k.supports(problem).is_ok())
        .collect();
    // Hopper kernels first where they run.
    let best_api = candidates.iter().map(|k| k.api()).max();
    let assumed;
    let groups = match (&problem.groups, typical) {
        (Some(groups), _) => groups.as_slice(),
        (None, Some((rows, n, k))) => {
            assumed = vec![GroupShape::new(rows, n, k); problem.group_count];
            assumed.as_slice()
        }
        (None, None) => &[],
    };
    let mut best: Option<(&'static KernelInfo, f64)> = None;
    for k in candidates.into_iter().filter(|k| Some(k.api()) == best_api) {
        let cost = estimated_cost(k, groups, multiprocessors);
        if best.map_or(true, |(_, c)| cost < c) {
            best = Some((k, cost));
        }
    }
    best.map(|(k, _)| k).ok_or_else(|| no_kernel(registry, problem))
}

/// Why no grouped kernel runs `problem`. Kernels of other types or layouts explain nothing: when
/// no kernel has the problem's, the message says so and lists the signatures there are; otherwise
/// each distinct reason of the kernels that have them, once, with how many kernels it excludes.
fn no_kernel(registry: &Registry, problem: &GroupedProblem) -> Error {
    let grouped: Vec<&'static KernelInfo> = registry
        .filter(|k| k.operation.kind() == OperationKind::GemmGrouped)
        .collect();
    let signature = |k: &KernelInfo| {
        let g = k.gemm();
        format!(
            "{}/{}/{} {}{}{}",
            g.a.element,
            g.b.element,
            g.c.element,
            g.a.layout.letter(),
            g.b.layout.letter(),
            g.c.layout.letter()
        )
    };
    let same_types = |k: &KernelInfo| {
        let g = k.gemm();
        (g.a.element, g.b.element, g.c.element) == (problem.element_a, problem.element_b, problem.element_c)
            && (g.a.layout, g.b.layout, g.c.layout) == (problem.layout_a, problem.layout_b, problem.layout_c)
    };
    let mut counted: Vec<(String, usize)> = Vec::new();
    for k in grouped.iter().filter(|k| same_types(k)) {
        let reasons = match k.supports(problem) {
            Err(why) => why.reasons,
            // It runs the problem but computes more than asked.
            Ok(()) => {
                vec!["the kernel fuses an activation or clamp the problem does not ask for".to_string()]
            }
        };
        for reason in reasons {
            match counted.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => counted.push((reason, 1)),
            }
        }
    }
    let message = if grouped.is_empty() {
        "this binary has no grouped kernels; build with `--features grouped` (or add `kind: gemm_grouped` \
         entries to the manifest)"
            .to_string()
    } else if counted.is_empty() {
        let mut signatures: Vec<String> = grouped.iter().map(|k| signature(k)).collect();
        signatures.sort();
        signatures.dedup();
        format!(
            "no grouped kernel takes A {} {}-major, B {} {}-major, C/D {} {}-major (this binary's grouped \
             kernels take {}); add a `kind: gemm_grouped` entry of these types to the manifest",
            problem.element_a,
            problem.layout_a,
            problem.element_b,
            problem.layout_b,
            problem.element_c,
            problem.layout_c,
            signatures.join(", ")
        )
    } else {
        counted
            .iter()
            .map(|(reason, n)| format!("{reason} ({n} kernel{})", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Error::InvalidArgument {
        kernel: "grouped dispatch",
        message: format!("no grouped kernel can run this problem: {message}"),
    }
}

/// D_g = alpha·A_g·B_g + beta·C_g for every group, on the kernel [`select`] picks from this crate's
/// registry; returns the kernel that ran. Groups without C need beta = 0.
pub fn run<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    stream: &CudaStream,
    groups: Vec<GroupOf<'_, A, B, C, LA, LB, LC>>,
    alpha: f64,
    beta: f64,
) -> Result<&'static KernelInfo, Error> {
    run_with(&crate::kernels::REGISTRY, stream, groups, alpha, beta)
}

/// [`run`] over the kernels of `registry` (a downstream crate's own).
pub fn run_with<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    registry: &Registry,
    stream: &CudaStream,
    mut groups: Vec<GroupOf<'_, A, B, C, LA, LB, LC>>,
    alpha: f64,
    beta: f64,
) -> Result<&'static KernelInfo, Error> {
    let props = device::props(stream.context())?;
    let shapes = groups
        .iter()
        .map(|g| GroupShape::new(g.a.shape.rows, g.b.shape.cols, g.a.shape.cols))
        .collect();
    let problem = GroupedProblem::new(
        (A::DTYPE, B::DTYPE, C::DTYPE),
        (LA::LAYOUT, LB::LAYOUT, LC::LAYOUT),
        shapes,
    )
    .on_compute_capability(props.compute_capability);
    let kernel = select(registry, &problem, props.multiprocessors, None)?;
    with_group_operands(stream, &mut groups, (alpha, beta, 0.0), |ops| {
        // SAFETY: every address comes from a live cudarc buffer of the stated length whose element
        // types are the kernel's (it supports the problem's types).
        unsafe { super::launch_raw(kernel, stream, ops) }
    })?;
    Ok(kernel)
}
