/* task_comm.c — the collectives of a task (TK_COMM nodes) lowered to
 * device code: plain ones become Device IR collectives plus local copies
 * (packing a split dim that is not the outermost into staging buffers);
 * the fused forms overlap communication with a GEMM (LANGUAGE.md §5):
 * AllGather+GEMM gathers A chunk by chunk into a local buffer with async
 * copies that raise signals a waiting GEMM kernel consumes; GEMM +
 * ReduceScatter (or + AllReduce) computes row chunks and sends each as it
 * is done into the owner's symmetric slots, then reduces them. On a mesh
 * a collective runs within its axis' group (g<axis>, made by
 * tk_lower_src) on that axis' ranks. Entry points tl_comm, tl_ag_gemm
 * (task_lower.h). */
#include "task_lower.h"

#include <stdio.h>

/* this rank's index among the collective's ranks: rank(), or on a mesh
 * rank(gK) in its axis' group */
static const char *grank(const L *l, char *buf, size_t n)
{
    if (l->ax < 0)
        return "rank()";
    snprintf(buf, n, "rank(g%d)", l->ax);
    return buf;
}

/* the world rank of member `r` (source text) of the collective's ranks */
static const char *wrank(const L *l, const char *r, char *buf, size_t n)
{
    if (l->ax < 0)
        return r;
    snprintf(buf, n, "(rank() + (%s - rank(g%d)) * %d)", r, l->ax, l->t->axstride[l->ax]);
    return buf;
}

/* lower collective `id` with R and ax of its axis (a mesh) */
static int axis_begin(L *l, int id)
{
    int R0 = l->R;
    if (l->t->naxes) {
        l->ax = l->t->n[id].cax;
        l->R = l->t->axsize[l->ax];
    }
    return R0;
}

static void axis_end(L *l, int R0)
{
    l->R = R0;
    l->ax = -1;
}

/* AllGather+GEMM at the GEMM node g; comm node c gathers A (split(0)). */
static void fused_ag_gemm(L *l, int c, int g)
{
    const TkTask *t = l->t;
    const TkNode *C = &t->n[c], *X = &t->n[C->a], *G = &t->n[g];
    int R = l->R, ch_per = C->chunks;
    int64_t M = tl_ld(l, C, 0), K = tl_ld(l, C, 1), MR = M / R, CH = MR / ch_per;
    DslBuf *d = l->d;
    char gr[32], wr[96];
    dsl_buf_printf(d, "    // AllGather+GEMM: %%%d gathered chunk by chunk while %%%d consumes it\n", c, g);
    dsl_buf_printf(d, "    let s%d = symmetric(%s, %lld, %lld);\n", c, dsl_dtype_name(C->dtype),
                   (long long)MR, (long long)K);
    dsl_buf_printf(d, "    copy(s%d[0 +: %lld, 0 +: %lld], ", c, (long long)MR, (long long)K);
    tl_full_view(l, d, l->buf[C->a], X);
    dsl_buf_printf(d, ");\n    barrier();\n");
    tl_alloc(l, c, "empty");
    dsl_buf_printf(d, "    let rd%d = signals(%d);\n", c, R * ch_per);
    dsl_buf_printf(d, "    async {\n        for i in 0 .. %d {\n            let r = (%s + i) %% %d;\n",
                   R, grank(l, gr, sizeof gr), R);
    dsl_buf_printf(d, "            for j in 0 .. %d {\n", ch_per);
    dsl_buf_printf(d, "                copy(%s[r * %lld + j * %lld +: %lld, 0 +: %lld], "
                      "peer(s%d, %s)[j * %lld +: %lld, 0 +: %lld], signal = rd%d[r * %d + j]);\n",
                   l->buf[c], (long long)MR, (long long)CH, (long long)CH, (long long)K, c,
                   wrank(l, "r", wr, sizeof wr), (long long)CH, (long long)CH, (long long)K, c,
                   ch_per);
    dsl_buf_printf(d, "            }\n        }\n    }\n");
    tl_kernel_gemm(l, g, G_WAIT, "_agw", CH, (int64_t)R * ch_per);
    tl_alloc(l, g, "empty");
    dsl_buf_printf(d, "    launch __k%d_agw(%s, %s, %s, rd%d);\n    sync;\n", g, l->buf[c],
                   l->buf[G->b], l->buf[g], c);
}

