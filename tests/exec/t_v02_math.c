/* t_v02_math.c — the math and bit builtins of LANGUAGE.md §7 against libm
 * in C: pow log1p expm1 tan atan atan2 sinh cosh round (ties to even)
 * trunc clamp isnan isinf umulhi (u32, i32) bitcast (f32 <-> u32/i32),
 * f32 and f16 inputs, 45 elements (a tail), NaN and inf among them; and
 * 1-D dot operands (vector-matrix, matrix-vector with an accumulator,
 * precision = tf32 computed as ieee); load(view, pad = tile) with a tail,
 * a mask and an in-bounds NaN. */
#include "harness.h"

static const char *src =
    "kernel m(X: f32[N], Y: f32[N], O: f32[12, N], B: bool[2, N], H: f16[N], HO: f16[N]) {\n"
    "    let x = X[0 +: 45];\n"
    "    let y = Y[0 +: 45];\n"
    "    O[0, 0 +: 45] = pow(abs(x), y);\n"
    "    O[1, 0 +: 45] = log1p(abs(x));\n"
    "    O[2, 0 +: 45] = expm1(x);\n"
    "    O[3, 0 +: 45] = tan(x);\n"
    "    O[4, 0 +: 45] = atan(x);\n"
    "    O[5, 0 +: 45] = atan2(y, x);\n"
    "    O[6, 0 +: 45] = sinh(x);\n"
    "    O[7, 0 +: 45] = cosh(x);\n"
    "    O[8, 0 +: 45] = round(x * 4.0);\n"
    "    O[9, 0 +: 45] = trunc(x * 4.0);\n"
    "    O[10, 0 +: 45] = clamp(x, -1.0, 0.5);\n"
    "    O[11, 0 +: 45] = bitcast(bitcast(x, u32) ^ 0x80000000, f32);\n"
    "    B[0, 0 +: 45] = isnan(x);\n"
    "    B[1, 0 +: 45] = isinf(x);\n"
    "    HO[0 +: 45] = expm1(H[0 +: 45]) + round(H[0 +: 45] * 2.0);\n"
    "}\n"
    "kernel hi(A: u32[N], Bv: u32[N], U: u32[N], S: i32[N], I: i32[N]) {\n"
    "    let a = A[0 +: 45];\n"
    "    let b = Bv[0 +: 45];\n"
    "    U[0 +: 45] = umulhi(a, b);\n"
    "    S[0 +: 45] = umulhi(bitcast(a, i32), bitcast(b, i32));\n"
    "    I[0 +: 45] = bitcast(clamp(bitcast(a, i32), -1000, 1000000), i32);\n"
    "}\n"
    "kernel mv(X: f32[40], Wt: f32[40, 24], V: f32[24, 40], Y: f32[24], Z: f32[24]) {\n"
    "    let x = X[0 +: 40];\n"
    "    Y[0 +: 24] = dot(x, Wt[0 +: 40, 0 +: 24], precision = tf32);\n"
    "    Z[0 +: 24] = dot(V[0 +: 24, 0 +: 40], x, full(f32, 1.5, 24));\n"
    "}\n"
    "kernel padt(X: f32[N], Y: f32[64], Q: i32[N], QY: i32[4, 16]) {\n"
    "    let i = arange(0, 64);\n"
    "    Y[0 +: 64] = load(X[0 +: 64], pad = i as f32 * -1.0, mask = i % 5 != 4);\n"
    "    QY[0 +: 4, 0 +: 16] = load(Q[(arange(0, 4) * 16)[:, None] + arange(0, 16)[None, :]],\n"
    "                               pad = arange(100, 116)[None, :]);\n"
    "}\n";

enum { N = 45 };

