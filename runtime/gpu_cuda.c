/* gpu_cuda.c — the CUDA driver API, loaded with dlopen("libcuda.so.1") on
 * first use: the device's primary context, modules from a cubin (or PTX),
 * memory, events and cuLaunchKernel. Nothing links libcuda; without it
 * (or without a device) open() fails with -2 and a clear message. Every
 * call first makes the device's primary context current on the calling
 * thread. */
#include "gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[RT_GPU_IPC_BYTES]; } CUipcMemHandle;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CU_ATTR_MAJOR = 75,                 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    CU_ATTR_MINOR = 76,
    CU_ATTR_SMEM_OPTIN = 97,            /* ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    CU_ATTR_SMS = 16,                   /* ..._MULTIPROCESSOR_COUNT */
    CU_FUNC_MAX_DYN_SMEM = 8,           /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
};

static struct {
    void *lib;
    char why[256];   /* why loading failed */
    CUresult (*init)(unsigned);
    CUresult (*count)(int *);
    CUresult (*get)(CUdevice *, int);
    CUresult (*name)(char *, int, CUdevice);
    CUresult (*attr)(int *, int, CUdevice);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*unload)(CUmodule);
    CUresult (*getfn)(CUfunction *, CUmodule, const char *);
    CUresult (*fattr)(CUfunction, int, int);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*h2d)(CUdeviceptr, const void *, size_t);
    CUresult (*d2h)(void *, CUdeviceptr, size_t);
    CUresult (*memset)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                       unsigned, unsigned, unsigned, CUstream, void **, void **);
    CUresult (*ssync)(CUstream);
    CUresult (*csync)(void);
    CUresult (*ev_new)(CUevent *, unsigned);
    CUresult (*ev_free)(CUevent);
    CUresult (*ev_record)(CUevent, CUstream);
    CUresult (*ev_sync)(CUevent);
    CUresult (*ev_ms)(float *, CUevent, CUevent);
    CUresult (*errstr)(CUresult, const char **);
    CUresult (*stream_new)(CUstream *, unsigned);
    CUresult (*stream_free)(CUstream);
    CUresult (*copy_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*peer_enable)(CUcontext, unsigned);
    CUresult (*ipc_get)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned);
    CUresult (*ipc_close)(CUdeviceptr);
    /* optional (GPU ranks' abort flag): NULL when missing */
    CUresult (*host_alloc)(void **, size_t, unsigned);
    CUresult (*host_dptr)(CUdeviceptr *, void *, unsigned);
    CUresult (*host_free)(void *);
    CUresult (*squery)(CUstream);
    /* optional (GPU ranks' bounded copies): the synchronous ones instead */
    CUresult (*h2d_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*d2h_async)(void *, CUdeviceptr, size_t, CUstream);
    /* optional (CUDA 12+, TMA kernels of sm_90a) */
    CUresult (*tmap_encode)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                            const unsigned *, const unsigned *, int, int, int, int);
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void)
{
    const char *names[] = {"libcuda.so.1", "libcuda.so", NULL};
    for (int i = 0; names[i] && !cu.lib; i++)
        cu.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(cu.why, sizeof cu.why, "CUDA driver not found (libcuda.so.1)");
        return;
    }
