/*
 * A persistent, cooperative (two consumer warpgroups) sm_90a implicit-GEMM 2-D convolution, which
 * CUTLASS 4.2 does not have: its sm90 ConvUniversal is the non-persistent warp-specialized
 * GemmUniversal with one consumer warpgroup, and its conv dispatch policy static_asserts on the
 * Cooperative and Pingpong conv schedule tags.
 *
 * Three pieces, all in cutlass_aot::conv_3x:
 *  - KernelImplicitTmaWarpSpecializedCooperativeSm90: the schedule tag. It derives from no CUTLASS
 *    tag, so no CUTLASS GemmUniversal / ConvUniversal specialization matches a mainloop built with
 *    it (none is ambiguous, none half-fits), and it is not one of the two tags the dispatch
 *    policy's static_assert rejects.
 *  - CooperativeConvMainloop<...>::CollectiveOp: CUTLASS's sm90 conv collective builder
 *    (conv/collective/builders/sm90_gmma_builder.inl) for NHWC activations / KRSC filters with the
 *    tiled MMA of the GEMM cooperative builder (AtomLayoutMNK 2x1x1), or of one warpgroup
 *    (1x1x1, ConsumerWarpGroups = 1), and the tag above. The
 *    collective itself is CUTLASS's CollectiveConv (sm90_implicit_gemm_gmma_ss_warpspecialized.hpp),
 *    unchanged: its mma() already runs on any number of warpgroups (thread_idx < size(TiledMma)),
 *    restarts the accumulators (ScaleOut::Zero) on every call, and load() slices the tile it is
 *    given from the load_init tensors, so it can be called once per work tile.
 *  - ConvCooperative<ProblemShape, Mainloop, Epilogue, TileScheduler>: the kernel. CUTLASS's
 *    gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp with the conv problem handling of
 *    gemm/kernel/sm90_gemm_tma_warpspecialized.hpp (the IsConvProblemShape branches). Each change
 *    is marked "conv:" below.
 *
 * With a one-warpgroup mainloop the same kernel is the persistent warp-specialized one (one
 * consumer warpgroup, as CUTLASS's pingpong kernel without the ping-pong; pair it with the
 * TmaWarpSpecialized epilogue): what lets a 64-row tile split K.
 *
 * Constraints: the CTA tile's M extent must be a multiple of 64 per consumer warpgroup (128 for
 * two, as the GEMM cooperative kernel); the tile scheduler is the static persistent one, or the stream-K
 * one (TileSchedulerTag cutlass::gemm::StreamKScheduler: stream-K, or split-K when its Arguments'
 * `splits` > 1, partial sums reduced in its workspace); dgrad is refused at non-unit stride (see
 * can_implement).
 *
 * The epilogue is CUTLASS's sm90 TMA epilogue built for the cooperative schedule:
 * cutlass::epilogue::collective::CollectiveBuilder<Sm90, OpClassTensorOp, TileShape, ClusterShape,
 * EpilogueTileAuto, ElementAcc, ElementCompute, ElementC, LayoutC, AlignC, ElementD, LayoutD,
 * AlignD, cutlass::epilogue::TmaWarpSpecializedCooperative> with LayoutC/D TensorNHWC (fprop,
 * dgrad) or TensorKCSR (wgrad), as for ConvUniversal but with the cooperative epilogue schedule
 * (128-row epilogue subtiles, 256 storing threads); with one consumer warpgroup, the
 * TmaWarpSpecialized schedule (128 storing threads), exactly ConvUniversal's.
 */
#pragma once

#include <cutlass/arch/grid_dependency_control.h>
#include <cutlass/arch/mma_sm90.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/conv/collective/collective_builder.hpp>
#include <cutlass/conv/convnd_problem_shape.hpp>
#include <cutlass/conv/convolution.h>
#include <cutlass/conv/detail.hpp>
#include <cutlass/conv/dispatch_policy.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/detail.hpp>
#include <cutlass/fast_math.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/gemm.h>
#include <cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp>
#include <cutlass/gemm/kernel/tile_scheduler.hpp>
#include <cutlass/kernel_hardware_info.hpp>
#include <cutlass/pipeline/pipeline.hpp>
#include <cutlass/trace.h>
#include <cutlass/workspace.h>

#include <cute/arch/cluster_sm90.hpp>
#include <cute/tensor.hpp>

namespace cutlass_aot::conv_3x {

/// Schedule tag of the persistent cooperative implicit-GEMM conv mainloop (see the top of the
/// file). SchedulerPipelineStageCount is what the GEMM cooperative kernel reads from its schedule
/// (KernelTmaWarpSpecializedCooperative has 0 too).
struct KernelImplicitTmaWarpSpecializedCooperativeSm90 {
  static constexpr int SchedulerPipelineStageCount = 0;
};

/// CUTLASS's sm90 conv CollectiveBuilder (GMMA_TMA_WS_SS_FPROP in
/// conv/collective/builders/sm90_gmma_builder.inl) with GmemLayoutA = GmemLayoutB = TensorNHWC, a
/// tiled MMA of ConsumerWarpGroups (2: cooperative; 1: one consumer) warpgroups stacked along M and
/// the cooperative tag. StageCountType: cutlass::conv::collective::StageCount<N> or
/// StageCountAutoCarveout<bytes> (CUTLASS's own stage-count function is used).
template <cutlass::conv::Operator ConvOp, class ElementA, int AlignmentA, class ElementB,
          int AlignmentB, class ElementAccumulator, class TileShape_MNK, class ClusterShape_MNK,
          class StageCountType, int ConsumerWarpGroups = 2>
struct CooperativeConvMainloop {
  static_assert(ConsumerWarpGroups == 1 || ConsumerWarpGroups == 2,
                "one or two consumer warpgroups");
  static_assert(cute::is_static<TileShape_MNK>::value);
  static_assert(cute::is_static<ClusterShape_MNK>::value);
  static_assert(cutlass::gemm::collective::detail::is_aligned<
                    ElementA, AlignmentA, ElementB, AlignmentB,
                    cutlass::gemm::collective::detail::tma_alignment_bytes>(),
                "Should meet TMA alignment requirement\n");
  // Change: 64-row GMMA warpgroups stacked along M (two: the GEMM cooperative kernel's layout), so
  // the CTA tile must cover whole multiples of 64 rows per warpgroup.
  static_assert(cute::size<0>(TileShape_MNK{}) % (64 * ConsumerWarpGroups) == 0,
                "cooperative conv: the tile's M extent must be a multiple of 64 per consumer warpgroup");

