//! The shape rules of our first-layer fprop kernels (`iterator_algorithm: first_layer`,
//! `cutlass_glue/include/cutlass_aot/conv_first_layer.cuh`) that the runtime explains before a
//! launch: how much shared memory a problem needs. The C++ `conv_first_layer_prepare` computes
//! the same bytes (and refuses past [`MAX_SHARED_BYTES`]); a CPU test (`tests/conv.rs`) runs the
//! prepare functions and checks that the two agree.

use super::Conv2dProblem;
use crate::kernel::KernelInfo;
use crate::model::IteratorAlgorithm;

/// The most shared memory the glue lets one CTA take (sm_90's 227 KiB); a device with less
/// refuses the launch with its own limit.
pub const MAX_SHARED_BYTES: usize = 227 * 1024;

/// Whether `kernel` is a first_layer kernel: its CTAs take output tiles from counters in the
/// workspace, so every launch needs one (4 bytes per tile.n output channels).
pub fn is_first_layer(kernel: &KernelInfo) -> bool {
    kernel
        .operation
        .conv()
        .is_some_and(|c| c.iterator == IteratorAlgorithm::FirstLayer)
}

/// Output columns per CTA tile: the MMA's M.
const TILE_Q: usize = 16;

/// Shared memory (bytes) a first-layer kernel needs for `problem`: its slice of the filter (taps
/// padded to whole MMA K steps, 4 words of padding per output channel), `stages` input patches
/// covering every tap of a tile of tile.m / 16 rows × 16 columns, the staged accumulators and 16
/// tile ids.
pub fn shared_bytes(kernel: &KernelInfo, problem: &Conv2dProblem) -> usize {
    let channels = kernel
        .operation
        .conv()
        .map_or(1, |c| c.gemm.a.alignment as usize)
        .max(1);
    let tile = kernel.tile();
    let (tile_p, tile_n) = ((tile.m as usize / TILE_Q).max(1), tile.n as usize);
    let taps_per_step = (16 / channels).max(1);
    let s_padded = problem.s.div_ceil(taps_per_step) * taps_per_step;
    let patch_rows = (tile_p - 1) * problem.stride[0] + (problem.r.max(1) - 1) * problem.dilation[0] + 1;
    let patch_cols = (TILE_Q - 1) * problem.stride[1] + (s_padded.max(1) - 1) * problem.dilation[1] + 1;
    let filter_words = problem.r * s_padded * channels / 2 + 4;
    let filter = filter_words * 4 * tile_n;
    let patch = (patch_rows * patch_cols * channels * 2).div_ceil(16) * 16;
    let stage_stride = (2 * (tile_n / 8 + 1) * 4).div_ceil(8) * 8;
    let staged = tile_p * TILE_Q * stage_stride * 4;
    filter + kernel.design.stages() as usize * patch + staged + 16 * 4
}
