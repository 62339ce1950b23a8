/* t_scatter.c — scatters through index tiles: Y[perm] = x (a permutation,
 * plus out-of-bounds indices that are never written), and a 2-D row
 * scatter Y[rows, 0 +: D] = tile. */
#include "harness.h"

static const char *src =
    "kernel s1<BLOCK = 64>(X: f32[N], P: i32[N], Y: f32[M]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let p = load(P[o +: BLOCK], pad = -1);\n"
    "    Y[p] = X[o +: BLOCK] * 3.0;\n"
    "}\n"
    "kernel rows<BLOCK = 8, D = 16>(X: f32[N, D], P: i32[N], Y: f32[M, D]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[P[o +: BLOCK], 0 +: D] = X[o +: BLOCK, 0 +: D];\n"
    "}\n";

int main(void)
{
    h_seed(13);
    blkc_module *m = h_compile(src, NULL);
    enum { N = 600, M = 620 };
    float *x = h_array(H_F32, N), *y = h_array(H_F32, M);
    int32_t *p = h_array(H_I32, N);
    double *r = h_alloc(8 * M * 16);
    h_fill(x, H_F32, N, -1, 1);
    for (int i = 0; i < N; i++)
        p[i] = i;
    for (int i = N - 1; i > 0; i--) {   /* shuffle */
        int j = (int)h_randi(0, i);
        int32_t t = p[i]; p[i] = p[j]; p[j] = t;
    }
    for (int i = 0; i < M; i++) { y[i] = -9.0f; r[i] = -9.0; }
    for (int i = 0; i < N; i++) {
        if (i % 50 == 7)
            p[i] = i % 100 == 7 ? -3 : M + 40;   /* out of bounds: dropped */
        else
            r[p[i]] = (double)(x[i] * 3.0f);
    }
    H_LAUNCH(h_kernel(m, "s1"), h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(p, H_I32, N)),
             h_ten(h_t1(y, H_F32, M)));
    h_check("scatter Y[perm] = x, out-of-bounds indices dropped", y, H_F32, r, M, 0, 0);

    enum { NR = 40, MR = 45, D = 16 };
    float *xr = h_array(H_F32, NR * D), *yr = h_array(H_F32, MR * D);
    int32_t *pr = h_array(H_I32, NR);
    h_fill(xr, H_F32, NR * D, -1, 1);
    for (int i = 0; i < MR * D; i++) r[i] = 0.0;
    for (int i = 0; i < NR; i++) {
        pr[i] = (i * 7) % MR;          /* distinct since gcd(7, 45) = 1 */
        for (int j = 0; j < D; j++)
            r[pr[i] * D + j] = xr[i * D + j];
    }
    H_LAUNCH(h_kernel(m, "rows"), h_ten(h_t2(xr, H_F32, NR, D)), h_ten(h_t1(pr, H_I32, NR)),
             h_ten(h_t2(yr, H_F32, MR, D)));
    h_check("row scatter Y[rows, 0 +: D]", yr, H_F32, r, MR * D, 0, 0);
    return h_done();
}
