/* rank_mpi.c — worlds of kind RT_WORLD_MPI: one rank per process under
 * mpirun, with the symmetric heap and the world's control block in MPI-3
 * shared-memory windows on one node, or in RMA windows (passive target,
 * MPI atomics, a progress thread) when the processes are on several nodes
 * or BLKC_MPI_RMA=1 (see rank_mpi.h and docs/device.md).
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

int rt_mpi_create(int nranks, size_t heap_bytes, int64_t setup_ms,
                  RtMpi **out, int *me, size_t *heap_out, char **heap_base,
                  char *err, size_t errlen)
{
    (void)nranks; (void)heap_bytes; (void)setup_ms; (void)me; (void)heap_out;
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
int rt_mpi_run_end(RtMpi *m, int64_t timeout_ms)
{ (void)m; (void)timeout_ms; return -1; }
int rt_mpi_rma(const RtMpi *m) { (void)m; return 0; }
int rt_mpi_heap_copy(RtMpi *m, void *dp, const void *sp, size_t bytes)
{ (void)m; memmove(dp, sp, bytes); return 0; }
int rt_mpi_sig_notify(RtMpi *m, uint64_t *cell, uint64_t v, int op)
{ (void)m; (void)cell; (void)v; (void)op; return -1; }
int rt_mpi_sig_load(RtMpi *m, const uint64_t *cell, uint64_t *v)
{ (void)m; (void)cell; (void)v; return -1; }
void rt_mpi_coll_refresh(RtMpi *m) { (void)m; }

#else /* BLKC_HAVE_MPI */

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int rt_mpi_built(void) { return 1; }

/* A buffer as peers find it: rank -1 is NULL, else [off, off + bytes) of
 * rank's heap. */
typedef struct Loc {
    int32_t rank;
    int32_t pad_;
    uint64_t off, bytes;
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
    _Alignas(64) int bar_count;
    _Alignas(64) int bar_gen;
    _Alignas(64) char tail_[64]; /* then left[n], arrived[n], in_wait[n],
                                  then slots[n][2] */
} Ctrl;

enum { V_SRC, V_DST, V_COUNTS, V_COUNTS2, V_N }; /* a view's buffers */

struct RtMpi {
    MPI_Comm shm;              /* this node's processes (= the world) */
    MPI_Win heap_win, ctrl_win;
    int me, n;
    int64_t setup_ms;          /* deadline of the waits outside a run */
    int rma;                   /* 1: RMA windows (several nodes, or forced) */
    Ctrl *ctrl;                /* shared: the block; RMA: a local layout
                                  whose addresses give the displacements */
    int *left;                 /* [n] */
    int *arrived;              /* [n]: 1 + the barrier generation each rank
                                  last arrived at */
    int *in_wait;              /* [n]: each rank's signal waits in progress */
    Slot *slots;               /* [n][2], by collective parity */
    char **base;               /* [n] heaps in this process (RMA: peers'
                                  are PROT_NONE address space) */
    char *resv;                /* RMA: the reservation of n heaps */
    size_t resv_bytes;
    size_t heap_bytes;
    RtRankColl *view;          /* [n] peers' descriptors, translated */
    /* RMA: local copies of the peers' published buffers, per peer and
     * V_*, the slot they came from and its seq + 1 (0: none) */
    char **scr;                /* [n * V_N] */
    size_t *scr_cap;           /* [n * V_N] */
    Slot *vslot;               /* [n] */
    uint64_t *vseq;            /* [n] */
    int refresh;               /* all_reduce: refetch dst after the sync */
    int lfailed;               /* RMA: the abort flag as this process saw it */
    int lin_wait;              /* RMA: this process's waits in progress */
    int locked;                /* RMA: the windows' lock_all epoch is open */
    /* all_reduce with a staged buffer: refreshed before its second phase */
    const void *re_src;
    uint64_t re_off;
    size_t re_bytes;
};

static int mpi_started;
static int64_t mpi_setup_ms = -1; /* the last world's, for MPI_Finalize */

/* RMA: passive-target operations on a process need that process to enter
 * MPI now and then (osc/ucx over TCP has no asynchronous progress), and a
 * rank may compute in a kernel for seconds. One thread per process polls
 * MPI while an RMA world exists. */
