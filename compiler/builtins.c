/* builtins.c — checking and lowering of the builtin functions of
 * LANGUAGE.md §4 (program, creation, shape, math, reduce, matmul, atomics,
 * load/store). One table row per builtin: arity and accepted named args. */
#include "lower.h"

#include <string.h>

typedef enum {
    B_PID, B_NPROG, B_CDIV, B_ARANGE, B_ZEROS, B_FULL, B_RESHAPE, B_TRANS,
    B_PERMUTE, B_BROADCAST, B_MATH, B_FMA, B_MAXIMUM, B_MINIMUM, B_WHERE,
    B_REDUCE, B_CUMSUM, B_DOT, B_ATOMIC, B_LOAD, B_STORE, B_RANK, B_PEER,
    B_NOTIFY, B_WAIT, B_GROUP,
} BuiltinKind;

static const struct Builtin {
    const char *name;   /* source name */
    BuiltinKind kind;   /* handler */
    int min, max;       /* positional arguments (-1: any number) */
    const char *named;  /* accepted named args, space separated */
    int sub;            /* IR op / reduce kind / atomic kind */
} builtins[] = {
    {"program_id", B_PID, 1, 1, "", 0},
    {"num_programs", B_NPROG, 1, 1, "", 0},
    {"cdiv", B_CDIV, 2, 2, "", 0},
    {"arange", B_ARANGE, 1, 2, "", 0},
    {"zeros", B_ZEROS, 2, -1, "", 0},
    {"full", B_FULL, 3, -1, "", 0},
    {"reshape", B_RESHAPE, 2, -1, "", 0},
    {"trans", B_TRANS, 1, 1, "", 0},
    {"permute", B_PERMUTE, 2, -1, "", 0},
    {"broadcast", B_BROADCAST, 2, -1, "", 0},
    {"exp", B_MATH, 1, 1, "", IR_EXP},
    {"exp2", B_MATH, 1, 1, "", IR_EXP2},
    {"log", B_MATH, 1, 1, "", IR_LOG},
    {"log2", B_MATH, 1, 1, "", IR_LOG2},
    {"sqrt", B_MATH, 1, 1, "", IR_SQRT},
    {"rsqrt", B_MATH, 1, 1, "", IR_RSQRT},
    {"sin", B_MATH, 1, 1, "", IR_SIN},
    {"cos", B_MATH, 1, 1, "", IR_COS},
    {"tanh", B_MATH, 1, 1, "", IR_TANH},
    {"erf", B_MATH, 1, 1, "", IR_ERF},
    {"abs", B_MATH, 1, 1, "", IR_ABS},
    {"floor", B_MATH, 1, 1, "", IR_FLOOR},
    {"ceil", B_MATH, 1, 1, "", IR_CEIL},
    {"sigmoid", B_MATH, 1, 1, "", IR_SIGMOID},
    {"fma", B_FMA, 3, 3, "", 0},
    {"maximum", B_MAXIMUM, 2, 2, "", 0},
    {"minimum", B_MINIMUM, 2, 2, "", 0},
    {"where", B_WHERE, 3, 3, "", 0},
    {"sum", B_REDUCE, 1, 2, "keep_dims", RED_SUM},
    {"max", B_REDUCE, 1, 2, "keep_dims", RED_MAX},
    {"min", B_REDUCE, 1, 2, "keep_dims", RED_MIN},
    {"argmax", B_REDUCE, 1, 2, "keep_dims", RED_ARGMAX},
    {"argmin", B_REDUCE, 1, 2, "keep_dims", RED_ARGMIN},
    {"cumsum", B_CUMSUM, 2, 2, "reverse", 0},
    {"cumprod", B_CUMSUM, 2, 2, "reverse", 1},
    {"dot", B_DOT, 2, 3, "precision", 0},
    {"atomic_add", B_ATOMIC, 2, 2, "mask sem scope", ATOM_ADD},
    {"atomic_max", B_ATOMIC, 2, 2, "mask sem scope", ATOM_MAX},
    {"atomic_min", B_ATOMIC, 2, 2, "mask sem scope", ATOM_MIN},
    {"atomic_xchg", B_ATOMIC, 2, 2, "mask sem scope", ATOM_XCHG},
    {"atomic_cas", B_ATOMIC, 3, 3, "mask sem scope", ATOM_CAS},
    {"atomic_and", B_ATOMIC, 2, 2, "mask sem scope", ATOM_AND},
    {"atomic_or", B_ATOMIC, 2, 2, "mask sem scope", ATOM_OR},
    {"atomic_xor", B_ATOMIC, 2, 2, "mask sem scope", ATOM_XOR},
    {"load", B_LOAD, 1, 1, "pad mask", 0},
    {"store", B_STORE, 2, 2, "mask", 0},
    {"rank", B_RANK, 0, 1, "", IR_RANK},   /* rank(g): in group g */
    {"world", B_RANK, 0, 1, "", IR_WORLD},
    {"group", B_GROUP, 2, 2, "", 0},       /* group(color, key) */
    {"peer", B_PEER, 2, 2, "", 0},
    {"notify", B_NOTIFY, 2, 2, "op", 0},
    {"wait", B_WAIT, 1, 1, "", 0},
};

