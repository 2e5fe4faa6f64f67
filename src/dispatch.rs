//! Kernel selection: given a problem, the best compiled kernel that can run it.
//!
//! Two sources, in order:
//! 1. **A measured table** ([`Table`]): the profiler (`examples/profiler.rs --dispatch-out`) records,
//!    for each profiled shape and type/layout combination, the fastest verified kernel; the build
//!    embeds that table ([`crate::kernels::DISPATCH`]). A problem takes the kernel of the nearest
//!    profiled shape of its types and layouts (distance: sum of |log2| ratios of m, n, k and batch)
//!    among the entries whose kernel supports it.
//! 2. **A heuristic** where the table has nothing for the types and layouts: among the kernels that
//!    support the problem (Hopper kernels first on Hopper), the lowest estimated cost, where cost =
//!    the work of the busiest multiprocessor in tile-sized steps (output tiles quantised to waves
//!    of one tile per SM for persistent kernels; evenly split including K for stream-K kernels,
//!    plus 10 % for its reduction), times a per-tile efficiency penalty `1 + 32/tile_m + 32/tile_n`
//!    (small tiles re-read more operands per flop). Ties go to manifest order.
//!
//! Both orientations of a problem are considered: D = A·B as given, and D^T = B^T·A^T (the same
//! buffers read transposed, see [`Orientation`]), which lets small-M problems use kernels with a
//! narrow N tile.
//!
//! Users who know which kernel they want call its typed function (`kernels::<name>::run`) directly.

use crate::error::Error;
use crate::gemm::GemmProblem;
use crate::gemm::{self, GemmOperands, Operand};
use crate::kernel::KernelInfo;
use crate::matrix::{MatrixMut, MatrixRef};
use crate::model::{DType, Layout, MathOp, OperationKind, SplitK};
use crate::registry::Registry;
use crate::types::{Element, LayoutTag};
use crate::CudaStream;

/// One measured row: the fastest kernel for one shape and type/layout combination.
#[derive(Debug)]
pub struct Entry {
    /// Types and layouts of the profiled problem.
    pub signature: Signature,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub kernel: &'static KernelInfo,
    /// Its measured time, microseconds.
    pub us: f64,
}

/// A measured dispatch table, as embedded by the build.
#[derive(Debug)]
pub struct Table {
    /// The device it was measured on (from the table's header), or "" when none was embedded.
    pub device: &'static str,
    /// The date of the measurement.
    pub date: &'static str,
    pub entries: &'static [Entry],
}

impl Table {
    pub const fn new(device: &'static str, date: &'static str, entries: &'static [Entry]) -> Self {
        Table {
            device,
            date,
            entries,
        }
    }

    /// The entry of the nearest profiled shape with the problem's types and layouts whose kernel
    /// supports the problem.
    pub fn lookup(&self, problem: &GemmProblem) -> Option<&'static Entry> {
        let entries: &'static [Entry] = self.entries;
        entries
            .iter()
            .filter(|e| e.signature == Signature::of(problem))
            .filter(|e| e.kernel.supports(problem).is_ok())
            .min_by(|x, y| {
                let key = |e: &Entry| (shape_distance(e, problem), e.us);
                key(x).partial_cmp(&key(y)).unwrap_or(std::cmp::Ordering::Equal)
            })
    }
}

fn shape_distance(e: &Entry, p: &GemmProblem) -> f64 {
    let d = |a: usize, b: usize| ((a.max(1) as f64).log2() - (b.max(1) as f64).log2()).abs();
    d(e.m, p.m) + d(e.n, p.n) + d(e.k, p.k) + d(e.batch, p.batch_count)
}

/// How a kernel was chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Choice {
    /// From the measured table: the nearest profiled shape.
    Table {
        m: usize,
        n: usize,
        k: usize,
        batch: usize,
    },
    /// From the heuristic (the table has nothing for these types and layouts).
    Heuristic,
}

/// Picks the kernel of `registry` for `problem` on a device with `multiprocessors` SMs, from
/// `table` first, then the heuristic. `problem.compute_capability` should be set, so that kernels
/// the device cannot run are excluded. Err lists why no kernel supports the problem.
pub fn select(
    registry: &Registry,
    table: &Table,
    problem: &GemmProblem,
    multiprocessors: u32,
) -> Result<(&'static KernelInfo, Choice), Error> {
    if let Some(entry) = table.lookup(problem) {
        let choice = Choice::Table {
            m: entry.m,
            n: entry.n,
            k: entry.k,
            batch: entry.batch,
        };
        return Ok((entry.kernel, choice));
    }
    heuristic(registry, problem, multiprocessors)
        .map(|(_, kernel)| (kernel, Choice::Heuristic))
        .ok_or_else(|| no_kernel(registry, problem))
}