static pthread_t prog_thread;
static int prog_run;           /* 1 while prog_thread runs */

static void *prog_main(void *arg)
{
    (void)arg;
    while (__atomic_load_n(&prog_run, __ATOMIC_ACQUIRE)) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                   MPI_STATUS_IGNORE);
        struct timespec ts = {0, 200 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void prog_stop(void)
{
    if (__atomic_exchange_n(&prog_run, 0, __ATOMIC_ACQ_REL))
        pthread_join(prog_thread, NULL);
}

static void mpi_stop(void)
{
    int fin = 0;
    prog_stop();
    MPI_Finalized(&fin);
    if (!fin) { /* waits for every process: a late one is named first */
        int n = 1, r = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        rt_mpig_gate(r, n, mpi_setup_ms, "MPI_Finalize");
        rt_mpig_arm("MPI_Finalize", r, mpi_setup_ms);
        MPI_Finalize();
        rt_mpig_disarm();
    }
}

static int mpi_start(int64_t setup_ms, char *err, size_t errlen)
{
    int init = 0;
    MPI_Initialized(&init);
    if (init)
        return 0;
    int prov;
    /* waits for every process of the job: a rank stuck before it would
     * hang this one */
    rt_mpig_arm("MPI_Init", rt_mpi_launch_rank(), setup_ms);
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &prov);
    rt_mpig_disarm();
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed");
        return -1;
    }
    if (!mpi_started) {
        mpi_started = 1;
        atexit(mpi_stop);
    }
    return 0;
}

/* RMA waits poll over the network (each poll a round trip to rank 0's
 * progress): after a short spin they sleep up to 1 ms between polls. */
static void rma_backoff(unsigned *round)
{
    unsigned k = (*round)++;
    if (k >= 16) {
        long us = k < 66 ? 20 * (long)(k - 15) : 1000;
        struct timespec ts = {0, us * 1000};
        nanosleep(&ts, NULL);
    }
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

/* ------------------------------------------------------------ control */
/* Every access to the control block goes through these: plain atomics on
 * the shared window, MPI atomics on rank 0's RMA window otherwise (MPI
 * orders and makes atomic only RMA operations against each other, so rank
 * 0 uses them on its own block too). Each RMA access is flushed at once. */

static MPI_Aint cdisp(const RtMpi *m, const void *p)
{
    return (MPI_Aint)((const char *)p - (const char *)m->ctrl);
}

static int c_get(RtMpi *m, int *p)
{
    if (!m->rma)
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    int v = 0;
    MPI_Fetch_and_op(NULL, &v, MPI_INT, 0, cdisp(m, p), MPI_NO_OP, m->ctrl_win);
    MPI_Win_flush(0, m->ctrl_win);
    return v;
}

static void c_set(RtMpi *m, int *p, int v)
{
    if (!m->rma) {
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
        return;
    }
    MPI_Accumulate(&v, 1, MPI_INT, 0, cdisp(m, p), 1, MPI_INT, MPI_REPLACE,
                   m->ctrl_win);
    MPI_Win_flush(0, m->ctrl_win);
}

static int c_add(RtMpi *m, int *p, int v) /* returns the new value */
{
    if (!m->rma)
        return __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL);
    int old = 0;
    MPI_Fetch_and_op(&v, &old, MPI_INT, 0, cdisp(m, p), MPI_SUM, m->ctrl_win);
    MPI_Win_flush(0, m->ctrl_win);
    return old + v;
}

