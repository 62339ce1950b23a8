/* kernels.h — Core IR kernels built by hand with ir.c's builder, for the
 * GPU backend tests (tests/nvrtc and tests/hip). They do not need the front
 * end, so the backends can be tested while it is being written.
 *
 *   vector_add   f32, masked tail load/store            (golden)
 *   softmax      row reductions (max, sum), pad = -inf  (golden)
 *   matmul_f16   for loop, tile var, tensor-core dot    (golden)
 *   kitchen      most other ops: gathers, scans, argmax, permute, atomics
 *                (native and CAS), while/if/return, f8/bf16, i8/f32/batched/
 *                odd-shaped dots
 * Everything is static: include from one test file. */
#ifndef BLKC_TESTS_NVRTC_KERNELS_H
#define BLKC_TESTS_NVRTC_KERNELS_H

#include "compiler/ir.h"

#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

static IrModule *K_M;
static IrFunc *K_F;
static int K_line = 1;

static int k_ins(int r, int op, IrType t)
{
    DslLoc loc = {K_line, 5};
    return ir_emit(K_F, r, op, t, loc);
}

static IrType k_t(int dt, int rank, ...)
{
    int32_t sh[IR_MAX_RANK];
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        sh[i] = va_arg(ap, int);
    va_end(ap);
    return ir_tile(dt, rank, sh);
}

static IrType k_s(int dt) { return ir_scalar(dt); }

static int k_ci(int r, int dt, long long v)
{
    int id = k_ins(r, IR_CONST, k_s(dt));
    K_F->ins[id].ival = v;
    return id;
}

static int k_cf(int r, IrType t, double v)
{
    int id = k_ins(r, IR_CONST, t);
    K_F->ins[id].fval = v;
    return id;
}

static int k_op(int r, int op, IrType t, int a, int b, int c)
{
    int id = k_ins(r, op, t);
    K_F->ins[id].opnd[0] = a;
    K_F->ins[id].opnd[1] = b;
    K_F->ins[id].opnd[2] = c;
    return id;
}

/* result type = a's type (comparisons: bool) */
static int k_bin(int r, int op, int a, int b)
{
    IrType t = K_F->ins[a].type;
    if (t.rank == 0)
        t = K_F->ins[b].type.rank ? K_F->ins[b].type : t;
    if (op >= IR_EQ && op <= IR_GE)
        t.dtype = DT_BOOL;
    return k_op(r, op, t, a, b, -1);
}

static int k_un(int r, int op, int a)
{
    return k_op(r, op, K_F->ins[a].type, a, -1, -1);
}

static int k_cvt(int r, int a, int dt)
{
    IrType t = K_F->ins[a].type;
    t.dtype = (uint8_t)dt;
    return k_op(r, IR_CVT, t, a, -1, -1);
}

static void k_func(const char *name, int warps)
{
    K_F = ir_func_new(K_M, name);
    K_F->warps = warps;
    ir_region_new(K_F, -1); /* region 0: body */
    K_F->params = dsl_alloc(&K_M->arena, sizeof(IrParam) * 16);
    K_F->syms = dsl_alloc(&K_M->arena, sizeof(IrSym) * 8);
    K_F->vars = calloc(8, sizeof(IrVar)); /* freed by ir_module_free */
}

static int k_sym(const char *name, int param, int dim)
{
    IrSym *s = &K_F->syms[K_F->nsyms];
    s->name = name;
    s->param = param;
    s->dim = dim;
    return K_F->nsyms++;
}

/* dims: >= 0 static, or -1 - sym */
static int k_tensor(const char *name, int dt, int rank, const int64_t *dims)
{
    IrParam *p = &K_F->params[K_F->nparams];
    p->name = name;
    p->kind = PK_TENSOR;
    p->dtype = (uint8_t)dt;
    p->rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        p->dims[i] = dims[i];
    return K_F->nparams++;
}

static int k_scalar_param(const char *name, int dt)
{
    IrParam *p = &K_F->params[K_F->nparams];
    p->name = name;
    p->kind = PK_SCALAR;
    p->dtype = (uint8_t)dt;
    return K_F->nparams++;
}

