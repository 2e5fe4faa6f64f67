//! Grouped GEMM: a list of independent GEMMs, each with its own extents, leading dimensions and
//! operands, in one launch (CUTLASS 2.x `GemmGrouped`, CUTLASS 3.x pointer-array kernels).
//!
//! Two forms:
//! * [`GroupedGemm`]: the groups are known on the host. Every group is checked (extents, leading
//!   dimensions, buffer lengths, alignment), then their extents, pointers and leading dimensions
//!   are packed into one argument block and uploaded with a single stream-ordered copy into the
//!   stream's reused workspace — no device allocation per launch.
//! * [`MoeGemm`]: a mixture-of-experts layer as `torch._grouped_mm` takes it — one A of all tokens,
//!   cumulative row offsets per expert **in device memory**, one B per expert. A small kernel
//!   (`cutlass_aot_grouped_setup`) writes the argument block on the device and the grouped kernel
//!   follows on the same stream: the host never reads the offsets, so nothing synchronises.
//!
//! Groups with no rows (m = 0) are allowed and cost nothing.

mod enqueue;
mod k_zero;
mod prepared;
mod problem;
mod select;

use std::ffi::c_void;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use crate::abi;
use crate::device;
use crate::error::Error;
use crate::gemm::{check_buffer, GemmKernel, Operand, Tuning};
use crate::kernel::{HostCode, KernelInfo};
use crate::matrix::{MatrixMut, MatrixRef, MatrixShape};
use crate::model::Layout;
use crate::params::{run_prepare, PrepareFn, Prepared};
use crate::types::{Element, LayoutTag, Scalar};

pub use prepared::{prepare_moe, prepare_moe_raw, prepare_raw, PreparedLaunch};
pub use problem::{GroupShape, GroupedProblem, MAX_GROUPS};

use enqueue::{enqueue, Upload};
pub use select::{run, run_with, select, work_of};

/// One GEMM of a grouped launch, D (m×n) = alpha·A (m×k)·B (k×n) + beta·C, typed by its element
/// types and layouts ([`Group`] names them by a kernel).
pub struct GroupOf<'a, A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag> {
    pub a: MatrixRef<'a, A, LA>,
    pub b: MatrixRef<'a, B, LB>,
    /// Without C, the launch's beta must be 0 (C is then not read).
    pub c: Option<MatrixRef<'a, C, LC>>,
    pub d: MatrixMut<'a, C, LC>,
}

/// One GEMM of a grouped launch of kernel `K`.
pub type Group<'a, K> = GroupOf<
    'a,
    <K as GemmKernel>::A,
    <K as GemmKernel>::B,
    <K as GemmKernel>::C,
    <K as GemmKernel>::LayoutA,
    <K as GemmKernel>::LayoutB,
    <K as GemmKernel>::LayoutC,
>;

impl<'a, A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag>
    GroupOf<'a, A, B, C, LA, LB, LC>
{
    pub fn new(a: MatrixRef<'a, A, LA>, b: MatrixRef<'a, B, LB>, d: MatrixMut<'a, C, LC>) -> Self {
        GroupOf { a, b, c: None, d }
    }

    /// Adds C (scaled by the launch's beta).
    pub fn with_c(mut self, c: MatrixRef<'a, C, LC>) -> Self {
        self.c = Some(c);
        self
    }
}

/// D_g = alpha·A_g·B_g + beta·C_g for every group g of kernel `K`, in one launch.
pub struct GroupedGemm<'a, K: GemmKernel> {
    pub groups: Vec<Group<'a, K>>,
    pub alpha: K::Scalar,
    pub beta: K::Scalar,
    /// leaky_relu's slope, for kernels with that activation.
    pub activation_arg: f64,
}

