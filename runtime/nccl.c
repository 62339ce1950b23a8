/* nccl.c — NCCL (CUDA) and RCCL (HIP) loaded with dlopen: one table of the
 * entry points the GPU ranks use (gpu_ranks.c), the mapping of blkc dtypes
 * and reduction ops to NCCL's, and thin wrappers that turn an ncclResult_t
 * into a one-line message. Nothing links NCCL: a missing library or symbol
 * is reported as "NCCL not found (libnccl.so.2): ..." or "NCCL
 * (libnccl.so.2) lacks ncclX". RCCL has the same C API (and names), so one
 * table type serves both; each target has its own instance.
 *
 * Communicators are nonblocking where the library has
 * ncclCommInitRankConfig (config.blocking = 0): calls may answer
 * ncclInProgress, and gpu_coll.c polls ncclCommGetAsyncError
 * (rt_nccl_pending) against a deadline instead of blocking for ever.
 * Without it (an older NCCL) the calls block: gpu_nccl_wait.c runs them
 * on helper threads that the rank waits for with the deadline.
 *
 * BLKC_NCCL_LIB / BLKC_RCCL_LIB name the library to load instead of the
 * default search (libnccl.so.2, then /usr/local/cuda/lib64/libnccl.so.2;
 * librccl.so, then /opt/rocm/lib/librccl.so). */
#include "gpu.h"
#include "ranks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef void *ncclComm_t;
typedef struct { char internal[RT_NCCL_ID_BYTES]; } ncclUniqueId;

enum { NCCL_SUCCESS = 0, NCCL_IN_PROGRESS = 7 };

/* The entry points, in the order of nccl_names. */
typedef struct NcclTable {
    ncclResult_t (*get_version)(int *);
    ncclResult_t (*get_unique_id)(ncclUniqueId *);
    ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*comm_destroy)(ncclComm_t);
    ncclResult_t (*comm_abort)(ncclComm_t);
    const char *(*get_error_string)(ncclResult_t);
    ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t *);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, int, int,
                               ncclComm_t, void *);
    ncclResult_t (*all_gather)(const void *, void *, size_t, int, ncclComm_t,
                               void *);
    ncclResult_t (*reduce_scatter)(const void *, void *, size_t, int, int,
                                   ncclComm_t, void *);
    ncclResult_t (*reduce)(const void *, void *, size_t, int, int, int,
                           ncclComm_t, void *);
    ncclResult_t (*broadcast)(const void *, void *, size_t, int, int,
                              ncclComm_t, void *);
    ncclResult_t (*send)(const void *, size_t, int, int, ncclComm_t, void *);
    ncclResult_t (*recv)(void *, size_t, int, int, ncclComm_t, void *);
} NcclTable;

static const char *const nccl_names[] = {
    "ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank",
    "ncclCommDestroy", "ncclCommAbort", "ncclGetErrorString",
    "ncclCommGetAsyncError", "ncclGroupStart", "ncclGroupEnd",
    "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclReduce",
    "ncclBroadcast", "ncclSend", "ncclRecv", NULL,
};

typedef struct NcclLib {
    void *lib;
    char why[512];       /* why loading failed ("" when loaded) */
    char path[256];      /* the library that loaded */
    NcclTable t;
    /* optional (NCCL >= 2.18): NULL when missing, groups are staged */
    ncclResult_t (*comm_split)(ncclComm_t, int, int, ncclComm_t *, void *);
    /* optional (NCCL >= 2.14): NULL when missing, communicators block */
    ncclResult_t (*init_config)(ncclComm_t *, int, ncclUniqueId, int, void *);
    int version;         /* ncclGetVersion */
    pthread_once_t once;
} NcclLib;

static NcclLib libs[2] = {{.once = PTHREAD_ONCE_INIT},
                          {.once = PTHREAD_ONCE_INIT}};

