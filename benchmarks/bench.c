/* bench.c — blkc's CPU backend against baselines measured in the same run,
 * single-threaded (run.sh sets BLKC_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1):
 *   1. f32 GEMM 1024^3 (--gemm=MxNxK): benchmarks/gemm_f32.blk (best of a few block
 *      sizes) vs cblas_sgemm, GFLOP/s and the ratio;
 *   2. softmax over 4096 x 4096 f32 (--softmax=RxN; examples/softmax.blk,
 *      BLOCK = the power of two >= N) vs
 *      memcpy of the same bytes, GB/s (read + write) and the ratio;
 *   2b. layernorm over the same rows (examples/layernorm.blk, W and B of
 *      one row) vs memcpy of the same bytes, as softmax;
 *   3. matrix-vector product y = W x, W f32 [M, K] row-major (--matvec=MxK,
 *      default 4096x4096; the `matvec` kernel of benchmarks/decode_step.blk,
 *      best of a few block shapes) vs cblas_sgemv and vs a plain read of W
 *      (the machine's read bandwidth, same run: the fastest of 1-16
 *      streams), GB/s of W read and ratios;
 *   3a. a linear layer on 1, 4, 8, 16 tokens, Y = X W^T with W [N, K]
 *      (--linear=NxK, default 4096x4096; examples/linear.blk,
 *      best of a few block shapes) vs cblas_sgemm and vs a plain read of
 *      W, GB/s of W and ratios (--only=linear; --linear-w=bf16: W in bf16,
 *      the read of its bytes, sgemm on the same values in f32;
 *      --linear-w=kn: W f32 stored [K, N], Y = X W, `dot(X[..], W[..])`,
 *      against sgemm NoTrans / NoTrans);
 *   3b. launch cost: the decode step's rmsnorm (benchmarks/decode_step.blk,
 *      D 768, one program) by blkc_kernel_launchf against the same loop in
 *      C (this file, -O2), microseconds per call (--only=launch);
 *   4. compile time per stage of examples/matmul.blk: parse = emit("ast"),
 *      passes = emit("core") - parse, LLVM = module create - emit("core")
 *      (each the minimum of several cold runs; a unique comment defeats the
 *      JIT cache).
 * Every blkc figure alternates with its baseline within the run.
 * Usage: blkc_bench [--quick] [--only=gemm|softmax|layernorm|matvec|linear|launch|compile]
 *                   [--gemm=MxNxK] [--gemm-in=f16|bf16] [--softmax=RxN]
 *                   [--matvec=MxK] [--linear=NxK] [--linear-w=bf16|kn]
 * --gemm-in: the GEMM's A and B in f16 / bf16 (f32 accumulation and C);
 * OpenBLAS runs cblas_sgemm on the same values converted back to f32.
 * (threads: BLKC_NUM_THREADS, default 1, OpenBLAS gets the same number) */
#include <blkc/blkc.h>
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#ifdef BLKC_HAVE_CBLAS
#include <cblas.h>
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "bench: cannot open %s\n", path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) exit(1);
    fclose(f);
    return s;
}

static void die(const char *what)
{
    fprintf(stderr, "bench: %s: %s\n", what, blkc_last_error());
    exit(1);
}

/* n bytes on a 64-byte boundary, as PyTorch allocates (a large malloc is
 * 16 bytes past a page: every 64-byte load of a row would span two cache
 * lines); free() */
static void *amalloc(size_t n)
{
    return aligned_alloc(64, (n + 63) / 64 * 64);
}

static blkc_module *compile(blkc_context *ctx, const char *src, const char *const *defs, int n)
{
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.defines = defs;
    o.ndefines = n;
    blkc_module *m = NULL;
    if (blkc_module_create(ctx, src, strlen(src), &o, &m) != BLKC_OK)
        die("compile");
    return m;
}

static DLTensor tensor2(void *data, int64_t *shape, int bits, int code)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = 2;
    t.dtype.code = (uint8_t)code;
    t.dtype.bits = (uint8_t)bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

static void fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* f32 -> f16 / bf16 bits (round to nearest even; finite inputs in [-1, 1])
 * and back, for --gemm-in */
static uint16_t to16(float x, int bf)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if (bf)
        return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    uint32_t sgn = (u >> 16) & 0x8000u, e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
    if (e < 103)
        return (uint16_t)sgn; /* below half the smallest f16 subnormal */
    if (e < 113) {            /* f16 subnormal */
        m |= 0x800000u;
        int sh = (int)(126 - e);
        uint32_t h = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (h & 1u)))
            h++;
        return (uint16_t)(sgn | h);
    }
    uint32_t h = ((e - 112) << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sgn | h);
}

