/* test_cpu.c — CPU backend execution tests: hand-built Core IR functions
 * JIT-compiled with bk_cpu_jit and checked against references computed in
 * C (elementwise ops and casts across dtypes, loads/stores with OOB tails,
 * masks and gathers, reductions, cumsum, dot, atomics from threads, control
 * flow, emitted stages). `test_cpu bench` also times a 1024^3 f32 GEMM. */
#include "backends/backend.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fails;
#define CHECK(c, ...)                                                       \
    do {                                                                    \
        if (!(c)) {                                                         \
            fails++;                                                        \
            fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

/* ------------------------------------------------------------ IR helpers */
static IrModule *M;
static IrFunc *F;
static const DslLoc L0 = {0, 0};

static void begin(const char *name, IrParam *ps, int np)
{
    M = ir_module_new();
    F = ir_func_new(M, name);
    F->params = ps;
    F->nparams = np;
    ir_region_new(F, -1);
}

static int emit(int r, int op, IrType t) { return ir_emit(F, r, op, t, L0); }
static int op1(int r, int op, IrType t, int a)
{
    int id = emit(r, op, t);
    F->ins[id].opnd[0] = a;
    return id;
}
static int op2(int r, int op, IrType t, int a, int b)
{
    int id = op1(r, op, t, a);
    F->ins[id].opnd[1] = b;
    return id;
}
static int op3(int r, int op, IrType t, int a, int b, int c)
{
    int id = op2(r, op, t, a, b);
    F->ins[id].opnd[2] = c;
    return id;
}
static int ci(int r, int dt, int64_t v)
{
    int id = emit(r, IR_CONST, ir_scalar(dt));
    F->ins[id].ival = v;
    return id;
}
static int cf(int r, int dt, double v)
{
    int id = emit(r, IR_CONST, ir_scalar(dt));
    F->ins[id].fval = v;
    return id;
}
static IrType t1(int dt, int n) { int32_t s[1] = {n}; return ir_tile(dt, 1, s); }
static IrType t2(int dt, int a, int b) { int32_t s[2] = {a, b}; return ir_tile(dt, 2, s); }
static IrType t3(int dt, int a, int b, int c)
{
    int32_t s[3] = {a, b, c};
    return ir_tile(dt, 3, s);
}
/* view of tensor param p: kinds/vals/lens per dim */
static int view(int nd, const int *kind, const int *val, const int *len)
{
    IrView v;
    memset(&v, 0, sizeof v);
    v.ndims = nd;
    for (int d = 0; d < nd; d++) {
        v.d[d].kind = (uint8_t)kind[d];
        v.d[d].val = val[d];
        v.d[d].len = len ? len[d] : 0;
    }
    return ir_view_new(F, &v);
}
/* load/store of a 1-D range T[s +: n] */
static int load1(int r, int p, int dt, int s, int n, int mask, int pad)
{
    int k = IDX_RANGE, id = op2(r, IR_LOAD, t1(dt, n), mask, pad);
    F->ins[id].param = p;
    F->ins[id].view = view(1, &k, &s, &n);
    return id;
}
static int store1(int r, int p, int s, int n, int val, int mask)
{
    int k = IDX_RANGE, id = op2(r, IR_STORE, ir_scalar(DT_VOID), val, mask);
    F->ins[id].param = p;
    F->ins[id].view = view(1, &k, &s, &n);
    return id;
}
static IrParam tparam(const char *name, int dt, int rank, int64_t d0, int64_t d1)
{
    IrParam p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.kind = PK_TENSOR;
    p.dtype = (uint8_t)dt;
    p.rank = (uint8_t)rank;
    p.dims[0] = d0;
    p.dims[1] = d1;
    return p;
}

static BkCpuModule *jit(void)
{
    char err[512] = "";
    BkCpuModule *cm = NULL;
    BkOptions o = {NULL, 3};
    if (bk_cpu_jit(M, &o, &cm, err, sizeof err)) {
        DslBuf b = {0};
        ir_print_func(&b, F);
        fprintf(stderr, "%s\n%s\n", b.data, err);
        dsl_buf_free(&b);
        fails++;
        return NULL;
    }
    return cm;
}

static BkTensorDesc desc1(void *p, int64_t n)
{
    BkTensorDesc d;
    memset(&d, 0, sizeof d);
    d.data = p;
    d.shape[0] = n;
    d.stride[0] = 1;
    return d;
}
static BkTensorDesc desc2(void *p, int64_t a, int64_t b, int64_t lda)
{
    BkTensorDesc d;
    memset(&d, 0, sizeof d);
    d.data = p;
    d.shape[0] = a;
    d.shape[1] = b;
    d.stride[0] = lda;
    d.stride[1] = 1;
    return d;
}

/* run the whole grid g0 through the range entry */
static void run(BkCpuModule *cm, const char *name, void **args, int g0)
{
    BkRangeFn fn = bk_cpu_kernel_range(cm, name);
    int32_t np[3] = {g0, 1, 1};
    CHECK(fn != NULL, "no range fn");
    if (fn)
        fn((void *const *)args, 0, g0, np);
}

static void finish(BkCpuModule *cm)
{
    bk_cpu_free(cm);
    ir_module_free(M);
    M = NULL;
}

/* ------------------------------------------------------------ references */
static uint16_t ref_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static float bf16f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* f8 reference: nearest code by exhaustive search over finite codes */
static float f8val(int code, bool e4m3)
{
    int s = code >> 7, e, m;
    float v;
    if (e4m3) {
        e = (code >> 3) & 15;
        m = code & 7;
        if (e == 15 && m == 7)
            return NAN;
        v = e ? ldexpf(1 + m / 8.0f, e - 7) : ldexpf(m / 8.0f, -6);
    } else {
        e = (code >> 2) & 31;
        m = code & 3;
        if (e == 31)
            return m ? NAN : (s ? -INFINITY : INFINITY);
        v = e ? ldexpf(1 + m / 4.0f, e - 15) : ldexpf(m / 4.0f, -14);
    }
    return s ? -v : v;
}

/* ------------------------------------------------------------ tests */

/* C[i] = A[i] op B[i] over n elements of dtype dt, plus a bounds tail. */
static void binop(int op, int dt, const void *a, const void *b, void *c, int n)
{
    IrParam ps[3] = {tparam("A", dt, 1, n, 0), tparam("B", dt, 1, n, 0),
                     tparam("C", op >= IR_EQ && op <= IR_GE ? DT_BOOL : dt, 1, n, 0)};
    begin("binop", ps, 3);
    int z = ci(0, DT_I32, 0);
    int N = (n + 7) / 8 * 8; /* tile larger than the tensor: OOB tail */
    int x = load1(0, 0, dt, z, N, -1, -1), y = load1(0, 1, dt, z, N, -1, -1);
    int r = op2(0, op, t1(ps[2].dtype, N), x, y);
    store1(0, 2, z, N, r, -1);
    BkCpuModule *cm = jit();
    if (!cm)
        return;
    BkTensorDesc da = desc1((void *)a, n), db = desc1((void *)b, n), dc = desc1(c, n);
    void *args[3] = {&da, &db, &dc};
    run(cm, "binop", args, 1);
    finish(cm);
}

static void test_int_ops(void)
{
    int32_t a[6] = {7, -7, 100, -2147483647 - 1, 5, 3};
    int32_t b[6] = {2, 2, 0, -1, -3, 33};
    int32_t c[6];
    binop(IR_DIV, DT_I32, a, b, c, 6);
    int32_t ed[6] = {3, -3, 0, -2147483647 - 1, -1, 0};
    for (int i = 0; i < 6; i++)
        CHECK(c[i] == ed[i], "i32 div %d: %d vs %d", i, c[i], ed[i]);
    binop(IR_REM, DT_I32, a, b, c, 6);
    int32_t er[6] = {1, -1, 0, 0, 2, 3};
    for (int i = 0; i < 6; i++)
        CHECK(c[i] == er[i], "i32 rem %d: %d vs %d", i, c[i], er[i]);
    binop(IR_SHR, DT_I32, a, b, c, 6);
    for (int i = 0; i < 6; i++)
        CHECK(c[i] == a[i] >> (b[i] & 31), "i32 shr %d", i);
    uint32_t ua[4] = {0xffffffffu, 10, 7, 1}, ub[4] = {2, 0, 3, 33}, uc[4];
    binop(IR_DIV, DT_U32, ua, ub, uc, 4);
    CHECK(uc[0] == 0x7fffffffu && uc[1] == 0 && uc[2] == 2, "u32 div");
    binop(IR_SHR, DT_U32, ua, ub, uc, 4);
    CHECK(uc[0] == 0x3fffffffu && uc[3] == 0, "u32 shr %x", uc[3]);
    binop(IR_MAX, DT_U32, ua, ub, uc, 4);
    CHECK(uc[0] == 0xffffffffu && uc[3] == 33, "u32 max");
    int8_t a8[5] = {100, -100, 5, -128, 1}, b8[5] = {100, -100, 0, -1, 2}, c8[5];
    binop(IR_ADD, DT_I8, a8, b8, c8, 5);
    CHECK(c8[0] == (int8_t)200 && c8[1] == (int8_t)-200, "i8 add wraps");
    binop(IR_DIV, DT_I8, a8, b8, c8, 5);
    CHECK(c8[2] == 0 && c8[3] == -128 && c8[4] == 0, "i8 div");
    int64_t a64[3] = {1LL << 40, -5, 9}, b64[3] = {3, 5, -4};
    uint8_t lt[3];
    binop(IR_LT, DT_I64, a64, b64, lt, 3);
    CHECK(lt[0] == 0 && lt[1] == 1 && lt[2] == 0, "i64 lt");
}

static void test_float_ops(void)
{
    enum { N = 37 };
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i - 18) * 0.37f;
        b[i] = (float)(i % 5) - 2.5f;
    }
    a[3] = NAN;
    binop(IR_MAX, DT_F32, a, b, c, N);
    CHECK(isnan(c[3]), "max nan");
    for (int i = 0; i < N; i++)
        if (i != 3)
            CHECK(c[i] == fmaxf(a[i], b[i]), "max %d", i);
    b[5] = NAN;
    binop(IR_MIN, DT_F32, a, b, c, N);
    CHECK(isnan(c[5]) && isnan(c[3]), "min nan");
    binop(IR_DIV, DT_F32, a, b, c, N);
    for (int i = 0; i < N; i++)
        if (i != 3 && i != 5)
            CHECK(c[i] == a[i] / b[i], "div %d", i);
    /* f16 arithmetic rounds after each op */
    _Float16 h[N], hb[N], hc[N];
    for (int i = 0; i < N; i++) {
        h[i] = (_Float16)(a[i] * 3.3f + 0.001f);
        hb[i] = (_Float16)(i * 0.0137f + 1000.0f);
    }
    binop(IR_ADD, DT_F16, h, hb, hc, N);
    for (int i = 0; i < N; i++)
        if (i != 3)
            CHECK(hc[i] == (_Float16)((float)h[i] + (float)hb[i]), "f16 add %d", i);
    binop(IR_MUL, DT_F16, h, hb, hc, N);
    for (int i = 0; i < N; i++)
        if (i != 3)
            CHECK(hc[i] == (_Float16)((float)h[i] * (float)hb[i]), "f16 mul %d", i);
    uint16_t ba[N], bb[N], bc[N];
    for (int i = 0; i < N; i++) {
        ba[i] = ref_bf16(a[i] * 1.7f);
        bb[i] = ref_bf16(b[i] * 3.1f + 0.01f);
    }
    binop(IR_MUL, DT_BF16, ba, bb, bc, N);
    for (int i = 0; i < N; i++)
        if (i != 3 && i != 5)
            CHECK(bc[i] == ref_bf16(bf16f(ba[i]) * bf16f(bb[i])), "bf16 mul %d", i);
    double da[3] = {1.5, -2.25, 1e300}, db[3] = {0.25, 4, 1e10}, dc[3];
    binop(IR_MUL, DT_F64, da, db, dc, 3);
    CHECK(dc[0] == 0.375 && dc[1] == -9 && isinf(dc[2]), "f64 mul");
}

