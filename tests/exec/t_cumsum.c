/* t_cumsum.c — inclusive cumsum along axis 0 and 1 of [RB, CB] tiles (f32
 * and i32), and a 1-D cumsum over a tail-loaded tile (the tail reads 0). */
#include "harness.h"

static const char *src =
    "kernel cs<RB = 16, CB = 24>(X: f32[B, RB, CB], I: i32[B, RB, CB], Y0: f32[B, RB, CB],\n"
    "        Y1: f32[B, RB, CB], I0: i32[B, RB, CB]) grid(B) {\n"
    "    let b = program_id(0);\n"
    "    let x = X[b, :, :];\n"
    "    Y0[b, :, :] = cumsum(x, 0);\n"
    "    Y1[b, :, :] = cumsum(x, 1);\n"
    "    I0[b, :, :] = cumsum(I[b, :, :], 0);\n"
    "}\n"
    "kernel cs1<BLOCK = 128>(X: i64[N], Y: i64[M]) {\n"
    "    Y[0 +: BLOCK] = cumsum(X[0 +: BLOCK], 0);\n"
    "}\n";

int main(void)
{
    enum { B = 5, RB = 16, CB = 24, E = RB * CB };
    h_seed(17);
    blkc_module *m = h_compile(src, NULL);
    float *x = h_array(H_F32, B * E), *y0 = h_array(H_F32, B * E), *y1 = h_array(H_F32, B * E);
    int32_t *iv = h_array(H_I32, B * E), *i0 = h_array(H_I32, B * E);
    h_fill(x, H_F32, B * E, -1, 1);
    h_fill(iv, H_I32, B * E, -1000, 1000);
    H_LAUNCH(h_kernel(m, "cs"), h_ten(h_t3(x, H_F32, B, RB, CB)), h_ten(h_t3(iv, H_I32, B, RB, CB)),
             h_ten(h_t3(y0, H_F32, B, RB, CB)), h_ten(h_t3(y1, H_F32, B, RB, CB)),
             h_ten(h_t3(i0, H_I32, B, RB, CB)));
    double *r0 = h_alloc(8 * B * E), *r1 = h_alloc(8 * B * E);
    int64_t *ri = h_alloc(8 * B * E);
    for (int b = 0; b < B; b++)
        for (int r = 0; r < RB; r++)
            for (int c = 0; c < CB; c++) {
                int j = b * E + r * CB + c;
                r0[j] = x[j] + (r ? r0[j - CB] : 0.0);
                ri[j] = iv[j] + (r ? ri[j - CB] : 0);
                r1[j] = x[j] + (c ? r1[j - 1] : 0.0);
            }
    h_check("cumsum(x, 0) f32", y0, H_F32, r0, B * E, 1e-5, 1e-5);
    h_check("cumsum(x, 1) f32", y1, H_F32, r1, B * E, 1e-5, 1e-5);
    h_check_i("cumsum(i, 0) i32", i0, H_I32, ri, B * E);

    enum { N = 100, M = 128 };
    int64_t *xs = h_array(H_I64, N), *ys = h_array(H_I64, M), rs[M];
    for (int i = 0; i < N; i++)
        xs[i] = h_randi(-(1LL << 40), 1LL << 40);
    for (int i = 0; i < M; i++)
        rs[i] = (i < N ? xs[i] : 0) + (i ? rs[i - 1] : 0);
    H_LAUNCH(h_kernel(m, "cs1"), h_ten(h_t1(xs, H_I64, N)), h_ten(h_t1(ys, H_I64, M)));
    h_check_i("1-D i64 cumsum over a tail (pads add 0)", ys, H_I64, rs, M);
    return h_done();
}
