/* gpu_persist.c — the persistent grid of a warp-specialized kernel (CUDA
 * sm_90a), as CUTLASS's sm90 "persistent" tile schedulers do: the launch
 * runs min(programs, SMs) blocks, and each block loops over tile ids
 * t = blockIdx.x, blockIdx.x + gridDim.x, ... < the number of programs,
 * each tile one program instance (the program ids of t: below). The
 * producer warpgroup streams every tile's boxes into the same TMA ring
 * without draining it between tiles: its iteration number blk_pj, the
 * consumers' blk_it and so the mbarriers' phases go on from one tile to
 * the next, and the consumers' epilogue of tile i runs while the producer
 * loads tile i + 1 (up to S - 2 iterations ahead, gpu_ws.c).
 *
 * When (bk_gpu_persist_plan, at the end of the warp-specialization plan):
 * the kernel is warp-specialized (gpu_ws.c: the body before the ring loop
 * is scalar, no rank builtins, prints or waits) and has no atomics, no
 * signals, no return and no assert (a program that ends early would leave
 * its tile's boxes unconsumed, and an atomic or signal may order programs
 * the loop serializes), and BLKC_GPU_NOPERSIST is unset. Otherwise the
 * kernel keeps one program per block.
 *
 * The program ids of tile t: pid2 = t / (np0 np1); within the plane, the
 * grouped order of gpu_emit.c (GROUP_M rows of tiles, column by column,
 * as Triton's): consecutive t, run at the same time by consecutive
 * blocks, share A rows and B columns in L2. A bijection of [0, np0 np1
 * np2): every program runs once. program_id / num_programs keep their
 * meaning (num_programs is the grid of programs, blk_np0..2, not
 * gridDim). The runtime (gpu_launch.c) passes the grid as three ints
 * after the tensor maps (BkGpuKernelInfo.persist).
 *
 * The ring across tiles: the mbarriers are initialized once, before the
 * block splits; the consumers release a slot after the wait_group 1 of
 * the next iteration of the same tile (gpu_ws.c) and the tile's last slot
 * after the loop's wait_group 0 (bk_gpu_persist_release), so every slot
 * is released once per use whatever the tiles' trip counts. The ring's
 * shared memory is live for the whole kernel (gpu_layout.c): nothing
 * else may take it while the producer fills it for the next tile.
 *
 * The epilogue by TMA (tstore_plan, em->tstore): the consumers write the
 * tile's registers into a staging tile after everything else in shared
 * memory (128B-swizzled panels of 128-byte rows, blk_wgs: no bank
 * conflicts), fence.proxy.async, the consumers' named barrier, then one
 * thread stores a box per panel (cp.async.bulk.tensor ... bulk_group,
 * out-of-bounds elements not written: the tails) and commits; before the
 * next tile refills the staging tile that thread waits for the reads
 * (cp.async.bulk.wait_group.read 0), before the block ends for the
 * writes (wait_group 0). BLKC_GPU_NOTMASTORE=1: the stores from the
 * registers (gpu_mma.c).
 *
 * Flash attention (gpu_ws.c's top split, em->ws_top) runs on the same
 * machinery: the producer's tile loop computes each tile's scalars
 * before the ring loop (bk_gpu_ws_before: the loop's bounds, the boxes'
 * coordinates) and issues its K / V boxes; the consumers' tile loop runs
 * the whole body (q's load, the ring loop, the drain of the deferred p v,
 * the epilogue). The iteration counted from the tile's first
 * (bk_gpu_persist_it) replaces blk_it where the body tells the first step
 * (the p v of zeros on the current slot, the first real p v's scale-d 0,
 * the drain). With a p v kept in flight (ws_lag 1) the tile's last slot
 * is released after the drain, as a GEMM's; with none every slot goes
 * back in its own step. A consumers' barrier ends each tile: the next
 * tile's q load overwrites a tile the other warpgroup's wgmma may have
 * read until its drain. No pzero, no TMA-store epilogue there. Not
 * persistent with p v kept in flight across the back edge (keep_plan,
 * BLKC_GPU_NOQKPIPE=1): ptxas then serializes the wgmma (C7515) for the
 * next tile's zeroing of acc.
 * q by TMA (q_plan, em->tmaq; BLKC_GPU_NOTMAQ=1 off): the load before
 * the ring loop whose readers are the loop's wgmma dots is issued by the
 * producer once per tile (bk_gpu_tma_issue_q) on q's full mbarrier
 * blk_tq[0], after its empty mbarrier blk_tq[1] says that every
 * consumer warpgroup retired the previous tile's wgmma reading it (one
 * arrival each after the drain, bk_gpu_persist_release); the consumers
 * wait on blk_tq[0] where they loaded q (bk_gpu_persist_qwait). Both
 * parities come from the block's tile count, (blk_t - blockIdx.x) /
 * gridDim.x. q's tile is live for the whole kernel (gpu_layout.c).
 * The tile order: when the ring loop's end grows with program_id(0)
 * (causal attention: hi = minimum(S, start + BM); em->plpt, end_grows),
 * the longest tiles first, as FlashAttention-3's scheduler: tile t runs
 * program_id(0) = np0 - 1 - t / (np1 np2), then program_id(1) =
 * t % np1, program_id(2) = t / np1 % np2 (still a bijection), so the
 * blocks that start together take the longest tiles and the short ones
 * fill in at the end. Otherwise the grouped order above. */
