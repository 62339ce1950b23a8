/* task_cost.c — the cost model and communication placement.
 *
 * GEMM: roofline of 2*B*M*N*K FLOPs at peak * gemm_eff * wave efficiency
 * (tiles over SMs) against the bytes of A, B and C at HBM bandwidth, plus a
 * launch. Collectives: ring algorithms, (R-1)/R of the buffer per rank over
 * the per-GPU link at link_gbs * link_eff, plus latency steps.
 * Overlapped forms are simulated chunk by chunk: AllGather+GEMM computes the
 * local shard's chunks first and each remote chunk once it has landed (the
 * copies stream back to back at link speed); GEMM+ReduceScatter computes the
 * peers' chunks first and sends each as soon as it is done, then reduces
 * the R received slots. GEMM chunks running under communication are slowed
 * by overlap_slowdown; every chunk costs chunk_us of signalling.
 *
 * On a mesh (task ... mesh(...)) a collective runs on one axis' group: R
 * is that axis' size, its link the node's or the network
 * (tk_axis_crosses_nodes), and the GEMM's sizes are local on the other
 * axes; placement is the same per axis.
 *
 * Placement: every collective that feeds (all_gather) or follows
 * (reduce_scatter, all_reduce) a 2-D GEMM with no other consumer gets the
 * alternatives plain / fused with 1, 2, 4 chunks per shard, and takes the
 * fastest (ties go to plain); the others are plain. */
#include "task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double peak_tflops(const TkTopology *t, int dtype)
{
    if (dtype == DT_F32)
        return t->tflops_f32;
    if (dtype == DT_F64)
        return t->tflops_f32 / 2;
    return t->tflops_bf16;
}

static double gemm_core_us(const TkTopology *t, int dtype, int64_t batch, int64_t m,
                           int64_t n, int64_t k)
{
    double flops = 2.0 * (double)batch * (double)m * (double)n * (double)k;
    double tiles = (double)batch * ceil((double)m / t->tile_m) * ceil((double)n / t->tile_n);
    double waves = ceil(tiles / t->sms);
    double wave_eff = waves > 0 ? tiles / (waves * t->sms) : 1;
    double tc = flops / (peak_tflops(t, dtype) * 1e12 * t->gemm_eff * wave_eff);
    double esz = dsl_dtype_bytes(dtype);
    double bytes = (double)batch * ((double)m * k + (double)k * n + (double)m * n) * esz;
    double tm = bytes / (t->hbm_gbs * 1e9);
    return (tc > tm ? tc : tm) * 1e6;
}

double tk_cost_gemm_us(const TkTopology *t, int dtype, int64_t batch, int64_t m, int64_t n,
                       int64_t k)
{
    return gemm_core_us(t, dtype, batch, m, n, k) + t->launch_us;
}

static double net_bw(const TkTopology *t, bool net)
{
    double bw = t->link_gbs * t->link_eff;
    if (net && t->net_gbs < bw)
        bw = t->net_gbs;
    return bw * 1e9;
}

/* a plain collective on `ranks` ranks over the node link or the network */
static double coll_us(const TkTopology *t, int comm, int ranks, double bytes, bool net)
{
    if (ranks <= 1 || comm == CM_NONE)
        return 0;
    double R = ranks, bw = net_bw(t, net), lat = net ? t->net_lat_us : t->link_lat_us;
    switch (comm) {
    case CM_SLICE:
        return bytes / R / (t->hbm_gbs * 1e9) * 1e6 + t->launch_us;
    case CM_ALL_GATHER:
    case CM_REDUCE_SCATTER:
        return (R - 1) / R * bytes / bw * 1e6 + (R - 1) * lat + t->launch_us;
    case CM_ALL_REDUCE:
        return 2 * (R - 1) / R * bytes / bw * 1e6 + 2 * (R - 1) * lat + t->launch_us;
    case CM_ALL_TO_ALL:
        return (R - 1) / R * bytes / bw * 1e6 + lat + t->launch_us;
    }
    return 0;
}

