/* gpu_ranks.c — ranks on GPUs (see gpu_ranks.h): the GPU world (devices,
 * modules, per-rank symmetric heaps, heap tables and failure records),
 * the runner behind `blkc run --device=cuda:N --ranks=R`, and the hooks
 * the Device IR interpreter (plan.c) calls for buffers, copies, signals
 * and launches when its module runs on GPU ranks (collectives: gpu_coll.c).
 *
 * Ordering. Each rank queues its work on its own stream (non-blocking,
 * so the synchronous driver copies used for polling never wait for it);
 * an async block gets a second stream that first waits for the
 * parent's. The copies between host and device (uploads, results, staged
 * collectives, reads) go through a pinned staging buffer on that stream
 * (gpu_copy.c). Kernel launches wait for the kernel (to report timed-out
 * waits with the rank); copies and notifies stay queued. A notify is a
 * one-thread kernel (hand-written below, PTX for CUDA and HIP C for HIP,
 * compiled for the device's gfx arch: a system-scope fence and a release
 * store or atomic add), so it lands after the copy queued before it. A
 * wait from a device function polls the cell from the host with the
 * timeout of ranks.h (each poll an asynchronous 8-byte read on a stream
 * of the context's own, gpu_copy.c), and gives up when another rank fails.
 * Each rank fills its own heap table (heap_table).
 *
 * Deadlines. The waits for a stream are polled (gpu_wait.c):
 * a launch's kernel, the end of the run and a stream's end (drain: no
 * deadline of their own, the others name the rank; a lone rank's kernel
 * gets a lone kernel's, where one is set); with the collectives' deadline
 * the default stream after the uploads and after a staged collective's
 * copy back (rt_gpur_dev_wait), and the rank's own stream before a staged
 * collective, an allocation's zeroing, a read and an async block's fork
 * and join (rt_gpur_sync), and each chunk of a staged copy (gpu_copy.c:
 * the uploads, the heap table, a kernel's failure record, the results);
 * with the signal wait's timeout the reads of its polls (rt_gpur_wait: a
 * read that never completes is a signal that never comes). Freed memory
 * waits for the end of the run (defer_free), not for the stream, and so
 * does an ended async block's context (its stream, staging buffer and
 * poll slot: kept for the rank's next fork, ctx_free), since freeing
 * pinned memory may wait for the whole device; a staging buffer is never
 * freed to grow (gpu_copy.c). Not
 * bounded: the copies and polls where there is no staging buffer (no
 * mapped host memory, no asynchronous copies: synchronous copies), and
 * every wait where the driver has no query function (synchronized).
 * Driver calls that wait for no peer (allocation, module loading, IPC
 * mapping) have no deadline, and nothing is freed while a stream may
 * still run (defer_free; a stuck world is parked) (docs/device.md). */
