/* test_cse.c — ir_pass_cse: merges equal pure instructions (never loads),
 * respects region scoping, rewires uses (operands and view indices), then
 * drops unused pure instructions to a fixed point. */
#include "irtest.h"

static char err[1024];

static void test_merge_golden(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "cse");
    int64_t dims[1] = {256};
    int X = t_tensor(f, "X", DT_F32, 1, dims, false);
    int Y = t_tensor(f, "Y", DT_F32, 1, dims, true);
    int pid = ir_emit(f, 0, IR_PID, T_S(DT_I32), T_LOC);
    int c64 = t_ci(f, 0, T_S(DT_I32), 64);
    int off = t_op2(f, 0, IR_MUL, T_S(DT_I32), pid, c64);
    int pid2 = ir_emit(f, 0, IR_PID, T_S(DT_I32), T_LOC);
    int c64b = t_ci(f, 0, T_S(DT_I32), 64);
    int off2 = t_op2(f, 0, IR_MUL, T_S(DT_I32), pid2, c64b);   /* == off */
    int l1 = t_load(f, 0, X, t_view1(f, off, 64), T_1(DT_F32, 64), -1, -1);
    int l2 = t_load(f, 0, X, t_view1(f, off2, 64), T_1(DT_F32, 64), -1, -1);
    int e1 = t_op1(f, 0, IR_EXP, T_1(DT_F32, 64), l1);
    int e2 = t_op1(f, 0, IR_EXP, T_1(DT_F32, 64), l2);        /* not merged */
    int s = t_op2(f, 0, IR_ADD, T_1(DT_F32, 64), e1, e2);
    int pz = t_cf(f, 0, T_S(DT_F32), 0.0);
    int nz = t_cf(f, 0, T_S(DT_F32), -0.0);                    /* differs */
    int s2 = t_op2(f, 0, IR_MUL, T_1(DT_F32, 64), s, pz);
    int s3 = t_op2(f, 0, IR_MUL, T_1(DT_F32, 64), s2, nz);
    int dead1 = t_op2(f, 0, IR_ADD, T_1(DT_F32, 64), s3, s3);  /* unused */
    t_op1(f, 0, IR_NEG, T_1(DT_F32, 64), dead1);               /* unused */
    t_load(f, 0, X, t_view1(f, off2, 64), T_1(DT_F32, 64), -1, -1);
    t_store(f, 0, Y, t_view1(f, off2, 64), s3, -1);
    (void)pid2; (void)c64b;
    CHECK(ir_pass_cse(f, err, sizeof err) == 0);
    CHECK(f->ins[off2].dead && !f->ins[l2].dead && !f->ins[e2].dead);
    int rc = ir_verify(f, IR_VERIFY_FINAL, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    CHECK(t_golden(f,
        "kernel cse(X: f32[256], Y: f32[256]) warps(4) stages(2)\n"
        "body:\n"
        "  %0 = program_id 0 : i32\n"
        "  %1 = const 64 : i32\n"
        "  %2 = mul %0, %1 : i32\n"
        "  %6 = load X[%2 +: 64] : f32[64]\n"
        "  %7 = load X[%2 +: 64] : f32[64]\n"
        "  %8 = exp %6 : f32[64]\n"
        "  %9 = exp %7 : f32[64]\n"
        "  %10 = add %8, %9 : f32[64]\n"
        "  %11 = const 0 : f32\n"
        "  %12 = const -0 : f32\n"
        "  %13 = mul %10, %11 : f32[64]\n"
        "  %14 = mul %13, %12 : f32[64]\n"
        "  store Y[%2 +: 64], %14\n"));
    ir_module_free(m);
}

static void test_regions(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "reg");
    int64_t dims[1] = {64};
    int Y = t_tensor(f, "Y", DT_I32, 1, dims, true);
    int a = ir_emit(f, 0, IR_PID, T_S(DT_I32), T_LOC);
    int b = ir_emit(f, 0, IR_NPROG, T_S(DT_I32), T_LOC);
    int outer = t_op2(f, 0, IR_ADD, T_S(DT_I32), a, b);
    int cnd = t_op2(f, 0, IR_LT, T_S(DT_BOOL), a, b);
    int iff = t_op1(f, 0, IR_IF, T_S(DT_VOID), cnd);
    int rt = ir_region_new(f, 0), re = ir_region_new(f, 0);
    f->ins[iff].region[0] = rt;
    f->ins[iff].region[1] = re;
    /* then: a copy of `outer` (merged) and a new expression */
    int in1 = t_op2(f, rt, IR_ADD, T_S(DT_I32), a, b);
    int new1 = t_op2(f, rt, IR_SUB, T_S(DT_I32), in1, b);
    t_store(f, rt, Y, t_view1(f, new1, 64), new1, -1);
    /* else: the same new expression (a sibling: not merged) */
    int new2 = t_op2(f, re, IR_SUB, T_S(DT_I32), outer, b);
    t_store(f, re, Y, t_view1(f, new2, 64), new2, -1);
    /* after the if: again (the nested ones are out of scope) */
    int new3 = t_op2(f, 0, IR_SUB, T_S(DT_I32), outer, b);
    t_store(f, 0, Y, t_view1(f, new3, 64), new3, -1);
    /* a loop: its induction variable is not merged with anything */
    int lo = t_ci(f, 0, T_S(DT_I32), 0);
    int loop = t_op3(f, 0, IR_FOR, T_S(DT_I32), lo, b, b);
    int lr = ir_region_new(f, 0);
    f->ins[loop].region[0] = lr;
    int in4 = t_op2(f, lr, IR_SUB, T_S(DT_I32), outer, b);  /* -> new3 */
    int in5 = t_op2(f, lr, IR_ADD, T_S(DT_I32), in4, loop);
    t_store(f, lr, Y, t_view1(f, in5, 64), in4, -1);
    CHECK(ir_pass_cse(f, err, sizeof err) == 0);
    CHECK(f->ins[in1].dead && f->ins[new1].opnd[0] == outer);
    CHECK(!f->ins[new1].dead && !f->ins[new2].dead && !f->ins[new3].dead);
    CHECK(f->ins[in4].dead && f->ins[in5].opnd[0] == new3);
    CHECK(f->views[f->ins[f->regions[lr].ins[2]].view].d[0].val == in5);
    CHECK(f->ins[f->regions[lr].ins[2]].opnd[0] == new3); /* store value */
    CHECK(ir_pass_bcast(f, err, sizeof err) == 0);
    int rc = ir_verify(f, IR_VERIFY_FINAL, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    ir_module_free(m);
}

