/* rank_mpi.h — the MPI side of a world of kind RT_WORLD_MPI (rank_mpi.c),
 * private to ranks.c and rank_agree.c. The public entry points
 * (rt_world_create_mpi, rt_mpi_launch_size, ...) are in ranks.h.
 *
 * One process per rank, all on one node. Two MPI-3 shared-memory windows on
 * the node's communicator: the symmetric heap (each process allocates its
 * heap, contiguous across ranks, so heap_base[q] = heap_base[0] + q * stride
 * in every process's mapping, 4 KiB aligned) and a control block owned by
 * rank 0 that holds what a local world keeps in RtWorld: the abort flag,
 * the first failure, the barrier counters, the per-rank "left" flags and
 * the published collective descriptors (heap locations instead of
 * pointers). Barriers and collectives therefore work by plain loads and
 * stores between the processes, exactly as between threads; MPI itself is
 * used only to start (MPI_Init, the windows), between runs (MPI_Barrier)
 * and to stop everyone on a failure (MPI_Abort).
 *
 * On several nodes (or with BLKC_MPI_RMA=1) the same entry points work on
 * RMA windows instead (rank_mpi.c, "the RMA path"): every control-block
 * access is an MPI atomic on rank 0's window, peers' published buffers are
 * fetched by MPI_Get, and peers' heaps are PROT_NONE in this process.
 *
 * Collective buffers that are not on the symmetric heap are staged: copied
 * by their owner into its own heap above the allocation top before the
 * descriptors are published (all_reduce also after its reduce phase), and
 * peers read the copy. */
#ifndef BLKC_RANK_MPI_H
#define BLKC_RANK_MPI_H

#include "ranks.h"

typedef struct RtMpi RtMpi;

/* Start MPI if needed and build the windows for a world of nranks (must
 * equal the MPI world size; shared windows on one node, RMA otherwise).
 * setup_ms (-1: none) bounds every wait for the other processes outside a
 * run (MPI_Init, the windows, the start of a run, freeing, MPI_Finalize):
 * past it the job ends with exit 3 (rank_mpi_gate.c). heap_bytes is raised to the
 * largest over the ranks and rounded up to a page (*stride_out, also the
 * usable size *heap_out). heap_base (nranks entries) receives the heaps in
 * this process's mapping. Returns 0, or -1 with err set (the same on every
 * rank for a bad size or several nodes). */
int rt_mpi_create(int nranks, size_t heap_bytes, int64_t setup_ms,
                  RtMpi **out, int *me, size_t *heap_out, char **heap_base,
                  char *err, size_t errlen);
void rt_mpi_free(RtMpi *m); /* collective */

int *rt_mpi_abort_flag(RtMpi *m); /* the shared abort flag */
/* This process's count of signal waits in progress, in the shared window
 * (a barrier timing out on another rank lets such a wait report first). */
int *rt_mpi_in_wait(RtMpi *m);
/* Record a failure of rank `rank` (msg without "rank R: "). The first
 * failure of the world prints "blkc: error: rank R: msg" on stderr and
 * calls MPI_Abort(3); later ones only return. */
void rt_mpi_fail(RtMpi *m, int rank, const char *msg);
/* The first failing rank (-1 if none yet) and its message. */
int rt_mpi_fail_rank(RtMpi *m, char *cause, size_t len);
/* Shared-memory barrier: 0 done, -1 the world failed, q + 1 when rank q
 * left the run without arriving, -2 when it waited timeout_ms (>= 0) and
 * miss holds the ranks that did not arrive ("1, 3"). */
int rt_mpi_barrier(RtMpi *m, int64_t timeout_ms, char *miss, size_t misslen);
void rt_mpi_left(RtMpi *m); /* this rank's function returned */
/* Publish this rank's descriptor (kind.. seq set) with its buffers as heap
 * locations, staging above heap_top what is not on the heap. 0 or -1 with
 * err set. */
int rt_mpi_coll_publish(RtMpi *m, const RtRankColl *d, size_t heap_top,
                        char *err, size_t errlen);
/* Rank q's descriptor of collective #seq with pointers in this process. */
const RtRankColl *rt_mpi_coll_view(RtMpi *m, int q, uint64_t seq);
/* Before all_reduce's mid-collective barrier: refresh the staged copy of
 * this rank's buffer (its reduced slice); once per collective. */
void rt_mpi_coll_restage(RtMpi *m);
/* Around a run: begin resets the control block (collective, MPI_Barrier);
 * end waits until every rank's function returned and returns 0, or, if the
 * world failed or some rank has not returned timeout_ms after this one
 * ("the end of the run timed out ..."), never returns (the first failing
 * rank aborts the job). */
int rt_mpi_run_begin(RtMpi *m, char *err, size_t errlen);
int rt_mpi_run_end(RtMpi *m, int64_t timeout_ms);

/* The RMA path (ranks on several nodes, or BLKC_MPI_RMA=1; see the top of
 * rank_mpi.c): 1 when this world uses it. */
int rt_mpi_rma(const RtMpi *m);
/* memmove where src or dst may lie in a peer's heap range: MPI_Get /
 * MPI_Put + flush there. 0, or -1 out of memory (peer to peer). */
int rt_mpi_heap_copy(RtMpi *m, void *dp, const void *sp, size_t bytes);
/* RMA signal cells on any rank's heap: notify by MPI_Accumulate(REPLACE)
 * or MPI_Fetch_and_op(SUM), load by MPI_Fetch_and_op(NO_OP), each flushed.
 * -1 when the cell is not on a heap (or not an RMA world). */
int rt_mpi_sig_notify(RtMpi *m, uint64_t *cell, uint64_t v, int op);
int rt_mpi_sig_load(RtMpi *m, const uint64_t *cell, uint64_t *v);
/* After all_reduce's mid-collective barrier (RMA): fetch the peers'
 * reduced buffers again. Once per collective, a no-op otherwise. */
void rt_mpi_coll_refresh(RtMpi *m);

/* rank_mpi_gate.c: deadlines for the blocking MPI calls outside a run.
 * The gate returns once every rank of the n has called it; past timeout_ms
 * it prints "rank me: WHAT timed out after T ms: rank me waits, rank(s) Q
 * did not arrive" and ends the job (MPI_Abort, exit 3). arm/disarm bound
 * the calls between them the same way (the line without the ranks, then
 * _exit(3)); rank is the process's rank; a negative timeout arms nothing. */
void rt_mpig_gate(int me, int n, int64_t timeout_ms, const char *what);
void rt_mpig_arm(const char *what, int rank, int64_t timeout_ms);
void rt_mpig_disarm(void);

#endif
