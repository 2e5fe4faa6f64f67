/*
 * A first-layer conv2d fprop (ours; `iterator_algorithm: first_layer`): few input channels (the
 * RGB stem padded to 4), any filter size, stride, padding and dilation, f16 or bf16 with f32
 * accumulation on sm_80 tensor cores (mma.sync m16n8k16), any CUTLASS 2.x thread epilogue.
 *
 * Why not CUTLASS's implicit GEMM: with C = 4 every GEMM K element of a 7×7 filter is a separate
 * 8-byte gather, and CUTLASS's fixed_channels iterator fetches each output pixel's 196-element row
 * of A from global memory (L2) once per output tile: the stem runs at a third of cuDNN's speed.
 * Here a CTA stages the whole input patch of its output tile in shared memory once and every
 * filter tap reads it there, and keeps its slice of the filter resident while it walks tiles.
 *
 * Tiling: a CTA tile is kTileP output rows × 16 output columns (one MMA M of 16 pixels per row)
 * × kTileN output channels. The GEMM K runs over (r, s, c) with c fastest, the filter's S padded
 * to whole MMA K steps of 16 / C taps (padded taps have zero weights). An A fragment register
 * holds two channels of one input pixel, read straight from the staged patch.
 *
 * Schedule: persistent CTAs (a few per SM) take output tiles from a counter in the workspace, so
 * a grid larger than what fits at once costs nothing but idle CTAs; the input patches of the next
 * kStages - 1 tiles are in flight (cp.async) while a tile computes. The epilogue stages the
 * accumulators in shared memory and stores whole vectors of kVec output channels per thread.
 */
#pragma once

#include <algorithm>

#include <cutlass/arch/memory_sm75.h>
#include <cutlass/arch/memory_sm80.h>
#include <cutlass/arch/mma_sm80.h>
#include <cutlass/array.h>

#include "cutlass_aot/conv_2x.cuh"

namespace cutlass_aot {

template <class Element_, int Channels, int TileP, int TileN, int WarpsM, int WarpsN, int Stages,
          class OutputOp_>
struct ConvFirstLayer {
  using Element = Element_;
  using OutputOp = OutputOp_;
  static constexpr int kChannels = Channels; // C of the activation and filter, exactly
  static constexpr int kTileP = TileP;       // output rows per CTA tile
  static constexpr int kTileQ = 16;          // output columns per CTA tile: the MMA's M
  static constexpr int kTileN = TileN;       // output channels per CTA
  static constexpr int kWarpsM = WarpsM;
  static constexpr int kWarpsN = WarpsN;
  static constexpr int kThreads = 32 * WarpsM * WarpsN;
  static constexpr int kStages = Stages;     // input patches in shared memory
  static constexpr int kRowsPerWarp = TileP / WarpsM;
  static constexpr int kNTilesPerWarp = TileN / WarpsN / 8;
  static constexpr int kTapsPerStep = 16 / Channels; // filter taps in one MMA K of 16
  static constexpr int kPixelWords = Channels / 2;    // 32-bit words per staged pixel
  static constexpr int kVec = OutputOp::kCount;       // output channels per epilogue access
  // Staged accumulators: per pixel, the epilogue's vectors of 8 channels as two float4 slots, all
  // first halves then (one slot later) all second halves, so that 8 threads reading 8 vectors' same
  // half hit 8 distinct bank groups; the row stride keeps the MMA layout's float2 writes of a half
  // warp (4 pixels) in distinct banks too.
  static constexpr int kVectorsPerPixel = TileN / 8;
  static constexpr int kStageStride = (2 * (kVectorsPerPixel + 1) * 4 + 7) / 8 * 8;
  static constexpr int kTilePixels = TileP * kTileQ;

  static_assert(Channels == 2 || Channels == 4 || Channels == 8, "C must be 2, 4 or 8");
  static_assert(TileP % WarpsM == 0, "tile rows must split evenly over the warps");
  static_assert(TileN % (8 * WarpsN) == 0, "each warp takes whole MMA N tiles of 8");
  static_assert(kVec == 8, "the epilogue stores vectors of 8 channels (16 bytes)");
  static_assert(Stages >= 2 && Stages <= 15, "at least one patch in flight; kStages + 1 tile ids fit in 16");
  static_assert(sizeof(Element) == 2, "f16 or bf16");

