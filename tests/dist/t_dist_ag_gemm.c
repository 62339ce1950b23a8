/* t_dist_ag_gemm.c — lib/ag_gemm.blk (overlapped and plain AllGather+GEMM)
 * on 1, 2, 3, 4 and 8 local ranks, shard sizes that are and are not
 * multiples of the tile, against C = concat_r(A_r) @ B computed in double. */
#include "dist_test.h"

static void one(const DtMod *m, const char *entry, int W, int M, int K, int N)
{
    int fi = dt_entry(m, entry);
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *a[DT_MAXR], *c[DT_MAXR];
    float *b0 = NULL;
    for (int r = 0; r < W; r++) {
        a[r] = DT_T(&A, r, "a", M, K);
        dt_fill(a[r], (size_t)M * K, r, 1);
        float *b = DT_T(&A, r, "b", K, N);
        dt_fill(b, (size_t)K * N, 99, 2);   /* B is the same on every rank */
        b0 = b;
        c[r] = DT_T(&A, r, "c", (int64_t)M * W, N);
    }
    char what[128];
    snprintf(what, sizeof what, "%s M=%d K=%d N=%d", entry, M, K, N);
    if (dt_run_ok(&A, what) == 0) {
        double *ref = t_xmalloc(sizeof(double) * (size_t)M * W * N);
        for (int s = 0; s < W; s++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double acc = 0;
                    for (int k = 0; k < K; k++)
                        acc += (double)a[s][(size_t)i * K + k] * b0[(size_t)k * N + j];
                    ref[((size_t)s * M + i) * N + j] = acc;
                }
        for (int r = 0; r < W; r++)
            dt_close(c[r], ref, (size_t)M * W * N, 1e-5, what, W, r);
        free(ref);
    }
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("lib/ag_gemm.blk", NULL, 0);
    static const int shapes[][3] = {{32, 64, 64}, {37, 50, 45}, {5, 3, 7}, {64, 96, 33}};
    for (int w = 0; w < DT_NWORLDS; w++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            one(&m, "ag_gemm", dt_worlds[w], shapes[s][0], shapes[s][1], shapes[s][2]);
            one(&m, "ag_gemm_plain", dt_worlds[w], shapes[s][0], shapes[s][1], shapes[s][2]);
        }
    dt_free(&m);
    return t_done("t_dist_ag_gemm");
}
