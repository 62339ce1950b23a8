/* coll_cases.h — the collective and copy cases of tests/dist/coll.blk,
 * shared by t_dist_coll.c (local ranks: every rank's results checked) and
 * tests/mpi/t_mpi_dist.c (one rank per process: only this process's rank
 * checked, dc_self). Each case fills the arguments of all W ranks, runs the
 * entry and compares bitwise with references computed in C. Include it
 * once, after dist_test.h, with `static DtMod m` holding coll.blk. */
#ifndef BLKC_TESTS_COLL_CASES_H
#define BLKC_TESTS_COLL_CASES_H

/* the rank whose results are checked, or -1: every rank */
static int dc_self = -1;
#define DC_LO (dc_self < 0 ? 0 : dc_self)
#define DC_HI(W) (dc_self < 0 ? (W) : dc_self + 1)

static int dtype_of(int fi, const char *p)
{
    return m.ir->funcs[fi]->params[dt_param(&m, fi, p)].dtype;
}

static void all_reduce(const char *entry, int op, int W, int N)
{
    int fi = dt_entry(&m, entry), dt = dtype_of(fi, "b");
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *b[DT_MAXR];
    for (int r = 0; r < W; r++) {
        b[r] = DT_T(&A, r, "b", N);
        t_gen(b[r], (size_t)N, dt, r, N);
    }
    if (dt_run_ok(&A, entry) == 0) {
        void *ref = t_xmalloc(t_es(dt) * (size_t)N);
        t_ref_reduce(ref, 0, (size_t)N, dt, op, W, N);
        for (int r = DC_LO; r < DC_HI(W); r++)
            t_same(b[r], ref, (size_t)N, dt, entry, r);
        free(ref);
    }
    dt_args_free(&A);
}

static void all_gather(const char *entry, int W, int S)
{
    int fi = dt_entry(&m, entry), dt = dtype_of(fi, "src");
    size_t es = t_es(dt);
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *d[DT_MAXR], *s[DT_MAXR];
    for (int r = 0; r < W; r++) {
        s[r] = DT_T(&A, r, "src", S);
        d[r] = DT_T(&A, r, "dst", (int64_t)S * W);
        t_gen(s[r], (size_t)S, dt, r, 3);
    }
    if (dt_run_ok(&A, entry) == 0)
        for (int r = DC_LO; r < DC_HI(W); r++)
            for (int q = 0; q < W; q++)
                t_same((char *)d[r] + es * (size_t)S * q, s[q], (size_t)S, dt, entry, r);
    dt_args_free(&A);
}

/* Uneven: rank q gets total/W elements, one more for the first total%W. */
static void reduce_scatter(const char *entry, int op, int W, int S)
{
    int fi = dt_entry(&m, entry), dt = dtype_of(fi, "src");
    size_t es = t_es(dt);
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *d[DT_MAXR], *s[DT_MAXR];
    size_t cnt[DT_MAXR], off[DT_MAXR], o = 0;
    for (int r = 0; r < W; r++) {
        cnt[r] = (size_t)(S / W + (r < S % W));
        off[r] = o;
        o += cnt[r];
        s[r] = DT_T(&A, r, "src", S);
        d[r] = DT_T(&A, r, "dst", (int64_t)cnt[r]);
        t_gen(s[r], (size_t)S, dt, r, 5);
    }
    if (dt_run_ok(&A, entry) == 0) {
        void *ref = t_xmalloc(es * (size_t)S);
        t_ref_reduce(ref, 0, (size_t)S, dt, op, W, 5);
        for (int r = DC_LO; r < DC_HI(W); r++)
            t_same(d[r], (char *)ref + es * off[r], cnt[r], dt, entry, r);
        free(ref);
    }
    dt_args_free(&A);
}

static void all_to_all(const char *entry, int W, int chunk)
{
    int fi = dt_entry(&m, entry), dt = dtype_of(fi, "src");
    size_t es = t_es(dt), S = (size_t)chunk * W;
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *d[DT_MAXR], *s[DT_MAXR];
    for (int r = 0; r < W; r++) {
        s[r] = DT_T(&A, r, "src", (int64_t)S);
        d[r] = DT_T(&A, r, "dst", (int64_t)S);
        t_gen(s[r], S, dt, r, 7);
    }
    if (dt_run_ok(&A, entry) == 0)
        for (int r = DC_LO; r < DC_HI(W); r++)
            for (int q = 0; q < W; q++)
                t_same((char *)d[r] + es * (size_t)chunk * q,
                       (char *)s[q] + es * (size_t)chunk * r, (size_t)chunk, dt, entry, r);
    dt_args_free(&A);
}

static void broadcast(const char *entry, int W, int N, int root)
{
    int fi = dt_entry(&m, entry), dt = dtype_of(fi, "b");
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *b[DT_MAXR], *want = t_xmalloc(t_es(dt) * (size_t)N);
    t_gen(want, (size_t)N, dt, root, 9);
    for (int r = 0; r < W; r++) {
        b[r] = DT_T(&A, r, "b", N);
        t_gen(b[r], (size_t)N, dt, r, 9);
        dt_int(&A, r, "root", root);
    }
    if (dt_run_ok(&A, entry) == 0)
        for (int r = DC_LO; r < DC_HI(W); r++)
            t_same(b[r], want, (size_t)N, dt, entry, r);
    free(want);
    dt_args_free(&A);
}

