/* gpu_p2p.c — groups and send/recv on GPU ranks (gpu_ranks.h): `let g =
 * group(color, key)`, collectives with `group = g`, and the sends and
 * receives of an `exchange { }` block, whose buffers are device memory.
 *
 * Staged (always available): the bytes go to
 * host memory, through the CPU ranks' rt_group_coll / rt_exchange
 * (rank_group.c, rank_p2p.c) and back, so results, ordering and mismatch
 * messages are those of CPU ranks.
 *
 * NCCL (when gpu_coll.c would use it: loaded, one device per rank,
 * BLKC_GPU_COLL not host). An exchange first sends its message sizes over
 * the host world (rt_exchange), so a mismatch fails every rank within the
 * collectives' deadline instead of leaving NCCL waiting, then runs as
 * ncclSend/ncclRecv in one NCCL group on the rank's stream (a send whose
 * buffer overlaps a receive's is copied first: CPU ranks read every send
 * before writing a receive). A group gets a communicator from
 * ncclCommSplit when the loaded NCCL has it (else its collectives are
 * staged); a collective in it runs there when every rank of the world
 * can (one host vote per collective, because the staged path is
 * collective over the world), after its members agree on what they call
 * (group_agree: NCCL would hang or corrupt on a difference). The NCCL path has run only against the
 * fake NCCL of tests/gpu/fake_nccl.c, never a real one (no machine of this
 * project has NCCL and several GPUs). Prefix rt_gpur_. */
#include "gpu_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEV(c) rt_gpu_dev((c)->k->d->g)
#define U64(p) ((uint64_t)(uintptr_t)(p))

static const char *coll_lib(const RtGpuWorld *w)
{
    return w->t == BLKC_TARGET_HIP ? "RCCL" : "NCCL";
}

/* ------------------------------------------------------------ groups */

int rt_gpur_group(RtGpuCtx *c, RtRank *r, int64_t color, int64_t key,
                  RtGroup **out, void **comm)
{
    RtGpuWorld *w = c->w;
    *comm = NULL;
    if (rt_group_split(r, color, key, out))
        return -1;
    if (w->coll_mode == RT_GPUR_COLL_HOST || !w->nccl_ok || rt_rank_size(r) < 2)
        return 0;
    /* NCCL's color: the group's lowest world rank (blkc's are any int64) */
    const RtGroup *g = *out;
    int nc = rt_group_member(g, 0);
    for (int i = 1; i < rt_group_size(g); i++)
        if (rt_group_member(g, i) < nc)
            nc = rt_group_member(g, i);
    int rc = rt_gpur_comm(c, r) ? -1
           : rt_gpur_nccl_split(c, r, nc, rt_group_rank(g), comm);
    if (rc == 0 || rc == -2) /* -2: no ncclCommSplit in this NCCL, staged */
        return 0;
    rt_group_free(*out);
    *out = NULL;
    return -1;
}

void rt_gpur_group_free(RtGpuCtx *c, RtRank *r, void *comm)
{
    if (c && comm)
        rt_gpur_nccl_release(c, r, comm, rt_rank_failed(r));
}

/* Through host memory: dst and src are copied down (dst too, so what the
 * collective does not write stays), the CPU group collective runs on the
 * copies, dst goes back. */
static int group_host(RtGpuCtx *c, RtRank *r, const RtGroup *g,
                      const RtRankColl *d, size_t sb, size_t db)
{
    bool same = d->src == d->dst;
    char *hd = malloc(db + 1), *hs = same ? hd : malloc(sb + 1);
    int rc = 0;
    if (!hd || !hs)
        rc = rt_rank_fail(r, "out of memory staging a group collective");
    char what[96];
    snprintf(what, sizeof what, "the work queued before a group %s",
             rt_rank_coll_name(d->kind));
    if (rc == 0 && rt_gpur_sync(c, r, what))
        rc = -1;
    snprintf(what, sizeof what, "the copy of a group %s's buffers to the host",
             rt_rank_coll_name(d->kind));
    if (rc == 0 && rt_gpur_d2h(c, r, hd, d->dst, db, what))
        rc = -1;
    if (rc == 0 && !same && rt_gpur_d2h(c, r, hs, (const char *)d->src, sb, what))
        rc = -1;
    RtRankColl h = *d;
    h.src = hs;
    h.dst = hd;
    /* every rank enters the exchange; a failed one makes it give up */
    if (rc == 0)
        rc = rt_group_coll(r, g, &h);
    else
        rt_rank_check(r);
    snprintf(what, sizeof what, "the copy of a group %s's result to the "
             "device", rt_rank_coll_name(d->kind));
    if (rc == 0 && rt_gpur_h2d(c, r, d->dst, hd, db, what))
        rc = -1;
    if (rc == 0 && db)
        rc = rt_gpur_dev_wait(c, r, what);
    free(hd);
    if (!same)
        free(hs);
    return rc < 0 ? -1 : 0;
}

