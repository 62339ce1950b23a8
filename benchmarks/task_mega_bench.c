/* task_mega_bench.c — megakernel mode (docs/task.md "Megakernel mode")
 * against one launch per op, in one run: a 4-layer MLP stack
 * (tensor-parallel, residual, an all_reduce per layer) and an attention
 * decode step (one new token per sequence against a KV cache, heads split
 * over the ranks), each compiled once and run with tk_exec on 1 and 2
 * local ranks, the two modes alternating rep by rep (A B, B A, ...) so
 * that load on the machine hits both alike. Prints min and median per
 * mode and the launch-per-op / megakernel ratio, and checks that both
 * modes give the same bits.
 * Usage: task_mega_bench [reps] [T] [H] (MLP tokens and width; the decode
 * step: B = 4 sequences, NH = 8 heads of D = H / 8, S = 4 T cached). */
#include "compiler/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const SRC =
    "task mlp4(x: f32[T, H], a1: f32[H, F] split(1), b1: f32[F, H] split(0),\n"
    "          a2: f32[H, F] split(1), b2: f32[F, H] split(0),\n"
    "          a3: f32[H, F] split(1), b3: f32[F, H] split(0),\n"
    "          a4: f32[H, F] split(1), b4: f32[F, H] split(0)) -> f32[T, H] {\n"
    "    let h1 = x + silu(x @ a1) @ b1;\n"
    "    let h2 = h1 + silu(h1 @ a2) @ b2;\n"
    "    let h3 = h2 + silu(h2 @ a3) @ b3;\n"
    "    return h3 + silu(h3 @ a4) @ b4;\n"
    "}\n"
    "task decode(x: f32[B, H], wq: f32[NH, H, D] split(0), kc: f32[NH, S, D] split(0),\n"
    "            vc: f32[NH, S, D] split(0), wo: f32[NH, D, H] split(0)) -> f32[B, H] {\n"
    "    let q = x @ wq;\n"
    "    let p = softmax(q @ trans(kc) * 0.125, 2);\n"
    "    let o = p @ vc;\n"
    "    return sum(o @ wo, 0);\n"
    "}\n";

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "task_mega_bench: %s: %s\n", what, msg);
    exit(1);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Run task fi of prog with `sizes` on R ranks in both modes, alternating;
 * print one table row. */