static bool named_ok(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && strncmp(p, name, n) == 0)
            return true;
        p += k + (e ? 1 : 0);
    }
    return false;
}

static LwVal emit1(Lw *L, int op, IrType t, int a, DslLoc loc)
{
    int id = lw_emit(L, op, t, loc);
    if (id >= 0)
        L->f->ins[id].opnd[0] = a;
    return lw_ival(id, t);
}

static void tstr(const IrType *t, char *b, size_t n) { ir_type_str(t, b, n); }

/* A tile operand (scalars allowed where `scalar_ok`). */
static bool need_tile(Lw *L, const char *fn, LwVal *v, const Ast *e)
{
    if (v->bad)
        return false;
    if (v->type.rank == 0) {
        dsl_error(L->diags, e->loc, "%s needs a tile, got a scalar", fn);
        return false;
    }
    return true;
}

/* Extents s0, s1, ... from args[from..n). */
static bool extents(Lw *L, Ast **args, int from, int n, IrType *t)
{
    if (n - from > IR_MAX_RANK) {
        dsl_error(L->diags, args[from]->loc, "too many dims (limit %d)", IR_MAX_RANK);
        return false;
    }
    t->rank = 0;
    for (int i = from; i < n; i++) {
        int64_t x;
        if (!lw_const_int(L, args[i], "tile extent", &x))
            return false;
        if (x <= 0 || x > DSL_MAX_TILE_ELEMS) {
            dsl_error(L->diags, args[i]->loc, "tile extent %lld must be in 1..%d",
                      (long long)x, DSL_MAX_TILE_ELEMS);
            return false;
        }
        t->shape[t->rank++] = (int32_t)x;
    }
    return lw_check_tile(L, t, args[from]->loc);
}

static int dtype_arg(Lw *L, const Ast *e)
{
    int dt = e->kind == AST_IDENT ? dsl_dtype_from_name(e->name) : -1;
    if (dt < 0)
        dsl_error(L->diags, e->loc, "expected a dtype name (f32, i32, ...)");
    return dt;
}

bool lw_axis_arg(Lw *L, const Ast *e, int rank, int *axis)
{
    int64_t a;
    if (!lw_const_int(L, e, "axis", &a))
        return false;
    if (a < -rank || a >= rank) {
        dsl_error(L->diags, e->loc, "axis %lld is out of range for a tile of rank %d",
                  (long long)a, rank);
        return false;
    }
    *axis = (int)(a < 0 ? a + rank : a);
    return true;
}

static LwVal b_reduce(Lw *L, const struct Builtin *b, Ast **args, int n,
                      bool kd, DslLoc loc)
{
    LwVal x = lw_expr(L, args[0]);
    if (x.bad)
        return x;
    int axis = -1;
    if (n == 2 && !lw_axis_arg(L, args[1], x.type.rank ? x.type.rank : 1, &axis))
        return lw_bad();
    int dt = x.type.dtype;
    if (b->sub == RED_ARGMAX || b->sub == RED_ARGMIN)
        dt = DT_I32;
    else if (b->sub == RED_SUM && !dsl_is_float(dt) && dsl_dtype_bytes(dt) < 4)
        dt = DT_I32;
    else if (b->sub == RED_SUM && dt == DT_BOOL)
        dt = DT_I32;
    if (x.type.rank == 0) {
        if (b->sub == RED_ARGMAX || b->sub == RED_ARGMIN)
            return lw_cval(DT_I32, 0, 0, false);
        return lw_convert(L, x, dt, loc);
    }
    IrType t = ir_scalar(dt);
    if (axis >= 0) {
        for (int i = 0; i < x.type.rank; i++)
            if (i != axis)
                t.shape[t.rank++] = x.type.shape[i];
    }
    int id = lw_emit(L, IR_REDUCE, t, loc);
    if (id >= 0) {
        L->f->ins[id].opnd[0] = lw_materialize(L, &x, loc);
        L->f->ins[id].attr = b->sub;
        L->f->ins[id].axis = axis;
    }
    if (!kd || id < 0)
        return lw_ival(id, t);
    /* keep_dims: the reduced axes stay with extent 1 */
    IrType kt = x.type;
    kt.dtype = (uint8_t)dt;
    for (int i = 0; i < kt.rank; i++)
        if (axis < 0 || i == axis)
            kt.shape[i] = 1;
    return emit1(L, IR_RESHAPE, kt, id, loc);
}

