//! The vocabulary of cutlass-aot kernels, shared by the build-time generator and the run-time
//! registry so that both spell every value the same way.
//!
//! Each enum knows its manifest spelling, its CUTLASS C++ spelling and its name in CUTLASS's library
//! naming, so the three can never drift apart. No dependencies: this crate ends up in user binaries.
#![no_std]

extern crate alloc;

use core::fmt;

/// Declares a closed set of manifest values with their spellings in one place.
macro_rules! spelled_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $spelling:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling used in `kernel_manifest.yaml`.
            pub fn manifest_name(self) -> &'static str {
                match self { $($name::$variant => $spelling),+ }
            }

            /// Parses the manifest spelling.
            pub fn from_manifest_name(s: &str) -> Option<Self> {
                match s { $($spelling => Some($name::$variant),)+ _ => None }
            }

            /// The allowed spellings, for error messages.
            pub fn allowed() -> alloc::string::String {
                Self::ALL.iter().map(|v| v.manifest_name()).collect::<alloc::vec::Vec<_>>().join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.manifest_name())
            }
        }
    };
}

pub mod custom;
pub mod elementwise;
mod kernel;
pub use kernel::*;

spelled_enum! {
    /// Element (storage) type of an operand, or an accumulator / compute type.
    DType {
        F16 = "f16",
        Bf16 = "bf16",
        F32 = "f32",
        F64 = "f64",
        /// 8-bit float, 4 exponent and 3 mantissa bits (Hopper tensor cores, CUTLASS 3.x only).
        E4m3 = "e4m3",
        /// 8-bit float, 5 exponent and 2 mantissa bits (Hopper tensor cores, CUTLASS 3.x only).
        E5m2 = "e5m2",
        /// Signed 8-bit integer.
        S8 = "s8",
        /// Signed 32-bit integer (the accumulator, and an output type, of s8 GEMMs).
        S32 = "s32",
    }
}

impl DType {
    pub fn bits(self) -> u32 {
        match self {
            DType::E4m3 | DType::E5m2 | DType::S8 => 8,
            DType::F16 | DType::Bf16 => 16,
            DType::F32 | DType::S32 => 32,
            DType::F64 => 64,
        }
    }

    /// CUTLASS C++ type.
    pub fn cutlass_type(self) -> &'static str {
        match self {
            DType::F16 => "cutlass::half_t",
            DType::Bf16 => "cutlass::bfloat16_t",
            DType::F32 => "float",
            DType::F64 => "double",
            DType::E4m3 => "cutlass::float_e4m3_t",
            DType::E5m2 => "cutlass::float_e5m2_t",
            DType::S8 => "int8_t",
            DType::S32 => "int32_t",
        }
    }

    /// Name in CUTLASS's library naming (`DataTypeNames`).
    pub fn library_name(self) -> &'static str {
        self.manifest_name()
    }

    /// One-letter accumulator prefix in CUTLASS's library naming (`ShortDataTypeNames`).
    pub fn short_library_name(self) -> &'static str {
        match self {
            DType::F16 => "h",
            DType::Bf16 => "bf16",
            DType::F32 => "s",
            DType::F64 => "d",
            DType::E4m3 => "e4m3",
            DType::E5m2 => "e5m2",
            DType::S8 => "i8",
            DType::S32 => "i",
        }
    }

    /// True for the integer types.
    pub fn is_integer(self) -> bool {
        matches!(self, DType::S8 | DType::S32)
    }

    /// Largest alignment (in elements) a 128-bit access allows.
    pub fn max_alignment(self) -> u32 {
        128 / self.bits()
    }
}

spelled_enum! {
    /// Memory layout of a matrix operand.
    Layout {
        /// Row-major (`t` in BLAS/CUTLASS naming).
        Row = "row",
        /// Column-major (`n` in BLAS/CUTLASS naming).
        Column = "column",
        /// CUTLASS's `ColumnMajorInterleaved<32>` (`n32`): columns in groups of 32, each group
        /// stored row by row, 32 contiguous elements per row (int8 tensor-op kernels).
        ColumnInterleaved32 = "column_interleaved_32",
        /// CUTLASS's `RowMajorInterleaved<32>` (`t32`) as its interleaved int8 GEMMs read B: rows in
        /// groups of 32, each group stored column by column, 32 contiguous elements per column, and
        /// the columns of each group of 32 reordered for the tensor cores (CUTLASS's
        /// `reorder_column<32>`; `cutlass_aot::verify::reordered_column` gives the order).
        RowInterleaved32 = "row_interleaved_32",
    }
}

