//! The GEMM launch path, generic over every generated kernel:
//! check arguments → build Params on the host → launch on the caller's stream.

use std::ffi::c_void;

use cudarc::driver::CudaStream;

use crate::abi;
use crate::device;
use crate::error::Error;
use crate::matrix::{MatrixMut, MatrixRef, MatrixShape};
use crate::model::Layout;
use crate::registry::{GemmProblem, KernelInfo};
use crate::types::{Element, LayoutTag, Scalar};

/// A compiled GEMM kernel as a type (implemented by generated code, one type per kernel).
pub trait GemmKernel {
    type A: Element;
    type B: Element;
    /// Element of C and D.
    type C: Element;
    type LayoutA: LayoutTag;
    type LayoutB: LayoutTag;
    type LayoutC: LayoutTag;
    /// Type of alpha and beta (the epilogue's compute type).
    type Scalar: Scalar;
    fn info() -> &'static KernelInfo;
}

/// D = alpha · (A @ B) + beta · C for kernel `K`; batched when the matrices are.
///
/// A is m×k, B is k×n, C and D are m×n. Without C, beta must be zero (C is then not read).
pub struct Gemm<'a, K: GemmKernel> {
    pub a: MatrixRef<'a, K::A, K::LayoutA>,
    pub b: MatrixRef<'a, K::B, K::LayoutB>,
    pub c: Option<MatrixRef<'a, K::C, K::LayoutC>>,
    pub d: MatrixMut<'a, K::C, K::LayoutC>,
    pub alpha: K::Scalar,
    pub beta: K::Scalar,
}

impl<'a, K: GemmKernel> Gemm<'a, K> {
    /// D = alpha · A @ B (beta = 0, C not read).
    pub fn new(
        a: MatrixRef<'a, K::A, K::LayoutA>,
        b: MatrixRef<'a, K::B, K::LayoutB>,
        d: MatrixMut<'a, K::C, K::LayoutC>,
        alpha: K::Scalar,
    ) -> Self {
        Gemm {
            a,
            b,
            c: None,
            d,
            alpha,
            beta: K::Scalar::ZERO,
        }
    }

    /// Adds `beta · C`.
    pub fn with_c(mut self, c: MatrixRef<'a, K::C, K::LayoutC>, beta: K::Scalar) -> Self {
        self.c = Some(c);
        self.beta = beta;
        self
    }
}

/// Params bytes are copied into a buffer this large and aligned (the driver copies exactly the
/// kernel's parameter size out of it).
pub const PARAMS_CAPACITY: usize = 4096;

#[repr(C, align(64))]
struct ParamsBuffer([u8; PARAMS_CAPACITY]);

/// Host-side result of a kernel's `prepare`: Params bytes and launch shape.
pub struct Prepared {
    params: Box<ParamsBuffer>,
    pub launch: abi::cutlass_aot_launch,
}

impl Prepared {
    /// The kernel's Params as bytes.
    pub fn params(&self) -> &[u8] {
        &self.params.0[..self.launch.params_bytes as usize]
    }
}

impl KernelInfo {
    /// Runs the kernel's host code on flat ABI arguments: CUTLASS's `can_implement`, then Params,
    /// grid, block, shared memory and workspace size. Touches no GPU.
    pub fn prepare(&'static self, args: &abi::cutlass_aot_gemm_args) -> Result<Prepared, Error> {
        let prepare = self.prepare.ok_or(Error::NotBuilt { kernel: self.name })?;
        let mut params = Box::new(ParamsBuffer([0; PARAMS_CAPACITY]));
        let mut launch = abi::cutlass_aot_launch::default();
        // SAFETY: the generated function reads `args`, writes at most PARAMS_CAPACITY bytes into
        // `params` (it checks the capacity) and fills `launch`.
        let status = unsafe { prepare(args, params.0.as_mut_ptr().cast(), PARAMS_CAPACITY, &mut launch) };
        use abi::cutlass_aot_status as S;
        let message = match status {
            s if s == S::CUTLASS_AOT_OK as i32 => return Ok(Prepared { params, launch }),
            s if s == S::CUTLASS_AOT_ERROR_MISALIGNED_OPERAND as i32 => {
                format!("CUTLASS rejected the problem: an extent is not a multiple of the kernel's alignment (A {}, B {}, C {})", self.alignment_a, self.alignment_b, self.alignment_c)
            }
            s if s == S::CUTLASS_AOT_ERROR_INVALID_PROBLEM as i32 => "CUTLASS rejected the problem as invalid".into(),
            s if s == S::CUTLASS_AOT_ERROR_NOT_SUPPORTED as i32 => "CUTLASS does not support this problem".into(),
            s if s == S::CUTLASS_AOT_ERROR_GRID_TOO_LARGE as i32 => {
                "the launch grid would exceed 65535 blocks in y or z; split the problem or use a kernel with a larger tile".into()
            }
            s if s == S::CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE as i32 => {
                return Err(Error::AbiMismatch { kernel: self.name, message: format!("Params larger than {PARAMS_CAPACITY} bytes") })
            }
            other => format!("CUTLASS internal error (status {other})"),
        };
        Err(Error::invalid(self.name, message))
    }
}