static int c_cas(RtMpi *m, int *p, int expect, int want) /* 1 if swapped */
{
    if (!m->rma)
        return __atomic_compare_exchange_n(p, &expect, want, 0,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    int old = 0;
    MPI_Compare_and_swap(&want, &expect, &old, MPI_INT, 0, cdisp(m, p),
                         m->ctrl_win);
    MPI_Win_flush(0, m->ctrl_win);
    return old == expect;
}

/* Bytes that the barrier's atomics order: a collective slot, the message. */
static void c_put(RtMpi *m, void *p, const void *src, size_t n)
{
    if (!m->rma) {
        memcpy(p, src, n);
        return;
    }
    MPI_Put(src, (int)n, MPI_BYTE, 0, cdisp(m, p), (int)n, MPI_BYTE,
            m->ctrl_win);
    MPI_Win_flush(0, m->ctrl_win);
}

static void c_read(RtMpi *m, void *dst, const void *p, size_t n)
{
    if (!m->rma) {
        memcpy(dst, p, n);
        return;
    }
    MPI_Get(dst, (int)n, MPI_BYTE, 0, cdisp(m, p), (int)n, MPI_BYTE,
            m->ctrl_win);
    MPI_Win_flush(0, m->ctrl_win);
}

/* RMA: this process's stores to its heap become visible to peers' gets,
 * and peers' puts to it to this process (the unified memory model). */
static void heap_sync(RtMpi *m)
{
    if (m->rma)
        MPI_Win_sync(m->heap_win);
}

/* ------------------------------------------------------------ heap RMA */

/* RMA: [off, off + bytes) of rank q's heap into dst (q != me). */
static void heap_get(RtMpi *m, void *dst, int q, uint64_t off, size_t bytes)
{
    for (size_t k = 0; k < bytes;) {
        size_t c = bytes - k < (1u << 30) ? bytes - k : (1u << 30);
        MPI_Get((char *)dst + k, (int)c, MPI_BYTE, q, (MPI_Aint)(off + k),
                (int)c, MPI_BYTE, m->heap_win);
        k += c;
    }
    MPI_Win_flush(q, m->heap_win);
}

static void heap_put(RtMpi *m, int q, uint64_t off, const void *src,
                     size_t bytes)
{
    for (size_t k = 0; k < bytes;) {
        size_t c = bytes - k < (1u << 30) ? bytes - k : (1u << 30);
        MPI_Put((const char *)src + k, (int)c, MPI_BYTE, q,
                (MPI_Aint)(off + k), (int)c, MPI_BYTE, m->heap_win);
        k += c;
    }
    MPI_Win_flush(q, m->heap_win);
}

/* The peer whose (RMA: PROT_NONE) heap range holds p, and the offset; -1
 * when p is on this rank's heap or on no heap. */
static int peer_of(const RtMpi *m, const void *p, size_t *off)
{
    const char *c = p;
    if (!m->resv || c < m->resv ||
        c >= m->resv + (size_t)m->n * m->heap_bytes)
        return -1;
    size_t k = (size_t)(c - m->resv) / m->heap_bytes;
    *off = (size_t)(c - m->resv) % m->heap_bytes;
    return (int)k == m->me ? -1 : (int)k;
}

int rt_mpi_rma(const RtMpi *m) { return m->rma; }

int rt_mpi_heap_copy(RtMpi *m, void *dp, const void *sp, size_t bytes)
{
    size_t so = 0, doff = 0;
    int sq = m->rma ? peer_of(m, sp, &so) : -1;
    int dq = m->rma ? peer_of(m, dp, &doff) : -1;
    if (!bytes)
        return 0;
    if (sq < 0 && dq < 0) {
        memmove(dp, sp, bytes);
    } else if (dq < 0) {
        heap_get(m, dp, sq, so, bytes);
    } else {
        heap_sync(m);
        if (sq < 0) {
            heap_put(m, dq, doff, sp, bytes);
        } else { /* peer to peer: through this process */
            char *t = malloc(bytes);
            if (!t)
                return -1;
            heap_get(m, t, sq, so, bytes);
            heap_put(m, dq, doff, t, bytes);
            free(t);
        }
    }
    return 0;
}

/* A signal cell on a heap (RMA): q (this rank too) and offset, or -1. */
static int cell_of(const RtMpi *m, const void *p, size_t *off)
{
    const char *c = p;
    if (!m->rma || !m->resv || c < m->resv ||
        c >= m->resv + (size_t)m->n * m->heap_bytes)
        return -1;
    *off = (size_t)(c - m->resv) % m->heap_bytes;
    return (int)((size_t)(c - m->resv) / m->heap_bytes);
}

int rt_mpi_sig_notify(RtMpi *m, uint64_t *cell, uint64_t v, int op)
{
    size_t off;
    int q = cell_of(m, cell, &off);
    if (q < 0)
        return -1;
    heap_sync(m); /* release: this rank's stores before the signal */
    uint64_t old;
    if (op == RT_SIG_ADD)
        MPI_Fetch_and_op(&v, &old, MPI_UINT64_T, q, (MPI_Aint)off, MPI_SUM,
                         m->heap_win);
    else
        MPI_Accumulate(&v, 1, MPI_UINT64_T, q, (MPI_Aint)off, 1,
                       MPI_UINT64_T, MPI_REPLACE, m->heap_win);
    MPI_Win_flush(q, m->heap_win);
    return 0;
}

int rt_mpi_sig_load(RtMpi *m, const uint64_t *cell, uint64_t *v)
{
    size_t off;
    int q = cell_of(m, cell, &off);
    if (q < 0)
        return -1;
    MPI_Fetch_and_op(NULL, v, MPI_UINT64_T, q, (MPI_Aint)off, MPI_NO_OP,
                     m->heap_win);
    MPI_Win_flush(q, m->heap_win);
    heap_sync(m); /* acquire */
    return 0;
}

/* RMA: a kernel that loads or stores a peer's heap directly faults on its
 * PROT_NONE range; say so instead of crashing (write and _exit only:
 * async-signal-safe). The range is set once, before any kernel runs. */
static char *segv_lo, *segv_hi, *segv_mine;
static size_t segv_stride;
static int segv_rank;

/* append s to the line being built in buf (async-signal-safe) */
static size_t segv_put(char *buf, size_t n, size_t cap, const char *s)
{
    while (*s && n + 1 < cap)
        buf[n++] = *s++;
    return n;
}

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char *a = si->si_addr;
    if (a >= segv_lo && a < segv_hi &&
        !(a >= segv_mine && a < segv_mine + segv_stride)) {
        char num[2][16];
        int v[2] = {segv_rank, (int)((size_t)(a - segv_lo) / segv_stride)};
        for (int i = 0; i < 2; i++) {
            char t[16];
            int k = 0, x = v[i];
            do
                t[k++] = (char)('0' + x % 10);
            while ((x /= 10) && k < 15);
            for (int j = 0; j < k; j++)
                num[i][j] = t[k - 1 - j];
            num[i][k] = 0;
        }
        /* one write, so lines of several ranks do not interleave */
        char line[320];
        size_t n = segv_put(line, 0, sizeof line, "blkc: error: rank ");
        n = segv_put(line, n, sizeof line, num[0]);
        n = segv_put(line, n, sizeof line, ": a load or store reached rank ");
        n = segv_put(line, n, sizeof line, num[1]);
        n = segv_put(line, n, sizeof line,
                     "'s symmetric heap directly (peer memory in a kernel or "
                     "an expression), which needs all ranks on one node; ranks "
                     "on several nodes share data through collectives, copy "
                     "and signals\n");
        ssize_t k = write(2, line, n);
        (void)k;
        _exit(3);
    }
    signal(sig, SIG_DFL); /* any other fault: the default, on return */
}

