/* lower.h — private interface between the lowering's files: lower.c
 * (kernels, statements, scopes, compile-time values) and lower_expr.c
 * (expressions, promotion, views, builtins). Prefix lw_. */
#ifndef BLKC_LOWER_H
#define BLKC_LOWER_H

#include "ir.h"

/* A compile-time value (consts, cparams, literals, folded expressions). */
typedef struct LwConst {
    int dtype;        /* DT_BOOL, DT_I32, DT_I64, DT_F32 (or any, after casts) */
    int64_t i;        /* ints and bools */
    double f;         /* floats */
} LwConst;

#define LW_MAX_RESULTS 8  /* most results of a helper or builtin */
#define LW_MAX_INLINE 32  /* deepest nesting of inlined helper calls */

/* The result of lowering an expression. */
typedef struct LwVal {
    int id;           /* IR value id; -1 while the value is compile-time only */
    IrType type;      /* dtype and shape */
    bool weak;        /* a literal or compile-time constant: takes the other
                         operand's dtype when of the same kind or lower */
    LwConst c;        /* the value when id < 0 */
    bool bad;         /* an error was reported; suppress follow-up errors */
} LwVal;

typedef enum { SYM_CONST, SYM_TENSOR, SYM_SCALAR, SYM_SIZE, SYM_LET, SYM_VAR }
    LwSymKind;

typedef struct LwSym {
    const char *name; /* source name */
    LwSymKind kind;   /* what the name denotes */
    LwConst c;        /* SYM_CONST */
    int index;        /* param index (TENSOR/SCALAR), sym index (SIZE), var */
    int id;           /* SYM_LET / SYM_SCALAR / SYM_SIZE: IR value id */
    IrType type;      /* SYM_LET value type */
    DslLoc loc;       /* declaration */
    bool is_let;      /* SYM_CONST made by a compile-time `let` */
} LwSym;

typedef struct LwScope {
    struct LwScope *up; /* enclosing scope */
    LwSym *syms;        /* arena-allocated, grows by doubling */
    int n, cap;
} LwScope;

typedef struct Lw {
    DslDiags *diags;      /* where errors go */
    DslArena *arena;      /* scratch for this compilation */
    IrModule *mod;        /* module being built */
    const AstProgram *prog; /* the whole program (device function calls) */
    IrFunc *f;            /* kernel being built (NULL for const eval) */
    const AstFunc *fn;    /* its AST */
    LwScope *scope;       /* innermost scope */
    int region;           /* region receiving new instructions */
    bool in_grid;         /* lowering the grid(...) clause */
    bool device;          /* lowering a device function */
    int in_async;         /* nesting of async { } blocks (device functions):
                             collectives are rejected there */
    int in_exchange;      /* inside exchange { }: send/recv allowed, other
                             collectives and return not */
    int depth;            /* loop nesting, for limits */
    bool oom;             /* allocation failed */
    LwScope *global;      /* module constants: a helper's scope hangs here */
    /* several results of the last call (helpers, unjoin, topk, reduce of a
     * tuple): multi[0..nmulti), kept only for `let a, b = f(x);` */
    LwVal multi[LW_MAX_RESULTS];
    int nmulti;
    bool want_multi;      /* the call being lowered is a `let a, b =` RHS */
    const AstFunc *inl[LW_MAX_INLINE]; /* helpers being inlined, outermost
                                          first (recursion check) */
    int ninl;             /* entries in inl */
    bool ret_ok;          /* lowering a helper's final `return` */
    LwVal hret[LW_MAX_RESULTS]; /* that return's values */
    int nhret;            /* how many (-1: not returned yet) */
} Lw;

/* lower.c */
LwSym *lw_lookup(Lw *L, const char *name);
LwSym *lw_declare(Lw *L, const char *name, LwSymKind kind, DslLoc loc);
int lw_emit(Lw *L, int op, IrType type, DslLoc loc);
void lw_block_in_region(Lw *L, const Ast *b, int region);
int lw_new_region(Lw *L);

/* lower_device.c */
int lw_dim_value(Lw *L, int param, int dim, DslLoc loc); /* i64 extent id */
bool lw_dev_is_alloc(const Ast *e);
bool lw_dev_is_call(const Ast *e);
void lw_dev_alloc(Lw *L, const Ast *st);    /* let b = empty/symmetric/signals */
void lw_dev_call(Lw *L, const Ast *e);      /* copy, collectives, barrier */
/* group(color, key) (op IR_GROUP, 2 args), rank(g) / world(g) (IR_GRANK /
 * IR_GWORLD, 1 arg): an i32 value */
