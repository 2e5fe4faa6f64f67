// Skinny GEMMs (no CUTLASS): out (rows x cols) = alpha * X (rows x depth) * Y (depth x cols)
// + beta * C for few columns, any strides, alignment or layout (and tiny products of any shape,
// at the end of the file): a block computes up to 16 columns, wider products run in groups of 16,
// each reading X again. Such a product moves X (once per group)
// and does a few multiply-adds per element of X: it runs at memory speed on CUDA cores, where a
// tiled tensor-core kernel computes a mostly empty tile, splits K to find parallelism and, on a
// misaligned X, reads it two bytes at a time.
//
// Two forms, by X's contiguous dimension:
//   dot:  X's rows contiguous along depth. A warp owns 4 rows (2 of f64); its lanes stride along
//         depth and sum their partial dot products with shuffles once, at the end. Where X's rows
//         and Y's columns are contiguous along depth and 16-byte aligned, `dotv` reads both in
//         16-byte vectors instead (the LLM decode step W·x).
//   axpy: X's columns contiguous along rows. A thread owns rows (coalesced along them) and walks
//         depth; Y's entries are the same for the whole warp (shared-memory broadcasts). With
//         fewer rows than a block holds, threads owning the same rows split the depth.
// Both stage a chunk of Y (accumulator type, zero past cols) in shared memory per step. With
// `slices` > 1 each slice of depth writes its partial sums to `partials` and a reduce kernel adds
// them (in the same order at every launch: deterministic) and applies alpha and beta.
#pragma once

#include "support.cuh"

#ifdef CUTLASS_AOT_DEVICE_PASS

struct cutlass_aot_skinny_args {
  cutlass_aot_view x;  // (batch, row, k)
  cutlass_aot_view y;  // (batch, k, col)
  cutlass_aot_view c;  // (batch, row, col); read only when beta != 0
  cutlass_aot_view d;  // (batch, row, col)
  int64_t rows;
  int64_t cols;
  int64_t depth;
  int64_t batch;
  // Depth per slice (every slice but the last), and where slices write their partial sums:
  // [slice][batch][row][col] of the accumulator type.
  int64_t slice_depth;
  uint64_t partials;
  double alpha;
  double beta;
  int32_t slices;
  int32_t reserved;
};

