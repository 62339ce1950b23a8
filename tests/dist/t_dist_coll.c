/* t_dist_coll.c — the device tier's collectives (all_reduce sum/max/min,
 * all_gather, reduce_scatter with uneven chunks, all_to_all, broadcast,
 * barrier) and copies (peer pull, peer push with a signal from an async
 * block, dynamic 2-D sub-blocks) from tests/dist/coll.blk, on 1, 2, 3, 4
 * and 8 local ranks, bitwise against references computed in C (reductions
 * in rank order, small floats accumulated in f32 and rounded once). */
#include "dist_test.h"

static DtMod m;

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
        for (int r = 0; r < W; r++)
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
        for (int r = 0; r < W; r++)
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
        for (int r = 0; r < W; r++)
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
        for (int r = 0; r < W; r++)
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
        for (int r = 0; r < W; r++)
            t_same(b[r], want, (size_t)N, dt, entry, r);
    free(want);
    dt_args_free(&A);
}

/* ar_sym_2d, ring_pull, ring_push, sub_copy (f32). */
static void copies(int W, int R, int C)
{
    char what[64];
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
        for (int r = 0; r < W; r++)
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
            for (int r = 0; r < W; r++)
                t_same(y[r], x[(r + W - 1) % W], (size_t)N, DT_F32, ring[k], r);
        dt_args_free(&A);
    }
    /* sub_copy with a per-rank offset */
    fi = dt_entry(&m, "sub_copy");
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
            all_gather("ag_f32", W, n);
            all_gather("ag_f16", W, n);
            all_gather("ag_i64", W, n);
            reduce_scatter("rs_sum_f32", RT_RED_SUM, W, n);
            reduce_scatter("rs_max_i32", RT_RED_MAX, W, n);
            reduce_scatter("rs_sum_bf16", RT_RED_SUM, W, n);
            all_to_all("a2a_f32", W, n);
            all_to_all("a2a_i8", W, n);
            broadcast("bc_f32", W, n, W - 1);
            broadcast("bc_i64", W, n, W / 2);
        }
        copies(W, 1, 1);
        copies(W, 7, 13);
        copies(W, 33, 64);
    }
    dt_free(&m);
    return t_done("t_dist_coll");
}
