/* t_mpi_stall.c MODE STALL — ranks (STALL: "1" or "1,3") stop for 60 s at a point
 * where the other processes of an MPI world wait for it outside a run;
 * mpi_stall.sh checks that the job ends with exit 3 and one line naming
 * the waiting rank, where it waits and (where MPI lets blkc know) the rank
 * that did not arrive, well before the stall would end. MODE:
 *   init  before its first world: the others wait in MPI_Init
 *   setup before a second world (MPI already running): world setup
 *   run   between two runs of one world: the start of a run
 *   free  before destroying the world: teardown
 *   exit  after destroying it, before exit: MPI_Finalize
 *   end   inside its first run's function (computing, waiting on no one)
 *         while the others return: the end of the run (the collectives'
 *         deadline, BLKC_COLL_TIMEOUT_MS)
 *   none  no stall: two worlds, two runs each, exit 0.
 * Exits 77 when not started by mpirun with 2+ processes or without MPI. */
#include "runtime/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int stall_end; /* this rank stops in the run's function (MODE end) */

static int noop(RtRank *r, void *arg)
{
    (void)r;
    (void)arg;
    if (stall_end)
        sleep(60);
    return 0;
}

static RtWorld *create(int n)
{
    RtWorld *w;
    char err[512];
    if (rt_world_create_mpi(n, 1 << 20, &w, err, sizeof err)) {
        fprintf(stderr, "t_mpi_stall: %s\n", err);
        exit(1);
    }
    return w;
}

static void run(RtWorld *w)
{
    char err[512];
    if (rt_world_run(w, noop, NULL, err, sizeof err)) {
        fprintf(stderr, "t_mpi_stall: %s\n", err);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int n = rt_mpi_launch_size(), me = rt_mpi_launch_rank();
    if (n < 2 || me < 0 || !rt_mpi_built()) {
        printf("t_mpi_stall: skipped (%s)\n",
               !rt_mpi_built() ? "built without MPI"
                               : "not started by mpirun with 2+ processes");
        return 77;
    }
    const char *mode = argc > 1 ? argv[1] : "none";
    int stall = 0; /* this rank is in STALL, a list such as "1,3" */
    for (const char *p = argc > 2 ? argv[2] : "1"; *p;) {
        char *end;
        long q = strtol(p, &end, 10);
        stall |= end != p && q == me;
        p = *end ? end + 1 : end;
    }
#define STALL_AT(m)                                                        \
    do {                                                                   \
        if (stall && !strcmp(mode, m))                                     \
            sleep(60);                                                     \
    } while (0)
    STALL_AT("init");
    RtWorld *w = create(n);
    stall_end = stall && !strcmp(mode, "end");
    run(w);
    rt_world_destroy(w);
    STALL_AT("setup");
    w = create(n);
    run(w);
    STALL_AT("run");
    run(w);
    STALL_AT("free");
    rt_world_destroy(w);
    STALL_AT("exit");
    if (me == 0)
        printf("t_mpi_stall %s: %d ranks done\n", mode, n);
    return 0;
}
