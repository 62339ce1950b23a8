/* t_reduce_cols.c — reductions along a non-innermost axis (tile.c's row of
 * accumulators): f16 ones summed down 3000 rows accumulate in f32 (an f16
 * accumulator sticks at 2048); i32 sums and maxima down the columns; the
 * min over the middle axis of a 3-D tile loaded with tails (pad 0); a NaN
 * in a column wins its max. f32 / f64 tiles in memory whose inner extent
 * is a multiple of the vector width keep their accumulators in vector
 * registers (tile.c gen_reduce_colvec: 256 f32 columns on AVX-512, the
 * most it takes; 48 f64 on AVX2): their sums are compared exactly with the
 * same row order in C. */
#include "harness.h"

static const char *src =
    "kernel ones<R = 4096, C = 16>(X: f16[N, C], S: f32[C]) {\n"
    "    S[0 +: C] = sum(X[0 +: R, 0 +: C], 0);\n"
    "}\n"
    "kernel icols<R = 64, C = 48>(X: i32[R, C], S: i32[C], M: i32[C]) {\n"
    "    let x = X[0 +: R, 0 +: C];\n"
    "    S[0 +: C] = sum(x, 0);\n"
    "    M[0 +: C] = max(x, 0);\n"
    "}\n"
    "kernel mid<A = 4, B = 8, C = 32>(X: f32[P, Q, W], O: f32[P, W]) {\n"
    "    O[0 +: A, 0 +: C] = min(X[0 +: A, 0 +: B, 0 +: C], 1);\n"
    "}\n"
    "kernel fcols<R = 32, C = 64>(X: f32[R, C], M: f32[C], S: f32[C]) {\n"
    "    let x = X[0 +: R, 0 +: C];\n"
    "    M[0 +: C] = max(x, 0);\n"
    "    S[0 +: C] = sum(x * 2.0, 0);\n"
    "}\n"
    "kernel wide<R = 40, C = 256>(X: f32[R, C], S: f32[C], M: f32[C]) {\n"
    "    let x = X[0 +: R, 0 +: C];\n"
    "    S[0 +: C] = sum(x, 0);\n"
    "    M[0 +: C] = min(x, 0);\n"
    "}\n"
    "kernel dmid<A = 3, B = 5, C = 48>(X: f64[A, B, C], O: f64[A, C]) {\n"
    "    O[0 +: A, 0 +: C] = sum(X[0 +: A, 0 +: B, 0 +: C], 1);\n"
    "}\n";

