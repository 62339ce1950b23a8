/* task_run.c — running a task on local ranks: compile the Task IR's
 * generated source with the normal pipeline, JIT its kernels, scatter the
 * full input tensors to the ranks by their shardings (a replicated input
 * is shared, a split one is sliced; on a mesh each rank gets its box), run
 * the device function on every rank with the plan runner, and gather the
 * results (split: concatenated; replicated: rank 0's). Also tk_check, the
 * task branch of ir_lower. */
#include "task.h"
#include "cache.h"

#include "../backends/backend.h"
#include "../runtime/mega.h"
#include "../runtime/plan.h"
#include "../runtime/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tk_check(const AstProgram *prog, const AstFunc *fn, const char *const *defines,
              int ndefines, DslDiags *diags)
{
    TkTask *t = tk_build(prog, fn, 0, defines, ndefines, NULL, 0, diags);
    if (t)
        tk_propagate(t, diags);
    tk_free(t);
}

/* Copy shard `r` of a [outer, D, inner] view along dim d (to_full: the
 * other way). */
static void shard_copy(char *full, char *local, const int64_t *shape, int rank, int d, int R,
                       int r, size_t esz, bool to_full)
{
    int64_t outer = 1, inner = 1;
    for (int e = 0; e < d; e++)
        outer *= shape[e];
    for (int e = d + 1; e < rank; e++)
        inner *= shape[e];
    int64_t D = shape[d], Dl = D / R;
    size_t run = (size_t)(Dl * inner) * esz;
    for (int64_t o = 0; o < outer; o++) {
        char *f = full + (size_t)((o * D + r * Dl) * inner) * esz;
        char *l = local + (size_t)o * run;
        if (to_full)
            memcpy(f, l, run);
        else
            memcpy(l, f, run);
    }
}

/* On a mesh: the box of rank r's shard of a tensor of global `dims` with
 * per-axis shardings msh: lo[d] +: len[d] (a dim split on several axes:
 * the first axis outermost). Returns whether any axis splits it. */
static bool mesh_box(const TkTask *t, const TkShard *msh, const int64_t *dims, int rank, int r,
                     int64_t *lo, int64_t *len)
{
    bool split = false;
    int64_t idx[IR_MAX_RANK] = {0}; /* the shard's index along each dim */
    for (int d = 0; d < rank; d++)
        len[d] = dims[d];
    for (int a = 0; a < t->naxes; a++)
        if (msh[a].kind == SH_SPLIT) {
            int d = msh[a].dim;
            len[d] /= t->axsize[a];
            idx[d] = idx[d] * t->axsize[a] + r / t->axstride[a] % t->axsize[a];
            split = true;
        }
    for (int d = 0; d < rank; d++)
        lo[d] = idx[d] * len[d];
    return split;
}

/* Copy the box lo[d] +: len[d] of a full C-order tensor of `shape` from
 * (to_full: to) a dense local buffer. */
static void box_copy(char *full, char *local, const int64_t *shape, const int64_t *lo,
                     const int64_t *len, int rank, size_t esz, bool to_full)
{
    int64_t idx[IR_MAX_RANK] = {0}, rows = 1;
    for (int d = 0; d + 1 < rank; d++)
        rows *= len[d];
    size_t run = (size_t)len[rank - 1] * esz;
    for (int64_t k = 0; k < rows; k++) {
        int64_t off = 0;
        for (int d = 0; d < rank; d++)
            off = off * shape[d] + lo[d] + (d + 1 < rank ? idx[d] : 0);
        char *f = full + (size_t)off * esz, *l = local + (size_t)k * run;
        if (to_full)
            memcpy(f, l, run);
        else
            memcpy(l, f, run);
        for (int d = rank - 2; d >= 0; d--) {
            if (++idx[d] < len[d])
                break;
            idx[d] = 0;
        }
    }
}

static int find_func(const IrModule *m, const char *name)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0)
            return i;
    return -1;
}

/* A called kernel / device function must not write its inputs (they may
 * be task parameters shared by the ranks, or values used elsewhere). */
