//! Staging: running a problem no compiled kernel can read as it lies.
//!
//! Kernels take fixed layouts and read their operands in vectors (8 f16 elements: 16 bytes), so a
//! K of 700, a leading dimension of 1001, an offset view 2 bytes off, or a layout combination the
//! build has no kernel for is refused by every kernel. Dispatch then *stages* the operands that
//! stand in the way: each is copied (by the runtime's tiled copy kernel where the layout differs,
//! its row copy where it does not) into a packed buffer of the workspace in the layout a kernel takes, with its
//! contiguous extent padded to 16 bytes. The copy writes the padding as zeros: a K padded this way
//! adds nothing to the products; an M or N padded this way only adds rows or columns of the staged
//! D, which are not copied back.
//!
//! K = 0 is the same mechanism: A and B are staged as zero matrices of one padded K step (nothing
//! is read from them), so the kernel's epilogue computes D = β·C on the GPU.
//!
//! A staged launch costs one extra read and write of each staged operand and a launch per copy:
//! dispatch stages only where no kernel runs the problem directly, or where its model estimates
//! the copies plus a faster kernel clearly below the direct kernel (a 2.x kernel in the problem's
//! layouts against a 3.x kernel after copying one operand).

use crate::gemm::{GemmOperands, Operand};
use crate::matrix::MatrixShape;
use crate::model::Layout;
use crate::select::cost::{
    STAGING_LAUNCH_SECONDS, STAGING_ROW_BYTES_PER_SECOND, STAGING_TRANSPOSE_BYTES_PER_SECOND,
};
use crate::support::{Copy2d, View};

use super::Signature;

/// Staged buffers start on 256-byte boundaries (TMA and every vector width need at most 128).
const BUFFER_ALIGN: usize = 256;

/// Operands are staged with their contiguous extent and leading dimension padded to 16 bytes: the
/// widest vector any kernel reads.
const VECTOR_BYTES: usize = 16;

/// How to run a problem on kernels that take `signature`'s layouts: what to copy into the
/// staging area before the kernel, what to copy out after it, and the operands the kernel sees.
#[derive(Clone, Debug, PartialEq)]
pub struct StagePlan {
    /// Types and layouts of the operands the kernel sees.
    pub signature: Signature,
    /// Bytes of staging area the plan needs (before any workspace of the kernel's own).
    pub bytes: usize,
    /// Names of the staged operands, for reports ("A", "B", "C", "D").
    pub staged: Vec<&'static str>,
    /// The kernel's operands, staged ones at offsets into the staging area (see [`Self::at`]).
    operands: GemmOperands,
    /// Which of A, B, C, D are in the staging area.
    relative: [bool; 4],
    copies_in: Vec<Copy2d>,
    copy_out: Option<Copy2d>,
}

/// One operand's place: the user's, or a packed buffer at an offset of the staging area.
struct Placed {
    operand: Operand,
    staged: bool,
}

