/* gpu_copy.c — the staged copies between host memory and a device
 * (gpu.h: rt_gpu_stage_copy; rt_gpu_copy_timed for the lone runs, the
 * uploads and results of `blkc run --device=GPU` without ranks and the
 * read of a lone kernel's failure record, with the lone kernel's
 * deadline; gpu_ranks.h: rt_gpur_h2d, rt_gpur_d2h for GPU ranks, with
 * the collectives' deadline: the uploads, the heap table, the results, a
 * staged collective's, group collective's or exchange's copies, a
 * kernel's failure record and the reads of device memory). A synchronous
 * driver copy (cuMemcpyHtoD / DtoH) from pageable memory blocks in the
 * driver with no way out, so each copy goes through a pinned staging
 * buffer (host_map: cuMemHostAlloc / hipHostMalloc) in chunks: the chunk
 * is copied between the user's memory and the buffer on the host, and
 * between the buffer and the device by an asynchronous copy on a stream
 * (a rank's own, or the lone stage's), waited for by the caller's polled
 * wait (rt_gpur_sync: "WHAT did not complete within T ms", the rank
 * fails, exit 3; rt_gpu_wait: the same with "(the deadline that ...)",
 * the device then busy). Where there is no staging buffer (the driver
 * lacks mapped host memory or cuStreamQuery / hipStreamQuery, an
 * emulated device; a lone run without a deadline) the synchronous copy,
 * unbounded; where the driver lacks the asynchronous copy its table does
 * the synchronous one (gpu_cuda.c, gpu_hip.c).
 *
 * Growth. cuMemFreeHost / hipHostFree may synchronize the whole device,
 * whose kernel may be waiting for a peer that waits for this thread: a
 * staging buffer is never freed while it is in use. The first is as
 * large as the first copy needs (a power of two from 4 KiB, at most
 * RT_GPU_STAGE_MAX); a larger need maps one of RT_GPU_STAGE_MAX bytes
 * and keeps the first (old) until the stage goes with its context or
 * run, its streams drained (gpu_ranks.c keeps an async block's context
 * for the rank's next one: nothing pinned is freed during a run). So at
 * most 6 MiB and no free to grow (where the larger cannot be mapped the
 * copies go on in the first's chunks).
 *
 * The host polls of a signal cell (rt_gpur_wait, rt_gpur_peek) are
 * asynchronous 8-byte copies into a pinned slot on a stream of the
 * context's own, each asked about once per round of the wait, so that a
 * read that never completes ends at the wait's timeout like a signal
 * that never comes (the slot and the stream are then kept: the copy may
 * still land). Where there is no staging buffer, synchronous reads,
 * unbounded. */
#include "gpu_ranks.h"

#include <stdlib.h>
#include <string.h>

#define DEV(c) rt_gpu_dev((c)->k->d->g)

static bool can_stage(const RtGpuOps *ops)
{
    return ops->host_map && ops->host_free && ops->query && ops->h2d_async &&
           ops->d2h_async;
}

/* s's staging buffer, of at least min(need, RT_GPU_STAGE_MAX) bytes
 * where it can be had (see Growth above); NULL where none can: then the
 * synchronous copies. */
static char *stage(const RtGpuOps *ops, void *dev, RtGpuStage *s, size_t need)
{
    if (s->none || !can_stage(ops))
        return NULL;
    need = need < RT_GPU_STAGE_MAX ? need : RT_GPU_STAGE_MAX;
    if (s->buf && (s->bytes >= need || s->grown))
        return s->buf;
    size_t n = RT_GPU_STAGE_MAX;
    if (!s->buf)
        for (n = 4096; n < need; n *= 2)
            ;
    s->grown = s->buf != NULL;
    char err[512];
    void *p = NULL;
    if (ops->host_map(dev, n, &p, err, sizeof err) || !p) {
        s->none = !s->buf; /* else on in the first buffer's chunks */
        return s->buf;
    }
    s->old = s->buf;
    s->buf = p;
    s->bytes = n;
    return s->buf;
}

int rt_gpu_stage_copy(const RtGpuOps *ops, void *dev, RtGpuStage *s,
                      void *stream, bool up, uint64_t dptr, void *host,
                      size_t bytes, const char *what, RtGpuStageWait wait,
                      void *cx, char *err, size_t errlen)
{
    char *buf = bytes ? stage(ops, dev, s, bytes) : NULL;
    if (!buf) {
        if (bytes && (up ? ops->h2d(dev, dptr, host, bytes, err, errlen)
                         : ops->d2h(dev, host, dptr, bytes, err, errlen)))
            return -1;
        return 0;
    }
    for (size_t off = 0; off < bytes; off += s->bytes) {
        size_t n = bytes - off < s->bytes ? bytes - off : s->bytes;
        if (up)
            memcpy(buf, (char *)host + off, n);
        if (up ? ops->h2d_async(dev, dptr + off, buf, n, stream, err, errlen)
               : ops->d2h_async(dev, buf, dptr + off, n, stream, err, errlen))
            return -1;
        if (wait(cx, stream, what, err, errlen))
            return -2;
        if (!up)
            memcpy((char *)host + off, buf, n);
    }
    return 0;
}

/* rt_gpu_copy_timed's wait: rt_gpu_wait with the lone deadline */
typedef struct LoneWait { RtGpu *g; int64_t tmo; } LoneWait;

static int lone_wait(void *cx, void *stream, const char *what, char *err,
                     size_t errlen)
{
    LoneWait *lw = cx;
    return rt_gpu_wait(lw->g, stream, what, lw->tmo, err, errlen);
}