#include "gpu_ranks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* notify from the host side: blk_sig_set / blk_sig_add (cell, v) */
static const char sig_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry blk_sig_set(.param .u64 cell, .param .u64 v)\n{\n"
    "    .reg .b64 %rd<3>;\n"
    "    ld.param.u64 %rd1, [cell];\n    ld.param.u64 %rd2, [v];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n    fence.sc.sys;\n"
    "    st.release.sys.global.u64 [%rd1], %rd2;\n    ret;\n}\n"
    ".visible .entry blk_sig_add(.param .u64 cell, .param .u64 v)\n{\n"
    "    .reg .b64 %rd<4>;\n"
    "    ld.param.u64 %rd1, [cell];\n    ld.param.u64 %rd2, [v];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n    fence.sc.sys;\n"
    "    atom.release.sys.global.add.u64 %rd3, [%rd1], %rd2;\n    ret;\n}\n";
/* the same for HIP (hiprtc or hipcc --genco): __threadfence_system is a
 * system-scope seq_cst fence, and the generic __atomic builtins are
 * system-scope on AMD GPUs (as blk_sig_set / blk_sig_add of the HIP
 * prelude, backends/hip/hip.c) */
static const char sig_hip[] =
    "#if !defined(__HIPCC_RTC__)\n#include <hip/hip_runtime.h>\n#endif\n"
    "extern \"C\" __global__ void blk_sig_set(unsigned long long *cell, "
    "unsigned long long v)\n{\n"
    "    __threadfence_system();\n    __atomic_store_n(cell, v, __ATOMIC_RELEASE);\n}\n"
    "extern \"C\" __global__ void blk_sig_add(unsigned long long *cell, "
    "unsigned long long v)\n{\n"
    "    __threadfence_system();\n    __atomic_fetch_add(cell, v, __ATOMIC_RELEASE);\n}\n";

#define DEV(c) rt_gpu_dev((c)->k->d->g)
#define U64(p) ((uint64_t)(uintptr_t)(p))

int rt_gpur_fail(RtRank *r, const char *msg)
{
    return rt_rank_fail(r, "%s", msg);
}

/* ------------------------------------------------------------ contexts */

/* cuMemFree waits for the whole device, which may be running kernels that
 * spin on signals only this process's other threads will set: device
 * memory released during a run is freed after the run's last barrier. */
static void defer_free(RtGpuWorld *w, RtGpurRank *k, uint64_t p)
{
    if (!p)
        return;
    pthread_mutex_lock(&w->lock);
    if (k->ndead == k->capdead) {
        int nc = k->capdead ? 2 * k->capdead : 16;
        uint64_t *nd = realloc(k->dead, (size_t)nc * sizeof *nd);
        if (nd) {
            k->dead = nd;
            k->capdead = nc;
        }
    }
    bool kept = k->ndead < k->capdead;
    if (kept)
        k->dead[k->ndead++] = p;
    pthread_mutex_unlock(&w->lock);
    if (!kept) /* out of memory: free now */
        w->ops->free(rt_gpu_dev(k->d->g), p);
}

static void free_dead(RtGpuWorld *w, RtGpurRank *k)
{
    for (int i = 0; i < k->ndead; i++)
        w->ops->free(rt_gpu_dev(k->d->g), k->dead[i]);
    free(k->dead);
    k->dead = NULL;
    k->ndead = k->capdead = 0;
}

static RtGpuCtx *ctx_new(RtGpuWorld *w, RtGpurRank *k, char *err, size_t errlen)
{
    RtGpuCtx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->w = w;
    c->k = k;
    void *dev = rt_gpu_dev(k->d->g);
    if (w->ops->stream_new(dev, &c->stream, err, errlen) ||
        w->ops->alloc(dev, sizeof(BkGpuFail), &c->fail, err, errlen)) {
        if (c->stream)
            w->ops->stream_free(dev, c->stream);
        free(c);
        return NULL;
    }
    return c;
}

/* c's stream, staging buffer, poll slot and failure record go (its
 * streams drained). */
static void ctx_release(RtGpuCtx *c)
{
    void *dev = DEV(c);
    rt_gpur_stage_free(c);
    defer_free(c->w, c->k, c->fail);
    c->w->ops->stream_free(dev, c->stream);
    free(c);
}

/* The end of the rank's run: its spare contexts go. */
static void spare_free(RtGpurRank *k)
{
    while (k->spare) {
        RtGpuCtx *c = k->spare;
        k->spare = c->kept_next;
        ctx_release(c);
    }
}

/* c's stream is waited for (drain: after the world failed, RT_GPUR_GRACE_MS
 * at most) before it, its staging buffer and its failure record go; in a
 * stuck world c is kept (w->kept). An async block's context is kept for
 * the rank's next fork instead (k->spare, freed at the end of the run):
 * freeing pinned memory (cuMemFreeHost / hipHostFree) may wait for the
 * whole device, whose kernels may wait for this rank. */
static void ctx_free(RtGpuCtx *c, RtRank *r)
{
    if (!c)
        return;
    bool drained = !rt_gpur_stuck(c->w) && !rt_gpur_drain(c, r, NULL);
    if (rt_gpur_stuck(c->w)) {
        pthread_mutex_lock(&c->w->lock);
        c->kept_next = c->w->kept;
        c->w->kept = c;
        pthread_mutex_unlock(&c->w->lock);
        return;
    }
    if (drained && c != c->k->main) {
        pthread_mutex_lock(&c->w->lock);
        c->kept_next = c->k->spare;
        c->k->spare = c;
        pthread_mutex_unlock(&c->w->lock);
        return;
    }
    ctx_release(c);
}

RtGpuCtx *rt_gpur_ctx(RtGpuWorld *gw, RtRank *r)
{
    return gw ? gw->ranks[rt_rank_id(r)].main : NULL;
}

RtGpuCtx *rt_gpur_fork(RtGpuCtx *c, RtRank *r)
{
    char err[512];
    /* the block sees everything queued before it */
    if (rt_gpur_sync(c, r, "the work queued before an async block"))
        return NULL;
    pthread_mutex_lock(&c->w->lock);
    RtGpuCtx *a = c->k->spare;
    if (a)
        c->k->spare = a->kept_next;
    pthread_mutex_unlock(&c->w->lock);
    if (a) {
        a->kept_next = NULL;
        return a;
    }
    a = ctx_new(c->w, c->k, err, sizeof err);
    if (!a)
        rt_gpur_fail(r, err);
    return a;
}

int rt_gpur_join(RtGpuCtx *c, RtRank *r)
{
    int rc = rt_gpur_sync(c, r, "the async block's work");
    ctx_free(c, r);
    return rc;
}

typedef struct Drain { RtGpuCtx *c; RtRank *r; const char *kernel; } Drain;

/* rt_gpu_launch_rank's wait: the kernel (rt_gpur_drain), then its failure
 * record read through the staging buffer (rt_gpur_d2h: the collectives'
 * deadline) */
static int drain_cb(void *cx, void *fail, size_t n)
{
    Drain *d = cx;
    char what[256];
    snprintf(what, sizeof what, "kernel %s", d->kernel);
    if (rt_gpur_drain(d->c, d->r, what))
        return -1;
    snprintf(what, sizeof what, "the read of kernel %s's failure record",
             d->kernel);
    return fail ? rt_gpur_d2h(d->c, d->r, fail, (const char *)(uintptr_t)d->c->fail,
                              n, what)
                : 0;
}

/* ------------------------------------------------------------ memory */

int rt_gpur_alloc(RtGpuCtx *c, RtRank *r, size_t bytes, int sym, char **out)
{
    RtGpuWorld *w = c->w;
    RtGpurRank *k = c->k;
    void *dev = DEV(c);
    char err[512];
    uint64_t p;
    size_t need = bytes ? bytes : 8;
    if (sym) {
        /* the same size on every rank, so the offsets agree; ranks that
         * ask different sizes fail as on CPU ranks (rt_sym_alloc):
         * "collective mismatch: rank 0 called sym_alloc(count B) ..." */
        RtRankColl d = {.kind = RT_COLL_SYM_ALLOC, .dtype = -1, .op = -1, .root = -1,
                        .count = bytes};
        if (rt_rank_coll_begin(r, &d) || rt_rank_coll_end(r))
            return -1;
        uint64_t agree = need;
        size_t off = (k->top + RT_SYM_ALIGN - 1) / RT_SYM_ALIGN * RT_SYM_ALIGN;
        if (off > w->heap_bytes || agree > w->heap_bytes - off)
            return rt_rank_fail(r, "symmetric heap out of memory: requested "
                                "%llu bytes, %zu left of %zu (set "
                                "BLKC_SYM_HEAP_MB)", (unsigned long long)agree,
                                w->heap_bytes - (off < w->heap_bytes ? off : w->heap_bytes),
                                w->heap_bytes);
        k->top = off + agree;
        p = k->heap + off;
        need = agree;
    } else if (w->ops->alloc(dev, need, &p, err, sizeof err)) {
        return rt_gpur_fail(r, err);
    }
    if (w->ops->zero(dev, p, need, c->stream, err, sizeof err) ||
        rt_gpur_sync(c, r, "the zeroing of a new buffer")) {
        if (!sym)
            w->ops->free(dev, p);
        return rt_rank_failed(r) ? -1 : rt_gpur_fail(r, err);
    }
    *out = (char *)(uintptr_t)p;
    /* no rank writes into a peer's block before the peer zeroed it */
    return sym ? rt_barrier(r) : 0;
}

/* (freed at the end of the run, after the rank's streams drained: no
 * wait here) */
void rt_gpur_free(RtGpuCtx *c, char *p)
{
    if (!c || !p || rt_gpur_stuck(c->w))
        return;
    defer_free(c->w, c->k, U64(p));
}

char *rt_gpur_peer(RtGpuCtx *c, RtRank *r, const char *p, int peer)
{
    (void)r;
    uint64_t a = U64(p), me = c->k->heap;
    if (peer < 0 || peer >= c->w->nranks || a < me || a > me + c->w->heap_bytes)
        return NULL;
    return (char *)(uintptr_t)(c->w->ranks[peer].heap + (a - me));
}

static bool compact(const RtPlanSpan *s, int esz)
{
    int64_t st = esz;
    for (int k = s->n - 1; k >= 0; k--) {
        if (s->len[k] > 1 && s->str[k] != st)
            return false;
        st *= s->len[k];
    }
    return true;
}

/* one run of rt_gpur_copy's row-by-row copy (rt_plan_span_runs) */
typedef struct GpuCopy {
    RtGpuCtx *c;
    RtRank *r;
    void *dev;
} GpuCopy;

static int gpu_copy_run(void *ctx, char *dp, char *sp, size_t bytes)
{
    GpuCopy *g = ctx;
    char err[512];
    if (g->c->w->ops->copy_async(g->dev, U64(dp), U64(sp), bytes, g->c->stream, err,
                                 sizeof err))
        return rt_gpur_fail(g->r, err);
    return 0;
}

int rt_gpur_copy(RtGpuCtx *c, RtRank *r, const RtPlanSpan *d,
                 const RtPlanSpan *s, int esz)
{
    const RtGpuOps *ops = c->w->ops;
    void *dev = DEV(c);
    char err[512];
    if (!d->base || !s->base)
        return rt_rank_fail(r, "copy: a view is not on the symmetric heap");
    if (compact(d, esz) && compact(s, esz)) {
        if (ops->copy_async(dev, U64(d->base), U64(s->base),
                            (size_t)d->numel * (size_t)esz, c->stream, err,
                            sizeof err))
            return rt_gpur_fail(r, err);
        return 0;
    }
    /* row by row (the innermost run both sides share), as plan.c does */
    GpuCopy gc = {c, r, dev};
    return rt_plan_span_runs(d, s, esz, gpu_copy_run, &gc);
}

int rt_gpur_read(RtGpuCtx *c, RtRank *r, void *dst, const char *src,
                 size_t bytes)
{
    if (rt_gpur_sync(c, r, "the work queued before a read from the device"))
        return -1;
    return rt_gpur_d2h(c, r, dst, src, bytes, "a read from the device");
}

/* ------------------------------------------------------------ signals */

int rt_gpur_notify(RtGpuCtx *c, RtRank *r, char *cell, uint64_t v, int op)
{
    RtGpurDev *d = c->k->d;
    char err[512];
    if (!cell)
        return rt_rank_fail(r, "notify: the signal is not on the symmetric heap");
    uint64_t pk[2] = {U64(cell), v}; /* packed (HIP), and each (CUDA) */
    void *params[2] = {&pk[0], &pk[1]};
    static const int64_t one[3] = {1, 1, 1};
    if (c->w->ops->launch(rt_gpu_dev(d->g), op == RT_SIG_ADD ? d->sig_add
                                                            : d->sig_set,
                          one, 1, 0, c->stream, params, pk, sizeof pk, err,
                          sizeof err))
        return rt_gpur_fail(r, err);
    return 0;
}

int rt_gpur_wait(RtGpuCtx *c, RtRank *r, const char *cell, int cmp,
                 uint64_t v, const char *name)
{
    int64_t tmo = rt_world_timeout_ms(rt_rank_world(r));
    int64_t t0 = rt_now_ms();
    uint64_t seen = 0;
    for (long spin = 0;; spin++) {
        /* (a read still in flight, 1, counts as a value not yet seen) */
        int q = rt_gpur_peek(c, r, cell, &seen);
        if (q < 0)
            break;
        if (q == 0 && (cmp == RT_WAIT_EQ ? seen == v : seen >= v))
            return 0;
        if (rt_rank_check(r))
            break;
        if (tmo > 0 && rt_now_ms() - t0 > tmo) {
            rt_rank_fail(r, "wait on signal %s timed out after %lld "
                         "ms: expected %s %llu, saw %llu",
                         name ? name : "(device cell)", (long long)tmo,
                         cmp == RT_WAIT_EQ ? "==" : ">=",
                         (unsigned long long)v, (unsigned long long)seen);
            break;
        }
        rt_gpur_poll_pause(spin);
    }
    rt_gpur_peek_end(c, r);
    return -1;
}

/* ------------------------------------------------------------ launches */

int rt_gpur_launch(RtGpuCtx *c, RtRank *r, const IrFunc *k, blkc_arg *args,
                   int nargs, const blkc_launch_options *lo)
{
    RtGpurDev *d = c->k->d;
    DLTensor t[64];
    if (nargs > 64)
        return rt_rank_fail(r, "kernel %s: too many arguments", k->name);
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind != BLKC_ARG_TENSOR)
            continue;
        t[i] = *args[i].v.tensor;
        t[i].device.device_type = rt_gpu_dl_type(d->g);
        t[i].device.device_id = rt_gpu_id(d->g);
        args[i].v.tensor = &t[i];
    }
    blkc_launch_options o;
    memset(&o, 0, sizeof o);
    if (lo)
        o = *lo;
    o.stream = c->stream;
    BkGpuRankCtx rc;
    memset(&rc, 0, sizeof rc);
    rc.rank = rt_rank_id(r);
    rc.world = rt_rank_size(r);
    rc.heap_base = c->k->table;
    rc.fail = c->fail;
    rc.abort_flag = d->abort_dptr;
    char err[1024];
    Drain dr = {c, r, k->name};
    if (rt_gpu_launch_rank(d->gm, k, args, nargs, &o, &rc, drain_cb, &dr, err,
                           sizeof err) != BLKC_OK)
        return rt_rank_fail(r, "launch %s: %s", k->name, err);
    return 0;
}

