/* jit_bench.c — JIT latency: compile time per stage (front end: parse,
 * check + lower, passes; CPU backend: LLVM codegen to an object) for the
 * examples, beside NVRTC alone on the same generated CUDA source (skipped
 * when NVRTC is absent); module creation cold (compile) vs warm (disk
 * cache, new context) vs hot (memory cache); and host-side launch overhead
 * of an empty kernel through blkc_kernel_launch and the bare runtime
 * launcher; cold compiles in-process vs isolated (the blkc-cc worker).
 * Goals (issue 6): blkc's own stages <= 5% of NVRTC; warm <= 1 ms;
 * hot <= 5 us; launch overhead <= 3 us beyond the kernel. */
#include "../compiler/cache.h"
#include "../runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *b = malloc(1 << 20);
    *len = fread(b, 1, (1 << 20) - 1, fp);
    b[*len] = 0;
    fclose(fp);
    return b;
}

static void stages(const char *name)
{
    char path[512];
    size_t len;
    snprintf(path, sizeof path, "%s/examples/%s", BLKC_SOURCE_DIR, name);
    char *text = slurp(path, &len);
    if (!text)
        return;
    IrTiming best = {1e9, 1e9, 1e9};
    IrModule *m = NULL;
    for (int r = 0; r < 20; r++) {
        DslSource src = {name, text, len};
        DslDiags d;
        memset(&d, 0, sizeof d);
        IrTiming t;
        ir_module_free(m);
        m = ir_compile_source(&src, &d, NULL, 0, &t);
        dsl_diags_free(&d);
        if (!m)
            break;
        if (t.parse_ms < best.parse_ms) best.parse_ms = t.parse_ms;
        if (t.lower_ms < best.lower_ms) best.lower_ms = t.lower_ms;
        if (t.passes_ms < best.passes_ms) best.passes_ms = t.passes_ms;
    }
    if (!m) {
        printf("| %s | (does not compile) |\n", name);
        free(text);
        return;
    }
    BkOptions bo = {NULL, 3};
    char err[1024];
    DslBuf b;
    memset(&b, 0, sizeof b);
    double t0 = now_ms();
    int ok = bk_cpu_backend.emit(m, &bo, "obj", &b, err, sizeof err) == 0;
    double llvm = now_ms() - t0;
    dsl_buf_free(&b);
    memset(&b, 0, sizeof b);
    BkOptions co = {"sm_90", 3};
    t0 = now_ms();
    int cu = bk_cuda_backend.emit(m, &co, "cuda", &b, err, sizeof err) == 0;
    double emit_cuda = now_ms() - t0;
    dsl_buf_free(&b);
    memset(&b, 0, sizeof b);
    double nvrtc = -1;
    if (cu) {
        t0 = now_ms();
        if (bk_cuda_backend.emit(m, &co, "cubin", &b, err, sizeof err) == 0)
            nvrtc = now_ms() - t0 - emit_cuda;
        dsl_buf_free(&b);
    }
    double own = best.parse_ms + best.lower_ms + best.passes_ms;
    char nv[64] = "n/a (no NVRTC)", pct[32] = "-";
    if (nvrtc > 0) {
        snprintf(nv, sizeof nv, "%.1f ms", nvrtc);
        snprintf(pct, sizeof pct, "%.2f%%", 100 * (own + emit_cuda) / nvrtc);
    }
    printf("| %s | %.3f | %.3f | %.3f | %.3f | %s | %s | %s |\n", name,
           best.parse_ms, best.lower_ms, best.passes_ms, emit_cuda,
           ok ? (snprintf(path, sizeof path, "%.1f ms", llvm), path) : "fail",
           nv, pct);
    ir_module_free(m);
    free(text);
}

static double per_call_us(double t0, int reps)
{
    return (now_ms() - t0) / reps * 1e3;
}

/* Grids of 1, 4 and 64 instances of the same trivial kernel (opts->grid
 * overrides its grid(1)): blkc_kernel_launch, rt_cpu_launch, the pool
 * without the caller's help (rt_pool_run: the hand-off every launch paid
 * before) and the range function called directly over the whole grid on
 * this thread, in the same run. */
