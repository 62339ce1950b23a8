/* t_creation.c — arange(n), arange(start, end), zeros and full in several
 * dtypes (i64, f16, bool, u8), cdiv, num_programs. */
#include "harness.h"

static const char *src =
    "kernel c(I: i32[G, 2, 16], L: i64[G, 8], H: f16[G, 8], B: bool[G, 8], U: u8[G, 8],\n"
    "         Q: i32[G, 3]) grid(G) {\n"
    "    let p = program_id(0);\n"
    "    I[p, 0, :] = arange(16) * p;\n"
    "    I[p, 1, :] = arange(3, 19) + p;\n"
    "    L[p, :] = full(i64, 5000000000, 8) + zeros(i64, 8) + p;\n"
    "    H[p, :] = full(f16, 0.1, 8);\n"
    "    B[p, :] = full(bool, true, 8) && arange(8) < p;\n"
    "    U[p, :] = full(u8, 250, 8) + (p as u8);\n"
    "    Q[p, 0] = cdiv(p, 3);\n"
    "    Q[p, 1] = num_programs(0);\n"
    "    Q[p, 2] = cdiv(100, p + 1);\n"
    "}\n";

int main(void)
{
    enum { G = 11 };
    blkc_kernel *k = h_build(src, NULL);
    int32_t i[G * 32], q[G * 3];
    int64_t l[G * 8];
    uint16_t hh[G * 8];
    uint8_t b[G * 8], u[G * 8];
    H_LAUNCH(k, h_ten(h_t3(i, H_I32, G, 2, 16)), h_ten(h_t2(l, H_I64, G, 8)),
             h_ten(h_t2(hh, H_F16, G, 8)), h_ten(h_t2(b, H_BOOL, G, 8)),
             h_ten(h_t2(u, H_U8, G, 8)), h_ten(h_t2(q, H_I32, G, 3)));
    int64_t ri[G * 32], rl[G * 8], rb[G * 8], ru[G * 8], rq[G * 3];
    double rh[G * 8];
    for (int p = 0; p < G; p++) {
        for (int j = 0; j < 16; j++) {
            ri[p * 32 + j] = j * p;
            ri[p * 32 + 16 + j] = 3 + p + j;
        }
        for (int j = 0; j < 8; j++) {
            rl[p * 8 + j] = 5000000000LL + p;
            rh[p * 8 + j] = h_rf16(0.1f);
            rb[p * 8 + j] = j < p;
            ru[p * 8 + j] = (uint8_t)(250 + p);
        }
        rq[p * 3] = (p + 2) / 3;
        rq[p * 3 + 1] = G;
        rq[p * 3 + 2] = (100 + p) / (p + 1);
    }
    h_check_i("arange(16) * p, arange(p, p + 16)", i, H_I32, ri, G * 32);
    h_check_i("full(i64, 5000000000) + zeros + p", l, H_I64, rl, G * 8);
    h_check("full(f16, 0.1)", hh, H_F16, rh, G * 8, 0, 0);
    h_check_i("full(bool, true) && arange(8) < p", b, H_BOOL, rb, G * 8);
    h_check_i("full(u8, 250) + p wraps in u8", u, H_U8, ru, G * 8);
    h_check_i("cdiv, num_programs", q, H_I32, rq, G * 3);
    return h_done();
}
