// Support kernels of the runtime (no CUTLASS): the strided copies that stage an operand no kernel
// can read as it lies (a misaligned address or leading dimension, a layout no kernel takes) into an
// aligned workspace copy, and the 3xTF32 split of f32 operands for Hopper's TF32 kernels.
//
// Every kernel takes one struct by value (the runtime checks its size against the driver's) and
// walks 32x32 tiles of a batch of matrices with a grid-stride loop, so any extent and batch count
// works with any grid. A tile goes through shared memory: the reads are coalesced along the
// source's contiguous dimension and the writes along the destination's, so a transposing copy is
// as fast as a straight one.
#pragma once

#include <stdint.h>

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

#endif  // CUTLASS_AOT_DEVICE_PASS
