// The skinny kernels' two CUDA-core forms with one output column (GEMV) at other shapes than the
// crate's, each at its best slice count (the reduce kernel included), beside a 16-byte-vector read of
// X alone (`stream`). One line of JSON per (form, problem, variant); bench/floor/torch_gemv.py times
// torch.matmul on the same problems.
//   axpy (X column-major): threads per block, rows per thread, depth steps in flight, blocks per SM;
//   dot (X row-major, the decode step W x): warps per block, rows per warp, blocks per SM;
//   both with and without the next step's loads issued before this step's multiply-adds (pf).
//   nvcc -O3 -std=c++17 -arch=sm_90 -I cutlass_glue/include -cudart static bench/floor/gemv.cu
#define CUTLASS_AOT_DEVICE_PASS 1
#include "cutlass_aot/skinny.cuh"
#include <cstdio>
#include <cstdlib>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "timing.cuh"

using namespace cutlass_aot_skinny;

template <typename T, int TH, int R, int U, int MINB, bool P, bool PF>
__global__ void __launch_bounds__(TH, MINB) axpy_variant(const cutlass_aot_skinny_args a) {
  axpy<T, T, float, 1, P, TH, R, U, PF>(a);
}
template <typename T, int W, int R, int MINB, bool PF>
__global__ void __launch_bounds__(W * 32, MINB) dot_variant(const cutlass_aot_skinny_args a) {
  dot<T, T, float, 1, PF, W, R>(a);
}
template <typename T, int W, int R, int MINB>
__global__ void __launch_bounds__(W * 32, MINB) dot_vector_variant(const cutlass_aot_skinny_args a) {
  dot_vector<T, T, float, 1, W, R>(a);
}
template <typename T> __global__ void __launch_bounds__(256) reduce_variant(const cutlass_aot_skinny_args a) {
  reduce<T, float>(a);
}
__global__ void stream_read(const uint4* x, int64_t n, float* out) {
  float s = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint4 v = x[i];
    s += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
  }
  if (s == 12345.f) out[0] = s;
}

struct Problem { const char* dtype; int64_t rows, depth, batch; };

struct Best { float us; int slices; };

// The best time over slice counts of `kernel` (blocks of `threads` threads, `rows_per_block` rows).
template <typename T>
Best best_us(cutlass_aot_skinny_args a, void* kernel, int threads, int rows_per_block, float* partials) {
  Best best{1e30f, 0};
  for (int s : {1, 2, 4, 8, 16, 32, 64}) {
    if (s > a.depth) break;
    a.slice_depth = ((a.depth + s - 1) / s + 7) / 8 * 8;  // whole 16-byte vectors (dot_vector)
    a.slices = (int)((a.depth + a.slice_depth - 1) / a.slice_depth);
    a.partials = (uint64_t)partials;
    dim3 grid((unsigned)((a.rows + rows_per_block - 1) / rows_per_block), a.slices, (unsigned)std::min<int64_t>(a.batch, 65535));
    const int64_t total = a.rows * a.batch;
    const int per_block = 256 / reduce_parts(a.slices);
    dim3 rgrid((unsigned)std::min<int64_t>((total + per_block - 1) / per_block, 1 << 16));
    void* params[] = {&a};
    float us = time_us([&] {
      cudaLaunchKernel(kernel, grid, dim3(threads), params, 0, 0);
      if (a.slices > 1) cudaLaunchKernel((void*)reduce_variant<T>, rgrid, dim3(256), params, 0, 0);
    }, 30, 3);
    if (us < best.us) best = {us, a.slices};
  }
  return best;
}