static int written_inputs(const TkTask *t, const IrModule *m, char *err, size_t errlen)
{
    for (int i = 0; i < t->nn; i++) {
        if (t->n[i].op != TK_CALL)
            continue;
        const AstFunc *cf = t->prog->funcs[t->n[i].callee];
        int fi = find_func(m, cf->name);
        if (fi < 0)
            continue;
        const IrFunc *f = m->funcs[fi];
        for (int p = 0; p + 1 < f->nparams; p++)
            if (f->params[p].kind == PK_TENSOR && f->params[p].written) {
                snprintf(err, errlen, "%s '%s' writes its parameter '%s', which task %s passes "
                         "as an input; a task's calls read their arguments and write only "
                         "their last parameter (the result)",
                         cf->fkind == FN_KERNEL ? "kernel" : "device function", cf->name,
                         f->params[p].name, t->fn->name);
                return -1;
            }
    }
    return 0;
}

struct TkCompiled {
    const TkTask *t;
    IrModule *m;
    JcCode *code;                  /* its kernels, through the JIT cache */
    int fi;
    RtMegaRec *mrec;               /* megakernel mode: its tables, kept
                                      between runs */
    int holds;                     /* atomic: runs that left ranks behind
                                      holding it, -1 once tk_compiled_free
                                      was called: freed at -1 */
};

/* RtPlanModule.hold: a rank left behind may still run c's code and IR. */
static void compiled_hold(const void *ctx, int delta)
{
    TkCompiled *c = (TkCompiled *)ctx;
    if (__atomic_add_fetch(&c->holds, delta, __ATOMIC_ACQ_REL) != -1)
        return;
    jc_code_free(c->code);
    if (c->mrec)
        rt_mega_rec_free(c->mrec);
    free(c->mrec);
    ir_module_free(c->m);
    free(c);
}

void tk_compiled_free(TkCompiled *c)
{
    if (c)
        compiled_hold(c, -1);
}

TkCompiled *tk_compile(const TkTask *t, char *err, size_t errlen)
{
    DslBuf src = {0};
    if (tk_lower_src(t, &src, err, errlen)) {
        dsl_buf_free(&src);
        return NULL;
    }
    if (getenv("BLKC_TASK_DUMP")) /* debugging: the generated source */
        fprintf(stderr, "%s", src.data);
    char srcname[128];
    snprintf(srcname, sizeof srcname, "<task %s>", t->fn->name);
    DslSource s = {srcname, src.data, src.len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    bool calls = false;
    for (int i = 0; i < t->nn; i++)
        calls |= t->n[i].op == TK_CALL;
    IrModule *m = ir_compile_source(&s, &diags, calls ? t->defines : NULL,
                                    calls ? t->ndefines : 0, NULL);
    if (!m || diags.nerrors) {
        dsl_buf_free(&src);
        snprintf(err, errlen, "internal: the code generated for task %s does not compile: %s",
                 t->fn->name, diags.out.data ? diags.out.data : "out of memory");
        dsl_diags_free(&diags);
        ir_module_free(m);
        return NULL;
    }
    dsl_diags_free(&diags);
    TkCompiled *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        dsl_buf_free(&src);
        ir_module_free(m);
        return NULL;
    }
    c->t = t;
    c->m = m;
    char fname[128];
    snprintf(fname, sizeof fname, "__task_%s", t->fn->name);
    c->fi = find_func(m, fname);
    BkOptions bo = {NULL, 3};
    if (c->fi < 0) {
        snprintf(err, errlen, "internal: task entry missing");
        goto fail;
    }
    if (written_inputs(t, m, err, errlen))
        goto fail;
    /* the generated source (with the defines of the calls' files) is the
     * cache key: a rerun of the same task, ranks and placement links the
     * cached object instead of running LLVM (docs/jit.md) */
    JcSrc js = {src.data, src.len, calls ? t->defines : NULL, calls ? t->ndefines : 0,
                "cpu", NULL, 3, 0, 0};
    if (jc_cpu_code(m, &bo, &js, "task", &c->code, NULL, err, errlen))
        goto fail;
    dsl_buf_free(&src);
    return c;
fail:
    dsl_buf_free(&src);
    tk_compiled_free(c);
    return NULL;
}

