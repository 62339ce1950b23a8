/* gpu_ws.c — warp specialization of the TMA ring loop (CUDA sm_90a), as
 * CUTLASS's sm90 "warpspecialized" kernels do: the block gets one more
 * warpgroup, the producer, whose one thread issues the ring's TMA boxes
 * while the kernel's own warps (1 or 2 warpgroups: the consumers) wait for
 * them and run wgmma, with no block-wide barrier in the loop.
 *
 * When (bk_gpu_ws_plan, after the TMA plan and gpu_wgmma.c's keep_plan /
 * qk_plan): the kernel's TMA ring loop (gpu_tma.c: a loop of the kernel's
 * body) keeps one wgmma group in flight across its steps (gpu_wgmma.c,
 * em->wga), everything of the body before the loop is scalar (or
 * register tiles: no thread but the consumers' may touch shared memory,
 * and the producer runs that code too, for the loop's bounds and the
 * boxes' coordinates), the kernel uses no rank builtins, prints or waits,
 * and neither BLKC_GPU_NOWS nor BLKC_GPU_MINBLOCKS > 1 is set. Otherwise
 * the ring stays as gpu_tma.c emits it, but for flash attention's.
 *
 * Flash attention's K / V ring (TMA with rank-3 / rank-4 maps; the loop
 * holds a wgmma dot with A from registers, p v; em->ws_top) splits at the
 * top of the body instead (bk_gpu_ws_head), right after the mbarriers'
 * initialization: its body loads q into shared memory before the loop,
 * which the producer must not run. The producer's branch emits the
 * scalars of the body before the loop (producer_plan: scalars of scalars,
 * scalar vars, ifs of nothing else; the loop's bounds and the boxes'
 * coordinates must be among them, and everything else there must be a
 * tile or a var of rank > 0, the consumers' alone, and no return or
 * assert may end a consumer early: else no warp specialization), then its
 * loop; the consumers run the whole body, q's
 * load and its barrier included, on named barrier 1. The ring's shared
 * memory is live from the kernel's start (gpu_layout.c): the producer
 * fills it while the consumers still load q. Its release: every wgmma
 * reading slot i % S (q k_i^T's K, p_i v_i's V; on sm_90a nothing but
 * wgmma reads a TMA tile) must have retired. q k_i^T retires in step i; p v_i
 *   - waits in step i (stages(2), BLKC_GPU_NOWGKEEP=1, WGSYNC): the
 *     consumers release slot i at the end of step i (em->ws_lag 0);
 *   - stays in flight across the back edge (keep_plan, em->wgk; with
 *     BLKC_GPU_NOQKPIPE=1): step i + 1's q k^T wait_group 0 retires it;
 *   - is deferred behind step i + 1's q k^T (qk_plan, the default): it
 *     reads slot i in step i + 1, and that step's wait_group 0 at p v's
 *     var.set retires it;
 *   so with a kept group slot i goes back at the end of step i + 1
 *   (em->ws_lag 1), after both waits, as a GEMM's does after its
 *   wait_group 1. The producer's wait is the same either way (slot j % S
 *   once iteration j - S's use was released), so it runs at most S - 1 -
 *   lag iterations ahead of the consumers' step: the distance of
 *   gpu_tma.c's ring (bk_gpu_pipe_dist). A lag one short fails on
 *   cuda-emu (a TMA load into a slot a wgmma in flight reads). The loop
 *   split at the bounds mask (gpu_split.c) stays: the waits and releases
 *   sit outside its two bodies. Persistent (gpu_persist.c), the producer
 *   runs these scalars and the loop per tile, the consumers the body.
 *
 * The layout: consumers keep blk_tid 0 .. nt - 1 (every tile layout and
 * block-strided loop is theirs, em->nt unchanged); the producer is
 * threads nt .. nt + 127, one of which (blk_tid == nt) issues. Shared
 * memory gains S "empty" mbarriers after the S "full" ones (tx-count
 * completed by TMA, gpu_tma.c): empty[s] expects one arrival per consumer
 * warpgroup. After the mbarriers' initialization (a __syncthreads of the
 * whole block, the last one) the block splits:
 *   - producer: setmaxnreg.dec 40; for iteration j of the loop, wait for
 *     phase j / S - 1 of empty[j % S] (parity (j / S + 1) & 1: the first
 *     S waits find the phase before phase 0 complete), arrive.expect_tx on
 *     full[j % S], issue the boxes; then it returns;
 *   - consumers: setmaxnreg.inc 232 (2 x 232 + 40 warpgroups of 128
 *     threads fit the SM's 64K registers); the top of iteration i waits
 *     for full[i % S]; its end, after the wgmma.wait_group 1 that retired
 *     iteration i - 1's group, has one thread per warpgroup arrive on
 *     empty[(i - 1) % S] (flash attention: empty[(i - lag) % S]). Every
 *     later barrier of the kernel is the named barrier 1 of the nt
 *     consumer threads (bk_gpu_bar), never barrier 0 (the producer has
 *     returned).
 * __launch_bounds__(nt + 128, 1): ptxas honours setmaxnreg only with a
 * register count fixed at entry. Launches take blockDim.x from
 * BkGpuKernelInfo.threads (bk_gpu_threads). */
