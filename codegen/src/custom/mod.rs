//! User kernels (`kind: custom` entries): the user's own CUDA source, described by the manifest.
//!
//! ```yaml
//! - kind: custom
//!   name: naive_gemm_{tile_m}x{tile_n}_{layout_a}   # Rust name; {key} = a design value, {arch}
//!   source: kernels/naive_gemm.cu      # relative to the manifest; may include CUTLASS / CuTe
//!   entry: naive_gemm_f64              # its `extern "C" __global__` function
//!   operation: gemm                    # what it computes, for discovery; default `custom`
//!   arch: 80                           # 80: portable code (SASS for every CUTLASS_AOT_ARCHS
//!                                      # target >= 80); 90: sm_90a code; a list is a family
//!   tile: [[32, 32], [16, 16]]         # optional [M, N] or [M, N, K], or a family of them
//!   design: {layout_a: [row, column]}  # more design values (integers or words; lists: family)
//!   params:                            # the entry's parameters, in order
//!     - {name: m, type: i32}           # scalars: i32 i64 u32 u64 f32 f64
//!     - {name: a, buffer: f64, access: read, len: "m * k", layout: layout_a}
//!   grid: ["ceil_div(n, tile_n)", "ceil_div(m, tile_m)"]   # 1 to 3 expressions
//!   block: [tile_n, tile_m]
//!   shared_memory: 0                   # bytes of dynamic shared memory (expression)
//!   requires:                          # checked by supports() and before every launch
//!     - {holds: "m > 0 && n > 0", reason: "the kernel needs a non-empty output"}
//! ```
//!
//! Each kernel is compiled with its design values as macros: `TILE_M`, `TILE_N`, `TILE_K`, and per
//! `design` key its upper-case name (`-DLAYOUT_A_ROW=1` for a word, `-DSPLIT=4` for an integer).
//! A `static_assert` checks the entry's parameter list against `params` when nvcc compiles it.
//! Expressions (`cutlass_aot_model::custom::Expr`) name integer scalar parameters, design values
//! and `tile_m` / `tile_n` / `tile_k`.

mod cpp;
mod read;
mod rust;

pub use cpp::{local_headers, unit as cpp_unit};
pub use read::{read_entry, RAW_KEYS};
pub use rust::{kernel_module, registry_entry};

use crate::model::custom::{Access, Op, ScalarType};
use crate::model::{Api, DType, Layout, Shape3};

/// One user kernel of an expanded `kind: custom` entry, fully checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomKernel {
    /// Rust module name; also its name in the registry.
    pub rust_name: String,
    /// The cargo feature it is built under (`None`: always).
    pub feature: Option<String>,
    /// Where the entry came from: `file:line`.
    pub origin: String,
    /// Minimum compute capability (80, or 90 for sm_90a code).
    pub arch: u32,
    /// The source as the manifest wrote it (relative to the manifest's directory).
    pub source: String,
    pub entry: String,
    pub operation: String,
    pub params: Vec<ParamSpec>,
    pub tile: Shape3,
    /// Every design value (tile values included), in manifest order.
    pub values: Vec<(String, Value)>,
    pub grid: [ExprSpec; 3],
    pub block: [ExprSpec; 3],
    pub shared_memory: ExprSpec,
    pub requires: Vec<(ExprSpec, String)>,
}

/// An owned design value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Int(i64),
    Word(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Word(w) => f.write_str(w),
        }
    }
}

/// An owned, compiled expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprSpec {
    pub text: String,
    pub code: Vec<Op>,
}

/// An owned parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamSpec {
    Scalar {
        name: String,
        ty: ScalarType,
    },
    Buffer {
        name: String,
        element: DType,
        access: Access,
        layout: Option<Layout>,
        len: ExprSpec,
    },
}

impl ParamSpec {
    pub fn name(&self) -> &str {
        match self {
            ParamSpec::Scalar { name, .. } | ParamSpec::Buffer { name, .. } => name,
        }
    }
}

impl CustomKernel {
    /// The code it is compiled to (see `CustomDesign::code`).
    pub fn api(&self) -> Api {
        if self.arch >= 90 {
            Api::Cutlass3x
        } else {
            Api::Cutlass2x
        }
    }
}