/* On the group's communicator: its ranks are the group ranks. */
static int group_nccl(RtGpuCtx *c, RtRank *r, const RtGroup *g, void *comm,
                      const RtRankColl *d)
{
    int G = rt_group_size(g);
    size_t cnt[RT_RANK_MAX];
    RtNcclColl x = {d->kind, d->dtype, d->op, d->root, G, U64(d->dst),
                    U64(d->src), d->count, NULL, NULL, rt_group_rank(g)};
    for (int q = 0; q < G; q++) /* reduce_scatter's shares, as rank_group.c */
        cnt[q] = d->kind == RT_COLL_ALL_TO_ALL
                     ? d->count
                     : d->count / (size_t)G + ((size_t)q < d->count % (size_t)G);
    x.counts = cnt;
    x.counts2 = cnt;
    return rt_gpur_nccl_coll(c, r, &comm, &x, rt_rank_coll_name(d->kind));
}

/* NCCL does not compare what the members call: they all-gather kind,
 * dtype, op, root and count within the group first (a staged group
 * collective, as collective over the world as the vote before it), and
 * every member fails alike on a difference. */
static int group_agree(RtRank *r, const RtGroup *g, const RtRankColl *d,
                       bool reduces)
{
    int G = rt_group_size(g);
    bool rooted = d->kind == RT_COLL_BROADCAST || d->kind == RT_COLL_REDUCE ||
                  d->kind == RT_COLL_GATHER || d->kind == RT_COLL_SCATTER;
    int64_t mine[5] = {d->kind, d->dtype, reduces ? d->op : -1,
                       rooted ? d->root : -1, (int64_t)d->count};
    int64_t *all = malloc(sizeof mine * (size_t)G);
    if (!all)
        return rt_rank_fail(r, "%s: out of memory", rt_rank_coll_name(d->kind));
    RtRankColl h = {.kind = RT_COLL_ALL_GATHER, .dtype = DT_I64, .op = -1,
                    .root = -1, .count = 5, .src = mine, .dst = all};
    int rc = rt_group_coll(r, g, &h);
    for (int q = 1; q < G && rc == 0; q++) {
        const int64_t *a = all, *b = all + 5 * q;
        if (!memcmp(a, b, sizeof mine))
            continue;
        RtRankColl x = {.kind = (int)a[0], .dtype = (int)a[1], .op = (int)a[2],
                        .root = (int)a[3], .count = (size_t)a[4]};
        RtRankColl y = {.kind = (int)b[0], .dtype = (int)b[1], .op = (int)b[2],
                        .root = (int)b[3], .count = (size_t)b[4]};
        char sa[160], sb[160];
        rt_rank_coll_describe(&x, sa, sizeof sa);
        rt_rank_coll_describe(&y, sb, sizeof sb);
        rc = rt_rank_fail(r, "collective mismatch in a group: group rank 0 "
                          "(rank %d) called %s but group rank %d (rank %d) "
                          "called %s", rt_group_member(g, 0), sa, q,
                          rt_group_member(g, q), sb);
    }
    free(all);
    return rc < 0 ? -1 : 0;
}

int rt_gpur_group_coll(RtGpuCtx *c, RtRank *r, const RtGroup *g, void *comm,
                       const RtRankColl *d, size_t src_bytes, size_t dst_bytes)
{
    if (comm) {
        if (d->root != -1 && (d->root < 0 || d->root >= rt_group_size(g)))
            return rt_rank_fail(r, "%s: root %d is not a rank of this group "
                                "of %d", rt_rank_coll_name(d->kind), d->root,
                                rt_group_size(g));
        bool reduces = d->kind == RT_COLL_ALL_REDUCE ||
                       d->kind == RT_COLL_REDUCE_SCATTER || d->kind == RT_COLL_REDUCE;
        int32_t ok = d->kind != RT_COLL_BARRIER &&
                     rt_nccl_supports(d->dtype, reduces ? d->op : -1);
        /* the staged path is collective over the world: all or none */
        if (rt_all_reduce(r, &ok, 1, DT_I32, RT_RED_MIN))
            return -1;
        if (ok)
            return group_agree(r, g, d, reduces) ? -1
                                                  : group_nccl(c, r, g, comm, d);
    }
    return group_host(c, r, g, d, src_bytes, dst_bytes);
}

/* ------------------------------------------------------------ exchange */

/* Through host memory: the sends are copied down before anything is
 * received, the receives go back in rank_p2p.c's order (by sender, then
 * program order), so overlapping receives end as on CPU ranks. */
