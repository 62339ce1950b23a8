/* rank_agree.c — the barrier every collective is built on, and the
 * collectives' agreement: each rank publishes a descriptor of the
 * collective it enters (rt_rank_coll_begin), a barrier makes them visible,
 * and every rank checks that all agree (kind, dtype, op, root, count and
 * the collective's number in the run), so that ranks that disagree all
 * fail with the same "collective mismatch: ..." and a rank that has
 * returned from the run is named ("rank Q left the run ...").
 *
 * The barrier is a central counter on a local world (a generation number
 * per completed barrier; RtRank.bar_arrived says who is missing when it
 * times out after the collectives' deadline) and rank_mpi.c's on an MPI
 * world. A waiter gives up when the world fails or a rank has left the run
 * without completing the barrier. */
#include "ranks_impl.h"

#include "../dsl/dsl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ barrier */

/* A barrier waited for longer than the collective timeout: name the ranks
 * that have not arrived (a peer busy in a kernel, or in another wait).
 * Returns 1 (keep waiting) while a missing rank is in a signal wait, which
 * ends by its own deadline and is the better message, up to a hard limit
 * of twice the timeout plus a second. */
static int barrier_timeout(RtRank *r, const char *what, unsigned gen,
                           int64_t waited_ms)
{
    RtWorld *w = r->world;
    if (rt_barrier_grace(waited_ms, w->coll_timeout_ms))
        for (int q = 0; q < w->nranks; q++)
            if (__atomic_load_n(&w->ranks[q].bar_arrived, __ATOMIC_ACQUIRE) != gen + 1 &&
                __atomic_load_n(&w->ranks[q].in_wait, __ATOMIC_ACQUIRE) > 0)
                return 1;
    char miss[256];
    size_t n = 0;
    int count = 0;
    miss[0] = 0;
    for (int q = 0; q < w->nranks; q++)
        if (__atomic_load_n(&w->ranks[q].bar_arrived, __ATOMIC_ACQUIRE) != gen + 1)
            rt_rank_list_add(miss, sizeof miss, &n, &count, q);
    if (__atomic_load_n(&w->bar_gen, __ATOMIC_ACQUIRE) != gen)
        return 0; /* everyone came after all (0: not 1, which means wait on) */
    return rt_rank_fail(r, "%s timed out after %lld ms: rank %d waits, "
                        "rank%s %s did not arrive", what,
                        (long long)w->coll_timeout_ms, r->id,
                        count > 1 ? "s" : "", miss);
}

/* A central counting barrier. A waiter gives up when the world fails, or
 * when a rank has left the run without completing this barrier (it can
 * never arrive). */
