/* rank_mpi.c — worlds of kind RT_WORLD_MPI: one rank per process under
 * mpirun, on one node, with the symmetric heap and the world's control
 * block in MPI-3 shared-memory windows (see rank_mpi.h for the design).
 * Without BLKC_HAVE_MPI (MPI not found at build time) only the launcher
 * detection is real and creating a world fails with a clear message. */
#include "rank_mpi.h"

#include "../dsl/dsl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ launcher */

static int env_int(const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        const char *s = getenv(names[i]);
        if (s && *s) {
            char *end;
            long v = strtol(s, &end, 10);
            if (!*end && v >= 0 && v <= 1 << 30)
                return (int)v;
        }
    }
    return -1;
}

int rt_mpi_launch_size(void)
{
    static const char *const n[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                    "PMIX_SIZE", "MV2_COMM_WORLD_SIZE",
                                    NULL};
    int v = env_int(n);
    return v < 0 ? 0 : v;
}

int rt_mpi_launch_rank(void)
{
    static const char *const n[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                    "PMIX_RANK", "MV2_COMM_WORLD_RANK",
                                    NULL};
    return env_int(n);
}

#ifndef BLKC_HAVE_MPI

int rt_mpi_built(void) { return 0; }

int rt_mpi_create(int nranks, size_t heap_bytes, RtMpi **out, int *me,
                  size_t *heap_out, char **heap_base, char *err,
                  size_t errlen)
{
    (void)nranks; (void)heap_bytes; (void)me; (void)heap_out;
    (void)heap_base;
    *out = NULL;
    snprintf(err, errlen, "this blkc was built without MPI, so it cannot run "
             "ranks as processes under mpirun (install libopenmpi-dev and "
             "rebuild, or run --ranks=N without mpirun for local ranks)");
    return -1;
}

/* Never reached: no world of kind RT_WORLD_MPI exists without MPI. The
 * stubs still fail softly (an error return), never abort the host. */
void rt_mpi_free(RtMpi *m) { (void)m; }
int *rt_mpi_abort_flag(RtMpi *m)
{
    static int flag = 1; /* "aborted": anyone polling it stops */
    (void)m;
    return &flag;
}
void rt_mpi_fail(RtMpi *m, int rank, const char *msg)
{ (void)m; (void)rank; (void)msg; }
int rt_mpi_fail_rank(RtMpi *m, char *cause, size_t len)
{
    (void)m;
    if (len)
        snprintf(cause, len, "built without MPI");
    return -1;
}
int rt_mpi_barrier(RtMpi *m, int64_t timeout_ms, char *miss, size_t misslen)
{ (void)m; (void)timeout_ms; (void)miss; (void)misslen; return -1; }
int *rt_mpi_in_wait(RtMpi *m) { (void)m; return NULL; }
void rt_mpi_left(RtMpi *m) { (void)m; }
int rt_mpi_coll_publish(RtMpi *m, const RtRankColl *d, size_t heap_top,
                        char *err, size_t errlen)
{
    (void)m; (void)d; (void)heap_top;
    snprintf(err, errlen, "this blkc was built without MPI");
    return -1;
}
const RtRankColl *rt_mpi_coll_view(RtMpi *m, int q, uint64_t seq)
{ (void)m; (void)q; (void)seq; return NULL; }
void rt_mpi_coll_restage(RtMpi *m) { (void)m; }
int rt_mpi_run_begin(RtMpi *m, char *err, size_t errlen)
{
    (void)m;
    snprintf(err, errlen, "this blkc was built without MPI");
    return -1;
}
int rt_mpi_run_end(RtMpi *m) { (void)m; return -1; }

#else /* BLKC_HAVE_MPI */

#include <mpi.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

int rt_mpi_built(void) { return 1; }

/* A buffer as peers find it: rank -1 is NULL, else offset in rank's heap. */
typedef struct Loc {
    int32_t rank;
    int32_t pad_;
    uint64_t off;
} Loc;

typedef struct Slot {          /* a published RtRankColl */
    int32_t kind, dtype, op, root;
    uint64_t count, seq;
    Loc src, dst, counts, counts2;
} Slot;

typedef struct Ctrl {          /* rank 0's control window */
    _Alignas(64) int failed;   /* the abort flag (also for kernels) */
    _Alignas(64) int fail_rank; /* first failing rank, -1 none (CAS) */
    char fail_msg[RT_RANK_ERRLEN];
    _Alignas(64) int nleft;    /* ranks whose function returned */
    _Alignas(64) unsigned bar_count;
    _Alignas(64) unsigned bar_gen;
    _Alignas(64) char tail_[64]; /* then left[n], arrived[n], in_wait[n],
                                  then slots[n][2] */
} Ctrl;

