/* t_dist_allreduce.c — lib/allreduce.blk (one-shot and two-shot all-reduce
 * with peer loads and signals) for sum, max and min on 1, 2, 3, 4 and 8
 * local ranks, N divisible by W or not (down to N < W), against the
 * reduction in rank order computed in C (f32 accumulation, so exact). */
#include "dist_test.h"

static void one(const DtMod *m, const char *entry, int W, int N, int op)
{
    int fi = dt_entry(m, entry);
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *x[DT_MAXR], *y[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", N);
        y[r] = DT_T(&A, r, "y", N);
        dt_fill(x[r], (size_t)N, r, 5 + op);
        dt_int(&A, r, "op", op);
    }
    char what[128];
    snprintf(what, sizeof what, "%s N=%d op=%d", entry, N, op);
    if (dt_run_ok(&A, what) == 0) {
        double *ref = t_xmalloc(sizeof(double) * (size_t)N);
        for (int i = 0; i < N; i++) {
            float acc = x[0][i];
            for (int q = 1; q < W; q++) {
                float v = x[q][i];
                acc = op == 1 ? (v > acc ? v : acc) : op == 2 ? (v < acc ? v : acc)
                              : acc + v;
            }
            ref[i] = acc;
        }
        for (int r = 0; r < W; r++)
            dt_close(y[r], ref, (size_t)N, 0, what, W, r);
        free(ref);
    }
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("lib/allreduce.blk", NULL, 0);
    static const int sizes[] = {1, 3, 256, 1001, 4099};
    for (int w = 0; w < DT_NWORLDS; w++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int op = 0; op < 3; op++) {
                one(&m, "allreduce_oneshot", dt_worlds[w], sizes[s], op);
                one(&m, "allreduce_twoshot", dt_worlds[w], sizes[s], op);
            }
    dt_free(&m);
    return t_done("t_dist_allreduce");
}
