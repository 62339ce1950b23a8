/* test_fuse.c — elementwise fusion in the CPU backend (backends/cpu/fuse.c),
 * through the whole pipeline:
 *   - f16 and bf16 chains: every op rounded to the dtype, compared bit for
 *     bit with a per-op-rounded C reference (and the test checks that an
 *     unrounded chain would differ, so it can see a lost rounding);
 *   - where / cvt / compare inside a chain; integer chains with x/0 and
 *     x%0; bool chains;
 *   - broadcasts of rows, columns and scalars inside chains (power-of-two
 *     shapes: fused; other shapes: materialized);
 *   - values with two uses (not fused) and reductions fused into their
 *     producer (sum / max / min, with and without another use, axis and
 *     whole-tile, NaN);
 *   - values defined outside a loop and used inside, var reads and writes
 *     around fused chains (a chain reading a var before a later assignment).
 * Each kernel also runs with BLKC_CPU_NOFUSE=1 (same module source, fresh
 * context and no cache): the results must be identical. */
#include "harness.h"

#include <math.h>

/* BLKC_CPU_NOFUSE is read whenever a module (or a specialized variant, at
 * its first launch) is compiled: keep it set around the unfused kernel. */
static void nofuse(int on)
{
    if (on)
        setenv("BLKC_CPU_NOFUSE", "1", 1);
    else
        unsetenv("BLKC_CPU_NOFUSE");
}

/* launch k (pass 0) or its unfused twin kn (pass 1) */
#define RUN2(pass, k, kn, ...)                                                  \
    do {                                                                       \
        nofuse(pass);                                                          \
        H_LAUNCH((pass) ? (kn) : (k), __VA_ARGS__);                            \
        nofuse(0);                                                             \
    } while (0)

/* Build kernel src with defines twice: fused and (BLKC_CPU_NOFUSE) not. */
static blkc_kernel *build2(const char *src, const char *const *defs,
                           blkc_kernel **kn)
{
    nofuse(0);
    blkc_kernel *k = h_build(src, defs);
    nofuse(1);
    /* a distinct source text so no cache returns the fused module */
    size_t n = strlen(src);
    char *s2 = malloc(n + 32);
    if (!s2)
        h_die("oom");
    snprintf(s2, n + 32, "%s// nofuse\n", src);
    *kn = h_build(s2, defs);
    nofuse(0);
    free(s2);
    return k;
}

/* ------------------------------------------------------------ f16 / bf16 */

static const char *src_half =
    "kernel half<BLOCK = 256>(X: DT[N], Y: DT[N], O: DT[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    let y = Y[o +: BLOCK];\n"
    "    O[o +: BLOCK] = (x * 3.0 + y) * 0.375 - x / (y + 2.5);\n"
    "}\n";

static float rnd(float v, bool bf) { return bf ? h_rbf16(v) : h_rf16(v); }

static void test_half(bool bf)
{
    const char *dt = bf ? "bf16" : "f16";
    char src[1024];
    size_t n = 0;
    for (const char *q = src_half; *q && n + 8 < sizeof src;) {
        if (q[0] == 'D' && q[1] == 'T') {
            n += (size_t)snprintf(src + n, sizeof src - n, "%s", dt);
            q += 2;
        } else {
            src[n++] = *q++;
        }
    }
    src[n] = 0;
    blkc_kernel *kn;
    blkc_kernel *k = build2(src, NULL, &kn);
    DLDataType T = bf ? H_BF16 : H_F16;
    enum { N = 1000 };
    void *x = h_array(T, N), *y = h_array(T, N), *o = h_array(T, N), *o2 = h_array(T, N);
    h_seed(bf ? 7 : 3);
    h_fill(x, T, N, -4, 4);
    h_fill(y, T, N, 0, 3);
    for (int pass = 0; pass < 2; pass++)
        RUN2(pass, k, kn, h_ten(h_t1(x, T, N)), h_ten(h_t1(y, T, N)),
             h_ten(h_t1(pass ? o2 : o, T, N)));
    int bad = 0, unrounded_differs = 0, badn = 0;
    for (int i = 0; i < N; i++) {
        float xv = (float)h_get(x, T, (size_t)i), yv = (float)h_get(y, T, (size_t)i);
        float a = rnd(xv * 3.0f, bf);
        float b = rnd(a + yv, bf);
        float c = rnd(b * 0.375f, bf);
        float d = rnd(yv + 2.5f, bf);
        float e = rnd(xv / d, bf);
        float r = rnd(c - e, bf);
        float u = rnd((xv * 3.0f + yv) * 0.375f - xv / (yv + 2.5f), bf);
        float got = (float)h_get(o, T, (size_t)i), got2 = (float)h_get(o2, T, (size_t)i);
        if (got != r) {
            if (bad < 5)
                fprintf(stderr, "  %s [%d]: x=%g y=%g got %g want %g\n", dt, i, xv, yv, got, r);
            bad++;
        }
        badn += got != got2;
        unrounded_differs += u != r;
    }
    h_ok(bad == 0, "%s chain rounded per op (%d mismatches)", dt, bad);
    h_ok(badn == 0, "%s chain: fused == unfused (%d mismatches)", dt, badn);
    h_ok(unrounded_differs > 0, "%s reference sensitive to per-op rounding (%d)", dt,
         unrounded_differs);
}

