/* t_where_bcast.c — numpy broadcasting: x[:, None] + y[None, :] (an outer
 * sum), broadcast(v, R, C), where() with a tile condition and scalar /
 * tile branches, and a relu via maximum(x, 0.0). */
#include "harness.h"

static const char *src =
    "kernel b<R = 8, C = 16>(X: f32[R], Y: f32[C], O: f32[4, R, C]) {\n"
    "    let x = X[0 +: R];\n"
    "    let y = Y[0 +: C];\n"
    "    let outer = x[:, None] + y[None, :];\n"
    "    O[0, :, :] = outer;\n"
    "    O[1, :, :] = broadcast(y[None, :], R, C) * 2.0;\n"
    "    O[2, :, :] = where(outer > 0.0, outer, -1.0);\n"
    "    O[3, :, :] = maximum(x[:, None] * y, 0.0);\n"
    "}\n";

int main(void)
{
    enum { R = 8, C = 16 };
    h_seed(31);
    blkc_kernel *k = h_build(src, NULL);
    float x[R], y[C], o[4 * R * C];
    h_fill(x, H_F32, R, -1, 1);
    h_fill(y, H_F32, C, -1, 1);
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, R)), h_ten(h_t1(y, H_F32, C)),
             h_ten(h_t3(o, H_F32, 4, R, C)));
    double r[4 * R * C];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float s = x[i] + y[j];
            r[i * C + j] = s;
            r[R * C + i * C + j] = (double)(y[j] * 2.0f);
            r[2 * R * C + i * C + j] = s > 0 ? s : -1.0;
            r[3 * R * C + i * C + j] = fmax((double)(x[i] * y[j]), 0.0);
        }
    h_check("x[:, None] + y[None, :]", o, H_F32, r, R * C, 0, 0);
    h_check("broadcast(y[None, :], R, C)", o + R * C, H_F32, r + R * C, R * C, 0, 0);
    h_check("where(outer > 0, outer, -1)", o + 2 * R * C, H_F32, r + 2 * R * C, R * C, 0, 0);
    h_check("maximum(x[:, None] * y, 0) (implicit broadcast)", o + 3 * R * C, H_F32,
            r + 3 * R * C, R * C, 0, 0);
    return h_done();
}
