/*
 * CUTLASS 2.x universal GEMM: the device entry point and the host `prepare` function of a kernel.
 *
 * Every generated translation unit is compiled twice:
 *  - with -DCUTLASS_AOT_DEVICE_PASS into a fatbin: only the `extern "C" __global__` entries exist;
 *  - with -DCUTLASS_AOT_HOST_PASS into a host object: only the `prepare` functions exist, and the
 *    whole unit is empty in nvcc's device sub-pass (guarded by __CUDA_ARCH__), which halves its cost.
 * Host Params must be computed by nvcc's host pass, never plain g++: CUTLASS's layout of Params
 * depends on nvcc's view of the headers.
 */
#pragma once

#include <cstring>
#include <type_traits>

#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/device/gemm_universal.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

#include "cutlass_aot/abi.h"

namespace cutlass_aot {

inline int32_t to_abi_status(cutlass::Status status) {
  switch (status) {
  case cutlass::Status::kSuccess:
    return CUTLASS_AOT_OK;
  case cutlass::Status::kErrorMisalignedOperand:
    return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
  case cutlass::Status::kErrorInvalidProblem:
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  case cutlass::Status::kErrorNotSupported:
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  default:
    return CUTLASS_AOT_ERROR_INTERNAL;
  }
}

/// Flat ABI arguments → CUTLASS Arguments → can_implement → Params, grid, block, shared memory.
template <typename Kernel>
int32_t gemm_2x_prepare(const cutlass_aot_gemm_args *in, void *params_out, size_t params_capacity,
                        cutlass_aot_launch *launch) {
  using ElementCompute = typename Kernel::EpilogueOutputOp::ElementCompute;
  using Params = typename Kernel::Params;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  cutlass::gemm::GemmUniversalMode mode;
  switch (in->mode) {
  case CUTLASS_AOT_MODE_GEMM:
    mode = cutlass::gemm::GemmUniversalMode::kGemm;
    break;
  case CUTLASS_AOT_MODE_BATCHED:
    mode = cutlass::gemm::GemmUniversalMode::kBatched;
    break;
  default:
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if (in->m <= 0 || in->n <= 0 || in->k <= 0 || in->batch_count <= 0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }

  typename Kernel::Arguments args(
      mode, cutlass::gemm::GemmCoord(in->m, in->n, in->k), in->batch_count,
      {ElementCompute(in->alpha), ElementCompute(in->beta)}, in->a, in->b, in->c, in->d,
      in->batch_stride_a, in->batch_stride_b, in->batch_stride_c, in->batch_stride_d, in->lda,
      in->ldb, in->ldc, in->ldd);

  int32_t status = to_abi_status(Kernel::can_implement(args));
  if (status != CUTLASS_AOT_OK) {
    return status;
  }

  Params params(args, in->device_sms, in->sm_occupancy);
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }
  dim3 grid = params.get_grid_dims();
  if (grid.y > 65535u || grid.z > 65535u) {
    return CUTLASS_AOT_ERROR_GRID_TOO_LARGE;
  }
  uint64_t workspace_bytes = params.get_workspace_size();
  launch->workspace_bytes = workspace_bytes;
  if (workspace_bytes > 0) {
    if (in->workspace == nullptr || workspace_bytes > in->workspace_capacity) {
      return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
    }
    // Serial split-K semaphores start at zero on every launch.
    launch->fill_count = 1;
    launch->fills[0] = cutlass_aot_fill{0, workspace_bytes, 1, 0};
  }
  params.semaphore = static_cast<int *>(in->workspace);
  std::memcpy(params_out, &params, sizeof(Params));

  launch->grid[0] = grid.x;
  launch->grid[1] = grid.y;
  launch->grid[2] = grid.z;
  launch->block[0] = Kernel::kThreadCount;
  launch->block[1] = 1;
  launch->block[2] = 1;
  launch->cluster[0] = launch->cluster[1] = launch->cluster[2] = 1;
  launch->shared_mem_bytes = static_cast<uint32_t>(sizeof(typename Kernel::SharedStorage));
  launch->params_bytes = static_cast<uint32_t>(sizeof(Params));
  return CUTLASS_AOT_OK;
}

} // namespace cutlass_aot

#if defined(CUTLASS_AOT_DEVICE_PASS)
/// The kernel entry: CUTLASS's own body under a stable, unmangled name.
#define CUTLASS_AOT_GEMM_2X(NAME, GEMM)                                                            \
  extern "C" __global__ void __launch_bounds__(GEMM::GemmKernel::kThreadCount)                     \
      NAME(typename GEMM::GemmKernel::Params params) {                                             \
    extern __shared__ int cutlass_aot_smem[];                                                      \
    GEMM::GemmKernel::invoke(                                                                      \
        params, *reinterpret_cast<typename GEMM::GemmKernel::SharedStorage *>(cutlass_aot_smem));  \
  }
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_GEMM_2X(NAME, GEMM)                                                            \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_gemm_args *args, void *params,               \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::gemm_2x_prepare<typename GEMM::GemmKernel>(args, params, params_capacity,  \
                                                                   launch);                        \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
