/* lower.c — semantic checks and lowering of kernels to Core IR: module
 * constants and compile-time parameters (with -D overrides), parameter
 * types and symbolic sizes, scopes, statements and control flow.
 * Expressions live in lower_expr.c, builtins in builtins.c. */
#include "lower.h"
#include "task.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ scopes */

static void scope_push(Lw *L, LwScope *s)
{
    memset(s, 0, sizeof *s);
    s->up = L->scope;
    L->scope = s;
}

static void scope_pop(Lw *L) { L->scope = L->scope->up; }

LwSym *lw_lookup(Lw *L, const char *name)
{
    for (LwScope *s = L->scope; s; s = s->up)
        for (int i = s->n - 1; i >= 0; i--)
            if (strcmp(s->syms[i].name, name) == 0)
                return &s->syms[i];
    return NULL;
}

static LwSym *scope_find_local(LwScope *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->syms[i].name, name) == 0)
            return &s->syms[i];
    return NULL;
}

/* Declare `name` in the innermost scope; reports a redeclaration. */
LwSym *lw_declare(Lw *L, const char *name, LwSymKind kind, DslLoc loc)
{
    LwScope *s = L->scope;
    LwSym *old = scope_find_local(s, name);
    if (old) {
        if (old->loc.line > 0)
            dsl_error(L->diags, loc, "redeclaration of '%s' (first declared at line %d)",
                      name, old->loc.line);
        else
            dsl_error(L->diags, loc, "redeclaration of '%s'", name);
        return NULL;
    }
    if (s->n == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 16;
        LwSym *ns = dsl_alloc(L->arena, sizeof(LwSym) * (size_t)ncap);
        if (!ns) {
            L->oom = true;
            return NULL;
        }
        if (s->n)
            memcpy(ns, s->syms, sizeof(LwSym) * (size_t)s->n);
        s->syms = ns;
        s->cap = ncap;
    }
    LwSym *y = &s->syms[s->n++];
    memset(y, 0, sizeof *y);
    y->name = name;
    y->kind = kind;
    y->loc = loc;
    y->id = -1;
    y->index = -1;
    return y;
}

int lw_emit(Lw *L, int op, IrType type, DslLoc loc)
{
    int id = ir_emit(L->f, L->region, op, type, loc);
    if (id < 0)
        L->oom = true;
    return id;
}

/* ------------------------------------------------------------ statements */

static void lower_block(Lw *L, const Ast *b);

void lw_block_in_region(Lw *L, const Ast *b, int region)
{
    int saved = L->region;
    L->region = region;
    lower_block(L, b);
    L->region = saved;
}

int lw_new_region(Lw *L)
{
    int r = ir_region_new(L->f, L->region);
    if (r < 0)
        L->oom = true;
    return r;
}

static void assign_var(Lw *L, LwSym *s, LwVal v, DslLoc loc)
{
    IrVar *var = &L->f->vars[s->index];
    if (v.bad)
        return;
    char a[96], b[96];
    IrType bs;
    if (!lw_broadcast_shape(&v.type, &var->type, &bs) ||
        !ir_shape_eq(&bs, &var->type) ||
        (v.type.dtype != var->type.dtype && !v.weak)) {
        ir_type_str(&v.type, a, sizeof a);
        ir_type_str(&var->type, b, sizeof b);
        dsl_error(L->diags, loc, "cannot assign %s to var '%s' of type %s", a,
                  s->name, b);
        return;
    }
    v = lw_convert(L, v, var->type.dtype, loc);
    int id = lw_materialize(L, &v, loc);
    if (v.type.rank != var->type.rank || !ir_shape_eq(&v.type, &var->type)) {
        int bid = lw_emit(L, IR_BCAST, var->type, loc);
        if (bid >= 0)
            L->f->ins[bid].opnd[0] = id;
        id = bid;
    }
    int sid = lw_emit(L, IR_VSET, ir_scalar(DT_VOID), loc);
    if (sid >= 0) {
        L->f->ins[sid].param = s->index;
        L->f->ins[sid].opnd[0] = id;
    }
}

