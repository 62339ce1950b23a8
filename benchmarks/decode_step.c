/* decode_step.c — one transformer layer decoding one token (llama-style,
 * f32 weights [out, in] row-major): RMSNorm, Q/K/V matvecs (K and V written
 * into the KV cache row), RoPE, attention over T cached positions, output
 * matvec + residual, RMSNorm, SwiGLU FFN + residual. blkc runs the kernels
 * of benchmarks/decode_step.blk through libblkc (blkc_kernel_launchf,
 * grids on this program's OpenMP threads through the context's
 * parallel_for); the baseline is the same layer as plain C loops, compiled
 * with this file's flags (-Ofast -march=native -fopenmp), on the same
 * threads. Every repetition runs blkc then C; the ratio is the median of the
 * pairs (C time / blkc time: > 1 means blkc is faster).
 * Usage: decode_step [--check] [--bf16] [D H [T [reps]]]   (default 768 2048 1024)
 *   DECODE_PROFILE=1: also the minimum time of each part, both sides.
 *   DECODE_ATTN=3: attention as three kernels (scores, softmax, attnout)
 *   instead of one program per head (`attention`).
 *   --check: small dims (D 64, H 96, T 40, head dim 16), results compared,
 *   exit 1 when max |blkc - C| > 1e-5 (ctest bench_decode_step_check).
 *   --bf16: the seven weight matrices stored as bf16 (both sides read the
 *   same bf16 bits and widen them to f32; all math f32), half the bytes. */
#include <blkc/blkc.h>
#include <ctype.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int nthr = 1;
static int wbf; /* --bf16: the weight matrices are bf16 */

/* DECODE_PROFILE=1: the minimum time of each part of the step, both sides
 * (PART marks the end of a part; parts as in c_step) */
enum { NPART = 8 };
static const char *part_name[NPART] = {"rmsnorm", "q k v", "rope", "attention",
                                       "wo + res", "rmsnorm", "ffn13", "w2 + res"};
static int prof;
static int attn3; /* DECODE_ATTN=3: attention as scores, softmax, attnout (3 launches) */
static double pmin[2][NPART], pt0;
static int pside;
static double now(void);
static void part(int i)
{
    if (!prof)
        return;
    double t = now();
    if (t - pt0 < pmin[pside][i])
        pmin[pside][i] = t - pt0;
    pt0 = t;
}
#define PART(i) part(i)

static inline float bf(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "decode_step: %s: %s\n", what, blkc_last_error());
    exit(1);
}

static void omp_for(void *user, int64_t n, void (*body)(void *, int64_t), void *arg)
{
    (void)user;
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (int64_t i = 0; i < n; i++)
        body(arg, i);
}

/* ------------------------------------------------------------ the model */
typedef struct Layer {
    int D, H, T, HD, NH;
    void *wq, *wk, *wv, *wo, *w1, *w2, *w3;            /* f32 or bf16 (wbf) */
    float *wa, *wf;                                    /* norm weights */
    float *kc, *vc;                                    /* [T, D] caches */
    float *cs, *sn;                                    /* [D / 2] RoPE */
    float *x0;                                         /* input token */
    float *x, *xb, *q, *o, *g, *sc;                    /* activations */
} Layer;

