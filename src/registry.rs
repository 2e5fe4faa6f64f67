//! Kernel metadata and discovery — the CUTLASS API's `get_kernels(args, metadata_filter)` and
//! `supports(args)`, ahead of time: every compiled kernel is listed with its metadata, can be
//! queried by problem and by predicate, and explains why it cannot run a problem.

use std::ffi::CStr;
use std::fmt;

use crate::abi;
use crate::fusion::FusionOperands;
use crate::image::Image;
use crate::model::{
    Api, DType, Epilogue, EpilogueSchedule, Fusion, KernelSchedule, Layout, MathOp, OpClass, Reduction,
    Shape3, SplitK, Swizzle, TileScheduler,
};

/// Everything known about one compiled kernel. Generated code creates one `static` per kernel.
#[derive(Debug)]
pub struct KernelInfo {
    /// The name in CUTLASS's library naming (cross-checkable with CUTLASS's profiler).
    pub name: &'static str,
    /// The generated Rust module of the kernel.
    pub rust_name: &'static str,
    /// Manifest entry it came from (`file:line`).
    pub origin: &'static str,
    /// Minimum compute capability, `major * 10 + minor`. CUTLASS 3.x kernels (sm_90a code) run
    /// only on exactly this one.
    pub min_compute_capability: u32,
    /// CUTLASS 2.x or 3.x.
    pub api: Api,
    pub opclass: OpClass,
    pub element_a: DType,
    pub element_b: DType,
    pub element_c: DType,
    pub element_accumulator: DType,
    pub element_epilogue: DType,
    pub layout_a: Layout,
    pub layout_b: Layout,
    pub layout_c: Layout,
    /// Alignments in elements: contiguous extents, leading dimensions, batch strides and pointers
    /// must be multiples of these.
    pub alignment_a: u32,
    pub alignment_b: u32,
    pub alignment_c: u32,
    pub tile: Shape3,
    /// Cluster shape in CTAs (1x1x1 for 2.x).
    pub cluster: Shape3,
    /// Warps per threadblock (2.x; 0x0x0 for 3.x, whose schedule decides).
    pub warps: Shape3,
    /// MMA instruction (2.x; 0x0x0 for 3.x).
    pub instruction: Shape3,
    /// Pipeline stages; 0 = as many as fit (3.x `auto`).
    pub stages: u32,
    pub math: MathOp,
    pub swizzle: Swizzle,
    /// How the kernel splits K when a launch asks for split-K slices.
    pub split_k: SplitK,
    pub epilogue: Epilogue,
    /// Activation, bias, scale vectors, aux output or input, residual and row sums fused into the
    /// epilogue (what the kernel computes per element, and which extra operands a launch takes).
    pub fusion: Fusion,
    /// 3.x scheduling (2.x kernels: Auto, Auto, Persistent).
    pub schedule: KernelSchedule,
    pub epilogue_schedule: EpilogueSchedule,
    pub tile_scheduler: TileScheduler,
    #[doc(hidden)]
    pub image: &'static Image,
    #[doc(hidden)]
    pub entry: &'static CStr,
    #[doc(hidden)]
    pub prepare: abi::cutlass_aot_gemm_prepare_fn,
    /// The split-K reduction kernel built with a parallel split-K kernel.
    #[doc(hidden)]
    pub reduction: Option<&'static SplitKReduction>,
}

/// The reduction kernel of a parallel split-K kernel: it adds the partial sums the GEMM left in the
/// workspace, applies alpha, beta and C, and writes D.
#[derive(Debug)]
pub struct SplitKReduction {
    pub entry: &'static CStr,
    pub prepare: abi::cutlass_aot_gemm_prepare_fn,
}

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

    /// Splits K into `slices` (see [`KernelInfo::split_k`]).
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

/// Why a kernel cannot run a problem: every reason found, not just the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub kernel: &'static str,
    pub reasons: Vec<String>,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cannot run this problem: {}",
            self.kernel,
            self.reasons.join("; ")
        )
    }
}

impl std::error::Error for Unsupported {}

impl KernelInfo {
    /// Whether this binary holds device code for the kernel (false when built without nvcc).
    pub fn has_device_code(&self) -> bool {
        self.prepare.is_some() && self.image.has_code()
    }

    /// Whether a launch with `split_k_slices` may need a device workspace: stream-K scheduling,
    /// serial split-K semaphores, parallel split-K partial sums, a reduction's partial row sums and
    /// tile counters. Such launches go through the per-stream workspace cache.
    pub fn may_need_workspace(&self, split_k_slices: usize) -> bool {
        self.tile_scheduler == TileScheduler::StreamK
            || self.split_k == SplitK::Parallel
            || self.fusion.reduction != Reduction::None
            || split_k_slices > 1
    }