impl Layout {
    pub fn cutlass_type(self) -> &'static str {
        match self {
            Layout::Row => "cutlass::layout::RowMajor",
            Layout::Column => "cutlass::layout::ColumnMajor",
            Layout::ColumnInterleaved32 => "cutlass::layout::ColumnMajorInterleaved<32>",
            Layout::RowInterleaved32 => "cutlass::layout::RowMajorInterleaved<32>",
        }
    }

    /// The interleave of an interleaved layout (32), or `None`.
    pub fn interleave(self) -> Option<u32> {
        match self {
            Layout::ColumnInterleaved32 | Layout::RowInterleaved32 => Some(32),
            Layout::Row | Layout::Column => None,
        }
    }

    /// The layout of the same memory read as the transposed matrix: a row-major m×n matrix is a
    /// column-major n×m one.
    pub fn transposed(self) -> Layout {
        match self {
            Layout::Row => Layout::Column,
            Layout::Column => Layout::Row,
            Layout::ColumnInterleaved32 => Layout::RowInterleaved32,
            Layout::RowInterleaved32 => Layout::ColumnInterleaved32,
        }
    }

    /// `t` (row-major, "transposed") or `n` (column-major), `t32` / `n32` interleaved, as CUTLASS
    /// names kernels.
    pub fn letter(self) -> &'static str {
        match self {
            Layout::Row => "t",
            Layout::Column => "n",
            Layout::ColumnInterleaved32 => "n32",
            Layout::RowInterleaved32 => "t32",
        }
    }
}

spelled_enum! {
    /// Which hardware unit does the math.
    OpClass {
        TensorOp = "tensorop",
        Simt = "simt",
    }
}

impl OpClass {
    pub fn cutlass_type(self) -> &'static str {
        match self {
            OpClass::TensorOp => "cutlass::arch::OpClassTensorOp",
            OpClass::Simt => "cutlass::arch::OpClassSimt",
        }
    }
}

spelled_enum! {
    /// The math operator of the MMA instruction.
    MathOp {
        /// Plain multiply-add; f32 operands on tensor cores run as TF32.
        MultiplyAdd = "multiply_add",
        /// Integer multiply-add whose accumulation saturates (the s8 tensor-op instructions).
        MultiplyAddSaturate = "multiply_add_saturate",
        /// f32 operands split into a big and a small TF32 part, three TF32 MMAs per product
        /// ("3xTF32"): f32 accuracy at tensor-core speed.
        MultiplyAddFastF32 = "multiply_add_fast_f32",
        /// f32 operands rounded to f16 and multiplied by f16 tensor cores (f32 accumulation).
        MultiplyAddFastF16 = "multiply_add_fast_f16",
        /// f32 operands rounded to bf16 and multiplied by bf16 tensor cores (f32 accumulation).
        MultiplyAddFastBf16 = "multiply_add_fast_bf16",
    }
}

impl MathOp {
    pub fn cutlass_type(self) -> &'static str {
        match self {
            MathOp::MultiplyAdd => "cutlass::arch::OpMultiplyAdd",
            MathOp::MultiplyAddSaturate => "cutlass::arch::OpMultiplyAddSaturate",
            MathOp::MultiplyAddFastF32 => "cutlass::arch::OpMultiplyAddFastF32",
            MathOp::MultiplyAddFastF16 => "cutlass::arch::OpMultiplyAddFastF16",
            MathOp::MultiplyAddFastBf16 => "cutlass::arch::OpMultiplyAddFastBF16",
        }
    }

    /// The type the tensor cores multiply f32 operands in (CUTLASS names kernels after it), or
    /// `None` when they multiply the operand type itself (or, for 3xTF32, f32 accuracy is kept).
    pub fn f32_intermediate(self) -> Option<&'static str> {
        match self {
            MathOp::MultiplyAdd => Some("tf32"),
            MathOp::MultiplyAddFastF16 => Some("f16"),
            MathOp::MultiplyAddFastBf16 => Some("bf16"),
            MathOp::MultiplyAddSaturate | MathOp::MultiplyAddFastF32 => None,
        }
    }
}

