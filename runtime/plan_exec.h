/* plan_exec.h — the Device IR interpreter's state, shared by plan.c (the
 * interpreter) and plan_coll.c (its collectives), private to those two.
 * Prefix rt_plan_. */
#ifndef BLKC_PLAN_EXEC_H
#define BLKC_PLAN_EXEC_H

#include "plan.h"
#include "gpu_ranks.h"
#include "mega.h"

#include <pthread.h>
#include <stdarg.h>

typedef struct Buf {
    char *data;                    /* element (0, ...) */
    int dtype, rank, mem;          /* element dtype, dims, IrMemKind */
    int64_t shape[IR_MAX_RANK];    /* extents */
    int64_t stride[IR_MAX_RANK];   /* element strides */
    bool owned;                    /* malloc'd by ALLOC (empty) */
} Buf;

typedef struct Exec Exec;
typedef struct Async {
    pthread_t th;                  /* the block's thread */
    Exec *x;                       /* its interpreter state (own values) */
    int region;                    /* the block */
    int rc;                        /* its result */
} Async;

struct Exec {
    const RtPlanModule *pm;        /* module and JIT'd kernels */
    const IrFunc *f;               /* the device function */
    RtRank *r;                     /* this rank */
    IrScalarVal *val;              /* per instruction */
    IrScalarVal *vars;             /* per var */
    Buf *buf;                      /* per param (shared with async blocks) */
    IrScalarVal *scalars;          /* per param: scalar args */
    int64_t (*shapes)[IR_MAX_RANK];/* per param: extents, for SIZE */
    Async **asyncs;                /* outstanding async blocks */
    int nasync, cap_async;
    bool in_async;                 /* running inside an async block */
    RtGpuCtx *g;                   /* GPU ranks: this thread's stream, or NULL */
    struct Xchg *xg;               /* the exchange block being collected */
    RtGroup *groups[32];           /* made by group(color, key) in this
                                      function; a handle is the index (an
                                      async block gets the ones made before
                                      it) */
    int ngroups;
    void *gcomm[32];               /* GPU ranks: a group's NCCL communicator
                                      (gpu_p2p.c), or NULL */
    bool entry;                    /* the rank's entry function */
    RtMega *mega;                  /* megakernel mode (pm->mega, CPU): the
                                      rank's pending tile-tasks (shared with
                                      called device functions), or NULL */
};

/* The sends and receives of one exchange { } block, run at its end. */
typedef struct Xchg {
    RtP2p *ops;
    int n, cap;
} Xchg;

/* plan.c */
/* Record "FUNC line L: msg" (or "FUNC: msg") as the rank's error; -1. */
int rt_plan_fail(Exec *x, const IrInstr *in, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The group a handle value (instruction vid's) names, or NULL with the
 * error recorded. */
const RtGroup *rt_plan_group_of(Exec *x, const IrInstr *in, int vid);

/* plan_coll.c */
/* Run a COLL instruction: a world or group collective, or a send / recv
 * collected into the exchange block being run. 0 or -1 (rank failed). */
int rt_plan_coll(Exec *x, const IrInstr *in);

static inline int64_t rt_plan_buf_numel(const Buf *b)
{
    int64_t n = 1;
    for (int i = 0; b && i < b->rank; i++)
        n *= b->shape[i];
    return n;
}

/* Whole C-order buffers (extents of 1 may have any stride). */
static inline bool rt_plan_buf_contiguous(const Buf *b)
{
    int64_t st = 1;
    for (int i = b->rank - 1; i >= 0; i--) {
        if (b->shape[i] > 1 && b->stride[i] != st)
            return false;
        st *= b->shape[i];
    }
    return true;
}

#endif
