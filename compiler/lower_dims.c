/* lower_dims.c — tensor dims written as expressions (`c: f32[M * world(),
 * N]`, `x: f32[2 * BM]`): a compile-time value becomes a static extent; in
 * a device function a runtime one becomes a size of its own whose value is
 * checked when the function starts (Device IR CHECKDIM, interpreted by
 * runtime/plan.c), with the expression's text for the message. */
#include "lower.h"

/* Source-like text of a dim expression (for the runtime's messages). */
static int prec(int op)
{
    switch (op) {
    case OP_LOR: return 1;
    case OP_LAND: return 2;
    case OP_OR: return 3;
    case OP_XOR: return 4;
    case OP_AND: return 5;
    case OP_EQ: case OP_NE: return 6;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: return 7;
    case OP_SHL: case OP_SHR: return 8;
    case OP_ADD: case OP_SUB: return 9;
    default: return 10;
    }
}

static void dim_text(DslBuf *o, const Ast *e, int depth)
{
    static const char *const two[] = {"==", "!=", "<=", ">=", "&&", "||", "<<", ">>"};
    if (depth > 32) {
        dsl_buf_printf(o, "...");
        return;
    }
    switch (e->kind) {
    case AST_INT: dsl_buf_printf(o, "%lld", (long long)e->ival); return;
    case AST_IDENT: dsl_buf_printf(o, "%s", e->name); return;
    case AST_UNARY:
        dsl_buf_printf(o, "%c", e->op);
        dim_text(o, e->a, depth + 1);
        return;
    case AST_CAST:
        dim_text(o, e->a, depth + 1);
        dsl_buf_printf(o, " as %s", dsl_dtype_name((int)e->ival));
        return;
    case AST_CALL:
        dsl_buf_printf(o, "%s(", e->name);
        for (int i = 0; i < e->nlist; i++) {
            if (i)
                dsl_buf_printf(o, ", ");
            dim_text(o, e->list[i], depth + 1);
        }
        dsl_buf_printf(o, ")");
        return;
    case AST_BINARY:
        for (int k = 0; k < 2; k++) {
            const Ast *c = k ? e->b : e->a;
            bool par = c->kind == AST_BINARY &&
                       (prec(c->op) < prec(e->op) || (k && prec(c->op) == prec(e->op)));
            if (k && e->op < 256)
                dsl_buf_printf(o, " %c ", e->op);
            else if (k && e->op - 256 < 8)
                dsl_buf_printf(o, " %s ", two[e->op - 256]);
            dsl_buf_printf(o, "%s", par ? "(" : "");
            dim_text(o, c, depth + 1);
            dsl_buf_printf(o, "%s", par ? ")" : "");
        }
        return;
    default: dsl_buf_printf(o, "?"); return;
    }
}

/* Lower the dims written as expressions: a compile-time value becomes a
 * static extent; in a device function anything else (sizes, scalars,
 * world()) becomes a size of its own, checked at entry (CHECKDIM). */
static const Ast *unknown_name(Lw *L, const Ast *e, int depth)
{
    if (!e || depth > 32)
        return NULL;
    if (e->kind == AST_IDENT)
        return lw_lookup(L, e->name) ? NULL : e;
    const Ast *kids[2] = {e->a, e->b};
    for (int i = 0; i < 2; i++) {
        const Ast *u = unknown_name(L, kids[i], depth + 1);
        if (u)
            return u;
    }
    for (int i = 0; e->kind == AST_CALL && i < e->nlist; i++) {
        const Ast *u = unknown_name(L, e->list[i], depth + 1);
        if (u)
            return u;
    }
    return NULL;
}

void lw_dim_exprs(Lw *L, const LwDimExpr *dx, int ndx)
{
    IrFunc *f = L->f;
    for (int k = 0; k < ndx; k++) {
        IrParam *p = &f->params[dx[k].param];
        const Ast *u = unknown_name(L, dx[k].e, 0);
        if (u) {
            dsl_error(L->diags, u->loc, "'%s' in a dim expression must be a size bound by a plain dim (x: f32[%s, ...]), a scalar parameter or a constant",
                      u->name, u->name);
            continue;
        }
        LwVal v = lw_expr(L, dx[k].e);
        if (v.bad)
            continue;
        if (v.type.rank != 0 || !dsl_is_int(v.type.dtype)) {
            dsl_error(L->diags, dx[k].e->loc, "a tensor dim must be an integer");
            continue;
        }
        if (lw_is_const(&v)) {
            if (v.c.i <= 0)
                dsl_error(L->diags, dx[k].e->loc, "tensor dim must be positive, got %lld",
                          (long long)v.c.i);
            else
                p->dims[dx[k].dim] = v.c.i;
            continue;
        }
        if (!L->device) {
            dsl_error(L->diags, dx[k].e->loc, "a kernel's tensor dim must be a constant, a name or a compile-time expression (runtime expressions are allowed in device functions)");
            continue;
        }
        DslBuf t = {0};
        dim_text(&t, dx[k].e, 0);
        int s = f->nsyms++;
        f->syms[s].name = dsl_strdup(&L->mod->arena, t.data ? t.data : "?", t.len);
        f->syms[s].param = dx[k].param;
        f->syms[s].dim = dx[k].dim;
        dsl_buf_free(&t);
        p->dims[dx[k].dim] = -1 - s;
        v = lw_convert(L, v, DT_I64, dx[k].e->loc);
        int id = lw_materialize(L, &v, dx[k].e->loc);
        int c = lw_emit(L, IR_CHECKDIM, ir_scalar(DT_VOID), dx[k].e->loc);
        if (c < 0 || id < 0)
            continue;
        f->ins[c].param = dx[k].param;
        f->ins[c].attr = dx[k].dim;
        f->ins[c].axis = s;
        f->ins[c].opnd[0] = id;
    }
}

