// RMSNorm over the rows of an f16 matrix: y[i, j] = x[i, j] / sqrt(mean_j(x[i, :]^2) + eps) * gamma[j],
// in f32. One block per row; THREADS (the manifest's design value `threads`) is the block size.
// CUB (shipped with the CUDA toolkit, as CUTLASS's headers are) does the block reduction.
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cuda_fp16.h>

extern "C" __global__ void __launch_bounds__(THREADS)
rms_norm_f16(int32_t rows, int32_t cols, const __half* x, int32_t ldx, const float* gamma, __half* y,
             int32_t ldy, float eps) {
  using Reduce = cub::BlockReduce<float, THREADS>;
  __shared__ typename Reduce::TempStorage scratch;
  __shared__ float inv_rms;
  const __half* x_row = x + static_cast<int64_t>(blockIdx.x) * ldx;
  float squares = 0.0f;
  for (int32_t j = threadIdx.x; j < cols; j += THREADS) {
    float v = __half2float(x_row[j]);
    squares += v * v;
  }
  float total = Reduce(scratch).Sum(squares);
  if (threadIdx.x == 0) {
    inv_rms = rsqrtf(total / static_cast<float>(cols) + eps);
  }
  __syncthreads();
  __half* y_row = y + static_cast<int64_t>(blockIdx.x) * ldy;
  for (int32_t j = threadIdx.x; j < cols; j += THREADS) {
    y_row[j] = __float2half(__half2float(x_row[j]) * inv_rms * gamma[j]);
  }
}
