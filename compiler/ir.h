/* ir.h — the Core IR: typed SSA over static-shaped tiles for one program
 * instance, with structured control flow; plus the pipeline's entry points.
 *
 * Shape of the IR (QBE-like: indices into arrays, no pointer webs):
 *   IrModule  -> IrFunc[]  (one per kernel, compile-time params substituted)
 *   IrFunc    -> ins[]     (every instruction; value id == instruction index)
 *             -> regions[] (ordered lists of instruction ids)
 *             -> views[]   (index descriptions used by LOAD/STORE/ATOMIC)
 *             -> params[], syms[], vars[]
 * Region 0 is the kernel body; `grid_region` computes the launch grid.
 * An instruction belongs to exactly one region. A value may be used only in
 * its own region (after its definition) or in regions nested inside it.
 *
 * Invariants after the pipeline (checked by ir_verify with IR_VERIFY_FINAL):
 *   - every F_ELEM op's tile operands have exactly the result's shape; scalar
 *     (rank 0) operands are allowed and broadcast;
 *   - binary operands share a dtype (comparisons: operand dtype; result bool);
 *   - STORE/ATOMIC values have the view's shape and the tensor's dtype;
 *   - LOAD/STORE/ATOMIC masks have the view's shape or are bool scalars.
 * Cross-file prefix: ir_ (functions), Ir (types). */
#ifndef BLKC_IR_H
#define BLKC_IR_H

#include "../dsl/dsl.h"

#define IR_MAX_RANK DSL_MAX_RANK

enum {
#define OP(e, n, k, f) IR_##e,
#include "ops.def"
#undef OP
    IR_OP_COUNT
};

enum { F_PURE = 1, F_ELEM = 2, F_REGION = 4, F_TERM = 8, F_DEV = 16 };
extern const char *const ir_op_names[IR_OP_COUNT];
extern const int ir_op_nopnd[IR_OP_COUNT];
extern const int ir_op_flags[IR_OP_COUNT];

typedef enum { RED_SUM, RED_MAX, RED_MIN, RED_ARGMAX, RED_ARGMIN } IrRedKind;
/* The op of a reducing collective (IR_COLL's axis field): RED_SUM,
 * RED_MAX, RED_MIN, or these two, which Core reductions do not have. The
 * values are the runtime's RT_RED_* (runtime/ranks.h). */
enum { IR_COLL_PROD = 3, IR_COLL_AVG = 4 };
typedef enum { ATOM_ADD, ATOM_MAX, ATOM_MIN, ATOM_XCHG, ATOM_CAS,
               ATOM_AND, ATOM_OR, ATOM_XOR /* integers (§7) */ } IrAtomKind;
typedef enum {
    COLL_ALL_REDUCE, COLL_ALL_GATHER, COLL_REDUCE_SCATTER, COLL_ALL_TO_ALL,
    COLL_BROADCAST, COLL_BARRIER,
    COLL_REDUCE, COLL_GATHER, COLL_SCATTER, /* to / from a root rank */
    COLL_SEND, COLL_RECV, /* inside an IR_XCHG region; opnd0 = the peer */
} IrCollKind;

/* A value's type: a scalar (rank 0) or a tile with a static shape. */
typedef struct IrType {
    uint8_t dtype;                /* DslDtype; DT_VOID for no result */
    uint8_t rank;                 /* 0 = scalar */
    int32_t shape[IR_MAX_RANK];   /* extents, each >= 1 */
} IrType;

/* One index of a view, per tensor dim. */
typedef enum {
    IDX_SCALAR, /* coordinate = value `val` (int scalar); dim dropped */
    IDX_RANGE,  /* coordinates val .. val+len-1 (val int scalar); adds [len] */
    IDX_TILE,   /* coordinates = int tile `val`; adds the tile's shape */
} IrIdxKind;

typedef struct IrView {
    int ndims;                    /* == the tensor's rank */
    struct {
        uint8_t kind;             /* IrIdxKind */
        int32_t val;              /* value id (start / coordinate / tile) */
        int32_t len;              /* IDX_RANGE: static length; 0 = dynamic
                                     (device functions only): see lenv */
        int32_t lenv;             /* value id of a dynamic length */
    } d[IR_MAX_RANK];
} IrView;                         /* the view's shape is the concatenation */

