/* task_plan.c — `blkc plan`: a task's shardings, every collective (written
 * or inserted), every placement decision with the predicted time of each
 * alternative considered, and the predicted total, as text or JSON. */
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_str(DslBuf *o, const char *s)
{
    dsl_buf_printf(o, "\"");
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            dsl_buf_printf(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            dsl_buf_printf(o, "\\u%04x", *s);
        else
            dsl_buf_printf(o, "%c", *s);
    }
    dsl_buf_printf(o, "\"");
}

static const char *alt_name(const TkNode *n, const TkAlt *a, char *buf, size_t len)
{
    if (a->kind == PL_PLAIN)
        snprintf(buf, len, n->gemm >= 0 ? "plain (GEMM, then %s)" : "plain %s",
                 tk_comm_name(n->comm));
    else
        snprintf(buf, len, "%s, %d chunk%s/shard", tk_place_name(a->kind), a->chunks,
                 a->chunks == 1 ? "" : "s");
    return buf;
}

static double comm_bytes(const TkTask *t, const TkNode *n)
{
    return tk_comm_bytes(t, n);
}

/* the sharding of X on the axis of collective n (its own on a 1-D mesh) */
static TkShard ax_sh(const TkTask *t, const TkNode *n, const TkNode *X)
{
    return t->naxes ? X->msh[n->cax] : X->sh;
}

/* the mesh: axes, rank layout, each axis' group size, stride and link */
static void mesh_text(DslBuf *o, const TkTask *t, const TkTopology *topo)
{
    dsl_buf_printf(o, "mesh:");
    for (int a = 0; a < t->naxes; a++)
        dsl_buf_printf(o, "%s %s = %d", a ? "," : "", t->axname[a], t->axsize[a]);
    dsl_buf_printf(o, " (rank =");
    for (int a = 0; a < t->naxes; a++) {
        dsl_buf_printf(o, "%s ", a ? " +" : "");
        if (t->axstride[a] != 1)
            dsl_buf_printf(o, "%d * ", t->axstride[a]);
        dsl_buf_printf(o, "i_%s", t->axname[a]);
    }
    dsl_buf_printf(o, "; the first axis is the outermost)\n");
    for (int a = 0; a < t->naxes; a++) {
        bool net = tk_axis_crosses_nodes(t, topo, a);
        dsl_buf_printf(o, "  axis %-6s %d ranks per group, stride %d, %s (%.1f GB/s, %.1f us)\n",
                       t->axname[a], t->axsize[a], t->axstride[a],
                       net ? "network between nodes" : "link within a node",
                       net && topo->net_gbs < topo->link_gbs * topo->link_eff
                           ? topo->net_gbs : topo->link_gbs * topo->link_eff,
                       net ? topo->net_lat_us : topo->link_lat_us);
    }
}

/* `result` (one result) or `result0`, `result1`, ... (CLI.md) */
static void result_name(const TkTask *t, int r, char *buf, size_t len)
{
    if (t->nresults == 1)
        snprintf(buf, len, "result");
    else
        snprintf(buf, len, "result%d", r);
}

static const char *op_what(const TkTask *t, const TkNode *n, char *buf, size_t len)
{
    (void)t;
    if (n->op == TK_UNARY)
        snprintf(buf, len, "%s", tk_fn_name(n->sub));
    else if (n->op == TK_BINARY)
        snprintf(buf, len, "'%c'", n->sub);
    else
        snprintf(buf, len, "%s", tk_op_name(n->op));
    return buf;
}

/* the serial sum of the nodes' costs; an elementwise value computed in
 * its consumer's kernel costs nothing of its own */
static double total_us(const TkTask *t, const TkTopology *topo)
{
    int *root = calloc((size_t)t->nn + 1, sizeof *root);
    double total = 0;
    if (root)
        tk_fuse_roots(t, root);
    for (int i = 0; i < t->nn; i++)
        if (!root || root[i] == i || t->n[i].op == TK_MATMUL)
            total += tk_node_cost_us(t, topo, i);
    free(root);
    return total;
}

