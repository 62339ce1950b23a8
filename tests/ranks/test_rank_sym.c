/* test_rank_sym.c — the symmetric heap and signals on 1, 2, 3, 4 and 8
 * local ranks: collective allocation (same offset everywhere, aligned,
 * zeroed), peer writes through rt_sym_ptr / rt_sym_peer_of, stack-like
 * release, a ring of notify/wait rounds that passes data to the next rank,
 * signal add from every rank, and the errors: out of memory and ranks that
 * disagree on an allocation size. */
#include "rk_test.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int sym_basic(RtRank *r, void *arg)
{
    (void)arg;
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t a, b, c;
    if (rt_sym_alloc(r, 100, &a) || rt_sym_alloc(r, 0, &b) ||
        rt_sym_alloc(r, sizeof(int64_t) * (size_t)N, &c))
        return -1;
    T_CHECK(a % RT_SYM_ALIGN == 0 && b % RT_SYM_ALIGN == 0 &&
                c % RT_SYM_ALIGN == 0 && a < c,
            "offsets %zu %zu %zu", a, b, c);
    /* the same offsets on every rank: publish them in every peer's block */
    int64_t *mine = rt_sym_ptr(r, c, me);
    for (size_t i = 0; i < (size_t)N; i++)
        T_CHECK(mine[i] == 0, "rank %d: block not zeroed", me);
    if (rt_barrier(r))
        return -1;
    for (int q = 0; q < N; q++) {
        int64_t *peer = rt_sym_ptr(r, c, q);
        peer[me] = (int64_t)c * 1000 + me;   /* slot `me` of rank q */
        T_CHECK(rt_sym_peer_of(r, mine, q) == peer, "peer_of rank %d", q);
    }
    if (rt_barrier(r))
        return -1;
    for (int q = 0; q < N; q++)
        T_CHECK(mine[q] == (int64_t)c * 1000 + q,
                "rank %d slot %d = %lld: offsets differ", me, q,
                (long long)mine[q]);
    T_CHECK(rt_sym_ptr(r, 0, N) == NULL, "peer out of range");
    T_CHECK(rt_sym_ptr(r, rt_sym_heap_bytes(r) + 1, 0) == NULL,
            "offset out of range");
    T_CHECK(rt_sym_peer_of(r, &a, 0) == NULL, "stack pointer is not symmetric");

    /* stack-like release gives the same offset back, zeroed again */
    size_t mark = rt_sym_mark(r), d, e;
    if (rt_sym_alloc(r, 4096, &d))
        return -1;
    memset(rt_sym_ptr(r, d, me), 0x5a, 4096);
    if (rt_sym_release(r, mark) || rt_sym_alloc(r, 4096, &e))
        return -1;
    T_CHECK(d == e, "release: %zu then %zu", d, e);
    const unsigned char *z = rt_sym_ptr(r, e, me);
    int zero = 1;
    for (int i = 0; i < 4096; i++)
        zero &= z[i] == 0;
    T_CHECK(zero, "re-allocated block is not zeroed");
    return 0;
}

/* A ring: in round k rank 0 starts a token, every rank adds its id and
 * passes it on by writing into the next rank's heap and notifying it. */
