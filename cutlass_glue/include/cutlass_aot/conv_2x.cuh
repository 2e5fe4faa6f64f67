/*
 * CUTLASS 2.x implicit-GEMM conv2d (fprop, dgrad, wgrad; `cutlass::conv::kernel::DefaultConv2d*`):
 * the device entry point and the host `prepare` function of a kernel, with serial split-K
 * (semaphores in the workspace) and parallel split-K (partial sums in the workspace, then CUTLASS's
 * split-K reduction kernel, as in CUTLASS's example 30). Compiled twice, like gemm_2x.cuh.
 *
 * CUTLASS's device wrapper (`conv::device::ImplicitGemmConvolution`) would call the CUDA runtime
 * (memset, smem attribute, launch); only its host-side `can_implement` is used here, and the
 * runtime does the rest with the driver.
 */
#pragma once

#include <cutlass/conv/conv2d_problem_size.h>
#include <cutlass/conv/device/implicit_gemm_convolution.h>
#include <cutlass/conv/kernel/default_conv2d_dgrad.h>
#include <cutlass/conv/kernel/default_conv2d_fprop.h>
#include <cutlass/conv/kernel/default_conv2d_wgrad.h>
#include <cutlass/conv/threadblock/threadblock_swizzle.h>

#include "cutlass_aot/abi_conv.h"
#include "cutlass_aot/gemm_2x.cuh"

