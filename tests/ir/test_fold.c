/* test_fold.c — ir_pass_fold: integer wrap-around, int division by zero,
 * f16/bf16 round-to-nearest-even, float->int truncation, exact identities
 * only, and in-place rewriting into CONST. */
#include "irtest.h"

static char err[1024];

/* A constant of dtype dt holding v (ints/bool in ival, floats in fval). */
static int k(IrFunc *f, int dt, double v)
{
    return dsl_is_float(dt) ? t_cf(f, 0, T_S(dt), v)
                            : t_ci(f, 0, T_S(dt), (int64_t)v);
}

static int ki(IrFunc *f, int dt, int64_t v) { return t_ci(f, 0, T_S(dt), v); }

/* Fold `op` over constant operands; returns the resulting instruction. */
static IrInstr fold2(int op, int rdt, int odt, int64_t a, int64_t b)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "f");
    int x = ki(f, odt, a), y = ki(f, odt, b);
    int id = t_op2(f, 0, op, T_S(rdt), x, y);
    CHECK(ir_pass_fold(f, err, sizeof err) == 0);
    IrInstr r = f->ins[id];
    ir_module_free(m);
    return r;
}

static IrInstr foldf2(int op, int dt, double a, double b)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "f");
    int x = t_cf(f, 0, T_S(dt), a), y = t_cf(f, 0, T_S(dt), b);
    int rdt = op >= IR_EQ && op <= IR_GE ? DT_BOOL : dt;
    int id = t_op2(f, 0, op, T_S(rdt), x, y);
    CHECK(ir_pass_fold(f, err, sizeof err) == 0);
    IrInstr r = f->ins[id];
    ir_module_free(m);
    return r;
}

/* CVT of constant v (dtype from) to dtype to. */
static IrInstr cvt(int from, int to, double fv, int64_t iv)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "f");
    int x = dsl_is_float(from) ? t_cf(f, 0, T_S(from), fv)
                               : ki(f, from, iv);
    int id = t_op1(f, 0, IR_CVT, T_S(to), x);
    CHECK(ir_pass_fold(f, err, sizeof err) == 0);
    IrInstr r = f->ins[id];
    ir_module_free(m);
    return r;
}

#define IS_I(in, v) ((in).op == IR_CONST && (in).ival == (int64_t)(v))
#define IS_F(in, v) ((in).op == IR_CONST && (in).fval == (v))

static void test_ints(void)
{
    CHECK(IS_I(fold2(IR_ADD, DT_I8, DT_I8, 100, 100), -56));
    CHECK(IS_I(fold2(IR_ADD, DT_U8, DT_U8, 200, 100), 44));
    CHECK(IS_I(fold2(IR_SUB, DT_U16, DT_U16, 0, 1), 65535));
    CHECK(IS_I(fold2(IR_MUL, DT_I16, DT_I16, 300, 300), 24464));
    CHECK(IS_I(fold2(IR_MUL, DT_I32, DT_I32, 65536, 65536), 0));
    CHECK(IS_I(fold2(IR_ADD, DT_I32, DT_I32, INT32_MAX, 1), INT32_MIN));
    CHECK(IS_I(fold2(IR_DIV, DT_I8, DT_I8, -128, -1), -128));
    CHECK(IS_I(fold2(IR_REM, DT_I8, DT_I8, -128, -1), 0));
    CHECK(IS_I(fold2(IR_DIV, DT_I32, DT_I32, 7, 0), 0));
    CHECK(IS_I(fold2(IR_REM, DT_I32, DT_I32, 7, 0), 0));
    CHECK(IS_I(fold2(IR_DIV, DT_U32, DT_U32, 7, 0), 0));
    CHECK(IS_I(fold2(IR_DIV, DT_I32, DT_I32, -7, 2), -3));
    CHECK(IS_I(fold2(IR_REM, DT_I32, DT_I32, -7, 2), -1));
    CHECK(IS_I(fold2(IR_DIV, DT_U32, DT_U32, -1, 2), 0x7fffffff));
    CHECK(IS_I(fold2(IR_SHL, DT_I32, DT_I32, 1, 33), 2)); /* count masked */
    CHECK(IS_I(fold2(IR_SHR, DT_I32, DT_I32, -8, 1), -4));
    CHECK(IS_I(fold2(IR_SHR, DT_U8, DT_U8, 0x80, 7), 1));
    CHECK(IS_I(fold2(IR_SHL, DT_I8, DT_I8, 1, 7), -128));
    CHECK(IS_I(fold2(IR_ADD, DT_U64, DT_U64, -1, 1), 0));
    CHECK(IS_I(fold2(IR_GT, DT_BOOL, DT_U64, -1, 1), 1));  /* unsigned */
    CHECK(IS_I(fold2(IR_GT, DT_BOOL, DT_I64, -1, 1), 0));
    CHECK(IS_I(fold2(IR_LT, DT_BOOL, DT_U8, 255, 1), 0));
    CHECK(IS_I(fold2(IR_MAX, DT_U32, DT_U32, -1, 5), 0xffffffff));
    CHECK(IS_I(fold2(IR_MIN, DT_I32, DT_I32, -1, 5), -1));
    CHECK(IS_I(fold2(IR_XOR, DT_I32, DT_I32, 6, 3), 5));
    CHECK(IS_I(fold2(IR_AND, DT_BOOL, DT_BOOL, 1, 0), 0));
    CHECK(IS_I(fold2(IR_OR, DT_BOOL, DT_BOOL, 1, 0), 1));
    IrInstr r = fold2(IR_ADD, DT_I32, DT_I32, 1, 2);
    CHECK(r.nopnd == 0 && r.opnd[0] == -1 && r.opnd[1] == -1);
}

