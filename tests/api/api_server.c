/* api_server.c — the C API as an inference server uses it (issue 16),
 * public API only: a NUL-terminated source (length 0) and an empty
 * program; defines that match nothing (ignore_unknown_defines, "?NAME",
 * context-wide defines); blkc_tensor_init and the one-line launcher
 * blkc_kernel_launchf with their errors; the aliasing rule (in-place
 * RMSNorm and softmax against a C reference, partly overlapping views
 * refused); specialization modes and blkc_kernel_prepare. */
#include <blkc/blkc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_test.h"

static const char *scale_src =
    "const HS = 4;\n"
    "kernel scale<BLOCK = 64>(X: f32[N], Y: f32[N], a: f32)\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = X[o +: BLOCK] * a + (HS as f32);\n"
    "}\n";

static const char *norm_src =
    "kernel rmsnorm<BLOCK = 256>(X: f32[R, N], W: f32[N], Y: f32[R, N],\n"
    "                           eps: f32) grid(R)\n"
    "{\n"
    "    let r = program_id(0);\n"
    "    let x = load(X[r, 0 +: BLOCK], pad = 0.0);\n"
    "    let ms = sum(x * x) / (N as f32);\n"
    "    Y[r, 0 +: BLOCK] = x * rsqrt(ms + eps) * load(W[0 +: BLOCK], pad = 0.0);\n"
    "}\n"
    "kernel softmax<BLOCK = 256>(X: f32[R, N], Y: f32[R, N]) grid(R)\n"
    "{\n"
    "    let r = program_id(0);\n"
    "    let x = load(X[r, 0 +: BLOCK], pad = -inf);\n"
    "    let e = exp(x - max(x));\n"
    "    Y[r, 0 +: BLOCK] = e / sum(e);\n"
    "}\n";

/* Y = X * 3 + HS through the short launcher; checks every element. */
static void check_scale(blkc_kernel *k, float hs)
{
    float x[100], y[100];
    for (int i = 0; i < 100; i++)
        x[i] = (float)i - 50;
    CHECK(blkc_kernel_launchf(k, "f32[#] f32[100] f", x, 100, y, 3.0) ==
          BLKC_OK);
    for (int i = 0; i < 100; i++)
        CHECK(y[i] == x[i] * 3 + hs);
}

static void test_sources(blkc_context *ctx)
{
    blkc_module *m = NULL;
    /* length 0: NUL-terminated */
    CHECK(blkc_module_create(ctx, scale_src, 0, NULL, &m) == BLKC_OK);
    CHECK(blkc_module_kernel_count(m) == 1);
    blkc_module_destroy(m);
    /* an empty program (and one with only comments) is an error */
    EXPECT_MSG(blkc_module_create(ctx, "", 0, NULL, &m), BLKC_ERR_COMPILE,
               "<input>: the program has no kernel or device function (a "
               "task runs through blkc_task_create)");
    CHECK(m == NULL);
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.filename = "empty.blk";
    EXPECT_MSG(blkc_module_create(ctx, "// nothing\n", 0, &o, &m),
               BLKC_ERR_COMPILE, "empty.blk: the program has no kernel or "
               "device function (a task runs through blkc_task_create)");
    EXPECT_MSG(blkc_module_create(ctx, NULL, 0, NULL, &m), BLKC_ERR_USAGE,
               "source is NULL");
}

