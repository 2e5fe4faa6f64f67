//! The GEMM launch path, generic over every generated kernel:
//! check arguments → build Params on the host → launch on the caller's stream.

use std::ffi::c_void;

use cudarc::driver::CudaStream;

pub mod fusion;
mod problem;
pub(crate) mod split_tf32;

pub use split_tf32::is_split as is_split_tf32;

use crate::abi;
use crate::device;
use crate::error::Error;
use crate::kernel::{HostCode, KernelInfo};
use crate::matrix::{MatrixMut, MatrixRef, MatrixShape};
use crate::model::{Api, BatchMode, Layout, Reduction, SplitK};
use crate::params::{run_prepare, PrepareFn, Prepared};
pub use crate::select::{Raster, Tuning};
use crate::types::{Element, LayoutTag, Scalar};
use crate::workspace::{Scratch, Workspace};
use fusion::{FusedArgs, FusionOperands, HeldFusion};

pub use crate::params::PARAMS_CAPACITY;
pub(crate) use problem::operand_rules;
pub use problem::GemmProblem;

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
    /// K split into this many slices (1: no split), serially or in parallel as the kernel's
    /// [`Design::split_k`](crate::model::Design::split_k) says.
    pub split_k_slices: usize,
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
            split_k_slices: 1,
        }
    }

    /// Splits K into `slices` (see [`Design::split_k`](crate::model::Design::split_k)); the workspace it needs is allocated
    /// per stream and reused.
    pub fn split_k(mut self, slices: usize) -> Self {
        self.split_k_slices = slices;
        self
    }

    /// Adds `beta · C`.
    pub fn with_c(mut self, c: MatrixRef<'a, K::C, K::LayoutC>, beta: K::Scalar) -> Self {
        self.c = Some(c);
        self.beta = beta;
        self
    }
}

impl KernelInfo {
    /// Whether a launch with `split_k_slices` may need a device workspace: stream-K scheduling,
    /// serial split-K semaphores, parallel split-K partial sums, a reduction's partial row sums and
    /// tile counters, a pointer-array kernel's tensor maps. Such launches go through the per-stream
    /// workspace cache.
    pub fn may_need_workspace(&self, split_k_slices: usize) -> bool {
        matches!(self.design.split_k(), SplitK::StreamK | SplitK::Parallel)
            || self
                .design
                .as_3x()
                .is_some_and(|d| d.batch_mode == BatchMode::Array)
            || self.epilogue.fusion.reduction != Reduction::None
            || split_k_slices > 1
    }

    /// Runs the kernel's host code on flat ABI arguments: CUTLASS's `can_implement`, then Params,
    /// grid, block, cluster, shared memory and workspace size. Touches no GPU; CUTLASS 3.x kernels
    /// need `args.encode_tiled` (the driver's TMA encoder) to build their Params.
    ///
    /// A problem that needs more workspace than `args.workspace_capacity` fails with
    /// [`Error::InvalidArgument`]; the launch path uses `KernelInfo::prepare_status` to grow it.
    pub fn prepare(&'static self, args: &abi::cutlass_aot_gemm_args) -> Result<Prepared, Error> {
        match self.prepare_status(args)? {
            Ok(prepared) => Ok(prepared),
            Err(bytes) => Err(Error::invalid(
                self.name,
                format!(
                    "this problem needs {bytes} bytes of workspace but {} were given",
                    args.workspace_capacity
                ),
            )),
        }
    }

    /// As [`KernelInfo::prepare`], but a too-small workspace is `Ok(Err(bytes needed))`.
    pub(crate) fn prepare_status(
        &'static self,
        args: &abi::cutlass_aot_gemm_args,
    ) -> Result<Result<Prepared, u64>, Error> {
        let (prepare, _) = host_code(self)?;
        run_prepare(self, prepare, args, args.encode_tiled.is_some())
    }

