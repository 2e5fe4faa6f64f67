//! The one cost model: how long a kernel takes on the work one way of running a problem gives it.
//!
//! An operation describes a way as [`Work`]: the launches of the kernel, each a list of GEMM-shaped
//! pieces with the extents the kernel really iterates over (a Hopper conv's channels rounded up to
//! its tile at every tap, a strided dgrad's phases), the bytes the kernel moves, and the seconds of
//! anything else the way runs (staging copies). The model counts the busiest SM's multiply-adds —
//! output tiles padded to whole clusters, K in whole K tiles, quantised to waves, split-K slices,
//! stream-K spread with its serial fixup, a penalty for small tiles, co-resident CTAs of narrow
//! loads overlapping ([`super::occupancy`]) — at a nominal per-SM rate of the kernel's math;
//! takes the larger of that and the bytes (split-K partial sums included) at a nominal bandwidth
//! per CUTLASS generation, plus a quarter of the smaller; and adds a serial split-K's chain and a
//! launch. Nominal rates are an H100's; [`super::calibration`] maps each kernel's estimate to what
//! a table measured.

use crate::kernel::KernelInfo;
use crate::model::custom::CustomDesign;
use crate::model::{Api, DType, Design, IteratorAlgorithm, MathOp, OpClass, SplitK};

pub use super::work::{Piece, Slicing, Work};

/// Device bandwidth the model assumes (bytes read + written per second; an H100 SXM's copies).
pub const BYTES_PER_SECOND: f64 = 3.0e12;

/// What one staging copy or fill costs beyond its bytes (launch and tail, measured ~2-4 µs).
pub const STAGING_LAUNCH_SECONDS: f64 = 3e-6;

/// Bandwidth a staging copy reaches (bytes read + written per second), straight along rows and
/// transposing through tiles: fitted to an H100's 2-byte copies of 4096², 707×42853 and
/// 58705×116 with odd leading dimensions (`bench/staging/harness.cu`: 1.6-2.0e12 and 1.3-1.8e12;
/// memcpy 2.6e12).
pub const STAGING_ROW_BYTES_PER_SECOND: f64 = 1.7e12;
pub const STAGING_TRANSPOSE_BYTES_PER_SECOND: f64 = 1.5e12;

/// Bandwidth the 4-D copies of padded channels reach (bytes read + written per second), and what
/// each of their launches costs beyond its bytes: fitted to 71 padded convolutions of an H100
/// timed whole and their kernels alone (`bench/padding/fit.py`; RMS log error 0.16).
pub const PADDING_BYTES_PER_SECOND: f64 = 1.2e12;
pub const PADDING_LAUNCH_SECONDS: f64 = 4e-6;

/// Staged ways must be estimated this much faster than a direct one: their copies are only
/// modelled (chosen on held-out problems against 1.25:
/// `bench/results/h100_2026-11-27_issue26_staging_margin_heldout.jsonl.gz`).
pub const STAGING_MARGIN: f64 = 1.1;

/// Fixed cost of one kernel launch on the device (start, tail, drain).
pub const LAUNCH_SECONDS: f64 = 2.5e-6;

/// What each serial split-K slice after the first waits for its turn at an output tile.
pub const SERIAL_SLICE_SECONDS: f64 = 2e-6;

/// Multiply-adds per SM per second of an H100's tensor cores on 16-bit operands (989 TFLOP/s
/// dense over 132 SMs).
const F16_MACS_PER_SM_SECOND: f64 = 3.7e12;

