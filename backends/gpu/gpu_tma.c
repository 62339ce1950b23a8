/* gpu_tma.c — the operands of wgmma dots loaded by the tensor memory
 * accelerator (CUDA sm_90a): a `stages(S)` ring whose loads all feed
 * wgmma (gpu_wgmma.c) is filled by cp.async.bulk.tensor instead of
 * cp.async, each slot completed by an mbarrier, one thread issuing.
 *
 * Which rings (bk_gpu_tma_plan, after the wgmma plan): the first loop of
 * the kernel's body (not nested: its mbarriers are initialized once per
 * program) whose every ring load (gpu_mem.c bk_gpu_pipe_plan)
 *   - is a wgmma operand stored in a swizzled layout (em->wgs: 32, 64 or
 *     128-byte rows, the modes TMA writes: runtime/emu/blk_emu_tma.h),
 *   - reads a tensor of rank 2..5 (cuTensorMapEncodeTiled's limit)
 *     through two static ranges, the tile's rows on one dim and its
 *     columns on the last, every other dim indexed by a scalar (`A[m +:
 *     BM, k +: BK]`, attention's `K[z, n +: BN, :]` or `K[b, n +: BN, h,
 *     :]`), with launch facts that make a tensor map possible: 16-byte
 *     aligned data, unit inner stride, every other stride a multiple of
 *     16 elements (IR_ASSUME_ALIGN16, _UNIT_INNER, _STRIDE16(d) for each
 *     d < rank - 1: the driver wants each of them a multiple of 16 bytes,
 *     the scalar-indexed dims' too; other launches get the variant without
 *     TMA, which needs the same facts for its cp.async ring: gpu_mem.c
 *     bk_gpu_vec_width),
 *   - has boxes of at most 256 rows.
 * Out-of-bounds elements read zero (TMA's fill), as the slice does.
 * The tensor map has the tensor's rank, its dims reversed (innermost
 * first); a box is 1 element on every scalar-indexed dim, so it lands as
 * the same dense rows x columns as a rank-2 one, and its coordinates
 * (innermost first) carry the scalar indices (blk_tma_load_3d .. _5d).
 *
 * Emission: the kernel takes one `const __grid_constant__ BlkTensorMap
 * blk_tm<id>` per TMA load after its other parameters; the runtime
 * encodes them (gpu_launch.c, from BkGpuKernelInfo.tma: the tensor, box,
 * swizzle) with cuTensorMapEncodeTiled (cuda-emu: blk_emu_tmap.h) the
 * first time a launch signature needs them, and takes them from the
 * module's cache after that. A tile of C columns is C / P boxes of P = span / 2
 * columns (the panels of blk_wgs; P = span for fp8) by R rows — or, for an a tile whose
 * atoms are permuted by warpgroup m-block (mt > 1), boxes of 16 rows,
 * each landing on its two atoms. The S mbarriers (8 bytes each, after the
 * tiles in shared memory) are initialized before the loop; thread 0
 * issues iteration i's boxes with arrive.expect_tx(the ring's bytes) on
 * mbarrier i % S, D = S - 1 iterations ahead as the cp.async ring does
 * (S - 2 when a wgmma group stays in flight across the loop's steps:
 * bk_gpu_pipe_dist, gpu_wgmma.c); the top of iteration i waits for phase
 * (i / S) % 2 of mbarrier i % S, then the barrier that frees slot (i + D)
 * % S, then issues iteration i + D. Iterations past the loop's end issue
 * nothing and are never waited for, so the loop ends with nothing in
 * flight. A warp-specialized ring (gpu_ws.c: the GEMMs', flash
 * attention's) is issued by the producer warpgroup instead, each slot
 * freed by an "empty" mbarrier, with no block barrier in the loop. */
#include "gpu_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows per box of ring load id: its whole rows, or 16 for an a tile
 * whose atoms are permuted (blk_wgs with mt > 1). */
static int box_rows(const BkGpuEm *em, int id)
{
    return em->wgl[id] - 1 > 1 ? 16 : (int)em->f->ins[id].type.shape[0];
}

