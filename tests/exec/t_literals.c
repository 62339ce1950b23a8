/* t_literals.c — a literal takes the other operand's type when it is of the
 * same kind or lower (i8 + 1 stays i8 and wraps, f16 * 3.0 stays f16,
 * bf16 * 3.0 stays bf16, f16 + 1 is f16); an int literal that does not fit
 * i32 is i64; a float literal with an int tile gives f32. */
#include "harness.h"

static const char *src =
    "kernel lit<BLOCK = 64>(A8: i8[N], U8: u8[N], H: f16[N], BF: bf16[N], I: i32[N],\n"
    "                       OI: i64[4, N], OF: f64[4, N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let a = A8[o +: BLOCK];\n"
    "    let u = U8[o +: BLOCK];\n"
    "    let h = H[o +: BLOCK];\n"
    "    let bf = BF[o +: BLOCK];\n"
    "    let i = I[o +: BLOCK];\n"
    "    OI[0, o +: BLOCK] = a + 1;\n"
    "    OI[1, o +: BLOCK] = u * 2;\n"
    "    OI[2, o +: BLOCK] = i + 3000000000;\n"
    "    OI[3, o +: BLOCK] = a * 3;\n"
    "    OF[0, o +: BLOCK] = h * 3.0;\n"
    "    OF[1, o +: BLOCK] = h + 1;\n"
    "    OF[2, o +: BLOCK] = bf * 3.0;\n"
    "    OF[3, o +: BLOCK] = i + 0.5;\n"
    "}\n";

int main(void)
{
    enum { N = 500 };
    h_seed(3);
    blkc_kernel *k = h_build(src, NULL);
    int8_t *a = h_array(H_I8, N);
    uint8_t *u = h_array(H_U8, N);
    uint16_t *h = h_array(H_F16, N), *bf = h_array(H_BF16, N);
    int32_t *iv = h_array(H_I32, N);
    int64_t *oi = h_alloc(8 * 4 * N), *ri = h_alloc(8 * 4 * N);
    double *of = h_alloc(8 * 4 * N), *rf = h_alloc(8 * 4 * N);
    for (int i = 0; i < N; i++) {
        a[i] = (int8_t)h_randi(-128, 127);
        u[i] = (uint8_t)h_randi(0, 255);
        h[i] = h_f32_to_f16((float)h_randu(-2000, 2000));
        bf[i] = h_f32_to_bf16((float)h_randu(-100, 100));
        iv[i] = (int32_t)h_randi(1 << 24, 1 << 26);
        ri[0 * N + i] = (int8_t)(a[i] + 1);
        ri[1 * N + i] = (uint8_t)(u[i] * 2);
        ri[2 * N + i] = (int64_t)iv[i] + 3000000000LL;
        ri[3 * N + i] = (int8_t)(a[i] * 3);
        float hf = h_f16_to_f32(h[i]), bff = h_bf16_to_f32(bf[i]);
        rf[0 * N + i] = h_rf16(hf * 3.0f);
        rf[1 * N + i] = h_rf16(hf + 1.0f);
        rf[2 * N + i] = h_rbf16(bff * 3.0f);
        rf[3 * N + i] = (float)((float)iv[i] + 0.5f);
    }
    a[0] = 127; ri[0] = -128; ri[3 * N] = (int8_t)(127 * 3);
    H_LAUNCH(k, h_ten(h_t1(a, H_I8, N)), h_ten(h_t1(u, H_U8, N)), h_ten(h_t1(h, H_F16, N)),
             h_ten(h_t1(bf, H_BF16, N)), h_ten(h_t1(iv, H_I32, N)),
             h_ten(h_t2(oi, H_I64, 4, N)), h_ten(h_t2(of, H_F64, 4, N)));
    h_check_i("i8 + 1 stays i8 (wraps)", oi, H_I64, ri, N);
    h_check_i("u8 * 2 stays u8 (wraps)", oi + N, H_I64, ri + N, N);
    h_check_i("i32 + 3000000000 is i64", oi + 2 * N, H_I64, ri + 2 * N, N);
    h_check_i("i8 * 3 stays i8", oi + 3 * N, H_I64, ri + 3 * N, N);
    h_check("f16 * 3.0 stays f16", of, H_F64, rf, N, 0, 0);
    h_check("f16 + 1 stays f16", of + N, H_F64, rf + N, N, 0, 0);
    h_check("bf16 * 3.0 stays bf16", of + 2 * N, H_F64, rf + 2 * N, N, 0, 0);
    h_check("i32 + 0.5 is f32", of + 3 * N, H_F64, rf + 3 * N, N, 0, 0);
    return h_done();
}
