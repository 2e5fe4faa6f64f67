//! The rules one resolved kernel must follow. Each finding names the manifest field to blame and
//! says what would be allowed. CUTLASS 2.x kernels (arch 80) and CUTLASS 3.x kernels (arch 90)
//! follow separate rule sets, in `rules_2x.rs` and `rules_3x.rs`; this module picks one and holds
//! what they share. (Which keys each arch takes at all is checked earlier, in `arch_keys.rs`.)

mod rules_2x;
mod rules_3x;
mod rules_conv;
mod rules_epilogue;
mod rules_grouped;

use crate::model::{Api, GemmKernel, Shape3};

/// A rule broken by a kernel: the manifest field to blame and the message.
pub type Finding = (&'static str, String);

/// Every rule broken by `k`.
pub fn check(k: &GemmKernel) -> Vec<Finding> {
    let mut out = Vec::new();
    if k.arch != 80 && k.arch != 90 {
        out.push((
            "arch",
            format!(
                "{} is not supported; allowed: 80 (CUTLASS 2.x kernels built for sm_80; they also run on \
                 sm_86, sm_89 and sm_90), 90 (CUTLASS 3.x kernels built for sm_90a, and f64 2.x kernels on Hopper's \
                 DMMA; they run on sm_90 only)",
                k.arch
            ),
        ));
    }
    // An unsupported arch is checked by the rules of the generation it falls in.
    match k.api() {
        Api::Cutlass2x => rules_2x::check(k, &mut out),
        Api::Cutlass3x => rules_3x::check(k, &mut out),
    }
    rules_epilogue::check(k, &mut out);
    rules_conv::check(k, &mut out);
    if k.is_grouped() || k.is_pointer_array_3x() {
        rules_grouped::check(k, &mut out);
    }
    out
}

fn list<T: ToString>(values: &[T]) -> String {
    values.iter().map(T::to_string).collect::<Vec<_>>().join(", ")
}

/// Powers of two from 1 up to `max`.
fn powers_of_two(max: u32) -> Vec<u32> {
    (0..32).map(|e| 1u32 << e).take_while(|&p| p <= max).collect()
}

/// C's alignment, the same rule for both generations: a power of two of at most 128 bits.
fn alignment_c(k: &GemmKernel, out: &mut Vec<Finding>) {
    let allowed_c = powers_of_two(k.element_c.max_alignment());
    if !allowed_c.contains(&k.alignment_c) {
        out.push((
            "alignment_c",
            format!(
                "{} is not allowed for c {}; allowed: {} (a power of two of at most 128 bits)",
                k.alignment_c,
                k.element_c,
                list(&allowed_c)
            ),
        ));
    }
}

/// Reports each of `shapes` that has a zero component; true if any has (rules that divide by
/// these shapes must then be skipped).
fn zero_components(shapes: &[(&'static str, Shape3)], out: &mut Vec<Finding>) -> bool {
    let mut zero = false;
    for &(field, shape) in shapes {
        if shape.as_array().contains(&0) {
            zero = true;
            out.push((
                field,
                format!("{shape} has a zero component; every component must be a positive integer"),
            ));
        }
    }
    zero
}

/// Shared memory one pipeline stage takes: the A tile and the B tile, in bytes (saturating, so
/// that absurd tiles cannot overflow).
fn stage_bytes(k: &GemmKernel) -> (u64, u64) {
    let bytes = |rows: u32, bits: u32| {
        u64::from(rows)
            .saturating_mul(u64::from(k.tile.k))
            .saturating_mul(u64::from(bits))
            / 8
    };
    (
        bytes(k.tile.m, k.element_a.bits()),
        bytes(k.tile.n, k.element_b.bits()),
    )
}
