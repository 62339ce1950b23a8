/* gpu.h — the GPU runtime: `cuda:N` and `hip:N` devices, with the vendor
 * driver loaded by dlopen (libcuda.so.1 / libamdhip64.so), so that nothing
 * here links a GPU library and a machine without one gets a clean error.
 *
 *   gpu_cuda.c    the CUDA driver API table (primary context, cubin/PTX
 *                 modules, memory, streams, events, cuLaunchKernel)
 *   gpu_hip.c     the HIP table (hipModuleLoadData, hipModuleLaunchKernel,
 *                 streams, peer access and IPC handles for GPU ranks)
 *   gpu_launch.c  devices by name, modules (emit with the cuda/hip backend,
 *                 compile with NVRTC/hiprtc, load), argument checks and
 *                 packing (the kernel ABI of backends/gpu/gpu_emit.h), the
 *                 grid (ir_eval_grid), launch, and the CLI's host-buffer run
 *
 * Errors: a blkc_status plus a one-line message in (err, errlen); nothing
 * here prints, exits or aborts. A missing driver library or no device is
 * BLKC_ERR_UNSUPPORTED ("CUDA driver not found (libcuda.so.1)", "no CUDA
 * device"); everything else that fails on the device is BLKC_ERR_RUNTIME.
 * Cross-file prefix: rt_gpu_ (functions), RtGpu (types). */
#ifndef BLKC_GPU_H
#define BLKC_GPU_H

#include "../backends/backend.h"
#include "../backends/gpu/gpu_emit.h"
#include "../include/blkc/blkc.h"

typedef struct RtGpu RtGpu;             /* one device (a context) */
typedef struct RtGpuModule RtGpuModule; /* a module loaded on a device */

/* ------------------------------------------------------------ devices */
/* "cuda", "cuda:N", "hip", "hip:N" -> target and N; "cuda-emu", "hip-emu"
 * -> target and RT_GPU_EMU (the emulated devices of gpu_emu.c); -1 if not
 * a GPU name ("'NAME' is not a GPU device" in err), -2 for a malformed N
 * (its message in err): both BLKC_ERR_USAGE to the callers. */
#define RT_GPU_EMU (-1)
int rt_gpu_parse_device(const char *name, blkc_target *t, int *id, char *err,
                        size_t errlen);
/* Open device N of target t (BLKC_TARGET_CUDA / BLKC_TARGET_HIP). Opening
 * the same device again gives a new handle on the same (primary) context.
 * id RT_GPU_EMU opens the emulated device of t (cuda-emu / hip-emu): the
 * CUDA C / HIP C of a module compiled by the host C++ compiler, tensors in
 * host memory (kDLCPU), BLKC_ERR_UNSUPPORTED without a C++ compiler. */
blkc_status rt_gpu_open(blkc_target t, int id, RtGpu **out, char *err,
                        size_t errlen);
void rt_gpu_close(RtGpu *g);
blkc_target rt_gpu_target(const RtGpu *g);
int rt_gpu_id(const RtGpu *g);
const char *rt_gpu_arch(const RtGpu *g); /* "sm_90", "gfx90a" */
const char *rt_gpu_name(const RtGpu *g); /* the device's marketing name */
int rt_gpu_dl_type(const RtGpu *g);      /* kDLCUDA / kDLROCM */

/* ------------------------------------------------------------ memory
 * Device addresses are uint64_t. Copies are synchronous. */
blkc_status rt_gpu_alloc(RtGpu *g, size_t bytes, uint64_t *dptr, char *err,
                         size_t errlen);
void rt_gpu_free(RtGpu *g, uint64_t dptr);
blkc_status rt_gpu_upload(RtGpu *g, uint64_t dst, const void *src,
                          size_t bytes, char *err, size_t errlen);
blkc_status rt_gpu_download(RtGpu *g, void *dst, uint64_t src, size_t bytes,
                            char *err, size_t errlen);

/* ------------------------------------------------------------ modules */
/* Emit every kernel of m for the device's arch (CUDA: cubin for sm_XY,
 * PTX for compute_XY if NVRTC cannot make a cubin; HIP: a code object for
 * the device's gfx arch) and load it. m must outlive the module. */
blkc_status rt_gpu_module_load(RtGpu *g, const IrModule *m,
                               RtGpuModule **out, char *err, size_t errlen);