/* Y[i] = op(X[i]) converting from sdt to ddt (op CVT) or unary math. */
static void unop(int op, int sdt, int ddt, const void *x, void *y, int n)
{
    IrParam ps[2] = {tparam("X", sdt, 1, n, 0), tparam("Y", ddt, 1, n, 0)};
    begin("unop", ps, 2);
    int z = ci(0, DT_I32, 0);
    int a = load1(0, 0, sdt, z, n, -1, -1);
    int r = op1(0, op, t1(ddt, n), a);
    store1(0, 1, z, n, r, -1);
    BkCpuModule *cm = jit();
    if (!cm)
        return;
    BkTensorDesc dx = desc1((void *)x, n), dy = desc1(y, n);
    void *args[2] = {&dx, &dy};
    run(cm, "unop", args, 1);
    finish(cm);
}

static void test_math_and_casts(void)
{
    enum { N = 40 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - 20) * 0.21f;
    struct { int op; float (*f)(float); } m[] = {
        {IR_EXP, expf}, {IR_TANH, tanhf}, {IR_ERF, erff}, {IR_FLOOR, floorf},
        {IR_SIN, sinf}};
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
        unop(m[k].op, DT_F32, DT_F32, x, y, N);
        for (int i = 0; i < N; i++)
            CHECK(fabsf(y[i] - m[k].f(x[i])) <= 1e-5f * (1 + fabsf(y[i])),
                  "math op %d at %d: %g vs %g", m[k].op, i, y[i], m[k].f(x[i]));
    }
    unop(IR_SIGMOID, DT_F32, DT_F32, x, y, N);
    for (int i = 0; i < N; i++)
        CHECK(fabsf(y[i] - 1 / (1 + expf(-x[i]))) < 1e-6f, "sigmoid %d", i);
    /* f32 -> f16 / bf16 rounding, f64 -> f16 rounds once */
    float fx[6] = {1.0f + 1.0f / 2048, 65520.0f, 1e-8f, NAN, -3.14159f, 1.0009765625f};
    _Float16 hy[6];
    unop(IR_CVT, DT_F32, DT_F16, fx, hy, 6);
    for (int i = 0; i < 6; i++)
        CHECK(i == 3 ? isnan((float)hy[i]) : hy[i] == (_Float16)fx[i], "f32->f16 %d", i);
    uint16_t by[6];
    unop(IR_CVT, DT_F32, DT_BF16, fx, by, 6);
    for (int i = 0; i < 6; i++)
        CHECK(i == 3 ? isnan(bf16f(by[i])) : by[i] == ref_bf16(fx[i]), "f32->bf16 %d", i);
    double dx[2] = {1.0 + 1.0 / 2048 + 1e-12, 1.0 + 1.0 / 2048}; /* just above tie */
    unop(IR_CVT, DT_F64, DT_F16, dx, hy, 2);
    CHECK((float)hy[0] == 1.0f + 1.0f / 1024 && (float)hy[1] == 1.0f, "f64->f16 once");
    float ix[6] = {2.9f, -2.9f, NAN, 1e20f, -1e20f, 0.5f};
    int32_t iy[6];
    unop(IR_CVT, DT_F32, DT_I32, ix, iy, 6);
    CHECK(iy[0] == 2 && iy[1] == -2 && iy[2] == 0 && iy[3] == 2147483647 &&
          iy[4] == -2147483647 - 1 && iy[5] == 0, "f32->i32");
    uint8_t bo[6];
    unop(IR_CVT, DT_F32, DT_BOOL, ix, bo, 6);
    CHECK(bo[0] == 1 && bo[2] == 1 && bo[5] == 1, "f32->bool");
    int32_t ii[3] = {300, -1, 16777217};
    int8_t i8[3];
    unop(IR_CVT, DT_I32, DT_I8, ii, i8, 3);
    CHECK(i8[0] == 44 && i8[1] == -1, "i32->i8");
    float fo[3];
    unop(IR_CVT, DT_I32, DT_F32, ii, fo, 3);
    CHECK(fo[2] == 16777216.0f && fo[1] == -1, "i32->f32");
    /* f8: every code round-trips; f32 -> f8 picks the nearest code */
    for (int e4 = 0; e4 < 2; e4++) {
        int dt = e4 ? DT_F8E4M3 : DT_F8E5M2;
        uint8_t codes[256];
        float back[256];
        for (int i = 0; i < 256; i++)
            codes[i] = (uint8_t)i;
        unop(IR_CVT, dt, DT_F32, codes, back, 256);
        int bad = 0;
        for (int i = 0; i < 256; i++) {
            float r = f8val(i, e4);
            bad += !(isnan(r) ? isnan(back[i]) : back[i] == r);
        }
        CHECK(bad == 0, "f8 decode (%s): %d bad", e4 ? "e4m3" : "e5m2", bad);
        float src[8] = {0.3f, 1.0f, 448.0f, 500.0f, -0.0013f, 1.0625f, 17.0f, NAN};
        uint8_t out[8];
        unop(IR_CVT, DT_F32, dt, src, out, 8);
        for (int i = 0; i < 8; i++) {
            float got = f8val(out[i], e4);
            if (isnan(src[i]) || (e4 && fabsf(src[i]) >= 480)) {
                CHECK(isnan(got), "f8 nan %d", i);
                continue;
            }
            float best = INFINITY;
            for (int k = 0; k < 256; k++) {
                float v = f8val(k, e4);
                if (!isnan(v) && fabsf(v - src[i]) < best)
                    best = fabsf(v - src[i]);
            }
            CHECK(fabsf(got - src[i]) == best, "f8 %s round %g -> %g",
                  e4 ? "e4m3" : "e5m2", src[i], got);
        }
    }
}

