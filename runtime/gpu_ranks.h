/* gpu_ranks.h — ranks on GPUs (gpu_ranks.c): `blkc run --device=cuda:N
 * --ranks=R` runs R ranks as threads of one process, rank r on device
 * (N + r) % ndevices, over a local RtWorld (ranks.h) that provides the
 * threads, barriers, failure propagation and host-side collectives.
 *
 * Per rank: a stream (plus one per async block), a symmetric heap that is
 * one device allocation (peer views use the peer's device pointer: same
 * device, or another after cuCtxEnablePeerAccess), u64 signal cells in
 * that heap, and a failure record for its kernels. Per world: an abort
 * flag in mapped pinned host memory that every rank's kernels get as
 * BkGpuRankCtx.abort_flag and that the host world sets when any rank
 * fails (rt_world_set_abort_mirror), so that a kernel waiting on a failed
 * peer gives up at once; without mapped memory (a driver that lacks it)
 * the flag is 0 and such a wait runs to its timeout. The Device IR
 * interpreter (plan.c) calls the hooks below when its module has a GPU
 * world (RtPlanModule.gpu); buffers then hold device addresses.
 *
 * Collectives: NCCL when it loads and every rank has its own device;
 * otherwise (NCCL refuses two ranks on one GPU) they are staged through
 * host memory and the CPU collectives of ranks.h. BLKC_GPU_COLL=nccl
 * makes a missing or unusable NCCL an error, =host always stages. Where
 * NCCL has ncclCommInitRankConfig the communicators are nonblocking and
 * every NCCL call is polled against the collectives' deadline; otherwise
 * (an older NCCL) the calls run on helper threads waited for with that
 * deadline (gpu_nccl_wait.c).
 * Groups (`let g = group(...)`, `group = g`) and exchange blocks
 * (gpu_p2p.c) are staged the same way through rank_group.c / rank_p2p.c,
 * or with NCCL run as ncclCommSplit communicators and grouped
 * ncclSend/ncclRecv (run only against tests/gpu/fake_nccl.c).
 *
 * Under mpirun (rt_mpi_launch_size() > 1) each process runs its own rank
 * on device (N + rank) % ndevices over the MPI host world, and maps the
 * other processes' heaps with CUDA / HIP IPC handles.
 * The same on hip:N (gpu_hip.c, RCCL instead of NCCL); a driver table
 * without the GPU-ranks entries (the emulated devices) fails with a clear
 * message. The waits for the streams: gpu_wait.c; the copies between host
 * and device: gpu_copy.c. Tested over fake drivers (tests/gpu/fake_cuda.c,
 * fake_hip.c).
 * Never run on a GPU (see docs/device.md). Prefix rt_gpur_. */
#ifndef BLKC_GPU_RANKS_H
#define BLKC_GPU_RANKS_H

#include "gpu.h"
#include "plan.h"

#include <pthread.h>
#include <stdbool.h>

typedef struct RtGpuCtx RtGpuCtx; /* one rank's stream (main or async) */

/* A view of a buffer resolved to addresses (plan.c's Span). */
typedef struct RtPlanSpan {
    char *base;                    /* address of the view's first element */
    int n;                         /* range dims kept */
    int64_t len[IR_MAX_RANK];      /* their lengths */
    int64_t str[IR_MAX_RANK];      /* their strides, bytes */
    int64_t numel;                 /* elements */
} RtPlanSpan;

/* Walk the elements of spans d and s (the same count) in row-major order
 * and call copy(ctx, dst, src, bytes) for each run of elements both sides
 * hold contiguously (whole innermost rows when both rows are contiguous and
 * equally long, else one element). Returns 0, or -1 as soon as copy does
 * not return 0. plan.c (host memmove; GPU ranks' rt_gpur_copy). */
int rt_plan_span_runs(const RtPlanSpan *d, const RtPlanSpan *s, int esz,
                      int (*copy)(void *ctx, char *dp, char *sp, size_t bytes), void *ctx);

/* Run entry fi (kernel or device function) of pm->ir on nranks GPU ranks
 * of `device` ("cuda:0", "hip:0"): inputs are host buffers as for
 * rt_plan_run; every tensor is copied to its rank's device (symmetric ones
 * onto the heap), and back after the run. Returns BLKC_OK,
 * BLKC_ERR_UNSUPPORTED (no driver, no device, no HIP compiler for the
 * notify kernels, an emulated device) or another error with the message
 * in err. */
blkc_status rt_gpur_run(const RtPlanModule *pm, int fi, int nranks,
                        RtPlanArg *const *args, const int64_t *grid,
                        const char *device, char *err, size_t errlen);

