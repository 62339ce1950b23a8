/* plan.c — the Device IR interpreter.
 *
 * A device function runs once per rank, in program order, on that rank's
 * thread: scalars and control flow are evaluated with ir_eval_instr;
 * buffers come from parameters or ALLOC (device memory or the symmetric
 * heap); COPY moves dynamic-shaped views, local or peer, and may set a
 * signal on the destination's rank; LAUNCH runs a JIT'd kernel on this
 * rank's thread (so kernels of different ranks can wait on each other);
 * `async` blocks run on their own threads until `sync`; collectives go to
 * ranks.h; CALL runs another device function inline. Every failure
 * becomes the rank's error (rt_rank_fail), so the world stops every rank
 * instead of hanging. On GPU ranks (pm->gpu set) buffers hold device
 * addresses and allocation, peers, copies, signals, launches and
 * collectives go to the hooks of gpu_ranks.h instead. The multi-rank
 * runner (rt_plan_run) is plan_run.c; COLL instructions (collectives,
 * send/recv) are dispatched by plan_coll.c. */
#include "plan_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_plan_fail(Exec *x, const IrInstr *in, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (in && in->loc.line > 0)
        return rt_rank_fail(x->r, "%s line %d: %s", x->f->name, in->loc.line, msg);
    return rt_rank_fail(x->r, "%s: %s", x->f->name, msg);
}

static int64_t vi(Exec *x, int id) { return x->val[id].i; }

/* ------------------------------------------------------------ views */

typedef RtPlanSpan Span;

/* Resolve buffer p's view v (with an optional peer) to a Span. */
static int span_of(Exec *x, const IrInstr *in, int p, int vid, int peer,
                   Span *s)
{
    const Buf *b = &x->buf[p];
    const IrView *v = &x->f->views[vid];
    int esz = dsl_dtype_bytes(b->dtype);
    char *base = b->data;
    if (!base)
        return rt_plan_fail(x, in, "buffer '%s' is not allocated", x->f->params[p].name);
    if (peer >= 0) {
        int pr = (int)vi(x, peer);
        if (pr < 0 || pr >= rt_rank_size(x->r))
            return rt_plan_fail(x, in, "peer rank %d out of range (world %d)", pr,
                        rt_rank_size(x->r));
        if (b->mem == MEM_GLOBAL)
            return rt_plan_fail(x, in, "peer access to '%s', which is not symmetric",
                        x->f->params[p].name);
        base = x->g ? rt_gpur_peer(x->g, x->r, base, pr)
                    : rt_sym_peer_of(x->r, base, pr);
    }
    s->n = 0;
    s->numel = 1;
    for (int d = 0; d < v->ndims; d++) {
        int64_t st = vi(x, v->d[d].val);
        int64_t len = v->d[d].kind == IDX_SCALAR ? 1
                    : v->d[d].len ? v->d[d].len : vi(x, v->d[d].lenv);
        if (v->d[d].kind == IDX_TILE)
            return rt_plan_fail(x, in, "gather views are not supported in device functions");
        if (st < 0 || len < 0 || st + len > b->shape[d])
            return rt_plan_fail(x, in, "view of '%s' out of bounds: dim %d is [%lld, %lld) of %lld",
                        x->f->params[p].name, d, (long long)st,
                        (long long)(st + len), (long long)b->shape[d]);
        base += st * b->stride[d] * esz;
        if (v->d[d].kind == IDX_RANGE) {
            s->len[s->n] = len;
            s->str[s->n] = b->stride[d] * esz;
            s->n++;
            s->numel *= len;
        }
    }
    s->base = base;
    return 0;
}

int rt_plan_span_runs(const RtPlanSpan *d, const RtPlanSpan *s, int esz,
                      int (*copy)(void *ctx, char *dp, char *sp, size_t bytes), void *ctx)
{
    int64_t idx_d[IR_MAX_RANK] = {0}, idx_s[IR_MAX_RANK] = {0};
    bool dcont = d->n == 0 || d->str[d->n - 1] == esz;
    bool scont = s->n == 0 || s->str[s->n - 1] == esz;
    int64_t drow = d->n ? d->len[d->n - 1] : 1, srow = s->n ? s->len[s->n - 1] : 1;
    int64_t run = dcont && scont && drow == srow ? drow : 1;
    for (int64_t e = 0; e < d->numel; e += run) {
        char *dp = d->base, *sp = s->base;
        for (int k = 0; k < d->n; k++)
            dp += idx_d[k] * d->str[k];
        for (int k = 0; k < s->n; k++)
            sp += idx_s[k] * s->str[k];
        if (copy(ctx, dp, sp, (size_t)(run * esz)))
            return -1;
        for (int64_t adv = 0; adv < run; adv++) { /* advance both indices */
            for (int k = d->n - 1; k >= 0; k--)
                if (++idx_d[k] < d->len[k]) break; else idx_d[k] = 0;
            for (int k = s->n - 1; k >= 0; k--)
                if (++idx_s[k] < s->len[k]) break; else idx_s[k] = 0;
        }
    }
    return 0;
}

