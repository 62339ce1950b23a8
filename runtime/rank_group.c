/* rank_group.c — groups of ranks (`let g = group(color, key)`, MPI's
 * MPI_Comm_split, NCCL's ncclCommSplit) and the collectives within one
 * (`all_reduce(b, group = g)`, ...).
 *
 * A split is an all_gather of every rank's (color, key); the ranks of one
 * color form a group, ordered by key, then by world rank. A collective in a
 * group is one grouped exchange (rank_p2p.c) of the messages it needs
 * among the members, then local work: the same rank-order reductions
 * (rt_rank_reduce over the members in group order), so results are
 * bitwise those of the world collective on a world of the group's ranks.
 * Because an exchange is collective over the world, every rank takes part
 * in each group collective — the groups run their own kinds, sizes and
 * roots at the same time, but every rank must run the same number of
 * group collectives (a rank with nothing to do still enters; one that does
 * not is named by the exchange's timeout). Members that disagree on sizes
 * fail with the exchange's mismatch message. */
#include "ranks.h"

#include "../dsl/dsl.h"

#include <stdlib.h>
#include <string.h>

struct RtGroup {
    int n;         /* members */
    int me;        /* this rank's index among them */
    int *members;  /* [n] world ranks, in group order */
};

int rt_group_size(const RtGroup *g) { return g->n; }
int rt_group_rank(const RtGroup *g) { return g->me; }
int rt_group_member(const RtGroup *g, int i) { return g->members[i]; }

void rt_group_free(RtGroup *g)
{
    if (g) {
        free(g->members);
        free(g);
    }
}

int rt_group_split(RtRank *r, int64_t color, int64_t key, RtGroup **out)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    *out = NULL;
    int64_t mine[2] = {color, key};
    int64_t *all = malloc(sizeof(int64_t) * 2 * (size_t)N);
    RtGroup *g = calloc(1, sizeof *g);
    int *mem = malloc(sizeof(int) * (size_t)N);
    if (!all || !g || !mem) {
        free(all);
        free(g);
        free(mem);
        return rt_rank_fail(r, "group: out of memory");
    }
    if (rt_all_gather(r, all, mine, 2, DT_I64)) {
        free(all);
        free(g);
        free(mem);
        return -1;
    }
    int n = 0;
    for (int q = 0; q < N; q++) /* insertion by (key, rank): stable */
        if (all[2 * q] == color) {
            int k = n++;
            while (k > 0 && all[2 * mem[k - 1] + 1] > all[2 * q + 1]) {
                mem[k] = mem[k - 1];
                k--;
            }
            mem[k] = q;
        }
    for (int i = 0; i < n; i++)
        if (mem[i] == me)
            g->me = i;
    g->n = n;
    g->members = mem;
    free(all);
    *out = g;
    return 0;
}

/* Messages of one group collective. */
typedef struct Ops {
    RtP2p *o;
    int n;
} Ops;

static void add(Ops *s, int send, int peer, const void *buf, size_t bytes)
{
    s->o[s->n++] = (RtP2p){send, peer, (void *)buf, bytes};
}

/* Element offset and count of member k's block when total is split as
 * evenly as possible over n (the first total % n get one more). */
static void block(size_t total, int n, int k, size_t *off, size_t *cnt)
{
    size_t q = total / (size_t)n, rem = total % (size_t)n, kk = (size_t)k;
    *cnt = q + (kk < rem ? 1 : 0);
    *off = kk * q + (kk < rem ? kk : rem);
}

