/* task_lower.c — Task IR (sharded, placed) -> .blk source text: one device
 * function `__task_NAME` whose parameters are the rank's local shards (task
 * params in order, then one buffer per result), and the kernels it
 * launches: tiled GEMMs (plain, row-chunked with a masked store, or waiting
 * on signals per row chunk), elementwise / activation / cast / transpose
 * kernels over the last dim, softmax / sum / max along an axis, rmsnorm.
 * Collectives and their fused forms are lowered by task_comm.c. On a
 * mesh, one group per axis is made first (here) and each collective runs
 * within its axis' group. All sizes are constants: a task is compiled for
 * given sizes and ranks. */
#include "task_lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void kernel_gemm_epi(L *l, int id, GemmKind gk, const char *suffix, int64_t ch,
                            int64_t nsig, int rt, const int *leaf, int nleaf);

/* "name[0 +: d0, 0 +: d1, ...]" with local dims */
void tl_full_view(L *l, DslBuf *o, const char *name, const TkNode *n)
{
    dsl_buf_printf(o, "%s[", name);
    for (int d = 0; d < n->rank; d++)
        dsl_buf_printf(o, "%s0 +: %lld", d ? ", " : "", (long long)tl_ld(l, n, d));
    dsl_buf_printf(o, "]");
}

/* tensor type "f32[a, b]" with local dims */
void tl_local_type(L *l, DslBuf *o, const TkNode *n)
{
    dsl_buf_printf(o, "%s[", dsl_dtype_name(n->dtype));
    for (int d = 0; d < n->rank; d++)
        dsl_buf_printf(o, "%s%lld", d ? ", " : "", (long long)tl_ld(l, n, d));
    dsl_buf_printf(o, "]");
}

void tl_alloc(L *l, int id, const char *kind)
{
    const TkNode *n = &l->t->n[id];
    dsl_buf_printf(l->d, "    let %s = %s(%s", l->buf[id], kind, dsl_dtype_name(n->dtype));
    for (int d = 0; d < n->rank; d++)
        dsl_buf_printf(l->d, ", %lld", (long long)tl_ld(l, n, d));
    dsl_buf_printf(l->d, ");\n");
}

/* outer index decomposition: i0..i{r-1} for the dims in `dims` (local
 * extents ext[]), skipping dim `skip`, from program_id(0) */
static void decompose(DslBuf *o, int rank, const int64_t *ext, int skip, int upto)
{
    for (int d = 0; d < upto; d++) {
        if (d == skip)
            continue;
        int64_t below = 1;
        for (int e = d + 1; e < upto; e++)
            if (e != skip)
                below *= ext[e];
        dsl_buf_printf(o, "    let i%d = program_id(0) / %lld %% %lld;\n", d, (long long)below,
                       (long long)ext[d]);
    }
    (void)rank;
}

static int64_t prod_except(const int64_t *ext, int upto, int skip)
{
    int64_t p = 1;
    for (int d = 0; d < upto; d++)
        if (d != skip)
            p *= ext[d];
    return p;
}

/* ------------------------------------------------------------ elementwise */

/* operand expression for out index (i0.., c +: BC): tensor load, literal or
 * scalar param; `trans` swaps the last two index positions */
static void operand(L *l, DslBuf *o, const TkNode *out, int x, const char *pname, bool trans)
{
    const TkNode *X = &l->t->n[x];
    if (X->op == TK_CONST) {
        dsl_buf_printf(o, "(%.17g as %s)", X->fval, tl_ctype(out->dtype));
        return;
    }
    if (X->op == TK_SCALAR) {
        dsl_buf_printf(o, "(%s as %s)", pname, tl_ctype(out->dtype));
        return;
    }
    int r = out->rank, off = r - X->rank;
    dsl_buf_printf(o, "(%s[", pname);
    for (int d = 0; d < X->rank; d++) {
        int od = d + off;
        if (trans && od >= r - 2)
            od = od == r - 1 ? r - 2 : r - 1;
        bool one = tl_ld(l, X, d) == 1 && tl_ld(l, out, od) != 1;
        const char *sep = d ? ", " : "";
        if (one)
            dsl_buf_printf(o, "%s0", sep);
        else if (od == r - 1)
            dsl_buf_printf(o, "%sc +: BC", sep);
        else
            dsl_buf_printf(o, "%si%d", sep, od);
    }
    dsl_buf_printf(o, "] as %s)", tl_ctype(out->dtype));
}

/* the value of a unary op, an expression in x */
static const char *const unary_fx[FN_COUNT] = {
    "-x", "maximum(x, 0.0)", "0.5 * x * (1.0 + erf(x * 0.7071067811865476))",
    "x * sigmoid(x)", "exp(x)", "log(x)", "tanh(x)", "sigmoid(x)", "sqrt(x)",
    "rsqrt(x)", "abs(x)",
};

/* an elementwise kernel's end: the store of `val` into the output tile
 * (rank r; rows i0.., columns c +: BC) */
static void ew_close(DslBuf *k, int r, const char *val)
{
    dsl_buf_printf(k, "    O[");
    for (int d = 0; d < r - 1; d++)
        dsl_buf_printf(k, "i%d, ", d);
    dsl_buf_printf(k, "c +: BC] = %s;\n}\n\n", val);
}