    /// The device workspace a launch with `args` needs, in bytes (0: none): serial split-K
    /// semaphores, parallel split-K partial sums, stream-K reduction space. Host code only, like
    /// [`KernelInfo::prepare`]; launches allocate it themselves, per stream, and reuse it.
    pub fn workspace_bytes(&'static self, args: &abi::cutlass_aot_gemm_args) -> Result<u64, Error> {
        let mut args = *args;
        args.workspace = std::ptr::null_mut();
        args.workspace_capacity = 0;
        if args.encode_tiled.is_none() {
            // The descriptors are thrown away: an encoder that builds none lets 3.x Params be
            // computed without the driver.
            args.encode_tiled = Some(no_tensor_map);
        }
        Ok(match self.prepare_status(&args)? {
            Ok(_) => 0,
            Err(bytes) => bytes,
        })
    }
}

/// A TMA encoder that succeeds without writing a descriptor: host-only Params (a workspace's size,
/// a launch shape) of CUTLASS 3.x kernels without the driver. Params built with it cannot be
/// launched.
///
/// # Safety
/// Writes and reads nothing; callable with any arguments.
pub unsafe extern "C" fn no_tensor_map(
    _: *mut c_void,
    _: i32,
    _: u32,
    _: *mut c_void,
    _: *const u64,
    _: *const u64,
    _: *const u32,
    _: *const u32,
    _: i32,
    _: i32,
    _: i32,
    _: i32,
) -> i32 {
    0
}

/// The GEMM host functions of a kernel: its `prepare` and, for parallel split-K, the reduction's.
fn host_code(
    info: &'static KernelInfo,
) -> Result<
    (
        PrepareFn<abi::cutlass_aot_gemm_args>,
        Option<&'static crate::kernel::SplitKReduction>,
    ),
    Error,
