/* ir.c — Core IR construction and its text form (--emit=core).
 * The printer's output is what golden tests compare, so keep it stable. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ir_op_names[IR_OP_COUNT] = {
#define OP(e, n, k, f) n,
#include "ops.def"
#undef OP
};
const int ir_op_nopnd[IR_OP_COUNT] = {
#define OP(e, n, k, f) k,
#include "ops.def"
#undef OP
};
const int ir_op_flags[IR_OP_COUNT] = {
#define OP(e, n, k, f) f,
#include "ops.def"
#undef OP
};

IrModule *ir_module_new(void)
{
    return calloc(1, sizeof(IrModule));
}

static void func_free(IrFunc *f)
{
    for (int i = 0; i < f->nregions; i++)
        free(f->regions[i].ins);
    free(f->regions);
    free(f->ins);
    free(f->views);
    free(f->vars);
    free(f->extra);
    free(f);
}

void ir_module_free(IrModule *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nfuncs; i++)
        func_free(m->funcs[i]);
    free(m->funcs);
    dsl_arena_free(&m->arena);
    free(m);
}

/* Grow *p (of *cap elements of size sz) to hold at least need elements. */
static bool grow(void **p, int *cap, int need, size_t sz)
{
    if (need <= *cap)
        return true;
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *q = realloc(*p, (size_t)ncap * sz);
    if (!q)
        return false;
    memset((char *)q + (size_t)*cap * sz, 0, (size_t)(ncap - *cap) * sz);
    *p = q;
    *cap = ncap;
    return true;
}

IrFunc *ir_func_new(IrModule *m, const char *name)
{
    IrFunc *f = calloc(1, sizeof(IrFunc));
    if (!f)
        return NULL;
    IrFunc **nf = realloc(m->funcs, sizeof(IrFunc *) * (size_t)(m->nfuncs + 1));
    if (!nf) {
        free(f);
        return NULL;
    }
    m->funcs = nf;
    m->funcs[m->nfuncs++] = f;
    f->name = dsl_strdup(&m->arena, name, strlen(name));
    f->grid_region = -1;
    f->warps = 4;
    f->stages = 2;
    return f;
}

int ir_region_new(IrFunc *f, int parent)
{
    if (!grow((void **)&f->regions, &f->cap_regions, f->nregions + 1,
              sizeof(IrRegion)))
        return -1;
    IrRegion *r = &f->regions[f->nregions];
    memset(r, 0, sizeof *r);
    r->parent = parent;
    return f->nregions++;
}

int ir_emit(IrFunc *f, int r, int op, IrType type, DslLoc loc)
{
    if (r < 0 || r >= f->nregions)
        return -1;
    if (!grow((void **)&f->ins, &f->cap_ins, f->nins + 1, sizeof(IrInstr)))
        return -1;
    IrRegion *reg = &f->regions[r];
    if (reg->n + 1 > reg->cap) {
        int ncap = reg->cap ? reg->cap * 2 : 8;
        int32_t *q = realloc(reg->ins, sizeof(int32_t) * (size_t)ncap);
        if (!q)
            return -1;
        reg->ins = q;
        reg->cap = ncap;
    }
    int id = f->nins++;
    IrInstr *in = &f->ins[id];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->type = type;
    in->loc = loc;
    for (int i = 0; i < 4; i++)
        in->opnd[i] = -1;
    in->nopnd = (uint8_t)(ir_op_nopnd[op] > 0 ? ir_op_nopnd[op] : 0);
    in->param = -1;
    in->axis = -1;
    in->view = -1;
    in->region[0] = in->region[1] = -1;
    in->xparam[0] = in->xparam[1] = in->xview[0] = in->xview[1] = -1;
    reg->ins[reg->n++] = id;
    return id;
}

int ir_extra_push(IrFunc *f, int32_t x)
{
    if (!grow((void **)&f->extra, &f->cap_extra, f->nextra + 1, sizeof(int32_t)))
        return -1;
    f->extra[f->nextra] = x;
    return f->nextra++;
}

