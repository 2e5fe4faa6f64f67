//! The conv2d launch path, generic over every generated conv kernel: check the tensors → build
//! the problem → check it against the kernel → build Params on the host → launch (then, for
//! parallel split-K, the reduction) on the caller's stream.
//!
//! A conv kernel computes one of fprop, dgrad and wgrad as an implicit GEMM over channels-last
//! tensors; its A, B and C/D play the roles of [`ConvKind`]:
//!
//! ```text
//! // y = conv2d(x, w), 3×3, padding 1: x is [n, h, w, c], w is [k, 3, 3, c], y is [n, p, q, k].
//! let (p, q) = Conv2d::<my_fprop::Kernel>::output_size([n, h, w, c], [k, 3, 3], [1, 1], [1, 1], [1, 1])?;
//! my_fprop::run(&stream, Conv2d::new(TensorRef::new(&x, [n, h, w, c]), TensorRef::new(&wt, [k, 3, 3, c]),
//!     TensorMut::new(&mut y, [n, p, q, k]), 1.0).padding(1, 1))?;
//! ```

use std::ffi::{c_void, CStr};

use cudarc::driver::CudaStream;

pub mod dispatch;
mod dispatch_plan;
pub mod first_layer;
pub mod padded;
mod problem;
pub mod small;
mod staged_phases;
pub mod stride_phases;
mod tensor;
pub mod ways;

pub use problem::{Conv2dProblem, ConvMode};
pub use tensor::{
    element_offset, pack, permute, unpack, C32rsk32, ConvTensor, Krsc, Nc32hw32, Nhwc, Nk32pq32, Npqk,
    TensorLayout, TensorMut, TensorOperand, TensorRef,
};

use crate::abi;
use crate::device;
use crate::error::Error;
use crate::kernel::{HostCode, KernelInfo};
use crate::model::{Api, ConvKind, ConvLayout, DType};
use crate::params::{run_prepare, PrepareFn, Prepared};
use crate::types::{Element, Scalar};
use crate::workspace::{Scratch, Workspace};

/// The operand types of a convolution: which of fprop, dgrad and wgrad it is, its tensors'
/// element types and layouts in the roles of that [`ConvKind`], and the type of alpha and beta.
/// Implemented by every generated conv kernel and by the dispatch markers ([`dispatch::Fprop`],
/// [`dispatch::Dgrad`], [`dispatch::Wgrad`]), so that one [`Conv2d`] builder serves both paths.
pub trait ConvTypes {
    const KIND: ConvKind;
    type A: Element;
    type B: Element;
    /// Element of C and D.
    type C: Element;
    type LayoutA: TensorLayout;
    type LayoutB: TensorLayout;
    type LayoutC: TensorLayout;
    /// Type of alpha and beta (the epilogue's compute type).
    type Scalar: Scalar;
}

/// A compiled conv kernel as a type (implemented by generated code, one type per kernel).
pub trait ConvKernel: ConvTypes {
    fn info() -> &'static KernelInfo;
}

/// The reduction kernel of a parallel split-K conv kernel: it adds the partial sums the kernel
/// left in the workspace, applies alpha, beta and C, and writes D.
#[derive(Debug)]
pub struct ConvReduction {
    pub entry: &'static CStr,
    pub prepare: abi::cutlass_aot_conv2d_prepare_fn,
}

/// The convolution's geometry beyond the tensors' extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvGeometry {
    /// Zero padding (rows, columns) on each side.
    pub pad: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub mode: ConvMode,
}

impl Default for ConvGeometry {
    fn default() -> Self {
        ConvGeometry {
            pad: [0, 0],
            stride: [1, 1],
            dilation: [1, 1],
            mode: ConvMode::CrossCorrelation,
        }
    }
}

/// `D = alpha · conv(A, B) + beta · C` for kernel `K` (fprop: y from x and w; dgrad: dx from dy
/// and w; wgrad: dw from dy and x). Without C, beta must be zero (C is then not read).
pub struct Conv2d<'a, K: ConvTypes> {
    pub a: TensorRef<'a, K::A, K::LayoutA>,
    pub b: TensorRef<'a, K::B, K::LayoutB>,
    pub c: Option<TensorRef<'a, K::C, K::LayoutC>>,
    pub d: TensorMut<'a, K::C, K::LayoutC>,
    pub geometry: ConvGeometry,
    pub alpha: K::Scalar,
    pub beta: K::Scalar,
    /// The implicit GEMM's K split into this many slices (1: none), serially or in parallel as the
    /// kernel's split-K mode says.
    pub split_k_slices: usize,
    /// leaky_relu's slope, for a kernel with that activation.
    pub activation_arg: f64,
}

