/* gpu_ops.c — the tile ops of the GPU emitter that need more than one loop:
 * reductions (warp shuffles + shared memory), scans, dot (its dispatch:
 * tensor-core dots to gpu_mmadot.c's registers, an FMA loop for the rest) and
 * atomics (native atomics where the type allows, else a CAS loop).
 * Shared by the CUDA and HIP backends through BkGpuEm (gpu_emit.h). */
#include "gpu_emit.h"

#include <stdio.h>
#include <string.h>

/* accumulation C type: compute type, bool widened to int for shuffles */
static const char *acc_type(int dt)
{
    return dt == DT_BOOL ? "int" : bk_gpu_ctype(dt);
}

static void sync(BkGpuEm *em)
{
    bk_gpu_bar(em);
}

static void decl_result(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    const char *t = bk_gpu_stype(in->type.dtype);
    char ty[128];
    ir_type_str(&in->type, ty, sizeof ty);
    if (in->type.rank == 0)
        bk_gpu_line(em, "%s v%d; /* %s */", t, id, ty);
    else
        bk_gpu_line(em, "%s *v%d = (%s *)(blk_smem + %lld); /* %s */", t, id, t,
                    em->off[id], ty);
}

/* ------------------------------------------------------------ reduce */

typedef struct Red {
    int kind;            /* IrRedKind */
    bool arg;            /* ARGMAX / ARGMIN */
    const char *t;       /* accumulator C type */
    char ident[96];      /* identity literal */
} Red;

static void red_init(Red *r, int kind, int sdt, int rdt)
{
    r->kind = kind;
    r->arg = kind == RED_ARGMAX || kind == RED_ARGMIN;
    int vdt = r->arg ? sdt : rdt;
    r->t = acc_type(vdt);
    if (kind == RED_SUM)
        snprintf(r->ident, sizeof r->ident, "0");
    else if (kind == RED_MAX || kind == RED_ARGMAX)
        bk_gpu_min_lit(r->ident, sizeof r->ident, vdt);
    else
        bk_gpu_max_lit(r->ident, sizeof r->ident, vdt);
}

/* acc (and acci) = combine(acc, x (and xi)) */
static void red_step(BkGpuEm *em, const Red *r, const char *x, const char *xi)
{
    switch (r->kind) {
    case RED_SUM: bk_gpu_line(em, "acc = acc + %s;", x); break;
    case RED_MAX: bk_gpu_line(em, "acc = blk_max(acc, %s);", x); break;
    case RED_MIN: bk_gpu_line(em, "acc = blk_min(acc, %s);", x); break;
    default:
        bk_gpu_line(em, "if (blk_%s_take(%s, %s, acc, acci)) { acc = %s; acci = %s; }",
                    r->kind == RED_ARGMAX ? "argmax" : "argmin", x, xi, x, xi);
        break;
    }
}

/* Combine the accumulators across the lanes of each warp (xor butterfly:
 * every lane ends with the warp's result). */
static void red_warp(BkGpuEm *em, const Red *r)
{
    bk_gpu_line(em, "for (int m = %d; m > 0; m >>= 1) {", em->dl->warp / 2);
    em->indent++;
    bk_gpu_line(em, "const %s y = BLK_SHFL_XOR(acc, m);", r->t);
    if (r->arg)
        bk_gpu_line(em, "const int yi = BLK_SHFL_XOR(acci, m);");
    red_step(em, r, "y", "yi");
    em->indent--;
    bk_gpu_line(em, "}");
}

static void red_open(BkGpuEm *em, const Red *r)
{
    bk_gpu_line(em, "%s acc = %s;", r->t, r->ident);
    if (r->arg)
        bk_gpu_line(em, "int acci = 2147483647;");
}