static void test_defines(void)
{
    const char *defs[] = {"HS=7", "NOT_HERE=3"};
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.defines = defs;
    o.ndefines = 2;
    blkc_module *m = NULL;
    blkc_kernel *k;
    /* off by default: an error */
    CHECK(blkc_module_create(NULL, scale_src, 0, &o, &m) == BLKC_ERR_COMPILE);
    CHECK(strstr(blkc_last_error(), "error: define 'NOT_HERE' matches no "
                 "constant or compile-time parameter") != NULL);
    o.ignore_unknown_defines = 1;
    CHECK(blkc_module_create(NULL, scale_src, 0, &o, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    check_scale(k, 7);
    blkc_module_destroy(m);
    /* one optional define: "?NAME=VALUE" */
    const char *defs2[] = {"BLOCK=32", "?NOT_HERE=3"};
    blkc_compile_options_init(&o);
    o.defines = defs2;
    o.ndefines = 2;
    CHECK(blkc_module_create(NULL, scale_src, 0, &o, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    check_scale(k, 4);
    blkc_module_destroy(m);
    o.ignore_unknown_defines = 2;
    EXPECT_MSG(blkc_module_create(NULL, scale_src, 0, &o, &m), BLKC_ERR_USAGE,
               "ignore_unknown_defines 2 is not 0 or 1");

    /* context-wide defines: every module gets them, unused ones are
     * ignored, a module's own define wins */
    const char *cdefs[] = {"HS=9", "LAYERS=32", "BLOCK=16"};
    blkc_context_options co;
    blkc_context_options_init(&co);
    co.defines = cdefs;
    co.ndefines = 3;
    blkc_context *ctx;
    CHECK(blkc_context_create_ex("cpu", &co, &ctx) == BLKC_OK);
    CHECK(blkc_module_create(ctx, scale_src, 0, NULL, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    check_scale(k, 9);
    blkc_module_destroy(m);
    const char *mine[] = {"HS=2"};
    blkc_compile_options_init(&o);
    o.defines = mine;
    o.ndefines = 1;
    CHECK(blkc_module_create(ctx, scale_src, 0, &o, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    check_scale(k, 2);
    blkc_module_destroy(m);
    /* a module's own unknown define is still an error there */
    const char *typo[] = {"HZ=2"};
    o.defines = typo;
    CHECK(blkc_module_create(ctx, scale_src, 0, &o, &m) == BLKC_ERR_COMPILE);
    CHECK(strstr(blkc_last_error(), "define 'HZ' matches no") != NULL);
    blkc_context_destroy(ctx);
    const char *badc[] = {"NOEQUALS"};
    co.defines = badc;
    co.ndefines = 1;
    EXPECT_MSG(blkc_context_create_ex("cpu", &co, &ctx), BLKC_ERR_USAGE,
               "context define 0 is not NAME=VALUE");
    blkc_context_options_init(&co);
    co.reserved[3] = 1;
    EXPECT_MSG(blkc_context_create_ex("cpu", &co, &ctx), BLKC_ERR_USAGE,
               "blkc_context_options.reserved[3] is not 0 (call "
               "blkc_context_options_init)");
}

static void test_launchf(blkc_context *ctx)
{
    blkc_module *m;
    blkc_kernel *k;
    CHECK(blkc_module_create(ctx, scale_src, 0, NULL, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    check_scale(k, 4);
    /* tensors made in one call: a strided view (every other element) */
    float x[64], y[32];
    for (int i = 0; i < 64; i++)
        x[i] = (float)i;
    blkc_tensor tx, ty;
    CHECK(blkc_tensor_init(&tx, x, BLKC_F32, 1, (int64_t[]){32},
                           (int64_t[]){2}) == BLKC_OK);
    CHECK(blkc_tensor_init(&ty, y, BLKC_F32, 1, (int64_t[]){32}, NULL) ==
          BLKC_OK);
    CHECK(blkc_kernel_launchf(k, "T T f", &tx, &ty, 0.5) == BLKC_OK);
    for (int i = 0; i < 32; i++)
        CHECK(y[i] == (float)(2 * i) * 0.5f + 4);
    blkc_arg a[3] = {blkc_arg_tensor(&tx), blkc_arg_dl(&ty.dl),
                     blkc_arg_float(1.0)};
    CHECK(blkc_kernel_launch(k, a, 3, NULL) == BLKC_OK);
    CHECK(y[31] == 62 + 4);
    /* errors name the item */
    EXPECT_MSG(blkc_kernel_launchf(k, "f32[#] f", x, 4, 1.0), BLKC_ERR_USAGE,
               "launchf item 2: parameter 'Y' of scale is a tensor");
    EXPECT_MSG(blkc_kernel_launchf(k, "f32[#] f32[#]", x, 4, y, 4),
               BLKC_ERR_USAGE, "launchf: 'f32[#] f32[#]' has 2 items but "
               "scale has 3 parameters");
    EXPECT_MSG(blkc_kernel_launchf(k, "f32[#] f32[#] f i", x, 4, y, 4, 1.0, 2),
               BLKC_ERR_USAGE, "launchf: 'f32[#] f32[#] f i' has more items "
               "than scale has parameters (3)");
    EXPECT_MSG(blkc_kernel_launchf(k, "f31[#] f32[#] f", x, 4, y, 4, 1.0),
               BLKC_ERR_USAGE, "launchf item 1: 'f31' is not DTYPE[...], t, "
               "T, i, l or f");
    EXPECT_MSG(blkc_kernel_launchf(k, "f32[#;] f32[#] f", x, 4, y, 4, 1.0),
               BLKC_ERR_USAGE, "launchf item 1: expected ',' or ']'");
    /* the dtype is checked by the launch itself */
    CHECK(blkc_kernel_launchf(k, "i32[#] f32[#] f", x, 4, y, 4, 1.0) ==
          BLKC_ERR_USAGE);
    blkc_tensor bad;
    EXPECT_MSG(blkc_tensor_init(&bad, x, BLKC_F32, 9, (int64_t[]){1}, NULL),
               BLKC_ERR_USAGE, "blkc_tensor_init: ndim 9 is not 0..8");
    CHECK(bad.dl.ndim == -1);
    CHECK(blkc_kernel_launchf(k, "T f32[#] f", &bad, y, 4, 1.0) ==
          BLKC_ERR_USAGE);
    blkc_module_destroy(m);
}

/* in-place RMSNorm and softmax (X and Y the same tensor) against C */
static void test_alias(blkc_context *ctx)
{
    enum { R = 5, N = 200 };
    blkc_module *m;
    blkc_kernel *norm, *smax;
    CHECK(blkc_module_create(ctx, norm_src, 0, NULL, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, "rmsnorm", &norm) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, "softmax", &smax) == BLKC_OK);
    static float x[R * N], ref[R * N], w[N], big[2 * R * N];
    for (int i = 0; i < R * N; i++)
        x[i] = (float)((i * 37) % 101) / 25.0f - 2.0f;
    for (int j = 0; j < N; j++)
        w[j] = 0.5f + (float)j / N;
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int j = 0; j < N; j++)
            ss += (double)x[r * N + j] * x[r * N + j];
        double inv = 1.0 / sqrt(ss / N + 1e-5);
        for (int j = 0; j < N; j++)
            ref[r * N + j] = (float)(x[r * N + j] * inv * w[j]);
    }
    CHECK(blkc_kernel_launchf(norm, "f32[#,#] f32[#] f32[#,#] f", x, R, N, w,
                              N, x, R, N, 1e-5) == BLKC_OK);
    double maxerr = 0;
    for (int i = 0; i < R * N; i++)
        maxerr = fmax(maxerr, fabs(x[i] - ref[i]));
    CHECK(maxerr < 1e-5);
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, s = 0;
        for (int j = 0; j < N; j++)
            mx = fmax(mx, x[r * N + j]);
        for (int j = 0; j < N; j++)
            s += exp(x[r * N + j] - mx);
        for (int j = 0; j < N; j++)
            ref[r * N + j] = (float)(exp(x[r * N + j] - mx) / s);
    }
    CHECK(blkc_kernel_launchf(smax, "f32[#,#] f32[#,#]", x, R, N, x, R, N) ==
          BLKC_OK);
    maxerr = 0;
    for (int i = 0; i < R * N; i++)
        maxerr = fmax(maxerr, fabs(x[i] - ref[i]));
    CHECK(maxerr < 1e-6);

    /* partly overlapping views: Y one row below X in one buffer */
    EXPECT_MSG(blkc_kernel_launchf(smax, "f32[#,#] f32[#,#]", big, R, N,
                                   big + N, R, N),
               BLKC_ERR_USAGE, "arguments 'Y' and 'X' of softmax overlap but "
               "are not the same view ('Y' is written; its bytes [0, 4000) "
               "meet 'X' at offset -800): pass the same tensor for an "
               "in-place update, or disjoint memory");
    /* the same memory, another shape: refused too */
    blkc_tensor t1, t2;
    blkc_tensor_init(&t1, big, BLKC_F32, 2, (int64_t[]){R, N}, NULL);
    blkc_tensor_init(&t2, big, BLKC_F32, 2, (int64_t[]){2 * R, N / 2}, NULL);
    CHECK(blkc_kernel_launchf(smax, "T T", &t1, &t2) == BLKC_ERR_USAGE);
    /* disjoint halves of one buffer are fine; two reads may overlap */
    CHECK(blkc_kernel_launchf(smax, "f32[#,#] f32[#,#]", big, R, N,
                              big + R * N, R, N) == BLKC_OK);
    CHECK(blkc_kernel_launchf(norm, "f32[#,#] f32[#] f32[#,#] f", big, R, N,
                              big, N, big + R * N, R, N, 1e-5) == BLKC_OK);
    blkc_module_destroy(m);
}

static void test_prepare(void)
{
    blkc_context_options co;
    blkc_context_options_init(&co);
    co.specialize = BLKC_SPECIALIZE_OFF;
    blkc_context *ctx;
    CHECK(blkc_context_create_ex("cpu", &co, &ctx) == BLKC_OK);
    /* a source of its own: no other test's variants in the cache */
    char src[1024];
    snprintf(src, sizeof src, "// prepare\n%s", scale_src);
    blkc_module *m;
    blkc_kernel *k;
    CHECK(blkc_module_create(ctx, src, 0, NULL, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    static float x[256] __attribute__((aligned(64))),
        y[256] __attribute__((aligned(64)));
    check_scale(k, 4); /* off: no variant */
    CHECK(blkc_kernel_variant_count(k) == 0);
    blkc_tensor tx, ty;
    blkc_tensor_init(&tx, x, BLKC_F32, 1, (int64_t[]){256}, NULL);
    blkc_tensor_init(&ty, y, BLKC_F32, 1, (int64_t[]){256}, NULL);
    blkc_arg a[3] = {blkc_arg_tensor(&tx), blkc_arg_tensor(&ty),
                     blkc_arg_float(2)};
    CHECK(blkc_kernel_prepare(k, a, 3) == BLKC_OK);
    CHECK(blkc_kernel_variant_count(k) == 1);
    CHECK(blkc_kernel_prepare(k, a, 3) == BLKC_OK); /* already there */
    CHECK(blkc_kernel_variant_count(k) == 1);
    for (int i = 0; i < 256; i++)
        x[i] = (float)i;
    CHECK(blkc_kernel_launch(k, a, 3, NULL) == BLKC_OK);
    for (int i = 0; i < 256; i++)
        CHECK(y[i] == (float)i * 2 + 4);
    /* eager on this kernel: a new signature compiles in the launch */
    CHECK(blkc_kernel_set_specialize(k, BLKC_SPECIALIZE_EAGER) == BLKC_OK);
    CHECK(blkc_kernel_launchf(k, "f32[#] f32[#] f", x, 50, y, 50, 1.0) ==
          BLKC_OK);
    CHECK(blkc_kernel_variant_count(k) == 2);
    EXPECT_MSG(blkc_kernel_prepare(k, a, 2), BLKC_ERR_USAGE,
               "blkc_kernel_prepare: the arguments do not fit scale (3 "
               "parameters; 2 given)");
    EXPECT_MSG(blkc_kernel_set_specialize(k, (blkc_specialize)7),
               BLKC_ERR_USAGE, "specialize 7 is not a blkc_specialize");
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.specialize = (blkc_specialize)9;
    blkc_module *m2 = NULL;
    EXPECT_MSG(blkc_module_create(ctx, src, 0, &o, &m2), BLKC_ERR_USAGE,
               "specialize 9 is not a blkc_specialize");
    CHECK(m2 == NULL);
    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
}

int main(void)
{
    blkc_context *ctx;
    if (blkc_context_create("cpu", &ctx) != BLKC_OK) {
        fprintf(stderr, "%s\n", blkc_last_error());
        return 1;
    }
    test_sources(ctx);
    test_defines();
    test_launchf(ctx);
    test_alias(ctx);
    test_prepare();
    blkc_context_destroy(ctx);
    if (failures) {
        fprintf(stderr, "api_server: %d failures\n", failures);
        return 1;
    }
    printf("api_server: ok\n");
    return 0;
}