static LwVal b_dot(Lw *L, Ast **args, int n, DslLoc loc)
{
    LwVal a = lw_expr(L, args[0]), bb = lw_expr(L, args[1]);
    char ta[96], tb[96];
    if (!need_tile(L, "dot", &a, args[0]) || !need_tile(L, "dot", &bb, args[1]))
        return lw_bad();
    /* 1-D operands (§7): [K] x [K, N] -> [N], [M, K] x [K] -> [M], as a
     * 2-D product with an extent-1 dim that is dropped again */
    int vec = a.type.rank == 1 && bb.type.rank == 2 ? 1
            : a.type.rank == 2 && bb.type.rank == 1 ? 2 : 0;
    if (vec) {
        LwVal *v = vec == 1 ? &a : &bb;
        IrType t2 = v->type;
        t2.rank = 2;
        t2.shape[vec == 1 ? 0 : 1] = 1;
        t2.shape[vec == 1 ? 1 : 0] = v->type.shape[0];
        int id = lw_materialize(L, v, loc);
        *v = emit1(L, IR_RESHAPE, t2, id, loc);
    }
    tstr(&a.type, ta, sizeof ta);
    tstr(&bb.type, tb, sizeof tb);
    int r = a.type.rank;
    if ((r != 2 && r != 3) || bb.type.rank != r) {
        dsl_error(L->diags, loc, "dot needs two 2-D or two 3-D tiles, got %s and %s", ta, tb);
        return lw_bad();
    }
    if (a.type.shape[r - 1] != bb.type.shape[r - 2] ||
        (r == 3 && a.type.shape[0] != bb.type.shape[0])) {
        dsl_error(L->diags, loc, "dot shape mismatch: %s x %s", ta, tb);
        return lw_bad();
    }
    bool fa = dsl_is_float(a.type.dtype), fb = dsl_is_float(bb.type.dtype);
    if (fa != fb || a.type.dtype == DT_BOOL || bb.type.dtype == DT_BOOL) {
        dsl_error(L->diags, loc, "dot operands must both be float or both integer, got %s and %s", ta, tb);
        return lw_bad();
    }
    int dt;
    if (fa)
        dt = a.type.dtype == DT_F64 || bb.type.dtype == DT_F64 ? DT_F64 : DT_F32;
    else
        dt = a.type.dtype == DT_I64 || bb.type.dtype == DT_I64 ||
                     a.type.dtype == DT_U64 || bb.type.dtype == DT_U64
                 ? DT_I64 : DT_I32;
    if (dt == DT_F64 && (a.type.dtype != DT_F64 || bb.type.dtype != DT_F64)) {
        a = lw_convert(L, a, DT_F64, loc);
        bb = lw_convert(L, bb, DT_F64, loc);
    }
    IrType t = a.type;
    t.dtype = (uint8_t)dt;
    t.shape[r - 1] = bb.type.shape[r - 1];
    if (!lw_check_tile(L, &t, loc))
        return lw_bad();
    int acc = -1;
    if (n == 3) {
        LwVal c = lw_expr(L, args[2]);
        if (c.bad)
            return c;
        if (vec && c.type.rank == 1) {
            int id = lw_materialize(L, &c, loc);
            IrType ct = t;
            ct.dtype = c.type.dtype;
            c = emit1(L, IR_RESHAPE, ct, id, loc);
        }
        IrType bs;
        if (!lw_broadcast_shape(&c.type, &t, &bs) || !ir_shape_eq(&bs, &t)) {
            char tc[96], tt[96];
            tstr(&c.type, tc, sizeof tc);
            tstr(&t, tt, sizeof tt);
            dsl_error(L->diags, args[2]->loc, "dot accumulator %s does not match the result %s", tc, tt);
            return lw_bad();
        }
        c = lw_convert(L, c, dt, loc);
        if (c.type.rank != t.rank || !ir_shape_eq(&c.type, &t)) {
            int cid = lw_materialize(L, &c, loc);
            c = emit1(L, IR_BCAST, t, cid, loc);
        }
        acc = lw_materialize(L, &c, loc);
    }
    int id = lw_emit(L, IR_DOT, t, loc);
    if (id >= 0) {
        L->f->ins[id].opnd[0] = a.id;
        L->f->ins[id].opnd[1] = bb.id;
        L->f->ins[id].opnd[2] = acc;
    }
    if (vec) {
        IrType t1 = ir_scalar(t.dtype);
        t1.rank = 1;
        t1.shape[0] = t.shape[vec == 1 ? 1 : 0];
        return emit1(L, IR_RESHAPE, t1, id, loc);
    }
    return lw_ival(id, t);
}

