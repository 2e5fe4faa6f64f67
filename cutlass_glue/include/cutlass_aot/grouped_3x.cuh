/*
 * CUTLASS 3.x (sm_90a) grouped GEMM and pointer-array batched GEMM: the device entry point and the
 * host `prepare` function of a kernel. Compiled twice like gemm_3x.cuh, whose TMA encode hook,
 * RecordingAdapter and fusion-argument logic this header reuses.
 *
 *  - CUTLASS_AOT_GROUPED_3X(NAME, KERNEL): KERNEL is a `GemmUniversal` over
 *    `cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>` built with pointer layouts
 *    (`cutlass::layout::RowMajor *`, ...) and a `KernelPtrArrayTmaWarpSpecialized{Cooperative,
 *    Pingpong}` schedule. `NAME_prepare` takes `cutlass_aot_grouped_args` (abi_grouped.h).
 *  - CUTLASS_AOT_GEMM_3X_ARRAY(NAME, KERNEL): KERNEL is a `GemmUniversal` over
 *    `cutlass::gemm::ArrayProblemShape<cute::Shape<int, int, int, int>>` built with plain layouts and
 *    the same schedules. `NAME_prepare` takes the GEMM ABI (`cutlass_aot_gemm_args`) with
 *    `mode == CUTLASS_AOT_MODE_ARRAY`: `a`, `b`, `c`, `d` are device arrays of `batch_count` device
 *    pointers, `lda`..`ldd` are shared by all batches and batch strides are ignored.
 *
 * Epilogues: CUTLASS 4.2's sm90 ptr-array epilogue has the fusions LinearCombination and
 * LinCombEltAct only (scalar alpha and beta for all groups; an elementwise activation): no bias,
 * aux, per-row/column scale or reduction operand, and the prepare functions refuse them.
 *
 * Both kernels keep one TMA descriptor per SM and operand in the workspace (they rewrite it on the
 * device whenever a CTA moves to another group or batch), so they always need a workspace: its size
 * depends on `device_sms`, never on the group count.
 *
 * With the problem sizes on the device only (`host_problems` NULL), CUTLASS checks nothing per
 * group and launches `device_sms` CTAs (rounded to clusters); with them on the host it checks the
 * contiguous extent of every operand against the TMA alignment and launches no more CTAs than
 * there are tiles. Leading dimensions live on the device: nobody checks them here.
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cutlass_aot/abi_grouped.h"
#include "cutlass_aot/gemm_3x.cuh"
// The device-side argument block filler every grouped unit carries (device pass only).
#include "cutlass_aot/grouped_setup.cuh"

#include <cutlass/gemm/group_array_problem_shape.hpp>

namespace cutlass_aot {
namespace grouped_3x {

/// Whether KERNEL is a 3.x grouped GEMM (per-group strides: its StrideA is a pointer).
template <class Kernel> constexpr bool is_grouped() {
  return !std::is_same<typename Kernel::StrideA, typename Kernel::InternalStrideA>::value;
}

/// Number of modes of a CuTe stride that are not compile-time constants.
template <class Stride, int... I>
constexpr int dynamic_modes(std::integer_sequence<int, I...>) {
  return (0 + ... +
          (cute::is_static<cute::remove_cvref_t<decltype(cute::get<I>(Stride{}))>>::value ? 0 : 1));
}

/// Whether a per-group stride (InternalStrideA, ...) is exactly one int64_t leading dimension, so
/// that the ABI's device array of `int64_t` leading dimensions can be handed to CUTLASS as an array
/// of strides.
template <class Stride> constexpr bool is_one_int64() {
  constexpr int rank = int(cute::rank(Stride{}));
  return sizeof(Stride) == sizeof(int64_t) && alignof(Stride) == alignof(int64_t) &&
         std::is_trivially_copyable<Stride>::value &&
         dynamic_modes<Stride>(std::make_integer_sequence<int, rank>{}) == 1;
}

/// The value type of the (single) dynamic mode of a per-group stride.
template <class Stride, int I = 0> constexpr bool dynamic_mode_is_int64() {
  if constexpr (I >= int(cute::rank(Stride{}))) {
    return false;
  } else {
    using Mode = cute::remove_cvref_t<decltype(cute::get<I>(Stride{}))>;
    if constexpr (!cute::is_static<Mode>::value) {
      return std::is_same<Mode, int64_t>::value;
    } else {
      return dynamic_mode_is_int64<Stride, I + 1>();
    }
  }
}

// The scheduler Params of the grouped kernel keep a copy of the problem shape (`problem_shapes_`).
template <class T, class = void> struct has_problem_shapes_ : std::false_type {};
template <class T>
struct has_problem_shapes_<T, std::void_t<decltype(T::problem_shapes_)>> : std::true_type {};

/// Whether a fusion's Arguments are those of CUTLASS's ptr-array epilogues (LinearCombination,
/// LinCombEltAct): alpha, beta, their pointers and an activation, no operand (traits of
/// gemm_3x.cuh).
template <class Thread> constexpr bool is_operandless_fusion() {
  return !has_bias<Thread>::value && !has_aux<Thread>::value && !has_dbias<Thread>::value &&
         !is_vector_stride<decltype(Thread{}.dAlpha)>() &&
         !is_vector_stride<decltype(Thread{}.dBeta)>();
}

/// A pointer-array kernel's stride of one batch: leading dimension `ld` as make_stride places it,
/// and the L mode set to the packed size of one matrix (ld times the extent of ld's mode), as
/// CUTLASS's example 56 does. The kernel never steps along L (each batch has its own pointer and
/// an L of 1 in its TMA descriptor); the value only keeps the descriptor CUTLASS encodes on the host
/// an ordinary one.
template <class Stride> Stride make_array_stride(int64_t ld, int64_t extent0, int64_t extent1) {
  using Mode0 = cute::remove_cvref_t<decltype(cute::get<0>(Stride{}))>;
  return make_stride<Stride>(ld, ld * (cute::is_static<Mode0>::value ? extent1 : extent0));
}

/// Raster order and swizzle of a persistent tile scheduler's Arguments (as gemm_3x_prepare).
template <class SchedulerArguments>
int32_t set_scheduler(SchedulerArguments &scheduler, int32_t raster_order, int32_t max_swizzle) {
  using RasterOrder = cute::remove_cvref_t<decltype(scheduler.raster_order)>;
  switch (raster_order) {
  case 0: // CUTLASS's default: its heuristic (GEMM), along M (grouped: no heuristic there)
    break;
  case 1:
    scheduler.raster_order = RasterOrder::AlongM;
    break;
  case 2:
    scheduler.raster_order = RasterOrder::AlongN;
    break;
  default:
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if (max_swizzle != 0) {
    if (max_swizzle != 1 && max_swizzle != 2 && max_swizzle != 4 && max_swizzle != 8) {
      return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
    }
    scheduler.max_swizzle_size = max_swizzle;
  }
  return CUTLASS_AOT_OK;
}

/// Arguments → can_implement → workspace (size, recorded fills) → Params (TMA descriptors through
/// the hook of gemm_3x.cuh), grid, block, cluster, shared memory. `scrub` edits the Params after
/// the grid is known and before they are copied out.
template <typename Kernel, typename Scrub>
int32_t finish(typename Kernel::Arguments const &args, void *workspace, uint64_t workspace_capacity,
               cutlass_aot_encode_tiled_fn encode, void *params_out, cutlass_aot_launch *launch,
               Scrub &&scrub) {
  using Params = typename Kernel::Params;
  using ClusterShape = typename Kernel::ClusterShape;

  if (!Kernel::can_implement(args)) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }

  int32_t workspace_status =
      prepare_workspace_3x<Kernel>(args, workspace, workspace_capacity, launch);
  if (workspace_status != CUTLASS_AOT_OK) {
    return workspace_status;
  }

  // gemm_3x.cuh's hook reads the encode function from a GEMM args struct: hand it one that carries
  // only that.
  cutlass_aot_gemm_args encode_only{};
  encode_only.encode_tiled = encode;
  tma_args = &encode_only;
  tma_first_error = 0;
  Params params = Kernel::to_underlying_arguments(args, workspace);
  tma_args = nullptr;
  if (tma_first_error != 0) {
    launch->driver_error = tma_first_error;
    return CUTLASS_AOT_ERROR_TMA_ENCODE;
  }

  dim3 grid = Kernel::get_grid_shape(params);
  dim3 block = Kernel::get_block_shape();
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) {
    // Host extents with no output tile at all (every group has m = 0 or n = 0): CUTLASS sizes the
    // grid to zero CTAs, which no launch accepts. One cluster finds no work (the scheduler knows
    // the tile count from the host extents) and exits, so the launch stays valid and does nothing.
    grid = cluster_dims<ClusterShape>();
  }
  scrub(params);
  std::memcpy(params_out, &params, sizeof(Params));
  return set_launch_shape(launch, grid, block, cluster_dims<ClusterShape>(),
                          Kernel::SharedStorageSize, sizeof(Params));
}

/// Grouped GEMM: flat ABI arguments → CUTLASS Arguments, then `finish`.
template <typename Kernel>
int32_t grouped_prepare(const cutlass_aot_grouped_args *in, void *params_out,
                        size_t params_capacity, cutlass_aot_launch *launch) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using ProblemShape = typename Kernel::ProblemShape;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;
  using ElementD = typename Kernel::ElementD;
  using StrideA = typename Kernel::InternalStrideA;
  using StrideB = typename Kernel::InternalStrideB;
  using StrideC = typename Kernel::InternalStrideC;
  using StrideD = typename Kernel::InternalStrideD;
  using Thread = decltype(Arguments{}.epilogue.thread);

  static_assert(is_grouped<Kernel>(), "CUTLASS_AOT_GROUPED_3X needs a grouped kernel "
                                      "(GroupProblemShape, pointer layouts `LayoutX *`)");
  static_assert(std::is_same<ProblemShape, cutlass::gemm::GroupProblemShape<Shape>>::value &&
                    int(cute::rank(Shape{})) == 3,
                "CUTLASS_AOT_GROUPED_3X needs GroupProblemShape<cute::Shape<int, int, int>>");
  static_assert(sizeof(Shape) == sizeof(cutlass_aot_gemm_coord) &&
                    alignof(Shape) == alignof(cutlass_aot_gemm_coord) &&
                    std::is_trivially_copyable<Shape>::value,
                "cutlass_aot_gemm_coord must have cute::Shape<int, int, int>'s layout");
  static_assert(is_one_int64<StrideA>() && dynamic_mode_is_int64<StrideA>(),
                "A's per-group stride must be one int64_t leading dimension");
  static_assert(is_one_int64<StrideB>() && dynamic_mode_is_int64<StrideB>(),
                "B's per-group stride must be one int64_t leading dimension");
  static_assert(is_one_int64<StrideC>() && dynamic_mode_is_int64<StrideC>(),
                "C's per-group stride must be one int64_t leading dimension");
  static_assert(is_one_int64<StrideD>() && dynamic_mode_is_int64<StrideD>(),
                "D's per-group stride must be one int64_t leading dimension");
  // The grouped ABI has no bias, aux, scale-vector or reduction operands (CUTLASS 4.2's sm90
  // ptr-array epilogue has only LinearCombination and LinCombEltAct anyway).
  static_assert(is_operandless_fusion<Thread>(),
                "grouped kernels take no bias, aux, scale-vector or reduction operand");
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");

  std::memset(launch, 0, sizeof(*launch));
  cutlass_aot_grouped_arrays const &arrays = in->arrays;
  if (in->group_count <= 0 || in->device_sms <= 0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  if (arrays.problems == nullptr || arrays.a == nullptr || arrays.b == nullptr ||
      arrays.d == nullptr || arrays.lda == nullptr || arrays.ldb == nullptr ||
      arrays.ldd == nullptr || (arrays.c != nullptr && arrays.ldc == nullptr)) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  // Without C the epilogue must not read it.
  if (arrays.c == nullptr && in->beta != 0.0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  if (in->host_problems != nullptr) {
    for (int32_t g = 0; g < in->group_count; ++g) {
      cutlass_aot_gemm_coord const &p = in->host_problems[g];
      if (p.m < 0 || p.n < 0 || p.k < 0) {
        return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
      }
      // K = 0 with output tiles: the mainloop issues no MMA and the epilogue would store
      // uninitialised accumulators (alpha * garbage + beta * C).
      if (p.k == 0 && p.m > 0 && p.n > 0) {
        return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
      }
    }
  }
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }

  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = ProblemShape{
      in->group_count, reinterpret_cast<Shape *>(const_cast<cutlass_aot_gemm_coord *>(arrays.problems)),
      in->host_problems != nullptr ? reinterpret_cast<Shape const *>(in->host_problems) : nullptr};
  args.mainloop.ptr_A = reinterpret_cast<ElementA const **>(const_cast<void const **>(arrays.a));
  args.mainloop.dA = reinterpret_cast<StrideA *>(const_cast<int64_t *>(arrays.lda));
  args.mainloop.ptr_B = reinterpret_cast<ElementB const **>(const_cast<void const **>(arrays.b));
  args.mainloop.dB = reinterpret_cast<StrideB *>(const_cast<int64_t *>(arrays.ldb));

  using ElementScalar = cute::remove_cvref_t<decltype(args.epilogue.thread.alpha)>;
  args.epilogue.thread.alpha = static_cast<ElementScalar>(in->alpha);
  args.epilogue.thread.beta = static_cast<ElementScalar>(in->beta);
  // Activation arguments (leaky_relu's slope, a clamp's bounds) as for a GEMM, through a GEMM args
  // struct that carries nothing else (no operand to set or refuse).
  cutlass_aot_gemm_args fusion{};
  fusion.activation_arg = in->activation_arg;
  int32_t fused = set_fusion_arguments<ElementD>(args.epilogue.thread, &fusion);
  if (fused != CUTLASS_AOT_OK) {
    return fused;
  }
  if (arrays.c != nullptr) {
    args.epilogue.ptr_C = reinterpret_cast<ElementC const **>(const_cast<void const **>(arrays.c));
    args.epilogue.dC = reinterpret_cast<StrideC *>(const_cast<int64_t *>(arrays.ldc));
  } else {
    args.epilogue.ptr_C = nullptr; // no C: the kernel skips its loads and TMA updates
    args.epilogue.dC = nullptr;
  }
  args.epilogue.ptr_D = reinterpret_cast<ElementD **>(const_cast<void **>(arrays.d));
  args.epilogue.dD = reinterpret_cast<StrideD *>(const_cast<int64_t *>(arrays.ldd));

  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;
  hw_info.sm_count = in->device_sms; // from the device, so CUTLASS never asks the CUDA runtime
  args.hw_info = hw_info;
  int32_t scheduled = set_scheduler(args.scheduler, in->raster_order, in->max_swizzle);
  if (scheduled != CUTLASS_AOT_OK) {
    return scheduled;
  }

  return finish<Kernel>(args, in->workspace, in->workspace_capacity, in->encode_tiled, params_out,
                        launch, [](Params &params) {
                          // The host extents served the grid size and the CTA count; the kernel
                          // never reads them. Keep no host address in the Params.
                          params.problem_shape.host_problem_shapes = nullptr;
                          if constexpr (has_problem_shapes_<decltype(params.scheduler)>::value) {
                            params.scheduler.problem_shapes_.host_problem_shapes = nullptr;
                          }
                        });
}

/// Pointer-array batched GEMM (GEMM ABI, CUTLASS_AOT_MODE_ARRAY): flat arguments → CUTLASS
/// Arguments, then `finish`.
template <typename Kernel>
int32_t array_prepare(const cutlass_aot_gemm_args *in, void *params_out, size_t params_capacity,
                      cutlass_aot_launch *launch) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using ProblemShape = typename Kernel::ProblemShape;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;
  using ElementD = typename Kernel::ElementD;

  static_assert(!is_grouped<Kernel>(), "CUTLASS_AOT_GEMM_3X_ARRAY needs a pointer-array kernel "
                                       "(ArrayProblemShape, plain layouts)");
  static_assert(std::is_same<ProblemShape, cutlass::gemm::ArrayProblemShape<Shape>>::value &&
                    int(cute::rank(Shape{})) == 4,
                "CUTLASS_AOT_GEMM_3X_ARRAY needs ArrayProblemShape<cute::Shape<int, int, int, int>>");
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");
  static_assert(is_operandless_fusion<decltype(Arguments{}.epilogue.thread)>(),
                "pointer-array kernels take no bias, aux, scale-vector or reduction operand");

  std::memset(launch, 0, sizeof(*launch));
  if (in->mode != CUTLASS_AOT_MODE_ARRAY) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if (in->m <= 0 || in->n <= 0 || in->k <= 0 || in->batch_count <= 0 || in->device_sms <= 0 ||
      in->split_k_slices <= 0) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  if (in->split_k_slices != 1) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED; // ptr-array kernels take the default scheduler only
  }
  if (in->a == nullptr || in->b == nullptr || in->d == nullptr ||
      (in->c == nullptr && in->beta != 0.0)) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  // CUTLASS checks the contiguous extents only (against default-constructed strides): the leading
  // dimensions must be 16-byte multiples for TMA too.
  constexpr int64_t align_a = 128 / cutlass::sizeof_bits<ElementA>::value;
  constexpr int64_t align_b = 128 / cutlass::sizeof_bits<ElementB>::value;
  constexpr int64_t align_d = 128 / cutlass::sizeof_bits<ElementD>::value;
  if (in->lda % align_a != 0 || in->ldb % align_b != 0 || in->ldd % align_d != 0) {
    return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
  }
  if constexpr (!std::is_void<ElementC>::value) {
    constexpr int64_t align_c = 128 / cutlass::sizeof_bits<ElementC>::value;
    if (in->c != nullptr && in->ldc % align_c != 0) {
      return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
    }
  }
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }

  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kArray;
  args.problem_shape = ProblemShape{Shape{in->m, in->n, in->k, in->batch_count}};
  // Each batch is its own tensor (L = 1 in its TMA descriptor): the batch mode's stride is unused.
  int64_t const m = in->m, n = in->n, k = in->k;
  args.mainloop.ptr_A = reinterpret_cast<ElementA const **>(const_cast<void *>(in->a));
  args.mainloop.dA = make_array_stride<typename Kernel::StrideA>(in->lda, m, k);
  args.mainloop.ptr_B = reinterpret_cast<ElementB const **>(const_cast<void *>(in->b));
  args.mainloop.dB = make_array_stride<typename Kernel::StrideB>(in->ldb, n, k);
  using ElementScalar = cute::remove_cvref_t<decltype(args.epilogue.thread.alpha)>;
  args.epilogue.thread.alpha = static_cast<ElementScalar>(in->alpha);
  args.epilogue.thread.beta = static_cast<ElementScalar>(in->beta);
  // Activation arguments; bias, scale vectors, aux and reduction are refused (the epilogue has
  // none of them).
  int32_t fused = set_fusion_arguments<ElementD>(args.epilogue.thread, in);
  if (fused != CUTLASS_AOT_OK) {
    return fused;
  }
  args.epilogue.ptr_C = reinterpret_cast<ElementC const **>(const_cast<void *>(in->c));
  args.epilogue.dC = make_array_stride<typename Kernel::StrideC>(in->ldc, m, n);
  args.epilogue.ptr_D = reinterpret_cast<ElementD **>(in->d);
  args.epilogue.dD = make_array_stride<typename Kernel::StrideD>(in->ldd, m, n);

  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;
  hw_info.sm_count = in->device_sms;
  args.hw_info = hw_info;
  int32_t scheduled = set_scheduler(args.scheduler, in->raster_order, in->max_swizzle);
  if (scheduled != CUTLASS_AOT_OK) {
    return scheduled;
  }

  return finish<Kernel>(args, in->workspace, in->workspace_capacity, in->encode_tiled, params_out,
                        launch, [](Params &) {});
}

} // namespace grouped_3x
} // namespace cutlass_aot

#if defined(CUTLASS_AOT_DEVICE_PASS)
/// The kernel entries: CUTLASS's own body under a stable name, as CUTLASS_AOT_GEMM_3X.
#define CUTLASS_AOT_GROUPED_3X(NAME, KERNEL)                                                       \
  static_assert(cutlass_aot::grouped_3x::is_grouped<KERNEL>(), "not a grouped kernel");            \
  CUTLASS_AOT_GEMM_3X(NAME, KERNEL)
#define CUTLASS_AOT_GEMM_3X_ARRAY(NAME, KERNEL)                                                    \
  static_assert(!cutlass_aot::grouped_3x::is_grouped<KERNEL>(), "not a pointer-array kernel");     \
  CUTLASS_AOT_GEMM_3X(NAME, KERNEL)
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_GROUPED_3X(NAME, KERNEL)                                                       \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_grouped_args *args, void *params,            \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::grouped_3x::grouped_prepare<KERNEL>(args, params, params_capacity,         \
                                                            launch);                               \
  }
#define CUTLASS_AOT_GEMM_3X_ARRAY(NAME, KERNEL)                                                    \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_gemm_args *args, void *params,               \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::grouped_3x::array_prepare<KERNEL>(args, params, params_capacity, launch);  \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
