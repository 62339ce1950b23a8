/* tune.c — autotuning: the configuration space ("NAME=V1,V2,..." lists and
 * their product), the shape-bucket key, the remembered choices (memory and
 * disk), timing, and the public blkc_kernel_autotune built on the public
 * module/launch API (so every configuration goes through the JIT cache).
 * The CLI's `run --tune` uses the same pieces on its own launcher. */
#include "cache.h"
#include "../runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void jc_tune_free(JcTuneSpace *ts)
{
    for (int i = 0; i < ts->nparams; i++) {
        free(ts->names[i]);
        free(ts->vals[i]);
    }
    memset(ts, 0, sizeof *ts);
}

int jc_tune_parse(JcTuneSpace *ts, const char *const *spec, int n,
                  char *err, size_t errlen)
{
    memset(ts, 0, sizeof *ts);
    ts->nconfigs = 1;
    if (n < 0 || n > 16 || (n && !spec)) {
        snprintf(err, errlen, "a tuning space has 1 to 16 parameters");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *s = spec[i], *eq = s ? strchr(s, '=') : NULL;
        if (!eq || eq == s || !eq[1]) {
            snprintf(err, errlen, "bad tuning parameter '%s': expected "
                     "NAME=V1,V2,...", s ? s : "(null)");
            jc_tune_free(ts);
            return -1;
        }
        int k = ts->nparams++;
        ts->names[k] = malloc((size_t)(eq - s) + 1);
        ts->vals[k] = malloc(sizeof(int64_t) * (strlen(eq) + 1));
        if (!ts->names[k] || !ts->vals[k]) {
            snprintf(err, errlen, "out of memory");
            jc_tune_free(ts);
            return -1;
        }
        memcpy(ts->names[k], s, (size_t)(eq - s));
        ts->names[k][eq - s] = 0;
        for (int j = 0; j < k; j++)
            if (strcmp(ts->names[j], ts->names[k]) == 0) {
                snprintf(err, errlen, "tuning parameter %s given twice",
                         ts->names[k]);
                jc_tune_free(ts);
                return -1;
            }
        const char *p = eq + 1;
        for (;;) {
            char *end;
            long long v = strtoll(p, &end, 0);
            if (end == p || (*end && *end != ',')) {
                snprintf(err, errlen, "bad tuning value in '%s': expected "
                         "integers separated by commas", s);
                jc_tune_free(ts);
                return -1;
            }
            ts->vals[k][ts->nvals[k]++] = v;
            if (!*end)
                break;
            p = end + 1;
        }
        if ((int64_t)ts->nconfigs * ts->nvals[k] > JC_TUNE_MAX) {
            snprintf(err, errlen, "the tuning space has more than %d "
                     "configurations", JC_TUNE_MAX);
            jc_tune_free(ts);
            return -1;
        }
        ts->nconfigs *= ts->nvals[k];
    }
    return 0;
}

int jc_tune_config(const JcTuneSpace *ts, int i, char *buf, size_t n,
                   const char **defs)
{
    size_t k = 0;
    for (int p = ts->nparams - 1; p >= 0; p--) {
        int j = i % ts->nvals[p];
        i /= ts->nvals[p];
        int w = snprintf(buf + k, n > k ? n - k : 0, "%s=%lld", ts->names[p],
                         (long long)ts->vals[p][j]);
        if (w < 0 || k + (size_t)w + 1 > n)
            return -1;
        defs[p] = buf + k;
        k += (size_t)w + 1;
    }
    return 0;
}

/* "BM=64 BN=128" */
void jc_tune_text(const JcTuneSpace *ts, int i, char *out, size_t n)
{
    char buf[1024];
    const char *defs[16];
    if (!out || !n)
        return;
    out[0] = 0;
    if (jc_tune_config(ts, i, buf, sizeof buf, defs) != 0)
        return;
    size_t k = 0;
    for (int p = 0; p < ts->nparams && k < n; p++)
        k += (size_t)snprintf(out + k, n - k, "%s%s", p ? " " : "", defs[p]);
}

static int64_t pow2_ceil(int64_t v)
{
    int64_t b = 1;
    while (b < v && b < ((int64_t)1 << 62))
        b <<= 1;
    return v <= 0 ? v : b;
}

void jc_tune_key(const JcSrc *src, const char *kernel, const JcTuneSpace *ts,
                 const blkc_arg *args, int nargs, uint8_t key[32])
{
    JcSha s;
    jc_key_begin(&s, src);
    jc_sha_str(&s, "tune");
    jc_sha_str(&s, kernel);
    for (int p = 0; p < ts->nparams; p++) {
        jc_sha_str(&s, ts->names[p]);
        for (int j = 0; j < ts->nvals[p]; j++)
            jc_sha_i64(&s, ts->vals[p][j]);
    }
    for (int i = 0; args && i < nargs; i++) {
        const DLTensor *t = args[i].v.tensor;
        jc_sha_i64(&s, args[i].kind);
        if (args[i].kind != BLKC_ARG_TENSOR || !t)
            continue;
        jc_sha_i64(&s, t->ndim);
        for (int d = 0; t->shape && d < t->ndim; d++)
            jc_sha_i64(&s, pow2_ceil(t->shape[d]));
    }
    jc_sha_done(&s, key);
}

