/* task_shard.c — sharding propagation with collective insertion: one
 * forward pass over the Task IR (nodes are in topological order). Each
 * op's rule looks at its operands' shardings; where they do not fit the
 * rule, the operand is converted (a TK_COMM node is inserted: slice,
 * all_gather, reduce_scatter, all_reduce or all_to_all) and the op's own
 * sharding follows. Rules (docs/task.md):
 *   matmul   x @ w[split(N)] -> split(N) (column-parallel);
 *            x[split(M)] @ w -> split(M); x[split(K)] @ w[split(K)] -> partial
 *            (row-parallel; a replicated operand is sliced locally);
 *            batch dims split alike -> split(batch); x[split(M)] @ w[split(N)]
 *            gathers x (AllGather+GEMM); partial @ replicated -> partial.
 *   elementwise  operands must agree: a replicated operand is sliced, a
 *            differently split one goes through all_to_all; partials flow
 *            through + - (both partial) and * / by a non-partial.
 *   softmax, max, rmsnorm  their axis (rmsnorm: the last) must not be
 *            split; sum along a split axis -> partial.
 *   results  converted to their declared sharding.
 * On a mesh (task ... mesh(AXIS = SIZE, ...)) the pass runs once per axis,
 * with the axis' shardings (TkNode.msh[k]) and its size as the ranks: the
 * rules are the same on every axis, and each inserted collective runs on
 * its axis (TkNode.cax). */
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct P {
    TkTask *t;                     /* the new node list is built in t */
    DslDiags *diags;
    bool failed;
    int ax;                        /* the mesh axis of this pass, -1: none */
    int R;                         /* its ranks (t->nranks without a mesh) */
} P;

static bool sh_eq(TkShard a, TkShard b)
{
    return a.kind == b.kind && (a.kind != SH_SPLIT || a.dim == b.dim);
}

