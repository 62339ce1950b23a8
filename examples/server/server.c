/* server.c — an inference-server-shaped use of libblkc: JIT a set of
 * kernels at start-up (printing compile time and whether each came from the
 * memory/disk cache or was compiled), then serve requests from a queue with
 * several worker threads (requests are generated in-process; no network),
 * and print the throughput and the mean per-launch time. Each launch is
 * one line: blkc_kernel_launchf with a format ("f32[#] f32[#] f").
 *
 *   server [REQUESTS [WORKERS]]     (defaults 20000, 4)
 * Run it twice: the second start-up is served from the disk cache. */
#include <blkc/blkc.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *sources[] = {
    "kernel axpy<BLOCK = 256>(X: f32[N], Y: f32[N], a: f32)\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = X[o +: BLOCK] * a + Y[o +: BLOCK];\n"
    "}\n",
    "kernel relu<BLOCK = 256>(X: f32[N], Y: f32[N])\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = maximum(X[o +: BLOCK], 0.0);\n"
    "}\n",
    "kernel scale<BLOCK = 256>(X: f32[N], Y: f32[N], a: f32)\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = X[o +: BLOCK] * a;\n"
    "}\n",
};
#define NK 3
#define QCAP 256

typedef struct { int kernel; int n; } Req;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t nonempty, nonfull;
    Req q[QCAP];
    int head, count;
    bool done;
} Q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
       PTHREAD_COND_INITIALIZER, {{0, 0}}, 0, 0, false};

static blkc_kernel *kernels[NK];
static long served, errors;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker(void *unused)
{
    (void)unused;
    float *x = malloc(4096 * sizeof *x), *y = malloc(4096 * sizeof *y);
    for (;;) {
        pthread_mutex_lock(&Q.lock);
        while (!Q.count && !Q.done)
            pthread_cond_wait(&Q.nonempty, &Q.lock);
        if (!Q.count) {
            pthread_mutex_unlock(&Q.lock);
            break;
        }
        Req r = Q.q[Q.head];
        Q.head = (Q.head + 1) % QCAP;
        Q.count--;
        pthread_cond_signal(&Q.nonfull);
        pthread_mutex_unlock(&Q.lock);
        for (int i = 0; i < r.n; i++) {
            x[i] = (float)(i % 7) - 3;
            y[i] = 1;
        }
        /* one line per launch: compact f32 tensors of r.n elements */
        int bad = (r.kernel == 1
                   ? blkc_kernel_launchf(kernels[1], "f32[#] f32[#]", x, r.n,
                                         y, r.n)
                   : blkc_kernel_launchf(kernels[r.kernel], "f32[#] f32[#] f",
                                         x, r.n, y, r.n, 2.0)) != BLKC_OK;
        float want = r.kernel == 0 ? x[5] * 2 + 1 : r.kernel == 1
                   ? (x[5] > 0 ? x[5] : 0) : x[5] * 2;
        bad |= r.n > 5 && y[5] != want;
        __atomic_add_fetch(bad ? &errors : &served, 1, __ATOMIC_RELAXED);
    }
    free(x);
    free(y);
    return NULL;
}

int main(int argc, char **argv)
{
    long nreq = argc > 1 ? atol(argv[1]) : 20000;
    int nw = argc > 2 ? atoi(argv[2]) : 4;
    if (nreq < 1 || nw < 1 || nw > 256) {
        fprintf(stderr, "usage: server [REQUESTS [WORKERS]]\n");
        return 2;
    }
    blkc_context *ctx;
    blkc_module *mods[NK];
    if (blkc_context_create("cpu", &ctx) != BLKC_OK)
        return fprintf(stderr, "%s\n", blkc_last_error()), 3;
    static const char *how[] = {"compiled", "disk cache", "memory cache"};
    double t0 = now_s();
    for (int i = 0; i < NK; i++) {
        double t = now_s();
        if (blkc_module_create(ctx, sources[i], 0, NULL, &mods[i]) !=
                BLKC_OK ||
            blkc_module_get_kernel(mods[i], NULL, &kernels[i]) != BLKC_OK)
            return fprintf(stderr, "%s\n", blkc_last_error()), 1;
        int h = blkc_module_cache_source();
        printf("startup: %-6s %8.3f ms (%s)\n",
               blkc_module_kernel_name(mods[i], 0), (now_s() - t) * 1e3,
               h >= 0 ? how[h] : "?");
    }
    printf("startup: total %.3f ms\n", (now_s() - t0) * 1e3);
    pthread_t th[256];
    for (int i = 0; i < nw; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    double s0 = now_s();
    unsigned seed = 12345;
    for (long i = 0; i < nreq; i++) {
        seed = seed * 1103515245u + 12345u;
        Req r = {(int)((seed >> 16) % NK), 256 + (int)((seed >> 8) % 3840)};
        pthread_mutex_lock(&Q.lock);
        while (Q.count == QCAP)
            pthread_cond_wait(&Q.nonfull, &Q.lock);
        Q.q[(Q.head + Q.count) % QCAP] = r;
        Q.count++;
        pthread_cond_signal(&Q.nonempty);
        pthread_mutex_unlock(&Q.lock);
    }
    pthread_mutex_lock(&Q.lock);
    Q.done = true;
    pthread_cond_broadcast(&Q.nonempty);
    pthread_mutex_unlock(&Q.lock);
    for (int i = 0; i < nw; i++)
        pthread_join(th[i], NULL);
    double el = now_s() - s0;
    printf("served %ld requests with %d workers in %.3f s: %.0f req/s "
           "(%.1f us per request), %ld errors\n", served, nw, el,
           (double)served / el, el * 1e6 / (double)(served ? served : 1),
           errors);
    for (int i = 0; i < NK; i++)
        blkc_module_destroy(mods[i]);
    blkc_context_destroy(ctx);
    return errors ? 1 : 0;
}
