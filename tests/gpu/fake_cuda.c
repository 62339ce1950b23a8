/* fake_cuda.c — a stand-in libcuda.so.1 for testing the host side of the
 * GPU runtime (gpu_ranks.c) on a machine without a GPU: "device memory"
 * is host memory, every asynchronous operation completes when it is
 * queued, and the only kernels that run are gpu_ranks.c's notify kernels
 * (blk_sig_set / blk_sig_add, recognised by name); any other launch fails
 * with CUDA_ERROR_NOT_SUPPORTED. $FAKE_CUDA_DEVICES sets the number of
 * devices (default 1). For tests of module loading (t_gpu_spec.c):
 * $FAKE_CUDA_CC sets the compute capability ("90" by default: sm_90; an
 * arch NVRTC does not know, e.g. "99", makes the runtime load PTX);
 * $FAKE_CUDA_IMAGE_DIR receives every image passed to cuModuleLoadData as
 * image-N.ptx / image-N.cubin (N counts loads from 1) and, when
 * $FAKE_CUDA_LAUNCH_NOOP is set, a line "launch N" in DIR/launches per
 * launch of another kernel (module N's), which then succeeds doing
 * nothing; from the Nth load on, $FAKE_CUDA_LOAD_FAIL_FROM=N makes
 * cuModuleLoadData fail (CUDA_ERROR_INVALID_IMAGE) after saving the image;
 * each cuTensorMapEncodeTiled is a line in DIR/tmaps, and fails with
 * $FAKE_CUDA_TMAP_FAIL=1.
 * Memory, IPC handles, mapped host memory (cuMemHostAlloc; fails with
 * $FAKE_GPU_NO_HOSTMAP=1) and the waiting kernel ($FAKE_GPU_WAIT_KERNEL):
 * fake_mem.h (shared with fake_hip.c). fake_cuda_hold(stream, 1) (called
 * by fake_nccl.c, FAKE_NCCL_HANG_AT=stream) makes a stream's work never
 * end, as a collective kernel whose peer never comes: cuStreamQuery
 * answers CUDA_ERROR_NOT_READY and cuStreamSynchronize waits (at most
 * 30 s, then CUDA_ERROR_LAUNCH_TIMEOUT) until fake_cuda_hold(stream, 0);
 * so does the stand-in kernel on the ranks of $FAKE_GPU_SPIN_RANK, and
 * the default stream (NULL) of the devices in $FAKE_GPU_SYNC_HANG (the
 * current context's, cuCtxSetCurrent; "D@N": from its N-th wait on,
 * fake_mem.h), and the streams made on the devices in
 * $FAKE_GPU_STREAM_HANG (the same syntax, fake_mem.h); signal polls that
 * never complete from the N-th on: $FAKE_GPU_POLL_HANG (fake_mem.h).
 * It checks
 * nothing about real CUDA semantics (ordering between streams,
 * visibility): that needs a GPU. */
#include "fake_mem.h"

#include <stdbool.h>
#include <stdlib.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { OK = 0, BAD_VALUE = 1, NO_DEVICE = 100, NOT_SUPPORTED = 801 };

#define API __attribute__((visibility("default")))

/* one prototype each, for -Wmissing-prototypes */
#define P(name, ...) API CUresult name(__VA_ARGS__); API CUresult name(__VA_ARGS__)

static int ndev(void)
{
    const char *s = getenv("FAKE_CUDA_DEVICES");
    int n = s ? atoi(s) : 1;
    return n > 0 ? n : 0;
}

