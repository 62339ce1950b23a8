/* fold.c — ir_pass_fold: constant folding and exact algebraic identities.
 *
 * A scalar or splat CONST flowing into an elementwise op, CVT, BCAST,
 * RESHAPE or PERMUTE is evaluated at compile time with the runtime's exact
 * semantics: ints wrap at their width (two's complement), int x/0 and x%0
 * give 0, f16/bf16 arithmetic is done in f32 and rounded to nearest even
 * after each op, float->int truncates. A folded instruction is rewritten in
 * place into a CONST, so its users need no rewiring. Identities that are
 * exact (int x+0, x*1, int x*0, ...) forward the other operand instead.
 *
 * Not folded, on purpose: transcendental math (exp, log, sin, tanh, ...,
 * rsqrt), whose results differ between backends by an ulp; anything on f8
 * dtypes; narrow-float FMA; float->int conversions out of the target's
 * range (unspecified at runtime); max/min of +0 and -0. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Val {
    int64_t i;   /* ints (normalized to the dtype), bool 0/1 */
    double f;    /* floats (exactly representable in the dtype) */
} Val;

/* ------------------------------------------------------------ numerics */

static int bits_of(int dt) { return dsl_dtype_bytes(dt) * 8; }

/* Wrap an integer to dtype `dt` (sign- or zero-extended into int64). */
static int64_t wrap(int dt, uint64_t u)
{
    if (dt == DT_BOOL)
        return u != 0;
    int b = bits_of(dt);
    if (b >= 64)
        return (int64_t)u;
    uint64_t m = (UINT64_C(1) << b) - 1;
    u &= m;
    if (dsl_dtype_kind(dt) == 'i' && (u >> (b - 1)))
        u |= ~m;
    return (int64_t)u;
}

/* Round x to nearest even in a binary format with `mbits` fraction bits and
 * exponent range [emin, emax]; overflow gives infinity. */
static double round_fmt(double x, int mbits, int emin, int emax)
{
    if (isnan(x) || isinf(x) || x == 0)
        return x;
    int e;
    frexp(x, &e); /* x = m * 2^e, 0.5 <= |m| < 1 */
    int E = e - 1;
    if (E < emin)
        E = emin;
    double q = ldexp(1.0, E - mbits);
    double r = nearbyint(x / q) * q;
    double maxv = ldexp(2.0 - ldexp(1.0, -mbits), emax);
    if (fabs(r) > maxv)
        return copysign(INFINITY, x);
    return r;
}

/* Round a double to the value dtype `dt` stores (float dtypes only). */
static double round_to(int dt, double x)
{
    switch (dt) {
    case DT_F64: return x;
    case DT_F32: return (double)(float)x;
    case DT_F16: return round_fmt(x, 10, -14, 15);
    case DT_BF16: return round_fmt(x, 7, -126, 127);
    default: return x;
    }
}

/* An integer value as a double that rounds correctly to any format of at
 * most 51 fraction bits (a sticky bit keeps values beyond 2^53 honest). */
static double int_for_round(uint64_t mag, bool neg)
{
    int nb = 64;
    while (nb > 0 && !(mag >> (nb - 1)))
        nb--;
    double d;
    if (nb <= 53) {
        d = (double)mag;
    } else {
        int s = nb - 53;
        uint64_t t = (mag >> s) | ((mag & ((UINT64_C(1) << s) - 1)) != 0);
        d = ldexp((double)t, s);
    }
    return neg ? -d : d;
}

static bool foldable_dtype(int dt)
{
    return dt != DT_VOID && dt != DT_F8E4M3 && dt != DT_F8E5M2;
}

