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

mod memo;
mod refusal;
pub mod stage;

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
    /// Split-K slices it was measured with (1: none; stream-K and serial/parallel split-K kernels
    /// take more).
    pub split_k: usize,
    /// The run-time rasterisation it was measured with (3.x kernels; 2.x kernels ignore it).
    pub tuning: crate::gemm::Tuning,
    /// Its measured time, microseconds.
    pub us: f64,
}

/// A measured dispatch table, as embedded by the build (`bench/dispatch/*.tsv`, one per device).
#[derive(Debug)]
pub struct Table {
    /// The device it was measured on (from the table's header, as the driver names it), or ""
    /// when none was embedded.
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
        self.lookup_in(problem, Policy::default())
    }

    /// [`Self::lookup`] among the kernels `policy` allows.
    pub fn lookup_in(&self, problem: &GemmProblem, policy: Policy) -> Option<&'static Entry> {
        let entries: &'static [Entry] = self.entries;
        entries
            .iter()
            .filter(|e| e.signature == Signature::of(problem))
            .filter(|e| policy.allows(e.kernel))
            .filter(|e| e.kernel.supports(&with_slices(problem, e.split_k)).is_ok())
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
    /// Nothing to choose: the problem is empty.
    Empty,
}

/// The table of `tables` measured on the device named `device` with compute capability
/// `compute_capability` (major·10 + minor).
///
/// * A table measured on a device of that exact name wins (`NVIDIA H100 80GB HBM3`).
/// * Otherwise another device of the same architecture: a table whose device shares the name's
///   model (`H100`, `H200`, `A100`, ... the first word with a digit after "NVIDIA"), else, on
///   compute capability 9.0, any Hopper table (`H100` first): the kernels and their relative speed
///   carry over between Hopper parts, only memory bandwidth differs.
/// * Otherwise (an Ampere or Ada GPU without a measured table) none: dispatch uses its heuristic,
///   because times measured on another architecture rank the kernels wrongly.
pub fn table_for<'t, T: MeasuredOn>(tables: &'t [T], device: &str, compute_capability: u32) -> Option<&'t T> {
    if let Some(exact) = tables.iter().find(|t| t.device() == device) {
        return Some(exact);
    }
    let model = |name: &str| {
        name.split_whitespace()
            .find(|w| *w != "NVIDIA" && w.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_ascii_uppercase)
    };
    if let Some(wanted) = model(device) {
        if let Some(same_model) = tables
            .iter()
            .find(|t| model(t.device()).as_deref() == Some(wanted.as_str()))
        {
            return Some(same_model);
        }
    }
    if compute_capability == 90 {
        let hopper = |t: &&T| {
            ["H100", "H200", "H800", "H20", "GH200"]
                .iter()
                .any(|m| model(t.device()).as_deref() == Some(m))
        };
        let mut hoppers: Vec<&T> = tables.iter().filter(hopper).collect();
        hoppers.sort_by_key(|t| !t.device().contains("H100"));
        return hoppers.first().copied();
    }
    None
}

/// A table measured on one device ([`Table`], and conv's `conv::dispatch::Table`), for
/// [`table_for`].
pub trait MeasuredOn {
    /// The device's name as the driver reports it ("" for none).
    fn device(&self) -> &str;
}

impl MeasuredOn for Table {
    fn device(&self) -> &str {
        self.device
    }
}

/// The empty table (dispatch by heuristic only).
pub static NO_TABLE: Table = Table::new("", "", &[]);

/// What dispatch may trade for speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// f32 problems may run on TF32 products (10-bit mantissas: ~1e-3 relative error, torch's
    /// `allow_tf32`). Default false: f32 problems get f32 accuracy (3xTF32 or CUDA-core kernels),
    /// as torch.matmul and cuBLAS give by default.
    pub allow_tf32: bool,
}

impl Policy {
    /// Whether dispatch may pick `kernel` under this policy (see [`dispatchable`]).
    pub fn allows(&self, kernel: &KernelInfo) -> bool {
        dispatchable(kernel) && (self.allow_tf32 || !rounds_to_tf32(kernel))
    }
}

