/* task_lower.h — private to the task lowering (task_lower.c: the driver,
 * the kernels; task_comm.c: the collectives): the lowering's state and the
 * helpers both use. Prefix tl_. */
#ifndef BLKC_TASK_LOWER_H
#define BLKC_TASK_LOWER_H

#include "task.h"

typedef struct L {
    const TkTask *t;
    DslBuf *k;                     /* kernels */
    DslBuf *d;                     /* device body */
    int R;
    const char **buf;              /* per node: buffer name in the device fn */
    char (*names)[32];
    const int *root;               /* tk_fuse_roots */
    int ax;                        /* the mesh axis of the collective being
                                      lowered (R is its size), -1: none */
} L;

/* kernel forms of a GEMM: whole, rows [row0, row0 + CH) only, or waiting
 * for ready[row / CH] starting at this rank's shard */
typedef enum { G_PLAIN, G_ROWS, G_WAIT } GemmKind;

static inline int64_t tl_ld(const L *l, const TkNode *n, int d) { return tk_local_dim(l->t, n, d); }
static inline const char *tl_ctype(int dt) { return dt == DT_F64 ? "f64" : "f32"; }
static inline int64_t tl_imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* task_lower.c */
void tl_full_view(L *l, DslBuf *o, const char *name, const TkNode *n);  /* name[0 +: d0, ...] */
void tl_local_type(L *l, DslBuf *o, const TkNode *n);                   /* f32[a, b] */
void tl_alloc(L *l, int id, const char *kind);      /* let buf = kind(dtype, dims) */
/* kernel __kID<suffix>: C = A @ B on the local shards (GemmKind above;
 * ch: rows per chunk, nsig: the signals of G_WAIT) */
void tl_kernel_gemm(L *l, int id, GemmKind gk, const char *suffix, int64_t ch, int64_t nsig);

/* task_comm.c: collective `id` (plain, or GEMM+ReduceScatter/AllReduce),
 * and AllGather+GEMM of comm node c into GEMM node g */
void tl_comm(L *l, int id);
void tl_ag_gemm(L *l, int c, int g);

#endif
