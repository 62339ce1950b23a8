/* test_rank_coll.c — every collective of runtime/rank_coll.c on local
 * worlds of 1, 2, 3, 4 and 8 ranks (or the counts given as arguments):
 * all_reduce for every dtype and op, reduce_scatter (even, uneven, counts
 * not divisible by N), all_gather (also in place), uneven all_to_all (also
 * with the receive counts exchanged first), broadcast from every root and a
 * long run of barriers, each checked bit for bit against a reference
 * computed single-threaded in C. `test_rank_coll bench` prints all_reduce
 * bandwidth against memcpy (not a ctest entry). */
#include "rk_test.h"

static const int all_dtypes[] = {
    DT_BOOL, DT_I8,  DT_I16, DT_I32, DT_I64,  DT_U8,     DT_U16,   DT_U32,
    DT_U64,  DT_F16, DT_BF16, DT_F32, DT_F64, DT_F8E4M3, DT_F8E5M2,
};
static const int some_dtypes[] = {DT_F32, DT_F16, DT_BF16, DT_I32, DT_I64,
                                  DT_U8};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int test_all_reduce(RtRank *r)
{
    static const size_t counts[] = {0, 1, 5, 63, 64, 1000, 4099};
    int N = rt_rank_size(r), me = rt_rank_id(r);
    for (size_t d = 0; d < NELEM(all_dtypes); d++) {
        int dt = all_dtypes[d];
        for (size_t c = 0; c < NELEM(counts); c++) {
            for (int op = RT_RED_SUM; op <= RT_RED_MIN; op++) {
                size_t n = counts[c], es = t_es(dt);
                int seed = (int)(d * 31 + c * 7 + (size_t)op);
                char *buf = t_xmalloc(n * es), *ref = t_xmalloc(n * es);
                t_gen(buf, n, dt, me, seed);
                if (rt_all_reduce(r, buf, n, dt, op)) {
                    free(buf);
                    free(ref);
                    return -1;
                }
                t_ref_reduce(ref, 0, n, dt, op, N, seed);
                char what[64];
                snprintf(what, sizeof what, "all_reduce %s n=%zu N=%d",
                         rt_rank_op_name(op), n, N);
                t_same(buf, ref, n, dt, what, me);
                free(buf);
                free(ref);
            }
        }
    }
    return 0;
}

static int test_reduce_scatter(RtRank *r)
{
    static const size_t totals[] = {0, 1, 7, 1001};
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t *cnt = t_xmalloc(sizeof(size_t) * (size_t)N);
    for (size_t d = 0; d < NELEM(some_dtypes); d++) {
        int dt = some_dtypes[d];
        size_t es = t_es(dt);
        for (int uneven = 0; uneven < 2; uneven++) {
            for (size_t t = 0; t < NELEM(totals); t++) {
                size_t total = totals[t];
                size_t off = 0, n;
                const size_t *cp = NULL;
                if (uneven) {
                    /* uneven blocks: rank q gets (q*7+3)%5 + ..., the last
                     * rank the remainder */
                    size_t s = 0;
                    for (int q = 0; q < N; q++) {
                        size_t want = ((size_t)q * 7 + 3) % 5 * total / 4;
                        cnt[q] = s + want <= total && q < N - 1 ? want
                                                                : total - s;
                        s += cnt[q];
                    }
                    cp = cnt;
                    for (int q = 0; q < me; q++)
                        off += cnt[q];
                    n = cnt[me];
                } else {
                    size_t base = total / (size_t)N, ex = total % (size_t)N;
                    size_t um = (size_t)me;
                    off = base * um + (um < ex ? um : ex);
                    n = base + (um < ex);
                }
                int op = (int)(t % 3), seed = (int)(d * 13 + t + 100);
                char *src = t_xmalloc(total * es), *dst = t_xmalloc(n * es);
                char *ref = t_xmalloc(n * es);
                t_gen(src, total, dt, me, seed);
                if (rt_reduce_scatter(r, dst, src, total, cp, dt, op))
                    return -1;
                t_ref_reduce(ref, off, n, dt, op, N, seed);
                char what[80];
                snprintf(what, sizeof what, "reduce_scatter %s total=%zu%s",
                         rt_rank_op_name(op), total, uneven ? " uneven" : "");
                t_same(dst, ref, n, dt, what, me);
                /* in place: dst at this rank's block of src */
                if (rt_reduce_scatter(r, src + off * es, src, total, cp, dt,
                                      op))
                    return -1;
                t_same(src + off * es, ref, n, dt, what, me);
                free(src);
                free(dst);
                free(ref);
            }
        }
    }
    free(cnt);
    return 0;
}

