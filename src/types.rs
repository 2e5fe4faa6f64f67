//! Element types and layout tags: the type-level half of a kernel's signature.
//!
//! A kernel's operand types and layouts are associated types of [`crate::GemmKernel`], so passing
//! an `f32` matrix to an f16 kernel, or a row-major view to a column-major operand, does not
//! compile.

use cudarc::driver::DeviceRepr;

use crate::model::{DType, Layout};

/// A Rust type that is the storage of a kernel operand.
pub trait Element: DeviceRepr + Copy + Send + Sync + 'static {
    const DTYPE: DType;
}

impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for half::bf16 {
    const DTYPE: DType = DType::Bf16;
}
impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for f64 {
    const DTYPE: DType = DType::F64;
}

/// A Rust type for the epilogue's `alpha` and `beta`.
pub trait Scalar: Copy + Into<f64> + Send + Sync + 'static {
    const ZERO: Self;
}
impl Scalar for half::f16 {
    const ZERO: Self = half::f16::ZERO;
}
impl Scalar for f32 {
    const ZERO: Self = 0.0;
}
impl Scalar for f64 {
    const ZERO: Self = 0.0;
}

/// A layout as a type.
pub trait LayoutTag: Copy + Send + Sync + 'static {
    const LAYOUT: Layout;
}

/// Row-major: element (r, c) at `r * ld + c` (`t` in BLAS naming).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowMajor;
/// Column-major: element (r, c) at `c * ld + r` (`n` in BLAS naming).
#[derive(Clone, Copy, Debug, Default)]
pub struct ColumnMajor;

impl LayoutTag for RowMajor {
    const LAYOUT: Layout = Layout::Row;
}
impl LayoutTag for ColumnMajor {
    const LAYOUT: Layout = Layout::Column;
}