/* the end of an elementwise kernel's header and its start: output O
 * (after the other params when `after`), the grid (rows, BC-column chunks
 * of the last dim, extents ext), the row indices and column start c */
static void ew_open(L *l, DslBuf *k, const TkNode *n, const int64_t *ext, bool after)
{
    int r = n->rank;
    dsl_buf_printf(k, "%sO: ", after ? ", " : "");
    tl_local_type(l, k, n);
    dsl_buf_printf(k, ") grid(%lld, cdiv(%lld, BC)) {\n", (long long)prod_except(ext, r - 1, -1),
                   (long long)ext[r - 1]);
    decompose(k, r, ext, -1, r - 1);
    dsl_buf_printf(k, "    let c = program_id(1) * BC;\n");
}

static void kernel_elementwise(L *l, int id)
{
    const TkNode *n = &l->t->n[id];
    int r = n->rank;
    int64_t ext[IR_MAX_RANK];
    for (int d = 0; d < r; d++)
        ext[d] = tl_ld(l, n, d);
    int64_t bc = tl_imin(ext[r - 1], 256);
    int ops[2] = {n->a, n->op == TK_BINARY ? n->b : -1};
    DslBuf *k = l->k;
    dsl_buf_printf(k, "kernel __k%d<BC = %lld>(", id, (long long)bc);
    int np = 0;
    for (int i = 0; i < 2; i++) {
        if (ops[i] < 0)
            continue;
        const TkNode *X = &l->t->n[ops[i]];
        if (X->op == TK_CONST)
            continue;
        if (X->op == TK_SCALAR)
            dsl_buf_printf(k, "%s%c: %s", np++ ? ", " : "", 'A' + i, dsl_dtype_name(X->dtype));
        else {
            dsl_buf_printf(k, "%s%c: ", np++ ? ", " : "", 'A' + i);
            tl_local_type(l, k, X);
        }
    }
    ew_open(l, k, n, ext, np > 0);
    dsl_buf_printf(k, "    let x = ");
    operand(l, k, n, n->a, "A", n->op == TK_TRANS);
    dsl_buf_printf(k, ";\n");
    if (n->op == TK_BINARY) {
        dsl_buf_printf(k, "    let y = ");
        operand(l, k, n, n->b, "B", false);
        dsl_buf_printf(k, ";\n");
    }
    const char *v = "x";
    char expr[256];
    if (n->op == TK_BINARY) {
        snprintf(expr, sizeof expr, "x %c y", n->sub);
        v = expr;
    } else if (n->op == TK_UNARY) {
        v = unary_fx[n->sub];
    }
    ew_close(k, r, v);
    /* device: launch */
    tl_alloc(l, id, "empty");
    dsl_buf_printf(l->d, "    launch __k%d(", id);
    np = 0;
    for (int i = 0; i < 2; i++)
        if (ops[i] >= 0 && l->t->n[ops[i]].op != TK_CONST)
            dsl_buf_printf(l->d, "%s%s", np++ ? ", " : "", l->buf[ops[i]]);
    dsl_buf_printf(l->d, "%s%s);\n", np ? ", " : "", l->buf[id]);
}

/* ------------------------------------------------------------ fusion */

static bool is_ew(const TkNode *n)
{
    return n->op == TK_BINARY || n->op == TK_UNARY || n->op == TK_CAST;
}

void tk_fuse_roots(const TkTask *t, int *root)
{
    for (int i = 0; i < t->nn; i++)
        root[i] = i;
    const char *env = getenv("BLKC_TASK_FUSE"); /* 0: off (tests, benchmarks) */
    if (t->no_fuse || t->nn == 0 || (env && strcmp(env, "0") == 0))
        return;
    int *cons = malloc(sizeof *cons * (size_t)t->nn);
    if (!cons)
        return; /* no fusion: still correct */
    for (int i = 0; i < t->nn; i++)
        cons[i] = -1;
    for (int j = 0; j < t->nn; j++) {
        const TkNode *n = &t->n[j];
        const int ops[3] = {n->a, n->b, n->c};
        for (int k = 0; k < 3; k++)
            if (ops[k] >= 0)
                cons[ops[k]] = cons[ops[k]] == -1 ? j : -2;
        for (int k = 0; (n->op == TK_CALL || n->op == TK_MOE) && k < n->cnargs; k++)
            cons[t->cargs[n->carg + k]] = -2;
    }
    for (int r = 0; r < t->nresults; r++)
        cons[t->results[r]] = -2;
    bool *has_mm = calloc((size_t)t->nn + 1, sizeof *has_mm);
    for (int i = t->nn - 1; i >= 0 && has_mm; i--) {
        const TkNode *n = &t->n[i];
        int c = cons[i];
        /* a 2-D GEMM of its own (not one fused with a collective) joins
         * as the group's epilogue source, one GEMM per group */
        bool mm = n->op == TK_MATMUL && n->rank == 2 && !has_mm[c >= 0 ? root[c] : 0];
        for (int j = 0; mm && j < t->nn; j++)
            mm = !(t->n[j].op == TK_COMM && t->n[j].gemm == i && t->n[j].place != PL_PLAIN);
        if ((!is_ew(n) && !mm) || n->uses != 1 || c < 0 || !is_ew(&t->n[c]) ||
            t->n[c].rank != n->rank)
            continue;
        bool same = true; /* unknown sizes (--emit=task): the same size name */
        for (int d = 0; d < n->rank && same; d++)
            same = tk_local_dim(t, n, d) == tk_local_dim(t, &t->n[c], d) &&
                   (n->dims[d] >= 0 || (n->dsym[d] >= 0 && n->dsym[d] == t->n[c].dsym[d] &&
                                        n->sh.kind == t->n[c].sh.kind &&
                                        n->sh.dim == t->n[c].sh.dim &&
                                        memcmp(n->msh, t->n[c].msh, sizeof n->msh) == 0));
        if (same) {
            root[i] = root[c];
            if (mm)
                has_mm[root[c]] = true;
        }
    }
    free(has_mm);
    free(cons);
}

