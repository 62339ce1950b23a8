/* irtest.h — tiny helpers shared by the Core IR unit tests: a check counter
 * and shorthands to build IrFuncs by hand with the ir.c builder. */
#ifndef BLKC_IRTEST_H
#define BLKC_IRTEST_H

#include "compiler/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_pass, t_fail;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (cond)                                                          \
            t_pass++;                                                      \
        else {                                                             \
            t_fail++;                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                      \
        }                                                                  \
    } while (0)

static inline int t_done(void)
{
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}

static const DslLoc T_LOC = {1, 1};

static inline IrType T_S(int dt) { return ir_scalar(dt); }
static inline IrType T_1(int dt, int a)
{
    int32_t s[1] = {a};
    return ir_tile(dt, 1, s);
}
static inline IrType T_2(int dt, int a, int b)
{
    int32_t s[2] = {a, b};
    return ir_tile(dt, 2, s);
}
static inline IrType T_3(int dt, int a, int b, int c)
{
    int32_t s[3] = {a, b, c};
    return ir_tile(dt, 3, s);
}

/* A function with a body region (0) and room for 8 params and 4 vars. */
static inline IrFunc *t_func(IrModule *m, const char *name)
{
    IrFunc *f = ir_func_new(m, name);
    ir_region_new(f, -1);
    f->params = dsl_alloc(&m->arena, sizeof(IrParam) * 8);
    f->vars = calloc(4, sizeof(IrVar)); /* func_free frees vars */
    return f;
}

/* Add a tensor param of rank `rank` with static dims (dims[d] >= 0). */
static inline int t_tensor(IrFunc *f, const char *name, int dt, int rank,
                           const int64_t *dims, bool written)
{
    IrParam *p = &f->params[f->nparams];
    p->name = name;
    p->kind = PK_TENSOR;
    p->dtype = (uint8_t)dt;
    p->rank = (uint8_t)rank;
    for (int d = 0; d < rank; d++)
        p->dims[d] = dims[d];
    p->written = written;
    return f->nparams++;
}

static inline int t_scalar_param(IrFunc *f, const char *name, int dt)
{
    IrParam *p = &f->params[f->nparams];
    p->name = name;
    p->kind = PK_SCALAR;
    p->dtype = (uint8_t)dt;
    return f->nparams++;
}

static inline int t_var(IrFunc *f, const char *name, IrType t)
{
    f->vars[f->nvars].name = name;
    f->vars[f->nvars].type = t;
    return f->nvars++;
}

static inline int t_ci(IrFunc *f, int r, IrType t, int64_t v)
{
    int id = ir_emit(f, r, IR_CONST, t, T_LOC);
    f->ins[id].ival = v;
    return id;
}

static inline int t_cf(IrFunc *f, int r, IrType t, double v)
{
    int id = ir_emit(f, r, IR_CONST, t, T_LOC);
    f->ins[id].fval = v;
    return id;
}

static inline int t_op1(IrFunc *f, int r, int op, IrType t, int a)
{
    int id = ir_emit(f, r, op, t, T_LOC);
    f->ins[id].opnd[0] = a;
    return id;
}

static inline int t_op2(IrFunc *f, int r, int op, IrType t, int a, int b)
{
    int id = ir_emit(f, r, op, t, T_LOC);
    f->ins[id].opnd[0] = a;
    f->ins[id].opnd[1] = b;
    return id;
}

static inline int t_op3(IrFunc *f, int r, int op, IrType t, int a, int b,
                        int c)
{
    int id = ir_emit(f, r, op, t, T_LOC);
    f->ins[id].opnd[0] = a;
    f->ins[id].opnd[1] = b;
    f->ins[id].opnd[2] = c;
    return id;
}

static inline int t_param(IrFunc *f, int r, int p)
{
    int id = ir_emit(f, r, IR_PARAM, T_S(f->params[p].dtype), T_LOC);
    f->ins[id].param = p;
    return id;
}

static inline int t_size(IrFunc *f, int r, int p, int dim)
{
    int id = ir_emit(f, r, IR_SIZE, T_S(DT_I32), T_LOC);
    f->ins[id].param = p;
    f->ins[id].attr = dim;
    return id;
}

/* A 1-D range view `start +: len` (or 2-D with a scalar row first). */
static inline int t_view1(IrFunc *f, int start, int len)
{
    IrView v;
    memset(&v, 0, sizeof v);
    v.ndims = 1;
    v.d[0].kind = IDX_RANGE;
    v.d[0].val = start;
    v.d[0].len = len;
    return ir_view_new(f, &v);
}

static inline int t_load(IrFunc *f, int r, int p, int view, IrType t,
                         int mask, int pad)
{
    int id = ir_emit(f, r, IR_LOAD, t, T_LOC);
    f->ins[id].param = p;
    f->ins[id].view = view;
    f->ins[id].opnd[0] = mask;
    f->ins[id].opnd[1] = pad;
    return id;
}

static inline int t_store(IrFunc *f, int r, int p, int view, int val,
                          int mask)
{
    int id = ir_emit(f, r, IR_STORE, T_S(DT_VOID), T_LOC);
    f->ins[id].param = p;
    f->ins[id].view = view;
    f->ins[id].opnd[0] = val;
    f->ins[id].opnd[1] = mask;
    return id;
}

static inline int t_yield(IrFunc *f, int r, int n, const int *vals)
{
    int id = ir_emit(f, r, IR_YIELD, T_S(DT_VOID), T_LOC);
    f->ins[id].nopnd = (uint8_t)n;
    for (int i = 0; i < n; i++)
        f->ins[id].opnd[i] = vals[i];
    return id;
}

/* Compare the printed function with `want`; print both on mismatch. */
static inline bool t_golden(const IrFunc *f, const char *want)
{
    DslBuf b = {0};
    ir_print_func(&b, f);
    bool ok = b.data && strcmp(b.data, want) == 0;
    if (!ok)
        fprintf(stderr, "--- expected:\n%s--- got:\n%s---\n", want,
                b.data ? b.data : "(null)");
    dsl_buf_free(&b);
    return ok;
}

#endif