/// The heuristic's pick for `problem`: the supporting kernel of lowest [`estimated_cost`], with
/// that cost; kernels of the newest generation the device runs first (3.x kernels only run on
/// their own architecture). `None` when no kernel supports the problem.
fn heuristic(
    registry: &Registry,
    problem: &GemmProblem,
    multiprocessors: u32,
) -> Option<(f64, &'static KernelInfo)> {
    let candidates: Vec<&'static KernelInfo> = registry
        .all()
        .iter()
        .copied()
        .filter(|k| dispatchable(k) && k.supports(problem).is_ok())
        .collect();
    let best_api = candidates.iter().map(|k| k.api()).max();
    candidates
        .into_iter()
        .filter(|k| Some(k.api()) == best_api)
        .map(|k| (estimated_cost(k, problem, multiprocessors), k))
        .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal))
}

/// Whether the heuristic may pick `kernel` for a problem of its types: not a fused one (it computes
/// something else), not one that trades accuracy for speed (f32 operands rounded to f16/bf16: the
/// caller asked for f32), nor a parallel split-K kernel (without slices it only adds a reduction
/// pass). All stay available by name.
fn dispatchable(kernel: &KernelInfo) -> bool {
    kernel.operation.kind() == OperationKind::Gemm
        && kernel.is_plain()
        && !matches!(
            kernel.gemm().math,
            MathOp::MultiplyAddFastF16 | MathOp::MultiplyAddFastBf16
        )
        && kernel.design.split_k() != SplitK::Parallel
}

/// How a selected kernel runs the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orientation {
    /// D = A·B as given.
    AsGiven,
    /// D^T = B^T·A^T: the kernel's A is B read transposed, its B is A transposed and its C/D are
    /// C/D transposed (same memory, every layout flipped, M and N swapped). Small-M problems run
    /// this way on kernels with a narrow N tile.
    Transposed,
}

/// A kernel choice for a problem.
#[derive(Clone, Copy, Debug)]
pub struct Selection {
    pub kernel: &'static KernelInfo,
    pub choice: Choice,
    pub orientation: Orientation,
}

/// [`select`] over both orientations of `problem` (as given and transposed, see [`Orientation`]).
/// Measured entries win over the heuristic. Between orientations with measured entries, the one
/// measured nearer to the problem wins; where both are about as near (within half an octave of
/// shape distance), the lower measured time scaled to the problem's flops. Without measurements,
/// the lower heuristic cost.
pub fn select_any_orientation(
    registry: &Registry,
    table: &Table,
    problem: &GemmProblem,
    multiprocessors: u32,
) -> Result<Selection, Error> {
    let oriented = [
        (Orientation::AsGiven, problem.clone()),
        (Orientation::Transposed, transposed(problem)),
    ];
    let flops = |m: usize, n: usize, k: usize, batch: usize| (m * n * k * batch).max(1) as f64;
    // Each orientation's nearest measured entry: (shape distance, time scaled to the problem).
    let measured: Vec<(f64, f64, Selection)> = oriented
        .iter()
        .filter_map(|(orientation, p)| {
            let entry = table.lookup(p)?;
            let estimate = entry.us * flops(p.m, p.n, p.k, p.batch_count)
                / flops(entry.m, entry.n, entry.k, entry.batch);
            let choice = Choice::Table {
                m: entry.m,
                n: entry.n,
                k: entry.k,
                batch: entry.batch,
            };
            let selection = Selection {
                kernel: entry.kernel,
                choice,
                orientation: *orientation,
            };
            Some((shape_distance(entry, p), estimate, selection))
        })
        .collect();
    // Times measured far from the problem do not extrapolate: the orientation measured nearer to
    // the problem wins; only where both are about as near (within half an octave in total) does
    // the lower time decide.
    let nearest = measured.iter().map(|m| m.0).fold(f64::INFINITY, f64::min);
    let measured = measured
        .into_iter()
        .filter(|m| m.0 <= nearest + 0.5)
        .min_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal))
        .map(|(_, estimate, selection)| (estimate, selection));
    if let Some((_, selection)) = measured {
        return Ok(selection);
    }
    oriented
        .iter()
        .filter_map(|(orientation, p)| {
            let (cost, kernel) = heuristic(registry, p, multiprocessors)?;
            let selection = Selection {
                kernel,
                choice: Choice::Heuristic,
                orientation: *orientation,
            };
            Some((cost, selection))
        })
        .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal))
        .map(|(_, selection)| selection)
        .ok_or_else(|| no_kernel(registry, problem))
}

