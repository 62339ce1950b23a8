/* cache.c — the JIT cache's store (see cache.h): SHA-256 keys, object
 * files linked into ORC LLJIT without codegen, the on-disk store and the
 * backend emit path through it (jc_emit, jc_cpu_code). The in-memory cache
 * of compiled units and their variants is cache_mem.c.
 *
 * Disk entries are `<dir>/<sha256 hex>.blkc`: a 96-byte header (magic,
 * format version, payload length, 64-bit payload checksum, the key) and the
 * payload. They are written to a temp file in the same directory and
 * renamed into place, so readers in other processes see the old entry, the
 * new one or none. A short, mislabelled or checksum-failing entry is
 * deleted and treated as a miss. The checksum is a 64-bit multiply-xor hash
 * (corruption, not attacks: the key itself is SHA-256; an undetected random
 * corruption has odds about 2^-64). LRU-ish eviction uses mtimes, which a
 * hit refreshes. */
#include "cache.h"
#include "isolate.h"

#ifndef BLKC_NO_CPU_BACKEND
#include "../backends/cpu/cpu.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#ifndef BLKC_NO_CPU_BACKEND
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm/Config/llvm-config.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef BLKC_VERSION_STRING
#define BLKC_VERSION_STRING "0.1.0"
#endif
#define JC_FORMAT 2                 /* bump when key or entry layout changes,
                                       or when the code stored under a key
                                       does (2: specialized CPU variants use
                                       their facts) */
#define JC_MAGIC "BLKCJC\r\n"       /* 8 bytes */
#define JC_HDR 96

/* ------------------------------------------------------------ SHA-256 */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5],
             g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) +
                      ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) +
                      ((a & b) ^ (a & c) ^ (b & c));
        k = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void jc_sha_init(JcSha *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->n = 0;
    s->nbuf = 0;
}

void jc_sha_add(JcSha *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->n += n;
    while (n) {
        if (s->nbuf == 0 && n >= 64) {
            sha_block(s->h, p);
            p += 64;
            n -= 64;
            continue;
        }
        size_t k = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += k;
        p += k;
        n -= k;
        if (s->nbuf == 64) {
            sha_block(s->h, s->buf);
            s->nbuf = 0;
        }
    }
}

void jc_sha_i64(JcSha *s, int64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)v >> (8 * i));
    jc_sha_add(s, b, 8);
}

void jc_sha_str(JcSha *s, const char *str)
{
    size_t n = str ? strlen(str) : 0;
    jc_sha_i64(s, str ? (int64_t)n : -1);
    jc_sha_add(s, str, n);
}

