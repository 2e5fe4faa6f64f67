//! Launches of the direct fprop of few channels (`cutlass_aot/conv_small.cuh`): a thread per
//! output pixel and `cols` output channels, the block's filters resident in shared memory.
//! [`crate::conv::dispatch`] ranks them beside CUTLASS's conv kernels (`conv::small`).

use std::ffi::CStr;

use cudarc::driver::CudaStream;

use super::launch_on;
use crate::error::Error;

/// Threads (output pixels) of a block, as `conv_small.cuh`'s `kThreads`.
pub const THREADS: usize = 256;
/// Output channels a thread computes: the kernels' KT.
pub const COLS: [usize; 3] = [8, 16, 32];
/// Shared memory a block may take without asking the driver for more (48 KiB).
pub const MAX_SHARED_BYTES: usize = 48 * 1024;

/// Shared memory a block takes: the filter slice (`taps` = r·s·c entries of `cols` f32), then the
/// block's outputs (THREADS rows of `cols` + 1 f32) in the same place.
pub const fn shared_bytes(taps: usize, cols: usize) -> usize {
    let filter = taps * cols;
    let outputs = THREADS * (cols + 1);
    4 * if filter > outputs { filter } else { outputs }
}

/// The kernel's argument struct (`cutlass_aot_conv_small_args`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ConvSmallArgs {
    x: u64,
    w: u64,
    c: u64,
    d: u64,
    extents: [i32; 9],
    geometry: [i32; 6],
    alpha: f32,
    beta: f32,
    dgrad: i32,
}

/// One direct fprop: packed NHWC activation `x`, KRSC filter `w`, NPQK output `d` (and `c`, or 0);
/// with `dgrad`, a unit-stride dgrad as the fprop over dy (`x` = dy, extents and padding of that
/// view: dy's for n, h, w, c, dx's channels for k and its rows and columns for p, q).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ConvSmall {
    /// The kernel's entry (`cutlass_aot_conv_small_fprop_<types>_kt<cols>`).
    pub entry: &'static CStr,
    pub cols: usize,
    pub x: u64,
    pub w: u64,
    pub c: u64,
    pub d: u64,
    /// n, h, w, c, k, r, s, p, q.
    pub extents: [usize; 9],
    /// Padding (negative: the view starts inside the image), stride, dilation: rows, columns.
    pub pad: [i64; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub alpha: f32,
    pub beta: f32,
    pub dgrad: bool,
}

impl ConvSmall {
    /// Bytes of shared memory a block takes.
    pub fn shared_bytes(&self) -> usize {
        let [_, _, _, c, _, r, s, _, _] = self.extents;
        shared_bytes(r * s * c, self.cols)
    }

    /// Enqueues the convolution on `stream` (nothing when the output is empty).
    ///
    /// # Safety
    /// Every address must hold its packed tensor; the stream's context must be current.
    pub unsafe fn enqueue(&self, stream: &CudaStream) -> Result<(), Error> {
        let [n, _, _, _, k, _, _, p, q] = self.extents;
        let pixels = n * p * q;
        if pixels == 0 || k == 0 {
            return Ok(());
        }
        let blocks = pixels.div_ceil(THREADS);
        let shared = self.shared_bytes();
        let narrow = |v: usize| i32::try_from(v).ok();
        let extents = self.extents.map(narrow);
        // No allocation: a plan's launch goes through here.
        let geometry = [
            i32::try_from(self.pad[0]).ok(),
            i32::try_from(self.pad[1]).ok(),
            narrow(self.stride[0]),
            narrow(self.stride[1]),
            narrow(self.dilation[0]),
            narrow(self.dilation[1]),
        ];
        let fits = COLS.contains(&self.cols)
            && shared <= MAX_SHARED_BYTES
            && blocks <= i32::MAX as usize
            && k.div_ceil(self.cols) <= 65535
            && extents.iter().chain(&geometry).all(Option::is_some);
        if !fits {
            return Err(Error::invalid(
                "direct conv",
                format!(
                    "extents {:?} with {} output channels a thread: a block takes {shared} bytes of shared \
                     memory (at most {MAX_SHARED_BYTES}), extents must fit 32 bits, {} columns one of {COLS:?}",
                    self.extents, self.cols, self.cols
                ),
            ));
        }
        let args = ConvSmallArgs {
            x: self.x,
            w: self.w,
            c: self.c,
            d: self.d,
            extents: extents.map(|v| v.unwrap_or(0)),
            geometry: geometry.map(|v| v.unwrap_or(0)),
            alpha: self.alpha,
            beta: self.beta,
            dgrad: i32::from(self.dgrad),
        };
        let grid = (blocks as u32, k.div_ceil(self.cols) as u32, 1);
        unsafe {
            launch_on(
                stream,
                stream.cu_stream(),
                self.entry,
                &args,
                grid,
                (THREADS as u32, 1, 1),
                shared,
            )
        }
    }
}