#include "gpu_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void tstore_plan(BkGpuEm *em);
static int end_grows(const BkGpuEm *em);
static int q_plan(const BkGpuEm *em);

void bk_gpu_persist_plan(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    const char *e = getenv("BLKC_GPU_NOPERSIST");
    em->persist = false;
    em->pzero = -1;
    em->tstore = -1;
    em->plpt = 0;
    em->tmaq = -1;
    if (!em->ws || em->tma_fr < 0 || (e && *e && strcmp(e, "0")))
        return;
    for (int id = 0; id < f->nins; id++) {
        const int op = f->ins[id].op;
        if (!f->ins[id].dead && (op == IR_RET || op == IR_ASSERT || op == IR_ATOMIC ||
                                 op == IR_PRINT || op == IR_WAIT || op == IR_NOTIFY))
            return;
    }
    /* flash attention with p v kept in flight across the back edge
     * (keep_plan, BLKC_GPU_NOQKPIPE=1): the next tile's zeroing of acc
     * has ptxas serialize the wgmma (C7515), as a GEMM's would without
     * pzero; the deferred p v (qk_plan) and a p v waited for at once do
     * not */
    const int kd = em->wgk ? em->wgk[em->tma_fr] - 1 : -1;
    if (em->ws_top && kd >= 0 && !bk_gpu_wgmma_deferred(em, kd))
        return;
    em->persist = true;
    if (em->ws_top) { /* flash attention: no pzero, no TMA-store epilogue */
        em->plpt = end_grows(em);
        em->tmaq = q_plan(em);
        return;
    }
    /* the ring dot's accumulator zeroed before the loop (the last var.set
     * of its var there, from a splat of 0): by the tile's first wgmma
     * with scale-d 0 instead of by stores into its registers, which ptxas
     * would see inside the wgmma pipeline across the tile loop's back
     * edge (C7515: the wgmma serialized) */
    const int dot = em->wga[em->tma_fr] - 1, v = dot >= 0 ? em->mvar[dot] : -1;
    const IrRegion *body = &f->regions[0];
    int set = -1;
    for (int j = 0; j < body->n && body->ins[j] != em->tma_fr; j++) {
        const IrInstr *in = &f->ins[body->ins[j]];
        if (!in->dead && in->op == IR_VSET && in->param == v)
            set = body->ins[j];
    }
    const IrInstr *x = set >= 0 ? &f->ins[f->ins[set].opnd[0]] : NULL;
    em->pzero = x && x->op == IR_CONST && em->virt[f->ins[set].opnd[0]] && x->fval == 0.0
                    ? set : -1;
    tstore_plan(em);
}

/* Marks dep[x] for the values of region r (before instruction `stop`)
 * that depend on program_id(0), vdep[v] for the scalar vars set from
 * them; the branch a constant condition never takes is skipped (CAUSAL =
 * false's `if`). */