namespace cutlass_aot_skinny {

template <typename T> __device__ __forceinline__ float to_f32(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename Acc, typename T> __device__ __forceinline__ Acc to_acc(T v) {
  return static_cast<Acc>(to_f32(v));
}
template <> __device__ __forceinline__ double to_acc<double, double>(double v) { return v; }

template <typename T> __device__ __forceinline__ T from_acc(float v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <typename T> __device__ __forceinline__ T from_acc(double v) { return static_cast<T>(v); }

template <typename T>
__device__ __forceinline__ const T* at(const cutlass_aot_view& v, int64_t b, int64_t r, int64_t c) {
  return reinterpret_cast<const T*>(v.base) + b * v.batch_stride + r * v.row_stride + c * v.col_stride;
}

// Shared-memory chunk of Y: kDepth depth steps of NS columns, about 32 KiB.
template <typename Acc, int NS> struct Chunk {
  static constexpr int kBytes = 32768;
  static constexpr int kDepth = (kBytes / (NS * (int)sizeof(Acc))) < 1024 ? (kBytes / (NS * (int)sizeof(Acc))) : 1024;
};

// The block's chunk of Y: one array for both instantiations (with and without parts) of an axpy kernel.
template <typename Acc, int kEntries> __device__ __forceinline__ Acc* chunk_buffer() {
  __shared__ __align__(16) Acc ys[kEntries];
  return ys;
}

// Stages Y[k0 .. k0 + len) x [col0, col0 + NS) into `ys` (zeros past cols). `k_major` lays it out as
// ys[k * NS + j] (for broadcasts), else as ys[j * (kDepth + 1) + k] (for lanes along depth; the
// odd pitch keeps the stores of one k to all j off a single bank). The walk follows Y's
// contiguous dimension where the layout lets the stores stay conflict-free.
template <typename T, typename Acc, int NS, int kThreads, bool k_major>
__device__ __forceinline__ void stage_y(const cutlass_aot_skinny_args& a, int64_t b, int64_t k0, int len,
                                        int64_t col0, Acc* ys) {
  constexpr int kPitch = Chunk<Acc, NS>::kDepth + 1;
  const bool cols_inner = k_major || a.y.col_stride == 1;
  const int total = NS * len;
  // Eight independent loads in flight per thread (Y is L2-resident; one at a time, the chunk's
  // staging would cost eight round trips per thread for each one of these).
  constexpr int kBatch = 8;
  for (int e0 = threadIdx.x; e0 < total; e0 += kThreads * kBatch) {
    Acc v[kBatch];
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      const int e = e0 + q * kThreads;
      const int j = cols_inner ? e % NS : e / len;
      const int k = cols_inner ? e / NS : e % len;
      v[q] = Acc(0);
      if (e < total && col0 + j < a.cols) v[q] = to_acc<Acc>(__ldg(at<T>(a.y, b, k0 + k, col0 + j)));
    }
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      const int e = e0 + q * kThreads;
      const int j = cols_inner ? e % NS : e / len;
      const int k = cols_inner ? e / NS : e % len;
      if (e < total) ys[k_major ? k * NS + j : j * kPitch + k] = v[q];
    }
  }
}

// Writes one output element: D = alpha * acc + beta * C, or the partial sum of this slice.
template <typename TC, typename Acc>
__device__ __forceinline__ void store(const cutlass_aot_skinny_args& a, int64_t b, int64_t slice, int64_t row, int64_t col, Acc acc) {
  if (a.slices > 1) {
    Acc* p = reinterpret_cast<Acc*>(a.partials);
    p[((slice * a.batch + b) * a.rows + row) * a.cols + col] = acc;
    return;
  }
  Acc v = Acc(a.alpha) * acc;
  if (a.beta != 0.0) v += Acc(a.beta) * to_acc<Acc>(*at<TC>(a.c, b, row, col));
  TC* d = const_cast<TC*>(at<TC>(a.d, b, row, col));
  *d = from_acc<TC>(v);
}

// Sums v[i] over the warp's lanes so that each lane ends with different sums: at each shuffle
// distance S, a lane keeps one half of its C values and adds its partner's copy of that half,
// sending the other. Afterwards lane l holds the sums of indices l * (C / 32) + i (i < C / 32), or
// for C < 32 the sum of index l / (32 / C) in v[0]. C - 1 shuffles instead of 5 C.
template <int S, int C, typename Acc, int N>
__device__ __forceinline__ void scatter_sum(Acc (&v)[N], int lane) {
  if constexpr (S > 0) {
    if constexpr (C > 1) {
      const bool upper = (lane & S) != 0;
#pragma unroll
      for (int i = 0; i < C / 2; ++i) {
        const Acc send = upper ? v[i] : v[i + C / 2];
        const Acc keep = upper ? v[i + C / 2] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, S);
      }
      scatter_sum<S / 2, C / 2>(v, lane);
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], S);
      scatter_sum<S / 2, 1>(v, lane);
    }
  }
}

// Row groups a block of kUnits threads forms for `rows` rows, `per_unit` a thread: all kUnits
// where the rows fill the block, else the fewest power of two that covers them, the other threads
// adding parts of the depth to the same rows.
template <int kUnits>
__host__ __device__ __forceinline__ int row_groups(int64_t rows, int per_unit) {
  int groups = 1;
  while (groups < kUnits && (int64_t)groups * per_unit < rows) groups *= 2;
  return groups;
}

// Sums a warp's per-lane dot products and stores them: each lane ends with distinct sums (see
// scatter_sum), so the warp's stores run in parallel.
template <typename TC, typename Acc, int kDotRows, int NS>
__device__ __forceinline__ void dot_store(const cutlass_aot_skinny_args& a, int64_t b, int64_t slice, int64_t row0,
                                          int64_t col0, const Acc (&acc)[kDotRows][NS], int lane) {
  constexpr int kValues = kDotRows * NS;
  Acc v[kValues];
#pragma unroll
  for (int r = 0; r < kDotRows; ++r)
#pragma unroll
    for (int j = 0; j < NS; ++j) v[r * NS + j] = acc[r][j];
  scatter_sum<16, kValues>(v, lane);
  constexpr int kHeld = kValues >= 32 ? kValues / 32 : 1;
  constexpr int kShare = kValues >= 32 ? 1 : 32 / kValues;  // lanes holding the same sum
  if (lane % kShare == 0) {
#pragma unroll
    for (int i = 0; i < kHeld; ++i) {
      const int index = (lane / kShare) * kHeld + i;
      const int r = index / NS, j = index % NS;
      if (row0 + r < a.rows && col0 + j < a.cols) store<TC, Acc>(a, b, slice, row0 + r, col0 + j, v[i]);
    }
  }
}