/// The problem D^T = B^T·A^T that computes the same D (see [`Orientation::Transposed`]).
pub fn transposed(p: &GemmProblem) -> GemmProblem {
    GemmProblem {
        m: p.n,
        n: p.m,
        k: p.k,
        batch_count: p.batch_count,
        element_a: p.element_b,
        element_b: p.element_a,
        element_c: p.element_c,
        layout_a: p.layout_b.transposed(),
        layout_b: p.layout_a.transposed(),
        layout_c: p.layout_c.transposed(),
        lda: p.ldb,
        ldb: p.lda,
        ldc: p.ldc,
        batch_stride_a: p.batch_stride_b,
        batch_stride_b: p.batch_stride_a,
        batch_stride_c: p.batch_stride_c,
        address_a: p.address_b,
        address_b: p.address_a,
        address_c: p.address_c,
        compute_capability: p.compute_capability,
        split_k_slices: p.split_k_slices,
        pointer_arrays: p.pointer_arrays,
        // A per-row vector of D is a per-column one of D^T.
        fusion: crate::model::Fusion {
            bias: p.fusion.bias.transposed(),
            scale: p.fusion.scale.transposed(),
            ..p.fusion
        },
        epilogue: p.epilogue,
        fusion_operands: p.fusion_operands,
    }
}

/// The operands of D^T = B^T·A^T: the same buffers, each matrix read transposed.
pub fn transposed_operands(ops: &GemmOperands) -> GemmOperands {
    let t = |op: &Operand| Operand {
        shape: crate::MatrixShape {
            rows: op.shape.cols,
            cols: op.shape.rows,
            ..op.shape
        },
        ..*op
    };
    GemmOperands {
        a: t(&ops.b),
        b: t(&ops.a),
        c: ops.c.as_ref().map(t),
        d: t(&ops.d),
        alpha: ops.alpha,
        beta: ops.beta,
        split_k_slices: ops.split_k_slices,
        fusion: crate::FusionOperands {
            aux: ops.fusion.aux.as_ref().map(t),
            ..ops.fusion
        },
    }
}

/// The heuristic's cost of `kernel` for `problem` (arbitrary units; only comparisons matter).
pub fn estimated_cost(kernel: &KernelInfo, problem: &GemmProblem, multiprocessors: u32) -> f64 {
    let (tm, tn) = (kernel.tile().m.max(1) as f64, kernel.tile().n.max(1) as f64);
    let sms = multiprocessors.max(1) as f64;
    let tiles_m = (problem.m as f64 / tm).ceil();
    let tiles_n = (problem.n as f64 / tn).ceil();
    let tiles = tiles_m * tiles_n * problem.batch_count as f64;
    let k = problem.k as f64;
    let busiest = if kernel.design.split_k() == SplitK::StreamK {
        // Output tiles and their K iterations are spread evenly over the SMs.
        1.1 * tiles * tm * tn * k / sms
    } else {
        (tiles / sms).ceil() * tm * tn * k
    };
    busiest * (1.0 + 32.0 / tm + 32.0 / tn)
}

fn no_kernel(registry: &Registry, problem: &GemmProblem) -> Error {
    let mut reasons: Vec<String> = registry
        .all()
        .iter()
        .filter(|k| k.operation.kind() == OperationKind::Gemm)
        .filter_map(|k| k.supports(problem).err())
        .filter(|u| {
            // Only kernels of the right types/layouts explain anything useful.
            u.reasons.iter().all(|r| !r.contains("but the kernel takes"))
        })
        .map(|u| u.to_string())
        .collect();
    if reasons.is_empty() {
        reasons.push(format!(
            "no compiled kernel takes A {} {}-major, B {} {}-major, C/D {} {}-major; add one to the manifest",
            problem.element_a,
            problem.layout_a,
            problem.element_b,
            problem.layout_b,
            problem.element_c,
            problem.layout_c
        ));
    }
    Error::InvalidArgument {
        kernel: "dispatch",
        message: format!("no kernel can run this problem: {}", reasons.join(" | ")),
    }
}