/* ctx: the rank (NULL: no world), whose copies may reach a peer's heap
 * over MPI RMA (ranks on several nodes) */
static int host_copy(void *ctx, char *dp, char *sp, size_t bytes)
{
    if (ctx)
        return rt_sym_copy(ctx, dp, sp, bytes);
    memmove(dp, sp, bytes);
    return 0;
}

/* Copy numel elements between two spans in row-major order. */
static int span_copy(RtRank *r, const Span *d, const Span *s, int esz)
{
    return rt_plan_span_runs(d, s, esz, host_copy, r);
}

/* "S[i, j]" (", rank p" for a peer's): the cell of S's view that idx (the
 * position inside the view's ranges) names, for a timed-out wait. */
static void cell_name(Exec *x, const IrInstr *in, const int64_t *idx,
                      char *buf, size_t len)
{
    const IrView *v = &x->f->views[in->view];
    size_t n = (size_t)snprintf(buf, len, "%s[", x->f->params[in->param].name);
    for (int d = 0, k = 0; d < v->ndims && n < len; d++) {
        int64_t c = vi(x, v->d[d].val);
        if (v->d[d].kind == IDX_RANGE)
            c += idx[k++];
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", d ? ", " : "", (long long)c);
    }
    if (n < len && in->opnd[3] >= 0)
        n += (size_t)snprintf(buf + n, len - n, "] of rank %lld", (long long)vi(x, in->opnd[3]));
    else if (n < len)
        snprintf(buf + n, len - n, "]");
}

/* notify(S[...], v) / wait(S[...] >= v) from a device function: every
 * cell of the view, on this rank or a peer. */
static int do_signal(Exec *x, const IrInstr *in)
{
    Span s;
    if (span_of(x, in, in->param, in->view, in->opnd[3], &s))
        return -1;
    uint64_t v = (uint64_t)vi(x, in->opnd[0]);
    int64_t idx[IR_MAX_RANK] = {0};
    for (int64_t e = 0; e < s.numel; e++) {
        char *p = s.base;
        for (int k = 0; k < s.n; k++)
            p += idx[k] * s.str[k];
        char nm[160];
        cell_name(x, in, idx, nm, sizeof nm);
        int rc = x->g ? (in->op == IR_NOTIFY
                             ? rt_gpur_notify(x->g, x->r, p, v, in->attr)
                             : rt_gpur_wait(x->g, x->r, p, in->attr, v, nm))
                 : in->op == IR_NOTIFY
                     ? rt_signal_notify(x->r, (uint64_t *)p, v, in->attr)
                     : rt_signal_wait(x->r, (const uint64_t *)p, in->attr, v, nm);
        if (rc)
            return -1;
        for (int k = s.n - 1; k >= 0; k--)
            if (++idx[k] < s.len[k]) break; else idx[k] = 0;
    }
    return 0;
}

static int do_copy(Exec *x, const IrInstr *in)
{
    Span d, s;
    if (span_of(x, in, in->param, in->view, in->opnd[3], &d) ||
        span_of(x, in, in->xparam[0], in->xview[0], in->opnd[2], &s))
        return -1;
    if (d.numel != s.numel)
        return rt_plan_fail(x, in, "copy of %lld elements into a view of %lld",
                    (long long)s.numel, (long long)d.numel);
    if (x->g) {
        if (rt_gpur_copy(x->g, x->r, &d, &s, dsl_dtype_bytes(x->buf[in->param].dtype)))
            return -1;
    } else {
        if (span_copy(x->r, &d, &s, dsl_dtype_bytes(x->buf[in->param].dtype)))
            return -1;
    }
    if (in->xparam[1] < 0)
        return 0;
    Span c;
    if (span_of(x, in, in->xparam[1], in->xview[1], -1, &c))
        return -1;
    int dest = in->opnd[3] >= 0 ? (int)vi(x, in->opnd[3]) : rt_rank_id(x->r);
    uint64_t v = in->opnd[0] >= 0 ? (uint64_t)vi(x, in->opnd[0]) : 1;
    if (x->g)
        return rt_gpur_notify(x->g, x->r, rt_gpur_peer(x->g, x->r, c.base, dest),
                              v, in->attr);
    uint64_t *cell = rt_sym_peer_of(x->r, c.base, dest);
    return rt_signal_notify(x->r, cell, v, in->attr);
}

/* ------------------------------------------------------------ buffers */

