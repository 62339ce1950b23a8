/* spec_bg.c — the background compiler of specialized variants (the
 * BLKC_SPECIALIZE_BACKGROUND mode, cache.h): a launch with a new argument
 * signature runs the best code compiled so far at once and queues the
 * exact variant here; one worker thread compiles queued variants in order
 * and publishes each (jc_unit_compile), so later launches pick it up.
 *
 * Bounded on purpose: one worker (compiles are LLVM-heavy; a server's
 * cores belong to its launches), at most JC_SPEC_QUEUE queued jobs. The
 * worker exists only while there is work, so an idle process has no extra
 * thread. At exit the queue is dropped and the running compile is waited
 * for (LLVM must not be torn down under it). */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

typedef struct SbJob {
    JcUnit *u;               /* referenced while queued / running */
    int fi;                  /* function index in u */
    uint32_t sig[64];        /* the signature (u's nparams entries) */
} SbJob;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle;     /* the worker left */
    SbJob q[JC_SPEC_QUEUE];  /* ring */
    int head, n;
    SbJob cur;               /* the running job (cur.u NULL: none) */
    bool running;            /* a worker thread exists */
    bool exiting;            /* atexit ran: queue nothing more */
    bool hooked;             /* the atexit handler is registered */
} sb = {.lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

static bool same_job(const SbJob *j, const JcUnit *u, int fi,
                     const uint32_t *sig)
{
    return j->u == u && j->fi == fi &&
           memcmp(j->sig, sig, sizeof(uint32_t) *
                                   (size_t)u->ir->funcs[fi]->nparams) == 0;
}

static void *sb_worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&sb.lock);
    while (sb.n > 0) {
        sb.cur = sb.q[sb.head];
        sb.head = (sb.head + 1) % JC_SPEC_QUEUE;
        sb.n--;
        pthread_mutex_unlock(&sb.lock);
        jc_unit_compile(sb.cur.u, sb.cur.fi, sb.cur.sig);
        pthread_mutex_lock(&sb.lock);
        jc_unit_unref(sb.cur.u);
        sb.cur.u = NULL;
    }
    sb.running = false;
    pthread_cond_broadcast(&sb.idle);
    pthread_mutex_unlock(&sb.lock);
    return NULL;
}

/* atexit: drop what is queued, wait for the running compile. */
static void sb_at_exit(void)
{
    pthread_mutex_lock(&sb.lock);
    sb.exiting = true;
    while (sb.n > 0) {
        jc_unit_unref(sb.q[sb.head].u);
        sb.head = (sb.head + 1) % JC_SPEC_QUEUE;
        sb.n--;
    }
    while (sb.running)
        pthread_cond_wait(&sb.idle, &sb.lock);
    pthread_mutex_unlock(&sb.lock);
}

void jc_spec_enqueue(JcUnit *u, int fi, const uint32_t *sig)
{
    if (u->ir->funcs[fi]->nparams > 64)
        return;
    pthread_mutex_lock(&sb.lock);
    bool dup = sb.exiting || sb.n == JC_SPEC_QUEUE ||
               (sb.cur.u && same_job(&sb.cur, u, fi, sig));
    for (int i = 0; i < sb.n && !dup; i++)
        dup = same_job(&sb.q[(sb.head + i) % JC_SPEC_QUEUE], u, fi, sig);
    if (!dup) {
        if (!sb.hooked)
            sb.hooked = atexit(sb_at_exit) == 0;
        SbJob *j = &sb.q[(sb.head + sb.n) % JC_SPEC_QUEUE];
        memset(j, 0, sizeof *j);
        j->u = u;
        j->fi = fi;
        memcpy(j->sig, sig,
               sizeof(uint32_t) * (size_t)u->ir->funcs[fi]->nparams);
        jc_unit_ref(u);
        sb.n++;
        if (!sb.running) {
            pthread_t t;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            /* compiles run the front end and LLVM: a roomy stack */
            pthread_attr_setstacksize(&at, (size_t)16 << 20);
            if (pthread_create(&t, &at, sb_worker, NULL) == 0) {
                sb.running = true;
            } else { /* no thread: drop the job, a later launch retries */
                sb.n--;
                jc_unit_unref(u);
            }
            pthread_attr_destroy(&at);
        }
    }
    pthread_mutex_unlock(&sb.lock);
}

void jc_spec_wait(void)
{
    pthread_mutex_lock(&sb.lock);
    while (sb.running)
        pthread_cond_wait(&sb.idle, &sb.lock);
    pthread_mutex_unlock(&sb.lock);
}
