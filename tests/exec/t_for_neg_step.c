/* t_for_neg_step.c — `for` with a negative step (reverse a row element by
 * element, counting down by 3), a loop whose bounds give zero iterations,
 * and a positive step not dividing the range. */
#include "harness.h"

static const char *src =
    "kernel rev(X: i32[R, N], Y: i32[R, N], S: i32[R, 4]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    for i in N - 1 .. -1 step -1 {\n"
    "        Y[r, N - 1 - i] = X[r, i];\n"
    "    }\n"
    "    var a = 0;\n"
    "    for i in 10 + r .. 0 step -3 { a += i; }\n"
    "    S[r, 0] = a;\n"
    "    var z = 0;\n"
    "    for i in 0 .. r - 100 step -1 { z += 1; }\n"
    "    for i in 5 .. 0 { z += 100; }\n"
    "    S[r, 1] = z;\n"
    "    var b = 0;\n"
    "    for i in r .. 50 step 7 { b += i; }\n"
    "    S[r, 2] = b;\n"
    "    var c = 0;\n"
    "    for i in 0 .. 4 { for j in i .. -1 step -1 { c = c * 2 + j; } }\n"
    "    S[r, 3] = c;\n"
    "}\n";

int main(void)
{
    enum { R = 12, N = 37 };
    h_seed(24);
    blkc_kernel *k = h_build(src, NULL);
    int32_t *x = h_array(H_I32, R * N), *y = h_array(H_I32, R * N), *s = h_array(H_I32, R * 4);
    h_fill(x, H_I32, R * N, -1000, 1000);
    H_LAUNCH(k, h_ten(h_t2(x, H_I32, R, N)), h_ten(h_t2(y, H_I32, R, N)),
             h_ten(h_t2(s, H_I32, R, 4)));
    int64_t ry[R * N], rs[R * 4];
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < N; i++)
            ry[r * N + i] = x[r * N + N - 1 - i];
        int64_t a = 0, b = 0, c = 0;
        for (int i = 10 + r; i > 0; i -= 3) a += i;
        for (int i = r; i < 50; i += 7) b += i;
        for (int i = 0; i < 4; i++)
            for (int j = i; j > -1; j--)
                c = (int32_t)(c * 2 + j);
        rs[r * 4] = a; rs[r * 4 + 1] = 100 - r; rs[r * 4 + 2] = b; rs[r * 4 + 3] = c;
    }
    h_check_i("reverse with step -1", y, H_I32, ry, R * N);
    h_check_i("step -3 / empty loops / step 7 / nested downward", s, H_I32, rs, R * 4);
    return h_done();
}
