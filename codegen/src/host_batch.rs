//! Host passes of several units as one translation unit: a host pass spends most of its time
//! parsing CUTLASS's headers (5–10 s), the same for one kernel as for forty, so the units of one
//! generation and operation family (the same glue headers) compile their host code together, a few
//! units per batch so that the batches still run in parallel. Units with their own include
//! directories or key text (user kernels) keep their own host pass.

use crate::emit_cpp::Unit;

/// At most this many units' host code in one translation unit.
pub const HOST_BATCH_UNITS: usize = 8;

/// The units (indices into `units`) whose host passes compile together, in order.
pub fn host_batches(units: &[Unit]) -> Vec<Vec<usize>> {
    let mut batches: Vec<Vec<usize>> = Vec::new();
    // (generation and glue headers, batch index): units of one operation family, since glue
    // headers may order their includes differently (conv_3x.cuh must come before CUTLASS's).
    let mut open: Vec<((crate::model::Api, &[&str]), usize)> = Vec::new();
    for (index, unit) in units.iter().enumerate() {
        if !unit.include_dirs.is_empty() || !unit.key_extra.is_empty() {
            batches.push(vec![index]);
            continue;
        }
        let family = (unit.api, unit.glue);
        match open.iter().position(|(f, _)| *f == family) {
            Some(slot) if batches[open[slot].1].len() < HOST_BATCH_UNITS => batches[open[slot].1].push(index),
            found => {
                if let Some(slot) = found {
                    open.swap_remove(slot);
                }
                open.push((family, batches.len()));
                batches.push(vec![index]);
            }
        }
    }
    batches
}

/// The unit whose host pass compiles the host code of `members` (a lone unit stays itself): their
/// sources one after another (each guards its own code; the glue headers are `#pragma once`).
pub fn host_unit(units: &[Unit], members: &[usize]) -> Unit {
    if let [only] = members {
        return units[*only].clone();
    }
    let first = &units[members[0]];
    let mut source = String::new();
    for &member in members {
        source.push_str(&units[member].source);
        source.push('\n');
    }
    Unit {
        name: format!("host_{}_and_{}_more", first.name, members.len() - 1),
        api: first.api,
        // A batch's units share their glue headers (`host_batches` groups them by it).
        glue: first.glue,
        kernels: members
            .iter()
            .flat_map(|&m| units[m].kernels.iter().cloned())
            .collect(),
        source,
        include_dirs: Vec::new(),
        key_extra: String::new(),
        native_isa: first.native_isa,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Api;

    fn unit(name: &str, api: Api, user: bool) -> Unit {
        Unit {
            name: name.into(),
            api,
            glue: if name.starts_with('c') {
                &["cutlass_aot/conv_3x.cuh"]
            } else {
                &["cutlass_aot/abi.h"]
            },
            kernels: Vec::new(),
            source: format!("int {name};\n"),
            include_dirs: if user { vec!["/user".into()] } else { Vec::new() },
            key_extra: String::new(),
            native_isa: false,
        }
    }

    #[test]
    fn units_of_one_generation_share_host_passes_in_batches() {
        let mut units: Vec<Unit> = (0..10)
            .map(|i| unit(&format!("a{i}"), Api::Cutlass3x, false))
            .collect();
        units.insert(3, unit("b0", Api::Cutlass2x, false));
        units.insert(5, unit("user", Api::Cutlass2x, true));
        units.push(unit("b1", Api::Cutlass2x, false));
        units.push(unit("c0", Api::Cutlass3x, false));
        let batches = host_batches(&units);
        let names: Vec<Vec<&str>> = batches
            .iter()
            .map(|b| b.iter().map(|&i| units[i].name.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            [
                vec!["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"],
                vec!["b0", "b1"],
                vec!["user"],
                vec!["a8", "a9"],
                vec!["c0"],
            ]
        );
        // Every unit's host code is compiled exactly once.
        let mut all: Vec<usize> = batches.concat();
        all.sort();
        assert_eq!(all, (0..units.len()).collect::<Vec<_>>());
        let merged = host_unit(&units, &batches[1]);
        assert_eq!(merged.source, "int b0;\n\nint b1;\n\n");
        assert_eq!(merged.glue, ["cutlass_aot/abi.h"]);
        assert_eq!(merged.name, "host_b0_and_1_more");
        assert_eq!(host_unit(&units, &batches[2]).name, "user");
    }
}