int rt_group_coll(RtRank *r, const RtGroup *g, const RtRankColl *d)
{
    int G = g->n, me = g->me, root = d->root;
    const char *name = rt_rank_coll_name(d->kind);
    size_t es = d->dtype > 0 && d->dtype < DT_COUNT ? (size_t)dsl_dtype_bytes(d->dtype) : 1;
    size_t cnt = d->count, bytes = cnt * es;
    if (root != -1 && (root < 0 || root >= G))
        return rt_rank_fail(r, "%s: root %d is not a rank of this group of %d",
                            name, root, G);
    if (d->op == RT_RED_AVG && d->dtype == DT_BOOL)
        return rt_rank_fail(r, "%s: op avg is not defined for bool", name);
    Ops s = {calloc((size_t)2 * (size_t)G + 2, sizeof(RtP2p)), 0};
    char *tmp = NULL; /* received blocks to reduce: [G][bytes] */
    bool reduces = d->kind == RT_COLL_ALL_REDUCE || d->kind == RT_COLL_REDUCE ||
                   d->kind == RT_COLL_REDUCE_SCATTER;
    size_t tb = 0;
    if (reduces) {
        if (d->kind == RT_COLL_REDUCE_SCATTER) {
            size_t o, c;
            block(cnt, G, me, &o, &c);
            tb = c * es;
        } else {
            tb = bytes;
        }
        tmp = malloc((size_t)G * tb + 1);
    }
    if (!s.o || (reduces && !tmp)) {
        free(s.o);
        free(tmp);
        return rt_rank_fail(r, "%s: out of memory", name);
    }
    const int *m = g->members;
    const char *src = d->src;
    char *dst = d->dst;
    switch (d->kind) {
    case RT_COLL_BARRIER:
        break;
    case RT_COLL_ALL_REDUCE:
        for (int i = 0; i < G; i++)
            if (i != me) {
                add(&s, 1, m[i], dst, bytes);
                add(&s, 0, m[i], tmp + (size_t)i * tb, bytes);
            }
        break;
    case RT_COLL_REDUCE:
        if (me != root)
            add(&s, 1, m[root], dst, bytes);
        else
            for (int i = 0; i < G; i++)
                if (i != me)
                    add(&s, 0, m[i], tmp + (size_t)i * tb, bytes);
        break;
    case RT_COLL_REDUCE_SCATTER:
        for (int i = 0; i < G; i++) {
            size_t o, c;
            block(cnt, G, i, &o, &c);
            if (i != me) {
                add(&s, 1, m[i], src + o * es, c * es);
                add(&s, 0, m[i], tmp + (size_t)i * tb, tb);
            }
        }
        break;
    case RT_COLL_BROADCAST:
        for (int i = 0; i < G; i++)
            if (i != root)
                add(&s, me == root, m[me == root ? i : root], dst, bytes);
        if (me != root) /* one receive only */
            s.n = 1;
        break;
    case RT_COLL_ALL_GATHER:
        for (int i = 0; i < G; i++)
            if (i != me) {
                add(&s, 1, m[i], src, bytes);
                add(&s, 0, m[i], dst + (size_t)i * bytes, bytes);
            }
        break;
    case RT_COLL_GATHER:
        if (me != root)
            add(&s, 1, m[root], src, bytes);
        else
            for (int i = 0; i < G; i++)
                if (i != me)
                    add(&s, 0, m[i], dst + (size_t)i * bytes, bytes);
        break;
    case RT_COLL_SCATTER:
        if (me != root)
            add(&s, 0, m[root], dst, bytes);
        else
            for (int i = 0; i < G; i++)
                if (i != me)
                    add(&s, 1, m[i], src + (size_t)i * bytes, bytes);
        break;
    case RT_COLL_ALL_TO_ALL: /* count elements per member */
        for (int i = 0; i < G; i++)
            if (i != me) {
                add(&s, 1, m[i], src + (size_t)i * bytes, bytes);
                add(&s, 0, m[i], dst + (size_t)i * bytes, bytes);
            }
        break;
    default:
        free(s.o);
        free(tmp);
        return rt_rank_fail(r, "%s does not run in a group", name);
    }
    int rc = rt_exchange(r, s.o, s.n);
    free(s.o);
    if (rc == 0) {
        /* this rank's own part, then the reductions in group order */
        switch (d->kind) {
        case RT_COLL_ALL_GATHER: case RT_COLL_GATHER:
            if ((d->kind == RT_COLL_ALL_GATHER || me == root) &&
                dst + (size_t)me * bytes != src)
                memmove(dst + (size_t)me * bytes, src, bytes);
            break;
        case RT_COLL_SCATTER:
            if (me == root && src + (size_t)me * bytes != dst)
                memmove(dst, src + (size_t)me * bytes, bytes);
            break;
        case RT_COLL_ALL_TO_ALL:
            if (src != dst)
                memmove(dst + (size_t)me * bytes, src + (size_t)me * bytes, bytes);
            break;
        case RT_COLL_ALL_REDUCE: case RT_COLL_REDUCE:
        case RT_COLL_REDUCE_SCATTER: {
            if (d->kind == RT_COLL_REDUCE && me != root)
                break;
            const void **in = malloc(sizeof(void *) * (size_t)G);
            if (!in) {
                rc = rt_rank_fail(r, "%s: out of memory", name);
                break;
            }
            size_t o = 0, c = cnt;
            if (d->kind == RT_COLL_REDUCE_SCATTER)
                block(cnt, G, me, &o, &c);
            for (int i = 0; i < G; i++)
                in[i] = i == me ? (const void *)(d->kind == RT_COLL_REDUCE_SCATTER
                                                     ? src + o * es : dst)
                                : tmp + (size_t)i * tb;
            rt_rank_reduce(dst, in, G, c, d->dtype, d->op);
            free(in);
            break;
        }
        default: break;
        }
    }
    free(tmp);
    return rc;
}
