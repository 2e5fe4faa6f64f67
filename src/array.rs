//! Array mode (CUTLASS's `kArray`): `count` GEMMs of one shape whose matrices lie anywhere in device
//! memory, handed to the kernel as device arrays of pointers.
//!
//! [`PointerArray`] builds such an array from typed matrices: each buffer is checked and the
//! pointers are uploaded once, and the matrices stay borrowed, so that every launch through it is
//! safe and reuses the upload. Pointer arrays made elsewhere go through [`launch_array_raw`].

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use crate::abi;
use crate::device;
use crate::error::Error;
use crate::gemm::GemmProblem;
use crate::gemm::{self, GemmKernel, Geometry};
use crate::kernel::KernelInfo;
use crate::matrix::{MatrixMut, MatrixRef, MatrixShape};
use crate::types::{Element, LayoutTag, Scalar};

/// Names errors that are about a pointer array rather than a kernel.
const WHAT: &str = "pointer array";

/// A device array of pointers to `len()` matrices of one shape (A, B or C of an array GEMM).
pub struct PointerArray<'a, T: Element, L: LayoutTag> {
    matrices: Vec<&'a dyn DevicePtr<T>>,
    addresses: Vec<u64>,
    pointers: CudaSlice<u64>,
    shape: MatrixShape,
    _layout: PhantomData<L>,
}

/// A device array of pointers to the output matrices (D) of an array GEMM.
pub struct PointerArrayMut<'a, T: Element, L: LayoutTag> {
    matrices: Vec<&'a mut dyn DevicePtrMut<T>>,
    addresses: Vec<u64>,
    pointers: CudaSlice<u64>,
    shape: MatrixShape,
    _layout: PhantomData<L>,
}

/// Checks that every matrix has the first one's shape, is a single matrix and fits its buffer;
/// returns the shared shape.
fn common_shape(shapes: &[(MatrixShape, usize)], layout: crate::model::Layout) -> Result<MatrixShape, Error> {
    let Some(&(first, _)) = shapes.first() else {
        return Err(Error::invalid(
            WHAT,
            "no matrices: an array GEMM needs at least one",
        ));
    };
    for (i, &(shape, len)) in shapes.iter().enumerate() {
        if (shape.rows, shape.cols, shape.ld) != (first.rows, first.cols, first.ld) {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "matrix {i} is {}×{} with ld {} but matrix 0 is {}×{} with ld {}: every matrix of an array \
                     GEMM has one shape and leading dimension",
                    shape.rows, shape.cols, shape.ld, first.rows, first.cols, first.ld
                ),
            ));
        }
        if shape.batch_count != 1 {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "matrix {i} is a batch of {}; each entry of a pointer array is one matrix",
                    shape.batch_count
                ),
            ));
        }
        gemm::check_buffer(WHAT, &format!("matrix {i}"), len, &shape, layout)?;
    }
    Ok(first)
}

fn upload(stream: &Arc<CudaStream>, addresses: &[u64]) -> Result<CudaSlice<u64>, Error> {
    stream
        .clone_htod(addresses)
        .map_err(Error::driver("uploading a pointer array"))
}

impl<'a, T: Element, L: LayoutTag> PointerArray<'a, T, L> {
    /// Checks `matrices` (one shape, each fitting its buffer) and uploads their addresses on `stream`.
    pub fn new(stream: &Arc<CudaStream>, matrices: Vec<MatrixRef<'a, T, L>>) -> Result<Self, Error> {
        let shapes: Vec<_> = matrices.iter().map(|m| (m.shape, m.buffer.len())).collect();
        let shape = common_shape(&shapes, L::LAYOUT)?;
        let addresses: Vec<u64> = matrices.iter().map(|m| m.buffer.device_ptr(stream).0).collect();
        Ok(PointerArray {
            pointers: upload(stream, &addresses)?,
            matrices: matrices.into_iter().map(|m| m.buffer).collect(),
            addresses,
            shape,
            _layout: PhantomData,
        })
    }