/// The model's time (seconds) of `kernel` on `work` with `slices` split-K slices on a device of
/// `multiprocessors` SMs: the kernel alone (no `extra_seconds`).
pub fn kernel_seconds(kernel: &KernelInfo, work: &Work, slices: usize, multiprocessors: u32) -> f64 {
    if let Design::Custom(design) = kernel.design {
        let element_bytes = kernel
            .operation
            .gemm_operands()
            .map_or(2, |g| g.a.element.bits() / 8);
        if let Some(seconds) = tiny_seconds(design, work, element_bytes as f64, multiprocessors) {
            return seconds;
        }
        if let Some(seconds) = streaming_seconds(design, work, slices, multiprocessors) {
            return seconds;
        }
        if let Some(seconds) = direct_seconds(design, work, multiprocessors) {
            return seconds;
        }
    }
    let sms = multiprocessors.max(1) as f64;
    let slices = slices.max(1);
    let macs: f64 = work
        .launches
        .iter()
        .map(|pieces| busiest_macs(kernel, pieces, slices, sms))
        .sum();
    let compute = macs / (F16_MACS_PER_SM_SECOND * math_rate(kernel));
    let bandwidth = BYTES_PER_SECOND * memory_rate(kernel);
    let partial = partial_bytes(work, slices);
    // The partial-sum traffic that overlaps the multiply-adds, and the time split-K adds after them.
    let (overlapped, chain) = match kernel.design.split_k() {
        // Serial slices add into each output tile one after another, behind a semaphore.
        SplitK::Serial => (partial, (slices - 1) as f64 * SERIAL_SLICE_SECONDS),
        // A parallel split's reduction is a launch of its own after the product: it reads the
        // partial sums back while nothing else runs.
        SplitK::Parallel if slices > 1 => (0.5 * partial, 0.5 * partial / bandwidth + LAUNCH_SECONDS),
        _ => (partial, 0.0),
    };
    let memory = (work.bytes + overlapped) / bandwidth;
    // Loads and multiply-adds overlap, not perfectly: the smaller term counts a quarter (it also
    // ranks kernels that all wait for memory by the compute they waste).
    compute.max(memory) + 0.25 * compute.min(memory) + chain + work.launches.len() as f64 * LAUNCH_SECONDS
}

/// Output tiles the busiest SM runs one after another (each launch's tiles, split-K slices as tiles
/// of their own, over the SMs): each costs a start and an epilogue that the multiply-adds do not
/// show, which calibration weighs per kernel. 0 for the crate's own designs (their models count
/// their own).
pub fn busiest_tiles(kernel: &KernelInfo, work: &Work, slices: usize, multiprocessors: u32) -> f64 {
    if matches!(kernel.design, Design::Custom(_)) {
        return 0.0;
    }
    work.launches
        .iter()
        .map(|pieces| tiles_per_sm(kernel, pieces, slices, multiprocessors))
        .sum()
}

/// The output tiles (split-K slices as tiles of their own) the busiest SM runs in one launch of
/// `pieces`.
fn tiles_per_sm(kernel: &KernelInfo, pieces: &[Piece], slices: usize, multiprocessors: u32) -> f64 {
    let tiles: f64 = pieces.iter().map(|p| output_ctas(kernel, p)).sum();
    (tiles * slices.max(1) as f64 / multiprocessors.max(1) as f64).ceil()
}

/// K-tile iterations the busiest SM runs one after another (its tiles times each slice's depth in
/// K tiles): what each costs beyond its multiply-adds (waiting for loads where a tile's channels
/// are few) calibration weighs per kernel. 0 for the crate's own designs.
pub fn busiest_k_iterations(kernel: &KernelInfo, work: &Work, slices: usize, multiprocessors: u32) -> f64 {
    if matches!(kernel.design, Design::Custom(_)) {
        return 0.0;
    }
    let tile_k = kernel.tile().k.max(1) as usize;
    work.launches
        .iter()
        .map(|pieces| {
            let depth = pieces
                .iter()
                .map(|p| p.slice_depth(slices, tile_k))
                .max()
                .unwrap_or(0);
            tiles_per_sm(kernel, pieces, slices, multiprocessors) * (depth / tile_k) as f64
        })
        .sum()
}