/* The tensor dim of load id's rows, or -1: its view of a tensor of rank
 * 2..5 ranges statically over the tile's rows on one dim and over its
 * columns on the last (unit-stride) dim, and indexes every other dim by a
 * scalar (`K[z, n +: BN, :]`). */
static int rows_dim(const IrFunc *f, int id)
{
    const IrInstr *in = &f->ins[id];
    const IrParam *p = &f->params[in->param];
    const IrView *v = &f->views[in->view];
    int nr = 0, dr = -1;
    if (p->kind != PK_TENSOR || p->rank < 2 || p->rank > BK_GPU_TMA_RANK ||
        v->ndims != p->rank || in->type.rank != 2 || v->d[p->rank - 1].kind != IDX_RANGE)
        return -1;
    for (int d = 0; d < p->rank; d++) {
        if (v->d[d].kind == IDX_SCALAR)
            continue;
        if (v->d[d].kind != IDX_RANGE || nr == 2 || v->d[d].len != in->type.shape[nr])
            return -1;
        if (nr++ == 0)
            dr = d;
    }
    return nr == 2 ? dr : -1;
}

bool bk_gpu_tma_ok(const BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    if (!em->wgl[id] || !em->wgs[id] || in->view < 0 || rows_dim(f, id) < 0 ||
        box_rows(em, id) > 256)
        return false;
    /* the driver's rules: base 16-byte aligned, every stride but the
     * innermost (1) a multiple of 16 bytes, the scalar-indexed dims' too */
    const IrParam *p = &f->params[in->param];
    uint32_t need = IR_ASSUME_ALIGN16 | IR_ASSUME_UNIT_INNER;
    for (int d = 0; d < p->rank - 1; d++)
        need |= IR_ASSUME_STRIDE16(d);
    return (p->assume & need) == need;
}

/* A return or a failing assert inside loop fr ends the block while the
 * ring's TMA loads for later steps are in flight: their bytes would land
 * in the shared memory of a block that has exited (the PTX ISA leaves
 * that undefined; cuda-emu fails the launch). Such a loop keeps cp.async,
 * whose copies belong to the thread that leaves. */
static bool leaves_in_loop(const BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    for (int id = 0; id < f->nins; id++) {
        const IrInstr *in = &f->ins[id];
        if (!in->dead && (in->op == IR_RET || in->op == IR_ASSERT) &&
            em->pos[id] > em->pos[fr] && em->pos[id] <= em->end[fr])
            return true;
    }
    return false;
}

