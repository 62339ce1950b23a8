/* scalar.c — ir_scalar_*: the scalar semantics of kernel code, in one place.
 *
 * Used by the host evaluator (eval.c: the grid region and device functions)
 * and by constant folding (fold.c), so that both compute what the kernel
 * code would: ints wrap at their dtype's width (two's complement), bools are
 * 0/1, f16/bf16 arithmetic is done in f32 and rounded to nearest even after
 * each op, float->int truncates, int->float rounds once (correctly).
 *
 * What is left to the callers, on purpose: an int x/0 or x%0 is reported
 * (IR_SCALAR_DIV_ZERO, value 0: what kernel code gives; eval.c makes it a
 * launch error, fold.c folds to 0), and so is a result the runtime leaves
 * unspecified (IR_SCALAR_UNSPEC, with a deterministic pick: eval.c takes it,
 * fold.c refuses to fold). Which dtypes and ops to fold at all (no f8, no
 * transcendental math) is fold.c's business. */
#include "ir.h"

#include <math.h>
#include <string.h>

static int bits_of(int dt) { return dsl_dtype_bytes(dt) * 8; }

int64_t ir_scalar_wrap(int dt, uint64_t u)
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

double ir_scalar_round(int dt, double x)
{
    switch (dt) {
    case DT_F64: return x;
    case DT_F32: return (double)(float)x;
    case DT_F16: return round_fmt(x, 10, -14, 15);
    case DT_BF16: return round_fmt(x, 7, -126, 127);
    default: return x; /* f8: not modelled */
    }
}

IrScalarVal ir_scalar_const(const IrInstr *c)
{
    IrScalarVal r = {.i = 0};
    int dt = c->type.dtype;
    if (dsl_is_float(dt))
        r.f = ir_scalar_round(dt, c->fval);
    else
        r.i = ir_scalar_wrap(dt, (uint64_t)c->ival);
    return r;
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

IrScalarStatus ir_scalar_cvt(int from, int to, IrScalarVal v, IrScalarVal *r)
{
    char kf = dsl_dtype_kind(from), kt = dsl_dtype_kind(to);
    memset(r, 0, sizeof *r);
    if (kf == 'f') {
        if (kt == 'f') {
            r->f = ir_scalar_round(to, v.f);
        } else if (kt == 'b') {
            r->i = v.f != 0; /* NaN != 0 */
        } else if (!isnan(v.f)) {
            double t = trunc(v.f);
            int b = bits_of(to);
            double lo = kt == 'u' ? 0 : -ldexp(1.0, b - 1);
            double hi = kt == 'u' ? ldexp(1.0, b) : ldexp(1.0, b - 1);
            if (!(t >= lo && t < hi)) {
                /* out of range: unspecified at runtime */
                if (fabs(t) < 0x1p63)
                    r->i = ir_scalar_wrap(to, (uint64_t)(int64_t)t);
                return IR_SCALAR_UNSPEC;
            }
            r->i = kt == 'u' && t >= ldexp(1.0, 63)
                       ? ir_scalar_wrap(to, (uint64_t)t)
                       : ir_scalar_wrap(to, (uint64_t)(int64_t)t);
        }
        return IR_SCALAR_OK;
    }
    /* from int or bool */
    if (kt == 'f') {
        bool neg = kf == 'i' && v.i < 0;
        uint64_t mag = neg ? (uint64_t)0 - (uint64_t)v.i : (uint64_t)v.i;
        if (to == DT_F64)
            r->f = kf == 'i' ? (double)v.i : (double)(uint64_t)v.i;
        else if (to == DT_F32)
            r->f = kf == 'i' ? (double)(float)v.i
                             : (double)(float)(uint64_t)v.i;
        else
            r->f = ir_scalar_round(to, int_for_round(mag, neg));
    } else {
        r->i = ir_scalar_wrap(to, (uint64_t)v.i);
    }
    return IR_SCALAR_OK;
}

bool ir_scalar_is_cmp(int op)
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

/* Int/bool op; bools are unsigned 0/1, wrapped back to 0/1. */
static IrScalarStatus int_op(int op, int dt, const IrScalarVal *a,
                             IrScalarVal *r)
{
    bool u = dsl_dtype_kind(dt) == 'u' || dt == DT_BOOL;
    uint64_t x = (uint64_t)a[0].i, y = (uint64_t)a[1].i, v;
    int64_t sx = a[0].i, sy = a[1].i;
    int w = bits_of(dt);
    if (ir_scalar_is_cmp(op)) {
        int c = u ? (x < y ? -1 : x > y) : (sx < sy ? -1 : sx > sy);
        r->i = cmp_result(op, c);
        return IR_SCALAR_OK;
    }
    switch (op) {
    case IR_NEG: v = (uint64_t)0 - x; break;
    case IR_NOT: v = !x; break;
    case IR_BITNOT: v = ~x; break;
    case IR_ABS: v = !u && sx < 0 ? (uint64_t)0 - x : x; break;
    case IR_ADD: v = x + y; break;
    case IR_SUB: v = x - y; break;
    case IR_MUL: v = x * y; break;
    case IR_DIV: case IR_REM:
        if (y == 0) {
            r->i = 0;
            return IR_SCALAR_DIV_ZERO;
        }
        if (u)
            v = op == IR_DIV ? x / y : x % y;
        else if (sy == -1) /* INT_MIN / -1 wraps */
            v = op == IR_DIV ? (uint64_t)0 - x : 0;
        else
            v = (uint64_t)(op == IR_DIV ? sx / sy : sx % sy);
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
    default: return IR_SCALAR_UNSUPPORTED;
    }
    r->i = ir_scalar_wrap(dt, v);
    return IR_SCALAR_OK;
}

/* Float op (exact ops only). f64 computes in double; f32, f16 and bf16 in
 * float, the result then rounded to dt. */
static IrScalarStatus float_op(int op, int dt, const IrScalarVal *a,
                               IrScalarVal *r)
{
    double x = a[0].f, y = a[1].f;
    switch (op) {
    case IR_EQ: r->i = x == y; return IR_SCALAR_OK;
    case IR_NE: r->i = x != y; return IR_SCALAR_OK;
    case IR_LT: r->i = x < y; return IR_SCALAR_OK;
    case IR_LE: r->i = x <= y; return IR_SCALAR_OK;
    case IR_GT: r->i = x > y; return IR_SCALAR_OK;
    case IR_GE: r->i = x >= y; return IR_SCALAR_OK;
    default: break;
    }
    /* max/min of +0 and -0: either zero may come out at runtime */
    IrScalarStatus st = (op == IR_MAX || op == IR_MIN) && x == 0 && y == 0 &&
                                signbit(x) != signbit(y)
                            ? IR_SCALAR_UNSPEC
                            : IR_SCALAR_OK;
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
        default: return IR_SCALAR_UNSUPPORTED;
        }
        return st;
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
        if (dt != DT_F32) /* narrow FMA: one rounding or two, per backend */
            return IR_SCALAR_UNSUPPORTED;
        fr = fmaf(fx, fy, (float)a[2].f);
        break;
    default: return IR_SCALAR_UNSUPPORTED;
    }
    r->f = ir_scalar_round(dt, (double)fr);
    return st;
}

IrScalarStatus ir_scalar_op(int op, int dt, const IrScalarVal *a,
                            IrScalarVal *r)
{
    return dsl_is_float(dt) ? float_op(op, dt, a, r) : int_op(op, dt, a, r);
}
