/* cpu.h — private header of the CPU backend (Core IR -> LLVM IR via LLVM-C).
 * Shared between the code generator files (lower.c: functions, control flow
 * and elementwise ops; dtype.c: scalar types and conversions; mem.c:
 * load/store/atomic; stream.c: a store's rows, non-temporal for large
 * tensors; tile.c: shape ops, reductions, dot) and jit.c (passes,
 * ORC LLJIT, emitted stages). Cross-file prefix: cpu_ (functions), Cpu
 * (types). */
#ifndef BLKC_CPU_H
#define BLKC_CPU_H

#include "../backend.h"

#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

/* Codegen switches, each read from the environment as BLKC_CPU_<NAME>
 * (set and not "0" = on) and each turning one optimization off, for
 * comparisons (PACKA instead turns on one that is off by default). The JIT cache keys on cpu_switches(), so code built under
 * one set of switches is never reused under another. */
#define CPU_SWITCHES(X)                                                    \
    X(NOFUSE, "no elementwise fusion (fuse.c)")                           \
    X(NOINPLACE, "loads always copy their tile (fuse.c)")                 \
    X(NOCOLRED, "reductions over outer axes walk columns (tile.c)")      \
    X(NOCOLVEC, "a reduction over outer axes keeps its row of accumulators in memory, not in vector registers (tile.c)") \
    X(VEC256, "no 512-bit vector preference on AVX-512 hosts (lower.c)") \
    X(NOSTREAM, "no non-temporal stores for large tensors (mem.c, stream.c)") \
    X(NOLINEST, "a cheap value streams through stream_row's window, not line by line from registers (stream.c)") \
    X(NOREMAT, "a cheap elementwise value with several users is stored once, not recomputed in each (fuse.c)") \
    X(NOPREFETCH, "no prefetch of the next program's in-place tile (fuse.c)") \
    X(NOALIAS, "a RESHAPE copies its tile and a var read by STOREs alone is copied first (tile.c, lower.c)") \
    X(NOMASKS, "a STORE or REDUCE whose fused operands compare an arange with a size has no version with the compares folded to true (masks.c)") \
    X(NOGRIDORDER, "programs run with axis 0 fastest always (lower.c)") \
    X(NOBPF, "a rank-2 DOT does not prefetch B's next K step (tile.c)")  \
    X(NOPACK, "rank-2 DOTs on row-major operands, B copied by its load (tile.c)") \
    X(NOMATVEC, "matrix-vector and skinny DOTs use the GEMM micro-kernel (matvec.c)") \
    X(NOSKTONE, "a skinny DOT on a widened trans(S) (bf16 / f16) takes A's rows in chunks, each widening S again (matvec.c)") \
    X(NOROWTREE, "a matrix-vector DOT sums each row's lanes alone, not a row block's together (matvec.c)") \
    X(NOMVPF, "a matrix-vector DOT does not prefetch its next row block (matvec.c)") \
    X(NOBTPF, "a rank-2 DOT on trans(B) read in place does not prefetch B's rows at the next K step (tile.c)") \
    X(NOBCAST, "a DOT of 9-16 rows on trans(B) packs B's panels, not A's columns with B's rows broadcast (matvec.c)") \
    X(NOBCPF, "a DOT of 9-16 rows on trans(B) read in place does not prefetch the next chunk of B's rows (matvec.c)") \
    X(NOSK16, "a DOT of 5-16 rows on a [K, N] B uses the packed GEMM, not the skinny path (matvec.c; AVX-512 hosts)") \
    X(NOSKPF, "a skinny DOT with chunks of up to 4 lines per row of B does not prefetch B's rows 32 ahead into L2 (matvec.c)") \
    X(NOSKTPF, "a skinny DOT on trans(B) in several chunks of A's rows does not prefetch the next row block of B (matvec.c)") \
    X(NOTRANSB, "a DOT's trans(B) is copied transposed by its PERMUTE, not read as it lies (fuse.c, tile.c, matvec.c)") \
    X(PACKA, "on: a rank-2 DOT copies an in-place A into slivers (tile.c; off by default)") \
    X(NOAVX512, "the JIT targets the host CPU with its AVX-512 features off, 256-bit vectors (jit.c; for valgrind, which cannot run AVX-512)") \
    X(EXPDEG7, "on: f32 exp / exp2 use the degree-7 Cephes polynomial of rounds 1-18, not degree 6 (vmath.c; for comparison)") \
    X(MVPF, "on: a matrix-vector DOT prefetches its next row block on Intel hosts too, where it is off by default (matvec.c; for comparison)")

enum {
#define X(name, doc) CPU_SW_##name,
    CPU_SWITCHES(X)
#undef X
    CPU_SW_COUNT
};