/* ------------------------------------------------------------ runner */


static int run_kernel(RtGpuWorld *w, RtRank *r, RtPlanArg *args)
{
    const IrFunc *f = w->pm.ir->funcs[w->fi];
    DLTensor t[64];
    blkc_arg a[64];
    if (f->nparams > 64)
        return rt_rank_fail(r, "kernel %s cannot be launched", f->name);
    rt_plan_kernel_args(f, args, 0, t, a); /* device type left unset */
    blkc_launch_options lo;
    memset(&lo, 0, sizeof lo);
    if (w->grid)
        memcpy(lo.grid, w->grid, sizeof lo.grid);
    return rt_gpur_launch(w->ranks[rt_rank_id(r)].main, r, f, a, f->nparams,
                          &lo);
}

/* mpirun: every process maps the others' heaps (CUDA / HIP IPC handles,
 * gathered over the host world) into bases (heap_table). */
static int ipc_exchange(RtGpuWorld *w, RtRank *r, int64_t *bases)
{
    int me = rt_rank_id(r), W = w->nranks;
    RtGpurRank *k = &w->ranks[me];
    void *dev = rt_gpu_dev(k->d->g);
    char err[512];
    unsigned char mine[RT_GPU_IPC_BYTES];
    unsigned char *all = calloc((size_t)W, RT_GPU_IPC_BYTES);
    int rc = 0;
    memset(mine, 0, sizeof mine);
    if (!all)
        rc = rt_rank_fail(r, "out of memory");
    else if (w->ops->ipc_get(dev, k->heap, mine, err, sizeof err))
        rc = rt_gpur_fail(r, err);
    /* every rank enters the gather; a failed one makes it give up */
    if (rt_all_gather(r, all, mine, RT_GPU_IPC_BYTES, DT_U8))
        rc = -1;
    for (int q = 0; q < W && rc == 0; q++) {
        if (q == me) {
            bases[q] = (int64_t)k->heap;
            continue;
        }
        uint64_t p = 0;
        if (w->ops->ipc_open(dev, all + (size_t)q * RT_GPU_IPC_BYTES, &p, err,
                             sizeof err)) {
            rc = rt_rank_fail(r, "mapping rank %d's heap: %s", q, err);
            break;
        }
        w->ranks[q].heap = p;
        w->ranks[q].ipc = true;
        bases[q] = (int64_t)p;
    }
    free(all);
    return rc < 0 ? -1 : 0;
}

