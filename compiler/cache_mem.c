/* cache_mem.c — the JIT cache's in-memory side (see cache.h): compiled
 * units per context (hot: found by source; warm: front end + the disk
 * object of cache.c; cold: compiled), the in-flight table that makes
 * threads asking for the same source wait for one build, and the per-kernel
 * tables of specialized variants with the pick a launch makes (eager, or
 * queued for the background compiler of spec_bg.c). Entry points:
 * jc_mem_new/free, jc_unit_get/ref/unref, jc_unit_pick/compile/variants. */
#include "cache.h"
#include "../runtime/rt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A source being compiled (the in-flight table): a thread that misses the
 * memory cache while another compiles the same source waits for that
 * compile's result (unit or error) instead of compiling it again. Heap
 * allocated and reference counted (the compiling thread and each waiter)
 * under the cache lock, so nobody waits on memory another thread frees. */
typedef struct JcFlight {
    struct JcFlight *next;    /* the table's chain */
    uint64_t hash;            /* src_hash of src */
    const JcSrc *src;         /* the compiling thread's (valid while linked) */
    int refs;                 /* compiling thread + waiters */
    bool done;                /* the result below is set */
    blkc_status st;           /* its status */
    JcUnit *unit;             /* on success (one reference held here) */
    char *err;                /* on failure: the message (may be NULL) */
} JcFlight;

struct JcMem {
    pthread_mutex_t lock;
    pthread_cond_t landed;    /* some in-flight compile finished */
    JcUnit *bucket[256];
    JcFlight *flights;        /* compiles in progress */
};

JcMem *jc_mem_new(void)
{
    JcMem *mc = calloc(1, sizeof *mc);
    if (mc) {
        pthread_mutex_init(&mc->lock, NULL);
        pthread_cond_init(&mc->landed, NULL);
    }
    return mc;
}

void jc_mem_free(JcMem *mc)
{
    if (!mc)
        return;
    for (int b = 0; b < 256; b++)
        for (JcUnit *u = mc->bucket[b], *nx; u; u = nx) {
            nx = u->next;
            jc_unit_unref(u);
        }
    pthread_mutex_destroy(&mc->lock);
    pthread_cond_destroy(&mc->landed);
    free(mc);
}

static void variant_free(JcVariant *v)
{
    if (!v)
        return;
    jc_code_free(v->code);
    ir_module_free(v->ir);
    free((void *)v->assume);
    free(v);
}

static void unit_free(JcUnit *u)
{
    for (int i = 0; u->vars && u->ir && i < u->ir->nfuncs; i++) {
        for (int k = 0; k < u->vars[i].n; k++)
            variant_free(u->vars[i].v[k]);
        pthread_mutex_destroy(&u->vars[i].lock);
    }
    free(u->vars);
    jc_code_free(u->code);
    ir_module_free(u->ir);
    for (int i = 0; i < u->ndefines; i++)
        free(u->defines[i]);
    free(u->defines);
    free(u->text);
    free(u->filename);
    free(u->arch);
    free(u);
}

void jc_unit_ref(JcUnit *u)
{
    __atomic_add_fetch(&u->refs, 1, __ATOMIC_RELAXED);
}

void jc_unit_unref(JcUnit *u)
{
    if (u && __atomic_sub_fetch(&u->refs, 1, __ATOMIC_ACQ_REL) == 0)
        unit_free(u);
}

static uint64_t src_hash(const JcSrc *src)
{
    uint64_t h = jc_fast_hash(0, src->text, src->len);
    for (int i = 0; i < src->ndefines; i++)
        h = jc_fast_hash(h, src->defines[i], strlen(src->defines[i]));
    if (src->arch)
        h = jc_fast_hash(h, src->arch, strlen(src->arch));
    return h ^ (uint64_t)src->opt_level;
}

/* the same source, defines, optimization level and arch (what a unit is
 * compiled from; target is not compared) */
