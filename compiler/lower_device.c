/* lower_device.c — the device tier (LANGUAGE.md §5): buffers (empty,
 * symmetric, signals), copy with dynamic-shaped views and signals, launch,
 * async/sync and the collectives, lowered to Device IR ops (F_DEV in
 * ops.def) that the runtime's plan interpreter executes once per rank. */
#include "lower.h"

#include <stdio.h>
#include <string.h>

static const char *const alloc_names[] = {"empty", "symmetric", "signals"};

static const struct {
    const char *name;  /* source name */
    int kind;          /* IrCollKind, or -1 for copy */
    int min, max;      /* positional args */
} dev_calls[] = {
    {"copy", -1, 2, 2},
    {"all_reduce", COLL_ALL_REDUCE, 1, 1},
    {"all_gather", COLL_ALL_GATHER, 2, 2},
    {"reduce_scatter", COLL_REDUCE_SCATTER, 2, 2},
    {"all_to_all", COLL_ALL_TO_ALL, 2, 2},
    {"broadcast", COLL_BROADCAST, 2, 2},
    {"barrier", COLL_BARRIER, 0, 0},
    {"reduce", COLL_REDUCE, 2, 2},   /* (b, root, op = ...) */
    {"gather", COLL_GATHER, 3, 3},   /* (dst, src, root) */
    {"scatter", COLL_SCATTER, 3, 3}, /* (dst, src, root) */
    {"send", COLL_SEND, 2, 2},       /* (b, to), inside exchange { } */
    {"recv", COLL_RECV, 2, 2},       /* (b, from), inside exchange { } */
};

bool lw_dev_is_alloc(const Ast *e)
{
    if (e->kind != AST_CALL)
        return false;
    for (int i = 0; i < 3; i++)
        if (strcmp(e->name, alloc_names[i]) == 0)
            return true;
    return false;
}

bool lw_dev_is_call(const Ast *e)
{
    if (e->kind != AST_CALL)
        return false;
    for (size_t i = 0; i < sizeof dev_calls / sizeof dev_calls[0]; i++)
        if (strcmp(e->name, dev_calls[i].name) == 0)
            return true;
    return false;
}

int lw_dim_value(Lw *L, int param, int dim, DslLoc loc)
{
    const IrParam *p = &L->f->params[param];
    LwVal v;
    if (p->local) {
        return (int)p->dims[dim]; /* locals keep the extent's value id */
    } else if (p->dims[dim] >= 0) {
        v = lw_cval(DT_I64, p->dims[dim], 0, false);
    } else {
        int id = lw_emit(L, IR_SIZE, ir_scalar(DT_I32), loc);
        if (id >= 0) {
            L->f->ins[id].param = param;
            L->f->ins[id].attr = dim;
        }
        v = lw_ival(id, ir_scalar(DT_I32));
    }
    v = lw_convert(L, v, DT_I64, loc);
    return lw_materialize(L, &v, loc);
}

/* Append a buffer to f->params (device functions grow the array). */
static int add_param(Lw *L, const IrParam *p)
{
    IrFunc *f = L->f;
    IrParam *np = dsl_alloc(&L->mod->arena, sizeof(IrParam) * (size_t)(f->nparams + 1));
    if (!np) {
        L->oom = true;
        return -1;
    }
    memcpy(np, f->params, sizeof(IrParam) * (size_t)f->nparams);
    np[f->nparams] = *p;
    f->params = np;
    return f->nparams++;
}

