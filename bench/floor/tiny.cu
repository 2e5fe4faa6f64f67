// The tiny GEMM forms alone (a thread per output; a warp per output, its lanes along depth; first
// prototyped here, now the crate's kernels from cutlass_aot/skinny.cuh). Each problem on stdin
// ("dtype layout m n k batch", A and B letters: t row-major, n column-major; D row-major) runs on
// both, checked against an f64 reference and timed as the benchmarks time (30 launches behind a
// spin kernel, an event between launches, the median); one JSON line per problem and variant.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I cutlass_glue/include -cudart static bench/floor/tiny.cu
#define CUTLASS_AOT_DEVICE_PASS 1
#include "cutlass_aot/skinny.cuh"
#include <cstdio>
#include <string>
#include "timing.cuh"
using namespace cutlass_aot_skinny;

template <typename T> __global__ void fill(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = from_acc<T>(((h & 0xffff) / 32768.0f) - 1.0f);
  }
}
template <typename T> __global__ void ref(cutlass_aot_view A, cutlass_aot_view B, double* D, int64_t m, int64_t n, int64_t k, int64_t batch) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * n * batch; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = e / (m * n), i = (e / n) % m, j = e % n; double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += (double)to_acc<double>(*at<T>(A, b, i, kk)) * (double)to_acc<double>(*at<T>(B, b, kk, j));
    D[e] = s;
  }
}
template <typename T> __global__ void err(cutlass_aot_view D, const double* R, int64_t m, int64_t n, int64_t batch, double* out) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * n * batch; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = e / (m * n), i = (e / n) % m, j = e % n;
    double d = (double)to_acc<double>(*at<T>(D, b, i, j)) - R[e];
    atomicAdd(&out[0], d * d); atomicAdd(&out[1], R[e] * R[e]);
  }
}

// The crate's tiny forms (cutlass_aot/skinny.cuh), launched as dispatch launches them.
template <typename T, typename Acc, int Lanes> __global__ void __launch_bounds__(128) tiny_form(const cutlass_aot_skinny_args a) {
  tiny<T, T, Acc, Lanes>(a);
}

cutlass_aot_view view(uint64_t base, bool rowmajor, int64_t rows, int64_t cols, int64_t bs) {
  cutlass_aot_view v; v.base = base; v.batch_stride = bs;
  if (rowmajor) { v.row_stride = cols; v.col_stride = 1; } else { v.row_stride = 1; v.col_stride = rows; }
  return v;
}

template <typename T, typename Acc> void run(const char* dt, std::string lay, int64_t m, int64_t n, int64_t k, int64_t batch) {
  T *A, *B, *D; double *R, *E;
  cudaMalloc(&A, sizeof(T) * m * k * batch + 64); cudaMalloc(&B, sizeof(T) * k * n * batch + 64); cudaMalloc(&D, sizeof(T) * m * n * batch + 64);
  cudaMalloc(&R, 8 * m * n * batch); cudaMalloc(&E, 16);
  fill<<<256, 256>>>(A, m * k * batch, 1); fill<<<256, 256>>>(B, k * n * batch, 2);
  cutlass_aot_skinny_args a{};
  a.x = view((uint64_t)A, lay[0] == 't', m, k, m * k); a.y = view((uint64_t)B, lay[1] == 't', k, n, k * n);
  a.d = view((uint64_t)D, true, m, n, m * n); a.c = a.d;
  a.rows = m; a.cols = n; a.depth = k; a.batch = batch; a.alpha = 1; a.beta = 0; a.slices = 1; a.slice_depth = k;
  ref<T><<<256, 256>>>(a.x, a.y, R, m, n, k, batch);
  void* params[] = {&a};
  const int64_t outputs = m * n * batch;
  for (int variant = 0; variant < 2; ++variant) {
    void* f = variant ? (void*)tiny_form<T, Acc, 32> : (void*)tiny_form<T, Acc, 1>;
    int64_t per_block = variant ? 4 : 128;
    unsigned blocks = (unsigned)std::min<int64_t>((outputs + per_block - 1) / per_block, 132 * 16);
    auto launch = [&] { cudaLaunchKernel(f, dim3(blocks), dim3(128), params, 0, 0); };
    launch(); cudaDeviceSynchronize();
    cudaMemset(E, 0, 16); err<T><<<256, 256>>>(a.d, R, m, n, batch, E); double h[2]; cudaMemcpy(h, E, 16, cudaMemcpyDeviceToHost);
    const float us = time_us(launch, 30, 3);
    cudaError_t st = cudaGetLastError();
    printf("{\"dtype\":\"%s\",\"layout\":\"%s\",\"m\":%ld,\"n\":%ld,\"k\":%ld,\"batch\":%ld,\"variant\":\"%s\",\"us\":%.2f,\"rel\":%.3g,\"status\":\"%s\"}\n",
           dt, lay.c_str(), m, n, k, batch, variant ? "warp" : "thread", us, sqrt(h[0] / (h[1] + 1e-300)), cudaGetErrorString(st));
  }
  cudaFree(A); cudaFree(B); cudaFree(D); cudaFree(R); cudaFree(E);
}

int main() {
  char dt[16], lay[8]; long m, n, k, b;
  while (scanf("%15s %7s %ld %ld %ld %ld", dt, lay, &m, &n, &k, &b) == 6) {
    std::string d = dt;
    if (d == "f16") run<__half, float>(dt, lay, m, n, k, b);
    else if (d == "bf16") run<__nv_bfloat16, float>(dt, lay, m, n, k, b);
    else if (d == "f32") run<float, float>(dt, lay, m, n, k, b);
    else if (d == "f64") run<double, double>(dt, lay, m, n, k, b);
    fflush(stdout);
  }
}