constexpr int kDotWarps = 8;
// Rows per warp (its accumulators: rows x NS per lane) and depth steps per lane in flight, within
// 128 registers (two blocks per SM).
template <typename Acc> __host__ __device__ constexpr int dot_rows() { return sizeof(Acc) == 8 ? 2 : 4; }
template <int NS> __host__ __device__ constexpr int dot_unroll() { return NS >= 8 ? 4 : 8; }

// kPrefetch, kWarps and kDotRows default to the crate's kernels' values (bench/floor/dot.cu tries others).
template <typename T, typename TC, typename Acc, int NS, bool kPrefetch = true, int kWarps = kDotWarps,
          int kDotRows = dot_rows<Acc>()>
__device__ void dot(const cutlass_aot_skinny_args& a) {
  constexpr int kDepth = Chunk<Acc, NS>::kDepth;
  constexpr int kDotUnroll = dot_unroll<NS>();
  __shared__ __align__(16) Acc ys[NS * (kDepth + 1)];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int64_t row_blocks = (a.rows + kWarps * kDotRows - 1) / (kWarps * kDotRows);
  const int64_t row0 = (blockIdx.x % row_blocks) * (kWarps * kDotRows) + warp * kDotRows;
  const int64_t col0 = blockIdx.x / row_blocks * NS;  // this block's group of columns
  const int64_t slice = blockIdx.y;
  const int64_t k_begin = slice * a.slice_depth;
  const int64_t k_end = slice + 1 == a.slices ? a.depth : min(a.depth, k_begin + a.slice_depth);
  for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z) {
    const T* xr[kDotRows];
#pragma unroll
    for (int r = 0; r < kDotRows; ++r) xr[r] = at<T>(a.x, b, min(row0 + r, a.rows - 1), 0);
    Acc acc[kDotRows][NS];
#pragma unroll
    for (int r = 0; r < kDotRows; ++r)
#pragma unroll
      for (int j = 0; j < NS; ++j) acc[r][j] = Acc(0);
    for (int64_t k0 = k_begin; k0 < k_end; k0 += kDepth) {
      const int len = (int)min((int64_t)kDepth, k_end - k0);
      __syncthreads();
      stage_y<T, Acc, NS, kWarps * 32, false>(a, b, k0, len, col0, ys);
      __syncthreads();
      // All loads of a step issued before any conversion (converting each as it arrived kept one
      // load in flight); with kPrefetch, the next step's before this step's multiply-adds.
      T next[kDotUnroll][kDotRows];
      auto fetch = [&](int base) {
#pragma unroll
        for (int u = 0; u < kDotUnroll; ++u)
#pragma unroll
          for (int r = 0; r < kDotRows; ++r)
            if (base + 32 * u < len) next[u][r] = xr[r][k0 + base + 32 * u];
      };
      if (kPrefetch) fetch(lane);
      for (int base = lane; base < len; base += 32 * kDotUnroll) {
        Acc xv[kDotUnroll][kDotRows];
        if (!kPrefetch) fetch(base);
#pragma unroll
        for (int u = 0; u < kDotUnroll; ++u)
#pragma unroll
          for (int r = 0; r < kDotRows; ++r) xv[u][r] = to_acc<Acc>(next[u][r]);
        if (kPrefetch && base + 32 * kDotUnroll < len) fetch(base + 32 * kDotUnroll);
#pragma unroll
        for (int u = 0; u < kDotUnroll; ++u) {
          const int k = base + 32 * u;
          if (k >= len) break;
#pragma unroll
          for (int j = 0; j < NS; ++j) {
            const Acc yv = ys[j * (kDepth + 1) + k];
#pragma unroll
            for (int r = 0; r < kDotRows; ++r) acc[r][j] += xv[u][r] * yv;
          }
        }
      }
    }
    dot_store<TC, Acc, kDotRows, NS>(a, b, slice, row0, col0, acc, lane);
  }
}

constexpr int kAxpyThreads = 128;
constexpr int kAxpyRows = 2;  // rows per thread, the block's row groups apart
// Depth steps in flight: 16, or 8 where 16 ran slower (f64 with 8 or more columns, and with parts).
template <typename Acc, int NS, bool kParts> __host__ __device__ constexpr int axpy_unroll() {
  return !kParts && (sizeof(Acc) == 4 || NS <= 4) ? 16 : 8;
}

