/* t_dist_gemm_rs.c — lib/gemm_rs.blk (GEMM+ReduceScatter, overlapped with
 * peer stores and signals, and GEMM then reduce_scatter) on 1, 2, 3, 4 and
 * 8 local ranks, M divisible by W or not, against C = sum_r A_r @ B_r in
 * double, scattered in chunks of cdiv(M, W) rows. */
#include "dist_test.h"

static void one(const DtMod *m, const char *entry, int W, int M, int KL, int N)
{
    int fi = dt_entry(m, entry);
    int MC = (M + W - 1) / W;
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *a[DT_MAXR], *b[DT_MAXR], *c[DT_MAXR];
    for (int r = 0; r < W; r++) {
        a[r] = DT_T(&A, r, "a", M, KL);
        b[r] = DT_T(&A, r, "b", KL, N);
        dt_fill(a[r], (size_t)M * KL, r, 3);
        dt_fill(b[r], (size_t)KL * N, r, 4);
        c[r] = DT_T(&A, r, "c", MC, N);
    }
    char what[128];
    snprintf(what, sizeof what, "%s M=%d KL=%d N=%d", entry, M, KL, N);
    if (dt_run_ok(&A, what) == 0) {
        double *ref = t_xmalloc(sizeof(double) * (size_t)MC * W * N);
        for (size_t i = 0; i < (size_t)MC * W * N; i++)
            ref[i] = 0;
        for (int s = 0; s < W; s++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double acc = 0;
                    for (int k = 0; k < KL; k++)
                        acc += (double)a[s][(size_t)i * KL + k] * b[s][(size_t)k * N + j];
                    ref[(size_t)i * N + j] += acc;
                }
        for (int r = 0; r < W; r++)
            dt_close(c[r], ref + (size_t)r * MC * N, (size_t)MC * N, 1e-5, what, W, r);
        free(ref);
    }
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("lib/gemm_rs.blk", NULL, 0);
    static const int shapes[][3] = {{64, 32, 64}, {37, 50, 45}, {5, 3, 7}, {100, 64, 33}};
    for (int w = 0; w < DT_NWORLDS; w++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            one(&m, "gemm_rs", dt_worlds[w], shapes[s][0], shapes[s][1], shapes[s][2]);
            one(&m, "gemm_rs_plain", dt_worlds[w], shapes[s][0], shapes[s][1], shapes[s][2]);
        }
    dt_free(&m);
    return t_done("t_dist_gemm_rs");
}
