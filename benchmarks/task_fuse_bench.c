/* task_fuse_bench.c — the task tier's elementwise fusion, measured in one
 * run: a task made of an elementwise chain (9 ops over [T, H] f32, a
 * broadcast bias and a scalar), compiled twice from the same Task IR —
 * fused (one generated kernel) and unfused (TkTask.no_fuse: one kernel
 * per op) — and run on 1 and 2 local ranks with tk_exec (compilation
 * outside the timing; world start-up inside both). Prints min and median
 * of the runs and the unfused / fused time ratio, and checks that both
 * give the same bits.
 * Usage: task_fuse_bench [reps] [T] [H]. */
#include "compiler/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const SRC =
    "task ew(x: f32[T, H], b: f32[H], g: f32[T, H], s: f32) -> f32[T, H] {\n"
    "    let y = silu(x * s + b) * g - 0.5 * x;\n"
    "    return tanh(y) * 2.0 + x;\n"
    "}\n";

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "task_fuse_bench: %s: %s\n", what, msg);
    exit(1);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    long T = argc > 2 ? atol(argv[2]) : 1024, H = argc > 3 ? atol(argv[3]) : 2048;
    if (reps < 1 || T < 2 || H < 2 || T % 2)
        die("usage", "task_fuse_bench [reps >= 1] [T even] [H]");
    DslSource src = {"<task_fuse_bench>", SRC, strlen(SRC)};
    DslDiags d;
    memset(&d, 0, sizeof d);
    d.src = &src;
    DslArena arena = {0};
    AstProgram *prog = dsl_parse(&arena, &d, &src);
    if (!prog || d.nerrors)
        die("parse", d.out.data ? d.out.data : "error");
    const AstFunc *fn = prog->funcs[0];
    char s1[32], s2[32];
    snprintf(s1, sizeof s1, "T=%ld", T);
    snprintf(s2, sizeof s2, "H=%ld", H);
    const char *sizes[2] = {s1, s2};
    size_t n = (size_t)T * (size_t)H;
    float *x = malloc(n * 4), *g = malloc(n * 4), *b = malloc((size_t)H * 4);
    float *out[2] = {malloc(n * 4), malloc(n * 4)};
    if (!x || !g || !b || !out[0] || !out[1])
        die("memory", "out of memory");
    unsigned st = 12345;
    for (size_t i = 0; i < n; i++) {
        st = st * 1103515245u + 12345u;
        x[i] = (float)((st >> 8) % 2000) / 1000.0f - 1.0f;
        g[i] = (float)((st >> 4) % 1000) / 1000.0f;
    }
    for (long i = 0; i < H; i++)
        b[i] = (float)i / (float)H - 0.5f;
    TkArg args[5];
    memset(args, 0, sizeof args);
    args[0].data = x;
    args[0].shape[0] = T;
    args[0].shape[1] = H;
    args[1].data = b;
    args[1].shape[0] = H;
    args[2].data = g;
    args[2].shape[0] = T;
    args[2].shape[1] = H;
    args[3].scalar.f = 0.75;
    TkTopology topo;
    char err[2048];
    if (tk_topology_get("this-cpu", &topo, err, sizeof err))
        die("topology", err);
    printf("| elementwise chain (9 ops), f32 [%ld, %ld] | ranks | fused (1 kernel) | "
           "unfused (9 kernels) | unfused / fused |\n|---|---|---|---|---|\n", T, H);
    for (int R = 1; R <= 2; R++) {
        double med[2], mn[2];
        for (int v = 0; v < 2; v++) {
            TkTask *t = tk_build(prog, fn, R, NULL, 0, sizes, 2, &d);
            if (!t || tk_propagate(t, &d))
                die("build", d.out.data ? d.out.data : "error");
            tk_place(t, &topo, 0);
            t->no_fuse = v == 1;
            TkCompiled *c = tk_compile(t, err, sizeof err);
            if (!c)
                die("compile", err);
            args[4].data = out[v];
            args[4].shape[0] = T;
            args[4].shape[1] = H;
            double *tm = malloc(sizeof *tm * (size_t)reps);
            if (!tm)
                die("memory", "out of memory");
            if (tk_exec(c, args, &args[4], err, sizeof err)) /* warm-up */
                die("run", err);
            for (int k = 0; k < reps; k++) {
                double t0 = now_ms();
                if (tk_exec(c, args, &args[4], err, sizeof err))
                    die("run", err);
                tm[k] = now_ms() - t0;
            }
            qsort(tm, (size_t)reps, sizeof *tm, cmpd);
            mn[v] = tm[0];
            med[v] = tm[reps / 2];
            free(tm);
            tk_compiled_free(c);
            tk_free(t);
        }
        if (memcmp(out[0], out[1], n * 4) != 0)
            die("check", "fused and unfused results differ");
        printf("| | %d | min %.2f ms, median %.2f ms | min %.2f ms, median %.2f ms | "
               "%.2fx (min), %.2fx (median) |\n", R, mn[0], med[0], mn[1], med[1],
               mn[1] / mn[0], med[1] / med[0]);
    }
    printf("(fused and unfused results are bit-identical)\n");
    dsl_diags_free(&d);
    dsl_arena_free(&arena);
    free(x);
    free(g);
    free(b);
    free(out[0]);
    free(out[1]);
    return 0;
}
