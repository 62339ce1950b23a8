/* launch_more.c — more wrong launches through the public API, each a status
 * and a message naming the problem, never a crash: every wrong dtype code,
 * bit width and lane count, a NULL tensor, a NULL shape, a negative rank,
 * negative and absurd extents, a size that does not fit i32, a tensor in
 * device memory, NULL data, a NULL kernel, NULL or negative argument lists,
 * scalars of the wrong kind and out of range, NaN and inf scalars where an
 * integer is wanted, negative and absurd grid overrides. NaN/inf values in
 * float scalars and tensors are data, not errors: they launch and
 * propagate. The kernels still work afterwards. */
#include "harness.h"

#include <math.h>

static const char *src =
    "kernel add<BLOCK = 64>(A: f32[N], B: f32[N], C: f32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK];\n"
    "}\n"
    "kernel sc(X: f32[8], a: f32, k: i8, u: u16, b: bool, n: i64) {\n"
    "    X[0 +: 8] = X[0 +: 8] * a + (k as f32);\n"
    "}\n"
    "kernel m2(X: i32[M, 4]) grid(M) { X[program_id(0), 0 +: 4] = zeros(i32, 4); }\n";

static int nfail_checks;

static void expect_fail(blkc_kernel *k, const blkc_arg *args, int n,
                        const blkc_launch_options *o, blkc_status want, const char *what,
                        const char *must)
{
    blkc_status s = blkc_kernel_launch(k, args, n, o);
    const char *msg = blkc_last_error();
    int ok = s == want && msg && *msg && (!must || strstr(msg, must));
    h_ok(ok, "%s: status %s, message '%s' (want %s naming '%s')", what,
         blkc_status_string(s), msg ? msg : "(null)", blkc_status_string(want),
         must ? must : "");
    if (ok)
        printf("ok: %s -> %s: %s\n", what, blkc_status_string(s), msg);
    else
        nfail_checks++;
}

