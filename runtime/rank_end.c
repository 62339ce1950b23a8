/* rank_end.c — the end of a run of a local world, and the ranks it leaves
 * behind.
 *
 * The end of a run has a deadline (rt_world_end_run): once a rank's
 * function has returned, the others have the collectives' deadline to
 * return as well, else the run fails with "the end of the run timed out
 * ... did not arrive"; after any failure the ranks have the signal-wait
 * deadline plus END_GRACE_MS to return (a rank in a wait that cannot see
 * the abort flag, a GPU kernel without mapped memory, ends by its own
 * deadline). A rank that still has not (computing, where nothing can
 * interrupt it) is left behind: its thread is detached, never joined, and
 * its world is kept, not freed (rt_world_destroy keeps it on a list), so
 * it never touches freed memory of the world. Should it return after all,
 * the last such rank of a destroyed world frees it, and with it what the
 * run kept (rt_world_keep). Whether a rank returned or was left behind is
 * one compare-and-swap on RtRank.left, so exactly one of rt_world_end_run
 * and the rank decides. */
#include "ranks_impl.h"

#include <time.h>

#define END_GRACE_MS 1000 /* after a failure, for ranks to return (more
                             the signal-wait deadline) */

/* Worlds with ranks left behind: kept until the last of them returns
 * (never, for a rank computing for ever). */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static RtWorld *kept_worlds;
static int ranks_behind; /* atomic: rank threads ever left behind */

int rt_world_behind(const RtWorld *w)
{
    return w->behind;
}

int rt_ranks_left_behind(void)
{
    return __atomic_load_n(&ranks_behind, __ATOMIC_ACQUIRE);
}

int rt_world_keep_behind(RtWorld *w)
{
    pthread_mutex_lock(&w->lock);
    int live = w->behind_live;
    w->destroyed = 1;
    if (live) { /* a rank thread still uses it: the last one frees it */
        pthread_mutex_lock(&kept_lock);
        w->kept_next = kept_worlds;
        kept_worlds = w;
        pthread_mutex_unlock(&kept_lock);
    }
    pthread_mutex_unlock(&w->lock);
    return live > 0;
}

/* The last rank left behind of a destroyed world frees it (and what the
 * run kept with it). */
void rt_world_behind_returned(RtWorld *w)
{
    pthread_mutex_lock(&w->lock);
    int last = --w->behind_live == 0 && w->destroyed;
    pthread_mutex_unlock(&w->lock);
    if (!last)
        return;
    pthread_mutex_lock(&kept_lock);
    for (RtWorld **p = &kept_worlds; *p; p = &(*p)->kept_next)
        if (*p == w) {
            *p = w->kept_next;
            break;
        }
    pthread_mutex_unlock(&kept_lock);
    rt_world_free(w);
}

/* The ranks that have not returned, "1, 3", into miss; their count. */
static int not_returned(RtWorld *w, int started, char *miss, size_t len)
{
    size_t n = 0;
    int count = 0;
    miss[0] = 0;
    for (int q = 0; q < started; q++)
        if (!__atomic_load_n(&w->ranks[q].left, __ATOMIC_ACQUIRE))
            rt_rank_list_add(miss, len, &n, &count, q);
    return count;
}

/* A rank that has not returned is in a signal wait, which ends by its own
 * deadline with the better message. */
static int missing_in_wait(RtWorld *w, int started)
{
    for (int q = 0; q < started; q++)
        if (!__atomic_load_n(&w->ranks[q].left, __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&w->ranks[q].in_wait, __ATOMIC_ACQUIRE) > 0)
            return 1;
    return 0;
}

/* Wait for the started ranks' functions to return, with a deadline: once
 * one has returned, the others have the collectives' deadline (longer
 * while one of them is in a signal wait, as for a barrier), then the run
 * fails naming them; after a failure they have the signal-wait deadline
 * plus END_GRACE_MS. Joins the ranks that returned and detaches the
 * others (left behind, the world kept). A returning rank wakes it at once
 * (left_cv: no added latency where every rank returns); otherwise it looks
 * at the clock every 2 ms; the loop ends by the deadlines. */
void rt_world_end_run(RtWorld *w, int started)
{
    int64_t t_left = -1, t_fail = -1, tmo = w->coll_timeout_ms;
    while (__atomic_load_n(&w->nleft, __ATOMIC_ACQUIRE) < started) {
        int64_t now = rt_now_ms();
        if (__atomic_load_n(&w->failed, __ATOMIC_ACQUIRE)) {
            if (t_fail < 0)
                t_fail = now;
            else if (now - t_fail >= END_GRACE_MS + (w->timeout_ms > 0 ? w->timeout_ms : 0))
                break;
        } else if (__atomic_load_n(&w->nleft, __ATOMIC_ACQUIRE) > 0) {
            if (t_left < 0)
                t_left = now;
            else if (now - t_left >= tmo &&
                     !(rt_barrier_grace(now - t_left, tmo) &&
                       missing_in_wait(w, started))) {
                char miss[256];
                int first = __atomic_load_n(&w->first_left, __ATOMIC_ACQUIRE);
                int count = not_returned(w, started, miss, sizeof miss);
                if (count > 0 && first >= 0)
                    rt_rank_fail(&w->ranks[first], "the end of the run timed "
                                 "out after %lld ms: rank %d waits, rank%s %s "
                                 "did not arrive", (long long)tmo, first,
                                 count > 1 ? "s" : "", miss);
            }
        }
        /* a returning rank wakes this at once; the clock every 2 ms */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 2 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&w->lock);
        if (__atomic_load_n(&w->nleft, __ATOMIC_ACQUIRE) < started)
            pthread_cond_timedwait(&w->left_cv, &w->lock, &ts);
        pthread_mutex_unlock(&w->lock);
    }
    for (int q = 0; q < started; q++) {
        int running = RANK_RUNNING;
        pthread_mutex_lock(&w->lock); /* before the rank's rt_world_behind_returned */
        int behind = __atomic_compare_exchange_n(&w->ranks[q].left, &running,
                                                 RANK_BEHIND, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE);
        if (behind) {
            w->behind++;
            w->behind_live++;
        }
        pthread_mutex_unlock(&w->lock);
        if (behind) {
            pthread_detach(w->ranks[q].thread);
            __atomic_add_fetch(&ranks_behind, 1, __ATOMIC_ACQ_REL);
        } else {
            pthread_join(w->ranks[q].thread, NULL);
        }
    }
}
