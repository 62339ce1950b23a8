/* gpu_nccl_wait.c — every NCCL/RCCL call of GPU ranks (gpu_coll.c,
 * gpu_p2p.c, gpu_ranks.c) with the collectives' deadline
 * (rt_world_coll_timeout_ms): nothing waits for NCCL without one.
 *
 * Nonblocking communicators (the library has ncclCommInitRankConfig): the
 * call runs on the rank's thread and answers at once (ncclInProgress);
 * then ncclCommGetAsyncError and the stream are polled (poll_done).
 *
 * Blocking communicators (an older NCCL): ncclCommInitRank blocks until
 * every rank joined, a collective or ncclGroupEnd may block in NCCL's
 * connection setup, ncclCommDestroy / ncclCommAbort may wait for NCCL's
 * kernels. Each such call runs on a helper thread (detached) with the
 * rank's device current; the rank waits for it on a condition variable
 * with the deadline and then polls the stream (cuStreamQuery /
 * hipStreamQuery, never a synchronize) with the rest of it. At the
 * deadline, or when the world fails, the rank gives up (give_up): the
 * world's communicator is aborted (ncclCommAbort, itself on a helper with
 * a bounded wait), which should make the stuck call return; it gets a
 * short grace for that. A helper still inside NCCL after it is left
 * behind, never joined: process exit and blkc_context_destroy do not wait
 * for detached threads. It holds a reference to its job (arguments copied
 * in, its result and message), so nothing it touches on the host is freed
 * under it; NCCL may still use the rank's device, stream and buffers, so
 * the world is marked stuck (RtGpuWorld.stuck) and its teardown keeps
 * them (gpu_ranks.c parks the world instead of freeing it). A
 * communicator that an abandoned init or split makes later is aborted by
 * its helper. Prefix rt_gpur_. */
#include "gpu_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEV(c) rt_gpu_dev((c)->k->d->g)
#define GRACE_MS 1000 /* for a call to return after its communicator's abort */

static const char *lib_name(const RtGpuWorld *w)
{
    return w->t == BLKC_TARGET_HIP ? "RCCL" : "NCCL";
}

static int64_t end_of(RtRank *r, int64_t t0)
{
    int64_t tmo = rt_world_coll_timeout_ms(rt_rank_world(r));
    return tmo < 0 ? -1 : t0 + tmo;
}

static int timed_out(RtGpuCtx *c, RtRank *r, const char *what, bool has_comm)
{
    return rt_rank_fail(r, "%s did not complete within %lld ms (a peer failed, "
                        "hangs or called another collective); the %s "
                        "communicator is %s", what,
                        (long long)rt_world_coll_timeout_ms(rt_rank_world(r)),
                        lib_name(c->w), has_comm ? "aborted" : "abandoned");
}

/* ------------------------------------------------------------ helper threads */

enum { J_INIT, J_SPLIT, J_COLL, J_XCHG, J_DESTROY, J_ABORT };

typedef struct Job {
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* done */
    int refs;                      /* the waiter's and the helper's */
    bool done, gone;               /* the call returned; the waiter left */
    int rc;                        /* the call's */
    char err[512];
    int kind;                      /* J_* */
    blkc_target t;
    const RtGpuOps *ops;           /* a static table */
    void *dev, *stream;            /* used only before gone (under mu) */
    void *comm;                    /* the communicator called on */
    void *made;                    /* init / split: the new one */
    char id[RT_NCCL_ID_BYTES];     /* init */
    int nranks, rank, color, key;  /* init, split */
    RtNcclColl coll;               /* its counts point into the job */
    size_t counts[RT_RANK_MAX], counts2[RT_RANK_MAX];
    RtP2p *p2p;                    /* exchange: a copy */
    int n;
} Job;

static void job_unref(Job *j)
{
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left)
        return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j->p2p);
    free(j);
}

