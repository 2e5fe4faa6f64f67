//! The host half of an elementwise launch, without a device: the view's extents and strides
//! checked against the buffers, its dimensions merged where every operand allows (a contiguous
//! tensor becomes one row), the vector or scalar entry chosen, and the kernel's Params built.

use crate::model::elementwise::ElementwiseDesign;

/// Division by a run-time divisor on the device (the glue's `cutlass_aot_fast_div`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastDiv {
    pub magic: u64,
    pub divisor: u64,
}

impl FastDiv {
    /// `umulhi(n, magic)` is `n / divisor` for `n · divisor < 2^64`; divisor 1 is special-cased on
    /// the device (its magic would be 2^64).
    pub fn new(divisor: u64) -> Self {
        let magic = if divisor <= 1 { 0 } else { u64::MAX / divisor + 1 };
        FastDiv { magic, divisor }
    }

    /// What the device computes, for tests.
    pub fn divide(&self, n: u64) -> u64 {
        if self.divisor == 1 {
            n
        } else {
            ((n as u128 * self.magic as u128) >> 64) as u64
        }
    }
}

/// The one parameter of every elementwise entry (the glue's `cutlass_aot_elementwise_params`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Params {
    pub x: u64,
    pub y: u64,
    pub d: u64,
    pub x_batch_stride: i64,
    pub x_row_stride: i64,
    pub y_batch_stride: i64,
    pub y_row_stride: i64,
    pub y_col_stride: i64,
    pub d_batch_stride: i64,
    pub d_row_stride: i64,
    pub vectors: u64,
    pub vectors_per_row: FastDiv,
    pub rows: FastDiv,
    pub alpha: f64,
    pub beta: f64,
    pub scale: f64,
    pub activation_arg: f64,
    /// Elements after the last whole vector of a one-row view (vector entry only).
    pub tail: u64,
}

/// The size the glue's `static_assert` fixes.
pub const PARAMS_BYTES: usize = 160;
const _: () = assert!(std::mem::size_of::<Params>() == PARAMS_BYTES);

/// One operand as the plan sees it: its address, its length in elements, its element size and
/// its strides in elements (batch, row, column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    pub address: u64,
    pub len: usize,
    pub bytes: usize,
    pub strides: [usize; 3],
}

/// The scalars of `d = scale·act(alpha·x ⊕ beta·y)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scalars {
    pub alpha: f64,
    pub beta: f64,
    pub scale: f64,
    pub activation_arg: f64,
}

/// A launch: Params, grid (x, y) of blocks of `design.threads`, and which entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub params: Params,
    /// One row of blocks over the view (Linear and Flat walks of the glue), or, for the scalar
    /// entry over rows at least two blocks wide, x over one row's columns and y over the rows (the
    /// Rows walk: one division per row instead of two per element).
    pub grid: [u32; 2],
    pub vector: bool,
    /// The view after merging: batch, rows, cols.
    pub shape: [usize; 3],
}

/// How the glue's threads find their accesses (its `Walk`); the device picks the same one from
/// Params and the grid's shape, the host sizes the grid by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    Linear,
    Rows,
    Flat,
}

/// Elements an operand of `strides` spans over `shape` (0 for an empty shape).
fn span(shape: [usize; 3], strides: [usize; 3]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    let mut last = 0usize;
    for i in 0..3 {
        last = last.checked_add((shape[i] - 1).checked_mul(strides[i])?)?;
    }
    last.checked_add(1)
}

