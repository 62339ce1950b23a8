/* test_bcast.c — ir_pass_bcast inserts explicit BCASTs before elementwise
 * users, stores, atomics and masked loads (golden text of the printer), and
 * the result passes ir_verify(IR_VERIFY_FINAL). */
#include "irtest.h"

static char err[1024];

static int view2(IrFunc *f, int s0, int n0, int s1, int n1)
{
    IrView v;
    memset(&v, 0, sizeof v);
    v.ndims = 2;
    v.d[0].kind = IDX_RANGE;
    v.d[0].val = s0;
    v.d[0].len = n0;
    v.d[1].kind = IDX_RANGE;
    v.d[1].val = s1;
    v.d[1].len = n1;
    return ir_view_new(f, &v);
}

static void test_main(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "bc");
    int64_t dims[2] = {4, 8};
    int X = t_tensor(f, "X", DT_I32, 2, dims, false);
    int Y = t_tensor(f, "Y", DT_I32, 2, dims, true);
    int ar8 = ir_emit(f, 0, IR_ARANGE, T_1(DT_I32, 8), T_LOC);
    int row = t_op1(f, 0, IR_RESHAPE, T_2(DT_I32, 1, 8), ar8);
    int ar4 = ir_emit(f, 0, IR_ARANGE, T_1(DT_I32, 4), T_LOC);
    int col = t_op1(f, 0, IR_RESHAPE, T_2(DT_I32, 4, 1), ar4);
    int sum = t_op2(f, 0, IR_ADD, T_2(DT_I32, 4, 8), col, row);
    int two = t_ci(f, 0, T_S(DT_I32), 2);
    int prod = t_op2(f, 0, IR_MUL, T_2(DT_I32, 4, 8), sum, two);
    int lt = t_op2(f, 0, IR_LT, T_1(DT_BOOL, 8), ar8, two);
    int sel = t_op3(f, 0, IR_SELECT, T_2(DT_I32, 4, 8), lt, prod, row);
    int z = t_ci(f, 0, T_S(DT_I32), 0);
    t_store(f, 0, Y, view2(f, z, 4, z, 8), sel, -1);
    t_store(f, 0, Y, view2(f, z, 4, z, 8), two, -1);
    t_store(f, 0, Y, view2(f, z, 4, z, 8), row, lt);
    int tr = t_ci(f, 0, T_S(DT_BOOL), 1);
    int ld = t_load(f, 0, X, view2(f, z, 4, z, 8), T_2(DT_I32, 4, 8), tr, -1);
    int ld2 = t_load(f, 0, X, view2(f, z, 4, z, 8), T_2(DT_I32, 4, 8), lt, z);
    int at = ir_emit(f, 0, IR_ATOMIC, T_2(DT_I32, 4, 8), T_LOC);
    f->ins[at].attr = ATOM_CAS;
    f->ins[at].param = Y;
    f->ins[at].view = view2(f, z, 4, z, 8);
    f->ins[at].opnd[0] = z;
    f->ins[at].opnd[1] = row;
    f->ins[at].opnd[2] = lt;
    /* a loop: the bcast goes into the loop's region */
    int one = t_ci(f, 0, T_S(DT_I32), 1);
    int loop = t_op3(f, 0, IR_FOR, T_S(DT_I32), z, two, one);
    int lr = ir_region_new(f, 0);
    f->ins[loop].region[0] = lr;
    int s2 = t_op2(f, lr, IR_SUB, T_2(DT_I32, 4, 8), ld, row);
    int s3 = t_op2(f, lr, IR_ADD, T_2(DT_I32, 4, 8), s2, ld2);
    t_store(f, lr, Y, view2(f, loop, 4, z, 8), s3, -1);

    CHECK(ir_verify(f, 0, err, sizeof err) == 0);
    CHECK(ir_verify(f, IR_VERIFY_FINAL, err, sizeof err) == -1);
    CHECK(ir_pass_bcast(f, err, sizeof err) == 0);
    int rc = ir_verify(f, IR_VERIFY_FINAL, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    CHECK(t_golden(f,
        "kernel bc(X: i32[4, 8], Y: i32[4, 8]) warps(4) stages(2)\n"
        "body:\n"
        "  %0 = arange 0 : i32[8]\n"
        "  %1 = reshape %0 : i32[1, 8]\n"
        "  %2 = arange 0 : i32[4]\n"
        "  %3 = reshape %2 : i32[4, 1]\n"
        "  %22 = broadcast %3 : i32[4, 8]\n"
        "  %23 = broadcast %1 : i32[4, 8]\n"
        "  %4 = add %22, %23 : i32[4, 8]\n"
        "  %5 = const 2 : i32\n"
        "  %6 = mul %4, %5 : i32[4, 8]\n"
        "  %7 = lt %0, %5 : bool[8]\n"
        "  %24 = broadcast %7 : bool[4, 8]\n"
        "  %25 = broadcast %1 : i32[4, 8]\n"
        "  %8 = where %24, %6, %25 : i32[4, 8]\n"
        "  %9 = const 0 : i32\n"
        "  store Y[%9 +: 4, %9 +: 8], %8\n"
        "  %26 = broadcast %5 : i32[4, 8]\n"
        "  store Y[%9 +: 4, %9 +: 8], %26\n"
        "  %27 = broadcast %1 : i32[4, 8]\n"
        "  %28 = broadcast %7 : bool[4, 8]\n"
        "  store Y[%9 +: 4, %9 +: 8], %27, mask=%28\n"
        "  %13 = const 1 : bool\n"
        "  %14 = load X[%9 +: 4, %9 +: 8], mask=%13 : i32[4, 8]\n"
        "  %29 = broadcast %7 : bool[4, 8]\n"
        "  %15 = load X[%9 +: 4, %9 +: 8], mask=%29, pad=%9 : i32[4, 8]\n"
        "  %30 = broadcast %9 : i32[4, 8]\n"
        "  %31 = broadcast %1 : i32[4, 8]\n"
        "  %32 = broadcast %7 : bool[4, 8]\n"
        "  %16 = atomic cas Y[%9 +: 4, %9 +: 8], %30, cmp=%31, mask=%32"
        " : i32[4, 8]\n"
        "  %17 = const 1 : i32\n"
        "  %18 = for %9, %5, %17 : i32 {\n"
        "    %33 = broadcast %1 : i32[4, 8]\n"
        "    %19 = sub %14, %33 : i32[4, 8]\n"
        "    %20 = add %19, %15 : i32[4, 8]\n"
        "    store Y[%18 +: 4, %9 +: 8], %20\n"
        "  }\n"));
    ir_module_free(m);
}

/* An operand that does not broadcast is an internal error. */
static void test_bad(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "bad");
    int a = t_ci(f, 0, T_1(DT_I32, 3), 1);
    t_op2(f, 0, IR_ADD, T_1(DT_I32, 4), a, a);
    CHECK(ir_pass_bcast(f, err, sizeof err) == -1);
    CHECK(strstr(err, "does not broadcast to i32[4]") != NULL);
    CHECK(strstr(err, "internal compiler error") != NULL);
    ir_module_free(m);
}

/* Nothing to do leaves the function unchanged; scalar-only ops stay. */
static void test_noop(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "noop");
    int a = t_cf(f, 0, T_S(DT_F32), 1.0);
    int b = t_cf(f, 0, T_1(DT_F32, 4), 2.0);
    t_op2(f, 0, IR_ADD, T_1(DT_F32, 4), a, b);
    t_op2(f, 0, IR_ADD, T_S(DT_F32), a, a);
    CHECK(ir_pass_bcast(f, err, sizeof err) == 0);
    CHECK(f->nins == 4 && f->regions[0].n == 4);
    ir_module_free(m);
}

int main(void)
{
    test_main();
    test_bad();
    test_noop();
    return t_done();
}
