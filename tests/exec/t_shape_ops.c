/* t_shape_ops.c — reshape (row-major), trans, permute of a [4, 6, 8] tile,
 * and a reshape round trip feeding a reduction. */
#include "harness.h"

static const char *src =
    "kernel s(X: f32[4, 6, 8], P: f32[8, 4, 6], RS: f32[24, 8], T: f32[8, 6], S: f32[6]) {\n"
    "    let x = X[:, :, :];\n"
    "    P[:, :, :] = permute(x, 2, 0, 1);\n"
    "    RS[:, :] = reshape(x, 24, 8);\n"
    "    T[:, :] = trans(X[1, :, :]);\n"
    "    S[:] = sum(reshape(permute(x, 1, 0, 2), 6, 32), 1);\n"
    "}\n";

int main(void)
{
    h_seed(32);
    blkc_kernel *k = h_build(src, NULL);
    float x[4 * 6 * 8], p[8 * 4 * 6], rs[24 * 8], t[8 * 6], s[6];
    h_fill(x, H_F32, 192, -1, 1);
    H_LAUNCH(k, h_ten(h_t3(x, H_F32, 4, 6, 8)), h_ten(h_t3(p, H_F32, 8, 4, 6)),
             h_ten(h_t2(rs, H_F32, 24, 8)), h_ten(h_t2(t, H_F32, 8, 6)),
             h_ten(h_t1(s, H_F32, 6)));
    double rp[192], rr[192], rt[48], rsum[6] = {0};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 6; b++)
            for (int c = 0; c < 8; c++) {
                double v = x[(a * 6 + b) * 8 + c];
                rp[(c * 4 + a) * 6 + b] = v;
                rr[(a * 6 + b) * 8 + c] = v;
                if (a == 1) rt[c * 6 + b] = v;
                rsum[b] += v;
            }
    h_check("permute(x, 2, 0, 1)", p, H_F32, rp, 192, 0, 0);
    h_check("reshape(x, 24, 8)", rs, H_F32, rr, 192, 0, 0);
    h_check("trans(X[1, :, :])", t, H_F32, rt, 48, 0, 0);
    h_check("sum(reshape(permute(...)), 1)", s, H_F32, rsum, 6, 1e-5, 1e-5);
    return h_done();
}
