/* t_dist_calls.c — device functions calling device functions (tests/dist/
 * calls.blk) on 1, 2, 3, 4 and 8 local ranks against references computed
 * in C, and the extent check at a call. */
#include "dist_test.h"

enum { N = 37 };

static void one(const DtMod *m, int W)
{
    int fi = dt_entry(m, "calls");
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *x[DT_MAXR], *ring[DT_MAXR], *sum[DT_MAXR], *total[DT_MAXR], *kept[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", N);
        ring[r] = DT_T(&A, r, "ring", N);
        sum[r] = DT_T(&A, r, "sum", N);
        total[r] = DT_T(&A, r, "total", N);
        kept[r] = DT_T(&A, r, "kept", N);
        dt_fill(x[r], N, r, 11);
        for (int i = 0; i < N; i++)
            kept[r][i] = 7.0f;
    }
    if (dt_run_ok(&A, "calls") == 0) {
        double want_ring[N], want_sum[N], want_total[N], want_kept[N];
        float s[N];
        for (int i = 0; i < N; i++) { /* rank order, in f32 like the runtime */
            float acc = 0, tot = 0;
            for (int q = 0; q < W; q++)
                acc += x[q][i];
            for (int q = 0; q < W; q++)
                tot += acc;
            s[i] = acc;
            want_sum[i] = acc;
            want_total[i] = tot;
            want_kept[i] = 7.0;
        }
        (void)s;
        for (int r = 0; r < W; r++) {
            int prev = (r + W - 1) % W;
            for (int i = 0; i < N; i++)
                want_ring[i] = x[prev][i];
            dt_close(ring[r], want_ring, N, 0, "ring (call in async)", W, r);
            dt_close(sum[r], want_sum, N, 0, "sum (callee all_reduce)", W, r);
            dt_close(total[r], want_total, N, 0, "total (nested call)", W, r);
            dt_close(kept[r], want_kept, N, 0, "kept (callee returned early)", W, r);
        }
    }
    dt_args_free(&A);
}

static void mismatch(const DtMod *m)
{
    int fi = dt_entry(m, "bad_call");
    DtArgs A;
    char err[1024];
    dt_args_init(&A, m, fi, 2);
    for (int r = 0; r < 2; r++) {
        DT_T(&A, r, "x", 4);
        DT_T(&A, r, "y", 5);
    }
    T_CHECK(dt_run(&A, err, sizeof err) != 0 &&
                strstr(err, "call reduce_into: size N is 5 from 'y' dim 0 but 4 from 'x' dim 0"),
            "extent mismatch at a call: got '%s'", err);
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("tests/dist/calls.blk", NULL, 0);
    for (int i = 0; i < DT_NWORLDS; i++)
        one(&m, dt_worlds[i]);
    mismatch(&m);
    dt_free(&m);
    return t_done("t_dist_calls");
}
