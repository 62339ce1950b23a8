/* task.h — the Task tier (LANGUAGE.md §6): a task is compiled for N ranks by
 *   tk_build      AST -> Task IR: a dataflow graph over whole tensors
 *                 (task_ir.c, with the printer and the verifier)
 *   tk_propagate  sharding propagation + insertion of the collectives
 *                 needed where shardings meet (task_shard.c)
 *   tk_place      communication placement by the cost model: plain vs
 *                 overlapped collective, chunk count (task_cost.c, with the
 *                 topologies of topology.c)
 *   tk_lower_src  Task IR -> .blk source of one device function + kernels,
 *                 compiled by the normal pipeline (task_lower.c)
 *   tk_run        scatter full tensors, run on local ranks, gather
 *                 (task_run.c); tk_plan_print: `blkc plan` (task_plan.c).
 * A task with mesh(...) has shardings per mesh axis (TkNode.msh) and runs
 * each pass per axis (docs/task.md "Meshes").
 * Cross-file prefix tk_ (functions), Tk (types). docs/task.md has the
 * design. */
#ifndef BLKC_TASK_H
#define BLKC_TASK_H

#include "ir.h"

/* ------------------------------------------------------------ shardings */
typedef enum { SH_REPL, SH_SPLIT, SH_PARTIAL } TkShKind;
typedef struct TkShard {
    int kind;                      /* TkShKind */
    int dim;                       /* SH_SPLIT: the divided dim */
} TkShard;

/* A task with `mesh(AXIS = SIZE, ...)` runs on a mesh of up to
 * TK_MAX_AXES axes; each value has one TkShard per axis (TkNode.msh).
 * Rank layout: the first axis written is the outermost (varies slowest),
 * as in torch's DeviceMesh: rank = sum of index[k] * stride[k]. */
#define TK_MAX_AXES 3

/* ------------------------------------------------------------ Task IR */
typedef enum {
    TK_PARAM,     /* a tensor parameter (param = index in the task) */
    TK_SCALAR,    /* a scalar parameter (rank 0) */
    TK_CONST,     /* a literal (fval), rank 0 */
    TK_MATMUL,    /* a @ b; 2-D, or batched with a leading batch dim */
    TK_BINARY,    /* a sub b, sub in + - * /, numpy broadcasting */
    TK_UNARY,     /* sub(a): TkFn */
    TK_CAST,      /* a as dtype */
    TK_TRANS,     /* swap the last two dims */
    TK_SOFTMAX,   /* softmax(a, axis) */
    TK_RMSNORM,   /* rmsnorm(a, w = b, eps = c (a TK_CONST or TK_SCALAR)) */
    TK_REDUCE,    /* sum/max(a, axis) (sub = RED_SUM / RED_MAX), axis dropped */
    TK_COMM,      /* a collective: a's sharding `from` -> this node's sh */
    TK_CALL,      /* a call of a kernel / device function of the file
                     (callee = index in prog->funcs; its arguments are
                     t->cargs[carg .. carg + cnargs); the value is the
                     callee's last parameter, written by it) */
    TK_MOE,       /* moe(x, wr, w1, w2, k): a = x [T, H], b = the router
                     wr [H, E] (logits x @ wr), c = w1 [E, H, F],
                     t->cargs[carg] = w2 [E, F, H]; sub = k (top-k); cax =
                     the axis splitting the experts (1-D: 0), -1: none;
                     axis = the one named by `group = AXIS`, -1: none
                     (task_moe.c; docs/task.md "Mixture of experts") */
    TK_OP_COUNT
} TkOp;

typedef enum {
    FN_NEG, FN_RELU, FN_GELU, FN_SILU, FN_EXP, FN_LOG, FN_TANH, FN_SIGMOID,
    FN_SQRT, FN_RSQRT, FN_ABS, FN_COUNT
} TkFn;

typedef enum {
    CM_NONE,           /* same sharding: no code */
    CM_SLICE,          /* replicated -> split(d): local slice, no traffic */
    CM_ALL_GATHER,     /* split(d) -> replicated */
    CM_REDUCE_SCATTER, /* partial -> split(d) */
    CM_ALL_REDUCE,     /* partial -> replicated */
    CM_ALL_TO_ALL,     /* split(a) -> split(b) */
} TkComm;

/* The placement of one collective (task_cost.c). */
typedef enum { PL_PLAIN, PL_AG_GEMM, PL_GEMM_RS, PL_GEMM_AR } TkPlaceKind;
#define TK_MAX_ALTS 8
typedef struct TkAlt {
    int kind;                      /* TkPlaceKind */
    int chunks;                    /* chunks per rank's shard (fused) */
    double us;                     /* predicted time, microseconds */
} TkAlt;

