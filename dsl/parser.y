/* parser.y — the bison grammar of the .blk language (LANGUAGE.md): builds
 * the AST of dsl.h in the compilation's arena.
 *
 * A pure (reentrant) parser driven by the reentrant flex scanner of
 * lexer.l, which also holds dsl_parse. Syntax errors are reported through
 * dsl_error with the offending token quoted; `error` rules at statement and
 * top level let one run report several of them. Expression depth is tracked
 * in the semantic values so that later recursive passes stay bounded. */

%require "3.6"
%define api.pure full
%define api.prefix {blk}
%define parse.error custom
%define parse.lac full
%locations
%expect 0

%parse-param {void *scanner} {DslParseCtx *ctx}
%lex-param {void *scanner}

%code requires {
#include "dsl/dsl.h"
#include <setjmp.h>

/* An expression under construction and the depth of its tree. */
typedef struct DslExpr {
    Ast *n; /* the node */
    int d;  /* depth of the tree rooted at n (a leaf is 1) */
} DslExpr;

/* A growable list of nodes in the arena; d = deepest member. */
typedef struct DslAstList {
    Ast **v;     /* entries */
    int n, cap;  /* used / allocated */
    int d;       /* max depth of the entries (expressions) */
} DslAstList;

/* A growable list of parameters (or result types) in the arena. */
typedef struct DslParamList {
    AstParam *v; /* entries */
    int n, cap;  /* used / allocated */
} DslParamList;

/* State shared by the scanner (as its extra data) and the parser. */
typedef struct DslParseCtx {
    DslArena *arena;       /* where the AST goes */
    DslDiags *diags;       /* where errors go */
    const DslSource *src;  /* the source being parsed */
    AstFunc **funcs;       /* functions so far */
    int nfuncs, capfuncs;
    AstFunc **helpers;     /* `fn` helpers so far */
    int nhelpers, caphelpers;
    AstConst *consts;      /* module constants so far */
    int nconsts, capconsts;
    int line, col;         /* scanner: position of the next byte */
    int end_line, end_col; /* just past the last token returned */
    int nest;              /* scanner: open ( [ { brackets */
    DslLoc comment_loc;    /* start of the block comment being skipped */
    char tok[48];          /* text of the last token, for messages */
    bool stop;             /* a fatal error was reported: say no more */
    bool oom;              /* an allocation failed */
    bool deep_reported;    /* "expression too deeply nested" said once */
    jmp_buf *fatal_jmp;    /* where a fatal scanner error jumps */
    Ast dummy;             /* stands in for a node when allocation fails */
} DslParseCtx;
}

%code provides {
int blklex(BLKSTYPE *lval, BLKLTYPE *lloc, void *scanner);
}

%code {
#include <stdio.h>
#include <string.h>
#include <math.h>

#define YYMAXDEPTH 10000
/* Deepest expression tree accepted (brackets are limited separately, to
 * DSL_MAX_DEPTH, by the scanner). */
#define EXPR_DEPTH_LIMIT (4 * DSL_MAX_DEPTH)
#define LOC(l) ((DslLoc){(l).first_line, (l).first_column})

static void blkerror(BLKLTYPE *l, void *scanner, DslParseCtx *c,
                     const char *msg);

static void *p_alloc(DslParseCtx *c, size_t n)
{
    void *p = dsl_alloc(c->arena, n);
    if (!p)
        c->oom = true;
    return p;
}

static Ast *node(DslParseCtx *c, AstKind k, BLKLTYPE l)
{
    Ast *n = p_alloc(c, sizeof *n);
    if (!n) {
        memset(&c->dummy, 0, sizeof c->dummy);
        n = &c->dummy;
    }
    n->kind = k;
    n->loc = LOC(l);
    return n;
}

/* Wrap a finished expression node, enforcing the depth limit: an over-deep
 * subtree is replaced by a literal so that the AST stays shallow. */
static DslExpr expr_of(DslParseCtx *c, Ast *n, int d)
{
    if (d > EXPR_DEPTH_LIMIT) {
        if (!c->deep_reported) {
            c->deep_reported = true;
            dsl_error(c->diags, n->loc,
                      "expression too deeply nested (limit %d)",
                      EXPR_DEPTH_LIMIT);
        }
        Ast *z = p_alloc(c, sizeof *z);
        if (!z)
            z = &c->dummy;
        z->kind = AST_INT;
        z->loc = n->loc;
        return (DslExpr){z, 1};
    }
    return (DslExpr){n, d};
}

static int max2(int a, int b) { return a > b ? a : b; }

static DslExpr binary(DslParseCtx *c, int op, DslExpr a, DslExpr b,
                      BLKLTYPE l)
{
    Ast *n = node(c, AST_BINARY, l);
    n->op = op;
    n->a = a.n;
    n->b = b.n;
    return expr_of(c, n, max2(a.d, b.d) + 1);
}

static DslExpr unary(DslParseCtx *c, AstKind k, int op, DslExpr a,
                     BLKLTYPE l)
{
    Ast *n = node(c, k, l);
    n->op = op;
    n->a = a.n;
    return expr_of(c, n, a.d + 1);
}

static DslExpr leaf(DslParseCtx *c, AstKind k, BLKLTYPE l)
{
    return (DslExpr){node(c, k, l), 1};
}

static DslAstList *list_new(DslParseCtx *c)
{
    DslAstList *l = p_alloc(c, sizeof *l);
    return l;
}

static void list_push(DslParseCtx *c, DslAstList *l, Ast *x, int d)
{
    if (!l || !x)
        return;
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 4;
        Ast **nv = p_alloc(c, (size_t)ncap * sizeof *nv);
        if (!nv)
            return;
        if (l->n)
            memcpy(nv, l->v, (size_t)l->n * sizeof *nv);
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n++] = x;
    l->d = max2(l->d, d);
}