/* An open counted loop `for (iv = lo; iv < hi; iv++)` over i64. */
typedef struct CpuLoop {
    LLVMBasicBlockRef head, body, exit; /* blocks of the loop */
    LLVMValueRef iv;                     /* the i64 induction variable (phi) */
} CpuLoop;

/* Code generation state for one IrFunc. */
typedef struct CpuGen {
    const IrFunc *f;              /* the function being lowered */
    LLVMContextRef ctx;           /* owning context */
    LLVMModuleRef mod;            /* module receiving the function */
    LLVMBuilderRef b;             /* builder at the current position */
    LLVMValueRef fn;              /* the kernel function */
    LLVMBasicBlockRef entry;      /* allocas live here */
    LLVMBasicBlockRef exit;       /* RET branches here */
    LLVMValueRef *val;            /* per value id: scalar SSA or tile ptr */
    LLVMValueRef *var;            /* per var: slot pointer */
    LLVMValueRef *tdata;          /* per tensor param: element pointer */
    LLVMValueRef (*tshape)[IR_MAX_RANK];  /* per param: i64 extents */
    LLVMValueRef (*tstride)[IR_MAX_RANK]; /* per param: i64 strides */
    int *uses;                    /* per value id: number of uses */
    uint8_t *skip;                /* per value id: handled by a peephole
                                     (3: a REDUCE fused into its producer) */
    uint8_t *inl;                 /* per value id: computed per element in
                                     its consumer's loop (fuse.c) */
    uint8_t *inpl;                /* per value id: a LOAD that may read
                                     its tile in place (fuse.c); 2: with
                                     strided rows (read by DOTs only); 3:
                                     also with its last columns out of
                                     bounds (read by matvecs only) */
    uint64_t *inplw;              /* per value id: the tensor params (a bit
                                     each) an in-place LOAD's tile must not
                                     overlap at run time (fuse.c) */
    LLVMValueRef *vkn;            /* per value id: the columns of a tile
                                     read in place (inpl 3) that lie in
                                     the tensor (i64; the rest read 0),
                                     else NULL */
    LLVMValueRef *vld;            /* per value id: row stride (i64, in
                                     elements) of a 2-D tile read in place
                                     with strided rows, else NULL */
    uint8_t *tdot;                /* per value id: a PERMUTE (1, 0) read
                                     only as a rank-2 DOT's B, never copied:
                                     val / vld name its operand's buffer,
                                     whose rows are B's columns (fuse.c) */
    uint8_t *mtrue;               /* per value id: a compare lower.c's
                                     version of the current op takes as
                                     true (masks.c) */
    int *fred;                    /* per value id: 1 + id of a REDUCE fused
                                     into this value's loop, or 0 */
    int *pfn;                     /* per value id: 1 + id of an in-place
                                     LOAD whose next tile this value's loop
                                     prefetches (fuse.c), or 0 */
    int vecw_bytes;               /* vector register width (16/32/64) */
    bool scalef;                  /* CpuIsa.scalef */
    bool mvpf;                    /* CpuIsa.mvpf */
    bool mcopy;                   /* lower.c emits an op's copy with
                                     full-tile masks true (masks.c) */
    LLVMTypeRef i1, i8, i16, i32, i64, f16, f32, f64, vd, ptr;
    char *err; size_t errlen;     /* first error */
    bool failed;                  /* an error was recorded */
} CpuGen;

/* ------------------------------------------------------------ jit.c */
/* The switches set now, one bit per CPU_SW_* (read on every call). */
uint64_t cpu_switches(void);
#define cpu_switch(sw) ((cpu_switches() >> (sw)) & 1u)
_Static_assert(CPU_SW_COUNT <= 64, "one bit per switch in cpu_switches()");

/* What the target offers the generator (jit.c make_tm): vecw, the SIMD
 * width to block DOT for (16/32/64 bytes); scalef, AVX-512F+VL (vmath.c's
 * exponent scaling is one vscalefps, through vector variants); mvpf,
 * whether a matrix-vector DOT prefetches its next row block (matvec.c:
 * off on Intel hosts, where it cost 7-9%, on elsewhere). */
typedef struct CpuIsa {
    int vecw;
    bool scalef;
    bool mvpf;
} CpuIsa;

/* ------------------------------------------------------------ lower.c */
/* Lower every function of m into a fresh module of ctx (named "blkc"). */
int cpu_lower_module(const IrModule *m, LLVMContextRef ctx, const CpuIsa *isa,
                     LLVMModuleRef *out, char *err, size_t errlen);
