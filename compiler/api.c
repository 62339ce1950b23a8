/* api.c — libblkc, the public C API (include/blkc/blkc.h): contexts,
 * modules compiled from .blk source and JIT'd for the CPU, kernel
 * introspection, launches with DLPack tensors, and stage emission.
 *
 * Errors are a status plus a thread-local message (blkc_last_error); the
 * library never prints, exits or aborts. Modules are immutable after
 * creation, so kernels may be launched from many threads at once. */
#include "../include/blkc/blkc.h"
#include "../backends/backend.h"
#include "../runtime/gpu.h"
#include "../runtime/rt.h"
#include "cache.h"
#include "isolate.h"
#include "ir.h"
#include "task.h"
#include "../runtime/plan.h"
#include "../runtime/ranks.h"

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
};

struct blkc_kernel {
    blkc_module *module;  /* owner */
    const IrFunc *func;   /* Core IR function: parameters, grid */
    BkRangeFn range;      /* JIT'd range entry (CPU ABI) */
    int index;            /* function index in module->unit */
};

struct blkc_module {
    IrModule *ir;         /* compiled Core IR */
    BkCpuModule *cpu;     /* JIT'd code */
    RtGpuModule *gpu;     /* loaded on a cuda/hip context's device */
    blkc_kernel *kernels; /* one per function of ir */
    int nkernels;
    JcUnit *unit;         /* shared compiled code (cache.c); owns ir */
};

static _Thread_local char last_err[API_ERR_BYTES];

