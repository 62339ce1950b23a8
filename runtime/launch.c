/* launch.c — the CPU launcher shared by libblkc and the CLI: check the
 * arguments against the kernel's parameters, bind symbolic sizes, build the
 * CPU ABI argument array, evaluate the grid and run on the thread pool.
 * Kernels with up to RT_SMALL params launch without touching the heap. */
#include "rt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_SMALL 32

typedef union {
    uint64_t u;
    int64_t i;
    double f;
    unsigned char b[8];
} RtSlot; /* one scalar argument in its dtype's representation */

typedef struct {
    BkTensorDesc *desc;              /* per param */
    RtSlot *slots;                   /* per param */
    void **argv;                     /* per param */
    IrScalarVal *sv;                 /* per param */
    int64_t (*shapes)[IR_MAX_RANK];  /* per param */
    int64_t *symval;                 /* per sym, -1 = unbound */
    int *symfrom;                    /* per sym: param that bound it */
} Work;

static blkc_status fail(blkc_status s, char *err, size_t errlen,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static blkc_status fail(blkc_status s, char *err, size_t errlen,
                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return s;
}

static blkc_status check_scalar(const IrParam *p, const blkc_arg *a,
                                RtSlot *slot, IrScalarVal *sv, char *err,
                                size_t errlen)
{
    int dt = p->dtype;
    slot->u = 0;
    if (dsl_is_float(dt)) {
        if (a->kind != BLKC_ARG_FLOAT)
            return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s is a %s "
                        "scalar: pass BLKC_ARG_FLOAT", p->name,
                        dsl_dtype_name(dt));
        rt_store_f64(slot->b, dt, a->v.f);
        sv->f = a->v.f;
        return BLKC_OK;
    }
    if (a->kind != BLKC_ARG_INT)
        return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s is a %s scalar: "
                    "pass BLKC_ARG_INT", p->name, dsl_dtype_name(dt));
    int64_t v = a->v.i;
    int bits = dsl_dtype_bytes(dt) * 8;
    bool ok = true;
    if (dt == DT_BOOL)
        ok = v == 0 || v == 1;
    else if (dsl_dtype_kind(dt) == 'i' && bits < 64)
        ok = v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1));
    else if (dsl_dtype_kind(dt) == 'u' && bits < 64)
        ok = v >= 0 && v < ((int64_t)1 << bits);
    if (!ok)
        return fail(BLKC_ERR_USAGE, err, errlen, "value %lld is out of range "
                    "for parameter %s: %s", (long long)v, p->name,
                    dsl_dtype_name(dt));
    rt_store_i64(slot->b, dt, v);
    sv->i = v;
    return BLKC_OK;
}

static blkc_status check_tensor(const IrFunc *f, int pi, const blkc_arg *a,
                                Work *w, char *err, size_t errlen)
{
    const IrParam *p = &f->params[pi];
    if (a->kind != BLKC_ARG_TENSOR)
        return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s is a tensor: "
                    "pass BLKC_ARG_TENSOR", p->name);
    const DLTensor *t = a->v.tensor;
    if (!t)
        return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: NULL DLTensor",
                    p->name);
    if (t->device.device_type != kDLCPU &&
        t->device.device_type != kDLCUDAHost &&
        t->device.device_type != kDLROCMHost)
        return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: tensor is not "
                    "in host memory (device type %d)", p->name,
                    (int)t->device.device_type);
    int dt = rt_dtype_from_dl(t->dtype);
    if (dt != p->dtype) {
        char got[32];
        if (dt >= 0)
            snprintf(got, sizeof got, "%s", dsl_dtype_name(dt));
        else
            snprintf(got, sizeof got, "code %u bits %u lanes %u",
                     t->dtype.code, t->dtype.bits, t->dtype.lanes);
        return fail(BLKC_ERR_USAGE, err, errlen, "dtype mismatch: parameter "
                    "%s is %s but the tensor is %s", p->name,
                    dsl_dtype_name(p->dtype), got);
    }
    if (t->ndim != p->rank)
        return fail(BLKC_ERR_USAGE, err, errlen, "rank mismatch: parameter %s "
                    "has %d dims but the tensor has %d", p->name, p->rank,
                    (int)t->ndim);
    if (p->rank > 0 && !t->shape)
        return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: tensor has "
                    "no shape", p->name);
    BkTensorDesc *d = &w->desc[pi];
    int64_t numel = 1;
    for (int k = 0; k < p->rank; k++) {
        int64_t n = t->shape[k];
        if (n < 0)
            return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: negative "
                        "extent %lld in dim %d", p->name, (long long)n, k);
        if (p->dims[k] >= 0 && n != p->dims[k])
            return fail(BLKC_ERR_USAGE, err, errlen, "shape mismatch: "
                        "parameter %s dim %d is %lld but the tensor has %lld",
                        p->name, k, (long long)p->dims[k], (long long)n);
        if (p->dims[k] < 0) {
            int s = (int)(-1 - p->dims[k]);
            if (s < 0 || s >= f->nsyms)
                return fail(BLKC_ERR_RUNTIME, err, errlen, "internal: bad "
                            "symbolic size in parameter %s", p->name);
            if (n > INT32_MAX)
                return fail(BLKC_ERR_USAGE, err, errlen, "size %s = %lld "
                            "(from %s) does not fit i32", f->syms[s].name,
                            (long long)n, p->name);
            if (w->symval[s] < 0) {
                w->symval[s] = n;
                w->symfrom[s] = pi;
            } else if (w->symval[s] != n) {
                return fail(BLKC_ERR_USAGE, err, errlen, "size mismatch: %s is "
                            "%lld from %s but %lld from %s", f->syms[s].name,
                            (long long)w->symval[s],
                            f->params[w->symfrom[s]].name, (long long)n,
                            p->name);
            }
        }
        d->shape[k] = n;
        if (n == 0)
            numel = 0; /* only emptiness matters here */
    }
    if (t->strides) {
        for (int k = 0; k < p->rank; k++)
            d->stride[k] = t->strides[k];
    } else {
        int64_t s = 1;
        for (int k = p->rank - 1; k >= 0; k--) {
            d->stride[k] = s;
            s *= d->shape[k] ? d->shape[k] : 1;
        }
    }
    if (!t->data && numel != 0)
        return fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: NULL data",
                    p->name);
    d->data = (char *)t->data + t->byte_offset;
    for (int k = 0; k < p->rank; k++)
        w->shapes[pi][k] = d->shape[k];
    w->argv[pi] = d;
    return BLKC_OK;
}