/* the elementwise fusion groups of the lowering (task_lower.c) */
static void fusion_text(DslBuf *o, const TkTask *t)
{
    int *root = calloc((size_t)t->nn + 1, sizeof *root);
    if (!root)
        return;
    tk_fuse_roots(t, root);
    int ops = 0, kernels = 0, epi = 0;
    for (int i = 0; i < t->nn; i++) {
        int op = t->n[i].op;
        if (op != TK_BINARY && op != TK_UNARY && op != TK_CAST && op != TK_TRANS)
            continue;
        ops++;
        if (root[i] != i)
            continue;
        bool gemm = false;
        for (int j = 0; j < i; j++)
            gemm |= root[j] == i && t->n[j].op == TK_MATMUL;
        kernels += !gemm;
        epi += gemm;
    }
    dsl_buf_printf(o, "\nelementwise ops: %d, in %d kernel%s of their own and %d GEMM "
                   "epilogue%s%s\n", ops, kernels, kernels == 1 ? "" : "s", epi,
                   epi == 1 ? "" : "s", t->no_fuse ? " (fusion off)" : "");
    char w[32];
    for (int i = 0; i < t->nn; i++) {
        bool group = false;
        for (int j = 0; j < i && !group; j++)
            group = root[j] == i;
        if (!group)
            continue;
        dsl_buf_printf(o, "  fused %%%d:", i);
        for (int j = 0; j <= i; j++)
            if (root[j] == i)
                dsl_buf_printf(o, " %%%d %s", j, op_what(t, &t->n[j], w, sizeof w));
        dsl_buf_printf(o, "\n");
    }
    free(root);
}