int tk_run(const TkTask *t, const TkArg *args, TkArg *results, char *err, size_t errlen)
{
    TkCompiled *c = tk_compile(t, err, errlen);
    if (!c)
        return -1;
    int rc = tk_exec(c, args, results, err, errlen);
    tk_compiled_free(c);
    return rc;
}

int tk_exec(TkCompiled *c, const TkArg *args, TkArg *results, char *err, size_t errlen)
{
    const TkTask *t = c->t;
    IrModule *m = c->m;
    int fi = c->fi;
    int R = t->nranks, rc = -1;
    const IrFunc *f = m->funcs[fi];
    RtPlanArg **ra = calloc((size_t)R, sizeof *ra);
    if (!ra) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* device params: task params in node order (tensors, scalars), then results */
    int nres0 = 0;
    for (int i = 0; i < t->nn; i++)
        if (t->n[i].op == TK_PARAM || t->n[i].op == TK_SCALAR)
            nres0++;
    if (nres0 + t->nresults != f->nparams - 0 && f->nparams < nres0 + t->nresults) {
        snprintf(err, errlen, "internal: task parameter count");
        goto out;
    }
    /* under mpirun each process is one rank: it fills only its own
     * arguments (rt_plan_run reads no other), and its results are whole
     * (the caller declared them replicated) on rank 0 */
    int self = rt_mpi_launch_size() > 1 ? rt_mpi_launch_rank() : -1;
    for (int r = 0; r < t->nresults && self >= 0; r++) {
        int64_t lo[IR_MAX_RANK], len[IR_MAX_RANK];
        const TkNode *n = &t->n[t->results[r]];
        if (t->res_sh[r].kind == SH_SPLIT ||
            (t->naxes && mesh_box(t, &t->res_msh[r * TK_MAX_AXES], n->dims, n->rank, 0, lo, len))) {
            snprintf(err, errlen, "internal: task %s under mpirun with a split result",
                     t->fn->name);
            goto out;
        }
    }
    for (int r = 0; r < R; r++) {
        ra[r] = calloc((size_t)f->nparams + 1, sizeof **ra);
        if (!ra[r]) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        if (self >= 0 && r != self)
            continue;
        int p = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < (pass ? t->nresults : t->nn); i++) {
                const TkNode *n = pass ? &t->n[t->results[i]] : &t->n[i];
                if (!pass && n->op != TK_PARAM && n->op != TK_SCALAR)
                    continue;
                TkShard sh = pass ? t->res_sh[i] : n->sh;
                RtPlanArg *a = &ra[r][p++];
                if (n->op == TK_SCALAR && !pass) {
                    a->scalar = args[n->param].scalar;
                    continue;
                }
                size_t esz = (size_t)dsl_dtype_bytes(n->dtype);
                int64_t st = 1, numel = 1, lo[IR_MAX_RANK], len[IR_MAX_RANK];
                bool msplit = t->naxes && mesh_box(t, pass ? &t->res_msh[i * TK_MAX_AXES]
                                                           : n->msh, n->dims, n->rank, r, lo, len);
                for (int d = n->rank - 1; d >= 0; d--) {
                    a->shape[d] = tk_local_dim(t, n, d);
                    if (sh.kind == SH_SPLIT && sh.dim == d)
                        a->shape[d] = n->dims[d] / R;
                    if (t->naxes)
                        a->shape[d] = len[d];
                    a->stride[d] = st;
                    st *= a->shape[d];
                    numel *= a->shape[d];
                }
                const TkArg *full = pass ? &results[i] : &args[n->param];
                if (!pass && sh.kind != SH_SPLIT && !msplit) {
                    a->data = full->data; /* read only: shared */
                    continue;
                }
                a->data = malloc((size_t)numel * esz + 1);
                if (!a->data) {
                    snprintf(err, errlen, "out of memory");
                    goto out;
                }
                if (!pass && msplit)
                    box_copy(full->data, a->data, full->shape, lo, len, n->rank, esz, false);
                else if (!pass)
                    shard_copy(full->data, a->data, full->shape, n->rank, sh.dim, R, r, esz, false);
            }
    }
    if (t->megakernel && !t->mega_rec && !c->mrec) {
        if (!(c->mrec = calloc(1, sizeof *c->mrec))) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        c->mrec->cache_on = true;
    }
    RtPlanModule pm = {.ir = m, .range = jc_code_range_of, .range_ctx = c->code,
                       .mega = !t->megakernel ? NULL : t->mega_rec ? t->mega_rec : c->mrec,
                       .hold = compiled_hold, .hold_ctx = c};
    if (rt_plan_run(&pm, fi, R, ra, NULL, err, errlen))
        goto out;
    /* gather the results */
    for (int i = 0; i < t->nresults && self <= 0; i++) {
        const TkNode *n = &t->n[t->results[i]];
        int p = nres0 + i;
        size_t esz = (size_t)dsl_dtype_bytes(n->dtype);
        TkShard sh = t->res_sh[i];
        if (t->naxes) {
            int64_t lo[IR_MAX_RANK], len[IR_MAX_RANK];
            for (int r = 0; r < R; r++)
                if (mesh_box(t, &t->res_msh[i * TK_MAX_AXES], n->dims, n->rank, r, lo, len) || !r)
                    box_copy(results[i].data, ra[r][p].data, results[i].shape, lo, len, n->rank,
                             esz, true);
            continue;
        }
        if (sh.kind != SH_SPLIT) {
            memcpy(results[i].data, ra[0][p].data, (size_t)tk_numel(n) * esz);
            continue;
        }
        for (int r = 0; r < R; r++)
            shard_copy(results[i].data, ra[r][p].data, results[i].shape, n->rank, sh.dim, R, r,
                       esz, true);
    }
    rc = 0;