/// A kernel that rounds f32 operands to TF32 (one TF32 product, not 3xTF32).
pub fn rounds_to_tf32(kernel: &KernelInfo) -> bool {
    let op = kernel.gemm();
    op.a.element == DType::F32
        && kernel.design.opclass() == crate::model::OpClass::TensorOp
        && op.math == MathOp::MultiplyAdd
}

/// `problem` with `slices` split-K slices (a table entry's).
fn with_slices(problem: &GemmProblem, slices: usize) -> GemmProblem {
    GemmProblem {
        split_k_slices: slices.max(1),
        ..problem.clone()
    }
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
    select_in(registry, table, problem, multiprocessors, Policy::default())
}

/// [`select`] under `policy`.
pub fn select_in(
    registry: &Registry,
    table: &Table,
    problem: &GemmProblem,
    multiprocessors: u32,
    policy: Policy,
) -> Result<(&'static KernelInfo, Choice), Error> {
    if let Some(entry) = table.lookup_in(problem, policy) {
        let choice = Choice::Table {
            m: entry.m,
            n: entry.n,
            k: entry.k,
            batch: entry.batch,
        };
        return Ok((entry.kernel, choice));
    }
    heuristic(registry, problem, multiprocessors, policy)
        .map(|(_, kernel)| (kernel, Choice::Heuristic))
        .ok_or_else(|| refusal::no_kernel(registry, problem, policy))
}

/// The heuristic's pick for `problem`: the supporting kernel of lowest [`estimated_cost`], with
/// that cost; kernels of the newest generation the device runs first (3.x kernels only run on
/// their own architecture). `None` when no kernel supports the problem.
fn heuristic(
    registry: &Registry,
    problem: &GemmProblem,
    multiprocessors: u32,
    policy: Policy,
) -> Option<(f64, &'static KernelInfo)> {
    let candidates: Vec<&'static KernelInfo> = registry
        .all()
        .iter()
        .copied()
        .filter(|k| policy.allows(k) && k.supports(problem).is_ok())
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
/// caller asked for f32; Hopper's 3xTF32 by splitting K, whose error grows with K because the
/// warpgroup MMA truncates its accumulator: 4.2e-5 at K = 4096 where cuBLAS's SGEMM errs by 1.1e-6,
/// measured on an H100), nor a parallel split-K kernel (without slices it only adds a reduction
/// pass). All stay available by name.
pub fn dispatchable(kernel: &KernelInfo) -> bool {
    kernel.operation.kind() == OperationKind::Gemm
        && kernel.is_plain()
        && !gemm::is_split_tf32(kernel)
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

impl Orientation {
    /// `problem` as the kernel sees it in this orientation.
    pub fn problem(self, problem: &GemmProblem) -> GemmProblem {
        match self {
            Orientation::AsGiven => problem.clone(),
            Orientation::Transposed => transposed(problem),
        }
    }

    /// `operands` as the kernel reads them in this orientation.
    pub fn operands(self, operands: &GemmOperands) -> GemmOperands {
        match self {
            Orientation::AsGiven => *operands,
            Orientation::Transposed => transposed_operands(operands),
        }
    }
}

impl Selection {
    /// The operands the selected kernel is launched with: oriented, with its split-K slices.
    pub fn kernel_operands(&self, operands: &GemmOperands) -> GemmOperands {
        self.orientation.operands(&GemmOperands {
            split_k_slices: self.split_k,
            ..*operands
        })
    }
}

/// A kernel choice for a problem.
#[derive(Clone, Copy, Debug)]
pub struct Selection {
    pub kernel: &'static KernelInfo,
    pub choice: Choice,
    pub orientation: Orientation,
    /// Split-K slices to launch with (a table entry's; 1 from the heuristic).
    pub split_k: usize,
    /// Run-time rasterisation to launch with (a table entry's; the default from the heuristic).
    pub tuning: crate::gemm::Tuning,
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
    select_any_orientation_in(registry, table, problem, multiprocessors, Policy::default())
}

/// [`select_any_orientation`] under `policy`.
pub fn select_any_orientation_in(
    registry: &Registry,
    table: &Table,
    problem: &GemmProblem,
    multiprocessors: u32,
    policy: Policy,
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
            let entry = table.lookup_in(p, policy)?;
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
                split_k: entry.split_k.max(1),
                tuning: entry.tuning,
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
            let (cost, kernel) = heuristic(registry, p, multiprocessors, policy)?;
            let selection = Selection {
                kernel,
                choice: Choice::Heuristic,
                orientation: *orientation,
                split_k: 1,
                tuning: crate::gemm::Tuning::default(),
            };
            Some((cost, selection))
        })
        .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal))
        .map(|(_, selection)| selection)
        .ok_or_else(|| refusal::no_kernel(registry, problem, policy))
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
    // 3xTF32 does three TF32 products per multiply-add.
    let products = if kernel.gemm().math == MathOp::MultiplyAddFastF32 {
        3.0
    } else {
        1.0
    };
    products * busiest * (1.0 + 32.0 / tm + 32.0 / tn)
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