namespace cutlass_aot {

/// The ABI's problem as CUTLASS's `Conv2dProblemSize` (its mode spelled out: CUTLASS's short
/// constructors default to convolution, PyTorch computes cross-correlation).
inline cutlass::conv::Conv2dProblemSize conv2d_problem(const cutlass_aot_conv2d_args *in) {
  cutlass::conv::Mode mode = in->mode == CUTLASS_AOT_CONV_CONVOLUTION
                                 ? cutlass::conv::Mode::kConvolution
                                 : cutlass::conv::Mode::kCrossCorrelation;
  return cutlass::conv::Conv2dProblemSize(in->n, in->h, in->w, in->c, in->k, in->r, in->s, in->p,
                                          in->q, in->pad_h, in->pad_w, in->stride_h, in->stride_w,
                                          in->dilation_h, in->dilation_w, mode,
                                          in->split_k_slices, 1);
}

/// Every extent positive, padding non-negative, strides and dilations at least one, and P, Q
/// what those give (CUTLASS trusts the caller's P and Q).
inline bool conv2d_problem_valid(const cutlass_aot_conv2d_args *in) {
  if (in->n <= 0 || in->h <= 0 || in->w <= 0 || in->c <= 0 || in->k <= 0 || in->r <= 0 ||
      in->s <= 0 || in->p <= 0 || in->q <= 0 || in->pad_h < 0 || in->pad_w < 0 ||
      in->stride_h <= 0 || in->stride_w <= 0 || in->dilation_h <= 0 || in->dilation_w <= 0 ||
      in->split_k_slices <= 0) {
    return false;
  }
  if (in->mode != CUTLASS_AOT_CONV_CROSS_CORRELATION && in->mode != CUTLASS_AOT_CONV_CONVOLUTION) {
    return false;
  }
  int64_t p = (int64_t(in->h) + 2 * in->pad_h - int64_t(in->dilation_h) * (in->r - 1) - 1) /
                  in->stride_h + 1;
  int64_t q = (int64_t(in->w) + 2 * in->pad_w - int64_t(in->dilation_w) * (in->s - 1) - 1) /
                  in->stride_w + 1;
  return p == in->p && q == in->q;
}

/// Whether `in` pads both sides alike and reads and writes packed tensors: all that CUTLASS 2.x
/// convolutions (and our first-layer kernel) take. The stride phases of a strided dgrad
/// (asymmetric padding, a strided view of dx) are for 3.x kernels; 2.x kernels run a strided dgrad
/// whole.
inline bool conv2d_packed_symmetric(const cutlass_aot_conv2d_args *in) {
  return in->pad_h_end == in->pad_h && in->pad_w_end == in->pad_w && in->cd_pixel_strides[0] == 0 &&
         in->cd_pixel_strides[1] == 0 && in->cd_pixel_strides[2] == 0;
}

/// The thread epilogue's Params: alpha, beta and the activation's argument, if it takes one.
template <class OutputOp>
typename OutputOp::Params conv_epilogue_params(double alpha, double beta, double activation_arg) {
  using ElementCompute = typename OutputOp::ElementCompute;
  auto params = typename OutputOp::Params(ElementCompute(alpha), ElementCompute(beta));
  if constexpr (has_leaky_alpha<typename OutputOp::Params>::value) {
    params.leaky_alpha = ElementCompute(activation_arg);
  }
  return params;
}

/// Flat ABI arguments → CUTLASS Arguments → can_implement → Params. `Parallel` kernels (whose C is
/// the accumulator type) write unscaled partial sums, slice s at s·|D| in the workspace.
template <typename Kernel, bool Parallel>
int32_t conv_2x_params(const cutlass_aot_conv2d_args *in, typename Kernel::Params *params_out) {
  using Device = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;
  if (!conv2d_packed_symmetric(in)) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if (!conv2d_problem_valid(in)) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  cutlass::conv::Conv2dProblemSize problem = conv2d_problem(in);
  constexpr cutlass::conv::Operator kOp = Kernel::kConvolutionalOperator;
  // Packed channels-last tensors of A, B and C in their roles (see abi_conv.h).
  auto extent_a = cutlass::conv::implicit_gemm_tensor_a_extent(kOp, problem);
  auto extent_b = cutlass::conv::implicit_gemm_tensor_b_extent(kOp, problem);
  auto extent_c = cutlass::conv::implicit_gemm_tensor_c_extent(kOp, problem);
  using LayoutA = typename Kernel::LayoutA;
  using LayoutB = typename Kernel::LayoutB;
  using LayoutC = typename Kernel::LayoutC;

  void *d = Parallel ? in->workspace : in->ptr_d;
  const void *c = Parallel ? d : in->ptr_c;
  double alpha = Parallel ? 1.0 : in->alpha;
  double beta = Parallel ? 0.0 : in->beta;
  typename Kernel::Arguments args(
      problem,
      cutlass::TensorRef<ElementA, LayoutA>(static_cast<ElementA *>(const_cast<void *>(in->ptr_a)),
                                            LayoutA::packed(extent_a)),
      cutlass::TensorRef<ElementB, LayoutB>(static_cast<ElementB *>(const_cast<void *>(in->ptr_b)),
                                            LayoutB::packed(extent_b)),
      cutlass::TensorRef<ElementC, LayoutC>(static_cast<ElementC *>(const_cast<void *>(c)),
                                            LayoutC::packed(extent_c)),
      cutlass::TensorRef<ElementC, LayoutC>(static_cast<ElementC *>(d), LayoutC::packed(extent_c)),
      conv_epilogue_params<typename Kernel::EpilogueOutputOp>(alpha, beta, in->activation_arg),
      Parallel ? cutlass::conv::SplitKMode::kParallel : cutlass::conv::SplitKMode::kSerial);
  int32_t status = to_abi_status(Device::can_implement(args));
  if (status != CUTLASS_AOT_OK) {
    return status;
  }
  *params_out = typename Kernel::Params(args, static_cast<int *>(in->workspace));
  return CUTLASS_AOT_OK;
}

/// The workspace a launch needs: for serial split-K one semaphore per output tile (none without a
/// split), for parallel split-K the partial sums of every slice in the accumulator type.
template <typename Kernel, bool Parallel>
uint64_t conv_workspace_bytes(const cutlass_aot_conv2d_args *in) {
  typename Kernel::Arguments sizing(conv2d_problem(in));
  sizing.split_k_mode =
      Parallel ? cutlass::conv::SplitKMode::kParallel : cutlass::conv::SplitKMode::kSerial;
  return cutlass::conv::device::ImplicitGemmConvolution<Kernel>::get_workspace_size(sizing);
}

/// The conv kernel's Params, grid, block, shared memory, workspace and the fills it needs.
template <typename Kernel, bool Parallel>
int32_t conv_2x_prepare(const cutlass_aot_conv2d_args *in, void *params_out, size_t params_capacity,
                        cutlass_aot_launch *launch) {
  using Params = typename Kernel::Params;
  using Device = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }
  Params params;
  int32_t status = conv_2x_params<Kernel, Parallel>(in, &params);
  if (status != CUTLASS_AOT_OK) {
    return status;
  }
  uint64_t workspace_bytes = conv_workspace_bytes<Kernel, Parallel>(in);
  launch->workspace_bytes = workspace_bytes;
  if (workspace_bytes > 0) {
    if (in->workspace == nullptr || workspace_bytes > in->workspace_capacity) {
      return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
    }
    if (!Parallel) {
      // The semaphores start at zero on every launch (see gemm_2x.cuh).
      launch->fill_count = 1;
      launch->fills[0] = cutlass_aot_fill{0, workspace_bytes, 1, 0};
    }
  }
  typename Kernel::ThreadblockSwizzle swizzle;
  dim3 grid = swizzle.get_grid_shape(params.grid_tiled_shape);
  status = set_launch_shape(launch, grid, dim3(32 * Device::kWarpCount), dim3(1, 1, 1),
                            sizeof(typename Kernel::SharedStorage), sizeof(Params));
  if (status == CUTLASS_AOT_OK) {
    std::memcpy(params_out, &params, sizeof(Params));
  }
  return status;
}

