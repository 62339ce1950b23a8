/* cli_run.c — `blkc run`: bind scalars, symbolic sizes and .npy tensors
 * to the entry's parameters, JIT, launch on the CPU (one rank on the
 * thread pool; several ranks or a device function through the plan runner),
 * write the results, and time repeated runs with --bench. */
#include "cli.h"
#include "cache.h"

#include "../runtime/gpu.h"
#include "../runtime/gpu_ranks.h"
#include "../runtime/plan.h"
#include "task.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ run */

typedef struct PArg {
    bool given;                  /* set on the command line */
    const char *path;            /* NAME=@PATH */
    blkc_arg arg;                /* scalar value / tensor */
    DLTensor dl;                 /* tensor params */
    int64_t shape[IR_MAX_RANK];  /* tensor extents */
    int64_t numel;
    void *data;                  /* host buffer in the param's dtype */
} PArg;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cur_rank;             /* rank whose inputs/outputs are handled */

static void fill_random(void *data, int dt, int64_t n, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull, s = cli.seed;
    for (const char *c = name; *c; c++) /* per-tensor stream: FNV-1a */
        h = (h ^ (unsigned char)*c) * 0x100000001B3ull;
    s = splitmix(&s) ^ h ^ ((uint64_t)cur_rank * 0x9E3779B97F4A7C15ull);
    size_t b = (size_t)dsl_dtype_bytes(dt);
    char *p = data;
    for (int64_t i = 0; i < n; i++, p += b) {
        uint64_t r = splitmix(&s);
        switch (dsl_dtype_kind(dt)) {
        case 'f': rt_store_f64(p, dt, (double)(r >> 11) * 0x1p-52 - 1.0); break;
        case 'i': rt_store_i64(p, dt, (int64_t)(r >> 61) - 4); break;
        case 'u': rt_store_i64(p, dt, (int64_t)(r >> 61)); break;
        default: rt_store_i64(p, dt, (int64_t)(r >> 63)); break;
        }
    }
}

/* PATH with {rank} replaced by the current rank */
static const char *rank_path(const char *path, char *buf, size_t n)
{
    const char *r = strstr(path, "{rank}");
    if (!r)
        return path;
    snprintf(buf, n, "%.*s%d%s", (int)(r - path), path, cur_rank, r + 6);
    return buf;
}

static int64_t *symval;          /* per sym: bound value, -1 = unknown */
static const char **symsrc;      /* per sym: who bound it */

static void bind_sym(const IrFunc *f, int s, int64_t v, const char *from)
{
    if (symval[s] < 0) {
        symval[s] = v;
        symsrc[s] = from;
    } else if (symval[s] != v) {
        cli_die(X_RUNTIME, "size mismatch: %s is %lld from %s but %lld from %s",
            f->syms[s].name, (long long)symval[s], symsrc[s], (long long)v,
            from);
    }
}

static void set_scalar(const IrParam *p, PArg *pa, const char *val)
{
    int dt = p->dtype;
    if (dsl_is_float(dt)) {
        double f;
        if (!cli_parse_f64(val, &f))
            cli_die(X_USAGE, "bad value '%s' for %s: expected a %s number", val,
                p->name, dsl_dtype_name(dt));
        pa->arg = (blkc_arg){.kind = BLKC_ARG_FLOAT, .v.f = f};
        return;
    }
    int64_t v;
    if (dt == DT_BOOL) {
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0)
            v = 1;
        else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0)
            v = 0;
        else
            cli_die(X_USAGE, "bad value '%s' for %s: expected true or false", val,
                p->name);
    } else if (dt == DT_U64 && val[0] != '-') {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(val, &end, 0);
        if (!*val || *end || errno)
            cli_die(X_USAGE, "bad value '%s' for %s: expected a u64", val, p->name);
        v = (int64_t)u;
    } else {
        int bits = dsl_dtype_bytes(dt) * 8;
        bool sgn = dsl_dtype_kind(dt) == 'i';
        if (!cli_parse_i64(val, &v) ||
            (bits < 64 && sgn && (v < -((int64_t)1 << (bits - 1)) ||
                                  v >= ((int64_t)1 << (bits - 1)))) ||
            (bits < 64 && !sgn && (v < 0 || v >= ((int64_t)1 << bits))) ||
            (!sgn && v < 0))
            cli_die(X_USAGE, "bad value '%s' for %s: expected a %s", val, p->name,
                dsl_dtype_name(dt));
    }
    pa->arg = (blkc_arg){.kind = BLKC_ARG_INT, .v.i = v};
}

