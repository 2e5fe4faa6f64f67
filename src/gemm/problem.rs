//! A GEMM problem as discovery sees it, and the rules a GEMM kernel checks it by.

use crate::kernel::{KernelInfo, Problem, Want};
use crate::model::{
    Api, BatchMode, DType, Epilogue, Fusion, GemmOperation, Layout, OperationKind, Reduction, SplitK,
};

use super::fusion::FusionOperands;

/// A GEMM problem as discovery sees it: D (m×n) = alpha·A (m×k) · B (k×n) + beta·C, `batch_count`
/// times. Optional fields are checked when given.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmProblem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch_count: usize,
    pub element_a: DType,
    pub element_b: DType,
    pub element_c: DType,
    pub layout_a: Layout,
    pub layout_b: Layout,
    pub layout_c: Layout,
    /// Leading dimensions and batch strides, in elements, when known.
    pub lda: Option<usize>,
    pub ldb: Option<usize>,
    pub ldc: Option<usize>,
    pub batch_stride_a: Option<usize>,
    pub batch_stride_b: Option<usize>,
    pub batch_stride_c: Option<usize>,
    /// Byte addresses of the operands (only their alignment matters), when known.
    pub address_a: Option<u64>,
    pub address_b: Option<u64>,
    pub address_c: Option<u64>,
    /// Compute capability of the device that will run it (`major * 10 + minor`), when known.
    pub compute_capability: Option<u32>,
    /// K split into this many slices (1: no split), as the kernel's [`SplitK`] mode does it.
    pub split_k_slices: usize,
    /// Array mode: the operands of the `batch_count` GEMMs are given by device arrays of pointers
    /// (leading dimensions shared, batch strides unused).
    pub pointer_arrays: bool,
    /// The epilogue fusion the problem asks for ([`Fusion::NONE`]: D = alpha·A·B + beta·C).
    pub fusion: Fusion,
    /// The epilogue the problem asks for; `None`: no clamp beyond an s8 output's saturation (the
    /// kernels [`KernelInfo::is_plain`] accepts).
    pub epilogue: Option<Epilogue>,
    /// The fused operands that will be passed, when known: missing, extra, short or misaligned
    /// ones are reasons.
    pub fusion_operands: Option<FusionOperands>,
}

impl GemmProblem {
    /// A problem with the given extents and types; leading dimensions, addresses and device unknown.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        (m, n, k): (usize, usize, usize),
        (element_a, element_b, element_c): (DType, DType, DType),
        (layout_a, layout_b, layout_c): (Layout, Layout, Layout),
    ) -> Self {
        GemmProblem {
            m,
            n,
            k,
            batch_count: 1,
            element_a,
            element_b,
            element_c,
            layout_a,
            layout_b,
            layout_c,
            lda: None,
            ldb: None,
            ldc: None,
            batch_stride_a: None,
            batch_stride_b: None,
            batch_stride_c: None,
            address_a: None,
            address_b: None,
            address_c: None,
            compute_capability: None,
            split_k_slices: 1,
            pointer_arrays: false,
            fusion: Fusion::NONE,
            epilogue: None,
            fusion_operands: None,
        }
    }

    /// Asks for a kernel with `epilogue` (a clamp, say).
    pub fn with_epilogue(mut self, epilogue: Epilogue) -> Self {
        self.epilogue = Some(epilogue);
        self
    }

    /// Asks for an epilogue fusion (activation, bias, ...), and optionally checks the operands
    /// that will be passed.
    pub fn fused(mut self, fusion: Fusion, operands: Option<FusionOperands>) -> Self {
        self.fusion = fusion;
        self.fusion_operands = operands;
        self
    }

    pub fn batched(mut self, count: usize) -> Self {
        self.batch_count = count;
        self
    }

    pub fn on_compute_capability(mut self, cc: u32) -> Self {
        self.compute_capability = Some(cc);
        self
    }

    /// Splits K into `slices` (see [`Design::split_k`](crate::model::Design::split_k)).
    pub fn split_k(mut self, slices: usize) -> Self {
        self.split_k_slices = slices;
        self
    }

    /// Array mode: `count` GEMMs whose operands are given by device arrays of pointers.
    pub fn pointer_arrays(mut self, count: usize) -> Self {
        self.pointer_arrays = true;
        self.batch_count = count;
        self
    }
}

impl Problem for GemmProblem {
    fn operation(&self) -> OperationKind {
        OperationKind::Gemm
    }

    fn compute_capability(&self) -> Option<u32> {
        self.compute_capability
    }

