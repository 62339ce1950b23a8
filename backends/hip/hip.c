/* hip.c — the HIP backend: the HIP C dialect of the GPU emitter
 * (backends/gpu/gpu_emit.c; wavefront 64, MFMA for dot on gfx90a/gfx94x)
 * and compilation to an AMD code object with hiprtc (dlopen: libhiprtc.so,
 * or libamdhip64.so which carries hiprtc in ROCm 5), falling back to
 * `hipcc --genco --offload-arch=ARCH` when hiprtc is absent or fails to
 * start (also for hand-written source: bk_hip_compile). The build links
 * no HIP library.
 *
 * Stages: "gpu-ir" (Core IR with the GPU layouts), "hip" (HIP C text), "hsaco" (the default: a code object).
 * --arch defaults to gfx90a. */
#include "../gpu/gpu_emit.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ dialect */

static const char *const hip_prelude[] = {
    "#if !defined(__HIPCC_RTC__) && !defined(BLK_EMU) /* hiprtc pre-includes these; hip-emu: blk_emu.h */\n",
    "#include <hip/hip_runtime.h>\n",
    "#include <hip/hip_fp16.h>\n",
    "#endif\n",
    "\n",
    "typedef __half blk_f16;\n",
    "typedef unsigned short blk_bf16; /* bits; converted by hand */\n",
    "__device__ inline float blk_f16_to_f32(blk_f16 x) { return __half2float(x); }\n",
    "__device__ inline blk_f16 blk_f32_to_f16(float x) { return __float2half(x); }\n",
    "__device__ inline float blk_bf16_to_f32(blk_bf16 x) { return __uint_as_float((unsigned)x << 16); }\n",
    "__device__ inline blk_bf16 blk_f32_to_bf16(float x)\n",
    "{\n",
    "    unsigned u = __float_as_uint(x);\n",
    "    if (x != x) return (blk_bf16)((u >> 16) | 0x40);\n",
    "    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */\n",
    "    return (blk_bf16)(u >> 16);\n",
    "}\n",
    "\n",
    "#define BLK_SHFL_XOR(v, m) __shfl_xor((v), (m))\n",
    "#define BLK_SHFL_UP(v, d) __shfl_up((v), (d))\n",
    "#define BLK_SHFL(v, l) __shfl((v), (l))\n",
    "#ifndef BLK_EMU\n",
    "#define BLK_DYNAMIC_SMEM(name) extern __shared__ __attribute__((aligned(16))) unsigned char name[]\n",
    "#endif\n",
    "#define BLK_MEMCPY __builtin_memcpy\n",
    "\n",
    "/* signals (rank builtins): system-scope acquire/release on u64 cells;\n",
    " * BLK_TICKS is clock64() (hipDeviceAttributeClockInstructionRate kHz),\n",
    " * the unit of BlkRankCtx.timeout */\n",
    "#define BLK_TICKS() ((long long)clock64())\n",
    "#define BLK_TICKS_DEFAULT 500000000LL /* 5 s at 100 MHz */\n",
    "#ifndef BLK_EMU\n",
    "__device__ inline unsigned long long blk_sig_load(const unsigned long long *p)\n",
    "{\n",
    "    return __atomic_load_n(p, __ATOMIC_ACQUIRE);\n",
    "}\n",
    "__device__ inline void blk_sig_set(unsigned long long *p, unsigned long long v)\n",
    "{\n",
    "    __threadfence_system();\n",
    "    __atomic_store_n(p, v, __ATOMIC_RELEASE);\n",
    "}\n",
    "__device__ inline void blk_sig_add(unsigned long long *p, unsigned long long v)\n",
    "{\n",
    "    __threadfence_system();\n",
    "    __atomic_fetch_add(p, v, __ATOMIC_RELEASE);\n",
    "}\n",
    "__device__ inline void blk_pause(void) { __builtin_amdgcn_s_sleep(1); }\n",
    "#else\n",
    "__device__ inline void blk_pause(void) { __nanosleep(100); }\n",
    "#endif\n",
    "\n",
    "#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)\n",
    "#define BLK_HAVE_MFMA 1 /* v_mfma_f32_16x16x16f16 / bf16_1k / 16x16x4f32 / 32x32x8, v_mfma_i32_16x16x16i8 */\n",
    "#else\n",
    "#define BLK_HAVE_MFMA 0\n",
    "#endif\n",
    "#ifndef BLK_EMU /* hip-emu: blk_emu.h has these and the wrappers */\n",
    "typedef _Float16 blk_half4 __attribute__((ext_vector_type(4)));\n",
    "typedef short blk_short4 __attribute__((ext_vector_type(4)));\n",
    "typedef float blk_float4 __attribute__((ext_vector_type(4)));\n",
    "typedef float blk_float16 __attribute__((ext_vector_type(16)));\n",
    "typedef int blk_int4 __attribute__((ext_vector_type(4)));\n",
    "#endif\n",
    "#if BLK_HAVE_MFMA && !defined(BLK_EMU)\n",
    "/* matrix cores (AMD CDNA2 ISA, v_mfma_*): c += a * b over one wavefront;\n",
    " * every MFMA the emitter uses goes through one of these wrappers */\n",
    "__device__ inline blk_float4 blk_mfma_16x16x16_f16(blk_half4 a, blk_half4 b, blk_float4 c)\n",
    "{ return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0); }\n",
    "__device__ inline blk_float4 blk_mfma_16x16x16_bf16(blk_short4 a, blk_short4 b, blk_float4 c)\n",
    "{ return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0); }\n",
    "__device__ inline blk_float4 blk_mfma_16x16x4_f32(float a, float b, blk_float4 c)\n",
    "{ return __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, c, 0, 0, 0); }\n",
    "__device__ inline blk_int4 blk_mfma_16x16x16_i8(int a, int b, blk_int4 c)\n",
    "{ return __builtin_amdgcn_mfma_i32_16x16x16i8(a, b, c, 0, 0, 0); }\n",
    "__device__ inline blk_float16 blk_mfma_32x32x8_f16(blk_half4 a, blk_half4 b, blk_float16 c)\n",
    "{ return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0); }\n",
    "__device__ inline blk_float16 blk_mfma_32x32x8_bf16(blk_short4 a, blk_short4 b, blk_float16 c)\n",
    "{ return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0); }\n",
    "#endif\n",
    NULL,
};

