/* gpu_copy.c — the copies between host memory and a GPU rank's device
 * (gpu_ranks.h: rt_gpur_h2d, rt_gpur_d2h) with a deadline: the uploads,
 * the heap table, the results, a staged collective's, group collective's
 * or exchange's copies, a kernel's failure record and the reads of
 * device memory. A synchronous driver copy (cuMemcpyHtoD / DtoH) from
 * pageable memory blocks in the driver with no way out, so each copy
 * goes through the context's pinned staging buffer
 * (host_map: cuMemHostAlloc / hipHostMalloc) in chunks: the chunk is
 * copied between the user's memory and the buffer on the host, and
 * between the buffer and the device by an asynchronous copy on the rank's
 * stream, waited for by polling with the collectives' deadline
 * (rt_gpur_sync: "WHAT did not complete within T ms", exit 3). Where
 * there is no staging buffer (the driver lacks mapped host memory or
 * cuStreamQuery / hipStreamQuery, an emulated device) the synchronous
 * copy, unbounded, as before; where the driver lacks the asynchronous
 * copy its table does the synchronous one (gpu_cuda.c, gpu_hip.c).
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
#define STAGE_MAX ((size_t)4 << 20) /* bytes of a staging buffer, at most */

/* c's staging buffer, at least min(need, STAGE_MAX) bytes (grown by
 * doubling); NULL where it cannot be had: then the synchronous copies. */
static char *stage(RtGpuCtx *c, size_t need)
{
    const RtGpuOps *ops = c->w->ops;
    if (c->no_stage || !ops->host_map || !ops->host_free || !ops->query ||
        !ops->h2d_async || !ops->d2h_async)
        return NULL;
    need = need < STAGE_MAX ? need : STAGE_MAX;
    if (c->stage && c->stage_bytes >= need)
        return c->stage;
    size_t n = c->stage_bytes ? c->stage_bytes : 4096;
    while (n < need)
        n *= 2;
    n = n < STAGE_MAX ? n : STAGE_MAX;
    /* the old buffer is idle: every copy through it was waited for */
    if (c->stage)
        ops->host_free(DEV(c), c->stage);
    c->stage = NULL;
    c->stage_bytes = 0;
    char err[512];
    void *p = NULL;
    if (ops->host_map(DEV(c), n, &p, err, sizeof err) || !p) {
        c->no_stage = true;
        return NULL;
    }
    c->stage = p;
    c->stage_bytes = n;
    return c->stage;
}

int rt_gpur_h2d(RtGpuCtx *c, RtRank *r, char *dst, const void *src,
                size_t bytes, const char *what)
{
    const RtGpuOps *ops = c->w->ops;
    char err[512];
    char *buf = bytes ? stage(c, bytes) : NULL;
    if (!buf) {
        if (bytes && ops->h2d(DEV(c), (uint64_t)(uintptr_t)dst, src, bytes, err,
                              sizeof err))
            return rt_gpur_fail(r, err);
        return 0;
    }
    for (size_t off = 0; off < bytes; off += c->stage_bytes) {
        size_t n = bytes - off < c->stage_bytes ? bytes - off : c->stage_bytes;
        memcpy(buf, (const char *)src + off, n);
        if (ops->h2d_async(DEV(c), (uint64_t)(uintptr_t)(dst + off), buf, n,
                           c->stream, err, sizeof err))
            return rt_gpur_fail(r, err);
        if (rt_gpur_sync(c, r, what))
            return -1;
    }
    return 0;
}

int rt_gpur_d2h(RtGpuCtx *c, RtRank *r, void *dst, const char *src,
                size_t bytes, const char *what)
{
    const RtGpuOps *ops = c->w->ops;
    char err[512];
    char *buf = bytes ? stage(c, bytes) : NULL;
    if (!buf) {
        if (bytes && ops->d2h(DEV(c), dst, (uint64_t)(uintptr_t)src, bytes, err,
                              sizeof err))
            return rt_gpur_fail(r, err);
        return 0;
    }
    for (size_t off = 0; off < bytes; off += c->stage_bytes) {
        size_t n = bytes - off < c->stage_bytes ? bytes - off : c->stage_bytes;
        if (ops->d2h_async(DEV(c), buf, (uint64_t)(uintptr_t)(src + off), n,
                           c->stream, err, sizeof err))
            return rt_gpur_fail(r, err);
        if (rt_gpur_sync(c, r, what))
            return -1;
        memcpy((char *)dst + off, buf, n);
    }
    return 0;
}

/* c's poll slot and stream, made at the first poll; false where they
 * cannot be had (then synchronous reads): where a staging buffer cannot
 * (the driver lacks mapped host memory, queries or asynchronous copies) */
static bool poll_ready(RtGpuCtx *c)
{
    const RtGpuOps *ops = c->w->ops;
    if (c->poll)
        return true;
    if (c->no_poll || !stage(c, 8) || !ops->stream_new) {
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
    if (c->stage)
        c->w->ops->host_free(DEV(c), c->stage);
    c->stage = NULL;
    c->stage_bytes = 0;
    if (c->poll) {
        c->w->ops->stream_free(DEV(c), c->poll_stream);
        c->w->ops->host_free(DEV(c), c->poll);
    }
    c->poll = NULL;
    c->poll_stream = NULL;
}