/// One operand as the checks see it: geometry, buffer length (elements) and device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    pub shape: MatrixShape,
    pub len: usize,
    pub address: u64,
}

/// All operands of one GEMM, untyped (the registry-driven path; the typed path builds one too).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmOperands {
    pub a: Operand,
    pub b: Operand,
    /// Without C, beta must be 0 and C is not read.
    pub c: Option<Operand>,
    pub d: Operand,
    pub alpha: f64,
    pub beta: f64,
}

/// Checks `args` against kernel `K`, builds its Params and launches it on `stream`.
/// Stream-ordered; nothing is synchronised. On any error nothing is launched.
pub fn launch<K: GemmKernel>(stream: &CudaStream, args: Gemm<'_, K>) -> Result<(), Error> {
    let Gemm {
        a,
        b,
        c,
        d,
        alpha,
        beta,
    } = args;
    // Pointers are taken with the stream so that cudarc orders this launch after earlier work on
    // these buffers; the guards record completion events when dropped, after the launch.
    let (ptr_a, _guard_a) = a.buffer.device_ptr(stream);
    let (ptr_b, _guard_b) = b.buffer.device_ptr(stream);
    let c_ptr = c.as_ref().map(|c| c.buffer.device_ptr(stream));
    let d_len = d.buffer.len();
    let (ptr_d, _guard_d) = d.buffer.device_ptr_mut(stream);
    let operands = GemmOperands {
        a: Operand {
            shape: a.shape,
            len: a.buffer.len(),
            address: ptr_a,
        },
        b: Operand {
            shape: b.shape,
            len: b.buffer.len(),
            address: ptr_b,
        },
        c: c.as_ref().zip(c_ptr.as_ref()).map(|(c, (ptr, _))| Operand {
            shape: c.shape,
            len: c.buffer.len(),
            address: *ptr,
        }),
        d: Operand {
            shape: d.shape,
            len: d_len,
            address: ptr_d,
        },
        alpha: alpha.into(),
        beta: beta.into(),
    };
    // SAFETY: every address comes from a live cudarc buffer of the stated length and element type
    // (the types are K's, enforced by the signature).
    unsafe { launch_raw(K::info(), stream, &operands) }
}

/// Launches `info` on `stream` with untyped operands, after the same checks as the typed path.
///
/// # Safety
/// Each operand's address must point to device memory of at least `len` elements of the kernel's
/// element type for that operand, valid until the kernel completes, and D must not overlap A or B.
pub unsafe fn launch_raw(
    info: &'static KernelInfo,
    stream: &CudaStream,
    operands: &GemmOperands,
) -> Result<(), Error> {
    if !info.has_device_code() {
        return Err(Error::NotBuilt { kernel: info.name });
    }
    let ctx = stream.context();
    let device = device::props(ctx)?;
    let args = plan(info, operands, &device)?;
    let prepared = info.prepare(&args)?;
    let launch = prepared.launch;
    if launch.workspace_bytes != 0 {
        return Err(Error::invalid(
            info.name,
            "this problem needs a workspace, which this launch path does not provide",
        ));
    }
    if launch.shared_mem_bytes > device.max_shared_memory_per_block_optin {
        return Err(Error::UnsupportedDevice {
            kernel: info.name,
            message: format!(
                "needs {} bytes of shared memory per block; this device allows {}",
                launch.shared_mem_bytes, device.max_shared_memory_per_block_optin
            ),
        });
    }
    let function = info
        .image
        .function(ctx, info.entry, info.name, launch.shared_mem_bytes)?;
    if function.param_bytes != launch.params_bytes as usize {
        return Err(Error::AbiMismatch {
            kernel: info.name,
            message: format!(
                "host Params are {} bytes, the device kernel takes {}",
                launch.params_bytes, function.param_bytes
            ),
        });
    }
    ctx.bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    let mut kernel_params = [prepared.params.0.as_ptr() as *mut c_void];
    // SAFETY: the function takes exactly one parameter of `param_bytes` bytes (checked above),
    // which `prepare` wrote; every pointer inside was checked against its buffer's extent.
    unsafe {
        cudarc::driver::result::launch_kernel(
            function.function.cu_function(),
            (launch.grid[0], launch.grid[1], launch.grid[2]),
            (launch.block[0], launch.block[1], launch.block[2]),
            launch.shared_mem_bytes,
            stream.cu_stream(),
            &mut kernel_params,
        )
    }
    .map_err(Error::driver("launching the kernel"))
}

