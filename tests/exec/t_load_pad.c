/* t_load_pad.c — load(view, pad = v) fills out-of-bounds elements with v
 * (f32, i32 and f16 tensors), and load(view, pad = v, mask = m) fills
 * masked-off elements too; masks broadcast ([BLOCK] against [2, BLOCK]). */
#include "harness.h"

static const char *src =
    "kernel pads<BLOCK = 64>(X: f32[N], I: i32[N], H: f16[N], Y: f32[3, M], YI: i32[M],\n"
    "                        Y2: f32[2, M]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[0, o +: BLOCK] = load(X[o +: BLOCK], pad = -1.5);\n"
    "    Y[1, o +: BLOCK] = load(X[o +: BLOCK], pad = 7.0, mask = arange(BLOCK) % 2 == 0);\n"
    "    Y[2, o +: BLOCK] = load(H[o +: BLOCK], pad = 2.5);\n"
    "    YI[o +: BLOCK] = load(I[o +: BLOCK], pad = -1);\n"
    "    let rows = load(Y[0 +: 2, o +: BLOCK], pad = 0.0, mask = arange(BLOCK) < 10);\n"
    "    Y2[0 +: 2, o +: BLOCK] = rows;\n"
    "}\n";

int main(void)
{
    enum { N = 1000, BLOCK = 64, M = ((N + BLOCK - 1) / BLOCK) * BLOCK };
    h_seed(9);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, N), *y = h_array(H_F32, 3 * M), *y2 = h_array(H_F32, 2 * M);
    int32_t *iv = h_array(H_I32, N), *yi = h_array(H_I32, M);
    uint16_t *hh = h_array(H_F16, N);
    h_fill(x, H_F32, N, -1, 1);
    h_fill(iv, H_I32, N, 0, 1000);
    h_fill(hh, H_F16, N, -1, 1);
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(iv, H_I32, N)), h_ten(h_t1(hh, H_F16, N)),
             h_ten(h_t2(y, H_F32, 3, M)), h_ten(h_t1(yi, H_I32, M)),
             h_ten(h_t2(y2, H_F32, 2, M)));
    double *r = h_alloc(8 * 3 * M), *r2 = h_alloc(8 * 2 * M);
    int64_t *ri = h_alloc(8 * M);
    for (int i = 0; i < M; i++) {
        r[i] = i < N ? x[i] : -1.5;
        r[M + i] = (i % BLOCK) % 2 == 0 && i < N ? x[i] : 7.0;
        r[2 * M + i] = i < N ? h_f16_to_f32(hh[i]) : 2.5;
        ri[i] = i < N ? iv[i] : -1;
    }
    h_check("pad = -1.5 past N", y, H_F32, r, M, 0, 0);
    h_check("pad = 7.0 with mask (odd lanes and past N)", y + M, H_F32, r + M, M, 0, 0);
    h_check("f16 load, pad = 2.5", y + 2 * M, H_F32, r + 2 * M, M, 0, 0);
    h_check_i("i32 load, pad = -1", yi, H_I32, ri, M);
    /* Y2 reads back Y rows 0..1 within each program (after that program's own
     * stores), lanes >= 10 masked to 0 */
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < M; i++)
            r2[j * M + i] = (i % BLOCK) < 10 ? r[j * M + i] : 0.0;
    h_check("2-D masked load with a broadcast mask", y2, H_F32, r2, 2 * M, 0, 0);
    return h_done();
}
