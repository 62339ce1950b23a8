/* gpu_hip.c — the HIP runtime, loaded with dlopen("libamdhip64.so") on
 * first use: code objects through hipModuleLoadData, memory, events and
 * hipModuleLaunchKernel (arguments as one packed buffer through `extra`,
 * which every ROCm version accepts), and what GPU ranks need (gpu_ranks.c:
 * non-blocking streams, hipMemcpyAsync between device addresses, peer
 * access, IPC handles). Nothing links libamdhip64; without it (or without
 * a device) open() fails with -2 and a clear message. Every call first
 * selects the device on the calling thread. */
#include "gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
typedef void *hipModule_t;
typedef void *hipFunction_t;
typedef void *hipStream_t;
typedef void *hipEvent_t;
typedef struct { char reserved[RT_GPU_IPC_BYTES]; } hipIpcMemHandle_t; /* HIP_IPC_HANDLE_SIZE */

enum {
    HIP_SUCCESS = 0,
    HIP_ATTR_CLOCK_INSTRUCTION_RATE = 10000, /* hipDeviceAttributeClockInstructionRate */
    HIP_ERROR_INVALID_VALUE = 1,             /* hipErrorInvalidValue */
    HIP_ERROR_PEER_ENABLED = 704,            /* hipErrorPeerAccessAlreadyEnabled */
    HIP_STREAM_NON_BLOCKING = 1,             /* hipStreamNonBlocking */
    HIP_MEMCPY_DEFAULT = 4,                  /* hipMemcpyDefault: kind from the addresses */
};
#define HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define HIP_LAUNCH_PARAM_END ((void *)0x03)

static struct {
    void *lib;
    char why[256];
    hipError_t (*init)(unsigned);
    hipError_t (*count)(int *);
    hipError_t (*set)(int);
    hipError_t (*attr)(int *, int, int);
    hipError_t (*props)(void *, int);
    hipError_t (*load)(hipModule_t *, const void *);
    hipError_t (*unload)(hipModule_t);
    hipError_t (*getfn)(hipFunction_t *, hipModule_t, const char *);
    hipError_t (*alloc)(void **, size_t);
    hipError_t (*free)(void *);
    hipError_t (*h2d)(void *, const void *, size_t);
    hipError_t (*d2h)(void *, void *, size_t);
    hipError_t (*memset)(void *, int, size_t, hipStream_t);
    hipError_t (*launch)(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                         unsigned, unsigned, unsigned, hipStream_t, void **,
                         void **);
    hipError_t (*ssync)(hipStream_t);
    hipError_t (*ev_new)(hipEvent_t *);
    hipError_t (*ev_free)(hipEvent_t);
    hipError_t (*ev_record)(hipEvent_t, hipStream_t);
    hipError_t (*ev_sync)(hipEvent_t);
    hipError_t (*ev_ms)(float *, hipEvent_t, hipEvent_t);
    const char *(*errstr)(hipError_t);
    hipError_t (*stream_new)(hipStream_t *, unsigned);
    hipError_t (*stream_free)(hipStream_t);
    hipError_t (*copy_async)(void *, const void *, size_t, int, hipStream_t);
    hipError_t (*peer_enable)(int, unsigned);
    hipError_t (*ipc_get)(hipIpcMemHandle_t *, void *);
    hipError_t (*ipc_open)(void **, hipIpcMemHandle_t, unsigned);
    hipError_t (*ipc_close)(void *);
    /* optional (GPU ranks' abort flag): NULL when missing */
    hipError_t (*host_alloc)(void **, size_t, unsigned);
    hipError_t (*host_dptr)(void **, void *, unsigned);
    hipError_t (*host_free)(void *);
    hipError_t (*squery)(void *);
    /* optional (GPU ranks' bounded copies): the synchronous ones instead */
    hipError_t (*h2d_async)(void *, const void *, size_t, void *);
    hipError_t (*d2h_async)(void *, void *, size_t, void *);
} hp;
static pthread_once_t hp_once = PTHREAD_ONCE_INIT;

