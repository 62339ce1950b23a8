/* t_mpi_dist.c — the device tier under `mpirun -np W` (W = 2 or 4, one
 * rank per process, run by mpi_test.sh): every process compiles the same
 * programs, fills the arguments of every rank (cheap) and runs them with
 * rt_plan_run, which under mpirun runs this process's rank only, on the
 * MPI shared-memory symmetric heap; each process checks its own rank's
 * results bitwise against references computed in C.
 *
 * Programs: tests/dist/coll.blk — all_reduce (f32/i64/bf16, on plain
 * parameters, so staged through the heap, and on a symmetric buffer),
 * all_gather, uneven reduce_scatter, all_to_all, broadcast, a peer pull
 * with barriers and a peer push with a signal from an async block;
 * tests/dist/p2p.blk — send/recv in exchange { } blocks (a ring, both
 * directions with a self message, an in-place rotation, conditional
 * sends; the messages are staged through the heap); tests/dist/groups.blk
 * — collectives within groups (group(color, key), reversed keys); and
 * lib/allreduce.blk one-shot and two-shot (peer loads and signals in
 * kernels). Argument "rma" (the RMA path: BLKC_MPI_RMA=1, or ranks on
 * several hosts, tests/mpi/mpi_hosts.sh) leaves lib/allreduce.blk out: its
 * kernels load peers' memory directly, which needs one node. Exits 77 when
 * not started by an MPI launcher or built without MPI. */
#include "dist/dist_test.h"

static DtMod m;
static int self; /* this process's rank */
#include "dist/coll_cases.h"
#include "dist/allreduce_case.h"
#include "dist/p2p_cases.h"
#include "dist/groups_cases.h"

int main(int argc, char **argv)
{
    int rma = argc > 1 && !strcmp(argv[1], "rma");
    int W = rt_mpi_launch_size();
    self = rt_mpi_launch_rank();
    if (W < 2 || self < 0 || !rt_mpi_built()) {
        printf("t_mpi_dist: skipped (%s)\n",
               !rt_mpi_built() ? "built without MPI"
                               : "not started by mpirun with 2+ processes");
        return 77;
    }
    if (W > DT_MAXR) {
        printf("t_mpi_dist: skipped (more than %d processes)\n", DT_MAXR);
        return 77;
    }
    dc_self = self; /* check this process's rank only */
    m = dt_load("tests/dist/coll.blk", NULL, 0);
    all_reduce("ar_sum_f32", RT_RED_SUM, W, 1001);
    all_reduce("ar_max_i64", RT_RED_MAX, W, 37);
    all_reduce("ar_sum_bf16", RT_RED_SUM, W, 129);
    all_gather("ag_f32", W, 17);
    reduce_scatter("rs_sum_f32", RT_RED_SUM, W, 4 * W + 3);
    all_to_all("a2a_f32", W, 5);
    broadcast("bc_f32", W, 100, W - 1);
    all_reduce("ar_avg_f32", RT_RED_AVG, W, 1001);
    all_reduce("ar_prod_i32", RT_RED_PROD, W, 37);
    reduce_root("red_sum_f32", RT_RED_SUM, W, 1001, W - 1);
    reduce_root("red_avg_bf16", RT_RED_AVG, W, 129, 0);
    gather_scatter("gat_f32", true, W, 257, W - 1);
    gather_scatter("sca_f16", false, W, 33, 0);
    sym_ring_copies(W, 7, 9);
    dt_free(&m);
    m = dt_load("tests/dist/p2p.blk", NULL, 0);
    pc_self = self;
    ring(W, 1001);
    both(W, 33, 7);
    rotate(W, 65, W + 1);
    star(W, 17);
    dt_free(&m);
    m = dt_load("tests/dist/groups.blk", NULL, 0);
    for (int C = 1; C <= W; C *= 2) {
        g_allreduce(W, C, 1000);
        g_coll(W, C, 5, 1);
        g_mixed(W, C, 33);
        g_then_world(W, C, 65);
    }
    dt_free(&m);
    if (!rma) {
        DtMod lm = dt_load("lib/allreduce.blk", NULL, 0);
        for (int op = 0; op < 3; op++) {
            allreduce_case(&lm, "allreduce_oneshot", W, 1001, op, self);
            allreduce_case(&lm, "allreduce_twoshot", W, 1001, op, self);
        }
        dt_free(&lm);
    }
    char name[64];
    snprintf(name, sizeof name, "t_mpi_dist rank %d of %d", self, W);
    return t_done(name);
}
