/* gpu_run.c — the CLI's run of one kernel on a GPU without ranks (`blkc
 * run --device=cuda:N|hip:N|cuda-emu|hip-emu`, runtime/gpu.h
 * rt_gpu_run_host): the host tensors copied to the device, one launch
 * waited for (with the deadline BLKC_COLL_TIMEOUT_MS or
 * BLKC_WAIT_TIMEOUT_MS sets, else none), `--bench` launches timed by
 * device events, the tensors copied back. With a deadline the copies are
 * gpu_copy.c's staged ones (rt_gpu_copy_timed: a pinned staging buffer,
 * chunks of 4 MiB at most, each an asynchronous copy on a stream of the
 * run's own polled with the same deadline), since a synchronous copy
 * from pageable memory cannot be given up on; so is the read of the
 * kernel's failure record (gpu_launch.c, on its module's stream). Without
 * one, or where the driver lacks mapped host memory, streams,
 * asynchronous copies or cuStreamQuery / hipStreamQuery (an emulated
 * device), the synchronous copies, unbounded. On a device whose kernel
 * or copy did not end by its deadline nothing is freed, not even the
 * staging buffer and the stream (rt_gpu_busy). */
#include "gpu.h"
#include "ranks.h"
#include "rt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

typedef struct HostRun {
    RtGpu *g;
    RtGpuModule *gm;
    uint64_t *dptr;          /* per param */
    DLTensor *dl;            /* per param: the device tensors */
    blkc_arg *dargs;
    void **ev;               /* bench + 1 events */
    int nev;
    int64_t tmo;             /* the deadline (ms) of each wait; -1: none */
    RtGpuStage stage;        /* the copies' (gpu_copy.c) */
} HostRun;

/* (on a device whose kernel or copy did not end, the device memory,
 * modules, staging buffer and stream stay: rt_gpu_busy; an event still
 * pending is released when it completes, cuEventDestroy does not wait) */
static void host_run_free(HostRun *h, int np)
{
    const RtGpuOps *ops = rt_gpu_ops(h->g);
    if (!rt_gpu_busy(h->g))
        rt_gpu_stage_free(ops, rt_gpu_dev(h->g), &h->stage);
    for (int i = 0; h->ev && i < h->nev; i++)
        ops->event_free(rt_gpu_dev(h->g), h->ev[i]);
    for (int i = 0; h->dptr && i < np; i++)
        rt_gpu_free(h->g, h->dptr[i]);
    rt_gpu_module_free(h->gm);
    rt_gpu_close(h->g);
    free(h->ev);
    free(h->dptr);
    free(h->dl);
    free(h->dargs);
}

static size_t tensor_bytes(const DLTensor *t, int dt)
{
    size_t n = 1;
    for (int k = 0; k < t->ndim; k++)
        n *= (size_t)t->shape[k];
    return n * (size_t)dsl_dtype_bytes(dt);
}

