/* t_dist_groups.c — let g = group(color, key) and collectives within it
 * (tests/dist/groups.blk, runtime/rank_group.c) on 1, 2, 4 and 8 local
 * ranks split into C groups (color rank % C, keys reversing the order, so
 * group rank 0 is the highest world rank): rank(g)/world(g), all_reduce,
 * all_gather, broadcast, reduce, gather, scatter, reduce_scatter,
 * all_to_all and barrier against references computed in C over the members
 * in group order; groups running different collectives at once; a group
 * collective next to a world one; members disagreeing on a size; a handle
 * no group() made. */
#include "dist_test.h"

static DtMod m;
#include "groups_cases.h"

int main(void)
{
    m = dt_load("tests/dist/groups.blk", NULL, 0);
    static const int worlds[] = {1, 2, 4, 8, 6};
    for (int k = 0; k < 5; k++) {
        int W = worlds[k];
        for (int C = 1; C <= W; C *= 2) {
            g_allreduce(W, C, 1);
            g_allreduce(W, C, 1000);
            g_coll(W, C, 5, 0);
            g_coll(W, C, 17, 1);
            g_mixed(W, C, 33);
            g_then_world(W, C, 65);
        }
    }
    g_coll(6, 4, 3, 1); /* groups of 2 and 1 */
    char err[1024];
    for (int W = 2; W <= 8; W *= 2) {
        DtArgs A;
        dt_args_init(&A, &m, dt_entry(&m, "g_mismatch"), W);
        for (int r = 0; r < W; r++) {
            DT_T(&A, r, "b", 4);
            DT_T(&A, r, "c", 5);
        }
        int rc = dt_run(&A, err, sizeof err);
        T_CHECK(rc != 0 && strstr(err, "exchange mismatch: rank 0 sends 1 message (20 bytes) to rank 1, but rank 1 receives 1 (16 bytes) from rank 0"),
                "g_mismatch W=%d: rc %d '%s'", W, rc, err);
        dt_args_free(&A);
    }
    DtArgs A;
    dt_args_init(&A, &m, dt_entry(&m, "g_bad_handle"), 2);
    for (int r = 0; r < 2; r++)
        DT_T(&A, r, "b", 4);
    int rc = dt_run(&A, err, sizeof err);
    T_CHECK(rc != 0 && strstr(err, "g_bad_handle line 63: 1 is not a group made in this call of g_bad_handle"),
            "g_bad_handle: rc %d '%s'", rc, err);
    dt_args_free(&A);
    dt_free(&m);
    return t_done("t_dist_groups");
}
