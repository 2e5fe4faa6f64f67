/*
 * The launch shape every `prepare` function reports (abi.h's cutlass_aot_launch): one place for
 * CUDA's grid limits and the fields' order, shared by the 2.x and 3.x glue.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include <vector_types.h> // dim3

#include "cutlass_aot/abi.h"

namespace cutlass_aot {

/// Writes a prepared kernel's grid, block, thread-block cluster, dynamic shared memory and Params
/// size into `launch`. A grid past CUDA's 65535 blocks in y or z is refused with
/// CUTLASS_AOT_ERROR_GRID_TOO_LARGE, and nothing is written.
inline int32_t set_launch_shape(cutlass_aot_launch *launch, dim3 grid, dim3 block, dim3 cluster,
                                size_t shared_mem_bytes, size_t params_bytes) {
  if (grid.y > 65535u || grid.z > 65535u) {
    return CUTLASS_AOT_ERROR_GRID_TOO_LARGE;
  }
  launch->grid[0] = grid.x;
  launch->grid[1] = grid.y;
  launch->grid[2] = grid.z;
  launch->block[0] = block.x;
  launch->block[1] = block.y;
  launch->block[2] = block.z;
  launch->cluster[0] = cluster.x;
  launch->cluster[1] = cluster.y;
  launch->cluster[2] = cluster.z;
  launch->shared_mem_bytes = static_cast<uint32_t>(shared_mem_bytes);
  launch->params_bytes = static_cast<uint32_t>(params_bytes);
  return CUTLASS_AOT_OK;
}

} // namespace cutlass_aot