/* ------------------------------------------------------------ where / cvt */

static const char *src_mix =
    "kernel mix<BLOCK = 128>(X: f16[N], Z: f32[N], A: i32[N], B: i32[N],\n"
    "                        O: f32[N], P: i32[N], Q: bool[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    let z = Z[o +: BLOCK];\n"
    "    let a = A[o +: BLOCK];\n"
    "    let b = B[o +: BLOCK];\n"
    "    let t = where(x > 0.0, x * 1.5, -x);\n"
    "    O[o +: BLOCK] = (t as f32) * z + ((x + 1.0) as f32);\n"
    "    P[o +: BLOCK] = where((a & 3) == 1, a / b, a % b) * 3 - (b << 2);\n"
    "    Q[o +: BLOCK] = ((a > b) != ((a + b) < 0)) | (z > 0.5);\n"
    "}\n";

static void test_mix(void)
{
    blkc_kernel *kn;
    blkc_kernel *k = build2(src_mix, NULL, &kn);
    enum { N = 700 };
    uint16_t x[N];
    float z[N], o[N], o2[N];
    int32_t a[N], b[N], p[N], p2[N];
    uint8_t q[N], q2[N];
    h_seed(11);
    for (int i = 0; i < N; i++) {
        x[i] = h_f32_to_f16((float)h_randu(-3, 3));
        z[i] = (float)h_randu(-1, 1);
        a[i] = (int32_t)h_randi(-50, 50);
        b[i] = (int32_t)h_randi(-4, 4); /* includes 0 and -1 */
    }
    for (int pass = 0; pass < 2; pass++)
        RUN2(pass, k, kn, h_ten(h_t1(x, H_F16, N)), h_ten(h_t1(z, H_F32, N)),
                 h_ten(h_t1(a, H_I32, N)), h_ten(h_t1(b, H_I32, N)),
                 h_ten(h_t1(pass ? o2 : o, H_F32, N)), h_ten(h_t1(pass ? p2 : p, H_I32, N)),
                 h_ten(h_t1(pass ? q2 : q, H_BOOL, N)));
    int bo = 0, bp = 0, bq = 0, same = 0;
    for (int i = 0; i < N; i++) {
        float xv = h_f16_to_f32(x[i]);
        float t = xv > 0 ? h_rf16(xv * 1.5f) : -xv;
        float ro = t * z[i] + h_rf16(xv + 1.0f);
        bo += o[i] != ro;
        int32_t av = a[i], bv = b[i];
        int32_t dv = bv == 0 ? 0 : bv == -1 ? -av : av / bv;
        int32_t mv = bv == 0 || bv == -1 ? 0 : av % bv;
        int32_t rp = ((av & 3) == 1 ? dv : mv) * 3 - (int32_t)((uint32_t)bv << 2);
        bp += p[i] != rp;
        bool rq = ((av > bv) != ((av + bv) < 0)) | (z[i] > 0.5f);
        bq += (q[i] != 0) != rq;
        same += o[i] == o2[i] && p[i] == p2[i] && q[i] == q2[i];
    }
    h_ok(bo == 0, "where/cvt f16 chain into f32 (%d mismatches)", bo);
    h_ok(bp == 0, "int chain with where, x/0, x%%0, shifts (%d mismatches)", bp);
    h_ok(bq == 0, "bool chain (%d mismatches)", bq);
    h_ok(same == N, "mix: fused == unfused");
}

/* ------------------------------------------------------------ broadcasts */

static const char *src_bc =
    "kernel bc<BM = 16, BN = 64>(X: f32[M, N], V: f32[N], U: f32[M], s: f32,\n"
    "                            O: f32[M, N]) grid(cdiv(M, BM)) {\n"
    "    let r = program_id(0) * BM;\n"
    "    let x = X[r +: BM, 0 +: BN];\n"
    "    let v = V[0 +: BN];\n"
    "    let u = U[r +: BM];\n"
    "    O[r +: BM, 0 +: BN] = (x - v) * u[:, None] + v[None, :] * s + broadcast(s, BM, BN);\n"
    "}\n";