LwVal lw_dev_group_op(Lw *L, int op, const Ast *const *args, int n, DslLoc loc);
void lw_dev_stmt(Lw *L, const Ast *st);     /* launch, async, sync */
const AstFunc *lw_dev_callee(const Lw *L, const Ast *e); /* device fn called */
void lw_dev_callfn(Lw *L, const Ast *e, const AstFunc *g); /* g(args); */
void lw_dev_check_recursion(const AstProgram *prog, DslDiags *diags);
void lw_dev_resolve_calls(IrModule *m, const AstProgram *prog);

/* lower_dims.c: a tensor dim written as an expression, lowered once the
 * parameters' scalars and sizes are known */
typedef struct LwDimExpr {
    int param, dim;    /* which extent */
    const Ast *e;      /* its expression */
} LwDimExpr;
void lw_dim_exprs(Lw *L, const LwDimExpr *dx, int ndx);

/* lower_expr.c */
LwVal lw_expr(Lw *L, const Ast *e);
LwVal lw_bad(void);
int lw_materialize(Lw *L, LwVal *v, DslLoc loc);      /* IR id for v */
LwVal lw_convert(Lw *L, LwVal v, int dtype, DslLoc loc);
bool lw_const_int(Lw *L, const Ast *e, const char *what, int64_t *out);
LwVal lw_binary(Lw *L, int op, LwVal a, LwVal b, DslLoc loc);
bool lw_broadcast_shape(const IrType *a, const IrType *b, IrType *out);
int lw_view(Lw *L, const Ast *e, int *param_out, IrType *shape_out,
            int *peer_out);
LwSym *lw_tensor_of(Lw *L, const Ast *e);
LwVal lw_store_value(Lw *L, LwVal v, int dtype, const IrType *shape,
                     DslLoc loc);
bool lw_check_tile(Lw *L, const IrType *t, DslLoc loc);
void lw_stmt_call(Lw *L, const Ast *e);  /* expression statement */
LwVal lw_cval(int dtype, int64_t i, double f, bool weak);
LwVal lw_ival(int id, IrType t);
bool lw_is_const(const LwVal *v);
int lw_promote(const LwVal *a, const LwVal *b);
LwVal lw_unary(Lw *L, int op, LwVal v, DslLoc loc);
LwVal lw_load(Lw *L, const Ast *view, const Ast *pad, const Ast *mask,
              DslLoc loc);
void lw_store(Lw *L, const Ast *view, LwVal val, const Ast *mask, DslLoc loc);

int lw_mask(Lw *L, const Ast *m, const IrType *shape); /* -2 on error */

/* builtins.c */
LwVal lw_call(Lw *L, const Ast *e);      /* one result (see multi) */
LwVal lw_builtin(Lw *L, const Ast *e);   /* the table of §4; unknown names
                                            go to lw_call2 */

/* builtins2.c: the builtins of LANGUAGE.md §7 (math and bits, Philox,
 * static_assert, keep_dims, histogram) */
bool lw_call2(Lw *L, const Ast *e, LwVal *out); /* false: not one of them */
bool lw_flag_arg(Lw *L, const Ast *e, const char *what, bool *out);
/* a compile-time axis in -rank .. rank-1, normalized to 0 .. rank-1 */
bool lw_axis_arg(Lw *L, const Ast *e, int rank, int *axis);
LwVal lw_select(Lw *L, LwVal c, LwVal a, LwVal b, DslLoc loc); /* where() */
LwVal lw_cumop(Lw *L, const Ast *x, const Ast *axis, bool prod, bool reverse,
               DslLoc loc);             /* cumsum/cumprod (reverse) */

/* lower_fn.c: helper functions (`fn`), inlined at the call */
const AstFunc *lw_helper(const Lw *L, const char *name);
LwVal lw_inline(Lw *L, const Ast *e, const AstFunc *h);
int lw_inline_vals(Lw *L, const AstFunc *h, const LwVal *args, int n,
                   DslLoc loc, LwVal *res); /* results in res; -1 on error */
void lw_check_helpers(Lw *L);             /* names */
void lw_helper_return(Lw *L, const Ast *st); /* `return a, b;` */
void lw_stmt(Lw *L, const Ast *st);       /* lower.c: one statement */

#endif
