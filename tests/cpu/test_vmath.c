/* test_vmath.c — the CPU backend's inline vectorizable math (vmath.c) and
 * vectorized reductions (tile.c), through the whole pipeline:
 *   - f32 exp exp2 log log2 sigmoid tanh: ulp error against a double libm
 *     reference over a sweep of every 331st float bit pattern (both signs,
 *     ~13M points) plus edge cases (0, -0, denormals, +-inf, NaN, +-88.7,
 *     +-103, overflow/underflow thresholds); bounds exp/exp2 <= 1 ulp, the
 *     rest <= 4 ulp;
 *   - f32 exp and exp2 alone over a denser sweep of the inputs whose
 *     results are finite and not zero (every 61st bit pattern of [-104, 89]
 *     and of [-151, 129], both signs; subnormal results included, ulps
 *     there being 2^-149): <= 1 ulp, and around it the specials (-inf, +inf,
 *     NaN, first overflow, last underflow to 0);
 *   - f64 exp exp2 sigmoid tanh: <= 4 ulp against long double libm over
 *     dense linear sweeps, random points and edge cases;
 *   - the AVX-512 vscalef scaling bit for bit against the two-factor one
 *     (BLKC_CPU_NOAVX512=1), f32 and f64;
 *   - sum/max/min/argmax/argmin of f32 and f64 rows (odd lengths, shorter
 *     and longer than the vector accumulator) with NaN in the vector part
 *     and in the tail, +-inf, ties (lowest index wins), plus axis reductions.
 * `test_vmath -v` prints the max ulp error per function. */
#include "harness.h"

#include <float.h>

static int verbose;

static const char *src32 =
    "kernel m32<BLOCK = 1024>(X: f32[N], O: f32[6, N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    O[0, o +: BLOCK] = exp(x);\n"
    "    O[1, o +: BLOCK] = exp2(x);\n"
    "    O[2, o +: BLOCK] = log(x);\n"
    "    O[3, o +: BLOCK] = log2(x);\n"
    "    O[4, o +: BLOCK] = sigmoid(x);\n"
    "    O[5, o +: BLOCK] = tanh(x);\n"
    "}\n";

static const char *src64 =
    "kernel m64<BLOCK = 1024>(X: f64[N], O: f64[6, N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    O[0, o +: BLOCK] = exp(x);\n"
    "    O[1, o +: BLOCK] = exp2(x);\n"
    "    O[2, o +: BLOCK] = log(x);\n"
    "    O[3, o +: BLOCK] = log2(x);\n"
    "    O[4, o +: BLOCK] = sigmoid(x);\n"
    "    O[5, o +: BLOCK] = tanh(x);\n"
    "}\n";

static const char *names[6] = {"exp", "exp2", "log", "log2", "sigmoid", "tanh"};
static const double bound32[6] = {1, 1, 4, 4, 4, 4};
static const double bound64[6] = {4, 4, 4, 4, 4, 4};

static long double ref(int f, long double x)
{
    switch (f) {
    case 0: return expl(x);
    case 1: return exp2l(x);
    case 2: return logl(x);
    case 3: return log2l(x);
    case 4: return 1.0L / (1.0L + expl(-x));
    default: return tanhl(x);
    }
}

/* error of got in units of the last place of the (exact) reference, for a
 * format with p mantissa bits and minimum exponent emin; inf counts as
 * 2^(emax+1) so an overflow one ulp early costs ~1 ulp. NaN/inf mismatches
 * give 1e9. */
static double ulp_err(long double got, long double r, int p, int emin, int emax)
{
    if (isnan(r) || isnan(got))
        return isnan(r) && isnan(got) ? 0 : 1e9;
    long double big = ldexpl(1.0L, emax + 1);
    if (isinf(r) && isinf(got))
        return !signbit(r) == !signbit(got) ? 0 : 1e9;
    if (fabsl(got) >= big)
        got = copysignl(big, got);
    if (fabsl(r) >= big)
        r = copysignl(big, r);
    long double a = fabsl(r);
    int e = a > 0 ? ilogbl(a) : emin;
    if (e < emin)
        e = emin;
    long double ulp = ldexpl(1.0L, e - (p - 1));
    return (double)(fabsl(got - r) / ulp);
}

