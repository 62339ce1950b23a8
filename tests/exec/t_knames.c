/* t_knames.c — the kernels of tests/gpu/data/knames.blk, named like C library
 * and libm functions, GPU device builtins, C++ keywords and the generated
 * code's own names (memcpy, tanf, printf, main, int, BlkTensor, addr, ...),
 * against C references (issue 12). The C API sees the user's names; the
 * code is blk_k_NAME on every backend (backends/backend.h). On the CPU a
 * kernel tanf once called itself for tan(); on cuda-emu / hip-emu (this
 * program under BLKC_TEST_DEVICE, tests/emu) memcpy clashed with libc's. */
#include "harness.h"

typedef struct Case {
    const char *name;
    double (*ref)(double x);
} Case;

static double r_memcpy(double x) { return x; }
static double r_memset(double x) { (void)x; return 3.0; }
static double r_exp(double x) { return expf((float)x); }
static double r_tanf(double x) { return tanf((float)x); }
static double r_sinf(double x) { return sinf((float)x); }
static double r_powf(double x) { return powf(fabsf((float)x) + 0.5f, 1.5f); }
static double r_expm1f(double x) { return expm1f((float)x); }
static double r_printf(double x) { return (float)((float)x * 2.0f) + 1.0f; }
static double r_free(double x) { return (float)x - 1.0f; }
static double r_malloc(double x) { return (float)x * (float)x; }
static double r_main(double x) { return fabs(x); }
static double r_int(double x) { return floorf((float)x * 4.0f); }
static double r_new(double x) { return x > 0 ? x : 0.0; }
static double r_class(double x) { return x < 0 ? x : 0.0; }
static double r_blktensor(double x) { return (float)x + 5.0f; }
static double r_threads(double x) { return (float)x * 0.5f; }
static double r_params(double x) { return 1.0f - (float)x; }

static const Case cases[] = {
    {"memcpy", r_memcpy}, {"memset", r_memset}, {"exp", r_exp},
    {"tanf", r_tanf}, {"sinf", r_sinf}, {"powf", r_powf},
    {"expm1f", r_expm1f}, {"printf", r_printf}, {"free", r_free},
    {"malloc", r_malloc}, {"main", r_main}, {"int", r_int},
    {"new", r_new}, {"class", r_class}, {"BlkTensor", r_blktensor},
    {"threads", r_threads}, {"params", r_params},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* kernel addr: C = A B, f16 operands, f32 accumulation (tensor cores) */
static void run_addr(blkc_module *m, int64_t M, int64_t N, int64_t K)
{
    blkc_kernel *k = h_kernel(m, "addr");
    void *a = h_array(H_F16, (size_t)(M * K)), *b = h_array(H_F16, (size_t)(K * N));
    float *c = h_array(H_F32, (size_t)(M * N));
    double *ref = h_alloc(sizeof(double) * (size_t)(M * N));
    h_fill(a, H_F16, (size_t)(M * K), -1, 1);
    h_fill(b, H_F16, (size_t)(K * N), -1, 1);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t q = 0; q < K; q++)
                s += h_get(a, H_F16, (size_t)(i * K + q)) * h_get(b, H_F16, (size_t)(q * N + j));
            ref[i * N + j] = s;
        }
    H_LAUNCH(k, h_ten(h_t2(a, H_F16, M, K)), h_ten(h_t2(b, H_F16, K, N)),
             h_ten(h_t2(c, H_F32, M, N)));
    h_check("addr (a dot; blk_smem_addr is the sm_90a prelude's)", c, H_F32, ref,
            (size_t)(M * N), 1e-4, 1e-4);
}

int main(void)
{
    blkc_module *m = h_compile(h_read_file(BLKC_SOURCE_DIR "/tests/gpu/data/knames.blk"), NULL);
    int nk = blkc_module_kernel_count(m);
    h_ok(nk == NCASES + 1, "the module has %d kernels (want %d)", nk, NCASES + 1);
    for (int i = 0; i < NCASES && i < nk; i++)
        h_ok(strcmp(blkc_module_kernel_name(m, i), cases[i].name) == 0,
             "kernel %d is named %s (want %s)", i, blkc_module_kernel_name(m, i),
             cases[i].name);
    const int64_t n = 300; /* two blocks of 256, a tail */
    float *x = h_array(H_F32, n), *y = h_array(H_F32, n + 4);
    double *ref = h_alloc(sizeof(double) * (n + 4));
    h_fill(x, H_F32, n, -1, 1);
    for (int i = 0; i < NCASES; i++) {
        blkc_kernel *k = h_kernel(m, cases[i].name);
        for (int64_t j = 0; j < n + 4; j++) {
            y[j] = 42.0f;
            ref[j] = j < n ? cases[i].ref(x[j]) : 42.0;
        }
        H_LAUNCH(k, h_ten(h_t1(x, H_F32, n)), h_ten(h_t1(y, H_F32, n)));
        char what[64];
        snprintf(what, sizeof what, "kernel %s", cases[i].name);
        h_check(what, y, H_F32, ref, (size_t)n + 4, 1e-6, 1e-5);
    }
    run_addr(m, 70, 40, 48);
    return h_done();
}