/// Checks operands against `info` on `device` and turns them into the flat ABI arguments of the
/// kernel's `prepare`. Pure host code: no GPU needed, so every rule is unit-testable.
pub fn plan(
    info: &'static KernelInfo,
    ops: &GemmOperands,
    device: &device::DeviceProps,
) -> Result<abi::cutlass_aot_gemm_args, Error> {
    if !info.has_device_code() {
        return Err(Error::NotBuilt { kernel: info.name });
    }
    if device.compute_capability < info.min_compute_capability {
        return Err(Error::UnsupportedDevice {
            kernel: info.name,
            message: format!(
                "the device has compute capability {}.{}; this kernel needs {}.{} or newer",
                device.compute_capability / 10,
                device.compute_capability % 10,
                info.min_compute_capability / 10,
                info.min_compute_capability % 10
            ),
        });
    }
    let geometry = Geometry::check(
        info,
        &ops.a.shape,
        &ops.b.shape,
        ops.c.as_ref().map(|c| &c.shape),
        &ops.d.shape,
        ops.beta,
    )?;
    let named = [
        ("A", Some(&ops.a), info.layout_a),
        ("B", Some(&ops.b), info.layout_b),
        ("C", ops.c.as_ref(), info.layout_c),
        ("D", Some(&ops.d), info.layout_c),
    ];
    for (name, operand, layout) in named {
        if let Some(op) = operand {
            check_buffer(info, name, op.len, &op.shape, layout)?;
        }
    }
    // Without C, CUTLASS is given D as C with beta = 0, which it does not read.
    let c = ops.c.unwrap_or(ops.d);
    let problem = |ld_c: usize, stride_c: usize, address_c: u64| GemmProblem {
        lda: Some(ops.a.shape.ld),
        ldb: Some(ops.b.shape.ld),
        ldc: Some(ld_c),
        batch_stride_a: Some(geometry.stride(&ops.a.shape)),
        batch_stride_b: Some(geometry.stride(&ops.b.shape)),
        batch_stride_c: Some(stride_c),
        address_a: Some(ops.a.address),
        address_b: Some(ops.b.address),
        address_c: Some(address_c),
        compute_capability: Some(device.compute_capability),
        ..GemmProblem::new(
            (geometry.m, geometry.n, geometry.k),
            (info.element_a, info.element_b, info.element_c),
            (info.layout_a, info.layout_b, info.layout_c),
        )
        .batched(geometry.batch)
    };
    // C and D are both checked against C's alignment.
    for (ld, stride, address) in [
        (c.shape.ld, geometry.stride(&c.shape), c.address),
        (ops.d.shape.ld, geometry.stride(&ops.d.shape), ops.d.address),
    ] {
        info.supports(&problem(ld, stride, address))
            .map_err(|u| Error::invalid(info.name, u.reasons.join("; ")))?;
    }
    let mode = if geometry.batch > 1 {
        abi::cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_BATCHED
    } else {
        abi::cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_GEMM
    };
    Ok(abi::cutlass_aot_gemm_args {
        mode: mode as i32,
        m: geometry.m as i32,
        n: geometry.n as i32,
        k: geometry.k as i32,
        batch_count: geometry.batch as i32,
        device_sms: device.multiprocessors as i32,
        sm_occupancy: 1,
        reserved: 0,
        a: ops.a.address as *const c_void,
        b: ops.b.address as *const c_void,
        c: c.address as *const c_void,
        d: ops.d.address as *mut c_void,
        workspace: std::ptr::null_mut(),
        lda: ops.a.shape.ld as i64,
        ldb: ops.b.shape.ld as i64,
        ldc: c.shape.ld as i64,
        ldd: ops.d.shape.ld as i64,
        batch_stride_a: geometry.stride(&ops.a.shape) as i64,
        batch_stride_b: geometry.stride(&ops.b.shape) as i64,
        batch_stride_c: geometry.stride(&c.shape) as i64,
        batch_stride_d: geometry.stride(&ops.d.shape) as i64,
        alpha: ops.alpha,
        beta: ops.beta,
    })
}