typedef struct IrInstr {
    uint16_t op;                  /* IR_* */
    IrType type;                  /* result type (DT_VOID if none) */
    DslLoc loc;                   /* .blk source position */
    int32_t opnd[4];              /* operand value ids, -1 = absent */
    uint8_t nopnd;                /* operands used (YIELD: 1..3) */
    int32_t param;                /* PARAM/SIZE/LOAD/STORE/ATOMIC: param idx;
                                     VGET/VSET: var idx */
    int32_t attr;                 /* SIZE dim, PID/NPROG axis, IrRedKind,
                                     IrAtomKind */
    int32_t axis;                 /* REDUCE/SCAN axis (-1 = all) */
    int32_t view;                 /* LOAD/STORE/ATOMIC: index in views */
    int32_t region[2];            /* FOR/IF/WHILE regions, -1 = none */
    int64_t ival;                 /* CONST int/bool value; ARANGE start */
    double fval;                  /* CONST float value */
    uint8_t perm[IR_MAX_RANK];    /* PERMUTE: result dim i = operand perm[i] */
    bool dead;                    /* removed by a pass (skipped everywhere) */
    int32_t xparam[2], xview[2];  /* COPY: source and signal; COLL: source */
    int32_t xoff, xn;             /* LAUNCH: its args in IrFunc.extra */
} IrInstr;

typedef struct IrRegion {
    int32_t *ins;                 /* instruction ids in execution order */
    int n, cap;                   /* used / allocated */
    int parent;                   /* enclosing region, -1 for roots */
} IrRegion;

typedef enum { PK_TENSOR, PK_SCALAR } IrParamKind;
typedef enum {
    MEM_GLOBAL,     /* ordinary tensor argument */
    MEM_SYMMETRIC,  /* on the symmetric heap: peer(T, r) reaches rank r's */
    MEM_SIGNAL,     /* signal[n]: u64 cells on the symmetric heap */
} IrMemKind;
typedef enum { SIG_SET, SIG_ADD } IrSigOp;
typedef enum { WAIT_GE, WAIT_EQ } IrWaitCmp;

typedef struct IrParam {
    const char *name;             /* source name */
    uint8_t kind;                 /* IrParamKind */
    uint8_t dtype;                /* element / scalar dtype */
    uint8_t rank;                 /* tensor rank; 0 for scalars */
    int64_t dims[IR_MAX_RANK];    /* static extent, or -1 - sym id (symbolic) */
    bool written;                 /* tensor is stored to / atomically updated */
    uint8_t mem;                  /* IrMemKind of a tensor param */
    bool local;                   /* device functions: a buffer made by
                                     ALLOC, not a parameter */
    uint32_t assume;              /* specialization: IR_ASSUME_* facts the
                                     launch guarantees of this tensor
                                     argument (0 = none; backends may use
                                     them, e.g. to drop stride multiplies) */
} IrParam;

/* IrParam.assume bits (compiler/cache.c computes them from arguments) */
#define IR_ASSUME_ALIGN16 (1u << 0)      /* data pointer 16-byte aligned */
#define IR_ASSUME_UNIT_INNER (1u << 1)   /* innermost stride is 1 */
#define IR_ASSUME_DIM16(d) (1u << (2 + (d)))  /* extent of dim d % 16 == 0 */
#define IR_ASSUME_STRIDE16(d) (1u << (2 + IR_MAX_RANK + (d))) /* stride % 16 */

typedef struct IrSym {
    const char *name;             /* symbolic size name (M, N, ...) */
    int param, dim;               /* first tensor param/dim that binds it */
} IrSym;

typedef struct IrVar {
    const char *name;             /* source name */
    IrType type;                  /* type of the slot */
} IrVar;