static int fail(P *p, DslLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(P *p, DslLoc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dsl_verror(p->diags, loc, fmt, ap);
    va_end(ap);
    p->failed = true;
    return -1;
}

static const char *vname(const TkNode *n, char *buf, size_t len)
{
    if (n->name)
        snprintf(buf, len, "'%s'", n->name);
    else
        snprintf(buf, len, "the %s value", tk_op_name(n->op));
    return buf;
}

/* Can node x be split along dim d over R ranks? Reports at `loc`. */
static bool divisible(P *p, int x, int d, DslLoc loc, const char *why)
{
    TkTask *t = p->t;
    const TkNode *n = &t->n[x];
    if (p->R <= 1 || n->dims[d] < 0 || n->dims[d] % p->R == 0)
        return true;
    char nm[96], ty[160];
    tk_type_str(t, n, ty, sizeof ty);
    if (p->ax >= 0)
        fail(p, loc, "cannot split %s (%s) along dim %d over the %d ranks of mesh axis '%s': "
             "%lld is not divisible by %d%s%s", vname(n, nm, sizeof nm), ty, d, p->R,
             t->axname[p->ax], (long long)n->dims[d], p->R, why ? "; " : "", why ? why : "");
    else
        fail(p, loc, "cannot split %s (%s) along dim %d over %d ranks: %lld is not divisible by %d%s%s",
         vname(n, nm, sizeof nm), ty, d, t->nranks, (long long)n->dims[d], t->nranks,
         why ? "; " : "", why ? why : "");
    return false;
}

static int comm_kind(TkShard from, TkShard to)
{
    if (sh_eq(from, to))
        return CM_NONE;
    if (from.kind == SH_REPL)
        return to.kind == SH_SPLIT ? CM_SLICE : -1;
    if (from.kind == SH_PARTIAL)
        return to.kind == SH_SPLIT ? CM_REDUCE_SCATTER : CM_ALL_REDUCE;
    return to.kind == SH_SPLIT ? CM_ALL_TO_ALL : to.kind == SH_REPL ? CM_ALL_GATHER : -1;
}

/* x converted to sharding `to` (an inserted collective, reused when the
 * same conversion of x exists). */
static int convert(P *p, int x, TkShard to, DslLoc loc, const char *why)
{
    TkTask *t = p->t;
    if (x < 0)
        return -1;
    if (sh_eq(t->n[x].sh, to) || t->n[x].rank == 0)
        return x;
    for (int i = x + 1; i < t->nn; i++)
        if (t->n[i].op == TK_COMM && t->n[i].a == x && !t->n[i].user && t->n[i].cax == p->ax &&
            sh_eq(t->n[i].sh, to))
            return i;
    int k = comm_kind(t->n[x].sh, to);
    if (k < 0)
        return fail(p, loc, "internal: no collective turns a split value into a partial one");
    if (to.kind == SH_SPLIT && !divisible(p, x, to.dim, loc, why))
        return -1;
    TkNode n = t->n[x];
    n.op = TK_COMM;
    n.sub = 0;
    n.a = x;
    n.b = n.c = -1;
    n.name = NULL;
    n.param = -1;
    n.loc = loc;
    n.sh = to;
    n.comm = k;
    n.user = false;
    n.reshard = false;
    n.axis = -1;
    n.cax = p->ax;
    n.place = PL_PLAIN;
    n.gemm = -1;
    n.nalts = 0;
    return tk_add_node(t, &n);
}

static const TkShard REPL = {SH_REPL, 0};

/* ------------------------------------------------------------ rules */

static int shard_dim_out(const TkNode *x, int out_rank)
{
    return x->sh.dim + (out_rank - x->rank);
}

static void rule_binary(P *p, TkNode *n)
{
    TkTask *t = p->t;
    int op = n->sub;
    bool pa = t->n[n->a].sh.kind == SH_PARTIAL, pb = t->n[n->b].sh.kind == SH_PARTIAL;
    if (pa || pb) {
        bool lin_add = (op == '+' || op == '-') && pa && pb;
        bool lin_mul = (op == '*' || op == '/') && pa && !pb;
        bool lin_mul2 = op == '*' && pb && !pa;
        if (lin_add) {
            n->sh = (TkShard){SH_PARTIAL, 0};
            return;
        }
        if (lin_mul || lin_mul2) {
            int *o = lin_mul ? &n->b : &n->a;
            *o = convert(p, *o, REPL, n->loc, NULL);
            n->sh = (TkShard){SH_PARTIAL, 0};
            return;
        }
        /* a partial meeting a split operand is reduce-scattered to it */
        const TkNode *X = &t->n[n->a], *Y = &t->n[n->b];
        if (pa && !pb && Y->sh.kind == SH_SPLIT && X->rank == n->rank &&
            shard_dim_out(Y, n->rank) >= 0)
            n->a = convert(p, n->a, (TkShard){SH_SPLIT, shard_dim_out(Y, n->rank)}, n->loc,
                           "the partial sum is reduce-scattered to match the other operand");
        else if (pb && !pa && X->sh.kind == SH_SPLIT && Y->rank == n->rank &&
                 shard_dim_out(X, n->rank) >= 0)
            n->b = convert(p, n->b, (TkShard){SH_SPLIT, shard_dim_out(X, n->rank)}, n->loc,
                           "the partial sum is reduce-scattered to match the other operand");
        if (n->a >= 0 && t->n[n->a].sh.kind == SH_PARTIAL)
            n->a = convert(p, n->a, REPL, n->loc, NULL);
        if (n->b >= 0 && t->n[n->b].sh.kind == SH_PARTIAL)
            n->b = convert(p, n->b, REPL, n->loc, NULL);
        if (n->a < 0 || n->b < 0)
            return;
    }
    const TkNode *X = &t->n[n->a], *Y = &t->n[n->b];
    bool sx = X->sh.kind == SH_SPLIT, sy = Y->sh.kind == SH_SPLIT;
    if (!sx && !sy) {
        n->sh = REPL;
        return;
    }
    int dx = sx ? shard_dim_out(X, n->rank) : -1, dy = sy ? shard_dim_out(Y, n->rank) : -1;
    int d = sx ? dx : dy;
    /* the other operand must match split(d) unless it broadcasts there */
    int *o = sx ? &n->b : &n->a;
    const TkNode *O = &t->n[*o];
    int od = d - (n->rank - O->rank);
    bool bcast = od < 0 || O->dims[od] == 1;
    if (!bcast && !(O->sh.kind == SH_SPLIT && O->sh.dim == od))
        *o = convert(p, *o, (TkShard){SH_SPLIT, od}, n->loc,
                     "an elementwise op needs both operands split alike");
    else if (bcast && O->sh.kind == SH_SPLIT)
        *o = convert(p, *o, REPL, n->loc, NULL);
    n->sh = (TkShard){SH_SPLIT, d};
}

/* classes of a matmul operand's sharding */
enum { C_R, C_M, C_K, C_N, C_B, C_P };

static int cls_a(const TkNode *a)
{
    if (a->sh.kind == SH_PARTIAL)
        return C_P;
    if (a->sh.kind == SH_REPL)
        return C_R;
    int d = a->sh.dim;
    return d == a->rank - 1 ? C_K : d == a->rank - 2 ? C_M : C_B;
}

static int cls_b(const TkNode *b)
{
    if (b->sh.kind == SH_PARTIAL)
        return C_P;
    if (b->sh.kind == SH_REPL)
        return C_R;
    int d = b->sh.dim;
    return d == b->rank - 1 ? C_N : d == b->rank - 2 ? C_K : C_B;
}

static void rule_matmul(P *p, TkNode *n)
{
    TkTask *t = p->t;
    for (int iter = 0; iter < 4; iter++) {
        if (n->a < 0 || n->b < 0)
            return;
        const TkNode *A = &t->n[n->a], *Bn = &t->n[n->b];
        int ca = cls_a(A), cb = cls_b(Bn);
        if (ca == C_P && cb == C_R) {
            n->sh = (TkShard){SH_PARTIAL, 0};
            return;
        }
        if (cb == C_P && ca == C_R) {
            n->sh = (TkShard){SH_PARTIAL, 0};
            return;
        }
        if (ca == C_P) {
            n->a = convert(p, n->a, REPL, n->loc, NULL);
            continue;
        }
        if (cb == C_P) {
            n->b = convert(p, n->b, REPL, n->loc, NULL);
            continue;
        }
        if (ca == C_R && cb == C_R) {
            n->sh = REPL;
            return;
        }
        if (ca == C_M && cb == C_R) {
            n->sh = (TkShard){SH_SPLIT, n->rank - 2};
            return;
        }
        if (ca == C_R && cb == C_N) {
            n->sh = (TkShard){SH_SPLIT, n->rank - 1};
            return;
        }
        if (ca == C_K && cb == C_K) {
            n->sh = (TkShard){SH_PARTIAL, 0};
            return;
        }
        if (ca == C_K && cb == C_R) {
            n->b = convert(p, n->b, (TkShard){SH_SPLIT, Bn->rank - 2}, n->loc,
                           "the row-parallel matmul splits the inner dim");
            continue;
        }
        if (ca == C_R && cb == C_K) {
            n->a = convert(p, n->a, (TkShard){SH_SPLIT, A->rank - 1}, n->loc,
                           "the row-parallel matmul splits the inner dim");
            continue;
        }
        if (ca == C_B && (cb == C_B || (cb == C_R && Bn->rank == 2))) {
            n->sh = (TkShard){SH_SPLIT, 0};
            return;
        }
        if (cb == C_B && ca == C_R && A->rank == 2) {
            n->sh = (TkShard){SH_SPLIT, 0};
            return;
        }
        if (ca == C_B && cb == C_R) {
            n->b = convert(p, n->b, (TkShard){SH_SPLIT, 0}, n->loc, "a batched matmul splits the batch");
            continue;
        }
        if (cb == C_B && ca == C_R) {
            n->a = convert(p, n->a, (TkShard){SH_SPLIT, 0}, n->loc, "a batched matmul splits the batch");
            continue;
        }
        /* conflicting splits: gather the activation for x[split(M)] @ w[split(N)]
         * and x[split(K)] @ w[split(N)], else the weight */
        if (cb == C_N && ca != C_R)
            n->a = convert(p, n->a, REPL, n->loc, NULL);
        else
            n->b = convert(p, n->b, REPL, n->loc, NULL);
    }
    if (n->a >= 0 && n->b >= 0) {
        n->a = convert(p, n->a, REPL, n->loc, NULL);
        n->b = convert(p, n->b, REPL, n->loc, NULL);
        n->sh = REPL;
    }
}

static void rule_user_comm(P *p, TkNode *n)
{
    TkTask *t = p->t;
    const TkNode *X = &t->n[n->a];
    char nm[96], have[32], want[32];
    TkShard to = n->sh;
    if (n->reshard) {
        n->comm = comm_kind(X->sh, to);
        if (n->comm < 0) {
            fail(p, n->loc, "reshard cannot make a partial value from a split one");
            return;
        }
        if (to.kind == SH_SPLIT)
            divisible(p, n->a, to.dim, n->loc, "reshard");
        return;
    }
    TkShard need;
    const char *what;
    if (to.kind == SH_REPL && n->axis >= 0) {
        need = (TkShard){SH_SPLIT, n->axis};
        what = "all_gather";
    } else if (to.kind == SH_REPL) {
        need = (TkShard){SH_PARTIAL, 0};
        what = "all_reduce";
    } else if (n->axis == to.dim) {
        need = (TkShard){SH_PARTIAL, 0};
        what = "reduce_scatter";
    } else {
        need = (TkShard){SH_SPLIT, n->axis};
        what = "all_to_all";
    }
    if (!sh_eq(X->sh, need)) {
        tk_shard_str(X->sh, have, sizeof have);
        tk_shard_str(need, want, sizeof want);
        fail(p, n->loc, "%s needs a %s value, but %s is %s here%s%s%s", what, want,
             vname(X, nm, sizeof nm), have, p->ax >= 0 ? " on mesh axis '" : "",
             p->ax >= 0 ? t->axname[p->ax] : "", p->ax >= 0 ? "'" : "");
        return;
    }
    if (to.kind == SH_SPLIT)
        divisible(p, n->a, to.dim, n->loc, what);
    n->comm = comm_kind(X->sh, to);
}

/* A call runs SPMD on local shards (docs/task.md "Calls"): partial
 * arguments are all-reduced; the first split argument, split(d), splits
 * the call over the callee's size name S at its dim d (a constant there is
 * an error); every tensor argument whose parameter uses S (first at dim e)
 * is converted to split(e), the others to replicated; the result is
 * split(e) at the first dim of the result using S (none: an error). */
static void rule_call(P *p, TkNode *n)
{
    TkTask *t = p->t;
    const AstFunc *cf = t->prog->funcs[n->callee];
    const char *kind = cf->fkind == FN_KERNEL ? "kernel" : "device function";
    int *av = &t->cargs[n->carg];
    char nm[96];
    for (int i = 0; i < n->cnargs; i++)
        if (t->n[av[i]].sh.kind == SH_PARTIAL)
            av[i] = convert(p, av[i], REPL, n->loc, NULL);
    for (int i = 0; i < n->cnargs; i++)
        if (av[i] < 0)
            return;
    const char *S = NULL;
    int sarg = -1;
    for (int i = 0; i < n->cnargs && !S; i++) {
        const TkNode *X = &t->n[av[i]];
        if (X->rank == 0 || X->sh.kind != SH_SPLIT)
            continue;
        const Ast *dx = cf->params[i].dims[X->sh.dim];
        if (!tk_dim_is_size(t, dx)) {
            fail(p, n->loc, "%s '%s' cannot take %s split(%d): dim %d of its parameter '%s' is a "
                 "constant, so it cannot be a per-rank shard (reshard the argument to replicated "
                 "first, or give that dim a size name)", kind, cf->name,
                 vname(X, nm, sizeof nm), X->sh.dim, X->sh.dim, cf->params[i].name);
            return;
        }
        S = dx->name;
        sarg = i;
    }
    int *cs = p->ax >= 0 ? &n->mcsplit[p->ax] : &n->csplit; /* per axis on a mesh */
    *cs = -1;
    if (!S) {
        n->sh = REPL;
        return;
    }
    for (int i = 0; i < n->cnargs; i++) {
        const AstParam *cp = &cf->params[i];
        if (t->n[av[i]].rank == 0)
            continue;
        int e = -1, count = 0;
        for (int d = 0; d < cp->ndims; d++)
            if (tk_dim_is_size(t, cp->dims[d]) && strcmp(cp->dims[d]->name, S) == 0) {
                if (e < 0)
                    e = d;
                count++;
            }
        if (count > 1) {
            fail(p, n->loc, "%s '%s' cannot be split over its size %s (from %s): parameter '%s' "
                 "uses %s in %d dims", kind, cf->name, S, vname(&t->n[av[sarg]], nm, sizeof nm),
                 cp->name, S, count);
            return;
        }
        char why[160];
        snprintf(why, sizeof why, "the call of %s is split over its size %s", cf->name, S);
        av[i] = convert(p, av[i], e >= 0 ? (TkShard){SH_SPLIT, e} : REPL, n->loc, why);
        if (av[i] < 0)
            return;
    }
    const AstParam *out = &cf->params[cf->nparams - 1];
    for (int d = 0; d < out->ndims; d++)
        if (tk_dim_is_size(t, out->dims[d]) && strcmp(out->dims[d]->name, S) == 0) {
            n->sh = (TkShard){SH_SPLIT, d};
            for (int k = 0; k < cf->nparams - 1; k++)
                for (int e = 0; e < cf->params[k].ndims && *cs < 0; e++)
                    if (tk_dim_is_size(t, cf->params[k].dims[e]) &&
                        strcmp(cf->params[k].dims[e]->name, S) == 0)
                        *cs = k * IR_MAX_RANK + e;
            return;
        }
    fail(p, n->loc, "cannot infer the sharding of the result '%s' of %s '%s': the call is split "
         "over size %s (%s is split), but no dim of '%s' uses %s (reshard the arguments to "
         "replicated first)", out->name, kind, cf->name, S, vname(&t->n[av[sarg]], nm, sizeof nm),
         out->name, S);
}

/* moe(x, wr, w1, w2, k) (docs/task.md "Mixture of experts"): w1 and w2
 * are split(0) (their experts) alike, or replicated alike; an axis that
 * splits them is the expert-parallel axis (at most one), where the tokens
 * x are split(0), a replicated x sliced. On other axes the tokens stay
 * split(0) or are made replicated; the router wr is replicated; partial
 * operands are all-reduced. The result is sharded as the tokens.
 * `group = AXIS` names the expert-parallel axis: the experts are split(0)
 * there (sliced when replicated) and may not be split on another axis. */
static void rule_moe(P *p, TkNode *n)
{
    TkTask *t = p->t;
    int *w2 = &t->cargs[n->carg];
    const TkShard S0 = {SH_SPLIT, 0};
    TkShard s1 = t->n[n->c].sh, s2 = t->n[*w2].sh;
    bool ep = (s1.kind == SH_SPLIT && s1.dim == 0) || (s2.kind == SH_SPLIT && s2.dim == 0);
    if (n->axis >= 0 && p->ax >= 0 && p->ax != n->axis && ep) {
        fail(p, n->loc, "moe(..., group = %s): the experts are split on mesh axis '%s' too; "
             "they may be split on '%s' only", t->axname[n->axis], t->axname[p->ax],
             t->axname[n->axis]);
        return;
    }
    ep |= n->axis >= 0 && p->ax == n->axis;
    n->c = convert(p, n->c, ep ? S0 : REPL, n->loc, "moe splits w1 and w2 alike (their experts)");
    if (n->c >= 0)
        *w2 = convert(p, *w2, ep ? S0 : REPL, n->loc, "moe splits w1 and w2 alike (their experts)");
    if (n->c < 0 || *w2 < 0)
        return;
    if (ep && n->cax >= 0 && p->ax >= 0 && n->cax != p->ax) {
        fail(p, n->loc, "moe: the experts are split on mesh axes '%s' and '%s'; they may be "
             "split on one axis only", t->axname[n->cax], t->axname[p->ax]);
        return;
    }
    if (ep)
        n->cax = p->ax >= 0 ? p->ax : 0;
    TkShard xs = t->n[n->a].sh;
    TkShard to = ep || (xs.kind == SH_SPLIT && xs.dim == 0) ? S0 : REPL;
    const char *why = ep ? "moe splits the tokens over the ranks holding its experts" : NULL;
    n->a = convert(p, n->a, to, n->loc, why);
    if (n->a >= 0)
        n->b = convert(p, n->b, REPL, n->loc, NULL);
    n->sh = to;
}

/* One forward pass over the nodes for axis p->ax (or the 1-D mesh): the
 * node list is rebuilt with the collectives it inserts. On a mesh, the
 * collectives of earlier axes' passes pass shardings through. */
static int pass(P *pp)
{
    TkTask *t = pp->t;
    TkNode *old = t->n;
    int nold = t->nn;
    int *map = malloc(sizeof *map * (size_t)(nold + 1));
    if (!map)
        return -1;
    t->n = NULL;
    t->nn = t->cap = 0;
    P p = *pp;
    for (int i = 0; i < nold && !p.failed; i++) {
        TkNode n = old[i];
        if (p.ax >= 0 && n.op == TK_PARAM)
            n.sh = n.msh[p.ax];
        n.a = n.a >= 0 ? map[n.a] : -1;
        n.b = n.b >= 0 ? map[n.b] : -1;
        n.c = n.c >= 0 ? map[n.c] : -1;
        const TkNode *A = n.a >= 0 ? &t->n[n.a] : NULL;
        switch (n.op) {
        case TK_PARAM:
            break;
        case TK_SCALAR:
        case TK_CONST:
            n.sh = REPL;
            break;
        case TK_CAST:
            n.sh = A->sh;
            break;
        case TK_UNARY:
            if (A->sh.kind == SH_PARTIAL && n.sub != FN_NEG)
                n.a = convert(&p, n.a, REPL, n.loc, NULL);
            n.sh = n.a >= 0 ? t->n[n.a].sh : REPL;
            break;
        case TK_TRANS:
            n.sh = A->sh;
            if (n.sh.kind == SH_SPLIT && n.sh.dim >= n.rank - 2)
                n.sh.dim = n.sh.dim == n.rank - 1 ? n.rank - 2 : n.rank - 1;
            break;
        case TK_BINARY:
            rule_binary(&p, &n);
            break;
        case TK_MATMUL:
            rule_matmul(&p, &n);
            break;
        case TK_SOFTMAX:
            if (A->sh.kind == SH_PARTIAL)
                n.a = convert(&p, n.a, REPL, n.loc, NULL);
            else if (A->sh.kind == SH_SPLIT && A->sh.dim == n.axis)
                n.a = convert(&p, n.a, REPL, n.loc, NULL);
            n.sh = n.a >= 0 ? t->n[n.a].sh : REPL;
            break;
        case TK_RMSNORM:
            if (A->sh.kind == SH_PARTIAL || (A->sh.kind == SH_SPLIT && A->sh.dim == A->rank - 1))
                n.a = convert(&p, n.a, REPL, n.loc, NULL);
            n.b = convert(&p, n.b, REPL, n.loc, NULL);
            n.sh = n.a >= 0 ? t->n[n.a].sh : REPL;
            break;
        case TK_REDUCE:
            if (n.sub == RED_SUM && (A->sh.kind == SH_PARTIAL ||
                                     (A->sh.kind == SH_SPLIT && A->sh.dim == n.axis))) {
                n.sh = (TkShard){SH_PARTIAL, 0};
                break;
            }
            if (A->sh.kind == SH_PARTIAL || (A->sh.kind == SH_SPLIT && A->sh.dim == n.axis))
                n.a = convert(&p, n.a, REPL, n.loc, NULL);
            if (n.a < 0)
                break;
            A = &t->n[n.a];
            n.sh = A->sh;
            if (n.sh.kind == SH_SPLIT && n.sh.dim > n.axis)
                n.sh.dim--;
            break;
        case TK_COMM:
            if (p.ax >= 0 && !(n.user && n.cax == p.ax)) {
                n.sh = A->sh; /* another axis' collective */
                break;
            }
            if (p.ax >= 0)
                n.sh = n.msh[p.ax]; /* a written one's target on its axis */
            rule_user_comm(&p, &n);
            break;
        case TK_CALL:
            for (int k = 0; k < n.cnargs; k++)
                t->cargs[n.carg + k] = map[t->cargs[n.carg + k]];
            rule_call(&p, &n);
            break;
        case TK_MOE:
            t->cargs[n.carg] = map[t->cargs[n.carg]];
            rule_moe(&p, &n);
            if (n.c == -1 || t->cargs[n.carg] == -1)
                p.failed = true;
            break;
        }
        if (n.a == -1 && old[i].a >= 0)
            p.failed = true;
        if (n.b == -1 && old[i].b >= 0)
            p.failed = true;
        if (p.failed)
            break;
        map[i] = tk_add_node(t, &n);
        if (map[i] < 0) {
            p.failed = true;
            break;
        }
        if (n.op == TK_PARAM && n.sh.kind == SH_SPLIT)
            divisible(&p, map[i], n.sh.dim, n.loc, "declared split");
    }
    for (int r = 0; r < t->nresults && !p.failed; r++) {
        int x = map[t->results[r]];
        TkShard to = p.ax < 0 ? t->res_sh[r] : t->res_msh[r * TK_MAX_AXES + p.ax];
        char why[64];
        snprintf(why, sizeof why, "the result is declared split(%d)", to.dim);
        x = convert(&p, x, to, t->fn->loc, why);
        if (x < 0)
            break;
        t->results[r] = x;
    }
    free(old);
    free(map);
    if (p.failed || t->oom) {
        if (t->oom)
            dsl_error(p.diags, t->fn->loc, "out of memory");
        return -1;
    }
    for (int i = 0; i < t->nn && p.ax >= 0; i++)
        t->n[i].msh[p.ax] = t->n[i].sh;
    return 0;
}

/* Does a collective on axis `ax` of kind `comm` from per-axis shardings
 * `in` to `out` move a dim that an inner axis (after ax) splits? Returns
 * that dim (and the axis in *inner), or -1. */
static int bad_move(const TkTask *t, int ax, int comm, const TkShard *in, const TkShard *out,
                    int *inner)
{
    if (comm == CM_ALL_REDUCE || comm == CM_NONE)
        return -1;
    unsigned m = 0; /* the dims whose layout it changes */
    if (in[ax].kind == SH_SPLIT)
        m |= 1u << in[ax].dim;
    if (out[ax].kind == SH_SPLIT)
        m |= 1u << out[ax].dim;
    for (int b = ax + 1; b < t->naxes; b++) {
        *inner = b;
        if (in[b].kind == SH_SPLIT && (m >> in[b].dim & 1))
            return in[b].dim;
        if (out[b].kind == SH_SPLIT && (m >> out[b].dim & 1))
            return out[b].dim;
    }
    return -1;
}

/* Two inserted collectives in a row on different axes commute: X -> C1
 * (axis a) -> C2 (axis b), C1 used only by C2, become X -> C2' (axis b)
 * -> C1' (axis a). Done when C1 moves a dim the later axis still splits
 * and the swapped pair does not (e.g. a result gathered on dp and tp: tp,
 * the inner axis, gathers first). */
static void reorder(TkTask *t)
{
    int *uses = calloc((size_t)t->nn + 1, sizeof *uses);
    if (!uses)
        return;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->a >= 0) uses[n->a]++;
        if (n->b >= 0) uses[n->b]++;
        if (n->c >= 0) uses[n->c]++;
        for (int k = 0; (n->op == TK_CALL || n->op == TK_MOE) && k < n->cnargs; k++)
            uses[t->cargs[n->carg + k]]++;
    }
    for (int r = 0; r < t->nresults; r++)
        uses[t->results[r]]++;
    for (int i = 0; i < t->nn; i++) {
        TkNode *c2 = &t->n[i];
        if (c2->op != TK_COMM || c2->user || c2->a < 0)
            continue;
        TkNode *c1 = &t->n[c2->a];
        if (c1->op != TK_COMM || c1->user || c1->cax == c2->cax || uses[c2->a] != 1)
            continue;
        const TkNode *X = &t->n[c1->a];
        int inner;
        if (bad_move(t, c1->cax, c1->comm, X->msh, c1->msh, &inner) < 0)
            continue;
        TkShard mid[TK_MAX_AXES]; /* X with c2's axis converted */
        memcpy(mid, X->msh, sizeof mid);
        mid[c2->cax] = c2->msh[c2->cax];
        if (bad_move(t, c2->cax, c2->comm, X->msh, mid, &inner) >= 0 ||
            bad_move(t, c1->cax, c1->comm, mid, c2->msh, &inner) >= 0)
            continue;
        int ax1 = c1->cax, k1 = c1->comm;
        DslLoc l1 = c1->loc;
        c1->cax = c2->cax;
        c1->comm = c2->comm;
        c1->loc = c2->loc;
        memcpy(c1->msh, mid, sizeof mid);
        c2->cax = ax1;
        c2->comm = k1;
        c2->loc = l1;
    }
    free(uses);
}