void bk_gpu_slice_to_shared(BkGpuEm *em, int id)
{
    const IrType *p = &em->f->ins[em->spar[id]].type;
    int R = 1, K = bk_gpu_blk_regs(em, p) / bk_gpu_blk_w(em, p);
    bk_gpu_slice_geom(em, p, &R);
    bk_gpu_line(em, "/* layout conversion: slice -> shared (v%d_s), the first thread of each row */", id);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_k = 0; blk_k < %d; blk_k++) {", K);
    bk_gpu_line(em, "    const int blk_q = blk_tid + blk_k * %d;", em->nt);
    char rg[32];
    bk_gpu_slice_reg(em, id, rg, sizeof rg);
    bk_gpu_line(em, "    if (blk_q %% %d == 0 && blk_q / %d < %lld) BLK_SST(v%d_s[blk_q / %d]) = %s[blk_k];",
                R, R, (long long)ir_numel(&em->f->ins[id].type), id, R, rg);
    bk_gpu_line(em, "}");
    bk_gpu_note_write(em, id);
}

/* Reduction along the last axis into a SLICE value: each thread folds the
 * runs of its parent registers (one row per run), then the c = R / NT
 * registers of a row it holds, then the G = min(R, NT) threads of a row
 * with a butterfly over the lanes (G <= warp) and, when a row spans
 * warps, the per-warp results through shared memory, combined in the same
 * order by every warp of the row. Every thread ends with its rows. */
static void reduce_slice(BkGpuEm *em, int id, const Red *r)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrType *p = &f->ins[in->opnd[0]].type;
    int R = 1, K = bk_gpu_blk_regs(em, p) / bk_gpu_blk_w(em, p), w = em->dl->warp;
    bk_gpu_slice_geom(em, p, &R);
    int c = R > em->nt ? R / em->nt : 1, G = R < em->nt ? R : em->nt;
    char x[BK_GPU_EXPR], s[400];
    bk_gpu_line(em, "{ /* reduce along the last axis into a slice: %d threads a row */", G);
    em->indent++;
    bk_gpu_line(em, "%s blk_p[%d];", r->t, K);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_k = 0; blk_k < %d; blk_k++) blk_p[blk_k] = %s;", K, r->ident);
    bk_gpu_blk_open(em, p, false);
    bk_gpu_read(em, in->opnd[0], "e", x, sizeof x);
    bk_gpu_line(em, "const %s x = %s;", r->t, x);
    bk_gpu_line(em, "%s acc = blk_p[blk_k];", r->t);
    red_step(em, r, "x", "e");
    bk_gpu_line(em, "blk_p[blk_k] = acc;");
    for (; em->blk > 0; em->blk--) {
        em->indent--;
        bk_gpu_line(em, "}");
    }
    em->blk_t = NULL;
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_k = 0; blk_k < %d; blk_k += %d) {", K, c);
    em->indent++;
    bk_gpu_line(em, "%s acc = blk_p[blk_k];", r->t);
    if (c > 1) {
        bk_gpu_line(em, "for (int blk_i = 1; blk_i < %d; blk_i++) {", c);
        em->indent++;
        bk_gpu_line(em, "const %s x = blk_p[blk_k + blk_i];", r->t);
        red_step(em, r, "x", "0");
        em->indent--;
        bk_gpu_line(em, "}");
    }
    int gl = G < w ? G : w;
    if (gl > 1) {
        bk_gpu_line(em, "for (int m = %d; m > 0; m >>= 1) {", gl / 2);
        em->indent++;
        bk_gpu_line(em, "const %s y = BLK_SHFL_XOR(acc, m);", r->t);
        red_step(em, r, "y", "0");
        em->indent--;
        bk_gpu_line(em, "}");
    }
    bk_gpu_line(em, "blk_p[blk_k] = acc;");
    em->indent--;
    bk_gpu_line(em, "}");
    if (G > w) { /* a row spans gw warps */
        int gw = G / w, nk = K / c;
        bk_gpu_line(em, "__shared__ %s blk_red%d[%d][%d];", r->t, id, nk, em->nw);
        bk_gpu_line(em, "if (blk_lane == 0)");
        bk_gpu_line(em, "    for (int blk_k = 0; blk_k < %d; blk_k++) BLK_SST(blk_red%d[blk_k][blk_warp]) = blk_p[blk_k * %d];",
                    nk, id, c);
        bk_gpu_sync(em);
        bk_gpu_line(em, "for (int blk_k = 0; blk_k < %d; blk_k++) {", nk);
        em->indent++;
        bk_gpu_line(em, "const int w0 = blk_warp / %d * %d;", gw, gw);
        bk_gpu_line(em, "%s acc = BLK_SLD(blk_red%d[blk_k][w0]);", r->t, id);
        bk_gpu_line(em, "for (int blk_i = 1; blk_i < %d; blk_i++) {", gw);
        em->indent++;
        char y[96];
        snprintf(y, sizeof y, "BLK_SLD(blk_red%d[blk_k][w0 + blk_i])", id);
        red_step(em, r, y, "0");
        em->indent--;
        bk_gpu_line(em, "}");
        bk_gpu_line(em, "blk_p[blk_k * %d] = acc;", c);
        em->indent--;
        bk_gpu_line(em, "}");
        /* blk_red is this reduction's own (a loop back edge pays the owed
         * barrier before it is written again) */
        em->pending = true;
    }
    bk_gpu_to_s(s, sizeof s, in->type.dtype, "blk_p[blk_k / C_ * C_]");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_k = 0; blk_k < %d; blk_k++) { const int C_ = %d; v%d[blk_k] = %s; }",
                K, c, id, s);
    em->indent--;
    bk_gpu_line(em, "}");
    if (em->scvt[id])
        bk_gpu_slice_to_shared(em, id);
}