static void bench(const AstProgram *prog, int fi, const char *label, const char *const *sizes,
                  int nsizes, int R, int reps, DslDiags *d)
{
    TkTopology topo;
    char err[2048];
    if (tk_topology_get("this-cpu", &topo, err, sizeof err))
        die("topology", err);
    TkTask *t = tk_build(prog, prog->funcs[fi], R, NULL, 0, sizes, nsizes, d);
    if (!t || tk_propagate(t, d))
        die("build", d->out.data ? d->out.data : "error");
    tk_place(t, &topo, 0);
    TkCompiled *c = tk_compile(t, err, sizeof err);
    if (!c)
        die("compile", err);
    /* inputs in parameter order, then the result (one per mode) */
    TkArg args[16];
    memset(args, 0, sizeof args);
    int np = 0;
    unsigned st = 12345;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op != TK_PARAM)
            continue;
        TkArg *a = &args[n->param];
        int64_t numel = tk_numel(n);
        float *p = malloc((size_t)numel * 4);
        if (!p)
            die("memory", "out of memory");
        for (int64_t k = 0; k < numel; k++) {
            st = st * 1103515245u + 12345u;
            p[k] = ((float)((st >> 8) % 2000) / 1000.0f - 1.0f) * (n->param ? 0.05f : 1.0f);
        }
        a->data = p;
        memcpy(a->shape, n->dims, sizeof a->shape);
        np = n->param + 1 > np ? n->param + 1 : np;
    }
    const TkNode *rn = &t->n[t->results[0]];
    int64_t rnum = tk_numel(rn);
    TkArg res[2];
    memset(res, 0, sizeof res);
    for (int v = 0; v < 2; v++) {
        res[v].data = calloc((size_t)rnum, 4);
        if (!res[v].data)
            die("memory", "out of memory");
        memcpy(res[v].shape, rn->dims, sizeof res[v].shape);
    }
    double *tm[2] = {malloc(sizeof(double) * (size_t)reps), malloc(sizeof(double) * (size_t)reps)};
    if (!tm[0] || !tm[1])
        die("memory", "out of memory");
    for (int v = 0; v < 2; v++) { /* warm-up */
        t->megakernel = v == 1;
        if (tk_exec(c, args, &res[v], err, sizeof err))
            die("run", err);
    }
    for (int k = 0; k < reps; k++)
        for (int j = 0; j < 2; j++) {
            int v = (k & 1) ? 1 - j : j;
            t->megakernel = v == 1;
            double t0 = now_ms();
            if (tk_exec(c, args, &res[v], err, sizeof err))
                die("run", err);
            tm[v][k] = now_ms() - t0;
        }
    if (memcmp(res[0].data, res[1].data, (size_t)rnum * 4) != 0)
        die("check", "megakernel and launch-per-op results differ");
    double mn[2], med[2];
    for (int v = 0; v < 2; v++) {
        qsort(tm[v], (size_t)reps, sizeof *tm[v], cmpd);
        mn[v] = tm[v][0];
        med[v] = tm[v][reps / 2];
    }
    printf("| %s | %d | min %.3f ms, median %.3f ms | min %.3f ms, median %.3f ms | "
           "%.2fx (min), %.2fx (median) |\n", label, R, mn[0], med[0], mn[1], med[1],
           mn[0] / mn[1], med[0] / med[1]);
    fflush(stdout);
    for (int i = 0; i < np; i++)
        free(args[i].data);
    free(res[0].data);
    free(res[1].data);
    free(tm[0]);
    free(tm[1]);
    tk_compiled_free(c);
    tk_free(t);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    long T = argc > 2 ? atol(argv[2]) : 64, H = argc > 3 ? atol(argv[3]) : 512;
    if (reps < 1 || T < 2 || H < 16 || H % 16 || T % 2)
        die("usage", "task_mega_bench [reps >= 1] [T even] [H, a multiple of 16]");
    DslSource src = {"<task_mega_bench>", SRC, strlen(SRC)};
    DslDiags d;
    memset(&d, 0, sizeof d);
    d.src = &src;
    DslArena arena = {0};
    AstProgram *prog = dsl_parse(&arena, &d, &src);
    if (!prog || d.nerrors)
        die("parse", d.out.data ? d.out.data : "error");
    char s[6][32];
    snprintf(s[0], sizeof s[0], "T=%ld", T);
    snprintf(s[1], sizeof s[1], "H=%ld", H);
    snprintf(s[2], sizeof s[2], "F=%ld", 2 * H);
    const char *mlp[3] = {s[0], s[1], s[2]};
    snprintf(s[3], sizeof s[3], "S=%ld", 4 * T);
    snprintf(s[4], sizeof s[4], "D=%ld", H / 8);
    const char *dec[5] = {"B=4", s[1], "NH=8", s[3], s[4]};
    printf("| task | ranks | launch per op | megakernel | per op / megakernel |\n"
           "|---|---|---|---|---|\n");
    char l1[96], l2[128];
    snprintf(l1, sizeof l1, "4-layer MLP stack, f32 T=%ld H=%ld F=%ld", T, H, 2 * H);
    snprintf(l2, sizeof l2, "attention decode step, f32 B=4 H=%ld NH=8 D=%ld S=%ld", H, H / 8,
             4 * T);
    for (int R = 1; R <= 2; R++)
        bench(prog, 0, l1, mlp, 3, R, reps, &d);
    for (int R = 1; R <= 2; R++)
        bench(prog, 1, l2, dec, 5, R, reps, &d);
    printf("(both modes give the same bits; modes alternate rep by rep)\n");
    dsl_diags_free(&d);
    dsl_arena_free(&arena);
    return 0;
}