/* GEMM+ReduceScatter (or +AllReduce) at comm node c; its GEMM is c's operand. */
static void fused_gemm_rs(L *l, int c)
{
    const TkTask *t = l->t;
    const TkNode *C = &t->n[c];
    int g = C->a;
    const TkNode *G = &t->n[g];
    int R = l->R, cp = C->chunks;
    int64_t M = tl_ld(l, G, 0), N = tl_ld(l, G, 1), MR = M / R, CH = MR / cp;
    const char *dt = dsl_dtype_name(C->dtype);
    DslBuf *d = l->d, *k = l->k;
    char gr[32], wr[96];
    grank(l, gr, sizeof gr);
    dsl_buf_printf(d, "    // GEMM+%s: %%%d computed chunk by chunk, each chunk sent as it is done\n",
                   C->place == PL_GEMM_AR ? "AllReduce" : "ReduceScatter", g);
    tl_kernel_gemm(l, g, G_ROWS, "_rows", CH, 0);
    tl_alloc(l, g, "empty");
    dsl_buf_printf(d, "    let rcv%d = symmetric(%s, %lld, %lld);\n", c, dt, (long long)M, (long long)N);
    dsl_buf_printf(d, "    let rd%d = signals(%d);\n", c, R * cp);
    dsl_buf_printf(d, "    for i in 1 .. %d {\n        let r = (%s + i) %% %d;\n", R + 1,
                   l->ax < 0 ? "rank()" : gr, R);
    dsl_buf_printf(d, "        for j in 0 .. %d {\n", cp);
    dsl_buf_printf(d, "            launch __k%d_rows(%s, %s, %s, r * %lld + j * %lld);\n", g,
                   l->buf[G->a], l->buf[G->b], l->buf[g], (long long)MR, (long long)CH);
    dsl_buf_printf(d, "            async {\n                copy(peer(rcv%d, %s)[%s * %lld + j * %lld +: %lld, 0 +: %lld], "
                      "%s[r * %lld + j * %lld +: %lld, 0 +: %lld], signal = rd%d[%s * %d + j]);\n"
                      "            }\n",
                   c, wrank(l, "r", wr, sizeof wr), l->ax < 0 ? "rank()" : gr, (long long)MR,
                   (long long)CH, (long long)CH, (long long)N, l->buf[g],
                   (long long)MR, (long long)CH, (long long)CH, (long long)N, c,
                   l->ax < 0 ? "rank()" : gr, cp);
    dsl_buf_printf(d, "        }\n    }\n");
    /* the reduction of the R received slots, after every signal */
    int64_t BM = tl_imin(MR, 32), BN = tl_imin(N, 32);
    dsl_buf_printf(k, "kernel __k%d_red(S: %s[%lld, %lld], O: %s[%lld, %lld], ready: signal[%d]) "
                      "grid(cdiv(%lld, %lld), cdiv(%lld, %lld)) {\n",
                   c, dt, (long long)M, (long long)N, dt, (long long)MR, (long long)N, R * cp,
                   (long long)MR, (long long)BM, (long long)N, (long long)BN);
    dsl_buf_printf(k, "    for s in 0 .. %d {\n        wait(ready[s] >= 1);\n    }\n", R * cp);
    dsl_buf_printf(k, "    let m = program_id(0) * %lld;\n    let n = program_id(1) * %lld;\n",
                   (long long)BM, (long long)BN);
    dsl_buf_printf(k, "    var acc = zeros(%s, %lld, %lld);\n", tl_ctype(C->dtype), (long long)BM,
                   (long long)BN);
    dsl_buf_printf(k, "    for q in 0 .. %d {\n        acc = acc + (S[q * %lld + m +: %lld, n +: %lld] as %s);\n    }\n",
                   R, (long long)MR, (long long)BM, (long long)BN, tl_ctype(C->dtype));
    dsl_buf_printf(k, "    O[m +: %lld, n +: %lld] = acc;\n}\n\n", (long long)BM, (long long)BN);
    if (C->place == PL_GEMM_AR) {
        dsl_buf_printf(d, "    let h%d = empty(%s, %lld, %lld);\n", c, dt, (long long)MR, (long long)N);
        dsl_buf_printf(d, "    launch __k%d_red(rcv%d, h%d, rd%d);\n    sync;\n", c, c, c, c);
        tl_alloc(l, c, "empty");
        if (l->ax >= 0)
            dsl_buf_printf(d, "    all_gather(%s, h%d, group = g%d);\n", l->buf[c], c, l->ax);
        else
            dsl_buf_printf(d, "    all_gather(%s, h%d);\n", l->buf[c], c);
    } else {
        tl_alloc(l, c, "empty");
        dsl_buf_printf(d, "    launch __k%d_red(rcv%d, %s, rd%d);\n    sync;\n", c, c, l->buf[c], c);
    }
}

