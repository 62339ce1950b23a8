/* t_opassign.c — compound assignment on mutable vars: += -= *= /= on f32
 * tiles, i32 scalars and tiles (int /= truncates), inside a loop. */
#include "harness.h"

static const char *src =
    "kernel k<BLOCK = 16>(X: f32[N], F: f32[N], I: i32[N], S: i32[P]) grid(cdiv(N, BLOCK)) {\n"
    "    let p = program_id(0);\n"
    "    let o = p * BLOCK;\n"
    "    var t = X[o +: BLOCK];\n"
    "    var it = arange(BLOCK) + o;\n"
    "    var s = 100;\n"
    "    for j in 0 .. 3 {\n"
    "        t += 1.0;\n"
    "        t *= 2.0;\n"
    "        t -= X[o +: BLOCK];\n"
    "        t /= 4.0;\n"
    "        it *= 3;\n"
    "        it -= j;\n"
    "        it /= 2;\n"
    "        s += j;\n"
    "        s *= 2;\n"
    "        s -= p;\n"
    "        s /= 3;\n"
    "    }\n"
    "    F[o +: BLOCK] = t;\n"
    "    I[o +: BLOCK] = it;\n"
    "    S[p] = s;\n"
    "}\n";

int main(void)
{
    enum { N = 160, BLOCK = 16, P = N / BLOCK };
    h_seed(34);
    blkc_kernel *k = h_build(src, NULL);
    float x[N], f[N];
    int32_t iv[N], s[P];
    h_fill(x, H_F32, N, -1, 1);
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(f, H_F32, N)), h_ten(h_t1(iv, H_I32, N)),
             h_ten(h_t1(s, H_I32, P)));
    double rf[N];
    int64_t ri[N], rs[P];
    for (int i = 0; i < N; i++) {
        float t = x[i];
        int32_t it = i;
        for (int j = 0; j < 3; j++) {
            t += 1.0f; t *= 2.0f; t -= x[i]; t /= 4.0f;
            it *= 3; it -= j; it /= 2;
        }
        rf[i] = t;
        ri[i] = it;
    }
    for (int p = 0; p < P; p++) {
        int32_t v = 100;
        for (int j = 0; j < 3; j++) { v += j; v *= 2; v -= p; v /= 3; }
        rs[p] = v;
    }
    h_check("f32 tile += *= -= /=", f, H_F32, rf, N, 0, 0);
    h_check_i("i32 tile *= -= /=", iv, H_I32, ri, N);
    h_check_i("i32 scalar += *= -= /=", s, H_I32, rs, P);
    return h_done();
}