static void hp_load(void)
{
    const char *names[] = {"libamdhip64.so", "libamdhip64.so.6",
                           "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so",
                           NULL};
    for (int i = 0; names[i] && !hp.lib; i++)
        hp.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!hp.lib) {
        snprintf(hp.why, sizeof hp.why, "HIP runtime not found (libamdhip64.so)");
        return;
    }
#define SYM(f, n)                                                            \
    do {                                                                     \
        *(void **)&hp.f = dlsym(hp.lib, n);                                  \
        if (!hp.f) {                                                         \
            snprintf(hp.why, sizeof hp.why, "HIP runtime (libamdhip64.so) "  \
                     "lacks %s", n);                                         \
            dlclose(hp.lib);                                                 \
            hp.lib = NULL;                                                   \
            return;                                                          \
        }                                                                    \
    } while (0)
    SYM(init, "hipInit");
    SYM(count, "hipGetDeviceCount");
    SYM(set, "hipSetDevice");
    SYM(attr, "hipDeviceGetAttribute");
    SYM(props, "hipGetDeviceProperties");
    SYM(load, "hipModuleLoadData");
    SYM(unload, "hipModuleUnload");
    SYM(getfn, "hipModuleGetFunction");
    SYM(alloc, "hipMalloc");
    SYM(free, "hipFree");
    SYM(h2d, "hipMemcpyHtoD");
    SYM(d2h, "hipMemcpyDtoH");
    SYM(memset, "hipMemsetAsync");
    SYM(launch, "hipModuleLaunchKernel");
    SYM(ssync, "hipStreamSynchronize");
    SYM(ev_new, "hipEventCreate");
    SYM(ev_free, "hipEventDestroy");
    SYM(ev_record, "hipEventRecord");
    SYM(ev_sync, "hipEventSynchronize");
    SYM(ev_ms, "hipEventElapsedTime");
    SYM(errstr, "hipGetErrorString");
    SYM(stream_new, "hipStreamCreateWithFlags");
    SYM(stream_free, "hipStreamDestroy");
    SYM(copy_async, "hipMemcpyAsync");
    SYM(peer_enable, "hipDeviceEnablePeerAccess");
    SYM(ipc_get, "hipIpcGetMemHandle");
    SYM(ipc_open, "hipIpcOpenMemHandle");
    SYM(ipc_close, "hipIpcCloseMemHandle");
#undef SYM
    *(void **)&hp.host_alloc = dlsym(hp.lib, "hipHostMalloc");
    *(void **)&hp.host_dptr = dlsym(hp.lib, "hipHostGetDevicePointer");
    *(void **)&hp.host_free = dlsym(hp.lib, "hipHostFree");
    *(void **)&hp.squery = dlsym(hp.lib, "hipStreamQuery");
    *(void **)&hp.h2d_async = dlsym(hp.lib, "hipMemcpyHtoDAsync");
    *(void **)&hp.d2h_async = dlsym(hp.lib, "hipMemcpyDtoHAsync");
}

typedef struct HipDev {
    int id;
} HipDev;

static int hp_fail(hipError_t r, const char *what, char *err, size_t errlen)
{
    const char *s = hp.errstr(r);
    snprintf(err, errlen, "HIP: %s failed: %s (%d)", what, s ? s : "unknown error", r);
    return -1;
}

#define CK(call, what)                                                       \
    do {                                                                     \
        hipError_t r_ = (call);                                              \
        if (r_ != HIP_SUCCESS)                                               \
            return hp_fail(r_, what, err, errlen);                           \
    } while (0)

static int cur(void *dev, char *err, size_t errlen)
{
    CK(hp.set(((HipDev *)dev)->id), "hipSetDevice");
    return 0;
}

/* The gfx arch from hipGetDeviceProperties, whose layout changes between
 * ROCm versions: the first "gfx..." string in a generous buffer. */