spelled_enum! {
    /// Threadblock rasterisation.
    Swizzle {
        Identity1 = "identity1",
        Identity2 = "identity2",
        Identity4 = "identity4",
        Identity8 = "identity8",
        /// One grid z-slice per batch (CUTLASS's `GemmBatchedIdentityThreadblockSwizzle`).
        Batched = "batched",
        /// Tiles walked along N first (CUTLASS's `GemmHorizontalThreadblockSwizzle`): better L2
        /// reuse of A when N is much larger than M.
        Horizontal = "horizontal",
    }
}

impl Swizzle {
    pub fn cutlass_type(self) -> &'static str {
        match self {
            Swizzle::Identity1 => "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>",
            Swizzle::Identity2 => "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<2>",
            Swizzle::Identity4 => "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>",
            Swizzle::Identity8 => "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>",
            Swizzle::Batched => "cutlass::gemm::threadblock::GemmBatchedIdentityThreadblockSwizzle",
            // CUTLASS's horizontal swizzle, adapted by the glue to the universal GEMM's interface.
            Swizzle::Horizontal => "cutlass_aot::HorizontalThreadblockSwizzle",
        }
    }
}

spelled_enum! {
    /// The epilogue applied to the accumulators.
    Epilogue {
        /// `D = alpha * accumulator + beta * C`.
        LinearCombination = "linear_combination",
        /// The same, clamped to the output type's range before conversion (integer outputs
        /// saturate instead of wrapping).
        LinearCombinationClamp = "linear_combination_clamp",
        /// CUTLASS's fast int8 clamp (2.x, s32 accumulators, s8 output): the float → int conversion
        /// by magic-number addition is exact only while |accumulator| < 2^22, so K is limited (see
        /// [`Epilogue::max_k`]).
        FastLinearCombinationClamp = "fast_linear_combination_clamp",
    }
}

impl Epilogue {
    pub fn cutlass_template(self) -> &'static str {
        match self {
            Epilogue::LinearCombination => "cutlass::epilogue::thread::LinearCombination",
            Epilogue::LinearCombinationClamp => "cutlass::epilogue::thread::LinearCombinationClamp",
            Epilogue::FastLinearCombinationClamp => "cutlass::epilogue::thread::FastLinearCombinationClamp",
        }
    }

    /// The epilogue a kernel gets when the manifest names none: a 2.x kernel's s8 output saturates
    /// (CUTLASS's plain linear combination would wrap); every other output is a plain linear
    /// combination.
    pub fn default_for(api: Api, element_c: DType) -> Epilogue {
        if api == Api::Cutlass2x && element_c == DType::S8 {
            Epilogue::LinearCombinationClamp
        } else {
            Epilogue::LinearCombination
        }
    }

    /// The largest K the epilogue is exact for, if limited: the fast clamp converts through f32
    /// with a magic-number trick that holds while |accumulator| < 2^22, and s8 products reach
    /// 2^14, so K ≤ 256 (CUTLASS's own bound for it).
    pub fn max_k(self) -> Option<usize> {
        match self {
            Epilogue::FastLinearCombinationClamp => Some(256),
            Epilogue::LinearCombination | Epilogue::LinearCombinationClamp => None,
        }
    }
}

spelled_enum! {
    /// The elementwise activation applied after the linear combination (and bias).
    Activation {
        Identity = "identity",
        /// max(x, 0).
        Relu = "relu",
        /// x for x > 0, else slope · x; the slope is a run-time argument.
        LeakyRelu = "leaky_relu",
        Tanh = "tanh",
        /// 1 / (1 + e^-x).
        Sigmoid = "sigmoid",
        /// x · sigmoid(x).
        Silu = "silu",
        /// x · relu6(x + 3) / 6.
        Hardswish = "hardswish",
        /// x · Φ(x) with the exact error function (PyTorch's `gelu`, approximate="none").
        Gelu = "gelu",
        /// The tanh approximation of GELU (PyTorch's approximate="tanh", cuBLASLt's GELU epilogue).
        GeluTaylor = "gelu_taylor",
    }
}

