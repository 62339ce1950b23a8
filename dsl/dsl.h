/* dsl.h — the base layer of blkc: arenas, growable buffers, diagnostics,
 * dtypes, and the AST that the flex/bison front end builds for a .blk file.
 *
 * Cross-file names carry the prefix `dsl_` (functions) or `Dsl`/`Ast`
 * (types). Every AST node carries its source location (chibicc style) so
 * that later layers can report `file:line:col: error: msg`. */
#ifndef BLKC_DSL_H
#define BLKC_DSL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef struct DslArena DslArena;
typedef struct DslBuf DslBuf;
typedef struct DslSource DslSource;
typedef struct DslDiags DslDiags;
typedef struct DslLoc DslLoc;
typedef struct Ast Ast;
typedef struct AstFunc AstFunc;
typedef struct AstParam AstParam;
typedef struct AstProgram AstProgram;

/* ---------------------------------------------------------------- limits */
#define DSL_MAX_RANK 8          /* most dims a tensor or tile may have */
#define DSL_MAX_ERRORS 20       /* diagnostics kept before giving up */
#define DSL_MAX_SOURCE (64u << 20) /* largest source accepted, bytes */
#define DSL_MAX_DEPTH 256       /* deepest nesting of blocks/expressions */
#define DSL_MAX_TILE_ELEMS (1 << 22) /* largest tile, elements */

/* ---------------------------------------------------------------- arena */
/* Bump allocator: everything of one compilation lives here and is freed at
 * once by dsl_arena_free. Allocation failure returns NULL (never aborts). */
struct DslArena {
    struct DslArenaChunk *head; /* newest chunk first */
    size_t total;               /* bytes handed out, for limits */
};
void *dsl_alloc(DslArena *a, size_t n);             /* zeroed, 16-aligned */
char *dsl_strdup(DslArena *a, const char *s, size_t n);
void dsl_arena_free(DslArena *a);
void dsl_arena_adopt(DslArena *dst, DslArena *src); /* src's memory now
                                                     lives (and dies) with dst */

