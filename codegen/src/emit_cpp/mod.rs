//! Emits CUTLASS C++ translation units for resolved kernels: one emitter per operation and
//! design generation (`gemm_2x`, `gemm_3x`, `grouped_2x`, `grouped_3x`), each naming the glue
//! header its kernels' entry macros come from.
//!
//! Kernels are grouped into units because most of nvcc's time goes into parsing CUTLASS's headers:
//! several kernels in one unit cost far less than one unit each. Units are keyed by emitter, type
//! family (op class, A type, accumulator) and cargo feature, so adding a kernel of one family — or
//! switching a feature — leaves the other units, and their cached objects, untouched. Within a
//! family, units hold at most `max_per_unit` kernels so that 2+ cores have work in parallel.
//! CUTLASS 2.x and 3.x kernels never share a unit: they are compiled for different targets (sm_80
//! code vs sm_90a code).

mod conv_2x;
mod conv_3x;
mod conv_first_layer;
mod gemm_2x;
mod gemm_3x;
mod grouped_2x;
mod grouped_3x;

use std::fmt::Write as _;

use crate::model::{Api, BatchMode, GemmKernel, IteratorAlgorithm, OperationKind, Shape3};

/// One generated translation unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// File stem, a valid C identifier (e.g. `tensorop_f16_f32_0`).
    pub name: String,
    /// CUTLASS generation of every kernel of the unit (decides the nvcc targets).
    pub api: Api,
    /// The glue headers the unit includes (directly or not): part of its cache key.
    pub glue: &'static [&'static str],
    pub kernels: Vec<GemmKernel>,
    /// The C++ source text.
    pub source: String,
    /// More `-I` directories (a user kernel's own directory, for its local headers).
    pub include_dirs: Vec<std::path::PathBuf>,
    /// More text for the cache key (the local headers a user kernel includes).
    pub key_extra: String,
    /// 2.x units: compile each SASS target from its own virtual ISA (`compute_90` for sm_90)
    /// instead of sm_80's, where newer instructions matter (elementwise fp8 conversions).
    pub native_isa: bool,
}

/// How one operation of one CUTLASS generation is emitted.
struct Emitter {
    /// Prefix of its units' names.
    family_prefix: &'static str,
    /// The glue header its units include.
    include: &'static str,
    /// Every glue header that one includes, itself too.
    glue: &'static [&'static str],
    /// The C++ of one kernel: its CUTLASS type and entry macro.
    kernel: fn(&GemmKernel) -> String,
}

const GEMM_2X: Emitter = Emitter {
    family_prefix: "",
    include: "cutlass_aot/gemm_2x.cuh",
    glue: &["cutlass_aot/abi.h", "cutlass_aot/gemm_2x.cuh"],
    kernel: gemm_2x::kernel_source,
};

const GEMM_3X: Emitter = Emitter {
    family_prefix: "sm90_",
    include: "cutlass_aot/gemm_3x.cuh",
    glue: &["cutlass_aot/abi.h", "cutlass_aot/gemm_3x.cuh"],
    kernel: gemm_3x::kernel_source_3x,
};

const GROUPED_2X: Emitter = Emitter {
    family_prefix: "grouped_",
    include: "cutlass_aot/grouped_2x.cuh",
    glue: &[
        "cutlass_aot/abi.h",
        "cutlass_aot/gemm_2x.cuh",
        "cutlass_aot/abi_grouped.h",
        "cutlass_aot/grouped_setup.cuh",
        "cutlass_aot/grouped_2x.cuh",
    ],
    kernel: grouped_2x::kernel_source,
};

const GROUPED_3X: Emitter = Emitter {
    family_prefix: "sm90_grouped_",
    include: "cutlass_aot/grouped_3x.cuh",
    glue: &[
        "cutlass_aot/abi.h",
        "cutlass_aot/gemm_3x.cuh",
        "cutlass_aot/abi_grouped.h",
        "cutlass_aot/grouped_setup.cuh",
        "cutlass_aot/grouped_3x.cuh",
    ],
    kernel: grouped_3x::kernel_source,
};

/// CUTLASS 3.x pointer-array batched GEMM: the grouped glue's pointer-array machinery.
const GEMM_3X_ARRAY: Emitter = Emitter {
    family_prefix: "sm90_array_",
    kernel: grouped_3x::array_kernel_source,
    ..GROUPED_3X
};