const BkGpuDialect bk_gpu_hip_dialect = {
    BK_GPU_HIP, "HIP C", hip_prelude, 64,
};

/* ------------------------------------------------------------ hiprtc */

typedef struct _hiprtcProgram *hiprtcProgram;
typedef int hiprtcResult;

static struct {
    void *lib;
    hiprtcResult (*create)(hiprtcProgram *, const char *, const char *, int,
                           const char **, const char **);
    hiprtcResult (*compile)(hiprtcProgram, int, const char **);
    hiprtcResult (*log_size)(hiprtcProgram, size_t *);
    hiprtcResult (*log)(hiprtcProgram, char *);
    hiprtcResult (*code_size)(hiprtcProgram, size_t *);
    hiprtcResult (*code)(hiprtcProgram, char *);
    hiprtcResult (*destroy)(hiprtcProgram *);
} hr;
static pthread_once_t hr_once = PTHREAD_ONCE_INIT;

static void hr_load(void)
{
    static const char *const names[] = {
        "libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5",
        "/opt/rocm/lib/libhiprtc.so", "libamdhip64.so", "libamdhip64.so.6",
        "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so", NULL};
    for (int i = 0; names[i] && !hr.lib; i++) {
        hr.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (hr.lib && !dlsym(hr.lib, "hiprtcCreateProgram")) {
            dlclose(hr.lib);
            hr.lib = NULL;
        }
    }
    if (!hr.lib)
        return;
#define SYM(field, name)                                                  \
    do {                                                                  \
        *(void **)&hr.field = dlsym(hr.lib, name);                        \
        if (!hr.field) {                                                  \
            dlclose(hr.lib);                                              \
            hr.lib = NULL;                                                \
            return;                                                       \
        }                                                                 \
    } while (0)
    SYM(create, "hiprtcCreateProgram");
    SYM(compile, "hiprtcCompileProgram");
    SYM(log_size, "hiprtcGetProgramLogSize");
    SYM(log, "hiprtcGetProgramLog");
    SYM(code_size, "hiprtcGetCodeSize");
    SYM(code, "hiprtcGetCode");
    SYM(destroy, "hiprtcDestroyProgram");
#undef SYM
}

