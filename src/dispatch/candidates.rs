//! The ways dispatch can run a GEMM, for the selection engine: every allowed kernel that supports
//! the problem as given or transposed (D^T = B^T·A^T), at every split-K it supports, directly or
//! with operands staged into the layouts of another kernel — each with the problem as its kernel
//! sees it (a table key) and the work it does.

use super::stage::StagePlan;
use super::{problem_of, transposed, Orientation, Policy, Signature};
use crate::gemm::{GemmOperands, GemmProblem};
use crate::kernel::KernelInfo;
use crate::model::{DType, Layout, SplitK};
use crate::registry::Registry;
use crate::select::cost::{self, STAGING_MARGIN};
use crate::select::{Candidate, Key, Piece, Row, Work};

/// The operation's name in tables and results files.
pub const OP: &str = "gemm";

/// What a GEMM way adds to a kernel and split-K.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmWay {
    pub orientation: Orientation,
    /// The layouts (A, B, C/D) operands were staged into; `None`: read as they lie.
    pub staged: Option<[Layout; 3]>,
}

/// The table key of `problem` as a kernel runs it.
pub fn key_of(problem: &GemmProblem) -> Key {
    Key::new(
        OP,
        [problem.element_a, problem.element_b, problem.element_c],
        Some([problem.layout_a, problem.layout_b, problem.layout_c]),
        &[problem.m, problem.n, problem.k, problem.batch_count],
    )
}

/// The key of the same problem run transposed (D^T = B^T·A^T).
pub fn transposed_key(key: &Key) -> Key {
    let [a, b, c] = key.elements;
    let mut dims = key.dims;
    dims.swap(0, 1);
    Key {
        elements: [b, a, c],
        layouts: key
            .layouts
            .map(|[la, lb, lc]| [lb.transposed(), la.transposed(), lc.transposed()]),
        dims,
        ..*key
    }
}

/// One key of a problem and its transpose, the same for both.
pub fn canonical_key(key: &Key) -> Key {
    let other = transposed_key(key);
    if format!("{other:?}") < format!("{key:?}") {
        other
    } else {
        *key
    }
}

/// The work of `kernel` on `problem` (C's read is not counted: it is not in the key).
pub fn work_of(problem: &GemmProblem) -> Work {
    let piece = Piece::new(problem.m, problem.n, problem.k, problem.batch_count);
    let elements = [problem.element_a, problem.element_b, problem.element_c];
    let layouts = [problem.layout_a, problem.layout_b, problem.layout_c];
    packed_work(piece, elements, layouts)
}

/// A GEMM row's work, for calibration: as [`work_of`] its problem.
pub fn row_work(row: &Row) -> Option<Work> {
    let [m, n, k, batch, ..] = row.key.dims;
    Some(packed_work(
        Piece::new(m, n, k, batch),
        row.key.elements,
        row.key.layouts?,
    ))
}

/// The work of a product of packed operands, with the facts of their layouts the streaming
/// kernels' models read (D's order, which operands run along the depth, A's load width).
fn packed_work(piece: Piece, elements: [DType; 3], layouts: [Layout; 3]) -> Work {
    let a_row_major = layouts[0] == Layout::Row;
    Work {
        output_column_major: layouts[2] == Layout::Column,
        depth_contiguous: [a_row_major, layouts[1] == Layout::Column],
        a_load_width: crate::support::skinny::x_load_width(a_row_major, piece.m, piece.k),
        ..Work::single(piece, cost::gemm_bytes(piece, elements.map(|d| d.bits()), false))
    }
}

/// The split-K slice counts dispatch tries on `kernel`: powers of two up to 16 where it splits K
/// (2.x serial split-K, 3.x stream-K's split mode), 2 to 64 for a parallel split-K kernel (without
/// slices it only adds its reduction pass), else 1.
pub fn slice_candidates(kernel: &KernelInfo) -> &'static [usize] {
    match kernel.design.split_k() {
        SplitK::Serial | SplitK::StreamK => &[1, 2, 4, 8, 16],
        SplitK::Parallel => &[2, 4, 8, 16, 32, 64],
        SplitK::None => &[1],
    }
}

