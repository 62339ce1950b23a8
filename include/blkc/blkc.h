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

/* When a launch meets a new argument signature (docs/jit.md: alignment,
 * unit inner stride, extents and strides divisible by 16), the kernel can
 * be specialized for it (CPU modules; GPU modules compile their variants
 * at launch unless BLKC_SPECIALIZE=0): */
typedef enum blkc_specialize {
    BLKC_SPECIALIZE_DEFAULT = 0,    /* inherit: kernel <- module <- context;
                                       a context's default is the
                                       environment: BLKC_SPECIALIZE=0 off,
                                       else eager */
    BLKC_SPECIALIZE_OFF = 1,        /* always the generic code */
    BLKC_SPECIALIZE_BACKGROUND = 2, /* run the best code compiled so far at
                                       once; a background worker compiles
                                       the variant and swaps it in */
    BLKC_SPECIALIZE_EAGER = 3,      /* compile the variant in the launch
                                       (the launch waits for it) */
} blkc_specialize;

typedef struct blkc_compile_options {
    blkc_target target;        /* default BLKC_TARGET_CPU */
    const char *arch;          /* "sm_90", "gfx90a"; NULL = default */
    const char *const *defines;/* "NAME=VALUE" overrides of consts and
                                  compile-time params (after the context's
                                  defines; these win) */
    int ndefines;              /* entries of defines */
    int opt_level;             /* 0..3; 0 means default (3) */
    const char *filename;      /* name shown in diagnostics; NULL = "<input>" */
    int isolate;               /* CPU code: run LLVM (optimization and code
                                  generation) in a worker process, blkc-cc,
                                  so that LLVM running out of memory fails
                                  the compile instead of aborting this
                                  process: 1 yes, -1 no, 0 = the environment
                                  (BLKC_COMPILE_ISOLATE=1), default no.
                                  See docs/limits.md */
    int compile_mem_mb;        /* isolated compiles: the worker's memory cap
                                  in MB beyond its startup footprint; 0 =
                                  BLKC_COMPILE_MEM_MB, default none */
    int ignore_unknown_defines;/* 1: a define that matches no constant or
                                  compile-time parameter is ignored (default
                                  0: an error). A single define written
                                  "?NAME=VALUE" is ignored the same way */
    blkc_specialize specialize;/* the module's kernels; DEFAULT = the
                                  context's */
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
    int64_t grid[3];           /* all 0 = the kernel's grid(...); else the
                                  grid (0 entries mean 1, negative ones are
                                  BLKC_ERR_USAGE) */
    void *stream;              /* GPU stream (CUstream / hipStream_t);
                                  NULL = the default stream, the launch
                                  waited for (deadline: docs/api.md) */
} blkc_launch_options;

/* version / errors */
BLKC_API const char *blkc_version(void);           /* "0.1.0" */
BLKC_API const char *blkc_last_error(void);        /* thread-local; "" if none */
BLKC_API const char *blkc_status_string(blkc_status s);

/* contexts: device "cpu", "cuda", "cuda:N", "hip", "hip:N", and the
 * emulated devices "cuda-emu", "hip-emu" (the generated CUDA / HIP C run on
 * the CPU by the host C++ compiler; tensors in host memory, kDLCPU) */
BLKC_API blkc_status blkc_context_create(const char *device,
                                         blkc_context **out);
BLKC_API void blkc_context_destroy(blkc_context *ctx);

/* The caller's thread pool, for blkc's parallel loops: call body(arg, i)
 * once for every i in 0..n-1, on any threads (the caller's included), and
 * return when all calls have returned. E.g. with OpenMP:
 *   #pragma omp parallel for
 *   for (int64_t i = 0; i < n; i++) body(arg, i);
 * The threads' stacks must hold the kernel's tiles (OMP_STACKSIZE; a
 * launch whose tiles do not fit fails with BLKC_ERR_RUNTIME). */
typedef void (*blkc_parallel_for_fn)(void *user, int64_t n,
                                     void (*body)(void *arg, int64_t i),
                                     void *arg);