/* NAME=@PATH: read, convert to the param's dtype, bind sizes */
static void load_tensor(const IrFunc *f, int pi, PArg *pa)
{
    const IrParam *p = &f->params[pi];
    char pbuf[4096], err[512];
    const char *path = rank_path(pa->path, pbuf, sizeof pbuf);
    RtNpy a;
    if (rt_npy_read(path, &a, err, sizeof err) != 0)
        cli_die(X_RUNTIME, "%s", err);
    pa->data = a.data; /* owned by pa from here on */
    int dt = p->dtype;
    bool small = dt == DT_F16 || dt == DT_BF16 || dt == DT_F8E4M3 ||
                 dt == DT_F8E5M2;
    if (a.dtype != dt && !(small && dsl_is_float(a.dtype)))
        cli_die(X_RUNTIME, "dtype mismatch: parameter %s is %s but %s holds %s",
            p->name, dsl_dtype_name(dt), path, dsl_dtype_name(a.dtype));
    if (a.ndim != p->rank)
        cli_die(X_RUNTIME, "shape mismatch: parameter %s has %d dims but %s has %d",
            p->name, p->rank, path, a.ndim);
    for (int d = 0; d < p->rank; d++) {
        if (p->dims[d] >= 0 && a.shape[d] != p->dims[d])
            cli_die(X_RUNTIME, "shape mismatch: parameter %s dim %d is %lld but %s "
                "has %lld", p->name, d, (long long)p->dims[d], path,
                (long long)a.shape[d]);
        if (p->dims[d] < 0) {
            if (a.shape[d] > INT32_MAX)
                cli_die(X_RUNTIME, "%s: extent %lld does not fit i32", path,
                    (long long)a.shape[d]);
            bind_sym(f, (int)(-1 - p->dims[d]), a.shape[d], p->name);
        }
        pa->shape[d] = a.shape[d];
    }
    pa->numel = a.numel;
    if (a.dtype != dt) {
        void *conv = rt_alloc64((size_t)a.numel * (size_t)dsl_dtype_bytes(dt) + 1);
        if (!conv)
            cli_die(X_RUNTIME, "out of memory converting %s", path);
        rt_convert(conv, dt, a.data, a.dtype, a.numel);
        pa->data = conv;
        rt_npy_free(&a);
    }
}

/* A tensor not given: zeros (or --random) from its declared shape. */
static void make_tensor(const IrFunc *f, int pi, PArg *pa)
{
    const IrParam *p = &f->params[pi];
    int64_t numel = 1;
    for (int d = 0; d < p->rank; d++) {
        int64_t n = p->dims[d];
        if (n < 0) {
            int s = (int)(-1 - n);
            if (symval[s] < 0)
                cli_die(X_USAGE, "missing size %s (of parameter %s): give %s=VALUE "
                    "or a tensor that has it", f->syms[s].name, p->name,
                    f->syms[s].name);
            n = symval[s];
        }
        pa->shape[d] = n;
        if (n && numel > (INT64_MAX >> 4) / n)
            cli_die(X_RUNTIME, "parameter %s is too large", p->name);
        numel *= n;
    }
    size_t bytes = (size_t)numel * (size_t)dsl_dtype_bytes(p->dtype);
    pa->numel = numel;
    pa->data = rt_alloc64(bytes + 1); /* rows on cache lines (rt.h) */
    if (!pa->data)
        cli_die(X_RUNTIME, "out of memory allocating %s (%zu bytes)", p->name, bytes);
    memset(pa->data, 0, bytes + 1);
    if (cli.random)
        fill_random(pa->data, p->dtype, numel, p->name);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void write_out(const IrFunc *f, const OutSpec *o, PArg *pargs)
{
    int pi = -1;
    for (int i = 0; i < f->nparams; i++)
        if (strcmp(f->params[i].name, o->name) == 0)
            pi = i;
    const IrParam *p = &f->params[pi];
    PArg *pa = &pargs[pi];
    char pbuf[4096], err[512];
    const char *path = rank_path(o->path, pbuf, sizeof pbuf);
    int dt = p->dtype;
    void *data = pa->data;
    static void *tmp;
    if (!rt_npy_descr(dt)) { /* bf16, f8: written as f32 */
        tmp = malloc((size_t)pa->numel * 4 + 1);
        if (!tmp)
            cli_die(X_RUNTIME, "out of memory writing %s", path);
        rt_convert(tmp, DT_F32, pa->data, dt, pa->numel);
        data = tmp;
        dt = DT_F32;
    }
    if (rt_npy_write(path, dt, p->rank, pa->shape, data, err, sizeof err) != 0)
        cli_die(X_RUNTIME, "%s", err);
    free(tmp);
    tmp = NULL;
}

/* The entry: --entry, else the single device function, else the single
 * kernel (CLI.md); ambiguity is a usage error listing the candidates. */
static int pick_entry(const IrModule *m)
{
    char list[1024];
    size_t k = 0;
    list[0] = 0;
    int ndev = 0, nker = 0, dev = -1, ker = -1;
    for (int i = 0; i < m->nfuncs && k < sizeof list; i++) {
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s %s", i ? ", " : "",
                              m->funcs[i]->is_device ? "device" : "kernel",
                              m->funcs[i]->name);
        if (m->funcs[i]->is_device)
            ndev++, dev = i;
        else
            nker++, ker = i;
    }
    if (cli.entry) {
        for (int i = 0; i < m->nfuncs; i++)
            if (strcmp(m->funcs[i]->name, cli.entry) == 0)
                return i;
        cli_die(X_USAGE, "no kernel or device function named '%s' in '%s' (%s)",
                cli.entry, cli.file, m->nfuncs ? list : "it has none");
    }
    if (ndev == 1)
        return dev;
    if (ndev > 1)
        cli_die(X_USAGE, "'%s' has %d device functions: choose one with "
                "--entry=NAME (candidates: %s)", cli.file, ndev, list);
    if (nker == 1)
        return ker;
    if (nker == 0)
        cli_die(X_USAGE, "'%s' has nothing to run", cli.file);
    cli_die(X_USAGE, "'%s' has %d kernels: choose one with --entry=NAME "
            "(candidates: %s)", cli.file, nker, list);
}

