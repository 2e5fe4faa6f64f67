//! One model for every kernel, whatever it computes: an **operation** part (what it computes, with
//! its operands' types, layouts and alignments), a **design** part (how it is built: CUTLASS 2.x or
//! 3.x choices) and an **epilogue** part — the CUTLASS API's `KernelMetadata { operands, design,
//! epilogue }`. The build-time generator and the run-time registry both describe kernels with these
//! types, so discovery filters on the same values the manifest spelled.

use core::fmt;

use crate::{
    Api, DType, Epilogue, EpilogueSchedule, Fusion, KernelSchedule, Layout, MathOp, OpClass, Shape3, SplitK,
    Swizzle, TileScheduler,
};

spelled_enum! {
    /// What a kernel computes: the manifest's `kind`.
    OperationKind {
        /// D = alpha·A·B + beta·C, plain, split-K, batched or array (CUTLASS's universal GEMM).
        Gemm = "gemm",
        /// A list of independent GEMMs, each with its own extents and operands, in one launch.
        GemmGrouped = "gemm_grouped",
        /// 2-D convolution, forward: output = conv(activation, filter) (implicit GEMM).
        Conv2dFprop = "conv2d_fprop",
        /// 2-D convolution, data gradient: activation grad = conv_transpose(output grad, filter).
        Conv2dDgrad = "conv2d_dgrad",
        /// 2-D convolution, weight gradient: filter grad = correlation of output grad and activation.
        Conv2dWgrad = "conv2d_wgrad",
        /// A user kernel (`kind: custom`): its own source, parameters and launch shape.
        Custom = "custom",
        /// `d = scale·act(alpha·x ⊕ beta·y)` element by element, y broadcast or absent.
        Elementwise = "elementwise",
    }
}

impl OperationKind {
    /// The convolution a conv kind computes; `None` for the GEMM kinds.
    pub fn conv_kind(self) -> Option<ConvKind> {
        match self {
            OperationKind::Conv2dFprop => Some(ConvKind::Fprop),
            OperationKind::Conv2dDgrad => Some(ConvKind::Dgrad),
            OperationKind::Conv2dWgrad => Some(ConvKind::Wgrad),
            OperationKind::Gemm
            | OperationKind::GemmGrouped
            | OperationKind::Custom
            | OperationKind::Elementwise => None,
        }
    }
}

spelled_enum! {
    /// Which of a convolution's three products a conv kernel computes. Tensors are channels-last:
    /// the activation NHWC, the filter KRSC, the output NPQK; as an implicit GEMM,
    /// `D = alpha·conv(A, B) + beta·C` with these roles:
    ///
    /// | kind  | A            | B          | C, D          | GEMM M × N × K   |
    /// |-------|--------------|------------|---------------|------------------|
    /// | fprop | activation   | filter     | output        | NPQ × K × RSC    |
    /// | dgrad | output grad  | filter     | activation grad | NHW × C × KRS  |
    /// | wgrad | output grad  | activation | filter grad   | K × RSC × NPQ    |
    ConvKind {
        Fprop = "fprop",
        Dgrad = "dgrad",
        Wgrad = "wgrad",
    }
}

impl ConvKind {
    /// CUTLASS's `conv::Operator`.
    pub fn cutlass_operator(self) -> &'static str {
        match self {
            ConvKind::Fprop => "cutlass::conv::Operator::kFprop",
            ConvKind::Dgrad => "cutlass::conv::Operator::kDgrad",
            ConvKind::Wgrad => "cutlass::conv::Operator::kWgrad",
        }
    }

    /// The implicit GEMM's matrix layouts of A, B and C/D over tensors of `layout`. Channels
    /// last: the contiguous channel dimension is K of the GEMM for fprop's A and B, N of the GEMM
    /// for dgrad's B, M for wgrad's A. Interleaved (int8 fprop): CUTLASS's n32 t32 n32, the
    /// matrix layouts its interleaved convolutions compute in.
    pub fn gemm_layouts(self, layout: ConvLayout) -> [Layout; 3] {
        match (layout, self) {
            (ConvLayout::Interleaved32, _) => [
                Layout::ColumnInterleaved32,
                Layout::RowInterleaved32,
                Layout::ColumnInterleaved32,
            ],
            (ConvLayout::ChannelsLast, ConvKind::Fprop) => [Layout::Row, Layout::Column, Layout::Row],
            (ConvLayout::ChannelsLast, ConvKind::Dgrad) => [Layout::Row, Layout::Row, Layout::Row],
            (ConvLayout::ChannelsLast, ConvKind::Wgrad) => [Layout::Column, Layout::Row, Layout::Row],
        }
    }
}

