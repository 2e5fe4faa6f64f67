/*
 * CUTLASS 2.x universal GEMM: the device entry point and the host `prepare` function of a kernel,
 * in every mode of the universal GEMM: plain, serial split-K, parallel split-K (with CUTLASS's
 * split-K reduction kernel), batched and array.
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
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/epilogue/thread/linear_combination_clamp.h>
#include <cutlass/epilogue/thread/linear_combination_generic.h>
#include <cutlass/gemm/device/gemm_universal.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>
#include <cutlass/reduction/kernel/reduce_split_k.h>
#include <cutlass/reduction/thread/reduction_operators.h>

#include "cutlass_aot/abi.h"
#include "cutlass_aot/launch_shape.hpp"

namespace cutlass_aot {

/// CUTLASS's horizontal swizzle (tiles along N first) with the entry points the universal GEMM
/// calls: it asks for `get_tile_offset(log_tile)`, which the plain GEMM's swizzle does not have.
struct HorizontalThreadblockSwizzle : cutlass::gemm::threadblock::GemmHorizontalThreadblockSwizzle {
  CUTLASS_DEVICE
  static cutlass::gemm::GemmCoord get_tile_offset(int /*log_tile*/) {
    return cutlass::gemm::GemmCoord{cutlass::gemm::threadblock::RematerializeBlockIdxY(),
                                    cutlass::gemm::threadblock::RematerializeBlockIdxX(),
                                    cutlass::gemm::threadblock::RematerializeBlockIdxZ()};
  }
};

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

/// Whether an epilogue's Params carry leaky_relu's slope (CUTLASS's generic linear combination
/// inherits its activation's Arguments).
template <class T, class = void> struct has_leaky_alpha : std::false_type {};
template <class T>
struct has_leaky_alpha<T, std::void_t<decltype(std::declval<T &>().leaky_alpha)>> : std::true_type {};

/// The thread epilogue's Params: alpha, beta and the activation's argument, if it takes one.
template <class OutputOp>
typename OutputOp::Params epilogue_params(const cutlass_aot_gemm_args *in, double alpha, double beta) {
  using ElementCompute = typename OutputOp::ElementCompute;
  auto params = typename OutputOp::Params(ElementCompute(alpha), ElementCompute(beta));
  if constexpr (has_leaky_alpha<typename OutputOp::Params>::value) {
    params.leaky_alpha = ElementCompute(in->activation_arg);
  }
  return params;
}

/// Whether `Gemm` (a device-level `GemmUniversal`) writes a column-major C. CUTLASS builds such a
/// GEMM as the row-major-C kernel of the transposed problem, D^T = B^T A^T: its kernel's Arguments
/// must be transposed first (the device layer's `to_underlying_arguments`).
template <typename Gemm>
constexpr bool column_major_c = std::is_same<typename Gemm::LayoutC, cutlass::layout::ColumnMajor>::value;

/// The partial sums of parallel split-K: slice s of an m×n problem lives at s·m·n in the
/// workspace, packed in C's layout, as the kernel's element C (the accumulator type).
template <typename Gemm> struct Partials {
  static int64_t ld(const cutlass_aot_gemm_args *in) { return column_major_c<Gemm> ? in->m : in->n; }
  static int64_t stride(const cutlass_aot_gemm_args *in) { return int64_t(in->m) * in->n; }
};