void rt_gpu_module_free(RtGpuModule *gm);

/* Specialization. A launch whose tensor arguments have IR_ASSUME_* facts
 * (rt_signature of runtime/bind.c, on the device addresses: 16-byte
 * aligned data, unit inner stride, extents and strides divisible by 16)
 * runs a variant of the kernel compiled for exactly those facts (vector
 * loads/stores, cp.async pipelining: backends/gpu/gpu_mem.c). A variant
 * is emitted and loaded the first time its signature is seen and kept
 * with the module, at most RT_GPU_MAX_VARIANTS per kernel; once the table
 * is full, or when a variant fails to compile (not retried), the launch
 * runs the most specialized existing variant that fits, else the generic
 * kernel, and reports why in err while still returning BLKC_OK (a note;
 * err is "" after a launch with nothing to report). Arguments with no
 * facts run the generic kernel. BLKC_SPECIALIZE=0 turns variants off.
 * Picking an existing variant takes no lock and allocates nothing. */
#define RT_GPU_MAX_VARIANTS 16

/* Tensor maps (TMA kernels of sm_90a: BkGpuKernelInfo.tma). A launch
 * needs one 128-byte map per TMA load, which depends on the bound tensor
 * (address, shape and strides; rank 2..5), its dtype and the load's box and
 * swizzle.
 * Each module keeps the last RT_GPU_TMAP_CACHE maps its launches encoded
 * (least recently used replaced; a failed encoding is not kept), so
 * launches with the same tensors encode nothing; a new address or shape
 * encodes again. rt_gpu_tmap_counts: the maps encoded by the driver and
 * those taken from a cache, in this process (`blkc run --stats`). */
#define RT_GPU_TMAP_CACHE 16
void rt_gpu_tmap_counts(long long *encoded, long long *cached);
/* The last launch of a persistent kernel (BkGpuKernelInfo.persist) in this
 * process: its blocks and programs (tiles); 0, 0 when there was none. */
void rt_gpu_persist_last(long long *blocks, long long *tiles);

/* Check args against kernel f of the module (tensors in this device's
 * memory: kDLCUDA/kDLCUDAManaged or kDLROCM with this device id), bind the
 * symbolic sizes, evaluate the grid (or take opts->grid), pack the kernel
 * ABI and launch on opts->stream (NULL: the default stream), specialized
 * as above. A launch on
 * the default stream is synchronised and a failed wait reported (naming
 * the signal and cell); a launch on a caller's stream is asynchronous.
 * The synchronised wait has the deadline of a lone kernel where
 * BLKC_COLL_TIMEOUT_MS or BLKC_WAIT_TIMEOUT_MS is set (rt_set_deadline_ms,
 * read at each launch; past it "kernel K did not complete within T ms
 * (...)" and the device is busy: rt_gpu_wait), else none. The read of the
 * failure record after it (a kernel with rank builtins) is staged with
 * that deadline on a stream of the module's own where one is set
 * (rt_gpu_copy_timed), else a synchronous copy.
 * grid_out (may be NULL) receives the grid. */
blkc_status rt_gpu_launch(RtGpuModule *gm, const IrFunc *f,
                          const blkc_arg *args, int nargs,
                          const blkc_launch_options *opts,
                          int64_t grid_out[3], char *err, size_t errlen);

/* rt_gpu_launch with the wait chosen (gpu_run.c): sync waits for the
 * kernel with a deadline of tmo_ms (-1: none; past it the device is left
 * busy, never freed or closed), else the launch is left queued. */
blkc_status rt_gpu_launch_timed(RtGpuModule *gm, const IrFunc *f,
                                const blkc_arg *args, int nargs,
                                const blkc_launch_options *opts, bool sync,
                                int64_t tmo_ms, int64_t grid_out[3], char *err,
                                size_t errlen);

/* Wait for what stream (NULL: the default stream) holds: synchronized,
 * or with a deadline of tmo_ms (>= 0, and the driver has a query
 * function) polled. Past it g is busy (rt_gpu_busy: nothing is freed,
 * unloaded or closed on it any more, the driver might still use it) and
 * err says "WHAT did not complete within T ms (the deadline that
 * BLKC_COLL_TIMEOUT_MS or BLKC_WAIT_TIMEOUT_MS sets)". 0 or -1. */
int rt_gpu_wait(RtGpu *g, void *stream, const char *what, int64_t tmo_ms,
                char *err, size_t errlen);