    /// The GEMM's rules: types, layouts, extents, alignment of every operand, split-K, array
    /// mode and the epilogue.
    fn rules(&self, kernel: &KernelInfo, want: &mut impl Want) {
        let problem = self;
        let op = kernel.gemm();
        operand_rules(
            op,
            [problem.element_a, problem.element_b, problem.element_c],
            [problem.layout_a, problem.layout_b, problem.layout_c],
            want,
        );
        for (what, value) in [
            ("m", problem.m),
            ("n", problem.n),
            ("k", problem.k),
            ("batch count", problem.batch_count),
        ] {
            want((1..=i32::MAX as usize).contains(&value), &|| {
                format!("{what} = {value} must be between 1 and {}", i32::MAX)
            });
        }
        // CUTLASS 2.x puts the batch in grid z, which holds at most 65535 blocks; the batched
        // swizzle would even wrap it silently (batch_count % 65536).
        want(problem.batch_count <= 65535, &|| {
            format!(
                "batch count {} exceeds 65535, the grid z limit these kernels put batches in",
                problem.batch_count
            )
        });
        // The contiguous extent of each operand is read in vectors of `alignment` elements.
        let contiguous = |layout: Layout, rows: usize, cols: usize| match layout {
            Layout::Row => (cols, "columns"),
            Layout::Column => (rows, "rows"),
            Layout::ColumnInterleaved32 => (cols, "columns (interleaved in groups of 32)"),
            Layout::RowInterleaved32 => (rows, "rows (interleaved in groups of 32)"),
        };
        let operands = [
            (
                "A",
                op.a.alignment,
                problem.layout_a,
                (problem.m, problem.k),
                problem.lda,
                problem.batch_stride_a,
                problem.address_a,
                op.a.element,
            ),
            (
                "B",
                op.b.alignment,
                problem.layout_b,
                (problem.k, problem.n),
                problem.ldb,
                problem.batch_stride_b,
                problem.address_b,
                op.b.element,
            ),
            (
                "C/D",
                op.c.alignment,
                problem.layout_c,
                (problem.m, problem.n),
                problem.ldc,
                problem.batch_stride_c,
                problem.address_c,
                op.c.element,
            ),
        ];
        // A 3xTF32-by-splitting kernel reads A and B through its split, which takes any alignment.
        let split = super::split_tf32::is_split(kernel);
        for (operand, align, layout, (rows, cols), ld, stride, address, element) in operands {
            if split && operand != "C/D" {
                continue;
            }
            let align = align as usize;
            let (extent, what) = contiguous(layout, rows, cols);
            want(extent % align == 0, &|| {
                format!("{operand} has {extent} {what} (its contiguous extent), not a multiple of the kernel's alignment {align}")
            });
            // CUTLASS's interleaved iterators walk whole groups of 32.
            if let Some(interleave) = layout.interleave() {
                let interleave = interleave as usize;
                want(extent % interleave == 0, &|| {
                    format!("{operand} has {extent} {what}, not a multiple of the interleave {interleave}")
                });
            }
            if let Some(ld) = ld {
                want(ld % align == 0, &|| {
                    format!(
                        "leading dimension of {operand} ({ld}) is not a multiple of the alignment {align}"
                    )
                });
            }
            if let Some(stride) = stride {
                want(stride % align == 0, &|| {
                    format!("batch stride of {operand} ({stride}) is not a multiple of the alignment {align}")
                });
            }
            if let Some(address) = address {
                let bytes = (align * element.bits() as usize / 8) as u64;
                want(address % bytes == 0, &|| {
                    format!("{operand} starts at address {address:#x}, which is not {bytes}-byte aligned as the kernel requires")
                });
            }
        }
        split_k_rules(kernel, problem, want);
        array_rules(kernel, problem, want);
        epilogue_rules(kernel, problem, want);
    }
}

/// A GEMM-shaped kernel's operand types and layouts against a problem's (A, B, C/D): the first
/// rules of every GEMM-shaped operation.
pub(crate) fn operand_rules(
    op: &GemmOperation,
    elements: [DType; 3],
    layouts: [Layout; 3],
    want: &mut impl Want,
) {
    let kernel = [op.a, op.b, op.c];
    for (i, operand) in ["A", "B", "C/D"].into_iter().enumerate() {
        let (have, need) = (elements[i], kernel[i].element);
        want(have == need, &|| {
            format!("{operand} is {have} but the kernel takes {need}")
        });
    }
    for (i, operand) in ["A", "B", "C/D"].into_iter().enumerate() {
        let (have, need) = (layouts[i], kernel[i].layout);
        want(have == need, &|| {
            format!("{operand} is {have}-major but the kernel takes {need}-major")
        });
    }
}

/// The name of a 3.x kernel's tile scheduler (for messages), or "no" for a 2.x kernel.
fn tile_scheduler_name(kernel: &KernelInfo) -> String {
    kernel
        .design
        .as_3x()
        .map_or_else(|| "no".to_string(), |d| d.tile_scheduler.to_string())
}