  using GmemLayoutA = cutlass::layout::TensorNHWC;
  using GmemLayoutB = cutlass::layout::TensorNHWC;

  // For fp32 types, map to tf32 MMA value type
  using ElementAMma = cute::conditional_t<cute::is_same_v<ElementA, float>, cute::tfloat32_t, ElementA>;
  using ElementBMma = cute::conditional_t<cute::is_same_v<ElementB, float>, cute::tfloat32_t, ElementB>;

  // For fprop, majorA = K,  major B = K;
  // For wgrad, majorA = MN, major B = MN;
  // For dgrad, majorA = K,  major B = MN;
  static constexpr cute::GMMA::Major GmmaMajorA =
      (ConvOp == cutlass::conv::Operator::kWgrad) ? cute::GMMA::Major::MN : cute::GMMA::Major::K;
  static constexpr cute::GMMA::Major GmmaMajorB =
      (ConvOp == cutlass::conv::Operator::kFprop) ? cute::GMMA::Major::K : cute::GMMA::Major::MN;

  // Change: 2x1x1 for two warpgroups (CUTLASS's conv builder takes it only for its rejected
  // Cooperative tag), 1x1x1 (its own) for one.
  using AtomLayoutMNK =
      cute::Layout<cute::Shape<cute::Int<ConsumerWarpGroups>, cute::_1, cute::_1>>;

  using TiledMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<ElementAMma, ElementBMma, ElementAccumulator, TileShape_MNK,
                                 GmmaMajorA, GmmaMajorB>(),
      AtomLayoutMNK{}));

  // For wgrad kernel, tensor A uses tma tiled mode and tensor B uses tma im2col mode.
  using GmemTiledCopyA = cute::conditional_t<
      ConvOp == cutlass::conv::Operator::kWgrad,
      decltype(cutlass::gemm::collective::detail::sm90_cluster_shape_to_tma_atom(
          cute::shape<1>(ClusterShape_MNK{}))),
      decltype(cutlass::conv::collective::detail::sm90_cluster_shape_to_im2col_tma_atom(
          cute::shape<1>(ClusterShape_MNK{})))>;
  using GmemTiledCopyB = cute::conditional_t<
      ConvOp == cutlass::conv::Operator::kWgrad,
      decltype(cutlass::conv::collective::detail::sm90_cluster_shape_to_im2col_tma_atom(
          cute::shape<0>(ClusterShape_MNK{}))),
      decltype(cutlass::gemm::collective::detail::sm90_cluster_shape_to_tma_atom(
          cute::shape<0>(ClusterShape_MNK{})))>;

  using SmemLayoutAtomA = decltype(cutlass::gemm::collective::detail::ss_smem_selector<
                                   GmmaMajorA, ElementAMma, decltype(cute::get<0>(TileShape_MNK{})),
                                   decltype(cute::get<2>(TileShape_MNK{}))>());
  using SmemLayoutAtomB = decltype(cutlass::gemm::collective::detail::ss_smem_selector<
                                   GmmaMajorB, ElementBMma, decltype(cute::get<1>(TileShape_MNK{})),
                                   decltype(cute::get<2>(TileShape_MNK{}))>());

  // CUTLASS's conv stage count: (capacity - carveout) / (A + B stage bytes + one pipeline stage).
  // The persistent kernel keeps the epilogue's smem beside the mainloop's (no union), exactly what
  // a StageCountAutoCarveout of sizeof(CollectiveEpilogue::SharedStorage) reserves, as for the
  // GEMM cooperative kernels; ConvCooperative static_asserts that the whole fits.
  static constexpr int PipelineStages =
      cutlass::conv::collective::detail::compute_stage_count_or_override<
          cutlass::gemm::collective::detail::sm90_smem_capacity_bytes, ElementAMma, ElementBMma,
          TileShape_MNK>(StageCountType{});

  using SmemLayoutA = decltype(cute::tile_to_shape(
      SmemLayoutAtomA{},
      cute::make_shape(cute::shape<0>(TileShape_MNK{}), cute::shape<2>(TileShape_MNK{}),
                       cute::Int<PipelineStages>{}),
      cute::Step<cute::_2, cute::_1, cute::_3>{}));
  using SmemLayoutB = decltype(cute::tile_to_shape(
      SmemLayoutAtomB{},
      cute::make_shape(cute::shape<1>(TileShape_MNK{}), cute::shape<2>(TileShape_MNK{}),
                       cute::Int<PipelineStages>{}),
      cute::Step<cute::_2, cute::_1, cute::_3>{}));

  static constexpr int NumSpatialDimensions =
      cutlass::conv::collective::detail::gmem_layout_tags_to_spatial_dims<GmemLayoutA, GmemLayoutB>();

  // Change: the cooperative tag.
  using DispatchPolicy = cutlass::conv::MainloopSm90TmaGmmaWarpSpecializedImplicitGemm<
      ConvOp, PipelineStages, NumSpatialDimensions, ClusterShape_MNK,
      KernelImplicitTmaWarpSpecializedCooperativeSm90>;

  using CollectiveOp = cutlass::conv::collective::CollectiveConv<
      DispatchPolicy, TileShape_MNK, ElementA, ElementB, TiledMma,
      cutlass::conv::collective::detail::Sm90ImplicitGemmTileTraits<GmemTiledCopyA, SmemLayoutA>,
      cutlass::conv::collective::detail::Sm90ImplicitGemmTileTraits<GmemTiledCopyB, SmemLayoutB>>;
};

