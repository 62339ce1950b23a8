/* gpu_split.c — loop splitting at a bounds mask (one loop, two bodies) (issue 12: fewer
 * instructions per mma).
 *
 * A FOR with a constant positive step whose body compares an index block
 * `iv + arange(a, B)` (iv the loop's own i32 induction variable, a >= 0;
 * through reshapes and broadcasts) against a loop-invariant i32 scalar
 * bound (`idx < bound`, `idx <= bound`, `bound > idx`, `bound >= idx`)
 * gets its body twice under a block-uniform branch (gpu_emit.c
 * for_body): in the steps where every element of every such compare is
 * true (iv + a + B - 1 < bound, in 64 bits, so no element wraps) the
 * body with those compares emitted as `true`, so that the C++ compiler
 * folds the masks away (flash attention's `where(cols < S, s, -inf)`: 32
 * FSEL and ~30 integer instructions per step at BM=128 BN=64 W=8), else
 * the body as it is. The loop, its steps and its cp.async ring stay as
 * they were, so the bits are the same. (Two loops, the full steps then
 * the rest, fold the same compares, but ptxas allocated the state they
 * share worse: 619 instructions a step instead of 576 in that
 * configuration, benchmarks/README.md round 17.) Both bodies are emitted
 * from the same barrier state (each path through the branch is the one
 * body the single form had: gpu_sync.c's decisions hold for both), and
 * folding a compare changes no memory access. A TMA ring (gpu_tma.c) is
 * split as a cp.async one is: its waits and refills sit at the loop's top,
 * before both bodies (flash attention's K / V ring, warp-specialized
 * or not: gpu_ws.c's waits and releases sit outside the bodies too).
 * Loops whose ring the wgmma-in-flight / GEMM warp-specialized /
 * GEMM persistent paths own keep one body (flash attention's persistent
 * ring splits as its warp-specialized one does). BLKC_GPU_NOLOOPSPLIT=1
 * keeps one body everywhere.
 * Cross-file: bk_gpu_split_*. */
#include "gpu_emit.h"

#include <stdio.h>
#include <string.h>

/* x is defined outside FOR fr (or is a constant): the same every step */
static bool invariant(const BkGpuEm *em, int x, int fr)
{
    return em->f->ins[x].op == IR_CONST || !(em->pos[x] > em->pos[fr] && em->pos[x] <= em->end[fr]);
}

/* x through reshapes and broadcasts */
static int strip(const BkGpuEm *em, int x)
{
    while (x >= 0 && (em->f->ins[x].op == IR_RESHAPE || em->f->ins[x].op == IR_BCAST))
        x = em->f->ins[x].opnd[0];
    return x;
}

/* The largest element of index block x minus FOR fr's induction variable
 * (a + B - 1 for iv + arange(a, B)), or -1 when x is not such a block. */
static long long block_top(const BkGpuEm *em, int x, int fr)
{
    const IrFunc *f = em->f;
    x = strip(em, x);
    if (x < 0 || f->ins[x].op != IR_ADD || f->ins[x].type.dtype != DT_I32)
        return -1;
    int a = strip(em, f->ins[x].opnd[0]), b = strip(em, f->ins[x].opnd[1]);
    if (a != fr) {
        int t = a;
        a = b;
        b = t;
    }
    if (a != fr || b < 0 || f->ins[b].op != IR_ARANGE || f->ins[b].type.dtype != DT_I32 ||
        f->ins[b].ival < 0 || f->ins[b].ival > (1 << 30))
        return -1;
    return f->ins[b].ival + ir_numel(&f->ins[b].type) - 1;
}

int bk_gpu_split_plan(const BkGpuEm *em, int fr, BkGpuSplit *sp)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[fr];
    const IrInstr *st = &f->ins[F->opnd[2]];
    sp->n = 0;
    if (em->noloopsplit || F->type.dtype != DT_I32 || st->op != IR_CONST ||
        st->type.rank != 0 || st->ival <= 0 || (em->ws && !em->ws_top) ||
        (em->wga && em->wga[fr]))
        return 0;
    for (int id = 0; id < f->nins && sp->n < BK_GPU_MAXFOLD; id++) {
        const IrInstr *in = &f->ins[id];
        if (in->dead || em->pos[id] <= em->pos[fr] || em->pos[id] > em->end[fr])
            continue;
        int idx, bnd;
        bool strict;
        switch (in->op) {
        case IR_LT: idx = in->opnd[0]; bnd = in->opnd[1]; strict = true; break;
        case IR_LE: idx = in->opnd[0]; bnd = in->opnd[1]; strict = false; break;
        case IR_GT: idx = in->opnd[1]; bnd = in->opnd[0]; strict = true; break;
        case IR_GE: idx = in->opnd[1]; bnd = in->opnd[0]; strict = false; break;
        default: continue;
        }
        long long top = block_top(em, idx, fr);
        bnd = strip(em, bnd);
        if (top < 0 || bnd < 0 || f->ins[bnd].type.rank != 0 ||
            f->ins[bnd].type.dtype != DT_I32 || !invariant(em, bnd, fr))
            continue;
        if (sp->n && bnd != sp->bound)
            continue; /* one bound per loop: the first found */
        /* all true <=> iv + top < bound (strict), iv + top <= bound */
        long long lim = strict ? top : top - 1;
        if (!sp->n || lim > sp->lim)
            sp->lim = lim;
        sp->bound = bnd;
        sp->cmp[sp->n++] = id;
    }
    return sp->n;
}

bool bk_gpu_split_true(const BkGpuEm *em, int id)
{
    for (int i = 0; i < em->nfold; i++)
        if (em->fold[i] == id)
            return true;
    return false;
}
