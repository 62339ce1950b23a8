/* t_load_clip.c — unmasked loads and stores of views partly out of
 * bounds on every side (the CPU backend's clipped rows, mem.c): 1-D views
 * starting before 0 and past N with a pad value, stores clipped to the
 * tensor at both ends, 2-D views with whole rows and columns outside,
 * f16 and bool elements, a short last K step of a matrix-vector dot
 * (read in place up to the tensor's end: matvec.c's g->vkn), and columns
 * of a [N, 3] matrix (a strided last range, a scalar after it: RoPE's
 * pairs) partly out of bounds, or wholly by their column index. */
#include "harness.h"

#include <math.h>

static const char *src =
    "kernel shift<B = 16, S = 23>(X: f32[N], Y: f32[M], Z: f32[N]) grid(cdiv(M, B)) {\n"
    "    let o = program_id(0) * B - S;\n"
    "    let t = load(X[o +: B], pad = 2.5);\n"
    "    Y[program_id(0) * B +: B] = t;\n"
    "    Z[o +: B] = t + 1.0;\n"
    "}\n"
    "kernel blk2<BR = 8, BC = 16>(X: f32[R, C], Y: f32[YR, YC])\n"
    "    grid(cdiv(YR, BR), cdiv(YC, BC)) {\n"
    "    let r = program_id(0) * BR - 5;\n"
    "    let c = program_id(1) * BC - 7;\n"
    "    Y[program_id(0) * BR +: BR, program_id(1) * BC +: BC] =\n"
    "        load(X[r +: BR, c +: BC], pad = -1.0);\n"
    "}\n"
    "kernel half<B = 32>(X: f16[N], P: bool[N], Y: f32[M]) grid(cdiv(M, B)) {\n"
    "    let o = program_id(0) * B - 9;\n"
    "    let x = X[o +: B] as f32;\n"
    "    Y[program_id(0) * B +: B] = where(P[o +: B], x, x - 100.0);\n"
    "}\n"
    "kernel col<B = 16>(X: f32[N, 3], Y: f32[M], Z: f32[N, 3], c: i32) grid(cdiv(M, B)) {\n"
    "    let o = program_id(0) * B - 5;\n"
    "    let t = load(X[o +: B, c], pad = 7.0);\n"
    "    Y[program_id(0) * B +: B] = t;\n"
    "    Z[o +: B, c + 1] = t * 2.0;\n"
    "}\n"
    "kernel mv<BM = 8, BK = 64>(W: f32[R, C], X: f32[C], Y: f32[R]) grid(cdiv(R, BM)) {\n"
    "    let m = program_id(0) * BM;\n"
    "    var acc = zeros(f32, BM);\n"
    "    for k in 0 .. C step BK {\n"
    "        acc = dot(W[m +: BM, k +: BK], X[k +: BK], acc);\n"
    "    }\n"
    "    Y[m +: BM] = acc;\n"
    "}\n";

/* r = w [R, C] times v, in double */
static void ref_mv(double *r, const float *w, const float *v, int R, int C)
{
    for (int i = 0; i < R; i++) {
        double s = 0;
        for (int j = 0; j < C; j++)
            s += (double)w[i * C + j] * v[j];
        r[i] = s;
    }
}