double tk_cost_coll_us(const TkTopology *t, int comm, int ranks, double bytes)
{
    return coll_us(t, comm, ranks, bytes, ranks > t->ranks_per_node);
}

/* Is `name` in the comma-separated list? */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *q = p;
        while (*q && *q != ',' && *q != ' ')
            q++;
        if ((size_t)(q - p) == n && strncmp(p, name, n) == 0)
            return true;
        p = q;
    }
    return false;
}

bool tk_axis_crosses_nodes(const TkTask *t, const TkTopology *topo, int k)
{
    if (in_list(topo->axis_net, t->axname[k]))
        return true;
    if (in_list(topo->axis_link, t->axname[k]))
        return false;
    return t->axsize[k] > 1 && (int64_t)t->axstride[k] * t->axsize[k] > topo->ranks_per_node;
}

static double local_numel(const TkTask *t, const TkNode *n)
{
    double k = 1;
    for (int d = 0; d < n->rank; d++)
        k *= (double)(tk_local_dim(t, n, d) < 0 ? 1 : tk_local_dim(t, n, d));
    return k;
}

double tk_comm_bytes(const TkTask *t, const TkNode *n)
{
    double b = (double)tk_numel(n) * dsl_dtype_bytes(n->dtype);
    if (!t->naxes)
        return n->comm == CM_ALL_TO_ALL && t->nranks > 0 ? b / t->nranks : b;
    /* on a mesh: the larger of the local input and output (the gathered
     * or reduced buffer of one rank of the axis' group) */
    double x = local_numel(t, &t->n[n->a]), y = local_numel(t, n);
    return (x > y ? x : y) * dsl_dtype_bytes(n->dtype);
}

/* a mesh collective: plain, on its axis' group and link */
static double mesh_coll_us(const TkTask *t, const TkTopology *topo, const TkNode *n)
{
    return coll_us(topo, n->comm, t->axsize[n->cax], tk_comm_bytes(t, n),
                   tk_axis_crosses_nodes(t, topo, n->cax));
}

/* AllGather+GEMM over the node link or the network (net) */
static double ag_gemm_us(const TkTopology *t, int dtype, int ranks, int64_t m, int64_t n,
                         int64_t k, int chunks, bool net)
{
    int nch = ranks * chunks;
    double G = gemm_core_us(t, dtype, 1, m, n, k);
    double tg = G / nch;
    double esz = dsl_dtype_bytes(dtype);
    double tc = (double)m / nch * (double)k * esz / net_bw(t, net) * 1e6 +
                (net ? t->net_lat_us : t->link_lat_us) / chunks;
    double g = t->launch_us, last_arrival = (double)(ranks - 1) * chunks * tc;
    for (int i = 0; i < nch; i++) {
        double arrive = i < chunks ? 0 : (double)(i - chunks + 1) * tc;
        double start = g > arrive ? g : arrive;
        double slow = start < last_arrival ? 1 + t->overlap_slowdown : 1;
        g = start + tg * slow + t->chunk_us;
    }
    return g;
}

double tk_cost_ag_gemm_us(const TkTopology *t, int dtype, int ranks, int64_t m, int64_t n,
                          int64_t k, int chunks)
{
    return ag_gemm_us(t, dtype, ranks, m, n, k, chunks, ranks > t->ranks_per_node);
}