/* text of `fx` (an expression of the identifier x) with x replaced */
static void subst_x(DslBuf *o, const char *fx, const char *with)
{
    for (const char *p = fx; *p; p++) {
        bool word = (p > fx && (p[-1] == '_' || ((p[-1] | 32) >= 'a' && (p[-1] | 32) <= 'z'))) ||
                    p[1] == '_' || ((p[1] | 32) >= 'a' && (p[1] | 32) <= 'z') ||
                    (p[1] >= '0' && p[1] <= '9');
        if (*p == 'x' && !word)
            dsl_buf_printf(o, "%s", with);
        else
            dsl_buf_put(o, p, 1);
    }
}

/* operand x of an epilogue member `out` (2-D, the GEMM tile [m +: BM,
 * n +: BN]) as a tile expression */
static void operand2d(L *l, DslBuf *o, const TkNode *out, int x, const char *pname,
                      int64_t BM, int64_t BN)
{
    const TkNode *X = &l->t->n[x];
    if (X->op == TK_CONST || X->op == TK_SCALAR) {
        operand(l, o, out, x, pname, false);
        return;
    }
    int off = 2 - X->rank;
    dsl_buf_printf(o, "(%s[", pname);
    for (int d = 0; d < X->rank; d++) {
        int od = d + off;
        const char *sep = d ? ", " : "";
        if (tl_ld(l, X, d) == 1 && tl_ld(l, out, od) != 1)
            dsl_buf_printf(o, "%s0 +: 1", sep);
        else if (od == 0)
            dsl_buf_printf(o, "%sm +: %lld", sep, (long long)BM);
        else
            dsl_buf_printf(o, "%sn +: %lld", sep, (long long)BN);
    }
    dsl_buf_printf(o, "] as %s)", tl_ctype(out->dtype));
}

/* the kernel parameters L0: .. L<nleaf-1>: of a group's outside operands
 * (scalars by dtype, tensors by local type), `, `-separated; `lead`: a
 * `, ` before the first too */
static void leaf_params(L *l, DslBuf *k, const int *leaf, int nleaf, bool lead)
{
    for (int j = 0; j < nleaf; j++) {
        const TkNode *X = &l->t->n[leaf[j]];
        dsl_buf_printf(k, "%sL%d: ", j || lead ? ", " : "", j);
        if (X->op == TK_SCALAR)
            dsl_buf_printf(k, "%s", dsl_dtype_name(X->dtype));
        else
            tl_local_type(l, k, X);
    }
}

/* `let t<m> = ...;` for member m of the elementwise group with root rt:
 * one `let` per operand (a member's t<x>, or leaf L<j> loaded as a tile)
 * and the member's value in its compute type, rounded to its dtype when
 * that is narrower.  BM > 0: the operands are [BM, BN] tiles of a GEMM
 * epilogue (operand2d); else the tile of a fused elementwise kernel. */
static void member_let(L *l, int m, int rt, const int *root, const int *leaf, int nleaf,
                       int64_t BM, int64_t BN)
{
    DslBuf *k = l->k;
    const TkNode *M = &l->t->n[m];
    const char *ct = tl_ctype(M->dtype);
    const int ops[2] = {M->a, M->op == TK_BINARY ? M->b : -1};
    char on[2][32];
    for (int q = 0; q < 2; q++) {
        int x = ops[q];
        if (x < 0)
            continue;
        snprintf(on[q], sizeof on[q], "u%d_%d", m, q);
        dsl_buf_printf(k, "    let %s = ", on[q]);
        if (root[x] == rt) {
            dsl_buf_printf(k, "t%d as %s;\n", x, ct);
            continue;
        }
        int j = 0;
        while (j < nleaf && leaf[j] != x)
            j++;
        char pn[16];
        snprintf(pn, sizeof pn, "L%d", j);
        if (BM > 0)
            operand2d(l, k, M, x, pn, BM, BN);
        else
            operand(l, k, M, x, pn, false);
        dsl_buf_printf(k, ";\n");
    }
    bool narrow = M->dtype != DT_F32 && M->dtype != DT_F64;
    dsl_buf_printf(k, "    let t%d = %s", m, narrow ? "((" : "");
    if (M->op == TK_BINARY)
        dsl_buf_printf(k, "%s %c %s", on[0], M->sub, on[1]);
    else if (M->op == TK_UNARY)
        subst_x(k, unary_fx[M->sub], on[0]);
    else
        dsl_buf_printf(k, "%s", on[0]);
    if (narrow)
        dsl_buf_printf(k, ") as %s) as %s", dsl_dtype_name(M->dtype), ct);
    dsl_buf_printf(k, ";\n");
}

