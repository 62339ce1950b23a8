/* groups_cases.h — the group(color, key) cases of tests/dist/groups.blk
 * with their references, shared by t_dist_groups.c (local ranks, every
 * rank checked) and tests/mpi/t_mpi_dist.c (pc_self set: one rank per
 * process, only it checked). Include after dist_test.h with
 * `static DtMod m;` defined. */
#ifndef BLKC_TESTS_GROUPS_CASES_H
#define BLKC_TESTS_GROUPS_CASES_H

#ifndef PC_MINE
static int pc_self = -1; /* -1: check every rank */
#define PC_MINE(r) (pc_self < 0 || (r) == pc_self)
#endif

/* Members of rank r's group in group order (key -q: descending q), their
 * count, and r's place. */
static int members(int W, int C, int r, int rev, int *mem, int *me)
{
    int n = 0;
    for (int k = 0; k < W; k++) {
        int q = rev ? W - 1 - k : k;
        if (q % C == r % C) {
            if (q == r)
                *me = n;
            mem[n++] = q;
        }
    }
    return n;
}

static void g_allreduce(int W, int C, int n)
{
    DtArgs A;
    int32_t *info[DT_MAXR];
    float *b[DT_MAXR], *in[DT_MAXR];
    dt_args_init(&A, &m, dt_entry(&m, "g_allreduce"), W);
    for (int r = 0; r < W; r++) {
        info[r] = DT_T(&A, r, "info", 2);
        b[r] = DT_T(&A, r, "b", n);
        dt_fill(b[r], (size_t)n, r, 1);
        in[r] = t_xmalloc((size_t)n * 4);
        memcpy(in[r], b[r], (size_t)n * 4);
        dt_int(&A, r, "C", C);
    }
    if (dt_run_ok(&A, "g_allreduce") == 0)
        for (int r = 0; r < W; r++) {
            if (!PC_MINE(r))
                continue;
            int mem[DT_MAXR], me = -1, G = members(W, C, r, 1, mem, &me), bad = 0;
            for (int i = 0; i < n; i++) {
                float s = in[mem[0]][i];
                for (int k = 1; k < G; k++)
                    s += in[mem[k]][i];
                bad += memcmp(&s, &b[r][i], 4) != 0;
            }
            T_CHECK(info[r][0] == me && info[r][1] == G && bad == 0,
                    "g_allreduce W=%d C=%d n=%d: rank %d: rank(g) %d world(g) %d (want %d %d), %d wrong",
                    W, C, n, r, info[r][0], info[r][1], me, G, bad);
        }
    for (int r = 0; r < W; r++)
        free(in[r]);
    dt_args_free(&A);
}

static void g_coll(int W, int C, int S, int root)
{
    DtArgs A;
    int G0 = (W + C - 1) / C; /* groups differ in size when C does not divide W */
    (void)G0;
    float *ag[DT_MAXR], *src[DT_MAXR], *gat[DT_MAXR], *sca[DT_MAXR], *rs[DT_MAXR];
    float *a2a[DT_MAXR], *a2b[DT_MAXR], *a2in[DT_MAXR];
    int64_t *bc[DT_MAXR], *bcin[DT_MAXR];
    int32_t *red[DT_MAXR], *redin[DT_MAXR];
    int N = 9;
    dt_args_init(&A, &m, dt_entry(&m, "g_coll"), W);
    for (int r = 0; r < W; r++) {
        int mem[DT_MAXR], me = -1, G = members(W, C, r, 1, mem, &me);
        int D = G * S;
        ag[r] = DT_T(&A, r, "ag", D);
        src[r] = DT_T(&A, r, "src", S);
        bc[r] = DT_T(&A, r, "bc", N);
        red[r] = DT_T(&A, r, "red", N);
        gat[r] = DT_T(&A, r, "gat", D);
        sca[r] = DT_T(&A, r, "sca", S);
        rs[r] = DT_T(&A, r, "rs", S);
        a2a[r] = DT_T(&A, r, "a2a", D);
        a2b[r] = DT_T(&A, r, "a2b", D);
        dt_fill(src[r], (size_t)S, r, 2);
        dt_fill(a2a[r], (size_t)D, r, 3);
        t_gen(bc[r], (size_t)N, DT_I64, r, 4);
        t_gen(red[r], (size_t)N, DT_I32, r, 5);
        a2in[r] = t_xmalloc((size_t)D * 4);
        memcpy(a2in[r], a2a[r], (size_t)D * 4);
        bcin[r] = t_xmalloc((size_t)N * 8);
        memcpy(bcin[r], bc[r], (size_t)N * 8);
        redin[r] = t_xmalloc((size_t)N * 4);
        memcpy(redin[r], red[r], (size_t)N * 4);
        dt_int(&A, r, "C", C);
        dt_int(&A, r, "root", root % G);
    }
    if (dt_run_ok(&A, "g_coll") == 0)
        for (int r = 0; r < W; r++) {
            if (!PC_MINE(r))
                continue;
            int mem[DT_MAXR], me = -1, G = members(W, C, r, 1, mem, &me), bad = 0;
            int rt = root % G, rw = mem[rt];
            for (int i = 0; i < G; i++) {
                bad += memcmp(ag[r] + i * S, src[mem[i]], (size_t)S * 4) != 0;
                if (me == rt)
                    bad += memcmp(gat[r] + i * S, src[mem[i]], (size_t)S * 4) != 0;
                bad += memcmp(a2b[r] + i * S, a2in[mem[i]] + me * S, (size_t)S * 4) != 0;
            }
            bad += memcmp(bc[r], bcin[rw], (size_t)N * 8) != 0;
            for (int i = 0; i < N; i++) {
                int32_t want = redin[r][i];
                if (me == rt) {
                    want = redin[mem[0]][i];
                    for (int k = 1; k < G; k++)
                        want = redin[mem[k]][i] > want ? redin[mem[k]][i] : want;
                }
                bad += red[r][i] != want;
            }
            bad += memcmp(sca[r], src[r], (size_t)S * 4) != 0;
            for (int i = 0; i < S; i++) {
                float s = src[r][i]; /* every member's ag block me is src[r] */
                for (int k = 1; k < G; k++)
                    s += src[r][i];
                bad += memcmp(&s, &rs[r][i], 4) != 0;
            }
            T_CHECK(bad == 0, "g_coll W=%d C=%d S=%d root=%d: rank %d: %d wrong", W, C,
                    S, root, r, bad);
        }
    for (int r = 0; r < W; r++) {
        free(a2in[r]);
        free(bcin[r]);
        free(redin[r]);
    }
    dt_args_free(&A);
}