static double refd(int f, double x)
{
    switch (f) {
    case 0: return exp(x);
    case 1: return exp2(x);
    case 2: return log(x);
    case 3: return log2(x);
    case 4: return 1.0 / (1.0 + exp(-x));
    default: return tanh(x);
    }
}

/* ulp_err for f32 results against a double reference */
static double ulp_errf(float got, double r)
{
    if (isnan(r) || isnan(got))
        return isnan(r) && isnan(got) ? 0 : 1e9;
    const double big = 0x1p128;
    if (isinf(r) && isinf(got))
        return !signbit(r) == !signbit(got) ? 0 : 1e9;
    double gd = got;
    if (fabs(gd) >= big)
        gd = copysign(big, gd);
    if (fabs(r) >= big)
        r = copysign(big, r);
    double a = fabs(r);
    int e = a > 0 ? ilogb(a) : -126;
    if (e < -126)
        e = -126;
    return fabs(gd - r) / ldexp(1.0, e - 23);
}

typedef struct Stat { double max; double at; } Stat;

static void run32(blkc_kernel *k, float *x, float *o, size_t n, Stat *st)
{
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, (int64_t)n)), h_ten(h_t2(o, H_F32, 6, (int64_t)n)));
    for (int f = 0; f < 6; f++)
        for (size_t i = 0; i < n; i++) {
            double e = ulp_errf(o[f * n + i], refd(f, x[i]));
            if (e >= 1e9 && verbose > 1) printf("DBG f=%d x=%a got=%a\n", f, x[i], o[f * n + i]);
            if (e > st[f].max) {
                st[f].max = e;
                st[f].at = x[i];
            }
        }
}

static void run64(blkc_kernel *k, double *x, double *o, size_t n, Stat *st)
{
    H_LAUNCH(k, h_ten(h_t1(x, H_F64, (int64_t)n)), h_ten(h_t2(o, H_F64, 6, (int64_t)n)));
    for (int f = 0; f < 6; f++) {
        if (f == 2 || f == 3)
            continue; /* f64 log/log2 are libm calls */
        for (size_t i = 0; i < n; i++) {
            double e = ulp_err(o[f * n + i], ref(f, x[i]), 53, -1022, 1023);
            if (e > st[f].max) {
                st[f].max = e;
                st[f].at = x[i];
            }
        }
    }
}

static const double edges[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-45, -1e-45, 1e-40, -1e-40, 1.17549435e-38,
    -1.17549435e-38, 88.7, -88.7, 88.72283, 88.72284, 88.8, -87.33, -87.34,
    103.0, -103.0, -103.97, -103.98, -104.0, -150.0, -149.0, -126.0, 127.0, 127.99,
    128.0, 129.0, 0.625, -0.625, 0.6249, 1e-8, -1e-8, 9.0, -9.0, 20.0, -20.0,
    709.78, 709.79, -708.4, -745.1, -745.2, -1074.0, -1075.0, 1023.9, 1024.0,
    1e300, -1e300, 3.4e38, -3.4e38, 1.0 / 0.0, -1.0 / 0.0,
};

