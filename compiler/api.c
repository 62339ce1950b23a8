/* api.c — libblkc, the public C API (include/blkc/blkc.h): contexts,
 * modules compiled from .blk source and JIT'd for the CPU, kernel
 * introspection, launches with DLPack tensors, and stage emission. Tasks
 * and runs on N ranks are api_task.c.
 *
 * Errors are a status plus a thread-local message (blkc_last_error); the
 * library never prints, exits or aborts. Modules are immutable after
 * creation, so kernels may be launched from many threads at once. */
#include "api.h"
#include "isolate.h"
#include "../runtime/rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_ERR_BYTES 16384

struct blkc_context {
    blkc_target device;   /* where kernels of this context run */
    int device_id;        /* N of cuda:N / hip:N */
    RtGpu *gpu;           /* cuda:N / hip:N: the opened device (gpu.h) */
    JcMem *cache;         /* memory JIT cache (cache.c); NULL = none */
    char **defines;       /* context-wide defines, as "?NAME=VALUE"
                             (optional: lower.c ignores them unmatched) */
    int ndefines;
    blkc_specialize specialize; /* the modules' default (DEFAULT = env) */
    blkc_parallel_for_fn parallel_for; /* the caller's pool, or NULL */
    void *parallel_for_user;
};



static _Thread_local char last_err[API_ERR_BYTES];

blkc_status api_err(blkc_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_err, sizeof last_err, fmt, ap);
    va_end(ap);
    return s;
}

BLKC_API const char *blkc_version(void)
{
    return "0.1.0";
}

BLKC_API const char *blkc_last_error(void)
{
    return last_err;
}

