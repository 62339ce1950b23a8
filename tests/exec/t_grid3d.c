/* t_grid3d.c — a 3-D grid: every program writes its program_id and
 * num_programs on each axis; then the grid is overridden at launch. The
 * same with a kernel whose loads move with program_id(0) alone, which the
 * CPU backend runs with axis 1 fastest (backends/cpu/lower.c
 * grid_fast_axis): every program still runs once with its own ids. */
#include "harness.h"

static const char *src =
    "kernel g(Y: i32[Z, Yd, X, 6]) grid(X, Yd, Z) {\n"
    "    let a = program_id(0);\n"
    "    let b = program_id(1);\n"
    "    let c = program_id(2);\n"
    "    Y[c, b, a, 0] = a;\n"
    "    Y[c, b, a, 1] = b;\n"
    "    Y[c, b, a, 2] = c;\n"
    "    Y[c, b, a, 3] = num_programs(0);\n"
    "    Y[c, b, a, 4] = num_programs(1);\n"
    "    Y[c, b, a, 5] = num_programs(2);\n"
    "}\n";

static const char *src_swap =
    "kernel h(A: f32[X, 64], Y: i32[Z, Yd, X, 4]) grid(X, Yd, Z) {\n"
    "    let a = program_id(0);\n"
    "    let b = program_id(1);\n"
    "    let c = program_id(2);\n"
    "    let s = sum(A[a, 0 +: 64]);\n"
    "    Y[c, b, a, 0] = a;\n"
    "    Y[c, b, a, 1] = b;\n"
    "    Y[c, b, a, 2] = c;\n"
    "    Y[c, b, a, 3] = s as i32;\n"
    "}\n";

static void check_swap(void)
{
    enum { X = 7, YD = 5, Z = 3, E = X * YD * Z * 4 };
    blkc_kernel *k = h_build(src_swap, NULL);
    float *a = h_array(H_F32, X * 64);
    for (int i = 0; i < X * 64; i++)
        a[i] = (float)(i / 64 + 1); /* row a sums to 64 * (a + 1) */
    int32_t *y = h_array(H_I32, E);
    int64_t r[E];
    memset(y, 0xff, sizeof(int32_t) * E);
    DLTensor *t = h_tensor(y, H_I32, 4, (int64_t[]){Z, YD, X, 4}, NULL);
    H_LAUNCH(k, h_ten(h_t2(a, H_F32, X, 64)), h_ten(t));
    for (int c = 0; c < Z; c++)
        for (int b = 0; b < YD; b++)
            for (int i = 0; i < X; i++) {
                int64_t *e = r + ((c * YD + b) * X + i) * 4;
                e[0] = i; e[1] = b; e[2] = c; e[3] = 64 * (i + 1);
            }
    h_check_i("grid(X, Yd, Z), loads along axis 0: every program once", y, H_I32, r, E);
}

int main(void)
{
    check_swap();
    enum { X = 5, YD = 3, Z = 4, E = X * YD * Z * 6 };
    blkc_kernel *k = h_build(src, NULL);
    int32_t *y = h_array(H_I32, E);
    int64_t r[E];
    DLTensor *t = h_tensor(y, H_I32, 4, (int64_t[]){Z, YD, X, 6}, NULL);
    H_LAUNCH(k, h_ten(t));
    for (int c = 0; c < Z; c++)
        for (int b = 0; b < YD; b++)
            for (int a = 0; a < X; a++) {
                int64_t *e = r + ((c * YD + b) * X + a) * 6;
                e[0] = a; e[1] = b; e[2] = c; e[3] = X; e[4] = YD; e[5] = Z;
            }
    h_check_i("grid(X, Yd, Z): program_id and num_programs", y, H_I32, r, E);
    memset(y, 0xff, sizeof(int32_t) * E);
    blkc_arg args[1] = {h_ten(t)};
    h_launch_grid(k, args, 1, (int64_t[]){2, 1, 3});
    for (int c = 0; c < Z; c++)
        for (int b = 0; b < YD; b++)
            for (int a = 0; a < X; a++) {
                int64_t *e = r + ((c * YD + b) * X + a) * 6;
                if (a < 2 && b < 1 && c < 3) {
                    e[0] = a; e[1] = b; e[2] = c; e[3] = 2; e[4] = 1; e[5] = 3;
                } else {
                    for (int j = 0; j < 6; j++) e[j] = -1;
                }
            }
    h_check_i("grid overridden at launch to (2, 1, 3)", y, H_I32, r, E);
    return h_done();
}