#define SYM(f, n)                                                            \
    do {                                                                     \
        *(void **)&cu.f = dlsym(cu.lib, n);                                  \
        if (!cu.f) {                                                         \
            snprintf(cu.why, sizeof cu.why, "CUDA driver (libcuda.so.1) "    \
                     "lacks %s: update the driver", n);                      \
            dlclose(cu.lib);                                                 \
            cu.lib = NULL;                                                   \
            return;                                                          \
        }                                                                    \
    } while (0)
    SYM(init, "cuInit");
    SYM(count, "cuDeviceGetCount");
    SYM(get, "cuDeviceGet");
    SYM(name, "cuDeviceGetName");
    SYM(attr, "cuDeviceGetAttribute");
    SYM(retain, "cuDevicePrimaryCtxRetain");
    SYM(release, "cuDevicePrimaryCtxRelease_v2");
    SYM(set_current, "cuCtxSetCurrent");
    SYM(load, "cuModuleLoadData");
    SYM(unload, "cuModuleUnload");
    SYM(getfn, "cuModuleGetFunction");
    SYM(fattr, "cuFuncSetAttribute");
    SYM(alloc, "cuMemAlloc_v2");
    SYM(free, "cuMemFree_v2");
    SYM(h2d, "cuMemcpyHtoD_v2");
    SYM(d2h, "cuMemcpyDtoH_v2");
    SYM(memset, "cuMemsetD8Async");
    SYM(launch, "cuLaunchKernel");
    SYM(ssync, "cuStreamSynchronize");
    SYM(csync, "cuCtxSynchronize");
    SYM(ev_new, "cuEventCreate");
    SYM(ev_free, "cuEventDestroy_v2");
    SYM(ev_record, "cuEventRecord");
    SYM(ev_sync, "cuEventSynchronize");
    SYM(ev_ms, "cuEventElapsedTime");
    SYM(errstr, "cuGetErrorString");
    SYM(stream_new, "cuStreamCreate");
    SYM(stream_free, "cuStreamDestroy_v2");
    SYM(copy_async, "cuMemcpyAsync");
    SYM(peer_enable, "cuCtxEnablePeerAccess");
    SYM(ipc_get, "cuIpcGetMemHandle");
    SYM(ipc_open, "cuIpcOpenMemHandle_v2");
    SYM(ipc_close, "cuIpcCloseMemHandle");
#undef SYM
    *(void **)&cu.host_alloc = dlsym(cu.lib, "cuMemHostAlloc");
    *(void **)&cu.host_dptr = dlsym(cu.lib, "cuMemHostGetDevicePointer_v2");
    *(void **)&cu.host_free = dlsym(cu.lib, "cuMemFreeHost");
    *(void **)&cu.squery = dlsym(cu.lib, "cuStreamQuery");
    *(void **)&cu.h2d_async = dlsym(cu.lib, "cuMemcpyHtoDAsync_v2");
    *(void **)&cu.d2h_async = dlsym(cu.lib, "cuMemcpyDtoHAsync_v2");
    *(void **)&cu.tmap_encode = dlsym(cu.lib, "cuTensorMapEncodeTiled");
}

typedef struct CuDev {
    CUdevice dev;
    CUcontext ctx;
} CuDev;

static int cu_fail(CUresult r, const char *what, char *err, size_t errlen)
{
    const char *s = NULL;
    if (cu.errstr(r, &s) != CUDA_SUCCESS || !s)
        s = "unknown error";
    snprintf(err, errlen, "CUDA: %s failed: %s (%d)", what, s, r);
    return -1;
}

#define CK(call, what)                                                       \
    do {                                                                     \
        CUresult r_ = (call);                                                \
        if (r_ != CUDA_SUCCESS)                                              \
            return cu_fail(r_, what, err, errlen);                           \
    } while (0)

static int cur(void *dev, char *err, size_t errlen)
{
    CK(cu.set_current(((CuDev *)dev)->ctx), "cuCtxSetCurrent");
    return 0;
}