impl<'a, K: ConvTypes> Conv2d<'a, K> {
    /// D = alpha · conv(A, B): no padding, unit stride and dilation, cross-correlation (PyTorch's
    /// `conv2d`), beta = 0.
    pub fn new(
        a: TensorRef<'a, K::A, K::LayoutA>,
        b: TensorRef<'a, K::B, K::LayoutB>,
        d: TensorMut<'a, K::C, K::LayoutC>,
        alpha: K::Scalar,
    ) -> Self {
        Conv2d {
            a,
            b,
            c: None,
            d,
            geometry: ConvGeometry::default(),
            alpha,
            beta: K::Scalar::ZERO,
            split_k_slices: 1,
            activation_arg: 0.0,
        }
    }

    /// Zero padding of `pad_h` rows and `pad_w` columns on each side.
    pub fn padding(mut self, pad_h: usize, pad_w: usize) -> Self {
        self.geometry.pad = [pad_h, pad_w];
        self
    }

    pub fn stride(mut self, stride_h: usize, stride_w: usize) -> Self {
        self.geometry.stride = [stride_h, stride_w];
        self
    }

    pub fn dilation(mut self, dilation_h: usize, dilation_w: usize) -> Self {
        self.geometry.dilation = [dilation_h, dilation_w];
        self
    }

    /// Convolution (flipped filter) or cross-correlation (the default).
    pub fn mode(mut self, mode: ConvMode) -> Self {
        self.geometry.mode = mode;
        self
    }

    /// Adds `beta · C`.
    pub fn with_c(mut self, c: TensorRef<'a, K::C, K::LayoutC>, beta: K::Scalar) -> Self {
        self.c = Some(c);
        self.beta = beta;
        self
    }

    /// Splits the implicit GEMM's K into `slices`; the workspace it needs is allocated per stream.
    pub fn split_k(mut self, slices: usize) -> Self {
        self.split_k_slices = slices;
        self
    }

    /// leaky_relu's slope.
    pub fn with_activation_arg(mut self, slope: f64) -> Self {
        self.activation_arg = slope;
        self
    }

    /// The output rows and columns (P, Q) of an `[n, h, w, c]` activation convolved with a
    /// `[k, r, s]` filter at this padding, stride and dilation.
    pub fn output_size(
        activation: [usize; 4],
        filter: [usize; 3],
        pad: [usize; 2],
        stride: [usize; 2],
        dilation: [usize; 2],
    ) -> Result<(usize, usize), Error> {
        let elements = (K::A::DTYPE, K::B::DTYPE, K::C::DTYPE);
        let problem = Conv2dProblem::new(K::KIND, activation, filter, elements)
            .padding(pad[0], pad[1])
            .stride(stride[0], stride[1])
            .dilation(dilation[0], dilation[1]);
        problem.output_size().map_err(|m| Error::invalid("conv2d", m))
    }
}

/// All operands of one conv launch, untyped (the registry-driven path; the typed path builds one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvOperands {
    pub a: TensorOperand,
    pub b: TensorOperand,
    /// Without C, beta must be 0 and C is not read.
    pub c: Option<TensorOperand>,
    pub d: TensorOperand,
    pub geometry: ConvGeometry,
    pub alpha: f64,
    pub beta: f64,
    pub split_k_slices: usize,
    pub activation_arg: f64,
}

/// Checks `args` against kernel `K`, builds its Params and launches it on `stream`.
/// Stream-ordered; nothing is synchronised. On any error nothing is launched.
pub fn launch<K: ConvKernel>(stream: &CudaStream, args: Conv2d<'_, K>) -> Result<(), Error> {
    with_operands(stream, args, |operands| {
        // SAFETY: every address comes from a live cudarc buffer of the stated length and element
        // type (the types are K's, enforced by the signature).
        unsafe { launch_raw(K::info(), stream, operands, None) }
    })
}

