/* rank_mpi_gate.c — deadlines for the MPI calls of an MPI world that wait
 * for every process outside a run and have no nonblocking form: MPI_Init,
 * making and freeing the windows, the start of a run, MPI_Finalize
 * (rank_mpi.c calls them). Without these a process that never comes (stuck
 * or slow before it creates its world) would hang all the others.
 *
 * Two tools, both ending the job with exit 3 and one line
 * "blkc: error: rank R: WHAT timed out after T ms: rank R waits, ...":
 * - the arrival gate (rt_mpig_gate), before such calls: every process sends
 *   a token to every other and polls for theirs (MPI_Isend / MPI_Irecv /
 *   MPI_Testsome) until the deadline, so the line names the ranks that did
 *   not arrive. The lowest rank that arrived reports and calls MPI_Abort;
 *   the others wait 2 s longer for it, then report themselves.
 * - a watchdog thread (rt_mpig_arm / rt_mpig_disarm) around the blocking
 *   calls themselves: past the deadline it prints the line and _exit(3)s,
 *   and mpirun ends the job. It covers MPI_Init (no gate before MPI runs,
 *   and MPI does not tell who is missing) and a process that stops inside
 *   a call after the gate. Rank r's fires 2 s x min(r, 3) late, so the
 *   lowest waiting rank's line is normally the only one. */
#include "rank_mpi.h"

#ifndef BLKC_HAVE_MPI

typedef int rt_mpig_unused_; /* nothing to bound without MPI */

#else

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* the gates' tokens on MPI_COMM_WORLD (a host that uses MPI itself must
 * not take them with MPI_ANY_TAG while a world is made, run or freed) */
#define GATE_TAG 0x626b
#define GATE_GRACE_MS 2000
#define WD_STAGGER_MS 2000 /* mpirun may take over 500 ms to stop the rest */

/* ------------------------------------------------------------ watchdog */

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond;
static int wd_started;          /* under wd_lock: wd_main runs */
static const char *wd_what;     /* under wd_lock: armed for this, or NULL */
static int64_t wd_until, wd_tmo; /* under wd_lock: deadline, timeout */
static int wd_rank;             /* under wd_lock */

static void *wd_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd_lock);
    for (;;) {
        if (!wd_what) {
            pthread_cond_wait(&wd_cond, &wd_lock);
            continue;
        }
        int64_t now = rt_now_ms();
        if (now >= wd_until) {
            fprintf(stderr, "blkc: error: rank %d: %s timed out after %lld "
                    "ms: rank %d waits (MPI does not tell which ranks did "
                    "not arrive)\n", wd_rank, wd_what, (long long)wd_tmo,
                    wd_rank);
            fflush(stderr);
            _exit(3); /* MPI may be stuck in the caller: no MPI_Abort */
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (wd_until - now) % 1000 * 1000000;
        ts.tv_sec += (time_t)((wd_until - now) / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&wd_cond, &wd_lock, &ts);
    }
    return NULL;
}

void rt_mpig_arm(const char *what, int rank, int64_t timeout_ms)
{
    if (timeout_ms < 0 || rank < 0)
        return;
    pthread_mutex_lock(&wd_lock);
    if (!wd_started) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&wd_cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        /* no thread: the calls stay unbounded, as before */
        wd_started = pthread_create(&t, &at, wd_main, NULL) == 0 ? 1 : -1;
        pthread_attr_destroy(&at);
    }
    wd_what = what;
    wd_rank = rank;
    wd_tmo = timeout_ms;
    wd_until = rt_now_ms() + timeout_ms +
               (int64_t)WD_STAGGER_MS * (rank < 3 ? rank : 3);
    if (wd_started > 0)
        pthread_cond_signal(&wd_cond);
    pthread_mutex_unlock(&wd_lock);
}

void rt_mpig_disarm(void)
{
    pthread_mutex_lock(&wd_lock);
    wd_what = NULL;
    if (wd_started > 0)
        pthread_cond_signal(&wd_cond);
    pthread_mutex_unlock(&wd_lock);
}

/* ------------------------------------------------------------ gate */

static void gate_backoff(unsigned *round)
{
    unsigned k = (*round)++;
    if (k >= 32) {
        struct timespec ts = {0, (long)(k < 200 ? 50 : 1000) * 1000};
        nanosleep(&ts, NULL);
    }
}

/* The ranks whose token has not come (rq[q] still active) as "1, 3". */
static int gate_missing(const MPI_Request *rq, int me, int n, char *buf,
                        size_t len)
{
    size_t k = 0;
    int count = 0;
    buf[0] = 0;
    for (int q = 0; q < n; q++)
        if (q != me && rq[q] != MPI_REQUEST_NULL)
            rt_rank_list_add(buf, len, &k, &count, q);
    return count;
}

void rt_mpig_gate(int me, int n, int64_t timeout_ms, const char *what)
{
    if (n <= 1)
        return;
    MPI_Request *rq = malloc((size_t)n * 2 * sizeof *rq);
    int *in = malloc((size_t)n * sizeof *in);
    int *idx = malloc((size_t)n * 2 * sizeof *idx);
    if (!rq || !in || !idx) { /* no memory for the tokens: a plain barrier */
        free(rq);
        free(in);
        free(idx);
        rt_mpig_arm(what, me, timeout_ms);
        MPI_Barrier(MPI_COMM_WORLD);
        rt_mpig_disarm();
        return;
    }
    static int token; /* never read */
    for (int q = 0; q < n; q++) /* receives first: a token finds its own */
        rq[q] = MPI_REQUEST_NULL;
    for (int q = 0; q < n; q++)
        if (q != me)
            MPI_Irecv(&in[q], 1, MPI_INT, q, GATE_TAG, MPI_COMM_WORLD, &rq[q]);
    for (int q = 0; q < n; q++) {
        rq[n + q] = MPI_REQUEST_NULL;
        if (q != me)
            MPI_Isend(&token, 1, MPI_INT, q, GATE_TAG, MPI_COMM_WORLD,
                      &rq[n + q]);
    }
    int64_t t0 = rt_now_ms();
    unsigned round = 0;
    for (;;) {
        int done = 0;
        MPI_Testsome(2 * n, rq, &done, idx, MPI_STATUSES_IGNORE);
        if (done == MPI_UNDEFINED) /* every request has completed */
            break;
        int64_t waited = rt_now_ms() - t0;
        if (timeout_ms >= 0 && waited >= timeout_ms) {
            int low = me; /* the lowest rank known to be here */
            for (int q = 0; q < me; q++)
                if (rq[q] == MPI_REQUEST_NULL) {
                    low = q;
                    break;
                }
            char miss[256];
            int nm = gate_missing(rq, me, n, miss, sizeof miss);
            if ((nm > 0 && low == me) || waited >= timeout_ms + GATE_GRACE_MS) {
                if (nm > 0)
                    fprintf(stderr, "blkc: error: rank %d: %s timed out "
                            "after %lld ms: rank %d waits, rank%s %s did not "
                            "arrive\n", me, what, (long long)timeout_ms, me,
                            nm > 1 ? "s" : "", miss);
                else /* every token came; a peer did not take this one's */
                    fprintf(stderr, "blkc: error: rank %d: %s timed out "
                            "after %lld ms: rank %d waits, a peer stopped "
                            "inside MPI\n", me, what, (long long)timeout_ms,
                            me);
                fflush(stderr);
                MPI_Abort(MPI_COMM_WORLD, 3);
                _exit(3);
            }
        }
        gate_backoff(&round);
    }
    free(rq);
    free(in);
    free(idx);
}

#endif /* BLKC_HAVE_MPI */