int main(void)
{
    blkc_module *m = h_compile(src, NULL);
    blkc_kernel *add = h_kernel(m, "add"), *sc = h_kernel(m, "sc"), *m2 = h_kernel(m, "m2");
    float a[100] = {0}, b[100] = {0}, c[100] = {0}, x[8] = {0};
    int32_t xi[64] = {0};
    const blkc_status U = BLKC_ERR_USAGE, R = BLKC_ERR_RUNTIME;

    /* ---- wrong dtypes: every DLPack code / width / lane count that is not f32 */
    static const struct { DLDataType t; const char *say; } bad_dt[] = {
        {{kDLFloat, 16, 1}, "f16"},      {{kDLFloat, 64, 1}, "f64"},
        {{kDLBfloat, 16, 1}, "bf16"},    {{kDLInt, 32, 1}, "i32"},
        {{kDLUInt, 32, 1}, "u32"},       {{kDLBool, 8, 1}, "bool"},
        {{kDLFloat, 32, 4}, "lanes 4"},  {{kDLFloat, 24, 1}, "bits 24"},
        {{kDLFloat, 0, 1}, "bits 0"},    {{kDLFloat, 32, 0}, "lanes 0"},
        {{kDLComplex, 64, 1}, "code 5"}, {{kDLOpaqueHandle, 64, 1}, "code 3"},
        {{255, 32, 1}, "code 255"},      {{kDLBool, 1, 1}, "bits 1"},
    };
    for (size_t i = 0; i < sizeof bad_dt / sizeof bad_dt[0]; i++) {
        char what[80];
        snprintf(what, sizeof what, "A given as %s", bad_dt[i].say);
        expect_fail(add, H_ARGS(h_ten(h_t1(a, bad_dt[i].t, 100)), h_ten(h_t1(b, H_F32, 100)),
                                h_ten(h_t1(c, H_F32, 100))), 3, NULL, U, what,
                    "dtype mismatch: parameter A is f32");
    }
    /* ---- wrong shapes and bad DLTensors */
    DLTensor *t;
    blkc_arg null_t = {BLKC_ARG_TENSOR, {.tensor = NULL}};
    expect_fail(add, H_ARGS(null_t, h_ten(h_t1(b, H_F32, 100)), h_ten(h_t1(c, H_F32, 100))), 3,
                NULL, U, "NULL DLTensor", "NULL DLTensor");
    t = h_t1(a, H_F32, 100);
    t->shape = NULL;
    expect_fail(add, H_ARGS(h_ten(t), h_ten(h_t1(b, H_F32, 100)), h_ten(h_t1(c, H_F32, 100))), 3,
                NULL, U, "NULL shape", "no shape");
    t = h_t1(a, H_F32, 100);
    t->ndim = -1;
    expect_fail(add, H_ARGS(h_ten(t), h_ten(h_t1(b, H_F32, 100)), h_ten(h_t1(c, H_F32, 100))), 3,
                NULL, U, "ndim -1", "rank mismatch");
    t = h_t1(a, H_F32, 100);
    t->ndim = 0;
    expect_fail(add, H_ARGS(h_ten(t), h_ten(h_t1(b, H_F32, 100)), h_ten(h_t1(c, H_F32, 100))), 3,
                NULL, U, "ndim 0 (a scalar tensor)", "rank mismatch");
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, -5)), h_ten(h_t1(b, H_F32, -5)),
                            h_ten(h_t1(c, H_F32, -5))), 3, NULL, U, "negative extent",
                "negative extent -5");
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, INT64_MIN)), h_ten(h_t1(b, H_F32, 1)),
                            h_ten(h_t1(c, H_F32, 1))), 3, NULL, U, "extent INT64_MIN",
                "negative extent");
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, (int64_t)1 << 31)),
                            h_ten(h_t1(b, H_F32, (int64_t)1 << 31)),
                            h_ten(h_t1(c, H_F32, (int64_t)1 << 31))), 3, NULL, U,
                "size 2^31 does not fit i32", "does not fit i32");
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, INT64_MAX)), h_ten(h_t1(b, H_F32, INT64_MAX)),
                            h_ten(h_t1(c, H_F32, INT64_MAX))), 3, NULL, U, "extent INT64_MAX",
                "does not fit i32");
    expect_fail(m2, H_ARGS(h_ten(h_t2(xi, H_I32, 16, 5))), 1, NULL, U,
                "static extent 4 given 5", "dim 1 is 4");
    expect_fail(m2, H_ARGS(h_ten(h_t3(xi, H_I32, 4, 4, 1))), 1, NULL, U,
                "rank 3 for a rank-2 parameter", "rank mismatch");
    t = h_t1(a, H_F32, 100);
    t->device.device_type = kDLCUDA;
    expect_fail(add, H_ARGS(h_ten(t), h_ten(h_t1(b, H_F32, 100)), h_ten(h_t1(c, H_F32, 100))), 3,
                NULL, U, "tensor in CUDA memory", "not in host memory");
    t = h_t1(a, H_F32, 100);
    t->device.device_type = (DLDeviceType)12345;
    expect_fail(add, H_ARGS(h_ten(t), h_ten(h_t1(b, H_F32, 100)), h_ten(h_t1(c, H_F32, 100))), 3,
                NULL, U, "unknown device type", "not in host memory");
    expect_fail(add, H_ARGS(h_ten(h_t1(NULL, H_F32, 100)), h_ten(h_t1(b, H_F32, 100)),
                            h_ten(h_t1(c, H_F32, 100))), 3, NULL, U, "NULL data", "NULL data");
    /* ---- argument lists */
    expect_fail(NULL, NULL, 0, NULL, U, "NULL kernel", "NULL");
    expect_fail(add, NULL, 3, NULL, U, "NULL args with nargs 3", "NULL args");
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, 1))), -1, NULL, U, "nargs -1", "got -1");
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, 1)), h_ten(h_t1(a, H_F32, 1)),
                            h_ten(h_t1(a, H_F32, 1)), h_ten(h_t1(a, H_F32, 1))), 4, NULL, U,
                "4 arguments for 3", "takes 3 arguments, got 4");
    /* ---- scalars: wrong kind, out of range, NaN/inf for integers */
