/* t_dist_grid.c — rank() and world() in a kernel's grid(...) (LANGUAGE.md
 * §7, tests/dist/grid_rank.blk) on 1, 2, 3, 4 and 8 local ranks, against
 * references computed in C: a (rank() + 1) x world() grid of markers, and
 * each rank's share of a tensor with a tail, through a grid of
 * cdiv(cdiv(N, world()), B) programs offset by the rank. */
#include "dist_test.h"

enum { G = 8, N = 37, B = 8 }; /* G >= the most ranks; N % B != 0 */

static void grid_rank(const DtMod *m, int W)
{
    int fi = dt_entry(m, "grid_rank");
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    int32_t *y[DT_MAXR];
    float *x[DT_MAXR], *z[DT_MAXR];
    for (int r = 0; r < W; r++) {
        y[r] = DT_T(&A, r, "y", G, G);
        x[r] = DT_T(&A, r, "x", N);
        z[r] = DT_T(&A, r, "z", N);
        for (int i = 0; i < G * G; i++)
            y[r][i] = -1;
        dt_fill(x[r], N, r, 3);
        for (int i = 0; i < N; i++)
            z[r][i] = -7.0f;
    }
    if (dt_run_ok(&A, "grid_rank") == 0) {
        int per = (N + W - 1) / W;
        for (int r = 0; r < W; r++) {
            int bad = 0;
            for (int i = 0; i < G; i++)
                for (int j = 0; j < G; j++) {
                    int want = i <= r && j < W ? 100 * r + 10 * (r + 1) + W : -1;
                    bad += y[r][i * G + j] != want;
                }
            T_CHECK(bad == 0, "mark W=%d rank %d: %d wrong markers", W, r, bad);
            bad = 0;
            for (int i = 0; i < N; i++) {
                bool mine = i >= r * per && i < (r + 1) * per;
                float want = mine ? x[r][i] * 2.0f + (float)r : -7.0f;
                bad += z[r][i] != want;
            }
            T_CHECK(bad == 0, "shard W=%d rank %d: %d wrong values", W, r, bad);
        }
    }
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("tests/dist/grid_rank.blk", NULL, 0);
    for (int i = 0; i < DT_NWORLDS; i++)
        grid_rank(&m, dt_worlds[i]);
    dt_free(&m);
    return t_done("t_dist_grid");
}
