/* ranks.h — the multi-rank runtime (CPU side): a world of N ranks, the
 * symmetric heap, u64 signal cells, collectives and fault propagation.
 *
 * A world of kind RT_WORLD_LOCAL runs N ranks as threads of one process
 * (rt_world_run starts one thread per rank, 64 MiB stacks). Every rank owns
 * an equal-size region of the symmetric heap; an offset returned by the
 * collective rt_sym_alloc is valid on every rank, and rt_sym_ptr turns it
 * into an ordinary pointer into any peer's region.
 *
 * Errors. Functions that take an RtRank report failure as -1 and record a
 * one-line message in that rank ("rank R: ..."); the first failure of any
 * rank marks the whole world failed, and from then on every pending or
 * future barrier, collective and signal wait of every rank gives up within
 * a few ms with "rank R: aborted because rank Q failed: ...". A rank whose
 * function returns (0 or not) while peers still wait for it in a barrier or
 * collective makes them fail with "rank Q left the run while rank R waited
 * in NAME". Signal waits time out after BLKC_WAIT_TIMEOUT_MS (default
 * 5000, read at each rt_world_run). Barriers and collectives have no
 * timeout of their own: a peer that never arrives either fails, leaves, or
 * is stuck in a wait that times out. rt_world_run returns the first
 * failure's message. Nothing here prints, exits or aborts.
 *
 * Threads. Barriers, collectives and rt_sym_* must be called from the
 * rank's own thread (the one running fn), in the same order on every rank
 * (checked: kind, dtype, op, root and size must agree, else all ranks fail
 * with "collective mismatch: ..."). Signal notify/wait and rt_rank_fail may
 * also be called from helper threads the rank starts (async blocks).
 *
 * MPI (rank_mpi.c, when built with MPI). A world of kind RT_WORLD_MPI,
 * made by rt_world_create_mpi in a process that mpirun started, holds one
 * rank per process (all on one node). The symmetric heap is an MPI
 * shared-memory window (MPI_Win_allocate_shared, contiguous, so
 * rt_sym_ptr and the heap bases stay ordinary pointers in every process);
 * the abort flag, the barrier counters and the published collective
 * descriptors live in a second shared window, so barriers, collectives and
 * signal waits work as for threads. Collective buffers that are not on the
 * symmetric heap are staged through free heap above the allocation top.
 * Differences: rt_world_run runs fn on this process's rank only; the first
 * failure of any rank prints "blkc: error: rank R: ..." on stderr and ends
 * every process with MPI_Abort (exit status 3) instead of returning.
 * Processes on several nodes (or BLKC_MPI_RMA=1) use MPI RMA windows
 * instead (rank_mpi.c, docs/device.md): peers' heap ranges are PROT_NONE,
 * and rt_sym_copy / rt_signal_* reach them by MPI_Get/Put and atomics.
 *
 * Cross-file prefix: rt_rank_ / rt_world_ / rt_sym_ / rt_signal_ and the
 * collectives (rt_barrier, rt_all_reduce, ...); types RtRank / RtWorld. */
#ifndef BLKC_RANKS_H
#define BLKC_RANKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct RtWorld RtWorld;
typedef struct RtRank RtRank;

enum { RT_WORLD_LOCAL = 0, RT_WORLD_MPI = 1 }; /* RtWorld kinds */
enum { RT_SIG_SET = 0, RT_SIG_ADD = 1 };       /* = IrSigOp */
enum { RT_WAIT_GE = 0, RT_WAIT_EQ = 1 };       /* = IrWaitCmp */
enum { RT_RED_SUM = 0, RT_RED_MAX = 1, RT_RED_MIN = 2, RT_RED_PROD = 3, RT_RED_AVG = 4 };

#define RT_RANK_MAX 1024        /* most ranks in one world */
#define RT_RANK_ERRLEN 512      /* bytes of a rank's error message */
#define RT_SYM_ALIGN 256        /* alignment of every symmetric allocation */
#define RT_RANK_STACK (64u << 20) /* stack size of every rank thread */