static LwVal b_math(Lw *L, int op, Ast **args, DslLoc loc)
{
    LwVal x = lw_expr(L, args[0]);
    if (x.bad)
        return x;
    if (!dsl_is_float(x.type.dtype)) {
        if (op == IR_ABS && dsl_is_int(x.type.dtype)) {
            if (lw_is_const(&x)) {
                x.c.i = x.c.i < 0 ? -x.c.i : x.c.i;
                return x;
            }
            return emit1(L, op, x.type, x.id, loc);
        }
        if ((op == IR_FLOOR || op == IR_CEIL) && dsl_is_int(x.type.dtype))
            return x;
        x = lw_convert(L, x, DT_F32, loc);
    }
    int id = lw_materialize(L, &x, loc);
    IrType t = x.type;
    return emit1(L, op, t, id, loc);
}

/* Operands of an elementwise builtin promoted to one dtype and shape. */
static bool same_dtype(Lw *L, LwVal *v, int n, DslLoc loc, bool want_float,
                       IrType *shape)
{
    int dt = v[0].type.dtype;
    LwVal acc = v[0];
    *shape = v[0].type;
    for (int i = 1; i < n; i++) {
        dt = lw_promote(&acc, &v[i]);
        acc.type.dtype = (uint8_t)dt;
        acc.weak = acc.weak && v[i].weak;
        if (!lw_broadcast_shape(shape, &v[i].type, shape)) {
            char a[96], b[96];
            tstr(&v[0].type, a, sizeof a);
            tstr(&v[i].type, b, sizeof b);
            dsl_error(L->diags, loc, "tile shape mismatch: %s and %s", a, b);
            return false;
        }
    }
    if (want_float && !dsl_is_float(dt))
        dt = DT_F32;
    if (dt == DT_BOOL && !want_float)
        dt = DT_I32;
    for (int i = 0; i < n; i++) {
        v[i] = lw_convert(L, v[i], dt, loc);
        lw_materialize(L, &v[i], loc);
    }
    shape->dtype = (uint8_t)dt;
    return lw_check_tile(L, shape, loc);
}

static LwVal b_atomic(Lw *L, const struct Builtin *b, Ast **args,
                      const Ast *mask, DslLoc loc)
{
    int param, peer;
    IrType t;
    if (args[0]->kind != AST_INDEX) {
        dsl_error(L->diags, args[0]->loc, "%s needs a view of a tensor as its first argument", b->name);
        return lw_bad();
    }
    int vid = lw_view(L, args[0], &param, &t, &peer);
    if (vid < 0)
        return lw_bad();
    int dt = t.dtype;
    if (b->sub >= ATOM_AND && !dsl_is_int(dt)) {
        dsl_error(L->diags, loc, "%s needs an integer tensor, got %s", b->name,
                  dsl_dtype_name(dt));
        return lw_bad();
    }
    if (dt != DT_I32 && dt != DT_U32 && dt != DT_I64 && dt != DT_U64 &&
        dt != DT_F32 && dt != DT_F64 &&
        !(b->sub == ATOM_ADD && (dt == DT_F16 || dt == DT_BF16))) {
        dsl_error(L->diags, loc, "%s on %s is not supported (use i32, u32, i64, u64, f32 or f64; atomic_add also f16, bf16)",
                  b->name, dsl_dtype_name(dt));
        return lw_bad();
    }
    int mid = -1, cmp = -1;
    if (mask && (mid = lw_mask(L, mask, &t)) == -2)
        return lw_bad();
    if (b->sub == ATOM_CAS) {
        LwVal c = lw_store_value(L, lw_expr(L, args[1]), dt, &t, args[1]->loc);
        if (c.bad)
            return c;
        cmp = c.id;
    }
    LwVal v = lw_store_value(L, lw_expr(L, args[b->sub == ATOM_CAS ? 2 : 1]),
                             dt, &t, loc);
    if (v.bad)
        return v;
    int id = lw_emit(L, IR_ATOMIC, t, loc);
    if (id >= 0) {
        IrInstr *in = &L->f->ins[id];
        in->attr = b->sub;
        in->param = param;
        in->view = vid;
        in->opnd[0] = v.id;
        in->opnd[1] = cmp;
        in->opnd[2] = mid;
        in->opnd[3] = peer;
        L->f->params[param].written = true;
    }
    return lw_ival(id, t);
}

