/* t_matvec.c — matrix-vector DOTs `dot(w: [BM, BK], x: [BK])` (the CPU's
 * matvec.c path) against a C reference in double: f32, f64, bf16 and f16
 * weights with f32 results; a K loop with an accumulator and a single DOT
 * without one; M and K tails (rows that are not a multiple of the 8-row
 * block, K not a multiple of the vector, views past the tensor's end that
 * read 0) and blocks read in place with the tensor's row stride; once more
 * without the next-row-block prefetch (BLKC_CPU_NOMVPF=1) and with it
 * (BLKC_CPU_MVPF=1: on Intel hosts it is off by default); the lanes of a
 * row block summed together (the default: groups of 8, 4, 2 rows) and
 * row by row (BLKC_CPU_NOROWTREE=1), with 512-bit vectors and without
 * (BLKC_CPU_NOAVX512=1: 8 f32 / 4 f64 lanes, rows in groups of 4 for f64).
 * Skinny DOTs `dot(x: [BK], w: [BK, BN])` and `dot(x: [BM <= 16, BK],
 * w: [BK, BN])` (matvec.c's skinny path; more than 4 rows on AVX-512
 * hosts, x's rows copied, chunks of vectors that divide the row, more
 * than 12 rows in two passes): the same
 * reference, and equal to the bit to the GEMM micro-kernel's result
 * (BLKC_CPU_NOMATVEC=1), whose summation order they keep; N tails
 * (columns past the vectors, blocks past the end), strided in-place rows
 * with and without the prefetch of w's rows ahead (BLKC_CPU_NOSKPF=1),
 * 16-bit weights. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static const char *src_fmt =
    "kernel mv<BM = 16, BK = 64>(W: %s[M, K], X: %s[K], Y: %s[M]) grid(cdiv(M, BM)) {\n"
    "    let m = program_id(0) * BM;\n"
    "    var acc = zeros(%s, BM);\n"
    "    for k in 0 .. K step BK {\n"
    "        acc = dot(W[m +: BM, k +: BK], X[k +: BK], acc);\n"
    "    }\n"
    "    Y[m +: BM] = acc;\n"
    "}\n"
    "kernel mv1<BM = 16, BK = 64>(W: %s[M, K], X: %s[K], Y: %s[M]) grid(cdiv(M, BM)) {\n"
    "    let m = program_id(0) * BM;\n"
    "    Y[m +: BM] = dot(W[m +: BM, 0 +: BK], X[0 +: BK]);\n"
    "}\n";

static void run(const char *wdt, const char *rdt, int64_t M, int64_t K, int BM, int BK,
                int single)
{
    char src[2048], d1[32], d2[32];
    snprintf(src, sizeof src, src_fmt, wdt, rdt, rdt, rdt, wdt, rdt, rdt);
    snprintf(d1, sizeof d1, "BM=%d", BM);
    snprintf(d2, sizeof d2, "BK=%d", BK);
    const char *defs[] = {d1, d2, NULL};
    blkc_module *m = h_compile(src, defs);
    blkc_kernel *k = h_kernel(m, single ? "mv1" : "mv");
    DLDataType wt = h_dtype(wdt), rt = h_dtype(rdt);
    void *w = h_array(wt, (size_t)(M * K)), *x = h_array(rt, (size_t)K);
    void *y = h_array(rt, (size_t)M);
    h_fill(w, wt, (size_t)(M * K), -1, 1);
    h_fill(x, rt, (size_t)K, -1, 1);
    H_LAUNCH(k, h_ten(h_t2(w, wt, M, K)), h_ten(h_t1(x, rt, K)), h_ten(h_t1(y, rt, M)));
    double maxerr = 0;
    int bad = 0;
    int64_t kk = single && BK < K ? BK : K;
    for (int64_t i = 0; i < M; i++) {
        double s = 0, a = 0;
        for (int64_t j = 0; j < kk; j++) {
            double p = h_get(w, wt, (size_t)(i * K + j)) * h_get(x, rt, (size_t)j);
            s += p;
            a += fabs(p);
        }
        double e = fabs(h_get(y, rt, (size_t)i) - s);
        double tol = (rt.bits == 64 ? 1e-14 : 1e-6) * (a + 1);
        if (e > tol)
            bad++;
        if (e > maxerr)
            maxerr = e;
    }
    h_ok(!bad, "%s %s dot(w[%d,%d], x[%d]) %s M=%lld K=%lld: %d rows off, max err %.2e",
         single ? "mv1" : "mv", wdt, BM, BK, BK, rdt, (long long)M, (long long)K, bad,
         maxerr);
}

static const char *sk_fmt =
    "kernel sk<BM = 1, BN = 64, BK = 32>(X: f32[M, K], W: %s[K, N], Y: f32[M, N])\n"
    "    grid(cdiv(N, BN)) {\n"
    "    let n = program_id(0) * BN;\n"
    "    var acc = zeros(f32, BM, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        acc = dot(X[0 +: BM, k +: BK], W[k +: BK, n +: BN], acc);\n"
    "    }\n"
    "    Y[0 +: BM, n +: BN] = acc;\n"
    "}\n"
    "kernel vm<BM = 1, BN = 64, BK = 32>(X: f32[K], W: %s[K, N], Y: f32[N])\n"
    "    grid(cdiv(N, BN)) {\n"
    "    let n = program_id(0) * BN;\n"
    "    var acc = zeros(f32, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        acc = dot(X[k +: BK], W[k +: BK, n +: BN], acc);\n"
    "    }\n"
    "    Y[n +: BN] = acc;\n"
    "}\n";

/* Y (M x N, or N for vm) of the skinny kernel, compiled with or without
 * BLKC_CPU_NOMATVEC */
