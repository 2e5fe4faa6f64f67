//! Skinny GEMMs as ways of dispatch: a product with at most 64 columns (as given or transposed)
//! may run on the crate's own CUDA-core streaming kernels (16 columns a block), one of 16-bit
//! operands also on its tensor-core kernels (`support::skinny`), instead of a CUTLASS tile that is
//! mostly empty (and, on a misaligned operand, reads it two bytes at a time). Each kernel is
//! described like any other ([`KernelInfo`]: operands, a design whose values give the cost model
//! its throughput), so the one selection engine ranks it beside CUTLASS's kernels.

use super::candidates::{key_of, work_of, GemmWay};
use super::{Orientation, Policy, Selection, Signature};
use crate::error::Error;
use crate::gemm::{GemmOperands, GemmProblem, Operand};
use crate::kernel::{HostCode, KernelInfo};
use crate::model::custom::{CustomDesign, DesignValue, Expr};
use crate::model::{
    Api, DType, Design, Epilogue, EpilogueSpec, Fusion, GemmOperation, Layout, MathOp, Operation, Shape3,
    TensorAttributes,
};
use crate::select::cost::Work;
use crate::select::Candidate;
use crate::support::skinny::{
    dot_rows_per_block, tiny_outputs_per_block, Skinny, AXPY_ROWS_PER_BLOCK, GROUP_COLS, MAX_TENSOR_COLS,
    MIN_TENSOR_COLS, TENSOR_ROWS_PER_BLOCK, TINY_MAX_BLOCKS,
};
pub use crate::support::skinny::{Elements, Form, MAX_COLS};
use crate::support::View;

/// Split-K slices tried: powers of two, each slice at least [`min_slice_depth`] deep.
const SLICES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The shallowest slice worth its partial sums: a staged chunk (64) of the tensor form, 32 else.
const fn min_slice_depth(form: Form) -> usize {
    match form {
        Form::Tensor => 64,
        _ => 32,
    }
}

const NO_EXPR: Expr = Expr { text: "", code: &[] };

/// The cost model's view of a streaming kernel (`select::cost::streaming_seconds`), fitted to
/// timings of random problems (`bench/skinny/fit.py`; the dot and axpy forms' also on the problems
/// of the tables' skinny rows) timed as the benchmarks time them (an event between launches) on an
/// H100, none of the held-out ones: per-element time at full occupancy (a base and a part per output
/// column), each block's fixed time, each staged chunk's and each output's.
macro_rules! design {
    ($rows:expr, $acc_bytes:literal, $blocks_per_sm:literal, $along:literal, $fit:expr $(, $extra:expr)*) => {
        CustomDesign {
            code: Api::Cutlass2x,
            tile: Shape3::new($rows as u32, MAX_COLS as u32, 1),
            values: &[
                ("rows_per_block", DesignValue::Int($rows as i64)),
                ("blocks_per_sm", DesignValue::Int($blocks_per_sm)),
                ("fs_per_element", DesignValue::Int($fit[0])),
                ("fs_per_element_column", DesignValue::Int($fit[1])),
                ("ns_per_block", DesignValue::Int($fit[2])),
                ("ns_per_chunk", DesignValue::Int($fit[3])),
                ("fs_per_output", DesignValue::Int($fit[4])),
                ("fs_per_output_across", DesignValue::Int($fit[5])),
                ("output_along", DesignValue::Word($along)),
                ("chunk_entries", DesignValue::Int(32768 / $acc_bytes)),
                ("partial_bytes", DesignValue::Int($acc_bytes)),
                ("max_columns", DesignValue::Int(MAX_COLS as i64)),
                ("group_columns", DesignValue::Int(GROUP_COLS as i64)),
                $($extra,)*
            ],
            grid: [NO_EXPR; 3],
            block: [NO_EXPR; 3],
            shared_memory: NO_EXPR,
            requires: &[],
        }
    };
}

