/* harness.h — helpers for execution tests over the public libblkc API:
 * a CPU context, compiling a source string with defines (a failure prints
 * blkc_last_error() and exits 1), DLTensors over C arrays of any dtype with
 * optional strides, launches, f16/bf16 conversions for references (round to
 * nearest even), element access by dtype, comparisons with tolerances that
 * print the first mismatch, and the closing `N passed, N failed` line.
 *
 * On a real GPU (BLKC_TEST_DEVICE=cuda:N or hip:N) every launch mirrors its
 * tensors' host memory in device memory: copied in before the launch and
 * back after it (h_launch), so the tests stay written over C arrays.
 *
 * Everything is static: include it from exactly one test file. Memory from
 * h_alloc/h_read_file and every module are released by h_done(), so the
 * tests stay clean under ASan's leak checker. */
#ifndef BLKC_TESTS_HARNESS_H
#define BLKC_TESTS_HARNESS_H

#include <blkc/blkc.h>
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* not every test uses every helper */
#pragma GCC diagnostic ignored "-Wunused-function"

#ifndef BLKC_SOURCE_DIR
#define BLKC_SOURCE_DIR "."
#endif

/* ------------------------------------------------------------ dtypes */
#define H_BOOL ((DLDataType){kDLBool, 8, 1})
#define H_I8 ((DLDataType){kDLInt, 8, 1})
#define H_I16 ((DLDataType){kDLInt, 16, 1})
#define H_I32 ((DLDataType){kDLInt, 32, 1})
#define H_I64 ((DLDataType){kDLInt, 64, 1})
#define H_U8 ((DLDataType){kDLUInt, 8, 1})
#define H_U16 ((DLDataType){kDLUInt, 16, 1})
#define H_U32 ((DLDataType){kDLUInt, 32, 1})
#define H_U64 ((DLDataType){kDLUInt, 64, 1})
#define H_F16 ((DLDataType){kDLFloat, 16, 1})
#define H_BF16 ((DLDataType){kDLBfloat, 16, 1})
#define H_F32 ((DLDataType){kDLFloat, 32, 1})
#define H_F64 ((DLDataType){kDLFloat, 64, 1})

/* dtype by its .blk name ("f16", "u32", ...); exits on an unknown name */
static DLDataType h_dtype(const char *name)
{
    static const struct { const char *n; DLDataType t; } tab[] = {
        {"bool", {kDLBool, 8, 1}},   {"i8", {kDLInt, 8, 1}},
        {"i16", {kDLInt, 16, 1}},    {"i32", {kDLInt, 32, 1}},
        {"i64", {kDLInt, 64, 1}},    {"u8", {kDLUInt, 8, 1}},
        {"u16", {kDLUInt, 16, 1}},   {"u32", {kDLUInt, 32, 1}},
        {"u64", {kDLUInt, 64, 1}},   {"f16", {kDLFloat, 16, 1}},
        {"bf16", {kDLBfloat, 16, 1}}, {"f32", {kDLFloat, 32, 1}},
        {"f64", {kDLFloat, 64, 1}},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].n, name))
            return tab[i].t;
    fprintf(stderr, "harness: unknown dtype %s\n", name);
    exit(1);
}

static size_t h_dtype_bytes(DLDataType t) { return (size_t)((t.bits + 7) / 8); }
static bool h_dtype_is_float(DLDataType t)
{
    return t.code == kDLFloat || t.code == kDLBfloat;
}