struct RtMpi {
    MPI_Comm shm;              /* this node's processes (= the world) */
    MPI_Win heap_win, ctrl_win;
    int me, n;
    Ctrl *ctrl;
    int *left;                 /* [n] */
    unsigned *arrived;         /* [n]: 1 + the barrier generation each rank
                                  last arrived at */
    int *in_wait;              /* [n]: each rank's signal waits in progress */
    Slot *slots;               /* [n][2], by collective parity */
    char **base;               /* [n] heaps in this process */
    size_t heap_bytes;
    RtRankColl *view;          /* [n] peers' descriptors, translated */
    /* all_reduce with a staged buffer: refreshed before its second phase */
    const void *re_src;
    uint64_t re_off;
    size_t re_bytes;
};

static int mpi_started;

static void mpi_stop(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

static int mpi_start(char *err, size_t errlen)
{
    int init = 0;
    MPI_Initialized(&init);
    if (init)
        return 0;
    int prov;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &prov) !=
        MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed");
        return -1;
    }
    if (!mpi_started) {
        mpi_started = 1;
        atexit(mpi_stop);
    }
    return 0;
}

static void backoff(unsigned *round)
{
    unsigned k = (*round)++;
    if (k < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (k < 320) {
        sched_yield();
    } else {
        struct timespec ts = {0, (long)(k < 600 ? 20 : 200) * 1000};
        nanosleep(&ts, NULL);
    }
}

/* left[n], arrived[n] and in_wait[n], rounded to a cache line */
static size_t rank_arrays(int n)
{
    return ((size_t)n * 3 * sizeof(int) + 63) / 64 * 64;
}

static size_t ctrl_bytes(int n)
{
    size_t left = rank_arrays(n);
    return offsetof(Ctrl, tail_) + left + (size_t)n * 2 * sizeof(Slot);
}

static void ctrl_reset(RtMpi *m)
{
    Ctrl *c = m->ctrl;
    c->failed = 0;
    c->fail_rank = -1;
    c->fail_msg[0] = 0;
    c->nleft = 0;
    c->bar_count = 0;
    memset(m->left, 0, rank_arrays(m->n));
    memset(m->slots, 0, (size_t)m->n * 2 * sizeof(Slot));
}

int rt_mpi_create(int nranks, size_t heap_bytes, RtMpi **out, int *me,
                  size_t *heap_out, char **heap_base, char *err,
                  size_t errlen)
{
    *out = NULL;
    if (mpi_start(err, errlen))
        return -1;
    int n, r;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (nranks != n) {
        snprintf(err, errlen, "the run has %d rank%s but mpirun started %d "
                 "processes: under mpirun the number of ranks (--ranks) "
                 "must equal the number of processes (-np)",
                 nranks, nranks == 1 ? "" : "s", n);
        return -1;
    }
    RtMpi *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->n = n;
    m->me = r;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r,
                        MPI_INFO_NULL, &m->shm);
    int sn, one, all_one;
    MPI_Comm_size(m->shm, &sn);
    one = sn == n;
    MPI_Allreduce(&one, &all_one, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_one) {
        MPI_Comm_free(&m->shm);
        free(m);
        snprintf(err, errlen, "the %d MPI processes are on several nodes: "
                 "only one node is supported (the symmetric heap is an MPI "
                 "shared-memory window)", n);
        return -1;
    }
    unsigned long long hb = heap_bytes, mx = 0;
    MPI_Allreduce(&hb, &mx, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                  MPI_COMM_WORLD);
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    size_t stride = (size_t)((mx + page - 1) / page * page);
    if (stride < mx || (stride && (size_t)n > (SIZE_MAX - page) / stride)) {
        MPI_Comm_free(&m->shm);
        free(m);
        snprintf(err, errlen, "symmetric heap of %llu bytes x %d ranks is "
                 "too large", mx, n);
        return -1;
    }
    m->base = calloc((size_t)n, sizeof(char *));
    m->view = calloc((size_t)n, sizeof(RtRankColl));
    if (!m->base || !m->view) {
        MPI_Comm_free(&m->shm);
        free(m->base);
        free(m->view);
        free(m);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* the heap: contiguous segments, the last one a page longer so that
     * the heaps can start on a page boundary */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "false");
    char *mine, *b0;
    MPI_Aint sz;
    int du;
    MPI_Win_allocate_shared((MPI_Aint)(stride + (r == n - 1 ? page : 0)), 1,
                            info, m->shm, &mine, &m->heap_win);
    MPI_Win_shared_query(m->heap_win, 0, &sz, &du, &b0);
    int contiguous = 1;
    for (int q = 0; q < n; q++) {
        char *bq;
        MPI_Win_shared_query(m->heap_win, q, &sz, &du, &bq);
        if (bq != b0 + (size_t)q * stride)
            contiguous = 0;
    }
    char *a = (char *)(((uintptr_t)b0 + page - 1) / page * page);
    for (int q = 0; q < n; q++)
        m->base[q] = stride ? a + (size_t)q * stride : NULL;
    /* the control block, owned by rank 0 (64 bytes extra to align it) */
    char *cb;
    MPI_Win_allocate_shared((MPI_Aint)(r == 0 ? ctrl_bytes(n) + 64 : 0), 1,
                            info, m->shm, &cb, &m->ctrl_win);
    MPI_Info_free(&info);
    MPI_Win_shared_query(m->ctrl_win, 0, &sz, &du, &cb);
    m->ctrl = (Ctrl *)(((uintptr_t)cb + 63) / 64 * 64);
    m->left = (int *)(void *)m->ctrl->tail_;
    m->arrived = (unsigned *)(void *)(m->left + n);
    m->in_wait = (int *)(void *)(m->arrived + n);
    m->slots = (Slot *)(void *)(m->ctrl->tail_ + rank_arrays(n));
    int ok = contiguous, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        snprintf(err, errlen, "the MPI shared-memory window of the symmetric "
                 "heap is not contiguous across the ranks");
        rt_mpi_free(m);
        return -1;
    }
    if (r == 0)
        ctrl_reset(m);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    MPI_Barrier(MPI_COMM_WORLD);
    m->heap_bytes = stride;
    for (int q = 0; q < n; q++)
        heap_base[q] = m->base[q];
    *heap_out = stride;
    *me = r;
    *out = m;
    return 0;
}

