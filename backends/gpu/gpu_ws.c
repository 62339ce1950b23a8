/* gpu_ws.c — warp specialization of the TMA ring loop (CUDA sm_90a), as
 * CUTLASS's sm90 "warpspecialized" kernels do: the block gets one more
 * warpgroup, the producer, whose one thread issues the ring's TMA boxes
 * while the kernel's own warps (1 or 2 warpgroups: the consumers) wait for
 * them and run wgmma, with no block-wide barrier in the loop.
 *
 * When (bk_gpu_ws_plan, after the TMA plan): the kernel's TMA ring loop
 * (gpu_tma.c: a loop of the kernel's body) keeps one wgmma group in
 * flight across its steps (gpu_wgmma.c, em->wga), everything of the body
 * before the loop is scalar (or register tiles: no thread but the
 * consumers' may touch shared memory, and the producer runs that code
 * too, for the loop's bounds and the boxes' coordinates), the kernel uses
 * no rank builtins, prints or waits, and neither BLKC_GPU_NOWS nor
 * BLKC_GPU_MINBLOCKS > 1 is set. Otherwise the ring stays as gpu_tma.c
 * emits it. Flash attention's K / V ring (TMA with rank-3 / rank-4 maps)
 * stays so, by design for now: its body loads q into shared memory before
 * the loop (the producer must not run that), and its group in flight is
 * p v's (gpu_wgmma.c keep_plan / qk_plan, em->wgk), retired by the next
 * step's waits, not a group of em->wga: the consumers would release V's
 * slot one step later than here (after the wait that retires p v), and
 * with qk_plan p v reads that slot in the step after its own, so the
 * empty barriers would need a distance of their own. Not designed yet.
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
 *     empty[(i - 1) % S]. Every later barrier of the kernel is the named
 *     barrier 1 of the nt consumer threads (bk_gpu_bar), never barrier 0
 *     (the producer has returned).
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

void bk_gpu_ws_plan(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    const int fr = em->tma_fr;
    const char *e = getenv("BLKC_GPU_NOWS");
    em->ws = false;
    em->persist = false; /* bk_gpu_persist_plan below decides */
    if (fr < 0 || !em->wga || !em->wga[fr] || (e && *e && strcmp(e, "0")) ||
        bk_gpu_minblocks() > 1 || em->nt % 128 || em->nt + 128 > 1024 ||
        bk_gpu_uses_ranks(f))
        return;
    for (int id = 0; id < f->nins; id++) {
        const int op = f->ins[id].op;
        if (!f->ins[id].dead && (op == IR_PRINT || op == IR_WAIT || op == IR_NOTIFY))
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

void bk_gpu_ws_split(BkGpuEm *em, int fr)
{
    const int S = em->f->stages, nt = em->nt;
    bk_gpu_line(em, "if (blk_tid >= %d) { /* the producer warpgroup: TMA alone */", nt);
    em->indent++;
    bk_gpu_line(em, "blk_setmaxnreg_dec<%d>();", WS_PRODUCER_REGS);
    bk_gpu_line(em, "if (blk_tid == %d) {", nt);
    em->indent++;
    bk_gpu_line(em, "int blk_pj = 0; /* iteration number: ring slot blk_pj %% %d */", S);
    if (em->persist)
        bk_gpu_persist_produce(em, fr); /* every tile's iterations */
    else
        bk_gpu_ws_produce(em, fr);
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
    const int S = f->stages;
    const char *t = bk_gpu_stype(F->type.dtype);
    const long long st = (long long)f->ins[F->opnd[2]].ival;
    bk_gpu_line(em, "for (%s blk_fiv = v%d; blk_fiv %s v%d; blk_fiv += v%d, blk_pj++) {", t,
                F->opnd[0], st > 0 ? "<" : ">", F->opnd[1], F->opnd[2]);
    em->indent++;
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
    const int S = em->f->stages;
    bk_gpu_line(em, "blk_mbar_wait_parity(&blk_tb%d[blk_it%d %% %d], (unsigned)(blk_it%d / %d) & 1u); "
                "/* iteration blk_it%d's tiles have landed */", fr, fr, S, fr, S, fr);
}

void bk_gpu_ws_release(BkGpuEm *em, int fr)
{
    const int S = em->f->stages;
    bk_gpu_line(em, "/* iteration blk_it%d - 1's wgmma group is retired (wait_group 1 above): "
                "its slot goes back to the producer */", fr);
    if (em->persist) /* not the previous tile's last: released after its drain */
        bk_gpu_line(em, "if (blk_it%d > blk_first%d && blk_tid %% 128 == 0)", fr, fr);
    else
        bk_gpu_line(em, "if (blk_it%d > 0 && blk_tid %% 128 == 0)", fr);
    bk_gpu_line(em, "    blk_mbar_arrive(&blk_te%d[(blk_it%d - 1) %% %d]);", fr, fr, S);
}

void bk_gpu_ws_bars(BkGpuEm *em, int fr)
{
    bk_gpu_line(em, "unsigned long long *const blk_te%d = blk_tb%d + %d; /* empty[s]: slot s "
                "released by each consumer warpgroup */", fr, fr, em->f->stages);
}
