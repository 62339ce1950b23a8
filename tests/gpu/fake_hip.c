/* fake_hip.c — a stand-in libamdhip64.so for testing the host side of HIP
 * GPU ranks (gpu_ranks.c over runtime/gpu_hip.c) on a machine without an
 * AMD GPU, as fake_cuda.c does for CUDA: "device memory" is host memory
 * (fake_mem.h: memfd mappings, so IPC handles open in another process),
 * every asynchronous operation completes when it is queued, and the only
 * kernels that run are gpu_ranks.c's notify kernels (blk_sig_set /
 * blk_sig_add, recognised by name, arguments read from the packed buffer
 * of hipModuleLaunchKernel's `extra`); any other launch fails with
 * hipErrorNotSupported (with $FAKE_HIP_LAUNCH_NOOP set it succeeds doing
 * nothing), but for the waiting kernel and mapped host
 * memory of fake_mem.h ($FAKE_GPU_WAIT_KERNEL, $FAKE_GPU_NO_HOSTMAP);
 * the default stream of the devices in $FAKE_GPU_SYNC_HANG (hipSetDevice's)
 * never drains ("D@N": from its N-th wait on, fake_mem.h), nor do the
 * streams made on the devices in $FAKE_GPU_STREAM_HANG (the same syntax),
 * nor the signal polls from the N-th on in $FAKE_GPU_POLL_HANG.
 * Like ROCm 5's libamdhip64 it also carries hiprtc,
 * whose fake "code object" is the source text behind a marker line: the
 * HIP source of a module or of the notify kernels is accepted, never
 * compiled. A real libhiprtc.so found first compiles it (gpu_ranks.sh
 * does that when the machine has one); hipModuleLoadData takes the fake
 * hiprtc's text or an AMD GPU ELF (e_machine EM_AMDGPU) and refuses
 * anything else (hipErrorInvalidImage).
 * $FAKE_HIP_DEVICES sets the number of devices (default 1), $FAKE_HIP_ARCH
 * the gfx arch (default gfx90a). hipDeviceEnablePeerAccess checks that the
 * peer is another device of this process. Nothing about real HIP
 * semantics (ordering between streams, visibility) is checked: that needs
 * a GPU. */
#include "fake_mem.h"

#include <stdbool.h>
#include <stdlib.h>

typedef int hipError_t;

enum {
    OK = 0, BAD_VALUE = 1, NO_DEVICE = 100, BAD_DEVICE = 101,
    BAD_IMAGE = 200, NOT_SUPPORTED = 801,
};

#define API __attribute__((visibility("default")))

/* one prototype each, for -Wmissing-prototypes */
#define P(ret, name, ...) API ret name(__VA_ARGS__); API ret name(__VA_ARGS__)

static int ndev(void)
{
    const char *s = getenv("FAKE_HIP_DEVICES");
    int n = s ? atoi(s) : 1;
    return n > 0 ? n : 0;
}


P(hipError_t, hipInit, unsigned f) { (void)f; return ndev() ? OK : NO_DEVICE; }
P(hipError_t, hipGetDeviceCount, int *n)
{
    *n = ndev();
    return *n ? OK : NO_DEVICE;
}
P(hipError_t, hipSetDevice, int d)
{
    if (d < 0 || d >= ndev())
        return BAD_DEVICE;
    fake_cur_set(d);
    return OK;
}
P(hipError_t, hipDeviceGetAttribute, int *v, int a, int d)
{
    (void)a;
    (void)d;
    *v = 100000; /* the clock attribute, kHz: the only one asked */
    return OK;
}
/* gpu_hip.c takes the first "gfx..." string of the properties */
P(hipError_t, hipGetDeviceProperties, void *props, int d)
{
    const char *arch = getenv("FAKE_HIP_ARCH");
    if (d < 0 || d >= ndev())
        return BAD_DEVICE;
    snprintf(props, 256, "fake HIP device");
    snprintf((char *)props + 256, 64, "%s", arch && *arch ? arch : "gfx90a");
    return OK;
}

/* ------------------------------------------------------------ hiprtc */

typedef struct FakeProg { char *code; } FakeProg;

static const char fake_marker[] = "// fake hiprtc: not compiled\n";

