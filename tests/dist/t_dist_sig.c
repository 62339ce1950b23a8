/* t_dist_sig.c — copy(..., signal = S[i], value = v, op = set|add)
 * (tests/dist/sig.blk) on 1, 2, 3, 4 and 8 local ranks: a ring that reuses
 * one buffer and one signal cell with increasing epochs, and one cell that
 * counts (op = add) the arrivals from every peer; checked against the
 * exchange computed in C. */
#include "dist_test.h"

enum { ITERS = 6, N = 5 };

static void ring(const DtMod *m, int W)
{
    int fi = dt_entry(m, "ring_epochs");
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *x[DT_MAXR], *y[DT_MAXR];
    uint64_t *seen[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", ITERS, N);
        y[r] = DT_T(&A, r, "y", ITERS, N);
        seen[r] = DT_T(&A, r, "seen", ITERS);
        for (int i = 0; i < ITERS * N; i++)
            x[r][i] = (float)(100 * r + i);
    }
    if (dt_run_ok(&A, "ring_epochs") == 0)
        for (int r = 0; r < W; r++) {
            int prev = (r + W - 1) % W, bad = 0;
            for (int i = 0; i < ITERS * N; i++)
                bad += y[r][i] != x[prev][i];
            for (int it = 0; it < ITERS; it++)
                bad += seen[r][it] != (uint64_t)(it + 1);
            T_CHECK(bad == 0, "ring_epochs W=%d rank %d: %d wrong values", W, r, bad);
        }
    dt_args_free(&A);
}

static void gather(const DtMod *m, int W)
{
    int fi = dt_entry(m, "gather_count");
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *x[DT_MAXR], *y[DT_MAXR];
    uint64_t *cnt[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", N);
        y[r] = DT_T(&A, r, "y", W, N);
        cnt[r] = DT_T(&A, r, "counts", 2);
        dt_fill(x[r], N, r, 3);
    }
    if (dt_run_ok(&A, "gather_count") == 0)
        for (int r = 0; r < W; r++) {
            int bad = 0;
            for (int q = 0; q < W; q++)
                for (int i = 0; i < N; i++)
                    bad += y[r][q * N + i] != x[q][i];
            T_CHECK(bad == 0, "gather_count W=%d rank %d: %d wrong elements", W, r, bad);
            T_CHECK(cnt[r][0] == (uint64_t)W && cnt[r][1] == (uint64_t)(W * (W + 1) / 2),
                    "gather_count W=%d rank %d: counters %llu %llu, want %d %d", W, r,
                    (unsigned long long)cnt[r][0], (unsigned long long)cnt[r][1], W,
                    W * (W + 1) / 2);
        }
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("tests/dist/sig.blk", NULL, 0);
    for (int i = 0; i < DT_NWORLDS; i++) {
        ring(&m, dt_worlds[i]);
        gather(&m, dt_worlds[i]);
    }
    dt_free(&m);
    return t_done("t_dist_sig");
}