static void test_bcast(int BN)
{
    char dn[32];
    snprintf(dn, sizeof dn, "BN=%d", BN);
    blkc_kernel *kn;
    blkc_kernel *k = build2(src_bc, H_DEFS(dn), &kn);
    enum { M = 64 };
    int N = BN;
    float *x = h_array(H_F32, (size_t)M * N), *v = h_array(H_F32, (size_t)N);
    float *u = h_array(H_F32, M), *o = h_array(H_F32, (size_t)M * N);
    float *o2 = h_array(H_F32, (size_t)M * N);
    h_seed(5);
    h_fill(x, H_F32, (size_t)M * N, -1, 1);
    h_fill(v, H_F32, (size_t)N, -1, 1);
    h_fill(u, H_F32, M, -1, 1);
    float s = 0.75f;
    for (int pass = 0; pass < 2; pass++)
        RUN2(pass, k, kn, h_ten(h_t2(x, H_F32, M, N)), h_ten(h_t1(v, H_F32, N)),
                 h_ten(h_t1(u, H_F32, M)), h_flt(s), h_ten(h_t2(pass ? o2 : o, H_F32, M, N)));
    int bad = 0, diff = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float want = (x[i * N + j] - v[j]) * u[i] + v[j] * s + s;
            bad += o[i * N + j] != want;
            diff += o[i * N + j] != o2[i * N + j];
        }
    h_ok(bad == 0, "row/column/scalar broadcasts in a chain, BN=%d (%d mismatches)", BN, bad);
    h_ok(diff == 0, "broadcasts BN=%d: fused == unfused", BN);
}

/* ------------------------------------------------------------ uses, reductions */

static const char *src_red =
    "kernel red<BLOCK = 512>(X: f32[R, N], O: f32[R, N], S: f32[R, 4]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    let x = X[r, 0 +: BLOCK];\n"
    "    let t = x * 2.0 + 1.0;\n"              /* used three times: materialized */
    "    let m = max(x);\n"
    "    let e = exp(x - m);\n"                  /* sum fused, buffer kept */
    "    let se = sum(e);\n"
    "    O[r, 0 +: BLOCK] = e / se + t * t * 0.0;\n"
    "    S[r, 0] = sum(exp(x - m));\n"           /* single use: no buffer */
    "    S[r, 1] = max(x * -1.0 + 3.0);\n"
    "    S[r, 2] = min(x * 0.5);\n"
    "    S[r, 3] = sum(t);\n"
    "}\n";

static void test_reduce(void)
{
    blkc_kernel *kn;
    blkc_kernel *k = build2(src_red, NULL, &kn);
    enum { R = 5, N = 512 };
    float *x = h_array(H_F32, R * N), *o = h_array(H_F32, R * N), *o2 = h_array(H_F32, R * N);
    float s[R * 4], s2[R * 4];
    h_seed(9);
    h_fill(x, H_F32, R * N, -3, 3);
    x[3 * N + 17] = NAN; /* row 3: NaN everywhere it goes */
    x[4 * N + 510] = 7.0f; /* row 4: max in the tail of the vector part */
    for (int pass = 0; pass < 2; pass++)
        RUN2(pass, k, kn, h_ten(h_t2(x, H_F32, R, N)), h_ten(h_t2(pass ? o2 : o, H_F32, R, N)),
             h_ten(h_t2(pass ? s2 : s, H_F32, R, 4)));
    int bad = 0;
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * N;
        if (r == 3) {
            bool allnan = isnan(s[r * 4 + 0]) && isnan(s[r * 4 + 1]) && isnan(s[r * 4 + 2]) &&
                          isnan(s[r * 4 + 3]) && isnan(o[r * N]);
            h_ok(allnan, "NaN row propagates through fused sum/max/min");
            continue;
        }
        float m = -INFINITY, mx = -INFINITY, mn = INFINITY;
        double se = 0, st = 0;
        for (int i = 0; i < N; i++)
            m = fmaxf(m, xr[i]);
        for (int i = 0; i < N; i++) {
            se += exp((double)(xr[i] - m));
            st += (double)(xr[i] * 2.0f + 1.0f);
            mx = fmaxf(mx, xr[i] * -1.0f + 3.0f);
            mn = fminf(mn, xr[i] * 0.5f);
        }
        for (int i = 0; i < N; i++)
            bad += !h_close(o[r * N + i], exp((double)(xr[i] - m)) / se, 1e-6, 1e-5);
        bad += !h_close(s[r * 4 + 0], se, 0, 1e-5);
        bad += s[r * 4 + 1] != mx;
        bad += s[r * 4 + 2] != mn;
        bad += !h_close(s[r * 4 + 3], st, 1e-3, 1e-5);
    }
    h_ok(bad == 0, "fused reductions and two-use values (%d mismatches)", bad);
    int diff = 0;
    for (int i = 0; i < R * N; i++)
        diff += memcmp(&o[i], &o2[i], 4) != 0 && !(isnan(o[i]) && isnan(o2[i]));
    for (int i = 0; i < R * 4; i++)
        diff += memcmp(&s[i], &s2[i], 4) != 0 && !(isnan(s[i]) && isnan(s2[i]));
    h_ok(diff == 0, "fused reductions: bitwise equal to unfused (%d differ)", diff);
}