void bk_gpu_emit_reduce(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrInstr *a = &f->ins[in->opnd[0]];
    int sdt = a->type.dtype, rdt = in->type.dtype;
    Red r;
    char x[BK_GPU_EXPR], s[400];
    red_init(&r, in->attr, sdt, rdt);
    const char *res = r.arg ? "acci" : "acc";
    if (em->rred && em->rred[id]) { /* from a register value's registers */
        bk_gpu_mma_reduce(em, id);
        return;
    }
    if (em->lay[id] == BK_LAY_SLICE) {
        bk_gpu_decl_tile(em, id);
        reduce_slice(em, id, &r);
        return;
    }
    decl_result(em, id);
    if (a->type.rank == 0) { /* reduce of a scalar */
        bk_gpu_read(em, in->opnd[0], "0", x, sizeof x);
        bk_gpu_to_s(s, sizeof s, rdt, r.arg ? "0" : x);
        bk_gpu_line(em, "v%d = %s;", id, s);
        return;
    }
    bk_gpu_line(em, "{");
    em->indent++;
    if (in->type.rank == 0) {
        /* whole tile -> scalar: strided partials, warp butterfly, then the
         * per-warp results through shared memory; every thread combines them
         * in the same order, so all hold the same value */
        red_open(em, &r);
        if (em->inblk[id]) { /* this thread's registers first */
            bk_gpu_blk_open(em, &a->type, false);
        } else {
            bk_gpu_line(em, "for (int e = blk_tid; e < %lld; e += %d) {",
                        (long long)ir_numel(&a->type), em->nt);
            em->indent++;
        }
        bk_gpu_read(em, in->opnd[0], "e", x, sizeof x);
        bk_gpu_line(em, "const %s x = %s;", r.t, x);
        red_step(em, &r, "x", "e");
        for (; em->blk > 1; em->blk--) {
            em->indent--;
            bk_gpu_line(em, "}");
        }
        em->blk = 0;
        em->blk_t = NULL;
        em->indent--;
        bk_gpu_line(em, "}");
        red_warp(em, &r);
        bk_gpu_line(em, "__shared__ %s blk_red%d[%d];", r.t, id, em->nw);
        if (r.arg)
            bk_gpu_line(em, "__shared__ int blk_redi%d[%d];", id, em->nw);
        bk_gpu_line(em, "if (blk_lane == 0) {");
        bk_gpu_line(em, "    BLK_SST(blk_red%d[blk_warp]) = acc;", id);
        if (r.arg)
            bk_gpu_line(em, "    BLK_SST(blk_redi%d[blk_warp]) = acci;", id);
        bk_gpu_line(em, "}");
        bk_gpu_sync(em);
        bk_gpu_line(em, "acc = BLK_SLD(blk_red%d[0]);", id);
        if (r.arg)
            bk_gpu_line(em, "acci = BLK_SLD(blk_redi%d[0]);", id);
        bk_gpu_line(em, "for (int w = 1; w < %d; w++) {", em->nw);
        em->indent++;
        char y[64], yi[64];
        snprintf(y, sizeof y, "BLK_SLD(blk_red%d[w])", id);
        snprintf(yi, sizeof yi, "BLK_SLD(blk_redi%d[w])", id);
        red_step(em, &r, y, yi);
        em->indent--;
        bk_gpu_line(em, "}");
        bk_gpu_to_s(s, sizeof s, rdt, res);
        bk_gpu_line(em, "v%d = %s;", id, s);
        em->indent--;
        bk_gpu_line(em, "}");
        /* blk_red is this reduction's own: only running it again (a loop
         * back edge, which pays owed barriers) may overwrite it */
        em->pending = true;
        return;
    }
    /* along one axis: operand viewed as [outer, n, inner] */
    long long outer = 1, inner = 1, n = a->type.shape[in->axis];
    for (int d = 0; d < in->axis; d++)
        outer *= a->type.shape[d];
    for (int d = in->axis + 1; d < a->type.rank; d++)
        inner *= a->type.shape[d];
    char idx[128];
    snprintf(idx, sizeof idx, "(o * %lld + k) * %lld + i", n, inner);
    bk_gpu_read(em, in->opnd[0], idx, x, sizeof x);
    bk_gpu_to_s(s, sizeof s, rdt, res);
    bool per_warp = n >= em->dl->warp / 2;
    if (per_warp) /* one warp per output, lanes stride over the axis */
        bk_gpu_line(em, "for (int r = blk_warp; r < %lld; r += %d) {",
                    outer * inner, em->nw);
    else /* one thread per output */
        bk_gpu_line(em, "for (int r = blk_tid; r < %lld; r += %d) {",
                    outer * inner, em->nt);
    em->indent++;
    bk_gpu_line(em, "const int o = r / %lld, i = r %% %lld;", inner, inner);
    red_open(em, &r);
    if (per_warp)
        bk_gpu_line(em, "for (int k = blk_lane; k < %lld; k += %d) {", n,
                    em->dl->warp);
    else
        bk_gpu_line(em, "for (int k = 0; k < %lld; k++) {", n);
    em->indent++;
    bk_gpu_line(em, "const %s x = %s;", r.t, x);
    red_step(em, &r, "x", "k");
    em->indent--;
    bk_gpu_line(em, "}");
    if (per_warp) {
        red_warp(em, &r);
        bk_gpu_line(em, "if (blk_lane == 0) BLK_SST(v%d[r]) = %s;", id, s);
    } else {
        bk_gpu_line(em, "BLK_SST(v%d[r]) = %s;", id, s);
    }
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
    sync(em);
}

