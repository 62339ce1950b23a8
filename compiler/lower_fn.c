/* lower_fn.c — helper functions (`fn`, LANGUAGE.md §7): a call is inlined
 * where it stands, in the caller's IR region. The helper's body sees the
 * module constants, its own compile-time parameters (defaults) and its
 * parameters, never the caller's locals. Several results travel in
 * Lw.multi to `let a, b = f(x);`. Recursion (direct or through other
 * helpers) is an error at the call that closes the cycle.
 *
 * Also the one entry for every call expression, lw_call: builtins, then
 * helpers, with the check that a call giving several results is bound by
 * `let a, b = ...`. */
#include "lower.h"

#include <stdio.h>
#include <string.h>

const AstFunc *lw_helper(const Lw *L, const char *name)
{
    if (!L->prog || !name)
        return NULL;
    for (int i = 0; i < L->prog->nhelpers; i++)
        if (strcmp(L->prog->helpers[i]->name, name) == 0)
            return L->prog->helpers[i];
    return NULL;
}

/* Names: a helper may not share a name with another helper, a kernel,
 * device function or task, or a builtin. */
void lw_check_helpers(Lw *L)
{
    const AstProgram *p = L->prog;
    for (int i = 0; i < p->nhelpers; i++) {
        const AstFunc *h = p->helpers[i];
        for (int j = 0; j < i; j++)
            if (strcmp(p->helpers[j]->name, h->name) == 0) {
                dsl_error(L->diags, h->loc, "redefinition of helper '%s'", h->name);
                break;
            }
        for (int j = 0; j < p->nfuncs; j++)
            if (strcmp(p->funcs[j]->name, h->name) == 0) {
                dsl_error(L->diags, h->loc, "helper '%s' has the name of a %s", h->name,
                          p->funcs[j]->fkind == FN_KERNEL ? "kernel"
                          : p->funcs[j]->fkind == FN_DEVICE ? "device function" : "task");
                break;
            }
        for (int k = 0; k < h->nparams; k++)
            for (int j = 0; j < k; j++)
                if (strcmp(h->params[j].name, h->params[k].name) == 0)
                    dsl_error(L->diags, h->params[k].loc, "helper '%s': parameter '%s' given twice",
                              h->name, h->params[k].name);
    }
}

/* Bind parameter `p` of a helper to the argument expression `a` (lowered
 * in the caller's scope), or to the value *av when a is NULL. */
static void bind_param(Lw *L, LwScope *caller, const AstParam *p, const Ast *a,
                       const LwVal *av, DslLoc aloc, const char *hname)
{
    LwScope *mine = L->scope;
    if (a && a->kind == AST_IDENT) { /* a tensor passes by name (views, loads) */
        L->scope = caller;
        LwSym *ts = lw_lookup(L, a->name);
        L->scope = mine;
        if (ts && ts->kind == SYM_TENSOR) {
            if (p->dtype != DT_VOID) {
                dsl_error(L->diags, a->loc, "helper '%s': parameter '%s' is typed; pass tensor '%s' to an untyped parameter",
                          hname, p->name, a->name);
                return;
            }
            LwSym *s = lw_declare(L, p->name, SYM_TENSOR, p->loc);
            if (s) {
                LwSym keep = *s;
                *s = *ts;
                s->name = keep.name;
                s->loc = keep.loc;
            }
            return;
        }
    }
    LwVal v;
    if (a) {
        L->scope = caller;
        v = lw_expr(L, a);
        L->scope = mine;
    } else {
        v = *av;
    }
    if (!v.bad && v.type.dtype == DT_VOID) {
        dsl_error(L->diags, aloc, "expression has no value");
        v = lw_bad();
    }
    if (!v.bad && p->dtype != DT_VOID) {
        if (p->tkind != TY_SCALAR) {
            dsl_error(L->diags, p->loc, "helper parameters take a dtype (x: f32), not a tensor type");
            v = lw_bad();
        } else {
            v = lw_convert(L, v, p->dtype, aloc);
        }
    }
    LwSym *s = lw_declare(L, p->name, SYM_LET, p->loc);
    if (!s)
        return;
    if (v.bad) { /* keep the name known so later uses do not cascade */
        s->kind = SYM_CONST;
        s->c.dtype = DT_I32;
        return;
    }
    if (lw_is_const(&v)) {
        s->kind = SYM_CONST;
        s->c = v.c;
        s->is_let = true;
        return;
    }
    s->id = v.id;
    s->type = v.type;
}

/* Inline h at `loc` with the arguments aargs[0..n) (expressions) or, when
 * aargs is NULL, the values vargs[0..n). */