/* let b = empty(dtype, s0, ...) | symmetric(dtype, s0, ...) | signals(n) */
void lw_dev_alloc(Lw *L, const Ast *st)
{
    const Ast *e = st->a;
    int mem = strcmp(e->name, "empty") == 0 ? MEM_GLOBAL
            : strcmp(e->name, "symmetric") == 0 ? MEM_SYMMETRIC : MEM_SIGNAL;
    int first = mem == MEM_SIGNAL ? 0 : 1;
    int n = e->nlist;
    if (n - first < 1 || n - first > IR_MAX_RANK) {
        dsl_error(L->diags, e->loc, "'%s' takes %s1 to %d extents", e->name,
                  mem == MEM_SIGNAL ? "" : "a dtype and ", IR_MAX_RANK);
        return;
    }
    IrParam p;
    memset(&p, 0, sizeof p);
    p.name = st->name;
    p.kind = PK_TENSOR;
    p.mem = (uint8_t)mem;
    p.local = true;
    p.written = true;
    p.dtype = DT_U64;
    if (mem != MEM_SIGNAL) {
        const Ast *d = e->list[0];
        int dt = d->kind == AST_IDENT ? dsl_dtype_from_name(d->name) : -1;
        if (dt < 0) {
            dsl_error(L->diags, d->loc, "expected a dtype name (f32, i32, ...)");
            return;
        }
        p.dtype = (uint8_t)dt;
    }
    IrView v;
    memset(&v, 0, sizeof v);
    v.ndims = n - first;
    p.rank = (uint8_t)v.ndims;
    for (int i = first; i < n; i++) {
        LwVal x = lw_expr(L, e->list[i]);
        if (x.bad)
            return;
        if (x.type.rank != 0 || !dsl_is_int(x.type.dtype)) {
            dsl_error(L->diags, e->list[i]->loc, "buffer extents must be integer scalars");
            return;
        }
        x = lw_convert(L, x, DT_I64, e->loc);
        int id = lw_materialize(L, &x, e->loc);
        v.d[i - first].kind = IDX_SCALAR;
        v.d[i - first].val = id;
        p.dims[i - first] = id;
    }
    int pi = add_param(L, &p);
    int vid = ir_view_new(L->f, &v);
    int id = lw_emit(L, IR_ALLOC, ir_scalar(DT_VOID), st->loc);
    if (pi < 0 || vid < 0 || id < 0) {
        L->oom = true;
        return;
    }
    L->f->ins[id].param = pi;
    L->f->ins[id].view = vid;
    L->f->ins[id].attr = mem;
    LwSym *s = lw_declare(L, st->name, SYM_TENSOR, st->loc);
    if (s)
        s->index = pi;
}

/* A whole buffer named by an identifier. */
static int buffer_arg(Lw *L, const Ast *a, const char *fn)
{
    LwSym *s = lw_tensor_of(L, a);
    if (!s) {
        dsl_error(L->diags, a->loc, "%s needs a buffer (a tensor parameter or a buffer made by empty/symmetric/signals)",
                  fn);
        return -1;
    }
    return s->index;
}

static int red_op(Lw *L, const Ast *op)
{
    if (!op)
        return RED_SUM;
    if (op->kind == AST_IDENT) {
        if (strcmp(op->name, "sum") == 0)
            return RED_SUM;
        if (strcmp(op->name, "max") == 0)
            return RED_MAX;
        if (strcmp(op->name, "min") == 0)
            return RED_MIN;
        if (strcmp(op->name, "prod") == 0)
            return IR_COLL_PROD;
        if (strcmp(op->name, "avg") == 0)
            return IR_COLL_AVG;
    }
    dsl_error(L->diags, op->loc, "op must be sum, prod, max, min or avg");
    return -1;
}

/* copy(..., op = set|add): how the signal cell is updated */
static int sig_op(Lw *L, const Ast *op)
{
    if (op->kind == AST_IDENT) {
        if (strcmp(op->name, "set") == 0)
            return SIG_SET;
        if (strcmp(op->name, "add") == 0)
            return SIG_ADD;
    }
    dsl_error(L->diags, op->loc, "copy: op must be set or add");
    return -1;
}

