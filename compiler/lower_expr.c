/* lower_expr.c — type/shape inference and lowering of expressions: the
 * promotion rules of LANGUAGE.md §4, compile-time folding of constant
 * expressions (tile extents must be known here), tensor views, and the
 * builtins. Every user error becomes a diagnostic at the offending node. */
#include "lower.h"

#include <math.h>
#include <string.h>

LwVal lw_bad(void)
{
    LwVal v;
    memset(&v, 0, sizeof v);
    v.id = -1;
    v.bad = true;
    return v;
}

LwVal lw_cval(int dtype, int64_t i, double f, bool weak)
{
    LwVal v;
    memset(&v, 0, sizeof v);
    v.id = -1;
    v.type = ir_scalar(dtype);
    v.weak = weak;
    v.c.dtype = dtype;
    v.c.i = i;
    v.c.f = f;
    return v;
}

LwVal lw_ival(int id, IrType t)
{
    LwVal v;
    memset(&v, 0, sizeof v);
    v.id = id;
    v.type = t;
    if (id < 0)
        v.bad = true;
    return v;
}

bool lw_is_const(const LwVal *v) { return v->id < 0 && !v->bad; }

static void tstr(const IrType *t, char *b, size_t n) { ir_type_str(t, b, n); }

/* ------------------------------------------------------------ promotion */

static int64_t wrap_int(int dt, int64_t x);

static int kind_rank(int dt)
{
    char k = dsl_dtype_kind(dt);
    return k == 'b' ? 0 : k == 'f' ? 2 : 1;
}

static bool is_unsigned(int dt) { return dsl_dtype_kind(dt) == 'u'; }

/* C integer promotion: bool and ints narrower than 32 bits become i32. */
static int int_promote(int dt)
{
    return dsl_dtype_bytes(dt) < 4 || dt == DT_BOOL ? DT_I32 : dt;
}

static int promote_int(int a, int b)
{
    a = int_promote(a);
    b = int_promote(b);
    if (a == b)
        return a;
    bool ua = is_unsigned(a), ub = is_unsigned(b);
    int wa = dsl_dtype_bytes(a), wb = dsl_dtype_bytes(b);
    if (ua == ub)
        return wa >= wb ? a : b;
    int u = ua ? a : b, s = ua ? b : a;
    return dsl_dtype_bytes(u) >= dsl_dtype_bytes(s) ? u : s;
}

static int float_order(int dt)
{
    switch (dt) {
    case DT_F64: return 5;
    case DT_F32: return 4;
    case DT_F16: return 3;
    case DT_BF16: return 2;
    default: return 1; /* f8 */
    }
}

static int promote_float(int a, int b)
{
    if (a == b)
        return a;
    if ((a == DT_F16 && b == DT_BF16) || (a == DT_BF16 && b == DT_F16))
        return DT_F32;
    if (float_order(a) == 1 && float_order(b) == 1)
        return DT_F16; /* two different f8 formats */
    return float_order(a) >= float_order(b) ? a : b;
}

/* The dtype two operands meet at (LANGUAGE.md §4 "Type promotion"). */
int lw_promote(const LwVal *a, const LwVal *b)
{
    int da = a->type.dtype, db = b->type.dtype;
    if (a->weak != b->weak) {
        const LwVal *w = a->weak ? a : b, *s = a->weak ? b : a;
        int wk = kind_rank(w->type.dtype), sk = kind_rank(s->type.dtype);
        /* an integer literal adopts an integer type only if it fits */
        bool fits = !(wk == 1 && sk == 1 && lw_is_const(w)) ||
                    wrap_int(s->type.dtype, w->c.i) == w->c.i ||
                    (dsl_dtype_kind(s->type.dtype) == 'u' &&
                     dsl_dtype_bytes(s->type.dtype) == 8 && w->c.i >= 0);
        if (wk < sk || (wk == sk && fits))
            return s->type.dtype;
        if (wk > sk)
            return w->type.dtype;
        /* does not fit: C's rules, the literal counting as i32 or i64 */
    }
    int ka = kind_rank(da), kb = kind_rank(db);
    if (ka == 2 && kb == 2)
        return promote_float(da, db);
    if (ka == 2)
        return da;
    if (kb == 2)
        return db;
    return promote_int(da, db);
}

bool lw_broadcast_shape(const IrType *a, const IrType *b, IrType *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    IrType t = ir_scalar(DT_VOID);
    t.rank = (uint8_t)r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int32_t ea = ia >= 0 ? a->shape[ia] : 1;
        int32_t eb = ib >= 0 ? b->shape[ib] : 1;
        if (ea != eb && ea != 1 && eb != 1)
            return false;
        t.shape[i] = ea == 1 ? eb : ea;
    }
    out->rank = t.rank;
    memcpy(out->shape, t.shape, sizeof t.shape);
    return true;
}