void jc_sha_done(JcSha *s, uint8_t out[32])
{
    uint64_t bits = s->n * 8;
    uint8_t pad = 0x80, zero = 0;
    jc_sha_add(s, &pad, 1);
    while (s->nbuf != 56)
        jc_sha_add(s, &zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    jc_sha_add(s, len, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

void jc_hex(const uint8_t key[32], char out[65])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hx[key[i] >> 4];
        out[2 * i + 1] = hx[key[i] & 15];
    }
    out[64] = 0;
}

/* 64-bit word-at-a-time hash: entry checksums and memory-cache buckets */
uint64_t jc_fast_hash(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    h ^= 0x9E3779B97F4A7C15ull * (n + 1);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

/* ------------------------------------------------------------ LLVM */

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;
static char host_id[1024];

#ifdef BLKC_NO_CPU_BACKEND
/* a build without the CPU backend (backends/nocpu/): no LLVM and no host
 * objects; GPU modules are still cached */
#define LLVM_VERSION_STRING "none"
static void llvm_init(void)
{
    snprintf(host_id, sizeof host_id, "no-cpu-backend");
}
#else
static void llvm_init(void)
{
    /* let the CPU backend do the one-time target registration (its own
     * once), so that it never races with ours */
    IrModule *m = ir_module_new();
    if (m) {
        DslBuf b;
        memset(&b, 0, sizeof b);
        char err[256];
        bk_cpu_backend.emit(m, NULL, "llvm-unopt", &b, err, sizeof err);
        dsl_buf_free(&b);
        ir_module_free(m);
    }
    char *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
    snprintf(host_id, sizeof host_id, "%s|%s", cpu ? cpu : "?",
             feat ? feat : "?");
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feat);
}
#endif

/* Which build of blkc made an entry: a hash of the compiler's sources,
 * made at build time (cmake/build_id.cmake), so that a rebuilt compiler
 * never serves what an older one compiled; the version string alone does
 * not change between builds. */
extern const char jc_build_id[];

static bool gpu_switch(const char *name)
{
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0");
}

/* the GPU emitter's switches that change its code (gpu_emit.c: NOVEC, NOPIPE,
 * NOSYNCELIM, NOHOIST, NOTMA, WGSYNC, the address forms NOEX2FTZ, NOLDSMXOR,
 * NOCPIMM, NOCPLIM32, NOCPGUARD32, NOHIPSTAGE and NOLOOPSPLIT, gpu_split.c;
 * NOFRAGPIPE, gpu_fragpipe.c; gpu_layouts.c,
 * gpu_rvals.c, gpu_mrows.c; NOWGREG and NOWGKEEP, gpu_wgmma.c; NOWS,
 * gpu_ws.c; NOPERSIST / NOTMASTORE / NOTMAQ, gpu_persist.c: also the kernel's parameters
 * and launch) or its compiler's (NOFMA: cuda.c, hip.c): one bit each in the key
 * (fewer than 32: BLKC_GPU_MINBLOCKS takes the bits from 32 up) */
#define JC_GPU_SWITCHES(X) X(BLKC_GPU_SMEM) X(BLKC_GPU_NORV) X(BLKC_GPU_NOMROW) \
    X(BLKC_GPU_NOFMA) X(BLKC_GPU_NOPERSIST) X(BLKC_GPU_NOTMASTORE) X(BLKC_GPU_NOEX2FTZ) \
    X(BLKC_GPU_NOLDSMXOR) X(BLKC_GPU_NOCPIMM) X(BLKC_GPU_NOWGREG) X(BLKC_GPU_NOVEC) \
    X(BLKC_GPU_NOPIPE) X(BLKC_GPU_NOSYNCELIM) X(BLKC_GPU_NOHOIST) X(BLKC_GPU_NOTMA) \
    X(BLKC_GPU_WGSYNC) X(BLKC_GPU_NOWS) X(BLKC_GPU_NOLOOPSPLIT) \
    X(BLKC_GPU_NOCPLIM32) X(BLKC_GPU_NOCPGUARD32) X(BLKC_GPU_NOWGKEEP) \
    X(BLKC_GPU_NOQKPIPE) X(BLKC_GPU_NOTMAQ) X(BLKC_GPU_NOFRAGPIPE) \
    X(BLKC_GPU_NOHIPSTAGE)

static int64_t gpu_switches(void)
{
    int64_t bits = 0, bit = 1;
#define X(name)                \
    if (gpu_switch(#name))     \
        bits |= bit;           \
    bit <<= 1;
    JC_GPU_SWITCHES(X)
#undef X
    const char *mb = getenv("BLKC_GPU_MINBLOCKS"); /* a number: its own bits */
    if (mb && *mb)
        bits |= (int64_t)(atoi(mb) & 0xff) << 32;
    return bits;
}

/* the CPU backend's BLKC_CPU_* switches that change its code (cpu.h) */
uint64_t jc_codegen_switches(void)
{
#ifndef BLKC_NO_CPU_BACKEND
    return cpu_switches();
#else
    return 0;
#endif
}

void jc_key_begin(JcSha *s, const JcSrc *src)
{
    pthread_once(&llvm_once, llvm_init);
    jc_sha_init(s);
    jc_sha_str(s, "blkc-jit-cache");
    jc_sha_i64(s, JC_FORMAT);
    jc_sha_str(s, BLKC_VERSION_STRING);
    jc_sha_str(s, LLVM_VERSION_STRING);
    jc_sha_str(s, host_id);
    jc_sha_i64(s, (int64_t)src->len);
    jc_sha_add(s, src->text, src->len);
    jc_sha_i64(s, src->ndefines);
    for (int i = 0; i < src->ndefines; i++)
        jc_sha_str(s, src->defines[i]);
    jc_sha_str(s, src->target ? src->target : "cpu");
    jc_sha_str(s, src->arch);
    jc_sha_i64(s, src->opt_level);
    jc_sha_i64(s, (int64_t)jc_codegen_switches());
    jc_sha_str(s, jc_build_id);
    if (src->target && strcmp(src->target, "cpu"))
        jc_sha_i64(s, gpu_switches());
}

#ifdef BLKC_NO_CPU_BACKEND
struct JcCode {
    int n;
    char **names;
    BkRangeFn *ranges;
};

void jc_code_free(JcCode *c)
{
    free(c);
}

int64_t jc_code_live(void)
{
    return 0;
}

int jc_code_load(const void *obj, size_t len, const IrModule *m,
                 JcCode **out, char *err, size_t errlen)
{
    (void)obj, (void)len, (void)m;
    *out = NULL;
    snprintf(err, errlen, "this build has no CPU backend (configured with "
             "-DBLKC_CPU_BACKEND=OFF): use --device=cuda:N or hip:N");
    return -1;
}
#else
struct JcCode {
    LLVMOrcLLJITRef jit;
    int n;
    char **names;
    BkRangeFn *ranges;
    char jit_error[CPU_JIT_ERROR_LEN]; /* ORC's first error (cpu_lljit) */
};

static int64_t code_live; /* atomic: JcCode loaded and not freed */

int64_t jc_code_live(void)
{
    return __atomic_load_n(&code_live, __ATOMIC_ACQUIRE);
}

static int llvm_err(LLVMErrorRef e, const char *what, char *err, size_t errlen)
{
    char *msg = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "jit cache: %s: %s", what, msg ? msg : "?");
    LLVMDisposeErrorMessage(msg);
    return -1;
}

void jc_code_free(JcCode *c)
{
    if (!c)
        return;
    __atomic_sub_fetch(&code_live, 1, __ATOMIC_ACQ_REL);
    if (c->jit)
        LLVMOrcDisposeLLJIT(c->jit);
    for (int i = 0; c->names && i < c->n; i++)
        free(c->names[i]);
    free(c->names);
    free(c->ranges);
    free(c);
}

int jc_code_load(const void *obj, size_t len, const IrModule *m,
                 JcCode **out, char *err, size_t errlen)
{
    pthread_once(&llvm_once, llvm_init);
    *out = NULL;
    JcCode *c = calloc(1, sizeof *c);
    if (!c)
        return snprintf(err, errlen, "out of memory"), -1;
    __atomic_add_fetch(&code_live, 1, __ATOMIC_ACQ_REL);
    c->n = m->nfuncs;
    c->names = calloc((size_t)c->n + 1, sizeof *c->names);
    c->ranges = calloc((size_t)c->n + 1, sizeof *c->ranges);
    if (!c->names || !c->ranges) {
        jc_code_free(c);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    if (cpu_lljit(NULL, c->jit_error, &c->jit, err, errlen)) {
        jc_code_free(c);
        return -1;
    }
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(c->jit);
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(
        obj, len, "blkc-cached-object");
    LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(c->jit, jd, mb);
    if (e) {
        jc_code_free(c);
        return llvm_err(e, "adding the object", err, errlen);
    }
    for (int i = 0; i < c->n; i++) {
        const IrFunc *f = m->funcs[i];
        c->names[i] = strdup(f->is_device ? "" : f->name);
        if (!c->names[i]) {
            jc_code_free(c);
            return snprintf(err, errlen, "out of memory"), -1;
        }
        if (f->is_device)
            continue;
        char *rn = bk_kernel_sym(f->name, "__range");
        if (!rn) {
            jc_code_free(c);
            return snprintf(err, errlen, "out of memory"), -1;
        }
        LLVMOrcExecutorAddress a = 0;
        e = LLVMOrcLLJITLookup(c->jit, &a, rn);
        free(rn);
        if (e) {
            cpu_lljit_error(e, c->jit_error, "jit cache: linking the object", err,
                            errlen);
            jc_code_free(c);
            return -1;
        }
        c->ranges[i] = (BkRangeFn)(uintptr_t)a;
    }
    *out = c;
    return 0;
}

#endif

BkRangeFn jc_code_range(const JcCode *c, const char *name)
{
    for (int i = 0; c && i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return c->ranges[i];
    return NULL;
}

BkRangeFn jc_code_range_of(const void *code, const char *name)
{
    return jc_code_range(code, name);
}

/* ------------------------------------------------------------ disk */

static pthread_mutex_t disk_lock = PTHREAD_MUTEX_INITIALIZER;
static bool disk_resolved;
static char disk_path[4096];
static int64_t st_hits, st_misses, st_corrupt, st_writes; /* atomic */
static int64_t st_compiles;                               /* atomic */

static bool mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return false;
    }
    return mkdir(path, 0755) == 0 || errno == EEXIST;
}

const char *jc_disk_dir(void)
{
    pthread_mutex_lock(&disk_lock);
    if (!disk_resolved) {
        disk_resolved = true;
        disk_path[0] = 0;
        const char *dis = getenv("BLKC_CACHE_DISABLE");
        const char *dir = getenv("BLKC_CACHE_DIR");
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (dis && *dis && strcmp(dis, "0") != 0)
            ;
        else if (dir && *dir)
            snprintf(disk_path, sizeof disk_path, "%s", dir);
        else if (xdg && *xdg)
            snprintf(disk_path, sizeof disk_path, "%s/blkc", xdg);
        else if (home && *home)
            snprintf(disk_path, sizeof disk_path, "%s/.cache/blkc", home);
        size_t n = strlen(disk_path);
        while (n > 1 && disk_path[n - 1] == '/')
            disk_path[--n] = 0;
        if (n && (n > sizeof disk_path - 100 || !mkdirs(disk_path) ||
                  access(disk_path, W_OK | X_OK) != 0))
            disk_path[0] = 0; /* unusable: memory only, silently */
    }
    const char *r = disk_path[0] ? disk_path : NULL;
    pthread_mutex_unlock(&disk_lock);
    return r;
}

void jc_disk_reset(void)
{
    pthread_mutex_lock(&disk_lock);
    disk_resolved = false;
    pthread_mutex_unlock(&disk_lock);
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void entry_path(char *buf, size_t n, const char *dir,
                       const uint8_t key[32])
{
    char hex[65];
    jc_hex(key, hex);
    snprintf(buf, n, "%s/%s.blkc", dir, hex);
}

int jc_disk_get(const uint8_t key[32], void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    const char *dir = jc_disk_dir();
    if (!dir)
        return -1;
    char path[4200];
    entry_path(path, sizeof path, dir, key);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        __atomic_add_fetch(&st_misses, 1, __ATOMIC_RELAXED);
        return -1;
    }
    struct stat sb;
    uint8_t hdr[JC_HDR];
    uint8_t *buf = NULL;
    bool ok = fstat(fd, &sb) == 0 && sb.st_size >= JC_HDR &&
              read(fd, hdr, JC_HDR) == JC_HDR &&
              memcmp(hdr, JC_MAGIC, 8) == 0 && get_u64(hdr + 8) == JC_FORMAT &&
              get_u64(hdr + 16) == (uint64_t)sb.st_size - JC_HDR &&
              memcmp(hdr + 32, key, 32) == 0;
    size_t n = ok ? (size_t)get_u64(hdr + 16) : 0;
    if (ok) {
        buf = malloc(n + 1);
        size_t got = 0;
        while (buf && got < n) {
            ssize_t r = read(fd, buf + got, n - got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        ok = buf && got == n && jc_fast_hash(0, buf, n) == get_u64(hdr + 24);
    }
    if (ok)
        futimens(fd, NULL); /* recently used */
    close(fd);
    if (!ok) {
        free(buf);
        if (sb.st_size >= 0)
            unlink(path); /* never trusted; recompiled by the caller */
        __atomic_add_fetch(&st_corrupt, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&st_misses, 1, __ATOMIC_RELAXED);
        return -1;
    }
    __atomic_add_fetch(&st_hits, 1, __ATOMIC_RELAXED);
    *data = buf;
    *len = n;
    return 0;
}

static int64_t max_bytes(void)
{
    const char *s = getenv("BLKC_CACHE_MAX_MB");
    if (s && *s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (*end == 0 && v >= 0)
            return (int64_t)v << 20;
    }
    return (int64_t)1024 << 20;
}

typedef struct { char name[80]; int64_t size; struct timespec mt; } Ent;

static bool is_entry(const char *n)
{
    size_t k = strlen(n);
    return k == 69 && strcmp(n + 64, ".blkc") == 0;
}

/* Entries of dir (malloc'd array). */
static Ent *scan(const char *dir, int *count, int64_t *bytes)
{
    *count = 0;
    *bytes = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    int cap = 0;
    Ent *v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_entry(de->d_name))
            continue;
        char p[4200];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &sb) != 0)
            continue;
        if (*count == cap) {
            cap = cap ? cap * 2 : 64;
            Ent *v2 = realloc(v, (size_t)cap * sizeof *v);
            if (!v2)
                break;
            v = v2;
        }
        if (snprintf(v[*count].name, sizeof v[*count].name, "%s", de->d_name) >=
            (int)sizeof v[*count].name)
            continue; /* not a cache entry name (those are short) */
        v[*count].size = sb.st_size;
        v[*count].mt = sb.st_mtim;
        *bytes += sb.st_size;
        (*count)++;
    }
    closedir(d);
    return v;
}