/* copy(dst, src[, signal = S[i][, value = v][, op = set|add]]) */
static void lower_copy(Lw *L, const Ast *e, const Ast *const *args,
                       const Ast *signal, const Ast *value, const Ast *op)
{
    int dp, dpeer, sp, speer;
    IrType dt, stt;
    for (int i = 0; i < 2; i++)
        if (args[i]->kind != AST_INDEX) {
            dsl_error(L->diags, args[i]->loc, "copy needs views: copy(dst[...], src[...])");
            return;
        }
    int dv = lw_view(L, args[0], &dp, &dt, &dpeer);
    int sv = lw_view(L, args[1], &sp, &stt, &speer);
    if (dv < 0 || sv < 0)
        return;
    if (L->f->params[dp].dtype != L->f->params[sp].dtype) {
        dsl_error(L->diags, e->loc, "copy between %s and %s buffers: dtypes must match",
                  dsl_dtype_name(L->f->params[dp].dtype),
                  dsl_dtype_name(L->f->params[sp].dtype));
        return;
    }
    int sigp = -1, sigv = -1, val = -1, sop = SIG_SET;
    if ((value || op) && !signal) {
        dsl_error(L->diags, (value ? value : op)->loc, "copy: %s = needs signal =",
                  value ? "value" : "op");
        return;
    }
    if (op && (sop = sig_op(L, op)) < 0)
        return;
    if (value) { /* a u64 scalar, as the value of notify(S[i], v) */
        LwVal v = lw_expr(L, value);
        if (v.bad)
            return;
        if (v.type.rank != 0 || !dsl_is_int(v.type.dtype)) {
            dsl_error(L->diags, value->loc, "copy: the signal value must be an integer scalar");
            return;
        }
        v = lw_convert(L, v, DT_U64, value->loc);
        val = lw_materialize(L, &v, value->loc);
    }
    if (signal) {
        int sigpeer;
        IrType st;
        if (signal->kind != AST_INDEX ||
            (sigv = lw_view(L, signal, &sigp, &st, &sigpeer)) < 0)
            return;
        if (L->f->params[sigp].mem != MEM_SIGNAL) {
            dsl_error(L->diags, signal->loc, "signal = needs a cell of a signal array");
            return;
        }
        if (sigpeer >= 0) {
            dsl_error(L->diags, signal->loc, "the signal is set on the destination's rank; name the local array");
            return;
        }
    }
    int id = lw_emit(L, IR_COPY, ir_scalar(DT_VOID), e->loc);
    if (id < 0)
        return;
    IrInstr *in = &L->f->ins[id];
    in->param = dp;
    in->view = dv;
    in->opnd[3] = dpeer;
    in->opnd[2] = speer;
    in->xparam[0] = sp;
    in->xview[0] = sv;
    in->xparam[1] = sigp;
    in->xview[1] = sigv;
    in->opnd[0] = val; /* -1: the value 1 */
    in->attr = sop;
    L->f->params[dp].written = true;
}

/* group(color, key) -> IR_GROUP, rank(g) -> IR_GRANK, world(g) ->
 * IR_GWORLD: n integer scalar operands (converted to i64, i32 handle). */
static int int_opnd(Lw *L, const Ast *a, int dtype, const char *msg, DslLoc loc)
{
    LwVal x = lw_expr(L, a);
    if (x.bad)
        return -1;
    if (x.type.rank != 0 || !dsl_is_int(x.type.dtype)) {
        dsl_error(L->diags, a->loc, "%s", msg);
        return -1;
    }
    x = lw_convert(L, x, dtype, loc);
    return lw_materialize(L, &x, loc);
}

static const char group_msg[] = "expected a group (let g = group(color, key))";

LwVal lw_dev_group_op(Lw *L, int op, const Ast *const *args, int n, DslLoc loc)
{
    int v[2];
    for (int i = 0; i < n; i++)
        if ((v[i] = int_opnd(L, args[i], op == IR_GROUP ? DT_I64 : DT_I32,
                             op == IR_GROUP ? "group(color, key) takes integer scalars"
                                            : group_msg, loc)) < 0)
            return lw_bad();
    int id = lw_emit(L, op, ir_scalar(DT_I32), loc);
    if (id < 0)
        return lw_bad();
    for (int i = 0; i < n; i++)
        L->f->ins[id].opnd[i] = v[i];
    return lw_ival(id, ir_scalar(DT_I32));
}