/// Runs `body` on the untyped operands of `args`: device addresses taken on `stream` (so cudarc
/// orders the work after earlier work on these buffers), held until `body` has enqueued its work.
pub(crate) fn with_operands<K: ConvTypes, R>(
    stream: &CudaStream,
    args: Conv2d<'_, K>,
    body: impl FnOnce(&ConvOperands) -> Result<R, Error>,
) -> Result<R, Error> {
    let Conv2d {
        a,
        b,
        c,
        d,
        geometry,
        alpha,
        beta,
        split_k_slices,
        activation_arg,
    } = args;
    // The guards record completion events when dropped, after the launch.
    let (ptr_a, _guard_a) = a.buffer.device_ptr(stream);
    let (ptr_b, _guard_b) = b.buffer.device_ptr(stream);
    let c_ptr = c.as_ref().map(|c| c.buffer.device_ptr(stream));
    let d_len = d.buffer.len();
    let (ptr_d, _guard_d) = d.buffer.device_ptr_mut(stream);
    let operand = |dims, len, address| TensorOperand { dims, len, address };
    let operands = ConvOperands {
        a: operand(a.dims, a.buffer.len(), ptr_a),
        b: operand(b.dims, b.buffer.len(), ptr_b),
        c: c.as_ref()
            .zip(c_ptr.as_ref())
            .map(|(c, (ptr, _))| operand(c.dims, c.buffer.len(), *ptr)),
        d: operand(d.dims, d_len, ptr_d),
        geometry,
        alpha: alpha.into(),
        beta: beta.into(),
        split_k_slices,
        activation_arg,
    };
    body(&operands)
}

/// Launches conv kernel `info` on `stream` with untyped operands, after the same checks as the
/// typed path; scratch memory from `workspace` when given, else the per-stream cache.
///
/// # Safety
/// Each operand's address must point to device memory of at least `len` elements of the kernel's
/// element type for that operand, valid until the kernel completes; D must not overlap A or B.
pub unsafe fn launch_raw(
    info: &'static KernelInfo,
    stream: &CudaStream,
    operands: &ConvOperands,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    let ctx = stream.context();
    let device = device::props(ctx)?;
    ctx.bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    if stride_phases::applies(info, &operands.geometry) {
        // SAFETY: as the caller promised.
        return unsafe { stride_phases::launch_raw(info, stream, &device, operands, workspace) };
    }
    if staged_phases::applies(info, &operands.geometry) {
        // SAFETY: as the caller promised.
        return unsafe { staged_phases::launch_raw(info, stream, &device, operands, workspace) };
    }
    let mut args = plan(info, operands, &device)?;
    if info.api() == Api::Cutlass3x {
        args.encode_tiled = crate::tma::encode_tiled(info.name)?;
        args.encode_im2col = crate::tma::encode_im2col(info.name)?;
    }
    let (_, reduction) = host_code(info)?;
    // Partial sums (parallel split-K, stream-K even at 1 slice), serial split-K semaphores, or a
    // first_layer kernel's tile counters.
    if !info.may_need_workspace(operands.split_k_slices) && !first_layer::is_first_layer(info) {
        let prepared = info.prepare_conv(&args)?;
        return unsafe { crate::launch::enqueue_prepared(info, info.entry, stream, &device, &prepared, 0) };
    }
    // Params embed the workspace address: hold the scratch until every kernel is enqueued.
    let mut scratch = Scratch::of(stream, workspace)?;
    let (prepared, workspace) = scratch.fit(stream, info.name, |address, capacity| {
        args.workspace = address as *mut c_void;
        args.workspace_capacity = capacity as u64;
        info.prepare_conv_status(&args)
    })?;
    let reduction = reduction.map(|r| (r.entry, r.prepare, &args, args.encode_tiled.is_some()));
    unsafe { crate::launch::enqueue_with_reduction(info, stream, &device, &prepared, reduction, workspace) }
}

/// Bytes of workspace `info` needs for `operands` on `device` (0: none): serial split-K
/// semaphores, parallel split-K partial sums, stream-K partial tiles, or a strided dgrad's
/// sub-filters ([`stride_phases`]) and, on a unit-stride 2.x kernel, its phases' outputs. What a
/// caller's [`Workspace`] must hold.
pub fn workspace_bytes(
    info: &'static KernelInfo,
    operands: &ConvOperands,
    device: &device::DeviceProps,
) -> Result<usize, Error> {
    if stride_phases::applies(info, &operands.geometry) {
        return stride_phases::workspace_bytes(info, operands, device);
    }
    if staged_phases::applies(info, &operands.geometry) {
        return staged_phases::workspace_bytes(info, operands, device);
    }
    let mut args = plan(info, operands, device)?;
    args.workspace = std::ptr::null_mut();
    args.workspace_capacity = 0;
    if info.api() == Api::Cutlass3x {
        // Descriptors are thrown away: host-only Params need no driver.
        args.encode_tiled = Some(crate::gemm::no_tensor_map);
        args.encode_im2col = Some(crate::tma::no_im2col_map);
    }
    Ok(match info.prepare_conv_status(&args)? {
        Ok(_) => 0,
        Err(bytes) => bytes as usize,
    })
}