/// Plans `d = f(x, y)` over `shape` (batch, rows, cols); `Ok(None)` when there is nothing to do.
/// The grid covers the view in one pass (measured faster on an H100 than one wave of blocks
/// looping over it), up to 2^31 - 1 blocks across and 65535 rows of blocks.
pub fn plan(
    shape: [usize; 3],
    x: Operand,
    y: Option<Operand>,
    d: Operand,
    scalars: Scalars,
    design: &ElementwiseDesign,
) -> Result<Option<Plan>, String> {
    let named = [("x", Some(x)), ("y", y), ("d", Some(d))];
    for (name, operand) in named {
        let Some(o) = operand else { continue };
        let need = span(shape, o.strides).ok_or_else(|| {
            format!(
                "{name}'s extent overflows the address space (strides {:?})",
                o.strides
            )
        })?;
        if need > o.len {
            return Err(format!(
                "{name} holds {} elements but the view [batch {}, rows {}, cols {}] with strides \
                 (batch {}, row {}, col {}) reaches element {}",
                o.len, shape[0], shape[1], shape[2], o.strides[0], o.strides[1], o.strides[2], need
            ));
        }
    }
    let [batch, rows, cols] = shape;
    // d's elements must be distinct, or two threads would write one of them.
    if rows > 1 && d.strides[1] < cols {
        return Err(format!(
            "d's row stride {} is below its {cols} columns: rows would overlap",
            d.strides[1]
        ));
    }
    if batch > 1 && d.strides[0] < rows.max(1) * d.strides[1].max(cols) {
        return Err(format!(
            "d's batch stride {} is below one batch's {} elements: batches would overlap",
            d.strides[0],
            rows * d.strides[1].max(cols)
        ));
    }
    if shape.contains(&0) {
        return Ok(None);
    }
    let (shape, strides) = merge(shape, [x.strides, y.map_or([0; 3], |y| y.strides), d.strides]);
    let [batch, rows, cols] = shape;
    let [xs, ys, ds] = strides;
    let v = design.vector_elements.max(1) as usize;
    let aligned = |o: &Operand, s: [usize; 3]| {
        o.address % (v * o.bytes) as u64 == 0 && (batch == 1 || s[0] % v == 0) && (rows == 1 || s[1] % v == 0)
    };
    let y_vector_ok = match y {
        None => true,
        Some(yo) => match ys[2] {
            0 => true,
            1 => aligned(&yo, ys),
            _ => false,
        },
    };
    // One row (every contiguous tensor) may end in a partial vector: the vector entry does those
    // last elements one at a time. Rows of several must each be whole vectors.
    let one_row = batch == 1 && rows == 1;
    let vector = v > 1 && (one_row || cols % v == 0) && aligned(&x, xs) && aligned(&d, ds) && y_vector_ok;
    let per_access = if vector { v } else { 1 };
    let per_row = (cols / per_access) as u64;
    let tail = (cols % per_access) as u64;
    let vectors = (batch as u64)
        .checked_mul(rows as u64)
        .and_then(|n| n.checked_mul(per_row))
        .ok_or("the view has more than 2^64 elements")?;
    let largest_divisor = per_row.max(rows as u64);
    if (vectors as u128) * (largest_divisor as u128) >= 1u128 << 64 {
        return Err(format!(
            "the view [batch {batch}, rows {rows}, cols {cols}] is too large for one launch; split it"
        ));
    }
    // The glue's walk (its header says how each finds its accesses), as the device will choose
    // it: one row is Linear; the scalar entry takes Rows over rows that fill two blocks (narrower
    // ones would leave most of each block idle), where its blocks across cover a row (the glue
    // does not loop over columns); the rest is Flat. The vector entry divides once per 16 bytes
    // and runs at the copy's speed either way (H100), so it keeps Flat.
    let unroll = if vector {
        design.unroll
    } else {
        design.scalar_unroll
    };
    let per_block = (design.threads * unroll.max(1)) as u64;
    let across = per_row.div_ceil(per_block);
    let walk = if one_row {
        Walk::Linear
    } else if !vector && per_row >= 2 * design.threads as u64 && across <= i32::MAX as u64 {
        Walk::Rows
    } else {
        Walk::Flat
    };
    let blocks = |per_block: u64| vectors.div_ceil(per_block).clamp(1, i32::MAX as u64) as u32;
    let grid = match walk {
        Walk::Rows => {
            let lines = (batch * rows) as u64;
            [across as u32, lines.min(u16::MAX as u64) as u32]
        }
        // The scalar entry's Flat walk takes one access per thread (the glue says why).
        Walk::Flat if !vector => [blocks(design.threads as u64), 1],
        _ => [blocks(per_block), 1],
    };
    let stride = |s: usize| s as i64;
    let params = Params {
        x: x.address,
        y: y.map_or(0, |y| y.address),
        d: d.address,
        x_batch_stride: stride(xs[0]),
        x_row_stride: stride(xs[1]),
        y_batch_stride: stride(ys[0]),
        y_row_stride: stride(ys[1]),
        y_col_stride: stride(ys[2]),
        d_batch_stride: stride(ds[0]),
        d_row_stride: stride(ds[1]),
        vectors,
        vectors_per_row: FastDiv::new(per_row),
        rows: FastDiv::new(rows as u64),
        alpha: scalars.alpha,
        beta: scalars.beta,
        scale: scalars.scale,
        activation_arg: scalars.activation_arg,
        tail,
    };
    Ok(Some(Plan {
        params,
        grid,
        vector,
        shape,
    }))
}