/* The rank's heap table (every rank's heap as this rank's kernels address
 * it: its own device's allocations, or the peers' mapped under mpirun),
 * copied through the staging buffer with the collectives' deadline. */
static int heap_table(RtGpuWorld *w, RtRank *r)
{
    RtGpurRank *k = &w->ranks[rt_rank_id(r)];
    int64_t *bases = calloc((size_t)w->nranks, sizeof *bases);
    if (!bases)
        return rt_rank_fail(r, "out of memory");
    int rc = w->mpi ? ipc_exchange(w, r, bases) : 0;
    for (int q = 0; q < w->nranks && !w->mpi; q++)
        bases[q] = (int64_t)w->ranks[q].heap;
    if (rc == 0 && rt_gpur_h2d(k->main, r, (char *)(uintptr_t)k->table, bases,
                               (size_t)w->nranks * 8,
                               "the copy of the heap table to the device"))
        rc = -1;
    free(bases);
    return rc;
}

static int rank_main(RtRank *r, void *arg)
{
    RtGpuWorld *w = arg;
    int me = rt_rank_id(r);
    RtGpurRank *k = &w->ranks[me];
    const IrFunc *f = w->pm.ir->funcs[w->fi];
    RtPlanArg *mine = w->args[me];
    char err[512];
    k->top = 0;
    k->main = ctx_new(w, k, err, sizeof err);
    RtPlanArg *local = calloc((size_t)f->nparams + 1, sizeof *local);
    k->priv = calloc((size_t)f->nparams + 1, sizeof *k->priv);
    if (!k->main || !local || !k->priv) {
        rt_gpur_fail(r, k->main ? "out of memory" : err);
        free(local);
        free(k->priv);
        k->priv = NULL;
        ctx_free(k->main, r);
        k->main = NULL;
        spare_free(k);
        free_dead(w, k);
        return -1;
    }
    void *dev = rt_gpu_dev(k->d->g);
    int rc = heap_table(w, r);
    /* every tensor goes to the device: symmetric ones onto the heap */
    for (int p = 0; p < f->nparams && rc == 0; p++) {
        const IrParam *ip = &f->params[p];
        local[p] = mine[p];
        if (ip->kind != PK_TENSOR)
            continue;
        size_t bytes = (size_t)rt_plan_numel(ip, &mine[p]) * (size_t)dsl_dtype_bytes(ip->dtype);
        char *dp = NULL;
        bool sym = ip->mem != MEM_GLOBAL;
        if (rt_gpur_alloc(k->main, r, bytes, sym, &dp)) {
            rc = -1;
            break;
        }
        if (!sym)
            k->priv[k->npriv++] = U64(dp);
        local[p].data = dp;
        int64_t st = 1;
        for (int d = ip->rank - 1; d >= 0; d--) {
            local[p].stride[d] = st;
            st *= mine[p].shape[d];
        }
        if (mine[p].data && bytes &&
            rt_gpur_h2d(k->main, r, dp, mine[p].data, bytes, "the uploads to the device"))
            rc = -1;
    }
    if (rc == 0) /* uploads done */
        rc = rt_gpur_dev_wait(k->main, r, "the uploads to the device");
    if (rc == 0) /* every rank's inputs are in place before any rank starts */
        rc = rt_barrier(r);
    if (rc == 0)
        rc = f->is_device ? rt_plan_exec(&w->pm, w->fi, r, local)
                          : run_kernel(w, r, local);
    if (rc == 0)
        rc = rt_gpur_finish(k->main, r);
    /* the ranks meet at the end of the run: one whose kernel never ends
     * is named there */
    if (rc == 0)
        rc = rt_sym_release_final(r, rt_sym_mark(r));
    for (int p = 0; p < f->nparams && rc == 0; p++) {
        const IrParam *ip = &f->params[p];
        if (ip->kind == PK_TENSOR && mine[p].data &&
            rt_gpur_d2h(k->main, r, mine[p].data, local[p].data,
                        (size_t)rt_plan_numel(ip, &mine[p]) * (size_t)dsl_dtype_bytes(ip->dtype),
                        "the copy of the results to the host"))
            rc = -1;
    }
    if (k->comm && k->main)
        rt_gpur_nccl_release(k->main, r, k->comm, rt_rank_failed(r));
    k->comm = NULL;
    /* the rank's stream drained before its memory goes (after a failure
     * RT_GPUR_GRACE_MS at most, else the world is stuck) */
    if (k->main && !rt_gpur_stuck(w))
        rt_gpur_drain(k->main, r, NULL);
    /* an NCCL call left behind on a helper thread, or a stream that did
     * not drain, may still use the device's memory and streams: kept
     * (world_free parks the world) */
    bool kept = rt_gpur_stuck(w);
    for (int i = 0; i < k->npriv && !kept; i++)
        w->ops->free(dev, k->priv[i]);
    free(k->priv);
    k->priv = NULL;
    k->npriv = 0;
    if (w->mpi && rc == 0) {
        /* unmap the peers' heaps, then no peer uses ours any more */
        for (int q = 0; q < w->nranks; q++)
            if (w->ranks[q].ipc) {
                w->ops->ipc_close(dev, w->ranks[q].heap);
                w->ranks[q].ipc = false;
                w->ranks[q].heap = 0;
            }
        rc = rt_barrier(r);
    }
    if (!kept) {
        ctx_free(k->main, r);
        k->main = NULL;
        spare_free(k);
        free_dead(w, k);
    }
    free(local);
    return rc;
}