/* One kernel for the elementwise nodes whose root is `rt` (a chain or
 * tree of single-use values of the same local shape): every operand
 * outside the group is loaded once per tile, each member is a `let` in
 * the member's compute type (rounded to its dtype when that is narrower,
 * as a kernel of its own would store it), and only the root is stored. */
static void kernel_fused(L *l, int rt, const int *root)
{
    const TkTask *t = l->t;
    const TkNode *n = &t->n[rt];
    int r = n->rank;
    int64_t ext[IR_MAX_RANK];
    for (int d = 0; d < r; d++)
        ext[d] = tl_ld(l, n, d);
    int64_t bc = tl_imin(ext[r - 1], 256);
    int first = rt;
    for (int i = 0; i < rt; i++)
        if (root[i] == rt) {
            first = i;
            break;
        }
    /* the leaves: operands outside the group (tensors and scalar params) */
    int *leaf = calloc((size_t)(2 * (rt - first + 1)) + 1, sizeof *leaf);
    int nleaf = 0;
    if (!leaf) {
        l->k->oom = true;
        return;
    }
    for (int m = first; m <= rt; m++) {
        if (root[m] != rt || t->n[m].op == TK_MATMUL)
            continue;
        const int ops[2] = {t->n[m].a, t->n[m].op == TK_BINARY ? t->n[m].b : -1};
        for (int k = 0; k < 2; k++) {
            int x = ops[k];
            if (x < 0 || root[x] == rt || t->n[x].op == TK_CONST)
                continue;
            bool seen = false;
            for (int j = 0; j < nleaf; j++)
                seen |= leaf[j] == x;
            if (!seen)
                leaf[nleaf++] = x;
        }
    }
    DslBuf *k = l->k;
    int mm = -1;
    for (int m = first; m <= rt; m++)
        if (root[m] == rt && t->n[m].op == TK_MATMUL)
            mm = m;
    if (mm >= 0) {
        dsl_buf_printf(k, "// GEMM %%%d with the epilogue", mm);
        for (int m = first; m <= rt; m++)
            if (root[m] == rt && m != mm)
                dsl_buf_printf(k, " %%%d", m);
        dsl_buf_printf(k, "\n");
        kernel_gemm_epi(l, mm, G_PLAIN, "", 0, 0, rt, leaf, nleaf);
        tl_alloc(l, rt, "empty");
        const TkNode *G = &t->n[mm];
        dsl_buf_printf(l->d, "    launch __k%d(%s, %s", mm, l->buf[G->a], l->buf[G->b]);
        for (int j = 0; j < nleaf; j++)
            dsl_buf_printf(l->d, ", %s", l->buf[leaf[j]]);
        dsl_buf_printf(l->d, ", %s);\n", l->buf[rt]);
        free(leaf);
        return;
    }
    dsl_buf_printf(k, "// fused:");
    for (int m = first; m <= rt; m++)
        if (root[m] == rt)
            dsl_buf_printf(k, " %%%d", m);
    dsl_buf_printf(k, "\nkernel __k%d<BC = %lld>(", rt, (long long)bc);
    leaf_params(l, k, leaf, nleaf, false);
    ew_open(l, k, n, ext, nleaf > 0);
    for (int m = first; m <= rt; m++) {
        if (root[m] != rt)
            continue;
        member_let(l, m, rt, root, leaf, nleaf, 0, 0);
    }
    char tv[32];
    snprintf(tv, sizeof tv, "t%d", rt);
    ew_close(k, r, tv);
    tl_alloc(l, rt, "empty");
    dsl_buf_printf(l->d, "    launch __k%d(", rt);
    for (int j = 0; j < nleaf; j++)
        dsl_buf_printf(l->d, "%s%s", j ? ", " : "", l->buf[leaf[j]]);
    dsl_buf_printf(l->d, "%s%s);\n", nleaf ? ", " : "", l->buf[rt]);
    free(leaf);
}

