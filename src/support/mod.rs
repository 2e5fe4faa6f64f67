//! The runtime's own support kernels (`cutlass_glue/include/cutlass_aot/support.cuh` and
//! `skinny.cuh`, built into this crate's image `IMAGE_SUPPORT`): strided, possibly transposing
//! copies of a batch of matrices (to stage an operand no kernel can read as it lies), the 3xTF32
//! split of f32 operands, the 4-D copy and scale of a strided dgrad's stride phases
//! (`conv::stride_phases`) and of padded channels (`conv::padded`), skinny GEMMs ([`skinny`]) and
//! the direct fprop of few channels ([`conv_small`]).
//!
//! The 2-D ones walk 64×64 tiles, the 4-D copy runs of rows, the 4-D scale single elements
//! ([`tensor4`]), with a grid-stride loop, so any extent runs on a grid sized for the device.

use std::ffi::{c_void, CStr};
use std::mem::size_of;

use cudarc::driver::{result, sys, CudaStream};

use crate::error::Error;

pub(crate) mod conv_small;
pub(crate) mod skinny;
mod tensor4;
pub(crate) use tensor4::{copy4_batch, Copy4d, Scale4d, View4};

/// Where element (batch, row, col) of a matrix lies: `base + (batch·batch_stride + row·row_stride
/// + col·col_stride) · element size` (the ABI's `cutlass_aot_view`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub base: u64,
    pub row_stride: i64,
    pub col_stride: i64,
    pub batch_stride: i64,
}