/* 0 ok, -1 compile error (err set), 1 hiprtc unusable (try hipcc) */
static int hiprtc_compile(const char *src, const char *arch, DslBuf *out,
                          char *err, size_t errlen)
{
    pthread_once(&hr_once, hr_load);
    if (!hr.lib)
        return 1;
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--offload-arch=%s", arch);
    const char *opts[] = {archopt, "-std=c++17", "-O3", "-ffp-contract=off"};
    hiprtcProgram prog;
    if (hr.create(&prog, src, "blkc.hip", 0, NULL, NULL))
        return 1;
    if (hr.compile(prog, bk_gpu_nofma() ? 4 : 3, opts)) {
        size_t n = 0;
        char *log = NULL;
        if (!hr.log_size(prog, &n) && n && (log = malloc(n + 1))) {
            hr.log(prog, log);
            log[n] = 0;
        }
        snprintf(err, errlen, "hiprtc (%s): %s", arch, log ? log : "compilation failed");
        free(log);
        hr.destroy(&prog);
        return -1;
    }
    size_t n = 0;
    char *bin = NULL;
    if (hr.code_size(prog, &n) || !n || !(bin = malloc(n)) || hr.code(prog, bin)) {
        free(bin);
        hr.destroy(&prog);
        snprintf(err, errlen, "hiprtc: could not read the code object");
        return -1;
    }
    dsl_buf_put(out, bin, n);
    free(bin);
    hr.destroy(&prog);
    return 0;
}

/* ------------------------------------------------------------ hipcc */

