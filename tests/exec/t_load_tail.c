/* t_load_tail.c — loads and stores with tails: a 1-D tile over N not a
 * multiple of BLOCK (nothing written past N), and a 2-D transpose through
 * [32, 32] tiles of an R x C matrix with tails in both dims. */
#include "harness.h"

static const char *src =
    "kernel scale<BLOCK = 128>(X: f32[N], Y: f32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = X[o +: BLOCK] * 2.0 + 1.0;\n"
    "}\n"
    "kernel transpose<T = 32>(X: f32[R, C], Y: f32[C, R]) grid(cdiv(R, T), cdiv(C, T)) {\n"
    "    let m = program_id(0) * T;\n"
    "    let n = program_id(1) * T;\n"
    "    Y[n +: T, m +: T] = trans(X[m +: T, n +: T]);\n"
    "}\n";

int main(void)
{
    h_seed(8);
    blkc_module *m = h_compile(src, NULL);
    enum { N = 1003, PAD = 37 };
    float *x = h_array(H_F32, N), *y = h_array(H_F32, N + PAD);
    double *r = h_alloc(8 * (N + PAD));
    h_fill(x, H_F32, N, -1, 1);
    for (int i = 0; i < N + PAD; i++) {
        y[i] = -7.0f;
        r[i] = i < N ? (double)(x[i] * 2.0f + 1.0f) : -7.0;
    }
    H_LAUNCH(h_kernel(m, "scale"), h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N)));
    h_check("1-D tail, nothing written past N", y, H_F32, r, N + PAD, 0, 0);

    enum { R = 70, C = 45 };
    float *a = h_array(H_F32, R * C), *b = h_array(H_F32, C * R + PAD);
    double *rb = h_alloc(8 * (C * R + PAD));
    h_fill(a, H_F32, R * C, -5, 5);
    for (int i = 0; i < C * R + PAD; i++)
        b[i] = 99.0f, rb[i] = 99.0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            rb[j * R + i] = a[i * C + j];
    H_LAUNCH(h_kernel(m, "transpose"), h_ten(h_t2(a, H_F32, R, C)),
             h_ten(h_t2(b, H_F32, C, R)));
    h_check("2-D transpose with tails in both dims", b, H_F32, rb, C * R + PAD, 0, 0);
    return h_done();
}
