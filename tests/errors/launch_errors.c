/* launch_errors.c — errors found at launch come back as a status and a
 * clear message (never a crash): a symbolic size bound to two different
 * extents (the message names both tensors), a static extent mismatch, a
 * wrong rank, a wrong dtype, a wrong argument count, a scalar where a
 * tensor is expected, an unknown kernel name. */
#include "harness.h"

static const char *src =
    "kernel add<BLOCK = 64>(A: f32[N], B: f32[N], C: f32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK];\n"
    "}\n"
    "kernel fixed(X: f32[4, 8], s: f32) { X[0, 0] = s; }\n";

static void expect_fail(blkc_kernel *k, const blkc_arg *args, int n, const char *what,
                        const char *must1, const char *must2)
{
    blkc_status s = blkc_kernel_launch(k, args, n, NULL);
    const char *msg = blkc_last_error();
    int ok = s != BLKC_OK && msg && *msg && (!must1 || strstr(msg, must1)) &&
             (!must2 || strstr(msg, must2));
    h_ok(ok, "%s: status %s, message '%s' (want a failure naming '%s' and '%s')", what,
         blkc_status_string(s), msg ? msg : "(null)", must1 ? must1 : "", must2 ? must2 : "");
    if (ok)
        printf("ok: %s -> %s: %s\n", what, blkc_status_string(s), msg);
}

int main(void)
{
    blkc_module *m = h_compile(src, NULL);
    blkc_kernel *add = h_kernel(m, "add"), *fixed = h_kernel(m, "fixed");
    float a[100] = {0}, b[100] = {0}, c[100] = {0}, x[64] = {0};
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, 100)), h_ten(h_t1(b, H_F32, 90)),
                            h_ten(h_t1(c, H_F32, 100))), 3,
                "symbolic size N bound to 100 and 90", "A", "B");
    expect_fail(fixed, H_ARGS(h_ten(h_t2(x, H_F32, 4, 9)), h_flt(1)), 2,
                "static extent 8 given 9", "X", NULL);
    expect_fail(fixed, H_ARGS(h_ten(h_t1(x, H_F32, 32)), h_flt(1)), 2,
                "rank 1 given for a rank-2 tensor", "X", NULL);
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F64, 50)), h_ten(h_t1(b, H_F32, 50)),
                            h_ten(h_t1(c, H_F32, 50))), 3,
                "f64 tensor for an f32 parameter", "A", NULL);
    expect_fail(add, H_ARGS(h_ten(h_t1(a, H_F32, 50)), h_ten(h_t1(b, H_F32, 50))), 2,
                "2 arguments for 3 parameters", NULL, NULL);
    expect_fail(fixed, H_ARGS(h_flt(1), h_flt(1)), 2, "a scalar for a tensor parameter", "X",
                NULL);
    blkc_kernel *none = NULL;
    blkc_status s = blkc_module_get_kernel(m, "nope", &none);
    h_ok(s == BLKC_ERR_NOT_FOUND && strstr(blkc_last_error(), "nope"),
         "unknown kernel name: status %s, message '%s'", blkc_status_string(s),
         blkc_last_error());
    /* the kernel still works after all that */
    for (int i = 0; i < 100; i++) a[i] = (float)i, b[i] = 1.0f;
    H_LAUNCH(add, h_ten(h_t1(a, H_F32, 100)), h_ten(h_t1(b, H_F32, 100)),
             h_ten(h_t1(c, H_F32, 100)));
    double r[100];
    for (int i = 0; i < 100; i++) r[i] = i + 1.0;
    h_check("launch after failed launches", c, H_F32, r, 100, 0, 0);
    return h_done();
}