static int test_all_gather(RtRank *r)
{
    static const size_t cprs[] = {0, 1, 3, 257};
    int N = rt_rank_size(r), me = rt_rank_id(r);
    for (size_t d = 0; d < NELEM(some_dtypes); d++) {
        int dt = some_dtypes[d];
        size_t es = t_es(dt);
        for (size_t c = 0; c < NELEM(cprs); c++) {
            size_t cpr = cprs[c];
            int seed = (int)(d * 5 + c);
            char *src = t_xmalloc(cpr * es);
            char *dst = t_xmalloc(cpr * es * (size_t)N);
            char *ref = t_xmalloc(cpr * es * (size_t)N);
            t_gen(src, cpr, dt, me, seed);
            for (int q = 0; q < N; q++)
                t_gen(ref + (size_t)q * cpr * es, cpr, dt, q, seed);
            if (rt_all_gather(r, dst, src, cpr, dt))
                return -1;
            t_same(dst, ref, cpr * (size_t)N, dt, "all_gather", me);
            /* in place: src is this rank's block of dst */
            memset(dst, 0, cpr * es * (size_t)N);
            t_gen(dst + (size_t)me * cpr * es, cpr, dt, me, seed);
            if (rt_all_gather(r, dst, dst + (size_t)me * cpr * es, cpr, dt))
                return -1;
            t_same(dst, ref, cpr * (size_t)N, dt, "all_gather in place", me);
            free(src);
            free(dst);
            free(ref);
        }
    }
    return 0;
}

/* elements rank i sends to rank j */
static size_t a2a_count(int i, int j, int seed)
{
    return ((size_t)i * 3 + (size_t)j * 5 + (size_t)seed) % 7 * (size_t)(seed % 3 + 1);
}

/* value of the k-th element rank i sends to rank j */
static double a2a_val(int i, int j, size_t k)
{
    return (double)(i * 64 + j * 8) + (double)(k % 8);
}

static int test_all_to_all(RtRank *r)
{
    static const int dts[] = {DT_F32, DT_U8, DT_I64, DT_F16, DT_BF16, DT_I32};
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t *sc = t_xmalloc(sizeof(size_t) * (size_t)N);
    size_t *rc = t_xmalloc(sizeof(size_t) * (size_t)N);
    size_t *rc2 = t_xmalloc(sizeof(size_t) * (size_t)N);
    for (size_t d = 0; d < NELEM(dts); d++) {
        for (int seed = 0; seed < 4; seed++) {
            int dt = dts[d];
            size_t es = t_es(dt), ns = 0, nr = 0;
            for (int q = 0; q < N; q++) {
                sc[q] = a2a_count(me, q, seed);
                rc[q] = a2a_count(q, me, seed);
                ns += sc[q];
                nr += rc[q];
            }
            char *src = t_xmalloc(ns * es), *dst = t_xmalloc(nr * es);
            char *ref = t_xmalloc(nr * es);
            size_t o = 0;
            for (int q = 0; q < N; q++)
                for (size_t k = 0; k < sc[q]; k++, o++) {
                    if (dsl_is_float(dt))
                        t_putf(src, o, dt, a2a_val(me, q, k));
                    else
                        t_puti(src, o, dt, (uint64_t)a2a_val(me, q, k));
                }
            o = 0;
            for (int q = 0; q < N; q++)
                for (size_t k = 0; k < rc[q]; k++, o++) {
                    if (dsl_is_float(dt))
                        t_putf(ref, o, dt, a2a_val(q, me, k));
                    else
                        t_puti(ref, o, dt, (uint64_t)a2a_val(q, me, k));
                }
            if (rt_all_to_all(r, dst, rc, src, sc, dt))
                return -1;
            t_same(dst, ref, nr, dt, "all_to_all", me);
            /* receive counts exchanged first, then recv_counts NULL */
            if (rt_all_to_all_counts(r, rc2, sc))
                return -1;
            T_CHECK(!memcmp(rc, rc2, sizeof(size_t) * (size_t)N),
                    "all_to_all_counts rank %d", me);
            memset(dst, 0, nr * es);
            if (rt_all_to_all(r, dst, NULL, src, sc, dt))
                return -1;
            t_same(dst, ref, nr, dt, "all_to_all recv NULL", me);
            free(src);
            free(dst);
            free(ref);
        }
    }
    free(sc);
    free(rc);
    free(rc2);
    return 0;
}

