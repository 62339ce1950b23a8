/* gpu_emu.c — the emulated GPU devices cuda-emu and hip-emu as a driver
 * table (RtGpuOps of gpu.h): "device" memory is host memory, a module
 * image is the CUDA C / HIP C text of the module (gpu_launch.c emits it
 * with one BLK_EMU_ENTRY line per kernel), compiled by the host C++
 * compiler ($CXX, else c++, g++ or clang++ on PATH, found at run time)
 * with runtime/emu/blk_emu.h (embedded in the library: rt_emu_header*)
 * and linked with the emulator's runtime object (emu_rt, built once per
 * header set) into a shared object cached under $BLKC_CACHE_DIR/emu (else $TMPDIR),
 * and loaded with dlopen (at the first launch of one of its kernels
 * unless the cache has it: EmuMod); with $BLKC_EMU_STATS=1 (blkc run --stats) by
 * clang++ with blk_emu_mem.h's load/store counting, when clang++ is on
 * PATH. A launch runs the grid's blocks one after
 * another, the threads of a block as fibers on the calling thread
 * (blk_emu.h), and keeps
 * the launch's counts (rt_gpu_emu_last_stats). */
#include "gpu.h"
#include "rt.h"
#include "emu/blk_emu_tmap.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern const char rt_emu_header[];      /* runtime/emu/blk_emu.h */
extern const char rt_emu_header_mma[];  /* runtime/emu/blk_emu_mma.h */
extern const char rt_emu_header_mem[];  /* runtime/emu/blk_emu_mem.h */
extern const char rt_emu_header_wgmma[]; /* runtime/emu/blk_emu_wgmma.h */
extern const char rt_emu_header_tma[];  /* runtime/emu/blk_emu_tma.h */
extern const char rt_emu_header_tmap[]; /* runtime/emu/blk_emu_tmap.h */
extern const char rt_emu_header_race[]; /* runtime/emu/blk_emu_race.h */

/* the headers blk_emu.h includes, written next to it */
static const struct { const char *name, *text; } emu_subheaders[] = {
    {"blk_emu_mma.h", rt_emu_header_mma},
    {"blk_emu_mem.h", rt_emu_header_mem},
    {"blk_emu_wgmma.h", rt_emu_header_wgmma},
    {"blk_emu_tma.h", rt_emu_header_tma},
    {"blk_emu_tmap.h", rt_emu_header_tmap},
    {"blk_emu_race.h", rt_emu_header_race},
};

typedef struct EmuDev {
    bool hip;
    bool memstats;             /* $BLKC_EMU_STATS=1 and clang++ found */
    bool sm90a;                /* cuda-emu as sm_90a ($BLKC_EMU_ARCH): wgmma */
    char cxx[512];
} EmuDev;

typedef int (*EmuEntry)(const long long grid[3], int threads, long long smem,
                        void **params, RtGpuEmuStats *st, char *err,
                        size_t errlen);

static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static RtGpuEmuStats last_stats;

void rt_gpu_emu_last_stats(RtGpuEmuStats *out)
{
    pthread_mutex_lock(&last_mu);
    *out = last_stats;
    pthread_mutex_unlock(&last_mu);
}

/* ------------------------------------------------------------ compiler */

