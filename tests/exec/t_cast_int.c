/* t_cast_int.c — float -> int truncates toward zero, float -> bool is != 0
 * (-0.0 is false, NaN true), int -> bool, bool -> int, int -> float with
 * rounding, int narrowing to unsigned wraps, f64 -> i64. */
#include "harness.h"

static const char *src =
    "kernel c<BLOCK = 64>(X: f32[N], I: i32[N], D: f64[N], OI: i32[2, N], OU: u8[N],\n"
    "                     OB: bool[2, N], OF: f32[N], OL: i64[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    let i = I[o +: BLOCK];\n"
    "    OI[0, o +: BLOCK] = x as i32;\n"
    "    OI[1, o +: BLOCK] = (x > 0.0) as i32 + (i as bool) as i32 * 2;\n"
    "    OU[o +: BLOCK] = i as u8;\n"
    "    OB[0, o +: BLOCK] = x as bool;\n"
    "    OB[1, o +: BLOCK] = i as bool;\n"
    "    OF[o +: BLOCK] = i as f32;\n"
    "    OL[o +: BLOCK] = D[o +: BLOCK] as i64;\n"
    "}\n";

int main(void)
{
    enum { N = 400 };
    h_seed(6);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, N);
    int32_t *iv = h_array(H_I32, N), *oi = h_array(H_I32, 2 * N);
    double *d = h_array(H_F64, N);
    uint8_t *ou = h_array(H_U8, N), *ob = h_array(H_BOOL, 2 * N);
    float *of = h_array(H_F32, N);
    int64_t *ol = h_array(H_I64, N);
    static const float sp[] = {0.0f, -0.0f, 0.3f, -0.3f, 1.99f, -1.99f, 2.5f, -2.5f, NAN, 1e-30f};
    int64_t *r = h_alloc(8 * 2 * N);
    for (int i = 0; i < N; i++) {
        x[i] = i < 10 ? sp[i] : (float)h_randu(-1000, 1000);
        iv[i] = i % 5 == 0 ? 0 : (int32_t)h_randi(-(1LL << 30), 1LL << 30);
        d[i] = h_randu(-1e15, 1e15);
    }
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(iv, H_I32, N)), h_ten(h_t1(d, H_F64, N)),
             h_ten(h_t2(oi, H_I32, 2, N)), h_ten(h_t1(ou, H_U8, N)),
             h_ten(h_t2(ob, H_BOOL, 2, N)), h_ten(h_t1(of, H_F32, N)),
             h_ten(h_t1(ol, H_I64, N)));
    /* NaN -> int is unspecified: skip element 8 there */
    for (int i = 0; i < N; i++) r[i] = i == 8 ? oi[i] : (int32_t)x[i];
    h_check_i("f32 as i32 truncates toward zero", oi, H_I32, r, N);
    for (int i = 0; i < N; i++) r[i] = (x[i] > 0.0f) + (iv[i] != 0) * 2;
    h_check_i("bool as i32", oi + N, H_I32, r, N);
    for (int i = 0; i < N; i++) r[i] = (uint8_t)(uint32_t)iv[i];
    h_check_i("i32 as u8 wraps", ou, H_U8, r, N);
    for (int i = 0; i < N; i++) r[i] = x[i] != 0.0f;
    h_check_i("f32 as bool is != 0 (NaN true, -0 false)", ob, H_BOOL, r, N);
    int bad = 0;
    for (int i = 0; i < 2 * N; i++) bad += ob[i] > 1;
    h_ok(bad == 0, "bool results are 0/1 bytes (%d are not)", bad);
    for (int i = 0; i < N; i++) r[i] = iv[i] != 0;
    h_check_i("i32 as bool", ob + N, H_BOOL, r, N);
    double *rf = h_alloc(8 * N);
    for (int i = 0; i < N; i++) rf[i] = (float)iv[i];
    h_check("i32 as f32 rounds", of, H_F32, rf, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = (int64_t)d[i];
    h_check_i("f64 as i64", ol, H_I64, r, N);
    return h_done();
}