/* ---- hooks for plan.c; each returns 0 or -1 with the rank's error set */
/* The main context of rank r (NULL when pm has no GPU world). */
RtGpuCtx *rt_gpur_ctx(RtGpuWorld *gw, RtRank *r);
/* An async block's context: a new stream on the same rank that starts
 * after everything the parent queued. rt_gpur_join waits for it and frees
 * it. */
RtGpuCtx *rt_gpur_fork(RtGpuCtx *c, RtRank *r);
int rt_gpur_join(RtGpuCtx *c, RtRank *r);
/* Wait for everything the context queued (and NCCL errors; gpu_wait.c). */
int rt_gpur_finish(RtGpuCtx *c, RtRank *r);
/* bytes of device memory, zeroed: sym = 1 on the symmetric heap
 * (collective, like rt_sym_alloc), else a private allocation. */
int rt_gpur_alloc(RtGpuCtx *c, RtRank *r, size_t bytes, int sym, char **out);
void rt_gpur_free(RtGpuCtx *c, char *p);
/* p (on this rank's heap) in peer's heap, or NULL. */
char *rt_gpur_peer(RtGpuCtx *c, RtRank *r, const char *p, int peer);
/* Queue a copy of numel elements of esz bytes between two spans. */
int rt_gpur_copy(RtGpuCtx *c, RtRank *r, const RtPlanSpan *d,
                 const RtPlanSpan *s, int esz);
/* notify (RT_SIG_SET / RT_SIG_ADD v, after the work queued before it) or
 * wait (RT_WAIT_GE / RT_WAIT_EQ v, with the timeout of ranks.h) on one
 * u64 cell in device memory. */
int rt_gpur_notify(RtGpuCtx *c, RtRank *r, char *cell, uint64_t v, int op);
int rt_gpur_wait(RtGpuCtx *c, RtRank *r, const char *cell, int cmp,
                 uint64_t v, const char *name);
/* Copy device bytes to the host (after the queued work). */
int rt_gpur_read(RtGpuCtx *c, RtRank *r, void *dst, const char *src,
                 size_t bytes);
/* Launch kernel k with plan.c's arguments (tensors hold device addresses;
 * their device fields are set here) and wait for it. */
int rt_gpur_launch(RtGpuCtx *c, RtRank *r, const IrFunc *k, blkc_arg *args,
                   int nargs, const blkc_launch_options *lo);
/* A collective with the meaning of ranks.h's functions: d->kind etc.;
 * pointers are device addresses. */
int rt_gpur_coll(RtGpuCtx *c, RtRank *r, const RtNcclColl *d);
/* gpu_p2p.c. let g = group(color, key): rt_group_split over the host
 * world, and with NCCL a communicator split from the world's (*comm, NULL
 * when the collectives of g are staged); rt_gpur_group_free releases it. */
int rt_gpur_group(RtGpuCtx *c, RtRank *r, int64_t color, int64_t key,
                  RtGroup **out, void **comm);
void rt_gpur_group_free(RtGpuCtx *c, RtRank *r, void *comm);
/* A collective in group g (rt_group_coll's meaning, device addresses);
 * src_bytes / dst_bytes: the sizes of its buffers. */
int rt_gpur_group_coll(RtGpuCtx *c, RtRank *r, const RtGroup *g, void *comm,
                       const RtRankColl *d, size_t src_bytes, size_t dst_bytes);
/* The sends and receives of an exchange block (rt_exchange's meaning,
 * device addresses). */
int rt_gpur_exchange(RtGpuCtx *c, RtRank *r, const RtP2p *ops, int n);


/* ---- shared by gpu_ranks.c and gpu_coll.c only */
typedef struct RtGpurDev {
    RtGpu *g;                      /* the device */
    RtGpuModule *gm;               /* the program's kernels on it */
    void *sig_mod, *sig_set, *sig_add; /* the notify kernels */
    uint64_t abort_dptr;           /* the world's abort flag here, or 0 */
} RtGpurDev;

typedef struct RtGpurRank {
    RtGpurDev *d;                       /* its device */
    uint64_t heap;                 /* symmetric heap (device address) */
    size_t top;                    /* bytes of heap in use */
    uint64_t table;                /* int64[world] heap bases, on d */
    RtGpuCtx *main;                /* main stream */
    void *comm;                    /* NCCL communicator, made lazily */
    bool nb;                       /* it (and its splits) is nonblocking */
    uint64_t *priv;                /* private allocations of the runner */
    int npriv;
    bool ipc;                      /* heap is another process's (mpirun) */
    uint64_t *dead;                /* frees put off until the run's end */
    int ndead, capdead;
    RtGpuCtx *spare;               /* the async blocks' ended contexts,
                                      drained: the next fork takes one,
                                      the run's end frees them (under the
                                      world's lock) */
} RtGpurRank;

