//! Kernels that collide across the whole manifest: the same kernel twice, or two kernels sharing a
//! Rust name.

use super::naming::distinguishing_placeholders;
use crate::model::GemmKernel;
use std::collections::HashMap;

/// A collision, reported at the later kernel's entry (`entry`) and field (`key`).
pub struct Duplicate {
    pub entry: usize,
    pub key: Option<&'static str>,
    pub message: String,
}

/// Every collision among `kernels` (each with the index of its entry), in manifest order.
pub fn find(kernels: &[(usize, GemmKernel)]) -> Vec<Duplicate> {
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let mut by_rust_name: HashMap<&str, usize> = HashMap::new();
    let mut found = Vec::new();
    for (j, (entry, kernel)) in kernels.iter().enumerate() {
        if let Some(&i) = by_name.get(kernel.name.as_str()) {
            let (first_entry, first) = &kernels[i];
            let differences = differences(first, kernel);
            let message = if differences.is_empty() {
                let hint = if first_entry == entry {
                    " (this entry: one of its lists repeats a value)"
                } else {
                    ""
                };
                format!(
                    "{} is the same kernel as {}{hint}; remove one of them",
                    kernel.name, first.origin
                )
            } else {
                format!(
                    "{} is also the name of the kernel from {}, which differs only in {}; the library name \
                     (the kernel's C symbol) does not show these fields, so keep only one of the two",
                    kernel.name,
                    first.origin,
                    differences.join(", ")
                )
            };
            found.push(Duplicate {
                entry: *entry,
                key: None,
                message,
            });
        } else if let Some(&i) = by_rust_name.get(kernel.rust_name.as_str()) {
            let (first_entry, first) = &kernels[i];
            let mut message = format!(
                "Rust name {} is also used by {} ({}, while this kernel is {}); every kernel needs its own Rust name",
                kernel.rust_name, first.origin, first.name, kernel.name
            );
            if first_entry == entry {
                message.push_str(&format!(
                    "; this entry expands to several kernels, so add placeholders that tell them apart, such as {}",
                    distinguishing_placeholders(first, kernel).join(" ")
                ));
            }
            found.push(Duplicate {
                entry: *entry,
                key: Some("name"),
                message,
            });
        }
        by_name.entry(&kernel.name).or_insert(j);
        by_rust_name.entry(&kernel.rust_name).or_insert(j);
    }
    found
}

/// The manifest fields in which two kernels differ (names and origin aside).
fn differences(x: &GemmKernel, y: &GemmKernel) -> Vec<&'static str> {
    let fields = [
        ("arch", x.arch == y.arch),
        ("opclass", x.opclass == y.opclass),
        ("a", x.element_a == y.element_a),
        ("b", x.element_b == y.element_b),
        ("c", x.element_c == y.element_c),
        ("accumulator", x.element_accumulator == y.element_accumulator),
        ("epilogue_compute", x.element_epilogue == y.element_epilogue),
        ("layout_a", x.layout_a == y.layout_a),
        ("layout_b", x.layout_b == y.layout_b),
        ("layout_c", x.layout_c == y.layout_c),
        (
            "alignment",
            x.alignment_a == y.alignment_a && x.alignment_b == y.alignment_b,
        ),
        ("alignment_c", x.alignment_c == y.alignment_c),
        ("tile", x.tile == y.tile),
        ("cluster", x.cluster == y.cluster),
        ("warps", x.warps == y.warps),
        ("instruction", x.instruction == y.instruction),
        ("stages", x.stages == y.stages),
        ("schedule", x.schedule == y.schedule),
        ("epilogue_schedule", x.epilogue_schedule == y.epilogue_schedule),
        ("tile_scheduler", x.tile_scheduler == y.tile_scheduler),
        ("math", x.math == y.math),
        ("swizzle", x.swizzle == y.swizzle),
        ("epilogue", x.epilogue == y.epilogue),
        ("activation", x.fusion.activation == y.fusion.activation),
        ("bias", x.fusion.bias == y.fusion.bias),
        ("scale", x.fusion.scale == y.fusion.scale),
        ("aux_output", x.fusion.aux_output == y.fusion.aux_output),
        ("residual", x.fusion.residual == y.fusion.residual),
        ("aux_input", x.fusion.aux_input == y.fusion.aux_input),
        ("reduction", x.fusion.reduction == y.fusion.reduction),
    ];
    fields
        .iter()
        .filter(|(_, same)| !same)
        .map(|(field, _)| *field)
        .collect()
}
