/* t_dot_kloop.c — a blocked matmul with a K loop where M, N and K are not
 * multiples of the blocks (out-of-bounds reads are 0, stores masked), for
 * f16 -> f32 and f32 -> f32 with overridden block sizes. */
#include "harness.h"

static const char *src = H_MM_SRC("BM = 32, BN = 32, BK = 16", "f32", "");

static void check(blkc_kernel *k, DLDataType ti, int M, int N, int K, const char *what)
{
    void *a = h_array(ti, (size_t)M * K), *b = h_array(ti, (size_t)K * N);
    float *c = h_array(H_F32, (size_t)M * N + 16);
    for (int i = 0; i < M * N + 16; i++)
        c[i] = 123.0f;
    h_fill(a, ti, (size_t)M * K, -1, 1);
    h_fill(b, ti, (size_t)K * N, -1, 1);
    H_LAUNCH(k, h_ten(h_t2(a, ti, M, K)), h_ten(h_t2(b, ti, K, N)), h_ten(h_t2(c, H_F32, M, N)));
    double *r = h_alloc(8 * ((size_t)M * N + 16));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int kk = 0; kk < K; kk++)
                s += h_get(a, ti, (size_t)i * K + kk) * h_get(b, ti, (size_t)kk * N + j);
            r[i * N + j] = s;
        }
    for (int i = M * N; i < M * N + 16; i++)
        r[i] = 123.0;
    h_check(what, c, H_F32, r, (size_t)M * N + 16, 2e-6 * K, 1e-5);
}

int main(void)
{
    h_seed(20);
    check(h_build(src, NULL), H_F32, 100, 70, 130, "f32 matmul 100x70x130, 32x32x16 blocks");
    check(h_build(src, H_DEFS("BM=16", "BN=64", "BK=32")), H_F32, 33, 65, 97,
          "f32 matmul 33x65x97, 16x64x32 blocks");
    char *f16src = h_alloc(strlen(src) + 16);
    strcpy(f16src, src);
    for (char *p = f16src; (p = strstr(p, "f32[")) && p < strstr(f16src, "C: f32"); p++)
        memcpy(p, "f16[", 4);        /* A and B become f16 */
    check(h_build(f16src, NULL), H_F16, 77, 45, 200, "f16 matmul 77x45x200 -> f32");
    return h_done();
}