// kParts: the product has fewer rows than a block holds (see row_groups); without it the compiler
// sees one part and the full-block path keeps none of the parts' index arithmetic.
// kThreads, kRows, kUnroll and kPrefetch default to the crate's kernels' values (bench/floor/axpy.cu
// tries others); f64 does not prefetch (its doubled buffers spilled).
template <typename T, typename TC, typename Acc, int NS, bool kParts, int kThreads = kAxpyThreads,
          int kRows = kAxpyRows, int kUnroll = axpy_unroll<Acc, NS, kParts>(), bool kPrefetch = sizeof(Acc) == 4>
__device__ void axpy(const cutlass_aot_skinny_args& a) {
  constexpr int kDepth = Chunk<Acc, NS>::kDepth;
  Acc* ys = chunk_buffer<Acc, NS * kDepth>();
  const int64_t row_blocks = (a.rows + kThreads * kRows - 1) / (kThreads * kRows);
  // Fewer rows than the block holds: threads owning the same rows split the depth (parts), the
  // rows of a thread `groups` apart.
  const int groups = kParts ? row_groups<kThreads>(a.rows, kRows) : kThreads;
  const int parts = kParts ? kThreads / groups : 1, part = kParts ? threadIdx.x / groups : 0;
  const int64_t block_row0 = (blockIdx.x % row_blocks) * (kThreads * kRows);
  const int64_t row0 = block_row0 + threadIdx.x % groups;
  const int64_t col0 = blockIdx.x / row_blocks * NS;  // this block's group of columns
  const int64_t slice = blockIdx.y;
  const int64_t k_begin = slice * a.slice_depth;
  const int64_t k_end = slice + 1 == a.slices ? a.depth : min(a.depth, k_begin + a.slice_depth);
  for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z) {
    const T* xr[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) xr[r] = at<T>(a.x, b, min(row0 + r * groups, a.rows - 1), 0);
    const int64_t ks = a.x.col_stride;
    Acc acc[kRows][NS];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < NS; ++j) acc[r][j] = Acc(0);
    for (int64_t k0 = k_begin; k0 < k_end; k0 += kDepth) {
      const int len = (int)min((int64_t)kDepth, k_end - k0);
      __syncthreads();
      stage_y<T, Acc, NS, kThreads, true>(a, b, k0, len, col0, ys);
      __syncthreads();
      // Loads of the next kUnroll steps are issued before this step's multiply-adds (kPrefetch).
      T next[kUnroll][kRows];
      auto fetch = [&](int base) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int r = 0; r < kRows; ++r)
            if (base + u * parts < len) next[u][r] = xr[r][(k0 + base + u * parts) * ks];
      };
      if (kPrefetch) fetch(part);
      for (int base = part; base < len; base += kUnroll * parts) {
        Acc xv[kUnroll][kRows];
        if (!kPrefetch) fetch(base);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int r = 0; r < kRows; ++r) xv[u][r] = to_acc<Acc>(next[u][r]);
        if (kPrefetch && base + kUnroll * parts < len) fetch(base + kUnroll * parts);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int k = base + u * parts;
          if (k >= len) break;
#pragma unroll
          for (int j = 0; j < NS; ++j) {
            const Acc yv = ys[k * NS + j];
#pragma unroll
            for (int r = 0; r < kRows; ++r) acc[r][j] += xv[u][r] * yv;
          }
        }
      }
    }
    if (!kParts) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t row = row0 + r * groups;
        if (row >= a.rows) continue;
#pragma unroll
        for (int j = 0; j < NS; ++j)
          if (col0 + j < a.cols) store<TC, Acc>(a, b, slice, row, col0 + j, acc[r][j]);
      }
      continue;
    }
    // Parts meet in shared memory ([part][row][column], rows in block order) and are added in
    // part order.
    constexpr int kValues = kRows * NS;
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < NS; ++j) ys[(part * groups * kRows + r * groups + threadIdx.x % groups) * NS + j] = acc[r][j];
    __syncthreads();
    for (int e = threadIdx.x; e < groups * kValues; e += kThreads) {
      Acc sum = ys[e];
      for (int p = 1; p < parts; ++p) sum += ys[p * groups * kValues + e];
      const int64_t row = block_row0 + e / NS, col = col0 + e % NS;
      if (row < a.rows && col < a.cols) store<TC, Acc>(a, b, slice, row, col, sum);
    }
  }
}

