// Support kernels of the runtime (no CUTLASS): the strided copies that stage an operand no kernel
// can read as it lies (a misaligned address or leading dimension, a layout no kernel takes) into an
// aligned workspace copy, the 3xTF32 split of f32 operands for Hopper's TF32 kernels, and the 4-D
// copy and scale of the stride phases of a strided dgrad and of padded conv channels.
//
// Every kernel takes one struct by value (the runtime checks its size against the driver's) and
// loops grid-stride, so any extent works with any grid: the 2-D ones over 32x32 tiles of a batch
// of matrices, the 4-D copy over runs of rows, the 4-D scale over single elements. A 2-D tile
// goes through shared memory: the reads are coalesced along the source's contiguous dimension and
// the writes along the destination's, so a transposing copy is as fast as a straight one.
#pragma once

#include <stdint.h>

#ifdef CUTLASS_AOT_DEVICE_PASS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#ifdef CUTLASS_AOT_DEVICE_PASS

// One matrix view: element (batch, row, col) lies at base + batch*batch_stride + row*row_stride +
// col*col_stride (strides in elements).
struct cutlass_aot_view {
  uint64_t base;
  int64_t row_stride;
  int64_t col_stride;
  int64_t batch_stride;
};

// Copies a rows x cols source into a dst_rows x dst_cols destination (at least as large): the
// elements outside the source are written as zeros (a padded K must sum to nothing).
struct cutlass_aot_copy_args {
  cutlass_aot_view src;
  cutlass_aot_view dst;
  int64_t rows;
  int64_t cols;
  int64_t batch;
  int64_t dst_rows;
  int64_t dst_cols;
};

// 3xTF32 split: every f32 element x of `src` becomes big = tf32(x) and small = tf32(x - big);
// destination part p (0, 1, 2) lies at dst + p*part_stride and receives big when bit p of
// `small_parts` is clear, small when it is set. With A's parts [big, big, small] and B's
// [big, small, big] along K, one TF32 GEMM over 3K computes A_big·B_big + A_big·B_small +
// A_small·B_big: f32 accuracy at TF32 speed.
struct cutlass_aot_split_args {
  cutlass_aot_view src;
  cutlass_aot_view dst;
  int64_t rows;
  int64_t cols;
  int64_t batch;
  int64_t part_stride;
  int32_t small_parts;
  int32_t reserved;
};

namespace cutlass_aot_support {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // blockDim = (32, 8)

template <typename T>
__device__ __forceinline__ T* at(const cutlass_aot_view& v, int64_t b, int64_t r, int64_t c) {
  return reinterpret_cast<T*>(v.base) + b * v.batch_stride + r * v.row_stride + c * v.col_stride;
}

// Round to nearest TF32 (ties away). `cvt` leaves the 13 low mantissa bits of its result
// unspecified (CUTLASS masks them too when it reads a tfloat32_t back): cleared here, so that big is
// exactly the TF32 value the tensor cores multiply and x - big is exact.
__device__ __forceinline__ float to_tf32(float x) {
  uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits & 0xffffe000u);
}

// Walks every 32x32 tile of the batch; `load(b, r, c)` reads an element, `store(b, r, c, v)`
// writes one. Threads index the source's contiguous dimension on load and the destination's on
// store (`src_rows_fast` / `dst_rows_fast`: the contiguous dimension is the row index).
template <typename T, typename Load, typename Store>
__device__ void for_each_tile(int64_t rows, int64_t cols, int64_t batch, bool src_rows_fast,
                              bool dst_rows_fast, Load load, Store store) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tiles_r = (rows + kTile - 1) / kTile;
  const int64_t tiles_c = (cols + kTile - 1) / kTile;
  const int64_t tiles = tiles_r * tiles_c * batch;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t b = t / (tiles_r * tiles_c);
    const int64_t rest = t % (tiles_r * tiles_c);
    const int64_t r0 = (rest / tiles_c) * kTile;
    const int64_t c0 = (rest % tiles_c) * kTile;
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
      // (lr, lc): tile coordinates; the fast thread index runs along the contiguous dimension.
      const int lr = src_rows_fast ? threadIdx.x : i;
      const int lc = src_rows_fast ? i : threadIdx.x;
      if (r0 + lr < rows && c0 + lc < cols) tile[lr][lc] = load(b, r0 + lr, c0 + lc);
    }
    __syncthreads();
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
      const int lr = dst_rows_fast ? threadIdx.x : i;
      const int lc = dst_rows_fast ? i : threadIdx.x;
      if (r0 + lr < rows && c0 + lc < cols) store(b, r0 + lr, c0 + lc, tile[lr][lc]);
    }
    __syncthreads();
  }
}

