/* t_api_emu.c — blkc_context_create("cuda-emu" | "hip-emu") through the
 * public API (label emu): a module with an f16 dot (the tensor-core path:
 * mma.sync on cuda-emu, MFMA on hip-emu) and an elementwise kernel, launched
 * on host tensors (kDLCPU) with extents that are not multiples of the
 * tiles, compared with a C reference; a device tensor is refused. Exit 77
 * when the device is not supported here (no C++ compiler). */
#include <blkc/blkc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *src = H_MM_SRC("BM = 32, BN = 32, BK = 16", "f16", " warps(4)");

static DLTensor tensor(void *p, int64_t *shape, int ndim, int code, int bits)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = p;
    t.device.device_type = kDLCPU;
    t.ndim = ndim;
    t.dtype.code = (uint8_t)code;
    t.dtype.bits = (uint8_t)bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

/* f16 bits of small integers / 4 (exact) */
static uint16_t f16_bits(int q)
{
    if (q == 0)
        return 0;
    float v = fabsf((float)q) / 4.0f;
    int e;
    float fr = frexpf(v, &e); /* v = fr * 2^e, fr in [0.5, 1) */
    unsigned mant = (unsigned)((fr * 2.0f - 1.0f) * 1024.0f);
    return (uint16_t)((q < 0 ? 0x8000u : 0) | (unsigned)(e - 1 + 15) << 10 | mant);
}

static int one(const char *dev)
{
    blkc_context *ctx;
    blkc_status st = blkc_context_create(dev, &ctx);
    if (st == BLKC_ERR_UNSUPPORTED) {
        printf("skip %s: %s\n", dev, blkc_last_error());
        return 77;
    }
    if (st != BLKC_OK) {
        printf("FAIL %s: context: %s\n", dev, blkc_last_error());
        return 1;
    }
    blkc_module *m;
    blkc_kernel *k;
    if (blkc_module_create(ctx, src, strlen(src), NULL, &m) != BLKC_OK ||
        blkc_module_get_kernel(m, "mm", &k) != BLKC_OK) {
        printf("FAIL %s: module: %s\n", dev, blkc_last_error());
        blkc_context_destroy(ctx);
        return 1;
    }
    enum { M = 45, K = 40, N = 37 };
    static uint16_t a[M * K], b[K * N];
    static float c[M * N];
    int qa[M * K], qb[K * N];
    for (int i = 0; i < M * K; i++)
        a[i] = f16_bits(qa[i] = (i * 7) % 9 - 4);
    for (int i = 0; i < K * N; i++)
        b[i] = f16_bits(qb[i] = (i * 5) % 7 - 3);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    DLTensor ta = tensor(a, sa, 2, kDLFloat, 16), tb = tensor(b, sb, 2, kDLFloat, 16),
             tc = tensor(c, sc, 2, kDLFloat, 32);
    blkc_arg args[3] = {{BLKC_ARG_TENSOR, {.tensor = &ta}},
                        {BLKC_ARG_TENSOR, {.tensor = &tb}},
                        {BLKC_ARG_TENSOR, {.tensor = &tc}}};
    int fails = 0;
    if (blkc_kernel_launch(k, args, 3, NULL) != BLKC_OK) {
        printf("FAIL %s: launch: %s\n", dev, blkc_last_error());
        fails++;
    }
    for (int i = 0; i < M && !fails; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int q = 0; q < K; q++)
                s += qa[i * K + q] * qb[q * N + j] / 16.0;
            if (c[i * N + j] != s && fails++ < 4)
                printf("FAIL %s: C[%d, %d] = %g, expected %g\n", dev, i, j, c[i * N + j], s);
        }
    tc.device.device_type = kDLCUDA; /* not host memory */
    if (blkc_kernel_launch(k, args, 3, NULL) != BLKC_ERR_USAGE ||
        !strstr(blkc_last_error(), "not in host memory")) {
        printf("FAIL %s: a device tensor was not refused: %s\n", dev, blkc_last_error());
        fails++;
    }
    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
    if (!fails)
        printf("ok %s: mm %dx%dx%d\n", dev, M, K, N);
    return fails ? 1 : 0;
}

int main(void)
{
    int a = one("cuda-emu"), b = one("hip-emu");
    if (a == 77 && b == 77)
        return 77;
    return (a == 1 || b == 1) ? 1 : 0;
}