bool lw_check_tile(Lw *L, const IrType *t, DslLoc loc)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] <= 0) {
            dsl_error(L->diags, loc, "tile extent %d must be positive",
                      (int)t->shape[i]);
            return false;
        }
        n *= t->shape[i];
        if (n > DSL_MAX_TILE_ELEMS) {
            dsl_error(L->diags, loc,
                      "tile is too large (limit %d elements)",
                      DSL_MAX_TILE_ELEMS);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------ constants */

/* Wrap an integer to the width and signedness of dt (two's complement). */
static int64_t wrap_int(int dt, int64_t x)
{
    switch (dt) {
    case DT_BOOL: return x != 0;
    case DT_I8: return (int8_t)x;
    case DT_I16: return (int16_t)x;
    case DT_I32: return (int32_t)x;
    case DT_U8: return (uint8_t)x;
    case DT_U16: return (uint16_t)x;
    case DT_U32: return (uint32_t)x;
    default: return x;
    }
}

static double round_float(int dt, double x)
{
    return dt == DT_F64 ? x : (double)(float)x;
}

static LwConst const_convert(LwConst c, int dt)
{
    LwConst r = {dt, 0, 0};
    bool from_f = dsl_is_float(c.dtype), to_f = dsl_is_float(dt);
    if (dt == DT_BOOL)
        r.i = from_f ? c.f != 0 : c.i != 0;
    else if (to_f)
        r.f = round_float(dt, from_f ? c.f
                                     : is_unsigned(c.dtype) ? (double)(uint64_t)c.i
                                                            : (double)c.i);
    else if (from_f)
        r.i = isnan(c.f) ? 0 : wrap_int(dt, (int64_t)trunc(fmax(fmin(c.f, 9.2e18), -9.2e18)));
    else
        r.i = wrap_int(dt, c.i);
    return r;
}

int lw_materialize(Lw *L, LwVal *v, DslLoc loc)
{
    if (v->id >= 0 || v->bad)
        return v->id;
    int id = lw_emit(L, IR_CONST, ir_scalar(v->c.dtype), loc);
    if (id >= 0) {
        L->f->ins[id].ival = v->c.i;
        L->f->ins[id].fval = v->c.f;
        v->id = id; /* the value now lives in the IR */
    } else {
        v->bad = true;
    }
    return id;
}

LwVal lw_convert(Lw *L, LwVal v, int dt, DslLoc loc)
{
    if (v.bad)
        return v;
    if (lw_is_const(&v)) {
        LwVal r = lw_cval(dt, 0, 0, false);
        r.c = const_convert(v.c, dt);
        return r;
    }
    if (v.type.dtype == dt) {
        v.weak = false;
        return v;
    }
    IrType t = v.type;
    t.dtype = (uint8_t)dt;
    int id = lw_emit(L, IR_CVT, t, loc);
    if (id >= 0)
        L->f->ins[id].opnd[0] = v.id;
    return lw_ival(id, t);
}

bool lw_const_int(Lw *L, const Ast *e, const char *what, int64_t *out)
{
    LwVal v = lw_expr(L, e);
    if (v.bad)
        return false;
    if (!lw_is_const(&v) || v.type.rank != 0 || !dsl_is_int(v.c.dtype)) {
        dsl_error(L->diags, e->loc, "%s must be a compile-time integer", what);
        return false;
    }
    *out = v.c.i;
    return true;
}

/* Fold a binary operator over two compile-time values of dtype dt. */
static bool fold_binary(Lw *L, int op, LwConst a, LwConst b, int dt,
                        DslLoc loc, LwConst *out)
{
    LwConst r = {dt, 0, 0};
    bool fl = dsl_is_float(dt);
    bool uns = is_unsigned(dt);
    switch (op) {
    case OP_ADD: if (fl) r.f = a.f + b.f; else r.i = (int64_t)((uint64_t)a.i + (uint64_t)b.i); break;
    case OP_SUB: if (fl) r.f = a.f - b.f; else r.i = (int64_t)((uint64_t)a.i - (uint64_t)b.i); break;
    case OP_MUL: if (fl) r.f = a.f * b.f; else r.i = (int64_t)((uint64_t)a.i * (uint64_t)b.i); break;
    case OP_DIV:
    case OP_REM:
        if (fl) {
            r.f = op == OP_DIV ? a.f / b.f : fmod(a.f, b.f);
            break;
        }
        if (b.i == 0) {
            dsl_error(L->diags, loc, "division by zero in a constant expression");
            return false;
        }
        if (!uns && b.i == -1) /* avoid INT64_MIN / -1 */
            r.i = op == OP_DIV ? (int64_t)(0 - (uint64_t)a.i) : 0;
        else if (uns)
            r.i = (int64_t)(op == OP_DIV ? (uint64_t)a.i / (uint64_t)b.i
                                         : (uint64_t)a.i % (uint64_t)b.i);
        else
            r.i = op == OP_DIV ? a.i / b.i : a.i % b.i;
        break;
    case OP_AND: r.i = a.i & b.i; break;
    case OP_OR: r.i = a.i | b.i; break;
    case OP_XOR: r.i = a.i ^ b.i; break;
    case OP_SHL: r.i = (int64_t)((uint64_t)a.i << (b.i & (dsl_dtype_bytes(dt) * 8 - 1))); break;
    case OP_SHR:
        r.i = uns ? (int64_t)((uint64_t)a.i >> (b.i & (dsl_dtype_bytes(dt) * 8 - 1)))
                  : a.i >> (b.i & (dsl_dtype_bytes(dt) * 8 - 1));
        break;
    default: return false;
    }
    if (fl)
        r.f = round_float(dt, r.f);
    else
        r.i = wrap_int(dt, r.i);
    *out = r;
    return true;
}

static bool fold_compare(int op, LwConst a, LwConst b, int dt)
{
    if (dsl_is_float(dt)) {
        switch (op) {
        case OP_EQ: return a.f == b.f;
        case OP_NE: return a.f != b.f;
        case OP_LT: return a.f < b.f;
        case OP_LE: return a.f <= b.f;
        case OP_GT: return a.f > b.f;
        default: return a.f >= b.f;
        }
    }
    if (is_unsigned(dt)) {
        uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
        switch (op) {
        case OP_EQ: return x == y;
        case OP_NE: return x != y;
        case OP_LT: return x < y;
        case OP_LE: return x <= y;
        case OP_GT: return x > y;
        default: return x >= y;
        }
    }
    switch (op) {
    case OP_EQ: return a.i == b.i;
    case OP_NE: return a.i != b.i;
    case OP_LT: return a.i < b.i;
    case OP_LE: return a.i <= b.i;
    case OP_GT: return a.i > b.i;
    default: return a.i >= b.i;
    }
}

/* ------------------------------------------------------------ operators */

static const char *op_text(int op)
{
    switch (op) {
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    case OP_LE: return "<=";
    case OP_GE: return ">=";
    case OP_LAND: return "&&";
    case OP_LOR: return "||";
    case OP_SHL: return "<<";
    case OP_SHR: return ">>";
    case OP_ADD: return "+";
    case OP_SUB: return "-";
    case OP_MUL: return "*";
    case OP_DIV: return "/";
    case OP_REM: return "%";
    case OP_LT: return "<";
    case OP_GT: return ">";
    case OP_AND: return "&";
    case OP_OR: return "|";
    case OP_XOR: return "^";
    default: return "@";
    }
}

static int ir_binop(int op)
{
    switch (op) {
    case OP_ADD: return IR_ADD;
    case OP_SUB: return IR_SUB;
    case OP_MUL: return IR_MUL;
    case OP_DIV: return IR_DIV;
    case OP_REM: return IR_REM;
    case OP_AND: return IR_AND;
    case OP_OR: return IR_OR;
    case OP_XOR: return IR_XOR;
    case OP_SHL: return IR_SHL;
    case OP_SHR: return IR_SHR;
    case OP_EQ: return IR_EQ;
    case OP_NE: return IR_NE;
    case OP_LT: return IR_LT;
    case OP_LE: return IR_LE;
    case OP_GT: return IR_GT;
    case OP_GE: return IR_GE;
    case OP_LAND: return IR_AND;
    case OP_LOR: return IR_OR;
    }
    return -1;
}

static bool is_compare(int op)
{
    return op == OP_EQ || op == OP_NE || op == OP_LT || op == OP_LE ||
           op == OP_GT || op == OP_GE;
}

/* Emit op over two operands already of dtype dt, with result type t. */
static LwVal emit2(Lw *L, int irop, LwVal a, LwVal b, IrType t, DslLoc loc)
{
    int ia = lw_materialize(L, &a, loc), ib = lw_materialize(L, &b, loc);
    int id = lw_emit(L, irop, t, loc);
    if (id >= 0) {
        L->f->ins[id].opnd[0] = ia;
        L->f->ins[id].opnd[1] = ib;
    }
    return lw_ival(id, t);
}

LwVal lw_binary(Lw *L, int op, LwVal a, LwVal b, DslLoc loc)
{
    char ta[96], tb[96];
    if (a.bad || b.bad)
        return lw_bad();
    if (op == OP_MATMUL) {
        dsl_error(L->diags, loc, "'@' is only allowed in tasks; use dot(a, b) in kernels");
        return lw_bad();
    }
    IrType shape;
    if (!lw_broadcast_shape(&a.type, &b.type, &shape)) {
        tstr(&a.type, ta, sizeof ta);
        tstr(&b.type, tb, sizeof tb);
        dsl_error(L->diags, loc, "tile shape mismatch in '%s': %s and %s",
                  op_text(op), ta, tb);
        return lw_bad();
    }
    int dt;
    if (op == OP_LAND || op == OP_LOR) {
        dt = DT_BOOL;
    } else {
        dt = lw_promote(&a, &b);
        bool bitwise = op == OP_AND || op == OP_OR || op == OP_XOR ||
                       op == OP_SHL || op == OP_SHR || op == OP_REM;
        if (bitwise && op != OP_REM && dsl_is_float(dt)) {
            tstr(&a.type, ta, sizeof ta);
            tstr(&b.type, tb, sizeof tb);
            dsl_error(L->diags, loc,
                      "operator '%s' needs integer operands, got %s and %s",
                      op_text(op), ta, tb);
            return lw_bad();
        }
        bool both_bool = a.type.dtype == DT_BOOL && b.type.dtype == DT_BOOL;
        if ((op == OP_AND || op == OP_OR || op == OP_XOR) && both_bool)
            dt = DT_BOOL;
        else if (dt == DT_BOOL && !is_compare(op))
            dt = DT_I32; /* arithmetic on bools is integer arithmetic (C) */
    }
    LwVal ca = lw_convert(L, a, dt, loc), cb = lw_convert(L, b, dt, loc);
    bool weak = a.weak && b.weak;
    if (lw_is_const(&ca) && lw_is_const(&cb)) {
        if (is_compare(op)) {
            LwVal r = lw_cval(DT_BOOL, fold_compare(op, ca.c, cb.c, dt), 0, weak);
            return r;
        }
        LwConst rc;
        if (op == OP_LAND || op == OP_LOR) {
            rc.dtype = DT_BOOL;
            rc.i = op == OP_LAND ? (ca.c.i && cb.c.i) : (ca.c.i || cb.c.i);
            rc.f = 0;
        } else if (!fold_binary(L, op, ca.c, cb.c, dt, loc, &rc)) {
            return lw_bad();
        }
        LwVal r = lw_cval(rc.dtype, rc.i, rc.f, weak);
        r.c = rc;
        return r;
    }
    IrType t = shape;
    t.dtype = (uint8_t)(is_compare(op) ? DT_BOOL : dt);
    if (!lw_check_tile(L, &t, loc))
        return lw_bad();
    return emit2(L, ir_binop(op), ca, cb, t, loc);
}

LwVal lw_unary(Lw *L, int op, LwVal v, DslLoc loc)
{
    char tb[96];
    if (v.bad)
        return v;
    int irop;
    if (op == '!') {
        v = lw_convert(L, v, DT_BOOL, loc);
        if (lw_is_const(&v))
            return lw_cval(DT_BOOL, !v.c.i, 0, false);
        irop = IR_NOT;
    } else if (op == '~') {
        if (!dsl_is_int(v.type.dtype)) {
            tstr(&v.type, tb, sizeof tb);
            dsl_error(L->diags, loc, "operator '~' needs an integer operand, got %s", tb);
            return lw_bad();
        }
        if (lw_is_const(&v)) {
            LwVal r = v;
            r.c.i = wrap_int(v.c.dtype, ~v.c.i);
            return r;
        }
        irop = IR_BITNOT;
    } else {
        if (v.type.dtype == DT_BOOL)
            v = lw_convert(L, v, DT_I32, loc);
        if (lw_is_const(&v)) {
            LwVal r = v;
            if (dsl_is_float(v.c.dtype))
                r.c.f = -v.c.f;
            else
                r.c.i = wrap_int(v.c.dtype, (int64_t)(0 - (uint64_t)v.c.i));
            return r;
        }
        irop = IR_NEG;
    }
    int id = lw_emit(L, irop, v.type, loc);
    if (id >= 0)
        L->f->ins[id].opnd[0] = v.id;
    return lw_ival(id, v.type);
}

/* ------------------------------------------------------------ views */

LwSym *lw_tensor_of(Lw *L, const Ast *e)
{
    if (e->kind != AST_IDENT)
        return NULL;
    LwSym *s = lw_lookup(L, e->name);
    return s && s->kind == SYM_TENSOR ? s : NULL;
}

/* Lower the index list of `T[...]` (T a tensor) into an IrView. Returns the
 * view id, or -1 after reporting an error. */
int lw_view(Lw *L, const Ast *e, int *param_out, IrType *shape_out,
            int *peer_out)
{
    const Ast *base = e->a;
    *peer_out = -1;
    if (base->kind == AST_CALL && strcmp(base->name, "peer") == 0) {
        int np = 0;
        for (int i = 0; i < base->nlist; i++)
            np += base->list[i]->kind != AST_NAMED_ARG;
        if (np != 2 || base->nlist != 2) {
            dsl_error(L->diags, base->loc, "'peer' takes 2 arguments, got %d", np);
            return -1;
        }
        LwSym *ps = lw_tensor_of(L, base->list[0]);
        if (!ps) {
            dsl_error(L->diags, base->list[0]->loc,
                      "peer() needs a symmetric tensor or a signal array parameter");
            return -1;
        }
        if (L->f->params[ps->index].mem == MEM_GLOBAL) {
            dsl_error(L->diags, base->list[0]->loc,
                      "peer() needs a symmetric tensor or a signal array; '%s' is an ordinary tensor",
                      ps->name);
            return -1;
        }
        LwVal r = lw_expr(L, base->list[1]);
        if (r.bad)
            return -1;
        if (r.type.rank != 0 || !dsl_is_int(r.type.dtype)) {
            dsl_error(L->diags, base->list[1]->loc, "peer rank must be an integer scalar");
            return -1;
        }
        r = lw_convert(L, r, DT_I32, base->loc);
        *peer_out = lw_materialize(L, &r, base->loc);
        base = base->list[0];
    }
    LwSym *s = lw_tensor_of(L, base);
    if (!s) {
        dsl_error(L->diags, e->loc, "expected a view of a tensor parameter");
        return -1;
    }
    const IrParam *p = &L->f->params[s->index];
    if (e->nlist != p->rank) {
        dsl_error(L->diags, e->loc, "tensor '%s' has %d dims but %d indices are given",
                  p->name, p->rank, e->nlist);
        return -1;
    }
    IrView v;
    memset(&v, 0, sizeof v);
    v.ndims = p->rank;
    bool ok = true;
    for (int d = 0; d < e->nlist; d++) {
        const Ast *it = e->list[d];
        char tb[96];
        switch (it->kind) {
        case AST_IDX_FULL:
            if (L->device) { /* the whole dim, its extent known at run time */
                LwVal z = lw_cval(DT_I32, 0, 0, false);
                v.d[d].kind = IDX_RANGE;
                v.d[d].val = lw_materialize(L, &z, it->loc);
                v.d[d].len = 0;
                v.d[d].lenv = lw_dim_value(L, s->index, d, it->loc);
                break;
            }
            if (p->dims[d] < 0) {
                dsl_error(L->diags, it->loc,
                          "':' needs a compile-time extent, but dim %d of '%s' is the symbolic size '%s'; use a range such as 0 +: BLOCK",
                          d, p->name, L->f->syms[-1 - p->dims[d]].name);
                ok = false;
                break;
            }
            {
                LwVal z = lw_cval(DT_I32, 0, 0, false);
                v.d[d].kind = IDX_RANGE;
                v.d[d].val = lw_materialize(L, &z, it->loc);
                v.d[d].len = (int32_t)p->dims[d];
            }
            break;
        case AST_IDX_RANGE: {
            LwVal st = lw_expr(L, it->a);
            int64_t len;
            if (st.bad) {
                ok = false;
                break;
            }
            if (st.type.rank != 0 || !dsl_is_int(st.type.dtype)) {
                tstr(&st.type, tb, sizeof tb);
                dsl_error(L->diags, it->a->loc, "range start must be an integer scalar, got %s", tb);
                ok = false;
                break;
            }
            if (L->device) { /* dynamic-shaped chunks are fine here */
                LwVal n = lw_expr(L, it->b);
                if (n.bad || n.type.rank != 0 || !dsl_is_int(n.type.dtype)) {
                    if (!n.bad)
                        dsl_error(L->diags, it->b->loc, "range length must be an integer scalar");
                    ok = false;
                    break;
                }
                n = lw_convert(L, n, DT_I64, it->loc);
                st = lw_convert(L, st, DT_I64, it->loc);
                v.d[d].kind = IDX_RANGE;
                v.d[d].val = lw_materialize(L, &st, it->loc);
                v.d[d].len = 0;
                v.d[d].lenv = lw_materialize(L, &n, it->loc);
                break;
            }
            if (!lw_const_int(L, it->b, "range length", &len)) {
                ok = false;
                break;
            }
            if (len <= 0 || len > DSL_MAX_TILE_ELEMS) {
                dsl_error(L->diags, it->b->loc, "range length %lld must be in 1..%d",
                          (long long)len, DSL_MAX_TILE_ELEMS);
                ok = false;
                break;
            }
            v.d[d].kind = IDX_RANGE;
            v.d[d].val = lw_materialize(L, &st, it->loc);
            v.d[d].len = (int32_t)len;
            break;
        }
        case AST_NONE:
            dsl_error(L->diags, it->loc, "None cannot index a tensor; add axes to the loaded tile instead");
            ok = false;
            break;
        default: {
            LwVal x = lw_expr(L, it);
            if (x.bad) {
                ok = false;
                break;
            }
            if (!dsl_is_int(x.type.dtype)) {
                tstr(&x.type, tb, sizeof tb);
                dsl_error(L->diags, it->loc, "index must be an integer, got %s", tb);
                ok = false;
                break;
            }
            if (L->device && x.type.rank != 0) {
                dsl_error(L->diags, it->loc, "device functions index buffers with scalars and ranges only");
                ok = false;
                break;
            }
            v.d[d].kind = x.type.rank == 0 ? IDX_SCALAR : IDX_TILE;
            v.d[d].val = lw_materialize(L, &x, it->loc);
            break;
        }
        }
    }
    if (!ok)
        return -1;
    IrType t = ir_scalar(p->dtype);
    if (L->device) {
        *param_out = s->index;
        *shape_out = t;
        return ir_view_new(L->f, &v);
    }
    ir_view_shape(L->f, &v, &t);
    int rank = 0;
    for (int d = 0; d < v.ndims; d++)
        rank += v.d[d].kind == IDX_RANGE ? 1
              : v.d[d].kind == IDX_TILE ? L->f->ins[v.d[d].val].type.rank : 0;
    if (rank > IR_MAX_RANK) {
        dsl_error(L->diags, e->loc, "view has more than %d dims", IR_MAX_RANK);
        return -1;
    }
    if (!lw_check_tile(L, &t, e->loc))
        return -1;
    *param_out = s->index;
    *shape_out = t;
    return ir_view_new(L->f, &v);
}

LwVal lw_store_value(Lw *L, LwVal v, int dtype, const IrType *shape, DslLoc loc)
{
    IrType bs;
    if (v.bad)
        return v;
    if (!lw_broadcast_shape(&v.type, shape, &bs) || !ir_shape_eq(&bs, shape)) {
        char a[96], b[96];
        IrType s2 = *shape;
        s2.dtype = (uint8_t)dtype;
        tstr(&v.type, a, sizeof a);
        tstr(&s2, b, sizeof b);
        dsl_error(L->diags, loc, "cannot store %s into a view of type %s", a, b);
        return lw_bad();
    }
    v = lw_convert(L, v, dtype, loc);
    lw_materialize(L, &v, loc);
    return v;
}

/* A bool mask for a view of shape `shape`. */
int lw_mask(Lw *L, const Ast *m, const IrType *shape)
{
    LwVal v = lw_expr(L, m);
    char tb[96];
    if (v.bad)
        return -2;
    if (v.type.dtype != DT_BOOL) {
        tstr(&v.type, tb, sizeof tb);
        dsl_error(L->diags, m->loc, "mask must be bool, got %s", tb);
        return -2;
    }
    IrType bs;
    if (!lw_broadcast_shape(&v.type, shape, &bs) || !ir_shape_eq(&bs, shape)) {
        IrType s2 = *shape;
        char sb[96];
        s2.dtype = DT_BOOL;
        tstr(&v.type, tb, sizeof tb);
        tstr(&s2, sb, sizeof sb);
        dsl_error(L->diags, m->loc, "mask of type %s does not broadcast to the view's shape %s", tb, sb);
        return -2;
    }
    return lw_materialize(L, &v, m->loc);
}

LwVal lw_load(Lw *L, const Ast *view, const Ast *pad, const Ast *mask,
                        DslLoc loc)
{
    int param, peer;
    IrType t;
    int vid = lw_view(L, view, &param, &t, &peer);
    if (vid < 0)
        return lw_bad();
    int mid = -1, pid = -1;
    if (mask && (mid = lw_mask(L, mask, &t)) == -2)
        return lw_bad();
    LwVal ptile = lw_bad();
    if (pad) {
        LwVal pv = lw_expr(L, pad);
        if (pv.bad)
            return pv;
        if (pv.type.rank != 0) { /* a pad tile (§7): see below */
            IrType bs;
            if (!lw_broadcast_shape(&pv.type, &t, &bs) || !ir_shape_eq(&bs, &t) ||
                bs.rank != t.rank) {
                char a[96], b[96];
                ir_type_str(&pv.type, a, sizeof a);
                ir_type_str(&t, b, sizeof b);
                dsl_error(L->diags, pad->loc, "pad %s does not broadcast to the view's shape %s", a, b);
                return lw_bad();
            }
            ptile = lw_convert(L, pv, t.dtype, pad->loc);
            pv = lw_cval(DT_I32, 0, 0, true);
        }
        pv = lw_convert(L, pv, t.dtype, pad->loc);
        pid = lw_materialize(L, &pv, pad->loc);
    }
    int id = lw_emit(L, IR_LOAD, t, loc);
    if (id >= 0) {
        IrInstr *in = &L->f->ins[id];
        in->param = param;
        in->view = vid;
        in->opnd[0] = mid;
        in->opnd[1] = pid;
        in->opnd[3] = peer;
    }
    if (ptile.bad)
        return lw_ival(id, t);
    /* A pad tile: the view loaded once more with pad 1; where the two loads
     * differ the element was out of bounds or masked off (NaN reads NaN in
     * both). */
    LwVal one = lw_convert(L, lw_cval(DT_I32, 1, 0, true), t.dtype, loc);
    int pid1 = lw_materialize(L, &one, loc);
    int id1 = lw_emit(L, IR_LOAD, t, loc);
    if (id1 >= 0) {
        IrInstr *in = &L->f->ins[id1];
        in->param = param;
        in->view = vid;
        in->opnd[0] = mid;
        in->opnd[1] = pid1;
        in->opnd[3] = peer;
    }
    LwVal l0 = lw_ival(id, t), l1 = lw_ival(id1, t);
    LwVal same = lw_binary(L, OP_EQ, l0, l1, loc);
    if (dsl_is_float(t.dtype))
        same = lw_binary(L, OP_LOR, same,
                         lw_binary(L, OP_LAND, lw_binary(L, OP_NE, l0, l0, loc),
                                   lw_binary(L, OP_NE, l1, l1, loc), loc), loc);
    return lw_select(L, same, l0, ptile, loc);
}

/* store(view, value, mask = m) and T[...] = value */
void lw_store(Lw *L, const Ast *view, LwVal val, const Ast *mask,
                        DslLoc loc)
{
    int param, peer;
    IrType t;
    if (val.bad)
        return;
    int vid = lw_view(L, view, &param, &t, &peer);
    if (vid < 0)
        return;
    int mid = -1;
    if (mask && (mid = lw_mask(L, mask, &t)) == -2)
        return;
    val = lw_store_value(L, val, t.dtype, &t, loc);
    if (val.bad)
        return;
    int id = lw_emit(L, IR_STORE, ir_scalar(DT_VOID), loc);
    if (id >= 0) {
        IrInstr *in = &L->f->ins[id];
        in->param = param;
        in->view = vid;
        in->opnd[0] = val.id;
        in->opnd[1] = mid;
        in->opnd[3] = peer;
        L->f->params[param].written = true;
    }
}

/* ------------------------------------------------------------ expressions */

static LwVal lower_ident(Lw *L, const Ast *e)
{
    LwSym *s = lw_lookup(L, e->name);
    if (!s) {
        if (dsl_dtype_from_name(e->name) >= 0)
            dsl_error(L->diags, e->loc, "dtype '%s' cannot be used as a value", e->name);
        else
            dsl_error(L->diags, e->loc, "unknown identifier '%s'", e->name);
        return lw_bad();
    }
    switch (s->kind) {
    case SYM_CONST: {
        LwVal v = lw_cval(s->c.dtype, s->c.i, s->c.f, true);
        v.c = s->c;
        return v;
    }
    case SYM_TENSOR:
        dsl_error(L->diags, e->loc,
                  "tensor '%s' cannot be used as a value; index it to load a tile (e.g. %s[i +: 16])",
                  s->name, s->name);
        return lw_bad();
    case SYM_SCALAR:
    case SYM_SIZE:
        if (L->in_grid || s->id < 0) {
            int id = lw_emit(L, s->kind == SYM_SCALAR ? IR_PARAM : IR_SIZE,
                             s->type, e->loc);
            if (id >= 0) {
                IrInstr *in = &L->f->ins[id];
                if (s->kind == SYM_SCALAR) {
                    in->param = s->index;
                } else {
                    in->param = L->f->syms[s->index].param;
                    in->attr = L->f->syms[s->index].dim;
                }
            }
            return lw_ival(id, s->type);
        }
        return lw_ival(s->id, s->type);
    case SYM_LET:
        return lw_ival(s->id, s->type);
    case SYM_VAR: {
        IrType t = L->f->vars[s->index].type;
        int id = lw_emit(L, IR_VGET, t, e->loc);
        if (id >= 0)
            L->f->ins[id].param = s->index;
        return lw_ival(id, t);
    }
    }
    return lw_bad();
}

/* x[:, None] on a tile: only ':' and None. */
static LwVal lower_tile_index(Lw *L, const Ast *e)
{
    LwVal v = lw_expr(L, e->a);
    if (v.bad)
        return v;
    IrType t = v.type;
    t.rank = 0;
    int src = 0;
    for (int i = 0; i < e->nlist; i++) {
        const Ast *it = e->list[i];
        if (it->kind == AST_IDX_FULL) {
            if (src >= v.type.rank) {
                dsl_error(L->diags, it->loc, "too many ':' for a tile of rank %d", v.type.rank);
                return lw_bad();
            }
            t.shape[t.rank++] = v.type.shape[src++];
        } else if (it->kind == AST_NONE) {
            if (t.rank >= IR_MAX_RANK) {
                dsl_error(L->diags, it->loc, "too many dims (limit %d)", IR_MAX_RANK);
                return lw_bad();
            }
            t.shape[t.rank++] = 1;
        } else {
            dsl_error(L->diags, it->loc, "tiles can only be indexed with ':' and None");
            return lw_bad();
        }
    }
    if (src != v.type.rank) {
        dsl_error(L->diags, e->loc, "indexing a tile of rank %d needs %d ':'",
                  v.type.rank, v.type.rank);
        return lw_bad();
    }
    if (lw_is_const(&v) && t.rank == 0)
        return v;
    int sid = lw_materialize(L, &v, e->loc);
    int id = lw_emit(L, IR_RESHAPE, t, e->loc);
    if (id >= 0)
        L->f->ins[id].opnd[0] = sid;
    return lw_ival(id, t);
}

LwVal lw_expr(Lw *L, const Ast *e)
{
    switch (e->kind) {
    case AST_INT:
        return lw_cval(e->is_i64 ? DT_I64 : DT_I32, e->ival, 0, true);
    case AST_FLOAT:
        return lw_cval(DT_F32, 0, e->fval, true);
    case AST_BOOL:
        return lw_cval(DT_BOOL, e->ival != 0, 0, true);
    case AST_IDENT:
        return lower_ident(L, e);
    case AST_UNARY:
        return lw_unary(L, e->op, lw_expr(L, e->a), e->loc);
    case AST_BINARY: {
        LwVal a = lw_expr(L, e->a);
        LwVal b = lw_expr(L, e->b);
        return lw_binary(L, e->op, a, b, e->loc);
    }
    case AST_CAST: {
        LwVal v = lw_expr(L, e->a);
        if (v.bad)
            return v;
        if (e->ival <= DT_VOID || e->ival >= DT_COUNT) {
            dsl_error(L->diags, e->loc, "bad cast target");
            return lw_bad();
        }
        return lw_convert(L, v, (int)e->ival, e->loc);
    }
    case AST_CALL:
        return lw_call(L, e);
    case AST_INDEX:
        if (L->device && (lw_tensor_of(L, e->a) ||
                          (e->a->kind == AST_CALL && strcmp(e->a->name, "peer") == 0))) {
            dsl_error(L->diags, e->loc, "device functions do not load tiles; use copy(dst, src) or launch a kernel");
            return lw_bad();
        }
        if (lw_tensor_of(L, e->a) ||
            (e->a->kind == AST_CALL && strcmp(e->a->name, "peer") == 0))
            return lw_load(L, e, NULL, NULL, e->loc);
        return lower_tile_index(L, e);
    case AST_NONE:
        dsl_error(L->diags, e->loc, "None is only allowed as an index");
        return lw_bad();
    case AST_IDX_RANGE:
    case AST_IDX_FULL:
        dsl_error(L->diags, e->loc, "a range is only allowed inside a view's brackets");
        return lw_bad();
    case AST_NAMED_ARG:
        dsl_error(L->diags, e->loc, "named argument '%s' outside a call", e->name);
        return lw_bad();
    case AST_STRING:
        dsl_error(L->diags, e->loc, "a string literal is only allowed as an argument of print, assert or static_assert");
        return lw_bad();
    case AST_TUPLE:
        dsl_error(L->diags, e->loc, "a tuple (a, b, ...) is only allowed as the first argument of reduce or scan");
        return lw_bad();
    default:
        dsl_error(L->diags, e->loc, "expected an expression");
        return lw_bad();
    }
}

void lw_stmt_call(Lw *L, const Ast *e)
{
    if (e->kind == AST_CALL) {
        lw_call(L, e);
        return;
    }
    LwVal v = lw_expr(L, e);
    (void)v;
}
