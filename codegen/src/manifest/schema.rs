//! The manifest as serde reads it: only the key structure is checked here (unknown keys are
//! rejected with their line by serde_yaml); every value stays a raw `serde_yaml::Value` so that
//! `entry.rs` can turn each into a typed family with a message that lists the allowed values,
//! reporting all bad values instead of stopping at the first.

use serde::Deserialize;
use serde_yaml::Value;

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with the keys `version` and `operations`"
)]
pub struct RawManifest {
    pub version: Option<Value>,
    pub operations: Option<Vec<RawOperation>>,
}

/// One entry of `operations`. Field order is the cross-product order of a family (first field
/// varies slowest), as in CUTLASS's generator; `expand.rs` follows the same order.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as `{kind: gemm, arch: 80, a: f16, ...}`"
)]
pub struct RawOperation {
    pub kind: Option<Value>,
    pub name: Option<Value>,
    pub arch: Option<Value>,
    pub opclass: Option<Value>,
    pub a: Option<Value>,
    pub b: Option<Value>,
    pub c: Option<Value>,
    pub accumulator: Option<Value>,
    pub epilogue_compute: Option<Value>,
    pub layout_a: Option<Value>,
    pub layout_b: Option<Value>,
    pub layout_c: Option<Value>,
    pub alignment: Option<Value>,
    pub alignment_c: Option<Value>,
    pub tile: Option<Value>,
    pub cluster: Option<Value>,
    pub warps: Option<Value>,
    pub instruction: Option<Value>,
    pub stages: Option<Value>,
    pub schedule: Option<Value>,
    pub epilogue_schedule: Option<Value>,
    pub tile_scheduler: Option<Value>,
    pub math: Option<Value>,
    pub swizzle: Option<Value>,
    pub split_k: Option<Value>,
    pub epilogue: Option<Value>,
    pub activation: Option<Value>,
    pub bias: Option<Value>,
    pub scale: Option<Value>,
    pub aux_output: Option<Value>,
    pub residual: Option<Value>,
    pub aux_input: Option<Value>,
    pub reduction: Option<Value>,
    pub group_schedule: Option<Value>,
    pub batch_mode: Option<Value>,
    pub iterator_algorithm: Option<Value>,
    pub stride_support: Option<Value>,
    pub tensor_layout: Option<Value>,
    pub feature: Option<Value>,
}