/* send(b, to) / recv(b, from): collected by the enclosing exchange { }. */
static void lower_p2p(Lw *L, const Ast *e, const Ast *const *args, int kind)
{
    if (!L->in_exchange) {
        dsl_error(L->diags, e->loc, "'%s' must be inside an 'exchange { }' block "
                  "(the group that lets a ring of sends and receives progress)", e->name);
        return;
    }
    int b = buffer_arg(L, args[0], e->name);
    if (b < 0)
        return;
    LwVal p = lw_expr(L, args[1]);
    if (p.bad)
        return;
    if (p.type.rank != 0 || !dsl_is_int(p.type.dtype)) {
        dsl_error(L->diags, args[1]->loc, "%s: the peer must be an integer scalar", e->name);
        return;
    }
    p = lw_convert(L, p, DT_I32, e->loc);
    int peer = lw_materialize(L, &p, e->loc);
    int id = lw_emit(L, IR_COLL, ir_scalar(DT_VOID), e->loc);
    if (id < 0)
        return;
    IrInstr *in = &L->f->ins[id];
    in->attr = kind;
    in->axis = 0;
    in->param = b;
    in->xparam[0] = -1;
    in->xparam[1] = -1;
    in->xview[1] = -1;
    in->opnd[0] = peer;
    if (kind == COLL_RECV)
        L->f->params[b].written = true;
}

void lw_dev_call(Lw *L, const Ast *e)
{
    int k = -1;
    for (size_t i = 0; i < sizeof dev_calls / sizeof dev_calls[0]; i++)
        if (strcmp(e->name, dev_calls[i].name) == 0)
            k = (int)i;
    const Ast *args[4];
    const Ast *op = NULL, *signal = NULL, *sendc = NULL, *recvc = NULL;
    const Ast *value = NULL, *grp = NULL;
    int n = 0;
    for (int i = 0; i < e->nlist; i++) {
        const Ast *a = e->list[i];
        if (a->kind == AST_NAMED_ARG) {
            bool a2a = dev_calls[k].kind == COLL_ALL_TO_ALL;
            bool cp = dev_calls[k].kind == -1;
            bool ok = (strcmp(a->name, "group") == 0 && !cp &&
                       dev_calls[k].kind != COLL_SEND &&
                       dev_calls[k].kind != COLL_RECV) ||
                      (strcmp(a->name, "op") == 0 &&
                       (dev_calls[k].kind == COLL_ALL_REDUCE ||
                        dev_calls[k].kind == COLL_REDUCE_SCATTER ||
                        dev_calls[k].kind == COLL_REDUCE || cp)) ||
                      (cp && (strcmp(a->name, "signal") == 0 ||
                              strcmp(a->name, "value") == 0)) ||
                      (a2a && (strcmp(a->name, "send_counts") == 0 ||
                               strcmp(a->name, "recv_counts") == 0));
            if (!ok) {
                dsl_error(L->diags, a->loc, "'%s' has no argument named '%s'", e->name, a->name);
                return;
            }
            if (strcmp(a->name, "group") == 0)
                grp = a->a;
            else if (strcmp(a->name, "op") == 0)
                op = a->a;
            else if (strcmp(a->name, "signal") == 0)
                signal = a->a;
            else if (strcmp(a->name, "value") == 0)
                value = a->a;
            else if (strcmp(a->name, "send_counts") == 0)
                sendc = a->a;
            else
                recvc = a->a;
            continue;
        }
        if (n == 4) {
            dsl_error(L->diags, a->loc, "too many arguments");
            return;
        }
        args[n++] = a;
    }
    if (n < dev_calls[k].min || n > dev_calls[k].max) {
        dsl_error(L->diags, e->loc, "'%s' takes %d argument%s, got %d", e->name,
                  dev_calls[k].max, dev_calls[k].max == 1 ? "" : "s", n);
        return;
    }
    if (dev_calls[k].kind == -1) {
        lower_copy(L, e, args, signal, value, op);
        return;
    }
    int kind = dev_calls[k].kind;
    if (kind == COLL_SEND || kind == COLL_RECV) {
        lower_p2p(L, e, args, kind);
        return;
    }
    if (L->in_exchange) {
        dsl_error(L->diags, e->loc, "'%s' cannot run inside an exchange block: "
                  "only send and recv are grouped (put it after the block)", e->name);
        return;
    }
    if (L->in_async) {
        dsl_error(L->diags, e->loc, "'%s' cannot run inside an async block: "
                  "collectives run on the rank's main stream (put it after "
                  "'sync;')", e->name);
        return;
    }
    int dst = -1, src = -1, root = -1, red = red_op(L, op);
    if (red < 0)
        return;
    if (kind != COLL_BARRIER && (dst = buffer_arg(L, args[0], e->name)) < 0)
        return;
    if ((kind == COLL_ALL_GATHER || kind == COLL_REDUCE_SCATTER ||
         kind == COLL_ALL_TO_ALL || kind == COLL_GATHER || kind == COLL_SCATTER) &&
        (src = buffer_arg(L, args[1], e->name)) < 0)
        return;
    if (src >= 0 && L->f->params[src].dtype != L->f->params[dst].dtype) {
        dsl_error(L->diags, e->loc, "%s: dtypes of dst and src must match", e->name);
        return;
    }
    /* all_to_all(dst, src, send_counts = sc[, recv_counts = rc]): uneven,
     * runtime-sized chunks (counts in elements, one per rank) */
    int counts[2] = {-1, -1};
    const Ast *cargs[2] = {sendc, recvc};
    if (recvc && !sendc) {
        dsl_error(L->diags, recvc->loc, "all_to_all: recv_counts needs send_counts");
        return;
    }
    for (int c = 0; c < 2; c++) {
        if (!cargs[c])
            continue;
        if ((counts[c] = buffer_arg(L, cargs[c], e->name)) < 0)
            return;
        if (!dsl_is_int(L->f->params[counts[c]].dtype)) {
            dsl_error(L->diags, cargs[c]->loc, "all_to_all: counts must be an integer buffer");
            return;
        }
    }
    if (kind == COLL_BROADCAST || kind == COLL_REDUCE || kind == COLL_GATHER ||
        kind == COLL_SCATTER) {
        const Ast *ra = args[kind == COLL_GATHER || kind == COLL_SCATTER ? 2 : 1];
        LwVal r = lw_expr(L, ra);
        if (r.bad)
            return;
        if (r.type.rank != 0 || !dsl_is_int(r.type.dtype)) {
            dsl_error(L->diags, ra->loc, "%s root must be an integer scalar", e->name);
            return;
        }
        r = lw_convert(L, r, DT_I32, e->loc);
        root = lw_materialize(L, &r, e->loc);
    }
    int gv = -1; /* group = g: the collective runs within group g */
    if (grp) {
        if (counts[0] >= 0) {
            dsl_error(L->diags, grp->loc, "all_to_all with send_counts does not take a group yet");
            return;
        }
        if ((gv = int_opnd(L, grp, DT_I32, group_msg, grp->loc)) < 0)
            return;
    }
    int id = lw_emit(L, IR_COLL, ir_scalar(DT_VOID), e->loc);
    if (id < 0)
        return;
    IrInstr *in = &L->f->ins[id];
    in->attr = kind;
    in->axis = red;
    in->opnd[1] = gv;
    in->param = dst;
    in->xparam[0] = src;
    in->xparam[1] = counts[0]; /* all_to_all: send counts buffer */
    in->xview[1] = counts[1];  /* all_to_all: recv counts buffer (a param) */
    in->opnd[0] = root;
    if (dst >= 0)
        L->f->params[dst].written = true;
}