/* softmax / sum / max along an axis, rmsnorm along the last */
static void kernel_rowwise(L *l, int id)
{
    const TkNode *n = &l->t->n[id], *X = &l->t->n[n->a];
    int r = X->rank, ax = n->op == TK_RMSNORM ? r - 1 : n->axis;
    int64_t ext[IR_MAX_RANK];
    for (int d = 0; d < r; d++)
        ext[d] = tl_ld(l, X, d);
    int64_t len = ext[ax];
    DslBuf *k = l->k;
    const char *ct = tl_ctype(n->dtype);
    dsl_buf_printf(k, "kernel __k%d(X: ", id);
    tl_local_type(l, k, X);
    if (n->op == TK_RMSNORM) {
        dsl_buf_printf(k, ", W: ");
        tl_local_type(l, k, &l->t->n[n->b]);
        if (l->t->n[n->c].op == TK_SCALAR)
            dsl_buf_printf(k, ", eps: %s", dsl_dtype_name(l->t->n[n->c].dtype));
    }
    dsl_buf_printf(k, ", O: ");
    tl_local_type(l, k, n);
    dsl_buf_printf(k, ") grid(%lld) {\n", (long long)prod_except(ext, r, ax));
    decompose(k, r, ext, ax, r);
    DslBuf idx = {0}, oidx = {0};
    for (int d = 0; d < r; d++) {
        if (d == ax)
            dsl_buf_printf(&idx, "%s0 +: %lld", d ? ", " : "", (long long)len);
        else
            dsl_buf_printf(&idx, "%si%d", d ? ", " : "", d);
        if (d != ax)
            dsl_buf_printf(&oidx, "%si%d", oidx.len ? ", " : "", d);
    }
    const char *pad = n->op == TK_SOFTMAX || (n->op == TK_REDUCE && n->sub == RED_MAX)
                          ? ", pad = -inf" : "";
    dsl_buf_printf(k, "    let v = load(X[%s]%s) as %s;\n", idx.data, pad, ct);
    switch (n->op) {
    case TK_SOFTMAX:
        dsl_buf_printf(k, "    let e = exp(v - max(v));\n    O[%s] = e / sum(e);\n", idx.data);
        break;
    case TK_REDUCE:
        dsl_buf_printf(k, "    O[%s] = %s(v);\n", oidx.data, n->sub == RED_SUM ? "sum" : "max");
        break;
    case TK_RMSNORM: {
        const TkNode *E = &l->t->n[n->c];
        char eps[64];
        if (E->op == TK_SCALAR)
            snprintf(eps, sizeof eps, "(eps as %s)", ct);
        else
            snprintf(eps, sizeof eps, "(%.17g as %s)", E->fval, ct);
        dsl_buf_printf(k, "    let s = rsqrt(sum(v * v) / (%lld as %s) + %s);\n", (long long)len,
                       ct, eps);
        dsl_buf_printf(k, "    O[%s] = v * s * (W[0 +: %lld] as %s);\n", idx.data, (long long)len, ct);
        break;
    }
    }
    dsl_buf_printf(k, "}\n\n");
    dsl_buf_free(&idx);
    dsl_buf_free(&oidx);
    tl_alloc(l, id, "empty");
    dsl_buf_printf(l->d, "    launch __k%d(%s", id, l->buf[n->a]);
    if (n->op == TK_RMSNORM) {
        dsl_buf_printf(l->d, ", %s", l->buf[n->b]);
        if (l->t->n[n->c].op == TK_SCALAR)
            dsl_buf_printf(l->d, ", %s", l->buf[n->c]);
    }
    dsl_buf_printf(l->d, ", %s);\n", l->buf[id]);
}

/* ------------------------------------------------------------ GEMMs */


/* the members of GEMM `mm`'s epilogue group (root rt) after the k loop:
 * the same lets as kernel_fused, on the [BM, BN] tile, ending in the store
 * of the root; `leaf` are the group's outside operands (kernel params L0..) */
static void gemm_epilogue(L *l, int mm, int rt, const int *leaf, int nleaf, int64_t BM,
                          int64_t BN)
{
    const TkTask *t = l->t;
    DslBuf *k = l->k;
    const TkNode *G = &t->n[mm];
    if (G->dtype != DT_F32 && G->dtype != DT_F64)
        dsl_buf_printf(k, "    let t%d = (acc as %s) as %s;\n", mm, dsl_dtype_name(G->dtype),
                       tl_ctype(G->dtype));
    else
        dsl_buf_printf(k, "    let t%d = acc as %s;\n", mm, tl_ctype(G->dtype));
    for (int m = 0; m <= rt; m++) {
        if (l->root[m] != rt || m == mm)
            continue;
        member_let(l, m, rt, l->root, leaf, nleaf, BM, BN);
    }
    dsl_buf_printf(k, "    C[m +: %lld, n +: %lld] = t%d;\n", (long long)BM, (long long)BN, rt);
}

/* kernel kID[suffix]: C = A @ B (local shapes); G_ROWS computes rows
 * [row0, row0 + CH) only; G_WAIT waits for ready[row / CH] and starts at
 * this rank's shard. */
void tl_kernel_gemm(L *l, int id, GemmKind gk, const char *suffix, int64_t ch,
                        int64_t nsig)
{
    kernel_gemm_epi(l, id, gk, suffix, ch, nsig, -1, NULL, 0);
}

/* rt >= 0: a plain 2-D GEMM whose tile runs the epilogue of group rt
 * (leaves: its outside operands) and stores the root into C */