static void pid0_deps(const IrFunc *f, int r, int stop, bool *dep, bool *vdep)
{
    const IrRegion *reg = &f->regions[r];
    for (int j = 0; j < reg->n && reg->ins[j] != stop; j++) {
        const int x = reg->ins[j];
        const IrInstr *in = &f->ins[x];
        if (in->dead)
            continue;
        bool d = (in->op == IR_PID && in->attr == 0) || (in->op == IR_VGET && vdep[in->param]);
        for (int k = 0; k < in->nopnd; k++)
            d |= in->opnd[k] >= 0 && dep[in->opnd[k]];
        dep[x] = d;
        if (in->op == IR_VSET && d)
            vdep[in->param] = true;
        if (in->op == IR_IF) {
            const IrInstr *c = &f->ins[in->opnd[0]];
            for (int k = 0; k < 2; k++)
                if (in->region[k] >= 0 && !(c->op == IR_CONST && (c->ival != 0) == (k == 1)))
                    pid0_deps(f, in->region[k], -1, dep, vdep);
        }
    }
}

/* Whether the ring loop's end depends on program_id(0) and its start
 * does not (em->plpt): causal attention's trip count, which grows with
 * the query block. */
static int end_grows(const BkGpuEm *em)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[em->tma_fr];
    bool *dep = calloc((size_t)f->nins + (size_t)f->nvars + 1, sizeof(bool));
    if (!dep)
        return 0;
    pid0_deps(f, 0, em->tma_fr, dep, dep + f->nins);
    const int r = dep[F->opnd[1]] && !dep[F->opnd[0]];
    free(dep);
    return r;
}

/* Flash attention's q by TMA (em->tmaq, BLKC_GPU_NOTMAQ=1 off): the one
 * load of the body before the ring loop that TMA may copy (a swizzled
 * wgmma operand whose view and launch facts a tensor map takes:
 * bk_gpu_tma_ok), unmasked, whose view's indices are scalars before the
 * loop (the producer's: gpu_ws.c's top split computes every one of
 * them) and whose every reader is a wgmma dot in the ring loop (so that
 * the tile is free once the loop's groups are retired), with room for
 * one more tensor map. */
static int q_plan(const BkGpuEm *em)
{
    const IrFunc *f = em->f;
    const int fr = em->tma_fr;
    const char *e = getenv("BLKC_GPU_NOTMAQ");
    int q = -1, nmaps = 1;
    if (e && *e && strcmp(e, "0"))
        return -1;
    for (int id = 0; id < f->nins; id++)
        nmaps += em->tma[id];
    const IrRegion *body = &f->regions[0];
    for (int j = 0; j < body->n && body->ins[j] != fr; j++) {
        const int id = body->ins[j];
        const IrInstr *in = &f->ins[id];
        if (in->dead || in->op != IR_LOAD || em->pipe[id] >= 0 || !bk_gpu_tma_ok(em, id))
            continue;
        if (q >= 0)
            return -1; /* more than one: none */
        q = id;
    }
    if (q < 0 || nmaps > BK_GPU_MAXTMA)
        return -1;
    const IrInstr *in = &f->ins[q];
    for (int k = 0; k < in->nopnd; k++)
        if (in->opnd[k] >= 0) /* a mask or a pad value */
            return -1;
    const IrView *v = &f->views[in->view];
    for (int d = 0; d < v->ndims; d++) {
        const int x = v->d[d].val;
        if (x >= 0 && f->ins[x].op != IR_CONST && (f->ins[x].type.rank != 0 || em->pos[x] >= em->pos[fr]))
            return -1;
    }
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *r = &f->ins[x];
        if (r->dead)
            continue;
        for (int k = 0; k < r->nopnd; k++)
            if (r->opnd[k] == q && (r->op != IR_DOT || !em->wgd[x] || em->pos[x] <= em->pos[fr] ||
                                    em->pos[x] > em->end[fr]))
                return -1;
    }
    return q;
}

void bk_gpu_persist_qwait(BkGpuEm *em, int id)
{
    bk_gpu_decl_tile(em, id);
    bk_gpu_line(em, "/* by TMA: the producer's boxes of this tile (gpu_persist.c) */");
    bk_gpu_line(em, "blk_mbar_wait_parity(&blk_tq[0], (unsigned)((blk_t - (int)blockIdx.x) / "
                "(int)gridDim.x) & 1u);");
}