static void list_set(DslAstList *l, Ast ***v, int *n)
{
    *v = l ? l->v : NULL;
    *n = l ? l->n : 0;
}

static DslParamList *params_new(DslParseCtx *c)
{
    return p_alloc(c, sizeof(DslParamList));
}

static void params_push(DslParseCtx *c, DslParamList *l, const AstParam *p)
{
    if (!l || !p)
        return;
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 4;
        AstParam *nv = p_alloc(c, (size_t)ncap * sizeof *nv);
        if (!nv)
            return;
        if (l->n)
            memcpy(nv, l->v, (size_t)l->n * sizeof *nv);
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n++] = *p;
}

/* A parameter type: dtype name checked here, dims from a list. */
static AstParam *ptype(DslParseCtx *c, AstTypeKind tk, const char *dtname,
                       BLKLTYPE dtloc, DslAstList *dims, BLKLTYPE l)
{
    AstParam *p = p_alloc(c, sizeof *p);
    if (!p)
        return NULL;
    p->loc = LOC(l);
    p->tkind = tk;
    if (tk == TY_SIGNAL) {
        p->dtype = DT_U64;
    } else {
        int dt = dsl_dtype_from_name(dtname);
        if (dt < 0) {
            dsl_error(c->diags, LOC(dtloc), "unknown dtype '%s'", dtname);
            dt = DT_VOID;
        }
        p->dtype = dt;
    }
    list_set(dims, &p->dims, &p->ndims);
    return p;
}

static void add_func(DslParseCtx *c, AstFunc *f)
{
    if (!f)
        return;
    bool h = f->fkind == FN_HELPER;
    AstFunc ***v = h ? &c->helpers : &c->funcs;
    int *n = h ? &c->nhelpers : &c->nfuncs, *cap = h ? &c->caphelpers : &c->capfuncs;
    if (*n == *cap) {
        int ncap = *cap ? *cap * 2 : 8;
        AstFunc **nv = p_alloc(c, (size_t)ncap * sizeof *nv);
        if (!nv)
            return;
        if (*n)
            memcpy(nv, *v, (size_t)*n * sizeof *nv);
        *v = nv;
        *cap = ncap;
    }
    (*v)[(*n)++] = f;
}

static void add_const(DslParseCtx *c, const char *name, BLKLTYPE l, Ast *v)
{
    if (c->nconsts == c->capconsts) {
        int ncap = c->capconsts ? c->capconsts * 2 : 8;
        AstConst *nv = p_alloc(c, (size_t)ncap * sizeof *nv);
        if (!nv)
            return;
        if (c->nconsts)
            memcpy(nv, c->consts, (size_t)c->nconsts * sizeof *nv);
        c->consts = nv;
        c->capconsts = ncap;
    }
    c->consts[c->nconsts++] = (AstConst){LOC(l), name, v};
}

static AstFunc *func_new(DslParseCtx *c)
{
    AstFunc *f = p_alloc(c, sizeof *f);
    return f;
}

/* Fill the header of a function: name, compile-time and runtime params.
 * cparams arrive as AST_NAMED_ARG nodes (name, default in a). */
static AstFunc *func_head(DslParseCtx *c, AstFunc *f, AstFuncKind k,
                          const char *name, BLKLTYPE l, DslAstList *cps,
                          DslParamList *ps)
{
    if (!f)
        return NULL;
    f->fkind = k;
    f->name = name;
    f->loc = LOC(l);
    if (cps && cps->n) {
        int n = cps->n;
        f->cparam_names = p_alloc(c, (size_t)n * sizeof *f->cparam_names);
        f->cparam_defaults = p_alloc(c, (size_t)n * sizeof *f->cparam_defaults);
        f->cparam_locs = p_alloc(c, (size_t)n * sizeof *f->cparam_locs);
        if (f->cparam_names && f->cparam_defaults && f->cparam_locs) {
            for (int i = 0; i < n; i++) {
                f->cparam_names[i] = cps->v[i]->name;
                f->cparam_defaults[i] = cps->v[i]->a;
                f->cparam_locs[i] = cps->v[i]->loc;
            }
            f->ncparams = n;
        }
    }
    if (ps) {
        f->params = ps->v;
        f->nparams = ps->n;
    }
    return f;
}