static float from16(uint16_t h, int bf)
{
    uint32_t u;
    if (bf) {
        u = (uint32_t)h << 16;
    } else {
        uint32_t sgn = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
        if (e == 0) {
            float f = (float)m * 0x1p-24f;
            return sgn ? -f : f;
        }
        u = sgn | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* blkc (best of the block shapes) against cblas_sgemm on M x N x K, the
 * two alternating: every repetition runs each blkc shape, then OpenBLAS;
 * the best time of each. threads: BLKC_NUM_THREADS as set by the caller
 * and the same number for OpenBLAS. */
static void bench_gemm(blkc_context *ctx, int quick, int M, int N, int K, const char *in)
{
    const int reps = quick ? 2 : 5;
    const char *thr = getenv("BLKC_NUM_THREADS");
    int nthr = thr ? atoi(thr) : 1;
    float *a = amalloc(sizeof(float) * M * K), *b = amalloc(sizeof(float) * K * N);
    float *c = amalloc(sizeof(float) * M * N), *c2 = amalloc(sizeof(float) * M * N);
    fill(a, (size_t)M * K, 1);
    fill(b, (size_t)K * N, 2);
    int bits = in ? 16 : 32, bf = in && !strcmp(in, "bf16");
    uint16_t *a16 = NULL, *b16 = NULL;
    if (in) { /* blkc reads the 16-bit values, OpenBLAS them in f32 */
        a16 = amalloc(2 * (size_t)M * K);
        b16 = amalloc(2 * (size_t)K * N);
        for (size_t i = 0; i < (size_t)M * K; i++) a[i] = from16(a16[i] = to16(a[i], bf), bf);
        for (size_t i = 0; i < (size_t)K * N; i++) b[i] = from16(b16[i] = to16(b[i], bf), bf);
    }
    int code = bf ? kDLBfloat : kDLFloat;
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    DLTensor ta = tensor2(in ? (void *)a16 : a, sa, bits, code);
    DLTensor tb = tensor2(in ? (void *)b16 : b, sb, bits, code);
    DLTensor tc = tensor2(c, sc, 32, kDLFloat);
    blkc_arg args[3];
    for (int i = 0; i < 3; i++) args[i].kind = BLKC_ARG_TENSOR;
    args[0].v.tensor = &ta; args[1].v.tensor = &tb; args[2].v.tensor = &tc;
    char *src = read_file(BLKC_SOURCE_DIR "/benchmarks/gemm_f32.blk");
    if (in) { /* A: f32[ and B: f32[ become the input dtype (C stays f32) */
        char *p = strstr(src, "A: f32["), *q = p ? strstr(p, "B: f32[") : NULL;
        char *s2 = malloc(strlen(src) + 8);
        if (!q) die("gemm_f32.blk: no A: f32[ / B: f32[");
        const char *d = bf ? "bf16" : "f16";
        sprintf(s2, "%.*sA: %s[%.*sB: %s[%s", (int)(p - src), src, d,
                (int)(q - (p + 7)), p + 7, d, q + 7);
        free(src);
        src = s2;
    }
    static const char *cfgs[][3] = {
        {"BM=64", "BN=64", "BK=32"}, {"BM=32", "BN=64", "BK=32"},
        {"BM=64", "BN=128", "BK=32"}, {"BM=32", "BN=32", "BK=64"},
        /* larger blocks: best on the 2 MB-L2 Xeon (AVX-512 8x32 register block) */
        {"BM=128", "BN=128", "BK=64"}, {"BM=256", "BN=128", "BK=64"},
        /* the Emerald Rapids VM's best at 4096x4096x1024 (round 10) */
        {"BM=256", "BN=256", "BK=32"},
    };
    enum { NCFG = sizeof cfgs / sizeof cfgs[0] };
    int ncfg = quick ? 1 : NCFG;
    blkc_module *mods[NCFG];
    blkc_kernel *ks[NCFG];
    double tk[NCFG];
    for (int i = 0; i < ncfg; i++) {
        mods[i] = compile(ctx, src, cfgs[i], 3);
        if (blkc_module_get_kernel(mods[i], "gemm_f32", &ks[i]) != BLKC_OK) die("kernel");
        if (blkc_kernel_launch(ks[i], args, 3, NULL) != BLKC_OK) die("launch");
        tk[i] = 1e30;
    }
#ifdef BLKC_HAVE_CBLAS
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(nthr);
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
#endif
    double tb_best = 1e30;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < ncfg; i++) {
            double t0 = now();
            blkc_kernel_launch(ks[i], args, 3, NULL);
            double t = now() - t0;
            if (t < tk[i]) tk[i] = t;
        }
#ifdef BLKC_HAVE_CBLAS
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f,
                    c2, N);
        double t = now() - t0;
        if (t < tb_best) tb_best = t;
#endif
    }
    double flop = 2.0 * M * N * K, best = 1e30;
    int bestc = 0;
    for (int i = 0; i < ncfg; i++) {
        printf("  blkc gemm_f32 %s %s %s: %.1f GFLOP/s\n", cfgs[i][0], cfgs[i][1], cfgs[i][2],
               flop / tk[i] * 1e-9);
        if (tk[i] < best) { best = tk[i]; bestc = i; }
        blkc_module_destroy(mods[i]);
    }
    double gf = flop / best * 1e-9;
#ifdef BLKC_HAVE_CBLAS
    double maxerr = 0;
    for (size_t i = 0; i < (size_t)M * N; i++)
        maxerr = fmax(maxerr, fabs((double)c[i] - c2[i]));
    double gb = flop / tb_best * 1e-9;
    printf("GEMM %s %dx%dx%d (%d thread%s): blkc %.1f GFLOP/s (%s %s %s), OpenBLAS %.1f GFLOP/s, "
           "ratio %.2fx (max abs diff %.1e)\n", in ? (bf ? "bf16->f32 (OpenBLAS sgemm on the same values)" : "f16->f32 (OpenBLAS sgemm on the same values)") : "f32", M, N, K, nthr, nthr == 1 ? "" : "s", gf,
           cfgs[bestc][0], cfgs[bestc][1], cfgs[bestc][2], gb, gf / gb, maxerr);