enum { RT_GPUR_COLL_AUTO, RT_GPUR_COLL_NCCL, RT_GPUR_COLL_HOST };

struct RtGpuWorld {
    blkc_target t;
    const RtGpuOps *ops;
    int nranks, ndev;              /* ranks, devices used (by this process) */
    int mpi;                       /* ranks are mpirun's processes */
    int self;                      /* this process's rank (0 without MPI) */
    RtGpurDev *devs;
    RtGpurRank *ranks;
    size_t heap_bytes;             /* per rank */
    int coll_mode;                 /* COLL_* (BLKC_GPU_COLL) */
    pthread_mutex_t lock;          /* the ranks' dead lists */
    int *abort_host;               /* mapped host int: the abort flag the
                                      kernels poll (ranks.h's mirror), or
                                      NULL: their waits run to the timeout */
    bool nccl_ok;                  /* NCCL loaded, one device per rank */
    char nccl_why[512];            /* why not */
    RtPlanModule pm;               /* the module, .gpu = this world */
    int fi;                        /* entry */
    RtPlanArg *const *args;        /* per rank, per param */
    const int64_t *grid;           /* kernel grid override or NULL */
    int stuck;                     /* atomic: an NCCL call was left behind on
                                      a helper thread (gpu_nccl_wait.c): the
                                      devices, streams and memory are kept */
    RtGpuWorld *parked_next;       /* gpu_ranks.c's list of stuck worlds */
    RtGpuCtx *kept;                /* the async blocks' contexts ended while
                                      the world was stuck (under lock) */
};

struct RtGpuCtx {
    RtGpuWorld *w;
    RtGpurRank *k;
    void *stream;
    uint64_t fail;                 /* BkGpuFail of its kernels */
    RtGpuStage stage;              /* its staged copies (gpu_copy.c) */
    uint64_t *poll;                /* pinned 8 bytes: a signal poll's read
                                      lands here (gpu_copy.c, rt_gpur_peek) */
    void *poll_stream;             /* the stream of those reads */
    bool poll_busy;                /* a read is in flight on it */
    bool no_poll;                  /* none can be had: synchronous reads */
    RtGpuCtx *kept_next;           /* the world's list of contexts kept
                                      when it is stuck (w->kept), or its
                                      rank's spare ones (k->spare) */
};

/* An NCCL call was left behind on a helper thread (gpu_nccl_wait.c), or
 * a stream did not drain after the world failed: nothing waits on the
 * devices any more and their streams and memory are kept (the world is
 * parked). */
static inline bool rt_gpur_stuck(const RtGpuWorld *w)
{
    return __atomic_load_n(&w->stuck, __ATOMIC_ACQUIRE);
}
/* gpu_wait.c. Wait for the context's stream (the copies, zeroings and notify kernels
 * queued on it, before the host stages or reads what they wrote, or an
 * async block forks or joins): polled with the collectives' deadline and
 * counted as a wait, as rt_gpur_dev_wait below ("WHAT did not complete
 * within T ms"). Without a query function, or once the world is stuck:
 * synchronized, no deadline. 0, or -1 with the rank's error set. */
int rt_gpur_sync(RtGpuCtx *c, RtRank *r, const char *what);
/* Wait for the rank's own stream with no deadline of its own (its kernel
 * at a launch, `what` "kernel K"; the end of the run; NULL: a stream's
 * end): its peers name a rank that does not come; the stream gets
 * RT_GPUR_GRACE_MS once the world failed, then the world is stuck. On a
 * lone rank, which no peer names, `what` gets the deadline of a lone
 * kernel where one is set (rt_set_deadline_ms): "WHAT did not complete
 * within T ms". 0, or -1 with the rank's error set. */
int rt_gpur_drain(RtGpuCtx *c, RtRank *r, const char *what);
/* The polled wait for a stream (gpu_ranks.c; the rank's own stream at a
 * launch and the end of the run, the default stream after the uploads,
 * NCCL's stream in gpu_nccl_wait.c): cuStreamQuery / hipStreamQuery, never
 * a synchronize, until the stream of dev (NULL: the legacy default
 * stream) is done: 0. -1 with the rank's error set: a query error; `what`
 * not done within tmo_ms (-1: no deadline of its own; "WHAT did not
 * complete within T ms", failing the world); or, once the world failed,
 * the stream did not drain within RT_GPUR_GRACE_MS more: the world is
 * marked stuck (its streams and memory kept). The driver must have a
 * query function (ops->query). */
#define RT_GPUR_GRACE_MS 1000
int rt_gpur_stream_wait(RtGpuWorld *w, void *dev, void *stream, RtRank *r,
                        const char *what, int64_t tmo_ms);
