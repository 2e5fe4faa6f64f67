//! The resolved kernel model: what one manifest entry expands into after validation.
//!
//! Everything downstream (C++ emission, Rust emission) reads these types only, never the raw YAML.
//! A GEMM-family entry (`gemm`, `gemm_grouped`) resolves into one flat [`GemmKernel`] whose every
//! field the validator checks; [`GemmKernel::spec`] gives the shared kernel model (operation,
//! design, epilogue) that the registry and discovery see.

pub use cutlass_aot_model::*;

/// The CUTLASS generation that builds a kernel of `arch` with A of type `a`: 3.x on arch 90, except
/// f64, which CUTLASS 3.x's collective builder lacks: f64 on arch 90 is a 2.x kernel on Hopper's
/// DMMA (16x8x4; as CUTLASS's own library generator builds it), 2.x on arch 80.
pub fn api_of(arch: u32, a: DType) -> Api {
    if arch >= 90 && a != DType::F64 {
        Api::Cutlass3x
    } else {
        Api::Cutlass2x
    }
}

/// One GEMM kernel — CUTLASS 2.x universal GEMM (`arch` 80) or CUTLASS 3.x collective-builder GEMM
/// (`arch` 90, sm_90a) — fully resolved (no defaults left to fill in).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GemmKernel {
    /// The name in CUTLASS's library naming; also the C symbol stem.
    pub name: String,
    /// Rust identifier of the typed function (the manifest's `name`, or derived from `name`).
    pub rust_name: String,
    /// What the kernel computes: a GEMM, or a grouped GEMM (the operands are alike).
    pub kind: OperationKind,
    /// How a 2.x grouped kernel schedules its problems (`Device` for every other kernel).
    pub group_schedule: GroupSchedule,
    /// The cargo feature the kernel is built under (`None`: always).
    pub feature: Option<String>,
    /// 3.x GEMM kernels: strided batches, or a pointer-array kernel (`Strided` for every other).
    pub batch_mode: BatchMode,
    /// Minimum compute capability, as `major * 10 + minor` (80 for sm_80). 90 selects CUTLASS 3.x
    /// kernels for sm_90a, which run only on compute capability 9.0 (f64: 2.x kernels on Hopper's
    /// DMMA, [`api_of`]).
    pub arch: u32,
    pub opclass: OpClass,
    pub element_a: DType,
    pub element_b: DType,
    pub element_c: DType,
    pub element_accumulator: DType,
    pub element_epilogue: DType,
    pub layout_a: Layout,
    pub layout_b: Layout,
    pub layout_c: Layout,
    pub alignment_a: u32,
    pub alignment_b: u32,
    pub alignment_c: u32,
    pub tile: Shape3,
    /// Cluster shape in CTAs (3.x); always 1x1x1 for 2.x.
    pub cluster: Shape3,
    /// Warp count per threadblock (2.x); 0x0x0 for 3.x, whose schedule decides.
    pub warps: Shape3,
    /// MMA instruction (2.x); 0x0x0 for 3.x, whose builder picks the warpgroup MMA.
    pub instruction: Shape3,
    /// Pipeline stages; 0 = as many as fit in shared memory (3.x `auto`).
    pub stages: u32,
    /// Kernel, epilogue and tile scheduling of 3.x kernels (Auto / Auto / Persistent for 2.x).
    pub schedule: KernelSchedule,
    pub epilogue_schedule: EpilogueSchedule,
    pub tile_scheduler: TileScheduler,
    pub math: MathOp,
    pub swizzle: Swizzle,
    /// How K is split when a launch asks for split-K slices (2.x: serial or parallel, from the
    /// manifest; 3.x: stream-K kernels split in their scheduler, others cannot).
    pub split_k: SplitK,
    pub epilogue: Epilogue,
    /// Activation, bias, scale vectors, aux output and residual fused into the epilogue.
    pub fusion: Fusion,
    /// Conv kernels (2.x): how the activation is walked (`Optimized` for every other kernel).
    pub iterator_algorithm: IteratorAlgorithm,
    /// Conv kernels (2.x): which strides the kernel handles (`Strided` for every other kernel).
    pub stride_support: StrideSupport,
    /// Conv kernels: how the tensors are stored (`ChannelsLast` for every other kernel).
    pub conv_layout: ConvLayout,
    /// Where the entry came from, for messages: `file:line`.
    pub origin: String,
}

