/* t_scalar_params.c — scalar parameters of many dtypes (i32, i64, u8, f32,
 * f64, f16, bool) passed through blkc_arg; a scalar f32 param times an f16
 * tile promotes to f32 (not a literal); module consts and compile-time
 * params overridden by defines. */
#include "harness.h"

static const char *src =
    "const SCALE = 3;\n"
    "const OFF = 0.25;\n"
    "kernel k<BLOCK = 32, SHIFT = 1>(H: f16[N], O: f64[4, N], I: i64[2, N],\n"
    "        s: f32, d: f64, h: f16, n: i64, u: u8, flag: bool, m: i32) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = H[o +: BLOCK];\n"
    "    O[0, o +: BLOCK] = x * s;\n"
    "    O[1, o +: BLOCK] = x * d + OFF;\n"
    "    O[2, o +: BLOCK] = x * h;\n"
    "    if flag { O[3, o +: BLOCK] = x * SCALE; } else { O[3, o +: BLOCK] = -1.0; }\n"
    "    I[0, o +: BLOCK] = (arange(BLOCK) + o) as i64 * n + (u as i64);\n"
    "    I[1, o +: BLOCK] = (arange(BLOCK) << SHIFT) + m;\n"
    "}\n";

static void run(const char *const *defs, int scale, double off, int shift, int flag)
{
    enum { N = 200 };
    blkc_kernel *k = h_build(src, defs);
    uint16_t *x = h_array(H_F16, N);
    double *o = h_array(H_F64, 4 * N), *r = h_alloc(8 * 4 * N);
    int64_t *iv = h_array(H_I64, 2 * N), *ri = h_alloc(8 * 2 * N);
    h_fill(x, H_F16, N, -4, 4);
    float s = 1.0f / 3.0f;
    double d = 1.0 / 7.0;
    float hv = h_rf16(0.3f);
    int64_t n = 10000000000LL;
    H_LAUNCH(k, h_ten(h_t1(x, H_F16, N)), h_ten(h_t2(o, H_F64, 4, N)),
             h_ten(h_t2(iv, H_I64, 2, N)), h_flt(s), h_flt(d), h_flt(0.3), h_int(n),
             h_int(200), h_int(flag), h_int(-5));
    for (int i = 0; i < N; i++) {
        float xf = h_f16_to_f32(x[i]);
        r[i] = (double)(xf * s);                       /* f16 * f32 scalar -> f32 */
        r[N + i] = (double)xf * d + off;
        r[2 * N + i] = h_rf16(xf * hv);                /* f16 * f16 -> f16 */
        r[3 * N + i] = flag ? h_rf16(xf * (float)scale) : -1.0;
        ri[i] = (int64_t)i * n + 200;
        ri[N + i] = ((i % 32) << shift) - 5;
    }
    h_check("f16 tile * f32 scalar param -> f32", o, H_F64, r, N, 0, 0);
    h_check("f16 tile * f64 scalar param + const", o + N, H_F64, r + N, N, 0, 0);
    h_check("f16 tile * f16 scalar param -> f16", o + 2 * N, H_F64, r + 2 * N, N, 0, 0);
    h_check("bool param, const SCALE", o + 3 * N, H_F64, r + 3 * N, N, 0, 0);
    h_check_i("i64 and u8 params", iv, H_I64, ri, N);
    h_check_i("compile-time SHIFT, i32 param", iv + N, H_I64, ri + N, N);
}

int main(void)
{
    h_seed(33);
    run(NULL, 3, 0.25, 1, 1);
    run(H_DEFS("SCALE=5", "OFF=2.5", "SHIFT=3"), 5, 2.5, 3, 0);
    run(H_DEFS("SCALE=-2"), -2, 0.25, 1, 1);
    return h_done();
}
