/* task_ir.c — the Task IR: building it from a task's AST (names, dtypes,
 * shapes with symbolic sizes, broadcasting, the mesh and its axes).
 * Shardings are filled in by task_shard.c; here only parameters and explicit
 * collectives carry them. The printer and verifier are in task_print.c. */
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tk_add_node(TkTask *t, const TkNode *n)
{
    if (t->nn == t->cap) {
        int nc = t->cap ? t->cap * 2 : 32;
        TkNode *nn = realloc(t->n, sizeof *nn * (size_t)nc);
        if (!nn) {
            t->oom = true;
            return -1;
        }
        t->n = nn;
        t->cap = nc;
    }
    t->n[t->nn] = *n;
    return t->nn++;
}

void tk_free(TkTask *t)
{
    if (!t)
        return;
    free(t->n);
    free(t->results);
    free(t->res_sh);
    free(t->res_msh);
    free(t->syms);
    free(t->symval);
    free(t->cargs);
    free(t);
}

/* ------------------------------------------------------------ building */

typedef struct Name {
    const char *name;
    int node;                      /* -1: a module constant */
    double cval;                   /* constant value */
    bool is_int;
} Name;

typedef struct B {
    TkTask *t;
    const AstProgram *prog;
    DslDiags *diags;
    Name *names; int nnames, cap;
    const char *const *defines; int ndefines;
} B;

static bool push_name(B *b, const char *name, int node, double cval, bool is_int)
{
    if (b->nnames == b->cap) {
        int nc = b->cap ? b->cap * 2 : 32;
        Name *nn = realloc(b->names, sizeof *nn * (size_t)nc);
        if (!nn)
            return false;
        b->names = nn;
        b->cap = nc;
    }
    b->names[b->nnames++] = (Name){name, node, cval, is_int};
    return true;
}

static Name *lookup(B *b, const char *name)
{
    for (int i = b->nnames - 1; i >= 0; i--)
        if (strcmp(b->names[i].name, name) == 0)
            return &b->names[i];
    return NULL;
}

static int sym_index(TkTask *t, const char *name)
{
    for (int i = 0; i < t->nsyms; i++)
        if (strcmp(t->syms[i], name) == 0)
            return i;
    const char **ns = realloc(t->syms, sizeof *ns * (size_t)(t->nsyms + 1));
    int64_t *nv = realloc(t->symval, sizeof *nv * (size_t)(t->nsyms + 1));
    if (ns)
        t->syms = ns;
    if (nv)
        t->symval = nv;
    if (!ns || !nv) {
        t->oom = true;
        return -1;
    }
    t->syms[t->nsyms] = name;
    t->symval[t->nsyms] = -1;
    return t->nsyms++;
}

/* Compile-time integer/float expression over literals and constants. */
static bool const_eval(B *b, const Ast *e, double *v, bool *is_int)
{
    double x, y;
    bool xi, yi;
    switch (e->kind) {
    case AST_INT: *v = (double)e->ival; *is_int = true; return true;
    case AST_FLOAT: *v = e->fval; *is_int = false; return true;
    case AST_IDENT: {
        Name *n = lookup(b, e->name);
        if (!n || n->node >= 0)
            return false;
        *v = n->cval;
        *is_int = n->is_int;
        return true;
    }
    case AST_UNARY:
        if (e->op != '-' || !const_eval(b, e->a, &x, &xi))
            return false;
        *v = -x;
        *is_int = xi;
        return true;
    case AST_BINARY:
        if (!const_eval(b, e->a, &x, &xi) || !const_eval(b, e->b, &y, &yi))
            return false;
        *is_int = xi && yi;
        switch (e->op) {
        case '+': *v = x + y; return true;
        case '-': *v = x - y; return true;
        case '*': *v = x * y; return true;
        case '/':
            if (y == 0)
                return false;
            *v = *is_int ? (double)((int64_t)x / (int64_t)y) : x / y;
            return true;
        default: return false;
        }
    default:
        return false;
    }
}

