/* test_rank_faults.c — faults never hang a world: a signal wait that times
 * out (BLKC_WAIT_TIMEOUT_MS=200) with the exact message, a rank that fails
 * while others wait in a collective, a barrier and a signal wait (they stop
 * within a bounded time, well under the wait timeout), a rank that returns
 * non-zero, ranks that return early while others wait for them, two ranks
 * that never come to a barrier (both named), collectives
 * that disagree, the plain-C wait loop for generated code, and the end of
 * a run: ranks that compute on (never waiting on anyone) after the others
 * returned are named after the collectives' deadline and left behind. */
#include "rk_test.h"

#include <unistd.h>

static double elapsed_since(double t0) { return t_now() - t0; }

/* run fn on N ranks; return rc, err holds the message */
static int run(int N, int (*fn)(RtRank *, void *), void *arg, char *err,
               size_t errlen, RtWorld **keep)
{
    RtWorld *w;
    if (rt_world_create(N, 1 << 16, &w, err, errlen))
        return -2;
    int rc = rt_world_run(w, fn, arg, err, errlen);
    if (keep)
        *keep = w;
    else
        rt_world_destroy(w);
    return rc;
}

/* ------------------------------------------------------------ timeout */
static int f_timeout(RtRank *r, void *arg)
{
    int eq = *(int *)arg;
    size_t off;
    if (rt_sym_alloc(r, 64, &off))
        return -1;
    uint64_t *cell = rt_sym_ptr(r, off, rt_rank_id(r));
    if (rt_rank_id(r) == 0)
        return rt_barrier(r);          /* aborted when rank 1 times out */
    if (eq) {
        rt_signal_notify(r, cell, 3, RT_SIG_SET);
        return rt_signal_wait(r, cell, RT_WAIT_EQ, 5, NULL);
    }
    return rt_signal_wait(r, cell, RT_WAIT_GE, 1, "ready[0]");
}

static void test_timeout(void)
{
    char err[512];
    RtWorld *w;
    int eq = 0;
    setenv("BLKC_WAIT_TIMEOUT_MS", "200", 1);
    double t0 = t_now();
    int rc = run(2, f_timeout, &eq, err, sizeof err, &w);
    double dt = elapsed_since(t0);
    T_CHECK(rc == -1 && !strcmp(err, "rank 1: wait on signal ready[0] timed "
                                     "out after 200 ms: expected >= 1, saw 0"),
            "timeout: rc %d, '%s'", rc, err);
    T_CHECK(dt >= 0.19 && dt < 2.0, "timeout took %.3f s", dt);
    T_CHECK(!strcmp(rt_world_rank_error(w, 0),
                    "rank 0: aborted because rank 1 failed: wait on signal "
                    "ready[0] timed out after 200 ms: expected >= 1, saw 0"),
            "rank 0 after timeout: '%s'", rt_world_rank_error(w, 0));
    T_CHECK(rt_world_timeout_ms(w) == 200, "timeout_ms");
    eq = 1;
    rc = rt_world_run(w, f_timeout, &eq, err, sizeof err);
    T_CHECK(rc == -1 && !strcmp(err, "rank 1: wait on signal at heap offset 0 "
                                     "timed out after 200 ms: expected == 5, "
                                     "saw 3"),
            "timeout ==: rc %d, '%s'", rc, err);
    rt_world_destroy(w);
    unsetenv("BLKC_WAIT_TIMEOUT_MS");
}

/* ------------------------------------------------------------ failing */
static int f_fail(RtRank *r, void *arg)
{
    (void)arg;
    size_t off;
    if (rt_sym_alloc(r, 64, &off))
        return -1;
    float buf[100] = {0};
    switch (rt_rank_id(r)) {
    case 2:
        usleep(50000);
        return rt_rank_fail(r, "boom %d", 7);
    case 0:
        return rt_all_reduce(r, buf, 100, DT_F32, RT_RED_SUM);
    case 1:
        return rt_signal_wait(r, rt_sym_ptr(r, off, 1), RT_WAIT_GE, 1, "s");
    default:
        for (;;)
            if (rt_barrier(r))
                return -1;
    }
}

static int f_ret3(RtRank *r, void *arg)
{
    (void)arg;
    if (rt_rank_id(r) == 1)
        return 3;
    return rt_barrier(r);
}

