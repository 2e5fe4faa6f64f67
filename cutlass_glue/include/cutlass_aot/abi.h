/*
 * The C ABI between cutlass-aot's Rust runtime and the host code generated for each kernel.
 *
 * Plain C, fixed-width types only: Rust bindings are generated from this file by bindgen and
 * committed (src/abi/bindings.rs); a test regenerates them and fails on any difference.
 * Arguments are flat (pointers, extents, strides, scalars) — never a mirror of CUTLASS's own structs,
 * whose layout is an implementation detail of the CUTLASS version.
 */
#ifndef CUTLASS_AOT_ABI_H
#define CUTLASS_AOT_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a struct below changes; generated code and runtime must agree. */
#define CUTLASS_AOT_ABI_VERSION 1

/** Result of a prepare call. */
typedef enum cutlass_aot_status {
  CUTLASS_AOT_OK = 0,
  /** An extent or leading dimension is not a multiple of the kernel's alignment. */
  CUTLASS_AOT_ERROR_MISALIGNED_OPERAND = 1,
  /** CUTLASS rejected the problem (for example a zero or negative extent). */
  CUTLASS_AOT_ERROR_INVALID_PROBLEM = 2,
  /** The kernel cannot run this problem (for example an unsupported mode). */
  CUTLASS_AOT_ERROR_NOT_SUPPORTED = 3,
  /** The caller's Params buffer is smaller than the kernel's Params. */
  CUTLASS_AOT_ERROR_PARAMS_TOO_LARGE = 4,
  /** The launch grid exceeds the hardware limits (y and z at most 65535). */
  CUTLASS_AOT_ERROR_GRID_TOO_LARGE = 5,
  /** Any other CUTLASS status. */
  CUTLASS_AOT_ERROR_INTERNAL = 6
} cutlass_aot_status;

/** GEMM modes of CUTLASS's universal GEMM. */
typedef enum cutlass_aot_gemm_mode {
  /** One GEMM; `batch_count` is the number of serial split-K slices (1 = no split). */
  CUTLASS_AOT_MODE_GEMM = 0,
  /** `batch_count` independent GEMMs at fixed strides (an L dimension). */
  CUTLASS_AOT_MODE_BATCHED = 1
} cutlass_aot_gemm_mode;

/** D = alpha * (A @ B) + beta * C, each operand `batch_count` times at its batch stride. */
typedef struct cutlass_aot_gemm_args {
  int32_t mode; /* cutlass_aot_gemm_mode */
  int32_t m;
  int32_t n;
  int32_t k;
  int32_t batch_count;
  int32_t device_sms;   /* multiprocessors of the device that will run the kernel */
  int32_t sm_occupancy; /* resident CTAs per multiprocessor (only stream-K kernels use it) */
  int32_t reserved;
  const void *a;
  const void *b;
  const void *c;
  void *d;
  void *workspace;
  int64_t lda; /* leading dimensions, in elements */
  int64_t ldb;
  int64_t ldc;
  int64_t ldd;
  int64_t batch_stride_a; /* in elements */
  int64_t batch_stride_b;
  int64_t batch_stride_c;
  int64_t batch_stride_d;
  double alpha; /* converted to the epilogue's compute type */
  double beta;
} cutlass_aot_gemm_args;

/** Everything the runtime needs to launch the kernel once Params are built. */
typedef struct cutlass_aot_launch {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t cluster[3];
  uint32_t shared_mem_bytes;
  uint32_t params_bytes;
  uint32_t reserved;
  uint64_t workspace_bytes;
} cutlass_aot_launch;

/**
 * Builds the kernel's Params for `args` into `params` (at most `params_capacity` bytes, 16-byte
 * aligned) and fills `launch`. Never touches the GPU: safe to call on a machine without one.
 */
typedef int32_t (*cutlass_aot_gemm_prepare_fn)(const cutlass_aot_gemm_args *args, void *params,
                                               size_t params_capacity, cutlass_aot_launch *launch);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUTLASS_AOT_ABI_H */
