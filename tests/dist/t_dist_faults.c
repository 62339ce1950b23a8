/* t_dist_faults.c — device-tier faults on 1, 2, 3, 4 and 8 local ranks:
 * every one ends in an error naming a rank, quickly, never a hang: a wait
 * that times out (BLKC_WAIT_TIMEOUT_MS=200: the error names the rank, the
 * signal, the expected and the seen value), a rank that returns early while
 * the others are in a collective (the exact "rank L left the run (returned
 * early) while rank M waits in ..." message), ranks that disagree on a collective,
 * symmetric heap exhaustion, a bad peer, bad copies, a collective in an
 * async block, an all_gather of the wrong size, a peer busy in a long kernel
 * while the others wait in all_reduce (they time out naming it; its grid
 * stops). After each failure the next
 * run on a fresh world succeeds. */
#include "dist_test.h"

static DtMod m;

/* Run entry on W ranks with x: f32[N_r] (N_r = n + r * grow); expect a
 * failure whose message holds every string of `want` (NULL-terminated);
 * returns the elapsed seconds. */
static double expect_fail(const char *entry, int W, int n, int grow,
                          const char *const *want)
{
    int fi = dt_entry(&m, entry);
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    for (int r = 0; r < W; r++)
        DT_T(&A, r, "x", n + r * grow);
    if (strcmp(entry, "sym_oom") == 0)
        for (int r = 0; r < W; r++)
            dt_int(&A, r, "n", (int64_t)1 << 26);   /* 256 MiB of f32 */
    char err[1024];
    double t0 = t_now();
    int rc = dt_run(&A, err, sizeof err);
    double dt = t_now() - t0;
    T_CHECK(rc != 0, "%s W=%d: succeeded, expected an error", entry, W);
    for (int i = 0; rc != 0 && want[i]; i++)
        T_CHECK(strstr(err, want[i]) != NULL, "%s W=%d: error '%s' lacks '%s'",
                entry, W, err, want[i]);
    T_CHECK(dt < 5.0, "%s W=%d: took %.2f s to fail", entry, W, dt);
    dt_args_free(&A);
    return dt;
}

/* Rank `leaver` returns from entry while the others are in collective
 * `coll`: the run's error is exactly "rank M: rank L left the run
 * (returned early) while rank M waits in COLL" for a rank M that stayed. */
static void expect_left(const char *entry, int W, int leaver, const char *coll)
{
    int fi = dt_entry(&m, entry);
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    for (int r = 0; r < W; r++)
        DT_T(&A, r, "x", 4);
    char err[1024];
    int rc = dt_run(&A, err, sizeof err);
    int found = 0;
    for (int q = 0; q < W; q++) {
        char want[256];
        snprintf(want, sizeof want,
                 "rank %d: rank %d left the run (returned early) while rank %d waits in %s",
                 q, leaver, q, coll);
        found |= q != leaver && strcmp(err, want) == 0;
    }
    T_CHECK(rc != 0 && found, "%s W=%d: rc %d, error '%s'", entry, W, rc, err);
    dt_args_free(&A);
}

/* A good run right after (the world and the JIT module are reusable). */
static void expect_ok(int W)
{
    int fi = dt_entry(&m, "mismatch");
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    float *x[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", 3);
        x[r][0] = 1.0f;
    }
    if (dt_run_ok(&A, "all_reduce after a failure") == 0)
        for (int r = 0; r < W; r++)
            T_CHECK(x[r][0] == (float)W, "rank %d: %g", r, (double)x[r][0]);
    dt_args_free(&A);
}

int main(void)
{
    setenv("BLKC_WAIT_TIMEOUT_MS", "200", 1);
    setenv("BLKC_SYM_HEAP_MB", "64", 1);
    m = dt_load("tests/dist/faults.blk", NULL, 0);
    for (int w = 0; w < DT_NWORLDS; w++) {
        int W = dt_worlds[w];
        char rk[32], peer[48];
        snprintf(rk, sizeof rk, "rank %d", W - 1);
        snprintf(peer, sizeof peer, "peer rank %d out of range", W);
        {
            const char *want[] = {rk, "S[0]", "timed out after 200 ms", "1", "saw 0", NULL};
            double t = expect_fail("never_signalled", W, 4, 0, want);
            T_CHECK(t >= 0.19, "never_signalled W=%d failed after %.3f s, before the timeout", W, t);
        }
        if (W > 1) {
            expect_left("early_return", W, 1, "all_reduce");
            expect_left("early_return_barrier", W, 0, "barrier");
            expect_left("early_return_call", W, W - 1, "all_gather");
            const char *want2[] = {"collective mismatch", "all_reduce", NULL};
            expect_fail("mismatch", W, 4, 1, want2);
            /* a peer busy in a kernel: the waiters give up at the timeout
             * and the busy rank's grid stops (expect_fail: < 5 s) */
            const char *want3[] = {"all_reduce timed out after 200 ms: rank ",
                                   " waits, rank 1 did not arrive", NULL};
            setenv("BLKC_COLL_TIMEOUT_MS", "200", 1);
            double t = expect_fail("busy_peer", W, 16, 0, want3);
            unsetenv("BLKC_COLL_TIMEOUT_MS");
            T_CHECK(t >= 0.19, "busy_peer W=%d failed after %.3f s, before the timeout", W, t);
        }
        {
            const char *want[] = {"rank ", "symmetric heap out of memory", NULL};
            expect_fail("sym_oom", W, 4, 0, want);
            const char *want2[] = {peer, NULL};
            expect_fail("bad_peer", W, 4, 0, want2);
            const char *want3[] = {"copy of 4 elements into a view of 3", NULL};
            expect_fail("bad_copy", W, 4, 0, want3);
            const char *want4[] = {"out of bounds", NULL};
            expect_fail("bad_view", W, 4, 0, want4);
        }
        {   /* all_gather: dst of W * S + 1 elements */
            int fi = dt_entry(&m, "ag_bad");
            DtArgs A;
            dt_args_init(&A, &m, fi, W);
            for (int r = 0; r < W; r++) {
                DT_T(&A, r, "src", 5);
                DT_T(&A, r, "dst", (int64_t)5 * W + 1);
            }
            char err[1024];
            int rc = dt_run(&A, err, sizeof err);
            T_CHECK(rc != 0 && strstr(err, "all_gather"), "ag_bad W=%d: rc %d '%s'", W, rc, err);
            dt_args_free(&A);
        }
        expect_ok(W);
    }
    dt_free(&m);
    return t_done("t_dist_faults");
}
