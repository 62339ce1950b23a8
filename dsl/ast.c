/* ast.c — the text form of the AST (`--emit=ast`): one node per line as an
 * indented S-expression, `(kind details @line:col` followed by the children
 * and a closing parenthesis. Golden tests of the parser compare this text.
 * Recursion depth is bounded because the parser caps nesting. */
#include "dsl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[AST_KIND_COUNT] = {
    [AST_INT] = "int",         [AST_FLOAT] = "float",
    [AST_BOOL] = "bool",       [AST_IDENT] = "ident",
    [AST_NONE] = "none",       [AST_UNARY] = "unary",
    [AST_BINARY] = "binary",   [AST_CAST] = "cast",
    [AST_CALL] = "call",       [AST_NAMED_ARG] = "named",
    [AST_INDEX] = "index",     [AST_IDX_RANGE] = "range",
    [AST_IDX_FULL] = "full",   [AST_LET] = "let",
    [AST_VAR] = "var",         [AST_ASSIGN] = "assign",
    [AST_OPASSIGN] = "opassign", [AST_EXPR_STMT] = "expr",
    [AST_FOR] = "for",         [AST_WHILE] = "while",
    [AST_IF] = "if",           [AST_RETURN] = "return",
    [AST_BLOCK] = "block",     [AST_LAUNCH] = "launch",
    [AST_ASYNC] = "async",     [AST_SYNC] = "sync",
    [AST_STRING] = "string",   [AST_TUPLE] = "tuple",
    [AST_EXCHANGE] = "exchange",
};

const char *dsl_ast_kind_name(AstKind k)
{
    if ((int)k < 0 || k >= AST_KIND_COUNT || !kind_names[k])
        return "?";
    return kind_names[k];
}

/* Source spelling of a binary or unary operator. */
static const char *op_name(int op)
{
    switch (op) {
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    case OP_LE: return "<=";
    case OP_GE: return ">=";
    case OP_LAND: return "&&";
    case OP_LOR: return "||";
    case OP_SHL: return "<<";
    case OP_SHR: return ">>";
    case '+': return "+";
    case '-': return "-";
    case '*': return "*";
    case '/': return "/";
    case '%': return "%";
    case '<': return "<";
    case '>': return ">";
    case '&': return "&";
    case '|': return "|";
    case '^': return "^";
    case '@': return "@";
    case '!': return "!";
    case '~': return "~";
    default: return "?";
    }
}

