/* gpu_vec_exec.c — runs the specialized GPU forms on an NVIDIA GPU and
 * checks them against references computed here in C.
 *
 * The hand-built kernels of kernels.h (vector_add, softmax, matmul_f16 with
 * stages(3)) get the IR_ASSUME_* facts of their actual arguments, computed
 * as compiler/cache.c does (so 128-bit vectors and the cp.async pipeline are
 * used where the facts allow), are compiled to a cubin for the device's arch
 * and launched through the CUDA driver API (dlopen, like runtime/gpu_cuda.c),
 * once per path: default, BLKC_GPU_NOPIPE=1, BLKC_GPU_NOVEC=1,
 * BLKC_GPU_NOSYNCELIM=1, BLKC_GPU_NOHOIST=1. Sizes leave tails: a vector cut by the bounds
 * (vector_add N = 1003, softmax rows of 1008 < BLOCK), rows and a K tail the cp.async zero-fill must cover
 * (matmul M = 200, K = 112 with BK = 32, N = 144).
 * Exit 77 without libcuda / a device (this machine); 0 when all match. */
#include "backends/backend.h"
#include "backends/gpu/gpu_emit.h"
#include "compiler/ir.h"
#include "nvrtc/kernels.h"
#include "runtime/rt.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUres;
typedef unsigned long long CUdptr;
static struct {
    CUres (*Init)(unsigned);
    CUres (*DeviceGet)(int *, int);
    CUres (*DeviceGetAttribute)(int *, int, int);
    CUres (*PrimaryCtxRetain)(void **, int);
    CUres (*CtxSetCurrent)(void *);
    CUres (*ModuleLoadData)(void **, const void *);
    CUres (*ModuleUnload)(void *);
    CUres (*ModuleGetFunction)(void **, void *, const char *);
    CUres (*FuncSetAttribute)(void *, int, int);
    CUres (*MemAlloc)(CUdptr *, size_t);
    CUres (*MemFree)(CUdptr);
    CUres (*HtoD)(CUdptr, const void *, size_t);
    CUres (*DtoH)(void *, CUdptr, size_t);
    CUres (*Launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, unsigned, void *, void **, void **);
    CUres (*CtxSynchronize)(void);
} cu;

static char arch[16];
static int failures;

static int cu_open(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
#define SYM(f, n) if (!(*(void **)&cu.f = dlsym(h, n))) return -1
    SYM(Init, "cuInit");
    SYM(DeviceGet, "cuDeviceGet");
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(CtxSetCurrent, "cuCtxSetCurrent");
    SYM(ModuleLoadData, "cuModuleLoadData");
    SYM(ModuleUnload, "cuModuleUnload");
    SYM(ModuleGetFunction, "cuModuleGetFunction");
    SYM(FuncSetAttribute, "cuFuncSetAttribute");
    SYM(MemAlloc, "cuMemAlloc_v2");
    SYM(MemFree, "cuMemFree_v2");
    SYM(HtoD, "cuMemcpyHtoD_v2");
    SYM(DtoH, "cuMemcpyDtoH_v2");
    SYM(Launch, "cuLaunchKernel");
    SYM(CtxSynchronize, "cuCtxSynchronize");
#undef SYM
    int dev, ma, mi;
    void *ctx;
    if (cu.Init(0) || cu.DeviceGet(&dev, 0) ||
        cu.DeviceGetAttribute(&ma, 75, dev) || /* COMPUTE_CAPABILITY_MAJOR */
        cu.DeviceGetAttribute(&mi, 76, dev) || cu.PrimaryCtxRetain(&ctx, dev) ||
        cu.CtxSetCurrent(ctx))
        return -1;
    snprintf(arch, sizeof arch, "sm_%d%d", ma, mi);
    return 0;
}

/* A device tensor as the kernel ABI passes it (BlkTensor<T, R>). */
typedef struct {
    CUdptr data;
    long long shape[2], stride[2]; /* rank 1 uses shape[0], stride[0] only */
} Tens;

static void *tens_arg(Tens *t, int rank, unsigned char *buf)
{
    /* { T *data; long long shape[R]; long long stride[R]; } */
    memcpy(buf, &t->data, 8);
    memcpy(buf + 8, t->shape, 8 * (size_t)rank);
    memcpy(buf + 8 + 8 * (size_t)rank, t->stride, 8 * (size_t)rank);
    return buf;
}

