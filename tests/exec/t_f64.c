/* t_f64.c — f64 tiles keep double precision: 1 + 1e-12 survives, math
 * builtins in double, and an f64 sum along an axis. */
#include "harness.h"

static const char *src =
    "kernel k<BLOCK = 64>(X: f64[N], O: f64[4, N], S: f64[P]) grid(cdiv(N, BLOCK)) {\n"
    "    let p = program_id(0);\n"
    "    let o = p * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    O[0, o +: BLOCK] = (x + 1.0) - 1.0;\n"
    "    O[1, o +: BLOCK] = exp(x * 1e6);\n"
    "    O[2, o +: BLOCK] = sqrt(x * x + 2.0);\n"
    "    O[3, o +: BLOCK] = log(x + 1.0);\n"
    "    S[p] = sum(x * 1e12);\n"
    "}\n";

int main(void)
{
    enum { N = 256, P = N / 64 };
    h_seed(38);
    blkc_kernel *k = h_build(src, NULL);
    double *x = h_array(H_F64, N), *o = h_array(H_F64, 4 * N), s[P];
    for (int i = 0; i < N; i++)
        x[i] = h_randu(1e-12, 2e-12) * (i % 2 ? 1 : 1.5);
    H_LAUNCH(k, h_ten(h_t1(x, H_F64, N)), h_ten(h_t2(o, H_F64, 4, N)), h_ten(h_t1(s, H_F64, P)));
    double *r = h_alloc(8 * 4 * N), rs[P] = {0};
    for (int i = 0; i < N; i++) {
        r[i] = (x[i] + 1.0) - 1.0;
        r[N + i] = exp(x[i] * 1e6);
        r[2 * N + i] = sqrt(x[i] * x[i] + 2.0);
        r[3 * N + i] = log(x[i] + 1.0);
        rs[i / 64] += x[i] * 1e12;
    }
    h_check("f64 (x + 1) - 1 keeps 1e-12", o, H_F64, r, N, 0, 0);
    h_check("f64 exp", o + N, H_F64, r + N, N, 0, 1e-14);
    h_check("f64 sqrt", o + 2 * N, H_F64, r + 2 * N, N, 0, 1e-15);
    h_check("f64 log", o + 3 * N, H_F64, r + 3 * N, N, 0, 1e-14);
    h_check("f64 sum", s, H_F64, rs, P, 0, 1e-13);
    return h_done();
}