static int find_kernel(Lw *L, const char *name)
{
    for (int i = 0; i < L->mod->nfuncs; i++)
        if (!L->mod->funcs[i]->is_device && strcmp(L->mod->funcs[i]->name, name) == 0)
            return i;
    return -1;
}

/* What a kernel or device function wants for one parameter. */
typedef struct ArgSpec {
    const char *name;  /* parameter name */
    bool tensor;       /* a buffer (else a scalar) */
    int dtype, rank;   /* element dtype / dims, or the scalar's dtype */
    int mem;           /* IrMemKind the buffer must have (GLOBAL: any) */
} ArgSpec;

/* Lower the n arguments of `launch K(...)` / `g(...)` into argv (value id
 * >= 0, or -2-p for buffer p), checking them against spec. */
static bool lower_args(Lw *L, const Ast *const *list, int n, const ArgSpec *spec,
                       const char *what, const char *fname, int32_t *argv)
{
    for (int i = 0; i < n; i++) {
        const Ast *a = list[i];
        const ArgSpec *kp = &spec[i];
        if (kp->tensor) {
            int b = buffer_arg(L, a, what);
            if (b < 0)
                return false;
            const IrParam *bp = &L->f->params[b];
            if (bp->dtype != kp->dtype || bp->rank != kp->rank) {
                dsl_error(L->diags, a->loc, "argument '%s' is %s with %d dims; %s '%s' wants %s with %d for '%s'",
                          bp->name, dsl_dtype_name(bp->dtype), bp->rank,
                          what[0] == 'l' ? "kernel" : "device function", fname,
                          dsl_dtype_name(kp->dtype), kp->rank, kp->name);
                return false;
            }
            if (kp->mem != MEM_GLOBAL && bp->mem != kp->mem) {
                dsl_error(L->diags, a->loc, "%s '%s' wants a %s buffer for '%s'",
                          what[0] == 'l' ? "kernel" : "device function", fname,
                          kp->mem == MEM_SIGNAL ? "signal" : "symmetric", kp->name);
                return false;
            }
            argv[i] = -2 - b;
        } else {
            LwVal v = lw_expr(L, a);
            if (v.bad)
                return false;
            if (v.type.rank != 0) {
                dsl_error(L->diags, a->loc, "scalar argument expected for '%s'", kp->name);
                return false;
            }
            v = lw_convert(L, v, kp->dtype, a->loc);
            argv[i] = lw_materialize(L, &v, a->loc);
        }
    }
    return true;
}

