//! Typed views of packed 4-D tensors over cudarc device memory: the activation (NHWC), the filter
//! (KRSC) and the output (NPQK), or their int8 interleaved forms (NC32HW32, C32RSK32, NK32PQ32),
//! each layout a type so that a kernel's signature says which tensor goes where and how it is
//! stored. Extents are always given logically (`[n, h, w, c]`, `[k, r, s, c]`, `[n, p, q, k]`).

use std::marker::PhantomData;

use cudarc::driver::{DevicePtr, DevicePtrMut};

use crate::error::Error;
use crate::model::{ConvKind, ConvLayout};
use crate::types::Element;

/// Which of a convolution's three tensors a view is, and how it is stored, as a type.
pub trait TensorLayout: Copy + Send + Sync + 'static {
    /// `NHWC`, `KRSC`, `NPQK`, ...: the storage order's name, outermost first.
    const NAME: &'static str;
    /// What the tensor is, for messages.
    const ROLE: &'static str;
    /// The layout family of the three tensors this one belongs to.
    const FAMILY: ConvLayout;
    /// Which tensor it is.
    const TENSOR: ConvTensor;

    /// Where element `index` (logical, as `dims`) of a packed tensor of logical extents `dims`
    /// sits, in elements from the start.
    fn offset(dims: [usize; 4], index: [usize; 4]) -> usize {
        element_offset(Self::FAMILY, Self::TENSOR, dims, index)
    }
}

/// A convolution's three tensors, by what they are (not by their A/B/C role, which depends on
/// the [`ConvKind`](crate::model::ConvKind)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvTensor {
    /// `[n, h, w, c]`.
    Activation,
    /// `[k, r, s, c]`.
    Filter,
    /// `[n, p, q, k]`.
    Output,
}

impl ConvTensor {
    /// What the tensor is, for messages.
    pub const fn role(self) -> &'static str {
        match self {
            ConvTensor::Activation => "activation",
            ConvTensor::Filter => "filter",
            ConvTensor::Output => "output",
        }
    }

    /// The tensors in the A, B and C/D roles of `kind`.
    pub fn roles(kind: ConvKind) -> [ConvTensor; 3] {
        use ConvTensor::*;
        match kind {
            ConvKind::Fprop => [Activation, Filter, Output],
            ConvKind::Dgrad => [Output, Filter, Activation],
            ConvKind::Wgrad => [Output, Activation, Filter],
        }
    }
}

/// Where element `index` of a packed `tensor` of logical extents `dims` sits in `layout`, in
/// elements. Interleaved layouts need the channel extent (`dims[3]`) a multiple of 32, and the
/// filter's K (`dims[0]`) too; the launch checks refuse other problems.
pub fn element_offset(layout: ConvLayout, tensor: ConvTensor, dims: [usize; 4], index: [usize; 4]) -> usize {
    let [d0, d1, d2, d3] = dims;
    let [i0, i1, i2, i3] = index;
    match (layout, tensor) {
        (ConvLayout::ChannelsLast, _) => ((i0 * d1 + i1) * d2 + i2) * d3 + i3,
        // [n][c / 32][h][w][c % 32]
        (ConvLayout::Interleaved32, ConvTensor::Activation | ConvTensor::Output) => {
            (((i0 * (d3 / 32) + i3 / 32) * d1 + i1) * d2 + i2) * 32 + i3 % 32
        }
        // [c / 32][r][s][p(k)][c % 32]: CUTLASS's interleaved kernels read each group of 32
        // output channels in its tensor-core fragment order, so that the epilogue can store
        // without staging through shared memory.
        (ConvLayout::Interleaved32, ConvTensor::Filter) => {
            (((i3 / 32 * d1 + i1) * d2 + i2) * d0 + crate::verify::reordered_column(i0)) * 32 + i3 % 32
        }
    }
}

/// `logical` (a packed tensor of extents `dims` in channels-last order: NHWC, KRSC, NPQK) stored
/// as `L` stores it: what to upload to a kernel that reads `L`. Host code, for preparing inputs.
pub fn pack<L: TensorLayout, T: Copy>(dims: [usize; 4], logical: &[T]) -> Result<Vec<T>, Error> {
    permute(L::FAMILY, L::TENSOR, dims, logical, true)
}

/// The inverse of [`pack`]: a tensor stored as `L` stores it, in channels-last order.
pub fn unpack<L: TensorLayout, T: Copy>(dims: [usize; 4], stored: &[T]) -> Result<Vec<T>, Error> {
    permute(L::FAMILY, L::TENSOR, dims, stored, false)
}

