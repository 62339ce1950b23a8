/* eval.c — ir_eval_grid: host-side evaluation of a kernel's grid region.
 *
 * Every backend's launcher calls it with the launch's scalar arguments and
 * tensor shapes. The region holds scalar ops only; ints wrap at their dtype's
 * width like the kernel code would. Unlike kernel code, a division by zero
 * here is a launch error, and so is a negative or too large extent. */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRID_MAX INT64_C(2147483647)

static int64_t wrap(int dt, uint64_t u)
{
    if (dt == DT_BOOL)
        return u != 0;
    int b = dsl_dtype_bytes(dt) * 8;
    if (b >= 64)
        return (int64_t)u;
    uint64_t m = (UINT64_C(1) << b) - 1;
    u &= m;
    if (dsl_dtype_kind(dt) == 'i' && (u >> (b - 1)))
        u |= ~m;
    return (int64_t)u;
}

static double round_float(int dt, double x)
{
    return dt == DT_F64 ? x : (double)(float)x;
}

typedef struct Ev {
    const IrFunc *f;
    const IrLaunchEnv *env;
    IrScalarVal *val;
    char *err;
    size_t errlen;
} Ev;

static int bad(Ev *e, int id, const char *what)
{
    return IR_BUG(e->err, e->errlen, "in kernel %s, grid %%%d (%s): %s",
                  e->f->name, id, ir_op_names[e->f->ins[id].op], what);
}

static int div_zero(Ev *e, int id)
{
    (void)id;
    snprintf(e->err, e->errlen,
             "kernel %s: division by zero while computing the launch grid",
             e->f->name);
    return -1;
}

static int cmp_of(int op, int c)
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

/* Convert value v of dtype `from` to dtype `to`. */
static IrScalarVal convert(int from, int to, IrScalarVal v)
{
    IrScalarVal r = {.i = 0};
    bool ff = dsl_is_float(from), tf = dsl_is_float(to);
    if (ff && tf) {
        r.f = round_float(to, v.f);
    } else if (ff) {
        if (to == DT_BOOL)
            r.i = v.f != 0;
        else if (isnan(v.f) || fabs(v.f) >= 0x1p63)
            r.i = 0; /* out of range: unspecified, keep it deterministic */
        else
            r.i = wrap(to, (uint64_t)(int64_t)trunc(v.f));
    } else if (tf) {
        r.f = dsl_dtype_kind(from) == 'u' ? (double)(uint64_t)v.i
                                          : (double)v.i;
        r.f = round_float(to, r.f);
    } else {
        r.i = wrap(to, (uint64_t)v.i);
    }
    return r;
}

static int eval_int(Ev *e, int id, int op, int dt, const IrScalarVal *a,
                    IrScalarVal *r)
{
    bool u = dsl_dtype_kind(dt) == 'u' || dt == DT_BOOL;
    uint64_t x = (uint64_t)a[0].i, y = (uint64_t)a[1].i, v;
    int64_t sx = a[0].i, sy = a[1].i;
    int w = dsl_dtype_bytes(dt) * 8;
    if (op >= IR_EQ && op <= IR_GE) {
        r->i = cmp_of(op, u ? (x < y ? -1 : x > y) : (sx < sy ? -1 : sx > sy));
        return 0;
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
        if (y == 0)
            return div_zero(e, id);
        if (u)
            v = op == IR_DIV ? x / y : x % y;
        else if (sy == -1)
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
    default: return bad(e, id, "op not supported on ints in the grid");
    }
    r->i = wrap(dt, v);
    return 0;
}

static int eval_float(Ev *e, int id, int op, int dt, const IrScalarVal *a,
                      IrScalarVal *r)
{
    double x = a[0].f, y = a[1].f;
    switch (op) {
    case IR_EQ: r->i = x == y; return 0;
    case IR_NE: r->i = x != y; return 0;
    case IR_LT: r->i = x < y; return 0;
    case IR_LE: r->i = x <= y; return 0;
    case IR_GT: r->i = x > y; return 0;
    case IR_GE: r->i = x >= y; return 0;
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
    default: return bad(e, id, "op not supported on floats in the grid");
    }
    r->f = round_float(dt, r->f);
    return 0;
}