> {
    match &info.host {
        HostCode::Gemm { prepare, reduction } => Ok((*prepare, *reduction)),
        _ => Err(Error::invalid(
            info.name,
            format!(
                "this is a {} kernel, not a GEMM; launch it through its own module",
                info.operation.kind()
            ),
        )),
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
    /// K split into this many slices (1: no split).
    pub split_k_slices: usize,
    /// Operands of the kernel's fused epilogue (bias, scale vectors, aux output); default: none.
    pub fusion: FusionOperands,
}

/// Checks `args` against kernel `K`, builds its Params and launches it on `stream`.
/// Stream-ordered; nothing is synchronised. On any error nothing is launched.
pub fn launch<K: GemmKernel>(stream: &CudaStream, args: Gemm<'_, K>) -> Result<(), Error> {
    launch_fused(stream, args, FusedArgs::default())
}

/// [`launch`] for a kernel with a fused epilogue: `fused` holds its extra operands (the generated
/// `run` of such a kernel fills it from its `Fused` struct). Missing, extra, short or misaligned
/// operands are errors; on any error nothing is launched.
pub fn launch_fused<K: GemmKernel>(
    stream: &CudaStream,
    args: Gemm<'_, K>,
    fused: FusedArgs<'_, K>,
) -> Result<(), Error> {
    let Gemm {
        a,
        b,
        c,
        d,
        alpha,
        beta,
        split_k_slices,
    } = args;
    let held = HeldFusion::hold(stream, fused);
    let scalars = (alpha.into(), beta.into(), split_k_slices);
    with_operands(stream, a, b, c, d, scalars, |operands| {
        let operands = GemmOperands {
            fusion: held.operands,
            ..*operands
        };
        // SAFETY: every address comes from a live cudarc buffer of the stated length and element
        // type (the types are K's, enforced by the signature), the fused operands' included.
        unsafe { launch_raw(K::info(), stream, &operands) }
    })
}

/// Runs `f` on the untyped view of typed operands (with `(alpha, beta, split_k_slices)`; beta stays
/// as given even without C, so that the checks can refuse a non-zero beta) while their buffers are held for `stream`: the
/// pointers are taken with the stream so that cudarc orders the launch after earlier work on these
/// buffers, and the guards record completion events when dropped, after `f` has launched.
pub(crate) fn with_operands<A, B, C, LA, LB, LC, R>(
    stream: &CudaStream,
    a: MatrixRef<'_, A, LA>,
    b: MatrixRef<'_, B, LB>,
    c: Option<MatrixRef<'_, C, LC>>,
    d: MatrixMut<'_, C, LC>,
    (alpha, beta, split_k_slices): (f64, f64, usize),
    f: impl FnOnce(&GemmOperands) -> R,
) -> R
where
    A: crate::Element,
    B: crate::Element,
    C: crate::Element,
    LA: crate::LayoutTag,
    LB: crate::LayoutTag,
    LC: crate::LayoutTag,
{
    let (ptr_a, _guard_a) = a.buffer.device_ptr(stream);
    let (ptr_b, _guard_b) = b.buffer.device_ptr(stream);
    let c_ptr = c.as_ref().map(|c| c.buffer.device_ptr(stream));
    let d_len = d.buffer.len();
    let (ptr_d, _guard_d) = d.buffer.device_ptr_mut(stream);
    let operand = |shape, len, address| Operand { shape, len, address };
    let operands = GemmOperands {
        a: operand(a.shape, a.buffer.len(), ptr_a),
        b: operand(b.shape, b.buffer.len(), ptr_b),
        c: c.as_ref()
            .zip(c_ptr.as_ref())
            .map(|(c, (ptr, _))| operand(c.shape, c.buffer.len(), *ptr)),
        d: operand(d.shape, d_len, ptr_d),
        alpha,
        beta,
        split_k_slices,
        fusion: FusionOperands::default(),
    };
    f(&operands)
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
    unsafe { launch_raw_tuned(info, stream, operands, Tuning::default()) }
}

/// [`launch_raw`] with explicit [`Tuning`].
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_raw_tuned(
    info: &'static KernelInfo,
    stream: &CudaStream,
    operands: &GemmOperands,
    tuning: Tuning,
) -> Result<(), Error> {
    unsafe { launch_raw_in(info, stream, operands, tuning, None) }
}

/// [`launch_raw_tuned`] with scratch memory from `workspace` (when given) instead of the
/// per-stream cache (see [`crate::workspace`]).
///
/// # Safety
/// As [`launch_raw`].
pub unsafe fn launch_raw_in(
    info: &'static KernelInfo,
    stream: &CudaStream,
    operands: &GemmOperands,
    tuning: Tuning,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    tuning.check(info.name)?;
    let ctx = stream.context();
    let device = device::props(ctx)?;
    ctx.bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    if split_tf32::is_split(info) {
        return unsafe { split_tf32::launch(info, stream, &device, operands, tuning, workspace) };
    }
    let mut args = tuned_plan(info, operands, &device, tuning)?;
    unsafe { prepare_and_enqueue_in(info, stream, &device, &mut args, workspace) }
}

/// [`plan`] with `tuning` applied (raster order, swizzle, and the TMA encoder of 3.x kernels).
pub(crate) fn tuned_plan(
    info: &'static KernelInfo,
    operands: &GemmOperands,
    device: &device::DeviceProps,
    tuning: Tuning,
) -> Result<abi::cutlass_aot_gemm_args, Error> {
    let mut args = plan(info, operands, device)?;
    args.raster_order = tuning.raster.abi();
    args.max_swizzle = tuning.swizzle_for(
        info,
        args.m as usize,
        args.n as usize,
        args.batch_count as usize,
        device.multiprocessors,
    ) as i32;
    if info.api() == Api::Cutlass3x {
        args.encode_tiled = crate::tma::encode_tiled(info.name)?;
    }
    Ok(args)
}

/// Builds Params for `args` (with a workspace from the stream's cache when the launch may need
/// one) and enqueues the kernel, then, for parallel split-K, its reduction.
///
/// # Safety
/// As [`launch_raw`]; `args` was checked by [`plan`] (or [`crate::array::plan_array`]) and the
/// stream's context is current.
pub(crate) unsafe fn prepare_and_enqueue(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    args: &mut abi::cutlass_aot_gemm_args,
) -> Result<(), Error> {
    unsafe { prepare_and_enqueue_in(info, stream, device, args, None) }
}

/// [`prepare_and_enqueue`] with scratch from `workspace` when given.
///
/// # Safety
/// As [`prepare_and_enqueue`].
pub(crate) unsafe fn prepare_and_enqueue_in(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    args: &mut abi::cutlass_aot_gemm_args,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    if !info.may_need_workspace(args.split_k_slices as usize) {
        let prepared = info.prepare(args)?;
        return unsafe { crate::launch::enqueue_prepared(info, info.entry, stream, device, &prepared, 0) };
    }
    // Params embed the workspace address: hold the scratch (the cache's lock) until every kernel
    // is enqueued.
    let mut scratch = Scratch::of(stream, workspace)?;
    let (prepared, workspace) = scratch.fit(stream, info.name, |address, capacity| {
        args.workspace = address as *mut c_void;
        args.workspace_capacity = capacity as u64;
        info.prepare_status(args)
    })?;
    unsafe { enqueue_with_reduction(info, stream, device, args, &prepared, workspace) }
}

/// [`crate::launch::enqueue_with_reduction`] with the GEMM's reduction (parallel split-K), if any.
///
/// # Safety
/// As [`prepare_and_enqueue`]; `workspace` is (address, capacity) of the memory `prepared` was
/// built with.
unsafe fn enqueue_with_reduction(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    args: &abi::cutlass_aot_gemm_args,
    prepared: &Prepared,
    workspace: (u64, usize),
) -> Result<(), Error> {
    let reduction = host_code(info)?
        .1
        .map(|r| (r.entry, r.prepare, args, args.encode_tiled.is_some()));
    unsafe { crate::launch::enqueue_with_reduction(info, stream, device, prepared, reduction, workspace) }
}

/// A GEMM launch built once (its workspace fixed): the kernel's Params and, for parallel split-K,
/// its reduction's. What a plan enqueues again and again.
pub(crate) struct PreparedGemm {
    kernel: Prepared,
    reduction: Option<(&'static std::ffi::CStr, Prepared)>,
}

/// Builds the Params of `info` (and its reduction) for `args`, whose workspace is set.
pub(crate) fn prepare_gemm(
    info: &'static KernelInfo,
    args: &abi::cutlass_aot_gemm_args,
) -> Result<PreparedGemm, Error> {
    let too_small = |needed: u64| Error::AbiMismatch {
        kernel: info.name,
        message: format!(
            "prepare asked for {needed} bytes of workspace with {} given",
            args.workspace_capacity
        ),
    };
    let kernel = info.prepare_status(args)?.map_err(too_small)?;
    let has_encoder = args.encode_tiled.is_some();
    let reduction = match host_code(info)?.1 {
        Some(r) => Some((
            r.entry,
            run_prepare(info, r.prepare, args, has_encoder)?.map_err(too_small)?,
        )),
        None => None,
    };
    Ok(PreparedGemm { kernel, reduction })
}

/// Enqueues a prepared GEMM (workspace fills, kernel, reduction) with its workspace at `workspace`.
///
/// # Safety
/// As [`launch_raw`] for the operands `prepared` was built with; `workspace` is the memory it was
/// built with; the stream's context is current.
pub(crate) unsafe fn enqueue_gemm(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    prepared: &PreparedGemm,
    workspace: u64,
) -> Result<(), Error> {
    unsafe {
        crate::launch::enqueue_prepared(info, info.entry, stream, device, &prepared.kernel, workspace)?
    };
    if let Some((entry, reduction)) = &prepared.reduction {
        unsafe { crate::launch::enqueue_prepared(info, entry, stream, device, reduction, workspace)? };
    }
    Ok(())
}

/// Work enqueued around a kernel whose operands live partly in scratch memory (staged operands,
/// the 3xTF32 split): `bytes` of scratch, the kernel's operands for scratch at a base address,
/// and what to enqueue before and after the kernel.
pub(crate) struct Staging<'s> {
    pub bytes: usize,
    pub operands: &'s dyn Fn(u64) -> GemmOperands,
    pub before: &'s dyn Fn(u64) -> Result<(), Error>,
    pub after: &'s dyn Fn(u64) -> Result<(), Error>,
}

/// Runs `info` with its operands in scratch memory: the kernel's own workspace first, then
/// `staging.bytes` of staging area, one allocation held until everything is enqueued.
///
/// # Safety
/// As [`launch_raw`] for the user's operands that `staging` reads and writes; the stream's
/// context is current.
pub(crate) unsafe fn enqueue_staged(
    info: &'static KernelInfo,
    stream: &CudaStream,
    device: &device::DeviceProps,
    tuning: Tuning,
    workspace: Option<&mut Workspace>,
    staging: &Staging<'_>,
) -> Result<(), Error> {
    // The kernel's workspace depends on extents and tiles, not on addresses: ask with a stand-in
    // base (aligned like a real one), then place the staging area behind it.
    const STAND_IN: u64 = 1 << 40;
    let probe = tuned_plan(info, &(staging.operands)(STAND_IN), device, tuning)?;
    let kernel_bytes = (info.workspace_bytes(&probe)? as usize).next_multiple_of(256);
    let mut scratch = Scratch::of(stream, workspace)?;
    let (base, _) = scratch.at_least(stream, kernel_bytes + staging.bytes)?;
    let stage_base = base + kernel_bytes as u64;
    let mut args = tuned_plan(info, &(staging.operands)(stage_base), device, tuning)?;
    args.workspace = base as *mut c_void;
    args.workspace_capacity = kernel_bytes as u64;
    let prepared = info.prepare_status(&args)?.map_err(|needed| Error::AbiMismatch {
        kernel: info.name,
        message: format!("prepare asked for {needed} bytes of workspace after saying {kernel_bytes}"),
    })?;
    (staging.before)(stage_base)?;
    unsafe { enqueue_with_reduction(info, stream, device, &args, &prepared, (base, kernel_bytes))? };
    (staging.after)(stage_base)
}

/// Bytes of scratch memory `info` needs for `operands` on `device`: its own workspace (stream-K,
/// split-K) plus, for a 3xTF32-by-splitting kernel, the split operands. What a caller's
/// [`Workspace`] must hold.
pub fn workspace_bytes(
    info: &'static KernelInfo,
    operands: &GemmOperands,
    device: &device::DeviceProps,
) -> Result<usize, Error> {
    if split_tf32::is_split(info) {
        return split_tf32::workspace_bytes(info, operands, device);
    }
    let args = tuned_plan(info, operands, device, Tuning::default())?;
    Ok(info.workspace_bytes(&args)? as usize)
}

/// Checks operands against `info` on `device` and turns them into the flat ABI arguments of the
/// kernel's `prepare`. Pure host code: no GPU needed, so every rule is unit-testable.
pub fn plan(
    info: &'static KernelInfo,
    ops: &GemmOperands,
    device: &device::DeviceProps,
) -> Result<abi::cutlass_aot_gemm_args, Error> {
    info.check_runnable(device)?;
    let geometry = Geometry::check(
        info,
        &ops.a.shape,
        &ops.b.shape,
        ops.c.as_ref().map(|c| &c.shape),
        &ops.d.shape,
        ops.beta,
    )?;
    check_scalars(info, ops.alpha, ops.beta)?;
    let named = [
        ("A", Some(&ops.a), info.gemm().a.layout),
        ("B", Some(&ops.b), info.gemm().b.layout),
        ("C", ops.c.as_ref(), info.gemm().c.layout),
        ("D", Some(&ops.d), info.gemm().c.layout),
    ];
    for (name, operand, layout) in named {
        if let Some(op) = operand {
            check_buffer(info.name, name, op.len, &op.shape, layout)?;
        }
    }
    // Without C, D is passed as C (with beta 0): a beta vector would scale D's old contents.
    if ops.c.is_none() && ops.fusion.beta_vector.is_some() {
        return Err(Error::invalid(
            info.name,
            "a beta vector was given but no C; pass C (`with_c`) or leave the beta vector out".to_string(),
        ));
    }
    // The aux matrix (output, or a backward kernel's input) is one more D: same extent and batch,
    // C's layout.
    if let Some(aux) = &ops.fusion.aux {
        let (rows, cols, batch) = (aux.shape.rows, aux.shape.cols, aux.shape.batch_count);
        if (rows, cols, batch) != (geometry.m, geometry.n, geometry.batch) {
            return Err(Error::invalid(
                info.name,
                format!(
                    "the aux matrix is {rows}×{cols} (batch {batch}) but D is {}×{} (batch {}); they must match",
                    geometry.m, geometry.n, geometry.batch
                ),
            ));
        }
        check_buffer(
            info.name,
            "the aux matrix",
            aux.len,
            &aux.shape,
            info.gemm().c.layout,
        )?;
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
        split_k_slices: ops.split_k_slices,
        fusion: info.epilogue.fusion,
        epilogue: Some(info.epilogue.kind),
        fusion_operands: Some(ops.fusion),
        ..GemmProblem::new(
            (geometry.m, geometry.n, geometry.k),
            (
                info.gemm().a.element,
                info.gemm().b.element,
                info.gemm().c.element,
            ),
            (info.gemm().a.layout, info.gemm().b.layout, info.gemm().c.layout),
        )
        .batched(geometry.batch)
    };
    // C, D and an aux output are all checked against C's alignment (C once when it is D: this
    // runs every launch).
    let mut checks = vec![
        (c.shape.ld, geometry.stride(&c.shape), c.address),
        (ops.d.shape.ld, geometry.stride(&ops.d.shape), ops.d.address),
    ];
    if checks[0] == checks[1] {
        checks.pop();
    }
    if let Some(aux) = &ops.fusion.aux {
        checks.push((aux.shape.ld, geometry.stride(&aux.shape), aux.address));
    }
    for &(ld, stride, address) in &checks {
        info.supports(&problem(ld, stride, address))
            .map_err(|u| Error::invalid(info.name, u.reasons.join("; ")))?;
    }
    let mode = if geometry.batch > 1 {
        abi::cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_BATCHED
    } else {
        abi::cutlass_aot_gemm_mode::CUTLASS_AOT_MODE_GEMM
    };
    Ok(abi::cutlass_aot_gemm_args {
        split_k_slices: ops.split_k_slices as i32,
        a: ops.a.address as *const c_void,
        b: ops.b.address as *const c_void,
        c: c.address as *const c_void,
        d: ops.d.address as *mut c_void,
        lda: ops.a.shape.ld as i64,
        ldb: ops.b.shape.ld as i64,
        ldc: c.shape.ld as i64,
        ldd: ops.d.shape.ld as i64,
        batch_stride_a: geometry.stride(&ops.a.shape) as i64,
        batch_stride_b: geometry.stride(&ops.b.shape) as i64,
        batch_stride_c: geometry.stride(&c.shape) as i64,
        batch_stride_d: geometry.stride(&ops.d.shape) as i64,
        bias: vector_address(ops.fusion.bias),
        alpha_vector: vector_address(ops.fusion.alpha_vector),
        beta_vector: vector_address(ops.fusion.beta_vector),
        aux: ops
            .fusion
            .aux
            .map_or(std::ptr::null_mut(), |aux| aux.address as *mut c_void),
        ldaux: ops.fusion.aux.map_or(0, |aux| aux.shape.ld as i64),
        batch_stride_aux: ops.fusion.aux.map_or(0, |aux| geometry.stride(&aux.shape) as i64),
        activation_arg: ops.fusion.activation_arg,
        reduction: ops
            .fusion
            .reduction
            .map_or(std::ptr::null_mut(), |v| v.address as *mut c_void),
        ..launch_args(mode, &geometry, device, (ops.alpha, ops.beta))
    })
}

fn vector_address(vector: Option<crate::fusion::VectorOperand>) -> *const c_void {
    vector.map_or(std::ptr::null(), |v| v.address as *const c_void)
}

/// The ABI arguments every plan starts from: mode, extents, device and scalars; no operands, no
/// split, CUTLASS's own rasterisation, no workspace yet (the launch path adds it) and no TMA
/// encoder (3.x launches add the driver's).
pub(crate) fn launch_args(
    mode: abi::cutlass_aot_gemm_mode,
    geometry: &Geometry,
    device: &device::DeviceProps,
    (alpha, beta): (f64, f64),
) -> abi::cutlass_aot_gemm_args {
    abi::cutlass_aot_gemm_args {
        mode: mode as i32,
        m: geometry.m as i32,
        n: geometry.n as i32,
        k: geometry.k as i32,
        batch_count: geometry.batch as i32,
        device_sms: device.multiprocessors as i32,
        sm_occupancy: 1,
        raster_order: 0,
        max_swizzle: 0,
        split_k_slices: 1,
        a: std::ptr::null(),
        b: std::ptr::null(),
        c: std::ptr::null(),
        d: std::ptr::null_mut(),
        workspace: std::ptr::null_mut(),
        workspace_capacity: 0,
        encode_tiled: None,
        lda: 0,
        ldb: 0,
        ldc: 0,
        ldd: 0,
        batch_stride_a: 0,
        batch_stride_b: 0,
        batch_stride_c: 0,
        batch_stride_d: 0,
        alpha,
        beta,
        bias: std::ptr::null(),
        alpha_vector: std::ptr::null(),
        beta_vector: std::ptr::null(),
        aux: std::ptr::null_mut(),
        ldaux: 0,
        batch_stride_aux: 0,
        activation_arg: 0.0,
        reduction: std::ptr::null_mut(),
    }
}

/// Alpha and beta of an integer epilogue must be integers (a fraction would be truncated).
pub(crate) fn check_scalars(info: &'static KernelInfo, alpha: f64, beta: f64) -> Result<(), Error> {
    if info.epilogue.compute.is_integer() {
        for (name, value) in [("alpha", alpha), ("beta", beta)] {
            if value.fract() != 0.0 || value.abs() > i32::MAX as f64 {
                return Err(Error::invalid(
                    info.name,
                    format!(
                        "{name} = {value}: this kernel's epilogue computes in {}, so alpha and beta must be \
                         integers in the i32 range (a fraction would be truncated)",
                        info.epilogue.compute
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// (m, n, k) of D = A·B (+ C) as read off the operands' shapes, or why they do not fit together.
/// Shared by every GEMM-shaped plan (a grouped plan checks each group with it).
pub(crate) fn matching_extents(
    a: &MatrixShape,
    b: &MatrixShape,
    c: Option<&MatrixShape>,
    d: &MatrixShape,
) -> Result<(usize, usize, usize), String> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if b.rows != k {
        return Err(format!(
            "A is {}×{} and B is {}×{}: B must have {k} rows (A's columns)",
            a.rows, a.cols, b.rows, b.cols
        ));
    }
    if (d.rows, d.cols) != (m, n) {
        return Err(format!("D is {}×{} but A·B is {m}×{n}", d.rows, d.cols));
    }
    match c {
        Some(c) if (c.rows, c.cols) != (m, n) => Err(format!("C is {}×{} but D is {m}×{n}", c.rows, c.cols)),
        _ => Ok((m, n, k)),
    }
}

/// A non-zero beta needs a C to scale (without one, D is passed as C and is not read).
pub(crate) fn check_beta_has_c(has_c: bool, beta: f64) -> Result<(), String> {
    if has_c || beta == 0.0 {
        return Ok(());
    }
    Err(format!(
        "beta is {beta} but no C was given; pass C with `with_c` or set beta to 0"
    ))
}

/// D's batch count, when A, B and C each have it or are one matrix broadcast to every batch.
pub(crate) fn matching_batches(
    a: &MatrixShape,
    b: &MatrixShape,
    c: Option<&MatrixShape>,
    d: &MatrixShape,
) -> Result<usize, String> {
    let batch = d.batch_count;
    for (operand, shape) in [("A", Some(a)), ("B", Some(b)), ("C", c)] {
        if let Some(s) = shape.filter(|s| s.batch_count != batch && s.batch_count != 1) {
            return Err(format!(
                "{operand} has a batch of {} but D has {batch}; inputs must match D's batch count or be a single matrix (broadcast)",
                s.batch_count
            ));
        }
    }
    Ok(batch)
}

/// D's batches, `layout` matrices, must not overlap (they would overwrite each other).
pub(crate) fn batches_apart(d: &MatrixShape, layout: Layout) -> Result<(), String> {
    let one_matrix = MatrixShape { batch_count: 1, ..*d }
        .required_len(layout)
        .unwrap_or(usize::MAX);
    if d.batch_count > 1 && d.batch_stride < one_matrix {
        return Err(format!(
            "D's batch stride {} is smaller than one matrix ({one_matrix} elements): batches would overwrite each other; use a stride of at least {one_matrix}",
            d.batch_stride
        ));
    }
    Ok(())
}

/// Extents of the problem as read off the operands, checked for consistency.
pub(crate) struct Geometry {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) batch: usize,
}

impl Geometry {
    pub(crate) fn check(
        info: &'static KernelInfo,
        a: &MatrixShape,
        b: &MatrixShape,
        c: Option<&MatrixShape>,
        d: &MatrixShape,
        beta: f64,
    ) -> Result<Self, Error> {
        let fail = |m: String| Err(Error::invalid(info.name, m));
        let (m, n, k) = matching_extents(a, b, c, d).map_err(|m| Error::invalid(info.name, m))?;
        check_beta_has_c(c.is_some(), beta).map_err(|m| Error::invalid(info.name, m))?;
        if m == 0 || n == 0 || k == 0 {
            return fail(format!(
                "empty problem (m={m}, n={n}, k={k}): every extent must be at least 1"
            ));
        }
        let batch = matching_batches(a, b, c, d).map_err(|m| Error::invalid(info.name, m))?;
        if batch == 0 {
            return fail("D has a batch count of 0".into());
        }
        batches_apart(d, info.gemm().c.layout).map_err(|m| Error::invalid(info.name, m))?;
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

/// `operand`'s leading dimension must cover one of its lines. `who` names the error's source (a
/// kernel, or a pointer array).
pub(crate) fn check_ld(
    who: &'static str,
    operand: &str,
    shape: &MatrixShape,
    layout: Layout,
) -> Result<(), Error> {
    let inner = shape.inner(layout);
    if shape.ld < inner {
        return Err(Error::invalid(
            who,
            format!("leading dimension of {operand} is {} but its {layout}-major rows/columns hold {inner} elements; ld must be at least {inner}", shape.ld),
        ));
    }
    Ok(())
}

/// [`check_ld`], then: `operand`'s buffer of `len` elements must hold its whole shape.
pub(crate) fn check_buffer(
    who: &'static str,
    operand: &str,
    len: usize,
    shape: &MatrixShape,
    layout: Layout,
) -> Result<(), Error> {
    check_ld(who, operand, shape, layout)?;
    match shape.required_len(layout) {
        Some(need) if need <= len => Ok(()),
        Some(need) => Err(Error::invalid(
            who,
            format!(
                "{operand} ({}×{}, ld {}, batch {} × stride {}) needs a buffer of {need} elements but the buffer has {len}",
                shape.rows, shape.cols, shape.ld, shape.batch_count, shape.batch_stride
            ),
        )),
        None => Err(Error::invalid(who, format!("{operand}'s extent overflows usize"))),
    }
}
