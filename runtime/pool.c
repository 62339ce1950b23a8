/* pool.c — the process-wide CPU thread pool that runs JIT'd kernels.
 *
 * Workers have 64 MiB stacks because CPU kernels keep their tiles on the
 * stack. A launch is a job living on the caller's stack, split into chunks
 * of its linearised grid; every participant claims chunks with one atomic
 * fetch-add on the job's counter, so claiming takes no lock.
 *
 * The launch path avoids the two costly steps of a hand-off (waking a
 * sleeping thread, then sleeping until it is done) wherever it can:
 * - a caller whose stack can hold the kernel's tiles (launch.c checks)
 *   claims chunks itself; it wakes at most one worker, and a worker wakes
 *   the next one only if chunks remain, so a small grid is usually finished
 *   by the caller before the woken worker runs — that worker then finds the
 *   job gone or exhausted and goes back to sleep;
 * - the caller waits only for workers that attached to the job, i.e. that
 *   are actually running or claiming its chunks, and spins briefly for
 *   them (they are awake) before it sleeps.
 * A worker reaches a job only through the queue, under the lock, and
 * counts itself in `attached` before it touches the job's counter; the
 * caller unlinks the job and waits until `attached` is 0 before returning,
 * so no worker ever reads a job (a stack frame) that is gone or reused by
 * the next launch. Several threads may launch at once: jobs are queued in
 * FIFO order, and a worker moves on to the next job as soon as the current
 * one has no chunks left (or has all the helpers it may use). */
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RT_STACK_BYTES ((size_t)64 << 20)
#define RT_MAX_THREADS 1024
#define RT_SPIN 64             /* pauses (~3 us) a caller waits before sleeping */
#if defined(__x86_64__) || defined(__i386__)
#define rt_pause() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define rt_pause() __asm__ __volatile__("yield")
#else
#define rt_pause() ((void)0)
#endif

typedef struct RtJob {
    struct RtJob *next;        /* queue link (under the lock) */
    BkRangeFn fn;              /* the kernel's range entry */
    void *const *args;         /* its argument array */
    const int32_t *ctx;        /* its BkLaunchCtx (grid first) */
    int64_t total;             /* instances in the grid */
    int64_t chunk;             /* instances per chunk */
    int64_t nchunks;           /* chunks in the grid */
    int64_t claimed;           /* atomic: chunks handed out (may overshoot) */
    int helpers;               /* workers that attached so far (lock) */
    int max_helpers;           /* at most this many workers attach */
    int attached;              /* workers using the job now (changed under
                                  the lock; atomic for the caller's spin) */
    bool queued;               /* in the queue (lock) */
    bool waiting;              /* the caller sleeps on `finished` (lock) */
} RtJob;

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    pthread_cond_t work;       /* a job was queued */
    pthread_cond_t finished;   /* a job's last attached worker left */
    RtJob *head, *tail;        /* queued jobs */
    int nthreads;              /* workers started */
    int idle;                  /* workers asleep on `work` */
    int wakes;                 /* signals of `work` not yet consumed */
} pool = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER,
          PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0,
          0};

static bool exhausted(RtJob *j)
{
    return __atomic_load_n(&j->claimed, __ATOMIC_RELAXED) >= j->nchunks;
}

/* Unlink j from the queue (under the lock). */
static void unqueue(RtJob *j)
{
    RtJob **pp = &pool.head, *prev = NULL;
    while (*pp && *pp != j) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = j->next;
        if (pool.tail == j)
            pool.tail = prev;
    }
    j->queued = false;
    j->next = NULL;
}

/* The first queued job a worker may help with (under the lock); exhausted
 * jobs met on the way are unlinked. */
static RtJob *pick(void)
{
    RtJob *j = pool.head;
    while (j) {
        RtJob *nx = j->next;
        if (exhausted(j))
            unqueue(j);
        else if (j->helpers < j->max_helpers)
            return j;
        j = nx;
    }
    return NULL;
}

