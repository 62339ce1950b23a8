/* api.h — what the files of libblkc (api.c: contexts, modules, kernels,
 * emission; api_task.c: tasks and device functions on N ranks) share:
 * the module and kernel handles and the error/compile helpers. Internal;
 * the public API is include/blkc/blkc.h. */
#ifndef BLKC_COMPILER_API_H
#define BLKC_COMPILER_API_H

#include "../backends/backend.h"
#include "../include/blkc/blkc.h"
#include "../runtime/gpu.h"
#include "cache.h"
#include "ir.h"

struct blkc_kernel {
    blkc_module *module;  /* owner */
    const IrFunc *func;   /* Core IR function: parameters, grid */
    BkRangeFn range;      /* JIT'd range entry (CPU ABI) */
    int index;            /* function index in module->unit */
    int specialize;       /* blkc_specialize (atomic); DEFAULT = module's */
};

struct blkc_module {
    IrModule *ir;         /* compiled Core IR */
    BkCpuModule *cpu;     /* JIT'd code */
    RtGpuModule *gpu;     /* loaded on a cuda/hip context's device */
    blkc_kernel *kernels; /* one per function of ir */
    int nkernels;
    JcUnit *unit;         /* shared compiled code (cache.c); owns ir */
    blkc_specialize specialize; /* options, else the context's (DEFAULT:
                                   the environment) */
    blkc_parallel_for_fn parallel_for; /* the context's hook (or NULL) */
    void *parallel_for_user;
    int holds;            /* atomic: runs that left ranks behind holding it,
                             minus 1 once blkc_module_destroy was called:
                             freed when it reaches -1 */
};
/* RtPlanModule.hold (runtime/plan.h) for a module (ctx): +1 keeps it,
 * -1 lets it go (the last one after blkc_module_destroy frees it). */
void api_module_hold(const void *ctx, int delta);

/* Set the thread's last error (blkc_last_error) and return s. */
blkc_status api_err(blkc_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *api_target_name(blkc_target t);
/* Check options and copy source into a NUL-terminated buffer; a *len of 0
 * means source is NUL-terminated (*len becomes its length). */
blkc_status api_prepare(const char *source, size_t *len,
                        const blkc_compile_options *o, char **text);
/* The file name diagnostics show ("<input>" when none). */
const char *api_src_name(const blkc_compile_options *o);
/* Source -> Core IR; diagnostics become the last error. */
blkc_status api_compile_ir(const char *text, size_t len,
                           const blkc_compile_options *o, IrModule **out);

#endif