static bool same_jcsrc(const JcSrc *a, const JcSrc *b)
{
    if (a->len != b->len || a->ndefines != b->ndefines ||
        a->opt_level != b->opt_level ||
        (a->arch == NULL) != (b->arch == NULL) ||
        (a->arch && strcmp(a->arch, b->arch) != 0) ||
        (a->len && memcmp(a->text, b->text, a->len) != 0))
        return false;
    for (int i = 0; i < a->ndefines; i++)
        if (strcmp(a->defines[i], b->defines[i]) != 0)
            return false;
    return true;
}

/* unit u was compiled from src (same_jcsrc on u's copies) */
static bool same_src(const JcUnit *u, const JcSrc *src)
{
    JcSrc us = {.text = u->text, .len = u->len,
                .defines = (const char *const *)u->defines, .ndefines = u->ndefines,
                .arch = u->arch, .opt_level = u->bo.opt_level};
    return u->switches == jc_codegen_switches() && same_jcsrc(&us, src);
}

/* Front end: source -> Core IR; diagnostics into err. */
static blkc_status front_end(const JcSrc *src, const char *filename,
                             IrModule **out, char *err, size_t errlen)
{
    DslSource s = {filename ? filename : "<input>", src->text, src->len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &s;
    IrModule *m = ir_compile_source(&s, &diags, src->defines, src->ndefines,
                                    NULL);
    blkc_status st = BLKC_OK;
    if (!m || diags.nerrors) {
        if (diags.nerrors)
            snprintf(err, errlen, "%s", diags.out.data ? diags.out.data
                                                       : "compile failed");
        else
            snprintf(err, errlen, "out of memory while compiling %s", s.name);
        st = diags.nerrors ? BLKC_ERR_COMPILE : BLKC_ERR_NOMEM;
        ir_module_free(m);
        m = NULL;
    }
    dsl_diags_free(&diags);
    *out = m;
    return st;
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* Front end + code (disk object or LLVM) for src: a new unit. */
static blkc_status build_unit(const JcSrc *src, const char *filename,
                              JcUnit **out, int *how, char *err,
                              size_t errlen)
{
    IrModule *ir;
    blkc_status st = front_end(src, filename, &ir, err, errlen);
    if (st != BLKC_OK)
        return st;
    JcUnit *u = calloc(1, sizeof *u);
    if (!u) {
        ir_module_free(ir);
        return snprintf(err, errlen, "out of memory"), BLKC_ERR_NOMEM;
    }
    u->refs = 1;
    u->ir = ir;
    u->text = dupn(src->text ? src->text : "", src->len);
    u->len = src->len;
    u->defines = calloc((size_t)src->ndefines + 1, sizeof *u->defines);
    u->ndefines = src->ndefines;
    u->filename = filename ? strdup(filename) : NULL;
    u->arch = src->arch ? strdup(src->arch) : NULL;
    u->bo.arch = u->arch;
    u->bo.opt_level = src->opt_level;
    u->isolate = src->isolate;
    u->mem_mb = src->mem_mb;
    u->switches = jc_codegen_switches();
    u->vars = calloc((size_t)ir->nfuncs + 1, sizeof *u->vars);
    for (int i = 0; u->vars && i < ir->nfuncs; i++)
        pthread_mutex_init(&u->vars[i].lock, NULL);
    bool oom = !u->text || !u->defines || !u->vars ||
               (filename && !u->filename) || (src->arch && !u->arch);
    for (int i = 0; !oom && i < src->ndefines; i++)
        oom = !(u->defines[i] = strdup(src->defines[i]));
    if (oom) {
        unit_free(u);
        return snprintf(err, errlen, "out of memory"), BLKC_ERR_NOMEM;
    }
    bool hit = false;
    if (ir->nfuncs > 0 &&
        jc_cpu_code(ir, &u->bo, src, "unit", &u->code, &hit, err, errlen)) {
        unit_free(u);
        return BLKC_ERR_RUNTIME;
    }
    u->from_disk = hit;
    *how = hit ? 1 : 0;
    *out = u;
    return BLKC_OK;
}

/* Drop a reference to f (mc->lock held). */
static void flight_unref(JcFlight *f)
{
    if (--f->refs > 0)
        return;
    if (f->unit)
        jc_unit_unref(f->unit);
    free(f->err);
    free(f);
}

blkc_status jc_unit_get(JcMem *mc, const JcSrc *src, const char *filename,
                        JcUnit **out, int *how, char *err, size_t errlen)
{
    *out = NULL;
    *how = 0;
    if (!mc)
        return build_unit(src, filename, out, how, err, errlen);
    uint64_t h = src_hash(src);
    JcUnit **head = &mc->bucket[h & 255];
    pthread_mutex_lock(&mc->lock);
    for (JcUnit *u = *head; u; u = u->next)
        if (same_src(u, src)) {
            jc_unit_ref(u);
            pthread_mutex_unlock(&mc->lock);
            *out = u;
            *how = 2;
            return BLKC_OK;
        }
    for (JcFlight *f = mc->flights; f; f = f->next)
        if (f->hash == h && same_jcsrc(f->src, src)) {
            /* being compiled by another thread: wait for its result */
            f->refs++;
            while (!f->done)
                pthread_cond_wait(&mc->landed, &mc->lock);
            blkc_status st = f->st;
            if (st == BLKC_OK) {
                jc_unit_ref(f->unit);
                *out = f->unit;
                *how = 2;
            } else {
                snprintf(err, errlen, "%s", f->err ? f->err : "compile failed");
            }
            flight_unref(f);
            pthread_mutex_unlock(&mc->lock);
            return st;
        }
    JcFlight *fl = calloc(1, sizeof *fl); /* NULL: compile unannounced */
    if (fl) {
        fl->hash = h;
        fl->src = src;
        fl->refs = 1;
        fl->next = mc->flights;
        mc->flights = fl;
    }
    pthread_mutex_unlock(&mc->lock);

    JcUnit *u = NULL;
    blkc_status st = build_unit(src, filename, &u, how, err, errlen);

    pthread_mutex_lock(&mc->lock);
    if (st == BLKC_OK) {
        JcUnit *dup = NULL;
        for (JcUnit *x = *head; x && !dup; x = x->next)
            if (same_src(x, src))
                dup = x;
        if (dup) { /* compiled unannounced by another thread: share it */
            jc_unit_ref(dup);
            jc_unit_unref(u);
            u = dup;
        } else {
            jc_unit_ref(u); /* the cache's reference */
            u->next = *head;
            *head = u;
        }
    }
    if (fl) {
        for (JcFlight **pp = &mc->flights; *pp; pp = &(*pp)->next)
            if (*pp == fl) {
                *pp = fl->next;
                break;
            }
        fl->src = NULL;
        fl->done = true;
        fl->st = st;
        if (st == BLKC_OK) {
            jc_unit_ref(u);
            fl->unit = u;
        } else {
            fl->err = strdup(err);
        }
        if (fl->refs > 1)
            pthread_cond_broadcast(&mc->landed);
        flight_unref(fl);
    }
    pthread_mutex_unlock(&mc->lock);
    *out = st == BLKC_OK ? u : NULL;
    return st;
}

/* Compile the variant of function fi for sig (kv->lock held). */
static JcVariant *compile_variant(JcUnit *u, int fi, const uint32_t *sig)
{
    const IrFunc *g = u->ir->funcs[fi];
    JcSrc src = {u->text, u->len, (const char *const *)u->defines,
                 u->ndefines, "cpu", u->arch, u->bo.opt_level, u->isolate,
                 u->mem_mb};
    char err[1024];
    JcVariant *v = calloc(1, sizeof *v);
    uint32_t *as = calloc((size_t)g->nparams + 1, sizeof *as);
    if (!v || !as || front_end(&src, u->filename, &v->ir, err, sizeof err) ||
        v->ir->nfuncs != u->ir->nfuncs) {
        free(as);
        variant_free(v);
        return NULL;
    }
    IrFunc *f = v->ir->funcs[fi];
    for (int p = 0; p < f->nparams; p++) {
        as[p] = f->params[p].assume = sig[p];
        v->nbits += __builtin_popcount(sig[p]);
    }
    v->assume = as;
    v->func = f;
    IrModule view;
    memset(&view, 0, sizeof view);
    view.funcs = &v->ir->funcs[fi];
    view.nfuncs = 1;
    char extra[600];
    snprintf(extra, sizeof extra, "variant:%s", f->name);
    if (jc_cpu_code(&view, &u->bo, &src, extra, &v->code, NULL, err,
                    sizeof err) != 0 ||
        !(v->range = jc_code_range(v->code, f->name))) {
        variant_free(v);
        return NULL;
    }
    return v;
}

/* The exact variant of function fi for sig, and the most specialized one
 * that fits (either may be NULL); published variants are read without the
 * lock. */
static const JcVariant *find_variant(JcUnit *u, int fi, const uint32_t *sig,
                                     const JcVariant **best, int *nout)
{
    const IrFunc *g = u->ir->funcs[fi];
    JcKernelVars *kv = &u->vars[fi];
    int n = __atomic_load_n(&kv->n, __ATOMIC_ACQUIRE);
    *best = NULL;
    if (nout)
        *nout = n;
    for (int i = 0; i < n; i++) {
        const JcVariant *v = __atomic_load_n(&kv->v[i], __ATOMIC_ACQUIRE);
        bool exact = true, fits = true;
        for (int p = 0; p < g->nparams; p++) {
            exact &= v->assume[p] == sig[p];
            fits &= (v->assume[p] & ~sig[p]) == 0;
        }
        if (exact)
            return v;
        if (fits && (!*best || v->nbits > (*best)->nbits))
            *best = v;
    }
    return NULL;
}

static bool any_fact(const JcUnit *u, int fi, const uint32_t *sig)
{
    bool any = false;
    for (int p = 0; p < u->ir->funcs[fi]->nparams; p++)
        any |= sig[p] != 0;
    return any;
}

int jc_unit_compile(JcUnit *u, int fi, const uint32_t *sig)
{
    if (!any_fact(u, fi, sig))
        return 0; /* the generic code is the variant */
    const JcVariant *best;
    if (find_variant(u, fi, sig, &best, NULL))
        return 0;
    JcKernelVars *kv = &u->vars[fi];
    int rc = 0;
    pthread_mutex_lock(&kv->lock);
    int n;
    if (!find_variant(u, fi, sig, &best, &n)) {
        JcVariant *v = n < JC_MAX_VARIANTS ? compile_variant(u, fi, sig) : NULL;
        if (v) {
            __atomic_store_n(&kv->v[n], v, __ATOMIC_RELEASE);
            __atomic_store_n(&kv->n, n + 1, __ATOMIC_RELEASE);
        } else {
            rc = -1;
        }
    }
    pthread_mutex_unlock(&kv->lock);
    return rc;
}

int jc_unit_variants(const JcUnit *u, int fi)
{
    return __atomic_load_n(&u->vars[fi].n, __ATOMIC_ACQUIRE);
}

void jc_unit_pick(JcUnit *u, int fi, const uint32_t *sig, blkc_specialize mode,
                  const IrFunc **func, BkRangeFn *range)
{
    if (!sig || !any_fact(u, fi, sig))
        return;
    if (mode == BLKC_SPECIALIZE_DEFAULT)
        mode = rt_specialize_env() ? BLKC_SPECIALIZE_EAGER : BLKC_SPECIALIZE_OFF;
    const JcVariant *best;
    int n;
    const JcVariant *v = find_variant(u, fi, sig, &best, &n);
    if (!v && n < JC_MAX_VARIANTS) {
        if (mode == BLKC_SPECIALIZE_EAGER) {
            if (jc_unit_compile(u, fi, sig) == 0)
                v = find_variant(u, fi, sig, &best, NULL);
        } else if (mode == BLKC_SPECIALIZE_BACKGROUND) {
            jc_spec_enqueue(u, fi, sig); /* this launch: what exists */
        }
    }
    if (!v)
        v = best;
    if (v) {
        *func = v->func;
        *range = v->range;
    }
}
