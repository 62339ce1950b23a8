/* t_stream_store.c — stores to tensors of 32 MB and more use non-temporal
 * stores (backends/cpu/mem.c, on x86 hosts with AVX): rows whose starts are
 * not 64-byte aligned (a plain head), lengths that are not a multiple of
 * the 1 KB chunk (a plain tail), a data pointer off 64-byte alignment, a
 * strided tensor, a row block past the tensor's end (the bounds-checked
 * path), f64 / i8 / bf16 elements, and a row computed by reductions
 * (softmax) — each against a C reference. A value too costly to emit
 * twice (exp, tanh) goes through the window buffer for tensors in cache
 * too; its rows (1100 elements: a last window overlapping the one
 * before, heads off alignment) are checked against a C reference and
 * bit for bit against the same module compiled with BLKC_CPU_NOSTREAM=1.
 * The generated IR is checked to hold no streaming stores for rows
 * shorter than 256 bytes. ctest runs it with 1 and 2 threads
 * (exec_t_stream_store, exec_t_stream_store_2t). */
#include "harness.h"

static const char *src =
    "kernel affine<BLOCK = 1024>(X: f32[R, N], Y: f32[R, N]) grid(R, cdiv(N, BLOCK)) {\n"
    "    let r = program_id(0);\n"
    "    let c = program_id(1) * BLOCK;\n"
    "    let x = load(X[r, c +: BLOCK], pad = 0.0);\n"
    "    Y[r, c +: BLOCK] = x * 2.0 + 1.0;\n"
    "}\n"
    "kernel widen<BLOCK = 2048>(X: f32[N], Y: f64[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = (load(X[o +: BLOCK], pad = 0.0) as f64) * 3.0;\n"
    "}\n"
    "kernel narrow<BLOCK = 4096>(X: i32[N], Y: i8[N], Z: bf16[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = load(X[o +: BLOCK], pad = 0);\n"
    "    Y[o +: BLOCK] = x as i8;\n"
    "    Z[o +: BLOCK] = x as bf16;\n"
    "}\n"
    "kernel heavy<BLOCK = 1100>(X: f32[R, N], Y: f32[R, N]) grid(R, cdiv(N, BLOCK)) {\n"
    "    let x = load(X[program_id(0), program_id(1) * BLOCK +: BLOCK], pad = 0.0);\n"
    "    Y[program_id(0), program_id(1) * BLOCK +: BLOCK] = exp(x * 0.5) + tanh(x);\n"
    "}\n"
    "kernel heavy1<BLOCK = 1100>(X: f32[R, N]) grid(R, cdiv(N, BLOCK)) {\n"
    "    let x = load(X[program_id(0), program_id(1) * BLOCK +: BLOCK], pad = 0.0);\n"
    "    X[program_id(0), program_id(1) * BLOCK +: BLOCK] = exp(x * 0.5) + tanh(x);\n"
    "}\n"
    "kernel small<BLOCK = 48>(X: f32[N], Y: f32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    Y[o +: BLOCK] = load(X[o +: BLOCK], pad = 0.0) + 1.0;\n"
    "}\n";

/* Y = 2X + 1 over R x N with X's and Y's rows ld apart, Y's data at
 * element offset off */
static void affine(blkc_module *m, int R, int N, int ld, int off, const char *what)
{
    size_t n = (size_t)R * ld + (size_t)off;
    float *x = h_array(H_F32, n), *y = h_array(H_F32, n);
    h_fill(x, H_F32, n, -4, 4);
    for (size_t i = 0; i < n; i++)
        y[i] = -7.0f;
    int64_t st[2] = {ld, 1}, sh[2] = {R, N};
    H_LAUNCH(h_kernel(m, "affine"), h_ten(h_tensor(x + off, H_F32, 2, sh, st)),
             h_ten(h_tensor(y + off, H_F32, 2, sh, st)));
    /* every element of the view, and the gaps between rows untouched */
    size_t bad = 0, first = 0;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < ld; j++) {
            size_t i = (size_t)off + (size_t)r * ld + j;
            float want = j < N ? x[i] * 2.0f + 1.0f : -7.0f;
            if (y[i] != want && !bad++)
                first = i;
        }
    h_ok(bad == 0, "%s: %zu mismatches, first at %zu", what, bad, first);
}

/* heavy over R x N (rows ld apart, data at element offset off) in m and in
 * m0, created and launched with BLKC_CPU_NOSTREAM=1 (a launch may compile
 * a variant specialized to its arguments): equal bits, near C's */