/// The persistent cooperative conv kernel: CUTLASS's GemmUniversal for
/// KernelTmaWarpSpecializedCooperative (sm90_gemm_tma_warpspecialized_cooperative.hpp), adapted to
/// a cutlass::conv::ConvProblemShape the way sm90_gemm_tma_warpspecialized.hpp adapts the
/// non-persistent kernel. Same interface as cutlass::conv::kernel::ConvUniversal.
template <class ProblemShape_, class CollectiveMainloop_, class CollectiveEpilogue_,
          class TileSchedulerTag_ = void>
class ConvCooperative {
public:
  //
  // Type Aliases
  //
  using ProblemShape = ProblemShape_;
  // conv: only a conv problem shape (the GEMM kernel takes <M,N,K[,L]>).
  static_assert(cute::is_same_v<ProblemShape, cutlass::conv::ConvProblemShape<
                                                  ProblemShape::ConvOp, ProblemShape::RankS>>,
                "ConvCooperative takes a cutlass::conv::ConvProblemShape");
  static constexpr cutlass::conv::Operator ConvOp = ProblemShape::ConvOp;

  // Mainloop derived types
  using CollectiveMainloop = CollectiveMainloop_;
  using TileShape = typename CollectiveMainloop::TileShape;
  using TiledMma = typename CollectiveMainloop::TiledMma;
  using ArchTag = typename CollectiveMainloop::ArchTag;
  using ElementA = typename CollectiveMainloop::ElementA;
  using StrideA = typename CollectiveMainloop::StrideA;
  using ElementB = typename CollectiveMainloop::ElementB;
  using StrideB = typename CollectiveMainloop::StrideB;
  using DispatchPolicy = typename CollectiveMainloop::DispatchPolicy;
  using ElementAccumulator = typename CollectiveMainloop::ElementAccumulator;
  using ClusterShape = typename DispatchPolicy::ClusterShape;
  using MainloopArguments = typename CollectiveMainloop::Arguments;
  using MainloopParams = typename CollectiveMainloop::Params;
  static_assert(cute::is_same_v<typename DispatchPolicy::Schedule,
                                KernelImplicitTmaWarpSpecializedCooperativeSm90>,
                "ConvCooperative needs a mainloop from CooperativeConvMainloop");
  static_assert(cute::is_same_v<typename CollectiveMainloop::ProblemShape, ProblemShape>,
                "the mainloop's conv operator / spatial rank must be the problem shape's");

  // Epilogue derived types
  using CollectiveEpilogue = CollectiveEpilogue_;
  using ElementC = typename CollectiveEpilogue::ElementC;
  using StrideC = typename CollectiveEpilogue::StrideC;
  using ElementD = typename CollectiveEpilogue::ElementD;
  using StrideD = typename CollectiveEpilogue::StrideD;
  using EpilogueArguments = typename CollectiveEpilogue::Arguments;
  using EpilogueParams = typename CollectiveEpilogue::Params;

  static_assert(ArchTag::kMinComputeCapability >= 90);

  static constexpr uint32_t TileSchedulerPipelineStageCount =
      DispatchPolicy::Schedule::SchedulerPipelineStageCount;
  using TileSchedulerTag = TileSchedulerTag_;
  // conv: the static persistent scheduler, or the stream-K one (cutlass::gemm::StreamKScheduler),
  // which splits the conv K-tile space (hierarchical: (C/BLK_K, S, R) for fprop, (K/BLK_K, S, R)
  // for dgrad, N*P*Q/BLK_K for wgrad) into ranges reduced through its workspace. Both count tiles
  // with cute::ceil_div over the same hierarchical shapes the conv collective tiles (see
  // work_k_tiles below), and a K-tile range starts at idx2crd of its first tile, as in CUTLASS's
  // GEMM cooperative kernel.
  static_assert(cute::is_void_v<TileSchedulerTag> or
                    cute::is_same_v<TileSchedulerTag, cutlass::gemm::PersistentScheduler> or
                    cute::is_same_v<TileSchedulerTag, cutlass::gemm::StreamKScheduler>,
                "ConvCooperative supports the persistent and stream-K tile schedulers");
  using TileScheduler = typename cutlass::gemm::kernel::detail::TileSchedulerSelector<
      TileSchedulerTag, ArchTag, TileShape, ClusterShape,
      TileSchedulerPipelineStageCount>::Scheduler;
  static constexpr bool IsStreamK =
      cute::is_same_v<TileScheduler, cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamK<
                                         TileShape, ClusterShape>>;
  static_assert(IsStreamK or
                cute::is_same_v<TileScheduler, cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90>);

  using TileSchedulerArguments = typename TileScheduler::Arguments;
  using TileSchedulerParams = typename TileScheduler::Params;

  // Warp specialization thread count per threadblock
  static constexpr uint32_t NumMMAThreads = cute::size(TiledMma{});                  // 4 or 8 warps
  static constexpr uint32_t NumMainloopLoadThreads = cutlass::NumThreadsPerWarp;     // 1 warp
  static constexpr uint32_t NumEpilogueLoadThreads = cutlass::NumThreadsPerWarp;     // 1 warp for C

  static constexpr uint32_t NumLoadWarpGroups = 1;
  static constexpr uint32_t NumMmaWarpGroups = NumMMAThreads / cutlass::NumThreadsPerWarpGroup;
  static constexpr uint32_t MaxThreadsPerBlock =
      NumMMAThreads + (NumLoadWarpGroups * cutlass::NumThreadsPerWarpGroup);
  static constexpr uint32_t MinBlocksPerMultiprocessor = 1;
  // conv: the conv collective issues its TMA loads from one elected thread of the producer warp
  // (one producer arrival per stage); CUTLASS's GEMM collective says so through
  // NumProducerThreadEvents = 1, which the conv collective does not define.
  static constexpr uint32_t NumProducerThreads = 1;

