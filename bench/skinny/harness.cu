// Times and checks the skinny GEMM kernels (cutlass_aot/skinny.cuh, narrow.cuh) outside the crate:
// for each problem on stdin ("dtype layout m n k batch", layout = A and B letters, t row-major,
// n column-major, C row-major) every orientation with at most 64 columns (CUDA-core forms, in
// groups of 16; tensor form, 16-bit) at every split of K, and the tiny forms unsplit where
// dispatch offers them, one JSON line each: the median time of
// 20 launches (kernel + reduction) with an event between consecutive ones, queued behind a spin
// kernel, and the relative error against an f64 reference on the GPU. The timings fit the cost
// constants of dispatch::skinny (bench/skinny/fit.py). HARNESS_TINY_ONLY=1 times the tiny forms only;
// HARNESS_SLICES=1,24,48 times those splits (ascending) instead of the powers of two up to 64.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I cutlass_glue/include -cudart static bench/skinny/harness.cu
#define CUTLASS_AOT_DEVICE_PASS 1
#include "cutlass_aot/narrow.cuh"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <cuda_runtime.h>

template <typename T> __global__ void fill(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    float v = ((h & 0xffff) / 32768.0f) - 1.0f;
    p[i] = cutlass_aot_skinny::from_acc<T>(v);
  }
}
template <typename T> __global__ void ref(cutlass_aot_view A, cutlass_aot_view B, double* D, int64_t m, int64_t n, int64_t k, int64_t batch) {
  int64_t total = m * n * batch;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = e / (m * n), i = (e / n) % m, j = e % n; double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += (double)cutlass_aot_skinny::to_f32(*cutlass_aot_skinny::at<T>(A, b, i, kk)) * (double)cutlass_aot_skinny::to_f32(*cutlass_aot_skinny::at<T>(B, b, kk, j));
    D[e] = s;
  }
}
template <> __global__ void ref<double>(cutlass_aot_view A, cutlass_aot_view B, double* D, int64_t m, int64_t n, int64_t k, int64_t batch) {
  int64_t total = m * n * batch;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = e / (m * n), i = (e / n) % m, j = e % n; double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += *cutlass_aot_skinny::at<double>(A, b, i, kk) * *cutlass_aot_skinny::at<double>(B, b, kk, j);
    D[e] = s;
  }
}
template <typename T> __global__ void err(cutlass_aot_view D, const double* R, int64_t m, int64_t n, int64_t batch, double* out) {
  int64_t total = m * n * batch;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = e / (m * n), i = (e / n) % m, j = e % n;
    double v = (double)cutlass_aot_skinny::to_acc<double>(*cutlass_aot_skinny::at<T>(D, b, i, j));
    double d = fabs(v - R[e]);
    atomicAdd(&out[0], d * d); atomicAdd(&out[1], R[e] * R[e]);
  }
}

// Holds the GPU for `ns` nanoseconds, so that the timed launches queue up behind it.
__global__ void spin(long long ns) {
  long long start = clock64();
  while ((clock64() - start) < ns * 2) {}
}

typedef void (*kfn)(cutlass_aot_skinny_args);
#define NSLIST(NAME, FORM) {(void*)cutlass_aot_skinny_##FORM##_##NAME##_n1,(void*)cutlass_aot_skinny_##FORM##_##NAME##_n2,(void*)cutlass_aot_skinny_##FORM##_##NAME##_n4,(void*)cutlass_aot_skinny_##FORM##_##NAME##_n8,(void*)cutlass_aot_skinny_##FORM##_##NAME##_n16}

cutlass_aot_view view(uint64_t base, bool rowmajor, int64_t rows, int64_t cols, int64_t bs) {
  cutlass_aot_view v; v.base = base; v.batch_stride = bs;
  if (rowmajor) { v.row_stride = cols; v.col_stride = 1; } else { v.row_stride = 1; v.col_stride = rows; }
  return v;
}
cutlass_aot_view tr(cutlass_aot_view v) { std::swap(v.row_stride, v.col_stride); return v; }

static bool tiny_only = false;  // HARNESS_TINY_ONLY set: the tiny forms only