typedef struct blkc_context_options {
    const char *const *defines;/* "NAME=VALUE" given to every module of the
                                  context (before the module's own, which
                                  win); one that a module does not use is
                                  ignored */
    int ndefines;              /* entries of defines */
    blkc_specialize specialize;/* the modules' default; DEFAULT = the
                                  environment (BLKC_SPECIALIZE) */
    int num_threads;           /* workers of blkc's CPU thread pool (one per
                                  process, as BLKC_NUM_THREADS; that
                                  variable loses); 0 = the environment /
                                  the online CPUs. Fixed when the pool
                                  starts (the first launch): a different
                                  count later is BLKC_ERR_UNSUPPORTED */
    int pin_threads;           /* 1: pool worker i runs on CPU i (mod the
                                  online CPUs); same rule as num_threads */
    blkc_parallel_for_fn parallel_for; /* non-NULL: CPU launches of this
                                  context's modules run their grids on the
                                  caller's pool through it, and blkc's pool
                                  is not used (not even started) for them */
    void *parallel_for_user;   /* its first argument */
    int reserved[8];           /* zero (room to grow) */
} blkc_context_options;
BLKC_API void blkc_context_options_init(blkc_context_options *o);
/* blkc_context_create with options (NULL = the defaults); the defines are
 * copied. */
BLKC_API blkc_status blkc_context_create_ex(const char *device,
                                            const blkc_context_options *o,
                                            blkc_context **out);

/* modules: `len` is the source's length in bytes; 0 means `source` is
 * NUL-terminated. A source without any kernel, device function or task is
 * an error (BLKC_ERR_COMPILE, "no kernel, device function or task"). */
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

/* Aliasing (docs/api.md): a tensor argument may be the same view as
 * another (same data + byte_offset, dtype, shape and strides), e.g. one
 * tensor as input and output of an elementwise or row kernel (in-place
 * RMSNorm, softmax). A parameter the kernel writes whose elements' byte
 * range overlaps another tensor argument's without being the same view is
 * refused (BLKC_ERR_USAGE, "arguments 'X' and 'Y' overlap ..."). */

/* ---------------------------------------------- short launches
 * A tensor argument in one call: blkc_tensor holds the DLTensor and its
 * shape and strides (at most 8 dims), so it needs no other storage. */
#define BLKC_MAX_DIMS 8
typedef struct blkc_tensor {
    DLTensor dl;                    /* pass &t.dl (or blkc_arg_tensor(&t)) */
    int64_t shape[BLKC_MAX_DIMS];
    int64_t strides[BLKC_MAX_DIMS];
} blkc_tensor;
/* dtypes for blkc_tensor_init */
#define BLKC_DT(code, bits) ((DLDataType){(uint8_t)(code), (uint8_t)(bits), 1})
#define BLKC_F32 BLKC_DT(kDLFloat, 32)
#define BLKC_F16 BLKC_DT(kDLFloat, 16)
#define BLKC_F64 BLKC_DT(kDLFloat, 64)
#define BLKC_BF16 BLKC_DT(kDLBfloat, 16)
#define BLKC_I32 BLKC_DT(kDLInt, 32)
#define BLKC_I64 BLKC_DT(kDLInt, 64)
#define BLKC_I8 BLKC_DT(kDLInt, 8)
#define BLKC_U8 BLKC_DT(kDLUInt, 8)
#define BLKC_BOOL BLKC_DT(kDLBool, 8)
/* Make *t a CPU tensor over data: ndim 0..8 extents (copied); strides in
 * elements (copied), NULL = compact row-major. t points into itself: do
 * not copy a blkc_tensor by value, make another. A bad ndim or a NULL
 * shape is BLKC_ERR_USAGE and leaves t with ndim -1, which every launch
 * refuses. */
BLKC_API blkc_status blkc_tensor_init(blkc_tensor *t, void *data,
                                      DLDataType dtype, int ndim,
                                      const int64_t *shape,
                                      const int64_t *strides);
static inline blkc_arg blkc_arg_tensor(const blkc_tensor *t)
{
    blkc_arg a;
    a.kind = BLKC_ARG_TENSOR;
    a.v.tensor = &t->dl;
    return a;
}
static inline blkc_arg blkc_arg_dl(const DLTensor *t)
{
    blkc_arg a;
    a.kind = BLKC_ARG_TENSOR;
    a.v.tensor = t;
    return a;
}
static inline blkc_arg blkc_arg_int(int64_t i)
{
    blkc_arg a;
    a.kind = BLKC_ARG_INT;
    a.v.i = i;
    return a;
}
static inline blkc_arg blkc_arg_float(double f)
{
    blkc_arg a;
    a.kind = BLKC_ARG_FLOAT;
    a.v.f = f;
    return a;
}
/* Launch k with arguments described by fmt, one item per parameter, items
 * separated by spaces:
 *   DTYPE[E,E,...]  a compact CPU tensor: a `void *` data argument, then
 *                   one per extent: `#` takes an `int`, a number is
 *                   literal (f32[#,64]); DTYPE is f32 f16 bf16 f64 i8 i16
 *                   i32 i64 u8 u16 u32 u64 bool
 *   t               a `const DLTensor *` (any strides / offset)
 *   T               a `const blkc_tensor *`
 *   i               an `int`;  l  an `int64_t`;  f  a `double`
 * e.g. blkc_kernel_launchf(k, "f32[#] f32[#] f", x, n, y, n, 2.0).
 * A format that does not fit k (item count, tensor vs scalar) is
 * BLKC_ERR_USAGE naming the item; then it is blkc_kernel_launch. */
