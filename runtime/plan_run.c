/* plan_run.c — the multi-rank runner: rt_plan_run makes a world of local
 * ranks (threads) or, under mpirun, MPI processes, puts every rank's
 * symmetric and signal entry arguments on the symmetric heap, runs the
 * entry (a device function through plan.c's interpreter, or a kernel once
 * per rank) and copies the symmetric outputs back. A run that leaves ranks
 * behind (ranks.h) keeps its own copy of the module description and has the
 * caller's module held (RtPlanModule.hold) until they have all returned. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ runner */

RtWorldView rt_rank_view(RtRank *r)
{
    RtWorld *w = rt_rank_world(r);
    RtWorldView v;
    v.rank = rt_rank_id(r);
    v.world = rt_rank_size(r);
    v.heap_base = rt_world_heap_bases(w);
    v.abort_flag = rt_world_abort_flag(w);
    v.timeout_ms = rt_world_timeout_ms(w);
    v.in_wait = rt_rank_in_wait(r);
    return v;
}

typedef struct Run {
    const RtPlanModule *pm;        /* what to run: &own */
    RtPlanModule own;              /* the caller's, copied (a rank left
                                      behind reads it after the call) */
    int fi;                        /* entry */
    RtPlanArg *const *args;        /* per rank, per param */
    const int64_t *grid;           /* kernel grid override or NULL */
} Run;

int64_t rt_plan_numel(const IrParam *p, const RtPlanArg *a)
{
    int64_t n = 1;
    for (int d = 0; d < p->rank; d++)
        n *= a->shape[d];
    return n;
}

void rt_plan_kernel_args(const IrFunc *f, RtPlanArg *args, int dl_device, DLTensor *t,
                         blkc_arg *a)
{
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *ip = &f->params[p];
        if (ip->kind == PK_SCALAR) {
            a[p].kind = dsl_is_float(ip->dtype) ? BLKC_ARG_FLOAT : BLKC_ARG_INT;
            if (dsl_is_float(ip->dtype))
                a[p].v.f = args[p].scalar.f;
            else
                a[p].v.i = args[p].scalar.i;
            continue;
        }
        memset(&t[p], 0, sizeof t[p]);
        t[p].data = args[p].data;
        t[p].device.device_type = dl_device;
        t[p].ndim = ip->rank;
        t[p].dtype = rt_dtype_to_dl(ip->dtype);
        t[p].shape = args[p].shape;
        t[p].strides = args[p].stride;
        a[p].kind = BLKC_ARG_TENSOR;
        a[p].v.tensor = &t[p];
    }
}

/* Launch kernel f once on this rank with the rank's arguments. */
static int run_kernel(const Run *run, RtRank *r, RtPlanArg *args)
{
    const IrFunc *f = run->pm->ir->funcs[run->fi];
    BkRangeFn fn = rt_plan_range(run->pm, f->name);
    DLTensor t[64];
    blkc_arg a[64];
    if (!fn || f->nparams > 64)
        return rt_rank_fail(r, "kernel %s cannot be launched", f->name);
    rt_plan_kernel_args(f, args, kDLCPU, t, a);
    blkc_launch_options lo;
    memset(&lo, 0, sizeof lo);
    if (run->grid)
        memcpy(lo.grid, run->grid, sizeof lo.grid);
    RtWorldView wv = rt_rank_view(r);
    char err[512];
    if (rt_cpu_launch_ranked(f, fn, a, f->nparams, &lo, &wv, NULL, err,
                             sizeof err) != BLKC_OK)
        return rt_rank_fail(r, "%s", err);
    return 0;
}