static void gfx_arch(int id, char *arch, size_t n)
{
    const char *env = getenv("BLKC_HIP_ARCH");
    if (env && *env) {
        snprintf(arch, n, "%s", env);
        return;
    }
    snprintf(arch, n, "gfx90a");
    enum { PROPS = 1 << 16 };
    unsigned char *buf = calloc(1, PROPS);
    if (!buf)
        return;
    if (hp.props(buf, id) == HIP_SUCCESS) {
        for (size_t i = 0; i + 5 < PROPS; i++) {
            if (memcmp(buf + i, "gfx", 3) || buf[i + 3] < '0' || buf[i + 3] > '9')
                continue;
            size_t k = 0;
            while (k + 1 < n && i + k < PROPS &&
                   ((buf[i + k] >= 'a' && buf[i + k] <= 'z') ||
                    (buf[i + k] >= '0' && buf[i + k] <= '9')))
                k++;
            memcpy(arch, buf + i, k);
            arch[k] = 0;
            break;
        }
    }
    free(buf);
}

static int h_open(int id, void **out, RtGpuDevInfo *info, char *err,
                  size_t errlen)
{
    pthread_once(&hp_once, hp_load);
    if (!hp.lib) {
        snprintf(err, errlen, "%s", hp.why);
        return -2;
    }
    int n = 0;
    hipError_t r = hp.init(0);
    if (r == HIP_SUCCESS)
        r = hp.count(&n);
    if (r != HIP_SUCCESS || n == 0) {
        snprintf(err, errlen, "no HIP device");
        return -2;
    }
    if (id < 0 || id >= n) {
        snprintf(err, errlen, "no HIP device %d (%d device%s)", id, n,
                 n == 1 ? "" : "s");
        return -2;
    }
    HipDev *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->id = id;
    if (cur(d, err, errlen)) {
        free(d);
        return -1;
    }
    gfx_arch(id, info->arch, sizeof info->arch);
    snprintf(info->name, sizeof info->name, "HIP device %d (%s)", id, info->arch);
    info->max_smem = 65536;
    int khz = 0;
    if (hp.attr(&khz, HIP_ATTR_CLOCK_INSTRUCTION_RATE, id) != HIP_SUCCESS || khz <= 0)
        khz = 100000; /* s_memtime: 100 MHz on gfx90a */
    info->ticks_per_ms = khz;
    *out = d;
    return 0;
}

static void h_close(void *dev)
{
    free(dev);
}

static int h_alloc(void *dev, size_t bytes, uint64_t *dptr, char *err,
                   size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    void *p = NULL;
    CK(hp.alloc(&p, bytes ? bytes : 1), "hipMalloc");
    *dptr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void h_free(void *dev, uint64_t dptr)
{
    char err[256]; /* discarded: a failed cleanup has no one to tell */
    if (dptr && !cur(dev, err, sizeof err))
        hp.free((void *)(uintptr_t)dptr);
}

static int h_h2d(void *dev, uint64_t dst, const void *src, size_t n, char *err,
                 size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(hp.h2d((void *)(uintptr_t)dst, src, n), "hipMemcpyHtoD");
    return 0;
}

static int h_d2h(void *dev, void *dst, uint64_t src, size_t n, char *err,
                 size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(hp.d2h(dst, (void *)(uintptr_t)src, n), "hipMemcpyDtoH");
    return 0;
}

static int h_h2d_async(void *dev, uint64_t dst, const void *src, size_t n,
                       void *stream, char *err, size_t errlen)
{
    if (!hp.h2d_async)
        return h_h2d(dev, dst, src, n, err, errlen);
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(hp.h2d_async((void *)(uintptr_t)dst, src, n, stream), "hipMemcpyHtoDAsync");
    return 0;
}

static int h_d2h_async(void *dev, void *dst, uint64_t src, size_t n,
                       void *stream, char *err, size_t errlen)
{
    if (!hp.d2h_async)
        return h_d2h(dev, dst, src, n, err, errlen);
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(hp.d2h_async(dst, (void *)(uintptr_t)src, n, stream), "hipMemcpyDtoHAsync");
    return 0;
}

static int h_zero(void *dev, uint64_t dst, size_t n, void *stream, char *err,
                  size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(hp.memset((void *)(uintptr_t)dst, 0, n, stream), "hipMemsetAsync");
    return 0;
}

static int h_load(void *dev, const void *image, size_t n, void **mod,
                  char *err, size_t errlen)
{
    (void)n;
    if (cur(dev, err, errlen))
        return -1;
    hipModule_t m = NULL;
    CK(hp.load(&m, image), "hipModuleLoadData");
    *mod = m;
    return 0;
}

static void h_unload(void *dev, void *mod)
{
    char err[256]; /* discarded: a failed cleanup has no one to tell */
    if (mod && !cur(dev, err, sizeof err))
        hp.unload(mod);
}

static int h_function(void *dev, void *mod, const char *name, long long smem,
                      void **fn, char *err, size_t errlen)
{
    (void)smem; /* LDS needs no opt-in on AMD GPUs */
    if (cur(dev, err, errlen))
        return -1;
    hipFunction_t f = NULL;
    hipError_t r = hp.getfn(&f, mod, name);
    if (r != HIP_SUCCESS) {
        char what[300];
        snprintf(what, sizeof what, "hipModuleGetFunction(%s)", name);
        return hp_fail(r, what, err, errlen);
    }
    *fn = f;
    return 0;
}

static int h_launch(void *dev, void *fn, const int64_t grid[3], int threads,
                    long long smem, void *stream, void **params, void *buf,
                    size_t size, char *err, size_t errlen)
{
    (void)params;
    if (cur(dev, err, errlen))
        return -1;
    size_t sz = size;
    void *extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, buf,
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &sz, HIP_LAUNCH_PARAM_END};
    CK(hp.launch(fn, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                 (unsigned)threads, 1, 1, (unsigned)smem, stream, NULL, extra),
       "hipModuleLaunchKernel");
    return 0;
}