#else
    (void)tb_best;
    printf("GEMM %s %dx%dx%d (%d thread%s): blkc %.1f GFLOP/s (%s %s %s), OpenBLAS: not built "
           "(install libopenblas-dev)\n", in ? in : "f32", M, N, K, nthr, nthr == 1 ? "" : "s", gf,
           cfgs[bestc][0], cfgs[bestc][1], cfgs[bestc][2]);
#endif
    free(src); free(a); free(b); free(c); free(c2); free(a16); free(b16);
}

/* k (args) and a memcpy of x's bytes into y alternate, best of reps
 * each, in seconds; then k runs once more so y holds its result */
static void alternate(blkc_kernel *k, blkc_arg *args, int nargs, float *y, const float *x,
                      size_t bytes, int reps, double *t, double *tm)
{
    if (blkc_kernel_launch(k, args, nargs, NULL) != BLKC_OK)
        die("launch");
    *t = *tm = 1e30;
    memcpy(y, x, bytes);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        blkc_kernel_launch(k, args, nargs, NULL);
        double d = now() - t0;
        if (d < *t) *t = d;
        t0 = now();
        memcpy(y, x, bytes);
        d = now() - t0;
        if (d < *tm) *tm = d;
    }
    blkc_kernel_launch(k, args, nargs, NULL);
}

static void bench_softmax(blkc_context *ctx, int quick, int R, int C)
{
    const int reps = quick ? 3 : 10;
    size_t n = (size_t)R * C, bytes = n * sizeof(float);
    float *x = amalloc(bytes), *y = amalloc(bytes);
    fill(x, n, 3);
    memset(y, 0, bytes);
    int64_t sh[2] = {R, C};
    DLTensor tx = tensor2(x, sh, 32, kDLFloat), ty = tensor2(y, sh, 32, kDLFloat);
    blkc_arg args[2];
    args[0].kind = args[1].kind = BLKC_ARG_TENSOR;
    args[0].v.tensor = &tx; args[1].v.tensor = &ty;
    char *src = read_file(BLKC_SOURCE_DIR "/examples/softmax.blk");
    int blk = 1;
    while (blk < C) blk *= 2; /* the row in one tile; the tail reads -inf */
    char bdef[32];
    snprintf(bdef, sizeof bdef, "BLOCK=%d", blk);
    const char *defs[1] = {bdef};
    blkc_module *m = compile(ctx, src, defs, 1);
    blkc_kernel *k = NULL;
    if (blkc_module_get_kernel(m, "softmax", &k) != BLKC_OK) die("kernel");
    double t, tm;
    alternate(k, args, 2, y, x, bytes, reps, &t, &tm);
    /* check a few rows against a C reference */
    double maxerr = 0;
    for (int r = 0; r < R; r += R >= 8 ? R / 8 : 1) {
        const float *xr = x + (size_t)r * C;
        float mx = -INFINITY;
        for (int j = 0; j < C; j++) mx = fmaxf(mx, xr[j]);
        double s = 0;
        for (int j = 0; j < C; j++) s += exp((double)xr[j] - mx);
        for (int j = 0; j < C; j++)
            maxerr = fmax(maxerr, fabs(y[(size_t)r * C + j] - exp((double)xr[j] - mx) / s));
    }
    double gs = 2.0 * bytes / t * 1e-9, gm = 2.0 * bytes / tm * 1e-9;
    const char *thr = getenv("BLKC_NUM_THREADS");
    printf("softmax %dx%d f32 (%s, %s thread(s)): blkc %.2f GB/s, memcpy %.2f GB/s, ratio %.2fx "
           "(%.1f ms vs %.1f ms; max abs err %.1e)\n", R, C, bdef, thr ? thr : "1", gs, gm,
           gs / gm, t * 1e3, tm * 1e3, maxerr);
    blkc_module_destroy(m);
    free(src); free(x); free(y);
}

/* examples/layernorm.blk over the same rows, against memcpy of X's bytes
 * (the kernel reads X and writes Y; W and B stay in cache) */
static void bench_layernorm(blkc_context *ctx, int quick, int R, int C)
{
    const int reps = quick ? 3 : 10;
    size_t n = (size_t)R * C, bytes = n * sizeof(float);
    float *x = amalloc(bytes), *y = amalloc(bytes), *w = amalloc(C * sizeof(float)),
          *bb = amalloc(C * sizeof(float));
    fill(x, n, 5);
    fill(w, C, 6);
    fill(bb, C, 7);
    memset(y, 0, bytes);
    int64_t sh[2] = {R, C}, sv[1] = {C};
    DLTensor tx = tensor2(x, sh, 32, kDLFloat), ty = tensor2(y, sh, 32, kDLFloat);
    DLTensor tw = tensor2(w, sv, 32, kDLFloat), tb = tensor2(bb, sv, 32, kDLFloat);
    tw.ndim = tb.ndim = 1;
    blkc_arg args[5];
    DLTensor *ts[4] = {&tx, &tw, &tb, &ty};
    for (int i = 0; i < 4; i++) {
        args[i].kind = BLKC_ARG_TENSOR;
        args[i].v.tensor = ts[i];
    }
    args[4].kind = BLKC_ARG_FLOAT;
    args[4].v.f = 1e-5;
    char *src = read_file(BLKC_SOURCE_DIR "/examples/layernorm.blk");
    int blk = 1;
    while (blk < C) blk *= 2;
    char bdef[32];
    snprintf(bdef, sizeof bdef, "BLOCK=%d", blk);
    const char *defs[1] = {bdef};
    blkc_module *m = compile(ctx, src, defs, 1);
    blkc_kernel *k = NULL;
    if (blkc_module_get_kernel(m, "layernorm", &k) != BLKC_OK) die("kernel");
    double t, tm;
    alternate(k, args, 5, y, x, bytes, reps, &t, &tm);
    double maxerr = 0;
    for (int r = 0; r < R; r += R >= 8 ? R / 8 : 1) {
        const float *xr = x + (size_t)r * C;
        double mean = 0, var = 0;
        for (int j = 0; j < C; j++) mean += xr[j];
        mean /= C;
        for (int j = 0; j < C; j++) var += (xr[j] - mean) * (xr[j] - mean);
        double rstd = 1 / sqrt(var / C + 1e-5);
        for (int j = 0; j < C; j++)
            maxerr = fmax(maxerr, fabs(y[(size_t)r * C + j] - ((xr[j] - mean) * rstd * w[j] + bb[j])));
    }
    double gs = 2.0 * bytes / t * 1e-9, gm = 2.0 * bytes / tm * 1e-9;
    const char *thr = getenv("BLKC_NUM_THREADS");
    printf("layernorm %dx%d f32 (%s, %s thread(s)): blkc %.2f GB/s, memcpy %.2f GB/s, ratio %.2fx "
           "(%.1f ms vs %.1f ms; max abs err %.1e)\n", R, C, bdef, thr ? thr : "1", gs, gm,
           gs / gm, t * 1e3, tm * 1e3, maxerr);
    blkc_module_destroy(m);
    free(src); free(x); free(y); free(w); free(bb);
}