static void lower_assign(Lw *L, const Ast *st, LwVal v)
{
    const Ast *lhs = st->a;
    if (lhs->kind == AST_INDEX) {
        LwSym *s = lhs->a->kind == AST_IDENT ? lw_lookup(L, lhs->a->name) : NULL;
        bool is_peer = lhs->a->kind == AST_CALL && strcmp(lhs->a->name, "peer") == 0;
        if ((s && s->kind == SYM_TENSOR) || is_peer) {
            lw_store(L, lhs, v, NULL, st->loc);
            return;
        }
        dsl_error(L->diags, lhs->loc, "only views of tensor parameters can be stored to");
        return;
    }
    if (lhs->kind != AST_IDENT) {
        dsl_error(L->diags, lhs->loc, "cannot assign to this expression");
        return;
    }
    LwSym *s = lw_lookup(L, lhs->name);
    if (!s) {
        dsl_error(L->diags, lhs->loc, "unknown identifier '%s'", lhs->name);
        return;
    }
    switch (s->kind) {
    case SYM_VAR: assign_var(L, s, v, st->loc); return;
    case SYM_LET:
        dsl_error(L->diags, lhs->loc, "cannot assign to '%s', declared with let (use var)", s->name);
        return;
    case SYM_CONST:
        if (s->is_let) {
            dsl_error(L->diags, lhs->loc, "cannot assign to '%s', declared with let (use var)", s->name);
            return;
        }
        dsl_error(L->diags, lhs->loc, "cannot assign to constant '%s'", s->name);
        return;
    case SYM_SCALAR:
        dsl_error(L->diags, lhs->loc, "cannot assign to scalar parameter '%s'", s->name);
        return;
    case SYM_TENSOR:
        dsl_error(L->diags, lhs->loc, "cannot assign to tensor '%s'; store through a view such as %s[i +: 16] = x",
                  s->name, s->name);
        return;
    default:
        dsl_error(L->diags, lhs->loc, "cannot assign to constant '%s'", s->name);
        return;
    }
}

static bool need_bool_scalar(Lw *L, LwVal *c, const Ast *e, const char *what)
{
    if (c->bad)
        return false;
    if (c->type.rank != 0 || c->type.dtype != DT_BOOL) {
        char t[96];
        ir_type_str(&c->type, t, sizeof t);
        dsl_error(L->diags, e->loc, "%s condition must be a bool scalar, got %s", what, t);
        return false;
    }
    return true;
}

/* `let a, b = f(x);` — the call's several results, one name each. */
static void lower_let_multi(Lw *L, const Ast *st)
{
    int n = st->nlist;
    LwVal v[LW_MAX_RESULTS];
    int got = 0;
    if (st->a->kind != AST_CALL) {
        dsl_error(L->diags, st->a->loc, "'let' with %d names needs a call that gives %d results",
                  n, n);
    } else {
        L->want_multi = true;
        L->nmulti = 0;
        LwVal r = lw_call(L, st->a);
        L->want_multi = false;
        got = L->nmulti > 1 ? L->nmulti : r.bad || r.type.dtype == DT_VOID ? 0 : 1;
        if (L->nmulti > 1)
            memcpy(v, L->multi, sizeof(LwVal) * (size_t)got);
        else
            v[0] = r;
        L->nmulti = 0;
        if (!r.bad && got != n) {
            dsl_error(L->diags, st->loc, "'%s' gives %d result%s, but 'let' binds %d names",
                      st->a->name, got, got == 1 ? "" : "s", n);
            got = 0;
        } else if (r.bad) {
            got = 0;
        }
    }
    for (int i = 0; i < n; i++) {
        const Ast *nm = st->list[i];
        LwSym *s = lw_declare(L, nm->name, SYM_LET, nm->loc);
        if (!s)
            continue;
        if (i >= got || v[i].bad) {
            s->kind = SYM_CONST;
            s->c.dtype = DT_I32;
        } else if (lw_is_const(&v[i])) {
            s->kind = SYM_CONST;
            s->c = v[i].c;
            s->is_let = true;
        } else {
            s->id = v[i].id;
            s->type = v[i].type;
        }
    }
}

/* `for i in a .. b step s unroll { }`: a, b, s compile-time; the body is
 * lowered once per value, with i a compile-time constant. */