template <typename T>
__device__ void copy(const cutlass_aot_copy_args& a) {
  const bool src_rows_fast = a.src.row_stride == 1 && a.src.col_stride != 1;
  const bool dst_rows_fast = a.dst.row_stride == 1 && a.dst.col_stride != 1;
  for_each_tile<T>(
      a.dst_rows, a.dst_cols, a.batch, src_rows_fast, dst_rows_fast,
      [&](int64_t b, int64_t r, int64_t c) {
        return r < a.rows && c < a.cols ? *at<const T>(a.src, b, r, c) : T(0);
      },
      [&](int64_t b, int64_t r, int64_t c, T v) { *at<T>(a.dst, b, r, c) = v; });
}

}  // namespace cutlass_aot_support

#define CUTLASS_AOT_COPY_ENTRY(BYTES, T)                                                       \
  extern "C" __global__ void __launch_bounds__(256) cutlass_aot_copy_b##BYTES(                \
      const cutlass_aot_copy_args args) {                                                      \
    cutlass_aot_support::copy<T>(args);                                                        \
  }

CUTLASS_AOT_COPY_ENTRY(1, uint8_t)
CUTLASS_AOT_COPY_ENTRY(2, uint16_t)
CUTLASS_AOT_COPY_ENTRY(4, uint32_t)
CUTLASS_AOT_COPY_ENTRY(8, uint64_t)

extern "C" __global__ void __launch_bounds__(256) cutlass_aot_split_tf32(
    const cutlass_aot_split_args a) {
  using namespace cutlass_aot_support;
  const bool src_rows_fast = a.src.row_stride == 1 && a.src.col_stride != 1;
  const bool dst_rows_fast = a.dst.row_stride == 1 && a.dst.col_stride != 1;
  for_each_tile<float>(
      a.rows, a.cols, a.batch, src_rows_fast, dst_rows_fast,
      [&](int64_t b, int64_t r, int64_t c) { return *at<const float>(a.src, b, r, c); },
      [&](int64_t b, int64_t r, int64_t c, float x) {
        const float big = to_tf32(x);
        // Infinities and NaNs have no small part (inf - inf would be NaN).
        const float small = isfinite(big) ? to_tf32(x - big) : 0.0f;
        float* out = at<float>(a.dst, b, r, c);
#pragma unroll
        for (int p = 0; p < 3; ++p) out[p * a.part_stride] = (a.small_parts >> p) & 1 ? small : big;
      });
}

// A 4-D tensor view: element (i0, i1, i2, i3) lies at base + sum(i_d * strides[d]) (in elements).
struct cutlass_aot_view4 {
  uint64_t base;
  int64_t strides[4];
};

// dst[i] = src[i] over `extent`, zeros where i lies past `src_extent` (the stride phases of a
// strided dgrad: a sub-filter gathered out of a filter; channels padded with zeros).
struct cutlass_aot_copy4_args {
  cutlass_aot_view4 src;
  cutlass_aot_view4 dst;
  int64_t extent[4];
  int64_t src_extent[4];
};

// Up to 16 such copies in one launch (blockIdx.y picks one): a strided dgrad's sub-filters, whose
// separate launches would each cost more than their copy.
#define CUTLASS_AOT_COPY4_BATCH 16
struct cutlass_aot_copy4_batch_args {
  int32_t count;
  int32_t reserved;
  cutlass_aot_copy4_args copies[CUTLASS_AOT_COPY4_BATCH];
};

// dst[i] = beta * src[i] over `extent`, in f32 and rounded to the element type; beta = 0 writes
// zeros without reading src (the stride phases of a strided dgrad that no filter tap reaches).
struct cutlass_aot_scale4_args {
  cutlass_aot_view4 src;
  cutlass_aot_view4 dst;
  int64_t extent[4];
  double beta;
};