static int alloc_buf(Exec *x, const IrInstr *in)
{
    const IrParam *p = &x->f->params[in->param];
    const IrView *v = &x->f->views[in->view];
    Buf *b = &x->buf[in->param];
    int64_t n = 1;
    b->dtype = p->dtype;
    b->rank = v->ndims;
    b->mem = in->attr;
    for (int d = v->ndims - 1; d >= 0; d--) {
        int64_t e = vi(x, v->d[d].val);
        if (e < 0 || (e > 0 && n > ((int64_t)1 << 40) / e))
            return rt_plan_fail(x, in, "bad extent %lld for buffer '%s'", (long long)e, p->name);
        b->shape[d] = e;
        b->stride[d] = n;
        n *= e;
    }
    for (int d = 0; d < v->ndims; d++)
        x->shapes[in->param][d] = b->shape[d];
    size_t bytes = (size_t)n * (size_t)dsl_dtype_bytes(p->dtype);
    if (x->g) { /* device memory (GPU ranks) */
        if (b->owned)
            rt_gpur_free(x->g, b->data);
        b->owned = false;
        if (in->attr != MEM_GLOBAL && x->in_async)
            return rt_plan_fail(x, in, "symmetric buffers must be allocated outside async blocks");
        if (rt_gpur_alloc(x->g, x->r, bytes, in->attr != MEM_GLOBAL, &b->data))
            return -1;
        b->owned = in->attr == MEM_GLOBAL;
        return 0;
    }
    if (in->attr == MEM_GLOBAL) {
        if (b->owned)
            free(b->data);
        b->data = calloc(1, bytes ? bytes : 1);
        b->owned = true;
        if (!b->data)
            return rt_plan_fail(x, in, "out of memory allocating %zu bytes for '%s'", bytes, p->name);
        return 0;
    }
    if (x->in_async)
        return rt_plan_fail(x, in, "symmetric buffers must be allocated outside async blocks");
    size_t off;
    if (rt_sym_alloc(x->r, bytes ? bytes : 8, &off))
        return -1;
    b->data = rt_sym_ptr(x->r, off, rt_rank_id(x->r));
    return 0;
}

/* ------------------------------------------------------------ launches */

BkRangeFn rt_plan_range(const RtPlanModule *pm, const char *name)
{
    return pm->range ? pm->range(pm->range_ctx, name)
                     : bk_cpu_kernel_range(pm->cpu, name);
}

static int do_launch(Exec *x, const IrInstr *in)
{
    const IrFunc *k = x->pm->ir->funcs[in->attr];
    BkRangeFn fn = x->g ? NULL : rt_plan_range(x->pm, k->name);
    if (!fn && !x->g)
        return rt_plan_fail(x, in, "kernel '%s' is not compiled", k->name);
    DLTensor t[64];
    blkc_arg a[64];
    for (int i = 0; i < in->xn && i < 64; i++) {
        int32_t e = x->f->extra[in->xoff + i];
        const IrParam *kp = &k->params[i];
        if (e >= 0) {
            if (dsl_is_float(kp->dtype)) {
                a[i].kind = BLKC_ARG_FLOAT;
                a[i].v.f = x->val[e].f;
            } else {
                a[i].kind = BLKC_ARG_INT;
                a[i].v.i = x->val[e].i;
            }
            continue;
        }
        Buf *b = &x->buf[-2 - e];
        memset(&t[i], 0, sizeof t[i]);
        t[i].data = b->data;
        t[i].device.device_type = kDLCPU;
        t[i].ndim = b->rank;
        t[i].dtype = rt_dtype_to_dl(b->dtype);
        t[i].shape = b->shape;
        t[i].strides = b->stride;
        a[i].kind = BLKC_ARG_TENSOR;
        a[i].v.tensor = &t[i];
    }
    blkc_launch_options lo;
    memset(&lo, 0, sizeof lo);
    for (int g = 0; g < 3; g++)
        if (in->opnd[g] >= 0) {
            for (int h = 0; h < 3; h++)
                if (lo.grid[h] == 0)
                    lo.grid[h] = 1;
            lo.grid[g] = vi(x, in->opnd[g]);
        }
    if (x->g)
        return rt_gpur_launch(x->g, x->r, k, a, in->xn, &lo);
    char err[512];
    if (x->mega) { /* a tile-task table entry instead of a launch */
        if (rt_mega_launch(x->mega, k, fn, a, in->xn, &lo, err, sizeof err))
            return rt_plan_fail(x, in, "launch %s: %s", k->name, err);
        return 0;
    }
    RtWorldView wv = rt_rank_view(x->r);
    blkc_status s = rt_cpu_launch_ranked(k, fn, a, in->xn, &lo, &wv, NULL, err,
                                         sizeof err);
    if (s != BLKC_OK)
        return rt_plan_fail(x, in, "launch %s: %s", k->name, err);
    return 0;
}