int ir_msg_add(IrModule *m, IrFunc *f, const char *s)
{
    const char **nm = dsl_alloc(&m->arena, sizeof(char *) * (size_t)(f->nmsgs + 1));
    char *c = dsl_strdup(&m->arena, s, strlen(s));
    if (!nm || !c)
        return -1;
    for (int i = 0; i < f->nmsgs; i++)
        nm[i] = f->msgs[i];
    nm[f->nmsgs] = c;
    f->msgs = nm;
    return f->nmsgs++;
}

int ir_view_new(IrFunc *f, const IrView *v)
{
    if (!grow((void **)&f->views, &f->cap_views, f->nviews + 1, sizeof(IrView)))
        return -1;
    f->views[f->nviews] = *v;
    return f->nviews++;
}

IrType ir_scalar(int dtype)
{
    IrType t;
    memset(&t, 0, sizeof t);
    t.dtype = (uint8_t)dtype;
    return t;
}

IrType ir_tile(int dtype, int rank, const int32_t *shape)
{
    IrType t = ir_scalar(dtype);
    t.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        t.shape[i] = shape[i];
    return t;
}

int64_t ir_numel(const IrType *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

bool ir_shape_eq(const IrType *a, const IrType *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

bool ir_type_eq(const IrType *a, const IrType *b)
{
    return a->dtype == b->dtype && ir_shape_eq(a, b);
}

void ir_view_shape(const IrFunc *f, const IrView *v, IrType *out)
{
    int rank = 0;
    for (int d = 0; d < v->ndims; d++) {
        if (v->d[d].kind == IDX_RANGE) {
            if (rank < IR_MAX_RANK)
                out->shape[rank++] = v->d[d].len;
        } else if (v->d[d].kind == IDX_TILE) {
            const IrType *t = &f->ins[v->d[d].val].type;
            for (int i = 0; i < t->rank && rank < IR_MAX_RANK; i++)
                out->shape[rank++] = t->shape[i];
        }
    }
    out->rank = (uint8_t)rank;
}

void ir_type_str(const IrType *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s", dsl_dtype_name(t->dtype));
    if (t->rank == 0 || k >= n)
        return;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < t->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%d", i ? ", " : "",
                              (int)t->shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* ------------------------------------------------------------ printer */

static const char *const red_names[] = {"sum", "max", "min", "argmax", "argmin"};
static const char *const coll_op_names[] = {"sum", "max", "min", "prod", "avg"};
static const char *const atom_names[] = {"add", "max", "min", "xchg", "cas",
                                          "and", "or", "xor"};

static void print_view_of(DslBuf *o, const IrFunc *f, int param, int view);

static void print_view(DslBuf *o, const IrFunc *f, const IrInstr *in)
{
    print_view_of(o, f, in->param, in->view);
}

static void print_view_of(DslBuf *o, const IrFunc *f, int param, int view)
{
    const IrView *v = &f->views[view];
    dsl_buf_printf(o, " %s[", f->params[param].name);
    for (int d = 0; d < v->ndims; d++) {
        if (d)
            dsl_buf_printf(o, ", ");
        switch (v->d[d].kind) {
        case IDX_SCALAR: dsl_buf_printf(o, "%%%d", v->d[d].val); break;
        case IDX_RANGE:
            if (v->d[d].len == 0)
                dsl_buf_printf(o, "%%%d +: %%%d", v->d[d].val, v->d[d].lenv);
            else
                dsl_buf_printf(o, "%%%d +: %d", v->d[d].val, v->d[d].len);
            break;
        case IDX_TILE: dsl_buf_printf(o, "gather %%%d", v->d[d].val); break;
        }
    }
    dsl_buf_printf(o, "]");
}

static void print_region(DslBuf *o, const IrFunc *f, int r, int depth,
                         const char *const *notes);

static void print_instr(DslBuf *o, const IrFunc *f, int id, int depth,
                        const char *const *notes)
{
    const IrInstr *in = &f->ins[id];
    char ty[128];
    for (int i = 0; i < depth; i++)
        dsl_buf_put(o, "  ", 2);
    if (in->type.dtype != DT_VOID)
        dsl_buf_printf(o, "%%%d = ", id);
    dsl_buf_printf(o, "%s", ir_op_names[in->op]);
    switch (in->op) {
    case IR_CONST:
        if (dsl_is_float(in->type.dtype))
            dsl_buf_printf(o, " %.17g", in->fval);
        else
            dsl_buf_printf(o, " %lld", (long long)in->ival);
        break;
    case IR_PARAM: dsl_buf_printf(o, " %s", f->params[in->param].name); break;
    case IR_SIZE:
        dsl_buf_printf(o, " %s.%d", f->params[in->param].name, in->attr);
        break;
    case IR_CHECKDIM:
        dsl_buf_printf(o, " %s.%d ==", f->params[in->param].name, in->attr);
        break;
    case IR_PID: case IR_NPROG: dsl_buf_printf(o, " %d", in->attr); break;
    case IR_ARANGE: dsl_buf_printf(o, " %lld", (long long)in->ival); break;
    case IR_REDUCE: dsl_buf_printf(o, " %s", red_names[in->attr]); break;
    case IR_ATOMIC: dsl_buf_printf(o, " %s", atom_names[in->attr]); break;
    case IR_NOTIFY: dsl_buf_printf(o, " %s", in->attr ? "add" : "set"); break;
    case IR_WAIT: dsl_buf_printf(o, " %s", in->attr ? "==" : ">="); break;
    case IR_PRINT:
        if (in->attr == 1)
            dsl_buf_printf(o, " \"%s\"", in->ival >= 0 && in->ival < f->nmsgs
                                              ? f->msgs[in->ival] : "?");
        else if (in->attr != 2)
            dsl_buf_printf(o, " %s", in->attr == 0 ? "begin" : "end");
        break;
    case IR_ASSERT:
        dsl_buf_printf(o, " \"%s\"", in->ival >= 0 && in->ival < f->nmsgs
                                          ? f->msgs[in->ival] : "?");
        break;
    case IR_VGET: case IR_VSET:
        dsl_buf_printf(o, " %s", f->vars[in->param].name);
        break;
    default: break;
    }
    static const char *const coll_names[] = {"all_reduce", "all_gather",
        "reduce_scatter", "all_to_all", "broadcast", "barrier", "reduce",
        "gather", "scatter", "send", "recv"};
    switch (in->op) {
    case IR_ALLOC:
        dsl_buf_printf(o, " %s %s", in->attr == MEM_SYMMETRIC ? "symmetric"
                       : in->attr == MEM_SIGNAL ? "signals" : "empty",
                       dsl_dtype_name(f->params[in->param].dtype));
        break;
    case IR_LAUNCH: case IR_CALL:
        dsl_buf_printf(o, " #%d(", in->attr);
        for (int i = 0; i < in->xn; i++) {
            int32_t a = f->extra[in->xoff + i];
            if (a >= 0)
                dsl_buf_printf(o, "%s%%%d", i ? ", " : "", a);
            else
                dsl_buf_printf(o, "%s%s", i ? ", " : "", f->params[-2 - a].name);
        }
        dsl_buf_printf(o, ")");
        break;
    case IR_COLL:
        dsl_buf_printf(o, " %s", coll_names[in->attr]);
        if (in->attr == COLL_ALL_REDUCE || in->attr == COLL_REDUCE_SCATTER ||
            in->attr == COLL_REDUCE)
            dsl_buf_printf(o, " %s", coll_op_names[in->axis]);
        if (in->param >= 0)
            dsl_buf_printf(o, " %s", f->params[in->param].name);
        if (in->xparam[0] >= 0)
            dsl_buf_printf(o, " <- %s", f->params[in->xparam[0]].name);
        break;
    default: break;
    }
    if (in->view >= 0 && in->op != IR_ALLOC)
        print_view(o, f, in);
    if (in->op == IR_ALLOC) {
        const IrView *v = &f->views[in->view];
        dsl_buf_printf(o, " %s[", f->params[in->param].name);
        for (int d = 0; d < v->ndims; d++)
            dsl_buf_printf(o, "%s%%%d", d ? ", " : "", v->d[d].val);
        dsl_buf_printf(o, "]");
    }
    if (in->op == IR_COPY) {
        dsl_buf_printf(o, " <-");
        print_view_of(o, f, in->xparam[0], in->xview[0]);
        if (in->xparam[1] >= 0) {
            dsl_buf_printf(o, " signal%s", in->attr == SIG_ADD ? " add" : "");
            print_view_of(o, f, in->xparam[1], in->xview[1]);
        }
    }
    int n = in->op == IR_YIELD ? in->nopnd : ir_op_nopnd[in->op];
    bool first = in->view < 0 && in->op != IR_VSET;
    for (int i = 0; i < n; i++) {
        if (in->opnd[i] < 0) {
            if (in->view >= 0 || in->op == IR_DOT || in->op == IR_LAUNCH ||
                in->op == IR_COLL)
                continue; /* optional operand absent */
        }
        dsl_buf_printf(o, "%s", first ? " " : ", ");
        first = false;
        if (in->op == IR_LOAD && i == 1)
            dsl_buf_printf(o, "pad=");
        if ((in->op == IR_LOAD && i == 0) || (in->op == IR_STORE && i == 1) ||
            (in->op == IR_ATOMIC && i == 2))
            dsl_buf_printf(o, "mask=");
        if (in->op == IR_ATOMIC && i == 1)
            dsl_buf_printf(o, "cmp=");
        if (in->view >= 0 && i == 3)
            dsl_buf_printf(o, "peer=");
        if (in->op == IR_COPY && i == 2)
            dsl_buf_printf(o, "src_peer=");
        if (in->op == IR_COPY && i == 0)
            dsl_buf_printf(o, "value=");
        if (in->op == IR_LAUNCH)
            dsl_buf_printf(o, "grid%d=", i);
        if (in->op == IR_COLL)
            dsl_buf_printf(o, i == 1 ? "group=" : in->attr >= COLL_SEND ? "peer=" : "root=");
        dsl_buf_printf(o, "%%%d", in->opnd[i]);
    }
    if (in->op == IR_PERMUTE) {
        dsl_buf_printf(o, " perm(");
        for (int i = 0; i < in->type.rank; i++)
            dsl_buf_printf(o, "%s%d", i ? ", " : "", in->perm[i]);
        dsl_buf_printf(o, ")");
    }
    if ((in->op == IR_REDUCE || in->op == IR_SCAN))
        dsl_buf_printf(o, " axis=%d", in->axis);
    if (in->type.dtype != DT_VOID) {
        ir_type_str(&in->type, ty, sizeof ty);
        dsl_buf_printf(o, " : %s", ty);
    }
    if (notes && notes[id] && notes[id][0])
        dsl_buf_printf(o, " @ %s", notes[id]);
    if (in->region[0] >= 0) {
        dsl_buf_printf(o, " {\n");
        print_region(o, f, in->region[0], depth + 1, notes);
        for (int i = 0; i < depth; i++)
            dsl_buf_put(o, "  ", 2);
        dsl_buf_printf(o, "}");
        if (in->region[1] >= 0 && (in->op == IR_WHILE ||
                                   f->regions[in->region[1]].n > 0)) {
            dsl_buf_printf(o, in->op == IR_WHILE ? " do {\n" : " else {\n");
            print_region(o, f, in->region[1], depth + 1, notes);
            for (int i = 0; i < depth; i++)
                dsl_buf_put(o, "  ", 2);
            dsl_buf_printf(o, "}");
        }
    }
    dsl_buf_printf(o, "\n");
}

static void print_region(DslBuf *o, const IrFunc *f, int r, int depth,
                         const char *const *notes)
{
    const IrRegion *reg = &f->regions[r];
    for (int i = 0; i < reg->n; i++)
        if (!f->ins[reg->ins[i]].dead)
            print_instr(o, f, reg->ins[i], depth, notes);
}

void ir_print_func(DslBuf *o, const IrFunc *f)
{
    ir_print_func_notes(o, f, NULL, NULL);
}

void ir_print_func_notes(DslBuf *o, const IrFunc *f, const char *const *notes,
                         const char *const *var_notes)
{
    char ty[128];
    dsl_buf_printf(o, "%s %s(", f->is_device ? "device" : "kernel", f->name);
    for (int i = 0, k = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (p->local)
            continue;
        dsl_buf_printf(o, "%s%s: %s%s", k++ ? ", " : "", p->name,
                       p->mem == MEM_SYMMETRIC ? "symmetric " : "",
                       p->mem == MEM_SIGNAL ? "signal" : dsl_dtype_name(p->dtype));
        if (p->kind == PK_TENSOR) {
            dsl_buf_printf(o, "[");
            for (int d = 0; d < p->rank; d++) {
                if (d)
                    dsl_buf_printf(o, ", ");
                if (p->dims[d] >= 0)
                    dsl_buf_printf(o, "%lld", (long long)p->dims[d]);
                else
                    dsl_buf_printf(o, "%s", f->syms[-1 - p->dims[d]].name);
            }
            dsl_buf_printf(o, "]");
        }
    }
    dsl_buf_printf(o, ")");
    if (f->ncparams) {
        dsl_buf_printf(o, " cparams(");
        for (int i = 0; i < f->ncparams; i++)
            dsl_buf_printf(o, "%s%s=%lld", i ? ", " : "", f->cparam_names[i],
                           (long long)f->cparam_vals[i]);
        dsl_buf_printf(o, ")");
    }
    dsl_buf_printf(o, " warps(%d) stages(%d)\n", f->warps, f->stages);
    for (int i = 0; i < f->nvars; i++) {
        ir_type_str(&f->vars[i].type, ty, sizeof ty);
        dsl_buf_printf(o, "  var %s : %s", f->vars[i].name, ty);
        if (var_notes && var_notes[i] && var_notes[i][0])
            dsl_buf_printf(o, " @ %s", var_notes[i]);
        dsl_buf_printf(o, "\n");
    }
    if (f->grid_region >= 0) {
        dsl_buf_printf(o, "grid:\n");
        print_region(o, f, f->grid_region, 1, NULL);
    }
    dsl_buf_printf(o, "body:\n");
    print_region(o, f, 0, 1, notes);
}

void ir_print_module(DslBuf *o, const IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++) {
        if (i)
            dsl_buf_printf(o, "\n");
        ir_print_func(o, m->funcs[i]);
    }
}

int ir_resolve(const int32_t *repl, int v)
{
    while (v >= 0 && repl[v] != v)
        v = repl[v];
    return v;
}

void ir_rewrite_uses(IrFunc *f, IrInstr *in, const int32_t *repl)
{
    int n = in->op == IR_YIELD ? in->nopnd : ir_op_nopnd[in->op];
    for (int i = 0; i < n && i < 4; i++)
        if (in->opnd[i] >= 0)
            in->opnd[i] = ir_resolve(repl, in->opnd[i]);
    if (in->view >= 0) {
        IrView *w = &f->views[in->view];
        for (int d = 0; d < w->ndims; d++)
            w->d[d].val = ir_resolve(repl, w->d[d].val);
    }
}

int ir_bug(char *err, size_t errlen, const char *file, int line,
           const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(err, errlen, "internal compiler error at %s:%d: ", file,
                     line);
    if (k < 0 || (size_t)k >= errlen)
        return -1;
    va_start(ap, fmt);
    vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

/* ------------------------------------------------------------ grid order */

/* The program_id axes value v depends on (bit a: axis a), memoized in
 * memo[v] as mask + 1. */
static int pid_axes(const IrFunc *f, uint8_t *memo, int v)
{
    if (v < 0 || v >= f->nins)
        return 0;
    if (memo[v])
        return memo[v] - 1;
    memo[v] = 1;
    const IrInstr *in = &f->ins[v];
    int m = in->op == IR_PID && in->attr >= 0 && in->attr < 3 ? 1 << in->attr : 0;
    for (int k = 0; k < 4; k++)
        m |= pid_axes(f, memo, in->opnd[k]);
    memo[v] = (uint8_t)(m + 1);
    return m;
}

/* Loop nesting of region r (depth[] memo, -1 = unknown). */
static int region_depth(const IrFunc *f, const uint8_t *isloop, int *depth, int r)
{
    if (r <= 0 || r >= f->nregions)
        return 0;
    if (depth[r] < 0)
        depth[r] = region_depth(f, isloop, depth, f->regions[r].parent) + isloop[r];
    return depth[r];
}

/* The grid axis that varies fastest in a program's linear index (the
 * order in which one thread runs consecutive programs): 1 instead of 0
 * when the tiles a program loads along program_id(0) alone outweigh those
 * along program_id(1) alone, so consecutive programs share the larger
 * operand while it is in cache — a GEMM with BM > BN (A's [BM, BK] tiles
 * move with axis 0, B's [BK, BN] with axis 1) walks a row of C blocks,
 * reusing its A block from L2 and streaming the smaller B panels. Each
 * load weighs its elements times 16 per enclosing loop. Kernels that
 * signal, wait or use atomics keep the written order (programs may
 * depend on it on one thread). The CPU backend (backends/cpu/lower.c)
 * runs programs in this order unless BLKC_CPU_NOGRIDORDER=1; the
 * megakernel (runtime/mega.c) maps linear ids the same way. */
int ir_grid_fast_axis(const IrFunc *f)
{
    if (f->nins <= 0 || f->nregions <= 0)
        return 0;
    uint8_t *memo = calloc((size_t)f->nins, 1), *isloop = calloc((size_t)f->nregions, 1);
    int *depth = malloc(sizeof *depth * (size_t)f->nregions);
    int fast = 0;
    double w[2] = {0, 0};
    if (!memo || !isloop || !depth)
        goto done;
    for (int r = 0; r < f->nregions; r++)
        depth[r] = -1;
    for (int i = 0; i < f->nins; i++) {
        const IrInstr *in = &f->ins[i];
        if (in->dead)
            continue;
        if (in->op == IR_ATOMIC || in->op == IR_NOTIFY || in->op == IR_WAIT)
            goto done;
        if ((in->op == IR_FOR || in->op == IR_WHILE) && in->region[0] >= 0 &&
            in->region[0] < f->nregions)
            isloop[in->region[0]] = 1;
    }
    for (int r = 0; r < f->nregions; r++)
        for (int k = 0; k < f->regions[r].n; k++) {
            const IrInstr *in = &f->ins[f->regions[r].ins[k]];
            if (in->dead || in->op != IR_LOAD || in->view < 0)
                continue;
            const IrView *vw = &f->views[in->view];
            int m = 0;
            for (int d = 0; d < vw->ndims; d++)
                m |= pid_axes(f, memo, vw->d[d].val);
            if (m != 1 && m != 2)
                continue;
            int dep = region_depth(f, isloop, depth, r);
            w[m - 1] += (double)ir_numel(&in->type) * (double)(1 << 4 * (dep > 3 ? 3 : dep));
        }
    fast = w[0] > w[1] ? 1 : 0;
done:
    free(memo);
    free(isloop);
    free(depth);
    return fast;
}
