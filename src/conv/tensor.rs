//! Typed views of packed channels-last 4-D tensors over cudarc device memory: the activation
//! (NHWC), the filter (KRSC) and the output (NPQK), each layout a type so that a kernel's
//! signature says which tensor goes where.

use std::marker::PhantomData;

use cudarc::driver::{DevicePtr, DevicePtrMut};

use crate::types::Element;

/// Which of a convolution's three tensors a view is, as a type.
pub trait TensorLayout: Copy + Send + Sync + 'static {
    /// `NHWC`, `KRSC` or `NPQK`: the dimensions' names, outermost first.
    const NAME: &'static str;
    /// What the tensor is, for messages.
    const ROLE: &'static str;
}

/// An activation: N images × H rows × W columns × C channels, channels contiguous.
#[derive(Clone, Copy, Debug, Default)]
pub struct Nhwc;
/// A filter: K output channels × R rows × S columns × C input channels, channels contiguous.
#[derive(Clone, Copy, Debug, Default)]
pub struct Krsc;
/// An output: N images × P rows × Q columns × K channels, channels contiguous.
#[derive(Clone, Copy, Debug, Default)]
pub struct Npqk;

impl TensorLayout for Nhwc {
    const NAME: &'static str = "NHWC";
    const ROLE: &'static str = "activation";
}
impl TensorLayout for Krsc {
    const NAME: &'static str = "KRSC";
    const ROLE: &'static str = "filter";
}
impl TensorLayout for Npqk {
    const NAME: &'static str = "NPQK";
    const ROLE: &'static str = "output";
}

/// A read-only packed tensor: `dims` in its layout's order (NHWC: `[n, h, w, c]`).
pub struct TensorRef<'a, T: Element, L: TensorLayout> {
    pub(crate) buffer: &'a dyn DevicePtr<T>,
    pub(crate) dims: [usize; 4],
    _layout: PhantomData<L>,
}

/// A written packed tensor: `dims` in its layout's order.
pub struct TensorMut<'a, T: Element, L: TensorLayout> {
    pub(crate) buffer: &'a mut dyn DevicePtrMut<T>,
    pub(crate) dims: [usize; 4],
    _layout: PhantomData<L>,
}

impl<'a, T: Element, L: TensorLayout> TensorRef<'a, T, L> {
    /// A packed tensor of `dims` (in `L`'s order) at the start of `buffer`.
    pub fn new(buffer: &'a dyn DevicePtr<T>, dims: [usize; 4]) -> Self {
        TensorRef {
            buffer,
            dims,
            _layout: PhantomData,
        }
    }

    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }
}

impl<'a, T: Element, L: TensorLayout> TensorMut<'a, T, L> {
    /// A packed tensor of `dims` (in `L`'s order) at the start of `buffer`.
    pub fn new(buffer: &'a mut dyn DevicePtrMut<T>, dims: [usize; 4]) -> Self {
        TensorMut {
            buffer,
            dims,
            _layout: PhantomData,
        }
    }

    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }
}

/// One tensor as the checks see it: its dimensions, buffer length (elements) and device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorOperand {
    pub dims: [usize; 4],
    pub len: usize,
    pub address: u64,
}

impl TensorOperand {
    /// Elements of the packed tensor (`None` on overflow).
    pub fn elements(&self) -> Option<usize> {
        self.dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }
}
