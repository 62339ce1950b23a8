/* test_verify.c — ir_verify accepts well-formed Core IR and reports each
 * class of malformed IR with "in kernel K, %ID (op): ...". */
#include "irtest.h"

typedef struct Good {
    IrFunc *f;
    int pid, c64, off, x, two, y, lo, hi, step, loop, inner, st, loop_region;
    int vx, vy, vin;
} Good;

/* kernel k(X: f32[256], Y: f32[256], n: i32) grid(cdiv(n, 64)):
 *   off = pid*64; x = X[off +: 64]; y = x * 2.0;
 *   for i in 0..4 { Y[i + off +: 64] = y; }  Y[off +: 64] = y; */
static Good good(IrModule *m)
{
    Good g;
    int64_t dims[1] = {256};
    IrFunc *f = g.f = t_func(m, "k");
    int X = t_tensor(f, "X", DT_F32, 1, dims, false);
    int Y = t_tensor(f, "Y", DT_F32, 1, dims, true);
    int n = t_scalar_param(f, "n", DT_I32);
    f->grid_region = ir_region_new(f, -1);
    int gr = f->grid_region;
    int pn = t_param(f, gr, n);
    int c63 = t_ci(f, gr, T_S(DT_I32), 63);
    int s = t_op2(f, gr, IR_ADD, T_S(DT_I32), pn, c63);
    int c64g = t_ci(f, gr, T_S(DT_I32), 64);
    int q = t_op2(f, gr, IR_DIV, T_S(DT_I32), s, c64g);
    t_yield(f, gr, 1, &q);

    g.pid = ir_emit(f, 0, IR_PID, T_S(DT_I32), T_LOC);
    g.c64 = t_ci(f, 0, T_S(DT_I32), 64);
    g.off = t_op2(f, 0, IR_MUL, T_S(DT_I32), g.pid, g.c64);
    g.vx = t_view1(f, g.off, 64);
    g.x = t_load(f, 0, X, g.vx, T_1(DT_F32, 64), -1, -1);
    g.two = t_cf(f, 0, T_S(DT_F32), 2.0);
    g.y = t_op2(f, 0, IR_MUL, T_1(DT_F32, 64), g.x, g.two);
    g.lo = t_ci(f, 0, T_S(DT_I32), 0);
    g.hi = t_ci(f, 0, T_S(DT_I32), 4);
    g.step = t_ci(f, 0, T_S(DT_I32), 1);
    g.loop = t_op3(f, 0, IR_FOR, T_S(DT_I32), g.lo, g.hi, g.step);
    g.loop_region = ir_region_new(f, 0);
    f->ins[g.loop].region[0] = g.loop_region;
    g.inner = t_op2(f, g.loop_region, IR_ADD, T_S(DT_I32), g.loop, g.off);
    g.vin = t_view1(f, g.inner, 64);
    t_store(f, g.loop_region, Y, g.vin, g.y, -1);
    g.vy = t_view1(f, g.off, 64);
    g.st = t_store(f, 0, Y, g.vy, g.y, -1);
    return g;
}

static char err[1024];

/* Expect ir_verify(flags) to fail with `want` in the message. */
static void expect_err(IrFunc *f, int flags, const char *want, int line)
{
    int rc = ir_verify(f, flags, err, sizeof err);
    bool ok = rc == -1 && strstr(err, want) != NULL &&
              strstr(err, "internal compiler error") != NULL;
    if (!ok)
        fprintf(stderr, "line %d: expected error containing '%s', got rc=%d "
                "'%s'\n", line, want, rc, rc ? err : "");
    CHECK(ok);
}
#define EXPECT_ERR(f, flags, want) expect_err(f, flags, want, __LINE__)

static void expect_ok(IrFunc *f, int flags, int line)
{
    int rc = ir_verify(f, flags, err, sizeof err);
    if (rc)
        fprintf(stderr, "line %d: unexpected error: %s\n", line, err);
    CHECK(rc == 0);
}
#define EXPECT_OK(f, flags) expect_ok(f, flags, __LINE__)

