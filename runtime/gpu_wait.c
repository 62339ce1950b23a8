/* gpu_wait.c — the waits of GPU ranks (gpu_ranks.h) for their streams,
 * none a synchronize where the driver can be asked (cuStreamQuery /
 * hipStreamQuery): rt_gpur_stream_wait polls a stream until it drained,
 * the deadline given, or RT_GPUR_GRACE_MS after the world failed (then
 * the world is stuck); on it rt_gpur_sync (the rank's own stream before
 * the host reads or stages its memory, an allocation's zeroing, an async
 * block's fork and join, each chunk of a staged copy) and
 * rt_gpur_dev_wait (the default stream) with the collectives' deadline,
 * counted as waits; rt_gpur_drain and rt_gpur_finish (a launch's kernel,
 * the end of the run, a stream's end) with none of their own (a lone
 * rank's kernel: a lone kernel's, where one is set). Without a query
 * function each is a synchronize, unbounded. */
#include "gpu_ranks.h"

#include <stdio.h>
#include <time.h>

#define DEV(c) rt_gpu_dev((c)->k->d->g)

/* The synchronize of c's stream (no deadline): where the driver has no
 * query function, and once the world is stuck (then only the message). */
static int stream_sync(RtGpuCtx *c, RtRank *r)
{
    char err[512];
    if (rt_gpur_stuck(c->w))
        return rt_rank_fail(r, "the device is not waited for: an NCCL call "
                            "did not return or a stream did not drain");
    if (c->w->ops->sync(DEV(c), c->stream, err, sizeof err))
        return rt_gpur_fail(r, err);
    return 0;
}

/* A polled wait for stream (NULL: the default stream) with the
 * collectives' deadline, counted as a wait (rt_gpur_dev_wait,
 * rt_gpur_sync). */
static int counted_wait(RtGpuCtx *c, RtRank *r, void *stream, const char *what)
{
    int *busy = rt_rank_in_wait(r);
    __atomic_add_fetch(busy, 1, __ATOMIC_ACQ_REL);
    int rc = rt_gpur_stream_wait(c->w, DEV(c), stream, r, what,
                                 rt_world_coll_timeout_ms(rt_rank_world(r)));
    __atomic_sub_fetch(busy, 1, __ATOMIC_ACQ_REL);
    return rc;
}

/* Wait for the rank's own stream (its kernels, at a launch and at the
 * end of the run) by polling it (rt_gpur_stream_wait), so that a rank
 * whose kernel does not end (computing for ever; its peers name it at the
 * end of the run) stops when the world fails: the stream gets
 * RT_GPUR_GRACE_MS more to drain, then the world is marked stuck (its
 * streams and memory kept, as for an NCCL call left behind). No deadline
 * of its own, but for `what` (a kernel, the end of the run) on a lone
 * rank, which no peer names: the one `blkc run --device=GPU` gives a
 * kernel where BLKC_COLL_TIMEOUT_MS or BLKC_WAIT_TIMEOUT_MS is set
 * (rt_set_deadline_ms). Without a query function: synchronized,
 * unbounded. */
int rt_gpur_drain(RtGpuCtx *c, RtRank *r, const char *what)
{
    RtGpuWorld *w = c->w;
    if (rt_gpur_stuck(w) || !w->ops->query)
        return stream_sync(c, r);
    int64_t tmo = what && rt_rank_size(r) == 1 ? rt_set_deadline_ms() : -1;
    return rt_gpur_stream_wait(w, DEV(c), c->stream, r, what, tmo);
}

int rt_gpur_sync(RtGpuCtx *c, RtRank *r, const char *what)
{
    if (rt_gpur_stuck(c->w) || !c->w->ops->query)
        return stream_sync(c, r);
    return counted_wait(c, r, c->stream, what);
}

void rt_gpur_poll_pause(long round)
{
    struct timespec ts = {0, round < 2500 ? 20000 : 100000};
    nanosleep(&ts, NULL);
}

int rt_gpur_stream_wait(RtGpuWorld *w, void *dev, void *stream, RtRank *r,
                        const char *what, int64_t tmo_ms)
{
    char err[512];
    int64_t t0 = rt_now_ms(), give_up = -1;
    for (long round = 0;; round++) {
        int q = w->ops->query(dev, stream, err, sizeof err);
        if (q < 0)
            return rt_gpur_fail(r, err);
        if (q == 0)
            return 0;
        int64_t now = rt_now_ms();
        if (tmo_ms >= 0 && now - t0 >= tmo_ms && !rt_rank_failed(r))
            rt_rank_fail(r, "%s did not complete within %lld ms", what,
                         (long long)tmo_ms);
        if (rt_rank_failed(r)) {
            if (give_up < 0) {
                give_up = now + RT_GPUR_GRACE_MS;
            } else if (now >= give_up) {
                __atomic_store_n(&w->stuck, 1, __ATOMIC_RELEASE);
                rt_rank_check(r); /* records why: "aborted because ..." */
                return -1;
            }
        }
        rt_gpur_poll_pause(round);
    }
}

int rt_gpur_dev_wait(RtGpuCtx *c, RtRank *r, const char *what)
{
    RtGpuWorld *w = c->w;
    char err[512];
    if (!w->ops->query)
        return w->ops->sync(DEV(c), NULL, err, sizeof err) ? rt_gpur_fail(r, err)
                                                           : 0;
    return counted_wait(c, r, NULL, what);
}

int rt_gpur_finish(RtGpuCtx *c, RtRank *r)
{
    if (rt_gpur_drain(c, r, "the work on the rank's stream at the end of the run"))
        return -1;
    char err[512];
    if (c->k->comm && rt_nccl_check(c->w->t, c->k->comm, err, sizeof err))
        return rt_gpur_fail(r, err);
    return 0;
}