/// Fitted constants: fs per element, fs per element and column, ns per block, ns per chunk, fs per
/// output where D lies along the form's threads (the dot form's lanes hold a row's columns, the
/// axpy form's threads rows) and across them, and ps per entry of Y a block stages (RMS log error
/// 0.17 dot, 0.22 axpy, 0.13 tensor).
const DOT_FIT: [i64; 6] = [192, 114, 2590, 850, 1, 1];
const DOT_STAGED: (&str, DesignValue) = ("ps_per_staged_entry", DesignValue::Int(667));
const AXPY_FIT: [i64; 6] = [487, 30, 3551, 1, 5991, 13219];
const AXPY_STAGED: (&str, DesignValue) = ("ps_per_staged_entry", DesignValue::Int(1450));
/// The axpy form's threads split the depth where a block has fewer rows (2 a thread).
const AXPY_SPLIT: (&str, DesignValue) = ("split_rows_per_thread", DesignValue::Int(2));
static DOT: CustomDesign = design!(dot_rows_per_block(4), 4, 2, "columns", DOT_FIT, DOT_STAGED);
static DOT_WIDE: CustomDesign = design!(dot_rows_per_block(8), 8, 2, "columns", DOT_FIT, DOT_STAGED);
static AXPY: CustomDesign = design!(
    AXPY_ROWS_PER_BLOCK,
    4,
    4,
    "rows",
    AXPY_FIT,
    AXPY_SPLIT,
    AXPY_STAGED
);
static AXPY_WIDE: CustomDesign = design!(
    AXPY_ROWS_PER_BLOCK,
    8,
    4,
    "rows",
    AXPY_FIT,
    AXPY_SPLIT,
    AXPY_STAGED
);
static TENSOR: CustomDesign = CustomDesign {
    tile: Shape3::new(TENSOR_ROWS_PER_BLOCK as u32, MAX_TENSOR_COLS as u32, 64),
    values: &[
        ("rows_per_block", DesignValue::Int(TENSOR_ROWS_PER_BLOCK as i64)),
        ("blocks_per_sm", DesignValue::Int(3)),
        ("fs_per_element", DesignValue::Int(249)),
        ("fs_per_element_column", DesignValue::Int(17)),
        ("ns_per_block", DesignValue::Int(2928)),
        ("ns_per_chunk", DesignValue::Int(1866)),
        ("fs_per_output", DesignValue::Int(3822)),
        // Few blocks run no faster than 73 would (fitted; RMS 0.20 without it).
        ("min_concurrency", DesignValue::Int(73)),
        ("chunk_depth", DesignValue::Int(64)),
        ("partial_bytes", DesignValue::Int(4)),
        ("min_columns", DesignValue::Int(MIN_TENSOR_COLS as i64)),
        ("max_columns", DesignValue::Int(MAX_TENSOR_COLS as i64)),
    ],
    ..AXPY
};

/// The tiny forms' view for the cost model (`select::cost::tiny_seconds`): a fixed time, a time
/// per step along depth of each pass over the outputs (a thread's step is one element, a warp's
/// 32), the sectors of X and Y its warps' steps touch, a time per output and a bandwidth; fitted
/// (`bench/skinny/fit.py`) on harness timings of the fit problems and the tables' skinny problems,
/// RMS log error 0.150 (thread, 975 timings) and 0.248 (warp, 1,722). No table times them: they are
/// calibrated apart (`family`) and estimated by this model alone.
macro_rules! tiny_design {
    ($per_block:expr, $lanes:literal, $fit:expr, $family:literal) => {
        CustomDesign {
            tile: Shape3::new(1, 1, 1),
            values: &[
                ("tiny_outputs_per_block", DesignValue::Int($per_block as i64)),
                ("tiny_lanes", DesignValue::Int($lanes)),
                ("tiny_max_blocks", DesignValue::Int(TINY_MAX_BLOCKS as i64)),
                ("ns_fixed", DesignValue::Int($fit[0])),
                ("ps_per_step", DesignValue::Int($fit[1])),
                ("f64_step_permille", DesignValue::Int($fit[2])),
                ("fs_per_sector_x", DesignValue::Int($fit[3])),
                ("fs_per_sector_y", DesignValue::Int($fit[4])),
                ("fs_per_output", DesignValue::Int($fit[5])),
                ("mb_per_second", DesignValue::Int($fit[6])),
                ("family", DesignValue::Word($family)),
            ],
            ..AXPY
        }
    };
}
static TINY_THREAD: CustomDesign = tiny_design!(
    tiny_outputs_per_block(Form::TinyThread),
    1,
    [4281, 50311, 3006, 591, 961, 9311, 1_816_000],
    "tiny_thread"
);
static TINY_WARP: CustomDesign = tiny_design!(
    tiny_outputs_per_block(Form::TinyWarp),
    32,
    [4407, 49193, 3616, 4984, 1625, 207566, 1_517_000],
    "tiny_warp"
);