/* 2-D strided load with OOB tails and pad, masked store, gather. */
static void test_memory(void)
{
    enum { R = 5, C = 7, LD = 9 };
    float X[R * LD], Y[R * LD];
    for (int i = 0; i < R * LD; i++) {
        X[i] = (float)i;
        Y[i] = -1;
    }
    IrParam ps[3] = {tparam("X", DT_F32, 2, R, C), tparam("Y", DT_F32, 2, R, C),
                     tparam("I", DT_I32, 1, 4, 0)};
    begin("mem", ps, 3);
    /* tile = load(X[pid*4-1 +: 4, 3 +: 8], pad=9.5); Y[same] = tile*2 where tile>10 */
    int p = emit(0, IR_PID, ir_scalar(DT_I32));
    int s0 = op2(0, IR_SUB, ir_scalar(DT_I32), op2(0, IR_MUL, ir_scalar(DT_I32), p,
                 ci(0, DT_I32, 4)), ci(0, DT_I32, 1));
    int s1 = ci(0, DT_I32, 3);
    int kinds[2] = {IDX_RANGE, IDX_RANGE}, vals[2] = {s0, s1}, lens[2] = {4, 8};
    int ld = op2(0, IR_LOAD, t2(DT_F32, 4, 8), -1, cf(0, DT_F32, 9.5));
    F->ins[ld].param = 0;
    F->ins[ld].view = view(2, kinds, vals, lens);
    int m = op2(0, IR_GT, t2(DT_BOOL, 4, 8), ld, cf(0, DT_F32, 10));
    int v = op2(0, IR_MUL, t2(DT_F32, 4, 8), ld, cf(0, DT_F32, 2));
    int st = op2(0, IR_STORE, ir_scalar(DT_VOID), v, m);
    F->ins[st].param = 1;
    F->ins[st].view = F->ins[ld].view;
    /* gather: Y[I[0..4], 0] = X[I, 1] + 1000 (only program 0) */
    int z = ci(0, DT_I32, 0);
    int idx = load1(0, 2, DT_I32, z, 4, -1, -1);
    int gk[2] = {IDX_TILE, IDX_SCALAR}, gv[2] = {idx, ci(0, DT_I32, 1)};
    int g = op2(0, IR_LOAD, t1(DT_F32, 4), -1, -1);
    F->ins[g].param = 0;
    F->ins[g].view = view(2, gk, gv, NULL);
    int g2 = op2(0, IR_ADD, t1(DT_F32, 4), g, cf(0, DT_F32, 1000));
    int sk[2] = {IDX_TILE, IDX_SCALAR}, sv[2] = {idx, z};
    int pz = op2(0, IR_EQ, ir_scalar(DT_BOOL), p, z);
    int sg = op2(0, IR_STORE, ir_scalar(DT_VOID), g2, pz);
    F->ins[sg].param = 1;
    F->ins[sg].view = view(2, sk, sv, NULL);
    BkCpuModule *cm = jit();
    if (!cm)
        return;
    int32_t I[4] = {4, -1, 2, 5};
    BkTensorDesc dx = desc2(X, R, C, LD), dy = desc2(Y, R, C, LD), di = desc1(I, 4);
    void *args[3] = {&dx, &dy, &di};
    run(cm, "mem", args, 2);
    float E[R * LD];
    for (int i = 0; i < R * LD; i++)
        E[i] = -1;
    for (int pid = 0; pid < 2; pid++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 8; j++) {
                int r = pid * 4 - 1 + i, c = 3 + j;
                bool inb = r >= 0 && r < R && c < C;
                float t = inb ? X[r * LD + c] : 9.5f;
                if (t > 10 && inb)
                    E[r * LD + c] = t * 2;
            }
    for (int k = 0; k < 4; k++)
        if (I[k] >= 0 && I[k] < R)
            E[I[k] * LD] = X[I[k] * LD + 1] + 1000;
    for (int i = 0; i < R * LD; i++)
        CHECK(Y[i] == E[i], "mem Y[%d] = %g, want %g", i, Y[i], E[i]);
    finish(cm);
}

