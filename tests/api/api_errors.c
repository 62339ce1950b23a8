/* api_errors.c — the error routes of libblkc, public API only: every bad
 * call returns the right status and a message naming the problem, and the
 * library keeps working afterwards. */
#include <blkc/blkc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_test.h"

static const char *good =
    "kernel addk(X: f32[N], Y: f32[N], M2: f32[N, 4], k: i32) grid(1)\n"
    "{\n"
    "    Y[0 +: 16] = X[0 +: 16] + (k as f32);\n"
    "}\n";

static const char *bad =
    "kernel broken(X: f32[N]) grid(1)\n"
    "{\n"
    "    X[0 +: 4] = nothing_here;\n"
    "}\n";

static DLTensor tensor(void *p, int ndim, int64_t *shape, uint8_t code,
                       uint8_t bits)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = p;
    t.device.device_type = kDLCPU;
    t.ndim = ndim;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

static void *other_thread(void *arg)
{
    (void)arg;
    /* a fresh thread has no error yet */
    return (void *)(intptr_t)(strcmp(blkc_last_error(), "") != 0);
}

int main(void)
{
    CHECK(strcmp(blkc_version(), "0.1.0") == 0);
    CHECK(strcmp(blkc_status_string(BLKC_ERR_COMPILE), "compile error") == 0);

    blkc_context *ctx;
    EXPECT(blkc_context_create("tpu", &ctx), BLKC_ERR_USAGE, "unknown device");
    EXPECT(blkc_context_create("cuda:0", &ctx), BLKC_ERR_UNSUPPORTED,
           "not supported");
    EXPECT(blkc_context_create("cpu", NULL), BLKC_ERR_USAGE, "NULL");
    CHECK(blkc_context_create("cpu", &ctx) == BLKC_OK);

    /* compile errors: the diagnostic, with the file name */
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.filename = "bad.blk";
    blkc_module *m = (blkc_module *)&o;
    EXPECT(blkc_module_create(ctx, bad, strlen(bad), &o, &m),
           BLKC_ERR_COMPILE, "bad.blk:3:");
    CHECK(m == NULL);
    CHECK(strstr(blkc_last_error(), "error: ") != NULL);
    CHECK(strstr(blkc_last_error(), "nothing_here") != NULL);
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, &r);
    CHECK(r == NULL); /* thread-local */
    EXPECT(blkc_module_create(ctx, NULL, 5, NULL, &m), BLKC_ERR_USAGE, "NULL");
    EXPECT(blkc_module_create_from_file(ctx, "/nonexistent/x.blk", NULL, &m),
           BLKC_ERR_NOT_FOUND, "/nonexistent/x.blk");
    o.target = BLKC_TARGET_CUDA;
    EXPECT(blkc_module_create(ctx, good, strlen(good), &o, &m),
           BLKC_ERR_UNSUPPORTED, "cuda");
    o.target = BLKC_TARGET_CPU;
    const char *defs[1] = {"=3"};
    o.defines = defs;
    o.ndefines = 1;
    EXPECT(blkc_module_create(ctx, good, strlen(good), &o, &m),
           BLKC_ERR_USAGE, "NAME=VALUE");
    o.ndefines = 0;

    /* a good module */
    CHECK(blkc_module_create(ctx, good, strlen(good), &o, &m) == BLKC_OK);
    CHECK(blkc_module_kernel_count(m) == 1);
    CHECK(strcmp(blkc_module_kernel_name(m, 0), "addk") == 0);
    CHECK(blkc_module_kernel_name(m, 1) == NULL);
    blkc_kernel *k;
    EXPECT(blkc_module_get_kernel(m, "nope", &k), BLKC_ERR_NOT_FOUND,
           "addk");
    CHECK(blkc_module_get_kernel(m, "addk", &k) == BLKC_OK);
    CHECK(blkc_kernel_param_count(k) == 4);
    CHECK(strcmp(blkc_kernel_param_name(k, 3), "k") == 0);
    CHECK(blkc_kernel_param_is_tensor(k, 0) == 1);
    CHECK(blkc_kernel_param_is_tensor(k, 3) == 0);

    float x[16], y[16], m2[64];
    double xd[16];
    int64_t s16[1] = {16}, s8[1] = {8}, s164[2] = {16, 4}, s84[2] = {8, 4};
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    DLTensor tx = tensor(x, 1, s16, kDLFloat, 32);
    DLTensor ty = tensor(y, 1, s16, kDLFloat, 32);
    DLTensor tm = tensor(m2, 2, s164, kDLFloat, 32);
    blkc_arg args[4] = {{BLKC_ARG_TENSOR, {.tensor = &tx}},
                        {BLKC_ARG_TENSOR, {.tensor = &ty}},
                        {BLKC_ARG_TENSOR, {.tensor = &tm}},
                        {BLKC_ARG_INT, {.i = 5}}};
    CHECK(blkc_kernel_launch(k, args, 4, NULL) == BLKC_OK);
    for (int i = 0; i < 16; i++)
        CHECK(y[i] == (float)(i + 5));

    EXPECT(blkc_kernel_launch(NULL, args, 4, NULL), BLKC_ERR_USAGE, "NULL");
    EXPECT(blkc_kernel_launch(k, NULL, 4, NULL), BLKC_ERR_USAGE, "NULL");
    EXPECT(blkc_kernel_launch(k, args, 3, NULL), BLKC_ERR_USAGE,
           "takes 4 arguments, got 3");
    /* wrong dtype names the parameter */
    DLTensor txd = tensor(xd, 1, s16, kDLFloat, 64);
    args[0].v.tensor = &txd;
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "dtype mismatch: parameter X is f32 but the tensor is f64");
    args[0].v.tensor = NULL;
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "parameter X: NULL DLTensor");
    args[0].v.tensor = &tx;
    /* a symbolic size used twice must agree, both are named */
    DLTensor ty8 = tensor(y, 1, s8, kDLFloat, 32);
    args[1].v.tensor = &ty8;
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "size mismatch: N is 16 from X but 8 from Y");
    args[1].v.tensor = &ty;
    /* static extent and rank */
    DLTensor tm8 = tensor(m2, 2, s84, kDLFloat, 32);
    args[2].v.tensor = &tm8;
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "size mismatch: N is 16 from X but 8 from M2");
    DLTensor tm1 = tensor(m2, 1, s16, kDLFloat, 32);
    args[2].v.tensor = &tm1;
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "rank mismatch: parameter M2");
    args[2].v.tensor = &tm;
    /* scalar kinds and ranges */
    args[3].kind = BLKC_ARG_FLOAT;
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "parameter k is a i32 scalar");
    args[3] = (blkc_arg){BLKC_ARG_INT, {.i = (int64_t)1 << 40}};
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "out of range for parameter k");
    args[3] = (blkc_arg){BLKC_ARG_TENSOR, {.tensor = &tx}};
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "parameter k is a i32 scalar");
    args[0] = (blkc_arg){BLKC_ARG_INT, {.i = 1}};
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "parameter X is a tensor");
    /* GPU memory is refused */
    args[0] = (blkc_arg){BLKC_ARG_TENSOR, {.tensor = &tx}};
    args[3] = (blkc_arg){BLKC_ARG_INT, {.i = 1}};
    tx.device.device_type = kDLCUDA;
    EXPECT(blkc_kernel_launch(k, args, 4, NULL), BLKC_ERR_USAGE,
           "not in host memory");
    tx.device.device_type = kDLCPU;
    /* still works after all that; a grid override */
    blkc_launch_options lo;
    blkc_launch_options_init(&lo);
    lo.grid[0] = 2;
    CHECK(blkc_kernel_launch(k, args, 4, &lo) == BLKC_OK);
    CHECK(y[3] == 4.0f);

    /* strides (in elements) and byte_offset are honoured */
    float wide[40];
    for (int i = 0; i < 40; i++)
        wide[i] = (float)(100 + i);
    int64_t st2[1] = {2};
    DLTensor tw = tensor(wide, 1, s16, kDLFloat, 32);
    tw.strides = st2;
    tw.byte_offset = 2 * sizeof(float);
    args[0].v.tensor = &tw;
    CHECK(blkc_kernel_launch(k, args, 4, NULL) == BLKC_OK);
    for (int i = 0; i < 16; i++)
        CHECK(y[i] == (float)(100 + 2 + 2 * i + 1));
    args[0].v.tensor = &tx;

    /* emit */
    char *out = NULL;
    size_t len = 0;
    CHECK(blkc_emit(good, strlen(good), NULL, "core", &out, &len) == BLKC_OK);
    CHECK(out && len > 0 && strstr(out, "addk"));
    blkc_free(out);
    CHECK(blkc_emit(good, strlen(good), NULL, "ast", &out, &len) == BLKC_OK);
    CHECK(out && strstr(out, "addk"));
    blkc_free(out);
    EXPECT(blkc_emit(good, strlen(good), NULL, "bogus", &out, &len),
           BLKC_ERR_USAGE, "no stage 'bogus'");
    EXPECT(blkc_emit(bad, strlen(bad), NULL, "core", &out, &len),
           BLKC_ERR_COMPILE, "<input>:3:");
    EXPECT(blkc_emit(bad, strlen(bad), NULL, NULL, &out, &len),
           BLKC_ERR_USAGE, "NULL");

    blkc_module_destroy(m);
    blkc_module_destroy(NULL);
    blkc_context_destroy(ctx);
    printf("api_errors: %s (%d failures)\n", failures ? "FAILED" : "ok",
           failures);
    return failures != 0;
}
