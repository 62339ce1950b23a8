/* backend.h — the contract between Core IR and the code generators.
 *
 * A backend is data: a BkBackend struct of function pointers, picked by name
 * from the list in backends/backend.c. Every backend consumes the same,
 * fully-verified Core IR (ir_verify(f, IR_VERIFY_FINAL) passed) and must give
 * the same results as the CPU backend, which is the reference.
 * Cross-file prefix: bk_ (functions), Bk (types). */
#ifndef BLKC_BACKEND_H
#define BLKC_BACKEND_H

#include "../compiler/ir.h"

/* ------------------------------------------------------------ symbols
 * Every backend names the code of kernel NAME BK_KERNEL_PREFIX NAME
 * (blk_k_NAME): a kernel may be called memcpy, exp, tanf, printf or main
 * without meeting the C library, the libm calls LLVM lowers math to, the
 * GPU compilers' device builtins or the generated code's own blk_*
 * helpers (none starts with blk_k_). The symbol is for the loaders only:
 * users see NAME (run output, errors, the C API, AOT launchers). */
#define BK_KERNEL_PREFIX "blk_k_"
/* BK_KERNEL_PREFIX NAME SUFFIX, malloc'd (NULL when out of memory) */
char *bk_kernel_sym(const char *name, const char *suffix);

/* ------------------------------------------------------------ CPU ABI
 * A kernel compiled for the CPU is a C-callable function
 *     void SYM(void *const *args, const int32_t *pid, const int32_t *nprog)
 * (SYM = blk_k_NAME, above)
 * run once per program instance. args[p] points, for parameter p, to
 *   - a BkTensorDesc (tensor params), or
 *   - the scalar's value stored in its own dtype's representation
 *     (i32 as int32_t, f16/bf16 as their 16-bit pattern, bool as uint8_t).
 * pid[0..2] is this instance's program id, nprog[0..2] the grid.
 * Besides SYM, the module defines
 *     void SYM__range(void *const *args, int64_t first, int64_t last,
 *                      const int32_t *nprog)
 * which runs the instances first..last-1 of the linearised grid
 * (linear = pid0 + nprog0 * (pid1 + nprog1 * pid2)) in order; the runtime's
 * thread pool hands each worker a range. */
typedef struct BkTensorDesc {
    void *data;                    /* element (0,...,0) */
    int64_t shape[IR_MAX_RANK];    /* extents */
    int64_t stride[IR_MAX_RANK];   /* strides in elements (may be 0 or <0) */
} BkTensorDesc;

/* The kernel's `nprog` argument points at the start of a BkLaunchCtx: the
 * grid comes first, so a plain int32_t[3] is enough for kernels that use no
 * rank builtins (rank()/world()/peer()/notify()/wait()); every runtime
 * launch passes a whole, zero-initialised BkLaunchCtx. */
typedef struct BkLaunchCtx {
    int32_t nprog[3];         /* the grid */
    int32_t rank;             /* this rank (0 without ranks) */
    int32_t world;            /* number of ranks (1 without ranks) */
    int32_t failed;           /* set (atomically) by a wait that timed out
                                 or was aborted; later waits return at once */
    char *const *heap_base;   /* per rank: base of its symmetric heap;
                                 NULL without ranks (peer(T, r) with r ==
                                 rank then addresses T itself) */
    int64_t timeout_ms;       /* wait timeout; <= 0 means 5000 */
    const volatile int *abort_flag; /* non-zero: the run is failing, waits
                                       give up (may be NULL) */
    /* the first failed wait: tensor param, cell index, expected, seen,
     * and whether it was aborted (1) rather than timed out (0) */
    int64_t fail_param, fail_cell;
    uint64_t fail_expected, fail_seen;
    int32_t fail_aborted;
    int *in_wait;             /* this rank's waits in progress, counted so a
                                 barrier timing out elsewhere lets a wait
                                 with its own deadline report first (or
                                 NULL) */
    /* the first failed assert: set once (atomically) by blkc_cpu_assert */
    int32_t assert_failed;    /* 0, or 1 once an assert failed */
    int32_t assert_msg, assert_line; /* IrFunc.msgs index, source line */
    int32_t assert_pid[3];    /* the failing program instance */
} BkLaunchCtx;

typedef void (*BkKernelFn)(void *const *args, const int32_t *pid,
                           const int32_t *nprog);
typedef void (*BkRangeFn)(void *const *args, int64_t first, int64_t last,
                          const int32_t *nprog);

typedef struct BkOptions {
    const char *arch;   /* "sm_80", "sm_90", "gfx90a", NULL = default/host */
    int opt_level;      /* 0..3; default 3 */
} BkOptions;

/* Generic emitter: writes stage `stage` of module m into out (text stages
 * NUL-terminated; binary stages raw bytes). Returns 0, or -1 with a one-line
 * message in err. */
typedef struct BkBackend {
    const char *name;                    /* "cpu", "cuda", "hip" */
    const char *const *stages;           /* NULL-terminated --emit stages */
    const char *default_stage;           /* the target's loadable binary */
    bool (*stage_is_text)(const char *stage);
    int (*emit)(const IrModule *m, const BkOptions *o, const char *stage,
                DslBuf *out, char *err, size_t errlen);
} BkBackend;

const BkBackend *bk_find(const char *name);  /* NULL if unknown */

/* ------------------------------------------------------------ cpu/ */
typedef struct BkCpuModule BkCpuModule;
/* JIT-compile every function of m with ORC LLJIT. */
int bk_cpu_jit(const IrModule *m, const BkOptions *o, BkCpuModule **out,
               char *err, size_t errlen);
BkKernelFn bk_cpu_kernel(BkCpuModule *cm, const char *name);
BkRangeFn bk_cpu_kernel_range(BkCpuModule *cm, const char *name);
void bk_cpu_free(BkCpuModule *cm);
extern const BkBackend bk_cpu_backend;   /* stages: llvm, llvm-unopt, asm, obj */

/* ------------------------------------------------------------ cuda/, hip/ */
extern const BkBackend bk_cuda_backend;  /* stages: cuda, ptx, cubin */
extern const BkBackend bk_hip_backend;   /* stages: hip, hsaco */
/* HIP C source -> a code object for arch, compiled as the hsaco stage
 * compiles a module (hiprtc, else hipcc --genco): 0, or -1 with err ("HIP
 * not found ..." when neither is there). For hand-written kernels (the
 * notify kernels of runtime/gpu_ranks.c). */
int bk_hip_compile(const char *src, const char *arch, DslBuf *out, char *err,
                   size_t errlen);

#endif