/* NAME=VALUE and NAME=@PATH into pargs (tensors are only noted here). */
static void parse_run_args(const IrFunc *f, PArg *pargs)
{
    const char *what = f->is_device ? "device function" : "kernel";
    for (int i = 0; i < cli.nouts; i++) { /* --out names must be tensors */
        int pi = -1;
        for (int j = 0; j < f->nparams; j++)
            if (strcmp(f->params[j].name, cli.outs[i].name) == 0)
                pi = j;
        if (pi < 0 || f->params[pi].kind != PK_TENSOR || f->params[pi].local)
            cli_die(X_USAGE, "--out %s: %s %s has no tensor parameter %s",
                    cli.outs[i].name, what, f->name, cli.outs[i].name);
    }
    for (int i = 0; i < cli.nargs; i++) {
        char *a = cli.args[i], *eq = strchr(a, '=');
        if (!eq || !cli_is_ident(a, (size_t)(eq - a)))
            cli_die(X_USAGE, "bad argument '%s': expected NAME=VALUE or "
                    "NAME=@PATH.npy", a);
        *eq = 0;
        const char *val = eq + 1;
        int pi = -1, si = -1;
        for (int j = 0; j < f->nparams; j++)
            if (!f->params[j].local && strcmp(f->params[j].name, a) == 0)
                pi = j;
        for (int j = 0; j < f->nsyms && pi < 0; j++)
            if (strcmp(f->syms[j].name, a) == 0)
                si = j;
        if (pi < 0 && si < 0) {
            char list[1024];
            size_t n = 0;
            list[0] = 0;
            for (int j = 0; j < f->nparams && n < sizeof list; j++)
                if (!f->params[j].local)
                    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                          n ? ", " : "", f->params[j].name);
            for (int j = 0; j < f->nsyms && n < sizeof list; j++)
                n += (size_t)snprintf(list + n, sizeof list - n, ", %s",
                                      f->syms[j].name);
            cli_die(X_USAGE, "%s %s has no parameter or size '%s' (it has: "
                    "%s)", what, f->name, a, list);
        }
        if (si >= 0) {
            int64_t v;
            if (!cli_parse_i64(val, &v) || v < 0 || v > INT32_MAX)
                cli_die(X_USAGE, "bad size %s=%s: expected an integer in 0 .. "
                        "2147483647", a, val);
            if (symval[si] >= 0)
                cli_die(X_USAGE, "size %s is given twice", a);
            bind_sym(f, si, v, "the command line");
            continue;
        }
        const IrParam *p = &f->params[pi];
        if (pargs[pi].given)
            cli_die(X_USAGE, "parameter %s is given twice", a);
        pargs[pi].given = true;
        if (p->kind == PK_TENSOR) {
            if (val[0] != '@' || !val[1])
                cli_die(X_USAGE, "%s is a tensor: give %s=@PATH.npy", a, a);
            pargs[pi].path = val + 1;
        } else {
            if (val[0] == '@')
                cli_die(X_USAGE, "%s is a %s scalar: give %s=VALUE", a,
                        dsl_dtype_name(p->dtype), a);
            set_scalar(p, &pargs[pi], val);
        }
    }
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i].kind == PK_SCALAR && !pargs[i].given)
            cli_die(X_USAGE, "missing value for scalar parameter %s: give "
                    "%s=VALUE", f->params[i].name, f->params[i].name);
}

/* Load or make every tensor of the current rank (cur_rank). */
static void bind_tensors(const IrFunc *f, PArg *pargs)
{
    for (int i = 0; i < f->nparams; i++)
        if (pargs[i].given && f->params[i].kind == PK_TENSOR)
            load_tensor(f, i, &pargs[i]);
    for (int i = 0; i < f->nparams; i++)
        if (!pargs[i].given && f->params[i].kind == PK_TENSOR &&
            !f->params[i].local)
            make_tensor(f, i, &pargs[i]);
}

/* t sorted in place; its median */
static double sort_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void print_bench(const char *name, double *t, int n)
{
    double med = sort_median(t, n);
    printf("%s: bench %d runs: min %.3f ms, median %.3f ms\n", name, n, t[0],
           med);
}

/* --device=cuda[:N]|hip[:N]: the GPU runtime (runtime/gpu.h) copies the
 * host buffers to the device, launches, and copies them back. */
static int run_gpu(IrModule *m, int fi, PArg *pargs, blkc_arg *args)
{
    const IrFunc *f = m->funcs[fi];
    char err[1024] = "";
    double first = 0, *t = NULL;
    int64_t grid[3] = {0, 0, 0};
    if (cli.bench && !(t = cli_g.times = malloc((size_t)cli.bench * sizeof *t)))
        cli_die(X_RUNTIME, "out of memory");
    if (cli.stats) /* the emulated device counts loads and stores too */
        setenv("BLKC_EMU_STATS", "1", 1);
    if (cli.stats_sample) { /* blk_emu.h runs that many blocks */
        char n[32];
        snprintf(n, sizeof n, "%d", cli.stats_sample);
        setenv("BLKC_EMU_SAMPLE", n, 1);
    }
    blkc_status st = rt_gpu_run_host(cli.device, m, fi, args, f->nparams,
                                     cli.grid, cli.bench, t, &first, grid, err,
                                     sizeof err);
    if (st == BLKC_ERR_UNSUPPORTED)
        cli_die(X_RUNTIME, "running on %s is not supported here: %s",
                cli.device, err);
    if (st != BLKC_OK)
        cli_die(X_RUNTIME, "%s", err);
    if (err[0]) /* a specialized variant could not be used (gpu.h) */
        fprintf(stderr, "blkc: warning: %s\n", err);
    if (cli.nouts == 0)
        printf("%s: grid (%lld, %lld, %lld), %.3f ms on %s\n", f->name,
               (long long)grid[0], (long long)grid[1], (long long)grid[2],
               first, cli.device);
    if (cli.bench)
        print_bench(f->name, t, cli.bench);
    if (cli.stats)
        cli_print_emu_stats(f->name);
    free(t);
    cli_g.times = NULL;
    for (int i = 0; i < cli.nouts; i++)
        write_out(f, &cli.outs[i], pargs);
    free(args);
    cli_g.args = NULL;
    return X_SUCCESS;
}

