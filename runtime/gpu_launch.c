/* gpu_launch.c — the vendor-neutral half of the GPU runtime: devices by
 * name, modules (emit with the cuda/hip backend, load), argument checks
 * (bind.c, shared with the CPU launcher; device memory only here) and
 * packing following the kernel ABI of backends/gpu/gpu_emit.h (the tensor
 * maps of TMA kernels cached per module and launch signature), launch,
 * the rank context of kernels with rank builtins (one rank here: rank 0 of
 * 1, no heap table), and specialized variants of each kernel (compiled on
 * first use for the facts of a launch's tensor arguments). The CLI's run
 * on host buffers: gpu_run.c. */
#include "gpu.h"
#include "ranks.h"
#include "rt.h"
#include "../backends/gpu/gpu_emit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct RtGpu {
    const RtGpuOps *ops;
    void *dev;                 /* driver state */
    RtGpuDevInfo info;
    blkc_target target;
    int id;                    /* RT_GPU_EMU: cuda-emu / hip-emu */
    int busy;                  /* a kernel or copy did not end by its deadline
                                  (rt_gpu_wait): nothing is freed,
                                  unloaded or closed on it any more */
    RtGpu *kept_next;          /* the list of busy devices (rt_gpu_close) */
};

/* A specialized variant of a kernel: the generic IrFunc with the
 * IR_ASSUME_* facts of one launch signature set on its params, emitted
 * and loaded as a module of its own. Immutable once published. */
typedef struct RtGpuVariant {
    uint32_t *assume;          /* per param: the facts it was compiled for */
    int nbits;                 /* total facts (specificity) */
    IrFunc func;               /* shallow copy of the generic function ... */
    IrParam *params;           /* ... with its own params (assume set) */
    BkGpuKernelInfo ki;
    void *mod;                 /* its module */
    void *fn;                  /* NULL: compiling it failed (not retried) */
} RtGpuVariant;

typedef struct RtGpuKernel {
    const IrFunc *f;
    void *fn;                  /* CUfunction / hipFunction_t */
    BkGpuKernelInfo ki;
    /* specialized variants: grow under the module's spec_lock, read
     * without a lock (published with release stores) */
    int nv;                                /* published (atomic) */
    RtGpuVariant *v[RT_GPU_MAX_VARIANTS];  /* published (atomic) */
    int full_noted;            /* a full table was reported (atomic) */
} RtGpuKernel;

/* What one launch runs: the generic kernel or a variant. */
typedef struct RtGpuPick {
    const IrFunc *f;
    void *fn;
    const BkGpuKernelInfo *ki;
} RtGpuPick;

/* What a tensor map's encoding depends on (RtGpuOps.tmap_encode's
 * arguments; its other cuTensorMapEncodeTiled arguments are fixed: element
 * strides 1, no interleave, no L2 promotion, zero fill). The device is
 * the module's. 112 bytes without padding, 0 past the rank: compared with
 * memcmp. */
typedef struct RtTmapKey {
    uint64_t addr;             /* global address */
    uint64_t dims[5];          /* innermost first */
    uint64_t strides[4];       /* bytes, of dims 1 .. rank - 1 */
    uint32_t box[5];           /* elements, innermost first */
    int32_t rank;              /* 2..5: the tensor's */
    int32_t dtype;             /* CUtensorMapDataType */
    int32_t swizzle;           /* 1/2/3: 32B/64B/128B */
} RtTmapKey;
_Static_assert(sizeof(RtTmapKey) == 112, "RtTmapKey has padding");

typedef struct RtTmapEntry {
    RtTmapKey key;
    uint64_t used;             /* 0: empty; else the clock of its last use */
    unsigned char map[128];    /* the encoded CUtensorMap */
} RtTmapEntry;

struct RtGpuModule {
    RtGpu *g;
    const IrModule *m;
    void *mod;                 /* CUmodule / hipModule_t */
    RtGpuKernel *k;
    int nk;
    uint64_t fail;             /* device BkGpuFail shared by the launches */
    pthread_mutex_t lock;      /* serialises launches that use `fail` */
    RtGpuStage fst;            /* the staged reads of `fail` (under lock) */
    pthread_mutex_t spec_lock; /* held while compiling a variant */
    /* the tensor maps of this module's launches (gpu.h), least recently
     * used replaced; under tmap_lock */
    pthread_mutex_t tmap_lock;
    uint64_t tmap_clock;
    RtTmapEntry tmap[RT_GPU_TMAP_CACHE];
};

/* Tensor maps encoded and taken from a cache, in this process (gpu.h). */
static long long tmap_encoded, tmap_cached;

/* ------------------------------------------------------------ devices */

int rt_gpu_parse_device(const char *name, blkc_target *t, int *id, char *err,
                        size_t errlen)
{
    const char *rest;
    if (!name) {
        snprintf(err, errlen, "'(null)' is not a GPU device");
        return -1;
    }
    if (!strcmp(name, "cuda-emu") || !strcmp(name, "hip-emu")) {
        *t = name[0] == 'c' ? BLKC_TARGET_CUDA : BLKC_TARGET_HIP;
        *id = RT_GPU_EMU;
        return 0;
    }
    if (!strncmp(name, "cuda", 4)) {
        *t = BLKC_TARGET_CUDA;
        rest = name + 4;
    } else if (!strncmp(name, "hip", 3)) {
        *t = BLKC_TARGET_HIP;
        rest = name + 3;
    } else {
        snprintf(err, errlen, "'%s' is not a GPU device", name);
        return -1;
    }
    *id = 0;
    if (!*rest)
        return 0;
    if (*rest != ':' || rest[1] < '0' || rest[1] > '9') {
        snprintf(err, errlen, "bad device '%s' (cpu, cuda[:N], hip[:N], cuda-emu, hip-emu)", name);
        return -2;
    }
    char *end;
    long v = strtol(rest + 1, &end, 10);
    if (*end || v < 0 || v > 1023) {
        snprintf(err, errlen, "bad device '%s' (cpu, cuda[:N], hip[:N], cuda-emu, hip-emu)", name);
        return -2;
    }
    *id = (int)v;
    return 0;
}

