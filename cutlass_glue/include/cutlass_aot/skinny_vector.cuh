// The skinny dot form on 16-byte vectors (`cutlass_aot_skinny_dotv_*`), part of skinny.cuh: it
// includes this file after its own forms, whose helpers (the views, the conversions, the warp's
// shuffled stores) these use.
#pragma once

#ifdef CUTLASS_AOT_DEVICE_PASS

namespace cutlass_aot_skinny {

// The V elements of a 16-byte vector in the accumulator type.
template <typename T, typename Acc, int V> __device__ __forceinline__ void widen(const uint4& v, Acc (&out)[V]) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = to_acc<Acc>(e[i]);
}

// X is read once: through the non-coherent path without allocating in L1 (Y, which every warp of
// the block reads, keeps it).
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Vectors of X per row a lane has in flight: fewer where more columns hold more registers.
template <int NS> __host__ __device__ constexpr int dot_vector_unroll() { return NS == 1 ? 4 : (NS <= 4 ? 2 : 1); }

// The dot form on 16-byte vectors, where X's rows and Y's columns run along depth and every line,
// batch and slice starts on a 16-byte boundary (the runtime checks: `Skinny::vectors_fit`). Lanes
// take consecutive vectors (a warp reads 512 contiguous bytes of each of its rows per step), Y comes
// through L1 (every warp of the block reads the same columns): no shared-memory staging and no
// barriers, so a warp keeps its next loads in flight. The grid and the partial sums are the dot
// form's.
template <typename T, typename TC, typename Acc, int NS, int kWarps = kDotWarps, int kDotRows = dot_rows<Acc>()>
__device__ void dot_vector(const cutlass_aot_skinny_args& a) {
  constexpr int V = 16 / sizeof(T);
  constexpr int U = dot_vector_unroll<NS>();
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int64_t row_blocks = (a.rows + kWarps * kDotRows - 1) / (kWarps * kDotRows);
  const int64_t row0 = (blockIdx.x % row_blocks) * (kWarps * kDotRows) + warp * kDotRows;
  const int64_t col0 = blockIdx.x / row_blocks * NS;
  const int64_t slice = blockIdx.y;
  const int64_t k_begin = slice * a.slice_depth;
  const int64_t k_end = slice + 1 == a.slices ? a.depth : min(a.depth, k_begin + a.slice_depth);
  const int64_t k_vectors_end = k_begin + (k_end - k_begin) / V * V;
  for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z) {
    const T* xr[kDotRows];
    const T* yc[NS];
#pragma unroll
    for (int r = 0; r < kDotRows; ++r) xr[r] = at<T>(a.x, b, min(row0 + r, a.rows - 1), 0);
#pragma unroll
    for (int j = 0; j < NS; ++j) yc[j] = at<T>(a.y, b, 0, min(col0 + j, a.cols - 1));
    Acc acc[kDotRows][NS];
#pragma unroll
    for (int r = 0; r < kDotRows; ++r)
#pragma unroll
      for (int j = 0; j < NS; ++j) acc[r][j] = Acc(0);
    for (int64_t k0 = k_begin + lane * V; k0 < k_vectors_end; k0 += 32 * V * U) {
      uint4 xv[U][kDotRows];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int r = 0; r < kDotRows; ++r)
          xv[u][r] = k0 + 32 * V * u < k_vectors_end ? load_stream(xr[r] + k0 + 32 * V * u) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t k = k0 + 32 * V * u;
        if (k >= k_vectors_end) break;
        Acc xs[kDotRows][V];
#pragma unroll
        for (int r = 0; r < kDotRows; ++r) widen<T, Acc, V>(xv[u][r], xs[r]);
#pragma unroll
        for (int j = 0; j < NS; ++j) {
          Acc ys[V];
          widen<T, Acc, V>(__ldg(reinterpret_cast<const uint4*>(yc[j] + k)), ys);
#pragma unroll
          for (int r = 0; r < kDotRows; ++r)
#pragma unroll
            for (int e = 0; e < V; ++e) acc[r][j] += xs[r][e] * ys[e];
        }
      }
    }
    // Depth past the last whole vector (fewer than V elements): lane e takes element e.
    if (lane < k_end - k_vectors_end) {
      const int64_t k = k_vectors_end + lane;
#pragma unroll
      for (int j = 0; j < NS; ++j) {
        const Acc y = to_acc<Acc>(yc[j][k]);
#pragma unroll
        for (int r = 0; r < kDotRows; ++r) acc[r][j] += to_acc<Acc>(xr[r][k]) * y;
      }
    }
    dot_store<TC, Acc, kDotRows, NS>(a, b, slice, row0, col0, acc, lane);
  }
}

}  // namespace cutlass_aot_skinny

#endif  // CUTLASS_AOT_DEVICE_PASS