namespace cutlass_aot_support {

// Splits `v` into mixed-radix digits of `extent` (digit 3 fastest); digit 0 takes the rest.
__device__ __forceinline__ void digits_4d(int64_t v, const int64_t (&extent)[4], int64_t (&out)[4]) {
#pragma unroll
  for (int d = 3; d >= 1; --d) {
    out[d] = v % extent[d];
    v /= extent[d];
  }
  out[0] = v;
}

__device__ __forceinline__ int64_t offset_4d(const cutlass_aot_view4& view, const int64_t (&at)[4]) {
  return at[0] * view.strides[0] + at[1] * view.strides[1] + at[2] * view.strides[2] +
         at[3] * view.strides[3];
}

// `at += by` in the mixed radix of `extent`: digits 1-3 stay under their extents, so each carries
// at most 1; digit 0 takes the rest.
__device__ __forceinline__ void advance_4d(int64_t (&at)[4], const int64_t (&by)[4],
                                           const int64_t (&extent)[4]) {
  int64_t carry = 0;
#pragma unroll
  for (int d = 3; d >= 1; --d) {
    at[d] += by[d] + carry;
    carry = at[d] >= extent[d] ? 1 : 0;
    at[d] -= carry * extent[d];
  }
  at[0] += by[0] + carry;
}

// Calls `body(index)` for every unit of `units` (digit 3 fastest) from `first` on, `step` apart:
// the caller's grid-stride loop. It divides once, then steps by adding the stride's digits with
// carries: a division per element costs more than the copy of a 2-byte element it addresses.
template <typename Body>
__device__ void walk_4d(const int64_t (&units)[4], int64_t first, int64_t step, Body body) {
  const int64_t total = units[0] * units[1] * units[2] * units[3];
  if (first >= total) return;
  int64_t at[4], by[4];
  digits_4d(first, units, at);
  digits_4d(step, units, by);
  for (int64_t e = first; e < total; e += step) {
    body(at);
    advance_4d(at, by, units);
  }
}

// Calls `body(index)` for every element of `extent`, one thread per element (i3 fastest, so
// consecutive threads touch consecutive channels).
template <typename Body>
__device__ void for_each_4d(const int64_t (&extent)[4], Body body) {
  walk_4d(extent, int64_t(blockIdx.x) * blockDim.x + threadIdx.x, int64_t(gridDim.x) * blockDim.x,
          body);
}

// Whether row (at[0], at[1], at[2]) of a copy lies inside its source.
__device__ __forceinline__ bool row_inside(const cutlass_aot_copy4_args& a, const int64_t (&at)[4]) {
  return at[0] < a.src_extent[0] && at[1] < a.src_extent[1] && at[2] < a.src_extent[2];
}

// `copy_4d` for rows of 64 elements or more: a warp copies 256 consecutive elements of a row, lane
// by lane, so both sides' accesses coalesce whatever their alignment.
template <typename T>
__device__ void copy_4d_wide_rows(const cutlass_aot_copy4_args& a) {
  constexpr int V = 8;
  const T* src = reinterpret_cast<const T*>(a.src.base);
  T* dst = reinterpret_cast<T*>(a.dst.base);
  const int64_t runs = (a.extent[3] + 32 * V - 1) / (32 * V);
  const int64_t units[4] = {a.extent[0], a.extent[1], a.extent[2], runs};
  const int lane = threadIdx.x % 32;
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  walk_4d(units, warp, int64_t(gridDim.x) * blockDim.x / 32, [&](const int64_t(&at)[4]) {
    const int64_t row[4] = {at[0], at[1], at[2], 0};
    const int64_t c0 = at[3] * 32 * V + lane;
    const T* from = src + offset_4d(a.src, row);
    T* to = dst + offset_4d(a.dst, row);
    const int64_t valid = row_inside(a, at) ? a.src_extent[3] : 0;
    T value[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int64_t c = c0 + 32 * j;
      value[j] = c < valid ? from[c * a.src.strides[3]] : T{};
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int64_t c = c0 + 32 * j;
      if (c < a.extent[3]) to[c * a.dst.strides[3]] = value[j];
    }
  });
}

// `copy_4d` for narrow rows: a thread copies a chunk of 16 bytes of a row, with 16-byte loads and
// stores wherever a side's chunk is whole, contiguous and aligned.
template <typename T>
__device__ void copy_4d_narrow_rows(const cutlass_aot_copy4_args& a) {
  constexpr int V = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
  struct alignas(16) Chunk { T v[V]; };
  const T* src = reinterpret_cast<const T*>(a.src.base);
  T* dst = reinterpret_cast<T*>(a.dst.base);
  const int64_t chunks[4] = {a.extent[0], a.extent[1], a.extent[2], (a.extent[3] + V - 1) / V};
  for_each_4d(chunks, [&](const int64_t(&at)[4]) {
    const int64_t row[4] = {at[0], at[1], at[2], 0};
    const int64_t c0 = at[3] * V;
    const T* from = src + offset_4d(a.src, row) + c0 * a.src.strides[3];
    T* to = dst + offset_4d(a.dst, row) + c0 * a.dst.strides[3];
    const int64_t valid = row_inside(a, at) ? min(a.src_extent[3] - c0, int64_t(V)) : 0;
    const int64_t count = min(a.extent[3] - c0, int64_t(V));
    Chunk chunk;
    if (V > 1 && valid == V && a.src.strides[3] == 1 && uintptr_t(from) % 16 == 0) {
      chunk = *reinterpret_cast<const Chunk*>(from);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) chunk.v[j] = j < valid ? from[j * a.src.strides[3]] : T{};
    }
    if (V > 1 && count == V && a.dst.strides[3] == 1 && uintptr_t(to) % 16 == 0) {
      *reinterpret_cast<Chunk*>(to) = chunk;
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (j < count) to[j * a.dst.strides[3]] = chunk.v[j];
      }
    }
  });
}