/// Options of a dispatched launch.
#[derive(Debug, Default)]
pub struct Options<'w> {
    /// What dispatch may trade for speed (TF32 for f32 problems).
    pub policy: Policy,
    /// Scratch memory for the launch (kernel workspaces, staged operands, the 3xTF32 split)
    /// instead of the per-stream cache; [`workspace_bytes`] says how much a problem needs.
    pub workspace: Option<&'w mut crate::Workspace>,
}

/// What a dispatched launch ran.
#[derive(Clone, Debug)]
pub struct Dispatched {
    /// The kernel, or `None` when there was nothing to compute (M, N or the batch count is 0).
    pub kernel: Option<&'static KernelInfo>,
    /// How it was chosen.
    pub choice: Choice,
    pub orientation: Orientation,
    /// Operands copied into scratch memory first ("A", "B", "C", "D"), where no kernel could read
    /// them as they lie (see [`stage`]); empty on the direct path.
    pub staged: Vec<&'static str>,
    pub split_k: usize,
    pub tuning: crate::gemm::Tuning,
}

impl Dispatched {
    fn nothing() -> Self {
        Dispatched {
            kernel: None,
            choice: Choice::Empty,
            orientation: Orientation::AsGiven,
            staged: Vec::new(),
            split_k: 1,
            tuning: crate::gemm::Tuning::default(),
        }
    }

    /// One line for people: the kernel and why it was chosen.
    pub fn describe(&self) -> String {
        let Some(kernel) = self.kernel else {
            return "nothing launched: the problem is empty (M, N or batch count 0)".into();
        };
        let why = match self.choice {
            Choice::Table { m, n, k, batch } => {
                format!("measured table, nearest profiled shape {m}x{n}x{k} (batch {batch})")
            }
            Choice::Heuristic => "heuristic (no measured entry for these types and layouts)".into(),
            Choice::Empty => "empty problem".into(),
        };
        let mut line = format!("{} ({why}", kernel.rust_name);
        if self.orientation == Orientation::Transposed {
            line.push_str("; run transposed, D^T = B^T A^T");
        }
        if self.split_k > 1 {
            line.push_str(&format!("; {} split-K slices", self.split_k));
        }
        if self.tuning != crate::gemm::Tuning::default() {
            line.push_str(&format!("; {:?}", self.tuning));
        }
        if !self.staged.is_empty() {
            line.push_str(&format!("; staged {}", self.staged.join(", ")));
        }
        line.push(')');
        line
    }
}

/// Chooses a kernel for `operands` (see [`select`]) from this crate's registry and the embedded
/// table of this device (see [`table_for`]), and launches it on `stream`.
///
/// # Safety
/// As [`gemm::launch_raw`]: each operand must be device memory of at least `len` elements of the
/// signature's element type, valid until the kernel completes; D must not overlap A or B.
pub unsafe fn launch_raw(
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
    unsafe {
        launch_raw_with(
            &crate::kernels::REGISTRY,
            crate::kernels::DISPATCH_TABLES,
            stream,
            signature,
            operands,
            options,
        )
    }
}

/// Everything dispatch decides for a problem on a device, before launching.
#[derive(Clone, Debug)]
pub struct Decision {
    pub selection: Selection,
    /// Staging, when the operands cannot be read as they lie.
    pub staging: Option<stage::StagePlan>,
}