#include "gpu_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WS_PRODUCER_REGS = 40, WS_CONSUMER_REGS = 232 };

/* An instruction of the body before the loop that only computes
 * registers every thread may compute alike. */
static bool before_ok(const BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    if (in->dead || em->virt[id])
        return true;
    if (in->op == IR_VSET) { /* a scalar var, or an MMA var set from a splat */
        const IrVar *v = &f->vars[in->param];
        return v->type.rank == 0 || (em->vmma[in->param].on && em->virt[in->opnd[0]]);
    }
    return (ir_op_flags[in->op] & F_PURE) && in->type.rank == 0;
}

/* Top split: whether x's operands (a LOAD's view indices too) are
 * values the producer computes (prod) or constants. */
static bool prod_operands(const BkGpuEm *em, const bool *prod, int x)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    for (int k = 0; k < in->nopnd; k++)
        if (in->opnd[k] >= 0 && !prod[in->opnd[k]] && f->ins[in->opnd[k]].op != IR_CONST)
            return false;
    if (in->op == IR_LOAD && in->view >= 0)
        for (int d = 0; d < f->views[in->view].ndims; d++) {
            int v = f->views[in->view].d[d].val;
            if (v >= 0 && !prod[v] && f->ins[v].op != IR_CONST)
                return false;
        }
    return true;
}

/* Top split: sorts region r's instructions (all of them, or those before
 * instruction `stop`) into the producer's (prod[x]: a scalar of such
 * scalars, a scalar var's get or set, an if of nothing else: the loop's
 * bounds and the boxes' coordinates come from them) and the consumers'
 * alone (tiles, vars of rank > 0: shared memory and registers, no other
 * effect). whole: every instruction must be the producer's (an if's
 * region, which the producer emits whole). False when one is neither. */
static bool producer_set(const BkGpuEm *em, bool *prod, int r, int stop, bool whole)
{
    const IrFunc *f = em->f;
    const IrRegion *reg = &f->regions[r];
    for (int j = 0; j < reg->n && reg->ins[j] != stop; j++) {
        const int x = reg->ins[j];
        const IrInstr *in = &f->ins[x];
        if (in->dead)
            continue;
        bool scalar_var = (in->op == IR_VGET || in->op == IR_VSET) && f->vars[in->param].type.rank == 0;
        if (in->op == IR_IF) {
            if (!prod_operands(em, prod, x))
                return false;
            for (int k = 0; k < 2; k++)
                if (in->region[k] >= 0 && !producer_set(em, prod, in->region[k], -1, true))
                    return false;
            prod[x] = true;
        } else if (scalar_var || (in->type.rank == 0 && (ir_op_flags[in->op] & F_PURE))) {
            if (!prod_operands(em, prod, x))
                return false;
            prod[x] = true;
        } else if (whole) {
            return false;
        } else if (in->op == IR_VSET || in->op == IR_VGET) {
            continue; /* a var of rank > 0: the consumers' registers or tile */
        } else if (in->type.rank == 0 || !(ir_op_flags[in->op] & F_PURE)) {
            return false; /* a scalar of a tile, a store, an atomic, a loop */
        }
    }
    return true;
}

/* Top split: prod (nins + 1 bools) filled; false when the producer
 * cannot run its part of the body before the loop alone, or the loop's
 * bounds or the boxes' coordinates set before the loop are not its. */
static bool producer_plan(const BkGpuEm *em, int fr, bool *prod)
{
    const IrFunc *f = em->f;
    if (!producer_set(em, prod, 0, fr, false) || !prod_operands(em, prod, fr))
        return false;
    for (int id = 0; id < f->nins; id++)
        if (em->tma[id] && !prod_operands(em, prod, id)) {
            /* an index set inside the loop is computed by the producer's
             * copy of the box coordinates (bk_gpu_sval), as for GEMMs */
            const IrView *v = &f->views[f->ins[id].view];
            for (int d = 0; d < v->ndims; d++) {
                int x = v->d[d].val;
                if (x >= 0 && !prod[x] && f->ins[x].op != IR_CONST && em->pos[x] < em->pos[fr])
                    return false;
            }
        }
    return true;
}

