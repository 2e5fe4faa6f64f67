/*
 * CUTLASS 3.x (sm_90a) implicit-GEMM 2-D convolutions: the device entry point and the host
 * `prepare` function of a kernel. Compiled twice like gemm_3x.cuh, whose TMA tiled-encode hook,
 * thread-local error capture and RecordingAdapter this header reuses.
 *
 * CUTLASS_AOT_CONV_3X(NAME, KERNEL): KERNEL is either a `cutlass::conv::kernel::ConvUniversal`
 * over `cutlass::conv::ConvProblemShape<ConvOp, 2>` with a mainloop from
 * `cutlass::conv::collective::CollectiveBuilder` (schedule `KernelImplicitTmaWarpSpecializedSm90`,
 * the only one CUTLASS 4.2 has for sm90 convolutions: its Cooperative and Pingpong tags exist but
 * the dispatch policy static_asserts on them), or our persistent cooperative
 * `cutlass_aot::conv_3x::ConvCooperative` (conv_3x_cooperative.hpp), which has the same interface.
 * `NAME_prepare` takes `cutlass_aot_conv2d_args` (abi_conv.h). In CUTLASS 4.2 the sm90
 * ConvUniversal *is* the non-persistent warp-specialized GemmUniversal (one producer and one
 * consumer warpgroup, 256 threads, no workspace, no tile scheduler arguments); ConvCooperative
 * with the stream-K scheduler takes split-K slices and a workspace.
 *
 * The activation operand (A for fprop and dgrad, B for wgrad) is loaded by TMA in im2col mode:
 * CUTLASS encodes its descriptor with the driver's cuTensorMapEncodeIm2col, routed here to
 * `args->encode_im2col`; the other operands and the epilogue use tiled descriptors, routed by
 * gemm_3x.cuh to `args->encode_tiled`. A failed encode of either kind makes prepare return
 * CUTLASS_AOT_ERROR_TMA_ENCODE with `launch->driver_error` set.
 *
 * Padding: `pad_h`/`pad_w` before the first row/column and `pad_h_end`/`pad_w_end` after the last
 * (PyTorch's symmetric padding has both equal). CUTLASS's output extent
 * 1 + (H + lower + upper - ((R - 1) * dilation + 1)) / stride floors exactly as PyTorch's does, and
 * so does the im2col TMA traversal (rows past the last full window are never read), so symmetric
 * padding passes `pad` as the upper padding as CUTLASS's own library does (conv_operation_3x.hpp);
 * p and q must be that extent.
 *
 * Strided dgrad runs as unit-stride dgrads, one per stride phase of dx (the runtime's
 * conv::stride_phases): each has its own sub-filter and asymmetric padding, and writes every
 * stride-th pixel of dx through `cd_pixel_strides`, which replace C's and D's packed pixel strides
 * (TMA stores take any 16-byte multiple).
 *
 * This header must come before any CUTLASS header (and before gemm_3x.cuh): the driver-call
 * #defines have to be seen by CUTLASS's headers.
 */
#pragma once

#if defined(CUTLASS_CUDA_DRIVER_WRAPPER_CALL)
#error "conv_3x.cuh must be included before any CUTLASS header and before gemm_3x.cuh"
#endif

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda.h>

#include "cutlass_aot/abi_conv.h"

namespace cutlass_aot {

/// The im2col encode function of the conv prepare call running on this thread (see below).
inline thread_local cutlass_aot_encode_im2col_fn tma_encode_im2col = nullptr;

/// Stands in for the driver's cuTensorMapEncodeIm2col inside CUTLASS (see the #define below).
/// Declared here, before CUTLASS sees the name; defined after gemm_3x.cuh, whose first-error state
/// it shares with the tiled hook.
inline CUresult encode_im2col(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                              void *address, const cuuint64_t *dims, const cuuint64_t *strides,
                              const int *lower_corner, const int *upper_corner,
                              cuuint32_t channels_per_pixel, cuuint32_t pixels_per_column,
                              const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
                              CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                              CUtensorMapFloatOOBfill oob);

} // namespace cutlass_aot

// CUTLASS calls it through CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeIm2col), which with
// CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL (set by gemm_3x.cuh) calls the name as written.
#define cuTensorMapEncodeIm2col cutlass_aot::encode_im2col

#include "cutlass_aot/gemm_3x.cuh"

