/* ranks.c — a local world of ranks as threads: creating it and running
 * them, errors and fault propagation, signal waits and the symmetric heap.
 * The barrier and the collectives' agreement are in rank_agree.c, the end
 * of a run and the ranks it leaves behind in rank_end.c; the world's
 * fields are in ranks_impl.h.
 *
 * Synchronisation is done with GCC __atomic builtins on plain fields so the
 * same cells (signals, the abort flag) can be touched by generated code.
 * Waiting spins briefly, then yields, then sleeps (<= 200 us), polling the
 * world's abort flag every round so a failure anywhere stops every waiter
 * within a few ms. */
#include "ranks_impl.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ waiting */

int64_t rt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rt_barrier_grace(int64_t waited_ms, int64_t timeout_ms)
{
    return waited_ms < 2 * timeout_ms + 1000;
}

void rt_rank_list_add(char *buf, size_t len, size_t *used, int *count, int q)
{
    if (*used < len)
        *used += (size_t)snprintf(buf + *used, len - *used, "%s%d",
                                  (*count)++ ? ", " : "", q);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void rt_rank_backoff(unsigned *round)
{
    unsigned k = (*round)++;
    if (k < 64) {
        cpu_relax();
    } else if (k < 320) {
        sched_yield();
    } else {
        unsigned us = k < 400 ? 20 : k < 600 ? 50 : 200;
        struct timespec ts = {0, (long)us * 1000};
        nanosleep(&ts, NULL);
    }
}

static int sig_ok(uint64_t seen, int cmp, uint64_t v)
{
    return cmp == RT_WAIT_EQ ? seen == v : seen >= v;
}

int rt_signal_wait_cell(const volatile uint64_t *cell, int cmp, uint64_t v,
                        int64_t timeout_ms, const volatile int *abort_flag)
{
    int64_t start = -1;
    unsigned round = 0;
    for (;;) {
        if (sig_ok(__atomic_load_n(cell, __ATOMIC_ACQUIRE), cmp, v))
            return 0;
        if (abort_flag && __atomic_load_n(abort_flag, __ATOMIC_ACQUIRE))
            return -2;
        if (round >= 64) {     /* past the spin phase: watch the clock */
            int64_t t = rt_now_ms();
            if (start < 0)
                start = t;
            else if (timeout_ms >= 0 && t - start >= timeout_ms)
                return -1;
        } else if (timeout_ms == 0) {
            return -1;
        }
        rt_rank_backoff(&round);
    }
}

void rt_signal_notify_cell(volatile uint64_t *cell, uint64_t v, int op)
{
    if (op == RT_SIG_ADD)
        __atomic_fetch_add(cell, v, __ATOMIC_RELEASE);
    else
        __atomic_store_n(cell, v, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ errors */

/* Mark the world failed: its abort flag and the GPU ranks' mirror. */
static void set_failed(RtWorld *w)
{
    __atomic_store_n(&w->failed, 1, __ATOMIC_RELEASE);
    if (w->mirror)
        __atomic_store_n(w->mirror, 1, __ATOMIC_RELEASE);
}

static void rank_vfail(RtRank *r, const char *fmt, va_list ap)
{
    RtWorld *w = r->world;
    char msg[RT_RANK_ERRLEN];
    vsnprintf(msg, sizeof msg, fmt, ap);
    pthread_mutex_lock(&w->lock);
    if (!r->has_err) {
        int n = snprintf(r->err, sizeof r->err, "rank %d: ", r->id);
        size_t k = 0;
        for (size_t i = (size_t)n; i + 1 < sizeof r->err && msg[k]; i++)
            r->err[i] = msg[k++];
        r->err[(size_t)n + k] = 0;
        r->has_err = 1;
    }
    if (w->fail_rank == -1) {
        w->fail_rank = r->id;
        snprintf(w->fail_msg, sizeof w->fail_msg, "%s", msg);
    }
    pthread_mutex_unlock(&w->lock);
    set_failed(w);
    if (w->mpi) /* the first failure of the job prints and aborts it */
        rt_mpi_fail(w->mpi, r->id, msg);
}

int rt_rank_fail(RtRank *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rank_vfail(r, fmt, ap);
    va_end(ap);
    return -1;
}

int rt_rank_aborted(RtRank *r)
{
    RtWorld *w = r->world;
    char cause[RT_RANK_ERRLEN];
    int q;
    pthread_mutex_lock(&w->lock);
    q = w->fail_rank;
    snprintf(cause, sizeof cause, "%s", w->fail_msg);
    pthread_mutex_unlock(&w->lock);
    if (w->mpi && q != r->id)
        q = rt_mpi_fail_rank(w->mpi, cause, sizeof cause);
    if (q == r->id)
        return -1;             /* our own failure, already recorded */
    if (q < 0)
        return rt_rank_fail(r, "aborted: %s", cause);
    return rt_rank_fail(r, "aborted because rank %d failed: %s", q, cause);
}

int rt_rank_failed(const RtRank *r)
{
    if (r->world->mpi)
        return __atomic_load_n(rt_mpi_abort_flag(r->world->mpi),
                               __ATOMIC_ACQUIRE) != 0;
    return __atomic_load_n(&r->world->failed, __ATOMIC_ACQUIRE) != 0;
}

int rt_rank_check(RtRank *r)
{
    return rt_rank_failed(r) ? rt_rank_aborted(r) : 0;
}

const char *rt_rank_error(const RtRank *r)
{
    return r->err;
}

int rt_rank_id(const RtRank *r) { return r->id; }
int *rt_rank_in_wait(RtRank *r)
{
    return r->world->mpi ? rt_mpi_in_wait(r->world->mpi) : &r->in_wait;
}
int rt_rank_size(const RtRank *r) { return r->world->nranks; }
RtWorld *rt_rank_world(const RtRank *r) { return r->world; }
int rt_world_size(const RtWorld *w) { return w->nranks; }
int rt_world_kind(const RtWorld *w) { return w->kind; }
char *const *rt_world_heap_bases(const RtWorld *w) { return w->heap_base; }
int64_t rt_world_timeout_ms(const RtWorld *w) { return w->timeout_ms; }
int64_t rt_world_coll_timeout_ms(const RtWorld *w) { return w->coll_timeout_ms; }

const volatile int *rt_world_abort_flag(const RtWorld *w)
{
    if (w->mpi)
        return rt_mpi_abort_flag(w->mpi);
    return &w->failed;
}

void rt_world_set_abort_mirror(RtWorld *w, volatile int *flag)
{
    w->mirror = flag;
}

const char *rt_world_rank_error(const RtWorld *w, int rank)
{
    if (rank < 0 || rank >= w->nranks)
        return "";
    return w->ranks[rank].err;
}

/* ------------------------------------------------------------ signals */

/* An RMA world (ranks on several nodes): cells on the heap only change by
 * MPI atomics, so that a peer's notify and this rank's wait see each other. */
static RtMpi *rma_of(const RtRank *r)
{
    RtMpi *m = r->world->mpi;
    return m && rt_mpi_rma(m) ? m : NULL;
}

int rt_signal_notify(RtRank *r, uint64_t *cell, uint64_t v, int op)
{
    RtMpi *m = rma_of(r);
    if (!m || rt_mpi_sig_notify(m, cell, v, op))
        rt_signal_notify_cell(cell, v, op);
    return 0;
}

/* The cell's value now (a peer's cell through RMA). */
static uint64_t sig_peek(const RtRank *r, const volatile uint64_t *cell)
{
    RtMpi *m = rma_of(r);
    uint64_t v;
    if (m && !rt_mpi_sig_load(m, (const uint64_t *)cell, &v))
        return v;
    return __atomic_load_n(cell, __ATOMIC_ACQUIRE);
}

/* rt_signal_wait_cell over RMA loads: 0, -1 timed out, -2 aborted. */
static int rma_wait(RtRank *r, const uint64_t *cell, int cmp, uint64_t v)
{
    int64_t start = rt_now_ms(), timeout_ms = r->world->timeout_ms;
    unsigned round = 0;
    for (;;) {
        if (sig_ok(sig_peek(r, cell), cmp, v))
            return 0;
        if (rt_rank_failed(r))
            return -2;
        if (timeout_ms >= 0 && rt_now_ms() - start >= timeout_ms)
            return -1;
        if (round++ >= 16) { /* each poll is a network round trip */
            struct timespec ts = {0, 200 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

int rt_sym_copy(RtRank *r, void *dst, const void *src, size_t bytes)
{
    RtMpi *m = rma_of(r);
    if (!m) {
        memmove(dst, src, bytes);
        return 0;
    }
    if (rt_mpi_heap_copy(m, dst, src, bytes))
        return rt_rank_fail(r, "copy: out of memory staging %zu bytes "
                            "between two peers", bytes);
    return 0;
}

int rt_signal_wait_report(RtRank *r, int rc, const volatile uint64_t *cell,
                          int cmp, uint64_t v, const char *name)
{
    if (rc == -2 || rt_rank_failed(r))
        return rt_rank_aborted(r);
    char buf[64];
    if (!name) {
        RtWorld *w = r->world;
        const unsigned char *p = (const unsigned char *)cell;
        size_t all = (size_t)w->nranks * w->heap_stride;
        if (w->heap && p >= w->heap && p < w->heap + all)
            snprintf(buf, sizeof buf, "at heap offset %zu",
                     (size_t)(p - w->heap) % w->heap_stride);
        else
            snprintf(buf, sizeof buf, "at %p", (const void *)cell);
        name = buf;
    }
    uint64_t seen = sig_peek(r, cell);
    return rt_rank_fail(r,
                        "wait on signal %s timed out after %lld ms: expected "
                        "%s %llu, saw %llu",
                        name, (long long)r->world->timeout_ms,
                        cmp == RT_WAIT_EQ ? "==" : ">=", (unsigned long long)v,
                        (unsigned long long)seen);
}

int rt_signal_wait(RtRank *r, const uint64_t *cell, int cmp, uint64_t v,
                   const char *name)
{
    RtWorld *w = r->world;
    int *busy = rt_rank_in_wait(r);
    __atomic_add_fetch(busy, 1, __ATOMIC_ACQ_REL);
    int rc = rma_of(r) ? rma_wait(r, cell, cmp, v)
                       : rt_signal_wait_cell(cell, cmp, v, w->timeout_ms,
                                             rt_world_abort_flag(w));
    __atomic_sub_fetch(busy, 1, __ATOMIC_ACQ_REL);
    if (rc == 0)
        return 0;
    return rt_signal_wait_report(r, rc, cell, cmp, v, name);
}

/* ------------------------------------------------------------ sym heap */

int rt_sym_alloc(RtRank *r, size_t bytes, size_t *offset_out)
{
    RtWorld *w = r->world;
    RtRankColl d = {.kind = RT_COLL_SYM_ALLOC, .dtype = -1, .op = -1,
                    .root = -1, .count = bytes};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    /* every rank has the same top (same sizes, same order) */
    size_t off = (r->sym_top + RT_SYM_ALIGN - 1) & ~(size_t)(RT_SYM_ALIGN - 1);
    if (off > w->heap_bytes || bytes > w->heap_bytes - off) {
        size_t left = off > w->heap_bytes ? 0 : w->heap_bytes - off;
        rt_rank_fail(r,
                     "symmetric heap out of memory: requested %zu bytes, "
                     "%zu left of %zu",
                     bytes, left, w->heap_bytes);
        rt_rank_coll_end(r);
        return -1;
    }
    if (bytes)
        memset(w->heap_base[r->id] + off, 0, bytes);
    r->sym_top = off + bytes;
    if (rt_rank_coll_end(r))
        return -1;
    *offset_out = off;
    return 0;
}

size_t rt_sym_mark(const RtRank *r)
{
    return r->sym_top;
}

static int sym_release(RtRank *r, size_t mark, int kind)
{
    RtRankColl d = {.kind = kind, .dtype = -1, .op = -1, .root = -1,
                    .count = mark};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    if (mark > r->sym_top) {
        rt_rank_fail(r, "sym_release: mark %zu is above the heap top %zu",
                     mark, r->sym_top);
        rt_rank_coll_end(r);
        return -1;
    }
    r->sym_top = mark;
    return rt_rank_coll_end(r);
}

int rt_sym_release(RtRank *r, size_t mark)
{
    return sym_release(r, mark, RT_COLL_SYM_RELEASE);
}

int rt_sym_release_final(RtRank *r, size_t mark)
{
    return sym_release(r, mark, RT_COLL_LEAVE);
}

void *rt_sym_ptr(const RtRank *r, size_t offset, int peer)
{
    const RtWorld *w = r->world;
    if (!w->heap || peer < 0 || peer >= w->nranks || offset > w->heap_bytes)
        return NULL;
    return w->heap_base[peer] + offset;
}

void *rt_sym_peer_of(const RtRank *r, const void *p, int peer)
{
    const RtWorld *w = r->world;
    const unsigned char *c = p;
    size_t all = (size_t)w->nranks * w->heap_stride;
    if (!w->heap || c < w->heap || c >= w->heap + all)
        return NULL;
    size_t off = (size_t)(c - w->heap) % w->heap_stride;
    return rt_sym_ptr(r, off, peer);
}

size_t rt_sym_heap_bytes(const RtRank *r)
{
    return r->world->heap_bytes;
}

/* ------------------------------------------------------------ world */

/* The fields every kind of world has: its kind, the ranks array and the
 * heap-base table. On failure w is destroyed and err says why. */
static int world_init(RtWorld *w, int kind, int nranks, char *err,
                      size_t errlen)
{
    w->kind = kind;
    w->nranks = nranks;
    w->fail_rank = -1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->left_cv, &ca);
    pthread_condattr_destroy(&ca);
    w->ranks = aligned_alloc(CACHELINE, sizeof(RtRank) * (size_t)nranks);
    if (w->ranks)
        memset(w->ranks, 0, sizeof(RtRank) * (size_t)nranks);
    w->heap_base = calloc((size_t)nranks, sizeof(char *));
    if (!w->ranks || !w->heap_base) {
        snprintf(err, errlen, "out of memory creating a world of %d ranks",
                 nranks);
        rt_world_destroy(w);
        return -1;
    }
    return 0;
}

int rt_world_create(int nranks, size_t heap_bytes, RtWorld **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (nranks < 1 || nranks > RT_RANK_MAX) {
        snprintf(err, errlen, "world size %d is out of range 1..%d", nranks,
                 RT_RANK_MAX);
        return -1;
    }
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    size_t stride = (heap_bytes + page - 1) / page * page;
    if (stride < heap_bytes || (stride && (size_t)nranks > SIZE_MAX / stride)) {
        snprintf(err, errlen, "symmetric heap of %zu bytes x %d ranks is too "
                 "large", heap_bytes, nranks);
        return -1;
    }
    RtWorld *w = aligned_alloc(CACHELINE, (sizeof(RtWorld) + CACHELINE - 1) /
                                              CACHELINE * CACHELINE);
    if (w)
        memset(w, 0, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory creating a world of %d ranks",
                 nranks);
        return -1;
    }
    w->heap_bytes = heap_bytes;
    w->heap_stride = stride;
    if (world_init(w, RT_WORLD_LOCAL, nranks, err, errlen))
        return -1;
    if (stride) {
        void *m = mmap(NULL, stride * (size_t)nranks, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            snprintf(err, errlen,
                     "cannot map a symmetric heap of %zu bytes x %d ranks: %s",
                     heap_bytes, nranks, strerror(errno));
            rt_world_destroy(w);
            return -1;
        }
        w->heap = m;
    }
    for (int q = 0; q < nranks; q++) {
        w->ranks[q].world = w;
        w->ranks[q].id = q;
        w->heap_base[q] = w->heap ? (char *)w->heap + stride * (size_t)q
                                  : NULL;
    }
    *out = w;
    return 0;
}

int rt_world_keep(RtWorld *w, void (*release)(void *), void *ctx)
{
    RtWorldKeep *k = malloc(sizeof *k);
    if (!k)
        return -1;
    k->release = release;
    k->ctx = ctx;
    pthread_mutex_lock(&w->lock);
    k->next = w->keeps;
    w->keeps = k;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

void rt_world_free(RtWorld *w)
{
    for (RtWorldKeep *k = w->keeps, *nx; k; k = nx) {
        nx = k->next;
        k->release(k->ctx);
        free(k);
    }
    if (w->mpi)
        rt_mpi_free(w->mpi); /* the heap is its window */
    else if (w->heap)
        munmap(w->heap, w->heap_stride * (size_t)w->nranks);
    free(w->heap_base);
    for (int q = 0; w->ranks && q < w->nranks; q++)
        for (int k = 0; k < 4; k++)
            free(w->ranks[q].kept[k]);
    free(w->ranks);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->left_cv);
    free(w);
}

void rt_world_destroy(RtWorld *w)
{
    if (w && !rt_world_keep_behind(w))
        rt_world_free(w);
}

static void *rank_main(void *p)
{
    RtRank *r = p;
    RtWorld *w = r->world;
    int rc = w->fn(r, w->arg);
    r->ret = rc;
    if (rc != 0) {
        pthread_mutex_lock(&w->lock);
        int has = r->has_err;
        pthread_mutex_unlock(&w->lock);
        if (!has)
            rt_rank_fail(r, "returned %d", rc);
    }
    int running = RANK_RUNNING;
    if (!__atomic_compare_exchange_n(&r->left, &running, RANK_RETURNED, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        rt_world_behind_returned(w); /* rt_world_end_run has gone: only the world is left */
        return NULL;
    }
    int none = -1;
    __atomic_compare_exchange_n(&w->first_left, &none, r->id, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&w->lock); /* rt_world_end_run waits on left_cv */
    __atomic_add_fetch(&w->nleft, 1, __ATOMIC_ACQ_REL);
    pthread_cond_broadcast(&w->left_cv);
    pthread_mutex_unlock(&w->lock);
    if (w->mpi)
        rt_mpi_left(w->mpi);
    return NULL;
}

static int64_t env_timeout_ms(void)
{
    const char *s = getenv("BLKC_WAIT_TIMEOUT_MS");
    if (!s || !*s)
        return 5000;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v < 0)
        return 5000;
    return (int64_t)v;
}

/* A non-negative integer environment variable, or -1. */
static int64_t env_ms(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end || v < 0 ? -1 : (int64_t)v;
}

/* The barrier and collective timeout: BLKC_COLL_TIMEOUT_MS; else 4 x
 * BLKC_WAIT_TIMEOUT_MS, at least 1 s, when only that is set; else 60 s.
 * Longer than a signal wait's on purpose: peers legitimately compute (or
 * allocate) before they arrive, and a loaded machine can stall a thread
 * for a few hundred ms. */
static int64_t env_coll_timeout_ms(void)
{
    int64_t c = env_ms("BLKC_COLL_TIMEOUT_MS"), w = env_ms("BLKC_WAIT_TIMEOUT_MS");
    if (c >= 0)
        return c;
    if (w >= 0)
        return w * 4 > 1000 ? w * 4 : 1000;
    return 60000;
}

int64_t rt_set_deadline_ms(void)
{
    if (env_ms("BLKC_COLL_TIMEOUT_MS") < 0 && env_ms("BLKC_WAIT_TIMEOUT_MS") < 0)
        return -1;
    return env_coll_timeout_ms();
}

/* Under mpirun, the waits for the other processes outside a run (MPI_Init,
 * the windows, the start of a run, teardown, MPI_Finalize):
 * BLKC_MPI_SETUP_TIMEOUT_MS; else the collectives' deadline, at least 60 s
 * (processes start, load and compile at their own pace before they come). */
static int64_t env_setup_timeout_ms(void)
{
    int64_t s = env_ms("BLKC_MPI_SETUP_TIMEOUT_MS"), c = env_coll_timeout_ms();
    if (s >= 0)
        return s;
    return c > 60000 ? c : 60000;
}

static int mpi_world_run(RtWorld *w, int (*fn)(RtRank *r, void *arg),
                         void *arg, char *err, size_t errlen);

/* A rank's per-run state, cleared before every run (under the world lock). */
static void reset_rank(RtRank *r)
{
    r->ret = 0;
    r->left = RANK_RUNNING;
    r->has_err = 0;
    r->err[0] = 0;
    r->sym_top = 0;
    r->coll_seq = 0;
    r->bar_arrived = 0;
    r->in_wait = 0;
    memset(r->coll, 0, sizeof r->coll);
}

/* The world's per-run state, set after the lock is released. */
static void begin_run(RtWorld *w, int (*fn)(RtRank *r, void *arg), void *arg)
{
    w->fn = fn;
    w->arg = arg;
    w->timeout_ms = env_timeout_ms();
    w->coll_timeout_ms = env_coll_timeout_ms();
    __atomic_store_n(&w->failed, 0, __ATOMIC_RELEASE);
    if (w->mirror)
        __atomic_store_n(w->mirror, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&w->nleft, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&w->first_left, -1, __ATOMIC_RELEASE);
}

int rt_world_run(RtWorld *w, int (*fn)(RtRank *r, void *arg), void *arg,
                 char *err, size_t errlen)
{
    if (w->mpi)
        return mpi_world_run(w, fn, arg, err, errlen);
    pthread_mutex_lock(&w->lock);
    if (w->running) {
        pthread_mutex_unlock(&w->lock);
        snprintf(err, errlen, "the world is already running");
        return -1;
    }
    if (w->behind) {
        pthread_mutex_unlock(&w->lock);
        snprintf(err, errlen, "the world has %d rank%s still running, left "
                 "behind by an earlier run", w->behind,
                 w->behind == 1 ? "" : "s");
        return -1;
    }
    w->running = 1;
    w->fail_rank = -1;
    w->fail_msg[0] = 0;
    for (int q = 0; q < w->nranks; q++)
        reset_rank(&w->ranks[q]);
    pthread_mutex_unlock(&w->lock);
    begin_run(w, fn, arg);
    __atomic_store_n(&w->bar_count, 0, __ATOMIC_RELEASE);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, RT_RANK_STACK);
    int started = 0;
    for (; started < w->nranks; started++) {
        RtRank *r = &w->ranks[started];
        int e = pthread_create(&r->thread, &attr, rank_main, r);
        if (e) {
            pthread_mutex_lock(&w->lock);
            if (w->fail_rank == -1) {
                w->fail_rank = -2;
                snprintf(w->fail_msg, sizeof w->fail_msg,
                         "cannot start the thread of rank %d: %s", started,
                         strerror(e));
            }
            pthread_mutex_unlock(&w->lock);
            set_failed(w);
            break;
        }
    }
    pthread_attr_destroy(&attr);
    rt_world_end_run(w, started);

    int rc = 0;
    pthread_mutex_lock(&w->lock);
    if (w->fail_rank >= 0) {
        snprintf(err, errlen, "%s", w->ranks[w->fail_rank].err);
        rc = -1;
    } else if (w->fail_rank == -2) {
        snprintf(err, errlen, "%s", w->fail_msg);
        rc = -1;
    }
    w->running = 0;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* ------------------------------------------------------------ MPI world */

int rt_world_self(const RtWorld *w)
{
    return w->mpi ? w->self : 0;
}

int rt_world_create_mpi(int nranks, size_t heap_bytes, RtWorld **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    if (nranks < 1 || nranks > RT_RANK_MAX) {
        snprintf(err, errlen, "world size %d is out of range 1..%d", nranks,
                 RT_RANK_MAX);
        return -1;
    }
    RtWorld *w = aligned_alloc(CACHELINE, (sizeof(RtWorld) + CACHELINE - 1) /
                                              CACHELINE * CACHELINE);
    if (!w) {
        snprintf(err, errlen, "out of memory creating a world of %d ranks",
                 nranks);
        return -1;
    }
    memset(w, 0, sizeof *w);
    if (world_init(w, RT_WORLD_MPI, nranks, err, errlen))
        return -1;
    size_t heap;
    if (rt_mpi_create(nranks, heap_bytes, env_setup_timeout_ms(), &w->mpi,
                      &w->self, &heap, w->heap_base, err, errlen)) {
        rt_world_destroy(w);
        return -1;
    }
    /* the heaps are contiguous, heap_bytes apart, as in a local world */
    w->heap_bytes = heap;
    w->heap_stride = heap;
    w->heap = (unsigned char *)w->heap_base[0];
    for (int q = 0; q < nranks; q++) {
        w->ranks[q].world = w;
        w->ranks[q].id = q;
    }
    *out = w;
    return 0;
}

/* Run fn on this process's rank (on a thread with the rank stack size). A
 * failure anywhere ends the job in rank_vfail / rt_mpi_run_end, so this
 * returns 0 or a start-up error. */
static int mpi_world_run(RtWorld *w, int (*fn)(RtRank *r, void *arg),
                         void *arg, char *err, size_t errlen)
{
    RtRank *r = &w->ranks[w->self];
    pthread_mutex_lock(&w->lock);
    if (w->running) {
        pthread_mutex_unlock(&w->lock);
        snprintf(err, errlen, "the world is already running");
        return -1;
    }
    w->running = 1;
    w->fail_rank = -1;
    w->fail_msg[0] = 0;
    reset_rank(r);
    pthread_mutex_unlock(&w->lock);
    begin_run(w, fn, arg);
    int rc = rt_mpi_run_begin(w->mpi, err, errlen);
    if (rc == 0) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, RT_RANK_STACK);
        int e = pthread_create(&r->thread, &attr, rank_main, r);
        pthread_attr_destroy(&attr);
        if (e) {
            rt_rank_fail(r, "cannot start the thread of rank %d: %s", r->id,
                         strerror(e));
            rt_mpi_left(w->mpi);
        } else {
            pthread_join(r->thread, NULL);
        }
        rc = rt_mpi_run_end(w->mpi, w->coll_timeout_ms);
    }
    pthread_mutex_lock(&w->lock);
    w->running = 0;
    pthread_mutex_unlock(&w->lock);
    return rc;
}
