// Where a tiny GEMM's time goes on the GPU: minimal kernels beside the crate's skinny kernels,
// each launched 50 times back to back behind a spin kernel with an event between launches (as the
// crate's benchmarks time), median per launch. One line of JSON per kernel.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I cutlass_glue/include -cudart static bench/floor/harness.cu
#define CUTLASS_AOT_DEVICE_PASS 1
#include "cutlass_aot/skinny.cuh"
#include <cstdio>
#include "timing.cuh"

__global__ void empty() {}
__global__ void empty_smem32k(float* out) {
  __shared__ float s[8192];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 1000) out[0] = s[threadIdx.x + 1];
}
__global__ void one_load(const float* x, float* out) { out[threadIdx.x] = x[threadIdx.x] * 2.f; }
__global__ void two_loads(const float* x, const int* idx, float* out) {
  out[threadIdx.x] = x[idx[threadIdx.x]] * 2.f;  // the second load depends on the first
}
__global__ void load_sync_load(const float* x, const float* y, float* out) {
  __shared__ float s[256];
  s[threadIdx.x] = y[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = x[threadIdx.x] * s[255 - threadIdx.x];
}

// 50 launches after 5 warm-up ones.
template <typename F> float time_us50(F launch) { return time_us(launch, 50, 5); }

int main() {
  float *x, *y, *out; int* idx;
  cudaMalloc(&x, 1 << 20); cudaMalloc(&y, 1 << 20); cudaMalloc(&out, 1 << 20); cudaMalloc(&idx, 1 << 20);
  cudaMemset(x, 0, 1 << 20); cudaMemset(y, 0, 1 << 20); cudaMemset(idx, 0, 1 << 20);
  auto row = [](const char* name, int threads, float us) {
    printf("{\"kernel\":\"%s\",\"threads\":%d,\"us\":%.2f}\n", name, threads, us);
  };
  for (int threads : {32, 128, 256}) {
    row("empty", threads, time_us50([&] { empty<<<1, threads>>>(); }));
    row("one_load", threads, time_us50([&] { one_load<<<1, threads>>>(x, out); }));
    row("two_dependent_loads", threads, time_us50([&] { two_loads<<<1, threads>>>(x, idx, out); }));
    row("load_sync_load", threads, time_us50([&] { load_sync_load<<<1, threads>>>(x, y, out); }));
  }
  row("empty_smem32k", 256, time_us50([&] { empty_smem32k<<<1, 256>>>(out); }));
  // The crate's skinny kernels on out (2 x 1) = X (2 x 2) * Y (2 x 1), f32, both forms.
  cutlass_aot_skinny_args a{};
  a.rows = 2; a.cols = 1; a.depth = 2; a.batch = 1; a.alpha = 1; a.beta = 0; a.slices = 1; a.slice_depth = 2;
  a.x.base = (uint64_t)x; a.y.base = (uint64_t)y; a.d.base = (uint64_t)out; a.c = a.d;
  a.x.row_stride = 2; a.x.col_stride = 1; a.y.row_stride = 1; a.y.col_stride = 1; a.d.row_stride = 1; a.d.col_stride = 1;
  void* params[] = {&a};
  row("skinny_dot_f32_n1 2x1x2", 256, time_us50([&] { cudaLaunchKernel((void*)cutlass_aot_skinny_dot_f32_n1, dim3(1), dim3(256), params, 0, 0); }));
  cutlass_aot_skinny_args b = a;
  b.x.row_stride = 1; b.x.col_stride = 2;
  void* params_b[] = {&b};
  row("skinny_axpy_f32_n1 2x1x2", 128, time_us50([&] { cudaLaunchKernel((void*)cutlass_aot_skinny_axpy_f32_n1, dim3(1), dim3(128), params_b, 0, 0); }));
  cudaError_t st = cudaDeviceSynchronize();
  fprintf(stderr, "%s\n", cudaGetErrorString(st));
}