static void segv_install(RtMpi *m)
{
    segv_lo = m->resv;
    segv_hi = m->resv + (size_t)m->n * m->heap_bytes;
    segv_mine = m->base[m->me];
    segv_stride = m->heap_bytes;
    segv_rank = m->me;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
}

/* ------------------------------------------------------------ windows */

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
    size_t za = rank_arrays(m->n), zs = (size_t)m->n * 2 * sizeof(Slot);
    char *zero = calloc(1, za > zs ? za : zs);
    c_set(m, &c->failed, 0);
    c_set(m, &c->fail_rank, -1);
    c_put(m, c->fail_msg, "", 1);
    c_set(m, &c->nleft, 0);
    c_set(m, &c->bar_count, 0);
    if (zero) {
        c_put(m, m->left, zero, za);
        c_put(m, m->slots, zero, zs);
    }
    free(zero);
}

static void ctrl_layout(RtMpi *m, char *cb)
{
    int n = m->n;
    m->ctrl = (Ctrl *)(((uintptr_t)cb + 63) / 64 * 64);
    m->left = (int *)(void *)m->ctrl->tail_;
    m->arrived = m->left + n;
    m->in_wait = m->arrived + n;
    m->slots = (Slot *)(void *)(m->ctrl->tail_ + rank_arrays(n));
}