typedef struct TkNode {
    int op;                        /* TkOp */
    int sub;                       /* binary op char, TkFn, IrRedKind */
    int a, b, c;                   /* operand node ids, -1 = none */
    int dtype;                     /* element dtype */
    int rank;                      /* number of dims (0 = scalar) */
    int64_t dims[IR_MAX_RANK];     /* global extents; -1 = not known yet */
    int dsym[IR_MAX_RANK];         /* symbolic size of that dim or -1 */
    int axis;                      /* softmax/reduce axis; COMM: user's dim */
    double fval;                   /* TK_CONST value */
    int param;                     /* TK_PARAM/TK_SCALAR: task param index */
    const char *name;              /* the `let` name, for printing */
    DslLoc loc;                    /* source position */
    TkShard sh;                    /* sharding of the value (after passes) */
    /* TK_COMM */
    int comm;                      /* TkComm (set by tk_propagate) */
    bool user;                     /* written in the source (not inserted) */
    bool reshard;                  /* a reshard(x, ...) (any from-sharding) */
    /* placement (TK_COMM, after tk_place) */
    int place;                     /* TkPlaceKind */
    int chunks;                    /* chunks per shard when fused */
    int gemm;                      /* the fused GEMM node, -1 = none */
    TkAlt alts[TK_MAX_ALTS];       /* every alternative considered */
    int nalts;
    int uses;                      /* consumers (after tk_propagate) */
    /* TK_CALL */
    int callee;                    /* index in the program's funcs */
    int carg, cnargs;              /* its arguments: t->cargs[carg + i] */
    int csplit;                    /* the callee's size index the call is
                                      split over (-1: not split) */
    /* a task on a mesh (TkTask.naxes > 0); `sh` is then unused */
    TkShard msh[TK_MAX_AXES];      /* the sharding on each mesh axis */
    int cax;                       /* TK_COMM: the axis it runs on */
    int mcsplit[TK_MAX_AXES];      /* TK_CALL: csplit on each axis */
} TkNode;

typedef struct TkTask {
    const AstFunc *fn;             /* the task's AST */
    int nranks;                    /* R; 0 while only checking */
    TkNode *n; int nn, cap;        /* nodes in topological order */
    int *results; int nresults;    /* result node ids */
    TkShard *res_sh;               /* declared result shardings */
    const char **syms; int nsyms;  /* symbolic size names */
    int64_t *symval;               /* their values, -1 = unknown */
    bool propagated;               /* shardings valid */
    bool oom;
    const AstProgram *prog;        /* the file (for calls) */
    int *cargs; int ncargs, capcargs; /* TK_CALL arguments (node ids) */
    const char *src; size_t srclen;   /* the file's text: set by the caller
                                         before tk_run when the task calls
                                         kernels / device functions */
    const char *const *defines; int ndefines; /* -D, for the same */
    bool no_fuse;                  /* one kernel per elementwise op
                                      (as BLKC_TASK_FUSE=0; benchmarks) */
    bool megakernel;               /* tk_exec: one tile-task graph per rank
                                      (task_mega.c, runtime/mega.c) */
    struct RtMegaRec *mega_rec;    /* with megakernel: its record, or NULL */
    /* mesh(AXIS = SIZE, ...): naxes = 0 for a task without one (a 1-D
     * mesh of all ranks, shardings in TkNode.sh) */
    int naxes;
    const char *axname[TK_MAX_AXES];  /* in the order written */
    int axsize[TK_MAX_AXES];          /* their sizes */
    int axstride[TK_MAX_AXES];        /* rank stride: the later axes' product */
    TkShard *res_msh;              /* declared result shardings per axis:
                                      res_msh[r * TK_MAX_AXES + k] */
} TkTask;

/* ------------------------------------------------------------ topology */
typedef struct TkTopology {
    char name[64];                 /* preset name or file name */
    int ranks_per_node;            /* GPUs on one node's fast fabric */
    double link_gbs;               /* per-GPU bandwidth, one direction, GB/s */
    double link_eff;               /* achievable fraction of link_gbs */
    double link_lat_us;            /* per message/step latency, us */
    double net_gbs;                /* between nodes, per GPU, GB/s */
    double net_lat_us;             /* between nodes, us */
    double tflops_bf16;            /* dense peak, TFLOP/s (f16 same) */
    double tflops_f32;             /* f32 peak (TF32 off), TFLOP/s */
    double gemm_eff;               /* achievable fraction of peak, big GEMM */
    double hbm_gbs;                /* device memory bandwidth, GB/s */
    int sms;                       /* compute units (wave quantization) */
    int tile_m, tile_n;            /* GEMM tile of the fused kernels */
    double launch_us;              /* kernel launch / setup overhead */
    double chunk_us;               /* per-chunk signal+wait overhead, fused */
    double overlap_slowdown;       /* GEMM slowdown while comm shares HBM/SMs */
    char source[1024];             /* where the numbers come from */
    char axis_net[128];            /* mesh axes forced onto the network
                                      between nodes: "dp,pp" (file key) */
    char axis_link[128];           /* mesh axes forced onto the node's link */
} TkTopology;