impl StagePlan {
    /// The plan for running `ops` (types and layouts `user`) on kernels taking `layouts` (A, B,
    /// C/D). Operands are staged where their layout differs, their contiguous extent or leading
    /// dimension is not a multiple of 16 bytes, their address or batch stride is not 16-byte
    /// aligned, or a padded extent they share requires it; with K = 0, A and B always are.
    /// `ops` must have passed the problem checks ([`super::validate`]).
    pub fn new(user: Signature, ops: &GemmOperands, layouts: [Layout; 3]) -> Self {
        let bytes_of = |d: crate::model::DType| (d.bits() as usize).div_ceil(8).max(1);
        let (ba, bb, bc) = (
            bytes_of(user.element_a),
            bytes_of(user.element_b),
            bytes_of(user.element_c),
        );
        let vector = |bytes: usize| (VECTOR_BYTES / bytes).max(1);
        let (va, vb, vc) = (vector(ba), vector(bb), vector(bc));
        let [la, lb, lc] = layouts;
        let (m, k, n) = (ops.a.shape.rows, ops.a.shape.cols, ops.b.shape.cols);
        let batch = ops.d.shape.batch_count;
        let pad = |extent: usize, steps: &[(bool, usize)]| {
            let step = steps.iter().filter(|s| s.0).map(|s| s.1).max().unwrap_or(1);
            extent.max(1).next_multiple_of(step)
        };
        // K may be 0: it is padded to one vector (or 1) of zeros.
        let kp = pad(k, &[(la == Layout::Row, va), (lb == Layout::Column, vb)]);
        let mp = pad(m, &[(la == Layout::Column, va), (lc == Layout::Column, vc)]);
        let np = pad(n, &[(lb == Layout::Row, vb), (lc == Layout::Row, vc)]);

        let mut plan = StagePlan {
            signature: Signature {
                layout_a: la,
                layout_b: lb,
                layout_c: lc,
                ..user
            },
            bytes: 0,
            staged: Vec::new(),
            operands: *ops,
            relative: [false; 4],
            copies_in: Vec::new(),
            copy_out: None,
        };
        let a = plan.place(&ops.a, (user.layout_a, la), (mp, kp), (va, ba), k == 0, true);
        let b = plan.place(&ops.b, (user.layout_b, lb), (kp, np), (vb, bb), k == 0, true);
        let d = plan.place(&ops.d, (user.layout_c, lc), (mp, np), (vc, bc), false, false);
        // C is read only when beta != 0.
        let c = ops.c.filter(|_| ops.beta != 0.0);
        let c = match c {
            // C goes into the staged D, which the kernel reads as C and overwrites as D.
            Some(c) if d.staged => {
                plan.copies_in.push(Copy2d {
                    element_bytes: bc,
                    src: view(&c, user.layout_c),
                    dst: view(&d.operand, lc),
                    rows: m,
                    cols: n,
                    batch,
                    dst_rows: m,
                    dst_cols: n,
                });
                Some(Placed {
                    operand: d.operand,
                    staged: true,
                })
            }
            Some(c) => Some(plan.place(&c, (user.layout_c, lc), (mp, np), (vc, bc), false, true)),
            None => None,
        };
        if d.staged {
            plan.copy_out = Some(Copy2d {
                element_bytes: bc,
                src: view(&d.operand, lc),
                dst: view(&ops.d, user.layout_c),
                rows: m,
                cols: n,
                batch,
                dst_rows: m,
                dst_cols: n,
            });
        }
        plan.relative = [a.staged, b.staged, c.as_ref().is_some_and(|c| c.staged), d.staged];
        plan.staged = ["A", "B", "C", "D"]
            .into_iter()
            .zip(plan.relative)
            .filter_map(|(name, staged)| staged.then_some(name))
            .collect();
        plan.operands = GemmOperands {
            a: a.operand,
            b: b.operand,
            c: c.map(|c| c.operand),
            d: d.operand,
            ..*ops
        };
        if ops.c.is_some() && plan.operands.c.is_none() {
            // beta == 0: C is not read; the kernel gets none.
            plan.operands.beta = 0.0;
        }
        plan
    }

    /// Places one operand: as it is, or staged into a packed buffer of `layout` and the padded
    /// extents `(rows, cols)`. `force` stages it whatever its alignment (K = 0); `read` copies its
    /// contents in (inputs; not D).
    fn place(
        &mut self,
        op: &Operand,
        (user_layout, layout): (Layout, Layout),
        (rows, cols): (usize, usize),
        (vector, element_bytes): (usize, usize),
        force: bool,
        read: bool,
    ) -> Placed {
        let shape = &op.shape;
        let misaligned = op.address % VECTOR_BYTES as u64 != 0
            || shape.ld % vector != 0
            || (shape.batch_count > 1 && shape.batch_stride % vector != 0);
        let needed = force || user_layout != layout || (rows, cols) != (shape.rows, shape.cols) || misaligned;
        if !needed {
            return Placed {
                operand: *op,
                staged: false,
            };
        }
        let one = rows * cols;
        let staged_shape = MatrixShape {
            rows,
            cols,
            ld: if layout == Layout::Column { rows } else { cols },
            batch_count: shape.batch_count,
            batch_stride: one,
        };
        let offset = self.bytes.next_multiple_of(BUFFER_ALIGN);
        let bytes = one * shape.batch_count * element_bytes;
        self.bytes = offset + bytes;
        let operand = Operand {
            shape: staged_shape,
            len: one * shape.batch_count,
            address: offset as u64,
        };
        if !read {
            return Placed {
                operand,
                staged: true,
            };
        }
        // The copy writes the padding as zeros: padding along K must read as zeros (it is summed
        // over); padding along M or N only reaches outputs that are not copied back, but is
        // cleared too so that no stale NaN is ever computed on.
        self.copies_in.push(Copy2d {
            element_bytes,
            src: view(op, user_layout),
            dst: view(&operand, layout),
            rows: shape.rows,
            cols: shape.cols,
            batch: shape.batch_count,
            dst_rows: rows,
            dst_cols: cols,
        });
        Placed {
            operand,
            staged: true,
        }
    }

