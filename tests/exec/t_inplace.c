/* t_inplace.c — loads read in place and stores of inline values
 * (backends/cpu/fuse.c, mem.c): a 2-D tile that spans whole rows is read
 * from the tensor itself (sum of squares per row + max), with tails (rows
 * past R, rows shorter than the tile) and a strided tensor taking the
 * copying path; a load overwritten by a store before its last read keeps
 * its copy; a GEMM whose DOT reads A's tile in place with the tensor's row
 * stride (tails in M, N, K; strided rows); an in-place update X = X * 2 whose store computes its value on
 * the way to memory; a cheap value with several users recomputed in each
 * while its load's tensor is overwritten between them; a RESHAPE, which
 * names its operand's buffer (tile.c), of a load overwritten before the
 * RESHAPE's reader (a DOT) runs keeps the load's copy; a var read by STOREs
 * alone (they read the var's slot, lower.c) before and after it changes,
 * and one whose STORE comes after the var changed. */
#include "harness.h"

static const char *src =
    "kernel rowsum<BR = 4, BLOCK = 16>(X: f32[R, N], S: f32[R])\n"
    "    grid(cdiv(R, BR)) {\n"
    "    let r = program_id(0) * BR;\n"
    "    let x = X[r +: BR, 0 +: BLOCK];\n"
    "    let q = sum(x * x, 1) + max(x);\n"
    "    S[r +: BR] = q;\n"
    "}\n"
    "kernel clobber<B = 64>(X: f32[N], Y: f32[N]) grid(1) {\n"
    "    let x = X[0 +: B];\n"
    "    X[0 +: B] = zeros(f32, B);\n"
    "    Y[0 +: B] = x * 2.0;\n"
    "}\n"
    H_MM_SRC("BM = 16, BN = 32, BK = 8", "f32", "")
    "kernel remat<B = 64>(X: f32[N], Y: f32[N], Z: f32[N]) grid(1) {\n"
    "    let x = X[0 +: B];\n"
    "    let v = where(arange(B) < 40, x - 1.0, 0.0);\n"
    "    Y[0 +: B] = v * v;\n"
    "    X[0 +: B] = zeros(f32, B);\n"
    "    Z[0 +: B] = v * 3.0 + 0.5;\n"
    "}\n"
    "kernel reclob<B = 64>(X: f32[N], W: f32[P, Q], Y: f32[P, Q]) grid(1) {\n"
    "    let x = reshape(X[0 +: B], 8, 8);\n"
    "    X[0 +: B] = zeros(f32, B);\n"
    "    Y[0 +: 8, 0 +: 8] = dot(x, W[0 +: 8, 0 +: 8]);\n"
    "}\n"
    "kernel vstore<B = 16>(X: f32[N], Y: f32[N], Z: f32[N], U: f32[N]) grid(1) {\n"
    "    var acc = X[0 +: B];\n"
    "    Y[0 +: B] = acc;\n"
    "    acc = acc * 2.0 + 1.0;\n"
    "    Z[0 +: B] = acc;\n"
    "    let a = acc;\n"
    "    acc = zeros(f32, B);\n"
    "    U[0 +: B] = a;\n"
    "    X[0 +: B] = acc;\n"
    "}\n"
    "kernel twice<B = 32>(X: f32[N]) grid(cdiv(N, B)) {\n"
    "    let o = program_id(0) * B;\n"
    "    X[o +: B] = X[o +: B] * 2.0;\n"
    "}\n";

static void rowsum(blkc_module *m, int R, int N, int ld, const char *what)
{
    float *x = h_array(H_F32, (size_t)R * ld), *s = h_array(H_F32, R);
    double *rs = h_alloc(8 * (size_t)R);
    h_fill(x, H_F32, (size_t)R * ld, -2, 2);
    for (int b = 0; b < R; b += 4) { /* max over the block's valid part */
        float mx = -INFINITY;
        for (int i = b; i < b + 4 && i < R; i++)
            for (int j = 0; j < N; j++)
                mx = fmaxf(mx, x[i * ld + j]);
        if (N < 16 || b + 4 > R)
            mx = fmaxf(mx, 0.0f); /* the tail reads 0 */
        for (int i = b; i < b + 4 && i < R; i++) {
            double acc = 0;
            for (int j = 0; j < N; j++)
                acc += (double)x[i * ld + j] * x[i * ld + j];
            rs[i] = acc + mx;
        }
    }
    int64_t st[2] = {ld, 1};
    H_LAUNCH(h_kernel(m, "rowsum"),
             h_ten(h_tensor(x, H_F32, 2, (int64_t[]){R, N}, st)),
             h_ten(h_t1(s, H_F32, R)));
    char buf[160];
    snprintf(buf, sizeof buf, "%s: row sums of squares + max", what);
    h_check(buf, s, H_F32, rs, R, 1e-5, 1e-5);
}

/* C = A @ B with A's rows lda apart (A read in place by the DOT when its
 * tile is in bounds) */
static void mm(blkc_module *m, int M, int N, int K, int lda, const char *what)
{
    float *a = h_array(H_F32, (size_t)M * lda), *b = h_array(H_F32, (size_t)K * N);
    float *c = h_array(H_F32, (size_t)M * N);
    double *r = h_alloc(8 * (size_t)M * N);
    h_fill(a, H_F32, (size_t)M * lda, -1, 1);
    h_fill(b, H_F32, (size_t)K * N, -1, 1);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)a[i * lda + k] * b[k * N + j];
            r[i * N + j] = acc;
        }
    int64_t st[2] = {lda, 1};
    H_LAUNCH(h_kernel(m, "mm"), h_ten(h_tensor(a, H_F32, 2, (int64_t[]){M, K}, st)),
             h_ten(h_t2(b, H_F32, K, N)), h_ten(h_t2(c, H_F32, M, N)));
    h_check(what, c, H_F32, r, (size_t)M * N, 1e-4, 1e-4);
}

