/* t_concurrent_launch.c — libblkc is safe to call from several threads:
 * four threads launch the same kernel concurrently (each on its own
 * buffers, 25 times) while a fifth compiles another module. */
#include "harness.h"
#include <pthread.h>

static const char *src =
    "kernel axpy<BLOCK = 256>(X: f32[N], Y: f32[N], a: f32) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = Y[o +: BLOCK] + a * X[o +: BLOCK];\n"
    "}\n";

enum { N = 20000, T = 4, REPS = 25 };
static blkc_kernel *kern;
static float xs[T][N], ys[T][N];
static int thread_fail[T + 1];

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    int64_t shape[1] = {N};
    DLTensor x = {xs[t], {kDLCPU, 0}, 1, H_F32, shape, NULL, 0};
    DLTensor y = {ys[t], {kDLCPU, 0}, 1, H_F32, shape, NULL, 0};
    for (int r = 0; r < REPS; r++) {
        blkc_arg args[3] = {h_ten(&x), h_ten(&y), h_flt(t + 1)};
        if (h_launch(kern, args, 3, NULL) != BLKC_OK) {
            fprintf(stderr, "thread %d: %s\n", t, blkc_last_error());
            thread_fail[t] = 1;
        }
    }
    return NULL;
}

static void *compiler(void *arg)
{
    (void)arg;
    for (int r = 0; r < 3; r++) {
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        blkc_module *m = NULL;
        if (blkc_module_create(h_ctx(), src, strlen(src), &o, &m) != BLKC_OK)
            thread_fail[T] = 1;
        else
            blkc_module_destroy(m);
    }
    return NULL;
}

int main(void)
{
    h_seed(36);
    kern = h_build(src, NULL);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < N; i++) {
            xs[t][i] = (float)h_randi(-8, 8);
            ys[t][i] = 0;
        }
    pthread_t th[T + 1];
    for (int t = 0; t < T; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    pthread_create(&th[T], NULL, compiler, NULL);
    for (int t = 0; t <= T; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) {
        double *r = h_alloc(8 * N);
        for (int i = 0; i < N; i++)
            r[i] = (double)xs[t][i] * (t + 1) * REPS;   /* exact: small ints */
        char what[64];
        snprintf(what, sizeof what, "thread %d: 25 concurrent launches", t);
        h_ok(!thread_fail[t], "thread %d launches succeeded", t);
        h_check(what, ys[t], H_F32, r, N, 0, 0);
    }
    h_ok(!thread_fail[T], "compiling concurrently with launches");
    return h_done();
}