P(cuInit, unsigned f) { (void)f; return ndev() ? OK : NO_DEVICE; }
P(cuDeviceGetCount, int *n) { *n = ndev(); return OK; }
P(cuDeviceGet, int *d, int i) { *d = i; return i >= 0 && i < ndev() ? OK : 101; }
P(cuDeviceGetName, char *s, int n, int d)
{
    (void)d;
    strncpy(s, "fake CUDA device", (size_t)n);
    s[n - 1] = 0;
    return OK;
}
P(cuDeviceGetAttribute, int *v, int a, int d)
{
    (void)d;
    const char *cc = getenv("FAKE_CUDA_CC");
    int maj = 9, min = 0;
    if (cc && strlen(cc) == 2 && cc[0] >= '1' && cc[0] <= '9' && cc[1] >= '0' &&
        cc[1] <= '9') {
        maj = cc[0] - '0';
        min = cc[1] - '0';
    }
    *v = a == 75 ? maj : a == 76 ? min : a == 97 ? 232448 : 0;
    return OK;
}
P(cuDevicePrimaryCtxRetain, void **c, int d) { *c = (void *)(intptr_t)(d + 1); return OK; }
P(cuDevicePrimaryCtxRelease_v2, int d) { (void)d; return OK; }
P(cuCtxSetCurrent, void *c)
{
    if (c)
        fake_cur_set((int)(intptr_t)c - 1); /* primary contexts are d + 1 */
    return OK;
}
static int nloads; /* modules loaded so far (atomic): module N is (void *)N */

/* The size of an ELF64 image (a cubin): its section or program header
 * table, whichever ends last (NVIDIA puts the section headers last). */
static size_t elf_size(const unsigned char *p)
{
    uint64_t shoff, phoff;
    uint16_t phentsize, phnum, shentsize, shnum;
    memcpy(&phoff, p + 32, 8);
    memcpy(&shoff, p + 40, 8);
    memcpy(&phentsize, p + 54, 2);
    memcpy(&phnum, p + 56, 2);
    memcpy(&shentsize, p + 58, 2);
    memcpy(&shnum, p + 60, 2);
    uint64_t a = shoff + (uint64_t)shentsize * shnum;
    uint64_t b = phoff + (uint64_t)phentsize * phnum;
    return (size_t)(a > b ? a : b);
}

/* Append a line to DIR/name or write a whole file (FAKE_CUDA_IMAGE_DIR). */
static void dump(const char *name, const void *data, size_t n, const char *mode)
{
    const char *dir = getenv("FAKE_CUDA_IMAGE_DIR");
    if (!dir || !*dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, mode);
    if (!fp)
        return;
    fwrite(data, 1, n, fp);
    fclose(fp);
}

P(cuModuleLoadData, void **m, const void *img)
{
    int id = __atomic_add_fetch(&nloads, 1, __ATOMIC_RELAXED);
    const unsigned char *p = img;
    bool elf = p && !memcmp(p, "\177ELF", 4);
    char name[64];
    snprintf(name, sizeof name, "image-%d.%s", id, elf ? "cubin" : "ptx");
    if (p)
        dump(name, p, elf ? elf_size(p) : strlen(img), "wb");
    const char *fail = getenv("FAKE_CUDA_LOAD_FAIL_FROM");
    if (fail && *fail && id >= atoi(fail))
        return 200;
    *m = (void *)(intptr_t)id;
    return OK;
}
P(cuModuleUnload, void *m) { (void)m; return OK; }
/* blk_sig_set 1, blk_sig_add 2, the waiting kernel 4 (fake_mem.h), any
 * other kernel of module N: N * 256 + 3 */
P(cuModuleGetFunction, void **f, void *m, const char *name)
{
    *f = (void *)(intptr_t)(!strcmp(name, "blk_sig_set") ? 1
                            : !strcmp(name, "blk_sig_add") ? 2
                            : fake_is_wait_kernel(name) ? 4
                            : (intptr_t)m * 256 + 3);
    return OK;
}
P(cuFuncSetAttribute, void *f, int a, int v) { (void)f; (void)a; (void)v; return OK; }
P(cuMemAlloc_v2, CUdeviceptr *p, size_t n)
{
    uintptr_t q;
    if (fake_alloc(&q, n))
        return 2;
    *p = (CUdeviceptr)q;
    return OK;
}
P(cuMemFree_v2, CUdeviceptr p) { return fake_free((uintptr_t)p) ? BAD_VALUE : OK; }

typedef struct { char reserved[64]; } Handle;