/// Merges adjacent dimensions where every operand's outer stride is its inner stride times the
/// inner extent (a contiguous tensor becomes one row, so the kernel never divides), and zeroes the
/// strides of extent-1 dimensions. x's and d's column stride stays 1.
fn merge(shape: [usize; 3], strides: [[usize; 3]; 3]) -> ([usize; 3], [[usize; 3]; 3]) {
    // Innermost first: (extent, per-operand stride).
    let mut dims: Vec<(usize, [usize; 3])> = Vec::new();
    for axis in (0..3).rev() {
        let n = shape[axis];
        let s = [strides[0][axis], strides[1][axis], strides[2][axis]];
        if axis != 2 && n == 1 {
            continue;
        }
        match dims.last_mut() {
            Some((inner_n, inner_s)) if (0..3).all(|k| s[k] == inner_s[k] * *inner_n) => *inner_n *= n,
            _ => dims.push((n, s)),
        }
    }
    let mut out_shape = [1usize; 3];
    let mut out = [[0usize; 3]; 3];
    for (slot, (n, s)) in dims.iter().enumerate() {
        let axis = 2 - slot;
        out_shape[axis] = *n;
        for k in 0..3 {
            out[k][axis] = if *n == 1 && axis != 2 { 0 } else { s[k] };
        }
    }
    (out_shape, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESIGN: ElementwiseDesign = ElementwiseDesign {
        threads: 256,
        unroll: 4,
        vector_elements: 8,
        scalar_unroll: 4,
    };

    fn operand(len: usize, strides: [usize; 3]) -> Operand {
        Operand {
            address: 0x1000,
            len,
            bytes: 2,
            strides,
        }
    }

    const ONES: Scalars = Scalars {
        alpha: 1.0,
        beta: 1.0,
        scale: 1.0,
        activation_arg: 0.0,
    };

    #[test]
    fn fast_division_is_exact() {
        for d in [1u64, 2, 3, 7, 10, 255, 1000, 65535, 1 << 20, (1 << 32) - 1] {
            let f = FastDiv::new(d);
            for n in [0u64, 1, d - 1, d, d + 1, 12345678, (1 << 32) - 1, 1 << 40] {
                if (n as u128) * (d as u128) < (1u128 << 64) {
                    assert_eq!(f.divide(n), n / d, "{n} / {d}");
                }
            }
        }
    }

    #[test]
    fn contiguous_views_become_one_vectorised_row() {
        let c = [6 * 64, 64, 1];
        let p = plan(
            [4, 6, 64],
            operand(1536, c),
            None,
            operand(1536, c),
            ONES,
            &DESIGN,
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.shape, [1, 1, 1536]);
        assert!(p.vector);
        assert_eq!(p.params.vectors, 1536 / 8);
        assert_eq!(p.grid, [1, 1]);
    }

    #[test]
    fn row_broadcast_keeps_rows_and_vectors() {
        let c = [6 * 64, 64, 1];
        let y = operand(64, [0, 0, 1]);
        let p = plan(
            [1, 6, 64],
            operand(384, c),
            Some(y),
            operand(384, c),
            ONES,
            &DESIGN,
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.shape, [1, 6, 64]);
        assert!(p.vector);
        assert_eq!((p.params.y_row_stride, p.params.y_col_stride), (0, 1));
        // A scalar y merges like x and d.
        let s = operand(1, [0, 0, 0]);
        let p = plan(
            [2, 6, 64],
            operand(768, [384, 64, 1]),
            Some(s),
            operand(768, [384, 64, 1]),
            ONES,
            &DESIGN,
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.shape, [1, 1, 768]);
    }

    #[test]
    fn one_row_of_any_length_takes_the_vector_entry_with_a_tail() {
        let c = [0, 63, 1];
        let p = plan([1, 5, 63], operand(315, c), None, operand(315, c), ONES, &DESIGN)
            .unwrap()
            .unwrap();
        assert!(p.vector);
        assert_eq!(p.shape, [1, 1, 315]);
        assert_eq!((p.params.vectors, p.params.tail), (39, 3));
        // Shorter than one vector: the tail alone, in one block.
        let p = plan([1, 1, 5], operand(5, c), None, operand(5, c), ONES, &DESIGN)
            .unwrap()
            .unwrap();
        assert!(p.vector);
        assert_eq!((p.params.vectors, p.params.tail, p.grid), (0, 5, [1, 1]));
    }

    #[test]
    fn the_scalar_entry_walks_wide_rows_with_a_row_of_blocks_each() {
        // Ragged rows of 4099 (no vectors): x over 4099 / (256 · 4) columns, y over 2 × 3 rows.
        let c = [3 * 4099, 4099, 1];
        let mut x = operand(6 * 4099, c);
        x.address += 2;
        let p = plan(
            [2, 3, 4099],
            x,
            None,
            operand(6 * 4100, [3 * 4100, 4100, 1]),
            ONES,
            &DESIGN,
        )
        .unwrap()
        .unwrap();
        assert!(!p.vector);
        assert_eq!(p.grid, [5, 6]);
        // Rows narrower than two blocks: one row of blocks over the whole view.
        let p = plan(
            [1, 100, 300],
            operand(30100, [0, 301, 1]),
            None,
            operand(30100, [0, 301, 1]),
            ONES,
            &DESIGN,
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.grid, [30000u64.div_ceil(256) as u32, 1]);
        // More rows than a grid has: the blocks loop over them.
        let p = plan(
            [1, 70000, 600],
            operand(70000 * 601, [0, 601, 1]),
            None,
            operand(70000 * 601, [0, 601, 1]),
            ONES,
            &DESIGN,
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.grid, [1, 65535]);
    }

    #[test]
    fn ragged_or_misaligned_views_take_the_scalar_entry() {
        // Padded rows of 63: each would end in a partial vector.
        let p = plan(
            [1, 5, 63],
            operand(320, [0, 64, 1]),
            None,
            operand(320, [0, 64, 1]),
            ONES,
            &DESIGN,
        )
        .unwrap()
        .unwrap();
        assert!(!p.vector);
        assert_eq!(p.shape, [1, 5, 63]);
        assert_eq!(p.params.tail, 0);
        // A misaligned start of one row.
        let mut x = operand(316, [0, 0, 1]);
        x.address += 2;
        let p = plan([1, 1, 315], x, None, operand(315, [0, 0, 1]), ONES, &DESIGN)
            .unwrap()
            .unwrap();
        assert!(!p.vector);
        assert_eq!((p.params.vectors, p.params.tail), (315, 0));
        let mut x = operand(1000, [0, 72, 1]);
        x.address += 2;
        let p = plan([1, 4, 64], x, None, operand(1000, [0, 64, 1]), ONES, &DESIGN)
            .unwrap()
            .unwrap();
        assert!(!p.vector);
        assert_eq!(p.shape, [1, 4, 64]);
    }

    #[test]
    fn short_buffers_and_overlapping_outputs_are_refused() {
        let c = [0, 64, 1];
        let e = plan([1, 4, 64], operand(255, c), None, operand(256, c), ONES, &DESIGN).unwrap_err();
        assert!(e.starts_with("x holds 255 elements"), "{e}");
        let e = plan(
            [1, 4, 64],
            operand(256, c),
            None,
            operand(256, [0, 32, 1]),
            ONES,
            &DESIGN,
        )
        .unwrap_err();
        assert!(e.contains("rows would overlap"), "{e}");
        assert_eq!(
            plan([0, 4, 64], operand(0, c), None, operand(0, c), ONES, &DESIGN).unwrap(),
            None
        );
    }
}