blkc_status rt_gpu_open(blkc_target t, int id, RtGpu **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    const RtGpuOps *ops = t != BLKC_TARGET_CUDA && t != BLKC_TARGET_HIP ? NULL
                        : id == RT_GPU_EMU ? rt_gpu_emu_ops(t)
                        : t == BLKC_TARGET_CUDA ? rt_gpu_cuda_ops()
                                                : rt_gpu_hip_ops();
    if (!ops)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "not a GPU target");
    RtGpu *g = calloc(1, sizeof *g);
    if (!g)
        return rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
    g->ops = ops;
    g->target = t;
    g->id = id;
    int rc = ops->open(id, &g->dev, &g->info, err, errlen);
    if (rc != 0) {
        free(g);
        return rc == -2 ? BLKC_ERR_UNSUPPORTED : BLKC_ERR_RUNTIME;
    }
    *out = g;
    return BLKC_OK;
}

/* Devices whose kernel did not end by its deadline: never closed (the
 * driver might wait for the kernel), kept reachable here. */
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static RtGpu *kept;

void rt_gpu_close(RtGpu *g)
{
    if (!g)
        return;
    if (g->busy) {
        pthread_mutex_lock(&kept_mu);
        g->kept_next = kept;
        kept = g;
        pthread_mutex_unlock(&kept_mu);
        return;
    }
    g->ops->close(g->dev);
    free(g);
}

blkc_target rt_gpu_target(const RtGpu *g) { return g->target; }
int rt_gpu_id(const RtGpu *g) { return g->id; }
const char *rt_gpu_arch(const RtGpu *g) { return g->info.arch; }
const char *rt_gpu_name(const RtGpu *g) { return g->info.name; }
int rt_gpu_dl_type(const RtGpu *g) { return g->ops->dl_type; }
bool rt_gpu_is_emu(const RtGpu *g) { return g->id == RT_GPU_EMU; }
bool rt_gpu_busy(const RtGpu *g) { return __atomic_load_n(&g->busy, __ATOMIC_ACQUIRE); }

/* ------------------------------------------------------------ memory */

blkc_status rt_gpu_alloc(RtGpu *g, size_t bytes, uint64_t *dptr, char *err,
                         size_t errlen)
{
    return g->ops->alloc(g->dev, bytes, dptr, err, errlen) ? BLKC_ERR_RUNTIME
                                                           : BLKC_OK;
}

void rt_gpu_free(RtGpu *g, uint64_t dptr)
{
    if (g && dptr && !g->busy)
        g->ops->free(g->dev, dptr);
}

blkc_status rt_gpu_upload(RtGpu *g, uint64_t dst, const void *src,
                          size_t bytes, char *err, size_t errlen)
{
    return g->ops->h2d(g->dev, dst, src, bytes, err, errlen) ? BLKC_ERR_RUNTIME
                                                             : BLKC_OK;
}

blkc_status rt_gpu_download(RtGpu *g, void *dst, uint64_t src, size_t bytes,
                            char *err, size_t errlen)
{
    return g->ops->d2h(g->dev, dst, src, bytes, err, errlen) ? BLKC_ERR_RUNTIME
                                                             : BLKC_OK;
}

/* ------------------------------------------------------------ modules */

/* f's symbol in its module, blk_k_NAME (backend.h), in sym; the emitter
 * refused names longer than BK_GPU_NAME */
static const char *ksym(const IrFunc *f, char sym[BK_GPU_NAME + 16])
{
    snprintf(sym, BK_GPU_NAME + 16, BK_KERNEL_PREFIX "%s", f->name);
    return sym;
}

static bool absent(const char *msg)
{
    return strstr(msg, "not found") != NULL;
}

/* The emulated devices' image: the module's C text and one entry point
 * per kernel (BLK_EMU_ENTRY of runtime/emu/blk_emu.h). */
static blkc_status emu_image(RtGpu *g, const IrModule *m, DslBuf *img,
                             char *err, size_t errlen)
{
    char e[4096] = "";
    bool hip = g->target == BLKC_TARGET_HIP;
    BkOptions o = {g->info.arch, 3};
    if ((hip ? bk_hip_backend : bk_cuda_backend).emit(m, &o, hip ? "hip" : "cuda",
                                                      img, e, sizeof e))
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "%s", e);
    char line[300];
    for (int i = 0; i < m->nfuncs; i++)
        if (!m->funcs[i]->is_device) {
            snprintf(line, sizeof line, "\nBLK_EMU_ENTRY(" BK_KERNEL_PREFIX "%s)\n",
                     m->funcs[i]->name);
            dsl_buf_put(img, line, strlen(line));
        }
    return img->oom ? rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory")
                    : BLKC_OK;
}

/* BLKC_GPU_DUMP=DIR: the CUDA / HIP C of every module (each specialized
 * variant too) that is compiled, not found in the cache, written to
 * DIR/KERNEL.N.cu (.hip); a debugging aid (docs/gpu.md), errors ignored */
static void dump_source(RtGpu *g, const IrModule *m)
{
    const char *dir = getenv("BLKC_GPU_DUMP");
    if (!dir || !*dir || !m->nfuncs)
        return;
    static int seq;
    bool hip = g->target == BLKC_TARGET_HIP;
    BkOptions o = {g->info.arch, 3};
    DslBuf src;
    memset(&src, 0, sizeof src);
    char e[256], path[4096];
    if ((hip ? bk_hip_backend : bk_cuda_backend).emit(m, &o, hip ? "hip" : "cuda",
                                                      &src, e, sizeof e) == 0) {
        snprintf(path, sizeof path, "%s/%s.%d.%s", dir, m->funcs[0]->name,
                 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED), hip ? "hip" : "cu");
        FILE *fp = fopen(path, "w");
        if (fp) {
            fwrite(src.data, 1, src.len, fp);
            fclose(fp);
        }
    }
    dsl_buf_free(&src);
}