/* The facts runtime/bind.c (rt_tensor_assume) computes for contiguous t. */
static uint32_t facts(const IrParam *p, const Tens *t)
{
    uint32_t a = (t->data & 15) == 0 ? IR_ASSUME_ALIGN16 : 0;
    a |= IR_ASSUME_UNIT_INNER;
    for (int d = 0; d < p->rank; d++) {
        if (d < p->rank - 1 && t->stride[d] % 16 == 0)
            a |= IR_ASSUME_STRIDE16(d);
        if (p->dims[d] < 0 && t->shape[d] % 16 == 0)
            a |= IR_ASSUME_DIM16(d);
    }
    return a;
}

/* Builds kernel `name` for arguments t[], compiles and launches it. */
static int run(const char *name, int stages, Tens *t, int nt, unsigned gx,
               unsigned gy)
{
    IrModule *m = k_build_one(name);
    IrFunc *f = m->funcs[0];
    if (stages)
        f->stages = stages;
    for (int i = 0; i < nt; i++)
        f->params[i].assume = facts(&f->params[i], &t[i]);
    BkOptions o = {arch, 3};
    DslBuf bin = {0};
    char err[4096] = "";
    BkGpuKernelInfo ki;
    int rc = -1;
    void *mod = NULL, *fn = NULL;
    if (bk_cuda_backend.emit(m, &o, "cubin", &bin, err, sizeof err) < 0 ||
        bk_gpu_kernel_info(f, &bk_gpu_cuda_dialect, NULL, &ki, err, sizeof err) < 0) {
        printf("FAIL %s: %s\n", name, err);
        goto out;
    }
    char sym[300];
    snprintf(sym, sizeof sym, BK_KERNEL_PREFIX "%s", name); /* backend.h */
    if (cu.ModuleLoadData(&mod, bin.data) || cu.ModuleGetFunction(&fn, mod, sym) ||
        (ki.smem_bytes > 48 * 1024 &&
         cu.FuncSetAttribute(fn, 8, (int)ki.smem_bytes))) { /* MAX_DYNAMIC_SHARED */
        printf("FAIL %s: module load\n", name);
        goto out;
    }
    unsigned char bufs[4][40];
    void *args[4];
    for (int i = 0; i < nt; i++)
        args[i] = tens_arg(&t[i], f->params[i].rank, bufs[i]);
    if (cu.Launch(fn, gx, gy, 1, (unsigned)ki.threads, 1, 1, (unsigned)ki.smem_bytes,
                  NULL, args, NULL) ||
        cu.CtxSynchronize()) {
        printf("FAIL %s: launch\n", name);
        goto out;
    }
    rc = 0;
out:
    if (mod)
        cu.ModuleUnload(mod);
    dsl_buf_free(&bin);
    ir_module_free(m);
    if (rc)
        failures++;
    return rc;
}

static CUdptr dev_put(const void *h, size_t n)
{
    CUdptr d = 0;
    if (cu.MemAlloc(&d, n) || cu.HtoD(d, h, n))
        return 0;
    return d;
}

static void check(const char *what, const float *got, const float *want, size_t n,
                  double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])))) {
            printf("FAIL %s: element %zu is %g, expected %g\n", what, i, got[i], want[i]);
            failures++;
            return;
        }
    printf("ok %s\n", what);
}

static void t_vector_add(const char *tag)
{
    enum { N = 1003 };
    static float x[N], y[N], z[N], want[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 37) * 0.5f;
        y[i] = (float)(i % 11) - 3.0f;
        want[i] = x[i] + y[i];
    }
    Tens t[3] = {{dev_put(x, sizeof x), {N}, {1}}, {dev_put(y, sizeof y), {N}, {1}},
                 {dev_put(z, sizeof z), {N}, {1}}};
    char what[96];
    snprintf(what, sizeof what, "vector_add N=%d %s", N, tag);
    if (run("vector_add", 0, t, 3, (N + 255) / 256, 1) == 0 &&
        !cu.DtoH(z, t[2].data, sizeof z))
        check(what, z, want, N, 0);
    for (int i = 0; i < 3; i++)
        cu.MemFree(t[i].data);
}

