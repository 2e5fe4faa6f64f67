// Direct fprop for convolutions of few taps x channels (the stems of image models: C = 1-16,
// R*S*C small), on CUDA cores: each thread computes one output pixel for KT output channels,
// the block's KT filters resident in shared memory as f32 [r][s][c][KT] (every thread reads the
// same entry at once: a broadcast); the same memory then stages the block's outputs (256 rows of
// KT + 1 floats) so that the stores run along channels. NHWC activations and output, KRSC
// filter, all packed; f32 accumulation; out = alpha * conv + beta * C. A unit-stride dgrad of few
// input channels runs as the fprop over dy (`dgrad`). Where a product has a few thousand
// multiply-adds per output pixel or more, tensor-core kernels win: the runtime's cost model chooses.
#pragma once

#include "skinny.cuh"

#ifdef CUTLASS_AOT_DEVICE_PASS

struct cutlass_aot_conv_small_args {
  uint64_t x, w, c, d;  // activations, filter, C (0: none), output
  int32_t n, h, w_, ch, k, r, s, p, q;
  int32_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  float alpha, beta;
  // 1: a unit-stride dgrad as this fprop over dy: the filter read flipped and with its channel
  // dimensions swapped (w[k][r][s][c] feeds output channel c from input channel k at tap R-1-r).
  int32_t dgrad;
};

namespace cutlass_aot_conv_small {

constexpr int kThreads = 256;

template <typename T, int KT>
__device__ void fprop(const cutlass_aot_conv_small_args& a) {
  using cutlass_aot_skinny::from_acc;
  using cutlass_aot_skinny::to_f32;
  extern __shared__ float4 shared4[];
  float* wf = reinterpret_cast<float*>(shared4);
  const T* x = reinterpret_cast<const T*>(a.x);
  const T* w = reinterpret_cast<const T*>(a.w);
  const int rsc = a.r * a.s * a.ch, k0 = blockIdx.y * KT;
  for (int i = threadIdx.x; i < rsc * KT; i += kThreads) {
    const int kk = i % KT, e = i / KT;
    int64_t at = (int64_t)(k0 + kk) * rsc + e;
    if (a.dgrad) {
      const int c = e % a.ch, s = (e / a.ch) % a.s, r = e / (a.ch * a.s);
      at = (((int64_t)c * a.r + (a.r - 1 - r)) * a.s + (a.s - 1 - s)) * a.k + k0 + kk;
    }
    wf[i] = k0 + kk < a.k ? to_f32(w[at]) : 0.f;
  }
  __syncthreads();
  const int64_t pixels = (int64_t)a.n * a.p * a.q, pix0 = (int64_t)blockIdx.x * kThreads;
  const int64_t pix = pix0 + threadIdx.x;
  float acc[KT];
#pragma unroll
  for (int i = 0; i < KT; ++i) acc[i] = 0.f;
  if (pix < pixels) {
    const int q = (int)(pix % a.q), p = (int)((pix / a.q) % a.p);
    const int64_t n = pix / ((int64_t)a.p * a.q);
    for (int r = 0; r < a.r; ++r) {
      const int ih = p * a.stride_h - a.pad_h + r * a.dil_h;
      if (ih < 0 || ih >= a.h) continue;
      for (int s = 0; s < a.s; ++s) {
        const int iw = q * a.stride_w - a.pad_w + s * a.dil_w;
        if (iw < 0 || iw >= a.w_) continue;
        const T* xp = x + ((n * a.h + ih) * a.w_ + iw) * a.ch;
        const float4* f = shared4 + (r * a.s + s) * a.ch * (KT / 4);
        for (int c = 0; c < a.ch; ++c) {
          const float v = to_f32(xp[c]);
#pragma unroll
          for (int i = 0; i < KT / 4; ++i) {
            const float4 g = f[c * (KT / 4) + i];
            acc[4 * i] += v * g.x;
            acc[4 * i + 1] += v * g.y;
            acc[4 * i + 2] += v * g.z;
            acc[4 * i + 3] += v * g.w;
          }
        }
      }
    }
  }
  // The block's outputs through shared memory (rows of KT + 1 floats: no bank conflicts), then
  // written with consecutive threads on consecutive channels of a pixel: a warp's stores cover a
  // few runs of KT elements, not 32 pixels KT times over.
  __syncthreads();
#pragma unroll
  for (int i = 0; i < KT; ++i) wf[threadIdx.x * (KT + 1) + i] = acc[i];
  __syncthreads();
  T* out = reinterpret_cast<T*>(a.d);
  const T* cin = reinterpret_cast<const T*>(a.c);
  for (int e = threadIdx.x; e < kThreads * KT; e += kThreads) {
    const int row = e / KT, col = e % KT;
    const int64_t at = (pix0 + row) * a.k + k0 + col;
    if (pix0 + row < pixels && k0 + col < a.k) {
      float v = a.alpha * wf[row * (KT + 1) + col];
      if (cin != nullptr && a.beta != 0.f) v += a.beta * to_f32(cin[at]);
      out[at] = from_acc<T>(v);
    }
  }
}

}  // namespace cutlass_aot_conv_small

#define CUTLASS_AOT_CONV_SMALL(NAME, T, KT)                                                            \
  extern "C" __global__ void __launch_bounds__(256) cutlass_aot_conv_small_fprop_##NAME##_kt##KT(      \
      const cutlass_aot_conv_small_args args) {                                                        \
    cutlass_aot_conv_small::fprop<T, KT>(args);                                                        \
  }
#define CUTLASS_AOT_CONV_SMALL_ALL(NAME, T) \
  CUTLASS_AOT_CONV_SMALL(NAME, T, 8)        \
  CUTLASS_AOT_CONV_SMALL(NAME, T, 16)       \
  CUTLASS_AOT_CONV_SMALL(NAME, T, 32)
CUTLASS_AOT_CONV_SMALL_ALL(f16, __half)
CUTLASS_AOT_CONV_SMALL_ALL(bf16, __nv_bfloat16)
CUTLASS_AOT_CONV_SMALL_ALL(f32, float)

#endif  // CUTLASS_AOT_DEVICE_PASS