// Adds the slices' partial sums: D = alpha * sum + beta * C.
// Threads per output of the reduction: up to 8, each summing every parts-th slice with several
// loads in flight (one thread per output waited on its slices' loads one by one), combined in
// part order through shared memory, so the sum is the same at every launch. A block of
// kReduceThreads threads reduces kReduceThreads / parts outputs per step of its grid-stride loop.
constexpr int kReduceThreads = 256;
__host__ __device__ constexpr int reduce_parts(int64_t slices) {
  return slices >= 8 ? 8 : slices >= 4 ? 4 : slices >= 2 ? 2 : 1;
}

template <typename TC, typename Acc>
__device__ void reduce(const cutlass_aot_skinny_args& a) {
  constexpr int kInFlight = 4;
  __shared__ Acc sums[kReduceThreads];
  const int parts = reduce_parts(a.slices);
  const int per_block = kReduceThreads / parts;
  const int lane = threadIdx.x % per_block, part = threadIdx.x / per_block;
  const int64_t per_batch = a.rows * a.cols;
  const int64_t total = per_batch * a.batch;
  const Acc* p = reinterpret_cast<const Acc*>(a.partials);
  for (int64_t e0 = (int64_t)blockIdx.x * per_block; e0 < total; e0 += (int64_t)gridDim.x * per_block) {
    const int64_t e = e0 + lane;
    Acc sum = Acc(0);
    if (e < total) {
      int64_t s = part;
      for (; s + (kInFlight - 1) * parts < a.slices; s += kInFlight * parts) {
        Acc v[kInFlight];
#pragma unroll
        for (int i = 0; i < kInFlight; ++i) v[i] = p[(s + i * parts) * total + e];
#pragma unroll
        for (int i = 0; i < kInFlight; ++i) sum += v[i];
      }
      for (; s < a.slices; s += parts) sum += p[s * total + e];
    }
    sums[threadIdx.x] = sum;
    __syncthreads();
    if (part == 0 && e < total) {
      for (int q = 1; q < parts; ++q) sum += sums[q * per_block + lane];
      const int64_t b = e / per_batch;
      const int64_t row = (e % per_batch) / a.cols;
      const int64_t col = e % a.cols;
      Acc v = Acc(a.alpha) * sum;
      if (a.beta != 0.0) v += Acc(a.beta) * to_acc<Acc>(*at<TC>(a.c, b, row, col));
      *const_cast<TC*>(at<TC>(a.d, b, row, col)) = from_acc<TC>(v);
    }
    __syncthreads();
  }
}

// Tiny products: no staging, no barrier, a short path. `Lanes` lanes per output: 1, a thread per
// output (tiny_thread); 32, a warp per output with its lanes along depth (tiny_warp); outputs in a
// grid-stride loop over (batch, row, column). Where the whole product is a few microseconds' work,
// the other forms' unrolled paths and staging cost more than it.
constexpr int kTinyThreads = 128;

template <typename T, typename TC, typename Acc, int Lanes>
__device__ void tiny(const cutlass_aot_skinny_args& a) {
  static_assert(Lanes == 1 || Lanes == 32, "a thread or a warp per output");
  constexpr int kPerBlock = kTinyThreads / Lanes;
  const int lane = threadIdx.x % Lanes;
  const int64_t per_batch = a.rows * a.cols;
  for (int64_t o = blockIdx.x * (int64_t)kPerBlock + threadIdx.x / Lanes; o < per_batch * a.batch;
       o += (int64_t)gridDim.x * kPerBlock) {
    const int64_t b = o / per_batch, r = (o % per_batch) / a.cols, c = o % a.cols;
    const T* x = at<T>(a.x, b, r, 0);
    const T* y = at<T>(a.y, b, 0, c);
    Acc s = Acc(0);
#pragma unroll 4
    for (int64_t k = lane; k < a.depth; k += Lanes) s += to_acc<Acc>(x[k * a.x.col_stride]) * to_acc<Acc>(y[k * a.y.row_stride]);
#pragma unroll
    for (int d = Lanes / 2; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    if (lane == 0) {
      Acc v = Acc(a.alpha) * s;
      if (a.beta != 0.0) v += Acc(a.beta) * to_acc<Acc>(*at<TC>(a.c, b, r, c));
      *const_cast<TC*>(at<TC>(a.d, b, r, c)) = from_acc<TC>(v);
    }
  }
}

}  // namespace cutlass_aot_skinny