macro_rules! kernel {
    ($static:ident, $name:literal, $design:ident, $a:ident, $c:ident, $acc:ident, $layout_a:ident) => {
        #[doc = concat!("The skinny kernel `cutlass_aot_skinny_", $name, "` (selection tables' rows name it).")]
        pub static $static: KernelInfo = KernelInfo {
            name: concat!("cutlass_aot_skinny_", $name),
            rust_name: concat!("skinny_", $name),
            origin: "built in (cutlass_aot/skinny.cuh)",
            min_compute_capability: 80,
            operation: Operation::Gemm(GemmOperation {
                a: TensorAttributes {
                    element: DType::$a,
                    layout: Layout::$layout_a,
                    alignment: 1,
                },
                b: TensorAttributes {
                    element: DType::$a,
                    layout: Layout::Row,
                    alignment: 1,
                },
                c: TensorAttributes {
                    element: DType::$c,
                    layout: Layout::Row,
                    alignment: 1,
                },
                accumulator: DType::$acc,
                math: MathOp::MultiplyAdd,
            }),
            design: Design::Custom(&$design),
            epilogue: EpilogueSpec {
                kind: Epilogue::LinearCombination,
                compute: DType::$acc,
                fusion: Fusion::NONE,
            },
            image: &crate::kernels::IMAGE_SUPPORT,
            entry: c"cutlass_aot_skinny",
            host: HostCode::Custom { built: true },
        };
    };
}

kernel!(DOT_F16, "dot_f16", DOT, F16, F16, F32, Row);
kernel!(DOT_BF16, "dot_bf16", DOT, Bf16, Bf16, F32, Row);
kernel!(DOT_F32, "dot_f32", DOT, F32, F32, F32, Row);
kernel!(DOT_F64, "dot_f64", DOT_WIDE, F64, F64, F64, Row);
kernel!(DOT_F16_F32, "dot_f16_f32", DOT, F16, F32, F32, Row);
kernel!(DOT_BF16_F32, "dot_bf16_f32", DOT, Bf16, F32, F32, Row);
kernel!(AXPY_F16, "axpy_f16", AXPY, F16, F16, F32, Column);
kernel!(AXPY_BF16, "axpy_bf16", AXPY, Bf16, Bf16, F32, Column);
kernel!(AXPY_F32, "axpy_f32", AXPY, F32, F32, F32, Column);
kernel!(AXPY_F64, "axpy_f64", AXPY_WIDE, F64, F64, F64, Column);
kernel!(AXPY_F16_F32, "axpy_f16_f32", AXPY, F16, F32, F32, Column);
kernel!(AXPY_BF16_F32, "axpy_bf16_f32", AXPY, Bf16, F32, F32, Column);
kernel!(TENSOR_F16, "tensor_f16", TENSOR, F16, F16, F32, Row);
kernel!(TENSOR_BF16, "tensor_bf16", TENSOR, Bf16, Bf16, F32, Row);
kernel!(TENSOR_F16_F32, "tensor_f16_f32", TENSOR, F16, F32, F32, Row);
kernel!(TENSOR_BF16_F32, "tensor_bf16_f32", TENSOR, Bf16, F32, F32, Row);
kernel!(
    TINY_THREAD_F16,
    "tiny_thread_f16",
    TINY_THREAD,
    F16,
    F16,
    F32,
    Row
);
kernel!(
    TINY_THREAD_BF16,
    "tiny_thread_bf16",
    TINY_THREAD,
    Bf16,
    Bf16,
    F32,
    Row
);
kernel!(
    TINY_THREAD_F32,
    "tiny_thread_f32",
    TINY_THREAD,
    F32,
    F32,
    F32,
    Row
);
kernel!(
    TINY_THREAD_F64,
    "tiny_thread_f64",
    TINY_THREAD,
    F64,
    F64,
    F64,
    Row
);
kernel!(
    TINY_THREAD_F16_F32,
    "tiny_thread_f16_f32",
    TINY_THREAD,
    F16,
    F32,
    F32,
    Row
);
kernel!(
    TINY_THREAD_BF16_F32,
    "tiny_thread_bf16_f32",
    TINY_THREAD,
    Bf16,
    F32,
    F32,
    Row
);
kernel!(TINY_WARP_F16, "tiny_warp_f16", TINY_WARP, F16, F16, F32, Row);
kernel!(TINY_WARP_BF16, "tiny_warp_bf16", TINY_WARP, Bf16, Bf16, F32, Row);
kernel!(TINY_WARP_F32, "tiny_warp_f32", TINY_WARP, F32, F32, F32, Row);
kernel!(TINY_WARP_F64, "tiny_warp_f64", TINY_WARP, F64, F64, F64, Row);
kernel!(
    TINY_WARP_F16_F32,
    "tiny_warp_f16_f32",
    TINY_WARP,
    F16,
    F32,
    F32,
    Row
);
kernel!(
    TINY_WARP_BF16_F32,
    "tiny_warp_bf16_f32",
    TINY_WARP,
    Bf16,
    F32,
    F32,
    Row
);

