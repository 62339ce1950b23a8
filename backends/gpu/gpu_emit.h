/* gpu_emit.h — the GPU C emitter shared by the CUDA and HIP backends.
 *
 * Both backends turn Core IR into the same kind of C++ source: one
 * `extern "C" __global__` function per kernel, named blk_k_NAME
 * (BK_KERNEL_PREFIX, backend.h; the runtime looks it up so); tiles in
 * shared memory (each tile op a block-strided loop) unless the layout pass (gpu_layouts.c) puts
 * them in registers (dot accumulators, gpu_mma.c; blocked tiles, the
 * blocked loop of gpu_emit.c). What differs between CUDA C and HIP C
 * (headers, half types, shuffles, warp size, the tensor-core path of `dot`)
 * is data in a BkGpuDialect, so the two outputs cannot drift apart.
 *
 * Kernel ABI (mirrors the CPU ABI of backend.h in spirit):
 *   - tensor param p of dtype T and rank R: a `BlkTensor<T, R>` passed by
 *     value: { T *data; long long shape[R]; long long stride[R]; } (strides
 *     in elements);
 *   - scalar params by value in their storage type (f16/bf16 as the vendor
 *     half types or 16-bit patterns, f8 as a byte, bool as `bool`);
 *   - gridDim = the grid from ir_eval_grid; blockDim.x = warps * warp size
 *     (see bk_gpu_kernel_info); dynamic shared memory = the size reported
 *     by bk_gpu_kernel_info (also in the module as the __constant__ int
 *     `blk_smem_blk_k_<kernel>`); a launch above 48 KiB must raise the
 *     kernel's max dynamic shared memory attribute first.
 * Cross-file prefix: bk_gpu_ (functions), BkGpu (types). */
#ifndef BLKC_GPU_EMIT_H
#define BLKC_GPU_EMIT_H

#include "../backend.h"

typedef enum { BK_GPU_CUDA, BK_GPU_HIP } BkGpuKind;