/* ------------------------------------------------------------ interpreter */

static int exec_region(Exec *x, int reg);
static int do_call(Exec *x, const IrInstr *in);

static void *async_main(void *arg)
{
    Async *a = arg;
    a->rc = exec_region(a->x, a->region);
    if (a->x->g && rt_gpur_join(a->x->g, a->x->r))
        a->rc = -1;
    return NULL;
}

static int join_asyncs(Exec *x)
{
    int rc = 0;
    for (int i = 0; i < x->nasync; i++) {
        Async *a = x->asyncs[i];
        pthread_join(a->th, NULL);
        if (a->rc < 0)
            rc = -1;
        free(a->x->val);
        free(a->x->vars);
        free(a->x);
        free(a);
    }
    x->nasync = 0;
    return rc;
}

static int start_async(Exec *x, const IrInstr *in)
{
    if (x->nasync == x->cap_async) {
        int nc = x->cap_async ? x->cap_async * 2 : 8;
        Async **na = realloc(x->asyncs, sizeof *na * (size_t)nc);
        if (!na)
            return rt_plan_fail(x, in, "out of memory");
        x->asyncs = na;
        x->cap_async = nc;
    }
    Async *a = calloc(1, sizeof *a);
    Exec *ax = calloc(1, sizeof *ax);
    if (!a || !ax) {
        free(a);
        free(ax);
        return rt_plan_fail(x, in, "out of memory");
    }
    *ax = *x;
    ax->asyncs = NULL;
    ax->nasync = ax->cap_async = 0;
    ax->in_async = true;
    ax->mega = NULL; /* an async block launches as usual */
    size_t nv = (size_t)x->f->nins + 1, nw = (size_t)x->f->nvars + 1;
    ax->val = malloc(nv * sizeof *ax->val);
    ax->vars = malloc(nw * sizeof *ax->vars);
    if (!ax->val || !ax->vars) {
        free(ax->val);
        free(ax->vars);
        free(ax);
        free(a);
        return rt_plan_fail(x, in, "out of memory");
    }
    memcpy(ax->val, x->val, nv * sizeof *ax->val);
    memcpy(ax->vars, x->vars, nw * sizeof *ax->vars);
    a->x = ax;
    a->region = in->region[0];
    if (x->g && !(ax->g = rt_gpur_fork(x->g, x->r))) { /* its own stream */
        free(ax->val);
        free(ax->vars);
        free(ax);
        free(a);
        return -1;
    }
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, (size_t)64 << 20);
    int e = pthread_create(&a->th, &at, async_main, a);
    pthread_attr_destroy(&at);
    if (e) {
        if (ax->g)
            rt_gpur_join(ax->g, x->r);
        free(ax->val);
        free(ax->vars);
        free(ax);
        free(a);
        return rt_plan_fail(x, in, "could not start a thread for an async block");
    }
    x->asyncs[x->nasync++] = a;
    return 0;
}

const RtGroup *rt_plan_group_of(Exec *x, const IrInstr *in, int vid)
{
    int64_t h = vi(x, vid);
    if (h < 0 || h >= x->ngroups)
        return rt_plan_fail(x, in, "%lld is not a group made in this call of %s",
                    (long long)h, x->f->name), NULL;
    return x->groups[h];
}

static int exec_region(Exec *x, int reg);

/* let g = group(color, key): the handle is its index in x->groups. */
static int do_group(Exec *x, const IrInstr *in, int id)
{
    if (x->in_async)
        return rt_plan_fail(x, in, "group() cannot run inside an async block");
    if (x->ngroups == (int)(sizeof x->groups / sizeof x->groups[0]))
        return rt_plan_fail(x, in, "more than %d groups in one call of %s",
                    (int)(sizeof x->groups / sizeof x->groups[0]), x->f->name);
    RtGroup *g;
    int64_t color = vi(x, in->opnd[0]), key = vi(x, in->opnd[1]);
    if (x->g ? rt_gpur_group(x->g, x->r, color, key, &g, &x->gcomm[x->ngroups])
             : rt_group_split(x->r, color, key, &g))
        return -1;
    x->groups[x->ngroups] = g;
    x->val[id].i = x->ngroups++;
    return 0;
}

/* exchange { ... }: run the block, collecting its send/recv, then run them
 * as one group (rank_p2p.c). */
static int do_xchg(Exec *x, const IrInstr *in)
{
    if (x->in_async)
        return rt_plan_fail(x, in, "an exchange block cannot run inside an async block");
    Xchg g = {NULL, 0, 0};
    x->xg = &g;
    int rc = exec_region(x, in->region[0]);
    x->xg = NULL;
    if (rc == 0 && (x->g ? rt_gpur_exchange(x->g, x->r, g.ops, g.n)
                         : rt_exchange(x->r, g.ops, g.n)))
        rc = -1;
    free(g.ops);
    return rc;
}

