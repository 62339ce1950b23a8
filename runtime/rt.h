/* rt.h — the runtime layer: the CPU thread pool that runs JIT'd kernels,
 * the CPU launcher (argument checks, symbolic-size binding, grid), .npy
 * file I/O and the dtype conversions the CLI needs for its I/O.
 *
 * Every function reports errors as a return code plus a one-line message
 * in (err, errlen); nothing here prints, exits or aborts.
 * Cross-file prefix: rt_ (functions), Rt (types). */
#ifndef BLKC_RT_H
#define BLKC_RT_H

#include "../backends/backend.h"
#include "../include/blkc/blkc.h"

/* ------------------------------------------------------------ pool.c */
/* Number of worker threads of the process-wide pool (created on first use:
 * the online CPUs, or BLKC_NUM_THREADS). 0 if the pool could not start. */
int rt_pool_size(void);
/* Fix the pool's size (0 = BLKC_NUM_THREADS / the online CPUs) and
 * pinning before it starts; -1 with err when it already runs (or another
 * caller fixed it) otherwise. */
int rt_pool_configure(int nthreads, int pin, char *err, size_t errlen);
/* The calling thread's launches run their grids through fn (the caller's
 * own thread pool: fn(user, n, body, arg) must call body(arg, i) once for
 * every i in 0..n-1, on any threads, and return when all are done)
 * instead of blkc's pool; NULL = the pool again. */
typedef void (*RtParallelFor)(void *user, int64_t n,
                              void (*body)(void *arg, int64_t i), void *arg);
void rt_set_parallel_for(RtParallelFor fn, void *user);
/* Run fn over the linearised grid `grid` (each extent 0..INT32_MAX) on the
 * pool, split into chunks; blocks until every instance has run. `ctx` (may
 * be NULL: a zeroed one, rank 0 of 1) is passed to the kernel as its
 * `nprog` argument; its grid is set here. Safe to call from several threads
 * at once. Returns 0, or -1 with err set. */
int rt_pool_run(BkRangeFn fn, void *const *args, const int64_t grid[3],
                BkLaunchCtx *ctx, char *err, size_t errlen);
/* rt_pool_run, where caller_runs says the calling thread may run kernel
 * instances too (its stack holds the kernel's tiles): it then claims
 * chunks itself, wakes at most one worker, and waits only for instances
 * that workers actually took; BLKC_NUM_THREADS counts the caller as one of
 * the threads. Nothing is allocated. */
int rt_pool_run_helping(BkRangeFn fn, void *const *args,
                        const int64_t grid[3], BkLaunchCtx *ctx,
                        bool caller_runs, char *err, size_t errlen);

/* ------------------------------------------------------------ convert.c */
/* Scalar element access in a dtype's storage representation (f16, bf16 and
 * f8 as their bit patterns; bool as one byte). Narrowing float stores round
 * to nearest even; float->int stores truncate (saturating); any->bool is
 * != 0. */
double rt_load_f64(const void *p, int dtype);
int64_t rt_load_i64(const void *p, int dtype);
void rt_store_f64(void *p, int dtype, double v);
void rt_store_i64(void *p, int dtype, int64_t v);
/* Encode/decode a small float (f16, bf16, f8e4m3, f8e5m2) from/to double,
 * round to nearest even, no double rounding. */
uint32_t rt_small_float_encode(double x, int dtype);
double rt_small_float_decode(uint32_t bits, int dtype);
/* Convert n elements between dtypes (element by element through double for
 * floats, int64 for ints and bools). */
void rt_convert(void *dst, int ddt, const void *src, int sdt, int64_t n);
/* DLPack dtype <-> DslDtype (-1 if blkc has no such dtype). */
int rt_dtype_from_dl(DLDataType t);
DLDataType rt_dtype_to_dl(int dtype);

