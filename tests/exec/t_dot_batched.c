/* t_dot_batched.c — batched dot [B,M,K] x [B,K,N] -> [B,M,N]: each program
 * takes BB batches (a range over the batch dim plus `:` over static dims);
 * the batch count is not a multiple of BB (tail batches masked). */
#include "harness.h"

static const char *src =
    "kernel bmm<BB = 4, M = 16, N = 24, K = 32>(A: f16[Z, M, K], B: f16[Z, K, N], C: f32[Z, M, N])\n"
    "    grid(cdiv(Z, BB)) {\n"
    "    let z = program_id(0) * BB;\n"
    "    C[z +: BB, :, :] = dot(A[z +: BB, :, :], B[z +: BB, :, :]);\n"
    "}\n";

int main(void)
{
    enum { Z = 10, M = 16, N = 24, K = 32 };
    h_seed(21);
    blkc_kernel *k = h_build(src, NULL);
    uint16_t *a = h_array(H_F16, Z * M * K), *b = h_array(H_F16, Z * K * N);
    float *c = h_array(H_F32, Z * M * N);
    h_fill(a, H_F16, Z * M * K, -1, 1);
    h_fill(b, H_F16, Z * K * N, -1, 1);
    H_LAUNCH(k, h_ten(h_t3(a, H_F16, Z, M, K)), h_ten(h_t3(b, H_F16, Z, K, N)),
             h_ten(h_t3(c, H_F32, Z, M, N)));
    double *r = h_alloc(8 * Z * M * N);
    for (int z = 0; z < Z; z++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int kk = 0; kk < K; kk++)
                    s += (double)h_f16_to_f32(a[(z * M + i) * K + kk]) *
                         h_f16_to_f32(b[(z * K + kk) * N + j]);
                r[(z * M + i) * N + j] = s;
            }
    h_check("batched dot f16 [10,16,32]x[10,32,24] -> f32", c, H_F32, r, Z * M * N, 1e-4, 1e-5);
    return h_done();
}
