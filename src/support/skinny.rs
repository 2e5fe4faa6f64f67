//! Launches of the skinny GEMM kernels: out = alpha·X·Y + beta·C for few output columns, any
//! strides — at most 64 on CUDA cores at memory speed (`cutlass_aot/skinny.cuh`, in groups of
//! 16), at most 64 of 16-bit operands on tensor cores (`cutlass_aot/narrow.cuh`).
//! [`crate::dispatch`] ranks them beside CUTLASS's kernels (`dispatch::skinny`).

use std::ffi::CStr;

use cudarc::driver::CudaStream;

use super::{launch_grid, View};
use crate::error::Error;

/// The most output columns a CUDA-core (dot or axpy) skinny product computes: in groups of
/// `GROUP_COLS`, one per block, each reading X.
pub const MAX_COLS: usize = 64;
pub const GROUP_COLS: usize = 16;
/// The most output columns the vector dot form computes (more would spill its registers).
pub const MAX_VECTOR_COLS: usize = 8;
/// The most output columns a tensor-core skinny kernel computes, and the fewest its tile has.
pub const MAX_TENSOR_COLS: usize = 64;
pub const MIN_TENSOR_COLS: usize = 16;

/// Threads per block and rows per block of each form (as `skinny.cuh` and `narrow.cuh` define them).
pub const DOT_THREADS: u32 = 256;
pub const AXPY_THREADS: u32 = 128;
pub const AXPY_ROWS_PER_BLOCK: usize = 256;
pub const TENSOR_THREADS: u32 = 256;
pub const TENSOR_ROWS_PER_BLOCK: usize = 128;
pub const TINY_THREADS: u32 = 128;
/// Blocks a tiny launch runs at most (its kernels loop over the outputs): 16 resident on each of
/// an H100's 132 SMs.
pub const TINY_MAX_BLOCKS: usize = 132 * 16;

/// Elements of X the tensor form loads at once from packed operands (as `narrow.cuh`'s `x_vector`
/// decides at run time): 4 or 2 where X's contiguous extent (`depth` for a row-major X, `rows`
/// for a column-major one) is a multiple of it, else 1.
pub const fn x_load_width(x_row_major: bool, rows: usize, depth: usize) -> u32 {
    let extent = if x_row_major { depth } else { rows };
    if extent % 4 == 0 {
        4
    } else if extent % 2 == 0 {
        2
    } else {
        1
    }
}

/// Outputs one block of a tiny form computes at once: a thread's each, or a warp's each.
pub const fn tiny_outputs_per_block(form: Form) -> usize {
    match form {
        Form::TinyWarp => TINY_THREADS as usize / 32,
        _ => TINY_THREADS as usize,
    }
}

/// Rows one block of the dot form computes: 8 warps of 4 rows (2 with f64 accumulators).
pub const fn dot_rows_per_block(accumulator_bytes: usize) -> usize {
    if accumulator_bytes == 8 {
        16
    } else {
        32
    }
}

/// How the kernel walks X.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// X's rows contiguous along depth: lanes along depth, shuffled sums.
    Dot,
    /// The dot form reading X and Y in 16-byte vectors: X's rows and Y's columns contiguous along
    /// depth, each (and every slice of depth) starting on a 16-byte boundary.
    DotVector,
    /// X's columns contiguous along rows: a thread per row.
    Axpy,
    /// Either layout, staged through shared memory into tensor-core fragments (16-bit X and Y).
    Tensor,
    /// Any shape and layout, a thread per output: tiny products (no staging, no split).
    TinyThread,
    /// Any shape and layout, a warp per output with its lanes along depth: tiny products.
    TinyWarp,
}

impl Form {
    /// The most output columns the form computes.
    pub const fn max_cols(self) -> usize {
        match self {
            Form::Tensor => MAX_TENSOR_COLS,
            Form::DotVector => MAX_VECTOR_COLS,
            Form::TinyThread | Form::TinyWarp => usize::MAX,
            _ => MAX_COLS,
        }
    }

    /// Whether the form is a tiny one (any shape, one launch, no split).
    pub const fn is_tiny(self) -> bool {
        matches!(self, Form::TinyThread | Form::TinyWarp)
    }
}

/// The element types of a skinny kernel: A and B, and C/D.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elements {
    F16,
    Bf16,
    F32,
    F64,
    F16F32,
    Bf16F32,
}

impl Elements {
    /// Bytes of an element of X and Y.
    pub const fn operand_bytes(self) -> usize {
        match self {
            Elements::F16 | Elements::Bf16 | Elements::F16F32 | Elements::Bf16F32 => 2,
            Elements::F32 => 4,
            Elements::F64 => 8,
        }
    }

