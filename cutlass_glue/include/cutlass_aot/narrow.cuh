// Narrow GEMMs on tensor cores (no CUTLASS): out (rows x cols) = alpha * X (rows x depth) * Y
// (depth x cols) + beta * C for 16-bit X and Y and at most 64 columns, any strides, alignment or
// layout. A block stages a chunk of X (128 rows) and of Y through shared memory (X with 8- or
// 4-byte loads where its alignment allows, else two-byte ones; many in flight per thread), each
// warp multiplies its 16 rows by every column with mma.sync m16n8k16, and the block moves on
// along depth. Where CUTLASS's tiles would read a misaligned X two bytes at a time into a mostly
// empty 128-column tile, this streams X once at a tile width that fits. Slices of depth and their
// reduction as in skinny.cuh.
#pragma once

#include "skinny.cuh"

#ifdef CUTLASS_AOT_DEVICE_PASS

namespace cutlass_aot_narrow {

constexpr int kWarps = 8;
constexpr int kRows = 16 * kWarps;  // rows per block
constexpr int kDepth = 64;          // depth per staged chunk
constexpr int kPitch = kDepth + 8;  // halves per staged line: A/B fragment loads hit 32 banks
constexpr int kRowPitch = kRows + 8;

template <typename T> struct Mma;
template <> struct Mma<__half> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

__device__ __forceinline__ uint32_t pack(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }

// The loads of kVec consecutive halves: 2, 4 or 8 bytes.
template <int kVec> struct Word;
template <> struct Word<1> { using Type = uint16_t; };
template <> struct Word<2> { using Type = uint32_t; };
template <> struct Word<4> { using Type = uint2; };

// Copies a kLines x kDepth chunk of a matrix (element (line, k) at base[line * line_stride + k *
// k_stride], zero outside `valid_lines` x `len`) into shared memory: `k_inner` lays it out as
// dst[line * kPitch + k], else as dst[k * (kLines + 8) + line]. Threads walk the layout's inner
// dimension (coalesced where memory is contiguous along it) kVec elements a load (kVec > 1: the
// inner dimension is contiguous, its extent a multiple of kVec and every vector aligned), each
// stepping its address by a constant along the outer one; 16 loads in flight before their stores.
template <int kLines, int kThreads, int kVec = 1>
__device__ __forceinline__ void stage(const uint16_t* base, int64_t line_stride, int64_t k_stride, int valid_lines,
                                      int len, bool k_inner, uint16_t* dst) {
  using W = typename Word<kVec>::Type;
  constexpr int kCount = kLines * kDepth / kThreads / kVec;  // loads per thread
  const int inner = (k_inner ? kDepth : kLines) / kVec;       // loads along the inner dimension
  const int step = kThreads / inner;                          // outer positions per pass
  const int i = threadIdx.x % inner * kVec, o = threadIdx.x / inner;
  const int line = k_inner ? o : i, k = k_inner ? i : o;
  const int64_t outer_stride = k_inner ? line_stride : k_stride;
  const uint16_t* p = base + line * line_stride + k * k_stride;
  const int inner_limit = k_inner ? len : valid_lines, outer_limit = k_inner ? valid_lines : len;
  const bool inner_ok = i < inner_limit;
  const int dst_outer = k_inner ? kPitch : kLines + 8;
  uint16_t* d = dst + o * dst_outer + i;
  constexpr int kBatch = kCount < 16 ? kCount : 16;
#pragma unroll 1
  for (int q0 = 0; q0 < kCount; q0 += kBatch) {
    W v[kBatch];
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      v[q] = W{};
      if (inner_ok && o + (q0 + q) * step < outer_limit)
        v[q] = __ldg(reinterpret_cast<const W*>(p + (int64_t)(q0 + q) * step * outer_stride));
    }
#pragma unroll
    for (int q = 0; q < kBatch; ++q) *reinterpret_cast<W*>(d + (q0 + q) * step * dst_outer) = v[q];
  }
}

// The widest load (4, 2 or 1 halves) every staged chunk of X allows: its contiguous dimension's
// extent, the other strides, the address and (along depth) the slices' bounds all multiples of it.
__device__ __forceinline__ int x_vector(const cutlass_aot_skinny_args& a) {
  const bool k_inner = a.x.col_stride == 1;
  if (!k_inner && a.x.row_stride != 1) return 1;
  const int64_t extent = k_inner ? a.depth : a.rows;
  const int64_t other = k_inner ? a.x.row_stride : a.x.col_stride;
  const int64_t slice = k_inner && a.slices > 1 ? a.slice_depth : 0;
  const uint64_t bits = (uint64_t)extent | (uint64_t)other | (uint64_t)a.x.batch_stride | (uint64_t)slice | (a.x.base / 2);
  return bits % 4 == 0 ? 4 : bits % 2 == 0 ? 2 : 1;
}

// Two consecutive-k halves of line `line` at depth `k` of a staged chunk, as one fragment register.
__device__ __forceinline__ uint32_t pair(const uint16_t* s, bool k_inner, int line_pitch, int line, int k) {
  if (k_inner) return *reinterpret_cast<const uint32_t*>(s + line * kPitch + k);
  return pack(s[k * line_pitch + line], s[(k + 1) * line_pitch + line]);
}

template <int kBytes> __device__ __forceinline__ unsigned char* narrow_smem() {
  __shared__ __align__(16) unsigned char smem[kBytes];
  return smem;
}