/// Chooses how to run `operands`: directly on a kernel that takes them as they lie, or through
/// staging into the layouts whose copies plus kernel are estimated fastest (staging only where no
/// kernel runs the problem directly, or where it is estimated clearly faster than the direct
/// kernel, see `STAGING_MARGIN`). Err: the readable refusal. Pure
/// host code (`device` as [`crate::device::props`] reports it): what [`launch_raw_with`] will do.
///
/// Decisions are remembered per problem (see `memo`): a repeated problem costs a hash lookup.
pub fn decide(
    registry: &Registry,
    table: &Table,
    signature: Signature,
    operands: &GemmOperands,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Result<Decision, Error> {
    let key = memo::Key::new(registry, table, device, policy, signature, operands);
    if let Some((selection, staged_layouts)) = memo::get(&key) {
        let staging = staged_layouts.map(|layouts| stage::StagePlan::new(signature, operands, layouts));
        return Ok(Decision { selection, staging });
    }
    let decision = decide_afresh(registry, table, signature, operands, device, policy)?;
    let staged_layouts = decision.staging.as_ref().map(|plan| {
        let s = plan.signature;
        [s.layout_a, s.layout_b, s.layout_c]
    });
    memo::put(key, (decision.selection, staged_layouts));
    Ok(decision)
}

/// [`decide`] without the memo.
fn decide_afresh(
    registry: &Registry,
    table: &Table,
    signature: Signature,
    operands: &GemmOperands,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Result<Decision, Error> {
    let problem = problem_of(signature, operands, device.compute_capability);
    let direct = if problem.k > 0 {
        select_any_orientation_in(registry, table, &problem, device.multiprocessors, policy)
    } else {
        Err(Error::invalid("dispatch", String::new()))
    };
    // A direct run is estimated like a staged one; staging must win clearly (the direct choice
    // may come from the measured table, staging estimates only from the model).
    let direct_seconds = direct.as_ref().ok().map(|selection| {
        let oriented = selection.orientation.problem(&problem);
        estimated_seconds(selection.kernel, &oriented, device.multiprocessors) * STAGING_MARGIN
    });
    // Every layout combination a kernel could take: the one whose staging and kernel together
    // take the least estimated time (a 2.x kernel in the problem's layouts can lose to copying an
    // operand into the layout of a 3.x kernel, or of a narrow-tile kernel run transposed).
    let layouts = [Layout::Row, Layout::Column];
    let mut best: Option<(f64, Selection, stage::StagePlan)> = None;
    for la in layouts {
        for lb in layouts {
            for lc in layouts {
                let plan = stage::StagePlan::new(signature, operands, [la, lb, lc]);
                let staged = problem_of(plan.signature, &plan.at(0), device.compute_capability);
                let Ok(selection) =
                    select_any_orientation_in(registry, table, &staged, device.multiprocessors, policy)
                else {
                    continue;
                };
                let oriented = selection.orientation.problem(&staged);
                let seconds = estimated_seconds(selection.kernel, &oriented, device.multiprocessors)
                    + plan.traffic as f64 / STAGING_BYTES_PER_SECOND
                    + plan.launches() as f64 * STAGING_LAUNCH_SECONDS;
                if best.as_ref().is_some_and(|(fastest, ..)| *fastest <= seconds) {
                    continue;
                }
                best = Some((seconds, selection, plan));
            }
        }
    }
    match (direct, best) {
        (Ok(selection), Some((seconds, ..))) if direct_seconds.is_some_and(|d| d <= seconds) => {
            Ok(Decision {
                selection,
                staging: None,
            })
        }
        (_, Some((_, selection, plan))) => Ok(Decision {
            selection,
            staging: Some(plan),
        }),
        (Ok(selection), None) => Ok(Decision {
            selection,
            staging: None,
        }),
        (Err(_), None) => Err(refusal::no_kernel(registry, &problem, policy)),
    }
}

/// What one staging copy or fill costs beyond its bytes (launch and tail, measured ~2-4 µs).
const STAGING_LAUNCH_SECONDS: f64 = 3e-6;

/// How much faster than a direct run a staged run must be estimated to be chosen (the direct
/// estimate is scaled by this).
const STAGING_MARGIN: f64 = 0.8;

/// Bandwidth a staging copy reaches (bytes read + written per second): 0.66e12 measured on an
/// H100 for a transposing bf16 copy of 4096² (the tiled copy moves 2-byte elements one at a time).
/// Only compared with [`estimated_seconds`] to weigh staging against kernel time.
const STAGING_BYTES_PER_SECOND: f64 = 0.66e12;

/// A rough time for `kernel` on `problem`: [`estimated_cost`] (the busiest SM's multiply-adds)
/// at a per-SM rate of an H100's tensor cores, 35 % lower for a CUTLASS 2.x kernel (measured 476
/// vs ~700 TFLOP/s on f16). Only used to weigh staging plans against each other.
fn estimated_seconds(kernel: &KernelInfo, problem: &GemmProblem, multiprocessors: u32) -> f64 {
    const MACS_PER_SM_SECOND: f64 = 3.7e12;
    let generation = if kernel.api() == crate::model::Api::Cutlass3x {
        1.0
    } else {
        0.65
    };
    estimated_cost(kernel, problem, multiprocessors) / (MACS_PER_SM_SECOND * generation)
}

/// [`launch_raw`] with an explicit registry and tables (a downstream crate's own kernels).
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_raw_with(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
    validate(signature, operands)?;
    if is_empty(operands) {
        return Ok(Dispatched::nothing());
    }
    let device = crate::device::props(stream.context())?;
    let table = table_for(tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let Decision { selection, staging } =
        decide(registry, table, signature, operands, &device, options.policy)?;
    let kernel = selection.kernel;
    let staged = match &staging {
        None => {
            unsafe {
                gemm::launch_raw_in(
                    kernel,
                    stream,
                    &selection.kernel_operands(operands),
                    selection.tuning,
                    options.workspace,
                )
            }?;
            Vec::new()
        }
        Some(plan) => {
            stream
                .context()
                .bind_to_thread()
                .map_err(Error::driver("binding the context"))?;
            let kernel_operands = |base: u64| selection.kernel_operands(&plan.at(base));
            let before = |base: u64| unsafe { plan.enqueue_before(stream, base) };
            let after = |base: u64| unsafe { plan.enqueue_after(stream, base) };
            let staging = gemm::Staging {
                bytes: plan.bytes,
                operands: &kernel_operands,
                before: &before,
                after: &after,
            };
            unsafe {
                gemm::enqueue_staged(
                    kernel,
                    stream,
                    &device,
                    selection.tuning,
                    options.workspace,
                    &staging,
                )
            }?;
            plan.staged.clone()
        }
    };
    Ok(Dispatched {
        kernel: Some(kernel),
        choice: selection.choice,
        orientation: selection.orientation,
        staged,
        split_k: selection.split_k,
        tuning: selection.tuning,
    })
}

/// Bytes of scratch memory dispatching `operands` on `stream`'s device needs (a caller's
/// [`crate::Workspace`] must hold at least this many; 0 for none).
pub fn workspace_bytes(
    stream: &CudaStream,
    signature: Signature,
    operands: &GemmOperands,
    policy: Policy,
) -> Result<usize, Error> {
    validate(signature, operands)?;
    if is_empty(operands) {
        return Ok(0);
    }
    let device = crate::device::props(stream.context())?;
    let tables = crate::kernels::DISPATCH_TABLES;
    let table = table_for(tables, device.name, device.compute_capability).unwrap_or(&NO_TABLE);
    let registry = &crate::kernels::REGISTRY;
    let Decision { selection, staging } = decide(registry, table, signature, operands, &device, policy)?;
    match &staging {
        None => gemm::workspace_bytes(selection.kernel, &selection.kernel_operands(operands), &device),
        Some(plan) => {
            let kernel = gemm::workspace_bytes(
                selection.kernel,
                &selection.kernel_operands(&plan.at(1 << 40)),
                &device,
            )?;
            Ok(kernel.next_multiple_of(256) + plan.bytes)
        }
    }
}

/// M, N or the batch count is 0: nothing to compute (BLAS returns at once).
fn is_empty(ops: &GemmOperands) -> bool {
    ops.a.shape.rows == 0 || ops.b.shape.cols == 0 || ops.d.shape.batch_count == 0
}

/// The problem-level checks, made once before any kernel is considered: extents that fit
/// together, beta without C, batch counts, leading dimensions, buffer lengths, extents that
/// overflow, and D's batches overlapping each other. Errors name the operand and the fix.
pub fn validate(signature: Signature, ops: &GemmOperands) -> Result<(), Error> {
    const WHO: &str = "dispatch";
    let fail = |message: String| Err(Error::invalid(WHO, message));
    let (m, n, k) = gemm::matching_extents(
        &ops.a.shape,
        &ops.b.shape,
        ops.c.as_ref().map(|c| &c.shape),
        &ops.d.shape,
    )
    .map_err(|message| Error::invalid(WHO, message))?;
    gemm::check_beta_has_c(ops.c.is_some(), ops.beta).map_err(|message| Error::invalid(WHO, message))?;
    if !ops.alpha.is_finite() || !ops.beta.is_finite() {
        return fail(format!(
            "alpha = {} and beta = {} must be finite numbers",
            ops.alpha, ops.beta
        ));
    }
    let c_shape = ops.c.as_ref().map(|c| &c.shape);
    let batch = gemm::matching_batches(&ops.a.shape, &ops.b.shape, c_shape, &ops.d.shape)
        .map_err(|message| Error::invalid(WHO, message))?;
    for (what, value) in [("m", m), ("n", n), ("k", k), ("batch count", batch)] {
        if value > i32::MAX as usize {
            return fail(format!(
                "{what} = {value} overflows the kernels' 32-bit extents (at most {})",
                i32::MAX
            ));
        }
    }
    // An empty problem reads and writes nothing (BLAS returns at once): no buffer to check.
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    let named = [
        ("A", Some(&ops.a), signature.layout_a),
        ("B", Some(&ops.b), signature.layout_b),
        ("C", ops.c.as_ref(), signature.layout_c),
        ("D", Some(&ops.d), signature.layout_c),
    ];
    for (name, operand, layout) in named {
        if let Some(op) = operand {
            if op.shape.rows * op.shape.cols == 0 {
                continue;
            }
            gemm::check_buffer(WHO, name, op.len, &op.shape, layout)?;
        }
    }
    gemm::batches_apart(&ops.d.shape, signature.layout_c).map_err(|message| Error::invalid(WHO, message))?;
    Ok(())
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
/// what ran. The typed path for callers who do not want to name a kernel: shapes, buffer lengths
/// and alignment are checked once, before any kernel is considered. Any shape, leading dimension
/// and element-aligned view runs (operands no kernel reads as they lie are staged); M, N or a batch
/// of 0 launch nothing; K = 0 computes D = beta·C.
#[allow(clippy::too_many_arguments)]
pub fn run<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<(MatrixRef<'_, C, LC>, f64)>,
    d: MatrixMut<'_, C, LC>,
    alpha: f64,
) -> Result<Dispatched, Error> {
    run_with(stream, a, b, c, d, alpha, Options::default())
}

/// [`run`] with [`Options`] (a workspace of the caller's, TF32 for f32 problems).
#[allow(clippy::too_many_arguments)]
pub fn run_with<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<(MatrixRef<'_, C, LC>, f64)>,
    d: MatrixMut<'_, C, LC>,
    alpha: f64,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
    run_in(
        &crate::kernels::REGISTRY,
        crate::kernels::DISPATCH_TABLES,
        stream,
        a,
        b,
        c,
        d,
        alpha,
        options,
    )
}

/// [`run_with`] choosing from `registry` with `tables` instead of this crate's kernels: a
/// downstream crate's own kernels (its generated `REGISTRY` and `DISPATCH_TABLES`; with no table
/// for the device, the bare heuristic of [`select`] chooses).
#[allow(clippy::too_many_arguments)]
pub fn run_in<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>(
    registry: &Registry,
    tables: &[Table],
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<(MatrixRef<'_, C, LC>, f64)>,
    d: MatrixMut<'_, C, LC>,
    alpha: f64,
    options: Options<'_>,
) -> Result<Dispatched, Error> {
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
        unsafe { launch_raw_with(registry, tables, stream, signature, operands, options) }
    })
}
