/* harness.cpp — runs one generated kernel body (KFILE) on the CPU through
 * shim.h and checks it against a reference computed here (emu.sh builds
 * this once per kernel and code path). K_VECTOR_ADD: N = 1003 (a vector cut
 * by the bound). K_MATMUL: f16 200x112x144 (row tails, a K tail the
 * cp.async zero-fill must cover); exact values, so results must be exact.
 * K_SOFTMAX: 5 rows of 1008 < BLOCK = 1024 (pad -inf in the cut tail,
 * reductions through warp shuffles). */
#include "shim.h"

#include KFILE

static int fails;

static void expect(const char *what, double got, double want, long i)
{
    if (got != want && fails++ < 5)
        printf("FAIL %s: element %ld is %g, expected %g\n", what, i, got, want);
}

template <class T> static T *alloc(size_t n)
{
    /* 16-byte aligned (IR_ASSUME_ALIGN16), garbage-filled */
    T *p = (T *)aligned_alloc(64, (n * sizeof(T) + 63) & ~(size_t)63);
    memset(p, 0x5a, n * sizeof(T));
    return p;
}

int main(int argc, char **argv)
{
    const char *tag = argc > 1 ? argv[1] : "";
#ifdef K_VECTOR_ADD
    const long N = 1003;
    float *x = alloc<float>(N), *y = alloc<float>(N), *z = alloc<float>(N + 8);
    for (long i = 0; i < N; i++) {
        x[i] = (float)(i % 37) * 0.5f;
        y[i] = (float)(i % 11) - 3.0f;
    }
    z[N] = 12345.0f; /* past the end: must stay */
    BlkTensor<float, 1> X = {x, {N}, {1}}, Y = {y, {N}, {1}}, Z = {z, {N}, {1}};
    emu_launch([&] { vector_add(X, Y, Z); }, (unsigned)((N + 255) / 256), 1, 128,
               blk_smem_vector_add);
    for (long i = 0; i < N; i++)
        expect("vector_add", z[i], x[i] + y[i], i);
    expect("vector_add (past the end)", z[N], 12345.0f, N);
    printf("%s vector_add N=%ld %s\n", fails ? "FAIL" : "ok", N, tag);
#endif
#ifdef K_MATMUL
    const long M = 200, K = 112, N = 144;
    blk_f16 *a = alloc<blk_f16>(M * K), *b = alloc<blk_f16>(K * N),
            *c = alloc<blk_f16>(M * N);
    for (long i = 0; i < M * K; i++)
        a[i] = blk_f32_to_f16((float)(((i * 3) % 7) - 3) * 0.25f);
    for (long i = 0; i < K * N; i++)
        b[i] = blk_f32_to_f16((float)(((i * 5) % 7) - 3) * 0.25f);
    BlkTensor<blk_f16, 2> A = {a, {M, K}, {K, 1}}, B = {b, {K, N}, {N, 1}},
                          C = {c, {M, N}, {N, 1}};
    emu_launch([&] { matmul_f16(A, B, C); }, (unsigned)((M + 63) / 64),
               (unsigned)((N + 63) / 64), 128, blk_smem_matmul_f16);
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            double s = 0; /* exact: multiples of 1/16, |s| < 64 */
            for (long k = 0; k < K; k++)
                s += (double)blk_f16_to_f32(a[i * K + k]) * blk_f16_to_f32(b[k * N + j]);
            expect("matmul_f16", blk_f16_to_f32(c[i * N + j]), s, i * N + j);
        }
    printf("%s matmul_f16 %ldx%ldx%ld stages(3) %s\n", fails ? "FAIL" : "ok", M, K, N, tag);
#endif
#ifdef K_SOFTMAX
    const long R = 5, C = 1008; /* BLOCK = 1024: each row's tail is cut */
    float *x = alloc<float>(R * C), *y = alloc<float>(R * C);
    for (long i = 0; i < R * C; i++)
        x[i] = (float)((i * 17) % 97) / 16.0f - 3.0f;
    BlkTensor<float, 2> X = {x, {R, C}, {C, 1}}, Y = {y, {R, C}, {C, 1}};
    emu_launch([&] { softmax(X, Y); }, (unsigned)R, 1, 128, blk_smem_softmax);
    for (long r = 0; r < R; r++) {
        double mx = -INFINITY, s = 0;
        for (long c = 0; c < C; c++)
            mx = std::fmax(mx, x[r * C + c]);
        for (long c = 0; c < C; c++)
            s += std::exp(x[r * C + c] - mx);
        for (long c = 0; c < C; c++) {
            double want = std::exp(x[r * C + c] - mx) / s, got = y[r * C + c];
            if (std::fabs(got - want) > 1e-5 * want && fails++ < 5)
                printf("FAIL softmax: [%ld, %ld] is %g, expected %g\n", r, c, got, want);
        }
    }
    printf("%s softmax %ldx%ld %s\n", fails ? "FAIL" : "ok", R, C, tag);