impl Activation {
    /// CUTLASS's functor template (`cutlass::epilogue::thread`), shared by the 2.x generic linear
    /// combination and the 3.x fusion operations.
    pub fn cutlass_template(self) -> &'static str {
        match self {
            Activation::Identity => "cutlass::epilogue::thread::Identity",
            Activation::Relu => "cutlass::epilogue::thread::ReLu",
            Activation::LeakyRelu => "cutlass::epilogue::thread::LeakyReLU",
            Activation::Tanh => "cutlass::epilogue::thread::Tanh",
            Activation::Sigmoid => "cutlass::epilogue::thread::Sigmoid",
            Activation::Silu => "cutlass::epilogue::thread::SiLu",
            Activation::Hardswish => "cutlass::epilogue::thread::HardSwish",
            Activation::Gelu => "cutlass::epilogue::thread::GELU",
            Activation::GeluTaylor => "cutlass::epilogue::thread::GELU_taylor",
        }
    }

    /// Whether CUTLASS marks the functor heavy (`kIsHeavy`: erf, exp or tanh per element) rather than
    /// a few compares and multiplies.
    pub fn is_heavy(self) -> bool {
        matches!(
            self,
            Activation::Tanh
                | Activation::Sigmoid
                | Activation::Silu
                | Activation::Gelu
                | Activation::GeluTaylor
        )
    }

    /// Whether the activation takes a run-time argument (leaky_relu's slope).
    pub fn has_argument(self) -> bool {
        self == Activation::LeakyRelu
    }

    /// CUTLASS's functor of the activation's derivative, given the pre-activation value (for
    /// backward kernels, `aux_input`), where CUTLASS has one: dReLU (from Z) and the derivative of
    /// the tanh GELU.
    pub fn derivative_template(self) -> Option<&'static str> {
        match self {
            Activation::Relu => Some("cutlass::epilogue::thread::dReLU_Z"),
            Activation::GeluTaylor => Some("cutlass::epilogue::thread::dGELU"),
            _ => None,
        }
    }
}

spelled_enum! {
    /// How an epilogue vector (bias, scale) is broadcast over D (m×n).
    Broadcast {
        None = "none",
        /// One value per row of D: a vector of m elements, broadcast along each row.
        PerRow = "per_row",
        /// One value per column of D: a vector of n elements, broadcast down each column (the bias
        /// of a linear layer, y = x·Wᵀ + b, as PyTorch's `addmm` adds it).
        PerCol = "per_col",
    }
}

impl Broadcast {
    /// The same vector seen from D^T: a per-row vector of D is a per-column one of D^T.
    pub fn transposed(self) -> Broadcast {
        match self {
            Broadcast::PerRow => Broadcast::PerCol,
            Broadcast::PerCol => Broadcast::PerRow,
            Broadcast::None => Broadcast::None,
        }
    }

    /// The vector's length for an m×n D, or `None` without a vector.
    pub fn length(self, m: usize, n: usize) -> Option<usize> {
        match self {
            Broadcast::None => None,
            Broadcast::PerRow => Some(m),
            Broadcast::PerCol => Some(n),
        }
    }
}

spelled_enum! {
    /// An extra output matrix written by the epilogue.
    AuxOutput {
        None = "none",
        /// The value before the activation (alpha·acc + beta·C + bias), e.g. for a backward pass;
        /// same type and layout as D.
        PreActivation = "pre_activation",
    }
}

spelled_enum! {
    /// An extra input matrix read by the epilogue of a backward kernel.
    AuxInput {
        None = "none",
        /// The forward pass's pre-activation value Z: the kernel computes the activation's
        /// derivative at Z times alpha·acc + beta·C (the gradient through the activation).
        PreActivation = "pre_activation",
    }
}

spelled_enum! {
    /// A reduction of D written by the epilogue.
    Reduction {
        None = "none",
        /// The sum of each row of D (m values of the compute type): the bias gradient of a
        /// per-row bias.
        RowSum = "row_sum",
    }
}

spelled_enum! {
    /// Where C enters the epilogue.
    Residual {
        /// D = act(alpha·acc + beta·C + bias): C is added before the activation.
        None = "none",
        /// D = act(alpha·acc + bias) + beta·C: C is a residual added after the activation.
        AfterActivation = "after_activation",
    }
}

/// The fused part of an epilogue, beyond its linear combination: what the kernel computes per
/// element, and which extra operands its launch takes.
///
/// `Z = alpha·acc + beta·C + bias` (alpha, beta: scalars, or per-row/per-column vectors with
/// `scale`), `D = act(Z)`; with `residual: after_activation`, `D = act(alpha·acc + bias) + beta·C`;
/// with `aux_output: pre_activation`, Z is also stored. A backward kernel (`aux_input:
/// pre_activation`) reads Z and computes `D = act'(Z) · (alpha·acc + beta·C)`; with `reduction:
/// row_sum` it also writes each row's sum of D.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fusion {
    pub activation: Activation,
    pub bias: Broadcast,
    /// Per-row or per-column alpha and beta vectors (each optional at run time: a scalar is used
    /// where no vector is given).
    pub scale: Broadcast,
    pub aux_output: AuxOutput,
    pub residual: Residual,
    /// Backward kernels: the activation's derivative at this input (the activation must have one).
    pub aux_input: AuxInput,
    pub reduction: Reduction,
}