static void nccl_load_into(NcclLib *L, bool rccl)
{
    const char *vendor = rccl ? "RCCL" : "NCCL";
    const char *env = getenv(rccl ? "BLKC_RCCL_LIB" : "BLKC_NCCL_LIB");
    const char *defaults[] = {
        rccl ? "librccl.so" : "libnccl.so.2",
        rccl ? "/opt/rocm/lib/librccl.so" : "/usr/local/cuda/lib64/libnccl.so.2",
        NULL,
    };
    const char *one[] = {env, NULL};
    const char *const *names = env && *env ? one : defaults;
    char last[256] = "";
    for (int i = 0; names[i] && !L->lib; i++) {
        L->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (L->lib) {
            snprintf(L->path, sizeof L->path, "%s", names[i]);
        } else {
            const char *e = dlerror();
            snprintf(last, sizeof last, "%s", e ? e : "dlopen failed");
        }
    }
    if (!L->lib) {
        snprintf(L->why, sizeof L->why, "%s not found (%s): %s", vendor,
                 names[0], last);
        return;
    }
    void **slot = (void **)&L->t;
    for (int i = 0; nccl_names[i]; i++) {
        const char *rn = nccl_names[i]; /* RCCL exports the same names */
        void *p = dlsym(L->lib, rn);
        if (!p) {
            snprintf(L->why, sizeof L->why, "%s (%s) lacks %s (not an "
                     "NCCL/RCCL library, or older than NCCL 2.7)", vendor,
                     L->path, rn);
            dlclose(L->lib);
            L->lib = NULL;
            return;
        }
        memcpy(&slot[i], &p, sizeof p);
    }
    void *sp = dlsym(L->lib, "ncclCommSplit");
    memcpy(&L->comm_split, &sp, sizeof sp);
    sp = dlsym(L->lib, "ncclCommInitRankConfig");
    memcpy(&L->init_config, &sp, sizeof sp);
    if (L->t.get_version(&L->version) != NCCL_SUCCESS)
        L->version = 0;
}

static void load_nccl(void) { nccl_load_into(&libs[0], false); }
static void load_rccl(void) { nccl_load_into(&libs[1], true); }

static NcclLib *lib_of(blkc_target t, char *err, size_t errlen)
{
    bool hip = t == BLKC_TARGET_HIP;
    NcclLib *L = &libs[hip];
    pthread_once(&L->once, hip ? load_rccl : load_nccl);
    if (!L->lib) {
        snprintf(err, errlen, "%s", L->why);
        return NULL;
    }
    return L;
}

static int nfail(NcclLib *L, ncclResult_t r, const char *what, char *err,
                 size_t errlen)
{
    const char *s = L->t.get_error_string ? L->t.get_error_string(r) : NULL;
    snprintf(err, errlen, "%s failed: %s (%d)", what, s ? s : "unknown error",
             r);
    return -1;
}

/* ncclInProgress is a nonblocking communicator's "queued" */
#define NOK(r) ((r) == NCCL_SUCCESS || (r) == NCCL_IN_PROGRESS)
#define NCK(call, what)                                                      \
    do {                                                                     \
        ncclResult_t r_ = (call);                                            \
        if (r_ != NCCL_SUCCESS && r_ != NCCL_IN_PROGRESS)                    \
            return nfail(L, r_, what, err, errlen);                          \
    } while (0)

#define LIB(t)                                                               \
    NcclLib *L = lib_of(t, err, errlen);                                     \
    if (!L)                                                                  \
        return -2

/* ------------------------------------------------------------ loading */

int rt_nccl_load(blkc_target t, char *err, size_t errlen)
{
    LIB(t);
    (void)L;
    return 0;
}

const char *const *rt_nccl_symbol_names(void) { return nccl_names; }

void *rt_nccl_symbol(blkc_target t, const char *name)
{
    char err[8];
    NcclLib *L = lib_of(t, err, sizeof err);
    if (!L)
        return NULL;
    for (int i = 0; nccl_names[i]; i++)
        if (!strcmp(nccl_names[i], name)) {
            void *p;
            memcpy(&p, &((void **)&L->t)[i], sizeof p);
            return p;
        }
    return NULL;
}

int rt_nccl_version(blkc_target t, int *version, char *err, size_t errlen)
{
    LIB(t);
    NCK(L->t.get_version(version), "ncclGetVersion");
    return 0;
}

