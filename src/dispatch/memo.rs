//! The key of GEMM dispatch's decisions in the engine's memo ([`crate::select::memo`]): it is everything a decision depends on: registry, table, device, policy, types and layouts,
//! extents, each operand's leading dimension, batch count and stride, its address modulo 256 (only
//! alignment matters), whether C is read, and split-K. What is remembered is the kernel choice and,
//! for a staged problem, the layouts staged into; the staging plan itself (which names the caller's
//! addresses) is rebuilt per call.

use super::{Policy, Selection, Signature};
use crate::gemm::{GemmOperands, Operand};
use crate::model::Layout;
use crate::select::memo::Memo;

/// What is remembered: the selection, and the layouts staged into (`None`: direct).
pub(super) type Remembered = (Selection, Option<[Layout; 3]>);

#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    registry: usize,
    table: u64,
    device: (usize, u32, u32),
    allow_tf32: bool,
    signature: (u8, u8, u8, [bool; 3]),
    operands: [(usize, usize, usize, usize, usize, u64); 4],
    reads_c: bool,
    split_k: usize,
}

impl Key {
    pub(super) fn new(
        registry: *const crate::Registry,
        table: &super::Table,
        device: &crate::device::DeviceProps,
        policy: Policy,
        signature: Signature,
        ops: &GemmOperands,
    ) -> Self {
        let operand = |op: &Operand| {
            let s = &op.shape;
            let stride = if s.batch_count > 1 { s.batch_stride } else { 0 };
            (s.rows, s.cols, s.ld, s.batch_count, stride, op.address % 256)
        };
        let reads_c = ops.c.is_some() && ops.beta != 0.0;
        let c = ops
            .c
            .filter(|_| reads_c)
            .map_or((0, 0, 0, 0, 0, 0), |c| operand(&c));
        let row = |l: Layout| l == Layout::Row;
        Key {
            registry: registry as usize,
            table: table.id(),
            device: (
                device.name.as_ptr() as usize,
                device.compute_capability,
                device.multiprocessors,
            ),
            allow_tf32: policy.allow_tf32,
            signature: (
                signature.element_a as u8,
                signature.element_b as u8,
                signature.element_c as u8,
                [
                    row(signature.layout_a),
                    row(signature.layout_b),
                    row(signature.layout_c),
                ],
            ),
            operands: [operand(&ops.a), operand(&ops.b), c, operand(&ops.d)],
            reads_c,
            split_k: ops.split_k_slices,
        }
    }
}

/// GEMM dispatch's remembered decisions.
pub(super) static MEMO: Memo<Key, Remembered> = Memo::new();
