/* t_matvec.c — matrix-vector DOTs `dot(w: [BM, BK], x: [BK])` (the CPU's
 * matvec.c path) against a C reference in double: f32, f64, bf16 and f16
 * weights with f32 results; a K loop with an accumulator and a single DOT
 * without one; M and K tails (rows that are not a multiple of the 4-row
 * block, K not a multiple of the vector, views past the tensor's end that
 * read 0) and blocks read in place with the tensor's row stride. */
#include "harness.h"

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

int main(void)
{
    h_seed(13);
    const char *wd[] = {"f32", "bf16", "f16"};
    for (int i = 0; i < 3; i++) {
        run(wd[i], "f32", 37, 200, 16, 64, 0);  /* M, K tails past the end */
        run(wd[i], "f32", 64, 256, 32, 128, 0); /* in place, strided rows */
        run(wd[i], "f32", 5, 45, 8, 45, 1);     /* K % 32 = 13, M < 4 rows */
        run(wd[i], "f32", 30, 100, 12, 100, 1); /* M % 4 = 2 */
    }
    run("f64", "f64", 37, 200, 16, 64, 0);
    run("f64", "f64", 7, 33, 8, 33, 1);
    return h_done();
}