    /// K's tiles: the most split-K slices that each get at least one tile of K.
    pub fn k_tiles(&self, k: usize) -> usize {
        k.div_ceil(self.tile.k.max(1) as usize)
    }

    /// Whether the kernel's code runs on a device of compute capability `cc` (`major * 10 + minor`):
    /// 2.x kernels on their architecture and newer; 3.x kernels (sm_90a code, whose instructions
    /// exist on no other architecture) on exactly theirs.
    pub fn runs_on(&self, cc: u32) -> Result<(), String> {
        let need = self.min_compute_capability;
        let version = |v: u32| format!("{}.{}", v / 10, v % 10);
        match self.api {
            Api::Cutlass2x if cc < need => Err(format!(
                "the device has compute capability {} but the kernel needs {} or newer",
                version(cc),
                version(need)
            )),
            Api::Cutlass3x if cc != need => Err(format!(
                "the device has compute capability {} but this CUTLASS 3.x kernel is sm_{need}a code, \
                 which runs only on compute capability {} (Hopper)",
                version(cc),
                version(need)
            )),
            _ => Ok(()),
        }
    }

    /// Checks `problem` against this kernel; `Err` lists every reason it cannot run it.
    pub fn supports(&self, problem: &GemmProblem) -> Result<(), Unsupported> {
        let mut reasons = Vec::new();
        // Reasons are formatted only when a rule fails: supports() runs on every launch.
        let mut want = |ok: bool, reason: &dyn Fn() -> String| {
            if !ok {
                reasons.push(reason())
            }
        };
        for (operand, have, need) in [
            ("A", problem.element_a, self.element_a),
            ("B", problem.element_b, self.element_b),
            ("C/D", problem.element_c, self.element_c),
        ] {
            want(have == need, &|| {
                format!("{operand} is {have} but the kernel takes {need}")
            });
        }
        for (operand, have, need) in [
            ("A", problem.layout_a, self.layout_a),
            ("B", problem.layout_b, self.layout_b),
            ("C/D", problem.layout_c, self.layout_c),
        ] {
            want(have == need, &|| {
                format!("{operand} is {have}-major but the kernel takes {need}-major")
            });
        }
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
                self.alignment_a,
                problem.layout_a,
                (problem.m, problem.k),
                problem.lda,
                problem.batch_stride_a,
                problem.address_a,
                self.element_a,
            ),
            (
                "B",
                self.alignment_b,
                problem.layout_b,
                (problem.k, problem.n),
                problem.ldb,
                problem.batch_stride_b,
                problem.address_b,
                self.element_b,
            ),
            (
                "C/D",
                self.alignment_c,
                problem.layout_c,
                (problem.m, problem.n),
                problem.ldc,
                problem.batch_stride_c,
                problem.address_c,
                self.element_c,
            ),
        ];
        for (operand, align, layout, (rows, cols), ld, stride, address, element) in operands {
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
        self.split_k_rules(problem, &mut want);
        self.array_rules(problem, &mut want);
        self.epilogue_rules(problem, &mut want);
        if let Some(cc) = problem.compute_capability {
            let runs = self.runs_on(cc);
            want(runs.is_ok(), &|| runs.clone().err().unwrap_or_default());
        }
        want(self.has_device_code(), &|| {
            "this binary was built without device code (CUTLASS_AOT_NO_NVCC or DOCS_RS)".to_string()
        });
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(Unsupported {
                kernel: self.name,
                reasons,
            })
        }
    }
}