/* Append argv to f->extra; returns its offset or -1. */
static int push_args(Lw *L, const int32_t *argv, int n)
{
    int xoff = L->f->nextra;
    for (int i = 0; i < n; i++)
        if (ir_extra_push(L->f, argv[i]) < 0) {
            L->oom = true;
            return -1;
        }
    return xoff;
}

static void lower_launch(Lw *L, const Ast *st)
{
    int ki = find_kernel(L, st->name);
    if (ki < 0) {
        const AstFunc *g = NULL;
        for (int i = 0; L->prog && i < L->prog->nfuncs && !g; i++)
            if (L->prog->funcs[i]->fkind == FN_DEVICE &&
                strcmp(L->prog->funcs[i]->name, st->name) == 0)
                g = L->prog->funcs[i];
        if (g)
            dsl_error(L->diags, st->loc, "'%s' is a device function, not a kernel: call it as %s(...) without launch",
                      st->name, st->name);
        else
            dsl_error(L->diags, st->loc, "launch of unknown kernel '%s'", st->name);
        return;
    }
    const IrFunc *k = L->mod->funcs[ki];
    if (st->nlist != k->nparams) {
        dsl_error(L->diags, st->loc, "kernel '%s' takes %d argument%s, got %d", k->name,
                  k->nparams, k->nparams == 1 ? "" : "s", st->nlist);
        return;
    }
    int32_t argv[64];
    ArgSpec spec[64];
    if (k->nparams > 64) {
        dsl_error(L->diags, st->loc, "too many kernel arguments");
        return;
    }
    for (int i = 0; i < k->nparams; i++) {
        const IrParam *kp = &k->params[i];
        spec[i] = (ArgSpec){kp->name, kp->kind == PK_TENSOR, kp->dtype, kp->rank, kp->mem};
    }
    if (!lower_args(L, (const Ast *const *)st->list, st->nlist, spec, "launch",
                    k->name, argv))
        return;
    int grid[3] = {-1, -1, -1};
    if (st->nlist2 > 3) {
        dsl_error(L->diags, st->list2[3]->loc, "grid has at most 3 dims");
        return;
    }
    for (int i = 0; i < st->nlist2; i++) {
        LwVal g = lw_expr(L, st->list2[i]);
        if (g.bad)
            return;
        if (g.type.rank != 0 || !dsl_is_int(g.type.dtype)) {
            dsl_error(L->diags, st->list2[i]->loc, "grid extents must be integer scalars");
            return;
        }
        g = lw_convert(L, g, DT_I64, st->loc);
        grid[i] = lw_materialize(L, &g, st->loc);
    }
    int xoff = push_args(L, argv, st->nlist);
    if (xoff < 0)
        return;
    int id = lw_emit(L, IR_LAUNCH, ir_scalar(DT_VOID), st->loc);
    if (id < 0)
        return;
    IrInstr *in = &L->f->ins[id];
    in->attr = ki;
    in->xoff = xoff;
    in->xn = st->nlist;
    for (int i = 0; i < 3; i++)
        in->opnd[i] = grid[i];
}