/* ------------------------------------------------------------ JIT cache */

static JcCode *run_code; /* code of the entry being run */

static JcSrc run_src(const char *const *defines, int ndefines)
{
    JcSrc s = {cli_g.src, strlen(cli_g.src), defines, ndefines, "cpu", NULL,
               3, 0, 0};
    return s;
}

/* JIT view's single function through the cache (specialized on args),
 * into run_code; returns its range entry. */
static BkRangeFn jit_cached(IrModule *view, const blkc_arg *args)
{
    IrFunc *f = view->funcs[0];
    uint32_t sig[64];
    if (f->nparams <= 64 && rt_signature(f, args, f->nparams, sig))
        for (int i = 0; i < f->nparams; i++)
            f->params[i].assume = sig[i];
    BkOptions bo = {NULL, 3};
    char err[1024] = "", extra[600];
    JcSrc js = run_src(cli.defines, cli.ndefines);
    snprintf(extra, sizeof extra, "run:%s", f->name);
    jc_code_free(run_code);
    run_code = NULL;
    if (jc_cpu_code(view, &bo, &js, extra, &run_code, NULL, err, sizeof err))
        cli_die(X_RUNTIME, "JIT of %s failed: %s", f->name, err);
    BkRangeFn fn = jc_code_range(run_code, f->name);
    if (!fn)
        cli_die(X_RUNTIME, "internal: JIT lost kernel %s", f->name);
    return fn;
}

static IrModule *tuned_mod; /* the winning configuration's module */

/* The source compiled with the base defines plus config i (NULL if it
 * does not compile); *defs receives the defines used. */
static IrModule *compile_config(const JcTuneSpace *ts, int i,
                                const char **defs, char *buf, size_t n)
{
    for (int d = 0; d < cli.ndefines; d++)
        defs[d] = cli.defines[d];
    if (jc_tune_config(ts, i, buf, n, defs + cli.ndefines) != 0)
        return NULL;
    DslSource src = {cli.file, cli_g.src, strlen(cli_g.src)};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, defs,
                                    cli.ndefines + ts->nparams, NULL);
    if (diags.nerrors) {
        ir_module_free(m);
        m = NULL;
    }
    dsl_diags_free(&diags);
    return m;
}

static int find_func(const IrModule *m, const char *name)
{
    for (int i = 0; m && i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0)
            return i;
    return -1;
}

/* --tune: time every configuration on args (restored afterwards), or take
 * the cached choice for this shape bucket; point view at the winner. */
static const IrFunc *tune_entry(const IrFunc *f, IrModule *view,
                                const blkc_arg *args)
{
    JcTuneSpace ts;
    char err[512];
    if (jc_tune_parse(&ts, cli.tunes, cli.ntunes, err, sizeof err))
        cli_die(X_USAGE, "--tune: %s", err);
    const char **defs = calloc((size_t)(cli.ndefines + ts.nparams + 1),
                               sizeof *defs);
    char buf[1024], text[1024];
    if (!defs)
        cli_die(X_RUNTIME, "out of memory");
    JcSrc js = run_src(cli.defines, cli.ndefines);
    uint8_t key[32];
    jc_tune_key(&js, f->name, &ts, args, f->nparams, key);
    int best = jc_tune_lookup(key, ts.nconfigs);
    bool cached = best >= 0;
    if (!cached) {
        JcSaved *saved = jc_save_tensors(args, f->nparams);
        double best_t = -1;
        for (int i = 0; i < ts.nconfigs; i++) {
            jc_tune_text(&ts, i, text, sizeof text);
            IrModule *m = compile_config(&ts, i, defs, buf, sizeof buf);
            int k = find_func(m, f->name);
            double t = -1;
            if (k >= 0 && m->funcs[k]->nparams == f->nparams &&
                !m->funcs[k]->is_device) {
                IrModule v = {.funcs = &m->funcs[k], .nfuncs = 1};
                JcSrc cs = run_src(defs, cli.ndefines + ts.nparams);
                JcCode *code = NULL;
                char extra[600];
                snprintf(extra, sizeof extra, "run:%s", f->name);
                if (jc_cpu_code(&v, &(BkOptions){NULL, 3}, &cs, extra, &code,
                                NULL, err, sizeof err) == 0)
                    t = jc_tune_time(m->funcs[k],
                                     jc_code_range(code, f->name), args,
                                     f->nparams, 5);
                jc_code_free(code);
            }
            ir_module_free(m);
            if (t < 0)
                fprintf(stderr, "tune: %s: does not compile or run\n", text);
            else
                fprintf(stderr, "tune: %s: %.3f ms\n", text, t);
            if (t >= 0 && (best_t < 0 || t < best_t)) {
                best_t = t;
                best = i;
            }
        }
        jc_restore_tensors(saved);
        if (best < 0)
            cli_die(X_RUNTIME, "--tune: no configuration compiled and ran");
        jc_tune_store(key, best);
    }
    jc_tune_text(&ts, best, text, sizeof text);
    fprintf(stderr, "tune: best %s%s\n", text, cached ? " (cached)" : "");
    tuned_mod = compile_config(&ts, best, defs, buf, sizeof buf);
    int k = find_func(tuned_mod, f->name);
    if (k < 0)
        cli_die(X_RUNTIME, "--tune: the best configuration no longer compiles");
    /* the JIT key must name the winning defines: make them the run's */
    const char **all = calloc((size_t)(cli.ndefines + ts.nparams + 1),
                              sizeof *all);
    if (!all)
        cli_die(X_RUNTIME, "out of memory");
    memcpy(all, defs, (size_t)(cli.ndefines + ts.nparams) * sizeof *all);
    char *keep = malloc(sizeof buf);
    if (!keep)
        cli_die(X_RUNTIME, "out of memory");
    memcpy(keep, buf, sizeof buf);
    for (int d = cli.ndefines; d < cli.ndefines + ts.nparams; d++)
        all[d] = keep + (defs[d] - buf);
    free(cli.defines); /* the command line's array; its strings live in argv */
    cli.defines = all;
    cli.ndefines += ts.nparams;
    free(defs);
    jc_tune_free(&ts);
    view->funcs = &tuned_mod->funcs[k];
    return tuned_mod->funcs[k];
}