#define LW_MAX_UNROLL 4096
static void lower_for_unroll(Lw *L, const Ast *st)
{
    int64_t lo, hi, step = 1;
    if (!lw_const_int(L, st->a, "an unrolled loop's start", &lo) ||
        !lw_const_int(L, st->b, "an unrolled loop's end", &hi) ||
        (st->c && !lw_const_int(L, st->c, "an unrolled loop's step", &step)))
        return;
    if (step == 0) {
        dsl_error(L->diags, st->c->loc, "for-loop step must not be zero");
        return;
    }
    int64_t trips = step > 0 ? (hi > lo ? (hi - lo + step - 1) / step : 0)
                             : (lo > hi ? (lo - hi - step - 1) / -step : 0);
    if (trips > LW_MAX_UNROLL) {
        dsl_error(L->diags, st->loc, "an unrolled loop may run at most %d times, this one runs %lld",
                  LW_MAX_UNROLL, (long long)trips);
        return;
    }
    int dt = lo == (int32_t)lo && hi == (int32_t)hi ? DT_I32 : DT_I64;
    for (int64_t k = 0; k < trips && !L->oom && L->diags->nerrors < DSL_MAX_ERRORS; k++) {
        LwScope sc;
        memset(&sc, 0, sizeof sc);
        sc.up = L->scope;
        L->scope = &sc;
        LwSym *iv = lw_declare(L, st->name, SYM_CONST, st->loc);
        if (iv) {
            iv->c.dtype = dt;
            iv->c.i = lo + k * step;
            iv->is_let = true;
        }
        lower_block(L, st->body);
        L->scope = sc.up;
    }
}

static void lower_for(Lw *L, const Ast *st)
{
    if (st->ival == 1) {
        lower_for_unroll(L, st);
        return;
    }
    LwVal lo = lw_expr(L, st->a), hi = lw_expr(L, st->b);
    LwVal step = st->c ? lw_expr(L, st->c) : lw_cval(DT_I32, 1, 0, true);
    if (lo.bad || hi.bad || step.bad)
        return;
    const Ast *parts[3] = {st->a, st->b, st->c ? st->c : st->a};
    LwVal *vals[3] = {&lo, &hi, &step};
    for (int i = 0; i < 3; i++) {
        if (vals[i]->type.rank != 0 || !dsl_is_int(vals[i]->type.dtype)) {
            char t[96];
            ir_type_str(&vals[i]->type, t, sizeof t);
            dsl_error(L->diags, parts[i]->loc, "for-loop bounds must be integer scalars, got %s", t);
            return;
        }
    }
    LwVal m = lo;
    m.type.dtype = (uint8_t)lw_promote(&lo, &hi);
    m.weak = lo.weak && hi.weak;
    int dt = lw_promote(&m, &step);
    if (dsl_dtype_bytes(dt) < 4)
        dt = DT_I32;
    if (lw_is_const(&step) && step.c.i == 0) {
        dsl_error(L->diags, parts[2]->loc, "for-loop step must not be zero");
        return;
    }
    lo = lw_convert(L, lo, dt, st->loc);
    hi = lw_convert(L, hi, dt, st->loc);
    step = lw_convert(L, step, dt, st->loc);
    int a = lw_materialize(L, &lo, st->loc), b = lw_materialize(L, &hi, st->loc);
    int c = lw_materialize(L, &step, st->loc);
    int id = lw_emit(L, IR_FOR, ir_scalar(dt), st->loc);
    int r = lw_new_region(L);
    if (id < 0 || r < 0)
        return;
    IrInstr *in = &L->f->ins[id];
    in->opnd[0] = a;
    in->opnd[1] = b;
    in->opnd[2] = c;
    in->region[0] = r;
    LwScope sc;
    scope_push(L, &sc);
    LwSym *iv = lw_declare(L, st->name, SYM_LET, st->loc);
    if (iv) {
        iv->id = id;
        iv->type = ir_scalar(dt);
    }
    L->depth++;
    lw_block_in_region(L, st->body, r);
    L->depth--;
    scope_pop(L);
}

static void lower_while(Lw *L, const Ast *st)
{
    int id = lw_emit(L, IR_WHILE, ir_scalar(DT_VOID), st->loc);
    int rc = lw_new_region(L), rb = lw_new_region(L);
    if (id < 0 || rc < 0 || rb < 0)
        return;
    L->f->ins[id].region[0] = rc;
    L->f->ins[id].region[1] = rb;
    int saved = L->region;
    L->region = rc;
    LwVal c = lw_expr(L, st->a);
    if (need_bool_scalar(L, &c, st->a, "while")) {
        int cid = lw_materialize(L, &c, st->a->loc);
        int y = lw_emit(L, IR_YIELD, ir_scalar(DT_VOID), st->a->loc);
        if (y >= 0) {
            L->f->ins[y].opnd[0] = cid;
            L->f->ins[y].nopnd = 1;
        }
    }
    L->region = saved;
    L->depth++;
    lw_block_in_region(L, st->body, rb);
    L->depth--;
}

