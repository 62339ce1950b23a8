/* t_dist_coll.c — the device tier's collectives (all_reduce sum/prod/max/min/avg,
 * reduce / gather / scatter to and from a root,
 * all_gather, reduce_scatter with uneven chunks, all_to_all, broadcast,
 * barrier) and copies (peer pull, peer push with a signal from an async
 * block, dynamic 2-D sub-blocks) from tests/dist/coll.blk, on 1, 2, 3, 4
 * and 8 local ranks, bitwise against references computed in C (reductions
 * in rank order, small floats accumulated in f32 and rounded once). */
#include "dist_test.h"

static DtMod m;
#include "coll_cases.h"

/* sub_copy (f32) with a per-rank offset */
static void sub_copy(int W, int R, int C)
{
    char what[64];
    int fi = dt_entry(&m, "sub_copy");
    DtArgs A;
    float *x[DT_MAXR], *y[DT_MAXR];
    dt_args_init(&A, &m, fi, W);
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", R, C);
        y[r] = DT_T(&A, r, "y", R, C);
        t_gen(x[r], (size_t)R * C, DT_F32, r, 15);
        dt_int(&A, r, "r0", r % R);
        dt_int(&A, r, "c0", (r * 3) % C);
    }
    if (dt_run_ok(&A, "sub_copy") == 0)
        for (int r = 0; r < W; r++) {
            int r0 = r % R, c0 = (r * 3) % C, bad = 0;
            for (int i = 0; i < R; i++)
                for (int j = 0; j < C; j++) {
                    float want = i >= r0 && j >= c0 ? x[r][(i - r0) * C + (j - c0)] : 0.0f;
                    bad += memcmp(&y[r][i * C + j], &want, 4) != 0;
                }
            snprintf(what, sizeof what, "sub_copy R=%d C=%d", R, C);
            T_CHECK(bad == 0, "%s W=%d rank %d: %d wrong elements", what, W, r, bad);
        }
    dt_args_free(&A);
}

int main(void)
{
    m = dt_load("tests/dist/coll.blk", NULL, 0);
    static const int sizes[] = {1, 5, 64, 1000, 4099};
    for (int w = 0; w < DT_NWORLDS; w++) {
        int W = dt_worlds[w];
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            int n = sizes[i];
            all_reduce("ar_sum_f32", RT_RED_SUM, W, n);
            all_reduce("ar_max_f32", RT_RED_MAX, W, n);
            all_reduce("ar_min_f32", RT_RED_MIN, W, n);
            all_reduce("ar_sum_i32", RT_RED_SUM, W, n);
            all_reduce("ar_max_i64", RT_RED_MAX, W, n);
            all_reduce("ar_min_u8", RT_RED_MIN, W, n);
            all_reduce("ar_sum_f16", RT_RED_SUM, W, n);
            all_reduce("ar_sum_bf16", RT_RED_SUM, W, n);
            all_reduce("ar_sum_f64", RT_RED_SUM, W, n);
            all_reduce("ar_prod_f32", RT_RED_PROD, W, n);
            all_reduce("ar_avg_f32", RT_RED_AVG, W, n);
            all_reduce("ar_prod_i32", RT_RED_PROD, W, n);
            all_reduce("ar_avg_i32", RT_RED_AVG, W, n);
            all_reduce("ar_avg_u8", RT_RED_AVG, W, n);
            all_reduce("ar_prod_f16", RT_RED_PROD, W, n);
            all_reduce("ar_avg_bf16", RT_RED_AVG, W, n);
            all_reduce("ar_avg_f64", RT_RED_AVG, W, n);
            all_reduce("ar_prod_bool", RT_RED_PROD, W, n);
            all_gather("ag_f32", W, n);
            all_gather("ag_f16", W, n);
            all_gather("ag_i64", W, n);
            reduce_scatter("rs_sum_f32", RT_RED_SUM, W, n);
            reduce_scatter("rs_max_i32", RT_RED_MAX, W, n);
            reduce_scatter("rs_sum_bf16", RT_RED_SUM, W, n);
            reduce_scatter("rs_avg_f32", RT_RED_AVG, W, n);
            reduce_scatter("rs_prod_i64", RT_RED_PROD, W, n);
            all_to_all("a2a_f32", W, n);
            all_to_all("a2a_i8", W, n);
            broadcast("bc_f32", W, n, W - 1);
            broadcast("bc_i64", W, n, W / 2);
            reduce_root("red_sum_f32", RT_RED_SUM, W, n, 0);
            reduce_root("red_max_i32", RT_RED_MAX, W, n, W - 1);
            reduce_root("red_avg_bf16", RT_RED_AVG, W, n, W / 2);
            gather_scatter("gat_f32", true, W, n, W - 1);
            gather_scatter("gat_i8", true, W, n, 0);
            gather_scatter("sca_f32", false, W, n, W / 2);
            gather_scatter("sca_f16", false, W, n, W - 1);
        }
        sym_ring_copies(W, 1, 1);
        sub_copy(W, 1, 1);
        sym_ring_copies(W, 7, 13);
        sub_copy(W, 7, 13);
        sym_ring_copies(W, 33, 64);
        sub_copy(W, 33, 64);
    }
    dt_free(&m);
    return t_done("t_dist_coll");
}
