/* task_moe.c — the mixture-of-experts op of the task tier,
 * `moe(x, wr, w1, w2, k)` (docs/task.md "Mixture of experts"): the
 * operand checks, the cost, the `blkc plan` lines and the lowering to
 * device code; the sharding rule is rule_moe in task_shard.c. Per rank the
 * lowering is:
 *   router    logits = x @ wr on the local tokens (a tiled GEMM);
 *   route     top-k of each token's logits (ties to the lower expert) and
 *             gates = softmax over the k chosen logits (a program per
 *             token); rows per expert and each choice's slot (one
 *             program); the rows packed expert by expert into `send`;
 *   dispatch  the row counts per (source, expert) with an even all_to_all
 *             in the expert-parallel group, then the rows themselves with
 *             the uneven all_to_all (send_counts / recv_counts);
 *   experts   silu(rows @ w1[e]) @ w2[e] for each local expert's rows;
 *   combine   the reverse uneven all_to_all, then y[t] = sum over the k
 *             choices of gate * row, in choice order.
 * Every row is computed by the same kernels whatever the ranks, so the
 * result does not depend on the rank count. Nothing is dropped: buffers
 * are sized for the worst case (a rank receiving every row of its group). */
#include "task.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ checks */

static bool same_dim(const TkNode *x, int dx, const TkNode *y, int dy)
{
    if (x->dims[dx] >= 0 && y->dims[dy] >= 0)
        return x->dims[dx] == y->dims[dy];
    if (x->dsym[dx] >= 0 && y->dsym[dy] >= 0)
        return x->dsym[dx] == y->dsym[dy];
    return true;
}