BLKC_API blkc_status blkc_kernel_launchf(blkc_kernel *k, const char *fmt, ...);

/* ---------------------------------------------- specialization control
 * Set kernel k's mode (DEFAULT = its module's); thread-safe. */
BLKC_API blkc_status blkc_kernel_set_specialize(blkc_kernel *k,
                                                blkc_specialize mode);
/* Compile now the variant a launch with these arguments would use, so
 * that such launches never wait for the compiler (any mode; OFF kernels
 * use prepared variants too). Arguments as for blkc_kernel_launch (their
 * data is not read). CPU modules only (BLKC_ERR_UNSUPPORTED otherwise). */
BLKC_API blkc_status blkc_kernel_prepare(blkc_kernel *k, const blkc_arg *args,
                                         int nargs);
/* Specialized variants compiled for k so far (0 for a GPU module). */
BLKC_API int blkc_kernel_variant_count(const blkc_kernel *k);
/* Wait until the background compiler has nothing queued or running. */
BLKC_API void blkc_specialize_wait(void);

/* Run kernel or device function k (CPU module) on `nranks` local ranks
 * (threads), as `blkc run --ranks=N` does: args holds nranks * nargs
 * entries, rank r's arguments at args + r * nargs (one per parameter, as
 * for blkc_kernel_launch; a device function's buffers made inside it are
 * not parameters). Collectives run across the ranks. It runs the module's
 * own JIT'd (cached) code: nothing is compiled per call. CPU modules only;
 * not under mpirun (BLKC_ERR_UNSUPPORTED). A rank left behind by a failed
 * run (still computing past its deadlines) holds the module: destroying it
 * (or its context) is safe at once, it is freed when that rank returns. */
BLKC_API blkc_status blkc_kernel_run_ranks(blkc_kernel *k, int nranks,
                                           const blkc_arg *args, int nargs,
                                           const blkc_launch_options *opts);

/* text/binary stages: "ast", "core", "llvm", "obj", "cuda", "ptx", ...
 * On success *out is malloc'd (free with blkc_free) and *len its size. */
BLKC_API blkc_status blkc_emit(const char *source, size_t len,
                               const blkc_compile_options *opts,
                               const char *stage, char **out, size_t *outlen);
BLKC_API void blkc_free(void *p);

/* ------------------------------------------------------------ JIT cache
 * Modules are cached in memory (per context; a NULL context shares one
 * process-wide cache) and on disk (BLKC_CACHE_DIR, else
 * $XDG_CACHE_HOME/blkc, else ~/.cache/blkc; BLKC_CACHE_DISABLE=1 turns the
 * disk cache off; BLKC_CACHE_MAX_MB caps it, default 1024). Launches
 * specialize kernels on their tensor arguments (16-byte aligned data, unit
 * inner stride, sizes and strides divisible by 16), compiling a variant for
 * a launch with new properties as blkc_specialize says (the default: in the
 * launch, unless BLKC_SPECIALIZE=0). See docs/jit.md. */
typedef struct blkc_cache_stats {
    int64_t entries;          /* files in the disk cache */
    int64_t bytes;            /* their total size */
    int64_t max_bytes;        /* the size cap */
    int64_t disk_hits, disk_misses, disk_corrupt, disk_writes; /* process */
    char dir[1024];           /* the directory; "" when disabled */
} blkc_cache_stats;
BLKC_API blkc_status blkc_cache_stats_get(blkc_cache_stats *out);
/* Remove every disk entry; *removed (may be NULL) gets the count. */
BLKC_API blkc_status blkc_cache_clear(int *removed);
/* How the last blkc_module_create on this thread was served: 2 memory
 * (hot), 1 disk (warm), 0 compiled (cold), -1 none/failed. */
BLKC_API int blkc_module_cache_source(void);