static int c_open(int id, void **out, RtGpuDevInfo *info, char *err,
                  size_t errlen)
{
    pthread_once(&cu_once, cu_load);
    if (!cu.lib) {
        snprintf(err, errlen, "%s", cu.why);
        return -2;
    }
    CUresult r = cu.init(0);
    int n = 0;
    if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && cu.count(&n) == 0 && n == 0)) {
        snprintf(err, errlen, "no CUDA device");
        return -2;
    }
    if (r != CUDA_SUCCESS) {
        const char *s = NULL;
        if (cu.errstr(r, &s) != CUDA_SUCCESS || !s)
            s = "unknown error";
        snprintf(err, errlen, "no CUDA device (cuInit: %s)", s);
        return -2;
    }
    if (id < 0 || id >= n) {
        snprintf(err, errlen, "no CUDA device %d (%d device%s)", id, n,
                 n == 1 ? "" : "s");
        return -2;
    }
    CuDev *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int major = 0, minor = 0, optin = 0;
    if ((r = cu.get(&d->dev, id)) != CUDA_SUCCESS ||
        (r = cu.attr(&major, CU_ATTR_MAJOR, d->dev)) != CUDA_SUCCESS ||
        (r = cu.attr(&minor, CU_ATTR_MINOR, d->dev)) != CUDA_SUCCESS ||
        (r = cu.retain(&d->ctx, d->dev)) != CUDA_SUCCESS) {
        free(d);
        return cu_fail(r, "opening the device", err, errlen);
    }
    if (cu.attr(&optin, CU_ATTR_SMEM_OPTIN, d->dev) != CUDA_SUCCESS || optin <= 0)
        optin = 49152;
    /* compute capability 9.0 compiles for sm_90a, whose arch-specific
     * instructions the Hopper paths use (wgmma, TMA kernels: docs/backends.md
     * "Hopper"); its cubins run on 9.0 devices only, which this is.
     * $BLKC_GPU_ARCH overrides (e.g. sm_90: the mma.sync paths) */
    const char *ov = getenv("BLKC_GPU_ARCH");
    if (ov && *ov)
        snprintf(info->arch, sizeof info->arch, "%s", ov);
    else
        snprintf(info->arch, sizeof info->arch, "sm_%d%d%s", major, minor,
                 major == 9 && minor == 0 ? "a" : "");
    if (cu.name(info->name, (int)sizeof info->name, d->dev) != CUDA_SUCCESS)
        snprintf(info->name, sizeof info->name, "CUDA device %d", id);
    info->max_smem = optin;
    if (cu.attr(&info->sms, CU_ATTR_SMS, d->dev) != CUDA_SUCCESS || info->sms < 0)
        info->sms = 0; /* persistent kernels then launch a block per program */
    info->ticks_per_ms = 1000000; /* %globaltimer counts nanoseconds */
    *out = d;
    return 0;
}

static void c_close(void *dev)
{
    CuDev *d = dev;
    if (!d)
        return;
    cu.release(d->dev);
    free(d);
}