static int by_age(const void *a, const void *b)
{
    const Ent *x = a, *y = b;
    if (x->mt.tv_sec != y->mt.tv_sec)
        return x->mt.tv_sec < y->mt.tv_sec ? -1 : 1;
    return x->mt.tv_nsec < y->mt.tv_nsec ? -1 : x->mt.tv_nsec > y->mt.tv_nsec;
}

/* Remove the oldest entries until the directory is within 90% of the cap. */
static void evict(const char *dir)
{
    int64_t cap = max_bytes(), bytes;
    int n;
    Ent *v = scan(dir, &n, &bytes);
    if (v && bytes > cap) {
        qsort(v, (size_t)n, sizeof *v, by_age);
        for (int i = 0; i < n && bytes > cap / 10 * 9; i++) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", dir, v[i].name);
            if (unlink(p) == 0)
                bytes -= v[i].size;
        }
    }
    free(v);
}

void jc_disk_put(const uint8_t key[32], const void *data, size_t len)
{
    const char *dir = jc_disk_dir();
    if (!dir || (int64_t)len + JC_HDR > max_bytes())
        return;
    char path[4200], tmp[4300];
    entry_path(path, sizeof path, dir, key);
    static int64_t seq;
    snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-%lld-%p", dir, (long)getpid(),
             (long long)__atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED),
             (void *)&tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    uint8_t hdr[JC_HDR];
    memset(hdr, 0, sizeof hdr);
    memcpy(hdr, JC_MAGIC, 8);
    put_u64(hdr + 8, JC_FORMAT);
    put_u64(hdr + 16, len);
    put_u64(hdr + 24, jc_fast_hash(0, data, len));
    memcpy(hdr + 32, key, 32);
    bool ok = write(fd, hdr, JC_HDR) == JC_HDR;
    size_t done = 0;
    while (ok && done < len) {
        ssize_t w = write(fd, (const char *)data + done, len - done);
        if (w <= 0)
            ok = false;
        else
            done += (size_t)w;
    }
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return;
    }
    __atomic_add_fetch(&st_writes, 1, __ATOMIC_RELAXED);
    evict(dir);
}