/* the machine's read bandwidth: a sum over p read as S streams (S
 * contiguous parts, 16 floats of each in turn, an accumulator each; GCC
 * vector extensions, so no -ffast-math is needed to vectorize). One
 * stream under-reads some hosts: on round 22's Intel Xeon 19.7 GB/s at
 * 64 MB against 30.7 with 4 (a matvec reads 8 rows at once), so
 * bench_matvec uses the fastest S of 1, 2, 4, 8, 16. */
typedef float v8f __attribute__((vector_size(32)));
enum { READ_SMAX = 16 };
static float read_all(const float *p, size_t n, int S)
{
    size_t part = n / (size_t)S / 16 * 16, i = 0;
    v8f a[READ_SMAX] = {{0}};
    for (; i < part; i += 16)
        for (int s = 0; s < S; s++) {
            v8f x0, x1;
            memcpy(&x0, p + (size_t)s * part + i, 32);
            memcpy(&x1, p + (size_t)s * part + i + 8, 32);
            a[s] += x0;
            a[s] += x1;
        }
    v8f t = {0};
    for (int s = 0; s < S; s++) t += a[s];
    float r = 0;
    for (int j = 0; j < 8; j++) r += t[j];
    for (i = part * (size_t)S; i < n; i++) r += p[i];
    return r;
}

/* the number of streams, 1 .. READ_SMAX, that reads p fastest */
static int read_streams(const float *p, size_t n)
{
    volatile float sink = 0;
    int best = 1;
    double bt = 1e30;
    for (int S = 1; S <= READ_SMAX; S *= 2)
        for (int r = 0; r < 3; r++) {
            double t0 = now();
            sink += read_all(p, n, S);
            double t = now() - t0;
            if (t < bt) { bt = t; best = S; }
        }
    (void)sink;
    return best;
}

/* What one alternating pair runs: the blkc kernel k and the library call,
 * on W [M, K] (matvec: y = W x) or X [M, K] x W [N, K]^T (linear) */
typedef struct Pair {
    blkc_kernel *k;
    const float *w, *x;
    const uint16_t *w16; /* linear: W in bf16 for blkc (w: the same values in f32), or NULL */
    float *y, *y2;
    int M, N, K; /* N = 0: the matvec */
    int kn;      /* linear: W stored [K, N] (Y = X W) */
} Pair;

static void pair_blkc(const Pair *p)
{
    if (!p->N)
        blkc_kernel_launchf(p->k, "f32[#,#] f32[#] f32[#]", p->w, p->M, p->K, p->x, p->K,
                            p->y, p->M);
    else
        blkc_kernel_launchf(p->k, p->w16 ? "f32[#,#] bf16[#,#] f32[#,#]" : "f32[#,#] f32[#,#] f32[#,#]",
                            p->x, p->M, p->K, p->w16 ? (const void *)p->w16 : p->w,
                            p->kn ? p->K : p->N, p->kn ? p->N : p->K, p->y, p->M, p->N);
}

static void pair_blas(const Pair *p)
{
#ifdef BLKC_HAVE_CBLAS
    if (!p->N)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, p->M, p->K, 1.0f, p->w, p->K, p->x, 1, 0.0f,
                    p->y2, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, p->kn ? CblasNoTrans : CblasTrans, p->M, p->N,
                    p->K, 1.0f, p->x, p->K, p->w, p->kn ? p->N : p->K, 0.0f, p->y2, p->N);
#else
    (void)p;
#endif
}

/* reps (<= 64) pairs, each: read W (rs_n streams), blkc, read W, the
 * library — both kernels start from the cache a read leaves. rr / rb: per
 * pair the read's and the library's time over blkc's; *tk, *tr, *tb: the
 * best of each. A matrix a little larger than L2 (768² f32, 2.4 MB, on
 * round 23's Xeon with 2 MB) runs faster after a read than after the other
 * kernel: the old order (blkc, read, sgemv) gave sgemv 53 GB/s against
 * 43-47 after itself, and blkc 43-45 after sgemv (benchmarks/README.md,
 * round 23) */