static void test_dce(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "dce");
    int64_t dims[1] = {64};
    int X = t_tensor(f, "X", DT_I32, 1, dims, true);
    int z = t_ci(f, 0, T_S(DT_I32), 0);
    int v = t_var(f, "acc", T_1(DT_I32, 64));
    int ld = t_load(f, 0, X, t_view1(f, z, 64), T_1(DT_I32, 64), -1, -1);
    int set = ir_emit(f, 0, IR_VSET, T_S(DT_VOID), T_LOC);
    f->ins[set].param = v;
    f->ins[set].opnd[0] = ld;
    int get = ir_emit(f, 0, IR_VGET, T_1(DT_I32, 64), T_LOC);  /* unused */
    f->ins[get].param = v;
    int at = ir_emit(f, 0, IR_ATOMIC, T_1(DT_I32, 64), T_LOC); /* unused */
    f->ins[at].attr = ATOM_ADD;
    f->ins[at].param = X;
    f->ins[at].view = t_view1(f, z, 64);
    f->ins[at].opnd[0] = ld;
    int ld2 = t_load(f, 0, X, t_view1(f, z, 64), T_1(DT_I32, 64), -1, -1);
    int n1 = t_op1(f, 0, IR_NEG, T_1(DT_I32, 64), ld2);
    int n2 = t_op1(f, 0, IR_BITNOT, T_1(DT_I32, 64), n1);   /* chain unused */
    int red = t_op1(f, 0, IR_REDUCE, T_S(DT_I32), n2);
    int lo = t_ci(f, 0, T_S(DT_I32), 0);
    int loop = t_op3(f, 0, IR_FOR, T_S(DT_I32), lo, lo, lo);
    int lr = ir_region_new(f, 0);
    f->ins[loop].region[0] = lr;
    int unused_in_loop = t_op2(f, lr, IR_ADD, T_S(DT_I32), loop, red);
    int ret = ir_emit(f, lr, IR_RET, T_S(DT_VOID), T_LOC);
    CHECK(ir_pass_cse(f, err, sizeof err) == 0);
    CHECK(!f->ins[ld].dead && !f->ins[set].dead && !f->ins[at].dead);
    CHECK(f->ins[get].dead && f->ins[ld2].dead && f->ins[n1].dead &&
          f->ins[n2].dead && f->ins[red].dead && f->ins[unused_in_loop].dead);
    CHECK(!f->ins[loop].dead && !f->ins[ret].dead);
    CHECK(f->ins[lo].dead && f->ins[loop].opnd[0] == z); /* lo merged */
    CHECK(!f->ins[z].dead);
    int rc = ir_verify(f, IR_VERIFY_FINAL, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    ir_module_free(m);
}

/* Grid region: merged within itself, kept apart from the body. */
static void test_grid(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "g");
    int64_t dims[1] = {64};
    int X = t_tensor(f, "X", DT_I32, 1, dims, true);
    f->grid_region = ir_region_new(f, -1);
    int gr = f->grid_region;
    int s1 = t_size(f, gr, X, 0), s2 = t_size(f, gr, X, 0);
    int sum = t_op2(f, gr, IR_ADD, T_S(DT_I32), s1, s2);
    t_yield(f, gr, 1, &sum);
    int b1 = t_size(f, 0, X, 0);
    t_store(f, 0, X, t_view1(f, b1, 64), b1, -1);
    CHECK(ir_pass_cse(f, err, sizeof err) == 0);
    CHECK(f->ins[s2].dead && f->ins[sum].opnd[1] == s1 && !f->ins[b1].dead);
    CHECK(ir_pass_bcast(f, err, sizeof err) == 0);
    CHECK(ir_verify(f, IR_VERIFY_FINAL, err, sizeof err) == 0);
    ir_module_free(m);
}

int main(void)
{
    test_merge_golden();
    test_regions();
    test_dce();
    test_grid();
    return t_done();
}