/* The loadable image of m for g's arch. */
static blkc_status emit_image(RtGpu *g, const IrModule *m, DslBuf *img,
                              char *err, size_t errlen)
{
    char e[4096] = "";
    dump_source(g, m);
    if (g->id == RT_GPU_EMU)
        return emu_image(g, m, img, err, errlen);
    if (g->target == BLKC_TARGET_HIP) {
        BkOptions o = {g->info.arch, 3};
        if (bk_hip_backend.emit(m, &o, "hsaco", img, e, sizeof e) == 0)
            return BLKC_OK;
        return rt_fail(absent(e) ? BLKC_ERR_UNSUPPORTED : BLKC_ERR_RUNTIME, err,
                       errlen, "compiling for %s: %s", g->info.arch, e);
    }
    BkOptions o = {g->info.arch, 3};
    if (bk_cuda_backend.emit(m, &o, "cubin", img, e, sizeof e) == 0)
        return BLKC_OK;
    if (absent(e))
        return rt_fail(BLKC_ERR_UNSUPPORTED, err, errlen, "%s", e);
    /* NVRTC may not know a newer arch: PTX for the closest it knows is
     * JIT-compiled by the driver */
    char first[1024];
    if (snprintf(first, sizeof first, "%s", e) >= (int)sizeof first)
        first[sizeof first - 1] = 0; /* a long NVRTC log: its start is enough */
    static const char *const fallback[] = {"compute_90", "compute_80", NULL};
    for (int i = 0; fallback[i]; i++) {
        if (strcmp(fallback[i] + 8, g->info.arch + 3) > 0)
            continue; /* never PTX for a newer arch than the device */
        dsl_buf_free(img);
        memset(img, 0, sizeof *img);
        BkOptions p = {fallback[i], 3};
        if (bk_cuda_backend.emit(m, &p, "ptx", img, e, sizeof e) == 0)
            return BLKC_OK;
    }
    return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "compiling for %s: %s",
                   g->info.arch, first);
}

blkc_status rt_gpu_module_load(RtGpu *g, const IrModule *m,
                               RtGpuModule **out, char *err, size_t errlen)
{
    *out = NULL;
    RtGpuModule *gm = calloc(1, sizeof *gm);
    if (!gm || !(gm->k = calloc((size_t)m->nfuncs + 1, sizeof *gm->k))) {
        free(gm);
        return rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
    }
    gm->g = g;
    gm->m = m;
    pthread_mutex_init(&gm->lock, NULL);
    pthread_mutex_init(&gm->spec_lock, NULL);
    pthread_mutex_init(&gm->tmap_lock, NULL);
    const BkGpuDialect *dl = g->target == BLKC_TARGET_HIP ? &bk_gpu_hip_dialect
                                                          : &bk_gpu_cuda_dialect;
    blkc_status st = BLKC_OK;
    bool any = false, ranks = false;
    char sym[BK_GPU_NAME + 16];
    for (int i = 0; i < m->nfuncs && st == BLKC_OK; i++) {
        const IrFunc *f = m->funcs[i];
        if (f->is_device)
            continue;
        RtGpuKernel *k = &gm->k[gm->nk++];
        k->f = f;
        char e[1024] = "";
        if (bk_gpu_kernel_info(f, dl, g->info.arch, &k->ki, e, sizeof e) != 0)
            st = rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: %s",
                         f->name, e);
        else if (k->ki.smem_bytes > g->info.max_smem)
            st = rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s needs %lld "
                         "bytes of shared memory; %s allows %lld per block "
                         "(use smaller tiles)", f->name, k->ki.smem_bytes,
                         g->info.arch, g->info.max_smem);
        any = true;
        ranks |= k->ki.rank_ctx;
    }
    DslBuf img;
    memset(&img, 0, sizeof img);
    if (st == BLKC_OK && any)
        st = emit_image(g, m, &img, err, errlen);
    if (st == BLKC_OK && any &&
        g->ops->load(g->dev, img.data, img.len, &gm->mod, err, errlen))
        st = BLKC_ERR_RUNTIME;
    dsl_buf_free(&img);
    for (int i = 0; i < gm->nk && st == BLKC_OK; i++)
        if (g->ops->function(g->dev, gm->mod, ksym(gm->k[i].f, sym),
                             gm->k[i].ki.smem_bytes, &gm->k[i].fn, err, errlen))
            st = BLKC_ERR_RUNTIME;
    if (st == BLKC_OK && ranks)
        st = rt_gpu_alloc(g, sizeof(BkGpuFail), &gm->fail, err, errlen);
    if (st != BLKC_OK) {
        rt_gpu_module_free(gm);
        return st;
    }
    *out = gm;
    return BLKC_OK;
}

static void variant_free(RtGpuModule *gm, RtGpuVariant *v)
{
    if (!v)
        return;
    if (v->mod && !gm->g->busy)
        gm->g->ops->unload(gm->g->dev, v->mod);
    free(v->assume);
    free(v->params);
    free(v);
}

void rt_gpu_module_free(RtGpuModule *gm)
{
    if (!gm)
        return;
    if (gm->fail)
        rt_gpu_free(gm->g, gm->fail);
    if (!gm->g->busy) /* else kept: a staged read may still land */
        rt_gpu_stage_free(gm->g->ops, gm->g->dev, &gm->fst);
    for (int i = 0; i < gm->nk; i++)
        for (int j = 0; j < gm->k[i].nv; j++)
            variant_free(gm, gm->k[i].v[j]);
    if (gm->mod && !gm->g->busy)
        gm->g->ops->unload(gm->g->dev, gm->mod);
    pthread_mutex_destroy(&gm->lock);
    pthread_mutex_destroy(&gm->spec_lock);
    pthread_mutex_destroy(&gm->tmap_lock);
    free(gm->k);
    free(gm);
}

/* ------------------------------------------------------------ launch */