blkc_status rt_gpu_run_host(const char *device, const IrModule *m, int fi,
                            const blkc_arg *args, int nargs,
                            const int64_t grid[3], int bench,
                            double *bench_ms, double *first_ms,
                            int64_t grid_out[3], char *err, size_t errlen)
{
    blkc_target t;
    int id;
    if (rt_gpu_parse_device(device, &t, &id, err, errlen) < 0)
        return BLKC_ERR_USAGE;
    if (fi < 0 || fi >= m->nfuncs || m->funcs[fi]->is_device)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "not a kernel");
    const IrFunc *f = m->funcs[fi];
    if (nargs != f->nparams)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "kernel %s takes %d "
                       "arguments, got %d", f->name, f->nparams, nargs);
    int np = f->nparams;
    /* the wait for the kernel: no deadline unless one is set (a lone
     * kernel may compute as long as it needs, as on the CPU); then the
     * deadline a rank's kernel has at the end of a run on GPU ranks */
    int64_t tmo = rt_set_deadline_ms();
    HostRun h;
    memset(&h, 0, sizeof h);
    h.tmo = tmo;
    blkc_status st = rt_gpu_open(t, id, &h.g, err, errlen);
    if (st != BLKC_OK)
        return st;
    IrModule view;
    memset(&view, 0, sizeof view);
    view.funcs = (IrFunc **)&m->funcs[fi];
    view.nfuncs = 1;
    h.dptr = calloc((size_t)np + 1, sizeof *h.dptr);
    h.dl = calloc((size_t)np + 1, sizeof *h.dl);
    h.dargs = calloc((size_t)np + 1, sizeof *h.dargs);
    if (!h.dptr || !h.dl || !h.dargs) {
        host_run_free(&h, np);
        return rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
    }
    st = rt_gpu_module_load(h.g, &view, &h.gm, err, errlen);
    for (int i = 0; i < np && st == BLKC_OK; i++) {
        h.dargs[i] = args[i];
        if (f->params[i].kind != PK_TENSOR || args[i].kind != BLKC_ARG_TENSOR ||
            !args[i].v.tensor)
            continue;
        const DLTensor *ht = args[i].v.tensor;
        int dt = rt_dtype_from_dl(ht->dtype);
        if (dt < 0 || ht->strides || ht->device.device_type != kDLCPU) {
            st = rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: expected "
                         "a compact host tensor", f->params[i].name);
            break;
        }
        size_t bytes = tensor_bytes(ht, dt);
        st = rt_gpu_alloc(h.g, bytes, &h.dptr[i], err, errlen);
        char what[256];
        snprintf(what, sizeof what, "the upload of %s to the device",
                 f->params[i].name);
        if (st == BLKC_OK)
            st = rt_gpu_copy_timed(h.g, &h.stage, true, h.dptr[i],
                                   (char *)ht->data + ht->byte_offset, bytes,
                                   what, tmo, err, errlen);
        h.dl[i] = *ht;
        h.dl[i].data = (void *)(uintptr_t)h.dptr[i];
        h.dl[i].byte_offset = 0;
        h.dl[i].device.device_type = rt_gpu_dl_type(h.g);
        h.dl[i].device.device_id = id == RT_GPU_EMU ? 0 : id;
        h.dargs[i].v.tensor = &h.dl[i];
    }
    char note[1024] = "";
    blkc_launch_options lo;
    memset(&lo, 0, sizeof lo);
    if (grid)
        memcpy(lo.grid, grid, sizeof lo.grid);
    if (st == BLKC_OK) {
        double t0 = now_ms();
        st = rt_gpu_launch_timed(h.gm, f, h.dargs, np, &lo, true, tmo, grid_out, err, errlen);
        if (first_ms)
            *first_ms = now_ms() - t0;
        if (st == BLKC_OK) /* the first launch's note, if any */
            snprintf(note, sizeof note, "%s", err);
    }
    if (st == BLKC_OK && bench > 0) {
        h.ev = calloc((size_t)bench + 1, sizeof *h.ev);
        if (!h.ev)
            st = rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
        for (int i = 0; i <= bench && st == BLKC_OK; i++, h.nev++)
            if (rt_gpu_ops(h.g)->event_new(rt_gpu_dev(h.g), &h.ev[i], err, errlen))
                st = BLKC_ERR_RUNTIME;
        if (st == BLKC_OK &&
            rt_gpu_ops(h.g)->event_record(rt_gpu_dev(h.g), h.ev[0], NULL, err, errlen))
            st = BLKC_ERR_RUNTIME;
        for (int i = 0; i < bench && st == BLKC_OK; i++) {
            st = rt_gpu_launch_timed(h.gm, f, h.dargs, np, &lo, false, -1, NULL, err, errlen);
            if (st == BLKC_OK &&
                rt_gpu_ops(h.g)->event_record(rt_gpu_dev(h.g), h.ev[i + 1], NULL, err, errlen))
                st = BLKC_ERR_RUNTIME;
        }
        char what[256];
        snprintf(what, sizeof what, "the %d --bench runs of kernel %s", bench, f->name);
        if (st == BLKC_OK)
            st = rt_gpu_finish(h.gm, f, what, tmo < 0 ? -1 : tmo * bench, err, errlen);
        for (int i = 0; i < bench && st == BLKC_OK; i++) {
            float ms = 0;
            if (rt_gpu_ops(h.g)->event_ms(rt_gpu_dev(h.g), h.ev[i], h.ev[i + 1], &ms, err, errlen))
                st = BLKC_ERR_RUNTIME;
            if (bench_ms)
                bench_ms[i] = ms;
        }
    }
    for (int i = 0; i < np && st == BLKC_OK; i++) {
        if (!h.dptr[i])
            continue;
        const DLTensor *ht = args[i].v.tensor;
        char what[256];
        snprintf(what, sizeof what, "the copy of %s to the host", f->params[i].name);
        st = rt_gpu_copy_timed(h.g, &h.stage, false, h.dptr[i],
                               (char *)ht->data + ht->byte_offset,
                               tensor_bytes(ht, rt_dtype_from_dl(ht->dtype)),
                               what, tmo, err, errlen);
    }
    host_run_free(&h, np);
    if (st == BLKC_OK)
        snprintf(err, errlen, "%s", note);
    return st;
}
