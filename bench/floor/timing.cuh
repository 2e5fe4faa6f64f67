// Timing as the crate's benchmarks time: warm-up launches, then `iters` launches queued behind a
// spin kernel with an event between consecutive ones; the median per launch, in microseconds.
#pragma once

#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

// Holds the GPU for about `ns` nanoseconds, so that the timed launches queue up behind it.
__global__ void spin(long long ns) {
  long long start = clock64();
  while ((clock64() - start) < ns * 2) {}
}

template <typename F> float time_us(F launch, int iters, int warmup) {
  std::vector<cudaEvent_t> ev(iters + 1);
  for (auto& e : ev) cudaEventCreate(&e);
  for (int i = 0; i < warmup; ++i) launch();
  cudaDeviceSynchronize();
  spin<<<1, 1>>>(1000000);
  cudaEventRecord(ev[0]);
  for (int i = 0; i < iters; ++i) { launch(); cudaEventRecord(ev[i + 1]); }
  cudaEventSynchronize(ev[iters]);
  std::vector<float> t(iters);
  for (int i = 0; i < iters; ++i) { cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]); t[i] *= 1000; }
  std::sort(t.begin(), t.end());
  for (auto& e : ev) cudaEventDestroy(e);
  return t[iters / 2];
}