P(cuIpcGetMemHandle, Handle *h, CUdeviceptr p)
{
    return fake_ipc_get(h->reserved, (uintptr_t)p) ? BAD_VALUE : OK;
}
P(cuIpcOpenMemHandle_v2, CUdeviceptr *p, Handle h, unsigned flags)
{
    (void)flags;
    uintptr_t q;
    if (fake_ipc_open(&q, h.reserved))
        return BAD_VALUE;
    *p = (CUdeviceptr)q;
    return OK;
}
P(cuIpcCloseMemHandle, CUdeviceptr p) { return cuMemFree_v2(p); }
P(cuMemcpyHtoD_v2, CUdeviceptr d, const void *s, size_t n)
{
    memcpy((void *)(uintptr_t)d, s, n);
    return OK;
}
P(cuMemcpyDtoH_v2, void *d, CUdeviceptr s, size_t n)
{
    if (fake_poll_sync(n))
        return 702; /* a launch timeout */
    fake_read(d, (void *)(uintptr_t)s, n);
    return OK;
}
/* (complete when queued, as every asynchronous operation here; left out
 * with -DFAKE_NO_ASYNC_COPY: a driver without them, fakecuda_nocopy/) */
#ifndef FAKE_NO_ASYNC_COPY
P(cuMemcpyHtoDAsync_v2, CUdeviceptr d, const void *s, size_t n, void *st)
{
    (void)st;
    memcpy((void *)(uintptr_t)d, s, n);
    return OK;
}
P(cuMemcpyDtoHAsync_v2, void *d, CUdeviceptr s, size_t n, void *st)
{
    if (fake_poll_read(st, d, n))
        return OK; /* never lands: the stream is held */
    fake_read(d, (void *)(uintptr_t)s, n);
    return OK;
}
#endif
P(cuMemsetD8Async, CUdeviceptr d, unsigned char v, size_t n, void *st)
{
    (void)st;
    memset((void *)(uintptr_t)d, v, n);
    return OK;
}
P(cuMemcpyAsync, CUdeviceptr d, CUdeviceptr s, size_t n, void *st)
{
    (void)st;
    memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    return OK;
}
/* a tensor map (TMA kernels of sm_90a): nothing checked; each call is a
 * line "tmap ADDR DIM0xDIM1 stride S box B0xB1 swizzle W" in DIR/tmaps
 * (rank 3..5: "tmap rank R ADDR D0x..xDn strides S0,.. box B0x.. swizzle W")
 * ($FAKE_CUDA_IMAGE_DIR), ending " failed" when $FAKE_CUDA_TMAP_FAIL=1
 * makes it fail (CUDA_ERROR_INVALID_VALUE) */