  using Mma = cutlass::arch::Mma<cutlass::gemm::GemmShape<16, 8, 16>, 32, Element,
                                 cutlass::layout::RowMajor, Element, cutlass::layout::ColumnMajor,
                                 float, cutlass::layout::RowMajor, cutlass::arch::OpMultiplyAdd>;

  struct Params {
    const Element *x; // activation NHWC
    const Element *w; // filter KRSC
    const Element *c; // source NPQK (D itself when beta is 0)
    Element *d;       // output NPQK
    int *tile_counter; // in the workspace, zero at launch
    int n, h, w_, k, r, s, p, q;
    int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
    int flip;         // convolution mode: the filter is read flipped
    int s_padded;     // S rounded up to whole MMA K steps
    int patch_rows;   // rows and columns of one staged input patch
    int patch_cols;
    int filter_words; // 32-bit words per output channel of the staged filter (padded)
    int tiles_p, tiles_q, tiles;
    int filter_bytes; // shared memory: filter, then kStages patches, then the accumulators
    int patch_bytes;
    typename OutputOp::Params epilogue;
  };

  static int patch_bytes_for(int patch_rows, int patch_cols) {
    return (patch_rows * patch_cols * Channels * 2 + 15) / 16 * 16;
  }
  static int shared_bytes(const Params &p) {
    return p.filter_bytes + kStages * p.patch_bytes + kTilePixels * kStageStride * 4 + 16 * 4;
  }

#if defined(__CUDA_ARCH__)
  /// A tile's image and first output row and column (tiles run along Q, then P, then N).
  struct TileOrigin {
    int image, p0, q0;
  };
  static __device__ TileOrigin tile_origin(const Params &p, int tile) {
    int rest = tile / p.tiles_q;
    return {rest / p.tiles_p, (rest % p.tiles_p) * kTileP, (tile % p.tiles_q) * kTileQ};
  }

  /// Stages `tile`'s input patch (zeros where it falls outside the image) into `patch`.
  static __device__ void load_patch(const Params &p, int tile, Element *patch) {
    const TileOrigin origin = tile_origin(p, tile);
    const int image = origin.image;
    int h0 = origin.p0 * p.stride_h - p.pad_h;
    int w0 = origin.q0 * p.stride_w - p.pad_w;
    int count = p.patch_rows * p.patch_cols;
    for (int i = threadIdx.x; i < count; i += kThreads) {
      int row = i / p.patch_cols;
      int col = i - row * p.patch_cols;
      int h = h0 + row;
      int w = w0 + col;
      bool inside = h >= 0 && h < p.h && w >= 0 && w < p.w_;
      const Element *src =
          inside ? p.x + ((int64_t(image) * p.h + h) * p.w_ + w) * Channels : p.x;
      cutlass::arch::cp_async_zfill<Channels * 2, cutlass::arch::CacheOperation::Always>(
          patch + i * Channels, src, inside);
    }
  }

  /// Stages the CTA's kTileN output channels of the filter, taps padded to s_padded with zeros.
  static __device__ void load_filter(const Params &p, int n_base, uint32_t *filter) {
    int per_channel = p.r * p.s_padded;
    int count = kTileN * per_channel;
    for (int i = threadIdx.x; i < count; i += kThreads) {
      int n = i / per_channel;
      int tap = i - n * per_channel;
      int r = tap / p.s_padded;
      int s = tap - r * p.s_padded;
      bool inside = n_base + n < p.k && s < p.s;
      int rr = p.flip ? p.r - 1 - r : r;
      int ss = p.flip ? p.s - 1 - s : s;
      const Element *src =
          inside ? p.w + ((int64_t(n_base + n) * p.r + rr) * p.s + ss) * Channels : p.w;
      cutlass::arch::cp_async_zfill<Channels * 2, cutlass::arch::CacheOperation::Always>(
          filter + n * p.filter_words + tap * kPixelWords, src, inside);
    }
  }