static void test_floats(void)
{
    CHECK(IS_F(foldf2(IR_ADD, DT_F32, 1.0, 0x1p-30), 1.0)); /* f32 rounding */
    CHECK(IS_F(foldf2(IR_ADD, DT_F64, 1.0, 0x1p-30), 1.0 + 0x1p-30));
    CHECK(IS_F(foldf2(IR_ADD, DT_F16, 2048, 1), 2048));      /* tie: even */
    CHECK(IS_F(foldf2(IR_ADD, DT_F16, 2048, 3), 2052));      /* tie: even */
    CHECK(IS_F(foldf2(IR_MUL, DT_F16, 256, 256), INFINITY)); /* overflow */
    CHECK(IS_F(foldf2(IR_ADD, DT_BF16, 256, 1), 256));
    CHECK(IS_F(foldf2(IR_ADD, DT_BF16, 256, 3), 260));
    CHECK(IS_F(foldf2(IR_DIV, DT_F32, 1, 0), INFINITY));
    IrInstr r = foldf2(IR_DIV, DT_F32, 0, 0);
    CHECK(r.op == IR_CONST && isnan(r.fval));
    r = foldf2(IR_MAX, DT_F32, NAN, 1);
    CHECK(r.op == IR_CONST && isnan(r.fval));
    CHECK(foldf2(IR_MAX, DT_F32, 0.0, -0.0).op == IR_MAX); /* not folded */
    CHECK(IS_F(foldf2(IR_REM, DT_F32, 7.5, 2), 1.5));
    CHECK(IS_I(foldf2(IR_NE, DT_F32, NAN, NAN), 1));
    CHECK(IS_I(foldf2(IR_EQ, DT_F32, NAN, NAN), 0));
    CHECK(IS_I(foldf2(IR_LT, DT_F16, 1, 2), 1));
    /* f16 constant operands are read rounded: 0.1 as f16 */
    r = foldf2(IR_ADD, DT_F16, 0.1, 0);
    CHECK(IS_F(r, 0.0999755859375));
}