static void test_failing_rank(void)
{
    char err[512];
    RtWorld *w;
    double t0 = t_now();
    int rc = run(4, f_fail, NULL, err, sizeof err, &w); /* timeout 5000 */
    double dt = elapsed_since(t0);
    T_CHECK(rc == -1 && !strcmp(err, "rank 2: boom 7"), "fail: rc %d, '%s'",
            rc, err);
    T_CHECK(dt < 1.0, "failure propagated in %.3f s", dt);
    for (int q = 0; q < 4; q++) {
        if (q == 2)
            continue;
        char want[128];
        snprintf(want, sizeof want,
                 "rank %d: aborted because rank 2 failed: boom 7", q);
        T_CHECK(!strcmp(rt_world_rank_error(w, q), want), "rank %d: '%s'", q,
                rt_world_rank_error(w, q));
    }
    rt_world_destroy(w);

    rc = run(2, f_ret3, NULL, err, sizeof err, &w);
    T_CHECK(rc == -1 && !strcmp(err, "rank 1: returned 3"), "ret3: '%s'", err);
    T_CHECK(!strcmp(rt_world_rank_error(w, 0),
                    "rank 0: aborted because rank 1 failed: returned 3"),
            "ret3 rank 0: '%s'", rt_world_rank_error(w, 0));
    rt_world_destroy(w);
}

/* ------------------------------------------------------------ early */
static int f_early(RtRank *r, void *arg)
{
    int in_allreduce = *(int *)arg;
    if (rt_barrier(r))
        return -1;
    if (rt_rank_id(r) == 1)
        return 0;
    int64_t v[3] = {1, 2, 3};
    return in_allreduce ? rt_all_reduce(r, v, 3, DT_I64, RT_RED_MAX)
                        : rt_barrier(r);
}

/* every rank passes 300 barriers, rank 1 returns at once after the last
 * one: nobody may mistake that for leaving early */
static int f_early_ok(RtRank *r, void *arg)
{
    (void)arg;
    for (int k = 0; k < 300; k++)
        if (rt_barrier(r))
            return -1;
    if (rt_rank_id(r) == 1)
        return 0;
    usleep(1000);
    return 0;
}

static void test_early_return(void)
{
    char err[512];
    for (int ar = 0; ar < 2; ar++) {
        double t0 = t_now();
        int rc = run(3, f_early, &ar, err, sizeof err, NULL);
        double dt = elapsed_since(t0);
        char want0[128], want2[128];
        const char *what = ar ? "all_reduce" : "barrier";
        snprintf(want0, sizeof want0,
                 "rank 0: rank 1 left the run while rank 0 waited in %s", what);
        snprintf(want2, sizeof want2,
                 "rank 2: rank 1 left the run while rank 2 waited in %s", what);
        T_CHECK(rc == -1 && (!strcmp(err, want0) || !strcmp(err, want2)),
                "early return (%s): rc %d, '%s'", what, rc, err);
        T_CHECK(dt < 1.0, "early return detected in %.3f s", dt);
    }
    for (int k = 0; k < 5; k++) {
        int rc = run(4, f_early_ok, NULL, err, sizeof err, NULL);
        T_CHECK(rc == 0, "returning after the last barrier: '%s'", err);
    }
}

/* ------------------------------------------------------------ missing */
/* ranks 1 and 3 stay away (busy, checking the abort flag) while 0 and 2
 * wait in a barrier or an all_reduce: the timeout names both */
static int f_missing(RtRank *r, void *arg)
{
    int in_allreduce = *(int *)arg, me = rt_rank_id(r);
    if (me % 2) {
        for (int k = 0; k < 300; k++) { /* at most 3 s */
            if (rt_rank_failed(r))
                return -1;
            usleep(10000);
        }
        return rt_barrier(r);
    }
    int64_t v[3] = {1, 2, 3};
    return in_allreduce ? rt_all_reduce(r, v, 3, DT_I64, RT_RED_SUM)
                        : rt_barrier(r);
}

static void test_missing_ranks(void)
{
    char err[512];
    setenv("BLKC_COLL_TIMEOUT_MS", "200", 1);
    for (int ar = 0; ar < 2; ar++) {
        double t0 = t_now();
        int rc = run(4, f_missing, &ar, err, sizeof err, NULL);
        double dt = elapsed_since(t0);
        const char *what = ar ? "all_reduce" : "barrier";
        char want0[160], want2[160];
        snprintf(want0, sizeof want0, "rank 0: %s timed out after 200 ms: "
                 "rank 0 waits, ranks 1, 3 did not arrive", what);
        snprintf(want2, sizeof want2, "rank 2: %s timed out after 200 ms: "
                 "rank 2 waits, ranks 1, 3 did not arrive", what);
        T_CHECK(rc == -1 && (!strcmp(err, want0) || !strcmp(err, want2)),
                "missing ranks (%s): rc %d, '%s'", what, rc, err);
        T_CHECK(dt >= 0.19 && dt < 2.0, "missing ranks (%s) took %.3f s",
                what, dt);
    }
    unsetenv("BLKC_COLL_TIMEOUT_MS");
}