/* Worlds with an NCCL call left behind on a helper thread
 * (gpu_nccl_wait.c): never freed, since NCCL may still use their
 * devices, streams and memory; kept reachable here. */
static pthread_mutex_t parked_mu = PTHREAD_MUTEX_INITIALIZER;
static RtGpuWorld *parked;

static void world_free(RtGpuWorld *w)
{
    if (rt_gpur_stuck(w)) {
        pthread_mutex_lock(&parked_mu);
        w->parked_next = parked;
        parked = w;
        pthread_mutex_unlock(&parked_mu);
        return;
    }
    for (int i = 0; w->ranks && i < w->nranks; i++) {
        RtGpurRank *k = &w->ranks[i];
        if (k->ipc && w->ndev > 0)
            w->ops->ipc_close(rt_gpu_dev(w->devs[0].g), k->heap);
        if (k->d && k->heap)
            w->ops->free(rt_gpu_dev(k->d->g), k->heap);
        if (k->d && k->table)
            w->ops->free(rt_gpu_dev(k->d->g), k->table);
    }
    if (w->abort_host)
        w->ops->host_free(rt_gpu_dev(w->devs[0].g), w->abort_host);
    for (int j = 0; w->devs && j < w->ndev; j++) {
        RtGpurDev *d = &w->devs[j];
        if (!d->g)
            continue;
        if (d->sig_mod)
            w->ops->unload(rt_gpu_dev(d->g), d->sig_mod);
        rt_gpu_module_free(d->gm);
        rt_gpu_close(d->g);
    }
    free(w->ranks);
    free(w->devs);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* The notify kernels' image for device g: the PTX above, or sig_hip
 * compiled for g's arch into *hsaco (kept for the next device of the same
 * arch, *arch). */
