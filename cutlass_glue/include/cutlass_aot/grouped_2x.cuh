/*
 * CUTLASS 2.x grouped GEMM (`cutlass::gemm::kernel::GemmGrouped`, as built by
 * `DefaultGemmGrouped<...>::GemmKernel`): the device entry point and the host `prepare` function of
 * a kernel, and (device pass) the `cutlass_aot_grouped_setup` kernel of grouped_setup.cuh.
 *
 * Same two passes as gemm_2x.cuh: -DCUTLASS_AOT_DEVICE_PASS (fatbin: only `extern "C" __global__`
 * entries) and -DCUTLASS_AOT_HOST_PASS (host object: only `NAME_prepare`). CUTLASS's device-level
 * `GemmGrouped` calls the CUDA runtime (occupancy, memcpy of the schedule, ...): this header uses
 * the kernel-level types only and does the rest (`sufficient`, `get_workspace_size`, `precompute`,
 * `initialize` of device/base_grouped.h) on the host, without the GPU.
 *
 * Column-major C: `DefaultGemmGrouped` then builds the kernel of the transposed problem
 * (`kInternalTranspose`, the kernel's `kTransposed`), and the kernel itself swaps M and N of every
 * problem (on the device and in the host schedule) and exchanges A and B and their leading
 * dimensions. The caller passes the problems, pointers and leading dimensions as they are (m×n C),
 * exactly as for a row-major C.
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/epilogue/thread/linear_combination_clamp.h>
#include <cutlass/epilogue/thread/linear_combination_generic.h>
#include <cutlass/gemm/gemm.h>
#include <cutlass/gemm/kernel/default_gemm_grouped.h>
#include <cutlass/gemm/kernel/gemm_grouped.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

#include "cutlass_aot/abi_grouped.h"
#include "cutlass_aot/gemm_2x.cuh"
#include "cutlass_aot/grouped_setup.cuh"

static_assert(sizeof(cutlass::gemm::GemmCoord) == sizeof(cutlass_aot_gemm_coord) &&
                  alignof(cutlass::gemm::GemmCoord) == alignof(cutlass_aot_gemm_coord),
              "cutlass_aot_gemm_coord must have GemmCoord's layout (m, n, k as int)");

namespace cutlass_aot {
namespace grouped_2x {

// `to_abi_status` and `has_leaky_alpha` are gemm_2x.cuh's.
using cutlass_aot::has_leaky_alpha;
using cutlass_aot::to_abi_status;

/// The thread epilogue's Params: alpha, beta and the activation's argument, if it takes one.
template <class OutputOp>
typename OutputOp::Params epilogue_params(const cutlass_aot_grouped_args *in) {
  using ElementCompute = typename OutputOp::ElementCompute;
  auto params = typename OutputOp::Params(ElementCompute(in->alpha), ElementCompute(in->beta));
  if constexpr (has_leaky_alpha<typename OutputOp::Params>::value) {
    params.leaky_alpha = ElementCompute(in->activation_arg);
  }
  return params;
}

template <class Layout>
constexpr bool row_major = std::is_same<Layout, cutlass::layout::RowMajor>::value;

/// Checks the host copy of the problems: no negative extent, and every contiguous extent a multiple
/// of its operand's alignment (CUTLASS's predicates guard whole vectors of `kAlignment` elements,
/// so a ragged edge would be read and written past; GemmGrouped::can_implement checks nothing).
/// Sums the tiles of every group, as the problem visitor counts them (transposed problems
/// included), into `tiles`.
template <typename Kernel>
int32_t check_problems(const cutlass_aot_gemm_coord *host, int32_t count, int64_t *tiles) {
  using Visitor = typename Kernel::ProblemVisitor;
  int64_t total = 0;
  for (int32_t g = 0; g < count; ++g) {
    cutlass_aot_gemm_coord const p = host[g];
    if (p.m < 0 || p.n < 0 || p.k < 0) {
      return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
    }
    int32_t const a = row_major<typename Kernel::LayoutA> ? p.k : p.m;
    int32_t const b = row_major<typename Kernel::LayoutB> ? p.n : p.k;
    int32_t const c = row_major<typename Kernel::LayoutC> ? p.n : p.m;
    if (a % Kernel::kAlignmentA != 0 || b % Kernel::kAlignmentB != 0 || c % Kernel::kAlignmentC != 0) {
      return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
    }
    cutlass::gemm::GemmCoord problem(p.m, p.n, p.k);
    Visitor::possibly_transpose_problem(problem);
    total += int64_t(Visitor::tile_count(Visitor::grid_shape(problem)));
  }
  // The problem visitor counts tiles in int32.
  if (total > INT32_MAX) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  *tiles = total;
  return CUTLASS_AOT_OK;
}

/// The grouped kernel's Params, grid, block, shared memory and (host schedule) workspace.
template <typename Kernel>
int32_t prepare(const cutlass_aot_grouped_args *in, void *params_out, size_t params_capacity,
                cutlass_aot_launch *launch) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using Visitor = typename Kernel::ProblemVisitor;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");
  static_assert(std::is_same<typename Kernel::LayoutA::Stride::LongIndex, int64_t>::value &&
                    std::is_same<typename Kernel::LayoutB::Stride::LongIndex, int64_t>::value &&
                    std::is_same<typename Kernel::LayoutC::Stride::LongIndex, int64_t>::value,
                "leading dimensions are int64_t arrays");

  std::memset(launch, 0, sizeof(*launch));
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }
  cutlass_aot_grouped_arrays const &arrays = in->arrays;
  if (in->group_count <= 0 || in->threadblock_count < 0 || arrays.problems == nullptr ||
      arrays.a == nullptr || arrays.b == nullptr || arrays.c == nullptr || arrays.d == nullptr ||
      arrays.lda == nullptr || arrays.ldb == nullptr || arrays.ldc == nullptr ||
      arrays.ldd == nullptr) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }

  // Persistent CTAs: one full wave unless the caller says otherwise (`sufficient()`), at most one
  // per tile when the tiles are known (fewer idle CTAs walking the problem list), at least one.
  int64_t threadblocks = in->threadblock_count > 0
                             ? int64_t(in->threadblock_count)
                             : int64_t(in->device_sms) * int64_t(in->sm_occupancy);
  if (threadblocks <= 0) {
    // No SM count, or the kernel does not fit on an SM.
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  int64_t tiles = 0;
  cutlass::gemm::GemmCoord *host_problems = nullptr;
  if (in->host_problems != nullptr) {
    int32_t status = check_problems<Kernel>(in->host_problems, in->group_count, &tiles);
    if (status != CUTLASS_AOT_OK) {
      return status;
    }
    host_problems = reinterpret_cast<cutlass::gemm::GemmCoord *>(
        const_cast<cutlass_aot_gemm_coord *>(in->host_problems));
    threadblocks = tiles < threadblocks ? (tiles > 0 ? tiles : 1) : threadblocks;
  } else if (Visitor::kRequiresPrecomputation) {
    // The host schedule needs the extents on the host.
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if (threadblocks > INT32_MAX) {
    return CUTLASS_AOT_ERROR_GRID_TOO_LARGE;
  }

  Arguments args(
      reinterpret_cast<cutlass::gemm::GemmCoord *>(const_cast<cutlass_aot_gemm_coord *>(arrays.problems)),
      in->group_count, int(threadblocks),
      epilogue_params<typename Kernel::EpilogueOutputOp>(in),
      reinterpret_cast<ElementA **>(const_cast<void **>(arrays.a)),
      reinterpret_cast<ElementB **>(const_cast<void **>(arrays.b)),
      reinterpret_cast<ElementC **>(const_cast<void **>(arrays.c)),
      reinterpret_cast<ElementC **>(const_cast<void **>(arrays.d)),
      const_cast<int64_t *>(arrays.lda), const_cast<int64_t *>(arrays.ldb),
      const_cast<int64_t *>(arrays.ldc), const_cast<int64_t *>(arrays.ldd), host_problems);
  int32_t status = to_abi_status(Kernel::can_implement(args));
  if (status != CUTLASS_AOT_OK) {
    return status;
  }

  void *workspace = nullptr;
  int32_t tile_count = 0;
  if constexpr (Visitor::kRequiresPrecomputation) {
    // base_grouped.h's `precompute`: the schedule, entry [b · per_block + i] the i-th tile of CTA b,
    // written to the host workspace, which the runtime uploads to `workspace` before the launch.
    uint64_t workspace_bytes =
        Visitor::get_workspace_size(host_problems, in->group_count, int32_t(threadblocks));
    launch->workspace_bytes = workspace_bytes;
    if (workspace_bytes > 0) {
      if (in->workspace == nullptr || in->host_workspace == nullptr ||
          workspace_bytes > in->workspace_capacity) {
        return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
      }
      Visitor::host_precompute(host_problems, in->group_count, int32_t(threadblocks),
                               in->host_workspace);
    }
    workspace = in->workspace;
    tile_count = int32_t(tiles);
  }
  // Padding bytes are zero, never stack garbage, so that the same arguments always give the same
  // bytes. The compiler barriers keep the optimiser from treating padding as indeterminate (and so
  // from dropping the zeroing or copying members only).
  alignas(Params) unsigned char storage[sizeof(Params)] = {};
  asm volatile("" : : "r"(storage) : "memory");
  new (storage) Params(args, workspace, tile_count);
  asm volatile("" : : "r"(storage) : "memory");
  std::memcpy(params_out, storage, sizeof(Params));
  return set_launch_shape(launch, dim3(uint32_t(threadblocks)), dim3(Kernel::kThreadCount),
                          dim3(1, 1, 1), sizeof(typename Kernel::SharedStorage), sizeof(Params));
}

} // namespace grouped_2x
} // namespace cutlass_aot

#if defined(CUTLASS_AOT_DEVICE_PASS)
/// The kernel entry: CUTLASS's own body (`GemmGrouped::operator()`, a persistent loop over the
/// tiles of every group) under a stable, unmangled name.
#define CUTLASS_AOT_GROUPED_2X(NAME, KERNEL)                                                       \
  extern "C" __global__ void __launch_bounds__(KERNEL::kThreadCount)                               \
      NAME(typename KERNEL::Params params) {                                                       \
    extern __shared__ int cutlass_aot_smem[];                                                      \
    KERNEL op;                                                                                     \
    op(params, *reinterpret_cast<typename KERNEL::SharedStorage *>(cutlass_aot_smem));             \
  }
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_GROUPED_2X(NAME, KERNEL)                                                       \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_grouped_args *args, void *params,            \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::grouped_2x::prepare<KERNEL>(args, params, params_capacity, launch);        \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