/* Returns 0, 1 after `return`, or -1 on failure. */
/* Megakernel mode: the steps that are not tile-tasks; every pending tile
 * runs before them. */
static const char *mega_boundary(int op)
{
    switch (op) {
    case IR_COPY: return "copy";
    case IR_ASYNC: return "async";
    case IR_SYNC: return "sync";
    case IR_XCHG: return "exchange";
    case IR_NOTIFY: return "notify";
    case IR_WAIT: return "wait";
    case IR_COLL: return "collective";
    default: return NULL;
    }
}

/* A copy or collective as a tile-task (rt_mega_op): the rank's state and
 * the instruction (top level of the entry: its operands are final), a
 * copy's resolved spans. */
typedef struct MegaOp {
    Exec *x;
    const IrInstr *in;
    Span d, s;
    int esz;
    /* one chunk of a contiguous all_reduce (in->attr == COLL_ALL_REDUCE):
     * count elements at ptr, in group grp (NULL: the world) */
    bool chunk;
    char *ptr;
    size_t count;
    const RtGroup *grp;
} MegaOp;

static int mega_op_run(void *arg)
{
    MegaOp *o = arg;
    if (o->in->op == IR_COPY)
        return span_copy(o->x->r, &o->d, &o->s, o->esz);
    if (o->chunk) {
        const Buf *b = &o->x->buf[o->in->param];
        if (!o->grp)
            return rt_all_reduce(o->x->r, o->ptr, o->count, b->dtype, o->in->axis);
        RtRankColl d = {.kind = RT_COLL_ALL_REDUCE, .dtype = b->dtype, .op = o->in->axis,
                        .root = -1, .count = o->count, .src = o->ptr, .dst = o->ptr};
        return rt_group_coll(o->x->r, o->grp, &d);
    }
    return rt_plan_coll(o->x, o->in);
}

static void add_span(RtMegaSpan *sp, int *n, const Span *s, int esz, bool w)
{
    const char *lo = s->base, *hi = s->base + esz;
    for (int d = 0; d < s->n; d++) {
        int64_t e = (s->len[d] - 1) * s->str[d];
        if (e < 0)
            lo += e;
        else
            hi += e;
    }
    sp[(*n)++] = (RtMegaSpan){lo, (size_t)(hi - lo), w};
}

static void add_buf(RtMegaSpan *sp, int *n, const Buf *b, bool w)
{
    int64_t e = 1;
    for (int d = 0; d < b->rank; d++)
        e *= b->shape[d];
    sp[(*n)++] = (RtMegaSpan){b->data, (size_t)e * (size_t)dsl_dtype_bytes(b->dtype), w};
}

/* An all_reduce of a contiguous buffer as row chunks (BLKC_MEGA_CHUNKS,
 * default 4 along dim 0 when the rank has more than one worker, else 1): one tile-task each, so a chunk goes out as soon
 * as the rows it holds are computed and a consumer's rows wait for their
 * chunk only. Every rank makes the same chunks in the same order. */
static int mega_all_reduce(Exec *x, const IrInstr *in, MegaOp *o)
{
    const Buf *b = &x->buf[in->param];
    if (in->xparam[0] >= 0 && x->buf[in->xparam[0]].data != b->data)
        return 0;
    const char *e = getenv("BLKC_MEGA_CHUNKS"); /* default: 4 with workers to overlap */
    int64_t K = e && atoi(e) > 0 ? atoi(e) : rt_mega_workers(x->mega) > 1 ? 4 : 1;
    int64_t rows = b->rank ? b->shape[0] : 1, inner = rows ? rt_plan_buf_numel(b) / rows : 0;
    if (!rt_plan_buf_contiguous(b) || rows < 1)
        K = 1;
    else if (K > rows)
        K = rows;
    if (in->opnd[1] >= 0 && !(o->grp = rt_plan_group_of(x, in, in->opnd[1])))
        return -1;
    int64_t per = (rows + K - 1) / K;
    size_t es = (size_t)dsl_dtype_bytes(b->dtype);
    for (int64_t c = 0; c < K; c++) {
        int64_t r0 = c * per, r1 = r0 + per < rows ? r0 + per : rows;
        if (r0 >= r1)
            break;
        o->chunk = true;
        o->ptr = b->data + (size_t)(r0 * inner) * es;
        o->count = K == 1 ? (size_t)rt_plan_buf_numel(b) : (size_t)((r1 - r0) * inner);
        RtMegaSpan sp = {o->ptr, o->count * es, true};
        char name[96], err[512];
        if (K > 1)
            snprintf(name, sizeof name, "all_reduce[rows %lld:%lld]", (long long)r0,
                     (long long)r1);
        else
            snprintf(name, sizeof name, "all_reduce");
        if (rt_mega_op(x->mega, name, true, mega_op_run, o, sizeof *o, &sp, 1, err, sizeof err))
            return rt_plan_fail(x, in, "%s", err);
    }
    return 1;
}