static void check_lhs(DslParseCtx *c, Ast *lhs)
{
    if (lhs->kind != AST_IDENT && lhs->kind != AST_INDEX)
        dsl_error(c->diags, lhs->loc, "invalid assignment target");
}

static Ast *assign(DslParseCtx *c, AstKind k, int op, DslExpr a, DslExpr b,
                   BLKLTYPE l)
{
    check_lhs(c, a.n);
    Ast *n = node(c, k, l);
    n->op = op;
    n->a = a.n;
    n->b = b.n;
    return n;
}
}

%union {
    const char *str;                      /* identifier (arena) */
    struct { int64_t v; bool big; } i;    /* integer literal */
    double f;                             /* float literal */
    Ast *node;                            /* statement / block */
    DslExpr e;                            /* expression + depth */
    DslAstList *list;                     /* nodes */
    AstParam *param;                      /* one parameter type */
    DslParamList *params;                 /* parameters / results */
    AstFunc *func;                        /* function being built */
}

%token <str> IDENT "identifier"
%token <i> INT "integer literal"
%token <f> FLOAT "float literal"
%token KW_KERNEL "kernel" KW_DEVICE "device" KW_TASK "task" KW_CONST "const"
%token KW_LET "let" KW_VAR "var" KW_FOR "for" KW_IN "in" KW_STEP "step"
%token KW_WHILE "while" KW_IF "if" KW_ELSE "else" KW_RETURN "return"
%token KW_AS "as" KW_GRID "grid" KW_WARPS "warps" KW_STAGES "stages"
%token KW_SYMMETRIC "symmetric" KW_SIGNAL "signal" KW_SPLIT "split"
%token KW_REPLICATED "replicated" KW_ASYNC "async" KW_SYNC "sync" KW_EXCHANGE "exchange"
%token KW_LAUNCH "launch" KW_TRUE "true" KW_FALSE "false" KW_INF "inf"
%token KW_NAN "nan" KW_FN "fn" KW_UNROLL "unroll"
%token <str> STRING "string literal"
%token PLUSCOLON "+:" DOTDOT ".." ARROW "->" ANDAND "&&" OROR "||"
%token SHL "<<" SHR ">>" EQ "==" NE "!=" LE "<=" GE ">="
%token ADDEQ "+=" SUBEQ "-=" MULEQ "*=" DIVEQ "/="
%token TOK_ERROR "invalid token"

%left OROR
%left ANDAND
%left '|'
%left '^'
%left '&'
%left EQ NE
%left '<' LE '>' GE
%left SHL SHR
%left '+' '-'
%left '*' '/' '%' '@'
/* a compile-time parameter's default ends at '>' (use parentheses for a
 * comparison there) */
%precedence CPDEFAULT

%type <e> expr cast unary postfix primary item dim
%type <node> stmt block if_stmt
%type <list> stmts args args_opt arg_list expr_list items cparams_opt
%type <list> cparam_list dims mesh_opt
%type <node> arg cparam
%type <param> type ptype
%type <params> params_opt param_list results result_list hparams_opt hparam_list
%type <list> name_list
%type <func> func kernel_clauses

%%

program:
      %empty
    | program top
    ;

top:
      KW_CONST IDENT '=' expr ';'   { add_const(ctx, $2, @2, $4.n); }
    | func                          { add_func(ctx, $1); }
    | ';'                           /* stray: harmless */
    | error ';'                     { yyerrok; }
    | error '}'                     { yyerrok; }
    | error block                   { yyerrok; }
    ;

func:
      KW_KERNEL IDENT cparams_opt '(' params_opt ')' kernel_clauses block
        { $$ = func_head(ctx, $7, FN_KERNEL, $2, @2, $3, $5);
          if ($$) $$->body = $8; }
    | KW_DEVICE IDENT cparams_opt '(' params_opt ')' block
        { $$ = func_head(ctx, func_new(ctx), FN_DEVICE, $2, @2, $3, $5);
          if ($$) $$->body = $7; }
    | KW_FN IDENT cparams_opt '(' hparams_opt ')' block
        { $$ = func_head(ctx, func_new(ctx), FN_HELPER, $2, @2, $3, $5);
          if ($$) $$->body = $7; }
    | KW_TASK IDENT '(' params_opt ')' mesh_opt ARROW results block
        { $$ = func_head(ctx, func_new(ctx), FN_TASK, $2, @2, NULL, $4);
          if ($$) {
              if ($8) { $$->results = $8->v; $$->nresults = $8->n; }
              $$->body = $9;
              if ($6) { $$->mesh = $6->v; $$->nmesh = $6->n; $$->mesh_loc = LOC(@6); }
          } }
    ;

