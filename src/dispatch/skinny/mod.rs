//! Skinny GEMMs as ways of dispatch: a product with at most 64 columns (as given or transposed)
//! may run on the crate's own CUDA-core streaming kernels (16 columns a block), one of 16-bit
//! operands also on its tensor-core kernels (`support::skinny`), instead of a CUTLASS tile that is
//! mostly empty (and, on a misaligned operand, reads it two bytes at a time); a tiny product of any
//! width also on short-path kernels (a thread or a warp per output). Each kernel is described like
//! any other ([`KernelInfo`](crate::kernel::KernelInfo): operands, a design whose values give the
//! cost model its throughput; `kernels.rs`), so the one selection engine ranks it beside CUTLASS's.

use super::candidates::{key_of, work_of, GemmWay};
use super::{Orientation, Policy, Selection, Signature};
use crate::error::Error;
use crate::gemm::{GemmOperands, GemmProblem, Operand};
use crate::model::Layout;
use crate::select::Candidate;
use crate::support::skinny::{walks_in_vectors, Skinny};
pub use crate::support::skinny::{Elements, Form, MAX_COLS, MAX_VECTOR_COLS};
use crate::support::View;

mod kernels;
pub use kernels::*;

/// Split-K slices tried: powers of two, each slice at least [`min_slice_depth`] deep.
const SLICES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The shallowest slice worth its partial sums: a staged chunk (64) of the tensor form, 32 else.
const fn min_slice_depth(form: Form) -> usize {
    match form {
        Form::Tensor => 64,
        _ => 32,
    }
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
        let work = work_of(&oriented);
        let layout_form = match oriented.layout_a {
            Layout::Row => Form::Dot,
            _ => Form::Axpy,
        };
        let bytes = (oriented.element_a.bits() as usize).div_ceil(8);
        let vector = (layout_form == Form::Dot && vectors_fit(problem, operands, orientation, bytes))
            .then_some(Form::DotVector);
        let forms = [
            Some(layout_form),
            vector,
            Some(Form::Tensor),
            Some(Form::TinyThread),
            Some(Form::TinyWarp),
        ];
        for form in forms.into_iter().flatten() {
            let (a, b, c) = (oriented.element_a, oriented.element_b, oriented.element_c);
            let Some(kernel) = kernel_for(a, b, c, form) else {
                continue;
            };
            if oriented.n > form.max_cols() || !policy.allows(kernel) || !tiny_enough(form, &oriented) {
                continue;
            }
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
                    margin: 1.0,
                });
            }
        }
    }
    out
}

/// Whether `form` is offered for `problem`: the other forms always; a thread per output where
/// depth is short (each thread walks all of it), a warp per output where the outputs are few
/// (each walks its row of X and column of Y) and the multiply-adds at most [`TINY_WARP_MAX_MACS`].
fn tiny_enough(form: Form, problem: &GemmProblem) -> bool {
    let outputs = problem.m * problem.n * problem.batch_count.max(1);
    match form {
        Form::TinyThread => problem.k <= 64,
        Form::TinyWarp => outputs <= 1 << 16 && outputs.saturating_mul(problem.k) <= TINY_WARP_MAX_MACS,
        _ => true,
    }
}

/// Multiply-adds beyond which the warp form is not offered: in the H100 tables it was the fastest
/// way of 370 of 786 problems it was timed on up to 2^24 and of 7 of 143 beyond, where its model
/// underestimates it up to 2x.
pub const TINY_WARP_MAX_MACS: usize = 1 << 24;

/// Whether X and Y of `orientation` fit the vector dot form: both walk depth contiguously in
/// 16-byte vectors of `bytes`-byte elements ([`Skinny::vectors_fit`]).
fn vectors_fit(
    problem: &GemmProblem,
    operands: &GemmOperands,
    orientation: Orientation,
    bytes: usize,
) -> bool {
    let t = orientation == Orientation::Transposed;
    let a = view_of(&operands.a, problem.layout_a, t);
    let b = view_of(&operands.b, problem.layout_b, t);
    let (x, y) = if t { (b, a) } else { (a, b) };
    let (m, n) = (operands.d.shape.rows, operands.d.shape.cols);
    let (rows, cols) = if t { (n, m) } else { (m, n) };
    let batch = operands.d.shape.batch_count.max(1);
    walks_in_vectors(&x, false, rows, batch, bytes) && walks_in_vectors(&y, true, cols, batch, bytes)
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
    use crate::kernel::KernelInfo;
    use crate::model::DType;
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

    /// X's load width: 4 or 2 elements where its contiguous extent allows (depth for a row-major
    /// X, rows for a column-major one), and wider loads cost the tensor form's staging less.
    #[test]
    fn wider_loads_of_x_cost_the_tensor_form_less() {
        use crate::support::skinny::x_load_width;
        assert_eq!(x_load_width(true, 3, 8196), 4);
        assert_eq!(x_load_width(false, 6, 8196), 2);
        assert_eq!(x_load_width(true, 8, 8191), 1);
        let at = |width| {
            let work = Work {
                a_load_width: width,
                ..work(4096, 16, 8192)
            };
            kernel_seconds(&TENSOR_F16, &work, 1, 132)
        };
        assert!(at(4) < at(2) && at(2) < at(1), "{} {} {}", at(4), at(2), at(1));
        assert_eq!(at(0), at(1));
        // The CUDA-core forms load X an element at a time whatever its alignment.
        let dot = |width| {
            kernel_seconds(
                &DOT_F16,
                &Work {
                    a_load_width: width,
                    ..work(4096, 16, 8192)
                },
                1,
                132,
            )
        };
        assert_eq!(dot(4), dot(1));
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
        let cases = [
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
