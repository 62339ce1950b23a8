/* t_matmul_f32.c — benchmarks/gemm_f32.blk (the kernel the GEMM benchmark
 * times) is correct on a mid-size problem with tails, at its default
 * blocks and at the other block sizes the benchmark tries. */
#include "harness.h"

static void run(const char *const *defs, int M, int N, int K)
{
    blkc_kernel *k = h_build(h_read_file(BLKC_SOURCE_DIR "/benchmarks/gemm_f32.blk"), defs);
    float *a = h_array(H_F32, (size_t)M * K), *b = h_array(H_F32, (size_t)K * N),
          *c = h_array(H_F32, (size_t)M * N);
    double *r = h_alloc(8 * (size_t)M * N);
    h_fill(a, H_F32, (size_t)M * K, -1, 1);
    h_fill(b, H_F32, (size_t)K * N, -1, 1);
    H_LAUNCH(k, h_ten(h_t2(a, H_F32, M, K)), h_ten(h_t2(b, H_F32, K, N)),
             h_ten(h_t2(c, H_F32, M, N)));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int kk = 0; kk < K; kk++)
                s += (double)a[i * K + kk] * b[kk * N + j];
            r[i * N + j] = s;
        }
    char what[96];
    snprintf(what, sizeof what, "gemm_f32 %dx%dx%d", M, N, K);
    h_check(what, c, H_F32, r, (size_t)M * N, 2e-6 * K, 1e-5);
}

int main(void)
{
    h_seed(39);
    run(NULL, 200, 136, 96);
    run(H_DEFS("BM=32", "BN=32", "BK=32"), 100, 100, 100);
    run(H_DEFS("BM=64", "BN=128", "BK=16"), 70, 130, 50);
    return h_done();
}