static void kernel_gemm_epi(L *l, int id, GemmKind gk, const char *suffix, int64_t ch,
                            int64_t nsig, int rt, const int *leaf, int nleaf)
{
    const TkNode *n = &l->t->n[id], *A = &l->t->n[n->a], *B = &l->t->n[n->b];
    int r = n->rank;
    int64_t M = tl_ld(l, n, r - 2), N = tl_ld(l, n, r - 1), K = tl_ld(l, A, A->rank - 1);
    int64_t NB = r == 3 ? tl_ld(l, n, 0) : 1;
    int64_t BM = tl_imin(M, 32), BN = tl_imin(N, 32), BK = tl_imin(K, 32);
    if (gk != G_PLAIN) { /* tiles never straddle a chunk */
        BM = 32;
        while (BM > 1 && ch % BM)
            BM /= 2;
    }
    bool f64 = n->dtype == DT_F64;
    DslBuf *k = l->k;
    dsl_buf_printf(k, "kernel __k%d%s(A: ", id, suffix);
    tl_local_type(l, k, A);
    dsl_buf_printf(k, ", B: ");
    tl_local_type(l, k, B);
    leaf_params(l, k, leaf, nleaf, true);
    dsl_buf_printf(k, ", C: ");
    tl_local_type(l, k, rt >= 0 ? &l->t->n[rt] : n);
    if (gk == G_ROWS)
        dsl_buf_printf(k, ", row0: i32");
    if (gk == G_WAIT)
        dsl_buf_printf(k, ", ready: signal[%lld]", (long long)nsig);
    dsl_buf_printf(k, ") grid(cdiv(%lld, %lld), cdiv(%lld, %lld), %lld) {\n",
                   (long long)(gk == G_ROWS ? ch : M), (long long)BM, (long long)N, (long long)BN,
                   (long long)NB);
    if (gk == G_ROWS)
        dsl_buf_printf(k, "    let m = row0 + program_id(0) * %lld;\n", (long long)BM);
    else if (gk == G_WAIT) {
        int64_t tiles = M / BM, tps = tiles / l->R;
        dsl_buf_printf(k, "    let m = ((program_id(0) + rank() * %lld) %% %lld) * %lld;\n",
                       (long long)tps, (long long)tiles, (long long)BM);
        dsl_buf_printf(k, "    wait(ready[m / %lld] >= 1);\n", (long long)ch);
    } else
        dsl_buf_printf(k, "    let m = program_id(0) * %lld;\n", (long long)BM);
    dsl_buf_printf(k, "    let n = program_id(1) * %lld;\n    let b = program_id(2);\n", (long long)BN);
    dsl_buf_printf(k, "    var acc = zeros(%s, %lld, %lld);\n", f64 ? "f64" : "f32", (long long)BM,
                   (long long)BN);
    const char *ba = A->rank == 3 ? "b, " : "", *bb = B->rank == 3 ? "b, " : "",
               *bc = r == 3 ? "b, " : "";
    dsl_buf_printf(k, "    for k in 0 .. %lld step %lld {\n", (long long)K, (long long)BK);
    dsl_buf_printf(k, "        acc = dot(A[%sm +: %lld, k +: %lld], B[%sk +: %lld, n +: %lld], acc);\n",
                   ba, (long long)BM, (long long)BK, bb, (long long)BK, (long long)BN);
    dsl_buf_printf(k, "    }\n");
    if (gk == G_ROWS) {
        dsl_buf_printf(k, "    let rows = m + arange(%lld);\n", (long long)BM);
        dsl_buf_printf(k, "    store(C[%sm +: %lld, n +: %lld], acc as %s, mask = (rows < row0 + %lld)[:, None]);\n",
                       bc, (long long)BM, (long long)BN, dsl_dtype_name(n->dtype), (long long)ch);
    } else if (rt >= 0) {
        gemm_epilogue(l, id, rt, leaf, nleaf, BM, BN);
    } else {
        dsl_buf_printf(k, "    C[%sm +: %lld, n +: %lld] = acc;\n", bc, (long long)BM, (long long)BN);
    }
    dsl_buf_printf(k, "}\n\n");
}

static void gemm_plain(L *l, int id)
{
    const TkNode *n = &l->t->n[id];
    tl_kernel_gemm(l, id, G_PLAIN, "", 0, 0);
    tl_alloc(l, id, "empty");
    dsl_buf_printf(l->d, "    launch __k%d(%s, %s, %s);\n", id, l->buf[n->a], l->buf[n->b], l->buf[id]);
}

/* ------------------------------------------------------------ calls */

/* scalar argument text for a callee's scalar parameter of dtype dt */
static void scalar_arg(L *l, DslBuf *o, int x, int dt)
{
    const TkNode *X = &l->t->n[x];
    if (X->op == TK_CONST)
        dsl_buf_printf(o, "(%.17g%s as %s)", X->fval,
                       X->fval == (double)(int64_t)X->fval && dsl_is_float(dt) ? ".0" : "",
                       dsl_dtype_name(dt));
    else
        dsl_buf_printf(o, "(%s as %s)", l->buf[x], dsl_dtype_name(dt));
}

typedef struct Sub { const char *from; char to[64]; } Sub;