out:
    if (ra) {
        for (int r = 0; r < R; r++) {
            if (!ra[r])
                continue;
            int p = 0;
            for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < (pass ? t->nresults : t->nn); i++) {
                    const TkNode *n = pass ? &t->n[t->results[i]] : &t->n[i];
                    if (!pass && n->op != TK_PARAM && n->op != TK_SCALAR)
                        continue;
                    TkShard sh = pass ? t->res_sh[i] : n->sh;
                    int64_t lo[IR_MAX_RANK], len[IR_MAX_RANK];
                    if (pass || (n->op == TK_PARAM && sh.kind == SH_SPLIT) ||
                        (n->op == TK_PARAM && t->naxes &&
                         mesh_box(t, n->msh, n->dims, n->rank, r, lo, len)))
                        free(ra[r][p].data);
                    p++;
                }
            free(ra[r]);
        }
        free(ra);
    }
    return rc;
}

/* ------------------------------------------------------------ CLI helpers */

const AstFunc *tk_pick_task(const AstProgram *prog, const char *entry, char *err,
                            size_t errlen)
{
    const AstFunc *one = NULL;
    int n = 0;
    size_t k = 0;
    char list[512] = "";
    err[0] = 0;
    for (int i = 0; i < prog->nfuncs; i++) {
        const AstFunc *f = prog->funcs[i];
        if (f->fkind != FN_TASK)
            continue;
        if (entry && strcmp(f->name, entry) == 0)
            return f;
        n++;
        one = f;
        if (k < sizeof list)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", f->name);
    }
    if (entry || n == 0)
        return NULL;
    if (n > 1) {
        snprintf(err, errlen, "%d tasks (%s): choose one with --entry=NAME", n, list);
        return NULL;
    }
    return one;
}

/* The task's parameters and results as an IrFunc signature: tensors with
 * full (unsharded) shapes, scalars, then `result` / `result0`, ... */
