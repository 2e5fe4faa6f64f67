//! The crate's operations as the selection engine sees them: the one list that maps a measured
//! row to the work its way does (so that a table's rows calibrate the model whatever operation
//! measured them), and a key to the problem it belongs to.

use crate::select::{Key, Row, Work};

/// The work of the way `row` measured, by its operation; `None` for an operation without a model.
pub fn row_work(row: &Row) -> Option<Work> {
    match row.key.op {
        crate::dispatch::candidates::OP => crate::dispatch::candidates::row_work(row),
        op if op.starts_with(crate::conv::dispatch::OP_PREFIX) => crate::conv::dispatch::row_work(row),
        _ => None,
    }
}

/// The problem a key belongs to: a GEMM, its transpose (D^T = B^T·A^T, run by the same buffers)
/// and its operands staged into other layouts are one problem (the ways dispatch weighs for it);
/// every other key is its own.
pub fn problem_of_key(key: &Key) -> Key {
    match key.op {
        crate::dispatch::candidates::OP => crate::dispatch::candidates::canonical_key(&Key {
            layouts: None,
            ..*key
        }),
        _ => *key,
    }
}