BLKC_API const char *blkc_status_string(blkc_status s)
{
    switch (s) {
    case BLKC_OK: return "ok";
    case BLKC_ERR_COMPILE: return "compile error";
    case BLKC_ERR_USAGE: return "usage error";
    case BLKC_ERR_RUNTIME: return "runtime error";
    case BLKC_ERR_NOMEM: return "out of memory";
    case BLKC_ERR_NOT_FOUND: return "not found";
    case BLKC_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

BLKC_API void blkc_free(void *p)
{
    free(p);
}

/* ------------------------------------------------------------ contexts */

const char *api_target_name(blkc_target t)
{
    return t == BLKC_TARGET_CUDA ? "cuda" : t == BLKC_TARGET_HIP ? "hip"
                                                                  : "cpu";
}

BLKC_API void blkc_context_options_init(blkc_context_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

BLKC_API blkc_status blkc_context_create(const char *device,
                                         blkc_context **out)
{
    return blkc_context_create_ex(device, NULL, out);
}

/* Check context options (before a device is opened). */
static blkc_status check_context_options(const blkc_context_options *o)
{
    if (!o)
        return BLKC_OK;
    if (o->ndefines < 0 || (o->ndefines > 0 && !o->defines))
        return api_err(BLKC_ERR_USAGE, "bad context defines (%d given, "
                       "array %s)", o->ndefines, o->defines ? "set" : "NULL");
    for (int i = 0; i < o->ndefines; i++)
        if (!o->defines[i] || !strchr(o->defines[i], '=') ||
            o->defines[i][0] == '=' || o->defines[i][0] == '?')
            return api_err(BLKC_ERR_USAGE, "context define %d is not "
                           "NAME=VALUE", i);
    if ((unsigned)o->specialize > BLKC_SPECIALIZE_EAGER)
        return api_err(BLKC_ERR_USAGE, "specialize %d is not a "
                       "blkc_specialize", (int)o->specialize);
    if (o->num_threads < 0 || o->num_threads > 1024)
        return api_err(BLKC_ERR_USAGE, "num_threads %d is not 0..1024",
                       o->num_threads);
    if (o->pin_threads < 0 || o->pin_threads > 1)
        return api_err(BLKC_ERR_USAGE, "pin_threads %d is not 0 or 1",
                       o->pin_threads);
    if (o->num_threads || o->pin_threads) {
        char err[256];
        if (rt_pool_configure(o->num_threads, o->pin_threads, err,
                              sizeof err) != 0)
            return api_err(BLKC_ERR_UNSUPPORTED, "%s", err);
    }
    for (int i = 0; i < 8; i++)
        if (o->reserved[i])
            return api_err(BLKC_ERR_USAGE, "blkc_context_options.reserved[%d] "
                           "is not 0 (call blkc_context_options_init)", i);
    return BLKC_OK;
}

/* Copy the context's defines as optional ("?NAME=VALUE"). */
static blkc_status copy_context_defines(blkc_context *c,
                                        const blkc_context_options *o)
{
    if (!o || !o->ndefines)
        return BLKC_OK;
    c->defines = calloc((size_t)o->ndefines, sizeof *c->defines);
    if (!c->defines)
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < o->ndefines; i++) {
        size_t n = strlen(o->defines[i]);
        if (!(c->defines[i] = malloc(n + 2)))
            return api_err(BLKC_ERR_NOMEM, "out of memory");
        c->defines[i][0] = '?';
        memcpy(c->defines[i] + 1, o->defines[i], n + 1);
        c->ndefines = i + 1;
    }
    return BLKC_OK;
}

BLKC_API blkc_status blkc_context_create_ex(const char *device,
                                            const blkc_context_options *o,
                                            blkc_context **out)
{
    if (!out)
        return api_err(BLKC_ERR_USAGE, "blkc_context_create: out is NULL");
    *out = NULL;
    blkc_status cst = check_context_options(o);
    if (cst != BLKC_OK)
        return cst;
    if (!device)
        device = "cpu";
    blkc_target t;
    const char *rest;
    long id = 0;
    if (!strcmp(device, "cuda-emu") || !strcmp(device, "hip-emu")) {
        /* emulated devices (runtime/gpu_emu.c): tensors in host memory */
        t = device[0] == 'c' ? BLKC_TARGET_CUDA : BLKC_TARGET_HIP;
        rest = "";
        id = RT_GPU_EMU;
    } else if (strncmp(device, "cpu", 3) == 0) {
        t = BLKC_TARGET_CPU;
        rest = device + 3;
    } else if (strncmp(device, "cuda", 4) == 0) {
        t = BLKC_TARGET_CUDA;
        rest = device + 4;
    } else if (strncmp(device, "hip", 3) == 0) {
        t = BLKC_TARGET_HIP;
        rest = device + 3;
    } else {
        return api_err(BLKC_ERR_USAGE, "unknown device '%s' (cpu, cuda[:N], "
                       "hip[:N], cuda-emu, hip-emu)", device);
    }
    if (*rest == ':' && t != BLKC_TARGET_CPU) {
        char *end;
        errno = 0;
        id = strtol(rest + 1, &end, 10);
        if (end == rest + 1 || *end || id < 0 || id > 1023 || errno)
            return api_err(BLKC_ERR_USAGE, "bad device '%s'", device);
    } else if (*rest) {
        return api_err(BLKC_ERR_USAGE, "unknown device '%s' (cpu, cuda[:N], "
                       "hip[:N], cuda-emu, hip-emu)", device);
    }
    RtGpu *gpu = NULL;
    if (t != BLKC_TARGET_CPU) { /* the GPU runtime (runtime/gpu.h) */
        char err[1024] = "";
        blkc_status st = rt_gpu_open(t, (int)id, &gpu, err, sizeof err);
        if (st == BLKC_ERR_UNSUPPORTED)
            return api_err(st, "device %s is not supported here: %s", device,
                           err);
        if (st != BLKC_OK)
            return api_err(st, "device %s: %s", device, err);
    }
    blkc_context *c = calloc(1, sizeof *c);
    if (!c) {
        rt_gpu_close(gpu);
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    }
    c->gpu = gpu;
    c->device = t;
    c->device_id = (int)id;
    c->cache = jc_mem_new();
    c->specialize = o ? o->specialize : BLKC_SPECIALIZE_DEFAULT;
    c->parallel_for = o ? o->parallel_for : NULL;
    c->parallel_for_user = o ? o->parallel_for_user : NULL;
    if ((cst = copy_context_defines(c, o)) != BLKC_OK) {
        blkc_context_destroy(c);
        return cst;
    }
    *out = c;
    return BLKC_OK;
}

BLKC_API void blkc_context_destroy(blkc_context *ctx)
{
    if (ctx) {
        jc_mem_free(ctx->cache);
        rt_gpu_close(ctx->gpu);
        for (int i = 0; i < ctx->ndefines; i++)
            free(ctx->defines[i]);
        free(ctx->defines);
    }
    free(ctx);
}

/* ------------------------------------------------------------ compiling */

BLKC_API void blkc_compile_options_init(blkc_compile_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

/* Check options and copy source into a NUL-terminated buffer; a *lenp of
 * 0 means source is NUL-terminated (*lenp becomes its length). */
blkc_status api_prepare(const char *source, size_t *lenp,
                        const blkc_compile_options *o, char **text)
{
    *text = NULL;
    if (!source)
        return api_err(BLKC_ERR_USAGE, "source is NULL");
    if (!*lenp)
        *lenp = strnlen(source, (size_t)DSL_MAX_SOURCE + 1);
    size_t len = *lenp;
    if (len > DSL_MAX_SOURCE)
        return api_err(BLKC_ERR_USAGE, "source is too large (%zu bytes; the "
                       "limit is %u)", len, DSL_MAX_SOURCE);
    if (o) {
        if (o->target != BLKC_TARGET_CPU && o->target != BLKC_TARGET_CUDA &&
            o->target != BLKC_TARGET_HIP)
            return api_err(BLKC_ERR_USAGE, "unknown target %d", (int)o->target);
        if (o->ndefines < 0 || (o->ndefines > 0 && !o->defines))
            return api_err(BLKC_ERR_USAGE, "bad defines (%d given, array %s)",
                           o->ndefines, o->defines ? "set" : "NULL");
        for (int i = 0; i < o->ndefines; i++)
            if (!o->defines[i] || !strchr(o->defines[i], '=') ||
                o->defines[i][0] == '=')
                return api_err(BLKC_ERR_USAGE, "define %d is not NAME=VALUE",
                               i);
        if (o->opt_level < 0 || o->opt_level > 3)
            return api_err(BLKC_ERR_USAGE, "opt_level %d is not 0..3",
                           o->opt_level);
        if (o->isolate < -1 || o->isolate > 1)
            return api_err(BLKC_ERR_USAGE, "isolate %d is not -1, 0 or 1",
                           o->isolate);
        if (o->compile_mem_mb < 0)
            return api_err(BLKC_ERR_USAGE, "compile_mem_mb %d is negative",
                           o->compile_mem_mb);
        if (o->ignore_unknown_defines < 0 || o->ignore_unknown_defines > 1)
            return api_err(BLKC_ERR_USAGE, "ignore_unknown_defines %d is not "
                           "0 or 1", o->ignore_unknown_defines);
        if ((unsigned)o->specialize > BLKC_SPECIALIZE_EAGER)
            return api_err(BLKC_ERR_USAGE, "specialize %d is not a "
                           "blkc_specialize", (int)o->specialize);
    }
    char *t = malloc(len + 1);
    if (!t)
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    if (len)
        memcpy(t, source, len);
    t[len] = 0;
    *text = t;
    return BLKC_OK;
}

const char *api_src_name(const blkc_compile_options *o)
{
    return o && o->filename ? o->filename : "<input>";
}

/* Source -> Core IR; diagnostics become the last error. */
blkc_status api_compile_ir(const char *text, size_t len,
                           const blkc_compile_options *o, IrModule **out)
{
    DslSource src = {api_src_name(o), text, len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, o ? o->defines : NULL,
                                    o ? o->ndefines : 0, NULL);
    blkc_status st = BLKC_OK;
    if (!m || diags.nerrors) {
        if (diags.nerrors && diags.out.data)
            st = api_err(BLKC_ERR_COMPILE, "%s", diags.out.data);
        else if (diags.nerrors)
            st = api_err(BLKC_ERR_COMPILE, "%s: compile failed", src.name);
        else
            st = api_err(BLKC_ERR_NOMEM, "out of memory while compiling %s",
                         src.name);
        ir_module_free(m);
        m = NULL;
    }
    dsl_diags_free(&diags);
    *out = m;
    return st;
}

static BkOptions bk_options(const blkc_compile_options *o)
{
    BkOptions b = {NULL, 3};
    if (o) {
        b.arch = o->arch;
        if (o->opt_level)
            b.opt_level = o->opt_level;
    }
    return b;
}

static JcMem *global_cache; /* modules created without a context */

static void global_cache_init(void)
{
    global_cache = jc_mem_new();
}

static _Thread_local int last_cache_source = -1;

BLKC_API int blkc_module_cache_source(void)
{
    return last_cache_source;
}

blkc_status jc_api_error(blkc_status s, const char *msg)
{
    return api_err(s, "%s", msg);
}

BLKC_API blkc_status blkc_cache_stats_get(blkc_cache_stats *out)
{
    if (!out)
        return api_err(BLKC_ERR_USAGE, "blkc_cache_stats_get: out is NULL");
    JcStats st;
    jc_disk_stats(&st);
    memset(out, 0, sizeof *out);
    out->entries = st.entries;
    out->bytes = st.bytes;
    out->max_bytes = st.max_bytes;
    out->disk_hits = st.hits;
    out->disk_misses = st.misses;
    out->disk_corrupt = st.corrupt;
    out->disk_writes = st.writes;
    const char *dir = jc_disk_dir();
    snprintf(out->dir, sizeof out->dir, "%s", dir ? dir : "");
    return BLKC_OK;
}

BLKC_API blkc_status blkc_cache_clear(int *removed)
{
    int n = jc_disk_clear();
    if (removed)
        *removed = n < 0 ? 0 : n;
    if (n < 0)
        return api_err(BLKC_ERR_RUNTIME, "cannot clear the cache directory "
                       "%s", jc_disk_dir());
    return BLKC_OK;
}

/* A module on a cuda/hip context (GPU runtime, runtime/gpu.h): compile to
 * Core IR, emit every kernel for the device's arch and load it. Device
 * functions are listed but cannot be launched there. */
static blkc_status gpu_module_create(blkc_context *ctx, const char *source,
                                     size_t len,
                                     const blkc_compile_options *opts,
                                     blkc_module **out)
{
    char *text;
    blkc_status st = api_prepare(source, &len, opts, &text);
    if (st != BLKC_OK)
        return st;
    IrModule *ir;
    st = api_compile_ir(text, len, opts, &ir);
    free(text);
    if (st != BLKC_OK)
        return st;
    blkc_module *m = calloc(1, sizeof *m);
    if (m)
        m->kernels = calloc((size_t)ir->nfuncs + 1, sizeof *m->kernels);
    if (!m || !m->kernels) {
        free(m);
        ir_module_free(ir);
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    }
    m->ir = ir;
    char err[4096] = "";
    st = rt_gpu_module_load(ctx->gpu, ir, &m->gpu, err, sizeof err);
    if (st != BLKC_OK) {
        blkc_module_destroy(m);
        return api_err(st, "%s: %s", api_src_name(opts), err[0] ? err : "load failed");
    }
    for (int i = 0; i < ir->nfuncs; i++) {
        m->kernels[i].module = m;
        m->kernels[i].func = ir->funcs[i];
    }
    m->nkernels = ir->nfuncs;
    *out = m;
    return BLKC_OK;
}

static blkc_status module_create(blkc_context *ctx, const char *source,
                                 size_t len, const blkc_compile_options *opts,
                                 blkc_module **out)
{
    blkc_target t = opts ? opts->target : BLKC_TARGET_CPU;
    last_cache_source = -1;
    char *text;
    blkc_status st = api_prepare(source, &len, opts, &text);
    if (st != BLKC_OK)
        return st;
    if (ctx && ctx->gpu) { /* a cuda/hip context: its device's target */
        free(text);
        if (t != BLKC_TARGET_CPU && t != ctx->device)
            return api_err(BLKC_ERR_USAGE, "target %s does not match the "
                           "context's device (%s:%d)", api_target_name(t),
                           api_target_name(ctx->device), ctx->device_id);
        return gpu_module_create(ctx, source, len, opts, out);
    }
    if (t != BLKC_TARGET_CPU) {
        free(text);
        return api_err(BLKC_ERR_UNSUPPORTED, "running on %s is not supported "
                       "yet (blkc_emit can produce %s code)", api_target_name(t),
                       api_target_name(t));
    }
    /* through the JIT cache: memory (the context's), disk, else compile */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    JcMem *mc = ctx ? ctx->cache : (pthread_once(&once, global_cache_init),
                                    global_cache);
    JcSrc js = {text, len, opts ? opts->defines : NULL,
                opts ? opts->ndefines : 0, "cpu", opts ? opts->arch : NULL,
                bk_options(opts).opt_level, opts ? opts->isolate : 0,
                opts ? opts->compile_mem_mb : 0};
    JcUnit *u;
    int how;
    st = jc_unit_get(mc, &js, api_src_name(opts), &u, &how, last_err,
                     sizeof last_err);
    free(text);
    if (st != BLKC_OK)
        return st;
    IrModule *ir = u->ir;
    blkc_module *m = calloc(1, sizeof *m);
    if (m)
        m->kernels = calloc((size_t)ir->nfuncs + 1, sizeof *m->kernels);
    if (!m || !m->kernels) {
        free(m);
        jc_unit_unref(u);
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    }
    m->ir = ir;
    m->unit = u;
    for (int i = 0; i < ir->nfuncs; i++) {
        blkc_kernel *k = &m->kernels[i];
        k->module = m;
        k->func = ir->funcs[i];
        k->index = i;
        k->range = jc_code_range(u->code, k->func->name);
        if (!k->range && !k->func->is_device) {
            blkc_module_destroy(m);
            return api_err(BLKC_ERR_RUNTIME, "internal: JIT lost kernel %s",
                           ir->funcs[i]->name);
        }
    }
    last_cache_source = how;
    m->nkernels = ir->nfuncs;
    *out = m;
    return BLKC_OK;
}

/* The defines a module is compiled with: the context's (optional), then
 * its own (optional when ignore_unknown_defines; later ones win). *defs is
 * NULL when there is nothing to merge (opts' own list is used). */
static blkc_status merge_defines(const blkc_context *ctx,
                                 const blkc_compile_options *o, char ***defs,
                                 int *ndefs)
{
    *defs = NULL;
    *ndefs = 0;
    int nc = ctx ? ctx->ndefines : 0, nm = o ? o->ndefines : 0;
    bool opt = o && o->ignore_unknown_defines;
    if (!nc && !opt)
        return BLKC_OK;
    char **d = calloc((size_t)(nc + nm) + 1, sizeof *d);
    if (!d)
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < nc + nm; i++) {
        const char *v = i < nc ? ctx->defines[i] : o->defines[i - nc];
        bool q = i >= nc && opt && v[0] != '?';
        size_t len = strlen(v);
        if (!(d[n] = malloc(len + 2)))
            break;
        d[n][0] = '?';
        memcpy(d[n] + q, v, len + 1);
        n++;
    }
    *defs = d;
    *ndefs = n;
    if (n < nc + nm)
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    return BLKC_OK;
}

BLKC_API blkc_status blkc_module_create(blkc_context *ctx, const char *source,
                                        size_t len,
                                        const blkc_compile_options *opts,
                                        blkc_module **out)
{
    if (!out)
        return api_err(BLKC_ERR_USAGE, "blkc_module_create: out is NULL");
    *out = NULL;
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    if (opts)
        o = *opts;
    char *text;
    blkc_status st = api_prepare(source, &len, &o, &text); /* checks o */
    if (st != BLKC_OK)
        return st;
    free(text);
    char **defs;
    int ndefs;
    st = merge_defines(ctx, &o, &defs, &ndefs);
    if (st == BLKC_OK) {
        if (defs) {
            o.defines = (const char *const *)defs;
            o.ndefines = ndefs;
        }
        st = module_create(ctx, source, len, &o, out);
    }
    for (int i = 0; defs && i < ndefs; i++)
        free(defs[i]);
    free(defs);
    if (st != BLKC_OK)
        return st;
    if ((*out)->nkernels == 0) {
        blkc_module_destroy(*out);
        *out = NULL;
        return api_err(BLKC_ERR_COMPILE, "%s: the program has no kernel or "
                       "device function (a task runs through "
                       "blkc_task_create)", api_src_name(&o));
    }
    blkc_specialize sp = o.specialize;
    if (!sp && ctx)
        sp = ctx->specialize;
    (*out)->specialize = sp;
    if (ctx) {
        (*out)->parallel_for = ctx->parallel_for;
        (*out)->parallel_for_user = ctx->parallel_for_user;
    }
    return BLKC_OK;
}

/* Read a whole file into a NUL-terminated buffer. */
static blkc_status read_file(const char *path, char **out, size_t *len)
{
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return api_err(errno == ENOENT ? BLKC_ERR_NOT_FOUND : BLKC_ERR_RUNTIME,
                       "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            if (cap > (size_t)DSL_MAX_SOURCE * 2)
                break;
            char *b2 = realloc(buf, cap * 2);
            if (!b2) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b2;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(fp);
    fclose(fp);
    if (!buf)
        return api_err(BLKC_ERR_NOMEM, "out of memory reading '%s'", path);
    if (bad) {
        free(buf);
        return api_err(BLKC_ERR_RUNTIME, "cannot read '%s'", path);
    }
    if (n > DSL_MAX_SOURCE) {
        free(buf);
        return api_err(BLKC_ERR_USAGE, "'%s' is too large for a source file",
                       path);
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return BLKC_OK;
}

BLKC_API blkc_status blkc_module_create_from_file(
    blkc_context *ctx, const char *path, const blkc_compile_options *opts,
    blkc_module **out)
{
    if (!out)
        return api_err(BLKC_ERR_USAGE, "blkc_module_create_from_file: out is "
                       "NULL");
    *out = NULL;
    if (!path)
        return api_err(BLKC_ERR_USAGE, "path is NULL");
    char *text;
    size_t len = 0;
    blkc_status st = read_file(path, &text, &len);
    if (st != BLKC_OK)
        return st;
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    if (opts)
        o = *opts;
    if (!o.filename)
        o.filename = path;
    st = blkc_module_create(ctx, text, len, &o, out);
    free(text);
    return st;
}

static void module_free(blkc_module *m)
{
    if (m->cpu)
        bk_cpu_free(m->cpu);
    rt_gpu_module_free(m->gpu);
    if (m->unit)
        jc_unit_unref(m->unit); /* owns m->ir */
    else
        ir_module_free(m->ir);
    free(m->kernels);
    free(m);
}

void api_module_hold(const void *ctx, int delta)
{
    blkc_module *m = (blkc_module *)ctx;
    if (__atomic_add_fetch(&m->holds, delta, __ATOMIC_ACQ_REL) == -1)
        module_free(m);
}

/* Freed now, or when the last run that left ranks behind lets it go. */
BLKC_API void blkc_module_destroy(blkc_module *m)
{
    if (m)
        api_module_hold(m, -1);
}

BLKC_API int blkc_module_kernel_count(const blkc_module *m)
{
    return m ? m->nkernels : 0;
}

BLKC_API const char *blkc_module_kernel_name(const blkc_module *m, int i)
{
    return m && i >= 0 && i < m->nkernels ? m->kernels[i].func->name : NULL;
}

BLKC_API blkc_status blkc_module_get_kernel(blkc_module *m, const char *name,
                                            blkc_kernel **out)
{
    if (!m || !out)
        return api_err(BLKC_ERR_USAGE, "blkc_module_get_kernel: NULL %s",
                       !m ? "module" : "out");
    *out = NULL;
    if (!name) { /* the single kernel */
        if (m->nkernels == 1) {
            *out = &m->kernels[0];
            return BLKC_OK;
        }
        return api_err(BLKC_ERR_USAGE, "the module has %d kernels: name one",
                       m->nkernels);
    }
    for (int i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i].func->name, name) == 0) {
            *out = &m->kernels[i];
            return BLKC_OK;
        }
    char list[512] = "";
    size_t n = 0;
    for (int i = 0; i < m->nkernels && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                              m->kernels[i].func->name);
    return api_err(BLKC_ERR_NOT_FOUND, "no kernel named '%s' (kernels: %s)",
                   name, m->nkernels ? list : "none");
}

/* ------------------------------------------------------------ kernels */

BLKC_API int blkc_kernel_param_count(const blkc_kernel *k)
{
    return k ? k->func->nparams : 0;
}

BLKC_API const char *blkc_kernel_param_name(const blkc_kernel *k, int i)
{
    return k && i >= 0 && i < k->func->nparams ? k->func->params[i].name
                                               : NULL;
}

BLKC_API int blkc_kernel_param_is_tensor(const blkc_kernel *k, int i)
{
    return k && i >= 0 && i < k->func->nparams &&
           k->func->params[i].kind == PK_TENSOR;
}

BLKC_API void blkc_launch_options_init(blkc_launch_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

/* k's specialization mode: its own, else its module's (DEFAULT left for
 * cache.c: the environment). */
static blkc_specialize kernel_mode(const blkc_kernel *k)
{
    int m = __atomic_load_n(&k->specialize, __ATOMIC_RELAXED);
    return m ? (blkc_specialize)m : k->module->specialize;
}

BLKC_API blkc_status blkc_kernel_set_specialize(blkc_kernel *k,
                                                blkc_specialize mode)
{
    if (!k)
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_set_specialize: kernel "
                       "is NULL");
    if ((unsigned)mode > BLKC_SPECIALIZE_EAGER)
        return api_err(BLKC_ERR_USAGE, "specialize %d is not a "
                       "blkc_specialize", (int)mode);
    __atomic_store_n(&k->specialize, (int)mode, __ATOMIC_RELAXED);
    return BLKC_OK;
}

BLKC_API blkc_status blkc_kernel_prepare(blkc_kernel *k, const blkc_arg *args,
                                         int nargs)
{
    if (!k)
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_prepare: kernel is NULL");
    if (!k->module->unit)
        return api_err(BLKC_ERR_UNSUPPORTED, "blkc_kernel_prepare: %s is not "
                       "on a CPU module (GPU modules specialize at launch)",
                       k->func->name);
    const IrFunc *f = k->func;
    if (f->is_device)
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_prepare: %s is a device "
                       "function (not specialized)", f->name);
    uint32_t sig[64];
    if (nargs != f->nparams || f->nparams > 64 || (nargs && !args) ||
        !rt_signature(f, args, nargs, sig))
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_prepare: the arguments "
                       "do not fit %s (%d parameters; %d given)", f->name,
                       f->nparams, nargs);
    if (jc_unit_compile(k->module->unit, k->index, sig) != 0)
        return api_err(BLKC_ERR_RUNTIME, "blkc_kernel_prepare: the variant "
                       "of %s could not be compiled (launches run the "
                       "generic code)", f->name);
    return BLKC_OK;
}

