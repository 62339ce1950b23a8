/* cpu_none.c — the CPU backend of a build without one (-DBLKC_CPU_BACKEND=OFF,
 * preset gpu, docs/gpu.md): bk_cpu_backend and bk_cpu_* exist so that every
 * caller links, and every entry point fails with "this build has no CPU
 * backend". Replaces backends/cpu/ and compiler/aot.c (which need LLVM) in
 * that build: --emit=aot (CPU and CUDA) is not available there. */
#include "../backend.h"
#include "../../compiler/aot.h"

#include <stdio.h>

#define NO_CPU_MSG "this build has no CPU backend (configured with " \
                   "-DBLKC_CPU_BACKEND=OFF): use --device=cuda:N or hip:N"

static const char *const none_stages[] = {"llvm", "llvm-unopt", "asm", "obj", NULL};

static bool none_stage_is_text(const char *stage)
{
    return stage[0] != 'o';
}

static int none_emit(const IrModule *m, const BkOptions *o, const char *stage,
                     DslBuf *out, char *err, size_t errlen)
{
    (void)m, (void)o, (void)stage, (void)out;
    snprintf(err, errlen, NO_CPU_MSG);
    return -1;
}

int bk_cpu_jit(const IrModule *m, const BkOptions *o, BkCpuModule **out,
               char *err, size_t errlen)
{
    (void)m, (void)o;
    *out = NULL;
    snprintf(err, errlen, NO_CPU_MSG);
    return -1;
}

BkKernelFn bk_cpu_kernel(BkCpuModule *cm, const char *name)
{
    (void)cm, (void)name;
    return NULL;
}

BkRangeFn bk_cpu_kernel_range(BkCpuModule *cm, const char *name)
{
    (void)cm, (void)name;
    return NULL;
}

void bk_cpu_free(BkCpuModule *cm)
{
    (void)cm;
}

const BkBackend bk_cpu_backend = {
    .name = "cpu",
    .stages = none_stages,
    .default_stage = "obj",
    .stage_is_text = none_stage_is_text,
    .emit = none_emit,
};

int aot_write(const IrModule *m, const AotOptions *o, char *err, size_t errlen)
{
    (void)m, (void)o;
    snprintf(err, errlen, NO_CPU_MSG);
    return -1;
}