  /// Word offset of channel `channel`'s accumulator in a staged pixel row (see kStageStride).
  static __device__ int staged_word(int channel) {
    int vector = channel / 8, half = (channel % 8) / 4;
    return (half * (kVectorsPerPixel + 1) + vector) * 4 + channel % 4;
  }

  __device__ void operator()(const Params &p, char *smem) const {
    uint32_t *filter = reinterpret_cast<uint32_t *>(smem);
    char *patches = smem + p.filter_bytes;
    float *staged = reinterpret_cast<float *>(patches + kStages * p.patch_bytes);
    // Tile ids of the kStages tiles staged or in flight, and of the next one.
    int *tile_ids = reinterpret_cast<int *>(staged + kTilePixels * kStageStride);
    auto patch_of = [&](int stage) {
      return reinterpret_cast<Element *>(patches + stage * p.patch_bytes);
    };
    constexpr int kIds = kStages + 1;

    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int warp_m = warp % kWarpsM;
    const int warp_n = warp / kWarpsM;
    const int g = lane / 4; // MMA row group: output column g and g + 8 of a row
    const int t = lane % 4;
    const int n_base = blockIdx.y * kTileN;
    int *counter = p.tile_counter + blockIdx.y;

    // Word offsets of this thread's A fragment registers within a patch: K index 2t (and 2t + 8)
    // of an MMA step is tap (2t)/C, channels (2t)%C of the pixel under output column g.
    const int tap_lo = (2 * t) / Channels, ch_lo = (2 * t) % Channels;
    const int tap_hi = (2 * t + 8) / Channels, ch_hi = (2 * t + 8) % Channels;
    const int a_lo = (g * p.stride_w + tap_lo * p.dilation_w) * kPixelWords + ch_lo / 2;
    const int a_hi = (g * p.stride_w + tap_hi * p.dilation_w) * kPixelWords + ch_hi / 2;
    const int a_plus8 = 8 * p.stride_w * kPixelWords; // output column g + 8
    const int patch_row_words = p.patch_cols * kPixelWords;
    const int steps = p.s_padded / kTapsPerStep;

    load_filter(p, n_base, filter);
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        tile_ids[s] = atomicAdd(counter, 1);
      }
    }
    __syncthreads();
    for (int s = 0; s < kStages - 1; ++s) {
      if (tile_ids[s] < p.tiles) {
        load_patch(p, tile_ids[s], patch_of(s));
      }
      cutlass::arch::cp_async_fence(); // one group per stage, empty or not (the filter: first)
    }