/* the body of `fn` (between its braces) with identifiers renamed by subs */
static int inline_body(L *l, const AstFunc *fn, const Sub *subs, int nsubs, char *err,
                       size_t errlen)
{
    const char *src = l->t->src, *end = src + l->t->srclen, *p = src;
    for (int line = 1; p < end && line < fn->body->loc.line; p++)
        if (*p == '\n')
            line++;
    p += fn->body->loc.col - 1;
    if (p >= end || *p != '{') {
        snprintf(err, errlen, "internal: cannot find the body of device function %s", fn->name);
        return -1;
    }
    p++;
    int depth = 1;
    DslBuf *o = l->d;
    dsl_buf_printf(o, "    { // device function %s, inlined\n", fn->name);
    while (p < end) {
        if (p[0] == '/' && p + 1 < end && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
        } else if (p[0] == '/' && p + 1 < end && p[1] == '*') {
            p += 2;
            while (p + 1 < end && !(p[0] == '*' && p[1] == '/'))
                p++;
            p += 2;
        } else if (*p >= '0' && *p <= '9') {
            const char *q = p;
            while (q < end && (((*q | 32) >= 'a' && (*q | 32) <= 'z') || (*q >= '0' && *q <= '9') ||
                               *q == '_' || (*q == '.' && !(q + 1 < end && q[1] == '.'))))
                q++;
            dsl_buf_put(o, p, (size_t)(q - p));
            p = q;
        } else if (((*p | 32) >= 'a' && (*p | 32) <= 'z') || *p == '_') {
            const char *q = p;
            while (q < end && (((*q | 32) >= 'a' && (*q | 32) <= 'z') || (*q >= '0' && *q <= '9') ||
                               *q == '_'))
                q++;
            int k = 0;
            while (k < nsubs && (strlen(subs[k].from) != (size_t)(q - p) ||
                                 strncmp(subs[k].from, p, (size_t)(q - p)) != 0))
                k++;
            if (k < nsubs)
                dsl_buf_printf(o, "%s", subs[k].to);
            else
                dsl_buf_put(o, p, (size_t)(q - p));
            p = q;
        } else {
            if (*p == '{')
                depth++;
            if (*p == '}' && --depth == 0)
                break;
            dsl_buf_put(o, p, 1);
            p++;
        }
    }
    dsl_buf_printf(o, "\n    }\n");
    return 0;
}

/* a call: launch the kernel on the local shards, or inline the device
 * function's body with its parameters renamed to the arguments' buffers
 * and its size names replaced by the local extents */
static int lower_call(L *l, int id, char *err, size_t errlen)
{
    const TkTask *t = l->t;
    const TkNode *n = &t->n[id];
    const AstFunc *cf = t->prog->funcs[n->callee];
    const int *av = &t->cargs[n->carg];
    tl_alloc(l, id, "empty");
    if (cf->fkind == FN_KERNEL) {
        dsl_buf_printf(l->d, "    launch %s(", cf->name);
        for (int i = 0; i < n->cnargs; i++) {
            if (i)
                dsl_buf_printf(l->d, ", ");
            if (cf->params[i].tkind == TY_SCALAR)
                scalar_arg(l, l->d, av[i], cf->params[i].dtype);
            else
                dsl_buf_printf(l->d, "%s", l->buf[av[i]]);
        }
        dsl_buf_printf(l->d, "%s%s);\n", n->cnargs ? ", " : "", l->buf[id]);
        return 0;
    }
    Sub subs[96];
    int ns = 0;
    for (int i = 0; i < cf->nparams && ns < 90; i++) {
        const AstParam *cp = &cf->params[i];
        bool out = i == cf->nparams - 1;
        const TkNode *X = out ? n : &t->n[av[i]];
        Sub *sb = &subs[ns++];
        sb->from = cp->name;
        if (cp->tkind == TY_SCALAR) {
            DslBuf tmp = {0};
            scalar_arg(l, &tmp, av[i], cp->dtype);
            snprintf(sb->to, sizeof sb->to, "%s", tmp.data ? tmp.data : "0");
            dsl_buf_free(&tmp);
            continue;
        }
        snprintf(sb->to, sizeof sb->to, "%s", out ? l->buf[id] : l->buf[av[i]]);
        for (int d = 0; d < cp->ndims && ns < 96; d++) {
            if (!tk_dim_is_size(t, cp->dims[d]))
                continue;
            int k = 0;
            while (k < ns && strcmp(subs[k].from, cp->dims[d]->name) != 0)
                k++;
            if (k < ns)
                continue;
            subs[ns].from = cp->dims[d]->name;
            snprintf(subs[ns].to, sizeof subs[ns].to, "(%lld)", (long long)tl_ld(l, X, d));
            ns++;
        }
    }
    return inline_body(l, cf, subs, ns, err, errlen);
}

/* ------------------------------------------------------------ driver */

