/* task_print.c — the Task IR as text: names of ops, functions and
 * collectives, shardings and types as strings, the printer (`--emit=task`,
 * `blkc plan`) and the verifier that checks a built or sharded task. */
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static const char *const op_names[TK_OP_COUNT] = {
    "param", "scalar", "const", "matmul", "binary", "unary", "cast",
    "trans", "softmax", "rmsnorm", "reduce", "comm", "call", "moe",
};
static const char *const fn_names[FN_COUNT] = {
    "neg", "relu", "gelu", "silu", "exp", "log", "tanh", "sigmoid", "sqrt",
    "rsqrt", "abs",
};
static const char *const comm_names[] = {
    "none", "slice", "all_gather", "reduce_scatter", "all_reduce",
    "all_to_all",
};
static const char *const place_names[] = {
    "plain", "AllGather+GEMM", "GEMM+ReduceScatter", "GEMM+AllReduce",
};

const char *tk_fn_name(int fn) { return fn >= 0 && fn < FN_COUNT ? fn_names[fn] : "?"; }
const char *tk_op_name(int op) { return op >= 0 && op < TK_OP_COUNT ? op_names[op] : "?"; }
const char *tk_comm_name(int c) { return c >= 0 && c <= CM_ALL_TO_ALL ? comm_names[c] : "?"; }
const char *tk_place_name(int p) { return p >= 0 && p <= PL_GEMM_AR ? place_names[p] : "?"; }

void tk_shard_str(TkShard s, char *buf, size_t n)
{
    if (s.kind == SH_SPLIT)
        snprintf(buf, n, "split(%d)", s.dim);
    else
        snprintf(buf, n, "%s", s.kind == SH_PARTIAL ? "partial" : "replicated");
}

int64_t tk_numel(const TkNode *n)
{
    int64_t k = 1;
    for (int d = 0; d < n->rank; d++)
        k *= n->dims[d] < 0 ? 1 : n->dims[d];
    return k;
}

void tk_msh_str(const TkTask *t, const TkNode *n, const TkShard *msh, char *buf, size_t len)
{
    if (!t->naxes) {
        tk_shard_str(n->sh, buf, len);
        return;
    }
    if (!msh)
        msh = n->msh;
    size_t k = 0;
    buf[0] = 0;
    for (int a = 0; a < t->naxes && k < len; a++) {
        if (msh[a].kind == SH_SPLIT)
            k += (size_t)snprintf(buf + k, len - k, "%ssplit(%d, %s)", k ? " " : "", msh[a].dim,
                                  t->axname[a]);
        else if (msh[a].kind == SH_PARTIAL)
            k += (size_t)snprintf(buf + k, len - k, "%spartial(%s)", k ? " " : "", t->axname[a]);
    }
    if (!k)
        snprintf(buf, len, "replicated");
}

int64_t tk_local_dim(const TkTask *t, const TkNode *n, int d)
{
    if (t->naxes) {
        int64_t v = n->dims[d];
        for (int a = 0; a < t->naxes && v >= 0; a++)
            if (n->msh[a].kind == SH_SPLIT && n->msh[a].dim == d && t->axsize[a] > 0)
                v /= t->axsize[a];
        return v;
    }
    if (n->sh.kind == SH_SPLIT && n->sh.dim == d && t->nranks > 0 && n->dims[d] >= 0)
        return n->dims[d] / t->nranks;
    return n->dims[d];
}

void tk_type_str(const TkTask *t, const TkNode *n, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "%s", dsl_dtype_name(n->dtype));
    if (n->rank == 0 || k >= len)
        return;
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int d = 0; d < n->rank && k < len; d++) {
        const char *sep = d ? ", " : "";
        if (n->dsym[d] >= 0 && n->dims[d] < 0)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", sep, t->syms[n->dsym[d]]);
        else if (n->dsym[d] >= 0)
            k += (size_t)snprintf(buf + k, len - k, "%s%s=%lld", sep, t->syms[n->dsym[d]],
                                  (long long)n->dims[d]);
        else
            k += (size_t)snprintf(buf + k, len - k, "%s%lld", sep, (long long)n->dims[d]);
    }
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

/* ------------------------------------------------------------ printer */