void rt_mpi_free(RtMpi *m)
{
    if (!m)
        return;
    MPI_Win_free(&m->ctrl_win);
    MPI_Win_free(&m->heap_win);
    MPI_Comm_free(&m->shm);
    free(m->base);
    free(m->view);
    free(m);
}

int *rt_mpi_abort_flag(RtMpi *m)
{
    return &m->ctrl->failed;
}

void rt_mpi_fail(RtMpi *m, int rank, const char *msg)
{
    Ctrl *c = m->ctrl;
    int none = -1;
    if (__atomic_compare_exchange_n(&c->fail_rank, &none, rank, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        snprintf(c->fail_msg, sizeof c->fail_msg, "%s", msg);
        __atomic_store_n(&c->failed, 1, __ATOMIC_RELEASE);
        fprintf(stderr, "blkc: error: rank %d: %s\n", rank, msg);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
        _exit(3);
    }
    __atomic_store_n(&c->failed, 1, __ATOMIC_RELEASE);
}

int rt_mpi_fail_rank(RtMpi *m, char *cause, size_t len)
{
    Ctrl *c = m->ctrl;
    int q = __atomic_load_n(&c->fail_rank, __ATOMIC_ACQUIRE);
    snprintf(cause, len, "%s", q >= 0 ? c->fail_msg : "");
    return q;
}

static int failed(const RtMpi *m)
{
    return __atomic_load_n(&m->ctrl->failed, __ATOMIC_ACQUIRE) != 0;
}

int *rt_mpi_in_wait(RtMpi *m) { return &m->in_wait[m->me]; }

/* The ranks that have not arrived at barrier generation gen, as "1, 3";
 * returns how many. */
static int missing(const RtMpi *m, unsigned gen, char *buf, size_t len)
{
    size_t k = 0;
    int count = 0;
    buf[0] = 0;
    for (int q = 0; q < m->n && k < len; q++)
        if (__atomic_load_n(&m->arrived[q], __ATOMIC_ACQUIRE) != gen + 1)
            k += (size_t)snprintf(buf + k, len - k, "%s%d", count++ ? ", " : "", q);
    return count;
}

int rt_mpi_barrier(RtMpi *m, int64_t timeout_ms, char *miss, size_t misslen)
{
    Ctrl *c = m->ctrl;
    if (failed(m))
        return -1;
    if (m->n == 1)
        return 0;
    unsigned gen = __atomic_load_n(&c->bar_gen, __ATOMIC_ACQUIRE);
    __atomic_store_n(&m->arrived[m->me], gen + 1, __ATOMIC_RELEASE);
    if (__atomic_add_fetch(&c->bar_count, 1, __ATOMIC_ACQ_REL) ==
        (unsigned)m->n) {
        __atomic_store_n(&c->bar_count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&c->bar_gen, gen + 1, __ATOMIC_RELEASE);
        return 0;
    }
    unsigned round = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (__atomic_load_n(&c->bar_gen, __ATOMIC_ACQUIRE) != gen)
            return 0;
        if (failed(m))
            return -1;
        if (__atomic_load_n(&c->nleft, __ATOMIC_ACQUIRE) > 0) {
            for (int q = 0; q < m->n; q++) {
                if (!__atomic_load_n(&m->left[q], __ATOMIC_ACQUIRE))
                    continue;
                if (__atomic_load_n(&c->bar_gen, __ATOMIC_ACQUIRE) != gen)
                    return 0;
                if (failed(m))
                    return -1;
                return q + 1;
            }
        }
        if (round >= 64 && timeout_ms >= 0) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            int64_t ms = (int64_t)(t.tv_sec - t0.tv_sec) * 1000 +
                         (t.tv_nsec - t0.tv_nsec) / 1000000;
            /* as on local ranks: a missing rank in a signal wait (its own
             * deadline) reports first, up to twice the timeout + 1 s */
            int defer = 0;
            for (int q = 0; q < m->n && ms < 2 * timeout_ms + 1000; q++)
                defer |= __atomic_load_n(&m->arrived[q], __ATOMIC_ACQUIRE) != gen + 1 &&
                         __atomic_load_n(&m->in_wait[q], __ATOMIC_ACQUIRE) > 0;
            if (ms >= timeout_ms && !defer && missing(m, gen, miss, misslen) > 0 &&
                __atomic_load_n(&c->bar_gen, __ATOMIC_ACQUIRE) == gen)
                return -2;
        }
        backoff(&round);
    }
}