/* ------------------------------------------------------------ choices */

typedef struct Choice {
    uint8_t key[32];
    int config;
    struct Choice *next;
} Choice;

static pthread_mutex_t choice_lock = PTHREAD_MUTEX_INITIALIZER;
static Choice *choices;

int jc_tune_lookup(const uint8_t key[32], int nconfigs)
{
    int found = -1;
    pthread_mutex_lock(&choice_lock);
    for (Choice *c = choices; c && found < 0; c = c->next)
        if (memcmp(c->key, key, 32) == 0)
            found = c->config;
    pthread_mutex_unlock(&choice_lock);
    if (found >= 0)
        return found < nconfigs ? found : -1;
    void *data;
    size_t len;
    if (jc_disk_get(key, &data, &len) != 0)
        return -1;
    char buf[32] = "";
    memcpy(buf, data, len < sizeof buf - 1 ? len : sizeof buf - 1);
    free(data);
    int v = -1;
    if (sscanf(buf, "config=%d", &v) != 1 || v < 0 || v >= nconfigs)
        return -1;
    jc_tune_store(key, v); /* remember in memory too (and refresh disk) */
    return v;
}

void jc_tune_store(const uint8_t key[32], int config)
{
    pthread_mutex_lock(&choice_lock);
    Choice *c = choices;
    while (c && memcmp(c->key, key, 32) != 0)
        c = c->next;
    if (!c && (c = calloc(1, sizeof *c))) {
        memcpy(c->key, key, 32);
        c->next = choices;
        choices = c;
    }
    if (c)
        c->config = config;
    pthread_mutex_unlock(&choice_lock);
    char buf[32];
    int n = snprintf(buf, sizeof buf, "config=%d\n", config);
    jc_disk_put(key, buf, (size_t)n);
}

/* ------------------------------------------------------------ timing */