/// Every skinny kernel with its element types and form.
pub static KERNELS: [(&KernelInfo, Elements, Form); 28] = [
    (&DOT_F16, Elements::F16, Form::Dot),
    (&DOT_BF16, Elements::Bf16, Form::Dot),
    (&DOT_F32, Elements::F32, Form::Dot),
    (&DOT_F64, Elements::F64, Form::Dot),
    (&DOT_F16_F32, Elements::F16F32, Form::Dot),
    (&DOT_BF16_F32, Elements::Bf16F32, Form::Dot),
    (&AXPY_F16, Elements::F16, Form::Axpy),
    (&AXPY_BF16, Elements::Bf16, Form::Axpy),
    (&AXPY_F32, Elements::F32, Form::Axpy),
    (&AXPY_F64, Elements::F64, Form::Axpy),
    (&AXPY_F16_F32, Elements::F16F32, Form::Axpy),
    (&AXPY_BF16_F32, Elements::Bf16F32, Form::Axpy),
    (&TENSOR_F16, Elements::F16, Form::Tensor),
    (&TENSOR_BF16, Elements::Bf16, Form::Tensor),
    (&TENSOR_F16_F32, Elements::F16F32, Form::Tensor),
    (&TENSOR_BF16_F32, Elements::Bf16F32, Form::Tensor),
    (&TINY_THREAD_F16, Elements::F16, Form::TinyThread),
    (&TINY_THREAD_BF16, Elements::Bf16, Form::TinyThread),
    (&TINY_THREAD_F32, Elements::F32, Form::TinyThread),
    (&TINY_THREAD_F64, Elements::F64, Form::TinyThread),
    (&TINY_THREAD_F16_F32, Elements::F16F32, Form::TinyThread),
    (&TINY_THREAD_BF16_F32, Elements::Bf16F32, Form::TinyThread),
    (&TINY_WARP_F16, Elements::F16, Form::TinyWarp),
    (&TINY_WARP_BF16, Elements::Bf16, Form::TinyWarp),
    (&TINY_WARP_F32, Elements::F32, Form::TinyWarp),
    (&TINY_WARP_F64, Elements::F64, Form::TinyWarp),
    (&TINY_WARP_F16_F32, Elements::F16F32, Form::TinyWarp),
    (&TINY_WARP_BF16_F32, Elements::Bf16F32, Form::TinyWarp),
];

/// The skinny kernel's element types and form, if `kernel` is one.
pub fn skinny_of(kernel: &KernelInfo) -> Option<(Elements, Form)> {
    KERNELS
        .iter()
        .find(|(k, ..)| std::ptr::eq(*k, kernel))
        .map(|(_, elements, form)| (*elements, *form))
}

