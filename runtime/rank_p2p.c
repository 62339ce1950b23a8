/* rank_p2p.c — grouped point-to-point transfers (send/recv inside an
 * `exchange { }` block; NCCL's ncclGroupStart/ncclGroupEnd around
 * ncclSend/ncclRecv) on the staging of rank_agree.c.
 *
 * A group is one collective over the world (kind RT_COLL_EXCHANGE): every
 * rank packs what it sends, peer by peer in rank order, into one stream
 * (for each peer: the sizes of its messages, then their bytes), publishes
 * it with a table of per-peer counts, and after the barrier every rank
 * checks every pair's counts (so all ranks report the same first mismatch)
 * and copies its messages out of the senders' streams. Nothing blocks on a
 * single peer, so a ring (send to the next rank, receive from the previous
 * one) cannot deadlock, and the wait has the collectives' deadline (a rank
 * that never enters the group is named). Messages between one pair match in
 * program order; their sizes in bytes must agree. The sends are packed
 * before anything is received, so a rank may receive into a buffer it sends
 * in the same group. Under MPI the published stream and table are staged
 * on the symmetric heap like any collective buffer (rank_mpi.c). */
#include "ranks.h"

#include <stdlib.h>
#include <string.h>

enum { M_NSEND, M_SBYTES, M_NRECV, M_RBYTES, M_N }; /* per-peer table */

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

/* The first pair (sender, receiver), in that order, whose counts disagree:
 * every rank sees the same tables, so every rank names the same pair. */
static int check_pairs(RtRank *r, int N)
{
    for (int s = 0; s < N; s++) {
        const size_t *ms = rt_rank_coll_peer(r, s)->counts;
        for (int d = 0; d < N; d++) {
            const size_t *md = rt_rank_coll_peer(r, d)->counts;
            size_t ns = ms[d * M_N + M_NSEND], nr = md[s * M_N + M_NRECV];
            size_t bs = ms[d * M_N + M_SBYTES] - ns * sizeof(uint64_t);
            size_t br = md[s * M_N + M_RBYTES];
            if (ns == nr && bs == br)
                continue;
            return rt_rank_fail(r, "exchange mismatch: rank %d sends %zu "
                                "message%s (%zu bytes) to rank %d, but rank "
                                "%d receives %zu (%zu bytes) from rank %d",
                                s, ns, plural(ns), bs, d, d, nr, br, s);
        }
    }
    return 0;
}

int rt_exchange(RtRank *r, const RtP2p *ops, int n)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t *tab = calloc((size_t)N * M_N, sizeof *tab);
    if (!tab)
        return rt_rank_fail(r, "exchange: out of memory");
    for (int i = 0; i < n; i++) {
        const RtP2p *o = &ops[i];
        if (o->peer < 0 || o->peer >= N) {
            free(tab);
            return rt_rank_fail(r, "%s: rank %d is not a rank of this world "
                                "of %d", o->send ? "send" : "recv", o->peer, N);
        }
        size_t *t = &tab[(size_t)o->peer * M_N];
        if (o->send) {
            t[M_NSEND]++;
            t[M_SBYTES] += sizeof(uint64_t) + o->bytes;
        } else {
            t[M_NRECV]++;
            t[M_RBYTES] += o->bytes;
        }
    }
    size_t total = 0;
    for (int q = 0; q < N; q++)
        total += tab[(size_t)q * M_N + M_SBYTES];
    char *stream = total ? malloc(total) : NULL;
    if (total && !stream) {
        free(tab);
        return rt_rank_fail(r, "exchange: out of memory (%zu bytes)", total);
    }
    /* pack: per peer in rank order, the message sizes then the bytes */
    size_t off = 0;
    for (int q = 0; q < N; q++) {
        size_t at = off + tab[(size_t)q * M_N + M_NSEND] * sizeof(uint64_t);
        for (int i = 0; i < n; i++) {
            if (!ops[i].send || ops[i].peer != q)
                continue;
            uint64_t b = ops[i].bytes;
            memcpy(stream + off, &b, sizeof b);
            off += sizeof b;
            if (b)
                memcpy(stream + at, ops[i].buf, ops[i].bytes);
            at += ops[i].bytes;
        }
        off = at;
    }
    RtRankColl d = {.kind = RT_COLL_EXCHANGE, .dtype = -1, .op = -1,
                    .root = -1, .count = 0, .src = stream, .counts = tab};
    if (rt_rank_coll_begin(r, &d)) { /* peers may have seen d already */
        rt_rank_keep(r, stream);
        rt_rank_keep(r, tab);
        return -1;
    }
    int rc = check_pairs(r, N);
    for (int q = 0; rc == 0 && q < N; q++) {
        const RtRankColl *p = rt_rank_coll_peer(r, q);
        if (!p->counts[(size_t)me * M_N + M_NSEND])
            continue;
        size_t so = 0; /* my part of q's stream */
        for (int k = 0; k < me; k++)
            so += p->counts[(size_t)k * M_N + M_SBYTES];
        const char *hs = (const char *)p->src + so;
        const char *data = hs + p->counts[(size_t)me * M_N + M_NSEND] *
                                    sizeof(uint64_t);
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (ops[i].send || ops[i].peer != q)
                continue;
            uint64_t b;
            memcpy(&b, hs + (size_t)k * sizeof b, sizeof b);
            if (b != ops[i].bytes) {
                rc = rt_rank_fail(r, "exchange mismatch: message %d from "
                                  "rank %d to rank %d has %llu bytes, but "
                                  "rank %d's recv %d from rank %d wants %zu",
                                  k, q, me, (unsigned long long)b, me, k, q,
                                  ops[i].bytes);
                break;
            }
            if (b)
                memcpy(ops[i].buf, data, ops[i].bytes);
            data += b;
            k++;
        }
    }
    if (rt_rank_coll_end(r))
        rc = -1;
    if (rc) { /* a failed end returns before every peer is done reading */
        rt_rank_keep(r, stream);
        rt_rank_keep(r, tab);
    } else {
        free(stream);
        free(tab);
    }
    return rc;
}
