/* t_cast_float.c — float casts: f32 -> f16 and f32 -> bf16 round to nearest
 * even (ties, overflow to inf, subnormals, NaN, -0), f64 -> f32, f16/bf16 ->
 * f32, f16 -> bf16, and the implicit conversion of a store. */
#include "harness.h"

static const char *src =
    "kernel casts<BLOCK = 64>(X: f32[N], D: f64[N], H: f16[N], B: bf16[N],\n"
    "                         O16: f16[N], OB: bf16[N], O32: f32[3, N], O64: f64[N],\n"
    "                         S16: f16[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    O16[o +: BLOCK] = x as f16;\n"
    "    OB[o +: BLOCK] = x as bf16;\n"
    "    O32[0, o +: BLOCK] = D[o +: BLOCK] as f32;\n"
    "    O32[1, o +: BLOCK] = H[o +: BLOCK] as f32;\n"
    "    O32[2, o +: BLOCK] = B[o +: BLOCK] as f32;\n"
    "    O64[o +: BLOCK] = (H[o +: BLOCK] as bf16) as f64;\n"
    "    S16[o +: BLOCK] = x;\n"
    "}\n";

int main(void)
{
    enum { N = 333 };
    h_seed(5);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, N);
    double *d = h_array(H_F64, N);
    uint16_t *hh = h_array(H_F16, N), *bb = h_array(H_BF16, N);
    uint16_t *o16 = h_array(H_F16, N), *ob = h_array(H_BF16, N), *s16 = h_array(H_F16, N);
    float *o32 = h_array(H_F32, 3 * N);
    double *o64 = h_array(H_F64, N);
    static const float special[] = {
        1.0f + 0x1p-11f,  1.0f + 3 * 0x1p-11f, -1.0f - 0x1p-11f, 65504.0f, 65519.0f,
        65520.0f,         1e10f,               -1e10f,           1e-7f,    3e-8f,
        2.9e-8f,          -0.0f,               0.0f,             INFINITY, -INFINITY,
        NAN,              1.0f + 0x1p-8f,      1.0f + 3 * 0x1p-8f, 0x1p-14f, 0x1.ffcp-15f,
        3.0e38f,          -3.4e38f,            0x1.0101p0f,      0x1.00801p0f,
    };
    int ns = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < N; i++) {
        x[i] = i < ns ? special[i] : (float)h_randu(-70000, 70000) * (i % 3 ? 1e-4f : 1.0f);
        d[i] = h_randu(-1e6, 1e6) * (i % 2 ? 1.0 : 1e-30);
        hh[i] = (uint16_t)h_randi(0, 0xffff);
        if ((hh[i] & 0x7c00) == 0x7c00)
            hh[i] = 0x3c00;          /* keep NaN payloads out of the mix */
        bb[i] = (uint16_t)h_randi(0, 0xffff);
        if ((bb[i] & 0x7f80) == 0x7f80)
            bb[i] = 0x3f80;
    }
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(d, H_F64, N)),
             h_ten(h_t1(hh, H_F16, N)), h_ten(h_t1(bb, H_BF16, N)),
             h_ten(h_t1(o16, H_F16, N)), h_ten(h_t1(ob, H_BF16, N)),
             h_ten(h_t2(o32, H_F32, 3, N)), h_ten(h_t1(o64, H_F64, N)),
             h_ten(h_t1(s16, H_F16, N)));
    double *r = h_alloc(8 * N);
    for (int i = 0; i < N; i++) r[i] = h_rf16(x[i]);
    h_check("f32 as f16 (round to nearest even)", o16, H_F16, r, N, 0, 0);
    h_check("store f32 into f16 tensor", s16, H_F16, r, N, 0, 0);
    int bad = 0;                      /* also compare bit patterns (-0, ties) */
    for (int i = 0; i < N; i++)
        bad += !isnan(x[i]) && o16[i] != h_f32_to_f16(x[i]);
    h_ok(bad == 0, "f32 as f16: %d bit patterns differ", bad);
    for (int i = 0; i < N; i++) r[i] = h_rbf16(x[i]);
    h_check("f32 as bf16 (round to nearest even)", ob, H_BF16, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = (float)d[i];
    h_check("f64 as f32", o32, H_F32, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = h_f16_to_f32(hh[i]);
    h_check("f16 as f32", o32 + N, H_F32, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = h_bf16_to_f32(bb[i]);
    h_check("bf16 as f32", o32 + 2 * N, H_F32, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = h_rbf16(h_f16_to_f32(hh[i]));
    h_check("f16 as bf16 as f64", o64, H_F64, r, N, 0, 0);
    return h_done();
}