/* Wake one sleeping worker unless enough are already on their way (under
 * the lock). */
static void wake_one(void)
{
    if (pool.idle > pool.wakes) {
        pool.wakes++;
        pthread_cond_signal(&pool.work);
    }
}

/* Claim and run chunks of j until none are left. */
static void run_chunks(RtJob *j)
{
    for (;;) {
        int64_t c = __atomic_fetch_add(&j->claimed, 1, __ATOMIC_RELAXED);
        if (c >= j->nchunks)
            return;
        int64_t first = c * j->chunk;
        int64_t last = first + j->chunk < j->total ? first + j->chunk
                                                   : j->total;
        j->fn(j->args, first, last, j->ctx);
    }
}

static void *worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        RtJob *j = pick();
        if (!j) {
            pool.idle++;
            pthread_cond_wait(&pool.work, &pool.lock);
            pool.idle--;
            if (pool.wakes > 0)
                pool.wakes--;
            continue;
        }
        j->helpers++;
        __atomic_add_fetch(&j->attached, 1, __ATOMIC_RELAXED);
        /* chain: one more worker only while this job (or another) still
         * has chunks and room for helpers */
        if ((j->helpers < j->max_helpers && j->nchunks -
             __atomic_load_n(&j->claimed, __ATOMIC_RELAXED) > 1) || j->next)
            wake_one();
        pthread_mutex_unlock(&pool.lock);
        run_chunks(j);
        pthread_mutex_lock(&pool.lock);
        if (j->queued)
            unqueue(j);
        if (__atomic_sub_fetch(&j->attached, 1, __ATOMIC_RELEASE) == 0 &&
            j->waiting)
            pthread_cond_broadcast(&pool.finished);
    }
    return NULL;
}

/* blkc_context_options' num_threads / pin_threads (rt_pool_configure);
 * read once, when the pool starts. */
static struct {
    pthread_mutex_t lock;
    int threads;               /* 0 = BLKC_NUM_THREADS / the online CPUs */
    int pin;                   /* 1: worker i on CPU i % online CPUs */
    bool started;              /* pool_start ran: the above are fixed */
    int started_threads;       /* what it asked for */
} cfg = {PTHREAD_MUTEX_INITIALIZER, 0, 0, false, 0};

int rt_pool_configure(int nthreads, int pin, char *err, size_t errlen)
{
    pthread_mutex_lock(&cfg.lock);
    int rc = 0;
    if (cfg.started) {
        if ((nthreads && nthreads != cfg.started_threads) ||
            (pin && !cfg.pin)) {
            snprintf(err, errlen, "the thread pool already runs %d worker%s%s "
                     "(one pool per process: its size and pinning are set "
                     "before the first launch)", cfg.started_threads,
                     cfg.started_threads == 1 ? "" : "s",
                     cfg.pin ? ", pinned" : "");
            rc = -1;
        }
    } else if ((cfg.threads && nthreads && nthreads != cfg.threads) ||
               (cfg.pin && !pin && nthreads)) {
        snprintf(err, errlen, "another context set the thread pool to %d "
                 "worker%s%s (one pool per process)", cfg.threads,
                 cfg.threads == 1 ? "" : "s", cfg.pin ? ", pinned" : "");
        rc = -1;
    } else {
        if (nthreads)
            cfg.threads = nthreads > RT_MAX_THREADS ? RT_MAX_THREADS : nthreads;
        cfg.pin |= pin;
    }
    pthread_mutex_unlock(&cfg.lock);
    return rc;
}

static int wanted_threads(void)
{
    if (cfg.threads)
        return cfg.threads;
    const char *s = getenv("BLKC_NUM_THREADS");
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end == 0 && v >= 1)
            return v > RT_MAX_THREADS ? RT_MAX_THREADS : (int)v;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > RT_MAX_THREADS ? RT_MAX_THREADS : (int)n;
}