/* The loop's wgmma dots include one with A from registers (flash
 * attention's p v): the ring the top split serves; and no consumer
 * leaves early (return, assert), which would leave the producer waiting
 * for a slot forever. */
static bool flash_ring(const BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    bool areg = false;
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *in = &f->ins[x];
        if (in->dead)
            continue;
        if (in->op == IR_RET || in->op == IR_ASSERT)
            return false;
        if (in->op == IR_DOT && em->pos[x] > em->pos[fr] && em->pos[x] <= em->end[fr] &&
            em->wgd[x] && em->areg && em->areg[x])
            areg = true;
    }
    return areg;
}

void bk_gpu_ws_plan(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    const int fr = em->tma_fr;
    const char *e = getenv("BLKC_GPU_NOWS");
    em->ws = em->ws_top = false;
    em->ws_lag = 1;
    em->persist = false; /* bk_gpu_persist_plan below decides */
    if (fr < 0 || !em->wga || (e && *e && strcmp(e, "0")) || bk_gpu_minblocks() > 1 ||
        em->nt % 128 || em->nt + 128 > 1024 || bk_gpu_uses_ranks(f))
        return;
    for (int id = 0; id < f->nins; id++) {
        const int op = f->ins[id].op;
        if (!f->ins[id].dead && (op == IR_PRINT || op == IR_WAIT || op == IR_NOTIFY))
            return;
    }
    if (!em->wga[fr]) { /* flash attention's ring: the top split */
        bool *prod = calloc((size_t)f->nins + 1, sizeof(bool));
        bool ok = prod && flash_ring(em, fr) && producer_plan(em, fr, prod);
        free(prod);
        if (!ok)
            return;
        em->ws = em->ws_top = true;
        em->ws_lag = em->wgk && em->wgk[fr] ? 1 : 0;
        bk_gpu_persist_plan(em); /* a persistent grid (gpu_persist.c) */
        return;
    }
    const IrRegion *body = &f->regions[0];
    for (int j = 0; j < body->n && body->ins[j] != fr; j++)
        if (!before_ok(em, body->ins[j]))
            return;
    em->ws = true;
    bk_gpu_persist_plan(em); /* a persistent grid (gpu_persist.c) */
}

int bk_gpu_threads(const BkGpuEm *em)
{
    return em->nt + (em->ws ? 128 : 0);
}

void bk_gpu_bar(BkGpuEm *em)
{
    if (em->ws_on)
        bk_gpu_line(em, "blk_bar_sync(1, %d); /* the consumer threads */", em->nt);
    else
        bk_gpu_line(em, "__syncthreads();");
}

/* Top split: the producer's copy of the body before the loop (its
 * scalars, in order; the consumers emit the whole body after the split).
 * Scalars owe no barrier: none may come out inside the producer's
 * branch, where the consumers would never meet it. */
void bk_gpu_ws_before(BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    const IrRegion *body = &f->regions[0];
    bool *prod = calloc((size_t)f->nins + 1, sizeof(bool));
    if (!prod) {
        bk_gpu_fail(em, "out of memory");
        return;
    }
    producer_plan(em, fr, prod);
    const size_t at = em->o->len;
    bk_gpu_line(em, "/* the scalars before the loop: its bounds, the boxes' coordinates */");
    for (int j = 0; j < body->n && body->ins[j] != fr; j++)
        if (prod[body->ins[j]])
            bk_gpu_emit_instr(em, body->ins[j]);
    free(prod);
    if (em->o->data && (strstr(em->o->data + at, "__syncthreads") || strstr(em->o->data + at, "blk_bar_sync")))
        bk_gpu_fail(em, "internal: a barrier in the producer's scalars before the loop (%s:%d)",
                    __FILE__, __LINE__);
    em->last_line = -1;
}