#define SC(a_, k_, u_, b_, n_) \
    H_ARGS(h_ten(h_t1(x, H_F32, 8)), a_, k_, u_, b_, n_), 6
    expect_fail(sc, SC(h_int(1), h_int(1), h_int(1), h_int(1), h_int(1)), NULL, U,
                "int for an f32 scalar", "pass BLKC_ARG_FLOAT");
    expect_fail(sc, SC(h_flt(1), h_flt(1), h_int(1), h_int(1), h_int(1)), NULL, U,
                "float for an i8 scalar", "pass BLKC_ARG_INT");
    expect_fail(sc, SC(h_flt(1), h_flt(NAN), h_int(1), h_int(1), h_int(1)), NULL, U,
                "NaN for an i8 scalar", "pass BLKC_ARG_INT");
    expect_fail(sc, SC(h_flt(1), h_flt(INFINITY), h_int(1), h_int(1), h_int(1)), NULL, U,
                "inf for an i8 scalar", "pass BLKC_ARG_INT");
    expect_fail(sc, SC(h_flt(1), h_int(128), h_int(1), h_int(1), h_int(1)), NULL, U,
                "128 for an i8 scalar", "out of range for parameter k: i8");
    expect_fail(sc, SC(h_flt(1), h_int(-129), h_int(1), h_int(1), h_int(1)), NULL, U,
                "-129 for an i8 scalar", "out of range");
    expect_fail(sc, SC(h_flt(1), h_int(0), h_int(65536), h_int(1), h_int(1)), NULL, U,
                "65536 for a u16 scalar", "out of range for parameter u: u16");
    expect_fail(sc, SC(h_flt(1), h_int(0), h_int(-1), h_int(1), h_int(1)), NULL, U,
                "-1 for a u16 scalar", "out of range");
    expect_fail(sc, SC(h_flt(1), h_int(0), h_int(0), h_int(2), h_int(1)), NULL, U,
                "2 for a bool scalar", "out of range for parameter b: bool");
    blkc_arg bad_kind = {(blkc_arg_kind)7, {.i = 0}};
    expect_fail(sc, SC(h_flt(1), bad_kind, h_int(0), h_int(0), h_int(1)), NULL, U,
                "argument kind 7", "pass BLKC_ARG_INT");
    expect_fail(add, H_ARGS(h_int(3), h_ten(h_t1(b, H_F32, 100)), h_ten(h_t1(c, H_F32, 100))),
                3, NULL, U, "an int for a tensor", "pass BLKC_ARG_TENSOR");
    /* ---- grid overrides */
    blkc_launch_options lo;
    blkc_launch_options_init(&lo);
    lo.grid[0] = -1;
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, 100)), h_ten(h_t1(b, H_F32, 100)),
                            h_ten(h_t1(c, H_F32, 100))), 3, &lo, U, "grid override -1",
                "negative");
    lo.grid[0] = (int64_t)1 << 40;
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, 100)), h_ten(h_t1(b, H_F32, 100)),
                            h_ten(h_t1(c, H_F32, 100))), 3, &lo, R, "grid override 2^40",
                "out of range");
    lo.grid[0] = lo.grid[1] = lo.grid[2] = INT32_MAX;
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, 100)), h_ten(h_t1(b, H_F32, 100)),
                            h_ten(h_t1(c, H_F32, 100))), 3, &lo, R,
                "grid override (2^31-1)^3", "too many program instances");

    /* ---- NaN / inf are data: they launch and propagate */
    for (int i = 0; i < 8; i++)
        x[i] = i == 3 ? NAN : i == 5 ? INFINITY : 1.0f;
    H_LAUNCH(sc, h_ten(h_t1(x, H_F32, 8)), h_flt(NAN), h_int(0), h_int(0), h_int(0), h_int(0));
    int allnan = 1;
    for (int i = 0; i < 8; i++)
        allnan &= isnan(x[i]);
    h_ok(allnan, "a NaN scalar makes every element NaN");
    for (int i = 0; i < 8; i++)
        x[i] = i == 3 ? NAN : 1.0f;
    H_LAUNCH(sc, h_ten(h_t1(x, H_F32, 8)), h_flt(INFINITY), h_int(1), h_int(0), h_int(0),
             h_int(0));
    h_ok(isnan(x[3]) && isinf(x[0]) && x[0] > 0, "inf scale: NaN stays NaN, 1 becomes inf");
    /* an empty launch (N = 0) is fine */
    H_LAUNCH(add, h_ten(h_t1(a, H_F32, 0)), h_ten(h_t1(b, H_F32, 0)), h_ten(h_t1(c, H_F32, 0)));

    /* ---- and the kernel still works after all that */
    for (int i = 0; i < 100; i++)
        a[i] = (float)i, b[i] = 1.0f;
    H_LAUNCH(add, h_ten(h_t1(a, H_F32, 100)), h_ten(h_t1(b, H_F32, 100)),
             h_ten(h_t1(c, H_F32, 100)));
    double r[100];
    for (int i = 0; i < 100; i++)
        r[i] = i + 1.0;
    h_check("launch after failed launches", c, H_F32, r, 100, 0, 0);
    return h_done();
}