/* reduce to root: root's b is the reduction, the others' are unchanged */
static void reduce_root(const char *entry, int op, int W, int N, int root)
{
    int fi = dt_entry(&m, entry), dt = dtype_of(fi, "b");
    size_t es = t_es(dt);
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *b[DT_MAXR], *ref = t_xmalloc(es * (size_t)N), *mine = t_xmalloc(es * (size_t)N);
    for (int r = 0; r < W; r++) {
        b[r] = DT_T(&A, r, "b", N);
        t_gen(b[r], (size_t)N, dt, r, 13);
        dt_int(&A, r, "root", root);
    }
    t_ref_reduce(ref, 0, (size_t)N, dt, op, W, 13);
    if (dt_run_ok(&A, entry) == 0)
        for (int r = DC_LO; r < DC_HI(W); r++) {
            t_gen(mine, (size_t)N, dt, r, 13);
            t_same(b[r], r == root ? ref : mine, (size_t)N, dt, entry, r);
        }
    free(ref);
    free(mine);
    dt_args_free(&A);
}

/* gather to root (dst of W x S; the others' dst stay as they were) and
 * scatter from root (src of W x S; rank r gets block r) */
static void gather_scatter(const char *entry, bool gather, int W, int S, int root)
{
    int fi = dt_entry(&m, entry), dt = dtype_of(fi, "src");
    size_t es = t_es(dt), whole = (size_t)S * (size_t)W;
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *d[DT_MAXR], *s[DT_MAXR], *tmp = t_xmalloc(es * whole + 1);
    for (int r = 0; r < W; r++) {
        s[r] = DT_T(&A, r, "src", gather ? S : (int64_t)whole);
        d[r] = DT_T(&A, r, "dst", gather ? (int64_t)whole : S);
        t_gen(s[r], gather ? (size_t)S : whole, dt, r, 17);
        t_gen(d[r], gather ? whole : (size_t)S, dt, r + 100, 19);
        dt_int(&A, r, "root", root);
    }
    if (dt_run_ok(&A, entry) == 0)
        for (int r = DC_LO; r < DC_HI(W); r++) {
            if (gather && r == root) {
                for (int q = 0; q < W; q++) {
                    t_gen(tmp, (size_t)S, dt, q, 17);
                    t_same((char *)d[r] + es * (size_t)S * (size_t)q, tmp, (size_t)S, dt, entry, r);
                }
            } else if (gather) {
                t_gen(tmp, whole, dt, r + 100, 19); /* untouched */
                t_same(d[r], tmp, whole, dt, entry, r);
            } else {
                t_gen(tmp, whole, dt, root, 17);
                t_same(d[r], (char *)tmp + es * (size_t)S * (size_t)r, (size_t)S, dt, entry, r);
            }
        }
    free(tmp);
    dt_args_free(&A);
}

/* ar_sym_2d (a symmetric buffer), ring_pull, ring_push (a peer copy with a
 * signal, waited for in a kernel), f32. */
static void sym_ring_copies(int W, int R, int C)
{
    /* ar_sym_2d: y = sum of x over ranks */
    int fi = dt_entry(&m, "ar_sym_2d");
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    float *x[DT_MAXR], *y[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", R, C);
        y[r] = DT_T(&A, r, "y", R, C);
        t_gen(x[r], (size_t)R * C, DT_F32, r, 11);
    }
    if (dt_run_ok(&A, "ar_sym_2d") == 0) {
        float *ref = t_xmalloc(sizeof(float) * (size_t)R * C);
        t_ref_reduce(ref, 0, (size_t)R * C, DT_F32, RT_RED_SUM, W, 11);
        for (int r = DC_LO; r < DC_HI(W); r++)
            t_same(y[r], ref, (size_t)R * C, DT_F32, "ar_sym_2d", r);
        free(ref);
    }
    dt_args_free(&A);
    /* ring_pull / ring_push: y = x of the previous rank */
    static const char *const ring[] = {"ring_pull", "ring_push"};
    for (int k = 0; k < 2; k++) {
        int N = R * C;
        fi = dt_entry(&m, ring[k]);
        dt_args_init(&A, &m, fi, W);
        for (int r = 0; r < W; r++) {
            x[r] = DT_T(&A, r, "x", N);
            y[r] = DT_T(&A, r, "y", N);
            t_gen(x[r], (size_t)N, DT_F32, r, 13);
        }
        if (dt_run_ok(&A, ring[k]) == 0)
            for (int r = DC_LO; r < DC_HI(W); r++)
                t_same(y[r], x[(r + W - 1) % W], (size_t)N, DT_F32, ring[k], r);
        dt_args_free(&A);
    }
}

#endif
