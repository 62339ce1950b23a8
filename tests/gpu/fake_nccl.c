/* fake_nccl.c — a stand-in NCCL (loaded by runtime/nccl.c through
 * BLKC_NCCL_LIB or BLKC_RCCL_LIB, which share the names) for GPU ranks
 * over the fake drivers (fake_cuda.c, fake_hip.c), whose "device memory"
 * is host memory of this process: the ranks are threads, and every
 * operation runs at once on the calling thread (streams are ignored, as
 * the fake drivers finish everything when it is queued).
 *
 * One mechanism: per communicator and ordered pair of ranks a FIFO of
 * messages. A send copies its bytes into a message; a receive waits for
 * the next message from its peer (a size that differs is an error, so a
 * mismatch shows up instead of corrupting). Sends and receives between
 * ncclGroupStart and ncclGroupEnd are collected and run at the end, every
 * send first (so a ring cannot deadlock). The collectives are sends and
 * receives among the members, with reductions in rank order (the results
 * are bitwise those of blkc's CPU ranks; real NCCL's order differs);
 * ncclCommSplit exchanges (color, key) the same way and the new group's
 * first member hands out the new communicator. Only one process: not for
 * mpirun. $FAKE_NCCL_LOG names a file that gets one line per call
 * (ncclSend, ncclAllReduce, ...). ncclCommAbort wakes waiting receives,
 * which then fail. ncclCommInitRankConfig with config.blocking = 0 makes a
 * nonblocking communicator (its splits too): calls still run at once but
 * answer ncclInProgress where NCCL may, and ncclCommGetAsyncError says
 * when they are done; $FAKE_NCCL_HANG_RANK makes one rank's never be
 * (hang_here).
 *
 * Built with -DFAKE_NCCL_OLD (libfakenccl_old.so) it is an NCCL 2.13:
 * no ncclCommInitRankConfig and no ncclCommSplit, so every communicator
 * blocks, and ncclCommInitRank waits (at most 30 s) until every rank
 * joined, as NCCL's bootstrap does. There $FAKE_NCCL_HANG_RANK=R makes
 * rank R a peer that never arrives: =init, its ncclCommInitRank joins
 * nothing (after 200 ms it answers with a communicator of its own), so
 * the others' inits wait; =coll, its collectives, sends and receives do
 * nothing (after 200 ms, answering ncclSuccess), so the peers' calls
 * wait; =stream, they run but their stream never completes (the fake
 * driver's fake_cuda_hold / fake_hip_hold, as a kernel stuck on the
 * GPU) until the communicator is aborted, and the other ranks' calls
 * take 300 ms more (so that rank R's deadline comes first).
 * ncclCommAbort waits (at most 5 s) for the receives it woke to leave;
 * OLD, $FAKE_NCCL_ABORT_MS makes it sleep that long first (an abort that
 * waits for a stuck kernel). */
#define _GNU_SOURCE /* RTLD_NOLOAD, nanosleep */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FAKE_NCCL_OLD
#define OLD 1
#else
#define OLD 0
#endif

#define API __attribute__((visibility("default")))

enum { OK = 0, SYS = 2, INTERNAL = 3, INVALID_ARG = 4, INVALID_USAGE = 5 };

typedef struct { char internal[128]; } ncclUniqueId;

typedef struct Msg {
    struct Msg *next;
    size_t bytes;
    char data[];
} Msg;

typedef struct Shared {            /* one communicator, all its ranks */
    int n, refs, joined;
    long long key;                 /* unique id (registry), or -1 */
    int aborted;
    int busy;                      /* receives waiting (ncclCommAbort) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    Msg **head, **tail;            /* [from * n + to] */
} Shared;

typedef struct Comm {
    Shared *s;
    int rank;
    int nb;                        /* nonblocking (ncclCommInitRankConfig) */
    int hang;                      /* its async error stays ncclInProgress */
    void *held;                    /* a stream it held (=stream) */
} Comm;

enum { IN_PROGRESS = 7 };