static size_t align_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* GPU kernels read tensors in the memory of their device. */
static blkc_status device_memory(const void *ctx, const IrParam *p,
                                 const DLTensor *t, char *err, size_t errlen)
{
    const RtGpu *g = ctx;
    int dtype = t->device.device_type;
    if (g->id == RT_GPU_EMU) { /* emulated: host memory */
        if (dtype == kDLCPU || dtype == kDLCUDAHost || dtype == kDLROCMHost)
            return BLKC_OK;
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: tensor is "
                       "not in host memory, which %s-emu uses (device type %d)",
                       p->name, g->target == BLKC_TARGET_CUDA ? "cuda" : "hip",
                       dtype);
    }
    bool here = g->target == BLKC_TARGET_CUDA
                    ? dtype == kDLCUDA || dtype == kDLCUDAManaged
                    : dtype == kDLROCM;
    if (!here || t->device.device_id != g->id)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "parameter %s: tensor is "
                       "not in the memory of %s:%d (device type %d, id %d)",
                       p->name, g->target == BLKC_TARGET_CUDA ? "cuda" : "hip",
                       g->id, dtype, (int)t->device.device_id);
    return BLKC_OK;
}

/* The packed size and alignment of param p: a tensor as the BlkTensor<T, R>
 * image { data; shape[R]; stride[R] }, a scalar as its storage. */
static size_t param_size(const IrParam *p)
{
    return p->kind == PK_TENSOR ? 8 + 16 * (size_t)p->rank
                                : (size_t)dsl_dtype_bytes(p->dtype);
}

static size_t param_align(const IrParam *p)
{
    return p->kind == PK_TENSOR ? 8 : param_size(p);
}

/* Bound param pi of b into dst in the kernel ABI of gpu_emit.h. */
static void pack_param(const IrFunc *f, int pi, const RtBind *b,
                       unsigned char *dst)
{
    const IrParam *p = &f->params[pi];
    if (p->kind != PK_TENSOR) {
        memcpy(dst, b->slots[pi].b, param_size(p));
        return;
    }
    const BkTensorDesc *d = &b->desc[pi];
    long long shape[IR_MAX_RANK], stride[IR_MAX_RANK];
    for (int k = 0; k < p->rank; k++) {
        shape[k] = d->shape[k];
        stride[k] = d->stride[k];
    }
    uint64_t data = (uint64_t)(uintptr_t)d->data;
    memcpy(dst, &data, 8);
    memcpy(dst + 8, shape, (size_t)p->rank * 8);
    memcpy(dst + 8 + (size_t)p->rank * 8, stride, (size_t)p->rank * 8);
}

/* The tensor map of key into map: from the module's cache, else encoded
 * by the driver and kept (a failed encoding is not), replacing the least
 * recently used entry when the cache is full. The lock is held across the
 * encoding so that concurrent launches of one signature encode it once
 * (cuTensorMapEncodeTiled only fills in 128 bytes on the host). */
static int tmap_get(RtGpuModule *gm, const RtTmapKey *key, unsigned char *map, char *err,
                    size_t errlen)
{
    const RtGpu *g = gm->g;
    pthread_mutex_lock(&gm->tmap_lock);
    RtTmapEntry *hit = NULL, *victim = &gm->tmap[0];
    for (int i = 0; i < RT_GPU_TMAP_CACHE && !hit; i++) {
        RtTmapEntry *e = &gm->tmap[i];
        if (e->used && !memcmp(&e->key, key, sizeof *key))
            hit = e;
        else if (e->used < victim->used)
            victim = e;
    }
    int rc = 0;
    if (hit) {
        memcpy(map, hit->map, sizeof hit->map);
        hit->used = ++gm->tmap_clock;
        __atomic_fetch_add(&tmap_cached, 1, __ATOMIC_RELAXED);
    } else {
        rc = g->ops->tmap_encode(g->dev, map, key->dtype, key->rank, key->addr, key->dims,
                                 key->strides, key->box, key->swizzle, err, errlen);
        if (rc == 0) {
            victim->key = *key;
            memcpy(victim->map, map, sizeof victim->map);
            victim->used = ++gm->tmap_clock;
            __atomic_fetch_add(&tmap_encoded, 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&gm->tmap_lock);
    return rc;
}

void rt_gpu_tmap_counts(long long *encoded, long long *cached)
{
    *encoded = __atomic_load_n(&tmap_encoded, __ATOMIC_RELAXED);
    *cached = __atomic_load_n(&tmap_cached, __ATOMIC_RELAXED);
}

/* The tensor map t of a launch (gpu_tma.c) into map: the bound tensor's
 * data, shape and strides, its dims reversed (the map's innermost first);
 * an empty tensor gets none (no box of it is ever loaded: its loop or grid
 * is empty). */
static blkc_status tensor_map(RtGpuModule *gm, const IrFunc *f, const BkGpuTma *t,
                              const RtBind *b, unsigned char *map, char *err, size_t errlen)
{
    const IrParam *p = &f->params[t->param];
    const BkTensorDesc *d = &b->desc[t->param];
    const RtGpu *g = gm->g;
    const int r = t->rank;
    bool neg = false;
    for (int i = 0; i < r; i++) {
        if (d->shape[i] <= 0)
            return BLKC_OK;
        neg |= d->stride[i] < 0;
    }
    if (!d->data)
        return BLKC_OK;
    if (!g->ops->tmap_encode)
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: %s has no tensor maps (TMA)",
                       f->name, g->ops->vendor);
    RtTmapKey key;
    memset(&key, 0, sizeof key);
    key.addr = (uint64_t)(uintptr_t)d->data;
    key.rank = r;
    const uint64_t es = (uint64_t)dsl_dtype_bytes(p->dtype);
    for (int i = 0; i < r; i++) { /* map dim i: tensor dim r - 1 - i */
        key.dims[i] = (uint64_t)d->shape[r - 1 - i];
        key.box[i] = (uint32_t)t->box[i];
        if (i > 0)
            key.strides[i - 1] = (uint64_t)d->stride[r - 1 - i] * es;
    }
    /* CU_TENSOR_MAP_DATA_TYPE_: BFLOAT16 9, FLOAT16 6, UINT8 0 (fp8: TMA
     * moves bytes) */
    key.dtype = p->dtype == DT_BF16 ? 9 : p->dtype == DT_F32 ? 7 /* FLOAT32: a TMA store */
              : dsl_dtype_bytes(p->dtype) == 1 ? 0 : 6;
    key.swizzle = t->span == 128 ? 3 : t->span == 64 ? 2 : 1;
    char e[300], sh[160] = "";
    if (!neg && !tmap_get(gm, &key, map, e, sizeof e))
        return BLKC_OK;
    for (int i = 0, n = 0; i < r && n >= 0 && (size_t)n < sizeof sh; i++)
        n += snprintf(sh + n, sizeof sh - (size_t)n, "%s%lld", i ? " x " : "",
                      (long long)d->shape[i]);
    if (r == 2) /* the rank-2 message as before */
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: no tensor map for %s (shape "
                       "%s, row stride %lld): %s", f->name, p->name, sh, (long long)d->stride[0],
                       neg ? "a negative row stride" : e);
    return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: no tensor map for %s (shape %s): %s",
                   f->name, p->name, sh, neg ? "a negative stride" : e);
}

