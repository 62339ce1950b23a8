/* bind.c — the argument checks and bindings the CPU and GPU launchers
 * share: each blkc_arg against the kernel's IrParams (kinds, DLTensor
 * device/dtype/rank, static extents, symbolic sizes agreeing), the tensor
 * descriptors and scalar slots, and the grid from ir_eval_grid. What a
 * launcher does with them (the CPU ABI array, a packed GPU buffer) and
 * which devices it accepts stay with it. Also the launch facts
 * (IR_ASSUME_*) of the arguments that specialized variants are picked by,
 * and the aliasing rule (a written tensor overlaps no other argument
 * unless it is the same view). */
#include "rt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

blkc_status rt_fail(blkc_status s, char *err, size_t errlen, const char *fmt,
                    ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return s;
}

blkc_status rt_assert_fail(const IrFunc *f, const BkLaunchCtx *ctx, char *err,
                           size_t errlen)
{
    const char *msg = ctx->assert_msg >= 0 && ctx->assert_msg < f->nmsgs
                          ? f->msgs[ctx->assert_msg] : "?";
    return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "%s:%d: kernel %s: assertion "
                   "failed in program (%d, %d, %d): %s",
                   f->file ? f->file : "<input>", (int)ctx->assert_line, f->name,
                   (int)ctx->assert_pid[0], (int)ctx->assert_pid[1],
                   (int)ctx->assert_pid[2], msg);
}

static blkc_status bind_scalar(const IrParam *p, const blkc_arg *a,
                               RtSlot *slot, IrScalarVal *sv, char *err,
                               size_t errlen)
{
    int dt = p->dtype;
    slot->u = 0;
    if (dsl_is_float(dt)) {
        if (a->kind != BLKC_ARG_FLOAT)
            return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s is a %s "
                           "scalar: pass BLKC_ARG_FLOAT", p->name,
                           dsl_dtype_name(dt));
        rt_store_f64(slot->b, dt, a->v.f);
        sv->f = a->v.f;
        return BLKC_OK;
    }
    if (a->kind != BLKC_ARG_INT)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s is a %s "
                       "scalar: pass BLKC_ARG_INT", p->name,
                       dsl_dtype_name(dt));
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
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "value %lld is out of "
                       "range for parameter %s: %s", (long long)v, p->name,
                       dsl_dtype_name(dt));
    rt_store_i64(slot->b, dt, v);
    sv->i = v;
    return BLKC_OK;
}

static blkc_status bind_tensor(const IrFunc *f, int pi, const blkc_arg *a,
                               const RtBindDevice *dev, RtBind *b, char *err,
                               size_t errlen)
{
    const IrParam *p = &f->params[pi];
    if (a->kind != BLKC_ARG_TENSOR)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s is a "
                       "tensor: pass BLKC_ARG_TENSOR", p->name);
    const DLTensor *t = a->v.tensor;
    if (!t)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: NULL "
                       "DLTensor", p->name);
    blkc_status st = dev->check(dev->ctx, p, t, err, errlen);
    if (st != BLKC_OK)
        return st;
    int dt = rt_dtype_from_dl(t->dtype);
    if (dt != p->dtype) {
        char got[32];
        if (dt >= 0)
            snprintf(got, sizeof got, "%s", dsl_dtype_name(dt));
        else if (dev->dtype_detail)
            snprintf(got, sizeof got, "code %u bits %u lanes %u",
                     t->dtype.code, t->dtype.bits, t->dtype.lanes);
        else
            snprintf(got, sizeof got, "?");
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "dtype mismatch: "
                       "parameter %s is %s but the tensor is %s", p->name,
                       dsl_dtype_name(p->dtype), got);
    }
    if (t->ndim != p->rank)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "rank mismatch: parameter "
                       "%s has %d dims but the tensor has %d", p->name,
                       p->rank, (int)t->ndim);
    if (p->rank > 0 && !t->shape)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: tensor has "
                       "no shape", p->name);
    BkTensorDesc *d = &b->desc[pi];
    int64_t numel = 1;
    for (int k = 0; k < p->rank; k++) {
        int64_t n = t->shape[k];
        if (n < 0)
            return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: "
                           "negative extent %lld in dim %d", p->name,
                           (long long)n, k);
        if (p->dims[k] >= 0 && n != p->dims[k])
            return rt_fail(BLKC_ERR_USAGE, err, errlen, "shape mismatch: "
                           "parameter %s dim %d is %lld but the tensor has "
                           "%lld", p->name, k, (long long)p->dims[k],
                           (long long)n);
        if (p->dims[k] < 0) {
            int s = (int)(-1 - p->dims[k]);
            if (s < 0 || s >= f->nsyms)
                return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "internal: bad "
                               "symbolic size in parameter %s", p->name);
            if (n > INT32_MAX)
                return rt_fail(BLKC_ERR_USAGE, err, errlen, "size %s = %lld "
                               "(from %s) does not fit i32", f->syms[s].name,
                               (long long)n, p->name);
            if (b->symval[s] < 0) {
                b->symval[s] = n;
                b->symfrom[s] = pi;
            } else if (b->symval[s] != n) {
                return rt_fail(BLKC_ERR_USAGE, err, errlen, "size mismatch: "
                               "%s is %lld from %s but %lld from %s",
                               f->syms[s].name, (long long)b->symval[s],
                               f->params[b->symfrom[s]].name, (long long)n,
                               p->name);
            }
        }
        d->shape[k] = n;
        b->shapes[pi][k] = n;
        if (n == 0)
            numel = 0; /* only emptiness matters here */
    }
    int64_t s = 1;
    for (int k = p->rank - 1; k >= 0; k--) {
        d->stride[k] = t->strides ? t->strides[k] : s;
        s *= d->shape[k] ? d->shape[k] : 1;
    }
    if (!t->data && numel != 0)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: NULL data",
                       p->name);
    d->data = (void *)((uintptr_t)t->data + t->byte_offset);
    return BLKC_OK;
}

