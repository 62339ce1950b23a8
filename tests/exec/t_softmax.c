/* t_softmax.c — examples/softmax.blk: rows of N < BLOCK (the -inf pad), N
 * == BLOCK, and a wide row with BLOCK raised by a define. */
#include "harness.h"

static void run(const char *const *defs, int R, int N, double scale)
{
    blkc_kernel *k = h_build(H_EXAMPLE("softmax.blk"), defs);
    float *x = h_array(H_F32, (size_t)R * N), *y = h_array(H_F32, (size_t)R * N);
    double *r = h_alloc(8 * (size_t)R * N);
    h_fill(x, H_F32, (size_t)R * N, -scale, scale);
    H_LAUNCH(k, h_ten(h_t2(x, H_F32, R, N)), h_ten(h_t2(y, H_F32, R, N)));
    for (int i = 0; i < R; i++) {
        double mx = -INFINITY, s = 0;
        for (int j = 0; j < N; j++) mx = fmax(mx, x[i * N + j]);
        for (int j = 0; j < N; j++) s += exp(x[i * N + j] - mx);
        for (int j = 0; j < N; j++) r[i * N + j] = exp(x[i * N + j] - mx) / s;
    }
    char what[96];
    snprintf(what, sizeof what, "softmax %dx%d", R, N);
    h_check(what, y, H_F32, r, (size_t)R * N, 1e-7, 1e-5);
}

int main(void)
{
    h_seed(26);
    run(NULL, 64, 1000, 5);
    run(NULL, 7, 1024, 30);
    run(H_DEFS("BLOCK=4096"), 8, 3000, 10);
    return h_done();
}