/* The epilogue store a TMA store may write (em->tstore): the one store
 * of an MMA var (or of a per-register expression of it) at the body's
 * level after the ring loop, unmasked, into a rank-2 tensor whose facts
 * allow a tensor map (16-byte aligned data, unit inner stride, row
 * stride a multiple of 16 elements; f32, bf16 or f16) through two static
 * ranges of the tile's shape: at most 256 rows, whole 128-byte panels of
 * columns. Its staging tile must fit beside the rest (gpu_layout.c). */
static void tstore_plan(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    const IrRegion *body = &f->regions[0];
    const char *e = getenv("BLKC_GPU_NOTMASTORE");
    int st = -1, nl = 0;
    if (e && *e && strcmp(e, "0"))
        return;
    for (int id = 0; id < f->nins; id++)
        nl += em->tma[id];
    bool after = false;
    for (int j = 0; j < body->n; j++) {
        const int id = body->ins[j];
        const IrInstr *in = &f->ins[id];
        after |= id == em->tma_fr;
        if (after && !in->dead && in->op == IR_STORE && em->lay[in->opnd[0]] == BK_LAY_MMA) {
            if (st >= 0)
                return;
            st = id;
        }
    }
    if (st < 0 || nl >= BK_GPU_MAXTMA)
        return;
    const IrInstr *in = &f->ins[st];
    const IrParam *p = &f->params[in->param];
    const BkGpuMma *g = &em->vmma[em->mvar[in->opnd[0]]];
    const uint32_t need = IR_ASSUME_ALIGN16 | IR_ASSUME_UNIT_INNER | IR_ASSUME_STRIDE16(0);
    if (in->opnd[1] >= 0 || in->view < 0 || p->kind != PK_TENSOR || p->rank != 2 ||
        (p->assume & need) != need || g->wb || g->M > 256 ||
        (p->dtype != DT_F32 && p->dtype != DT_BF16 && p->dtype != DT_F16) ||
        g->N % (128 / dsl_dtype_bytes(p->dtype)))
        return;
    const IrView *v = &f->views[in->view];
    if (v->ndims != 2 || v->d[0].kind != IDX_RANGE || v->d[1].kind != IDX_RANGE ||
        v->d[0].len != g->M || v->d[1].len != g->N)
        return;
    em->tstore = st;
}

long long bk_gpu_tstore_bytes(const BkGpuEm *em)
{
    if (em->tstore < 0)
        return 0;
    const IrInstr *in = &em->f->ins[em->tstore];
    const BkGpuMma *g = &em->vmma[em->mvar[in->opnd[0]]];
    return g->M * g->N * dsl_dtype_bytes(em->f->params[in->param].dtype);
}

void bk_gpu_tstore_open(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    const char *t = bk_gpu_stype(em->f->params[in->param].dtype);
    bk_gpu_line(em, "/* the epilogue by TMA: the registers into the staging tile (128B-swizzled "
                "panels), then its boxes; first the previous tile's boxes have read it */");
    bk_gpu_line(em, "if (blk_tid == 0)");
    bk_gpu_line(em, "    blk_bulk_wait_read<0>();");
    bk_gpu_bar(em);
    bk_gpu_line(em, "{");
    em->indent++;
    bk_gpu_line(em, "%s *const blk_st = (%s *)(blk_smem + %lld);", t, t, em->tst_off);
}

void bk_gpu_tstore_close(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrView *v = &f->views[in->view];
    const int sz = dsl_dtype_bytes(f->params[in->param].dtype), P = 128 / sz;
    const BkGpuMma *g = &em->vmma[em->mvar[in->opnd[0]]];
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "blk_fence_proxy_async(); /* the generic-proxy writes, before the async "
                "proxy reads them */");
    bk_gpu_bar(em);
    bk_gpu_line(em, "if (blk_tid == 0) { /* %lld boxes of %d x %lld, one per panel */", g->N / P, P,
                g->M);
    em->indent++;
    bk_gpu_line(em, "const int blk_r0 = (int)v%d, blk_c0 = (int)v%d;", v->d[0].val, v->d[1].val);
    for (long long c = 0; c < g->N / P; c++)
        bk_gpu_line(em, "blk_tma_store_2d(&blk_tm%d, blk_c0 + %lld, blk_r0, blk_smem + %lld);", id,
                    c * P, em->tst_off + c * g->M * 128);
    bk_gpu_line(em, "blk_bulk_commit();");
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_persist_scale_d(const BkGpuEm *em, int id, char *buf, size_t n)
{
    const int fr = em->tma_fr;
    if (em->persist && em->pzero >= 0 && em->wga[fr] - 1 == id)
        snprintf(buf, n, "blk_it%d > blk_first%d || k > 0", fr, fr);
    else
        snprintf(buf, n, "1");
}

