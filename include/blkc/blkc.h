/* blkc.h — the public C API of libblkc: compile .blk source, JIT it, launch
 * kernels with DLPack tensors. Opaque handles with _create/_destroy pairs.
 *
 * Errors: every call returns a blkc_status; the message for the last failed
 * call on the calling thread is blkc_last_error() (diagnostics of a failed
 * compile are there too, as `file:line:col: error: ...` lines). The library
 * never prints, exits or aborts on user input.
 *
 * Thread safety: contexts, modules and kernels may be used from several
 * threads at once; launches of the same kernel may run concurrently. */
#ifndef BLKC_BLKC_H
#define BLKC_BLKC_H

#include <stddef.h>
#include <stdint.h>
#include "dlpack.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BLKC_BUILDING)
#define BLKC_API __attribute__((visibility("default")))
#else
#define BLKC_API
#endif

#define BLKC_VERSION_MAJOR 0
#define BLKC_VERSION_MINOR 1
#define BLKC_VERSION_PATCH 0

typedef enum blkc_status {
    BLKC_OK = 0,
    BLKC_ERR_COMPILE = 1,     /* the program has errors (diagnostics) */
    BLKC_ERR_USAGE = 2,       /* bad arguments to an API call */
    BLKC_ERR_RUNTIME = 3,     /* launch, device, I/O, timeout */
    BLKC_ERR_NOMEM = 4,       /* out of memory */
    BLKC_ERR_NOT_FOUND = 5,   /* no such kernel / file */
    BLKC_ERR_UNSUPPORTED = 6, /* target or feature not available here */
} blkc_status;

typedef enum blkc_target {
    BLKC_TARGET_CPU = 0,
    BLKC_TARGET_CUDA = 1,
    BLKC_TARGET_HIP = 2,
} blkc_target;

typedef struct blkc_context blkc_context;
typedef struct blkc_module blkc_module;
typedef struct blkc_kernel blkc_kernel; /* owned by its module */

typedef struct blkc_compile_options {
    blkc_target target;        /* default BLKC_TARGET_CPU */
    const char *arch;          /* "sm_90", "gfx90a"; NULL = default */
    const char *const *defines;/* "NAME=VALUE" overrides of consts and
                                  compile-time params */
    int ndefines;
    int opt_level;             /* 0..3; 0 means default (3) */
    const char *filename;      /* name shown in diagnostics; NULL = "<input>" */
} blkc_compile_options;

typedef enum blkc_arg_kind {
    BLKC_ARG_TENSOR = 0,
    BLKC_ARG_INT = 1,          /* any integer or bool scalar param */
    BLKC_ARG_FLOAT = 2,        /* any float scalar param */
} blkc_arg_kind;

typedef struct blkc_arg {
    blkc_arg_kind kind;
    union {
        const DLTensor *tensor;
        int64_t i;
        double f;
    } v;
} blkc_arg;

typedef struct blkc_launch_options {
    int64_t grid[3];           /* all 0 = the kernel's grid(...) */
    void *stream;              /* GPU stream; NULL = default */
} blkc_launch_options;

/* version / errors */
BLKC_API const char *blkc_version(void);           /* "0.1.0" */
BLKC_API const char *blkc_last_error(void);        /* thread-local; "" if none */
BLKC_API const char *blkc_status_string(blkc_status s);

/* contexts: device "cpu", "cuda", "cuda:N", "hip", "hip:N" */
BLKC_API blkc_status blkc_context_create(const char *device,
                                         blkc_context **out);
BLKC_API void blkc_context_destroy(blkc_context *ctx);

/* modules */
BLKC_API void blkc_compile_options_init(blkc_compile_options *o);
BLKC_API blkc_status blkc_module_create(blkc_context *ctx, const char *source,
                                        size_t len,
                                        const blkc_compile_options *opts,
                                        blkc_module **out);
BLKC_API blkc_status blkc_module_create_from_file(
    blkc_context *ctx, const char *path, const blkc_compile_options *opts,
    blkc_module **out);
BLKC_API void blkc_module_destroy(blkc_module *m);
BLKC_API int blkc_module_kernel_count(const blkc_module *m);
BLKC_API const char *blkc_module_kernel_name(const blkc_module *m, int i);
BLKC_API blkc_status blkc_module_get_kernel(blkc_module *m, const char *name,
                                            blkc_kernel **out);

/* kernel introspection */
BLKC_API int blkc_kernel_param_count(const blkc_kernel *k);
BLKC_API const char *blkc_kernel_param_name(const blkc_kernel *k, int i);
/* 1 if param i is a tensor, 0 if a scalar */
BLKC_API int blkc_kernel_param_is_tensor(const blkc_kernel *k, int i);

/* launch: one blkc_arg per parameter in declaration order */
BLKC_API void blkc_launch_options_init(blkc_launch_options *o);
BLKC_API blkc_status blkc_kernel_launch(blkc_kernel *k, const blkc_arg *args,
                                        int nargs,
                                        const blkc_launch_options *opts);

/* text/binary stages: "ast", "core", "llvm", "obj", "cuda", "ptx", ...
 * On success *out is malloc'd (free with blkc_free) and *len its size. */
BLKC_API blkc_status blkc_emit(const char *source, size_t len,
                               const blkc_compile_options *opts,
                               const char *stage, char **out, size_t *outlen);
BLKC_API void blkc_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