    /// Bytes of the accumulator (and of a partial sum).
    pub const fn accumulator_bytes(self) -> usize {
        match self {
            Elements::F64 => 8,
            _ => 4,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct SkinnyArgs {
    x: View,
    y: View,
    c: View,
    d: View,
    rows: i64,
    cols: i64,
    depth: i64,
    batch: i64,
    slice_depth: i64,
    partials: u64,
    alpha: f64,
    beta: f64,
    slices: i32,
    reserved: i32,
}

/// One skinny product: out (batch × rows × cols) = alpha·X (rows × depth)·Y (depth × cols) +
/// beta·C, in `slices` slices of depth (partial sums at `partials`, [`Skinny::partial_bytes`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Skinny {
    pub(crate) elements: Elements,
    /// Dot or axpy must match X's layout (see [`Form`]).
    pub(crate) form: Form,
    pub(crate) x: View,
    pub(crate) y: View,
    /// C (read only when beta ≠ 0) and D.
    pub(crate) c: View,
    pub(crate) d: View,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) depth: usize,
    pub(crate) batch: usize,
    pub(crate) alpha: f64,
    pub(crate) beta: f64,
    pub(crate) slices: usize,
    pub(crate) partials: u64,
}

/// The vector dot form's loads (`dot_vector` of `cutlass_aot/skinny_vector.cuh`).
const VECTOR_BYTES: usize = 16;

/// Whether `view` walks depth contiguously in 16-byte vectors of `bytes`-byte elements: unit stride along depth, and its
/// start, each of its `lines` (rows of X, columns of Y) and each of its `batch` matrices 16-byte
/// aligned. `along_rows`: depth runs along the view's rows (Y) instead of its columns (X).
pub(crate) fn walks_in_vectors(
    view: &View,
    along_rows: bool,
    lines: usize,
    batch: usize,
    bytes: usize,
) -> bool {
    let (unit, line_stride) = if along_rows {
        (view.row_stride, view.col_stride)
    } else {
        (view.col_stride, view.row_stride)
    };
    let vector = (VECTOR_BYTES / bytes) as i64;
    unit == 1
        && view.base % VECTOR_BYTES as u64 == 0
        && (lines <= 1 || line_stride % vector == 0)
        && (batch <= 1 || view.batch_stride % vector == 0)
}

impl Skinny {
    /// Whether X and Y fit the vector dot form: both contiguous along depth and 16-byte aligned
    /// (`dot_vector` in `skinny_vector.cuh` reads them so and checks nothing).
    pub fn vectors_fit(&self) -> bool {
        let bytes = self.elements.operand_bytes();
        walks_in_vectors(&self.x, false, self.rows, self.batch, bytes)
            && walks_in_vectors(&self.y, true, self.cols, self.batch, bytes)
    }

    /// Bytes of partial sums `slices` slices need (0 without a split).
    pub fn partial_bytes(elements: Elements, rows: usize, cols: usize, batch: usize, slices: usize) -> usize {
        if slices <= 1 {
            return 0;
        }
        slices * batch * rows * cols * elements.accumulator_bytes()
    }