static void text(DslBuf *o, const TkTask *t, const TkTopology *topo)
{
    char ty[160], sh[128], sh2[32], an[96];
    dsl_buf_printf(o, "task %s on %d rank%s, topology %s\n", t->fn->name, t->nranks,
                   t->nranks == 1 ? "" : "s", topo->name);
    dsl_buf_printf(o, "  (%s)\n", topo->source);
    if (t->naxes)
        mesh_text(o, t, topo);
    if (t->nsyms) {
        dsl_buf_printf(o, "sizes:");
        for (int s = 0; s < t->nsyms; s++)
            dsl_buf_printf(o, " %s=%lld", t->syms[s], (long long)t->symval[s]);
        dsl_buf_printf(o, "\n");
    }
    dsl_buf_printf(o, "\nshardings:\n");
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op == TK_CONST || n->op == TK_SCALAR)
            continue;
        tk_type_str(t, n, ty, sizeof ty);
        tk_msh_str(t, n, NULL, sh, sizeof sh);
        char what[64];
        if (n->op == TK_COMM)
            snprintf(what, sizeof what, "%s %%%d", tk_comm_name(n->comm), n->a);
        else if (n->op == TK_PARAM)
            snprintf(what, sizeof what, "param");
        else if (n->op == TK_UNARY)
            snprintf(what, sizeof what, "%s", tk_fn_name(n->sub));
        else if (n->op == TK_BINARY)
            snprintf(what, sizeof what, "'%c'", n->sub);
        else if (n->op == TK_CALL)
            snprintf(what, sizeof what, "call %.40s", t->prog->funcs[n->callee]->name);
        else
            snprintf(what, sizeof what, "%s", tk_op_name(n->op));
        dsl_buf_printf(o, "  %%%-3d %-10s %-22s %-32s %s\n", i, n->name ? n->name : "", what, ty, sh);
    }
    dsl_buf_printf(o, "\ncollectives:\n");
    int ncomm = 0;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op != TK_COMM)
            continue;
        ncomm++;
        tk_shard_str(ax_sh(t, n, &t->n[n->a]), sh, sizeof sh);
        tk_shard_str(ax_sh(t, n, n), sh2, sizeof sh2);
        char on[64] = "";
        if (t->naxes)
            snprintf(on, sizeof on, " on %s (%d ranks, %s)", t->axname[n->cax],
                     t->axsize[n->cax], tk_axis_crosses_nodes(t, topo, n->cax) ? "net" : "link");
        dsl_buf_printf(o, "  %%%d %s of %%%d%s: %s -> %s, %.3f MB per rank, %s\n", i,
                       tk_comm_name(n->comm), n->a, on, sh, sh2, comm_bytes(t, n) / 1e6,
                       n->user ? (n->reshard ? "written (reshard)" : "written") : "inserted");
        if (n->gemm >= 0)
            dsl_buf_printf(o, "    next to GEMM %%%d: alternatives\n", n->gemm);
        for (int a = 0; a < n->nalts; a++) {
            bool chosen = n->alts[a].kind == n->place &&
                          (n->place == PL_PLAIN || n->alts[a].chunks == n->chunks);
            dsl_buf_printf(o, "    %s %-44s %10.2f us\n", chosen ? "*" : " ",
                           alt_name(n, &n->alts[a], an, sizeof an), n->alts[a].us);
        }
        if (n->gemm >= 0) {
            double plain = n->alts[0].us, best = plain;
            for (int a = 0; a < n->nalts; a++)
                if (n->alts[a].us < best)
                    best = n->alts[a].us;
            if (n->place == PL_PLAIN)
                dsl_buf_printf(o, "    decision: plain (%s)\n",
                               best < plain ? "overlap disabled" : "overlap does not pay");
            else
                dsl_buf_printf(o, "    decision: %s, %d chunk%s per shard, %.2fx over plain\n",
                               tk_place_name(n->place), n->chunks, n->chunks == 1 ? "" : "s",
                               plain / (best > 0 ? best : 1));
        }
    }
    for (int i = 0; i < t->nn; i++)
        if (t->n[i].op == TK_MOE) {
            tk_moe_plan(o, t, topo, i, false);
            ncomm++;
        }
    if (!ncomm)
        dsl_buf_printf(o, "  none\n");
    bool any_call = false;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op != TK_CALL)
            continue;
        if (!any_call)
            dsl_buf_printf(o, "\ncalls (SPMD on each rank's local shards):\n");
        any_call = true;
        const AstFunc *cf = t->prog->funcs[n->callee];
        dsl_buf_printf(o, "  %%%d %s %s: ", i, cf->fkind == FN_KERNEL ? "kernel" : "device function",
                       cf->name);
        if (t->naxes) { /* per axis */
            for (int a = 0; a < t->naxes; a++) {
                int cs = n->mcsplit[a];
                if (cs >= 0)
                    dsl_buf_printf(o, "%son %s split over its size %s", a ? ", " : "",
                                   t->axname[a],
                                   cf->params[cs / IR_MAX_RANK].dims[cs % IR_MAX_RANK]->name);
                else
                    dsl_buf_printf(o, "%son %s not split", a ? ", " : "", t->axname[a]);
            }
            dsl_buf_printf(o, "\n");
        } else if (n->csplit >= 0)
            dsl_buf_printf(o, "split over its size %s\n",
                           cf->params[n->csplit / IR_MAX_RANK].dims[n->csplit % IR_MAX_RANK]->name);
        else
            dsl_buf_printf(o, "not split (every rank computes the whole result)\n");
        for (int k = 0; k < n->cnargs; k++) {
            const TkNode *X = &t->n[t->cargs[n->carg + k]];
            if (X->rank == 0)
                continue;
            tk_msh_str(t, X, NULL, sh, sizeof sh);
            dsl_buf_printf(o, "    %-8s <- %%%-3d %s%s\n", cf->params[k].name, t->cargs[n->carg + k], sh,
                           X->op == TK_COMM && !X->user ? " (resharded)" : "");
        }
        tk_msh_str(t, n, NULL, sh, sizeof sh);
        dsl_buf_printf(o, "    %-8s -> %%%-3d %s (result)\n", cf->params[cf->nparams - 1].name, i, sh);
    }
    fusion_text(o, t);
    dsl_buf_printf(o, "\nresults:\n");
    for (int r = 0; r < t->nresults; r++) {
        const TkNode *n = &t->n[t->results[r]];
        char rn[24];
        result_name(t, r, rn, sizeof rn);
        tk_type_str(t, n, ty, sizeof ty);
        if (t->naxes)
            tk_msh_str(t, n, &t->res_msh[r * TK_MAX_AXES], sh, sizeof sh);
        else
            tk_shard_str(t->res_sh[r], sh, sizeof sh);
        dsl_buf_printf(o, "  %-8s = %%%-3d %-32s %s\n", rn, t->results[r], ty, sh);
    }
    dsl_buf_printf(o, "\npredicted time per step: %.2f us (serial sum of the ops above; a "
                   "fused elementwise kernel counted once)\n", total_us(t, topo));
}