static void test_reduce(void)
{
    enum { R = 6, C = 10 };
    float X[R * C], out[R + C + 8];
    for (int i = 0; i < R * C; i++)
        X[i] = (float)((i * 7) % 11);
    IrParam ps[2] = {tparam("X", DT_F32, 2, R, C), tparam("O", DT_F32, 1, R + C + 8, 0)};
    begin("red", ps, 2);
    int z = ci(0, DT_I32, 0);
    int kinds[2] = {IDX_RANGE, IDX_RANGE}, vals[2] = {z, z}, lens[2] = {R, C};
    int x = op2(0, IR_LOAD, t2(DT_F32, R, C), -1, -1);
    F->ins[x].param = 0;
    F->ins[x].view = view(2, kinds, vals, lens);
    int s1 = op1(0, IR_REDUCE, t1(DT_F32, R), x);   /* row sums */
    F->ins[s1].attr = RED_SUM;
    F->ins[s1].axis = 1;
    int m0 = op1(0, IR_REDUCE, t1(DT_F32, C), x);   /* column max */
    F->ins[m0].attr = RED_MAX;
    F->ins[m0].axis = 0;
    int am = op1(0, IR_REDUCE, ir_scalar(DT_I32), x); /* argmax all */
    F->ins[am].attr = RED_ARGMAX;
    int an = op1(0, IR_REDUCE, ir_scalar(DT_I32), x); /* argmin all */
    F->ins[an].attr = RED_ARGMIN;
    int cs = op1(0, IR_SCAN, t2(DT_F32, R, C), x);
    F->ins[cs].axis = 1;
    int tot = op1(0, IR_REDUCE, ir_scalar(DT_F32), cs);
    F->ins[tot].attr = RED_SUM;
    store1(0, 1, z, R, s1, -1);
    store1(0, 1, ci(0, DT_I32, R), C, m0, -1);
    int packed = op1(0, IR_CVT, ir_scalar(DT_F32), am);
    int packed2 = op1(0, IR_CVT, ir_scalar(DT_F32), an);
    int k0[1] = {IDX_SCALAR}, v0[1] = {ci(0, DT_I32, R + C)};
    int st = op2(0, IR_STORE, ir_scalar(DT_VOID), packed, -1);
    F->ins[st].param = 1;
    F->ins[st].view = view(1, k0, v0, NULL);
    v0[0] = ci(0, DT_I32, R + C + 1);
    st = op2(0, IR_STORE, ir_scalar(DT_VOID), packed2, -1);
    F->ins[st].param = 1;
    F->ins[st].view = view(1, k0, v0, NULL);
    v0[0] = ci(0, DT_I32, R + C + 2);
    st = op2(0, IR_STORE, ir_scalar(DT_VOID), tot, -1);
    F->ins[st].param = 1;
    F->ins[st].view = view(1, k0, v0, NULL);
    BkCpuModule *cm = jit();
    if (!cm)
        return;
    BkTensorDesc dx = desc2(X, R, C, C), d0 = desc1(out, R + C + 8);
    void *args[2] = {&dx, &d0};
    run(cm, "red", args, 1);
    float tot_ref = 0;
    int amax = 0, amin = 0;
    for (int r = 0; r < R; r++) {
        float s = 0, cum = 0;
        for (int c = 0; c < C; c++) {
            s += X[r * C + c];
            cum += X[r * C + c];
            tot_ref += cum;
        }
        CHECK(out[r] == s, "row sum %d", r);
    }
    for (int i = 0; i < R * C; i++) {
        if (X[i] > X[amax])
            amax = i;
        if (X[i] < X[amin])
            amin = i;
    }
    for (int c = 0; c < C; c++) {
        float mx = X[c];
        for (int r = 1; r < R; r++)
            mx = fmaxf(mx, X[r * C + c]);
        CHECK(out[R + c] == mx, "col max %d", c);
    }
    CHECK(out[R + C] == (float)amax, "argmax %g vs %d", out[R + C], amax);
    CHECK(out[R + C + 1] == (float)amin, "argmin %g vs %d", out[R + C + 1], amin);
    CHECK(fabsf(out[R + C + 2] - tot_ref) < 1e-3f, "cumsum total %g vs %g",
          out[R + C + 2], tot_ref);
    finish(cm);
}