static bool on_path(const char *name, char *out, size_t n)
{
    if (strchr(name, '/')) {
        snprintf(out, n, "%s", name);
        return access(out, X_OK) == 0;
    }
    const char *p = getenv("PATH");
    while (p && *p) {
        const char *c = strchr(p, ':');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len && snprintf(out, n, "%.*s/%s", (int)len, p, name) < (int)n &&
            access(out, X_OK) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

static bool find_cxx(char *out, size_t n)
{
    const char *env = getenv("CXX");
    if (env && *env)
        return on_path(env, out, n);
    static const char *const names[] = {"c++", "g++", "clang++", NULL};
    for (int i = 0; names[i]; i++)
        if (on_path(names[i], out, n))
            return true;
    return false;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(text, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* The cache directory (created). */
static int cache_dir(char *out, size_t n)
{
    const char *base = getenv("BLKC_CACHE_DIR");
    const char *tmp = getenv("TMPDIR");
    if (base && *base)
        snprintf(out, n, "%s/emu", base);
    else
        snprintf(out, n, "%s/blkc-emu-%u", tmp && *tmp ? tmp : "/tmp",
                 (unsigned)getuid());
    if (base && *base)
        mkdir(base, 0755);
    if (mkdir(out, 0755) && errno != EEXIST)
        return -1;
    return 0;
}

/* What run_cxx makes of src: a module's shared object, the precompiled
 * header, or the emulator's runtime object (blk_emu.h's BLK_EMU_SPLIT). */
enum { CXX_MODULE, CXX_PCH, CXX_RT };

/* Run the compiler: src -> out (as `what` says); its output into log. A
 * module includes `include` (blk_emu.h) first; the other headers are
 * found in dir. rt: the runtime object a module links (it and the
 * precompiled header are then built as BLK_EMU_SPLIT=1), or "". 0 ok. */
static int run_cxx(const EmuDev *d, const char *dir, const char *include, int what,
                   const char *rt, const char *src, const char *out, const char *log)
{
    char inc[600];
    snprintf(inc, sizeof inc, "-I%s", dir);
    const char *argv[40];
    int a = 0;
    argv[a++] = d->cxx;
    argv[a++] = "-std=c++17";
    argv[a++] = what == CXX_RT ? "-O2" : "-O1"; /* the runtime: once per header set */
    argv[a++] = "-fPIC";
    argv[a++] = "-pthread";
    argv[a++] = "-w";
    argv[a++] = "-fno-strict-aliasing";
    argv[a++] = "-DBLK_EMU=1";
    if (d->memstats) { /* loads/stores through blk_emu_mem.h's hooks */
        argv[a++] = "-DBLK_EMU_MEMSTATS=1";
        argv[a++] = "-fsanitize=thread";
        argv[a++] = "-mllvm";
        argv[a++] = "-tsan-instrument-atomics=false";
        argv[a++] = "-mllvm";
        argv[a++] = "-tsan-instrument-func-entry-exit=false";
    }
    if (d->hip) {
        argv[a++] = "-DBLK_EMU_HIP=1";
        argv[a++] = "-D__gfx90a__=1";
        argv[a++] = "-D__HIP_PLATFORM_AMD__=1";
    } else {
        argv[a++] = d->sm90a ? "-D__CUDA_ARCH__=900" : "-D__CUDA_ARCH__=800";
        if (d->sm90a) /* nvcc's macro for the arch-specific sm_90a features */
            argv[a++] = "-D__CUDA_ARCH_FEAT_SM90_ALL=1";
    }
    argv[a++] = inc;
    if (what == CXX_RT) {
        argv[a++] = "-DBLK_EMU_SPLIT=2";
        argv[a++] = "-c";
    } else if (rt[0]) {
        argv[a++] = "-DBLK_EMU_SPLIT=1";
    }
    if (what == CXX_PCH) {
        argv[a++] = "-x";
        argv[a++] = "c++-header";
    } else if (what == CXX_MODULE) {
        argv[a++] = "-shared";
        argv[a++] = "-include";
        argv[a++] = include;
    }
    argv[a++] = src;
    if (what == CXX_MODULE && rt[0])
        argv[a++] = rt;
    argv[a++] = "-o";
    argv[a++] = out;
    argv[a] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stderr) || !freopen(log, "a", stdout))
            _exit(127);
        execv(d->cxx, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Write path through a unique temporary: a reader never sees half. */
static int write_atomic(const char *path, const char *text)
{
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    if (write_file(tmp, text, strlen(text)) || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The emulator's runtime (blk_emu.h as BLK_EMU_SPLIT=2), compiled once
 * per header set into sub/rt/blk_emu_rt.o, which every module links: a
 * module then compiles only its kernels, not the emulator (a fifth of the
 * time a module took as one unit). rt is its path, or "" when it cannot be made (the
 * reason kept in sub/rt/nort; modules are then one unit). */
static void emu_rt(const EmuDev *d, const char *sub, char *rt, size_t n)
{
    char dir[640], src[700], tmp[720], log[740], bad[700];
    snprintf(dir, sizeof dir, "%s/rt", sub);
    snprintf(rt, n, "%s/blk_emu_rt.o", dir);
    snprintf(bad, sizeof bad, "%s/nort", dir);
    if (access(bad, F_OK) == 0) {
        rt[0] = 0;
        return;
    }
    if (access(rt, R_OK) == 0)
        return;
    mkdir(dir, 0755);
    snprintf(src, sizeof src, "%s/blk_emu_rt.cpp", dir);
    snprintf(tmp, sizeof tmp, "%s.%d", rt, (int)getpid());
    snprintf(log, sizeof log, "%s.log", tmp);
    if (write_atomic(src, "#include \"blk_emu.h\"\n") == 0 &&
        run_cxx(d, sub, NULL, CXX_RT, "", src, tmp, log) == 0 && rename(tmp, rt) == 0) {
        unlink(log);
        return;
    }
    unlink(tmp);
    rename(log, bad);
    rt[0] = 0;
}

/* The headers of this build for this compiler and dialect, shared by the
 * modules: sub holds them; sub/pch/blk_emu.h (a copy) sits next to its
 * precompiled form blk_emu.h.gch (GCC and clang use it for -include of
 * that path, flags matching), which halves a module's compile time again:
 * without it most of that is the header. *pch_inc is that path, or ""
 * when no precompiled header could be made (the plain header then); rt
 * as emu_rt says (the precompiled header is built to match it). 0 ok. */
static int emu_headers(const EmuDev *d, const char *sub, char *pch_inc, size_t n, char *rt,
                       size_t rtn)
{
    char p[700], gch[700], bad[700], pdir[640];
    snprintf(pdir, sizeof pdir, "%s/pch", sub);
    snprintf(pch_inc, n, "%s/blk_emu.h", pdir);
    snprintf(gch, sizeof gch, "%s/blk_emu.h.gch", pdir);
    snprintf(bad, sizeof bad, "%s/nopch", pdir);
    if (access(gch, R_OK) == 0) {
        emu_rt(d, sub, rt, rtn);
        return 0;
    }
    mkdir(sub, 0755);
    mkdir(pdir, 0755);
    snprintf(p, sizeof p, "%s/blk_emu.h", sub);
    int rc = write_atomic(p, rt_emu_header);
    for (size_t i = 0; i < sizeof emu_subheaders / sizeof emu_subheaders[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", sub, emu_subheaders[i].name);
        rc |= write_atomic(p, emu_subheaders[i].text);
    }
    rc |= write_atomic(pch_inc, rt_emu_header);
    if (rc)
        return -1;
    emu_rt(d, sub, rt, rtn);
    if (access(bad, F_OK) == 0) { /* an earlier try failed: no retry */
        pch_inc[0] = 0;
        return 0;
    }
    char tmp[720], log[740];
    snprintf(tmp, sizeof tmp, "%s.%d", gch, (int)getpid());
    snprintf(log, sizeof log, "%s.log", tmp);
    if (run_cxx(d, sub, NULL, CXX_PCH, rt, pch_inc, tmp, log) == 0 && rename(tmp, gch) == 0) {
        unlink(log);
        return 0;
    }
    unlink(tmp);
    rename(log, bad); /* why, for whoever looks */
    pch_inc[0] = 0;
    return 0;
}

/* ------------------------------------------------------------ driver */

static int e_open(bool hip, void **out, RtGpuDevInfo *info, char *err,
                  size_t errlen)
{
    EmuDev *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->hip = hip;
    const char *ms = getenv("BLKC_EMU_STATS");
    if (ms && !strcmp(ms, "1")) { /* --stats: clang++ counts loads/stores */
        /* blk_emu.h needs _Float16 on x86: clang 15 or later (setup.sh
         * installs clang-15); a bare clang++ may be an older one */
        static const char *const clangs[] = {
            "clang++-20", "clang++-19", "clang++-18", "clang++-17",
            "clang++-16", "clang++-15", "clang++", NULL};
        for (int i = 0; clangs[i] && !d->memstats; i++)
            d->memstats = on_path(clangs[i], d->cxx, sizeof d->cxx);
    }
    if (!d->memstats && !find_cxx(d->cxx, sizeof d->cxx)) {
        free(d);
        snprintf(err, errlen, "%s-emu needs a C++ compiler: none found (set $CXX "
                 "or put c++, g++ or clang++ on PATH)", hip ? "hip" : "cuda");
        return -2;
    }
    /* $BLKC_EMU_ARCH: the arch cuda-emu compiles for and emulates */
    const char *ea = getenv("BLKC_EMU_ARCH");
    if (!hip && ea && *ea && strcmp(ea, "sm_80") && strcmp(ea, "sm_90a")) {
        free(d);
        snprintf(err, errlen, "BLKC_EMU_ARCH=%s: cuda-emu emulates sm_80 (the default) "
                 "or sm_90a", ea);
        return -1;
    }
    d->sm90a = !hip && ea && !strcmp(ea, "sm_90a");
    snprintf(info->arch, sizeof info->arch, "%s",
             hip ? "gfx90a" : d->sm90a ? "sm_90a" : "sm_80");
    snprintf(info->name, sizeof info->name, "%s (emulated on the CPU)",
             hip ? "hip-emu" : "cuda-emu");
    info->max_smem = hip ? 65536 : d->sm90a ? 232448 : 166912;
    info->ticks_per_ms = 1000000; /* blk_emu.h's clock: ns */
    /* the SMs a persistent kernel's launch fills (gpu_launch.c): few, so
     * that each block runs several tiles */
    const char *sms = getenv("BLKC_EMU_SMS");
    info->sms = sms && atoi(sms) > 0 ? atoi(sms) : 4;
    *out = d;
    return 0;
}

static int e_open_cuda(int id, void **out, RtGpuDevInfo *info, char *err,
                       size_t errlen)
{
    (void)id;
    return e_open(false, out, info, err, errlen);
}

static int e_open_hip(int id, void **out, RtGpuDevInfo *info, char *err,
                      size_t errlen)
{
    (void)id;
    return e_open(true, out, info, err, errlen);
}

static void e_close(void *dev) { free(dev); }

static int e_alloc(void *dev, size_t bytes, uint64_t *dptr, char *err,
                   size_t errlen)
{
    (void)dev;
    void *p = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!p) {
        snprintf(err, errlen, "out of memory (%zu bytes)", bytes);
        return -1;
    }
    memset(p, 0, bytes);
    *dptr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void e_free(void *dev, uint64_t dptr)
{
    (void)dev;
    free((void *)(uintptr_t)dptr);
}

static int e_h2d(void *dev, uint64_t dst, const void *src, size_t n, char *err,
                 size_t errlen)
{
    (void)dev, (void)err, (void)errlen;
    if (n)
        memcpy((void *)(uintptr_t)dst, src, n);
    return 0;
}

static int e_d2h(void *dev, void *dst, uint64_t src, size_t n, char *err,
                 size_t errlen)
{
    (void)dev, (void)err, (void)errlen;
    if (n)
        memcpy(dst, (const void *)(uintptr_t)src, n);
    return 0;
}

static int e_zero(void *dev, uint64_t dst, size_t n, void *stream, char *err,
                  size_t errlen)
{
    (void)dev, (void)stream, (void)err, (void)errlen;
    if (n)
        memset((void *)(uintptr_t)dst, 0, n);
    return 0;
}

/* A module. Its shared object is dlopened at load when the cache has it;
 * otherwise the image is kept and compiled at the first launch of one of
 * its kernels (lazy loading, as the CUDA driver's CUDA_MODULE_LOADING=LAZY
 * default): a module whose kernels never run is never compiled (the
 * generic kernel of a launch that runs a specialized variant,
 * gpu_launch.c). A failed compile is not retried: every launch of the
 * module gets its message. */
typedef struct EmuFn EmuFn;
typedef struct EmuMod {
    EmuDev d;                  /* the device's compiler and flags */
    pthread_mutex_t mu;        /* held while compiling */
    void *lib;                 /* the dlopen handle, once compiled */
    char *image;               /* the source until then */
    size_t n;
    char so[600], sub[560];    /* the cached object, its headers' folder */
    char *fail;                /* a compile's error, kept */
    EmuFn *fns;                /* the kernels' handles, freed with it */
} EmuMod;

/* A kernel's handle: entry (BLK_EMU_ENTRY of blk_emu.h) once its module
 * is compiled, published with a release store. */
struct EmuFn {
    EmuMod *m;
    EmuFn *next;
    void *entry;
    char sym[320];             /* blk_emu_entry_SYM, SYM = blk_k_NAME */
};

static void mod_free(EmuMod *m)
{
    if (!m)
        return;
    if (m->lib)
        dlclose(m->lib);
    for (EmuFn *f = m->fns, *nx; f; f = nx) {
        nx = f->next;
        free(f);
    }
    pthread_mutex_destroy(&m->mu);
    free(m->image);
    free(m->fail);
    free(m);
}

/* Compile m's image into m->so (its headers, with the precompiled one,
 * under m->sub) and dlopen it; m->mu held. 0 ok. */
static int mod_compile(EmuMod *m, char *err, size_t errlen)
{
    const EmuDev *d = &m->d;
    char src[700], tmp[700], log[720], hp[600], pch_inc[700], rt[700];
    const char *dir = m->so; /* the object's folder: so up to its last '/' */
    int dlen = (int)(strrchr(dir, '/') - dir);
    int rc = emu_headers(d, m->sub, pch_inc, sizeof pch_inc, rt, sizeof rt);
    snprintf(hp, sizeof hp, "%s/blk_emu.h", m->sub);
    snprintf(src, sizeof src, "%.*s.%d.cpp", (int)(strlen(m->so) - 3), m->so, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.%d.so", m->so, (int)getpid());
    snprintf(log, sizeof log, "%s.log", src);
    rc |= write_file(src, m->image, m->n);
    if (rc) {
        snprintf(err, errlen, "emu: cannot write into %.*s", dlen, dir);
        return -1;
    }
    /* with the precompiled header; once more with the plain one if that
     * fails, and then as one unit without the runtime object (a
     * precompiled header the compiler rejects, or a runtime object the
     * linker does, must not fail a module: it is set aside for good) */
    bool ok = pch_inc[0] && run_cxx(d, m->sub, pch_inc, CXX_MODULE, rt, src, tmp, log) == 0;
    char bad[720];
    if (!ok && run_cxx(d, m->sub, hp, CXX_MODULE, rt, src, tmp, log) == 0) {
        ok = true;
        if (pch_inc[0]) {
            snprintf(bad, sizeof bad, "%s/pch/nopch", m->sub);
            write_file(bad, "rejected\n", 9);
            snprintf(bad, sizeof bad, "%s.gch", pch_inc);
            unlink(bad);
        }
    }
    if (!ok && rt[0] && run_cxx(d, m->sub, hp, CXX_MODULE, "", src, tmp, log) == 0) {
        ok = true;
        snprintf(bad, sizeof bad, "%s/rt/nort", m->sub);
        write_file(bad, "rejected\n", 9);
        unlink(rt);
    }
    if (!ok) {
        char text[1500] = "";
        FILE *f = fopen(log, "rb");
        if (f) {
            size_t k = fread(text, 1, sizeof text - 1, f);
            text[k] = 0;
            fclose(f);
        }
        for (char *q = text; *q; q++)
            if (*q == '\n' && q[1])
                *q = ' ';
        snprintf(err, errlen, "emu: %s failed on the generated %s C: %s", d->cxx,
                 d->hip ? "HIP" : "CUDA", text);
        unlink(tmp);
        return -1;
    }
    unlink(src);
    unlink(log);
    if (rename(tmp, m->so)) {
        snprintf(err, errlen, "emu: cannot rename %s", tmp);
        unlink(tmp);
        return -1;
    }
    m->lib = dlopen(m->so, RTLD_NOW | RTLD_LOCAL);
    if (!m->lib) {
        snprintf(err, errlen, "emu: dlopen %s: %s", m->so, dlerror());
        return -1;
    }
    free(m->image);
    m->image = NULL;
    return 0;
}

/* image: the module's C text; its object dlopened if the cache has it,
 * else kept for mod_compile */
static int e_load(void *dev, const void *image, size_t n, void **mod,
                  char *err, size_t errlen)
{
    EmuDev *d = dev;
    char dir[512];
    if (cache_dir(dir, sizeof dir)) {
        snprintf(err, errlen, "emu: cannot create the cache directory %s", dir);
        return -1;
    }
    /* the headers' key: dialect, compiler (its size and time: an upgrade
     * invalidates precompiled headers), header texts, counting */
    uint64_t hh = 1469598103934665603ull;
    hh = fnv(hh, d->hip ? "hip" : "cuda", d->hip ? 3 : 4);
    hh = fnv(hh, d->cxx, strlen(d->cxx));
    struct stat cst;
    if (stat(d->cxx, &cst) == 0) {
        hh = fnv(hh, (const char *)&cst.st_size, sizeof cst.st_size);
        hh = fnv(hh, (const char *)&cst.st_mtime, sizeof cst.st_mtime);
    }
    hh = fnv(hh, rt_emu_header, strlen(rt_emu_header));
    for (size_t i = 0; i < sizeof emu_subheaders / sizeof emu_subheaders[0]; i++)
        hh = fnv(hh, emu_subheaders[i].text, strlen(emu_subheaders[i].text));
    hh = fnv(hh, d->sm90a ? "sm_90a" : "", d->sm90a ? 6 : 0);
    hh = fnv(hh, d->memstats ? "memstats" : "", d->memstats ? 8 : 0);
    const uint64_t h = fnv(hh, image, n);
    EmuMod *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->d = *d;
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->so, sizeof m->so, "%s/k%016llx.so", dir, (unsigned long long)h);
    snprintf(m->sub, sizeof m->sub, "%s/h%016llx", dir, (unsigned long long)hh);
    if (access(m->so, R_OK) == 0)
        m->lib = dlopen(m->so, RTLD_NOW | RTLD_LOCAL);
    if (!m->lib) { /* compiled at its first launch */
        m->image = malloc(n + 1);
        if (!m->image) {
            mod_free(m);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(m->image, image, n);
        m->image[n] = 0;
        m->n = n;
    }
    *mod = m;
    return 0;
}

static void e_unload(void *dev, void *mod)
{
    (void)dev;
    mod_free(mod);
}

/* The kernel's handle: its entry point now if the module is loaded, else
 * once the first launch compiles it; a kernel the module does not define
 * fails here either way (an image's kernels are its BLK_EMU_ENTRY lines,
 * gpu_launch.c). */
static int e_function(void *dev, void *mod, const char *name, long long smem,
                      void **fn, char *err, size_t errlen)
{
    (void)dev, (void)smem;
    EmuMod *m = mod;
    EmuFn *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(f->sym, sizeof f->sym, "blk_emu_entry_%s", name);
    char line[320];
    snprintf(line, sizeof line, "\nBLK_EMU_ENTRY(%s)\n", name);
    if (m->lib ? !(f->entry = dlsym(m->lib, f->sym)) : !strstr(m->image, line)) {
        free(f);
        snprintf(err, errlen, "emu: kernel %s not found in the module", name);
        return -1;
    }
    f->m = m;
    f->next = m->fns;
    m->fns = f;
    *fn = f;
    return 0;
}

/* f's entry point, compiling its module on the first launch. */
static EmuEntry fn_entry(EmuFn *f, char *err, size_t errlen)
{
    void *p = __atomic_load_n(&f->entry, __ATOMIC_ACQUIRE);
    EmuMod *m = f->m;
    if (!p) {
        pthread_mutex_lock(&m->mu);
        char e[2000] = "";
        if (!m->lib && !m->fail && mod_compile(m, e, sizeof e))
            m->fail = strdup(e[0] ? e : "emu: compiling the module failed");
        if (m->fail)
            snprintf(err, errlen, "%s", m->fail);
        else if (!(p = dlsym(m->lib, f->sym)))
            snprintf(err, errlen, "emu: %s not found in the module", f->sym);
        else
            __atomic_store_n(&f->entry, p, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&m->mu);
    }
    EmuEntry entry;
    *(void **)&entry = p;
    return entry;
}

static int e_launch(void *dev, void *fn, const int64_t grid[3], int threads,
                    long long smem, void *stream, void **params, void *buf,
                    size_t size, char *err, size_t errlen)
{
    (void)dev, (void)stream, (void)buf, (void)size;
    EmuEntry entry = fn_entry(fn, err, errlen);
    if (!entry)
        return -1;
    long long g[3] = {grid[0], grid[1], grid[2]};
    RtGpuEmuStats st;
    memset(&st, 0, sizeof st);
    if (entry(g, threads, smem, params, &st, err, errlen))
        return -1;
    pthread_mutex_lock(&last_mu);
    last_stats = st;
    pthread_mutex_unlock(&last_mu);
    return 0;
}

static int e_sync(void *dev, void *stream, char *err, size_t errlen)
{
    (void)dev, (void)stream, (void)err, (void)errlen;
    return 0;
}

static int e_event_new(void *dev, void **ev, char *err, size_t errlen)
{
    (void)dev;
    *ev = calloc(1, sizeof(double));
    if (!*ev) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static void e_event_free(void *dev, void *ev)
{
    (void)dev;
    free(ev);
}

static int e_event_record(void *dev, void *ev, void *stream, char *err,
                          size_t errlen)
{
    (void)dev, (void)stream, (void)err, (void)errlen;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)ev = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    return 0;
}

static int e_event_ms(void *dev, void *a, void *b, float *ms, char *err,
                      size_t errlen)
{
    (void)dev, (void)err, (void)errlen;
    *ms = (float)(*(double *)b - *(double *)a);
    return 0;
}

/* the emulated device's tensor maps (blk_emu_tmap.h, read by blk_emu_tma.h) */
static int e_tmap_encode(void *dev, void *map, int dtype, int rank, uint64_t addr,
                         const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
                         int swizzle, char *err, size_t errlen)
{
    (void)dev;
    unsigned long long d[5] = {0}, s[4] = {0};
    unsigned b[5] = {0}, es[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < rank && i < 5; i++) {
        d[i] = dims[i];
        b[i] = box[i];
        if (i > 0)
            s[i - 1] = strides[i - 1];
    }
    int r = blk_emu_tmap_encode(map, dtype, (unsigned)rank, (void *)(uintptr_t)addr, d, s, b, es,
                                0, swizzle, 0, 0);
    if (r) {
        int n = snprintf(err, errlen, "emu: cuTensorMapEncodeTiled failed (%d): rank %d, dims", r,
                         rank);
        for (int i = 0; i < rank && i < 5 && n > 0 && (size_t)n < errlen; i++)
            n += snprintf(err + n, errlen - (size_t)n, "%s%llu", i ? " x " : " ", d[i]);
        for (int i = 0; i + 1 < rank && i < 4 && n > 0 && (size_t)n < errlen; i++)
            n += snprintf(err + n, errlen - (size_t)n, "%s%llu", i ? ", " : ", strides (bytes) ",
                          s[i]);
        for (int i = 0; i < rank && i < 5 && n > 0 && (size_t)n < errlen; i++)
            n += snprintf(err + n, errlen - (size_t)n, "%s%u", i ? " x " : ", box ", b[i]);
        if (n > 0 && (size_t)n < errlen)
            snprintf(err + n, errlen - (size_t)n, ", swizzle %d", swizzle);
        return -1;
    }
    return 0;
}

static const RtGpuOps emu_cuda_ops = {
    "cuda-emu", kDLCPU, e_open_cuda, e_close, e_alloc, e_free, e_h2d, e_d2h,
    e_zero, e_load, e_unload, e_function, e_launch, e_sync, e_event_new,
    e_event_free, e_event_record, e_event_ms,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, /* no ranks */
    e_tmap_encode, NULL, NULL, /* no asynchronous host copies */
};
static const RtGpuOps emu_hip_ops = {
    "hip-emu", kDLCPU, e_open_hip, e_close, e_alloc, e_free, e_h2d, e_d2h,
    e_zero, e_load, e_unload, e_function, e_launch, e_sync, e_event_new,
    e_event_free, e_event_record, e_event_ms,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, /* no ranks */
    NULL, /* no tensor maps */
    NULL, NULL, /* no asynchronous host copies */
};

const RtGpuOps *rt_gpu_emu_ops(blkc_target t)
{
    return t == BLKC_TARGET_HIP ? &emu_hip_ops : &emu_cuda_ops;
}
