/* eval.c — ir_eval_grid: host-side evaluation of a kernel's grid region.
 *
 * Every backend's launcher calls it with the launch's scalar arguments and
 * tensor shapes. The region holds scalar ops only, computed like the kernel
 * code would (ir_scalar_*, scalar.c, shared with constant folding). Unlike
 * kernel code, an int division by zero here is a launch error, and so is a
 * negative or too large extent. */
#include "ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRID_MAX INT64_C(2147483647)

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
        *r = ir_scalar_const(in);
        return 0;
    case IR_PARAM:
        if (!e->env || !e->env->scalars || in->param < 0 ||
            in->param >= f->nparams)
            return bad(e, id, "no scalar argument");
        *r = e->env->scalars[in->param];
        if (!dsl_is_float(dt))
            r->i = ir_scalar_wrap(dt, (uint64_t)r->i);
        return 0;
    case IR_SIZE:
        if (!e->env || !e->env->shapes || in->param < 0 ||
            in->param >= f->nparams || in->attr < 0 ||
            in->attr >= IR_MAX_RANK)
            return bad(e, id, "no tensor shape");
        r->i = ir_scalar_wrap(dt,
                             (uint64_t)e->env->shapes[in->param][in->attr]);
        return 0;
    case IR_RANK: /* grid(...) may depend on the rank (LANGUAGE.md §7) */
        r->i = e->env && e->env->world > 0 ? e->env->rank : 0;
        return 0;
    case IR_WORLD:
        r->i = e->env && e->env->world > 0 ? e->env->world : 1;
        return 0;
    case IR_CVT: /* float->int out of range: the deterministic pick */
        ir_scalar_cvt(f->ins[in->opnd[0]].type.dtype, dt, e->val[in->opnd[0]],
                      r);
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
    switch (ir_scalar_op(op, od, a, r)) {
    case IR_SCALAR_OK: case IR_SCALAR_UNSPEC:
        break;
    case IR_SCALAR_DIV_ZERO: /* unlike kernel code (0), an error here */
        return div_zero(e, id);
    default:
        return bad(e, id, dsl_is_float(od)
                              ? "op not supported on floats in the grid"
                              : "op not supported on ints in the grid");
    }
    if (!dsl_is_float(od) && !ir_scalar_is_cmp(op))
        r->i = ir_scalar_wrap(dt, (uint64_t)r->i);
    return 0;
}

int ir_eval_grid(const IrFunc *f, const IrLaunchEnv *env, int64_t grid[3],
                 char *err, size_t errlen)
{
    grid[0] = grid[1] = grid[2] = 1;
    if (f->grid_region < 0)
        return 0;
    Ev e = {.f = f, .env = env, .err = err, .errlen = errlen};
    /* a value per instruction id: on the stack for the usual kernel (this
     * runs at every launch, where a calloc cost a third of the time) */
    IrScalarVal small[256];
    size_t nv = (size_t)f->nins + 1;
    e.val = nv <= sizeof small / sizeof *small ? small : calloc(nv, sizeof(IrScalarVal));
    if (!e.val)
        return IR_BUG(err, errlen, "out of memory");
    if (e.val == small)
        memset(small, 0, nv * sizeof *small);
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
    if (e.val != small)
        free(e.val);
    return rc;
}

int ir_eval_instr(const IrFunc *f, int id, const IrLaunchEnv *env,
                  IrScalarVal *vals, char *err, size_t errlen)
{
    Ev e = {.f = f, .env = env, .val = vals, .err = err, .errlen = errlen};
    return eval_instr(&e, id);
}
