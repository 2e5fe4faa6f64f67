//! How many CTAs of a CUTLASS 2.x kernel an SM runs at once, and what that is worth to a kernel
//! whose narrow loads keep each CTA below the SM's math rate: co-resident CTAs overlap their
//! loads' latency, so an SM with several tiles to run finishes them faster than one at a time.

use crate::kernel::KernelInfo;
use crate::model::Design;

/// Shared memory, threads and registers of an H100 SM.
const SHARED_BYTES: u32 = 227 * 1024;
const THREADS: u32 = 2048;
const REGISTERS: u32 = 65536;

/// CTAs of `kernel` an SM holds at once (1 for other than CUTLASS 2.x kernels): by its stages of A
/// and B tiles in shared memory, its threads, and its registers (taken as 64 a thread besides its
/// f32 accumulators, at most 255).
pub fn resident_ctas(kernel: &KernelInfo) -> u32 {
    let (Design::Cutlass2x(d), Some(op)) = (kernel.design, kernel.operation.gemm_operands()) else {
        return 1;
    };
    let (t, threads) = (d.tile, d.threads().max(32));
    let bytes = |bits: u32| bits.div_ceil(8);
    let stage = t.m * t.k * bytes(op.a.element.bits()) + t.k * t.n * bytes(op.b.element.bits());
    let by_shared = SHARED_BYTES / (d.stages.max(1) * stage).max(1);
    let registers = (64 + t.m * t.n / threads).min(255);
    let by_registers = REGISTERS / (threads * registers);
    by_shared.min(THREADS / threads).min(by_registers).max(1)
}

/// Most CTAs whose overlap counts: with more, the loads of the same SM queue behind each other (a
/// bound of 2 chose better on the H100 tables, leave-one-out, than the CTAs' residency alone).
const MAX_OVERLAP: f64 = 2.0;

/// How much faster than one CTA at a time an SM runs `per_sm` tiles of `kernel` when each CTA
/// reaches only `access_rate` of the SM's math rate (its narrow loads): as many CTAs overlap as
/// are resident and as it has tiles, until together they reach the full rate.
pub fn overlap(kernel: &KernelInfo, per_sm: f64, access_rate: f64) -> f64 {
    if access_rate >= 1.0 {
        return 1.0;
    }
    let most = (resident_ctas(kernel) as f64)
        .min(1.0 / access_rate)
        .min(MAX_OVERLAP);
    per_sm.clamp(1.0, most.max(1.0))
}
