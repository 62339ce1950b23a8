/* launch.c — the CPU launcher shared by libblkc and the CLI: check the
 * arguments against the kernel's parameters and bind them (bind.c, shared
 * with the GPU launcher; host memory only here), evaluate the grid and run
 * the CPU ABI argument array on the thread pool. Kernels with up to
 * RT_BIND_SMALL params launch without touching the heap. */
#include "rt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CPU kernels read tensors in host memory. */
static blkc_status host_memory(const void *ctx, const IrParam *p,
                               const DLTensor *t, char *err, size_t errlen)
{
    (void)ctx;
    if (t->device.device_type != kDLCPU &&
        t->device.device_type != kDLCUDAHost &&
        t->device.device_type != kDLROCMHost)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: tensor is "
                       "not in host memory (device type %d)", p->name,
                       (int)t->device.device_type);
    return BLKC_OK;
}

static const RtBindDevice host_device = {host_memory, NULL, true};

/* The wait timeout of launches outside a world: BLKC_WAIT_TIMEOUT_MS. */
static int64_t env_timeout_ms(void)
{
    const char *s = getenv("BLKC_WAIT_TIMEOUT_MS");
    if (!s || !*s)
        return 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end == 0 && v > 0 ? v : 0;
}

/* Bytes of stack left on the calling thread (0 if unknown). The bounds are
 * read once per thread. */
static size_t stack_room(void)
{
    static _Thread_local char *lo;   /* lowest usable address */
    static _Thread_local bool known;
    if (!known) {
        pthread_attr_t a;
        void *addr;
        size_t size;
        known = true;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            if (pthread_attr_getstack(&a, &addr, &size) == 0)
                lo = (char *)addr + (256 << 10); /* guard and slack */
            pthread_attr_destroy(&a);
        }
    }
    char here;
    return lo && &here > lo ? (size_t)(&here - lo) : 0;
}

/* ------------------------------------------------------------ parallel_for
 * A context's parallel_for hook (blkc_context_options): the launching
 * thread's grids run as chunks on the caller's own pool. */
static _Thread_local RtParallelFor tls_pf;
static _Thread_local void *tls_pf_user;

void rt_set_parallel_for(RtParallelFor fn, void *user)
{
    tls_pf = fn;
    tls_pf_user = user;
}

#define RT_PF_CHUNKS 1024 /* at most this many items per grid */

typedef struct PfJob {
    BkRangeFn fn;
    void *const *argv;
    const int32_t *nprog;      /* the BkLaunchCtx (grid first) */
    int64_t total, chunk;
    size_t frame;              /* the kernel's stack frame, bytes */
    int small_stack;           /* atomic: items skipped: a stack too small */
} PfJob;

static void pf_body(void *arg, int64_t i)
{
    PfJob *j = arg;
    if (j->frame && j->frame * 2 >= stack_room()) {
        __atomic_store_n(&j->small_stack, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t first = i * j->chunk;
    int64_t last = first + j->chunk < j->total ? first + j->chunk : j->total;
    if (first < last)
        j->fn(j->argv, first, last, j->nprog);
}

/* Check a grid's extents and the instance count (total), and copy the
 * extents into ctx->nprog. */
static blkc_status grid_check(const int64_t grid[3], BkLaunchCtx *ctx,
                              int64_t *total, char *err, size_t errlen)
{
    int64_t t = 1;
    for (int a = 0; a < 3; a++) {
        if (grid[a] < 0 || grid[a] > INT32_MAX)
            return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "grid extent %lld "
                           "along axis %d is out of range", (long long)grid[a],
                           a);
        ctx->nprog[a] = (int32_t)grid[a];
        if (grid[a] && t > INT64_MAX / grid[a])
            return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "grid has too many "
                           "program instances");
        t *= grid[a];
    }
    *total = t;
    return BLKC_OK;
}

static blkc_status run_parallel_for(const IrFunc *f, BkRangeFn fn,
                                    void *const *argv, const int64_t grid[3],
                                    BkLaunchCtx *ctx, char *err,
                                    size_t errlen)
{
    int64_t total;
    blkc_status st = grid_check(grid, ctx, &total, err, errlen);
    if (st != BLKC_OK)
        return st;
    if (total == 0)
        return BLKC_OK;
    PfJob j = {fn, argv, ctx->nprog, total,
               (total + RT_PF_CHUNKS - 1) / RT_PF_CHUNKS,
               f->frame_bytes > 0 ? (size_t)f->frame_bytes : 0, 0};
    tls_pf(tls_pf_user, (total + j.chunk - 1) / j.chunk, pf_body, &j);
    if (__atomic_load_n(&j.small_stack, __ATOMIC_RELAXED))
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: a "
                       "parallel_for thread's stack is too small for its "
                       "tiles (%lld bytes; raise it, e.g. OMP_STACKSIZE); "
                       "the grid did not run completely", f->name,
                       (long long)f->frame_bytes);
    return BLKC_OK;
}

/* A launch's context from the world view (wv NULL: rank 0 of 1, the
 * BLKC_WAIT_TIMEOUT_MS timeout). */
static void ctx_init(BkLaunchCtx *ctx, const RtWorldView *wv)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->world = 1;
    if (wv) {
        ctx->rank = wv->rank;
        ctx->world = wv->world;
        ctx->heap_base = wv->heap_base;
        ctx->abort_flag = wv->abort_flag;
        ctx->timeout_ms = wv->timeout_ms;
        ctx->in_wait = wv->in_wait;
    } else {
        ctx->timeout_ms = env_timeout_ms();
    }
}