static void sk_launch(const char *wdt, int vm, int BM, int BN, int BK, int nomv, void *x,
                      void *w, void *y, int64_t M, int64_t N, int64_t K)
{
    char src[2048], d1[32], d2[32], d3[32];
    snprintf(src, sizeof src, sk_fmt, wdt, wdt);
    snprintf(d1, sizeof d1, "BM=%d", BM);
    snprintf(d2, sizeof d2, "BN=%d", BN);
    snprintf(d3, sizeof d3, "BK=%d", BK);
    const char *defs[] = {d1, d2, d3, NULL};
    if (nomv)
        setenv("BLKC_CPU_NOMATVEC", "1", 1);
    blkc_module *m = h_compile(src, defs); /* compiled at the launch */
    blkc_kernel *k = h_kernel(m, vm ? "vm" : "sk");
    DLDataType f = h_dtype("f32"), wt = h_dtype(wdt);
    if (vm)
        H_LAUNCH(k, h_ten(h_t1(x, f, K)), h_ten(h_t2(w, wt, K, N)), h_ten(h_t1(y, f, N)));
    else
        H_LAUNCH(k, h_ten(h_t2(x, f, M, K)), h_ten(h_t2(w, wt, K, N)),
                 h_ten(h_t2(y, f, M, N)));
    if (nomv)
        unsetenv("BLKC_CPU_NOMATVEC");
}

static void run_skinny(const char *wdt, int vm, int BM, int BN, int BK, int64_t N, int64_t K)
{
    int64_t M = vm ? 1 : BM;
    DLDataType f = h_dtype("f32"), wt = h_dtype(wdt);
    void *x = h_array(f, (size_t)(M * K)), *w = h_array(wt, (size_t)(K * N));
    float *y = h_array(f, (size_t)(M * N)), *y0 = h_array(f, (size_t)(M * N));
    h_fill(x, f, (size_t)(M * K), -1, 1);
    h_fill(w, wt, (size_t)(K * N), -1, 1);
    sk_launch(wdt, vm, BM, BN, BK, 0, x, w, y, M, N, K);
    sk_launch(wdt, vm, BM, BN, BK, 1, x, w, y0, M, N, K);
    int bad = 0, diff = 0;
    double maxerr = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, a = 0;
            for (int64_t kk = 0; kk < K; kk++) {
                double p = h_get(x, f, (size_t)(i * K + kk)) * h_get(w, wt, (size_t)(kk * N + j));
                s += p;
                a += fabs(p);
            }
            double e = fabs(y[i * N + j] - s);
            bad += e > 1e-6 * (a + 1);
            maxerr = e > maxerr ? e : maxerr;
            diff += memcmp(&y[i * N + j], &y0[i * N + j], sizeof(float)) != 0;
        }
    h_ok(!bad && !diff, "%s %s BM=%d BN=%d BK=%d N=%lld K=%lld: %d off (max err %.2e), "
         "%d not equal to the GEMM micro-kernel's", vm ? "vm" : "sk", wdt, BM, BN, BK,
         (long long)N, (long long)K, bad, maxerr, diff);
}