static bool find_hipcc(char *path, size_t n)
{
    const char *dirs[] = {getenv("HIP_PATH"), getenv("ROCM_PATH"), "/opt/rocm"};
    for (int i = 0; i < 3; i++) {
        if (!dirs[i])
            continue;
        snprintf(path, n, "%s/bin/hipcc", dirs[i]);
        if (access(path, X_OK) == 0)
            return true;
    }
    const char *p = getenv("PATH");
    while (p && *p) {
        const char *c = strchr(p, ':');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        snprintf(path, n, "%.*s/hipcc", (int)len, p);
        if (len && access(path, X_OK) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

static int hipcc_compile(const char *src, const char *arch, DslBuf *out,
                         char *err, size_t errlen)
{
    char hipcc[1024];
    if (!find_hipcc(hipcc, sizeof hipcc)) {
        snprintf(err, errlen, "HIP not found (libhiprtc.so / hipcc): install "
                 "ROCm (hipcc, libamdhip64-dev, rocm-device-libs)");
        return -1;
    }
    char dir[] = "/tmp/blkc_hip_XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(err, errlen, "hip: cannot create a temporary directory");
        return -1;
    }
    char in[64], obj[64], logp[64], archopt[80];
    snprintf(in, sizeof in, "%s/k.hip", dir);
    snprintf(obj, sizeof obj, "%s/k.hsaco", dir);
    snprintf(logp, sizeof logp, "%s/log", dir);
    snprintf(archopt, sizeof archopt, "--offload-arch=%s", arch);
    int rc = -1;
    FILE *f = fopen(in, "wb");
    if (!f || fputs(src, f) < 0) {
        snprintf(err, errlen, "hip: cannot write %s", in);
        if (f)
            fclose(f);
        goto done;
    }
    fclose(f);
    fflush(NULL); /* the child must not flush our buffers again */
    pid_t pid = fork();
    if (pid == 0) {
        FILE *lf = freopen(logp, "w", stderr);
        (void)lf;
        if (!freopen(logp, "a", stdout))
            _exit(127);
        execl(hipcc, hipcc, "--genco", archopt, "-O3", "-std=c++17",
              bk_gpu_nofma() ? "-ffp-contract=off" : "-O3", in, "-o", obj,
              (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0) {
        size_t n = 0;
        FILE *lf = fopen(logp, "rb");
        char log[1500] = "";
        if (lf) {
            n = fread(log, 1, sizeof log - 1, lf);
            log[n] = 0;
            fclose(lf);
        }
        snprintf(err, errlen, "hipcc --genco (%s) failed: %s", arch, log);
        goto done;
    }
    f = fopen(obj, "rb");
    if (!f) {
        snprintf(err, errlen, "hipcc: no code object written");
        goto done;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        dsl_buf_put(out, buf, n);
    fclose(f);
    rc = out->oom ? -1 : 0;
    if (rc)
        snprintf(err, errlen, "out of memory");
done:
    unlink(in);
    unlink(obj);
    unlink(logp);
    rmdir(dir);
    return rc;
}

/* One hiprtc compile at a time: ROCm 5.2's hiprtc shares unguarded string
 * state between calls (TSan saw two GPU ranks' compiles race inside it). */
static pthread_mutex_t hiprtc_mu = PTHREAD_MUTEX_INITIALIZER;

int bk_hip_compile(const char *src, const char *arch, DslBuf *out, char *err,
                   size_t errlen)
{
    int rc = 1;
    const char *force = getenv("BLKC_HIP_USE_HIPCC");
    if (!(force && *force == '1')) {
        pthread_mutex_lock(&hiprtc_mu);
        rc = hiprtc_compile(src, arch, out, err, errlen);
        pthread_mutex_unlock(&hiprtc_mu);
    }
    if (rc == 1) { /* hiprtc absent or unusable: the offline compiler */
        out->len = 0;
        rc = hipcc_compile(src, arch, out, err, errlen);
    }
    return rc;
}

/* ------------------------------------------------------------ backend */

static const char *const hip_stages[] = {"gpu-ir", "hip", "hsaco", NULL};

static bool hip_stage_is_text(const char *stage)
{
    return !strcmp(stage, "hip") || !strcmp(stage, "gpu-ir");
}

static int hip_emit(const IrModule *m, const BkOptions *o, const char *stage,
                    DslBuf *out, char *err, size_t errlen)
{
    const char *arch = o && o->arch ? o->arch : "gfx90a";
    if (!stage)
        stage = "hsaco";
    if (strcmp(stage, "hip") && strcmp(stage, "hsaco") && strcmp(stage, "gpu-ir")) {
        snprintf(err, errlen, "hip: unknown stage '%s' (gpu-ir, hip, hsaco)", stage);
        return -1;
    }
    if (!strcmp(stage, "gpu-ir"))
        return bk_gpu_emit_gpu_ir(m, &bk_gpu_hip_dialect, arch, out, err, errlen);
    if (!strcmp(stage, "hip"))
        return bk_gpu_emit_module(m, &bk_gpu_hip_dialect, arch, out, err, errlen);
    if (strncmp(arch, "gfx", 3) || strlen(arch) > 24 || strpbrk(arch, " '\"\\;")) {
        snprintf(err, errlen, "hip: unknown --arch '%s' (use gfx90a, gfx942, ...)",
                 arch);
        return -1;
    }
    for (int i = 0; i < m->nfuncs; i++) {
        BkGpuKernelInfo ki;
        if (m->funcs[i]->is_device)
            continue;
        if (bk_gpu_kernel_info(m->funcs[i], &bk_gpu_hip_dialect, arch, &ki, err,
                               errlen) < 0)
            return -1;
        if (ki.smem_bytes > 65536) {
            snprintf(err, errlen, "kernel %s needs %lld bytes of shared memory "
                     "(LDS); %s allows 65536 per block (use smaller tiles)",
                     m->funcs[i]->name, ki.smem_bytes, arch);
            return -1;
        }
    }
    DslBuf src = {0};
    if (bk_gpu_emit_module(m, &bk_gpu_hip_dialect, arch, &src, err, errlen) < 0) {
        dsl_buf_free(&src);
        return -1;
    }
    int rc = bk_hip_compile(src.data ? src.data : "", arch, out, err, errlen);
    dsl_buf_free(&src);
    return rc;
}

const BkBackend bk_hip_backend = {
    "hip", hip_stages, "hsaco", hip_stage_is_text, hip_emit,
};
