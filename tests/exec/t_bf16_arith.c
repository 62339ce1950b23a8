/* t_bf16_arith.c — bf16 and f16 tiles computed in f32 and rounded to the
 * dtype after each op: a*b + c, exp, sqrt and a mixed chain; results stored
 * as bf16/f16. */
#include "harness.h"

static const char *src =
    "kernel k<BLOCK = 128>(A: bf16[N], B: bf16[N], H: f16[N], OB: bf16[3, N], OH: f16[2, N])\n"
    "    grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let a = A[o +: BLOCK];\n"
    "    let b = B[o +: BLOCK];\n"
    "    let h = H[o +: BLOCK];\n"
    "    OB[0, o +: BLOCK] = a * b + a;\n"
    "    OB[1, o +: BLOCK] = exp(a);\n"
    "    OB[2, o +: BLOCK] = sqrt(abs(b));\n"
    "    OH[0, o +: BLOCK] = h * h - h;\n"
    "    OH[1, o +: BLOCK] = tanh(h);\n"
    "}\n";

int main(void)
{
    enum { N = 1000 };
    h_seed(7);
    blkc_kernel *k = h_build(src, NULL);
    uint16_t *a = h_array(H_BF16, N), *b = h_array(H_BF16, N), *hh = h_array(H_F16, N);
    uint16_t *ob = h_array(H_BF16, 3 * N), *oh = h_array(H_F16, 2 * N);
    h_fill(a, H_BF16, N, -3, 3);
    h_fill(b, H_BF16, N, -3, 3);
    h_fill(hh, H_F16, N, -3, 3);
    H_LAUNCH(k, h_ten(h_t1(a, H_BF16, N)), h_ten(h_t1(b, H_BF16, N)),
             h_ten(h_t1(hh, H_F16, N)), h_ten(h_t2(ob, H_BF16, 3, N)),
             h_ten(h_t2(oh, H_F16, 2, N)));
    double *r = h_alloc(8 * N);
    for (int i = 0; i < N; i++) {
        float x = h_bf16_to_f32(a[i]), y = h_bf16_to_f32(b[i]);
        r[i] = h_rbf16(h_rbf16(x * y) + x);
    }
    h_check("bf16 a*b+a rounded after each op", ob, H_BF16, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = h_rbf16(expf(h_bf16_to_f32(a[i])));
    h_check("bf16 exp", ob + N, H_BF16, r, N, 0, 1.0 / 128);
    for (int i = 0; i < N; i++) r[i] = h_rbf16(sqrtf(h_rbf16(fabsf(h_bf16_to_f32(b[i])))));
    h_check("bf16 sqrt(abs)", ob + 2 * N, H_BF16, r, N, 0, 0);
    for (int i = 0; i < N; i++) {
        float x = h_f16_to_f32(hh[i]);
        r[i] = h_rf16(h_rf16(x * x) - x);
    }
    h_check("f16 h*h-h rounded after each op", oh, H_F16, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = h_rf16(tanhf(h_f16_to_f32(hh[i])));
    h_check("f16 tanh", oh + N, H_F16, r, N, 1e-3, 1.0 / 1024);
    return h_done();
}