/// The CTAs `kernel` launches over the output of `piece`: its tiles, padded to whole clusters (a
/// cluster runs whole: a group of one M tile under a 2x1 cluster runs an idle second CTA).
fn output_ctas(kernel: &KernelInfo, piece: &Piece) -> f64 {
    let (t, c) = (kernel.tile(), kernel.design.cluster());
    let (cm, cn) = (c.m.max(1) as usize, c.n.max(1) as usize);
    let clusters_m = piece.m.div_ceil(t.m.max(1) as usize * cm);
    let clusters_n = piece.n.div_ceil(t.n.max(1) as usize * cn);
    (clusters_m * cm * clusters_n * cn * piece.batch) as f64
}

/// Bytes split-K slices move beyond the product's own: partial sums (f32) of every output written
/// and read back once per extra slice.
fn partial_bytes(work: &Work, slices: usize) -> f64 {
    let outputs: usize = work.launches.iter().flatten().map(|p| p.m * p.n * p.batch).sum();
    8.0 * outputs as f64 * slices.saturating_sub(1) as f64
}

/// The least time a way of `slices` split-K slices can take, whatever its calibration: its partial
/// sums at the device's bandwidth (a scale fitted on deep, narrow problems shrinks this term too).
/// A serial split keeps most of them in L2 and beat this on 44 of the H100 tables' 12,987 serial
/// split rows (by up to 2.2x); parallel and stream-K splits never did.
pub fn split_floor_seconds(kernel: &KernelInfo, work: &Work, slices: usize) -> f64 {
    if matches!(kernel.design, Design::Custom(_)) {
        return 0.0;
    }
    partial_bytes(work, slices) / (BYTES_PER_SECOND * memory_rate(kernel))
}

/// The busiest SM's multiply-adds in one launch of `pieces` (output and K in whole tiles), tile
/// penalty and split-K traffic included.
fn busiest_macs(kernel: &KernelInfo, pieces: &[Piece], slices: usize, sms: f64) -> f64 {
    let t = kernel.tile();
    let (tm, tn) = (t.m.max(1) as f64, t.n.max(1) as f64);
    let s = slices as f64;
    let mut tiles = 0.0;
    let mut total = 0.0;
    let mut longest = 0.0f64;
    for p in pieces.iter().filter(|p| p.m * p.n * p.batch > 0) {
        let ctas = output_ctas(kernel, p);
        // Each slice's K runs in whole K tiles.
        let tile_macs = tm * tn * p.slice_depth(slices, t.k.max(1) as usize).max(1) as f64;
        tiles += ctas * s;
        total += ctas * s * tile_macs;
        longest = longest.max(tile_macs);
    }
    if tiles == 0.0 {
        return 0.0;
    }
    let waves = if pieces.len() == 1 {
        // Co-resident CTAs of a kernel of narrow loads overlap (`occupancy::overlap`).
        let per_sm = (tiles / sms).ceil();
        let overlap = kernel.operation.gemm_operands().map_or(1.0, |op| {
            super::occupancy::overlap(kernel, per_sm, access_rate(op))
        });
        per_sm * longest / overlap
    } else {
        // Groups of different K: tiles are taken as SMs free up.
        (total / sms).max(longest)
    };
    let busiest = if kernel.design.split_k() == SplitK::StreamK && slices == 1 {
        // Stream-K spreads the K iterations of every tile evenly over the SMs, or runs whole tiles
        // where that is no slower. The SMs sharing a tile add their partial sums into it one after
        // another: with few tiles over many SMs the chain costs about a quarter of the spread work
        // per extra SM.
        let peers = (sms / tiles).max(1.0);
        waves.min(total / sms * 1.05 * (1.0 + 0.25 * (peers - 1.0)))
    } else {
        waves
    };
    let split = if slices > 1 { 1.0 + 0.05 * s } else { 1.0 };
    busiest * (1.0 + 32.0 / tm + 32.0 / tn) * split
}