BLKC_API int blkc_kernel_variant_count(const blkc_kernel *k)
{
    return k && k->module->unit ? jc_unit_variants(k->module->unit, k->index)
                                : 0;
}

BLKC_API void blkc_specialize_wait(void)
{
    jc_spec_wait();
}

BLKC_API blkc_status blkc_kernel_launch(blkc_kernel *k, const blkc_arg *args,
                                        int nargs,
                                        const blkc_launch_options *opts)
{
    if (!k)
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_launch: kernel is NULL");
    if (k->module->gpu) { /* tensors in the device's memory (kDLCUDA/kDLROCM) */
        char gerr[1024] = "";
        if (k->func->is_device)
            return api_err(BLKC_ERR_UNSUPPORTED, "%s is a device function: "
                           "it runs on the CPU runtime only", k->func->name);
        /* specialized on the arguments' facts (gpu.h); on success gerr
         * may hold a note (a variant that could not be used): it becomes
         * the last error text, the status stays BLKC_OK */
        blkc_status gst = rt_gpu_launch(k->module->gpu, k->func, args, nargs,
                                        opts, NULL, gerr, sizeof gerr);
        if (gst == BLKC_OK) {
            if (gerr[0])
                api_err(BLKC_OK, "%s", gerr);
            return BLKC_OK;
        }
        return api_err(gst, "%s", gerr[0] ? gerr : "launch failed");
    }
    /* the most specialized variant for these arguments (cache.c) */
    const IrFunc *f = k->func;
    BkRangeFn fn = k->range;
    uint32_t sig[64];
    if (k->module->unit && f->nparams <= 64 &&
        rt_signature(f, args, nargs, sig))
        jc_unit_pick(k->module->unit, k->index, sig, kernel_mode(k), &f, &fn);
    char err[1024];
    err[0] = 0;
    blkc_parallel_for_fn pf = k->module->parallel_for;
    if (pf)
        rt_set_parallel_for(pf, k->module->parallel_for_user);
    blkc_status st = rt_cpu_launch(f, fn, args, nargs, opts, NULL, err,
                                   sizeof err);
    if (pf)
        rt_set_parallel_for(NULL, NULL);
    if (st != BLKC_OK)
        return api_err(st, "%s", err[0] ? err : "launch failed");
    return BLKC_OK;
}