impl View {
    /// A matrix of `layout` with leading dimension `ld` (batch stride 0: one matrix for every batch).
    pub fn strided(base: u64, layout: crate::model::Layout, ld: usize, batch_stride: usize) -> Self {
        let ld = ld as i64;
        let (row_stride, col_stride) = match layout {
            crate::model::Layout::Column => (1, ld),
            _ => (ld, 1),
        };
        View {
            base,
            row_stride,
            col_stride,
            batch_stride: batch_stride as i64,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct CopyArgs {
    src: View,
    dst: View,
    rows: i64,
    cols: i64,
    batch: i64,
    dst_rows: i64,
    dst_cols: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct SplitArgs {
    src: View,
    dst: View,
    rows: i64,
    cols: i64,
    batch: i64,
    part_stride: i64,
    small_parts: i32,
    reserved: i32,
}

/// `rows × cols × batch` elements of `element_bytes` bytes each, from `src` to `dst`; a larger
/// destination (`dst_rows × dst_cols`) is padded with zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Copy2d {
    pub element_bytes: usize,
    pub src: View,
    pub dst: View,
    pub rows: usize,
    pub cols: usize,
    pub batch: usize,
    pub dst_rows: usize,
    pub dst_cols: usize,
}

impl Copy2d {
    /// Enqueues the copy (nothing when it is empty).
    ///
    /// # Safety
    /// Both views must address device memory holding every element they name; the stream's context
    /// must be current.
    pub unsafe fn enqueue(&self, stream: &CudaStream) -> Result<(), Error> {
        if self.dst_rows == 0 || self.dst_cols == 0 || self.batch == 0 {
            return Ok(());
        }
        if let Some(rows) = self.as_rows() {
            // SAFETY: the same elements, as the caller guarantees.
            return unsafe { copy4_batch(stream, &[rows]) };
        }
        let entry: &'static CStr = match self.element_bytes {
            1 => c"cutlass_aot_copy_b1",
            2 => c"cutlass_aot_copy_b2",
            4 => c"cutlass_aot_copy_b4",
            8 => c"cutlass_aot_copy_b8",
            other => {
                return Err(Error::invalid(
                    "staging copy",
                    format!("elements of {other} bytes cannot be copied (1, 2, 4 or 8)"),
                ))
            }
        };
        let args = CopyArgs {
            src: self.src,
            dst: self.dst,
            rows: self.rows as i64,
            cols: self.cols as i64,
            batch: self.batch as i64,
            dst_rows: self.dst_rows as i64,
            dst_cols: self.dst_cols as i64,
        };
        unsafe { launch(stream, entry, &args, (self.dst_rows, self.dst_cols, self.batch)) }
    }

    /// Bytes the copy reads and writes.
    pub fn traffic(&self) -> usize {
        (self.rows * self.cols + self.dst_rows * self.dst_cols) * self.batch * self.element_bytes
    }

    /// Bytes a transposing copy's whole tiles span (read + written): its tiles take as long
    /// however much of them the matrix fills (a 65-column matrix spans two 64-column tiles).
    pub fn tile_traffic(&self) -> usize {
        let tiles = self.dst_rows.div_ceil(TILE) * self.dst_cols.div_ceil(TILE);
        2 * tiles * TILE * TILE * self.batch * self.element_bytes
    }

    /// Whether the copy transposes (runs through the tiled kernel, not along rows).
    pub fn transposes(&self) -> bool {
        self.as_rows().is_none()
    }

    /// A copy that transposes nothing (both sides contiguous along the same dimension) as the
    /// 4-D copy's runs of rows, `[batch, outer, 1, inner]`: no shared-memory tile, 16-byte
    /// accesses where aligned.
    fn as_rows(&self) -> Option<Copy4d> {
        let (s, d) = (&self.src, &self.dst);
        let view = |v: &View, outer: i64| View4 {
            base: v.base,
            strides: [v.batch_stride, outer, 0, 1],
        };
        let (src, dst, given, extent) = if s.col_stride == 1 && d.col_stride == 1 {
            let given = [self.batch, self.rows, 1, self.cols];
            let extent = [self.batch, self.dst_rows, 1, self.dst_cols];
            (view(s, s.row_stride), view(d, d.row_stride), given, extent)
        } else if s.row_stride == 1 && d.row_stride == 1 {
            let given = [self.batch, self.cols, 1, self.rows];
            let extent = [self.batch, self.dst_cols, 1, self.dst_rows];
            (view(s, s.col_stride), view(d, d.col_stride), given, extent)
        } else {
            return None;
        };
        Some(Copy4d {
            src_extent: given,
            ..Copy4d::new(self.element_bytes, src, dst, extent)
        })
    }
}

/// The 3xTF32 split of an f32 matrix: each element becomes big = tf32(x) and small = tf32(x − big),
/// written to three parts `part_stride` elements apart; part p holds small where bit p of
/// `small_parts` is set, big elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SplitTf32 {
    pub src: View,
    pub dst: View,
    pub rows: usize,
    pub cols: usize,
    pub batch: usize,
    pub part_stride: usize,
    pub small_parts: u32,
}

impl SplitTf32 {
    /// Enqueues the split (nothing when it is empty).
    ///
    /// # Safety
    /// As [`Copy2d::enqueue`], for `src` and the three parts of `dst`.
    pub unsafe fn enqueue(&self, stream: &CudaStream) -> Result<(), Error> {
        if self.rows == 0 || self.cols == 0 || self.batch == 0 {
            return Ok(());
        }
        let args = SplitArgs {
            src: self.src,
            dst: self.dst,
            rows: self.rows as i64,
            cols: self.cols as i64,
            batch: self.batch as i64,
            part_stride: self.part_stride as i64,
            small_parts: self.small_parts as i32,
            reserved: 0,
        };
        unsafe {
            launch(
                stream,
                c"cutlass_aot_split_tf32",
                &args,
                (self.rows, self.cols, self.batch),
            )
        }
    }
}

/// The 2-D kernels' tiles are TILE × TILE elements (`kTile`).
const TILE: usize = 64;

/// Launches support kernel `entry` with `args` over TILE × TILE tiles of `(rows, cols, batch)`.
///
/// # Safety
/// `T` must be the kernel's argument struct; the stream's context must be current.
unsafe fn launch<T>(
    stream: &CudaStream,
    entry: &'static CStr,
    args: &T,
    (rows, cols, batch): (usize, usize, usize),
) -> Result<(), Error> {
    let tiles = rows.div_ceil(TILE) * cols.div_ceil(TILE) * batch;
    unsafe { launch_with(stream, stream.cu_stream(), entry, args, tiles, (32, 8, 1), 1) }
}

/// Launches support kernel `entry` with `args` on `on` (a stream of `stream`'s context) on up to
/// `work` blocks of `block` threads (times `grid_y`, a batch): enough to fill the device several
/// times over; the kernels loop over the rest.
///
/// # Safety
/// As [`launch`].
unsafe fn launch_with<T>(
    stream: &CudaStream,
    on: sys::CUstream,
    entry: &'static CStr,
    args: &T,
    work: usize,
    block: (u32, u32, u32),
    grid_y: u32,
) -> Result<(), Error> {
    let device = crate::device::props(stream.context())?;
    let blocks = work.min(device.multiprocessors as usize * 16).max(1) as u32;
    unsafe { launch_on(stream, on, entry, args, (blocks, grid_y.max(1), 1), block, 0) }
}

/// Launches support kernel `entry` with `args` on `stream` over exactly `grid` blocks.
///
/// # Safety
/// As [`launch`].
unsafe fn launch_grid<T>(
    stream: &CudaStream,
    entry: &'static CStr,
    args: &T,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
) -> Result<(), Error> {
    unsafe { launch_on(stream, stream.cu_stream(), entry, args, grid, block, 0) }
}

/// Launches support kernel `entry` with `args` on `on` (a stream of `stream`'s context), each block
/// with `shared` bytes of dynamic shared memory (at most 48 KiB: no opt-in).
///
/// # Safety
/// As [`launch`].
unsafe fn launch_on<T>(
    stream: &CudaStream,
    on: sys::CUstream,
    entry: &'static CStr,
    args: &T,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: usize,
) -> Result<(), Error> {
    const WHO: &str = "support kernels";
    let image = &crate::kernels::IMAGE_SUPPORT;
    let function = image.function(stream.context(), entry, WHO, 0)?;
    if function.param_bytes != size_of::<T>() {
        return Err(Error::AbiMismatch {
            kernel: WHO,
            message: format!(
                "{entry:?} takes {} bytes of arguments, the host passes {}",
                function.param_bytes,
                size_of::<T>()
            ),
        });
    }
    let mut params = [args as *const T as *mut c_void];
    let shared = u32::try_from(shared).unwrap_or(u32::MAX);
    unsafe {
        result::launch_kernel(
            function.function.cu_function(),
            grid,
            block,
            shared,
            on,
            &mut params,
        )
    }
    .map_err(Error::driver("launching a support kernel"))
}

/// Enqueues zeros over `bytes` bytes at `address`.
///
/// # Safety
/// `address..address + bytes` must be device memory; the stream's context must be current.
pub(crate) unsafe fn zero(stream: &CudaStream, address: sys::CUdeviceptr, bytes: usize) -> Result<(), Error> {
    if bytes == 0 {
        return Ok(());
    }
    unsafe { sys::cuMemsetD8Async(address, 0, bytes, stream.cu_stream()) }
        .result()
        .map_err(Error::driver("clearing staging memory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn straight_copies_run_as_rows_and_transposing_ones_as_tiles() {
        let row_major = |base: u64, ld: usize| View::strided(base, crate::model::Layout::Row, ld, 0);
        let col_major = |base: u64, ld: usize| View::strided(base, crate::model::Layout::Column, ld, 0);
        // K = 700 of a row-major A padded to 704: rows of 700 copied into rows of 704.
        let pad = Copy2d {
            element_bytes: 2,
            src: row_major(0x1000, 700),
            dst: row_major(0x8000, 704),
            rows: 5,
            cols: 700,
            batch: 1,
            dst_rows: 5,
            dst_cols: 704,
        };
        let rows = pad.as_rows().unwrap();
        assert_eq!((rows.extent, rows.src_extent), ([1, 5, 1, 704], [1, 5, 1, 700]));
        assert_eq!(
            (rows.src.strides, rows.dst.strides),
            ([0, 700, 0, 1], [0, 704, 0, 1])
        );
        // Column-major on both sides: runs along the columns.
        let cols = Copy2d {
            src: col_major(0x1000, 9),
            dst: col_major(0x8000, 16),
            rows: 9,
            cols: 3,
            dst_rows: 16,
            dst_cols: 3,
            ..pad
        };
        let runs = cols.as_rows().unwrap();
        assert_eq!((runs.extent, runs.src_extent), ([1, 3, 1, 16], [1, 3, 1, 9]));
        // A transpose goes through the tiles.
        let transpose = Copy2d {
            dst: row_major(0x8000, 3),
            dst_rows: 9,
            ..cols
        };
        assert_eq!(transpose.as_rows(), None);
    }
}