/* ------------------------------------------------------------ ranks.c */
/* A local world of nranks (1..RT_RANK_MAX) ranks, each with heap_bytes of
 * symmetric heap (rounded up to a page; mapped lazily, so a large heap costs
 * nothing until used). Returns 0, or -1 with err set. */
int rt_world_create(int nranks, size_t heap_bytes, RtWorld **out, char *err,
                    size_t errlen);
/* Release the world and its heap. NULL is a no-op. Not during a run. */
void rt_world_destroy(RtWorld *w);
/* Run fn(rank, arg) on every rank at once, one thread each, and wait for
 * all. Returns 0 when every rank returned 0 and none failed; otherwise -1
 * with the first failure's message ("rank 2: ...") in err. Each run starts
 * with an empty symmetric heap (allocations of a previous run are gone) and
 * no recorded errors. One run at a time per world. */
int rt_world_run(RtWorld *w, int (*fn)(RtRank *r, void *arg), void *arg,
                 char *err, size_t errlen);
/* Have release(ctx) called when w is freed: at rt_world_destroy, or, when
 * ranks were left behind, once the last of them has returned (never, for
 * one that computes for ever). How a run keeps what its ranks left behind
 * may still read (plan_run.c: the module). Not during a run. 0, or -1 out
 * of memory (nothing is kept). */
int rt_world_keep(RtWorld *w, void (*release)(void *), void *ctx);
int rt_world_size(const RtWorld *w);
int rt_world_kind(const RtWorld *w);
/* A world of nranks ranks, one per process of this mpirun job (nranks
 * must equal the number of processes; one node or several), each with
 * heap_bytes of symmetric heap (the largest over the processes). Every
 * process calls it. Returns 0, or -1 with err set (also without MPI:
 * "this blkc was built without MPI ..."). */
int rt_world_create_mpi(int nranks, size_t heap_bytes, RtWorld **out,
                        char *err, size_t errlen);
/* The rank this process runs (0 for a local world). */
int rt_world_self(const RtWorld *w);
/* A rank's error message of the last run ("" if it did not fail). */
const char *rt_world_rank_error(const RtWorld *w, int rank);
/* For generated kernels (BkLaunchCtx): the per-rank heap bases
 * (heap_base[q] = rt_sym_ptr(., 0, q)), the abort flag (non-zero once the
 * world failed) and the wait timeout of the current run. */
char *const *rt_world_heap_bases(const RtWorld *w);
const volatile int *rt_world_abort_flag(const RtWorld *w);
int64_t rt_world_timeout_ms(const RtWorld *w);
/* The barrier / collective deadline of the current run (BLKC_COLL_TIMEOUT_MS). */
int64_t rt_world_coll_timeout_ms(const RtWorld *w);
/* GPU ranks (gpu_ranks.c): a second abort flag, an int in mapped host
 * memory that running GPU kernels poll. Every failure that sets the
 * world's abort flag also stores 1 there (atomic, release), at the same
 * moment; each run starts by storing 0. NULL (the default) clears it. Set
 * it between runs only. Under mpirun only this process's failures reach
 * it: the first failure of the job ends every process (MPI_Abort). */
void rt_world_set_abort_mirror(RtWorld *w, volatile int *flag);
/* The collectives' deadline (BLKC_COLL_TIMEOUT_MS, else 4 x
 * BLKC_WAIT_TIMEOUT_MS, at least 1 s) where one of the two is set; -1
 * (no deadline) where neither is: for waits outside a world that have no
 * deadline by default (`blkc run --device=GPU`'s wait for its kernel). */
int64_t rt_set_deadline_ms(void);
/* The timeouts' clock: CLOCK_MONOTONIC in ms (for local and MPI ranks;
 * rank_mpi.c's barrier still has its own copy, left for after the merge
 * of branch hosts, which rewrote that function). */
int64_t rt_now_ms(void);
/* Whether a barrier that has waited waited_ms, past its timeout_ms, may
 * still wait for a missing rank that is in a signal wait (whose own
 * deadline gives the better message): up to twice the timeout plus a
 * second, on local and MPI ranks alike. */