static int64_t timeout_ms(void)
{
    const char *s = getenv("BLKC_WAIT_TIMEOUT_MS");
    if (!s || !*s)
        return 5000;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end == 0 && v > 0 ? v : 5000;
}

static RtGpuKernel *find_kernel(RtGpuModule *gm, const IrFunc *f)
{
    for (int i = 0; i < gm->nk; i++)
        if (gm->k[i].f == f || !strcmp(gm->k[i].f->name, f->name))
            return &gm->k[i];
    return NULL;
}

/* The packed argument buffer of one launch. */
typedef struct Packed {
    unsigned char *buf;
    size_t size;
    void **params;           /* per argument (+ the rank context) */
    int64_t grid[3];         /* the grid of programs */
    int64_t launch[3];       /* the blocks launched: the grid, or for a
                                persistent kernel min(programs, SMs) */
} Packed;

static void packed_free(Packed *pk)
{
    free(pk->buf);
    free(pk->params);
}

/* A persistent kernel's launch (gpu_persist.c): the grid of programs as
 * its last three int parameters, min(programs, SMs) blocks along x (one
 * block per SM: its __launch_bounds__(threads, 1)). The last launch's
 * blocks and programs are kept for --stats (0, 0: not persistent). */
static long long persist_blocks, persist_tiles;

void rt_gpu_persist_last(long long *blocks, long long *tiles)
{
    *blocks = __atomic_load_n(&persist_blocks, __ATOMIC_RELAXED);
    *tiles = __atomic_load_n(&persist_tiles, __ATOMIC_RELAXED);
}

static blkc_status persist_grid(RtGpuModule *gm, const RtGpuPick *k, Packed *pk,
                                size_t np_off, char *err, size_t errlen)
{
    const int64_t tiles = pk->grid[0] * pk->grid[1] * pk->grid[2];
    if (tiles > INT32_MAX)
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: %lld programs, more "
                       "than a persistent kernel counts (%d)", k->f->name, (long long)tiles,
                       INT32_MAX);
    int32_t g[3] = {(int32_t)pk->grid[0], (int32_t)pk->grid[1], (int32_t)pk->grid[2]};
    memcpy(pk->buf + np_off, g, sizeof g);
    const int np = k->f->nparams + (k->ki->rank_ctx ? 1 : 0) + k->ki->ntma;
    for (int a = 0; a < 3; a++)
        pk->params[np + a] = pk->buf + np_off + a * sizeof(int32_t);
    const int sms = gm->g->info.sms;
    pk->launch[0] = sms > 0 && tiles > sms ? sms : tiles;
    pk->launch[1] = pk->launch[2] = 1;
    __atomic_store_n(&persist_blocks, (long long)pk->launch[0], __ATOMIC_RELAXED);
    __atomic_store_n(&persist_tiles, (long long)tiles, __ATOMIC_RELAXED);
    return BLKC_OK;
}

static blkc_status pack(RtGpuModule *gm, const RtGpuPick *k,
                        const blkc_arg *args, int nargs,
                        const blkc_launch_options *opts,
                        const BkGpuRankCtx *rcx, Packed *pk, char *err,
                        size_t errlen)
{
    const IrFunc *f = k->f;
    memset(pk, 0, sizeof *pk);
    RtBindDevice dev = {device_memory, gm->g, false};
    RtBind b;
    blkc_status st = rt_bind_args(&b, f, args, nargs, &dev, err, errlen);
    int np = f->nparams;
    size_t size = 0;
    for (int i = 0; i < np; i++)
        size = align_up(size, param_align(&f->params[i])) +
               param_size(&f->params[i]);
    size_t ctx_off = align_up(size, 8);
    if (k->ki->rank_ctx)
        size = ctx_off + sizeof(BkGpuRankCtx);
    size_t tma_off = align_up(size, 64); /* then the tensor maps (gpu_tma.c) */
    if (k->ki->ntma)
        size = tma_off + 128 * (size_t)k->ki->ntma;
    size_t np_off = align_up(size, 4); /* then a persistent kernel's grid */
    if (k->ki->persist)
        size = np_off + 3 * sizeof(int32_t);
    pk->size = align_up(size, 64);
    if (st == BLKC_OK) {
        pk->buf = aligned_alloc(64, pk->size + 64);
        pk->params = calloc((size_t)np + 5 + BK_GPU_MAXTMA, sizeof *pk->params);
        if (!pk->buf || !pk->params)
            st = rt_fail(BLKC_ERR_NOMEM, err, errlen, "out of memory");
        else
            memset(pk->buf, 0, pk->size + 64);
    }
    size = 0;
    for (int i = 0; st == BLKC_OK && i < np; i++) {
        size_t off = align_up(size, param_align(&f->params[i]));
        pk->params[i] = pk->buf + off;
        pack_param(f, i, &b, pk->buf + off);
        size = off + param_size(&f->params[i]);
    }
    if (st == BLKC_OK && k->ki->rank_ctx) {
        BkGpuRankCtx rc;
        memset(&rc, 0, sizeof rc);
        rc.rank = 0;
        rc.world = 1;
        rc.fail = gm->fail;
        if (rcx) /* a rank of a GPU world (gpu_ranks.c) */
            rc = *rcx;
        rc.timeout = timeout_ms() * gm->g->info.ticks_per_ms;
        memcpy(pk->buf + ctx_off, &rc, sizeof rc);
        pk->params[np] = pk->buf + ctx_off;
    }
    for (int j = 0; st == BLKC_OK && j < k->ki->ntma; j++) {
        unsigned char *map = pk->buf + tma_off + 128 * (size_t)j;
        pk->params[np + (k->ki->rank_ctx ? 1 : 0) + j] = map;
        st = tensor_map(gm, f, &k->ki->tma[j], &b, map, err, errlen);
    }
    if (st == BLKC_OK)
        st = rt_bind_grid(&b, f, opts, rcx ? rcx->rank : 0,
                          rcx ? rcx->world : 1, pk->grid, err, errlen);
    memcpy(pk->launch, pk->grid, sizeof pk->launch);
    if (st == BLKC_OK && k->ki->persist)
        st = persist_grid(gm, k, pk, np_off, err, errlen);
    else if (st == BLKC_OK) { /* the last launch was not persistent */
        __atomic_store_n(&persist_blocks, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&persist_tiles, 0, __ATOMIC_RELAXED);
    }
    static const int64_t lim[3] = {INT32_MAX, 65535, 65535};
    for (int a = 0; a < 3 && st == BLKC_OK; a++)
        if (pk->grid[a] > lim[a])
            st = rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: grid "
                         "extent %lld along axis %d exceeds the GPU limit "
                         "%lld", f->name, (long long)pk->grid[a], a,
                         (long long)lim[a]);
    rt_bind_free(&b);
    if (st != BLKC_OK)
        packed_free(pk);
    return st;
}

