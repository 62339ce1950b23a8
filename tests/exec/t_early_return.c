/* t_early_return.c — `return;` ends one program instance: programs past a
 * limit stop after their first store; a return from inside a loop (and an
 * if nested in it) skips the rest of the kernel. */
#include "harness.h"

static const char *src =
    "kernel k<BLOCK = 32>(X: f32[N], Y: f32[N], F: i32[P], limit: i32)\n"
    "    grid(cdiv(N, BLOCK)) {\n"
    "    let p = program_id(0);\n"
    "    let o = p * BLOCK;\n"
    "    Y[o +: BLOCK] = 1.0;\n"
    "    if p >= limit { return; }\n"
    "    Y[o +: BLOCK] = X[o +: BLOCK] * 2.0;\n"
    "    for i in 0 .. 1000 {\n"
    "        if i * i >= p * 10 {\n"
    "            F[p] = i;\n"
    "            return;\n"
    "        }\n"
    "    }\n"
    "    F[p] = -1;\n"
    "}\n";

int main(void)
{
    enum { N = 1000, BLOCK = 32, P = (N + BLOCK - 1) / BLOCK, LIMIT = 20 };
    h_seed(25);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, N), *y = h_array(H_F32, N);
    int32_t f[P];
    for (int i = 0; i < P; i++) f[i] = 555;
    h_fill(x, H_F32, N, -1, 1);
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N)), h_ten(h_t1(f, H_I32, P)),
             h_int(LIMIT));
    double ry[N];
    int64_t rf[P];
    for (int i = 0; i < N; i++)
        ry[i] = i / BLOCK >= LIMIT ? 1.0 : (double)(x[i] * 2.0f);
    for (int p = 0; p < P; p++) {
        rf[p] = 555;
        if (p < LIMIT)
            for (int i = 0; i < 1000; i++)
                if (i * i >= p * 10) { rf[p] = i; break; }
    }
    h_check("early return after the first store", y, H_F32, ry, N, 0, 0);
    h_check_i("return from inside a loop", f, H_I32, rf, P);
    return h_done();
}