static void lower_if(Lw *L, const Ast *st)
{
    LwVal c = lw_expr(L, st->a);
    if (!need_bool_scalar(L, &c, st->a, "if"))
        return;
    int cid = lw_materialize(L, &c, st->a->loc);
    int id = lw_emit(L, IR_IF, ir_scalar(DT_VOID), st->loc);
    int rt = lw_new_region(L), re = lw_new_region(L);
    if (id < 0 || rt < 0 || re < 0)
        return;
    IrInstr *in = &L->f->ins[id];
    in->opnd[0] = cid;
    in->region[0] = rt;
    in->region[1] = re;
    lw_block_in_region(L, st->body, rt);
    if (st->els) {
        int saved = L->region;
        L->region = re;
        if (st->els->kind == AST_IF) {
            lower_if(L, st->els);
        } else {
            lower_block(L, st->els);
        }
        L->region = saved;
    }
}

void lw_stmt(Lw *L, const Ast *st)
{
    switch (st->kind) {
    case AST_LET:
        if (st->nlist >= 2) {
            lower_let_multi(L, st);
            return;
        }
        /* fall through */
    case AST_VAR: {
        if (L->device && st->kind == AST_LET && lw_dev_is_alloc(st->a)) {
            lw_dev_alloc(L, st);
            return;
        }
        const AstFunc *g = lw_dev_callee(L, st->a);
        if (g) { /* keep the name known so later uses do not cascade */
            if (L->device)
                dsl_error(L->diags, st->a->loc, "device function '%s' returns no value", g->name);
            else
                dsl_error(L->diags, st->a->loc, "kernel '%s' cannot call device function '%s': device functions run on the host side of a rank; call it from a device function",
                          L->fn->name, g->name);
            LwSym *s = lw_declare(L, st->name, SYM_CONST, st->loc);
            if (s)
                s->c.dtype = DT_I32;
            return;
        }
        LwVal v = lw_expr(L, st->a);
        if (!v.bad && v.type.dtype == DT_VOID) {
            dsl_error(L->diags, st->a->loc, "expression has no value");
            v = lw_bad();
        }
        LwSym *s = lw_declare(L, st->name, st->kind == AST_LET ? SYM_LET : SYM_VAR, st->loc);
        if (!s || v.bad) {
            if (s) { /* keep the name known so later uses do not cascade */
                s->kind = SYM_CONST;
                s->c.dtype = DT_I32;
            }
            return;
        }
        if (st->kind == AST_LET) {
            if (lw_is_const(&v)) { /* a compile-time let stays a constant */
                s->kind = SYM_CONST;
                s->c = v.c;
                s->is_let = true;
                return;
            }
            s->id = v.id;
            s->type = v.type;
            return;
        }
        IrVar *nv = realloc(L->f->vars, sizeof(IrVar) * (size_t)(L->f->nvars + 1));
        if (!nv) {
            L->oom = true;
            return;
        }
        L->f->vars = nv;
        s->index = L->f->nvars++;
        L->f->vars[s->index].name = st->name;
        L->f->vars[s->index].type = v.type;
        v.weak = true; /* the declaration fixes the type */
        assign_var(L, s, v, st->loc);
        return;
    }
    case AST_ASSIGN:
        lower_assign(L, st, lw_expr(L, st->b));
        return;
    case AST_OPASSIGN: {
        LwVal cur = lw_expr(L, st->a);
        LwVal rhs = lw_expr(L, st->b);
        lower_assign(L, st, lw_binary(L, st->op, cur, rhs, st->loc));
        return;
    }
    case AST_EXPR_STMT: {
        const AstFunc *g = lw_dev_callee(L, st->a);
        if (g && L->device) {
            lw_dev_callfn(L, st->a, g);
            return;
        }
        if (g) {
            dsl_error(L->diags, st->a->loc, "kernel '%s' cannot call device function '%s': device functions run on the host side of a rank; call it from a device function",
                      L->fn->name, g->name);
            return;
        }
        if (L->device && lw_dev_is_call(st->a)) {
            lw_dev_call(L, st->a);
            return;
        }
        lw_stmt_call(L, st->a);
        return;
    }
    case AST_FOR: lower_for(L, st); return;
    case AST_WHILE: lower_while(L, st); return;
    case AST_IF: lower_if(L, st); return;
    case AST_RETURN:
        if (L->ninl > 0) {
            lw_helper_return(L, st);
            return;
        }
        if (st->a) {
            dsl_error(L->diags, st->loc, "a %s returns no value",
                      L->device ? "device function" : "kernel");
            return;
        }
        if (L->in_exchange) {
            dsl_error(L->diags, st->loc, "'return' cannot leave an exchange block: its sends and receives run together at the block's end");
            return;
        }
        lw_emit(L, IR_RET, ir_scalar(DT_VOID), st->loc);
        return;
    case AST_BLOCK: {
        lower_block(L, st);
        return;
    }
    case AST_LAUNCH:
    case AST_ASYNC:
    case AST_SYNC:
    case AST_EXCHANGE:
        if (L->device) {
            lw_dev_stmt(L, st);
            return;
        }
        dsl_error(L->diags, st->loc, "'%s' is a device-tier statement; it is not allowed in a kernel",
                  st->kind == AST_LAUNCH ? "launch" : st->kind == AST_ASYNC ? "async"
                  : st->kind == AST_EXCHANGE ? "exchange" : "sync");
        return;
    default:
        dsl_error(L->diags, st->loc, "expected a statement");
        return;
    }
}