static void test_good(void)
{
    IrModule *m = ir_module_new();
    Good g = good(m);
    EXPECT_OK(g.f, 0);
    EXPECT_OK(g.f, IR_VERIFY_FINAL);
    ir_module_free(m);
}

static void test_structure(void)
{
    IrModule *m = ir_module_new();
    Good g;

    g = good(m); /* operand out of range */
    g.f->ins[g.y].opnd[1] = 9999;
    EXPECT_ERR(g.f, 0, "out of range");

    g = good(m); /* message format */
    g.f->ins[g.y].opnd[1] = 9999;
    ir_verify(g.f, 0, err, sizeof err);
    char want[64];
    snprintf(want, sizeof want, "in kernel k, %%%d (mul): ", g.y);
    CHECK(strstr(err, want) != NULL);

    g = good(m); /* use before definition */
    g.f->ins[g.off].opnd[1] = g.x;
    EXPECT_ERR(g.f, 0, "not defined before");

    g = good(m); /* value of a nested region used outside it */
    g.f->ins[g.st].opnd[0] = g.inner;
    EXPECT_ERR(g.f, 0, "not defined before");

    g = good(m); /* the induction variable outside its loop */
    g.f->views[g.vy].d[0].val = g.loop;
    EXPECT_ERR(g.f, 0, "not visible");

    g = good(m); /* missing required operand */
    g.f->ins[g.y].opnd[1] = -1;
    EXPECT_ERR(g.f, 0, "operand 1 is -1");

    g = good(m); /* wrong operand count */
    g.f->ins[g.y].nopnd = 1;
    EXPECT_ERR(g.f, 0, "1 operands, expected 2");

    g = good(m); /* instruction in two regions */
    {
        IrRegion *lr = &g.f->regions[g.loop_region];
        lr->ins[lr->n++] = g.two; /* cap >= 8 from ir_emit */
        EXPECT_ERR(g.f, 0, "in regions");
    }

    g = good(m); /* nested region with the wrong parent */
    g.f->regions[g.loop_region].parent = g.f->grid_region;
    EXPECT_ERR(g.f, 0, "has parent");

    g = good(m); /* region owned twice */
    {
        int lo = t_ci(g.f, 0, T_S(DT_BOOL), 1);
        int iff = t_op1(g.f, 0, IR_IF, T_S(DT_VOID), lo);
        g.f->ins[iff].region[0] = g.loop_region;
        EXPECT_ERR(g.f, 0, "also owned");
    }

    g = good(m); /* yield in the body */
    t_yield(g.f, 0, 1, &g.off);
    EXPECT_ERR(g.f, 0, "yield only ends");

    g = good(m); /* grid region not ending in yield */
    t_ci(g.f, g.f->grid_region, T_S(DT_I32), 1);
    EXPECT_ERR(g.f, 0, "does not end in yield");

    g = good(m); /* a tile in the grid region */
    {
        IrRegion *gr = &g.f->regions[g.f->grid_region];
        g.f->ins[gr->ins[1]].type = T_1(DT_I32, 4);
        EXPECT_ERR(g.f, 0, "not a scalar op in the grid region");
    }

    g = good(m); /* a dead bad instruction is skipped */
    {
        int bad = t_op2(g.f, 0, IR_ADD, T_S(DT_I32), 9999, -5);
        g.f->ins[bad].dead = true;
        EXPECT_OK(g.f, IR_VERIFY_FINAL);
    }

    g = good(m); /* use of a dead value */
    g.f->ins[g.two].dead = true;
    EXPECT_ERR(g.f, 0, "dead value");

    g = good(m); /* an operand with no value (a store) */
    t_op2(g.f, 0, IR_ADD, T_S(DT_I32), g.off, g.st);
    EXPECT_ERR(g.f, 0, "which has no value");

    ir_module_free(m);
}