static void test_cvt(void)
{
    CHECK(IS_F(cvt(DT_F32, DT_F16, 0.1, 0), 0.0999755859375));
    CHECK(IS_F(cvt(DT_F32, DT_F16, 65519, 0), 65504));
    CHECK(IS_F(cvt(DT_F32, DT_F16, 65520, 0), INFINITY));
    CHECK(IS_F(cvt(DT_F32, DT_F16, -65520, 0), -INFINITY));
    CHECK(IS_F(cvt(DT_F32, DT_F16, 1e-8, 0), 0));            /* underflow */
    CHECK(IS_F(cvt(DT_F32, DT_F16, 3e-8, 0), 0x1p-24));      /* subnormal */
    CHECK(IS_F(cvt(DT_F64, DT_F16, 0x1p-25, 0), 0));         /* tie: even */
    CHECK(IS_F(cvt(DT_F64, DT_F16, 0x1p-25 + 0x1p-40, 0), 0x1p-24));
    CHECK(IS_F(cvt(DT_F32, DT_BF16, 1 + 0x1p-8, 0), 1));     /* tie: even */
    CHECK(IS_F(cvt(DT_F32, DT_BF16, 1 + 3 * 0x1p-8, 0), 1 + 0x1p-6));
    CHECK(IS_F(cvt(DT_F64, DT_F32, 0.1, 0), (double)0.1f));
    /* f64 -> f16 is one rounding, not two via f32 */
    CHECK(IS_F(cvt(DT_F64, DT_F16, 1 + 0x1p-11 + 0x1p-40, 0), 1 + 0x1p-10));
    CHECK(IS_I(cvt(DT_F32, DT_I32, -2.7, 0), -2));
    CHECK(IS_I(cvt(DT_F32, DT_I32, 2.7, 0), 2));
    CHECK(IS_I(cvt(DT_F32, DT_I32, NAN, 0), 0));
    CHECK(IS_I(cvt(DT_F32, DT_U8, -0.5, 0), 0));
    CHECK(cvt(DT_F32, DT_I32, 1e10, 0).op == IR_CVT); /* out of range */
    CHECK(cvt(DT_F32, DT_U8, -1.5, 0).op == IR_CVT);
    CHECK(IS_I(cvt(DT_F32, DT_BOOL, 0.5, 0), 1));
    CHECK(IS_I(cvt(DT_F32, DT_BOOL, NAN, 0), 1));
    CHECK(IS_I(cvt(DT_F32, DT_BOOL, -0.0, 0), 0));
    CHECK(IS_I(cvt(DT_I32, DT_I8, 0, 300), 44));
    CHECK(IS_I(cvt(DT_I8, DT_U32, 0, -1), 0xffffffff));
    CHECK(IS_I(cvt(DT_I32, DT_BOOL, 0, 256), 1));
    CHECK(IS_I(cvt(DT_BOOL, DT_I32, 0, 1), 1));
    CHECK(IS_F(cvt(DT_BOOL, DT_F16, 0, 1), 1));
    CHECK(IS_F(cvt(DT_I32, DT_F16, 0, 2049), 2048));
    CHECK(IS_F(cvt(DT_I32, DT_F32, 0, 16777217), 16777216));
    CHECK(IS_F(cvt(DT_U64, DT_F64, 0, -1), 0x1p64));
    /* beyond 2^53: a single correct rounding to bf16 */
    CHECK(IS_F(cvt(DT_I64, DT_BF16, 0,
                   (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1),
               ldexp(129, 53)));
    CHECK(cvt(DT_F32, DT_F8E4M3, 1.0, 0).op == IR_CVT); /* f8: left alone */
}

/* Identities, chains, splats and in-place rewriting, in one function. */
static void test_identities(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "id");
    int64_t dims[1] = {64};
    int X = t_tensor(f, "X", DT_F32, 1, dims, false);
    int Y = t_tensor(f, "Y", DT_I32, 1, dims, true);
    int z = ki(f, DT_I32, 0);
    int v = t_view1(f, z, 64);
    int xf = t_load(f, 0, X, v, T_1(DT_F32, 64), -1, -1);
    int xi = t_load(f, 0, Y, t_view1(f, z, 64), T_1(DT_I32, 64), -1, -1);
    int one = ki(f, DT_I32, 1), f1 = k(f, DT_F32, 1.0);
    int fz = k(f, DT_F32, 0.0), fnz = k(f, DT_F32, -0.0);
    int a = t_op2(f, 0, IR_ADD, T_1(DT_I32, 64), xi, z);     /* -> xi */
    int b = t_op2(f, 0, IR_MUL, T_1(DT_I32, 64), one, a);    /* -> xi */
    int c = t_op2(f, 0, IR_MUL, T_1(DT_I32, 64), b, z);      /* -> 0 */
    int d = t_op2(f, 0, IR_ADD, T_1(DT_F32, 64), xf, fz);    /* kept */
    int e = t_op2(f, 0, IR_ADD, T_1(DT_F32, 64), xf, fnz);   /* -> xf */
    int g = t_op2(f, 0, IR_MUL, T_1(DT_F32, 64), xf, f1);    /* -> xf */
    int h = t_op2(f, 0, IR_MUL, T_1(DT_F32, 64), xf, fz);    /* kept */
    int i = t_op2(f, 0, IR_SUB, T_1(DT_F32, 64), xf, fz);    /* -> xf */
    int j = t_op2(f, 0, IR_SUB, T_1(DT_F32, 64), xf, fnz);   /* kept */
    int ex = t_op1(f, 0, IR_EXP, T_S(DT_F32), f1);           /* kept */
    /* (2 + 3) * 4 -> 20 through a chain; then broadcast of a splat */
    int s = t_op2(f, 0, IR_ADD, T_S(DT_I32), ki(f, DT_I32, 2),
                  ki(f, DT_I32, 3));
    int p = t_op2(f, 0, IR_MUL, T_S(DT_I32), s, ki(f, DT_I32, 4));
    int bc = t_op1(f, 0, IR_BCAST, T_1(DT_I32, 64), p);
    int q = t_op2(f, 0, IR_ADD, T_1(DT_I32, 64), bc, c);    /* 20 + 0 */
    int tr = ki(f, DT_BOOL, 1);
    int sel = t_op3(f, 0, IR_SELECT, T_1(DT_I32, 64), tr, xi, q);
    int cv = t_op1(f, 0, IR_CVT, T_1(DT_I32, 64), sel);     /* same type */
    int st = t_store(f, 0, Y, t_view1(f, z, 64), cv, -1);
    int st2 = t_store(f, 0, Y, t_view1(f, z, 64), q, -1);
    CHECK(ir_pass_fold(f, err, sizeof err) == 0);
    CHECK(f->ins[a].dead && f->ins[b].dead && f->ins[e].dead &&
          f->ins[g].dead && f->ins[i].dead);
    CHECK(IS_I(f->ins[c], 0) && f->ins[c].type.rank == 1);
    CHECK(f->ins[d].op == IR_ADD && !f->ins[d].dead);
    CHECK(f->ins[h].op == IR_MUL && !f->ins[h].dead);
    CHECK(f->ins[j].op == IR_SUB && !f->ins[j].dead);
    CHECK(f->ins[ex].op == IR_EXP);
    CHECK(IS_I(f->ins[s], 5) && IS_I(f->ins[p], 20));
    CHECK(IS_I(f->ins[bc], 20) && f->ins[bc].type.rank == 1 &&
          f->ins[bc].type.shape[0] == 64);
    CHECK(IS_I(f->ins[q], 20) && f->ins[q].type.shape[0] == 64);
    CHECK(f->ins[sel].dead && f->ins[cv].dead);
    CHECK(f->ins[st].opnd[0] == xi);  /* rewired through where and cvt */
    CHECK(f->ins[st2].opnd[0] == q);  /* folded in place: same id */
    int rc = ir_verify(f, IR_VERIFY_FINAL, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    ir_module_free(m);
}

/* Folding inside nested regions and the grid region. */
static void test_regions(void)
{
    IrModule *m = ir_module_new();
    IrFunc *f = t_func(m, "r");
    f->grid_region = ir_region_new(f, -1);
    int g1 = t_ci(f, f->grid_region, T_S(DT_I32), 7);
    int g2 = t_ci(f, f->grid_region, T_S(DT_I32), 2);
    int gq = t_op2(f, f->grid_region, IR_DIV, T_S(DT_I32), g1, g2);
    t_yield(f, f->grid_region, 1, &gq);
    int c = t_ci(f, 0, T_S(DT_BOOL), 1);
    int iff = t_op1(f, 0, IR_IF, T_S(DT_VOID), c);
    int r1 = ir_region_new(f, 0);
    f->ins[iff].region[0] = r1;
    int x = t_op2(f, r1, IR_SUB, T_S(DT_I32), t_ci(f, r1,
                  T_S(DT_I32), 9), t_ci(f, r1, T_S(DT_I32), 10));
    CHECK(ir_pass_fold(f, err, sizeof err) == 0);
    CHECK(IS_I(f->ins[gq], 3));
    CHECK(IS_I(f->ins[x], -1));
    CHECK(f->ins[iff].op == IR_IF); /* control flow is never folded */
    CHECK(ir_verify(f, IR_VERIFY_FINAL, err, sizeof err) == 0);
    ir_module_free(m);
}

int main(void)
{
    test_ints();
    test_floats();
    test_cvt();
    test_identities();
    test_regions();
    return t_done();
}
