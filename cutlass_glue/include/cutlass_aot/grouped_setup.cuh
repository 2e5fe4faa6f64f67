/*
 * `cutlass_aot_grouped_setup`: the kernel that fills a grouped kernel's argument block from problem
 * sizes that live on the device (one A, C and D of all rows split by cumulative row offsets, one B
 * per group), so that the grouped kernel can follow on the same stream without a host round trip.
 * See `cutlass_aot_grouped_setup_args` in abi_grouped.h.
 *
 * Only the device pass defines it (every grouped unit carries one copy, whichever grouped headers
 * it includes); the runtime launches it with the parameter struct as its only argument, any grid
 * and block size (a grid-stride loop over the groups).
 */
#ifndef CUTLASS_AOT_GROUPED_SETUP_CUH
#define CUTLASS_AOT_GROUPED_SETUP_CUH

#include "cutlass_aot/abi_grouped.h"

#if defined(CUTLASS_AOT_DEVICE_PASS) && !defined(CUTLASS_AOT_GROUPED_SETUP_DEFINED)
#define CUTLASS_AOT_GROUPED_SETUP_DEFINED

extern "C" __global__ void cutlass_aot_grouped_setup(cutlass_aot_grouped_setup_args p) {
  int32_t const total = p.total_rows > 0 ? p.total_rows : 0;
  int32_t const stride = int32_t(gridDim.x * blockDim.x);
  for (int32_t g = int32_t(blockIdx.x * blockDim.x + threadIdx.x); g < p.group_count; g += stride) {
    int32_t start = g == 0 ? 0 : p.offsets[g - 1];
    int32_t end = p.offsets[g];
    start = start < 0 ? 0 : (start > total ? total : start);
    end = end < start ? start : (end > total ? total : end);

    const_cast<cutlass_aot_gemm_coord *>(p.arrays.problems)[g] =
        cutlass_aot_gemm_coord{end - start, p.n, p.k};

    char const *a = static_cast<char const *>(p.a) + int64_t(start) * p.row_step_a;
    char const *b = static_cast<char const *>(p.b) + int64_t(g) * p.group_step_b;
    char *d = static_cast<char *>(p.d) + int64_t(start) * p.row_step_d;
    // Without C (beta 0, so the epilogue does not read it) the kernel is handed D's rows, never
    // garbage.
    char const *c = p.c != nullptr ? static_cast<char const *>(p.c) + int64_t(start) * p.row_step_c
                                   : d;
    const_cast<void const **>(p.arrays.a)[g] = a;
    const_cast<void const **>(p.arrays.b)[g] = b;
    const_cast<void const **>(p.arrays.c)[g] = c;
    const_cast<void **>(p.arrays.d)[g] = d;
    const_cast<int64_t *>(p.arrays.lda)[g] = p.lda;
    const_cast<int64_t *>(p.arrays.ldb)[g] = p.ldb;
    const_cast<int64_t *>(p.arrays.ldc)[g] = p.c != nullptr ? p.ldc : p.ldd;
    const_cast<int64_t *>(p.arrays.ldd)[g] = p.ldd;
  }
}

#endif // CUTLASS_AOT_DEVICE_PASS && !CUTLASS_AOT_GROUPED_SETUP_DEFINED

#endif // CUTLASS_AOT_GROUPED_SETUP_CUH