/* $FAKE_NCCL_HANG_RANK=R: rank R's nonblocking communicator never
 * completes its init ($FAKE_NCCL_HANG_AT=init, the default) or its first
 * collective (=coll): the call returns ncclInProgress and
 * ncclCommGetAsyncError keeps answering ncclInProgress (a peer that died
 * or hangs, as a real NCCL would show it). Blocking communicators ignore
 * it. */
/* rank -1: -1 when some rank hangs at `at`, else 0 */
static int hang_rank(int rank, int nb, const char *at)
{
    const char *r = getenv("FAKE_NCCL_HANG_RANK");
    const char *a = getenv("FAKE_NCCL_HANG_AT");
    if ((!nb && !OLD) || !r || !*r || (rank >= 0 && atoi(r) != rank))
        return 0;
    return !strcmp(a && *a ? a : "init", at) ? (rank < 0 ? -1 : 1) : 0;
}

static int hang_here(const Comm *c, const char *at)
{
    return hang_rank(c->rank, c->nb, at);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* the loaded fake driver's fake_cuda_hold (fake_cuda.c) or fake_hip_hold
 * (fake_hip.c), or NULL */
static void (*driver_hold(void))(void *, int)
{
    static const char *const drv[2][2] = {{"libcuda.so.1", "fake_cuda_hold"},
                                          {"libamdhip64.so", "fake_hip_hold"}};
    void (*hold)(void *, int) = NULL;
    for (int i = 0; i < 2 && !hold; i++) {
        void *lib = dlopen(drv[i][0], RTLD_NOW | RTLD_NOLOAD);
        void *f = lib ? dlsym(lib, drv[i][1]) : NULL;
        memcpy(&hold, &f, sizeof f);
        if (lib)
            dlclose(lib); /* RTLD_NOLOAD took a reference */
    }
    return hold;
}

/* A collective call of a hanging rank: nonblocking, nothing happens and
 * it stays in progress; blocking (OLD), =coll: nothing happens after
 * 200 ms; =stream: the stream is held (once the call has run). */
#define HANG_COLL(c, stream)                                                 \
    do {                                                                     \
        if (hang_here(c, "coll")) {                                          \
            if (!(c)->nb) {                                                  \
                sleep_ms(200);                                               \
                return OK;                                                   \
            }                                                                \
            ((Comm *)(c))->hang = 1;                                         \
            return IN_PROGRESS;                                              \
        }                                                                    \
        if (OLD && !hang_here(c, "stream") &&                                \
            hang_rank(-1, 0, "stream") < 0)                                  \
            sleep_ms(300); /* the hanging rank's deadline comes first */     \
        if (hang_here(c, "stream") && !(c)->held) {                          \
            void (*hold_)(void *, int) = driver_hold();                      \
            if (hold_ && (stream)) {                                         \
                hold_((stream), 1);                                          \
                ((Comm *)(c))->held = (stream);                              \
            }                                                                \
        }                                                                    \
    } while (0)

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static Shared *reg[64];            /* communicators still being joined */
static long long next_id = 1;

static void logcall(const char *name)
{
    const char *f = getenv("FAKE_NCCL_LOG");
    if (!f || !*f)
        return;
    pthread_mutex_lock(&reg_mu);
    FILE *fp = fopen(f, "a");
    if (fp) {
        fprintf(fp, "%s\n", name);
        fclose(fp);
    }
    pthread_mutex_unlock(&reg_mu);
}

static Shared *shared_new(int n, long long key)
{
    Shared *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->head = calloc((size_t)n * (size_t)n, sizeof *s->head);
    s->tail = calloc((size_t)n * (size_t)n, sizeof *s->tail);
    if (!s->head || !s->tail) {
        free(s->head);
        free(s->tail);
        free(s);
        return NULL;
    }
    s->n = n;
    s->key = key;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    return s;
}

static void shared_unref(Shared *s)
{
    pthread_mutex_lock(&s->mu);
    int left = --s->refs;
    pthread_mutex_unlock(&s->mu);
    if (left > 0)
        return;
    for (int i = 0; i < s->n * s->n; i++)
        while (s->head[i]) {
            Msg *m = s->head[i];
            s->head[i] = m->next;
            free(m);
        }
    free(s->head);
    free(s->tail);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* ------------------------------------------------------------ messages */

static int post(Comm *c, int to, const void *buf, size_t bytes)
{
    Shared *s = c->s;
    if (to < 0 || to >= s->n)
        return INVALID_ARG;
    Msg *m = malloc(sizeof *m + bytes + 1);
    if (!m)
        return SYS;
    m->next = NULL;
    m->bytes = bytes;
    if (bytes)
        memcpy(m->data, buf, bytes);
    pthread_mutex_lock(&s->mu);
    int q = c->rank * s->n + to;
    if (s->tail[q])
        s->tail[q]->next = m;
    else
        s->head[q] = m;
    s->tail[q] = m;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return OK;
}

static int take(Comm *c, int from, void *buf, size_t bytes)
{
    Shared *s = c->s;
    if (from < 0 || from >= s->n)
        return INVALID_ARG;
    int q = from * s->n + c->rank;
    pthread_mutex_lock(&s->mu);
    s->busy++;
    while (!s->head[q] && !s->aborted)
        pthread_cond_wait(&s->cv, &s->mu);
    Msg *m = s->aborted ? NULL : s->head[q];
    s->busy--;
    if (!m) {
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        return INTERNAL;
    }
    s->head[q] = m->next;
    if (!m->next)
        s->tail[q] = NULL;
    pthread_mutex_unlock(&s->mu);
    int rc = m->bytes == bytes ? OK : INVALID_USAGE;
    if (rc == OK && bytes)
        memcpy(buf, m->data, bytes);
    free(m);
    return rc;
}

/* ------------------------------------------------------------ groups */

typedef struct Op { int send, peer; void *buf; size_t bytes; Comm *c; } Op;
static __thread int depth;
static __thread Op *ops;
static __thread int nops, capops;

static int run_ops(void)
{
    int rc = OK;
    for (int i = 0; i < nops && rc == OK; i++)
        if (ops[i].send)
            rc = post(ops[i].c, ops[i].peer, ops[i].buf, ops[i].bytes);
    for (int i = 0; i < nops && rc == OK; i++)
        if (!ops[i].send)
            rc = take(ops[i].c, ops[i].peer, ops[i].buf, ops[i].bytes);
    free(ops); /* a rank thread's buffer must not outlive it (LeakSanitizer) */
    ops = NULL;
    nops = capops = 0;
    return rc;
}

static int add_op(int send, int peer, void *buf, size_t bytes, Comm *c)
{
    if (nops == capops) {
        int cap = capops ? 2 * capops : 16;
        Op *o = realloc(ops, sizeof *o * (size_t)cap);
        if (!o)
            return SYS;
        ops = o;
        capops = cap;
    }
    ops[nops++] = (Op){send, peer, buf, bytes, c};
    return depth ? OK : run_ops();
}

/* ------------------------------------------------------------ reductions */

static size_t dt_size(int dt)
{
    static const size_t sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return dt >= 0 && dt < 12 ? sz[dt] : 0;
}

#define COMBINE(T)                                                           \
    do {                                                                     \
        T *a = (T *)acc;                                                     \
        const T *b = (const T *)in;                                          \
        for (size_t i = 0; i < n; i++)                                       \
            a[i] = op == 0 || op == 4 ? (T)(a[i] + b[i])                     \
                 : op == 1 ? (T)(a[i] * b[i])                                \
                 : op == 2 ? (a[i] > b[i] || a[i] != a[i] ? a[i] : b[i])     \
                           : (a[i] < b[i] || a[i] != a[i] ? a[i] : b[i]);    \
    } while (0)

/* acc = acc (op) in, n elements; 0, or -1 for a dtype this fake lacks */
static int combine(void *acc, const void *in, size_t n, int dt, int op)
{
    switch (dt) {
    case 0: COMBINE(int8_t); return 0;
    case 1: COMBINE(uint8_t); return 0;
    case 2: COMBINE(int32_t); return 0;
    case 3: COMBINE(uint32_t); return 0;
    case 4: COMBINE(int64_t); return 0;
    case 5: COMBINE(uint64_t); return 0;
    case 7: COMBINE(float); return 0;
    case 8: COMBINE(double); return 0;
    default: return -1;
    }
}

static void average(void *acc, size_t n, int dt, int ranks)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == 7)
            ((float *)acc)[i] /= (float)ranks;
        else if (dt == 8)
            ((double *)acc)[i] /= ranks;
    }
}