/// The kernel's multiply-add rate relative to 16-bit tensor cores on a Hopper kernel: its math
/// (TF32 half, 3xTF32 a sixth, 8-bit twice, f32 on CUDA cores and f64 on Hopper's DMMA a
/// fifteenth, f64 on Ampere's DMMA or CUDA cores a thirtieth), CUTLASS 2.x tensor-core kernels at
/// 65 % of a 3.x kernel's rate, analytic conv iterators at 75 %, and the first-layer conv kernel at
/// 2.5x (it reads its few channels once per patch, not per tap).
fn math_rate(kernel: &KernelInfo) -> f64 {
    let Some(op) = kernel.operation.gemm_operands() else {
        return 1.0;
    };
    let tensor = kernel.design.opclass() == OpClass::TensorOp;
    let math = match (op.a.element, tensor) {
        // Hopper's DMMA (16x8x4) runs twice as many multiply-adds as Ampere's (8x8x4) on an H100.
        (DType::F64, true) if kernel.min_compute_capability >= 90 => 1.0 / 15.0,
        // Ampere's DMMA and CUDA cores.
        (DType::F64, _) => 1.0 / 30.0,
        (DType::F32, false) => 1.0 / 15.0,
        (DType::F32, true) => match op.math {
            MathOp::MultiplyAddFastF32 => 1.0 / 6.0,
            MathOp::MultiplyAddFastF16 | MathOp::MultiplyAddFastBf16 => 1.0,
            _ => 0.5,
        },
        (DType::E4m3 | DType::E5m2 | DType::S8, true) => 2.0,
        (_, true) => 1.0,
        (_, false) => 1.0 / 15.0,
    };
    let generation = if tensor && kernel.api() == Api::Cutlass2x && op.a.element != DType::F64 {
        0.65
    } else {
        1.0
    };
    let iterator = match kernel.operation.conv().map(|c| c.iterator) {
        Some(IteratorAlgorithm::Analytic) => 0.75,
        Some(IteratorAlgorithm::FirstLayer) => 2.5,
        _ => 1.0,
    };
    math * generation * iterator * access_rate(op)
}

/// How much of its math rate a kernel reaching A and B in narrow accesses keeps: its mainloop
/// moves fewer bytes per load (and at 2 bytes CUTLASS's two-stage register-staged mainloop runs),
/// `(bytes / 16)^0.8` of the narrower operand's access (H100, 2026-11-26: an alignment-1 f16
/// conv ran 3-10x slower than alignment 8 on the same problem).
fn access_rate(op: &crate::model::GemmOperation) -> f64 {
    let bytes = |o: &crate::model::TensorAttributes| (o.alignment * o.element.bits()).div_ceil(8).max(1);
    let narrowest = bytes(&op.a).min(bytes(&op.b)).min(16);
    (f64::from(narrowest) / 16.0).powf(0.8)
}

/// The share of the device's bandwidth the kernel's loads reach: CUTLASS 2.x kernels (cp.async,
/// one CTA's loads at a time) reach about two thirds of what TMA kernels reach (a 2.x kernel with
/// split-K ran a weight-streaming M = 16 problem at 0.61-0.66x cuBLAS on an H100, 2026-11-26).
fn memory_rate(kernel: &KernelInfo) -> f64 {
    match kernel.api() {
        Api::Cutlass3x => 1.0,
        Api::Cutlass2x => 0.65,
    }
}

/// Bytes of a GEMM of `piece` with elements of `bits` (A, B, C/D), reading C when `reads_c`.
pub fn gemm_bytes(piece: Piece, bits: [u32; 3], reads_c: bool) -> f64 {
    let (m, n, k, b) = (piece.m as f64, piece.n as f64, piece.k as f64, piece.batch as f64);
    let c_passes = if reads_c { 2.0 } else { 1.0 };
    b * (m * k * bits[0] as f64 + k * n * bits[1] as f64 + c_passes * m * n * bits[2] as f64) / 8.0
}

