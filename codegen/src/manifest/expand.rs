//! Expands an entry into kernels: the cross product of its family lists, then defaults per kernel.

use super::entry::Entry;
use super::values::Stages;
use crate::model::{
    Activation, Api, AuxInput, AuxOutput, BatchMode, Broadcast, ConvLayout, DType, Epilogue,
    EpilogueSchedule, Fusion, GemmKernel, GroupSchedule, IteratorAlgorithm, KernelSchedule, Layout, MathOp,
    OpClass, OperationKind, Reduction, Residual, Shape3, SplitK, StrideSupport, Swizzle, TileScheduler,
};

/// More kernels than this from one entry is surely a mistake (each one is compiled by nvcc).
pub const MAX_KERNELS_PER_ENTRY: usize = 4096;

/// How many fields an entry has (its `kind` and `name` aside).
const FIELDS: usize = 36;

/// How many kernels `entry` expands to.
pub fn count(e: &Entry) -> usize {
    lengths(e).iter().fold(1usize, |n, &len| n.saturating_mul(len))
}

/// The length of every field's list in field order (1 for a field left to its default).
fn lengths(e: &Entry) -> [usize; FIELDS] {
    fn len<T>(v: &Option<Vec<T>>) -> usize {
        v.as_ref().map_or(1, Vec::len)
    }
    [
        e.arch.len(),
        len(&e.opclass),
        e.a.len(),
        len(&e.b),
        len(&e.c),
        len(&e.accumulator),
        len(&e.epilogue_compute),
        e.layout_a.len(),
        e.layout_b.len(),
        len(&e.layout_c),
        len(&e.alignment),
        len(&e.alignment_c),
        e.tile.len(),
        len(&e.cluster),
        len(&e.warps),
        len(&e.instruction),
        len(&e.stages),
        len(&e.schedule),
        len(&e.epilogue_schedule),
        len(&e.tile_scheduler),
        len(&e.math),
        len(&e.swizzle),
        len(&e.split_k),
        len(&e.epilogue),
        len(&e.activation),
        len(&e.bias),
        len(&e.scale),
        len(&e.aux_output),
        len(&e.residual),
        len(&e.aux_input),
        len(&e.reduction),
        len(&e.group_schedule),
        len(&e.batch_mode),
        len(&e.iterator_algorithm),
        len(&e.stride_support),
        len(&e.tensor_layout),
    ]
}

/// Every kernel of `entry`, first field varying slowest (CUTLASS's generator nests its loops the
/// same way). `name` and `rust_name` are filled in; `origin` is `origin`.
pub fn expand(e: &Entry, origin: &str) -> Vec<GemmKernel> {
    let lengths = lengths(e);
    (0..count(e))
        .map(|n| {
            // Mixed-radix digits of n, last field fastest.
            let mut i = [0usize; FIELDS];
            let mut rest = n;
            for (digit, len) in i.iter_mut().zip(lengths).rev() {
                *digit = rest % len;
                rest /= len;
            }
            let kernel = resolve(
                Choice {
                    arch: e.arch[i[0]],
                    opclass: pick(&e.opclass, i[1]),
                    a: e.a[i[2]],
                    b: pick(&e.b, i[3]),
                    c: pick(&e.c, i[4]),
                    accumulator: pick(&e.accumulator, i[5]),
                    epilogue_compute: pick(&e.epilogue_compute, i[6]),
                    layout_a: e.layout_a[i[7]],
                    layout_b: e.layout_b[i[8]],
                    layout_c: pick(&e.layout_c, i[9]),
                    alignment: pick(&e.alignment, i[10]),
                    alignment_c: pick(&e.alignment_c, i[11]),
                    tile: e.tile[i[12]],
                    cluster: pick(&e.cluster, i[13]),
                    warps: pick(&e.warps, i[14]),
                    instruction: pick(&e.instruction, i[15]),
                    stages: pick(&e.stages, i[16]),
                    schedule: pick(&e.schedule, i[17]),
                    epilogue_schedule: pick(&e.epilogue_schedule, i[18]),
                    tile_scheduler: pick(&e.tile_scheduler, i[19]),
                    math: pick(&e.math, i[20]),
                    swizzle: pick(&e.swizzle, i[21]),
                    split_k: pick(&e.split_k, i[22]),
                    epilogue: pick(&e.epilogue, i[23]),
                    activation: pick(&e.activation, i[24]),
                    bias: pick(&e.bias, i[25]),
                    scale: pick(&e.scale, i[26]),
                    aux_output: pick(&e.aux_output, i[27]),
                    residual: pick(&e.residual, i[28]),
                    aux_input: pick(&e.aux_input, i[29]),
                    reduction: pick(&e.reduction, i[30]),
                    group_schedule: pick(&e.group_schedule, i[31]),
                    batch_mode: pick(&e.batch_mode, i[32]),
                    iterator_algorithm: pick(&e.iterator_algorithm, i[33]),
                    stride_support: pick(&e.stride_support, i[34]),
                    tensor_layout: pick(&e.tensor_layout, i[35]),
                },
                e.kind,
                origin,
            );
            let rust_name = match &e.name {
                Some(template) => template.render(&kernel),
                None => kernel.name.clone(),
            };
            GemmKernel {
                rust_name,
                feature: e.feature.clone(),
                ..kernel
            }
        })
        .collect()
}