IrFunc *tk_signature(const TkTask *t)
{
    IrFunc *f = calloc(1, sizeof *f);
    int np = 0;
    for (int i = 0; i < t->nn; i++)
        if (t->n[i].op == TK_PARAM || t->n[i].op == TK_SCALAR)
            np++;
    if (!f)
        return NULL;
    f->params = calloc((size_t)(np + t->nresults) + 1, sizeof *f->params);
    f->syms = calloc((size_t)t->nsyms + 1, sizeof *f->syms);
    char (*rn)[24] = calloc((size_t)t->nresults + 1, sizeof *rn);
    if (!f->params || !f->syms || !rn) {
        free(f->params);
        free(f->syms);
        free(rn);
        free(f);
        return NULL;
    }
    f->name = t->fn->name;
    f->loc = t->fn->loc;
    f->is_device = true;
    f->vars = (IrVar *)(void *)rn; /* owns the result names (freed with f) */
    for (int s = 0; s < t->nsyms; s++)
        f->syms[s] = (IrSym){t->syms[s], -1, -1};
    f->nsyms = t->nsyms;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (pass ? t->nresults : t->nn); i++) {
            const TkNode *n = pass ? &t->n[t->results[i]] : &t->n[i];
            if (!pass && n->op != TK_PARAM && n->op != TK_SCALAR)
                continue;
            IrParam *p = &f->params[f->nparams];
            if (pass) {
                if (t->nresults == 1)
                    snprintf(rn[i], sizeof rn[i], "result");
                else
                    snprintf(rn[i], sizeof rn[i], "result%d", i);
                p->name = rn[i];
                p->written = true;
            } else {
                p->name = n->name;
            }
            p->kind = n->op == TK_SCALAR && !pass ? PK_SCALAR : PK_TENSOR;
            p->dtype = (uint8_t)n->dtype;
            p->rank = (uint8_t)n->rank;
            for (int d = 0; d < n->rank; d++) {
                p->dims[d] = n->dsym[d] >= 0 ? -1 - n->dsym[d] : n->dims[d];
                if (n->dsym[d] >= 0 && f->syms[n->dsym[d]].param < 0) {
                    f->syms[n->dsym[d]].param = f->nparams;
                    f->syms[n->dsym[d]].dim = d;
                }
            }
            f->nparams++;
        }
    return f;
}

void tk_signature_free(IrFunc *f)
{
    if (!f)
        return;
    free(f->params);
    free(f->syms);
    free(f->vars);
    free(f);
}

/* ------------------------------------------------------------ shared prepare */

TkTask *tk_prepare(const AstProgram *prog, const AstFunc *fn, int nranks,
                   const char *const *defines, int ndefines, const char *const *sizes,
                   int nsizes, const char *src, size_t srclen, const TkTopology *topo,
                   int force, DslDiags *diags, char *err, size_t errlen)
{
    err[0] = 0;
    TkTask *t = tk_build(prog, fn, nranks, defines, ndefines, sizes, nsizes, diags);
    if (!t || diags->nerrors) {
        if (!diags->nerrors)
            snprintf(err, errlen, "out of memory");
        tk_free(t);
        return NULL;
    }
    for (int s = 0; s < t->nsyms; s++)
        if (t->symval[s] < 0) {
            snprintf(err, errlen, "task %s needs the size %s: give %s=VALUE", fn->name,
                     t->syms[s], t->syms[s]);
            tk_free(t);
            return NULL;
        }
    t->src = src; /* calls of the file's kernels / device functions */
    t->srclen = srclen;
    /* under mpirun each process is one rank and rank 0 holds whole results:
     * the task gathers them (a split result gets an all_gather at its end) */
    if (rt_mpi_launch_size() > 1)
        for (int r = 0; r < t->nresults; r++) {
            t->res_sh[r] = (TkShard){SH_REPL, 0};
            for (int a = 0; a < TK_MAX_AXES; a++)
                t->res_msh[r * TK_MAX_AXES + a] = (TkShard){SH_REPL, 0};
        }
    if (tk_propagate(t, diags) || diags->nerrors) {
        tk_free(t);
        return NULL;
    }
    tk_place(t, topo, force);
    return t;
}