template <typename T> void run(const char* dt, void* dot[5], void* axpy[5], void* red, void* nar[4], void* tiny[2], std::string lay, int64_t m, int64_t n, int64_t k, int64_t batch) {
  T *A, *B, *D; double *R, *E;
  cudaMalloc(&A, sizeof(T) * m * k * batch + 64); cudaMalloc(&B, sizeof(T) * k * n * batch + 64); cudaMalloc(&D, sizeof(T) * m * n * batch + 64);
  cudaMalloc(&R, 8 * m * n * batch); cudaMalloc(&E, 16);
  fill<<<1024, 256>>>(A, m * k * batch, 1); fill<<<1024, 256>>>(B, k * n * batch, 2);
  cutlass_aot_view va = view((uint64_t)A, lay[0] == 't', m, k, m * k), vb = view((uint64_t)B, lay[1] == 't', k, n, k * n), vd = view((uint64_t)D, true, m, n, m * n);
  ref<T><<<1024, 256>>>(va, vb, R, m, n, k, batch);
  void* partials; size_t pbytes = (size_t)64 * m * n * batch * 8 + 256; cudaMalloc(&partials, pbytes);
  cudaEvent_t ev[21];
  for (auto& e : ev) cudaEventCreate(&e);
  for (int orient = 0; orient < 2; ++orient) {
    int64_t rows = orient ? n : m, cols = orient ? m : n;
   for (int kind = 0; kind < 4; ++kind) {
    if (tiny_only && kind < 2) continue;
    if (kind == 0 && cols > 64) continue;
    if (kind == 1 && (cols > 64 || nar == nullptr)) continue;
    // The tiny forms (2: a thread per output, 3: a warp per output) where dispatch offers them.
    if (kind == 2 && k > 64) continue;
    if (kind == 3 && rows * cols * batch > (1 << 16)) continue;
    cutlass_aot_skinny_args a{};
    a.x = orient ? tr(vb) : va; a.y = orient ? tr(va) : vb; a.d = orient ? tr(vd) : vd; a.c = a.d;
    a.rows = rows; a.cols = cols; a.depth = k; a.batch = batch; a.alpha = 1; a.beta = 0; a.partials = (uint64_t)partials;
    int nsi = cols <= 1 ? 0 : cols <= 2 ? 1 : cols <= 4 ? 2 : cols <= 8 ? 3 : 4;
    bool dotform = a.x.col_stride == 1;
    void* f = dotform ? dot[nsi] : axpy[nsi];
    int64_t rpb = dotform ? 8 * (sizeof(T) == 8 ? 2 : 4) : 256; int threads = dotform ? 256 : 128;
    int nci = cols <= 16 ? 0 : cols <= 32 ? 1 : cols <= 64 ? 2 : 3;
    if (kind == 1) { f = nar[nci]; rpb = 128; threads = 256; nsi = 4 + nci; }
    if (kind >= 2) { f = tiny[kind - 2]; threads = 128; nsi = 0; }
    // HARNESS_SLICES="1,35,...": these splits instead of the powers of two.
    std::vector<int> splits;
    if (const char* list = getenv("HARNESS_SLICES")) {
      for (const char* c = list; *c; ++c) if (c == list || c[-1] == ',') splits.push_back(atoi(c));
    } else {
      for (int s = 1; s <= 64; s *= 2) splits.push_back(s);
    }
    for (int slices : splits) {
      if (kind >= 2 && slices > 1) break;
      if (kind == 1 && slices > 1 && k / slices < 64) break;
      if (slices > 1 && k / slices < 32) break;
      // As support::skinny slices: the narrow form's slices a multiple of 4 deep (its vector loads).
      a.slice_depth = (k + slices - 1) / slices;
      if (kind == 1 && slices > 1) a.slice_depth = (a.slice_depth + 3) / 4 * 4;
      a.slices = (int)((k + a.slice_depth - 1) / a.slice_depth);
      const int64_t groups = kind == 0 ? (cols + 15) / 16 : 1;  // CUDA-core forms: 16 columns a block
      unsigned blocks = (unsigned)((rows + rpb - 1) / rpb * groups);
      dim3 grid(blocks, a.slices, (unsigned)std::min<int64_t>(batch, 65535));
      if (kind >= 2) {  // as support::skinny launches them: outputs over blocks, at most 132 x 16
        const int64_t per_block = kind == 2 ? 128 : 4;
        grid = dim3((unsigned)std::min<int64_t>((rows * cols * batch + per_block - 1) / per_block, 132 * 16), 1, 1);
      }
      void* params[] = {&a};
      auto launch = [&]() {
        cudaLaunchKernel(f, grid, dim3(threads), params, 0, 0);
        if (a.slices > 1) { const int64_t per = cutlass_aot_skinny::kReduceThreads / cutlass_aot_skinny::reduce_parts(a.slices); cudaLaunchKernel(red, dim3((unsigned)std::min<int64_t>((rows * cols * batch + per - 1) / per, 65536)), dim3(cutlass_aot_skinny::kReduceThreads), params, 0, 0); }
      };
      launch(); cudaDeviceSynchronize();
      cudaMemset(E, 0, 16); err<T><<<1024, 256>>>(vd, R, m, n, batch, E); double h[2]; cudaMemcpy(h, E, 16, cudaMemcpyDeviceToHost);
      for (int i = 0; i < 3; ++i) launch();
      // As the crate's benchmarks time: behind a spin kernel, an event between launches, the median.
      constexpr int iters = 20;
      spin<<<1, 1>>>(2000000);
      cudaEventRecord(ev[0]);
      for (int i = 0; i < iters; ++i) { launch(); cudaEventRecord(ev[i + 1]); }
      cudaEventSynchronize(ev[iters]);
      float times[iters];
      for (int i = 0; i < iters; ++i) cudaEventElapsedTime(&times[i], ev[i], ev[i + 1]);
      std::sort(times, times + iters);
      float ms = times[iters / 2];
      cudaError_t st = cudaGetLastError();
      if (st != cudaSuccess) fprintf(stderr, "%s\n", cudaGetErrorString(st));
      printf("{\"dtype\":\"%s\",\"layout\":\"%s\",\"m\":%ld,\"n\":%ld,\"k\":%ld,\"batch\":%ld,\"orient\":%d,\"form\":\"%s\",\"ns\":%d,\"slices\":%d,\"us\":%.2f,\"rel\":%.3g,\"status\":\"%s\"}\n",
             dt, lay.c_str(), m, n, k, batch, orient, kind == 3 ? "tiny_warp" : kind == 2 ? "tiny_thread" : kind ? "narrow" : dotform ? "dot" : "axpy", 1 << nsi, slices, ms * 1000, sqrt(h[0] / (h[1] + 1e-300)), cudaGetErrorString(st));
    }
   }
  }
  cudaFree(A); cudaFree(B); cudaFree(D); cudaFree(R); cudaFree(E); cudaFree(partials);
  for (auto& e : ev) cudaEventDestroy(e);
}