/* notify(S[i], v [, op = set|add]) and wait(S[i] >= v) / wait(S[i] == v) */
static LwVal b_signal(Lw *L, const struct Builtin *b, Ast **args,
                      const Ast *op_arg, DslLoc loc)
{
    const Ast *view = args[0], *val = b->kind == B_NOTIFY ? args[1] : NULL;
    int attr = 0;
    if (b->kind == B_WAIT) {
        const Ast *c = args[0];
        if (c->kind != AST_BINARY || (c->op != OP_GE && c->op != OP_EQ) ||
            c->a->kind != AST_INDEX) {
            dsl_error(L->diags, c->loc, "wait needs a condition 'S[i] >= v' or 'S[i] == v' on a signal array");
            return lw_bad();
        }
        view = c->a;
        val = c->b;
        attr = c->op == OP_EQ ? WAIT_EQ : WAIT_GE;
    } else if (op_arg) {
        if (op_arg->kind != AST_IDENT ||
            (strcmp(op_arg->name, "set") && strcmp(op_arg->name, "add"))) {
            dsl_error(L->diags, op_arg->loc, "notify: op must be 'set' or 'add'");
            return lw_bad();
        }
        attr = strcmp(op_arg->name, "add") == 0 ? SIG_ADD : SIG_SET;
    }
    if (view->kind != AST_INDEX) {
        dsl_error(L->diags, view->loc, "%s needs a view of a signal array", b->name);
        return lw_bad();
    }
    int param, peer;
    IrType t;
    int vid = lw_view(L, view, &param, &t, &peer);
    if (vid < 0)
        return lw_bad();
    if (L->f->params[param].mem != MEM_SIGNAL) {
        dsl_error(L->diags, view->loc, "%s needs a signal array; '%s' is a tensor",
                  b->name, L->f->params[param].name);
        return lw_bad();
    }
    LwVal v = lw_expr(L, val);
    if (v.bad)
        return v;
    if (v.type.rank != 0 || !dsl_is_int(v.type.dtype)) {
        dsl_error(L->diags, val->loc, "signal values are integer scalars");
        return lw_bad();
    }
    v = lw_convert(L, v, DT_U64, loc);
    int vv = lw_materialize(L, &v, loc);
    int id = lw_emit(L, b->kind == B_NOTIFY ? IR_NOTIFY : IR_WAIT,
                     ir_scalar(DT_VOID), loc);
    if (id >= 0) {
        IrInstr *in = &L->f->ins[id];
        in->param = param;
        in->view = vid;
        in->opnd[0] = vv;
        in->opnd[3] = peer;
        in->attr = attr;
        if (b->kind == B_NOTIFY)
            L->f->params[param].written = true;
    }
    return lw_cval(DT_VOID, 0, 0, false);
}

static LwVal b_shape(Lw *L, const struct Builtin *b, Ast **args, int n,
                     DslLoc loc)
{
    LwVal x = lw_expr(L, args[0]);
    char tx[96];
    if (x.bad)
        return x;
    tstr(&x.type, tx, sizeof tx);
    IrType t = x.type;
    int op = IR_RESHAPE;
    uint8_t perm[IR_MAX_RANK] = {0};
    if (b->kind == B_TRANS) {
        if (x.type.rank != 2) {
            dsl_error(L->diags, loc, "trans needs a 2-D tile, got %s", tx);
            return lw_bad();
        }
        op = IR_PERMUTE;
        perm[0] = 1;
        t.shape[0] = x.type.shape[1];
        t.shape[1] = x.type.shape[0];
    } else if (b->kind == B_PERMUTE) {
        if (n - 1 != x.type.rank) {
            dsl_error(L->diags, loc, "permute of %s needs %d axes, got %d", tx,
                      x.type.rank, n - 1);
            return lw_bad();
        }
        bool seen[IR_MAX_RANK] = {false};
        for (int i = 1; i < n; i++) {
            int ax;
            if (!lw_axis_arg(L, args[i], x.type.rank, &ax))
                return lw_bad();
            if (seen[ax]) {
                dsl_error(L->diags, args[i]->loc, "permute: axis %d given twice", ax);
                return lw_bad();
            }
            seen[ax] = true;
            perm[i - 1] = (uint8_t)ax;
            t.shape[i - 1] = x.type.shape[ax];
        }
        op = IR_PERMUTE;
    } else {
        if (!extents(L, args, 1, n, &t))
            return lw_bad();
        if (b->kind == B_RESHAPE && ir_numel(&t) != ir_numel(&x.type)) {
            dsl_error(L->diags, loc, "reshape of %s (%lld elements) to %lld elements",
                      tx, (long long)ir_numel(&x.type), (long long)ir_numel(&t));
            return lw_bad();
        }
        if (b->kind == B_BROADCAST) {
            IrType bs;
            if (!lw_broadcast_shape(&x.type, &t, &bs) || !ir_shape_eq(&bs, &t)) {
                dsl_error(L->diags, loc, "cannot broadcast %s to the requested shape", tx);
                return lw_bad();
            }
            op = IR_BCAST;
        }
    }
    int sid = lw_materialize(L, &x, loc);
    LwVal r = emit1(L, op, t, sid, loc);
    if (r.id >= 0 && op == IR_PERMUTE)
        memcpy(L->f->ins[r.id].perm, perm, sizeof perm);
    return r;
}