/* Every member sends `count` elements to the members that reduce (root,
 * or all when root < 0): to member q those at src + q * block (block 0:
 * all-reduce and reduce, count: reduce-scatter); they reduce what they
 * get in rank order into dst. */
static int reduce_to(Comm *c, const void *src, void *dst, size_t count,
                     size_t block, int dt, int op, int root)
{
    int n = c->s->n, me = c->rank, rc = OK;
    size_t es = dt_size(dt), bytes = count * es;
    char probe[8] = {0};
    if (!es || op < 0 || op > 4 || combine(probe, probe, 0, dt, op))
        return INVALID_ARG;
    for (int q = 0; q < n && rc == OK; q++)
        if (root < 0 || q == root)
            rc = post(c, q, (const char *)src + (size_t)q * block * es, bytes);
    if (rc != OK || (root >= 0 && me != root))
        return rc;
    char *acc = malloc(bytes + 1), *in = malloc(bytes + 1);
    if (!acc || !in)
        rc = SYS;
    for (int q = 0; q < n && rc == OK; q++) {
        rc = take(c, q, q ? in : acc, bytes);
        if (rc == OK && q)
            combine(acc, in, count, dt, op);
    }
    if (rc == OK) {
        if (op == 4)
            average(acc, count, dt, n);
        memcpy(dst, acc, bytes);
    }
    free(acc);
    free(in);
    return rc;
}