static int sym_ring(RtRank *r, void *arg)
{
    (void)arg;
    int N = rt_rank_size(r), me = rt_rank_id(r), next = (me + 1) % N;
    size_t data, sig, cnt;
    if (rt_sym_alloc(r, sizeof(int64_t) * 64, &data) ||
        rt_sym_alloc(r, sizeof(uint64_t), &sig) ||
        rt_sym_alloc(r, sizeof(uint64_t), &cnt))
        return -1;
    int64_t *mydata = rt_sym_ptr(r, data, me);
    int64_t *nextdata = rt_sym_ptr(r, data, next);
    uint64_t *mysig = rt_sym_ptr(r, sig, me);
    uint64_t *nextsig = rt_sym_ptr(r, sig, next);
    const int rounds = 50;
    int64_t tri = (int64_t)N * (N - 1) / 2;
    for (int k = 1; k <= rounds; k++) {
        if (me == 0) {
            for (int i = 0; i < 64; i++)
                nextdata[i] = (int64_t)k * 100 + i;   /* token leaves rank 0 */
            rt_signal_notify(r, nextsig, (uint64_t)k, RT_SIG_SET);
            if (rt_signal_wait(r, mysig, RT_WAIT_GE, (uint64_t)k, "ring"))
                return -1;
            for (int i = 0; i < 64; i++)
                T_CHECK(mydata[i] == (int64_t)k * 100 + i + tri,
                        "ring round %d elem %d: %lld", k, i,
                        (long long)mydata[i]);
        } else {
            if (rt_signal_wait(r, mysig, RT_WAIT_EQ, (uint64_t)k, "ring"))
                return -1;
            for (int i = 0; i < 64; i++)
                nextdata[i] = mydata[i] + me;
            rt_signal_notify(r, nextsig, (uint64_t)k, RT_SIG_SET);
        }
    }
    /* every rank adds to rank 0's counter; rank 0 waits for all */
    rt_signal_notify(r, rt_sym_ptr(r, cnt, 0), 1, RT_SIG_ADD);
    if (me == 0 && rt_signal_wait(r, rt_sym_ptr(r, cnt, 0), RT_WAIT_EQ,
                                  (uint64_t)N, "count"))
        return -1;
    return rt_barrier(r);
}

static int sym_oom(RtRank *r, void *arg)
{
    (void)arg;
    size_t o;
    if (rt_sym_alloc(r, 1000, &o))
        return -1;
    return rt_sym_alloc(r, (size_t)2 << 20, &o);
}

static int sym_mismatch(RtRank *r, void *arg)
{
    (void)arg;
    size_t o;
    return rt_sym_alloc(r, rt_rank_id(r) == 1 ? 2048 : 1024, &o);
}

static void run(int N, int (*fn)(RtRank *, void *), const char *name)
{
    RtWorld *w;
    char err[512];
    if (rt_world_create(N, 1 << 20, &w, err, sizeof err)) {
        T_CHECK(0, "create: %s", err);
        return;
    }
    int rc = rt_world_run(w, fn, NULL, err, sizeof err);
    T_CHECK(rc == 0, "%s on %d ranks: %s", name, N, err);
    /* a second run on the same world starts from an empty heap */
    rc = rt_world_run(w, fn, NULL, err, sizeof err);
    T_CHECK(rc == 0, "%s on %d ranks (second run): %s", name, N, err);
    rt_world_destroy(w);
}

int main(void)
{
    static const int ns[] = {1, 2, 3, 4, 8};
    for (size_t i = 0; i < NELEM(ns); i++) {
        run(ns[i], sym_basic, "sym_basic");
        run(ns[i], sym_ring, "sym_ring");
    }

    RtWorld *w;
    char err[512];
    if (rt_world_create(3, 1 << 20, &w, err, sizeof err))
        return fprintf(stderr, "%s\n", err), 1;
    int rc = rt_world_run(w, sym_oom, NULL, err, sizeof err);
    T_CHECK(rc == -1 && strstr(err, "symmetric heap out of memory: requested "
                                    "2097152 bytes, 1047552 left of 1048576"),
            "oom: rc %d, %s", rc, err);
    rc = rt_world_run(w, sym_mismatch, NULL, err, sizeof err);
    T_CHECK(rc == -1 && strstr(err, "collective mismatch: rank 0 called "
                                    "sym_alloc(count 1024) but rank 1 called "
                                    "sym_alloc(count 2048)"),
            "mismatch: rc %d, %s", rc, err);
    rt_world_destroy(w);

    T_CHECK(rt_world_create(0, 0, &w, err, sizeof err) == -1 &&
                strstr(err, "world size 0"),
            "world of 0: %s", err);
    return t_done("test_rank_sym");
}