impl<'a, K: GemmKernel> GroupedGemm<'a, K> {
    /// D_g = alpha·A_g·B_g (beta 0, C not read).
    pub fn new(groups: Vec<Group<'a, K>>, alpha: K::Scalar) -> Self {
        GroupedGemm {
            groups,
            alpha,
            beta: K::Scalar::ZERO,
            activation_arg: 0.0,
        }
    }

    /// Adds beta·C_g (every group with output must then have a C).
    pub fn with_beta(mut self, beta: K::Scalar) -> Self {
        self.beta = beta;
        self
    }

    /// leaky_relu's slope.
    pub fn with_activation_arg(mut self, slope: f64) -> Self {
        self.activation_arg = slope;
        self
    }
}

/// One group, untyped: its operands as the checks see them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupOperands {
    pub a: Operand,
    pub b: Operand,
    pub c: Option<Operand>,
    pub d: Operand,
}

/// A grouped launch, untyped (the registry-driven path; the typed path builds one too).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupedOperands<'g> {
    pub groups: &'g [GroupOperands],
    pub alpha: f64,
    pub beta: f64,
    pub activation_arg: f64,
    /// Tile order of CUTLASS 3.x kernels (results are identical; only speed changes).
    pub tuning: Tuning,
}

/// Checks `args` against kernel `K`, uploads the groups' arguments and launches the kernel on
/// `stream`. Stream-ordered; nothing is synchronised. On any error nothing is launched.
pub fn launch<K: GemmKernel>(stream: &CudaStream, args: GroupedGemm<'_, K>) -> Result<(), Error> {
    let GroupedGemm {
        mut groups,
        alpha,
        beta,
        activation_arg,
    } = args;
    let scalars = (alpha.into(), beta.into(), activation_arg);
    with_group_operands(stream, &mut groups, scalars, |ops| {
        // SAFETY: every address comes from a live cudarc buffer of the stated length and of K's
        // element types (enforced by the signature).
        unsafe { launch_raw(K::info(), stream, ops) }
    })
}