static int rank_main(RtRank *r, void *arg)
{
    const Run *run = arg;
    const IrFunc *f = run->pm->ir->funcs[run->fi];
    RtPlanArg *mine = run->args[rt_rank_id(r)];
    RtPlanArg *local = calloc((size_t)f->nparams + 1, sizeof *local);
    if (!local)
        return rt_rank_fail(r, "out of memory");
    /* symmetric and signal params live on the symmetric heap */
    int rc = 0;
    for (int p = 0; p < f->nparams && rc == 0; p++) {
        const IrParam *ip = &f->params[p];
        local[p] = mine[p];
        if (ip->kind != PK_TENSOR || ip->mem == MEM_GLOBAL)
            continue;
        size_t bytes = (size_t)rt_plan_numel(ip, &mine[p]) * (size_t)dsl_dtype_bytes(ip->dtype);
        size_t off;
        if (rt_sym_alloc(r, bytes ? bytes : 8, &off)) {
            rc = -1;
            break;
        }
        local[p].data = rt_sym_ptr(r, off, rt_rank_id(r));
        int64_t st = 1;
        for (int d = ip->rank - 1; d >= 0; d--) {
            local[p].stride[d] = st;
            st *= mine[p].shape[d];
        }
        if (mine[p].data) /* inputs are given C-ordered */
            memcpy(local[p].data, mine[p].data, bytes);
    }
    /* every rank's inputs are in place before any rank starts */
    if (rc == 0)
        rc = rt_barrier(r);
    if (rc == 0)
        rc = f->is_device ? rt_plan_exec(run->pm, run->fi, r, local)
                          : run_kernel(run, r, local);
    /* a kernel's ranks meet at the end of the run (a device function's
     * did on leaving it): one that never comes is named there */
    if (rc == 0 && !f->is_device)
        rc = rt_sym_release_final(r, rt_sym_mark(r));
    if (rc == 0)
        rc = rt_barrier(r);
    /* rc first: a rank left behind that returns after all (rc != 0, the
     * world failed) reads nothing of the caller's any more */
    for (int p = 0; rc == 0 && p < f->nparams; p++) {
        const IrParam *ip = &f->params[p];
        if (ip->kind == PK_TENSOR && ip->mem != MEM_GLOBAL && mine[p].data)
            memcpy(mine[p].data, local[p].data,
                   (size_t)rt_plan_numel(ip, &mine[p]) * (size_t)dsl_dtype_bytes(ip->dtype));
    }
    free(local);
    return rc;
}

/* The world of a run that left ranks behind is freed (they all returned):
 * what they read is released. */
static void run_release(void *p)
{
    Run *run = p;
    if (run->own.hold)
        run->own.hold(run->own.hold_ctx, -1);
    free(run);
}

int rt_plan_run(const RtPlanModule *pm, int fi, int nranks,
                RtPlanArg *const *args, const int64_t *grid, char *err,
                size_t errlen)
{
    const IrFunc *f = pm->ir->funcs[fi];
    /* under mpirun (more than one process): one rank per process, and only
     * this process's args need to be filled in */
    int mpi = rt_mpi_launch_size() > 1;
    int a0 = mpi ? rt_mpi_launch_rank() : 0;
    if (a0 < 0 || a0 >= nranks)
        a0 = 0;
    size_t heap = (size_t)64 << 20;
    for (int p = 0; p < f->nparams; p++) { /* room for the symmetric params */
        const IrParam *ip = &f->params[p];
        if (ip->kind == PK_TENSOR && ip->mem != MEM_GLOBAL)
            heap += (size_t)rt_plan_numel(ip, &args[a0][p]) * (size_t)dsl_dtype_bytes(ip->dtype) + 256;
    }
    const char *env = getenv("BLKC_SYM_HEAP_MB");
    if (env && atoll(env) > 0)
        heap = (size_t)atoll(env) << 20;
    RtWorld *w;
    if (mpi ? rt_world_create_mpi(nranks, heap, &w, err, errlen)
            : rt_world_create(nranks, heap, &w, err, errlen))
        return -1;
    /* on the heap: a rank left behind reads it after this returns */
    Run *run = malloc(sizeof *run);
    if (!run) {
        rt_world_destroy(w);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *run = (Run){&run->own, *pm, fi, args, grid};
    int rc = rt_world_run(w, rank_main, run, err, errlen);
    if (!rt_world_behind(w)) {
        free(run);
    } else { /* released when the ranks left behind have all returned */
        if (pm->hold)
            pm->hold(pm->hold_ctx, +1);
        (void)rt_world_keep(w, run_release, run); /* else kept for ever */
    }
    rt_world_destroy(w);
    return rc;
}