double jc_tune_time(const IrFunc *f, BkRangeFn fn, const blkc_arg *args,
                    int nargs, int reps)
{
    char err[256];
    if (rt_cpu_launch(f, fn, args, nargs, NULL, NULL, err, sizeof err))
        return -1;
    double best = -1;
    for (int r = 0; r < (reps > 0 ? reps : 5); r++) {
        double t0 = now_ms();
        if (rt_cpu_launch(f, fn, args, nargs, NULL, NULL, err, sizeof err))
            return -1;
        double t = now_ms() - t0;
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

struct JcSaved {
    int n;
    struct { void *dst; void *copy; size_t bytes; } t[];
};

JcSaved *jc_save_tensors(const blkc_arg *args, int nargs)
{
    JcSaved *s = calloc(1, sizeof *s + (size_t)(nargs > 0 ? nargs : 0) *
                                         sizeof s->t[0]);
    for (int i = 0; s && i < nargs; i++) {
        const DLTensor *t = args[i].v.tensor;
        if (args[i].kind != BLKC_ARG_TENSOR || !t || !t->data ||
            t->device.device_type != kDLCPU)
            continue;
        int64_t span = 1, stride = 1; /* furthest element + 1 */
        bool ok = true;
        for (int d = t->ndim - 1; d >= 0 && ok; d--) {
            int64_t st = t->strides ? t->strides[d] : stride;
            if (t->shape[d] == 0)
                span = 0;
            ok = st >= 0;
            if (span)
                span += (t->shape[d] - 1) * st;
            stride *= t->shape[d] ? t->shape[d] : 1;
        }
        size_t bytes = (size_t)span * ((t->dtype.bits * t->dtype.lanes + 7) / 8);
        if (!ok || !bytes)
            continue;
        void *dst = (char *)t->data + t->byte_offset, *copy = malloc(bytes);
        if (!copy)
            continue;
        memcpy(copy, dst, bytes);
        s->t[s->n].dst = dst;
        s->t[s->n].copy = copy;
        s->t[s->n].bytes = bytes;
        s->n++;
    }
    return s;
}

void jc_restore_tensors(JcSaved *s)
{
    for (int i = 0; s && i < s->n; i++) {
        memcpy(s->t[i].dst, s->t[i].copy, s->t[i].bytes);
        free(s->t[i].copy);
    }
    free(s);
}

/* ------------------------------------------------------------ public */

BLKC_API void blkc_tune_options_init(blkc_tune_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

/* Compile config i (or the base when i < 0) into *m and find the kernel. */
static blkc_status build(blkc_context *ctx, const char *source, size_t len,
                         const blkc_compile_options *opts, const char *kernel,
                         const JcTuneSpace *ts, int i, blkc_module **m,
                         blkc_kernel **k)
{
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    if (opts)
        o = *opts;
    int nd = o.ndefines + ts->nparams;
    const char **defs = calloc((size_t)nd + 1, sizeof *defs);
    char buf[1024];
    if (!defs)
        return jc_api_error(BLKC_ERR_NOMEM, "out of memory");
    for (int d = 0; d < o.ndefines; d++)
        defs[d] = o.defines[d];
    if (jc_tune_config(ts, i, buf, sizeof buf, defs + o.ndefines) != 0) {
        free(defs);
        return jc_api_error(BLKC_ERR_USAGE, "tuning configuration too long");
    }
    o.defines = defs;
    o.ndefines = nd;
    blkc_status st = blkc_module_create(ctx, source, len, &o, m);
    free(defs);
    if (st == BLKC_OK && (st = blkc_module_get_kernel(*m, kernel, k)) != 0) {
        blkc_module_destroy(*m);
        *m = NULL;
    }
    return st;
}

static double time_kernel(blkc_kernel *k, const blkc_arg *args, int nargs,
                          int reps)
{
    if (blkc_kernel_launch(k, args, nargs, NULL) != BLKC_OK)
        return -1;
    double best = -1;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        if (blkc_kernel_launch(k, args, nargs, NULL) != BLKC_OK)
            return -1;
        double t = now_ms() - t0;
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

BLKC_API blkc_status blkc_kernel_autotune(
    blkc_context *ctx, const char *source, size_t len,
    const blkc_compile_options *opts, const char *kernel,
    const char *const *space, int nspace, const blkc_arg *args, int nargs,
    const blkc_tune_options *topts, blkc_module **out, char *config,
    size_t configlen)
{
    if (!out)
        return jc_api_error(BLKC_ERR_USAGE, "blkc_kernel_autotune: out is "
                            "NULL");
    *out = NULL;
    if (config && configlen)
        config[0] = 0;
    if (!source && len)
        return jc_api_error(BLKC_ERR_USAGE, "source is NULL");
    JcTuneSpace ts;
    char err[512];
    if (nspace < 1 || jc_tune_parse(&ts, space, nspace, err, sizeof err))
        return jc_api_error(BLKC_ERR_USAGE, nspace < 1 ? "empty tuning space"
                                                       : err);
    int reps = topts && topts->reps > 0 ? topts->reps : 5;
    JcSrc src = {source, len, opts ? opts->defines : NULL,
                 opts ? opts->ndefines : 0, "cpu", opts ? opts->arch : NULL,
                 opts && opts->opt_level ? opts->opt_level : 3, 0, 0};
    uint8_t key[32];
    jc_tune_key(&src, kernel, &ts, args, nargs, key);
    int best = topts && topts->force ? -1 : jc_tune_lookup(key, ts.nconfigs);
    blkc_module *m = NULL;
    blkc_kernel *k = NULL;
    blkc_status st = BLKC_OK;
    if (best >= 0 &&
        build(ctx, source, len, opts, kernel, &ts, best, &m, &k) == BLKC_OK) {
        jc_tune_text(&ts, best, config, configlen);
        jc_tune_free(&ts);
        *out = m;
        return BLKC_OK;
    }
    JcSaved *saved = jc_save_tensors(args, nargs);
    double best_t = -1;
    blkc_status first_err = BLKC_OK;
    char first_msg[1024] = "";
    best = -1;
    for (int i = 0; i < ts.nconfigs; i++) {
        st = build(ctx, source, len, opts, kernel, &ts, i, &m, &k);
        double t = st == BLKC_OK ? time_kernel(k, args, nargs, reps) : -1;
        if (t < 0 && first_err == BLKC_OK) {
            first_err = st != BLKC_OK ? st : BLKC_ERR_RUNTIME;
            snprintf(first_msg, sizeof first_msg, "%s", blkc_last_error());
        }
        if (t >= 0 && (best_t < 0 || t < best_t)) {
            best_t = t;
            best = i;
        }
        blkc_module_destroy(m);
        m = NULL;
    }
    jc_restore_tensors(saved);
    if (best < 0) {
        jc_tune_free(&ts);
        return jc_api_error(first_err ? first_err : BLKC_ERR_RUNTIME,
                            first_msg[0] ? first_msg : "no configuration ran");
    }
    jc_tune_store(key, best);
    st = build(ctx, source, len, opts, kernel, &ts, best, &m, &k);
    if (st == BLKC_OK) {
        jc_tune_text(&ts, best, config, configlen);
        *out = m;
    }
    jc_tune_free(&ts);
    return st;
}
