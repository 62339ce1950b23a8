/* t_dist_p2p.c — send/recv grouped in exchange { } blocks
 * (tests/dist/p2p.blk, runtime/rank_p2p.c) on 1..8 local ranks: a ring,
 * both directions with two dtypes and a self message, an in-place rotation
 * in a loop, conditional sends, each compared bitwise with the inputs they
 * must move; and the faults: a send nobody receives, disagreeing sizes, a
 * rank busy in a kernel (the others time out naming it), a rank that
 * never enters the group (and returns: it is named), a
 * peer that is not a rank — each ends with its exact message, within the
 * timeout. */
#include "dist_test.h"

static DtMod m;
#include "p2p_cases.h"

/* Run a fault entry (tensors a, b of n, mm elements) and check the message
 * contains want and that it came within 5 s. */
static void fault(const char *entry, int W, int n, int mm, const char *want)
{
    DtArgs A;
    int fi = dt_entry(&m, entry);
    dt_args_init(&A, &m, fi, W);
    const IrFunc *f = m.ir->funcs[fi];
    for (int r = 0; r < W; r++)
        for (int p = 0; p < f->nparams; p++)
            if (!f->params[p].local)
                dt_tensorv(&A, r, f->params[p].name,
                           (const int64_t[]){p == 0 ? n : mm}, 1);
    char err[1024];
    double t0 = t_now();
    int rc = dt_run(&A, err, sizeof err);
    double dt = t_now() - t0;
    T_CHECK(rc != 0 && strstr(err, want), "%s W=%d: rc %d, error '%s', want '%s'",
            entry, W, rc, err, want);
    T_CHECK(dt < 5.0, "%s W=%d: took %.2f s to fail", entry, W, dt);
    dt_args_free(&A);
}

int main(void)
{
    m = dt_load("tests/dist/p2p.blk", NULL, 0);
    static const int sizes[] = {1, 7, 1000, 4099};
    for (int W = 1; W <= 8; W++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            ring(W, sizes[i]);
            both(W, sizes[i], sizes[(i + 1) % 4]);
            star(W, sizes[i]);
        }
        rotate(W, 33, 0);
        rotate(W, 33, 1);
        rotate(W, 33, W + 2);
    }
    setenv("BLKC_COLL_TIMEOUT_MS", "300", 1);
    static const int fw[] = {2, 3, 4, 8};
    for (int k = 0; k < 4; k++) {
        int W = fw[k];
        fault("lone_send", W, 4, 4,
              "exchange mismatch: rank 0 sends 1 message (16 bytes) to rank 1, "
              "but rank 1 receives 0 (0 bytes) from rank 0");
        fault("size_mismatch", W, 4, 5,
              "exchange mismatch: rank 0 sends 1 message (16 bytes) to rank 1, "
              "but rank 1 receives 1 (20 bytes) from rank 0");
        fault("busy_ring", W, 16, 16, "exchange timed out after 300 ms: rank ");
        fault("busy_ring", W, 16, 16, " waits, rank 1 did not arrive");
        fault("skip", W, 4, 4, "rank 1 left the run (returned early) while rank ");
    }
    char want[64];
    snprintf(want, sizeof want, "send: rank 2 is not a rank of this world of 2");
    fault("bad_peer", 2, 4, 4, want);
    unsetenv("BLKC_COLL_TIMEOUT_MS");
    dt_free(&m);
    return t_done("t_dist_p2p");
}