/* a task's device mesh: mesh(AXIS = SIZE, ...) (`mesh` is not a keyword) */
mesh_opt:
      %empty                        { $$ = NULL; }
    | IDENT '(' cparam_list ')'
        { $$ = $3;
          if (strcmp($1, "mesh") != 0)
              dsl_error(ctx->diags, LOC(@1), "expected '->' or mesh(...) after the parameters of a task, got '%s'", $1); }
    ;

cparams_opt:
      %empty                        { $$ = NULL; }
    | '<' cparam_list '>'           { $$ = $2; }
    ;

cparam_list:
      cparam                        { $$ = list_new(ctx); list_push(ctx, $$, $1, 0); }
    | cparam_list ',' cparam        { $$ = $1; list_push(ctx, $$, $3, 0); }
    ;

cparam:
      IDENT                         { $$ = node(ctx, AST_NAMED_ARG, @1); $$->name = $1; }
    | IDENT '=' expr %prec CPDEFAULT
                                    { $$ = node(ctx, AST_NAMED_ARG, @1); $$->name = $1; $$->a = $3.n; }
    ;

kernel_clauses:
      %empty                        { $$ = func_new(ctx); }
    | kernel_clauses KW_GRID '(' expr_list ')'
        { $$ = $1;
          if ($$ && $$->grid)
              dsl_error(ctx->diags, LOC(@2), "duplicate grid clause");
          else if ($4 && $4->n > 3)
              dsl_error(ctx->diags, LOC(@2), "grid takes 1 to 3 expressions, got %d", $4->n);
          else if ($$ && $4) { $$->grid = $4->v; $$->ngrid = $4->n; } }
    | kernel_clauses KW_WARPS '(' expr ')'
        { $$ = $1;
          if ($$ && $$->warps)
              dsl_error(ctx->diags, LOC(@2), "duplicate warps clause");
          else if ($$) $$->warps = $4.n; }
    | kernel_clauses KW_STAGES '(' expr ')'
        { $$ = $1;
          if ($$ && $$->stages)
              dsl_error(ctx->diags, LOC(@2), "duplicate stages clause");
          else if ($$) $$->stages = $4.n; }
    ;

params_opt:
      %empty                        { $$ = NULL; }
    | param_list                    { $$ = $1; }
    ;

param_list:
      IDENT ':' ptype
        { $$ = params_new(ctx);
          if ($3) { $3->name = $1; $3->loc = LOC(@1); params_push(ctx, $$, $3); } }
    | param_list ',' IDENT ':' ptype
        { $$ = $1;
          if ($5) { $5->name = $3; $5->loc = LOC(@3); params_push(ctx, $$, $5); } }
    ;

/* helper parameters: a name alone is untyped (dtype DT_VOID) */
hparams_opt:
      %empty                        { $$ = NULL; }
    | hparam_list                   { $$ = $1; }
    ;

hparam_list:
      IDENT
        { $$ = params_new(ctx);
          AstParam p = {LOC(@1), $1, TY_SCALAR, DT_VOID, NULL, 0, SHARD_NONE, 0, NULL, 0};
          params_push(ctx, $$, &p); }
    | IDENT ':' ptype
        { $$ = params_new(ctx);
          if ($3) { $3->name = $1; $3->loc = LOC(@1); params_push(ctx, $$, $3); } }
    | hparam_list ',' IDENT
        { $$ = $1;
          AstParam p = {LOC(@3), $3, TY_SCALAR, DT_VOID, NULL, 0, SHARD_NONE, 0, NULL, 0};
          params_push(ctx, $$, &p); }
    | hparam_list ',' IDENT ':' ptype
        { $$ = $1;
          if ($5) { $5->name = $3; $5->loc = LOC(@3); params_push(ctx, $$, $5); } }
    ;

results:
      ptype                         { $$ = params_new(ctx); params_push(ctx, $$, $1); }
    | '(' result_list ')'           { $$ = $2; }
    ;

result_list:
      ptype                         { $$ = params_new(ctx); params_push(ctx, $$, $1); }
    | result_list ',' ptype         { $$ = $1; params_push(ctx, $$, $3); }
    ;

ptype:
      type                          { $$ = $1; }
    | ptype KW_SPLIT '(' INT ')'
        { $$ = $1;
          if ($$ && $$->shard != SHARD_NONE)
              dsl_error(ctx->diags, LOC(@2), "a tensor takes one split(d) or replicated");
          else if ($$) { $$->shard = SHARD_SPLIT;
                    $$->shard_dim = $4.v > 1000000 ? 1000000 : (int)$4.v; } }
    | ptype KW_REPLICATED
        { $$ = $1;
          if ($$ && $$->shard != SHARD_NONE)
              dsl_error(ctx->diags, LOC(@2), "a tensor takes one split(d) or replicated");
          else if ($$) $$->shard = SHARD_REPLICATED; }
    | ptype KW_SPLIT '(' INT ',' IDENT ')'
        { /* split on a mesh axis; several may follow one another */
          $$ = $1;
          if ($$ && !$$->msplit)
              $$->msplit = p_alloc(ctx, AST_MAX_MSPLIT * sizeof *$$->msplit);
          if ($$ && $$->msplit && $$->nmsplit == AST_MAX_MSPLIT)
              dsl_error(ctx->diags, LOC(@2), "at most %d split(d, AXIS) clauses on one tensor",
                        AST_MAX_MSPLIT);
          else if ($$ && $$->msplit)
              $$->msplit[$$->nmsplit++] = (AstMeshSplit){LOC(@2),
                  $4.v > 1000000 ? 1000000 : (int)$4.v, $6}; }
    ;