/* ------------------------------------------------------------ API */

API int ncclGetVersion(int *v) { *v = OLD ? 21300 : 22400; return OK; }

API const char *ncclGetErrorString(int r)
{
    static const char *const s[] = {"no error", "unhandled cuda error",
        "unhandled system error", "internal error (fake: aborted)",
        "invalid argument (fake: unsupported dtype or op)",
        "invalid usage (fake: message sizes differ)"};
    return r >= 0 && r < 6 ? s[r] : "unknown";
}

API int ncclGetUniqueId(ncclUniqueId *id)
{
    logcall("ncclGetUniqueId");
    memset(id, 0, sizeof *id);
    pthread_mutex_lock(&reg_mu);
    long long k = next_id++;
    pthread_mutex_unlock(&reg_mu);
    memcpy(id->internal, &k, sizeof k);
    return OK;
}

static int comm_init(Comm **out, int n, ncclUniqueId id, int rank, int nb);

API int ncclCommInitRank(Comm **out, int n, ncclUniqueId id, int rank)
{
    logcall("ncclCommInitRank");
    if (OLD && hang_rank(rank, 0, "init")) { /* joins nothing */
        sleep_ms(200);
        Comm *c = calloc(1, sizeof *c);
        Shared *s = c && n > 0 && rank >= 0 && rank < n ? shared_new(n, -1) : NULL;
        if (!c || !s) {
            free(c);
            return s ? SYS : INVALID_ARG;
        }
        s->refs = 1;
        s->joined = n;
        c->s = s;
        c->rank = rank;
        *out = c;
        return OK;
    }
    return comm_init(out, n, id, rank, 0);
}

#ifndef FAKE_NCCL_OLD
/* the head of ncclConfig_t (nccl.h): size, magic, version, blocking */
typedef struct Config { size_t size; unsigned magic, version; int blocking; } Config;

API int ncclCommInitRankConfig(Comm **out, int n, ncclUniqueId id, int rank,
                               Config *cfg)
{
    logcall("ncclCommInitRankConfig");
    if (cfg && (cfg->magic != 0xcafebeef || cfg->size < sizeof *cfg))
        return INVALID_ARG;
    int rc = comm_init(out, n, id, rank, cfg && cfg->blocking == 0);
    if (rc == OK && (*out)->nb) {
        if (hang_here(*out, "init"))
            (*out)->hang = 1;
        return IN_PROGRESS; /* "done" is for ncclCommGetAsyncError to say */
    }
    return rc;
}
#endif