/* ------------------------------------------------------------ scan */

void bk_gpu_emit_scan(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrInstr *a = &f->ins[in->opnd[0]];
    int rdt = in->type.dtype;
    const char *t = acc_type(rdt);
    int ax = in->axis < 0 ? 0 : in->axis;
    long long outer = 1, inner = 1, n = a->type.shape[ax];
    for (int d = 0; d < ax; d++)
        outer *= a->type.shape[d];
    for (int d = ax + 1; d < a->type.rank; d++)
        inner *= a->type.shape[d];
    char x[BK_GPU_EXPR], s[400], xk[BK_GPU_EXPR + 128];
    bk_gpu_read(em, in->opnd[0], "(o * NK + k) * NI + i", x, sizeof x);
    decl_result(em, id);
    bk_gpu_line(em, "{");
    em->indent++;
    bk_gpu_line(em, "const int NK = %lld, NI = %lld;", n, inner);
    int w = em->dl->warp;
    if (n >= w) {
        /* one warp per line, W elements at a time: warp inclusive scan with
         * shuffles plus the carry of the previous chunks */
        bk_gpu_line(em, "for (int r = blk_warp; r < %lld; r += %d) {", outer * inner,
                    em->nw);
        em->indent++;
        bk_gpu_line(em, "const int o = r / NI, i = r %% NI;");
        bk_gpu_line(em, "%s carry = 0;", t);
        bk_gpu_line(em, "for (int k0 = 0; k0 < NK; k0 += %d) {", w);
        em->indent++;
        bk_gpu_line(em, "const int k = k0 + blk_lane;");
        snprintf(xk, sizeof xk, "k < NK ? (%s)%s : (%s)0", t, x, t);
        bk_gpu_line(em, "%s x = %s;", t, xk);
        bk_gpu_line(em, "for (int d = 1; d < %d; d <<= 1) {", w);
        bk_gpu_line(em, "    const %s y = BLK_SHFL_UP(x, d);", t);
        bk_gpu_line(em, "    if (blk_lane >= d) x = x + y;");
        bk_gpu_line(em, "}");
        bk_gpu_line(em, "x = x + carry;");
        bk_gpu_to_s(s, sizeof s, rdt, "x");
        bk_gpu_line(em, "if (k < NK) BLK_SST(v%d[(o * NK + k) * NI + i]) = %s;", id, s);
        bk_gpu_line(em, "carry = BLK_SHFL(x, %d);", w - 1);
        em->indent--;
        bk_gpu_line(em, "}");
        em->indent--;
        bk_gpu_line(em, "}");
    } else {
        bk_gpu_line(em, "for (int r = blk_tid; r < %lld; r += %d) {", outer * inner,
                    em->nt);
        em->indent++;
        bk_gpu_line(em, "const int o = r / NI, i = r %% NI;");
        bk_gpu_line(em, "%s acc = 0;", t);
        bk_gpu_line(em, "for (int k = 0; k < NK; k++) {");
        em->indent++;
        bk_gpu_line(em, "acc = acc + (%s)%s;", t, x);
        bk_gpu_to_s(s, sizeof s, rdt, "acc");
        bk_gpu_line(em, "BLK_SST(v%d[(o * NK + k) * NI + i]) = %s;", id, s);
        em->indent--;
        bk_gpu_line(em, "}");
        em->indent--;
        bk_gpu_line(em, "}");
    }
    em->indent--;
    bk_gpu_line(em, "}");
    sync(em);
}

