//! Which keys an entry may have for its `arch`: CUTLASS 2.x kernels (arch 80) are shaped by `warps`
//! (required), `instruction` and `swizzle`; CUTLASS 3.x kernels (arch 90) by `cluster`, `schedule`,
//! `epilogue_schedule`, `tile_scheduler` and `stages: auto`. A key of the other generation is an
//! error rather than silently ignored; so is `stages: 0` on arch 90, which would read as `auto`.
//! Checked on the entry, where "given" and "left out" (and `auto` and 0) still differ: a resolved
//! kernel stores a default either way.

use super::entry::Entry;
use super::values::Stages;
use crate::model::{api_of, Api, OperationKind};

/// A key the entry must not have (or must have) for one of its arches.
pub struct KeyProblem {
    pub key: &'static str,
    pub message: String,
    /// True when a required key is missing: no kernel can be built from the entry.
    pub blocking: bool,
}

/// Whether some (arch, a) pair of `e` is built by `api` (`api_of`, as `GemmKernel::api()`; an
/// unsupported arch is reported by `validate.rs` and checked as the generation it falls in).
fn builds(e: &Entry, api: Api) -> bool {
    e.arch
        .iter()
        .any(|&arch| e.a.iter().any(|&a| api_of(arch, a) == api))
}

/// Every key of `e` that does not fit one of its arches.
pub fn check(e: &Entry) -> Vec<KeyProblem> {
    let has_2x = builds(e, Api::Cutlass2x);
    let has_3x = builds(e, Api::Cutlass3x);
    let split = if has_2x && has_3x {
        "; this entry mixes CUTLASS 2.x kernels (arch 80, f64 on 90) and 3.x kernels (arch 90), so split \
         it into one entry per generation"
    } else {
        ""
    };
    let mut out = Vec::new();
    let mut wrong = |key: &'static str, given: bool, why: &str| {
        if given {
            out.push(KeyProblem {
                key,
                message: format!("{why}{split}"),
                blocking: false,
            });
        }
    };
    if has_2x {
        let auto = e.stages.iter().flatten().any(|s| *s == Stages::Auto);
        wrong(
            "cluster",
            e.cluster.is_some(),
            "cluster is only for CUTLASS 3.x kernels (arch 90, not f64); 2.x kernels have no clusters: remove it",
        );
        wrong(
            "schedule",
            e.schedule.is_some(),
            "schedule is only for CUTLASS 3.x kernels (arch 90, not f64); 2.x kernels are shaped by `warps` \
             and `stages`: remove it",
        );
        wrong(
            "epilogue_schedule",
            e.epilogue_schedule.is_some(),
            "epilogue_schedule is only for CUTLASS 3.x kernels (arch 90, not f64); 2.x kernels have one \
             epilogue: remove it",
        );
        wrong(
            "tile_scheduler",
            e.tile_scheduler.is_some(),
            "tile_scheduler is only for CUTLASS 3.x persistent kernels (arch 90, not f64); 2.x kernels \
             launch one threadblock per tile, in the order `swizzle` gives: remove it",
        );
        wrong(
            "stages",
            auto,
            "`auto` is only for CUTLASS 3.x kernels (arch 90, not f64); 2.x kernels need a stage count: 2 to 10",
        );
    }
    if has_3x {
        let zero = e.stages.iter().flatten().any(|s| *s == Stages::Fixed(0));
        wrong(
            "stages",
            zero,
            "0 is not allowed on arch 90; allowed: auto (as many stages as fit in shared memory), or 2 or \
             more",
        );
        wrong(
            "warps",
            e.warps.is_some(),
            "warps is only for arch 80 (CUTLASS 2.x); on arch 90 the kernel schedule decides the warp \
             groups (see `schedule`): remove it",
        );
        wrong(
            "instruction",
            e.instruction.is_some(),
            "instruction is only for arch 80 (CUTLASS 2.x); on arch 90 CUTLASS's collective builder picks \
             the warpgroup MMA (wgmma) from the types and the tile: remove it",
        );
        wrong(
            "split_k",
            e.split_k.is_some(),
            "split_k is only for arch 80 (CUTLASS 2.x); on arch 90, kernels with `tile_scheduler: stream_k` \
             split K at run time: remove it",
        );
        wrong(
            "swizzle",
            e.swizzle.is_some(),
            "swizzle is only for arch 80 (CUTLASS 2.x); arch 90 kernels choose their rasterisation at run \
             time: remove it",
        );
    }
    if e.group_schedule.is_some() && e.kind != OperationKind::GemmGrouped {
        out.push(KeyProblem {
            key: "group_schedule",
            message: format!(
                "group_schedule is only for `kind: gemm_grouped` (this entry is {}): remove it",
                e.kind
            ),
            blocking: false,
        });
    } else if has_3x && e.group_schedule.is_some() {
        out.push(KeyProblem {
            key: "group_schedule",
            message: format!(
                "group_schedule is only for arch 80 (CUTLASS 2.x grouped kernels); arch 90 grouped kernels \
                 always schedule on the device: remove it{split}"
            ),
            blocking: false,
        });
    }
    if e.batch_mode.is_some() && e.kind != OperationKind::Gemm {
        out.push(KeyProblem {
            key: "batch_mode",
            message: format!(
                "batch_mode is only for `kind: gemm` (this entry is {}): remove it",
                e.kind
            ),
            blocking: false,
        });
    } else if has_2x && e.batch_mode.is_some() {
        out.push(KeyProblem {
            key: "batch_mode",
            message: format!(
                "batch_mode is only for arch 90 (CUTLASS 3.x); 2.x kernels take strided batches and pointer \
                 arrays at run time: remove it{split}"
            ),
            blocking: false,
        });
    }
    if e.kind == OperationKind::GemmGrouped && e.swizzle.is_some() {
        out.push(KeyProblem {
            key: "swizzle",
            message:
                "swizzle is not for grouped kernels, which walk their tiles in their own order: remove it"
                    .to_string(),
            blocking: false,
        });
    }
    let conv = e.kind.conv_kind().is_some();
    for (key, given) in [
        ("iterator_algorithm", e.iterator_algorithm.is_some()),
        ("stride_support", e.stride_support.is_some()),
        ("tensor_layout", e.tensor_layout.is_some()),
    ] {
        if !given {
            continue;
        }
        let message = if !conv {
            format!(
                "{key} is only for conv kinds (conv2d_fprop, conv2d_dgrad, conv2d_wgrad; this entry is {}): \
                 remove it",
                e.kind
            )
        } else if has_3x {
            format!(
                "{key} is only for arch 80 (CUTLASS 2.x convolutions); arch 90 convolutions read the \
                 activation with TMA im2col: remove it{split}"
            )
        } else {
            continue;
        };
        out.push(KeyProblem {
            key,
            message,
            blocking: false,
        });
    }
    if conv {
        for (key, given) in [("bias", e.bias.is_some()), ("scale", e.scale.is_some())] {
            if given {
                out.push(KeyProblem {
                    key,
                    message: format!(
                        "{key} is not supported for conv kinds yet (their epilogues fuse an activation \
                         only): remove it"
                    ),
                    blocking: false,
                });
            }
        }
    }
    if has_2x && e.warps.is_none() {
        out.push(KeyProblem {
            key: "warps",
            message: format!("missing; `warps` is required: the warp count [M, N, K], e.g. [2, 2, 1]{split}"),
            blocking: true,
        });
    }
    out
}