/// The skinny kernel's element types, if `kernel` is one.
pub fn elements_of(kernel: &KernelInfo) -> Option<Elements> {
    skinny_of(kernel).map(|(elements, _)| elements)
}

fn kernel_for(a: DType, b: DType, c: DType, form: Form) -> Option<&'static KernelInfo> {
    if a != b {
        return None;
    }
    KERNELS
        .iter()
        .find(|(k, _, f)| *f == form && k.gemm().a.element == a && k.gemm().c.element == c)
        .map(|(k, ..)| *k)
}

/// The skinny ways of `problem` (`operands`, checked by `validate`, as `problem_of` sees them):
/// each orientation whose product has at most 64 columns on the CUDA-core kernel of its types and
/// of X's layout and, with 16-bit operands, on the tensor-core kernel of its types, at each split
/// of K.
pub fn ways(
    problem: &GemmProblem,
    operands: &GemmOperands,
    device: &crate::device::DeviceProps,
    policy: Policy,
) -> Vec<Candidate<GemmWay>> {
    let mut out = Vec::new();
    let supported = crate::kernels::IMAGE_SUPPORT.has_code() && device.compute_capability >= 80;
    if !supported || problem.k == 0 || operands.fusion != crate::FusionOperands::default() {
        return out;
    }
    for orientation in [Orientation::AsGiven, Orientation::Transposed] {
        let oriented = orientation.problem(problem);
        let key = key_of(&oriented);
        let work = Work {
            output_column_major: oriented.layout_c == Layout::Column,
            depth_contiguous: [
                oriented.layout_a == Layout::Row,
                oriented.layout_b == Layout::Column,
            ],
            ..work_of(&oriented)
        };
        let layout_form = match oriented.layout_a {
            Layout::Row => Form::Dot,
            _ => Form::Axpy,
        };
        for form in [layout_form, Form::Tensor, Form::TinyThread, Form::TinyWarp] {
            let (a, b, c) = (oriented.element_a, oriented.element_b, oriented.element_c);
            let Some(kernel) = kernel_for(a, b, c, form) else {
                continue;
            };
            if oriented.n > form.max_cols() || !policy.allows(kernel) || !tiny_enough(form, &oriented) {
                continue;
            }
            // No table row calibrates the tiny forms: they must be estimated clearly faster.
            let margin = if form.is_tiny() { TINY_MARGIN } else { 1.0 };
            for slices in SLICES {
                if slices > 1 && form.is_tiny() {
                    break;
                }
                if slices > 1 && oriented.k / slices < min_slice_depth(form) {
                    break;
                }
                out.push(Candidate {
                    kernel,
                    split_k: slices,
                    way: GemmWay {
                        orientation,
                        staged: None,
                    },
                    key,
                    work: work.clone(),
                    margin,
                });
            }
        }
    }
    out
}

/// Factor on the tiny forms' estimates (their model's RMS log error is 0.15–0.25).
const TINY_MARGIN: f64 = 1.1;

/// Whether `form` is offered for `problem`: the other forms always; a thread per output where
/// depth is short (each thread walks all of it), a warp per output where the outputs are few
/// (each walks its row of X and column of Y).
fn tiny_enough(form: Form, problem: &GemmProblem) -> bool {
    let outputs = problem.m * problem.n * problem.batch_count.max(1);
    match form {
        Form::TinyThread => problem.k <= 64,
        Form::TinyWarp => outputs <= 1 << 16,
        _ => true,
    }
}

/// The view of `operand` laid out as `layout`, read transposed when `transposed`.
fn view_of(operand: &Operand, layout: Layout, transposed: bool) -> View {
    // One matrix for every batch: stride 0.
    let shape = &operand.shape;
    let batch_stride = if shape.batch_count == 1 {
        0
    } else {
        shape.batch_stride
    };
    let mut view = View::strided(operand.address, layout, shape.ld, batch_stride);
    if transposed {
        std::mem::swap(&mut view.row_stride, &mut view.col_stride);
    }
    view
}