/* The error of a failed assert in the record (as the CPU's). */
static blkc_status assert_fail(const IrFunc *f, const BkGpuFail *fr, char *err,
                               size_t errlen)
{
    BkLaunchCtx c;
    memset(&c, 0, sizeof c);
    c.assert_msg = fr->amsg;
    c.assert_line = fr->aline;
    for (int a = 0; a < 3; a++)
        c.assert_pid[a] = fr->apid[a];
    return rt_assert_fail(f, &c, err, errlen);
}

/* Read the failure record after a synchronised launch (gm->lock held),
 * staged with the lone kernel's deadline tmo_ms where one is set
 * (rt_gpu_copy_timed: "the read of kernel K's failure record did not
 * complete within T ms (...)", the device then busy), else synchronous. */
static blkc_status check_fail(RtGpuModule *gm, const IrFunc *f, int64_t tmo_ms,
                              char *err, size_t errlen)
{
    BkGpuFail fr;
    char what[256];
    snprintf(what, sizeof what, "the read of kernel %s's failure record",
             f->name);
    if (rt_gpu_copy_timed(gm->g, &gm->fst, false, gm->fail, &fr, sizeof fr,
                          what, tmo_ms, err, errlen) != BLKC_OK)
        return BLKC_ERR_RUNTIME;
    if (fr.asserted)
        return assert_fail(f, &fr, err, errlen);
    if (!fr.failed)
        return BLKC_OK;
    const char *sig = fr.param >= 0 && fr.param < f->nparams
                          ? f->params[fr.param].name : "?";
    if (fr.aborted)
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s on rank 0: "
                       "wait on %s[%lld] abandoned: another rank failed",
                       f->name, sig, (long long)fr.cell);
    return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s on rank 0: wait "
                   "on %s[%lld] timed out after %lld ms (waiting for %llu, "
                   "saw %llu)", f->name, sig, (long long)fr.cell,
                   (long long)timeout_ms(), (unsigned long long)fr.expected,
                   (unsigned long long)fr.seen);
}

/* ------------------------------------------------------------ variants */

/* Emit and load kernel k specialized for sig (spec_lock held). Returns
 * the entry to publish (NULL: out of memory); v->fn is NULL and err says
 * why when it could not be compiled or loaded. */
static RtGpuVariant *variant_compile(RtGpuModule *gm, const RtGpuKernel *k,
                                     const uint32_t *sig, char *err,
                                     size_t errlen)
{
    RtGpu *g = gm->g;
    const IrFunc *f = k->f;
    RtGpuVariant *v = calloc(1, sizeof *v);
    if (!v || !(v->assume = calloc((size_t)f->nparams + 1, sizeof *v->assume)) ||
        !(v->params = calloc((size_t)f->nparams + 1, sizeof *v->params))) {
        if (v)
            free(v->assume);
        free(v);
        return NULL;
    }
    for (int p = 0; p < f->nparams; p++) {
        v->params[p] = f->params[p];
        v->params[p].assume = v->assume[p] = sig[p];
        v->nbits += __builtin_popcount(sig[p]);
    }
    v->func = *f;
    v->func.params = v->params;
    const BkGpuDialect *dl = g->target == BLKC_TARGET_HIP ? &bk_gpu_hip_dialect
                                                          : &bk_gpu_cuda_dialect;
    char e[1024] = "", sym[BK_GPU_NAME + 16];
    IrFunc *fp = &v->func;
    IrModule view;
    memset(&view, 0, sizeof view);
    view.funcs = &fp;
    view.nfuncs = 1;
    DslBuf img;
    memset(&img, 0, sizeof img);
    blkc_status st = BLKC_OK;
    if (bk_gpu_kernel_info(fp, dl, g->info.arch, &v->ki, e, sizeof e) != 0)
        st = rt_fail(BLKC_ERR_RUNTIME, err, errlen, "%s", e);
    else if (v->ki.smem_bytes > g->info.max_smem)
        st = rt_fail(BLKC_ERR_RUNTIME, err, errlen, "it needs %lld bytes of "
                     "shared memory; %s allows %lld", v->ki.smem_bytes,
                     g->info.arch, g->info.max_smem);
    if (st == BLKC_OK)
        st = emit_image(g, &view, &img, err, errlen);
    if (st == BLKC_OK &&
        g->ops->load(g->dev, img.data, img.len, &v->mod, err, errlen))
        st = BLKC_ERR_RUNTIME;
    dsl_buf_free(&img);
    if (st == BLKC_OK &&
        g->ops->function(g->dev, v->mod, ksym(f, sym), v->ki.smem_bytes, &v->fn,
                         err, errlen))
        st = BLKC_ERR_RUNTIME;
    if (st != BLKC_OK) {
        v->fn = NULL;
        if (v->mod)
            g->ops->unload(g->dev, v->mod);
        v->mod = NULL;
    }
    return v;
}