#include <cutlass/conv/collective/collective_builder.hpp>
#include <cutlass/conv/convnd_problem_shape.hpp>
#include <cutlass/conv/convolution.h>
#include <cutlass/conv/dispatch_policy.hpp>
#include <cutlass/conv/kernel/conv_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "cutlass_aot/conv_3x_cooperative.hpp"

namespace cutlass_aot {

inline CUresult encode_im2col(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                              void *address, const cuuint64_t *dims, const cuuint64_t *strides,
                              const int *lower_corner, const int *upper_corner,
                              cuuint32_t channels_per_pixel, cuuint32_t pixels_per_column,
                              const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
                              CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                              CUtensorMapFloatOOBfill oob) {
  int32_t result = CUDA_ERROR_NOT_INITIALIZED;
  if (tma_encode_im2col != nullptr) {
    result = tma_encode_im2col(map, type, rank, address, dims, strides, lower_corner, upper_corner,
                               channels_per_pixel, pixels_per_column, element_strides, interleave,
                               swizzle, l2, oob);
  }
  if (result != CUDA_SUCCESS && tma_first_error == 0) {
    tma_first_error = result;
  }
  return static_cast<CUresult>(result);
}

namespace conv_3x {

/// The epilogue's scalar and activation arguments. The conv ABI carries no bias, scale-vector, aux
/// or reduction operand, so a fusion that has one cannot be driven through it: refused at compile
/// time rather than launched with a null operand.
template <class ElementD, class Thread>
void set_fusion_arguments(Thread &thread, const cutlass_aot_conv2d_args *in) {
  static_assert(!has_bias<Thread>::value, "conv kernels: the conv ABI has no bias operand");
  static_assert(!has_aux<Thread>::value, "conv kernels: the conv ABI has no aux operand");
  static_assert(!has_dbias<Thread>::value, "conv kernels: the conv ABI has no reduction operand");
  static_assert(!is_vector_stride<decltype(thread.dAlpha)>(),
                "conv kernels: the conv ABI has no per-channel alpha/beta");
  using ElementScalar = cute::remove_cvref_t<decltype(thread.alpha)>;
  thread.alpha = static_cast<ElementScalar>(in->alpha);
  thread.beta = static_cast<ElementScalar>(in->beta);
  if constexpr (has_activation<Thread>::value) {
    using Activation = decltype(thread.activation);
    if constexpr (has_leaky_alpha<Activation>::value) {
      thread.activation.leaky_alpha =
          static_cast<decltype(thread.activation.leaky_alpha)>(in->activation_arg);
    }
    // A clamp saturates to the output type's range, as in gemm_3x.cuh.
    if constexpr (has_bounds<Activation>::value) {
      using Bound = decltype(thread.activation.lower_bound);
      thread.activation.lower_bound =
          static_cast<Bound>(cutlass::platform::numeric_limits<ElementD>::lowest());
      thread.activation.upper_bound =
          static_cast<Bound>(cutlass::platform::numeric_limits<ElementD>::max());
    }
  }
}

/// Whether `pointer` meets TMA's 16-byte global address alignment.
inline bool tma_aligned(const void *pointer) {
  return (reinterpret_cast<uintptr_t>(pointer) & 15u) == 0;
}

/// Whether `extent` contiguous elements of `Element` make a whole number of 16-byte TMA units.
template <class Element> bool tma_aligned_extent(int64_t extent) {
  return (extent * cutlass::sizeof_bits<Element>::value) % 128 == 0;
}

} // namespace conv_3x

/// Flat ABI arguments → ConvProblemShape and CUTLASS Arguments → can_implement → workspace →
/// Params (with im2col and tiled TMA descriptors), grid, block, cluster, shared memory.
template <typename Kernel>
int32_t conv_3x_prepare(const cutlass_aot_conv2d_args *in, void *params_out,
                        size_t params_capacity, cutlass_aot_launch *launch) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using ProblemShape = typename Kernel::ProblemShape;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;
  using ElementD = typename Kernel::ElementD;
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;
  using ClusterShape = typename Kernel::ClusterShape;
  constexpr cutlass::conv::Operator op = ProblemShape::ConvOp;
  static_assert(ProblemShape::NumSpatialDimensions == 2, "conv_3x.cuh builds 2-D convolutions");
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  if (in->n <= 0 || in->h <= 0 || in->w <= 0 || in->c <= 0 || in->k <= 0 || in->r <= 0 ||
      in->s <= 0 || in->p <= 0 || in->q <= 0 || in->pad_h < 0 || in->pad_w < 0 ||
      in->pad_h_end < 0 || in->pad_w_end < 0 || in->stride_h < 1 || in->stride_w < 1 || in->dilation_h < 1 || in->dilation_w < 1 ||
      in->split_k_slices <= 0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  // The output extent the padding, stride and dilation give (PyTorch's, floored), which CUTLASS
  // computes the same way from symmetric padding.
  auto extent = [](int64_t input, int64_t filter, int64_t pad, int64_t pad_end, int64_t stride,
                   int64_t dilation) {
    int64_t span = input + pad + pad_end - ((filter - 1) * dilation + 1);
    return span < 0 ? int64_t(0) : span / stride + 1;
  };
  if (extent(in->h, in->r, in->pad_h, in->pad_h_end, in->stride_h, in->dilation_h) != in->p ||
      extent(in->w, in->s, in->pad_w, in->pad_w_end, in->stride_w, in->dilation_w) != in->q) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  // C and D as a strided view (all three pixel strides) or packed (none).
  const int64_t *cd_strides = in->cd_pixel_strides;
  const bool cd_view = cd_strides[0] != 0 || cd_strides[1] != 0 || cd_strides[2] != 0;
  if (cd_view) {
    if (cd_strides[0] <= 0 || cd_strides[1] <= 0 || cd_strides[2] <= 0) {
      return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
    }
    if constexpr (op == cutlass::conv::Operator::kWgrad) {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED; // a filter gradient is never a view
    }
  }
  // CUTLASS's sm90 convolutions compute cross-correlation only (their can_implement says so).
  if (in->mode != CUTLASS_AOT_CONV_CROSS_CORRELATION) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  // The sm90 dgrad mainloop is correct at unit stride only: a strided dgrad needs the
  // zero-inserted output gradient (CUTLASS's sm100 has a separate strided-dgrad kernel, sm90 none),
  // yet CUTLASS's can_implement accepts it.
  if constexpr (op == cutlass::conv::Operator::kDgrad) {
    if (in->stride_h != 1 || in->stride_w != 1) {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
    }
  }
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }

