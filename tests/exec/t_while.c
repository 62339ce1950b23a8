/* t_while.c — `while` loops: Collatz step counts per program (data-
 * dependent trip counts across 300 programs), and a while over a tile
 * condition reduced to a scalar. */
#include "harness.h"

static const char *src =
    "kernel collatz(Y: i32[N], Z: f32[N]) grid(N) {\n"
    "    let p = program_id(0);\n"
    "    var n = (p + 1) as i64;\n"
    "    var steps = 0;\n"
    "    while n != 1 {\n"
    "        if n % 2 == 0 { n = n / 2; } else { n = 3 * n + 1; }\n"
    "        steps += 1;\n"
    "    }\n"
    "    Y[p] = steps;\n"
    "    var t = full(f32, 1.0, 8) * ((p % 7) as f32 + 1.0);\n"
    "    var halvings = 0;\n"
    "    while max(t) > 0.01 && halvings < 1000 {\n"
    "        t = t * 0.5;\n"
    "        halvings += 1;\n"
    "    }\n"
    "    Z[p] = halvings as f32 + sum(t);\n"
    "}\n";

int main(void)
{
    enum { N = 300 };
    blkc_kernel *k = h_build(src, NULL);
    int32_t *y = h_array(H_I32, N);
    float *z = h_array(H_F32, N);
    H_LAUNCH(k, h_ten(h_t1(y, H_I32, N)), h_ten(h_t1(z, H_F32, N)));
    int64_t ry[N];
    double rz[N];
    for (int p = 0; p < N; p++) {
        int64_t n = p + 1, st = 0;
        while (n != 1) { n = n % 2 == 0 ? n / 2 : 3 * n + 1; st++; }
        ry[p] = st;
        float t = (float)(p % 7) + 1.0f;
        int h = 0;
        while (t > 0.01f && h < 1000) { t *= 0.5f; h++; }
        rz[p] = (float)h + 8 * t;
    }
    h_check_i("collatz steps with while", y, H_I32, ry, N);
    h_check("while over a tile condition", z, H_F32, rz, N, 1e-6, 1e-6);
    return h_done();
}