static void t_softmax(const char *tag)
{
    enum { R = 5, C = 1008 }; /* BLOCK = 1024: a cut-off tail per row;
                                * C % 16 == 0 gives STRIDE16(0) */
    static float x[R * C], y[R * C], want[R * C];
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, s = 0;
        for (int c = 0; c < C; c++) {
            x[r * C + c] = (float)((r * 131 + c * 17) % 97) / 16.0f - 3.0f;
            mx = fmax(mx, x[r * C + c]);
        }
        for (int c = 0; c < C; c++)
            s += exp(x[r * C + c] - mx);
        for (int c = 0; c < C; c++)
            want[r * C + c] = (float)(exp(x[r * C + c] - mx) / s);
    }
    Tens t[2] = {{dev_put(x, sizeof x), {R, C}, {C, 1}},
                 {dev_put(y, sizeof y), {R, C}, {C, 1}}};
    char what[96];
    snprintf(what, sizeof what, "softmax %dx%d %s", R, C, tag);
    if (run("softmax", 0, t, 2, R, 1) == 0 && !cu.DtoH(y, t[1].data, sizeof y))
        check(what, y, want, (size_t)R * C, 1e-5);
    for (int i = 0; i < 2; i++)
        cu.MemFree(t[i].data);
}

static void t_matmul(const char *tag)
{
    enum { M = 200, K = 112, N = 144 }; /* K % 32 != 0: a zero-filled tail */
    static uint16_t a[M * K], b[K * N], c[M * N];
    static float got[M * N], want[M * N];
    /* multiples of 1/4 in [-0.75, 0.75]: every product and sum is exact in
     * f32 and every result exact in f16, so any order gives the same bits */
    for (int i = 0; i < M * K; i++)
        a[i] = (uint16_t)rt_small_float_encode(((i * 3) % 7 - 3) * 0.25, DT_F16);
    for (int i = 0; i < K * N; i++)
        b[i] = (uint16_t)rt_small_float_encode(((i * 5) % 7 - 3) * 0.25, DT_F16);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += rt_small_float_decode(a[i * K + k], DT_F16) *
                     rt_small_float_decode(b[k * N + j], DT_F16);
            want[i * N + j] = (float)rt_small_float_decode(
                rt_small_float_encode(s, DT_F16), DT_F16);
        }
    Tens t[3] = {{dev_put(a, sizeof a), {M, K}, {K, 1}},
                 {dev_put(b, sizeof b), {K, N}, {N, 1}},
                 {dev_put(c, sizeof c), {M, N}, {N, 1}}};
    char what[96];
    snprintf(what, sizeof what, "matmul_f16 %dx%dx%d stages(3) %s", M, K, N, tag);
    if (run("matmul_f16", 3, t, 3, (M + 63) / 64, (N + 63) / 64) == 0 &&
        !cu.DtoH(c, t[2].data, sizeof c)) {
        for (int i = 0; i < M * N; i++)
            got[i] = (float)rt_small_float_decode(c[i], DT_F16);
        check(what, got, want, (size_t)M * N, 0);
    }
    for (int i = 0; i < 3; i++)
        cu.MemFree(t[i].data);
}

int main(void)
{
    (void)k_build_all;
    if (cu_open() < 0) {
        printf("skip: no CUDA driver or device\n");
        return 77;
    }
    static const char *const env[] = {NULL, "BLKC_GPU_NOPIPE", "BLKC_GPU_NOVEC",
                                      "BLKC_GPU_NOSYNCELIM", "BLKC_GPU_NOHOIST"};
    for (int i = 0; i < 5; i++) {
        unsetenv("BLKC_GPU_NOHOIST");
        unsetenv("BLKC_GPU_NOPIPE");
        unsetenv("BLKC_GPU_NOVEC");
        unsetenv("BLKC_GPU_NOSYNCELIM");
        if (env[i])
            setenv(env[i], "1", 1);
        const char *tag = env[i] ? env[i] : "default";
        t_vector_add(tag);
        t_softmax(tag);
        t_matmul(tag);
    }
    printf("%d failure(s) on %s\n", failures, arch);
    return failures ? 1 : 0;
}
