/* t_grid3d.c — a 3-D grid: every program writes its program_id and
 * num_programs on each axis; then the grid is overridden at launch. */
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

int main(void)
{
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