/* ------------------------------------------------------------ f16 / bf16 */
static uint32_t h_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float h_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* f32 -> f16, round to nearest even; overflow gives inf, NaN stays NaN */
static uint16_t h_f32_to_f16(float f)
{
    uint32_t x = h_f2u(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {                       /* subnormal or zero in f16 */
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        int shift = 14 - e;             /* 24-bit significand -> 10-e bits */
        uint32_t half = 1u << (shift - 1);
        uint32_t r = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
        r++;                            /* may carry into the exponent: ok */
    return (uint16_t)(sign | r);
}

static float h_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f)
        return h_u2f(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    return h_u2f(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

/* f32 -> bf16, round to nearest even */
static uint16_t h_f32_to_bf16(float f)
{
    uint32_t x = h_f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}
static float h_bf16_to_f32(uint16_t b) { return h_u2f((uint32_t)b << 16); }

/* round a value through f16 / bf16 (for references) */
static float h_rf16(float f) { return h_f16_to_f32(h_f32_to_f16(f)); }
static float h_rbf16(float f) { return h_bf16_to_f32(h_f32_to_bf16(f)); }

/* ------------------------------------------------------------ elements */
/* Read element i of a dense array of dtype t as a double (ints exact up to
 * 2^53; use h_geti for 64-bit ints). */
static double h_get(const void *p, DLDataType t, size_t i)
{
    const char *c = (const char *)p;
    switch (t.code) {
    case kDLBool: return ((const uint8_t *)c)[i] != 0;
    case kDLInt:
        switch (t.bits) {
        case 8: return ((const int8_t *)c)[i];
        case 16: return ((const int16_t *)c)[i];
        case 32: return ((const int32_t *)c)[i];
        default: return (double)((const int64_t *)c)[i];
        }
    case kDLUInt:
        switch (t.bits) {
        case 8: return ((const uint8_t *)c)[i];
        case 16: return ((const uint16_t *)c)[i];
        case 32: return ((const uint32_t *)c)[i];
        default: return (double)((const uint64_t *)c)[i];
        }
    case kDLBfloat: return h_bf16_to_f32(((const uint16_t *)c)[i]);
    default:
        switch (t.bits) {
        case 16: return h_f16_to_f32(((const uint16_t *)c)[i]);
        case 32: return ((const float *)c)[i];
        default: return ((const double *)c)[i];
        }
    }
}

/* integer element as int64 (u64 values reinterpret) */
static int64_t h_geti(const void *p, DLDataType t, size_t i)
{
    if (t.code == kDLInt && t.bits == 64)
        return ((const int64_t *)p)[i];
    if (t.code == kDLUInt && t.bits == 64)
        return (int64_t)((const uint64_t *)p)[i];
    return (int64_t)h_get(p, t, i);
}

/* Store v into element i, converting as C would (floats to f16/bf16 round
 * to nearest even; float -> int truncates). */
static void h_set(void *p, DLDataType t, size_t i, double v)
{
    char *c = (char *)p;
    switch (t.code) {
    case kDLBool: ((uint8_t *)c)[i] = v != 0; return;
    case kDLInt:
        switch (t.bits) {
        case 8: ((int8_t *)c)[i] = (int8_t)(int64_t)v; return;
        case 16: ((int16_t *)c)[i] = (int16_t)(int64_t)v; return;
        case 32: ((int32_t *)c)[i] = (int32_t)(int64_t)v; return;
        default: ((int64_t *)c)[i] = (int64_t)v; return;
        }
    case kDLUInt:
        switch (t.bits) {
        case 8: ((uint8_t *)c)[i] = (uint8_t)(int64_t)v; return;
        case 16: ((uint16_t *)c)[i] = (uint16_t)(int64_t)v; return;
        case 32: ((uint32_t *)c)[i] = (uint32_t)(int64_t)v; return;
        default: ((uint64_t *)c)[i] = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v; return;
        }
    case kDLBfloat: ((uint16_t *)c)[i] = h_f32_to_bf16((float)v); return;
    default:
        switch (t.bits) {
        case 16: ((uint16_t *)c)[i] = h_f32_to_f16((float)v); return;
        case 32: ((float *)c)[i] = (float)v; return;
        default: ((double *)c)[i] = v; return;
        }
    }
}

/* ------------------------------------------------------------ bookkeeping */
static int h_npass, h_nfail;
static blkc_context *h_ctx_;
static blkc_module *h_mods_[256];
static int h_nmods_;
static void *h_allocs_[1024];
static int h_nallocs_;

static void h_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FATAL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* zeroed memory freed by h_done() */
static void *h_alloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p || h_nallocs_ >= (int)(sizeof h_allocs_ / sizeof h_allocs_[0]))
        h_die("h_alloc(%zu) failed", bytes);
    h_allocs_[h_nallocs_++] = p;
    return p;
}

/* an array of n elements of dtype t */
static void *h_array(DLDataType t, size_t n) { return h_alloc(n * h_dtype_bytes(t)); }

/* a file's contents (e.g. BLKC_SOURCE_DIR "/examples/softmax.blk") */
static char *h_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        h_die("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = (char *)h_alloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n)
        h_die("cannot read %s", path);
    fclose(f);
    return s;
}
/* The blocked matmul `mm` of several tests: C (f32) = A @ B (operands of
 * dtype DT) with a K loop; BLOCKS are its compile-time params ("BM = 32,
 * BN = 32, BK = 16"), EXTRA follows its grid (" warps(4)", or ""). */
#define H_MM_SRC(BLOCKS, DT, EXTRA)                                          \
    "kernel mm<" BLOCKS ">(A: " DT "[M, K], B: " DT "[K, N], C: f32[M, N])\n"  \
    "    grid(cdiv(M, BM), cdiv(N, BN))" EXTRA "\n"                          \
    "{\n"                                                                    \
    "    let m = program_id(0) * BM;\n"                                      \
    "    let n = program_id(1) * BN;\n"                                      \
    "    var acc = zeros(f32, BM, BN);\n"                                    \
    "    for k in 0 .. K step BK {\n"                                        \
    "        acc = dot(A[m +: BM, k +: BK], B[k +: BK, n +: BN], acc);\n"    \
    "    }\n"                                                                \
    "    C[m +: BM, n +: BN] = acc;\n"                                       \
    "}\n"

#define H_EXAMPLE(name) h_read_file(BLKC_SOURCE_DIR "/examples/" name)

/* ------------------------------------------------------------ GPU mirrors
 * A real GPU reads device memory only: for such a device, h_launch copies
 * each host range its tensor arguments span (overlapping ranges merged, so
 * aliased or in-place arguments stay one buffer) to fresh device memory,
 * launches on views of it, and copies the ranges back. The driver comes
 * through dlopen, as libblkc's own runtime does; the CUDA side uses the
 * primary context, which libblkc uses too. */
typedef struct HGpu {
    int kind; /* 0: none (CPU, emulated devices), 1: CUDA, 2: HIP,
                 3: host memory (BLKC_TEST_MIRROR=1 on the CPU) */
    int id;
    void *ctx;
    int (*set_ctx)(void *);
    int (*alloc)(uint64_t *, size_t);
    int (*to_dev)(uint64_t, const void *, size_t);
    int (*to_host)(void *, uint64_t, size_t);
    int (*sync)(void);
    int (*free_)(uint64_t);
    /* HIP's entry points, wrapped to the shapes above */
    int (*hmalloc)(void **, size_t);
    int (*hmemcpy)(void *, const void *, size_t, int);
    int (*hset)(int);
} HGpu;
static HGpu h_gpu_;

static int h_hip_alloc(uint64_t *p, size_t n)
{
    void *q = NULL;
    int r = h_gpu_.hmalloc(&q, n);
    *p = (uint64_t)(uintptr_t)q;
    return r;
}
static int h_hip_to_dev(uint64_t d, const void *h, size_t n)
{
    return h_gpu_.hmemcpy((void *)(uintptr_t)d, h, n, 1 /* HostToDevice */);
}
static int h_hip_to_host(void *h, uint64_t d, size_t n)
{
    return h_gpu_.hmemcpy(h, (const void *)(uintptr_t)d, n, 2 /* DeviceToHost */);
}
static int h_hip_set(void *ctx)
{
    (void)ctx;
    return h_gpu_.hset(h_gpu_.id);
}

#define H_SYM(lib, f, name)                                              \
    do {                                                                 \
        *(void **)&(f) = dlsym(lib, name);                               \
        if (!(f))                                                        \
            h_die("GPU mirror: %s has no %s", #lib, name);               \
    } while (0)

/* BLKC_TEST_MIRROR=1 on the CPU: the same mirrors in other host memory,
 * which checks the mirroring itself where no GPU is */
static int h_host_alloc(uint64_t *p, size_t n)
{
    *p = (uint64_t)(uintptr_t)malloc(n);
    return !*p;
}
static int h_host_to_dev(uint64_t d, const void *h, size_t n)
{
    memcpy((void *)(uintptr_t)d, h, n);
    return 0;
}
static int h_host_to_host(void *h, uint64_t d, size_t n)
{
    memcpy(h, (const void *)(uintptr_t)d, n);
    return 0;
}
static int h_host_free(uint64_t d)
{
    free((void *)(uintptr_t)d);
    return 0;
}
static int h_host_nop(void) { return 0; }
static int h_host_set(void *ctx)
{
    (void)ctx;
    return 0;
}

/* called once by h_ctx with the device's name */
static void h_gpu_open(const char *dev)
{
    const char *m = getenv("BLKC_TEST_MIRROR");
    if (!strcmp(dev, "cpu") && m && !strcmp(m, "1")) {
        h_gpu_ = (HGpu){.kind = 3, .set_ctx = h_host_set, .alloc = h_host_alloc,
                        .to_dev = h_host_to_dev, .to_host = h_host_to_host,
                        .sync = h_host_nop, .free_ = h_host_free};
        return;
    }
    int cuda = !strncmp(dev, "cuda", 4) && strcmp(dev, "cuda-emu");
    int hip = !strncmp(dev, "hip", 3) && strcmp(dev, "hip-emu");
    if (!cuda && !hip)
        return;
    const char *c = strchr(dev, ':');
    h_gpu_.id = c ? atoi(c + 1) : 0;
    if (cuda) {
        void *cu = dlopen("libcuda.so.1", RTLD_NOW);
        if (!cu)
            h_die("GPU mirror: dlopen(libcuda.so.1): %s", dlerror());
        int (*init)(unsigned), (*get)(int *, int), (*retain)(void **, int);
        H_SYM(cu, init, "cuInit");
        H_SYM(cu, get, "cuDeviceGet");
        H_SYM(cu, retain, "cuDevicePrimaryCtxRetain");
        H_SYM(cu, h_gpu_.set_ctx, "cuCtxSetCurrent");
        H_SYM(cu, h_gpu_.alloc, "cuMemAlloc_v2");
        H_SYM(cu, h_gpu_.to_dev, "cuMemcpyHtoD_v2");
        H_SYM(cu, h_gpu_.to_host, "cuMemcpyDtoH_v2");
        H_SYM(cu, h_gpu_.sync, "cuCtxSynchronize");
        H_SYM(cu, h_gpu_.free_, "cuMemFree_v2");
        int d = 0;
        if (init(0) || get(&d, h_gpu_.id) || retain(&h_gpu_.ctx, d))
            h_die("GPU mirror: no CUDA context on %s", dev);
        h_gpu_.kind = 1;
    } else {
        void *hl = dlopen("libamdhip64.so", RTLD_NOW);
        if (!hl)
            hl = dlopen("libamdhip64.so.6", RTLD_NOW);
        if (!hl)
            h_die("GPU mirror: dlopen(libamdhip64.so): %s", dlerror());
        H_SYM(hl, h_gpu_.hmalloc, "hipMalloc");
        H_SYM(hl, h_gpu_.hmemcpy, "hipMemcpy");
        H_SYM(hl, h_gpu_.hset, "hipSetDevice");
        H_SYM(hl, h_gpu_.sync, "hipDeviceSynchronize");
        H_SYM(hl, h_gpu_.free_, "hipFree");
        h_gpu_.alloc = h_hip_alloc;
        h_gpu_.to_dev = h_hip_to_dev;
        h_gpu_.to_host = h_hip_to_host;
        h_gpu_.set_ctx = h_hip_set;
        h_gpu_.kind = 2;
    }
}

/* the host bytes [lo, hi) that tensor t's elements span */
static void h_span(const DLTensor *t, uintptr_t *lo, uintptr_t *hi)
{
    size_t es = (size_t)((t->dtype.bits * t->dtype.lanes + 7) / 8);
    intptr_t first = 0, last = 0, stride = 1;
    int empty = 0;
    for (int i = t->ndim - 1; i >= 0; i--) {
        intptr_t st = t->strides ? (intptr_t)t->strides[i] : stride;
        if (t->shape[i] == 0)
            empty = 1;
        else if (st < 0)
            first += st * (intptr_t)(t->shape[i] - 1);
        else
            last += st * (intptr_t)(t->shape[i] - 1);
        stride *= (intptr_t)t->shape[i];
    }
    uintptr_t base = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    *lo = base + (uintptr_t)(first * (intptr_t)es);
    *hi = empty ? *lo + 1 : base + (uintptr_t)(last * (intptr_t)es) + es;
}

/* Launch k; on a real GPU through device mirrors of its tensors' memory.
 * Returns the launch's status (the mirrors' own failures exit 1). */
static blkc_status h_launch(blkc_kernel *k, const blkc_arg *args, int n,
                            const blkc_launch_options *o)
{
    if (!h_gpu_.kind)
        return blkc_kernel_launch(k, args, n, o);
    enum { MAXA = 64 };
    if (n > MAXA)
        h_die("GPU mirror: %d arguments (at most %d)", n, MAXA);
    blkc_arg a[MAXA];
    DLTensor dl[MAXA];
    uintptr_t lo[MAXA], hi[MAXA];
    int blk[MAXA], nb = 0;
    uintptr_t blo[MAXA], bhi[MAXA];
    uint64_t dev[MAXA];
    if (h_gpu_.set_ctx(h_gpu_.ctx))
        h_die("GPU mirror: cannot make the device current");
    for (int i = 0; i < n; i++) {
        a[i] = args[i];
        blk[i] = -1;
        if (args[i].kind != BLKC_ARG_TENSOR || !args[i].v.tensor)
            continue;
        h_span(args[i].v.tensor, &lo[i], &hi[i]);
        blk[i] = nb;
        blo[nb] = lo[i];
        bhi[nb] = hi[i];
        nb++;
    }
    /* merge overlapping blocks until none overlap */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int x = 0; x < nb; x++)
            for (int y = x + 1; y < nb; y++) {
                if (blo[y] >= bhi[x] || blo[x] >= bhi[y])
                    continue;
                blo[x] = blo[x] < blo[y] ? blo[x] : blo[y];
                bhi[x] = bhi[x] > bhi[y] ? bhi[x] : bhi[y];
                for (int i = 0; i < n; i++)
                    if (blk[i] == y)
                        blk[i] = x;
                    else if (blk[i] == nb - 1)
                        blk[i] = y;
                blo[y] = blo[nb - 1];
                bhi[y] = bhi[nb - 1];
                nb--;
                changed = 1;
                y--;
            }
    }
    for (int b = 0; b < nb; b++)
        if (h_gpu_.alloc(&dev[b], bhi[b] - blo[b]) ||
            h_gpu_.to_dev(dev[b], (const void *)blo[b], bhi[b] - blo[b]))
            h_die("GPU mirror: device memory of %zu bytes", (size_t)(bhi[b] - blo[b]));
    for (int i = 0; i < n; i++) {
        if (blk[i] < 0)
            continue;
        dl[i] = *args[i].v.tensor;
        dl[i].data = (void *)(uintptr_t)(dev[blk[i]] + ((uintptr_t)args[i].v.tensor->data - blo[blk[i]]));
        if (h_gpu_.kind != 3) {
            dl[i].device.device_type = h_gpu_.kind == 1 ? kDLCUDA : kDLROCM;
            dl[i].device.device_id = h_gpu_.id;
        }
        a[i].v.tensor = &dl[i];
    }
    blkc_status s = blkc_kernel_launch(k, a, n, o);
    if (h_gpu_.sync())
        h_die("GPU mirror: synchronize after the launch failed");
    for (int b = 0; b < nb; b++) {
        if (h_gpu_.to_host((void *)blo[b], dev[b], bhi[b] - blo[b]))
            h_die("GPU mirror: copy back of %zu bytes", (size_t)(bhi[b] - blo[b]));
        h_gpu_.free_(dev[b]);
    }
    return s;
}