/* On a mesh a dim may be split on several axes: its shards are laid out
 * with the first axis outermost (rank box: task_run.c). That holds while a
 * collective that moves a dim runs on the innermost axis splitting it; on
 * an outer one the gathered / sliced pieces would be strided. Checked
 * here (after reorder), with the divisibility by all the axes splitting a
 * dim. */
static int check_mesh(TkTask *t, DslDiags *diags)
{
    char nm[96], ty[160];
    reorder(t);
    for (int i = 0; i < t->nn; i++) {
        TkNode *n = &t->n[i];
        n->sh = REPL;
        for (int d = 0; d < n->rank && t->nranks > 0 && n->dims[d] > 0; d++) {
            int64_t prod = 1;
            int nax = 0;
            for (int a = 0; a < t->naxes; a++)
                if (n->msh[a].kind == SH_SPLIT && n->msh[a].dim == d) {
                    prod *= t->axsize[a];
                    nax++;
                }
            if (nax > 1 && n->dims[d] % prod) {
                tk_type_str(t, n, ty, sizeof ty);
                dsl_error(diags, n->loc, "cannot split %s (%s) along dim %d over the %lld ranks of "
                          "its %d mesh axes: %lld is not divisible by %lld",
                          vname(n, nm, sizeof nm), ty, d, (long long)prod, nax,
                          (long long)n->dims[d], (long long)prod);
                return -1;
            }
        }
        if (n->op != TK_COMM)
            continue;
        int b, d = bad_move(t, n->cax, n->comm, t->n[n->a].msh, n->msh, &b);
        if (d < 0)
            continue;
        if (n->user)
            snprintf(nm, sizeof nm, "%s on mesh axis '%s'", tk_comm_name(n->comm),
                     t->axname[n->cax]);
        else
            snprintf(nm, sizeof nm, "the %s inserted here on mesh axis '%s'",
                     tk_comm_name(n->comm), t->axname[n->cax]);
        dsl_error(diags, n->loc, "%s moves dim %d while the inner axis '%s' splits it; only "
                  "the innermost axis that splits a dim can move it (outer axes: not "
                  "supported yet)", nm, d, t->axname[b]);
        return -1;
    }
    return 0;
}

int tk_propagate(TkTask *t, DslDiags *diags)
{
    P p = {t, diags, false, -1, t->nranks};
    if (!t->naxes && pass(&p))
        return -1;
    for (int a = 0; a < t->naxes; a++) {
        p.ax = a;
        p.R = t->nranks > 0 ? t->axsize[a] : 0;
        if (pass(&p))
            return -1;
    }
    if (t->naxes && check_mesh(t, diags))
        return -1;
    for (int i = 0; i < t->nn; i++)
        t->n[i].uses = 0;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->a >= 0) t->n[n->a].uses++;
        if (n->b >= 0) t->n[n->b].uses++;
        if (n->c >= 0) t->n[n->c].uses++;
        for (int k = 0; (n->op == TK_CALL || n->op == TK_MOE) && k < n->cnargs; k++)
            t->n[t->cargs[n->carg + k]].uses++;
    }
    for (int r = 0; r < t->nresults; r++)
        t->n[t->results[r]].uses++;
    t->propagated = true;
    return 0;
}
