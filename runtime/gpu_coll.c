/* gpu_coll.c — the collectives of GPU ranks (gpu_ranks.h): NCCL (nccl.c)
 * on the rank's stream when it loaded and every rank has its own GPU, with
 * the communicator made at the first collective (rank 0's unique id is
 * broadcast over the host world); otherwise staged through host memory
 * and the CPU collectives of ranks.h (NCCL refuses two ranks on one GPU,
 * and would round f16/bf16/f8 sums at every step). Before every NCCL
 * collective the ranks agree on the host (rt_coll_agree of rank_coll.c:
 * kind, dtype, op, root, count), since NCCL would hang or corrupt on a
 * mismatch; the staged path gets the same check from the CPU collectives.
 * The NCCL calls and their deadline: gpu_nccl_wait.c. Groups and
 * send/recv: gpu_p2p.c. */
#include "gpu_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int rt_gpur_comm(RtGpuCtx *c, RtRank *r)
{
    RtGpuWorld *w = c->w;
    if (c->k->comm)
        return 0;
    char id[RT_NCCL_ID_BYTES], err[512];
    memset(id, 0, sizeof id);
    if (rt_rank_id(r) == 0 && rt_nccl_unique_id(w->t, id, err, sizeof err))
        return rt_gpur_fail(r, err);
    /* (rt_gpur_sync also makes the device's context current) */
    if (rt_broadcast(r, id, sizeof id, DT_U8, 0) ||
        rt_gpur_sync(c, r, "the work queued before the NCCL communicator's setup"))
        return -1;
    return rt_gpur_nccl_init(c, r, id);
}

/* Through host memory and the CPU collectives of ranks.h. */
static int coll_host(RtGpuCtx *c, RtRank *r, const RtNcclColl *d,
                     const size_t *shares)
{
    int W = rt_rank_size(r), me = rt_rank_id(r);
    size_t esz = (size_t)dsl_dtype_bytes(d->dtype), ns = 0, nd = 0;
    switch (d->kind) {
    case RT_COLL_ALL_REDUCE: case RT_COLL_BROADCAST: case RT_COLL_REDUCE:
        ns = nd = d->count;
        break;
    case RT_COLL_GATHER: ns = d->count; nd = d->count * (size_t)W; break;
    case RT_COLL_SCATTER: ns = d->count * (size_t)W; nd = d->count; break;
    case RT_COLL_ALL_GATHER: ns = d->count; nd = d->count * (size_t)W; break;
    case RT_COLL_REDUCE_SCATTER: ns = d->count; nd = shares[me]; break;
    case RT_COLL_ALL_TO_ALL:
        for (int q = 0; q < W; q++) {
            ns += d->counts[q];
            nd += d->counts2[q];
        }
        break;
    default:
        return rt_rank_fail(r, "collective %s is not supported on GPU ranks",
                            rt_rank_coll_name(d->kind));
    }
    char *hs = malloc(ns * esz + 1), *hd = malloc(nd * esz + 1);
    int rc = 0;
    if (!hs || !hd)
        rc = rt_rank_fail(r, "out of memory staging a collective");
    char what[96];
    snprintf(what, sizeof what, "the work queued before %s", rt_rank_coll_name(d->kind));
    if (rc == 0 && rt_gpur_sync(c, r, what))
        rc = -1;
    snprintf(what, sizeof what, "the copy of %s's input to the host",
             rt_rank_coll_name(d->kind));
    if (rc == 0 && rt_gpur_d2h(c, r, hs, (const char *)(uintptr_t)d->src, ns * esz, what))
        rc = -1;
    /* every rank enters the collective; a failed one makes it give up */
    if (rc == 0) {
        switch (d->kind) {
        case RT_COLL_ALL_REDUCE:
            rc = rt_all_reduce(r, hs, ns, d->dtype, d->op);
            break;
        case RT_COLL_BROADCAST:
            rc = rt_broadcast(r, hs, ns, d->dtype, d->root);
            break;
        case RT_COLL_REDUCE:
            rc = rt_reduce(r, hs, ns, d->dtype, d->op, d->root);
            break;
        case RT_COLL_GATHER:
            rc = rt_gather(r, hd, hs, ns, d->dtype, d->root);
            break;
        case RT_COLL_SCATTER:
            rc = rt_scatter(r, hd, hs, nd, d->dtype, d->root);
            break;
        case RT_COLL_ALL_GATHER:
            rc = rt_all_gather(r, hd, hs, ns, d->dtype);
            break;
        case RT_COLL_REDUCE_SCATTER:
            rc = rt_reduce_scatter(r, hd, hs, ns, shares, d->dtype, d->op);
            break;
        case RT_COLL_ALL_TO_ALL:
            rc = rt_all_to_all(r, hd, d->counts2, hs, d->counts, d->dtype);
            break;
        }
    } else {
        rt_rank_check(r);
    }
    const char *res = d->kind == RT_COLL_ALL_REDUCE || d->kind == RT_COLL_BROADCAST ||
                      d->kind == RT_COLL_REDUCE ? hs : hd;
    /* reduce and gather change only the root's output */
    bool writes = (d->kind != RT_COLL_REDUCE && d->kind != RT_COLL_GATHER) ||
                  me == d->root;
    snprintf(what, sizeof what, "the copy of %s's result to the device",
             rt_rank_coll_name(d->kind));
    if (rc == 0 && writes &&
        rt_gpur_h2d(c, r, (char *)(uintptr_t)d->dst, res, nd * esz, what))
        rc = -1;
    if (rc == 0 && writes)
        rc = rt_gpur_dev_wait(c, r, what);
    free(hs);
    free(hd);
    return rc < 0 ? -1 : 0;
}

