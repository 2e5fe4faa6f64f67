// Times the staging copies of cutlass_aot/support.cuh outside the crate: for each case on stdin
// ("rows cols src_ld kind", 2-byte elements, row-major source rows x cols with leading dimension
// src_ld; kind rows = same layout into a packed destination whose ld is cols rounded up to 8,
// out = the other way (a packed source, the destination's ld src_ld),
// tile = transposed into a column-major destination of ld rows rounded up to 8), the median over 5
// runs of 20 back-to-back launches with the crate's grid rule (min(work, 16 SMs' worth)), and a device-to-device
// cudaMemcpy of the same bytes beside it. One JSON line per case; fits STAGING_* in select::cost.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I cutlass_glue/include -cudart static bench/staging/harness.cu
#define CUTLASS_AOT_DEVICE_PASS 1
#include "cutlass_aot/support.cuh"
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

static int sms = 132;

__global__ void fill(uint16_t* p, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = uint16_t(i * 2654435761u >> 7);
}

// Wrong elements of the destination (the source's element, zeros in the padding).
static long check(const uint16_t* src, const uint16_t* dst, long rows, long cols, long ld, long dst_ld,
                  bool tile, long width) {
  std::vector<uint16_t> s(rows * ld), d(tile ? dst_ld * cols : dst_ld * rows);
  cudaMemcpy(s.data(), src, s.size() * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(d.data(), dst, d.size() * 2, cudaMemcpyDeviceToHost);
  long wrong = 0;
  for (long r = 0; r < (tile ? dst_ld : rows); ++r)
    for (long c = 0; c < (tile ? cols : width); ++c) {
      const uint16_t want = r < rows && c < cols ? s[r * ld + c] : 0;
      wrong += (tile ? d[c * dst_ld + r] : d[r * dst_ld + c]) != want;
    }
  return wrong;
}

static float median_us(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] * 1000.0f;
}

template <typename F> static float time_us(F launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  launch();
  for (int i = 0; i < 5; ++i) {
    cudaEventRecord(a);
    for (int j = 0; j < 20; ++j) launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms / 20);
  }
  return median_us(t);
}

int main() {
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  long rows, cols, ld;
  char kind[16];
  while (scanf("%ld %ld %ld %15s", &rows, &cols, &ld, kind) == 4) {
    const bool tile = strcmp(kind, "tile") == 0;
    long dst_ld = tile ? (rows + 7) / 8 * 8 : (cols + 7) / 8 * 8;
    const bool out = strcmp(kind, "out") == 0;
    if (out) std::swap(ld, dst_ld);  // a packed source, the given ld out
    const long dst_elems = tile ? dst_ld * cols : dst_ld * rows;
    uint16_t *src, *dst;
    cudaMalloc(&src, rows * ld * 2);
    cudaMalloc(&dst, dst_elems * 2);
    fill<<<1024, 256>>>(src, rows * ld);
    cudaMemset(dst, 0xff, dst_elems * 2);
    float us;
    if (tile) {
      cutlass_aot_copy_args a{};
      a.src = {uint64_t(src), ld, 1, 0};
      a.dst = {uint64_t(dst), 1, dst_ld, 0};
      a.rows = rows; a.cols = cols; a.batch = 1; a.dst_rows = dst_ld; a.dst_cols = cols;
      const long tile_size = cutlass_aot_support::kTile;
      long tiles = (dst_ld + tile_size - 1) / tile_size * ((cols + tile_size - 1) / tile_size);
      int blocks = (int)std::min<long>(tiles, sms * 16);
      us = time_us([&] { cutlass_aot_copy_b2<<<blocks, dim3(32, 8)>>>(a); });
    } else {
      cutlass_aot_copy4_batch_args b{};
      b.count = 1;
      cutlass_aot_copy4_args& a = b.copies[0];
      a.src = {uint64_t(src), {0, ld, 0, 1}};
      a.dst = {uint64_t(dst), {0, dst_ld, 0, 1}};
      long ext[4] = {1, rows, 1, out ? cols : dst_ld}, sext[4] = {1, rows, 1, cols};
      memcpy(a.extent, ext, sizeof ext);
      memcpy(a.src_extent, sext, sizeof sext);
      long units = rows * ((dst_ld + 7) / 8);
      int blocks = (int)std::min<long>((units + 255) / 256, sms * 16);
      us = time_us([&] { cutlass_aot_copy4_b2<<<dim3(blocks, 1), 256>>>(b); });
    }
    cudaError_t e = cudaDeviceSynchronize();
    const long wrong = check(src, dst, rows, cols, ld, dst_ld, tile, out ? cols : dst_ld);
    const double bytes = 2.0 * (rows * cols + dst_elems);
    float memcpy_us = time_us([&] { cudaMemcpyAsync(dst, src, rows * cols * 2, cudaMemcpyDeviceToDevice); });
    printf("{\"rows\": %ld, \"cols\": %ld, \"src_ld\": %ld, \"kind\": \"%s\", \"us\": %.2f, \"gbps\": %.0f, "
           "\"memcpy_us\": %.2f, \"memcpy_gbps\": %.0f, \"wrong\": %ld, \"error\": \"%s\"}\n",
           rows, cols, ld, kind, us, bytes / us / 1e3, memcpy_us, 4.0 * rows * cols / memcpy_us / 1e3,
           wrong, cudaGetErrorString(e));
    cudaFree(src);
    cudaFree(dst);
  }
  return 0;
}