/* Set *pk to what a launch of k with args runs (see gpu.h); a note about
 * a variant that could not be used goes into note ("" otherwise). */
static void pick(RtGpuModule *gm, RtGpuKernel *k, const blkc_arg *args,
                 int nargs, RtGpuPick *pk, char *note, size_t notelen)
{
    pk->f = k->f;
    pk->fn = k->fn;
    pk->ki = &k->ki;
    const IrFunc *f = k->f;
    uint32_t sig[64];
    if (!rt_specialize_env() || f->nparams > 64 ||
        !rt_signature(f, args, nargs, sig))
        return; /* malformed arguments: the launcher reports them */
    bool any = false;
    for (int p = 0; p < f->nparams; p++)
        any |= sig[p] != 0;
    if (!any)
        return;
    for (int round = 0; round < 2; round++) {
        int n = __atomic_load_n(&k->nv, __ATOMIC_ACQUIRE);
        const RtGpuVariant *best = NULL, *exact = NULL;
        for (int i = 0; i < n; i++) {
            const RtGpuVariant *v = __atomic_load_n(&k->v[i], __ATOMIC_ACQUIRE);
            bool same = true, fits = true;
            for (int p = 0; p < f->nparams; p++) {
                same &= v->assume[p] == sig[p];
                fits &= (v->assume[p] & ~sig[p]) == 0;
            }
            if (same)
                exact = v;
            else if (v->fn && fits && (!best || v->nbits > best->nbits))
                best = v;
        }
        if (exact && exact->fn)
            best = exact;
        if (!exact && round == 0 && n < RT_GPU_MAX_VARIANTS) {
            pthread_mutex_lock(&gm->spec_lock);
            /* another thread may have published meanwhile: ours too? */
            int n2 = __atomic_load_n(&k->nv, __ATOMIC_ACQUIRE);
            bool have = false;
            for (int i = n; i < n2 && !have; i++) {
                have = true;
                for (int p = 0; p < f->nparams; p++)
                    have &= k->v[i]->assume[p] == sig[p];
            }
            if (!have && n2 < RT_GPU_MAX_VARIANTS) {
                n = n2;
                RtGpuVariant *v = variant_compile(gm, k, sig, note, notelen);
                if (!v) {
                    snprintf(note, notelen, "kernel %s: out of memory for a "
                             "specialized variant; running the generic one",
                             f->name);
                } else {
                    if (!v->fn) { /* keep the reason, add the context */
                        char why[768];
                        snprintf(why, sizeof why, "%s", note);
                        snprintf(note, notelen, "kernel %s: the variant "
                                 "specialized for these arguments could not "
                                 "be built (%s); running the %s one", f->name,
                                 why, best ? "closest specialized" : "generic");
                    }
                    __atomic_store_n(&k->v[n], v, __ATOMIC_RELEASE);
                    __atomic_store_n(&k->nv, n + 1, __ATOMIC_RELEASE);
                }
            }
            pthread_mutex_unlock(&gm->spec_lock);
            continue; /* pick from the table as it is now */
        }
        if (!exact && n >= RT_GPU_MAX_VARIANTS &&
            !__atomic_exchange_n(&k->full_noted, 1, __ATOMIC_RELAXED))
            snprintf(note, notelen, "kernel %s: %d specialized variants "
                     "exist (the limit); other argument signatures run the "
                     "%s variant", f->name, RT_GPU_MAX_VARIANTS,
                     best ? "closest specialized" : "generic");
        if (best) {
            pk->f = &best->func;
            pk->fn = best->fn;
            pk->ki = &best->ki;
        }
        return;
    }
}

/* (gpu.h) polled as the GPU ranks' waits are (20 us pauses for ~50 ms,
 * then 100 us) */
int rt_gpu_wait(RtGpu *g, void *stream, const char *what, int64_t tmo_ms,
                char *err, size_t errlen)
{
    if (tmo_ms < 0 || !g->ops->query)
        return g->ops->sync(g->dev, stream, err, errlen);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long round = 0;; round++) {
        int q = g->ops->query(g->dev, stream, err, errlen);
        if (q <= 0)
            return q;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((int64_t)(t.tv_sec - t0.tv_sec) * 1000 +
                (t.tv_nsec - t0.tv_nsec) / 1000000 >= tmo_ms) {
            __atomic_store_n(&g->busy, 1, __ATOMIC_RELEASE);
            snprintf(err, errlen, "%s did not complete within %lld ms (the "
                     "deadline that BLKC_COLL_TIMEOUT_MS or "
                     "BLKC_WAIT_TIMEOUT_MS sets)", what, (long long)tmo_ms);
            return -1;
        }
        struct timespec ts = {0, round < 2500 ? 20000 : 100000};
        nanosleep(&ts, NULL);
    }
}

/* One launch; sync: wait for it (with a deadline of tmo_ms, -1: none,
 * rt_gpu_wait) and report a failed wait. */