static void test_while(void)
{
    IrModule *m = ir_module_new();
    Good g = good(m);
    IrFunc *f = g.f;
    int w = ir_emit(f, 0, IR_WHILE, T_S(DT_VOID), T_LOC);
    int cr = ir_region_new(f, 0), br = ir_region_new(f, 0);
    f->ins[w].region[0] = cr;
    f->ins[w].region[1] = br;
    int c = t_op2(f, cr, IR_LT, T_S(DT_BOOL), g.pid, g.c64);
    int y = t_yield(f, cr, 1, &c);
    t_op2(f, br, IR_ADD, T_S(DT_I32), g.pid, g.c64);
    EXPECT_OK(f, IR_VERIFY_FINAL);
    f->ins[y].opnd[0] = g.off; /* condition yields an int */
    EXPECT_ERR(f, 0, "one bool scalar");
    f->ins[y].opnd[0] = c;
    f->ins[c].type = T_S(DT_I32); /* comparison gives i32 */
    EXPECT_ERR(f, 0, "comparison gives i32");
    ir_module_free(m);
}

static void test_memory(void)
{
    IrModule *m = ir_module_new();
    Good g;

    g = good(m); /* view dims != rank */
    g.f->views[g.vx].ndims = 2;
    g.f->views[g.vx].d[1] = g.f->views[g.vx].d[0];
    EXPECT_ERR(g.f, 0, "view has 2 indices");

    g = good(m); /* range start is not an int scalar */
    g.f->views[g.vy].d[0].val = g.two;
    EXPECT_ERR(g.f, 0, "not an int scalar");

    g = good(m); /* bad index kind */
    g.f->views[g.vx].d[0].kind = 7;
    EXPECT_ERR(g.f, 0, "bad kind");

    g = good(m); /* param index out of range */
    g.f->ins[g.x].param = 5;
    EXPECT_ERR(g.f, 0, "param index 5 out of range");

    g = good(m); /* load from a scalar param */
    g.f->ins[g.x].param = 2;
    EXPECT_ERR(g.f, 0, "is not a tensor");

    g = good(m); /* load result is not the view shape */
    g.f->ins[g.x].type = T_1(DT_F32, 32);
    EXPECT_ERR(g.f, 0, "view gives f32[64]");

    g = good(m); /* load result dtype is not the tensor dtype */
    g.f->ins[g.x].type = T_1(DT_F16, 64);
    EXPECT_ERR(g.f, 0, "view gives f32[64]");

    g = good(m); /* store to a tensor not marked written */
    g.f->params[1].written = false;
    EXPECT_ERR(g.f, 0, "not marked written");

    g = good(m); /* store value not broadcastable */
    {
        int v = t_cf(g.f, 0, T_1(DT_F32, 3), 1.0);
        g.f->ins[g.st].opnd[0] = v;
        /* move the store after the new const */
        IrRegion *r0 = &g.f->regions[0];
        for (int k = 0; k < r0->n; k++)
            if (r0->ins[k] == g.st) {
                r0->ins[k] = v;
                r0->ins[r0->n - 1] = g.st;
                break;
            }
        EXPECT_ERR(g.f, 0, "not broadcastable to f32[64]");
    }

    g = good(m); /* scalar store value: ok before FINAL, not after */
    g.f->ins[g.st].opnd[0] = g.two;
    EXPECT_OK(g.f, 0);
    EXPECT_ERR(g.f, IR_VERIFY_FINAL, "expected the shape of");

    g = good(m); /* store value of the wrong dtype: FINAL only */
    {
        int h = t_op1(g.f, 0, IR_CVT, T_1(DT_F16, 64), g.y);
        IrRegion *r0 = &g.f->regions[0];
        r0->ins[r0->n - 2] = h;
        r0->ins[r0->n - 1] = g.st;
        g.f->ins[g.st].opnd[0] = h;
        EXPECT_OK(g.f, 0);
        EXPECT_ERR(g.f, IR_VERIFY_FINAL, "dtype f16, tensor f32");
    }

    g = good(m); /* mask not bool */
    g.f->ins[g.x].opnd[0] = g.off;
    EXPECT_ERR(g.f, 0, "is not bool");

    g = good(m); /* pad of the wrong dtype */
    g.f->ins[g.x].opnd[1] = g.c64;
    EXPECT_ERR(g.f, 0, "pad i32");

    ir_module_free(m);
}