/* axis reductions of a 2-D fused chain, rows and whole tile */
static const char *src_red2 =
    "kernel red2<BM = 8, BN = 64>(X: f32[M, N], O: f32[M], P: f32[1]) grid(1) {\n"
    "    let x = X[0 +: BM, 0 +: BN];\n"
    "    O[0 +: BM] = sum(x * x - 0.25, 1);\n"
    "    P[0] = sum(x * 3.0);\n"
    "}\n";

static void test_reduce2(void)
{
    blkc_kernel *kn;
    blkc_kernel *k = build2(src_red2, NULL, &kn);
    enum { M = 8, N = 64 };
    float x[M * N], o[M], o2[M], p[1], p2[1];
    h_seed(13);
    h_fill(x, H_F32, M * N, -2, 2);
    for (int pass = 0; pass < 2; pass++)
        RUN2(pass, k, kn, h_ten(h_t2(x, H_F32, M, N)), h_ten(h_t1(pass ? o2 : o, H_F32, M)),
                 h_ten(h_t1(pass ? p2 : p, H_F32, 1)));
    int bad = 0;
    double tot = 0;
    for (int i = 0; i < M; i++) {
        double s = 0;
        for (int j = 0; j < N; j++) {
            s += (double)(x[i * N + j] * x[i * N + j] - 0.25f);
            tot += (double)(x[i * N + j] * 3.0f);
        }
        bad += !h_close(o[i], s, 1e-5, 1e-5);
    }
    bad += !h_close(p[0], tot, 1e-4, 1e-5);
    h_ok(bad == 0, "axis / whole-tile sums of fused chains (%d bad)", bad);
    h_ok(!memcmp(o, o2, sizeof o) && !memcmp(p, p2, sizeof p),
         "axis sums: fused == unfused bitwise");
}

/* ------------------------------------------------------------ loops, vars */

static const char *src_loop =
    "kernel lp<BLOCK = 128>(X: f32[N], O: f32[N], P: f32[N], K: i32) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    let s = x * 0.5;\n"                     /* used only inside the loop */
    "    var acc = x * 0.0;\n"
    "    var c = x + 1.0;\n"
    "    for i in 0 .. K {\n"
    "        let w = s + (i as f32);\n"
    "        acc = acc + w * w;\n"
    "        let v = c * 2.0;\n"                 /* reads c before it changes */
    "        c = c + 1.0;\n"
    "        acc = acc * 0.5 + exp(s - 1.0) + v * 0.125;\n"
    "    }\n"
    "    let before = acc * 3.0;\n"
    "    acc = acc + 100.0;\n"
    "    O[o +: BLOCK] = before - 1.0;\n"        /* uses the old acc */
    "    P[o +: BLOCK] = acc + c;\n"
    "}\n";

static void test_loop(void)
{
    blkc_kernel *kn;
    blkc_kernel *k = build2(src_loop, NULL, &kn);
    enum { N = 300 };
    const int K = 4;
    float x[N], o[N], p[N], o2[N], p2[N];
    h_seed(17);
    h_fill(x, H_F32, N, -2, 2);
    for (int pass = 0; pass < 2; pass++)
        RUN2(pass, k, kn, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(pass ? o2 : o, H_F32, N)),
                 h_ten(h_t1(pass ? p2 : p, H_F32, N)), h_int(K));
    int bad = 0;
    for (int j = 0; j < N; j++) {
        float s = x[j] * 0.5f, acc = x[j] * 0.0f, c = x[j] + 1.0f;
        for (int i = 0; i < K; i++) {
            float w = s + (float)i;
            acc = acc + w * w;
            float v = c * 2.0f;
            c = c + 1.0f;
            acc = acc * 0.5f + (float)exp((double)(s - 1.0f)) + v * 0.125f;
        }
        float before = acc * 3.0f;
        acc = acc + 100.0f;
        bad += !h_close(o[j], before - 1.0f, 1e-5, 1e-5);
        bad += !h_close(p[j], acc + c, 1e-5, 1e-5);
    }
    h_ok(bad == 0, "chains in loops and around var assignments (%d bad)", bad);
    h_ok(!memcmp(o, o2, sizeof o) && !memcmp(p, p2, sizeof p), "loop: fused == unfused");
}

int main(void)
{
    test_half(false);
    test_half(true);
    test_mix();
    test_bcast(64);
    test_bcast(48);
    test_reduce();
    test_reduce2();
    test_loop();
    return h_done();
}