static void test_f32(void)
{
    blkc_kernel *k = h_build(src32, NULL);
    enum { N = 1 << 20 };
    float *x = h_array(H_F32, N);
    float *o = h_array(H_F32, 6 * (size_t)N);
    Stat st[6];
    memset(st, 0, sizeof st);
    /* edge cases */
    size_t ne = sizeof edges / sizeof edges[0];
    for (size_t i = 0; i < ne; i++)
        x[i] = (float)edges[i];
    x[ne] = NAN;
    x[ne + 1] = -NAN;
    run32(k, x, o, ne + 2, st);
    /* exact special values */
    h_ok(o[0 * (ne + 2) + 0] == 1.0f && o[1 * (ne + 2) + 0] == 1.0f, "exp(0) = exp2(0) = 1");
    /* sweep every 97th bit pattern */
    uint64_t bits = 0;
    while (bits < 0x100000000ull) {
        size_t n = 0;
        for (; n < N && bits < 0x100000000ull; n++, bits += 331) {
            uint32_t u = (uint32_t)bits;
            memcpy(&x[n], &u, 4);
        }
        run32(k, x, o, n, st);
    }
    for (int f = 0; f < 6; f++) {
        if (verbose)
            printf("f32 %-8s max %.3f ulp at %.9g\n", names[f], st[f].max, st[f].at);
        h_ok(st[f].max <= bound32[f], "f32 %s: max error %.3f ulp at %.9g (bound %g)",
             names[f], st[f].max, st[f].at, bound32[f]);
    }
    /* the specials exactly */
    float sx[] = {-1.0f / 0.0f, 1.0f / 0.0f, NAN, -200.0f, 200.0f, 0.0f, -1.0f};
    run32(k, sx, o, 7, st);
    const size_t n = 7;
    h_ok(o[0] == 0 && isinf(o[1]) && o[1] > 0 && isnan(o[2]) && o[3] == 0 && isinf(o[4]),
         "f32 exp(-inf)=0, exp(inf)=inf, exp(NaN)=NaN, underflow 0, overflow inf");
    h_ok(o[n] == 0 && isinf(o[n + 1]) && isnan(o[n + 2]), "f32 exp2 specials");
    h_ok(isnan(o[2 * n]) && isinf(o[2 * n + 1]) && isnan(o[2 * n + 2]) &&
             isinf(o[2 * n + 5]) && o[2 * n + 5] < 0 && isnan(o[2 * n + 6]),
         "f32 log(-inf)=NaN, log(inf)=inf, log(0)=-inf, log(-1)=NaN");
    h_ok(o[4 * n] == 0 && o[4 * n + 1] == 1 && isnan(o[4 * n + 2]) && o[4 * n + 5] == 0.5f,
         "f32 sigmoid specials");
    h_ok(o[5 * n] == -1 && o[5 * n + 1] == 1 && isnan(o[5 * n + 2]) && o[5 * n + 5] == 0 &&
             !signbit(o[5 * n + 5]),
         "f32 tanh specials");
    float mz = -0.0f;
    run32(k, &mz, o, 1, st);
    h_ok(signbit(o[5]) && o[5] == 0, "f32 tanh(-0) = -0");
}

static const char *srcexp =
    "kernel e32<BLOCK = 1024>(X: f32[N], O: f32[2, N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    O[0, o +: BLOCK] = exp(x);\n"
    "    O[1, o +: BLOCK] = exp2(x);\n"
    "}\n";

/* exp and exp2 where their results are finite and nonzero, every 61st bit
 * pattern (~6.7e7 inputs): the bound the vmath.c comment states, 1 ulp,
 * for normal and subnormal results alike (exp's subnormal results are
 * x < -87.34, exp2's x < -126). */
static void test_exp_dense(void)
{
    blkc_kernel *k = h_build(srcexp, NULL);
    enum { N = 1 << 20 };
    float *x = h_array(H_F32, N), *o = h_array(H_F32, 2 * (size_t)N);
    static const float lim[2][2] = {{-104.0f, 89.0f}, {-151.0f, 129.0f}};
    Stat st[2] = {{0, 0}, {0, 0}};
    size_t total = 0;
    for (int f = 0; f < 2; f++)
        for (int sign = 0; sign < 2; sign++) {
            float l = sign ? -lim[f][0] : lim[f][1];
            uint32_t end;
            memcpy(&end, &l, 4);
            uint64_t u = 0;
            while (u <= end) {
                size_t n = 0;
                for (; n < N && u <= end; n++, u += 61) {
                    uint32_t b = (uint32_t)u | (sign ? 0x80000000u : 0);
                    memcpy(&x[n], &b, 4);
                }
                H_LAUNCH(k, h_ten(h_t1(x, H_F32, (int64_t)n)),
                         h_ten(h_t2(o, H_F32, 2, (int64_t)n)));
                for (size_t i = 0; i < n; i++) {
                    double e = ulp_errf(o[f * n + i], f ? exp2((double)x[i]) : exp((double)x[i]));
                    if (e > st[f].max) {
                        st[f].max = e;
                        st[f].at = x[i];
                    }
                }
                total += n;
            }
        }
    for (int f = 0; f < 2; f++) {
        if (verbose)
            printf("f32 %-8s dense: max %.3f ulp at %a\n", names[f], st[f].max, st[f].at);
        h_ok(st[f].max <= 1.0, "f32 %s dense sweep: max error %.3f ulp at %a (bound 1)",
             names[f], st[f].max, st[f].at);
    }
    h_ok(total > 60000000, "f32 exp dense sweep: %zu inputs", total);
    /* the specials and the ends of the range: exp overflows past
     * 88.7228394 (ln(FLT_MAX) rounded up is 88.72284), its last nonzero
     * result is 2^-149 at -103.972 (2^-150 rounds to even, 0) */
    float sx[] = {-INFINITY, INFINITY, NAN, 88.7228317f, 88.7228394f, -103.972076f,
                  -103.972084f, -150.0f, 128.0f, 127.999992f, -149.0f, -150.1f};
    enum { NS = sizeof sx / sizeof sx[0] };
    H_LAUNCH(k, h_ten(h_t1(sx, H_F32, NS)), h_ten(h_t2(o, H_F32, 2, NS)));
    h_ok(o[0] == 0 && !signbit(o[0]) && isinf(o[1]) && o[1] > 0 && isnan(o[2]),
         "f32 exp(-inf) = +0, exp(inf) = inf, exp(NaN) = NaN");
    h_ok(isfinite(o[3]) && isinf(o[4]), "f32 exp: %a finite, %a overflows (got %a, %a)",
         sx[3], sx[4], o[3], o[4]);
    h_ok(o[5] == 0x1p-149f && o[6] == 0, "f32 exp: %a -> 2^-149, %a -> 0 (got %a, %a)",
         sx[5], sx[6], o[5], o[6]);
    h_ok(o[NS + 0] == 0 && isinf(o[NS + 1]) && isnan(o[NS + 2]) && o[NS + 7] == 0 &&
             isinf(o[NS + 8]) && isfinite(o[NS + 9]) && o[NS + 10] == 0x1p-149f &&
             o[NS + 11] == 0,
         "f32 exp2 specials and ends: -inf 0, inf inf, NaN, -150 0, 128 inf, "
         "127.99999 finite, -149 2^-149, -150.1 0 (got %a %a %a %a %a %a %a %a)",
         o[NS], o[NS + 1], o[NS + 2], o[NS + 7], o[NS + 8], o[NS + 9], o[NS + 10], o[NS + 11]);
}

