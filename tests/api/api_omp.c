/* api_omp.c — blkc's parallel loops on the caller's OpenMP threads
 * (blkc_context_options.parallel_for), built with -fopenmp; public API
 * only. With the hook, launches create no thread (the process's thread
 * count, /proc/self/status, stays at the OpenMP team's) yet run on
 * several OpenMP threads, with results checked against C. Without it, a
 * context's num_threads sets blkc's pool (exactly that many workers
 * appear), and a later different count is refused. */
#include <blkc/blkc.h>

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_test.h"

static const char *src = API_TWICE_SRC;

static int threads_now(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (fp && fgets(line, sizeof line, fp))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (fp)
        fclose(fp);
    return n;
}

static unsigned long used_mask; /* OpenMP thread numbers that ran items */
static long calls, items;

static void omp_for(void *user, int64_t n, void (*body)(void *, int64_t),
                    void *arg)
{
    (void)user;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    /* static: each thread of the team owns its share of the items however
     * the OS schedules them (dynamic let one thread take all of a launch's
     * items on a loaded machine, and the check below failed in a fresh-check) */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        __atomic_or_fetch(&used_mask, 1ul << (omp_get_thread_num() & 63),
                          __ATOMIC_RELAXED);
        __atomic_add_fetch(&items, 1, __ATOMIC_RELAXED);
        body(arg, i);
    }
}

static int run(blkc_kernel *k, float *x, float *y, int n)
{
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 101) - 50;
        y[i] = -1;
    }
    if (blkc_kernel_launchf(k, "f32[#] f32[#]", x, n, y, n) != BLKC_OK)
        return 1;
    for (int i = 0; i < n; i++)
        if (y[i] != x[i] * 2 + 1)
            return 1;
    return 0;
}

int main(void)
{
    enum { N = 64 * 256 };
    float *x = malloc(sizeof *x * N), *y = malloc(sizeof *y * N);
    omp_set_num_threads(3);
    int team = 0;
#pragma omp parallel
    {
#pragma omp atomic
        team++;
    }
    blkc_context_options co;
    blkc_context_options_init(&co);
    co.specialize = BLKC_SPECIALIZE_OFF; /* no background compiles */
    co.parallel_for = omp_for;
    blkc_context *ctx, *plain;
    blkc_module *m, *m2;
    blkc_kernel *k, *k2;
    CHECK(blkc_context_create_ex("cpu", &co, &ctx) == BLKC_OK);
    CHECK(blkc_module_create(ctx, src, 0, NULL, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    blkc_context_options_init(&co);
    co.specialize = BLKC_SPECIALIZE_OFF;
    co.num_threads = 2;
    CHECK(blkc_context_create_ex("cpu", &co, &plain) == BLKC_OK);
    CHECK(blkc_module_create(plain, src, 0, NULL, &m2) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m2, NULL, &k2) == BLKC_OK);

    int t0 = threads_now();
    for (int rep = 0; rep < 20; rep++)
        CHECK(run(k, x, y, N - rep * 7) == 0);
    int t1 = threads_now();
    int nused = __builtin_popcountl(used_mask);
    printf("api_omp: team %d, threads %d before and %d after 20 launches "
           "through parallel_for (%ld calls, %ld items, %d OpenMP threads "
           "used)\n", team, t0, t1, calls, items, nused);
    CHECK(t1 == t0);
    CHECK(calls == 20);
    CHECK(nused >= 2 || omp_get_max_threads() < 2);

    /* blkc's own pool: exactly num_threads workers appear */
    CHECK(run(k2, x, y, N) == 0);
    int t2 = threads_now();
    printf("api_omp: blkc's pool (num_threads 2): threads %d\n", t2);
    CHECK(t2 == t1 + 2);
    CHECK(calls == 20);
    /* the pool runs now: another size is refused, the same one is fine */
    blkc_context *c3;
    blkc_context_options_init(&co);
    co.num_threads = 3;
    CHECK(blkc_context_create_ex("cpu", &co, &c3) == BLKC_ERR_UNSUPPORTED);
    CHECK(strcmp(blkc_last_error(), "the thread pool already runs 2 workers "
                 "(one pool per process: its size and pinning are set before "
                 "the first launch)") == 0);
    co.num_threads = 2;
    CHECK(blkc_context_create_ex("cpu", &co, &c3) == BLKC_OK);
    blkc_context_destroy(c3);
    co.num_threads = -1;
    CHECK(blkc_context_create_ex("cpu", &co, &c3) == BLKC_ERR_USAGE);
    CHECK(strcmp(blkc_last_error(), "num_threads -1 is not 0..1024") == 0);

    blkc_module_destroy(m);
    blkc_module_destroy(m2);
    blkc_context_destroy(ctx);
    blkc_context_destroy(plain);
    free(x);
    free(y);
    if (failures) {
        fprintf(stderr, "api_omp: %d failures\n", failures);
        return 1;
    }
    printf("api_omp: ok\n");
    return 0;
}