impl KernelInfo {
    /// Runs a conv kernel's host code on flat ABI arguments: CUTLASS's `can_implement`, then
    /// Params, grid, block, shared memory and workspace size. Touches no GPU.
    pub fn prepare_conv(&'static self, args: &abi::cutlass_aot_conv2d_args) -> Result<Prepared, Error> {
        self.prepare_conv_status(args)?.map_err(|bytes| {
            Error::invalid(
                self.name,
                format!(
                    "this problem needs {bytes} bytes of workspace but {} were given",
                    args.workspace_capacity
                ),
            )
        })
    }

    /// As [`KernelInfo::prepare_conv`], but a too-small workspace is `Ok(Err(bytes needed))`.
    pub(crate) fn prepare_conv_status(
        &'static self,
        args: &abi::cutlass_aot_conv2d_args,
    ) -> Result<Result<Prepared, u64>, Error> {
        let (prepare, _) = host_code(self)?;
        run_prepare(self, prepare, args, args.encode_tiled.is_some())
    }
}

/// The conv host functions of a kernel: its `prepare` and, for parallel split-K, the reduction's.
fn host_code(
    info: &'static KernelInfo,
) -> Result<
    (
        PrepareFn<abi::cutlass_aot_conv2d_args>,
        Option<&'static ConvReduction>,
    ),
    Error,
> {
    match &info.host {
        HostCode::Conv2d { prepare, reduction } => Ok((*prepare, *reduction)),
        _ => Err(Error::invalid(
            info.name,
            format!(
                "this is a {} kernel, not a convolution; launch it through its own module",
                info.operation.kind()
            ),
        )),
    }
}

/// The problem the operands describe, checked for consistency: the tensors' extents agree with
/// each other and with the output size the geometry gives, buffers hold their tensors.
pub fn problem_of(info: &'static KernelInfo, ops: &ConvOperands) -> Result<Conv2dProblem, Error> {
    let conv = info.operation.conv().ok_or_else(|| {
        Error::invalid(
            info.name,
            format!("this is a {} kernel, not a convolution", info.operation.kind()),
        )
    })?;
    let g = info.gemm();
    let elements = (g.a.element, g.b.element, g.c.element);
    problem_from(info.name, conv.kind, elements, conv.layout, ops)
}

/// [`problem_of`] for a convolution of `kind` over `elements` (A, B, C in the kind's roles) stored
/// in `layout`; errors name `who`.
pub(crate) fn problem_from(
    who: &'static str,
    kind: ConvKind,
    elements: (DType, DType, DType),
    layout: ConvLayout,
    ops: &ConvOperands,
) -> Result<Conv2dProblem, Error> {
    let fail = |m: String| Error::invalid(who, m);
    let names = problem::role_names(kind);
    // Which tensor is the activation, the filter, the output.
    let (activation, filter, output) = match kind {
        ConvKind::Fprop => (ops.a.dims, ops.b.dims, ops.d.dims),
        ConvKind::Dgrad => (ops.d.dims, ops.b.dims, ops.a.dims),
        ConvKind::Wgrad => (ops.b.dims, ops.d.dims, ops.a.dims),
    };
    let [n, _, _, c] = activation;
    let [k, r, s, filter_c] = filter;
    let [activation_layout, filter_layout, output_layout] = layout.tensor_names();
    for (dims, name, layout) in [
        (activation, "activation", activation_layout),
        (filter, "filter", filter_layout),
        (output, "output", output_layout),
    ] {
        if dims.contains(&0) {
            return Err(fail(format!(
                "the {name} ({layout}) is {dims:?}: every extent must be at least 1"
            )));
        }
    }
    if filter_c != c {
        return Err(fail(format!(
            "the activation has {c} channels ({activation_layout} {activation:?}) but the filter has {filter_c} \
             ({filter_layout} {filter:?}); they must match"
        )));
    }
    let mut problem = Conv2dProblem::new(kind, activation, [k, r, s], elements).layout(layout);
    problem.pad = ops.geometry.pad;
    problem.stride = ops.geometry.stride;
    problem.dilation = ops.geometry.dilation;
    problem.mode = ops.geometry.mode;
    problem.split_k_slices = ops.split_k_slices;
    let (p, q) = problem.output_size().map_err(fail)?;
    if output != [n, p, q, k] {
        return Err(fail(format!(
            "the output ({output_layout}) is {output:?} but an activation of {activation:?} and a filter of {filter:?} at \
             padding {:?}, stride {:?}, dilation {:?} give [{n}, {p}, {q}, {k}]",
            ops.geometry.pad, ops.geometry.stride, ops.geometry.dilation
        )));
    }
    if ops.c.is_none() && ops.beta != 0.0 {
        return Err(fail(format!(
            "beta is {} but no C was given; pass C with `with_c` or set beta to 0",
            ops.beta
        )));
    }
    if let Some(cop) = &ops.c {
        if cop.dims != ops.d.dims {
            return Err(fail(format!(
                "C is {:?} but D is {:?}; they must match",
                cop.dims, ops.d.dims
            )));
        }
    }
    let mut tensors = vec![(names[0], ops.a), (names[1], ops.b), (names[2], ops.d)];
    if let Some(cop) = ops.c {
        tensors.push(("C", cop));
    }
    for (name, t) in tensors {
        match t.elements() {
            Some(need) if need <= t.len => {}
            Some(need) => {
                return Err(fail(format!(
                    "{name} {:?} needs a buffer of {need} elements but the buffer has {}",
                    t.dims, t.len
                )))
            }
            None => return Err(fail(format!("{name}'s extent {:?} overflows usize", t.dims))),
        }
    }
    if ops.split_k_slices == 0 {
        return Err(fail("split_k_slices is 0; use 1 (no split) or more".into()));
    }
    Ok(problem)
}