static int h_sync(void *dev, void *stream, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(hp.ssync(stream), "hipStreamSynchronize (the kernel)");
    return 0;
}

static int h_event_new(void *dev, void **ev, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(hp.ev_new((hipEvent_t *)ev), "hipEventCreate");
    return 0;
}

static void h_event_free(void *dev, void *ev)
{
    char err[256]; /* discarded: a failed cleanup has no one to tell */
    if (ev && !cur(dev, err, sizeof err))
        hp.ev_free(ev);
}

static int h_event_record(void *dev, void *ev, void *stream, char *err,
                          size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(hp.ev_record(ev, stream), "hipEventRecord");
    return 0;
}

static int h_event_ms(void *dev, void *a, void *b, float *ms, char *err,
                      size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(hp.ev_sync(b), "hipEventSynchronize");
    CK(hp.ev_ms(ms, a, b), "hipEventElapsedTime");
    return 0;
}

static int h_count(int *n, char *err, size_t errlen)
{
    *n = 0;
    if (!hp.lib) {
        snprintf(err, errlen, "%s", hp.why[0] ? hp.why : "HIP runtime not loaded");
        return -1;
    }
    CK(hp.count(n), "hipGetDeviceCount");
    return 0;
}

static int h_stream_new(void *dev, void **stream, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    CK(hp.stream_new((hipStream_t *)stream, HIP_STREAM_NON_BLOCKING),
       "hipStreamCreateWithFlags");
    return 0;
}

static void h_stream_free(void *dev, void *stream)
{
    char err[256]; /* discarded: a failed cleanup has no one to tell */
    if (stream && !cur(dev, err, sizeof err))
        hp.stream_free(stream);
}

/* hipMemcpyDefault: the runtime tells device from peer memory by address
 * (unified addressing), as cuMemcpyAsync does */
static int h_copy_async(void *dev, uint64_t dst, uint64_t src, size_t n,
                        void *stream, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    if (n)
        CK(hp.copy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src,
                         n, HIP_MEMCPY_DEFAULT, stream),
           "hipMemcpyAsync");
    return 0;
}

static int h_peer_enable(void *dev, void *peer, char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    hipError_t r = hp.peer_enable(((HipDev *)peer)->id, 0);
    if (r != HIP_SUCCESS && r != HIP_ERROR_PEER_ENABLED)
        return hp_fail(r, "hipDeviceEnablePeerAccess", err, errlen);
    return 0;
}