static void lower_block(Lw *L, const Ast *b)
{
    if (!b)
        return;
    if (L->depth > DSL_MAX_DEPTH) {
        dsl_error(L->diags, b->loc, "nesting too deep (limit %d)", DSL_MAX_DEPTH);
        return;
    }
    LwScope sc;
    scope_push(L, &sc);
    const Ast *const *list = (const Ast *const *)b->list;
    int n = b->kind == AST_BLOCK ? b->nlist : 1;
    for (int i = 0; i < n && !L->oom; i++)
        lw_stmt(L, b->kind == AST_BLOCK ? list[i] : b);
    scope_pop(L);
}

/* ------------------------------------------------------------ constants */

/* Parse a -D value: integer, float or bool. */
static bool parse_define_value(const char *s, LwConst *c)
{
    char *end;
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
        c->dtype = DT_BOOL;
        c->i = s[0] == 't';
        return true;
    }
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (*s && !*end && errno == 0) {
        c->dtype = v == (int32_t)v ? DT_I32 : DT_I64;
        c->i = v;
        return true;
    }
    double d = strtod(s, &end);
    if (*s && !*end) {
        c->dtype = DT_F32;
        c->f = d;
        return true;
    }
    return false;
}

typedef struct Define {
    const char *name;  /* NAME of NAME=VALUE */
    size_t len;        /* length of NAME */
    LwConst val;       /* parsed VALUE */
    bool used;         /* matched a const or compile-time parameter */
    bool optional;     /* `?NAME=VALUE`: no error when it matches nothing
                          (the API's ignore_unknown_defines, context-wide
                          defines) */
} Define;

static Define *find_define(Define *d, int n, const char *name)
{
    for (int i = n - 1; i >= 0; i--)
        if (strlen(name) == d[i].len && strncmp(d[i].name, name, d[i].len) == 0) {
            d[i].used = true;
            return &d[i];
        }
    return NULL;
}

/* Evaluate `e` as a compile-time value. */
static bool const_eval(Lw *L, const Ast *e, LwConst *out)
{
    LwVal v = lw_expr(L, e);
    if (v.bad)
        return false;
    if (!lw_is_const(&v) || v.type.rank != 0) {
        dsl_error(L->diags, e->loc, "expression is not a compile-time constant");
        return false;
    }
    *out = v.c;
    return true;
}

/* ------------------------------------------------------------ kernels */

/* Dims that are expressions go to dx, lowered by lw_dim_exprs once the
 * scalars and sizes are known. */
