/* aot_driver.c — a plain C program built against the CPU AOT output of
 * kernels.blk (kern.h / kern.c, from `blkc compile --emit=aot -o kern`)
 * and linked with libblkc_runtime only. It runs both kernels and checks
 * them against C references, plus the launchers' argument checks and a
 * grid override. Exit 0 on success. */
#include "kern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libblkc_runtime's conversion helpers (the generated code's; not in the
 * public header) */
uint16_t blkc_cpu_f32_to_f16(float x);
float blkc_cpu_f16_to_f32(uint16_t x);

static int failures;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static float val(unsigned i, unsigned salt)
{
    /* small multiples of 1/8: exact in f16, sums exact in f32 */
    return (float)((int)((i * 7u + salt * 13u) % 17u) - 8) / 8.0f;
}

static void test_axpy(int64_t n)
{
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    float *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    float *z = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        x[i] = val((unsigned)i, 1);
        y[i] = val((unsigned)i, 2);
        z[i] = -99.0f;
    }
    blkc_rt_tensor X, Y, Z;
    blkc_rt_tensor_init(&X, x, BLKC_RT_F32, 1, &n);
    blkc_rt_tensor_init(&Y, y, BLKC_RT_F32, 1, &n);
    blkc_rt_tensor_init(&Z, z, BLKC_RT_F32, 1, &n);
    int rc = kern_axpy(&X, &Y, &Z, 2.5f, NULL);
    CHECK(rc == 0, "axpy n=%lld: rc %d: %s", (long long)n, rc, blkc_rt_last_error());
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (z[i] != x[i] * 2.5f + y[i] && bad++ < 3)
            CHECK(0, "axpy n=%lld: z[%lld] = %g, want %g", (long long)n,
                  (long long)i, z[i], x[i] * 2.5f + y[i]);
    free(x);
    free(y);
    free(z);
}

static void test_matmul(int64_t M, int64_t N, int64_t K)
{
    uint16_t *a = malloc(sizeof(uint16_t) * (size_t)(M * K));
    uint16_t *b = malloc(sizeof(uint16_t) * (size_t)(K * N));
    float *c = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t i = 0; i < M * K; i++)
        a[i] = blkc_cpu_f32_to_f16(val((unsigned)i, 3));
    for (int64_t i = 0; i < K * N; i++)
        b[i] = blkc_cpu_f32_to_f16(val((unsigned)i, 4));
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    blkc_rt_tensor A, B, C;
    blkc_rt_tensor_init(&A, a, BLKC_RT_F16, 2, sa);
    blkc_rt_tensor_init(&B, b, BLKC_RT_F16, 2, sb);
    blkc_rt_tensor_init(&C, c, BLKC_RT_F32, 2, sc);
    int rc = kern_matmul(&A, &B, &C, NULL);
    CHECK(rc == 0, "matmul %lldx%lldx%lld: rc %d: %s", (long long)M,
          (long long)N, (long long)K, rc, blkc_rt_last_error());
    int bad = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double ref = 0;
            for (int64_t k = 0; k < K; k++)
                ref += (double)val((unsigned)(i * K + k), 3) *
                       (double)val((unsigned)(k * N + j), 4);
            double got = c[i * N + j];
            if (fabs(got - ref) > 1e-4 * (1 + fabs(ref)) && bad++ < 3)
                CHECK(0, "matmul %lldx%lldx%lld: C[%lld,%lld] = %g, want %g",
                      (long long)M, (long long)N, (long long)K, (long long)i,
                      (long long)j, got, ref);
        }

    /* argument checks */
    int64_t sb2[2] = {K + 1, N};
    blkc_rt_tensor B2;
    blkc_rt_tensor_init(&B2, b, BLKC_RT_F16, 2, sb2);
    rc = kern_matmul(&A, &B2, &C, NULL);
    CHECK(rc == BLKC_RT_ERR_USAGE && strstr(blkc_rt_last_error(), "size K"),
          "size mismatch: rc %d: %s", rc, blkc_rt_last_error());
    rc = kern_matmul(&C, &B, &C, NULL);
    CHECK(rc == BLKC_RT_ERR_USAGE && strstr(blkc_rt_last_error(), "must be f16"),
          "dtype: rc %d: %s", rc, blkc_rt_last_error());
    blkc_rt_tensor A1;
    blkc_rt_tensor_init(&A1, a, BLKC_RT_F16, 1, sa);
    rc = kern_matmul(&A1, &B, &C, NULL);
    CHECK(rc == BLKC_RT_ERR_USAGE && strstr(blkc_rt_last_error(), "rank 2"),
          "rank: rc %d: %s", rc, blkc_rt_last_error());

    /* grid override: only the first block row and column */
    memset(c, 0, sizeof(float) * (size_t)(M * N));
    blkc_rt_launch opts;
    blkc_rt_launch_init(&opts);
    opts.grid[0] = 1;
    opts.grid[1] = 1;
    rc = kern_matmul(&A, &B, &C, &opts);
    CHECK(rc == 0, "grid override: %s", blkc_rt_last_error());
    if (M > 32)
        CHECK(c[32 * N] == 0.0f, "grid override ran more than one block");
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    CHECK(blkc_rt_num_threads() >= 1, "no thread pool");
    test_axpy(1000);   /* a masked tail */
    test_axpy(256);
    test_axpy(0);      /* empty grid */
    test_matmul(64, 64, 64);
    test_matmul(70, 45, 37); /* ragged edges on every side */
    test_matmul(1, 3, 5);
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("aot cpu: ok\n");
    return 0;
}
