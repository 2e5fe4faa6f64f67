// Times CUTLASS 2.x f64 GEMM configurations outside the crate: Ampere's DMMA (8x8x4, arch Sm80, the
// crate's f64 kernels until now) against Hopper's (16x8x4, arch Sm90) at several tiles. For each
// problem on stdin ("layout m n k", layout = A and B letters, t row-major, n column-major, C
// row-major) one JSON line per configuration: the median of 20 launches with an event between
// consecutive ones, queued behind a spin kernel, and the max error against an f64 reference.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I$CUTLASS/include -cudart static bench/f64/harness.cu
#include "cutlass/gemm/device/gemm_universal.h"
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include <cuda_runtime.h>

using Row = cutlass::layout::RowMajor;
using Col = cutlass::layout::ColumnMajor;
using Epi = cutlass::epilogue::thread::LinearCombination<double, 1, double, double>;
using Swz = cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>;
template <typename LA, typename LB, typename Arch, typename Tile, typename Warp, typename Inst, int Stages>
using G = cutlass::gemm::device::GemmUniversal<double, LA, double, LB, double, Row, double, cutlass::arch::OpClassTensorOp,
    Arch, Tile, Warp, Inst, Epi, Swz, Stages, 1, 1>;
template <int M, int N, int K> using Sh = cutlass::gemm::GemmShape<M, N, K>;
using S64x64x16 = Sh<64, 64, 16>;
using S32x32x16 = Sh<32, 32, 16>;
using S8x8x4 = Sh<8, 8, 4>;
using S16x8x4 = Sh<16, 8, 4>;
using S128x128x16 = Sh<128, 128, 16>;
using S32x64x16 = Sh<32, 64, 16>;
using S128x64x16 = Sh<128, 64, 16>;
using S64x32x16 = Sh<64, 32, 16>;
using S64x128x16 = Sh<64, 128, 16>;
using S16x16x16 = Sh<16, 16, 16>;
#define CONFIGS(LA, LB)                                                                              \
  X(LA, LB, "sm80_64x64x16_4", cutlass::arch::Sm80, S64x64x16, S32x32x16, S8x8x4, 4)       \
  X(LA, LB, "sm90_64x64x16_4", cutlass::arch::Sm90, S64x64x16, S32x32x16, S16x8x4, 4)      \
  X(LA, LB, "sm90_128x128x16_3", cutlass::arch::Sm90, S128x128x16, S32x64x16, S16x8x4, 3)  \
  X(LA, LB, "sm90_128x64x16_3", cutlass::arch::Sm90, S128x64x16, S64x32x16, S16x8x4, 3)    \
  X(LA, LB, "sm90_64x128x16_3", cutlass::arch::Sm90, S64x128x16, S32x64x16, S16x8x4, 3)    \
  X(LA, LB, "sm90_32x32x16_5", cutlass::arch::Sm90, S32x32x16, S16x16x16, S16x8x4, 5)

__global__ void fill(double* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = ((h & 0xffff) / 32768.0) - 1.0;
  }
}
__global__ void ref(const double* A, const double* B, double* R, int m, int n, int k, bool ar, bool br) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < (int64_t)m * n; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = e / n, j = e % n; double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += A[ar ? i * k + kk : kk * m + i] * B[br ? kk * n + j : j * k + kk];
    R[e] = s;
  }
}
__global__ void maxerr(const double* D, const double* R, int64_t n, unsigned long long* out) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    double d = fabs(D[e] - R[e]);
    atomicMax(out, __double_as_longlong(d));
  }
}
__global__ void spin(long long ns) { long long s = clock64(); while ((clock64() - s) < ns * 2) {} }

template <typename Gemm>
void time_one(const char* name, const char* layout, int m, int n, int k, double* A, double* B, double* D, double* R, bool ar, bool br) {
  int lda = ar ? k : m, ldb = br ? n : k;
  typename Gemm::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm, {m, n, k}, 1, {1.0, 0.0}, A, B, D, D,
                                0, 0, 0, 0, lda, ldb, n, n);
  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) { printf("{\"config\":\"%s\",\"error\":\"cannot implement\"}\n", name); return; }
  if (gemm.initialize(args, nullptr) != cutlass::Status::kSuccess) { printf("{\"config\":\"%s\",\"error\":\"init\"}\n", name); return; }
  const int iters = 20;
  cudaEvent_t ev[iters + 1];
  for (auto& e : ev) cudaEventCreate(&e);
  for (int w = 0; w < 3; ++w) gemm.run();
  spin<<<1, 1>>>(2000000);
  cudaEventRecord(ev[0]);
  for (int i = 0; i < iters; ++i) { gemm.run(); cudaEventRecord(ev[i + 1]); }
  cudaEventSynchronize(ev[iters]);
  std::vector<float> t(iters);
  for (int i = 0; i < iters; ++i) cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]);
  std::sort(t.begin(), t.end());
  unsigned long long* e; cudaMalloc(&e, 8); cudaMemset(e, 0, 8);
  maxerr<<<264, 256>>>(D, R, (int64_t)m * n, e);
  unsigned long long h; cudaMemcpy(&h, e, 8, cudaMemcpyDeviceToHost); cudaFree(e);
  double err; memcpy(&err, &h, 8);
  cudaError_t st = cudaGetLastError();
  printf("{\"config\":\"%s\",\"layout\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"us\":%.2f,\"tflops\":%.2f,\"max_err\":%.3g,\"cuda\":\"%s\"}\n",
         name, layout, m, n, k, t[iters / 2] * 1e3, 2.0 * m * n * k / (t[iters / 2] * 1e-3) / 1e12, err, cudaGetErrorString(st));
  fflush(stdout);
  for (auto& x : ev) cudaEventDestroy(x);
}

int main() {
  char layout[8]; int m, n, k;
  while (scanf("%7s %d %d %d", layout, &m, &n, &k) == 4) {
    bool ar = layout[0] == 't', br = layout[1] == 't';
    double *A, *B, *D, *R;
    cudaMalloc(&A, sizeof(double) * m * k); cudaMalloc(&B, sizeof(double) * k * n);
    cudaMalloc(&D, sizeof(double) * m * n); cudaMalloc(&R, sizeof(double) * m * n);
    fill<<<264, 256>>>(A, (int64_t)m * k, 1); fill<<<264, 256>>>(B, (int64_t)k * n, 2);
    ref<<<1024, 256>>>(A, B, R, m, n, k, ar, br);
    std::string l(layout);
#define X(LA, LB, NAME, ARCH, TILE, WARP, INST, ST) { using T = G<LA, LB, ARCH, TILE, WARP, INST, ST>; time_one<T>(NAME, layout, m, n, k, A, B, D, R, ar, br); }
    if (l == "tn") { CONFIGS(Row, Col) } else if (l == "nt") { CONFIGS(Col, Row) } else if (l == "tt") { CONFIGS(Row, Row) } else { CONFIGS(Col, Col) }
#undef X
    cudaFree(A); cudaFree(B); cudaFree(D); cudaFree(R);
  }
  return 0;
}
