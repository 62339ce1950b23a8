/* t_matmul.c — examples/matmul.blk (f16 in, f32 accumulate and out) on
 * sizes with tails in M, N and K, default and overridden block sizes. */
#include "harness.h"

static void run(const char *const *defs, int M, int N, int K)
{
    blkc_kernel *k = h_build(H_EXAMPLE("matmul.blk"), defs);
    uint16_t *a = h_array(H_F16, (size_t)M * K), *b = h_array(H_F16, (size_t)K * N);
    float *c = h_array(H_F32, (size_t)M * N);
    double *r = h_alloc(8 * (size_t)M * N);
    h_fill(a, H_F16, (size_t)M * K, -1, 1);
    h_fill(b, H_F16, (size_t)K * N, -1, 1);
    H_LAUNCH(k, h_ten(h_t2(a, H_F16, M, K)), h_ten(h_t2(b, H_F16, K, N)),
             h_ten(h_t2(c, H_F32, M, N)));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int kk = 0; kk < K; kk++)
                s += (double)h_f16_to_f32(a[i * K + kk]) * h_f16_to_f32(b[kk * N + j]);
            r[i * N + j] = s;
        }
    char what[96];
    snprintf(what, sizeof what, "matmul f16->f32 %dx%dx%d", M, N, K);
    h_check(what, c, H_F32, r, (size_t)M * N, 2e-6 * K, 1e-5);
}

int main(void)
{
    h_seed(28);
    run(NULL, 256, 256, 256);
    run(NULL, 130, 70, 100);
    run(H_DEFS("BM=32", "BN=16", "BK=64"), 65, 47, 190);
    return h_done();
}