spelled_enum! {
    /// How a CUTLASS 2.x conv kernel walks the activation (CUTLASS's `conv::IteratorAlgorithm`).
    IteratorAlgorithm {
        /// Computes every coordinate: any problem.
        Analytic = "analytic",
        /// Precomputed increments: faster; needs C (fprop, wgrad: A's channels) a multiple of
        /// the alignment, as every iterator with vector accesses does.
        Optimized = "optimized",
        /// fprop only: C equals the kernel's alignment (the 3-channel RGB stem padded to 4 or 8).
        FixedChannels = "fixed_channels",
        /// fprop only: C a multiple of the (small) alignment, vectors never cross a pixel.
        FewChannels = "few_channels",
        /// fprop only, ours (`cutlass_glue/.../conv_first_layer.cuh`, not a CUTLASS iterator): C
        /// equals the alignment (2, 4 or 8: the RGB stem padded to 4); each CTA stages the input
        /// patch of its output tile in shared memory, where every filter tap reads it, and keeps
        /// its slice of the filter resident. No split-K.
        FirstLayer = "first_layer",
    }
}

impl IteratorAlgorithm {
    /// CUTLASS's enumerator, for CUTLASS's own iterators (`None` for `first_layer`, ours).
    pub fn cutlass_value(self) -> Option<&'static str> {
        match self {
            IteratorAlgorithm::Analytic => Some("cutlass::conv::IteratorAlgorithm::kAnalytic"),
            IteratorAlgorithm::Optimized => Some("cutlass::conv::IteratorAlgorithm::kOptimized"),
            IteratorAlgorithm::FixedChannels => Some("cutlass::conv::IteratorAlgorithm::kFixedChannels"),
            IteratorAlgorithm::FewChannels => Some("cutlass::conv::IteratorAlgorithm::kFewChannels"),
            IteratorAlgorithm::FirstLayer => None,
        }
    }

    /// Whether the kernel reads exactly `alignment` channels per pixel (C must equal it).
    pub fn fixed_channel_count(self) -> bool {
        matches!(
            self,
            IteratorAlgorithm::FixedChannels | IteratorAlgorithm::FirstLayer
        )
    }
}

spelled_enum! {
    /// How a conv kernel's tensors sit in memory. Whatever the layout, a tensor's extents are given
    /// logically: activation `[n, h, w, c]`, filter `[k, r, s, c]`, output `[n, p, q, k]`.
    ConvLayout {
        /// Channels last: activation NHWC, filter KRSC, output NPQK.
        ChannelsLast = "nhwc",
        /// CUTLASS's interleaved int8 layouts (its `TensorNCxHWx<32>` and `TensorCxRSKx<32>`):
        /// activation and output NC32HW32 (`[n][c / 32][h][w][c % 32]`), filter C32RSK32
        /// (`[c / 32][r][s][k][c % 32]`); channels and output channels multiples of 32. int8 fprop
        /// on CUTLASS 2.x only.
        Interleaved32 = "nc32hw32",
    }
}

impl ConvLayout {
    /// CUTLASS's layouts of the activation, the filter and the output.
    pub fn cutlass_types(self) -> [&'static str; 3] {
        match self {
            ConvLayout::ChannelsLast => [
                "cutlass::layout::TensorNHWC",
                "cutlass::layout::TensorNHWC",
                "cutlass::layout::TensorNHWC",
            ],
            ConvLayout::Interleaved32 => [
                "cutlass::layout::TensorNCxHWx<32>",
                "cutlass::layout::TensorCxRSKx<32>",
                "cutlass::layout::TensorNCxHWx<32>",
            ],
        }
    }

