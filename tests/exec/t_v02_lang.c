/* t_v02_lang.c — LANGUAGE.md §7 in kernels, against C references: helper
 * functions (generic, typed, several results, calling helpers, a tensor
 * passed through), custom reduce/scan with helper combiners (one tile and
 * a (value, index) pair), cumsum/cumprod with reverse, keep_dims, the tile
 * manipulations (slice, cat, join/unjoin, flip, gather, sort, topk,
 * histogram) and unrolled loops. Rows of 37 (a tail everywhere). */
#include "harness.h"

static const char *src =
    "const W = 37;\n"
    "fn silu(x) { return x * sigmoid(x); }\n"
    "fn online_max(m, s, x) {\n"
    "    let m2 = maximum(m, max(x));\n"
    "    return m2, s * exp(m - m2) + sum(exp(x - m2));\n"
    "}\n"
    "fn twice(x: f32) { return x + x; }\n"
    "fn silu2(x) { let y = silu(x); return twice(y); }\n"
    "fn row(T, r) { return T[r, 0 +: W]; }\n"
    "fn add(a, b) { return a + b; }\n"
    "fn mul(a, b) { return a * b; }\n"
    "fn amax(av, ai, bv, bi) {\n"
    "    let t = bv > av || (bv == av && bi < ai);\n"
    "    return where(t, bv, av), where(t, bi, ai);\n"
    "}\n"
    "kernel helpers(X: f32[R, W], Y: f32[R, W], S: f32[R, 2]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    let x = row(X, r);\n"
    "    Y[r, 0 +: W] = silu2(x);\n"
    "    let m, s = online_max(-inf, 0.0, x);\n"
    "    S[r, 0] = m;\n"
    "    S[r, 1] = s;\n"
    "}\n"
    "kernel reds(X: f32[R, W], I: i32[R, W], O: f32[R, 4], OI: i32[R, 2], C: f32[R, W],\n"
    "            CR: f32[R, W], CP: f32[R, W], SR: i32[R, W], K: f32[R, W]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    let x = X[r, 0 +: W];\n"
    "    let xi = I[r, 0 +: W];\n"
    "    O[r, 0] = reduce(x, 0, add);\n"
    "    O[r, 1] = reduce(x[None, :], add);\n"
    "    let v, i = reduce((x, arange(0, W)), 0, amax);\n"
    "    O[r, 2] = v;\n"
    "    OI[r, 0] = i;\n"
    "    OI[r, 1] = reduce(xi, 0, add);\n"
    "    O[r, 3] = max(x);\n"
    "    C[r, 0 +: W] = scan(x, 0, add);\n"
    "    CR[r, 0 +: W] = cumsum(x, 0, reverse = true);\n"
    "    CP[r, 0 +: W] = cumprod(x, 0);\n"
    "    SR[r, 0 +: W] = scan(xi, 0, add, reverse = true);\n"
    "    K[r, 0 +: W] = reshape(x[None, :] - sum(x[None, :], 1, keep_dims = true), W);\n"
    "}\n"
    "kernel tiles(X: f32[R, W], I: i32[R, W], SL: f32[R, 5], CT: f32[R, 42], FL: f32[R, W],\n"
    "             G: f32[R, W], SO: f32[R, W], SD: f32[R, W], TV: f32[R, 4], TI: i32[R, 4],\n"
    "             H: i32[R, 6], J: f32[R, W], U: f32[R, 5]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    let x = X[r, 0 +: W];\n"
    "    let xi = I[r, 0 +: W];\n"
    "    SL[r, 0 +: 5] = slice(x, 0, 30, 5);\n"
    "    CT[r, 0 +: 42] = cat(x, slice(x, 0, 2, 5), 0);\n"
    "    FL[r, 0 +: W] = flip(x, 0);\n"
    "    G[r, 0 +: W] = gather(x, (arange(0, W) * 7) % W, 0);\n"
    "    SO[r, 0 +: W] = sort(x, 0);\n"
    "    SD[r, 0 +: W] = sort(x, 0, descending = true);\n"
    "    let tv, ti = topk(x, 4, 0);\n"
    "    TV[r, 0 +: 4] = tv;\n"
    "    TI[r, 0 +: 4] = ti;\n"
    "    H[r, 0 +: 6] = histogram(xi, 6);\n"
    "    let j = join(x, x * 2.0);\n"
    "    let a, b = unjoin(j);\n"
    "    J[r, 0 +: W] = b - a;\n"
    "    var acc = zeros(f32, 5);\n"
    "    for k in 0 .. 30 step 5 unroll {\n"
    "        acc = acc + slice(x, 0, k, 5);\n"
    "    }\n"
    "    U[r, 0 +: 5] = acc;\n"
    "}\n";

enum { R = 5, W = 37 };