/* GEMM+ReduceScatter (+AllGather) over the node link or the network */
static double gemm_rs_us(const TkTopology *t, int dtype, int ranks, int64_t m, int64_t n,
                         int64_t k, int chunks, bool all_reduce, bool net)
{
    int nch = ranks * chunks;
    double G = gemm_core_us(t, dtype, 1, m, n, k);
    double tg = G / nch;
    double esz = dsl_dtype_bytes(dtype);
    double tc = (double)m / nch * (double)n * esz / net_bw(t, net) * 1e6 +
                (net ? t->net_lat_us : t->link_lat_us) / chunks;
    double g = t->launch_us, comm = 0;
    for (int i = 0; i < nch; i++) {
        bool busy = comm > g;
        g += tg * (busy || i > 0 ? 1 + t->overlap_slowdown : 1) + t->chunk_us;
        if (i < nch - chunks) /* peers' chunks first, own last */
            comm = (comm > g ? comm : g) + tc;
    }
    double end = g > comm ? g : comm;
    /* reduce the R slots of [m/R, n]: read R, write 1 */
    end += (double)(ranks + 1) * ((double)m / ranks) * (double)n * esz / (t->hbm_gbs * 1e9) * 1e6 +
           t->launch_us;
    if (all_reduce)
        end += coll_us(t, CM_ALL_GATHER, ranks, (double)m * (double)n * esz, net);
    return end;
}

double tk_cost_gemm_rs_us(const TkTopology *t, int dtype, int ranks, int64_t m, int64_t n,
                          int64_t k, int chunks, bool all_reduce)
{
    return gemm_rs_us(t, dtype, ranks, m, n, k, chunks, all_reduce, ranks > t->ranks_per_node);
}

/* ------------------------------------------------------------ placement */

static int consumer(const TkTask *t, int id)
{
    for (int i = id + 1; i < t->nn; i++)
        if (t->n[i].a == id || t->n[i].b == id || t->n[i].c == id)
            return i;
    return -1;
}

static double node_bytes(const TkNode *n)
{
    return (double)tk_numel(n) * dsl_dtype_bytes(n->dtype);
}

double tk_node_cost_us(const TkTask *t, const TkTopology *topo, int id)
{
    const TkNode *n = &t->n[id];
    int R = t->nranks > 0 ? t->nranks : 1;
    for (int i = 0; i < t->nn; i++) /* a GEMM paired with a collective is costed there */
        if (t->n[i].op == TK_COMM && t->n[i].gemm == id)
            return 0;
    switch (n->op) {
    case TK_PARAM: case TK_SCALAR: case TK_CONST:
        return 0;
    case TK_MATMUL: {
        const TkNode *A = &t->n[n->a], *B = &t->n[n->b];
        int64_t batch = n->rank == 3 ? tk_local_dim(t, n, 0) : 1;
        int64_t m = tk_local_dim(t, n, n->rank - 2), nn = tk_local_dim(t, n, n->rank - 1);
        int64_t k = tk_local_dim(t, A, A->rank - 1);
        (void)B;
        return tk_cost_gemm_us(topo, n->dtype, batch, m, nn, k);
    }
    case TK_MOE:
        return tk_moe_cost_us(t, topo, id, NULL);
    case TK_COMM:
        if (n->nalts > 0)
            for (int i = 0; i < n->nalts; i++)
                if (n->alts[i].kind == n->place && (n->place == PL_PLAIN || n->alts[i].chunks == n->chunks))
                    return n->alts[i].us;
        if (t->naxes)
            return mesh_coll_us(t, topo, n);
        return tk_cost_coll_us(topo, n->comm, R, node_bytes(n) / (n->comm == CM_ALL_TO_ALL ? R : 1));
    default: {
        if (t->naxes) /* local bytes, read and written */
            return 2 * local_numel(t, n) * dsl_dtype_bytes(n->dtype) / (topo->hbm_gbs * 1e9) *
                       1e6 + topo->launch_us;
        /* memory-bound: read the inputs' and write the output's local bytes */
        double b = node_bytes(n) / (n->sh.kind == SH_SPLIT ? R : 1);
        return 2 * b / (topo->hbm_gbs * 1e9) * 1e6 + topo->launch_us;
    }
    }
}