static void heavy(blkc_module *m, blkc_module *m0, int R, int N, int ld, int off,
                  const char *what)
{
    size_t n = (size_t)R * ld + (size_t)off;
    float *x = h_array(H_F32, n), *y = h_array(H_F32, n), *y0 = h_array(H_F32, n);
    h_fill(x, H_F32, n, -4, 4);
    for (size_t i = 0; i < n; i++)
        y[i] = y0[i] = -7.0f;
    int64_t st[2] = {ld, 1}, sh[2] = {R, N};
    H_LAUNCH(h_kernel(m, "heavy"), h_ten(h_tensor(x + off, H_F32, 2, sh, st)),
             h_ten(h_tensor(y + off, H_F32, 2, sh, st)));
    setenv("BLKC_CPU_NOSTREAM", "1", 1); /* read when the launch compiles */
    setenv("BLKC_CPU_NOSTREAM", "1", 1);
    H_LAUNCH(h_kernel(m0, "heavy"), h_ten(h_tensor(x + off, H_F32, 2, sh, st)),
             h_ten(h_tensor(y0 + off, H_F32, 2, sh, st)));
    unsetenv("BLKC_CPU_NOSTREAM");
    unsetenv("BLKC_CPU_NOSTREAM");
    size_t bad = 0, first = 0, far = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&y[i], &y0[i], 4) && !bad++)
            first = i;
        size_t j = i >= (size_t)off ? i - (size_t)off : 0;
        bool in = i >= (size_t)off && (int)(j % (size_t)ld) < N;
        double want = in ? exp(x[i] * 0.5) + tanh(x[i]) : -7.0;
        far += fabs(y[i] - want) > 1e-5 * (1 + fabs(want));
    }
    h_ok(bad == 0 && far == 0, "%s: %zu differ from the unstreamed module (first at %zu), "
         "%zu from C", what, bad, first, far);
}

/* heavy in place: heavy1 (one tensor loaded and stored) and heavy with
 * Y = X (one buffer, two arguments). A load read by a store is read in
 * place only if, at run time, the stored tensor does not overlap the tile
 * (backends/cpu/fuse.c, mem.c); here it does, so the tile is a copy and
 * every value comes from the old x (the last, overlapping window of a
 * row recomputes from the tile after the one before wrote its bytes). */
static void heavy_alias(blkc_module *m, int R, int N, bool one, const char *what)
{
    size_t n = (size_t)R * N;
    float *x = h_array(H_F32, n), *x0 = h_array(H_F32, n);
    h_fill(x, H_F32, n, -4, 4);
    memcpy(x0, x, n * sizeof *x);
    if (one)
        H_LAUNCH(h_kernel(m, "heavy1"), h_ten(h_t2(x, H_F32, R, N)));
    else
        H_LAUNCH(h_kernel(m, "heavy"), h_ten(h_t2(x, H_F32, R, N)),
                 h_ten(h_t2(x, H_F32, R, N)));
    size_t far = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double want = exp(x0[i] * 0.5) + tanh(x0[i]);
        if (fabs(x[i] - want) > 1e-5 * (1 + fabs(want)) && !far++)
            first = i;
    }
    h_ok(far == 0, "%s: %zu wrong (first at %zu)", what, far, first);
}