void bk_gpu_persist_params(BkGpuEm *em)
{
    if (em->persist)
        dsl_buf_printf(em->o, ",\n    const int blk_np0, const int blk_np1, const int blk_np2 "
                              "/* the grid of programs (persistent: gridDim.x blocks run them) */");
}

const char *bk_gpu_persist_it(BkGpuEm *em, int fr)
{
    if (em->persist)
        snprintf(em->itbuf, sizeof em->itbuf, "blk_it%d - blk_first%d", fr, fr);
    else
        snprintf(em->itbuf, sizeof em->itbuf, "blk_it%d", fr);
    return em->itbuf;
}

/* blk_pid0..2 of tile blk_t, in the tile loop's scope. */
static void pids(BkGpuEm *em)
{
    const int G = em->group_m;
    if (em->plpt) {
        bk_gpu_line(em, "/* tile blk_t's program ids: program_id(0) from the last down (the ring "
                    "loop's end grows with it: the longest tiles first), then the others */");
        bk_gpu_line(em, "const int blk_pl = blk_t %% (blk_np1 * blk_np2), blk_pid0 = blk_np0 - 1 - "
                    "blk_t / (blk_np1 * blk_np2);");
        bk_gpu_line(em, "const int blk_pid1 = blk_pl %% blk_np1, blk_pid2 = blk_pl / blk_np1;");
        bk_gpu_line(em, "(void)blk_pid0; (void)blk_pid1; (void)blk_pid2;");
        return;
    }
    bk_gpu_line(em, "/* tile blk_t's program ids%s */",
                G ? ", in groups of rows along program_id(0) (L2 reuse)" : "");
    bk_gpu_line(em, "const int blk_pl = blk_t %% (blk_np0 * blk_np1), blk_pid2 = blk_t / (blk_np0 * "
                "blk_np1);");
    if (G) {
        bk_gpu_line(em, "const int blk_gf = blk_pl / (%d * blk_np1) * %d;", G, G);
        bk_gpu_line(em, "const int blk_gs = blk_np0 - blk_gf < %d ? blk_np0 - blk_gf : %d;", G, G);
        bk_gpu_line(em, "const int blk_gr = blk_pl %% (%d * blk_np1);", G);
        bk_gpu_line(em, "const int blk_pid0 = blk_gf + blk_gr %% blk_gs, blk_pid1 = blk_gr / blk_gs;");
    } else {
        bk_gpu_line(em, "const int blk_pid0 = blk_pl %% blk_np0, blk_pid1 = blk_pl / blk_np0;");
    }
    bk_gpu_line(em, "(void)blk_pid0; (void)blk_pid1; (void)blk_pid2;");
}

static void tile_loop(BkGpuEm *em)
{
    bk_gpu_line(em, "for (int blk_t = (int)blockIdx.x; blk_t < blk_tiles; blk_t += (int)gridDim.x) {");
    em->indent++;
    pids(em);
}