static int barrier_wait(RtRank *r, const char *what)
{
    RtWorld *w = r->world;
    if (rt_rank_failed(r))
        return rt_rank_aborted(r);
    if (w->nranks == 1)
        return 0;
    if (w->mpi) {
        char miss[256];
        int q = rt_mpi_barrier(w->mpi, w->coll_timeout_ms, miss, sizeof miss);
        if (q == 0)
            return 0;
        if (q == -2)
            return rt_rank_fail(r, "%s timed out after %lld ms: rank %d "
                                "waits, rank%s %s did not arrive", what,
                                (long long)w->coll_timeout_ms, r->id,
                                strchr(miss, ',') ? "s" : "", miss);
        if (q < 0)
            return rt_rank_aborted(r);
        return rt_rank_fail(r, "rank %d left the run while rank %d waited "
                            "in %s", q - 1, r->id, what);
    }
    unsigned gen = __atomic_load_n(&w->bar_gen, __ATOMIC_ACQUIRE);
    __atomic_store_n(&r->bar_arrived, gen + 1, __ATOMIC_RELEASE);
    if (__atomic_add_fetch(&w->bar_count, 1, __ATOMIC_ACQ_REL) ==
        (unsigned)w->nranks) {
        __atomic_store_n(&w->bar_count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&w->bar_gen, gen + 1, __ATOMIC_RELEASE);
        return 0;
    }
    unsigned round = 0;
    int64_t start = rt_now_ms();
    for (;;) {
        if (__atomic_load_n(&w->bar_gen, __ATOMIC_ACQUIRE) != gen)
            return 0;
        if (rt_rank_failed(r))
            return rt_rank_aborted(r);
        int64_t waited = round >= 64 ? rt_now_ms() - start : 0;
        if (round >= 64 && w->coll_timeout_ms >= 0 && waited >= w->coll_timeout_ms) {
            int k = barrier_timeout(r, what, gen, waited);
            if (k != 1)
                return k;
        }
        if (__atomic_load_n(&w->nleft, __ATOMIC_ACQUIRE) > 0) {
            for (int q = 0; q < w->nranks; q++) {
                if (!__atomic_load_n(&w->ranks[q].left, __ATOMIC_ACQUIRE))
                    continue;
                /* q left; if it had passed this barrier, gen has moved */
                if (__atomic_load_n(&w->bar_gen, __ATOMIC_ACQUIRE) != gen)
                    return 0;
                if (rt_rank_failed(r))
                    return rt_rank_aborted(r);
                return rt_rank_fail(r,
                                    "rank %d left the run while rank %d "
                                    "waited in %s",
                                    q, r->id, what);
            }
        }
        rt_rank_backoff(&round);
    }
}

/* ------------------------------------------------------------ staging */

const char *rt_rank_coll_name(int kind)
{
    static const char *const names[RT_COLL_KINDS] = {
        "barrier",   "all_reduce", "all_gather", "reduce_scatter",
        "all_to_all", "broadcast", "sym_alloc",  "sym_release",
        "leave",      "reduce",    "gather",     "scatter",
        "exchange",
    };
    return kind >= 0 && kind < RT_COLL_KINDS ? names[kind] : "?";
}

