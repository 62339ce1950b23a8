/* pool.c — the process-wide CPU thread pool that runs JIT'd kernels.
 *
 * Workers have 64 MiB stacks because CPU kernels keep their tiles on the
 * stack. A launch is a job living on the caller's stack; it is queued, and
 * workers take chunks of its linearised grid under the pool lock until none
 * are left. The caller sleeps until every chunk has finished (it never runs
 * kernel code itself: its stack may be small). Several threads may launch
 * at once: jobs are served in FIFO order, and a worker moves on to the next
 * job as soon as the current one has no chunks left to hand out. */
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RT_STACK_BYTES ((size_t)64 << 20)
#define RT_MAX_THREADS 1024

typedef struct RtJob {
    struct RtJob *next;        /* queue link */
    BkRangeFn fn;              /* the kernel's range entry */
    void *const *args;         /* its argument array */
    const int32_t *ctx;        /* its BkLaunchCtx (grid first) */
    int64_t total;             /* instances in the grid */
    int64_t chunk;             /* instances handed out at a time */
    int64_t next_first;        /* first instance not yet handed out */
    int64_t done;              /* instances finished */
} RtJob;

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    pthread_cond_t work;       /* a job was queued */
    pthread_cond_t finished;   /* some job finished */
    RtJob *head, *tail;        /* queued jobs with chunks left */
    int nthreads;              /* workers started */
} pool = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER,
          PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0};

static void *worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (!pool.head)
            pthread_cond_wait(&pool.work, &pool.lock);
        RtJob *j = pool.head;
        int64_t first = j->next_first;
        int64_t last = first + j->chunk < j->total ? first + j->chunk : j->total;
        j->next_first = last;
        if (last >= j->total) { /* nothing left to hand out: dequeue */
            pool.head = j->next;
            if (!pool.head)
                pool.tail = NULL;
        }
        pthread_mutex_unlock(&pool.lock);
        j->fn(j->args, first, last, j->ctx);
        pthread_mutex_lock(&pool.lock);
        j->done += last - first;
        if (j->done == j->total)
            pthread_cond_broadcast(&pool.finished);
    }
    return NULL;
}

static int wanted_threads(void)
{
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
    int want = wanted_threads();
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, RT_STACK_BYTES);
    for (int i = 0; i < want; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker, NULL) != 0)
            break; /* run with the workers we got */
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
    if (n == 0) {
        snprintf(err, errlen, "could not start the CPU thread pool");
        return -1;
    }
    RtJob j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.args = args;
    j.ctx = ctx->nprog;
    j.total = total;
    /* several chunks per worker balance uneven instances; large enough
     * chunks keep the lock cold */
    j.chunk = total / ((int64_t)n * 8);
    if (j.chunk < 1)
        j.chunk = 1;
    pthread_mutex_lock(&pool.lock);
    if (pool.tail)
        pool.tail->next = &j;
    else
        pool.head = &j;
    pool.tail = &j;
    if (total > j.chunk)
        pthread_cond_broadcast(&pool.work);
    else
        pthread_cond_signal(&pool.work);
    while (j.done != j.total)
        pthread_cond_wait(&pool.finished, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    return 0;
}
