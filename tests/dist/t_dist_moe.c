/* t_dist_moe.c — lib/moe.blk (MoE dispatch, experts, combine over
 * all_to_all) on 1, 2, 3, 4 and 8 local ranks: uneven token counts per
 * expert, top-1 and top-2 routing, some tokens unrouted (-1) and some
 * dropped by the capacity, and very uneven routing (all tokens to one
 * expert, experts and whole ranks receiving nothing: empty chunks of the
 * uneven all_to_all), against the same routing computed in C. */
#include "dist_test.h"

/* Routing modes: skewed random (some unrouted), or very uneven. */
enum { ROUTE_SKEW, ROUTE_ALL_TO_0, ROUTE_LAST_OR_NONE };

static void one_mode(const DtMod *m, int W, int T, int H, int TOPK, int EL, int cap,
                     int seed, int mode)
{
    int fi = dt_entry(m, "moe");
    int E = EL * W;
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *x[DT_MAXR], *g[DT_MAXR], *w[DT_MAXR], *y[DT_MAXR];
    int32_t *idx[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", T, H);
        g[r] = DT_T(&A, r, "gate", T, TOPK);
        w[r] = DT_T(&A, r, "w", EL, H, H);
        y[r] = DT_T(&A, r, "y", T, H);
        idx[r] = DT_T(&A, r, "idx", T, TOPK);
        dt_fill(x[r], (size_t)T * H, r, seed);
        dt_fill(g[r], (size_t)T * TOPK, r, seed + 1);
        dt_fill(w[r], (size_t)EL * H * H, r, seed + 2);
        uint32_t s = 12345u * (uint32_t)(r + 1) + (uint32_t)seed;
        for (int i = 0; i < T * TOPK; i++) {
            s = s * 1103515245u + 12345u;
            /* skewed: low experts are popular; 1 in 16 unrouted */
            int v = (int)((s >> 16) % (uint32_t)(E + 3));
            idx[r][i] = (s >> 8) % 16 == 0 ? -1 : v >= E ? 0 : v;
            if (mode == ROUTE_ALL_TO_0) /* every other expert (and every
                                          rank but 0) receives nothing */
                idx[r][i] = 0;
            else if (mode == ROUTE_LAST_OR_NONE) /* rank r's tokens go to the
                                                    last expert, or nowhere */
                idx[r][i] = r % 2 == 0 ? E - 1 : -1;
        }
        dt_int(&A, r, "cap", cap);
    }
    char what[128];
    snprintf(what, sizeof what, "moe T=%d H=%d TOPK=%d EL=%d cap=%d mode=%d", T, H, TOPK,
             EL, cap, mode);
    if (dt_run_ok(&A, what) == 0) {
        double *ref = t_xmalloc(sizeof(double) * (size_t)T * H);
        int *cnt = t_xmalloc(sizeof(int) * (size_t)E);
        for (int r = 0; r < W; r++) {
            for (int e = 0; e < E; e++)
                cnt[e] = 0;
            for (size_t i = 0; i < (size_t)T * H; i++)
                ref[i] = 0;
            for (int t = 0; t < T; t++)
                for (int k = 0; k < TOPK; k++) {
                    int e = idx[r][t * TOPK + k];
                    if (e < 0 || cnt[e]++ >= cap)
                        continue;
                    const float *we = w[e / EL] + (size_t)(e % EL) * H * H;
                    for (int j = 0; j < H; j++) {
                        double acc = 0;
                        for (int h = 0; h < H; h++)
                            acc += (double)x[r][(size_t)t * H + h] * we[(size_t)h * H + j];
                        ref[(size_t)t * H + j] += (double)g[r][t * TOPK + k] * (float)acc;
                    }
                }
            dt_close(y[r], ref, (size_t)T * H, 1e-5, what, W, r);
        }
        free(cnt);
        free(ref);
    }
    dt_args_free(&A);
}

static void one(const DtMod *m, int W, int T, int H, int TOPK, int EL, int cap,
                int seed)
{
    one_mode(m, W, T, H, TOPK, EL, cap, seed, ROUTE_SKEW);
}

int main(void)
{
    DtMod m = dt_load("lib/moe.blk", NULL, 0);
    for (int w = 0; w < DT_NWORLDS; w++) {
        int W = dt_worlds[w];
        one(&m, W, 32, 64, 1, 2, 64, 1);    /* top-1, nothing dropped */
        one(&m, W, 50, 40, 2, 1, 7, 2);     /* top-2, odd sizes, drops */
        one(&m, W, 13, 33, 2, 3, 3, 3);     /* tiny capacity */
        /* very uneven: one expert gets everything (capped), the others
         * and ranks 1.. nothing; or only the last expert, from even ranks */
        one_mode(&m, W, 24, 32, 2, 2, 40, 4, ROUTE_ALL_TO_0);
        one_mode(&m, W, 24, 32, 1, 2, 9, 5, ROUTE_ALL_TO_0);
        one_mode(&m, W, 17, 20, 2, 1, 40, 6, ROUTE_LAST_OR_NONE);
    }
    dt_free(&m);
    return t_done("t_dist_moe");
}
