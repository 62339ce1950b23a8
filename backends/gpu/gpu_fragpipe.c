/* gpu_fragpipe.c — a ring loop's dot with its fragments double-buffered
 * across the ring's barrier (CUDA sm_80+; CUTLASS's multistage main loop).
 *
 * The plain ring loop (gpu_mem.c) waits for its slot and meets the block
 * barrier at the top of each k step, then every warp loads its first
 * ldmatrix fragments and waits for them before its first mma.sync: each
 * step starts with the tensor cores idle for the barrier's skew and a
 * shared-memory round trip. Here, for a loop whose body is one in-place
 * register dot of two ring tiles (a GEMM's main loop), the wait and the
 * barrier move into the dot's last k step of 16, after the loads of that
 * step's fragments and before those of the next slot's first step, and
 * each k step loads the next step's fragments (into the other of two
 * buffers) before its own mma.sync:
 *
 *   wait(slot 0); barrier; F[0] = frags(slot 0, k 0)
 *   for it: prefetch slot it + S - 1 (free: every warp's reads of slot
 *              it - 1 came before the barrier of step it - 1)
 *           for kk < KK - 1: F[kk + 1] = frags(slot it, kk + 1); mma(F[kk])
 *           kk = KK - 1:     wait(slot it + 1); barrier;
 *                            F[0] = frags(slot it + 1, k 0); mma(F[kk])
 *
 * so a warp reaches the barrier with its last k step's fragments loaded
 * and the mma.sync of the step before it still in the tensor pipe, and
 * leaves it with mma.sync to issue while the next fragments load. The
 * order of the mma.sync per accumulator is unchanged (same bits). Only for
 * an even number of k steps (BK a multiple of 32, the buffer of step 0 is
 * F[0] in every iteration), both operands in the swizzled xor form
 * (gpu_mmadot.c), no loop split, wgmma, TMA ring, warp specialization or
 * persistent grid, and only where the second buffer fits the registers
 * (regs_fit). BLKC_GPU_NOFRAGPIPE=1 keeps the plain loop. */
#include "gpu_emit.h"

#include <stdio.h>

/* Whether x is a ring load of FOR fr with its own storage */
static bool ring_load(const BkGpuEm *em, int x, int fr)
{
    return x >= 0 && em->f->ins[x].op == IR_LOAD && em->pipe[x] == fr && em->alias[x] == x;
}

/* Whether dot d (in the body of fr) takes the pipelined form */
static bool dot_ok(const BkGpuEm *em, int d, int fr)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[d];
    if (em->lay[d] != BK_LAY_MMA || in->opnd[2] < 0 || (em->wgd && em->wgd[d]))
        return false;
    int v = em->mvar[d];
    if (v < 0 || !em->vmma[v].on || em->vmma[v].wb > 0 || em->vmma[v].nt % 2)
        return false;
    int ad = f->ins[in->opnd[0]].type.dtype, bd = f->ins[in->opnd[1]].type.dtype;
    if ((ad != DT_F16 && ad != DT_BF16) || bd != ad)
        return false;
    BkGpuFrag g;
    bk_gpu_mma_frag_plan(em, d, v, &g);
    return !g.areg && g.xa && g.xb && g.K % 32 == 0 && ring_load(em, in->opnd[0], fr) &&
           ring_load(em, g.bs, fr);
}

/* Whether the second fragment buffer fits the registers: an estimate of
 * the loop's live registers per thread (the accumulator, two fragment
 * buffers, a 64-bit pointer and an offset per hoisted cp.async copy, 32
 * for the rest) against the cap of __launch_bounds__. ptxas sm_90 on
 * gpu_check's GEMM: 128 x 128 x 32 on 4 warps 240 registers (estimate
 * 248), 128 x 256 x 32 on 8 warps 234 (242); 128 x 128 x 64 on 4 warps
 * spilled 8 bytes at 255 (estimate 272): left as it was. */