static unsigned rng = 12345;
static float frand(float a)
{
    rng = rng * 1664525u + 1013904223u;
    return a * ((float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f);
}

static float *arr(size_t n, float a)
{
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) { fprintf(stderr, "decode_step: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) p[i] = a ? frand(a) : 0;
    return p;
}

/* an n-element weight matrix: f32, or (wbf) bf16 rounded to nearest even */
static void *wmat(size_t n, float a)
{
    float *w = arr(n, a);
    if (!wbf)
        return w;
    uint16_t *h = aligned_alloc(64, (n * 2 + 63) / 64 * 64);
    if (!h) { fprintf(stderr, "decode_step: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &w[i], sizeof u);
        h[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    free(w);
    return h;
}

static void layer_init(Layer *L, int D, int H, int T, int HD)
{
    L->D = D; L->H = H; L->T = T; L->HD = HD; L->NH = D / HD;
    float sd = 1.0f / sqrtf((float)D), sh = 1.0f / sqrtf((float)H);
    L->wq = wmat((size_t)D * D, sd); L->wk = wmat((size_t)D * D, sd);
    L->wv = wmat((size_t)D * D, sd); L->wo = wmat((size_t)D * D, sd);
    L->w1 = wmat((size_t)H * D, sd); L->w3 = wmat((size_t)H * D, sd);
    L->w2 = wmat((size_t)D * H, sh);
    L->wa = arr((size_t)D, 1); L->wf = arr((size_t)D, 1);
    for (int i = 0; i < D; i++) { L->wa[i] += 1.5f; L->wf[i] += 1.5f; }
    L->kc = arr((size_t)T * D, 1); L->vc = arr((size_t)T * D, 1);
    L->cs = arr((size_t)D / 2, 0); L->sn = arr((size_t)D / 2, 0);
    int pos = T - 1;
    for (int i = 0; i < D / 2; i++) {
        int j = i % (HD / 2);
        double a = pos * pow(10000.0, -2.0 * j / HD);
        L->cs[i] = (float)cos(a);
        L->sn[i] = (float)sin(a);
    }
    L->x0 = arr((size_t)D, 1);
    L->x = arr((size_t)D, 0); L->xb = arr((size_t)D, 0); L->q = arr((size_t)D, 0);
    L->o = arr((size_t)D, 0); L->g = arr((size_t)H, 0);
    L->sc = arr((size_t)L->NH * T, 0);
}

static void layer_free(Layer *L)
{
    void *p[] = {L->wq, L->wk, L->wv, L->wo, L->w1, L->w2, L->w3, L->wa, L->wf, L->kc, L->vc,
                 L->cs, L->sn, L->x0, L->x, L->xb, L->q, L->o, L->g, L->sc};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(p[i]);
}

/* ------------------------------------------------------------ plain C */
static void c_rmsnorm(float *y, const float *x, const float *w, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    float r = 1.0f / sqrtf(s / n + 1e-5f);
    for (int i = 0; i < n; i++) y[i] = x[i] * r * w[i];
}

static void c_matvec(float *y, const void *w, const float *x, int M, int K, int add)
{
    if (wbf) {
#pragma omp parallel for schedule(static) num_threads(nthr)
        for (int i = 0; i < M; i++) {
            float s = 0;
            const uint16_t *r = (const uint16_t *)w + (size_t)i * K;
            for (int j = 0; j < K; j++) s += bf(r[j]) * x[j];
            y[i] = add ? y[i] + s : s;
        }
        return;
    }
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (int i = 0; i < M; i++) {
        float s = 0;
        const float *r = (const float *)w + (size_t)i * K;
        for (int j = 0; j < K; j++) s += r[j] * x[j];
        y[i] = add ? y[i] + s : s;
    }
}

static void c_step(Layer *L)
{
    int D = L->D, H = L->H, T = L->T, HD = L->HD, NH = L->NH, pos = T - 1;
    float *kr = L->kc + (size_t)pos * D, *vr = L->vc + (size_t)pos * D;
    memcpy(L->x, L->x0, sizeof(float) * D);
    pside = 1;
    pt0 = now();
    c_rmsnorm(L->xb, L->x, L->wa, D);
    PART(0);
    c_matvec(L->q, L->wq, L->xb, D, D, 0);
    c_matvec(kr, L->wk, L->xb, D, D, 0);
    c_matvec(vr, L->wv, L->xb, D, D, 0);
    PART(1);
    for (int i = 0; i < D / 2; i++) {
        float c = L->cs[i], s = L->sn[i];
        float q0 = L->q[2 * i], q1 = L->q[2 * i + 1], k0 = kr[2 * i], k1 = kr[2 * i + 1];
        L->q[2 * i] = q0 * c - q1 * s; L->q[2 * i + 1] = q0 * s + q1 * c;
        kr[2 * i] = k0 * c - k1 * s; kr[2 * i + 1] = k0 * s + k1 * c;
    }
    PART(2);
    float scale = 1.0f / sqrtf((float)HD);
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (int h = 0; h < NH; h++) {
        float *p = L->sc + (size_t)h * T, *qh = L->q + h * HD, mx = -INFINITY, sum = 0;
        for (int t = 0; t < T; t++) {
            const float *kt = L->kc + (size_t)t * D + h * HD;
            float s = 0;
            for (int j = 0; j < HD; j++) s += qh[j] * kt[j];
            p[t] = s * scale;
            mx = fmaxf(mx, p[t]);
        }
        for (int t = 0; t < T; t++) { p[t] = expf(p[t] - mx); sum += p[t]; }
        for (int t = 0; t < T; t++) p[t] /= sum;
        float *oh = L->o + h * HD;
        for (int j = 0; j < HD; j++) oh[j] = 0;
        for (int t = 0; t < T; t++) {
            const float *vt = L->vc + (size_t)t * D + h * HD;
            for (int j = 0; j < HD; j++) oh[j] += p[t] * vt[j];
        }
    }
    PART(3);
    c_matvec(L->x, L->wo, L->o, D, D, 1);
    PART(4);
    c_rmsnorm(L->xb, L->x, L->wf, D);
    PART(5);
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (int i = 0; i < H; i++) {
        float a = 0, b = 0;
        if (wbf) {
            const uint16_t *r1 = (const uint16_t *)L->w1 + (size_t)i * D;
            const uint16_t *r3 = (const uint16_t *)L->w3 + (size_t)i * D;
            for (int j = 0; j < D; j++) { a += bf(r1[j]) * L->xb[j]; b += bf(r3[j]) * L->xb[j]; }
        } else {
            const float *r1 = (const float *)L->w1 + (size_t)i * D;
            const float *r3 = (const float *)L->w3 + (size_t)i * D;
            for (int j = 0; j < D; j++) { a += r1[j] * L->xb[j]; b += r3[j] * L->xb[j]; }
        }
        L->g[i] = a / (1.0f + expf(-a)) * b;
    }
    PART(6);
    c_matvec(L->x, L->w2, L->g, D, H, 1);
    PART(7);
}

/* ------------------------------------------------------------ blkc */
typedef struct Blkc {
    blkc_module *mods[16];
    int nmods;
    blkc_kernel *rms, *mv_d, *mv_d_add, *mv_h_add, *ffn, *rope, *scores, *smax, *aout, *attn;
    char fmv[64], fffn[64]; /* launch formats with the weights' dtype */
} Blkc;

static char *decode_src(void)
{
    FILE *f = fopen(BLKC_SOURCE_DIR "/benchmarks/decode_step.blk", "rb");
    if (!f) { fprintf(stderr, "decode_step: cannot open decode_step.blk\n"); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1), *o = calloc(2, (size_t)n + 1), *q = o;
    if (fread(s, 1, (size_t)n, f) != (size_t)n) exit(1);
    fclose(f);
    const char *wt = wbf ? "bf16" : "f32";
    for (const char *p = s; *p;) { /* WT -> f32 / bf16 */
        if (p[0] == 'W' && p[1] == 'T' && (p == s || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[2]) && p[2] != '_') {
            memcpy(q, wt, strlen(wt)); q += strlen(wt); p += 2;
        } else {
            *q++ = *p++;
        }
    }
    free(s);
    return o;
}

static int pow2_ge(int n) { int b = 1; while (b < n) b *= 2; return b; }
/* a matvec's K block: all of K in one step when it fits 2048, exactly K
 * (a power of two above K at D 768 read in place, the dot summing the
 * columns in bounds: one K step, one lane sum per row, took the step from
 * 0.86-0.91x to 0.98-1.00x of C with bf16 weights; exactly K drops the
 * mask of the columns past K: the 768 x 768 matvec in cache 0.038-0.042
 * -> 0.035 ms, benchmarks/README.md round 20), else the largest power of
 * two <= 2048 dividing K */
static int blk_of(int K)
{
    if (K <= 2048) return K;
    for (int b = 2048; b >= 16; b /= 2)
        if (K % b == 0) return b;
    return 64;
}

static blkc_kernel *kern(blkc_context *ctx, Blkc *B, const char *src, const char *name,
                         const char *d1, const char *d2, const char *d3)
{
    const char *defs[3] = {d1, d2, d3};
    int n = d3 ? 3 : d2 ? 2 : d1 ? 1 : 0;
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.defines = defs;
    o.ndefines = n;
    blkc_module *m = NULL;
    if (blkc_module_create(ctx, src, strlen(src), &o, &m) != BLKC_OK) die(name);
    if (B->nmods == (int)(sizeof B->mods / sizeof *B->mods)) { fprintf(stderr, "decode_step: too many modules\n"); exit(1); }
    B->mods[B->nmods++] = m;
    blkc_kernel *k = NULL;
    if (blkc_module_get_kernel(m, name, &k) != BLKC_OK) die(name);
    return k;
}

static void blkc_setup(blkc_context *ctx, Blkc *B, const Layer *L)
{
    char *src = decode_src();
    char bd[32], bkd[32], bkh[32], hd[32], bt[32], bp[32];
    snprintf(bd, sizeof bd, "BD=%d", pow2_ge(L->D));
    snprintf(bkd, sizeof bkd, "BK=%d", blk_of(L->D));
    snprintf(bkh, sizeof bkh, "BK=%d", blk_of(L->H));
    snprintf(hd, sizeof hd, "HD=%d", L->HD);
    snprintf(bt, sizeof bt, "BT=%d", pow2_ge(L->T));
    snprintf(bp, sizeof bp, "BP=%d", pow2_ge(L->D / 2));
    memset(B, 0, sizeof *B);
    const char *wt = wbf ? "bf16" : "f32";
    snprintf(B->fmv, sizeof B->fmv, "%s[#,#] f32[#] f32[#]", wt);
    snprintf(B->fffn, sizeof B->fffn, "%s[#,#] %s[#,#] f32[#] f32[#]", wt, wt);
    B->rms = kern(ctx, B, src, "rmsnorm", bd, NULL, NULL);
    /* one module per define set: matvec with ADD=0 and ADD=1 */
    B->mv_d = kern(ctx, B, src, "matvec", bkd, "BM=16", NULL);
    B->ffn = blkc_module_get_kernel(B->mods[1], "ffn13", &B->ffn) == BLKC_OK ? B->ffn : NULL;
    B->rope = kern(ctx, B, src, "rope", bp, NULL, NULL);
    B->mv_d_add = kern(ctx, B, src, "matvec", bkd, "BM=16", "ADD=1");
    B->mv_h_add = kern(ctx, B, src, "matvec", bkh, "BM=16", "ADD=1");
    B->scores = kern(ctx, B, src, "scores", hd, "BT=32", NULL);
    B->smax = kern(ctx, B, src, "softmax", bt, NULL, NULL);
    B->aout = kern(ctx, B, src, "attnout", hd, "BT=32", NULL);
    B->attn = kern(ctx, B, src, "attention", hd, bt, NULL);
    if (!B->ffn) die("ffn13");
    free(src);
}

#define L1(k, ...) do { if (blkc_kernel_launchf(k, __VA_ARGS__) != BLKC_OK) die(#k); } while (0)

static void blkc_step(Blkc *B, Layer *L)
{
    int D = L->D, H = L->H, T = L->T, NH = L->NH, P = D / 2;
    float *kr = L->kc + (size_t)(T - 1) * D, *vr = L->vc + (size_t)(T - 1) * D;
    memcpy(L->x, L->x0, sizeof(float) * D);
    pside = 0;
    pt0 = now();
    L1(B->rms, "f32[#] f32[#] f32[#] f", L->x, D, L->wa, D, L->xb, D, 1e-5);
    PART(0);
    L1(B->mv_d, B->fmv, L->wq, D, D, L->xb, D, L->q, D);
    L1(B->mv_d, B->fmv, L->wk, D, D, L->xb, D, kr, D);
    L1(B->mv_d, B->fmv, L->wv, D, D, L->xb, D, vr, D);
    PART(1);
    L1(B->rope, "f32[#,2] f32[#,2] f32[#] f32[#]", L->q, P, kr, P, L->cs, P, L->sn, P);
    PART(2);
    if (attn3) {
        L1(B->scores, "f32[#,#] f32[#] f32[#,#] f", L->kc, T, D, L->q, D, L->sc, NH, T,
           1.0 / sqrt((double)L->HD));
        L1(B->smax, "f32[#,#]", L->sc, NH, T);
        L1(B->aout, "f32[#,#] f32[#,#] f32[#]", L->vc, T, D, L->sc, NH, T, L->o, D);
    } else {
        L1(B->attn, "f32[#,#] f32[#,#] f32[#] f32[#] f", L->kc, T, D, L->vc, T, D, L->q, D,
           L->o, D, 1.0 / sqrt((double)L->HD));
    }
    PART(3);
    L1(B->mv_d_add, B->fmv, L->wo, D, D, L->o, D, L->x, D);
    PART(4);
    L1(B->rms, "f32[#] f32[#] f32[#] f", L->x, D, L->wf, D, L->xb, D, 1e-5);
    PART(5);
    L1(B->ffn, B->fffn, L->w1, H, D, L->w3, H, D, L->xb, D, L->g, H);
    PART(6);
    L1(B->mv_h_add, B->fmv, L->w2, D, H, L->g, H, L->x, D);
    PART(7);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* blkc keeps a kernel's tiles on the stack of the thread that runs it,
 * here the OpenMP threads of the parallel_for hook; a launch refuses a
 * thread with less than twice the kernel's frame left (runtime/launch.c),
 * and at D 4096 `attention` takes 4.4 MB: more than half of the main
 * thread's usual 8 MB, and more than libgomp's workers get by default.
 * So: a 64 MB stack limit for the main thread, and OMP_STACKSIZE=64M
 * for the workers (libgomp reads it as it loads: set, then exec again). */
static void big_stacks(char **argv)
{
    const rlim_t want = (rlim_t)64 << 20;
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
        setrlimit(RLIMIT_STACK, &rl);
    }
    if (!getenv("OMP_STACKSIZE")) {
        setenv("OMP_STACKSIZE", "64M", 1);
        execv("/proc/self/exe", argv); /* on failure, go on as we are */
    }
}

int main(int argc, char **argv)
{
    big_stacks(argv);
    int check = 0, D = 768, H = 2048, T = 1024, reps = 11, HD;
    int ai = 1;
    if (ai < argc && !strcmp(argv[ai], "--check")) { check = 1; ai++; }
    if (ai < argc && !strcmp(argv[ai], "--bf16")) { wbf = 1; ai++; }
    if (check) { D = 64; H = 96; T = 40; reps = 1; }
    if (ai + 1 < argc) { D = atoi(argv[ai]); H = atoi(argv[ai + 1]); ai += 2; }
    if (ai < argc) T = atoi(argv[ai++]);
    if (ai < argc) reps = atoi(argv[ai++]);
    HD = check ? 16 : D >= 4096 ? 128 : 64;
    prof = getenv("DECODE_PROFILE") && atoi(getenv("DECODE_PROFILE")) > 0;
    attn3 = getenv("DECODE_ATTN") && atoi(getenv("DECODE_ATTN")) == 3;
    if (D <= 0 || H <= 0 || T <= 0 || reps <= 0 || reps > 99 || D % HD || D % 2) {
        fprintf(stderr, "usage: decode_step [--check] [--bf16] [D H [T [reps]]] (D a multiple of %d)\n", HD);
        return 2;
    }
    blkc_context_options co;
    blkc_context_options_init(&co);
    co.parallel_for = omp_for;
    blkc_context *ctx = NULL;
    if (blkc_context_create_ex("cpu", &co, &ctx) != BLKC_OK) die("context");
    Layer L;
    layer_init(&L, D, H, T, HD);
    Blkc B;
    blkc_setup(ctx, &B, &L);
    float *xr = arr((size_t)D, 0);
    double wbytes = (wbf ? 2.0 : 4.0) * (4.0 * D * D + 3.0 * D * H) + 2.0 * 4.0 * T * D;
    int rc = 0;
    for (nthr = 1; nthr <= (check ? 2 : 2); nthr++) {
        c_step(&L); /* warm-up, and the reference */
        memcpy(xr, L.x, sizeof(float) * D);
        blkc_step(&B, &L);
        double err = 0, ref = 0;
        for (int i = 0; i < D; i++) {
            err = fmax(err, fabs((double)L.x[i] - xr[i]));
            ref = fmax(ref, fabs((double)xr[i]));
        }
        double tb = 1e30, tc = 1e30, rat[99];
        for (int i = 0; i < NPART; i++)
            pmin[0][i] = pmin[1][i] = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            blkc_step(&B, &L);
            double t1 = now();
            c_step(&L);
            double t2 = now();
            tb = fmin(tb, t1 - t0);
            tc = fmin(tc, t2 - t1);
            rat[r] = (t2 - t1) / (t1 - t0);
        }
        qsort(rat, (size_t)reps, sizeof *rat, cmp_dbl);
        printf("decode step D=%d H=%d T=%d %s weights (%d thread%s, %d pairs): blkc %.3f ms (%.1f steps/s, "
               "%.1f GB/s), C -Ofast %.3f ms (%.1f steps/s), ratio C/blkc %.2fx (median); "
               "max |blkc - C| %.1e (max |x| %.2f)\n", D, H, T, wbf ? "bf16" : "f32", nthr, nthr == 1 ? "" : "s", reps,
               tb * 1e3, 1.0 / tb, wbytes / tb * 1e-9, tc * 1e3, 1.0 / tc, rat[reps / 2], err,
               ref);
        for (int i = 0; prof && i < NPART; i++)
            printf("  %-10s blkc %8.1f us  C %8.1f us  C/blkc %.2fx\n", part_name[i],
                   pmin[0][i] * 1e6, pmin[1][i] * 1e6, pmin[1][i] / pmin[0][i]);
        if (err > 1e-5 * fmax(1.0, ref)) {
            fprintf(stderr, "decode_step: blkc and C differ by %.2e\n", err);
            rc = 1;
        }
    }
    for (int i = 0; i < B.nmods; i++) blkc_module_destroy(B.mods[i]);
    blkc_context_destroy(ctx);
    layer_free(&L);
    free(xr);
    return rc;
}