int bk_gpu_tma_plan(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    em->tma_fr = -1;
    em->tma = calloc((size_t)f->nins + 1, sizeof(bool));
    if (!em->tma) {
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    if (!em->sm90a || !em->wgmma || em->notma)
        return 0;
    const IrRegion *body = &f->regions[0];
    for (int j = 0; j < body->n && em->tma_fr < 0; j++) {
        /* a loop of the kernel's body, run once per program: its
         * mbarriers are initialized once (no mbarrier.inval needed) */
        int fr = body->ins[j];
        if (f->ins[fr].op != IR_FOR || em->pipe[fr] <= 0 || leaves_in_loop(em, fr))
            continue;
        int n = 0;
        bool all = true;
        for (int id = 0; id < f->nins && all; id++)
            if (f->ins[id].op == IR_LOAD && em->pipe[id] == fr) {
                all = bk_gpu_tma_ok(em, id);
                n++;
            }
        if (!all || n > BK_GPU_MAXTMA)
            continue;
        em->tma_fr = fr;
        for (int id = 0; id < f->nins; id++)
            em->tma[id] = f->ins[id].op == IR_LOAD && em->pipe[id] == fr;
    }
    bk_gpu_ws_plan(em); /* a producer warpgroup for this ring (gpu_ws.c) */
    return 0;
}

void bk_gpu_tma_info(const BkGpuEm *em, BkGpuKernelInfo *info)
{
    const IrFunc *f = em->f;
    info->ntma = 0;
    for (int id = 0; id < f->nins && em->tma; id++) {
        if (!em->tma[id] && id != em->tmaq)
            continue;
        BkGpuTma *t = &info->tma[info->ntma++];
        const int r = f->params[f->ins[id].param].rank, dr = rows_dim(f, id);
        t->param = f->ins[id].param;
        t->rank = r;
        for (int i = 0; i < BK_GPU_TMA_RANK; i++) /* map dim i: tensor dim r - 1 - i */
            t->box[i] = i == 0 ? em->wgs[id] / dsl_dtype_bytes(f->ins[id].type.dtype) /* S bytes */
                      : i == r - 1 - dr ? box_rows(em, id) : 1;
        t->span = em->wgs[id];
    }
    if (em->tstore >= 0) { /* the epilogue's store (gpu_persist.c): panels of 128 bytes */
        const IrInstr *in = &f->ins[em->tstore];
        BkGpuTma *t = &info->tma[info->ntma++];
        memset(t, 0, sizeof *t);
        t->param = in->param;
        t->rank = 2;
        t->box[0] = 128 / dsl_dtype_bytes(f->params[in->param].dtype);
        t->box[1] = (int)em->vmma[em->mvar[in->opnd[0]]].M;
        t->span = 128;
    }
}

void bk_gpu_tma_params(BkGpuEm *em)
{
    for (int id = 0; id < em->f->nins && em->tma; id++)
        if (em->tma[id] || id == em->tmaq)
            dsl_buf_printf(em->o, ",\n    const __grid_constant__ BlkTensorMap blk_tm%d "
                                  "/* the tensor map of v%d (TMA) */", id, id);
    if (em->tstore >= 0)
        dsl_buf_printf(em->o, ",\n    const __grid_constant__ BlkTensorMap blk_tm%d "
                              "/* the tensor map of store %d (TMA) */", em->tstore, em->tstore);
}

/* The bytes one iteration's boxes bring. */
static long long ring_bytes(const BkGpuEm *em)
{
    long long b = 0;
    for (int id = 0; id < em->f->nins; id++)
        if (em->tma[id])
            b += bk_gpu_pipe_slot(em, id);
    return b;
}

/* Thread 0's boxes of FOR fr's iteration with induction variable `iv`
 * into slot `slot` (C text), completing mbarrier blk_tb<fr>[slot]. */
static void issue_one(BkGpuEm *em, int id, int fr, const char *slot, const char *iv,
                      const char *bar);

void bk_gpu_tma_issue(BkGpuEm *em, int fr, const char *slot, const char *iv)
{
    const IrFunc *f = em->f;
    char bar[96];
    bk_gpu_line(em, "blk_mbar_arrive_expect_tx(&blk_tb%d[%s], %lldu);", fr, slot,
                ring_bytes(em));
    snprintf(bar, sizeof bar, "&blk_tb%d[%s]", fr, slot);
    for (int id = 0; id < f->nins; id++)
        if (em->tma[id])
            issue_one(em, id, fr, slot, iv, bar);
}

/* em->tmaq's boxes (persistent flash attention's q: gpu_persist.c), once
 * per tile by the producer, completing blk_tq[0] */
void bk_gpu_tma_issue_q(BkGpuEm *em)
{
    const IrInstr *in = &em->f->ins[em->tmaq];
    bk_gpu_line(em, "blk_mbar_arrive_expect_tx(&blk_tq[0], %lldu);",
                (long long)ir_numel(&in->type) * dsl_dtype_bytes(in->type.dtype));
    issue_one(em, em->tmaq, em->tma_fr, "0", "blk_fiv", "&blk_tq[0]");
}

/* Load id's boxes into slot `slot` of its tile (C text), completing
 * mbarrier `bar`. */
static void issue_one(BkGpuEm *em, int id, int fr, const char *slot, const char *iv,
                      const char *bar)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrView *v = &f->views[in->view];
    const int S = em->wgs[id], P = S / dsl_dtype_bytes(in->type.dtype), R = (int)in->type.shape[0];
    const int C = (int)in->type.shape[1], mt = em->wgl[id] - 1, rb = box_rows(em, id);
    const int r = f->params[in->param].rank, dr = rows_dim(f, id);
    char r0[BK_GPU_SVAL], c0[BK_GPU_SVAL], x[BK_GPU_SVAL];
    bk_gpu_sval(em, v->d[dr].val, fr, iv, r0, sizeof r0);
    bk_gpu_sval(em, v->d[r - 1].val, fr, iv, c0, sizeof c0);
    bk_gpu_line(em, "{ /* v%d: %s[%d x %d] by TMA, boxes of %d x %d, the %dB swizzle */", id,
                f->params[in->param].name, R, C, rb, P, S);
    em->indent++;
    bk_gpu_line(em, "unsigned char *const blk_ring = blk_smem + %lld + (long long)(%s) * %lld;",
                em->off[id], slot, bk_gpu_pipe_slot(em, id));
    bk_gpu_line(em, "const int blk_r0 = (int)%s, blk_c0 = (int)%s;", r0, c0);
    /* the scalar-indexed dims' coordinates (boxes of 1 there), the
     * outer ones last, as the map's dims go */
    char xin[64] = "", xout[64] = ""; /* those between the rows' and the columns', the outer */
    for (int d = r - 2; d >= 0; d--)
        if (d != dr) {
            char *xs = d > dr ? xin : xout;
            bk_gpu_sval(em, v->d[d].val, fr, iv, x, sizeof x);
            bk_gpu_line(em, "const int blk_x%d = (int)%s; /* %s dim %d */", d, x,
                        f->params[in->param].name, d);
            snprintf(xs + strlen(xs), 64 - strlen(xs), ", blk_x%d", d);
        }
    for (int p = 0; p < C / P; p++)
        for (int g = 0; g < R / rb; g++) {
            /* the box's first atom: rows 16 g.. sit at atom s(2 g) of
             * blk_wgs's permutation (identity for one box of R rows) */
            long long atom = 0;
            if (rb < R) {
                int tr = 2 * g, w = tr / (2 * mt), j = tr % (2 * mt);
                atom = ((w >> 2) * mt + (j >> 1)) * 8 + (w & 3) * 2 + (j & 1);
            }
            if (r == 2)
                bk_gpu_line(em, "blk_tma_load_2d(blk_ring + %lld, &blk_tm%d, blk_c0 + %d, "
                            "blk_r0 + %d, %s);", (long long)p * R * S + atom * 8 * S,
                            id, p * P, g * rb, bar);
            else /* coordinates innermost first: the rows' among the scalars */
                bk_gpu_line(em, "blk_tma_load_%dd(blk_ring + %lld, &blk_tm%d, blk_c0 + %d%s, "
                            "blk_r0 + %d%s, %s);", r,
                            (long long)p * R * S + atom * 8 * S, id, p * P, xin, g * rb,
                            xout, bar);
        }
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_tma_init(BkGpuEm *em, int fr)
{
    const int S = em->stages, D = bk_gpu_pipe_dist(em, fr);
    if (em->ws_top)
        bk_gpu_line(em, "// stages(%d): %d TMA ring load(s), issued up to %d iteration(s) ahead by "
                    "the producer warpgroup, slot i completed by mbarrier full[i] (%lld bytes per "
                    "iteration), released by empty[i] at the end of iteration i%s", S, em->pipe[fr],
                    D, ring_bytes(em), em->ws_lag ? " + 1 (a wgmma group in flight reads it)" : "");
    else if (em->ws)
        bk_gpu_line(em, "// stages(%d): %d TMA ring load(s), issued up to %d iteration(s) ahead by "
                    "the producer warpgroup, slot i completed by mbarrier full[i] (%lld bytes per "
                    "iteration), released by empty[i]", S, em->pipe[fr], S, ring_bytes(em));
    else
        bk_gpu_line(em, "// stages(%d): %d TMA ring load(s), issued %d iteration(s) ahead by thread 0, "
                    "slot i completed by mbarrier i (%lld bytes per iteration)%s", S, em->pipe[fr],
                    D, ring_bytes(em), D < S - 1 ? "; a slot stays with the wgmma group in flight" : "");
    bk_gpu_line(em, "int blk_it%d = 0; /* iteration number: ring slot blk_it %% %d */", fr, S);
    bk_gpu_line(em, "unsigned long long *const blk_tb%d = (unsigned long long *)(blk_smem + %lld);",
                fr, em->tma_bar);
    if (em->ws)
        bk_gpu_ws_bars(em, fr);
    if (em->tmaq >= 0)
        bk_gpu_line(em, "unsigned long long *const blk_tq = blk_tb%d + %d; /* q's full and empty "
                    "mbarriers (gpu_persist.c) */", fr, 2 * S);
    bk_gpu_line(em, "if (blk_tid == 0) {");
    em->indent++;
    if (em->tmaq >= 0) {
        bk_gpu_line(em, "blk_mbar_init(&blk_tq[0], 1);");
        bk_gpu_line(em, "blk_mbar_init(&blk_tq[1], %d); /* one arrival per consumer warpgroup */",
                    em->nt / 128);
    }
    bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++)", S);
    bk_gpu_line(em, "    blk_mbar_init(&blk_tb%d[blk_s], 1);", fr);
    if (em->ws) {
        bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++)", S);
        bk_gpu_line(em, "    blk_mbar_init(&blk_te%d[blk_s], %d); /* one arrival per consumer "
                    "warpgroup */", fr, em->nt / 128);
    }
    bk_gpu_line(em, "blk_fence_mbar_init();");
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_sync(em); /* initialized before any thread waits */
}