bool rt_gpu_busy(const RtGpu *g);

/* The wait for what the default stream holds (launches of f left queued
 * by rt_gpu_launch_timed), what naming it in a timeout's message, then
 * f's failure record when it has a rank context. */
blkc_status rt_gpu_finish(RtGpuModule *gm, const IrFunc *f, const char *what,
                          int64_t tmo_ms, char *err, size_t errlen);

/* One launch of kernel f for a rank of a GPU world (gpu_ranks.c): like
 * rt_gpu_launch on opts->stream, with the rank context rc (rank, world,
 * heap table, the rank's own failure record; the timeout is filled in
 * here), specialized like rt_gpu_launch (a note about a variant is not
 * reported), then waits for the kernel and reports a failed wait of the
 * kernel's. The caller's wait(cx, fail, n) waits for the stream and, when
 * fail is not NULL, reads the failure record's n bytes (rc->fail) into
 * fail, each with the caller's deadline; 0 or -1 (its error is the
 * caller's, err says only "the kernel did not end"). */
blkc_status rt_gpu_launch_rank(RtGpuModule *gm, const IrFunc *f,
                               const blkc_arg *args, int nargs,
                               const blkc_launch_options *opts,
                               const BkGpuRankCtx *rc,
                               int (*wait)(void *cx, void *fail, size_t n),
                               void *cx, char *err, size_t errlen);

/* ------------------------------------------------------------ CLI
 * Run kernel fi of m on `device` ("cuda:0"...) with host arguments
 * (tensors kDLCPU, C-contiguous): copy the tensors to the device, launch
 * (grid override when grid has a non-zero entry), copy every tensor back
 * into its host buffer, and time `bench` more launches with device events
 * (bench_ms[i], may be NULL when bench is 0). first_ms is the first
 * launch's wall time including synchronisation; grid_out the grid. The
 * launches are specialized like rt_gpu_launch's: on BLKC_OK, err holds a
 * note (a variant that could not be used) or "". */
blkc_status rt_gpu_run_host(const char *device, const IrModule *m, int fi,
                            const blkc_arg *args, int nargs,
                            const int64_t grid[3], int bench,
                            double *bench_ms, double *first_ms,
                            int64_t grid_out[3], char *err, size_t errlen);

/* ------------------------------------------------------------ drivers
 * What gpu_launch.c needs from a vendor driver (gpu_cuda.c, gpu_hip.c).
 * Every int function returns 0, or -1 with err set. */
/* What a driver reports about an opened device. */
typedef struct RtGpuDevInfo {
    char arch[32];             /* "sm_90", "gfx90a" */
    char name[256];            /* marketing name */
    long long max_smem;        /* dynamic shared memory per block (bytes) */
    int64_t ticks_per_ms;      /* wait-timeout clock of the generated code */
    int sms;                   /* multiprocessors: the blocks of a persistent
                                  kernel's launch (0: unknown, one per
                                  program); cuda-emu: $BLKC_EMU_SMS, 4 */
} RtGpuDevInfo;