static void g_mixed(int W, int C, int n)
{
    DtArgs A;
    float *b[DT_MAXR], *in[DT_MAXR];
    dt_args_init(&A, &m, dt_entry(&m, "g_mixed"), W);
    for (int r = 0; r < W; r++) {
        b[r] = DT_T(&A, r, "b", n);
        dt_fill(b[r], (size_t)n, r, 6);
        in[r] = t_xmalloc((size_t)n * 4);
        memcpy(in[r], b[r], (size_t)n * 4);
        dt_int(&A, r, "C", C);
    }
    if (dt_run_ok(&A, "g_mixed") == 0)
        for (int r = 0; r < W; r++) {
            if (!PC_MINE(r))
                continue;
            int mem[DT_MAXR], me = -1, G = members(W, C, r, 0, mem, &me), bad = 0;
            for (int i = 0; i < n; i++) {
                float want = in[mem[0]][i];
                if ((r % C) % 2 == 0)
                    for (int k = 1; k < G; k++)
                        want = in[mem[k]][i] > want ? in[mem[k]][i] : want;
                bad += memcmp(&want, &b[r][i], 4) != 0;
            }
            T_CHECK(bad == 0, "g_mixed W=%d C=%d: rank %d: %d wrong", W, C, r, bad);
        }
    for (int r = 0; r < W; r++)
        free(in[r]);
    dt_args_free(&A);
}

static void g_then_world(int W, int C, int n)
{
    DtArgs A;
    float *b[DT_MAXR], *w[DT_MAXR], *bi[DT_MAXR], *wi[DT_MAXR];
    dt_args_init(&A, &m, dt_entry(&m, "g_then_world"), W);
    for (int r = 0; r < W; r++) {
        b[r] = DT_T(&A, r, "b", n);
        w[r] = DT_T(&A, r, "w", n);
        dt_fill(b[r], (size_t)n, r, 7);
        dt_fill(w[r], (size_t)n, r, 8);
        bi[r] = t_xmalloc((size_t)n * 4);
        wi[r] = t_xmalloc((size_t)n * 4);
        memcpy(bi[r], b[r], (size_t)n * 4);
        memcpy(wi[r], w[r], (size_t)n * 4);
        dt_int(&A, r, "C", C);
    }
    if (dt_run_ok(&A, "g_then_world") == 0)
        for (int r = 0; r < W; r++) {
            if (!PC_MINE(r))
                continue;
            int mem[DT_MAXR], me = -1, G = members(W, C, r, 0, mem, &me), bad = 0;
            for (int i = 0; i < n; i++) {
                float s = bi[mem[0]][i], t = wi[0][i];
                for (int k = 1; k < G; k++)
                    s += bi[mem[k]][i];
                for (int q = 1; q < W; q++)
                    t += wi[q][i];
                bad += memcmp(&s, &b[r][i], 4) != 0;
                bad += memcmp(&t, &w[r][i], 4) != 0;
            }
            T_CHECK(bad == 0, "g_then_world W=%d C=%d: rank %d: %d wrong", W, C, r, bad);
        }
    for (int r = 0; r < W; r++) {
        free(bi[r]);
        free(wi[r]);
    }
    dt_args_free(&A);
}

#endif
