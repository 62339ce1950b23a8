/* t_stream_lines.c — a cheap value stored to a tensor of 32 MB or more is
 * streamed line by line from registers (backends/cpu/mem.c stream_lines;
 * BLKC_CPU_NOLINEST=1 sends it through stream_row's window buffer as
 * before). Softmax, layernorm, rmsnorm, a copy and a doubling by 8 x 128
 * blocks (rows of 512 B: a cheap value streams from CPU_STREAM_LINES
 * bytes, a GEMM's C block), each over rows that are
 * 64-byte aligned (4096 f32, whole lines only), rows of 4099 with the data
 * off by 3 elements (heads of 0..15 elements, tails) and rows 4104 apart
 * off by 1: every element bit for bit against the same kernels compiled
 * and launched with BLKC_CPU_NOLINEST=1 (the gaps between rows untouched
 * in both), and sampled rows against a C reference. The optimized IR of
 * the copy and of the blocks is checked to stream without a window
 * buffer. */
#include "harness.h"

static const char *src =
    "kernel softmax<BLOCK = 4096>(X: f32[R, N], Y: f32[R, N]) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    let x = load(X[r, 0 +: BLOCK], pad = -inf);\n"
    "    let e = exp(x - max(x));\n"
    "    Y[r, 0 +: BLOCK] = e / sum(e);\n"
    "}\n"
    "kernel layernorm<BLOCK = 4096>(X: f32[R, N], W: f32[N], B: f32[N], Y: f32[R, N],\n"
    "                               eps: f32) grid(R) {\n"
    "    let r = program_id(0);\n"
    "    let x = X[r, 0 +: BLOCK];\n"
    "    let mean = sum(x) / (N as f32);\n"
    "    let d = where(arange(BLOCK) < N, x - mean, 0.0);\n"
    "    let rstd = rsqrt(sum(d * d) / (N as f32) + eps);\n"
    "    Y[r, 0 +: BLOCK] = d * rstd * W[0 +: BLOCK] + B[0 +: BLOCK];\n"
    "}\n"
    "kernel rmsnorm<BLOCK = 4096>(X: f32[R, N], W: f32[N], Y: f32[R, N], eps: f32)\n"
    "    grid(R) {\n"
    "    let x = X[program_id(0), 0 +: BLOCK];\n"
    "    let s = rsqrt(sum(x * x) / (N as f32) + eps);\n"
    "    Y[program_id(0), 0 +: BLOCK] = x * s * W[0 +: BLOCK];\n"
    "}\n"
    "kernel copy<BLOCK = 4096>(X: f32[R, N], Y: f32[R, N]) grid(R) {\n"
    "    Y[program_id(0), 0 +: BLOCK] = load(X[program_id(0), 0 +: BLOCK], pad = 0.0);\n"
    "}\n"
    "kernel blocks<BM = 8, BN = 128>(X: f32[R, N], Y: f32[R, N])\n"
    "    grid(cdiv(R, BM), cdiv(N, BN)) {\n"
    "    let m = program_id(0) * BM;\n"
    "    let n = program_id(1) * BN;\n"
    "    Y[m +: BM, n +: BN] = X[m +: BM, n +: BN] * 2.0;\n"
    "}\n";

enum { SOFTMAX, LAYERNORM, RMSNORM, COPY, BLOCKS, NKERN };
static const char *const names[] = {"softmax", "layernorm", "rmsnorm", "copy", "blocks"};

typedef struct Case {
    int R, N, ld, off;
    const char *what;
} Case;

/* kernel k of m over c into y (pre-filled with -7), x / w / b the inputs;
 * BLKC_CPU_NOLINEST set around the launch when nolinest (a launch may
 * compile a variant specialized to its arguments) */
static void run(blkc_module *m, int k, const Case *c, float *x, float *w, float *b,
                float *y, bool nolinest)
{
    size_t n = (size_t)c->R * c->ld + (size_t)c->off;
    for (size_t i = 0; i < n; i++)
        y[i] = -7.0f;
    int64_t st[2] = {c->ld, 1}, sh[2] = {c->R, c->N};
    DLTensor *tx = h_tensor(x + c->off, H_F32, 2, sh, st);
    DLTensor *ty = h_tensor(y + c->off, H_F32, 2, sh, st);
    if (nolinest)
        setenv("BLKC_CPU_NOLINEST", "1", 1);
    blkc_kernel *kn = h_kernel(m, names[k]);
    if (k == SOFTMAX || k == COPY || k == BLOCKS)
        H_LAUNCH(kn, h_ten(tx), h_ten(ty));
    else if (k == LAYERNORM)
        H_LAUNCH(kn, h_ten(tx), h_ten(h_t1(w, H_F32, c->N)), h_ten(h_t1(b, H_F32, c->N)),
                 h_ten(ty), h_flt(1e-5));
    else
        H_LAUNCH(kn, h_ten(tx), h_ten(h_t1(w, H_F32, c->N)), h_ten(ty), h_flt(1e-5));
    unsetenv("BLKC_CPU_NOLINEST");
}

