/* t_strided.c — tensor arguments with arbitrary strides: a transposed view
 * (strides [1, R]), every other element (stride 2), a byte_offset, and a
 * strided output (one column of a wider matrix). */
#include "harness.h"

static const char *src =
    "kernel copy2d<T = 16>(X: f32[R, C], Y: f32[R, C]) grid(cdiv(R, T), cdiv(C, T)) {\n"
    "    let m = program_id(0) * T;\n"
    "    let n = program_id(1) * T;\n"
    "    Y[m +: T, n +: T] = X[m +: T, n +: T] + 0.5;\n"
    "}\n"
    "kernel copy1d<BLOCK = 64>(X: f32[N], Y: f32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = X[o +: BLOCK];\n"
    "}\n";

int main(void)
{
    h_seed(11);
    blkc_module *m = h_compile(src, NULL);
    enum { R = 50, C = 37 };
    /* X is the transpose of a C x R buffer: X[i][j] = buf[j*R + i] */
    float *buf = h_array(H_F32, R * C), *y = h_array(H_F32, R * C);
    h_fill(buf, H_F32, R * C, -1, 1);
    DLTensor *xt = h_tensor(buf, H_F32, 2, (int64_t[]){R, C}, (int64_t[]){1, R});
    H_LAUNCH(h_kernel(m, "copy2d"), h_ten(xt), h_ten(h_t2(y, H_F32, R, C)));
    double *r = h_alloc(8 * R * C);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            r[i * C + j] = (double)(buf[j * R + i] + 0.5f);
    h_check("transposed (column-major) input view", y, H_F32, r, R * C, 0, 0);

    enum { N = 300 };
    float *src1 = h_array(H_F32, 2 * N + 10), *dst = h_array(H_F32, 3 * N + 10);
    h_fill(src1, H_F32, 2 * N + 10, -1, 1);
    for (int i = 0; i < 3 * N + 10; i++)
        dst[i] = 5.0f;
    /* input: every other element starting at element 3 (via byte_offset);
     * output: every third element starting at element 1 (via data pointer) */
    DLTensor *xs = h_tensor(src1, H_F32, 1, (int64_t[]){N}, (int64_t[]){2});
    xs->byte_offset = 3 * sizeof(float);
    DLTensor *ys = h_tensor(dst + 1, H_F32, 1, (int64_t[]){N}, (int64_t[]){3});
    H_LAUNCH(h_kernel(m, "copy1d"), h_ten(xs), h_ten(ys));
    double *r1 = h_alloc(8 * (3 * N + 10));
    for (int i = 0; i < 3 * N + 10; i++)
        r1[i] = 5.0;
    for (int i = 0; i < N; i++)
        r1[1 + 3 * i] = src1[3 + 2 * i];
    h_check("stride-2 input with byte_offset into a stride-3 output", dst, H_F32, r1,
            3 * N + 10, 0, 0);

    /* output: column 2 of a R x 4 matrix (shape [R, 1] with strides [4, 1]) */
    float *wide = h_array(H_F32, R * 4), *colsrc = h_array(H_F32, R);
    h_fill(colsrc, H_F32, R, -1, 1);
    DLTensor *col = h_tensor(wide + 2, H_F32, 2, (int64_t[]){R, 1}, (int64_t[]){4, 1});
    H_LAUNCH(h_kernel(m, "copy2d"), h_ten(h_t2(colsrc, H_F32, R, 1)), h_ten(col));
    double *rw = h_alloc(8 * R * 4);
    for (int i = 0; i < R; i++)
        rw[i * 4 + 2] = (double)(colsrc[i] + 0.5f);
    h_check("strided output column", wide, H_F32, rw, R * 4, 0, 0);
    return h_done();
}
