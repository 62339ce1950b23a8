/* t_masks.c — bounds masks folded for full tiles (backends/cpu/masks.c): a
 * STORE, a scalar REDUCE, or an elementwise op with one fused in, whose
 * operands compare an arange with a scalar, runs a copy with the compares
 * true when every lane passes. Each kernel runs on sizes that make every
 * tile full, the last one partial, and all of them partial, against a C
 * reference and bit for bit against the module built with
 * BLKC_CPU_NOMASKS=1 (each mask also cuts lanes the bounds keep, so a
 * wrong fold shows): arange + offset < N in a sum, N > arange + offset
 * (the arange on the right), arange <= a scalar expression, arange - 5 >=
 * a parameter in a store, a 2-D mask broadcast over rows, and an i32
 * offset near 2^31 whose lanes wrap (no fold may apply: the range test
 * checks the values fit). */
#include "harness.h"

static const char *src =
    "kernel lt_sum<B = 256>(X: f32[N], S: f32[P]) grid(cdiv(N, B)) {\n"
    "    let o = program_id(0) * B;\n"
    "    let x = X[o +: B];\n"
    "    S[program_id(0)] = sum(where(arange(B) + o < N, x * x + 1.0, 0.0));\n"
    "}\n"
    "kernel gt_store<B = 256>(X: f32[N], Y: f32[N]) grid(cdiv(N, B)) {\n"
    "    let o = program_id(0) * B;\n"
    "    Y[o +: B] = where(N - 3 > arange(B) + o, X[o +: B] * 2.0 + 1.0, 0.0);\n"
    "}\n"
    "kernel le_sum<B = 256>(X: f32[N], S: f32[P]) grid(cdiv(N, B)) {\n"
    "    let o = program_id(0) * B;\n"
    "    let last = N - o - 1;\n"
    "    let v = where(arange(B) <= last, X[o +: B] + 1.0, 0.0);\n"
    "    S[program_id(0)] = sum(v * 3.0);\n"
    "}\n"
    "kernel ge_store<B = 256>(X: f32[N], Y: f32[N], q: i32) grid(cdiv(N, B)) {\n"
    "    let o = program_id(0) * B;\n"
    "    Y[o +: B] = where(arange(B) - 5 >= q, X[o +: B], -1.0);\n"
    "}\n"
    "kernel rows<BM = 8, BN = 64>(X: f32[M, N], Y: f32[M, N]) grid(cdiv(M, BM), cdiv(N, BN)) {\n"
    "    let m = program_id(0) * BM;\n"
    "    let n = program_id(1) * BN;\n"
    "    let inb = broadcast(reshape(arange(BN) + n < N - 2, 1, BN), BM, BN);\n"
    "    Y[m +: BM, n +: BN] = where(inb, X[m +: BM, n +: BN] + 0.5, 9.0);\n"
    "}\n"
    "kernel wrap<B = 128>(X: f32[N], Y: f32[N], w: i32) grid(1) {\n"
    "    Y[0 +: B] = where(arange(B) + w < N, X[0 +: B], -2.0);\n"
    "}\n";

static blkc_module *m, *m0; /* folded, BLKC_CPU_NOMASKS=1 */

/* kernel k of both modules; y and y0 then hold their results */
static void both(const char *k, const blkc_arg *a, int na, int yi, void *y, void *y0,
                 size_t bytes)
{
    blkc_arg b[8];
    memcpy(b, a, sizeof b[0] * (size_t)na);
    h_launch_grid(h_kernel(m, k), b, na, NULL);
    DLTensor t0 = *a[yi].v.tensor;
    t0.data = y0;
    b[yi].v.tensor = &t0;
    h_launch_grid(h_kernel(m0, k), b, na, NULL);
    h_ok(!memcmp(y, y0, bytes), "%s: the same bits as BLKC_CPU_NOMASKS=1", k);
}

static void sums(int N)
{
    enum { B = 256 };
    int P = (N + B - 1) / B;
    float *x = h_array(H_F32, (size_t)P * B), *s = h_array(H_F32, P), *s0 = h_array(H_F32, P);
    double *r = h_alloc(8 * (size_t)P), *r3 = h_alloc(8 * (size_t)P);
    h_fill(x, H_F32, (size_t)P * B, -2, 2);
    for (int p = 0; p < P; p++) {
        double a = 0, c = 0;
        for (int i = p * B; i < p * B + B && i < N; i++) {
            a += (double)(x[i] * x[i] + 1.0f);
            c += (double)((x[i] + 1.0f) * 3.0f);
        }
        r[p] = a;
        r3[p] = c;
    }
    char what[64];
    blkc_arg a[2] = {h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(s, H_F32, P))};
    both("lt_sum", a, 2, 1, s, s0, 4 * (size_t)P);
    snprintf(what, sizeof what, "sum(where(arange + o < N, x * x + 1)) N=%d", N);
    h_check(what, s, H_F32, r, P, 1e-4, 1e-5);
    both("le_sum", a, 2, 1, s, s0, 4 * (size_t)P);
    snprintf(what, sizeof what, "sum(where(arange <= N - o - 1, x + 1) * 3) N=%d", N);
    h_check(what, s, H_F32, r3, P, 1e-4, 1e-5);
}