  /// Register requirement for Load and Math WGs
  static constexpr int RegsPerThread = cute::size<0>(TileShape{}) * cute::size<1>(TileShape{}) /
                                       NumMMAThreads * sizeof(ElementAccumulator) / sizeof(uint32_t);
  static constexpr bool HeavyRegisterPressure = RegsPerThread >= 208;
  static constexpr uint32_t LoadRegisterRequirement = !HeavyRegisterPressure ? 40 : 24;
  static constexpr uint32_t MmaRegisterRequirement = !HeavyRegisterPressure ? 232 : 240;

  // 1 stage ordered sequence between mainloop and epilogue producer load threads
  using LoadWarpOrderBarrier = cutlass::OrderedSequenceBarrier<1, 2>;

  // conv: the static persistent scheduler keeps no shared state (its SharedStorage is empty), so
  // the kernel holds none; the dynamic (CLC) scheduler pipelines of the GEMM kernel are not built.
  static_assert(!TileScheduler::IsDynamicPersistent);

  // Kernel level shared memory storage
  struct SharedStorage {
    struct PipelineStorage : cute::aligned_struct<16, cute::_1> {
      using MainloopPipelineStorage = typename CollectiveMainloop::PipelineStorage;
      using EpiLoadPipelineStorage = typename CollectiveEpilogue::PipelineStorage;

      alignas(16) MainloopPipelineStorage mainloop;
      alignas(16) EpiLoadPipelineStorage epi_load;
      alignas(16) typename LoadWarpOrderBarrier::SharedStorage load_order;
    } pipelines;

    struct TensorStorage : cute::aligned_struct<128, cute::_1> {
      using MainloopTensorStorage = typename CollectiveMainloop::TensorStorage;
      using EpilogueTensorStorage = typename CollectiveEpilogue::TensorStorage;

      EpilogueTensorStorage epilogue;
      MainloopTensorStorage mainloop;
    } tensors;
  };

  static constexpr int SharedStorageSize = sizeof(SharedStorage);
  // conv: the mainloop's stage count came from a carveout (CUTLASS's conv builder formula, not the
  // GEMM builder's 128-byte-rounded one): check that everything fits an sm90 CTA.
  static_assert(SharedStorageSize <= cutlass::gemm::collective::detail::sm90_smem_capacity_bytes,
                "ConvCooperative: shared storage exceeds 227 KiB; lower the stage count");

  // conv: the linearized (im2col) MNKL shape the conv collective iterates over, as the
  // non-persistent kernel keeps it in its Params:
  //   fprop (N*P*Q, K, (C,S,R), _1), dgrad (N*H*W, C, (K,S,R), 1), wgrad (K, (C,S,R), N*P*Q, _1).
  using ProblemShapeMNKL =
      decltype(CollectiveMainloop::get_problem_shape_MNKL(ProblemShape{}));

  // Device side arguments
  struct Arguments {
    cutlass::gemm::GemmUniversalMode mode{};
    ProblemShape problem_shape{};
    MainloopArguments mainloop{};
    EpilogueArguments epilogue{};
    cutlass::KernelHardwareInfo hw_info{};
    TileSchedulerArguments scheduler{};
  };

  // Kernel entry point API
  struct Params {
    cutlass::gemm::GemmUniversalMode mode{};
    // conv: the linearized MNKL shape, not the ConvProblemShape (see ProblemShapeMNKL).
    ProblemShapeMNKL problem_shape{};
    MainloopParams mainloop{};
    EpilogueParams epilogue{};
    cutlass::KernelHardwareInfo hw_info{};
    TileSchedulerParams scheduler{};
    void *workspace{nullptr};
  };

  //
  // Methods
  //

  static Params to_underlying_arguments(Arguments const &args, void *workspace) {
    CUTLASS_TRACE_HOST("to_underlying_arguments():");

    // conv: the shapes of sm90_gemm_tma_warpspecialized.hpp: the linearized one drives the
    // scheduler and the kernel, the transformed (hierarchical) one builds the epilogue's TMA
    // descriptors, and the mainloop takes the ConvProblemShape itself.
    auto problem_shape_MNKL = CollectiveMainloop::get_problem_shape_MNKL(args.problem_shape);
    auto transformed_problem_shape =
        cutlass::conv::detail::get_transformed_problem_shape_MNKL(args.problem_shape);

    // Get SM count if needed, otherwise use user supplied SM count
    int sm_count = args.hw_info.sm_count;
    if (sm_count <= 0) {
      CUTLASS_TRACE_HOST("  WARNING: Arguments do not include a valid SM count.\n"
                         "  For optimal performance, populate the arguments KernelHardwareInfo "
                         "struct with the SM count.");
      sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(args.hw_info.device_id);
    }
    CUTLASS_TRACE_HOST("to_underlying_arguments(): Setting persistent grid SM count to " << sm_count);

    // Get maximum number of clusters that could co-exist on the target device
    int max_active_clusters = args.hw_info.max_active_clusters;
    if (max_active_clusters <= 0) {
      max_active_clusters = 0;
    }

    cutlass::KernelHardwareInfo hw_info{args.hw_info.device_id, sm_count, max_active_clusters};

    // Calculate workspace pointers
    uint8_t *workspace_ptr = reinterpret_cast<uint8_t *>(workspace);
    size_t workspace_offset = 0;

    void *epilogue_workspace = workspace_ptr + workspace_offset;
    workspace_offset += CollectiveEpilogue::get_workspace_size(transformed_problem_shape, args.epilogue);
    workspace_offset = cutlass::round_nearest(workspace_offset, cutlass::MinWorkspaceAlignment);

    void *scheduler_workspace = workspace_ptr + workspace_offset;
    workspace_offset += TileScheduler::template get_workspace_size<ProblemShapeMNKL, ElementAccumulator>(
        args.scheduler, problem_shape_MNKL, args.hw_info, NumMmaWarpGroups);
    workspace_offset = cutlass::round_nearest(workspace_offset, cutlass::MinWorkspaceAlignment);

    void *mainloop_workspace = nullptr;
    constexpr uint32_t NumEpilogueSubTiles = CollectiveEpilogue::get_store_pipe_increment(TileShape{});
    TileSchedulerParams scheduler = TileScheduler::to_underlying_arguments(
        problem_shape_MNKL, TileShape{}, ClusterShape{}, hw_info, args.scheduler,
        scheduler_workspace, NumEpilogueSubTiles);

    return {args.mode,
            problem_shape_MNKL,
            CollectiveMainloop::to_underlying_arguments(args.problem_shape, args.mainloop,
                                                        mainloop_workspace),
            CollectiveEpilogue::to_underlying_arguments(transformed_problem_shape, args.epilogue,
                                                        epilogue_workspace),
            hw_info,
            scheduler,
            workspace};
  }