/* One node: the heap and the control block in shared-memory windows. */
static int shm_windows(RtMpi *m, size_t stride, size_t page, char *err,
                       size_t errlen)
{
    int n = m->n, r = m->me;
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
    ctrl_layout(m, cb);
    int all_ok;
    MPI_Allreduce(&contiguous, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        snprintf(err, errlen, "the MPI shared-memory window of the symmetric "
                 "heap is not contiguous across the ranks");
        return -1;
    }
    return 0;
}

/* Several nodes (or BLKC_MPI_RMA=1): the heap is an RMA window over this
 * rank's part of a reservation of n heaps, so that heap pointers keep one
 * layout (heap_base[q] = heap_base[0] + q * stride) while peers' parts
 * stay PROT_NONE; the control block is an RMA window on rank 0. Both are
 * in one passive-target epoch (lock_all) for the world's life. */
static int rma_windows(RtMpi *m, size_t stride, char *err, size_t errlen)
{
    int n = m->n, r = m->me, ok = 1;
    char *mine = NULL;
    if (stride) {
        m->resv_bytes = stride * (size_t)n;
        void *v = mmap(NULL, m->resv_bytes, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (v == MAP_FAILED) {
            ok = 0;
            m->resv_bytes = 0;
        } else {
            m->resv = v;
            mine = m->resv + (size_t)r * stride;
            if (mprotect(mine, stride, PROT_READ | PROT_WRITE))
                ok = 0;
        }
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        snprintf(err, errlen, "cannot reserve %zu bytes of address space "
                 "for the symmetric heaps of %d ranks", stride * (size_t)n, n);
        return -1;
    }
    for (int q = 0; q < n; q++)
        m->base[q] = stride ? m->resv + (size_t)q * stride : NULL;
    MPI_Win_create(mine, (MPI_Aint)(mine ? stride : 0), 1, MPI_INFO_NULL,
                   MPI_COMM_WORLD, &m->heap_win);
    char *cb, *img = aligned_alloc(64, (ctrl_bytes(n) + 63) / 64 * 64);
    MPI_Win_allocate((MPI_Aint)(r == 0 ? ctrl_bytes(n) : 0), 1, MPI_INFO_NULL,
                     MPI_COMM_WORLD, &cb, &m->ctrl_win);
    m->scr = calloc((size_t)n * V_N, sizeof(char *));
    m->scr_cap = calloc((size_t)n * V_N, sizeof(size_t));
    m->vslot = calloc((size_t)n, sizeof(Slot));
    m->vseq = calloc((size_t)n, sizeof(uint64_t));
    ok = img && m->scr && m->scr_cap && m->vslot && m->vseq;
    if (img)
        ctrl_layout(m, img); /* 64-aligned: the displacements are offsets */
    MPI_Win_lock_all(MPI_MODE_NOCHECK, m->heap_win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, m->ctrl_win);
    m->locked = 1;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!__atomic_exchange_n(&prog_run, 1, __ATOMIC_ACQ_REL) &&
        pthread_create(&prog_thread, NULL, prog_main, NULL))
        prog_run = 0; /* no thread: progress only while in MPI */
    if (stride)
        segv_install(m);
    return 0;
}

/* RMA when BLKC_MPI_RMA=1 on any rank or the ranks are on several nodes. */
static int want_rma(int several)
{
    const char *s = getenv("BLKC_MPI_RMA");
    int mine = several || (s && !strcmp(s, "1")), any;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

static void mpi_free(RtMpi *m);

/* rt_mpi_create once every process has come: the communicator, the
 * windows, the control block. */
static int world_setup(int n, int r, size_t heap_bytes, int64_t setup_ms,
                       RtMpi **out, size_t *heap_out, char **heap_base,
                       char *err, size_t errlen)
{
    RtMpi *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->n = n;
    m->me = r;
    m->setup_ms = setup_ms;
    m->heap_win = m->ctrl_win = MPI_WIN_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r,
                        MPI_INFO_NULL, &m->shm);
    int sn, one, all_one;
    MPI_Comm_size(m->shm, &sn);
    one = sn == n;
    MPI_Allreduce(&one, &all_one, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    m->rma = want_rma(!all_one);
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
    m->heap_bytes = stride;
    if (m->rma ? rma_windows(m, stride, err, errlen)
               : shm_windows(m, stride, page, err, errlen)) {
        mpi_free(m);
        return -1;
    }
    if (r == 0)
        ctrl_reset(m);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int q = 0; q < n; q++)
        heap_base[q] = m->base[q];
    *heap_out = stride;
    *out = m;
    return 0;
}

