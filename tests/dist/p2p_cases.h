/* p2p_cases.h — the exchange { } cases of tests/dist/p2p.blk with their
 * references, shared by t_dist_p2p.c (local ranks: every rank checked)
 * and tests/mpi/t_mpi_dist.c (one rank per process: pc_self set, only it
 * is checked; every process builds every rank's inputs the same way).
 * Include after dist_test.h with `static DtMod m;` defined. */
#ifndef BLKC_TESTS_P2P_CASES_H
#define BLKC_TESTS_P2P_CASES_H

static int pc_self = -1; /* -1: check every rank */
#define PC_MINE(r) (pc_self < 0 || (r) == pc_self)

static void ring(int W, int n)
{
    DtArgs A;
    float *a[DT_MAXR], *b[DT_MAXR];
    dt_args_init(&A, &m, dt_entry(&m, "ring"), W);
    for (int r = 0; r < W; r++) {
        a[r] = DT_T(&A, r, "a", n);
        b[r] = DT_T(&A, r, "b", n);
        t_gen(a[r], (size_t)n, DT_F32, r, 3);
    }
    if (dt_run_ok(&A, "ring") == 0)
        for (int r = 0; r < W; r++)
            if (PC_MINE(r))
                T_CHECK(memcmp(b[r], a[(r + W - 1) % W], (size_t)n * 4) == 0,
                        "ring W=%d n=%d: rank %d's b is not rank %d's a", W, n,
                        r, (r + W - 1) % W);
    dt_args_free(&A);
}

static void both(int W, int n, int mm)
{
    DtArgs A;
    int32_t *x[DT_MAXR], *lo[DT_MAXR], *hi[DT_MAXR];
    double *y[DT_MAXR], *me[DT_MAXR];
    dt_args_init(&A, &m, dt_entry(&m, "both"), W);
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", n);
        lo[r] = DT_T(&A, r, "lo", n);
        hi[r] = DT_T(&A, r, "hi", n);
        y[r] = DT_T(&A, r, "y", mm);
        me[r] = DT_T(&A, r, "me", mm);
        t_gen(x[r], (size_t)n, DT_I32, r, 5);
        t_gen(y[r], (size_t)mm, DT_F64, r, 6);
    }
    if (dt_run_ok(&A, "both") == 0)
        for (int r = 0; r < W; r++) {
            if (!PC_MINE(r))
                continue;
            int p = (r + W - 1) % W, q = (r + 1) % W;
            T_CHECK(memcmp(lo[r], x[p], (size_t)n * 4) == 0 &&
                        memcmp(hi[r], x[q], (size_t)n * 4) == 0 &&
                        memcmp(me[r], y[r], (size_t)mm * 8) == 0,
                    "both W=%d n=%d m=%d: rank %d wrong", W, n, mm, r);
        }
    dt_args_free(&A);
}

static void rotate(int W, int n, int s)
{
    DtArgs A;
    float *b[DT_MAXR], *want[DT_MAXR];
    dt_args_init(&A, &m, dt_entry(&m, "rotate"), W);
    for (int r = 0; r < W; r++) {
        b[r] = DT_T(&A, r, "b", n);
        t_gen(b[r], (size_t)n, DT_F32, r, 8);
        want[r] = t_xmalloc((size_t)n * 4);
        dt_int(&A, r, "s", s);
    }
    for (int r = 0; r < W; r++)
        memcpy(want[r], b[((r - s) % W + W) % W], (size_t)n * 4);
    if (dt_run_ok(&A, "rotate") == 0)
        for (int r = 0; r < W; r++)
            if (PC_MINE(r))
                T_CHECK(memcmp(b[r], want[r], (size_t)n * 4) == 0,
                        "rotate W=%d n=%d s=%d: rank %d wrong", W, n, s, r);
    for (int r = 0; r < W; r++)
        free(want[r]);
    dt_args_free(&A);
}

static void star(int W, int n)
{
    DtArgs A;
    float *a[DT_MAXR], *g[DT_MAXR];
    dt_args_init(&A, &m, dt_entry(&m, "star"), W);
    for (int r = 0; r < W; r++) {
        a[r] = DT_T(&A, r, "a", n);
        g[r] = DT_T(&A, r, "g", n);
        t_gen(a[r], (size_t)n, DT_F32, r, 9);
        g[r][0] = -7.0f; /* stays on ranks > 0 (and on rank 0 when W == 1) */
    }
    if (dt_run_ok(&A, "star") == 0)
        for (int r = 0; r < W; r++) {
            if (!PC_MINE(r))
                continue;
            int ok = r == 0 && W > 1 ? memcmp(g[0], a[W - 1], (size_t)n * 4) == 0
                                     : g[r][0] == -7.0f;
            T_CHECK(ok, "star W=%d n=%d: rank %d's g wrong", W, n, r);
        }
    dt_args_free(&A);
}

#endif
