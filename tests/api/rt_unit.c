/* rt_unit.c — unit tests of the runtime layer (internal API): small-float
 * rounding, .npy parsing of every malformed image we can think of (each
 * truncation and each single-byte corruption of a valid file must be a
 * clean error or a clean parse), .npy round trips, and the thread pool
 * under several concurrent launchers. */
#include "runtime/rt.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(c)                                                             \
    do {                                                                     \
        if (!(c)) {                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #c);                                                     \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static void test_small_floats(void)
{
    /* f16 */
    CHECK(rt_small_float_encode(1.0, DT_F16) == 0x3c00);
    CHECK(rt_small_float_encode(-2.0, DT_F16) == 0xc000);
    CHECK(rt_small_float_encode(65504.0, DT_F16) == 0x7bff);
    CHECK(rt_small_float_encode(65520.0, DT_F16) == 0x7c00); /* rounds to inf */
    CHECK(rt_small_float_encode(1.0 + ldexp(1, -11), DT_F16) == 0x3c00); /* tie->even */
    CHECK(rt_small_float_encode(1.0 + 3 * ldexp(1, -11), DT_F16) == 0x3c02);
    CHECK(rt_small_float_encode(ldexp(1, -24), DT_F16) == 0x0001); /* subnormal */
    CHECK(rt_small_float_encode(ldexp(1, -25), DT_F16) == 0x0000); /* tie->0 */
    CHECK(rt_small_float_encode(-0.0, DT_F16) == 0x8000);
    CHECK((rt_small_float_encode(NAN, DT_F16) & 0x7c00) == 0x7c00);
    CHECK(rt_small_float_encode(INFINITY, DT_F16) == 0x7c00);
    /* bf16 */
    CHECK(rt_small_float_encode(1.0, DT_BF16) == 0x3f80);
    CHECK(rt_small_float_encode(1.0 + ldexp(1, -8), DT_BF16) == 0x3f80);
    CHECK(rt_small_float_encode(1.0 + 3 * ldexp(1, -8), DT_BF16) == 0x3f82);
    CHECK(rt_small_float_encode(3.0e38, DT_BF16) == 0x7f62);
    /* f8 */
    CHECK(rt_small_float_encode(448.0, DT_F8E4M3) == 0x7e);
    CHECK(rt_small_float_encode(1.0, DT_F8E4M3) == 0x38);
    CHECK(rt_small_float_encode(1000.0, DT_F8E4M3) == 0x7f); /* NaN */
    CHECK(rt_small_float_encode(57344.0, DT_F8E5M2) == 0x7b);
    CHECK(rt_small_float_encode(1.0, DT_F8E5M2) == 0x3c);
    /* decode of every pattern re-encodes to itself (non-NaN) */
    for (uint32_t b = 0; b < 65536; b++) {
        double v = rt_small_float_decode(b, DT_F16);
        if (!isnan(v))
            CHECK(rt_small_float_encode(v, DT_F16) == b);
        v = rt_small_float_decode(b, DT_BF16);
        if (!isnan(v))
            CHECK(rt_small_float_encode(v, DT_BF16) == b);
    }
    for (uint32_t b = 0; b < 256; b++) {
        double v = rt_small_float_decode(b, DT_F8E4M3);
        if (!isnan(v))
            CHECK(rt_small_float_encode(v, DT_F8E4M3) == b);
        v = rt_small_float_decode(b, DT_F8E5M2);
        if (!isnan(v))
            CHECK(rt_small_float_encode(v, DT_F8E5M2) == b);
    }
}

static void test_npy(void)
{
    char path[] = "/tmp/blkc_rt_unit_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    char err[256];
    CHECK(rt_npy_write(path, DT_F32, 2, shape, data, err, sizeof err) == 0);
    RtNpy a;
    CHECK(rt_npy_read(path, &a, err, sizeof err) == 0);
    CHECK(a.dtype == DT_F32 && a.ndim == 2 && a.shape[0] == 2 &&
          a.shape[1] == 3 && a.numel == 6);
    CHECK(a.data && memcmp(a.data, data, sizeof data) == 0);
    CHECK(((uintptr_t)a.data & 63) == 0); /* on a cache line (rt_alloc64) */
    rt_npy_free(&a);
    { /* so is a large array's (a malloc of 1.2 MB is 16 bytes past a page) */
        enum { BIG = 300007 };
        float *big = malloc(BIG * sizeof *big);
        CHECK(big != NULL);
        for (int i = 0; i < BIG; i++)
            big[i] = (float)i;
        int64_t bs[1] = {BIG};
        CHECK(rt_npy_write(path, DT_F32, 1, bs, big, err, sizeof err) == 0);
        CHECK(rt_npy_read(path, &a, err, sizeof err) == 0);
        CHECK(a.numel == BIG && ((uintptr_t)a.data & 63) == 0 &&
              memcmp(a.data, big, BIG * sizeof *big) == 0);
        rt_npy_free(&a);
        free(big);
        for (size_t n = 1; n < 200; n += 37) {
            void *p = rt_alloc64(n);
            CHECK(p && ((uintptr_t)p & 63) == 0);
            free(p);
        }
        CHECK(rt_npy_write(path, DT_F32, 2, shape, data, err, sizeof err) == 0);
    }
    /* the whole image in memory */
    FILE *fp = fopen(path, "rb");
    unsigned char img[256];
    size_t n = fread(img, 1, sizeof img, fp);
    fclose(fp);
    CHECK(n == 128 + 24);
    /* every truncation fails cleanly */
    for (size_t k = 0; k < n; k++) {
        RtNpy b;
        CHECK(rt_npy_parse(img, k, &b, err, sizeof err) != 0);
    }
    /* every single-byte corruption either fails or parses within bounds */
    unsigned char bad[256];
    const unsigned char vals[] = {0, '(', ')', ',', '9', '\'', 0xff, ' '};
    for (size_t k = 0; k < 128; k++)
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(bad, img, n);
            bad[k] = vals[v];
            RtNpy b;
            if (rt_npy_parse(bad, n, &b, err, sizeof err) == 0) {
                CHECK((size_t)b.numel * (size_t)dsl_dtype_bytes(b.dtype) <= n);
                rt_npy_free(&b);
            } else {
                CHECK(err[0] != 0);
            }
        }
    /* dtypes and shapes */
    static const struct { int dt, ndim; int64_t shape[3]; } cases[] = {
        {DT_BOOL, 1, {5}}, {DT_I8, 0, {0}}, {DT_U16, 3, {2, 1, 2}},
        {DT_I64, 1, {0}},  {DT_F16, 2, {1, 3}}, {DT_F64, 1, {2}},
    };
    unsigned char buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = (unsigned char)(i & 1);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        CHECK(rt_npy_write(path, cases[c].dt, cases[c].ndim, cases[c].shape,
                           buf, err, sizeof err) == 0);
        RtNpy b;
        CHECK(rt_npy_read(path, &b, err, sizeof err) == 0);
        CHECK(b.dtype == cases[c].dt && b.ndim == cases[c].ndim);
        for (int d = 0; d < b.ndim; d++)
            CHECK(b.shape[d] == cases[c].shape[d]);
        if (b.numel)
            CHECK(memcmp(b.data, buf, (size_t)b.numel *
                         (size_t)dsl_dtype_bytes(b.dtype)) == 0);
        rt_npy_free(&b);
    }
    CHECK(rt_npy_write(path, DT_BF16, 1, shape, data, err, sizeof err) != 0);
    /* version 2.0 header */
    const char *h2 = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
    size_t hl = strlen(h2);
    unsigned char v2[128] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0,
                             (unsigned char)hl, 0, 0, 0};
    memcpy(v2 + 12, h2, hl);
    int32_t two[2] = {7, -7};
    memcpy(v2 + 12 + hl, two, 8);
    RtNpy b;
    CHECK(rt_npy_parse(v2, 12 + hl + 8, &b, err, sizeof err) == 0);
    CHECK(b.dtype == DT_I32 && b.numel == 2 &&
          ((int32_t *)b.data)[1] == -7);
    rt_npy_free(&b);
    v2[6] = 4;
    CHECK(rt_npy_parse(v2, 12 + hl + 8, &b, err, sizeof err) != 0);
    CHECK(strstr(err, "version") != NULL);
    v2[6] = 2;
    v2[11] = 0x7f; /* absurd header length */
    CHECK(rt_npy_parse(v2, 12 + hl + 8, &b, err, sizeof err) != 0);
    remove(path);
}

