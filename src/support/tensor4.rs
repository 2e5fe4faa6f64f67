//! The 4-D support kernels: copies (stride phases gathered and scattered, channels padded with
//! zeros) and scales (`beta·C` fills) over strided tensor views.

use std::ffi::CStr;

use cudarc::driver::{sys, CudaStream};

use super::launch_with;
use crate::error::Error;

/// A 4-D tensor view: element `i` lies at `base + Σ i_d·strides[d]` elements (the ABI's
/// `cutlass_aot_view4`; strides may be negative).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct View4 {
    pub base: u64,
    pub strides: [i64; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Copy4Args {
    src: View4,
    dst: View4,
    extent: [i64; 4],
    src_extent: [i64; 4],
}

/// Copies per launch (`CUTLASS_AOT_COPY4_BATCH`).
const COPY4_BATCH: usize = 16;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Copy4BatchArgs {
    count: i32,
    reserved: i32,
    copies: [Copy4Args; COPY4_BATCH],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Scale4Args {
    src: View4,
    dst: View4,
    extent: [i64; 4],
    beta: f64,
}

/// `dst[i] = src[i]` over a 4-D `extent` of `element_bytes`-byte elements, zeros where `i` lies
/// past `src_extent` (padding; `src` is read only inside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Copy4d {
    pub element_bytes: usize,
    pub src: View4,
    pub dst: View4,
    pub extent: [usize; 4],
    pub src_extent: [usize; 4],
}

impl Copy4d {
    /// A plain copy: `src_extent` is `extent`.
    pub fn new(element_bytes: usize, src: View4, dst: View4, extent: [usize; 4]) -> Self {
        Copy4d {
            element_bytes,
            src,
            dst,
            extent,
            src_extent: extent,
        }
    }
}

impl View4 {
    /// This view in units of `factor` elements along a contiguous innermost dimension of
    /// `inner` elements, if every address and stride allows it.
    fn widened(&self, element_bytes: usize, inner: usize, factor: usize) -> Option<View4> {
        let unit = (element_bytes * factor) as i64;
        let aligned = self.base % unit as u64 == 0
            && self.strides[3] == 1
            && inner % factor == 0
            && self.strides[..3]
                .iter()
                .all(|s| (s * element_bytes as i64) % unit == 0);
        aligned.then(|| View4 {
            base: self.base,
            strides: [
                self.strides[0] * element_bytes as i64 / unit,
                self.strides[1] * element_bytes as i64 / unit,
                self.strides[2] * element_bytes as i64 / unit,
                1,
            ],
        })
    }
}

/// `(src, dst, extent, bytes)` in 16-byte units where both views allow it, else as given: one
/// thread a 16-byte unit instead of one an element.
fn widen(
    element_bytes: usize,
    src: &View4,
    dst: &View4,
    extent: [usize; 4],
) -> (View4, View4, [usize; 4], usize) {
    if element_bytes < 16 && 16 % element_bytes == 0 {
        let factor = 16 / element_bytes;
        if let (Some(s), Some(d)) = (
            src.widened(element_bytes, extent[3], factor),
            dst.widened(element_bytes, extent[3], factor),
        ) {
            return (s, d, [extent[0], extent[1], extent[2], extent[3] / factor], 16);
        }
    }
    (*src, *dst, extent, element_bytes)
}

/// `copy`'s kernel arguments, in 16-byte elements where its views and padding allow: (element
/// bytes, arguments, threads it takes).
fn copy4_args(copy: &Copy4d) -> (usize, Copy4Args, usize) {
    let c = copy;
    let (mut src, mut dst, mut extent, mut bytes) = widen(c.element_bytes, &c.src, &c.dst, c.extent);
    let mut factor = bytes / c.element_bytes;
    if c.src_extent[3] % factor != 0 {
        // Padding that ends inside a 16-byte unit: element by element.
        (src, dst, extent, bytes, factor) = (c.src, c.dst, c.extent, c.element_bytes, 1);
    }
    let mut src_extent = c.src_extent;
    src_extent[3] /= factor;
    let args = Copy4Args {
        src,
        dst,
        extent: extent.map(|e| e as i64),
        src_extent: src_extent.map(|e| e as i64),
    };
    // The kernel copies rows in 16-byte chunks a thread (a row of 64 chunks or more in runs of 32
    // chunks a warp).
    let per_thread = (16 / bytes).max(1);
    let units = extent[0] * extent[1] * extent[2] * extent[3].div_ceil(per_thread);
    (bytes, args, units)
}

/// Enqueues `copies`, as few launches as their element sizes allow (up to 16 copies each).
///
/// # Safety
/// Every view must address device memory holding every element it names; the stream's context
/// must be current.
pub(crate) unsafe fn copy4_batch(stream: &CudaStream, copies: &[Copy4d]) -> Result<(), Error> {
    if let Some(odd) = copies.iter().find(|c| ![1, 2, 4, 8].contains(&c.element_bytes)) {
        return Err(Error::invalid(
            "4-D copy",
            format!(
                "elements of {} bytes cannot be copied (1, 2, 4 or 8)",
                odd.element_bytes
            ),
        ));
    }
    let widened: Vec<(usize, Copy4Args, usize)> = copies
        .iter()
        .filter(|c| c.extent.iter().all(|&e| e > 0))
        .map(copy4_args)
        .collect();
    for bytes in [1, 2, 4, 8, 16] {
        let same: Vec<&(usize, Copy4Args, usize)> = widened.iter().filter(|w| w.0 == bytes).collect();
        for chunk in same.chunks(COPY4_BATCH) {
            let mut args = Copy4BatchArgs {
                count: chunk.len() as i32,
                reserved: 0,
                copies: [Copy4Args::default(); COPY4_BATCH],
            };
            for (slot, w) in args.copies.iter_mut().zip(chunk) {
                *slot = w.1;
            }
            let largest = chunk.iter().map(|w| w.2).max().unwrap_or(0);
            let entry: &'static CStr = match bytes {
                1 => c"cutlass_aot_copy4_b1",
                2 => c"cutlass_aot_copy4_b2",
                4 => c"cutlass_aot_copy4_b4",
                8 => c"cutlass_aot_copy4_b8",
                _ => c"cutlass_aot_copy4_b16",
            };
            unsafe {
                launch_with(
                    stream,
                    stream.cu_stream(),
                    entry,
                    &args,
                    largest.div_ceil(256),
                    (256, 1, 1),
                    chunk.len() as u32,
                )?
            };
        }
    }
    Ok(())
}

