//! Picking a grouped kernel for a grouped problem through the selection engine
//! ([`crate::select`]): every plain grouped kernel that supports it is a way; its work is one
//! launch of one piece per group (output tiles padded to whole clusters: a 2x1 cluster over a
//! group of one M tile runs a second, idle CTA — measured 0.65× on DeepSeek-V3's 128-row experts),
//! and the lowest estimate runs. (`bench/results/h100_2026-11-23_issue11_grouped_compare.txt` has
//! every grouped kernel on the MoE workloads.)

use cudarc::driver::CudaStream;

use super::{with_group_operands, GroupOf, GroupShape, GroupedProblem};
use crate::device;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::OperationKind;
use crate::registry::Registry;
use crate::select::refusal::Refusal;
use crate::select::{cost, Candidate, Context, Key, Piece, Work, NO_TABLE};
use crate::types::{Element, LayoutTag};

/// The operation's name in tables and results files.
pub const OP: &str = "gemm_grouped";

/// The work of a grouped launch over `groups` (empty groups cost nothing).
pub fn work_of(problem: &GroupedProblem, groups: &[GroupShape]) -> Work {
    let bits = [problem.element_a, problem.element_b, problem.element_c].map(|d| d.bits());
    let pieces: Vec<Piece> = groups
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| Piece::new(g.m, g.n, g.k, 1))
        .collect();
    let bytes = pieces.iter().map(|&p| cost::gemm_bytes(p, bits, false)).sum();
    Work {
        launches: vec![pieces],
        bytes,
        ..Default::default()
    }
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
    let assumed;
    let groups = match (&problem.groups, typical) {
        (Some(groups), _) => groups.as_slice(),
        (None, Some((rows, n, k))) => {
            assumed = vec![GroupShape::new(rows, n, k); problem.group_count];
            assumed.as_slice()
        }
        (None, None) => &[],
    };
    let work = work_of(problem, groups);
    let total_m: usize = groups.iter().map(|g| g.m).sum();
    let widest = |f: fn(&GroupShape) -> usize| groups.iter().map(f).max().unwrap_or(0);
    let key = Key::new(
        OP,
        [problem.element_a, problem.element_b, problem.element_c],
        Some([problem.layout_a, problem.layout_b, problem.layout_c]),
        &[problem.group_count, total_m, widest(|g| g.n), widest(|g| g.k)],
    );
    let candidates = registry
        .filter(|k| k.operation.kind() == OperationKind::GemmGrouped && k.is_plain())
        .filter(|k| k.supports(problem).is_ok())
        .map(|kernel| Candidate {
            kernel,
            split_k: 1,
            way: (),
            key,
            work: work.clone(),
            margin: 1.0,
        });
    let context = Context {
        table: &NO_TABLE,
        multiprocessors,
        work_of: &crate::operations::row_work,
    };
    context
        .choose(candidates)
        .map(|chosen| chosen.kernel)
        .ok_or_else(|| no_kernel(registry, problem))
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
    let mut refusal = Refusal::new();
    for &k in grouped.iter().filter(|k| same_types(k)) {
        let reasons = match k.supports(problem) {
            Err(why) => why.reasons,
            // It runs the problem but computes more than asked.
            Ok(()) => {
                vec!["the kernel fuses an activation or clamp the problem does not ask for".to_string()]
            }
        };
        refusal.add(k, reasons);
    }
    let headline = "no grouped kernel can run this problem".to_string();
    if grouped.is_empty() {
        return refusal.into_error(
            "grouped dispatch",
            headline,
            "this binary has no grouped kernels; build with `--features grouped` (or add `kind: gemm_grouped` \
             entries to the manifest)",
        );
    }
    let mut signatures: Vec<String> = grouped.iter().map(|k| signature(k)).collect();
    signatures.sort();
    signatures.dedup();
    let none_of_these_types = format!(
        "no grouped kernel takes A {} {}-major, B {} {}-major, C/D {} {}-major (this binary's grouped \
         kernels take {}); add a `kind: gemm_grouped` entry of these types to the manifest",
        problem.element_a,
        problem.layout_a,
        problem.element_b,
        problem.layout_b,
        problem.element_c,
        problem.layout_c,
        signatures.join(", ")
    );
    refusal.into_error("grouped dispatch", headline, &none_of_these_types)
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