impl Fusion {
    /// A plain linear combination.
    pub const NONE: Fusion = Fusion {
        activation: Activation::Identity,
        bias: Broadcast::None,
        scale: Broadcast::None,
        aux_output: AuxOutput::None,
        residual: Residual::None,
        aux_input: AuxInput::None,
        reduction: Reduction::None,
    };

    pub fn is_none(&self) -> bool {
        *self == Fusion::NONE
    }

    /// Whether the launch takes device buffers beyond A, B, C and D (a bias, scale vectors, an aux
    /// matrix, a row-sum output).
    pub fn has_buffers(&self) -> bool {
        self.bias != Broadcast::None
            || self.scale != Broadcast::None
            || self.aux_output != AuxOutput::None
            || self.aux_input != AuxInput::None
            || self.reduction != Reduction::None
    }

    /// Whether the launch takes operands or arguments beyond A, B, C and D: buffers, or an
    /// activation argument (leaky_relu's slope).
    pub fn has_operands(&self) -> bool {
        self.has_buffers() || self.activation.has_argument()
    }

    /// A short name of the fusion, `_`-joined, e.g. `bias_gelu`: `bias` is a per-column bias (a
    /// linear layer's), `row_bias` a per-row one; likewise `scale` / `row_scale`; then `residual`,
    /// the activation and `aux`. `linear_combination` when nothing is fused.
    pub fn label(&self) -> alloc::string::String {
        let mut parts: alloc::vec::Vec<&str> = alloc::vec::Vec::new();
        match self.scale {
            Broadcast::None => {}
            Broadcast::PerRow => parts.push("row_scale"),
            Broadcast::PerCol => parts.push("scale"),
        }
        match self.bias {
            Broadcast::None => {}
            Broadcast::PerRow => parts.push("row_bias"),
            Broadcast::PerCol => parts.push("bias"),
        }
        // A backward kernel applies the activation's derivative: `d` + its name.
        let derivative;
        if self.aux_input == AuxInput::PreActivation {
            derivative = alloc::format!("d{}", self.activation.manifest_name());
            parts.push(&derivative);
        } else if self.activation != Activation::Identity {
            parts.push(self.activation.manifest_name());
        }
        if self.reduction == Reduction::RowSum {
            parts.push("row_sum");
        }
        if self.residual == Residual::AfterActivation {
            parts.push("residual");
        }
        if self.aux_output == AuxOutput::PreActivation {
            parts.push("aux");
        }
        if parts.is_empty() {
            parts.push("linear_combination");
        }
        parts.join("_")
    }
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::NONE
    }
}

spelled_enum! {
    /// How a kernel splits K across CTAs when asked for more than one split-K slice at run time.
    SplitK {
        /// Slices add into D in turn, ordered by semaphores in the workspace (CUTLASS 2.x universal
        /// GEMM, any kernel). D's type holds the running sum between slices.
        Serial = "serial",
        /// Slices write f32/accumulator-type partial sums to the workspace; a reduction kernel built
        /// with the kernel adds them and applies alpha, beta and C.
        Parallel = "parallel",
        /// The stream-K tile scheduler splits K and reduces in its workspace (CUTLASS 3.x).
        StreamK = "stream_k",
        /// The kernel cannot split K (CUTLASS 3.x persistent kernels).
        None = "none",
    }
}

spelled_enum! {
    /// Which generation of CUTLASS kernels, chosen by the manifest's `arch`.
    Api {
        /// CUTLASS 2.x universal GEMM (`arch: 80`; sm_80 code, runs on sm_80 and newer).
        Cutlass2x = "2x",
        /// CUTLASS 3.x GEMM from the collective builders (`arch: 90`; sm_90a code, Hopper only).
        Cutlass3x = "3x",
    }
}