/* C[M,N] = A[M,K] x B[K,N] (+ C0) with dtypes adt/rdt; batched if nb > 0 */
static void dot_case(int MM, int N, int K, int adt, int nb)
{
    int rdt = adt == DT_I8 ? DT_I32 : DT_F32, B = nb ? nb : 1;
    IrParam ps[3] = {tparam("A", adt, 1, (int64_t)B * MM * K, 0),
                     tparam("B", adt, 1, (int64_t)B * K * N, 0),
                     tparam("C", rdt, 1, (int64_t)B * MM * N, 0)};
    begin("dot", ps, 3);
    int z = ci(0, DT_I32, 0);
    int a = load1(0, 0, adt, z, B * MM * K, -1, -1);
    int b = load1(0, 1, adt, z, B * K * N, -1, -1);
    int c0 = load1(0, 2, rdt, z, B * MM * N, -1, -1);
    IrType ta = nb ? t3(adt, B, MM, K) : t2(adt, MM, K);
    IrType tb = nb ? t3(adt, B, K, N) : t2(adt, K, N);
    IrType tc = nb ? t3(rdt, B, MM, N) : t2(rdt, MM, N);
    int ra = op1(0, IR_RESHAPE, ta, a), rb = op1(0, IR_RESHAPE, tb, b);
    int rc = op1(0, IR_RESHAPE, tc, c0);
    int d = op3(0, IR_DOT, tc, ra, rb, rc);
    int fl = op1(0, IR_RESHAPE, t1(rdt, B * MM * N), d);
    store1(0, 2, z, B * MM * N, fl, -1);
    BkCpuModule *cm = jit();
    if (!cm)
        return;
    size_t na = (size_t)B * MM * K, nbb = (size_t)B * K * N, nc = (size_t)B * MM * N;
    void *A = malloc(na * 4), *Bm = malloc(nbb * 4), *C = malloc(nc * 4);
    double *ref = malloc(nc * sizeof(double));
    float fa, fb;
    for (size_t i = 0; i < na; i++) {
        int v = (int)((i * 37) % 19) - 9;
        if (adt == DT_I8) ((int8_t *)A)[i] = (int8_t)(v * 13);
        else if (adt == DT_F16) ((_Float16 *)A)[i] = (_Float16)(v * 0.25f);
        else ((float *)A)[i] = v * 0.25f;
    }
    for (size_t i = 0; i < nbb; i++) {
        int v = (int)((i * 53) % 23) - 11;
        if (adt == DT_I8) ((int8_t *)Bm)[i] = (int8_t)(v * 11);
        else if (adt == DT_F16) ((_Float16 *)Bm)[i] = (_Float16)(v * 0.5f);
        else ((float *)Bm)[i] = v * 0.5f;
    }
    for (size_t i = 0; i < nc; i++) {
        if (rdt == DT_I32) ((int32_t *)C)[i] = (int32_t)i;
        else ((float *)C)[i] = (float)i;
    }
    for (int bi = 0; bi < B; bi++)
        for (int i = 0; i < MM; i++)
            for (int j = 0; j < N; j++) {
                double s = (double)(((size_t)bi * MM + i) * N + j);
                for (int k = 0; k < K; k++) {
                    size_t ia = ((size_t)bi * MM + i) * K + k, ib = ((size_t)bi * K + k) * N + j;
                    if (adt == DT_I8) { fa = ((int8_t *)A)[ia]; fb = ((int8_t *)Bm)[ib]; }
                    else if (adt == DT_F16) { fa = ((_Float16 *)A)[ia]; fb = ((_Float16 *)Bm)[ib]; }
                    else { fa = ((float *)A)[ia]; fb = ((float *)Bm)[ib]; }
                    s += (double)fa * fb;
                }
                ref[((size_t)bi * MM + i) * N + j] = s;
            }
    BkTensorDesc da = desc1(A, (int64_t)na), db = desc1(Bm, (int64_t)nbb), dc = desc1(C, (int64_t)nc);
    void *args[3] = {&da, &db, &dc};
    run(cm, "dot", args, 1);
    int bad = 0;
    for (size_t i = 0; i < nc; i++) {
        double got = rdt == DT_I32 ? ((int32_t *)C)[i] : ((float *)C)[i];
        bad += fabs(got - ref[i]) > 1e-3 * (1 + fabs(ref[i]));
    }
    CHECK(bad == 0, "dot %dx%dx%d %s batch %d: %d bad", MM, N, K,
          dsl_dtype_name(adt), nb, bad);
    free(A); free(Bm); free(C); free(ref);
    finish(cm);
}