/* The wait timeout of launches outside a world: BLKC_WAIT_TIMEOUT_MS. */
static int64_t env_timeout_ms(void)
{
    const char *s = getenv("BLKC_WAIT_TIMEOUT_MS");
    if (!s || !*s)
        return 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end == 0 && v > 0 ? v : 0;
}

/* Run the grid: on the pool, or in order on this thread when it is one
 * rank of several (ranks may wait on each other; each must progress). */
static blkc_status execute(const IrFunc *f, BkRangeFn fn, void *const *argv,
                           const int64_t grid[3], const RtWorldView *wv,
                           char *err, size_t errlen)
{
    BkLaunchCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.world = 1;
    if (wv) {
        ctx.rank = wv->rank;
        ctx.world = wv->world;
        ctx.heap_base = wv->heap_base;
        ctx.abort_flag = wv->abort_flag;
        ctx.timeout_ms = wv->timeout_ms;
    } else {
        ctx.timeout_ms = env_timeout_ms();
    }
    if (ctx.world > 1) {
        int64_t total = 1;
        for (int a = 0; a < 3; a++) {
            if (grid[a] < 0 || grid[a] > INT32_MAX)
                return fail(BLKC_ERR_RUNTIME, err, errlen, "grid extent %lld "
                            "along axis %d is out of range", (long long)grid[a],
                            a);
            ctx.nprog[a] = (int32_t)grid[a];
            if (grid[a] && total > INT64_MAX / grid[a])
                return fail(BLKC_ERR_RUNTIME, err, errlen, "grid has too many "
                            "program instances");
            total *= grid[a];
        }
        if (total)
            fn(argv, 0, total, ctx.nprog);
    } else if (rt_pool_run(fn, argv, grid, &ctx, err, errlen) != 0) {
        return BLKC_ERR_RUNTIME;
    }
    if (__atomic_load_n(&ctx.failed, __ATOMIC_ACQUIRE)) {
        const char *sig = ctx.fail_param >= 0 && ctx.fail_param < f->nparams
                              ? f->params[ctx.fail_param].name : "?";
        if (ctx.fail_aborted)
            return fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s on rank %d: "
                        "wait on %s[%lld] abandoned: another rank failed",
                        f->name, ctx.rank, sig, (long long)ctx.fail_cell);
        return fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s on rank %d: wait "
                    "on %s[%lld] timed out after %lld ms (waiting for %llu, "
                    "saw %llu)", f->name, ctx.rank, sig,
                    (long long)ctx.fail_cell,
                    (long long)(ctx.timeout_ms > 0 ? ctx.timeout_ms : 5000),
                    (unsigned long long)ctx.fail_expected,
                    (unsigned long long)ctx.fail_seen);
    }
    return BLKC_OK;
}