/* A preset by name (h100-nvl8, h200-nvl8, h800-nvl8, mi300x, pcie,
 * this-cpu), else a key=value file. 0, or -1 with a message. */
int tk_topology_get(const char *name_or_file, TkTopology *t, char *err,
                    size_t errlen);
const char *tk_topology_presets(void); /* "h100-nvl8, ..." */

/* ------------------------------------------------------------ cost model */
double tk_cost_gemm_us(const TkTopology *t, int dtype, int64_t batch,
                       int64_t m, int64_t n, int64_t k);
/* A plain collective on R ranks; bytes = the full (gathered / reduced)
 * buffer of one rank. */
double tk_cost_coll_us(const TkTopology *t, int comm, int ranks,
                       double bytes);
/* AllGather+GEMM fused: A gathered rows (m total, m/R per rank), B local
 * [k, n], `chunks` per shard. */
double tk_cost_ag_gemm_us(const TkTopology *t, int dtype, int ranks,
                          int64_t m, int64_t n, int64_t k, int chunks);
/* GEMM+ReduceScatter fused: partial [m, n] of a local-K GEMM scattered by
 * rows. `all_reduce` adds the all-gather of the result (GEMM+AllReduce). */
double tk_cost_gemm_rs_us(const TkTopology *t, int dtype, int ranks,
                          int64_t m, int64_t n, int64_t k, int chunks,
                          bool all_reduce);

/* ------------------------------------------------------------ passes */
/* task_ir.c: the Task IR of task `fn` of `prog`. Sizes come from
 * `sizes` ("NAME=VALUE" strings, may be NULL) and module consts; -D
 * defines override consts. Errors go to diags; NULL on any error. */
TkTask *tk_build(const AstProgram *prog, const AstFunc *fn, int nranks,
                 const char *const *defines, int ndefines,
                 const char *const *sizes, int nsizes, DslDiags *diags);
void tk_free(TkTask *t);
int tk_add_node(TkTask *t, const TkNode *n);  /* id or -1 (oom) */
void tk_print(DslBuf *out, const TkTask *t);  /* --emit=task */
int tk_verify(const TkTask *t, char *err, size_t errlen);
const char *tk_op_name(int op);
const char *tk_comm_name(int comm);
const char *tk_fn_name(int fn);
const char *tk_place_name(int place);
void tk_shard_str(TkShard s, char *buf, size_t n);
/* n's sharding as text: tk_shard_str of n->sh, or on a mesh the axes that
 * are not replicated: "split(0, dp) partial(tp)" ("replicated" if none).
 * msh = NULL: n's own; else that per-axis array (a declared result). */
void tk_msh_str(const TkTask *t, const TkNode *n, const TkShard *msh, char *buf,
                size_t len);
/* Does mesh axis k use the network between nodes (net_gbs, net_lat_us)
 * rather than the node's link (task_cost.c)? Named in axis_net /
 * axis_link, else when its group spans more than ranks_per_node ranks
 * (size > 1 and stride * size > ranks_per_node). */
bool tk_axis_crosses_nodes(const TkTask *t, const TkTopology *topo, int k);
/* The bytes of a collective as tk_cost_coll_us takes them (the full
 * buffer of one rank of its group; all_to_all: one rank's shard). */
double tk_comm_bytes(const TkTask *t, const TkNode *n);
void tk_type_str(const TkTask *t, const TkNode *n, char *buf, size_t len);
int64_t tk_local_dim(const TkTask *t, const TkNode *n, int d);
int64_t tk_numel(const TkNode *n);
/* Is `dim` (a dim of a callee's parameter) a size name, not a constant? */
bool tk_dim_is_size(const TkTask *t, const Ast *dim);

/* task_moe.c: the mixture-of-experts op (docs/task.md "Mixture of
 * experts"). tk_moe_check: the shapes and dtypes of moe's operands (node
 * ids) and k (0, or -1 with a message in err). tk_moe_cost_us: its predicted time
 * (dispatch, experts, combine; each part in parts[3] when not NULL).
 * tk_moe_plan: its `blkc plan` lines. tk_moe_lower: its kernels (into
 * kb) and device code (into db); buf = the device function's buffer name
 * of each node. */