void rt_rank_coll_describe(const RtRankColl *c, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s(", rt_rank_coll_name(c->kind));
    const char *sep = "";
    if (c->kind != RT_COLL_BARRIER && c->kind != RT_COLL_EXCHANGE) {
        n += snprintf(buf + n, len - (size_t)n, "count %zu", c->count);
        sep = ", ";
    }
    if (c->dtype >= 0) {
        n += snprintf(buf + n, len - (size_t)n, "%s%s", sep,
                      dsl_dtype_name(c->dtype));
        sep = ", ";
    }
    if (c->op >= 0) {
        n += snprintf(buf + n, len - (size_t)n, "%s%s", sep,
                      rt_rank_op_name(c->op));
        sep = ", ";
    }
    if (c->root >= 0)
        n += snprintf(buf + n, len - (size_t)n, "%sroot %d", sep, c->root);
    snprintf(buf + n, len - (size_t)n, ")");
}

/* Rank q's descriptor of collective #seq. */
static const RtRankColl *coll_slot(const RtWorld *w, int q, uint64_t seq)
{
    if (w->mpi)
        return rt_mpi_coll_view(w->mpi, q, seq);
    return &w->ranks[q].coll[seq & 1];
}

static int coll_same(const RtRankColl *a, const RtRankColl *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->op == b->op &&
           a->root == b->root && a->count == b->count && a->seq == b->seq;
}

/* Rank `leaving` has returned from the run's function (its last
 * collective is RT_COLL_LEAVE) while the others are in a collective. The
 * ranks that stay report it, each naming the collective it waits in; the
 * leaving rank lets them (so the run's error is theirs) and fails itself
 * only if none has within the timeout. */
static int left_early(RtRank *r, const RtRankColl *desc, int leaving, int staying)
{
    RtWorld *w = r->world;
    if (desc->kind != RT_COLL_LEAVE)
        return rt_rank_fail(r, "rank %d left the run (returned early) while rank %d waits in %s",
                            leaving, r->id, rt_rank_coll_name(desc->kind));
    int64_t end = rt_now_ms() + (w->timeout_ms > 0 ? w->timeout_ms : 5000);
    unsigned round = 0;
    while (!rt_rank_failed(r) && rt_now_ms() < end)
        rt_rank_backoff(&round);
    if (rt_rank_failed(r))
        return rt_rank_aborted(r);
    const RtRankColl *cs = coll_slot(w, staying, r->coll_seq - 1);
    return rt_rank_fail(r, "rank %d left the run (returned early) while rank %d waits in %s",
                        leaving, staying, rt_rank_coll_name(cs->kind));
}

/* What a barrier of a collective of this kind waits in, for messages:
 * RT_COLL_LEAVE is the run's last one. */
static const char *coll_what(int kind)
{
    return kind == RT_COLL_LEAVE ? "the end of the run"
                                 : rt_rank_coll_name(kind);
}

int rt_rank_coll_begin(RtRank *r, const RtRankColl *desc)
{
    RtWorld *w = r->world;
    uint64_t seq = r->coll_seq++;
    RtRankColl *mine = &r->coll[seq & 1];
    *mine = *desc;
    mine->seq = seq;
    if (w->mpi) {
        char e[RT_RANK_ERRLEN];
        if (rt_mpi_coll_publish(w->mpi, mine, r->sym_top, e, sizeof e))
            return rt_rank_fail(r, "%s", e);
    }
    if (barrier_wait(r, coll_what(desc->kind)))
        return -1;
    int leaving = -1, staying = -1; /* a rank that returned, one that did not */
    for (int q = 0; q < w->nranks; q++) {
        if (coll_slot(w, q, seq)->kind == RT_COLL_LEAVE) {
            if (leaving < 0)
                leaving = q;
        } else if (staying < 0) {
            staying = q;
        }
    }
    if (leaving >= 0 && staying >= 0)
        return left_early(r, desc, leaving, staying);
    const RtRankColl *c0 = coll_slot(w, 0, seq);
    for (int q = 1; q < w->nranks; q++) {
        const RtRankColl *cq = coll_slot(w, q, seq);
        if (coll_same(c0, cq))
            continue;
        char a[160], b[160];
        rt_rank_coll_describe(c0, a, sizeof a);
        rt_rank_coll_describe(cq, b, sizeof b);
        if (c0->seq != cq->seq)
            return rt_rank_fail(r,
                                "collective mismatch: rank 0 is at "
                                "collective #%llu, %s, but rank %d at #%llu, "
                                "%s",
                                (unsigned long long)c0->seq, a, q,
                                (unsigned long long)cq->seq, b);
        return rt_rank_fail(r,
                            "collective mismatch: rank 0 called %s but rank "
                            "%d called %s",
                            a, q, b);
    }
    return 0;
}

const RtRankColl *rt_rank_coll_peer(const RtRank *r, int peer)
{
    uint64_t seq = r->coll_seq - 1;
    return coll_slot(r->world, peer, seq);
}

int rt_rank_coll_sync(RtRank *r)
{
    if (r->world->mpi) /* staged copies are what peers read */
        rt_mpi_coll_restage(r->world->mpi);
    if (barrier_wait(r, coll_what(r->coll[(r->coll_seq - 1) & 1].kind)))
        return -1;
    if (r->world->mpi) /* RMA: all_reduce's second phase reads fresh copies */
        rt_mpi_coll_refresh(r->world->mpi);
    return 0;
}

int rt_rank_coll_end(RtRank *r)
{
    return rt_rank_coll_sync(r);
}

void rt_rank_keep(RtRank *r, void *p)
{
    if (!p)
        return;
    free(r->kept[0]); /* the oldest: its collective ended long ago */
    memmove(&r->kept[0], &r->kept[1], 3 * sizeof r->kept[0]);
    r->kept[3] = p;
}