    OutputOp output_op(p.epilogue);
    // Barriers per tile: (B) its patch has landed; (C) its accumulators are staged. (C) also
    // publishes the id fetched during the tile, and (B) of the next tile frees `staged`.
    for (int i = 0;; ++i) {
      const int tile = tile_ids[i % kIds];
      if (tile >= p.tiles) {
        break; // the counter only grows: every later tile is past the end too
      }
      const int ahead = tile_ids[(i + kStages - 1) % kIds];
      if (ahead < p.tiles) {
        load_patch(p, ahead, patch_of((i + kStages - 1) % kStages));
      }
      cutlass::arch::cp_async_fence();
      cutlass::arch::cp_async_wait<kStages - 1>();
      __syncthreads(); // (B)
      int next = 0;
      if (threadIdx.x == 0) {
        next = atomicAdd(counter, 1); // its latency hides behind the mainloop
      }

      // Mainloop: every (r, step) of the filter against the staged patch.
      cutlass::Array<float, 4> acc[kRowsPerWarp][kNTilesPerWarp];
#pragma unroll
      for (int mi = 0; mi < kRowsPerWarp; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kNTilesPerWarp; ++ni) {
          acc[mi][ni].clear();
        }
      }
      const uint32_t *patch = reinterpret_cast<const uint32_t *>(patch_of(i % kStages));
      // B fragments by ldmatrix: matrix m of a load is n-tile m / 2 of the pair, K half m % 2;
      // lane l addresses row l % 8 of matrix l / 8 (16-byte aligned: the filter's row stride is
      // an odd number of 16-byte units, which also keeps the 8 rows in distinct banks).
      const uint32_t *filter_lane =
          filter + (warp_n * kNTilesPerWarp * 8 + (lane / 16) * 8 + lane % 8) * p.filter_words +
          ((lane / 8) % 2) * 4;
      Mma mma;
      for (int r = 0; r < p.r; ++r) {
        for (int step = 0; step < steps; ++step) {
          const int tap = step * kTapsPerStep;
          const int k_words = (r * p.s_padded + tap) * kPixelWords;
          cutlass::Array<uint32_t, 2> b[kNTilesPerWarp];
#pragma unroll
          for (int pair = 0; pair < kNTilesPerWarp / 2; ++pair) {
            cutlass::Array<unsigned, 4> loaded;
            cutlass::arch::ldsm<cutlass::layout::RowMajor, 4>(
                loaded, filter_lane + pair * 16 * p.filter_words + k_words);
            b[2 * pair][0] = loaded[0];
            b[2 * pair][1] = loaded[1];
            b[2 * pair + 1][0] = loaded[2];
            b[2 * pair + 1][1] = loaded[3];
          }
          if constexpr (kNTilesPerWarp % 2 == 1) {
            // The odd last n-tile: lanes 0-15 address its two K halves.
            cutlass::Array<unsigned, 2> loaded;
            cutlass::arch::ldsm<cutlass::layout::RowMajor, 2>(
                loaded, filter_lane + ((kNTilesPerWarp - 1) * 8 - (lane / 16) * 8) * p.filter_words +
                            k_words);
            b[kNTilesPerWarp - 1][0] = loaded[0];
            b[kNTilesPerWarp - 1][1] = loaded[1];
          }
          const int col_words = tap * p.dilation_w * kPixelWords;
#pragma unroll
          for (int mi = 0; mi < kRowsPerWarp; ++mi) {
            const int row = (warp_m * kRowsPerWarp + mi) * p.stride_h + r * p.dilation_h;
            const uint32_t *base = patch + row * patch_row_words + col_words;
            cutlass::Array<uint32_t, 4> a;
            a[0] = base[a_lo];
            a[1] = base[a_lo + a_plus8];
            a[2] = base[a_hi];
            a[3] = base[a_hi + a_plus8];
#pragma unroll
            for (int ni = 0; ni < kNTilesPerWarp; ++ni) {
              mma(acc[mi][ni], reinterpret_cast<typename Mma::FragmentA const &>(a),
                  reinterpret_cast<typename Mma::FragmentB const &>(b[ni]), acc[mi][ni]);
            }
          }
        }
      }

      // Epilogue: accumulators to shared memory, then whole vectors through the thread epilogue.
      if (threadIdx.x == 0) {
        tile_ids[(i + kStages) % kIds] = next;
      }
#pragma unroll
      for (int mi = 0; mi < kRowsPerWarp; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kNTilesPerWarp; ++ni) {
          int pixel = (warp_m * kRowsPerWarp + mi) * kTileQ + g;
          int word = staged_word((warp_n * kNTilesPerWarp + ni) * 8 + 2 * t);
          float *at = staged + pixel * kStageStride + word;
          *reinterpret_cast<float2 *>(at) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
          *reinterpret_cast<float2 *>(at + 8 * kStageStride) =
              make_float2(acc[mi][ni][2], acc[mi][ni][3]);
        }
      }
      __syncthreads(); // (C)
      const auto [image, p0, q0] = tile_origin(p, tile);
      using Vector = cutlass::AlignedArray<Element, 8>;
      for (int v = threadIdx.x; v < kTilePixels * kVectorsPerPixel; v += kThreads) {
        int pixel = v / kVectorsPerPixel;
        int vector = v % kVectorsPerPixel;
        int out_p = p0 + pixel / kTileQ;
        int out_q = q0 + pixel % kTileQ;
        int out_k = n_base + vector * 8;
        if (out_p >= p.p || out_q >= p.q || out_k >= p.k) {
          continue;
        }
        const float *row = staged + pixel * kStageStride;
        float4 lo = *reinterpret_cast<const float4 *>(row + vector * 4);
        float4 hi = *reinterpret_cast<const float4 *>(row + (kVectorsPerPixel + 1 + vector) * 4);
        typename OutputOp::FragmentAccumulator accum;
        accum[0] = lo.x, accum[1] = lo.y, accum[2] = lo.z, accum[3] = lo.w;
        accum[4] = hi.x, accum[5] = hi.y, accum[6] = hi.z, accum[7] = hi.w;
        int64_t offset = ((int64_t(image) * p.p + out_p) * p.q + out_q) * p.k + out_k;
        typename OutputOp::FragmentOutput out;
        if (output_op.is_source_needed()) {
          Vector source = *reinterpret_cast<const Vector *>(p.c + offset);
          out = output_op(accum, reinterpret_cast<const typename OutputOp::FragmentSource &>(source));
        } else {
          out = output_op(accum);
        }
        *reinterpret_cast<Vector *>(p.d + offset) = reinterpret_cast<const Vector &>(out);
      }
    }
    cutlass::arch::cp_async_wait<0>();
  }
