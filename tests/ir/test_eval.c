/* test_eval.c — ir_eval_grid: cdiv-style grids from symbolic sizes and
 * scalar params, missing axes, int wrap-around, rank() and world() (a
 * launch outside a world is rank 0 of 1), and the launch errors (negative
 * or too large extents, division by zero). */
#include "irtest.h"

static char err[1024];

/* cdiv(a, b) = (a + b - 1) / b in the grid region, i32. */
static int cdiv(IrFunc *f, int r, int a, int64_t b)
{
    int bm1 = t_ci(f, r, T_S(DT_I32), b - 1);
    int s = t_op2(f, r, IR_ADD, T_S(DT_I32), a, bm1);
    return t_op2(f, r, IR_DIV, T_S(DT_I32), s, t_ci(f, r, T_S(DT_I32), b));
}

static void test_no_grid(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "k");
    int64_t g[3] = {7, 7, 7};
    CHECK(ir_eval_grid(f, NULL, g, err, sizeof err) == 0);
    CHECK(g[0] == 1 && g[1] == 1 && g[2] == 1);
    ir_module_free(m);
}

static void test_matmul_grid(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "mm");
    int64_t dims[2] = {-1, -2};
    int A = t_tensor(f, "A", DT_F32, 2, dims, false);
    int n = t_scalar_param(f, "n", DT_I32);
    f->grid_region = ir_region_new(f, -1);
    int gr = f->grid_region;
    int M = t_size(f, gr, A, 0), N = t_size(f, gr, A, 1);
    int ys[2] = {cdiv(f, gr, M, 64), cdiv(f, gr, N, 32)};
    t_yield(f, gr, 2, ys);
    CHECK(ir_verify(f, IR_VERIFY_FINAL, err, sizeof err) == 0);
    IrScalarVal sc[2] = {{.i = 0}, {.i = 5}};
    int64_t shapes[2][IR_MAX_RANK] = {{1000, 33}, {0}};
    IrLaunchEnv env = {.scalars = sc, .shapes = (const int64_t (*)[IR_MAX_RANK])shapes};
    int64_t g[3];
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0);
    CHECK(g[0] == 16 && g[1] == 2 && g[2] == 1);
    shapes[0][0] = 0;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0 && g[0] == 0);
    (void)n;
    ir_module_free(m);
}

/* grid(cdiv(n, 128)) with a scalar param n. */
static IrFunc *param_grid(IrModule *m, int dt)
{
    IrFunc *f = t_func(m, "p");
    int n = t_scalar_param(f, "n", dt);
    f->grid_region = ir_region_new(f, -1);
    int gr = f->grid_region;
    int pn = t_param(f, gr, n);
    if (dt != DT_I32)
        pn = t_op1(f, gr, IR_CVT, T_S(DT_I32), pn);
    int y = cdiv(f, gr, pn, 128);
    t_yield(f, gr, 1, &y);
    return f;
}

static void test_errors(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = param_grid(m, DT_I32);
    IrScalarVal sc[1];
    IrLaunchEnv env = {.scalars = sc};
    int64_t g[3];
    sc[0].i = 1000;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0 && g[0] == 8);
    sc[0].i = -500; /* (-500 + 127) / 128 = -2 */
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == -1);
    CHECK(strstr(err, "grid extent -2 along axis 0 is negative") != NULL);
    CHECK(strstr(err, "internal") == NULL);
    CHECK(g[0] == 1 && g[1] == 1 && g[2] == 1);
    sc[0].i = INT32_MAX; /* i32 wraps: (2^31-1 + 127) < 0 */
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == -1);
    CHECK(strstr(err, "is negative") != NULL);

    f = param_grid(m, DT_F32); /* float param, converted */
    env.scalars = sc;
    sc[0].f = 300.9;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0 && g[0] == 3);

    /* a constant extent on axis 1, too large on axis 2 */
    f = t_func(m, "big");
    int nb = t_scalar_param(f, "n", DT_I64);
    f->grid_region = ir_region_new(f, -1);
    int gr = f->grid_region;
    int ys[3] = {t_ci(f, gr, T_S(DT_I32), 4), t_ci(f, gr, T_S(DT_I32), -3),
                 t_param(f, gr, nb)};
    t_yield(f, gr, 3, ys);
    sc[0].i = INT64_C(1) << 40;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == -1);
    CHECK(strstr(err, "grid extent -3 along axis 1 is negative") != NULL);
    f->ins[ys[1]].ival = 3;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == -1);
    CHECK(strstr(err, "grid extent 1099511627776 along axis 2 exceeds "
                      "2147483647") != NULL);
    sc[0].i = 2147483647;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0);
    CHECK(g[0] == 4 && g[1] == 3 && g[2] == 2147483647);

    /* division by zero */
    f = t_func(m, "dz");
    int nz = t_scalar_param(f, "n", DT_I32);
    f->grid_region = ir_region_new(f, -1);
    gr = f->grid_region;
    int q = t_op2(f, gr, IR_REM, T_S(DT_I32), t_ci(f, gr, T_S(DT_I32), 10),
                  t_param(f, gr, nz));
    t_yield(f, gr, 1, &q);
    sc[0].i = 0;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == -1);
    CHECK(strstr(err, "division by zero") != NULL);
    sc[0].i = 4;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0 && g[0] == 2);
    ir_module_free(m);
}