/// Checks operands against conv kernel `info` on `device` and turns them into the flat ABI
/// arguments of its `prepare`. Pure host code: no GPU needed.
pub fn plan(
    info: &'static KernelInfo,
    ops: &ConvOperands,
    device: &device::DeviceProps,
) -> Result<abi::cutlass_aot_conv2d_args, Error> {
    info.check_runnable(device)?;
    let mut problem = problem_of(info, ops)?;
    crate::gemm::check_scalars(info, ops.alpha, ops.beta)?;
    let c = ops.c.unwrap_or(ops.d);
    problem.compute_capability = Some(device.compute_capability);
    problem.addresses = Some([ops.a.address, ops.b.address, c.address, ops.d.address]);
    info.supports(&problem)
        .map_err(|u| Error::invalid(info.name, u.reasons.join("; ")))?;
    let (p, q) = problem.output_size().map_err(|m| Error::invalid(info.name, m))?;
    let int = |v: usize, what: &str| -> Result<i32, Error> {
        i32::try_from(v).map_err(|_| Error::invalid(info.name, format!("{what} = {v} exceeds the i32 range")))
    };
    Ok(abi::cutlass_aot_conv2d_args {
        n: int(problem.n, "N")?,
        h: int(problem.h, "H")?,
        w: int(problem.w, "W")?,
        c: int(problem.c, "C")?,
        k: int(problem.k, "K")?,
        r: int(problem.r, "R")?,
        s: int(problem.s, "S")?,
        p: int(p, "P")?,
        q: int(q, "Q")?,
        pad_h: int(problem.pad[0], "the row padding")?,
        pad_w: int(problem.pad[1], "the column padding")?,
        pad_h_end: int(problem.pad[0], "the row padding")?,
        pad_w_end: int(problem.pad[1], "the column padding")?,
        stride_h: int(problem.stride[0], "the row stride")?,
        stride_w: int(problem.stride[1], "the column stride")?,
        dilation_h: int(problem.dilation[0], "the row dilation")?,
        dilation_w: int(problem.dilation[1], "the column dilation")?,
        mode: match problem.mode {
            ConvMode::CrossCorrelation => {
                abi::cutlass_aot_conv_mode::CUTLASS_AOT_CONV_CROSS_CORRELATION as i32
            }
            ConvMode::Convolution => abi::cutlass_aot_conv_mode::CUTLASS_AOT_CONV_CONVOLUTION as i32,
        },
        split_k_slices: int(ops.split_k_slices, "split_k_slices")?,
        device_sms: device.multiprocessors as i32,
        ptr_a: ops.a.address as *const c_void,
        ptr_b: ops.b.address as *const c_void,
        ptr_c: c.address as *const c_void,
        ptr_d: ops.d.address as *mut c_void,
        cd_pixel_strides: [0; 3],
        workspace: std::ptr::null_mut(),
        workspace_capacity: 0,
        encode_tiled: None,
        encode_im2col: None,
        alpha: ops.alpha,
        beta: ops.beta,
        activation_arg: ops.activation_arg,
    })
}