/* the context: $BLKC_TEST_DEVICE (cuda-emu, hip-emu: tests/exec on the
 * emulated devices, label emu; cuda:0 in the GPU build, label gpu), else
 * cpu. A device not supported here (no driver, no GPU) exits 77, a skip. */
static blkc_context *h_ctx(void)
{
    const char *dev = getenv("BLKC_TEST_DEVICE");
    if (!dev || !*dev)
        dev = "cpu";
    if (!h_ctx_) {
        blkc_status st = blkc_context_create(dev, &h_ctx_);
        if (st == BLKC_ERR_UNSUPPORTED) { /* no driver or device: a skip */
            printf("skip: %s\n", blkc_last_error());
            exit(77);
        }
        if (st != BLKC_OK)
            h_die("blkc_context_create(%s): %s", dev, blkc_last_error());
        h_gpu_open(dev);
    }
    return h_ctx_;
}

/* NULL-terminated define lists: H_DEFS("BM=32", "BN=32") */
#define H_DEFS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Compile src with defines (NULL-terminated, or NULL). Exits 1 with the
 * diagnostics on failure. */
static blkc_module *h_compile(const char *src, const char *const *defs)
{
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    int n = 0;
    while (defs && defs[n])
        n++;
    o.defines = defs;
    o.ndefines = n;
    o.filename = "test.blk";
    blkc_module *m = NULL;
    blkc_status s = blkc_module_create(h_ctx(), src, strlen(src), &o, &m);
    if (s != BLKC_OK) {
        fprintf(stderr, "compile failed (%s):\n%s\n--- source ---\n%s\n",
                blkc_status_string(s), blkc_last_error(), src);
        exit(1);
    }
    if (h_nmods_ < (int)(sizeof h_mods_ / sizeof h_mods_[0]))
        h_mods_[h_nmods_++] = m;
    return m;
}