/* ------------------------------------------------------------ emit */

static blkc_status emit_ast(const char *text, size_t len,
                            const blkc_compile_options *o, DslBuf *out)
{
    DslSource src = {api_src_name(o), text, len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    DslArena arena;
    memset(&arena, 0, sizeof arena);
    AstProgram *p = dsl_parse(&arena, &diags, &src);
    blkc_status st = BLKC_OK;
    if (diags.nerrors)
        st = api_err(BLKC_ERR_COMPILE, "%s",
                     diags.out.data ? diags.out.data : "parse failed");
    else if (!p)
        st = api_err(BLKC_ERR_NOMEM, "out of memory while parsing");
    else
        dsl_print_ast(out, p);
    dsl_arena_free(&arena);
    dsl_diags_free(&diags);
    return st;
}

static bool has_stage(const BkBackend *b, const char *stage)
{
    for (int i = 0; b && b->stages && b->stages[i]; i++)
        if (strcmp(b->stages[i], stage) == 0)
            return true;
    return false;
}

BLKC_API blkc_status blkc_emit(const char *source, size_t len,
                               const blkc_compile_options *opts,
                               const char *stage, char **out, size_t *outlen)
{
    if (!out || !stage)
        return api_err(BLKC_ERR_USAGE, "blkc_emit: NULL %s",
                       !out ? "out" : "stage");
    *out = NULL;
    if (outlen)
        *outlen = 0;
    char *text;
    blkc_status st = api_prepare(source, &len, opts, &text);
    if (st != BLKC_OK)
        return st;
    const char *tname = api_target_name(opts ? opts->target : BLKC_TARGET_CPU);
    const BkBackend *be = bk_find(tname);
    bool is_ir = strcmp(stage, "ast") == 0 || strcmp(stage, "core") == 0;
    if (!is_ir && !has_stage(be, stage)) {
        char list[256] = "ast, core";
        size_t n = strlen(list);
        for (int i = 0; be && be->stages && be->stages[i] && n < sizeof list;
             i++)
            n += (size_t)snprintf(list + n, sizeof list - n, ", %s",
                                  be->stages[i]);
        free(text);
        return api_err(BLKC_ERR_USAGE, "no stage '%s' for target %s (stages: "
                       "%s)", stage, tname, list);
    }
    DslBuf buf;
    memset(&buf, 0, sizeof buf);
    if (strcmp(stage, "ast") == 0) {
        st = emit_ast(text, len, opts, &buf);
    } else {
        IrModule *m;
        st = api_compile_ir(text, len, opts, &m);
        if (st == BLKC_OK && strcmp(stage, "core") == 0) {
            ir_print_module(&buf, m);
        } else if (st == BLKC_OK) {
            BkOptions bo = bk_options(opts);
            char err[1024] = "";
            /* the CPU backend's stages honour compile isolation */
            JcSrc js = {text, len, opts ? opts->defines : NULL,
                        opts ? opts->ndefines : 0, tname, bo.arch,
                        bo.opt_level, opts ? opts->isolate : 0,
                        opts ? opts->compile_mem_mb : 0};
            blkc_status fail = BLKC_ERR_RUNTIME;
#ifdef BLKC_NO_CPU_BACKEND
            if (strcmp(tname, "cpu") == 0) /* backends/nocpu: not here */
                fail = BLKC_ERR_UNSUPPORTED;
#endif
            if (iso_emit(be, m, &bo, stage, &js, &buf, err, sizeof err) != 0)
                st = api_err(fail, "%s: %s", stage,
                             err[0] ? err : "emit failed");
        }
        ir_module_free(m);
    }
    free(text);
    if (st == BLKC_OK && buf.oom)
        st = api_err(BLKC_ERR_NOMEM, "out of memory");
    if (st != BLKC_OK) {
        dsl_buf_free(&buf);
        return st;
    }
    if (!buf.data) {
        buf.data = calloc(1, 1);
        if (!buf.data)
            return api_err(BLKC_ERR_NOMEM, "out of memory");
    }
    *out = buf.data;
    if (outlen)
        *outlen = buf.len;
    return BLKC_OK;
}