void bk_gpu_tma_prologue(BkGpuEm *em, int fr)
{
    const IrInstr *F = &em->f->ins[fr];
    const int S = em->stages, D = bk_gpu_pipe_dist(em, fr);
    const long long st = (long long)em->f->ins[F->opnd[2]].ival;
    char ahead[64];
    if (em->ws_top) { /* initialized and split at the top of the body (gpu_ws.c) */
        bk_gpu_line(em, "// stages(%d): the ring of the producer warpgroup (above)", S);
        return;
    }
    if (em->persist) { /* initialized and split before the tile loop */
        bk_gpu_line(em, "// stages(%d): the ring of the persistent kernel (above): blk_it%d and the "
                    "mbarriers' phases go on from the previous tile", S, fr);
        return;
    }
    bk_gpu_tma_init(em, fr);
    if (em->ws) {
        bk_gpu_ws_split(em, fr);
        return;
    }
    bk_gpu_line(em, "if (blk_tid == 0) {");
    em->indent++;
    bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) {", D);
    em->indent++;
    snprintf(ahead, sizeof ahead, "(long long)blk_s * %lldLL", st);
    bk_gpu_pipe_ahead(em, fr, F->opnd[0], ahead);
    bk_gpu_tma_issue(em, fr, "blk_s", "blk_fiv");
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_tma_top(BkGpuEm *em, int fr)
{
    const IrInstr *F = &em->f->ins[fr];
    const int S = em->stages, D = bk_gpu_pipe_dist(em, fr);
    const long long st = (long long)em->f->ins[F->opnd[2]].ival;
    char ahead[64], slot[64];
    if (em->ws) {
        bk_gpu_ws_top(em, fr);
        return;
    }
    bk_gpu_line(em, "blk_mbar_wait_parity(&blk_tb%d[blk_it%d %% %d], (unsigned)(blk_it%d / %d) & 1u); "
                "/* iteration blk_it%d's tiles have landed */", fr, fr, S, fr, S, fr);
    /* every thread is done with iteration blk_it - 1 (D = S - 1) or, with
     * a wgmma group in flight, has retired iteration blk_it - 2's group
     * (D = S - 2): slot (blk_it + D) % S is free */
    bk_gpu_sync(em);
    bk_gpu_line(em, "if (blk_tid == 0) { /* prefetch iteration blk_it%d + %d */", fr, D);
    em->indent++;
    snprintf(ahead, sizeof ahead, "%lldLL", st * D);
    bk_gpu_pipe_ahead(em, fr, fr, ahead);
    snprintf(slot, sizeof slot, "(blk_it%d + %d) %% %d", fr, D, S);
    bk_gpu_tma_issue(em, fr, slot, "blk_fiv");
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
}