/* kernel `name` of m (NULL: the only/first kernel) */
static blkc_kernel *h_kernel(blkc_module *m, const char *name)
{
    if (!name) {
        if (blkc_module_kernel_count(m) < 1)
            h_die("module has no kernels");
        name = blkc_module_kernel_name(m, 0);
    }
    blkc_kernel *k = NULL;
    if (blkc_module_get_kernel(m, name, &k) != BLKC_OK)
        h_die("no kernel %s: %s", name, blkc_last_error());
    return k;
}

/* compile and take the first kernel */
static blkc_kernel *h_build(const char *src, const char *const *defs)
{
    return h_kernel(h_compile(src, defs), NULL);
}

/* ------------------------------------------------------------ tensors */
typedef struct HTensor {
    DLTensor t;
    int64_t shape[8];
    int64_t strides[8];
} HTensor;
static HTensor h_tpool_[512];
static int h_ntpool_;

/* A DLTensor over data (not copied). strides NULL = compact row-major. */
static DLTensor *h_tensor(void *data, DLDataType dt, int ndim,
                          const int64_t *shape, const int64_t *strides)
{
    if (h_ntpool_ >= (int)(sizeof h_tpool_ / sizeof h_tpool_[0]) || ndim > 8)
        h_die("too many tensors");
    HTensor *h = &h_tpool_[h_ntpool_++];
    memset(h, 0, sizeof *h);
    for (int i = 0; i < ndim; i++) {
        h->shape[i] = shape[i];
        if (strides)
            h->strides[i] = strides[i];
    }
    h->t.data = data;
    h->t.device.device_type = kDLCPU;
    h->t.device.device_id = 0;
    h->t.ndim = ndim;
    h->t.dtype = dt;
    h->t.shape = h->shape;
    h->t.strides = strides ? h->strides : NULL;
    h->t.byte_offset = 0;
    return &h->t;
}
static DLTensor *h_t1(void *d, DLDataType t, int64_t n0)
{
    return h_tensor(d, t, 1, (int64_t[]){n0}, NULL);
}
static DLTensor *h_t2(void *d, DLDataType t, int64_t n0, int64_t n1)
{
    return h_tensor(d, t, 2, (int64_t[]){n0, n1}, NULL);
}
static DLTensor *h_t3(void *d, DLDataType t, int64_t n0, int64_t n1, int64_t n2)
{
    return h_tensor(d, t, 3, (int64_t[]){n0, n1, n2}, NULL);
}