/// Flat ABI arguments → CUTLASS Arguments → can_implement → Params. `Parallel` kernels (whose C
/// is the accumulator type) write partial sums to the workspace instead of D.
template <typename Gemm, bool Parallel>
int32_t gemm_2x_params(const cutlass_aot_gemm_args *in, typename Gemm::GemmKernel::Params *params_out) {
  using Kernel = typename Gemm::GemmKernel;
  if (in->m <= 0 || in->n <= 0 || in->k <= 0 || in->batch_count <= 0 || in->split_k_slices <= 0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  // 2.x kernels fuse activations only: they take no epilogue operands.
  if (in->bias != nullptr || in->alpha_vector != nullptr || in->beta_vector != nullptr ||
      in->aux != nullptr || in->reduction != nullptr) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  cutlass::gemm::GemmUniversalMode mode;
  int batch_count = in->batch_count;
  switch (in->mode) {
  case CUTLASS_AOT_MODE_GEMM:
    if (in->batch_count != 1) {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
    }
    // The universal GEMM reads the split-K slice count from batch_count.
    batch_count = in->split_k_slices;
    mode = Parallel ? cutlass::gemm::GemmUniversalMode::kGemmSplitKParallel
                    : cutlass::gemm::GemmUniversalMode::kGemm;
    break;
  case CUTLASS_AOT_MODE_BATCHED:
  case CUTLASS_AOT_MODE_ARRAY:
    // Neither splits K; parallel kernels reduce one problem only.
    if (in->split_k_slices != 1 || Parallel) {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
    }
    mode = in->mode == CUTLASS_AOT_MODE_BATCHED ? cutlass::gemm::GemmUniversalMode::kBatched
                                                : cutlass::gemm::GemmUniversalMode::kArray;
    break;
  default:
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }

  // Parallel split-K: the GEMM scales nothing (alpha 1, beta 0) and writes slice s of the partial
  // sums at s·m·n in the workspace; the reduction applies the real alpha, beta and C.
  void *d = Parallel ? in->workspace : in->d;
  int64_t ldd = Parallel ? Partials<Gemm>::ld(in) : in->ldd;
  int64_t stride_d = Parallel ? Partials<Gemm>::stride(in) : in->batch_stride_d;
  double alpha = Parallel ? 1.0 : in->alpha;
  double beta = Parallel ? 0.0 : in->beta;
  const void *c = Parallel ? d : in->c;
  int64_t ldc = Parallel ? ldd : in->ldc;

  typename Gemm::Arguments args(
      mode, cutlass::gemm::GemmCoord(in->m, in->n, in->k), batch_count,
      epilogue_params<typename Kernel::EpilogueOutputOp>(in, alpha, beta), in->a, in->b, c, d, in->batch_stride_a,
      in->batch_stride_b, in->batch_stride_c, stride_d, in->lda, in->ldb, ldc, ldd);
  if constexpr (column_major_c<Gemm>) {
    args = args.transposed_problem();
  }

  int32_t status = to_abi_status(Kernel::can_implement(args));
  if (status != CUTLASS_AOT_OK) {
    return status;
  }
  *params_out = typename Kernel::Params(args, in->device_sms, in->sm_occupancy);
  return CUTLASS_AOT_OK;
}

/// The GEMM's Params, grid, block, shared memory, workspace and the fills it needs.
template <typename Gemm, bool Parallel>
int32_t gemm_2x_prepare(const cutlass_aot_gemm_args *in, void *params_out, size_t params_capacity,
                        cutlass_aot_launch *launch) {
  using Kernel = typename Gemm::GemmKernel;
  using Params = typename Kernel::Params;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }
  Params params;
  int32_t status = gemm_2x_params<Gemm, Parallel>(in, &params);
  if (status != CUTLASS_AOT_OK) {
    return status;
  }
  dim3 grid = params.get_grid_dims();
  if (grid.y > 65535u || grid.z > 65535u) {
    return CUTLASS_AOT_ERROR_GRID_TOO_LARGE;
  }
  // Serial split-K: one semaphore per output tile. Parallel split-K: the partial sums of every
  // slice (CUTLASS counts them as batch_stride_D · slices elements of C, the accumulator type).
  uint64_t workspace_bytes = params.get_workspace_size();
  launch->workspace_bytes = workspace_bytes;
  if (workspace_bytes > 0) {
    if (in->workspace == nullptr || workspace_bytes > in->workspace_capacity) {
      return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
    }
    if (!Parallel) {
      // The semaphores start at zero on every launch (the last slice also resets them, but a
      // launch that failed midway must not poison the next one).
      launch->fill_count = 1;
      launch->fills[0] = cutlass_aot_fill{0, workspace_bytes, 1, 0};
    }
  }
  params.semaphore = static_cast<int *>(in->workspace);
  std::memcpy(params_out, &params, sizeof(Params));
  return set_launch_shape(launch, grid, dim3(Kernel::kThreadCount), dim3(1, 1, 1),
                          sizeof(typename Kernel::SharedStorage), sizeof(Params));
}