static int job_call(Job *j, char *err, size_t errlen)
{
    int nb = 0;
    switch (j->kind) {
    case J_INIT:
        return rt_nccl_comm_init(j->t, j->nranks, j->id, j->rank, &j->made, &nb,
                                 err, errlen);
    case J_SPLIT:
        return rt_nccl_comm_split(j->t, j->comm, j->color, j->key, &j->made,
                                  err, errlen);
    case J_COLL:
        return rt_nccl_coll(j->t, j->comm, j->stream, &j->coll, err, errlen);
    case J_XCHG:
        return rt_nccl_exchange(j->t, j->comm, j->stream, j->p2p, j->n, err,
                                errlen);
    default:
        rt_nccl_comm_destroy(j->t, j->comm, j->kind == J_ABORT);
        return 0;
    }
}

static void *helper(void *arg)
{
    Job *j = arg;
    pthread_mutex_lock(&j->mu);
    bool go = !j->gone;
    if (go && j->ops->query) /* makes the rank's device current here */
        j->ops->query(j->dev, j->stream, (char[8]){0}, 8);
    pthread_mutex_unlock(&j->mu);
    char err[512] = "";
    int rc = go ? job_call(j, err, sizeof err) : -1;
    pthread_mutex_lock(&j->mu);
    j->done = true;
    j->rc = rc;
    memcpy(j->err, err, sizeof err);
    void *orphan = j->gone ? j->made : NULL; /* nobody will take it */
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (orphan && rc == 0)
        rt_nccl_comm_destroy(j->t, orphan, 1);
    job_unref(j);
    return NULL;
}

static Job *job_new(RtGpuCtx *c, int kind)
{
    Job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&j->mu, NULL);
    j->refs = 1;
    j->kind = kind;
    j->t = c->w->t;
    j->ops = c->w->ops;
    j->dev = DEV(c);
    j->stream = c->stream;
    return j;
}

/* Start j's helper (detached): 0, or -1 with j freed. */
static int job_start(Job *j, char *err, size_t errlen)
{
    pthread_attr_t a;
    pthread_t th;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    j->refs = 2;
    int e = pthread_create(&th, &a, helper, j);
    pthread_attr_destroy(&a);
    if (e) {
        snprintf(err, errlen, "cannot start a thread for an NCCL call: %s",
                 strerror(e));
        j->refs = 1;
        job_unref(j);
        return -1;
    }
    return 0;
}

/* Wait for j until `end` (ms, -1: no deadline) or, with r, until the world
 * fails; whether it is done. */
static bool job_wait(Job *j, RtRank *r, int64_t end)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done && !(r && rt_rank_failed(r))) {
        int64_t t = rt_now_ms(), until = t + 10; /* looks at the world too */
        if (end >= 0 && t >= end)
            break;
        if (end >= 0 && until > end)
            until = end;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + (until - t) * 1000000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    bool done = j->done;
    pthread_mutex_unlock(&j->mu);
    return done;
}

/* The waiter lets go of j; a helper still in NCCL is left behind. */
static void job_drop(Job *j, RtGpuWorld *w)
{
    pthread_mutex_lock(&j->mu);
    bool left = !j->done;
    j->gone = true;
    pthread_mutex_unlock(&j->mu);
    if (left)
        __atomic_store_n(&w->stuck, 1, __ATOMIC_RELEASE);
    job_unref(j);
}

void rt_gpur_nccl_release(RtGpuCtx *c, RtRank *r, void *comm, int abort_it)
{
    if (!comm)
        return;
    if (c->k->nb) {
        rt_nccl_comm_destroy(c->w->t, comm, abort_it);
        return;
    }
    char err[512];
    Job *j = job_new(c, abort_it ? J_ABORT : J_DESTROY);
    if (!j || (j->comm = comm, job_start(j, err, sizeof err))) {
        /* no thread: leave the communicator rather than risk a hang */
        __atomic_store_n(&c->w->stuck, 1, __ATOMIC_RELEASE);
        return;
    }
    job_wait(j, NULL, end_of(r, rt_now_ms()));
    job_drop(j, c->w);
}

