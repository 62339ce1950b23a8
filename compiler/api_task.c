/* api_task.c — libblkc's multi-rank entry points (include/blkc/blkc.h):
 * tasks (blkc_task_*: plan and run a task on local CPU ranks, as `blkc
 * plan` / `blkc run --entry=TASK` do) and blkc_kernel_run_ranks (a device
 * function or kernel on N local ranks). Errors as in api.c: a status plus
 * the thread's last error; never prints, exits or aborts. */
#include "api.h"
#include "task.h"
#include "../runtime/plan.h"
#include "../runtime/ranks.h"
#include "../runtime/rt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    bool megakernel;           /* blkc_task_options.megakernel */
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
        return api_err(BLKC_ERR_COMPILE, "%s", d->out.data);
    return api_err(BLKC_ERR_COMPILE, "%s: compile failed", what);
}

BLKC_API blkc_status blkc_task_create(const char *source, size_t len,
                                      const blkc_compile_options *opts,
                                      const char *name,
                                      const blkc_task_options *topts,
                                      blkc_task **out)
{
    if (!out)
        return api_err(BLKC_ERR_USAGE, "blkc_task_create: out is NULL");
    *out = NULL;
    if (opts && opts->target != BLKC_TARGET_CPU)
        return api_err(BLKC_ERR_UNSUPPORTED, "tasks run on cpu ranks only for now, "
                       "not on target %s", api_target_name(opts->target));
    if (topts && (topts->ranks < 0 || topts->ranks > 1024))
        return api_err(BLKC_ERR_USAGE, "ranks %d is not 1..1024 (0 = 1)", topts->ranks);
    if (topts && (topts->overlap < -1 || topts->overlap > 1))
        return api_err(BLKC_ERR_USAGE, "overlap %d is not -1, 0 or 1", topts->overlap);
    if (topts && (topts->megakernel < 0 || topts->megakernel > 1))
        return api_err(BLKC_ERR_USAGE, "megakernel %d is not 0 or 1", topts->megakernel);
    char *text;
    blkc_status st = api_prepare(source, &len, opts, &text);
    if (st != BLKC_OK)
        return st;
    /* the whole file must compile (as `blkc run` / `blkc plan` check) */
    IrModule *m = NULL;
    st = api_compile_ir(text, len, opts, &m);
    ir_module_free(m);
    if (st != BLKC_OK) {
        free(text);
        return st;
    }
    blkc_task *t = calloc(1, sizeof *t);
    if (!t) {
        free(text);
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    }
    t->text = text;
    t->len = len;
    t->ranks = topts && topts->ranks ? topts->ranks : 1;
    t->overlap = topts ? topts->overlap : 0;
    t->megakernel = topts && topts->megakernel;
    pthread_mutex_init(&t->mu, NULL);
    t->name = strdup(api_src_name(opts));
    int nd = opts ? opts->ndefines : 0;
    t->defines = calloc((size_t)nd + 1, sizeof *t->defines);
    if (!t->name || !t->defines) {
        blkc_task_destroy(t);
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nd; i++)
        if (!(t->defines[t->ndefines++] = strdup(opts->defines[i]))) {
            blkc_task_destroy(t);
            return api_err(BLKC_ERR_NOMEM, "out of memory");
        }
    char err[1024] = "";
    if (tk_topology_get(topts && topts->topology ? topts->topology : "this-cpu", &t->topo, err,
                        sizeof err)) {
        blkc_task_destroy(t);
        return api_err(BLKC_ERR_USAGE, "%s", err);
    }
    DslSource src = {t->name, t->text, t->len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    t->prog = dsl_parse(&t->arena, &diags, &src);
    if (!t->prog || diags.nerrors) {
        st = t->prog ? task_diags(&diags, t->name) : api_err(BLKC_ERR_NOMEM, "out of memory");
        dsl_diags_free(&diags);
        blkc_task_destroy(t);
        return st;
    }
    t->fn = tk_pick_task(t->prog, name, err, sizeof err);
    if (!t->fn) {
        dsl_diags_free(&diags);
        if (err[0]) {
            blkc_task_destroy(t);
            return api_err(BLKC_ERR_USAGE, "%s has %s", src.name, err);
        }
        char list[512] = "";
        size_t k = 0;
        for (int i = 0; i < t->prog->nfuncs && k < sizeof list; i++)
            if (t->prog->funcs[i]->fkind == FN_TASK)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "",
                                      t->prog->funcs[i]->name);
        st = name ? api_err(BLKC_ERR_NOT_FOUND, "no task named '%s' in %s (tasks: %s)", name,
                            src.name, k ? list : "none")
                  : api_err(BLKC_ERR_NOT_FOUND, "%s has no task", src.name);
        blkc_task_destroy(t);
        return st;
    }
    t->sig_t = tk_build(t->prog, t->fn, 0, (const char *const *)t->defines, t->ndefines, NULL,
                        0, &diags);
    t->sig = t->sig_t ? tk_signature(t->sig_t) : NULL;
    if (!t->sig) {
        st = diags.nerrors ? task_diags(&diags, t->name)
                           : api_err(BLKC_ERR_NOMEM, "out of memory");
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
        return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s is NULL", what, p->name, tn);
    if (!dl_dense_cpu(dl))
        return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s must be a C-contiguous CPU "
                       "tensor (device type %d)", what, p->name, tn,
                       (int)dl->device.device_type);
    int dt = rt_dtype_from_dl(dl->dtype);
    if (dt != p->dtype)
        return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s has dtype %s, expected %s", what,
                       p->name, tn, dt >= 0 ? dsl_dtype_name(dt) : "(not a blkc dtype)",
                       dsl_dtype_name(p->dtype));
    if (dl->ndim != p->rank)
        return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s has %d dims, expected %d", what,
                       p->name, tn, dl->ndim, p->rank);
    if (p->rank && (!dl->shape || !dl->data))
        return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s has no %s", what, p->name, tn,
                       dl->shape ? "data" : "shape");
    for (int d = 0; d < p->rank; d++) {
        int64_t v = dl->shape[d];
        if (p->dims[d] >= 0) {
            if (v != p->dims[d])
                return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s: dim %d is %lld, expected "
                               "%lld", what, p->name, tn, d, (long long)v,
                               (long long)p->dims[d]);
            continue;
        }
        int s = -1 - (int)p->dims[d];
        if (v < 1)
            return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s: size %s = %lld is not "
                           "positive", what, p->name, tn, t->sig->syms[s].name, (long long)v);
        if (symval[s] < 0)
            symval[s] = v;
        else if (symval[s] != v)
            return api_err(BLKC_ERR_USAGE, "%s '%s' of task %s: dim %d is %lld, but size %s "
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
        return api_err(BLKC_ERR_USAGE, "task %s takes %d argument%s (%s), got %d", tn, t->nin,
                       t->nin == 1 ? "" : "s", list, nargs);
    }
    for (int i = 0; i < t->nin; i++) {
        const IrParam *p = &t->sig->params[i];
        if (p->kind == PK_SCALAR) {
            if (args[i].kind == BLKC_ARG_TENSOR ||
                (args[i].kind == BLKC_ARG_FLOAT && !dsl_is_float(p->dtype)))
                return api_err(BLKC_ERR_USAGE, "argument '%s' of task %s is a %s scalar, "
                               "got a %s", p->name, tn, dsl_dtype_name(p->dtype),
                               args[i].kind == BLKC_ARG_TENSOR ? "tensor" : "float");
            continue;
        }
        if (args[i].kind != BLKC_ARG_TENSOR)
            return api_err(BLKC_ERR_USAGE, "argument '%s' of task %s is a tensor, got a "
                           "scalar", p->name, tn);
        blkc_status st = bind_tensor(t, i, args[i].v.tensor, symval, "argument");
        if (st != BLKC_OK)
            return st;
    }
    if (results) {
        if (nresults != t->sig_t->nresults)
            return api_err(BLKC_ERR_USAGE, "task %s has %d result%s, got %d result tensors",
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
            return api_err(BLKC_ERR_USAGE, "task %s: size %s is not given by any %s tensor",
                           tn, t->sig->syms[s].name, results ? "argument or result" : "argument");
    return BLKC_OK;
}

BLKC_API blkc_status blkc_task_result_shape(const blkc_task *t, const blkc_arg *args,
                                            int nargs, int i, DLDataType *dtype, int *ndim,
                                            int64_t *shape)
{
    if (!t || !ndim || !shape)
        return api_err(BLKC_ERR_USAGE, "blkc_task_result_shape: NULL %s",
                       !t ? "task" : !ndim ? "ndim" : "shape");
    if (i < 0 || i >= t->sig_t->nresults)
        return api_err(BLKC_ERR_USAGE, "task %s has %d result%s; no result %d", t->fn->name,
                       t->sig_t->nresults, t->sig_t->nresults == 1 ? "" : "s", i);
    int64_t *symval = malloc(((size_t)t->sig->nsyms + 1) * sizeof *symval);
    if (!symval)
        return api_err(BLKC_ERR_NOMEM, "out of memory");
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
        return api_err(BLKC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (int s = 0; s < ns; s++) {
        size_t n = strlen(t->sig->syms[s].name) + 24;
        if (!((*sizes)[s] = malloc(n)))
            return api_err(BLKC_ERR_NOMEM, "out of memory");
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
                           : api_err(strstr(err, "memory") ? BLKC_ERR_NOMEM : BLKC_ERR_USAGE,
                                     "%s", err);
    dsl_diags_free(&diags);
    return st;
}

BLKC_API blkc_status blkc_task_plan(blkc_task *t, const char *const *sizes, int nsizes,
                                    int json, char **out, size_t *outlen)
{
    if (!t || !out)
        return api_err(BLKC_ERR_USAGE, "blkc_task_plan: NULL %s", !t ? "task" : "out");
    *out = NULL;
    if (nsizes < 0 || (nsizes && !sizes))
        return api_err(BLKC_ERR_USAGE, "bad sizes (%d given, array %s)", nsizes,
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
            return api_err(BLKC_ERR_USAGE, "size %d '%s' of task %s is not NAME=VALUE with "
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
        return api_err(BLKC_ERR_NOMEM, "out of memory");
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
        return api_err(BLKC_ERR_USAGE, "blkc_task_run: task is NULL");
    if (!results)
        return api_err(BLKC_ERR_USAGE, "blkc_task_run: results is NULL");
    if (rt_mpi_launch_size() > 1 && rt_mpi_launch_size() != t->ranks)
        return api_err(BLKC_ERR_USAGE, "mpirun started %d processes but the task has %d "
                       "ranks: under mpirun, ranks must equal -np", rt_mpi_launch_size(),
                       t->ranks);
    int ns = t->sig->nsyms, np = t->sig->nparams;
    int64_t *symval = malloc(((size_t)ns + 1) * sizeof *symval);
    TkArg *ta = calloc((size_t)np + 1, sizeof *ta);
    char **sizes = NULL, *key = NULL;
    blkc_status st = !symval || !ta ? api_err(BLKC_ERR_NOMEM, "out of memory") : BLKC_OK;
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
            t->t->megakernel = t->megakernel;
            t->tc = tk_compile(t->t, err, sizeof err);
            if (!t->tc)
                st = api_err(BLKC_ERR_RUNTIME, "%s", err[0] ? err : "task compile failed");
        }
        if (st == BLKC_OK) {
            t->key = key;
            key = NULL;
        }
    }
    if (st == BLKC_OK) {
        char err[1024] = "";
        if (tk_exec(t->tc, ta, ta + t->nin, err, sizeof err))
            st = api_err(BLKC_ERR_RUNTIME, "%s", err[0] ? err : "task run failed");
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

/* RtPlanModule.range over a module's kernels (their JIT'd range entries) */
static BkRangeFn module_range(const void *ctx, const char *name)
{
    const blkc_module *m = ctx;
    for (int i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i].func->name, name) == 0)
            return m->kernels[i].range;
    return NULL;
}

BLKC_API blkc_status blkc_kernel_run_ranks(blkc_kernel *k, int nranks, const blkc_arg *args,
                                           int nargs, const blkc_launch_options *opts)
{
    if (!k)
        return api_err(BLKC_ERR_USAGE, "blkc_kernel_run_ranks: kernel is NULL");
    const IrFunc *f = k->func;
    if (k->module->gpu)
        return api_err(BLKC_ERR_UNSUPPORTED, "blkc_kernel_run_ranks runs on cpu ranks only "
                       "for now (%s is in a GPU module)", f->name);
    if (nranks < 1 || nranks > 1024)
        return api_err(BLKC_ERR_USAGE, "nranks %d is not 1..1024", nranks);
    int nuser = 0;
    for (int p = 0; p < f->nparams; p++)
        nuser += !f->params[p].local;
    if (nargs != nuser || (nargs && !args))
        return api_err(BLKC_ERR_USAGE, "%s takes %d argument%s per rank, got %d", f->name,
                       nuser, nuser == 1 ? "" : "s", nargs);
    if (rt_mpi_launch_size() > 1)
        return api_err(BLKC_ERR_UNSUPPORTED, "blkc_kernel_run_ranks under mpirun: use "
                       "blkc_kernel_launch per process");
    RtPlanArg **ra = calloc((size_t)nranks, sizeof *ra);
    int64_t *symval = malloc(((size_t)f->nsyms + 1) * sizeof *symval);
    blkc_status st = !ra || !symval ? api_err(BLKC_ERR_NOMEM, "out of memory") : BLKC_OK;
    for (int r = 0; r < nranks && st == BLKC_OK; r++) {
        ra[r] = calloc((size_t)f->nparams + 1, sizeof **ra);
        if (!ra[r]) {
            st = api_err(BLKC_ERR_NOMEM, "out of memory");
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
                    st = api_err(BLKC_ERR_USAGE, "rank %d: parameter '%s' of %s is a %s "
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
                st = api_err(BLKC_ERR_USAGE, "rank %d: parameter '%s' of %s is a tensor, got "
                             "%s", r, ip->name, f->name,
                             x->kind == BLKC_ARG_TENSOR ? "NULL" : "a scalar");
            else if (dl->device.device_type != kDLCPU &&
                     dl->device.device_type != kDLCUDAHost)
                st = api_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' is not in host memory "
                             "(device type %d)", r, ip->name, (int)dl->device.device_type);
            else if (dt != ip->dtype)
                st = api_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' of %s has dtype %s, "
                             "expected %s", r, ip->name, f->name,
                             dt >= 0 ? dsl_dtype_name(dt) : "(not a blkc dtype)",
                             dsl_dtype_name(ip->dtype));
            else if (dl->ndim != ip->rank || (ip->rank && (!dl->shape || !dl->data)))
                st = api_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' of %s has %d dims, "
                             "expected %d", r, ip->name, f->name, dl->ndim, ip->rank);
            int64_t sst = 1;
            for (int d = ip->rank - 1; d >= 0 && st == BLKC_OK; d--) {
                int64_t v = dl->shape[d];
                ra[r][p].shape[d] = v;
                ra[r][p].stride[d] = dl->strides ? dl->strides[d] : sst;
                sst *= v;
                int64_t want = ip->dims[d] >= 0 ? ip->dims[d] : symval[-1 - ip->dims[d]];
                if (v < 0 || (want >= 0 && v != want))
                    st = api_err(BLKC_ERR_USAGE, "rank %d: tensor '%s' of %s: dim %d is %lld, "
                                 "expected %lld", r, ip->name, f->name, d, (long long)v,
                                 (long long)want);
                else if (ip->dims[d] < 0)
                    symval[-1 - ip->dims[d]] = v;
            }
            if (st == BLKC_OK)
                ra[r][p].data = (char *)dl->data + dl->byte_offset;
        }
    }
    if (st == BLKC_OK) { /* the module's own (cached) code, no second JIT */
        char err[1024] = "";
        RtPlanModule pm = {.ir = k->module->ir, .range = module_range,
                           .range_ctx = k->module, .hold = api_module_hold,
                           .hold_ctx = k->module};
        bool has_grid = opts && (opts->grid[0] || opts->grid[1] || opts->grid[2]);
        if (rt_plan_run(&pm, k->index, nranks, ra, has_grid ? opts->grid : NULL,
                        err, sizeof err) != 0)
            st = api_err(BLKC_ERR_RUNTIME, "%s", err[0] ? err : "run failed");
    }
    for (int r = 0; ra && r < nranks; r++)
        free(ra[r]);
    free(ra);
    free(symval);
    return st;
}
