/* plan_coll.c — the Device IR interpreter's COLL instructions (plan.c
 * runs the rest): world collectives with their size checks, to ranks.h on
 * CPU ranks or gpu_ranks.h's hooks on GPU ranks (pm->gpu); collectives
 * with `group = g` (rank_group.c, gpu_p2p.c); uneven all_to_all with
 * send_counts / recv_counts read from integer buffers; and send / recv,
 * which only join the exchange { } block being collected (plan.c runs it
 * at the block's end). One entry, rt_plan_coll. */
#include "plan_exec.h"

#include <stdlib.h>

static int64_t vi(Exec *x, int id) { return x->val[id].i; }

/* A collective on GPU ranks (gpu_ranks.h): buffers are device memory. */
static int gpu_coll(Exec *x, int kind, void *dst, const void *src,
                    size_t count, const size_t *c1, const size_t *c2,
                    int dtype, int op, int root)
{
    RtNcclColl d = {kind, dtype, op, root, rt_rank_size(x->r),
                    (uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src,
                    count, c1, c2, rt_rank_id(x->r)};
    return rt_gpur_coll(x->g, x->r, &d);
}

/* W counts (elements per rank) from an integer buffer. */
static int read_counts(Exec *x, const IrInstr *in, int p, size_t *out, int W)
{
    const Buf *b = &x->buf[p];
    if (b->rank != 1)
        return rt_plan_fail(x, in, "all_to_all: counts '%s' must be a 1-D buffer",
                    x->f->params[p].name);
    int64_t n = b->shape[0];
    if (n < W)
        return rt_plan_fail(x, in, "all_to_all: '%s' has %lld counts, the world has %d ranks",
                    x->f->params[p].name, (long long)n, W);
    int esz = dsl_dtype_bytes(b->dtype);
    const char *data = b->data;
    char *host = NULL;
    if (x->g) { /* GPU ranks: the counts are in device memory */
        size_t bytes = ((size_t)(W - 1) * (size_t)b->stride[0] + 1) * (size_t)esz;
        if (!(host = malloc(bytes)))
            return rt_plan_fail(x, in, "out of memory");
        if (rt_gpur_read(x->g, x->r, host, data, bytes)) {
            free(host);
            return -1;
        }
        data = host;
    }
    for (int q = 0; q < W; q++) {
        int64_t c = rt_load_i64(data + (size_t)q * (size_t)b->stride[b->rank - 1] * (size_t)esz,
                                b->dtype);
        if (c < 0) {
            free(host);
            return rt_plan_fail(x, in, "all_to_all: negative count %lld for rank %d in '%s'",
                        (long long)c, q, x->f->params[p].name);
        }
        out[q] = (size_t)c;
    }
    free(host);
    return 0;
}

/* all_to_all with send_counts (and maybe recv_counts): uneven chunks. */
static int do_all_to_all_v(Exec *x, const IrInstr *in, const Buf *d,
                           const Buf *s, int64_t nd, int64_t ns)
{
    RtRank *r = x->r;
    int W = rt_rank_size(r);
    size_t sc[256], rc[256];
    if (W > 256)
        return rt_plan_fail(x, in, "all_to_all: too many ranks");
    if (read_counts(x, in, in->xparam[1], sc, W))
        return -1;
    if (in->xview[1] >= 0) {
        if (read_counts(x, in, in->xview[1], rc, W))
            return -1;
    } else if (rt_all_to_all_counts(r, rc, sc)) {
        return -1;
    }
    size_t st = 0, rt = 0;
    for (int q = 0; q < W; q++) {
        st += sc[q];
        rt += rc[q];
    }
    if ((int64_t)st > ns)
        return rt_plan_fail(x, in, "all_to_all: send counts add up to %zu, src has %lld elements",
                    st, (long long)ns);
    if ((int64_t)rt > nd)
        return rt_plan_fail(x, in, "all_to_all: %zu elements arrive, dst has room for %lld",
                    rt, (long long)nd);
    if (x->g)
        return gpu_coll(x, RT_COLL_ALL_TO_ALL, d->data, s->data, 0, sc, rc,
                        d->dtype, -1, -1);
    return rt_all_to_all(r, d->data, rc, s->data, sc, d->dtype);
}

/* A collective with group = g (rank_group.c; on GPU ranks gpu_p2p.c):
 * the sizes are checked against the group's rank count. */
static int group_coll(Exec *x, const IrInstr *in, const RtGroup *grp)
{
    static const int kinds[] = {
        [COLL_ALL_REDUCE] = RT_COLL_ALL_REDUCE, [COLL_ALL_GATHER] = RT_COLL_ALL_GATHER,
        [COLL_REDUCE_SCATTER] = RT_COLL_REDUCE_SCATTER,
        [COLL_ALL_TO_ALL] = RT_COLL_ALL_TO_ALL, [COLL_BROADCAST] = RT_COLL_BROADCAST,
        [COLL_BARRIER] = RT_COLL_BARRIER, [COLL_REDUCE] = RT_COLL_REDUCE,
        [COLL_GATHER] = RT_COLL_GATHER, [COLL_SCATTER] = RT_COLL_SCATTER};
    int G = rt_group_size(grp), q = rt_group_rank(grp);
    const char *name = rt_rank_coll_name(kinds[in->attr]);
    RtRankColl d = {.kind = kinds[in->attr], .dtype = -1, .op = -1, .root = -1};
    size_t sb = 0, db = 0; /* bytes of src and dst (GPU ranks' staging) */
    if (in->attr != COLL_BARRIER) {
        const Buf *b = &x->buf[in->param];
        const Buf *s = in->xparam[0] >= 0 ? &x->buf[in->xparam[0]] : NULL;
        if (!rt_plan_buf_contiguous(b) || (s && !rt_plan_buf_contiguous(s)))
            return rt_plan_fail(x, in, "collectives need contiguous buffers");
        int64_t nd = rt_plan_buf_numel(b), ns = s ? rt_plan_buf_numel(s) : nd;
        d.dtype = b->dtype;
        d.dst = b->data;
        d.src = s ? s->data : b->data;
        d.count = (size_t)nd;
        if (in->attr == COLL_ALL_REDUCE || in->attr == COLL_REDUCE ||
            in->attr == COLL_REDUCE_SCATTER)
            d.op = in->axis;
        if (in->attr == COLL_BROADCAST || in->attr == COLL_REDUCE ||
            in->attr == COLL_GATHER || in->attr == COLL_SCATTER)
            d.root = (int)vi(x, in->opnd[0]);
        int64_t whole = 0, part = 0;
        switch (in->attr) {
        case COLL_ALL_GATHER: case COLL_GATHER:
            whole = nd, part = ns, d.count = (size_t)ns;
            break;
        case COLL_SCATTER:
            whole = ns, part = nd, d.count = (size_t)nd;
            break;
        case COLL_REDUCE_SCATTER: {
            int64_t share = ns / G + (q < ns % G ? 1 : 0);
            if (nd != share)
                return rt_plan_fail(x, in, "reduce_scatter: dst has %lld elements, but group rank %d's share of %lld is %lld",
                            (long long)nd, q, (long long)ns, (long long)share);
            d.count = (size_t)ns;
            break;
        }
        case COLL_ALL_TO_ALL:
            if (ns % G || nd != ns)
                return rt_plan_fail(x, in, "all_to_all: src and dst need the same size, divisible by the group's %d ranks", G);
            d.count = (size_t)(ns / G);
            break;
        default: break;
        }
        if (whole != part * G)
            return rt_plan_fail(x, in, "%s: %s has %lld elements, expected %d x %lld (the group's ranks)",
                        name, in->attr == COLL_SCATTER ? "src" : "dst",
                        (long long)whole, G, (long long)part);
        size_t es = (size_t)dsl_dtype_bytes(b->dtype);
        sb = (size_t)ns * es;
        db = (size_t)nd * es;
    }
    if (x->g) {
        void *comm = NULL; /* the handle's slot: grp is x->groups[i] */
        for (int i = 0; i < x->ngroups; i++)
            if (x->groups[i] == grp)
                comm = x->gcomm[i];
        return rt_gpur_group_coll(x->g, x->r, grp, comm, &d, sb, db);
    }
    return rt_group_coll(x->r, grp, &d);
}

int rt_plan_coll(Exec *x, const IrInstr *in)
{
    if (x->in_async)
        return rt_plan_fail(x, in, "collectives cannot run inside an async block");
    RtRank *r = x->r;
    const RtGroup *grp = NULL;
    if (in->opnd[1] >= 0 && !(grp = rt_plan_group_of(x, in, in->opnd[1])))
        return -1;
    if (grp)
        return group_coll(x, in, grp);
    int W = rt_rank_size(r);
    if (in->attr == COLL_BARRIER)
        return x->g && rt_gpur_finish(x->g, r) ? -1 : rt_barrier(r);
    Buf *d = &x->buf[in->param];
    Buf *s = in->xparam[0] >= 0 ? &x->buf[in->xparam[0]] : NULL;
    int64_t nd = rt_plan_buf_numel(d), ns = rt_plan_buf_numel(s);
    if (!rt_plan_buf_contiguous(d) || (s && !rt_plan_buf_contiguous(s))) /* whole, C-order buffers */
        return rt_plan_fail(x, in, "collectives need contiguous buffers");
    switch (in->attr) {
    case COLL_SEND: case COLL_RECV: {
        Xchg *g = x->xg;
        if (!g)
            return rt_plan_fail(x, in, "send/recv outside an exchange block");
        if (g->n == g->cap) {
            int cap = g->cap ? 2 * g->cap : 8;
            RtP2p *o = realloc(g->ops, sizeof *o * (size_t)cap);
            if (!o)
                return rt_plan_fail(x, in, "out of memory");
            g->ops = o;
            g->cap = cap;
        }
        g->ops[g->n++] = (RtP2p){in->attr == COLL_SEND, (int)vi(x, in->opnd[0]),
                                 d->data, (size_t)nd * (size_t)dsl_dtype_bytes(d->dtype)};
        return 0;
    }
    case COLL_ALL_REDUCE:
        if (x->g)
            return gpu_coll(x, RT_COLL_ALL_REDUCE, d->data, d->data, (size_t)nd,
                            NULL, NULL, d->dtype, in->axis, -1);
        return rt_all_reduce(r, d->data, (size_t)nd, d->dtype, in->axis);
    case COLL_BROADCAST:
        if (x->g)
            return gpu_coll(x, RT_COLL_BROADCAST, d->data, d->data, (size_t)nd,
                            NULL, NULL, d->dtype, -1, (int)vi(x, in->opnd[0]));
        return rt_broadcast(r, d->data, (size_t)nd, d->dtype, (int)vi(x, in->opnd[0]));
    case COLL_ALL_GATHER:
        if (nd != ns * W)
            return rt_plan_fail(x, in, "all_gather: dst has %lld elements, expected %d x %lld",
                        (long long)nd, W, (long long)ns);
        if (x->g)
            return gpu_coll(x, RT_COLL_ALL_GATHER, d->data, s->data, (size_t)ns,
                            NULL, NULL, d->dtype, -1, -1);
        return rt_all_gather(r, d->data, s->data, (size_t)ns, d->dtype);
    case COLL_REDUCE_SCATTER: {
        /* src is split as evenly as possible: rank q gets ns/W elements,
         * one more for the first ns%W ranks */
        int q = rt_rank_id(r);
        int64_t share = ns / W + (q < ns % W ? 1 : 0);
        if (nd != share)
            return rt_plan_fail(x, in, "reduce_scatter: dst has %lld elements, but rank %d's share of %lld is %lld",
                        (long long)nd, q, (long long)ns, (long long)share);
        if (x->g)
            return gpu_coll(x, RT_COLL_REDUCE_SCATTER, d->data, s->data,
                            (size_t)ns, NULL, NULL, d->dtype, in->axis, -1);
        return rt_reduce_scatter(r, d->data, s->data, (size_t)ns, NULL, d->dtype, in->axis);
    }
    case COLL_ALL_TO_ALL: {
        if (in->xparam[1] >= 0)
            return do_all_to_all_v(x, in, d, s, nd, ns);
        if (ns % W || nd != ns)
            return rt_plan_fail(x, in, "all_to_all: src and dst need the same size, divisible by %d ranks", W);
        size_t cnt[256];
        if (W > 256)
            return rt_plan_fail(x, in, "all_to_all: too many ranks");
        for (int i = 0; i < W; i++)
            cnt[i] = (size_t)(ns / W);
        if (x->g)
            return gpu_coll(x, RT_COLL_ALL_TO_ALL, d->data, s->data, 0, cnt,
                            cnt, d->dtype, -1, -1);
        return rt_all_to_all(r, d->data, cnt, s->data, cnt, d->dtype);
    }
    case COLL_REDUCE: {
        int root = (int)vi(x, in->opnd[0]);
        if (x->g)
            return gpu_coll(x, RT_COLL_REDUCE, d->data, d->data, (size_t)nd,
                            NULL, NULL, d->dtype, in->axis, root);
        return rt_reduce(r, d->data, (size_t)nd, d->dtype, in->axis, root);
    }
    case COLL_GATHER: case COLL_SCATTER: {
        /* the same shapes on every rank: the W-block buffer is dst of a
         * gather and src of a scatter (only the root's is used) */
        bool g = in->attr == COLL_GATHER;
        int64_t part = g ? ns : nd, whole = g ? nd : ns;
        if (whole != part * W)
            return rt_plan_fail(x, in, "%s: %s has %lld elements, expected %d x %lld",
                        g ? "gather" : "scatter", g ? "dst" : "src",
                        (long long)whole, W, (long long)part);
        int root = (int)vi(x, in->opnd[0]);
        int kind = g ? RT_COLL_GATHER : RT_COLL_SCATTER;
        if (x->g)
            return gpu_coll(x, kind, d->data, s->data, (size_t)part, NULL,
                            NULL, d->dtype, -1, root);
        return g ? rt_gather(r, d->data, s->data, (size_t)part, d->dtype, root)
                 : rt_scatter(r, d->data, s->data, (size_t)part, d->dtype, root);
    }
    }
    return rt_plan_fail(x, in, "unknown collective");
}