fn pick<T: Copy>(values: &Option<Vec<T>>, i: usize) -> Option<T> {
    values.as_ref().map(|v| v[i])
}

/// One combination of values; `None` = not given.
struct Choice {
    arch: u32,
    opclass: Option<OpClass>,
    a: DType,
    b: Option<DType>,
    c: Option<DType>,
    accumulator: Option<DType>,
    epilogue_compute: Option<DType>,
    layout_a: Layout,
    layout_b: Layout,
    layout_c: Option<Layout>,
    alignment: Option<u32>,
    alignment_c: Option<u32>,
    tile: Shape3,
    cluster: Option<Shape3>,
    warps: Option<Shape3>,
    instruction: Option<Shape3>,
    stages: Option<Stages>,
    schedule: Option<KernelSchedule>,
    epilogue_schedule: Option<EpilogueSchedule>,
    tile_scheduler: Option<TileScheduler>,
    math: Option<MathOp>,
    swizzle: Option<Swizzle>,
    split_k: Option<SplitK>,
    epilogue: Option<Epilogue>,
    activation: Option<Activation>,
    bias: Option<Broadcast>,
    scale: Option<Broadcast>,
    aux_output: Option<AuxOutput>,
    residual: Option<Residual>,
    aux_input: Option<AuxInput>,
    reduction: Option<Reduction>,
    group_schedule: Option<GroupSchedule>,
    batch_mode: Option<BatchMode>,
    iterator_algorithm: Option<IteratorAlgorithm>,
    stride_support: Option<StrideSupport>,
    tensor_layout: Option<ConvLayout>,
}

