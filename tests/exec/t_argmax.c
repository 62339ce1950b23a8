/* t_argmax.c — argmax/argmin give i32 and break ties toward the lowest
 * index: over whole tiles (scalar) and along each axis, with many ties
 * (values in {0, 1, 2, 3}), for f32 and i16 inputs. */
#include "harness.h"

static const char *src =
    "kernel am<RB = 8, CB = 33>(X: f32[B, RB, CB], I: i16[B, RB, CB], A: i32[B, 4],\n"
    "        A0: i32[B, CB], A1: i32[B, RB], I1: i32[B, RB]) grid(B) {\n"
    "    let b = program_id(0);\n"
    "    let x = X[b, :, :];\n"
    "    let i = I[b, :, :];\n"
    "    A[b, 0] = argmax(x);\n"
    "    A[b, 1] = argmin(x);\n"
    "    A[b, 2] = argmax(i);\n"
    "    A[b, 3] = argmin(i);\n"
    "    A0[b, :] = argmax(x, 0);\n"
    "    A1[b, :] = argmin(x, 1);\n"
    "    I1[b, :] = argmax(i, 1);\n"
    "}\n";

int main(void)
{
    enum { B = 6, RB = 8, CB = 33, E = RB * CB };
    h_seed(16);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, B * E);
    int16_t *iv = h_array(H_I16, B * E);
    int32_t *a = h_array(H_I32, B * 4), *a0 = h_array(H_I32, B * CB), *a1 = h_array(H_I32, B * RB),
            *i1 = h_array(H_I32, B * RB);
    for (int j = 0; j < B * E; j++) {
        x[j] = (float)h_randi(0, 3);
        iv[j] = (int16_t)h_randi(-2, 1);
    }
    H_LAUNCH(k, h_ten(h_t3(x, H_F32, B, RB, CB)), h_ten(h_t3(iv, H_I16, B, RB, CB)),
             h_ten(h_t2(a, H_I32, B, 4)), h_ten(h_t2(a0, H_I32, B, CB)),
             h_ten(h_t2(a1, H_I32, B, RB)), h_ten(h_t2(i1, H_I32, B, RB)));
    int64_t ra[B * 4], ra0[B * CB], ra1[B * RB], ri1[B * RB];
    for (int b = 0; b < B; b++) {
        float *xb = x + b * E;
        int16_t *ib = iv + b * E;
        int amx = 0, amn = 0, imx = 0, imn = 0;
        for (int j = 1; j < E; j++) {       /* row-major flat index */
            if (xb[j] > xb[amx]) amx = j;
            if (xb[j] < xb[amn]) amn = j;
            if (ib[j] > ib[imx]) imx = j;
            if (ib[j] < ib[imn]) imn = j;
        }
        ra[b * 4] = amx; ra[b * 4 + 1] = amn; ra[b * 4 + 2] = imx; ra[b * 4 + 3] = imn;
        for (int c = 0; c < CB; c++) {
            int best = 0;
            for (int r = 1; r < RB; r++)
                if (xb[r * CB + c] > xb[best * CB + c]) best = r;
            ra0[b * CB + c] = best;
        }
        for (int r = 0; r < RB; r++) {
            int lo = 0, hi = 0;
            for (int c = 1; c < CB; c++) {
                if (xb[r * CB + c] < xb[r * CB + lo]) lo = c;
                if (ib[r * CB + c] > ib[r * CB + hi]) hi = c;
            }
            ra1[b * RB + r] = lo;
            ri1[b * RB + r] = hi;
        }
    }
    h_check_i("argmax/argmin over the whole tile (flat index, lowest on ties)", a, H_I32, ra, B * 4);
    h_check_i("argmax(x, 0), ties -> lowest", a0, H_I32, ra0, B * CB);
    h_check_i("argmin(x, 1), ties -> lowest", a1, H_I32, ra1, B * RB);
    h_check_i("argmax(i16, 1), ties -> lowest", i1, H_I32, ri1, B * RB);
    return h_done();
}
