/* softmax_rows.c — a C model of blkc's softmax at 4096 x 4096 f32 on one
 * thread (issue 13 goal 3), to find how the row's non-temporal stores can
 * overlap compute before building it into the compiler. Each row: a max
 * pass, an exp + sum pass into a 16 KB buffer (degree-6 polynomial and
 * vscalefps, as backends/cpu/vmath.c; the next row prefetched as fuse.c
 * does), then the stores of buf * (1 / sum) in one of four ways:
 *   nt     non-temporal stores at the end of the row (what blkc emits);
 *   plain  ordinary stores (write-allocate: the destination is read too);
 *   clzero CLZERO of the destination lines first (AMD), then ordinary
 *          stores;
 *   defer  the row's stores issued inside the next row's exp loop, two
 *          lines per iteration, non-temporal (a second buffer).
 * Each round runs all four and memcpy of the same bytes, alternated, and
 * prints each time over memcpy's. x86-64 with AVX-512F/DQ; clzero needs
 * an AMD CPU. Built with the benchmarks on x86-64 (benchmarks/README.md,
 * round 20): build/benchmarks/softmax_rows [ROUNDS]. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 4096, R = 4096 };
enum { NT, PLAIN, CLZERO, DEFER, NMODE };
static const char *const names[NMODE] = {"nt", "plain", "clzero", "defer"};
static float bufs[2][N] __attribute__((aligned(64)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static inline __m512 exp16(__m512 x)
{
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), 0);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-06f), r);
    __m512 p = _mm512_set1_ps(1.3981999e-3f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
    return _mm512_scalef_ps(p, n);
}

/* Row x into bufs[r & 1]; returns 1 / sum. With prev, streams the
 * previous row (bufs[(r + 1) & 1] * pinv) to prev inside the exp loop. */
static float row(const float *x, int r, float *prev, float pinv)
{
    float *b = bufs[r & 1], *pb = bufs[(r + 1) & 1];
    __m512 m0 = _mm512_set1_ps(-1e30f), m1 = m0;
    for (int i = 0; i < N; i += 32) {
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
        m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
    }
    __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, ip = _mm512_set1_ps(pinv);
    for (int i = 0; i < N; i += 32) {
        _mm_prefetch((const char *)(x + N + i), _MM_HINT_T0);
        _mm_prefetch((const char *)(x + N + i + 16), _MM_HINT_T0);
        __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
        __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mx));
        _mm512_store_ps(b + i, e0);
        _mm512_store_ps(b + i + 16, e1);
        s0 = _mm512_add_ps(s0, e0);
        s1 = _mm512_add_ps(s1, e1);
        if (prev) {
            _mm512_stream_ps(prev + i, _mm512_mul_ps(_mm512_load_ps(pb + i), ip));
            _mm512_stream_ps(prev + i + 16, _mm512_mul_ps(_mm512_load_ps(pb + i + 16), ip));
        }
    }
    return 1.f / _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static void store_row(float *y, int r, float inv, int mode)
{
    const float *b = bufs[r & 1];
    __m512 v = _mm512_set1_ps(inv);
    if (mode == CLZERO) {
        for (int i = 0; i < N; i += 16)
            __asm__ volatile("clzero" ::"a"(y + i) : "memory");
        _mm_sfence(); /* CLZERO is weakly ordered */
    }
    for (int i = 0; i < N; i += 16) {
        __m512 o = _mm512_mul_ps(_mm512_load_ps(b + i), v);
        if (mode == NT)
            _mm512_stream_ps(y + i, o);
        else
            _mm512_store_ps(y + i, o);
    }
}

static void softmax(const float *x, float *y, int mode)
{
    if (mode == DEFER) {
        float inv = 0;
        for (int r = 0; r <= R; r++) /* row R: only streams row R - 1 */
            inv = row(x + (size_t)(r < R ? r : R - 1) * N, r,
                      r ? y + (size_t)(r - 1) * N : NULL, inv);
    } else {
        for (int r = 0; r < R; r++)
            store_row(y + (size_t)r * N, r, row(x + (size_t)r * N, r, NULL, 0), mode);
    }
    _mm_sfence();
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    size_t n = (size_t)R * N;
    float *x = aligned_alloc(64, (n + N) * sizeof(float));
    float *y = aligned_alloc(64, n * sizeof(float));
    float *ref = aligned_alloc(64, n * sizeof(float));
    if (!x || !y || !ref)
        return 1;
    for (size_t i = 0; i < n + N; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 100.f;
    memset(y, 0, n * sizeof(float)); /* its pages faulted in before timing */
    softmax(x, ref, NT);
    for (int k = 0; k < rounds; k++) {
        double t[NMODE];
        for (int m = 0; m < NMODE; m++) {
            double t0 = now();
            softmax(x, y, m);
            t[m] = now() - t0;
            if (memcmp(y, ref, n * sizeof(float))) {
                fprintf(stderr, "%s: results differ from nt\n", names[m]);
                return 1;
            }
        }
        double t0 = now();
        memcpy(y, x, n * sizeof(float));
        double tc = now() - t0;
        printf("memcpy %.2f ms;", tc * 1e3);
        for (int m = 0; m < NMODE; m++)
            printf(" %s %.2f ms (%.2fx)", names[m], t[m] * 1e3, tc / t[m]);
        printf("\n");
    }
    return 0;
}