/* ------------------------------------------------------------ calls of
 * device functions: g(args); runs g inline on this rank. The callee may be
 * defined later in the file, so its parameters are read from the AST and
 * CALL's attr holds the AST index until lw_dev_resolve_calls. */

static int ast_index(const AstProgram *prog, const char *name, AstFuncKind kind)
{
    for (int i = 0; prog && i < prog->nfuncs; i++)
        if (prog->funcs[i]->fkind == kind && strcmp(prog->funcs[i]->name, name) == 0)
            return i;
    return -1;
}

const AstFunc *lw_dev_callee(const Lw *L, const Ast *e)
{
    if (!e || e->kind != AST_CALL || !L->prog)
        return NULL;
    int i = ast_index(L->prog, e->name, FN_DEVICE);
    return i < 0 ? NULL : L->prog->funcs[i];
}

void lw_dev_callfn(Lw *L, const Ast *e, const AstFunc *g)
{
    int32_t argv[64];
    ArgSpec spec[64];
    if (g->nparams > 64) {
        dsl_error(L->diags, e->loc, "too many arguments");
        return;
    }
    for (int i = 0; i < e->nlist; i++)
        if (e->list[i]->kind == AST_NAMED_ARG) {
            dsl_error(L->diags, e->list[i]->loc, "device function '%s' has no named arguments",
                      g->name);
            return;
        }
    if (e->nlist != g->nparams) {
        dsl_error(L->diags, e->loc, "device function '%s' takes %d argument%s, got %d",
                  g->name, g->nparams, g->nparams == 1 ? "" : "s", e->nlist);
        return;
    }
    for (int i = 0; i < g->nparams; i++) {
        const AstParam *ap = &g->params[i];
        spec[i] = (ArgSpec){ap->name, ap->tkind != TY_SCALAR,
                            ap->tkind == TY_SIGNAL ? DT_U64 : ap->dtype, ap->ndims,
                            ap->tkind == TY_SIGNAL ? MEM_SIGNAL
                            : ap->tkind == TY_SYMMETRIC ? MEM_SYMMETRIC : MEM_GLOBAL};
    }
    if (!lower_args(L, (const Ast *const *)e->list, e->nlist, spec, "call", g->name, argv))
        return;
    /* the callee may write any buffer it is given */
    for (int i = 0; i < e->nlist; i++)
        if (argv[i] < -1)
            L->f->params[-2 - argv[i]].written = true;
    int xoff = push_args(L, argv, e->nlist);
    if (xoff < 0)
        return;
    int id = lw_emit(L, IR_CALL, ir_scalar(DT_VOID), e->loc);
    if (id < 0)
        return;
    IrInstr *in = &L->f->ins[id];
    in->attr = ast_index(L->prog, g->name, FN_DEVICE);
    in->xoff = xoff;
    in->xn = e->nlist;
}

/* Call sites of device functions in an AST subtree (any position). Device
 * function bodies only: kernels calling one are rejected where the call is
 * lowered. */
typedef struct CallSite {
    int callee;        /* AST index */
    DslLoc loc;        /* of the call */
} CallSite;

static void collect_calls(const AstProgram *prog, const Ast *n, CallSite *out,
                          int *nout, int cap, int depth)
{
    if (!n || depth > DSL_MAX_DEPTH)
        return;
    if (n->kind == AST_CALL && n->name) {
        int g = ast_index(prog, n->name, FN_DEVICE);
        if (g >= 0 && *nout < cap)
            out[(*nout)++] = (CallSite){g, n->loc};
    }
    const Ast *kids[5] = {n->a, n->b, n->c, n->body, n->els};
    for (int i = 0; i < 5; i++)
        collect_calls(prog, kids[i], out, nout, cap, depth + 1);
    for (int i = 0; i < n->nlist; i++)
        collect_calls(prog, n->list[i], out, nout, cap, depth + 1);
    for (int i = 0; i < n->nlist2; i++)
        collect_calls(prog, n->list2[i], out, nout, cap, depth + 1);
}

enum { MAX_SITES = 256 };

/* Is `to` reachable from `from` over call edges? path gets the functions
 * on the way (AST indices, from .. to) when it is. */