static int err_at(B *b, DslLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int err_at(B *b, DslLoc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dsl_verror(b->diags, loc, fmt, ap);
    va_end(ap);
    return -1;
}

static int add(B *b, TkNode *n)
{
    int id = tk_add_node(b->t, n);
    if (id < 0)
        dsl_error(b->diags, n->loc, "out of memory");
    return id;
}

static TkNode blank(int op, DslLoc loc)
{
    TkNode n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.a = n.b = n.c = -1;
    n.loc = loc;
    n.param = -1;
    n.gemm = -1;
    for (int d = 0; d < IR_MAX_RANK; d++)
        n.dsym[d] = -1;
    return n;
}

/* Do two dims agree? Unknown values compare by symbol, else pass. */
static bool dim_eq(const TkNode *x, int dx, const TkNode *y, int dy)
{
    if (x->dims[dx] >= 0 && y->dims[dy] >= 0)
        return x->dims[dx] == y->dims[dy];
    if (x->dsym[dx] >= 0 && y->dsym[dy] >= 0)
        return x->dsym[dx] == y->dsym[dy];
    return true;
}

static bool dim_is_one(const TkNode *x, int d) { return x->dims[d] == 1; }

static void copy_dim(TkNode *to, int dt, const TkNode *from, int df)
{
    to->dims[dt] = from->dims[df];
    to->dsym[dt] = from->dsym[df];
}

static void dims_text(B *b, const TkNode *n, char *buf, size_t len)
{
    tk_type_str(b->t, n, buf, len);
}

static int promote(int x, int y)
{
    if (x == y)
        return x;
    if (x == DT_F64 || y == DT_F64)
        return DT_F64;
    if (x == DT_F32 || y == DT_F32)
        return DT_F32;
    return DT_F32; /* f16 with bf16 */
}

static int cast_to(B *b, int id, int dtype)
{
    TkNode *x = &b->t->n[id];
    if (x->dtype == dtype || x->op == TK_CONST)
        return id;
    TkNode n = blank(TK_CAST, x->loc);
    n.a = id;
    n.dtype = dtype;
    n.rank = x->rank;
    for (int d = 0; d < x->rank; d++)
        copy_dim(&n, d, x, d);
    return add(b, &n);
}

static int expr(B *b, const Ast *e);

static int binary(B *b, int op, int x, int y, DslLoc loc)
{
    const TkNode *X = &b->t->n[x], *Y = &b->t->n[y];
    int dt = X->op == TK_CONST || X->op == TK_SCALAR ? Y->dtype
           : Y->op == TK_CONST || Y->op == TK_SCALAR ? X->dtype
           : promote(X->dtype, Y->dtype);
    if (X->rank == 0 && Y->rank == 0)
        return err_at(b, loc, "tasks work on tensors: '%c' of two scalars", op);
    x = cast_to(b, x, dt);
    y = cast_to(b, y, dt);
    if (x < 0 || y < 0)
        return -1;
    X = &b->t->n[x];
    Y = &b->t->n[y];
    TkNode n = blank(TK_BINARY, loc);
    n.sub = op;
    n.a = x;
    n.b = y;
    n.dtype = dt;
    n.rank = X->rank > Y->rank ? X->rank : Y->rank;
    for (int d = 0; d < n.rank; d++) {
        int dx = d - (n.rank - X->rank), dy = d - (n.rank - Y->rank);
        if (dx < 0) {
            copy_dim(&n, d, Y, dy);
        } else if (dy < 0) {
            copy_dim(&n, d, X, dx);
        } else if (dim_eq(X, dx, Y, dy)) {
            copy_dim(&n, d, X->dims[dx] == 1 ? Y : X, X->dims[dx] == 1 ? dy : dx);
        } else if (dim_is_one(X, dx)) {
            copy_dim(&n, d, Y, dy);
        } else if (dim_is_one(Y, dy)) {
            copy_dim(&n, d, X, dx);
        } else {
            char s1[128], s2[128];
            dims_text(b, X, s1, sizeof s1);
            dims_text(b, Y, s2, sizeof s2);
            return err_at(b, loc, "shapes %s and %s do not broadcast for '%c'", s1, s2, op);
        }
    }
    return add(b, &n);
}

static int matmul(B *b, int x, int y, DslLoc loc)
{
    const TkNode *X = &b->t->n[x], *Y = &b->t->n[y];
    char s1[128], s2[128];
    dims_text(b, X, s1, sizeof s1);
    dims_text(b, Y, s2, sizeof s2);
    if (X->rank < 2 || Y->rank < 2 || X->rank > 3 || Y->rank > 3)
        return err_at(b, loc, "'@' needs 2-D or 3-D (batched) operands, got %s @ %s", s1, s2);
    if (X->dtype != Y->dtype)
        return err_at(b, loc, "'@' of %s and %s: operand dtypes must match (use 'as')", s1, s2);
    if (!dsl_is_float(X->dtype))
        return err_at(b, loc, "'@' needs float operands, got %s", s1);
    if (!dim_eq(X, X->rank - 1, Y, Y->rank - 2))
        return err_at(b, loc, "'@' of %s and %s: inner dims differ", s1, s2);
    if (X->rank == 3 && Y->rank == 3 && !dim_eq(X, 0, Y, 0))
        return err_at(b, loc, "'@' of %s and %s: batch dims differ", s1, s2);
    TkNode n = blank(TK_MATMUL, loc);
    n.a = x;
    n.b = y;
    n.dtype = X->dtype;
    n.rank = X->rank > Y->rank ? X->rank : Y->rank;
    if (n.rank == 3)
        copy_dim(&n, 0, X->rank == 3 ? X : Y, 0);
    copy_dim(&n, n.rank - 2, X, X->rank - 2);
    copy_dim(&n, n.rank - 1, Y, Y->rank - 1);
    return add(b, &n);
}

static bool int_arg(B *b, const Ast *e, const char *what, int64_t *v)
{
    double x;
    bool is_int;
    if (!const_eval(b, e, &x, &is_int) || !is_int) {
        err_at(b, e->loc, "%s must be a constant integer", what);
        return false;
    }
    *v = (int64_t)x;
    return true;
}

static bool axis_arg(B *b, const Ast *e, int rank, int *axis)
{
    int64_t v;
    if (!int_arg(b, e, "the axis", &v))
        return false;
    if (v < 0)
        v += rank;
    if (v < 0 || v >= rank) {
        err_at(b, e->loc, "axis %lld is out of range for %d dims", (long long)v, rank);
        return false;
    }
    *axis = (int)v;
    return true;
}

/* A written collective; on a mesh it runs on axis `cax` (its `group =`). */
static int comm_node(B *b, int x, TkShard from_req, TkShard to, bool reshard,
                     int axis, int cax, DslLoc loc)
{
    (void)from_req;
    const TkNode *X = &b->t->n[x];
    TkNode n = blank(TK_COMM, loc);
    n.a = x;
    n.dtype = X->dtype;
    n.rank = X->rank;
    for (int d = 0; d < X->rank; d++)
        copy_dim(&n, d, X, d);
    n.sh = to;
    n.user = true;
    n.reshard = reshard;
    n.axis = axis;
    if (b->t->naxes) {
        n.cax = cax;
        n.msh[cax] = to; /* its target on its axis (task_shard.c) */
    }
    return add(b, &n);
}

/* ------------------------------------------------------------ calls */

bool tk_dim_is_size(const TkTask *t, const Ast *dim)
{
    if (dim->kind != AST_IDENT)
        return false;
    for (int i = 0; i < t->prog->nconsts; i++)
        if (strcmp(t->prog->consts[i].name, dim->name) == 0)
            return false;
    return true;
}

/* Is dim expression x of a callee's parameter a size name (not a
 * constant)? */
static bool is_size_name(B *b, const Ast *x)
{
    double v;
    bool is_int;
    return x->kind == AST_IDENT && !const_eval(b, x, &v, &is_int);
}

static bool push_carg(TkTask *t, int id)
{
    if (t->ncargs == t->capcargs) {
        int nc = t->capcargs ? t->capcargs * 2 : 16;
        int *na = realloc(t->cargs, sizeof *na * (size_t)nc);
        if (!na) {
            t->oom = true;
            return false;
        }
        t->cargs = na;
        t->capcargs = nc;
    }
    t->cargs[t->ncargs++] = id;
    return true;
}

static bool has_return(const Ast *e)
{
    if (!e)
        return false;
    if (e->kind == AST_RETURN)
        return true;
    if (has_return(e->a) || has_return(e->b) || has_return(e->c) || has_return(e->body) ||
        has_return(e->els))
        return true;
    for (int i = 0; i < e->nlist; i++)
        if (has_return(e->list[i]))
            return true;
    return false;
}

/* kernel / device function `fi` called from a task: the arguments bind the
 * callee's leading parameters; its last parameter, a tensor, is the
 * result (docs/task.md "Calls"). Types and sizes are checked here on the
 * global shapes; shardings in task_shard.c. */
static int call_func(B *b, const Ast *e, int fi)
{
    const AstFunc *cf = b->prog->funcs[fi];
    const char *kind = cf->fkind == FN_KERNEL ? "kernel" : cf->fkind == FN_DEVICE
                           ? "device function" : "task";
    if (cf->fkind == FN_TASK)
        return err_at(b, e->loc, "a task cannot call task '%s'", cf->name);
    int np = cf->nparams, na = e->nlist;
    for (int i = 0; i < np; i++)
        if (cf->params[i].tkind != TY_TENSOR && cf->params[i].tkind != TY_SCALAR)
            return err_at(b, e->loc, "%s '%s' cannot be called from a task: its parameter '%s' "
                          "is %s (a task passes plain tensors and scalars)", kind, cf->name,
                          cf->params[i].name,
                          cf->params[i].tkind == TY_SYMMETRIC ? "symmetric" : "a signal array");
    if (cf->fkind == FN_DEVICE && has_return(cf->body))
        return err_at(b, e->loc, "device function '%s' cannot be called from a task: it has a "
                      "'return' (its body is inlined into the task)", cf->name);
    if (np == 0 || cf->params[np - 1].tkind != TY_TENSOR)
        return err_at(b, e->loc, "%s '%s' cannot be called from a task: its last parameter is "
                      "the call's result and must be a tensor", kind, cf->name);
    const AstParam *out = &cf->params[np - 1];
    if (!dsl_is_float(out->dtype))
        return err_at(b, e->loc, "%s '%s': its result '%s' is %s; tasks work on float tensors",
                      kind, cf->name, out->name, dsl_dtype_name(out->dtype));
    if (na != np - 1)
        return err_at(b, e->loc, "%s '%s' takes %d argument%s from a task (its last parameter "
                      "'%s' is the result), got %d", kind, cf->name, np - 1,
                      np - 1 == 1 ? "" : "s", out->name, na);
    struct { const char *name; int64_t v; int dsym, arg; } sz[64];
    int nsz = 0, arg0 = b->t->ncargs;
    for (int i = 0; i < na; i++) {
        const Ast *ae = e->list[i];
        const AstParam *cp = &cf->params[i];
        if (ae->kind == AST_NAMED_ARG)
            return err_at(b, ae->loc, "a call of %s '%s' in a task takes positional arguments",
                          kind, cf->name);
        int x = expr(b, ae);
        if (x < 0)
            return -1;
        const TkNode *X = &b->t->n[x];
        if (cp->tkind == TY_SCALAR) {
            if (X->rank != 0)
                return err_at(b, ae->loc, "argument %d of %s '%s' is a tensor, but parameter "
                              "'%s' is a scalar (%s)", i + 1, kind, cf->name, cp->name,
                              dsl_dtype_name(cp->dtype));
            if (!push_carg(b->t, x))
                return -1;
            continue;
        }
        char s1[128];
        dims_text(b, X, s1, sizeof s1);
        if (X->rank != cp->ndims || X->dtype != cp->dtype)
            return err_at(b, ae->loc, "argument %d of %s '%s' is %s, but parameter '%s' is %s[%d "
                          "dim%s]", i + 1, kind, cf->name, X->rank ? s1 : "a scalar", cp->name,
                          dsl_dtype_name(cp->dtype), cp->ndims, cp->ndims == 1 ? "" : "s");
        for (int d = 0; d < cp->ndims; d++) {
            const Ast *dx = cp->dims[d];
            if (!is_size_name(b, dx)) {
                double v;
                bool is_int;
                if (const_eval(b, dx, &v, &is_int) && X->dims[d] >= 0 && X->dims[d] != (int64_t)v)
                    return err_at(b, ae->loc, "argument %d of %s '%s' is %s, but parameter '%s' "
                                  "fixes dim %d at %lld", i + 1, kind, cf->name, s1, cp->name, d,
                                  (long long)v);
                continue;
            }
            int k2 = 0;
            while (k2 < nsz && strcmp(sz[k2].name, dx->name) != 0)
                k2++;
            if (k2 == nsz) {
                if (nsz == 64)
                    return err_at(b, e->loc, "%s '%s' has too many size names", kind, cf->name);
                sz[nsz].name = dx->name;
                sz[nsz].v = X->dims[d];
                sz[nsz].dsym = X->dsym[d];
                sz[nsz].arg = i;
                nsz++;
                continue;
            }
            TkNode tmp = blank(TK_PARAM, ae->loc);
            tmp.dims[0] = sz[k2].v;
            tmp.dsym[0] = sz[k2].dsym;
            if (!dim_eq(X, d, &tmp, 0))
                return err_at(b, ae->loc, "%s '%s': size %s is %lld in argument %d but %lld in "
                              "argument %d", kind, cf->name, dx->name, (long long)sz[k2].v,
                              sz[k2].arg + 1, (long long)X->dims[d], i + 1);
        }
        if (!push_carg(b->t, x))
            return -1;
    }
    TkNode n = blank(TK_CALL, e->loc);
    n.callee = fi;
    n.carg = arg0;
    n.cnargs = na;
    n.csplit = -1;
    n.dtype = out->dtype;
    n.rank = out->ndims;
    if (n.rank == 0)
        return err_at(b, e->loc, "%s '%s': its result '%s' must be a tensor", kind, cf->name,
                      out->name);
    for (int d = 0; d < out->ndims; d++) {
        const Ast *dx = out->dims[d];
        double v;
        bool is_int;
        if (!is_size_name(b, dx)) {
            if (!const_eval(b, dx, &v, &is_int) || !is_int || v < 1)
                return err_at(b, dx->loc, "a dim of '%s' is not a positive constant", out->name);
            n.dims[d] = (int64_t)v;
            continue;
        }
        int k2 = 0;
        while (k2 < nsz && strcmp(sz[k2].name, dx->name) != 0)
            k2++;
        if (k2 == nsz)
            return err_at(b, e->loc, "%s '%s': size %s of its result '%s' is not bound by any "
                          "argument", kind, cf->name, dx->name, out->name);
        n.dims[d] = sz[k2].v;
        n.dsym[d] = sz[k2].dsym;
    }
    return add(b, &n);
}

/* moe(x, wr, w1, w2, k[, group = AXIS]): one node, router GEMM included
 * (task_moe.c checks the operands); grp: the axis named, -1: none */
static int moe_call(B *b, const Ast *e, int na, int grp)
{
    if (na != 5)
        return err_at(b, e->loc, "'moe' takes 5 arguments (x, wr, w1, w2, k), got %d", na);
    int v[4];
    for (int i = 0; i < 4; i++)
        if ((v[i] = expr(b, e->list[i])) < 0)
            return -1;
    double k;
    bool is_int;
    if (!const_eval(b, e->list[4], &k, &is_int) || !is_int)
        return err_at(b, e->list[4]->loc, "moe: k (experts per token) must be an integer constant");
    char msg[512];
    if (tk_moe_check(b->t, v[0], v[1], v[2], v[3], (int)k, msg, sizeof msg))
        return err_at(b, e->loc, "%s", msg);
    TkNode n = blank(TK_MOE, e->loc);
    n.dtype = b->t->n[v[0]].dtype;
    n.rank = 2;
    copy_dim(&n, 0, &b->t->n[v[0]], 0);
    copy_dim(&n, 1, &b->t->n[v[0]], 1);
    n.a = v[0];
    n.b = v[1];
    n.c = v[2];
    n.sub = (int)k;
    n.cax = -1;
    n.axis = grp;
    n.carg = b->t->ncargs;
    n.cnargs = 1;
    if (!push_carg(b->t, v[3]))
        return err_at(b, e->loc, "out of memory");
    return add(b, &n);
}

static int call(B *b, const Ast *e)
{
    const char *f = e->name;
    int na = e->nlist;
    /* collectives: `group = AXIS` (last) names the mesh axis they run on */
    static const char *const colls[] = {"all_gather", "reduce_scatter", "all_reduce",
                                        "all_to_all", "reshard", "moe"};
    bool coll = false, is_moe = strcmp(f, "moe") == 0; /* moe: group is optional */
    for (size_t i = 0; i < sizeof colls / sizeof *colls; i++)
        coll |= strcmp(f, colls[i]) == 0;
    int cax = 0, grp = -1;
    if (coll && na > 0 && e->list[na - 1]->kind == AST_NAMED_ARG &&
        strcmp(e->list[na - 1]->name, "group") == 0) {
        const Ast *g = e->list[na - 1];
        if (!b->t->naxes)
            return err_at(b, g->loc, "'%s': group = AXIS names a mesh axis, but task '%s' has "
                          "no mesh(...)", f, b->t->fn->name);
        if (!g->a || g->a->kind != AST_IDENT)
            return err_at(b, g->loc, "'%s': group = AXIS takes a mesh axis name", f);
        while (cax < b->t->naxes && strcmp(b->t->axname[cax], g->a->name) != 0)
            cax++;
        if (cax == b->t->naxes)
            return err_at(b, g->a->loc, "'%s': unknown mesh axis '%s'", f, g->a->name);
        grp = cax;
        na--;
    } else if (coll && b->t->naxes && !is_moe) {
        return err_at(b, e->loc, "'%s' in task '%s' (on a mesh) needs the mesh axis it runs on: "
                      "%s(..., group = %s)", f, b->t->fn->name, f, b->t->axname[0]);
    }
    for (int i = 0; i < na; i++)
        if (e->list[i]->kind == AST_NAMED_ARG)
            return err_at(b, e->list[i]->loc, "'%s' takes no named arguments in a task", f);
    static const struct { const char *name; int fn; } unary[] = {
        {"relu", FN_RELU}, {"gelu", FN_GELU}, {"silu", FN_SILU}, {"exp", FN_EXP},
        {"log", FN_LOG}, {"tanh", FN_TANH}, {"sigmoid", FN_SIGMOID},
        {"sqrt", FN_SQRT}, {"rsqrt", FN_RSQRT}, {"abs", FN_ABS},
    };
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
        if (strcmp(f, unary[i].name) == 0) {
            if (na != 1)
                return err_at(b, e->loc, "'%s' takes 1 argument, got %d", f, na);
            int x = expr(b, e->list[0]);
            if (x < 0)
                return -1;
            const TkNode *X = &b->t->n[x];
            if (X->rank == 0 || !dsl_is_float(X->dtype))
                return err_at(b, e->loc, "'%s' needs a float tensor", f);
            TkNode n = blank(TK_UNARY, e->loc);
            n.sub = unary[i].fn;
            n.a = x;
            n.dtype = X->dtype;
            n.rank = X->rank;
            for (int d = 0; d < X->rank; d++)
                copy_dim(&n, d, X, d);
            return add(b, &n);
        }
    if (is_moe)
        return moe_call(b, e, na, grp);
    struct { const char *name; int min, max; } ar[] = {
        {"softmax", 2, 2}, {"rmsnorm", 3, 3}, {"sum", 2, 2}, {"max", 2, 2},
        {"trans", 1, 1}, {"all_gather", 2, 2}, {"reduce_scatter", 2, 2},
        {"all_reduce", 1, 1}, {"all_to_all", 3, 3}, {"reshard", 2, 2},
    };
    int k = -1;
    for (size_t i = 0; i < sizeof ar / sizeof *ar; i++)
        if (strcmp(f, ar[i].name) == 0)
            k = (int)i;
    if (k < 0) {
        for (int i = 0; i < b->prog->nfuncs; i++)
            if (strcmp(b->prog->funcs[i]->name, f) == 0)
                return call_func(b, e, i);
        return err_at(b, e->loc, "unknown function '%s' in a task (task builtins: relu gelu silu "
                      "exp log tanh sigmoid sqrt rsqrt abs softmax rmsnorm sum max trans moe "
                      "all_gather reduce_scatter all_reduce all_to_all reshard)", f);
    }
    if (na < ar[k].min || na > ar[k].max)
        return err_at(b, e->loc, "'%s' takes %d argument%s, got %d", f, ar[k].max,
                      ar[k].max == 1 ? "" : "s", na);
    int x = expr(b, e->list[0]);
    if (x < 0)
        return -1;
    const TkNode *X = &b->t->n[x];
    if (X->rank == 0)
        return err_at(b, e->list[0]->loc, "'%s' needs a tensor", f);
    TkNode n = blank(TK_UNARY, e->loc);
    n.a = x;
    n.dtype = X->dtype;
    n.rank = X->rank;
    for (int d = 0; d < X->rank; d++)
        copy_dim(&n, d, X, d);
    switch (k) {
    case 0: /* softmax */
    case 2: /* sum */
    case 3: /* max */
        if (!dsl_is_float(X->dtype))
            return err_at(b, e->loc, "'%s' needs a float tensor", f);
        if (!axis_arg(b, e->list[1], X->rank, &n.axis))
            return -1;
        if (k == 0) {
            n.op = TK_SOFTMAX;
            return add(b, &n);
        }
        if (X->rank == 1)
            return err_at(b, e->loc, "'%s' of a 1-D tensor would give a scalar; tasks work on tensors", f);
        n.op = TK_REDUCE;
        n.sub = k == 2 ? RED_SUM : RED_MAX;
        for (int d = n.axis; d + 1 < X->rank; d++)
            copy_dim(&n, d, X, d + 1);
        n.rank--;
        return add(b, &n);
    case 1: { /* rmsnorm(x, w, eps) */
        int w = expr(b, e->list[1]);
        if (w < 0)
            return -1;
        const TkNode *W = &b->t->n[w];
        X = &b->t->n[x];
        if (W->rank != 1 || !dim_eq(W, 0, X, X->rank - 1)) {
            char s1[128], s2[128];
            dims_text(b, X, s1, sizeof s1);
            dims_text(b, W, s2, sizeof s2);
            return err_at(b, e->list[1]->loc, "rmsnorm(x: %s, w: %s): w must be 1-D with x's last dim", s1, s2);
        }
        int c = expr(b, e->list[2]);
        if (c < 0)
            return -1;
        if (b->t->n[c].rank != 0)
            return err_at(b, e->list[2]->loc, "rmsnorm: eps must be a scalar");
        if ((w = cast_to(b, w, X->dtype)) < 0)
            return -1;
        n.op = TK_RMSNORM;
        n.b = w;
        n.c = c;
        return add(b, &n);
    }
    case 4: /* trans */
        if (X->rank < 2)
            return err_at(b, e->loc, "trans needs 2 or more dims");
        n.op = TK_TRANS;
        copy_dim(&n, n.rank - 1, X, X->rank - 2);
        copy_dim(&n, n.rank - 2, X, X->rank - 1);
        return add(b, &n);
    case 5: /* all_gather(x, d): split(d) -> replicated */
    case 6: { /* reduce_scatter(x, d): partial -> split(d) */
        int d;
        if (!axis_arg(b, e->list[1], X->rank, &d))
            return -1;
        return comm_node(b, x, (TkShard){k == 5 ? SH_SPLIT : SH_PARTIAL, d},
                         k == 5 ? (TkShard){SH_REPL, 0} : (TkShard){SH_SPLIT, d},
                         false, d, cax, e->loc);
    }
    case 7: /* all_reduce(x): partial -> replicated */
        return comm_node(b, x, (TkShard){SH_PARTIAL, 0}, (TkShard){SH_REPL, 0}, false,
                         -1, cax, e->loc);
    case 8: { /* all_to_all(x, split_d, concat_d): split(concat_d) -> split(split_d) */
        int sd, cd;
        if (!axis_arg(b, e->list[1], X->rank, &sd) || !axis_arg(b, e->list[2], X->rank, &cd))
            return -1;
        if (sd == cd)
            return err_at(b, e->loc, "all_to_all: split and concat dims must differ");
        return comm_node(b, x, (TkShard){SH_SPLIT, cd}, (TkShard){SH_SPLIT, sd}, false,
                         cd, cax, e->loc);
    }
    case 9: { /* reshard(x, split(d) | replicated) */
        const Ast *s = e->list[1];
        TkShard to = {SH_REPL, 0};
        if (s->kind == AST_CALL && strcmp(s->name, "split") == 0 && s->nlist == 1) {
            int d;
            if (!axis_arg(b, s->list[0], X->rank, &d))
                return -1;
            to = (TkShard){SH_SPLIT, d};
        } else if (!(s->kind == AST_IDENT && strcmp(s->name, "replicated") == 0)) {
            return err_at(b, s->loc, "reshard needs split(d) or replicated");
        }
        return comm_node(b, x, to, to, true, -1, cax, e->loc);
    }
    }
    return -1;
}

static int expr(B *b, const Ast *e)
{
    double v;
    bool is_int;
    switch (e->kind) {
    case AST_INT:
    case AST_FLOAT: {
        TkNode n = blank(TK_CONST, e->loc);
        n.dtype = DT_F32;
        n.fval = e->kind == AST_INT ? (double)e->ival : e->fval;
        return add(b, &n);
    }
    case AST_IDENT: {
        Name *nm = lookup(b, e->name);
        if (!nm)
            return err_at(b, e->loc, "unknown name '%s'", e->name);
        if (nm->node >= 0)
            return nm->node;
        TkNode n = blank(TK_CONST, e->loc);
        n.dtype = DT_F32;
        n.fval = nm->cval;
        return add(b, &n);
    }
    case AST_UNARY: {
        if (const_eval(b, e, &v, &is_int)) {
            TkNode n = blank(TK_CONST, e->loc);
            n.dtype = DT_F32;
            n.fval = v;
            return add(b, &n);
        }
        if (e->op != '-')
            return err_at(b, e->loc, "operator '%c' is not supported in a task", e->op);
        int x = expr(b, e->a);
        if (x < 0)
            return -1;
        const TkNode *X = &b->t->n[x];
        TkNode n = blank(TK_UNARY, e->loc);
        n.sub = FN_NEG;
        n.a = x;
        n.dtype = X->dtype;
        n.rank = X->rank;
        for (int d = 0; d < X->rank; d++)
            copy_dim(&n, d, X, d);
        return add(b, &n);
    }
    case AST_BINARY: {
        if (const_eval(b, e, &v, &is_int)) {
            TkNode n = blank(TK_CONST, e->loc);
            n.dtype = DT_F32;
            n.fval = v;
            return add(b, &n);
        }
        int x = expr(b, e->a);
        int y = x < 0 ? -1 : expr(b, e->b);
        if (y < 0)
            return -1;
        if (e->op == OP_MATMUL)
            return matmul(b, x, y, e->loc);
        if (e->op == '+' || e->op == '-' || e->op == '*' || e->op == '/')
            return binary(b, e->op, x, y, e->loc);
        return err_at(b, e->loc, "this operator is not supported in a task (use + - * / @)");
    }
    case AST_CAST: {
        int x = expr(b, e->a);
        if (x < 0)
            return -1;
        if (!dsl_is_float((int)e->ival))
            return err_at(b, e->loc, "tasks support float dtypes only");
        if (b->t->n[x].rank == 0)
            return err_at(b, e->loc, "cast of a scalar in a task");
        if (b->t->n[x].dtype == (int)e->ival)
            return x;
        const TkNode *X = &b->t->n[x];
        TkNode n = blank(TK_CAST, e->loc);
        n.a = x;
        n.dtype = (int)e->ival;
        n.rank = X->rank;
        for (int d = 0; d < X->rank; d++)
            copy_dim(&n, d, X, d);
        return add(b, &n);
    }
    case AST_CALL:
        return call(b, e);
    default:
        return err_at(b, e->loc, "this expression is not supported in a task");
    }
}

/* Declared type of a param/result as a node (dims resolved). */
static bool decl_dims(B *b, const AstParam *p, TkNode *n)
{
    n->dtype = p->dtype;
    n->rank = p->ndims;
    for (int d = 0; d < p->ndims; d++) {
        const Ast *x = p->dims[d];
        double v;
        bool is_int;
        if (x->kind == AST_IDENT && !lookup(b, x->name)) {
            int s = sym_index(b->t, x->name);
            if (s < 0)
                return false;
            n->dsym[d] = s;
            n->dims[d] = b->t->symval[s];
        } else if (const_eval(b, x, &v, &is_int) && is_int && v >= 1) {
            n->dims[d] = (int64_t)v;
        } else {
            err_at(b, x->loc, "a task dim must be a positive constant or a size name");
            return false;
        }
    }
    return true;
}

static TkShard decl_shard(const AstParam *p)
{
    if (p->shard == SHARD_SPLIT)
        return (TkShard){SH_SPLIT, p->shard_dim};
    return (TkShard){SH_REPL, 0};
}

static bool check_decl(B *b, const AstParam *p, const char *what)
{
    if (p->tkind == TY_SCALAR) {
        if (p->shard != SHARD_NONE || p->nmsplit) {
            err_at(b, p->loc, "%s: a scalar has no sharding", what);
            return false;
        }
        return true;
    }
    if (p->tkind != TY_TENSOR) {
        err_at(b, p->loc, "%s: tasks take plain tensors (no symmetric or signal)", what);
        return false;
    }
    if (!dsl_is_float(p->dtype)) {
        err_at(b, p->loc, "%s: tasks support float tensors only, got %s", what,
               dsl_dtype_name(p->dtype));
        return false;
    }
    if (p->shard == SHARD_SPLIT && (p->shard_dim < 0 || p->shard_dim >= p->ndims)) {
        err_at(b, p->loc, "%s: split(%d) of a tensor with %d dims", what, p->shard_dim, p->ndims);
        return false;
    }
    return true;
}

/* mesh(AXIS = SIZE, ...): at most TK_MAX_AXES distinct names, each size
 * a positive integer constant or a size name (bound like a dim: NAME=V);
 * with ranks known, the sizes multiply to them. Strides: the first axis
 * is the outermost. */
static bool build_mesh(B *b, const AstFunc *fn)
{
    TkTask *t = b->t;
    if (fn->nmesh > TK_MAX_AXES) {
        err_at(b, fn->mesh_loc, "a task mesh has at most %d axes, got %d", TK_MAX_AXES,
               fn->nmesh);
        return false;
    }
    int64_t prod = 1;
    bool known = true;
    for (int k = 0; k < fn->nmesh; k++) {
        const Ast *ax = fn->mesh[k];
        for (int j = 0; j < k; j++)
            if (strcmp(t->axname[j], ax->name) == 0) {
                err_at(b, ax->loc, "mesh axis '%s' is named twice", ax->name);
                return false;
            }
        t->axname[k] = ax->name;
        t->naxes = k + 1;
        double v;
        bool is_int;
        if (!ax->a) {
            err_at(b, ax->loc, "mesh axis '%s' needs a size: mesh(%s = 2, ...)", ax->name,
                   ax->name);
            return false;
        }
        if (ax->a->kind == AST_IDENT && !lookup(b, ax->a->name)) {
            int s = sym_index(t, ax->a->name);
            if (s < 0)
                return false;
            v = (double)t->symval[s];
            if (v < 0) {
                known = false;
                t->axsize[k] = -1;
                continue;
            }
        } else if (!const_eval(b, ax->a, &v, &is_int) || !is_int) {
            err_at(b, ax->a->loc, "the size of mesh axis '%s' must be an integer constant or "
                   "a size name", ax->name);
            return false;
        }
        if (v < 1 || v > 1 << 20) {
            err_at(b, ax->a->loc, "the size of mesh axis '%s' must be positive, got %lld",
                   ax->name, (long long)v);
            return false;
        }
        t->axsize[k] = (int)v;
        prod *= (int64_t)v;
    }
    for (int k = t->naxes - 1, st = 1; k >= 0; k--) {
        t->axstride[k] = st;
        st *= t->axsize[k] > 0 ? t->axsize[k] : 1;
    }
    if (known && t->nranks > 0 && prod != t->nranks) {
        char txt[160];
        size_t n = 0;
        for (int k = 0; k < t->naxes && n < sizeof txt; k++)
            n += (size_t)snprintf(txt + n, sizeof txt - n, "%s%s = %d", k ? ", " : "",
                                  t->axname[k], t->axsize[k]);
        err_at(b, fn->mesh_loc, "mesh(%s) of task '%s' has %lld ranks, but it runs on %d "
               "(--ranks)", txt, fn->name, (long long)prod, t->nranks);
        return false;
    }
    return true;
}

/* The per-axis shardings of a declared param / result: split(d, AXIS)
 * clauses on a mesh; replicated elsewhere. */
static bool mesh_shard(B *b, const AstParam *p, const char *what, TkShard *msh)
{
    TkTask *t = b->t;
    for (int k = 0; k < TK_MAX_AXES; k++)
        msh[k] = (TkShard){SH_REPL, 0};
    if (!t->naxes) {
        if (p->nmsplit)
            err_at(b, p->msplit[0].loc, "%s: split(%d, %s) names a mesh axis, but task '%s' "
                   "has no mesh(...)", what, p->msplit[0].dim, p->msplit[0].axis, t->fn->name);
        return p->nmsplit == 0;
    }
    if (p->shard == SHARD_SPLIT) {
        err_at(b, p->loc, "%s: task '%s' runs on a mesh; name the axis: split(%d, AXIS)", what,
               t->fn->name, p->shard_dim);
        return false;
    }
    for (int i = 0; i < p->nmsplit; i++) {
        const AstMeshSplit *m = &p->msplit[i];
        int k = 0;
        while (k < t->naxes && strcmp(t->axname[k], m->axis) != 0)
            k++;
        if (k == t->naxes) {
            char axes[96];
            size_t n = 0;
            for (int j = 0; j < t->naxes && n < sizeof axes; j++)
                n += (size_t)snprintf(axes + n, sizeof axes - n, "%s%s", j ? ", " : "",
                                      t->axname[j]);
            err_at(b, m->loc, "%s: unknown mesh axis '%s' in split(%d, %s); the mesh of task "
                   "'%s' has %s", what, m->axis, m->dim, m->axis, t->fn->name, axes);
            return false;
        }
        if (m->dim < 0 || m->dim >= p->ndims) {
            err_at(b, m->loc, "%s: split(%d, %s) of a tensor with %d dims", what, m->dim,
                   m->axis, p->ndims);
            return false;
        }
        if (msh[k].kind == SH_SPLIT) {
            err_at(b, m->loc, "%s: split twice on mesh axis '%s' (dims %d and %d); an axis "
                   "splits one dim of a tensor", what, m->axis, msh[k].dim, m->dim);
            return false;
        }
        msh[k] = (TkShard){SH_SPLIT, m->dim};
    }
    return true;
}

TkTask *tk_build(const AstProgram *prog, const AstFunc *fn, int nranks,
                 const char *const *defines, int ndefines,
                 const char *const *sizes, int nsizes, DslDiags *diags)
{
    TkTask *t = calloc(1, sizeof *t);
    B b = {t, prog, diags, NULL, 0, 0, defines, ndefines};
    if (!t) {
        dsl_error(diags, fn->loc, "out of memory");
        return NULL;
    }
    t->prog = prog;
    t->defines = defines;
    t->ndefines = ndefines;
    int nerr0 = diags->nerrors;
    t->fn = fn;
    t->nranks = nranks;
    /* module constants (with -D overrides) */
    for (int i = 0; i < prog->nconsts; i++) {
        double v = 0;
        bool is_int = true, ok = false;
        size_t len = strlen(prog->consts[i].name);
        for (int j = 0; j < ndefines; j++) {
            const char *d = defines[j] + (defines[j][0] == '?'); /* optional */
            if (strncmp(d, prog->consts[i].name, len) == 0 && d[len] == '=') {
                char *end;
                v = strtod(d + len + 1, &end);
                is_int = !strpbrk(d + len + 1, ".eE");
                ok = true;
            }
        }
        if (!ok)
            ok = const_eval(&b, prog->consts[i].value, &v, &is_int);
        if (ok)
            push_name(&b, prog->consts[i].name, -1, v, is_int);
    }
    /* sizes given by the caller: NAME=VALUE */
    for (int i = 0; i < nsizes; i++) {
        const char *eq = strchr(sizes[i], '=');
        if (!eq)
            continue;
        char *name = calloc(1, (size_t)(eq - sizes[i]) + 1);
        if (!name)
            continue;
        memcpy(name, sizes[i], (size_t)(eq - sizes[i]));
        bool used = false;
        for (int p = 0; p < fn->nparams && !used; p++)
            for (int d = 0; d < fn->params[p].ndims; d++)
                if (fn->params[p].dims[d]->kind == AST_IDENT &&
                    strcmp(fn->params[p].dims[d]->name, name) == 0) {
                    int s = sym_index(t, fn->params[p].dims[d]->name);
                    if (s >= 0)
                        t->symval[s] = strtoll(eq + 1, NULL, 10);
                    used = true;
                    break;
                }
        for (int k = 0; k < fn->nmesh && !used; k++)
            if (fn->mesh[k]->a && fn->mesh[k]->a->kind == AST_IDENT &&
                strcmp(fn->mesh[k]->a->name, name) == 0) {
                int s = sym_index(t, fn->mesh[k]->a->name);
                if (s >= 0)
                    t->symval[s] = strtoll(eq + 1, NULL, 10);
                used = true;
            }
        free(name);
    }
    if (fn->nmesh && !build_mesh(&b, fn))
        goto fail;
    /* parameters */
    for (int p = 0; p < fn->nparams && !t->oom; p++) {
        const AstParam *ap = &fn->params[p];
        if (!check_decl(&b, ap, ap->name))
            continue;
        TkNode n = blank(ap->tkind == TY_SCALAR ? TK_SCALAR : TK_PARAM, ap->loc);
        n.param = p;
        n.name = ap->name;
        if (!decl_dims(&b, ap, &n))
            continue;
        n.sh = decl_shard(ap);
        if (!mesh_shard(&b, ap, ap->name, n.msh))
            continue;
        for (int q = 0; q < p; q++)
            if (strcmp(fn->params[q].name, ap->name) == 0)
                err_at(&b, ap->loc, "parameter '%s' is declared twice", ap->name);
        int id = add(&b, &n);
        if (id >= 0)
            push_name(&b, ap->name, id, 0, false);
    }
    if (diags->nerrors > nerr0)
        goto fail;
    /* results */
    t->nresults = fn->nresults;
    t->results = calloc((size_t)fn->nresults + 1, sizeof *t->results);
    t->res_sh = calloc((size_t)fn->nresults + 1, sizeof *t->res_sh);
    t->res_msh = calloc((size_t)fn->nresults * TK_MAX_AXES + 1, sizeof *t->res_msh);
    if (!t->results || !t->res_sh || !t->res_msh)
        goto oom;
    for (int r = 0; r < fn->nresults; r++) {
        if (!check_decl(&b, &fn->results[r], "task result"))
            goto fail;
        if (fn->results[r].tkind == TY_SCALAR) {
            err_at(&b, fn->results[r].loc, "task results must be tensors");
            goto fail;
        }
        t->res_sh[r] = decl_shard(&fn->results[r]);
        if (!mesh_shard(&b, &fn->results[r], "task result", &t->res_msh[r * TK_MAX_AXES]))
            goto fail;
        t->results[r] = -1;
    }
    /* body */
    const Ast *body = fn->body;
    bool returned = false;
    for (int i = 0; body && i < body->nlist; i++) {
        const Ast *st = body->list[i];
        if (returned) {
            err_at(&b, st->loc, "statement after return");
            goto fail;
        }
        if (st->kind == AST_LET) {
            int x = expr(&b, st->a);
            if (x < 0)
                continue;
            if (t->n[x].rank == 0) {
                err_at(&b, st->loc, "'%s': tasks bind tensors only", st->name);
                continue;
            }
            if (!t->n[x].name && t->n[x].op != TK_PARAM)
                t->n[x].name = st->name;
            push_name(&b, st->name, x, 0, false);
        } else if (st->kind == AST_RETURN) {
            returned = true;
            if (!st->a) {
                err_at(&b, st->loc, "a task returns its result(s)");
                continue;
            }
            /* `return a, b, ...;`: a = the first value, list = the rest */
            const Ast *vals[64];
            int nv = 0;
            vals[nv++] = st->a;
            for (int k = 0; k < st->nlist && nv < 64; k++)
                vals[nv++] = st->list[k];
            if (st->nlist >= 64) {
                err_at(&b, st->loc, "a task returns at most 64 results");
                continue;
            }
            if (nv != t->nresults) {
                err_at(&b, st->loc, "task '%s' declares %d result%s but returns %d", fn->name,
                       t->nresults, t->nresults == 1 ? "" : "s", nv);
                continue;
            }
            for (int r = 0; r < nv; r++) {
                int x = expr(&b, vals[r]);
                if (x < 0)
                    continue;
                TkNode decl = blank(TK_PARAM, vals[r]->loc);
                if (!decl_dims(&b, &fn->results[r], &decl))
                    continue;
                const TkNode *X = &t->n[x];
                bool ok = X->rank == decl.rank && X->dtype == decl.dtype;
                for (int d = 0; ok && d < X->rank; d++)
                    ok = dim_eq(X, d, &decl, d);
                if (!ok) {
                    char s1[128], s2[128];
                    dims_text(&b, X, s1, sizeof s1);
                    dims_text(&b, &decl, s2, sizeof s2);
                    err_at(&b, vals[r]->loc, "task '%s' returns %s but declares %s", fn->name, s1, s2);
                    continue;
                }
                t->results[r] = x;
            }
        } else if (st->kind == AST_EXPR_STMT && st->a->kind == AST_CALL &&
                   (strcmp(st->a->name, "print") == 0 || strcmp(st->a->name, "assert") == 0)) {
            err_at(&b, st->loc, "'%s' is not allowed in a task body; use it in a kernel the task calls",
                   st->a->name);
        } else {
            err_at(&b, st->loc, "a task body holds 'let' statements and a 'return'");
        }
    }
    if (!returned && diags->nerrors == nerr0)
        err_at(&b, fn->loc, "task '%s' has no return", fn->name);
    if (t->oom)
        goto oom;
    if (diags->nerrors > nerr0)
        goto fail;
    free(b.names);
    return t;
oom:
    dsl_error(diags, fn->loc, "out of memory");
fail:
    free(b.names);
    tk_free(t);
    return NULL;
}
