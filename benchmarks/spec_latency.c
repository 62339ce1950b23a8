/* spec_latency.c — launch latency while shapes change (issue 16 item 1):
 * 1000 launches of a row softmax over an attention length that grows by
 * one each step (as in token generation: 1, 2, ..., 1000), for each
 * specialization mode — off, eager, background, and background after
 * blkc_kernel_prepare of the two signatures the run meets — printing the
 * p50 / p99 / max launch latency and the launches over 5 ms. Each mode has
 * its own context and source (a comment), and the disk cache is off, so
 * every mode compiles its variants itself.
 *
 *   spec_latency [LAUNCHES]     (default 1000)    benchmarks/README.md */
#include <blkc/blkc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROWS 8
#define MAXL 4096

static const char *kernel_src =
    "kernel softmax<BLOCK = 4096>(X: f32[R, L], Y: f32[R, L]) grid(R)\n"
    "{\n"
    "    let r = program_id(0);\n"
    "    let x = load(X[r, 0 +: BLOCK], pad = -inf);\n"
    "    let e = exp(x - max(x));\n"
    "    Y[r, 0 +: BLOCK] = e / sum(e);\n"
    "}\n";

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *X, *Y;

static blkc_status launch(blkc_kernel *k, int len)
{
    return blkc_kernel_launchf(k, "f32[#,#] f32[#,#]", X, ROWS, len, Y, ROWS,
                               len);
}

static int run_mode(const char *name, blkc_specialize mode, int prepare,
                    int n)
{
    blkc_context_options co;
    blkc_context_options_init(&co);
    co.specialize = mode;
    blkc_context *ctx;
    blkc_module *m;
    blkc_kernel *k;
    char src[1024];
    snprintf(src, sizeof src, "// mode %s\n%s", name, kernel_src);
    double t0 = now_ms();
    if (blkc_context_create_ex("cpu", &co, &ctx) != BLKC_OK ||
        blkc_module_create(ctx, src, 0, NULL, &m) != BLKC_OK ||
        blkc_module_get_kernel(m, NULL, &k) != BLKC_OK) {
        fprintf(stderr, "%s\n", blkc_last_error());
        return 1;
    }
    double t1 = now_ms();
    if (prepare) { /* the signatures of the run: L % 16 == 0 or not */
        blkc_tensor a, b;
        for (int len = 16; len <= 17; len++) {
            blkc_tensor_init(&a, X, BLKC_F32, 2, (int64_t[]){ROWS, len}, NULL);
            blkc_tensor_init(&b, Y, BLKC_F32, 2, (int64_t[]){ROWS, len}, NULL);
            blkc_arg args[2] = {blkc_arg_tensor(&a), blkc_arg_tensor(&b)};
            if (blkc_kernel_prepare(k, args, 2) != BLKC_OK) {
                fprintf(stderr, "%s\n", blkc_last_error());
                return 1;
            }
        }
    }
    double t2 = now_ms();
    double *lat = malloc(sizeof *lat * (size_t)n);
    int slow = 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        int len = 1 + i % MAXL;
        double s = now_ms();
        if (launch(k, len) != BLKC_OK) {
            fprintf(stderr, "%s\n", blkc_last_error());
            return 1;
        }
        lat[i] = now_ms() - s;
        total += lat[i];
        slow += lat[i] > 5.0;
    }
    blkc_specialize_wait();
    int nv = blkc_kernel_variant_count(k);
    qsort(lat, (size_t)n, sizeof *lat, cmp_d);
    printf("%-20s p50 %8.4f ms  p99 %8.4f ms  max %8.3f ms  >5ms %3d  "
           "total %8.2f ms  (start-up %.1f ms, prepare %.1f ms, %d variants)\n",
           name, lat[n / 2], lat[(int)((double)n * 0.99)], lat[n - 1], slow,
           total, t1 - t0, t2 - t1, nv);
    free(lat);
    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    if (n < 10 || n > 1000000) {
        fprintf(stderr, "usage: spec_latency [LAUNCHES (10..1e6)]\n");
        return 2;
    }
    setenv("BLKC_CACHE_DISABLE", "1", 1); /* every mode compiles */
    X = aligned_alloc(64, sizeof *X * ROWS * MAXL);
    Y = aligned_alloc(64, sizeof *Y * ROWS * MAXL);
    for (int i = 0; i < ROWS * MAXL; i++)
        X[i] = (float)(i % 17) * 0.25f;
    printf("spec_latency: %d launches of softmax over [%d, L], L = 1, 2, ..., "
           "(disk cache off)\n", n, ROWS);
    int rc = 0;
    rc |= run_mode("off", BLKC_SPECIALIZE_OFF, 0, n);
    rc |= run_mode("eager", BLKC_SPECIALIZE_EAGER, 0, n);
    rc |= run_mode("background", BLKC_SPECIALIZE_BACKGROUND, 0, n);
    rc |= run_mode("background+prepare", BLKC_SPECIALIZE_BACKGROUND, 1, n);
    free(X);
    free(Y);
    return rc;
}
