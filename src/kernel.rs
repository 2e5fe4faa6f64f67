//! One description of every compiled kernel, whatever it computes — the CUTLASS API's
//! `KernelMetadata`: common metadata (names, origin, minimum compute capability, image and entry),
//! an [`Operation`] (what it computes: its operands' types, layouts and alignments), a [`Design`]
//! (how it is built) and an [`EpilogueSpec`], plus the generated host code that builds its Params.
//!
//! Discovery works the same way for every operation: a problem type implements [`Problem`] (its
//! rules against a kernel), and [`KernelInfo::supports`] adds the rules every kernel shares (device,
//! device code), collecting every reason instead of stopping at the first.

use std::ffi::CStr;
use std::fmt;

use crate::abi;
use crate::image::Image;
use crate::model::custom::CustomDesign;
use crate::model::{
    Api, DType, Design, Epilogue, EpilogueSpec, Fusion, GemmOperation, Layout, MathOp, Operation,
    OperationKind, Shape3, TensorAttributes,
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
    /// What the kernel computes, with its operands' types, layouts and alignments.
    pub operation: Operation,
    /// How the kernel is built (CUTLASS 2.x or 3.x choices).
    pub design: Design,
    /// What the epilogue computes: the linear combination's kind, compute type and fusion.
    pub epilogue: EpilogueSpec,
    #[doc(hidden)]
    pub image: &'static Image,
    #[doc(hidden)]
    pub entry: &'static CStr,
    /// The generated host functions (`None` in a binary built without nvcc).
    #[doc(hidden)]
    pub host: HostCode,
}

/// The generated host code of a kernel, by operation: the functions that build its Params.
#[derive(Clone, Copy, Debug)]
pub enum HostCode {
    Gemm {
        prepare: abi::cutlass_aot_gemm_prepare_fn,
        /// The split-K reduction kernel built with a parallel split-K kernel.
        reduction: Option<&'static SplitKReduction>,
    },
    GemmGrouped {
        prepare: abi::cutlass_aot_grouped_prepare_fn,
    },
    Conv2d {
        prepare: abi::cutlass_aot_conv2d_prepare_fn,
        /// The split-K reduction kernel built with a parallel split-K conv kernel.
        reduction: Option<&'static crate::conv::ConvReduction>,
    },
    /// A user kernel: no host code (its launch shape comes from the manifest's expressions);
    /// `built` is false when the crate was built without nvcc.
    Custom { built: bool },
    /// An elementwise kernel: no host code (Params are built in Rust); its image has a vector entry
    /// (`KernelInfo::entry`) and this scalar one. `built` is false without nvcc.
    Elementwise {
        built: bool,
        scalar_entry: &'static CStr,
    },
}

impl HostCode {
    /// Whether the host functions were compiled (false when built without nvcc).
    pub fn is_built(&self) -> bool {
        match self {
            HostCode::Gemm { prepare, .. } => prepare.is_some(),
            HostCode::GemmGrouped { prepare } => prepare.is_some(),
            HostCode::Conv2d { prepare, .. } => prepare.is_some(),
            HostCode::Custom { built } | HostCode::Elementwise { built, .. } => *built,
        }
    }
}

/// The entry of the kernel every grouped image carries to fill a grouped launch's arguments on the
/// device (`cutlass_glue/include/cutlass_aot/grouped_setup.cuh`).
pub(crate) const GROUPED_SETUP_ENTRY: &CStr = c"cutlass_aot_grouped_setup";

/// The reduction kernel of a parallel split-K kernel: it adds the partial sums the GEMM left in the
/// workspace, applies alpha, beta and C, and writes D.
#[derive(Debug)]
pub struct SplitKReduction {
    pub entry: &'static CStr,
    pub prepare: abi::cutlass_aot_gemm_prepare_fn,
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

/// Collects the reasons a kernel cannot run a problem: `want(rule holds, reason)`. A reason is
/// formatted only when its rule fails, and rules are generic over the collector (no indirect
/// call per rule): `supports()` runs on every launch.
pub trait Want: FnMut(bool, &dyn Fn() -> String) {}

impl<F: FnMut(bool, &dyn Fn() -> String)> Want for F {}

/// A problem of one operation, as discovery sees it (`GemmProblem`, `GroupedProblem`, ...).
pub trait Problem {
    /// The operation the problem asks for.
    fn operation(&self) -> OperationKind;

    /// The compute capability of the device that will run it, when known.
    fn compute_capability(&self) -> Option<u32>;

    /// Checks the problem against `kernel`, whose operation is [`Problem::operation`]: calls
    /// `want(rule holds, reason)` for every rule of the operation.
    fn rules(&self, kernel: &KernelInfo, want: &mut impl Want);
}

impl KernelInfo {
    /// A kernel of the runtime's support image (`IMAGE_SUPPORT`), launched by the crate's own host
    /// code (the skinny GEMMs, the direct conv): plain alpha·op + beta·C computed in `compute`,
    /// any alignment, from compute capability 8.0.
    pub(crate) const fn built_in(
        name: &'static str,
        rust_name: &'static str,
        origin: &'static str,
        operation: Operation,
        design: &'static CustomDesign,
        compute: DType,
        entry: &'static CStr,
    ) -> KernelInfo {
        KernelInfo {
            name,
            rust_name,
            origin,
            min_compute_capability: 80,
            operation,
            design: Design::Custom(design),
            epilogue: EpilogueSpec {
                kind: Epilogue::LinearCombination,
                compute,
                fusion: Fusion::NONE,
            },
            image: &crate::kernels::IMAGE_SUPPORT,
            entry,
            host: HostCode::Custom { built: true },
        }
    }