typedef struct IrFunc {
    const char *name;             /* kernel name (C identifier) */
    DslLoc loc;                   /* of the kernel name */
    IrParam *params; int nparams; /* runtime parameters, in source order */
    IrSym *syms; int nsyms;       /* symbolic sizes */
    IrVar *vars; int nvars;       /* mutable slots */
    IrInstr *ins; int nins, cap_ins;       /* all instructions */
    IrRegion *regions; int nregions, cap_regions; /* region 0 = body */
    IrView *views; int nviews, cap_views;  /* views used by memory ops */
    int grid_region;              /* scalar ops ending in YIELD(g0[,g1,g2]) */
    bool is_device;               /* a device function (Device IR), run by
                                     the runtime's plan interpreter; the
                                     code generators skip it */
    int32_t *extra; int nextra, cap_extra; /* operand lists (LAUNCH args) */
    int64_t frame_bytes;          /* upper bound of the tile storage one
                                     program instance keeps on the stack
                                     (set by the pipeline; lets a launcher
                                     run a one-instance grid on its own
                                     thread when that thread has room) */
    int warps;                    /* warps(W), default 4 */
    int stages;                   /* stages(S), default 2 */
    /* the compile-time parameter values this function was built with,
     * for printing and cache keys */
    const char **cparam_names; int64_t *cparam_vals; int ncparams;
    const char *file;             /* source file name (assert messages) */
    const char **msgs; int nmsgs; /* ASSERT messages (module arena) */
} IrFunc;

typedef struct IrModule {
    DslArena arena;               /* names and other small strings */
    IrFunc **funcs; int nfuncs;   /* kernels, in source order */
} IrModule;

/* ------------------------------------------------------------ ir.c */
IrModule *ir_module_new(void);
void ir_module_free(IrModule *m);
IrFunc *ir_func_new(IrModule *m, const char *name);     /* appended to m */
int ir_region_new(IrFunc *f, int parent);                /* returns id */
/* Append an instruction to region `r`; returns its id (== value id) or -1
 * on out-of-memory. Operands not given are -1, regions -1, view -1. */
int ir_emit(IrFunc *f, int r, int op, IrType type, DslLoc loc);
int ir_view_new(IrFunc *f, const IrView *v);
int ir_extra_push(IrFunc *f, int32_t x);                  /* index or -1 */
int ir_msg_add(IrModule *m, IrFunc *f, const char *s);   /* index or -1 */
IrType ir_scalar(int dtype);
IrType ir_tile(int dtype, int rank, const int32_t *shape);
int64_t ir_numel(const IrType *t);
bool ir_type_eq(const IrType *a, const IrType *b);
bool ir_shape_eq(const IrType *a, const IrType *b);
/* 1 when a program's linear index should run grid axis 1 fastest (the
 * CPU backend's order, see ir.c), else 0 */
int ir_grid_fast_axis(const IrFunc *f);
void ir_view_shape(const IrFunc *f, const IrView *v, IrType *out); /* shape only */
void ir_type_str(const IrType *t, char *buf, size_t n);   /* "f32[64, 64]" */
void ir_print_func(DslBuf *out, const IrFunc *f);
/* ir_print_func with a note per instruction (notes[id], may be NULL or "")
 * printed as ` @ NOTE` after its type, and per var (var_notes[v]); either
 * array may be NULL (the GPU backends' --emit=gpu-ir) */
void ir_print_func_notes(DslBuf *out, const IrFunc *f, const char *const *notes,
                         const char *const *var_notes);
void ir_print_module(DslBuf *out, const IrModule *m);
/* For passes that replace values: repl[v] is v's replacement (v itself if
 * none), possibly chained. ir_resolve follows v to its end; ir_rewrite_uses
 * rewrites in's operands and its view's index values through repl. */
int ir_resolve(const int32_t *repl, int v);
void ir_rewrite_uses(IrFunc *f, IrInstr *in, const int32_t *repl);

/* ------------------------------------------------------------ verify.c */
enum { IR_VERIFY_FINAL = 1 };
/* Returns 0 if well-formed, else writes "internal: ..." into err. */
int ir_verify(const IrFunc *f, int flags, char *err, size_t errlen);

/* ------------------------------------------------------------ eval.c */
/* Host-side evaluation of the grid region (every backend's launcher uses
 * it). scalars[p] holds scalar param p (ints as .i, floats as .f);
 * shapes[p][d] the extent of dim d of tensor param p. */