/// Design value `name` as a number (`None` where the design states no such number).
fn number(design: &CustomDesign, name: &str) -> Option<f64> {
    match design.value(name)? {
        crate::model::custom::DesignValue::Int(v) => Some(v.max(0) as f64),
        crate::model::custom::DesignValue::Word(_) => None,
    }
}

/// Bandwidth a streaming kernel reaches on its bytes (an H100's, measured on skinny GEMMs).
const STREAMING_BYTES_PER_SECOND: f64 = 2.6e12;

/// The time of a tiny kernel (`dispatch::skinny`'s tiny forms: a thread or a warp per output, in
/// passes of `tiny_outputs_per_block` × resident blocks): `ns_fixed`; `ps_per_step` for each step
/// of each pass (a step: `tiny_lanes` elements of depth; f64 steps `f64_step_permille` / 1000 as
/// long); the 32-byte sectors a warp's steps touch in X and in Y (`fs_per_sector_x`, `_y`);
/// `fs_per_output`; never under its bytes at `mb_per_second`. `None` for a design without them.
pub fn tiny_seconds(
    design: &CustomDesign,
    work: &Work,
    element_bytes: f64,
    multiprocessors: u32,
) -> Option<f64> {
    let value = |name: &str| number(design, name);
    let per_block = value("tiny_outputs_per_block")?.max(1.0);
    let lanes = value("tiny_lanes")?.max(1.0);
    let slots = value("tiny_max_blocks")?
        .min(16.0 * multiprocessors.max(1) as f64)
        .max(1.0);
    let mut per_step = value("ps_per_step")? * 1e-12;
    if element_bytes >= 8.0 {
        per_step *= value("f64_step_permille")? / 1000.0;
    }
    let per_sector = [value("fs_per_sector_x")?, value("fs_per_sector_y")?].map(|fs| fs * 1e-15);
    let (fixed, per_output) = (value("ns_fixed")? * 1e-9, value("fs_per_output")? * 1e-15);
    let mut seconds = 0.0;
    for p in work.launches.iter().flatten() {
        let outputs = (p.m * p.n * p.batch.max(1)) as f64;
        let passes = ((outputs / per_block).ceil() / slots).ceil();
        let steps = (p.k as f64 / lanes).ceil();
        let sectors = tiny_sectors(lanes > 1.0, per_block, p.n, element_bytes, work.depth_contiguous);
        let warp_steps = steps
            * if lanes > 1.0 {
                outputs
            } else {
                (outputs / 32.0).ceil()
            };
        let traffic = warp_steps * (sectors[0] * per_sector[0] + sectors[1] * per_sector[1]);
        seconds += fixed + passes * steps * per_step + traffic + outputs * per_output;
    }
    Some(seconds.max(work.bytes / (value("mb_per_second")?.max(1.0) * 1e6)))
}

/// The 32-byte sectors of X and Y one step of a tiny kernel's warp touches: a warp along depth
/// reads 32 elements of one row of X and one column of Y (one sector each where they are
/// contiguous along depth, else a sector per element; the row shared by a block's warps on the
/// same row); a warp of threads on consecutive outputs reads one element of each of the rows and
/// columns they cover (apart where the operand is contiguous along depth, else side by side).
fn tiny_sectors(
    along_depth: bool,
    per_block: f64,
    cols: usize,
    element_bytes: f64,
    depth_contiguous: [bool; 2],
) -> [f64; 2] {
    let cols = cols.max(1) as f64;
    if along_depth {
        let [x, y] = depth_contiguous.map(|contiguous| if contiguous { element_bytes } else { 32.0 });
        return [x / cols.min(per_block), y];
    }
    let rows = if cols < 32.0 { (32.0 / cols).ceil() } else { 1.0 };
    let covered = [rows, cols.min(32.0)];
    [0, 1].map(|i| {
        if depth_contiguous[i] {
            covered[i]
        } else {
            covered[i] * element_bytes / 32.0
        }
    })
}