/// Fills the defaults of the manifest format (documented in `mod.rs`). Keys of the other CUTLASS
/// generation (`warps` on arch 90, `cluster` on arch 80, ...) were reported by `arch_keys.rs`;
/// here they are ignored, so that the kernel's own rules can still be checked.
fn resolve(c: Choice, kind: OperationKind, origin: &str) -> GemmKernel {
    let opclass = c.opclass.unwrap_or(OpClass::TensorOp);
    let tensorop = opclass == OpClass::TensorOp;
    let accumulator = c.accumulator.unwrap_or(match c.a {
        DType::F64 => DType::F64,
        DType::S8 | DType::S32 => DType::S32,
        _ => DType::F32,
    });
    let element_c = c.c.unwrap_or(match c.a {
        DType::S8 => DType::S32,
        a => a,
    });
    let mut kernel = GemmKernel {
        name: String::new(),
        rust_name: String::new(),
        kind,
        group_schedule: c.group_schedule.unwrap_or(GroupSchedule::Device),
        batch_mode: c.batch_mode.unwrap_or(BatchMode::Strided),
        feature: None,
        arch: c.arch,
        opclass,
        element_a: c.a,
        element_b: c.b.unwrap_or(c.a),
        element_c,
        element_accumulator: accumulator,
        // An s8 or f32 output of s32 accumulators is scaled in f32 (as CUTLASS's int8 kernels do):
        // f32 → s8 conversion saturates, s32 → s8 would wrap.
        element_epilogue: c.epilogue_compute.unwrap_or(
            if accumulator == DType::S32 && element_c != DType::S32 && c.arch < 90 {
                DType::F32
            } else {
                accumulator
            },
        ),
        layout_a: c.layout_a,
        layout_b: c.layout_b,
        layout_c: c.layout_c.unwrap_or(Layout::Row),
        iterator_algorithm: c.iterator_algorithm.unwrap_or(IteratorAlgorithm::Optimized),
        stride_support: c.stride_support.unwrap_or(StrideSupport::Strided),
        conv_layout: c.tensor_layout.unwrap_or(ConvLayout::ChannelsLast),
        alignment_a: 0, // set below: the defaults of 2.x and 3.x kernels differ
        alignment_b: 0,
        alignment_c: 0, // set below: its default depends on the rest of the kernel
        tile: c.tile,
        cluster: Shape3::new(1, 1, 1),
        warps: Shape3::new(0, 0, 0),
        instruction: Shape3::new(0, 0, 0),
        stages: 0,
        schedule: KernelSchedule::Auto,
        epilogue_schedule: EpilogueSchedule::Auto,
        tile_scheduler: TileScheduler::Persistent,
        // The s8 tensor-op instructions exist only as saturating multiply-adds.
        math: c.math.unwrap_or(if c.a == DType::S8 && c.arch < 90 {
            MathOp::MultiplyAddSaturate
        } else {
            MathOp::MultiplyAdd
        }),
        swizzle: Swizzle::Identity8,
        split_k: SplitK::None,
        epilogue: Epilogue::LinearCombination, // set below: its default depends on the kernel
        fusion: Fusion {
            activation: c.activation.unwrap_or(Activation::Identity),
            bias: c.bias.unwrap_or(Broadcast::None),
            scale: c.scale.unwrap_or(Broadcast::None),
            aux_output: c.aux_output.unwrap_or(AuxOutput::None),
            residual: c.residual.unwrap_or(Residual::None),
            aux_input: c.aux_input.unwrap_or(AuxInput::None),
            reduction: c.reduction.unwrap_or(Reduction::None),
        },
        origin: origin.to_string(),
    };
    // A convolution's operands are tensors, seen by the rules (and CUTLASS) as its implicit
    // GEMM's matrices.
    if let Some(conv) = kind.conv_kind() {
        // arch_keys.rs reported a tensor_layout on arch 90; its kernels read channels-last tensors.
        if kernel.api() == Api::Cutlass3x {
            kernel.conv_layout = ConvLayout::ChannelsLast;
        }
        [kernel.layout_a, kernel.layout_b, kernel.layout_c] = conv.gemm_layouts(kernel.conv_layout);
    }
    let alignment = match kernel.api() {
        Api::Cutlass2x => {
            kernel.warps = c.warps.unwrap_or(Shape3::new(0, 0, 0));
            kernel.instruction = c.instruction.unwrap_or(match (opclass, c.a) {
                (OpClass::Simt, _) => Shape3::new(1, 1, 1),
                (OpClass::TensorOp, DType::F16 | DType::Bf16) => Shape3::new(16, 8, 16),
                (OpClass::TensorOp, DType::F32) => Shape3::new(16, 8, 8),
                (OpClass::TensorOp, DType::S8) => Shape3::new(16, 8, 32),
                // Hopper's DMMA on arch 90, Ampere's on 80.
                (OpClass::TensorOp, DType::F64) if c.arch >= 90 => Shape3::new(16, 8, 4),
                (OpClass::TensorOp, DType::F64) => Shape3::new(8, 8, 4),
                // Types of arch 90 only (rejected for arch 80): any shape will do.
                (OpClass::TensorOp, _) => Shape3::new(16, 8, 32),
            });
            kernel.stages = match c.stages {
                Some(Stages::Fixed(n)) => n,
                // `auto` was reported; fall back to the default.
                None | Some(Stages::Auto) => {
                    if tensorop {
                        3
                    } else {
                        4
                    }
                }
            };
            kernel.swizzle = c.swizzle.unwrap_or_else(|| kernel.default_swizzle());
            // Grouped kernels do not split K (a `split_k` given is reported by their rules).
            let split_default = if kind == OperationKind::GemmGrouped {
                SplitK::None
            } else {
                SplitK::Serial
            };
            kernel.split_k = c.split_k.unwrap_or(split_default);
            if tensorop {
                crate::model::max_ab_alignment(OpClass::TensorOp, c.a)
            } else {
                1
            }
        }
        Api::Cutlass3x => {
            kernel.cluster = c.cluster.unwrap_or(Shape3::new(1, 1, 1));
            kernel.stages = match c.stages {
                Some(Stages::Fixed(n)) => n,
                None | Some(Stages::Auto) => 0,
            };
            kernel.schedule = c.schedule.unwrap_or(KernelSchedule::Auto);
            kernel.epilogue_schedule = c.epilogue_schedule.unwrap_or(EpilogueSchedule::Auto);
            // Grouped kernels are persistent pointer-array kernels: cooperative where the tile is
            // tall enough for two consumer warp groups, else ping-pong; their epilogue goes
            // through shared memory with TMA unless asked otherwise.
            if kernel.is_pointer_array_3x() {
                if kernel.schedule == KernelSchedule::Auto {
                    kernel.schedule = if c.tile.m >= 128 {
                        KernelSchedule::Cooperative
                    } else {
                        KernelSchedule::Pingpong
                    };
                }
                if kernel.epilogue_schedule == EpilogueSchedule::Auto {
                    kernel.epilogue_schedule = EpilogueSchedule::Tma;
                }
            }
            kernel.tile_scheduler = c.tile_scheduler.unwrap_or(TileScheduler::Persistent);
            kernel.split_k = match kernel.tile_scheduler {
                TileScheduler::StreamK => SplitK::StreamK,
                TileScheduler::Persistent => SplitK::None,
            };
            // TMA moves 16-byte aligned rows: 128 bits of A (and B).
            c.a.max_alignment()
        }
    };
    // An s8 output of a 2.x kernel saturates: CUTLASS's plain linear combination would wrap.
    kernel.epilogue = c.epilogue.unwrap_or_else(|| kernel.default_epilogue());
    kernel.alignment_a = c.alignment.unwrap_or(alignment);
    kernel.alignment_b = kernel.alignment_a;
    kernel.alignment_c = c.alignment_c.unwrap_or_else(|| kernel.default_alignment_c());
    kernel.name = kernel.library_name();
    kernel
}