    /// The copies and fills it enqueues besides the kernel, in and out.
    fn copies(&self) -> impl Iterator<Item = &Copy2d> {
        self.copies_in.iter().chain(&self.copy_out)
    }

    /// Copies and fills it enqueues besides the kernel (each costs a launch: microseconds that
    /// matter for small problems).
    pub fn launches(&self) -> usize {
        self.copies().count()
    }

    /// Bytes the copies and fills move (read + written, zero padding included).
    pub fn traffic(&self) -> usize {
        self.copies().map(Copy2d::traffic).sum()
    }

    /// What the copies are estimated to take (seconds): each copy's bytes at the bandwidth of its
    /// kind (a straight one runs along rows; a transposing one goes through shared-memory tiles,
    /// whole tiles counted) plus a launch.
    pub fn copy_seconds(&self) -> f64 {
        self.copies()
            .map(|copy| {
                let seconds = if copy.transposes() {
                    copy.tile_traffic() as f64 / STAGING_TRANSPOSE_BYTES_PER_SECOND
                } else {
                    copy.traffic() as f64 / STAGING_ROW_BYTES_PER_SECOND
                };
                seconds + STAGING_LAUNCH_SECONDS
            })
            .sum()
    }

    /// Whether anything is staged (false: the kernel reads the operands as given).
    pub fn is_needed(&self) -> bool {
        self.relative.iter().any(|&r| r)
    }

    /// The kernel's operands with the staging area at `base`.
    pub fn at(&self, base: u64) -> GemmOperands {
        let mut ops = self.operands;
        let fix = |op: &mut Operand, relative: bool| {
            if relative {
                op.address += base;
            }
        };
        fix(&mut ops.a, self.relative[0]);
        fix(&mut ops.b, self.relative[1]);
        if let Some(c) = ops.c.as_mut() {
            fix(c, self.relative[2]);
        }
        fix(&mut ops.d, self.relative[3]);
        ops
    }

    /// Enqueues the copies that come before the kernel, with the staging area at `base`.
    ///
    /// # Safety
    /// `base` must hold [`Self::bytes`] bytes of device memory; the user's operands must be valid
    /// device memory as the dispatch call's contract states; the stream's context is current.
    pub unsafe fn enqueue_before(
        &self,
        stream: &cudarc::driver::CudaStream,
        base: u64,
    ) -> Result<(), crate::Error> {
        for copy in &self.copies_in {
            unsafe { relocated(copy, base, true).enqueue(stream)? };
        }
        Ok(())
    }

    /// Enqueues the copy of the staged D back to the user's D, if D was staged.
    ///
    /// # Safety
    /// As [`Self::enqueue_before`].
    pub unsafe fn enqueue_after(
        &self,
        stream: &cudarc::driver::CudaStream,
        base: u64,
    ) -> Result<(), crate::Error> {
        match &self.copy_out {
            Some(copy) => unsafe { relocated(copy, base, false).enqueue(stream) },
            None => Ok(()),
        }
    }
}

/// `copy` with its staging-side view moved to `base` (the destination when copying in, the source
/// when copying out).
fn relocated(copy: &Copy2d, base: u64, into_staging: bool) -> Copy2d {
    let mut copy = *copy;
    let view = if into_staging {
        &mut copy.dst
    } else {
        &mut copy.src
    };
    view.base += base;
    copy
}

/// An operand (the user's, or a staged one at its offset into the staging area) as the copy kernel
/// reads or writes it (batch stride 0 for one matrix).
fn view(op: &Operand, layout: Layout) -> View {
    let stride = if op.shape.batch_count > 1 {
        op.shape.batch_stride
    } else {
        0
    };
    View::strided(op.address, layout, op.shape.ld, stride)
}
