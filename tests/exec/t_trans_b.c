/* t_trans_b.c — DOTs on a transposed B, `dot(X[m +: BM, k +: BK],
 * trans(W[n +: BN, k +: BK]), acc)` (a linear layer's x W^T with W [N, K]
 * as PyTorch stores it; attention's q k^T), against a C reference in
 * double. On the CPU the PERMUTE is not copied (fuse.c trans_b): up to 8
 * rows of X take dot products along W's rows (matvec.c skinny_t: 1, 2, 3,
 * 5 and 8 rows, chunks of 4 rows and a remainder, row blocks of W and a
 * remainder, K tails), more rows the packed GEMM with its panels packed
 * straight from W's rows (tile.c pack_b_t: 16 x 16 blocks transposed in
 * registers, bf16 / f16 widened on the way, tails element by element),
 * whose results must equal the old path's (BLKC_CPU_NOTRANSB=1: the
 * PERMUTE copies W transposed) to the bit; 9 to 16 rows of X on AVX-512
 * hosts the DOT turned around (matvec.c bcast_t: X's columns packed,
 * W's rows broadcast from 64-column chunks; row blocks of 16 and a
 * remainder, K tails of a chunk and of 16, rows past M), to the same bits. W f32, bf16, f16 and f64;
 * blocks read in place with the tensor's row stride and blocks past the
 * end (copied, zero-padded); a W computed in the kernel (trans(W * 2));
 * B = trans of one row, [K, 1] (the matvec path); the same with 256-bit
 * vectors (BLKC_CPU_NOAVX512=1: chunks of 2 rows). On the emulated
 * devices (tests/emu) four of the cases. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static const char *src_fmt =
    "kernel lin<BM = 4, BN = 32, BK = 64>(X: %s[M, K], W: %s[N, K], Y: %s[M, N])\n"
    "    grid(cdiv(M, BM), cdiv(N, BN)) {\n"
    "    let m = program_id(0) * BM;\n"
    "    let n = program_id(1) * BN;\n"
    "    var acc = zeros(%s, BM, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        acc = dot(X[m +: BM, k +: BK], trans(W[n +: BN, k +: BK]), acc);\n"
    "    }\n"
    "    Y[m +: BM, n +: BN] = acc;\n"
    "}\n"
    "kernel lin2<BM = 4, BN = 32, BK = 64>(X: %s[M, K], W: %s[N, K], Y: %s[M, N])\n"
    "    grid(cdiv(M, BM), cdiv(N, BN)) {\n"
    "    let m = program_id(0) * BM;\n"
    "    let n = program_id(1) * BN;\n"
    "    Y[m +: BM, n +: BN] = dot(X[m +: BM, 0 +: BK], trans(W[n +: BN, 0 +: BK] * 2.0));\n"
    "}\n";

/* Y of kernel NAME; notrans: compiled with BLKC_CPU_NOTRANSB=1 */
static void launch(const char *name, const char *xdt, const char *wdt, const char *ydt, int BM,
                   int BN, int BK, int notrans, void *x, void *w, void *y, int64_t M,
                   int64_t N, int64_t K)
{
    char src[4096], d1[32], d2[32], d3[32];
    snprintf(src, sizeof src, src_fmt, xdt, wdt, ydt, ydt, xdt, wdt, ydt);
    snprintf(d1, sizeof d1, "BM=%d", BM);
    snprintf(d2, sizeof d2, "BN=%d", BN);
    snprintf(d3, sizeof d3, "BK=%d", BK);
    const char *defs[] = {d1, d2, d3, NULL};
    if (notrans)
        setenv("BLKC_CPU_NOTRANSB", "1", 1);
    blkc_module *m = h_compile(src, defs); /* compiled at the launch */
    blkc_kernel *k = h_kernel(m, name);
    DLDataType xt = h_dtype(xdt), wt = h_dtype(wdt), yt = h_dtype(ydt);
    H_LAUNCH(k, h_ten(h_t2(x, xt, M, K)), h_ten(h_t2(w, wt, N, K)), h_ten(h_t2(y, yt, M, N)));
    if (notrans)
        unsetenv("BLKC_CPU_NOTRANSB");
}

/* one kernel at one shape; same: the result must equal NOTRANSB's bits */
static void run(const char *name, const char *xdt, const char *wdt, const char *ydt, int BM,
                int BN, int BK, int64_t M, int64_t N, int64_t K, int same)
{
    DLDataType xt = h_dtype(xdt), wt = h_dtype(wdt), yt = h_dtype(ydt);
    void *x = h_array(xt, (size_t)(M * K)), *w = h_array(wt, (size_t)(N * K));
    void *y = h_array(yt, (size_t)(M * N)), *y0 = h_array(yt, (size_t)(M * N));
    h_fill(x, xt, (size_t)(M * K), -1, 1);
    h_fill(w, wt, (size_t)(N * K), -1, 1);
    launch(name, xdt, wdt, ydt, BM, BN, BK, 0, x, w, y, M, N, K);
    if (same)
        launch(name, xdt, wdt, ydt, BM, BN, BK, 1, x, w, y0, M, N, K);
    bool two = !strcmp(name, "lin2");
    int64_t kk = two && BK < K ? BK : K; /* lin2: one K block */
    int bad = 0, diff = 0;
    double maxerr = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, a = 0;
            for (int64_t c = 0; c < kk; c++) {
                double p = h_get(x, xt, (size_t)(i * K + c)) *
                           h_get(w, wt, (size_t)(j * K + c)) * (two ? 2.0 : 1.0);
                s += p;
                a += fabs(p);
            }
            double got = h_get(y, yt, (size_t)(i * N + j)), e = fabs(got - s);
            bad += e > (yt.bits == 64 ? 1e-13 : 2e-6) * (a + 1);
            maxerr = e > maxerr ? e : maxerr;
            if (same)
                diff += memcmp((char *)y + (i * N + j) * (yt.bits / 8),
                               (char *)y0 + (i * N + j) * (yt.bits / 8), (size_t)yt.bits / 8) != 0;
        }
    h_ok(!bad && !diff, "%s x %s w %s BM=%d BN=%d BK=%d M=%lld N=%lld K=%lld: %d off (max err "
         "%.2e), %d not equal to BLKC_CPU_NOTRANSB's", name, xdt, wdt, BM, BN, BK,
         (long long)M, (long long)N, (long long)K, bad, maxerr, diff);
}