/// Params of the split-K reduction that follows a parallel GEMM: it adds the slices the GEMM
/// actually wrote (CUTLASS may use fewer than asked when K is short), applies alpha, beta and C
/// and writes D. The reduction walks row-major matrices: a column-major m×n C is a row-major n×m.
template <typename Gemm, typename Reduction>
int32_t split_k_reduce_prepare(const cutlass_aot_gemm_args *in, void *params_out,
                               size_t params_capacity, cutlass_aot_launch *launch) {
  using Params = typename Reduction::Params;
  using ElementOutput = typename Reduction::ElementOutput;
  using ElementWorkspace = typename Reduction::ElementWorkspace;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }
  typename Gemm::GemmKernel::Params gemm;
  int32_t status = gemm_2x_params<Gemm, true>(in, &gemm);
  if (status != CUTLASS_AOT_OK) {
    return status;
  }
  uint64_t workspace_bytes = gemm.get_workspace_size();
  launch->workspace_bytes = workspace_bytes;
  if (in->workspace == nullptr || workspace_bytes > in->workspace_capacity) {
    return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
  }
  cutlass::MatrixCoord extent = column_major_c<Gemm> ? cutlass::MatrixCoord(in->n, in->m)
                                                    : cutlass::MatrixCoord(in->m, in->n);
  using OutputRef = typename Reduction::OutputTensorRef;
  using WorkspaceRef = typename Reduction::WorkspaceTensorRef;
  // Without C (beta 0) the reduction is handed D as C, which it then does not read.
  Params params(extent, gemm.grid_tiled_shape.k(), size_t(Partials<Gemm>::stride(in)),
                WorkspaceRef(static_cast<ElementWorkspace *>(in->workspace),
                             typename WorkspaceRef::Layout(Partials<Gemm>::ld(in))),
                OutputRef(static_cast<ElementOutput *>(in->d),
                          typename OutputRef::Layout(in->ldd)),
                OutputRef(static_cast<ElementOutput *>(const_cast<void *>(in->c)),
                          typename OutputRef::Layout(in->ldc)),
                epilogue_params<typename Reduction::OutputOp>(in, in->alpha, in->beta));
  dim3 grid = Reduction::grid_shape(extent);
  dim3 block = Reduction::block_shape();
  int32_t shape = set_launch_shape(launch, dim3(grid.x, grid.y), dim3(block.x, block.y),
                                   dim3(1, 1, 1), 0, sizeof(Params));
  if (shape == CUTLASS_AOT_OK) {
    std::memcpy(params_out, &params, sizeof(Params));
  }
  return shape;
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
/// Parallel split-K: the GEMM writing partial sums, and CUTLASS's reduction as `NAME_reduce`.
#define CUTLASS_AOT_GEMM_2X_SPLIT_K_PARALLEL(NAME, GEMM, REDUCTION)                                \
  CUTLASS_AOT_GEMM_2X(NAME, GEMM)                                                                  \
  extern "C" __global__ void NAME##_reduce(typename REDUCTION::Params params) {                    \
    __shared__ typename REDUCTION::SharedStorage storage;                                          \
    REDUCTION op;                                                                                  \
    op(params, storage);                                                                           \
  }
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_GEMM_2X(NAME, GEMM)                                                            \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_gemm_args *args, void *params,               \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::gemm_2x_prepare<GEMM, false>(args, params, params_capacity, launch);       \
  }
#define CUTLASS_AOT_GEMM_2X_SPLIT_K_PARALLEL(NAME, GEMM, REDUCTION)                                \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_gemm_args *args, void *params,               \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::gemm_2x_prepare<GEMM, true>(args, params, params_capacity, launch);        \
  }                                                                                                \
  extern "C" int32_t NAME##_reduce_prepare(const cutlass_aot_gemm_args *args, void *params,        \
                                           size_t params_capacity, cutlass_aot_launch *launch) {   \
    return cutlass_aot::split_k_reduce_prepare<GEMM, REDUCTION>(                                   \
        args, params, params_capacity, launch);                                                    \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