/// Runs `f` on the untyped view of typed groups (with `(alpha, beta, activation_arg)`) while their
/// buffers are held for `stream`: the pointers are taken with the stream so that cudarc orders the
/// launch after earlier work on these buffers, and the guards record completion events when
/// dropped, after `f` has launched.
fn with_group_operands<A: Element, B: Element, C: Element, LA: LayoutTag, LB: LayoutTag, LC: LayoutTag, R>(
    stream: &CudaStream,
    typed: &mut [GroupOf<'_, A, B, C, LA, LB, LC>],
    (alpha, beta, activation_arg): (f64, f64, f64),
    f: impl FnOnce(&GroupedOperands<'_>) -> R,
) -> R {
    let mut guards = Vec::with_capacity(typed.len() * 4);
    let mut inputs = Vec::with_capacity(typed.len());
    for group in typed.iter() {
        let (a, guard) = group.a.buffer.device_ptr(stream);
        guards.push(guard);
        let (b, guard) = group.b.buffer.device_ptr(stream);
        guards.push(guard);
        let c = group.c.as_ref().map(|c| {
            let (address, guard) = c.buffer.device_ptr(stream);
            guards.push(guard);
            operand(c.shape, c.buffer.len(), address)
        });
        inputs.push((
            operand(group.a.shape, group.a.buffer.len(), a),
            operand(group.b.shape, group.b.buffer.len(), b),
            c,
        ));
    }
    // D last: its write is ordered after every earlier use of the buffer.
    let mut operands = Vec::with_capacity(inputs.len());
    for ((a, b, c), group) in inputs.into_iter().zip(typed.iter_mut()) {
        let len = group.d.buffer.len();
        let (d, guard) = group.d.buffer.device_ptr_mut(stream);
        guards.push(guard);
        operands.push(GroupOperands {
            a,
            b,
            c,
            d: operand(group.d.shape, len, d),
        });
    }
    let result = f(&GroupedOperands {
        groups: &operands,
        alpha,
        beta,
        activation_arg,
        tuning: Tuning::default(),
    });
    drop(guards);
    result
}

fn operand(shape: MatrixShape, len: usize, address: u64) -> Operand {
    Operand { shape, len, address }
}

/// The grouped host code of a kernel.
fn prepare_fn(info: &'static KernelInfo) -> Result<PrepareFn<abi::cutlass_aot_grouped_args>, Error> {
    match info.host {
        HostCode::GemmGrouped { prepare } => Ok(prepare),
        _ => Err(Error::invalid(
            info.name,
            format!(
                "this is a {} kernel, not a grouped GEMM; launch it through its own module",
                info.operation.kind()
            ),
        )),
    }
}

impl KernelInfo {
    /// Runs a grouped kernel's host code on flat ABI arguments: Params, grid, block, shared memory
    /// and workspace size. Touches no GPU (CUTLASS 3.x kernels need `args.encode_tiled`; see
    /// [`crate::gemm::no_tensor_map`] for host-only Params).
    pub fn prepare_grouped(&'static self, args: &abi::cutlass_aot_grouped_args) -> Result<Prepared, Error> {
        match run_prepare(self, prepare_fn(self)?, args, args.encode_tiled.is_some())? {
            Ok(prepared) => Ok(prepared),
            Err(bytes) => Err(Error::invalid(
                self.name,
                format!(
                    "this launch needs {bytes} bytes of workspace but {} were given",
                    args.workspace_capacity
                ),
            )),
        }
    }
}

/// Where the per-group arrays lie in an argument block of `groups` groups: the extents first, then
/// the pointers and leading dimensions, each array 16-byte aligned, the whole block a multiple of
/// 256 bytes (the kernel's workspace follows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockLayout {
    pub groups: usize,
    /// Byte offsets of problems, a, b, c, d, lda, ldb, ldc, ldd.
    pub offsets: [usize; 9],
    pub bytes: usize,
}

impl BlockLayout {
    pub fn new(groups: usize) -> Self {
        let round = |n: usize, to: usize| n.div_ceil(to) * to;
        let mut offsets = [0usize; 9];
        let mut at = round(groups * std::mem::size_of::<abi::cutlass_aot_gemm_coord>(), 16);
        for slot in offsets.iter_mut().skip(1) {
            *slot = at;
            at += round(groups * 8, 16);
        }
        BlockLayout {
            groups,
            offsets,
            bytes: round(at.max(1), 256),
        }
    }

    /// The arrays of a block that starts at device address `base`.
    pub fn arrays(&self, base: u64) -> abi::cutlass_aot_grouped_arrays {
        let at = |i: usize| (base + self.offsets[i] as u64) as *mut c_void;
        abi::cutlass_aot_grouped_arrays {
            problems: at(0).cast(),
            a: at(1).cast(),
            b: at(2).cast(),
            c: at(3).cast(),
            d: at(4).cast(),
            lda: at(5).cast(),
            ldb: at(6).cast(),
            ldc: at(7).cast(),
            ldd: at(8).cast(),
        }
    }
}

/// A checked grouped launch: the argument block's bytes (for the host), the host extents and the
/// ABI arguments without their device addresses (the launch path adds them).
#[derive(Debug)]
pub struct GroupedPlan {
    pub layout: BlockLayout,
    /// The argument block as it is uploaded (device addresses of the operands inside).
    pub block: Vec<u8>,
    pub problems: Vec<abi::cutlass_aot_gemm_coord>,
    pub alpha: f64,
    pub beta: f64,
    pub activation_arg: f64,
    /// D = β·C of the groups without products (k = 0), which the kernel sees empty.
    pub(crate) fills: Vec<crate::support::Scale4d>,
}

/// Checks every group against `info` on `device` and packs the argument block. Pure host code: no
/// GPU needed, so every rule is unit-testable.
pub fn plan(
    info: &'static KernelInfo,
    ops: &GroupedOperands<'_>,
    device: &device::DeviceProps,
) -> Result<GroupedPlan, Error> {
    info.check_runnable(device)?;
    prepare_fn(info)?;
    let op = *info.gemm();
    let fail = |message: String| Err(Error::invalid(info.name, message));
    if ops.groups.is_empty() {
        return fail("no groups: a grouped GEMM needs at least one".to_string());
    }
    if ops.groups.len() > MAX_GROUPS {
        return fail(format!("{} groups exceed {MAX_GROUPS}", ops.groups.len()));
    }
    crate::gemm::check_scalars(info, ops.alpha, ops.beta)?;
    let mut shapes = Vec::with_capacity(ops.groups.len());
    let mut fills = Vec::new();
    for (g, group) in ops.groups.iter().enumerate() {
        let (a, b, d) = (&group.a.shape, &group.b.shape, &group.d.shape);
        let (m, n, k) = crate::gemm::matching_extents(a, b, group.c.as_ref().map(|c| &c.shape), d)
            .map_err(|m| Error::invalid(info.name, format!("group {g}: {m}")))?;
        if group.c.is_none() && ops.beta != 0.0 && m > 0 && n > 0 {
            return fail(format!(
                "group {g}: beta is {} but the group has no C; give every group a C or set beta to 0",
                ops.beta
            ));
        }
        for (name, shape) in [("A", a), ("B", b), ("D", d)] {
            if shape.batch_count != 1 {
                return fail(format!(
                    "group {g}: {name} is a batch of {}; each group is one GEMM (give each matrix its own \
                     group)",
                    shape.batch_count
                ));
            }
        }
        let empty = m == 0 || n == 0;
        if !empty {
            let named = [
                ("A", Some(&group.a), op.a.layout),
                ("B", Some(&group.b), op.b.layout),
                ("C", group.c.as_ref(), op.c.layout),
                ("D", Some(&group.d), op.c.layout),
            ];
            for (name, operand, layout) in named {
                if let Some(o) = operand {
                    check_buffer(info.name, &format!("group {g}: {name}"), o.len, &o.shape, layout)?;
                }
            }
        }
        let c = group.c.unwrap_or(group.d);
        // No products: D = beta·C beside the kernel, which sees the group empty.
        let m = if !empty && k == 0 {
            fills.push(k_zero::fill_of(info, g, group, ops.beta)?);
            0
        } else {
            m
        };
        shapes.push(GroupShape {
            m,
            n,
            k,
            ld: Some([a.ld, b.ld, c.shape.ld]),
            addresses: Some([group.a.address, group.b.address, c.address, group.d.address]),
        });
    }
    // D's leading dimension must be aligned too (the rules above check C's, or D's without C).
    for (g, group) in ops.groups.iter().enumerate() {
        let align = op.c.alignment as usize;
        if group.d.shape.rows > 0 && group.d.shape.cols > 0 && group.d.shape.ld % align != 0 {
            return fail(format!(
                "group {g}: the leading dimension of D ({}) is not a multiple of the alignment {align}",
                group.d.shape.ld
            ));
        }
    }
    let problem = GroupedProblem {
        compute_capability: Some(device.compute_capability),
        ..GroupedProblem::new(
            (op.a.element, op.b.element, op.c.element),
            (op.a.layout, op.b.layout, op.c.layout),
            shapes,
        )
    };
    info.supports(&problem)
        .map_err(|u| Error::invalid(info.name, u.reasons.join("; ")))?;
    let groups = problem.groups.unwrap_or_default();
    let layout = BlockLayout::new(groups.len());
    let mut block = vec![0u8; layout.bytes];
    let mut problems = Vec::with_capacity(groups.len());
    for (g, (shape, group)) in groups.iter().zip(ops.groups).enumerate() {
        let coord = abi::cutlass_aot_gemm_coord {
            m: shape.m as i32,
            n: shape.n as i32,
            k: shape.k as i32,
        };
        problems.push(coord);
        let c = group.c.unwrap_or(group.d);
        let put = |block: &mut [u8], array: usize, value: u64| {
            let at = layout.offsets[array] + 8 * g;
            block[at..at + 8].copy_from_slice(&value.to_le_bytes());
        };
        let at = 12 * g;
        for (i, v) in [coord.m, coord.n, coord.k].iter().enumerate() {
            block[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        put(&mut block, 1, group.a.address);
        put(&mut block, 2, group.b.address);
        put(&mut block, 3, c.address);
        put(&mut block, 4, group.d.address);
        put(&mut block, 5, group.a.shape.ld as u64);
        put(&mut block, 6, group.b.shape.ld as u64);
        put(&mut block, 7, c.shape.ld as u64);
        put(&mut block, 8, group.d.shape.ld as u64);
    }
    Ok(GroupedPlan {
        layout,
        block,
        problems,
        alpha: ops.alpha,
        beta: ops.beta,
        activation_arg: ops.activation_arg,
        fills,
    })
}

/// The ABI arguments of a launch on `device` (no arrays, workspace or encoder yet).
fn grouped_args(
    group_count: usize,
    device: &device::DeviceProps,
    (alpha, beta, activation_arg): (f64, f64, f64),
) -> abi::cutlass_aot_grouped_args {
    abi::cutlass_aot_grouped_args {
        group_count: group_count as i32,
        device_sms: device.multiprocessors as i32,
        sm_occupancy: 1,
        threadblock_count: 0,
        raster_order: 0,
        max_swizzle: 0,
        arrays: abi::cutlass_aot_grouped_arrays::default(),
        host_problems: std::ptr::null(),
        workspace: std::ptr::null_mut(),
        workspace_capacity: 0,
        host_workspace: std::ptr::null_mut(),
        encode_tiled: None,
        alpha,
        beta,
        activation_arg,
    }
}

/// Sets a 3.x kernel's tile order (2.x kernels walk their own and ignore it).
fn apply_tuning(
    info: &'static KernelInfo,
    args: &mut abi::cutlass_aot_grouped_args,
    tuning: Tuning,
) -> Result<(), Error> {
    tuning.check(info.name)?;
    args.raster_order = tuning.raster.abi();
    args.max_swizzle = tuning.max_swizzle as i32;
    Ok(())
}

/// Launches `info` on `stream` over untyped groups, after the same checks as the typed path.
///
/// # Safety
/// Each operand's address must point to device memory of at least `len` elements of the kernel's
/// element type for that operand, valid until the kernel completes; no D may overlap an A or B.
pub unsafe fn launch_raw(
    info: &'static KernelInfo,
    stream: &CudaStream,
    ops: &GroupedOperands<'_>,
) -> Result<(), Error> {
    let ctx = stream.context();
    let device = device::props(ctx)?;
    let (mut args, upload, layout, problems, fills) = block_launch(info, &device, ops)?;
    args.host_problems = problems.as_ptr();
    ctx.bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    unsafe { enqueue(info, stream, &device, args, upload, layout)? };
    // SAFETY: the fills name D and C of groups the caller promised are live.
    unsafe { k_zero::enqueue(stream, &fills) }
}

/// The host extents of a host-packed launch, which its ABI arguments point to while Params are
/// built.
type HostProblems = Vec<abi::cutlass_aot_gemm_coord>;

/// A host-packed launch: ABI arguments, block, layout, host extents, k = 0 fills.
type BlockLaunch = (
    abi::cutlass_aot_grouped_args,
    Upload,
    BlockLayout,
    HostProblems,
    Vec<crate::support::Scale4d>,
);

/// The checked arguments of a host-packed launch: ABI arguments (`host_problems` still to be
/// pointed at the extents), the block to upload, its layout, the extents and the k = 0 fills.
fn block_launch(
    info: &'static KernelInfo,
    device: &device::DeviceProps,
    ops: &GroupedOperands<'_>,
) -> Result<BlockLaunch, Error> {
    let plan = plan(info, ops, device)?;
    let mut args = grouped_args(
        plan.problems.len(),
        device,
        (plan.alpha, plan.beta, plan.activation_arg),
    );
    apply_tuning(info, &mut args, ops.tuning)?;
    Ok((
        args,
        Upload::Block(plan.block),
        plan.layout,
        plan.problems,
        plan.fills,
    ))
}

/// A mixture-of-experts layer whose rows per expert live on the device, as `torch._grouped_mm`
/// takes it: A holds every token's row (`total_rows` × k, row-major), `offsets[g]` is the end of
/// expert g's rows (cumulative, int32, in device memory), B holds one k×n matrix per expert
/// (`b_stride` elements apart), and C / D hold `total_rows` × n rows (row-major).
pub struct MoeGemm<'a, K: GemmKernel> {
    pub a: &'a dyn DevicePtr<K::A>,
    pub offsets: &'a dyn DevicePtr<i32>,
    pub b: &'a dyn DevicePtr<K::B>,
    pub c: Option<&'a dyn DevicePtr<K::C>>,
    pub d: &'a mut dyn DevicePtrMut<K::C>,
    pub experts: usize,
    pub total_rows: usize,
    pub n: usize,
    pub k: usize,
    /// Leading dimensions (default: packed) and the distance between experts' B (default k·n).
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub ldd: usize,
    pub b_stride: usize,
    pub alpha: K::Scalar,
    pub beta: K::Scalar,
    pub activation_arg: f64,
}

impl<'a, K: GemmKernel> MoeGemm<'a, K> {
    /// Packed operands: A `total_rows`×k, B `experts` k×n matrices back to back, D `total_rows`×n.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        a: &'a dyn DevicePtr<K::A>,
        offsets: &'a dyn DevicePtr<i32>,
        b: &'a dyn DevicePtr<K::B>,
        d: &'a mut dyn DevicePtrMut<K::C>,
        (experts, total_rows, n, k): (usize, usize, usize, usize),
        alpha: K::Scalar,
    ) -> Self {
        let ldb = match <K::LayoutB as LayoutTag>::LAYOUT {
            Layout::Column => k,
            _ => n,
        };
        MoeGemm {
            a,
            offsets,
            b,
            c: None,
            d,
            experts,
            total_rows,
            n,
            k,
            lda: k,
            ldb,
            ldc: n,
            ldd: n,
            b_stride: k * n,
            alpha,
            beta: K::Scalar::ZERO,
            activation_arg: 0.0,
        }
    }

    /// Adds beta·C (`total_rows` × n, row-major, ld n).
    pub fn with_c(mut self, c: &'a dyn DevicePtr<K::C>, beta: K::Scalar) -> Self {
        self.c = Some(c);
        self.beta = beta;
        self
    }
}

/// A device-resident (MoE) launch, untyped: addresses and lengths (in elements) of the buffers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoeOperands {
    /// (address, length) of A, the offsets (i32), B, C (optional) and D.
    pub a: (u64, usize),
    pub offsets: (u64, usize),
    pub b: (u64, usize),
    pub c: Option<(u64, usize)>,
    pub d: (u64, usize),
    pub experts: usize,
    pub total_rows: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub ldd: usize,
    pub b_stride: usize,
    pub alpha: f64,
    pub beta: f64,
    pub activation_arg: f64,
    /// Tile order of CUTLASS 3.x kernels.
    pub tuning: Tuning,
}