static void lower_params(Lw *L, const AstFunc *fn, LwDimExpr *dx, int *ndx)
{
    IrFunc *f = L->f;
    f->params = dsl_alloc(&L->mod->arena, sizeof(IrParam) * (size_t)(fn->nparams + 1));
    f->syms = dsl_alloc(&L->mod->arena, sizeof(IrSym) * (size_t)(fn->nparams * DSL_MAX_RANK + 1));
    if (!f->params || !f->syms) {
        L->oom = true;
        return;
    }
    for (int i = 0; i < fn->nparams; i++) {
        const AstParam *ap = &fn->params[i];
        IrParam *p = &f->params[f->nparams++];
        p->name = ap->name;
        p->dtype = (uint8_t)ap->dtype;
        p->mem = ap->tkind == TY_SIGNAL ? MEM_SIGNAL
               : ap->tkind == TY_SYMMETRIC ? MEM_SYMMETRIC : MEM_GLOBAL;
        if (ap->tkind == TY_SIGNAL)
            p->dtype = DT_U64;
        if (ap->shard != SHARD_NONE)
            dsl_error(L->diags, ap->loc, "shardings are only allowed on task parameters");
        LwSym *s = lw_declare(L, ap->name, ap->tkind == TY_SCALAR ? SYM_SCALAR : SYM_TENSOR, ap->loc);
        if (!s)
            continue;
        s->index = i;
        if (ap->tkind == TY_SCALAR) {
            p->kind = PK_SCALAR;
            s->type = ir_scalar(ap->dtype);
            continue;
        }
        p->kind = PK_TENSOR;
        if (ap->ndims > IR_MAX_RANK || ap->ndims < 1) {
            dsl_error(L->diags, ap->loc, "tensor '%s' must have 1..%d dims", ap->name, IR_MAX_RANK);
            continue;
        }
        p->rank = (uint8_t)ap->ndims;
        for (int d = 0; d < ap->ndims; d++) {
            const Ast *de = ap->dims[d];
            LwSym *ds = de->kind == AST_IDENT ? lw_lookup(L, de->name) : NULL;
            if (de->kind == AST_INT || (ds && ds->kind == SYM_CONST)) {
                int64_t v = de->kind == AST_INT ? de->ival : ds->c.i;
                if (ds && !dsl_is_int(ds->c.dtype)) {
                    dsl_error(L->diags, de->loc, "dim '%s' is not an integer", de->name);
                    v = 1;
                }
                if (v <= 0) {
                    dsl_error(L->diags, de->loc, "tensor dim must be positive, got %lld", (long long)v);
                    v = 1;
                }
                p->dims[d] = v;
            } else if (de->kind == AST_IDENT && (!ds || ds->kind == SYM_SIZE)) {
                if (!ds) { /* a new symbolic size, bound by this param/dim */
                    int k = f->nsyms++;
                    f->syms[k].name = de->name;
                    f->syms[k].param = i;
                    f->syms[k].dim = d;
                    /* declared in the kernel scope so the body sees it */
                    LwSym *ns = lw_declare(L, de->name, SYM_SIZE, de->loc);
                    if (ns) {
                        ns->index = k;
                        ns->type = ir_scalar(DT_I32);
                    }
                    p->dims[d] = -1 - k;
                } else {
                    p->dims[d] = -1 - ds->index;
                }
            } else if (de->kind != AST_IDENT) {
                p->dims[d] = 1; /* set by lw_dim_exprs */
                dx[(*ndx)++] = (LwDimExpr){i, d, de};
            } else {
                dsl_error(L->diags, de->loc, "'%s' cannot be used as a tensor dim", de->name ? de->name : "?");
            }
        }
    }
}

/* Emit PARAM / SIZE once at the top of the body for every scalar and size. */
static void emit_entry_values(Lw *L)
{
    for (int i = 0; i < L->scope->n; i++) {
        LwSym *s = &L->scope->syms[i];
        if (s->kind != SYM_SCALAR && s->kind != SYM_SIZE)
            continue;
        int id = lw_emit(L, s->kind == SYM_SCALAR ? IR_PARAM : IR_SIZE, s->type, s->loc);
        if (id < 0)
            return;
        IrInstr *in = &L->f->ins[id];
        if (s->kind == SYM_SCALAR) {
            in->param = s->index;
        } else {
            in->param = L->f->syms[s->index].param;
            in->attr = L->f->syms[s->index].dim;
        }
        s->id = id;
    }
}