int main(void)
{
    h_seed(3);
    blkc_module *m = h_compile(src, NULL);
    float *x = h_array(H_F32, N), *y = h_array(H_F32, N), *o = h_array(H_F32, 12 * N);
    uint8_t *bb = h_array(H_BOOL, 2 * N);
    uint16_t *hx = h_array(H_F16, N), *ho = h_array(H_F16, N);
    h_fill(x, H_F32, N, -3, 3);
    h_fill(y, H_F32, N, -2, 2);
    x[0] = 0.125f;  /* x * 4 = 0.5: round to even gives 0 */
    x[1] = 0.375f;  /* 1.5 -> 2 */
    x[2] = -0.625f; /* -2.5 -> -2 */
    x[3] = NAN;
    x[4] = INFINITY;
    x[5] = -INFINITY;
    for (int i = 0; i < N; i++)
        hx[i] = h_f32_to_f16(h_rf16((float)h_randu(-2, 2)));
    hx[6] = h_f32_to_f16(0.75f); /* 1.5 -> 2 */
    hx[7] = h_f32_to_f16(1.25f); /* 2.5 -> 2 */
    H_LAUNCH(h_kernel(m, "m"), h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N)),
             h_ten(h_t2(o, H_F32, 12, N)), h_ten(h_t2(bb, H_BOOL, 2, N)),
             h_ten(h_t1(hx, H_F16, N)), h_ten(h_t1(ho, H_F16, N)));
    double *r = h_alloc(8 * 12 * N), *rb = h_alloc(8 * 2 * N), *rh = h_alloc(8 * N);
    for (int i = 0; i < N; i++) {
        float v = x[i], w = y[i];
        r[0 * N + i] = powf(fabsf(v), w);
        r[1 * N + i] = log1pf(fabsf(v));
        r[2 * N + i] = expm1f(v);
        r[3 * N + i] = tanf(v);
        r[4 * N + i] = atanf(v);
        r[5 * N + i] = atan2f(w, v);
        r[6 * N + i] = sinhf(v);
        r[7 * N + i] = coshf(v);
        r[8 * N + i] = nearbyintf(v * 4.0f);
        r[9 * N + i] = truncf(v * 4.0f);
        r[10 * N + i] = isnan(v) ? v : v < -1.0f ? -1.0f : v > 0.5f ? 0.5f : v;
        r[11 * N + i] = -v;
        rb[i] = isnan(v) != 0;
        rb[N + i] = isinf(v) != 0;
        float hv = h_f16_to_f32(hx[i]);
        rh[i] = h_rf16(h_rf16(expm1f(hv)) + nearbyintf(hv * 2.0f));
    }
    static const char *const names[12] = {"pow", "log1p", "expm1", "tan", "atan", "atan2",
                                          "sinh", "cosh", "round (ties to even)", "trunc",
                                          "clamp", "bitcast f32 <-> u32 sign flip"};
    for (int k = 0; k < 12; k++) {
        bool exact = k >= 8;
        h_check(names[k], o + k * N, H_F32, r + k * N, N, exact ? 0 : 1e-6, exact ? 0 : 2e-6);
    }
    h_check("isnan, isinf", bb, H_BOOL, rb, 2 * N, 0, 0);
    h_check("f16: expm1 + round, computed in f32", ho, H_F16, rh, N, 1e-3, 1e-3);

    uint32_t *a = h_array(H_U32, N), *b = h_array(H_U32, N), *u = h_array(H_U32, N);
    int32_t *s = h_array(H_I32, N), *ic = h_array(H_I32, N);
    for (int i = 0; i < N; i++) {
        a[i] = (uint32_t)h_rand_u64();
        b[i] = (uint32_t)h_rand_u64();
    }
    a[0] = b[0] = 0xffffffffu;
    H_LAUNCH(h_kernel(m, "hi"), h_ten(h_t1(a, H_U32, N)), h_ten(h_t1(b, H_U32, N)),
             h_ten(h_t1(u, H_U32, N)), h_ten(h_t1(s, H_I32, N)), h_ten(h_t1(ic, H_I32, N)));
    int64_t *ru = h_alloc(8 * N), *rs = h_alloc(8 * N), *ri = h_alloc(8 * N);
    for (int i = 0; i < N; i++) {
        ru[i] = (uint32_t)(((uint64_t)a[i] * b[i]) >> 32);
        int32_t sa = (int32_t)a[i], sb = (int32_t)b[i];
        rs[i] = (int32_t)(((int64_t)sa * sb) >> 32);
        ri[i] = sa < -1000 ? -1000 : sa > 1000000 ? 1000000 : sa;
    }
    h_check_i("umulhi u32", u, H_U32, ru, N);
    h_check_i("umulhi i32 (signed high word)", s, H_I32, rs, N);
    h_check_i("clamp on i32", ic, H_I32, ri, N);

    enum { K = 40, M = 24 };
    float *xv = h_array(H_F32, K), *wt = h_array(H_F32, K * M), *vv = h_array(H_F32, M * K);
    float *yv = h_array(H_F32, M), *zv = h_array(H_F32, M);
    h_fill(xv, H_F32, K, -1, 1);
    h_fill(wt, H_F32, K * M, -1, 1);
    h_fill(vv, H_F32, M * K, -1, 1);
    H_LAUNCH(h_kernel(m, "mv"), h_ten(h_t1(xv, H_F32, K)), h_ten(h_t2(wt, H_F32, K, M)),
             h_ten(h_t2(vv, H_F32, M, K)), h_ten(h_t1(yv, H_F32, M)), h_ten(h_t1(zv, H_F32, M)));
    double ry[M], rz[M];
    for (int j = 0; j < M; j++) {
        ry[j] = 0;
        rz[j] = 1.5;
        for (int q = 0; q < K; q++) {
            ry[j] += (double)xv[q] * wt[q * M + j];
            rz[j] += (double)vv[j * K + q] * xv[q];
        }
    }
    h_check("dot(x: [K], w: [K, N]) -> [N]", yv, H_F32, ry, M, 1e-4, 1e-4);
    h_check("dot(w: [M, K], x: [K], acc) -> [M]", zv, H_F32, rz, M, 1e-4, 1e-4);

    float *py = h_array(H_F32, 64);
    int32_t *q = h_array(H_I32, N), *qy = h_array(H_I32, 64);
    for (int i = 0; i < N; i++)
        q[i] = (int32_t)h_randi(-50, 50);
    q[7] = 0;
    q[8] = 1; /* values equal to the pads 0 and 1 stay */
    H_LAUNCH(h_kernel(m, "padt"), h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(py, H_F32, 64)),
             h_ten(h_t1(q, H_I32, N)), h_ten(h_t2(qy, H_I32, 4, 16)));
    double rp[64];
    int64_t rq[64];
    for (int i = 0; i < 64; i++) {
        rp[i] = i < N && i % 5 != 4 ? x[i] : -(double)i;
        rq[i] = i < N ? q[i] : 100 + i % 16;
    }
    h_check("load(X[0 +: 64], pad = tile, mask = m) (in-bounds NaN at [3], inf masked at [4])", py, H_F32, rp, 64, 0, 0);
    h_check_i("load(gather view, pad = [1, 16] tile) i32", qy, H_I32, rq, 64);
    return h_done();
}