/* ------------------------------------------------------------ args, launch */
static blkc_arg h_ten(const DLTensor *t)
{
    blkc_arg a;
    a.kind = BLKC_ARG_TENSOR;
    a.v.tensor = t;
    return a;
}
static blkc_arg h_int(int64_t i)
{
    blkc_arg a;
    a.kind = BLKC_ARG_INT;
    a.v.i = i;
    return a;
}
static blkc_arg h_flt(double f)
{
    blkc_arg a;
    a.kind = BLKC_ARG_FLOAT;
    a.v.f = f;
    return a;
}

/* Launch with an optional grid override (NULL = the kernel's grid). Exits
 * 1 with blkc_last_error() on failure. */
static void h_launch_grid(blkc_kernel *k, const blkc_arg *args, int n,
                          const int64_t *grid)
{
    blkc_launch_options o;
    blkc_launch_options_init(&o);
    if (grid)
        for (int i = 0; i < 3; i++)
            o.grid[i] = grid[i];
    blkc_status s = h_launch(k, args, n, &o);
    if (s != BLKC_OK)
        h_die("launch failed (%s): %s", blkc_status_string(s), blkc_last_error());
}
#define H_ARGS(...) ((const blkc_arg[]){__VA_ARGS__})
#define H_NARGS(...) ((int)(sizeof((blkc_arg[]){__VA_ARGS__}) / sizeof(blkc_arg)))
/* H_LAUNCH(k, h_ten(a), h_ten(b), h_int(n)) */
#define H_LAUNCH(k, ...) h_launch_grid(k, H_ARGS(__VA_ARGS__), H_NARGS(__VA_ARGS__), NULL)