type:
      IDENT                         { $$ = ptype(ctx, TY_SCALAR, $1, @1, NULL, @1); }
    | IDENT '[' dims ']'            { $$ = ptype(ctx, TY_TENSOR, $1, @1, $3, @1); }
    | KW_SYMMETRIC IDENT '[' dims ']'
                                    { $$ = ptype(ctx, TY_SYMMETRIC, $2, @2, $4, @1); }
    | KW_SIGNAL '[' dims ']'        { $$ = ptype(ctx, TY_SIGNAL, NULL, @1, $3, @1); }
    ;

dims:
      dim                           { $$ = list_new(ctx); list_push(ctx, $$, $1.n, 1); }
    | dims ',' dim                  { $$ = $1; list_push(ctx, $$, $3.n, 1); }
    ;

/* an integer, a name, or an expression of them (checked when lowered) */
dim:
      expr  { $$ = $1; }
    ;

/* ------------------------------------------------------------ statements */

block:
      '{' stmts '}'
        { $$ = node(ctx, AST_BLOCK, @1); list_set($2, &$$->list, &$$->nlist); }
    | '{' stmts error '}'
        { $$ = node(ctx, AST_BLOCK, @1); list_set($2, &$$->list, &$$->nlist); }
    ;

stmts:
      %empty                        { $$ = list_new(ctx); }
    | stmts stmt                    { $$ = $1; list_push(ctx, $$, $2, 0); }
    ;

stmt:
      KW_LET IDENT '=' expr ';'
        { $$ = node(ctx, AST_LET, @1); $$->name = $2; $$->a = $4.n; }
    | KW_LET name_list '=' expr ';'
        { $$ = node(ctx, AST_LET, @1); $$->a = $4.n;
          list_set($2, &$$->list, &$$->nlist);
          $$->name = $$->nlist ? $$->list[0]->name : "?"; }
    | KW_VAR IDENT '=' expr ';'
        { $$ = node(ctx, AST_VAR, @1); $$->name = $2; $$->a = $4.n; }
    | expr '=' expr ';'             { $$ = assign(ctx, AST_ASSIGN, 0, $1, $3, @1); }
    | expr ADDEQ expr ';'           { $$ = assign(ctx, AST_OPASSIGN, '+', $1, $3, @1); }
    | expr SUBEQ expr ';'           { $$ = assign(ctx, AST_OPASSIGN, '-', $1, $3, @1); }
    | expr MULEQ expr ';'           { $$ = assign(ctx, AST_OPASSIGN, '*', $1, $3, @1); }
    | expr DIVEQ expr ';'           { $$ = assign(ctx, AST_OPASSIGN, '/', $1, $3, @1); }
    | expr ';'                      { $$ = node(ctx, AST_EXPR_STMT, @1); $$->a = $1.n; }
    | KW_FOR IDENT KW_IN expr DOTDOT expr block
        { $$ = node(ctx, AST_FOR, @1); $$->name = $2; $$->a = $4.n; $$->b = $6.n;
          $$->body = $7; }
    | KW_FOR IDENT KW_IN expr DOTDOT expr KW_STEP expr block
        { $$ = node(ctx, AST_FOR, @1); $$->name = $2; $$->a = $4.n; $$->b = $6.n;
          $$->c = $8.n; $$->body = $9; }
    | KW_FOR IDENT KW_IN expr DOTDOT expr KW_UNROLL block
        { $$ = node(ctx, AST_FOR, @1); $$->name = $2; $$->a = $4.n; $$->b = $6.n;
          $$->body = $8; $$->ival = 1; }
    | KW_FOR IDENT KW_IN expr DOTDOT expr KW_STEP expr KW_UNROLL block
        { $$ = node(ctx, AST_FOR, @1); $$->name = $2; $$->a = $4.n; $$->b = $6.n;
          $$->c = $8.n; $$->body = $10; $$->ival = 1; }
    | KW_WHILE expr block
        { $$ = node(ctx, AST_WHILE, @1); $$->a = $2.n; $$->body = $3; }
    | if_stmt                       { $$ = $1; }
    | KW_RETURN ';'                 { $$ = node(ctx, AST_RETURN, @1); }
    | KW_RETURN expr ';'            { $$ = node(ctx, AST_RETURN, @1); $$->a = $2.n; }
    | KW_RETURN expr ',' arg_list ';'
        { /* a task's several results: a = the first, list = the rest */
          $$ = node(ctx, AST_RETURN, @1); $$->a = $2.n;
          list_set($4, &$$->list, &$$->nlist); }
    | block                         { $$ = $1; }
    | KW_LAUNCH IDENT '(' args_opt ')' ';'
        { $$ = node(ctx, AST_LAUNCH, @1); $$->name = $2;
          list_set($4, &$$->list, &$$->nlist); }
    | KW_LAUNCH IDENT '(' args_opt ')' KW_GRID '(' expr_list ')' ';'
        { $$ = node(ctx, AST_LAUNCH, @1); $$->name = $2;
          list_set($4, &$$->list, &$$->nlist);
          list_set($8, &$$->list2, &$$->nlist2); }
    | KW_ASYNC block                { $$ = node(ctx, AST_ASYNC, @1); $$->body = $2; }
    | KW_SYNC ';'                   { $$ = node(ctx, AST_SYNC, @1); }
    | KW_EXCHANGE block             { $$ = node(ctx, AST_EXCHANGE, @1); $$->body = $2; }
    | ';'                           { $$ = NULL; /* empty statement */ }
    | error ';'                     { $$ = NULL; yyerrok; }
    ;

