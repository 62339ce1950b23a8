/* t_gemm_pack.c — the packed-panel DOT (backends/cpu/tile.c dot_packed) on
 * odd shapes: tails in M, N and K against every block, blocks that the
 * register block does not divide (padded rows / a partial last panel),
 * strided tensors (row strides that are not the width, a column-major B),
 * a transposed A view (trans of a loaded tile), and f16 / bf16 / f64
 * inputs converted during packing; each against a C reference in double.
 * With BLKC_CPU_PACKA=1 (ctest exec_t_gemm_pack_packa) an f32 A read in
 * place is copied into alternating MR-row slivers in chunks of a cache
 * line: odd sliver counts (AVX-512 MR=8: BM=56; AVX2 MR=6: BM=18) check
 * the alternation, K = 70 and 48 a partial and a whole last chunk. */
#include "harness.h"

/* A: T[M, K] or (TRANS) At: T[K, M]; B: T[K, N]; C: f32 or f64 [M, N] */
static blkc_kernel *build(const char *ti, const char *tc, bool trans,
                          const char *const *defs)
{
    char *src = h_alloc(2048);
    snprintf(src, 2048,
        "kernel mm<BM = 32, BN = 32, BK = 16>(A: %s[%s], B: %s[K, N], C: %s[M, N])\n"
        "    grid(cdiv(M, BM), cdiv(N, BN)) {\n"
        "    let m = program_id(0) * BM;\n"
        "    let n = program_id(1) * BN;\n"
        "    var acc = zeros(%s, BM, BN);\n"
        "    for k in 0 .. K step BK {\n"
        "        acc = dot(%s, B[k +: BK, n +: BN], acc);\n"
        "    }\n"
        "    C[m +: BM, n +: BN] = acc;\n"
        "}\n",
        ti, trans ? "K, M" : "M, K", ti, tc, tc,
        trans ? "trans(A[k +: BK, m +: BM])" : "A[m +: BM, k +: BK]");
    return h_build(src, defs);
}

/* element strides: sa/sb = {row, col}; {0, 0} = compact */
static void check(blkc_kernel *k, DLDataType ti, DLDataType tc, bool trans,
                  int M, int N, int K, const int64_t *sa, const int64_t *sb,
                  const char *what)
{
    int64_t ar = trans ? K : M, ac = trans ? M : K;
    int64_t sa0 = sa[0] ? sa[0] : ac, sa1 = sa[0] ? sa[1] : 1;
    int64_t sb0 = sb[0] ? sb[0] : N, sb1 = sb[0] ? sb[1] : 1;
    size_t na = (size_t)((ar - 1) * sa0 + (ac - 1) * sa1 + 1);
    size_t nb = (size_t)((K - 1) * sb0 + (N - 1) * sb1 + 1);
    void *a = h_array(ti, na), *b = h_array(ti, nb);
    h_fill(a, ti, na, -1, 1);
    h_fill(b, ti, nb, -1, 1);
    size_t nc = (size_t)M * N + 16;
    void *c = h_array(tc, nc);
    double *r = h_alloc(8 * nc);
    for (size_t i = 0; i < nc; i++)
        r[i] = 123.0;
    h_fill(c, tc, nc, 123, 123);
    DLTensor *ta = h_tensor(a, ti, 2, (int64_t[]){ar, ac},
                            sa[0] ? (int64_t[]){sa0, sa1} : NULL);
    DLTensor *tb = h_tensor(b, ti, 2, (int64_t[]){K, N},
                            sb[0] ? (int64_t[]){sb0, sb1} : NULL);
    H_LAUNCH(k, h_ten(ta), h_ten(tb), h_ten(h_t2(c, tc, M, N)));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int kk = 0; kk < K; kk++) {
                int64_t ia = trans ? kk * sa0 + i * sa1 : i * sa0 + kk * sa1;
                s += h_get(a, ti, (size_t)ia) *
                     h_get(b, ti, (size_t)(kk * sb0 + j * sb1));
            }
            r[i * N + j] = s;
        }
    h_check(what, c, tc, r, nc, 2e-6 * K, 1e-5);
}

static const int64_t compact[2] = {0, 0};

int main(void)
{
    h_seed(13);
    blkc_kernel *k = build("f32", "f32", false, NULL);
    check(k, H_F32, H_F32, false, 100, 70, 130, compact, compact,
          "f32 100x70x130 (tails in M, N, K), 32x32x16");
    check(k, H_F32, H_F32, false, 1, 1, 1, compact, compact, "f32 1x1x1");
    check(k, H_F32, H_F32, false, 64, 64, 64, (int64_t[]){77, 1},
          (int64_t[]){69, 1}, "f32 64x64x64, row strides 77 / 69");
    check(k, H_F32, H_F32, false, 45, 50, 40, compact, (int64_t[]){1, 40},
          "f32 45x50x40, column-major B");
    k = build("f32", "f32", false, H_DEFS("BM=20", "BN=40", "BK=7"));
    check(k, H_F32, H_F32, false, 61, 83, 29, compact, compact,
          "f32 61x83x29, 20x40x7 (padded rows, partial panel)");
    k = build("f32", "f32", false, H_DEFS("BM=6", "BN=16", "BK=5"));
    check(k, H_F32, H_F32, false, 30, 48, 25, (int64_t[]){26, 1}, compact,
          "f32 30x48x25, 6x16x5, A row stride 26");
    k = build("f32", "f32", false, H_DEFS("BM=64", "BN=128", "BK=32"));
    check(k, H_F32, H_F32, false, 130, 260, 100, compact, compact,
          "f32 130x260x100, 64x128x32");
    k = build("f32", "f32", false, H_DEFS("BM=56", "BN=64", "BK=24"));
    check(k, H_F32, H_F32, false, 112, 128, 70, (int64_t[]){75, 1}, compact,
          "f32 112x128x70, 56x64x24, A row stride 75 (7 slivers of 8)");
    k = build("f32", "f32", false, H_DEFS("BM=18", "BN=32", "BK=16"));
    check(k, H_F32, H_F32, false, 54, 64, 48, compact, compact,
          "f32 54x64x48, 18x32x16 (3 slivers of 6)");
    k = build("f32", "f32", true, H_DEFS("BM=16", "BN=32", "BK=8"));
    check(k, H_F32, H_F32, true, 40, 36, 20, compact, compact,
          "f32 trans(A) 40x36x20, 16x32x8");
    k = build("f16", "f32", false, H_DEFS("BM=64", "BN=64", "BK=32"));
    check(k, H_F16, H_F32, false, 96, 100, 70, compact, compact,
          "f16 -> f32 96x100x70, 64x64x32");
    k = build("bf16", "f32", false, H_DEFS("BM=24", "BN=48", "BK=16"));
    check(k, H_BF16, H_F32, false, 50, 50, 50, compact, (int64_t[]){53, 1},
          "bf16 -> f32 50x50x50, 24x48x16, B row stride 53");
    k = build("f64", "f64", false, H_DEFS("BM=16", "BN=24", "BK=9"));
    check(k, H_F64, H_F64, false, 33, 47, 19, compact, compact,
          "f64 33x47x19, 16x24x9");
    return h_done();
}