template <typename T> void run(bool dot_form, const Problem& p, void* x, void* y, void* d, float* partials, float* out) {
  cutlass_aot_skinny_args a{};
  a.rows = p.rows; a.cols = 1; a.depth = p.depth; a.batch = p.batch; a.alpha = 1; a.beta = 0;
  a.x = dot_form ? cutlass_aot_view{(uint64_t)x, p.depth, 1, p.rows * p.depth}
                 : cutlass_aot_view{(uint64_t)x, 1, p.rows, p.rows * p.depth};
  a.y = {(uint64_t)y, 1, p.depth, p.depth};
  a.d = {(uint64_t)d, 1, p.rows, p.rows};
  a.c = a.d;
  const double mb = (double)p.rows * p.depth * p.batch * sizeof(T) / 1e6;
  auto row = [&](const char* v, float us, int s) {
    printf("{\"form\":\"%s\",\"problem\":\"%s %lldx1x%lld b%lld\",\"variant\":\"%s\",\"slices\":%d,\"us\":%.2f,\"gbps\":%.0f}\n",
           dot_form ? "dot" : "axpy", p.dtype, (long long)p.rows, (long long)p.depth, (long long)p.batch, v, s, us, mb * 1e3 / us);
  };
  row("stream", time_us([&] { stream_read<<<132 * 8, 256>>>((const uint4*)x, (int64_t)(mb * 1e6 / 16), out); }, 30, 3), 1);
#define AXPY(TH, R, U, MINB, PF)                                                                            \
  {                                                                                                         \
    const bool parts = row_groups<TH>(a.rows, R) != TH;                                                     \
    void* k = parts ? (void*)axpy_variant<T, TH, R, U, MINB, true, PF> : (void*)axpy_variant<T, TH, R, U, MINB, false, PF>; \
    const Best b = best_us<T>(a, k, TH, TH * R, partials);                                                  \
    row(#TH "x" #R " u" #U " b" #MINB " pf" #PF, b.us, b.slices);                                           \
  }
#define DOT(W, R, MINB, PF)                                                                            \
  {                                                                                                    \
    const Best b = best_us<T>(a, (void*)dot_variant<T, W, R, MINB, PF>, W * 32, W * R, partials);     \
    row(#W "w x" #R " b" #MINB " pf" #PF, b.us, b.slices);                                             \
  }
#define DOTV(W, R, MINB)                                                                               \
  if (a.depth % (16 / sizeof(T)) == 0) {                                                               \
    const Best b = best_us<T>(a, (void*)dot_vector_variant<T, W, R, MINB>, W * 32, W * R, partials);  \
    row("vector " #W "w x" #R " b" #MINB, b.us, b.slices);                                             \
  }
  if (!dot_form) {
    AXPY(128, 2, 16, 4, true)  // the crate's kernel
    AXPY(128, 2, 16, 4, false)
    AXPY(128, 2, 8, 4, true)
    AXPY(128, 4, 8, 4, true)
    AXPY(128, 4, 8, 2, true)
    AXPY(128, 2, 8, 8, true)
    AXPY(256, 2, 8, 4, true)
    AXPY(256, 4, 4, 2, true)
  } else {
    DOTV(8, 4, 2)  // the crate's vector kernel
    DOTV(8, 2, 4)
    DOTV(4, 4, 4)
    DOTV(8, 4, 1)
    DOT(8, 4, 2, true)  // the crate's kernel
    DOT(8, 4, 2, false)
    DOT(8, 2, 4, true)
    DOT(4, 4, 4, true)
    DOT(4, 2, 8, true)
  }
}

int main() {
  // Column-major X: the held-out problems where the axpy form ran below 0.85x torch.matmul, and
  // large ones; row-major X: decode steps (W x) of LLM projections, and odd ones.
  const Problem axpy_problems[] = {
      {"bf16", 12117, 657, 1}, {"f16", 8387, 3336, 18}, {"f32", 166, 19882, 1}, {"bf16", 93, 2080, 107},
      {"f16", 4206, 357, 67},  {"bf16", 8192, 8192, 1}, {"f16", 4096, 14336, 1}, {"f32", 1000, 3000, 5},
      {"bf16", 28672, 4096, 1}, {"f16", 777, 5003, 3},
  };
  const Problem dot_problems[] = {
      {"bf16", 8192, 8192, 1}, {"f16", 28672, 4096, 1}, {"bf16", 4096, 14336, 1}, {"f16", 8916, 3318, 1},
      {"bf16", 2048, 2048, 1}, {"f16", 1000, 777, 16}, {"f32", 518, 3579, 1}, {"bf16", 27, 20609, 1},
      {"f32", 4096, 4096, 1}, {"bf16", 12117, 657, 1}, {"bf16", 4096, 4096, 1}, {"f16", 1024, 4096, 1},
      {"bf16", 3072, 8192, 1}, {"f16", 14336, 4096, 1}, {"bf16", 8192, 28672, 1}, {"f16", 2048, 2048, 1},
  };
  const size_t bytes = (size_t)1200 << 20;
  void *x, *y, *d; float *partials, *out;
  cudaMalloc(&x, bytes); cudaMalloc(&y, 64 << 20); cudaMalloc(&d, 64 << 20); cudaMalloc(&partials, 256 << 20);
  cudaMalloc(&out, 16);
  cudaMemset(x, 0, bytes); cudaMemset(y, 0, 64 << 20);
  auto run_all = [&](bool dot_form, const Problem* problems, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      const Problem& p = problems[i];
      if (p.dtype[0] == 'b') run<__nv_bfloat16>(dot_form, p, x, y, d, partials, out);
      else if (p.dtype[1] == '1') run<__half>(dot_form, p, x, y, d, partials, out);
      else run<float>(dot_form, p, x, y, d, partials, out);
      fflush(stdout);
    }
  };
  if (getenv("GEMV_DOT_ONLY") == nullptr) run_all(false, axpy_problems, sizeof(axpy_problems) / sizeof(Problem));
  run_all(true, dot_problems, sizeof(dot_problems) / sizeof(Problem));
  cudaError_t st = cudaDeviceSynchronize();
  fprintf(stderr, "%s\n", cudaGetErrorString(st));
  return st != cudaSuccess;
}