int rt_nccl_unique_id(blkc_target t, void *id, char *err, size_t errlen)
{
    LIB(t);
    ncclUniqueId u;
    NCK(L->t.get_unique_id(&u), "ncclGetUniqueId");
    memcpy(id, &u, sizeof u);
    return 0;
}

/* ------------------------------------------------------------ mapping */

int rt_nccl_dtype(int dtype)
{
    switch (dtype) {
    case DT_I8: case DT_BOOL: return 0;   /* ncclInt8 (bool: see below) */
    case DT_U8: return 1;                 /* ncclUint8 */
    case DT_I32: return 2;                /* ncclInt32 */
    case DT_U32: return 3;                /* ncclUint32 */
    case DT_I64: return 4;                /* ncclInt64 */
    case DT_U64: return 5;                /* ncclUint64 */
    case DT_F16: return 6;                /* ncclFloat16 */
    case DT_F32: return 7;                /* ncclFloat32 */
    case DT_F64: return 8;                /* ncclFloat64 */
    case DT_BF16: return 9;               /* ncclBfloat16 */
    case DT_F8E4M3: return 10;            /* ncclFloat8e4m3 (NCCL >= 2.24) */
    case DT_F8E5M2: return 11;            /* ncclFloat8e5m2 */
    default: return -1;                   /* i16, u16: no NCCL type */
    }
}

int rt_nccl_op(int op)
{
    switch (op) {
    case RT_RED_SUM: return 0;            /* ncclSum */
    case RT_RED_MAX: return 2;            /* ncclMax */
    case RT_RED_MIN: return 3;            /* ncclMin */
    case RT_RED_PROD: return 1;           /* ncclProd */
    case RT_RED_AVG: return 4;            /* ncclAvg (NCCL >= 2.10) */
    default: return -1;
    }
}

int rt_nccl_supports(int dtype, int op)
{
    if (rt_nccl_dtype(dtype) < 0)
        return 0;
    /* bool is 0/1 bytes: max and min are or/and; sum is not (1 + 1 = 2) */
    if (dtype == DT_BOOL && op == RT_RED_SUM)
        return 0;
    /* reductions of f16/bf16/f8 would round at every step in NCCL; blkc
     * promises one rounding at the end (ranks.h), so those are staged */
    if (dtype == DT_BOOL && op == RT_RED_AVG)
        return 0;
    if ((op == RT_RED_SUM || op == RT_RED_PROD || op == RT_RED_AVG) &&
        (dtype == DT_F16 || dtype == DT_BF16 || dtype == DT_F8E4M3 ||
         dtype == DT_F8E5M2))
        return 0;
    return 1;
}

/* ------------------------------------------------------------ comms */

/* ncclConfig_t as of NCCL 2.28 (nccl.h): size, magic and version let an
 * older or newer NCCL read the fields it knows; everything but blocking
 * is NCCL_CONFIG_UNDEF_INT / _PTR (its default) */
typedef struct NcclConfig {
    size_t size;
    unsigned magic, version;
    int blocking, cga_cluster_size, min_ctas, max_ctas;
    const char *net_name;
    int split_share, traffic_class;
    const char *comm_name;
    int collnet_enable, cta_policy, shrink_share, nvls_ctas,
        nchannels_per_net_peer, nvlink_centric_sched;
} NcclConfig;

int rt_nccl_comm_init(blkc_target t, int nranks, const void *id, int rank,
                      void **comm, int *nonblocking, char *err, size_t errlen)
{
    LIB(t);
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclComm_t c = NULL;
    *nonblocking = 0;
    if (L->init_config) {
        const int U = INT32_MIN;
        /* the version says which fields the struct has: at most 2.28's */
        unsigned ver = L->version > 22809 ? 22809u : (unsigned)L->version;
        NcclConfig cfg = {sizeof cfg, 0xcafebeef, ver, 0, U,
                          U, U, NULL, U, U, NULL, U, U, U, U, U, U};
        NCK(L->init_config(&c, nranks, u, rank, &cfg), "ncclCommInitRankConfig");
        *nonblocking = 1;
    } else {
        NCK(L->t.comm_init_rank(&c, nranks, u, rank), "ncclCommInitRank");
    }
    *comm = c;
    return 0;
}