static void grids(blkc_kernel *k, const blkc_arg *a, const IrFunc *f,
                  BkRangeFn fn, void *const *argv, int reps)
{
    printf("\n## launch overhead by grid size, same empty kernel (mean of "
           "%d; BLKC_NUM_THREADS=%s)\n\n", reps,
           getenv("BLKC_NUM_THREADS") ? getenv("BLKC_NUM_THREADS") : "all");
    printf("| instances | blkc_kernel_launch | rt_cpu_launch | pool, caller "
           "not helping (old path) | direct call of the range function | "
           "blkc_kernel_launch - direct |\n|---|---|---|---|---|---|\n");
    const int64_t sizes[3] = {1, 4, 64};
    char err[512];
    for (int s = 0; s < 3; s++) {
        blkc_launch_options lo;
        blkc_launch_options_init(&lo);
        lo.grid[0] = sizes[s];
        lo.grid[1] = lo.grid[2] = 1;
        blkc_kernel_launch(k, a, 1, &lo);
        double t0 = now_ms();
        for (int r = 0; r < reps; r++)
            blkc_kernel_launch(k, a, 1, &lo);
        double api = per_call_us(t0, reps);
        t0 = now_ms();
        for (int r = 0; r < reps; r++)
            rt_cpu_launch(f, fn, a, 1, &lo, NULL, err, sizeof err);
        double rt = per_call_us(t0, reps);
        int64_t g[3] = {sizes[s], 1, 1};
        BkLaunchCtx ctx;
        t0 = now_ms();
        for (int r = 0; r < reps; r++) {
            memset(&ctx, 0, sizeof ctx);
            ctx.world = 1;
            rt_pool_run(fn, argv, g, &ctx, err, sizeof err);
        }
        double old = per_call_us(t0, reps);
        int32_t nprog[8] = {(int32_t)sizes[s], 1, 1, 0, 1};
        t0 = now_ms();
        for (int r = 0; r < reps; r++)
            fn(argv, 0, sizes[s], nprog);
        double direct = per_call_us(t0, reps);
        printf("| %lld | %.2f us | %.2f us | %.2f us | %.3f us | %.2f us |\n",
               (long long)sizes[s], api, rt, old, direct, api - direct);
    }
}

/* vadd compiled general vs with launch facts (IrParam.assume on every
 * tensor param); each range function runs over the whole grid on this
 * thread (no pool, no launcher: the code itself), batches of the two
 * alternating, min of 31 batches each. */
static const char *vadd_src =
    "kernel vadd<BLOCK = 256>(A: f32[N], B: f32[N], C: f32[N])\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK] * 2.0;\n"
    "}\n";

typedef struct Compiled {
    IrModule *m;
    JcCode *code;
    BkRangeFn fn;
} Compiled;

static Compiled vadd_compile(uint32_t assume, int block)
{
    char def[32];
    snprintf(def, sizeof def, "BLOCK=%d", block);
    const char *defs[1] = {def};
    Compiled c = {NULL, NULL, NULL};
    DslSource s = {"vadd", vadd_src, strlen(vadd_src)};
    DslDiags d;
    memset(&d, 0, sizeof d);
    c.m = ir_compile_source(&s, &d, defs, 1, NULL);
    dsl_diags_free(&d);
    if (!c.m)
        return c;
    for (int p = 0; p < c.m->funcs[0]->nparams; p++)
        c.m->funcs[0]->params[p].assume = assume;
    char err[512];
    JcSrc js = {vadd_src, strlen(vadd_src), defs, 1, "cpu", NULL, 3, 0, 0};
    if (jc_cpu_code(c.m, &(BkOptions){NULL, 3}, &js, "bench", &c.code, NULL,
                    err, sizeof err) == 0)
        c.fn = jc_code_range(c.code, "vadd");
    return c;
}

static double vadd_batch(BkRangeFn fn, int block, int64_t n, float *a,
                         float *b, float *c, int reps)
{
    BkTensorDesc da = {a, {n}, {1}}, db = {b, {n}, {1}}, dc = {c, {n}, {1}};
    void *argv[3] = {&da, &db, &dc};
    int64_t g = (n + block - 1) / block;
    int32_t nprog[8] = {(int32_t)g, 1, 1, 0, 1};
    double t0 = now_ms();
    for (int r = 0; r < reps; r++)
        fn(argv, 0, g, nprog);
    double t = (now_ms() - t0) / reps * 1e3;
    for (int64_t i = 0; i < n; i++)
        if (c[i] != a[i] + 2 * b[i])
            return 1e30; /* wrong: never the minimum */
    return t;
}

/* One row: general vs specialized vadd with BLOCK `block` over n floats. */
static void spec_row(const Compiled *gen, const Compiled *spec, int block,
                     int64_t n)
{
    float *a = aligned_alloc(64, (size_t)n * 4);
    float *b = aligned_alloc(64, (size_t)n * 4);
    float *c = aligned_alloc(64, (size_t)n * 4);
    for (int64_t k = 0; k < n; k++) {
        a[k] = (float)k;
        b[k] = (float)(k % 7);
    }
    int reps = n < (1 << 22) ? (int)(((int64_t)1 << 22) / n) : 1;
    double tg = 1e30, ts = 1e30;
    for (int batch = 0; batch < 31; batch++) {
        double t = vadd_batch(gen->fn, block, n, a, b, c, reps);
        tg = t < tg ? t : tg;
        t = vadd_batch(spec->fn, block, n, a, b, c, reps);
        ts = t < ts ? t : ts;
    }
    printf("| %d | %lld | %.2f us | %.2f us | %.2fx |\n", block, (long long)n,
           tg, ts, tg / ts);
    free(a);
    free(b);
    free(c);
}

