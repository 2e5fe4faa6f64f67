// Support kernels of the runtime (no CUTLASS): the strided copies that stage an operand no kernel
// can read as it lies (a misaligned address or leading dimension, a layout no kernel takes) into an
// aligned workspace copy, the 3xTF32 split of f32 operands for Hopper's TF32 kernels, and the 4-D
// copy and scale of the stride phases of a strided dgrad and of padded conv channels.
//
// Every kernel takes one struct by value (the runtime checks its size against the driver's) and
// loops grid-stride, so any extent works with any grid: the 2-D ones over 64x64 tiles of a batch
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

constexpr int kTile = 64;
constexpr int kLanes = 32;
constexpr int kRowsPerPass = 8;  // blockDim = (32, 8)
// Elements of a tile each thread moves: all its loads are issued before the first store.
constexpr int kPerThread = kTile * kTile / (kLanes * kRowsPerPass);

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

// Tile coordinates of a thread's j-th element: the fast index (lanes, twice over) runs along the
// contiguous dimension, so each warp access covers 32 consecutive elements.
__device__ __forceinline__ void tile_slot(int j, bool rows_fast, int& lr, int& lc) {
  const int fast = threadIdx.x + kLanes * (j % (kTile / kLanes));
  const int slow = threadIdx.y + kRowsPerPass * (j / (kTile / kLanes));
  lr = rows_fast ? fast : slow;
  lc = rows_fast ? slow : fast;
}

// Walks every 64x64 tile of the batch; `load(b, r, c)` reads an element, `store(b, r, c, v)`
// writes one. Threads index the source's contiguous dimension on load and the destination's on
// store (`src_rows_fast` / `dst_rows_fast`: the contiguous dimension is the row index); each
// thread's loads of a tile are all in flight together (a 32x32 tile, one load per pass, reached a
// third of the device's bandwidth).
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
    T value[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      int lr, lc;
      tile_slot(j, src_rows_fast, lr, lc);
      if (r0 + lr < rows && c0 + lc < cols) value[j] = load(b, r0 + lr, c0 + lc);
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      int lr, lc;
      tile_slot(j, src_rows_fast, lr, lc);
      tile[lr][lc] = value[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      int lr, lc;
      tile_slot(j, dst_rows_fast, lr, lc);
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

// 16 bytes at `from`, whose misalignment is any multiple of the element size: the two aligned
// 16-byte chunks around them, shifted together. Both chunks must lie inside the source.
__device__ __forceinline__ uint4 load_shifted(uintptr_t from) {
  const uint4* base = reinterpret_cast<const uint4*>(from & ~uintptr_t(15));
  const uint4 lo = base[0], hi = base[1];
  const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int bytes = int(from & 15), q = bytes >> 2, shift = (bytes & 3) * 8;
  uint32_t out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t low = q == 0 ? w[i] : q == 1 ? w[i + 1] : q == 2 ? w[i + 2] : w[i + 3];
    const uint32_t high = q == 0 ? w[i + 1] : q == 1 ? w[i + 2] : q == 2 ? w[i + 3] : w[i + 4];
    out[i] = __funnelshift_r(low, high, shift);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// 16 bytes of elements of a row, as one register vector.
template <typename T>
struct alignas(16) Chunk {
  static constexpr int V = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
  T v[V];
};

// Elements c0 .. c0 + V of the row at `row` (`stride` apart; c0 may be negative), zeros outside
// 0 .. valid: one 16-byte load where they are contiguous and aligned, two aligned loads shifted
// together where they are contiguous and both aligned chunks lie inside the row's valid elements,
// else element by element (only a row's first and last chunks).
template <typename T>
__device__ __forceinline__ Chunk<T> load_chunk(const T* row, int64_t c0, int64_t valid, int64_t stride) {
  constexpr int V = Chunk<T>::V;
  Chunk<T> chunk;
  const bool whole = V > 1 && stride == 1 && c0 >= 0 && c0 + V <= valid;
  const uintptr_t first = uintptr_t(row) + c0 * int64_t(sizeof(T));
  const uintptr_t down = first & ~uintptr_t(15);
  if (whole && first == down) {
    chunk = *reinterpret_cast<const Chunk<T>*>(first);
  } else if (whole && down >= uintptr_t(row) && down + 32 <= uintptr_t(row + valid)) {
    const uint4 shifted = load_shifted(first);
    memcpy(&chunk, &shifted, sizeof(chunk));
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int64_t c = c0 + j;
      chunk.v[j] = c >= 0 && c < valid ? row[c * stride] : T{};
    }
  }
  return chunk;
}

// Writes the elements of `chunk` that fall in 0 .. count of the row at `row` (chunk element j is
// row element c0 + j; `stride` apart): one 16-byte store where the chunk is whole, contiguous and
// aligned.
template <typename T>
__device__ __forceinline__ void store_chunk(T* row, int64_t c0, const Chunk<T>& chunk, int64_t count,
                                            int64_t stride) {
  constexpr int V = Chunk<T>::V;
  T* to = row + c0 * stride;
  if (V > 1 && c0 >= 0 && c0 + V <= count && stride == 1 && uintptr_t(to) % 16 == 0) {
    *reinterpret_cast<Chunk<T>*>(to) = chunk;
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if (c0 + j >= 0 && c0 + j < count) row[(c0 + j) * stride] = chunk.v[j];
    }
  }
}

// Where chunk `index` of a destination row starts: on the destination's 16-byte grid (the first
// chunk starting up to V - 1 elements before the row), so every whole chunk is one aligned store
// whatever the row's alignment, the source read shifted.
template <typename T>
__device__ __forceinline__ int64_t chunk_start(const T* dst_row, int64_t stride, int64_t index) {
  constexpr int V = Chunk<T>::V;
  const int64_t lead = stride == 1 ? int64_t(uintptr_t(dst_row) % 16 / sizeof(T)) : 0;
  return index * V - lead;
}

// Chunks a row of `extent` elements takes on the grid (up to V - 1 elements before it too).
template <typename T>
__device__ __forceinline__ int64_t chunks_per_row(int64_t extent) {
  constexpr int V = Chunk<T>::V;
  return (extent + 2 * V - 2) / V;
}

// Copies chunk `index` of row `at` (digits 0-2) of a 4-D copy.
template <typename T>
__device__ __forceinline__ void copy_chunk(const cutlass_aot_copy4_args& a, const int64_t (&at)[4],
                                           int64_t index) {
  const int64_t row[4] = {at[0], at[1], at[2], 0};
  T* to = reinterpret_cast<T*>(a.dst.base) + offset_4d(a.dst, row);
  const int64_t c0 = chunk_start(to, a.dst.strides[3], index);
  if (c0 >= a.extent[3]) return;
  const T* from = reinterpret_cast<const T*>(a.src.base) + offset_4d(a.src, row);
  const int64_t valid = row_inside(a, at) ? a.src_extent[3] : 0;
  const Chunk<T> chunk = load_chunk(from, c0, valid, a.src.strides[3]);
  store_chunk(to, c0, chunk, a.extent[3], a.dst.strides[3]);
}

// `copy_4d` for rows of at least 2 runs (a run: 32 chunks, a warp's 512 bytes): a warp copies a
// run of one row, on the destination's grid, so the row's place is computed once a run.
template <typename T>
__device__ void copy_4d_wide_rows(const cutlass_aot_copy4_args& a) {
  const int64_t runs = (chunks_per_row<T>(a.extent[3]) + 31) / 32;
  const int64_t units[4] = {a.extent[0], a.extent[1], a.extent[2], runs};
  const int lane = threadIdx.x % 32;
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  walk_4d(units, warp, int64_t(gridDim.x) * blockDim.x / 32,
          [&](const int64_t(&at)[4]) { copy_chunk<T>(a, at, at[3] * 32 + lane); });
}

// `copy_4d` for narrower rows whose destination rows are 16-byte aligned: a thread copies a chunk,
// consecutive threads consecutive chunks of consecutive rows, so short rows keep every lane busy.
template <typename T>
__device__ void copy_4d_narrow_rows(const cutlass_aot_copy4_args& a) {
  constexpr int V = Chunk<T>::V;
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
    Chunk<T> chunk;
    if (V > 1 && valid == V && a.src.strides[3] == 1 && uintptr_t(from) % 16 == 0) {
      chunk = *reinterpret_cast<const Chunk<T>*>(from);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) chunk.v[j] = j < valid ? from[j * a.src.strides[3]] : T{};
    }
    if (V > 1 && count == V && a.dst.strides[3] == 1 && uintptr_t(to) % 16 == 0) {
      *reinterpret_cast<Chunk<T>*>(to) = chunk;
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (j < count) to[j * a.dst.strides[3]] = chunk.v[j];
      }
    }
  });
}

