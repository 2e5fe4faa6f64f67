//! Reads and validates `kernel_manifest.yaml`, the list of CUTLASS GEMM kernels to build: CUTLASS
//! 2.x universal GEMMs (`arch: 80`) and CUTLASS 3.x collective-builder GEMMs for Hopper (`arch: 90`,
//! sm_90a code).
//!
//! ```yaml
//! version: 1                 # required, must be 1
//! operations:                # required, non-empty
//!   - kind: gemm             # required; gemm | gemm_grouped | conv2d_fprop | conv2d_dgrad | conv2d_wgrad
//!     name: hgemm_{layout}   # optional Rust name template (see below)
//!     arch: 80               # required; 80 (CUTLASS 2.x) | 90 (CUTLASS 3.x, sm_90a; f64: 2.x, sm_90)
//!     opclass: tensorop      # tensorop | simt (80 only); default tensorop
//!     a: f16                 # required; f16 | bf16 | f32 | f64 | e4m3 | e5m2 (90 only) | s8
//!     b: f16                 # default a (on 90, e4m3 and e5m2 may be mixed)
//!     c: f16                 # default a, except s32 for s8
//!     accumulator: f32       # default f64 for f64, s32 for s8, else f32
//!     epilogue_compute: f32  # default accumulator
//!     layout_a: row          # required; row | column
//!     layout_b: column       # required
//!     layout_c: row          # default row
//!     alignment: 8           # A/B, elements; default 128 bits / element bits (tensorop), 1 (simt)
//!     alignment_c: 8         # default min(alignment, 128 bits / bits of c)
//!     tile: [128, 128, 32]   # required
//!     cluster: [1, 1, 1]     # 90 only: CTAs per cluster, M and N of 1, 2 or 4, K 1; default 1x1x1
//!     warps: [2, 2, 1]       # 80 only, and required there (on 90 the schedule decides)
//!     instruction: [16, 8, 16]  # 2.x only; default 16x8x16 f16/bf16, 16x8x8 f32, 8x8x4 f64 (16x8x4 on 90),
//!                            #   1x1x1 simt
//!     stages: 3              # 80: default 3 (tensorop), 4 (simt); 90: a count >= 2 or `auto` (default)
//!     schedule: auto         # 90 only: auto | warpspecialized | cooperative | pingpong; default auto
//!     epilogue_schedule: auto  # 90 only: auto | no_smem | tma; default auto
//!     tile_scheduler: persistent  # 90 only: persistent | stream_k; default persistent
//!     math: multiply_add     # default
//!     swizzle: identity8     # 80 only: identity1 | identity2 | identity4 | identity8 | batched
//!     epilogue: linear_combination  # | linear_combination_clamp | fast_linear_combination_clamp
//!                            #   (80, s8 output, K <= 256); default clamp for an s8 output on 80
//!     activation: identity   # | relu | leaky_relu | tanh | sigmoid | silu | hardswish | gelu
//!                            #   | gelu_taylor; default identity
//!     bias: none             # 90 only: none | per_row | per_col (a vector of m or n, C's type)
//!     scale: none            # 90 only: none | per_row | per_col (alpha and beta vectors)
//!     aux_output: none       # 90 only: none | pre_activation (needs a bias)
//!     residual: none         # 90 only: none | after_activation (C added after the activation)
//!     aux_input: none        # 90 only: none | pre_activation (backward: act'(Z) from the forward Z)
//!     reduction: none        # 90 only: none | row_sum (D's row sums; needs aux_input)
//! ```
//!
//! Conv entries (`conv2d_*`) take the same keys but no `layout_*` (`tensor_layout` says how their
//! tensors lie; the implicit GEMM's view is `ConvKind::gemm_layouts`), plus `iterator_algorithm: optimized |
//! analytic | fixed_channels | few_channels | first_layer`, `stride_support: strided | unity` and
//! `tensor_layout: nhwc | nc32hw32` (CUTLASS's interleaved int8 fprop) on arch 80; on
//! arch 90 `tile_scheduler: stream_k` runs our persistent conv kernel with two consumer warpgroups
//! (`schedule: cooperative`) or one (`schedule: warpspecialized`). Their rules are in
//! `validate/rules_conv.rs`.
//!
//! Fused epilogues (`activation`, `bias`, ... ; rules in `validate/rules_epilogue.rs`) are
//! CUTLASS's generic linear combination on arch 80 (activations and clamps only) and CUTLASS 3.x
//! fusion operations on arch 90, which need `epilogue_schedule: tma` and exist for: an activation
//! (or the clamp); a bias with an activation; plus an aux output; scale vectors with a bias of the
//! same direction; a residual with a per-column bias and scales; backward kernels (the derivative of
//! relu or gelu_taylor at an aux input), with or without the row sums of D.
//!
//! Keys of the other generation are errors (`arch_keys.rs`): an arch 90 entry has no `warps`,
//! `instruction` or `swizzle` (its kernel stores 0x0x0, 0x0x0 and identity8), an arch 80 entry no
//! `cluster`, `schedule`, `epilogue_schedule`, `tile_scheduler` or `stages: auto`. `stages: auto` is
//! stored as 0. The two generations' rules are in `validate/rules_2x.rs` and `validate/rules_3x.rs`.
//!
//! Any field but `kind` and `name` may be a list (a *family*); the entry then expands to the cross
//! product of its lists, the first field above varying slowest. Shapes in a family are lists of
//! lists. `name` placeholders are listed in `naming.rs`; without `name`, a kernel's Rust name is its
//! CUTLASS library name.
//!
//! Reading goes: serde (`schema.rs`, key structure only) → typed families (`entry.rs`, `values.rs`)
//! → keys per arch (`arch_keys.rs`) → kernels (`expand.rs`) → rules (`validate.rs`,
//! `duplicates.rs`, `naming.rs`). Every problem is collected with its `file:line` (`source_map.rs`,
//! over libyaml's events in `yaml_events.rs`; `report.rs`) and all are returned together, each
//! once, in line order. Reading is linear in the size of the manifest (10,000 entries: well under a
//! second); what aliases may expand to and how deep lists nest are bounded first (`MAX_ALIAS_NODES`,
//! `MAX_DEPTH`), so that no text makes serde_yaml take minutes or all the memory there is.

