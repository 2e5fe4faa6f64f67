//! 3xTF32 on Hopper by splitting K: f32 accuracy from TF32 tensor cores.
//!
//! CUTLASS's 3xTF32 (`multiply_add_fast_f32`) exists only in its sm80 mainloop. On Hopper the
//! manifest's `math: multiply_add_fast_f32` on an arch-90 f32 kernel compiles an ordinary TF32
//! kernel, and the runtime feeds it split operands: every f32 element x becomes big = tf32(x) and
//! small = tf32(x − big) (the support kernel `cutlass_aot_split_tf32`, into scratch memory), laid
//! out along a K three times as long,
//!
//! ```text
//! A' = [A_big | A_big   | A_small]      (M × 3K, row-major)
//! B' = [B_big ; B_small ; B_big  ]      (3K × N, column-major)
//! ```
//!
//! so that one TF32 GEMM computes A'·B' = A_big·B_big + A_big·B_small + A_small·B_big: the
//! products CUTLASS's 3xTF32 keeps (A_small·B_small is below f32's precision), accumulated in f32.
//!
//! Measured on an H100 (2026-11-23): 116 and 120 TFLOP/s at 4096³ and 8192³, 2.31× and 2.35×
//! cuBLAS's SGEMM (TF32 off), but with a relative error of 4.2e-5 and 8.1e-5 where SGEMM's is
//! 1.1e-6 and 1.6e-6 (CUTLASS's sm80 3xTF32 on the same GPU: 3.5e-7). The warpgroup MMA truncates
//! its f32 accumulator, so the error grows with K; reaching f32 accuracy needs the accumulator
//! promoted to CUDA-core registers every few K steps (as DeepGEMM does for fp8), which a stock
//! CUTLASS 3.x mainloop does not do. Dispatch therefore does not pick these kernels; they run by
//! name, for callers who take TF32-plus accuracy at 2.3× SGEMM's speed.
//! Each part's K is padded to 4 elements (16 bytes) with zeros, so any K and any alignment of A
//! and B works; C and D are the kernel's as usual.

use cudarc::driver::CudaStream;

use super::{GemmOperands, Operand, Staging, Tuning};
use crate::device::DeviceProps;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::matrix::MatrixShape;
use crate::model::{Api, DType, Layout, MathOp};
use crate::support::{SplitTf32, View};
use crate::workspace::Workspace;

/// Whether `info` is a Hopper TF32 kernel that the runtime feeds split operands (3xTF32).
pub fn is_split(info: &KernelInfo) -> bool {
    info.api() == Api::Cutlass3x
        && info.gemm().math == MathOp::MultiplyAddFastF32
        && info.gemm().a.element == DType::F32
}

/// The split operands' geometry for `ops`.
struct Split {
    m: usize,
    n: usize,
    k: usize,
    /// K of one part, padded to 4 elements.
    part: usize,
    batch_a: usize,
    batch_b: usize,
    a_bytes: usize,
}

impl Split {
    fn of(ops: &GemmOperands) -> Self {
        let (m, k, n) = (ops.a.shape.rows, ops.a.shape.cols, ops.b.shape.cols);
        let part = k.max(1).next_multiple_of(4);
        let (batch_a, batch_b) = (ops.a.shape.batch_count, ops.b.shape.batch_count);
        Split {
            m,
            n,
            k,
            part,
            batch_a,
            batch_b,
            a_bytes: (m * 3 * part * batch_a * 4).next_multiple_of(256),
        }
    }

    fn bytes(&self) -> usize {
        self.a_bytes + self.n * 3 * self.part * self.batch_b * 4
    }

    /// The kernel's operands with the split A' and B' at `base`.
    fn operands(&self, ops: &GemmOperands, base: u64) -> GemmOperands {
        let k3 = 3 * self.part;
        let operand = |rows: usize, cols: usize, batch: usize, address: u64| Operand {
            shape: MatrixShape {
                rows,
                cols,
                ld: k3,
                batch_count: batch,
                batch_stride: rows * cols,
            },
            len: rows * cols * batch,
            address,
        };
        GemmOperands {
            a: operand(self.m, k3, self.batch_a, base),
            b: operand(k3, self.n, self.batch_b, base + self.a_bytes as u64),
            ..*ops
        }
    }

