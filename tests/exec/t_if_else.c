/* t_if_else.c — if / else if / else chains on scalar bool conditions built
 * with && || ! and comparisons; vars assigned in branches; nested ifs; a
 * tile updated in one branch only. */
#include "harness.h"

static const char *src =
    "kernel k(Y: i32[P, 2], T: f32[P, 4]) grid(P) {\n"
    "    let p = program_id(0);\n"
    "    var v = 0;\n"
    "    if p % 3 == 0 { v = 10; } else if p % 3 == 1 && p > 10 { v = 20; }\n"
    "    else if !(p < 5) || p == 1 { v = 30; } else { v = 40; }\n"
    "    var w = p;\n"
    "    if p > 3 { if p % 2 == 0 { w = w * 100; } else { w = -w; } }\n"
    "    Y[p, 0] = v;\n"
    "    Y[p, 1] = w;\n"
    "    var t = zeros(f32, 4);\n"
    "    if p % 2 == 1 { t = t + arange(4) as f32; }\n"
    "    T[p, :] = t;\n"
    "}\n";

int main(void)
{
    enum { P = 40 };
    blkc_kernel *k = h_build(src, NULL);
    int32_t y[P * 2];
    float t[P * 4];
    H_LAUNCH(k, h_ten(h_t2(y, H_I32, P, 2)), h_ten(h_t2(t, H_F32, P, 4)));
    int64_t ry[P * 2];
    double rt[P * 4];
    for (int p = 0; p < P; p++) {
        int v, w = p;
        if (p % 3 == 0) v = 10;
        else if (p % 3 == 1 && p > 10) v = 20;
        else if (!(p < 5) || p == 1) v = 30;
        else v = 40;
        if (p > 3) w = p % 2 == 0 ? w * 100 : -w;
        ry[p * 2] = v; ry[p * 2 + 1] = w;
        for (int j = 0; j < 4; j++) rt[p * 4 + j] = p % 2 == 1 ? j : 0;
    }
    h_check_i("if / else if / else chains", y, H_I32, ry, P * 2);
    h_check("tile var updated in one branch", t, H_F32, rt, P * 4, 0, 0);
    return h_done();
}