/// The launch `selection` (a skinny kernel) makes of `operands`, partial sums at `partials`.
pub(crate) fn launch_of(
    selection: &Selection,
    signature: Signature,
    operands: &GemmOperands,
    partials: u64,
) -> Result<Skinny, Error> {
    let (elements, form) = skinny_of(selection.kernel).ok_or_else(|| {
        Error::invalid(
            "dispatch",
            format!("{} is not a skinny kernel", selection.kernel.name),
        )
    })?;
    let t = selection.orientation == Orientation::Transposed;
    let a = view_of(&operands.a, signature.layout_a, t);
    let b = view_of(&operands.b, signature.layout_b, t);
    let d = view_of(&operands.d, signature.layout_c, t);
    let c = operands
        .c
        .as_ref()
        .map_or(d, |c| view_of(c, signature.layout_c, t));
    let (x, y) = if t { (b, a) } else { (a, b) };
    let (m, n) = (operands.d.shape.rows, operands.d.shape.cols);
    let (rows, cols) = if t { (n, m) } else { (m, n) };
    Ok(Skinny {
        elements,
        form,
        x,
        y,
        c,
        d,
        rows,
        cols,
        depth: operands.a.shape.cols,
        batch: operands.d.shape.batch_count.max(1),
        alpha: operands.alpha,
        beta: if operands.c.is_some() { operands.beta } else { 0.0 },
        slices: selection.split_k.max(1),
        partials,
    })
}

/// Bytes of partial sums the launch of `selection` on `operands` needs (0 without a split).
pub fn workspace_bytes(selection: &Selection, operands: &GemmOperands) -> usize {
    let Some(elements) = elements_of(selection.kernel) else {
        return 0;
    };
    let (m, n) = (operands.d.shape.rows, operands.d.shape.cols);
    let batch = operands.d.shape.batch_count.max(1);
    Skinny::partial_bytes(elements, m, n, batch, selection.split_k)
}