  static bool can_implement(Arguments const &args) {
    bool implementable = (args.mode == cutlass::gemm::GemmUniversalMode::kGemm);
    if (!implementable) {
      CUTLASS_TRACE_HOST("  CAN IMPLEMENT: Arguments or Problem Shape don't meet the requirements.\n");
      return implementable;
    }
    // conv: dgrad at unit traversal stride only. At stride > 1 the transformed L is V*U (one
    // sub-problem per stride phase) and the mainloop would need the zero-inserted output gradient;
    // CUTLASS's non-persistent kernel accepts it and computes every phase as phase 0, and this
    // kernel, which takes l_coord = 0 like it (the conv load_init tensors have no L mode), refuses
    // it instead.
    if constexpr (ConvOp == cutlass::conv::Operator::kDgrad) {
      for (int i = 0; i < ProblemShape::RankS; ++i) {
        implementable &= args.problem_shape.traversal_stride[i] == 1;
      }
      if (!implementable) {
        CUTLASS_TRACE_HOST("  CAN IMPLEMENT: ConvCooperative dgrad needs unit stride.\n");
        return implementable;
      }
    }
    // conv: the mainloop checks the ConvProblemShape, the epilogue the transformed shape its TMA
    // descriptors are built from (as in sm90_gemm_tma_warpspecialized.hpp).
    auto transformed_problem_shape =
        cutlass::conv::detail::get_transformed_problem_shape_MNKL(args.problem_shape);
    implementable &= CollectiveMainloop::can_implement(args.problem_shape, args.mainloop);
    implementable &= CollectiveEpilogue::can_implement(transformed_problem_shape, args.epilogue);
    implementable &= TileScheduler::can_implement(args.scheduler);
    return implementable;
  }

  static size_t get_workspace_size(Arguments const &args) {
    auto problem_shape_MNKL = CollectiveMainloop::get_problem_shape_MNKL(args.problem_shape);
    auto transformed_problem_shape =
        cutlass::conv::detail::get_transformed_problem_shape_MNKL(args.problem_shape);
    size_t workspace_size = 0;
    constexpr uint32_t NumEpilogueSubTiles = CollectiveEpilogue::get_store_pipe_increment(TileShape{});

    workspace_size += CollectiveEpilogue::get_workspace_size(transformed_problem_shape, args.epilogue);
    workspace_size = cutlass::round_nearest(workspace_size, cutlass::MinWorkspaceAlignment);

    workspace_size += TileScheduler::template get_workspace_size<ProblemShapeMNKL, ElementAccumulator>(
        args.scheduler, problem_shape_MNKL, args.hw_info, NumMmaWarpGroups, NumEpilogueSubTiles);
    workspace_size = cutlass::round_nearest(workspace_size, cutlass::MinWorkspaceAlignment);
    return workspace_size;
  }

  static cutlass::Status initialize_workspace(Arguments const &args, void *workspace = nullptr,
                                              cudaStream_t stream = nullptr,
                                              cutlass::CudaHostAdapter *cuda_adapter = nullptr) {
    auto problem_shape_MNKL = CollectiveMainloop::get_problem_shape_MNKL(args.problem_shape);
    auto transformed_problem_shape =
        cutlass::conv::detail::get_transformed_problem_shape_MNKL(args.problem_shape);
    cutlass::Status status = cutlass::Status::kSuccess;
    uint8_t *workspace_ptr = reinterpret_cast<uint8_t *>(workspace);
    size_t workspace_offset = 0;
    constexpr uint32_t NumEpilogueSubTiles = CollectiveEpilogue::get_store_pipe_increment(TileShape{});
    static constexpr uint32_t NumAccumulatorMtxs = 1;

    status = CollectiveEpilogue::initialize_workspace(transformed_problem_shape, args.epilogue,
                                                      workspace_ptr + workspace_offset, stream,
                                                      cuda_adapter);
    workspace_offset += CollectiveEpilogue::get_workspace_size(transformed_problem_shape, args.epilogue);
    workspace_offset = cutlass::round_nearest(workspace_offset, cutlass::MinWorkspaceAlignment);
    if (status != cutlass::Status::kSuccess) {
      return status;
    }

    status = TileScheduler::template initialize_workspace<ProblemShapeMNKL, ElementAccumulator>(
        args.scheduler, workspace_ptr + workspace_offset, stream, problem_shape_MNKL, args.hw_info,
        NumMmaWarpGroups, NumEpilogueSubTiles, NumAccumulatorMtxs, cuda_adapter);
    workspace_offset += TileScheduler::template get_workspace_size<ProblemShapeMNKL, ElementAccumulator>(
        args.scheduler, problem_shape_MNKL, args.hw_info, NumMmaWarpGroups, NumEpilogueSubTiles);
    workspace_offset = cutlass::round_nearest(workspace_offset, cutlass::MinWorkspaceAlignment);
    return status;
  }

  // Computes the kernel launch grid shape based on runtime parameters
  static dim3 get_grid_shape(Params const &params) {
    // Given device SM count, set grid size s.t. we do not launch more thread blocks than we can run concurrently
    TileSchedulerArguments args{};
    if constexpr (!std::is_const_v<decltype(args.max_swizzle_size)>) {
      args.max_swizzle_size = 1 << params.scheduler.log_swizzle_size_;
    }
    args.raster_order = params.scheduler.raster_order_ == TileScheduler::RasterOrder::AlongN
                            ? TileScheduler::RasterOrderOptions::AlongN
                            : TileScheduler::RasterOrderOptions::AlongM;
    return TileScheduler::get_grid_shape(params.scheduler, params.problem_shape, TileShape{},
                                         ClusterShape{}, params.hw_info, args);
  }