/* one launch of f's code fn on the CPU; its milliseconds (exit 3 on failure,
 * the message after what) */
static double launch_ms(const IrFunc *f, BkRangeFn fn, blkc_arg *args,
                        const blkc_launch_options *lo, const char *what)
{
    char err[1024] = "";
    double t0 = now_ms();
    blkc_status st = rt_cpu_launch(f, fn, args, f->nparams, lo, NULL, err, sizeof err);
    if (st != BLKC_OK)
        cli_die(X_RUNTIME, "%s%s", what, err);
    return now_ms() - t0;
}

/* --bench with --ab=NAME=VALUE: the kernel JIT-compiled again with NAME
 * set to VALUE in the environment (the JIT cache keys on the BLKC_CPU_*
 * switches), then N pairs alternating which runs first; the pairs' ratios
 * survive a machine whose speed drifts between runs. The last run is A's,
 * so --out writes A's results. */
static void bench_ab(IrModule *view, const IrFunc *f, BkRangeFn fa, blkc_arg *args,
                     const blkc_launch_options *lo)
{
    char name[128];
    const char *eq = strchr(cli.ab, '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - cli.ab), cli.ab);
    const char *was = getenv(name);
    char *old = was ? strdup(was) : NULL;
    JcCode *code_a = run_code;
    run_code = NULL;
    setenv(name, eq + 1, 1);
    BkRangeFn fb = jit_cached(view, args);
    if (old)
        setenv(name, old, 1);
    else
        unsetenv(name);
    free(old);
    JcCode *code_b = run_code;
    run_code = code_a;
    int n = cli.bench;
    double *t = cli_g.times = malloc((size_t)n * 3 * sizeof *t);
    if (!t)
        cli_die(X_RUNTIME, "out of memory");
    double *ta = t, *tb = t + n, *r = t + 2 * n;
    launch_ms(f, fb, args, lo, "B build: "); /* B's warm-up (A had its first run) */
    for (int i = 0; i < n; i++) { /* even i: B, A; odd i: A, B */
        if (i % 2 == 0) {
            tb[i] = launch_ms(f, fb, args, lo, "B build: ");
            ta[i] = launch_ms(f, fa, args, lo, "");
        } else {
            ta[i] = launch_ms(f, fa, args, lo, "");
            tb[i] = launch_ms(f, fb, args, lo, "B build: ");
        }
        r[i] = tb[i] / ta[i];
    }
    if (n % 2 == 0) /* the last pair ran A first: A once more, for --out */
        launch_ms(f, fa, args, lo, "");
    double rm = sort_median(r, n), bm = sort_median(tb, n);
    print_bench(f->name, ta, n);
    printf("%s: bench B (%s): min %.3f ms, median %.3f ms\n", f->name, cli.ab, tb[0], bm);
    printf("%s: bench B / A: %.3f (median of %d alternated pairs)\n", f->name, rm, n);
    jc_code_free(code_b);
    free(t);
    cli_g.times = NULL;
}

/* One rank, a kernel: launch on the thread pool. */
static int run_single(IrModule *m, int fi, PArg *pargs)
{
    const IrFunc *f = m->funcs[fi];
    IrModule view;
    memset(&view, 0, sizeof view);
    view.funcs = &m->funcs[fi];
    view.nfuncs = 1;
    bind_tensors(f, pargs);
    for (int i = 0; i < f->nparams; i++) {
        PArg *pa = &pargs[i];
        if (f->params[i].kind != PK_TENSOR)
            continue;
        pa->dl = (DLTensor){.data = pa->data, .device = {kDLCPU, 0},
                            .ndim = f->params[i].rank,
                            .dtype = rt_dtype_to_dl(f->params[i].dtype),
                            .shape = pa->shape};
        pa->arg = (blkc_arg){.kind = BLKC_ARG_TENSOR, .v.tensor = &pa->dl};
    }
    blkc_arg *args = cli_g.args = calloc((size_t)f->nparams + 1, sizeof *args);
    if (!args)
        cli_die(X_RUNTIME, "out of memory");
    for (int i = 0; i < f->nparams; i++)
        args[i] = pargs[i].arg;
    if (cli.device && strcmp(cli.device, "cpu") != 0)
        return run_gpu(m, fi, pargs, args);
    char err[1024] = "";
    if (cli.ntunes) /* --tune: the entry of the fastest configuration */
        f = tune_entry(f, &view, args);
    BkRangeFn fn = jit_cached(&view, args); /* JIT only the entry */
    blkc_launch_options lo;
    blkc_launch_options_init(&lo);
    memcpy(lo.grid, cli.grid, sizeof lo.grid);
    int64_t grid[3];
    double t0 = now_ms();
    blkc_status st = rt_cpu_launch(f, fn, args, f->nparams, &lo, grid, err,
                                   sizeof err);
    double t1 = now_ms() - t0;
    if (st != BLKC_OK)
        cli_die(X_RUNTIME, "%s", err);
    if (cli.nouts == 0)
        printf("%s: grid (%lld, %lld, %lld), %.3f ms on cpu (%d threads)\n",
               f->name, (long long)grid[0], (long long)grid[1],
               (long long)grid[2], t1, rt_pool_size());
    if (cli.ab) {
        bench_ab(&view, f, fn, args, &lo);
    } else if (cli.bench) {
        double *t = cli_g.times = malloc((size_t)cli.bench * sizeof *t);
        if (!t)
            cli_die(X_RUNTIME, "out of memory");
        for (int i = 0; i < cli.bench; i++)
            t[i] = launch_ms(f, fn, args, &lo, "");
        print_bench(f->name, t, cli.bench);
        free(t);
        cli_g.times = NULL;
    }
    for (int i = 0; i < cli.nouts; i++)
        write_out(f, &cli.outs[i], pargs);
    jc_code_free(run_code);
    run_code = NULL;
    free(args);
    cli_g.args = NULL;
    return X_SUCCESS;
}

/* Several ranks, or a device function: the plan runner, one thread per
 * rank. Inputs are bound per rank ({rank} in a path), outputs written per
 * rank ({rank}) or from rank 0. */
static int run_ranks(IrModule *m, int fi, PArg *tmpl, const int64_t *cmd_syms)
{
    const IrFunc *f = m->funcs[fi];
    int R = cli.ranks > 0 ? cli.ranks : 1;
    /* under mpirun each process is one rank: it binds its own inputs and
     * writes its own {rank} outputs; rank 0 writes the others */
    int self = rt_mpi_launch_size() > 1 ? rt_mpi_launch_rank() : -1;
    size_t np = (size_t)f->nparams + 1;
    PArg **pa = calloc((size_t)R, sizeof *pa);
    RtPlanArg **ra = calloc((size_t)R, sizeof *ra);
    if (!pa || !ra)
        cli_die(X_RUNTIME, "out of memory");
    for (int r = 0; r < R; r++) {
        cur_rank = r;
        pa[r] = calloc(np, sizeof **pa);
        ra[r] = calloc(np, sizeof **ra);
        if (!pa[r] || !ra[r])
            cli_die(X_RUNTIME, "out of memory");
        if (self >= 0 && r != self)
            continue;
        memcpy(symval, cmd_syms, ((size_t)f->nsyms + 1) * sizeof *symval);
        for (int i = 0; i < f->nparams; i++) {
            pa[r][i].given = tmpl[i].given;
            pa[r][i].path = tmpl[i].path;
            pa[r][i].arg = tmpl[i].arg;
        }
        bind_tensors(f, pa[r]);
        for (int i = 0; i < f->nparams; i++) {
            const IrParam *p = &f->params[i];
            if (p->local)
                continue;
            if (p->kind == PK_SCALAR) {
                if (dsl_is_float(p->dtype))
                    ra[r][i].scalar.f = pa[r][i].arg.v.f;
                else
                    ra[r][i].scalar.i = pa[r][i].arg.v.i;
                continue;
            }
            ra[r][i].data = pa[r][i].data;
            int64_t st = 1;
            for (int d = p->rank - 1; d >= 0; d--) {
                ra[r][i].shape[d] = pa[r][i].shape[d];
                ra[r][i].stride[d] = st;
                st *= pa[r][i].shape[d];
            }
        }
    }
    BkOptions bo = {NULL, 3};
    char err[1024] = "";
    bool gpu = cli.device && strcmp(cli.device, "cpu") != 0;
    /* the module's kernels through the JIT cache, as for one kernel */
    JcSrc js = run_src(cli.defines, cli.ndefines);
    if (!gpu && jc_cpu_code(m, &bo, &js, "ranks", &run_code, NULL, err, sizeof err) != 0)
        cli_die(X_RUNTIME, "JIT failed: %s", err);
    RtPlanModule pm = {.ir = m, .range = jc_code_range_of, .range_ctx = run_code};
    bool has_grid = cli.grid[0] || cli.grid[1] || cli.grid[2];
    int runs = 1 + (cli.bench > 0 ? cli.bench : 0);
    double *t = malloc((size_t)runs * sizeof *t);
    if (!t)
        cli_die(X_RUNTIME, "out of memory");
    for (int k = 0; k < runs; k++) {
        double t0 = now_ms();
        if (gpu) { /* GPU ranks (runtime/gpu_ranks.h) */
            blkc_status st = rt_gpur_run(&pm, fi, R, ra,
                                         has_grid ? cli.grid : NULL,
                                         cli.device, err, sizeof err);
            if (st == BLKC_ERR_UNSUPPORTED)
                cli_die(X_RUNTIME, "running %d rank%s on %s is not supported "
                        "here: %s", R, R == 1 ? "" : "s", cli.device, err);
            if (st != BLKC_OK)
                cli_die(X_RUNTIME, "%s", err);
        } else if (rt_plan_run(&pm, fi, R, ra, has_grid ? cli.grid : NULL, err,
                               sizeof err) != 0) {
            cli_die(X_RUNTIME, "%s", err);
        }
        t[k] = now_ms() - t0;
    }
    if (cli.nouts == 0 && self <= 0)
        printf("%s: %d rank%s, %.3f ms on %s%s\n", f->name, R,
               R == 1 ? "" : "s", t[0], gpu ? cli.device : "cpu",
               self >= 0 ? " (MPI processes)" : "");
    if (cli.bench && self <= 0)
        print_bench(f->name, t + 1, cli.bench);
    free(t);
    for (int i = 0; i < cli.nouts; i++) {
        bool per_rank = strstr(cli.outs[i].path, "{rank}") != NULL;
        for (int r = 0; r < (per_rank ? R : 1); r++) {
            if (self >= 0 && r != self)
                continue;
            cur_rank = r;
            write_out(f, &cli.outs[i], pa[r]);
        }
    }
    jc_code_free(run_code);
    run_code = NULL;
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < f->nparams; i++)
            free(pa[r][i].data);
        free(pa[r]);
        free(ra[r]);
    }
    free(pa);
    free(ra);
    return X_SUCCESS;
}