/// Split-K slices against the kernel's split-K mode, K and the batch.
fn split_k_rules(kernel: &KernelInfo, problem: &GemmProblem, want: &mut impl Want) {
    let split_k = kernel.design.split_k();
    let slices = problem.split_k_slices;
    want(slices >= 1, &|| {
        "split-K slices must be at least 1 (1: no split)".to_string()
    });
    if slices > 1 {
        want(split_k != SplitK::None, &|| {
            format!(
                "this kernel cannot split K ({} scheduler); use split-K slices 1, a stream-K kernel \
                    (`tile_scheduler: stream_k`) or a 2.x kernel",
                tile_scheduler_name(kernel)
            )
        });
        let tiles = kernel.k_tiles(problem.k);
        want(slices <= tiles, &|| {
            format!(
                "{slices} split-K slices exceed K's {tiles} tile(s) of {} (k = {}): a slice must hold at \
                    least one tile; use at most {tiles}",
                kernel.tile().k,
                problem.k
            )
        });
        want(problem.batch_count == 1 && !problem.pointer_arrays, &|| {
            format!(
                "split-K ({slices} slices) cannot be combined with a batch of {} GEMMs; use 1 slice, or one GEMM",
                problem.batch_count
            )
        });
        want(slices <= 65535, &|| {
            format!("{slices} split-K slices exceed 65535, the grid z limit the slices are launched in")
        });
        // Serial split-K keeps the running sum in D between slices: an 8-bit integer D would
        // clamp partial sums.
        want(
            !(split_k == SplitK::Serial && kernel.gemm().c.element == DType::S8),
            &|| {
                "serial split-K would clamp the running sum to s8 between slices; use a kernel with \
                    `split_k: parallel` (partial sums in s32) or 1 slice"
                    .to_string()
            },
        );
    }
    if split_k == SplitK::Parallel {
        want(problem.batch_count == 1 && !problem.pointer_arrays, &|| {
            format!(
                "a parallel split-K kernel reduces one GEMM, not a batch of {}; use a kernel without \
                    `split_k: parallel` for batches",
                problem.batch_count
            )
        });
    }
}

/// The fusion asked for, its operands, and the fast clamp's K limit.
fn epilogue_rules(kernel: &KernelInfo, problem: &GemmProblem, want: &mut impl Want) {
    super::fusion::fusion_rules(&kernel.epilogue.fusion, &problem.fusion, want);
    match problem.epilogue {
        Some(epilogue) => want(kernel.epilogue.kind == epilogue, &|| {
            format!(
                "the kernel's epilogue is {} but the problem asks for {epilogue}",
                kernel.epilogue.kind
            )
        }),
        None => want(kernel.clamp_is_default(), &|| {
            format!(
                "the kernel's epilogue is {}, which saturates D to {}'s range; ask for it with \
                 `with_epilogue`",
                kernel.epilogue.kind,
                kernel.gemm().c.element
            )
        }),
    }
    if let Some(operands) = &problem.fusion_operands {
        super::fusion::operand_rules(kernel, operands, (problem.m, problem.n), want);
    }
    // Row sums of a batch would add every batch's rows into one vector.
    if kernel.epilogue.fusion.reduction != Reduction::None {
        want(problem.batch_count == 1, &|| {
            format!(
                "a kernel with a reduction ({}) reduces one GEMM, not a batch of {}",
                kernel.epilogue.fusion.reduction, problem.batch_count
            )
        });
    }
    if let Some(max_k) = kernel.epilogue.kind.max_k() {
        want(problem.k <= max_k, &|| {
            format!(
                "k = {} exceeds {max_k}, the largest K {} is exact for (it converts through f32 with a \
                 magic-number trick); use a kernel with linear_combination_clamp",
                problem.k, kernel.epilogue.kind
            )
        });
    }
}

/// Array mode (operands given by device arrays of pointers) needs a CUTLASS 2.x kernel.
fn array_rules(kernel: &KernelInfo, problem: &GemmProblem, want: &mut impl Want) {
    let pointer_array_3x = kernel
        .design
        .as_3x()
        .is_some_and(|d| d.batch_mode == BatchMode::Array);
    if problem.pointer_arrays {
        want(kernel.api() == Api::Cutlass2x || pointer_array_3x, &|| {
            "array mode (pointer arrays) needs a CUTLASS 2.x kernel (arch 80) or a 3.x pointer-array kernel \
                (`batch_mode: array`); this 3.x kernel takes strided batches only"
                .to_string()
        });
        want(!kernel.epilogue.fusion.has_operands(), &|| {
            format!(
                "array mode takes no epilogue operands or arguments, and this kernel's fusion ({}) needs \
                    them; use plain or batched mode",
                kernel.epilogue.fusion.label()
            )
        });
    } else {
        want(!pointer_array_3x, &|| {
            "this is a pointer-array kernel (`batch_mode: array`): it runs array mode only; pass the \
                matrices as pointer arrays (`run_array`, `array::launch_array_raw`) or use a strided kernel"
                .to_string()
        });
    }
}

impl KernelInfo {
    /// Whether the kernel computes a plain GEMM (no fusion, no clamp beyond an s8 output's
    /// saturation): the kernels `cutlass_aot::dispatch` may pick for an unfused problem.
    pub fn is_plain(&self) -> bool {
        self.epilogue.fusion.is_none() && self.clamp_is_default()
    }

    /// Whether the epilogue is the plain linear combination, or the clamp a 2.x s8 output gets
    /// by default (its saturation, not a choice).
    pub(crate) fn clamp_is_default(&self) -> bool {
        self.epilogue.kind == Epilogue::LinearCombination
            || self.epilogue.kind == Epilogue::default_for(self.api(), self.gemm().c.element)
    }
}
