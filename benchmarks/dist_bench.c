/* dist_bench.c — the device tier on local ranks (threads), measured in one
 * run:
 *   1. AllGather+GEMM (lib/ag_gemm.blk): ag_gemm (async ring of copies with
 *      signals, GEMM tiles waiting per shard) vs ag_gemm_plain (all_gather,
 *      then the GEMM), for 2 and 4 ranks; min of several runs of
 *      rt_plan_run each (world start-up included in both), and the ratio.
 *   2. all_reduce (sum, f32) of the runtime collective, looped inside one
 *      device function (start-up subtracted), as algorithm bandwidth
 *      (bytes / time) and bus bandwidth (x 2(W-1)/W), against single-thread
 *      memcpy of the same bytes.
 * Usage: dist_bench [reps]. The machine's core count matters: with more
 * ranks than cores the ranks time-share. */
#include "backends/backend.h"
#include "compiler/ir.h"
#include "runtime/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "dist_bench: %s: %s\n", what, msg);
    exit(1);
}

typedef struct Mod {
    IrModule *ir;
    BkCpuModule *cpu;
    RtPlanModule pm;
} Mod;

static Mod compile(const char *name, const char *text)
{
    DslSource src = {name, text, strlen(text)};
    DslDiags d;
    memset(&d, 0, sizeof d);
    d.src = &src;
    Mod m;
    m.ir = ir_compile_source(&src, &d, NULL, 0, NULL);
    if (!m.ir || d.nerrors)
        die(name, d.out.data ? d.out.data : "compile error");
    dsl_diags_free(&d);
    BkOptions bo = {NULL, 3};
    char err[1024];
    if (bk_cpu_jit(m.ir, &bo, &m.cpu, err, sizeof err))
        die(name, err);
    m.pm.ir = m.ir;
    m.pm.cpu = m.cpu;
    return m;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, "cannot open");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    if (!t || fread(t, 1, (size_t)n, f) != (size_t)n)
        die(path, "cannot read");
    t[n] = 0;
    fclose(f);
    return t;
}

static int fidx(const Mod *m, const char *name)
{
    for (int i = 0; i < m->ir->nfuncs; i++)
        if (!strcmp(m->ir->funcs[i]->name, name))
            return i;
    die(name, "no such function");
    return -1;
}

static int pidx(const Mod *m, int fi, const char *name)
{
    const IrFunc *f = m->ir->funcs[fi];
    for (int p = 0; p < f->nparams; p++)
        if (!f->params[p].local && !strcmp(f->params[p].name, name))
            return p;
    die(name, "no such parameter");
    return -1;
}

static void set2(RtPlanArg *a, float *data, int64_t r, int64_t c)
{
    a->data = data;
    a->shape[0] = r;
    a->shape[1] = c;
    a->stride[0] = c;
    a->stride[1] = 1;
}

