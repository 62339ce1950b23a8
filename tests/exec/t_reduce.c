/* t_reduce.c — sum/max/min over a whole tile (scalar result) and along
 * each axis of a [RB, CB] tile, for f32 and i32; one program per slice of
 * a [B, RB, CB] tensor (`:` over compile-time dims). */
#include "harness.h"

static const char *src =
    "kernel red<RB = 12, CB = 40>(X: f32[B, RB, CB], I: i32[B, RB, CB],\n"
    "        S0: f32[B, CB], S1: f32[B, RB], SA: f32[B, 3], M0: f32[B, CB], M1: f32[B, RB],\n"
    "        IS: i32[B, 3], IM: i32[B, RB]) grid(B) {\n"
    "    let b = program_id(0);\n"
    "    let x = X[b, :, :];\n"
    "    let i = I[b, :, :];\n"
    "    S0[b, :] = sum(x, 0);\n"
    "    S1[b, :] = sum(x, 1);\n"
    "    SA[b, 0] = sum(x);\n"
    "    SA[b, 1] = max(x);\n"
    "    SA[b, 2] = min(x);\n"
    "    M0[b, :] = max(x, 0);\n"
    "    M1[b, :] = min(x, 1);\n"
    "    IS[b, 0] = sum(i);\n"
    "    IS[b, 1] = max(i);\n"
    "    IS[b, 2] = min(i);\n"
    "    IM[b, :] = sum(i, 1) - max(i, 1);\n"
    "}\n";

int main(void)
{
    enum { B = 9, RB = 12, CB = 40 };
    h_seed(14);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, B * RB * CB);
    int32_t *iv = h_array(H_I32, B * RB * CB);
    float *s0 = h_array(H_F32, B * CB), *s1 = h_array(H_F32, B * RB), *sa = h_array(H_F32, B * 3);
    float *m0 = h_array(H_F32, B * CB), *m1 = h_array(H_F32, B * RB);
    int32_t *is = h_array(H_I32, B * 3), *im = h_array(H_I32, B * RB);
    h_fill(x, H_F32, B * RB * CB, -10, 10);
    h_fill(iv, H_I32, B * RB * CB, -100000, 100000);
    H_LAUNCH(k, h_ten(h_t3(x, H_F32, B, RB, CB)), h_ten(h_t3(iv, H_I32, B, RB, CB)),
             h_ten(h_t2(s0, H_F32, B, CB)), h_ten(h_t2(s1, H_F32, B, RB)),
             h_ten(h_t2(sa, H_F32, B, 3)), h_ten(h_t2(m0, H_F32, B, CB)),
             h_ten(h_t2(m1, H_F32, B, RB)), h_ten(h_t2(is, H_I32, B, 3)),
             h_ten(h_t2(im, H_I32, B, RB)));
    double *rs0 = h_alloc(8 * B * CB), *rs1 = h_alloc(8 * B * RB), *rsa = h_alloc(8 * B * 3);
    double *rm0 = h_alloc(8 * B * CB), *rm1 = h_alloc(8 * B * RB);
    int64_t *ris = h_alloc(8 * B * 3), *rim = h_alloc(8 * B * RB);
    for (int b = 0; b < B; b++) {
        float *xb = x + b * RB * CB;
        int32_t *ib = iv + b * RB * CB;
        double tot = 0, mx = -INFINITY, mn = INFINITY;
        int64_t itot = 0, imx = INT64_MIN, imn = INT64_MAX;
        for (int c = 0; c < CB; c++) {
            double s = 0, m = -INFINITY;
            for (int r = 0; r < RB; r++) {
                s += xb[r * CB + c];
                m = fmax(m, xb[r * CB + c]);
            }
            rs0[b * CB + c] = s;
            rm0[b * CB + c] = m;
        }
        for (int r = 0; r < RB; r++) {
            double s = 0, m = INFINITY;
            int64_t is_ = 0, imr = INT64_MIN;
            for (int c = 0; c < CB; c++) {
                double v = xb[r * CB + c];
                s += v; m = fmin(m, v); tot += v; mx = fmax(mx, v); mn = fmin(mn, v);
                int64_t w = ib[r * CB + c];
                is_ += w; itot += w;
                if (w > imr) imr = w;
                if (w > imx) imx = w;
                if (w < imn) imn = w;
            }
            rs1[b * RB + r] = s;
            rm1[b * RB + r] = m;
            rim[b * RB + r] = is_ - imr;
        }
        rsa[b * 3] = tot; rsa[b * 3 + 1] = mx; rsa[b * 3 + 2] = mn;
        ris[b * 3] = itot; ris[b * 3 + 1] = imx; ris[b * 3 + 2] = imn;
    }
    h_check("sum(x, 0)", s0, H_F32, rs0, B * CB, 1e-4, 1e-5);
    h_check("sum(x, 1)", s1, H_F32, rs1, B * RB, 1e-4, 1e-5);
    h_check("sum/max/min(x) to scalars", sa, H_F32, rsa, B * 3, 1e-3, 1e-5);
    h_check("max(x, 0)", m0, H_F32, rm0, B * CB, 0, 0);
    h_check("min(x, 1)", m1, H_F32, rm1, B * RB, 0, 0);
    h_check_i("i32 sum/max/min to scalars", is, H_I32, ris, B * 3);
    h_check_i("i32 sum(i, 1) - max(i, 1)", im, H_I32, rim, B * RB);
    return h_done();
}
