/* api_launch.c — libblkc's short launches (include/blkc/blkc.h,
 * docs/api.md): blkc_tensor_init (a tensor argument in one call) and
 * blkc_kernel_launchf (a launch from a format string, one line at a call
 * site). */
#include "api.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

BLKC_API blkc_status blkc_tensor_init(blkc_tensor *t, void *data,
                                      DLDataType dtype, int ndim,
                                      const int64_t *shape,
                                      const int64_t *strides)
{
    if (!t)
        return api_err(BLKC_ERR_USAGE, "blkc_tensor_init: t is NULL");
    memset(t, 0, sizeof *t);
    t->dl.data = data;
    t->dl.device.device_type = kDLCPU;
    t->dl.dtype = dtype;
    t->dl.ndim = -1; /* refused by every launch until it is well formed */
    if (ndim < 0 || ndim > BLKC_MAX_DIMS)
        return api_err(BLKC_ERR_USAGE, "blkc_tensor_init: ndim %d is not "
                       "0..%d", ndim, BLKC_MAX_DIMS);
    if (ndim > 0 && !shape)
        return api_err(BLKC_ERR_USAGE, "blkc_tensor_init: shape is NULL");
    t->dl.ndim = ndim;
    t->dl.shape = t->shape;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    if (strides) {
        for (int d = 0; d < ndim; d++)
            t->strides[d] = strides[d];
        t->dl.strides = t->strides;
    }
    return BLKC_OK;
}

/* ------------------------------------------------------------ launchf */

static const struct { const char *name; uint8_t code, bits; } fmt_dtypes[] = {
    {"f32", kDLFloat, 32}, {"f16", kDLFloat, 16}, {"f64", kDLFloat, 64},
    {"bf16", kDLBfloat, 16}, {"i8", kDLInt, 8}, {"i16", kDLInt, 16},
    {"i32", kDLInt, 32}, {"i64", kDLInt, 64}, {"u8", kDLUInt, 8},
    {"u16", kDLUInt, 16}, {"u32", kDLUInt, 32}, {"u64", kDLUInt, 64},
    {"bool", kDLBool, 8},
};

/* The index in fmt_dtypes of the len characters at p, or -1 (at every
 * launch: no strlen per entry) */
static int fmt_dtype(const char *p, size_t len)
{
    for (int i = 0; i < (int)(sizeof fmt_dtypes / sizeof *fmt_dtypes); i++) {
        const char *n = fmt_dtypes[i].name;
        size_t j = 0;
        while (j < len && n[j] == p[j])
            j++;
        if (j == len && n[j] == 0)
            return i;
    }
    return -1;
}

/* One "DTYPE[E,...]" item at *pp (after the dtype name): fills t. */
static blkc_status fmt_tensor(const char **pp, va_list *ap, DLDataType dt,
                              int item, blkc_tensor *t)
{
    const char *p = *pp;
    void *data = va_arg(*ap, void *);
    int64_t shape[BLKC_MAX_DIMS];
    int nd = 0;
    p++; /* '[' */
    while (*p != ']') {
        if (nd == BLKC_MAX_DIMS)
            return api_err(BLKC_ERR_USAGE, "launchf item %d: more than %d "
                           "extents", item + 1, BLKC_MAX_DIMS);
        if (*p == '#') {
            shape[nd++] = va_arg(*ap, int);
            p++;
        } else if (*p >= '0' && *p <= '9') {
            char *end;
            shape[nd++] = strtoll(p, &end, 10);
            p = end;
        } else {
            return api_err(BLKC_ERR_USAGE, "launchf item %d: an extent is "
                           "'#' or a number, not '%c'", item + 1,
                           *p ? *p : ' ');
        }
        if (*p == ',')
            p++;
        else if (*p != ']')
            return api_err(BLKC_ERR_USAGE, "launchf item %d: expected ',' or "
                           "']'", item + 1);
    }
    *pp = p + 1;
    return blkc_tensor_init(t, data, dt, nd, shape, NULL);
}

BLKC_API blkc_status blkc_kernel_launchf(blkc_kernel *k, const char *fmt, ...)
{
    if (!k || !fmt)
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_launchf: %s is NULL",
                       !k ? "kernel" : "fmt");
    const IrFunc *f = k->func;
    if (f->nparams > 64)
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_launchf: %s has more "
                       "than 64 parameters", f->name);
    blkc_arg args[64];
    blkc_tensor tens[64]; /* the launch's own: no allocation */
    va_list ap;
    va_start(ap, fmt);
    blkc_status st = BLKC_OK;
    const char *p = fmt;
    int n = 0;
    for (;; n++) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        if (n == f->nparams) {
            st = api_err(BLKC_ERR_USAGE, "launchf: '%s' has more items than "
                         "%s has parameters (%d)", fmt, f->name, f->nparams);
            break;
        }
        bool is_t = f->params[n].kind == PK_TENSOR;
        char c = *p;
        bool letter = strchr("ilftT", c) && (p[1] == ' ' || p[1] == 0);
        bool item_t = !letter || c == 't' || c == 'T';
        if (item_t != is_t) {
            st = api_err(BLKC_ERR_USAGE, "launchf item %d: parameter '%s' of "
                         "%s is a %s", n + 1, f->params[n].name, f->name,
                         is_t ? "tensor" : "scalar");
            break;
        }
        if (letter) {
            if (c == 'i')
                args[n] = blkc_arg_int(va_arg(ap, int));
            else if (c == 'l')
                args[n] = blkc_arg_int(va_arg(ap, int64_t));
            else if (c == 'f')
                args[n] = blkc_arg_float(va_arg(ap, double));
            else if (c == 't')
                args[n] = blkc_arg_dl(va_arg(ap, const DLTensor *));
            else
                args[n] = blkc_arg_tensor(va_arg(ap, const blkc_tensor *));
            p++;
            continue;
        }
        size_t len = strcspn(p, "[ ");
        int d = fmt_dtype(p, len);
        if (d < 0 || p[len] != '[') {
            st = api_err(BLKC_ERR_USAGE, "launchf item %d: '%.*s' is not "
                         "DTYPE[...], t, T, i, l or f", n + 1, (int)len, p);
            break;
        }
        p += len;
        st = fmt_tensor(&p, &ap, BLKC_DT(fmt_dtypes[d].code,
                                         fmt_dtypes[d].bits), n, &tens[n]);
        if (st != BLKC_OK)
            break;
        args[n] = blkc_arg_tensor(&tens[n]);
    }
    va_end(ap);
    if (st == BLKC_OK && n < f->nparams)
        st = api_err(BLKC_ERR_USAGE, "launchf: '%s' has %d items but %s has "
                     "%d parameters", fmt, n, f->name, f->nparams);
    if (st == BLKC_OK)
        st = blkc_kernel_launch(k, args, n, NULL);
    return st;
}