/* ------------------------------------------------------------ collectives */

/* view of buffer `name` with local dims of node n, where dim d is replaced
 * by [start +: len] (start is source text); lead: optional "j, " prefix
 * for a staging buffer */
static void slice_view(L *l, DslBuf *o, const char *name, const char *lead, const TkNode *n,
                       const int64_t *ext, int d, const char *start, int64_t len)
{
    (void)l;
    (void)n;
    dsl_buf_printf(o, "%s[%s", name, lead);
    for (int e = 0; e < n->rank; e++) {
        const char *sep = e || lead[0] ? ", " : "";
        if (e == d)
            dsl_buf_printf(o, "%s%s +: %lld", sep, start, (long long)len);
        else
            dsl_buf_printf(o, "%s0 +: %lld", sep, (long long)ext[e]);
    }
    dsl_buf_printf(o, "]");
}

static void staging(L *l, const char *name, int dtype, int rank, const int64_t *ext)
{
    dsl_buf_printf(l->d, "    let %s = empty(%s, %d", name, dsl_dtype_name(dtype), l->R);
    for (int e = 0; e < rank; e++)
        dsl_buf_printf(l->d, ", %lld", (long long)ext[e]);
    dsl_buf_printf(l->d, ");\n");
}

static void plain_comm_body(L *l, int id)
{
    const TkTask *t = l->t;
    const TkNode *n = &t->n[id], *X = &t->n[n->a];
    DslBuf *d = l->d;
    int r = n->rank;
    /* on a mesh: the collective runs within its axis' group g<axis>
     * (tk_lower_src), on that axis' shardings */
    int ax = t->naxes ? n->cax : -1;
    int R = l->R;
    TkShard xs = ax < 0 ? X->sh : X->msh[ax], ns = ax < 0 ? n->sh : n->msh[ax];
    char grp[32] = "", rk[32] = "rank()";
    if (ax >= 0) {
        snprintf(grp, sizeof grp, ", group = g%d", ax);
        snprintf(rk, sizeof rk, "rank(g%d)", ax);
    }
    int64_t xe[IR_MAX_RANK], ne[IR_MAX_RANK];
    for (int e = 0; e < r; e++) {
        xe[e] = tl_ld(l, X, e);
        ne[e] = tl_ld(l, n, e);
    }
    char st[64], nm[32];
    switch (n->comm) {
    case CM_NONE:
        l->buf[id] = l->buf[n->a];
        return;
    case CM_SLICE: {
        int s = ns.dim;
        tl_alloc(l, id, "empty");
        dsl_buf_printf(d, "    copy(");
        tl_full_view(l, d, l->buf[id], n);
        dsl_buf_printf(d, ", ");
        snprintf(st, sizeof st, "%s * %lld", rk, (long long)ne[s]);
        slice_view(l, d, l->buf[n->a], "", X, xe, s, st, ne[s]);
        dsl_buf_printf(d, ");\n");
        return;
    }
    case CM_ALL_GATHER: {
        int s = xs.dim;
        tl_alloc(l, id, "empty");
        if (s == 0) {
            dsl_buf_printf(d, "    all_gather(%s, %s%s);\n", l->buf[id], l->buf[n->a], grp);
            return;
        }
        snprintf(nm, sizeof nm, "g%d", id);
        staging(l, nm, n->dtype, r, xe);
        dsl_buf_printf(d, "    all_gather(%s, %s%s);\n    for j in 0 .. %d {\n        copy(", nm,
                       l->buf[n->a], grp, R);
        snprintf(st, sizeof st, "j * %lld", (long long)xe[s]);
        slice_view(l, d, l->buf[id], "", n, ne, s, st, xe[s]);
        dsl_buf_printf(d, ", ");
        slice_view(l, d, nm, "j", X, xe, -1, "", 0);
        dsl_buf_printf(d, ");\n    }\n");
        return;
    }
    case CM_ALL_REDUCE:
        if (X->uses == 1 && X->op != TK_PARAM) {
            l->buf[id] = l->buf[n->a];
        } else {
            tl_alloc(l, id, "empty");
            dsl_buf_printf(d, "    copy(");
            tl_full_view(l, d, l->buf[id], n);
            dsl_buf_printf(d, ", ");
            tl_full_view(l, d, l->buf[n->a], X);
            dsl_buf_printf(d, ");\n");
        }
        dsl_buf_printf(d, "    all_reduce(%s%s);\n", l->buf[id], grp);
        return;
    case CM_REDUCE_SCATTER: {
        int s = ns.dim;
        tl_alloc(l, id, "empty");
        if (s == 0) {
            dsl_buf_printf(d, "    reduce_scatter(%s, %s%s);\n", l->buf[id], l->buf[n->a], grp);
            return;
        }
        snprintf(nm, sizeof nm, "g%d", id);
        staging(l, nm, n->dtype, r, ne);
        dsl_buf_printf(d, "    for j in 0 .. %d {\n        copy(", R);
        slice_view(l, d, nm, "j", n, ne, -1, "", 0);
        dsl_buf_printf(d, ", ");
        snprintf(st, sizeof st, "j * %lld", (long long)ne[s]);
        slice_view(l, d, l->buf[n->a], "", X, xe, s, st, ne[s]);
        dsl_buf_printf(d, ");\n    }\n    reduce_scatter(%s, %s%s);\n", l->buf[id], nm, grp);
        return;
    }
    case CM_ALL_TO_ALL: {
        int a = xs.dim, b = ns.dim;
        int64_t pe[IR_MAX_RANK]; /* a chunk: X's local dims with dim b cut */
        for (int e = 0; e < r; e++)
            pe[e] = xe[e];
        pe[b] = ne[b];
        char s1[32], s2[32];
        snprintf(s1, sizeof s1, "t%d", id);
        snprintf(s2, sizeof s2, "u%d", id);
        staging(l, s1, n->dtype, r, pe);
        staging(l, s2, n->dtype, r, pe);
        dsl_buf_printf(d, "    for j in 0 .. %d {\n        copy(", R);
        slice_view(l, d, s1, "j", X, pe, -1, "", 0);
        dsl_buf_printf(d, ", ");
        snprintf(st, sizeof st, "j * %lld", (long long)pe[b]);
        slice_view(l, d, l->buf[n->a], "", X, xe, b, st, pe[b]);
        dsl_buf_printf(d, ");\n    }\n    all_to_all(%s, %s%s);\n", s2, s1, grp);
        tl_alloc(l, id, "empty");
        dsl_buf_printf(d, "    for j in 0 .. %d {\n        copy(", R);
        snprintf(st, sizeof st, "j * %lld", (long long)pe[a]);
        slice_view(l, d, l->buf[id], "", n, ne, a, st, pe[a]);
        dsl_buf_printf(d, ", ");
        slice_view(l, d, s2, "j", X, pe, -1, "", 0);
        dsl_buf_printf(d, ");\n    }\n");
        return;
    }
    }
}

/* a plain collective; on a mesh its staging buffers hold its axis' ranks */
static void plain_comm(L *l, int id)
{
    int R0 = axis_begin(l, id);
    plain_comm_body(l, id);
    axis_end(l, R0);
}

void tl_ag_gemm(L *l, int c, int g)
{
    int R0 = axis_begin(l, c);
    fused_ag_gemm(l, c, g);
    axis_end(l, R0);
}

void tl_comm(L *l, int id)
{
    const TkNode *n = &l->t->n[id];
    if (n->place == PL_AG_GEMM)
        return; /* emitted with its GEMM (tl_ag_gemm) */
    if (n->place == PL_GEMM_RS || n->place == PL_GEMM_AR) {
        int R0 = axis_begin(l, id);
        fused_gemm_rs(l, id);
        axis_end(l, R0);
    } else
        plain_comm(l, id);
}