/* ---------------------------------------------------------------- buffers */
/* A growable byte buffer on the malloc heap (for text output). */
struct DslBuf {
    char *data;   /* NUL-terminated while len > 0 */
    size_t len;   /* bytes used */
    size_t cap;   /* bytes allocated */
    bool oom;     /* set once an allocation failed; further appends no-op */
};
void dsl_buf_printf(DslBuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dsl_buf_vprintf(DslBuf *b, const char *fmt, va_list ap);
void dsl_buf_put(DslBuf *b, const char *s, size_t n);
void dsl_buf_free(DslBuf *b);

/* ---------------------------------------------------------------- source */
struct DslSource {
    const char *name;   /* file name shown in diagnostics */
    const char *text;   /* the whole source, NUL-terminated */
    size_t len;         /* bytes in text */
};

struct DslLoc {
    int line;           /* 1-based; 0 = no location */
    int col;            /* 1-based column in bytes */
};

/* Diagnostics collect `file:line:col: error: msg` + source line + caret into
 * `out`. `nerrors` counts errors; after DSL_MAX_ERRORS further ones are
 * dropped (a final "too many errors" line is added once). */
struct DslDiags {
    const DslSource *src; /* for the file name and the source line */
    DslBuf out;           /* rendered diagnostics */
    int nerrors;          /* errors reported so far */
    int nwarnings;        /* warnings reported so far */
};
void dsl_error(DslDiags *d, DslLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void dsl_verror(DslDiags *d, DslLoc loc, const char *fmt, va_list ap);
void dsl_warning(DslDiags *d, DslLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void dsl_diags_free(DslDiags *d);

/* ---------------------------------------------------------------- dtypes */
/* X(enum, name, bytes, kind) — kind: 'b' bool, 'i' signed, 'u' unsigned,
 * 'f' float. Order matters only for printing. */
#define DSL_DTYPES(X)                  \
    X(DT_VOID, "void", 0, 'v')         \
    X(DT_BOOL, "bool", 1, 'b')         \
    X(DT_I8, "i8", 1, 'i')             \
    X(DT_I16, "i16", 2, 'i')           \
    X(DT_I32, "i32", 4, 'i')           \
    X(DT_I64, "i64", 8, 'i')           \
    X(DT_U8, "u8", 1, 'u')             \
    X(DT_U16, "u16", 2, 'u')           \
    X(DT_U32, "u32", 4, 'u')           \
    X(DT_U64, "u64", 8, 'u')           \
    X(DT_F16, "f16", 2, 'f')           \
    X(DT_BF16, "bf16", 2, 'f')         \
    X(DT_F32, "f32", 4, 'f')           \
    X(DT_F64, "f64", 8, 'f')           \
    X(DT_F8E4M3, "f8e4m3", 1, 'f')     \
    X(DT_F8E5M2, "f8e5m2", 1, 'f')

typedef enum {
#define X(e, n, b, k) e,
    DSL_DTYPES(X)
#undef X
    DT_COUNT
} DslDtype;

const char *dsl_dtype_name(int dt);
int dsl_dtype_bytes(int dt);
char dsl_dtype_kind(int dt);           /* 'b' 'i' 'u' 'f' 'v' */
int dsl_dtype_from_name(const char *s); /* -1 if not a dtype name */
static inline bool dsl_is_float(int dt) { return dsl_dtype_kind(dt) == 'f'; }
static inline bool dsl_is_int(int dt)
{
    char k = dsl_dtype_kind(dt);
    return k == 'i' || k == 'u';
}

/* ---------------------------------------------------------------- AST */
/* One node kind per construct. Fields used by each kind are listed beside
 * it; unused fields are zero/NULL. `list`/`nlist` hold ordered children. */
typedef enum {
    /* expressions */
    AST_INT,      /* ival; is_i64 set when the literal does not fit i32 */
    AST_FLOAT,    /* fval (also inf, nan) */
    AST_BOOL,     /* ival 0/1 */
    AST_IDENT,    /* name */
    AST_NONE,     /* the `None` index in x[:, None] */
    AST_UNARY,    /* op: '-', '!', '~'; a */
    AST_BINARY,   /* op: one of AstBinOp; a, b */
    AST_CAST,     /* a as dtype (ival = DslDtype) */
    AST_CALL,     /* name(list...); named args (pad=, mask=, op=, signal=)
                     appear in list as AST_NAMED_ARG */
    AST_NAMED_ARG,/* name = a */
    AST_INDEX,    /* a[list...] — view of a tensor or indexing of a tile;
                     each list item is an index node below */
    AST_IDX_RANGE,/* a +: b  (start a, length b) */
    AST_IDX_FULL, /* `:` */
    /* statements */
    AST_LET,      /* let name = a;  let n0, n1 = a; (list: AST_IDENT of every
                     name, nlist >= 2) */
    AST_VAR,      /* var name = a; */
    AST_ASSIGN,   /* a = b;   (a is AST_IDENT or AST_INDEX) */
    AST_OPASSIGN, /* a op= b; op is '+', '-', '*', '/' */
    AST_EXPR_STMT,/* a; */
    AST_FOR,      /* for name in a .. b [step c] [unroll] body; ival 1 =
                     unroll */
    AST_WHILE,    /* while a body */
    AST_IF,       /* if a body [else els]; els is AST_BLOCK or AST_IF */
    AST_RETURN,   /* return [a[, list...]]; (several: task results) */
    AST_BLOCK,    /* { list... } */
    /* device tier (parsed; later issues check and lower them) */
    AST_LAUNCH,   /* launch name(list...) [grid(list2...)] */
    AST_ASYNC,    /* async body */
    AST_SYNC,     /* sync; */
    /* v0.2 (LANGUAGE.md §7) */
    AST_STRING,   /* "..." (name = decoded text); only an argument of
                     print / assert / static_assert */
    AST_TUPLE,    /* (a, b, ...) — list; the tiles of reduce((v, i), ...) */
    AST_EXCHANGE, /* exchange body: a group of send/recv */
    AST_KIND_COUNT
} AstKind;

typedef enum {
    OP_ADD = '+', OP_SUB = '-', OP_MUL = '*', OP_DIV = '/', OP_REM = '%',
    OP_LT = '<', OP_GT = '>', OP_AND = '&', OP_OR = '|', OP_XOR = '^',
    OP_MATMUL = '@',
    OP_EQ = 256, OP_NE, OP_LE, OP_GE, OP_LAND, OP_LOR, OP_SHL, OP_SHR,
} AstBinOp;

struct Ast {
    AstKind kind;       /* what this node is */
    DslLoc loc;         /* where it starts (operator position for binary) */
    int op;             /* operator, see AstBinOp / unary chars */
    Ast *a, *b, *c;     /* operands / sub-expressions */
    Ast *body, *els;    /* statement bodies (AST_BLOCK) */
    Ast **list;         /* ordered children (args, statements, indices) */
    int nlist;          /* entries in list */
    Ast **list2;        /* launch grid(...) expressions */
    int nlist2;         /* entries in list2 */
    const char *name;   /* identifier / callee / declared name */
    int64_t ival;       /* integer literal, bool, dtype for AST_CAST */
    double fval;        /* float literal */
    bool is_i64;        /* integer literal needs 64 bits */
};

/* A declared type of a parameter or task result. */
typedef enum {
    TY_SCALAR,     /* dtype */
    TY_TENSOR,     /* dtype[dims...] in global memory */
    TY_SYMMETRIC,  /* symmetric dtype[dims...] */
    TY_SIGNAL,     /* signal[dims0] */
} AstTypeKind;

typedef enum { SHARD_NONE, SHARD_REPLICATED, SHARD_SPLIT } AstShardKind;

/* `split(d, AXIS)` of a task tensor on a mesh axis (docs/task.md). */
#define AST_MAX_MSPLIT 4
typedef struct AstMeshSplit {
    DslLoc loc;        /* of `split` */
    int dim;           /* d */
    const char *axis;  /* the mesh axis name */
} AstMeshSplit;

struct AstParam {
    DslLoc loc;        /* of the parameter name */
    const char *name;  /* parameter name (NULL for a task result type) */
    AstTypeKind tkind; /* scalar / tensor / symmetric / signal */
    int dtype;         /* DslDtype (DT_U64 for signals) */
    Ast **dims;        /* each AST_INT or AST_IDENT (symbolic or const) */
    int ndims;         /* 0 for scalars */
    AstShardKind shard;/* task tier: split(d)/replicated; SHARD_NONE if absent */
    int shard_dim;     /* d of split(d) */
    AstMeshSplit *msplit; /* task on a mesh: split(d, AXIS) clauses */
    int nmsplit;       /* their number (at most AST_MAX_MSPLIT) */
};

/* FN_HELPER: `fn` helpers (LANGUAGE.md §7), kept apart in
 * AstProgram.helpers; an untyped helper parameter has dtype DT_VOID. */
typedef enum { FN_KERNEL, FN_DEVICE, FN_TASK, FN_HELPER } AstFuncKind;

struct AstFunc {
    DslLoc loc;         /* of the function name */
    AstFuncKind fkind;  /* kernel / device / task */
    const char *name;   /* function name */
    const char **cparam_names; /* compile-time parameter names */
    Ast **cparam_defaults;     /* their default expressions (may be NULL) */
    DslLoc *cparam_locs;       /* their locations */
    int ncparams;              /* number of compile-time parameters */
    AstParam *params;   /* runtime parameters */
    int nparams;        /* number of parameters */
    AstParam *results;  /* task result types (name NULL) */
    int nresults;       /* number of results */
    Ast **grid;         /* grid(...) expressions, NULL if absent */
    int ngrid;          /* 0..3 */
    Ast *warps;         /* warps(W) expression, NULL if absent */
    Ast *stages;        /* stages(S) expression, NULL if absent */
    Ast *body;          /* AST_BLOCK */
    Ast **mesh;         /* task `mesh(AXIS = SIZE, ...)`: AST_NAMED_ARG
                           nodes (name, a = the size), NULL if absent */
    int nmesh;          /* number of mesh axes written */
    DslLoc mesh_loc;    /* of `mesh` */
};

/* A module-level `const NAME = expr;` */
typedef struct AstConst {
    DslLoc loc;        /* of the name */
    const char *name;  /* constant name */
    Ast *value;        /* its expression (compile-time) */
} AstConst;

struct AstProgram {
    AstFunc **funcs;   /* in source order */
    int nfuncs;        /* number of functions */
    AstFunc **helpers; /* `fn` helpers, in source order (inlined at calls) */
    int nhelpers;      /* number of helpers */
    AstConst *consts;  /* in source order */
    int nconsts;       /* number of constants */
};

/* parse.y / lexer.l: parse a whole source into an AST allocated in `arena`.
 * Returns NULL only on out-of-memory; syntax errors go to `diags` (check
 * diags->nerrors) and a partial program may be returned. Thread-safe
 * (reentrant scanner and pure parser). */
AstProgram *dsl_parse(DslArena *arena, DslDiags *diags, const DslSource *src);

/* ast.c: print the AST as an indented S-expression text (--emit=ast). */
void dsl_print_ast(DslBuf *out, const AstProgram *prog);
const char *dsl_ast_kind_name(AstKind k);

/* util.c */
bool dsl_utf8_valid(const char *s, size_t n, size_t *bad_offset);

#endif