/* min time of `reps` runs of entry fi on W ranks */
static double time_run(const Mod *m, int fi, int W, RtPlanArg **args, int reps)
{
    double best = 1e30;
    char err[1024];
    for (int k = 0; k < reps; k++) {
        double t0 = now();
        if (rt_plan_run(&m->pm, fi, W, (RtPlanArg *const *)args, NULL, err, sizeof err))
            die("rt_plan_run", err);
        double t = now() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

static void ag_gemm(const Mod *m, int W, int MW, int K, int N, int reps)
{
    int M = MW / W;
    const char *names[2] = {"ag_gemm", "ag_gemm_plain"};
    double t[2];
    float *a = calloc((size_t)M * K, 4), *b = calloc((size_t)K * N, 4);
    float *c[8];
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = (float)(i % 7) * 0.25f;
    for (size_t i = 0; i < (size_t)K * N; i++)
        b[i] = (float)(i % 5) * 0.5f;
    RtPlanArg *args[2][8];
    int fis[2];
    for (int v = 0; v < 2; v++) {
        int fi = fis[v] = fidx(m, names[v]);
        for (int r = 0; r < W; r++) {
            args[v][r] = calloc((size_t)m->ir->funcs[fi]->nparams + 1, sizeof(RtPlanArg));
            if (v == 0)
                c[r] = calloc((size_t)MW * N, 4);
            set2(&args[v][r][pidx(m, fi, "a")], a, M, K);
            set2(&args[v][r][pidx(m, fi, "b")], b, K, N);
            set2(&args[v][r][pidx(m, fi, "c")], c[r], MW, N);
        }
        t[v] = 1e30;
    }
    /* alternate the variants so that load on the machine hits both alike */
    for (int k = 0; k < reps; k++)
        for (int v = 0; v < 2; v++) {
            double e = time_run(m, fis[v], W, args[v], 1);
            if (e < t[v])
                t[v] = e;
        }
    for (int r = 0; r < W; r++) {
        free(args[0][r]);
        free(args[1][r]);
        free(c[r]);
    }
    double gf = 2.0 * MW * K * N * W / 1e9; /* every rank computes all of C */
    printf("| AllGather+GEMM, %d ranks, C %dx%d, K %d | %.2f ms (%.1f GFLOP/s) | %.2f ms | %.2fx |\n",
           W, MW, N, K, t[0] * 1e3, gf / t[0], t[1] * 1e3, t[1] / t[0]);
    free(a);
    free(b);
}

static const char *ar_src =
    "device ar_loop(b: f32[N], reps: i32) {\n"
    "    for i in 0 .. reps { all_reduce(b, op = sum); }\n"
    "}\n";

static void all_reduce(const Mod *m, int W, size_t n, int loops, int reps)
{
    int fi = fidx(m, "ar_loop");
    RtPlanArg *args[8];
    for (int r = 0; r < W; r++) {
        args[r] = calloc((size_t)m->ir->funcs[fi]->nparams + 1, sizeof(RtPlanArg));
        RtPlanArg *a = &args[r][pidx(m, fi, "b")];
        a->data = calloc(n, 4);
        a->shape[0] = (int64_t)n;
        a->stride[0] = 1;
    }
    int pr = pidx(m, fi, "reps");
    for (int r = 0; r < W; r++)
        args[r][pr].scalar.i = 0;
    double t0 = time_run(m, fi, W, args, reps);
    for (int r = 0; r < W; r++)
        args[r][pr].scalar.i = loops;
    double t1 = time_run(m, fi, W, args, reps);
    double per = (t1 - t0) / loops, bytes = (double)n * 4;
    /* memcpy of the same bytes, single thread */
    char *s = malloc(n * 4), *d = malloc(n * 4);
    memset(s, 1, n * 4);
    memset(d, 0, n * 4);
    double mc = 1e30;
    for (int k = 0; k < 10; k++) {
        double a = now();
        memcpy(d, s, n * 4);
        double e = now() - a;
        if (e < mc)
            mc = e;
    }
    printf("| all_reduce f32 sum, %d ranks, %.1f MB | %.3f ms: %.2f GB/s alg, %.2f GB/s bus | memcpy %.3f ms: %.2f GB/s | %.2fx |\n",
           W, bytes / 1e6, per * 1e3, bytes / per / 1e9,
           bytes / per / 1e9 * 2.0 * (W - 1) / W, mc * 1e3, bytes / mc / 1e9,
           (bytes / per) / (bytes / mc));
    free(s);
    free(d);
    for (int r = 0; r < W; r++) {
        free(args[r][pidx(m, fi, "b")].data);
        free(args[r]);
    }
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1)
        reps = 1;
    char path[1024];
    snprintf(path, sizeof path, "%s/lib/ag_gemm.blk", BLKC_SOURCE_DIR);
    char *text = slurp(path);
    Mod ag = compile(path, text);
    Mod ar = compile("ar_loop.blk", ar_src);
    printf("dist_bench: local ranks (threads), %ld online CPUs, min of %d runs\n\n",
           sysconf(_SC_NPROCESSORS_ONLN), reps);
    printf("| pattern | overlapped (ag_gemm) | all_gather then GEMM | plain / overlapped |\n");
    printf("|---|---|---|---|\n");
    ag_gemm(&ag, 2, 512, 512, 512, reps);
    ag_gemm(&ag, 4, 512, 512, 512, reps);
    ag_gemm(&ag, 2, 256, 2048, 256, reps);
    ag_gemm(&ag, 4, 256, 2048, 256, reps);
    printf("\n| collective | blkc | baseline | ratio |\n|---|---|---|---|\n");
    all_reduce(&ar, 2, (size_t)1 << 20, 20, reps);
    all_reduce(&ar, 4, (size_t)1 << 20, 20, reps);
    all_reduce(&ar, 2, (size_t)1 << 24 >> 2, 5, reps);
    all_reduce(&ar, 4, (size_t)1 << 24 >> 2, 5, reps);
    bk_cpu_free(ag.cpu);
    ir_module_free(ag.ir);
    bk_cpu_free(ar.cpu);
    ir_module_free(ar.ir);
    free(text);
    return 0;
}