LwVal lw_builtin(Lw *L, const Ast *e)
{
    const struct Builtin *b = NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, e->name) == 0)
            b = &builtins[i];
    LwVal r2;
    if (!b && lw_call2(L, e, &r2))
        return r2;
    const AstFunc *h = b ? NULL : lw_helper(L, e->name);
    if (h) {
        if (L->in_grid) {
            dsl_error(L->diags, e->loc, "helper '%s' cannot be called in grid(...)", e->name);
            return lw_bad();
        }
        return lw_inline(L, e, h);
    }
    if (!b) {
        LwSym *s = lw_lookup(L, e->name);
        if (s)
            dsl_error(L->diags, e->loc, "'%s' is not a function", e->name);
        else
            dsl_error(L->diags, e->loc, "unknown builtin '%s'", e->name);
        return lw_bad();
    }
    Ast *args[16];
    const Ast *pad = NULL, *mask = NULL, *op_arg = NULL, *flag = NULL;
    int n = 0;
    for (int i = 0; i < e->nlist; i++) {
        Ast *a = e->list[i];
        if (a->kind == AST_NAMED_ARG) {
            if (!named_ok(b->named, a->name)) {
                dsl_error(L->diags, a->loc, "'%s' has no argument named '%s'", b->name, a->name);
                return lw_bad();
            }
            if (strcmp(a->name, "pad") == 0)
                pad = a->a;
            else if (strcmp(a->name, "mask") == 0)
                mask = a->a;
            else if (strcmp(a->name, "op") == 0)
                op_arg = a->a;
            else if (strcmp(a->name, "sem") == 0 || strcmp(a->name, "scope") == 0) {
                static const char *const ok[2][4] = {{"relaxed", "acquire", "release", "acq_rel"},
                                                     {"cta", "gpu", "sys", NULL}};
                int w = a->name[1] == 'e' ? 0 : 1;
                bool good = false;
                for (int j = 0; j < 4 && a->a->kind == AST_IDENT; j++)
                    good |= ok[w][j] && strcmp(ok[w][j], a->a->name) == 0;
                if (!good) {
                    dsl_error(L->diags, a->a->loc, w == 0 ? "sem must be relaxed, acquire, release or acq_rel"
                                                          : "scope must be cta, gpu or sys");
                    return lw_bad();
                }
                /* every atomic is acq_rel at gpu (or system, for peers)
                 * scope: at least as strong as any request */
            } else /* keep_dims / reverse / precision */
                flag = a->a;
            continue;
        }
        if (n == 16) {
            dsl_error(L->diags, a->loc, "too many arguments");
            return lw_bad();
        }
        args[n++] = a;
    }
    if (n < b->min || (b->max >= 0 && n > b->max)) {
        if (b->min == b->max)
            dsl_error(L->diags, e->loc, "'%s' takes %d argument%s, got %d", b->name,
                      b->min, b->min == 1 ? "" : "s", n);
        else if (b->max < 0)
            dsl_error(L->diags, e->loc, "'%s' takes at least %d arguments, got %d",
                      b->name, b->min, n);
        else
            dsl_error(L->diags, e->loc, "'%s' takes %d to %d arguments, got %d",
                      b->name, b->min, b->max, n);
        return lw_bad();
    }
    if (L->device && b->kind != B_CDIV && b->kind != B_MAXIMUM &&
        b->kind != B_MINIMUM && b->kind != B_RANK && b->kind != B_NOTIFY &&
        b->kind != B_WAIT && b->kind != B_GROUP) {
        dsl_error(L->diags, e->loc, "'%s' is a kernel builtin; it cannot be used in a device function",
                  b->name);
        return lw_bad();
    }
    if (L->in_grid && b->kind != B_CDIV && b->kind != B_MAXIMUM &&
        b->kind != B_MINIMUM && !(b->kind == B_RANK && n == 0)) {
        if (b->kind == B_RANK)
            dsl_error(L->diags, e->loc, "%s(g) of a group cannot be used in grid(...); %s() can",
                      b->name, b->name);
        else
            dsl_error(L->diags, e->loc, "'%s' cannot be used in grid(...)", b->name);
        return lw_bad();
    }
    switch (b->kind) {
    case B_PID:
    case B_NPROG: {
        int64_t ax;
        if (!lw_const_int(L, args[0], "axis", &ax))
            return lw_bad();
        if (ax < 0 || ax > 2) {
            dsl_error(L->diags, args[0]->loc, "axis %lld is out of range (0..2)", (long long)ax);
            return lw_bad();
        }
        int id = lw_emit(L, b->kind == B_PID ? IR_PID : IR_NPROG, ir_scalar(DT_I32), e->loc);
        if (id >= 0)
            L->f->ins[id].attr = (int32_t)ax;
        return lw_ival(id, ir_scalar(DT_I32));
    }
    case B_CDIV: {
        LwVal a = lw_expr(L, args[0]), d = lw_expr(L, args[1]);
        if (a.bad || d.bad)
            return lw_bad();
        if (!dsl_is_int(a.type.dtype) || !dsl_is_int(d.type.dtype)) {
            dsl_error(L->diags, e->loc, "cdiv needs integer operands");
            return lw_bad();
        }
        LwVal one = lw_cval(DT_I32, 1, 0, true);
        LwVal s = lw_binary(L, OP_SUB, lw_binary(L, OP_ADD, a, d, e->loc), one, e->loc);
        return lw_binary(L, OP_DIV, s, d, e->loc);
    }
    case B_ARANGE: {
        int64_t lo = 0, hi;
        if (!lw_const_int(L, args[0], "arange bound", n == 1 ? &hi : &lo))
            return lw_bad();
        if (n == 2 && !lw_const_int(L, args[1], "arange bound", &hi))
            return lw_bad();
        if (hi - lo <= 0 || hi - lo > DSL_MAX_TILE_ELEMS || lo < INT32_MIN || hi > INT32_MAX) {
            dsl_error(L->diags, e->loc, "arange(%lld, %lld) must have 1..%d elements",
                      (long long)lo, (long long)hi, DSL_MAX_TILE_ELEMS);
            return lw_bad();
        }
        int32_t len = (int32_t)(hi - lo);
        IrType t = ir_tile(DT_I32, 1, &len);
        int id = lw_emit(L, IR_ARANGE, t, e->loc);
        if (id >= 0)
            L->f->ins[id].ival = lo;
        return lw_ival(id, t);
    }
    case B_ZEROS:
    case B_FULL: {
        int dt = dtype_arg(L, args[0]);
        if (dt < 0)
            return lw_bad();
        IrType t = ir_scalar(dt);
        if (!extents(L, args, b->kind == B_ZEROS ? 1 : 2, n, &t))
            return lw_bad();
        LwVal v = b->kind == B_ZEROS ? lw_cval(DT_I32, 0, 0, true) : lw_expr(L, args[1]);
        if (v.bad)
            return v;
        if (v.type.rank != 0) {
            dsl_error(L->diags, args[1]->loc, "full needs a scalar value");
            return lw_bad();
        }
        v = lw_convert(L, v, dt, e->loc);
        if (lw_is_const(&v)) {
            int id = lw_emit(L, IR_CONST, t, e->loc);
            if (id >= 0) {
                L->f->ins[id].ival = v.c.i;
                L->f->ins[id].fval = v.c.f;
            }
            return lw_ival(id, t);
        }
        return emit1(L, IR_BCAST, t, v.id, e->loc);
    }
    case B_RESHAPE:
    case B_TRANS:
    case B_PERMUTE:
    case B_BROADCAST:
        return b_shape(L, b, args, n, e->loc);
    case B_MATH:
        return b_math(L, b->sub, args, e->loc);
    case B_FMA:
    case B_MAXIMUM:
    case B_MINIMUM: {
        LwVal v[3];
        int k = b->kind == B_FMA ? 3 : 2;
        for (int i = 0; i < k; i++)
            if ((v[i] = lw_expr(L, args[i])).bad)
                return lw_bad();
        if (k == 2 && lw_is_const(&v[0]) && lw_is_const(&v[1]) && !L->in_grid) {
            /* fold min/max of compile-time values: keep them compile-time */
        }
        IrType t;
        if (!same_dtype(L, v, k, e->loc, b->kind == B_FMA, &t))
            return lw_bad();
        int op = b->kind == B_FMA ? IR_FMA : b->kind == B_MAXIMUM ? IR_MAX : IR_MIN;
        int id = lw_emit(L, op, t, e->loc);
        if (id >= 0)
            for (int i = 0; i < k; i++)
                L->f->ins[id].opnd[i] = v[i].id;
        return lw_ival(id, t);
    }
    case B_WHERE: {
        LwVal c = lw_expr(L, args[0]);
        LwVal v[2] = {lw_expr(L, args[1]), lw_expr(L, args[2])};
        if (c.bad || v[0].bad || v[1].bad)
            return lw_bad();
        if (c.type.dtype != DT_BOOL) {
            char tc[96];
            tstr(&c.type, tc, sizeof tc);
            dsl_error(L->diags, args[0]->loc, "where: the condition must be bool, got %s", tc);
            return lw_bad();
        }
        IrType t;
        bool both_bool = v[0].type.dtype == DT_BOOL && v[1].type.dtype == DT_BOOL;
        if (both_bool) {
            t = v[0].type;
            if (!lw_broadcast_shape(&v[0].type, &v[1].type, &t)) {
                dsl_error(L->diags, e->loc, "where: tile shape mismatch");
                return lw_bad();
            }
            t.dtype = DT_BOOL;
            lw_materialize(L, &v[0], e->loc);
            lw_materialize(L, &v[1], e->loc);
        } else if (!same_dtype(L, v, 2, e->loc, false, &t)) {
            return lw_bad();
        }
        IrType ts;
        if (!lw_broadcast_shape(&t, &c.type, &ts)) {
            dsl_error(L->diags, e->loc, "where: condition shape does not broadcast");
            return lw_bad();
        }
        t.rank = ts.rank;
        memcpy(t.shape, ts.shape, sizeof t.shape);
        if (!lw_check_tile(L, &t, e->loc))
            return lw_bad();
        int cid = lw_materialize(L, &c, e->loc);
        int id = lw_emit(L, IR_SELECT, t, e->loc);
        if (id >= 0) {
            L->f->ins[id].opnd[0] = cid;
            L->f->ins[id].opnd[1] = v[0].id;
            L->f->ins[id].opnd[2] = v[1].id;
        }
        return lw_ival(id, t);
    }
    case B_REDUCE: {
        bool kd = false;
        if (flag && !lw_flag_arg(L, flag, "keep_dims", &kd))
            return lw_bad();
        return b_reduce(L, b, args, n, kd, e->loc);
    }
    case B_CUMSUM: {
        bool rev = false;
        if (flag && !lw_flag_arg(L, flag, "reverse", &rev))
            return lw_bad();
        if (rev || b->sub == 1)
            return lw_cumop(L, args[0], args[1], b->sub == 1, rev, e->loc);
        LwVal x = lw_expr(L, args[0]);
        int axis;
        if (!need_tile(L, "cumsum", &x, args[0]) ||
            !lw_axis_arg(L, args[1], x.type.rank, &axis))
            return lw_bad();
        IrType t = x.type;
        if (!dsl_is_float(t.dtype) && dsl_dtype_bytes(t.dtype) < 4)
            t.dtype = DT_I32;
        x = lw_convert(L, x, t.dtype, e->loc);
        LwVal r = emit1(L, IR_SCAN, t, x.id, e->loc);
        if (r.id >= 0)
            L->f->ins[r.id].axis = axis;
        return r;
    }
    case B_DOT:
        if (flag && (flag->kind != AST_IDENT || (strcmp(flag->name, "ieee") &&
                                                 strcmp(flag->name, "tf32") &&
                                                 strcmp(flag->name, "tf32x3")))) {
            dsl_error(L->diags, flag->loc, "dot: precision must be ieee, tf32 or tf32x3");
            return lw_bad();
        }
        /* every backend computes ieee (LANGUAGE.md §7 allows it) */
        return b_dot(L, args, n, e->loc);
    case B_ATOMIC:
        return b_atomic(L, b, args, mask, e->loc);
    case B_LOAD:
        if (args[0]->kind != AST_INDEX) {
            dsl_error(L->diags, args[0]->loc, "load needs a view of a tensor");
            return lw_bad();
        }
        return lw_load(L, args[0], pad, mask, e->loc);
    case B_STORE:
        if (args[0]->kind != AST_INDEX) {
            dsl_error(L->diags, args[0]->loc, "store needs a view of a tensor");
            return lw_bad();
        }
        lw_store(L, args[0], lw_expr(L, args[1]), mask, e->loc);
        return lw_cval(DT_VOID, 0, 0, false);
    case B_RANK: {
        if (n == 0) {
            int id = lw_emit(L, b->sub, ir_scalar(DT_I32), e->loc);
            return lw_ival(id, ir_scalar(DT_I32));
        }
        if (!L->device) {
            dsl_error(L->diags, e->loc, "%s(g) of a group is only in device functions", b->name);
            return lw_bad();
        }
        /* rank(g) / world(g): relative to group g */
        return lw_dev_group_op(L, b->sub == IR_RANK ? IR_GRANK : IR_GWORLD,
                               (const Ast *const *)args, 1, e->loc);
    }
    case B_GROUP:
        if (!L->device) {
            dsl_error(L->diags, e->loc, "'group' is a device-function builtin");
            return lw_bad();
        }
        if (L->in_async || L->in_exchange) {
            dsl_error(L->diags, e->loc, "'group' is collective over the ranks; it cannot run inside %s",
                      L->in_async ? "an async block" : "an exchange block");
            return lw_bad();
        }
        return lw_dev_group_op(L, IR_GROUP, (const Ast *const *)args, 2, e->loc);
    case B_PEER:
        dsl_error(L->diags, e->loc, "peer(T, r) must be indexed: peer(T, r)[i +: n]");
        return lw_bad();
    case B_NOTIFY:
    case B_WAIT:
        return b_signal(L, b, args, op_arg, e->loc);
    }
    return lw_bad();
}