int rt_nccl_nonblocking(blkc_target t)
{
    char err[8];
    NcclLib *L = lib_of(t, err, sizeof err);
    return L && L->init_config;
}

int rt_nccl_pending(blkc_target t, void *comm, int *pending, char *err,
                    size_t errlen)
{
    LIB(t);
    ncclResult_t a = NCCL_SUCCESS;
    *pending = 0;
    NCK(L->t.comm_get_async_error(comm, &a), "ncclCommGetAsyncError");
    if (a == NCCL_IN_PROGRESS)
        *pending = 1;
    else if (a != NCCL_SUCCESS)
        return nfail(L, a, "NCCL (asynchronous error)", err, errlen);
    return 0;
}

void rt_nccl_comm_destroy(blkc_target t, void *comm, int abort_it)
{
    char err[8];
    NcclLib *L = lib_of(t, err, sizeof err);
    if (!L || !comm)
        return;
    if (abort_it)
        L->t.comm_abort(comm);
    else
        L->t.comm_destroy(comm);
}

int rt_nccl_comm_split(blkc_target t, void *comm, int color, int key,
                       void **out, char *err, size_t errlen)
{
    LIB(t);
    if (!L->comm_split) {
        snprintf(err, errlen, "%s lacks ncclCommSplit (NCCL < 2.18)", L->path);
        return -2;
    }
    ncclComm_t c = NULL;
    NCK(L->comm_split(comm, color, key, &c, NULL), "ncclCommSplit");
    *out = c;
    return 0;
}

int rt_nccl_check(blkc_target t, void *comm, char *err, size_t errlen)
{
    LIB(t);
    ncclResult_t a = NCCL_SUCCESS;
    NCK(L->t.comm_get_async_error(comm, &a), "ncclCommGetAsyncError");
    if (a != NCCL_SUCCESS && a != NCCL_IN_PROGRESS)
        return nfail(L, a, "NCCL (asynchronous error)", err, errlen);
    return 0;
}

/* ------------------------------------------------------------ collectives */

static int dt_op(int dtype, int op, int *nd, int *no, char *err, size_t errlen)
{
    *nd = rt_nccl_dtype(dtype);
    *no = op >= 0 ? rt_nccl_op(op) : 0;
    if (*nd < 0 || *no < 0) {
        snprintf(err, errlen, "NCCL has no %s %s", dsl_dtype_name(dtype),
                 op >= 0 ? rt_rank_op_name(op) : "type");
        return -1;
    }
    return 0;
}

#define PTR(x) ((void *)(uintptr_t)(x))