    /// The names of the activation's, the filter's and the output's layouts, for messages.
    pub fn tensor_names(self) -> [&'static str; 3] {
        match self {
            ConvLayout::ChannelsLast => ["NHWC", "KRSC", "NPQK"],
            ConvLayout::Interleaved32 => ["NC32HW32", "C32RSK32", "NK32PQ32"],
        }
    }

    /// The channel interleave: every channel count (C and K) must be a multiple of it.
    pub fn interleave(self) -> Option<u32> {
        match self {
            ConvLayout::ChannelsLast => None,
            ConvLayout::Interleaved32 => Some(32),
        }
    }
}

spelled_enum! {
    /// Which convolution strides a CUTLASS 2.x dgrad kernel handles (`conv::StrideSupport`).
    StrideSupport {
        /// Any stride (dgrad: CUTLASS's strided-dgrad kernel, which cannot split K at stride > 1
        /// nor take a dilation).
        Strided = "strided",
        /// Stride 1 only (dgrad: the faster unity-stride iterators); refuses stride > 1.
        Unity = "unity",
    }
}

impl StrideSupport {
    pub fn cutlass_value(self) -> &'static str {
        match self {
            StrideSupport::Strided => "cutlass::conv::StrideSupport::kStrided",
            StrideSupport::Unity => "cutlass::conv::StrideSupport::kUnity",
        }
    }
}

/// A 2-D convolution as its implicit GEMM: `gemm` holds the element types, alignments (of A, B
/// and C in the roles of [`ConvKind`]), accumulator and math, with the GEMM view's layouts
/// ([`ConvKind::gemm_layouts`]); `layout` says how the tensors themselves are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvOperation {
    pub kind: ConvKind,
    pub gemm: GemmOperation,
    pub layout: ConvLayout,
    pub iterator: IteratorAlgorithm,
    pub stride_support: StrideSupport,
}

spelled_enum! {
    /// How a CUTLASS 2.x grouped kernel finds the tiles of its problems (PyCUTLASS's scheduling
    /// modes). CUTLASS 3.x grouped kernels always schedule on the device.
    GroupSchedule {
        /// The kernel's problem visitor walks the problem list on the device.
        Device = "device",
        /// The schedule is precomputed on the host and uploaded with the arguments (needs the
        /// problem sizes on the host).
        Host = "host",
    }
}

spelled_enum! {
    /// How a CUTLASS 3.x GEMM kernel takes a batch (CUTLASS 2.x kernels do both at run time).
    BatchMode {
        /// Matrices at fixed strides (CUTLASS's `kBatched`, an L mode of the problem shape).
        Strided = "strided",
        /// Matrices anywhere, given by device arrays of pointers (CUTLASS's pointer-array kernels
        /// over an `ArrayProblemShape`, `kArray`); such a kernel runs array mode only.
        Array = "array",
    }
}

/// One operand's element type, layout and alignment (in elements: contiguous extents, leading
/// dimensions, batch strides and addresses must be multiples of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorAttributes {
    pub element: DType,
    pub layout: Layout,
    pub alignment: u32,
}

/// The operands of a GEMM-shaped operation: D (m×n) = alpha·A (m×k)·B (k×n) + beta·C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmOperation {
    pub a: TensorAttributes,
    pub b: TensorAttributes,
    /// C and D (same type and layout).
    pub c: TensorAttributes,
    pub accumulator: DType,
    /// The MMA's math (f32 operands as TF32, 3xTF32, fast f16/bf16; saturating integers).
    pub math: MathOp,
}

/// A grouped GEMM: independent GEMMs with these operand types, each with its own extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupedGemmOperation {
    pub gemm: GemmOperation,
    pub schedule: GroupSchedule,
}

/// What a kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    Gemm(GemmOperation),
    GemmGrouped(GroupedGemmOperation),
    Conv2d(ConvOperation),
    /// A user kernel: the user's name for what it computes, and its parameters.
    Custom(crate::custom::CustomOperation),
    Elementwise(crate::elementwise::ElementwiseOperation),
}