impl GemmKernel {
    /// The kernel in the shared model: what it computes, how it is built, its epilogue.
    pub fn spec(&self) -> KernelSpec {
        let attributes = |element, layout, alignment| TensorAttributes {
            element,
            layout,
            alignment,
        };
        let gemm = GemmOperation {
            a: attributes(self.element_a, self.layout_a, self.alignment_a),
            b: attributes(self.element_b, self.layout_b, self.alignment_b),
            c: attributes(self.element_c, self.layout_c, self.alignment_c),
            accumulator: self.element_accumulator,
            math: self.math,
        };
        let operation = match (self.kind, self.conv_kind()) {
            (_, Some(kind)) => Operation::Conv2d(ConvOperation {
                kind,
                gemm,
                layout: self.conv_layout,
                iterator: self.iterator_algorithm,
                stride_support: self.stride_support,
            }),
            (OperationKind::GemmGrouped, None) => Operation::GemmGrouped(GroupedGemmOperation {
                gemm,
                schedule: self.group_schedule,
            }),
            (_, None) => Operation::Gemm(gemm),
        };
        let design = match self.api() {
            Api::Cutlass2x => Design::Cutlass2x(Design2x {
                opclass: self.opclass,
                tile: self.tile,
                warps: self.warps,
                instruction: self.instruction,
                stages: self.stages,
                swizzle: self.swizzle,
                split_k: self.split_k,
            }),
            Api::Cutlass3x => Design::Cutlass3x(Design3x {
                opclass: self.opclass,
                tile: self.tile,
                cluster: self.cluster,
                stages: self.stages,
                schedule: self.schedule,
                epilogue_schedule: self.epilogue_schedule,
                tile_scheduler: self.tile_scheduler,
                batch_mode: self.batch_mode,
            }),
        };
        KernelSpec {
            min_compute_capability: self.arch,
            operation,
            design,
            epilogue: EpilogueSpec {
                kind: self.epilogue,
                compute: self.element_epilogue,
                fusion: self.fusion,
            },
        }
    }

    /// The convolution a conv kernel computes (`None` for GEMM kernels).
    pub fn conv_kind(&self) -> Option<ConvKind> {
        self.kind.conv_kind()
    }

    /// Whether the kernel is a grouped GEMM.
    pub fn is_grouped(&self) -> bool {
        self.kind == OperationKind::GemmGrouped
    }

    /// Whether the kernel is a CUTLASS 3.x pointer-array kernel: a grouped kernel, or a GEMM that
    /// takes its batch as pointer arrays. Both are built from CUTLASS's pointer-array schedules.
    pub fn is_pointer_array_3x(&self) -> bool {
        self.api() == Api::Cutlass3x && (self.is_grouped() || self.batch_mode == BatchMode::Array)
    }

    /// CUTLASS 2.x or 3.x, decided by `arch` and A's type ([`api_of`]).
    pub fn api(&self) -> Api {
        api_of(self.arch, self.element_a)
    }

    /// Warp tile = threadblock tile / warp count.
    pub fn warp_tile(&self) -> Shape3 {
        Shape3::new(
            self.tile.m / self.warps.m,
            self.tile.n / self.warps.n,
            self.tile.k / self.warps.k,
        )
    }

    pub fn threads(&self) -> u32 {
        32 * self.warps.m * self.warps.n * self.warps.k
    }

    /// The name CUTLASS's library generator (`cutlass_library`) gives the same kernel, so a kernel can
    /// be cross-checked with CUTLASS's profiler: `cutlass_{opclass}_{extended}_{tile}_{layout}_align{a}`.
    ///
    /// Two additions keep names unique where CUTLASS's generator would never emit both kernels: a
    /// row-major C appends its letter to the layout (`tn` → `tnt`, as CUTLASS 3.x names do), and a
    /// non-default swizzle, epilogue compute type or C alignment is appended as a suffix.
    pub fn library_name(&self) -> String {
        if self.api() == Api::Cutlass3x {
            return self.library_name_3x();
        }
        let acc = self.element_accumulator;
        let core = match self.opclass {
            OpClass::TensorOp => {
                // f32 operands on tensor cores run through TF32, f16 or bf16 instructions (or
                // 3xTF32, which keeps f32 accuracy): CUTLASS names the intermediate type.
                let intermediate = match self.element_a {
                    DType::F32 => self.math.f32_intermediate().unwrap_or(""),
                    _ => "",
                };
                format!(
                    "{}{}{}{}{}{}",
                    acc.short_library_name(),
                    self.instruction.m,
                    self.instruction.n,
                    self.instruction.k,
                    intermediate,
                    self.operation_name()
                )
            }
            OpClass::Simt => format!("{}{}", acc.short_library_name(), self.operation_name()),
        };
        let mut extended = core;
        if self.element_c != acc {
            extended = format!("{}_{}", self.element_c.library_name(), extended);
        }
        if self.element_a != acc {
            extended = format!("{}_{}", extended, self.element_a.library_name());
        }
        let mut layout = format!("{}{}", self.layout_a.letter(), self.layout_b.letter());
        if self.layout_c == Layout::Row {
            layout.push_str(self.layout_c.letter());
        }
        if self.conv_kind().is_some() {
            // CUTLASS names a convolution's layout by its activation's: `nhwc` or `nc32hw32`.
            layout = self.conv_layout.to_string();
        }
        let mut name = format!(
            "cutlass_{}_{}_{}x{}_{}x{}_{}_align{}",
            self.opclass.manifest_name(),
            extended,
            self.tile.m,
            self.tile.n,
            self.tile.k,
            self.stages,
            layout,
            self.alignment_a
        );
        if self.alignment_c != self.default_alignment_c() {
            name.push_str(&format!("_c{}", self.alignment_c));
        }
        if self.element_epilogue != acc {
            name.push_str(&format!("_epi{}", self.element_epilogue.library_name()));
        }
        if self.swizzle != self.default_swizzle() {
            name.push_str(&format!("_{}", self.swizzle.manifest_name()));
        }
        if self.conv_kind().is_some() && self.stride_support == StrideSupport::Unity {
            name.push_str("_unity_stride");
        }
        if self.split_k == SplitK::Parallel {
            name.push_str("_splitk_parallel");
        }
        if self.is_grouped() && self.group_schedule == GroupSchedule::Host {
            name.push_str("_host_schedule");
        }
        name.push_str(&self.epilogue_suffix());
        name
    }

