/* cache_threads.c — 16 threads at once compile (same and different
 * sources, shared and private contexts, the NULL context) and launch,
 * checking every result; run under ThreadSanitizer by hand
 * (cmake --preset tsan). */
#include <blkc/blkc.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 16

static const char *fmt =
    "kernel scale(X: f32[N], Y: f32[N]) grid(cdiv(N, 128))\n"
    "{\n"
    "    let o = program_id(0) * 128;\n"
    "    Y[o +: 128] = X[o +: 128] * %d.0;\n"
    "}\n";

static blkc_context *shared;
static pthread_barrier_t bar;
static int failures;

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg, factor = 1 + id % 3;
    char src[512];
    snprintf(src, sizeof src, fmt, factor);
    blkc_context *own = NULL;
    if (id % 4 == 1 && blkc_context_create("cpu", &own) != BLKC_OK)
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    blkc_context *ctx = id % 4 == 0 ? shared : id % 4 == 1 ? own : NULL;
    pthread_barrier_wait(&bar);
    for (int round = 0; round < 3; round++) {
        blkc_module *m;
        blkc_kernel *k;
        if (blkc_module_create(ctx, src, strlen(src), NULL, &m) != BLKC_OK ||
            blkc_module_get_kernel(m, "scale", &k) != BLKC_OK) {
            fprintf(stderr, "thread %d: %s\n", id, blkc_last_error());
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
            break;
        }
        for (int it = 0; it < 20; it++) {
            int64_t n = 200 + 16 * ((id + it) % 5); /* varying variants */
            float x[400], y[400];
            for (int i = 0; i < n; i++)
                x[i] = (float)(i + it);
            int64_t shape[1] = {n};
            DLTensor tx = {.data = x, .device = {kDLCPU, 0}, .ndim = 1,
                           .dtype = {kDLFloat, 32, 1}, .shape = shape};
            DLTensor ty = tx;
            ty.data = y;
            blkc_arg a[2] = {{BLKC_ARG_TENSOR, {.tensor = &tx}},
                             {BLKC_ARG_TENSOR, {.tensor = &ty}}};
            if (blkc_kernel_launch(k, a, 2, NULL) != BLKC_OK) {
                fprintf(stderr, "thread %d: %s\n", id, blkc_last_error());
                __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
                continue;
            }
            for (int i = 0; i < n; i++)
                if (y[i] != x[i] * (float)factor) {
                    __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
                    break;
                }
        }
        blkc_module_destroy(m);
    }
    blkc_context_destroy(own);
    return NULL;
}

int main(void)
{
    char dir[] = "/tmp/blkc-cache-threads-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("BLKC_CACHE_DIR", dir, 1);
    if (blkc_context_create("cpu", &shared) != BLKC_OK)
        return 1;
    pthread_barrier_init(&bar, NULL, NT);
    pthread_t t[NT];
    for (int i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    blkc_context_destroy(shared);
    blkc_cache_clear(NULL);
    rmdir(dir);
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    puts("ok");
    return 0;
}