#define BK_GPU_EXPR 16384 /* longest generated C expression (fused ops) */
#define BK_GPU_NAME 256   /* longest parameter or kernel name
                             (bk_gpu_em_init refuses longer ones: p_NAME is
                             in every base, bounds test and address of a
                             view; blk_k_NAME in the runtime's look-ups) */
#define BK_GPU_VIEW 4096  /* a view's bounds test or address: IR_MAX_RANK
                             terms of at most 64 + BK_GPU_NAME characters */
#define BK_GPU_SVAL 4096  /* a ring load's scalar index at a future
                             iteration (bk_gpu_sval); longer ones are not
                             pipelined */

typedef struct BkGpuDialect {
    BkGpuKind kind;         /* which tensor-core path `dot` uses */
    const char *name;       /* "CUDA C" / "HIP C", for the header comment */
    const char *const *prelude; /* NULL-terminated text pieces: includes, typedefs blk_f16/blk_bf16/blk_f8*,
                               conversions blk_<t>_to_f32 / blk_f32_to_<t>,
                               BLK_SHFL_XOR(v, m) */
    int warp;               /* threads per warp / wavefront: 32 or 64 */
} BkGpuDialect;

/* Per-kernel launch facts the runtime needs. */
/* A tensor map the kernel takes (gpu_tma.c): the launch encodes one for
 * tensor param `param` of `rank` 2..5 (the map has the tensor's rank: its
 * dim i is the tensor's dim rank - 1 - i, innermost first) with boxes of
 * box[i] elements along map dim i (box[0] the inner columns; 1 on the
 * dims a view indexes by a scalar) in the swizzle of `span` bytes (32,
 * 64, 128). */
#define BK_GPU_MAXTMA 4
#define BK_GPU_TMA_RANK 5 /* cuTensorMapEncodeTiled's highest rank */
typedef struct BkGpuTma {
    int param;
    int rank;
    int box[BK_GPU_TMA_RANK];
    int span;
} BkGpuTma;

typedef struct BkGpuKernelInfo {
    int threads;            /* blockDim.x */
    long long smem_bytes;   /* dynamic shared memory per block */
    bool rank_ctx;          /* takes a BlkRankCtx after the declared
                               parameters (bk_gpu_uses_ranks) */
    int ntma;               /* then this many CUtensorMaps (64-byte
                               aligned, 128 bytes each) */
    BkGpuTma tma[BK_GPU_MAXTMA];
    bool persist;           /* a persistent kernel (gpu_persist.c): then
                               three ints, the grid of programs (x, y, z);
                               launch gridDim = (min(programs, SMs), 1, 1) */
} BkGpuKernelInfo;

/* The launch context of kernels that use rank(), world(), peer views,
 * notify or wait: passed by value after the declared parameters. Same
 * layout as the generated `struct BlkRankCtx` (40 bytes, 8-aligned). */
typedef struct BkGpuRankCtx {
    int32_t rank, world;      /* this rank, number of ranks */
    uint64_t heap_base;       /* device pointer to int64[world]: each rank's
                                 symmetric heap base as mapped on this
                                 device; 0 without ranks (then only
                                 peer == rank is valid) */
    uint64_t fail;            /* device pointer to a BkGpuFail, or 0 */
    uint64_t abort_flag;      /* device-visible int: non-zero = give up, or 0 */
    int64_t timeout;          /* wait timeout in device ticks (CUDA:
                                 %globaltimer ns; HIP: clock64 at
                                 hipDeviceAttributeClockInstructionRate
                                 kHz); <= 0: 5 s */
} BkGpuRankCtx;

/* The failure record a timed-out wait or a failed assert writes
 * (generated `struct BlkFail`). */
typedef struct BkGpuFail {
    int32_t failed, aborted;
    int64_t param, cell;      /* signal tensor param, element offset */
    uint64_t expected, seen;
    int32_t asserted;         /* 1: an assert failed (the first one:) */
    int32_t amsg, aline;      /* its IrFunc.msgs index and source line */
    int32_t apid[3];          /* its program id */
} BkGpuFail;

/* Whether kernel f uses rank builtins (and so takes a BlkRankCtx). */
bool bk_gpu_uses_ranks(const IrFunc *f);

/* Writes the whole module as one translation unit into out. Returns 0, or -1
 * with a message in err. `arch` (NULL: the default) selects one path in
 * the text: CUDA "sm_90a" (or "compute_90a") lets dots use wgmma
 * (gpu_wgmma.c), whose operand layouts only that arch reads; other archs
 * are handled with #if in the source. */
int bk_gpu_emit_module(const IrModule *m, const BkGpuDialect *dl, const char *arch,
                       DslBuf *out, char *err, size_t errlen);

/* The `gpu-ir` stage: each kernel's Core IR with the layout the backend
 * chose for every tile value and var (` @ LAYOUT`), the conversions
 * marked. 0, or -1 with a message in err (gpu_ir.c). */
int bk_gpu_emit_gpu_ir(const IrModule *m, const BkGpuDialect *dl, const char *arch,
                       DslBuf *out, char *err, size_t errlen);

/* Launch facts of one kernel (same layout decisions as the emitter). */
int bk_gpu_kernel_info(const IrFunc *f, const BkGpuDialect *dl, const char *arch,
                       BkGpuKernelInfo *info, char *err, size_t errlen);

/* The dialects (cuda/cuda.c, hip/hip.c). */
extern const BkGpuDialect bk_gpu_cuda_dialect;
extern const BkGpuDialect bk_gpu_hip_dialect;

/* ------------------------------------------------------------ emitter state
 * Shared by gpu_emit.c (driver, storage, elementwise, control flow),
 * gpu_mem.c (loads, stores, vectors, cp.async), gpu_sync.c (barriers) and
 * gpu_ops.c (reduce, scan, dot, atomics). */

/* One shared-memory access of a tile op since the last barrier (gpu_sync.c):
 * bytes [off, off + bytes) of elements of `sz` bytes; `map` says which
 * thread touches flat element e: k > 0 = thread (e / k) % blockDim.x (the
 * block-strided loops: k = 1; vectors of k elements: k), 0 = unknown. */
typedef struct BkGpuAcc {
    long long off, bytes;
    int sz, map;
    bool write;
} BkGpuAcc;

#define BK_GPU_MAXACC 64   /* accesses tracked per barrier-free segment */

/* Layouts of tile values (gpu_layouts.c). */
/* REG: a register value (gpu_rvals.c) with no shared tile: only the
 * registers of its pseudo-var (BK_GPU_DOT_VAR), in an MMA layout. */
/* MROW: a row value (sum / max / min along the last axis of a register
 * MMA tile, elementwise ops and vars over such) in registers: each lane
 * holds its rows of that MMA layout (gpu_mrows.c). */
typedef enum { BK_LAY_NONE, BK_LAY_SHARED, BK_LAY_MMA, BK_LAY_BLOCKED, BK_LAY_SLICE,
               BK_LAY_REG, BK_LAY_MROW } BkGpuLay;

/* BLOCKED tiles hold at most this many registers per thread. */
#define BK_GPU_BLK_REGS 64

/* The register layout of an MMA tile var: a wm x wn grid of warps, each
 * owning WM x WN of the M x N tile as mt x nt fragments of fm x fn. A
 * dot computed a part at a time (bk_gpu_pick_batch: batched [B, M, N],
 * or a tile too small or too large for one grid of every warp) is B parts
 * of M x N each: cm x cn parts (row-major) per matrix of its result, and
 * wb groups of wm x wn warps; group w computes the parts w, w + wb, ...
 * one after the other, each into the same registers. */
typedef struct BkGpuMma {
    bool on;                  /* the var is held in registers */
    int wm, wn, WM, WN;
    int fm, fn, mt, nt;
    long long M, N;
    int wb;                   /* warp groups over the parts (0: one grid) */
    long long B;              /* parts (batch size times cm) */
    int cm, cn;               /* parts per matrix: cm of M rows by cn of N columns */
} BkGpuMma;

/* A FOR split at its bounds mask (gpu_split.c): compares cmp[0 .. n) of
 * index blocks iv + arange against the loop-invariant scalar `bound` are
 * all true in the steps with iv < bound - lim (the body emitted twice
 * under that test, gpu_emit.c for_body). */
#define BK_GPU_MAXFOLD 8
typedef struct BkGpuSplit {
    int n;                    /* compares folded in the full steps */
    int cmp[BK_GPU_MAXFOLD];  /* their instruction ids */
    int bound;                /* the scalar value they compare against */
    long long lim;            /* full step: iv < bound - lim (64-bit) */
} BkGpuSplit;

typedef struct BkGpuEm {
    const IrFunc *f;          /* the kernel being emitted */
    const BkGpuDialect *dl;   /* CUDA or HIP */
    DslBuf *o;                /* output */
    int nt, nw;               /* threads per block, warps per block */
    int indent;               /* current indentation level */
    int last_line;            /* .blk line of the last location comment */
    int *pos, *end;           /* linear position of each instruction; end of
                                 its nested regions (== pos without) */
    int *last;                /* last use position of each storage root */
    int *alias;               /* storage root of each value (itself if own) */
    bool *virt;               /* tile computed where it is read (splat CONST,
                                 BCAST): no storage, no loop */
    int *var_of;              /* VGET values living in var storage: var idx,
                                 else -1 */
    long long *off;           /* smem byte offset of each root, -1 if none */
    long long *var_off;       /* smem byte offset of each tile var */
    long long smem;           /* dynamic shared memory bytes */
    int *pipe;                /* LOAD held in a cp.async ring: its FOR, else
                                 -1; FOR: number of such loads (gpu_mem.c) */
    int *lay;                 /* BkGpuLay of each value (gpu_layouts.c) */
    bool *cvt;                /* var.get converting an MMA var to shared */
    BkGpuMma *vmma;           /* per var: its register layout, if on */
    int *mvar;                /* MMA values and var.sets: their var, else -1 */
    bool *swz;                /* loads stored swizzled (bk_gpu_swz_idx) */
    bool *inblk;              /* stores / reductions reading a BLOCKED tile:
                                 they run in the blocked loop */
    int *spar;                /* SLICE values: a value of the parent tile
                                 type (the reduction's operand), else -1 */
    bool *scvt;               /* SLICE values also written to shared memory
                                 (convert slice -> shared, v<id>_s) */
    int *vsl;                 /* per tile var: held in SLICE registers
                                 across iterations, a value of the parent
                                 tile type; else -1 */
    int *rroot;               /* register values (gpu_rvals.c): the dot
                                 value whose MMA layout its pseudo-var's
                                 registers have (the dot itself), else -1 */
    bool *rcvt;               /* register values also written to their
                                 shared tile (convert mma -> shared) */
    bool *rfb;                /* ... only for the FMA path (#else of the
                                 tensor cores): read as a dot's operand a
                                 from registers (em->areg) */
    bool *rred;               /* reductions along the last axis computed
                                 from a register value's registers */
    int *rowc;                /* row (column) broadcasts x[:, None]
                                 (x[None, :]) loaded once per lane row
                                 (column) before a loop over the registers
                                 of (pseudo-)var w: rowc = w + 1 (-1 - w);
                                 blk_rc<id>; else 0 */
    bool *areg;               /* register dots whose operand a comes from
                                 a register value's registers (CUDA) */
    int *mrow;                /* MROW values (gpu_mrows.c): the (pseudo-)var
                                 whose MMA layout's rows they hold, else -1 */
    bool *mrcvt;              /* MROW values also written to their shared
                                 tile v<id>_s (convert mma rows -> shared) */
    int *vmrow;               /* per tile var: held in MROW registers across
                                 iterations, the (pseudo-)var of its rows;
                                 else -1 */
    int mr_loop;              /* inside a loop over the row registers of
                                 MROW values of (pseudo-)var mr_loop, else -1 */
    int blk;                  /* inside a blocked loop: its brace depth
                                 (bk_gpu_blk_open), else 0 */
    const IrType *blk_t;      /* inside a blocked loop: its tile type */
    const IrType *sl_par;     /* inside a slice loop: the parent tile type */
    int reg_var;              /* inside a loop over the registers of MMA var
                                 (or pseudo-var) reg_var (gpu_mma.c), else -1 */
    int stages;               /* the kernel's stages(S), or fewer where S
                                 slots of its rings would not fit (bk_gpu_em_init) */
    int group_m;              /* program ids (0, 1) in groups of group_m
                                 rows (L2 reuse), 0 = blockIdx as is */
    bool novec, nopipe;       /* BLKC_GPU_NOVEC / BLKC_GPU_NOPIPE set */
    bool nohoist;             /* BLKC_GPU_NOHOIST: cp.async prefetch
                                 addresses recomputed each k step */
    bool nosyncelim;          /* BLKC_GPU_NOSYNCELIM: a barrier after every op */
    bool notma;               /* BLKC_GPU_NOTMA: wgmma operands by cp.async */
    bool noldsmxor;           /* BLKC_GPU_NOLDSMXOR: ldmatrix addresses of
                                 swizzled tiles as blk_swz per load, not a
                                 lane base XOR k (gpu_mmadot.c) */
    bool nocpimm;             /* BLKC_GPU_NOCPIMM: hoisted cp.async copies
                                 into swizzled rings by blk_swz each, not
                                 the first's offset + an immediate */
    bool nocplim32;           /* BLKC_GPU_NOCPLIM32: hoisted cp.async
                                 limits clamped in 64 bits per k step, not
                                 one 32-bit subtract (gpu_mem.c lim32) */
    bool nocpguard32;         /* BLKC_GPU_NOCPGUARD32: the loop top's
                                 prefetch test in 64 bits per k step, not
                                 iv against an i32 bound (gpu_mem.c) */
    bool noex2ftz;            /* BLKC_GPU_NOEX2FTZ: f32 exp2 as exp2f, not
                                 one ex2.approx.ftz (gpu_prelude.c) */
    bool noloopsplit;         /* BLKC_GPU_NOLOOPSPLIT: no loop split at a
                                 bounds mask (gpu_split.c) */
    bool nohipstage;          /* BLKC_GPU_NOHIPSTAGE: no rings on HIP (the
                                 loads in the loop body, gpu_mem.c) */
    bool nofragpipe;          /* BLKC_GPU_NOFRAGPIPE: a ring loop's dot
                                 loads its fragments after the loop top's
                                 barrier (no gpu_fragpipe.c) */
    int fp_fr, fp_dot;        /* the ring FOR whose dot's fragments are
                                 double-buffered (gpu_fragpipe.c) and that
                                 dot, else -1 */
    int fold[2 * BK_GPU_MAXFOLD]; /* compares emitted as `true` (the
                                 full-step body of a split FOR, nested) */
    int nfold;
    bool sm90a;               /* CUDA --arch=sm_90a: dots may use wgmma */
    bool wgmma;               /* some dot uses wgmma (gpu_wgmma.c): barriers
                                 fence the async proxy */
    int *wgl;                 /* wgmma operand tiles: 1 + the m-blocks per
                                 warpgroup whose rows an a tile is permuted
                                 into (1: none, b); else 0 */
    int *wgs;                 /* and their swizzle span in bytes (32, 64,
                                 128): stored by blk_wgs */
    bool *wgd;                /* dots on wgmma */
    int *wga;                 /* one wgmma group in flight across the k
                                 steps of a ring loop (gpu_wgmma.c): the
                                 dot's FOR + 1 at the dot, the dot + 1 at
                                 the FOR; else 0 */
    int *wgk;                 /* a register-A wgmma group kept in flight
                                 across the back edge of a ring loop
                                 (gpu_wgmma.c keep_plan): FOR + 1 at the
                                 kept dot, the kept dot + 1 at the FOR,
                                 -(kept dot + 1) at the dot whose wait
                                 retires it; else 0 */
    int *wgq;                 /* at a kept dot (wgk > 0) whose p v is
                                 deferred behind the next step's q k^T
                                 (gpu_wgmma.c qk_plan): the row value that
                                 rescales its accumulator + 1; else 0 */
    bool *wgqz;               /* at such a dot: its accumulator is zeroed
                                 before the loop, so the first real p v
                                 overwrites it (scale-d 0) */
    bool wgsync;              /* BLKC_GPU_WGSYNC: wait_group 0 every step */
    bool nowgkeep;            /* BLKC_GPU_NOWGKEEP: no wgk groups */
    bool noqkpipe;            /* BLKC_GPU_NOQKPIPE: no wgq dots */
    bool nowgreg;             /* BLKC_GPU_NOWGREG: no wgmma for a dot whose
                                 result is a register value or whose a
                                 comes from registers (mma.sync) */
    bool *tma;                /* ring loads copied by TMA (gpu_tma.c) */
    int tma_fr;               /* the FOR whose ring they fill, or -1 */
    long long tma_bar;        /* its stages(S) mbarriers in shared memory
                                 (then S more with warp specialization) */
    bool ws;                  /* warp-specialized (gpu_ws.c): a producer
                                 warpgroup after the nt consumer threads */
    bool ws_top;              /* ws, split at the top of the body (flash
                                 attention's ring: gpu_ws.c), not at the
                                 ring loop */
    int ws_lag;               /* ws: a slot is released at the end of the
                                 iteration this many after its own (1: a
                                 wgmma group in flight across the steps) */
    bool persist;             /* persistent (gpu_persist.c): each block
                                 loops over tiles (program ids), the ring
                                 and its mbarriers going on across them */
    int tstore;               /* persistent: the epilogue store written by
                                 TMA from a staging tile (gpu_persist.c),
                                 else -1 */
    long long tst_off;        /* its staging tile in shared memory */
    int pzero;                /* persistent: the VSET before the ring loop
                                 zeroing the ring dot's accumulator, done
                                 by the tile's first wgmma (scale-d 0);
                                 else -1 */
    int plpt;                 /* persistent flash attention (ws_top): 1 when
                                 the ring loop's end grows with
                                 program_id(0) (causal), tiles then run
                                 from the largest program_id(0) down */
    char itbuf[48];           /* bk_gpu_persist_it's text */
    int tmaq;                 /* persistent flash attention: the load
                                 before the ring loop (q) the producer
                                 issues by TMA once per tile, completing
                                 blk_tq[0] (gpu_persist.c); else -1 */
    bool ws_on;               /* emitting code the consumers alone run:
                                 barriers are named barrier 1 of nt */
    /* barrier elision (gpu_sync.c): the accesses since the last barrier */
    BkGpuAcc acc[BK_GPU_MAXACC];
    int nacc;
    bool seg_gread, seg_gwrite; /* global memory read / written */
    bool pending;             /* a barrier was elided after the last op */
    int noflush_region;       /* region whose end owes no barrier (the body
                                 of a pipelined FOR), else -1 */
    bool seg_ok;              /* the op being emitted was checked (its loop
                                 may end without a barrier) */
    bool seg_none;            /* ... and touches no memory another thread
                                 may touch (registers only): owes nothing */
    int fail;                 /* set once an error was written to err */
    char *err; size_t errlen; /* error route */
} BkGpuEm;

void bk_gpu_line(BkGpuEm *em, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* records the first error in em->err and sets em->fail */
void bk_gpu_fail(BkGpuEm *em, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *bk_gpu_stype(int dt);         /* storage C type of a dtype */
const char *bk_gpu_ctype(int dt);         /* compute C type of a dtype */
/* C expression converting x (storage) to compute type / compute to storage */
void bk_gpu_to_c(char *buf, size_t n, int dt, const char *x);
void bk_gpu_to_s(char *buf, size_t n, int dt, const char *x);
/* operand v read at flat element `idx` (tiles) or as is (scalars), already
 * converted to its compute type */
void bk_gpu_read(BkGpuEm *em, int v, const char *idx, char *buf, size_t n);
/* operand v read at flat element `idx` in its storage type (follows
 * virtual values to what they are computed from) */
void bk_gpu_raw(BkGpuEm *em, int v, const char *idx, char *buf, size_t n);
/* the smem/var name of a tile value (`v12`) */
void bk_gpu_name(BkGpuEm *em, int v, char *buf, size_t n);
/* "(e / 64) % 32" style coordinate k of flat index `e` in a row-major shape */
void bk_gpu_coord(char *buf, size_t n, const IrType *t, int k, const char *e);
/* For the view of memory op id: declares coordinate `c<d>` (long long) of
 * every tensor dim d for the flat view element `e`, and writes the
 * in-bounds test into ok and the element offset into addr. */
void bk_gpu_view(BkGpuEm *em, int id, char *ok, size_t okn, char *addr,
                 size_t addrn);
/* The element pointer a memory op id indexes: `p_NAME.data`, or `blk_pd`
 * (declared by bk_gpu_view) for a peer view. */
void bk_gpu_base(BkGpuEm *em, int id, char *buf, size_t n);
/* bk_gpu_view for flat view element `ename`; when forid >= 0, index values
 * defined inside that FOR (and its induction variable, printed as `iv`)
 * are written as expressions of `iv` (cp.async prefetches) */
void bk_gpu_view_at(BkGpuEm *em, int id, const char *ename, int forid,
                    const char *iv, char *ok, size_t okn, char *addr,
                    size_t addrn);
/* C expression of a literal CONST in its compute type */
void bk_gpu_literal(char *buf, size_t n, int dt, const IrInstr *in);
/* compute-typed expression of elementwise op id over compute-typed a, b, c */
void bk_gpu_elem_expr(BkGpuEm *em, int id, const char *a, const char *b,
                      const char *c, char *x, size_t n);
/* declares tile id's storage pointer; block-strided loop over t's elements;
 * end of such a loop (a barrier unless gpu_sync.c may elide it) */
void bk_gpu_decl_tile(BkGpuEm *em, int id);
/* BLKC_GPU_NOFMA=1: the GPU compilers do not contract a * b + c into one
 * fma (NVRTC --fmad=false, HIP -ffp-contract=off), so elementwise results
 * round as the CPU backend's do (docs/backends.md); by default they may */
bool bk_gpu_nofma(void);
/* BLKC_GPU_MINBLOCKS=N (2..8; CUDA): __launch_bounds__(threads, N), so
 * ptxas caps the registers for N blocks per SM (an occupancy experiment:
 * more warps to hide latency against spills); 0 when unset */
int bk_gpu_minblocks(void);
/* x is virtual index arithmetic any thread computes at any element: a
 * splat, an arange, a reshape of such (gpu_layout.c) */
bool bk_gpu_free_leaf(const BkGpuEm *em, int x);
void bk_gpu_loop_open(BkGpuEm *em, const IrType *t);
/* opens a loop over flat index e = blk_tid * W, + nt * W, ... below N
 * (note: text after its brace); a short walk gets a fixed trip count
 * under #pragma unroll (blk_i), a long one a plain loop */
void bk_gpu_for_e(BkGpuEm *em, int W, long long N, const char *note);
void bk_gpu_loop_close(BkGpuEm *em);
/* the loop over the registers of a BLOCKED tile of type t: thread t owns
 * the runs of W = bk_gpu_blk_w(t) elements q = t + k * NT; declares blk_k,
 * blk_j, blk_q (register k * W + j) and e (flat element (q * W + j));
 * vec: one iteration per run (e = q * W, no blk_j / blk_q). Closed by
 * bk_gpu_loop_close. */
void bk_gpu_blk_open(BkGpuEm *em, const IrType *t, bool vec);
/* elements per run of a BLOCKED tile of type t (gpu_layouts.c: 4 when
 * every global load / store of that shape has 4-element vectors, else 1,
 * so that element-by-element accesses stay coalesced); registers per
 * thread */
int bk_gpu_blk_w(const BkGpuEm *em, const IrType *t);
int bk_gpu_blk_regs(const BkGpuEm *em, const IrType *t);
/* the loop over the registers of SLICE value id (bk_gpu_slice_geom):
 * blk_k over the parent's runs, e = the slice element (row) register
 * blk_k holds; closed by bk_gpu_loop_close */
void bk_gpu_slice_open(BkGpuEm *em, int id);
/* the same over the registers of a slice of the tile type of value par
 * with M elements (var.set of a SLICE var) */
void bk_gpu_slice_open_of(BkGpuEm *em, int par, long long M);
/* the C array holding SLICE value r's registers: `v<r>`, or `var<v>` for
 * a var.get reading a SLICE var in place */
void bk_gpu_slice_reg(const BkGpuEm *em, int r, char *buf, size_t n);
/* __syncthreads(), which also starts a new barrier-free segment */
void bk_gpu_sync(BkGpuEm *em);
/* instruction id (a persistent kernel emits the body before its ring
 * loop twice: gpu_persist.c); region r's instructions */
void bk_gpu_emit_instr(BkGpuEm *em, int id);
void bk_gpu_emit_region(BkGpuEm *em, int r);
/* identity literals for reductions in compute type */
void bk_gpu_min_lit(char *buf, size_t n, int dt);
void bk_gpu_max_lit(char *buf, size_t n, int dt);

/* ------------------------------------------------------------ gpu_expr.c
 * bk_gpu_line .. bk_gpu_elem_expr above are defined in gpu_expr.c */

/* ------------------------------------------------------------ gpu_layout.c */
int bk_gpu_analyze(BkGpuEm *em);      /* fills pos .. smem; 0 or -1 */
/* the emitter state of kernel f (every decision made; out may be NULL);
 * 0, or -1 with the message in err (gpu_emit.c) */
int bk_gpu_em_init(BkGpuEm *em, const IrFunc *f, const BkGpuDialect *dl,
                   const char *arch, DslBuf *out, char *err, size_t errlen);
void bk_gpu_em_free(BkGpuEm *em);

/* ------------------------------------------------------------ gpu_layouts.c */
/* fills lay, cvt, vmma (after fusion and var aliases, before shared-memory
 * offsets); regof = region of each instruction; 0 or -1 */
int bk_gpu_layouts(BkGpuEm *em, const int *regof);
/* How instruction o reads value w: 1 as an operand, -1 as a gather index
 * of its view (no register layout can serve that), 0 not at all. */
int bk_gpu_reads_of(const IrFunc *f, const IrInstr *o, int w);
/* The warp grid for an M x N accumulator into *g (untouched when none
 * fits: 0): every warp owns a block of whole fragments, the squarest
 * (fewest operand fragments loaded per k step); rows: only the grid in
 * which every warp owns whole rows (wm = warps, wn = 1). */
int bk_gpu_pick_grid(const BkGpuEm *em, BkGpuMma *g, long long M, long long N, bool f32,
                     bool rows);
/* The same for a dot of B matrices of M x N (B = 1 unbatched) a part at
 * a time: the matrices split into cm x cn parts of M / cm rows by N / cn
 * columns, the warps into
 * wb groups (a divisor of the warp count, some idle if the parts are too
 * few), each with a grid of the rest over a part; the fewest
 * fragment-steps per warp over its parts; 0 if none */
int bk_gpu_pick_batch(const BkGpuEm *em, BkGpuMma *g, long long B, long long M, long long N,
                      bool f32);
/* C expressions of the row and column of register (mt, nt, i) of MMA var v
 * (i < 4: the element within the fragment this lane holds) */
void bk_gpu_mma_rowcol(const BkGpuEm *em, int v, const char *mt, const char *nt,
                       const char *i, char *row, size_t rn, char *col, size_t cn);
/* The dot a `var.set v, x` of an MMA var accumulates: x (dot with the
 * var as accumulator) or the dot of x = add(rest, dot) with *rest set;
 * -1 if none */
int bk_gpu_set_dot(const BkGpuEm *em, int x, int *rest);
/* Whether dot id runs on the tensor-core register path (gpu_mmadot.c): a
 * 2-D or batched f16/bf16/f32 dot with an f32 result (i8: i32) of whole
 * fragments and k steps, in one grid of every warp or a part at a time
 * (bk_gpu_pick_batch); false under BLKC_GPU_SMEM=1. Either an MMA var's
 * dot, or a dot computed in registers and converted to its shared tile
 * (bk_gpu_mma_dot_value). */
bool bk_gpu_dot_regs(const BkGpuEm *em, int id);
/* The pseudo-var under which the registers of register dot id that is not
 * an MMA var's are laid out and named (em->vmma[P], var<P>, blk_wr<P>) */
#define BK_GPU_DOT_VAR(em, id) ((em)->f->nvars + (id))
/* Operand x of a register dot read as the transpose of a shared tile:
 * x = trans(t), fused (gpu_layout.c: every reader of x is a register dot),
 * so the dot reads t itself (ldmatrix without .trans). Returns t, or -1. */
int bk_gpu_dot_tsrc(const BkGpuEm *em, int x);
/* dot id on the register path, not an MMA var's: registers, then its
 * shared tile (gpu_mmadot.c) */
void bk_gpu_mma_dot_value(BkGpuEm *em, int id);
/* C when tile v is stored swizzled by blk_swz as [R][C] (C a power of 2),
 * else 0 */
int bk_gpu_swz_cols(const BkGpuEm *em, int v);
/* The shared-memory element index of element `e` of tile v as C text:
 * `blk_swz(e, ...)` for a swizzled tile (em->swz: loads read only by
 * register dots through ldmatrix), else `e` itself */
void bk_gpu_swz_idx(const BkGpuEm *em, int v, const char *e, char *buf, size_t n);
/* SLICE layouts: the reduction along the last axis of a tile of type p
 * read in p's blocked loop (runs of W, R = shape[last] / W runs per row,
 * R and the thread count powers of two): 1 with *R set, else 0 */
int bk_gpu_slice_geom(const BkGpuEm *em, const IrType *p, int *R);
/* the SLICE value whose registers v reads (v itself or a reshape of it),
 * else -1 */
int bk_gpu_slice_root(const BkGpuEm *em, int v);
/* gpu_slices.c: the SLICE layouts, before and after the BLOCKED pass */
void bk_gpu_slices(BkGpuEm *em, const int *regof);
void bk_gpu_slice_cvts(BkGpuEm *em, const int *regof);
/* the layout of value id / var v as text (--emit=gpu-ir, comments) */
void bk_gpu_lay_str(const BkGpuEm *em, int id, char *buf, size_t n);
void bk_gpu_var_lay_str(const BkGpuEm *em, int v, char *buf, size_t n);

/* ------------------------------------------------------------ gpu_rvals.c */
/* register values: fills rroot, rcvt, rfb, rred, areg and the layouts
 * (REG, the grids of their pseudo-vars); after the MMA vars and the dot
 * values' grids, before slices and blocked tiles. 0 or -1 */
int bk_gpu_reg_values(BkGpuEm *em, const int *regof);
/* the root of the register values expression x reads (fused operands
 * included), -1 none, -2 mixed */
int bk_gpu_rv_root(const BkGpuEm *em, int x);
/* whether the pseudo-vars / vars a and b have the same register layout */
bool bk_gpu_same_grid(const BkGpuEm *em, int a, int b);
/* whether v is a register value (held in its pseudo-var's registers) */
#define BK_GPU_RV(em, v) ((em)->rroot && (em)->rroot[v] >= 0)
/* the pseudo-var whose registers hold register value v */
#define BK_GPU_RV_VAR(em, v) BK_GPU_DOT_VAR(em, v)

/* ------------------------------------------------------------ gpu_mrows.c
 * row values of MMA tiles in registers (BK_LAY_MROW) */
/* the MROW layouts: after bk_gpu_reg_values, before the SLICE pass; the
 * shared copies after the BLOCKED pass (regof NULL: none, the arrays
 * only). 0 or -1 */
int bk_gpu_mrows(BkGpuEm *em, const int *regof);
void bk_gpu_mrow_cvts(BkGpuEm *em, const int *regof);
/* the MROW value whose registers v reads (v itself or a reshape of it),
 * else -1 */
int bk_gpu_mrow_root(const BkGpuEm *em, int v);
/* whether (pseudo-)vars a and b hold the same rows in every lane */
bool bk_gpu_same_rows(const BkGpuEm *em, int a, int b);
/* registers per lane of the rows of (pseudo-)var v */
int bk_gpu_mrow_regs(const BkGpuEm *em, int v);
/* the C text of MROW value r's registers: `v<r>`, or `var<v>` for a
 * var.get reading an MROW var in place */
void bk_gpu_mrow_reg(const BkGpuEm *em, int r, char *buf, size_t n);
/* declaration of MROW value id (or a reshape of one) */
void bk_gpu_mrow_decl(BkGpuEm *em, int id);
/* elementwise MROW op id; var.get / var.set of an MROW var; its decl */
void bk_gpu_mrow_elem(BkGpuEm *em, int id);
void bk_gpu_mrow_vget(BkGpuEm *em, int id);
void bk_gpu_mrow_vset(BkGpuEm *em, int id);
void bk_gpu_mrow_var_decl(BkGpuEm *em, int v);
/* the registers of MROW value id to its shared copy (one lane per row) */
void bk_gpu_mrow_to_shared(BkGpuEm *em, int id);
/* the layout of MROW value id / var v as text */
void bk_gpu_mrow_str(const BkGpuEm *em, int P, char *buf, size_t n);

/* ------------------------------------------------------------ gpu_mma.c
 * ops on MMA (register) tiles: declarations, var.set, conversions */
void bk_gpu_mma_decl(BkGpuEm *em, int v);      /* at the kernel's top */
void bk_gpu_mma_vset(BkGpuEm *em, int id);     /* var.set of an MMA var */
void bk_gpu_mma_to_shared(BkGpuEm *em, int id); /* converting var.get */
/* shared with gpu_mmadot.c: registers per lane of g; the fragment-row,
 * fragment-column and element expressions of register R; `for (blk_r ...)
 * {` over var v's registers with blk_row / blk_col, and its close; the
 * registers of pseudo-var P in the current scope; the end of an op whose
 * accesses gpu_sync.c recorded */
int bk_gpu_mma_nregs(const BkGpuMma *g);
void bk_gpu_mma_split(const BkGpuEm *em, const BkGpuMma *g, const char *R, char *mt,
                      char *nt, char *i, size_t n);
void bk_gpu_mma_loop_open(BkGpuEm *em, int v);
void bk_gpu_mma_loop_close(BkGpuEm *em);
void bk_gpu_mma_decl_regs(BkGpuEm *em, int P, const char *ty);
/* its warp's first row and column in the tile (blk_wr<P>, blk_wc<P>) */
void bk_gpu_mma_decl_warp(BkGpuEm *em, int P);
void bk_gpu_mma_op_done(BkGpuEm *em);

/* ------------------------------------------------------------ gpu_mmadot.c */
void bk_gpu_mma_dot(BkGpuEm *em, int id, int v); /* dot id into var v's registers */
/* the fragment loads of a CUDA m16n8k16 dot (f16 / bf16), shared with
 * gpu_fragpipe.c: frag_plan picks the address forms; frag_base declares a
 * lane base NAME (BASE: the operand's shared byte offset) of operand j
 * (0: a, 1: b) in the xor form; frag_load emits k step K's ldmatrix into
 * arrays A[mt][4], B[nt][2] (reading lane bases blk_xa / blk_xb in the
 * xor form, blk_A / blk_B otherwise); frag_mma the mt x nt mma.sync */
typedef struct BkGpuFrag {
    int t, bs;                /* b read as the transpose of tile t (else -1);
                                 b's shared tile */
    long long K, N;
    bool areg;                /* a from a register value's registers */
    long long xa, xb;         /* row bytes of the xor forms, else 0 */
} BkGpuFrag;
void bk_gpu_mma_frag_plan(const BkGpuEm *em, int id, int v, BkGpuFrag *fr);
void bk_gpu_mma_frag_base(BkGpuEm *em, int id, int v, int j, const BkGpuFrag *fr,
                          const char *name, const char *base);
void bk_gpu_mma_frag_load(BkGpuEm *em, int id, int v, const BkGpuFrag *fr, const char *k,
                          const char *a, const char *b);
void bk_gpu_mma_frag_mma(BkGpuEm *em, int v, const char *ab, const char *a, const char *b);
/* elementwise register value id: per register of its pseudo-var */
void bk_gpu_mma_value(BkGpuEm *em, int id);
/* reduction id along the last axis from a register value's registers:
 * in-lane, then the lanes of a row (shuffles), into its row registers
 * (MROW), else its shared tile */
void bk_gpu_mma_reduce(BkGpuEm *em, int id);
/* the row slot of register R of (pseudo-)var v: which of the lane's rows
 * it is on (CUDA: 2 per m-fragment, rows g and g + 8; HIP: one per
 * element); v = -1 - w: the column slot in w's layout (CUDA: 2 per
 * n-fragment; HIP: 1); *S = the slots per lane */
void bk_gpu_mma_slot(const BkGpuEm *em, int v, const char *R, char *buf, size_t n, int *S);
/* store id of an MMA var.get straight from the registers (the epilogue) */
void bk_gpu_mma_store(BkGpuEm *em, int id);

/* ------------------------------------------------------------ gpu_wgmma.c
 * dots on wgmma.mma_async (CUDA sm_90a) */
/* whether MMA var v takes the warp grid of wgmma's accumulator (every
 * warp whole rows): a dot of its shape qualifies (gpu_layouts.c) */
bool bk_gpu_wgmma_var(const BkGpuEm *em, int v);
/* the dots on wgmma and their operand layouts (wgd, wgl, wgmma), at the
 * end of the layout pass; 0 or -1 */
int bk_gpu_wgmma_plan(BkGpuEm *em);
/* whether fp8 dot id may take the register path, for wgmma alone (the
 * layout pass asks before its layouts exist: both operands loads of their
 * own, b K-major (trans of an [N, K] tile), the wgmma shape) */
bool bk_gpu_wgmma_f8(const BkGpuEm *em, int id);
/* dot id's instruction for text: "m64n64k16 .f32.bf16", "m64n64k32
 * .f32.e4m3.e5m2" */
void bk_gpu_wgmma_name(const BkGpuEm *em, int id, char *buf, size_t n);
/* before the kernel: the inline-asm wrappers of the shapes it uses */
void bk_gpu_wgmma_decls(BkGpuEm *em);
/* dot id into var v's registers (inside gpu_mmadot.c's block, blk_A and
 * blk_B declared): `#if` sm_90a and the wgmma sequence; the caller writes
 * the #else */
void bk_gpu_wgmma_dot(BkGpuEm *em, int id, int v);
/* after FOR fr whose dot keeps a group in flight (em->wga, em->wgk): the
 * wait for it, before anything reads the accumulator */
void bk_gpu_wgmma_drain(BkGpuEm *em, int fr);
/* before ring FOR fr whose register-A dot keeps its group in flight
 * across the back edge (em->wgk): that dot's A registers, live across it */
void bk_gpu_wgmma_keep_decl(BkGpuEm *em, int fr);
/* whether the var.set's dot d is deferred (em->wgq): its rescale is
 * emitted by the next step's q k^T on sm_90a */
bool bk_gpu_wgmma_deferred(const BkGpuEm *em, int d);

/* ------------------------------------------------------------ gpu_mem.c */
/* 128-bit vector width (elements) load/store id may use, or 0 */
int bk_gpu_vec_width(const BkGpuEm *em, int id);
/* decides which loads live in cp.async rings (fills em->pipe; needs pos/end) */
int bk_gpu_pipe_plan(BkGpuEm *em);
/* ring bytes of one slot of pipelined load id */
long long bk_gpu_pipe_slot(const BkGpuEm *em, int id);
/* slots of a ring: stages(S) on CUDA, 2 on HIP (staged through registers) */
int bk_gpu_pipe_slots(const BkGpuEm *em);
/* iterations ring loop fr prefetches ahead: stages - 1, stages - 2 when
 * a wgmma group stays in flight across its steps (em->wga, em->wgk: its
 * slot is not free until the next step's wait_group) */
int bk_gpu_pipe_dist(const BkGpuEm *em, int fr);
void bk_gpu_emit_load(BkGpuEm *em, int id);
void bk_gpu_emit_store(BkGpuEm *em, int id);
/* a pipelined FOR: the prologue before it, the wait/prefetch at its top */
void bk_gpu_pipe_prologue(BkGpuEm *em, int forid);
void bk_gpu_pipe_top(BkGpuEm *em, int forid);
/* at the end of ring FOR fr's body on HIP: the registers staged at its top
 * into the next slot, then the barrier (nothing on CUDA) */
void bk_gpu_pipe_bottom(BkGpuEm *em, int fr);
/* scalar v as C text at the iteration of FOR fr whose induction variable
 * is iv (v must be computable there: the ring loads' indices) */
void bk_gpu_sval(BkGpuEm *em, int v, int fr, const char *iv, char *buf, size_t n);
/* Opens the prefetch of an iteration of FOR fr: `blk_fl = v<base> + ahead`
 * (C text), and when that iteration runs `if (...) {` with blk_fiv, the
 * induction variable's value there, declared; the caller closes the if
 * (em->indent back by one). */
void bk_gpu_pipe_ahead(BkGpuEm *em, int fr, int base, const char *ahead);

/* ------------------------------------------------------------ gpu_tma.c
 * wgmma operand rings filled by TMA (CUDA sm_90a) */
/* which ring (tma, tma_fr), after the wgmma plan; 0 or -1 */
int bk_gpu_tma_plan(BkGpuEm *em);
/* the kernel's tensor maps, in parameter order */
void bk_gpu_tma_info(const BkGpuEm *em, BkGpuKernelInfo *info);
/* the kernel's tensor-map parameters (", const __grid_constant__ ...") */
void bk_gpu_tma_params(BkGpuEm *em);
/* the TMA forms of bk_gpu_pipe_prologue / bk_gpu_pipe_top */
void bk_gpu_tma_prologue(BkGpuEm *em, int forid);
void bk_gpu_tma_top(BkGpuEm *em, int forid);
/* the ring's iteration counter, mbarrier pointers and initialization,
 * then a block barrier (the start of bk_gpu_tma_prologue) */
void bk_gpu_tma_init(BkGpuEm *em, int forid);
/* the boxes of FOR forid's iteration with induction variable `iv` into
 * ring slot `slot` (C text), arrive.expect_tx on blk_tb<forid>[slot] */
void bk_gpu_tma_issue(BkGpuEm *em, int forid, const char *slot, const char *iv);
/* whether load id may be copied by TMA (swizzled wgmma operand, a view
 * and launch facts a tensor map takes); load em->tmaq's boxes, completing
 * blk_tq[0] */
bool bk_gpu_tma_ok(const BkGpuEm *em, int id);
void bk_gpu_tma_issue_q(BkGpuEm *em);

/* ------------------------------------------------------------ gpu_ws.c
 * warp specialization of the TMA ring loop (CUDA sm_90a) */
/* whether (em->ws), at the end of the TMA plan */
void bk_gpu_ws_plan(BkGpuEm *em);
/* blockDim.x: nt, plus the producer warpgroup */
int bk_gpu_threads(const BkGpuEm *em);
/* a block barrier: __syncthreads(), or the consumers' named barrier
 * after the split */
void bk_gpu_bar(BkGpuEm *em);
/* the empty mbarriers' pointer (after blk_tb<forid>); the split after
 * their initialization (the producer's branch, the consumers'
 * setmaxnreg); the top of the consumers' iteration; its end (the release
 * of the previous iteration's slot) */
void bk_gpu_ws_bars(BkGpuEm *em, int forid);
void bk_gpu_ws_split(BkGpuEm *em, int forid);
/* em->ws_top: the mbarriers and the split at the top of the body, the
 * producer's branch with the scalars before the loop */
void bk_gpu_ws_head(BkGpuEm *em);
void bk_gpu_ws_top(BkGpuEm *em, int forid);
void bk_gpu_ws_release(BkGpuEm *em, int forid);
/* the producer's loop over FOR forid's iterations (blk_pj declared):
 * wait for the empty slot, issue the boxes */
void bk_gpu_ws_produce(BkGpuEm *em, int forid);
/* em->ws_top: the producer's copy of the scalars before FOR forid */
void bk_gpu_ws_before(BkGpuEm *em, int forid);

/* ------------------------------------------------------------ gpu_persist.c
 * the persistent grid of a warp-specialized kernel (CUDA sm_90a) */
/* whether (em->persist), at the end of the warp-specialization plan */
void bk_gpu_persist_plan(BkGpuEm *em);
/* the kernel's grid parameters (", const int blk_np0, ...") */
void bk_gpu_persist_params(BkGpuEm *em);
/* the kernel's body: the mbarriers, the split, the producer's and the
 * consumers' tile loops */
void bk_gpu_persist_body(BkGpuEm *em);
/* the producer's tile loop (inside its issuing thread's branch) */
void bk_gpu_persist_produce(BkGpuEm *em, int forid);
/* after the consumers' drain of FOR forid: the last iteration's slot
 * released (and em->pzero's zeros for a tile without iterations) */
void bk_gpu_persist_release(BkGpuEm *em, int forid);
/* the staging tile's bytes of em->tstore (0: none) */
long long bk_gpu_tstore_bytes(const BkGpuEm *em);
/* the TMA-store epilogue of store id (em->tstore), from the registers of
 * MMA var v through the per-register expression x (gpu_mma.c fills the
 * staging tile: bk_gpu_tstore_open / _close around it) */
void bk_gpu_tstore_open(BkGpuEm *em, int id);
void bk_gpu_tstore_close(BkGpuEm *em, int id);
/* the scale-d operand (C text) of wgmma dot id's k step `k` (C text):
 * "1", or for em->pzero's accumulator 0 on the tile's first step */
void bk_gpu_persist_scale_d(const BkGpuEm *em, int id, char *buf, size_t n);
/* the iteration of FOR forid counted from the tile's first (C text, in
 * em->itbuf): "blk_itF", or persistent "blk_itF - blk_firstF" */
const char *bk_gpu_persist_it(BkGpuEm *em, int forid);
/* em->tmaq's load in the consumers' body: its tile and the wait for its
 * boxes */
void bk_gpu_persist_qwait(BkGpuEm *em, int id);

/* ------------------------------------------------------------ gpu_split.c */
/* the split of FOR fr (sp->n compares, 0: emit one loop); whether
 * compare id is emitted as `true` now */
int bk_gpu_split_plan(const BkGpuEm *em, int fr, BkGpuSplit *sp);
bool bk_gpu_split_true(const BkGpuEm *em, int id);

/* ------------------------------------------------------------ gpu_fragpipe.c */
/* the in-place register dot of ring FOR fr whose fragments are
 * double-buffered across the ring's barrier, or -1 (sets em->fp_fr,
 * em->fp_dot when one is) */
int bk_gpu_fragpipe_plan(BkGpuEm *em, int fr);
/* before the loop: the fragment buffers, the first slot's wait and
 * barrier and its first k step's fragments */
void bk_gpu_fragpipe_prologue(BkGpuEm *em, int fr);
/* the dot em->fp_dot, its k steps with the ring's wait and barrier in the
 * last (inside dot_regs' block, blk_A / blk_B declared) */
void bk_gpu_fragpipe_dot(BkGpuEm *em, int id, int v);
/* the ring's wait and barrier of that dot's last k step (also after its
 * FMA form, under the #else of the tensor cores) */
void bk_gpu_fragpipe_wait(BkGpuEm *em);

/* ------------------------------------------------------------ gpu_sync.c */
/* before emitting instruction id: a barrier if its accesses conflict with
 * those since the last barrier (or if it is not an op gpu_sync.c knows) */
void bk_gpu_barrier_before(BkGpuEm *em, int id);
/* a barrier if one was elided (region ends, control flow) */
void bk_gpu_barrier_flush(BkGpuEm *em);
/* records a write of tile id's shared storage by any thread (a layout
 * conversion emitted after the op's own accesses were checked) */
void bk_gpu_note_write(BkGpuEm *em, int id);

/* ------------------------------------------------------------ gpu_prelude.c */
extern const char *const bk_gpu_common_prelude[]; /* NULL-terminated */

/* ------------------------------------------------------------ gpu_print.c */
extern const char *const bk_gpu_print_prelude[]; /* NULL-terminated */
bool bk_gpu_print_tiles(const IrModule *m); /* a print with a tile piece */
void bk_gpu_emit_print(BkGpuEm *em, int id);

/* ------------------------------------------------------------ gpu_ops.c
 * reduce, scan, dot, atomics */
void bk_gpu_emit_reduce(BkGpuEm *em, int id);
/* the registers of SLICE value id to its shared copy, one writer per row
 * (convert slice -> shared) */
void bk_gpu_slice_to_shared(BkGpuEm *em, int id);
void bk_gpu_emit_scan(BkGpuEm *em, int id);
void bk_gpu_emit_dot(BkGpuEm *em, int id);
void bk_gpu_emit_atomic(BkGpuEm *em, int id);

#endif