/// The time of a CUDA-core tile kernel without a mainloop pipeline (`conv::small`'s direct conv:
/// a thread per row of its tile, `direct_cols` columns each, the block's slice of B resident in
/// shared memory, then its outputs): `ns_fixed`, plus for each wave of resident blocks
/// (`blocks_per_sm`, fewer where their shared memory does not fit) `ns_per_block` and `ps_per_mac`
/// per multiply-add of a thread, plus `fs_per_output`; never under its bytes at `mb_per_second`.
/// `None` for other designs.
pub fn direct_seconds(design: &CustomDesign, work: &Work, multiprocessors: u32) -> Option<f64> {
    let value = |name: &str| number(design, name);
    let (rows, cols) = (value("direct_rows")?.max(1.0), value("direct_cols")?.max(1.0));
    let (fixed, per_block) = (value("ns_fixed")? * 1e-9, value("ns_per_block")? * 1e-9);
    let (per_mac, per_output) = (value("ps_per_mac")? * 1e-12, value("fs_per_output")? * 1e-15);
    let mut seconds = 0.0;
    for p in work.launches.iter().flatten() {
        let blocks = (p.m as f64 / rows).ceil() * (p.n as f64 / cols).ceil() * p.batch.max(1) as f64;
        // The filter slice, then the block's outputs staged in the same memory.
        let shared = (p.k as f64 * cols).max(rows * (cols + 1.0)) * 4.0 + 1024.0;
        let resident = value("blocks_per_sm")?
            .min((SHARED_BYTES_PER_SM / shared).floor())
            .max(1.0);
        let waves = (blocks / (resident * multiprocessors.max(1) as f64)).ceil();
        let outputs = (p.m * p.n * p.batch.max(1)) as f64;
        seconds += fixed + waves * (per_block + p.k as f64 * cols * per_mac) + outputs * per_output;
    }
    Some(seconds.max(work.bytes / (value("mb_per_second")?.max(1.0) * 1e6)))
}

/// Shared memory of an H100 SM that blocks may take (227 KiB).
const SHARED_BYTES_PER_SM: f64 = 227.0 * 1024.0;