/// The direct ways of `problem` (both orientations) on a device of `multiprocessors` SMs: kernels
/// of `registry` that `policy` allows and that support the oriented problem, at each split-K they
/// support.
pub fn direct(
    registry: &Registry,
    problem: &GemmProblem,
    policy: Policy,
    multiprocessors: u32,
) -> Vec<Candidate<GemmWay>> {
    ways(registry, problem, policy, multiprocessors, None, 0.0, 1.0)
}

/// Whether a parallel split-K `kernel` is worth offering on `problem`: its unsplit output tiles fill
/// fewer than four waves of the device's SMs. Slices are there to fill the GPU and the last wave's
/// idle SMs (an f64 27759x1x1890 ran 1 % faster at 4 slices over 3.3 waves); past that they only
/// add partial sums (a 3006x974x1546 bf16 problem, 5.7 waves: 55.7 us unsplit, 140.8 at 4
/// slices), so such ways are offered only where no other way runs the problem.
fn worth_slicing(kernel: &KernelInfo, problem: &GemmProblem, multiprocessors: u32) -> bool {
    if kernel.design.split_k() != SplitK::Parallel {
        return true;
    }
    let tile = kernel.tile();
    let tiles = problem.m.div_ceil(tile.m.max(1) as usize) * problem.n.div_ceil(tile.n.max(1) as usize);
    tiles < 4 * multiprocessors.max(1) as usize
}

/// The ways of `problem` with `staging`'s operands copied first (its extra time and margin added).
fn ways(
    registry: &Registry,
    problem: &GemmProblem,
    policy: Policy,
    multiprocessors: u32,
    staged: Option<[Layout; 3]>,
    extra_seconds: f64,
    margin: f64,
) -> Vec<Candidate<GemmWay>> {
    // Parallel split-K ways past four waves, kept only for a registry that has nothing else.
    let (mut out, mut spare) = (Vec::new(), Vec::new());
    for orientation in [Orientation::AsGiven, Orientation::Transposed] {
        let oriented = match orientation {
            Orientation::AsGiven => problem.clone(),
            Orientation::Transposed => transposed(problem),
        };
        let key = key_of(&oriented);
        let mut work = work_of(&oriented);
        work.extra_seconds = extra_seconds;
        for &kernel in registry.all() {
            if !policy.allows(kernel) {
                continue;
            }
            let worth = worth_slicing(kernel, &oriented, multiprocessors);
            for &split_k in slice_candidates(kernel) {
                let sliced = GemmProblem {
                    split_k_slices: split_k,
                    ..oriented.clone()
                };
                if kernel.supports(&sliced).is_err() {
                    // More slices than K has tiles, or split-K with a batch: larger splits fail too.
                    if split_k > 1 {
                        break;
                    }
                    continue;
                }
                let way = Candidate {
                    kernel,
                    split_k,
                    way: GemmWay { orientation, staged },
                    key,
                    work: work.clone(),
                    margin,
                };
                if worth { &mut out } else { &mut spare }.push(way);
            }
        }
    }
    if out.is_empty() {
        spare
    } else {
        out
    }
}

/// The staged ways of `operands`: for each layout combination a kernel could take, the operands
/// that stand in the way copied into packed, aligned scratch in those layouts (see
/// [`super::stage`]). Combinations where nothing needs copying are the direct ways.
pub fn staged(
    registry: &Registry,
    signature: Signature,
    operands: &GemmOperands,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Vec<Candidate<GemmWay>> {
    let layouts = [Layout::Row, Layout::Column];
    let mut out = Vec::new();
    for la in layouts {
        for lb in layouts {
            for lc in layouts {
                let plan = StagePlan::new(signature, operands, [la, lb, lc]);
                if !plan.is_needed() {
                    continue;
                }
                let problem = problem_of(plan.signature, &plan.at(0), device.compute_capability);
                let extra = plan.copy_seconds();
                out.extend(ways(
                    registry,
                    &problem,
                    policy,
                    device.multiprocessors,
                    Some([la, lb, lc]),
                    extra,
                    STAGING_MARGIN,
                ));
            }
        }
    }
    out
}