static int h_ipc_get(void *dev, uint64_t dptr, void *handle, char *err,
                     size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    hipIpcMemHandle_t h;
    CK(hp.ipc_get(&h, (void *)(uintptr_t)dptr), "hipIpcGetMemHandle");
    memcpy(handle, &h, sizeof h);
    return 0;
}

/* hipIpcOpenMemHandle accepts exactly hipIpcMemLazyEnablePeerAccess,
 * which is 0x01 since ROCm 6 and was 0 before: the one, then the other */
static int h_ipc_open(void *dev, const void *handle, uint64_t *dptr,
                      char *err, size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    hipIpcMemHandle_t h;
    memcpy(&h, handle, sizeof h);
    void *p = NULL;
    hipError_t r = hp.ipc_open(&p, h, 1);
    if (r == HIP_ERROR_INVALID_VALUE)
        r = hp.ipc_open(&p, h, 0);
    if (r != HIP_SUCCESS)
        return hp_fail(r, "hipIpcOpenMemHandle", err, errlen);
    *dptr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void h_ipc_close(void *dev, uint64_t dptr)
{
    char err[256]; /* discarded: a failed cleanup has no one to tell */
    if (dptr && !cur(dev, err, sizeof err))
        hp.ipc_close((void *)(uintptr_t)dptr);
}

/* mapped pinned host memory: hipHostMallocPortable (every device) |
 * hipHostMallocMapped (kernels read it while they run) |
 * hipHostMallocCoherent (not cached on the device: a host store is seen
 * by a kernel that is running; HIP's default depends on HIP_HOST_COHERENT) */
static int h_host_map(void *dev, size_t bytes, void **host, char *err,
                      size_t errlen)
{
    *host = NULL;
    if (!hp.host_alloc || !hp.host_dptr || !hp.host_free) {
        snprintf(err, errlen, "HIP runtime lacks hipHostMalloc, "
                 "hipHostGetDevicePointer or hipHostFree");
        return -1;
    }
    if (cur(dev, err, errlen))
        return -1;
    void *p = NULL;
    CK(hp.host_alloc(&p, bytes, 0x1 | 0x2 | 0x40000000), "hipHostMalloc");
    memset(p, 0, bytes);
    *host = p;
    return 0;
}

static int h_host_dptr(void *dev, void *host, uint64_t *dptr, char *err,
                       size_t errlen)
{
    if (cur(dev, err, errlen))
        return -1;
    void *p = NULL;
    CK(hp.host_dptr(&p, host, 0), "hipHostGetDevicePointer");
    *dptr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void h_host_free(void *dev, void *host)
{
    char err[256]; /* discarded, as in h_ipc_close */
    if (host && hp.host_free && !cur(dev, err, sizeof err))
        hp.host_free(host);
}

static int h_query(void *dev, void *stream, char *err, size_t errlen)
{
    if (!hp.squery) {
        snprintf(err, errlen, "HIP runtime lacks hipStreamQuery");
        return -1;
    }
    if (cur(dev, err, errlen))
        return -1;
    hipError_t r = hp.squery(stream);
    if (r == 600) /* hipErrorNotReady */
        return 1;
    CK(r, "hipStreamQuery");
    return 0;
}

static const RtGpuOps hip_ops = {
    "HIP", kDLROCM, h_open, h_close, h_alloc, h_free, h_h2d, h_d2h, h_zero,
    h_load, h_unload, h_function, h_launch, h_sync, h_event_new,
    h_event_free, h_event_record, h_event_ms, h_count, h_stream_new,
    h_stream_free, h_copy_async, h_peer_enable, h_ipc_get, h_ipc_open,
    h_ipc_close, h_host_map, h_host_dptr, h_host_free, h_query, NULL, /* no tensor maps */
    h_h2d_async, h_d2h_async,
};

const RtGpuOps *rt_gpu_hip_ops(void)
{
    return &hip_ops;
}