static int test_broadcast(RtRank *r)
{
    static const size_t counts[] = {0, 1, 1000};
    int N = rt_rank_size(r), me = rt_rank_id(r);
    for (size_t d = 0; d < NELEM(some_dtypes); d++) {
        int dt = some_dtypes[d];
        size_t es = t_es(dt);
        for (size_t c = 0; c < NELEM(counts); c++) {
            for (int root = 0; root < N; root++) {
                size_t n = counts[c];
                char *buf = t_xmalloc(n * es), *ref = t_xmalloc(n * es);
                t_gen(buf, n, dt, me, (int)c);
                t_gen(ref, n, dt, root, (int)c);
                if (rt_broadcast(r, buf, n, dt, root))
                    return -1;
                t_same(buf, ref, n, dt, "broadcast", me);
                free(buf);
                free(ref);
            }
        }
    }
    return 0;
}

static int barrier_counter; /* atomic */

static int test_barrier(RtRank *r)
{
    int N = rt_rank_size(r);
    for (int k = 0; k < 200; k++) {
        __atomic_add_fetch(&barrier_counter, 1, __ATOMIC_RELAXED);
        if (rt_barrier(r))
            return -1;
        int seen = __atomic_load_n(&barrier_counter, __ATOMIC_RELAXED);
        T_CHECK(seen >= N * (k + 1) && seen <= N * (k + 2),
                "barrier %d rank %d: counter %d", k, rt_rank_id(r), seen);
        if (rt_barrier(r))
            return -1;
    }
    return 0;
}

static int run_all(RtRank *r, void *arg)
{
    (void)arg;
    if (test_barrier(r) || test_all_reduce(r) || test_reduce_scatter(r) ||
        test_all_gather(r) || test_all_to_all(r) || test_broadcast(r))
        return -1;
    return 0;
}

/* ------------------------------------------------------------ bench */
typedef struct {
    size_t n;
    int iters;
    double secs;
} Bench;

static int bench_rank(RtRank *r, void *arg)
{
    Bench *b = arg;
    float *buf = t_xmalloc(b->n * sizeof(float));
    for (size_t i = 0; i < b->n; i++)
        buf[i] = (float)(i % 100);
    rt_all_reduce(r, buf, b->n, DT_F32, RT_RED_SUM); /* warm up */
    if (rt_barrier(r))
        return -1;
    double t0 = t_now();
    for (int k = 0; k < b->iters; k++)
        if (rt_all_reduce(r, buf, b->n, DT_F32, RT_RED_SUM))
            return -1;
    if (rt_rank_id(r) == 0)
        b->secs = t_now() - t0;
    free(buf);
    return 0;
}

static int bench(void)
{
    size_t n = (size_t)16 << 20; /* 64 MiB of f32 */
    float *a = t_xmalloc(n * 4), *c = t_xmalloc(n * 4);
    memset(a, 1, n * 4);
    memcpy(c, a, n * 4);
    double t0 = t_now();
    for (int k = 0; k < 5; k++) {
        a[k] = (float)k;
        memcpy(c, a, n * 4);
    }
    double mc = (t_now() - t0) / 5;
    printf("memcpy 64 MiB: %.2f GB/s\n", (double)n * 4 / mc / 1e9);
    free(a);
    free(c);
    for (int N = 1; N <= 4; N *= 2) {
        RtWorld *w;
        char err[512];
        if (rt_world_create(N, 0, &w, err, sizeof err))
            return fprintf(stderr, "%s\n", err), 1;
        Bench b = {n, 5, 0};
        if (rt_world_run(w, bench_rank, &b, err, sizeof err))
            return fprintf(stderr, "%s\n", err), 1;
        double per = b.secs / b.iters;
        printf("all_reduce f32 64 MiB, %d ranks: %.2f GB/s (buffer/time), "
               "%.2fx memcpy time\n",
               N, (double)n * 4 / per / 1e9, per / mc);
        rt_world_destroy(w);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "bench"))
        return bench();
    int ns[16], nn = 0;
    for (int i = 1; i < argc && nn < 16; i++)
        ns[nn++] = atoi(argv[i]);
    if (!nn) {
        static const int def[] = {1, 2, 3, 4, 8};
        for (size_t i = 0; i < NELEM(def); i++)
            ns[nn++] = def[i];
    }
    for (int i = 0; i < nn; i++) {
        RtWorld *w;
        char err[512];
        if (rt_world_create(ns[i], 1 << 20, &w, err, sizeof err)) {
            T_CHECK(0, "create %d: %s", ns[i], err);
            continue;
        }
        double t0 = t_now();
        barrier_counter = 0;
        int rc = rt_world_run(w, run_all, NULL, err, sizeof err);
        T_CHECK(rc == 0, "run on %d ranks: %s", ns[i], err);
        printf("%d ranks: %.2f s\n", ns[i], t_now() - t0);
        rt_world_destroy(w);
    }
    return t_done("test_rank_coll");
}