void jc_disk_stats(JcStats *st)
{
    memset(st, 0, sizeof *st);
    st->max_bytes = max_bytes();
    st->hits = __atomic_load_n(&st_hits, __ATOMIC_RELAXED);
    st->misses = __atomic_load_n(&st_misses, __ATOMIC_RELAXED);
    st->corrupt = __atomic_load_n(&st_corrupt, __ATOMIC_RELAXED);
    st->writes = __atomic_load_n(&st_writes, __ATOMIC_RELAXED);
    st->compiles = __atomic_load_n(&st_compiles, __ATOMIC_RELAXED);
    const char *dir = jc_disk_dir();
    if (!dir)
        return;
    int n;
    free(scan(dir, &n, &st->bytes));
    st->entries = n;
}

int jc_disk_clear(void)
{
    const char *dir = jc_disk_dir();
    if (!dir)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        bool tmp = strncmp(de->d_name, ".tmp-", 5) == 0;
        if (!is_entry(de->d_name) && !tmp)
            continue;
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (unlink(p) == 0 && !tmp)
            removed++;
    }
    closedir(d);
    return removed;
}

/* ------------------------------------------------------------ emit */

static void emit_key(const BkBackend *be, const IrModule *m,
                     const char *stage, const JcSrc *src, const char *extra,
                     uint8_t key[32])
{
    JcSha s;
    jc_key_begin(&s, src);
    jc_sha_str(&s, "emit");
    jc_sha_str(&s, be->name);
    jc_sha_str(&s, stage);
    jc_sha_str(&s, extra);
    for (int i = 0; i < m->nfuncs; i++)
        for (int p = 0; p < m->funcs[i]->nparams; p++)
            jc_sha_i64(&s, m->funcs[i]->params[p].assume);
    jc_sha_done(&s, key);
}