static LwVal inline_call(Lw *L, const AstFunc *h, DslLoc loc, Ast *const *aargs,
                         const LwVal *vargs, int nargs)
{
    for (int i = 0; i < L->ninl; i++)
        if (L->inl[i] == h) {
            char chain[256];
            size_t k = 0;
            chain[0] = 0;
            for (int j = i; j < L->ninl && k < sizeof chain; j++)
                k += (size_t)snprintf(chain + k, sizeof chain - k, "%s -> ", L->inl[j]->name);
            if (k < sizeof chain)
                snprintf(chain + k, sizeof chain - k, "%s", h->name);
            dsl_error(L->diags, loc, "recursive call of helper '%s' (%s); helpers are inlined and cannot recurse",
                      h->name, chain);
            return lw_bad();
        }
    if (L->ninl >= LW_MAX_INLINE) {
        dsl_error(L->diags, loc, "helper calls nested too deeply (limit %d)", LW_MAX_INLINE);
        return lw_bad();
    }
    if (nargs != h->nparams) {
        dsl_error(L->diags, loc, "helper '%s' takes %d argument%s, got %d", h->name,
                  h->nparams, h->nparams == 1 ? "" : "s", nargs);
        return lw_bad();
    }
    LwScope *caller = L->scope, sc;
    memset(&sc, 0, sizeof sc);
    sc.up = L->global;
    L->scope = &sc;
    L->inl[L->ninl++] = h;
    for (int i = 0; i < h->ncparams; i++) {
        LwVal v = h->cparam_defaults[i] ? lw_expr(L, h->cparam_defaults[i]) : lw_bad();
        if (!h->cparam_defaults[i])
            dsl_error(L->diags, h->cparam_locs[i], "compile-time parameter '%s' of helper '%s' needs a default",
                      h->cparam_names[i], h->name);
        else if (!v.bad && !lw_is_const(&v)) {
            dsl_error(L->diags, h->cparam_defaults[i]->loc, "expression is not a compile-time constant");
            v = lw_bad();
        }
        LwSym *s = lw_declare(L, h->cparam_names[i], SYM_CONST, h->cparam_locs[i]);
        if (s)
            s->c = v.bad ? (LwConst){DT_I32, 0, 0} : v.c;
    }
    for (int i = 0; i < h->nparams; i++)
        bind_param(L, caller, &h->params[i], aargs ? aargs[i] : NULL,
                   aargs ? NULL : &vargs[i], aargs ? aargs[i]->loc : loc, h->name);
    /* the body: a `return` may only be its last statement */
    bool saved_ok = L->ret_ok;
    int saved_n = L->nhret;
    LwVal saved_ret[LW_MAX_RESULTS];
    memcpy(saved_ret, L->hret, sizeof saved_ret);
    L->nhret = -1;
    const Ast *b = h->body;
    int n = b ? b->nlist : 0;
    LwScope body;
    memset(&body, 0, sizeof body);
    body.up = L->scope;
    L->scope = &body;
    for (int i = 0; i < n && !L->oom; i++) {
        if (!b->list[i])
            continue;
        L->ret_ok = i == n - 1;
        lw_stmt(L, b->list[i]);
    }
    L->ret_ok = saved_ok;
    int nres = L->nhret < 0 ? 0 : L->nhret;
    LwVal res[LW_MAX_RESULTS];
    memcpy(res, L->hret, sizeof res);
    memcpy(L->hret, saved_ret, sizeof saved_ret);
    L->nhret = saved_n;
    L->scope = caller;
    L->ninl--;
    for (int i = 0; i < nres; i++)
        if (res[i].bad)
            return lw_bad();
    if (nres == 0)
        return lw_cval(DT_VOID, 0, 0, false);
    memcpy(L->multi, res, sizeof(LwVal) * (size_t)nres);
    L->nmulti = nres;
    return res[0];
}

LwVal lw_inline(Lw *L, const Ast *e, const AstFunc *h)
{
    for (int i = 0; i < e->nlist; i++)
        if (e->list[i]->kind == AST_NAMED_ARG) {
            dsl_error(L->diags, e->list[i]->loc, "helper '%s' has no named arguments", h->name);
            return lw_bad();
        }
    return inline_call(L, h, e->loc, e->list, NULL, e->nlist);
}

int lw_inline_vals(Lw *L, const AstFunc *h, const LwVal *args, int n,
                   DslLoc loc, LwVal *res)
{
    L->nmulti = 0;
    LwVal r = inline_call(L, h, loc, NULL, args, n);
    if (r.bad)
        return -1;
    int k = L->nmulti > 1 ? L->nmulti : r.type.dtype == DT_VOID && lw_is_const(&r) ? 0 : 1;
    if (L->nmulti > 1)
        memcpy(res, L->multi, sizeof(LwVal) * (size_t)k);
    else
        res[0] = r;
    L->nmulti = 0;
    return k;
}

/* `return a, b;` in a helper: the values of its call. */
void lw_helper_return(Lw *L, const Ast *st)
{
    const AstFunc *h = L->inl[L->ninl - 1];
    if (!L->ret_ok) {
        dsl_error(L->diags, st->loc, "helper '%s': 'return' must be the last statement of its body",
                  h->name);
        return;
    }
    int n = st->a ? 1 + st->nlist : 0;
    if (n > LW_MAX_RESULTS) {
        dsl_error(L->diags, st->loc, "helper '%s' returns %d values (limit %d)", h->name, n,
                  LW_MAX_RESULTS);
        return;
    }
    for (int i = 0; i < n; i++) {
        const Ast *x = i == 0 ? st->a : st->list[i - 1];
        LwVal v = lw_expr(L, x);
        if (!v.bad && v.type.dtype == DT_VOID) {
            dsl_error(L->diags, x->loc, "expression has no value");
            v = lw_bad();
        }
        L->hret[i] = v;
    }
    L->nhret = n;
}

/* Every call expression. A call with several results is only accepted as
 * the right-hand side of `let a, b = ...` (want_multi). */
LwVal lw_call(Lw *L, const Ast *e)
{
    bool want = L->want_multi;
    L->want_multi = false;
    L->nmulti = 0;
    LwVal r = lw_builtin(L, e);
    if (L->nmulti > 1 && !want && !r.bad) {
        dsl_error(L->diags, e->loc, "'%s' gives %d results; bind them with 'let a, b = %s(...);'",
                  e->name, L->nmulti, e->name);
        r = lw_bad();
    }
    if (!want)
        L->nmulti = 0;
    return r;
}