/* histogram via atomic_add from several threads; also atomic max */
typedef struct { BkRangeFn fn; void **args; int64_t lo, hi; int32_t np[3]; } Job;
static void *job_main(void *p)
{
    Job *j = p;
    j->fn((void *const *)j->args, j->lo, j->hi, j->np);
    return NULL;
}

static void test_atomics(void)
{
    enum { N = 4096, BINS = 16, BLK = 64 };
    IrParam ps[3] = {tparam("X", DT_I32, 1, N, 0), tparam("H", DT_I32, 1, BINS, 0),
                     tparam("MX", DT_F32, 1, 1, 0)};
    begin("hist", ps, 3);
    int p = emit(0, IR_PID, ir_scalar(DT_I32));
    int s = op2(0, IR_MUL, ir_scalar(DT_I32), p, ci(0, DT_I32, BLK));
    int x = load1(0, 0, DT_I32, s, BLK, -1, -1);
    int one = op1(0, IR_BCAST, t1(DT_I32, BLK), ci(0, DT_I32, 1));
    int k = IDX_TILE;
    int a = op3(0, IR_ATOMIC, t1(DT_I32, BLK), one, -1, -1);
    F->ins[a].attr = ATOM_ADD;
    F->ins[a].param = 1;
    F->ins[a].view = view(1, &k, &x, NULL);
    int fx = op1(0, IR_CVT, t1(DT_F32, BLK), x);
    int zero = op1(0, IR_BCAST, t1(DT_I32, BLK), ci(0, DT_I32, 0));
    int am = op3(0, IR_ATOMIC, t1(DT_F32, BLK), fx, -1, -1);
    F->ins[am].attr = ATOM_MAX;
    F->ins[am].param = 2;
    F->ins[am].view = view(1, &k, &zero, NULL);
    BkCpuModule *cm = jit();
    if (!cm)
        return;
    static int32_t X[N];
    int32_t H[BINS] = {0}, E[BINS] = {0};
    float MX = -1;
    for (int i = 0; i < N; i++) {
        X[i] = (int32_t)((i * 2654435761u) >> 7) % (BINS + 2); /* some OOB */
        if (X[i] < BINS)
            E[X[i]]++;
    }
    BkTensorDesc dx = desc1(X, N), dh = desc1(H, BINS), dm = desc1(&MX, 1);
    void *args[3] = {&dx, &dh, &dm};
    enum { T = 4 };
    pthread_t th[T];
    Job jobs[T];
    for (int t = 0; t < T; t++) {
        jobs[t] = (Job){bk_cpu_kernel_range(cm, "hist"), args, t * (N / BLK) / T,
                        (t + 1) * (N / BLK) / T, {N / BLK, 1, 1}};
        pthread_create(&th[t], NULL, job_main, &jobs[t]);
    }
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < BINS; i++)
        CHECK(H[i] == E[i], "hist %d: %d vs %d", i, H[i], E[i]);
    CHECK(MX == BINS + 1, "atomic max %g", MX);
    finish(cm);
}

/* acc over: for i in 10 .. 0 step -3 (10,7,4,1); while w < 100: w = w*2+1;
 * if pid == 1 return early. Stores [sum_i, w, 7] at Y[pid*3..]. */
