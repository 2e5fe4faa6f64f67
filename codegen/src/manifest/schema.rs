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
    // User kernels (`kind: custom`) only: see `crate::custom`.
    pub source: Option<Value>,
    pub entry: Option<Value>,
    pub operation: Option<Value>,
    pub design: Option<Value>,
    pub params: Option<Value>,
    pub grid: Option<Value>,
    pub block: Option<Value>,
    pub shared_memory: Option<Value>,
    pub requires: Option<Value>,
    // Elementwise entries (`kind: elementwise`) only: see `crate::elementwise`.
    pub op: Option<Value>,
}

impl RawOperation {
    /// The keys of CUTLASS entries that user kernels do not take, and whether each is present.
    pub fn gemm_keys(&self) -> [(&'static str, bool); 34] {
        [
            ("opclass", self.opclass.is_some()),
            ("a", self.a.is_some()),
            ("b", self.b.is_some()),
            ("c", self.c.is_some()),
            ("accumulator", self.accumulator.is_some()),
            ("epilogue_compute", self.epilogue_compute.is_some()),
            ("layout_a", self.layout_a.is_some()),
            ("layout_b", self.layout_b.is_some()),
            ("layout_c", self.layout_c.is_some()),
            ("alignment", self.alignment.is_some()),
            ("alignment_c", self.alignment_c.is_some()),
            ("cluster", self.cluster.is_some()),
            ("warps", self.warps.is_some()),
            ("instruction", self.instruction.is_some()),
            ("stages", self.stages.is_some()),
            ("schedule", self.schedule.is_some()),
            ("epilogue_schedule", self.epilogue_schedule.is_some()),
            ("tile_scheduler", self.tile_scheduler.is_some()),
            ("math", self.math.is_some()),
            ("swizzle", self.swizzle.is_some()),
            ("split_k", self.split_k.is_some()),
            ("epilogue", self.epilogue.is_some()),
            ("activation", self.activation.is_some()),
            ("bias", self.bias.is_some()),
            ("scale", self.scale.is_some()),
            ("aux_output", self.aux_output.is_some()),
            ("residual", self.residual.is_some()),
            ("aux_input", self.aux_input.is_some()),
            ("reduction", self.reduction.is_some()),
            ("group_schedule", self.group_schedule.is_some()),
            ("batch_mode", self.batch_mode.is_some()),
            ("iterator_algorithm", self.iterator_algorithm.is_some()),
            ("stride_support", self.stride_support.is_some()),
            ("tensor_layout", self.tensor_layout.is_some()),
        ]
    }

    /// The user-kernel keys present (an error on a CUTLASS entry).
    pub fn custom_keys_present(&self) -> Vec<&'static str> {
        [
            ("source", self.source.is_some()),
            ("entry", self.entry.is_some()),
            ("operation", self.operation.is_some()),
            ("design", self.design.is_some()),
            ("params", self.params.is_some()),
            ("grid", self.grid.is_some()),
            ("block", self.block.is_some()),
            ("shared_memory", self.shared_memory.is_some()),
            ("requires", self.requires.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, present)| present.then_some(k))
        .collect()
    }
}