/// CUTLASS 2.x implicit-GEMM conv2d (fprop, dgrad, wgrad).
const CONV_2X: Emitter = Emitter {
    family_prefix: "conv_",
    include: "cutlass_aot/conv_2x.cuh",
    glue: &[
        "cutlass_aot/abi.h",
        "cutlass_aot/gemm_2x.cuh",
        "cutlass_aot/abi_conv.h",
        "cutlass_aot/conv_2x.cuh",
    ],
    kernel: conv_2x::kernel_source,
};

/// Our first-layer fprop (`iterator_algorithm: first_layer`): sm_80 tensor cores, own mainloop.
const CONV_FIRST_LAYER: Emitter = Emitter {
    family_prefix: "conv_first_layer_",
    include: "cutlass_aot/conv_first_layer.cuh",
    glue: &[
        "cutlass_aot/abi.h",
        "cutlass_aot/gemm_2x.cuh",
        "cutlass_aot/abi_conv.h",
        "cutlass_aot/conv_2x.cuh",
        "cutlass_aot/conv_first_layer.cuh",
    ],
    kernel: conv_first_layer::kernel_source,
};

/// CUTLASS 3.x sm90 implicit-GEMM conv2d (fprop, dgrad, wgrad).
const CONV_3X: Emitter = Emitter {
    family_prefix: "sm90_conv_",
    include: "cutlass_aot/conv_3x.cuh",
    glue: &[
        "cutlass_aot/abi.h",
        "cutlass_aot/gemm_3x.cuh",
        "cutlass_aot/abi_conv.h",
        "cutlass_aot/conv_3x.cuh",
        "cutlass_aot/conv_3x_cooperative.hpp",
    ],
    kernel: conv_3x::kernel_source,
};

fn emitter(kernel: &GemmKernel) -> &'static Emitter {
    if kernel.conv_kind().is_some() {
        return match kernel.api() {
            Api::Cutlass2x if kernel.iterator_algorithm == IteratorAlgorithm::FirstLayer => &CONV_FIRST_LAYER,
            Api::Cutlass2x => &CONV_2X,
            Api::Cutlass3x => &CONV_3X,
        };
    }
    match (kernel.kind, kernel.api()) {
        (OperationKind::Gemm, Api::Cutlass2x) => &GEMM_2X,
        (OperationKind::Gemm, Api::Cutlass3x) if kernel.batch_mode == BatchMode::Array => &GEMM_3X_ARRAY,
        (OperationKind::Gemm, Api::Cutlass3x) => &GEMM_3X,
        (OperationKind::GemmGrouped, Api::Cutlass2x) => &GROUPED_2X,
        (OperationKind::GemmGrouped, Api::Cutlass3x) => &GROUPED_3X,
        (_, Api::Cutlass2x) => &GEMM_2X,
        (_, Api::Cutlass3x) => &GEMM_3X,
    }
}

/// Groups `kernels` by family, in manifest order, and emits each group's source.
pub fn plan_units(kernels: &[GemmKernel], max_per_unit: usize) -> Vec<Unit> {
    assert!(max_per_unit > 0, "max_per_unit must be positive");
    let mut families: Vec<(String, Vec<GemmKernel>)> = Vec::new();
    for kernel in kernels {
        let family = family_of(kernel);
        match families.iter_mut().find(|(name, _)| *name == family) {
            Some((_, members)) => members.push(kernel.clone()),
            None => families.push((family, vec![kernel.clone()])),
        }
    }
    let mut units = Vec::new();
    for (family, members) in families {
        for (index, chunk) in members.chunks(max_per_unit).enumerate() {
            let name = format!("{family}_{index}");
            let source = unit_source(&name, chunk);
            units.push(Unit {
                name,
                api: chunk[0].api(),
                glue: emitter(&chunk[0]).glue,
                kernels: chunk.to_vec(),
                source,
                include_dirs: Vec::new(),
                key_extra: String::new(),
                native_isa: false,
            });
        }
    }
    units
}