spelled_enum! {
    /// CUTLASS 3.x kernel schedule (how the mainloop is split across warp groups).
    KernelSchedule {
        /// CUTLASS's builder picks (from tile and types).
        Auto = "auto",
        /// One producer and one consumer warp group per tile, not persistent.
        WarpSpecialized = "warpspecialized",
        /// Persistent; two consumer warp groups share each tile (tile M a multiple of 128).
        Cooperative = "cooperative",
        /// Persistent; two consumer warp groups alternate between tiles, overlapping epilogue and math.
        Pingpong = "pingpong",
    }
}

impl KernelSchedule {
    pub fn cutlass_type(self) -> &'static str {
        match self {
            KernelSchedule::Auto => "cutlass::gemm::collective::KernelScheduleAuto",
            KernelSchedule::WarpSpecialized => "cutlass::gemm::KernelTmaWarpSpecialized",
            KernelSchedule::Cooperative => "cutlass::gemm::KernelTmaWarpSpecializedCooperative",
            KernelSchedule::Pingpong => "cutlass::gemm::KernelTmaWarpSpecializedPingpong",
        }
    }

    /// Suffix in CUTLASS's library naming.
    pub fn library_suffix(self) -> &'static str {
        match self {
            KernelSchedule::Auto => "",
            KernelSchedule::WarpSpecialized => "_warpspecialized",
            KernelSchedule::Cooperative => "_warpspecialized_cooperative",
            KernelSchedule::Pingpong => "_warpspecialized_pingpong",
        }
    }
}

spelled_enum! {
    /// CUTLASS 3.x epilogue schedule.
    EpilogueSchedule {
        /// CUTLASS's builder picks.
        Auto = "auto",
        /// Registers straight to global memory.
        NoSmem = "no_smem",
        /// Through shared memory with TMA loads of C and stores of D.
        Tma = "tma",
    }
}

impl EpilogueSchedule {
    /// The CUTLASS tag; the TMA epilogue has a cooperative and a single-warp-group variant.
    pub fn cutlass_type(self, kernel: KernelSchedule) -> &'static str {
        match (self, kernel) {
            (EpilogueSchedule::Auto, _) => "cutlass::epilogue::collective::EpilogueScheduleAuto",
            (EpilogueSchedule::NoSmem, _) => "cutlass::epilogue::NoSmemWarpSpecialized",
            (EpilogueSchedule::Tma, KernelSchedule::Cooperative) => {
                "cutlass::epilogue::TmaWarpSpecializedCooperative"
            }
            (EpilogueSchedule::Tma, _) => "cutlass::epilogue::TmaWarpSpecialized",
        }
    }

    /// Suffix in CUTLASS's library naming.
    pub fn library_suffix(self) -> &'static str {
        match self {
            EpilogueSchedule::Auto => "",
            EpilogueSchedule::NoSmem => "_epi_nosmem",
            EpilogueSchedule::Tma => "_epi_tma",
        }
    }
}

spelled_enum! {
    /// CUTLASS 3.x tile scheduler of persistent kernels.
    TileScheduler {
        /// One output tile per work unit, CTAs loop over tiles.
        Persistent = "persistent",
        /// Work split along K too (stream-K), balancing problems with few tiles; needs a workspace.
        StreamK = "stream_k",
    }
}

impl TileScheduler {
    pub fn cutlass_type(self) -> &'static str {
        match self {
            TileScheduler::Persistent => "cutlass::gemm::PersistentScheduler",
            TileScheduler::StreamK => "cutlass::gemm::StreamKScheduler",
        }
    }

    /// Suffix in CUTLASS's library naming.
    pub fn library_suffix(self) -> &'static str {
        match self {
            TileScheduler::Persistent => "",
            TileScheduler::StreamK => "_stream_k",
        }
    }
}

/// A three-component shape (M, N, K) — threadblock tile, warp count or instruction shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape3 {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl Shape3 {
    pub const fn new(m: u32, n: u32, k: u32) -> Self {
        Shape3 { m, n, k }
    }

    pub fn as_array(self) -> [u32; 3] {
        [self.m, self.n, self.k]
    }
}

impl fmt::Display for Shape3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)
    }
}

/// Largest A/B alignment (in elements) CUTLASS 2.x mainloops accept for `element` on `opclass`:
/// 128 bits, except f64 on tensor cores, whose 64-bit crosswise shared-memory layouts only take
/// one-element accesses (CUTLASS's own f64 kernels all use alignment 1).
pub fn max_ab_alignment(opclass: OpClass, element: DType) -> u32 {
    match (opclass, element) {
        (OpClass::TensorOp, DType::F64) => 1,
        _ => element.max_alignment(),
    }
}