P(int, hiprtcCreateProgram, FakeProg **prog, const char *src, const char *name,
  int nh, const char **headers, const char **names)
{
    (void)name; (void)nh; (void)headers; (void)names;
    FakeProg *p = calloc(1, sizeof *p);
    size_t n = strlen(fake_marker) + strlen(src) + 1;
    if (!p || !(p->code = malloc(n))) {
        free(p);
        return 1;
    }
    snprintf(p->code, n, "%s%s", fake_marker, src);
    *prog = p;
    return 0;
}
P(int, hiprtcCompileProgram, FakeProg *prog, int n, const char **opts)
{
    (void)prog; (void)n; (void)opts;
    return 0;
}
P(int, hiprtcGetProgramLogSize, FakeProg *prog, size_t *n)
{
    (void)prog;
    *n = 1;
    return 0;
}
P(int, hiprtcGetProgramLog, FakeProg *prog, char *log)
{
    (void)prog;
    log[0] = 0;
    return 0;
}
P(int, hiprtcGetCodeSize, FakeProg *prog, size_t *n)
{
    *n = strlen(prog->code) + 1;
    return 0;
}
P(int, hiprtcGetCode, FakeProg *prog, char *code)
{
    memcpy(code, prog->code, strlen(prog->code) + 1);
    return 0;
}
P(int, hiprtcDestroyProgram, FakeProg **prog)
{
    free((*prog)->code);
    free(*prog);
    *prog = NULL;
    return 0;
}

/* ------------------------------------------------------------ modules */

static int nloads; /* module N is (void *)N (atomic) */

P(hipError_t, hipModuleLoadData, void **m, const void *img)
{
    const unsigned char *p = img;
    uint16_t machine = 0;
    if (!p)
        return BAD_VALUE;
    if (!memcmp(p, "\177ELF", 4))
        memcpy(&machine, p + 18, 2);
    if (machine != 224 /* EM_AMDGPU */ && strncmp(img, fake_marker, strlen(fake_marker)))
        return BAD_IMAGE;
    *m = (void *)(intptr_t)__atomic_add_fetch(&nloads, 1, __ATOMIC_RELAXED);
    return OK;
}
P(hipError_t, hipModuleUnload, void *m) { (void)m; return OK; }
/* blk_sig_set 1, blk_sig_add 2, any other kernel 3 */
P(hipError_t, hipModuleGetFunction, void **f, void *m, const char *name)
{
    (void)m;
    *f = (void *)(intptr_t)(!strcmp(name, "blk_sig_set") ? 1
                            : !strcmp(name, "blk_sig_add") ? 2
                            : fake_is_wait_kernel(name) ? 4 : 3);
    return OK;
}

#define HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define HIP_LAUNCH_PARAM_END ((void *)0x03)

API void fake_hip_hold(void *s, int on);

P(hipError_t, hipModuleLaunchKernel, void *f, unsigned gx, unsigned gy,
  unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, void *st,
  void **params, void **extra)
{
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
    (void)smem; (void)params;
    intptr_t k = (intptr_t)f;
    const char *noop = getenv("FAKE_HIP_LAUNCH_NOOP");
    if (k == 3 && noop && *noop)
        return OK;
    if (k != 1 && k != 2 && k != 4)
        return NOT_SUPPORTED;
    const uint64_t *buf = NULL;
    size_t size = 0;
    for (int i = 0; extra && extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE)
            size = *(size_t *)extra[i + 1];
        else
            return BAD_VALUE;
    }
    if (k == 4) { /* the rank context ends the packed arguments */
        if (!buf || size < sizeof(FakeRankCtx))
            return BAD_VALUE;
        const FakeRankCtx *rc = (const FakeRankCtx *)((const char *)buf +
                                                      size - sizeof(FakeRankCtx));
        int spin = fake_spin_rank(rc);
        if (spin >= 0) {
            if (spin)
                fake_hip_hold(st, 1);
            return OK;
        }
        fake_wait_kernel(rc, 100000); /* hipDeviceGetAttribute's clock, kHz */
        return OK;
    }
    if (!buf || size != 16) /* (u64 *cell, u64 v) */
        return BAD_VALUE;
    fake_notify(buf[0], buf[1], k == 2);
    return OK;
}

/* ------------------------------------------------------------ memory */

P(hipError_t, hipHostMalloc, void **p, size_t n, unsigned flags)
{
    (void)flags;
    return fake_host_alloc(p, n) ? NOT_SUPPORTED : OK;
}
P(hipError_t, hipHostGetDevicePointer, void **d, void *p, unsigned flags)
{
    (void)flags;
    *d = p;
    return OK;
}
P(hipError_t, hipHostFree, void *p) { fake_host_free(p); return OK; }

P(hipError_t, hipMalloc, void **p, size_t n)
{
    uintptr_t q;
    if (fake_alloc(&q, n))
        return 2; /* hipErrorOutOfMemory */
    *p = (void *)q;
    return OK;
}
P(hipError_t, hipFree, void *p) { return fake_free((uintptr_t)p) ? BAD_VALUE : OK; }
P(hipError_t, hipMemcpyHtoD, void *d, const void *s, size_t n)
{
    memcpy(d, s, n);
    return OK;
}
P(hipError_t, hipMemcpyDtoH, void *d, void *s, size_t n)
{
    if (fake_poll_sync(n))
        return 702; /* a launch timeout */
    fake_read(d, s, n);
    return OK;
}
/* (complete when queued, as every asynchronous operation here; left out
 * with -DFAKE_NO_ASYNC_COPY: a runtime without them, fakehip_nocopy/) */