void rt_mpi_left(RtMpi *m)
{
    __atomic_store_n(&m->left[m->me], 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&m->ctrl->nleft, 1, __ATOMIC_ACQ_REL);
}

/* Where peers find [p, p + bytes): on a heap as it is, else a copy on this
 * rank's heap above *top. */
static int place(RtMpi *m, const void *p, size_t bytes, Loc *loc,
                 size_t *top, const char *what, char *err, size_t errlen)
{
    loc->rank = -1;
    loc->pad_ = 0;
    loc->off = 0;
    if (!p || !bytes)
        return 0;
    const char *c = p, *b0 = m->base[0];
    if (b0 && c >= b0 && c < b0 + (size_t)m->n * m->heap_bytes) {
        size_t k = (size_t)(c - b0) / m->heap_bytes;
        size_t off = (size_t)(c - b0) % m->heap_bytes;
        if (bytes <= m->heap_bytes - off) {
            loc->rank = (int32_t)k;
            loc->off = off;
            return 0;
        }
    }
    size_t off = (*top + RT_SYM_ALIGN - 1) & ~(size_t)(RT_SYM_ALIGN - 1);
    if (!b0 || off > m->heap_bytes || bytes > m->heap_bytes - off) {
        snprintf(err, errlen, "%s: staging a %zu-byte buffer that is not on "
                 "the symmetric heap needs that much free symmetric heap, "
                 "%zu left of %zu (use symmetric buffers, or raise "
                 "BLKC_SYM_HEAP_MB)", what, bytes,
                 off > m->heap_bytes ? 0 : m->heap_bytes - off,
                 m->heap_bytes);
        return -1;
    }
    memcpy(m->base[m->me] + off, p, bytes);
    loc->rank = m->me;
    loc->off = off;
    *top = off + bytes;
    return 0;
}

