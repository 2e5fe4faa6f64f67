//! Our first-layer conv2d fprop (`iterator_algorithm: first_layer`, `cutlass_aot/conv_first_layer.cuh`):
//! the C++ of one kernel. The manifest's tile is (output pixels, output channels, 16): 16 output
//! columns of tile.m / 16 rows; its alignment is the channel count C.

use super::gemm_2x::thread_epilogue_2x;
use crate::model::GemmKernel;

pub(super) fn kernel_source(k: &GemmKernel) -> String {
    format!(
        "// {origin}\n\
         using {name}_kernel = cutlass_aot::ConvFirstLayer<\n    \
         {element}, {channels}, {tile_p}, {tile_n}, {warps_m}, {warps_n}, {stages},\n    \
         {epilogue}>;\n\
         CUTLASS_AOT_CONV_FIRST_LAYER({name}, {name}_kernel)\n",
        origin = k.origin,
        name = k.name,
        element = k.element_a.cutlass_type(),
        channels = k.alignment_a,
        tile_p = k.tile.m / 16,
        tile_n = k.tile.n,
        warps_m = k.warps.m,
        warps_n = k.warps.n,
        stages = k.stages,
        epilogue = thread_epilogue_2x(k, k.alignment_c),
    )
}