int main(void)
{
    unsetenv("BLKC_CPU_NOSTREAM"); /* on by default (backends/cpu/mem.c) */
    h_seed(5);
    blkc_module *m = h_compile(src, NULL);

    /* the IR: streaming stores for the 1 KB+ rows of affine / widen /
     * narrow (i8: exactly one chunk), none for small's 192-byte rows (a
     * cheap value streams from CPU_STREAM_LINES = 256 bytes) */
    char *ir = NULL;
    size_t irn = 0;
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    /* a build without the CPU backend (the GPU build's gpux_ tests) has
     * no LLVM IR to show */
    blkc_status es = blkc_emit(src, strlen(src), &o, "llvm", &ir, &irn);
    h_ok(es == BLKC_OK || es == BLKC_ERR_UNSUPPORTED, "emit llvm: %s",
         blkc_status_string(es));
    if (ir) {
        int nt = 0;
        for (const char *p = ir; (p = strstr(p, "!nontemporal")); p++)
            nt++;
        const char *sm = strstr(ir, "@blk_k_small(");
#if defined(__x86_64__) && defined(__GNUC__)
        bool x86avx = __builtin_cpu_supports("avx");
#else
        bool x86avx = false;
#endif
        h_ok(!x86avx || (nt > 0 && sm && !strstr(sm, "!nontemporal")),
             "non-temporal stores in the big-row kernels only (%d)", nt);
        blkc_free(ir);
    }

    /* 33.6 MB: streamed; rows 16400 bytes apart (heads of 0..15 elements),
     * 4100 = 4 whole blocks + a 4-element block past the end */
    affine(m, 2050, 4100, 4100, 0, "f32 2050x4100 (streamed, heads, tails)");
    affine(m, 2048, 4096, 4104, 3, "f32 2048x4096, rows 4104 apart, data off by 3");
    affine(m, 64, 1000, 1000, 1, "f32 64x1000 (small tensor: plain stores)");

    /* the window-buffer path: 8.6 MB (plain windows), 35 MB (streamed) */
    setenv("BLKC_CPU_NOSTREAM", "1", 1);
    blkc_module *m0 = h_compile(src, NULL);
    unsetenv("BLKC_CPU_NOSTREAM");
    heavy(m, m0, 490, 4400, 4400, 0, "heavy 490x4400 (in cache)");
    heavy(m, m0, 490, 4400, 4403, 5, "heavy 490x4400, rows 4403 apart, off by 5");
    heavy(m, m0, 2000, 4400, 4403, 3, "heavy 2000x4400, rows 4403 apart (streamed)");
    heavy(m, m0, 2000, 4400, 4400, 0, "heavy 2000x4400 (streamed)");
    heavy_alias(m, 490, 4400, true, "heavy1 490x4400 in place");
    heavy_alias(m, 2000, 4400, true, "heavy1 2000x4400 in place (streamed)");
    heavy_alias(m, 490, 4400, false, "heavy 490x4400, Y = X");
    heavy_alias(m, 2000, 4400, false, "heavy 2000x4400, Y = X (streamed)");

    enum { N = 9 * 1024 * 1024 + 77 }; /* Y: 75 MB of f64 */
    float *x = h_array(H_F32, N);
    double *y = h_array(H_F64, N);
    h_fill(x, H_F32, N, -1, 1);
    H_LAUNCH(h_kernel(m, "widen"), h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F64, N)));
    size_t bad = 0;
    for (size_t i = 0; i < N; i++)
        bad += y[i] != (double)x[i] * 3.0;
    h_ok(bad == 0, "f64 stores of %d elements: %zu mismatches", N, bad);

    enum { M = 33 * 1024 * 1024 + 5 }; /* Y: 33 MB of i8, Z: 66 MB of bf16 */
    int32_t *xi = h_array(H_I32, M);
    int8_t *yi = h_array(H_I8, M);
    uint16_t *zb = h_array(H_BF16, M);
    for (size_t i = 0; i < M; i++)
        xi[i] = (int32_t)((i * 2654435761u) % 255) - 127;
    H_LAUNCH(h_kernel(m, "narrow"), h_ten(h_t1(xi, H_I32, M)), h_ten(h_t1(yi, H_I8, M)),
             h_ten(h_t1(zb, H_BF16, M)));
    size_t bi = 0, bz = 0;
    for (size_t i = 0; i < M; i++) {
        bi += yi[i] != (int8_t)xi[i];
        bz += zb[i] != h_f32_to_bf16((float)xi[i]);
    }
    h_ok(bi == 0 && bz == 0, "i8 / bf16 stores: %zu / %zu mismatches", bi, bz);

    /* softmax over 2048 x 4096 f32 (32 MB): max, exp + sum, scaled store */
    blkc_module *sm = h_compile(H_EXAMPLE("softmax.blk"), H_DEFS("BLOCK=4096"));
    enum { SR = 2048, SN = 4096 };
    float *sx = h_array(H_F32, (size_t)SR * SN), *sy = h_array(H_F32, (size_t)SR * SN);
    h_fill(sx, H_F32, (size_t)SR * SN, -8, 8);
    H_LAUNCH(h_kernel(sm, "softmax"), h_ten(h_t2(sx, H_F32, SR, SN)),
             h_ten(h_t2(sy, H_F32, SR, SN)));
    double *ref = h_alloc(8 * (size_t)SN);
    bool ok = true;
    for (int r = 0; r < SR && ok; r += 97) {
        const float *xr = sx + (size_t)r * SN;
        double mx = -INFINITY, s = 0;
        for (int j = 0; j < SN; j++)
            mx = fmax(mx, xr[j]);
        for (int j = 0; j < SN; j++)
            s += (ref[j] = exp(xr[j] - mx));
        for (int j = 0; j < SN; j++)
            ref[j] /= s;
        char what[64];
        snprintf(what, sizeof what, "softmax row %d", r);
        ok = h_check(what, sy + (size_t)r * SN, H_F32, ref, SN, 1e-9, 1e-5);
    }
    return h_done();
}
