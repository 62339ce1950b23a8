/* aot_rt.c — libblkc_runtime's own code: what the files written by
 * `blkc compile --emit=aot` call (include/blkc/blkc_runtime.h).
 *
 *   - errors: a thread-local message behind blkc_rt_last_error();
 *   - tensors: blkc_rt_tensor_init, the argument checks launchers share;
 *   - CPU: blkc_rt_cpu_launch runs a kernel's range entry on the pool of
 *     pool.c (the same pool libblkc uses, built a second time into this
 *     library);
 *   - the helpers generated CPU code calls by name (the JIT binds the same
 *     names to backends/cpu/dtype.c and signal.c): f16/bf16/f8 conversions,
 *     notify/wait on signal cells. The conversions are the same algorithm
 *     as dtype.c (round once, ties to even);
 *   - CUDA: the driver API loaded with dlopen, module loading per context,
 *     launch.
 * This file is built only into libblkc_runtime, never into libblkc, so the
 * two libraries can be linked into one program. */
#include "rt.h"
#include "../include/blkc/blkc_runtime.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RT_API __attribute__((visibility("default")))

/* the public header mirrors internal types: keep them in step */
_Static_assert(BLKC_RT_MAX_RANK == IR_MAX_RANK, "rank limit");
_Static_assert(sizeof(blkc_rt_kernel_tensor) == sizeof(BkTensorDesc),
               "CPU tensor ABI");
_Static_assert((int)BLKC_RT_BOOL == (int)DT_BOOL && (int)BLKC_RT_I32 == (int)DT_I32 &&
               (int)BLKC_RT_U64 == (int)DT_U64 && (int)BLKC_RT_F16 == (int)DT_F16 &&
               (int)BLKC_RT_BF16 == (int)DT_BF16 && (int)BLKC_RT_F32 == (int)DT_F32 &&
               (int)BLKC_RT_F64 == (int)DT_F64 && (int)BLKC_RT_F8E5M2 == (int)DT_F8E5M2,
               "dtype codes");
_Static_assert((int)BLKC_RT_ERR_USAGE == (int)BLKC_ERR_USAGE &&
               (int)BLKC_RT_ERR_RUNTIME == (int)BLKC_ERR_RUNTIME &&
               (int)BLKC_RT_ERR_UNSUPPORTED == (int)BLKC_ERR_UNSUPPORTED,
               "status codes");

/* ------------------------------------------------------------ errors */

static _Thread_local char last_error[512];

RT_API const char *blkc_rt_last_error(void)
{
    return last_error;
}

RT_API int blkc_rt_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

static const char *const dtype_names[] = {
    "void", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2",
};

RT_API const char *blkc_rt_dtype_name(int dtype)
{
    if (dtype < 1 || dtype >= (int)(sizeof dtype_names / sizeof *dtype_names))
        return "?";
    return dtype_names[dtype];
}

RT_API int blkc_rt_num_threads(void)
{
    return rt_pool_size();
}

/* ------------------------------------------------------------ tensors */

RT_API int blkc_rt_tensor_init(blkc_rt_tensor *t, void *data,
                               blkc_rt_dtype dtype, int ndim,
                               const int64_t *shape)
{
    if (!t)
        return blkc_rt_error(BLKC_RT_ERR_USAGE, "blkc_rt_tensor_init: NULL tensor");
    memset(t, 0, sizeof *t);
    if (ndim < 0 || ndim > BLKC_RT_MAX_RANK || (ndim > 0 && !shape))
        return blkc_rt_error(BLKC_RT_ERR_USAGE,
                             "blkc_rt_tensor_init: bad rank %d", ndim);
    t->data = data;
    t->dtype = dtype;
    t->ndim = ndim;
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] < 0)
            return blkc_rt_error(BLKC_RT_ERR_USAGE, "blkc_rt_tensor_init: "
                                 "negative extent %lld along dim %d",
                                 (long long)shape[d], d);
        t->shape[d] = shape[d];
        t->stride[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
    return 0;
}

