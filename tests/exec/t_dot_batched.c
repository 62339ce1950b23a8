/* t_dot_batched.c — batched dot [B,M,K] x [B,K,N] -> [B,M,N]: each program
 * takes BB batches (a range over the batch dim plus `:` over static dims);
 * the batch count is not a multiple of BB (tail batches masked). The
 * second kernel: bf16 plus an accumulator, 32x32 tiles (MFMA on HIP
 * too, 24 / 16 columns take the FMA loop there). The third: one warp,
 * 16x320 (CUDA: 160 accumulators a lane, so 2 column parts of 16x160). */
#include "harness.h"

static const char *src =
    "kernel bmm<BB = 4, M = 16, N = 24, K = 32>(A: f16[Z, M, K], B: f16[Z, K, N], C: f32[Z, M, N])\n"
    "    grid(cdiv(Z, BB)) {\n"
    "    let z = program_id(0) * BB;\n"
    "    C[z +: BB, :, :] = dot(A[z +: BB, :, :], B[z +: BB, :, :]);\n"
    "}\n";

static const char *src2 =
    "kernel bmw<BB = 3, M = 32, N = 32, K = 16>(A: bf16[Z, M, K], W: bf16[Z, K, N], C: f32[Z, M, N])\n"
    "    grid(cdiv(Z, BB)) {\n"
    "    let z = program_id(0) * BB;\n"
    "    let acc = C[z +: BB, :, :];\n"
    "    C[z +: BB, :, :] = dot(A[z +: BB, :, :], W[z +: BB, :, :], acc);\n"
    "}\n";

static const char *src3 =
    "kernel bmp<BB = 1, M = 16, N = 320, K = 16>(A: f16[Z, M, K], B: f16[Z, K, N], C: f32[Z, M, N])\n"
    "    grid(cdiv(Z, BB)) warps(1) {\n"
    "    let z = program_id(0) * BB;\n"
    "    C[z +: BB, :, :] = dot(A[z +: BB, :, :], B[z +: BB, :, :], C[z +: BB, :, :]);\n"
    "}\n";

static void run_bmm(void)
{
    enum { Z = 10, M = 16, N = 24, K = 32 };
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
}

static void run_bmw(void)
{
    enum { Z = 7, M = 32, N = 32, K = 16 };
    blkc_kernel *k = h_build(src2, NULL);
    uint16_t *a = h_array(H_BF16, Z * M * K), *w = h_array(H_BF16, Z * K * N);
    float *c = h_array(H_F32, Z * M * N);
    h_fill(a, H_BF16, Z * M * K, -1, 1);
    h_fill(w, H_BF16, Z * K * N, -1, 1);
    h_fill(c, H_F32, Z * M * N, -1, 1);
    double *r = h_alloc(8 * Z * M * N);
    for (int z = 0; z < Z; z++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = c[(z * M + i) * N + j];
                for (int kk = 0; kk < K; kk++)
                    s += h_get(a, H_BF16, (size_t)(z * M + i) * K + kk) *
                         h_get(w, H_BF16, (size_t)(z * K + kk) * N + j);
                r[(z * M + i) * N + j] = s;
            }
    H_LAUNCH(k, h_ten(h_t3(a, H_BF16, Z, M, K)), h_ten(h_t3(w, H_BF16, Z, K, N)),
             h_ten(h_t3(c, H_F32, Z, M, N)));
    h_check("batched dot bf16 [7,32,16]x[7,16,32] + acc -> f32", c, H_F32, r, Z * M * N, 1e-4,
            1e-5);
}

static void run_bmp(void)
{
    enum { Z = 3, M = 16, N = 320, K = 16 };
    blkc_kernel *k = h_build(src3, NULL);
    uint16_t *a = h_array(H_F16, Z * M * K), *b = h_array(H_F16, Z * K * N);
    float *c = h_array(H_F32, Z * M * N);
    h_fill(a, H_F16, Z * M * K, -1, 1);
    h_fill(b, H_F16, Z * K * N, -1, 1);
    h_fill(c, H_F32, Z * M * N, -1, 1);
    double *r = h_alloc(8 * Z * M * N);
    for (int z = 0; z < Z; z++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = c[(z * M + i) * N + j];
                for (int kk = 0; kk < K; kk++)
                    s += (double)h_f16_to_f32(a[(z * M + i) * K + kk]) *
                         h_f16_to_f32(b[(z * K + kk) * N + j]);
                r[(z * M + i) * N + j] = s;
            }
    H_LAUNCH(k, h_ten(h_t3(a, H_F16, Z, M, K)), h_ten(h_t3(b, H_F16, Z, K, N)),
             h_ten(h_t3(c, H_F32, Z, M, N)));
    h_check("batched dot f16 [3,16,16]x[3,16,320] + acc, one warp -> f32", c, H_F32, r,
            Z * M * N, 1e-4, 1e-5);
}

int main(void)
{
    h_seed(21);
    run_bmm();
    run_bmw();
    run_bmp();
    return h_done();
}