    /// CUTLASS 2.x or 3.x.
    pub fn api(&self) -> Api {
        self.design.api()
    }

    /// The threadblock (CTA) tile.
    pub fn tile(&self) -> Shape3 {
        self.design.tile()
    }

    /// The GEMM operands of a GEMM-shaped kernel (plain and grouped GEMM).
    pub fn gemm(&self) -> &GemmOperation {
        self.operation.gemm()
    }

    /// The split-K reduction kernel built with a parallel split-K GEMM kernel.
    pub fn split_k_reduction(&self) -> Option<&'static SplitKReduction> {
        match self.host {
            HostCode::Gemm { reduction, .. } => reduction,
            _ => None,
        }
    }

    /// Loads the kernel's image into `ctx` with every function a launch uses (the kernel, a
    /// parallel split-K reduction, the grouped setup kernel). Launches load lazily on first use,
    /// and the driver may synchronise the context while it loads an image; call this once ahead of
    /// time where even the first launch must not wait (a device-resident MoE layer on a busy
    /// stream, say).
    pub fn load(
        &'static self,
        ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    ) -> Result<(), crate::Error> {
        let mut entries = vec![self.entry];
        match self.host {
            HostCode::Gemm {
                reduction: Some(reduction),
                ..
            } => entries.push(reduction.entry),
            HostCode::GemmGrouped { .. } => entries.push(GROUPED_SETUP_ENTRY),
            HostCode::Conv2d {
                reduction: Some(reduction),
                ..
            } => entries.push(reduction.entry),
            HostCode::Elementwise { scalar_entry, .. } => entries.push(scalar_entry),
            HostCode::Gemm { reduction: None, .. }
            | HostCode::Conv2d { reduction: None, .. }
            | HostCode::Custom { .. } => {}
        }
        for entry in entries {
            if matches!(self.host, HostCode::Custom { .. }) {
                self.image.any_function(ctx, entry, self.name, 0)?;
            } else {
                self.image.function(ctx, entry, self.name, 0)?;
            }
        }
        Ok(())
    }

    /// Refuses a launch on `device` of a kernel without device code or built for another
    /// architecture: the first check of every operation's plan.
    pub(crate) fn check_runnable(
        &'static self,
        device: &crate::device::DeviceProps,
    ) -> Result<(), crate::Error> {
        if !self.has_device_code() {
            return Err(crate::Error::NotBuilt { kernel: self.name });
        }
        self.runs_on(device.compute_capability)
            .map_err(|message| crate::Error::UnsupportedDevice {
                kernel: self.name,
                message,
            })
    }

    /// Whether this binary holds device code for the kernel (false when built without nvcc).
    pub fn has_device_code(&self) -> bool {
        self.host.is_built() && self.image.has_code()
    }

    /// K's tiles: the most split-K slices that each get at least one tile of K.
    pub fn k_tiles(&self, k: usize) -> usize {
        k.div_ceil(self.tile().k.max(1) as usize)
    }

    /// Whether the kernel's code runs on a device of compute capability `cc` (`major * 10 + minor`):
    /// 2.x kernels on their architecture and newer; 3.x kernels (sm_90a code, whose instructions
    /// exist on no other architecture) on exactly theirs.
    pub fn runs_on(&self, cc: u32) -> Result<(), String> {
        let need = self.min_compute_capability;
        let version = |v: u32| format!("{}.{}", v / 10, v % 10);
        match self.api() {
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
    pub fn supports<P: Problem>(&self, problem: &P) -> Result<(), Unsupported> {
        let mut reasons = Vec::new();
        let mut want = |ok: bool, reason: &dyn Fn() -> String| {
            if !ok {
                reasons.push(reason())
            }
        };
        let asked = problem.operation();
        let kind = self.operation.kind();
        if asked == kind {
            problem.rules(self, &mut want);
        } else {
            // Another operation's rules would only add noise.
            want(false, &|| {
                format!("this is a {kind} kernel but the problem is a {asked}")
            });
        }
        if let Some(cc) = problem.compute_capability() {
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

/// The GEMM operands of a built-in kernel ([`KernelInfo::built_in`]): A (`layout_a`) and B
/// (`layout_b`) of `ab`, C/D row-major of `c`, any alignment, plain multiply-add into
/// `accumulator`.
pub(crate) const fn built_in_gemm(
    ab: DType,
    (layout_a, layout_b): (Layout, Layout),
    c: DType,
    accumulator: DType,
) -> GemmOperation {
    const fn operand(element: DType, layout: Layout) -> TensorAttributes {
        TensorAttributes {
            element,
            layout,
            alignment: 1,
        }
    }
    GemmOperation {
        a: operand(ab, layout_a),
        b: operand(ab, layout_b),
        c: operand(c, Layout::Row),
        accumulator,
        math: MathOp::MultiplyAdd,
    }
}