// `dst[i] = src[i]` over `a.extent`, zeros past `a.src_extent`; rows (dim 3) are walked in runs,
// one index step per run instead of one per element.
template <typename T>
__device__ void copy_4d(const cutlass_aot_copy4_args& a) {
  if (a.extent[3] >= 64) {
    copy_4d_wide_rows<T>(a);
  } else {
    copy_4d_narrow_rows<T>(a);
  }
}

__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(float x) { return x; }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }

}  // namespace cutlass_aot_support

// The runtime widens elements to 16 bytes (uint4) wherever the views allow it.
#define CUTLASS_AOT_COPY4_ENTRY(BYTES, T)                                                      \
  extern "C" __global__ void __launch_bounds__(256) cutlass_aot_copy4_b##BYTES(               \
      const cutlass_aot_copy4_batch_args batch) {                                              \
    if (blockIdx.y >= batch.count) return;                                                     \
    cutlass_aot_support::copy_4d<T>(batch.copies[blockIdx.y]);                                 \
  }

CUTLASS_AOT_COPY4_ENTRY(1, uint8_t)
CUTLASS_AOT_COPY4_ENTRY(2, uint16_t)
CUTLASS_AOT_COPY4_ENTRY(4, uint32_t)
CUTLASS_AOT_COPY4_ENTRY(8, uint64_t)
CUTLASS_AOT_COPY4_ENTRY(16, uint4)

// Zeros over a 4-D view of 16-byte units (the widened beta = 0 case of the scale below).
extern "C" __global__ void __launch_bounds__(256) cutlass_aot_zero4_b16(
    const cutlass_aot_scale4_args a) {
  uint4* dst = reinterpret_cast<uint4*>(a.dst.base);
  using namespace cutlass_aot_support;
  for_each_4d(a.extent,
              [&](const int64_t(&at)[4]) { dst[offset_4d(a.dst, at)] = make_uint4(0, 0, 0, 0); });
}

#define CUTLASS_AOT_SCALE4_ENTRY(NAME, T)                                                      \
  extern "C" __global__ void __launch_bounds__(256) cutlass_aot_scale4_##NAME(                \
      const cutlass_aot_scale4_args a) {                                                       \
    using namespace cutlass_aot_support;                                                       \
    const T* src = reinterpret_cast<const T*>(a.src.base);                                     \
    T* dst = reinterpret_cast<T*>(a.dst.base);                                                 \
    const float beta = static_cast<float>(a.beta);                                             \
    for_each_4d(a.extent, [&](const int64_t(&at)[4]) {                                         \
      const int64_t d = offset_4d(a.dst, at);                                                  \
      dst[d] = beta == 0.0f ? from_float<T>(0.0f)                                              \
                            : from_float<T>(beta * to_float(src[offset_4d(a.src, at)]));       \
    });                                                                                        \
  }

CUTLASS_AOT_SCALE4_ENTRY(f16, __half)
CUTLASS_AOT_SCALE4_ENTRY(bf16, __nv_bfloat16)
CUTLASS_AOT_SCALE4_ENTRY(f32, float)

// f64 in f64.
extern "C" __global__ void __launch_bounds__(256) cutlass_aot_scale4_f64(
    const cutlass_aot_scale4_args a) {
  const double* src = reinterpret_cast<const double*>(a.src.base);
  double* dst = reinterpret_cast<double*>(a.dst.base);
  using namespace cutlass_aot_support;
  for_each_4d(a.extent, [&](const int64_t(&at)[4]) {
    dst[offset_4d(a.dst, at)] = a.beta == 0.0 ? 0.0 : a.beta * src[offset_4d(a.src, at)];
  });
}

#endif  // CUTLASS_AOT_DEVICE_PASS