    /// Enqueues the product (and the slices' reduction) on `stream`; nothing when it is empty.
    ///
    /// # Safety
    /// Every view must address device memory holding the elements it names; `partials` must hold
    /// [`Skinny::partial_bytes`]; the stream's context must be current.
    pub unsafe fn enqueue(&self, stream: &CudaStream) -> Result<(), Error> {
        if self.rows == 0 || self.cols == 0 || self.batch == 0 {
            return Ok(());
        }
        let form = self.form;
        let walks = match form {
            Form::Dot => self.x.col_stride == 1,
            Form::DotVector => self.vectors_fit(),
            Form::Axpy => self.x.row_stride == 1,
            Form::Tensor | Form::TinyThread | Form::TinyWarp => true,
        };
        let slices_fit = if form.is_tiny() {
            self.slices == 1
        } else {
            (1..=65535).contains(&self.slices)
        };
        let fits = walks && self.cols <= form.max_cols() && slices_fit;
        let Some(entry) = entry(self.elements, form, self.cols).filter(|_| fits) else {
            return Err(Error::invalid(
                "skinny GEMM",
                format!(
                    "{:?} form of {:?} on X strides ({}, {}), {} columns, {} slices: the dot form reads rows \
                     contiguous along depth (the vector dot form also Y's columns, 16-byte aligned), the axpy \
                     form columns contiguous along rows, the tensor form 16-bit operands; at most {} columns; \
                     1 to 65535 slices (the tiny forms: 1)",
                    form,
                    self.elements,
                    self.x.row_stride,
                    self.x.col_stride,
                    self.cols,
                    self.slices,
                    form.max_cols()
                ),
            ));
        };
        // Slices of whole depth (the tensor form's a multiple of 4, which its vector loads of X
        // need); fewer where rounding leaves the last ones nothing to do.
        let mut slice_depth = self.depth.max(1).div_ceil(self.slices.min(self.depth.max(1)));
        if form == Form::Tensor && self.slices > 1 {
            slice_depth = slice_depth.next_multiple_of(4);
        }
        if form == Form::DotVector && self.slices > 1 {
            slice_depth = slice_depth.next_multiple_of(VECTOR_BYTES / self.elements.operand_bytes());
        }
        let slices = self.depth.max(1).div_ceil(slice_depth);
        let args = SkinnyArgs {
            x: self.x,
            y: self.y,
            c: self.c,
            d: self.d,
            rows: self.rows as i64,
            cols: self.cols as i64,
            depth: self.depth as i64,
            batch: self.batch as i64,
            slice_depth: slice_depth as i64,
            partials: self.partials,
            alpha: self.alpha,
            beta: self.beta,
            slices: slices as i32,
            reserved: 0,
        };
        if form.is_tiny() {
            let outputs = self.rows * self.cols * self.batch;
            let per_block = tiny_outputs_per_block(form);
            let blocks = outputs.div_ceil(per_block).min(TINY_MAX_BLOCKS) as u32;
            return unsafe { launch_grid(stream, entry, &args, (blocks, 1, 1), (TINY_THREADS, 1, 1)) };
        }
        let (rows_per_block, threads) = match form {
            Form::Dot | Form::DotVector => {
                (dot_rows_per_block(self.elements.accumulator_bytes()), DOT_THREADS)
            }
            Form::Axpy => (AXPY_ROWS_PER_BLOCK, AXPY_THREADS),
            _ => (TENSOR_ROWS_PER_BLOCK, TENSOR_THREADS),
        };
        let groups = match form {
            Form::Dot | Form::DotVector | Form::Axpy => self.cols.div_ceil(GROUP_COLS),
            _ => 1,
        };
        let blocks = self.rows.div_ceil(rows_per_block) * groups;
        if blocks > i32::MAX as usize {
            return Err(Error::invalid(
                "skinny GEMM",
                format!(
                    "{} rows in {groups} groups of columns need more than 2^31 blocks",
                    self.rows
                ),
            ));
        }
        let grid = (blocks as u32, slices as u32, self.batch.min(65535) as u32);
        unsafe { launch_grid(stream, entry, &args, grid, (threads, 1, 1))? };
        if slices > 1 {
            let total = self.rows * self.cols * self.batch;
            let per_block = REDUCE_THREADS as usize / reduce_parts(slices);
            let blocks = total.div_ceil(per_block).min(1 << 16) as u32;
            unsafe {
                launch_grid(
                    stream,
                    reduce_entry(self.elements),
                    &args,
                    (blocks, 1, 1),
                    (REDUCE_THREADS, 1, 1),
                )?
            };
        }
        Ok(())
    }
}

/// The kernel of `elements` and `form` for `cols` columns (the next power of two the form has);
/// `None` for the tensor form of f32 or f64 (it takes 16-bit operands only).
fn entry(elements: Elements, form: Form, cols: usize) -> Option<&'static CStr> {
    macro_rules! name {
        ($($part:literal),+) => {
            const {
                match CStr::from_bytes_with_nul(concat!($($part),+, "\0").as_bytes()) {
                    Ok(name) => name,
                    Err(_) => panic!("a kernel name without an interior NUL"),
                }
            }
        };
    }
    macro_rules! widths {
        ($form:literal, $name:literal) => {
            match cols {
                0..=1 => name!("cutlass_aot_skinny_", $form, "_", $name, "_n1"),
                2 => name!("cutlass_aot_skinny_", $form, "_", $name, "_n2"),
                3..=4 => name!("cutlass_aot_skinny_", $form, "_", $name, "_n4"),
                5..=8 => name!("cutlass_aot_skinny_", $form, "_", $name, "_n8"),
                _ => name!("cutlass_aot_skinny_", $form, "_", $name, "_n16"),
            }
        };
    }
    macro_rules! tensor {
        ($name:literal) => {
            match cols {
                0..=16 => name!("cutlass_aot_narrow_", $name, "_n16"),
                17..=32 => name!("cutlass_aot_narrow_", $name, "_n32"),
                _ => name!("cutlass_aot_narrow_", $name, "_n64"),
            }
        };
    }
    macro_rules! forms {
        ($name:literal, $tensor:expr) => {
            match form {
                Form::Dot => Some(widths!("dot", $name)),
                Form::DotVector => match cols {
                    0..=1 => Some(name!("cutlass_aot_skinny_dotv_", $name, "_n1")),
                    2 => Some(name!("cutlass_aot_skinny_dotv_", $name, "_n2")),
                    3..=4 => Some(name!("cutlass_aot_skinny_dotv_", $name, "_n4")),
                    5..=MAX_VECTOR_COLS => Some(name!("cutlass_aot_skinny_dotv_", $name, "_n8")),
                    _ => None,
                },
                Form::Axpy => Some(widths!("axpy", $name)),
                Form::Tensor => $tensor,
                Form::TinyThread => Some(name!("cutlass_aot_skinny_tiny_thread_", $name)),
                Form::TinyWarp => Some(name!("cutlass_aot_skinny_tiny_warp_", $name)),
            }
        };
    }
    match elements {
        Elements::F16 => forms!("f16", Some(tensor!("f16"))),
        Elements::Bf16 => forms!("bf16", Some(tensor!("bf16"))),
        Elements::F32 => forms!("f32", None),
        Elements::F64 => forms!("f64", None),
        Elements::F16F32 => forms!("f16_f32", Some(tensor!("f16_f32"))),
        Elements::Bf16F32 => forms!("bf16_f32", Some(tensor!("bf16_f32"))),
    }
}