static void pool_start(void)
{
    pthread_mutex_lock(&cfg.lock);
    int want = wanted_threads();
    cfg.started = true;
    cfg.started_threads = want;
    bool pin = cfg.pin;
    pthread_mutex_unlock(&cfg.lock);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, RT_STACK_BYTES);
    for (int i = 0; i < want; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker, NULL) != 0)
            break; /* run with the workers we got */
        if (pin && ncpu > 0) { /* best effort: a failed pin is no error */
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET((int)(i % ncpu), &set);
            pthread_setaffinity_np(t, sizeof set, &set);
        }
        pool.nthreads++;
    }
    pthread_attr_destroy(&attr);
}

int rt_pool_size(void)
{
    pthread_once(&pool.once, pool_start);
    return pool.nthreads;
}

int rt_pool_run(BkRangeFn fn, void *const *args, const int64_t grid[3],
                BkLaunchCtx *ctx, char *err, size_t errlen)
{
    return rt_pool_run_helping(fn, args, grid, ctx, false, err, errlen);
}

int rt_pool_run_helping(BkRangeFn fn, void *const *args,
                        const int64_t grid[3], BkLaunchCtx *ctx,
                        bool caller_runs, char *err, size_t errlen)
{
    BkLaunchCtx local;
    if (!ctx) {
        memset(&local, 0, sizeof local);
        local.world = 1;
        ctx = &local;
    }
    int64_t total = 1;
    for (int a = 0; a < 3; a++) {
        if (grid[a] < 0 || grid[a] > INT32_MAX) {
            snprintf(err, errlen, "grid extent %lld along axis %d is out of "
                     "range (0 .. 2147483647)", (long long)grid[a], a);
            return -1;
        }
        if (grid[a] > 0 && total > INT64_MAX / grid[a]) {
            snprintf(err, errlen, "grid has too many program instances");
            return -1;
        }
        total *= grid[a];
    }
    for (int a = 0; a < 3; a++)
        ctx->nprog[a] = (int32_t)grid[a];
    if (total == 0)
        return 0;
    int n = rt_pool_size();
    if (n == 0 && !caller_runs) {
        snprintf(err, errlen, "could not start the CPU thread pool");
        return -1;
    }
    RtJob j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.args = args;
    j.ctx = ctx->nprog;
    j.total = total;
    /* BLKC_NUM_THREADS threads in all: a helping caller is one of them */
    j.max_helpers = caller_runs ? n - 1 : n;
    int threads = n > 0 ? n : 1;
    /* several chunks per thread balance uneven instances */
    j.chunk = total / ((int64_t)threads * 8);
    if (j.chunk < 1)
        j.chunk = 1;
    j.nchunks = (total + j.chunk - 1) / j.chunk;
    if (caller_runs && (j.max_helpers <= 0 || j.nchunks == 1)) {
        run_chunks(&j); /* nobody to share with */
        return 0;
    }
    pthread_mutex_lock(&pool.lock);
    j.queued = true;
    if (pool.tail)
        pool.tail->next = &j;
    else
        pool.head = &j;
    pool.tail = &j;
    wake_one();
    pthread_mutex_unlock(&pool.lock);
    if (caller_runs) {
        run_chunks(&j);
        /* a worker still attached is awake and at most finishing a chunk:
         * a short spin usually sees it leave, cheaper than sleeping */
        for (int i = 0; i < RT_SPIN &&
                        __atomic_load_n(&j.attached, __ATOMIC_ACQUIRE) > 0;
             i++)
            rt_pause();
    }
    pthread_mutex_lock(&pool.lock);
    /* a non-helping caller sleeps until its chunks are all claimed and the
     * workers that claimed them are done; a helping one only until the
     * workers still attached leave */
    while (j.attached > 0 || (!caller_runs && !exhausted(&j))) {
        j.waiting = true;
        pthread_cond_wait(&pool.finished, &pool.lock);
    }
    if (j.queued)
        unqueue(&j);
    pthread_mutex_unlock(&pool.lock);
    return 0;
}