void tk_print(DslBuf *out, const TkTask *t)
{
    char ty[160], sh[128];
    int *root = t->propagated ? calloc((size_t)t->nn + 1, sizeof *root) : NULL;
    if (root)
        tk_fuse_roots(t, root);
    dsl_buf_printf(out, "task %s ranks=%d", t->fn->name, t->nranks);
    for (int a = 0; a < t->naxes; a++) {
        dsl_buf_printf(out, "%s%s=", a ? ", " : " mesh(", t->axname[a]);
        if (t->axsize[a] < 0) /* a size name not bound yet */
            dsl_buf_printf(out, "%s", t->fn->mesh[a]->a->name);
        else
            dsl_buf_printf(out, "%d", t->axsize[a]);
        dsl_buf_printf(out, "%s", a == t->naxes - 1 ? ")" : "");
    }
    for (int s = 0; s < t->nsyms; s++)
        if (t->symval[s] >= 0)
            dsl_buf_printf(out, " %s=%lld", t->syms[s], (long long)t->symval[s]);
    dsl_buf_printf(out, "\n");
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        tk_type_str(t, n, ty, sizeof ty);
        tk_msh_str(t, n, NULL, sh, sizeof sh);
        dsl_buf_printf(out, "  %%%d = ", i);
        switch (n->op) {
        case TK_PARAM:
        case TK_SCALAR: dsl_buf_printf(out, "param %s", n->name); break;
        case TK_CONST: dsl_buf_printf(out, "const %g", n->fval); break;
        case TK_BINARY: dsl_buf_printf(out, "%c %%%d, %%%d", n->sub, n->a, n->b); break;
        case TK_UNARY: dsl_buf_printf(out, "%s %%%d", fn_names[n->sub], n->a); break;
        case TK_SOFTMAX: dsl_buf_printf(out, "softmax %%%d, axis=%d", n->a, n->axis); break;
        case TK_REDUCE:
            dsl_buf_printf(out, "%s %%%d, axis=%d", n->sub == RED_SUM ? "sum" : "max", n->a,
                           n->axis);
            break;
        case TK_RMSNORM: dsl_buf_printf(out, "rmsnorm %%%d, %%%d, eps=%%%d", n->a, n->b, n->c); break;
        case TK_COMM:
            dsl_buf_printf(out, "%s %%%d", n->comm == CM_NONE && !t->propagated
                               ? (n->reshard ? "reshard" : "collective")
                               : tk_comm_name(n->comm), n->a);
            if (n->comm == CM_ALL_TO_ALL || n->comm == CM_SLICE)
                dsl_buf_printf(out, " (from %s)",
                               (t->naxes ? t->n[n->a].msh[n->cax] : t->n[n->a].sh).kind ==
                                       SH_SPLIT ? "split" : "replicated");
            if (t->naxes)
                dsl_buf_printf(out, " on %s", t->axname[n->cax]);
            if (!n->user)
                dsl_buf_printf(out, " [inserted]");
            if (n->place != PL_PLAIN)
                dsl_buf_printf(out, " [%s with %%%d, %d chunk%s/shard]", tk_place_name(n->place),
                               n->gemm, n->chunks, n->chunks == 1 ? "" : "s");
            break;
        case TK_CALL:
            dsl_buf_printf(out, "call %s(", t->prog->funcs[n->callee]->name);
            for (int k = 0; k < n->cnargs; k++)
                dsl_buf_printf(out, "%s%%%d", k ? ", " : "", t->cargs[n->carg + k]);
            dsl_buf_printf(out, ")");
            break;
        case TK_MOE:
            dsl_buf_printf(out, "moe %%%d, wr=%%%d, w1=%%%d, w2=%%%d, k=%d", n->a, n->b, n->c,
                           t->cargs[n->carg], n->sub);
            if (n->cax >= 0)
                dsl_buf_printf(out, " [experts on %s]", t->naxes ? t->axname[n->cax] : "the ranks");
            break;
        default:
            dsl_buf_printf(out, "%s %%%d", tk_op_name(n->op), n->a);
            if (n->b >= 0)
                dsl_buf_printf(out, ", %%%d", n->b);
        }
        dsl_buf_printf(out, " : %s", ty);
        if (n->op != TK_CONST && n->op != TK_SCALAR && (t->propagated || n->op == TK_PARAM))
            dsl_buf_printf(out, " %s", sh);
        if (root && root[i] != i)
            dsl_buf_printf(out, " [fused into %%%d]", root[i]);
        if (n->name && n->op != TK_PARAM && n->op != TK_SCALAR)
            dsl_buf_printf(out, "  // %s", n->name);
        dsl_buf_printf(out, "\n");
    }
    free(root);
    for (int r = 0; r < t->nresults; r++) {
        if (t->naxes)
            tk_msh_str(t, NULL, &t->res_msh[r * TK_MAX_AXES], sh, sizeof sh);
        else
            tk_shard_str(t->res_sh[r], sh, sizeof sh);
        dsl_buf_printf(out, "  return%s %%%d %s\n", t->nresults > 1 ? "" : "", t->results[r], sh);
    }
}