void bk_gpu_persist_body(BkGpuEm *em)
{
    const int fr = em->tma_fr;
    bk_gpu_line(em, "// persistent: gridDim.x blocks, each over tiles blockIdx.x, + gridDim.x, ...; "
                "the ring goes on across tiles");
    bk_gpu_line(em, "const int blk_tiles = blk_np0 * blk_np1 * blk_np2; /* the programs: each "
                "tile one */");
    bk_gpu_tma_init(em, fr);
    bk_gpu_ws_split(em, fr); /* the producer's tile loop: bk_gpu_persist_produce */
    em->last_line = -1;
    tile_loop(em);
    /* every per-thread address of the tile derives from the thread's
     * index: read afresh in each tile, it is not hoisted out of the tile
     * loop, where the values derived from it would all stay live across
     * the loop (ptxas spilled 2 KiB for a 128 x 128 tile) */
    bk_gpu_line(em, "const int blk_tid = blk_tid_fresh(); /* per tile: addresses are not kept "
                "live across tiles */");
    bk_gpu_line(em, "const int blk_lane = blk_tid %% %d, blk_warp = blk_tid / %d;", em->dl->warp,
                em->dl->warp);
    bk_gpu_line(em, "(void)blk_lane; (void)blk_warp;");
    for (int v = 0; v < em->f->nvars; v++)
        if (em->f->vars[v].type.rank > 0 && em->vmma[v].on)
            bk_gpu_mma_decl_warp(em, v);
    bk_gpu_line(em, "const int blk_first%d = blk_it%d; /* the tile's first iteration of the ring */",
                fr, fr);
    bk_gpu_emit_region(em, 0);
    /* the back edge: a barrier if the next tile's code may reuse shared
     * memory this tile's last ops touch; global accesses owe none (two
     * programs' accesses are not ordered). Flash attention's always: the
     * next tile's q load overwrites q, which each warpgroup's wgmma reads
     * until its drain */
    if (em->ws_top)
        bk_gpu_bar(em);
    else if (em->pending && (em->nacc > 0 || em->nosyncelim))
        bk_gpu_sync(em);
    em->indent--;
    bk_gpu_line(em, "}");
    if (em->tstore >= 0) {
        bk_gpu_line(em, "if (blk_tid == 0) /* the epilogue's last boxes written before the block "
                    "ends */");
        bk_gpu_line(em, "    blk_bulk_wait<0>();");
    }
}

void bk_gpu_persist_produce(BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    const IrRegion *body = &f->regions[0];
    tile_loop(em);
    if (em->ws_top) /* flash attention: the scalars the top split gives it */
        bk_gpu_ws_before(em, fr);
    if (em->tmaq >= 0) { /* and q's boxes */
        bk_gpu_line(em, "/* q's tile is free once every consumer warpgroup retired the previous "
                    "tile's wgmma reading it */");
        bk_gpu_line(em, "blk_mbar_wait_parity(&blk_tq[1], (unsigned)((blk_t - (int)blockIdx.x) / "
                    "(int)gridDim.x + 1) & 1u);");
        bk_gpu_tma_issue_q(em);
    }
    /* the body before the ring loop (gpu_ws.c: scalars, and accumulators
     * set from a splat, which are the consumers'), for the loop's bounds
     * and the boxes' coordinates */
    for (int j = 0; !em->ws_top && j < body->n && body->ins[j] != fr; j++) {
        const IrInstr *in = &f->ins[body->ins[j]];
        if (!in->dead && !(in->op == IR_VSET && f->vars[in->param].type.rank > 0))
            bk_gpu_emit_instr(em, body->ins[j]);
    }
    bk_gpu_ws_produce(em, fr);
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_persist_release(BkGpuEm *em, int fr)
{
    const int S = em->stages;
    if (em->tmaq >= 0) {
        bk_gpu_line(em, "/* every wgmma reading q is retired: its tile goes back to the producer */");
        bk_gpu_line(em, "if (blk_tid %% 128 == 0)");
        bk_gpu_line(em, "    blk_mbar_arrive(&blk_tq[1]);");
    }
    if (em->ws_top && em->ws_lag == 0)
        return; /* every step released its own slot */
    bk_gpu_line(em, "/* the tile's last iteration's group is retired (wait_group 0 above): its slot "
                "goes back to the producer, which may be loading the next tile */");
    bk_gpu_line(em, "if (blk_it%d > blk_first%d && blk_tid %% 128 == 0)", fr, fr);
    bk_gpu_line(em, "    blk_mbar_arrive(&blk_te%d[(blk_it%d - 1) %% %d]);", fr, fr, S);
    if (em->pzero >= 0) {
        const int v = em->f->ins[em->pzero].param;
        bk_gpu_line(em, "if (blk_it%d == blk_first%d) /* no iteration: no wgmma zeroed var%d */", fr,
                    fr, v);
        bk_gpu_line(em, "    for (int blk_r = 0; blk_r < %d; blk_r++) var%d[blk_r] = 0.0f;",
                    bk_gpu_mma_nregs(&em->vmma[v]), v);
    }
}
