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
 * with barriers and a peer push with a signal from an async block; and
 * lib/allreduce.blk one-shot and two-shot (peer loads and signals in
 * kernels). Exits 77 when not started by an MPI launcher or built without
 * MPI. */
#include "dist/dist_test.h"

static DtMod m;
static int self; /* this process's rank */

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
        t_same(b[self], ref, (size_t)N, dt, entry, self);
        free(ref);
    }
    dt_args_free(&A);
}

static void all_gather(int W, int S)
{
    int fi = dt_entry(&m, "ag_f32");
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *d[DT_MAXR], *s[DT_MAXR];
    for (int r = 0; r < W; r++) {
        s[r] = DT_T(&A, r, "src", S);
        d[r] = DT_T(&A, r, "dst", (int64_t)S * W);
        t_gen(s[r], (size_t)S, DT_F32, r, 3);
    }
    if (dt_run_ok(&A, "ag_f32") == 0)
        for (int q = 0; q < W; q++)
            t_same((float *)d[self] + (size_t)S * q, s[q], (size_t)S, DT_F32,
                   "ag_f32", self);
    dt_args_free(&A);
}

static void reduce_scatter(int W, int S)
{
    int fi = dt_entry(&m, "rs_sum_f32");
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
        t_gen(s[r], (size_t)S, DT_F32, r, 5);
    }
    if (dt_run_ok(&A, "rs_sum_f32") == 0) {
        float *ref = t_xmalloc(sizeof(float) * (size_t)S);
        t_ref_reduce(ref, 0, (size_t)S, DT_F32, RT_RED_SUM, W, 5);
        t_same(d[self], ref + off[self], cnt[self], DT_F32, "rs_sum_f32",
               self);
        free(ref);
    }
    dt_args_free(&A);
}

static void all_to_all(int W, int chunk)
{
    int fi = dt_entry(&m, "a2a_f32");
    size_t S = (size_t)chunk * W;
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *d[DT_MAXR], *s[DT_MAXR];
    for (int r = 0; r < W; r++) {
        s[r] = DT_T(&A, r, "src", (int64_t)S);
        d[r] = DT_T(&A, r, "dst", (int64_t)S);
        t_gen(s[r], S, DT_F32, r, 7);
    }
    if (dt_run_ok(&A, "a2a_f32") == 0)
        for (int q = 0; q < W; q++)
            t_same((float *)d[self] + (size_t)chunk * q,
                   (float *)s[q] + (size_t)chunk * self, (size_t)chunk,
                   DT_F32, "a2a_f32", self);
    dt_args_free(&A);
}

static void broadcast(int W, int N, int root)
{
    int fi = dt_entry(&m, "bc_f32");
    DtArgs A;
    dt_args_init(&A, &m, fi, W);
    void *b[DT_MAXR], *want = t_xmalloc(sizeof(float) * (size_t)N);
    t_gen(want, (size_t)N, DT_F32, root, 9);
    for (int r = 0; r < W; r++) {
        b[r] = DT_T(&A, r, "b", N);
        t_gen(b[r], (size_t)N, DT_F32, r, 9);
        dt_int(&A, r, "root", root);
    }
    if (dt_run_ok(&A, "bc_f32") == 0)
        t_same(b[self], want, (size_t)N, DT_F32, "bc_f32", self);
    free(want);
    dt_args_free(&A);
}

/* ar_sym_2d (a symmetric buffer), ring_pull, ring_push (a peer copy with a
 * signal, waited for in a kernel). */
static void copies(int W, int R, int C)
{
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
        t_same(y[self], ref, (size_t)R * C, DT_F32, "ar_sym_2d", self);
        free(ref);
    }
    dt_args_free(&A);
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
            t_same(y[self], x[(self + W - 1) % W], (size_t)N, DT_F32, ring[k],
                   self);
        dt_args_free(&A);
    }
}

/* lib/allreduce.blk: f32 in rank order, as t_dist_allreduce.c. */
static void lib_allreduce(const DtMod *lm, const char *entry, int W, int N,
                          int op)
{
    int fi = dt_entry(lm, entry);
    DtArgs A;
    dt_args_init(&A, lm, fi, W);
    float *x[DT_MAXR], *y[DT_MAXR];
    for (int r = 0; r < W; r++) {
        x[r] = DT_T(&A, r, "x", N);
        y[r] = DT_T(&A, r, "y", N);
        dt_fill(x[r], (size_t)N, r, 5 + op);
        dt_int(&A, r, "op", op);
    }
    char what[128];
    snprintf(what, sizeof what, "%s N=%d op=%d", entry, N, op);
    if (dt_run_ok(&A, what) == 0) {
        double *ref = t_xmalloc(sizeof(double) * (size_t)N);
        for (int i = 0; i < N; i++) {
            float acc = x[0][i];
            for (int q = 1; q < W; q++) {
                float v = x[q][i];
                acc = op == 1 ? (v > acc ? v : acc)
                    : op == 2 ? (v < acc ? v : acc) : acc + v;
            }
            ref[i] = acc;
        }
        dt_close(y[self], ref, (size_t)N, 0, what, W, self);
        free(ref);
    }
    dt_args_free(&A);
}

int main(void)
{
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
    m = dt_load("tests/dist/coll.blk", NULL, 0);
    all_reduce("ar_sum_f32", RT_RED_SUM, W, 1001);
    all_reduce("ar_max_i64", RT_RED_MAX, W, 37);
    all_reduce("ar_sum_bf16", RT_RED_SUM, W, 129);
    all_gather(W, 17);
    reduce_scatter(W, 4 * W + 3);
    all_to_all(W, 5);
    broadcast(W, 100, W - 1);
    copies(W, 7, 9);
    dt_free(&m);
    DtMod lm = dt_load("lib/allreduce.blk", NULL, 0);
    for (int op = 0; op < 3; op++) {
        lib_allreduce(&lm, "allreduce_oneshot", W, 1001, op);
        lib_allreduce(&lm, "allreduce_twoshot", W, 1001, op);
    }
    dt_free(&lm);
    char name[64];
    snprintf(name, sizeof name, "t_mpi_dist rank %d of %d", self, W);
    return t_done(name);
}