/* ------------------------------------------------------------ mismatch */
static int f_mismatch(RtRank *r, void *arg)
{
    int kind = *(int *)arg, me = rt_rank_id(r);
    float buf[16] = {0};
    size_t sc[2] = {1, 2};
    size_t rc[2] = {me == 1 ? 3 : 1, me == 1 ? 2 : 1};
    switch (kind) {
    case 0:
        return me == 0 ? rt_all_reduce(r, buf, 10, DT_F32, RT_RED_SUM)
                       : rt_barrier(r);
    case 1:
        return rt_all_reduce(r, buf, me == 0 ? 10 : 12, DT_F32, RT_RED_SUM);
    case 2:
        return rt_all_to_all(r, buf, rc, buf + 8, sc, DT_F32);
    case 3:
        return rt_broadcast(r, buf, 4, DT_F32, 5);
    case 5: { /* the ranks split 4 elements differently */
        size_t split[2] = {me == 0 ? 2 : 3, me == 0 ? 2 : 1};
        return rt_reduce_scatter(r, buf, buf + 8, 4, split, DT_F32, RT_RED_SUM);
    }
    default:
        return rt_all_reduce(r, buf, 4, DT_F32, 7);
    }
}

static void test_mismatch(void)
{
    static const char *const want[] = {
        "collective mismatch: rank 0 called all_reduce(count 10, f32, sum) "
        "but rank 1 called barrier()",
        "collective mismatch: rank 0 called all_reduce(count 10, f32, sum) "
        "but rank 1 called all_reduce(count 12, f32, sum)",
        "rank 1: all_to_all: rank 0 sends 2 elements to rank 1 but rank 1 "
        "expects 3",
        "broadcast: root 5 is not a rank of this world of 2",
        "all_reduce: invalid reduction op 7",
        "reduce_scatter: rank 0 gives rank 0 2 elements but rank 1 gives it 3",
    };
    for (int k = 0; k < 6; k++) {
        char err[512];
        int rc = run(2, f_mismatch, &k, err, sizeof err, NULL);
        T_CHECK(rc == -1 && strstr(err, want[k]), "mismatch %d: rc %d, '%s'",
                k, rc, err);
    }
    /* the count checks read the peers' arrays (their stack frames here):
     * no rank may fail and leave before every rank has read them; repeated
     * for ASan / TSan to catch the window (rank_coll.c a2a_counts_agree) */
    for (int i = 0; i < 20; i++)
        for (int k = 2; k <= 5; k += 3) {
            char err[512];
            int rc = run(2, f_mismatch, &k, err, sizeof err, NULL);
            T_CHECK(rc == -1 && strstr(err, want[k]), "mismatch %d, round %d: rc %d, '%s'",
                    k, i, rc, err);
        }
}

/* ------------------------------------------------------------ reuse */
static int f_ok(RtRank *r, void *arg)
{
    (void)arg;
    T_CHECK(rt_rank_check(r) == 0 && !rt_rank_failed(r), "fresh run");
    int v = rt_rank_id(r) + 1;
    if (rt_all_reduce(r, &v, 1, DT_I32, RT_RED_SUM))
        return -1;
    int N = rt_rank_size(r);
    T_CHECK(v == N * (N + 1) / 2, "sum %d", v);
    return 0;
}

static void test_reuse(void)
{
    char err[512];
    RtWorld *w;
    int rc = run(3, f_ret3, NULL, err, sizeof err, &w);
    T_CHECK(rc == -1, "ret3 on 3 ranks fails");
    rc = rt_world_run(w, f_ok, NULL, err, sizeof err);
    T_CHECK(rc == 0 && rt_world_rank_error(w, 1)[0] == 0,
            "a run after a failed one: '%s'", err);
    rt_world_destroy(w);
}

/* ------------------------------------------------------------ plain C */
static void test_wait_cell(void)
{
    volatile uint64_t cell = 0;
    volatile int abort_flag = 0;
    T_CHECK(rt_signal_wait_cell(&cell, RT_WAIT_GE, 1, 0, &abort_flag) == -1,
            "timeout 0");
    double t0 = t_now();
    T_CHECK(rt_signal_wait_cell(&cell, RT_WAIT_GE, 1, 50, NULL) == -1,
            "timeout 50");
    double dt = elapsed_since(t0);
    T_CHECK(dt >= 0.045 && dt < 1.0, "timeout 50 took %.3f s", dt);
    abort_flag = 1;
    T_CHECK(rt_signal_wait_cell(&cell, RT_WAIT_GE, 1, -1, &abort_flag) == -2,
            "abort");
    rt_signal_notify_cell(&cell, 5, RT_SIG_ADD);
    rt_signal_notify_cell(&cell, 2, RT_SIG_ADD);
    T_CHECK(rt_signal_wait_cell(&cell, RT_WAIT_EQ, 7, 0, NULL) == 0, "== 7");
    rt_signal_notify_cell(&cell, 1, RT_SIG_SET);
    T_CHECK(rt_signal_wait_cell(&cell, RT_WAIT_GE, 1, 0, NULL) == 0, ">= 1");
}