/* two or more names: let a, b = f(x); */
name_list:
      IDENT ',' IDENT
        { $$ = list_new(ctx);
          Ast *a = node(ctx, AST_IDENT, @1), *b = node(ctx, AST_IDENT, @3);
          a->name = $1; b->name = $3;
          list_push(ctx, $$, a, 1); list_push(ctx, $$, b, 1); }
    | name_list ',' IDENT
        { $$ = $1; Ast *a = node(ctx, AST_IDENT, @3); a->name = $3;
          list_push(ctx, $$, a, 1); }
    ;

if_stmt:
      KW_IF expr block
        { $$ = node(ctx, AST_IF, @1); $$->a = $2.n; $$->body = $3; }
    | KW_IF expr block KW_ELSE block
        { $$ = node(ctx, AST_IF, @1); $$->a = $2.n; $$->body = $3; $$->els = $5; }
    | KW_IF expr block KW_ELSE if_stmt
        { $$ = node(ctx, AST_IF, @1); $$->a = $2.n; $$->body = $3; $$->els = $5; }
    ;

/* ------------------------------------------------------------ expressions */

expr:
      expr OROR expr    { $$ = binary(ctx, OP_LOR, $1, $3, @2); }
    | expr ANDAND expr  { $$ = binary(ctx, OP_LAND, $1, $3, @2); }
    | expr '|' expr     { $$ = binary(ctx, OP_OR, $1, $3, @2); }
    | expr '^' expr     { $$ = binary(ctx, OP_XOR, $1, $3, @2); }
    | expr '&' expr     { $$ = binary(ctx, OP_AND, $1, $3, @2); }
    | expr EQ expr      { $$ = binary(ctx, OP_EQ, $1, $3, @2); }
    | expr NE expr      { $$ = binary(ctx, OP_NE, $1, $3, @2); }
    | expr '<' expr     { $$ = binary(ctx, OP_LT, $1, $3, @2); }
    | expr LE expr      { $$ = binary(ctx, OP_LE, $1, $3, @2); }
    | expr '>' expr     { $$ = binary(ctx, OP_GT, $1, $3, @2); }
    | expr GE expr      { $$ = binary(ctx, OP_GE, $1, $3, @2); }
    | expr SHL expr     { $$ = binary(ctx, OP_SHL, $1, $3, @2); }
    | expr SHR expr     { $$ = binary(ctx, OP_SHR, $1, $3, @2); }
    | expr '+' expr     { $$ = binary(ctx, OP_ADD, $1, $3, @2); }
    | expr '-' expr     { $$ = binary(ctx, OP_SUB, $1, $3, @2); }
    | expr '*' expr     { $$ = binary(ctx, OP_MUL, $1, $3, @2); }
    | expr '/' expr     { $$ = binary(ctx, OP_DIV, $1, $3, @2); }
    | expr '%' expr     { $$ = binary(ctx, OP_REM, $1, $3, @2); }
    | expr '@' expr     { $$ = binary(ctx, OP_MATMUL, $1, $3, @2); }
    | cast              { $$ = $1; }
    ;

/* `as` binds tighter than every binary operator, looser than unary ones */
cast:
      cast KW_AS IDENT
        { int dt = dsl_dtype_from_name($3);
          if (dt < 0) {
              dsl_error(ctx->diags, LOC(@3), "unknown dtype '%s'", $3);
              dt = DT_VOID;
          }
          Ast *n = node(ctx, AST_CAST, @1);
          n->a = $1.n;
          n->ival = dt;
          $$ = expr_of(ctx, n, $1.d + 1); }
    | unary             { $$ = $1; }
    ;

