/* blkc_runtime.h — the public API of libblkc_runtime: the small library that
 * kernels compiled ahead of time (`blkc compile --emit=aot -o NAME`) link
 * against. It holds no compiler: a CPU thread pool, the CUDA driver API
 * loaded with dlopen, error messages, and the few helpers the generated CPU
 * code calls (f16/bf16/f8 conversions, signal cells).
 *
 * Most programs only use blkc_rt_tensor, blkc_rt_tensor_init,
 * blkc_rt_launch and blkc_rt_last_error, plus the typed launchers that the
 * generated NAME.h declares. The "for generated code" part is what those
 * launchers call.
 *
 * Errors: every call returns 0 (BLKC_RT_OK) or an error code; the message
 * of the last failure on the calling thread is blkc_rt_last_error(). The
 * library never prints, exits or aborts.
 *
 * Link: -lblkc_runtime -lm (pkg-config blkc_runtime; CMake blkc::runtime). */
#ifndef BLKC_BLKC_RUNTIME_H
#define BLKC_BLKC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BLKC_RT_BUILDING)
#define BLKC_RT_API __attribute__((visibility("default")))
#else
#define BLKC_RT_API
#endif

/* Version of the runtime ABI the generated files are written against. */
#define BLKC_RT_ABI_VERSION 1
#define BLKC_RT_MAX_RANK 8     /* most dims a tensor may have */

/* Return codes (the same values as libblkc's blkc_status). */
typedef enum blkc_rt_status {
    BLKC_RT_OK = 0,
    BLKC_RT_ERR_USAGE = 2,       /* bad arguments (rank, dtype, extents) */
    BLKC_RT_ERR_RUNTIME = 3,     /* launch or device failure */
    BLKC_RT_ERR_NOMEM = 4,       /* out of memory */
    BLKC_RT_ERR_UNSUPPORTED = 6, /* e.g. no CUDA driver on this machine */
} blkc_rt_status;

/* Element types, named as in .blk sources. */
typedef enum blkc_rt_dtype {
    BLKC_RT_BOOL = 1, /* one byte, 0 or 1 */
    BLKC_RT_I8, BLKC_RT_I16, BLKC_RT_I32, BLKC_RT_I64,
    BLKC_RT_U8, BLKC_RT_U16, BLKC_RT_U32, BLKC_RT_U64,
    BLKC_RT_F16,      /* IEEE half, as its 16-bit pattern */
    BLKC_RT_BF16,     /* bfloat16, as its 16-bit pattern */
    BLKC_RT_F32, BLKC_RT_F64,
    BLKC_RT_F8E4M3, BLKC_RT_F8E5M2,
} blkc_rt_dtype;

/* A tensor argument: data (host memory for CPU kernels, a CUdeviceptr for
 * CUDA kernels), element type, rank, extents and strides in elements
 * (strides may be 0 or negative). Dims past ndim are ignored. */
typedef struct blkc_rt_tensor {
    void *data;                         /* element (0, ..., 0) */
    int32_t dtype;                      /* blkc_rt_dtype */
    int32_t ndim;                       /* 0 .. BLKC_RT_MAX_RANK */
    int64_t shape[BLKC_RT_MAX_RANK];
    int64_t stride[BLKC_RT_MAX_RANK];
} blkc_rt_tensor;

/* Fill t for a contiguous row-major tensor. Returns 0, or BLKC_RT_ERR_USAGE
 * for a bad ndim or a negative extent. */
BLKC_RT_API int blkc_rt_tensor_init(blkc_rt_tensor *t, void *data,
                                    blkc_rt_dtype dtype, int ndim,
                                    const int64_t *shape);

/* Launch options; pass NULL for the defaults. */
typedef struct blkc_rt_launch {
    int64_t grid[3];   /* all 0 = the grid the kernel's grid(...) computes */
    void *stream;      /* CUDA: a CUstream (NULL = the default stream);
                          CPU: unused */
} blkc_rt_launch;
BLKC_RT_API void blkc_rt_launch_init(blkc_rt_launch *o);

BLKC_RT_API const char *blkc_rt_last_error(void);  /* "" if none */
BLKC_RT_API const char *blkc_rt_dtype_name(int dtype); /* "f32"; "?" */
BLKC_RT_API int blkc_rt_num_threads(void);  /* CPU pool size (0: no pool) */

/* ------------------------------------------------------------ for generated code */

/* Record a message for blkc_rt_last_error() and return `code`. */
BLKC_RT_API int blkc_rt_error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Check a tensor argument against its declared dtype and rank (param is the
 * .blk name, for messages). Returns 0 or BLKC_RT_ERR_USAGE. */
BLKC_RT_API int blkc_rt_check_tensor(const char *kernel, const char *param,
                                     const blkc_rt_tensor *t, int dtype,
                                     int ndim);

/* The CPU kernel ABI's tensor descriptor (backends/backend.h BkTensorDesc). */
typedef struct blkc_rt_kernel_tensor {
    void *data;
    int64_t shape[BLKC_RT_MAX_RANK];
    int64_t stride[BLKC_RT_MAX_RANK];
} blkc_rt_kernel_tensor;

/* A CPU kernel's range entry: runs program instances first..last-1 of the
 * linearised grid. */
typedef void (*blkc_rt_range_fn)(void *const *args, int64_t first,
                                 int64_t last, const int32_t *nprog);

/* Run fn over `grid` (or opts->grid when non-zero) on the thread pool;
 * blocks until every program instance has run. */
BLKC_RT_API int blkc_rt_cpu_launch(const char *kernel, blkc_rt_range_fn fn,
                                   void *const *args, const int64_t grid[3],
                                   const blkc_rt_launch *opts);

/* An embedded CUDA binary (cubin or PTX). `state` belongs to the runtime
 * (the loaded modules); start it as NULL. */
typedef struct blkc_rt_cuda_image {
    const unsigned char *data;
    size_t size;
    void *state;
} blkc_rt_cuda_image;

/* Load img into the current CUDA context (or device 0's primary context,
 * made current, when there is none) once, then launch `kernel` (the
 * kernel's .blk name; its symbol in the image is blk_k_NAME) with
 * blockDim.x = threads and smem_bytes of dynamic shared memory on
 * opts->stream. params[i] points at kernel parameter i. Asynchronous like
 * cuLaunchKernel. BLKC_RT_ERR_UNSUPPORTED when libcuda.so.1 is absent. */
BLKC_RT_API int blkc_rt_cuda_launch(blkc_rt_cuda_image *img,
                                    const char *kernel, const int64_t grid[3],
                                    int threads, int64_t smem_bytes,
                                    void **params, const blkc_rt_launch *opts);

#ifdef __cplusplus
}
#endif

#endif