static void test_f64(void)
{
    blkc_kernel *k = h_build(src64, NULL);
    enum { N = 1 << 19 };
    double *x = h_array(H_F64, N);
    double *o = h_array(H_F64, 6 * (size_t)N);
    Stat st[6];
    memset(st, 0, sizeof st);
    size_t ne = sizeof edges / sizeof edges[0];
    for (size_t i = 0; i < ne; i++)
        x[i] = edges[i];
    x[ne] = NAN;
    run64(k, x, o, ne + 1, st);
    /* dense linear sweeps and log-spaced magnitudes */
    static const double range[][2] = {{-750, 712}, {-1080, 1030}, {-2, 2}, {-0.7, 0.7}};
    for (int r = 0; r < 4; r++) {
        for (int i = 0; i < N; i++)
            x[i] = range[r][0] + (range[r][1] - range[r][0]) * ((double)i + 0.37) / N;
        run64(k, x, o, N, st);
    }
    h_seed(7);
    for (int i = 0; i < N; i++)
        x[i] = (h_randi(0, 1) ? -1 : 1) * ldexp(h_randu(0.5, 1.0), (int)h_randi(-1074, 12));
    run64(k, x, o, N, st);
    for (int f = 0; f < 6; f++) {
        if (f == 2 || f == 3)
            continue;
        if (verbose)
            printf("f64 %-8s max %.3f ulp at %.17g\n", names[f], st[f].max, st[f].at);
        h_ok(st[f].max <= bound64[f], "f64 %s: max error %.3f ulp at %.17g (bound %g)",
             names[f], st[f].max, st[f].at, bound64[f]);
    }
    double sx[] = {-1.0 / 0.0, 1.0 / 0.0, NAN, -800.0, 800.0};
    run64(k, sx, o, 5, st);
    h_ok(o[0] == 0 && isinf(o[1]) && isnan(o[2]) && o[3] == 0 && isinf(o[4]),
         "f64 exp specials");
    h_ok(o[5] == 0 && isinf(o[6]) && isnan(o[7]), "f64 exp2 specials");
    h_ok(o[25] == -1 && o[26] == 1 && isnan(o[27]), "f64 tanh specials");
}

/* ------------------------------------------------------------ reductions */