/// [`pack`] (`to_layout`) or [`unpack`] for a layout and tensor known at run time.
pub fn permute<T: Copy>(
    layout: ConvLayout,
    tensor: ConvTensor,
    dims: [usize; 4],
    values: &[T],
    to_layout: bool,
) -> Result<Vec<T>, Error> {
    let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if count != Some(values.len()) {
        return Err(Error::invalid(
            "conv tensor",
            format!(
                "{} values for a tensor of extents {dims:?} ({} elements)",
                values.len(),
                count.map_or("more than usize".to_string(), |c| c.to_string())
            ),
        ));
    }
    if let Some(group) = layout.interleave() {
        let group = group as usize;
        let grouped = match tensor {
            ConvTensor::Filter => dims[3] % group == 0 && dims[0] % group == 0,
            _ => dims[3] % group == 0,
        };
        if !grouped {
            return Err(Error::invalid(
                "conv tensor",
                format!(
                    "{} extents {dims:?}: {layout} tensors hold channels in groups of {group}; pad the channels \
                     (and a filter's output channels) to a multiple of {group}",
                    tensor.role()
                ),
            ));
        }
    }
    let mut out = values.to_vec();
    let mut index = [0usize; 4];
    for (logical, &value) in values.iter().enumerate() {
        let mut rest = logical;
        for (i, &d) in index.iter_mut().zip(&dims).rev() {
            *i = rest % d;
            rest /= d;
        }
        let stored = element_offset(layout, tensor, dims, index);
        if to_layout {
            out[stored] = value;
        } else {
            out[logical] = values[stored];
        }
    }
    Ok(out)
}

/// Declares a tensor layout type: its name, which tensor it is, its layout family.
macro_rules! tensor_layout {
    ($(#[$doc:meta])* $name:ident, $spelling:literal, $tensor:ident, $family:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;

        impl TensorLayout for $name {
            const NAME: &'static str = $spelling;
            const ROLE: &'static str = ConvTensor::$tensor.role();
            const FAMILY: ConvLayout = ConvLayout::$family;
            const TENSOR: ConvTensor = ConvTensor::$tensor;
        }
    };
}

tensor_layout!(
    /// An activation: N images × H rows × W columns × C channels, channels contiguous.
    Nhwc, "NHWC", Activation, ChannelsLast
);
tensor_layout!(
    /// A filter: K output channels × R rows × S columns × C input channels, channels contiguous.
    Krsc, "KRSC", Filter, ChannelsLast
);
tensor_layout!(
    /// An output: N images × P rows × Q columns × K channels, channels contiguous.
    Npqk, "NPQK", Output, ChannelsLast
);
tensor_layout!(
    /// An int8 activation interleaved by 32 channels (CUTLASS's `TensorNCxHWx<32>`): element
    /// `(n, h, w, c)` at `(((n·C/32 + c/32)·H + h)·W + w)·32 + c%32`. C a multiple of 32.
    Nc32hw32, "NC32HW32", Activation, Interleaved32
);
tensor_layout!(
    /// An int8 filter interleaved by 32 input channels (CUTLASS's `TensorCxRSKx<32>`) as CUTLASS's
    /// interleaved convolutions read it: element `(k, r, s, c)` at `(((c/32·R + r)·S + s)·K +
    /// p(k))·32 + c%32`, where `p` reorders the output channels within each group of 32 to the
    /// order the tensor-core fragments use ([`crate::verify::reordered_column`], the
    /// `reorder_convK<32>` of CUTLASS's interleaved test beds). C and K multiples of 32. [`pack`]
    /// does all of it.
    C32rsk32, "C32RSK32", Filter, Interleaved32
);
tensor_layout!(
    /// An int8 output interleaved by 32 output channels, stored as [`Nc32hw32`] is with K for C.
    Nk32pq32, "NK32PQ32", Output, Interleaved32
);

/// A read-only packed tensor of logical extents `dims` (activation `[n, h, w, c]`, filter
/// `[k, r, s, c]`, output `[n, p, q, k]`), stored as `L` says.
pub struct TensorRef<'a, T: Element, L: TensorLayout> {
    pub(crate) buffer: &'a dyn DevicePtr<T>,
    pub(crate) dims: [usize; 4],
    _layout: PhantomData<L>,
}

/// A written packed tensor of logical extents `dims`, stored as `L` says.
pub struct TensorMut<'a, T: Element, L: TensorLayout> {
    pub(crate) buffer: &'a mut dyn DevicePtrMut<T>,
    pub(crate) dims: [usize; 4],
    _layout: PhantomData<L>,
}

impl<'a, T: Element, L: TensorLayout> TensorRef<'a, T, L> {
    /// A packed tensor of logical extents `dims` at the start of `buffer`.
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
    /// A packed tensor of logical extents `dims` at the start of `buffer`.
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