/// The time of a streaming kernel (the crate's skinny GEMMs, `dispatch::skinny`) on `work`, from the
/// throughput its design states: blocks of `rows_per_block` rows, `blocks_per_sm` resident per SM,
/// each a fixed time, a time per staged chunk (`chunk_depth` deep, or `chunk_entries` of the small
/// operand: depth × columns), and a time per element of the large one (a base and a part per
/// output column, the column count rounded up to a power of two, at least `min_columns`) at full
/// occupancy (or at `min_concurrency` blocks' where fewer run), and a time per entry of the small
/// operand staged (`ps_per_staged_entry`: slice depth × columns); in waves of resident blocks; plus
/// a time per output written (`fs_per_output`, or `fs_per_output_across` where D's contiguous
/// dimension is not the design's `output_along`, `rows` or `columns`); never under its bytes at
/// streaming bandwidth. With `group_columns`, a block computes that many columns at most and wider
/// products take a block per group (each reading the large operand).
/// A split adds its partial sums and the reduction's launch. `None` for a design without them.
pub fn streaming_seconds(
    design: &CustomDesign,
    work: &Work,
    slices: usize,
    multiprocessors: u32,
) -> Option<f64> {
    let value = |name: &str| number(design, name);
    let rows_per_block = value("rows_per_block")?.max(1.0);
    let slots = value("blocks_per_sm")?.max(1.0) * multiprocessors.max(1) as f64;
    // Wider loads of A stage it faster: its per-element and per-chunk costs scale by the design's
    // `staging_permille_width{2,4}`.
    let staging = match work.a_load_width {
        4 => value("staging_permille_width4"),
        2 => value("staging_permille_width2"),
        _ => None,
    }
    .map_or(1.0, |permille| permille / 1000.0);
    let (fs, fs_col) = (
        value("fs_per_element")? * staging,
        value("fs_per_element_column")?,
    );
    let (ns_block, ns_chunk) = (value("ns_per_block")?, value("ns_per_chunk")? * staging);
    // A chunk of a fixed depth, or of `chunk_entries` (depth × columns) of the small operand.
    let chunk_depth = value("chunk_depth");
    let chunk_entries = value("chunk_entries");
    let min_columns = value("min_columns").unwrap_or(1.0);
    let group_columns = value("group_columns").unwrap_or(f64::INFINITY).max(1.0);
    // Outputs cost more where D's contiguous dimension runs across the kernel's threads.
    let along = match design.value("output_along") {
        Some(crate::model::custom::DesignValue::Word("rows")) => work.output_column_major,
        Some(crate::model::custom::DesignValue::Word("columns")) => !work.output_column_major,
        _ => true,
    };
    let fs_output = match along {
        true => value("fs_per_output").unwrap_or(0.0),
        false => value("fs_per_output_across")
            .or(value("fs_per_output"))
            .unwrap_or(0.0),
    };
    let min_concurrency = value("min_concurrency");
    let split_rows = value("split_rows_per_thread").filter(|r| *r > 0.0);
    let ps_staged = value("ps_per_staged_entry").unwrap_or(0.0);
    let partial_bytes = value("partial_bytes")?;
    let slices = slices.max(1) as f64;
    let mut seconds = 0.0;
    for p in work.launches.iter().flatten() {
        let groups = (p.n.max(1) as f64 / group_columns).ceil().max(1.0);
        let columns = (p.n.max(1).next_power_of_two() as f64)
            .max(min_columns)
            .min(group_columns);
        let chunk_depth = chunk_depth
            .or(chunk_entries.map(|e| (e / columns).floor()))?
            .clamp(1.0, 1024.0);
        let (rows, depth, batch) = (p.m as f64, p.k.max(1) as f64, p.batch.max(1) as f64);
        let blocks = (rows / rows_per_block).ceil() * slices * batch * groups;
        // With `split_rows_per_thread`, a block of fewer rows splits the depth among its threads:
        // it takes the time of the rows its row groups cover (a power of two of threads).
        let block_rows = match split_rows {
            Some(per_thread) if rows < rows_per_block => {
                let threads = (rows / per_thread).ceil().max(1.0) as u64;
                (threads.next_power_of_two() as f64 * per_thread).min(rows_per_block)
            }
            _ => rows_per_block,
        };
        let slice_depth = (depth / slices).ceil();
        let per_element = (fs + fs_col * columns) * 1e-15;
        // A block's elements at the rate of the blocks sharing the GPU with it: a few alone run no
        // faster than `min_concurrency` of them would.
        let concurrent = min_concurrency.map_or(slots, |c| blocks.min(slots).max(c));
        let block = ns_block * 1e-9
            + ns_chunk * 1e-9 * (slice_depth / chunk_depth).ceil()
            + block_rows * slice_depth * per_element * concurrent
            + ps_staged * 1e-12 * slice_depth * columns;
        // Outputs (or each slice's partial sums) written, as the block's epilogue writes them.
        let outputs = rows * p.n as f64 * batch * slices;
        seconds += (blocks / slots).ceil() * block + outputs * fs_output * 1e-15;
        if slices > 1.0 {
            let partials = 2.0 * slices * rows * p.n as f64 * batch * partial_bytes;
            seconds += LAUNCH_SECONDS + partials / STREAMING_BYTES_PER_SECOND;
        }
    }
    Some(seconds.max(work.bytes / STREAMING_BYTES_PER_SECOND) + work.launches.len() as f64 * LAUNCH_SECONDS)
}
