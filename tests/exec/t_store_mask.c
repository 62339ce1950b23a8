/* t_store_mask.c — store(view, value, mask = m): masked-off elements are
 * not written (a tile mask from a comparison, a scalar bool mask that
 * broadcasts), and a scalar stored to a range broadcasts. */
#include "harness.h"

static const char *src =
    "kernel sm<BLOCK = 32>(X: f32[N], Y: f32[N], Z: f32[N], W: f32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let p = program_id(0);\n"
    "    let o = p * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    store(Y[o +: BLOCK], x, mask = x > 0.0);\n"
    "    store(Z[o +: BLOCK], x * 10.0, mask = p % 2 == 0);\n"
    "    W[o +: BLOCK] = 3.25;\n"
    "}\n";

int main(void)
{
    enum { N = 500, BLOCK = 32 };
    h_seed(10);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, N), *y = h_array(H_F32, N), *z = h_array(H_F32, N),
          *w = h_array(H_F32, N);
    h_fill(x, H_F32, N, -1, 1);
    for (int i = 0; i < N; i++)
        y[i] = z[i] = -100.0f;
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N)), h_ten(h_t1(z, H_F32, N)),
             h_ten(h_t1(w, H_F32, N)));
    double *r = h_alloc(8 * N);
    for (int i = 0; i < N; i++) r[i] = x[i] > 0 ? x[i] : -100.0;
    h_check("store with a tile mask", y, H_F32, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = (i / BLOCK) % 2 == 0 ? (double)(x[i] * 10.0f) : -100.0;
    h_check("store with a scalar bool mask", z, H_F32, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = 3.25;
    h_check("scalar broadcast store", w, H_F32, r, N, 0, 0);
    return h_done();
}