static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    h_seed(7);
    blkc_module *m = h_compile(src, NULL);
    float *x = h_array(H_F32, R * W);
    int32_t *xi = h_array(H_I32, R * W);
    h_fill(x, H_F32, R * W, -2, 2);
    for (int i = 0; i < R * W; i++)
        xi[i] = (int32_t)h_randi(-1, 8); /* -1, 6, 7 fall outside histogram(.., 6) */
    x[3] = x[9]; /* ties for sort / topk */
    x[W + 4] = x[W + 20];

    /* helpers */
    float *y = h_array(H_F32, R * W), *s = h_array(H_F32, R * 2);
    H_LAUNCH(h_kernel(m, "helpers"), h_ten(h_t2(x, H_F32, R, W)), h_ten(h_t2(y, H_F32, R, W)),
             h_ten(h_t2(s, H_F32, R, 2)));
    double *ry = h_alloc(8 * R * W), *rs = h_alloc(8 * R * 2);
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, sm = 0;
        for (int c = 0; c < W; c++) {
            double v = x[r * W + c];
            ry[r * W + c] = 2 * v / (1 + exp(-v));
            mx = fmax(mx, v);
        }
        for (int c = 0; c < W; c++)
            sm += exp(x[r * W + c] - mx);
        rs[r * 2] = mx;
        rs[r * 2 + 1] = sm;
    }
    h_check("helpers: silu2 = twice(silu(x)), a tensor passed to row(T, r)", y, H_F32, ry, R * W, 1e-5, 1e-5);
    h_check("helpers: let m, s = online_max(-inf, 0.0, x)", s, H_F32, rs, R * 2, 1e-5, 1e-5);

    /* reductions and scans */
    float *o = h_array(H_F32, R * 4), *cs = h_array(H_F32, R * W), *cr = h_array(H_F32, R * W);
    float *cp = h_array(H_F32, R * W), *k = h_array(H_F32, R * W);
    int32_t *oi = h_array(H_I32, R * 2), *sr = h_array(H_I32, R * W);
    H_LAUNCH(h_kernel(m, "reds"), h_ten(h_t2(x, H_F32, R, W)), h_ten(h_t2(xi, H_I32, R, W)),
             h_ten(h_t2(o, H_F32, R, 4)), h_ten(h_t2(oi, H_I32, R, 2)),
             h_ten(h_t2(cs, H_F32, R, W)), h_ten(h_t2(cr, H_F32, R, W)),
             h_ten(h_t2(cp, H_F32, R, W)), h_ten(h_t2(sr, H_I32, R, W)),
             h_ten(h_t2(k, H_F32, R, W)));
    double *ro = h_alloc(8 * R * 4), *rcs = h_alloc(8 * R * W), *rcr = h_alloc(8 * R * W);
    double *rcp = h_alloc(8 * R * W), *rk = h_alloc(8 * R * W);
    int64_t *roi = h_alloc(8 * R * 2), *rsr = h_alloc(8 * R * W);
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * W;
        const int32_t *ir = xi + r * W;
        double sm = 0, mx = -INFINITY, p = 1;
        int am = 0;
        int64_t isum = 0;
        for (int c = 0; c < W; c++) {
            sm += xr[c];
            if (xr[c] > mx) {
                mx = xr[c];
                am = c;
            }
            isum += ir[c];
            rcs[r * W + c] = sm;
            p *= xr[c];
            rcp[r * W + c] = p;
        }
        double t = 0;
        int64_t ti = 0;
        for (int c = W - 1; c >= 0; c--) {
            t += xr[c];
            ti += ir[c];
            rcr[r * W + c] = t;
            rsr[r * W + c] = ti;
        }
        for (int c = 0; c < W; c++)
            rk[r * W + c] = xr[c] - sm;
        ro[r * 4] = ro[r * 4 + 1] = sm;
        ro[r * 4 + 2] = ro[r * 4 + 3] = mx;
        roi[r * 2] = am;
        roi[r * 2 + 1] = isum;
    }
    h_check("reduce(x, 0, add), reduce(x, add), reduce((x, i), 0, amax), max", o, H_F32, ro, R * 4, 1e-5, 1e-5);
    h_check_i("reduce (v, i) index, reduce(i32, 0, add)", oi, H_I32, roi, R * 2);
    h_check("scan(x, 0, add)", cs, H_F32, rcs, R * W, 1e-5, 1e-5);
    h_check("cumsum(x, 0, reverse = true)", cr, H_F32, rcr, R * W, 1e-5, 1e-5);
    h_check("cumprod(x, 0)", cp, H_F32, rcp, R * W, 1e-30, 1e-5);
    h_check_i("scan(i32, 0, add, reverse = true)", sr, H_I32, rsr, R * W);
    h_check("sum(x, 1, keep_dims = true) broadcasts", k, H_F32, rk, R * W, 1e-5, 1e-5);

    /* tile manipulation */
    float *sl = h_array(H_F32, R * 5), *ct = h_array(H_F32, R * 42), *fl = h_array(H_F32, R * W);
    float *g = h_array(H_F32, R * W), *so = h_array(H_F32, R * W), *sd = h_array(H_F32, R * W);
    float *tv = h_array(H_F32, R * 4), *jj = h_array(H_F32, R * W), *u = h_array(H_F32, R * 5);
    int32_t *ti = h_array(H_I32, R * 4), *hh = h_array(H_I32, R * 6);
    H_LAUNCH(h_kernel(m, "tiles"), h_ten(h_t2(x, H_F32, R, W)), h_ten(h_t2(xi, H_I32, R, W)),
             h_ten(h_t2(sl, H_F32, R, 5)), h_ten(h_t2(ct, H_F32, R, 42)),
             h_ten(h_t2(fl, H_F32, R, W)), h_ten(h_t2(g, H_F32, R, W)),
             h_ten(h_t2(so, H_F32, R, W)), h_ten(h_t2(sd, H_F32, R, W)),
             h_ten(h_t2(tv, H_F32, R, 4)), h_ten(h_t2(ti, H_I32, R, 4)),
             h_ten(h_t2(hh, H_I32, R, 6)), h_ten(h_t2(jj, H_F32, R, W)),
             h_ten(h_t2(u, H_F32, R, 5)));
    double *rsl = h_alloc(8 * R * 5), *rct = h_alloc(8 * R * 42), *rfl = h_alloc(8 * R * W);
    double *rg = h_alloc(8 * R * W), *rso = h_alloc(8 * R * W), *rsd = h_alloc(8 * R * W);
    double *rtv = h_alloc(8 * R * 4), *rj = h_alloc(8 * R * W), *ru = h_alloc(8 * R * 5);
    int64_t *rti = h_alloc(8 * R * 4), *rh = h_alloc(8 * R * 6);
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * W;
        for (int c = 0; c < 5; c++) {
            rsl[r * 5 + c] = xr[30 + c];
            double a = 0;
            for (int q = 0; q < 30; q += 5)
                a += xr[q + c];
            ru[r * 5 + c] = a;
        }
        for (int c = 0; c < 42; c++)
            rct[r * 42 + c] = c < W ? xr[c] : xr[2 + c - W];
        float sorted[W];
        memcpy(sorted, xr, sizeof sorted);
        qsort(sorted, W, sizeof(float), cmpf);
        for (int c = 0; c < W; c++) {
            rfl[r * W + c] = xr[W - 1 - c];
            rg[r * W + c] = xr[(c * 7) % W];
            rso[r * W + c] = sorted[c];
            rsd[r * W + c] = sorted[W - 1 - c];
            rj[r * W + c] = xr[c];
        }
        bool used[W] = {false};
        for (int q = 0; q < 4; q++) { /* largest first, ties -> lower index */
            int best = -1;
            for (int c = 0; c < W; c++)
                if (!used[c] && (best < 0 || xr[c] > xr[best]))
                    best = c;
            used[best] = true;
            rtv[r * 4 + q] = xr[best];
            rti[r * 4 + q] = best;
        }
        for (int b = 0; b < 6; b++) {
            rh[r * 6 + b] = 0;
            for (int c = 0; c < W; c++)
                rh[r * 6 + b] += xi[r * W + c] == b;
        }
    }
    h_check("slice(x, 0, 30, 5)", sl, H_F32, rsl, R * 5, 0, 0);
    h_check("cat(x, slice(x, 0, 2, 5), 0)", ct, H_F32, rct, R * 42, 0, 0);
    h_check("flip(x, 0)", fl, H_F32, rfl, R * W, 0, 0);
    h_check("gather(x, (i * 7) % W, 0)", g, H_F32, rg, R * W, 0, 0);
    h_check("sort(x, 0) with ties", so, H_F32, rso, R * W, 0, 0);
    h_check("sort(x, 0, descending = true)", sd, H_F32, rsd, R * W, 0, 0);
    h_check("topk(x, 4, 0) values", tv, H_F32, rtv, R * 4, 0, 0);
    h_check_i("topk(x, 4, 0) indices", ti, H_I32, rti, R * 4);
    h_check_i("histogram(i, 6) ignores -1, 6, 7", hh, H_I32, rh, R * 6);
    h_check("let a, b = unjoin(join(x, 2x)): b - a", jj, H_F32, rj, R * W, 1e-6, 1e-6);
    h_check("for k in 0 .. 30 step 5 unroll { acc += slice(x, 0, k, 5) }", u, H_F32, ru, R * 5, 1e-5, 1e-5);
    return h_done();
}