    /// The two splits, with A' and B' at `base`.
    fn kernels(&self, ops: &GemmOperands, base: u64) -> [SplitTf32; 2] {
        let k3 = (3 * self.part) as i64;
        let stride = |shape: &MatrixShape| {
            if shape.batch_count > 1 {
                shape.batch_stride
            } else {
                0
            }
        };
        [
            SplitTf32 {
                src: View::strided(ops.a.address, Layout::Row, ops.a.shape.ld, stride(&ops.a.shape)),
                dst: View {
                    base,
                    row_stride: k3,
                    col_stride: 1,
                    batch_stride: self.m as i64 * k3,
                },
                rows: self.m,
                cols: self.k,
                batch: self.batch_a,
                part_stride: self.part,
                // [big, big, small]
                small_parts: 0b100,
            },
            SplitTf32 {
                src: View::strided(
                    ops.b.address,
                    Layout::Column,
                    ops.b.shape.ld,
                    stride(&ops.b.shape),
                ),
                dst: View {
                    base: base + self.a_bytes as u64,
                    row_stride: 1,
                    col_stride: k3,
                    batch_stride: self.n as i64 * k3,
                },
                rows: self.k,
                cols: self.n,
                batch: self.batch_b,
                part_stride: self.part,
                // [big, small, big]
                small_parts: 0b010,
            },
        ]
    }
}

/// Checks that A and B are as the kernel takes them (A row-major, B column-major, matching
/// extents): the split reads them with those layouts.
fn check(info: &'static KernelInfo, ops: &GemmOperands) -> Result<(), Error> {
    super::matching_extents(
        &ops.a.shape,
        &ops.b.shape,
        ops.c.as_ref().map(|c| &c.shape),
        &ops.d.shape,
    )
    .map_err(|m| Error::invalid(info.name, m))?;
    super::check_buffer(info.name, "A", ops.a.len, &ops.a.shape, Layout::Row)?;
    super::check_buffer(info.name, "B", ops.b.len, &ops.b.shape, Layout::Column)?;
    if ops.split_k_slices != 1 {
        return Err(Error::invalid(
            info.name,
            format!(
                "a 3xTF32 kernel runs without split-K (asked for {} slices)",
                ops.split_k_slices
            ),
        ));
    }
    Ok(())
}

/// Bytes of scratch the split operands and the kernel need.
pub(crate) fn workspace_bytes(
    info: &'static KernelInfo,
    ops: &GemmOperands,
    device: &DeviceProps,
) -> Result<usize, Error> {
    check(info, ops)?;
    let split = Split::of(ops);
    let args = super::tuned_plan(info, &split.operands(ops, 1 << 40), device, Tuning::default())?;
    Ok((info.workspace_bytes(&args)? as usize).next_multiple_of(256) + split.bytes())
}

/// Splits A and B into scratch memory and runs the TF32 kernel over the 3K-long products.
///
/// # Safety
/// As [`super::launch_raw`]; the stream's context is current.
pub(crate) unsafe fn launch(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &DeviceProps,
    ops: &GemmOperands,
    tuning: Tuning,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    check(info, ops)?;
    let split = Split::of(ops);
    let operands = |base: u64| split.operands(ops, base);
    let before = |base: u64| -> Result<(), Error> {
        if split.part != split.k {
            // The padding of each part must be zeros.
            unsafe { crate::support::zero(stream, base, split.bytes())? };
        }
        for kernel in split.kernels(ops, base) {
            unsafe { kernel.enqueue(stream)? };
        }
        Ok(())
    };
    let staging = Staging {
        bytes: split.bytes(),
        operands: &operands,
        before: &before,
        after: &|_| Ok(()),
    };
    unsafe { super::enqueue_staged(info, stream, device, tuning, workspace, &staging) }
}
