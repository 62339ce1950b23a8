/* ranks_impl.h — the inside of a world of ranks (RtWorld, RtRank), private
 * to the files that implement ranks.h's world: ranks.c (ranks, errors,
 * signals, the symmetric heap, the world and its runs), rank_agree.c (the
 * barrier and the collectives' agreement) and rank_end.c (the end of a run,
 * the ranks left behind). Everything else sees the opaque types of ranks.h.
 *
 * Cross-file prefix: rt_rank_ / rt_world_, as in ranks.h. */
#ifndef BLKC_RANKS_IMPL_H
#define BLKC_RANKS_IMPL_H

#include "rank_mpi.h"
#include "ranks.h"

#include <pthread.h>

#define CACHELINE 64

enum { RANK_RUNNING, RANK_RETURNED, RANK_BEHIND }; /* RtRank.left */

/* What a world releases when it is freed (rt_world_keep). */
typedef struct RtWorldKeep {
    void (*release)(void *);
    void *ctx;
    struct RtWorldKeep *next;
} RtWorldKeep;

struct RtRank {
    RtWorld *world;
    int id;
    int ret;                 /* what fn returned */
    int left;                /* atomic: RANK_* (fn has returned, or the rank
                                was left behind; CAS decides which first) */
    int has_err;             /* err holds a message (under world->lock) */
    char err[RT_RANK_ERRLEN]; /* "rank R: ..." */
    size_t sym_top;          /* bump offset into this rank's heap */
    uint64_t coll_seq;       /* collectives begun in this run */
    int in_wait;             /* atomic: signal waits in progress */
    unsigned bar_arrived;    /* atomic: 1 + the barrier generation it last
                                arrived at (who is missing, on a timeout) */
    RtRankColl coll[2];      /* published descriptors, by seq parity */
    void *kept[4];           /* buffers of failed collectives that peers may
                                still read (rt_rank_keep): freed with the world */
    pthread_t thread;
    _Alignas(CACHELINE) char pad_[CACHELINE];
};

struct RtWorld {
    int kind;                /* RT_WORLD_LOCAL or RT_WORLD_MPI */
    RtMpi *mpi;              /* RT_WORLD_MPI: the windows (rank_mpi.c) */
    int self;                /* RT_WORLD_MPI: this process's rank */
    int nranks;
    size_t heap_bytes;       /* usable bytes per rank */
    size_t heap_stride;      /* distance between two ranks' heaps */
    unsigned char *heap;     /* nranks * heap_stride bytes (mmap) */
    char **heap_base;        /* [nranks]: each rank's heap */
    RtRank *ranks;           /* [nranks] */
    int64_t timeout_ms;      /* signal wait timeout of this run */
    int64_t coll_timeout_ms; /* barrier / collective timeout of this run */
    int (*fn)(RtRank *, void *);
    void *arg;
    int running;             /* under lock: a run is in progress */
    int behind;              /* ranks left behind by a run (world kept) */
    int behind_live;         /* under lock: of those, not returned yet */
    int destroyed;           /* under lock: rt_world_destroy was called */
    RtWorldKeep *keeps;      /* under lock: rt_world_keep's, run when freed */
    RtWorld *kept_next;      /* on the list of kept worlds */
    pthread_mutex_t lock;    /* failure record, running */
    pthread_cond_t left_cv;  /* a rank returned (nleft grew; under lock) */
    int fail_rank;           /* first failing rank (-1: none, -2: runtime) */
    char fail_msg[RT_RANK_ERRLEN]; /* its message without "rank Q: " */
    _Alignas(CACHELINE) int failed; /* atomic abort flag */
    volatile int *mirror;    /* rt_world_set_abort_mirror, or NULL */
    _Alignas(CACHELINE) int nleft;  /* atomic: ranks whose fn returned */
    int first_left;          /* atomic: the rank that returned first, or -1 */
    _Alignas(CACHELINE) unsigned bar_count; /* atomic: arrivals */
    _Alignas(CACHELINE) unsigned bar_gen;   /* atomic: completed barriers */
};
/* ------------------------------------------------------------ ranks.c */
/* The world has failed: record why this rank gives up ("aborted because
 * rank Q failed: ..."; nothing new if the failure is its own). -1. */
int rt_rank_aborted(RtRank *r);
/* One round of backing off: spin, then yield, then sleep 20..200 us. */
void rt_rank_backoff(unsigned *round);
/* Free the world now: no rank thread uses it any more. */
void rt_world_free(RtWorld *w);

/* ------------------------------------------------------------ rank_agree.c */
/* rt_rank_coll_* are in ranks.h. */

/* ------------------------------------------------------------ rank_end.c */
/* Wait for the `started` ranks of a run to return, with the deadlines of
 * ranks.h (rt_ranks_left_behind); join those that did, leave the others
 * behind. */
void rt_world_end_run(RtWorld *w, int started);
/* A rank left behind has returned after all (from its thread). */
void rt_world_behind_returned(RtWorld *w);
/* rt_world_destroy: 1 when a rank left behind still uses w, which is then
 * kept (the last such rank frees it); 0 when w may be freed now. */
int rt_world_keep_behind(RtWorld *w);

#endif