static const char *srcred =
    "kernel red<C = 1037>(X: f32[R, C], D: f64[R, C], O: f32[R, 3], P: f64[R, 3],\n"
    "        A: i32[R, 4]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    let x = X[r, :];\n"
    "    let d = D[r, :];\n"
    "    O[r, 0] = sum(x);\n"
    "    O[r, 1] = max(x);\n"
    "    O[r, 2] = min(x);\n"
    "    P[r, 0] = sum(d);\n"
    "    P[r, 1] = max(d);\n"
    "    P[r, 2] = min(d);\n"
    "    A[r, 0] = argmax(x);\n"
    "    A[r, 1] = argmin(x);\n"
    "    A[r, 2] = argmax(d);\n"
    "    A[r, 3] = argmin(d);\n"
    "}\n";

static const char *srcaxis =
    "kernel rax<RB = 7, CB = 67>(X: f32[B, RB, CB], S0: f32[B, CB], S1: f32[B, RB],\n"
    "        M1: f32[B, RB], N0: f32[B, CB]) grid(B) {\n"
    "    let b = program_id(0);\n"
    "    let x = X[b, :, :];\n"
    "    S0[b, :] = sum(x, 0);\n"
    "    S1[b, :] = sum(x, 1);\n"
    "    M1[b, :] = max(x, 1);\n"
    "    N0[b, :] = min(x, 0);\n"
    "}\n";

enum { NROW = 8 };

static void fill_row(int r, int c, double *v)
{
    for (int j = 0; j < c; j++)
        v[j] = h_randu(-1, 1);
    switch (r) {
    case 1: v[c - 1] = NAN; break;              /* NaN in the tail */
    case 2: v[c > 3 ? 3 : 0] = NAN; break;      /* NaN in the vector part */
    case 3: for (int j = 0; j < c; j++) v[j] = 2.5; break; /* all ties */
    case 4: v[c / 2] = 1.0 / 0.0; v[c / 3] = -1.0 / 0.0; break;
    case 5: for (int j = 0; j < c; j++) v[j] = (double)h_randi(0, 3); break;
    case 6: v[0] = NAN; break;                  /* NaN first */
    case 7: v[c / 2] = 1e30; v[c / 2 + 1] = -1e30; break; /* cancellation */
    default: break;
    }
}

static void test_reduce(int c)
{
    char def[32];
    snprintf(def, sizeof def, "C=%d", c);
    const char *defs[] = {def, NULL};
    blkc_kernel *k = h_build(srcred, defs);
    float *x = h_array(H_F32, (size_t)NROW * c);
    double *d = h_array(H_F64, (size_t)NROW * c), *v = h_array(H_F64, (size_t)c);
    float *o = h_array(H_F32, NROW * 3);
    double *p = h_array(H_F64, NROW * 3);
    int32_t *a = h_array(H_I32, NROW * 4);
    double ro[NROW * 3], rp[NROW * 3];
    int64_t ra[NROW * 4];
    for (int r = 0; r < NROW; r++) {
        fill_row(r, c, v);
        double s32 = 0, s64 = 0, abs32 = 0, abs64 = 0;
        int nan = 0;
        for (int j = 0; j < c; j++) {
            x[r * c + j] = (float)v[j];
            d[r * c + j] = v[j];
            s32 += (float)v[j];
            s64 += v[j];
            abs32 += fabs((float)v[j]);
            abs64 += fabs(v[j]);
            nan |= isnan(v[j]);
        }
        (void)abs32; (void)abs64;
        double mx = -1.0 / 0.0, mn = 1.0 / 0.0, mx64 = mx, mn64 = mn;
        int amx = 0, amn = 0;
        for (int j = 0; j < c; j++) {
            mx = fmax(mx, x[r * c + j]);
            mn = fmin(mn, x[r * c + j]);
            mx64 = fmax(mx64, v[j]);
            mn64 = fmin(mn64, v[j]);
            /* NaN counts as the largest value; ties -> lowest index */
            double b = v[amx], w = v[j];
            if ((w > b) || (isnan(w) && !isnan(b)))
                amx = j;
            double bn = v[amn];
            if ((w < bn) || (isnan(bn) && !isnan(w)))
                amn = j;
        }
        ro[r * 3] = nan ? NAN : s32;
        ro[r * 3 + 1] = nan ? NAN : mx;
        ro[r * 3 + 2] = nan ? NAN : mn;
        rp[r * 3] = nan ? NAN : s64;
        rp[r * 3 + 1] = nan ? NAN : mx64;
        rp[r * 3 + 2] = nan ? NAN : mn64;
        ra[r * 4] = ra[r * 4 + 2] = amx;
        ra[r * 4 + 1] = ra[r * 4 + 3] = amn;
    }
    H_LAUNCH(k, h_ten(h_t2(x, H_F32, NROW, c)), h_ten(h_t2(d, H_F64, NROW, c)),
             h_ten(h_t2(o, H_F32, NROW, 3)), h_ten(h_t2(p, H_F64, NROW, 3)),
             h_ten(h_t2(a, H_I32, NROW, 4)));
    char what[96];
    /* max/min exact; sums within a tolerance scaled to c (the vectorized
     * sum is reassociated); row 7's sum (1e30 - 1e30 absorbs the small
     * terms in an order-dependent way) is not compared */
    for (int r = 0; r < NROW; r++) {
        snprintf(what, sizeof what, "C=%d row %d f32 sum/max/min", c, r);
        double tol[3] = {1e-5 * c, 0, 0};
        bool ok = true;
        for (int q = 0; q < 3; q++) {
            double g = o[r * 3 + q], w = ro[r * 3 + q];
            if (isnan(w) ? !isnan(g) : (r == 7 && q == 0) ? false : fabs(g - w) > tol[q])
                ok = false;
        }
        h_ok(ok, "%s: got %g %g %g want %g %g %g", what, o[r * 3], o[r * 3 + 1],
             o[r * 3 + 2], ro[r * 3], ro[r * 3 + 1], ro[r * 3 + 2]);
        snprintf(what, sizeof what, "C=%d row %d f64 sum/max/min", c, r);
        ok = true;
        for (int q = 0; q < 3; q++) {
            double g = p[r * 3 + q], w = rp[r * 3 + q];
            double t = q == 0 ? 1e-12 * c : 0;
            if (isnan(w) ? !isnan(g) : (r == 7 && q == 0) ? false : fabs(g - w) > t)
                ok = false;
        }
        h_ok(ok, "%s: got %g %g %g want %g %g %g", what, p[r * 3], p[r * 3 + 1],
             p[r * 3 + 2], rp[r * 3], rp[r * 3 + 1], rp[r * 3 + 2]);
    }
    snprintf(what, sizeof what, "C=%d argmax/argmin f32 and f64 (ties -> lowest)", c);
    h_check_i(what, a, H_I32, ra, NROW * 4);
}