static void stores(int N, int q)
{
    enum { B = 256 };
    float *x = h_array(H_F32, N), *y = h_array(H_F32, N), *y0 = h_array(H_F32, N);
    double *r = h_alloc(8 * (size_t)N), *rq = h_alloc(8 * (size_t)N);
    h_fill(x, H_F32, N, -3, 3);
    for (int i = 0; i < N; i++) {
        r[i] = i < N - 3 ? (double)(x[i] * 2.0f + 1.0f) : 0.0;
        rq[i] = i % B - 5 >= q ? x[i] : -1.0;
    }
    char what[64];
    blkc_arg a[2] = {h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N))};
    both("gt_store", a, 2, 1, y, y0, 4 * (size_t)N);
    snprintf(what, sizeof what, "where(N - 3 > arange + o) N=%d", N);
    h_check(what, y, H_F32, r, N, 0, 0);
    blkc_arg c[3] = {h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N)), h_int(q)};
    both("ge_store", c, 3, 1, y, y0, 4 * (size_t)N);
    snprintf(what, sizeof what, "where(arange - 5 >= %d) N=%d", q, N);
    h_check(what, y, H_F32, rq, N, 0, 0);
}

static void rows(int M, int N)
{
    float *x = h_array(H_F32, (size_t)M * N), *y = h_array(H_F32, (size_t)M * N);
    float *y0 = h_array(H_F32, (size_t)M * N);
    double *r = h_alloc(8 * (size_t)M * N);
    h_fill(x, H_F32, (size_t)M * N, -1, 1);
    for (size_t i = 0; i < (size_t)M * N; i++)
        r[i] = (int)(i % (size_t)N) < N - 2 ? (double)(x[i] + 0.5f) : 9.0;
    blkc_arg a[2] = {h_ten(h_t2(x, H_F32, M, N)), h_ten(h_t2(y, H_F32, M, N))};
    both("rows", a, 2, 1, y, y0, 4 * (size_t)M * N);
    char what[64];
    snprintf(what, sizeof what, "2-D mask broadcast over rows %dx%d", M, N);
    h_check(what, y, H_F32, r, (size_t)M * N, 0, 0);
}

/* arange(128) + w in i32 wraps past 2^31 - 1 for w near it: the lanes
 * that wrap are negative, so below N, and keep x */
static void wrap(int w, int N)
{
    enum { B = 128 };
    float *x = h_array(H_F32, N), *y = h_array(H_F32, N), *y0 = h_array(H_F32, N);
    double *r = h_alloc(8 * (size_t)N);
    h_fill(x, H_F32, N, -3, 3);
    for (int i = 0; i < N; i++) {
        int32_t v = (int32_t)((uint32_t)i + (uint32_t)w);
        r[i] = i < B ? (v < N ? x[i] : -2.0) : 0.0;
        y[i] = y0[i] = 0.0f;
    }
    blkc_arg a[3] = {h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N)), h_int(w)};
    both("wrap", a, 3, 1, y, y0, 4 * (size_t)N);
    char what[64];
    snprintf(what, sizeof what, "arange + %d (i32, wrapping) < %d", w, N);
    h_check(what, y, H_F32, r, N, 0, 0);
}

int main(void)
{
    unsetenv("BLKC_CPU_NOMASKS");
    h_seed(31);
    m = h_compile(src, NULL);
    setenv("BLKC_CPU_NOMASKS", "1", 1);
    m0 = h_compile(src, NULL);
    unsetenv("BLKC_CPU_NOMASKS");
    int ns[] = {1024, 1000, 100};      /* all full, the last partial, all partial */
    for (int i = 0; i < 3; i++) {
        sums(ns[i]);
        stores(ns[i], i == 0 ? -5 : 40); /* q: every lane passes, or some */
    }
    rows(16, 256);
    rows(13, 200);
    wrap(2147483600, 128); /* lanes 48.. wrap */
    wrap(-20, 128);        /* folds: every lane below 128 */
    return h_done();
}