int tk_lower_src(const TkTask *t, DslBuf *out, char *err, size_t errlen)
{
    if (!t->propagated || t->nranks < 1)
        return IR_BUG(err, errlen, "task lowering needs shardings and ranks");
    for (int s = 0; s < t->nsyms; s++)
        if (t->symval[s] < 0) {
            snprintf(err, errlen, "size %s of task %s is not known: give %s=VALUE or a tensor "
                     "that has it", t->syms[s], t->fn->name, t->syms[s]);
            return -1;
        }
    DslBuf kb = {0}, db = {0};
    const char **buf = calloc((size_t)t->nn + 1, sizeof *buf);
    char (*names)[32] = calloc((size_t)t->nn + 1, sizeof *names);
    if (!buf || !names) {
        free(buf);
        free(names);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    L l = {t, &kb, &db, t->nranks, buf, names, NULL, -1};
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op == TK_PARAM || n->op == TK_SCALAR)
            snprintf(names[i], sizeof names[i], "p_%.24s", n->name);
        else
            snprintf(names[i], sizeof names[i], "v%d", i);
        buf[i] = names[i];
    }
    /* which GEMMs are fused into a collective */
    int *fused_by = calloc((size_t)t->nn + 1, sizeof *fused_by);
    if (!fused_by) {
        free(buf);
        free(names);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int *root = calloc((size_t)t->nn + 1, sizeof *root);
    if (!root) {
        free(buf);
        free(names);
        free(fused_by);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    tk_fuse_roots(t, root);
    l.root = root;
    for (int i = 0; i < t->nn; i++)
        fused_by[i] = -1;
    for (int i = 0; i < t->nn; i++)
        if (t->n[i].op == TK_COMM && t->n[i].place != PL_PLAIN && t->n[i].gemm >= 0)
            fused_by[t->n[i].gemm] = i;
    /* on a mesh, one group per axis: the ranks that share every other
     * axis' index (color: the rank without this axis' index), ordered by
     * their index on the axis */
    for (int a = 0; a < t->naxes; a++)
        dsl_buf_printf(&db, "    let g%d = group(rank() - rank() / %d %% %d * %d, "
                       "rank() / %d %% %d);\n", a, t->axstride[a], t->axsize[a],
                       t->axstride[a], t->axstride[a], t->axsize[a]);
    int rc = 0;
    for (int i = 0; i < t->nn && !rc; i++) {
        const TkNode *n = &t->n[i];
        switch (n->op) {
        case TK_PARAM: case TK_SCALAR: case TK_CONST:
            break;
        case TK_BINARY: case TK_UNARY: case TK_CAST: case TK_TRANS: {
            if (root[i] != i)
                break; /* computed in its consumer's kernel */
            bool group = false;
            for (int j = 0; j < i && !group; j++)
                group = root[j] == i;
            if (group)
                kernel_fused(&l, i, root);
            else
                kernel_elementwise(&l, i);
            break;
        }
        case TK_SOFTMAX: case TK_REDUCE: case TK_RMSNORM:
            kernel_rowwise(&l, i);
            break;
        case TK_MATMUL:
            if (root[i] != i)
                break; /* a GEMM with an epilogue: emitted at the group's root */
            if (fused_by[i] >= 0 && t->n[fused_by[i]].place == PL_AG_GEMM)
                tl_ag_gemm(&l, fused_by[i], i);
            else if (fused_by[i] < 0)
                gemm_plain(&l, i);
            break;
        case TK_CALL:
            rc = lower_call(&l, i, err, errlen);
            break;
        case TK_MOE:
            rc = tk_moe_lower(t, i, buf, &kb, &db, err, errlen);
            break;
        case TK_COMM:
            tl_comm(&l, i);
            break;
        }
    }
    /* the device function; after the file's own text when the task calls
     * its kernels / device functions */
    bool calls = false;
    for (int i = 0; i < t->nn; i++)
        calls |= t->n[i].op == TK_CALL;
    if (calls && !t->src && !rc)
        rc = IR_BUG(err, errlen, "task %s calls functions but its source is not given",
                    t->fn->name);
    if (calls && t->src)
        dsl_buf_printf(out, "%.*s\n", (int)t->srclen, t->src);
    dsl_buf_printf(out, "// generated by blkc from task %s for %d rank%s", t->fn->name,
                   t->nranks, t->nranks == 1 ? "" : "s");
    for (int a = 0; a < t->naxes; a++)
        dsl_buf_printf(out, "%s%s = %d%s", a ? ", " : ", mesh(", t->axname[a], t->axsize[a],
                       a == t->naxes - 1 ? ")" : "");
    dsl_buf_printf(out, "\n\n");
    dsl_buf_put(out, kb.data ? kb.data : "", kb.len);
    dsl_buf_printf(out, "device __task_%s(", t->fn->name);
    int np = 0;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op == TK_PARAM) {
            dsl_buf_printf(out, "%s%s: ", np++ ? ", " : "", buf[i]);
            tl_local_type(&l, out, n);
        } else if (n->op == TK_SCALAR) {
            dsl_buf_printf(out, "%s%s: %s", np++ ? ", " : "", buf[i], dsl_dtype_name(n->dtype));
        }
    }
    for (int r = 0; r < t->nresults; r++) {
        dsl_buf_printf(out, "%sres%d: ", np++ ? ", " : "", r);
        tl_local_type(&l, out, &t->n[t->results[r]]);
    }
    dsl_buf_printf(out, ") {\n");
    dsl_buf_put(out, db.data ? db.data : "", db.len);
    for (int r = 0; r < t->nresults; r++) {
        char nm[16];
        snprintf(nm, sizeof nm, "res%d", r);
        const TkNode *n = &t->n[t->results[r]];
        dsl_buf_printf(out, "    copy(");
        tl_full_view(&l, out, nm, n);
        dsl_buf_printf(out, ", ");
        tl_full_view(&l, out, buf[t->results[r]], n);
        dsl_buf_printf(out, ");\n");
    }
    dsl_buf_printf(out, "}\n");
    if (kb.oom || db.oom || out->oom) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    dsl_buf_free(&kb);
    dsl_buf_free(&db);
    free(buf);
    free(names);
    free(fused_by);
    free(root);
    return rc;
}