/// Checks `args` on the host (everything but the device-resident row counts), then enqueues the
/// setup kernel and the grouped kernel on `stream`. The offsets are read on the device only:
/// nothing synchronises, so they may still be being written by earlier work on `stream`.
/// Offsets beyond `total_rows` are clamped (those experts get fewer rows), decreasing ones give
/// empty experts. The first launch of a kernel in a context loads its image, which the driver may
/// synchronise: [`KernelInfo::load`] it ahead of time where that matters.
pub fn launch_moe<K: GemmKernel>(stream: &CudaStream, args: MoeGemm<'_, K>) -> Result<(), Error> {
    args.with_operands(stream, |ops| {
        // SAFETY: every address is a live cudarc buffer of the stated length and of K's element
        // types; the guards order the launch after earlier work on them.
        unsafe { launch_moe_raw(K::info(), stream, ops) }
    })
}

impl<K: GemmKernel> MoeGemm<'_, K> {
    /// Runs `f` on the untyped operands while the buffers are held for `stream` (cudarc orders
    /// the stream after earlier work on them, and records their use after `f`).
    pub fn with_operands<R>(self, stream: &CudaStream, f: impl FnOnce(&MoeOperands) -> R) -> R {
        let (a, _ga) = self.a.device_ptr(stream);
        let (b, _gb) = self.b.device_ptr(stream);
        let (offsets, _go) = self.offsets.device_ptr(stream);
        let c = self.c.map(|c| (c.device_ptr(stream).0, c.len()));
        let (a_len, b_len, offsets_len, d_len) =
            (self.a.len(), self.b.len(), self.offsets.len(), self.d.len());
        let (d, _gd) = self.d.device_ptr_mut(stream);
        f(&MoeOperands {
            a: (a, a_len),
            offsets: (offsets, offsets_len),
            b: (b, b_len),
            c,
            d: (d, d_len),
            experts: self.experts,
            total_rows: self.total_rows,
            n: self.n,
            k: self.k,
            lda: self.lda,
            ldb: self.ldb,
            ldc: self.ldc,
            ldd: self.ldd,
            b_stride: self.b_stride,
            alpha: self.alpha.into(),
            beta: self.beta.into(),
            activation_arg: self.activation_arg,
            tuning: Tuning::default(),
        })
    }
}