/// The unit of the runtime's support kernels (staging copies, the 3xTF32 split, skinny GEMMs, the
/// direct fprop of few channels; no CUTLASS), built into the `cutlass-aot` crate itself
/// (`Builder::support_kernels`). Its image is `IMAGE_SUPPORT`.
pub fn support_unit() -> Unit {
    Unit {
        name: "support".into(),
        api: Api::Cutlass2x,
        glue: &[
            "cutlass_aot/support.cuh",
            "cutlass_aot/skinny.cuh",
            "cutlass_aot/skinny_vector.cuh",
            "cutlass_aot/narrow.cuh",
            "cutlass_aot/conv_small.cuh",
        ],
        kernels: Vec::new(),
        source: "// @generated by cutlass-aot-build. Do not edit.\n\
                 // The runtime's support kernels (device pass only).\n\
                 #include \"cutlass_aot/support.cuh\"\n\
                 #include \"cutlass_aot/narrow.cuh\"\n\
                 #include \"cutlass_aot/conv_small.cuh\"\n"
            .into(),
        include_dirs: Vec::new(),
        key_extra: String::new(),
        native_isa: false,
    }
}

fn family_of(kernel: &GemmKernel) -> String {
    let mut family = format!(
        "{}{}_{}_{}",
        emitter(kernel).family_prefix,
        kernel.opclass.manifest_name(),
        kernel.element_a.manifest_name(),
        kernel.element_accumulator.manifest_name()
    );
    // 2.x kernels of arch 90 (f64 on Hopper's DMMA) compile for sm_90 only: a unit of their own.
    if kernel.api() == Api::Cutlass2x && kernel.arch >= 90 {
        family.push_str("_sm90");
    }
    if let Some(feature) = &kernel.feature {
        family.push('_');
        family.push_str(&feature.replace('-', "_"));
    }
    family
}

/// The source of one unit (kernels of one emitter): each kernel's CUTLASS type and entry macro.
pub fn unit_source(unit_name: &str, kernels: &[GemmKernel]) -> String {
    let mut out = String::new();
    out.push_str("// @generated by cutlass-aot-build. Do not edit.\n");
    let _ = writeln!(
        out,
        "// Translation unit `{unit_name}`: {} kernel(s).",
        kernels.len()
    );
    out.push_str(
        "// Compiled twice: -DCUTLASS_AOT_DEVICE_PASS (fatbin) and -DCUTLASS_AOT_HOST_PASS (Params).\n",
    );
    // In the host pass nvcc still runs a device sub-pass; skipping the whole unit there halves the
    // cost of the host object.
    out.push_str("#if !(defined(CUTLASS_AOT_HOST_PASS) && defined(__CUDA_ARCH__))\n");
    let include = kernels.first().map_or(GEMM_2X.include, |k| emitter(k).include);
    let _ = writeln!(out, "#include \"{include}\"");
    for kernel in kernels {
        out.push('\n');
        out.push_str(&(emitter(kernel).kernel)(kernel));
    }
    out.push_str("\n#endif\n");
    out
}

pub(super) fn shape(kind: &str, s: Shape3) -> String {
    format!("cutlass::gemm::{kind}<{}, {}, {}>", s.m, s.n, s.k)
}

/// `cute::Shape<cute::_128, cute::_128, cute::_64>`: static extents, as the builders require.
pub(super) fn cute_shape(s: Shape3) -> String {
    format!("cute::Shape<cute::_{}, cute::_{}, cute::_{}>", s.m, s.n, s.k)
}

/// A 3.x mainloop's stage count: `stages`, or (0) as many as fit beside the epilogue's shared
/// memory (CUTLASS's own idiom).
pub(super) fn stage_count_3x(stages: u32) -> String {
    if stages == 0 {
        "cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(\n        \
         sizeof(typename CollectiveEpilogue::SharedStorage))>"
            .to_string()
    } else {
        format!("cutlass::gemm::collective::StageCount<{stages}>")
    }
}

/// Element type of a 3.x operand: f32 operands run on tensor cores as TF32, which CUTLASS 3.x
/// spells as the element type (same 32-bit storage).
pub(super) fn operand_type_3x(d: crate::model::DType) -> &'static str {
    match d {
        crate::model::DType::F32 => "cutlass::tfloat32_t",
        other => other.cutlass_type(),
    }
}