typedef struct RtGpuOps {
    const char *vendor;        /* "CUDA" / "HIP" */
    int dl_type;               /* kDLCUDA / kDLROCM */
    /* load the library, init, open device id; returns -2 (with err) when
     * the library is missing or there is no such device */
    int (*open)(int id, void **dev, RtGpuDevInfo *info, char *err, size_t errlen);
    void (*close)(void *dev);
    int (*alloc)(void *dev, size_t bytes, uint64_t *dptr, char *err, size_t errlen);
    void (*free)(void *dev, uint64_t dptr);
    int (*h2d)(void *dev, uint64_t dst, const void *src, size_t n, char *err, size_t errlen);
    int (*d2h)(void *dev, void *dst, uint64_t src, size_t n, char *err, size_t errlen);
    int (*zero)(void *dev, uint64_t dst, size_t n, void *stream, char *err, size_t errlen);
    int (*load)(void *dev, const void *image, size_t n, void **mod, char *err, size_t errlen);
    void (*unload)(void *dev, void *mod);
    /* the kernel `name`; raises its dynamic shared memory limit to smem */
    int (*function)(void *dev, void *mod, const char *name, long long smem,
                    void **fn, char *err, size_t errlen);
    /* params: a pointer to each argument inside the packed buffer buf of
     * `size` bytes (natural alignment, the kernel's parameter layout) */
    int (*launch)(void *dev, void *fn, const int64_t grid[3], int threads,
                  long long smem, void *stream, void **params, void *buf,
                  size_t size, char *err, size_t errlen);
    int (*sync)(void *dev, void *stream, char *err, size_t errlen);
    /* events for timing */
    int (*event_new)(void *dev, void **ev, char *err, size_t errlen);
    void (*event_free)(void *dev, void *ev);
    int (*event_record)(void *dev, void *ev, void *stream, char *err, size_t errlen);
    int (*event_ms)(void *dev, void *a, void *b, float *ms, char *err, size_t errlen);
    /* GPU ranks (gpu_ranks.c); NULL where a driver lacks them */
    /* devices present (after a successful open) */
    int (*count)(int *n, char *err, size_t errlen);
    /* a stream that does not synchronise with the legacy default stream */
    int (*stream_new)(void *dev, void **stream, char *err, size_t errlen);
    void (*stream_free)(void *dev, void *stream);
    /* asynchronous copy of n bytes between device addresses (unified
     * addressing: either may be on a peer device) */
    int (*copy_async)(void *dev, uint64_t dst, uint64_t src, size_t n,
                      void *stream, char *err, size_t errlen);
    /* let dev's context access peer's memory (already enabled is fine) */
    int (*peer_enable)(void *dev, void *peer, char *err, size_t errlen);
    /* IPC (GPU ranks under mpirun): the RT_GPU_IPC_BYTES handle of an
     * allocation, the allocation of another process's handle mapped here,
     * and its release */
    int (*ipc_get)(void *dev, uint64_t dptr, void *handle, char *err, size_t errlen);
    int (*ipc_open)(void *dev, const void *handle, uint64_t *dptr, char *err,
                    size_t errlen);
    void (*ipc_close)(void *dev, uint64_t dptr);
    /* mapped pinned host memory (GPU ranks' abort flag): bytes of zeroed
     * host memory that every device can read while a kernel runs
     * (CUDA: cuMemHostAlloc PORTABLE | DEVICEMAP; HIP: hipHostMalloc
     * Mapped | Portable), its address for dev's kernels, and its release.
     * NULL where the driver lacks them (then *host = NULL) */
    int (*host_map)(void *dev, size_t bytes, void **host, char *err, size_t errlen);
    int (*host_dptr)(void *dev, void *host, uint64_t *dptr, char *err, size_t errlen);
    void (*host_free)(void *dev, void *host);
    /* whether the stream's work is done: 0 done, 1 still running, -1 an
     * error (or the driver lacks cuStreamQuery / hipStreamQuery) */
    int (*query)(void *dev, void *stream, char *err, size_t errlen);
    /* a CUtensorMap (the 128 bytes at map, 64-byte aligned) of a tensor of
     * rank 1..5 (dtype 6 f16, 9 bf16, 0 one-byte fp8, 7 f32:
     * CUtensorMapDataType) at addr: dims innermost first, strides[i] the
     * bytes between elements of dim i + 1 (rank - 1 of them), boxes of
     * box[0] x .. x box[rank - 1] elements, swizzle 1/2/3 (32B/64B/128B),
     * zero fill: cuTensorMapEncodeTiled (cuda-emu: blk_emu_tmap.h). NULL
     * where there is none (HIP). */
    int (*tmap_encode)(void *dev, void *map, int dtype, int rank, uint64_t addr,
                       const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
                       int swizzle, char *err, size_t errlen);
    /* copies between host memory (pinned: host_map's, for the copy to be
     * asynchronous) and the device, queued on stream (cuMemcpyHtoDAsync /
     * DtoHAsync, hipMemcpyHtoDAsync / DtoHAsync; where the driver lacks
     * them, the synchronous copy). NULL where there are none (emulated
     * devices): then h2d / d2h. */
    int (*h2d_async)(void *dev, uint64_t dst, const void *src, size_t n, void *stream,
                     char *err, size_t errlen);
    int (*d2h_async)(void *dev, void *dst, uint64_t src, size_t n, void *stream,
                     char *err, size_t errlen);
} RtGpuOps;

#define RT_GPU_IPC_BYTES 64    /* CU_IPC_HANDLE_SIZE, HIP_IPC_HANDLE_SIZE */