int rt_mpi_coll_publish(RtMpi *m, const RtRankColl *d, size_t heap_top,
                        char *err, size_t errlen)
{
    Slot *s = &m->slots[(size_t)m->me * 2 + (d->seq & 1)];
    size_t es = d->dtype > DT_VOID && d->dtype < DT_COUNT
                    ? (size_t)dsl_dtype_bytes(d->dtype) : 0;
    size_t src_b = 0, dst_b = 0, cnt_b = 0, top = heap_top;
    switch (d->kind) {
    case RT_COLL_ALL_REDUCE: dst_b = d->count * es; break;
    case RT_COLL_ALL_GATHER: src_b = d->count * es; break;
    case RT_COLL_REDUCE_SCATTER:
        src_b = d->count * es;
        cnt_b = d->counts ? (size_t)m->n * sizeof(size_t) : 0;
        break;
    case RT_COLL_ALL_TO_ALL:
        cnt_b = d->counts ? (size_t)m->n * sizeof(size_t) : 0;
        if (es && d->counts) {
            size_t sum = 0;
            for (int q = 0; q < m->n; q++)
                sum += d->counts[q];
            src_b = sum * es;
        }
        break;
    case RT_COLL_BROADCAST:
        dst_b = d->root == m->me ? d->count * es : 0;
        break;
    case RT_COLL_REDUCE: case RT_COLL_GATHER: /* the root reads every src */
        src_b = d->count * es;
        break;
    case RT_COLL_EXCHANGE: /* a stream of messages and a table of counts */
        cnt_b = (size_t)m->n * 4 * sizeof(size_t);
        for (int q = 0; q < m->n; q++)
            src_b += d->counts[(size_t)q * 4 + 1];
        break;
    case RT_COLL_SCATTER: /* every rank reads the root's src */
        src_b = d->root == m->me ? d->count * (size_t)m->n * es : 0;
        break;
    default: break;
    }
    const char *what = rt_rank_coll_name(d->kind);
    m->re_src = NULL;
    if (place(m, d->src, src_b, &s->src, &top, what, err, errlen) ||
        place(m, d->dst, dst_b, &s->dst, &top, what, err, errlen) ||
        place(m, d->counts, cnt_b, &s->counts, &top, what, err, errlen))
        return -1;
    s->counts2.rank = -1; /* peers never read the receive counts */
    if (d->kind == RT_COLL_ALL_REDUCE && s->dst.rank == m->me &&
        m->base[m->me] + s->dst.off != (const char *)d->dst) {
        m->re_src = d->dst;
        m->re_off = s->dst.off;
        m->re_bytes = dst_b;
    }
    s->kind = d->kind;
    s->dtype = d->dtype;
    s->op = d->op;
    s->root = d->root;
    s->count = d->count;
    s->seq = d->seq;
    return 0;
}

static const void *loc_ptr(const RtMpi *m, Loc l)
{
    return l.rank < 0 ? NULL : m->base[l.rank] + l.off;
}

const RtRankColl *rt_mpi_coll_view(RtMpi *m, int q, uint64_t seq)
{
    const Slot *s = &m->slots[(size_t)q * 2 + (seq & 1)];
    RtRankColl *v = &m->view[q];
    v->kind = s->kind;
    v->dtype = s->dtype;
    v->op = s->op;
    v->root = s->root;
    v->count = s->count;
    v->seq = s->seq;
    v->src = loc_ptr(m, s->src);
    v->dst = (void *)loc_ptr(m, s->dst);
    v->counts = loc_ptr(m, s->counts);
    v->counts2 = loc_ptr(m, s->counts2);
    return v;
}

void rt_mpi_coll_restage(RtMpi *m)
{
    if (m->re_src) /* once: all_reduce's closing barrier needs no copy */
        memcpy(m->base[m->me] + m->re_off, m->re_src, m->re_bytes);
    m->re_src = NULL;
}

int rt_mpi_run_begin(RtMpi *m, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    MPI_Barrier(MPI_COMM_WORLD);   /* nobody still reads the last run's */
    if (m->me == 0)
        ctrl_reset(m);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}

int rt_mpi_run_end(RtMpi *m)
{
    unsigned round = 0;
    while (__atomic_load_n(&m->ctrl->nleft, __ATOMIC_ACQUIRE) < m->n &&
           !failed(m))
        backoff(&round);
    if (!failed(m))
        return 0;
    /* the first failing rank prints and aborts the job; should it be stuck
     * where it cannot, do it for it after a while */
    for (int i = 0; i < 1000; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char cause[RT_RANK_ERRLEN];
    int q = rt_mpi_fail_rank(m, cause, sizeof cause);
    fprintf(stderr, "blkc: error: rank %d: %s\n", q, cause);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    _exit(3);
}

#endif /* BLKC_HAVE_MPI */
