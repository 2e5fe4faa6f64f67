//! Groups with output but no products (k = 0): D = β·C (zeros without C), as BLAS defines it. The
//! kernels would read out of bounds (sm80) or leave D unwritten (sm90), so such a group is handed
//! to the kernel empty (m = 0) and its D is written by a 4-D scale beside the kernel.

use cudarc::driver::CudaStream;

use super::GroupOperands;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::{DType, Layout};
use crate::support::{Scale4d, View4};

/// The fill computing group `g`'s D = `beta`·C for `kernel`, or why it cannot be computed beside
/// the kernel (a fused epilogue would apply more than beta·C; integer outputs are not scaled here).
pub(crate) fn fill_of(
    kernel: &KernelInfo,
    g: usize,
    group: &GroupOperands,
    beta: f64,
) -> Result<Scale4d, Error> {
    let op = kernel.gemm();
    let (element, layout) = (op.c.element, op.c.layout);
    if !kernel.is_plain() || !matches!(element, DType::F16 | DType::Bf16 | DType::F32 | DType::F64) {
        return Err(Error::invalid(
            kernel.name,
            format!(
                "group {g} has k = 0: its D = beta·C is computed beside the kernel only for plain \
                 epilogues of f16, bf16, f32 or f64 outputs (this kernel's epilogue is {}, its output {element}); \
                 give the group m = 0, or run it on a plain kernel",
                kernel.epilogue.fusion.label()
            ),
        ));
    }
    let (rows, cols) = (group.d.shape.rows, group.d.shape.cols);
    let bytes_strides = |ld: usize| match layout {
        Layout::Column => [0, 0, 1, ld as i64],
        _ => [0, 0, ld as i64, 1],
    };
    let view = |address: u64, ld: usize| View4 {
        base: address,
        strides: bytes_strides(ld),
    };
    let dst = view(group.d.address, group.d.shape.ld);
    let src = group.c.map_or(dst, |c| view(c.address, c.shape.ld));
    Ok(Scale4d {
        element,
        src,
        dst,
        extent: [1, 1, rows, cols],
        beta: if group.c.is_some() { beta } else { 0.0 },
    })
}

/// Enqueues `fills` on `stream`.
///
/// # Safety
/// Every fill's views are live device memory of their extents; the stream's context is current.
pub(crate) unsafe fn enqueue(stream: &CudaStream, fills: &[Scale4d]) -> Result<(), Error> {
    for fill in fills {
        unsafe { fill.enqueue_on(stream, stream.cu_stream())? };
    }
    Ok(())
}