static int comm_init(Comm **out, int n, ncclUniqueId id, int rank, int nb)
{
    long long k;
    memcpy(&k, id.internal, sizeof k);
    if (n < 1 || rank < 0 || rank >= n)
        return INVALID_ARG;
    Comm *c = malloc(sizeof *c);
    if (!c)
        return SYS;
    pthread_mutex_lock(&reg_mu);
    Shared *s = NULL;
    int slot = -1;
    for (int i = 0; i < 64; i++) {
        if (reg[i] && reg[i]->key == k)
            s = reg[i], slot = i;
        else if (!reg[i] && slot < 0)
            slot = i;
    }
    if (!s && slot >= 0 && (s = shared_new(n, k)))
        reg[slot] = s;
    if (s && ++s->joined == s->n)
        reg[slot] = NULL; /* everyone has it */
    if (s)
        s->refs++;
    /* OLD: as NCCL's bootstrap, until every rank joined (at most 30 s) */
    for (int i = 0; OLD && s && s->joined < s->n && i < 30000; i++) {
        pthread_mutex_unlock(&reg_mu);
        sleep_ms(1);
        pthread_mutex_lock(&reg_mu);
    }
    int alone = s && s->joined < s->n;
    pthread_mutex_unlock(&reg_mu);
    if (OLD && alone) {
        free(c); /* left in the registry: the fake's process is ending */
        return SYS;
    }
    if (!s) {
        free(c);
        return SYS;
    }
    c->s = s;
    c->rank = rank;
    c->nb = nb;
    c->hang = 0;
    c->held = NULL;
    *out = c;
    return OK;
}

#ifndef FAKE_NCCL_OLD
API int ncclCommSplit(Comm *c, int color, int key, Comm **out, void *config)
{
    (void)config;
    logcall("ncclCommSplit");
    int n = c->s->n, me = c->rank, rc = OK;
    int mine[2] = {color, key}, *all = malloc(sizeof(int) * 2 * (size_t)n);
    int *mem = malloc(sizeof(int) * (size_t)n);
    *out = NULL;
    if (!all || !mem)
        rc = SYS;
    for (int q = 0; q < n && rc == OK; q++)
        rc = post(c, q, mine, sizeof mine);
    for (int q = 0; q < n && rc == OK; q++)
        rc = take(c, q, all + 2 * q, sizeof mine);
    int g = 0, at = 0;
    for (int q = 0; q < n && rc == OK; q++) /* by (key, rank) */
        if (all[2 * q] == color) {
            int k = g++;
            while (k > 0 && all[2 * mem[k - 1] + 1] > all[2 * q + 1]) {
                mem[k] = mem[k - 1];
                k--;
            }
            mem[k] = q;
        }
    for (int i = 0; i < g; i++)
        if (mem[i] == me)
            at = i;
    if (rc == OK && color >= 0) {
        Shared *s = NULL;
        if (at == 0) { /* the first member makes it and hands it out */
            s = shared_new(g, -1);
            if (s)
                s->refs = g;
            for (int i = 0; i < g && rc == OK; i++)
                rc = post(c, mem[i], &s, sizeof s);
        }
        if (rc == OK)
            rc = take(c, mem[0], &s, sizeof s);
        Comm *nc = malloc(sizeof *nc);
        if (rc == OK && (!s || !nc))
            rc = SYS;
        if (rc == OK) {
            nc->s = s;
            nc->rank = at;
            nc->nb = c->nb; /* config NULL: the parent's */
            nc->hang = 0;
            nc->held = NULL;
            *out = nc;
        } else {
            free(nc);
        }
    }
    free(all);
    free(mem);
    return rc;
}
#endif

API int ncclCommDestroy(Comm *c)
{
    logcall("ncclCommDestroy");
    if (c) {
        shared_unref(c->s);
        free(c);
    }
    return OK;
}