/* CVT of v (dtype `from`) to dtype `to`; false if not foldable. */
static bool convert(int from, int to, Val v, Val *out)
{
    char kf = dsl_dtype_kind(from), kt = dsl_dtype_kind(to);
    memset(out, 0, sizeof *out);
    if (kf == 'f') {
        if (kt == 'f') {
            out->f = round_to(to, v.f);
        } else if (kt == 'b') {
            out->i = v.f != 0; /* NaN != 0 */
        } else {
            if (isnan(v.f)) {
                out->i = 0;
                return true;
            }
            double t = trunc(v.f);
            int b = bits_of(to);
            double lo = kt == 'u' ? 0 : -ldexp(1.0, b - 1);
            double hi = kt == 'u' ? ldexp(1.0, b) : ldexp(1.0, b - 1);
            if (!(t >= lo && t < hi))
                return false; /* out of range: unspecified at runtime */
            out->i = kt == 'u' && t >= ldexp(1.0, 63)
                         ? wrap(to, (uint64_t)t)
                         : wrap(to, (uint64_t)(int64_t)t);
        }
        return true;
    }
    /* from int or bool */
    if (kt == 'f') {
        bool neg = kf == 'i' && v.i < 0;
        uint64_t mag = neg ? (uint64_t)0 - (uint64_t)v.i : (uint64_t)v.i;
        if (to == DT_F64)
            out->f = kf == 'i' ? (double)v.i : (double)(uint64_t)v.i;
        else if (to == DT_F32)
            out->f = kf == 'i' ? (double)(float)v.i
                               : (double)(float)(uint64_t)v.i;
        else
            out->f = round_to(to, int_for_round(mag, neg));
    } else {
        out->i = wrap(to, (uint64_t)v.i);
    }
    return true;
}

static bool is_cmp(int op)
{
    return op >= IR_EQ && op <= IR_GE;
}

static bool cmp_result(int op, int c) /* c: -1 <, 0 ==, 1 > */
{
    switch (op) {
    case IR_EQ: return c == 0;
    case IR_NE: return c != 0;
    case IR_LT: return c < 0;
    case IR_LE: return c <= 0;
    case IR_GT: return c > 0;
    default: return c >= 0;
    }
}

/* Integer/bool op on operands of dtype dt. */
static bool int_op(int op, int dt, const Val *a, Val *r)
{
    bool u = dsl_dtype_kind(dt) == 'u';
    uint64_t x = (uint64_t)a[0].i, y = (uint64_t)a[1].i;
    int64_t sx = a[0].i, sy = a[1].i;
    int w = bits_of(dt);
    if (dt == DT_BOOL) {
        switch (op) {
        case IR_NOT: r->i = !x; return true;
        case IR_AND: r->i = x && y; return true;
        case IR_OR: r->i = x || y; return true;
        case IR_XOR: case IR_NE: r->i = (x != 0) != (y != 0); return true;
        case IR_EQ: r->i = (x != 0) == (y != 0); return true;
        default: return false;
        }
    }
    if (is_cmp(op)) {
        int c = u ? (x < y ? -1 : x > y) : (sx < sy ? -1 : sx > sy);
        r->i = cmp_result(op, c);
        return true;
    }
    uint64_t v;
    switch (op) {
    case IR_NEG: v = (uint64_t)0 - x; break;
    case IR_BITNOT: v = ~x; break;
    case IR_ABS: v = !u && sx < 0 ? (uint64_t)0 - x : x; break;
    case IR_ADD: v = x + y; break;
    case IR_SUB: v = x - y; break;
    case IR_MUL: v = x * y; break;
    case IR_DIV: case IR_REM:
        if (y == 0) {
            v = 0;
        } else if (u) {
            v = op == IR_DIV ? x / y : x % y;
        } else if (sy == -1) { /* INT_MIN / -1 wraps */
            v = op == IR_DIV ? (uint64_t)0 - x : 0;
        } else {
            v = (uint64_t)(op == IR_DIV ? sx / sy : sx % sy);
        }
        break;
    case IR_AND: v = x & y; break;
    case IR_OR: v = x | y; break;
    case IR_XOR: v = x ^ y; break;
    case IR_SHL: v = x << (y & (uint64_t)(w - 1)); break;
    case IR_SHR:
        if (u) {
            v = x >> (y & (uint64_t)(w - 1));
        } else {
            int s = (int)(y & (uint64_t)(w - 1));
            v = (uint64_t)(sx < 0 ? ~(~sx >> s) : sx >> s);
        }
        break;
    case IR_MAX: v = u ? (x > y ? x : y) : (uint64_t)(sx > sy ? sx : sy); break;
    case IR_MIN: v = u ? (x < y ? x : y) : (uint64_t)(sx < sy ? sx : sy); break;
    case IR_FMA: v = x * y + (uint64_t)a[2].i; break;
    default: return false;
    }
    r->i = wrap(dt, v);
    return true;
}