#endif
};

/// The Params, grid and shared memory of a first-layer kernel for `args`: NOT_SUPPORTED where its
/// shape rules (C equal to the kernel's channels, K a multiple of its vector, no split-K, packed
/// tensors) are not met; the runtime explains each before it gets here.
template <class Kernel>
int32_t conv_first_layer_prepare(const cutlass_aot_conv2d_args *in, void *params_out,
                                 size_t params_capacity, cutlass_aot_launch *launch) {
  using Params = typename Kernel::Params;
  static_assert(std::is_trivially_copyable<Params>::value, "Params must be copyable as bytes");
  std::memset(launch, 0, sizeof(*launch));
  if (sizeof(Params) > params_capacity) {
    return CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE;
  }
  if (!conv2d_packed_symmetric(in)) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  if (!conv2d_problem_valid(in)) {
    return CUTLASS_AOT_ERROR_INVALID_PROBLEM;
  }
  if (in->c != Kernel::kChannels || in->k % Kernel::kVec != 0 || in->split_k_slices != 1) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  auto misaligned = [](const void *ptr, size_t bytes) {
    return reinterpret_cast<uintptr_t>(ptr) % bytes != 0;
  };
  size_t out_bytes = Kernel::kVec * sizeof(typename Kernel::Element);
  if (misaligned(in->ptr_a, Kernel::kChannels * 2) || misaligned(in->ptr_b, Kernel::kChannels * 2) ||
      misaligned(in->ptr_c, out_bytes) || misaligned(in->ptr_d, out_bytes)) {
    return CUTLASS_AOT_ERROR_MISALIGNED_OPERAND;
  }
  Params p{};
  p.x = static_cast<const typename Kernel::Element *>(in->ptr_a);
  p.w = static_cast<const typename Kernel::Element *>(in->ptr_b);
  p.c = static_cast<const typename Kernel::Element *>(in->ptr_c);
  p.d = static_cast<typename Kernel::Element *>(in->ptr_d);
  p.tile_counter = static_cast<int *>(in->workspace);
  p.n = in->n, p.h = in->h, p.w_ = in->w, p.k = in->k, p.r = in->r, p.s = in->s, p.p = in->p,
  p.q = in->q;
  p.pad_h = in->pad_h, p.pad_w = in->pad_w, p.stride_h = in->stride_h, p.stride_w = in->stride_w;
  p.dilation_h = in->dilation_h, p.dilation_w = in->dilation_w;
  p.flip = in->mode == CUTLASS_AOT_CONV_CONVOLUTION;
  const int taps = Kernel::kTapsPerStep;
  p.s_padded = (in->s + taps - 1) / taps * taps;
  // The patch covers every tap of every output pixel of the tile, padded taps included.
  int64_t patch_rows = int64_t(Kernel::kTileP - 1) * in->stride_h + int64_t(in->r - 1) * in->dilation_h + 1;
  int64_t patch_cols =
      int64_t(Kernel::kTileQ - 1) * in->stride_w + int64_t(p.s_padded - 1) * in->dilation_w + 1;
  // Filter words per output channel: R·S_padded·C/2, plus 4 so that the 8 channels an MMA reads
  // at once land in distinct banks (the stride ≡ 4 mod 8 words).
  int64_t filter_words = int64_t(in->r) * p.s_padded * Kernel::kPixelWords + 4;
  int64_t filter_bytes = filter_words * 4 * Kernel::kTileN;
  int64_t patch_bytes = (patch_rows * patch_cols * Kernel::kChannels * 2 + 15) / 16 * 16;
  // 227 KiB: the most any GPU gives one block (sm_90); smaller devices are refused at launch by
  // the runtime, which knows the device.
  constexpr int64_t kMaxShared = 227 * 1024;
  int64_t shared = filter_bytes + Kernel::kStages * patch_bytes +
                   int64_t(Kernel::kTilePixels) * Kernel::kStageStride * 4 + 16 * 4;
  if (shared > kMaxShared) {
    return CUTLASS_AOT_ERROR_NOT_SUPPORTED;
  }
  p.patch_rows = int(patch_rows), p.patch_cols = int(patch_cols);
  p.filter_words = int(filter_words);
  p.filter_bytes = int(filter_bytes);
  p.patch_bytes = int(patch_bytes);
  p.tiles_p = (in->p + Kernel::kTileP - 1) / Kernel::kTileP;
  p.tiles_q = (in->q + Kernel::kTileQ - 1) / Kernel::kTileQ;
  int64_t tiles = int64_t(in->n) * p.tiles_p * p.tiles_q;
  if (tiles >= (int64_t(1) << 30)) {
    return CUTLASS_AOT_ERROR_GRID_TOO_LARGE; // the tile counter must not overflow
  }
  p.tiles = int(tiles);
  p.epilogue = conv_epilogue_params<typename Kernel::OutputOp>(in->alpha, in->beta,
                                                               in->activation_arg);
  uint32_t n_tiles = uint32_t((in->k + Kernel::kTileN - 1) / Kernel::kTileN);
  // One tile counter per CTA column (output channel tile), zeroed before every launch.
  uint64_t workspace_bytes = uint64_t(n_tiles) * sizeof(int);
  launch->workspace_bytes = workspace_bytes;
  if (in->workspace == nullptr || workspace_bytes > in->workspace_capacity) {
    return CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL;
  }
  launch->fill_count = 1;
  launch->fills[0] = cutlass_aot_fill{0, n_tiles, 4, 0};
  // Persistent CTAs: as many as fit beside each other on every SM (by shared memory and threads;
  // a guess past what fits only leaves CTAs that find no tile left).
  int64_t per_sm = std::min<int64_t>(228 * 1024 / (shared + 1024), 2048 / Kernel::kThreads);
  per_sm = std::max<int64_t>(1, std::min<int64_t>(per_sm, 4));
  int64_t sms = in->device_sms > 0 ? in->device_sms : 1;
  uint32_t ctas = uint32_t(std::min<int64_t>(tiles, sms * per_sm));
  int32_t status = set_launch_shape(launch, dim3(ctas, n_tiles), dim3(Kernel::kThreads),
                                    dim3(1, 1, 1), size_t(shared), sizeof(Params));
  if (status == CUTLASS_AOT_OK) {
    std::memcpy(params_out, &p, sizeof(Params));
  }
  return status;
}

} // namespace cutlass_aot

#if defined(CUTLASS_AOT_DEVICE_PASS)
#define CUTLASS_AOT_CONV_FIRST_LAYER(NAME, KERNEL)                                                 \
  extern "C" __global__ void __launch_bounds__(KERNEL::kThreads)                                   \
      NAME(typename KERNEL::Params params) {                                                       \
    extern __shared__ __align__(16) char cutlass_aot_smem_bytes[];                                 \
    KERNEL op;                                                                                     \
    op(params, cutlass_aot_smem_bytes);                                                            \
  }
#elif defined(CUTLASS_AOT_HOST_PASS)
#define CUTLASS_AOT_CONV_FIRST_LAYER(NAME, KERNEL)                                                 \
  extern "C" int32_t NAME##_prepare(const cutlass_aot_conv2d_args *args, void *params,             \
                                    size_t params_capacity, cutlass_aot_launch *launch) {          \
    return cutlass_aot::conv_first_layer_prepare<KERNEL>(args, params, params_capacity, launch);   \
  }
#else
#error "compile with -DCUTLASS_AOT_DEVICE_PASS or -DCUTLASS_AOT_HOST_PASS"
#endif