  // TMA: 16-byte base addresses and contiguous (channel) extents of whole 16-byte units. The
  // contiguous extent of each operand (channels-last, packed): the activation's and filter's is C,
  // the output's K.
  const int64_t a_channels = op == cutlass::conv::Operator::kFprop ? in->c : in->k;
  const int64_t b_channels = in->c;
  const int64_t cd_channels = op == cutlass::conv::Operator::kFprop ? in->k : in->c;
  if (!conv_3x::tma_aligned(in->ptr_a) || !conv_3x::tma_aligned(in->ptr_b) ||
      !conv_3x::tma_aligned(in->ptr_c) || !conv_3x::tma_aligned(in->ptr_d) ||
      !conv_3x::tma_aligned_extent<ElementA>(a_channels) ||
      !conv_3x::tma_aligned_extent<ElementB>(b_channels)) {
    return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
  }

  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;
  hw_info.sm_count = in->device_sms; // from the device, so CUTLASS never asks the CUDA runtime

  // NHWC activation, KRSC filter, packed; symmetric padding (see the top of this file).
  using Extent = typename ProblemShape::TensorExtent;
  using Spatial = typename ProblemShape::SpatialExtent;
  ProblemShape problem(cutlass::conv::Mode::kCrossCorrelation, Extent{in->n, in->h, in->w, in->c},
                       Extent{in->k, in->r, in->s, in->c}, Spatial{in->pad_h, in->pad_w},
                       Spatial{in->pad_h_end, in->pad_w_end}, Spatial{in->stride_h, in->stride_w},
                       Spatial{in->dilation_h, in->dilation_w}, 1);
  // The output grid CUTLASS derived must be the caller's p × q (checked above; defensive).
  {
    auto const &xformed = op == cutlass::conv::Operator::kFprop ? problem.shape_C : problem.shape_A;
    if (xformed[1] != in->p || xformed[2] != in->q) {
      return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
    }
  }

  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = problem;
  args.mainloop.ptr_A = static_cast<ElementA const *>(in->ptr_a);
  args.mainloop.ptr_B = static_cast<ElementB const *>(in->ptr_b);
  conv_3x::set_fusion_arguments<ElementD>(args.epilogue.thread, in);
  args.epilogue.ptr_C = static_cast<ElementC const *>(in->ptr_c);
  args.epilogue.ptr_D = static_cast<ElementD *>(in->ptr_d);
  // C/D strides as CUTLASS's library sets them (conv_operation_3x.hpp): fprop and dgrad outputs
  // are ((W,H,N) spatial modes, channel, _0) from the packed NHWC / NPQK strides in reverse (or
  // the caller's view); the wgrad output is (K, (C,S,R), _0) from the packed KRSC strides.
  StrideC dC{};
  StrideD dD{};
  if constexpr (op == cutlass::conv::Operator::kWgrad) {
    dC = cutlass::make_cute_packed_stride(StrideC{}, problem.shape_C, problem.stride_C, op);
    dD = cutlass::make_cute_packed_stride(StrideD{}, problem.shape_C, problem.stride_C, op);
  } else {
    cute::for_each(cute::make_seq<cute::rank<0>(StrideC{})>{}, [&](auto i) {
      cute::get<0, i>(dC) = problem.stride_C[ProblemShape::RankT - 2 - i];
    });
    cute::for_each(cute::make_seq<cute::rank<0>(StrideD{})>{}, [&](auto i) {
      cute::get<0, i>(dD) = problem.stride_C[ProblemShape::RankT - 2 - i];
    });
    if (cd_view) {
      static_assert(cute::rank<0>(StrideD{}) == 3, "2-D conv outputs have (W, H, N) pixel modes");
      for (int i = 0; i < 3; ++i) {
        // TMA: every stride a whole number of 16-byte units.
        if (!conv_3x::tma_aligned_extent<ElementC>(cd_strides[i]) ||
            !conv_3x::tma_aligned_extent<ElementD>(cd_strides[i])) {
          return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
        }
      }
      cute::get<0, 0>(dC) = cd_strides[0];
      cute::get<0, 1>(dC) = cd_strides[1];
      cute::get<0, 2>(dC) = cd_strides[2];
      cute::get<0, 0>(dD) = cd_strides[0];
      cute::get<0, 1>(dD) = cd_strides[1];
      cute::get<0, 2>(dD) = cd_strides[2];
    }
  }
  args.epilogue.dC = dC;
  args.epilogue.dD = dD;
  args.hw_info = hw_info;
  // Split-K: only the stream-K scheduler (ConvCooperative with cutlass::gemm::StreamKScheduler) can
  // split K; its `splits` replaces the stream-K decomposition by plain split-K, reduced in its
  // workspace (deterministically, in slice order), as in gemm_3x.cuh. With 1 slice it decides
  // itself between data-parallel tiles and stream-K.
  if (in->split_k_slices != 1) {
    if constexpr (has_splits<decltype(args.scheduler)>::value) {
      args.scheduler.splits = in->split_k_slices;
    } else {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
    }
  }