static bool reaches(const AstProgram *prog, int from, int to, bool *seen, int *path,
                    int *npath)
{
    path[(*npath)++] = from;
    if (from == to)
        return true;
    if (!seen[from]) {
        seen[from] = true;
        CallSite sites[MAX_SITES];
        int n = 0;
        collect_calls(prog, prog->funcs[from]->body, sites, &n, MAX_SITES, 0);
        for (int i = 0; i < n; i++)
            if (reaches(prog, sites[i].callee, to, seen, path, npath))
                return true;
    }
    (*npath)--;
    return false;
}

void lw_dev_check_recursion(const AstProgram *prog, DslDiags *diags)
{
    int nf = prog->nfuncs;
    bool seen[512], reported[512] = {false};
    int path[513];
    if (nf > 512)
        return;
    for (int f = 0; f < nf; f++) {
        const AstFunc *fn = prog->funcs[f];
        if (reported[f])
            continue; /* one report per cycle */
        CallSite sites[MAX_SITES];
        int n = 0;
        collect_calls(prog, fn->body, sites, &n, MAX_SITES, 0);
        if (fn->fkind != FN_DEVICE)
            continue;
        for (int i = 0; i < n; i++) {
            memset(seen, 0, sizeof seen);
            int np = 0;
            path[np++] = f;
            if (!reaches(prog, sites[i].callee, f, seen, path, &np))
                continue;
            char chain[512];
            size_t len = 0;
            chain[0] = 0;
            for (int k = 0; k < np && len < sizeof chain - 1; k++)
                len += (size_t)snprintf(chain + len, sizeof chain - len, "%s%s",
                                        k ? " -> " : "", prog->funcs[path[k]]->name);
            if (np == 2)
                dsl_error(diags, sites[i].loc, "device function '%s' calls itself: recursion is not allowed",
                          fn->name);
            else
                dsl_error(diags, sites[i].loc, "recursive call of device function '%s' (%s): recursion is not allowed",
                          fn->name, chain);
            for (int k = 0; k < np; k++)
                reported[path[k]] = true;
            break;
        }
    }
}

void lw_dev_resolve_calls(IrModule *m, const AstProgram *prog)
{
    for (int i = 0; i < m->nfuncs; i++) {
        IrFunc *f = m->funcs[i];
        if (!f->is_device)
            continue;
        for (int k = 0; k < f->nins; k++) {
            IrInstr *in = &f->ins[k];
            if (in->op != IR_CALL || in->attr < 0 || in->attr >= prog->nfuncs)
                continue;
            const char *name = prog->funcs[in->attr]->name;
            in->attr = -1;
            for (int j = 0; j < m->nfuncs; j++)
                if (m->funcs[j]->is_device && strcmp(m->funcs[j]->name, name) == 0) {
                    in->attr = j;
                    break;
                }
        }
    }
}

void lw_dev_stmt(Lw *L, const Ast *st)
{
    switch (st->kind) {
    case AST_LAUNCH:
        lower_launch(L, st);
        return;
    case AST_SYNC:
        lw_emit(L, IR_SYNC, ir_scalar(DT_VOID), st->loc);
        return;
    case AST_ASYNC: {
        int id = lw_emit(L, IR_ASYNC, ir_scalar(DT_VOID), st->loc);
        int r = lw_new_region(L);
        if (id < 0 || r < 0)
            return;
        L->f->ins[id].region[0] = r;
        L->in_async++;
        lw_block_in_region(L, st->body, r);
        L->in_async--;
        return;
    }
    case AST_EXCHANGE: {
        if (L->in_async || L->in_exchange) {
            dsl_error(L->diags, st->loc, "an exchange block cannot run inside %s: "
                      "it is collective over the ranks", L->in_async ? "an async block" : "another exchange block");
            return;
        }
        int id = lw_emit(L, IR_XCHG, ir_scalar(DT_VOID), st->loc);
        int r = lw_new_region(L);
        if (id < 0 || r < 0)
            return;
        L->f->ins[id].region[0] = r;
        L->in_exchange++;
        lw_block_in_region(L, st->body, r);
        L->in_exchange--;
        return;
    }
    default:
        dsl_error(L->diags, st->loc, "expected a statement");
    }
}