/* ------------------------------------------------------------ tasks */

/* A task entry (--entry names a task, or no --entry and the file has one
 * task): bind the full tensors to the task's signature as for a kernel,
 * compile the task for --ranks (task.h), scatter / run / gather, write the
 * results (`result`, `result0`, ...). Returns -1 when the entry is not a
 * task. */
static int run_task_entry(void)
{
    DslSource src = {cli.file, cli_g.src, strlen(cli_g.src)};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    DslArena arena = {0};
    AstProgram *prog = dsl_parse(&arena, &diags, &src);
    char err[1024];
    const AstFunc *fn = prog ? tk_pick_task(prog, cli.entry, err, sizeof err) : NULL;
    if (!fn) {
        dsl_diags_free(&diags);
        dsl_arena_free(&arena);
        if (err[0] && prog)
            cli_die(X_USAGE, "'%s' has %s", cli.file, err);
        return -1;
    }
    if (cli.ab)
        cli_die(X_USAGE, "--ab times one kernel: '%s' is a task", fn->name);
    if (cli.megakernel && cli.device && strcmp(cli.device, "cpu") != 0)
        cli_die(X_USAGE, "--megakernel runs tasks on CPU ranks only: GPU megakernels are not "
                "implemented (--device=%s)", cli.device);
    if (cli.device && strcmp(cli.device, "cpu") != 0)
        cli_die(X_RUNTIME, "task %s runs on cpu ranks only for now, not on "
                "--device=%s (run its device functions or kernels there)",
                fn->name, cli.device);
    /* under mpirun each process is one rank (cli_cmd_run checked
     * --ranks == -np); rank 0 writes the outputs */
    int self = rt_mpi_launch_size() > 1 ? rt_mpi_launch_rank() : -1;
    TkTask *t0 = tk_build(prog, fn, 0, cli.defines, cli.ndefines, NULL, 0, &diags);
    IrFunc *f = t0 ? tk_signature(t0) : NULL;
    if (!f)
        cli_die(X_RUNTIME, "out of memory");
    PArg *pargs = cli_g.pargs = calloc((size_t)f->nparams + 1, sizeof *pargs);
    symval = malloc(((size_t)f->nsyms + 1) * sizeof *symval);
    symsrc = calloc((size_t)f->nsyms + 1, sizeof *symsrc);
    char **sizes = calloc((size_t)f->nsyms + 1, sizeof *sizes);
    if (!pargs || !symval || !symsrc || !sizes)
        cli_die(X_RUNTIME, "out of memory");
    for (int s = 0; s < f->nsyms; s++)
        symval[s] = -1;
    parse_run_args(f, pargs);
    cur_rank = 0;
    bind_tensors(f, pargs);
    for (int s = 0; s < f->nsyms; s++) {
        sizes[s] = malloc(strlen(f->syms[s].name) + 32);
        if (!sizes[s])
            cli_die(X_RUNTIME, "out of memory");
        sprintf(sizes[s], "%s=%lld", f->syms[s].name, (long long)symval[s]);
    }
    int R = cli.ranks > 0 ? cli.ranks : 1;
    TkTopology topo;
    if (tk_topology_get("this-cpu", &topo, err, sizeof err))
        cli_die(X_RUNTIME, "%s", err);
    TkTask *t = tk_prepare(prog, fn, R, cli.defines, cli.ndefines, (const char *const *)sizes,
                           f->nsyms, cli_g.src, strlen(cli_g.src), &topo, tk_force_from_env(),
                           &diags, err, sizeof err);
    if (diags.out.len)
        fputs(diags.out.data, stderr);
    if (diags.nerrors)
        exit(X_COMPILE);
    if (!t)
        cli_die(X_RUNTIME, "%s", err);
    t->megakernel = cli.megakernel;
    TkArg *args = calloc((size_t)f->nparams + 1, sizeof *args);
    if (!args)
        cli_die(X_RUNTIME, "out of memory");
    for (int i = 0; i < f->nparams; i++) {
        args[i].data = pargs[i].data;
        memcpy(args[i].shape, pargs[i].shape, sizeof args[i].shape);
        if (f->params[i].kind == PK_SCALAR) {
            if (dsl_is_float(f->params[i].dtype))
                args[i].scalar.f = pargs[i].arg.v.f;
            else
                args[i].scalar.i = pargs[i].arg.v.i;
        }
    }
    int nin = f->nparams - t->nresults;
    int runs = 1 + (cli.bench > 0 ? cli.bench : 0);
    double *tm = malloc((size_t)runs * sizeof *tm);
    if (!tm)
        cli_die(X_RUNTIME, "out of memory");
    /* compiled once; the first time includes the compilation, --bench
     * times the runs after it */
    double c0ms = now_ms();
    TkCompiled *tc = tk_compile(t, err, sizeof err);
    if (!tc)
        cli_die(X_RUNTIME, "%s", err);
    double cms = now_ms() - c0ms;
    for (int k = 0; k < runs; k++) {
        double t0ms = now_ms();
        if (tk_exec(tc, args, args + nin, err, sizeof err))
            cli_die(X_RUNTIME, "%s", err);
        tm[k] = now_ms() - t0ms + (k == 0 ? cms : 0);
    }
    tk_compiled_free(tc);
    if (cli.nouts == 0 && self <= 0)
        printf("%s: task on %d rank%s, %.3f ms on cpu%s\n", f->name, R, R == 1 ? "" : "s",
               tm[0], self >= 0 ? " (MPI processes)" : "");
    if (cli.bench && self <= 0)
        print_bench(f->name, tm + 1, cli.bench);
    for (int i = 0; i < cli.nouts && self <= 0; i++)
        write_out(f, &cli.outs[i], pargs);
    fflush(stdout);
    free(tm);
    free(args);
    for (int i = 0; i < f->nparams; i++)
        free(pargs[i].data);
    free(pargs);
    cli_g.pargs = NULL;
    for (int s = 0; s < f->nsyms; s++)
        free(sizes[s]);
    free(sizes);
    free(symval);
    free(symsrc);
    tk_signature_free(f);
    tk_free(t0);
    tk_free(t);
    dsl_diags_free(&diags);
    dsl_arena_free(&arena);
    ir_module_free(cli_g.mod);
    cli_g.mod = NULL;
    free(cli_g.src);
    cli_g.src = NULL;
    return X_SUCCESS;
}

