/* dist_test.h — helpers for the dist tests: compile a .blk file of the
 * repository (lib/ or tests/dist/) once with the internal pipeline and JIT,
 * find an entry, fill per-rank RtPlanArg arrays, run them on N local ranks
 * with rt_plan_run, and compare against references computed in plain C.
 * The check counters and dtype helpers come from tests/ranks/rk_test.h.
 *
 * Everything is static: include it from exactly one test file. */
#ifndef BLKC_TESTS_DIST_TEST_H
#define BLKC_TESTS_DIST_TEST_H

#include "ranks/rk_test.h"

#include "backends/backend.h"
#include "compiler/ir.h"
#include "runtime/plan.h"

#include <stdarg.h>

#define DT_MAXR 8 /* most ranks a test runs */

static const int dt_worlds[] = {1, 2, 3, 4, 8};
#define DT_NWORLDS 5

typedef struct DtMod {
    IrModule *ir;
    BkCpuModule *cpu;
    RtPlanModule pm;
} DtMod;

/* Compile BLKC_SOURCE_DIR/rel (defines: "NAME=VALUE" strings). Exits on
 * failure: nothing else can be tested then. */
static inline DtMod dt_load(const char *rel, const char *const *defines,
                            int ndefines)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", BLKC_SOURCE_DIR, rel);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *text = t_xmalloc((size_t)n + 1);
    if (fread(text, 1, (size_t)n, fp) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    text[n] = 0;
    fclose(fp);
    DslSource src = {path, text, (size_t)n};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    DtMod m;
    memset(&m, 0, sizeof m);
    m.ir = ir_compile_source(&src, &diags, defines, ndefines, NULL);
    if (!m.ir || diags.nerrors) {
        fprintf(stderr, "%s does not compile:\n%s\n", rel,
                diags.out.data ? diags.out.data : "");
        exit(1);
    }
    dsl_diags_free(&diags);
    BkOptions bo = {NULL, 3};
    char err[1024] = "";
    if (bk_cpu_jit(m.ir, &bo, &m.cpu, err, sizeof err)) {
        fprintf(stderr, "JIT of %s failed: %s\n", rel, err);
        exit(1);
    }
    m.pm.ir = m.ir;
    m.pm.cpu = m.cpu;
    free(text); /* the IR copies what it needs into its arena */
    return m;
}

static inline void dt_free(DtMod *m)
{
    bk_cpu_free(m->cpu);
    ir_module_free(m->ir);
}

static inline int dt_entry(const DtMod *m, const char *name)
{
    for (int i = 0; i < m->ir->nfuncs; i++)
        if (strcmp(m->ir->funcs[i]->name, name) == 0)
            return i;
    fprintf(stderr, "no function %s\n", name);
    exit(1);
}

static inline int dt_param(const DtMod *m, int fi, const char *name)
{
    const IrFunc *f = m->ir->funcs[fi];
    for (int p = 0; p < f->nparams; p++)
        if (!f->params[p].local && strcmp(f->params[p].name, name) == 0)
            return p;
    fprintf(stderr, "%s has no parameter %s\n", f->name, name);
    exit(1);
}

/* Per-rank argument arrays for entry fi on W ranks. */
typedef struct DtArgs {
    const DtMod *m;
    int fi, W;
    RtPlanArg *a[DT_MAXR];
    void *owned[DT_MAXR][32];   /* buffers to free */
    int nowned[DT_MAXR];
} DtArgs;

static inline void dt_args_init(DtArgs *A, const DtMod *m, int fi, int W)
{
    memset(A, 0, sizeof *A);
    A->m = m;
    A->fi = fi;
    A->W = W;
    int np = m->ir->funcs[fi]->nparams + 1;
    for (int r = 0; r < W; r++)
        A->a[r] = calloc((size_t)np, sizeof(RtPlanArg));
}

static inline void dt_args_free(DtArgs *A)
{
    for (int r = 0; r < A->W; r++) {
        for (int i = 0; i < A->nowned[r]; i++)
            free(A->owned[r][i]);
        free(A->a[r]);
    }
}

/* Give rank r's tensor `name` a zeroed C-order buffer of the given shape
 * (ndim extents); returns it (owned by A). DT_T(A, r, "x", 4, 5) is the
 * same with the extents listed. */
static inline void *dt_tensorv(DtArgs *A, int r, const char *name,
                               const int64_t *shape, int ndim)
{
    int p = dt_param(A->m, A->fi, name);
    RtPlanArg *x = &A->a[r][p];
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        x->shape[d] = shape[d];
        n *= shape[d];
    }
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        x->stride[d] = st;
        st *= x->shape[d];
    }
    size_t es = (size_t)dsl_dtype_bytes(A->m->ir->funcs[A->fi]->params[p].dtype);
    x->data = calloc((size_t)(n ? n : 1), es);
    A->owned[r][A->nowned[r]++] = x->data;
    return x->data;
}
#define DT_T(A, r, name, ...)                                              \
    dt_tensorv(A, r, name, (const int64_t[]){__VA_ARGS__},                 \
               (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

static inline void dt_int(DtArgs *A, int r, const char *name, int64_t v)
{
    A->a[r][dt_param(A->m, A->fi, name)].scalar.i = v;
}

/* Run; returns rt_plan_run's result, the message in err. */
static inline int dt_run(DtArgs *A, char *err, size_t errlen)
{
    err[0] = 0;
    return rt_plan_run(&A->m->pm, A->fi, A->W, (RtPlanArg *const *)A->a, NULL,
                       err, errlen);
}

/* Run and count a check that it succeeded. */
static inline int dt_run_ok(DtArgs *A, const char *what)
{
    char err[1024];
    int rc = dt_run(A, err, sizeof err);
    T_CHECK(rc == 0, "%s on %d ranks failed: %s", what, A->W, err);
    return rc;
}

/* Deterministic floats in [-1, 1) (multiples of 1/64, so small sums are exact). */
static inline void dt_fill(float *x, size_t n, int rank, int seed)
{
    uint32_t s = 2654435761u * (uint32_t)(rank + 1) + 40503u * (uint32_t)(seed + 7);
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int)(s >> 25) - 64) / 64.0f;
    }
}

/* |got - want| <= tol * (1 + |want|) for n floats; one check. */
static inline int dt_close(const float *got, const double *want, size_t n,
                           double tol, const char *what, int W, int rank)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= tol * (1.0 + fabs(want[i])))) {
            T_CHECK(0, "%s W=%d rank %d: element %zu is %.7g, want %.7g", what,
                    W, rank, i, (double)got[i], want[i]);
            return 0;
        }
    }
    T_CHECK(1, "ok");
    return 1;
}

#endif