/* Defer instruction `in` (of region reg) as a tile-task when it is a local
 * copy without a signal or a collective other than a barrier / send /
 * recv, at the top level of the entry. Returns 1 when deferred, 0 when it
 * is not such an instruction, -1 on error. */
static int mega_defer(Exec *x, const IrInstr *in, int reg)
{
    if (reg != 0 || !x->entry || x->xg || (in->op != IR_COPY && in->op != IR_COLL))
        return 0;
    MegaOp o = {.x = x, .in = in};
    RtMegaSpan sp[3];
    int n = 0;
    const char *name = "copy";
    bool remote = in->op == IR_COLL;
    if (in->op == IR_COPY) {
        if (in->opnd[3] >= 0 || in->opnd[2] >= 0 || in->xparam[1] >= 0)
            return 0;
        if (span_of(x, in, in->param, in->view, -1, &o.d) ||
            span_of(x, in, in->xparam[0], in->xview[0], -1, &o.s))
            return -1;
        if (o.d.numel != o.s.numel)
            return 0; /* do_copy reports it */
        o.esz = dsl_dtype_bytes(x->buf[in->param].dtype);
        add_span(sp, &n, &o.d, o.esz, true);
        add_span(sp, &n, &o.s, o.esz, false);
    } else {
        static const char *const coll[] = {"all_reduce", "all_gather", "reduce_scatter",
                                           "all_to_all", "broadcast"};
        if (in->attr < 0 || in->attr > COLL_BROADCAST || in->attr == COLL_BARRIER)
            return 0;
        name = coll[in->attr];
        if (!x->buf[in->param].data)
            return 0;
        if (in->attr == COLL_ALL_REDUCE)
            return mega_all_reduce(x, in, &o);
        add_buf(sp, &n, &x->buf[in->param], true);
        for (int k = 0; k < 2; k++)
            if (in->xparam[k] >= 0 && x->buf[in->xparam[k]].data)
                add_buf(sp, &n, &x->buf[in->xparam[k]], false);
    }
    char err[512];
    if (rt_mega_op(x->mega, name, remote, mega_op_run, &o, sizeof o, sp, n, err, sizeof err))
        return rt_plan_fail(x, in, "%s", err);
    return 1;
}

static int mega_flush(Exec *x, const IrInstr *in)
{
    char err[512], what[48];
    const char *b = in ? mega_boundary(in->op) : NULL;
    snprintf(what, sizeof what, "%s", b ? b : "end of call");
    static const char *const coll[] = {"all_reduce", "all_gather", "reduce_scatter",
                                       "all_to_all", "broadcast", "barrier", "reduce",
                                       "gather", "scatter", "send", "recv"};
    if (in && in->op == IR_COLL && in->attr >= 0 && in->attr < (int)(sizeof coll / sizeof *coll))
        snprintf(what, sizeof what, "%s", coll[in->attr]);
    bool entry_end = !in && x->mega != NULL && x->entry;
    if (rt_mega_flush(x->mega, entry_end ? NULL : what, err, sizeof err))
        return in ? rt_plan_fail(x, in, "%s", err) : rt_rank_fail(x->r, "%s: %s", x->f->name, err);
    return 0;
}

