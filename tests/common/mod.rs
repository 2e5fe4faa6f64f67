//! Fixtures shared by the CPU test suites (`runtime.rs`, `runtime_3x.rs`, `dispatch.rs`,
//! `select.rs`, ...): a fake H100, fake device addresses and operands built from them. Each suite
//! uses a subset.
#![allow(dead_code)]

use cutlass_aot::device::DeviceProps;
use cutlass_aot::model::Layout;
use cutlass_aot::{kernels, Error, GemmOperands, GemmProblem, KernelInfo, MatrixShape, Operand};

/// An H100 SXM as `device::props` would report it.
pub const H100: DeviceProps = DeviceProps {
    name: "NVIDIA H100 80GB HBM3",
    multiprocessors: 132,
    compute_capability: 90,
    max_shared_memory_per_block_optin: 232_448,
};

/// An Ampere device (no Hopper kernel runs there).
#[allow(dead_code)]
pub const A100: DeviceProps = DeviceProps {
    name: "NVIDIA A100-SXM4-80GB",
    multiprocessors: 108,
    compute_capability: 80,
    max_shared_memory_per_block_optin: 166_912,
};

/// Fake device addresses, 256-byte aligned like cudaMalloc's, far apart and distinctive.
pub const ADDR_A: u64 = 0x7f00_0000_0000;
pub const ADDR_B: u64 = 0x7f10_0000_0000;
pub const ADDR_C: u64 = 0x7f20_0000_0000;
pub const ADDR_D: u64 = 0x7f30_0000_0000;

/// The default build's GEMM kernels of the registry, in manifest order, as a registry of their own
/// for the GEMM suites: without the kernel families of cargo features (grouped kernels of
/// `--features grouped`, Hopper pointer-array kernels of `--features array`), which have suites of
/// their own.
pub fn gemm_registry() -> &'static cutlass_aot::Registry {
    static GEMM: std::sync::OnceLock<cutlass_aot::Registry> = std::sync::OnceLock::new();
    GEMM.get_or_init(|| {
        let kernels: Vec<&'static KernelInfo> = kernels::REGISTRY
            .all()
            .iter()
            .copied()
            .filter(|k| k.operation.kind() == cutlass_aot::model::OperationKind::Gemm)
            // The narrow-alignment families (`*_align1`, `_align2`, `_align4`) have tests of
            // their own; the registry tests here list the manifest without them.
            .filter(|k| !narrow_alignment(k))
            .filter(|k| {
                k.design
                    .as_3x()
                    .map_or(true, |d| d.batch_mode == cutlass_aot::model::BatchMode::Strided)
            })
            .collect();
        cutlass_aot::Registry::new(Box::leak(kernels.into_boxed_slice()), &[])
    })
}

/// A kernel of the narrow-alignment families (named `..._align1`, `_align2`, `_align4`).
pub fn narrow_alignment(k: &KernelInfo) -> bool {
    ["_align1", "_align2", "_align4"]
        .iter()
        .any(|suffix| k.rust_name.ends_with(suffix))
}

pub fn kernel(rust_name: &str) -> &'static KernelInfo {
    kernels::REGISTRY
        .by_name(rust_name)
        .unwrap_or_else(|| panic!("{rust_name} is not in the registry"))
}

/// An operand whose buffer is exactly as long as its shape needs.
pub fn operand(shape: MatrixShape, layout: Layout, address: u64) -> Operand {
    Operand {
        shape,
        len: shape.required_len(layout).unwrap(),
        address,
    }
}

/// D (m×n) = 1·A (m×k) · B (k×n), packed, no C, at the fake addresses.
pub fn operands(info: &KernelInfo, m: usize, n: usize, k: usize) -> GemmOperands {
    GemmOperands {
        a: operand(
            MatrixShape::packed(m, k, info.gemm().a.layout),
            info.gemm().a.layout,
            ADDR_A,
        ),
        b: operand(
            MatrixShape::packed(k, n, info.gemm().b.layout),
            info.gemm().b.layout,
            ADDR_B,
        ),
        c: None,
        d: operand(
            MatrixShape::packed(m, n, info.gemm().c.layout),
            info.gemm().c.layout,
            ADDR_D,
        ),
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: 1,
        fusion: Default::default(),
    }
}

/// The problem of `info`'s types and layouts with extents m×n×k.
pub fn problem(info: &KernelInfo, m: usize, n: usize, k: usize) -> GemmProblem {
    GemmProblem::new(
        (m, n, k),
        (
            info.gemm().a.element,
            info.gemm().b.element,
            info.gemm().c.element,
        ),
        (info.gemm().a.layout, info.gemm().b.layout, info.gemm().c.layout),
    )
}

/// `info`'s reasons for refusing `p`, joined (the problem must be refused).
pub fn reasons(info: &KernelInfo, p: &GemmProblem) -> String {
    info.supports(p)
        .expect_err("the problem should be refused")
        .reasons
        .join("; ")
}

/// Panics, showing both, unless `needle` is in `haystack`.
pub fn assert_contains(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "expected {needle:?} in:\n{haystack}");
}

/// The message of an `InvalidArgument` error (anything else panics).
pub fn invalid_message<T>(result: Result<T, Error>) -> String {
    match result {
        Err(Error::InvalidArgument { message, .. }) => message,
        Err(other) => panic!("expected InvalidArgument, got {other:?}"),
        Ok(_) => panic!("expected InvalidArgument, got Ok"),
    }
}

/// Operands of a `dtype` problem with the given layouts, leading-dimension padding and element
/// offset of every operand (buffers hold exactly what the shapes name).
pub fn dispatch_problem(
    dtype: cutlass_aot::model::DType,
    [la, lb, lc]: [Layout; 3],
    (m, n, k, batch): (usize, usize, usize, usize),
    pad: usize,
    offset: u64,
) -> (cutlass_aot::dispatch::Signature, GemmOperands) {
    let bytes = (dtype.bits() / 8) as u64;
    let op = |rows: usize, cols: usize, layout: Layout, address: u64| {
        let packed = MatrixShape::packed(rows, cols, layout);
        let ld = packed.ld + pad;
        let shape = MatrixShape {
            ld,
            batch_count: batch,
            batch_stride: packed.outer(layout) * ld,
            ..packed
        };
        Operand {
            shape,
            len: shape.required_len(layout).unwrap(),
            address: address + offset * bytes,
        }
    };
    let signature = cutlass_aot::dispatch::Signature::uniform(dtype, [la, lb, lc]);
    let operands = GemmOperands {
        a: op(m, k, la, ADDR_A),
        b: op(k, n, lb, ADDR_B),
        c: Some(op(m, n, lc, ADDR_C)),
        d: op(m, n, lc, ADDR_D),
        alpha: 1.0,
        beta: 0.5,
        split_k_slices: 1,
        fusion: Default::default(),
    };
    (signature, operands)
}

/// A (row-major), B (column-major), D (row-major): the layout every kernel family has.
pub const TN: [Layout; 3] = [Layout::Row, Layout::Column, Layout::Row];