int main(void)
{
    h_seed(17);
    /* on an emulated or real GPU (tests/emu): one case per shape class;
     * the CPU switches below would only compile the same GPU code again */
    const char *dev = getenv("BLKC_TEST_DEVICE");
    if (dev && strcmp(dev, "cpu")) {
        run("lin", "f32", "bf16", "f32", 5, 48, 40, 13, 70, 90, 0);
        run("lin", "f32", "f32", "f32", 16, 32, 64, 40, 100, 150, 0);
        run("lin2", "f32", "f32", "f32", 4, 16, 40, 4, 48, 40, 0);
        run("lin", "f64", "f64", "f64", 4, 16, 32, 9, 40, 70, 0);
        return h_done();
    }
    const char *wd[] = {"f32", "bf16", "f16"};
    for (int i = 0; i < 3; i++) {
        /* skinny: 1 row (the matvec's rows), 3 (one chunk of 3), 5 (4 + 1),
         * with N and K tails and blocks past the end */
        run("lin", "f32", wd[i], "f32", 1, 32, 64, 1, 100, 200, 0);
        run("lin", "f32", wd[i], "f32", 5, 48, 40, 13, 70, 90, 0);
    }
    run("lin", "f32", "f32", "f32", 3, 32, 128, 3, 128, 512, 0);  /* in place, strided */
    run("lin", "f32", "f32", "f32", 8, 36, 48, 8, 72, 96, 0);     /* 2 chunks, RB tail */
    run("lin", "f32", "bf16", "f32", 8, 36, 48, 8, 71, 96, 0);    /* widened: 8 rows in one */
    run("lin", "f32", "f16", "f32", 7, 36, 48, 7, 71, 100, 0);    /* pass, RB and K tails */
    setenv("BLKC_CPU_NOSKTONE", "1", 1);                          /* ... and in chunks */
    run("lin", "f32", "bf16", "f32", 8, 36, 48, 8, 71, 96, 0);
    unsetenv("BLKC_CPU_NOSKTONE");
    run("lin", "bf16", "bf16", "f32", 2, 16, 32, 2, 16, 35, 0);   /* X converted */
    run("lin", "f64", "f64", "f64", 4, 16, 32, 9, 40, 70, 0);
    run("lin2", "f32", "f32", "f32", 4, 16, 40, 4, 48, 40, 0);    /* trans(W * 2) */
    run("lin", "f32", "f32", "f32", 8, 1, 64, 20, 3, 130, 0);     /* B = trans(row): [K, 1] */
    /* the packed GEMM: panels packed from W's rows, bits as before */
    run("lin", "f32", "f32", "f32", 16, 32, 64, 40, 100, 150, 1); /* tails everywhere */
    run("lin", "f32", "f32", "f32", 32, 64, 32, 64, 128, 96, 1);  /* in place, 16x16 blocks */
    run("lin", "f32", "bf16", "f32", 16, 48, 32, 16, 48, 64, 1);  /* widened in 16x16 blocks */
    run("lin", "f32", "f16", "f32", 16, 32, 40, 40, 100, 150, 1); /* ... and at the edges */
    run("lin2", "f32", "f32", "f32", 16, 32, 48, 16, 40, 48, 1);
    run("lin", "f64", "f64", "f64", 16, 16, 24, 20, 20, 50, 1);
    /* 9 .. 16 rows turned around: blocks of 16 rows of W and a remainder
     * of 8 / 4, K a chunk of 64 and tails of 36 / 4, M past the tensor */
    run("lin", "f32", "f32", "f32", 16, 40, 100, 16, 80, 200, 1);
    run("lin", "f32", "f32", "f32", 12, 36, 132, 30, 72, 264, 1);
    run("lin", "f32", "bf16", "f32", 9, 20, 68, 9, 41, 136, 1);
    run("lin", "f32", "f16", "f32", 16, 48, 192, 16, 96, 384, 1); /* in place, 3 chunks */
    run("lin", "bf16", "f32", "f32", 13, 16, 64, 13, 32, 130, 1); /* X converted */
    setenv("BLKC_CPU_NOBCAST", "1", 1); /* the packed path for 16 rows */
    run("lin", "f32", "f32", "f32", 16, 40, 100, 16, 80, 200, 1);
    unsetenv("BLKC_CPU_NOBCAST");
    setenv("BLKC_CPU_NOAVX512", "1", 1); /* 8 lanes: chunks of 2 rows */
    run("lin", "f32", "f32", "f32", 5, 48, 40, 13, 70, 90, 0);
    run("lin", "f32", "bf16", "f32", 16, 32, 64, 40, 100, 150, 1);
    unsetenv("BLKC_CPU_NOAVX512");
    return h_done();
}