/* ------------------------------------------------------------ autotuning */
typedef struct blkc_tune_options {
    int reps;                 /* timed launches per config (min kept);
                                 0 = 5 */
    int force;                /* 1: re-tune even if a choice is cached */
} blkc_tune_options;
BLKC_API void blkc_tune_options_init(blkc_tune_options *o);
/* Try every configuration of the product of `space` ("NAME=V1,V2,..." per
 * compile-time parameter or const, e.g. {"BM=32,64,128", "BN=64,128"}) for
 * kernel `kernel` (NULL = the single one) of `source`: each is compiled
 * (through the cache) with opts' defines plus the config, launched on
 * `args` and timed. The fastest per shape bucket (every tensor extent
 * rounded up to a power of two) is remembered in memory and on disk, so a
 * later call with the same bucket only compiles (or finds) the winner.
 * Tensor arguments are restored after the timing runs. On success *out is
 * the winner's module (destroy it) and `config` (may be NULL) receives it
 * as "BM=64 BN=128". Configurations that fail to compile are skipped. */
BLKC_API blkc_status blkc_kernel_autotune(
    blkc_context *ctx, const char *source, size_t len,
    const blkc_compile_options *opts, const char *kernel,
    const char *const *space, int nspace, const blkc_arg *args, int nargs,
    const blkc_tune_options *topts, blkc_module **out, char *config,
    size_t configlen);

/* ------------------------------------------------------------ tasks
 * A task (LANGUAGE.md §6) of a .blk file, planned and run on N local CPU
 * ranks as `blkc plan` and `blkc run --entry=TASK --ranks=N` do (the same
 * code). Tensors are full (unsharded) C-contiguous CPU tensors: the task
 * scatters its inputs by their declared shardings and gathers each result
 * whole. See docs/api.md. */
typedef struct blkc_task blkc_task;
typedef struct blkc_task_options {
    int ranks;                 /* local ranks; 0 = 1 */
    const char *topology;      /* cost-model topology: a preset (h100-nvl8,
                                  ...) or a key=value file; NULL = "this-cpu"
                                  (what `blkc run` uses) */
    int overlap;               /* communication placement: 0 = by cost
                                  (runs: BLKC_TASK_OVERLAP when set),
                                  1 = overlap when possible, -1 = never */
    int megakernel;            /* 1: megakernel mode (`blkc run
                                  --megakernel`): each rank runs one
                                  tile-task graph on worker threads instead
                                  of one launch per op; same results */
    int reserved[7];           /* zero (room to grow) */
} blkc_task_options;
BLKC_API void blkc_task_options_init(blkc_task_options *o);
/* Parse and check `source` (the whole file must compile) and pick task
 * `name` (NULL: the file's single task). opts: defines and filename are
 * used; target must be CPU. NOT_FOUND names the file's tasks. */
BLKC_API blkc_status blkc_task_create(const char *source, size_t len,
                                      const blkc_compile_options *opts,
                                      const char *name,
                                      const blkc_task_options *topts,
                                      blkc_task **out);
BLKC_API void blkc_task_destroy(blkc_task *t);
/* parameters (tensors and scalars, in declaration order) and results */
BLKC_API int blkc_task_param_count(const blkc_task *t);
BLKC_API const char *blkc_task_param_name(const blkc_task *t, int i);
BLKC_API int blkc_task_param_is_tensor(const blkc_task *t, int i);
BLKC_API int blkc_task_result_count(const blkc_task *t);
/* Result i's dtype and full shape for these arguments (shape has room for
 * 8 dims); nothing is compiled. */
BLKC_API blkc_status blkc_task_result_shape(const blkc_task *t,
                                            const blkc_arg *args, int nargs,
                                            int i, DLDataType *dtype,
                                            int *ndim, int64_t *shape);
/* The plan `blkc plan --ranks=N [--topology=T] [--json] NAME=VALUE...`
 * prints, for the task's sizes given as "NAME=VALUE" (every size of the
 * task). *out is malloc'd (free with blkc_free), NUL-terminated. */
BLKC_API blkc_status blkc_task_plan(blkc_task *t, const char *const *sizes,
                                    int nsizes, int json, char **out,
                                    size_t *outlen);
/* Run the task: one blkc_arg per parameter (full tensors, scalars), one
 * full tensor per result (allocated by the caller; blkc_task_result_shape
 * gives the shapes). Sizes are bound from the tensors; the task is
 * compiled for them on the first run and kept for the next runs with the
 * same sizes. Runs of one task are serialized (a mutex). Errors: wrong
 * arity / dtype / shape (USAGE), a split dim the ranks do not divide and
 * other program errors (COMPILE, with the diagnostic), the run (RUNTIME). */
BLKC_API blkc_status blkc_task_run(blkc_task *t, const blkc_arg *args,
                                   int nargs, DLTensor *const *results,
                                   int nresults);

#ifdef __cplusplus
}
#endif
#endif