static int k_var(const char *name, IrType t)
{
    K_F->vars[K_F->nvars].name = name;
    K_F->vars[K_F->nvars].type = t;
    return K_F->nvars++;
}

/* view kinds: 'r' start+len, 's' scalar, 't' tile */
static int k_view(int ndims, const char *kinds, const int *vals, const int *lens)
{
    IrView v;
    memset(&v, 0, sizeof v);
    v.ndims = ndims;
    for (int d = 0; d < ndims; d++) {
        v.d[d].kind = kinds[d] == 'r' ? IDX_RANGE : kinds[d] == 's' ? IDX_SCALAR
                                                                    : IDX_TILE;
        v.d[d].val = vals[d];
        v.d[d].len = lens ? lens[d] : 0;
    }
    return ir_view_new(K_F, &v);
}

static int k_load(int r, int param, int view, int mask, int pad)
{
    IrType t;
    memset(&t, 0, sizeof t);
    ir_view_shape(K_F, &K_F->views[view], &t);
    t.dtype = K_F->params[param].dtype;
    int id = k_op(r, IR_LOAD, t, mask, pad, -1);
    K_F->ins[id].param = param;
    K_F->ins[id].view = view;
    return id;
}

static int k_store(int r, int param, int view, int val, int mask)
{
    int id = k_op(r, IR_STORE, k_s(DT_VOID), val, mask, -1);
    K_F->ins[id].param = param;
    K_F->ins[id].view = view;
    return id;
}

static int k_reduce(int r, int kind, int a, int axis, IrType t)
{
    int id = k_op(r, IR_REDUCE, t, a, -1, -1);
    K_F->ins[id].attr = kind;
    K_F->ins[id].axis = axis;
    return id;
}

/* grid(g0) from one value built by `fn` in the grid region */
static void k_grid1(int g)
{
    int id = k_ins(K_F->grid_region, IR_YIELD, k_s(DT_VOID));
    K_F->ins[id].opnd[0] = g;
    K_F->ins[id].nopnd = 1;
}

/* ------------------------------------------------------------ kernels */

/* kernel vector_add<BLOCK = 256>(X: f32[N], Y: f32[N], Z: f32[N])
 *     grid(cdiv(N, BLOCK)) */
static void k_vector_add(void)
{
    int64_t d[1] = {-1};
    k_func("vector_add", 4);
    k_sym("N", 0, 0);
    int X = k_tensor("X", DT_F32, 1, d), Y = k_tensor("Y", DT_F32, 1, d),
        Z = k_tensor("Z", DT_F32, 1, d);
    K_F->grid_region = ir_region_new(K_F, -1);
    int g = K_F->grid_region;
    int n = k_ins(g, IR_SIZE, k_s(DT_I32));
    K_F->ins[n].param = X;
    int b1 = k_bin(g, IR_ADD, n, k_ci(g, DT_I32, 255));
    k_grid1(k_bin(g, IR_DIV, b1, k_ci(g, DT_I32, 256)));
    K_line = 3;
    int pid = k_ins(0, IR_PID, k_s(DT_I32));
    int off = k_bin(0, IR_MUL, pid, k_ci(0, DT_I32, 256));
    K_line = 4;
    int len[1] = {256}, vals[1] = {off};
    int x = k_load(0, X, k_view(1, "r", vals, len), -1, -1);
    int y = k_load(0, Y, k_view(1, "r", vals, len), -1, -1);
    int s = k_bin(0, IR_ADD, x, y);
    K_line = 5;
    k_store(0, Z, k_view(1, "r", vals, len), s, -1);
}