int rt_gpur_coll(RtGpuCtx *c, RtRank *r, const RtNcclColl *d)
{
    RtGpuWorld *w = c->w;
    int W = rt_rank_size(r);
    size_t shares[RT_RANK_MAX];
    RtNcclColl x = *d;
    x.nranks = W;
    x.rank = rt_rank_id(r);
    if (d->kind == RT_COLL_REDUCE_SCATTER) {
        for (int q = 0; q < W; q++) /* as evenly as possible, like ranks.h */
            shares[q] = d->count / (size_t)W + ((size_t)q < d->count % (size_t)W);
        x.counts = shares;
    }
    bool reduces = d->kind == RT_COLL_ALL_REDUCE ||
                   d->kind == RT_COLL_REDUCE_SCATTER || d->kind == RT_COLL_REDUCE;
    /* one rank needs no communication: NCCL only when asked for */
    bool nccl = w->coll_mode != RT_GPUR_COLL_HOST && w->nccl_ok &&
                (W > 1 || w->coll_mode == RT_GPUR_COLL_NCCL) &&
                rt_nccl_supports(d->dtype, reduces ? d->op : -1);
    if (w->coll_mode == RT_GPUR_COLL_NCCL && !nccl)
        return rt_rank_fail(r, "%s on GPU ranks: BLKC_GPU_COLL=nccl, but %s "
                            "cannot be used: %s", rt_rank_coll_name(d->kind),
                            w->t == BLKC_TARGET_HIP ? "RCCL" : "NCCL",
                            w->nccl_ok ? "it has no such dtype/op"
                                       : w->nccl_why);
    if (!nccl)
        return coll_host(c, r, &x, shares);
    /* NCCL does not compare what the ranks call: a size, dtype, op or root
     * that differs would hang it or corrupt memory. Agree on the host
     * first, with the CPU ranks' checks and messages. */
    bool rooted = d->kind == RT_COLL_BROADCAST || d->kind == RT_COLL_REDUCE ||
                  d->kind == RT_COLL_GATHER || d->kind == RT_COLL_SCATTER;
    RtRankColl a = {.kind = d->kind, .dtype = d->dtype,
                    .op = reduces ? d->op : -1, .root = rooted ? d->root : -1,
                    .count = d->count, .counts = x.counts, .counts2 = x.counts2};
    if (rt_coll_agree(r, &a))
        return -1;
    if (rt_gpur_comm(c, r))
        return -1;
    return rt_gpur_nccl_coll(c, r, &c->k->comm, &x, rt_rank_coll_name(d->kind));
}
