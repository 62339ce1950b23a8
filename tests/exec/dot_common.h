/* dot_common.h — shared by the t_dot_*.c tests: run dot(a, b) and
 * dot(a, b, acc) for one (M, N, K) shape and input dtype on G programs (one
 * [M,K] x [K,N] product each, `:` over compile-time dims), against a
 * reference in double (exact for i8 -> i32). */
#ifndef BLKC_TESTS_DOT_COMMON_H
#define BLKC_TESTS_DOT_COMMON_H
#include "harness.h"

static void run_dot(int M, int N, int K, const char *in, int G)
{
    int isint = !strcmp(in, "i8");
    const char *out = isint ? "i32" : !strcmp(in, "f64") ? "f64" : "f32";
    char src[2048];
    snprintf(src, sizeof src,
             "kernel d(A: %s[G, %d, %d], B: %s[G, %d, %d], C: %s[G, %d, %d], C2: %s[G, %d, %d])\n"
             "    grid(G) {\n"
             "    let g = program_id(0);\n"
             "    let acc = full(%s, %s, %d, %d);\n"
             "    C[g, :, :] = dot(A[g, :, :], B[g, :, :]);\n"
             "    C2[g, :, :] = dot(A[g, :, :], B[g, :, :], acc);\n"
             "}\n",
             in, M, K, in, K, N, out, M, N, out, M, N, out, isint ? "3" : "0.5", M, N);
    blkc_kernel *k = h_build(src, NULL);
    DLDataType ti = h_dtype(in), to = h_dtype(out);
    size_t na = (size_t)G * M * K, nb = (size_t)G * K * N, nc = (size_t)G * M * N;
    void *a = h_array(ti, na), *b = h_array(ti, nb), *c = h_array(to, nc), *c2 = h_array(to, nc);
    if (isint) {
        h_fill(a, ti, na, -128, 127);
        h_fill(b, ti, nb, -128, 127);
    } else {
        h_fill(a, ti, na, -1, 1);
        h_fill(b, ti, nb, -1, 1);
    }
    blkc_arg args[4] = {h_ten(h_t3(a, ti, G, M, K)), h_ten(h_t3(b, ti, G, K, N)),
                        h_ten(h_t3(c, to, G, M, N)), h_ten(h_t3(c2, to, G, M, N))};
    h_launch_grid(k, args, 4, NULL);
    double *r = h_alloc(8 * nc), *r2 = h_alloc(8 * nc);
    int64_t *ri = h_alloc(8 * nc), *ri2 = h_alloc(8 * nc);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                int64_t si = 0;
                for (int kk = 0; kk < K; kk++) {
                    size_t ia = ((size_t)g * M + i) * K + kk, ib = ((size_t)g * K + kk) * N + j;
                    s += h_get(a, ti, ia) * h_get(b, ti, ib);
                    si += h_geti(a, ti, ia) * h_geti(b, ti, ib);
                }
                size_t ic = ((size_t)g * M + i) * N + j;
                r[ic] = s;
                r2[ic] = s + 0.5;
                ri[ic] = si;
                ri2[ic] = si + 3;
            }
    char what[128];
    snprintf(what, sizeof what, "dot %s [%d,%d]x[%d,%d] -> %s", in, M, K, K, N, out);
    double atol = !strcmp(out, "f64") ? 1e-12 : 2e-6 * K;
    if (isint) {
        h_check_i(what, c, to, ri, nc);
        strcat(what, " + acc");
        h_check_i(what, c2, to, ri2, nc);
    } else {
        h_check(what, c, to, r, nc, atol, 1e-5);
        strcat(what, " + acc");
        h_check(what, c2, to, r2, nc, atol, 1e-5);
    }
}
#endif
