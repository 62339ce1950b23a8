/* t_gather.c — gathers through index tiles: X[idx] with out-of-bounds
 * indices (read 0), an embedding lookup E[rows, 0 +: D] ([BLOCK, D]), and
 * the outer product X2[ri, ci] (numpy.ix_ semantics). */
#include "harness.h"

static const char *src =
    "kernel g1<BLOCK = 64>(X: f32[M], I: i32[N], Y: f32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let idx = I[o +: BLOCK];\n"
    "    Y[o +: BLOCK] = X[idx];\n"
    "}\n"
    "kernel embed<BLOCK = 16, D = 24>(E: f32[V, D], I: i64[N], Y: f32[N, D]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let rows = I[o +: BLOCK];\n"
    "    Y[o +: BLOCK, 0 +: D] = E[rows, 0 +: D];\n"
    "}\n"
    "kernel ix(X: f32[R, C], RI: i32[4], CI: i32[8], Y: f32[4, 8]) {\n"
    "    Y[0 +: 4, 0 +: 8] = X[RI[0 +: 4], CI[0 +: 8]];\n"
    "}\n";

int main(void)
{
    h_seed(12);
    blkc_module *m = h_compile(src, NULL);
    enum { M = 97, N = 500 };
    float *x = h_array(H_F32, M), *y = h_array(H_F32, N);
    int32_t *idx = h_array(H_I32, N);
    h_fill(x, H_F32, M, -1, 1);
    double *r = h_alloc(8 * N * 24);
    for (int i = 0; i < N; i++) {
        idx[i] = (int32_t)h_randi(-5, M + 5);
        r[i] = idx[i] >= 0 && idx[i] < M ? x[idx[i]] : 0.0;
    }
    H_LAUNCH(h_kernel(m, "g1"), h_ten(h_t1(x, H_F32, M)), h_ten(h_t1(idx, H_I32, N)),
             h_ten(h_t1(y, H_F32, N)));
    h_check("gather X[idx], out-of-bounds indices read 0", y, H_F32, r, N, 0, 0);

    enum { V = 50, D = 24, NE = 100 };
    float *e = h_array(H_F32, V * D), *ye = h_array(H_F32, NE * D);
    int64_t *ie = h_array(H_I64, NE);
    h_fill(e, H_F32, V * D, -1, 1);
    for (int i = 0; i < NE; i++) {
        ie[i] = h_randi(0, V - 1);
        for (int j = 0; j < D; j++)
            r[i * D + j] = e[ie[i] * D + j];
    }
    H_LAUNCH(h_kernel(m, "embed"), h_ten(h_t2(e, H_F32, V, D)), h_ten(h_t1(ie, H_I64, NE)),
             h_ten(h_t2(ye, H_F32, NE, D)));
    h_check("embedding lookup E[rows, 0 +: D] with i64 indices", ye, H_F32, r, NE * D, 0, 0);

    enum { R = 10, C = 12 };
    float *x2 = h_array(H_F32, R * C), *y2 = h_array(H_F32, 32);
    int32_t ri[4] = {9, 0, 3, 3}, ci[8] = {11, 0, 1, 5, 5, 7, 2, 10};
    h_fill(x2, H_F32, R * C, -1, 1);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            r[i * 8 + j] = x2[ri[i] * C + ci[j]];
    H_LAUNCH(h_kernel(m, "ix"), h_ten(h_t2(x2, H_F32, R, C)), h_ten(h_t1(ri, H_I32, 4)),
             h_ten(h_t1(ci, H_I32, 8)), h_ten(h_t2(y2, H_F32, 4, 8)));
    h_check("outer-product gather X[ri, ci]", y2, H_F32, r, 32, 0, 0);
    return h_done();
}