static int c_alloc(void *dev, size_t bytes, uint64_t *dptr, char *err,
                   size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CUdeviceptr p = 0;
    CK(cu.alloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    *dptr = p;
    return 0;
}

static void c_free(void *dev, uint64_t dptr)
{
    char err[8];
    if (dptr && !cur(dev, err, sizeof err))
        cu.free(dptr);
}

static int c_h2d(void *dev, uint64_t dst, const void *src, size_t n, char *err,
                 size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(cu.h2d(dst, src, n), "cuMemcpyHtoD");
    return 0;
}

static int c_d2h(void *dev, void *dst, uint64_t src, size_t n, char *err,
                 size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(cu.d2h(dst, src, n), "cuMemcpyDtoH");
    return 0;
}

static int c_h2d_async(void *dev, uint64_t dst, const void *src, size_t n,
                       void *stream, char *err, size_t errlen)
{
    if (!cu.h2d_async)
        return c_h2d(dev, dst, src, n, err, errlen);
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(cu.h2d_async(dst, src, n, stream), "cuMemcpyHtoDAsync");
    return 0;
}

static int c_d2h_async(void *dev, void *dst, uint64_t src, size_t n,
                       void *stream, char *err, size_t errlen)
{
    if (!cu.d2h_async)
        return c_d2h(dev, dst, src, n, err, errlen);
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(cu.d2h_async(dst, src, n, stream), "cuMemcpyDtoHAsync");
    return 0;
}

static int c_zero(void *dev, uint64_t dst, size_t n, void *stream, char *err,
                  size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(cu.memset(dst, 0, n, stream), "cuMemsetD8Async");
    return 0;
}

static int c_load(void *dev, const void *image, size_t n, void **mod,
                  char *err, size_t errlen)
{
    (void)n;
    if (cur(dev, err, errlen))
        return -1;
    CUmodule m = NULL;
    CK(cu.load(&m, image), "cuModuleLoadData");
    *mod = m;
    return 0;
}

static void c_unload(void *dev, void *mod)
{
    char err[8];
    if (mod && !cur(dev, err, sizeof err))
        cu.unload(mod);
}

static int c_function(void *dev, void *mod, const char *name, long long smem,
                      void **fn, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CUfunction f = NULL;
    CUresult r = cu.getfn(&f, mod, name);
    if (r != CUDA_SUCCESS) {
        char what[300];
        snprintf(what, sizeof what, "cuModuleGetFunction(%s)", name);
        return cu_fail(r, what, err, errlen);
    }
    if (smem > 49152)
        CK(cu.fattr(f, CU_FUNC_MAX_DYN_SMEM, (int)smem),
           "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    *fn = f;
    return 0;
}

static int c_launch(void *dev, void *fn, const int64_t grid[3], int threads,
                    long long smem, void *stream, void **params, void *buf,
                    size_t size, char *err, size_t errlen)
{
    (void)buf;
    (void)size;
    if (cur(dev, err, errlen))
        return -1;
    CK(cu.launch(fn, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                 (unsigned)threads, 1, 1, (unsigned)smem, stream, params, NULL),
       "cuLaunchKernel");
    return 0;
}

static int c_sync(void *dev, void *stream, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(cu.ssync(stream), "cuStreamSynchronize (the kernel)");
    return 0;
}

static int c_event_new(void *dev, void **ev, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(cu.ev_new((CUevent *)ev, 0), "cuEventCreate");
    return 0;
}

static void c_event_free(void *dev, void *ev)
{
    char err[8];
    if (ev && !cur(dev, err, sizeof err))
        cu.ev_free(ev);
}

static int c_event_record(void *dev, void *ev, void *stream, char *err,
                          size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(cu.ev_record(ev, stream), "cuEventRecord");
    return 0;
}

static int c_event_ms(void *dev, void *a, void *b, float *ms, char *err,
                      size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(cu.ev_sync(b), "cuEventSynchronize");
    CK(cu.ev_ms(ms, a, b), "cuEventElapsedTime");
    return 0;
}

static int c_count(int *n, char *err, size_t errlen)
{
    *n = 0;
    if (!cu.lib) {
        snprintf(err, errlen, "%s", cu.why[0] ? cu.why : "CUDA driver not loaded");
        return -1;
    }
    CK(cu.count(n), "cuDeviceGetCount");
    return 0;
}

static int c_stream_new(void *dev, void **stream, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(cu.stream_new((CUstream *)stream, 1 /* CU_STREAM_NON_BLOCKING */),
       "cuStreamCreate");
    return 0;
}

static void c_stream_free(void *dev, void *stream)
{
    char err[8];
    if (stream && !cur(dev, err, sizeof err))
        cu.stream_free(stream);
}

static int c_copy_async(void *dev, uint64_t dst, uint64_t src, size_t n,
                        void *stream, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(cu.copy_async(dst, src, n, stream), "cuMemcpyAsync");
    return 0;
}

static int c_peer_enable(void *dev, void *peer, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CUresult r = cu.peer_enable(((CuDev *)peer)->ctx, 0);
    if (r != CUDA_SUCCESS && r != 704 /* ..._PEER_ACCESS_ALREADY_ENABLED */)
        return cu_fail(r, "cuCtxEnablePeerAccess", err, errlen);
    return 0;
}

static int c_ipc_get(void *dev, uint64_t dptr, void *handle, char *err,
                     size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CUipcMemHandle h;
    CK(cu.ipc_get(&h, dptr), "cuIpcGetMemHandle");
    memcpy(handle, &h, sizeof h);
    return 0;
}

static int c_ipc_open(void *dev, const void *handle, uint64_t *dptr,
                      char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CUipcMemHandle h;
    memcpy(&h, handle, sizeof h);
    CUdeviceptr p = 0;
    CK(cu.ipc_open(&p, h, 1 /* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS */),
       "cuIpcOpenMemHandle");
    *dptr = p;
    return 0;
}

static void c_ipc_close(void *dev, uint64_t dptr)
{
    char err[8];
    if (dptr && !cur(dev, err, sizeof err))
        cu.ipc_close(dptr);
}

/* mapped pinned host memory: CU_MEMHOSTALLOC_PORTABLE (every context)
 * | CU_MEMHOSTALLOC_DEVICEMAP (kernels read it while they run) */
static int c_host_map(void *dev, size_t bytes, void **host, char *err,
                      size_t errlen)
{
    *host = NULL;
    if (!cu.host_alloc || !cu.host_dptr || !cu.host_free) {
        snprintf(err, errlen, "CUDA driver lacks cuMemHostAlloc, "
                 "cuMemHostGetDevicePointer_v2 or cuMemFreeHost");
        return -1;
    }
    if (cur(dev, err, errlen))
        return -1;
    void *p = NULL;
    CK(cu.host_alloc(&p, bytes, 0x01 | 0x02), "cuMemHostAlloc");
    memset(p, 0, bytes);
    *host = p;
    return 0;
}

static int c_host_dptr(void *dev, void *host, uint64_t *dptr, char *err,
                       size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CUdeviceptr p = 0;
    CK(cu.host_dptr(&p, host, 0), "cuMemHostGetDevicePointer");
    *dptr = p;
    return 0;
}

static void c_host_free(void *dev, void *host)
{
    char err[8];
    if (host && cu.host_free && !cur(dev, err, sizeof err))
        cu.host_free(host);
}

static int c_query(void *dev, void *stream, char *err, size_t errlen)
{
    if (!cu.squery) {
        snprintf(err, errlen, "CUDA driver lacks cuStreamQuery");
        return -1;
    }
    if (cur(dev, err, errlen))
        return -1;
    CUresult r = cu.squery(stream);
    if (r == 600) /* CUDA_ERROR_NOT_READY */
        return 1;
    CK(r, "cuStreamQuery");
    return 0;
}

/* cuTensorMapEncodeTiled: interleave none, L2 promotion none, OOB fill
 * zeros, element strides 1 */
static int c_tmap_encode(void *dev, void *map, int dtype, int rank, uint64_t addr,
                         const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
                         int swizzle, char *err, size_t errlen)
{
    if (!cu.tmap_encode) {
        snprintf(err, errlen, "CUDA driver (libcuda.so.1) lacks cuTensorMapEncodeTiled, which "
                 "the TMA kernels of sm_90a need: update the driver (CUDA 12+)");
        return -1;
    }
    if (cur(dev, err, errlen))
        return -1;
    unsigned bx[5], es[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < rank && i < 5; i++)
        bx[i] = box[i];
    CK(cu.tmap_encode(map, dtype, (unsigned)rank, (void *)(uintptr_t)addr, dims, strides, bx, es,
                      0, swizzle, 0, 0),
       "cuTensorMapEncodeTiled");
    return 0;
}

static const RtGpuOps cuda_ops = {
    "CUDA", kDLCUDA, c_open, c_close, c_alloc, c_free, c_h2d, c_d2h, c_zero,
    c_load, c_unload, c_function, c_launch, c_sync, c_event_new,
    c_event_free, c_event_record, c_event_ms, c_count, c_stream_new,
    c_stream_free, c_copy_async, c_peer_enable, c_ipc_get, c_ipc_open,
    c_ipc_close, c_host_map, c_host_dptr, c_host_free, c_query, c_tmap_encode,
    c_h2d_async, c_d2h_async,
};

const RtGpuOps *rt_gpu_cuda_ops(void)
{
    return &cuda_ops;
}