/// Threads of a reduce block (skinny.cuh's `kReduceThreads`).
const REDUCE_THREADS: u32 = 256;

/// Threads the reduce kernel gives each output (skinny.cuh's `reduce_parts`): a block reduces
/// `REDUCE_THREADS / reduce_parts(slices)` outputs at a time.
fn reduce_parts(slices: usize) -> usize {
    match slices {
        8.. => 8,
        4..=7 => 4,
        2..=3 => 2,
        _ => 1,
    }
}

/// The kernel adding the slices' partial sums of `elements`.
fn reduce_entry(elements: Elements) -> &'static CStr {
    match elements {
        Elements::F16 => c"cutlass_aot_skinny_reduce_f16",
        Elements::Bf16 => c"cutlass_aot_skinny_reduce_bf16",
        Elements::F32 => c"cutlass_aot_skinny_reduce_f32",
        Elements::F64 => c"cutlass_aot_skinny_reduce_f64",
        Elements::F16F32 => c"cutlass_aot_skinny_reduce_f16_f32",
        Elements::Bf16F32 => c"cutlass_aot_skinny_reduce_bf16_f32",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_the_kernels_skinny_cuh_defines() {
        let source = include_str!("../../codegen/cutlass_glue/include/cutlass_aot/skinny.cuh");
        let name = |elements, form, cols| entry(elements, form, cols).map(|e| e.to_str().unwrap());
        assert_eq!(
            name(Elements::F16, Form::Dot, 3),
            Some("cutlass_aot_skinny_dot_f16_n4")
        );
        assert_eq!(name(Elements::F64, Form::Tensor, 3), None);
        assert_eq!(
            name(Elements::F64, Form::DotVector, 7),
            Some("cutlass_aot_skinny_dotv_f64_n8")
        );
        assert_eq!(name(Elements::F16, Form::DotVector, 9), None);
        assert!(source.contains("CUTLASS_AOT_SKINNY_DOTV(NAME, T, TC, ACC, 8)"));
        assert_eq!(
            name(Elements::Bf16F32, Form::Axpy, 9),
            Some("cutlass_aot_skinny_axpy_bf16_f32_n16")
        );
        // Every name comes from the macros that instantiate them.
        for elements in [
            Elements::F16,
            Elements::Bf16,
            Elements::F32,
            Elements::F64,
            Elements::F16F32,
            Elements::Bf16F32,
        ] {
            let name = reduce_entry(elements).to_str().unwrap();
            let tag = name.trim_start_matches("cutlass_aot_skinny_reduce_");
            assert!(source.contains(&format!("CUTLASS_AOT_SKINNY({tag},")), "{tag}");
        }
        assert_eq!(
            name(Elements::Bf16, Form::Tensor, 33),
            Some("cutlass_aot_narrow_bf16_n64")
        );
        assert_eq!(
            name(Elements::F64, Form::TinyWarp, 1000),
            Some("cutlass_aot_skinny_tiny_warp_f64")
        );
        assert!(
            source.contains("cutlass_aot_skinny_tiny_thread_##NAME")
                && source.contains("kTinyThreads = 128;")
        );
        let narrow = include_str!("../../codegen/cutlass_glue/include/cutlass_aot/narrow.cuh");
        for tag in ["f16", "bf16", "f16_f32", "bf16_f32"] {
            assert!(narrow.contains(&format!("CUTLASS_AOT_NARROW({tag},")), "{tag}");
        }
        assert!(narrow.contains("constexpr int kRows = 16 * kWarps;") && narrow.contains("kWarps = 8;"));
        assert_eq!(dot_rows_per_block(8), 16);
        assert!(source.contains("sizeof(Acc) == 8 ? 2 : 4"));
        // The chunk of Y the cost model assumes (dispatch::skinny's `chunk_entries`).
        assert!(source.contains("kBytes = 32768;"));
    }
}
