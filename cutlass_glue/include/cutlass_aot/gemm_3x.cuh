/*
 * CUTLASS 3.x GEMM (sm_90a, collective builders): the device entry point and the host `prepare`
 * function of a kernel. Compiled twice like the 2.x units (see gemm_2x.cuh).
 *
 * Three things differ from 2.x:
 *  - Params hold TMA descriptors, which embed global addresses: they are rebuilt on every call.
 *    CUTLASS encodes them with the driver's cuTensorMapEncodeTiled. That call is routed here to the
 *    driver function the runtime passes in (`args->encode_tiled`), and a failure is reported as
 *    CUTLASS_AOT_ERROR_TMA_ENCODE: with -DNDEBUG CUTLASS itself would only print to stderr, or not
 *    even that, and launch with a broken descriptor.
 *  - Workspace fills CUTLASS would enqueue with the CUDA runtime (stream-K semaphores) are recorded
 *    through a CudaHostAdapter and enqueued by the runtime on the caller's stream.
 *  - Launches may use thread-block clusters; `launch->cluster` says so.
 */
#pragma once

#include <cstring>
#include <type_traits>

#include <cuda.h>

#include "cutlass_aot/abi.h"
#include "cutlass_aot/launch_shape.hpp"

namespace cutlass_aot {

/// The arguments of the prepare call running on this thread, for the TMA encode hook below.
inline thread_local const cutlass_aot_gemm_args *tma_args = nullptr;
/// First CUresult a TMA encode returned during that call (0 = none failed).
inline thread_local int32_t tma_first_error = 0;

/// Stands in for the driver's cuTensorMapEncodeTiled inside CUTLASS (see the #define below).
inline CUresult encode_tiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                             void *address, const cuuint64_t *dims, const cuuint64_t *strides,
                             const cuuint32_t *box, const cuuint32_t *element_strides,
                             CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                             CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  int32_t result = CUDA_ERROR_NOT_INITIALIZED;
  if (tma_args != nullptr && tma_args->encode_tiled != nullptr) {
    result = tma_args->encode_tiled(map, type, rank, address, dims, strides, box, element_strides,
                                    interleave, swizzle, l2, oob);
  }
  if (result != CUDA_SUCCESS && tma_first_error == 0) {
    tma_first_error = result;
  }
  return static_cast<CUresult>(result);
}

} // namespace cutlass_aot

// Route CUTLASS's TMA encodes to the hook (cuda.h has already declared the real function).
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#define cuTensorMapEncodeTiled cutlass_aot::encode_tiled
// Workspace fills go through a CudaHostAdapter instead of cudaMemsetAsync.
#define CUTLASS_ENABLE_CUDA_HOST_ADAPTER 1

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/gemm.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/gemm/kernel/tile_scheduler.hpp>
#include <cutlass/kernel_hardware_info.h>

namespace cutlass_aot {

/// Records CUTLASS's workspace fills (relative to the workspace) instead of enqueueing them.
struct RecordingAdapter : cutlass::CudaHostAdapter {
  char *workspace = nullptr;
  cutlass_aot_launch *record = nullptr;
  mutable bool overflow = false;