int tk_moe_check(const TkTask *t, int x, int wr, int w1, int w2, int k, char *err,
                 size_t errlen);
double tk_moe_cost_us(const TkTask *t, const TkTopology *topo, int id, double *parts);
void tk_moe_plan(DslBuf *o, const TkTask *t, const TkTopology *topo, int id, bool json);
int tk_moe_lower(const TkTask *t, int id, const char *const *buf, DslBuf *kb, DslBuf *db,
                 char *err, size_t errlen);

/* task_shard.c: propagate shardings, insert collectives. */
int tk_propagate(TkTask *t, DslDiags *diags);

/* task_cost.c: choose plain vs overlapped forms and chunks. `force`:
 * 0 by cost, 1 always overlap when possible, -1 never. */
int tk_place(TkTask *t, const TkTopology *topo, int force);
double tk_node_cost_us(const TkTask *t, const TkTopology *topo, int id);

/* task_plan.c: `blkc plan` text / JSON. */
void tk_plan_print(DslBuf *out, const TkTask *t, const TkTopology *topo,
                   bool json);

/* task_lower.c: .blk source of device function `__task_NAME` + kernels. */
int tk_lower_src(const TkTask *t, DslBuf *out, char *err, size_t errlen);
/* Elementwise fusion (task_lower.c): root[i] = the node whose generated
 * kernel computes node i (i itself unless i is an elementwise value with
 * one use that is fused into its elementwise consumer's kernel). `root`
 * has t->nn entries. Off with t->no_fuse or BLKC_TASK_FUSE=0. */
void tk_fuse_roots(const TkTask *t, int *root);

/* Check a task as part of ir_lower (no ranks, symbolic sizes). */
void tk_check(const AstProgram *prog, const AstFunc *fn,
              const char *const *defines, int ndefines, DslDiags *diags);

/* task_run.c: run a compiled task. Tensors are full (unsharded), C order,
 * in the declared dtype; scalars by value. results[i] receives result i
 * (allocated by the caller with the result's full shape). */
typedef struct TkArg {
    void *data;                    /* tensor data (full), or NULL */
    int64_t shape[IR_MAX_RANK];    /* its extents */
    IrScalarVal scalar;            /* scalar params */
} TkArg;
int tk_run(const TkTask *t, const TkArg *args, TkArg *results, char *err,
           size_t errlen);
/* tk_run in two steps, to run a compiled task several times (--bench,
 * benchmarks): lower + compile + JIT once, then execute. The task must
 * outlive the compiled form. */
typedef struct TkCompiled TkCompiled;
TkCompiled *tk_compile(const TkTask *t, char *err, size_t errlen);
int tk_exec(TkCompiled *c, const TkArg *args, TkArg *results, char *err,
            size_t errlen);
void tk_compiled_free(TkCompiled *c);

/* CLI helpers (task_run.c): the task named `entry` (or, without entry,
 * the single task; NULL with err set when there are several; NULL with
 * err empty when there is none); the task's signature as an IrFunc (full
 * tensor params, scalars, then results named result / result0, ...). */
const AstFunc *tk_pick_task(const AstProgram *prog, const char *entry, char *err,
                            size_t errlen);
IrFunc *tk_signature(const TkTask *t);
void tk_signature_free(IrFunc *f);

/* What `blkc run` / `blkc plan` and libblkc's blkc_task_* share: the Task
 * IR of task `fn` for `nranks` ranks with every size bound (`sizes`:
 * "NAME=VALUE"), shardings propagated, collectives placed on `topo` with
 * `force` (tk_place). `src` is the file's text (for calls of its kernels).
 * Under mpirun results are made replicated (rank 0 holds them whole).
 * NULL on error: diagnostics in diags, or (diags without errors) a
 * message in err (an unbound size, out of memory). */
TkTask *tk_prepare(const AstProgram *prog, const AstFunc *fn, int nranks,
                   const char *const *defines, int ndefines,
                   const char *const *sizes, int nsizes, const char *src,
                   size_t srclen, const TkTopology *topo, int force,
                   DslDiags *diags, char *err, size_t errlen);

/* Megakernel mode (task_mega.c): `blkc plan --megakernel` appends the
 * tile-task graph of t (compiled and run once on zero inputs on local CPU
 * ranks to build it) to out. Returns 0, or -1 with err. */
int tk_mega_plan(DslBuf *out, TkTask *t, char *err, size_t errlen);

/* The environment variable that forces placement in tests:
 * BLKC_TASK_OVERLAP=always|never (unset: by cost). */
int tk_force_from_env(void);

#endif