    /// Number of matrices.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    /// The untyped view for a launch on `stream`, ordered after earlier work on every matrix and on
    /// the array itself (cudarc's events): `guards` must live until the kernel is enqueued.
    fn operand<'s>(
        &'s self,
        stream: &'s CudaStream,
        guards: &mut Vec<cudarc::driver::SyncOnDrop<'s>>,
    ) -> ArrayOperand<'s> {
        for m in &self.matrices {
            guards.push(m.device_ptr(stream).1);
        }
        let (pointers, guard) = self.pointers.device_ptr(stream);
        guards.push(guard);
        ArrayOperand {
            pointers,
            count: self.len(),
            shape: self.shape,
            addresses: Some(&self.addresses),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    /// The shape every matrix has.
    pub fn shape(&self) -> MatrixShape {
        self.shape
    }
}

impl<'a, T: Element, L: LayoutTag> PointerArrayMut<'a, T, L> {
    /// Checks the output `matrices` (one shape, each fitting its buffer) and uploads their
    /// addresses on `stream`.
    pub fn new(stream: &Arc<CudaStream>, matrices: Vec<MatrixMut<'a, T, L>>) -> Result<Self, Error> {
        let shapes: Vec<_> = matrices.iter().map(|m| (m.shape, m.buffer.len())).collect();
        let shape = common_shape(&shapes, L::LAYOUT)?;
        let mut matrices: Vec<&'a mut dyn DevicePtrMut<T>> = matrices.into_iter().map(|m| m.buffer).collect();
        let addresses: Vec<u64> = matrices.iter_mut().map(|m| m.device_ptr_mut(stream).0).collect();
        let mut distinct = addresses.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != addresses.len() {
            return Err(Error::invalid(
                WHAT,
                "two output matrices share one address: each GEMM of the array would overwrite another's D",
            ));
        }
        Ok(PointerArrayMut {
            pointers: upload(stream, &addresses)?,
            matrices,
            addresses,
            shape,
            _layout: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    pub fn shape(&self) -> MatrixShape {
        self.shape
    }
}

/// D_i = alpha · (A_i @ B_i) + beta · C_i for every i of the arrays, with kernel `K`.
pub struct ArrayGemm<'r, 'a, K: GemmKernel> {
    pub a: &'r PointerArray<'a, K::A, K::LayoutA>,
    pub b: &'r PointerArray<'a, K::B, K::LayoutB>,
    pub c: Option<&'r PointerArray<'a, K::C, K::LayoutC>>,
    pub d: &'r mut PointerArrayMut<'a, K::C, K::LayoutC>,
    pub alpha: K::Scalar,
    pub beta: K::Scalar,
}

impl<'r, 'a, K: GemmKernel> ArrayGemm<'r, 'a, K> {
    /// D_i = alpha · A_i @ B_i (beta = 0, C not read).
    pub fn new(
        a: &'r PointerArray<'a, K::A, K::LayoutA>,
        b: &'r PointerArray<'a, K::B, K::LayoutB>,
        d: &'r mut PointerArrayMut<'a, K::C, K::LayoutC>,
        alpha: K::Scalar,
    ) -> Self {
        ArrayGemm {
            a,
            b,
            c: None,
            d,
            alpha,
            beta: K::Scalar::ZERO,
        }
    }

    /// Adds `beta · C_i`.
    pub fn with_c(mut self, c: &'r PointerArray<'a, K::C, K::LayoutC>, beta: K::Scalar) -> Self {
        self.c = Some(c);
        self.beta = beta;
        self
    }
}

/// One operand of an untyped array GEMM: a device array of pointers to matrices of one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayOperand<'h> {
    /// Device address of the pointer array (8-byte aligned).
    pub pointers: u64,
    /// Pointers in the array (at least the batch count).
    pub count: usize,
    /// Shape of each matrix (`batch_count` 1).
    pub shape: MatrixShape,
    /// The pointers themselves, when the host knows them: each is checked for alignment.
    pub addresses: Option<&'h [u64]>,
}

/// All operands of an array GEMM of `batch_count` problems.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArrayOperands<'h> {
    pub batch_count: usize,
    pub a: ArrayOperand<'h>,
    pub b: ArrayOperand<'h>,
    pub c: Option<ArrayOperand<'h>>,
    pub d: ArrayOperand<'h>,
    pub alpha: f64,
    pub beta: f64,
}

/// Launches kernel `K` over every matrix of the arrays on `stream` (stream-ordered). All arrays
/// must hold the same number of matrices; shapes, alignment and the kernel are checked first.
pub fn launch_array<K: GemmKernel>(stream: &CudaStream, args: ArrayGemm<'_, '_, K>) -> Result<(), Error> {
    let ArrayGemm {
        a,
        b,
        c,
        d,
        alpha,
        beta,
    } = args;
    let count = d.len();
    for (name, len) in [
        ("A", a.len()),
        ("B", b.len()),
        ("C", c.map_or(count, |c| c.len())),
    ] {
        if len != count {
            return Err(Error::invalid(
                K::info().name,
                format!("{name} has {len} matrices but D has {count}: every array must hold one per GEMM"),
            ));
        }
    }
    // Order the launch after earlier work on every matrix (cudarc's events): the guards are held
    // until the kernel is enqueued.
    let mut guards = Vec::with_capacity(3 * count + 4);
    let a_op = a.operand(stream, &mut guards);
    let b_op = b.operand(stream, &mut guards);
    let c_op = c.map(|c| c.operand(stream, &mut guards));
    let (d_pointers, d_guard) = d.pointers.device_ptr(stream);
    guards.push(d_guard);
    let d_addresses = d.addresses.clone();
    let d_shape = d.shape;
    let mut d_guards = Vec::with_capacity(count);
    for m in d.matrices.iter_mut() {
        d_guards.push(m.device_ptr_mut(stream).1);
    }
    let operands = ArrayOperands {
        batch_count: count,
        a: a_op,
        b: b_op,
        c: c_op,
        d: ArrayOperand {
            pointers: d_pointers,
            count,
            shape: d_shape,
            addresses: Some(&d_addresses),
        },
        alpha: alpha.into(),
        beta: beta.into(),
    };
    // SAFETY: every pointer comes from a borrowed, checked buffer of the kernel's element types.
    unsafe { launch_array_raw(K::info(), stream, &operands) }
}

/// Launches `info` in array mode with untyped operands, after the same checks as the typed path
/// (those on the matrices behind the pointers only where `addresses` is given).
///
/// # Safety
/// Each pointer array must hold `count` device pointers, each to a matrix of the operand's shape in
/// device memory of the kernel's element type, valid until the kernel completes; no D may overlap
/// another operand.
pub unsafe fn launch_array_raw(
    info: &'static KernelInfo,
    stream: &CudaStream,
    operands: &ArrayOperands<'_>,
) -> Result<(), Error> {
    let ctx = stream.context();
    let device = device::props(ctx)?;
    let mut args = plan_array(info, operands, &device)?;
    if info.api() == crate::model::Api::Cutlass3x {
        args.encode_tiled = crate::tma::encode_tiled(info.name)?;
    }
    ctx.bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    unsafe { gemm::prepare_and_enqueue(info, stream, &device, &mut args) }
}

/// Checks array operands against `info` on `device` and turns them into the flat ABI arguments of
/// array mode. Pure host code, like [`gemm::plan`].
pub fn plan_array(
    info: &'static KernelInfo,
    ops: &ArrayOperands<'_>,
    device: &device::DeviceProps,
) -> Result<abi::cutlass_aot_gemm_args, Error> {
    info.check_runnable(device)?;
    let shape = |op: &ArrayOperand<'_>| MatrixShape {
        batch_count: 1,
        ..op.shape
    };
    let geometry = Geometry::check(
        info,
        &shape(&ops.a),
        &shape(&ops.b),
        ops.c.as_ref().map(shape).as_ref(),
        &shape(&ops.d),
        ops.beta,
    )?;
    gemm::check_scalars(info, ops.alpha, ops.beta)?;
    if ops.batch_count == 0 {
        return Err(Error::invalid(
            info.name,
            "batch count 0: an array GEMM needs at least one problem",
        ));
    }
    let named = [
        (
            "A",
            Some(&ops.a),
            info.gemm().a.layout,
            info.gemm().a.alignment,
            info.gemm().a.element,
        ),
        (
            "B",
            Some(&ops.b),
            info.gemm().b.layout,
            info.gemm().b.alignment,
            info.gemm().b.element,
        ),
        (
            "C",
            ops.c.as_ref(),
            info.gemm().c.layout,
            info.gemm().c.alignment,
            info.gemm().c.element,
        ),
        (
            "D",
            Some(&ops.d),
            info.gemm().c.layout,
            info.gemm().c.alignment,
            info.gemm().c.element,
        ),
    ];
    for (name, op, layout, alignment, element) in named {
        let Some(op) = op else { continue };
        let fail = |m: String| Err(Error::invalid(info.name, format!("{name}: {m}")));
        if op.count < ops.batch_count {
            return fail(format!(
                "the pointer array holds {} pointers but the batch count is {}",
                op.count, ops.batch_count
            ));
        }
        if op.pointers % 8 != 0 || op.pointers == 0 {
            return fail(format!(
                "the pointer array's address {:#x} is not a non-null, 8-byte aligned device address",
                op.pointers
            ));
        }
        gemm::check_ld(info.name, name, &op.shape, layout)?;
        let bytes = u64::from(alignment * element.bits() / 8);
        if let Some(bad) = op.addresses.into_iter().flatten().position(|&p| p % bytes != 0) {
            return fail(format!(
                "matrix {bad} starts at address {:#x}, which is not {bytes}-byte aligned as the kernel requires",
                op.addresses.unwrap_or_default()[bad]
            ));
        }
    }
    let c = ops.c.unwrap_or(ops.d);
    let problem = GemmProblem {
        lda: Some(ops.a.shape.ld),
        ldb: Some(ops.b.shape.ld),
        ldc: Some(c.shape.ld),
        compute_capability: Some(device.compute_capability),
        // The kernel's own epilogue, without fused operands (array mode takes none).
        fusion: info.epilogue.fusion,
        epilogue: Some(info.epilogue.kind),
        fusion_operands: Some(Default::default()),
        ..GemmProblem::new(
            (geometry.m, geometry.n, geometry.k),
            (
                info.gemm().a.element,
                info.gemm().b.element,
                info.gemm().c.element,
            ),
            (info.gemm().a.layout, info.gemm().b.layout, info.gemm().c.layout),
        )
        .pointer_arrays(ops.batch_count)
    };
    for ld in [c.shape.ld, ops.d.shape.ld] {
        info.supports(&GemmProblem {
            ldc: Some(ld),
            ..problem.clone()
        })
        .map_err(|u| Error::invalid(info.name, u.reasons.join("; ")))?;
    }
    // Batch strides stay 0: array mode reads each GEMM's matrices through the pointers.
    let geometry = Geometry {
        batch: ops.batch_count,
        ..geometry
    };
    Ok(abi::cutlass_aot_gemm_args {
        a: ops.a.pointers as *const c_void,
        b: ops.b.pointers as *const c_void,
        c: c.pointers as *const c_void,
        d: ops.d.pointers as *mut c_void,
        lda: ops.a.shape.ld as i64,
        ldb: ops.b.shape.ld as i64,
        ldc: c.shape.ld as i64,
        ldd: ops.d.shape.ld as i64,
        ..gemm::launch_args(
            abi::cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_ARRAY,
            &geometry,
            device,
            (ops.alpha, ops.beta),
        )
    })
}