/* kernel softmax<BLOCK = 1024>(X: f32[R, N], Y: f32[R, N]) grid(R) */
static void k_softmax(void)
{
    int64_t d[2] = {-1, -2};
    k_func("softmax", 4);
    k_sym("R", 0, 0);
    k_sym("N", 0, 1);
    int X = k_tensor("X", DT_F32, 2, d), Y = k_tensor("Y", DT_F32, 2, d);
    K_F->grid_region = ir_region_new(K_F, -1);
    int n = k_ins(K_F->grid_region, IR_SIZE, k_s(DT_I32));
    K_F->ins[n].param = X;
    k_grid1(n);
    K_line = 2;
    int r = k_ins(0, IR_PID, k_s(DT_I32));
    int z = k_ci(0, DT_I32, 0);
    K_line = 3;
    int pad = k_cf(0, k_s(DT_F32), -INFINITY);
    int vals[2] = {r, z}, len[2] = {0, 1024};
    int x = k_load(0, X, k_view(2, "sr", vals, len), -1, pad);
    K_line = 4;
    int mx = k_reduce(0, RED_MAX, x, -1, k_s(DT_F32));
    int e = k_un(0, IR_EXP, k_bin(0, IR_SUB, x, mx));
    K_line = 5;
    int s = k_reduce(0, RED_SUM, e, -1, k_s(DT_F32));
    k_store(0, Y, k_view(2, "sr", vals, len), k_bin(0, IR_DIV, e, s), -1);
}

/* kernel matmul_f16<BM = 64, BN = 64, BK = 32>(A: f16[M, K], B: f16[K, N],
 *     C: f16[M, N]) grid(M / 64, N / 64) warps(4): tensor-core dot */
static void k_matmul(const char *name, int dt, int BM, int BN, int BK)
{
    int64_t da[2] = {-1, -2}, db[2] = {-2, -3}, dc[2] = {-1, -3};
    k_func(name, 4);
    k_sym("M", 0, 0);
    k_sym("K", 0, 1);
    k_sym("N", 1, 1);
    int A = k_tensor("A", dt, 2, da), B = k_tensor("B", dt, 2, db),
        C = k_tensor("C", dt, 2, dc);
    int acc = k_var("acc", k_t(DT_F32, 2, BM, BN));
    K_line = 3;
    int pm = k_ins(0, IR_PID, k_s(DT_I32));
    int m = k_bin(0, IR_MUL, pm, k_ci(0, DT_I32, BM));
    int pn = k_ins(0, IR_PID, k_s(DT_I32));
    K_F->ins[pn].attr = 1;
    int n = k_bin(0, IR_MUL, pn, k_ci(0, DT_I32, BN));
    K_line = 5;
    int zero = k_cf(0, k_t(DT_F32, 2, BM, BN), 0.0);
    int vs = k_op(0, IR_VSET, k_s(DT_VOID), zero, -1, -1);
    K_F->ins[vs].param = acc;
    K_line = 6;
    int kd = k_ins(0, IR_SIZE, k_s(DT_I32));
    K_F->ins[kd].param = A;
    K_F->ins[kd].attr = 1;
    int loop = k_op(0, IR_FOR, k_s(DT_I32), k_ci(0, DT_I32, 0), kd,
                    k_ci(0, DT_I32, BK));
    int body = ir_region_new(K_F, 0);
    K_F->ins[loop].region[0] = body;
    K_line = 7;
    int cur = k_ins(body, IR_VGET, k_t(DT_F32, 2, BM, BN));
    K_F->ins[cur].param = acc;
    int va[2] = {m, loop}, la[2] = {BM, BK}, vb[2] = {loop, n}, lb[2] = {BK, BN};
    int a = k_load(body, A, k_view(2, "rr", va, la), -1, -1);
    int b = k_load(body, B, k_view(2, "rr", vb, lb), -1, -1);
    int dd = k_op(body, IR_DOT, k_t(DT_F32, 2, BM, BN), a, b, cur);
    int vs2 = k_op(body, IR_VSET, k_s(DT_VOID), dd, -1, -1);
    K_F->ins[vs2].param = acc;
    K_line = 9;
    int fin = k_ins(0, IR_VGET, k_t(DT_F32, 2, BM, BN));
    K_F->ins[fin].param = acc;
    int vc[2] = {m, n}, lc[2] = {BM, BN};
    k_store(0, C, k_view(2, "rr", vc, lc), k_cvt(0, fin, dt), -1);
}