#ifndef FAKE_NO_ASYNC_COPY
P(hipError_t, hipMemcpyHtoDAsync, void *d, const void *s, size_t n, void *st)
{
    (void)st;
    memcpy(d, s, n);
    return OK;
}
P(hipError_t, hipMemcpyDtoHAsync, void *d, void *s, size_t n, void *st)
{
    if (fake_poll_read(st, d, n))
        return OK; /* never lands: the stream is held */
    fake_read(d, s, n);
    return OK;
}
#endif
P(hipError_t, hipMemsetAsync, void *d, int v, size_t n, void *st)
{
    (void)st;
    memset(d, v, n);
    return OK;
}
P(hipError_t, hipMemcpyAsync, void *d, const void *s, size_t n, int kind, void *st)
{
    (void)st;
    if (kind != 4) /* gpu_hip.c passes hipMemcpyDefault */
        return BAD_VALUE;
    memmove(d, s, n);
    return OK;
}
typedef struct { char reserved[64]; } Handle;
P(hipError_t, hipIpcGetMemHandle, Handle *h, void *p)
{
    return fake_ipc_get(h->reserved, (uintptr_t)p) ? BAD_VALUE : OK;
}
/* flags: hipIpcMemLazyEnablePeerAccess of ROCm 6 (1) */
P(hipError_t, hipIpcOpenMemHandle, void **p, Handle h, unsigned flags)
{
    uintptr_t q;
    if (flags != 1 || fake_ipc_open(&q, h.reserved))
        return BAD_VALUE;
    *p = (void *)q;
    return OK;
}
P(hipError_t, hipIpcCloseMemHandle, void *p) { return hipFree(p); }

/* ------------------------------------------------------------ streams */

P(hipError_t, hipStreamCreateWithFlags, void **s, unsigned f)
{
    if (f != 1) /* hipStreamNonBlocking, as gpu_ranks.c wants */
        return BAD_VALUE;
    *s = fake_stream_new();
    return *s ? OK : 2;
}
/* the streams held by fake_hip_hold (fake_nccl.c's FAKE_NCCL_HANG_AT=
 * stream: a collective's kernel that never ends), as fake_cuda_hold */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static void *held[16];

static bool is_held(void *s)
{
    bool h = false;
    pthread_mutex_lock(&hold_mu);
    for (int i = 0; i < 16 && s; i++)
        h |= held[i] == s;
    pthread_mutex_unlock(&hold_mu);
    return h || fake_stream_hang(s);
}

API void fake_hip_hold(void *s, int on);
API void fake_hip_hold(void *s, int on)
{
    pthread_mutex_lock(&hold_mu);
    for (int i = 0; i < 16; i++)
        if (held[i] == s)
            held[i] = NULL;
    for (int i = 0; i < 16 && on; i++)
        if (!held[i]) {
            held[i] = s;
            break;
        }
    pthread_mutex_unlock(&hold_mu);
}

P(hipError_t, hipStreamDestroy, void *s) { fake_hip_hold(s, 0); fake_stream_free(s); return OK; }
P(hipError_t, hipStreamQuery, void *s) { return is_held(s) ? 600 : OK; } /* hipErrorNotReady */
P(hipError_t, hipStreamSynchronize, void *s)
{
    bool h = is_held(s); /* once a round: fake_hang counts answers */
    for (int i = 0; i < 30000 && h; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        h = is_held(s);
    }
    return h ? 702 : OK; /* hipErrorLaunchTimeOut */
}
P(hipError_t, hipDeviceEnablePeerAccess, int peer, unsigned f)
{
    if (f != 0 || peer < 0 || peer >= ndev() || peer == fake_cur_get())
        return BAD_DEVICE;
    return OK;
}
P(hipError_t, hipEventCreate, void **e) { *e = malloc(1); return *e ? OK : 2; }
P(hipError_t, hipEventDestroy, void *e) { free(e); return OK; }
P(hipError_t, hipEventRecord, void *e, void *s) { (void)e; (void)s; return OK; }
P(hipError_t, hipEventSynchronize, void *e) { (void)e; return OK; }
P(hipError_t, hipEventElapsedTime, float *ms, void *a, void *b)
{
    (void)a;
    (void)b;
    *ms = 0;
    return OK;
}
P(const char *, hipGetErrorString, hipError_t r)
{
    return r == NOT_SUPPORTED ? "operation not supported (fake HIP runs no kernels)"
         : r == BAD_DEVICE ? "invalid device ordinal (fake HIP)"
         : r == BAD_VALUE ? "invalid argument (fake HIP)"
         : r == BAD_IMAGE ? "not an AMD GPU code object (fake HIP)"
                          : "fake HIP error";
}