static void lower_grid(Lw *L, const AstFunc *fn)
{
    int r = ir_region_new(L->f, -1);
    if (r < 0) {
        L->oom = true;
        return;
    }
    L->f->grid_region = r;
    int saved = L->region;
    L->region = r;
    L->in_grid = true;
    int ids[3] = {-1, -1, -1};
    int n = fn->ngrid;
    if (n > 3) {
        dsl_error(L->diags, fn->grid[3]->loc, "grid has at most 3 dims");
        n = 3;
    }
    for (int i = 0; i < n; i++) {
        LwVal v = lw_expr(L, fn->grid[i]);
        if (v.bad)
            continue;
        if (v.type.rank != 0 || !dsl_is_int(v.type.dtype)) {
            dsl_error(L->diags, fn->grid[i]->loc, "grid extents must be integer scalars");
            continue;
        }
        v = lw_convert(L, v, DT_I64, fn->grid[i]->loc);
        ids[i] = lw_materialize(L, &v, fn->grid[i]->loc);
    }
    int y = lw_emit(L, IR_YIELD, ir_scalar(DT_VOID), fn->loc);
    if (y >= 0) {
        for (int i = 0; i < n; i++)
            L->f->ins[y].opnd[i] = ids[i];
        L->f->ins[y].nopnd = (uint8_t)n;
    }
    L->in_grid = false;
    L->region = saved;
}

static void lower_kernel(Lw *L, const AstFunc *fn, Define *defs, int ndefs)
{
    IrFunc *f = ir_func_new(L->mod, fn->name);
    if (!f) {
        L->oom = true;
        return;
    }
    L->f = f;
    L->fn = fn;
    f->loc = fn->loc;
    if (L->diags && L->diags->src && L->diags->src->name)
        f->file = dsl_strdup(&L->mod->arena, L->diags->src->name,
                             strlen(L->diags->src->name));
    f->is_device = L->device;
    if (ir_region_new(f, -1) != 0) { /* region 0: the body */
        L->oom = true;
        return;
    }
    L->region = 0;
    LwScope ks;
    scope_push(L, &ks);
    /* compile-time parameters: -D over defaults */
    f->ncparams = fn->ncparams;
    f->cparam_names = dsl_alloc(&L->mod->arena, sizeof(char *) * (size_t)(fn->ncparams + 1));
    f->cparam_vals = dsl_alloc(&L->mod->arena, sizeof(int64_t) * (size_t)(fn->ncparams + 1));
    if (!f->cparam_names || !f->cparam_vals) {
        L->oom = true;
        scope_pop(L);
        return;
    }
    for (int i = 0; i < fn->ncparams; i++) {
        LwConst c = {DT_I32, 0, 0};
        Define *d = find_define(defs, ndefs, fn->cparam_names[i]);
        if (d)
            c = d->val;
        else if (fn->cparam_defaults[i])
            const_eval(L, fn->cparam_defaults[i], &c);
        else
            dsl_error(L->diags, fn->cparam_locs[i],
                      "compile-time parameter '%s' has no default; give it with -D %s=VALUE",
                      fn->cparam_names[i], fn->cparam_names[i]);
        LwSym *s = lw_declare(L, fn->cparam_names[i], SYM_CONST, fn->cparam_locs[i]);
        if (s)
            s->c = c;
        f->cparam_names[i] = fn->cparam_names[i];
        /* recorded for printing and cache keys; floats are truncated, and
         * kept in range (a huge or NaN float must not be UB here) */
        f->cparam_vals[i] = !dsl_is_float(c.dtype) ? c.i
                          : c.f != c.f ? 0
                          : c.f >= 9.2e18 ? INT64_MAX
                          : c.f <= -9.2e18 ? INT64_MIN : (int64_t)c.f;
    }
    LwDimExpr *dx = dsl_alloc(L->arena, sizeof(LwDimExpr) * (size_t)(fn->nparams * DSL_MAX_RANK + 1));
    int ndx = 0;
    if (!dx) {
        L->oom = true;
        scope_pop(L);
        return;
    }
    lower_params(L, fn, dx, &ndx);
    int64_t w;
    if (fn->warps && lw_const_int(L, fn->warps, "warps", &w)) {
        if (w < 1 || w > 32)
            dsl_error(L->diags, fn->warps->loc, "warps must be in 1..32, got %lld", (long long)w);
        f->warps = (int)w;
    }
    if (fn->stages && lw_const_int(L, fn->stages, "stages", &w)) {
        if (w < 1 || w > 8)
            dsl_error(L->diags, fn->stages->loc, "stages must be in 1..8, got %lld", (long long)w);
        f->stages = (int)w;
    }
    if (fn->ngrid)
        lower_grid(L, fn);
    L->region = 0;
    emit_entry_values(L);
    lw_dim_exprs(L, dx, ndx);
    lw_block_in_region(L, fn->body, 0);
    scope_pop(L);
}