static void run_pairs(const Pair *p, int reps, int rs_n, double *rr, double *rb, double *tk,
                      double *tr, double *tb)
{
    size_t nw = (size_t)(p->N ? p->N : p->M) * p->K;
    const float *rw = p->w16 ? (const float *)p->w16 : p->w; /* the bytes blkc reads */
    if (p->w16)
        nw /= 2;
    volatile float sink = 0;
    *tk = *tr = *tb = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        sink += read_all(rw, nw, rs_n);
        double t1 = now(), dr = t1 - t0;
        pair_blkc(p);
        double dk = now() - t1;
        sink += read_all(rw, nw, rs_n);
        t0 = now();
        pair_blas(p);
        double db = now() - t0;
        rr[r] = dr / dk;
        rb[r] = db / dk;
        *tk = fmin(*tk, dk);
        *tr = fmin(*tr, dr);
        *tb = fmin(*tb, db);
    }
    (void)sink;
}

/* the source of benchmarks/decode_step.blk with weight dtype wt for WT */
static char *decode_src(const char *wt)
{
    char *s = read_file(BLKC_SOURCE_DIR "/benchmarks/decode_step.blk");
    size_t n = strlen(s), wl = strlen(wt);
    char *o = malloc(n * (wl + 1) + 1), *q = o;
    for (const char *p = s; *p;) {
        if (p[0] == 'W' && p[1] == 'T' && (p == s || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[2]) && p[2] != '_') {
            memcpy(q, wt, wl); q += wl; p += 2;
        } else {
            *q++ = *p++;
        }
    }
    *q = 0;
    free(s);
    return o;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* y = W x: the block shapes tried once each, then the best one alternating
 * with a plain read of W and with cblas_sgemv, REPS times; the ratios are
 * medians of the per-repetition pairs (memory bandwidth on a shared VM
 * drifts between seconds, a pair measured back to back shares it) */
static void bench_matvec(blkc_context *ctx, int quick, int M, int K)
{
    const int reps = quick ? 5 : 21;
    const char *thr = getenv("BLKC_NUM_THREADS");
    int nthr = thr ? atoi(thr) : 1;
    size_t nw = (size_t)M * K;
    float *w = amalloc(nw * sizeof(float)), *x = amalloc((size_t)K * sizeof(float));
    float *y = amalloc((size_t)M * sizeof(float)), *y2 = amalloc((size_t)M * sizeof(float));
    fill(w, nw, 5);
    fill(x, (size_t)K, 6);
    char *src = decode_src("f32");
    /* the last: all of K in one step (decode_step.c's block for K <= 2048) */
    char bkk[32];
    snprintf(bkk, sizeof bkk, "BK=%d", K);
    const char *cfgs[][2] = {{"BM=16", "BK=512"}, {"BM=8", "BK=1024"},
                             {"BM=8", "BK=4096"}, {"BM=16", "BK=2048"}, {"BM=16", bkk}};
    enum { NCFG = 5, MAXR = 64 };
    int ncfg = quick ? 1 : K <= 2048 && K != 512 && K != 1024 && K != 2048 ? NCFG : NCFG - 1;
    blkc_module *mods[NCFG];
    blkc_kernel *ks[NCFG];
    double tk[NCFG];
    for (int i = 0; i < ncfg; i++) {
        mods[i] = compile(ctx, src, cfgs[i], 2);
        if (blkc_module_get_kernel(mods[i], "matvec", &ks[i]) != BLKC_OK) die("kernel");
        tk[i] = 1e30;
        for (int r = 0; r < 3; r++) {
            double t0 = now();
            if (blkc_kernel_launchf(ks[i], "f32[#,#] f32[#] f32[#]", w, M, K, x, K, y, M) !=
                BLKC_OK)
                die("launch");
            double t = now() - t0;
            if (t < tk[i]) tk[i] = t;
        }
    }
    int bc = 0;
    for (int i = 0; i < ncfg; i++) {
        printf("  blkc matvec %s %s: %.2f GB/s\n", cfgs[i][0], cfgs[i][1], nw * 4.0 / tk[i] * 1e-9);
        if (tk[i] < tk[bc]) bc = i;
    }
    int rs_n = read_streams(w, nw); /* the read's streams */
    Pair pr = {ks[bc], w, x, NULL, y, y2, M, 0, K, 0};
    double rr[MAXR], rs[MAXR], tkb, tr, tb;
    run_pairs(&pr, reps, rs_n, rr, rs, &tkb, &tr, &tb);
    double maxerr = 0;
    for (int i = 0; i < M; i++) { /* C reference in double */
        double s = 0;
        for (int j = 0; j < K; j++) s += (double)w[(size_t)i * K + j] * x[j];
        maxerr = fmax(maxerr, fabs(y[i] - s));
    }
    printf("matvec f32 %dx%d (%d thread%s, %s %s, %d pairs): blkc %.2f GB/s (best %.3f ms), "
           "read (%d stream%s) %.2f GB/s, ratio %.2fx read", M, K, nthr, nthr == 1 ? "" : "s",
           cfgs[bc][0], cfgs[bc][1], reps, nw * 4.0 / tkb * 1e-9, tkb * 1e3, rs_n,
           rs_n == 1 ? "" : "s", nw * 4.0 / tr * 1e-9, median(rr, reps));
#ifdef BLKC_HAVE_CBLAS
    printf(", cblas_sgemv %.2f GB/s, ratio %.2fx sgemv", nw * 4.0 / tb * 1e-9, median(rs, reps));
#endif
    printf(" (medians of pairs; max abs err %.1e)\n", maxerr);
    for (int i = 0; i < ncfg; i++) blkc_module_destroy(mods[i]);
    free(src); free(w); free(x); free(y); free(y2);
}

/* A linear layer on a few tokens, Y = X W^T with W [N, K] as PyTorch
 * stores it (the batched-decode case, issue 13's skinny GEMM): the kernel
 * as a user writes it, examples/linear.blk (`dot(X[..], trans(W[..]),
 * acc)`), at M = 1, 4, 8, 16
 * rows of X, the best of a few block shapes, then alternating with a plain
 * read of W and with cblas_sgemm (RowMajor, NoTrans, Trans) on the same
 * data, REPS pairs; ratios are medians of the pairs, as in bench_matvec.
 * wt "bf16" (--linear-w=bf16): W in bf16 for blkc (f32 X, math and Y:
 * the decode step with 16-bit weights), the read of its bytes, sgemm on
 * the same values in f32. kn (--linear-w=kn): W f32 stored [K, N] (as
 * GPT-2's Conv1D weights), the kernel's `trans(W[n +: BN, k +: BK])`
 * replaced by `W[k +: BK, n +: BN]`, sgemm NoTrans / NoTrans. */
static void bench_linear(blkc_context *ctx, int quick, int N, int K, const char *wt, int kn)
{
    char *src = read_file(BLKC_SOURCE_DIR "/examples/linear.blk");
    if (kn) { /* W: f32[K, N], read as it lies */
        const char *t = "trans(W[n +: BN, k +: BK])", *d = "W: f32[N, K]";
        char *p = strstr(src, t), *q = strstr(src, d);
        if (!p || !q || q > p) die("linear.blk: no W: f32[N, K] or trans(W[n +: BN, k +: BK])");
        char *s2 = malloc(strlen(src) + 1);
        sprintf(s2, "%.*sW: f32[K, N]%.*sW[k +: BK, n +: BN]%s", (int)(q - src), src,
                (int)(p - q - strlen(d)), q + strlen(d), p + strlen(t));
        free(src);
        src = s2;
    }
    if (wt) { /* W: f32[N, K] becomes W: bf16[N, K] */
        char *p = strstr(src, "W: f32[");
        if (!p) die("linear.blk: no W: f32[");
        char *s2 = malloc(strlen(src) + 8);
        sprintf(s2, "%.*sW: bf16[%s", (int)(p - src), src, p + 7);
        free(src);
        src = s2;
    }
    static const int Ms[] = {1, 4, 8, 16};
    /* (bf16 W: the same rows of bytes, twice the elements) */
    static const char *shapes_f32[][2] = {{"BN=32", "BK=512"}, {"BN=16", "BK=1024"},
                                          {"BN=64", "BK=256"}};
    static const char *shapes_bf16[][2] = {{"BN=32", "BK=1024"}, {"BN=16", "BK=2048"},
                                           {"BN=64", "BK=512"}};
    /* (kn: wide and short tiles; a chunk of columns walks K rows of W at
     * a time, and the next chunk of the same rows comes BK rows later) */
    static const char *shapes_kn[][2] = {{"BN=2048", "BK=32"}, {"BN=1024", "BK=64"},
                                         {"BN=256", "BK=128"}};
    const char *(*shapes)[2] = wt ? shapes_bf16 : kn ? shapes_kn : shapes_f32;
    enum { NS = 3, MAXR = 64 };
    const int reps = quick ? 3 : 11;
    const char *thr = getenv("BLKC_NUM_THREADS");
    int nthr = thr ? atoi(thr) : 1;
    size_t nw = (size_t)N * K;
    float *w = amalloc(nw * sizeof(float)), *x = amalloc((size_t)16 * K * sizeof(float));
    float *y = amalloc((size_t)16 * N * sizeof(float)), *y2 = amalloc((size_t)16 * N * sizeof(float));
    if (!w || !x || !y || !y2) die("malloc");
    fill(w, nw, 7);
    fill(x, (size_t)16 * K, 8);
    uint16_t *w16 = NULL;
    if (wt) { /* blkc reads the bf16 values, OpenBLAS them in f32 */
        if (!(w16 = amalloc(2 * nw))) die("malloc");
        for (size_t i = 0; i < nw; i++) w[i] = from16(w16[i] = to16(w[i], 1), 1);
    }
    size_t wb = wt ? 2 : 4; /* bytes per element of W */
    int rs_n = wt ? read_streams((const float *)w16, nw / 2) : read_streams(w, nw);
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
        int M = Ms[mi], ns = quick ? 1 : NS;
        char bm[32];
        snprintf(bm, sizeof bm, "BM=%d", M);
        blkc_module *mods[NS];
        blkc_kernel *ks[NS];
        double tk[NS];
        int bc = 0;
        for (int i = 0; i < ns; i++) {
            const char *defs[] = {bm, shapes[i][0], shapes[i][1]};
            mods[i] = compile(ctx, src, defs, 3);
            if (blkc_module_get_kernel(mods[i], "linear", &ks[i]) != BLKC_OK) die("kernel");
            tk[i] = 1e30;
        }
        /* each shape's best of three, the shapes in turn: a spell of slow
         * memory does not pick the shape for itself (two runs of each in a
         * row once picked a 1.5x slower one) */
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < ns; i++) {
                Pair pi = {ks[i], w, x, w16, y, y2, M, N, K, kn};
                double t0 = now();
                pair_blkc(&pi);
                double t = now() - t0;
                if (t < tk[i]) tk[i] = t;
            }
        for (int i = 0; i < ns; i++)
            if (tk[i] < tk[bc]) bc = i;
        Pair pr = {ks[bc], w, x, w16, y, y2, M, N, K, kn};
        double rr[MAXR], rb[MAXR], tkb, tr, tb;
        run_pairs(&pr, reps, rs_n, rr, rb, &tkb, &tr, &tb);
        double maxerr = 0; /* C reference in double, every 61st column */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j += 61) {
                double s = 0;
                for (int c = 0; c < K; c++)
                    s += (double)x[(size_t)i * K + c] *
                         w[kn ? (size_t)c * N + j : (size_t)j * K + c];
                maxerr = fmax(maxerr, fabs(y[(size_t)i * N + j] - s));
            }
        printf("linear %s Y[%d,%d] = X W%s, W [%d, %d] (%d thread%s, %s %s %s, %d pairs): blkc "
               "%.2f GB/s of W (best %.3f ms), read (%d stream%s) %.2f GB/s, ratio %.2fx read",
               wt ? "bf16-W" : "f32", M, N, kn ? "" : "^T", kn ? K : N, kn ? N : K, nthr,
               nthr == 1 ? "" : "s", bm, shapes[bc][0],
               shapes[bc][1], reps, (double)(nw * wb) / tkb * 1e-9, tkb * 1e3, rs_n,
               rs_n == 1 ? "" : "s", (double)(nw * wb) / tr * 1e-9, median(rr, reps));
