/* builtins2.c — the builtins of LANGUAGE.md §7 (v0.2): more math and bits,
 * Philox random numbers, static_assert, custom reductions and scans with a
 * helper as combiner, cumprod and reverse scans, and the tile
 * manipulations (slice, cat, join/unjoin, flip, gather, sort, topk,
 * histogram).
 *
 * Everything here lowers to Core IR ops that every backend already has
 * (elementwise ops, BCAST/RESHAPE, REDUCE, SCAN) or to the new elementwise
 * rows of ops.def, so the CPU, CUDA and HIP backends need nothing else.
 * The register-level tile ops are built from one primitive, take(): an
 * index tile compared against arange(n) (a one-hot mask), a select and a
 * max-reduction over the one-hot axis. That costs m*n per output row (m
 * outputs from n inputs) — fine for the tile sizes kernels use, and exact
 * (the max over one value and fills). Sort ranks each element by counting
 * (n*n), which makes it stable. */
#include "lower.h"

#include <math.h>
#include <string.h>

typedef enum {
    B2_MATH1, B2_MATH2, B2_CLAMP, B2_ISNAN, B2_ISINF, B2_UMULHI, B2_BITCAST,
    B2_RANDINT, B2_RAND, B2_RANDN, B2_SASSERT, B2_HIST, B2_REDUCE, B2_SCAN,
    B2_SLICE, B2_CAT, B2_JOIN, B2_UNJOIN, B2_FLIP, B2_GATHER, B2_SORT,
    B2_TOPK, B2_DEBUG,
} B2Kind;

static const struct B2 {
    const char *name;  /* source name */
    B2Kind kind;       /* handler */
    int min, max;      /* positional arguments */
    const char *named; /* the one accepted named argument, or "" */
    int sub;           /* IR op */
} b2[] = {
    {"log1p", B2_MATH1, 1, 1, "", IR_LOG1P},
    {"expm1", B2_MATH1, 1, 1, "", IR_EXPM1},
    {"tan", B2_MATH1, 1, 1, "", IR_TAN},
    {"atan", B2_MATH1, 1, 1, "", IR_ATAN},
    {"sinh", B2_MATH1, 1, 1, "", IR_SINH},
    {"cosh", B2_MATH1, 1, 1, "", IR_COSH},
    {"round", B2_MATH1, 1, 1, "", IR_ROUND},
    {"trunc", B2_MATH1, 1, 1, "", IR_TRUNC},
    {"pow", B2_MATH2, 2, 2, "", IR_POW},
    {"atan2", B2_MATH2, 2, 2, "", IR_ATAN2},
    {"clamp", B2_CLAMP, 3, 3, "", 0},
    {"isnan", B2_ISNAN, 1, 1, "", 0},
    {"isinf", B2_ISINF, 1, 1, "", 0},
    {"umulhi", B2_UMULHI, 2, 2, "", 0},
    {"bitcast", B2_BITCAST, 2, 2, "", 0},
    {"randint", B2_RANDINT, 2, 2, "", 0},
    {"rand", B2_RAND, 2, 2, "", 0},
    {"randn", B2_RANDN, 2, 2, "", 0},
    {"static_assert", B2_SASSERT, 2, 2, "", 0},
    {"histogram", B2_HIST, 2, 2, "", 0},
    {"reduce", B2_REDUCE, 2, 3, "", 0},
    {"scan", B2_SCAN, 3, 3, "reverse", 0},
    {"slice", B2_SLICE, 4, 4, "", 0},
    {"cat", B2_CAT, 3, 3, "", 0},
    {"join", B2_JOIN, 2, 2, "", 0},
    {"unjoin", B2_UNJOIN, 1, 1, "", 0},
    {"flip", B2_FLIP, 2, 2, "", 0},
    {"gather", B2_GATHER, 3, 3, "", 0},
    {"sort", B2_SORT, 2, 2, "descending", 0},
    {"topk", B2_TOPK, 3, 3, "", 0},
    {"print", B2_DEBUG, 1, -1, "", 0},
    {"assert", B2_DEBUG, 2, 2, "", 0},
};

/* ------------------------------------------------------------ IR helpers */

static void tstr(const IrType *t, char *b, size_t n) { ir_type_str(t, b, n); }

static LwVal emit1(Lw *L, int op, IrType t, int a, DslLoc loc)
{
    int id = lw_emit(L, op, t, loc);
    if (id >= 0)
        L->f->ins[id].opnd[0] = a;
    return lw_ival(id, t);
}

/* v with shape t's shape (a scalar stays a scalar: elementwise ops take
 * scalar operands). */
static int shaped(Lw *L, LwVal *v, const IrType *t, DslLoc loc)
{
    int id = lw_materialize(L, v, loc);
    if (id < 0 || v->type.rank == 0 || t->rank == 0 ||
        (v->type.rank == t->rank && ir_shape_eq(&v->type, t)))
        return id;
    IrType bt = *t;
    bt.dtype = v->type.dtype;
    return emit1(L, IR_BCAST, bt, id, loc).id;
}

/* where(c, a, b) with broadcasting; a and b get a's dtype. */
static LwVal sel(Lw *L, LwVal c, LwVal a, LwVal b, DslLoc loc)
{
    if (c.bad || a.bad || b.bad)
        return lw_bad();
    b = lw_convert(L, b, a.type.dtype, loc);
    IrType t;
    if (!lw_broadcast_shape(&c.type, &a.type, &t) ||
        !lw_broadcast_shape(&t, &b.type, &t)) {
        dsl_error(L->diags, loc, "tile shape mismatch");
        return lw_bad();
    }
    t.dtype = a.type.dtype;
    if (!lw_check_tile(L, &t, loc))
        return lw_bad();
    int ci = shaped(L, &c, &t, loc), ai = shaped(L, &a, &t, loc), bi = shaped(L, &b, &t, loc);
    int id = lw_emit(L, IR_SELECT, t, loc);
    if (id >= 0) {
        L->f->ins[id].opnd[0] = ci;
        L->f->ins[id].opnd[1] = ai;
        L->f->ins[id].opnd[2] = bi;
    }
    return lw_ival(id, t);
}

LwVal lw_select(Lw *L, LwVal c, LwVal a, LwVal b, DslLoc loc)
{
    return sel(L, c, a, b, loc);
}