IrModule *ir_lower(const AstProgram *prog, DslDiags *diags,
                   const char *const *defines, int ndefines)
{
    IrModule *m = ir_module_new();
    DslArena scratch = {0};
    if (!m)
        return NULL;
    Lw L;
    memset(&L, 0, sizeof L);
    L.diags = diags;
    L.arena = &scratch;
    L.mod = m;
    Define *defs = dsl_alloc(&scratch, sizeof(Define) * (size_t)(ndefines + 1));
    if (!defs)
        goto fail;
    int ndefs = 0;
    for (int i = 0; i < ndefines; i++) {
        const char *eq = defines[i] ? strchr(defines[i], '=') : NULL;
        DslLoc none = {0, 0};
        if (!eq || eq == defines[i] + (defines[i][0] == '?')) {
            dsl_error(diags, none, "bad define '%s': expected NAME=VALUE",
                      defines[i] ? defines[i] : "(null)");
            continue;
        }
        Define *d = &defs[ndefs];
        d->optional = defines[i][0] == '?';
        d->name = defines[i] + d->optional;
        d->len = (size_t)(eq - d->name);
        if (!parse_define_value(eq + 1, &d->val)) {
            dsl_error(diags, none, "bad define '%s': the value must be an integer, float or bool",
                      defines[i]);
            continue;
        }
        ndefs++;
    }
    LwScope global;
    scope_push(&L, &global);
    L.global = &global;
    /* Module constants, in order; each may use the ones before it. */
    IrFunc *cf = ir_func_new(m, "__consts"); /* scratch function for folding */
    if (!cf)
        goto fail;
    L.f = cf;
    if (ir_region_new(cf, -1) < 0)
        goto fail;
    for (int i = 0; i < prog->nconsts; i++) {
        const AstConst *c = &prog->consts[i];
        LwConst v = {DT_I32, 0, 0};
        Define *d = find_define(defs, ndefs, c->name);
        if (d)
            v = d->val;
        else if (!const_eval(&L, c->value, &v))
            continue;
        LwSym *s = lw_declare(&L, c->name, SYM_CONST, c->loc);
        if (s)
            s->c = v;
    }
    /* drop the scratch function again */
    m->nfuncs--;
    for (int i = 0; i < cf->nregions; i++)
        free(cf->regions[i].ins);
    free(cf->regions);
    free(cf->ins);
    free(cf->views);
    free(cf->vars);
    free(cf);
    L.prog = prog;
    lw_dev_check_recursion(prog, diags);
    lw_check_helpers(&L);
    /* kernels first, so that device functions can launch any of them */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < prog->nfuncs && !L.oom; i++) {
            const AstFunc *fn = prog->funcs[i];
            if (fn->fkind == FN_TASK) {
                /* tasks are checked here (Task IR build + sharding
                 * propagation, no ranks); they are compiled per run by the
                 * task compiler (task.h), not into this module */
                if (pass == 0)
                    tk_check(prog, fn, defines, ndefines, diags);
                continue;
            }
            if ((fn->fkind == FN_DEVICE) != (pass == 1))
                continue;
            for (int j = 0; j < i; j++)
                if (strcmp(prog->funcs[j]->name, fn->name) == 0) {
                    dsl_error(diags, fn->loc, "redefinition of '%s'", fn->name);
                    break;
                }
            L.device = fn->fkind == FN_DEVICE;
            lower_kernel(&L, fn, defs, ndefs);
            L.device = false;
        }
    }
    lw_dev_resolve_calls(m, prog);
    for (int i = 0; i < ndefs; i++)
        if (!defs[i].used && !defs[i].optional) {
            DslLoc none = {0, 0};
            dsl_error(diags, none, "define '%.*s' matches no constant or compile-time parameter",
                      (int)defs[i].len, defs[i].name);
        }
    if (L.oom)
        dsl_error(diags, (DslLoc){0, 0}, "out of memory");
    scope_pop(&L);
    if (diags->nerrors)
        goto fail;
    dsl_arena_free(&scratch);
    return m;
fail:
    dsl_arena_free(&scratch);
    ir_module_free(m);
    return NULL;
}