/* Float op on operands of dtype dt (exact ops only). Narrow floats compute in
 * f32 and round; the result is rounded to `dt` by the caller. */
static bool float_op(int op, int dt, const Val *a, Val *r)
{
    double x = a[0].f, y = a[1].f;
    if (is_cmp(op)) {
        bool res;
        switch (op) {
        case IR_EQ: res = x == y; break;
        case IR_NE: res = x != y; break;
        case IR_LT: res = x < y; break;
        case IR_LE: res = x <= y; break;
        case IR_GT: res = x > y; break;
        default: res = x >= y; break;
        }
        r->i = res;
        return true;
    }
    if ((op == IR_MAX || op == IR_MIN) && x == 0 && y == 0 &&
        signbit(x) != signbit(y))
        return false;
    if (dt == DT_F64) {
        switch (op) {
        case IR_NEG: r->f = -x; break;
        case IR_ABS: r->f = fabs(x); break;
        case IR_FLOOR: r->f = floor(x); break;
        case IR_CEIL: r->f = ceil(x); break;
        case IR_SQRT: r->f = sqrt(x); break;
        case IR_ADD: r->f = x + y; break;
        case IR_SUB: r->f = x - y; break;
        case IR_MUL: r->f = x * y; break;
        case IR_DIV: r->f = x / y; break;
        case IR_REM: r->f = fmod(x, y); break;
        case IR_MAX: r->f = isnan(x) || isnan(y) ? NAN : fmax(x, y); break;
        case IR_MIN: r->f = isnan(x) || isnan(y) ? NAN : fmin(x, y); break;
        case IR_FMA: r->f = fma(x, y, a[2].f); break;
        default: return false;
        }
        return true;
    }
    float fx = (float)x, fy = (float)y, fr;
    switch (op) {
    case IR_NEG: fr = -fx; break;
    case IR_ABS: fr = fabsf(fx); break;
    case IR_FLOOR: fr = floorf(fx); break;
    case IR_CEIL: fr = ceilf(fx); break;
    case IR_SQRT: fr = sqrtf(fx); break;
    case IR_ADD: fr = fx + fy; break;
    case IR_SUB: fr = fx - fy; break;
    case IR_MUL: fr = fx * fy; break;
    case IR_DIV: fr = fx / fy; break;
    case IR_REM: fr = fmodf(fx, fy); break;
    case IR_MAX: fr = isnan(fx) || isnan(fy) ? NAN : fmaxf(fx, fy); break;
    case IR_MIN: fr = isnan(fx) || isnan(fy) ? NAN : fminf(fx, fy); break;
    case IR_FMA:
        if (dt != DT_F32)
            return false;
        fr = fmaf(fx, fy, (float)a[2].f);
        break;
    default: return false;
    }
    r->f = (double)fr;
    return true;
}

/* ------------------------------------------------------------ the pass */

typedef struct Fold {
    IrFunc *f;
    int32_t *repl;   /* value id -> its replacement (itself if none) */
} Fold;

static int resolve(const Fold *p, int v)
{
    while (v >= 0 && p->repl[v] != v)
        v = p->repl[v];
    return v;
}

static bool is_const(const IrFunc *f, int v)
{
    return v >= 0 && f->ins[v].op == IR_CONST && !f->ins[v].dead;
}

/* The value of CONST v, normalized to its dtype. */
static Val const_val(const IrFunc *f, int v)
{
    const IrInstr *c = &f->ins[v];
    Val r = {0, 0};
    if (dsl_is_float(c->type.dtype))
        r.f = round_to(c->type.dtype, c->fval);
    else
        r.i = wrap(c->type.dtype, (uint64_t)c->ival);
    return r;
}