RT_API void blkc_rt_launch_init(blkc_rt_launch *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

RT_API int blkc_rt_check_tensor(const char *kernel, const char *param,
                                const blkc_rt_tensor *t, int dtype, int ndim)
{
    if (!t)
        return blkc_rt_error(BLKC_RT_ERR_USAGE, "%s: tensor %s is NULL",
                             kernel, param);
    if (t->dtype != dtype)
        return blkc_rt_error(BLKC_RT_ERR_USAGE, "%s: tensor %s must be %s, "
                             "got %s", kernel, param, blkc_rt_dtype_name(dtype),
                             blkc_rt_dtype_name(t->dtype));
    if (t->ndim != ndim)
        return blkc_rt_error(BLKC_RT_ERR_USAGE, "%s: tensor %s must have rank "
                             "%d, got %d", kernel, param, ndim, (int)t->ndim);
    bool empty = false;
    for (int d = 0; d < ndim; d++) {
        if (t->shape[d] < 0)
            return blkc_rt_error(BLKC_RT_ERR_USAGE, "%s: tensor %s has a "
                                 "negative extent along dim %d", kernel,
                                 param, d);
        empty |= t->shape[d] == 0;
    }
    if (!t->data && !empty)
        return blkc_rt_error(BLKC_RT_ERR_USAGE, "%s: tensor %s has no data",
                             kernel, param);
    return 0;
}

/* ------------------------------------------------------------ CPU */

static bool grid_given(const blkc_rt_launch *o)
{
    return o && (o->grid[0] || o->grid[1] || o->grid[2]);
}

RT_API int blkc_rt_cpu_launch(const char *kernel, blkc_rt_range_fn fn,
                              void *const *args, const int64_t grid[3],
                              const blkc_rt_launch *opts)
{
    int64_t g[3];
    for (int a = 0; a < 3; a++)
        g[a] = grid_given(opts) ? (opts->grid[a] ? opts->grid[a] : 1) : grid[a];
    BkLaunchCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.world = 1;
    char err[256];
    if (rt_pool_run((BkRangeFn)fn, args, g, &ctx, err, sizeof err))
        return blkc_rt_error(BLKC_RT_ERR_RUNTIME, "%s: %s", kernel, err);
    if (ctx.assert_failed == 1)
        return blkc_rt_error(BLKC_RT_ERR_RUNTIME, "%s: assertion #%d (line %d) "
                             "failed in program (%d, %d, %d)", kernel,
                             (int)ctx.assert_msg, (int)ctx.assert_line,
                             (int)ctx.assert_pid[0], (int)ctx.assert_pid[1],
                             (int)ctx.assert_pid[2]);
    if (ctx.failed)
        return blkc_rt_error(BLKC_RT_ERR_RUNTIME, "%s: a wait on signal "
                             "parameter %lld, cell %lld %s (expected %llu, "
                             "saw %llu)", kernel, (long long)ctx.fail_param,
                             (long long)ctx.fail_cell,
                             ctx.fail_aborted ? "was aborted" : "timed out",
                             (unsigned long long)ctx.fail_expected,
                             (unsigned long long)ctx.fail_seen);
    return 0;
}

/* The helpers compiled kernels call by name (f8/f16 conversions, signal
 * cells) are runtime/khelp.c, built into this library too. */

/* ------------------------------------------------------------ CUDA
 * The driver API through dlopen("libcuda.so.1"): nothing here links a CUDA
 * library. Handles are opaque pointers; CUdevice is an int. */

typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

static struct {
    pthread_once_t once;
    bool ok;
    char why[256];
    CUresult (*Init)(unsigned);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*DeviceGet)(int *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, int);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
    CUresult (*GetErrorString)(CUresult, const char **);
} cu = {.once = PTHREAD_ONCE_INIT};

static pthread_mutex_t cu_lock = PTHREAD_MUTEX_INITIALIZER;

static void cu_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(cu.why, sizeof cu.why, "CUDA driver not found "
                 "(libcuda.so.1): %s", dlerror());
        return;
    }
#define CU_SYM(field, name)                                                \
    do {                                                                   \
        *(void **)&cu.field = dlsym(h, name);                              \
        if (!cu.field) {                                                   \
            snprintf(cu.why, sizeof cu.why, "libcuda.so.1 lacks %s", name); \
            return;                                                        \
        }                                                                  \
    } while (0)
    CU_SYM(Init, "cuInit");
    CU_SYM(CtxGetCurrent, "cuCtxGetCurrent");
    CU_SYM(CtxSetCurrent, "cuCtxSetCurrent");
    CU_SYM(DeviceGet, "cuDeviceGet");
    CU_SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    CU_SYM(ModuleLoadData, "cuModuleLoadData");
    CU_SYM(ModuleGetFunction, "cuModuleGetFunction");
    CU_SYM(FuncSetAttribute, "cuFuncSetAttribute");
    CU_SYM(LaunchKernel, "cuLaunchKernel");
    CU_SYM(GetErrorString, "cuGetErrorString");