static void test_control(void)
{
    IrParam ps[1] = {tparam("Y", DT_I64, 1, 9, 0)};
    begin("cf", ps, 1);
    IrVar *vars = calloc(2, sizeof *vars); /* ir_module_free frees vars */
    vars[0] = (IrVar){"s", ir_scalar(DT_I64)};
    vars[1] = (IrVar){"w", ir_scalar(DT_I64)};
    F->vars = vars;
    F->nvars = 2;
    int p = emit(0, IR_PID, ir_scalar(DT_I32));
    int c0 = ci(0, DT_I64, 0), c1 = ci(0, DT_I64, 1);
    int s0 = emit(0, IR_VSET, ir_scalar(DT_VOID));
    F->ins[s0].param = 0;
    F->ins[s0].opnd[0] = c0;
    int w0 = emit(0, IR_VSET, ir_scalar(DT_VOID));
    F->ins[w0].param = 1;
    F->ins[w0].opnd[0] = c1;
    int lo = ci(0, DT_I64, 10), hi = ci(0, DT_I64, 0), st = ci(0, DT_I64, -3);
    int fr = op3(0, IR_FOR, ir_scalar(DT_I64), lo, hi, st);
    int body = ir_region_new(F, 0);
    F->ins[fr].region[0] = body;
    int g = emit(body, IR_VGET, ir_scalar(DT_I64));
    F->ins[g].param = 0;
    int sum = op2(body, IR_ADD, ir_scalar(DT_I64), g, fr);
    int vs = emit(body, IR_VSET, ir_scalar(DT_VOID));
    F->ins[vs].param = 0;
    F->ins[vs].opnd[0] = sum;
    int wh = emit(0, IR_WHILE, ir_scalar(DT_VOID));
    int cr = ir_region_new(F, 0), wb = ir_region_new(F, 0);
    F->ins[wh].region[0] = cr;
    F->ins[wh].region[1] = wb;
    int wg = emit(cr, IR_VGET, ir_scalar(DT_I64));
    F->ins[wg].param = 1;
    int c = op2(cr, IR_LT, ir_scalar(DT_BOOL), wg, ci(cr, DT_I64, 100));
    int y = op1(cr, IR_YIELD, ir_scalar(DT_VOID), c);
    F->ins[y].nopnd = 1;
    int wg2 = emit(wb, IR_VGET, ir_scalar(DT_I64));
    F->ins[wg2].param = 1;
    int w2 = op2(wb, IR_ADD, ir_scalar(DT_I64),
                 op2(wb, IR_MUL, ir_scalar(DT_I64), wg2, ci(wb, DT_I64, 2)),
                 ci(wb, DT_I64, 1));
    int ws = emit(wb, IR_VSET, ir_scalar(DT_VOID));
    F->ins[ws].param = 1;
    F->ins[ws].opnd[0] = w2;
    int base = op2(0, IR_MUL, ir_scalar(DT_I32), p, ci(0, DT_I32, 3));
    int k = IDX_SCALAR;
    int gs = emit(0, IR_VGET, ir_scalar(DT_I64));
    F->ins[gs].param = 0;
    int sst = op2(0, IR_STORE, ir_scalar(DT_VOID), gs, -1);
    F->ins[sst].param = 0;
    F->ins[sst].view = view(1, &k, &base, NULL);
    int gw = emit(0, IR_VGET, ir_scalar(DT_I64));
    F->ins[gw].param = 1;
    int b1 = op2(0, IR_ADD, ir_scalar(DT_I32), base, ci(0, DT_I32, 1));
    int sw = op2(0, IR_STORE, ir_scalar(DT_VOID), gw, -1);
    F->ins[sw].param = 0;
    F->ins[sw].view = view(1, &k, &b1, NULL);
    int is1 = op2(0, IR_EQ, ir_scalar(DT_BOOL), p, ci(0, DT_I32, 1));
    int iff = op1(0, IR_IF, ir_scalar(DT_VOID), is1);
    int th = ir_region_new(F, 0), el = ir_region_new(F, 0);
    F->ins[iff].region[0] = th;
    F->ins[iff].region[1] = el;
    emit(th, IR_RET, ir_scalar(DT_VOID));
    int b2 = op2(0, IR_ADD, ir_scalar(DT_I32), base, ci(0, DT_I32, 2));
    int s7 = op2(0, IR_STORE, ir_scalar(DT_VOID), ci(0, DT_I64, 7), -1);
    F->ins[s7].param = 0;
    F->ins[s7].view = view(1, &k, &b2, NULL);
    BkCpuModule *cm = jit();
    if (!cm)
        return;
    int64_t Y[9];
    for (int i = 0; i < 9; i++)
        Y[i] = -1;
    BkTensorDesc dy = desc1(Y, 9);
    void *args[1] = {&dy};
    run(cm, "cf", args, 3);
    int64_t E[9] = {22, 127, 7, 22, 127, -1, 22, 127, 7};
    for (int i = 0; i < 9; i++)
        CHECK(Y[i] == E[i], "cf Y[%d] = %lld want %lld", i, (long long)Y[i],
              (long long)E[i]);
    /* emitted stages */
    DslBuf out = {0};
    char err[256];
    BkOptions o = {NULL, 3};
    CHECK(bk_cpu_backend.emit(M, &o, "llvm", &out, err, sizeof err) == 0 &&
          out.len > 0 && strstr(out.data, "define") != NULL, "emit llvm: %s", err);
    dsl_buf_free(&out);
    memset(&out, 0, sizeof out);
    CHECK(bk_cpu_backend.emit(M, &o, "obj", &out, err, sizeof err) == 0 &&
          out.len > 4 && memcmp(out.data, "\177ELF", 4) == 0, "emit obj: %s", err);
    dsl_buf_free(&out);
    memset(&out, 0, sizeof out);
    CHECK(bk_cpu_backend.emit(M, &o, "asm", &out, err, sizeof err) == 0, "emit asm");
    dsl_buf_free(&out);
    memset(&out, 0, sizeof out);
    CHECK(bk_cpu_backend.emit(M, &o, "bogus", &out, err, sizeof err) == -1, "bogus stage");
    dsl_buf_free(&out);
    finish(cm);
}

static void test_atomic_unsupported(void)
{
    IrParam ps[1] = {tparam("H", DT_F16, 1, 4, 0)};
    begin("bad", ps, 1);
    int z = ci(0, DT_I32, 0), k = IDX_SCALAR;
    int a = op3(0, IR_ATOMIC, ir_scalar(DT_F16), cf(0, DT_F16, 1), -1, -1);
    F->ins[a].param = 0;
    F->ins[a].attr = ATOM_MAX; /* f16 has atomic_add only (LANGUAGE.md §7) */
    F->ins[a].view = view(1, &k, &z, NULL);
    char err[256] = "";
    BkCpuModule *cm = NULL;
    CHECK(bk_cpu_jit(M, NULL, &cm, err, sizeof err) == -1 && cm == NULL &&
          strstr(err, "atomic"), "f16 atomic_max must fail: %s", err);
    ir_module_free(M);
}