int tk_moe_check(const TkTask *t, int x, int wr, int w1, int w2, int k, char *err,
                 size_t errlen)
{
    const int ids[4] = {x, wr, w1, w2};
    static const char *const what[4] = {"x", "wr", "w1", "w2"};
    static const int ranks[4] = {2, 2, 3, 3};
    char ty[4][160];
    for (int i = 0; i < 4; i++)
        tk_type_str(t, &t->n[ids[i]], ty[i], sizeof ty[i]);
    for (int i = 0; i < 4; i++) {
        const TkNode *n = &t->n[ids[i]];
        if (n->dtype != DT_F32) {
            snprintf(err, errlen, "moe: %s is %s; moe takes f32 tensors (other dtypes: not "
                     "supported yet)", what[i], ty[i]);
            return -1;
        }
        if (n->rank != ranks[i]) {
            snprintf(err, errlen, "moe(x: %s, wr: %s, w1: %s, w2: %s): %s must have %d dims "
                     "(x [T, H], wr [H, E], w1 [E, H, F], w2 [E, F, H])", ty[0], ty[1], ty[2],
                     ty[3], what[i], ranks[i]);
            return -1;
        }
    }
    const TkNode *X = &t->n[x], *R = &t->n[wr], *A = &t->n[w1], *B = &t->n[w2];
    const char *bad = !same_dim(R, 0, X, 1)   ? "wr's dim 0 must be x's H"
                      : !same_dim(A, 0, R, 1) ? "w1's dim 0 must be the experts E (wr's dim 1)"
                      : !same_dim(A, 1, X, 1) ? "w1's dim 1 must be x's H"
                      : !same_dim(B, 0, R, 1) ? "w2's dim 0 must be the experts E (wr's dim 1)"
                      : !same_dim(B, 1, A, 2) ? "w2's dim 1 must be w1's F"
                      : !same_dim(B, 2, X, 1) ? "w2's dim 2 must be x's H"
                                              : NULL;
    if (bad) {
        snprintf(err, errlen, "moe(x: %s, wr: %s, w1: %s, w2: %s): %s (x [T, H], wr [H, E], "
                 "w1 [E, H, F], w2 [E, F, H])", ty[0], ty[1], ty[2], ty[3], bad);
        return -1;
    }
    if (k < 1 || (R->dims[1] >= 0 && k > R->dims[1])) {
        snprintf(err, errlen, "moe: k = %d experts per token, but there are %lld experts (1 <= "
                 "k <= E)", k, (long long)(R->dims[1] >= 0 ? R->dims[1] : 0));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ shape */

typedef struct Moe {
    int64_t T, H, F, E, EL;        /* local tokens, dims, experts (all, local) */
    int64_t HW;                    /* wr's dim 0 (H) */
    int K;                         /* top-k */
    int G;                         /* expert-parallel ranks (1: none) */
    int stride;                    /* their world-rank stride */
    int ax;                        /* their mesh axis, -1: the 1-D ranks / none */
    int W;                         /* world ranks */
} Moe;

static Moe moe_shape(const TkTask *t, int id)
{
    const TkNode *n = &t->n[id];
    Moe m;
    m.T = tk_local_dim(t, n, 0);
    m.H = tk_local_dim(t, n, 1);
    m.F = t->n[n->c].dims[2];
    m.E = t->n[n->b].dims[1];
    m.HW = t->n[n->b].dims[0];
    m.K = n->sub;
    m.W = t->nranks > 0 ? t->nranks : 1;
    m.ax = t->naxes && n->cax >= 0 ? n->cax : -1;
    m.G = n->cax < 0 ? 1 : t->naxes ? t->axsize[n->cax] : m.W;
    m.stride = m.ax >= 0 ? t->axstride[m.ax] : 1;
    if (m.G < 1)
        m.G = 1;
    m.EL = m.E / m.G;
    return m;
}

/* ------------------------------------------------------------ cost */

/* parts: [0] dispatch (counts + rows), [1] route, experts and combine
 * kernels, [2] combine (rows back). Routing is taken as uniform: each
 * rank sends T * k rows and each local expert gets T * k / EL of them. */
double tk_moe_cost_us(const TkTask *t, const TkTopology *topo, int id, double *parts)
{
    Moe m = moe_shape(t, id);
    TkTopology tp = *topo; /* the group's link: the axis' (mesh) or by size */
    bool net = m.ax >= 0 ? tk_axis_crosses_nodes(t, topo, m.ax) : m.G > topo->ranks_per_node;
    tp.ranks_per_node = net ? 0 : INT_MAX;
    double rows = (double)m.T * m.K, bytes = rows * (double)m.H * 4;
    double comm = m.G > 1 ? tk_cost_coll_us(&tp, CM_ALL_TO_ALL, m.G, bytes) : 0;
    double cnt = m.G > 1 ? tk_cost_coll_us(&tp, CM_ALL_TO_ALL, m.G, (double)m.E * 4) : 0;
    int64_t per = (int64_t)((rows + (double)m.EL - 1) / (double)m.EL);
    double ex = tk_cost_gemm_us(topo, DT_F32, m.EL, per < 1 ? 1 : per, m.F, m.H) +
                tk_cost_gemm_us(topo, DT_F32, m.EL, per < 1 ? 1 : per, m.H, m.F);
    ex += tk_cost_gemm_us(topo, DT_F32, 1, m.T, m.E, m.H); /* the router */
    /* route + combine: memory-bound over the logits and 2 x the rows */
    double mem = ((double)m.T * (double)m.E * 4 + 3 * bytes) / (topo->hbm_gbs * 1e9) * 1e6 +
                 2 * topo->launch_us;
    double p[3] = {cnt + comm, ex + mem, comm};
    if (parts)
        memcpy(parts, p, sizeof p);
    return p[0] + p[1] + p[2];
}

/* ------------------------------------------------------------ plan */

void tk_moe_plan(DslBuf *o, const TkTask *t, const TkTopology *topo, int id, bool json)
{
    const TkNode *n = &t->n[id];
    Moe m = moe_shape(t, id);
    double p[3];
    tk_moe_cost_us(t, topo, id, p);
    double mb = (double)m.T * m.K * (double)m.H * 4;
    bool net = m.ax >= 0 ? tk_axis_crosses_nodes(t, topo, m.ax) : m.G > topo->ranks_per_node;
    const char *axn = m.ax >= 0 ? t->axname[m.ax] : NULL;
    if (json) {
        static const char *const kind[2] = {"moe_dispatch", "moe_combine"};
        for (int i = 0; i < 2; i++) {
            dsl_buf_printf(o, "%s    {\"id\": %d, \"kind\": \"%s\"", i ? ",\n" : "", id, kind[i]);
            if (axn)
                dsl_buf_printf(o, ", \"axis\": \"%s\"", axn);
            dsl_buf_printf(o, ", \"of\": %d, \"ranks\": %d, \"k\": %d, \"experts\": %lld, "
                           "\"bytes\": %.0f, \"us\": %.3f, \"experts_us\": %.3f}", i ? id : n->a,
                           m.G, m.K, (long long)m.E, mb, p[i ? 2 : 0], p[1]);
        }
        return;
    }
    char on[96];
    if (n->cax < 0)
        snprintf(on, sizeof on, " (experts not split: all on every rank)");
    else if (axn)
        snprintf(on, sizeof on, " on %s (%d ranks, %s)", axn, m.G, net ? "net" : "link");
    else
        snprintf(on, sizeof on, " (%d rank%s, %s)", m.G, m.G == 1 ? "" : "s",
                 net ? "net" : "link");
    dsl_buf_printf(o, "  %%%d moe(x %%%d, wr %%%d, w1 %%%d, w2 %%%d)%s: top-%d of %lld "
                   "experts, %lld per rank, %lld tokens per rank\n", id, n->a, n->b, n->c,
                   t->cargs[n->carg], on, m.K, (long long)m.E, (long long)m.EL, (long long)m.T);
    char line[160];
    if (m.G > 1)
        snprintf(line, sizeof line, "all_to_all of the row counts + uneven all_to_all of the "
                 "rows, ~%.3f MB per rank", mb / 1e6);
    else
        snprintf(line, sizeof line, "none (every expert is local)");
    dsl_buf_printf(o, "    dispatch  %-78s %10.2f us\n", line, p[0]);
    snprintf(line, sizeof line, "router, top-%d, silu(rows @ w1) @ w2 on ~%lld rows per local "
             "expert, sum", m.K, (long long)((m.T * m.K + m.EL - 1) / m.EL));
    dsl_buf_printf(o, "    experts   %-78s %10.2f us\n", line, p[1]);
    if (m.G > 1) {
        snprintf(line, sizeof line, "uneven all_to_all of the rows back, ~%.3f MB per rank",
                 mb / 1e6);
        dsl_buf_printf(o, "    combine   %-78s %10.2f us\n", line, p[2]);
    }
    dsl_buf_printf(o, "    (data-dependent counts: sizes assume uniform routing)\n");
}

/* ------------------------------------------------------------ lowering */

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* kernel __kN_NAME: rows of block (source, local expert) of `in` [RR, KD]
 * times w[l] [EL, KD, ND] into out [RR, ND]; silu when `act` */
static void expert_kernel(DslBuf *k, int id, const char *name, const Moe *m, int64_t RR,
                          int64_t KD, int64_t ND, bool act)
{
    int64_t BM = imin(m->T, 32), BN = imin(ND, 32), BK = imin(KD, 32);
    int64_t tm = (m->T + BM - 1) / BM;
    dsl_buf_printf(k, "kernel __k%d_%s(A: f32[%lld, %lld], cnt: i32[%lld], off: i32[%lld], "
                   "B: f32[%lld, %lld, %lld], C: f32[%lld, %lld]) grid(%lld, cdiv(%lld, %lld)) {\n",
                   id, name, (long long)RR, (long long)KD, (long long)m->E, (long long)m->E,
                   (long long)m->EL, (long long)KD, (long long)ND, (long long)RR, (long long)ND,
                   (long long)(m->E * tm), (long long)ND, (long long)BN);
    dsl_buf_printf(k, "    let blk = program_id(0) / %lld;\n    let l = blk %% %lld;\n"
                   "    let m0 = (program_id(0) %% %lld) * %lld;\n    let n = program_id(1) * %lld;\n"
                   "    let rows = cnt[blk];\n    if m0 < rows {\n"
                   "        let rmask = (m0 + arange(%lld)) < rows;\n        let r0 = off[blk] + m0;\n"
                   "        var acc = zeros(f32, %lld, %lld);\n        for k in 0 .. %lld step %lld {\n"
                   "            let a = load(A[r0 +: %lld, k +: %lld], mask = rmask[:, None]);\n"
                   "            acc = dot(a, B[l, k +: %lld, n +: %lld], acc);\n        }\n",
                   (long long)tm, (long long)m->EL, (long long)tm, (long long)BM, (long long)BN,
                   (long long)BM, (long long)BM, (long long)BN, (long long)KD, (long long)BK,
                   (long long)BM, (long long)BK, (long long)BK, (long long)BN);
    dsl_buf_printf(k, "        store(C[r0 +: %lld, n +: %lld], %s, mask = rmask[:, None]);\n"
                   "    }\n}\n\n", (long long)BM, (long long)BN, act ? "acc * sigmoid(acc)" : "acc");
}

int tk_moe_lower(const TkTask *t, int id, const char *const *buf, DslBuf *kb, DslBuf *db,
                 char *err, size_t errlen)
{
    const TkNode *n = &t->n[id];
    Moe m = moe_shape(t, id);
    if (m.T < 0 || m.H < 0 || m.F < 0 || m.E < 0 || m.E % m.G || m.HW != m.H)
        return IR_BUG(err, errlen, "moe %%%d lowered with unknown or mismatched sizes", id);
    long long T = m.T, H = m.H, F = m.F, E = m.E, EL = m.EL, K = m.K, W = m.W, G = m.G;
    long long BH = imin(m.H, 64), RR = G * T * K;
    DslBuf *k = kb, *d = db;
    /* the router: logits = x @ wr on the local tokens */
    {
        long long BM = imin(m.T, 32), BN = imin(m.E, 32), BK = imin(m.H, 32);
        dsl_buf_printf(k, "// moe %%%d: router logits\n", id);
        dsl_buf_printf(k, "kernel __k%d_router(A: f32[%lld, %lld], B: f32[%lld, %lld], C: f32[%lld, %lld]) "
                       "grid(cdiv(%lld, %lld), cdiv(%lld, %lld)) {\n"
                       "    let m = program_id(0) * %lld;\n    let n = program_id(1) * %lld;\n"
                       "    var acc = zeros(f32, %lld, %lld);\n    for k in 0 .. %lld step %lld {\n"
                       "        acc = dot(A[m +: %lld, k +: %lld], B[k +: %lld, n +: %lld], acc);\n"
                       "    }\n    C[m +: %lld, n +: %lld] = acc;\n}\n\n", id, T, H, H, E, T, E, T, BM,
                       E, BN, BM, BN, BM, BN, H, BK, BM, BK, BK, BN, BM, BN);
    }
    /* route: top-k and gates per token; counts, offsets, send counts per
     * world rank and each choice's slot (one program); the rows packed */
    dsl_buf_printf(k, "// moe %%%d: top-%lld of %lld experts per token (ties to the lower expert), "
                   "gates = softmax over the chosen logits\n", id, K, E);
    dsl_buf_printf(k, "kernel __k%d_topk(Lg: f32[%lld, %lld], idx: i32[%lld, %lld], gate: f32[%lld, %lld]) "
                   "grid(%lld) {\n    let t = program_id(0);\n", id, T, E, T, K, T, K, T);
    dsl_buf_printf(k, "    for j in 0 .. %lld {\n"
                   "        var best = -1;\n        var bv = Lg[t, 0];\n"
                   "        for e in 0 .. %lld {\n            var taken = 0;\n"
                   "            for q in 0 .. j {\n                if idx[t, q] == e {\n"
                   "                    taken = 1;\n                }\n            }\n"
                   "            let v = Lg[t, e];\n"
                   "            if taken == 0 && (best < 0 || v > bv) {\n"
                   "                best = e;\n                bv = v;\n            }\n"
                   "        }\n        idx[t, j] = best;\n        gate[t, j] = bv;\n"
                   "    }\n    let mx = gate[t, 0];\n    var s = 0.0;\n"
                   "    for j in 0 .. %lld {\n        let g = exp(gate[t, j] - mx);\n"
                   "        gate[t, j] = g;\n        s += g;\n    }\n    for j in 0 .. %lld {\n"
                   "        gate[t, j] = gate[t, j] / s;\n    }\n}\n\n", K, E, K, K);
    dsl_buf_printf(k, "// rows per expert, each expert's first row, elements per world rank, "
                   "each choice's slot\n");
    dsl_buf_printf(k, "kernel __k%d_count(idx: i32[%lld, %lld], pos: i32[%lld, %lld], cnt: i32[%lld], "
                   "off: i32[%lld], sc: i64[%lld], base: i32) grid(1) {\n", id, T, K, T, K, E, E, W);
    dsl_buf_printf(k, "    for e in 0 .. %lld {\n        cnt[e] = 0;\n    }\n"
                   "    for t in 0 .. %lld {\n        for j in 0 .. %lld {\n"
                   "            let e = idx[t, j];\n            pos[t, j] = cnt[e];\n"
                   "            cnt[e] = cnt[e] + 1;\n        }\n    }\n"
                   "    var o = 0;\n    for e in 0 .. %lld {\n        off[e] = o;\n        o += cnt[e];\n    }\n"
                   "    for q in 0 .. %lld {\n        sc[q] = 0 as i64;\n    }\n"
                   "    for q in 0 .. %lld {\n        var c = 0;\n        for l in 0 .. %lld {\n"
                   "            c += cnt[q * %lld + l];\n        }\n"
                   "        sc[base + q * %d] = (c * %lld) as i64;\n    }\n}\n\n", E, T, K, E, W, G,
                   EL, EL, m.stride, H);
    dsl_buf_printf(k, "kernel __k%d_pack(X: f32[%lld, %lld], idx: i32[%lld, %lld], pos: i32[%lld, %lld], "
                   "off: i32[%lld], send: f32[%lld, %lld]) grid(%lld) {\n    let t = program_id(0);\n"
                   "    for j in 0 .. %lld {\n        let r = off[idx[t, j]] + pos[t, j];\n"
                   "        for h in 0 .. %lld step %lld {\n"
                   "            send[r, h +: %lld] = X[t, h +: %lld];\n        }\n    }\n}\n\n",
                   id, T, H, T, K, T, K, E, T * K, H, T, K, H, BH, BH, BH);
    /* the receive layout: block b = source * EL + l after the blocks before */
    dsl_buf_printf(k, "kernel __k%d_layout(rcnt: i32[%lld], roff: i32[%lld], rc: i64[%lld], "
                   "base: i32) grid(1) {\n    var o = 0;\n    for b in 0 .. %lld {\n"
                   "        roff[b] = o;\n        o += rcnt[b];\n    }\n"
                   "    for q in 0 .. %lld {\n        rc[q] = 0 as i64;\n    }\n"
                   "    for q in 0 .. %lld {\n        var c = 0;\n        for l in 0 .. %lld {\n"
                   "            c += rcnt[q * %lld + l];\n        }\n"
                   "        rc[base + q * %d] = (c * %lld) as i64;\n    }\n}\n\n",
                   id, E, E, W, E, W, G, EL, EL, m.stride, H);
    expert_kernel(k, id, "up", &m, RR, H, F, true);
    expert_kernel(k, id, "down", &m, RR, F, H, false);
    dsl_buf_printf(k, "kernel __k%d_combine(back: f32[%lld, %lld], idx: i32[%lld, %lld], "
                   "gate: f32[%lld, %lld], pos: i32[%lld, %lld], off: i32[%lld], Y: f32[%lld, %lld]) "
                   "grid(%lld) {\n    let t = program_id(0);\n    for h in 0 .. %lld step %lld {\n"
                   "        var acc = zeros(f32, %lld);\n        for j in 0 .. %lld {\n"
                   "            acc += gate[t, j] * back[off[idx[t, j]] + pos[t, j], h +: %lld];\n"
                   "        }\n        Y[t, h +: %lld] = acc;\n    }\n}\n\n",
                   id, T * K, H, T, K, T, K, T, K, E, T, H, T, H, BH, BH, K, BH, BH);
    /* device code */
    char grp[32] = "", base[96] = "0";
    if (m.ax >= 0) {
        snprintf(grp, sizeof grp, ", group = g%d", m.ax);
        snprintf(base, sizeof base, "rank() - rank(g%d) * %d", m.ax, m.stride);
    }
    dsl_buf_printf(d, "    // moe %%%d: top-%lld of %lld experts, %lld per rank over %lld rank%s\n",
                   id, K, E, EL, G, G == 1 ? "" : "s");
    dsl_buf_printf(d, "    let m%d_send = empty(f32, %lld, %lld);\n    let m%d_idx = empty(i32, %lld, %lld);\n"
                   "    let m%d_gate = empty(f32, %lld, %lld);\n    let m%d_pos = empty(i32, %lld, %lld);\n"
                   "    let m%d_cnt = empty(i32, %lld);\n    let m%d_off = empty(i32, %lld);\n"
                   "    let m%d_sc = empty(i64, %lld);\n    let m%d_base = %s;\n",
                   id, T * K, H, id, T, K, id, T, K, id, T, K, id, E, id, E, id, W, id, base);
    dsl_buf_printf(d, "    let m%d_lg = empty(f32, %lld, %lld);\n    launch __k%d_router(%s, %s, m%d_lg);\n",
                   id, T, E, id, buf[n->a], buf[n->b], id);
    dsl_buf_printf(d, "    launch __k%d_topk(m%d_lg, m%d_idx, m%d_gate);\n"
                   "    launch __k%d_count(m%d_idx, m%d_pos, m%d_cnt, m%d_off, m%d_sc, m%d_base);\n"
                   "    launch __k%d_pack(%s, m%d_idx, m%d_pos, m%d_off, m%d_send);\n", id, id, id,
                   id, id, id, id, id, id, id, id, id, buf[n->a], id, id, id, id);
    char recv[32], rcnt[32], roff[32], back[32];
    if (G > 1) {
        dsl_buf_printf(d, "    let m%d_rcnt = empty(i32, %lld);\n    let m%d_roff = empty(i32, %lld);\n"
                       "    let m%d_rc = empty(i64, %lld);\n    let m%d_recv = empty(f32, %lld, %lld);\n"
                       "    all_to_all(m%d_rcnt, m%d_cnt%s);               // rows per (source, expert)\n"
                       "    launch __k%d_layout(m%d_rcnt, m%d_roff, m%d_rc, m%d_base);\n"
                       "    all_to_all(m%d_recv, m%d_send, send_counts = m%d_sc, recv_counts = m%d_rc);"
                       "   // dispatch\n", id, E, id, E, id, W, id, RR, H, id, id, grp, id, id, id,
                       id, id, id, id, id, id);
        snprintf(recv, sizeof recv, "m%d_recv", id);
        snprintf(rcnt, sizeof rcnt, "m%d_rcnt", id);
        snprintf(roff, sizeof roff, "m%d_roff", id);
    } else {
        snprintf(recv, sizeof recv, "m%d_send", id);
        snprintf(rcnt, sizeof rcnt, "m%d_cnt", id);
        snprintf(roff, sizeof roff, "m%d_off", id);
    }
    dsl_buf_printf(d, "    let m%d_h = empty(f32, %lld, %lld);\n    let m%d_out = empty(f32, %lld, %lld);\n"
                   "    launch __k%d_up(%s, %s, %s, %s, m%d_h);\n"
                   "    launch __k%d_down(m%d_h, %s, %s, %s, m%d_out);\n",
                   id, RR, F, id, RR, H, id, recv, rcnt, roff, buf[n->c], id, id, id, rcnt, roff,
                   buf[t->cargs[n->carg]], id);
    if (G > 1) {
        dsl_buf_printf(d, "    let m%d_back = empty(f32, %lld, %lld);\n"
                       "    all_to_all(m%d_back, m%d_out, send_counts = m%d_rc, recv_counts = m%d_sc);"
                       "   // combine\n", id, T * K, H, id, id, id, id);
        snprintf(back, sizeof back, "m%d_back", id);
    } else {
        snprintf(back, sizeof back, "m%d_out", id);
    }
    dsl_buf_printf(d, "    let %s = empty(f32, %lld, %lld);\n"
                   "    launch __k%d_combine(%s, m%d_idx, m%d_gate, m%d_pos, m%d_off, %s);\n",
                   buf[id], T, H, id, back, id, id, id, id, buf[id]);
    (void)F;
    if (kb->oom || db->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