#undef CU_SYM
    CUresult r = cu.Init(0);
    if (r != 0) {
        snprintf(cu.why, sizeof cu.why, "cuInit failed (CUDA error %d)", r);
        return;
    }
    cu.ok = true;
}

static int cu_fail(const char *kernel, const char *what, CUresult r)
{
    const char *s = NULL;
    if (cu.GetErrorString)
        cu.GetErrorString(r, &s);
    return blkc_rt_error(BLKC_RT_ERR_RUNTIME, "%s: %s: %s (CUDA error %d)",
                         kernel, what, s ? s : "unknown error", r);
}

/* The modules an image was loaded as, one per context (a short list). */
typedef struct CuLoaded {
    struct CuLoaded *next;
    CUcontext ctx;
    CUmodule mod;
} CuLoaded;

RT_API int blkc_rt_cuda_launch(blkc_rt_cuda_image *img, const char *kernel,
                               const int64_t grid[3], int threads,
                               int64_t smem_bytes, void **params,
                               const blkc_rt_launch *opts)
{
    pthread_once(&cu.once, cu_load);
    if (!cu.ok)
        return blkc_rt_error(BLKC_RT_ERR_UNSUPPORTED, "%s: %s", kernel, cu.why);
    int64_t g[3];
    for (int a = 0; a < 3; a++) {
        g[a] = grid_given(opts) ? (opts->grid[a] ? opts->grid[a] : 1) : grid[a];
        int64_t lim = a == 0 ? INT32_MAX : 65535;
        if (g[a] < 0 || g[a] > lim)
            return blkc_rt_error(BLKC_RT_ERR_RUNTIME, "%s: grid extent %lld "
                                 "along axis %d is out of range (0 .. %lld)",
                                 kernel, (long long)g[a], a, (long long)lim);
    }
    if (g[0] == 0 || g[1] == 0 || g[2] == 0)
        return 0;
    CUcontext ctx = NULL;
    CUresult r = cu.CtxGetCurrent(&ctx);
    if (r != 0)
        return cu_fail(kernel, "cuCtxGetCurrent", r);
    pthread_mutex_lock(&cu_lock);
    if (!ctx) { /* no context: use device 0's primary context */
        int dev = 0;
        r = cu.DeviceGet(&dev, 0);
        if (r == 0)
            r = cu.DevicePrimaryCtxRetain(&ctx, dev);
        if (r == 0)
            r = cu.CtxSetCurrent(ctx);
        if (r != 0) {
            pthread_mutex_unlock(&cu_lock);
            return cu_fail(kernel, "creating a CUDA context on device 0", r);
        }
    }
    CuLoaded *l = img->state;
    while (l && l->ctx != ctx)
        l = l->next;
    if (!l) {
        l = calloc(1, sizeof *l);
        if (!l) {
            pthread_mutex_unlock(&cu_lock);
            return blkc_rt_error(BLKC_RT_ERR_NOMEM, "%s: out of memory", kernel);
        }
        r = cu.ModuleLoadData(&l->mod, img->data);
        if (r != 0) {
            free(l);
            pthread_mutex_unlock(&cu_lock);
            return cu_fail(kernel, "loading the embedded module", r);
        }
        l->ctx = ctx;
        l->next = img->state;
        img->state = l;
    }
    CUmodule mod = l->mod;
    pthread_mutex_unlock(&cu_lock);
    /* the kernel's symbol is blk_k_NAME (BK_KERNEL_PREFIX of blkc's
     * backends/backend.h); images from before it are NAME */
    CUfunction fn;
    char sym[320];
    snprintf(sym, sizeof sym, "blk_k_%s", kernel);
    r = cu.ModuleGetFunction(&fn, mod, sym);
    if (r != 0)
        r = cu.ModuleGetFunction(&fn, mod, kernel);
    if (r != 0)
        return cu_fail(kernel, "cuModuleGetFunction", r);
    if (smem_bytes > 48 * 1024) {
        r = cu.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                (int)smem_bytes);
        if (r != 0)
            return cu_fail(kernel, "raising the dynamic shared memory limit", r);
    }
    r = cu.LaunchKernel(fn, (unsigned)g[0], (unsigned)g[1], (unsigned)g[2],
                        (unsigned)threads, 1, 1, (unsigned)smem_bytes,
                        opts ? (CUstream)opts->stream : NULL, params, NULL);
    if (r != 0)
        return cu_fail(kernel, "cuLaunchKernel", r);
    return 0;
}