#ifdef BLKC_HAVE_CBLAS
        printf(", cblas_sgemm %.3f ms, ratio %.2fx sgemm", tb * 1e3, median(rb, reps));
#endif
        printf(" (medians of pairs; max abs err %.1e)\n", maxerr);
        for (int i = 0; i < ns; i++) blkc_module_destroy(mods[i]);
    }
    free(src); free(w); free(w16); free(x); free(y); free(y2);
}

/* the C side of bench_launch: rmsnorm of n floats */
static void c_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    float r = 1.0f / sqrtf(s / (float)n + eps);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * r * w[i];
}

/* What one small launch costs: rmsnorm over 768 floats (one program,
 * everything in L1) launched through blkc_kernel_launchf, alternated
 * with the C loop, REPS calls per round; the minimum over rounds. */
static void bench_launch(blkc_context *ctx, int quick)
{
    const char *src =
        "kernel rmsnorm<BD = 1024>(X: f32[D], W: f32[D], Y: f32[D], eps: f32) grid(1) {\n"
        "    let x = X[0 +: BD];\n"
        "    let r = rsqrt(sum(x * x) / (D as f32) + eps);\n"
        "    Y[0 +: BD] = x * r * W[0 +: BD];\n}\n";
    enum { D = 768 };
    const int reps = quick ? 2000 : 20000, rounds = quick ? 3 : 9;
    blkc_module *m = compile(ctx, src, NULL, 0);
    blkc_kernel *k = NULL;
    if (blkc_module_get_kernel(m, "rmsnorm", &k) != BLKC_OK) die("kernel");
    float *x = amalloc(D * sizeof *x), *w = amalloc(D * sizeof *w);
    float *y = amalloc(D * sizeof *y), *y2 = amalloc(D * sizeof *y2);
    if (!x || !w || !y || !y2) die("malloc");
    for (int i = 0; i < D; i++) {
        x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        w[i] = 1.0f + (float)(i % 7) / 8.0f;
    }
    double tb = 1e30, tc = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (int i = 0; i < reps; i++)
            if (blkc_kernel_launchf(k, "f32[#] f32[#] f32[#] f", x, D, w, D, y, D, 1e-5) !=
                BLKC_OK)
                die("launch");
        double t1 = now();
        for (int i = 0; i < reps; i++) {
            c_rmsnorm(y2, x, w, D, 1e-5f);
            __asm__ volatile("" : : "r"(y2) : "memory");
        }
        double t2 = now();
        if (t1 - t0 < tb) tb = t1 - t0;
        if (t2 - t1 < tc) tc = t2 - t1;
    }
    double err = 0;
    for (int i = 0; i < D; i++)
        err = fmax(err, fabs((double)y[i] - (double)y2[i]));
    printf("launch: rmsnorm D=%d by blkc_kernel_launchf %.3f us a call, the C loop %.3f us "
           "(-O2, not vectorized; best of %d rounds of %d; max abs diff %.1e)\n", D, tb / reps * 1e6,
           tc / reps * 1e6, rounds, reps, err);
    free(x); free(w); free(y); free(y2);
    blkc_module_destroy(m);
}

