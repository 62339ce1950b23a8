/* t_layernorm.c — examples/layernorm.blk against a double reference, with
 * N < BLOCK (the tail kept out of the statistics) and N == BLOCK. */
#include "harness.h"

static void run(const char *const *defs, int R, int N, double eps)
{
    blkc_kernel *k = h_build(H_EXAMPLE("layernorm.blk"), defs);
    float *x = h_array(H_F32, (size_t)R * N), *y = h_array(H_F32, (size_t)R * N);
    float *w = h_array(H_F32, N), *b = h_array(H_F32, N);
    double *r = h_alloc(8 * (size_t)R * N);
    h_fill(x, H_F32, (size_t)R * N, -3, 5);
    h_fill(w, H_F32, N, 0.5, 1.5);
    h_fill(b, H_F32, N, -1, 1);
    H_LAUNCH(k, h_ten(h_t2(x, H_F32, R, N)), h_ten(h_t1(w, H_F32, N)), h_ten(h_t1(b, H_F32, N)),
             h_ten(h_t2(y, H_F32, R, N)), h_flt(eps));
    for (int i = 0; i < R; i++) {
        double mean = 0, var = 0;
        for (int j = 0; j < N; j++) mean += x[i * N + j];
        mean /= N;
        for (int j = 0; j < N; j++) var += (x[i * N + j] - mean) * (x[i * N + j] - mean);
        var /= N;
        for (int j = 0; j < N; j++)
            r[i * N + j] = (x[i * N + j] - mean) / sqrt(var + eps) * w[j] + b[j];
    }
    char what[96];
    snprintf(what, sizeof what, "layernorm %dx%d", R, N);
    h_check(what, y, H_F32, r, (size_t)R * N, 1e-4, 1e-4);
}

int main(void)
{
    h_seed(27);
    run(NULL, 33, 1000, 1e-5);
    run(H_DEFS("BLOCK=256"), 16, 256, 1e-3);
    return h_done();
}
