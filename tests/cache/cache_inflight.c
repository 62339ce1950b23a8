/* cache_inflight.c — N threads create a module from one new source at the
 * same moment: the memory cache's in-flight table must let exactly one of
 * them compile (the cache's compile counter rises by 1, one thread reports
 * a cold create and the others a memory hit) and give every thread a
 * working kernel; a source with an error must give every thread the same
 * diagnostic (and nobody may hang). Shared context and the NULL context.
 * Also run under ThreadSanitizer (make test-tsan). */
#include "compiler/cache.h"

#include <blkc/blkc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 8

static const char *good_fmt =
    "kernel triple(X: f32[N], Y: f32[N]) grid(cdiv(N, 64))\n"
    "{\n"
    "    let o = program_id(0) * 64;\n"
    "    Y[o +: 64] = X[o +: 64] * %d.0;  // round %d\n"
    "}\n";
static const char *bad_src =
    "kernel broken(X: f32[N]) grid(1)\n"
    "{\n"
    "    let y = undefined_name + 1;\n"
    "}\n";

static blkc_context *ctx;          /* the context of the current round */
static char src[512];
static pthread_barrier_t bar;     /* NT workers and main */
static int failures;
static int how[NT];
static blkc_status status[NT];
static char msg[NT][512];
static float factor;

#define CHECK(c)                                                          \
    do {                                                                  \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,        \
                    __LINE__, #c);                                        \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    pthread_barrier_wait(&bar);
    blkc_module *m = NULL;
    status[id] = blkc_module_create(ctx, src, strlen(src), NULL, &m);
    how[id] = blkc_module_cache_source();
    snprintf(msg[id], sizeof msg[id], "%s", blkc_last_error());
    pthread_barrier_wait(&bar); /* main reads the compile counter */
    pthread_barrier_wait(&bar); /* launches (and their variants) next */
    if (status[id] != BLKC_OK)
        return NULL;
    blkc_kernel *k;
    float x[200], y[200];
    for (int i = 0; i < 200; i++)
        x[i] = (float)(i - id);
    int64_t shape[1] = {200};
    DLTensor tx = {.data = x, .device = {kDLCPU, 0}, .ndim = 1,
                   .dtype = {kDLFloat, 32, 1}, .shape = shape};
    DLTensor ty = tx;
    ty.data = y;
    blkc_arg a[2] = {{BLKC_ARG_TENSOR, {.tensor = &tx}},
                     {BLKC_ARG_TENSOR, {.tensor = &ty}}};
    intptr_t bad = blkc_module_get_kernel(m, "triple", &k) != BLKC_OK ||
                   blkc_kernel_launch(k, a, 2, NULL) != BLKC_OK;
    for (int i = 0; !bad && i < 200; i++)
        bad = y[i] != x[i] * factor;
    blkc_module_destroy(m);
    return (void *)bad;
}

/* One round: NT threads create a module from `src` in `ctx` at once. */
static void round_of(int64_t *compiles, int *bad_threads)
{
    JcStats before, after;
    jc_disk_stats(&before);
    pthread_t t[NT];
    *bad_threads = 0;
    for (int i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    pthread_barrier_wait(&bar); /* start */
    pthread_barrier_wait(&bar); /* every create returned */
    jc_disk_stats(&after);
    *compiles = after.compiles - before.compiles;
    pthread_barrier_wait(&bar);
    for (int i = 0; i < NT; i++) {
        void *r;
        pthread_join(t[i], &r);
        *bad_threads += r != NULL;
    }
}

static void good_round(blkc_context *c, int f, int r)
{
    ctx = c;
    factor = (float)f;
    snprintf(src, sizeof src, good_fmt, f, r);
    int64_t compiles;
    int bad;
    round_of(&compiles, &bad);
    int cold = 0, hot = 0;
    for (int i = 0; i < NT; i++) {
        CHECK(status[i] == BLKC_OK);
        cold += how[i] == 0;
        hot += how[i] == 2;
    }
    CHECK(compiles == 1);
    CHECK(cold == 1 && hot == NT - 1);
    CHECK(bad == 0);
    printf("round %d: %lld compile(s), %d cold, %d hot\n", r,
           (long long)compiles, cold, hot);
}

int main(void)
{
    char dir[] = "/tmp/blkc-cache-inflight-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("BLKC_CACHE_DIR", dir, 1);
    jc_disk_reset();
    blkc_context *shared;
    if (blkc_context_create("cpu", &shared) != BLKC_OK)
        return 1;
    pthread_barrier_init(&bar, NULL, NT + 1);
    good_round(shared, 3, 1);
    good_round(NULL, 5, 2);
    good_round(shared, 7, 3);

    /* an error reaches every thread, in both contexts */
    for (int r = 0; r < 2; r++) {
        ctx = r ? NULL : shared;
        snprintf(src, sizeof src, "%s", bad_src);
        int64_t compiles;
        int bad;
        round_of(&compiles, &bad);
        CHECK(compiles == 0);
        for (int i = 0; i < NT; i++) {
            CHECK(status[i] == BLKC_ERR_COMPILE);
            CHECK(strstr(msg[i], "undefined_name") != NULL);
            CHECK(strcmp(msg[i], msg[0]) == 0);
        }
    }
    pthread_barrier_destroy(&bar);
    blkc_context_destroy(shared);
    blkc_cache_clear(NULL);
    rmdir(dir);
    printf("cache_inflight: %s (%d failures)\n", failures ? "FAILED" : "ok",
           failures);
    return failures != 0;
}