static bool regs_fit(const BkGpuEm *em, int fr, int d)
{
    const BkGpuMma *g = &em->vmma[em->mvar[d]];
    long long r = 4LL * g->mt * g->nt + 2LL * (4 * g->mt + 2 * g->nt) + 32;
    for (int x = 0; x < em->f->nins; x++)
        if (em->f->ins[x].op == IR_LOAD && em->pipe[x] == fr) {
            long long per = (long long)em->nt * bk_gpu_vec_width(em, x);
            r += 3 * ((ir_numel(&em->f->ins[x].type) + per - 1) / per);
        }
    int mb = bk_gpu_minblocks(), cap = 65536 / (em->nt * (mb > 1 ? mb : 1));
    return r <= (cap < 255 ? cap : 255);
}

int bk_gpu_fragpipe_plan(BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[fr];
    const IrInstr *st = &f->ins[F->opnd[2]];
    if (em->fp_fr == fr) /* asked again (the same loop emitted once more) */
        return em->fp_dot;
    if (em->nofragpipe || em->fp_fr >= 0 || em->dl->kind != BK_GPU_CUDA || em->pipe[fr] <= 0 ||
        em->tma_fr == fr || (em->wga && em->wga[fr]) || (em->wgk && em->wgk[fr]) || em->ws ||
        em->persist || st->op != IR_CONST || st->type.rank != 0 || st->ival <= 0)
        return -1;
    const IrRegion *r = &f->regions[F->region[0]];
    int dot = -1;
    for (int i = 0; i < r->n; i++) {
        int x = r->ins[i];
        const IrInstr *in = &f->ins[x];
        if (in->dead)
            continue;
        if (in->op == IR_LOAD && ring_load(em, x, fr))
            continue;
        if (in->op == IR_VGET && em->lay[x] == BK_LAY_MMA)
            continue;
        if (in->op == IR_PERMUTE && bk_gpu_dot_tsrc(em, x) >= 0)
            continue;
        if (in->op == IR_VSET && em->mvar[x] >= 0)
            continue;
        if (in->op == IR_DOT && dot < 0 && dot_ok(em, x, fr)) {
            dot = x;
            continue;
        }
        return -1; /* anything else may touch shared memory */
    }
    if (dot < 0 || !regs_fit(em, fr, dot))
        return -1;
    /* the transpose read in place is the dot's own b; the var.set the dot's */
    for (int i = 0; i < r->n; i++) {
        const IrInstr *in = &f->ins[r->ins[i]];
        if (in->dead)
            continue;
        if ((in->op == IR_PERMUTE && r->ins[i] != f->ins[dot].opnd[1]) ||
            (in->op == IR_VSET && em->mvar[r->ins[i]] != em->mvar[dot]))
            return -1;
    }
    em->fp_fr = fr;
    em->fp_dot = dot;
    return dot;
}

/* `const unsigned blk_xa = ..., blk_xb = ...` for the slot SLOT (C text)
 * of the dot's two ring tiles */
static void slot_bases(BkGpuEm *em, const BkGpuFrag *g, const char *slot)
{
    const IrInstr *in = &em->f->ins[em->fp_dot];
    int v = em->mvar[em->fp_dot], x[2] = {in->opnd[0], g->bs};
    const char *name[2] = {"blk_xa", "blk_xb"};
    for (int j = 0; j < 2; j++) {
        char base[128];
        snprintf(base, sizeof base, "%lldu + (unsigned)(%s) * %lldu", em->off[x[j]], slot,
                 bk_gpu_pipe_slot(em, x[j]));
        bk_gpu_mma_frag_base(em, em->fp_dot, v, j, g, name[j], base);
    }
}

/* The slot's wait and the barrier: the copies of iteration blk_it + 1
 * landed, every warp done with this slot (its last fragments loaded) */