static blkc_status launch_k(RtGpuModule *gm, RtGpuKernel *gk,
                            const blkc_arg *args, int nargs,
                            const blkc_launch_options *opts, bool sync,
                            int64_t tmo_ms, int64_t grid_out[3], char *err,
                            size_t errlen)
{
    RtGpu *g = gm->g;
    char note[1024] = "";
    RtGpuPick pkk, *k = &pkk;
    pick(gm, gk, args, nargs, &pkk, note, sizeof note);
    Packed pk;
    blkc_status st = pack(gm, k, args, nargs, opts, NULL, &pk, err, errlen);
    if (st != BLKC_OK)
        return st;
    if (grid_out)
        memcpy(grid_out, pk.grid, sizeof pk.grid);
    void *stream = opts ? opts->stream : NULL;
    bool empty = !pk.grid[0] || !pk.grid[1] || !pk.grid[2];
    bool ranks = k->ki->rank_ctx;
    if (ranks)
        pthread_mutex_lock(&gm->lock);
    if (!empty && ranks &&
        g->ops->zero(g->dev, gm->fail, sizeof(BkGpuFail), stream, err, errlen))
        st = BLKC_ERR_RUNTIME;
    if (st == BLKC_OK && !empty &&
        g->ops->launch(g->dev, k->fn, pk.launch, k->ki->threads,
                       k->ki->smem_bytes, stream, pk.params, pk.buf, pk.size,
                       err, errlen))
        st = BLKC_ERR_RUNTIME;
    if (st == BLKC_OK && !empty && sync) {
        char what[256];
        snprintf(what, sizeof what, "kernel %s", k->f->name);
        if (rt_gpu_wait(g, stream, what, tmo_ms, err, errlen))
            st = BLKC_ERR_RUNTIME;
        else if (ranks)
            st = check_fail(gm, k->f, tmo_ms, err, errlen);
    }
    if (ranks)
        pthread_mutex_unlock(&gm->lock);
    packed_free(&pk);
    if (st == BLKC_OK)
        snprintf(err, errlen, "%s", note);
    return st;
}

blkc_status rt_gpu_launch_timed(RtGpuModule *gm, const IrFunc *f,
                                const blkc_arg *args, int nargs,
                                const blkc_launch_options *opts, bool sync,
                                int64_t tmo_ms, int64_t grid_out[3], char *err,
                                size_t errlen)
{
    if (!gm || !f)
        return rt_fail(BLKC_ERR_USAGE, err, errlen, "no kernel");
    RtGpuKernel *k = find_kernel(gm, f);
    if (!k)
        return rt_fail(BLKC_ERR_NOT_FOUND, err, errlen, "kernel %s is not in "
                       "the module", f->name);
    return launch_k(gm, k, args, nargs, opts, sync, tmo_ms, grid_out, err, errlen);
}

blkc_status rt_gpu_launch(RtGpuModule *gm, const IrFunc *f,
                          const blkc_arg *args, int nargs,
                          const blkc_launch_options *opts,
                          int64_t grid_out[3], char *err, size_t errlen)
{
    bool sync = !opts || !opts->stream;
    return rt_gpu_launch_timed(gm, f, args, nargs, opts, sync,
                               sync ? rt_set_deadline_ms() : -1, grid_out, err, errlen);
}

blkc_status rt_gpu_finish(RtGpuModule *gm, const IrFunc *f, const char *what,
                          int64_t tmo_ms, char *err, size_t errlen)
{
    RtGpuKernel *k = find_kernel(gm, f);
    if (rt_gpu_wait(gm->g, NULL, what, tmo_ms, err, errlen))
        return BLKC_ERR_RUNTIME;
    if (!k || !k->ki.rank_ctx)
        return BLKC_OK;
    pthread_mutex_lock(&gm->lock);
    blkc_status st = check_fail(gm, f, rt_set_deadline_ms(), err, errlen);
    pthread_mutex_unlock(&gm->lock);
    return st;
}

blkc_status rt_gpu_launch_rank(RtGpuModule *gm, const IrFunc *f,
                               const blkc_arg *args, int nargs,
                               const blkc_launch_options *opts,
                               const BkGpuRankCtx *rc,
                               int (*wait)(void *cx, void *fail, size_t n),
                               void *cx, char *err, size_t errlen)
{
    RtGpuKernel *k = gm && f ? find_kernel(gm, f) : NULL;
    if (!k)
        return rt_fail(BLKC_ERR_NOT_FOUND, err, errlen, "kernel %s is not in "
                       "the module", f ? f->name : "?");
    RtGpu *g = gm->g;
    void *stream = opts ? opts->stream : NULL;
    char note[1024] = "";
    RtGpuPick pkk;
    pick(gm, k, args, nargs, &pkk, note, sizeof note);
    Packed pk;
    blkc_status st = pack(gm, &pkk, args, nargs, opts, rc, &pk, err, errlen);
    if (st != BLKC_OK)
        return st;
    bool empty = !pk.grid[0] || !pk.grid[1] || !pk.grid[2];
    bool ranks = pkk.ki->rank_ctx && rc->fail;
    if (!empty && ranks &&
        g->ops->zero(g->dev, rc->fail, sizeof(BkGpuFail), stream, err, errlen))
        st = BLKC_ERR_RUNTIME;
    if (st == BLKC_OK && !empty &&
        g->ops->launch(g->dev, pkk.fn, pk.launch, pkk.ki->threads,
                       pkk.ki->smem_bytes, stream, pk.params, pk.buf, pk.size,
                       err, errlen))
        st = BLKC_ERR_RUNTIME;
    BkGpuFail fr;
    if (st == BLKC_OK && !empty && wait(cx, ranks ? &fr : NULL, sizeof fr)) {
        snprintf(err, errlen, "kernel %s did not end", f->name);
        st = BLKC_ERR_RUNTIME;
    }
    packed_free(&pk);
    if (st != BLKC_OK || empty || !ranks)
        return st;
    if (fr.asserted)
        return assert_fail(f, &fr, err, errlen);
    if (!fr.failed)
        return BLKC_OK;
    const char *sig = fr.param >= 0 && fr.param < f->nparams
                          ? f->params[fr.param].name : "?";
    if (fr.aborted)
        return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: wait on "
                       "%s[%lld] abandoned: another rank failed", f->name,
                       sig, (long long)fr.cell);
    return rt_fail(BLKC_ERR_RUNTIME, err, errlen, "kernel %s: wait on "
                   "%s[%lld] timed out after %lld ms (waiting for %llu, saw "
                   "%llu)", f->name, sig, (long long)fr.cell,
                   (long long)timeout_ms(), (unsigned long long)fr.expected,
                   (unsigned long long)fr.seen);
}

const RtGpuOps *rt_gpu_ops(const RtGpu *g) { return g->ops; }
void *rt_gpu_dev(const RtGpu *g) { return g->dev; }