impl Operation {
    pub fn kind(&self) -> OperationKind {
        match self {
            Operation::Gemm(_) => OperationKind::Gemm,
            Operation::GemmGrouped(_) => OperationKind::GemmGrouped,
            Operation::Conv2d(c) => match c.kind {
                ConvKind::Fprop => OperationKind::Conv2dFprop,
                ConvKind::Dgrad => OperationKind::Conv2dDgrad,
                ConvKind::Wgrad => OperationKind::Conv2dWgrad,
            },
            Operation::Custom(_) => OperationKind::Custom,
            Operation::Elementwise(_) => OperationKind::Elementwise,
        }
    }

    /// The GEMM operands of a GEMM-shaped operation (plain and grouped GEMM; a convolution's
    /// implicit GEMM).
    ///
    /// # Panics
    /// On a user kernel (`Operation::Custom`) or an elementwise kernel, which have no GEMM
    /// operands. Registries list those apart (`Registry::user_kernels`, `Registry::elementwise`),
    /// so the lists of GEMM-shaped kernels never meet one; use [`Operation::gemm_operands`] where
    /// either may come.
    pub fn gemm(&self) -> &GemmOperation {
        match self.gemm_operands() {
            Some(g) => g,
            None => panic!(
                "a {} kernel has no GEMM operands; use Operation::gemm_operands",
                self.kind()
            ),
        }
    }

    /// The GEMM operands, or `None` for a user kernel or an elementwise kernel.
    pub fn gemm_operands(&self) -> Option<&GemmOperation> {
        match self {
            Operation::Gemm(g) => Some(g),
            Operation::GemmGrouped(g) => Some(&g.gemm),
            Operation::Conv2d(c) => Some(&c.gemm),
            Operation::Custom(_) | Operation::Elementwise(_) => None,
        }
    }

    /// The elementwise kernel's operation.
    pub fn elementwise(&self) -> Option<&crate::elementwise::ElementwiseOperation> {
        match self {
            Operation::Elementwise(e) => Some(e),
            _ => None,
        }
    }

    /// The user kernel's operation.
    pub fn custom(&self) -> Option<&crate::custom::CustomOperation> {
        match self {
            Operation::Custom(c) => Some(c),
            _ => None,
        }
    }

    /// The convolution of a conv kernel.
    pub fn conv(&self) -> Option<&ConvOperation> {
        match self {
            Operation::Conv2d(c) => Some(c),
            _ => None,
        }
    }
}

/// How a CUTLASS 2.x kernel is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Design2x {
    pub opclass: OpClass,
    pub tile: Shape3,
    /// Warps per threadblock.
    pub warps: Shape3,
    /// The MMA instruction.
    pub instruction: Shape3,
    pub stages: u32,
    pub swizzle: Swizzle,
    /// How K is split when a launch asks for split-K slices.
    pub split_k: SplitK,
}

impl Design2x {
    /// Warp tile = threadblock tile / warp count.
    pub fn warp_tile(&self) -> Shape3 {
        let w = |t: u32, n: u32| t.checked_div(n).unwrap_or(0);
        Shape3::new(
            w(self.tile.m, self.warps.m),
            w(self.tile.n, self.warps.n),
            w(self.tile.k, self.warps.k),
        )
    }

    pub fn threads(&self) -> u32 {
        32 * self.warps.m * self.warps.n * self.warps.k
    }
}

/// How a CUTLASS 3.x kernel (collective builders, sm_90a) is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Design3x {
    pub opclass: OpClass,
    pub tile: Shape3,
    /// Cluster shape in CTAs.
    pub cluster: Shape3,
    /// Pipeline stages; 0 = as many as fit.
    pub stages: u32,
    pub schedule: KernelSchedule,
    pub epilogue_schedule: EpilogueSchedule,
    pub tile_scheduler: TileScheduler,
    /// Strided batches, or pointer arrays (a pointer-array kernel).
    pub batch_mode: BatchMode,
}

/// How a kernel is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Design {
    Cutlass2x(Design2x),
    Cutlass3x(Design3x),
    /// A user kernel's design values and launch shape (by reference: it is several times the size
    /// of the CUTLASS designs).
    Custom(&'static crate::custom::CustomDesign),
    /// An elementwise kernel's launch design.
    Elementwise(crate::elementwise::ElementwiseDesign),
}