blkc_status rt_gpu_copy_timed(RtGpu *g, RtGpuStage *s, bool up, uint64_t dptr,
                              void *host, size_t bytes, const char *what,
                              int64_t tmo_ms, char *err, size_t errlen)
{
    const RtGpuOps *ops = rt_gpu_ops(g);
    void *dev = rt_gpu_dev(g);
    if (tmo_ms < 0 || !ops->stream_new) /* no deadline: synchronous */
        return up ? rt_gpu_upload(g, dptr, host, bytes, err, errlen)
                  : rt_gpu_download(g, host, dptr, bytes, err, errlen);
    char why[512]; /* no stream: the synchronous copies, no error */
    if (!s->own && !s->none && can_stage(ops) &&
        ops->stream_new(dev, &s->own, why, sizeof why)) {
        s->own = NULL;
        s->none = true;
    }
    LoneWait lw = {g, tmo_ms};
    return rt_gpu_stage_copy(ops, dev, s, s->own, up, dptr, host, bytes, what,
                             lone_wait, &lw, err, errlen)
               ? BLKC_ERR_RUNTIME : BLKC_OK;
}

void rt_gpu_stage_free(const RtGpuOps *ops, void *dev, RtGpuStage *s)
{
    if (s->buf)
        ops->host_free(dev, s->buf);
    if (s->old)
        ops->host_free(dev, s->old);
    if (s->own)
        ops->stream_free(dev, s->own);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ GPU ranks */

/* rt_gpur_h2d / rt_gpur_d2h's wait: rt_gpur_sync, which fails the rank */
typedef struct RankWait { RtGpuCtx *c; RtRank *r; } RankWait;

static int rank_wait(void *cx, void *stream, const char *what, char *err,
                     size_t errlen)
{
    (void)stream; /* the context's */
    (void)err;
    (void)errlen;
    RankWait *rw = cx;
    return rt_gpur_sync(rw->c, rw->r, what);
}

static int rank_copy(RtGpuCtx *c, RtRank *r, bool up, uint64_t dptr,
                     void *host, size_t bytes, const char *what)
{
    char err[512];
    RankWait rw = {c, r};
    int rc = rt_gpu_stage_copy(c->w->ops, DEV(c), &c->stage, c->stream, up,
                               dptr, host, bytes, what, rank_wait, &rw, err,
                               sizeof err);
    return rc == -1 ? rt_gpur_fail(r, err) : rc ? -1 : 0;
}

int rt_gpur_h2d(RtGpuCtx *c, RtRank *r, char *dst, const void *src,
                size_t bytes, const char *what)
{
    return rank_copy(c, r, true, (uint64_t)(uintptr_t)dst, (void *)src, bytes,
                     what);
}

int rt_gpur_d2h(RtGpuCtx *c, RtRank *r, void *dst, const char *src,
                size_t bytes, const char *what)
{
    return rank_copy(c, r, false, (uint64_t)(uintptr_t)src, dst, bytes, what);
}

/* c's poll slot and stream, made at the first poll; false where they
 * cannot be had (then synchronous reads): where a staging buffer cannot
 * (the driver lacks mapped host memory, queries or asynchronous copies) */
static bool poll_ready(RtGpuCtx *c)
{
    const RtGpuOps *ops = c->w->ops;
    if (c->poll)
        return true;
    if (c->no_poll || !stage(ops, DEV(c), &c->stage, 8) || !ops->stream_new) {
        c->no_poll = true;
        return false;
    }
    char err[512];
    void *p = NULL;
    if (ops->host_map(DEV(c), 8, &p, err, sizeof err) || !p) {
        c->no_poll = true;
        return false;
    }
    if (ops->stream_new(DEV(c), &c->poll_stream, err, sizeof err)) {
        ops->host_free(DEV(c), p);
        c->poll_stream = NULL;
        c->no_poll = true;
        return false;
    }
    c->poll = p;
    return true;
}

int rt_gpur_peek(RtGpuCtx *c, RtRank *r, const char *cell, uint64_t *out)
{
    const RtGpuOps *ops = c->w->ops;
    char err[512];
    if (!poll_ready(c))
        return ops->d2h(DEV(c), out, (uint64_t)(uintptr_t)cell, 8, err, sizeof err)
                   ? rt_gpur_fail(r, err) : 0;
    if (!c->poll_busy) {
        if (ops->d2h_async(DEV(c), c->poll, (uint64_t)(uintptr_t)cell, 8,
                           c->poll_stream, err, sizeof err))
            return rt_gpur_fail(r, err);
        c->poll_busy = true;
    }
    int q = ops->query(DEV(c), c->poll_stream, err, sizeof err);
    if (q < 0)
        return rt_gpur_fail(r, err);
    if (q)
        return 1;
    c->poll_busy = false;
    *out = __atomic_load_n(c->poll, __ATOMIC_ACQUIRE);
    return 0;
}

void rt_gpur_peek_end(RtGpuCtx *c, RtRank *r)
{
    if (c->poll_busy &&
        !rt_gpur_stream_wait(c->w, DEV(c), c->poll_stream, r, NULL, -1))
        c->poll_busy = false;
}

void rt_gpur_stage_free(RtGpuCtx *c)
{
    rt_gpu_stage_free(c->w->ops, DEV(c), &c->stage);
    if (c->poll) {
        c->w->ops->stream_free(DEV(c), c->poll_stream);
        c->w->ops->host_free(DEV(c), c->poll);
    }
    c->poll = NULL;
    c->poll_stream = NULL;
}
