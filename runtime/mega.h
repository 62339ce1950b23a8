/* mega.h — megakernel mode on CPU ranks (`blkc run --megakernel`): a
 * rank's launches become one table of tile-tasks with dependency counters,
 * run by a pool of worker threads per rank. Prefix rt_mega_. */
#ifndef BLKC_MEGA_H
#define BLKC_MEGA_H

#include "rt.h"

#define RT_MEGA_MAX_RANKS 64

/* One step of a rank's program as the megakernel ran it: a launch (its
 * tile-tasks) or a boundary (a collective, copy, signal or async block
 * that the graph does not hold: every tile before it finishes first). */
typedef struct RtMegaStep {
    char name[48];        /* kernel name, or the boundary's / op's name */
    bool boundary;
    bool op;              /* one tile-task running a copy or a collective */
    bool remote;          /* a collective: its tile-task waits for the peers */
    bool fence;           /* a kernel with signals or peer access: after
                             every earlier tile, before every later one */
    int64_t redges;       /* edges from collectives' tile-tasks (remote) */
    int segment;          /* graph segment (between boundaries) */
    int tiles;            /* tile-tasks (launch) */
    int64_t grid[3];      /* launch grid */
    int fallback;         /* params whose footprint is unknown (whole) */
    int64_t edges;        /* local dependency edges into its tiles */
    uint64_t from;        /* bit s: an edge from step s of its segment
                             (steps numbered from the segment's first; 63+
                             share bit 63) */
} RtMegaStep;

/* One rank's record. */
typedef struct RtMegaLog {
    RtMegaStep *s;
    int n, cap;
    int segments;
    int64_t tiles, edges, redges, fallback;
    int64_t crit;         /* tile-tasks + boundaries on the longest chain */
    char *crit_path;      /* that chain as "k3 x2 -> k5 x1 -> all_reduce" */
    int workers;          /* worker threads per rank (the rank's own included) */
} RtMegaLog;

/* Megakernel mode for a run (RtPlanModule.mega). workers: threads per
 * rank, 0 = BLKC_MEGA_WORKERS or (BLKC_NUM_THREADS or the online CPUs) /
 * ranks; max_tiles: the
 * most tile-tasks one launch becomes (0 = BLKC_MEGA_TILES or 32; runs of
 * consecutive program ids beyond); record: fill log[rank] (the caller
 * frees with rt_mega_rec_free). */
typedef struct RtMegaRec {
    int workers, max_tiles;
    bool record;
    RtMegaLog log[RT_MEGA_MAX_RANKS];
    /* cache_on (not with record): keep each rank's table of tile-tasks and
     * edges for the next run of the same program (a step whose signature
     * — kernel, grid, buffers up to their addresses, extents, strides,
     * scalars — differs, and every later one, is rebuilt) */
    bool cache_on;
    struct RtMegaCache *cache[RT_MEGA_MAX_RANKS];
} RtMegaRec;

void rt_mega_rec_free(RtMegaRec *rec);

typedef struct RtMega RtMega; /* one rank's graph of pending tile-tasks */

/* A graph for rank `rank` of `world` launching with world view wv. */
RtMega *rt_mega_new(RtMegaRec *rec, const RtWorldView *wv);
/* Add launch f (fn its range entry) as tile-tasks after the pending ones,
 * with edges from every pending tile whose footprint it conflicts with.
 * Returns 0, or -1 with err. */
int rt_mega_launch(RtMega *m, const IrFunc *f, BkRangeFn fn, const blkc_arg *args, int nargs,
                   const blkc_launch_options *opts, char *err, size_t errlen);
/* A tile-task that runs run(arg) (arg: argsize bytes, copied) after the
 * pending tiles whose footprints conflict with spans: a local copy, or a
 * collective (remote: its tile-tasks also run in program order, so every
 * rank calls its collectives in the same order; its dependents' edges
 * count as remote). Returns 0, or -1 with err. */
typedef struct RtMegaSpan {
    const void *lo;
    size_t bytes;
    bool write;
} RtMegaSpan;
int rt_mega_op(RtMega *m, const char *name, bool remote, int (*run)(void *arg), const void *arg,
               size_t argsize, const RtMegaSpan *spans, int nspans, char *err, size_t errlen);
/* Run every pending tile-task (workers take ready ones; each finished
 * tile releases its dependents) and record a boundary `what` (NULL:
 * none). Returns 0, or -1 with err (a kernel's failure, an abort). */
int rt_mega_flush(RtMega *m, const char *what, char *err, size_t errlen);
/* Worker threads per rank (the rank's own included). */
int rt_mega_workers(const RtMega *m);
/* Free (pending tiles are dropped). */
void rt_mega_free(RtMega *m);

#endif