/* The synchronous copies to c's device are done (the legacy default stream
 * drained: after the uploads, and after a staged collective, group
 * collective or exchange copied its result back), polled with the
 * collectives' deadline (rt_gpur_stream_wait) and counted as a wait
 * (rt_rank_in_wait: a peer's barrier gives it time, so its message is the
 * run's): "WHAT did not complete within T ms". Without a query function:
 * synchronized, unbounded. 0, or -1 with the rank's error set. */
int rt_gpur_dev_wait(RtGpuCtx *c, RtRank *r, const char *what);
/* gpu_copy.c: bytes between host memory and c's device (dst / src a
 * device address of c's rank) through c's pinned staging buffer in chunks,
 * each an asynchronous copy on c's stream waited for as rt_gpur_sync
 * waits ("WHAT did not complete within T ms"); without a staging buffer,
 * the synchronous copy (unbounded). 0, or -1 with the rank's error set. */
int rt_gpur_h2d(RtGpuCtx *c, RtRank *r, char *dst, const void *src,
                size_t bytes, const char *what);
int rt_gpur_d2h(RtGpuCtx *c, RtRank *r, void *dst, const char *src,
                size_t bytes, const char *what);
/* One poll of the 8-byte signal cell at device address `cell` for a host
 * wait (rt_gpur_wait): an asynchronous copy into c's pinned poll slot on a
 * stream of its own (made at the first poll; the rank's stream is not
 * waited for), queued unless one is still in flight, and one query. 0:
 * *out is the cell's value; 1: the read is still in flight (ask again);
 * -1 with the rank's error set. Without a staging buffer (see
 * rt_gpur_h2d) the synchronous read, unbounded. rt_gpur_peek_end after
 * the wait gave up: a read still in flight gets RT_GPUR_GRACE_MS, then
 * the world is stuck (the slot and the stream are kept). */
int rt_gpur_peek(RtGpuCtx *c, RtRank *r, const char *cell, uint64_t *out);
void rt_gpur_peek_end(RtGpuCtx *c, RtRank *r);
/* Release c's staging buffer, poll slot and poll stream (its streams
 * drained). */
void rt_gpur_stage_free(RtGpuCtx *c);
/* The pause between two rounds of a polled wait (the stream waits above,
 * NCCL's asynchronous state): 20 us for the first 2500 rounds (~50 ms: a
 * short kernel's end is seen that late at most), then 100 us. */
void rt_gpur_poll_pause(long round);
int rt_gpur_fail(RtRank *r, const char *msg);
/* The rank's NCCL communicator over the world, made at the first call
 * (collective: rank 0's unique id goes over the host world). */
int rt_gpur_comm(RtGpuCtx *c, RtRank *r);

/* gpu_nccl_wait.c: every NCCL call, waited for with the collectives'
 * deadline (BLKC_COLL_TIMEOUT_MS; 4 x BLKC_WAIT_TIMEOUT_MS when only that
 * is set). Nonblocking communicators (k->nb: the library has
 * ncclCommInitRankConfig) poll ncclCommGetAsyncError and the stream;
 * blocking ones (an older NCCL) run the call on a helper thread that the
 * rank waits for, then poll the stream. Past the deadline the rank fails
 * with "WHAT did not complete within T ms (...); the NCCL communicator is
 * aborted" (init: "abandoned") and the world's communicator is aborted at
 * once (ncclCommAbort; *comm = NULL; a group's when it is freed). A
 * helper still inside NCCL after that is left behind (never joined) and
 * marks the world stuck. Each returns 0 or -1 with the rank's error set.
 * Init: c->k->comm and c->k->nb from rank 0's unique id. */
int rt_gpur_nccl_init(RtGpuCtx *c, RtRank *r, const void *id);
/* ncclCommSplit of the world's communicator into *out; -2 (no error set)
 * when the library lacks it. */
int rt_gpur_nccl_split(RtGpuCtx *c, RtRank *r, int color, int key, void **out);
/* A collective on *comm (the world's or a group's), named `what`. */
int rt_gpur_nccl_coll(RtGpuCtx *c, RtRank *r, void **comm, const RtNcclColl *x,
                      const char *what);
/* An exchange block's grouped sends and receives on the world's. */
int rt_gpur_nccl_exchange(RtGpuCtx *c, RtRank *r, const RtP2p *ops, int n);
/* ncclCommDestroy (abort_it: ncclCommAbort) of comm, bounded by the
 * deadline where it may block (a blocking communicator). */
void rt_gpur_nccl_release(RtGpuCtx *c, RtRank *r, void *comm, int abort_it);

#endif