    /// The epilogue when the manifest names none: s8 outputs of 2.x kernels saturate (CUTLASS's
    /// plain linear combination would wrap).
    pub fn default_epilogue(&self) -> Epilogue {
        Epilogue::default_for(self.api(), self.element_c)
    }

    /// `_{epilogue}` for a non-default epilogue, then `_{fusion label}` for a fused one.
    fn epilogue_suffix(&self) -> String {
        let mut suffix = String::new();
        if self.epilogue != self.default_epilogue() {
            suffix = format!("_{}", self.epilogue.manifest_name());
        }
        if !self.fusion.is_none() {
            suffix.push_str(&format!("_{}", self.fusion.label()));
        }
        suffix
    }

    /// CUTLASS's 3.x naming: `cutlass3x_sm90_tensorop_gemm_{a}_{b}_{acc}_{c}_{d}_{tile}_{cluster}_
    /// {stages}_{layouts}_align{a}{schedule}{epilogue}{scheduler}`, where f32 operands are named
    /// `tf32` (they run as TF32) and stages 0 means automatic. As for 2.x, a non-default C
    /// alignment or epilogue compute type is appended.
    fn library_name_3x(&self) -> String {
        let operand = |d: DType| {
            if d == DType::F32 && self.math == MathOp::MultiplyAddFastF32 {
                // TF32 products of split operands (the runtime's 3xTF32, see cutlass_aot::gemm).
                "3xtf32"
            } else if d == DType::F32 {
                "tf32"
            } else {
                d.library_name()
            }
        };
        let (t, c) = (self.tile, self.cluster);
        let layouts = match self.conv_kind() {
            Some(_) => self.conv_layout.to_string(),
            None => format!(
                "{}{}{}",
                self.layout_a.letter(),
                self.layout_b.letter(),
                self.layout_c.letter()
            ),
        };
        let mut name = format!(
            "cutlass3x_sm{}a_{}_{}_{}_{}_{}_{}_{}_{}x{}x{}_{}x{}x{}_{}_{}_align{}{}{}{}",
            self.arch,
            self.opclass.manifest_name(),
            self.operation_name(),
            operand(self.element_a),
            operand(self.element_b),
            self.element_accumulator.library_name(),
            self.element_c.library_name(),
            self.element_c.library_name(),
            t.m,
            t.n,
            t.k,
            c.m,
            c.n,
            c.k,
            self.stages,
            layouts,
            self.alignment_a,
            self.schedule.library_suffix(),
            self.epilogue_schedule.library_suffix(),
            self.tile_scheduler.library_suffix(),
        );
        if self.alignment_c != self.default_alignment_c() {
            name.push_str(&format!("_c{}", self.alignment_c));
        }
        if self.element_epilogue != self.element_accumulator {
            name.push_str(&format!("_epi{}", self.element_epilogue.library_name()));
        }
        if self.batch_mode == BatchMode::Array {
            name.push_str("_array");
        }
        name.push_str(&self.epilogue_suffix());
        name
    }

    /// The operation in CUTLASS's names: `gemm`, or `gemm_grouped` (CUTLASS's `GemmKindNames`);
    /// a 2.x conv kernel's `fprop_optimized` (kind and iterator algorithm, CUTLASS's conv names),
    /// a 3.x one's `fprop`.
    fn operation_name(&self) -> String {
        match (self.conv_kind(), self.api()) {
            (Some(kind), Api::Cutlass2x) => format!("{kind}_{}", self.iterator_algorithm),
            (Some(kind), Api::Cutlass3x) => kind.manifest_name().to_string(),
            (None, _) if self.kind == OperationKind::GemmGrouped => "gemm_grouped".into(),
            (None, _) => "gemm".into(),
        }
    }

    /// The swizzle a kernel gets when the manifest names none: CUTLASS's generator uses
    /// `identity8` for GEMMs and `identity4` for convolutions.
    pub fn default_swizzle(&self) -> Swizzle {
        if self.conv_kind().is_some() {
            Swizzle::Identity4
        } else {
            Swizzle::Identity8
        }
    }

    /// C alignment a kernel gets when the manifest does not name one.
    pub fn default_alignment_c(&self) -> u32 {
        // CUTLASS's interleaved epilogue stores 64-bit vectors.
        let bits = if self.layout_c.interleave().is_some() {
            64
        } else {
            128
        };
        self.alignment_a.min(bits / self.element_c.bits())
    }
}