static void bench_compile(blkc_context *ctx, int quick)
{
    char *base = read_file(BLKC_SOURCE_DIR "/examples/matmul.blk");
    size_t bl = strlen(base);
    char *src = malloc(bl + 64);
    const int reps = quick ? 2 : 5;
    double t_ast = 1e30, t_core = 1e30, t_full = 1e30;
    static int uniq;
    for (int r = 0; r < reps; r++) {
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        char *out = NULL;
        size_t len = 0;
        snprintf(src, bl + 64, "%s\n// bench run %d %d\n", base, r, uniq++);
        double t0 = now();
        if (blkc_emit(src, strlen(src), &o, "ast", &out, &len) != BLKC_OK) die("emit ast");
        double t1 = now();
        blkc_free(out);
        snprintf(src, bl + 64, "%s\n// bench run %d %d\n", base, r, uniq++);
        double t2 = now();
        if (blkc_emit(src, strlen(src), &o, "core", &out, &len) != BLKC_OK) die("emit core");
        double t3 = now();
        blkc_free(out);
        snprintf(src, bl + 64, "%s\n// bench run %d %d\n", base, r, uniq++);
        blkc_module *m = NULL;
        double t4 = now();
        if (blkc_module_create(ctx, src, strlen(src), &o, &m) != BLKC_OK) die("compile");
        double t5 = now();
        blkc_module_destroy(m);
        if (t1 - t0 < t_ast) t_ast = t1 - t0;
        if (t3 - t2 < t_core) t_core = t3 - t2;
        if (t5 - t4 < t_full) t_full = t5 - t4;
    }
    printf("compile examples/matmul.blk: parse %.3f ms, check+lower+passes %.3f ms, "
           "LLVM (codegen + JIT) %.1f ms, total %.1f ms\n", t_ast * 1e3,
           fmax(t_core - t_ast, 0) * 1e3, fmax(t_full - t_core, 0) * 1e3, t_full * 1e3);
    free(src);
    free(base);
}

