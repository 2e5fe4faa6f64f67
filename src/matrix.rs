//! Typed matrix views over cudarc device memory: shape, leading dimension and batch layout, checked
//! against the buffer before anything is launched.

use std::marker::PhantomData;

use cudarc::driver::{DevicePtr, DevicePtrMut};

use crate::model::Layout;
use crate::types::{Element, LayoutTag};

/// Geometry of a (possibly batched) matrix in a buffer, in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixShape {
    pub rows: usize,
    pub cols: usize,
    /// Leading dimension: distance between rows (row-major) or columns (column-major).
    pub ld: usize,
    pub batch_count: usize,
    /// Distance between consecutive matrices of a batch (0 = every batch reads the same matrix).
    pub batch_stride: usize,
}

impl MatrixShape {
    /// A single `rows × cols` matrix with no padding (ld = its contiguous extent).
    pub fn packed(rows: usize, cols: usize, layout: Layout) -> Self {
        let ld = MatrixShape {
            rows,
            cols,
            ld: 0,
            batch_count: 1,
            batch_stride: 0,
        }
        .inner(layout);
        MatrixShape {
            rows,
            cols,
            ld,
            batch_count: 1,
            batch_stride: rows * cols,
        }
    }

    /// Elements of one `ld`-strided line (what `ld` must cover): a row (row-major), a column
    /// (column-major), or a group of 32 columns (rows) of an interleaved layout, 32 per row (column).
    pub fn inner(&self, layout: Layout) -> usize {
        match layout {
            Layout::Row => self.cols,
            Layout::Column => self.rows,
            Layout::ColumnInterleaved32 => self.rows * 32,
            Layout::RowInterleaved32 => self.cols * 32,
        }
    }

    /// Number of `ld`-strided lines (the last group of an interleaved layout is padded to 32).
    pub fn outer(&self, layout: Layout) -> usize {
        match layout {
            Layout::Row => self.rows,
            Layout::Column => self.cols,
            Layout::ColumnInterleaved32 => self.cols.div_ceil(32),
            Layout::RowInterleaved32 => self.rows.div_ceil(32),
        }
    }

    /// Elements the buffer must hold: the last element of the last batch, plus one. `None` on
    /// overflow.
    pub fn required_len(&self, layout: Layout) -> Option<usize> {
        if self.rows == 0 || self.cols == 0 || self.batch_count == 0 {
            return Some(0);
        }
        let last_in_matrix = (self.outer(layout) - 1)
            .checked_mul(self.ld)?
            .checked_add(self.inner(layout) - 1)?;
        let last_batch = (self.batch_count - 1).checked_mul(self.batch_stride)?;
        last_batch.checked_add(last_in_matrix)?.checked_add(1)
    }
}

/// A read-only matrix operand (A, B or C); a copy views the same buffer (a plan runs again with
/// the matrices it was made with).
pub struct MatrixRef<'a, T: Element, L: LayoutTag> {
    pub(crate) buffer: &'a dyn DevicePtr<T>,
    pub(crate) shape: MatrixShape,
    _layout: PhantomData<L>,
}

impl<T: Element, L: LayoutTag> Clone for MatrixRef<'_, T, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Element, L: LayoutTag> Copy for MatrixRef<'_, T, L> {}

/// The output matrix (D).
pub struct MatrixMut<'a, T: Element, L: LayoutTag> {
    pub(crate) buffer: &'a mut dyn DevicePtrMut<T>,
    pub(crate) shape: MatrixShape,
    _layout: PhantomData<L>,
}

macro_rules! shape_builders {
    () => {
        /// Sets the leading dimension (default: packed, the contiguous extent).
        pub fn with_ld(mut self, ld: usize) -> Self {
            self.shape.ld = ld;
            self
        }

        /// Makes this a batch of `count` matrices, `stride` elements apart (0 broadcasts one matrix
        /// to every batch; only valid for inputs).
        pub fn batched(mut self, count: usize, stride: usize) -> Self {
            self.shape.batch_count = count;
            self.shape.batch_stride = stride;
            self
        }

        pub fn shape(&self) -> MatrixShape {
            self.shape
        }
    };
}

impl<'a, T: Element, L: LayoutTag> MatrixRef<'a, T, L> {
    /// A packed `rows × cols` matrix at the start of `buffer` (a `CudaSlice` or `CudaView`).
    pub fn new(buffer: &'a dyn DevicePtr<T>, rows: usize, cols: usize) -> Self {
        MatrixRef {
            buffer,
            shape: MatrixShape::packed(rows, cols, L::LAYOUT),
            _layout: PhantomData,
        }
    }

    shape_builders!();
}

impl<'a, T: Element, L: LayoutTag> MatrixMut<'a, T, L> {
    /// A packed `rows × cols` output matrix at the start of `buffer`.
    pub fn new(buffer: &'a mut dyn DevicePtrMut<T>, rows: usize, cols: usize) -> Self {
        MatrixMut {
            buffer,
            shape: MatrixShape::packed(rows, cols, L::LAYOUT),
            _layout: PhantomData,
        }
    }

    shape_builders!();
}