#endif
#ifdef K_EXMATMUL /* examples/matmul.blk: f16 A, B -> f32 C, stages(3); 10 x 3 programs
                   * (grouped program ids: two groups, the second of 2 rows) */
    const long M = 600, K = 112, N = 144;
    blk_f16 *a = alloc<blk_f16>(M * K), *b = alloc<blk_f16>(K * N);
    float *c = alloc<float>(M * N);
    for (long i = 0; i < M * K; i++)
        a[i] = blk_f32_to_f16((float)(((i * 3) % 7) - 3) * 0.25f);
    for (long i = 0; i < K * N; i++)
        b[i] = blk_f32_to_f16((float)(((i * 5) % 7) - 3) * 0.25f);
    BlkTensor<blk_f16, 2> A = {a, {M, K}, {K, 1}}, B = {b, {K, N}, {N, 1}};
    BlkTensor<float, 2> C = {c, {M, N}, {N, 1}};
    emu_launch([&] { matmul(A, B, C); }, (unsigned)((M + 63) / 64),
               (unsigned)((N + 63) / 64), 128, blk_smem_matmul);
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            double s = 0; /* exact */
            for (long k = 0; k < K; k++)
                s += (double)blk_f16_to_f32(a[i * K + k]) * blk_f16_to_f32(b[k * N + j]);
            expect("examples/matmul.blk", c[i * N + j], s, i * N + j);
        }
    printf("%s examples/matmul.blk %ldx%ldx%ld %s\n", fails ? "FAIL" : "ok", M, K, N, tag);
#endif
#ifdef K_FLASH /* examples/flash_attention.blk, BM = BN = D = 64, not causal */
    const long Zn = 2, S = 200, D = 64; /* S % 64 != 0: masked key tails */
    const float scale = 0.125f;
    blk_f16 *q = alloc<blk_f16>(Zn * S * D), *k = alloc<blk_f16>(Zn * S * D),
            *v = alloc<blk_f16>(Zn * S * D), *o = alloc<blk_f16>(Zn * S * D);
    for (long i = 0; i < Zn * S * D; i++) {
        q[i] = blk_f32_to_f16((float)((i * 37) % 61) / 30.0f - 1.0f);
        k[i] = blk_f32_to_f16((float)((i * 53) % 67) / 33.0f - 1.0f);
        v[i] = blk_f32_to_f16((float)((i * 11) % 71) / 35.0f - 1.0f);
    }
    BlkTensor<blk_f16, 3> Q = {q, {Zn, S, D}, {S * D, D, 1}}, Kt = {k, {Zn, S, D}, {S * D, D, 1}},
                          V = {v, {Zn, S, D}, {S * D, D, 1}}, O = {o, {Zn, S, D}, {S * D, D, 1}};
    emu_launch([&] { flash_attention(Q, Kt, V, O, scale); }, (unsigned)((S + 63) / 64),
               (unsigned)Zn, 128, blk_smem_flash_attention);
    std::vector<double> p(S);
    for (long z = 0; z < Zn; z++)
        for (long i = 0; i < S; i++) {
            const blk_f16 *qi = q + (z * S + i) * D;
            double mx = -INFINITY, l = 0;
            for (long j = 0; j < S; j++) {
                const blk_f16 *kj = k + (z * S + j) * D;
                double d = 0;
                for (long e = 0; e < D; e++)
                    d += (double)blk_f16_to_f32(qi[e]) * blk_f16_to_f32(kj[e]);
                p[j] = d * scale;
                mx = std::fmax(mx, p[j]);
            }
            for (long j = 0; j < S; j++)
                l += (p[j] = std::exp(p[j] - mx));
            for (long e = 0; e < D; e++) {
                double want = 0;
                for (long j = 0; j < S; j++)
                    want += p[j] / l * blk_f16_to_f32(v[(z * S + j) * D + e]);
                double got = blk_f16_to_f32(o[(z * S + i) * D + e]);
                /* p is rounded to f16 before the second dot */
                if (!(std::fabs(got - want) <= 5e-3 + 5e-3 * std::fabs(want)) && fails++ < 5)
                    printf("FAIL flash_attention: [%ld, %ld, %ld] is %g, expected %g\n", z,
                           i, e, got, want);
            }
        }
    printf("%s examples/flash_attention.blk Z=%ld S=%ld %s\n", fails ? "FAIL" : "ok", Zn, S,
           tag);
#endif
#ifdef K_TCHAIN
    const long n = 64;
    float *x = alloc<float>(n * n), *y = alloc<float>(n * n), *z = alloc<float>(n * n);
    for (long i = 0; i < n * n; i++)
        x[i] = (float)((i * 29) % 101) / 50.0f - 1.0f;
    BlkTensor<float, 2> X = {x, {n, n}, {n, 1}}, Y = {y, {n, n}, {n, 1}},
                        Z = {z, {n, n}, {n, 1}};
    for (int rep = 0; rep < 20; rep++) { /* races show up now and then */
        emu_launch([&] { tchain(X, Y, Z); }, 1, 1, 128, blk_smem_tchain);
        for (long i = 0; i < n; i++)
            for (long j = 0; j < n; j++) {
                auto a = [&](long p, long q) {
                    float v = x[p * n + q];
                    return (float)(expf(v * 0.5f) + v);
                };
                float t = a(j, i), u = t * 2.0f + a(i, j);
                float uT = a(i, j) * 2.0f + a(j, i); /* u[j][i] */
                float w = uT - t;
                if ((std::fabs(y[i * n + j] - w) > 1e-5f * (1 + std::fabs(w)) ||
                     std::fabs(z[i * n + j] - u * u) > 1e-5f * (1 + u * u)) &&
                    fails++ < 5)
                    printf("FAIL tchain (run %d): [%ld, %ld] is %g / %g, expected %g / %g\n",
                           rep, i, j, y[i * n + j], z[i * n + j], w, u * u);
            }
    }
    printf("%s tchain 64x64 (20 runs) %s\n", fails ? "FAIL" : "ok", tag);
#endif
    return fails ? 1 : 0;
}