static int exec_region(Exec *x, int reg)
{
    const IrFunc *f = x->f;
    const IrRegion *rg = &f->regions[reg];
    IrLaunchEnv env = {x->scalars, (const int64_t(*)[IR_MAX_RANK])x->shapes,
                       rt_rank_id(x->r), rt_rank_size(x->r)};
    char err[512];
    for (int k = 0; k < rg->n; k++) {
        int id = rg->ins[k];
        const IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        if (rt_rank_failed(x->r))
            return -1;
        int rc = 0;
        if (x->mega && mega_boundary(in->op)) {
            int d = mega_defer(x, in, reg);
            if (d < 0 || (d == 0 && mega_flush(x, in)))
                return -1;
            if (d > 0)
                continue;
        }
        switch (in->op) {
        case IR_RANK: x->val[id].i = rt_rank_id(x->r); break;
        case IR_WORLD: x->val[id].i = rt_rank_size(x->r); break;
        case IR_GROUP: rc = do_group(x, in, id); break;
        case IR_GRANK: case IR_GWORLD: {
            const RtGroup *g = rt_plan_group_of(x, in, in->opnd[0]);
            if (!g)
                return -1;
            x->val[id].i = in->op == IR_GRANK ? rt_group_rank(g) : rt_group_size(g);
            break;
        }
        case IR_VGET: x->val[id] = x->vars[in->param]; break;
        case IR_VSET: x->vars[in->param] = x->val[in->opnd[0]]; break;
        case IR_YIELD: break;
        case IR_RET: return 1;
        case IR_FOR: {
            int64_t lo = vi(x, in->opnd[0]), hi = vi(x, in->opnd[1]);
            int64_t st = vi(x, in->opnd[2]);
            for (int64_t i = lo; st > 0 ? i < hi : st < 0 ? i > hi : false; i += st) {
                x->val[id].i = i;
                if ((rc = exec_region(x, in->region[0])) != 0)
                    return rc;
            }
            break;
        }
        case IR_WHILE:
            for (;;) {
                const IrRegion *c = &f->regions[in->region[0]];
                if ((rc = exec_region(x, in->region[0])) != 0)
                    return rc;
                if (!x->val[f->ins[c->ins[c->n - 1]].opnd[0]].i)
                    break;
                if ((rc = exec_region(x, in->region[1])) != 0)
                    return rc;
            }
            break;
        case IR_IF:
            rc = exec_region(x, vi(x, in->opnd[0]) ? in->region[0] : in->region[1]);
            if (rc)
                return rc;
            break;
        case IR_ALLOC: rc = alloc_buf(x, in); break;
        case IR_COPY: rc = do_copy(x, in); break;
        case IR_LAUNCH: rc = do_launch(x, in); break;
        case IR_CALL: rc = do_call(x, in); break;
        case IR_CHECKDIM:
            if (x->shapes[in->param][in->attr] != vi(x, in->opnd[0]))
                return rt_plan_fail(x, in, "'%s' dim %d is %lld, but its type says %s = %lld",
                            f->params[in->param].name, in->attr,
                            (long long)x->shapes[in->param][in->attr],
                            f->syms[in->axis].name, (long long)vi(x, in->opnd[0]));
            break;
        case IR_ASYNC: rc = start_async(x, in); break;
        case IR_SYNC: rc = join_asyncs(x); break;
        case IR_COLL: rc = rt_plan_coll(x, in); break;
        case IR_XCHG: rc = do_xchg(x, in); break;
        case IR_NOTIFY: case IR_WAIT: rc = do_signal(x, in); break;
        default:
            if (ir_eval_instr(f, id, &env, x->val, err, sizeof err))
                return rt_plan_fail(x, in, "%s", err);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Run device function fi on rank r with its parameters bound: bufs[p] for
 * tensor params (not owned), scalars[p] for scalar ones. Returns 0 or -1
 * (the rank's error is set). */
static int run_func(const RtPlanModule *pm, int fi, RtRank *r, const Buf *bufs,
                    const IrScalarVal *scalars, bool in_async, bool entry, RtMega *mega)
{
    const IrFunc *f = pm->ir->funcs[fi];
    Exec x;
    memset(&x, 0, sizeof x);
    x.pm = pm;
    x.f = f;
    x.r = r;
    x.in_async = in_async;
    x.g = rt_gpur_ctx(pm->gpu, r);
    x.mega = mega;
    x.entry = entry;
    if (entry && pm->mega && !x.g && !in_async) {
        RtWorldView wv = rt_rank_view(r);
        if (!(x.mega = rt_mega_new(pm->mega, &wv)))
            return rt_rank_fail(r, "out of memory");
    }
    size_t np = (size_t)f->nparams + 1;
    x.val = calloc((size_t)f->nins + 1, sizeof *x.val);
    x.vars = calloc((size_t)f->nvars + 1, sizeof *x.vars);
    x.buf = calloc(np, sizeof *x.buf);
    x.scalars = calloc(np, sizeof *x.scalars);
    x.shapes = calloc(np, sizeof *x.shapes);
    int rc = -1;
    size_t mark = rt_sym_mark(r);
    if (!x.val || !x.vars || !x.buf || !x.scalars || !x.shapes) {
        rt_rank_fail(r, "out of memory");
        goto out;
    }
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *ip = &f->params[p];
        if (ip->local)
            continue;
        if (ip->kind == PK_SCALAR) {
            x.scalars[p] = scalars[p];
            continue;
        }
        x.buf[p] = bufs[p];
        x.buf[p].owned = false;
        memcpy(x.shapes[p], bufs[p].shape, sizeof x.shapes[p]);
    }
    rc = exec_region(&x, 0);
    if (x.mega && rc >= 0 && mega_flush(&x, NULL)) /* before buffers are freed */
        rc = -1;
    if (join_asyncs(&x))
        rc = -1;
    if (x.g && rt_gpur_finish(x.g, r)) /* before buffers are freed */
        rc = -1;
    if (rc == 1)
        rc = 0;
    /* the entry always releases (a collective every rank makes); a callee
     * only when it allocated, which never happens inside async blocks */
    if (rc == 0 && (entry ? rt_sym_release_final(r, mark)
                          : rt_sym_mark(r) != mark && rt_sym_release(r, mark)))
        rc = -1;
out:
    for (int p = 0; x.buf && p < f->nparams; p++)
        if (x.buf[p].owned) {
            if (x.g)
                rt_gpur_free(x.g, x.buf[p].data);
            else
                free(x.buf[p].data);
        }
    for (int i = 0; i < x.ngroups; i++) {
        rt_gpur_group_free(x.g, r, x.gcomm[i]);
        rt_group_free(x.groups[i]);
    }
    if (x.mega != mega)
        rt_mega_free(x.mega);
    free(x.asyncs);
    free(x.val);
    free(x.vars);
    free(x.buf);
    free(x.scalars);
    free(x.shapes);
    return rc < 0 ? -1 : 0;
}

/* g(args): bind the arguments like a launch's (extents checked against the
 * callee's static dims and symbolic sizes) and run g inline. */
static int do_call(Exec *x, const IrInstr *in)
{
    if (in->attr < 0 || in->attr >= x->pm->ir->nfuncs)
        return rt_plan_fail(x, in, "call of an unknown device function");
    const IrFunc *g = x->pm->ir->funcs[in->attr];
    size_t np = (size_t)g->nparams + 1;
    Buf *bufs = calloc(np, sizeof *bufs);
    IrScalarVal *sc = calloc(np, sizeof *sc);
    int rc = -1;
    if (!bufs || !sc) {
        rt_plan_fail(x, in, "out of memory");
        goto out;
    }
    for (int i = 0; i < in->xn && i < g->nparams; i++) {
        int32_t e = x->f->extra[in->xoff + i];
        const IrParam *gp = &g->params[i];
        if (e >= 0) {
            sc[i] = x->val[e];
            continue;
        }
        bufs[i] = x->buf[-2 - e];
        if (!bufs[i].data) {
            rt_plan_fail(x, in, "call %s: buffer '%s' is not allocated", g->name,
                 x->f->params[-2 - e].name);
            goto out;
        }
        for (int d = 0; d < gp->rank; d++) {
            int64_t have = bufs[i].shape[d], want;
            if (gp->dims[d] >= 0) {
                want = gp->dims[d];
                if (have != want) {
                    rt_plan_fail(x, in, "call %s: '%s' dim %d is %lld, '%s' wants %lld", g->name,
                         x->f->params[-2 - e].name, d, (long long)have, gp->name,
                         (long long)want);
                    goto out;
                }
                continue;
            }
            const IrSym *sy = &g->syms[-1 - gp->dims[d]];
            if (sy->param > i || (sy->param == i && sy->dim >= d))
                continue; /* bound here */
            want = bufs[sy->param].shape[sy->dim];
            if (have != want) {
                rt_plan_fail(x, in, "call %s: size %s is %lld from '%s' dim %d but %lld from '%s' dim %d",
                     g->name, sy->name, (long long)want, g->params[sy->param].name, sy->dim,
                     (long long)have, gp->name, d);
                goto out;
            }
        }
    }
    rc = run_func(x->pm, in->attr, x->r, bufs, sc, x->in_async, false, x->mega);
out:
    free(bufs);
    free(sc);
    return rc;
}

int rt_plan_exec(const RtPlanModule *pm, int fi, RtRank *r,
                 const RtPlanArg *args)
{
    const IrFunc *f = pm->ir->funcs[fi];
    size_t np = (size_t)f->nparams + 1;
    Buf *bufs = calloc(np, sizeof *bufs);
    IrScalarVal *sc = calloc(np, sizeof *sc);
    if (!bufs || !sc) {
        free(bufs);
        free(sc);
        return rt_rank_fail(r, "out of memory");
    }
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *ip = &f->params[p];
        if (ip->local)
            continue;
        if (ip->kind == PK_SCALAR) {
            sc[p] = args[p].scalar;
            continue;
        }
        Buf *b = &bufs[p];
        b->data = args[p].data;
        b->dtype = ip->dtype;
        b->rank = ip->rank;
        b->mem = ip->mem;
        memcpy(b->shape, args[p].shape, sizeof b->shape);
        memcpy(b->stride, args[p].stride, sizeof b->stride);
    }
    int rc = run_func(pm, fi, r, bufs, sc, false, true, NULL);
    free(bufs);
    free(sc);
    return rc;
}