/* max/min/where/comparisons/shifts/bitwise and u8 wrap. */
static void test_ops(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "ops");
    int n = t_scalar_param(f, "n", DT_I32);
    f->grid_region = ir_region_new(f, -1);
    int gr = f->grid_region;
    int pn = t_param(f, gr, n);
    int c1 = t_ci(f, gr, T_S(DT_I32), 1);
    int c3 = t_ci(f, gr, T_S(DT_I32), 3);
    int mx = t_op2(f, gr, IR_MAX, T_S(DT_I32), pn, c1);          /* max(n,1) */
    int sh = t_op2(f, gr, IR_SHL, T_S(DT_I32), c1, c3);          /* 8 */
    int lt = t_op2(f, gr, IR_LT, T_S(DT_BOOL), pn, sh);
    int sel = t_op3(f, gr, IR_SELECT, T_S(DT_I32), lt, sh, pn);  /* max(n,8) */
    int u = t_op1(f, gr, IR_CVT, T_S(DT_U8), t_ci(f, gr, T_S(DT_I32), 250));
    int u2 = t_op2(f, gr, IR_ADD, T_S(DT_U8), u,
                   t_ci(f, gr, T_S(DT_U8), 10));                  /* 4 */
    int sr = t_op2(f, gr, IR_SHR, T_S(DT_I32), t_op1(f, gr, IR_NEG,
                   T_S(DT_I32), sh), c1);                         /* -4 */
    int ab = t_op1(f, gr, IR_ABS, T_S(DT_I32), sr);               /* 4 */
    int x = t_op2(f, gr, IR_XOR, T_S(DT_I32), ab, c1);            /* 5 */
    int ys[3] = {mx, sel, t_op2(f, gr, IR_MIN, T_S(DT_I32), x,
                                t_op1(f, gr, IR_CVT, T_S(DT_I32), u2))};
    t_yield(f, gr, 3, ys);
    CHECK(ir_verify(f, IR_VERIFY_FINAL, err, sizeof err) == 0);
    IrScalarVal sc[1] = {{.i = 0}};
    IrLaunchEnv env = {.scalars = sc};
    int64_t g[3];
    int rc = ir_eval_grid(f, &env, g, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CHECK(rc == 0 && g[0] == 1 && g[1] == 8 && g[2] == 4);
    sc[0].i = 20;
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0);
    CHECK(g[0] == 20 && g[1] == 20 && g[2] == 4);
    ir_module_free(m);
}

/* grid(rank() + 2, cdiv(10, world())): outside a world and on ranks. */
static void test_rank_grid(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "r");
    f->grid_region = ir_region_new(f, -1);
    int gr = f->grid_region;
    int rk = ir_emit(f, gr, IR_RANK, T_S(DT_I32), T_LOC);
    int wd = ir_emit(f, gr, IR_WORLD, T_S(DT_I32), T_LOC);
    int s = t_op2(f, gr, IR_ADD, T_S(DT_I32), t_ci(f, gr, T_S(DT_I32), 9), wd);
    int ys[2] = {t_op2(f, gr, IR_ADD, T_S(DT_I32), rk, t_ci(f, gr, T_S(DT_I32), 2)),
                 t_op2(f, gr, IR_DIV, T_S(DT_I32), s, wd)};
    t_yield(f, gr, 2, ys);
    CHECK(ir_verify(f, IR_VERIFY_FINAL, err, sizeof err) == 0);
    int64_t g[3];
    CHECK(ir_eval_grid(f, NULL, g, err, sizeof err) == 0 && g[0] == 2 && g[1] == 10);
    IrLaunchEnv env = {NULL, NULL, 0, 0};
    CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0 && g[0] == 2 && g[1] == 10);
    for (int w = 1; w <= 8; w++)
        for (int r = 0; r < w; r++) {
            env.rank = r;
            env.world = w;
            CHECK(ir_eval_grid(f, &env, g, err, sizeof err) == 0 &&
                  g[0] == r + 2 && g[1] == (10 + w - 1) / w && g[2] == 1);
        }
    ir_module_free(m);
}

int main(void)
{
    test_no_grid();
    test_matmul_grid();
    test_errors();
    test_ops();
    test_rank_grid();
    return t_done();
}