/* ------------------------------------------------------------ pool */

static atomic_long hits;

static void range_fn(void *const *args, int64_t first, int64_t last,
                     const int32_t *nprog)
{
    int *seen = args[0];
    for (int64_t i = first; i < last; i++)
        seen[i]++;
    atomic_fetch_add(&hits, last - first);
    (void)nprog;
}

static void *launcher(void *arg)
{
    int64_t g[3] = {37 + (intptr_t)arg, 3, 2};
    int n = (int)(g[0] * g[1] * g[2]);
    int *seen = calloc((size_t)n, sizeof *seen);
    void *args[1] = {seen};
    char err[128];
    intptr_t bad = 0;
    /* odd launchers let the calling thread claim instances too (the
     * launcher's path when the kernel's tiles fit its stack), even ones
     * leave every instance to the workers; both at once on the pool */
    bool helping = ((intptr_t)arg & 1) != 0;
    for (int r = 0; r < 50; r++)
        if (rt_pool_run_helping(range_fn, args, g, NULL, helping && r % 5,
                                err, sizeof err) != 0)
            bad = 1;
    for (int i = 0; i < n; i++)
        if (seen[i] != 50)
            bad = 1;
    free(seen);
    return (void *)bad;
}

static void test_pool(void)
{
    CHECK(rt_pool_size() >= 1);
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, launcher, (void *)(intptr_t)i);
    for (int i = 0; i < 6; i++) {
        void *r;
        pthread_join(t[i], &r);
        CHECK(r == NULL);
    }
    int64_t empty[3] = {0, 5, 1}, neg[3] = {-1, 1, 1};
    char err[128];
    void *args[1] = {NULL};
    long before = atomic_load(&hits);
    CHECK(rt_pool_run(range_fn, args, empty, NULL, err, sizeof err) == 0);
    CHECK(atomic_load(&hits) == before);
    CHECK(rt_pool_run(range_fn, args, neg, NULL, err, sizeof err) != 0);
    CHECK(rt_pool_run_helping(range_fn, args, neg, NULL, true, err,
                              sizeof err) != 0);
    /* small grids with the caller helping, back to back: every instance
     * exactly once, whether a late-waking worker joins or not */
    for (int64_t n = 1; n <= 70; n++) {
        int seen[70] = {0};
        void *a2[1] = {seen};
        int64_t g[3] = {n, 1, 1};
        BkLaunchCtx ctx;
        memset(&ctx, 0, sizeof ctx);
        ctx.world = 1;
        CHECK(rt_pool_run_helping(range_fn, a2, g, &ctx, true, err,
                                  sizeof err) == 0);
        CHECK(ctx.nprog[0] == n && ctx.nprog[1] == 1);
        for (int64_t i = 0; i < 70; i++)
            CHECK(seen[i] == (i < n));
    }
}

int main(void)
{
    test_small_floats();
    test_npy();
    test_pool();
    printf("rt_unit: %s (%d failures)\n", failures ? "FAILED" : "ok",
           failures);
    return failures != 0;
}