static LwVal reshape(Lw *L, LwVal v, const IrType *t, DslLoc loc)
{
    if (v.bad)
        return v;
    IrType rt = *t;
    rt.dtype = v.type.dtype;
    int id = lw_materialize(L, &v, loc);
    if (v.type.rank == rt.rank && ir_shape_eq(&v.type, &rt))
        return v;
    return emit1(L, IR_RESHAPE, rt, id, loc);
}

/* v with a new axis of extent 1 at position `at`. */
static LwVal expand(Lw *L, LwVal v, int at, DslLoc loc)
{
    IrType t = v.type;
    for (int i = t.rank; i > at; i--)
        t.shape[i] = t.shape[i - 1];
    t.shape[at] = 1;
    t.rank++;
    return reshape(L, v, &t, loc);
}

/* i32 arange(lo, lo+n) laid along axis `axis` of a rank-`rank` tile (all
 * other extents 1). */
static LwVal arange_at(Lw *L, int64_t lo, int n, int axis, int rank, DslLoc loc)
{
    int32_t len = n;
    IrType t = ir_tile(DT_I32, 1, &len);
    int id = lw_emit(L, IR_ARANGE, t, loc);
    if (id >= 0)
        L->f->ins[id].ival = lo;
    IrType rt = ir_scalar(DT_I32);
    rt.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        rt.shape[i] = i == axis ? n : 1;
    return reshape(L, lw_ival(id, t), &rt, loc);
}

/* REDUCE of kind over axis (the result drops it). */
static LwVal reduce_axis(Lw *L, LwVal v, int kind, int axis, DslLoc loc)
{
    if (v.bad)
        return v;
    IrType t = ir_scalar(v.type.dtype);
    for (int i = 0; i < v.type.rank; i++)
        if (i != axis)
            t.shape[t.rank++] = v.type.shape[i];
    int src = lw_materialize(L, &v, loc);
    int id = lw_emit(L, IR_REDUCE, t, loc);
    if (id >= 0) {
        L->f->ins[id].opnd[0] = src;
        L->f->ins[id].attr = kind;
        L->f->ins[id].axis = axis;
    }
    return lw_ival(id, t);
}

/* The smallest value of dt: the fill of a max over a one-hot axis. */
static LwVal lowest(int dt)
{
    if (dsl_is_float(dt))
        return lw_cval(dt, 0, -INFINITY, false);
    if (dsl_dtype_kind(dt) == 'u' || dt == DT_BOOL)
        return lw_cval(dt, 0, 0, false);
    int bits = dsl_dtype_bytes(dt) * 8;
    return lw_cval(dt, bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1)), 0, false);
}

static LwVal bin(Lw *L, int op, LwVal a, LwVal b, DslLoc loc)
{
    return lw_binary(L, op, a, b, loc);
}

/* max over axis `ax` of where(mask, v, lowest): picks the one value the
 * mask leaves on each line (bool values go through i32). */
static LwVal pick(Lw *L, LwVal mask, LwVal v, int ax, DslLoc loc)
{
    int dt = v.type.dtype;
    if (dt == DT_BOOL)
        v = lw_convert(L, v, DT_I32, loc);
    LwVal r = reduce_axis(L, sel(L, mask, v, lowest(v.type.dtype), loc), RED_MAX, ax, loc);
    return dt == DT_BOOL ? lw_convert(L, r, DT_BOOL, loc) : r;
}

/* take_along_axis(x, idx, axis): x and idx of one rank, the other extents
 * broadcasting; result extent along axis = idx's. Indices outside the
 * axis give the lowest value of the dtype (0 for unsigned and bool). */
static LwVal take(Lw *L, LwVal x, LwVal idx, int axis, DslLoc loc)
{
    if (x.bad || idx.bad)
        return lw_bad();
    int r = x.type.rank, n = x.type.shape[axis];
    LwVal xe = expand(L, x, axis, loc);          /* [.., 1, n, ..] */
    LwVal ie = expand(L, idx, axis + 1, loc);    /* [.., m, 1, ..] */
    LwVal j = arange_at(L, 0, n, axis + 1, r + 1, loc);
    LwVal hit = bin(L, OP_EQ, ie, j, loc);
    return pick(L, hit, xe, axis + 1, loc);
}

/* ------------------------------------------------------------ arguments */

bool lw_flag_arg(Lw *L, const Ast *e, const char *what, bool *out)
{
    LwVal v = lw_expr(L, e);
    if (v.bad)
        return false;
    if (!lw_is_const(&v) || v.type.rank != 0 || v.c.dtype != DT_BOOL) {
        dsl_error(L->diags, e->loc, "%s must be a compile-time bool (true or false)", what);
        return false;
    }
    *out = v.c.i != 0;
    return true;
}

static bool tile_arg(Lw *L, const char *fn, LwVal *v, const Ast *e)
{
    *v = lw_expr(L, e);
    if (v->bad)
        return false;
    if (v->type.rank == 0 || v->type.dtype == DT_VOID) {
        dsl_error(L->diags, e->loc, "%s needs a tile, got a scalar", fn);
        return false;
    }
    return true;
}