/* ------------------------------------------------------------ dot */

typedef struct Dot {
    int id, a, b, acc;          /* value ids (acc -1 if absent) */
    long long B, M, N, K;       /* batch (1 if unbatched) and matrix sizes */
    bool abatch, bbatch;        /* operand has the batch dim */
    int adt, rdt;               /* operand and result dtypes */
} Dot;

/* FMA fallback: one thread per output element. */
static void dot_fma(BkGpuEm *em, const Dot *d)
{
    const char *t = bk_gpu_ctype(d->rdt);
    char x[BK_GPU_EXPR], y[BK_GPU_EXPR], s[300], ai[128], bi[128];
    bk_gpu_line(em, "for (int e = blk_tid; e < %lld; e += %d) {", d->B * d->M * d->N,
                em->nt);
    em->indent++;
    bk_gpu_line(em, "const int bb = e / %lld, m = (e / %lld) %% %lld, n = e %% %lld;",
                d->M * d->N, d->N, d->M, d->N);
    if (d->acc >= 0) {
        bk_gpu_read(em, d->acc, "e", x, sizeof x);
        bk_gpu_line(em, "%s acc = %s;", t, x);
    } else {
        bk_gpu_line(em, "%s acc = 0;", t);
    }
    snprintf(ai, sizeof ai, "(%sm) * %lld + k", d->abatch ? "bb * M_ + " : "", d->K);
    snprintf(bi, sizeof bi, "(%sk) * %lld + n", d->bbatch ? "bb * K_ + " : "", d->N);
    bk_gpu_line(em, "const int M_ = %lld, K_ = %lld; (void)M_; (void)K_; (void)bb;",
                d->M, d->K);
    bk_gpu_read(em, d->a, ai, x, sizeof x);
    bk_gpu_read(em, d->b, bi, y, sizeof y);
    bk_gpu_line(em, "for (int k = 0; k < %lld; k++)", d->K);
    bk_gpu_line(em, "    acc = acc + (%s)%s * (%s)%s;", t, x, t, y);
    bk_gpu_to_s(s, sizeof s, d->rdt, "acc");
    bk_gpu_line(em, "BLK_SST(v%d[e]) = %s;", d->id, s);
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_emit_dot(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrType *at = &f->ins[in->opnd[0]].type, *bt = &f->ins[in->opnd[1]].type;
    Dot d;
    memset(&d, 0, sizeof d);
    d.id = id;
    d.a = in->opnd[0];
    d.b = in->opnd[1];
    d.acc = in->opnd[2];
    d.rdt = in->type.dtype;
    d.adt = at->dtype;
    int r = in->type.rank;
    d.M = in->type.shape[r - 2];
    d.N = in->type.shape[r - 1];
    d.K = at->shape[at->rank - 1];
    d.B = r == 3 ? in->type.shape[0] : 1;
    d.abatch = at->rank == 3;
    d.bbatch = bt->rank == 3;
    if (em->vmma[BK_GPU_DOT_VAR(em, id)].on) { /* registers (and its tile if read there) */
        if (em->lay[id] == BK_LAY_SHARED)
            decl_result(em, id);
        bk_gpu_mma_dot_value(em, id);
        if (em->lay[id] == BK_LAY_REG && em->seg_ok && !em->nosyncelim)
            em->pending = true; /* registers only: gpu_sync.c saw its reads */
        else
            sync(em);
        return;
    }
    /* every tensor-core dtype and shape is on the register path
     * (bk_gpu_dot_regs, also under BLKC_GPU_SMEM=1); the rest (f64, f16 or
     * bf16 results, mixed dtypes, shapes off the fragment steps) is one
     * FMA loop per output element */
    decl_result(em, id);
    dot_fma(em, &d);
    sync(em);
}

/* ------------------------------------------------------------ atomics */

/* native atomic available for this kind and dtype? returns the call */
static bool atom_native(int kind, int dt, char *buf, size_t n, const char *p,
                        const char *v, const char *cmp)
{
    const char *ut = NULL; /* pointer type for the native call */
    switch (kind) {
    case ATOM_ADD:
        if (dt == DT_I32 || dt == DT_U32 || dt == DT_U64 || dt == DT_F32 ||
            dt == DT_F64)
            ut = bk_gpu_stype(dt);
        else if (dt == DT_I64) {
            snprintf(buf, n, "(long long)atomicAdd((unsigned long long *)%s, (unsigned long long)%s)", p, v);
            return true;
        }
        if (ut) {
            snprintf(buf, n, "atomicAdd(%s, %s)", p, v);
            return true;
        }
        return false;
    case ATOM_MAX: case ATOM_MIN:
        if (dt == DT_I32 || dt == DT_U32 || dt == DT_U64) {
            snprintf(buf, n, "%s(%s, %s)", kind == ATOM_MAX ? "atomicMax" : "atomicMin",
                     p, v);
            return true;
        }
        return false;
    case ATOM_XCHG:
        if (dt == DT_I32 || dt == DT_U32 || dt == DT_U64 || dt == DT_F32) {
            snprintf(buf, n, "atomicExch(%s, %s)", p, v);
            return true;
        }
        return false;
    case ATOM_CAS:
        snprintf(buf, n, "blk_cas(%s, %s, %s)", p, cmp, v);
        return true;
    default: /* and/or/xor: the CAS loop */
        return false;
    }
}

void bk_gpu_emit_atomic(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrParam *p = &f->params[in->param];
    int dt = p->dtype;
    const char *st = bk_gpu_stype(dt);
    IrType vt;
    memset(&vt, 0, sizeof vt);
    ir_view_shape(f, &f->views[in->view], &vt);
    bool has_res = in->type.dtype != DT_VOID;
    bool tile = vt.rank > 0;
    char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], m[64] = "", val[64], cmp[64] = "", call[512];
    int mask = in->opnd[2];
    if (mask >= 0)
        snprintf(m, sizeof m, f->ins[mask].type.rank > 0 ? " && BLK_SLD(v%d[e])" : " && v%d",
                 mask);
    snprintf(val, sizeof val, f->ins[in->opnd[0]].type.rank > 0 ? "BLK_SLD(v%d[e])" : "v%d",
             in->opnd[0]);
    if (in->opnd[1] >= 0)
        snprintf(cmp, sizeof cmp, f->ins[in->opnd[1]].type.rank > 0 ? "BLK_SLD(v%d[e])" : "v%d",
                 in->opnd[1]);
    if (has_res)
        decl_result(em, id);
    if (tile) {
        bk_gpu_line(em, "for (int e = blk_tid; e < %lld; e += %d) {",
                    (long long)ir_numel(&vt), em->nt);
    } else {
        bk_gpu_line(em, "__shared__ unsigned long long blk_atom%d;", id);
        bk_gpu_line(em, "if (blk_tid == 0) {");
        bk_gpu_line(em, "    const int e = 0; (void)e;");
    }
    em->indent++;
    bk_gpu_view(em, id, ok, sizeof ok, addr, sizeof addr);
    bk_gpu_to_s(call, sizeof call, dt, "0");
    bk_gpu_line(em, "%s old = %s;", st, call);
    bk_gpu_line(em, "if (%s%s) {", ok, m);
    em->indent++;
    char base[BK_GPU_NAME + 16];
    bk_gpu_base(em, id, base, sizeof base);
    bk_gpu_line(em, "%s *ptr = &%s[%s];", st, base, addr);
    bk_gpu_line(em, in->opnd[3] >= 0 ? "__threadfence_system();" : "__threadfence();");
    if (atom_native(in->attr, dt, call, sizeof call, "ptr", val, cmp)) {
        bk_gpu_line(em, "old = %s;", call);
    } else {
        /* CAS loop in the compute type */
        char a[128], b[128], x[400], s[500];
        bk_gpu_to_c(a, sizeof a, dt, "cur");
        bk_gpu_to_c(b, sizeof b, dt, val);
        switch (in->attr) {
        case ATOM_ADD: snprintf(x, sizeof x, "%s + %s", a, b); break;
        case ATOM_MAX: snprintf(x, sizeof x, "blk_max(%s, %s)", a, b); break;
        case ATOM_MIN: snprintf(x, sizeof x, "blk_min(%s, %s)", a, b); break;
        case ATOM_AND: snprintf(x, sizeof x, "(%s & %s)", a, b); break;
        case ATOM_OR: snprintf(x, sizeof x, "(%s | %s)", a, b); break;
        case ATOM_XOR: snprintf(x, sizeof x, "(%s ^ %s)", a, b); break;
        default: snprintf(x, sizeof x, "%s", b); break;
        }
        bk_gpu_to_s(s, sizeof s, dt, x);
        bk_gpu_line(em, "%s cur = blk_ld_volatile(ptr);", st);
        bk_gpu_line(em, "while (true) {");
        bk_gpu_line(em, "    const %s prev = blk_cas(ptr, cur, %s);", st, s);
        bk_gpu_line(em, "    if (blk_same_bits(prev, cur)) break;");
        bk_gpu_line(em, "    cur = prev;");
        bk_gpu_line(em, "}");
        bk_gpu_line(em, "old = cur;");
    }
    bk_gpu_line(em, in->opnd[3] >= 0 ? "__threadfence_system();" : "__threadfence();");
    em->indent--;
    bk_gpu_line(em, "}");
    if (has_res && tile)
        bk_gpu_line(em, "BLK_SST(v%d[e]) = old;", id);
    else if (has_res)
        bk_gpu_line(em, "BLK_MEMCPY(&BLK_SST(blk_atom%d), &old, sizeof old);", id);
    else
        bk_gpu_line(em, "(void)old;");
    em->indent--;
    bk_gpu_line(em, "}");
    sync(em);
    if (has_res && !tile)
        bk_gpu_line(em, "BLK_MEMCPY(&v%d, &BLK_SLD(blk_atom%d), sizeof v%d);", id, id, id);
    if (has_res && !tile)
        sync(em);
}