API int ncclCommAbort(Comm *c)
{
    logcall("ncclCommAbort");
    const char *ms = getenv("FAKE_NCCL_ABORT_MS"); /* an abort that hangs */
    if (OLD && ms && atoi(ms) > 0)
        sleep_ms(atoi(ms) < 60000 ? atoi(ms) : 60000);
    if (c) { /* the receives it wakes leave before it frees (5 s at most) */
        Shared *s = c->s;
        pthread_mutex_lock(&s->mu);
        s->aborted = 1;
        pthread_cond_broadcast(&s->cv);
        for (int i = 0; s->busy && i < 5000; i++) {
            pthread_mutex_unlock(&s->mu);
            sleep_ms(1);
            pthread_mutex_lock(&s->mu);
        }
        pthread_mutex_unlock(&s->mu);
        void (*hold)(void *, int) = c->held ? driver_hold() : NULL;
        if (hold)
            hold(c->held, 0); /* its kernel stops */
    }
    return ncclCommDestroy(c);
}

API int ncclCommGetAsyncError(Comm *c, int *e)
{
    *e = c && c->hang ? IN_PROGRESS : OK;
    return OK;
}

API int ncclGroupStart(void)
{
    depth++;
    return OK;
}

API int ncclGroupEnd(void)
{
    logcall("ncclGroupEnd");
    if (depth <= 0)
        return INVALID_USAGE;
    return --depth ? OK : run_ops();
}

API int ncclSend(const void *buf, size_t count, int dt, int peer, Comm *c,
                 void *stream)
{
    logcall("ncclSend");
    HANG_COLL(c, stream);
    return add_op(1, peer, (void *)buf, count * dt_size(dt), c);
}

API int ncclRecv(void *buf, size_t count, int dt, int peer, Comm *c,
                 void *stream)
{
    logcall("ncclRecv");
    HANG_COLL(c, stream);
    return add_op(0, peer, buf, count * dt_size(dt), c);
}

API int ncclAllReduce(const void *src, void *dst, size_t count, int dt, int op,
                      Comm *c, void *stream)
{
    logcall("ncclAllReduce");
    HANG_COLL(c, stream);
    return reduce_to(c, src, dst, count, 0, dt, op, -1);
}

API int ncclReduce(const void *src, void *dst, size_t count, int dt, int op,
                   int root, Comm *c, void *stream)
{
    logcall("ncclReduce");
    HANG_COLL(c, stream);
    if (root < 0 || root >= c->s->n)
        return INVALID_ARG;
    return reduce_to(c, src, dst, count, 0, dt, op, root);
}

API int ncclReduceScatter(const void *src, void *dst, size_t count, int dt,
                          int op, Comm *c, void *stream)
{
    logcall("ncclReduceScatter");
    HANG_COLL(c, stream);
    return reduce_to(c, src, dst, count, count, dt, op, -1); /* q's block to q */
}

API int ncclAllGather(const void *src, void *dst, size_t count, int dt,
                      Comm *c, void *stream)
{
    logcall("ncclAllGather");
    HANG_COLL(c, stream);
    int n = c->s->n, rc = OK;
    size_t bytes = count * dt_size(dt);
    if (!dt_size(dt))
        return INVALID_ARG;
    for (int q = 0; q < n && rc == OK; q++)
        rc = post(c, q, src, bytes);
    for (int q = 0; q < n && rc == OK; q++)
        rc = take(c, q, (char *)dst + (size_t)q * bytes, bytes);
    return rc;
}

API int ncclBroadcast(const void *src, void *dst, size_t count, int dt,
                      int root, Comm *c, void *stream)
{
    logcall("ncclBroadcast");
    HANG_COLL(c, stream);
    int n = c->s->n, rc = OK;
    size_t bytes = count * dt_size(dt);
    if (!dt_size(dt) || root < 0 || root >= n)
        return INVALID_ARG;
    for (int q = 0; q < n && rc == OK && c->rank == root; q++)
        rc = post(c, q, src, bytes);
    return rc == OK ? take(c, root, dst, bytes) : rc;
}