/* A fresh kernel with one tile operand %a : f32[4, 8] for type checks. */
static IrFunc *shape_func(IrModule *m, int *a)
{
    IrFunc *f = t_func(m, "s");
    *a = t_cf(f, 0, T_2(DT_F32, 4, 8), 1.0);
    return f;
}

static void test_types(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f;
    int a, x;

    f = shape_func(m, &a); /* DOT shapes */
    {
        int b = t_cf(f, 0, T_2(DT_F16, 8, 16), 1.0);
        int a16 = t_cf(f, 0, T_2(DT_F16, 4, 8), 1.0);
        x = t_op3(f, 0, IR_DOT, T_2(DT_F32, 4, 16), a16, b, -1);
        EXPECT_OK(f, IR_VERIFY_FINAL);
        f->ins[x].type = T_2(DT_F32, 4, 8);
        EXPECT_ERR(f, 0, "shapes f16[4, 8] x f16[8, 16] -> f32[4, 8]");
        f->ins[x].type = T_2(DT_F16, 4, 16);
        EXPECT_ERR(f, 0, "dtypes f16 x f16 -> f16");
        f->ins[x].type = T_2(DT_F32, 4, 16);
        f->ins[x].opnd[1] = a16;
        EXPECT_ERR(f, 0, "shapes");
        f->ins[x].opnd[1] = b;
        f->ins[x].opnd[2] = a; /* acc f32[4,8] */
        EXPECT_ERR(f, 0, "acc f32[4, 8]");
    }

    f = shape_func(m, &a); /* REDUCE */
    x = t_op1(f, 0, IR_REDUCE, T_1(DT_F32, 4), a);
    f->ins[x].axis = 1;
    EXPECT_OK(f, IR_VERIFY_FINAL);
    f->ins[x].axis = 0;
    EXPECT_ERR(f, 0, "expected shape of f32[8]");
    f->ins[x].axis = -1;
    EXPECT_ERR(f, 0, "expected shape of f32");
    f->ins[x].type = T_S(DT_F32);
    EXPECT_OK(f, 0);
    f->ins[x].attr = RED_ARGMAX;
    EXPECT_ERR(f, 0, "result dtype f32");
    f->ins[x].type = T_S(DT_I32);
    EXPECT_OK(f, 0);
    f->ins[x].axis = 2;
    EXPECT_ERR(f, 0, "axis 2 out of range");

    f = shape_func(m, &a); /* PERMUTE */
    x = t_op1(f, 0, IR_PERMUTE, T_2(DT_F32, 8, 4), a);
    f->ins[x].perm[0] = 1;
    f->ins[x].perm[1] = 0;
    EXPECT_OK(f, IR_VERIFY_FINAL);
    f->ins[x].perm[1] = 1;
    EXPECT_ERR(f, 0, "not a permutation");

    f = shape_func(m, &a); /* RESHAPE */
    x = t_op1(f, 0, IR_RESHAPE, T_3(DT_F32, 2, 2, 8), a);
    EXPECT_OK(f, IR_VERIFY_FINAL);
    f->ins[x].type = T_2(DT_F32, 2, 8);
    EXPECT_ERR(f, 0, "cannot reshape");

    f = shape_func(m, &a); /* BCAST */
    x = t_op1(f, 0, IR_BCAST, T_3(DT_F32, 3, 4, 8), a);
    EXPECT_OK(f, IR_VERIFY_FINAL);
    f->ins[x].type = T_2(DT_F32, 4, 16);
    EXPECT_ERR(f, 0, "cannot broadcast");

    f = shape_func(m, &a); /* elementwise shapes: broadcast vs FINAL */
    {
        int row = t_cf(f, 0, T_2(DT_F32, 1, 8), 1.0);
        x = t_op2(f, 0, IR_ADD, T_2(DT_F32, 4, 8), a, row);
        EXPECT_OK(f, 0);
        EXPECT_ERR(f, IR_VERIFY_FINAL, "expected the shape of f32[4, 8]");
        int bad = t_cf(f, 0, T_1(DT_F32, 3), 1.0);
        int y = t_op2(f, 0, IR_ADD, T_2(DT_F32, 4, 8), a, bad);
        EXPECT_ERR(f, 0, "not broadcastable");
        f->ins[y].dead = true;
    }

    f = shape_func(m, &a); /* binary dtypes: FINAL only */
    {
        int h = t_cf(f, 0, T_S(DT_F16), 1.0);
        x = t_op2(f, 0, IR_MUL, T_2(DT_F32, 4, 8), a, h);
        EXPECT_OK(f, 0);
        EXPECT_ERR(f, IR_VERIFY_FINAL, "dtype f16, result f32");
    }

    f = shape_func(m, &a); /* float math on ints, bitnot on floats */
    {
        int i = t_ci(f, 0, T_S(DT_I32), 1);
        x = t_op1(f, 0, IR_EXP, T_S(DT_I32), i);
        EXPECT_ERR(f, 0, "float math");
        f->ins[x].dead = true;
        x = t_op1(f, 0, IR_BITNOT, T_2(DT_F32, 4, 8), a);
        EXPECT_ERR(f, 0, "bitnot");
    }

    f = shape_func(m, &a); /* SELECT condition */
    x = t_op3(f, 0, IR_SELECT, T_2(DT_F32, 4, 8), a, a, a);
    EXPECT_ERR(f, 0, "condition");

    f = shape_func(m, &a); /* vars */
    {
        int v = t_var(f, "acc", T_2(DT_F32, 4, 8));
        x = ir_emit(f, 0, IR_VSET, T_S(DT_VOID), T_LOC);
        f->ins[x].param = v;
        f->ins[x].opnd[0] = a;
        int gv = ir_emit(f, 0, IR_VGET, T_2(DT_F32, 4, 8), T_LOC);
        f->ins[gv].param = v;
        EXPECT_OK(f, IR_VERIFY_FINAL);
        f->ins[gv].param = 3;
        EXPECT_ERR(f, 0, "var index 3 out of range");
        f->ins[gv].param = v;
        f->ins[gv].type = T_2(DT_F16, 4, 8);
        EXPECT_ERR(f, 0, "var acc is f32[4, 8]");
    }

    f = shape_func(m, &a); /* SIZE / PARAM indices */
    {
        int64_t dims[2] = {4, 8};
        int T = t_tensor(f, "T", DT_F32, 2, dims, false);
        x = t_size(f, 0, T, 1);
        EXPECT_OK(f, 0);
        f->ins[x].attr = 2;
        EXPECT_ERR(f, 0, "dim 2 out of range");
        f->ins[x].attr = 0;
        int p = t_param(f, 0, T);
        f->ins[p].type = T_S(DT_F32);
        EXPECT_ERR(f, 0, "is not a scalar");
    }

    f = shape_func(m, &a); /* FOR bounds of another dtype */
    {
        int lo = t_ci(f, 0, T_S(DT_I64), 0);
        int hi = t_ci(f, 0, T_S(DT_I32), 4);
        x = t_op3(f, 0, IR_FOR, T_S(DT_I32), lo, hi, hi);
        f->ins[x].region[0] = ir_region_new(f, 0);
        EXPECT_ERR(f, 0, "bound %");
    }

    ir_module_free(m);
}

int main(void)
{
    test_good();
    test_structure();
    test_while();
    test_memory();
    test_types();
    return t_done();
}