const RtGpuOps *rt_gpu_cuda_ops(void); /* gpu_cuda.c */
/* An opened device's driver table and driver state (gpu_ranks.c). */
const RtGpuOps *rt_gpu_ops(const RtGpu *g);
void *rt_gpu_dev(const RtGpu *g);
const RtGpuOps *rt_gpu_hip_ops(void);  /* gpu_hip.c */
bool rt_gpu_is_emu(const RtGpu *g);

/* ------------------------------------------------------------ gpu_copy.c
 * Staged copies: bytes between host memory and a device through a pinned
 * staging buffer (host_map) in chunks of RT_GPU_STAGE_MAX bytes at most,
 * each an asynchronous copy on a stream followed by a wait the caller
 * chooses, since a synchronous copy from pageable memory cannot be given
 * up on. Used by the lone runs (rt_gpu_copy_timed: gpu_run.c's uploads
 * and results, gpu_launch.c's read of a kernel's failure record) and by
 * GPU ranks (gpu_copy.c's rt_gpur_h2d / rt_gpur_d2h). A buffer is never
 * freed while its stage is in use, since freeing pinned memory may wait
 * for the whole device (a kernel there may wait for a peer): the first
 * is min(need rounded up to a power of two, RT_GPU_STAGE_MAX) bytes, one
 * outgrown is kept (old) and the next is RT_GPU_STAGE_MAX bytes, never
 * outgrown; all go with the stage (rt_gpu_stage_free, once its copies
 * were waited for). */
#define RT_GPU_STAGE_MAX ((size_t)4 << 20)
typedef struct RtGpuStage {
    char *buf;                 /* pinned staging buffer, or NULL */
    size_t bytes;              /* its size */
    char *old;                 /* the outgrown first buffer, or NULL */
    bool grown;                /* a larger one was tried: buf is final */
    void *own;                 /* rt_gpu_copy_timed's stream (made at its
                                  first staged copy), or NULL */
    bool none;                 /* none can be had: synchronous copies */
} RtGpuStage;
/* A staged copy's wait for stream, `what` naming the copy: 0, or -1 (err
 * set, or the caller's failure reported otherwise). */
typedef int (*RtGpuStageWait)(void *cx, void *stream, const char *what,
                              char *err, size_t errlen);
/* bytes between host memory and device address dptr of dev (up: to the
 * device) through s in chunks, each an asynchronous copy on stream waited
 * for by wait(cx, ...); where s has no buffer and cannot get one (the
 * driver lacks mapped host memory, queries or asynchronous copies), the
 * synchronous copy, unbounded. 0; -1: a driver error in err; -2: wait
 * failed. */
int rt_gpu_stage_copy(const RtGpuOps *ops, void *dev, RtGpuStage *s,
                      void *stream, bool up, uint64_t dptr, void *host,
                      size_t bytes, const char *what, RtGpuStageWait wait,
                      void *cx, char *err, size_t errlen);
/* The lone runs' copy: with a deadline (tmo_ms >= 0) staged on s's own
 * stream, each chunk waited for by rt_gpu_wait ("WHAT did not complete
 * within T ms (the deadline that ...)", g then busy); without one, or
 * where the driver lacks streams, the synchronous copy. */
blkc_status rt_gpu_copy_timed(RtGpu *g, RtGpuStage *s, bool up, uint64_t dptr,
                              void *host, size_t bytes, const char *what,
                              int64_t tmo_ms, char *err, size_t errlen);
/* Release s's buffers and own stream (its copies waited for). */
void rt_gpu_stage_free(const RtGpuOps *ops, void *dev, RtGpuStage *s);

/* ------------------------------------------------------------ gpu_emu.c
 * The emulated devices' driver table; the counts of the most recent
 * emulated launch in this process (blk_emu.h's BlkEmuStats: same layout;
 * warp-level instructions). */
typedef struct RtGpuEmuStats {
    long long mma, mma_flops, ldmatrix;
    long long smem_wavefronts, smem_requests;
    long long gmem_sectors, gmem_requests;
    long long barriers, shuffles, cp_async;
    long long blocks, threads;
    long long gmem_unique;
    long long grid_blocks, gmem_extent; /* blocks < grid_blocks: a sample ran */
    long long wgmma, wgmma_flops;       /* of mma, mma_flops: wgmma.mma_async's */
    long long tma;                      /* cp.async.bulk.tensor loads (boxes) */
} RtGpuEmuStats;
const RtGpuOps *rt_gpu_emu_ops(blkc_target t);
void rt_gpu_emu_last_stats(RtGpuEmuStats *out);

