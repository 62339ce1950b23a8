/* api_spec_bg.c — BLKC_SPECIALIZE_BACKGROUND from several threads (public
 * API only; in the Makefile's TSan list): 4 threads launch one kernel
 * with changing shapes (aligned and unaligned, multiples of 16 and not),
 * every result is checked against C while the background worker compiles
 * variants and swaps them in; afterwards blkc_specialize_wait, the
 * variants are there, and later launches with those shapes add none. */
#include <blkc/blkc.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 4
#define ITERS 60

static const char *src =
    "// api_spec_bg\n"
    "kernel saxpy<BLOCK = 64>(X: f32[N], Y: f32[N], a: f32)\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = X[o +: BLOCK] * a + Y[o +: BLOCK];\n"
    "}\n";

static blkc_kernel *kern;
static int bad[NT];
static const int sizes[] = {256, 100, 512, 77, 1024, 33, 160, 1000};

static void *run(void *arg)
{
    int id = (int)(intptr_t)arg;
    float *x = aligned_alloc(64, 4096 * sizeof *x);
    float *y = aligned_alloc(64, 4096 * sizeof *y);
    for (int it = 0; it < ITERS; it++) {
        int n = sizes[(it + id) % 8];
        int off = (it / 8) % 2; /* unaligned views every other round */
        for (int i = 0; i < n; i++) {
            x[off + i] = (float)(i % 13);
            y[off + i] = (float)id;
        }
        if (blkc_kernel_launchf(kern, "f32[#] f32[#] f", x + off, n, y + off,
                                n, 2.0) != BLKC_OK) {
            fprintf(stderr, "thread %d: %s\n", id, blkc_last_error());
            bad[id]++;
            continue;
        }
        for (int i = 0; i < n; i++)
            if (y[off + i] != (float)(i % 13) * 2 + (float)id) {
                bad[id]++;
                break;
            }
    }
    free(x);
    free(y);
    return NULL;
}

int main(void)
{
    blkc_context_options co;
    blkc_context_options_init(&co);
    co.specialize = BLKC_SPECIALIZE_BACKGROUND;
    blkc_context *ctx;
    blkc_module *m;
    if (blkc_context_create_ex("cpu", &co, &ctx) != BLKC_OK ||
        blkc_module_create(ctx, src, 0, NULL, &m) != BLKC_OK ||
        blkc_module_get_kernel(m, NULL, &kern) != BLKC_OK) {
        fprintf(stderr, "%s\n", blkc_last_error());
        return 1;
    }
    pthread_t th[NT];
    for (int i = 0; i < NT; i++)
        pthread_create(&th[i], NULL, run, (void *)(intptr_t)i);
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
    blkc_specialize_wait();
    int nv = blkc_kernel_variant_count(kern);
    int fails = 0;
    for (int i = 0; i < NT; i++)
        fails += bad[i];
    /* the signatures met: aligned or not x (multiple of 16 or not) — at
     * least 2, at most 16 (the table's size) */
    if (nv < 2 || nv > 16) {
        fprintf(stderr, "api_spec_bg: %d variants\n", nv);
        fails++;
    }
    /* everything is compiled now: the same shapes add no variant */
    bad[0] = 0;
    run((void *)0);
    blkc_specialize_wait();
    if (bad[0] || blkc_kernel_variant_count(kern) != nv) {
        fprintf(stderr, "api_spec_bg: second pass: %d bad, %d -> %d "
                "variants\n", bad[0], nv, blkc_kernel_variant_count(kern));
        fails++;
    }
    /* destroying the module while nothing is queued */
    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
    if (fails) {
        fprintf(stderr, "api_spec_bg: %d failures\n", fails);
        return 1;
    }
    printf("api_spec_bg: ok (%d variants)\n", nv);
    return 0;
}