static blkc_status sig_image(RtGpuWorld *w, RtGpu *g, DslBuf *hsaco,
                             char *arch, size_t archlen, const void **img,
                             size_t *n, char *err, size_t errlen)
{
    if (w->t != BLKC_TARGET_HIP) {
        *img = sig_ptx;
        *n = sizeof sig_ptx;
        return BLKC_OK;
    }
    if (!hsaco->len || strcmp(arch, rt_gpu_arch(g))) {
        char e[2048] = "";
        dsl_buf_free(hsaco);
        memset(hsaco, 0, sizeof *hsaco);
        snprintf(arch, archlen, "%s", rt_gpu_arch(g));
        if (bk_hip_compile(sig_hip, arch, hsaco, e, sizeof e) || !hsaco->len) {
            arch[0] = 0;
            return rt_fail(strstr(e, "not found") ? BLKC_ERR_UNSUPPORTED
                                                  : BLKC_ERR_RUNTIME,
                           err, errlen, "compiling the notify kernels for "
                           "%s: %s", rt_gpu_arch(g), e[0] ? e : "no code");
        }
    }
    *img = hsaco->data;
    *n = hsaco->len;
    return BLKC_OK;
}

/* The abort flag the kernels poll: one mapped host int for the world and
 * its address on each device. Where it cannot be had, no flag (0): a
 * kernel's wait on a failed peer then runs to its timeout. */