void bk_gpu_ws_split(BkGpuEm *em, int fr)
{
    const int S = em->stages, nt = em->nt;
    bk_gpu_line(em, "if (blk_tid >= %d) { /* the producer warpgroup: TMA alone */", nt);
    em->indent++;
    bk_gpu_line(em, "blk_setmaxnreg_dec<%d>();", WS_PRODUCER_REGS);
    bk_gpu_line(em, "if (blk_tid == %d) {", nt);
    em->indent++;
    bk_gpu_line(em, "int blk_pj = 0; /* iteration number: ring slot blk_pj %% %d */", S);
    if (em->persist) {
        bk_gpu_persist_produce(em, fr); /* every tile's iterations */
    } else {
        if (em->ws_top)
            bk_gpu_ws_before(em, fr);
        bk_gpu_ws_produce(em, fr);
    }
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "return; /* the consumers wait on every box it issued */");
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "blk_setmaxnreg_inc<%d>(); /* the consumers: the registers the producer "
                "gave back */", WS_CONSUMER_REGS);
    em->ws_on = true;
}

void bk_gpu_ws_produce(BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[fr];
    const int S = em->stages;
    const char *t = bk_gpu_stype(F->type.dtype);
    const long long st = (long long)f->ins[F->opnd[2]].ival;
    bk_gpu_line(em, "for (%s blk_fiv = v%d; blk_fiv %s v%d; blk_fiv += v%d, blk_pj++) {", t,
                F->opnd[0], st > 0 ? "<" : ">", F->opnd[1], F->opnd[2]);
    em->indent++;
    if (em->ws_top)
        bk_gpu_line(em, "/* slot blk_pj %% %d is free once every consumer warpgroup retired every "
                    "wgmma group reading iteration blk_pj - %d's tiles */", S, S);
    else
        bk_gpu_line(em, "/* slot blk_pj %% %d is free once every consumer warpgroup retired the "
                    "wgmma group of iteration blk_pj - %d */", S, S);
    bk_gpu_line(em, "blk_mbar_wait_parity(&blk_te%d[blk_pj %% %d], (unsigned)(blk_pj / %d + 1) & 1u);",
                fr, S, S);
    char slot[64];
    snprintf(slot, sizeof slot, "blk_pj %% %d", S);
    bk_gpu_tma_issue(em, fr, slot, "blk_fiv");
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_ws_top(BkGpuEm *em, int fr)
{
    const int S = em->stages;
    bk_gpu_line(em, "blk_mbar_wait_parity(&blk_tb%d[blk_it%d %% %d], (unsigned)(blk_it%d / %d) & 1u); "
                "/* iteration blk_it%d's tiles have landed */", fr, fr, S, fr, S, fr);
}

void bk_gpu_ws_release(BkGpuEm *em, int fr)
{
    const int S = em->stages;
    if (em->ws_top && em->ws_lag == 0) {
        bk_gpu_line(em, "/* iteration blk_it%d's wgmma groups are retired (each waited for in the "
                    "step): its slot goes back to the producer */", fr);
        bk_gpu_line(em, "if (blk_tid %% 128 == 0)");
        bk_gpu_line(em, "    blk_mbar_arrive(&blk_te%d[blk_it%d %% %d]);", fr, fr, S);
        return;
    }
    if (em->ws_top)
        bk_gpu_line(em, "/* every wgmma group reading iteration blk_it%d - 1's tiles is retired (p v's, "
                    "by this step's wait_group 0): its slot goes back to the producer */", fr);
    else
        bk_gpu_line(em, "/* iteration blk_it%d - 1's wgmma group is retired (wait_group 1 above): "
                    "its slot goes back to the producer */", fr);
    if (em->persist) /* not the previous tile's last: released after its drain */
        bk_gpu_line(em, "if (blk_it%d > blk_first%d && blk_tid %% 128 == 0)", fr, fr);
    else
        bk_gpu_line(em, "if (blk_it%d > 0 && blk_tid %% 128 == 0)", fr);
    bk_gpu_line(em, "    blk_mbar_arrive(&blk_te%d[(blk_it%d - 1) %% %d]);", fr, fr, S);
}

void bk_gpu_ws_head(BkGpuEm *em)
{
    const int fr = em->tma_fr;
    bk_gpu_line(em, "// warp-specialized from the top: the producer warpgroup runs the scalars "
                "before the ring loop and the loop's boxes, the consumers the body (gpu_ws.c)");
    bk_gpu_tma_init(em, fr);
    bk_gpu_ws_split(em, fr);
    em->last_line = -1;
}

void bk_gpu_ws_bars(BkGpuEm *em, int fr)
{
    bk_gpu_line(em, "unsigned long long *const blk_te%d = blk_tb%d + %d; /* empty[s]: slot s "
                "released by each consumer warpgroup */", fr, fr, em->stages);
}