int rt_nccl_coll(blkc_target t, void *comm, void *stream, const RtNcclColl *c,
                 char *err, size_t errlen)
{
    LIB(t);
    int nd, no;
    if (dt_op(c->dtype, c->op, &nd, &no, err, errlen))
        return -1;
    size_t esz = (size_t)dsl_dtype_bytes(c->dtype);
    switch (c->kind) {
    case RT_COLL_ALL_REDUCE:
        NCK(L->t.all_reduce(PTR(c->src), PTR(c->dst), c->count, nd, no, comm,
                            stream), "ncclAllReduce");
        return 0;
    case RT_COLL_ALL_GATHER:
        NCK(L->t.all_gather(PTR(c->src), PTR(c->dst), c->count, nd, comm,
                            stream), "ncclAllGather");
        return 0;
    case RT_COLL_BROADCAST:
        NCK(L->t.broadcast(PTR(c->src), PTR(c->dst), c->count, nd, c->root,
                           comm, stream), "ncclBroadcast");
        return 0;
    case RT_COLL_REDUCE_SCATTER: {
        /* counts[q] elements to rank q; equal counts: ncclReduceScatter,
         * else one ncclReduce per rank (root q) in a group */
        bool even = true;
        for (int q = 1; q < c->nranks; q++)
            even &= c->counts[q] == c->counts[0];
        if (even) {
            NCK(L->t.reduce_scatter(PTR(c->src), PTR(c->dst), c->counts[0],
                                    nd, no, comm, stream), "ncclReduceScatter");
            return 0;
        }
        NCK(L->t.group_start(), "ncclGroupStart");
        size_t off = 0;
        ncclResult_t r = NCCL_SUCCESS;
        for (int q = 0; q < c->nranks && NOK(r); q++) {
            r = L->t.reduce(PTR(c->src + off * esz), PTR(c->dst), c->counts[q],
                            nd, no, q, comm, stream);
            off += c->counts[q];
        }
        ncclResult_t r2 = L->t.group_end();
        NCK(r, "ncclReduce");
        NCK(r2, "ncclGroupEnd");
        return 0;
    }
    case RT_COLL_REDUCE:
        NCK(L->t.reduce(PTR(c->src), PTR(c->dst), c->count, nd, no, c->root,
                        comm, stream), "ncclReduce");
        return 0;
    case RT_COLL_GATHER: case RT_COLL_SCATTER: {
        /* NCCL has neither: grouped sends and receives through the root
         * (the root's own block included: NCCL allows sends to itself) */
        bool g = c->kind == RT_COLL_GATHER;
        size_t blk = c->count * esz;
        int me = c->rank;
        NCK(L->t.group_start(), "ncclGroupStart");
        ncclResult_t r = NCCL_SUCCESS;
        for (int q = 0; q < c->nranks && NOK(r) && me == c->root; q++)
            r = g ? L->t.recv(PTR(c->dst + (size_t)q * blk), c->count, nd, q, comm, stream)
                  : L->t.send(PTR(c->src + (size_t)q * blk), c->count, nd, q, comm, stream);
        if (NOK(r))
            r = g ? L->t.send(PTR(c->src), c->count, nd, c->root, comm, stream)
                  : L->t.recv(PTR(c->dst), c->count, nd, c->root, comm, stream);
        ncclResult_t r2 = L->t.group_end();
        NCK(r, g ? "ncclSend/ncclRecv (gather)" : "ncclSend/ncclRecv (scatter)");
        NCK(r2, "ncclGroupEnd");
        return 0;
    }
    case RT_COLL_ALL_TO_ALL: {
        NCK(L->t.group_start(), "ncclGroupStart");
        size_t so = 0, ro = 0;
        ncclResult_t r = NCCL_SUCCESS;
        for (int q = 0; q < c->nranks && NOK(r); q++) {
            if (c->counts[q])
                r = L->t.send(PTR(c->src + so * esz), c->counts[q], nd, q,
                              comm, stream);
            if (NOK(r) && c->counts2[q])
                r = L->t.recv(PTR(c->dst + ro * esz), c->counts2[q], nd, q,
                              comm, stream);
            so += c->counts[q];
            ro += c->counts2[q];
        }
        ncclResult_t r2 = L->t.group_end();
        NCK(r, "ncclSend/ncclRecv");
        NCK(r2, "ncclGroupEnd");
        return 0;
    }
    }
    snprintf(err, errlen, "NCCL: collective %s is not mapped",
             rt_rank_coll_name(c->kind));
    return -1;
}

int rt_nccl_exchange(blkc_target t, void *comm, void *stream, const RtP2p *ops,
                     int n, char *err, size_t errlen)
{
    LIB(t);
    NCK(L->t.group_start(), "ncclGroupStart");
    ncclResult_t r = NCCL_SUCCESS;
    for (int i = 0; i < n && NOK(r); i++) /* bytes as ncclUint8 */
        r = ops[i].send ? L->t.send(ops[i].buf, ops[i].bytes, 1, ops[i].peer, comm, stream)
                        : L->t.recv(ops[i].buf, ops[i].bytes, 1, ops[i].peer, comm, stream);
    ncclResult_t r2 = L->t.group_end();
    NCK(r, "ncclSend/ncclRecv (exchange)");
    NCK(r2, "ncclGroupEnd");
    return 0;
}
