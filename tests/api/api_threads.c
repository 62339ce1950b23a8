/* api_threads.c — libblkc from 8 threads at once, public API only: each
 * thread compiles its own vector-add module (a different BLOCK) and
 * launches it a few times, and all threads also launch one shared kernel
 * concurrently. Every result is checked element by element. */
#include <blkc/blkc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 8
#define N 1000

static const char *src =
    "kernel vadd<BLOCK = 64>(A: f32[N], B: f32[N], C: f32[N])\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK];\n"
    "}\n";

static blkc_context *ctx;
static blkc_kernel *shared_kernel;

static DLTensor vec(float *p, int64_t *shape)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = p;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

/* C = A + B with a, b, c of n elements; 0 if right */
static int launch_check(blkc_kernel *k, int seed, int n)
{
    float *a = malloc(sizeof(float) * (size_t)n);
    float *b = malloc(sizeof(float) * (size_t)n);
    float *c = malloc(sizeof(float) * (size_t)n);
    int64_t shape[1] = {n};
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i + seed);
        b[i] = (float)(2 * i - seed);
        c[i] = -1;
    }
    DLTensor ta = vec(a, shape), tb = vec(b, shape), tc = vec(c, shape);
    blkc_arg args[3] = {{BLKC_ARG_TENSOR, {.tensor = &ta}},
                        {BLKC_ARG_TENSOR, {.tensor = &tb}},
                        {BLKC_ARG_TENSOR, {.tensor = &tc}}};
    int bad = 0;
    if (blkc_kernel_launch(k, args, 3, NULL) != BLKC_OK) {
        fprintf(stderr, "launch: %s\n", blkc_last_error());
        bad = 1;
    }
    for (int i = 0; i < n && !bad; i++)
        if (c[i] != (float)(3 * i)) {
            fprintf(stderr, "seed %d: c[%d] = %g, want %d\n", seed, i, c[i],
                    3 * i);
            bad = 1;
        }
    free(a);
    free(b);
    free(c);
    return bad;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    char def[32];
    snprintf(def, sizeof def, "BLOCK=%d", 16 << (id % 4));
    const char *defs[1] = {def};
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.defines = defs;
    o.ndefines = 1;
    o.filename = "threads.blk";
    blkc_module *m;
    intptr_t bad = 0;
    if (blkc_module_create(ctx, src, strlen(src), &o, &m) != BLKC_OK) {
        fprintf(stderr, "thread %d: compile: %s\n", id, blkc_last_error());
        return (void *)1;
    }
    blkc_kernel *k;
    if (blkc_module_get_kernel(m, "vadd", &k) != BLKC_OK) {
        fprintf(stderr, "thread %d: %s\n", id, blkc_last_error());
        bad = 1;
    }
    for (int r = 0; r < 4 && !bad; r++) {
        bad |= launch_check(k, id * 10 + r, N + id);
        bad |= launch_check(shared_kernel, id * 100 + r, N - id);
    }
    blkc_module_destroy(m);
    return (void *)bad;
}

int main(void)
{
    if (blkc_context_create("cpu", &ctx) != BLKC_OK) {
        fprintf(stderr, "context: %s\n", blkc_last_error());
        return 1;
    }
    blkc_module *shared;
    if (blkc_module_create(ctx, src, strlen(src), NULL, &shared) != BLKC_OK ||
        blkc_module_get_kernel(shared, NULL, &shared_kernel) != BLKC_OK) {
        fprintf(stderr, "shared module: %s\n", blkc_last_error());
        return 1;
    }
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    int bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    blkc_module_destroy(shared);
    blkc_context_destroy(ctx);
    printf("api_threads: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