/* ------------------------------------------------------------ verifier */

/* the shardings of node i on axis ax (-1: a task without a mesh) */
static int verify_sh(const TkTask *t, int i, int ax, char *err, size_t errlen)
{
#define SH(x) (ax < 0 ? (x)->sh : (x)->msh[ax])
    const TkNode *n = &t->n[i];
    int R = ax < 0 ? t->nranks : t->axsize[ax];
    if (SH(n).kind == SH_SPLIT) {
        if (SH(n).dim < 0 || SH(n).dim >= n->rank)
            return IR_BUG(err, errlen, "task node %%%d: split(%d) of %d dims", i, SH(n).dim,
                          n->rank);
        if (R > 0 && n->dims[SH(n).dim] >= 0 && n->dims[SH(n).dim] % R)
            return IR_BUG(err, errlen, "task node %%%d: split dim not divisible", i);
    }
    if (n->op == TK_BINARY) {
        const TkNode *x = &t->n[n->a], *y = &t->n[n->b];
        if (SH(x).kind == SH_PARTIAL || SH(y).kind == SH_PARTIAL) {
            bool lin = (n->sub == '+' || n->sub == '-')
                           ? SH(x).kind == SH_PARTIAL && SH(y).kind == SH_PARTIAL
                           : (n->sub == '*' || n->sub == '/') &&
                                 (SH(y).kind != SH_PARTIAL) && SH(x).kind == SH_PARTIAL;
            bool lin2 = n->sub == '*' && SH(y).kind == SH_PARTIAL && SH(x).kind != SH_PARTIAL;
            if (!lin && !lin2)
                return IR_BUG(err, errlen, "task node %%%d: partial operand of a nonlinear op", i);
        }
    }
    if (n->op == TK_SOFTMAX && SH(&t->n[n->a]).kind == SH_SPLIT &&
        SH(&t->n[n->a]).dim == n->axis)
        return IR_BUG(err, errlen, "task node %%%d: softmax along a split dim", i);
    return 0;
#undef SH
}

int tk_verify(const TkTask *t, char *err, size_t errlen)
{
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        const int ops[3] = {n->a, n->b, n->c};
        for (int k = 0; k < 3; k++)
            if (ops[k] >= i || ops[k] < -1)
                return IR_BUG(err, errlen, "task node %%%d: operand %%%d is not before it", i,
                              ops[k]);
        for (int k = 0; (n->op == TK_CALL || n->op == TK_MOE) && k < n->cnargs; k++)
            if (n->carg + k >= t->ncargs || t->cargs[n->carg + k] < 0 ||
                t->cargs[n->carg + k] >= i)
                return IR_BUG(err, errlen, "task node %%%d: call argument %d is not before it", i, k);
        if (n->op < 0 || n->op >= TK_OP_COUNT)
            return IR_BUG(err, errlen, "task node %%%d: bad op %d", i, n->op);
        if (n->rank < 0 || n->rank > IR_MAX_RANK)
            return IR_BUG(err, errlen, "task node %%%d: bad rank %d", i, n->rank);
        if (!t->propagated)
            continue;
        for (int ax = t->naxes ? 0 : -1; ax < t->naxes; ax++)
            if (verify_sh(t, i, ax, err, errlen))
                return -1;
        if (t->naxes && n->op == TK_COMM && (n->cax < 0 || n->cax >= t->naxes))
            return IR_BUG(err, errlen, "task node %%%d: collective on axis %d", i, n->cax);
    }
    for (int r = 0; r < t->nresults; r++) {
        if (t->results[r] < 0 || t->results[r] >= t->nn)
            return IR_BUG(err, errlen, "task result %d: bad node", r);
        for (int ax = t->naxes ? 0 : -1; t->propagated && ax < t->naxes; ax++) {
            TkShard a = ax < 0 ? t->n[t->results[r]].sh : t->n[t->results[r]].msh[ax];
            TkShard b = ax < 0 ? t->res_sh[r] : t->res_msh[r * TK_MAX_AXES + ax];
            if (a.kind != b.kind || (a.kind == SH_SPLIT && a.dim != b.dim))
                return IR_BUG(err, errlen, "task result %d: sharding differs from its declaration", r);
        }
    }
    return 0;
}