unary:
      '-' unary         { $$ = unary(ctx, AST_UNARY, '-', $2, @1); }
    | '!' unary         { $$ = unary(ctx, AST_UNARY, '!', $2, @1); }
    | '~' unary         { $$ = unary(ctx, AST_UNARY, '~', $2, @1); }
    | postfix           { $$ = $1; }
    ;

postfix:
      primary           { $$ = $1; }
    | postfix '[' items ']'
        { Ast *n = node(ctx, AST_INDEX, @1);
          n->a = $1.n;
          list_set($3, &n->list, &n->nlist);
          $$ = expr_of(ctx, n, max2($1.d, $3 ? $3->d : 0) + 1); }
    ;

items:
      item              { $$ = list_new(ctx); list_push(ctx, $$, $1.n, $1.d); }
    | items ',' item    { $$ = $1; list_push(ctx, $$, $3.n, $3.d); }
    ;

item:
      expr
        { $$ = $1;
          if ($$.n->kind == AST_IDENT && strcmp($$.n->name, "None") == 0)
              $$.n->kind = AST_NONE; }
    | expr PLUSCOLON expr
        { Ast *n = node(ctx, AST_IDX_RANGE, @1);
          n->a = $1.n;
          n->b = $3.n;
          $$ = expr_of(ctx, n, max2($1.d, $3.d) + 1); }
    | ':'               { $$ = leaf(ctx, AST_IDX_FULL, @1); }
    ;

primary:
      INT
        { $$ = leaf(ctx, AST_INT, @1); $$.n->ival = $1.v; $$.n->is_i64 = $1.big; }
    | FLOAT             { $$ = leaf(ctx, AST_FLOAT, @1); $$.n->fval = $1; }
    | KW_INF            { $$ = leaf(ctx, AST_FLOAT, @1); $$.n->fval = INFINITY; }
    | KW_NAN            { $$ = leaf(ctx, AST_FLOAT, @1); $$.n->fval = NAN; }
    | KW_TRUE           { $$ = leaf(ctx, AST_BOOL, @1); $$.n->ival = 1; }
    | KW_FALSE          { $$ = leaf(ctx, AST_BOOL, @1); $$.n->ival = 0; }
    | IDENT             { $$ = leaf(ctx, AST_IDENT, @1); $$.n->name = $1; }
    | IDENT '(' args_opt ')'
        { Ast *n = node(ctx, AST_CALL, @1);
          n->name = $1;
          list_set($3, &n->list, &n->nlist);
          $$ = expr_of(ctx, n, ($3 ? $3->d : 0) + 1); }
    | KW_SPLIT '(' args_opt ')'
        { /* reshard(x, split(d)) */
          Ast *n = node(ctx, AST_CALL, @1);
          n->name = "split";
          list_set($3, &n->list, &n->nlist);
          $$ = expr_of(ctx, n, ($3 ? $3->d : 0) + 1); }
    | KW_SYMMETRIC '(' args_opt ')'
        { /* device tier: let b = symmetric(f16, M, K) */
          Ast *n = node(ctx, AST_CALL, @1);
          n->name = "symmetric";
          list_set($3, &n->list, &n->nlist);
          $$ = expr_of(ctx, n, ($3 ? $3->d : 0) + 1); }
    | KW_REPLICATED     { $$ = leaf(ctx, AST_IDENT, @1); $$.n->name = "replicated"; }
    | '(' expr ')'      { $$ = $2; }
    | '(' expr ',' arg_list ')'
        { Ast *n = node(ctx, AST_TUPLE, @1);
          DslAstList *l = list_new(ctx);
          list_push(ctx, l, $2.n, $2.d);
          for (int i = 0; $4 && i < $4->n; i++)
              list_push(ctx, l, $4->v[i], $4->d);
          list_set(l, &n->list, &n->nlist);
          $$ = expr_of(ctx, n, max2($2.d, $4 ? $4->d : 0) + 1); }
    | STRING            { $$ = leaf(ctx, AST_STRING, @1); $$.n->name = $1; }
    ;

args_opt:
      %empty            { $$ = NULL; }
    | args              { $$ = $1; }
    ;

args:
      arg               { $$ = list_new(ctx); list_push(ctx, $$, $1, 0); }
    | args ',' arg      { $$ = $1; list_push(ctx, $$, $3, 0); }
    ;

arg:
      expr              { $$ = $1.n; }
    | IDENT '=' expr
        { $$ = node(ctx, AST_NAMED_ARG, @1); $$->name = $1; $$->a = $3.n; }
    | KW_SIGNAL '=' expr /* copy(dst, src, signal = S[i]) */
        { $$ = node(ctx, AST_NAMED_ARG, @1); $$->name = "signal"; $$->a = $3.n; }
    ;

expr_list:
      arg_list          { $$ = $1; }
    ;