/// Params of the split-K reduction after a parallel conv kernel: it adds the slices' partial sums
/// (the implicit GEMM's M×N output, packed), applies alpha, beta and C and writes D.
template <typename Kernel, typename Reduction>
int32_t conv_split_k_reduce_prepare(const cutlass_aot_conv2d_args *in, void *params_out,
                                    size_t params_capacity, cutlass_aot_launch *launch) {
  using Params = typename Reduction::Params;
  using ElementOutput = typename Reduction::ElementOutput;
  using ElementWorkspace = typename Reduction::ElementWorkspace;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }
  typename Kernel::Params conv;
  int32_t status = conv_2x_params<Kernel, true>(in, &conv);
  if (status != CUTLASS_AOT_OK) {
    return status;
  }
  cutlass::conv::Conv2dProblemSize problem = conv2d_problem(in);
  constexpr cutlass::conv::Operator kOp = Kernel::kConvolutionalOperator;
  uint64_t workspace_bytes = conv_workspace_bytes<Kernel, true>(in);
  launch->workspace_bytes = workspace_bytes;
  if (in->workspace == nullptr || workspace_bytes > in->workspace_capacity) {
    return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
  }
  cutlass::gemm::GemmCoord gemm = cutlass::conv::implicit_gemm_problem_size(kOp, problem);
  cutlass::MatrixCoord extent(gemm.m(), gemm.n());
  int64_t partition_stride = cutlass::conv::implicit_gemm_tensor_c_size(kOp, problem);
  using OutputRef = typename Reduction::OutputTensorRef;
  using WorkspaceRef = typename Reduction::WorkspaceTensorRef;
  // Packed C: the implicit GEMM's rows are N apart.
  Params params(extent, conv.grid_tiled_shape.k(), size_t(partition_stride),
                WorkspaceRef(static_cast<ElementWorkspace *>(in->workspace),
                             typename WorkspaceRef::Layout(gemm.n())),
                OutputRef(static_cast<ElementOutput *>(in->ptr_d), typename OutputRef::Layout(gemm.n())),
                OutputRef(static_cast<ElementOutput *>(const_cast<void *>(in->ptr_c)),
                          typename OutputRef::Layout(gemm.n())),
                conv_epilogue_params<typename Reduction::OutputOp>(in->alpha, in->beta,
                                                                   in->activation_arg));
  dim3 grid = Reduction::grid_shape(extent);
  dim3 block = Reduction::block_shape();
  status = set_launch_shape(launch, dim3(grid.x, grid.y), dim3(block.x, block.y), dim3(1, 1, 1), 0,
                            sizeof(Params));
  if (status == CUTLASS_AOT_OK) {
    std::memcpy(params_out, &params, sizeof(Params));
  }
  return status;
}

} // namespace cutlass_aot

#if defined(CUTLASS_AOT_DEVICE_PASS)
/// The kernel entry: CUTLASS's own body under a stable, unmangled name.
#define CUTLASS_AOT_CONV_2X(NAME, KERNEL)                                                          \
  extern "C" __global__ void __launch_bounds__(                                                   \
      32 * cutlass::conv::device::ImplicitGemmConvolution<KERNEL>::kWarpCount)                     \
      NAME(typename KERNEL::Params params) {                                                       \
    extern __shared__ int cutlass_aot_smem[];                                                      \
    KERNEL op;                                                                                     \
    op(params, *reinterpret_cast<typename KERNEL::SharedStorage *>(cutlass_aot_smem));             \
  }
/// Parallel split-K: the conv writing partial sums, and CUTLASS's reduction as `NAME_reduce`.
#define CUTLASS_AOT_CONV_2X_SPLIT_K_PARALLEL(NAME, KERNEL, REDUCTION)                              \
  CUTLASS_AOT_CONV_2X(NAME, KERNEL)                                                                \
  extern "C" __global__ void NAME##_reduce(typename REDUCTION::Params params) {                    \
    __shared__ typename REDUCTION::SharedStorage storage;                                          \
    REDUCTION op;                                                                                  \
    op(params, storage);                                                                           \
  }
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_CONV_2X(NAME, KERNEL)                                                          \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_conv2d_args *args, void *params,             \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::conv_2x_prepare<KERNEL, false>(args, params, params_capacity, launch);     \
  }
#define CUTLASS_AOT_CONV_2X_SPLIT_K_PARALLEL(NAME, KERNEL, REDUCTION)                              \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_conv2d_args *args, void *params,             \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::conv_2x_prepare<KERNEL, true>(args, params, params_capacity, launch);      \
  }                                                                                                \
  extern "C" int32_t NAME##_reduce_prepare(const cutlass_aot_conv2d_args *args, void *params,      \
                                           size_t params_capacity, cutlass_aot_launch *launch) {   \
    return cutlass_aot::conv_split_k_reduce_prepare<KERNEL, REDUCTION>(                            \
        args, params, params_capacity, launch);                                                    \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
