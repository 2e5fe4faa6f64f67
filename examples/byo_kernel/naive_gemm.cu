// The CUTLASS API's "bring your own kernel" example, for cutlass-aot: a naive f64 GEMM,
// D = alpha * A * B + beta * C. Each block computes a TILE_M x TILE_N tile of D, one thread per
// element. A and B are read through their row and column strides, so one source serves every
// layout; the manifest's `layout_a` / `layout_b` family picks the strides (LAYOUT_A_ROW, ...).
#include <cstdint>

#if defined(LAYOUT_A_ROW)
#define A_AT(i, kk) a[(int64_t)(i) * lda + (kk)]
#else
#define A_AT(i, kk) a[(int64_t)(kk) * lda + (i)]
#endif
#if defined(LAYOUT_B_ROW)
#define B_AT(kk, j) b[(int64_t)(kk) * ldb + (j)]
#else
#define B_AT(kk, j) b[(int64_t)(j) * ldb + (kk)]
#endif

extern "C" __global__ void __launch_bounds__(TILE_M * TILE_N)
naive_gemm_f64(int32_t m, int32_t n, int32_t k, double alpha, const double* a, int32_t lda,
               const double* b, int32_t ldb, double beta, const double* c, double* d,
               int32_t ldd) {
  int32_t i = blockIdx.y * TILE_M + threadIdx.y;
  int32_t j = blockIdx.x * TILE_N + threadIdx.x;
  if (i >= m || j >= n) {
    return;
  }
  double sum = 0.0;
  for (int32_t kk = 0; kk < k; ++kk) {
    sum += A_AT(i, kk) * B_AT(kk, j);
  }
  int64_t at = (int64_t)i * ldd + j;
  d[at] = alpha * sum + (beta == 0.0 ? 0.0 : beta * c[at]);
}