arg_list:
      expr              { $$ = list_new(ctx); list_push(ctx, $$, $1.n, $1.d); }
    | arg_list ',' expr { $$ = $1; list_push(ctx, $$, $3.n, $3.d); }
    ;

%%

/* Only bison's own failures come here (syntax errors go through
 * yyreport_syntax_error): the parser stack overflowed, which only a very
 * deep chain of prefix operators can cause. */
static void blkerror(BLKLTYPE *l, void *scanner, DslParseCtx *c,
                     const char *msg)
{
    (void)scanner;
    (void)msg;
    if (c->stop)
        return;
    c->stop = true;
    dsl_error(c->diags, LOC(*l), "expression too deeply nested (limit %d)",
              EXPR_DEPTH_LIMIT);
}

/* How a grammar symbol is named in a message: tokens quoted as written. */
static void sym_text(yysymbol_kind_t s, const char *tok, char *buf, size_t n)
{
    switch (s) {
    case YYSYMBOL_YYEOF:
        snprintf(buf, n, "end of file");
        return;
    case YYSYMBOL_IDENT:
    case YYSYMBOL_INT:
    case YYSYMBOL_FLOAT:
        if (tok) {
            snprintf(buf, n, "'%s'", tok);
            return;
        }
        snprintf(buf, n, "%s", yysymbol_name(s));
        return;
    default:
        break;
    }
    if (tok) {
        snprintf(buf, n, "'%s'", tok);
        return;
    }
    const char *name = yysymbol_name(s);
    size_t len = strlen(name);
    if (len >= 2 && (name[0] == '"' || name[0] == '\''))
        snprintf(buf, n, "'%.*s'", (int)(len - 2), name + 1);
    else
        snprintf(buf, n, "'%s'", name);
}

/* Tokens that could continue an expression: left out of a long "expected"
 * list, which then names what would end or separate it. */
static bool continues_expr(yysymbol_kind_t s)
{
    switch (s) {
    case YYSYMBOL_OROR: case YYSYMBOL_ANDAND: case YYSYMBOL_EQ:
    case YYSYMBOL_NE: case YYSYMBOL_LE: case YYSYMBOL_GE: case YYSYMBOL_SHL:
    case YYSYMBOL_SHR: case YYSYMBOL_KW_AS: case YYSYMBOL_ADDEQ:
    case YYSYMBOL_SUBEQ: case YYSYMBOL_MULEQ: case YYSYMBOL_DIVEQ:
        return true;
    default:
        break;
    }
    const char *name = yysymbol_name(s);
    return name[0] == '\'' && name[1] && strchr("|^&<>+-*/%@[(=", name[1]) &&
           name[2] == '\'';
}

static bool is_semicolon(yysymbol_kind_t s)
{
    return strcmp(yysymbol_name(s), "';'") == 0;
}

/* `syntax error: unexpected 'X', expected 'A' or 'B'`. Up to 4 expected
 * tokens are listed; right after an expression (where `as` could follow),
 * those that would only continue it are left out, and if that is still too
 * many but ';' is among them, ';' alone is named. A token the scanner already complained about, and anything
 * after a fatal error, is not reported again. */
static int yyreport_syntax_error(const yypcontext_t *yyctx, void *scanner,
                                 DslParseCtx *c)
{
    (void)scanner;
    yysymbol_kind_t la = yypcontext_token(yyctx);
    if (c->stop || la == YYSYMBOL_TOK_ERROR)
        return 0;
    char msg[512], t[96];
    size_t len = 0;
    len += (size_t)snprintf(msg, sizeof msg, "syntax error");
    if (la != YYSYMBOL_YYEMPTY) {
        sym_text(la, la == YYSYMBOL_YYEOF ? NULL : c->tok, t, sizeof t);
        len += (size_t)snprintf(msg + len, sizeof msg - len, ": unexpected %s", t);
        yysymbol_kind_t all[YYNTOKENS], exp[YYNTOKENS];
        int na = yypcontext_expected_tokens(yyctx, all, YYNTOKENS), ne = 0;
        bool semi = false, after_expr = false;
        for (int i = 0; i < na; i++)
            after_expr |= all[i] == YYSYMBOL_KW_AS;
        for (int i = 0; i < na; i++) {
            if (is_semicolon(all[i]))
                semi = true;
            if (na <= 4 || !after_expr || !continues_expr(all[i]))
                exp[ne++] = all[i];
        }
        if (ne > 4 && semi && after_expr) {
            for (int i = 0; i < na; i++)
                if (is_semicolon(all[i]))
                    exp[0] = all[i];
            ne = 1;
        }
        if (ne > 0 && ne <= 4) {
            for (int i = 0; i < ne && len < sizeof msg; i++) {
                sym_text(exp[i], NULL, t, sizeof t);
                len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s",
                                        i == 0 ? ", expected " : " or ", t);
            }
        }
    }
    dsl_error(c->diags, LOC(*yypcontext_location(yyctx)), "%s", msg);
    return 0;
}