int rt_mpi_create(int nranks, size_t heap_bytes, int64_t setup_ms,
                  RtMpi **out, int *me, size_t *heap_out, char **heap_base,
                  char *err, size_t errlen)
{
    *out = NULL;
    mpi_setup_ms = setup_ms;
    if (mpi_start(setup_ms, err, errlen))
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
    /* MPI may have been started long before (by the host): every process
     * must come to the window calls, which cannot be left once entered */
    rt_mpig_gate(r, n, setup_ms, "MPI world setup");
    rt_mpig_arm("MPI world setup", r, setup_ms);
    int rc = world_setup(n, r, heap_bytes, setup_ms, out, heap_out,
                         heap_base, err, errlen);
    rt_mpig_disarm();
    *me = r;
    return rc;
}

void rt_mpi_free(RtMpi *m)
{
    if (!m)
        return;
    rt_mpig_gate(m->me, m->n, m->setup_ms, "MPI world teardown");
    rt_mpig_arm("MPI world teardown", m->me, m->setup_ms);
    mpi_free(m);
    rt_mpig_disarm();
}

static void mpi_free(RtMpi *m)
{
    if (m->rma) {
        prog_stop(); /* before MPI_Win_free: collectives on this thread */
        if (m->locked) {
            MPI_Win_unlock_all(m->ctrl_win);
            MPI_Win_unlock_all(m->heap_win);
        }
        if (segv_lo == m->resv) {
            signal(SIGSEGV, SIG_DFL);
            segv_lo = segv_hi = NULL;
        }
        free(m->ctrl);
    }
    if (m->ctrl_win != MPI_WIN_NULL)
        MPI_Win_free(&m->ctrl_win);
    if (m->heap_win != MPI_WIN_NULL)
        MPI_Win_free(&m->heap_win);
    MPI_Comm_free(&m->shm);
    if (m->resv)
        munmap(m->resv, m->resv_bytes);
    for (size_t i = 0; m->scr && i < (size_t)m->n * V_N; i++)
        free(m->scr[i]);
    free(m->scr);
    free(m->scr_cap);
    free(m->vslot);
    free(m->vseq);
    free(m->base);
    free(m->view);
    free(m);
}

static int failed(RtMpi *m)
{
    if (!m->rma)
        return __atomic_load_n(&m->ctrl->failed, __ATOMIC_ACQUIRE) != 0;
    if (__atomic_load_n(&m->lfailed, __ATOMIC_ACQUIRE))
        return 1;
    if (!c_get(m, &m->ctrl->failed))
        return 0;
    __atomic_store_n(&m->lfailed, 1, __ATOMIC_RELEASE);
    return 1;
}

int *rt_mpi_abort_flag(RtMpi *m)
{
    return m->rma ? &m->lfailed : &m->ctrl->failed;
}

void rt_mpi_fail(RtMpi *m, int rank, const char *msg)
{
    Ctrl *c = m->ctrl;
    if (c_cas(m, &c->fail_rank, -1, rank)) {
        char t[RT_RANK_ERRLEN];
        snprintf(t, sizeof t, "%s", msg);
        c_put(m, c->fail_msg, t, sizeof t);
        c_set(m, &c->failed, 1);
        if (m->rma)
            __atomic_store_n(&m->lfailed, 1, __ATOMIC_RELEASE);
        fprintf(stderr, "blkc: error: rank %d: %s\n", rank, msg);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
        _exit(3);
    }
    c_set(m, &c->failed, 1);
    if (m->rma)
        __atomic_store_n(&m->lfailed, 1, __ATOMIC_RELEASE);
}

int rt_mpi_fail_rank(RtMpi *m, char *cause, size_t len)
{
    Ctrl *c = m->ctrl;
    int q = c_get(m, &c->fail_rank);
    char t[RT_RANK_ERRLEN] = "";
    if (q >= 0)
        c_read(m, t, c->fail_msg, sizeof t);
    t[sizeof t - 1] = 0;
    snprintf(cause, len, "%s", t);
    return q;
}