int main(void)
{
    h_seed(31);
    blkc_module *m = h_compile(src, NULL);

    enum { N = 3000, C = 16 };
    uint16_t *x = h_array(H_F16, N * C);
    float *s = h_array(H_F32, C);
    double rs[C];
    for (int i = 0; i < N * C; i++)
        x[i] = h_f32_to_f16(1.0f);
    for (int j = 0; j < C; j++)
        rs[j] = N;
    H_LAUNCH(h_kernel(m, "ones"), h_ten(h_t2(x, H_F16, N, C)), h_ten(h_t1(s, H_F32, C)));
    h_check("f16 ones summed down 3000 rows (rows past N read 0)", s, H_F32, rs, C, 0, 0);

    enum { IR = 64, IC = 48 };
    int32_t *xi = h_array(H_I32, IR * IC), *si = h_array(H_I32, IC), *mi = h_array(H_I32, IC);
    int64_t rsi[IC], rmi[IC];
    for (int i = 0; i < IR * IC; i++)
        xi[i] = (int32_t)(h_rand_u64() % 2001) - 1000;
    for (int j = 0; j < IC; j++) {
        rsi[j] = 0;
        rmi[j] = xi[j];
        for (int i = 0; i < IR; i++) {
            rsi[j] += xi[i * IC + j];
            if (xi[i * IC + j] > rmi[j])
                rmi[j] = xi[i * IC + j];
        }
    }
    H_LAUNCH(h_kernel(m, "icols"), h_ten(h_t2(xi, H_I32, IR, IC)), h_ten(h_t1(si, H_I32, IC)),
             h_ten(h_t1(mi, H_I32, IC)));
    h_check_i("i32 sum(x, 0)", si, H_I32, rsi, IC);
    h_check_i("i32 max(x, 0)", mi, H_I32, rmi, IC);

    enum { P = 3, Q = 7, W = 30 };
    float *x3 = h_array(H_F32, P * Q * W), *o = h_array(H_F32, P * W);
    double ro[P * W];
    h_fill(x3, H_F32, P * Q * W, 0.5, 2);
    for (int p = 0; p < P; p++)
        for (int w = 0; w < W; w++) {
            double mn = 0.0; /* row Q of the tile is a tail: it reads 0 */
            for (int q = 0; q < Q; q++)
                mn = fmin(mn, x3[(p * Q + q) * W + w]);
            ro[p * W + w] = mn;
        }
    H_LAUNCH(h_kernel(m, "mid"), h_ten(h_t3(x3, H_F32, P, Q, W)), h_ten(h_t2(o, H_F32, P, W)));
    h_check("min over the middle axis of a 3-D tile with tails", o, H_F32, ro, P * W, 0, 0);

    enum { FR = 32, FC = 64 };
    float *xf = h_array(H_F32, FR * FC), *mf = h_array(H_F32, FC), *sf = h_array(H_F32, FC);
    double rmf[FC], rsf[FC];
    h_fill(xf, H_F32, FR * FC, -4, 4);
    xf[5 * FC + 7] = NAN;
    for (int j = 0; j < FC; j++) {
        double mx = -INFINITY, sm = 0;
        for (int i = 0; i < FR; i++) {
            double v = xf[i * FC + j];
            mx = isnan(v) || isnan(mx) ? NAN : fmax(mx, v);
            sm += 2.0 * v;
        }
        rmf[j] = mx;
        rsf[j] = sm;
    }
    H_LAUNCH(h_kernel(m, "fcols"), h_ten(h_t2(xf, H_F32, FR, FC)), h_ten(h_t1(mf, H_F32, FC)),
             h_ten(h_t1(sf, H_F32, FC)));
    h_check("f32 max(x, 0), a NaN wins its column", mf, H_F32, rmf, FC, 0, 0);
    h_check("f32 sum(x * 2, 0)", sf, H_F32, rsf, FC, 1e-4, 1e-5);

    enum { WR = 40, WC = 256 };
    float *xw = h_array(H_F32, WR * WC), *sw = h_array(H_F32, WC), *mw = h_array(H_F32, WC);
    double rsw[WC], rmw[WC];
    h_fill(xw, H_F32, WR * WC, -1e3, 1e3);
    xw[17 * WC + 200] = NAN;
    for (int j = 0; j < WC; j++) {
        float sm = 0, mn = xw[j];
        for (int i = 0; i < WR; i++) {
            float v = xw[i * WC + j];
            sm += v;
            mn = isnan(v) || isnan(mn) ? NAN : fminf(mn, v);
        }
        rsw[j] = sm;
        rmw[j] = mn;
    }
    H_LAUNCH(h_kernel(m, "wide"), h_ten(h_t2(xw, H_F32, WR, WC)), h_ten(h_t1(sw, H_F32, WC)),
             h_ten(h_t1(mw, H_F32, WC)));
    /* the GPU backends reduce as trees: exact on the CPU only */
    const char *dev = getenv("BLKC_TEST_DEVICE");
    double tol = dev && *dev && strcmp(dev, "cpu") ? 1e-5 : 0;
    h_check("f32 sum(x, 0) of 256 columns, exact in row order on the CPU", sw, H_F32, rsw, WC,
            tol * 2e4, tol);
    h_check("f32 min(x, 0) of 256 columns, a NaN wins its column", mw, H_F32, rmw, WC, 0, 0);

    enum { DA = 3, DB = 5, DC = 48 };
    double *xd = h_array(H_F64, DA * DB * DC), *od = h_array(H_F64, DA * DC), rod[DA * DC];
    h_fill(xd, H_F64, DA * DB * DC, -1, 1);
    for (int a = 0; a < DA; a++)
        for (int c = 0; c < DC; c++) {
            double sm = 0;
            for (int k = 0; k < DB; k++)
                sm += xd[(a * DB + k) * DC + c];
            rod[a * DC + c] = sm;
        }
    H_LAUNCH(h_kernel(m, "dmid"), h_ten(h_t3(xd, H_F64, DA, DB, DC)), h_ten(h_t2(od, H_F64, DA, DC)));
    h_check("f64 sum over the middle axis, exact in row order on the CPU", od, H_F64, rod,
            DA * DC, tol * 1e-6, tol);
    return h_done();
}