/* Run the grid: in order on this thread when it is one rank of several
 * (ranks may wait on each other; each must progress), or when it is a
 * single instance whose tiles fit this thread's stack (a hand-off to a
 * pool worker costs more than a small kernel); otherwise on the pool, with
 * this thread claiming instances too when its stack holds the tiles. */
static blkc_status execute(const IrFunc *f, BkRangeFn fn, void *const *argv,
                           const int64_t grid[3], const RtWorldView *wv,
                           char *err, size_t errlen)
{
    BkLaunchCtx ctx;
    ctx_init(&ctx, wv);
    if (ctx.world > 1) {
        int64_t total;
        blkc_status st = grid_check(grid, &ctx, &total, err, errlen);
        if (st != BLKC_OK)
            return st;
        /* one instance at a time, so a rank busy in a long grid stops
         * within one instance of another rank's failure (a timed-out
         * collective) instead of running to the end of its grid */
        for (int64_t p = 0; p < total; p++) {
            if (ctx.abort_flag && __atomic_load_n(ctx.abort_flag, __ATOMIC_ACQUIRE))
                return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s on "
                               "rank %d: stopped after %lld of %lld program "
                               "instances: another rank failed", f->name,
                               ctx.rank, (long long)p, (long long)total);
            fn(argv, p, p + 1, ctx.nprog);
        }
    } else {
        bool fits = f->frame_bytes > 0 &&
                    (size_t)f->frame_bytes * 2 < stack_room();
        if (fits && grid[0] == 1 && grid[1] == 1 && grid[2] == 1) {
            ctx.nprog[0] = ctx.nprog[1] = ctx.nprog[2] = 1;
            fn(argv, 0, 1, ctx.nprog);
        } else if (tls_pf) {
            blkc_status st = run_parallel_for(f, fn, argv, grid, &ctx, err,
                                              errlen);
            if (st != BLKC_OK)
                return st;
        } else if (rt_pool_run_helping(fn, argv, grid, &ctx, fits, err,
                                       errlen) != 0) {
            return BLKC_ERR_RUNTIME;
        }
    }
    return rt_cpu_launch_status(f, &ctx, err, errlen);
}

blkc_status rt_cpu_launch_status(const IrFunc *f, BkLaunchCtx *c, char *err,
                                 size_t errlen)
{
    if (__atomic_load_n(&c->assert_failed, __ATOMIC_ACQUIRE) == 1)
        return rt_assert_fail(f, c, err, errlen);
    if (__atomic_load_n(&c->failed, __ATOMIC_ACQUIRE)) {
        const char *sig = c->fail_param >= 0 && c->fail_param < f->nparams
                              ? f->params[c->fail_param].name : "?";
        if (c->fail_aborted)
            return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s on rank "
                           "%d: wait on %s[%lld] abandoned: another rank "
                           "failed", f->name, c->rank, sig,
                           (long long)c->fail_cell);
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s on rank %d: "
                       "wait on %s[%lld] timed out after %lld ms (waiting for "
                       "%llu, saw %llu)", f->name, c->rank, sig,
                       (long long)c->fail_cell,
                       (long long)(c->timeout_ms > 0 ? c->timeout_ms : 5000),
                       (unsigned long long)c->fail_expected,
                       (unsigned long long)c->fail_seen);
    }
    return BLKC_OK;
}

blkc_status rt_cpu_launch_bind(const IrFunc *f, const blkc_arg *args,
                               int nargs, const blkc_launch_options *opts,
                               const RtWorldView *wv, RtBind *b,
                               int64_t grid[3], BkLaunchCtx *ctx, char *err,
                               size_t errlen)
{
    blkc_status st = rt_bind_args(b, f, args, nargs, &host_device, err,
                                  errlen);
    if (st == BLKC_OK)
        st = rt_bind_grid(b, f, opts, wv ? wv->rank : 0, wv ? wv->world : 1,
                          grid, err, errlen);
    if (st != BLKC_OK)
        return st;
    ctx_init(ctx, wv);
    int64_t total;
    return grid_check(grid, ctx, &total, err, errlen);
}

blkc_status rt_cpu_launch(const IrFunc *f, BkRangeFn fn, const blkc_arg *args,
                          int nargs, const blkc_launch_options *opts,
                          int64_t grid_out[3], char *err, size_t errlen)
{
    return rt_cpu_launch_ranked(f, fn, args, nargs, opts, NULL, grid_out, err,
                                errlen);
}

blkc_status rt_cpu_launch_ranked(const IrFunc *f, BkRangeFn fn,
                                 const blkc_arg *args, int nargs,
                                 const blkc_launch_options *opts,
                                 const RtWorldView *wv, int64_t grid_out[3],
                                 char *err, size_t errlen)
{
    if (!f || !fn)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "no kernel");
    RtBind b;
    int64_t grid[3];
    blkc_status st = rt_bind_args(&b, f, args, nargs, &host_device, err,
                                  errlen);
    if (st == BLKC_OK)
        st = rt_bind_grid(&b, f, opts, wv ? wv->rank : 0,
                          wv ? wv->world : 1, grid, err, errlen);
    if (st == BLKC_OK) {
        if (grid_out)
            memcpy(grid_out, grid, sizeof grid);
        st = execute(f, fn, b.argv, grid, wv, err, errlen);
    }
    rt_bind_free(&b);
    return st;
}