// `copy_4d` for narrower rows whose destination rows are misaligned: as above, chunks on the
// destination's grid.
template <typename T>
__device__ void copy_4d_narrow_rows_on_grid(const cutlass_aot_copy4_args& a) {
  const int64_t chunks[4] = {a.extent[0], a.extent[1], a.extent[2], chunks_per_row<T>(a.extent[3])};
  for_each_4d(chunks, [&](const int64_t(&at)[4]) { copy_chunk<T>(a, at, at[3]); });
}

// Whether every row of the destination starts on a 16-byte boundary (then the grid changes
// nothing but the source's shifted loads, which cost narrow rows more than they gain: 2-byte
// rows of 33 took 24 us against 18 on an H100).
template <typename T>
__device__ __forceinline__ bool rows_aligned(const cutlass_aot_view4& v) {
  bool aligned = v.base % 16 == 0 && v.strides[3] == 1;
#pragma unroll
  for (int d = 0; d < 3; ++d) aligned = aligned && v.strides[d] * int64_t(sizeof(T)) % 16 == 0;
  return aligned;
}

// `dst[i] = src[i]` over `a.extent`, zeros past `a.src_extent`: long rows (dim 3) a warp's run at
// a time, short ones a chunk a thread.
template <typename T>
__device__ void copy_4d(const cutlass_aot_copy4_args& a) {
  if (a.extent[3] >= 64 * Chunk<T>::V) {
    copy_4d_wide_rows<T>(a);
  } else if (rows_aligned<T>(a.dst)) {
    copy_4d_narrow_rows<T>(a);
  } else {
    copy_4d_narrow_rows_on_grid<T>(a);
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