/* ------------------------------------------------------------ npy.c */
/* An array read from a .npy file (C order, little-endian, native dtypes). */
typedef struct RtNpy {
    int dtype;                     /* DslDtype of the stored elements */
    int ndim;                      /* 0..DSL_MAX_RANK */
    int64_t shape[DSL_MAX_RANK];   /* extents */
    int64_t numel;                 /* product of shape */
    void *data;                    /* rt_alloc64'd numel * bytes (NULL if 0) */
} RtNpy;
/* n bytes (n > 0) at a 64-byte boundary, freed with free(); NULL when out
 * of memory. Tensors the CLI and the .npy reader allocate start on a cache
 * line, as PyTorch's do: a kernel's vector loads of rows whose stride is a
 * multiple of 64 bytes then never split lines (a malloc'd 64 MB is 16
 * bytes past a page: every 64-byte load of its rows spans two lines) */
void *rt_alloc64(size_t n);
/* Parse a whole .npy image (versions 1.0, 2.0, 3.0). Every malformed image
 * is an error (never a crash or an allocation bigger than the image). */
int rt_npy_parse(const void *buf, size_t len, RtNpy *out, char *err,
                 size_t errlen);
int rt_npy_read(const char *path, RtNpy *out, char *err, size_t errlen);
void rt_npy_free(RtNpy *a);
/* Write a .npy (version 1.0, or 2.0 when the header needs it). dtype is
 * a DslDtype with a numpy equivalent (not bf16/f8: convert first). */
int rt_npy_write(const char *path, int dtype, int ndim, const int64_t *shape,
                 const void *data, char *err, size_t errlen);
/* The numpy descr for a dtype ("<f4", "|b1"...); NULL if numpy has none. */
const char *rt_npy_descr(int dtype);

/* ------------------------------------------------------------ bind.c */
/* What the CPU and GPU launchers share: the checks of a launch's arguments
 * against the kernel's parameters and their bound values. */

/* Write fmt into (err, errlen) and return s. */
blkc_status rt_fail(blkc_status s, char *err, size_t errlen, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));
/* The error of a failed assert recorded in ctx (CPU and GPU launches):
 * `FILE:LINE: kernel K: assertion failed in program (x, y, z): MESSAGE` */
blkc_status rt_assert_fail(const IrFunc *f, const BkLaunchCtx *ctx, char *err,
                           size_t errlen);

/* Kernels with at most this many params and syms bind without the heap. */
#define RT_BIND_SMALL 32

/* One scalar argument in its dtype's storage representation. */
typedef union RtSlot {
    uint64_t u;
    int64_t i;
    double f;
    unsigned char b[8];
} RtSlot;

/* Which tensors a launcher takes: check(ctx, p, t, ...) returns BLKC_OK
 * when t's device suits parameter p, or an error with a message naming
 * p. dtype_detail: a mismatched dtype blkc lacks is spelt out as
 * "code C bits B lanes L" (otherwise "?"). */
typedef struct RtBindDevice {
    blkc_status (*check)(const void *ctx, const IrParam *p, const DLTensor *t,
                         char *err, size_t errlen);
    const void *ctx;
    bool dtype_detail;
} RtBindDevice;

/* A launch's bound arguments: the arrays point into `small`, or (more
 * than RT_BIND_SMALL params or syms) into one heap block. Never copy one;
 * release it with rt_bind_free (also after a failed rt_bind_args). */
typedef struct RtBind {
    BkTensorDesc *desc;              /* per tensor param: data, shape, stride */
    RtSlot *slots;                   /* per scalar param */
    void **argv;                     /* per param: &desc[i] or &slots[i] */
    IrScalarVal *sv;                 /* per param: scalars for the grid */
    int64_t (*shapes)[IR_MAX_RANK];  /* per param: extents, 0 past the rank */
    int64_t *symval;                 /* per sym: its size */
    int *symfrom;                    /* per sym: the param that bound it */
    void *heap;                      /* NULL, or the malloc'd arrays */
    struct {
        BkTensorDesc desc[RT_BIND_SMALL];
        RtSlot slots[RT_BIND_SMALL];
        void *argv[RT_BIND_SMALL];
        IrScalarVal sv[RT_BIND_SMALL];
        int64_t shapes[RT_BIND_SMALL][IR_MAX_RANK];
        int64_t symval[RT_BIND_SMALL];
        int symfrom[RT_BIND_SMALL];
    } small;
} RtBind;

/* Check nargs and each of args against f's params (kinds, DLTensor device
 * through dev, dtype, rank, static extents, symbolic sizes agreeing and
 * fitting i32) and bind them into b. Returns BLKC_OK, or BLKC_ERR_USAGE /
 * BLKC_ERR_RUNTIME / BLKC_ERR_NOMEM with a message naming the parameter. */