/// `dst[i] = beta·src[i]` over a 4-D `extent` of `element`s, computed in f32; beta = 0 writes
/// zeros without reading `src`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scale4d {
    pub element: crate::model::DType,
    pub src: View4,
    pub dst: View4,
    pub extent: [usize; 4],
    pub beta: f64,
}

impl Scale4d {
    /// Enqueues the scale (nothing when it is empty) on `on`: `stream` itself, or a side stream
    /// of its context.
    ///
    /// # Safety
    /// As [`Copy4d::enqueue`] (`src` only when beta is not 0); `on` must be a live stream of
    /// `stream`'s context.
    pub(crate) unsafe fn enqueue_on(&self, stream: &CudaStream, on: sys::CUstream) -> Result<(), Error> {
        use crate::model::DType;
        let entry: &'static CStr = match self.element {
            DType::F16 => c"cutlass_aot_scale4_f16",
            DType::Bf16 => c"cutlass_aot_scale4_bf16",
            DType::F32 => c"cutlass_aot_scale4_f32",
            DType::F64 => c"cutlass_aot_scale4_f64",
            other => {
                return Err(Error::invalid(
                    "4-D scale",
                    format!("{other} elements cannot be scaled here (f16, bf16, f32 or f64)"),
                ))
            }
        };
        let bytes = self.element.bits() as usize / 8;
        if self.beta == 0.0 {
            // Zeros: 16 bytes a thread where the view allows it.
            let (_, dst, extent, unit) = widen(bytes, &self.dst, &self.dst, self.extent);
            if unit == 16 {
                let args = Scale4Args {
                    src: dst,
                    dst,
                    extent: extent.map(|e| e as i64),
                    beta: 0.0,
                };
                return unsafe { launch_elements(stream, on, c"cutlass_aot_zero4_b16", &args, extent) };
            }
        }
        let args = Scale4Args {
            src: self.src,
            dst: self.dst,
            extent: self.extent.map(|e| e as i64),
            beta: self.beta,
        };
        unsafe { launch_elements(stream, on, entry, &args, self.extent) }
    }
}