static bool int_tile(Lw *L, const char *fn, LwVal *v, const Ast *e, bool scalar_ok)
{
    *v = lw_expr(L, e);
    if (v->bad)
        return false;
    if (!dsl_is_int(v->type.dtype) || (!scalar_ok && v->type.rank == 0)) {
        char t[96];
        tstr(&v->type, t, sizeof t);
        dsl_error(L->diags, e->loc, "%s needs an integer %s, got %s", fn,
                  scalar_ok ? "value" : "tile", t);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ math, bits */

static LwVal to_float(Lw *L, LwVal x, DslLoc loc)
{
    return dsl_is_float(x.type.dtype) ? x : lw_convert(L, x, DT_F32, loc);
}

static LwVal math1(Lw *L, int op, LwVal x, DslLoc loc)
{
    if (x.bad)
        return x;
    if ((op == IR_ROUND || op == IR_TRUNC) && dsl_is_int(x.type.dtype))
        return x;
    x = to_float(L, x, loc);
    int id = lw_materialize(L, &x, loc);
    return emit1(L, op, x.type, id, loc);
}

static LwVal math2(Lw *L, int op, LwVal a, LwVal b, DslLoc loc)
{
    if (a.bad || b.bad)
        return lw_bad();
    int dt = lw_promote(&a, &b);
    if (!dsl_is_float(dt))
        dt = DT_F32;
    a = lw_convert(L, a, dt, loc);
    b = lw_convert(L, b, dt, loc);
    IrType t;
    if (!lw_broadcast_shape(&a.type, &b.type, &t)) {
        char x[96], y[96];
        tstr(&a.type, x, sizeof x);
        tstr(&b.type, y, sizeof y);
        dsl_error(L->diags, loc, "tile shape mismatch: %s and %s", x, y);
        return lw_bad();
    }
    t.dtype = (uint8_t)dt;
    int ai = shaped(L, &a, &t, loc), bi = shaped(L, &b, &t, loc);
    int id = lw_emit(L, op, t, loc);
    if (id >= 0) {
        L->f->ins[id].opnd[0] = ai;
        L->f->ins[id].opnd[1] = bi;
    }
    return lw_ival(id, t);
}

/* high 32 bits of the 64-bit product (signed for i32, else unsigned) */
static LwVal umulhi(Lw *L, LwVal a, LwVal b, DslLoc loc)
{
    int dt = lw_promote(&a, &b);
    if (dt != DT_I32 && dt != DT_U32) {
        dsl_error(L->diags, loc, "umulhi needs u32 or i32 operands, got %s",
                  dsl_dtype_name(dt));
        return lw_bad();
    }
    int wide = dt == DT_I32 ? DT_I64 : DT_U64;
    LwVal p = bin(L, OP_MUL, lw_convert(L, lw_convert(L, a, dt, loc), wide, loc),
                  lw_convert(L, lw_convert(L, b, dt, loc), wide, loc), loc);
    p = bin(L, OP_SHR, p, lw_cval(wide, 32, 0, false), loc);
    return lw_convert(L, p, dt, loc);
}

/* ------------------------------------------------------------ Philox */

/* Philox4x32-10 on counter (c0, c1, 0, 0) and key (k0, k1): the four
 * output words, as Triton's philox_impl computes them. */
static void philox(Lw *L, LwVal c[4], LwVal k0, LwVal k1, DslLoc loc)
{
    const LwVal A = lw_cval(DT_U32, 0xD2511F53u, 0, false);
    const LwVal B = lw_cval(DT_U32, 0xCD9E8D57u, 0, false);
    for (int r = 0; r < 10 && !L->oom; r++) {
        LwVal c0 = c[0], c2 = c[2];
        c[0] = bin(L, OP_XOR, bin(L, OP_XOR, umulhi(L, B, c2, loc), c[1], loc), k0, loc);
        c[2] = bin(L, OP_XOR, bin(L, OP_XOR, umulhi(L, A, c0, loc), c[3], loc), k1, loc);
        c[1] = bin(L, OP_MUL, B, c2, loc);
        c[3] = bin(L, OP_MUL, A, c0, loc);
        k0 = bin(L, OP_ADD, k0, lw_cval(DT_U32, 0x9E3779B9u, 0, false), loc);
        k1 = bin(L, OP_ADD, k1, lw_cval(DT_U32, 0xBB67AE85u, 0, false), loc);
    }
}

/* u32 word -> f32 in [0, 1), as Triton's uint_to_uniform_float */
static LwVal uniform(Lw *L, LwVal w, DslLoc loc)
{
    IrType t = w.type;
    t.dtype = DT_I32;
    int wi = lw_materialize(L, &w, loc);
    LwVal x = emit1(L, IR_BITCAST, t, wi, loc);
    LwVal zero = lw_cval(DT_I32, 0, 0, false);
    LwVal neg = bin(L, OP_SUB, lw_unary(L, '-', x, loc), lw_cval(DT_I32, 1, 0, false), loc);
    x = sel(L, bin(L, OP_LT, x, zero, loc), neg, x, loc);
    return bin(L, OP_MUL, lw_convert(L, x, DT_F32, loc),
               lw_cval(DT_F32, 0, (double)4.656613e-10f, false), loc);
}

static LwVal b_random(Lw *L, B2Kind k, Ast **args, DslLoc loc)
{
    LwVal seed, off;
    if (!int_tile(L, "the seed of a random builtin", &seed, args[0], true) ||
        !int_tile(L, "the offsets of a random builtin", &off, args[1], true))
        return lw_bad();
    if (seed.type.rank != 0) {
        dsl_error(L->diags, args[0]->loc, "the seed must be an integer scalar");
        return lw_bad();
    }
    LwVal s = lw_convert(L, seed, DT_U64, loc);
    LwVal k0 = lw_convert(L, s, DT_U32, loc);
    LwVal k1 = lw_convert(L, bin(L, OP_SHR, s, lw_cval(DT_U64, 32, 0, false), loc), DT_U32, loc);
    LwVal c[4];
    IrType t = off.type;
    if (dsl_dtype_bytes(off.type.dtype) == 8) { /* counter (low, high, 0, 0) */
        LwVal o = lw_convert(L, off, DT_U64, loc);
        c[0] = lw_convert(L, o, DT_U32, loc);
        c[1] = lw_convert(L, bin(L, OP_SHR, o, lw_cval(DT_U64, 32, 0, false), loc), DT_U32, loc);
    } else {
        c[0] = lw_convert(L, off, DT_U32, loc);
        c[1] = lw_cval(DT_U32, 0, 0, false);
    }
    c[2] = c[3] = lw_cval(DT_U32, 0, 0, false);
    philox(L, c, k0, k1, loc);
    for (int i = 0; i < 2; i++) /* tile-shaped even where constant */
        if (c[i].type.rank != t.rank) {
            IrType ut = t;
            ut.dtype = DT_U32;
            int id = shaped(L, &c[i], &ut, loc);
            c[i] = lw_ival(id, ut);
        }
    if (k == B2_RANDINT)
        return c[0];
    LwVal u1 = uniform(L, c[0], loc);
    if (k == B2_RAND)
        return u1;
    LwVal u2 = uniform(L, c[1], loc);
    IrType ft = u1.type;
    LwVal lo = lw_cval(DT_F32, 0, (double)1.0e-7f, false);
    int a = lw_materialize(L, &u1, loc), b = lw_materialize(L, &lo, loc);
    int mid = lw_emit(L, IR_MAX, ft, loc);
    if (mid >= 0) {
        L->f->ins[mid].opnd[0] = a;
        L->f->ins[mid].opnd[1] = b;
    }
    u1 = lw_ival(mid, ft);
    LwVal lg = emit1(L, IR_LOG, ft, u1.id, loc);
    LwVal rr = bin(L, OP_MUL, lw_cval(DT_F32, 0, -2.0, false), lg, loc);
    rr = emit1(L, IR_SQRT, ft, lw_materialize(L, &rr, loc), loc);
    LwVal th = bin(L, OP_MUL, lw_cval(DT_F32, 0, (double)6.283185307179586f, false), u2, loc);
    LwVal cs = emit1(L, IR_COS, ft, lw_materialize(L, &th, loc), loc);
    return bin(L, OP_MUL, rr, cs, loc);
}

/* ------------------------------------------------------------ reductions */

/* combine k tiles a[] with k tiles b[] through helper h (2k arguments, k
 * results); results broadcast to a[0]'s shape. */
static bool combine(Lw *L, const AstFunc *h, int k, const LwVal *a, const LwVal *b,
                    LwVal *out, DslLoc loc)
{
    LwVal args[2 * LW_MAX_RESULTS], res[LW_MAX_RESULTS];
    for (int i = 0; i < k; i++) {
        args[i] = a[i];
        args[k + i] = b[i];
    }
    int n = lw_inline_vals(L, h, args, 2 * k, loc, res);
    if (n < 0)
        return false;
    if (n != k) {
        dsl_error(L->diags, loc, "combiner '%s' gives %d result%s; combining %d tile%s needs %d",
                  h->name, n, n == 1 ? "" : "s", k, k == 1 ? "" : "s", k);
        return false;
    }
    for (int i = 0; i < k; i++) {
        IrType t = a[i].type;
        if (res[i].bad)
            return false;
        IrType bs;
        if (!lw_broadcast_shape(&res[i].type, &t, &bs) || !ir_shape_eq(&bs, &t) ||
            bs.rank != t.rank) {
            char x[96], y[96];
            tstr(&res[i].type, x, sizeof x);
            tstr(&t, y, sizeof y);
            dsl_error(L->diags, loc, "combiner '%s' result %d is %s, not the operands' %s",
                      h->name, i, x, y);
            return false;
        }
        res[i] = lw_convert(L, res[i], t.dtype, loc);
        t.dtype = res[i].type.dtype;
        out[i] = lw_ival(shaped(L, &res[i], &t, loc), t);
    }
    return true;
}

/* slice of every tile of v[0..k) along axis */
static LwVal slice1(Lw *L, LwVal x, int axis, int start, int n, DslLoc loc)
{
    return take(L, x, arange_at(L, start, n, axis, x.type.rank, loc), axis, loc);
}

/* A combiner named by `e`: a helper with 2k parameters. */
static const AstFunc *combiner(Lw *L, const Ast *e, int k, const char *fn)
{
    const AstFunc *h = e->kind == AST_IDENT ? lw_helper(L, e->name) : NULL;
    if (!h) {
        dsl_error(L->diags, e->loc, "%s needs the name of a helper function (fn) as its combiner", fn);
        return NULL;
    }
    if (h->nparams != 2 * k) {
        dsl_error(L->diags, e->loc, "combiner '%s' takes %d argument%s; %s of %d tile%s needs %d",
                  h->name, h->nparams, h->nparams == 1 ? "" : "s", fn, k, k == 1 ? "" : "s",
                  2 * k);
        return NULL;
    }
    return h;
}

/* The tiles of a reduce/scan: x or a tuple (x, y, ...), one shape. */
static int operands(Lw *L, const Ast *e, LwVal *v, const char *fn)
{
    int k = e->kind == AST_TUPLE ? e->nlist : 1;
    if (k > LW_MAX_RESULTS) {
        dsl_error(L->diags, e->loc, "%s of %d tiles (limit %d)", fn, k, LW_MAX_RESULTS);
        return -1;
    }
    for (int i = 0; i < k; i++) {
        const Ast *x = e->kind == AST_TUPLE ? e->list[i] : e;
        if (!tile_arg(L, fn, &v[i], x))
            return -1;
        if (i && (v[i].type.rank != v[0].type.rank || !ir_shape_eq(&v[i].type, &v[0].type))) {
            char a[96], b[96];
            tstr(&v[0].type, a, sizeof a);
            tstr(&v[i].type, b, sizeof b);
            dsl_error(L->diags, x->loc, "%s: the tiles must have one shape, got %s and %s", fn, a, b);
            return -1;
        }
    }
    return k;
}

/* reduce(x, axis, f) / reduce(x, f) / reduce((v, i), axis, f): a halving
 * tree; an odd element waits in `left` and joins at the end. */
static LwVal custom_reduce(Lw *L, Ast **args, int n, DslLoc loc)
{
    LwVal v[LW_MAX_RESULTS];
    int k = operands(L, args[0], v, "reduce");
    if (k < 0)
        return lw_bad();
    const AstFunc *h = combiner(L, args[n - 1], k, "reduce");
    if (!h)
        return lw_bad();
    int axis = 0;
    bool all = n == 2;
    if (all) {
        for (int i = 0; i < k; i++) {
            int32_t ne = (int32_t)ir_numel(&v[i].type);
            IrType t = ir_tile(v[i].type.dtype, 1, &ne);
            v[i] = reshape(L, v[i], &t, loc);
        }
    } else if (!lw_axis_arg(L, args[1], v[0].type.rank, &axis)) {
        return lw_bad();
    }
    LwVal left[32][LW_MAX_RESULTS];
    int nleft = 0, len = v[0].type.shape[axis];
    while (len > 1 && !L->oom) {
        int half = len / 2;
        LwVal a[LW_MAX_RESULTS], b[LW_MAX_RESULTS];
        for (int i = 0; i < k; i++) {
            if (len % 2)
                left[nleft][i] = slice1(L, v[i], axis, len - 1, 1, loc);
            a[i] = slice1(L, v[i], axis, 0, half, loc);
            b[i] = slice1(L, v[i], axis, half, half, loc);
        }
        nleft += len % 2;
        if (!combine(L, h, k, a, b, v, loc))
            return lw_bad();
        len = half;
    }
    for (int j = 0; j < nleft; j++)
        if (!combine(L, h, k, v, left[j], v, loc))
            return lw_bad();
    for (int i = 0; i < k; i++) {
        IrType t = ir_scalar(v[i].type.dtype);
        for (int d = 0; d < v[i].type.rank; d++)
            if (d != axis)
                t.shape[t.rank++] = v[i].type.shape[d];
        if (t.rank == 0) {
            int id = lw_materialize(L, &v[i], loc);
            v[i] = emit1(L, IR_RESHAPE, t, id, loc);
        } else {
            v[i] = reshape(L, v[i], &t, loc);
        }
    }
    memcpy(L->multi, v, sizeof(LwVal) * (size_t)k);
    L->nmulti = k;
    return v[0];
}

/* The elements of x along axis in reverse order. */
static LwVal flip(Lw *L, LwVal x, int axis, DslLoc loc)
{
    int n = x.type.shape[axis];
    LwVal idx = bin(L, OP_SUB, lw_cval(DT_I32, n - 1, 0, false),
                    arange_at(L, 0, n, axis, x.type.rank, loc), loc);
    return take(L, x, idx, axis, loc);
}

/* Inclusive scan by doubling (Hillis-Steele): y[i] = f(y[i-d], y[i]) for
 * i >= d. `h` is the combiner, or NULL for a product. */
static bool scan_tiles(Lw *L, LwVal *v, int k, int axis, const AstFunc *h, DslLoc loc)
{
    int n = v[0].type.shape[axis], r = v[0].type.rank;
    LwVal pos = arange_at(L, 0, n, axis, r, loc);
    for (int d = 1; d < n && !L->oom; d *= 2) {
        LwVal src = bin(L, OP_SUB, pos, lw_cval(DT_I32, d, 0, false), loc);
        LwVal mx[3] = {src, lw_cval(DT_I32, 0, 0, false)};
        IrType st = src.type;
        int si = lw_materialize(L, &mx[0], loc), zi = lw_materialize(L, &mx[1], loc);
        int id = lw_emit(L, IR_MAX, st, loc);
        if (id >= 0) {
            L->f->ins[id].opnd[0] = si;
            L->f->ins[id].opnd[1] = zi;
        }
        src = lw_ival(id, st);
        LwVal on = bin(L, OP_GE, pos, lw_cval(DT_I32, d, 0, false), loc);
        LwVal prev[LW_MAX_RESULTS], c[LW_MAX_RESULTS];
        for (int i = 0; i < k; i++)
            prev[i] = take(L, v[i], src, axis, loc);
        if (h) {
            if (!combine(L, h, k, prev, v, c, loc))
                return false;
        } else {
            c[0] = bin(L, OP_MUL, prev[0], v[0], loc);
        }
        for (int i = 0; i < k; i++)
            v[i] = sel(L, on, c[i], v[i], loc);
    }
    return true;
}

static LwVal custom_scan(Lw *L, Ast **args, const Ast *rev_arg, DslLoc loc)
{
    LwVal v[LW_MAX_RESULTS];
    bool rev = false;
    int k = operands(L, args[0], v, "scan"), axis;
    if (k < 0 || !lw_axis_arg(L, args[1], v[0].type.rank, &axis))
        return lw_bad();
    const AstFunc *h = combiner(L, args[2], k, "scan");
    if (!h || (rev_arg && !lw_flag_arg(L, rev_arg, "reverse", &rev)))
        return lw_bad();
    for (int i = 0; rev && i < k; i++)
        v[i] = flip(L, v[i], axis, loc);
    if (!scan_tiles(L, v, k, axis, h, loc))
        return lw_bad();
    for (int i = 0; rev && i < k; i++)
        v[i] = flip(L, v[i], axis, loc);
    memcpy(L->multi, v, sizeof(LwVal) * (size_t)k);
    L->nmulti = k;
    return v[0];
}

LwVal lw_cumop(Lw *L, const Ast *xa, const Ast *ax, bool prod, bool reverse,
               DslLoc loc)
{
    LwVal x;
    int axis;
    if (!tile_arg(L, prod ? "cumprod" : "cumsum", &x, xa) ||
        !lw_axis_arg(L, ax, x.type.rank, &axis))
        return lw_bad();
    IrType t = x.type;
    if (!dsl_is_float(t.dtype) && dsl_dtype_bytes(t.dtype) < 4)
        t.dtype = DT_I32;
    x = lw_convert(L, x, t.dtype, loc);
    if (reverse)
        x = flip(L, x, axis, loc);
    if (prod) {
        if (dsl_is_float(t.dtype) && dsl_dtype_bytes(t.dtype) < 4)
            x = lw_convert(L, x, DT_F32, loc); /* products of f16 in f32 */
        if (!scan_tiles(L, &x, 1, axis, NULL, loc))
            return lw_bad();
        x = lw_convert(L, x, t.dtype, loc);
    } else {
        int id = lw_materialize(L, &x, loc);
        x = emit1(L, IR_SCAN, t, id, loc);
        if (x.id >= 0)
            L->f->ins[x.id].axis = axis;
    }
    return reverse ? flip(L, x, axis, loc) : x;
}

/* ------------------------------------------------------------ tile ops */

/* rank of each element along axis among its line: the number of elements
 * before it in the sorted order (ties: lower index first) */
static LwVal ranks(Lw *L, LwVal x, int axis, bool desc, DslLoc loc)
{
    int n = x.type.shape[axis], r = x.type.rank;
    if (x.type.dtype == DT_BOOL)
        x = lw_convert(L, x, DT_I32, loc);
    LwVal xi = expand(L, x, axis + 1, loc), xj = expand(L, x, axis, loc);
    LwVal ii = arange_at(L, 0, n, axis, r + 1, loc), jj = arange_at(L, 0, n, axis + 1, r + 1, loc);
    LwVal before = bin(L, desc ? OP_GT : OP_LT, xj, xi, loc);
    LwVal tie = bin(L, OP_LAND, bin(L, OP_EQ, xj, xi, loc), bin(L, OP_LT, jj, ii, loc), loc);
    LwVal cnt = lw_convert(L, bin(L, OP_LOR, before, tie, loc), DT_I32, loc);
    return reduce_axis(L, cnt, RED_SUM, axis + 1, loc);
}

/* out[k] = the element whose rank is k, for k in 0..m */
static LwVal by_rank(Lw *L, LwVal v, LwVal rk, int axis, int m, DslLoc loc)
{
    LwVal re = expand(L, rk, axis, loc), ve = expand(L, v, axis, loc);
    LwVal kk = arange_at(L, 0, m, axis, v.type.rank + 1, loc);
    return pick(L, bin(L, OP_EQ, re, kk, loc), ve, axis + 1, loc);
}

static LwVal cat(Lw *L, LwVal a, LwVal b, int axis, DslLoc loc)
{
    int dt = lw_promote(&a, &b);
    a = lw_convert(L, a, dt, loc);
    b = lw_convert(L, b, dt, loc);
    int na = a.type.shape[axis], nb = b.type.shape[axis];
    LwVal pos = arange_at(L, 0, na + nb, axis, a.type.rank, loc);
    LwVal ia = lw_cval(DT_I32, 0, 0, false), ib = ia;
    LwVal lim = lw_cval(DT_I32, na - 1, 0, false);
    LwVal lt = bin(L, OP_LT, pos, lw_cval(DT_I32, na, 0, false), loc);
    ia = sel(L, lt, pos, lim, loc);
    ib = sel(L, lt, ib, bin(L, OP_SUB, pos, lw_cval(DT_I32, na, 0, false), loc), loc);
    LwVal ra = take(L, a, ia, axis, loc), rb = take(L, b, ib, axis, loc);
    (void)nb;
    return sel(L, lt, ra, rb, loc);
}

static bool same_other_dims(Lw *L, const LwVal *a, const LwVal *b, int axis, DslLoc loc,
                            const char *fn)
{
    bool ok = a->type.rank == b->type.rank;
    for (int i = 0; ok && i < a->type.rank; i++)
        ok = i == axis || a->type.shape[i] == b->type.shape[i];
    if (!ok) {
        char x[96], y[96];
        tstr(&a->type, x, sizeof x);
        tstr(&b->type, y, sizeof y);
        dsl_error(L->diags, loc, "%s: %s and %s differ outside axis %d", fn, x, y, axis);
    }
    return ok;
}

/* assert(cond, "message"): a tile condition holds when its minimum (as
 * i32) is non-zero. */
static LwVal assert_call(Lw *L, const Ast *e)
{
    const Ast *m = e->list[1];
    if (m->kind != AST_STRING) {
        dsl_error(L->diags, m->loc, "assert needs a string literal message");
        return lw_bad();
    }
    if (e->list[0]->kind == AST_STRING) {
        dsl_error(L->diags, e->list[0]->loc, "assert needs a bool condition");
        return lw_bad();
    }
    LwVal x = lw_expr(L, e->list[0]);
    if (x.bad)
        return x;
    if (x.type.dtype != DT_BOOL) {
        dsl_error(L->diags, e->list[0]->loc, "assert needs a bool condition");
        return lw_bad();
    }
    if (x.type.rank > 0) {
        x = lw_convert(L, x, DT_I32, e->loc);
        while (x.type.rank > 0 && !x.bad)
            x = reduce_axis(L, x, RED_MIN, 0, e->loc);
        x = bin(L, OP_NE, x, lw_cval(DT_I32, 0, 0, false), e->loc);
    }
    int c = lw_materialize(L, &x, e->loc);
    int k = ir_msg_add(L->mod, L->f, m->name);
    int id = lw_emit(L, IR_ASSERT, ir_scalar(DT_VOID), e->loc);
    if (id >= 0 && k >= 0) {
        L->f->ins[id].opnd[0] = c;
        L->f->ins[id].nopnd = 1;
        L->f->ins[id].ival = k;
    }
    return lw_cval(DT_VOID, 0, 0, false);
}

/* One IR_PRINT piece (see ops.def). */
static void print_piece(Lw *L, int attr, int64_t ival, int v, DslLoc loc)
{
    int id = lw_emit(L, IR_PRINT, ir_scalar(DT_VOID), loc);
    if (id < 0)
        return;
    L->f->ins[id].attr = attr;
    L->f->ins[id].ival = ival;
    L->f->ins[id].opnd[0] = v;
    L->f->ins[id].nopnd = 1;
}

/* print(pieces...): strings and values, in order, on one line. */
static LwVal print_call(Lw *L, const Ast *e)
{
    int vals[64];
    if (e->nlist > 64) {
        dsl_error(L->diags, e->loc, "print takes at most 64 arguments");
        return lw_bad();
    }
    for (int i = 0; i < e->nlist; i++) { /* evaluate first: one block of pieces */
        vals[i] = -1;
        if (e->list[i]->kind == AST_STRING)
            continue;
        LwVal x = lw_expr(L, e->list[i]);
        if (x.bad)
            return x;
        if (x.type.dtype == DT_VOID) {
            dsl_error(L->diags, e->list[i]->loc, "print needs a value");
            return lw_bad();
        }
        vals[i] = lw_materialize(L, &x, e->list[i]->loc);
    }
    print_piece(L, 0, 0, -1, e->loc);
    for (int i = 0; i < e->nlist; i++) {
        if (vals[i] >= 0) {
            print_piece(L, 2, 0, vals[i], e->loc);
            continue;
        }
        int k = ir_msg_add(L->mod, L->f, e->list[i]->name);
        if (k >= 0)
            print_piece(L, 1, k, -1, e->loc);
    }
    print_piece(L, 3, 0, -1, e->loc);
    return lw_cval(DT_VOID, 0, 0, false);
}

static LwVal debug_call(Lw *L, const Ast *e)
{
    return strcmp(e->name, "assert") == 0 ? assert_call(L, e) : print_call(L, e);
}

/* ------------------------------------------------------------ dispatch */

bool lw_call2(Lw *L, const Ast *e, LwVal *out)
{
    const struct B2 *b = NULL;
    for (size_t i = 0; i < sizeof b2 / sizeof b2[0]; i++)
        if (strcmp(b2[i].name, e->name) == 0)
            b = &b2[i];
    if (!b)
        return false;
    *out = lw_bad();
    Ast *args[8];
    const Ast *flag = NULL;
    int n = 0;
    for (int i = 0; i < e->nlist; i++) {
        Ast *a = e->list[i];
        if (a->kind == AST_NAMED_ARG) {
            if (!*b->named || strcmp(a->name, b->named) != 0) {
                dsl_error(L->diags, a->loc, "'%s' has no argument named '%s'", b->name, a->name);
                return true;
            }
            flag = a->a;
            continue;
        }
        if (b->kind == B2_DEBUG || (b->kind == B2_SASSERT && i == 1))
            continue; /* strings allowed: checked below */
        if (n == 8) {
            dsl_error(L->diags, a->loc, "too many arguments");
            return true;
        }
        args[n++] = a;
    }
    int np = b->kind == B2_DEBUG || b->kind == B2_SASSERT ? e->nlist : n;
    if (np < b->min || (b->max >= 0 && np > b->max)) {
        if (b->min == b->max)
            dsl_error(L->diags, e->loc, "'%s' takes %d argument%s, got %d", b->name,
                      b->min, b->min == 1 ? "" : "s", np);
        else
            dsl_error(L->diags, e->loc, "'%s' takes %d to %d arguments, got %d",
                      b->name, b->min, b->max, np);
        return true;
    }
    if (L->in_grid || (L->device && b->kind != B2_SASSERT)) {
        dsl_error(L->diags, e->loc, L->in_grid ? "'%s' cannot be used in grid(...)"
                                              : "'%s' is a kernel builtin; it cannot be used in a device function",
                  b->name);
        return true;
    }
    DslLoc loc = e->loc;
    LwVal x, y;
    int axis;
    switch (b->kind) {
    case B2_MATH1:
        *out = math1(L, b->sub, lw_expr(L, args[0]), loc);
        return true;
    case B2_MATH2:
        *out = math2(L, b->sub, lw_expr(L, args[0]), lw_expr(L, args[1]), loc);
        return true;
    case B2_CLAMP: {
        LwVal v[3];
        for (int i = 0; i < 3; i++)
            if ((v[i] = lw_expr(L, args[i])).bad)
                return true;
        /* (x < lo ? lo : x) > hi ? hi : ..., in the operands' common dtype */
        LwVal acc = v[0];
        for (int i = 1; i < 3; i++) {
            acc.type.dtype = (uint8_t)lw_promote(&acc, &v[i]);
            acc.weak = acc.weak && v[i].weak;
        }
        for (int i = 0; i < 3; i++)
            v[i] = lw_convert(L, v[i], acc.type.dtype, loc);
        LwVal lo = sel(L, bin(L, OP_LT, v[0], v[1], loc), v[1], v[0], loc);
        if (lo.bad)
            return true;
        *out = sel(L, bin(L, OP_GT, lo, v[2], loc), v[2], lo, loc);
        return true;
    }
    case B2_ISNAN:
    case B2_ISINF:
        x = lw_expr(L, args[0]);
        if (x.bad)
            return true;
        if (!dsl_is_float(x.type.dtype)) {
            *out = bin(L, OP_NE, x, x, loc); /* false, of x's shape */
            return true;
        }
        if (b->kind == B2_ISNAN)
            *out = bin(L, OP_NE, x, x, loc);
        else
            *out = bin(L, OP_EQ, math1(L, IR_ABS, x, loc),
                       lw_cval(x.type.dtype, 0, INFINITY, false), loc);
        return true;
    case B2_UMULHI:
        x = lw_expr(L, args[0]);
        y = lw_expr(L, args[1]);
        if (!x.bad && !y.bad)
            *out = umulhi(L, x, y, loc);
        return true;
    case B2_BITCAST: {
        x = lw_expr(L, args[0]);
        int dt = args[1]->kind == AST_IDENT ? dsl_dtype_from_name(args[1]->name) : -1;
        if (x.bad)
            return true;
        if (dt < 0) {
            dsl_error(L->diags, args[1]->loc, "expected a dtype name (f32, i32, ...)");
            return true;
        }
        if (x.type.dtype == DT_BOOL || dt == DT_BOOL) {
            dsl_error(L->diags, loc, "bitcast of %s to %s: bool has no bit pattern to reinterpret",
                      dsl_dtype_name(x.type.dtype), dsl_dtype_name(dt));
            return true;
        }
        if (dsl_dtype_bytes(x.type.dtype) != dsl_dtype_bytes(dt)) {
            dsl_error(L->diags, loc, "bitcast of %s (%d bytes) to %s (%d bytes): the sizes must be equal",
                      dsl_dtype_name(x.type.dtype), dsl_dtype_bytes(x.type.dtype),
                      dsl_dtype_name(dt), dsl_dtype_bytes(dt));
            return true;
        }
        if (dt == x.type.dtype) {
            *out = x;
            return true;
        }
        IrType t = x.type;
        t.dtype = (uint8_t)dt;
        *out = emit1(L, IR_BITCAST, t, lw_materialize(L, &x, loc), loc);
        return true;
    }
    case B2_RANDINT:
    case B2_RAND:
    case B2_RANDN:
        *out = b_random(L, b->kind, args, loc);
        return true;
    case B2_SASSERT: {
        const Ast *m = e->list[1];
        if (m->kind != AST_STRING) {
            dsl_error(L->diags, m->loc, "static_assert needs a string literal message");
            return true;
        }
        if (e->list[0]->kind == AST_STRING) {
            dsl_error(L->diags, e->list[0]->loc, "static_assert needs a bool condition");
            return true;
        }
        x = lw_expr(L, e->list[0]);
        if (x.bad)
            return true;
        if (!lw_is_const(&x) || x.c.dtype != DT_BOOL) {
            dsl_error(L->diags, e->list[0]->loc, "static_assert needs a compile-time bool condition");
            return true;
        }
        if (!x.c.i)
            dsl_error(L->diags, loc, "static assertion failed: %s", m->name);
        *out = lw_cval(DT_VOID, 0, 0, false);
        return true;
    }
    case B2_HIST: {
        int64_t nb;
        if (!int_tile(L, "histogram", &x, args[0], false) ||
            !lw_const_int(L, args[1], "histogram bin count", &nb))
            return true;
        if (nb < 1 || nb > DSL_MAX_TILE_ELEMS) {
            dsl_error(L->diags, args[1]->loc, "histogram bin count %lld must be in 1..%d",
                      (long long)nb, DSL_MAX_TILE_ELEMS);
            return true;
        }
        int32_t ne[2] = {(int32_t)ir_numel(&x.type), 1};
        IrType ft = ir_tile(x.type.dtype, 2, ne);
        IrType ht = ir_tile(DT_BOOL, 2, (int32_t[]){ne[0], (int32_t)nb});
        if (!lw_check_tile(L, &ht, loc))
            return true;
        x = reshape(L, x, &ft, loc);
        LwVal bins = arange_at(L, 0, (int)nb, 1, 2, loc);
        LwVal hit = lw_convert(L, bin(L, OP_EQ, x, bins, loc), DT_I32, loc);
        *out = reduce_axis(L, hit, RED_SUM, 0, loc);
        return true;
    }
    case B2_REDUCE:
        *out = custom_reduce(L, args, n, loc);
        return true;
    case B2_SCAN:
        *out = custom_scan(L, args, flag, loc);
        return true;
    case B2_SLICE: {
        int64_t st, len;
        if (!tile_arg(L, "slice", &x, args[0]) || !lw_axis_arg(L, args[1], x.type.rank, &axis) ||
            !lw_const_int(L, args[2], "slice start", &st) ||
            !lw_const_int(L, args[3], "slice length", &len))
            return true;
        int ext = x.type.shape[axis];
        if (st < 0 || len < 1 || st + len > ext) {
            dsl_error(L->diags, loc, "slice [%lld, %lld) is out of range for extent %d of axis %d",
                      (long long)st, (long long)(st + len), ext, axis);
            return true;
        }
        *out = slice1(L, x, axis, (int)st, (int)len, loc);
        return true;
    }
    case B2_CAT:
        if (!tile_arg(L, "cat", &x, args[0]) || !tile_arg(L, "cat", &y, args[1]) ||
            !lw_axis_arg(L, args[2], x.type.rank, &axis) ||
            !same_other_dims(L, &x, &y, axis, loc, "cat"))
            return true;
        *out = cat(L, x, y, axis, loc);
        return true;
    case B2_JOIN: {
        x = lw_expr(L, args[0]);
        y = lw_expr(L, args[1]);
        if (x.bad || y.bad)
            return true;
        IrType t;
        if (!lw_broadcast_shape(&x.type, &y.type, &t) || t.rank >= IR_MAX_RANK) {
            dsl_error(L->diags, loc, "join: tile shape mismatch");
            return true;
        }
        int dt = lw_promote(&x, &y);
        t.dtype = (uint8_t)dt;
        x = lw_convert(L, x, dt, loc);
        y = lw_convert(L, y, dt, loc);
        x = lw_ival(shaped(L, &x, &t, loc), t);
        y = lw_ival(shaped(L, &y, &t, loc), t);
        if (t.rank == 0) { /* two scalars: a [2] tile */
            IrType one = ir_tile(dt, 1, (int32_t[]){1});
            x = reshape(L, x, &one, loc);
            y = reshape(L, y, &one, loc);
            t = one;
            t.rank = 0;
        }
        x = expand(L, x, t.rank, loc);
        y = expand(L, y, t.rank, loc);
        LwVal k = arange_at(L, 0, 2, t.rank, t.rank + 1, loc);
        *out = sel(L, bin(L, OP_EQ, k, lw_cval(DT_I32, 0, 0, false), loc), x, y, loc);
        return true;
    }
    case B2_UNJOIN: {
        if (!tile_arg(L, "unjoin", &x, args[0]))
            return true;
        int r = x.type.rank;
        if (x.type.shape[r - 1] != 2) {
            char t[96];
            tstr(&x.type, t, sizeof t);
            dsl_error(L->diags, loc, "unjoin needs a tile whose last extent is 2, got %s", t);
            return true;
        }
        LwVal k = arange_at(L, 0, 2, r - 1, r, loc);
        for (int i = 0; i < 2; i++)
            L->multi[i] = pick(L, bin(L, OP_EQ, k, lw_cval(DT_I32, i, 0, false), loc), x,
                               r - 1, loc);
        if (r == 1) /* [2] -> two scalars: keep them scalars */
            for (int i = 0; i < 2; i++)
                if (L->multi[i].bad)
                    return true;
        L->nmulti = 2;
        *out = L->multi[0];
        return true;
    }
    case B2_FLIP:
        if (!tile_arg(L, "flip", &x, args[0]) || !lw_axis_arg(L, args[1], x.type.rank, &axis))
            return true;
        *out = flip(L, x, axis, loc);
        return true;
    case B2_GATHER: {
        LwVal idx;
        if (!tile_arg(L, "gather", &x, args[0]) || !int_tile(L, "gather", &idx, args[1], false) ||
            !lw_axis_arg(L, args[2], x.type.rank, &axis))
            return true;
        if (idx.type.rank != x.type.rank) {
            dsl_error(L->diags, args[1]->loc, "gather: the index tile must have the rank of x (%d), got %d",
                      x.type.rank, idx.type.rank);
            return true;
        }
        for (int i = 0; i < x.type.rank; i++)
            if (i != axis && idx.type.shape[i] != x.type.shape[i] && idx.type.shape[i] != 1 &&
                x.type.shape[i] != 1) {
                dsl_error(L->diags, args[1]->loc, "gather: index extent %d differs from x's %d on axis %d",
                          idx.type.shape[i], x.type.shape[i], i);
                return true;
            }
        *out = take(L, x, idx, axis, loc);
        return true;
    }
    case B2_SORT: {
        bool desc = false;
        if (!tile_arg(L, "sort", &x, args[0]) || !lw_axis_arg(L, args[1], x.type.rank, &axis) ||
            (flag && !lw_flag_arg(L, flag, "descending", &desc)))
            return true;
        LwVal rk = ranks(L, x, axis, desc, loc);
        *out = by_rank(L, x, rk, axis, x.type.shape[axis], loc);
        return true;
    }
    case B2_TOPK: {
        int64_t k;
        if (!tile_arg(L, "topk", &x, args[0]) || !lw_const_int(L, args[1], "topk's k", &k) ||
            !lw_axis_arg(L, args[2], x.type.rank, &axis))
            return true;
        int ext = x.type.shape[axis];
        if (k < 1 || k > ext) {
            dsl_error(L->diags, args[1]->loc, "topk: k = %lld must be in 1..%d, the extent of axis %d",
                      (long long)k, ext, axis);
            return true;
        }
        LwVal rk = ranks(L, x, axis, true, loc);
        LwVal ii = arange_at(L, 0, ext, axis, x.type.rank, loc);
        IrType it = x.type;
        it.dtype = DT_I32;
        ii = lw_ival(shaped(L, &ii, &it, loc), it);
        L->multi[0] = by_rank(L, x, rk, axis, (int)k, loc);
        L->multi[1] = by_rank(L, ii, rk, axis, (int)k, loc);
        L->nmulti = 2;
        *out = L->multi[0];
        return true;
    }
    case B2_DEBUG:
        *out = debug_call(L, e);
        return true;
    }
    return true;
}