P(cuTensorMapEncodeTiled, void *map, int dt, unsigned rank, void *addr, const void *dims,
  const void *strides, const void *box, const void *es, int il, int sw, int l2, int oob)
{
    (void)dt; (void)es; (void)il; (void)l2; (void)oob;
    const char *fail = getenv("FAKE_CUDA_TMAP_FAIL");
    bool bad = fail && !strcmp(fail, "1");
    const uint64_t *d = dims, *s = strides;
    const unsigned *b = box;
    char line[512];
    int n = 0;
    if (rank == 2) {
        n = snprintf(line, sizeof line, "tmap %p %llux%llu stride %llu box %ux%u swizzle %d%s\n",
                     addr, (unsigned long long)d[0], (unsigned long long)d[1],
                     (unsigned long long)s[0], b[0], b[1], sw, bad ? " failed" : "");
    } else if (rank >= 3 && rank <= 5) { /* "tmap rank R ADDR D0x.. strides S0,.. box B0x.." */
        n = snprintf(line, sizeof line, "tmap rank %u %p ", rank, addr);
        for (unsigned i = 0; i < rank; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s%llu", i ? "x" : "",
                          (unsigned long long)d[i]);
        for (unsigned i = 0; i + 1 < rank; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s%llu", i ? "," : " strides ",
                          (unsigned long long)s[i]);
        for (unsigned i = 0; i < rank; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s%u", i ? "x" : " box ", b[i]);
        n += snprintf(line + n, sizeof line - (size_t)n, " swizzle %d%s\n", sw,
                      bad ? " failed" : "");
    } else {
        n = snprintf(line, sizeof line, "tmap rank %u\n", rank);
    }
    dump("tmaps", line, (size_t)n, "a");
    if (bad)
        return BAD_VALUE;
    memset(map, 0, 128);
    return OK;
}

API void fake_cuda_hold(void *s, int on);

P(cuLaunchKernel, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
  unsigned by, unsigned bz, unsigned smem, void *st, void **params, void **extra)
{
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
    (void)smem; (void)extra;
    intptr_t k = (intptr_t)f;
    if (k == 4) { /* the rank context is the last argument (the runtime's
                     params array ends with NULL) */
        int n = 0;
        while (params[n])
            n++;
        if (n == 0)
            return BAD_VALUE;
        int spin = fake_spin_rank(params[n - 1]);
        if (spin >= 0) {
            if (spin)
                fake_cuda_hold(st, 1);
            return OK;
        }
        fake_wait_kernel(params[n - 1], 1e6); /* %globaltimer: ns */
        return OK;
    }
    if (k != 1 && k != 2) {
        const char *noop = getenv("FAKE_CUDA_LAUNCH_NOOP");
        if (!noop || !*noop)
            return NOT_SUPPORTED;
        char line[64];
        int n = snprintf(line, sizeof line, "launch %ld\n", (long)(k / 256));
        dump("launches", line, (size_t)n, "a");
        return OK;
    }
    fake_notify(*(uint64_t *)params[0], *(uint64_t *)params[1], k == 2);
    return OK;
}
P(cuMemHostAlloc, void **p, size_t n, unsigned flags)
{
    (void)flags;
    return fake_host_alloc(p, n) ? NOT_SUPPORTED : OK;
}
P(cuMemHostGetDevicePointer_v2, CUdeviceptr *d, void *p, unsigned flags)
{
    (void)flags;
    *d = (CUdeviceptr)(uintptr_t)p;
    return OK;
}
P(cuMemFreeHost, void *p) { fake_host_free(p); return OK; }
/* the streams held by fake_cuda_hold */
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

API void fake_cuda_hold(void *s, int on);
API void fake_cuda_hold(void *s, int on)
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

P(cuStreamQuery, void *s) { return is_held(s) ? 600 : OK; } /* NOT_READY */
P(cuStreamSynchronize, void *s)
{
    bool h = is_held(s); /* once a round: fake_hang counts answers */
    for (int i = 0; i < 30000 && h; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        h = is_held(s);
    }
    return h ? 702 : OK; /* CUDA_ERROR_LAUNCH_TIMEOUT */
}
P(cuCtxSynchronize, void) { return OK; }
P(cuStreamCreate, void **s, unsigned f) { (void)f; *s = fake_stream_new(); return *s ? OK : 2; }
P(cuStreamDestroy_v2, void *s) { fake_cuda_hold(s, 0); fake_stream_free(s); return OK; }
P(cuCtxEnablePeerAccess, void *c, unsigned f) { (void)c; (void)f; return OK; }
P(cuEventCreate, void **e, unsigned f) { (void)f; *e = malloc(1); return *e ? OK : 2; }
P(cuEventDestroy_v2, void *e) { free(e); return OK; }
P(cuEventRecord, void *e, void *s) { (void)e; (void)s; return OK; }
P(cuEventSynchronize, void *e) { (void)e; return OK; }
P(cuEventElapsedTime, float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0; return OK; }
P(cuGetErrorString, CUresult r, const char **s)
{
    *s = r == NOT_SUPPORTED ? "operation not supported (fake CUDA runs no kernels)"
       : r == 200 ? "device kernel image is invalid (FAKE_CUDA_LOAD_FAIL_FROM)"
                  : "fake CUDA error";
    return OK;
}
/* NVRTC looks this up in the loaded libcuda: no export tables here */
P(cuGetExportTable, const void **t, const void *id)
{
    (void)id;
    *t = NULL;
    return NOT_SUPPORTED;
}