/* ------------------------------------------------------------ waiting */

/* After call `what` on *comm: poll its asynchronous state (nonblocking)
 * and the stream until both are done, an error, the world failing, or
 * the deadline (`end`). */
static int poll_done(RtGpuCtx *c, RtRank *r, void **comm, const char *what,
                int64_t end)
{
    RtGpuWorld *w = c->w;
    char err[512];
    if (!w->ops->query) { /* no cuStreamQuery: as before, unbounded */
        if (rt_gpur_sync(c, r, what))
            return -1;
        if (rt_nccl_check(w->t, *comm, err, sizeof err))
            return rt_rank_fail(r, "%s: %s", what, err);
        return 0;
    }
    for (long spin = 0;; spin++) {
        int pending = 0;
        if (rt_nccl_pending(w->t, *comm, &pending, err, sizeof err))
            return rt_rank_fail(r, "%s: %s", what, err);
        if (!pending && c->stream) {
            int q = w->ops->query(DEV(c), c->stream, err, sizeof err);
            if (q < 0)
                return rt_gpur_fail(r, err);
            pending = q;
        }
        if (!pending)
            return 0;
        if (rt_rank_check(r))
            return -1; /* the communicator is aborted at the rank's end */
        if (end >= 0 && rt_now_ms() >= end) {
            timed_out(c, r, what, true);
            if (comm == &c->k->comm) { /* a group's: its owner frees it */
                rt_gpur_nccl_release(c, r, *comm, 1);
                *comm = NULL;
            }
            /* the abort should stop NCCL's kernel; if the stream still
             * does not drain in the grace, the world is marked stuck: the
             * run must not synchronize or free it */
            if (c->stream)
                rt_gpur_stream_wait(w, DEV(c), c->stream, r, NULL, -1);
            return -1;
        }
        rt_gpur_poll_pause(spin);
    }
}

/* The rank stopped waiting for j (deadline, or the world failed): abort
 * the world's communicator, give the call a grace to return, let go. */
static int give_up(RtGpuCtx *c, RtRank *r, Job *j, void **comm,
                   const char *what)
{
    if (!rt_rank_failed(r))
        timed_out(c, r, what, comm && *comm);
    bool aborted = false;
    if (comm == &c->k->comm && *comm) { /* a group's: its owner frees it */
        rt_gpur_nccl_release(c, r, *comm, 1);
        *comm = NULL;
        aborted = true;
    }
    if (aborted)
        job_wait(j, NULL, rt_now_ms() + GRACE_MS);
    job_drop(j, c->w);
    return -1;
}

/* Run j (filled in) on its helper and wait for it; then, for calls on a
 * stream, poll it with the rest of the deadline. */
static int run_blocking(RtGpuCtx *c, RtRank *r, Job *j, void **comm,
                        const char *what, void **made)
{
    char err[512];
    int64_t end = end_of(r, rt_now_ms());
    if (job_start(j, err, sizeof err))
        return rt_gpur_fail(r, err);
    if (!job_wait(j, r, end))
        return give_up(c, r, j, comm, what);
    int rc = j->rc;
    memcpy(err, j->err, sizeof err);
    if (made)
        *made = j->made;
    bool on_stream = j->kind == J_COLL || j->kind == J_XCHG;
    job_drop(j, c->w);
    if (rc)
        return rc == -2 ? -2 : rt_gpur_fail(r, err); /* -2: no ncclCommSplit */
    return on_stream ? poll_done(c, r, comm, what, end) : 0;
}

/* ------------------------------------------------------------ the calls */