int rt_barrier_grace(int64_t waited_ms, int64_t timeout_ms);
/* Appends rank q to the list "1, 3" in buf (len bytes, *used of them
 * taken), counting it in *count, unless buf is full: the ranks named in
 * "... did not arrive" messages. */
void rt_rank_list_add(char *buf, size_t len, size_t *used, int *count, int q);

int rt_rank_id(const RtRank *r);
/* The rank's count of signal waits in progress (kernels' and device
 * functions'): a barrier that times out while a missing rank is in such a
 * wait, which has a deadline of its own, lets that wait report first. */
int *rt_rank_in_wait(RtRank *r);
int rt_rank_size(const RtRank *r);      /* ranks in its world */
RtWorld *rt_rank_world(const RtRank *r);
/* Record "rank R: <message>" as this rank's error (the first one wins) and
 * mark the world failed (the first failing rank is what rt_world_run
 * reports). Always returns -1, for `return rt_rank_fail(r, ...)`. */
int rt_rank_fail(RtRank *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 1 if the world has failed (any rank), else 0. */
int rt_rank_failed(const RtRank *r);
/* This rank's message so far ("" if none). */
const char *rt_rank_error(const RtRank *r);
/* -1 with "rank R: aborted because rank Q failed: ..." recorded if the
 * world has failed; 0 otherwise. For long loops that do not wait. */
int rt_rank_check(RtRank *r);

/* Symmetric heap. rt_sym_alloc is collective: every rank calls it in the
 * same order with the same size; the block (aligned to RT_SYM_ALIGN, zeroed
 * on every rank) has the same offset everywhere, and no rank returns before
 * every rank has zeroed its block, so peer writes right after are safe.
 * bytes == 0 is allowed (a valid offset, nothing usable). Out of memory:
 * "symmetric heap out of memory: requested N bytes, M left of H". */
int rt_sym_alloc(RtRank *r, size_t bytes, size_t *offset_out);
/* Stack-like release: rt_sym_mark gives the current top; rt_sym_release
 * (collective, same mark on every rank) frees everything allocated since. */
size_t rt_sym_mark(const RtRank *r);
int rt_sym_release(RtRank *r, size_t mark);
/* The same as the last collective of a run's entry function: a rank that
 * makes it while others are in another collective has returned early, and
 * they fail with "rank Q left the run (returned early) while rank R waits
 * in <collective>". */
int rt_sym_release_final(RtRank *r, size_t mark);
/* Address of `offset` in rank peer's heap; NULL if peer or offset is out of
 * range (offset == heap size is allowed: one past the end) or the world has
 * no heap (heap_bytes 0). */
void *rt_sym_ptr(const RtRank *r, size_t offset, int peer);
/* The same address as `p` (anywhere in any rank's heap) in peer's heap, or
 * NULL if p is not on the symmetric heap. */
void *rt_sym_peer_of(const RtRank *r, const void *p, int peer);
size_t rt_sym_heap_bytes(const RtRank *r);
/* memmove(dst, src, bytes) where either may be a peer's heap address: in a
 * world whose ranks are on several nodes (MPI RMA) such a side moves by
 * MPI_Get / MPI_Put. 0, or -1 with the rank's error set. */
int rt_sym_copy(RtRank *r, void *dst, const void *src, size_t bytes);

/* Signals: u64 cells, normally on the symmetric heap (any aligned u64
 * works). notify: op RT_SIG_SET stores v, RT_SIG_ADD adds v, both with
 * release ordering (writes before it are visible to a waiter that sees the
 * value). Returns 0. */
int rt_signal_notify(RtRank *r, uint64_t *cell, uint64_t v, int op);
/* Wait until *cell >= v (RT_WAIT_GE) or == v (RT_WAIT_EQ), acquire
 * ordering. Returns 0, or -1 with "rank R: wait on signal NAME timed out
 * after T ms: expected >= V, saw S" or the abort message. name may be NULL
 * (the cell's heap offset is named instead). */
int rt_signal_wait(RtRank *r, const uint64_t *cell, int cmp, uint64_t v,
                   const char *name);
/* The wait loop as plain C for generated code: spins, then yields, then
 * sleeps briefly (<= 200 us), polling *abort_flag (may be NULL) every
 * round. timeout_ms < 0 waits forever. Returns 0 when satisfied, -1 on
 * timeout, -2 when aborted. */
int rt_signal_wait_cell(const volatile uint64_t *cell, int cmp, uint64_t v,
                        int64_t timeout_ms, const volatile int *abort_flag);
/* Store v (RT_SIG_SET) or add v (RT_SIG_ADD) with release ordering. */
void rt_signal_notify_cell(volatile uint64_t *cell, uint64_t v, int op);
/* Turn a failed rt_signal_wait_cell (rc -1 or -2) into this rank's error,
 * with the message rt_signal_wait would give. Returns -1. */
int rt_signal_wait_report(RtRank *r, int rc, const volatile uint64_t *cell,
                          int cmp, uint64_t v, const char *name);

/* ------------------------------------------------------------ rank_agree.c */
/* Collective staging (used by rank_coll.c; also the way to add new
 * collectives). rt_rank_coll_begin publishes *desc for this rank, waits
 * for every rank, and checks that kind, dtype, op, root and count agree
 * everywhere. Then rt_rank_coll_peer(r, q) is rank q's published
 * descriptor (its pointers are readable directly), valid until this rank's
 * rt_rank_coll_end, which waits until every rank has finished reading.
 * rt_rank_coll_sync is one more barrier in between (e.g. between the
 * phases of all_reduce). All three return 0 or -1 (error recorded). */
typedef enum {
    RT_COLL_BARRIER, RT_COLL_ALL_REDUCE, RT_COLL_ALL_GATHER,
    RT_COLL_REDUCE_SCATTER, RT_COLL_ALL_TO_ALL, RT_COLL_BROADCAST,
    RT_COLL_SYM_ALLOC, RT_COLL_SYM_RELEASE,
    RT_COLL_LEAVE,       /* rt_sym_release_final: the entry has returned */
    RT_COLL_REDUCE, RT_COLL_GATHER, RT_COLL_SCATTER,
    RT_COLL_EXCHANGE,    /* rt_exchange: a group of sends and receives */
    RT_COLL_KINDS
} RtRankCollKind;

typedef struct RtRankColl {
    int kind;            /* RtRankCollKind — must agree on every rank */
    int dtype;           /* DslDtype, or -1 — must agree */
    int op;              /* RT_RED_*, or -1 — must agree */
    int root;            /* broadcast/reduce/gather/scatter root, or -1 —
                            must agree */
    size_t count;        /* size, meaning per kind — must agree */
    uint64_t seq;        /* collective number in this run (set by begin) */
    /* per rank, not compared: what peers read */
    const void *src;     /* this rank's input */
    void *dst;           /* this rank's output */
    const size_t *counts;  /* per-rank counts (kind-specific), or NULL */
    const size_t *counts2; /* a second per-rank count array, or NULL */
} RtRankColl;

int rt_rank_coll_begin(RtRank *r, const RtRankColl *desc);
const RtRankColl *rt_rank_coll_peer(const RtRank *r, int peer);
/* Hands a buffer that a published descriptor points at to the world when
 * the collective failed: peers that have not seen the failure yet may
 * still read it, so it is freed with the world, not now. */
void rt_rank_keep(RtRank *r, void *p);
int rt_rank_coll_sync(RtRank *r);
int rt_rank_coll_end(RtRank *r);
const char *rt_rank_coll_name(int kind); /* "all_reduce", ... */
/* "all_reduce(count 100, f32, sum)": kind, count, dtype, op, root of c
 * as the mismatch message spells them. */
void rt_rank_coll_describe(const RtRankColl *c, char *buf, size_t len);

/* ------------------------------------------------------------ rank_end.c */
/* The end of a run has a deadline: once one rank's function has returned,
 * the others have the collectives' deadline to return (else the run fails
 * with "rank R: the end of the run timed out after T ms: rank R waits,
 * rank(s) Q did not arrive"), and after any failure they have the signal
 * wait's deadline (BLKC_WAIT_TIMEOUT_MS) plus 1 s. A rank
 * still running then (computing; nothing can interrupt it) is left behind:
 * its thread is detached, the world is kept (rt_world_destroy does not free
 * it, a later rt_world_run on it fails) until the last rank left behind
 * returns (then the world is freed: at once by rt_world_destroy, or by that
 * rank's thread if the world was destroyed before), and the caller's memory
 * it uses (arguments, code) must outlive it: rt_world_keep. The number of
 * rank threads ever left behind in this process. */
int rt_ranks_left_behind(void);
/* The ranks this world's last run left behind (0: none). */
int rt_world_behind(const RtWorld *w);

/* ------------------------------------------------------------ rank_coll.c */
/* Collectives over all ranks of the world, for any world size >= 1 and any
 * DslDtype except void. Buffers are ordinary memory (symmetric or not);
 * every rank passes its own buffers. Each returns 0, or -1 with the error
 * recorded in the rank (bad dtype/op/root, disagreeing sizes, a failed or
 * departed peer).
 *
 * Reductions (op RT_RED_SUM / MAX / MIN) combine the ranks' values in rank
 * order 0, 1, ..., N-1 (so results are identical on every rank and
 * reproducible): integers wrap on overflow; f32 and f64 in their own
 * precision; f16, bf16 and f8 are accumulated in f32 and rounded once to
 * nearest even at the end; for floats max/min propagate NaN; bool: sum and
 * max are logical or, min is logical and (bools read as != 0, written as
 * 0/1). */
int rt_barrier(RtRank *r);
/* In place: buf (count elements) becomes the reduction of every rank's
 * buf. Each rank reduces 1/N of the data, then all gather the pieces. */
int rt_all_reduce(RtRank *r, void *buf, size_t count, int dtype, int op);
/* dst[q * count_per_rank ...] = rank q's src (count_per_rank elements).
 * dst holds N * count_per_rank elements and must not overlap any src
 * except its own block (dst + rank * count_per_rank == src is allowed). */
int rt_all_gather(RtRank *r, void *dst, const void *src,
                  size_t count_per_rank, int dtype);
/* src holds `total` elements on every rank; rank q receives counts[q]
 * elements (sum of counts == total, else an error) at offset
 * counts[0] + ... + counts[q-1], reduced over all ranks, in dst. counts ==
 * NULL splits total as evenly as possible (the first total % N ranks get
 * one more). dst must not overlap peers' source blocks (dst == src + own
 * offset is allowed). */
int rt_reduce_scatter(RtRank *r, void *dst, const void *src, size_t total,
                      const size_t *counts, int dtype, int op);
/* Uneven all-to-all (MoE dispatch/combine): this rank's src is
 * send_counts[0] elements for rank 0, then send_counts[1] for rank 1, ...;
 * dst receives recv_counts[0] elements from rank 0, then recv_counts[1]
 * from rank 1, .... recv_counts[q] must equal rank q's send_counts[me]
 * (checked); recv_counts == NULL takes the senders' counts (dst must then
 * be large enough for their sum — rt_all_to_all_counts gives it). */
int rt_all_to_all(RtRank *r, void *dst, const size_t *recv_counts,
                  const void *src, const size_t *send_counts, int dtype);
/* recv_counts[q] = rank q's send_counts[me] (an all_to_all of the counts). */
int rt_all_to_all_counts(RtRank *r, size_t *recv_counts,
                         const size_t *send_counts);
/* buf (count elements) of rank root is copied into every rank's buf. */
int rt_broadcast(RtRank *r, void *buf, size_t count, int dtype, int root);
/* Rooted collectives (MPI_Reduce / MPI_Gather / MPI_Scatter): reduce leaves
 * the reduction of every rank's buf in root's buf (the others' unchanged);
 * gather puts rank q's src (count elements) at block q of root's dst
 * (W x count; other ranks' dst untouched); scatter gives rank q block q of
 * root's src (W x count) in its dst (count). Only root's output changes
 * in reduce and gather; no rank writes another's memory. */
int rt_reduce(RtRank *r, void *buf, size_t count, int dtype, int op, int root);
int rt_gather(RtRank *r, void *dst, const void *src, size_t count_per_rank,
              int dtype, int root);
int rt_scatter(RtRank *r, void *dst, const void *src, size_t count_per_rank,
               int dtype, int root);
/* The agreement alone of a collective that something else carries out
 * (GPU ranks' NCCL collectives, gpu_coll.c): the checks of the collective
 * above (dtype, op, root), then its staging with desc's kind, dtype, op,
 * root and count (src and dst are not published), so that ranks that
 * disagree all fail with "collective mismatch: rank 0 called ... but rank
 * Q called ..." (or a missing rank is named by the deadline) instead of
 * entering the other library; all_to_all also checks every counts2[q]
 * against rank q's counts[me] as rt_all_to_all does. Two barriers. Returns
 * 0, or -1 with the error recorded. */
int rt_coll_agree(RtRank *r, const RtRankColl *desc);
/* Element-wise reduction used by the collectives, exposed for tests and
 * for plans: out[i] = in[0][i] op in[1][i] op ... op in[n-1][i] (n >= 1)
 * with the rules above; out may alias any in[k]. */
void rt_rank_reduce(void *out, const void *const *in, int n, size_t count,
                    int dtype, int op);
const char *rt_rank_op_name(int op); /* "sum", "max", "min" or "?" */

/* ------------------------------------------------------------ rank_p2p.c */
/* One send (bytes of buf to rank peer) or receive (bytes from rank peer
 * into buf) of a group. */
typedef struct RtP2p {
    int send;      /* 1: send, 0: receive */
    int peer;      /* the other rank */
    void *buf;     /* send: source; receive: destination */
    size_t bytes;  /* message size */
} RtP2p;
/* Run a group of n sends and receives (NCCL's grouped ncclSend/ncclRecv):
 * collective over the world (every rank calls it, possibly with n == 0),
 * so it cannot deadlock on the order of a ring and has the collectives'
 * deadline. Between a pair of ranks the k-th send matches the k-th
 * receive, with the same size, else every rank fails with "exchange
 * mismatch: rank S sends N messages (B bytes) to rank D, but rank D
 * receives M (C bytes) from rank S". All sends are read before any
 * receive is written. */
int rt_exchange(RtRank *r, const RtP2p *ops, int n);

/* ------------------------------------------------------------ rank_group.c */
/* A group of ranks: MPI_Comm_split / ncclCommSplit semantics. */
typedef struct RtGroup RtGroup;
/* Collective over the world: the ranks with this rank's color form its
 * group, ordered by key, ties by world rank. Returns 0 with *out (free
 * with rt_group_free), or -1 with the error recorded. */
int rt_group_split(RtRank *r, int64_t color, int64_t key, RtGroup **out);
void rt_group_free(RtGroup *g);
int rt_group_size(const RtGroup *g);
int rt_group_rank(const RtGroup *g);   /* this rank's place in it */
int rt_group_member(const RtGroup *g, int i); /* world rank of member i */
/* A collective within group g: d->kind (barrier, all_reduce, reduce,
 * reduce_scatter (count = the source's elements, split as evenly as
 * possible over the members), broadcast, all_gather, gather, scatter,
 * all_to_all (count = elements per member)), dtype, op, root (a group
 * rank), count, src, dst as for the world collectives; results are bitwise
 * those of the same collective on a world of the members. Runs as one
 * rt_exchange, so it is collective over the world: every rank must run the
 * same number of group collectives (any group, any kind). */
int rt_group_coll(RtRank *r, const RtGroup *g, const RtRankColl *d);

/* ------------------------------------------------------------ rank_mpi.c */
/* Processes an MPI launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE, ...
 * in the environment), 0 when not launched that way; this process's rank
 * in that job, or -1. No MPI call is made. */
int rt_mpi_launch_size(void);
int rt_mpi_launch_rank(void);
/* 1 if this build has MPI (BLKC_HAVE_MPI), else 0. */
int rt_mpi_built(void);

#endif