static void make_const(IrInstr *in, Val v)
{
    in->op = IR_CONST;
    for (int i = 0; i < 4; i++)
        in->opnd[i] = -1;
    in->nopnd = 0;
    in->param = -1;
    in->attr = 0;
    in->axis = -1;
    in->view = -1;
    in->region[0] = in->region[1] = -1;
    memset(in->perm, 0, sizeof in->perm);
    in->ival = dsl_is_float(in->type.dtype) ? 0 : v.i;
    in->fval = dsl_is_float(in->type.dtype) ? v.f : 0;
}

/* Forward `by` to every use of `id` (by has id's exact type). */
static void forward(Fold *p, int id, int by)
{
    p->repl[id] = by;
    p->f->ins[id].dead = true;
}

/* CONST v equals the int/bool/float number k. */
static bool const_is(const IrFunc *f, int v, double k)
{
    if (!is_const(f, v))
        return false;
    int dt = f->ins[v].type.dtype;
    Val x = const_val(f, v);
    if (dsl_is_float(dt))
        return x.f == k && !signbit(x.f) == !signbit(k);
    if (dt == DT_BOOL)
        return x.i == (k != 0);
    if (k == -1) /* all ones */
        return wrap(dt, UINT64_MAX) == x.i;
    return x.i == (int64_t)k;
}

/* Exact algebraic identities; returns true if `id` was simplified. */
static bool identity(Fold *p, int id)
{
    IrFunc *f = p->f;
    IrInstr *in = &f->ins[id];
    int op = in->op, dt = in->type.dtype;
    int a = in->opnd[0], b = in->opnd[1];
    const IrType *rt = &in->type;
    bool fl = dsl_is_float(dt), in_ = dsl_is_int(dt), bo = dt == DT_BOOL;
#define SAME(v) ((v) >= 0 && ir_type_eq(&f->ins[v].type, rt))
    if (op == IR_CVT && SAME(a)) {
        forward(p, id, a);
        return true;
    }
    if (op == IR_BCAST && SAME(a)) {
        forward(p, id, a);
        return true;
    }
    if (op == IR_SELECT) {
        if (is_const(f, a)) {
            int pick = const_val(f, a).i ? b : in->opnd[2];
            if (SAME(pick)) {
                forward(p, id, pick);
                return true;
            }
        }
        if (b == in->opnd[2] && SAME(b)) {
            forward(p, id, b);
            return true;
        }
        return false;
    }
    if (ir_op_nopnd[op] != 2 || !(ir_op_flags[op] & F_ELEM) || is_cmp(op))
        return false;
    /* x op k -> x, and k op x -> x for commutative ops */
    for (int s = 0; s < 2; s++) {
        int x = s ? b : a, k = s ? a : b;
        bool right = s == 0;
        bool comm = op == IR_ADD || op == IR_MUL || op == IR_AND ||
                    op == IR_OR || op == IR_XOR;
        if (!right && !comm)
            break;
        bool keep = false, zero = false;
        switch (op) {
        case IR_ADD:
            keep = (in_ && const_is(f, k, 0)) || (fl && const_is(f, k, -0.0));
            break;
        case IR_SUB:
            keep = (in_ || fl) && const_is(f, k, 0);
            break;
        case IR_MUL:
            keep = (in_ || fl) && const_is(f, k, 1);
            zero = in_ && const_is(f, k, 0);
            break;
        case IR_DIV:
            keep = (in_ || fl) && const_is(f, k, 1);
            break;
        case IR_REM:
            zero = in_ && const_is(f, k, 1);
            break;
        case IR_AND:
            keep = (in_ && const_is(f, k, -1)) || (bo && const_is(f, k, 1));
            zero = (in_ || bo) && const_is(f, k, 0);
            break;
        case IR_OR:
            keep = (in_ || bo) && const_is(f, k, 0);
            if (bo && const_is(f, k, 1)) {
                make_const(in, (Val){1, 0});
                return true;
            }
            break;
        case IR_XOR:
            keep = (in_ || bo) && const_is(f, k, 0);
            break;
        case IR_SHL: case IR_SHR:
            keep = in_ && const_is(f, k, 0);
            break;
        default:
            break;
        }
        if (keep && SAME(x)) {
            forward(p, id, x);
            return true;
        }
        if (zero) {
            make_const(in, (Val){0, 0});
            return true;
        }
    }
#undef SAME
    return false;
}