int rt_gpur_nccl_init(RtGpuCtx *c, RtRank *r, const void *id)
{
    RtGpuWorld *w = c->w;
    RtGpurRank *k = c->k;
    char err[512];
    k->nb = rt_nccl_nonblocking(w->t);
    if (!k->nb) {
        Job *j = job_new(c, J_INIT);
        if (!j)
            return rt_rank_fail(r, "out of memory");
        memcpy(j->id, id, RT_NCCL_ID_BYTES);
        j->nranks = w->nranks;
        j->rank = rt_rank_id(r);
        return run_blocking(c, r, j, &k->comm, "ncclCommInitRank", &k->comm);
    }
    int nb = 0;
    if (rt_nccl_comm_init(w->t, w->nranks, id, rt_rank_id(r), &k->comm, &nb,
                          err, sizeof err))
        return rt_gpur_fail(r, err);
    return poll_done(c, r, &k->comm, "ncclCommInitRankConfig",
                end_of(r, rt_now_ms()));
}

int rt_gpur_nccl_split(RtGpuCtx *c, RtRank *r, int color, int key, void **out)
{
    RtGpuWorld *w = c->w;
    char err[512] = "";
    *out = NULL;
    if (!c->k->nb) {
        Job *j = job_new(c, J_SPLIT);
        if (!j)
            return rt_rank_fail(r, "out of memory");
        j->comm = c->k->comm;
        j->color = color;
        j->key = key;
        return run_blocking(c, r, j, &c->k->comm, "ncclCommSplit", out);
    }
    int rc = rt_nccl_comm_split(w->t, c->k->comm, color, key, out, err,
                                sizeof err);
    if (rc)
        return rc == -2 ? -2 : rt_gpur_fail(r, err);
    if (poll_done(c, r, out, "ncclCommSplit", end_of(r, rt_now_ms()))) {
        rt_nccl_comm_destroy(w->t, *out, 1);
        *out = NULL;
        return -1;
    }
    return 0;
}

int rt_gpur_nccl_coll(RtGpuCtx *c, RtRank *r, void **comm, const RtNcclColl *x,
                      const char *what)
{
    char err[512];
    if (c->k->nb) {
        if (rt_nccl_coll(c->w->t, *comm, c->stream, x, err, sizeof err))
            return rt_gpur_fail(r, err);
        return poll_done(c, r, comm, what, end_of(r, rt_now_ms()));
    }
    Job *j = job_new(c, J_COLL);
    if (!j)
        return rt_rank_fail(r, "out of memory");
    j->comm = *comm;
    j->coll = *x;
    int n = x->nranks < RT_RANK_MAX ? x->nranks : RT_RANK_MAX;
    if (x->counts) {
        memcpy(j->counts, x->counts, sizeof *j->counts * (size_t)n);
        j->coll.counts = j->counts;
    }
    if (x->counts2) {
        memcpy(j->counts2, x->counts2, sizeof *j->counts2 * (size_t)n);
        j->coll.counts2 = j->counts2;
    }
    return run_blocking(c, r, j, comm, what, NULL);
}

int rt_gpur_nccl_exchange(RtGpuCtx *c, RtRank *r, const RtP2p *ops, int n)
{
    const char *what = "exchange (ncclSend/ncclRecv)";
    char err[512];
    if (c->k->nb) {
        if (rt_nccl_exchange(c->w->t, c->k->comm, c->stream, ops, n, err,
                             sizeof err))
            return rt_gpur_fail(r, err);
        return poll_done(c, r, &c->k->comm, what, end_of(r, rt_now_ms()));
    }
    Job *j = job_new(c, J_XCHG);
    if (j && !(j->p2p = malloc(sizeof *ops * (size_t)n + 1))) {
        job_unref(j);
        j = NULL;
    }
    if (!j)
        return rt_rank_fail(r, "exchange: out of memory");
    if (n)
        memcpy(j->p2p, ops, sizeof *ops * (size_t)n);
    j->n = n;
    j->comm = c->k->comm;
    return run_blocking(c, r, j, &c->k->comm, what, NULL);
}