static int eval_instr(Ev *e, int id)
{
    const IrFunc *f = e->f;
    const IrInstr *in = &f->ins[id];
    IrScalarVal *r = &e->val[id];
    int dt = in->type.dtype, op = in->op;
    if (in->type.rank != 0 && op != IR_YIELD)
        return bad(e, id, "tile value in the grid region");
    switch (op) {
    case IR_CONST:
        if (dsl_is_float(dt))
            r->f = round_float(dt, in->fval);
        else
            r->i = wrap(dt, (uint64_t)in->ival);
        return 0;
    case IR_PARAM:
        if (!e->env || !e->env->scalars || in->param < 0 ||
            in->param >= f->nparams)
            return bad(e, id, "no scalar argument");
        *r = e->env->scalars[in->param];
        if (!dsl_is_float(dt))
            r->i = wrap(dt, (uint64_t)r->i);
        return 0;
    case IR_SIZE:
        if (!e->env || !e->env->shapes || in->param < 0 ||
            in->param >= f->nparams || in->attr < 0 ||
            in->attr >= IR_MAX_RANK)
            return bad(e, id, "no tensor shape");
        r->i = wrap(dt, (uint64_t)e->env->shapes[in->param][in->attr]);
        return 0;
    case IR_CVT:
        *r = convert(f->ins[in->opnd[0]].type.dtype, dt, e->val[in->opnd[0]]);
        return 0;
    case IR_SELECT:
        *r = e->val[in->opnd[0]].i ? e->val[in->opnd[1]]
                                   : e->val[in->opnd[2]];
        return 0;
    default:
        break;
    }
    if (!(ir_op_flags[op] & F_ELEM) || ir_op_nopnd[op] > 2)
        return bad(e, id, "op not supported in the grid region");
    IrScalarVal a[2] = {{.i = 0}, {.i = 0}};
    for (int i = 0; i < ir_op_nopnd[op]; i++) {
        if (in->opnd[i] < 0 || in->opnd[i] >= f->nins)
            return bad(e, id, "missing operand");
        a[i] = e->val[in->opnd[i]];
    }
    int od = f->ins[in->opnd[0]].type.dtype;
    if (dsl_is_float(od))
        return eval_float(e, id, op, od, a, r);
    if (eval_int(e, id, op, od, a, r))
        return -1;
    if (!(op >= IR_EQ && op <= IR_GE))
        r->i = wrap(dt, (uint64_t)r->i);
    return 0;
}

int ir_eval_grid(const IrFunc *f, const IrLaunchEnv *env, int64_t grid[3],
                 char *err, size_t errlen)
{
    grid[0] = grid[1] = grid[2] = 1;
    if (f->grid_region < 0)
        return 0;
    Ev e = {.f = f, .env = env, .err = err, .errlen = errlen};
    e.val = calloc((size_t)f->nins + 1, sizeof(IrScalarVal));
    if (!e.val)
        return IR_BUG(err, errlen, "out of memory");
    const IrRegion *reg = &f->regions[f->grid_region];
    int rc = -1;
    bool yielded = false;
    for (int k = 0; k < reg->n; k++) {
        int id = reg->ins[k];
        const IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        if (in->op != IR_YIELD) {
            if (eval_instr(&e, id))
                goto out;
            continue;
        }
        if (in->nopnd < 1 || in->nopnd > 3) {
            bad(&e, id, "yield of 1..3 extents expected");
            goto out;
        }
        for (int i = 0; i < in->nopnd; i++) {
            int o = in->opnd[i];
            int odt = f->ins[o].type.dtype;
            if (!dsl_is_int(odt)) {
                bad(&e, id, "grid extent is not an integer");
                goto out;
            }
            int64_t g = e.val[o].i;
            bool uns = dsl_dtype_kind(odt) == 'u';
            if (!uns && g < 0) {
                snprintf(err, errlen, "kernel %s: grid extent %" PRId64
                         " along axis %d is negative", f->name, g, i);
                goto out;
            }
            if ((uns && (uint64_t)g > (uint64_t)GRID_MAX) || g > GRID_MAX) {
                snprintf(err, errlen, "kernel %s: grid extent %" PRIu64
                         " along axis %d exceeds %" PRId64, f->name,
                         (uint64_t)g, i, GRID_MAX);
                goto out;
            }
            grid[i] = g;
        }
        yielded = true;
        break;
    }
    if (!yielded) {
        IR_BUG(err, errlen, "in kernel %s: grid region has no yield",
               f->name);
        goto out;
    }
    rc = 0;
out:
    if (rc)
        grid[0] = grid[1] = grid[2] = 1;
    free(e.val);
    return rc;
}

int ir_eval_instr(const IrFunc *f, int id, const IrLaunchEnv *env,
                  IrScalarVal *vals, char *err, size_t errlen)
{
    Ev e = {.f = f, .env = env, .val = vals, .err = err, .errlen = errlen};
    return eval_instr(&e, id);
}