/* the C reference of kernel k for one row */
static void ref_row(int k, const float *xr, const float *w, const float *b, int N,
                    double *ref)
{
    double s = 0, mx = -INFINITY, mean = 0;
    switch (k) {
    case SOFTMAX:
        for (int j = 0; j < N; j++)
            mx = fmax(mx, xr[j]);
        for (int j = 0; j < N; j++)
            s += (ref[j] = exp((double)xr[j] - mx));
        for (int j = 0; j < N; j++)
            ref[j] /= s;
        break;
    case LAYERNORM:
        for (int j = 0; j < N; j++)
            mean += xr[j];
        mean /= N;
        for (int j = 0; j < N; j++)
            s += (xr[j] - mean) * (xr[j] - mean);
        s = 1 / sqrt(s / N + 1e-5);
        for (int j = 0; j < N; j++)
            ref[j] = (xr[j] - mean) * s * w[j] + b[j];
        break;
    case RMSNORM:
        for (int j = 0; j < N; j++)
            s += (double)xr[j] * xr[j];
        s = 1 / sqrt(s / N + 1e-5);
        for (int j = 0; j < N; j++)
            ref[j] = xr[j] * s * w[j];
        break;
    case BLOCKS:
        for (int j = 0; j < N; j++)
            ref[j] = 2.0 * xr[j];
        break;
    default:
        for (int j = 0; j < N; j++)
            ref[j] = xr[j];
    }
}

static void check_case(blkc_module *m, blkc_module *m0, const Case *c, float *x,
                       float *w, float *b, float *y, float *y0, double *ref)
{
    size_t n = (size_t)c->R * c->ld + (size_t)c->off;
    for (int k = 0; k < NKERN; k++) {
        run(m, k, c, x, w, b, y, false);
        run(m0, k, c, x, w, b, y0, true);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (memcmp(&y[i], &y0[i], 4) && !bad++)
                first = i;
        h_ok(bad == 0, "%s %s: %zu elements differ from BLKC_CPU_NOLINEST=1 "
             "(first at %zu)", names[k], c->what, bad, first);
        size_t gaps = 0; /* elements between rows and before the data */
        for (size_t i = 0; i < n; i++) {
            size_t j = i >= (size_t)c->off ? i - (size_t)c->off : 0;
            bool in = i >= (size_t)c->off && (int)(j % (size_t)c->ld) < c->N;
            gaps += !in && y[i] != -7.0f;
        }
        h_ok(gaps == 0, "%s %s: %zu elements outside the view written", names[k],
             c->what, gaps);
        bool ok = true;
        for (int i = 0; i <= c->R / 61 && ok; i++) { /* every 61st row, the last */
            int r = i < c->R / 61 ? 61 * i : c->R - 1;
            size_t o = (size_t)c->off + (size_t)r * c->ld;
            ref_row(k, x + o, w, b, c->N, ref);
            char what[96];
            snprintf(what, sizeof what, "%s %s row %d", names[k], c->what, r);
            ok = h_check(what, y + o, H_F32, ref, (size_t)c->N,
                         k == SOFTMAX ? 1e-9 : k >= COPY ? 0 : 1e-5,
                         k >= COPY ? 0 : 1e-5);
        }
    }
}

int main(void)
{
    unsetenv("BLKC_CPU_NOLINEST");
    unsetenv("BLKC_CPU_NOSTREAM");
    h_seed(13);

    /* the copy's IR: non-temporal stores, no 1 KB window buffer */
    char *ir = NULL;
    size_t irn = 0;
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    blkc_status es = blkc_emit(src, strlen(src), &o, "llvm", &ir, &irn);
    h_ok(es == BLKC_OK || es == BLKC_ERR_UNSUPPORTED, "emit llvm: %s",
         blkc_status_string(es));
#if defined(__x86_64__) && defined(__GNUC__)
    bool x86avx = __builtin_cpu_supports("avx");
#else
    bool x86avx = false;
#endif
    if (ir && x86avx) {
        const char *cp = strstr(ir, "@blk_k_copy(");
        const char *bp = strstr(ir, "@blk_k_blocks(");
        h_ok(cp && strstr(cp, "!nontemporal") && !strstr(cp, "alloca [256 x float]"),
             "copy: streamed without the window buffer");
        h_ok(bp && strstr(bp, "!nontemporal") && !strstr(bp, "alloca [256 x float]"),
             "blocks: 512-byte rows streamed without the window buffer");
    }
    blkc_free(ir);

    static const Case cases[] = {
        {2048, 4096, 4096, 0, "2048x4096 (aligned rows)"},
        {2050, 4099, 4099, 3, "2050x4099, data off by 3"},
        {2048, 4096, 4104, 1, "2048x4096, rows 4104 apart, off by 1"},
    };
    size_t n = (size_t)2050 * 4104 + 8;
    float *x = h_array(H_F32, n), *y = h_array(H_F32, n), *y0 = h_array(H_F32, n);
    float *w = h_array(H_F32, 4160), *b = h_array(H_F32, 4160);
    double *ref = h_alloc(8 * 4160);
    h_fill(x, H_F32, n, -8, 8);
    h_fill(w, H_F32, 4160, -2, 2);
    h_fill(b, H_F32, 4160, -1, 1);
    for (int i = 0; i < 3; i++) {
        const char *const *defs = cases[i].N > 4096 ? H_DEFS("BLOCK=4160") : NULL;
        blkc_module *m = h_compile(src, defs);
        setenv("BLKC_CPU_NOLINEST", "1", 1);
        blkc_module *m0 = h_compile(src, defs);
        unsetenv("BLKC_CPU_NOLINEST");
        check_case(m, m0, &cases[i], x, w, b, y, y0, ref);
    }
    return h_done();
}