static void test_axis(void)
{
    enum { B = 3, RB = 7, CB = 67 };
    blkc_kernel *k = h_build(srcaxis, NULL);
    float *x = h_array(H_F32, B * RB * CB);
    float *s0 = h_array(H_F32, B * CB), *s1 = h_array(H_F32, B * RB);
    float *m1 = h_array(H_F32, B * RB), *n0 = h_array(H_F32, B * CB);
    h_seed(3);
    for (int i = 0; i < B * RB * CB; i++)
        x[i] = (float)h_randu(-1, 1);
    x[1 * RB * CB + 2 * CB + 66] = NAN; /* b=1, row 2, last column */
    H_LAUNCH(k, h_ten(h_t3(x, H_F32, B, RB, CB)), h_ten(h_t2(s0, H_F32, B, CB)),
             h_ten(h_t2(s1, H_F32, B, RB)), h_ten(h_t2(m1, H_F32, B, RB)),
             h_ten(h_t2(n0, H_F32, B, CB)));
    double rs0[B * CB], rs1[B * RB], rm1[B * RB], rn0[B * CB];
    for (int b = 0; b < B; b++) {
        for (int c = 0; c < CB; c++) {
            double s = 0, mn = 1.0 / 0.0;
            int nan = 0;
            for (int r = 0; r < RB; r++) {
                float v = x[(b * RB + r) * CB + c];
                s += v;
                mn = fmin(mn, v);
                nan |= isnan(v);
            }
            rs0[b * CB + c] = nan ? NAN : s;
            rn0[b * CB + c] = nan ? NAN : mn;
        }
        for (int r = 0; r < RB; r++) {
            double s = 0, mx = -1.0 / 0.0;
            int nan = 0;
            for (int c = 0; c < CB; c++) {
                float v = x[(b * RB + r) * CB + c];
                s += v;
                mx = fmax(mx, v);
                nan |= isnan(v);
            }
            rs1[b * RB + r] = nan ? NAN : s;
            rm1[b * RB + r] = nan ? NAN : mx;
        }
    }
    h_check("sum(x, 0)", s0, H_F32, rs0, B * CB, 1e-5, 1e-5);
    h_check("sum(x, 1)", s1, H_F32, rs1, B * RB, 1e-5, 1e-5);
    h_check("max(x, 1) with NaN", m1, H_F32, rm1, B * RB, 0, 0);
    h_check("min(x, 0) with NaN", n0, H_F32, rn0, B * CB, 0, 0);
}