/// Extents of the problem as read off the operands, checked for consistency.
struct Geometry {
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
}

impl Geometry {
    fn check(
        info: &'static KernelInfo,
        a: &MatrixShape,
        b: &MatrixShape,
        c: Option<&MatrixShape>,
        d: &MatrixShape,
        beta: f64,
    ) -> Result<Self, Error> {
        let fail = |m: String| Err(Error::invalid(info.name, m));
        let (m, k, n) = (a.rows, a.cols, b.cols);
        if b.rows != k {
            return fail(format!(
                "A is {}×{} and B is {}×{}: B must have {k} rows (A's columns)",
                a.rows, a.cols, b.rows, b.cols
            ));
        }
        if (d.rows, d.cols) != (m, n) {
            return fail(format!("D is {}×{} but A·B is {m}×{n}", d.rows, d.cols));
        }
        match c {
            Some(c) if (c.rows, c.cols) != (m, n) => {
                return fail(format!("C is {}×{} but D is {m}×{n}", c.rows, c.cols));
            }
            None if beta != 0.0 => {
                return fail(format!(
                    "beta is {beta} but no C was given; pass C with `with_c` or set beta to 0"
                ))
            }
            _ => {}
        }
        if m == 0 || n == 0 || k == 0 {
            return fail(format!(
                "empty problem (m={m}, n={n}, k={k}): every extent must be at least 1"
            ));
        }
        let batch = d.batch_count;
        for (operand, shape) in [("A", Some(a)), ("B", Some(b)), ("C", c)] {
            if let Some(s) = shape {
                if s.batch_count != batch && s.batch_count != 1 {
                    return fail(format!(
                        "{operand} has a batch of {} but D has {batch}; inputs must match D's batch count or be a single matrix (broadcast)",
                        s.batch_count
                    ));
                }
            }
        }
        if batch == 0 {
            return fail("D has a batch count of 0".into());
        }
        let one_matrix = MatrixShape { batch_count: 1, ..*d }
            .required_len(info.layout_c)
            .unwrap_or(usize::MAX);
        if batch > 1 && d.batch_stride < one_matrix {
            return fail(format!(
                "D's batch stride {} is smaller than one matrix ({one_matrix} elements): batches would overwrite each other",
                d.batch_stride
            ));
        }
        Ok(Geometry { m, n, k, batch })
    }

    /// The batch stride passed to CUTLASS: 0 for a single matrix broadcast to every batch.
    fn stride(&self, shape: &MatrixShape) -> usize {
        if shape.batch_count == 1 {
            0
        } else {
            shape.batch_stride
        }
    }
}

fn check_buffer(
    info: &'static KernelInfo,
    operand: &str,
    len: usize,
    shape: &MatrixShape,
    layout: Layout,
) -> Result<(), Error> {
    let inner = shape.inner(layout);
    if shape.ld < inner {
        return Err(Error::invalid(
            info.name,
            format!("leading dimension of {operand} is {} but its {layout}-major rows/columns hold {inner} elements; ld must be at least {inner}", shape.ld),
        ));
    }
    match shape.required_len(layout) {
        Some(need) if need <= len => Ok(()),
        Some(need) => Err(Error::invalid(
            info.name,
            format!(
                "{operand} ({}×{}, ld {}, batch {} × stride {}) needs a buffer of {need} elements but the buffer has {len}",
                shape.rows, shape.cols, shape.ld, shape.batch_count, shape.batch_stride
            ),
        )),
        None => Err(Error::invalid(info.name, format!("{operand}'s extent overflows usize"))),
    }
}