  // CUTLASS's can_implement answers yes or no: TMA alignment of every operand, im2col padding,
  // corner and filter-offset limits, cross-correlation, groups == 1. Misalignment of the output's
  // channels is the one failure the checks above leave: report it as such.
  if (!Kernel::can_implement(args)) {
    if (!conv_3x::tma_aligned_extent<ElementC>(cd_channels) ||
        !conv_3x::tma_aligned_extent<ElementD>(cd_channels)) {
      return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
    }
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }

  int32_t workspace_status =
      prepare_workspace_3x<Kernel>(args, in->workspace, in->workspace_capacity, launch);
  if (workspace_status != CUTLASS_AOT_OK) {
    return workspace_status;
  }

  // gemm_3x.cuh's tiled hook reads the encode function from a GEMM args struct: hand it one that
  // carries only that.
  cutlass_aot_gemm_args encode_only{};
  encode_only.encode_tiled = in->encode_tiled;
  tma_args = &encode_only;
  tma_encode_im2col = in->encode_im2col;
  tma_first_error = 0;
  Params params = Kernel::to_underlying_arguments(args, in->workspace);
  tma_args = nullptr;
  tma_encode_im2col = nullptr;
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
#define CUTLASS_AOT_CONV_3X(NAME, KERNEL)                                                          \
  extern "C" __global__ void __launch_bounds__(KERNEL::MaxThreadsPerBlock,                         \
                                               KERNEL::MinBlocksPerMultiprocessor)                 \
      NAME(CUTLASS_GRID_CONSTANT typename KERNEL::Params const params) {                           \
    extern __shared__ char cutlass_aot_smem[];                                                     \
    KERNEL op;                                                                                     \
    op(params, cutlass_aot_smem);                                                                  \
  }
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_CONV_3X(NAME, KERNEL)                                                          \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_conv2d_args *args, void *params,             \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::conv_3x_prepare<KERNEL>(args, params, params_capacity, launch);            \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