int tk_place(TkTask *t, const TkTopology *topo, int force)
{
    int R1 = t->nranks > 0 ? t->nranks : 1;
    for (int i = 0; i < t->nn; i++) {
        TkNode *n = &t->n[i];
        if (n->op != TK_COMM)
            continue;
        n->place = PL_PLAIN;
        n->chunks = 1;
        n->gemm = -1;
        n->nalts = 0;
        /* on a mesh: the collective's axis, its size and link */
        int R = t->naxes ? t->axsize[n->cax] : R1;
        bool net = t->naxes ? tk_axis_crosses_nodes(t, topo, n->cax) : R > topo->ranks_per_node;
        double coll = t->naxes ? mesh_coll_us(t, topo, n)
                               : tk_cost_coll_us(topo, n->comm, R, node_bytes(n) /
                                                 (n->comm == CM_ALL_TO_ALL ? R : 1));
        int kind = PL_PLAIN, g = -1;
        int64_t m = 0, nn = 0, k = 0;
        const TkNode *X = &t->n[n->a];
        TkShard xs = t->naxes ? X->msh[n->cax] : X->sh, ns = t->naxes ? n->msh[n->cax] : n->sh;
        if (R > 1 && n->comm == CM_ALL_GATHER && X->rank == 2 && xs.dim == 0 &&
            X->uses == 1 && n->uses == 1) {
            int c = consumer(t, i);
            const TkNode *C = c >= 0 ? &t->n[c] : NULL;
            if (C && C->op == TK_MATMUL && C->a == i && C->rank == 2 && t->n[C->b].rank == 2 &&
                C->b != i) {
                kind = PL_AG_GEMM;
                g = c;
                m = tk_local_dim(t, n, 0);
                k = tk_local_dim(t, n, 1);
                nn = tk_local_dim(t, C, 1);
            }
        }
        if (R > 1 && (n->comm == CM_REDUCE_SCATTER || n->comm == CM_ALL_REDUCE) &&
            X->op == TK_MATMUL && X->rank == 2 && X->uses == 1 &&
            (n->comm == CM_ALL_REDUCE || ns.dim == 0)) {
            const TkNode *A = &t->n[X->a];
            if (A->rank == 2 && t->n[X->b].rank == 2) {
                kind = n->comm == CM_ALL_REDUCE ? PL_GEMM_AR : PL_GEMM_RS;
                g = n->a;
                m = tk_local_dim(t, X, 0);
                nn = tk_local_dim(t, X, 1);
                k = tk_local_dim(t, A, 1);
            }
        }
        if (kind == PL_PLAIN || m <= 0 || nn <= 0 || k <= 0) {
            n->alts[n->nalts++] = (TkAlt){PL_PLAIN, 1, coll};
            continue;
        }
        n->gemm = g;
        double gemm = tk_cost_gemm_us(topo, n->dtype, 1, kind == PL_AG_GEMM ? m : m, nn, k);
        n->alts[n->nalts++] = (TkAlt){PL_PLAIN, 1, gemm + coll};
        static const int cands[] = {1, 2, 4};
        for (int ci = 0; ci < 3; ci++) {
            int c = cands[ci];
            if (m % ((int64_t)R * c))
                continue;
            double us = kind == PL_AG_GEMM
                            ? ag_gemm_us(topo, n->dtype, R, m, nn, k, c, net)
                            : gemm_rs_us(topo, n->dtype, R, m, nn, k, c, kind == PL_GEMM_AR,
                                         net);
            n->alts[n->nalts++] = (TkAlt){kind, c, us};
        }
        int best = 0;
        for (int a = 1; a < n->nalts; a++) {
            bool better = n->alts[a].us < n->alts[best].us;
            if (force > 0)
                better = best == 0 || (n->alts[a].us < n->alts[best].us);
            if (better && force >= 0)
                best = a;
        }
        n->place = n->alts[best].kind;
        n->chunks = n->alts[best].chunks;
    }
    return 0;
}

int tk_force_from_env(void)
{
    const char *e = getenv("BLKC_TASK_OVERLAP");
    if (!e)
        return 0;
    if (strcmp(e, "always") == 0)
        return 1;
    if (strcmp(e, "never") == 0)
        return -1;
    return 0;
}