mod arch_keys;
mod duplicates;
mod entry;
mod entry_reader;
mod error;
mod expand;
mod naming;
mod report;
pub(crate) mod schema;
mod source_map;
mod validate;
mod values;
mod yaml_events;

pub(crate) use entry_reader::{is_identifier, EntryReader};
pub use error::{ManifestError, Problem};
pub(crate) use report::Report;
pub(crate) use values::describe as describe_value;

/// Everything a manifest lists: CUTLASS kernels and user kernels, each in manifest order.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub kernels: Vec<GemmKernel>,
    pub user_kernels: Vec<crate::custom::CustomKernel>,
    pub elementwise: Vec<crate::elementwise::ElementwiseKernel>,
}

use crate::model::GemmKernel;
use std::path::Path;

/// Reads and validates the manifest at `path`; problems are labelled with `path` as written. Its
/// CUTLASS kernels only (see [`load_manifest`]).
pub fn load(path: &Path) -> Result<Vec<GemmKernel>, ManifestError> {
    load_manifest(path).map(|m| m.kernels)
}

/// Reads and validates the manifest at `path`: its CUTLASS kernels and its user kernels.
pub fn load_manifest(path: &Path) -> Result<Manifest, ManifestError> {
    let file = path.display().to_string();
    let problem = |line, message| ManifestError {
        problems: vec![Problem {
            file: file.clone(),
            line,
            field: String::new(),
            message,
        }],
    };
    let bytes =
        std::fs::read(path).map_err(|err| problem(None, format!("cannot read the manifest: {err}")))?;
    let text = String::from_utf8(bytes).map_err(|err| {
        let (line, column, byte) = utf8_error_position(err.as_bytes(), err.utf8_error().valid_up_to());
        let message = format!(
            "cannot read the manifest: byte 0x{byte:02X} at column {column} is not valid UTF-8; a manifest \
             is UTF-8 text"
        );
        problem(Some(line), message)
    })?;
    parse_manifest(&text, &file)
}