int cpu_fail(CpuGen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
LLVMValueRef cpu_i64(CpuGen *g, int64_t v);
LLVMValueRef cpu_i32c(CpuGen *g, int64_t v);
void cpu_loop_open(CpuGen *g, CpuLoop *l, LLVMValueRef lo, LLVMValueRef hi);
void cpu_loop_close(CpuGen *g, CpuLoop *l);
LLVMValueRef cpu_alloca(CpuGen *g, LLVMTypeRef t, int64_t n);
LLVMValueRef cpu_tile_buf(CpuGen *g, const IrType *t); /* typed elem ptr */
LLVMValueRef cpu_gep(CpuGen *g, LLVMTypeRef et, LLVMValueRef p,
                     LLVMValueRef idx);
/* p behind an empty asm, opaque to LLVM's loop strength reduction (which
 * turns row pointers A + r * lda, lda a run-time value, into a chain of
 * adds inside a k loop: one integer op per load, serialized) */
LLVMValueRef cpu_opaque_ptr(CpuGen *g, LLVMValueRef p);
/* Element lin of value id (scalars ignore lin), as SSA of the dtype. */
LLVMValueRef cpu_elem(CpuGen *g, int id, LLVMValueRef lin);
LLVMValueRef cpu_call(CpuGen *g, const char *name, LLVMTypeRef ret,
                      LLVMValueRef *args, int n);
LLVMValueRef cpu_intrin(CpuGen *g, const char *name, LLVMTypeRef *ovl,
                        int novl, LLVMValueRef *args, int n);
LLVMValueRef cpu_intrin1(CpuGen *g, const char *name, LLVMValueRef x);
/* a read prefetch of the line at p (never faults, so past a tensor's end
 * is fine); locality 3: into L1, 2: into L2 */
void cpu_prefetch(CpuGen *g, LLVMValueRef p, int locality);
LLVMValueRef cpu_scalar_op(CpuGen *g, const IrInstr *in, LLVMValueRef *a);

/* ------------------------------------------------------------ fuse.c */
/* Mark inline values (g->inl), reductions fused into their producer
 * (g->fred, g->skip = 3) and loads read in place (g->inpl); needs g->uses
 * and g->skip. */
void cpu_fuse_analyze(CpuGen *g);
/* Element lin of inline value id, computed from its operands. */
LLVMValueRef cpu_fused_elem(CpuGen *g, int id, LLVMValueRef lin);
/* The loop of elementwise value id with its fused REDUCE (g->fred[id]). */
int cpu_gen_elem_reduce(CpuGen *g, int id);
/* Lanes of the partial results of a vectorized float reduction of dt. */
int cpu_red_lanes(CpuGen *g, int dt);
/* In the loop of value site (g->pfn[site]): prefetch the next tile's
 * bytes that correspond to elements [lin, lin + n) of this one. A plain
 * elementwise site's loop walks chunks of PF_ELEMS elements. */
#define PF_ELEMS 64
void cpu_prefetch_next(CpuGen *g, int site, LLVMValueRef lin, int64_t n);

/* ------------------------------------------------------------ vmath.c */
/* Inline, call-free (vectorizable) math on an f32 or f64 scalar SSA value;
 * log/log2 of f64 fall back to the llvm.log/llvm.log2 intrinsics. */
LLVMValueRef cpu_vm_exp(CpuGen *g, LLVMValueRef x);
/* after lowering: keeps the vector variants of vmath.c's helpers alive
 * through the O3 pipeline; after it: makes the helpers alwaysinline,
 * returns how many (jit.c then runs the inliner) */
void cpu_vm_keep(CpuGen *g);
int cpu_vm_finish(LLVMModuleRef mod);
LLVMValueRef cpu_vm_exp2(CpuGen *g, LLVMValueRef x);
LLVMValueRef cpu_vm_log(CpuGen *g, LLVMValueRef x);
LLVMValueRef cpu_vm_log2(CpuGen *g, LLVMValueRef x);
LLVMValueRef cpu_vm_sigmoid(CpuGen *g, LLVMValueRef x);
LLVMValueRef cpu_vm_tanh(CpuGen *g, LLVMValueRef x);

/* ------------------------------------------------------------ dtype.c */
LLVMTypeRef cpu_stype(CpuGen *g, int dt);  /* SSA type (bool i1, bf16 i16) */
LLVMTypeRef cpu_mtype(CpuGen *g, int dt);  /* memory type (bool i8) */
LLVMTypeRef cpu_ctype(CpuGen *g, int dt);  /* compute type (f16 -> float) */
bool cpu_is_signed(int dt);
bool cpu_is_narrow(int dt);                /* f16, bf16, f8 */
LLVMValueRef cpu_widen(CpuGen *g, LLVMValueRef v, int dt);  /* SSA->compute */
LLVMValueRef cpu_narrow(CpuGen *g, LLVMValueRef v, int dt); /* compute->SSA */
LLVMValueRef cpu_cvt(CpuGen *g, LLVMValueRef v, int from, int to);
LLVMValueRef cpu_mload(CpuGen *g, LLVMValueRef p, int dt);
LLVMValueRef cpu_load_wide(CpuGen *g, LLVMValueRef p, int dt, LLVMTypeRef E, int VW);
void cpu_mstore(CpuGen *g, LLVMValueRef v, LLVMValueRef p, int dt);
LLVMValueRef cpu_const(CpuGen *g, int dt, int64_t ival, double fval);
LLVMValueRef cpu_zero(CpuGen *g, int dt);
typedef struct CpuHelper { const char *name; void (*addr)(void); } CpuHelper;
extern const CpuHelper cpu_helpers[];      /* NULL-terminated */

/* jit.c: an LLJIT with the helpers, the process's symbols and the code
 * memory probe (the JIT cache links its objects with one too) */
#define CPU_JIT_ERROR_LEN 256
int cpu_lljit(LLVMTargetMachineRef tm, char *first_error, LLVMOrcLLJITRef *out,
              char *err, size_t errlen);
int cpu_lljit_error(LLVMErrorRef e, const char *first_error, const char *what,
                    char *err, size_t errlen);

/* ------------------------------------------------------------ mem.c */
int cpu_gen_memop(CpuGen *g, int id);      /* LOAD, STORE, ATOMIC, NOTIFY,
                                              WAIT (peer views too) */

/* The kernel's BkLaunchCtx pointer (its nprog argument). */
LLVMValueRef cpu_launch_ctx(CpuGen *g);

/* ------------------------------------------------------------ stream.c */
#define CPU_STREAM_CHUNK 1024 /* stream.c's window: a dear value's shortest streamed row */
#define CPU_STREAM_LINES 256  /* a cheap value's shortest streamed row (line by line) */
/* One view row of a STORE on mem.c's fast path. */
typedef struct CpuRowStore {
    int value;                /* the stored value's id */
    int dt;                   /* element dtype */
    LLVMTypeRef et;           /* memory type of an element */
    LLVMValueRef base;        /* the row's first element in the tensor */
    LLVMValueRef lin0;        /* its linear offset in the view */
    int64_t len;              /* elements in the row */
    LLVMValueRef stream;      /* i1: the tensor is large, or NULL: never */
} CpuRowStore;
void cpu_store_row(CpuGen *g, const CpuRowStore *rs);
/* The shortest view row, in bytes, whose STORE of value may stream. */
int64_t cpu_stream_min_row(CpuGen *g, int value);

/* ------------------------------------------------------------ masks.c */
/* i1 at the builder: every lane of each inline arange-against-scalar
 * compare among id's fused operands is true (their ids in ids[0 .. *n),
 * at most max), or NULL when there is none. */
LLVMValueRef cpu_masks_true(CpuGen *g, int id, int *ids, int max, int *n);

/* ------------------------------------------------------------ tile.c */
int cpu_gen_tileop(CpuGen *g, int id);     /* BCAST RESHAPE PERMUTE REDUCE
                                              SCAN ARANGE */
/* DOT into dst (elements of the result type); acc_ptr may be dst (in
 * place), another buffer, or NULL (zero). */
int cpu_gen_dot(CpuGen *g, const IrInstr *in, LLVMValueRef dst,
                LLVMValueRef acc_ptr);
/* rows x scols of src (dtype sdt, row stride sld) converted into dst
 * (dtype ddt, row stride dcols) */
void cpu_convert_block(CpuGen *g, LLVMValueRef dst, int64_t dcols, LLVMValueRef src,
                       int sdt, LLVMValueRef sld, int64_t rows, int64_t scols, int ddt);
/* v[0 .. n) (n vectors of n lanes, n a power of two <= 64): the n x n
 * block whose rows they are, transposed in registers */
void cpu_transpose_sq(CpuGen *g, LLVMValueRef *v, int n);

/* ------------------------------------------------------------ matvec.c */
/* Whether DOT in is a float matrix-vector product [M, K] x [K, 1], a
 * skinny [M <= 4, K] x [K, N >= one vector] or a skinny [M <= 16, K] x
 * trans(S) that cpu_gen_matvec handles (same contract as cpu_gen_dot). */
bool cpu_matvec_applies(CpuGen *g, const IrInstr *in);
int cpu_gen_matvec(CpuGen *g, const IrInstr *in, LLVMValueRef dst,
                   LLVMValueRef acc_ptr);

#endif