#define TINY(NAME) {(void*)cutlass_aot_skinny_tiny_thread_##NAME, (void*)cutlass_aot_skinny_tiny_warp_##NAME}

int main() {
  tiny_only = getenv("HARNESS_TINY_ONLY") != nullptr;
  void* d16[] = NSLIST(f16, dot); void* a16[] = NSLIST(f16, axpy);
  void* db[] = NSLIST(bf16, dot); void* ab[] = NSLIST(bf16, axpy);
  void* d32[] = NSLIST(f32, dot); void* a32[] = NSLIST(f32, axpy);
  void* d64[] = NSLIST(f64, dot); void* a64[] = NSLIST(f64, axpy);
  void* n16[] = {(void*)cutlass_aot_narrow_f16_n16, (void*)cutlass_aot_narrow_f16_n32, (void*)cutlass_aot_narrow_f16_n64, (void*)cutlass_aot_narrow_f16_n64};
  void* nb16[] = {(void*)cutlass_aot_narrow_bf16_n16, (void*)cutlass_aot_narrow_bf16_n32, (void*)cutlass_aot_narrow_bf16_n64, (void*)cutlass_aot_narrow_bf16_n64};
  void* t16[] = TINY(f16); void* tb16[] = TINY(bf16); void* t32[] = TINY(f32); void* t64[] = TINY(f64);
  char dt[16], lay[8]; long m, n, k, b;
  while (scanf("%15s %7s %ld %ld %ld %ld", dt, lay, &m, &n, &k, &b) == 6) {
    std::string d = dt;
    if (d == "f16") run<__half>(dt, d16, a16, (void*)cutlass_aot_skinny_reduce_f16, n16, t16, lay, m, n, k, b);
    else if (d == "bf16") run<__nv_bfloat16>(dt, db, ab, (void*)cutlass_aot_skinny_reduce_bf16, nb16, tb16, lay, m, n, k, b);
    else if (d == "f32") run<float>(dt, d32, a32, (void*)cutlass_aot_skinny_reduce_f32, nullptr, t32, lay, m, n, k, b);
    else if (d == "f64") run<double>(dt, d64, a64, (void*)cutlass_aot_skinny_reduce_f64, nullptr, t64, lay, m, n, k, b);
    fflush(stdout);
  }
}