int jc_emit(const BkBackend *be, const IrModule *m, const BkOptions *o,
            const char *stage, const JcSrc *src, const char *extra,
            DslBuf *out, bool *hit, char *err, size_t errlen)
{
    uint8_t key[32];
    emit_key(be, m, stage, src, extra, key);
    *hit = false;
    void *data;
    size_t len;
    if (jc_disk_get(key, &data, &len) == 0) {
        dsl_buf_put(out, data, len);
        free(data);
        *hit = true;
        return out->oom ? (snprintf(err, errlen, "out of memory"), -1) : 0;
    }
    size_t before = out->len;
    __atomic_add_fetch(&st_compiles, 1, __ATOMIC_RELAXED);
    if (iso_emit(be, m, o, stage, src, out, err, errlen) != 0)
        return -1;
    if (!out->oom)
        jc_disk_put(key, out->data + before, out->len - before);
    return 0;
}

int jc_cpu_code(const IrModule *m, const BkOptions *o, const JcSrc *src,
                const char *extra, JcCode **out, bool *hit, char *err,
                size_t errlen)
{
    DslBuf obj;
    memset(&obj, 0, sizeof obj);
    bool h = false;
    int rc = jc_emit(&bk_cpu_backend, m, o, "obj", src, extra, &obj, &h, err,
                     errlen);
    if (rc == 0)
        rc = jc_code_load(obj.data, obj.len, m, out, err, errlen);
    if (rc != 0 && h) { /* a valid-looking entry that does not link */
        dsl_buf_free(&obj);
        memset(&obj, 0, sizeof obj);
        h = false;
        __atomic_add_fetch(&st_compiles, 1, __ATOMIC_RELAXED);
        rc = iso_emit(&bk_cpu_backend, m, o, "obj", src, &obj, err, errlen);
        if (rc == 0)
            rc = jc_code_load(obj.data, obj.len, m, out, err, errlen);
        if (rc == 0) {
            uint8_t key[32];
            emit_key(&bk_cpu_backend, m, "obj", src, extra, key);
            jc_disk_put(key, obj.data, obj.len);
        }
    }
    dsl_buf_free(&obj);
    if (hit)
        *hit = h;
    return rc;
}