int main(int argc, char **argv)
{
    int quick = 0;
    const char *only = NULL; /* --only=gemm|softmax|layernorm|matvec|linear|launch|compile */
    int gm = 1024, gn = 1024, gk = 1024, sr = 4096, sc = 4096, mm = 4096, mk = 4096;
    int ln = 4096, lk = 4096;
    const char *gin = NULL; /* --gemm-in=f16|bf16 */
    const char *lwt = NULL; /* --linear-w=bf16 */
    int lkn = 0;            /* --linear-w=kn */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strncmp(argv[i], "--only=", 7)) only = argv[i] + 7;
        else if (!strncmp(argv[i], "--gemm=", 7) &&
                 sscanf(argv[i] + 7, "%dx%dx%d", &gm, &gn, &gk) == 3 && gm > 0 && gn > 0 &&
                 gk > 0) {}
        else if (!strcmp(argv[i], "--gemm-in=f16") || !strcmp(argv[i], "--gemm-in=bf16"))
            gin = argv[i] + 10;
        else if (!strncmp(argv[i], "--softmax=", 10) &&
                 sscanf(argv[i] + 10, "%dx%d", &sr, &sc) == 2 && sr > 0 && sc > 0 &&
                 sc <= 65536) {}
        else if (!strncmp(argv[i], "--matvec=", 9) &&
                 sscanf(argv[i] + 9, "%dx%d", &mm, &mk) == 2 && mm > 0 && mk > 0) {}
        else if (!strncmp(argv[i], "--linear=", 9) &&
                 sscanf(argv[i] + 9, "%dx%d", &ln, &lk) == 2 && ln > 0 && lk > 0) {}
        else if (!strcmp(argv[i], "--linear-w=bf16"))
            lwt = "bf16";
        else if (!strcmp(argv[i], "--linear-w=kn"))
            lkn = 1;
        else { fprintf(stderr, "usage: blkc_bench [--quick] [--only=gemm|softmax|layernorm|matvec|linear|launch|compile] [--gemm=MxNxK] [--gemm-in=f16|bf16] [--softmax=RxN] [--matvec=MxK] [--linear=NxK] [--linear-w=bf16|kn]\n"); return 2; }
    }
    setenv("BLKC_NUM_THREADS", "1", 0);
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    blkc_context *ctx = NULL;
    if (blkc_context_create("cpu", &ctx) != BLKC_OK) die("context");
    printf("blkc %s benchmarks (BLKC_NUM_THREADS=%s)\n", blkc_version(),
           getenv("BLKC_NUM_THREADS"));
#if defined(BLKC_HAVE_CBLAS) && defined(OPENBLAS_VERSION) && (defined(__x86_64__) || defined(__i386__))
    /* under some hypervisors OpenBLAS falls back to an SSE3 kernel, 3-5x
     * slower than the host's: a baseline that flatters blkc (run.sh names
     * the core from the CPU flags) */
    const char *core = openblas_get_corename();
    printf("OpenBLAS core: %s\n", core ? core : "?");
    if (core && (!strcasecmp(core, "prescott") || !strcasecmp(core, "core2") ||
                 !strcasecmp(core, "nehalem") || !strcasecmp(core, "katmai")) &&
        __builtin_cpu_supports("avx2"))
        fprintf(stderr, "blkc_bench: warning: OpenBLAS runs its %s kernel on a CPU with AVX2: "
                "its figures flatter blkc; run benchmarks/run.sh or set OPENBLAS_CORETYPE "
                "(SkylakeX, Haswell)\n", core);
#endif
    if (!only || !strcmp(only, "gemm")) bench_gemm(ctx, quick, gm, gn, gk, gin);
    if (!only || !strcmp(only, "softmax")) bench_softmax(ctx, quick, sr, sc);
    if (!only || !strcmp(only, "layernorm")) bench_layernorm(ctx, quick, sr, sc);
    if (!only || !strcmp(only, "matvec")) bench_matvec(ctx, quick, mm, mk);
    if (!only || !strcmp(only, "linear")) bench_linear(ctx, quick, ln, lk, lwt, lkn);
    if (!only || !strcmp(only, "launch")) bench_launch(ctx, quick);
    if (!only || !strcmp(only, "compile")) bench_compile(ctx, quick);
    blkc_context_destroy(ctx);
    return 0;
}