/// [`launch_moe`] over untyped operands, after the same checks.
///
/// # Safety
/// Each address must point to device memory of at least its length in elements of the kernel's
/// element type for that operand (i32 for the offsets), valid until the kernels complete; D must
/// not overlap A or B.
pub unsafe fn launch_moe_raw(
    info: &'static KernelInfo,
    stream: &CudaStream,
    args: &MoeOperands,
) -> Result<(), Error> {
    let ctx = stream.context();
    let device = device::props(ctx)?;
    let (grouped, upload, layout) = moe_launch(info, &device, args)?;
    ctx.bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    // SAFETY: every address is live device memory checked to hold the whole problem.
    unsafe { enqueue(info, stream, &device, grouped, upload, layout) }
}

/// The checked arguments of a device-resident launch: ABI arguments, the setup kernel's, the
/// block's layout.
fn moe_launch(
    info: &'static KernelInfo,
    device: &device::DeviceProps,
    args: &MoeOperands,
) -> Result<(abi::cutlass_aot_grouped_args, Upload, BlockLayout), Error> {
    let device = *device;
    info.check_runnable(&device)?;
    let op = *info.gemm();
    let fail = |message: String| Err(Error::invalid(info.name, message));
    if op.a.layout != Layout::Row || op.c.layout != Layout::Row {
        return fail(format!(
            "the device-resident (MoE) form splits A, C and D by rows, so it needs a kernel with row-major A \
             and C/D (this one takes {}-major A and {}-major C/D)",
            op.a.layout, op.c.layout
        ));
    }
    let problem = GroupedProblem {
        compute_capability: Some(device.compute_capability),
        ..GroupedProblem::device_resident(
            (op.a.element, op.b.element, op.c.element),
            (op.a.layout, op.b.layout, op.c.layout),
            args.experts,
        )
    };
    info.supports(&problem)
        .map_err(|u| Error::invalid(info.name, u.reasons.join("; ")))?;
    let (alpha, beta) = (args.alpha, args.beta);
    crate::gemm::check_scalars(info, alpha, beta)?;
    let (n, k, rows) = (args.n, args.k, args.total_rows);
    if n == 0 || k == 0 || n > i32::MAX as usize || k > i32::MAX as usize || rows > i32::MAX as usize {
        return fail(format!(
            "n = {n}, k = {k}, total rows = {rows}: n and k must be between 1 and {0}, the rows at most {0}",
            i32::MAX
        ));
    }
    crate::gemm::check_beta_has_c(args.c.is_some(), beta).map_err(|m| Error::invalid(info.name, m))?;
    // Every expert's rows start at an offset only the device knows: a row's start must be aligned
    // whatever the offset, so the leading dimensions carry the alignment.
    let matrix = |rows, cols, ld, batch_count, batch_stride| MatrixShape {
        rows,
        cols,
        ld,
        batch_count,
        batch_stride,
    };
    let mut checks = vec![
        ("A", matrix(rows, k, args.lda, 1, 0), op.a, args.a),
        (
            "B",
            matrix(k, n, args.ldb, args.experts, args.b_stride),
            op.b,
            args.b,
        ),
        ("D", matrix(rows, n, args.ldd, 1, 0), op.c, args.d),
    ];
    if let Some(c) = args.c {
        checks.push(("C", matrix(rows, n, args.ldc, 1, 0), op.c, c));
    }
    for (name, shape, attributes, (address, len)) in checks {
        check_buffer(info.name, name, len, &shape, attributes.layout)?;
        let align = attributes.alignment as usize;
        let contiguous = shape.inner(attributes.layout);
        let stride_ok = name != "B" || shape.batch_stride % align == 0;
        if contiguous % align != 0 || shape.ld % align != 0 || !stride_ok {
            return fail(format!(
                "{name}: its contiguous extent ({contiguous}), leading dimension ({}){} must be multiples of \
                 the kernel's alignment {align}",
                shape.ld,
                if name == "B" {
                    format!(" and expert stride ({})", shape.batch_stride)
                } else {
                    String::new()
                }
            ));
        }
        let need = (attributes.element.bits() / 8 * attributes.alignment) as u64;
        if address % need != 0 {
            return fail(format!(
                "{name} starts at address {address:#x}, which is not {need}-byte aligned as the kernel requires"
            ));
        }
    }
    if args.offsets.1 < args.experts {
        return fail(format!(
            "the offsets hold {} values but there are {} experts; give one cumulative row end per expert",
            args.offsets.1, args.experts
        ));
    }
    let bytes = |d: crate::model::DType| d.bits() as i64 / 8;
    let setup = abi::cutlass_aot_grouped_setup_args {
        arrays: Default::default(),
        offsets: args.offsets.0 as *const i32,
        group_count: args.experts as i32,
        n: n as i32,
        k: k as i32,
        total_rows: rows as i32,
        a: args.a.0 as *const c_void,
        b: args.b.0 as *const c_void,
        c: args.c.map_or(std::ptr::null(), |(c, _)| c as *const c_void),
        d: args.d.0 as *mut c_void,
        lda: args.lda as i64,
        ldb: args.ldb as i64,
        ldc: args.ldc as i64,
        ldd: args.ldd as i64,
        row_step_a: args.lda as i64 * bytes(op.a.element),
        row_step_c: args.ldc as i64 * bytes(op.c.element),
        row_step_d: args.ldd as i64 * bytes(op.c.element),
        group_step_b: args.b_stride as i64 * bytes(op.b.element),
    };
    let mut grouped = grouped_args(args.experts, &device, (alpha, beta, args.activation_arg));
    apply_tuning(info, &mut grouped, args.tuning)?;
    Ok((grouped, Upload::Setup(setup), BlockLayout::new(args.experts)))
}
