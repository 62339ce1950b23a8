/* allreduce_case.h — one case of lib/allreduce.blk (f32, ranks' inputs
 * from dt_fill, op 0 sum / 1 max / 2 min reduced in rank order in C),
 * shared by t_dist_allreduce.c (local ranks: self = -1, every rank
 * checked) and tests/mpi/t_mpi_dist.c (one rank per process: only rank
 * `self` checked). Include it after dist_test.h. */
#ifndef BLKC_TESTS_ALLREDUCE_CASE_H
#define BLKC_TESTS_ALLREDUCE_CASE_H

static void allreduce_case(const DtMod *m, const char *entry, int W, int N,
                           int op, int self)
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
        for (int r = self < 0 ? 0 : self; r < (self < 0 ? W : self + 1); r++)
            dt_close(y[r], ref, (size_t)N, 0, what, W, r);
        free(ref);
    }
    dt_args_free(&A);
}

#endif