/// Launches 4-D support kernel `entry` with `args` on `on` (a stream of `stream`'s context), 256
/// threads a block, one element a thread.
///
/// # Safety
/// As [`super::launch_with`].
unsafe fn launch_elements<T>(
    stream: &CudaStream,
    on: sys::CUstream,
    entry: &'static CStr,
    args: &T,
    extent: [usize; 4],
) -> Result<(), Error> {
    let elements = extent.iter().product::<usize>();
    if elements == 0 {
        return Ok(());
    }
    // Blocks of 256 threads, at most 16 per SM: the kernels loop over the rest.
    unsafe { launch_with(stream, on, entry, args, elements.div_ceil(256), (256, 1, 1), 1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_copies_widen_only_where_the_given_channels_fill_whole_units() {
        let packed = |base: u64, [_, d1, d2, d3]: [usize; 4]| View4 {
            base,
            strides: [(d1 * d2 * d3) as i64, (d2 * d3) as i64, d3 as i64, 1],
        };
        // A filter of K = 5 padded to 8 rows, C = 64: 16-byte units, zeros past row 5.
        let rows = Copy4d {
            src_extent: [5, 3, 3, 64],
            ..Copy4d::new(
                2,
                packed(0x1000, [5, 3, 3, 64]),
                packed(0x8000, [8, 3, 3, 64]),
                [8, 3, 3, 64],
            )
        };
        let (bytes, args, units) = copy4_args(&rows);
        assert_eq!(
            (bytes, args.extent, args.src_extent),
            (16, [8, 3, 3, 8], [5, 3, 3, 8])
        );
        assert_eq!(units, 8 * 3 * 3 * 8);
        // An activation of C = 3 padded to 8 channels: element by element.
        let channels = Copy4d {
            src_extent: [2, 9, 9, 3],
            ..Copy4d::new(
                2,
                packed(0x1000, [2, 9, 9, 3]),
                packed(0x8000, [2, 9, 9, 8]),
                [2, 9, 9, 8],
            )
        };
        let (bytes, args, threads) = copy4_args(&channels);
        assert_eq!(
            (bytes, args.extent, args.src_extent),
            (2, [2, 9, 9, 8], [2, 9, 9, 3])
        );
        // A row of 8 is one 16-byte chunk: a thread a row.
        assert_eq!(threads, 2 * 9 * 9);
        assert_eq!(args.src.strides, [243, 27, 3, 1]);
    }

    #[test]
    fn views_widen_to_16_byte_units_only_where_every_address_allows() {
        // One stride phase of a [2, 8, 8, 32] f16 tensor: every other pixel, 64-byte channels.
        let phase = View4 {
            base: 0x1000 + 32 * 2,
            strides: [8 * 8 * 32, 2 * 8 * 32, 2 * 32, 1],
        };
        let packed = View4 {
            base: 0x8000,
            strides: [4 * 4 * 32, 4 * 32, 32, 1],
        };
        let (s, d, extent, bytes) = widen(2, &phase, &packed, [2, 4, 4, 32]);
        assert_eq!((bytes, extent), (16, [2, 4, 4, 4]));
        assert_eq!(s.strides, [256, 64, 8, 1]);
        assert_eq!(d.strides, [64, 16, 4, 1]);
        // Three channels (6 bytes a pixel) stay elements, as does a base off 16 bytes.
        assert_eq!(widen(2, &phase, &packed, [2, 4, 4, 3]).3, 2);
        let odd = View4 {
            base: 0x1002,
            ..packed
        };
        assert_eq!(widen(2, &odd, &packed, [2, 4, 4, 32]).3, 2);
    }
}