static int xchg_host(RtGpuCtx *c, RtRank *r, const RtP2p *ops, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += ops[i].bytes;
    RtP2p *h = malloc(sizeof *h * (size_t)n + 1);
    char *mem = malloc(total + 1);
    int rc = 0;
    if (!h || !mem)
        rc = rt_rank_fail(r, "exchange: out of memory staging %zu bytes", total);
    if (rc == 0 && rt_gpur_sync(c, r, "the work queued before the exchange"))
        rc = -1;
    size_t off = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        h[i] = ops[i];
        h[i].buf = mem + off;
        off += ops[i].bytes;
        if (ops[i].send &&
            rt_gpur_d2h(c, r, h[i].buf, ops[i].buf, ops[i].bytes,
                        "the copy of the exchange's messages to the host"))
            rc = -1;
    }
    if (rc == 0)
        rc = rt_exchange(r, h, n);
    else
        rt_rank_check(r);
    for (int q = 0; q < rt_rank_size(r) && rc == 0; q++)
        for (int i = 0; i < n && rc == 0; i++)
            if (!ops[i].send && ops[i].peer == q &&
                rt_gpur_h2d(c, r, ops[i].buf, h[i].buf, ops[i].bytes,
                            "the copy of the exchange's received messages to the device"))
                rc = -1;
    if (rc == 0 && n)
        rc = rt_gpur_dev_wait(c, r, "the copy of the exchange's received "
                              "messages to the device");
    free(h);
    free(mem);
    return rc < 0 ? -1 : 0;
}

/* The message sizes over the host world (rt_exchange of one u64 per
 * message: its mismatch message counts 8 bytes a message), then a barrier,
 * so that either every rank goes on to NCCL or none does. */
static int xchg_sizes(RtRank *r, const RtP2p *ops, int n)
{
    uint64_t *sz = malloc(sizeof *sz * (size_t)n + 1);
    RtP2p *h = malloc(sizeof *h * (size_t)n + 1);
    int rc = 0;
    if (!sz || !h)
        rc = rt_rank_fail(r, "exchange: out of memory");
    for (int i = 0; i < n && rc == 0; i++) {
        sz[i] = ops[i].bytes;
        h[i] = (RtP2p){ops[i].send, ops[i].peer, &sz[i], sizeof sz[i]};
    }
    if (rc == 0)
        rc = rt_exchange(r, h, n);
    for (int i = 0; i < n && rc == 0; i++)
        if (!ops[i].send && sz[i] != ops[i].bytes)
            rc = rt_rank_fail(r, "exchange mismatch: rank %d sends %llu bytes "
                              "to rank %d, but its recv wants %zu",
                              ops[i].peer, (unsigned long long)sz[i],
                              rt_rank_id(r), ops[i].bytes);
    if (rc == 0)
        rc = rt_barrier(r);
    free(sz);
    free(h);
    return rc < 0 ? -1 : 0;
}

static bool overlaps(const RtP2p *a, const RtP2p *b)
{
    uint64_t p = U64(a->buf), q = U64(b->buf);
    return a->bytes && b->bytes && p < q + b->bytes && q < p + a->bytes;
}

/* What can fail on one rank alone (the copies of overlapping sends, the
 * sizes) comes before the barrier that ends xchg_sizes: past it, a rank
 * that did not enter NCCL would leave its peers waiting in NCCL without a
 * deadline. The world's communicator is made after it (its first use, as
 * in gpu_coll.c), so a rank that never enters is named by the exchange. */
static int xchg_nccl(RtGpuCtx *c, RtRank *r, const RtP2p *ops, int n)
{
    RtP2p *h = malloc(sizeof *h * (size_t)n + 1);
    char **tmp = calloc((size_t)n + 1, sizeof *tmp);
    char err[512];
    int rc = 0;
    if (!h || !tmp)
        rc = rt_rank_fail(r, "exchange: out of memory");
    for (int i = 0; i < n && rc == 0; i++) {
        h[i] = ops[i];
        bool copy = false;
        for (int j = 0; j < n && ops[i].send; j++)
            copy |= !ops[j].send && overlaps(&ops[i], &ops[j]);
        if (!copy)
            continue;
        if (rt_gpur_alloc(c, r, ops[i].bytes, 0, &tmp[i]) ||
            c->w->ops->copy_async(DEV(c), U64(tmp[i]), U64(ops[i].buf),
                                  ops[i].bytes, c->stream, err, sizeof err))
            rc = rt_rank_failed(r) ? -1 : rt_gpur_fail(r, err);
        h[i].buf = tmp[i];
    }
    if (rc == 0 && (xchg_sizes(r, ops, n) || rt_gpur_comm(c, r)))
        rc = -1;
    if (rc == 0)
        rc = rt_gpur_nccl_exchange(c, r, h, n);
    for (int i = 0; tmp && i < n; i++)
        rt_gpur_free(c, tmp[i]);
    free(tmp);
    free(h);
    return rc < 0 ? -1 : 0;
}

int rt_gpur_exchange(RtGpuCtx *c, RtRank *r, const RtP2p *ops, int n)
{
    RtGpuWorld *w = c->w;
    bool nccl = w->coll_mode != RT_GPUR_COLL_HOST && w->nccl_ok &&
                (rt_rank_size(r) > 1 || w->coll_mode == RT_GPUR_COLL_NCCL);
    if (w->coll_mode == RT_GPUR_COLL_NCCL && !nccl)
        return rt_rank_fail(r, "exchange on GPU ranks: BLKC_GPU_COLL=nccl, "
                            "but %s cannot be used: %s", coll_lib(w), w->nccl_why);
    return nccl ? xchg_nccl(c, r, ops, n) : xchg_host(c, r, ops, n);
}