  static dim3 get_block_shape() { return dim3(MaxThreadsPerBlock, 1, 1); }

  CUTLASS_DEVICE
  void operator()(Params const &params, char *smem_buf) {
    using namespace cute;
    using X = Underscore;

// Any Tensor Op MMA Atom in the WGMMA ISA is arch conditional to sm90a.
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
    printf("ERROR : Arch conditional MMA instruction used without targeting sm90a compute capability. Aborting.\n");
#else

    // Preconditions
    // conv: one or two consumer warpgroups (see CooperativeConvMainloop), 64 rows of the tile each.
    static_assert(NumMMAThreads == 128 || NumMMAThreads == 256,
                  "ConvCooperative: the TiledMMA must run on one or two warpgroups");
    static_assert(size<0>(TileShape{}) >= 64 * NumMmaWarpGroups,
                  "ConvCooperative: the tile needs at least 64 rows of M per consumer warpgroup");
    // conv: no rank-3 [M,K,L] stride asserts; the conv collective and epilogue own their
    // (hierarchical) conv strides, as in sm90_gemm_tma_warpspecialized.hpp for IsConvProblemShape.

    /* In the Cooperative kernel, Consumer0 and Consumer1 collaborate on the same tile */
    enum class WarpGroupRole {
      Producer = 0,
      Consumer0 = 1,
      Consumer1 = 2
    };
    enum class ProducerWarpRole {
      Mainloop = 0,
      Warp1 = 1,
      Epilogue = 2,
      MainloopAux = 3
    };

    // Kernel level shared memory storage
    SharedStorage &shared_storage = *reinterpret_cast<SharedStorage *>(smem_buf);

    int thread_idx = int(threadIdx.x);
    int lane_idx = cutlass::canonical_lane_idx();
    int warp_idx = cutlass::canonical_warp_idx_sync();
    int warp_idx_in_warp_group = warp_idx % cutlass::NumWarpsPerWarpGroup;
    int warp_group_thread_idx = thread_idx % cutlass::NumThreadsPerWarpGroup;
    int mma_thread_idx = thread_idx % NumMMAThreads;
    auto warp_group_role = WarpGroupRole(cutlass::canonical_warp_group_idx());
    auto producer_warp_role = ProducerWarpRole(warp_idx_in_warp_group);
    int lane_predicate = cute::elect_one_sync();
    uint32_t block_rank_in_cluster = cute::block_rank_in_cluster();

    // Issue Tma Descriptor Prefetch from a single thread
    if ((warp_idx == 0) && lane_predicate) {
      CollectiveMainloop::prefetch_tma_descriptors(params.mainloop);
      CollectiveEpilogue::prefetch_tma_descriptors(params.epilogue);
    }

    CollectiveEpilogue collective_epilogue(params.epilogue, shared_storage.tensors.epilogue);
    bool is_epi_load_needed = collective_epilogue.is_producer_load_needed();

    // conv: no TileScheduler pipelines (static persistent scheduler, see SharedStorage).

    // Mainloop Load pipeline
    using MainloopPipeline = typename CollectiveMainloop::MainloopPipeline;
    typename MainloopPipeline::Params mainloop_pipeline_params;
    // conv: no MainloopAux producer (the conv collective has no auxiliary load).
    if (warp_group_role == WarpGroupRole::Producer && producer_warp_role == ProducerWarpRole::Mainloop) {
      mainloop_pipeline_params.role = MainloopPipeline::ThreadCategory::Producer;
    }
    if (warp_group_role == WarpGroupRole::Consumer0 || warp_group_role == WarpGroupRole::Consumer1) {
      mainloop_pipeline_params.role = MainloopPipeline::ThreadCategory::Consumer;
    }
    mainloop_pipeline_params.is_leader = warp_group_thread_idx == 0;
    mainloop_pipeline_params.num_consumers = NumMMAThreads;
    mainloop_pipeline_params.num_producers = NumProducerThreads;
    mainloop_pipeline_params.transaction_bytes = params.mainloop.tma_transaction_bytes;
    MainloopPipeline mainloop_pipeline(shared_storage.pipelines.mainloop, mainloop_pipeline_params, ClusterShape{});

    // Epilogue Load pipeline
    using EpiLoadPipeline = typename CollectiveEpilogue::LoadPipeline;
    typename EpiLoadPipeline::Params epi_load_pipeline_params;
    if (warp_group_role == WarpGroupRole::Producer && producer_warp_role == ProducerWarpRole::Epilogue) {
      epi_load_pipeline_params.role = EpiLoadPipeline::ThreadCategory::Producer;
    }
    if (warp_group_role == WarpGroupRole::Consumer0 || warp_group_role == WarpGroupRole::Consumer1) {
      epi_load_pipeline_params.role = EpiLoadPipeline::ThreadCategory::Consumer;
    }
    epi_load_pipeline_params.dst_blockid = cute::block_rank_in_cluster();
    epi_load_pipeline_params.producer_arv_count = NumEpilogueLoadThreads;
    epi_load_pipeline_params.consumer_arv_count = NumMMAThreads;
    if constexpr (CollectiveEpilogue::RequiresTransactionBytes) {
      epi_load_pipeline_params.transaction_bytes = params.epilogue.tma_transaction_bytes;
    }
    EpiLoadPipeline epi_load_pipeline(shared_storage.pipelines.epi_load, epi_load_pipeline_params);

    // Epilogue Store pipeline
    using EpiStorePipeline = typename CollectiveEpilogue::StorePipeline;
    typename EpiStorePipeline::Params epi_store_pipeline_params;
    epi_store_pipeline_params.always_wait = true;
    EpiStorePipeline epi_store_pipeline(epi_store_pipeline_params);

    typename LoadWarpOrderBarrier::Params params_load_order_barrier;
    params_load_order_barrier.group_id = producer_warp_role == ProducerWarpRole::Mainloop ? 0 : 1;
    params_load_order_barrier.group_size = cutlass::NumThreadsPerWarp;
    LoadWarpOrderBarrier load_order_barrier(shared_storage.pipelines.load_order, params_load_order_barrier);

    // Initialize starting pipeline states for the collectives
    // Epilogue store pipe is producer-only (consumer is TMA unit, waits via scoreboarding)
    typename CollectiveMainloop::PipelineState mainloop_pipe_consumer_state;
    typename CollectiveEpilogue::LoadPipelineState epi_load_pipe_consumer_state;

    // For the DMA Load (producer) we start with an opposite phase
    // i.e., we skip all waits since we know that the buffer is indeed empty
    auto mainloop_pipe_producer_state = cutlass::make_producer_start_state<MainloopPipeline>();
    auto epi_load_pipe_producer_state = cutlass::make_producer_start_state<EpiLoadPipeline>();
    auto epi_store_pipe_producer_state = cutlass::make_producer_start_state<EpiStorePipeline>();

    auto cluster_wait_fn = []() {
      // We need this to guarantee that the Pipeline init is visible
      // To all producers and consumer thread blocks in the Cluster
      if constexpr (size(ClusterShape{}) > 1) {
        cute::cluster_arrive_relaxed();
        return []() { cute::cluster_wait(); };
      } else {
        __syncthreads();
        return []() {}; // do nothing
      }
    }();

    // conv: Params hold the linearized MNKL shape already (rank 4).
    auto problem_shape_MNKL = params.problem_shape;

    // Get the appropriate blocks for this thread block -- potential for thread block locality
    TiledMma tiled_mma;
    auto blk_shape = TileShape{}; // (BLK_M,BLK_N,BLK_K)

    TileScheduler scheduler{params.scheduler};
    // Declare work_tile_info, then define it in each of warps that use it.
    typename TileScheduler::WorkTileInfo work_tile_info;

    // In a warp specialized kernel, collectives expose data movement and compute operations separately
    CollectiveMainloop collective_mainloop;

    // Prepare and partition the input tensors. conv: the conv collective returns tensors without
    // an L mode:
    // get<0>(load_inputs) is the tma tensor A after local tiling so that it has shape (BLK_M,BLK_K,m,k)
    // get<1>(load_inputs) is the tma tensor B after local tiling so that it has shape (BLK_N,BLK_K,n,k)
    // where m, n and k may be hierarchical (e.g. k = (C/BLK_K,S,R) for fprop, n = (C/BLK_N,S,R)
    // for wgrad).
    auto load_inputs = collective_mainloop.load_init(problem_shape_MNKL, params.mainloop);
    static_assert(cute::tuple_size_v<decltype(load_inputs)> >= 2, "Output of load_init must have at least two elements (A, B)");

    // Extract out partitioned A and B.
    Tensor gA_mkl = get<0>(load_inputs);
    Tensor gB_nkl = get<1>(load_inputs);

    // conv: the block coordinate of a work tile. m and n are unflattened against the tiled tensors'
    // (possibly hierarchical) m / n modes exactly as the non-persistent conv kernel does with
    // blockIdx.x / blockIdx.y; the scheduler's tile counts (size of ceil_div of the same linearized
    // M / N by the tile) match them. The conv tensors have no L mode: l_coord = 0, as in
    // sm90_gemm_tma_warpspecialized.hpp (L is _1, or 1 for unit-stride dgrad, see can_implement).
    auto work_tile_blk_coord = [&](auto const &work_tile) {
      auto m_coord = idx2crd(work_tile.M_idx, shape<2>(gA_mkl));
      auto n_coord = idx2crd(work_tile.N_idx, shape<2>(gB_nkl));
      return make_coord(m_coord, n_coord, _, Int<0>{});
    };
    // conv: the K tiles of a work tile, (first, count), in the conv collective's K-tile space (BLK_K
    // tiles of the first K mode, then the filter / spatial modes, colexicographic like idx2crd and
    // the coordinate iterator). The static persistent scheduler gives every tile the whole space,
    // counted from the collective's own tiling as in the non-persistent conv kernel; the stream-K
    // scheduler gives a range of it, counted with cute::ceil_div over the same hierarchical K.
    auto work_k_tiles = [&](auto const &work_tile) {
      if constexpr (IsStreamK) {
        return cute::make_tuple(TileScheduler::get_work_k_tile_start(work_tile),
                                TileScheduler::get_work_k_tile_count(work_tile, problem_shape_MNKL, blk_shape));
      } else {
        return cute::make_tuple(uint32_t(0), uint32_t(size<3>(gA_mkl)));
      }
    };

    // Wait for all thread blocks in the Cluster
    cluster_wait_fn();

    if (warp_group_role == WarpGroupRole::Producer) {
      work_tile_info = scheduler.initial_work_tile_info(ClusterShape{});
      cutlass::arch::warpgroup_reg_dealloc<LoadRegisterRequirement>();

      // Mainloop Producer Warp
      if (producer_warp_role == ProducerWarpRole::Mainloop) {
        // Ensure that the prefetched kernel does not touch
        // unflushed global memory prior to this instruction
        cutlass::arch::wait_on_dependent_grids();
        bool do_load_order_arrive = true;
        while (work_tile_info.is_valid()) {
          if (!TileScheduler::valid_warpgroup_in_work_tile(work_tile_info)) {
            auto [next_work_tile_info, increment_pipe] = scheduler.fetch_next_work(work_tile_info);
            work_tile_info = next_work_tile_info;
            continue;
          }

          auto blk_coord = work_tile_blk_coord(work_tile_info);
          auto [work_k_tile_start, work_k_tile_count] = work_k_tiles(work_tile_info);
          auto k_tile_iter =
              cute::make_coord_iterator(idx2crd(work_k_tile_start, shape<3>(gA_mkl)), shape<3>(gA_mkl));

          collective_mainloop.load(
            params.mainloop,
            mainloop_pipeline,
            mainloop_pipe_producer_state,
            load_inputs,
            blk_coord,
            k_tile_iter, work_k_tile_count,
            lane_idx,
            block_rank_in_cluster,
            shared_storage.tensors.mainloop
          );
          // Update starting pipeline state for the next tile
          mainloop_pipe_producer_state.advance(work_k_tile_count);

          // Signal for the epilogue load warp to begin
          if (do_load_order_arrive) {
            load_order_barrier.arrive();
            do_load_order_arrive = false;
          }

          // Get next work tile
          auto [next_work_tile_info, increment_pipe] = scheduler.fetch_next_work(work_tile_info);
          work_tile_info = next_work_tile_info;
        } // Scheduler work fetch loop

        // Make sure all Consumer Warp Groups have been waited upon
        collective_mainloop.load_tail(mainloop_pipeline, mainloop_pipe_producer_state);
      } // Mainloop Producer Warp End

      // Epilogue Producer Warp
      else if (producer_warp_role == ProducerWarpRole::Epilogue && is_epi_load_needed) {
        // Ensure that the prefetched kernel does not touch
        // unflushed global memory prior to this instruction
        cutlass::arch::wait_on_dependent_grids();

        if (!TileScheduler::requires_separate_reduction(params.scheduler) && work_tile_info.is_valid()) {
          load_order_barrier.wait();
        }

        while (work_tile_info.is_valid()) {
          if (TileScheduler::compute_epilogue(work_tile_info, params.scheduler)) {
            auto blk_coord = work_tile_blk_coord(work_tile_info);

            epi_load_pipe_producer_state =
            collective_epilogue.load(
              epi_load_pipeline,
              epi_load_pipe_producer_state,
              problem_shape_MNKL,
              blk_shape,
              blk_coord,
              tiled_mma,
              lane_idx,
              shared_storage.tensors.epilogue,
              work_tile_info.reduction_subtile_idx()
            );
          }

          // Get next work tile
          auto [next_work_tile_info, increment_pipe] = scheduler.fetch_next_work(work_tile_info);
          work_tile_info = next_work_tile_info;
        } // Scheduler work fetch loop

        // Make sure all Consumer Warp Groups have been waited upon
        collective_epilogue.load_tail(epi_load_pipeline, epi_load_pipe_producer_state);
      } // Epilogue Producer Warp End
    } // Producer Warp Group End

    else if (warp_group_role == WarpGroupRole::Consumer0 || warp_group_role == WarpGroupRole::Consumer1) {
      work_tile_info = scheduler.initial_work_tile_info(ClusterShape{});
      cutlass::arch::warpgroup_reg_alloc<MmaRegisterRequirement>();

      // Do we potentially issue tail arrives for TMA stores, if epilogue load is waiting for it
      bool do_store_tail = false;
      while (work_tile_info.is_valid()) {
        auto blk_coord = work_tile_blk_coord(work_tile_info);
        auto work_k_tile_count = cute::get<1>(work_k_tiles(work_tile_info));
        // Allocate the accumulators for the (M,N) blk_shape
        //
        // MSVC CTAD breaks if we say "Tensor" here, so we use "auto" instead.
        auto accumulators = partition_fragment_C(tiled_mma, take<0,2>(blk_shape));             // (MMA,MMA_M,MMA_N)
        if (TileScheduler::valid_warpgroup_in_work_tile(work_tile_info)) {
          collective_mainloop.mma(
            mainloop_pipeline,
            mainloop_pipe_consumer_state,
            accumulators,
            work_k_tile_count,
            mma_thread_idx,
            shared_storage.tensors.mainloop,
            params.mainloop
          );

          // Make sure the math instructions are done and free buffers before entering the epilogue
          collective_mainloop.mma_tail(
            mainloop_pipeline,
            mainloop_pipe_consumer_state,
            work_k_tile_count
          );

          // Update starting mainloop pipeline state for the next tile
          mainloop_pipe_consumer_state.advance(work_k_tile_count);
        }
        #ifdef CUTLASS_ENABLE_GDC_FOR_SM90
        if (scheduler.is_last_tile(work_tile_info)) {
          // Hint on an early release of global memory resources.
          // The timing of calling this function only influences performance,
          // not functional correctness.
          cutlass::arch::launch_dependent_grids();
        }
        #endif

        // Index of warp group within consumer warp groups
        int consumer_warp_group_idx = cutlass::canonical_warp_group_idx() - NumLoadWarpGroups;

        // Perform reduction across splits, if needed
        TileScheduler::fixup(
          params.scheduler, work_tile_info, accumulators, NumMmaWarpGroups, consumer_warp_group_idx);

        if (TileScheduler::compute_epilogue(work_tile_info, params.scheduler)) {
          // Epilogue and write to gD
          auto [epi_load_pipe_consumer_state_next, epi_store_pipe_producer_state_next] =
          collective_epilogue.store(
            epi_load_pipeline,
            epi_load_pipe_consumer_state,
            epi_store_pipeline,
            epi_store_pipe_producer_state,
            problem_shape_MNKL,
            blk_shape,
            blk_coord,
            accumulators,
            tiled_mma,
            mma_thread_idx,
            shared_storage.tensors.epilogue,
            work_tile_info.reduction_subtile_idx()
          );
          epi_load_pipe_consumer_state = epi_load_pipe_consumer_state_next;
          epi_store_pipe_producer_state = epi_store_pipe_producer_state_next;
          do_store_tail = true;
        }

        // Get next work tile
        auto [next_work_tile_info, increment_pipe] = scheduler.fetch_next_work(work_tile_info);
        work_tile_info = next_work_tile_info;
      } // Scheduler work fetch loop

      if (do_store_tail) {
        collective_epilogue.store_tail(
          epi_load_pipeline,
          epi_load_pipe_consumer_state,
          epi_store_pipeline,
          epi_store_pipe_producer_state
        );
      }
    } // Consumer Warp Groups End
#endif
  }
};

} // namespace cutlass_aot::conv_3x