int main(void)
{
    h_seed(13);
    const char *wd[] = {"f32", "bf16", "f16"};
    for (int i = 0; i < 3; i++) {
        run(wd[i], "f32", 37, 200, 16, 64, 0);  /* M, K tails past the end */
        run(wd[i], "f32", 64, 256, 32, 128, 0); /* in place, strided rows */
        run(wd[i], "f32", 5, 45, 8, 45, 1);     /* K % 32 = 13, M < 8 rows */
        run(wd[i], "f32", 30, 100, 12, 100, 1); /* BM 12: a block of 8, then 4 */
    }
    run("f64", "f64", 37, 200, 16, 64, 0);
    run("f64", "f64", 7, 33, 8, 33, 1);
    setenv("BLKC_CPU_NOMVPF", "1", 1);
    run("f32", "f32", 37, 200, 16, 64, 0);
    run("bf16", "f32", 30, 100, 12, 100, 1);
    unsetenv("BLKC_CPU_NOMVPF");
    setenv("BLKC_CPU_MVPF", "1", 1); /* the prefetch on Intel hosts too */
    run("f32", "f32", 37, 200, 16, 64, 0);
    run("bf16", "f32", 30, 100, 12, 100, 1);
    unsetenv("BLKC_CPU_MVPF");
    run("f32", "f32", 46, 96, 16, 96, 1);   /* BM 16, last block 14: 8, 4, 2 */
    setenv("BLKC_CPU_NOROWTREE", "1", 1);
    run("f32", "f32", 46, 96, 16, 96, 1);
    run("bf16", "f32", 37, 200, 16, 64, 0);
    unsetenv("BLKC_CPU_NOROWTREE");
    setenv("BLKC_CPU_NOAVX512", "1", 1);
    run("f32", "f32", 46, 96, 16, 96, 1);
    run("f64", "f64", 37, 200, 16, 64, 0);
    run("bf16", "f32", 30, 100, 12, 100, 1);
    unsetenv("BLKC_CPU_NOAVX512");
    for (int i = 0; i < 3; i++) {
        run_skinny(wd[i], 1, 1, 64, 32, 200, 100);  /* N tail block, K tail */
        run_skinny(wd[i], 0, 3, 256, 64, 256, 128); /* 3 rows, 16 vectors: 5 per chunk */
    }
    run_skinny("f32", 0, 1, 40, 16, 120, 48);   /* N = 2.5 vectors: scalar columns */
    run_skinny("f32", 0, 4, 128, 16, 128, 33);  /* 4 rows; K tail block reads 0 */
    run_skinny("f32", 0, 2, 512, 8, 1024, 24);  /* two chunks of 8 per row pair */
    /* 5 .. 16 rows: 4, 3 and 1 vectors per chunk (the ones that divide
     * the row), K tails, the prefetch 32 rows ahead wrapping into the next
     * chunk (K 40 and 128 per DOT); 16 and 13 rows in two passes */
    run_skinny("f32", 0, 5, 64, 40, 200, 100);
    run_skinny("bf16", 0, 8, 96, 128, 192, 300);
    run_skinny("f16", 0, 12, 48, 32, 100, 70);
    run_skinny("f32", 0, 16, 128, 64, 256, 130);
    run_skinny("bf16", 0, 13, 80, 48, 160, 100);
    setenv("BLKC_CPU_NOSKPF", "1", 1);
    run_skinny("f32", 0, 8, 64, 40, 200, 100);
    unsetenv("BLKC_CPU_NOSKPF");
    return h_done();
}