typedef union { int64_t i; double f; } IrScalarVal;
typedef struct IrLaunchEnv {
    const IrScalarVal *scalars;          /* indexed by param */
    const int64_t (*shapes)[IR_MAX_RANK]; /* indexed by param */
    int32_t rank, world;                 /* rank() and world() in the grid;
                                            world <= 0: a launch outside a
                                            world (rank 0 of 1) */
} IrLaunchEnv;
/* Returns 0 with grid[0..2] set (missing axes are 1), or -1 with a user
 * facing message in err (e.g. a negative grid extent). */
int ir_eval_grid(const IrFunc *f, const IrLaunchEnv *env, int64_t grid[3],
                 char *err, size_t errlen);
/* Evaluate one scalar instruction (the grid region's op set plus PARAM and
 * SIZE) into vals[id], its operands already in vals. The device-function
 * interpreter uses it. */
int ir_eval_instr(const IrFunc *f, int id, const IrLaunchEnv *env,
                  IrScalarVal *vals, char *err, size_t errlen);

/* ------------------------------------------------------------ scalar.c */
/* The scalar semantics of kernel code, shared by eval.c and fold.c: ints
 * wrap at their dtype's width (two's complement; bools are 0/1), f16/bf16
 * arithmetic is done in f32 and rounded to nearest even after each op,
 * float->int truncates. Ints are held in .i (normalized to the dtype),
 * floats in .f (exactly representable in the dtype), bools in .i. */
typedef enum {
    IR_SCALAR_OK,
    IR_SCALAR_UNSUPPORTED, /* op not modelled on that dtype; *r undefined */
    IR_SCALAR_DIV_ZERO,    /* int x/0 or x%0; *r = 0, as kernel code gives */
    IR_SCALAR_UNSPEC,      /* the runtime leaves the result unspecified
                              (float->int out of range, max/min of +0 and
                              -0); *r holds a deterministic pick */
} IrScalarStatus;
int64_t ir_scalar_wrap(int dt, uint64_t u);   /* to dt, extended to 64 */
double ir_scalar_round(int dt, double x);     /* to float dtype dt (not f8) */
IrScalarVal ir_scalar_const(const IrInstr *c); /* a CONST's value, normalized */
bool ir_scalar_is_cmp(int op);                /* IR_EQ .. IR_GE */
/* CVT of v from dtype `from` to dtype `to`. */
IrScalarStatus ir_scalar_cvt(int from, int to, IrScalarVal v, IrScalarVal *r);
/* Elementwise op on operands a[] of dtype dt (a[2] read by FMA only); the
 * result has dtype dt (bool for comparisons). */
IrScalarStatus ir_scalar_op(int op, int dt, const IrScalarVal *a,
                            IrScalarVal *r);

/* ------------------------------------------------------------ passes */
/* Each pass: one file, one entry; returns 0 or -1 (internal error in err). */
int ir_pass_bcast(IrFunc *f, char *err, size_t errlen);   /* bcast.c */
int ir_pass_fold(IrFunc *f, char *err, size_t errlen);    /* fold.c */
int ir_pass_cse(IrFunc *f, char *err, size_t errlen);     /* cse.c (+DCE) */

/* ------------------------------------------------------------ lower.c */
/* Check and lower every kernel of `prog` to Core IR. Compile-time params
 * and consts take `defines` ("NAME=VALUE") over defaults. Diagnostics go to
 * diags; returns NULL on any error. */
IrModule *ir_lower(const AstProgram *prog, DslDiags *diags,
                   const char *const *defines, int ndefines);

/* ------------------------------------------------------------ pipeline.c */
/* The whole pipeline in one place: parse -> check/lower -> passes.
 * `stop_after_ast` returns after parsing with *ast_out set. */
typedef struct IrTiming { double parse_ms, lower_ms, passes_ms; } IrTiming;
IrModule *ir_compile_source(const DslSource *src, DslDiags *diags,
                            const char *const *defines, int ndefines,
                            IrTiming *timing);

/* internal-error route for compiler bugs (never user input) */
#define IR_BUG(err, errlen, ...)                                      \
    ir_bug(err, errlen, __FILE__, __LINE__, __VA_ARGS__)
int ir_bug(char *err, size_t errlen, const char *file, int line,
           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