blkc_status rt_bind_args(RtBind *b, const IrFunc *f, const blkc_arg *args,
                         int nargs, const RtBindDevice *dev, char *err,
                         size_t errlen);
/* The grid of the bound launch: opts->grid when any axis is non-zero (0
 * axes are 1; negative ones are an error), else ir_eval_grid on rank of
 * world (rank() and world() in grid(...); world 1 outside a world). */
blkc_status rt_bind_grid(const RtBind *b, const IrFunc *f,
                         const blkc_launch_options *opts, int32_t rank,
                         int32_t world, int64_t grid[3], char *err,
                         size_t errlen);
void rt_bind_free(RtBind *b);
/* Per tensor param: properties of a launch argument (IR_ASSUME_* bits). */
uint32_t rt_tensor_assume(const IrParam *p, const DLTensor *t);
/* The signature of a launch: assume bits per param (sig[nparams]); false
 * if an argument is malformed (the launcher reports it). */
bool rt_signature(const IrFunc *f, const blkc_arg *args, int nargs,
                  uint32_t *sig);
/* Whether specialized variants may be compiled at all: false only under
 * BLKC_SPECIALIZE=0 (read once; the JIT cache and the GPU launcher). */
bool rt_specialize_env(void);

/* ------------------------------------------------------------ launch.c */
/* Check `args` against f's parameters (kinds, DLTensor device/dtype/rank,
 * static extents, symbolic sizes agreeing), build the CPU ABI arguments,
 * evaluate the grid (or take opts->grid when non-zero) and run fn on the
 * pool. Returns BLKC_OK, or BLKC_ERR_USAGE / BLKC_ERR_RUNTIME /
 * BLKC_ERR_NOMEM with a message naming the parameter (a failed wait names
 * the rank, the signal tensor and the cell). grid_out (may be NULL)
 * receives the grid that ran. Waits time out after BLKC_WAIT_TIMEOUT_MS
 * (default 5000). */
blkc_status rt_cpu_launch(const IrFunc *f, BkRangeFn fn, const blkc_arg *args,
                          int nargs, const blkc_launch_options *opts,
                          int64_t grid_out[3], char *err, size_t errlen);

/* What a kernel launched on one rank of a world sees (rank builtins). */
typedef struct RtWorldView {
    int32_t rank;                   /* this rank */
    int32_t world;                  /* number of ranks */
    char *const *heap_base;         /* per rank: symmetric heap base, or NULL */
    const volatile int *abort_flag; /* non-zero: the run is failing (or NULL) */
    int64_t timeout_ms;             /* wait timeout; <= 0 = the default */
    int *in_wait;                   /* the rank's count of waits in progress
                                       (rt_rank_in_wait), or NULL */
} RtWorldView;
/* rt_cpu_launch on one rank of a world (wv NULL = rank 0 of 1). With more
 * than one rank, the instances run in order on the calling thread (a rank
 * thread with a big stack), so that every rank makes progress whatever the
 * others wait for; otherwise on the pool. */
blkc_status rt_cpu_launch_ranked(const IrFunc *f, BkRangeFn fn,
                                 const blkc_arg *args, int nargs,
                                 const blkc_launch_options *opts,
                                 const RtWorldView *wv, int64_t grid_out[3],
                                 char *err, size_t errlen);
/* Megakernel mode (runtime/mega.c): bind a launch as rt_cpu_launch_ranked
 * does without running it: b (the caller's, never moved; rt_bind_free)
 * gets the arguments, grid the grid, ctx the context its instances take
 * as `nprog`. rt_cpu_launch_status: once they ran, a failed assert or wait
 * of theirs as the launch's error (BLKC_OK if none). */
blkc_status rt_cpu_launch_bind(const IrFunc *f, const blkc_arg *args,
                               int nargs, const blkc_launch_options *opts,
                               const RtWorldView *wv, RtBind *b,
                               int64_t grid[3], BkLaunchCtx *ctx, char *err,
                               size_t errlen);
blkc_status rt_cpu_launch_status(const IrFunc *f, BkLaunchCtx *ctx, char *err,
                                 size_t errlen);

#endif