int *rt_mpi_in_wait(RtMpi *m)
{
    return m->rma ? &m->lin_wait : &m->in_wait[m->me];
}

/* The ranks that have not arrived at barrier generation gen, as "1, 3";
 * returns how many. */
static int missing(RtMpi *m, int gen, char *buf, size_t len)
{
    size_t k = 0;
    int count = 0;
    buf[0] = 0;
    for (int q = 0; q < m->n; q++)
        if (c_get(m, &m->arrived[q]) != gen + 1)
            rt_rank_list_add(buf, len, &k, &count, q);
    return count;
}

int rt_mpi_barrier(RtMpi *m, int64_t timeout_ms, char *miss, size_t misslen)
{
    Ctrl *c = m->ctrl;
    if (failed(m))
        return -1;
    if (m->n == 1)
        return 0;
    heap_sync(m);
    int gen = c_get(m, &c->bar_gen);
    c_set(m, &m->arrived[m->me], gen + 1);
    if (c_add(m, &c->bar_count, 1) == m->n) {
        c_set(m, &c->bar_count, 0);
        c_set(m, &c->bar_gen, gen + 1);
        heap_sync(m);
        return 0;
    }
    unsigned round = 0;
    int64_t t0 = rt_now_ms();
    for (;;) {
        if (c_get(m, &c->bar_gen) != gen) {
            heap_sync(m);
            return 0;
        }
        if (failed(m))
            return -1;
        if (c_get(m, &c->nleft) > 0) {
            for (int q = 0; q < m->n; q++) {
                if (!c_get(m, &m->left[q]))
                    continue;
                if (c_get(m, &c->bar_gen) != gen)
                    return 0;
                if (failed(m))
                    return -1;
                return q + 1;
            }
        }
        if (round >= 64 && timeout_ms >= 0) {
            int64_t ms = rt_now_ms() - t0;
            /* as on local ranks: a missing rank in a signal wait (its own
             * deadline) reports first, up to twice the timeout + 1 s (the
             * RMA path does not publish waits: it never defers) */
            int defer = 0;
            for (int q = 0; q < m->n && !m->rma && rt_barrier_grace(ms, timeout_ms); q++)
                defer |= c_get(m, &m->arrived[q]) != gen + 1 &&
                         c_get(m, &m->in_wait[q]) > 0;
            if (ms >= timeout_ms && !defer && missing(m, gen, miss, misslen) > 0 &&
                c_get(m, &c->bar_gen) == gen)
                return -2;
        }
        if (m->rma)
            rma_backoff(&round);
        else
            backoff(&round);
    }
}

void rt_mpi_left(RtMpi *m)
{
    c_set(m, &m->left[m->me], 1);
    c_add(m, &m->ctrl->nleft, 1);
}

/* Where peers find [p, p + bytes): on a heap as it is, else a copy on this
 * rank's heap above *top. */
static int place(RtMpi *m, const void *p, size_t bytes, Loc *loc,
                 size_t *top, const char *what, char *err, size_t errlen)
{
    loc->rank = -1;
    loc->pad_ = 0;
    loc->off = 0;
    loc->bytes = bytes;
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
    Slot t, *s = &m->slots[(size_t)m->me * 2 + (d->seq & 1)];
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
    memset(&t, 0, sizeof t);
    m->re_src = NULL;
    if (place(m, d->src, src_b, &t.src, &top, what, err, errlen) ||
        place(m, d->dst, dst_b, &t.dst, &top, what, err, errlen) ||
        place(m, d->counts, cnt_b, &t.counts, &top, what, err, errlen))
        return -1;
    t.counts2.rank = -1; /* peers never read the receive counts */
    if (d->kind == RT_COLL_ALL_REDUCE && t.dst.rank == m->me &&
        m->base[m->me] + t.dst.off != (const char *)d->dst) {
        m->re_src = d->dst;
        m->re_off = t.dst.off;
        m->re_bytes = dst_b;
    }
    m->refresh = m->rma && d->kind == RT_COLL_ALL_REDUCE;
    t.kind = d->kind;
    t.dtype = d->dtype;
    t.op = d->op;
    t.root = d->root;
    t.count = d->count;
    t.seq = d->seq;
    c_put(m, s, &t, sizeof t);
    return 0;
}