static void specialization(void)
{
    printf("\n## specialization: vadd (C = A + 2B) compiled general vs with "
           "every fact (aligned, unit stride, N %% 16 == 0); range function "
           "over the whole grid on this thread, alternating batches, min of "
           "31 each\n\n");
    printf("| BLOCK | N | general | specialized | general / specialized |\n"
           "|---|---|---|---|---|\n");
    const int blocks[2] = {16, 256};
    const int64_t sizes[3] = {4096, 65536, 1 << 20};
    for (int bi = 0; bi < 2; bi++) {
        Compiled gen = vadd_compile(0, blocks[bi]);
        Compiled spec = vadd_compile(IR_ASSUME_ALIGN16 |
                                     IR_ASSUME_UNIT_INNER |
                                     IR_ASSUME_DIM16(0), blocks[bi]);
        for (int i = 0; gen.fn && spec.fn && i < 3; i++)
            spec_row(&gen, &spec, blocks[bi], sizes[i]);
        jc_code_free(gen.code);
        jc_code_free(spec.code);
        ir_module_free(gen.m);
        ir_module_free(spec.m);
    }
}

static const char *empty_src =
    "kernel empty(X: f32[N]) grid(1)\n{\n    let x = X[0 +: 1];\n}\n";

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char dir[] = "/tmp/blkc-jit-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("BLKC_CACHE_DIR", dir, 1);
    jc_disk_reset();
    printf("## compile stages (min of 20 front-end runs; ms)\n\n");
    printf("| example | parse | check+lower | passes | emit CUDA | LLVM "
           "codegen (obj) | NVRTC (cubin) | blkc/NVRTC |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    const char *ex[] = {"vector_add.blk", "softmax.blk", "layernorm.blk",
                        "matmul.blk", "flash_attention.blk"};
    for (int i = 0; i < 5; i++)
        stages(ex[i]);

    /* cold / warm / hot module creation */
    size_t len;
    char path[512];
    snprintf(path, sizeof path, "%s/examples/matmul.blk", BLKC_SOURCE_DIR);
    char *text = slurp(path, &len);
    blkc_context *c0;
    blkc_context_create("cpu", &c0);
    blkc_module *m;
    double t0 = now_ms();
    if (blkc_module_create(c0, text, len, NULL, &m) != BLKC_OK) {
        fprintf(stderr, "%s\n", blkc_last_error());
        return 1;
    }
    double cold = now_ms() - t0;
    blkc_module_destroy(m);
    double warm = 1e9;
    for (int r = 0; r < 10; r++) {
        blkc_context *c;
        blkc_context_create("cpu", &c);
        t0 = now_ms();
        blkc_module_create(c, text, len, NULL, &m);
        double t = now_ms() - t0;
        if (blkc_module_cache_source() == 1 && t < warm)
            warm = t;
        blkc_module_destroy(m);
        blkc_context_destroy(c);
    }
    int N = 20000;
    t0 = now_ms();
    for (int r = 0; r < N; r++) {
        blkc_module_create(c0, text, len, NULL, &m);
        blkc_module_destroy(m);
    }
    double hot = (now_ms() - t0) / N;
    printf("\n## module creation, examples/matmul.blk\n\n");
    printf("| path | time |\n|---|---|\n");
    printf("| cold (front end + LLVM + disk write) | %.1f ms |\n", cold);
    printf("| warm (front end + disk read + link object; new context, min "
           "of 10) | %.3f ms |\n", warm);
    printf("| hot (memory cache, mean of %d) | %.2f us |\n", N, hot * 1e3);

    /* cold compiles in this process vs in the blkc-cc worker (compile
     * isolation), alternating, each with an empty disk cache and a new
     * context; min of 5 */
    const char *iso_ex[] = {"vector_add.blk", "matmul.blk",
                            "flash_attention.blk"};
    printf("\n## cold module creation: in-process vs isolated (blkc-cc "
           "worker), min of 5, alternating\n\n");
    printf("| example | in-process | isolated | isolated / in-process | "
           "cost per cold compile |\n|---|---|---|---|---|\n");
    for (int e = 0; e < 3; e++) {
        size_t ilen;
        char ipath[512];
        snprintf(ipath, sizeof ipath, "%s/examples/%s", BLKC_SOURCE_DIR,
                 iso_ex[e]);
        char *itext = slurp(ipath, &ilen);
        double best[2] = {1e9, 1e9};
        for (int r = 0; r < 10 && itext; r++) {
            int iso = r & 1;
            blkc_compile_options io;
            blkc_compile_options_init(&io);
            io.isolate = iso ? 1 : -1;
            blkc_cache_clear(NULL);
            blkc_context *c;
            blkc_context_create("cpu", &c);
            blkc_module *im = NULL;
            t0 = now_ms();
            blkc_status st = blkc_module_create(c, itext, ilen, &io, &im);
            double t = now_ms() - t0;
            if (st != BLKC_OK)
                fprintf(stderr, "%s\n", blkc_last_error());
            else if (blkc_module_cache_source() == 0 && t < best[iso])
                best[iso] = t;
            blkc_module_destroy(im);
            blkc_context_destroy(c);
        }
        printf("| %s | %.1f ms | %.1f ms | %.2fx | %+.1f ms |\n", iso_ex[e],
               best[0], best[1], best[1] / best[0], best[1] - best[0]);
        free(itext);
    }

    /* launch overhead */
    blkc_module *em;
    blkc_kernel *k;
    if (blkc_module_create(c0, empty_src, strlen(empty_src), NULL, &em) ||
        blkc_module_get_kernel(em, NULL, &k)) {
        fprintf(stderr, "%s\n", blkc_last_error());
        return 1;
    }
    float x[16] = {0};
    int64_t shape[1] = {16};
    DLTensor t = {.data = x, .device = {kDLCPU, 0}, .ndim = 1,
                  .dtype = {kDLFloat, 32, 1}, .shape = shape};
    blkc_arg a = {BLKC_ARG_TENSOR, {.tensor = &t}};
    int L = 100000;
    blkc_kernel_launch(k, &a, 1, NULL);
    t0 = now_ms();
    for (int r = 0; r < L; r++)
        blkc_kernel_launch(k, &a, 1, NULL);
    double api = (now_ms() - t0) / L * 1e3;
    /* the same launch through the runtime alone, and with an empty grid
     * (argument checks and grid evaluation, no thread-pool hand-off) */
    blkc_launch_options lo;
    blkc_launch_options_init(&lo);
    DslSource src = {"empty", empty_src, strlen(empty_src)};
    DslDiags d;
    memset(&d, 0, sizeof d);
    IrModule *im = ir_compile_source(&src, &d, NULL, 0, NULL);
    dsl_diags_free(&d);
    JcCode *code = NULL;
    char err[512];
    JcSrc js = {empty_src, strlen(empty_src), NULL, 0, "cpu", NULL, 3, 0, 0};
    jc_cpu_code(im, &(BkOptions){NULL, 3}, &js, "bench", &code, NULL, err,
                sizeof err);
    BkRangeFn fn = jc_code_range(code, "empty");
    t0 = now_ms();
    for (int r = 0; r < L; r++)
        rt_cpu_launch(im->funcs[0], fn, &a, 1, NULL, NULL, err, sizeof err);
    double rt = (now_ms() - t0) / L * 1e3;
    int32_t nprog[8] = {1, 1, 1, 0, 1};
    void *argv1[1];
    BkTensorDesc desc = {x, {16}, {1}};
    argv1[0] = &desc;
    t0 = now_ms();
    for (int r = 0; r < L; r++)
        fn(argv1, 0, 1, nprog);
    double direct = (now_ms() - t0) / L * 1e3;
    printf("\n## launch overhead, empty kernel, grid (1) (mean of %d; "
           "BLKC_NUM_THREADS=%s)\n\n", L, getenv("BLKC_NUM_THREADS") ?
           getenv("BLKC_NUM_THREADS") : "all");
    printf("| path | per launch |\n|---|---|\n");
    printf("| blkc_kernel_launch (signature + variant pick + runtime) | "
           "%.2f us |\n", api);
    printf("| rt_cpu_launch alone (checks, grid, thread-pool hand-off) | "
           "%.2f us |\n", rt);
    printf("| the kernel called directly on this thread | %.3f us |\n",
           direct);
    printf("| API layer (signature + variant pick) = first - second | "
           "%.2f us |\n", api - rt);
    grids(k, &a, im->funcs[0], fn, argv1, L / 4);
    specialization();
    jc_code_free(code);
    ir_module_free(im);
    blkc_module_destroy(em);
    blkc_context_destroy(c0);
    blkc_cache_clear(NULL);
    rmdir(dir);
    free(text);
    return 0;
}