/* A kernel touching most ops (compile coverage, not a golden). */
static void k_kitchen(void)
{
    int64_t dn[1] = {-1}, d16[1] = {16}, d4[1] = {4}, dq[2] = {32, 32},
            dh[2] = {32, 16}, df[2] = {16, 8};
    k_func("kitchen", 2);
    k_sym("N", 0, 0);
    int X = k_tensor("X", DT_BF16, 1, dn);
    int I = k_tensor("I", DT_I32, 1, d16);
    int Y = k_tensor("Y", DT_F8E4M3, 1, dn);
    int Cnt = k_tensor("Cnt", DT_I32, 1, d4);
    int Q = k_tensor("Q", DT_I8, 2, dq);
    int H = k_tensor("H", DT_F16, 2, dh);
    int Fm = k_tensor("Fm", DT_F32, 2, df);
    int Hs = k_tensor("Hs", DT_F16, 1, d4);
    int U = k_tensor("U", DT_U8, 1, d4);
    int D = k_tensor("D", DT_F64, 1, d4);
    int L64 = k_tensor("L64", DT_I64, 1, d4);
    int s = k_scalar_param("s", DT_F32);
    int hs = k_scalar_param("h", DT_F16);
    int flag = k_scalar_param("flag", DT_BOOL);
    int cntv = k_var("count", k_s(DT_I32));
    int z = k_ci(0, DT_I32, 0);
    K_line = 10;
    /* gather: X[I[0 +: 16]] */
    int v0[1] = {z}, l16[1] = {16};
    int idx = k_load(0, I, k_view(1, "r", v0, l16), -1, -1);
    int vi[1] = {idx};
    int xg = k_load(0, X, k_view(1, "t", vi, NULL), -1, -1); /* bf16[16] */
    K_line = 11;
    int xf = k_cvt(0, xg, DT_F32);
    int cs = k_op(0, IR_SCAN, k_t(DT_F32, 1, 16), xf, -1, -1);
    K_F->ins[cs].axis = 0;
    int am = k_reduce(0, RED_ARGMAX, cs, -1, k_s(DT_I32));
    K_line = 12;
    int rs = k_op(0, IR_RESHAPE, k_t(DT_F32, 2, 4, 4), cs, -1, -1);
    int pm = k_op(0, IR_PERMUTE, k_t(DT_F32, 2, 4, 4), rs, -1, -1);
    K_F->ins[pm].perm[0] = 1;
    K_F->ins[pm].perm[1] = 0;
    int mn = k_reduce(0, RED_MIN, pm, 1, k_t(DT_F32, 1, 4));
    int ai = k_reduce(0, RED_ARGMIN, pm, 0, k_t(DT_I32, 1, 4));
    K_line = 13;
    int sp = k_op(0, IR_PARAM, k_s(DT_F32), -1, -1, -1);
    K_F->ins[sp].param = s;
    int fm = k_op(0, IR_FMA, k_t(DT_F32, 1, 4), mn, sp, mn);
    int sg = k_un(0, IR_SIGMOID, fm);
    int er = k_un(0, IR_ERF, sg);
    int bc = k_op(0, IR_BCAST, k_t(DT_F32, 2, 4, 4), er, -1, -1);
    int msum = k_reduce(0, RED_SUM, bc, 0, k_t(DT_F32, 1, 4));
    K_line = 14;
    /* f8 store with a mask: Y[0 +: 4] = msum as f8e4m3, mask = ai > 0 */
    int l4[1] = {4};
    int mask = k_bin(0, IR_GT, ai, k_ci(0, DT_I32, 0));
    k_store(0, Y, k_view(1, "r", v0, l4), k_cvt(0, msum, DT_F8E4M3), mask);
    K_line = 15;
    /* atomics: tile add (native), scalar max (native), cas, f16 add (CAS
     * loop), u8 xchg (word CAS), f64 max (CAS loop), i64 add */
    int old = k_op(0, IR_ATOMIC, k_t(DT_I32, 1, 4), ai, -1, -1);
    K_F->ins[old].param = Cnt;
    K_F->ins[old].view = k_view(1, "r", v0, l4);
    K_F->ins[old].attr = ATOM_ADD;
    int om = k_op(0, IR_ATOMIC, k_s(DT_I32), am, -1, -1);
    K_F->ins[om].param = Cnt;
    K_F->ins[om].view = k_view(1, "s", v0, NULL);
    K_F->ins[om].attr = ATOM_MAX;
    int oc = k_op(0, IR_ATOMIC, k_s(DT_I32), om, z, -1);
    K_F->ins[oc].param = Cnt;
    K_F->ins[oc].view = k_view(1, "s", v0, NULL);
    K_F->ins[oc].attr = ATOM_CAS;
    int hp = k_op(0, IR_PARAM, k_s(DT_F16), -1, -1, -1);
    K_F->ins[hp].param = hs;
    int hb = k_op(0, IR_BCAST, k_t(DT_F16, 1, 4), hp, -1, -1);
    int oh = k_op(0, IR_ATOMIC, k_t(DT_F16, 1, 4), hb, -1, -1);
    K_F->ins[oh].param = Hs;
    K_F->ins[oh].view = k_view(1, "r", v0, l4);
    K_F->ins[oh].attr = ATOM_ADD;
    int ub = k_cvt(0, old, DT_U8);
    int ou = k_op(0, IR_ATOMIC, k_t(DT_U8, 1, 4), ub, -1, -1);
    K_F->ins[ou].param = U;
    K_F->ins[ou].view = k_view(1, "r", v0, l4);
    K_F->ins[ou].attr = ATOM_XCHG;
    int df64 = k_cvt(0, oh, DT_F64);
    int od = k_op(0, IR_ATOMIC, k_t(DT_F64, 1, 4), df64, -1, -1);
    K_F->ins[od].param = D;
    K_F->ins[od].view = k_view(1, "r", v0, l4);
    K_F->ins[od].attr = ATOM_MAX;
    int l64 = k_cvt(0, ou, DT_I64);
    int sh = k_bin(0, IR_SHL, l64, k_cvt(0, old, DT_I64));
    int x64 = k_bin(0, IR_XOR, sh, k_cvt(0, od, DT_I64));
    int rm = k_bin(0, IR_REM, x64, k_cvt(0, ub, DT_I64));
    int o64 = k_op(0, IR_ATOMIC, k_s(DT_VOID), rm, -1, -1);
    K_F->ins[o64].param = L64;
    K_F->ins[o64].view = k_view(1, "r", v0, l4);
    K_F->ins[o64].attr = ATOM_ADD;
    K_line = 20;
    /* dots: i8 (mma s8), f32 (3xTF32), batched f16, odd-shaped (FMA) */
    int v00[2] = {z, z}, l32[2] = {32, 32};
    int q = k_load(0, Q, k_view(2, "rr", v00, l32), -1, -1);
    int qi = k_op(0, IR_DOT, k_t(DT_I32, 2, 32, 32), q, q, -1);
    int l168[2] = {16, 8}, l88[2] = {8, 8};
    int fa = k_load(0, Fm, k_view(2, "rr", v00, l168), -1, -1);
    int fb = k_load(0, Fm, k_view(2, "rr", v00, l88), -1, -1);
    int fd = k_op(0, IR_DOT, k_t(DT_F32, 2, 16, 8), fa, fb, -1);
    int l3216[2] = {32, 16};
    int h = k_load(0, H, k_view(2, "rr", v00, l3216), -1, -1);
    int h3 = k_op(0, IR_RESHAPE, k_t(DT_F16, 3, 2, 16, 16), h, -1, -1);
    int h3b = k_op(0, IR_PERMUTE, k_t(DT_F16, 3, 2, 16, 16), h3, -1, -1);
    K_F->ins[h3b].perm[0] = 0;
    K_F->ins[h3b].perm[1] = 2;
    K_F->ins[h3b].perm[2] = 1;
    int hd = k_op(0, IR_DOT, k_t(DT_F32, 3, 2, 16, 16), h3, h3b, -1);
    int l35[2] = {3, 5}, l57[2] = {5, 7};
    int oa = k_load(0, Fm, k_view(2, "rr", v00, l35), -1, -1);
    int ob = k_load(0, Fm, k_view(2, "rr", v00, l57), -1, -1);
    int od2 = k_op(0, IR_DOT, k_t(DT_F32, 2, 3, 7), oa, ob, -1);
    K_line = 25;
    int t1 = k_reduce(0, RED_SUM, qi, -1, k_s(DT_I32));
    int t2 = k_reduce(0, RED_MAX, fd, -1, k_s(DT_F32));
    int t3 = k_reduce(0, RED_SUM, hd, 2, k_t(DT_F32, 2, 2, 16));
    int t4 = k_reduce(0, RED_SUM, od2, -1, k_s(DT_F32));
    int t3s = k_reduce(0, RED_SUM, t3, -1, k_s(DT_F32));
    int tot = k_bin(0, IR_ADD, k_bin(0, IR_ADD, t2, t3s),
                    k_bin(0, IR_ADD, t4, k_cvt(0, t1, DT_F32)));
    K_line = 30;
    /* while (count < 3) { count += 1; } if (flag) { Fm[0, 0] = tot } else
     * { return; } */
    int vz = k_op(0, IR_VSET, k_s(DT_VOID), z, -1, -1);
    K_F->ins[vz].param = cntv;
    int wl = k_ins(0, IR_WHILE, k_s(DT_VOID));
    int wc = ir_region_new(K_F, 0), wb = ir_region_new(K_F, 0);
    K_F->ins[wl].region[0] = wc;
    K_F->ins[wl].region[1] = wb;
    int cg = k_ins(wc, IR_VGET, k_s(DT_I32));
    K_F->ins[cg].param = cntv;
    int lt = k_bin(wc, IR_LT, cg, k_ci(wc, DT_I32, 3));
    int y = k_ins(wc, IR_YIELD, k_s(DT_VOID));
    K_F->ins[y].opnd[0] = lt;
    K_F->ins[y].nopnd = 1;
    int cg2 = k_ins(wb, IR_VGET, k_s(DT_I32));
    K_F->ins[cg2].param = cntv;
    int inc = k_bin(wb, IR_ADD, cg2, k_ci(wb, DT_I32, 1));
    int vs = k_op(wb, IR_VSET, k_s(DT_VOID), inc, -1, -1);
    K_F->ins[vs].param = cntv;
    K_line = 33;
    int fp = k_op(0, IR_PARAM, k_s(DT_BOOL), -1, -1, -1);
    K_F->ins[fp].param = flag;
    int iff = k_op(0, IR_IF, k_s(DT_VOID), fp, -1, -1);
    int th = ir_region_new(K_F, 0), el = ir_region_new(K_F, 0);
    K_F->ins[iff].region[0] = th;
    K_F->ins[iff].region[1] = el;
    k_store(th, Fm, k_view(2, "ss", v00, NULL), tot, -1);
    k_ins(el, IR_RET, k_s(DT_VOID));
    K_line = 36;
    int nan = k_cf(0, k_s(DT_F32), NAN);
    int mx = k_bin(0, IR_MAX, tot, nan);
    k_store(0, Fm, k_view(2, "ss", v00, NULL), mx, -1);
    int bits = k_cvt(0, k_un(0, IR_BITNOT, k_ci(0, DT_I32, 5)), DT_BOOL);
    int ns = k_un(0, IR_NOT, bits);
    int sel = k_op(0, IR_SELECT, k_s(DT_F32), ns, tot, k_un(0, IR_FLOOR, tot));
    int p = k_ins(0, IR_NPROG, k_s(DT_I32));
    int w = k_bin(0, IR_ADD, k_cvt(0, p, DT_F32), sel);
    k_store(0, Fm, k_view(2, "ss", v00, NULL), w, -1);
}

/* Builds every kernel into a fresh module. */
static IrModule *k_build_all(void)
{
    K_M = ir_module_new();
    k_vector_add();
    k_softmax();
    k_matmul("matmul_f16", DT_F16, 64, 64, 32);
    k_matmul("matmul_bf16", DT_BF16, 64, 64, 32);
    k_kitchen();
    return K_M;
}

/* One named golden kernel in its own module. */
static IrModule *k_build_one(const char *name)
{
    K_M = ir_module_new();
    if (!strcmp(name, "vector_add"))
        k_vector_add();
    else if (!strcmp(name, "softmax"))
        k_softmax();
    else if (!strcmp(name, "matmul_f16"))
        k_matmul("matmul_f16", DT_F16, 64, 64, 32);
    else {
        ir_module_free(K_M);
        return NULL;
    }
    return K_M;
}

#endif