impl KernelInfo {
    /// Split-K slices against the kernel's split-K mode, K and the batch.
    fn split_k_rules(&self, problem: &GemmProblem, want: &mut impl FnMut(bool, &dyn Fn() -> String)) {
        let slices = problem.split_k_slices;
        want(slices >= 1, &|| {
            "split-K slices must be at least 1 (1: no split)".to_string()
        });
        if slices > 1 {
            want(self.split_k != SplitK::None, &|| {
                format!(
                    "this kernel cannot split K ({} scheduler); use split-K slices 1, a stream-K kernel \
                        (`tile_scheduler: stream_k`) or a 2.x kernel",
                    self.tile_scheduler
                )
            });
            let tiles = self.k_tiles(problem.k);
            want(slices <= tiles, &|| {
                format!(
                    "{slices} split-K slices exceed K's {tiles} tile(s) of {} (k = {}): a slice must hold at \
                        least one tile; use at most {tiles}",
                    self.tile.k, problem.k
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
                !(self.split_k == SplitK::Serial && self.element_c == DType::S8),
                &|| {
                    "serial split-K would clamp the running sum to s8 between slices; use a kernel with \
                        `split_k: parallel` (partial sums in s32) or 1 slice"
                        .to_string()
                },
            );
        }
        if self.split_k == SplitK::Parallel {
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
    fn epilogue_rules(&self, problem: &GemmProblem, want: &mut impl FnMut(bool, &dyn Fn() -> String)) {
        crate::fusion::fusion_rules(&self.fusion, &problem.fusion, want);
        match problem.epilogue {
            Some(epilogue) => want(self.epilogue == epilogue, &|| {
                format!(
                    "the kernel's epilogue is {} but the problem asks for {epilogue}",
                    self.epilogue
                )
            }),
            None => want(self.clamp_is_default(), &|| {
                format!(
                    "the kernel's epilogue is {}, which saturates D to {}'s range; ask for it with \
                     `with_epilogue`",
                    self.epilogue, self.element_c
                )
            }),
        }
        if let Some(operands) = &problem.fusion_operands {
            crate::fusion::operand_rules(self, operands, (problem.m, problem.n), want);
        }
        // Row sums of a batch would add every batch's rows into one vector.
        if self.fusion.reduction != Reduction::None {
            want(problem.batch_count == 1, &|| {
                format!(
                    "a kernel with a reduction ({}) reduces one GEMM, not a batch of {}",
                    self.fusion.reduction, problem.batch_count
                )
            });
        }
        if let Some(max_k) = self.epilogue.max_k() {
            want(problem.k <= max_k, &|| {
                format!(
                    "k = {} exceeds {max_k}, the largest K {} is exact for (it converts through f32 with a \
                     magic-number trick); use a kernel with linear_combination_clamp",
                    problem.k, self.epilogue
                )
            });
        }
    }

    /// Whether the kernel computes a plain GEMM (no fusion, no clamp beyond an s8 output's
    /// saturation): the kernels `cutlass_aot::dispatch` may pick for an unfused problem.
    pub fn is_plain(&self) -> bool {
        self.fusion.is_none() && self.clamp_is_default()
    }

    /// Whether the epilogue is the plain linear combination, or the clamp a 2.x s8 output gets
    /// by default (its saturation, not a choice).
    fn clamp_is_default(&self) -> bool {
        self.epilogue == Epilogue::LinearCombination
            || self.epilogue == Epilogue::default_for(self.api, self.element_c)
    }

    /// Array mode (operands given by device arrays of pointers) needs a CUTLASS 2.x kernel.
    fn array_rules(&self, problem: &GemmProblem, want: &mut impl FnMut(bool, &dyn Fn() -> String)) {
        if problem.pointer_arrays {
            want(self.api == Api::Cutlass2x, &|| {
                "array mode (pointer arrays) needs a CUTLASS 2.x kernel (arch 80); this binary's 3.x kernels \
                    take strided batches only"
                    .to_string()
            });
            want(!self.fusion.has_operands(), &|| {
                format!(
                    "array mode takes no epilogue operands or arguments, and this kernel's fusion ({}) needs \
                        them; use plain or batched mode",
                    self.fusion.label()
                )
            });
        }
    }
}

/// A set of kernels (generated: `cutlass_aot::kernels::REGISTRY`, or a downstream crate's own).
#[derive(Debug)]
pub struct Registry {
    kernels: &'static [&'static KernelInfo],
}

impl Registry {
    pub const fn new(kernels: &'static [&'static KernelInfo]) -> Self {
        Registry { kernels }
    }

    /// Every kernel, in manifest order.
    pub fn all(&self) -> &'static [&'static KernelInfo] {
        self.kernels
    }

    /// The kernel with this CUTLASS library name or Rust name.
    pub fn by_name(&self, name: &str) -> Option<&'static KernelInfo> {
        self.kernels
            .iter()
            .copied()
            .find(|k| k.name == name || k.rust_name == name)
    }

    /// Kernels matching a metadata predicate (the CUTLASS API's `metadata_filter`).
    pub fn filter<'s>(
        &'s self,
        predicate: impl Fn(&KernelInfo) -> bool + 's,
    ) -> impl Iterator<Item = &'static KernelInfo> + 's {
        self.kernels.iter().copied().filter(move |k| predicate(k))
    }

    /// Kernels that support `problem` and match `predicate` (the CUTLASS API's `get_kernels`).
    pub fn get_kernels<'s>(
        &'s self,
        problem: &'s GemmProblem,
        predicate: impl Fn(&KernelInfo) -> bool + 's,
    ) -> impl Iterator<Item = &'static KernelInfo> + 's {
        self.filter(predicate)
            .filter(move |k| k.supports(problem).is_ok())
    }
}