/* ------------------------------------------------------------ end */
static int release_spin; /* atomic: the spinning ranks may return */

/* ranks 1 (and 3) compute on, looking at nothing of the world, until
 * released (at most 10 s); the others return at once */
static int f_end(RtRank *r, void *arg)
{
    int two = *(int *)arg, me = rt_rank_id(r);
    if (me == 1 || (two && me == 3)) {
        double t0 = t_now();
        while (!__atomic_load_n(&release_spin, __ATOMIC_ACQUIRE) &&
               t_now() - t0 < 10.0)
            usleep(1000);
    }
    return 0;
}

/* rank 1 returns 100 ms (arg 0) after the others: inside the deadline; or
 * it waits 1 s on a signal nobody sets (arg 1): its own timeout is the
 * message, not the end of the run's */
static int f_end_late(RtRank *r, void *arg)
{
    if (rt_rank_id(r) != 1)
        return 0;
    if (*(int *)arg == 0) {
        usleep(100000);
        return 0;
    }
    uint64_t cell = 0;
    return rt_signal_wait(r, &cell, RT_WAIT_GE, 1, "never[0]");
}

static void test_end_of_run(void)
{
    char err[512];
    setenv("BLKC_COLL_TIMEOUT_MS", "200", 1);
    for (int two = 0; two < 2; two++) {
        int N = two ? 4 : 2, behind = rt_ranks_left_behind();
        RtWorld *w = NULL;
        setenv("BLKC_WAIT_TIMEOUT_MS", "200", 1);
        __atomic_store_n(&release_spin, 0, __ATOMIC_RELEASE);
        double t0 = t_now();
        static const int arg[2] = {0, 1}; /* not the loop's two: a rank
                                             left behind may still read it */
        int rc = run(N, f_end, (void *)&arg[two], err, sizeof err, &w);
        double dt = elapsed_since(t0);
        const char *miss = two ? "ranks 1, 3" : "rank 1";
        char want0[160], want2[160];
        snprintf(want0, sizeof want0, "rank 0: the end of the run timed out "
                 "after 200 ms: rank 0 waits, %s did not arrive", miss);
        snprintf(want2, sizeof want2, "rank 2: the end of the run timed out "
                 "after 200 ms: rank 2 waits, %s did not arrive", miss);
        T_CHECK(rc == -1 && (!strcmp(err, want0) || (two && !strcmp(err, want2))),
                "end of run (%d ranks): rc %d, '%s'", N, rc, err);
        /* the deadline, then 200 ms (the signal-wait deadline) + 1 s for
         * the failed ranks to return */
        T_CHECK(dt >= 0.19 && dt < 2.5, "end of run (%d ranks) took %.3f s",
                N, dt);
        T_CHECK(rt_ranks_left_behind() == behind + (two ? 2 : 1),
                "left behind: %d, was %d", rt_ranks_left_behind(), behind);
        rc = rt_world_run(w, f_end, &two, err, sizeof err);
        T_CHECK(rc == -1 && strstr(err, "left behind by an earlier run"),
                "a world with ranks left behind runs again: rc %d, '%s'", rc, err);
        rt_world_destroy(w); /* kept: the spinning ranks still use it */
        __atomic_store_n(&release_spin, 1, __ATOMIC_RELEASE);
        unsetenv("BLKC_WAIT_TIMEOUT_MS");
        usleep(20000);
    }
    for (int k = 0; k < 2; k++) {
        setenv("BLKC_WAIT_TIMEOUT_MS", "1000", 1);
        double t0 = t_now();
        int rc = run(3, f_end_late, &k, err, sizeof err, NULL);
        double dt = elapsed_since(t0);
        if (k == 0)
            T_CHECK(rc == 0, "a rank 100 ms late at the end: rc %d, '%s'", rc, err);
        else
            T_CHECK(rc == -1 && !strcmp(err, "rank 1: wait on signal never[0] "
                                        "timed out after 1000 ms: expected >= 1, saw 0"),
                    "a rank in a signal wait at the end: rc %d, '%s'", rc, err);
        T_CHECK(dt < 2.5, "end of run %d took %.3f s", k, dt);
        unsetenv("BLKC_WAIT_TIMEOUT_MS");
    }
    unsetenv("BLKC_COLL_TIMEOUT_MS");
}

int main(void)
{
    unsetenv("BLKC_WAIT_TIMEOUT_MS");
    test_wait_cell();
    test_timeout();
    test_failing_rank();
    test_early_return();
    test_missing_ranks();
    test_mismatch();
    test_reuse();
    test_end_of_run(); /* last: it leaves rank threads behind */
    return t_done("test_rank_faults");
}