static blkc_status set_err(blkc_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static blkc_status set_err(blkc_status s, const char *fmt, ...)
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

static const char *target_name(blkc_target t)
{
    return t == BLKC_TARGET_CUDA ? "cuda" : t == BLKC_TARGET_HIP ? "hip"
                                                                  : "cpu";
}

BLKC_API blkc_status blkc_context_create(const char *device,
                                         blkc_context **out)
{
    if (!out)
        return set_err(BLKC_ERR_USAGE, "blkc_context_create: out is NULL");
    *out = NULL;
    if (!device)
        device = "cpu";
    blkc_target t;
    const char *rest;
    if (strncmp(device, "cpu", 3) == 0) {
        t = BLKC_TARGET_CPU;
        rest = device + 3;
    } else if (strncmp(device, "cuda", 4) == 0) {
        t = BLKC_TARGET_CUDA;
        rest = device + 4;
    } else if (strncmp(device, "hip", 3) == 0) {
        t = BLKC_TARGET_HIP;
        rest = device + 3;
    } else {
        return set_err(BLKC_ERR_USAGE, "unknown device '%s' (cpu, cuda[:N], "
                       "hip[:N])", device);
    }
    long id = 0;
    if (*rest == ':' && t != BLKC_TARGET_CPU) {
        char *end;
        errno = 0;
        id = strtol(rest + 1, &end, 10);
        if (end == rest + 1 || *end || id < 0 || id > 1023 || errno)
            return set_err(BLKC_ERR_USAGE, "bad device '%s'", device);
    } else if (*rest) {
        return set_err(BLKC_ERR_USAGE, "unknown device '%s' (cpu, cuda[:N], "
                       "hip[:N])", device);
    }
    RtGpu *gpu = NULL;
    if (t != BLKC_TARGET_CPU) { /* the GPU runtime (runtime/gpu.h) */
        char err[1024] = "";
        blkc_status st = rt_gpu_open(t, (int)id, &gpu, err, sizeof err);
        if (st == BLKC_ERR_UNSUPPORTED)
            return set_err(st, "device %s is not supported here: %s", device,
                           err);
        if (st != BLKC_OK)
            return set_err(st, "device %s: %s", device, err);
    }
    blkc_context *c = calloc(1, sizeof *c);
    if (!c) {
        rt_gpu_close(gpu);
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    }
    c->gpu = gpu;
    c->device = t;
    c->device_id = (int)id;
    c->cache = jc_mem_new();
    *out = c;
    return BLKC_OK;
}

BLKC_API void blkc_context_destroy(blkc_context *ctx)
{
    if (ctx) {
        jc_mem_free(ctx->cache);
        rt_gpu_close(ctx->gpu);
    }
    free(ctx);
}

/* ------------------------------------------------------------ compiling */

BLKC_API void blkc_compile_options_init(blkc_compile_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

/* Check options and copy source into a NUL-terminated buffer. */
static blkc_status prepare(const char *source, size_t len,
                           const blkc_compile_options *o, char **text)
{
    *text = NULL;
    if (!source && len)
        return set_err(BLKC_ERR_USAGE, "source is NULL");
    if (len > DSL_MAX_SOURCE)
        return set_err(BLKC_ERR_USAGE, "source is too large (%zu bytes; the "
                       "limit is %u)", len, DSL_MAX_SOURCE);
    if (o) {
        if (o->target != BLKC_TARGET_CPU && o->target != BLKC_TARGET_CUDA &&
            o->target != BLKC_TARGET_HIP)
            return set_err(BLKC_ERR_USAGE, "unknown target %d", (int)o->target);
        if (o->ndefines < 0 || (o->ndefines > 0 && !o->defines))
            return set_err(BLKC_ERR_USAGE, "bad defines (%d given, array %s)",
                           o->ndefines, o->defines ? "set" : "NULL");
        for (int i = 0; i < o->ndefines; i++)
            if (!o->defines[i] || !strchr(o->defines[i], '=') ||
                o->defines[i][0] == '=')
                return set_err(BLKC_ERR_USAGE, "define %d is not NAME=VALUE",
                               i);
        if (o->opt_level < 0 || o->opt_level > 3)
            return set_err(BLKC_ERR_USAGE, "opt_level %d is not 0..3",
                           o->opt_level);
        if (o->isolate < -1 || o->isolate > 1)
            return set_err(BLKC_ERR_USAGE, "isolate %d is not -1, 0 or 1",
                           o->isolate);
        if (o->compile_mem_mb < 0)
            return set_err(BLKC_ERR_USAGE, "compile_mem_mb %d is negative",
                           o->compile_mem_mb);
    }
    char *t = malloc(len + 1);
    if (!t)
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    if (len)
        memcpy(t, source, len);
    t[len] = 0;
    *text = t;
    return BLKC_OK;
}

static const char *src_name(const blkc_compile_options *o)
{
    return o && o->filename ? o->filename : "<input>";
}

/* Source -> Core IR; diagnostics become the last error. */
static blkc_status compile_ir(const char *text, size_t len,
                              const blkc_compile_options *o, IrModule **out)
{
    DslSource src = {src_name(o), text, len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, o ? o->defines : NULL,
                                    o ? o->ndefines : 0, NULL);
    blkc_status st = BLKC_OK;
    if (!m || diags.nerrors) {
        if (diags.nerrors && diags.out.data)
            st = set_err(BLKC_ERR_COMPILE, "%s", diags.out.data);
        else if (diags.nerrors)
            st = set_err(BLKC_ERR_COMPILE, "%s: compile failed", src.name);
        else
            st = set_err(BLKC_ERR_NOMEM, "out of memory while compiling %s",
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
    return set_err(s, "%s", msg);
}

BLKC_API blkc_status blkc_cache_stats_get(blkc_cache_stats *out)
{
    if (!out)
        return set_err(BLKC_ERR_USAGE, "blkc_cache_stats_get: out is NULL");
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
        return set_err(BLKC_ERR_RUNTIME, "cannot clear the cache directory "
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
    blkc_status st = prepare(source, len, opts, &text);
    if (st != BLKC_OK)
        return st;
    IrModule *ir;
    st = compile_ir(text, len, opts, &ir);
    free(text);
    if (st != BLKC_OK)
        return st;
    blkc_module *m = calloc(1, sizeof *m);
    if (m)
        m->kernels = calloc((size_t)ir->nfuncs + 1, sizeof *m->kernels);
    if (!m || !m->kernels) {
        free(m);
        ir_module_free(ir);
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    }
    m->ir = ir;
    char err[4096] = "";
    st = rt_gpu_module_load(ctx->gpu, ir, &m->gpu, err, sizeof err);
    if (st != BLKC_OK) {
        blkc_module_destroy(m);
        return set_err(st, "%s: %s", src_name(opts), err[0] ? err : "load failed");
    }
    for (int i = 0; i < ir->nfuncs; i++) {
        m->kernels[i].module = m;
        m->kernels[i].func = ir->funcs[i];
    }
    m->nkernels = ir->nfuncs;
    *out = m;
    return BLKC_OK;
}

BLKC_API blkc_status blkc_module_create(blkc_context *ctx, const char *source,
                                        size_t len,
                                        const blkc_compile_options *opts,
                                        blkc_module **out)
{
    if (!out)
        return set_err(BLKC_ERR_USAGE, "blkc_module_create: out is NULL");
    *out = NULL;
    (void)ctx; /* every context is the CPU for now */
    blkc_target t = opts ? opts->target : BLKC_TARGET_CPU;
    last_cache_source = -1;
    char *text;
    blkc_status st = prepare(source, len, opts, &text);
    if (st != BLKC_OK)
        return st;
    if (ctx && ctx->gpu) { /* a cuda/hip context: its device's target */
        free(text);
        if (t != BLKC_TARGET_CPU && t != ctx->device)
            return set_err(BLKC_ERR_USAGE, "target %s does not match the "
                           "context's device (%s:%d)", target_name(t),
                           target_name(ctx->device), ctx->device_id);
        return gpu_module_create(ctx, source, len, opts, out);
    }
    if (t != BLKC_TARGET_CPU) {
        free(text);
        return set_err(BLKC_ERR_UNSUPPORTED, "running on %s is not supported "
                       "yet (blkc_emit can produce %s code)", target_name(t),
                       target_name(t));
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
    st = jc_unit_get(mc, &js, src_name(opts), &u, &how, last_err,
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
        return set_err(BLKC_ERR_NOMEM, "out of memory");
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
            return set_err(BLKC_ERR_RUNTIME, "internal: JIT lost kernel %s",
                           ir->funcs[i]->name);
        }
    }
    last_cache_source = how;
    m->nkernels = ir->nfuncs;
    *out = m;
    return BLKC_OK;
}

/* Read a whole file into a NUL-terminated buffer. */
static blkc_status read_file(const char *path, char **out, size_t *len)
{
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return set_err(errno == ENOENT ? BLKC_ERR_NOT_FOUND : BLKC_ERR_RUNTIME,
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
        return set_err(BLKC_ERR_NOMEM, "out of memory reading '%s'", path);
    if (bad) {
        free(buf);
        return set_err(BLKC_ERR_RUNTIME, "cannot read '%s'", path);
    }
    if (n > DSL_MAX_SOURCE) {
        free(buf);
        return set_err(BLKC_ERR_USAGE, "'%s' is too large for a source file",
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
        return set_err(BLKC_ERR_USAGE, "blkc_module_create_from_file: out is "
                       "NULL");
    *out = NULL;
    if (!path)
        return set_err(BLKC_ERR_USAGE, "path is NULL");
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

BLKC_API void blkc_module_destroy(blkc_module *m)
{
    if (!m)
        return;
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
        return set_err(BLKC_ERR_USAGE, "blkc_module_get_kernel: NULL %s",
                       !m ? "module" : "out");
    *out = NULL;
    if (!name) { /* the single kernel */
        if (m->nkernels == 1) {
            *out = &m->kernels[0];
            return BLKC_OK;
        }
        return set_err(BLKC_ERR_USAGE, "the module has %d kernels: name one",
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
    return set_err(BLKC_ERR_NOT_FOUND, "no kernel named '%s' (kernels: %s)",
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

BLKC_API blkc_status blkc_kernel_launch(blkc_kernel *k, const blkc_arg *args,
                                        int nargs,
                                        const blkc_launch_options *opts)
{
    if (!k)
        return set_err(BLKC_ERR_USAGE, "blkc_kernel_launch: kernel is NULL");
    if (k->module->gpu) { /* tensors in the device's memory (kDLCUDA/kDLROCM) */
        char gerr[1024] = "";
        if (k->func->is_device)
            return set_err(BLKC_ERR_UNSUPPORTED, "%s is a device function: "
                           "it runs on the CPU runtime only", k->func->name);
        /* specialized on the arguments' facts (gpu.h); on success gerr
         * may hold a note (a variant that could not be used): it becomes
         * the last error text, the status stays BLKC_OK */
        blkc_status gst = rt_gpu_launch(k->module->gpu, k->func, args, nargs,
                                        opts, NULL, gerr, sizeof gerr);
        if (gst == BLKC_OK) {
            if (gerr[0])
                set_err(BLKC_OK, "%s", gerr);
            return BLKC_OK;
        }
        return set_err(gst, "%s", gerr[0] ? gerr : "launch failed");
    }
    /* the most specialized variant for these arguments (cache.c) */
    const IrFunc *f = k->func;
    BkRangeFn fn = k->range;
    uint32_t sig[64];
    if (k->module->unit && f->nparams <= 64 &&
        jc_signature(f, args, nargs, sig))
        jc_unit_pick(k->module->unit, k->index, sig, &f, &fn);
    char err[1024];
    err[0] = 0;
    blkc_status st = rt_cpu_launch(f, fn, args, nargs, opts, NULL, err,
                                   sizeof err);
    if (st != BLKC_OK)
        return set_err(st, "%s", err[0] ? err : "launch failed");
    return BLKC_OK;
}

/* ------------------------------------------------------------ emit */

static blkc_status emit_ast(const char *text, size_t len,
                            const blkc_compile_options *o, DslBuf *out)
{
    DslSource src = {src_name(o), text, len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    DslArena arena;
    memset(&arena, 0, sizeof arena);
    AstProgram *p = dsl_parse(&arena, &diags, &src);
    blkc_status st = BLKC_OK;
    if (diags.nerrors)
        st = set_err(BLKC_ERR_COMPILE, "%s",
                     diags.out.data ? diags.out.data : "parse failed");
    else if (!p)
        st = set_err(BLKC_ERR_NOMEM, "out of memory while parsing");
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
        return set_err(BLKC_ERR_USAGE, "blkc_emit: NULL %s",
                       !out ? "out" : "stage");
    *out = NULL;
    if (outlen)
        *outlen = 0;
    char *text;
    blkc_status st = prepare(source, len, opts, &text);
    if (st != BLKC_OK)
        return st;
    const char *tname = target_name(opts ? opts->target : BLKC_TARGET_CPU);
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
        return set_err(BLKC_ERR_USAGE, "no stage '%s' for target %s (stages: "
                       "%s)", stage, tname, list);
    }
    DslBuf buf;
    memset(&buf, 0, sizeof buf);
    if (strcmp(stage, "ast") == 0) {
        st = emit_ast(text, len, opts, &buf);
    } else {
        IrModule *m;
        st = compile_ir(text, len, opts, &m);
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
            if (iso_emit(be, m, &bo, stage, &js, &buf, err, sizeof err) != 0)
                st = set_err(BLKC_ERR_RUNTIME, "%s: %s", stage,
                             err[0] ? err : "emit failed");
        }
        ir_module_free(m);
    }
    free(text);
    if (st == BLKC_OK && buf.oom)
        st = set_err(BLKC_ERR_NOMEM, "out of memory");
    if (st != BLKC_OK) {
        dsl_buf_free(&buf);
        return st;
    }
    if (!buf.data) {
        buf.data = calloc(1, 1);
        if (!buf.data)
            return set_err(BLKC_ERR_NOMEM, "out of memory");
    }
    *out = buf.data;
    if (outlen)
        *outlen = buf.len;
    return BLKC_OK;
}

/* ------------------------------------------------------------ tasks
 * A task (LANGUAGE.md §6) run on local CPU ranks: what `blkc plan` and
 * `blkc run --entry=TASK --ranks=N` do, through tk_prepare / tk_compile /
 * tk_exec (task.h), shared with the CLI. The handle keeps the parsed file
 * and the compiled form of the last sizes it ran with. */

struct blkc_task {
    char *text;                /* the source, NUL-terminated */
    size_t len;
    char *name;                /* the file name shown in diagnostics */
    char **defines;            /* copies of the compile options' defines */
    int ndefines;
    DslArena arena;            /* owns prog */
    AstProgram *prog;
    const AstFunc *fn;         /* the task */
    TkTask *sig_t;             /* its Task IR without ranks (signature) */
    IrFunc *sig;               /* params (full shapes), scalars, results */
    int nin;                   /* parameters before the results */
    int ranks;
    int overlap;
    TkTopology topo;
    pthread_mutex_t mu;        /* runs are serialized */
    char *key;                 /* sizes of the compiled form below */
    TkTask *t;
    TkCompiled *tc;
};

BLKC_API void blkc_task_options_init(blkc_task_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

static blkc_status task_diags(DslDiags *d, const char *what)
{
    if (d->nerrors && d->out.data)
        return set_err(BLKC_ERR_COMPILE, "%s", d->out.data);
    return set_err(BLKC_ERR_COMPILE, "%s: compile failed", what);
}

BLKC_API blkc_status blkc_task_create(const char *source, size_t len,
                                      const blkc_compile_options *opts,
                                      const char *name,
                                      const blkc_task_options *topts,
                                      blkc_task **out)
{
    if (!out)
        return set_err(BLKC_ERR_USAGE, "blkc_task_create: out is NULL");
    *out = NULL;
    if (opts && opts->target != BLKC_TARGET_CPU)
        return set_err(BLKC_ERR_UNSUPPORTED, "tasks run on cpu ranks only for now, "
                       "not on target %s", target_name(opts->target));
    if (topts && (topts->ranks < 0 || topts->ranks > 1024))
        return set_err(BLKC_ERR_USAGE, "ranks %d is not 1..1024 (0 = 1)", topts->ranks);
    if (topts && (topts->overlap < -1 || topts->overlap > 1))
        return set_err(BLKC_ERR_USAGE, "overlap %d is not -1, 0 or 1", topts->overlap);
    char *text;
    blkc_status st = prepare(source, len, opts, &text);
    if (st != BLKC_OK)
        return st;
    /* the whole file must compile (as `blkc run` / `blkc plan` check) */
    IrModule *m = NULL;
    st = compile_ir(text, len, opts, &m);
    ir_module_free(m);
    if (st != BLKC_OK) {
        free(text);
        return st;
    }
    blkc_task *t = calloc(1, sizeof *t);
    if (!t) {
        free(text);
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    }
    t->text = text;
    t->len = len;
    t->ranks = topts && topts->ranks ? topts->ranks : 1;
    t->overlap = topts ? topts->overlap : 0;
    pthread_mutex_init(&t->mu, NULL);
    t->name = strdup(src_name(opts));
    int nd = opts ? opts->ndefines : 0;
    t->defines = calloc((size_t)nd + 1, sizeof *t->defines);
    if (!t->name || !t->defines) {
        blkc_task_destroy(t);
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nd; i++)
        if (!(t->defines[t->ndefines++] = strdup(opts->defines[i]))) {
            blkc_task_destroy(t);
            return set_err(BLKC_ERR_NOMEM, "out of memory");
        }
    char err[1024] = "";
    if (tk_topology_get(topts && topts->topology ? topts->topology : "this-cpu", &t->topo, err,
                        sizeof err)) {
        blkc_task_destroy(t);
        return set_err(BLKC_ERR_USAGE, "%s", err);
    }
    DslSource src = {t->name, t->text, t->len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    t->prog = dsl_parse(&t->arena, &diags, &src);
    if (!t->prog || diags.nerrors) {
        st = t->prog ? task_diags(&diags, t->name) : set_err(BLKC_ERR_NOMEM, "out of memory");
        dsl_diags_free(&diags);
        blkc_task_destroy(t);
        return st;
    }
    t->fn = tk_pick_task(t->prog, name, err, sizeof err);
    if (!t->fn) {
        dsl_diags_free(&diags);
        if (err[0]) {
            blkc_task_destroy(t);
            return set_err(BLKC_ERR_USAGE, "%s has %s", src.name, err);
        }
        char list[512] = "";
        size_t k = 0;
        for (int i = 0; i < t->prog->nfuncs && k < sizeof list; i++)
            if (t->prog->funcs[i]->fkind == FN_TASK)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "",
                                      t->prog->funcs[i]->name);
        st = name ? set_err(BLKC_ERR_NOT_FOUND, "no task named '%s' in %s (tasks: %s)", name,
                            src.name, k ? list : "none")
                  : set_err(BLKC_ERR_NOT_FOUND, "%s has no task", src.name);
        blkc_task_destroy(t);
        return st;
    }
    t->sig_t = tk_build(t->prog, t->fn, 0, (const char *const *)t->defines, t->ndefines, NULL,
                        0, &diags);
    t->sig = t->sig_t ? tk_signature(t->sig_t) : NULL;
    if (!t->sig) {
        st = diags.nerrors ? task_diags(&diags, t->name)
                           : set_err(BLKC_ERR_NOMEM, "out of memory");
        dsl_diags_free(&diags);
        blkc_task_destroy(t);
        return st;
    }
    dsl_diags_free(&diags);
    t->nin = t->sig->nparams - t->sig_t->nresults;
    *out = t;
    return BLKC_OK;
}

BLKC_API void blkc_task_destroy(blkc_task *t)
{
    if (!t)
        return;
    tk_compiled_free(t->tc);
    tk_free(t->t);
    free(t->key);
    tk_signature_free(t->sig);
    tk_free(t->sig_t);
    dsl_arena_free(&t->arena);
    for (int i = 0; i < t->ndefines; i++)
        free(t->defines[i]);
    free(t->defines);
    free(t->name);
    free(t->text);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

BLKC_API int blkc_task_param_count(const blkc_task *t)
{
    return t ? t->nin : 0;
}

BLKC_API const char *blkc_task_param_name(const blkc_task *t, int i)
{
    return t && i >= 0 && i < t->nin ? t->sig->params[i].name : NULL;
}

BLKC_API int blkc_task_param_is_tensor(const blkc_task *t, int i)
{
    return t && i >= 0 && i < t->nin && t->sig->params[i].kind == PK_TENSOR;
}

BLKC_API int blkc_task_result_count(const blkc_task *t)
{
    return t ? t->sig_t->nresults : 0;
}

/* Is `dl` a C-contiguous CPU tensor? */
static bool dl_dense_cpu(const DLTensor *dl)
{
    if (dl->device.device_type != kDLCPU && dl->device.device_type != kDLCUDAHost)
        return false;
    if (!dl->strides)
        return true;
    int64_t st = 1;
    for (int d = dl->ndim - 1; d >= 0; d--) {
        if (dl->shape[d] != 1 && dl->strides[d] != st)
            return false;
        st *= dl->shape[d];
    }
    return true;
}

/* Check tensor `dl` against parameter p (index pi) of the signature and bind
 * its symbolic sizes in symval (`what`: "argument" / "result"). */
static blkc_status bind_tensor(const blkc_task *t, int pi, const DLTensor *dl, int64_t *symval,
                               const char *what)
{
    const IrParam *p = &t->sig->params[pi];
    const char *tn = t->fn->name;
    if (!dl)
        return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s is NULL", what, p->name, tn);
    if (!dl_dense_cpu(dl))
        return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s must be a C-contiguous CPU "
                       "tensor (device type %d)", what, p->name, tn,
                       (int)dl->device.device_type);
    int dt = rt_dtype_from_dl(dl->dtype);
    if (dt != p->dtype)
        return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s has dtype %s, expected %s", what,
                       p->name, tn, dt >= 0 ? dsl_dtype_name(dt) : "(not a blkc dtype)",
                       dsl_dtype_name(p->dtype));
    if (dl->ndim != p->rank)
        return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s has %d dims, expected %d", what,
                       p->name, tn, dl->ndim, p->rank);
    if (p->rank && (!dl->shape || !dl->data))
        return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s has no %s", what, p->name, tn,
                       dl->shape ? "data" : "shape");
    for (int d = 0; d < p->rank; d++) {
        int64_t v = dl->shape[d];
        if (p->dims[d] >= 0) {
            if (v != p->dims[d])
                return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s: dim %d is %lld, expected "
                               "%lld", what, p->name, tn, d, (long long)v,
                               (long long)p->dims[d]);
            continue;
        }
        int s = -1 - (int)p->dims[d];
        if (v < 1)
            return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s: size %s = %lld is not "
                           "positive", what, p->name, tn, t->sig->syms[s].name, (long long)v);
        if (symval[s] < 0)
            symval[s] = v;
        else if (symval[s] != v)
            return set_err(BLKC_ERR_USAGE, "%s '%s' of task %s: dim %d is %lld, but size %s "
                           "is %lld from the other tensors", what, p->name, tn, d,
                           (long long)v, t->sig->syms[s].name, (long long)symval[s]);
    }
    return BLKC_OK;
}

/* Bind the inputs' sizes (and the results', when given) into symval. */
static blkc_status bind_task_args(const blkc_task *t, const blkc_arg *args, int nargs,
                                  DLTensor *const *results, int nresults, int64_t *symval)
{
    const char *tn = t->fn->name;
    for (int s = 0; s < t->sig->nsyms; s++)
        symval[s] = -1;
    if (nargs != t->nin || (nargs && !args)) {
        char list[512] = "";
        size_t k = 0;
        for (int i = 0; i < t->nin && k < sizeof list; i++)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "",
                                  t->sig->params[i].name);
        return set_err(BLKC_ERR_USAGE, "task %s takes %d argument%s (%s), got %d", tn, t->nin,
                       t->nin == 1 ? "" : "s", list, nargs);
    }
    for (int i = 0; i < t->nin; i++) {
        const IrParam *p = &t->sig->params[i];
        if (p->kind == PK_SCALAR) {
            if (args[i].kind == BLKC_ARG_TENSOR ||
                (args[i].kind == BLKC_ARG_FLOAT && !dsl_is_float(p->dtype)))
                return set_err(BLKC_ERR_USAGE, "argument '%s' of task %s is a %s scalar, "
                               "got a %s", p->name, tn, dsl_dtype_name(p->dtype),
                               args[i].kind == BLKC_ARG_TENSOR ? "tensor" : "float");
            continue;
        }
        if (args[i].kind != BLKC_ARG_TENSOR)
            return set_err(BLKC_ERR_USAGE, "argument '%s' of task %s is a tensor, got a "
                           "scalar", p->name, tn);
        blkc_status st = bind_tensor(t, i, args[i].v.tensor, symval, "argument");
        if (st != BLKC_OK)
            return st;
    }
    if (results) {
        if (nresults != t->sig_t->nresults)
            return set_err(BLKC_ERR_USAGE, "task %s has %d result%s, got %d result tensors",
                           tn, t->sig_t->nresults, t->sig_t->nresults == 1 ? "" : "s",
                           nresults);
        for (int i = 0; i < nresults; i++) {
            blkc_status st = bind_tensor(t, t->nin + i, results[i], symval, "result");
            if (st != BLKC_OK)
                return st;
        }
    }
    for (int s = 0; s < t->sig->nsyms; s++)
        if (symval[s] < 0)
            return set_err(BLKC_ERR_USAGE, "task %s: size %s is not given by any %s tensor",
                           tn, t->sig->syms[s].name, results ? "argument or result" : "argument");
    return BLKC_OK;
}

BLKC_API blkc_status blkc_task_result_shape(const blkc_task *t, const blkc_arg *args,
                                            int nargs, int i, DLDataType *dtype, int *ndim,
                                            int64_t *shape)
{
    if (!t || !ndim || !shape)
        return set_err(BLKC_ERR_USAGE, "blkc_task_result_shape: NULL %s",
                       !t ? "task" : !ndim ? "ndim" : "shape");
    if (i < 0 || i >= t->sig_t->nresults)
        return set_err(BLKC_ERR_USAGE, "task %s has %d result%s; no result %d", t->fn->name,
                       t->sig_t->nresults, t->sig_t->nresults == 1 ? "" : "s", i);
    int64_t *symval = malloc(((size_t)t->sig->nsyms + 1) * sizeof *symval);
    if (!symval)
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    blkc_status st = bind_task_args(t, args, nargs, NULL, 0, symval);
    if (st == BLKC_OK) {
        const IrParam *p = &t->sig->params[t->nin + i];
        *ndim = p->rank;
        if (dtype)
            *dtype = rt_dtype_to_dl(p->dtype);
        for (int d = 0; d < p->rank; d++)
            shape[d] = p->dims[d] >= 0 ? p->dims[d] : symval[-1 - p->dims[d]];
    }
    free(symval);
    return st;
}

/* "N=V" strings for the bound sizes; *key: them joined (the compiled
 * form's cache key). */
static blkc_status size_strings(const blkc_task *t, const int64_t *symval, char ***sizes,
                                char **key)
{
    int ns = t->sig->nsyms;
    *sizes = calloc((size_t)ns + 1, sizeof **sizes);
    size_t klen = 1;
    for (int s = 0; s < ns; s++)
        klen += strlen(t->sig->syms[s].name) + 24;
    *key = calloc(klen, 1);
    if (!*sizes || !*key)
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (int s = 0; s < ns; s++) {
        size_t n = strlen(t->sig->syms[s].name) + 24;
        if (!((*sizes)[s] = malloc(n)))
            return set_err(BLKC_ERR_NOMEM, "out of memory");
        snprintf((*sizes)[s], n, "%s=%lld", t->sig->syms[s].name, (long long)symval[s]);
        k += (size_t)snprintf(*key + k, klen - k, "%s;", (*sizes)[s]);
    }
    return BLKC_OK;
}

static void free_strings(char **v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* The Task IR for `sizes` on the task's ranks (tk_prepare): diagnostics
 * (a split dim not divisible by the ranks, ...) become the error. */
static blkc_status task_prepare(const blkc_task *t, char **sizes, int nsizes, int force,
                                TkTask **out)
{
    DslSource src = {t->name, t->text, t->len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    char err[1024] = "";
    *out = tk_prepare(t->prog, t->fn, t->ranks, (const char *const *)t->defines, t->ndefines,
                      (const char *const *)sizes, nsizes, t->text, t->len, &t->topo, force,
                      &diags, err, sizeof err);
    blkc_status st = BLKC_OK;
    if (!*out)
        st = diags.nerrors ? task_diags(&diags, t->name)
                           : set_err(strstr(err, "memory") ? BLKC_ERR_NOMEM : BLKC_ERR_USAGE,
                                     "%s", err);
    dsl_diags_free(&diags);
    return st;
}

BLKC_API blkc_status blkc_task_plan(blkc_task *t, const char *const *sizes, int nsizes,
                                    int json, char **out, size_t *outlen)
{
    if (!t || !out)
        return set_err(BLKC_ERR_USAGE, "blkc_task_plan: NULL %s", !t ? "task" : "out");
    *out = NULL;
    if (nsizes < 0 || (nsizes && !sizes))
        return set_err(BLKC_ERR_USAGE, "bad sizes (%d given, array %s)", nsizes,
                       sizes ? "set" : "NULL");
    for (int i = 0; i < nsizes; i++) {
        const char *a = sizes[i], *eq = a ? strchr(a, '=') : NULL;
        bool known = false;
        for (int s = 0; eq && s < t->sig->nsyms; s++)
            known |= strncmp(t->sig->syms[s].name, a, (size_t)(eq - a)) == 0 &&
                     !t->sig->syms[s].name[eq - a];
        char *end = NULL;
        long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
        if (!eq || !known || !end || end == eq + 1 || *end || v < 1) {
            char list[512] = "";
            size_t k = 0;
            for (int s = 0; s < t->sig->nsyms && k < sizeof list; s++)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", s ? ", " : "",
                                      t->sig->syms[s].name);
            return set_err(BLKC_ERR_USAGE, "size %d '%s' of task %s is not NAME=VALUE with "
                           "a size of the task (%s) and a positive integer", i,
                           a ? a : "(null)", t->fn->name, k ? list : "none");
        }
    }
    TkTask *tt;
    blkc_status st = task_prepare(t, (char **)(uintptr_t)sizes, nsizes, t->overlap, &tt);
    if (st != BLKC_OK)
        return st;
    DslBuf buf = {0};
    tk_plan_print(&buf, tt, &t->topo, json != 0);
    tk_free(tt);
    if (buf.oom || !buf.data) {
        dsl_buf_free(&buf);
        return set_err(BLKC_ERR_NOMEM, "out of memory");
    }
    *out = buf.data;
    if (outlen)
        *outlen = buf.len;
    return BLKC_OK;
}

BLKC_API blkc_status blkc_task_run(blkc_task *t, const blkc_arg *args, int nargs,
                                   DLTensor *const *results, int nresults)
{
    if (!t)
        return set_err(BLKC_ERR_USAGE, "blkc_task_run: task is NULL");
    if (!results)
        return set_err(BLKC_ERR_USAGE, "blkc_task_run: results is NULL");
    if (rt_mpi_launch_size() > 1 && rt_mpi_launch_size() != t->ranks)
        return set_err(BLKC_ERR_USAGE, "mpirun started %d processes but the task has %d "
                       "ranks: under mpirun, ranks must equal -np", rt_mpi_launch_size(),
                       t->ranks);
    int ns = t->sig->nsyms, np = t->sig->nparams;
    int64_t *symval = malloc(((size_t)ns + 1) * sizeof *symval);
    TkArg *ta = calloc((size_t)np + 1, sizeof *ta);
    char **sizes = NULL, *key = NULL;
    blkc_status st = !symval || !ta ? set_err(BLKC_ERR_NOMEM, "out of memory") : BLKC_OK;
    if (st == BLKC_OK)
        st = bind_task_args(t, args, nargs, results, nresults, symval);
    if (st == BLKC_OK)
        st = size_strings(t, symval, &sizes, &key);
    if (st != BLKC_OK)
        goto out;
    for (int i = 0; i < np; i++) {
        const IrParam *p = &t->sig->params[i];
        if (p->kind == PK_SCALAR) {
            if (dsl_is_float(p->dtype))
                ta[i].scalar.f = args[i].kind == BLKC_ARG_FLOAT ? args[i].v.f
                                                                : (double)args[i].v.i;
            else
                ta[i].scalar.i = args[i].v.i;
            continue;
        }
        const DLTensor *dl = i < t->nin ? args[i].v.tensor : results[i - t->nin];
        ta[i].data = (char *)dl->data + dl->byte_offset;
        for (int d = 0; d < dl->ndim; d++)
            ta[i].shape[d] = dl->shape[d];
    }
    pthread_mutex_lock(&t->mu);
    if (!t->key || strcmp(t->key, key) != 0) { /* new sizes: compile */
        tk_compiled_free(t->tc);
        tk_free(t->t);
        free(t->key);
        t->tc = NULL;
        t->t = NULL;
        t->key = NULL;
        st = task_prepare(t, sizes, ns, t->overlap ? t->overlap : tk_force_from_env(), &t->t);
        if (st == BLKC_OK) {
            char err[1024] = "";
            t->tc = tk_compile(t->t, err, sizeof err);
            if (!t->tc)
                st = set_err(BLKC_ERR_RUNTIME, "%s", err[0] ? err : "task compile failed");
        }
        if (st == BLKC_OK) {
            t->key = key;
            key = NULL;
        }
    }
    if (st == BLKC_OK) {
        char err[1024] = "";
        if (tk_exec(t->tc, ta, ta + t->nin, err, sizeof err))
            st = set_err(BLKC_ERR_RUNTIME, "%s", err[0] ? err : "task run failed");
    }
    pthread_mutex_unlock(&t->mu);
out:
    free_strings(sizes, ns);
    free(key);
    free(symval);
    free(ta);
    return st;
}

/* ------------------------------------------------------------ device
 * functions on N local ranks (what `blkc run --ranks=N` does for one):
 * rt_plan_run with each rank's own arguments. */

BLKC_API blkc_status blkc_kernel_run_ranks(blkc_kernel *k, int nranks, const blkc_arg *args,
                                           int nargs, const blkc_launch_options *opts)
{
    if (!k)
        return set_err(BLKC_ERR_USAGE, "blkc_kernel_run_ranks: kernel is NULL");
    const IrFunc *f = k->func;
    if (k->module->gpu)
        return set_err(BLKC_ERR_UNSUPPORTED, "blkc_kernel_run_ranks runs on cpu ranks only "
                       "for now (%s is in a GPU module)", f->name);
    if (nranks < 1 || nranks > 1024)
        return set_err(BLKC_ERR_USAGE, "nranks %d is not 1..1024", nranks);
    int nuser = 0;
    for (int p = 0; p < f->nparams; p++)
        nuser += !f->params[p].local;
    if (nargs != nuser || (nargs && !args))
        return set_err(BLKC_ERR_USAGE, "%s takes %d argument%s per rank, got %d", f->name,
                       nuser, nuser == 1 ? "" : "s", nargs);
    if (rt_mpi_launch_size() > 1)
        return set_err(BLKC_ERR_UNSUPPORTED, "blkc_kernel_run_ranks under mpirun: use "
                       "blkc_kernel_launch per process");
    RtPlanArg **ra = calloc((size_t)nranks, sizeof *ra);
    int64_t *symval = malloc(((size_t)f->nsyms + 1) * sizeof *symval);
    blkc_status st = !ra || !symval ? set_err(BLKC_ERR_NOMEM, "out of memory") : BLKC_OK;
    for (int r = 0; r < nranks && st == BLKC_OK; r++) {
        ra[r] = calloc((size_t)f->nparams + 1, sizeof **ra);
        if (!ra[r]) {
            st = set_err(BLKC_ERR_NOMEM, "out of memory");
            break;
        }
        for (int s = 0; s < f->nsyms; s++)
            symval[s] = -1;
        const blkc_arg *a = args + (size_t)r * (size_t)nargs;
        int ai = 0;
        for (int p = 0; p < f->nparams && st == BLKC_OK; p++) {
            const IrParam *ip = &f->params[p];
            if (ip->local)
                continue;
            const blkc_arg *x = &a[ai++];
            if (ip->kind == PK_SCALAR) {
                if (x->kind == BLKC_ARG_TENSOR ||
                    (x->kind == BLKC_ARG_FLOAT && !dsl_is_float(ip->dtype)))
                    st = set_err(BLKC_ERR_USAGE, "rank %d: parameter '%s' of %s is a %s "
                                 "scalar, got a %s", r, ip->name, f->name,
                                 dsl_dtype_name(ip->dtype),
                                 x->kind == BLKC_ARG_TENSOR ? "tensor" : "float");
                else if (dsl_is_float(ip->dtype))
                    ra[r][p].scalar.f = x->kind == BLKC_ARG_FLOAT ? x->v.f : (double)x->v.i;
                else
                    ra[r][p].scalar.i = x->v.i;
                continue;
            }
            const DLTensor *dl = x->kind == BLKC_ARG_TENSOR ? x->v.tensor : NULL;
            int dt = dl ? rt_dtype_from_dl(dl->dtype) : -1;
            if (!dl)
                st = set_err(BLKC_ERR_USAGE, "rank %d: parameter '%s' of %s is a tensor, got "
                             "%s", r, ip->name, f->name,
                             x->kind == BLKC_ARG_TENSOR ? "NULL" : "a scalar");
            else if (dl->device.device_type != kDLCPU &&
                     dl->device.device_type != kDLCUDAHost)
                st = set_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' is not in host memory "
                             "(device type %d)", r, ip->name, (int)dl->device.device_type);
            else if (dt != ip->dtype)
                st = set_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' of %s has dtype %s, "
                             "expected %s", r, ip->name, f->name,
                             dt >= 0 ? dsl_dtype_name(dt) : "(not a blkc dtype)",
                             dsl_dtype_name(ip->dtype));
            else if (dl->ndim != ip->rank || (ip->rank && (!dl->shape || !dl->data)))
                st = set_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' of %s has %d dims, "
                             "expected %d", r, ip->name, f->name, dl->ndim, ip->rank);
            int64_t sst = 1;
            for (int d = ip->rank - 1; d >= 0 && st == BLKC_OK; d--) {
                int64_t v = dl->shape[d];
                ra[r][p].shape[d] = v;
                ra[r][p].stride[d] = dl->strides ? dl->strides[d] : sst;
                sst *= v;
                int64_t want = ip->dims[d] >= 0 ? ip->dims[d] : symval[-1 - ip->dims[d]];
                if (v < 0 || (want >= 0 && v != want))
                    st = set_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' of %s: dim %d is %lld, "
                                 "expected %lld", r, ip->name, f->name, d, (long long)v,
                                 (long long)want);
                else if (ip->dims[d] < 0)
                    symval[-1 - ip->dims[d]] = v;
            }
            if (st == BLKC_OK)
                ra[r][p].data = (char *)dl->data + dl->byte_offset;
        }
    }
    BkCpuModule *cm = NULL;
    if (st == BLKC_OK) {
        char err[1024] = "";
        BkOptions bo = {NULL, 3};
        if (bk_cpu_jit(k->module->ir, &bo, &cm, err, sizeof err) != 0)
            st = set_err(BLKC_ERR_RUNTIME, "JIT failed: %s", err);
        RtPlanModule pm = {k->module->ir, cm, NULL};
        bool has_grid = opts && (opts->grid[0] || opts->grid[1] || opts->grid[2]);
        if (st == BLKC_OK && rt_plan_run(&pm, k->index, nranks, ra, has_grid ? opts->grid : NULL,
                                         err, sizeof err) != 0)
            st = set_err(BLKC_ERR_RUNTIME, "%s", err[0] ? err : "run failed");
    }
    if (cm)
        bk_cpu_free(cm);
    for (int r = 0; ra && r < nranks; r++)
        free(ra[r]);
    free(ra);
    free(symval);
    return st;
}