/* Point b's arrays at its inline storage, or at the heap for big kernels. */
static blkc_status bind_storage(RtBind *b, int np, int ns, char *err,
                                size_t errlen)
{
    if (np <= RT_BIND_SMALL && ns <= RT_BIND_SMALL) {
        b->desc = b->small.desc;
        b->slots = b->small.slots;
        b->argv = b->small.argv;
        b->sv = b->small.sv;
        b->shapes = b->small.shapes;
        b->symval = b->small.symval;
        b->symfrom = b->small.symfrom;
        memset(b->sv, 0, (size_t)np * sizeof *b->sv);
        return BLKC_OK;
    }
    /* one block, its arrays in order of alignment (all sizes are
     * multiples of 8 but the last) */
    size_t p1 = (size_t)np + 1, s1 = (size_t)ns + 1;
    size_t bytes = p1 * (sizeof *b->desc + sizeof *b->slots +
                         sizeof *b->argv + sizeof *b->sv + sizeof *b->shapes) +
                   s1 * (sizeof *b->symval + sizeof *b->symfrom);
    char *m = b->heap = calloc(1, bytes);
    if (!m)
        return rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
    b->desc = (BkTensorDesc *)m;
    m += p1 * sizeof *b->desc;
    b->slots = (RtSlot *)m;
    m += p1 * sizeof *b->slots;
    b->argv = (void **)m;
    m += p1 * sizeof *b->argv;
    b->sv = (IrScalarVal *)m;
    m += p1 * sizeof *b->sv;
    b->shapes = (int64_t(*)[IR_MAX_RANK])m;
    m += p1 * sizeof *b->shapes;
    b->symval = (int64_t *)m;
    m += s1 * sizeof *b->symval;
    b->symfrom = (int *)m;
    return BLKC_OK;
}

/* ------------------------------------------------------------ aliasing
 * The rule (docs/api.md): a tensor the kernel writes may be the very same
 * view as another argument (in place), but its bytes may not meet another
 * argument's otherwise. Checked after every other argument check. */

/* The view's first and one-past-last byte (false: empty, or not a
 * well-formed tensor, which the launcher reports itself). */
static bool byte_range(const DLTensor *t, intptr_t *lo, intptr_t *hi)
{
    if (!t || !t->data || t->ndim < 0 || t->ndim > 8 ||
        (t->ndim && !t->shape))
        return false;
    int64_t es = ((int64_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
    int64_t a = 0, b = 0, stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d];
        if (n <= 0)
            return false;
        int64_t s = t->strides ? t->strides[d] : stride;
        if (s < 0)
            a += (n - 1) * s;
        else
            b += (n - 1) * s;
        stride *= n;
    }
    intptr_t base = (intptr_t)t->data + (intptr_t)t->byte_offset;
    *lo = base + (intptr_t)(a * es);
    *hi = base + (intptr_t)((b + 1) * es);
    return true;
}

static int64_t stride_of(const DLTensor *t, int d)
{
    if (t->strides)
        return t->strides[d];
    int64_t s = 1;
    for (int e = d + 1; e < t->ndim; e++)
        s *= t->shape[e];
    return s;
}

static bool same_view(const DLTensor *a, const DLTensor *b)
{
    if ((char *)a->data + a->byte_offset != (char *)b->data + b->byte_offset ||
        a->ndim != b->ndim || a->dtype.code != b->dtype.code ||
        a->dtype.bits != b->dtype.bits || a->dtype.lanes != b->dtype.lanes)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] ||
            (a->shape[d] > 1 && stride_of(a, d) != stride_of(b, d)))
            return false;
    return true;
}