  cutlass::Status query_occupancy(int32_t *, int32_t *, int32_t, int32_t, int32_t) const override {
    return cutlass::Status::kErrorNotSupported;
  }
  cutlass::Status launch(dim3, dim3, size_t, cudaStream_t, void **, int32_t) const override {
    return cutlass::Status::kErrorNotSupported;
  }
  cutlass::Status launch(dim3, dim3, dim3, size_t, cudaStream_t, void **, int32_t) const override {
    return cutlass::Status::kErrorNotSupported;
  }
  cutlass::Status launch(dim3, dim3, dim3, dim3, size_t, cudaStream_t, void **,
                         int32_t) const override {
    return cutlass::Status::kErrorNotSupported;
  }
#if defined(CUDA_HOST_ADAPTER_TENSORMAP_ENABLED)
  CUresult tensorMapEncodeIm2col(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                 const cuuint64_t *, const cuuint64_t *, const int *, const int *,
                                 cuuint32_t, cuuint32_t, const cuuint32_t *, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion,
                                 CUtensorMapFloatOOBfill) const override {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUresult tensorMapEncodeTiled(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill) const override {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUresult tensorMapReplaceAddress(CUtensorMap *, void *) const override {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
#endif

protected:
  cutlass::Status memsetDeviceImpl(void *destination, void const *fill_value, size_t fill_size,
                                   size_t count, cudaStream_t) const override {
    uint32_t n = record->fill_count;
    if (n >= CUTLASS_AOT_MAX_FILLS || (fill_size != 1 && fill_size != 2 && fill_size != 4)) {
      overflow = true;
      return cutlass::Status::kErrorNotSupported;
    }
    cutlass_aot_fill &fill = record->fills[n];
    fill.offset = static_cast<uint64_t>(static_cast<char *>(destination) - workspace);
    fill.count = count;
    fill.element_bytes = static_cast<uint32_t>(fill_size);
    fill.value = 0;
    std::memcpy(&fill.value, fill_value, fill_size);
    record->fill_count = n + 1;
    return cutlass::Status::kSuccess;
  }
};

/// The thread-block cluster of a 3.x kernel as launch dimensions.
template <class ClusterShape> dim3 cluster_dims() {
  return dim3(cute::size<0>(ClusterShape{}), cute::size<1>(ClusterShape{}),
              cute::size<2>(ClusterShape{}));
}

/// A 3.x kernel's workspace for `args`: its size into `launch`; refused when `workspace` (of
/// `capacity` bytes) is missing or too small; CUTLASS's initialization fills recorded into
/// `launch` (the runtime enqueues them before the kernel) instead of enqueued here.
template <class Kernel>
int32_t prepare_workspace_3x(typename Kernel::Arguments const &args, void *workspace,
                             uint64_t capacity, cutlass_aot_launch *launch) {
  size_t workspace_bytes = Kernel::get_workspace_size(args);
  launch->workspace_bytes = workspace_bytes;
  if (workspace_bytes == 0) {
    return CUTLASS_AOT_OK;
  }
  if (workspace == nullptr || workspace_bytes > capacity) {
    return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
  }
  RecordingAdapter adapter;
  adapter.workspace = static_cast<char *>(workspace);
  adapter.record = launch;
  cutlass::Status init = Kernel::initialize_workspace(args, workspace, nullptr, &adapter);
  if (init != cutlass::Status::kSuccess || adapter.overflow) {
    return CUTLASS_AOT_ERROR_INTERNAL;
  }
  return CUTLASS_AOT_OK;
}

/// Whether a tile scheduler's Arguments have `splits` (the stream-K scheduler's split-K factor).
template <class T, class = void> struct has_splits : std::false_type {};
template <class T> struct has_splits<T, std::void_t<decltype(T::splits)>> : std::true_type {};

// Members of a fusion operation's Arguments (CUTLASS names them alike in every operation).
template <class T, class = void> struct has_bias : std::false_type {};
template <class T> struct has_bias<T, std::void_t<decltype(T::bias_ptr)>> : std::true_type {};
template <class T, class = void> struct has_aux : std::false_type {};
template <class T> struct has_aux<T, std::void_t<decltype(T::aux_ptr)>> : std::true_type {};
template <class T, class = void> struct has_dbias : std::false_type {};
template <class T> struct has_dbias<T, std::void_t<decltype(T::dbias_ptr)>> : std::true_type {};
template <class T, class = void> struct has_activation : std::false_type {};
template <class T>
struct has_activation<T, std::void_t<decltype(T::activation)>> : std::true_type {};
template <class T, class = void> struct has_leaky_alpha : std::false_type {};
template <class T>
struct has_leaky_alpha<T, std::void_t<decltype(T::leaky_alpha)>> : std::true_type {};
template <class T, class = void> struct has_bounds : std::false_type {};
template <class T>
struct has_bounds<T, std::void_t<decltype(T::lower_bound), decltype(T::upper_bound)>>
    : std::true_type {};

/// Whether a scalar's stride (`dAlpha`, `dBeta`) broadcasts a per-row or per-column vector: one of
/// its M/N modes is a run-time bool instead of a static zero.
template <class Stride> constexpr bool is_vector_stride() {
  using Mode0 = cute::remove_cvref_t<decltype(cute::get<0>(Stride{}))>;
  using Mode1 = cute::remove_cvref_t<decltype(cute::get<1>(Stride{}))>;
  return !cute::is_static<Mode0>::value || !cute::is_static<Mode1>::value;
}

/// A CUTLASS 3.x stride (M/N mode, K mode, L mode) with leading dimension `ld` in whichever of the
/// first two modes is not the static unit stride, and `batch` in the L mode.
template <class Stride> Stride make_stride(int64_t ld, int64_t batch) {
  Stride stride{};
  using Mode0 = cute::remove_cvref_t<decltype(cute::get<0>(stride))>;
  if constexpr (cute::is_static<Mode0>::value) {
    cute::get<1>(stride) = ld;
  } else {
    cute::get<0>(stride) = ld;
  }
  cute::get<2>(stride) = batch;
  return stride;
}

/// The fused epilogue's operands (bias, scale vectors, aux matrix, row-sum output) and activation
/// arguments, set on whichever members the kernel's fusion operation has. An operand given to a
/// kernel without the member is refused: it would be ignored silently.
template <class ElementD, class Thread>
int32_t set_fusion_arguments(Thread &thread, const cutlass_aot_gemm_args *in) {
  if constexpr (has_bias<Thread>::value) {
    thread.bias_ptr = static_cast<decltype(thread.bias_ptr)>(in->bias);
  } else if (in->bias != nullptr) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if constexpr (is_vector_stride<decltype(thread.dAlpha)>()) {
    thread.alpha_ptr = static_cast<decltype(thread.alpha_ptr)>(in->alpha_vector);
    thread.beta_ptr = static_cast<decltype(thread.beta_ptr)>(in->beta_vector);
  } else if (in->alpha_vector != nullptr || in->beta_vector != nullptr) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if constexpr (has_aux<Thread>::value) {
    using ElementAux = cute::remove_pointer_t<decltype(thread.aux_ptr)>;
    thread.aux_ptr = static_cast<ElementAux *>(in->aux);
    thread.dAux = make_stride<decltype(thread.dAux)>(in->ldaux, in->batch_stride_aux);
  } else if (in->aux != nullptr) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if constexpr (has_dbias<Thread>::value) {
    thread.dbias_ptr = static_cast<decltype(thread.dbias_ptr)>(in->reduction);
  } else if (in->reduction != nullptr) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if constexpr (has_activation<Thread>::value) {
    using Activation = decltype(thread.activation);
    if constexpr (has_leaky_alpha<Activation>::value) {
      thread.activation.leaky_alpha = static_cast<decltype(thread.activation.leaky_alpha)>(in->activation_arg);
    }
    // A clamp saturates to the output type's range, as CUTLASS 2.x's LinearCombinationClamp.
    if constexpr (has_bounds<Activation>::value) {
      using Bound = decltype(thread.activation.lower_bound);
      thread.activation.lower_bound = static_cast<Bound>(cutlass::platform::numeric_limits<ElementD>::lowest());
      thread.activation.upper_bound = static_cast<Bound>(cutlass::platform::numeric_limits<ElementD>::max());
    }
  }
  return CUTLASS_AOT_OK;
}

/// Flat ABI arguments → CUTLASS Arguments → can_implement → workspace → Params (with TMA
/// descriptors), grid, block, cluster, shared memory.
template <typename Kernel>
int32_t gemm_3x_prepare(const cutlass_aot_gemm_args *in, void *params_out, size_t params_capacity,
                        cutlass_aot_launch *launch) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;
  using ElementD = typename Kernel::ElementD;
  using ClusterShape = typename Kernel::ClusterShape;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  if (in->m <= 0 || in->n <= 0 || in->k <= 0 || in->batch_count <= 0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  if (in->mode != CUTLASS_AOT_MODE_GEMM && in->mode != CUTLASS_AOT_MODE_BATCHED) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }

  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;
  hw_info.sm_count = in->device_sms; // from the device, so CUTLASS never asks the CUDA runtime

  Arguments args{};
  args.mode = in->batch_count > 1 ? cutlass::gemm::GemmUniversalMode::kBatched
                                  : cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = typename Kernel::ProblemShape{in->m, in->n, in->k, in->batch_count};
  args.mainloop.ptr_A = static_cast<ElementA const *>(in->a);
  args.mainloop.dA = make_stride<typename Kernel::StrideA>(in->lda, in->batch_stride_a);
  args.mainloop.ptr_B = static_cast<ElementB const *>(in->b);
  args.mainloop.dB = make_stride<typename Kernel::StrideB>(in->ldb, in->batch_stride_b);
  using ElementScalar = cute::remove_cvref_t<decltype(args.epilogue.thread.alpha)>;
  args.epilogue.thread.alpha = static_cast<ElementScalar>(in->alpha);
  args.epilogue.thread.beta = static_cast<ElementScalar>(in->beta);
  int32_t fused = set_fusion_arguments<ElementD>(args.epilogue.thread, in);
  if (fused != CUTLASS_AOT_OK) {
    return fused;
  }
  args.epilogue.ptr_C = static_cast<ElementC const *>(in->c);
  args.epilogue.dC = make_stride<typename Kernel::StrideC>(in->ldc, in->batch_stride_c);
  args.epilogue.ptr_D = static_cast<ElementD *>(in->d);
  args.epilogue.dD = make_stride<typename Kernel::StrideD>(in->ldd, in->batch_stride_d);
  args.hw_info = hw_info;
  // Rasterisation of the persistent tile schedulers: the order CTAs walk output tiles in, and how
  // many tiles wide a swizzled band is (L2 reuse of A and B between neighbouring CTAs).
  using RasterOrder = cute::remove_cvref_t<decltype(args.scheduler.raster_order)>;
  switch (in->raster_order) {
  case 0:
    break;
  case 1:
    args.scheduler.raster_order = RasterOrder::AlongM;
    break;
  case 2:
    args.scheduler.raster_order = RasterOrder::AlongN;
    break;
  default:
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  // Split-K: only the stream-K scheduler can split K; its `splits` replaces the stream-K
  // decomposition by plain split-K, reduced in the scheduler's workspace.
  if (in->split_k_slices <= 0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  if (in->split_k_slices != 1) {
    if constexpr (has_splits<decltype(args.scheduler)>::value) {
      if (in->mode != CUTLASS_AOT_MODE_GEMM || in->batch_count != 1) {
        return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
      }
      args.scheduler.splits = in->split_k_slices;
    } else {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
    }
  }
  if (in->max_swizzle != 0) {
    if (in->max_swizzle != 1 && in->max_swizzle != 2 && in->max_swizzle != 4 && in->max_swizzle != 8) {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
    }
    args.scheduler.max_swizzle_size = in->max_swizzle;
  }

  // The 3.x kernel's can_implement answers yes or no; its checks are alignment, extents and
  // cluster/tile constraints, which the runtime's supports() already explains in detail.
  if (!Kernel::can_implement(args)) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }

  int32_t workspace_status =
      prepare_workspace_3x<Kernel>(args, in->workspace, in->workspace_capacity, launch);
  if (workspace_status != CUTLASS_AOT_OK) {
    return workspace_status;
  }

  tma_args = in;
  tma_first_error = 0;
  Params params = Kernel::to_underlying_arguments(args, in->workspace);
  tma_args = nullptr;
  if (tma_first_error != 0) {
    launch->driver_error = tma_first_error;
    return CUTLASS_AOT_ERROR_TMA_ENCODE;
  }
  std::memcpy(params_out, &params, sizeof(Params));

  return set_launch_shape(launch, Kernel::get_grid_shape(params), Kernel::get_block_shape(),
                          cluster_dims<ClusterShape>(), Kernel::SharedStorageSize, sizeof(Params));
}

} // namespace cutlass_aot

#if defined(CUTLASS_AOT_DEVICE_PASS)
/// The kernel entry: CUTLASS's own body (as in cutlass::device_kernel) under a stable name.
#define CUTLASS_AOT_GEMM_3X(NAME, KERNEL)                                                          \
  extern "C" __global__ void __launch_bounds__(KERNEL::MaxThreadsPerBlock,                         \
                                               KERNEL::MinBlocksPerMultiprocessor)                 \
      NAME(CUTLASS_GRID_CONSTANT typename KERNEL::Params const params) {                           \
    extern __shared__ char cutlass_aot_smem[];                                                     \
    KERNEL op;                                                                                     \
    op(params, cutlass_aot_smem);                                                                  \
  }
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_GEMM_3X(NAME, KERNEL)                                                          \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_gemm_args *args, void *params,               \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::gemm_3x_prepare<KERNEL>(args, params, params_capacity, launch);            \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