/* A published buffer in this process: the shared window as it is; RMA: a
 * local copy of a peer's (view buffer k of rank q), this rank's own as it
 * is. NULL when the copy cannot be made. */
static const void *loc_ptr(RtMpi *m, Loc l, int q, int k)
{
    if (l.rank < 0)
        return NULL;
    if (!m->rma || l.rank == m->me)
        return m->base[l.rank] + l.off;
    size_t i = (size_t)q * V_N + (size_t)k;
    if (m->scr_cap[i] < l.bytes) {
        char *b = realloc(m->scr[i], l.bytes);
        if (!b)
            return NULL;
        m->scr[i] = b;
        m->scr_cap[i] = l.bytes;
    }
    heap_get(m, m->scr[i], l.rank, l.off, l.bytes);
    return m->scr[i];
}

const RtRankColl *rt_mpi_coll_view(RtMpi *m, int q, uint64_t seq)
{
    RtRankColl *v = &m->view[q];
    if (m->rma && m->vseq[q] == seq + 1)
        return v; /* fetched already: a published slot does not change */
    Slot t;
    c_read(m, &t, &m->slots[(size_t)q * 2 + (seq & 1)], sizeof t);
    v->kind = t.kind;
    v->dtype = t.dtype;
    v->op = t.op;
    v->root = t.root;
    v->count = t.count;
    v->seq = t.seq;
    v->src = loc_ptr(m, t.src, q, V_SRC);
    v->dst = (void *)loc_ptr(m, t.dst, q, V_DST);
    v->counts = loc_ptr(m, t.counts, q, V_COUNTS);
    v->counts2 = loc_ptr(m, t.counts2, q, V_COUNTS2);
    if (m->rma) {
        m->vslot[q] = t;
        m->vseq[q] = t.seq == seq ? seq + 1 : 0;
    }
    return v;
}

void rt_mpi_coll_restage(RtMpi *m)
{
    if (m->re_src) /* once: all_reduce's closing barrier needs no copy */
        memcpy(m->base[m->me] + m->re_off, m->re_src, m->re_bytes);
    m->re_src = NULL;
}

void rt_mpi_coll_refresh(RtMpi *m)
{
    if (!m->refresh)
        return;
    m->refresh = 0; /* once: after all_reduce's mid-collective barrier */
    for (int q = 0; q < m->n; q++)
        if (q != m->me && m->vseq[q])
            m->view[q].dst = (void *)loc_ptr(m, m->vslot[q].dst, q, V_DST);
}

int rt_mpi_run_begin(RtMpi *m, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    /* nobody still reads the last run's; a rank that never comes (the
     * host stuck between runs) is named */
    rt_mpig_gate(m->me, m->n, m->setup_ms, "the start of a run");
    if (m->me == 0)
        ctrl_reset(m);
    if (m->rma) {
        m->lfailed = 0;
        memset(m->vseq, 0, (size_t)m->n * sizeof *m->vseq);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    rt_mpig_gate(m->me, m->n, m->setup_ms, "the start of a run");
    return 0;
}

int rt_mpi_run_end(RtMpi *m, int64_t timeout_ms)
{
    unsigned round = 0;
    int64_t start = rt_now_ms();
    while (c_get(m, &m->ctrl->nleft) < m->n && !failed(m)) {
        if (timeout_ms >= 0 && rt_now_ms() - start >= timeout_ms) {
            /* this rank returned, some did not (computing, never waiting):
             * name them; the first to report ends the job */
            char miss[256], msg[RT_RANK_ERRLEN];
            size_t k = 0;
            int count = 0;
            miss[0] = 0;
            for (int q = 0; q < m->n; q++)
                if (!c_get(m, &m->left[q]))
                    rt_rank_list_add(miss, sizeof miss, &k, &count, q);
            if (count == 0)
                break;
            snprintf(msg, sizeof msg, "the end of the run timed out after "
                     "%lld ms: rank %d waits, rank%s %s did not arrive",
                     (long long)timeout_ms, m->me, count > 1 ? "s" : "", miss);
            rt_mpi_fail(m, m->me, msg);
            break;
        }
        rma_backoff(&round);
    }
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
