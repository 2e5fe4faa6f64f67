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
#define CUTLASS_AOT_ABI_VERSION 4

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
  CUTLASS_AOT_ERROR_INTERNAL = 6,
  /** The driver refused a TMA descriptor (`launch->driver_error` holds its CUresult). */
  CUTLASS_AOT_ERROR_TMA_ENCODE = 7,
  /** The problem needs `launch->workspace_bytes` of workspace, more than `workspace_capacity`. */
  CUTLASS_AOT_ERROR_WORKSPACE_TOO_SMALL = 8
} cutlass_aot_status;

/**
 * The driver's `cuTensorMapEncodeTiled`, passed in by the runtime (CUTLASS 3.x host code builds its
 * TMA descriptors through it). Same C signature as the driver's; enums are passed as int32_t.
 */
typedef int32_t (*cutlass_aot_encode_tiled_fn)(void *tensor_map, int32_t data_type, uint32_t rank,
                                               void *global_address, const uint64_t *global_dim,
                                               const uint64_t *global_strides,
                                               const uint32_t *box_dim,
                                               const uint32_t *element_strides, int32_t interleave,
                                               int32_t swizzle, int32_t l2_promotion,
                                               int32_t oob_fill);

/** GEMM modes of CUTLASS's universal GEMM. */
typedef enum cutlass_aot_gemm_mode {
  /** One GEMM (`batch_count` 1), K split into `split_k_slices` as the kernel does it. */
  CUTLASS_AOT_MODE_GEMM = 0,
  /** `batch_count` independent GEMMs at fixed strides (an L dimension). */
  CUTLASS_AOT_MODE_BATCHED = 1,
  /**
   * `batch_count` independent GEMMs whose operands are given by device arrays of pointers: `a`,
   * `b`, `c` and `d` point to `batch_count` device pointers each; batch strides are ignored.
   */
  CUTLASS_AOT_MODE_ARRAY = 2
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
  int32_t raster_order; /* 3.x tile order: 0 CUTLASS's heuristic, 1 along M, 2 along N */
  int32_t max_swizzle;  /* 3.x tile swizzle: 0 CUTLASS's default (1), else 1, 2, 4 or 8 */
  int32_t split_k_slices; /* K split into this many slices (1: none); serial, parallel or stream-K
                             as the kernel's split-K mode says (GEMM mode only) */
  const void *a;
  const void *b;
  const void *c;
  void *d;
  void *workspace;          /* device memory of `workspace_capacity` bytes, or NULL */
  uint64_t workspace_capacity;
  cutlass_aot_encode_tiled_fn encode_tiled; /* required by CUTLASS 3.x kernels */
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
  /* Operands of fused epilogues (NULL / 0 where the kernel has none; see the kernel's fusion). */
  const void *bias;         /* per-row (m) or per-column (n) vector of C's type; NULL adds 0 */
  const void *alpha_vector; /* per-row or per-column alpha of the compute type; NULL: `alpha` */
  const void *beta_vector;  /* per-row or per-column beta of the compute type; NULL: `beta` */
  void *aux;                /* aux output (the pre-activation value), or a backward kernel's aux
                               input (the forward pre-activation value): C's type and layout */
  int64_t ldaux;            /* in elements */
  int64_t batch_stride_aux; /* in elements */
  double activation_arg;    /* leaky_relu's slope */
  void *reduction;          /* row sums of D (m values of the compute type); needs a workspace */
} cutlass_aot_gemm_args;

/** Most workspace fills one prepare call may ask for. */
#define CUTLASS_AOT_MAX_FILLS 4

/**
 * A fill of part of the workspace the runtime must enqueue, in order, before the launch (CUTLASS
 * asks for these, for example to zero stream-K or split-K semaphores).
 */
typedef struct cutlass_aot_fill {
  uint64_t offset;       /* bytes from the start of the workspace */
  uint64_t count;        /* elements */
  uint32_t element_bytes; /* 1, 2 or 4 */
  uint32_t value;        /* the element's bits */
} cutlass_aot_fill;

/** Everything the runtime needs to launch the kernel once Params are built. */
typedef struct cutlass_aot_launch {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t cluster[3]; /* 1x1x1: a plain launch; otherwise a cluster launch */
  uint32_t shared_mem_bytes;
  uint32_t params_bytes;
  int32_t driver_error; /* CUresult of a failed TMA encode, else 0 */
  uint64_t workspace_bytes;
  uint32_t fill_count;
  uint32_t reserved;
  cutlass_aot_fill fills[CUTLASS_AOT_MAX_FILLS];
} cutlass_aot_launch;

/**
 * Builds the kernel's Params for `args` into `params` (at most `params_capacity` bytes, 16-byte
 * aligned) and fills `launch`. Never touches the GPU: safe to call on a machine without one.
 *
 * Kernels with parallel split-K have a second entry, `NAME_reduce`, with its own prepare function
 * of this type (`NAME_reduce_prepare`): given the same `args` (and workspace) it builds the Params
 * of the reduction kernel that adds the GEMM's partial sums and applies the epilogue. The runtime
 * launches the GEMM, then the reduction, on one stream.
 */
typedef int32_t (*cutlass_aot_gemm_prepare_fn)(const cutlass_aot_gemm_args *args, void *params,
                                               size_t params_capacity, cutlass_aot_launch *launch);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUTLASS_AOT_ABI_H */