/* The shortest %g form that reads back as the same double. */
static void put_float(DslBuf *out, double v)
{
    if (isnan(v)) {
        dsl_buf_printf(out, "nan");
        return;
    }
    if (isinf(v)) {
        dsl_buf_printf(out, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* plain notation for ordinary magnitudes: 1500.0 rather than 1.5e+03 */
    double mag = fabs(v);
    if (mag >= 1e-4 && mag < 1e16) {
        int digits = (int)floor(log10(mag)) + 1;
        if (digits > prec)
            prec = digits;
    }
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    /* keep a float looking like one */
    if (!strpbrk(buf, ".eE"))
        strcat(buf, ".0");
    dsl_buf_printf(out, "%s", buf);
}

static void indent(DslBuf *out, int depth)
{
    dsl_buf_put(out, "\n", 1);
    for (int i = 0; i < depth; i++)
        dsl_buf_put(out, "  ", 2);
}

static void put_loc(DslBuf *out, DslLoc loc)
{
    dsl_buf_printf(out, " @%d:%d", loc.line, loc.col);
}

static void print_node(DslBuf *out, const Ast *n, int depth);

static void print_list(DslBuf *out, Ast *const *v, int nv, int depth)
{
    for (int i = 0; i < nv; i++) {
        indent(out, depth);
        print_node(out, v[i], depth);
    }
}

/* One node: header on this line, children on the following ones. */
static void print_node(DslBuf *out, const Ast *n, int depth)
{
    if (!n) {
        dsl_buf_printf(out, "(null)");
        return;
    }
    dsl_buf_printf(out, "(%s", dsl_ast_kind_name(n->kind));
    switch (n->kind) {
    case AST_INT:
        dsl_buf_printf(out, " %lld%s", (long long)n->ival,
                       n->is_i64 ? " i64" : "");
        break;
    case AST_FLOAT:
        dsl_buf_put(out, " ", 1);
        put_float(out, n->fval);
        break;
    case AST_BOOL:
        dsl_buf_printf(out, " %s", n->ival ? "true" : "false");
        break;
    case AST_UNARY:
    case AST_BINARY:
        dsl_buf_printf(out, " %s", op_name(n->op));
        break;
    case AST_OPASSIGN:
        dsl_buf_printf(out, " %s=", op_name(n->op));
        break;
    case AST_CAST:
        dsl_buf_printf(out, " %s", dsl_dtype_name((int)n->ival));
        break;
    case AST_IDENT:
    case AST_CALL:
    case AST_NAMED_ARG:
    case AST_LET:
    case AST_VAR:
    case AST_FOR:
    case AST_LAUNCH:
        dsl_buf_printf(out, " %s", n->name ? n->name : "?");
        break;
    default:
        break;
    }
    put_loc(out, n->loc);
    int d = depth + 1;
    if (n->a) {
        indent(out, d);
        print_node(out, n->a, d);
    }
    if (n->b) {
        indent(out, d);
        print_node(out, n->b, d);
    }
    if (n->c) {
        indent(out, d);
        dsl_buf_printf(out, "(step");
        indent(out, d + 1);
        print_node(out, n->c, d + 1);
        dsl_buf_put(out, ")", 1);
    }
    print_list(out, n->list, n->nlist, d);
    if (n->nlist2) {
        indent(out, d);
        dsl_buf_printf(out, "(grid");
        print_list(out, n->list2, n->nlist2, d + 1);
        dsl_buf_put(out, ")", 1);
    }
    if (n->body) {
        indent(out, d);
        print_node(out, n->body, d);
    }
    if (n->els) {
        indent(out, d);
        dsl_buf_printf(out, "(else");
        indent(out, d + 1);
        print_node(out, n->els, d + 1);
        dsl_buf_put(out, ")", 1);
    }
    dsl_buf_put(out, ")", 1);
}

/* A dim written as an expression, inline: `M * world()`, `(N + 1) / 2`.
 * Operands that are themselves binary get parentheses. */
static void print_dim(DslBuf *out, const Ast *d, bool paren)
{
    if (!d) {
        dsl_buf_put(out, "?", 1);
        return;
    }
    switch (d->kind) {
    case AST_INT:
        dsl_buf_printf(out, "%lld", (long long)d->ival);
        break;
    case AST_IDENT:
        dsl_buf_printf(out, "%s", d->name ? d->name : "?");
        break;
    case AST_UNARY:
        dsl_buf_printf(out, "%s", op_name(d->op));
        print_dim(out, d->a, true);
        break;
    case AST_BINARY:
        if (paren)
            dsl_buf_put(out, "(", 1);
        print_dim(out, d->a, true);
        dsl_buf_printf(out, " %s ", op_name(d->op));
        print_dim(out, d->b, true);
        if (paren)
            dsl_buf_put(out, ")", 1);
        break;
    case AST_CALL:
        dsl_buf_printf(out, "%s(", d->name ? d->name : "?");
        for (int i = 0; i < d->nlist; i++) {
            if (i)
                dsl_buf_put(out, ", ", 2);
            print_dim(out, d->list[i], false);
        }
        dsl_buf_put(out, ")", 1);
        break;
    default:
        dsl_buf_put(out, "?", 1);
        break;
    }
}

/* `symmetric f16[M, 64] split(0)` */
static void print_type(DslBuf *out, const AstParam *p)
{
    switch (p->tkind) {
    case TY_SCALAR:
        dsl_buf_printf(out, " %s", dsl_dtype_name(p->dtype));
        break;
    case TY_TENSOR:
        dsl_buf_printf(out, " %s", dsl_dtype_name(p->dtype));
        break;
    case TY_SYMMETRIC:
        dsl_buf_printf(out, " symmetric %s", dsl_dtype_name(p->dtype));
        break;
    case TY_SIGNAL:
        dsl_buf_printf(out, " signal");
        break;
    }
    if (p->tkind != TY_SCALAR) {
        dsl_buf_put(out, "[", 1);
        for (int i = 0; i < p->ndims; i++) {
            const Ast *d = p->dims[i];
            if (i)
                dsl_buf_put(out, ", ", 2);
            print_dim(out, d, false);
        }
        dsl_buf_put(out, "]", 1);
    }
    if (p->shard == SHARD_SPLIT)
        dsl_buf_printf(out, " split(%d)", p->shard_dim);
    else if (p->shard == SHARD_REPLICATED)
        dsl_buf_printf(out, " replicated");
    for (int i = 0; i < p->nmsplit; i++)
        dsl_buf_printf(out, " split(%d, %s)", p->msplit[i].dim, p->msplit[i].axis);
}

static void print_func(DslBuf *out, const AstFunc *f)
{
    static const char *const fk[] = {"kernel", "device", "task", "fn"};
    indent(out, 1);
    dsl_buf_printf(out, "(%s %s", fk[f->fkind], f->name ? f->name : "?");
    put_loc(out, f->loc);
    for (int i = 0; i < f->ncparams; i++) {
        indent(out, 2);
        dsl_buf_printf(out, "(cparam %s", f->cparam_names[i]);
        put_loc(out, f->cparam_locs[i]);
        if (f->cparam_defaults[i]) {
            indent(out, 3);
            print_node(out, f->cparam_defaults[i], 3);
        }
        dsl_buf_put(out, ")", 1);
    }
    for (int i = 0; i < f->nparams; i++) {
        indent(out, 2);
        dsl_buf_printf(out, "(param %s", f->params[i].name);
        print_type(out, &f->params[i]);
        put_loc(out, f->params[i].loc);
        dsl_buf_put(out, ")", 1);
    }
    for (int i = 0; i < f->nmesh; i++) { /* a task's mesh axes */
        indent(out, 2);
        dsl_buf_printf(out, "(mesh %s", f->mesh[i]->name);
        put_loc(out, f->mesh[i]->loc);
        if (f->mesh[i]->a) {
            indent(out, 3);
            print_node(out, f->mesh[i]->a, 3);
        }
        dsl_buf_put(out, ")", 1);
    }
    for (int i = 0; i < f->nresults; i++) {
        indent(out, 2);
        dsl_buf_printf(out, "(result");
        print_type(out, &f->results[i]);
        put_loc(out, f->results[i].loc);
        dsl_buf_put(out, ")", 1);
    }
    if (f->ngrid) {
        indent(out, 2);
        dsl_buf_printf(out, "(grid");
        print_list(out, f->grid, f->ngrid, 3);
        dsl_buf_put(out, ")", 1);
    }
    if (f->warps) {
        indent(out, 2);
        dsl_buf_printf(out, "(warps");
        indent(out, 3);
        print_node(out, f->warps, 3);
        dsl_buf_put(out, ")", 1);
    }
    if (f->stages) {
        indent(out, 2);
        dsl_buf_printf(out, "(stages");
        indent(out, 3);
        print_node(out, f->stages, 3);
        dsl_buf_put(out, ")", 1);
    }
    if (f->body) {
        indent(out, 2);
        print_node(out, f->body, 2);
    }
    dsl_buf_put(out, ")", 1);
}

void dsl_print_ast(DslBuf *out, const AstProgram *prog)
{
    dsl_buf_printf(out, "(program");
    if (prog) {
        for (int i = 0; i < prog->nconsts; i++) {
            const AstConst *k = &prog->consts[i];
            indent(out, 1);
            dsl_buf_printf(out, "(const %s", k->name ? k->name : "?");
            put_loc(out, k->loc);
            if (k->value) {
                indent(out, 2);
                print_node(out, k->value, 2);
            }
            dsl_buf_put(out, ")", 1);
        }
        for (int i = 0; i < prog->nhelpers; i++)
            print_func(out, prog->helpers[i]);
        for (int i = 0; i < prog->nfuncs; i++)
            print_func(out, prog->funcs[i]);
    }
    dsl_buf_put(out, ")\n", 2);
}