int main(void)
{
    h_seed(21);
    blkc_module *m = h_compile(src, NULL);
    rowsum(m, 12, 16, 16, "whole rows, in place");
    rowsum(m, 10, 16, 16, "row tail (R % 4 != 0)");
    rowsum(m, 9, 13, 13, "rows shorter than the tile");
    rowsum(m, 8, 16, 20, "strided rows (copy)");

    mm(m, 32, 64, 16, 16, "GEMM, whole tiles, A in place");
    mm(m, 37, 70, 29, 33, "GEMM with tails in M, N, K and strided A rows");

    enum { B = 64 };
    float *x = h_array(H_F32, B), *y = h_array(H_F32, B);
    double *rx = h_alloc(8 * B), *ry = h_alloc(8 * B);
    h_fill(x, H_F32, B, -3, 3);
    for (int i = 0; i < B; i++)
        rx[i] = 0.0, ry[i] = (double)(x[i] * 2.0f);
    H_LAUNCH(h_kernel(m, "clobber"), h_ten(h_t1(x, H_F32, B)), h_ten(h_t1(y, H_F32, B)));
    h_check("load overwritten before its last read keeps its value", y, H_F32, ry, B, 0, 0);
    h_check("the overwrite itself", x, H_F32, rx, B, 0, 0);

    /* v is cheap and used by two stores: recomputed in each
     * (fuse.c remat) from x, which the store to X between them clobbers:
     * x must keep its copy */
    float *z = h_array(H_F32, B);
    double *rv = h_alloc(8 * B), *rzz = h_alloc(8 * B);
    h_fill(x, H_F32, B, -3, 3);
    for (int i = 0; i < B; i++) {
        float v = i < 40 ? x[i] - 1.0f : 0.0f;
        rv[i] = (double)(v * v);
        rzz[i] = (double)(v * 3.0f + 0.5f);
    }
    H_LAUNCH(h_kernel(m, "remat"), h_ten(h_t1(x, H_F32, B)), h_ten(h_t1(y, H_F32, B)),
             h_ten(h_t1(z, H_F32, B)));
    h_check("a cheap value with two users, the first store", y, H_F32, rv, B, 0, 0);
    h_check("the second, after its load's tensor is overwritten", z, H_F32, rzz, B, 1e-6, 1e-6);
    h_check("the overwrite", x, H_F32, rx, B, 0, 0);

    /* reclob: Y = reshape(X, 8, 8) @ W with X zeroed between the load and
     * the DOT */
    float *w8 = h_array(H_F32, B), *y8 = h_array(H_F32, B);
    double *ry8 = h_alloc(8 * B);
    h_fill(x, H_F32, B, -2, 2);
    h_fill(w8, H_F32, B, -1, 1);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            double acc = 0;
            for (int k = 0; k < 8; k++)
                acc += (double)x[i * 8 + k] * w8[k * 8 + j];
            ry8[i * 8 + j] = acc;
        }
    H_LAUNCH(h_kernel(m, "reclob"), h_ten(h_t1(x, H_F32, B)), h_ten(h_t2(w8, H_F32, 8, 8)),
             h_ten(h_t2(y8, H_F32, 8, 8)));
    h_check("a RESHAPE of a load overwritten before its DOT", y8, H_F32, ry8, B, 1e-5, 1e-5);
    h_check("the overwrite under the RESHAPE", x, H_F32, rx, B, 0, 0);

    /* vstore: var slots read by STOREs */
    enum { V = 16 };
    float *vy = h_array(H_F32, V), *vz = h_array(H_F32, V), *vu = h_array(H_F32, V);
    double *ry1 = h_alloc(8 * V), *rz1 = h_alloc(8 * V), *rx0 = h_alloc(8 * V);
    h_fill(x, H_F32, V, -3, 3);
    for (int i = 0; i < V; i++) {
        ry1[i] = x[i];
        rz1[i] = (double)(x[i] * 2.0f + 1.0f);
        rx0[i] = 0;
    }
    H_LAUNCH(h_kernel(m, "vstore"), h_ten(h_t1(x, H_F32, V)), h_ten(h_t1(vy, H_F32, V)),
             h_ten(h_t1(vz, H_F32, V)), h_ten(h_t1(vu, H_F32, V)));
    h_check("a var stored before it changes", vy, H_F32, ry1, V, 0, 0);
    h_check("the var stored after it changed", vz, H_F32, rz1, V, 1e-6, 1e-6);
    h_check("a var read before it changes, stored after", vu, H_F32, rz1, V, 1e-6, 1e-6);
    h_check("the var's last value", x, H_F32, rx0, V, 0, 0);

    enum { N = 1000 };
    float *zz = h_array(H_F32, N);
    double *rz = h_alloc(8 * N);
    h_fill(zz, H_F32, N, -1, 1);
    for (int i = 0; i < N; i++)
        rz[i] = (double)(zz[i] * 2.0f);
    H_LAUNCH(h_kernel(m, "twice"), h_ten(h_t1(zz, H_F32, N)));
    h_check("X = X * 2 in place, with a tail", zz, H_F32, rz, N, 0, 0);
    return h_done();
}