static void json(DslBuf *o, const TkTask *t, const TkTopology *topo)
{
    char ty[160], sh[128], an[96];
    dsl_buf_printf(o, "{\n  \"task\": ");
    json_str(o, t->fn->name);
    dsl_buf_printf(o, ",\n  \"ranks\": %d,\n  \"topology\": ", t->nranks);
    json_str(o, topo->name);
    dsl_buf_printf(o, ",\n  \"sizes\": {");
    for (int s = 0; s < t->nsyms; s++) {
        dsl_buf_printf(o, "%s", s ? ", " : "");
        json_str(o, t->syms[s]);
        dsl_buf_printf(o, ": %lld", (long long)t->symval[s]);
    }
    dsl_buf_printf(o, "}");
    if (t->naxes) {
        dsl_buf_printf(o, ",\n  \"mesh\": [");
        for (int a = 0; a < t->naxes; a++) {
            dsl_buf_printf(o, "%s{\"axis\": ", a ? ", " : "");
            json_str(o, t->axname[a]);
            dsl_buf_printf(o, ", \"size\": %d, \"stride\": %d, \"link\": \"%s\"}", t->axsize[a],
                           t->axstride[a], tk_axis_crosses_nodes(t, topo, a) ? "net" : "link");
        }
        dsl_buf_printf(o, "]");
    }
    dsl_buf_printf(o, ",\n  \"values\": [\n");
    int k = 0;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op == TK_CONST || n->op == TK_SCALAR)
            continue;
        tk_type_str(t, n, ty, sizeof ty);
        tk_msh_str(t, n, NULL, sh, sizeof sh);
        dsl_buf_printf(o, "%s    {\"id\": %d, \"op\": ", k++ ? ",\n" : "", i);
        json_str(o, n->op == TK_COMM ? tk_comm_name(n->comm) : tk_op_name(n->op));
        dsl_buf_printf(o, ", \"name\": ");
        if (n->name)
            json_str(o, n->name);
        else
            dsl_buf_printf(o, "null");
        dsl_buf_printf(o, ", \"type\": ");
        json_str(o, ty);
        dsl_buf_printf(o, ", \"sharding\": ");
        json_str(o, sh);
        dsl_buf_printf(o, "}");
    }
    dsl_buf_printf(o, "\n  ],\n  \"collectives\": [\n");
    k = 0;
    for (int i = 0; i < t->nn; i++) {
        const TkNode *n = &t->n[i];
        if (n->op != TK_COMM)
            continue;
        dsl_buf_printf(o, "%s    {\"id\": %d, \"kind\": ", k++ ? ",\n" : "", i);
        json_str(o, tk_comm_name(n->comm));
        if (t->naxes) {
            dsl_buf_printf(o, ", \"axis\": ");
            json_str(o, t->axname[n->cax]);
        }
        tk_shard_str(ax_sh(t, n, &t->n[n->a]), sh, sizeof sh);
        dsl_buf_printf(o, ", \"of\": %d, \"from\": ", n->a);
        json_str(o, sh);
        tk_shard_str(ax_sh(t, n, n), sh, sizeof sh);
        dsl_buf_printf(o, ", \"to\": ");
        json_str(o, sh);
        dsl_buf_printf(o, ", \"bytes\": %.0f, \"inserted\": %s, \"gemm\": ", comm_bytes(t, n),
                       n->user ? "false" : "true");
        if (n->gemm >= 0)
            dsl_buf_printf(o, "%d", n->gemm);
        else
            dsl_buf_printf(o, "null");
        dsl_buf_printf(o, ", \"alternatives\": [");
        for (int a = 0; a < n->nalts; a++) {
            dsl_buf_printf(o, "%s{\"form\": ", a ? ", " : "");
            json_str(o, alt_name(n, &n->alts[a], an, sizeof an));
            dsl_buf_printf(o, ", \"chunks\": %d, \"us\": %.3f}", n->alts[a].chunks, n->alts[a].us);
        }
        dsl_buf_printf(o, "], \"chosen\": ");
        json_str(o, tk_place_name(n->place));
        dsl_buf_printf(o, ", \"chunks\": %d}", n->chunks);
    }
    for (int i = 0; i < t->nn; i++) /* moe's dispatch and combine */
        if (t->n[i].op == TK_MOE) {
            dsl_buf_printf(o, "%s", k++ ? ",\n" : "");
            tk_moe_plan(o, t, topo, i, true);
        }
    dsl_buf_printf(o, "\n  ],\n  \"results\": [");
    for (int r = 0; r < t->nresults; r++) {
        char rn[24];
        result_name(t, r, rn, sizeof rn);
        dsl_buf_printf(o, "%s{\"name\": ", r ? ", " : "");
        json_str(o, rn);
        tk_type_str(t, &t->n[t->results[r]], ty, sizeof ty);
        dsl_buf_printf(o, ", \"id\": %d, \"type\": ", t->results[r]);
        json_str(o, ty);
        if (t->naxes)
            tk_msh_str(t, &t->n[t->results[r]], &t->res_msh[r * TK_MAX_AXES], sh, sizeof sh);
        else
            tk_shard_str(t->res_sh[r], sh, sizeof sh);
        dsl_buf_printf(o, ", \"sharding\": ");
        json_str(o, sh);
        dsl_buf_printf(o, "}");
    }
    dsl_buf_printf(o, "],\n  \"predicted_us\": %.3f\n}\n", total_us(t, topo));
}

void tk_plan_print(DslBuf *out, const TkTask *t, const TkTopology *topo, bool as_json)
{
    if (as_json)
        json(out, t, topo);
    else
        text(out, t, topo);
}