static void abort_flag_setup(RtGpuWorld *w)
{
    char err[512];
    void *host = NULL;
    if (!w->ops->host_map ||
        w->ops->host_map(rt_gpu_dev(w->devs[0].g), sizeof(int), &host, err,
                         sizeof err) || !host)
        return;
    for (int j = 0; j < w->ndev; j++)
        if (w->ops->host_dptr(rt_gpu_dev(w->devs[j].g), host,
                              &w->devs[j].abort_dptr, err, sizeof err)) {
            for (int i = 0; i < w->ndev; i++)
                w->devs[i].abort_dptr = 0;
            w->ops->host_free(rt_gpu_dev(w->devs[0].g), host);
            return;
        }
    w->abort_host = host;
}

/* Open the devices, load the modules, allocate the heaps and tables. */
static blkc_status world_setup(RtGpuWorld *w, int id0, RtGpu *first,
                               char *err, size_t errlen)
{
    int n = 0;
    if (w->ops->count(&n, err, errlen) || n <= 0) {
        rt_gpu_close(first);
        return rt_fail(BLKC_ERR_UNSUPPORTED, err, errlen, "no %s device",
                       w->ops->vendor);
    }
    /* under mpirun this process opens only its own rank's device */
    w->ndev = w->mpi ? 1 : w->nranks < n ? w->nranks : n;
    w->devs = calloc((size_t)w->ndev, sizeof *w->devs);
    w->ranks = calloc((size_t)w->nranks, sizeof *w->ranks);
    if (!w->devs || !w->ranks) {
        rt_gpu_close(first);
        return rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
    }
    blkc_status st = BLKC_OK;
    if (w->mpi && (id0 + w->self) % n != id0) {
        rt_gpu_close(first);
        first = NULL;
        st = rt_gpu_open(w->t, (id0 + w->self) % n, &first, err, errlen);
    }
    w->devs[0].g = first;
    for (int j = 1; j < w->ndev && st == BLKC_OK; j++)
        st = rt_gpu_open(w->t, (id0 + j) % n, &w->devs[j].g, err, errlen);
    for (int i = 0; i < w->ndev && st == BLKC_OK; i++)
        for (int j = 0; j < w->ndev && st == BLKC_OK; j++)
            if (i != j && w->ops->peer_enable(rt_gpu_dev(w->devs[i].g),
                                              rt_gpu_dev(w->devs[j].g), err,
                                              errlen))
                st = BLKC_ERR_RUNTIME;
    if (st == BLKC_OK)
        abort_flag_setup(w);
    DslBuf hsaco;
    char hsaco_arch[32] = "";
    memset(&hsaco, 0, sizeof hsaco);
    for (int j = 0; j < w->ndev && st == BLKC_OK; j++) {
        RtGpurDev *d = &w->devs[j];
        void *dev = rt_gpu_dev(d->g);
        const void *img = NULL;
        size_t len = 0;
        st = rt_gpu_module_load(d->g, w->pm.ir, &d->gm, err, errlen);
        if (st == BLKC_OK)
            st = sig_image(w, d->g, &hsaco, hsaco_arch, sizeof hsaco_arch,
                           &img, &len, err, errlen);
        if (st == BLKC_OK &&
            (w->ops->load(dev, img, len, &d->sig_mod, err, errlen) ||
             w->ops->function(dev, d->sig_mod, "blk_sig_set", 0, &d->sig_set, err, errlen) ||
             w->ops->function(dev, d->sig_mod, "blk_sig_add", 0, &d->sig_add, err, errlen)))
            st = BLKC_ERR_RUNTIME;
    }
    dsl_buf_free(&hsaco);
    /* (the tables are filled by their ranks: heap_table) */
    for (int i = 0; i < w->nranks && st == BLKC_OK; i++) {
        RtGpurRank *k = &w->ranks[i];
        if (w->mpi && i != w->self)
            continue; /* another process's rank: mapped in ipc_exchange */
        k->d = &w->devs[w->mpi ? 0 : i % w->ndev];
        void *dev = rt_gpu_dev(k->d->g);
        if (w->ops->alloc(dev, w->heap_bytes, &k->heap, err, errlen) ||
            w->ops->alloc(dev, (size_t)w->nranks * 8, &k->table, err, errlen))
            st = BLKC_ERR_RUNTIME;
    }
    return st;
}

