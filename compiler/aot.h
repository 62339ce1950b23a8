/* aot.h — ahead-of-time output: `blkc compile --emit=aot -o NAME` writes
 * NAME.h (a typed launcher prototype per kernel) and NAME.c (the compiled
 * code embedded, plus the launchers), which build with a plain C compiler
 * and link only libblkc_runtime (include/blkc/blkc_runtime.h).
 *
 * CPU: the kernels' x86-64/AArch64 assembly from the CPU backend inside a
 * top-level __asm__ block (symbols blk_k_NAME__KERNEL,
 * blk_k_NAME__KERNEL__range, local labels renamed so several AOT files can
 * be linked together).
 * CUDA: the cubin (PTX for compute_XX archs) as a byte array, launched with
 * the driver API that libblkc_runtime loads with dlopen.
 * Cross-file prefix: aot_ (functions), Aot (types). docs/aot.md. */
#ifndef BLKC_AOT_H
#define BLKC_AOT_H

#include "ir.h"

typedef struct AotOptions {
    const char *out;     /* output path without suffix: OUT.h and OUT.c */
    const char *target;  /* "cpu" (NULL = cpu) or "cuda" */
    const char *arch;    /* --arch; NULL = host CPU / sm_90 */
    const char *source;  /* the .blk path, named in comments */
} AotOptions;

/* Compile every kernel of m (device functions are skipped) and write the
 * pair. Returns 0, or -1 with a one-line message in err. */
int aot_write(const IrModule *m, const AotOptions *o, char *err, size_t errlen);

/* The text generators behind aot_write, for tests: `prefix` is the C
 * identifier prefix (the basename of OUT). aot_gen_cpu takes the assembly
 * the CPU backend emitted for m with every kernel renamed PREFIX__KERNEL;
 * aot_gen_cuda the cubin/PTX bytes the CUDA backend emitted for m. */
int aot_gen_cpu(const IrModule *m, const AotOptions *o, const char *prefix,
                const char *asm_text, size_t asm_len, DslBuf *h, DslBuf *c,
                char *err, size_t errlen);
int aot_gen_cuda(const IrModule *m, const AotOptions *o, const char *prefix,
                 const void *image, size_t image_len, DslBuf *h, DslBuf *c,
                 char *err, size_t errlen);

#endif