/* ------------------------------------------------------------ nccl.c
 * NCCL (cuda) / RCCL (hip) through dlopen. Functions returning int give
 * 0, -1 (a call failed; message in err) or -2 (the library or one of its
 * entry points is missing: "NCCL not found (libnccl.so.2): ..."). Device
 * addresses are uint64_t; streams are the driver's (CUstream). */
#define RT_NCCL_ID_BYTES 128   /* NCCL_UNIQUE_ID_BYTES */

int rt_nccl_load(blkc_target t, char *err, size_t errlen);
/* The entry points of the table (NULL-terminated), and one of them by
 * name once loaded (for tests). */
const char *const *rt_nccl_symbol_names(void);
void *rt_nccl_symbol(blkc_target t, const char *name);
int rt_nccl_version(blkc_target t, int *version, char *err, size_t errlen);
int rt_nccl_unique_id(blkc_target t, void *id, char *err, size_t errlen);
/* ncclDataType_t of a DslDtype / ncclRedOp_t of an RT_RED_* op, or -1;
 * rt_nccl_supports: whether NCCL computes that reduction as ranks.h
 * defines it (op -1: a collective that does not reduce). */
int rt_nccl_dtype(int dtype);
int rt_nccl_op(int op);
int rt_nccl_supports(int dtype, int op);
/* The communicator of rank `rank`. Where the loaded NCCL has
 * ncclCommInitRankConfig (NCCL >= 2.14) it is nonblocking (config.blocking
 * = 0; *nonblocking = 1): its init, and every call on it, may still be in
 * progress on return, and the caller polls rt_nccl_pending until it is
 * done (or aborts it at its deadline). Otherwise ncclCommInitRank, which
 * blocks until every rank joined (*nonblocking = 0). */
int rt_nccl_comm_init(blkc_target t, int nranks, const void *id, int rank,
                      void **comm, int *nonblocking, char *err, size_t errlen);
/* Whether rt_nccl_comm_init makes nonblocking communicators (the loaded
 * library has ncclCommInitRankConfig); 0 when it does not load. */
int rt_nccl_nonblocking(blkc_target t);
/* ncclCommGetAsyncError of a nonblocking communicator: 0 with *pending 1
 * while its last call is in progress, 0 with *pending 0 when it is done,
 * -1 with the message when it failed. */
int rt_nccl_pending(blkc_target t, void *comm, int *pending, char *err,
                    size_t errlen);
void rt_nccl_comm_destroy(blkc_target t, void *comm, int abort_it);
/* ncclCommSplit(comm, color, key) into *out (-2: this NCCL lacks it); the
 * new communicator inherits comm's blocking mode (poll it likewise). */
int rt_nccl_comm_split(blkc_target t, void *comm, int color, int key,
                       void **out, char *err, size_t errlen);
/* The communicator's asynchronous error, if any. */
int rt_nccl_check(blkc_target t, void *comm, char *err, size_t errlen);

/* One collective (kind: RtRankCollKind of ranks.h). */
typedef struct RtNcclColl {
    int kind;                  /* RT_COLL_ALL_REDUCE, ... */
    int dtype, op, root;       /* DslDtype, RT_RED_* or -1, the root of
                                  broadcast/reduce/gather/scatter */
    int nranks;                /* world size */
    uint64_t dst, src;         /* device addresses */
    size_t count;              /* all_reduce/broadcast: elements; all_gather:
                                  elements per rank */
    const size_t *counts;      /* reduce_scatter: per rank's share;
                                  all_to_all: send counts */
    const size_t *counts2;     /* all_to_all: receive counts */
    int rank;                  /* this rank (gather/scatter: am I the root) */
} RtNcclColl;
int rt_nccl_coll(blkc_target t, void *comm, void *stream, const RtNcclColl *c,
                 char *err, size_t errlen);
/* The sends and receives of an exchange block (buffers: device addresses)
 * in one ncclGroupStart / ncclGroupEnd. */
struct RtP2p; /* ranks.h */
int rt_nccl_exchange(blkc_target t, void *comm, void *stream, const struct RtP2p *ops,
                     int n, char *err, size_t errlen);

#endif