template <typename T, typename TC, int NC, int kVec>
__device__ void narrow(const cutlass_aot_skinny_args& a) {
  constexpr int kFrags = NC / 8;
  // X: kRows lines; Y: NC lines (columns). Each sized for either layout.
  constexpr int kXHalves = (kRows * kPitch > kDepth * kRowPitch) ? kRows * kPitch : kDepth * kRowPitch;
  constexpr int kYHalves = (NC * kPitch > kDepth * (NC + 8)) ? NC * kPitch : kDepth * (NC + 8);
  // The staged chunks, then (after the last) the block's results for a coalesced epilogue.
  constexpr int kStageBytes = 2 * (kXHalves + kYHalves);
  constexpr int kTileBytes = 4 * kRows * (NC + 1);
  // One buffer for every kVec (a __shared__ array per instantiation would add up).
  unsigned char* smem = narrow_smem<(kStageBytes > kTileBytes ? kStageBytes : kTileBytes)>();
  uint16_t* xs = reinterpret_cast<uint16_t*>(smem);
  uint16_t* ys = xs + kXHalves;
  float* tile = reinterpret_cast<float*>(smem);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t row0 = (int64_t)blockIdx.x * kRows;
  const int64_t slice = blockIdx.y;
  const int64_t k_begin = slice * a.slice_depth;
  const int64_t k_end = slice + 1 == a.slices ? a.depth : min(a.depth, k_begin + a.slice_depth);
  const bool x_k_inner = a.x.col_stride == 1;
  const bool y_k_inner = a.y.col_stride != 1;  // Y's columns are its lines
  const int valid_rows = (int)min((int64_t)kRows, a.rows - row0);
  for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z) {
    float acc[kFrags][4];
#pragma unroll
    for (int f = 0; f < kFrags; ++f)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[f][i] = 0.f;
    for (int64_t k0 = k_begin; k0 < k_end; k0 += kDepth) {
      const int len = (int)min((int64_t)kDepth, k_end - k0);
      __syncthreads();
      const uint16_t* xb = cutlass_aot_skinny::at<uint16_t>(a.x, b, row0, k0);
      stage<kRows, kWarps * 32, kVec>(xb, a.x.row_stride, a.x.col_stride, valid_rows, len, x_k_inner, xs);
      const uint16_t* yb = cutlass_aot_skinny::at<uint16_t>(a.y, b, k0, 0);
      stage<NC, kWarps * 32>(yb, a.y.col_stride, a.y.row_stride, (int)a.cols, len, y_k_inner, ys);
      __syncthreads();
      const int r = warp * 16 + g;
#pragma unroll 1
      for (int kk = 0; kk < kDepth; kk += 16) {
        const uint32_t fa[4] = {
            pair(xs, x_k_inner, kRowPitch, r, kk + 2 * t), pair(xs, x_k_inner, kRowPitch, r + 8, kk + 2 * t),
            pair(xs, x_k_inner, kRowPitch, r, kk + 2 * t + 8), pair(xs, x_k_inner, kRowPitch, r + 8, kk + 2 * t + 8)};
#pragma unroll
        for (int f = 0; f < kFrags; ++f) {
          const uint32_t fb[2] = {pair(ys, y_k_inner, NC + 8, f * 8 + g, kk + 2 * t),
                                  pair(ys, y_k_inner, NC + 8, f * 8 + g, kk + 2 * t + 8)};
          Mma<T>::run(acc[f], fa, fb);
        }
      }
    }
    // acc[f]: (row g, cols f*8 + 2t, +1) and (row g + 8, the same columns). Through shared
    // memory, so that the stores run along D's contiguous dimension (partial sums: along columns).
    __syncthreads();
#pragma unroll
    for (int f = 0; f < kFrags; ++f)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile[(warp * 16 + g + (i / 2) * 8) * (NC + 1) + f * 8 + 2 * t + (i % 2)] = acc[f][i];
    __syncthreads();
    const bool cols_inner = a.slices > 1 || a.d.col_stride == 1;
    for (int e = threadIdx.x; e < kRows * NC; e += kWarps * 32) {
      const int r = cols_inner ? e / NC : e % kRows;
      const int col = cols_inner ? e % NC : e / kRows;
      if (r < valid_rows && col < a.cols)
        cutlass_aot_skinny::store<TC, float>(a, b, slice, row0 + r, col, tile[r * (NC + 1) + col]);
    }
  }
}

}  // namespace cutlass_aot_narrow

#define CUTLASS_AOT_NARROW_NC(NAME, T, TC, NC)                                                            \
  extern "C" __global__ void __launch_bounds__(256, 3) cutlass_aot_narrow_##NAME##_n##NC(                \
      const cutlass_aot_skinny_args args) {                                                               \
    const int vec = cutlass_aot_narrow::x_vector(args);                                                   \
    if (vec == 4)                                                                                         \
      cutlass_aot_narrow::narrow<T, TC, NC, 4>(args);                                                     \
    else if (vec == 2)                                                                                    \
      cutlass_aot_narrow::narrow<T, TC, NC, 2>(args);                                                     \
    else                                                                                                  \
      cutlass_aot_narrow::narrow<T, TC, NC, 1>(args);                                                     \
  }

#define CUTLASS_AOT_NARROW(NAME, T, TC)  \
  CUTLASS_AOT_NARROW_NC(NAME, T, TC, 16) \
  CUTLASS_AOT_NARROW_NC(NAME, T, TC, 32) \
  CUTLASS_AOT_NARROW_NC(NAME, T, TC, 64)

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
CUTLASS_AOT_NARROW(f16, __half, __half)
CUTLASS_AOT_NARROW(bf16, __nv_bfloat16, __nv_bfloat16)
CUTLASS_AOT_NARROW(f16_f32, __half, float)
CUTLASS_AOT_NARROW(bf16_f32, __nv_bfloat16, float)
#endif

#endif  // CUTLASS_AOT_DEVICE_PASS