impl Design {
    pub fn api(&self) -> Api {
        match self {
            Design::Cutlass2x(_) => Api::Cutlass2x,
            Design::Cutlass3x(_) => Api::Cutlass3x,
            Design::Custom(d) => d.code,
            // Built like CUTLASS 2.x kernels: sm_80 SASS that also runs on newer devices.
            Design::Elementwise(_) => Api::Cutlass2x,
        }
    }

    pub fn opclass(&self) -> OpClass {
        match self {
            Design::Cutlass2x(d) => d.opclass,
            Design::Cutlass3x(d) => d.opclass,
            // The user's own code: no tensor-op choice the model knows of.
            Design::Custom(_) | Design::Elementwise(_) => OpClass::Simt,
        }
    }

    /// The threadblock (CTA) tile.
    pub fn tile(&self) -> Shape3 {
        match self {
            Design::Cutlass2x(d) => d.tile,
            Design::Cutlass3x(d) => d.tile,
            Design::Custom(d) => d.tile,
            // The elements one block moves per step of its loop.
            Design::Elementwise(d) => Shape3::new(d.threads * d.unroll * d.vector_elements, 1, 1),
        }
    }

    /// Pipeline stages (0: as many as fit).
    pub fn stages(&self) -> u32 {
        match self {
            Design::Cutlass2x(d) => d.stages,
            Design::Cutlass3x(d) => d.stages,
            Design::Custom(_) | Design::Elementwise(_) => 0,
        }
    }

    /// The cluster shape (1x1x1 for CUTLASS 2.x).
    pub fn cluster(&self) -> Shape3 {
        match self {
            Design::Cutlass2x(_) | Design::Custom(_) | Design::Elementwise(_) => Shape3::new(1, 1, 1),
            Design::Cutlass3x(d) => d.cluster,
        }
    }

    /// How K is split when a launch asks for split-K slices: a 2.x kernel's manifest choice;
    /// 3.x stream-K kernels split in their scheduler, other 3.x kernels cannot.
    pub fn split_k(&self) -> SplitK {
        match self {
            Design::Cutlass2x(d) => d.split_k,
            Design::Cutlass3x(d) => match d.tile_scheduler {
                TileScheduler::StreamK => SplitK::StreamK,
                TileScheduler::Persistent => SplitK::None,
            },
            Design::Custom(_) | Design::Elementwise(_) => SplitK::None,
        }
    }

    pub fn as_2x(&self) -> Option<&Design2x> {
        match self {
            Design::Cutlass2x(d) => Some(d),
            Design::Cutlass3x(_) | Design::Custom(_) | Design::Elementwise(_) => None,
        }
    }

    pub fn as_elementwise(&self) -> Option<&crate::elementwise::ElementwiseDesign> {
        match self {
            Design::Elementwise(d) => Some(d),
            _ => None,
        }
    }

    pub fn as_custom(&self) -> Option<&crate::custom::CustomDesign> {
        match self {
            Design::Custom(d) => Some(d),
            _ => None,
        }
    }

    pub fn as_3x(&self) -> Option<&Design3x> {
        match self {
            Design::Cutlass3x(d) => Some(d),
            Design::Cutlass2x(_) | Design::Custom(_) | Design::Elementwise(_) => None,
        }
    }
}

/// What the epilogue computes from the accumulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EpilogueSpec {
    /// The linear combination and its clamp.
    pub kind: Epilogue,
    /// The type alpha, beta and the epilogue's arithmetic use.
    pub compute: DType,
    /// Activation, bias, scale vectors, aux output or input, residual, row sums.
    pub fusion: Fusion,
}

/// Everything a kernel is, but its names and code: the part generator and runtime share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelSpec {
    /// Minimum compute capability, `major * 10 + minor`; CUTLASS 3.x kernels (sm_90a code) run
    /// only on exactly this one.
    pub min_compute_capability: u32,
    pub operation: Operation,
    pub design: Design,
    pub epilogue: EpilogueSpec,
}