#include "skinny_vector.cuh"

#define CUTLASS_AOT_SKINNY_NS(NAME, T, TC, ACC, NS)                                                       \
  extern "C" __global__ void __launch_bounds__(256, 2) cutlass_aot_skinny_dot_##NAME##_n##NS(                \
      const cutlass_aot_skinny_args args) {                                                               \
    cutlass_aot_skinny::dot<T, TC, ACC, NS>(args);                                                        \
  }                                                                                                       \
  extern "C" __global__ void __launch_bounds__(128, 4) cutlass_aot_skinny_axpy_##NAME##_n##NS(               \
      const cutlass_aot_skinny_args args) {                                                               \
    if (cutlass_aot_skinny::row_groups<cutlass_aot_skinny::kAxpyThreads>(                                 \
            args.rows, cutlass_aot_skinny::kAxpyRows) == cutlass_aot_skinny::kAxpyThreads)                  \
      cutlass_aot_skinny::axpy<T, TC, ACC, NS, false>(args);                                              \
    else                                                                                                  \
      cutlass_aot_skinny::axpy<T, TC, ACC, NS, true>(args);                                               \
  }

// The vector dot form up to 8 columns (more hold more registers than two blocks an SM leave).
#define CUTLASS_AOT_SKINNY_DOTV(NAME, T, TC, ACC, NS)                                                     \
  extern "C" __global__ void __launch_bounds__(256, 2) cutlass_aot_skinny_dotv_##NAME##_n##NS(               \
      const cutlass_aot_skinny_args args) {                                                               \
    cutlass_aot_skinny::dot_vector<T, TC, ACC, NS>(args);                                                 \
  }

#define CUTLASS_AOT_SKINNY(NAME, T, TC, ACC)                                                              \
  CUTLASS_AOT_SKINNY_DOTV(NAME, T, TC, ACC, 1)                                                            \
  CUTLASS_AOT_SKINNY_DOTV(NAME, T, TC, ACC, 2)                                                            \
  CUTLASS_AOT_SKINNY_DOTV(NAME, T, TC, ACC, 4)                                                            \
  CUTLASS_AOT_SKINNY_DOTV(NAME, T, TC, ACC, 8)                                                            \
  CUTLASS_AOT_SKINNY_NS(NAME, T, TC, ACC, 1)                                                              \
  CUTLASS_AOT_SKINNY_NS(NAME, T, TC, ACC, 2)                                                              \
  CUTLASS_AOT_SKINNY_NS(NAME, T, TC, ACC, 4)                                                              \
  CUTLASS_AOT_SKINNY_NS(NAME, T, TC, ACC, 8)                                                              \
  CUTLASS_AOT_SKINNY_NS(NAME, T, TC, ACC, 16)                                                             \
  extern "C" __global__ void __launch_bounds__(cutlass_aot_skinny::kReduceThreads)                      \
      cutlass_aot_skinny_reduce_##NAME(                                                                   \
      const cutlass_aot_skinny_args args) {                                                               \
    cutlass_aot_skinny::reduce<TC, ACC>(args);                                                            \
  }                                                                                                       \
  extern "C" __global__ void __launch_bounds__(128) cutlass_aot_skinny_tiny_thread_##NAME(                \
      const cutlass_aot_skinny_args args) {                                                               \
    cutlass_aot_skinny::tiny<T, TC, ACC, 1>(args);                                                        \
  }                                                                                                       \
  extern "C" __global__ void __launch_bounds__(128) cutlass_aot_skinny_tiny_warp_##NAME(                  \
      const cutlass_aot_skinny_args args) {                                                               \
    cutlass_aot_skinny::tiny<T, TC, ACC, 32>(args);                                                       \
  }

// Names: A/B element, then C/D element where it differs.
CUTLASS_AOT_SKINNY(f16, __half, __half, float)
CUTLASS_AOT_SKINNY(bf16, __nv_bfloat16, __nv_bfloat16, float)
CUTLASS_AOT_SKINNY(f32, float, float, float)
CUTLASS_AOT_SKINNY(f64, double, double, double)
CUTLASS_AOT_SKINNY(f16_f32, __half, float, float)
CUTLASS_AOT_SKINNY(bf16_f32, __nv_bfloat16, float, float)

#endif  // CUTLASS_AOT_DEVICE_PASS