/* Fold instruction `id` if its operands are constants. */
static void fold_instr(Fold *p, int id)
{
    IrFunc *f = p->f;
    IrInstr *in = &f->ins[id];
    int op = in->op;
    if (op == IR_BCAST || op == IR_RESHAPE || op == IR_PERMUTE) {
        if (is_const(f, in->opnd[0])) {
            make_const(in, const_val(f, in->opnd[0]));
            return;
        }
        identity(p, id);
        return;
    }
    if (!(ir_op_flags[op] & F_ELEM))
        return;
    int n = ir_op_nopnd[op];
    Val v[3];
    bool all = true;
    for (int i = 0; i < n; i++) {
        if (!is_const(f, in->opnd[i]) ||
            !foldable_dtype(f->ins[in->opnd[i]].type.dtype))
            all = false;
    }
    if (!all || !foldable_dtype(in->type.dtype)) {
        identity(p, id);
        return;
    }
    for (int i = 0; i < n; i++)
        v[i] = const_val(f, in->opnd[i]);
    Val r = {0, 0};
    int rd = in->type.dtype;
    bool ok;
    if (op == IR_CVT) {
        ok = convert(f->ins[in->opnd[0]].type.dtype, rd, v[0], &r);
    } else if (op == IR_SELECT) {
        r = v[0].i ? v[1] : v[2];
        ok = f->ins[in->opnd[1]].type.dtype == rd &&
             f->ins[in->opnd[2]].type.dtype == rd;
    } else {
        int od = f->ins[in->opnd[0]].type.dtype;
        ok = true;
        for (int i = 1; i < n; i++)
            ok = ok && f->ins[in->opnd[i]].type.dtype == od;
        if (ok && dsl_is_float(od)) {
            ok = float_op(op, od, v, &r);
            if (ok && !is_cmp(op))
                r.f = round_to(rd, r.f);
        } else if (ok) {
            ok = int_op(op, od, v, &r);
        }
        if (ok && !is_cmp(op) && od != rd)
            ok = false; /* mixed dtypes: leave to a later lowering fix */
    }
    if (ok)
        make_const(in, r);
    else
        identity(p, id);
}

static void walk(Fold *p, int r)
{
    IrFunc *f = p->f;
    for (int k = 0; k < f->regions[r].n; k++) {
        int id = f->regions[r].ins[k];
        IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        int n = in->op == IR_YIELD ? in->nopnd : ir_op_nopnd[in->op];
        for (int i = 0; i < n && i < 4; i++)
            if (in->opnd[i] >= 0)
                in->opnd[i] = resolve(p, in->opnd[i]);
        if (in->view >= 0) {
            IrView *w = &f->views[in->view];
            for (int d = 0; d < w->ndims; d++)
                w->d[d].val = resolve(p, w->d[d].val);
        }
        fold_instr(p, id);
        for (int j = 0; j < 2; j++)
            if (in->region[j] >= 0)
                walk(p, in->region[j]);
    }
}

int ir_pass_fold(IrFunc *f, char *err, size_t errlen)
{
    Fold p = {.f = f};
    p.repl = malloc(sizeof(int32_t) * ((size_t)f->nins + 1));
    if (!p.repl)
        return IR_BUG(err, errlen, "out of memory");
    for (int i = 0; i < f->nins; i++)
        p.repl[i] = i;
    if (f->grid_region >= 0)
        walk(&p, f->grid_region);
    if (f->nregions > 0)
        walk(&p, 0);
    free(p.repl);
    return 0;
}