/* On AVX-512 hosts exp/exp2 (and sigmoid/tanh through exp) scale by 2^n
 * with vscalefps/pd (vmath.c); BLKC_CPU_NOAVX512=1 compiles the two
 * exact power-of-two factors instead. Both round once, so every result
 * must be the same bits (NaN: any NaN), around the overflow and subnormal
 * thresholds most of all. (Elsewhere both modules take the same path.) */
static void test_scalef_bits(void)
{
    enum { N = 1 << 18 };
    float *x = h_array(H_F32, N), *o = h_array(H_F32, 6 * (size_t)N);
    float *o0 = h_array(H_F32, 6 * (size_t)N);
    double *xd = h_array(H_F64, N), *od = h_array(H_F64, 6 * (size_t)N);
    double *od0 = h_array(H_F64, 6 * (size_t)N);
    size_t ne = sizeof edges / sizeof edges[0];
    for (size_t i = 0; i < N; i++) {
        /* half a sweep of [-160, 140], half the subnormal / overflow ends */
        double v = i < ne ? edges[i]
                 : i % 2 ? -160.0 + 300.0 * (double)i / N
                 : i % 4 == 0 ? -87.0 - 63.0 * (double)i / N
                              : 88.0 + 41.0 * (double)i / N;
        if (i % 1024 == 1000)
            v = NAN;
        x[i] = (float)v;
        xd[i] = i % 8 == 2 ? -700.0 - 380.0 * (double)i / N
              : i % 8 == 4 ? 700.0 + 330.0 * (double)i / N : v;
    }
    blkc_kernel *k32 = h_build(src32, NULL), *k64 = h_build(src64, NULL);
    H_LAUNCH(k32, h_ten(h_t1(x, H_F32, N)), h_ten(h_t2(o, H_F32, 6, N)));
    H_LAUNCH(k64, h_ten(h_t1(xd, H_F64, N)), h_ten(h_t2(od, H_F64, 6, N)));
    setenv("BLKC_CPU_NOAVX512", "1", 1); /* read when a launch compiles */
    k32 = h_build(src32, NULL);
    k64 = h_build(src64, NULL);
    H_LAUNCH(k32, h_ten(h_t1(x, H_F32, N)), h_ten(h_t2(o0, H_F32, 6, N)));
    H_LAUNCH(k64, h_ten(h_t1(xd, H_F64, N)), h_ten(h_t2(od0, H_F64, 6, N)));
    unsetenv("BLKC_CPU_NOAVX512");
    for (int f = 0; f < 6; f++) {
        if (f == 2 || f == 3)
            continue; /* log / log2 do not scale */
        size_t bad = 0, at = 0, badd = 0, atd = 0;
        for (size_t i = 0; i < N; i++) {
            float a = o[f * (size_t)N + i], b = o0[f * (size_t)N + i];
            double c = od[f * (size_t)N + i], d = od0[f * (size_t)N + i];
            if (memcmp(&a, &b, 4) && !(isnan(a) && isnan(b)) && !bad++)
                at = i;
            if (memcmp(&c, &d, 8) && !(isnan(c) && isnan(d)) && !badd++)
                atd = i;
        }
        h_ok(!bad, "f32 %s: vscalef and two-factor scaling differ at %zu points "
             "(first x=%a: %a vs %a)", names[f], bad, x[at], o[f * (size_t)N + at],
             o0[f * (size_t)N + at]);
        h_ok(!badd, "f64 %s: vscalef and two-factor scaling differ at %zu points "
             "(first x=%a: %a vs %a)", names[f], badd, xd[atd], od[f * (size_t)N + atd],
             od0[f * (size_t)N + atd]);
    }
}

int main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v") ? 1 : argc > 1 && !strcmp(argv[1], "-vv") ? 2 : 0;
    h_seed(11);
    test_f32();
    test_exp_dense();
    test_f64();
    static const int lens[] = {5, 31, 33, 64, 1037, 4096};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        test_reduce(lens[i]);
    test_axis();
    test_scalef_bits();
    return h_done();
}
