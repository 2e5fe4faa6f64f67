// The direct fprop of few channels (cutlass_aot/conv_small.cuh, conv::small) timed outside the
// crate and checked against an f64 reference, one JSON line per problem and output channels a
// thread (8, 16, 32): the timings its cost model is fitted on (bench/conv_small/fit.py). Problems
// on stdin: "n h w c k r s pad stride dilation" (f16, NHWC activations, KRSC filter, NPQK output).
//   nvcc -O3 -std=c++17 -arch=sm_90 -I cutlass_glue/include -I bench/floor bench/conv_small/harness.cu
#define CUTLASS_AOT_DEVICE_PASS 1
#include "cutlass_aot/conv_small.cuh"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include "timing.cuh"

struct Args {
  const __half* x; const __half* w; __half* d;
  int n, h, w_, c, k, r, s, p, q, pad, stride, dil;
};

__global__ void fill(__half* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = __float2half(((h & 0xffff) / 32768.0f) - 1.0f);
  }
}
__global__ void ref(Args a, double* err) {
  const int64_t total = (int64_t)a.n * a.p * a.q * a.k;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int k = e % a.k; const int64_t pix = e / a.k;
    const int q = pix % a.q, p = (pix / a.q) % a.p, n = pix / ((int64_t)a.p * a.q);
    double s = 0;
    for (int r = 0; r < a.r; ++r) for (int t = 0; t < a.s; ++t) {
      const int ih = p * a.stride - a.pad + r * a.dil, iw = q * a.stride - a.pad + t * a.dil;
      if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w_) continue;
      for (int c = 0; c < a.c; ++c)
        s += (double)__half2float(a.x[(((int64_t)n * a.h + ih) * a.w_ + iw) * a.c + c]) *
             (double)__half2float(a.w[(((int64_t)k * a.r + r) * a.s + t) * a.c + c]);
    }
    const double d = (double)__half2float(a.d[e]) - s;
    atomicAdd(err, d * d); atomicAdd(err + 1, s * s);
  }
}

template <int KT> void run(Args a, void (*kernel)(cutlass_aot_conv_small_args)) {
  const int rsc = a.r * a.s * a.c;
  const size_t smem = 4 * (size_t)std::max(rsc * KT, 256 * (KT + 1));
  if (smem > 48 * 1024) return;
  const int64_t npq = (int64_t)a.n * a.p * a.q;
  cutlass_aot_conv_small_args args{(uint64_t)a.x, (uint64_t)a.w, 0, (uint64_t)a.d, a.n, a.h, a.w_, a.c, a.k, a.r, a.s,
                                   a.p, a.q, a.pad, a.pad, a.stride, a.stride, a.dil, a.dil, 1.f, 0.f};
  dim3 grid((unsigned)((npq + 255) / 256), (unsigned)((a.k + KT - 1) / KT));
  auto launch = [&] { kernel<<<grid, 256, smem>>>(args); };
  cudaMemset(a.d, 0, npq * a.k * 2);
  launch(); cudaDeviceSynchronize();
  double* e; cudaMalloc(&e, 16); cudaMemset(e, 0, 16);
  ref<<<1024, 256>>>(a, e); double h[2]; cudaMemcpy(h, e, 16, cudaMemcpyDeviceToHost); cudaFree(e);
  const float us = time_us(launch, 20, 3);
  cudaError_t st = cudaGetLastError();
  printf("{\"n\":%d,\"h\":%d,\"w\":%d,\"c\":%d,\"k\":%d,\"r\":%d,\"s\":%d,\"pad\":%d,\"stride\":%d,\"dilation\":%d,\"kt\":%d,\"smem\":%zu,\"us\":%.2f,\"rel\":%.3g,\"status\":\"%s\"}\n",
         a.n, a.h, a.w_, a.c, a.k, a.r, a.s, a.pad, a.stride, a.dil, KT, smem, us, sqrt(h[0] / (h[1] + 1e-300)), cudaGetErrorString(st));
  fflush(stdout);
}

int main() {
  Args a{};
  while (scanf("%d %d %d %d %d %d %d %d %d %d", &a.n, &a.h, &a.w_, &a.c, &a.k, &a.r, &a.s, &a.pad, &a.stride, &a.dil) == 10) {
    a.p = (a.h + 2 * a.pad - a.dil * (a.r - 1) - 1) / a.stride + 1;
    a.q = (a.w_ + 2 * a.pad - a.dil * (a.s - 1) - 1) / a.stride + 1;
    __half *x, *w, *d;
    cudaMalloc(&x, (size_t)a.n * a.h * a.w_ * a.c * 2 + 16); cudaMalloc(&w, (size_t)a.k * a.r * a.s * a.c * 2 + 16);
    cudaMalloc(&d, (size_t)a.n * a.p * a.q * a.k * 2 + 16);
    fill<<<1024, 256>>>(x, (int64_t)a.n * a.h * a.w_ * a.c, 1); fill<<<1024, 256>>>(w, (int64_t)a.k * a.r * a.s * a.c, 2);
    a.x = x; a.w = w; a.d = d;
    run<8>(a, cutlass_aot_conv_small_fprop_f16_kt8);
    run<16>(a, cutlass_aot_conv_small_fprop_f16_kt16);
    run<32>(a, cutlass_aot_conv_small_fprop_f16_kt32);
    cudaFree(x); cudaFree(w); cudaFree(d);
  }
}