int cli_cmd_run(void)
{
    bool gpu = cli.device && strcmp(cli.device, "cpu") != 0;
    if (cli.stats && (!gpu || !strstr(cli.device, "-emu")))
        cli_die(X_USAGE, "--stats needs an emulated device (--device=cuda-emu or "
                "hip-emu)");
    if (cli.ab && (!cli.bench || gpu || cli.ranks > 1 || cli.ntunes))
        cli_die(X_USAGE, "--ab times one kernel on the CPU against its B build: it needs "
                "--bench=N, and no --device, --ranks or --tune");
    if (cli.stats_sample && cli.nouts)
        cli_die(X_USAGE, "--stats-sample runs only some blocks, so the outputs are "
                "partial: --out is refused");
    if (gpu && strncmp(cli.device, "cuda", 4) && strncmp(cli.device, "hip", 3))
        cli_die(X_RUNTIME, "running on %s is not supported (devices: cpu, "
                "cuda[:N], hip[:N])", cli.device);
    int np = rt_mpi_launch_size();
    if (np > 1) { /* under mpirun: one rank per process */
        if (!rt_mpi_built())
            cli_die(X_RUNTIME, "running under mpirun with %d processes, but "
                    "this blkc was built without MPI (install "
                    "libopenmpi-dev and rebuild, or run --ranks=N without "
                    "mpirun for local ranks)", np);
        if (cli.ranks != np)
            cli_die(X_RUNTIME, "mpirun started %d processes but --ranks is "
                    "%d: under mpirun, --ranks must equal -np", np,
                    cli.ranks > 0 ? cli.ranks : 1);
    }
    cli_load_source();
    IrModule *m = cli_compile_ir();
    int trc = run_task_entry();
    if (trc >= 0)
        return trc;
    int fi = pick_entry(m);
    if (cli.megakernel)
        cli_die(X_USAGE, "--megakernel runs tasks only: '%s' is a %s, not a task",
                m->funcs[fi]->name, m->funcs[fi]->is_device ? "device function" : "kernel");
    const IrFunc *f = m->funcs[fi];
    PArg *pargs = cli_g.pargs = calloc((size_t)f->nparams + 1, sizeof *pargs);
    symval = malloc(((size_t)f->nsyms + 1) * sizeof *symval);
    symsrc = calloc((size_t)f->nsyms + 1, sizeof *symsrc);
    int64_t *cmd_syms = malloc(((size_t)f->nsyms + 1) * sizeof *cmd_syms);
    if (!pargs || !symval || !symsrc || !cmd_syms)
        cli_die(X_RUNTIME, "out of memory");
    for (int s = 0; s < f->nsyms; s++)
        symval[s] = -1;
    parse_run_args(f, pargs);
    memcpy(cmd_syms, symval, ((size_t)f->nsyms + 1) * sizeof *symval);
    if (cli.ab && f->is_device)
        cli_die(X_USAGE, "--ab times one kernel: '%s' is a device function", f->name);
    int rc = f->is_device || cli.ranks > 1 ? run_ranks(m, fi, pargs, cmd_syms)
                                           : run_single(m, fi, pargs);
    fflush(stdout);
    for (int i = 0; i < f->nparams; i++)
        free(pargs[i].data);
    free(pargs);
    cli_g.pargs = NULL;
    free(cmd_syms);
    free(symval);
    free(symsrc);
    ir_module_free(cli_g.mod);
    cli_g.mod = NULL;
    free(cli_g.src);
    cli_g.src = NULL;
    return rc;
}
