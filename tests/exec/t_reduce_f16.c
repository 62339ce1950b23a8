/* t_reduce_f16.c — sums of f16/bf16 accumulate in f32: 3000 ones sum to
 * 3000 (an f16 accumulator sticks at 2048); random f16/bf16 rows summed
 * along an axis match an f32-accumulated reference rounded once. */
#include "harness.h"

static const char *src =
    "kernel ones<BLOCK = 4096>(X: f16[N], S: f32[2]) {\n"
    "    let x = X[0 +: BLOCK];\n"
    "    S[0] = sum(x);\n"
    "    S[1] = sum(x as f32);\n"
    "}\n"
    "kernel rows<C = 512>(X: f16[R, C], Y: bf16[R, C], SX: f32[R], SY: f32[R]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    SX[r] = sum(X[r, :]);\n"
    "    SY[r +: 1] = sum(Y[r +: 1, :], 1);\n"
    "}\n";

int main(void)
{
    h_seed(15);
    blkc_module *m = h_compile(src, NULL);
    enum { N = 3000 };
    uint16_t *x = h_array(H_F16, N);
    float s[2] = {0, 0};
    for (int i = 0; i < N; i++)
        x[i] = h_f32_to_f16(1.0f);
    H_LAUNCH(h_kernel(m, "ones"), h_ten(h_t1(x, H_F16, N)), h_ten(h_t1(s, H_F32, 2)));
    double r1[2] = {3000, 3000};
    h_check("sum of 3000 f16 ones accumulates in f32", s, H_F32, r1, 2, 0, 0);

    enum { R = 20, C = 512 };
    uint16_t *a = h_array(H_F16, R * C), *b = h_array(H_BF16, R * C);
    float *sx = h_array(H_F32, R), *sy = h_array(H_F32, R);
    h_fill(a, H_F16, R * C, 0, 2);
    h_fill(b, H_BF16, R * C, 0, 2);
    H_LAUNCH(h_kernel(m, "rows"), h_ten(h_t2(a, H_F16, R, C)), h_ten(h_t2(b, H_BF16, R, C)),
             h_ten(h_t1(sx, H_F32, R)), h_ten(h_t1(sy, H_F32, R)));
    double rx[R], ry[R];
    for (int r = 0; r < R; r++) {
        double ta = 0, tb = 0;
        for (int c = 0; c < C; c++) {
            ta += h_f16_to_f32(a[r * C + c]);
            tb += h_bf16_to_f32(b[r * C + c]);
        }
        rx[r] = h_rf16((float)ta);   /* the sum's dtype is f16: one rounding */
        ry[r] = h_rbf16((float)tb);
    }
    /* one ulp of slack for the f32 summation order */
    h_check("sum of f16 rows (f32 accumulation)", sx, H_F32, rx, R, 0, 1.0 / 1024);
    h_check("sum of bf16 rows along an axis", sy, H_F32, ry, R, 0, 1.0 / 128);
    return h_done();
}