int main(void)
{
    h_seed(21);
    blkc_module *m = h_compile(src, NULL);

    enum { N = 50, M = 96, PAD = 5 }; /* programs read [-23, 73): both ends out */
    float *x = h_array(H_F32, N), *y = h_array(H_F32, M), *z = h_array(H_F32, N + PAD);
    double *ry = h_alloc(8 * M), *rz = h_alloc(8 * (N + PAD));
    h_fill(x, H_F32, N, -3, 3);
    for (int i = 0; i < N + PAD; i++)
        z[i] = -9.0f, rz[i] = i < N ? (double)(x[i] + 1.0f) : -9.0;
    for (int i = 0; i < M; i++) {
        int j = i - 23;
        ry[i] = j >= 0 && j < N ? (double)x[j] : 2.5;
    }
    H_LAUNCH(h_kernel(m, "shift"), h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, M)),
             h_ten(h_t1(z, H_F32, N)));
    h_check("1-D load from before 0 to past N, pad 2.5", y, H_F32, ry, M, 0, 0);
    h_check("1-D store clipped at both ends, nothing written past N", z, H_F32, rz, N + PAD, 0,
            0);

    enum { R = 19, C = 29, YR = 40, YC = 48 };
    float *a = h_array(H_F32, R * C), *b = h_array(H_F32, YR * YC);
    double *rb = h_alloc(8 * YR * YC);
    h_fill(a, H_F32, R * C, -5, 5);
    for (int i = 0; i < YR; i++)
        for (int j = 0; j < YC; j++) {
            int r = i - 5, c = j - 7;
            rb[i * YC + j] = r >= 0 && r < R && c >= 0 && c < C ? (double)a[r * C + c] : -1.0;
        }
    H_LAUNCH(h_kernel(m, "blk2"), h_ten(h_t2(a, H_F32, R, C)), h_ten(h_t2(b, H_F32, YR, YC)));
    h_check("2-D tiles with rows and columns out of bounds on every side", b, H_F32, rb,
            YR * YC, 0, 0);

    enum { NH = 70, MH = 96 };
    uint16_t *xh = h_array(H_F16, NH);
    uint8_t *p = h_array(H_BOOL, NH);
    float *yh = h_array(H_F32, MH);
    double *rh = h_alloc(8 * MH);
    for (int i = 0; i < NH; i++) {
        xh[i] = h_f32_to_f16((float)(i % 13) - 6.0f);
        p[i] = (uint8_t)(i % 3 != 0);
    }
    for (int i = 0; i < MH; i++) {
        int j = i - 9; /* out of bounds: x reads 0, p reads false */
        float xv = j >= 0 && j < NH ? h_f16_to_f32(xh[j]) : 0.0f;
        bool pv = j >= 0 && j < NH && p[j];
        rh[i] = pv ? xv : (double)(xv - 100.0f);
    }
    H_LAUNCH(h_kernel(m, "half"), h_ten(h_t1(xh, H_F16, NH)), h_ten(h_t1(p, H_BOOL, NH)),
             h_ten(h_t1(yh, H_F32, MH)));
    h_check("f16 and bool tails read 0 and false", yh, H_F32, rh, MH, 0, 0);

    enum { NC = 27, MC = 48, CPAD = 4 }; /* programs read rows [-5, 43) */
    float *xc = h_array(H_F32, NC * 3), *yc = h_array(H_F32, MC);
    float *zc = h_array(H_F32, (NC + CPAD) * 3);
    double *ryc = h_alloc(8 * MC), *rzc = h_alloc(8 * (NC + CPAD) * 3);
    h_fill(xc, H_F32, NC * 3, -3, 3);
    for (int c = 1; c <= 3; c += 2) { /* column 1; column 3, past the end */
        for (int i = 0; i < (NC + CPAD) * 3; i++) {
            zc[i] = -9.0f;
            rzc[i] = i < NC * 3 && c == 1 && i % 3 == 2 ? 2.0 * xc[i - 1] : -9.0;
        }
        for (int i = 0; i < MC; i++) {
            int j = i - 5;
            ryc[i] = c == 1 && j >= 0 && j < NC ? (double)xc[j * 3 + 1] : 7.0;
        }
        H_LAUNCH(h_kernel(m, "col"), h_ten(h_t2(xc, H_F32, NC, 3)), h_ten(h_t1(yc, H_F32, MC)),
                 h_ten(h_t2(zc, H_F32, NC, 3)), h_int(c));
        h_check(c == 1 ? "column 1 of [N, 3] from row -5 to past N, pad 7"
                       : "column 3 of [N, 3]: all pad", yc, H_F32, ryc, MC, 0, 0);
        h_check(c == 1 ? "column 2 stored, clipped to the rows, nothing past N"
                       : "column 4: nothing stored", zc, H_F32, rzc, (NC + CPAD) * 3, 0, 0);
    }

    enum { WR = 37, WC = 100 }; /* K steps of 64: the last one holds 36 columns */
    float *w = h_array(H_F32, WR * WC), *v = h_array(H_F32, WC), *o = h_array(H_F32, WR);
    double *ro = h_alloc(8 * WR);
    h_fill(w, H_F32, WR * WC, -1, 1);
    h_fill(v, H_F32, WC, -1, 1);
    ref_mv(ro, w, v, WR, WC);
    H_LAUNCH(h_kernel(m, "mv"), h_ten(h_t2(w, H_F32, WR, WC)), h_ten(h_t1(v, H_F32, WC)),
             h_ten(h_t1(o, H_F32, WR)));
    h_check("matvec with a short last K step and a row tail", o, H_F32, ro, WR, 1e-5, 1e-5);

    /* the last K step read in place (rows in bounds): only its columns in
     * the tensor count — NaN right after W's last row must not leak in */
    enum { WR2 = 40, TAILN = 64 };
    float *w2 = h_array(H_F32, WR2 * WC + TAILN), *o2 = h_array(H_F32, WR2);
    double *ro2 = h_alloc(8 * WR2);
    h_fill(w2, H_F32, WR2 * WC, -1, 1);
    for (int i = 0; i < TAILN; i++)
        w2[WR2 * WC + i] = NAN;
    ref_mv(ro2, w2, v, WR2, WC);
    H_LAUNCH(h_kernel(m, "mv"), h_ten(h_t2(w2, H_F32, WR2, WC)), h_ten(h_t1(v, H_F32, WC)),
             h_ten(h_t1(o2, H_F32, WR2)));
    h_check("matvec whose last K step runs past W's end", o2, H_F32, ro2, WR2, 1e-5, 1e-5);
    return h_done();
}