void bk_gpu_fragpipe_wait(BkGpuEm *em)
{
    bk_gpu_line(em, "blk_cp_wait<%d>(); /* this thread's copies of group blk_it%d + 1 have landed */",
                bk_gpu_pipe_dist(em, em->fp_fr) - 1, em->fp_fr);
    bk_gpu_sync(em);
}

void bk_gpu_fragpipe_prologue(BkGpuEm *em, int fr)
{
    const IrInstr *F = &em->f->ins[fr];
    int v = em->mvar[em->fp_dot];
    const BkGpuMma *m = &em->vmma[v];
    BkGpuFrag g;
    bk_gpu_mma_frag_plan(em, em->fp_dot, v, &g);
    bk_gpu_line(em, "/* v%d's fragments double-buffered across the ring's barrier "
                "(gpu_fragpipe.c): the first slot's first k step now */", em->fp_dot);
    bk_gpu_line(em, "blk_cp_wait<%d>(); /* this thread's copies of group 0 have landed */",
                bk_gpu_pipe_dist(em, fr) - 1);
    bk_gpu_sync(em);
    dsl_buf_printf(em->o, "#if __CUDA_ARCH__ >= 800\n");
    bk_gpu_line(em, "unsigned blk_fa[2][%d][4], blk_fb[2][%d][2];", m->mt, m->nt);
    bk_gpu_line(em, "if (v%d < v%d) {", F->opnd[0], F->opnd[1]);
    em->indent++;
    slot_bases(em, &g, "0");
    bk_gpu_mma_frag_load(em, em->fp_dot, v, &g, "0", "blk_fa[0]", "blk_fb[0]");
    em->indent--;
    bk_gpu_line(em, "}");
    dsl_buf_printf(em->o, "#endif\n");
}

void bk_gpu_fragpipe_dot(BkGpuEm *em, int id, int v)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[em->fp_fr];
    const char *ab = f->ins[f->ins[id].opnd[0]].type.dtype == DT_F16 ? "f16" : "bf16";
    BkGpuFrag g;
    bk_gpu_mma_frag_plan(em, id, v, &g);
    long long KK = g.K / 16;
    char slot[64];
    bk_gpu_line(em, "/* fragments double-buffered (gpu_fragpipe.c): step blk_kk's in "
                "blk_fa/fb[blk_kk & 1], loaded in the step before */");
    bk_gpu_mma_frag_base(em, id, v, 0, &g, "blk_xa", "(const unsigned char *)blk_A - blk_smem");
    bk_gpu_mma_frag_base(em, id, v, 1, &g, "blk_xb", "(const unsigned char *)blk_B - blk_smem");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_kk = 0; blk_kk < %lld; blk_kk++) {", KK);
    em->indent++;
    bk_gpu_line(em, "if (blk_kk + 1 < %lld) {", KK);
    em->indent++;
    bk_gpu_mma_frag_load(em, id, v, &g, "(blk_kk + 1) * 16", "blk_fa[(blk_kk + 1) & 1]",
                         "blk_fb[(blk_kk + 1) & 1]");
    em->indent--;
    bk_gpu_line(em, "} else { /* the last step: the next slot's first fragments */");
    em->indent++;
    bk_gpu_fragpipe_wait(em);
    bk_gpu_line(em, "if ((long long)v%d + %lldLL < (long long)v%d) {", em->fp_fr,
                (long long)f->ins[F->opnd[2]].ival, F->opnd[1]);
    em->indent++;
    snprintf(slot, sizeof slot, "(blk_it%d + 1) %% %d", em->fp_fr, em->stages);
    slot_bases(em, &g, slot);
    bk_gpu_mma_frag_load(em, id, v, &g, "0", "blk_fa[0]", "blk_fb[0]");
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_mma_frag_mma(em, v, ab, "blk_fa[blk_kk & 1]", "blk_fb[blk_kk & 1]");
    em->indent--;
    bk_gpu_line(em, "}");
}
