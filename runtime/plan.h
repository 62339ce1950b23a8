/* plan.h — running programs on ranks: the Device IR interpreter (one device
 * function per rank, its buffers, copies, launches, async blocks and
 * collectives) and the multi-rank launcher of kernels and device functions
 * that the CLI and libblkc use. Prefix rt_plan_. */
#ifndef BLKC_PLAN_H
#define BLKC_PLAN_H

#include "ranks.h"
#include "rt.h"

/* One parameter of the entry as given by the caller, per rank. Tensors are
 * host buffers (C order unless strides are given); symmetric and signal
 * parameters are copied onto the symmetric heap before the run and copied
 * back after it (when `data` is not NULL). */
typedef struct RtPlanArg {
    void *data;                    /* tensor data, or NULL (zeroed) */
    int64_t shape[IR_MAX_RANK];    /* tensor extents */
    int64_t stride[IR_MAX_RANK];   /* element strides */
    IrScalarVal scalar;            /* scalar params (.i or .f by dtype) */
} RtPlanArg;

typedef struct RtGpuWorld RtGpuWorld; /* gpu_ranks.c */

/* A compiled module plus its CPU code. */
typedef struct RtPlanModule {
    const IrModule *ir;            /* kernels and device functions */
    BkCpuModule *cpu;              /* JIT'd kernels (unless range is set) */
    RtGpuWorld *gpu;               /* GPU ranks (gpu_ranks.h), or NULL: CPU */
    /* Code compiled elsewhere (libblkc's cached modules): a kernel's range
     * entry by name, asked with range_ctx. NULL: look it up in cpu. */
    BkRangeFn (*range)(const void *range_ctx, const char *name);
    const void *range_ctx;
    /* Megakernel mode (runtime/mega.h), or NULL: each CPU rank's launches
     * become one tile-task graph run by worker threads. */
    struct RtMegaRec *mega;
    /* Keeps what a rank left behind by rt_plan_run may still read (code,
     * ir, range_ctx, mega): hold(hold_ctx, +1) once ranks were left behind,
     * hold(hold_ctx, -1) when the last of them has returned (ranks.h). NULL:
     * the caller keeps it all for the rest of the process. */
    void (*hold)(const void *hold_ctx, int delta);
    const void *hold_ctx;
} RtPlanModule;

/* The CPU range entry of kernel `name` of pm (range, else cpu), or NULL. */
BkRangeFn rt_plan_range(const RtPlanModule *pm, const char *name);

/* Run entry function `fi` (a kernel or a device function) on `nranks`
 * local ranks (threads). args[r][p] gives rank r's parameter p. A kernel is
 * launched once per rank with its grid (or `grid` if non-NULL and
 * non-zero). Returns 0, or -1 with the first failing rank's message.
 * Under mpirun with more than one process (rt_mpi_launch_size() > 1) the
 * ranks are the processes instead (rt_world_create_mpi; nranks must equal
 * their number): each process runs its own rank, only its args[rank] are
 * read and written, and a failure ends the job (ranks.h). */
int rt_plan_run(const RtPlanModule *pm, int fi, int nranks,
                RtPlanArg *const *args, const int64_t *grid, char *err,
                size_t errlen);

/* Elements of a tensor parameter p as given by argument a (its extents'
 * product). */
int64_t rt_plan_numel(const IrParam *p, const RtPlanArg *a);

/* Kernel f's launch arguments a[0 .. f->nparams) from one rank's arguments:
 * scalars by value, tensors as DLTensors t[p] (C order unless args give
 * strides) with device type `dl_device` (0: left unset). */
void rt_plan_kernel_args(const IrFunc *f, RtPlanArg *args, int dl_device, DLTensor *t,
                         blkc_arg *a);

/* The launch-relevant facts of rank r's world (for rt_cpu_launch_ranked). */
RtWorldView rt_rank_view(RtRank *r);

/* Interpret device function `fi` on rank r (inside a world's run). */
int rt_plan_exec(const RtPlanModule *pm, int fi, RtRank *r,
                 const RtPlanArg *args);

#endif