/// The 1-based line and column (in bytes) of byte `at` of `bytes`, and the byte itself.
fn utf8_error_position(bytes: &[u8], at: usize) -> (usize, usize, u8) {
    let before = &bytes[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line, at - line_start + 1, bytes[at])
}

/// The most YAML nodes aliases may add to a manifest (each alias is a copy of its anchored node):
/// far more than any real manifest needs, far less than what would exhaust memory.
const MAX_ALIAS_NODES: u64 = 1_000_000;

/// The deepest nesting of lists and mappings: serde_yaml's recursion limit (a manifest needs 4).
const MAX_DEPTH: usize = 128;

/// Validates manifest `text`, labelling problems with `file_label`, and returns its CUTLASS
/// kernels in manifest order (families expanded); see [`parse_manifest`] for user kernels too.
pub fn parse(text: &str, file_label: &str) -> Result<Vec<GemmKernel>, ManifestError> {
    parse_manifest(text, file_label).map(|m| m.kernels)
}

/// [`parse`], with the user kernels (`kind: custom`).
pub fn parse_manifest(text: &str, file_label: &str) -> Result<Manifest, ManifestError> {
    // YAML syntax errors and structural ones (unknown keys, a list where a mapping belongs) stop
    // here: nothing after them could be trusted. Parsing as a plain value first tells the two apart.
    let fail = |err: serde_yaml::Error, prefix: &str| {
        let mut problem = Problem::from_yaml(file_label, &err);
        // A few errors have no position in serde_yaml (more than one document, an alias that
        // expands too much); every problem still gets a line.
        if problem.line.is_none() {
            problem.line = Some(source_map::unlocated_error_line(text, &problem.message));
        }
        // The end of a text without a final line break is one line further in libyaml's count.
        problem.line = problem.line.map(|line| line.min(source_map::last_line(text)));
        problem.message.insert_str(0, prefix);
        ManifestError {
            problems: vec![problem],
        }
    };
    // What serde_yaml would read slowly or into all the memory there is stops here, early.
    if let Some((excess, line)) = source_map::excess(text, MAX_ALIAS_NODES, MAX_DEPTH) {
        let message = match excess {
            source_map::Excess::Aliases => format!(
                "the aliases up to here expand the manifest by more than {MAX_ALIAS_NODES} YAML nodes; write \
                 the values out, or alias smaller nodes fewer times"
            ),
            source_map::Excess::Depth => format!(
                "invalid YAML: recursion limit exceeded: lists and mappings nested more than {MAX_DEPTH} deep"
            ),
        };
        let problem = Problem {
            file: file_label.to_string(),
            line: Some(line.min(source_map::last_line(text))),
            field: String::new(),
            message,
        };
        return Err(ManifestError {
            problems: vec![problem],
        });
    }
    serde_yaml::from_str::<serde_yaml::Value>(text).map_err(|err| fail(err, "invalid YAML: "))?;
    let raw: schema::RawManifest = serde_yaml::from_str(text).map_err(|err| fail(err, ""))?;
    let mut report = Report::new(file_label, text);

    match &raw.version {
        None => report.top(
            "version",
            "missing; add `version: 1` (the only version)".to_string(),
        ),
        Some(v) if v.as_u64() == Some(1) => {}
        Some(v) => report.top(
            "version",
            format!("{} is not supported; allowed: 1", values::describe(v)),
        ),
    }
    let operations = raw.operations.unwrap_or_default();
    if operations.is_empty() {
        let message = "missing or empty; give a list of at least one kernel entry (`- kind: gemm ...`)";
        report.top("operations", message.to_string());
    }

    let mut kernels = Vec::new(); // (entry index, kernel), sound ones only
    let mut user_kernels: Vec<(usize, crate::custom::CustomKernel)> = Vec::new();
    let mut elementwise: Vec<(usize, crate::elementwise::ElementwiseKernel)> = Vec::new();
    for (index, raw_entry) in operations.iter().enumerate() {
        if raw_entry.kind.as_ref().and_then(|k| k.as_str()) == Some("elementwise") {
            let origin = report.origin(index);
            for kernel in crate::elementwise::read_entry(raw_entry, index, &mut report, &origin) {
                elementwise.push((index, kernel));
            }
            continue;
        }
        if raw_entry.op.is_some() {
            let message = "`op` is a key of elementwise entries (`kind: elementwise`) only".to_string();
            report.at(index, Some("op"), None, message);
        }
        if raw_entry.kind.as_ref().and_then(|k| k.as_str()) == Some("custom") {
            let origin = report.origin(index);
            for kernel in crate::custom::read_entry(raw_entry, index, &mut report, &origin) {
                user_kernels.push((index, kernel));
            }
            continue;
        }
        for key in raw_entry.custom_keys_present() {
            let message = format!("`{key}` is a key of user kernels (`kind: custom`) only");
            report.at(index, Some(key), None, message);
        }
        let Some(mut entry) = entry::read(raw_entry, index, &mut report) else {
            continue;
        };
        let key_problems = arch_keys::check(&entry);
        entry.clean &= key_problems.is_empty();
        let blocked = key_problems.iter().any(|p| p.blocking);
        for problem in key_problems {
            report.at(index, Some(problem.key), None, problem.message);
        }
        if blocked {
            continue;
        }
        let count = expand::count(&entry);
        if count > expand::MAX_KERNELS_PER_ENTRY {
            let limit = expand::MAX_KERNELS_PER_ENTRY;
            let message = format!(
                "expands to {count} kernels; at most {limit} per entry are allowed: shorten its lists or split it"
            );
            report.at(index, None, None, message);
            continue;
        }
        for kernel in expand::expand(&entry, &report.origin(index)) {
            let findings = validate::check(&kernel);
            let mut valid = findings.is_empty();
            for (key, message) in findings {
                report.at(index, Some(key), None, message);
            }
            if let Some(template) = &entry.name {
                let misused = template.misused(&kernel);
                let named = misused.is_empty();
                for message in misused {
                    report.at(index, Some("name"), None, message);
                }
                if let Err(message) = naming::check_identifier(&kernel.rust_name) {
                    report.at(index, Some("name"), None, message);
                }
                valid &= named;
            }
            // Collisions are only looked for among sound kernels: a bad value replaced by its
            // default, or a kernel that breaks a rule, would only add noise.
            if entry.clean && valid {
                kernels.push((index, kernel));
            }
        }
    }
    for dup in duplicates::find(&kernels) {
        report.at(dup.entry, dup.key, None, dup.message);
    }
    // A user or elementwise kernel's Rust name is a module beside every other kernel's.
    let others = user_kernels
        .iter()
        .map(|(index, k)| (*index, &k.rust_name, &k.origin))
        .chain(
            elementwise
                .iter()
                .map(|(index, k)| (*index, &k.rust_name, &k.origin)),
        );
    for (at, (index, rust_name, _)) in others.clone().enumerate() {
        let taken_by_other = others.clone().take(at).find(|(_, other, _)| *other == rust_name);
        let taken_by_cutlass = kernels.iter().find(|(_, k)| &k.rust_name == rust_name);
        let other_origin = taken_by_other
            .map(|(_, _, origin)| origin.clone())
            .or_else(|| taken_by_cutlass.map(|(_, k)| k.origin.clone()));
        if let Some(other) = other_origin {
            let message = format!(
                "the Rust name `{rust_name}` is also the name of a kernel of {other}; give this entry a \
                 `name` template that tells them apart"
            );
            report.at(index, Some("name"), None, message);
        }
    }

    if report.is_empty() {
        Ok(Manifest {
            kernels: kernels.into_iter().map(|(_, kernel)| kernel).collect(),
            user_kernels: user_kernels.into_iter().map(|(_, kernel)| kernel).collect(),
            elementwise: elementwise.into_iter().map(|(_, kernel)| kernel).collect(),
        })
    } else {
        Err(report.into_error())
    }
}