static blkc_status run(const IrFunc *f, BkRangeFn fn, const blkc_arg *args,
                       const blkc_launch_options *opts, const RtWorldView *wv,
                       int64_t grid_out[3], Work *w, char *err, size_t errlen)
{
    for (int s = 0; s < f->nsyms; s++)
        w->symval[s] = -1;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        blkc_status st;
        memset(w->shapes[i], 0, sizeof w->shapes[i]);
        if (p->kind == PK_TENSOR) {
            st = check_tensor(f, i, &args[i], w, err, errlen);
        } else {
            st = check_scalar(p, &args[i], &w->slots[i], &w->sv[i], err,
                              errlen);
            w->argv[i] = &w->slots[i];
        }
        if (st != BLKC_OK)
            return st;
    }
    int64_t grid[3] = {1, 1, 1};
    if (opts && (opts->grid[0] || opts->grid[1] || opts->grid[2])) {
        for (int a = 0; a < 3; a++) {
            grid[a] = opts->grid[a] ? opts->grid[a] : 1;
            if (grid[a] < 0)
                return fail(BLKC_ERR_USAGE, err, errlen, "grid override %lld "
                            "along axis %d is negative",
                            (long long)grid[a], a);
        }
    } else {
        IrLaunchEnv env = {w->sv, (const int64_t(*)[IR_MAX_RANK])w->shapes};
        char msg[256] = "";
        if (ir_eval_grid(f, &env, grid, msg, sizeof msg) != 0)
            return fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: %s",
                        f->name, msg[0] ? msg : "cannot evaluate the grid");
    }
    if (grid_out)
        memcpy(grid_out, grid, sizeof grid);
    return execute(f, fn, w->argv, grid, wv, err, errlen);
}

blkc_status rt_cpu_launch(const IrFunc *f, BkRangeFn fn, const blkc_arg *args,
                          int nargs, const blkc_launch_options *opts,
                          int64_t grid_out[3], char *err, size_t errlen)
{
    return rt_cpu_launch_ranked(f, fn, args, nargs, opts, NULL, grid_out, err,
                                errlen);
}

blkc_status rt_cpu_launch_ranked(const IrFunc *f, BkRangeFn fn,
                                 const blkc_arg *args, int nargs,
                                 const blkc_launch_options *opts,
                                 const RtWorldView *wv, int64_t grid_out[3],
                                 char *err, size_t errlen)
{
    if (!f || !fn)
        return fail(BLKC_ERR_USAGE, err, errlen, "no kernel");
    if (nargs != f->nparams)
        return fail(BLKC_ERR_USAGE, err, errlen, "kernel %s takes %d "
                    "argument%s, got %d", f->name, f->nparams,
                    f->nparams == 1 ? "" : "s", nargs);
    if (nargs > 0 && !args)
        return fail(BLKC_ERR_USAGE, err, errlen, "kernel %s: NULL args",
                    f->name);
    int np = f->nparams, ns = f->nsyms;
    if (np <= RT_SMALL && ns <= RT_SMALL) {
        BkTensorDesc desc[RT_SMALL];
        RtSlot slots[RT_SMALL];
        void *argv[RT_SMALL];
        IrScalarVal sv[RT_SMALL];
        int64_t shapes[RT_SMALL][IR_MAX_RANK];
        int64_t symval[RT_SMALL];
        int symfrom[RT_SMALL];
        memset(sv, 0, sizeof sv);
        Work w = {desc, slots, argv, sv, shapes, symval, symfrom};
        return run(f, fn, args, opts, wv, grid_out, &w, err, errlen);
    }
    Work w;
    w.desc = calloc((size_t)np + 1, sizeof *w.desc);
    w.slots = calloc((size_t)np + 1, sizeof *w.slots);
    w.argv = calloc((size_t)np + 1, sizeof *w.argv);
    w.sv = calloc((size_t)np + 1, sizeof *w.sv);
    w.shapes = calloc((size_t)np + 1, sizeof *w.shapes);
    w.symval = calloc((size_t)ns + 1, sizeof *w.symval);
    w.symfrom = calloc((size_t)ns + 1, sizeof *w.symfrom);
    blkc_status st;
    if (!w.desc || !w.slots || !w.argv || !w.sv || !w.shapes || !w.symval ||
        !w.symfrom)
        st = fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
    else
        st = run(f, fn, args, opts, wv, grid_out, &w, err, errlen);
    free(w.desc);
    free(w.slots);
    free(w.argv);
    free(w.sv);
    free(w.shapes);
    free(w.symval);
    free(w.symfrom);
    return st;
}