/// Launches `selection` (a skinny kernel) on `operands`: its partial sums, where it splits K, in
/// `workspace` or the stream's cached scratch.
///
/// # Safety
/// As [`super::launch_raw`].
pub(crate) unsafe fn launch(
    stream: &cudarc::driver::CudaStream,
    selection: &Selection,
    signature: Signature,
    operands: &GemmOperands,
    workspace: Option<&mut crate::Workspace>,
) -> Result<(), Error> {
    stream
        .context()
        .bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    let bytes = workspace_bytes(selection, operands);
    // The scratch guard lives until the kernels are enqueued.
    let mut scratch = None;
    let partials = if bytes > 0 {
        let held = scratch.insert(crate::workspace::Scratch::of(stream, workspace)?);
        held.at_least(stream, bytes)?.0
    } else {
        0
    };
    let product = launch_of(selection, signature, operands, partials)?;
    let launched = unsafe { product.enqueue(stream) };
    drop(scratch);
    launched
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::cost::{gemm_bytes, kernel_seconds, Piece, Work};

    fn work(m: usize, n: usize, k: usize) -> Work {
        let piece = Piece::new(m, n, k, 1);
        Work::single(piece, gemm_bytes(piece, [16, 16, 16], false))
    }

    /// The model the designs state: splitting a deep product over few rows pays, the tensor form
    /// costs less per column than the CUDA-core one, and nothing beats its bytes.
    #[test]
    fn the_model_splits_deep_products_and_favours_tensor_cores_for_wide_ones() {
        let deep = work(64, 4, 60000);
        assert!(kernel_seconds(&DOT_F16, &deep, 16, 132) < kernel_seconds(&DOT_F16, &deep, 1, 132) / 4.0);
        assert!(
            kernel_seconds(&TENSOR_F16, &deep, 16, 132) < kernel_seconds(&TENSOR_F16, &deep, 1, 132) / 4.0
        );
        let sixteen = work(50000, 16, 4096);
        assert!(kernel_seconds(&TENSOR_F16, &sixteen, 1, 132) < kernel_seconds(&DOT_F16, &sixteen, 1, 132));
        // 48 columns on CUDA cores: three groups of 16, each reading X.
        let wide = work(50000, 48, 4096);
        let grouped = kernel_seconds(&DOT_F16, &wide, 1, 132) / kernel_seconds(&DOT_F16, &sixteen, 1, 132);
        assert!((2.5..3.5).contains(&grouped), "{grouped}");
        let vector = work(100000, 1, 8192);
        let floor = vector.bytes / 2.6e12;
        assert!(kernel_seconds(&AXPY_F16, &vector, 1, 132) >= floor);
        assert!(kernel_seconds(&AXPY_F16, &vector, 1, 132) < 2.0 * floor + 1e-5);
    }

    /// The tiny forms' model as bench/skinny/fit.py computes it (the values it prints for these
    /// problems): the fixed floor, each pass's steps, the sectors each step touches by layout.
    #[test]
    fn the_tiny_model_is_the_fitted_one() {
        let seconds = |kernel: &KernelInfo, (m, n, k): (usize, usize, usize), contiguous, bits| {
            let piece = Piece::new(m, n, k, 1);
            let work = Work {
                depth_contiguous: contiguous,
                ..Work::single(piece, gemm_bytes(piece, [bits; 3], false))
            };
            kernel_seconds(kernel, &work, 1, 132) * 1e6
        };
        let strided = [false, false];
        let cases: [(&KernelInfo, (usize, usize, usize), [bool; 2], u32, f64); 8] = [
            (&TINY_THREAD_F16, (2, 1, 2), strided, 16, 4.382),
            (&TINY_THREAD_F16, (38001, 5, 1), strided, 16, 6.104),
            (&TINY_THREAD_F16, (4, 8448, 3200), [true, true], 16, 271.505),
            (&TINY_THREAD_F64, (100, 40, 50), [true, false], 64, 11.932),
            (&TINY_WARP_F16, (5, 4, 353), strided, 16, 5.024),
            (&TINY_WARP_F16, (4, 8448, 3200), [true, true], 16, 50.502),
            (&TINY_WARP_F16, (4724, 5, 4160), strided, 16, 310.597),
            (&TINY_WARP_F64, (100, 40, 50), [true, false], 64, 6.089),
        ];
        for (kernel, shape, contiguous, bits, expected) in cases {
            let us = seconds(kernel, shape, contiguous, bits);
            assert!(
                (us / expected - 1.0).abs() < 1e-3,
                "{} {shape:?}: {us} vs {expected}",
                kernel.rust_name
            );
        }
        // Offered only where they can be fast.
        let problem = |m, n, k| {
            let row = Layout::Row;
            GemmProblem::new((m, n, k), (DType::F16, DType::F16, DType::F16), (row, row, row))
        };
        assert!(tiny_enough(Form::TinyThread, &problem(9000, 9000, 64)));
        assert!(!tiny_enough(Form::TinyThread, &problem(2, 2, 65)));
        assert!(tiny_enough(Form::TinyWarp, &problem(2, 2, 65)));
        assert!(!tiny_enough(Form::TinyWarp, &problem(257, 256, 1)));
    }

    /// The axpy form's threads split the depth below a block of rows: a deep product of a few rows
    /// costs the rows its row groups cover, not a whole block's 256.
    #[test]
    fn the_axpy_model_prices_few_rows_by_the_rows_their_threads_cover() {
        let seconds = |m: usize| kernel_seconds(&AXPY_F16, &work(m, 4, 60000), 1, 132);
        assert!(
            seconds(2) < seconds(256) / 4.0,
            "{} vs {}",
            seconds(2),
            seconds(256)
        );
        // 100 rows take 128 rows' time, 5 rows 8 rows' (and both the staging of Y).
        let ratio = seconds(100) / seconds(5);
        assert!((2.0..16.0).contains(&ratio), "{ratio}");
        // A whole block (and the CUDA-core dot form, which does not split) keeps its rows.
        assert!((seconds(256) / seconds(200) - 1.0).abs() < 0.01);
        // Every block stages all of Y's slice: 16 columns of few rows cost far more than one.
        let columns = |n: usize| kernel_seconds(&AXPY_F16, &work(5, n, 60000), 1, 132);
        assert!(
            columns(16) > 4.0 * columns(1),
            "{} vs {}",
            columns(16),
            columns(1)
        );
        let dot = |m: usize| kernel_seconds(&DOT_F16, &work(m, 4, 60000), 1, 132);
        assert!((dot(2) / dot(32) - 1.0).abs() < 0.01);
    }
}