static blkc_status check_alias(const IrFunc *f, const blkc_arg *args,
                               int nargs, char *err, size_t errlen)
{
    int n = nargs < f->nparams ? nargs : f->nparams;
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        intptr_t lo, hi, lo2, hi2;
        if (p->kind != PK_TENSOR || !p->written || p->local ||
            args[i].kind != BLKC_ARG_TENSOR ||
            !byte_range(args[i].v.tensor, &lo, &hi))
            continue;
        for (int j = 0; j < n; j++) {
            if (j == i || f->params[j].kind != PK_TENSOR || f->params[j].local ||
                args[j].kind != BLKC_ARG_TENSOR ||
                !byte_range(args[j].v.tensor, &lo2, &hi2) ||
                hi2 <= lo || hi <= lo2 ||
                same_view(args[i].v.tensor, args[j].v.tensor))
                continue;
            return rt_fail(BLKC_ERR_USAGE, err, errlen, "arguments '%s' and '%s' of %s "
                           "overlap but are not the same view ('%s' is "
                           "written; its bytes [0, %td) meet '%s' at offset "
                           "%td): pass the same tensor for an in-place update, "
                           "or disjoint memory", p->name, f->params[j].name,
                           f->name, p->name, hi - lo, f->params[j].name,
                           lo2 - lo);
        }
    }
    return BLKC_OK;
}

blkc_status rt_bind_args(RtBind *b, const IrFunc *f, const blkc_arg *args,
                         int nargs, const RtBindDevice *dev, char *err,
                         size_t errlen)
{
    b->heap = NULL;
    if (nargs != f->nparams)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "kernel %s takes %d "
                       "argument%s, got %d", f->name, f->nparams,
                       f->nparams == 1 ? "" : "s", nargs);
    if (nargs > 0 && !args)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "kernel %s: NULL args",
                       f->name);
    blkc_status st = bind_storage(b, f->nparams, f->nsyms, err, errlen);
    if (st != BLKC_OK)
        return st;
    for (int s = 0; s < f->nsyms; s++)
        b->symval[s] = -1;
    for (int i = 0; i < f->nparams; i++) {
        memset(b->shapes[i], 0, sizeof b->shapes[i]);
        if (f->params[i].kind == PK_TENSOR) {
            st = bind_tensor(f, i, &args[i], dev, b, err, errlen);
            b->argv[i] = &b->desc[i];
        } else {
            st = bind_scalar(&f->params[i], &args[i], &b->slots[i], &b->sv[i],
                             err, errlen);
            b->argv[i] = &b->slots[i];
        }
        if (st != BLKC_OK)
            return st;
    }
    return check_alias(f, args, nargs, err, errlen);
}

blkc_status rt_bind_grid(const RtBind *b, const IrFunc *f,
                         const blkc_launch_options *opts, int32_t rank,
                         int32_t world, int64_t grid[3], char *err,
                         size_t errlen)
{
    grid[0] = grid[1] = grid[2] = 1;
    if (opts && (opts->grid[0] || opts->grid[1] || opts->grid[2])) {
        for (int a = 0; a < 3; a++) {
            grid[a] = opts->grid[a] ? opts->grid[a] : 1;
            if (grid[a] < 0)
                return rt_fail(BLKC_ERR_USAGE, err, errlen, "grid override "
                               "%lld along axis %d is negative",
                               (long long)grid[a], a);
        }
        return BLKC_OK;
    }
    IrLaunchEnv env = {b->sv, (const int64_t(*)[IR_MAX_RANK])b->shapes,
                       rank, world};
    char msg[256] = "";
    if (ir_eval_grid(f, &env, grid, msg, sizeof msg) != 0)
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: %s", f->name,
                       msg[0] ? msg : "cannot evaluate the grid");
    return BLKC_OK;
}

void rt_bind_free(RtBind *b)
{
    free(b->heap);
    b->heap = NULL;
}

/* ------------------------------------------------------------ launch facts
 * The specialization facts of a launch's arguments (IR_ASSUME_*), which
 * the CPU variant pick (compiler/cache.c) and the GPU one (gpu_launch.c)
 * both key on. */

uint32_t rt_tensor_assume(const IrParam *p, const DLTensor *t)
{
    uint32_t a = 0;
    const char *data = (const char *)t->data + t->byte_offset;
    if (((uintptr_t)data & 15) == 0)
        a |= IR_ASSUME_ALIGN16;
    int r = p->rank;
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        int64_t sd = t->strides ? t->strides[d] : stride;
        if (d == r - 1 && sd == 1)
            a |= IR_ASSUME_UNIT_INNER;
        if (d < r - 1 && sd % 16 == 0)
            a |= IR_ASSUME_STRIDE16(d);
        if (p->dims[d] < 0 && t->shape[d] % 16 == 0)
            a |= IR_ASSUME_DIM16(d);
        stride *= t->shape[d] ? t->shape[d] : 1;
    }
    return a;
}

bool rt_specialize_env(void)
{
    static int on = -1; /* benign race: every thread computes the same */
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *s = getenv("BLKC_SPECIALIZE");
        v = !(s && strcmp(s, "0") == 0);
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

bool rt_signature(const IrFunc *f, const blkc_arg *args, int nargs,
                  uint32_t *sig)
{
    if (!args || nargs != f->nparams)
        return false;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        sig[i] = 0;
        if (p->kind != PK_TENSOR)
            continue;
        const DLTensor *t = args[i].v.tensor;
        if (args[i].kind != BLKC_ARG_TENSOR || !t || t->ndim != p->rank ||
            (p->rank && !t->shape))
            return false;
        sig[i] = rt_tensor_assume(p, t);
    }
    return true;
}