/* 1024^3 f32 GEMM from 64x64x32 tiles: acc = dot(A[m +: 64, k +: 32],
 * B[k +: 32, n +: 64], acc), single thread. */
static double bench_gemm(int S, bool check)
{
    enum { BM = 64, BN = 64, BK = 32 };
    IrParam ps[3] = {tparam("A", DT_F32, 2, S, S), tparam("B", DT_F32, 2, S, S),
                     tparam("C", DT_F32, 2, S, S)};
    begin("gemm", ps, 3);
    IrVar *vars = calloc(1, sizeof *vars); /* ir_module_free frees vars */
    vars[0] = (IrVar){"acc", t2(DT_F32, BM, BN)};
    F->vars = vars;
    F->nvars = 1;
    int m = op2(0, IR_MUL, ir_scalar(DT_I32), emit(0, IR_PID, ir_scalar(DT_I32)),
                ci(0, DT_I32, BM));
    int p1 = emit(0, IR_PID, ir_scalar(DT_I32));
    F->ins[p1].attr = 1;
    int n = op2(0, IR_MUL, ir_scalar(DT_I32), p1, ci(0, DT_I32, BN));
    int zt = op1(0, IR_BCAST, t2(DT_F32, BM, BN), cf(0, DT_F32, 0));
    int vz = emit(0, IR_VSET, ir_scalar(DT_VOID));
    F->ins[vz].param = 0;
    F->ins[vz].opnd[0] = zt;
    int fr = op3(0, IR_FOR, ir_scalar(DT_I32), ci(0, DT_I32, 0), ci(0, DT_I32, S),
                 ci(0, DT_I32, BK));
    int r = ir_region_new(F, 0);
    F->ins[fr].region[0] = r;
    int kk[2] = {IDX_RANGE, IDX_RANGE};
    int va[2] = {m, fr}, la[2] = {BM, BK}, vb[2] = {fr, n}, lb[2] = {BK, BN};
    int a = op2(r, IR_LOAD, t2(DT_F32, BM, BK), -1, -1);
    F->ins[a].param = 0;
    F->ins[a].view = view(2, kk, va, la);
    int b = op2(r, IR_LOAD, t2(DT_F32, BK, BN), -1, -1);
    F->ins[b].param = 1;
    F->ins[b].view = view(2, kk, vb, lb);
    int g = emit(r, IR_VGET, t2(DT_F32, BM, BN));
    F->ins[g].param = 0;
    int d = op3(r, IR_DOT, t2(DT_F32, BM, BN), a, b, g);
    int vs = emit(r, IR_VSET, ir_scalar(DT_VOID));
    F->ins[vs].param = 0;
    F->ins[vs].opnd[0] = d;
    int fin = emit(0, IR_VGET, t2(DT_F32, BM, BN));
    F->ins[fin].param = 0;
    int vc[2] = {m, n}, lc[2] = {BM, BN};
    int st = op2(0, IR_STORE, ir_scalar(DT_VOID), fin, -1);
    F->ins[st].param = 2;
    F->ins[st].view = view(2, kk, vc, lc);
    if (getenv("BLKC_CPU_DUMP")) { /* print the optimized LLVM IR */
        DslBuf out = {0};
        char err[256];
        if (bk_cpu_backend.emit(M, NULL, "llvm", &out, err, sizeof err) == 0)
            fputs(out.data, stdout);
        dsl_buf_free(&out);
    }
    BkCpuModule *cm = jit();
    if (!cm)
        return 0;
    float *A = malloc((size_t)S * S * 4), *B = malloc((size_t)S * S * 4);
    float *C = malloc((size_t)S * S * 4);
    for (int i = 0; i < S * S; i++) {
        A[i] = (float)((i * 7) % 13) * 0.1f - 0.6f;
        B[i] = (float)((i * 5) % 11) * 0.1f - 0.5f;
    }
    BkTensorDesc da = desc2(A, S, S, S), db = desc2(B, S, S, S), dc = desc2(C, S, S, S);
    void *args[3] = {&da, &db, &dc};
    BkRangeFn fn = bk_cpu_kernel_range(cm, "gemm");
    int gm = (S + BM - 1) / BM, gn = (S + BN - 1) / BN;
    int32_t np[3] = {gm, gn, 1};
    fn((void *const *)args, 0, gm * gn, np); /* warm up */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fn((void *const *)args, 0, gm * gn, np);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (check) {
        int bad = 0;
        for (int i = 0; i < S; i += 7)
            for (int j = 0; j < S; j += 5) {
                double s = 0;
                for (int k = 0; k < S; k++)
                    s += (double)A[i * S + k] * B[k * S + j];
                bad += fabs(C[i * S + j] - s) > 1e-3 * (1 + fabs(s));
            }
        CHECK(bad == 0, "gemm %d: %d bad", S, bad);
    }
    free(A); free(B); free(C);
    finish(cm);
    return 2.0 * S * S * (double)S / sec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        double gf = bench_gemm(1024, true);
        printf("gemm 1024^3 f32 (64x64x32 tiles, 1 thread): %.1f GFLOP/s\n", gf);
        return fails ? 1 : 0;
    }
    test_int_ops();
    test_float_ops();
    test_math_and_casts();
    test_memory();
    test_reduce();
    dot_case(64, 64, 32, DT_F32, 0);
    dot_case(5, 7, 3, DT_F32, 0);
    dot_case(17, 33, 19, DT_F32, 0);
    dot_case(16, 48, 8, DT_F16, 0);
    dot_case(9, 20, 13, DT_I8, 0);
    dot_case(8, 32, 16, DT_F32, 3);
    dot_case(3, 5, 4, DT_I8, 2);
    test_atomics();
    test_control();
    test_atomic_unsupported();
    bench_gemm(200, true); /* non-multiple of the tile: OOB tails */
    if (fails) {
        fprintf(stderr, "%d failure(s)\n", fails);
        return 1;
    }
    printf("cpu backend: all tests passed\n");
    return 0;
}