blkc_status rt_gpur_run(const RtPlanModule *pm, int fi, int nranks,
                        RtPlanArg *const *args, const int64_t *grid,
                        const char *device, char *err, size_t errlen)
{
    blkc_target t;
    int id0;
    if (rt_gpu_parse_device(device, &t, &id0, err, errlen) < 0)
        return BLKC_ERR_USAGE;
    if (nranks < 1 || nranks > RT_RANK_MAX)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "bad number of ranks %d",
                       nranks);
    RtGpu *first = NULL;
    blkc_status st = rt_gpu_open(t, id0, &first, err, errlen);
    if (st != BLKC_OK)
        return st;
    const RtGpuOps *ops = rt_gpu_ops(first);
    int mpi = rt_mpi_launch_size() > 1;
    if (!ops->count || !ops->stream_new || !ops->copy_async ||
        (mpi && !ops->ipc_get)) {
        rt_gpu_close(first);
        return rt_fail(BLKC_ERR_UNSUPPORTED, err, errlen, "GPU ranks (--ranks "
                       "or a device function) are not implemented on %s; "
                       "use cuda, hip or cpu", ops->vendor);
    }
    RtGpuWorld *w = calloc(1, sizeof *w);
    if (!w) {
        rt_gpu_close(first);
        return rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
    }
    w->t = t;
    w->ops = ops;
    w->nranks = nranks;
    pthread_mutex_init(&w->lock, NULL);
    w->mpi = mpi;
    w->self = mpi ? rt_mpi_launch_rank() : 0;
    if (w->self < 0 || w->self >= nranks)
        w->self = 0;
    w->pm = *pm;
    w->pm.gpu = w;
    w->fi = fi;
    w->args = args;
    w->grid = grid;
    const IrFunc *f = pm->ir->funcs[fi];
    w->heap_bytes = (size_t)64 << 20;
    for (int p = 0; p < f->nparams; p++) { /* room for the symmetric params */
        const IrParam *ip = &f->params[p];
        if (ip->kind == PK_TENSOR && ip->mem != MEM_GLOBAL)
            w->heap_bytes += (size_t)rt_plan_numel(ip, &args[w->self][p]) *
                             (size_t)dsl_dtype_bytes(ip->dtype) + 256;
    }
    const char *env = getenv("BLKC_SYM_HEAP_MB");
    if (env && atoll(env) > 0)
        w->heap_bytes = (size_t)atoll(env) << 20;
    env = getenv("BLKC_GPU_COLL");
    w->coll_mode = env && !strcmp(env, "nccl") ? RT_GPUR_COLL_NCCL
                 : env && !strcmp(env, "host") ? RT_GPUR_COLL_HOST : RT_GPUR_COLL_AUTO;
    st = world_setup(w, id0, first, err, errlen);
    if (st == BLKC_OK) {
        if (rt_nccl_load(t, w->nccl_why, sizeof w->nccl_why) == 0) {
            int n = 0; /* devices visible; one per rank when nranks <= n */
            w->ops->count(&n, w->nccl_why, sizeof w->nccl_why);
            int used = nranks < n ? nranks : n;
            w->nccl_ok = used == nranks;
            if (!w->nccl_ok)
                snprintf(w->nccl_why, sizeof w->nccl_why, "%d ranks share %d "
                         "device%s, and NCCL needs one device per rank",
                         nranks, used, used == 1 ? "" : "s");
        }
    }
    RtWorld *hw = NULL;
    /* the host world: threads, or mpirun's processes (its heap stages
     * the host collectives' buffers) */
    if (st == BLKC_OK &&
        (mpi ? rt_world_create_mpi(nranks, w->heap_bytes, &hw, err, errlen)
             : rt_world_create(nranks, (size_t)1 << 16, &hw, err, errlen)))
        st = BLKC_ERR_RUNTIME;
    if (st == BLKC_OK) /* set (and reset) with the host world's abort flag */
        rt_world_set_abort_mirror(hw, w->abort_host);
    if (st == BLKC_OK && rt_world_run(hw, rank_main, w, err, errlen))
        st = BLKC_ERR_RUNTIME;
    if (hw && rt_world_behind(hw)) /* a rank thread still uses the devices */
        __atomic_store_n(&w->stuck, 1, __ATOMIC_RELEASE);
    rt_world_destroy(hw);
    world_free(w);
    return st;
}