/// Types and layouts of a GEMM's operands, for the untyped dispatch path and the table's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    pub element_a: DType,
    pub element_b: DType,
    pub element_c: DType,
    pub layout_a: Layout,
    pub layout_b: Layout,
    pub layout_c: Layout,
}

impl Signature {
    /// The types and layouts of `problem`.
    pub fn of(problem: &GemmProblem) -> Self {
        Signature {
            element_a: problem.element_a,
            element_b: problem.element_b,
            element_c: problem.element_c,
            layout_a: problem.layout_a,
            layout_b: problem.layout_b,
            layout_c: problem.layout_c,
        }
    }
}

/// Chooses a kernel for `operands` (see [`select`]) from this crate's registry and embedded table,
/// and launches it on `stream`. Returns the kernel that ran.
///
/// # Safety
/// As [`gemm::launch_raw`]: each operand must be device memory of at least `len` elements of the
/// signature's element type, valid until the kernel completes; D must not overlap A or B.
pub unsafe fn launch_raw(
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
) -> Result<&'static KernelInfo, Error> {
    unsafe {
        launch_raw_with(
            &crate::kernels::REGISTRY,
            &crate::kernels::DISPATCH,
            stream,
            signature,
            operands,
        )
    }
}

/// [`launch_raw`] with an explicit registry and table (a downstream crate's own kernels).
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_raw_with(
    registry: &Registry,
    table: &Table,
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
) -> Result<&'static KernelInfo, Error> {
    let device = crate::device::props(stream.context())?;
    let problem = problem_of(signature, operands, device.compute_capability);
    let selection = select_any_orientation(registry, table, &problem, device.multiprocessors)?;
    match selection.orientation {
        Orientation::AsGiven => unsafe { gemm::launch_raw(selection.kernel, stream, operands) }?,
        Orientation::Transposed => {
            unsafe { gemm::launch_raw(selection.kernel, stream, &transposed_operands(operands)) }?
        }
    }
    Ok(selection.kernel)
}

/// The discovery view of `operands` (extents from A and B, batch from D, strides, addresses).
pub fn problem_of(signature: Signature, operands: &GemmOperands, compute_capability: u32) -> GemmProblem {
    let (a, b, d) = (&operands.a.shape, &operands.b.shape, &operands.d.shape);
    let c = operands.c.as_ref().unwrap_or(&operands.d);
    let stride = |s: &crate::MatrixShape| if s.batch_count == 1 { 0 } else { s.batch_stride };
    GemmProblem {
        lda: Some(a.ld),
        ldb: Some(b.ld),
        ldc: Some(c.shape.ld),
        batch_stride_a: Some(stride(a)),
        batch_stride_b: Some(stride(b)),
        batch_stride_c: Some(stride(&c.shape)),
        address_a: Some(operands.a.address),
        address_b: Some(operands.b.address),
        address_c: Some(c.address),
        compute_capability: Some(compute_capability),
        ..GemmProblem::new(
            (a.rows, b.cols, a.cols),
            (signature.element_a, signature.element_b, signature.element_c),
            (signature.layout_a, signature.layout_b, signature.layout_c),
        )
        .batched(d.batch_count)
    }
}

/// D = alpha·(A @ B) + beta·C with the kernel [`select`] picks from this crate's kernels; returns
/// the kernel that ran. The typed path for callers who do not want to name a kernel: shapes,
/// buffer lengths and alignment are checked exactly as for a kernel's own `run`.
#[allow(clippy::too_many_arguments)]
pub fn run<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<(MatrixRef<'_, C, LC>, f64)>,
    d: MatrixMut<'_, C, LC>,
    alpha: f64,
) -> Result<&'static KernelInfo, Error> {
    let signature = Signature {
        element_a: A::DTYPE,
        element_b: B::DTYPE,
        element_c: C::DTYPE,
        layout_a: LA::LAYOUT,
        layout_b: LB::LAYOUT,
        layout_c: LC::LAYOUT,
    };
    let beta = c.as_ref().map_or(0.0, |(_, beta)| *beta);
    gemm::with_operands(stream, a, b, c.map(|(c, _)| c), d, (alpha, beta, 1), |operands| {
        // SAFETY: every address comes from a live cudarc buffer of the stated length whose element
        // type is the signature's (enforced by the type parameters).
        unsafe { launch_raw(stream, signature, operands) }
    })
}
