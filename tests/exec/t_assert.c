/* t_assert.c — assert(cond, "message") in a kernel (LANGUAGE.md §7): a
 * false scalar or any false element of a tile fails the launch with
 * BLKC_ERR_RUNTIME and a message naming file, line, program id and the
 * message; the failing instance stops there; the context keeps working (a
 * second launch that passes its asserts succeeds). */
#include "harness.h"

static const char *src =
    "kernel k<BLOCK = 16>(X: f32[N], Y: f32[N], bad: i32)\n"
    "    grid(cdiv(N, BLOCK)) {\n"
    "    let p = program_id(0);\n"
    "    let x = X[p * BLOCK +: BLOCK];\n"
    "    assert(p != bad, \"program \\\"bad\\\" reached\");\n"
    "    assert(x >= 0.0, \"negative input\");\n"
    "    Y[p * BLOCK +: BLOCK] = x + 1.0;\n"
    "}\n";

static blkc_status run(blkc_kernel *k, float *x, float *y, int n, int bad)
{
    return h_launch(k, H_ARGS(h_ten(h_t1(x, H_F32, n)),
                                        h_ten(h_t1(y, H_F32, n)), h_int(bad)),
                              3, NULL);
}

int main(void)
{
    enum { N = 64 };
    blkc_kernel *k = h_build(src, NULL);
    float x[N], y[N];
    double ry[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = -7;
        ry[i] = i + 1.0;
    }
    /* a scalar assert fails in program 2 only: the others store */
    blkc_status s = run(k, x, y, N, 2);
    h_ok(s == BLKC_ERR_RUNTIME, "scalar assert: status %s", blkc_status_string(s));
    const char *want = "test.blk:5: kernel k: assertion failed in program (2, 0, 0): "
                       "program \"bad\" reached";
    h_ok(strstr(blkc_last_error(), want) != NULL, "message '%s'", blkc_last_error());
    h_ok(y[2 * 16] == -7 && y[3 * 16] == 49, "program 2 stopped, 3 stored");
    /* a tile assert: one negative element in program 1 */
    x[20] = -1;
    s = run(k, x, y, N, -1);
    h_ok(s == BLKC_ERR_RUNTIME, "tile assert: status %s", blkc_status_string(s));
    want = "test.blk:6: kernel k: assertion failed in program (1, 0, 0): negative input";
    h_ok(strstr(blkc_last_error(), want) != NULL, "message '%s'", blkc_last_error());
    /* the next launch works */
    x[20] = 20;
    s = run(k, x, y, N, -1);
    h_ok(s == BLKC_OK, "launch after a failed assert: %s", blkc_status_string(s));
    h_check("results after the failures", y, H_F32, ry, N, 0, 0);
    return h_done();
}