/* ------------------------------------------------------------ random */
static uint64_t h_rng_ = 0x9e3779b97f4a7c15ull;
static void h_seed(uint64_t s) { h_rng_ = s * 0x9e3779b97f4a7c15ull + 1; }
static uint64_t h_rand_u64(void)
{
    h_rng_ ^= h_rng_ << 13;
    h_rng_ ^= h_rng_ >> 7;
    h_rng_ ^= h_rng_ << 17;
    return h_rng_;
}
/* uniform in [lo, hi) */
static double h_randu(double lo, double hi)
{
    return lo + (hi - lo) * (double)(h_rand_u64() >> 11) * (1.0 / 9007199254740992.0);
}
/* integer in [lo, hi] */
static int64_t h_randi(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(h_rand_u64() % (uint64_t)(hi - lo + 1));
}
/* fill n elements of dtype t uniformly in [lo, hi) (ints: [lo, hi]) */
static void h_fill(void *p, DLDataType t, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        h_set(p, t, i, h_dtype_is_float(t) ? h_randu(lo, hi)
                                            : (double)h_randi((int64_t)lo, (int64_t)hi));
}

/* ------------------------------------------------------------ checks */
static void h_ok(bool cond, const char *fmt, ...)
{
    if (cond) {
        h_npass++;
        return;
    }
    h_nfail++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static bool h_close(double got, double ref, double atol, double rtol)
{
    if (isnan(ref))
        return isnan(got);
    if (isinf(ref))
        return got == ref;
    return fabs(got - ref) <= atol + rtol * fabs(ref);
}

/* Compare n elements of dtype t at got with doubles ref; counts one check
 * and prints the first mismatch (and how many there are). */
static bool h_check(const char *what, const void *got, DLDataType t,
                    const double *ref, size_t n, double atol, double rtol)
{
    size_t bad = 0, first = 0;
    double maxerr = 0;
    for (size_t i = 0; i < n; i++) {
        double g = h_get(got, t, i);
        if (!h_close(g, ref[i], atol, rtol)) {
            if (!bad++)
                first = i;
        }
        if (!isnan(ref[i]) && !isinf(ref[i]) && fabs(g - ref[i]) > maxerr)
            maxerr = fabs(g - ref[i]);
    }
    if (bad) {
        h_ok(false, "%s: %zu/%zu mismatches; first at [%zu]: got %.9g, want %.9g "
             "(atol %g rtol %g, max abs err %g)", what, bad, n, first,
             h_get(got, t, first), ref[first], atol, rtol, maxerr);
        return false;
    }
    h_ok(true, "%s", what);
    return true;
}

/* exact comparison of 64-bit integer elements */
static bool h_check_i(const char *what, const void *got, DLDataType t,
                      const int64_t *ref, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t g = h_geti(got, t, i);
        if (g != ref[i]) {
            size_t bad = 0;
            for (size_t j = i; j < n; j++)
                bad += h_geti(got, t, j) != ref[j];
            h_ok(false, "%s: %zu/%zu mismatches; first at [%zu]: got %lld, want %lld",
                 what, bad, n, i, (long long)g, (long long)ref[i]);
            return false;
        }
    }
    h_ok(true, "%s", what);
    return true;
}

/* Print `N passed, N failed`, release everything; returns the exit code. */
static int h_done(void)
{
    printf("%d passed, %d failed\n", h_npass, h_nfail);
    for (int i = 0; i < h_nmods_; i++)
        blkc_module_destroy(h_mods_[i]);
    h_nmods_ = 0;
    if (h_ctx_)
        blkc_context_destroy(h_ctx_);
    h_ctx_ = NULL;
    for (int i = 0; i < h_nallocs_; i++)
        free(h_allocs_[i]);
    h_nallocs_ = 0;
    return h_nfail ? 1 : 0;
}

#endif
