/* gpu_wgmma.c — dots on Hopper's warpgroup MMA (CUDA, --arch=sm_90a):
 * wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} (and m64nNk32 for fp8,
 * below) with A and B read
 * by the tensor cores from shared memory through matrix descriptors.
 *
 * Which dots (bk_gpu_wgmma_plan, after the layout pass chose its layouts):
 * a 2-D dot accumulating in place into an MMA var (f32 [M, N]) — or, a
 * dot value in registers (the registers of its pseudo-var,
 * gpu_mmadot.c bk_gpu_mma_dot_value: flash attention's S = q k^T) —
 * from f16 / bf16 operand tiles of the same dtype, in a kernel of warps(4) or
 * warps(8) (one or two warpgroups of 4 warps), M a multiple of 64 per
 * warpgroup, N a multiple of 8 up to 256, K a multiple of 16, the
 * operands stored tiles read by this dot alone (those the layout pass may
 * store swizzled, gpu_layouts.c swz_ok). bk_gpu_wgmma_var makes such a
 * var's warp grid the one wgmma's accumulator has: every warp owns whole
 * rows (wm = warps, wn = 1, mt fragments of 16 rows each), so register R
 * of the MMA layout (gpu_mma.c) is element R % (N / 2) of the D fragment
 * of m-block R / (N / 2) (PTX ISA 9.7.15.5.1.1.1, Figure 149: warp w of a
 * warpgroup holds rows 16 w + groupID (+ 8) of the m16n8 pattern repeated
 * over the N / 8 column blocks) — every other op on the var (epilogue,
 * row reductions, conversions) is unchanged.
 *
 * Operand layout (bk_gpu_swz_idx writes `blk_wgs`, cuda.c prelude):
 * 9.7.15.5.1.2.1.3 "Canonical Layouts" in a swizzle mode — the layout TMA
 * writes (runtime/emu/blk_emu_tma.h) — for an [R][C] tile with C the
 * contiguous dimension (K for a, N or K for b): rows of S bytes (S = 128
 * when C * 2 is a multiple of 128, else 64 or 32: the span), panels of S
 * / 2 columns holding all R rows, 8-row atoms of 8 S bytes, and in each
 * atom the 16-byte chunks of row r XOR'd with r (address bits [4, 4 + b)
 * ^= [7, 7 + b), Swizzle<b, 4, 3>), so that the 8 chunks of a row, which
 * one cp.async instruction of 8 threads writes, fall in 8 different bank
 * groups, and the 8 rows of a chunk column, which the tensor cores read,
 * too. The tile starts on its pattern (8 S bytes: gpu_layout.c aligns it,
 * the dynamic shared memory is 1024-byte aligned) since the pattern is on
 * address bits. a's atoms are permuted so that m-block i of warpgroup G
 * (64 rows: 16 of each of its warps, from their fragment i) is 8
 * consecutive atoms. a, and b = trans(t) of an [N][K] tile, are K-major
 * ((8,m),(T,2k)):((cT,SBO),(1,T)): SBO = 8 S between atoms, LBO unused; a
 * k step of 16 advances the start by 32 bytes within a panel, by a panel
 * (R S bytes) past it. b read as [K][N] is N-major (imm-trans-b 1)
 * ((T,c,m),(8,k)):((1,T,LBO),(cT,SBO)): LBO = K S between panels of N,
 * SBO = 8 S between 8-row groups of K; a k step advances 16 rows (16 S
 * bytes). Descriptor (9.7.15.5.1.2.2): start, LBO, SBO each (x & 0x3FFFF)
 * >> 4 in bits 13-0, 29-16, 45-32, base offset 0, swizzle mode in 63-62
 * (1: 128B, 2: 64B, 3: 32B).
 *
 * Emission (bk_gpu_wgmma_dot, under `#if __CUDA_ARCH__ >= 900 &&
 * defined(__CUDA_ARCH_FEAT_SM90_ALL)`, the FMA loop under #else):
 * wgmma.fence, K / 16 x mt wgmma.mma_async (scale-d 1: in place),
 * wgmma.commit_group, wgmma.wait_group 0; the accumulator registers are
 * fenced for the compiler around it (the asm of the instructions does not
 * name them).
 *
 * One group in flight across k steps (async_plan, em->wga; as CUTLASS's
 * sm90 mainloop with warpgroup_wait<1>): a dot in a stages(S) ring loop,
 * S >= 3, whose operands are the ring's loads and whose var nothing else
 * in the loop touches, waits with wgmma.wait_group 1 instead — step i's
 * group stays in flight while step i + 1 is loaded and issued, step i -
 * 1's is retired — and bk_gpu_wgmma_drain puts wait_group 0 right after
 * the loop, before anything reads the accumulator. A ring slot may be
 * refilled only after the wait that retires the group reading it (PTX
 * ISA 9.7.15.4: the async proxy reads the operands until the group
 * completes): the rings prefetch S - 2 iterations ahead instead of S - 1
 * (bk_gpu_pipe_dist), so the top of iteration i refills slot (i - 2) % S
 * after the block barrier, which every warpgroup reaches after its wait
 * that retired group i - 2. stages(2) keeps wait_group 0: its second slot
 * is being refilled while the first is read. BLKC_GPU_WGSYNC=1 keeps
 * wait_group 0 everywhere. Every barrier of such a kernel is preceded by
 * fence.proxy.async.shared::cta (gpu_emit.c bk_gpu_sync): the operand
 * tiles are written through the generic proxy (cp.async, stores) and
 * wgmma reads them through the async proxy. bk_gpu_wgmma_decls writes,
 * before the kernel, the inline-asm wrapper of each shape it uses (CUDA;
 * cuda-emu has its own, runtime/emu/blk_emu_wgmma.h).
 *
 * fp8 (f8e4m3 / f8e5m2, the two may differ): m64nNk32 .f32.e4m3.e5m2 and
 * the like, K % 32. The PTX ISA gives 8-bit types no imm-trans, so both
 * operands are K-major: b must be trans(t) of an [N][K] tile. The layout
 * pass puts an fp8 dot on the register path only when wgmma will take it
 * (bk_gpu_wgmma_f8, asked before the layouts exist; the plan fails the
 * compile should it not, as no mma.sync fp8 path exists); else, and with
 * b as [K][N] or off sm_90a, it stays the shared-memory FMA dot. One-byte
 * operands: T = 16 elements per 16-byte chunk, rows of S bytes = S
 * elements, a k step of 32 elements is 32 bytes (as 16 of 2 bytes), so
 * the descriptors and steps above hold with columns counted as bytes.
 *
 * A from registers (em->areg: a is a register value of an MMA layout,
 * flash attention's p = exp2(..) as f16 / bf16 in acc += dot(p, v)):
 * wgmma.mma_async m64nNk16 "d, a, b-desc, scale-d, imm-scale-a,
 * imm-scale-b, imm-trans-b" with a = four .f16x2 registers (PTX ISA
 * 9.7.15.5.1.1.1, Figure 148: warp w of the warpgroup rows 16 w .. + 15
 * in mma.m16n8k16's A pattern, rows groupID (+ 8 for a2 a3 a6 a7),
 * columns 2 threadID_in_group + (i & 1) (+ 8 for a4 .. a7)). When a's
 * registers are in an MMA layout of the accumulator's warp grid with K
 * columns (areg_ok), the m16n8 n-tiles 2 s and 2 s + 1 of m-block i (c0
 * c1 row g, c2 c3 row g + 8) are exactly a0 a1 a2 a3 / a4 a5 a6 a7 of k
 * step s: blk_ra[s][i] packs registers (i nt + 2 s) * 4 .. + 7 in pairs,
 * as mma.sync's A does (gpu_mmadot.c). They are packed and fenced before
 * wgmma.fence and fenced again after the wait_group 0 that retires them
 * (9.7.15.7.3: A's registers are the hardware's until then). Off sm_90a
 * the dot keeps mma.sync (#elif), and BLKC_GPU_NOWGREG=1 keeps both
 * this and the dot-value form on mma.sync.
 *
 * Such a dot in a stages(S >= 3) cp.async ring loop, with b the ring's
 * load and the loop's other wgmma dot (S = q k^T) first in its body,
 * keeps its group in flight across the back edge (keep_plan, em->wgk):
 * no wait after it; the other dot's wait_group 0 in the next step retires
 * both, bk_gpu_wgmma_drain the last after the loop. The ring then
 * prefetches S - 2 ahead (slot i % S stays with group i until step i +
 * 1's wait), and A's registers are an array declared before the loop
 * (bk_gpu_wgmma_keep_decl), fenced after the retiring waits.
 * BLKC_GPU_NOWGKEEP=1 (or WGSYNC) waits after it as before.
 *
 * Such a kept dot whose var.set is acc = acc * alpha[:, None] + dot(p, v)
 * (alpha a row value of the step) is deferred behind the next step's
 * q k^T (qk_plan, em->wgq; FlashAttention-3's intra-warpgroup overlap):
 * step i rescales acc by alpha_{i-1} (blk_qa<dot>), issues q k_i^T, then
 * p_{i-1} v_{i-1} from blk_rk<dot> and slot (i - 1) % S, waits
 * wait_group 1 for S alone and runs the softmax while p v is on the
 * tensor cores; the var.set waits wait_group 0, packs p_i and keeps
 * alpha_i; the drain issues the last p v. Step 0 issues a p v of zeros:
 * ptxas serializes the wgmma when a branch surrounds one. The ring keeps
 * the S - 2 distance. BLKC_GPU_NOQKPIPE=1 keeps keep_plan's order.
 *
 * Not here: TMA (gpu_tma.c fills the operand rings when the launch
 * allows tensor maps), warp specialization (gpu_ws.c splits such a
 * ring into a producer and consumers), a persistent grid, more than one
 * group in flight (wait_group 1 across k steps; a register-A group kept
 * until the next step's first wait; the dot values wait_group 0 at
 * once), fp8 A from registers, tf32 / i8, f16 accumulators. */
#include "gpu_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tile b of dot id is read from: t of b = trans(t), else b; *kmaj:
 * stored K-major ([N][K]) */
static int b_src(const BkGpuEm *em, int id, bool *kmaj)
{
    int b = em->f->ins[id].opnd[1], t = bk_gpu_dot_tsrc(em, b);
    *kmaj = t >= 0;
    return t >= 0 ? t : b;
}

static bool f8(int dt) { return dt == DT_F8E4M3 || dt == DT_F8E5M2; }

/* The bytes of dot id's operand elements: 2 (f16 / bf16) or 1 (fp8). */
static int esize(const BkGpuEm *em, int id)
{
    return f8(em->f->ins[em->f->ins[id].opnd[0]].type.dtype) ? 1 : 2;
}

/* The shape facts of dot id (result [M, N], operands of one 16-bit dtype
 * with K % 16 == 0, or of fp8 dtypes, mixed or not, with K % 32 == 0) and
 * the kernel's warps; *mt = the m-blocks of 64 rows per warpgroup. */
static bool shape_ok(const BkGpuEm *em, int id, int *mt)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    if (!em->sm90a || (em->nw != 4 && em->nw != 8) || in->op != IR_DOT ||
        in->type.rank != 2 || in->type.dtype != DT_F32)
        return false;
    const IrType *a = &f->ins[in->opnd[0]].type, *b = &f->ins[in->opnd[1]].type;
    bool e8 = f8(a->dtype) && f8(b->dtype);
    if (a->rank != 2 || b->rank != 2 ||
        (!e8 && (a->dtype != b->dtype || (a->dtype != DT_F16 && a->dtype != DT_BF16))))
        return false;
    long long M = in->type.shape[0], N = in->type.shape[1], K = a->shape[1];
    int ng = em->nw / 4;
    if (M % (64 * ng) || N % 8 || N > 256 || K % (e8 ? 32 : 16))
        return false;
    *mt = (int)(M / (64 * ng));
    return (long long)*mt * N / 2 <= 128; /* accumulator registers per thread */
}

bool bk_gpu_wgmma_var(const BkGpuEm *em, int v)
{
    const IrType *t = &em->f->vars[v].type;
    for (int i = 0; i < em->f->nins; i++) {
        const IrInstr *in = &em->f->ins[i];
        int mt;
        if (!in->dead && in->op == IR_DOT && in->type.rank == 2 &&
            in->type.shape[0] == t->shape[0] && in->type.shape[1] == t->shape[1] &&
            shape_ok(em, i, &mt))
            return true;
    }
    return false;
}

/* The dots (live, on the register path) that read tile x as an operand. */
static int readers(const BkGpuEm *em, int x)
{
    int n = 0;
    for (int u = 0; u < em->f->nins; u++) {
        const IrInstr *o = &em->f->ins[u];
        bool kmaj;
        if (!o->dead && o->op == IR_DOT)
            n += (o->opnd[0] == x) + (b_src(em, u, &kmaj) == x);
    }
    return n;
}

/* The swizzle span of an operand tile whose rows (the contiguous
 * dimension) hold C elements of es bytes: 128 bytes when they are whole
 * 128-byte rows (panels of 128 / es columns), 64 or 32 when that is the
 * row, else 0 (no wgmma; the layout pass's swizzle (swz_geom, swz_ok)
 * admits only these). */
static int span(long long C, int es)
{
    return C * es % 128 == 0 ? 128 : C * es == 64 ? 64 : C * es == 32 ? 32 : 0;
}

/* The one instruction that reads value x (operands or view indices), or
 * -1. */
static int sole_user(const BkGpuEm *em, int x)
{
    const IrFunc *f = em->f;
    int who = -1;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        int k = o->op == IR_YIELD ? o->nopnd : ir_op_nopnd[o->op];
        bool r = false;
        for (int i = 0; i < k && i < 4; i++)
            r |= o->opnd[i] == x;
        if (o->view >= 0)
            for (int d = 0; d < f->views[o->view].ndims; d++)
                r |= f->views[o->view].d[d].val == x;
        if (!o->dead && r) {
            if (who >= 0)
                return -1;
            who = u;
        }
    }
    return who;
}

/* Whether x is a load of its own storage read by user u alone (a tile
 * the layout pass may store swizzled, gpu_layouts.c swz_ok). */
static bool own_load(const BkGpuEm *em, int x, int u)
{
    const IrInstr *in = &em->f->ins[x];
    return in->op == IR_LOAD && !in->dead && em->alias[x] == x && !em->virt[x] &&
           em->var_of[x] < 0 && sole_user(em, x) == u;
}

bool bk_gpu_wgmma_f8(const BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    int mt, g = in->opnd[2], p = in->opnd[1];
    if (em->dl->kind != BK_GPU_CUDA || in->op != IR_DOT || in->dead || g < 0 ||
        f->ins[g].op != IR_VGET || !shape_ok(em, id, &mt) || esize(em, id) != 1)
        return false;
    /* b = trans(t), t [N][K]: K-major (asked before the layout pass has
     * made the PERMUTE virtual: bk_gpu_dot_tsrc does not know it yet) */
    const IrInstr *pi = &f->ins[p];
    if (pi->op != IR_PERMUTE || pi->type.rank != 2 || pi->perm[0] != 1 || pi->perm[1] != 0 ||
        sole_user(em, p) != id)
        return false;
    int a = in->opnd[0], t = pi->opnd[0];
    return a != t && own_load(em, a, id) && own_load(em, t, p) &&
           span(f->ins[a].type.shape[1], 1) && span(f->ins[t].type.shape[1], 1);
}

/* Whether dot id's a, a register value (em->areg), can be wgmma's A
 * from registers: 16-bit elements in an MMA layout of the accumulator's
 * warp grid whose columns are the dot's K (the A fragment of k step s,
 * m-block i is then registers (i nt + 2 s) * 4 .. + 7 of it: file
 * comment). */
static bool areg_ok(const BkGpuEm *em, int id, int mt)
{
    const IrInstr *in = &em->f->ins[id];
    const BkGpuMma *q = &em->vmma[BK_GPU_RV_VAR(em, in->opnd[0])];
    long long K = em->f->ins[in->opnd[0]].type.shape[1];
    return esize(em, id) == 2 && q->on && q->wb <= 0 && q->wm == em->nw && q->wn == 1 &&
           q->mt == mt && q->nt * 8 == K && q->N == K;
}

/* Whether instruction x reads value v. */
static bool reads(const IrInstr *x, int v)
{
    for (int k = 0; k < 4; k++)
        if (x->opnd[k] == v)
            return true;
    return false;
}

/* Wgmma dot id keeps its group in flight across the k steps of its loop
 * (em->wga) when
 *   - it sits directly in the body of a stages(S) ring loop fr, S >= 3
 *     (with 2 slots one is read by the group in flight and one by the
 *     group being issued: none is free to prefetch into, so stages(2)
 *     keeps wait_group 0 and its one iteration ahead),
 *   - both its operands are that ring's loads (a tile stored in the body
 *     each step would be overwritten under the group in flight),
 *   - it is the loop's only wgmma dot (one group per step), and
 *   - nothing else in the loop reads or writes its var, and nothing reads
 *     its var.get or its value but itself and its var.set: the registers
 *     are the hardware's until the wait after the loop. */
static void async_plan(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    bool kmaj;
    int fr = -1, v = em->mvar[id], g = in->opnd[2], b = b_src(em, id, &kmaj);
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *F = &f->ins[x];
        if (F->op != IR_FOR || F->dead || F->region[0] < 0 || em->pipe[x] <= 0)
            continue;
        const IrRegion *r = &f->regions[F->region[0]];
        for (int j = 0; j < r->n; j++)
            if (r->ins[j] == id)
                fr = x;
    }
    if (fr < 0 || v < 0 || g < 0 || (em->areg && em->areg[id]) || em->pipe[in->opnd[0]] != fr ||
        em->pipe[b] != fr || em->wga[fr] || f->ins[g].op != IR_VGET || f->ins[g].param != v)
        return;
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *o = &f->ins[x];
        if (o->dead || x == id)
            continue;
        bool inloop = em->pos[x] > em->pos[fr] && em->pos[x] <= em->end[fr];
        bool var = (o->op == IR_VGET || o->op == IR_VSET) && o->param == v;
        bool own_set = o->op == IR_VSET && o->opnd[0] == id && o->param == v;
        if ((inloop && em->wgd[x]) || (inloop && var && x != g && !own_set) ||
            (reads(o, g) && x != id) || (reads(o, id) && !own_set))
            return;
    }
    em->wga[id] = fr + 1;
    em->wga[fr] = id + 1;
}

/* The FOR whose body region holds instruction x directly, or -1. */
static int body_of(const BkGpuEm *em, int x)
{
    const IrFunc *f = em->f;
    for (int fr = 0; fr < f->nins; fr++) {
        const IrInstr *F = &f->ins[fr];
        if (F->op != IR_FOR || F->dead || F->region[0] < 0)
            continue;
        const IrRegion *r = &f->regions[F->region[0]];
        for (int j = 0; j < r->n; j++)
            if (r->ins[j] == x)
                return fr;
    }
    return -1;
}

/* Register-A wgmma dot id (flash attention's acc = acc * alpha + dot(p,
 * v), run at the var.set s of its var) keeps its group in flight across
 * the back edge of its loop fr (em->wgk): no wait after it; the wait_group
 * 0 of the loop's other wgmma dot q (S = q k^T), which comes first in the
 * next iteration, retires it together with q's own group, and the drain
 * after the loop retires the last one. Tensor cores run p v while the
 * step ends and the next one waits for its tiles, passes the barrier and
 * issues q k^T. Legal (PTX ISA 9.7.15.4: the operands are the async
 * proxy's until the retiring wait_group; 9.7.15.7.3: so are the
 * accumulator and A registers) when
 *   - fr is a ring loop (cp.async or TMA, refilled after the top's
 *     barrier or gpu_ws.c's release; no em->wga) of stages(S >= 3), and v
 *     (b of the dot) is its ring load: the ring prefetches S - 2 ahead
 *     (bk_gpu_pipe_dist), so the top of iteration i + 1 refills slot (i
 *     - 1) % S, never slot i % S that group i still reads, and slot (i -
 *     1) % S was retired by every thread's wait of q in iteration i,
 *     before that barrier; with stages(2) the refill would hit slot i % S;
 *   - id, s and q sit directly in fr's body (each runs every step), q
 *     before s, and they are the loop's only wgmma dots;
 *   - nothing in the loop before q or after s reads or writes the var
 *     (its registers are the hardware's until q's wait), and the loop
 *     holds no return or wait (no thread leaves with the group pending);
 *   - A's registers are an array declared before the loop
 *     (bk_gpu_wgmma_keep_decl), so the compiler keeps them through the
 *     back edge; they are fenced after q's wait and after the drain.
 * BLKC_GPU_NOWGKEEP=1 and BLKC_GPU_WGSYNC=1 keep wait_group 0 after it. */
static void keep_plan(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    bool kmaj;
    int fr = body_of(em, id), v = em->mvar[id], b = b_src(em, id, &kmaj), s = -1, q = -1;
    if (fr < 0 || v < 0 || in->opnd[2] >= 0 || em->pipe[fr] <= 0 || em->pipe[b] != fr ||
        em->wga[fr] || em->wgk[fr] || body_of(em, fr) >= 0)
        return;
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *o = &f->ins[x];
        int rest;
        if (o->dead || em->pos[x] <= em->pos[fr] || em->pos[x] > em->end[fr])
            continue;
        if (o->op == IR_VSET && o->param == v && bk_gpu_set_dot(em, o->opnd[0], &rest) == id)
            s = x;
        if (o->op == IR_DOT && x != id && em->wgd[x]) {
            if (q >= 0)
                return;
            q = x;
        }
    }
    if (s < 0 || q < 0 || body_of(em, s) != fr || body_of(em, q) != fr || em->pos[q] > em->pos[s] ||
        em->mvar[q] >= 0 || em->wga[q] || (em->areg && em->areg[q]))
        return;
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *o = &f->ins[x];
        if (o->dead || em->pos[x] <= em->pos[fr] || em->pos[x] > em->end[fr])
            continue;
        bool var = (o->op == IR_VGET || o->op == IR_VSET) && o->param == v;
        if (o->op == IR_RET || o->op == IR_WAIT ||
            (var && (em->pos[x] < em->pos[q] || em->pos[x] > em->pos[s])))
            return;
    }
    em->wgk[id] = fr + 1;
    em->wgk[fr] = id + 1;
    em->wgk[q] = -(id + 1);
}

/* The row value r whose broadcast back r[:, None] is x (a virtual
 * broadcast of the [M, 1] reshape of an MROW value held in registers
 * alone, gpu_mrows.c, as an array v<r> of its own), or -1. */
static int row_bcast(const BkGpuEm *em, int x, long long M)
{
    const IrFunc *f = em->f;
    const IrInstr *b = &f->ins[x];
    if (b->op != IR_BCAST || !em->virt[x] || b->type.rank != 2 || b->type.shape[0] != M)
        return -1;
    int y = b->opnd[0];
    const IrInstr *rs = &f->ins[y];
    if (rs->op != IR_RESHAPE || rs->type.rank != 2 || rs->type.shape[0] != M ||
        rs->type.shape[1] != 1)
        return -1;
    int r = bk_gpu_mrow_root(em, y);
    if (r < 0 || em->virt[r] || !em->mrcvt || em->mrcvt[r] || f->ins[r].op == IR_VGET ||
        f->ins[r].type.dtype != DT_F32)
        return -1;
    return r;
}

/* Kept dot id (keep_plan: acc = acc * alpha[:, None] + dot(p, v) at its
 * var.set s, retired by the next step's q k^T wait) is deferred into the
 * next step behind that q k^T (em->wgq, FlashAttention-3's intra-
 * warpgroup overlap): step i rescales acc by alpha_{i-1} before it
 * issues q k_i^T, then issues p_{i-1} v_{i-1} from the A registers
 * packed in step i - 1 and v_{i-1}'s ring slot, waits wait_group 1 (S
 * alone; p v stays in flight) and runs the softmax under p v; at s it
 * waits wait_group 0, packs p_i and keeps alpha_i (blk_qa<id>). The
 * drain after the loop issues the last step's p v. Step 0 issues a p v
 * of zeros (the A array's initial value, alpha 1) on v_0's slot: no
 * branch around the wgmma, which ptxas would serialize ("wgmma ...
 * serialized due to ... WG.DP in divergent path"), and so is a rescale
 * of acc between q k^T's issue and p v's. The ring needs no other
 * distance: at the top of step i the refill (S - 2 ahead) hits slot (i -
 * 2) % S, whose p v step i - 1 retired before that barrier; p v_{i-1}
 * reads slot (i - 1) % S. Legal when alpha is a row value in registers
 * computed in the body between q and s, the var.set's other term is
 * acc * alpha[:, None] (either order), and the loop reads or writes the
 * var nowhere but there. BLKC_GPU_NOQKPIPE=1 keeps keep_plan's order. */
static void qk_plan(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    int fr = em->wgk[id] - 1, v = em->mvar[id], s = -1, q = -1, rest = -1, g = -1, r = -1;
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *o = &f->ins[x];
        if (o->dead || em->pos[x] <= em->pos[fr] || em->pos[x] > em->end[fr])
            continue;
        if (em->wgk[x] == -(id + 1))
            q = x;
        if (o->op == IR_VSET && o->param == v && bk_gpu_set_dot(em, o->opnd[0], &rest) == id)
            s = x;
    }
    if (q < 0 || s < 0 || bk_gpu_set_dot(em, f->ins[s].opnd[0], &rest) != id || rest < 0)
        return;
    const IrInstr *m = &f->ins[rest];
    if (m->op != IR_MUL || !em->virt[rest])
        return;
    for (int j = 0; j < 2; j++) {
        int o = m->opnd[j];
        if (f->ins[o].op == IR_VGET && f->ins[o].param == v)
            g = o;
        else
            r = row_bcast(em, o, f->ins[id].type.shape[0]);
    }
    if (g < 0 || r < 0 || sole_user(em, g) != rest || !bk_gpu_same_rows(em, em->mrow[r], v) ||
        body_of(em, r) != fr || em->pos[r] <= em->pos[q] || em->pos[r] >= em->pos[s])
        return;
    int S;
    char slot[160];
    bk_gpu_mma_slot(em, v, "0", slot, sizeof slot, &S);
    if (S != bk_gpu_mrow_regs(em, em->mrow[r]))
        return;
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *o = &f->ins[x];
        if (!o->dead && em->pos[x] > em->pos[fr] && em->pos[x] <= em->end[fr] &&
            (o->op == IR_VGET || o->op == IR_VSET) && o->param == v && x != g && x != s)
            return;
    }
    em->wgq[id] = r + 1;
    /* acc zeroed before the loop (its last var.set there a splat of 0):
     * the first real p v (step 1's, or the drain's after one step) is
     * issued with scale-d 0, so step 0's p v of zeros on v_0's slot
     * leaves nothing behind, not even 0 * inf = nan (else it adds 0 * v_0,
     * exact for finite v_0) */
    const IrRegion *body = &f->regions[0];
    int set = -1;
    for (int j = 0; j < body->n && body->ins[j] != fr; j++) {
        const IrInstr *in = &f->ins[body->ins[j]];
        if (!in->dead && in->op == IR_VSET && in->param == v)
            set = body->ins[j];
    }
    const IrInstr *z = set >= 0 ? &f->ins[f->ins[set].opnd[0]] : NULL;
    em->wgqz[id] = z && z->op == IR_CONST && em->virt[f->ins[set].opnd[0]] && z->fval == 0.0;
}

bool bk_gpu_wgmma_deferred(const BkGpuEm *em, int d)
{
    return em->wgq && em->wgq[d] > 0;
}

int bk_gpu_wgmma_plan(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    em->wgl = calloc((size_t)f->nins + 1, sizeof(int));
    em->wgs = calloc((size_t)f->nins + 1, sizeof(int));
    em->wgd = calloc((size_t)f->nins + 1, sizeof(bool));
    em->wga = calloc((size_t)f->nins + 1, sizeof(int));
    em->wgk = calloc((size_t)f->nins + 1, sizeof(int));
    em->wgq = calloc((size_t)f->nins + 1, sizeof(int));
    em->wgqz = calloc((size_t)f->nins + 1, sizeof(bool));
    if (!em->wgl || !em->wgs || !em->wgd || !em->wga || !em->wgk || !em->wgq || !em->wgqz) {
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    for (int id = 0; id < f->nins && em->sm90a; id++) {
        const IrInstr *in = &f->ins[id];
        int mt, v = em->mvar[id];
        bool kmaj, ar = em->areg && em->areg[id];
        /* accumulating into an MMA var, or a dot value in registers
         * (gpu_mmadot.c bk_gpu_mma_dot_value, its tile written after) */
        bool val = v < 0 && (em->lay[id] == BK_LAY_REG || em->lay[id] == BK_LAY_SHARED) &&
                   em->vmma[BK_GPU_DOT_VAR(em, id)].on;
        if (in->dead || in->op != IR_DOT || (em->lay[id] != BK_LAY_MMA && !val) ||
            !shape_ok(em, id, &mt) || (em->nowgreg && (v < 0 || ar || in->opnd[2] < 0)))
            continue;
        if (v < 0) /* a dot value: the registers of its pseudo-var */
            v = BK_GPU_DOT_VAR(em, id);
        const BkGpuMma *g = &em->vmma[v];
        int a = in->opnd[0], b = b_src(em, id, &kmaj), es = esize(em, id);
        if (!g->on || g->wb > 0 || g->wm != em->nw || g->wn != 1 ||
            g->nt * 8 != g->N || g->mt != mt || !em->swz[b] || a == b ||
            readers(em, b) != 1 || !span(f->ins[b].type.shape[1], es) || (es == 1 && !kmaj))
            continue;
        if (ar ? !areg_ok(em, id, mt)
               : (!em->swz[a] || readers(em, a) != 1 || !span(f->ins[a].type.shape[1], es)))
            continue;
        em->wgd[id] = true;
        if (!ar) {
            em->wgl[a] = 1 + mt; /* rows by warpgroup m-block */
            em->wgs[a] = span(f->ins[a].type.shape[1], es);
        }
        em->wgl[b] = 1;
        em->wgs[b] = span(f->ins[b].type.shape[1], es);
        em->wgmma = true;
    }
    /* an fp8 dot the layout pass put on the register path only for wgmma
     * (bk_gpu_wgmma_f8) has no other tensor-core path */
    for (int id = 0; id < f->nins; id++) {
        const IrInstr *in = &f->ins[id];
        if (!in->dead && in->op == IR_DOT && em->lay[id] == BK_LAY_MMA && !em->wgd[id] &&
            f8(f->ins[in->opnd[0]].type.dtype)) {
            bk_gpu_fail(em, "kernel %s: the fp8 dot v%d was planned for wgmma but its operand "
                        "tiles cannot take its layouts (internal; BLKC_GPU_SMEM=1 avoids it)",
                        f->name, id);
            return -1;
        }
    }
    for (int id = 0; id < f->nins && !em->wgsync && em->stages >= 3; id++)
        if (em->wgd[id])
            async_plan(em, id);
    for (int id = 0; id < f->nins && !em->wgsync && !em->nowgkeep && em->stages >= 3; id++)
        if (em->wgd[id] && em->areg && em->areg[id])
            keep_plan(em, id);
    for (int id = 0; id < f->nins && !em->noqkpipe; id++)
        if (em->wgk[id] > 0 && em->wgd[id])
            qk_plan(em, id);
    /* which rings TMA fills (gpu_tma.c), then warp specialization (gpu_ws.c: after em->wgk) */
    return bk_gpu_tma_plan(em) < 0 ? -1 : 0;
}

/* The PTX type of one operand dtype. */
static const char *ptx_type(int dt)
{
    return dt == DT_F16 ? "f16" : dt == DT_BF16 ? "bf16" : dt == DT_F8E4M3 ? "e4m3" : "e5m2";
}

/* The wrapper name's tail of dot id's instruction into buf:
 * "k16_f32_bf16", "k32_f32_e4m3_e5m2". */
static const char *ab_type(const BkGpuEm *em, int id, char *buf, size_t n)
{
    const IrFunc *f = em->f;
    int ad = f->ins[f->ins[id].opnd[0]].type.dtype, bd = f->ins[f->ins[id].opnd[1]].type.dtype;
    if (esize(em, id) == 2)
        snprintf(buf, n, "k16_f32_%s", ptx_type(ad));
    else
        snprintf(buf, n, "k32_f32_%s_%s", ptx_type(ad), ptx_type(bd));
    return buf;
}

void bk_gpu_wgmma_name(const BkGpuEm *em, int id, char *buf, size_t n)
{
    const IrFunc *f = em->f;
    int ad = f->ins[f->ins[id].opnd[0]].type.dtype, bd = f->ins[f->ins[id].opnd[1]].type.dtype;
    if (esize(em, id) == 2)
        snprintf(buf, n, "m64n%lldk16 .f32.%s", (long long)f->ins[id].type.shape[1], ptx_type(ad));
    else
        snprintf(buf, n, "m64n%lldk32 .f32.%s.%s", (long long)f->ins[id].type.shape[1],
                 ptx_type(ad), ptx_type(bd));
}

/* The inline-asm wrapper of dot id's wgmma with A from registers (PTX
 * ISA 9.7.15.5.2: "d, a, b-desc, scale-d, imm-scale-a, imm-scale-b,
 * imm-trans-b", a = four .f16x2 registers). */
static void decl_rs(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    DslBuf *o = em->o;
    int N = (int)f->ins[id].type.shape[1], R = N / 2;
    const char *t = ptx_type(f->ins[f->ins[id].opnd[0]].type.dtype);
    dsl_buf_printf(o, "#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL) && "
                      "!defined(BLK_EMU) && !defined(BLK_WGMMA_N%d_%s_RS)\n", N, t);
    dsl_buf_printf(o, "#define BLK_WGMMA_N%d_%s_RS\n", N, t);
    dsl_buf_printf(o, "/* wgmma.mma_async m64n%dk16 .f32.%s.%s with A from registers: d = the "
                      "thread's %d accumulator registers, a = its four .f16x2 A registers (PTX "
                      "ISA 9.7.15.5.1.1.1), b-desc, scale-d (predicate), imm-scale 1, imm-trans "
                      "TB */\n", N, t, t, R);
    dsl_buf_printf(o, "template <int TB>\n__device__ inline void blk_wgmma_m64n%dk16_f32_%s_rs("
                      "float *d, const unsigned *a, unsigned long long b, int scale_d)\n{\n", N, t);
    dsl_buf_printf(o, "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n", R + 5);
    dsl_buf_printf(o, "                 \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", N, t, t);
    for (int r = 0; r < R; r++)
        dsl_buf_printf(o, "%s%%%d", r ? ", " : "", r);
    dsl_buf_printf(o, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1, %%%d;\\n}\\n\"\n", R, R + 1,
                   R + 2, R + 3, R + 4, R + 6);
    dsl_buf_printf(o, "                 :");
    for (int r = 0; r < R; r++)
        dsl_buf_printf(o, "%s \"+f\"(d[%d])%s", r ? "," : "", r,
                       r % 8 == 7 && r + 1 < R ? "\n                  " : "");
    dsl_buf_printf(o, "\n                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), "
                      "\"l\"(b), \"r\"(scale_d), \"n\"(TB));\n}\n#endif\n");
}

void bk_gpu_wgmma_decls(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    if (!em->wgmma)
        return;
    for (int id = 0; id < f->nins; id++) {
        if (!em->wgd[id])
            continue;
        if (em->areg && em->areg[id]) {
            decl_rs(em, id);
            continue;
        }
        int N = (int)f->ins[id].type.shape[1];
        bool e8 = esize(em, id) == 1; /* fp8: no imm-trans operands (K-major only) */
        const int kk = e8 ? 32 : 16;
        const char *at = ptx_type(f->ins[f->ins[id].opnd[0]].type.dtype),
                   *bt = ptx_type(f->ins[f->ins[id].opnd[1]].type.dtype);
        char t[32];
        ab_type(em, id, t, sizeof t);
        DslBuf *o = em->o;
        dsl_buf_printf(o, "#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL) && "
                          "!defined(BLK_EMU) && !defined(BLK_WGMMA_N%d_%s)\n", N, t + 8);
        dsl_buf_printf(o, "#define BLK_WGMMA_N%d_%s\n", N, t + 8);
        dsl_buf_printf(o, "/* wgmma.mma_async m64n%dk%d .f32.%s.%s: d = the thread's %d "
                          "accumulator registers (PTX ISA 9.7.15.5.1.1.1), a-desc, b-desc, "
                          "scale-d (predicate), imm-scale 1%s */\n",
                       N, kk, at, bt, N / 2, e8 ? " (fp8: A and B K-major, no imm-trans)"
                                         : ", imm-trans TA / TB");
        dsl_buf_printf(o, "%s__device__ inline void "
                          "blk_wgmma_m64n%d%s(float *d, unsigned long long a, "
                          "unsigned long long b, int scale_d)\n{\n",
                       e8 ? "" : "template <int TA, int TB>\n", N, t);
        dsl_buf_printf(o, "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n",
                       N / 2 + 2);
        dsl_buf_printf(o, "                 \"wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {",
                       N, kk, at, bt);
        for (int r = 0; r < N / 2; r++)
            dsl_buf_printf(o, "%s%%%d", r ? ", " : "", r);
        if (e8)
            dsl_buf_printf(o, "}, %%%d, %%%d, p, 1, 1;\\n}\\n\"\n", N / 2, N / 2 + 1);
        else
            dsl_buf_printf(o, "}, %%%d, %%%d, p, 1, 1, %%%d, %%%d;\\n}\\n\"\n", N / 2, N / 2 + 1,
                           N / 2 + 3, N / 2 + 4);
        dsl_buf_printf(o, "                 :");
        for (int r = 0; r < N / 2; r++)
            dsl_buf_printf(o, "%s \"+f\"(d[%d])%s", r ? "," : "", r,
                           r % 8 == 7 && r + 1 < N / 2 ? "\n                  " : "");
        dsl_buf_printf(o, "\n                 : \"l\"(a), \"l\"(b), \"r\"(scale_d)%s);\n}\n#endif\n",
                       e8 ? "" : ", \"n\"(TA), \"n\"(TB)");
    }
}

/* `for` over var v's registers with a compiler fence on each: accesses
 * stay on their side of the asynchronous instructions */
static void reg_fence(BkGpuEm *em, int v)
{
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_r = 0; blk_r < %d; blk_r++) blk_wgmma_reg_fence(var%d[blk_r]);",
                bk_gpu_mma_nregs(&em->vmma[v]), v);
}

/* The A registers' array of register-A dot id: [k steps][m-blocks][4]. */
static void keep_dims(const BkGpuEm *em, int id, long long *S, int *mt)
{
    const IrInstr *in = &em->f->ins[id];
    *S = em->f->ins[in->opnd[0]].type.shape[1] / 16;
    *mt = em->vmma[em->mvar[id]].mt;
}

/* compiler fences on the accumulator and the A registers of dot id's
 * group kept in flight (em->wgk), after the wait that retired it */
static void keep_fence(BkGpuEm *em, int id)
{
    long long S;
    int mt;
    keep_dims(em, id, &S, &mt);
    reg_fence(em, em->mvar[id]);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_r = 0; blk_r < %lld; blk_r++) blk_wgmma_reg_fence((&blk_rk%d[0][0][0])[blk_r]);",
                S * mt * 4, id);
}

void bk_gpu_wgmma_keep_decl(BkGpuEm *em, int fr)
{
    int id = em->wgk[fr] - 1;
    long long S;
    int mt;
    keep_dims(em, id, &S, &mt);
    bk_gpu_line(em, "unsigned blk_rk%d[%lld][%d][4] = {}; /* v%d's A registers, read by its "
                "wgmma group in flight across the back edge (sm_90a) */", id, S, mt, id);
    bk_gpu_line(em, "(void)blk_rk%d;", id);
    if (!bk_gpu_wgmma_deferred(em, id))
        return;
    int R;
    char slot[160];
    bk_gpu_mma_slot(em, em->mvar[id], "0", slot, sizeof slot, &R);
    bk_gpu_line(em, "float blk_qa%d[%d]; /* alpha of the step whose p v (v%d) is deferred into "
                "the next (1 before the first: its p v is of zeros) */", id, R, id);
    bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) blk_qa%d[blk_s] = 1.0f;", R, id);
}

/* var v (dot id's accumulator) *= blk_qa<id> per row: the deferred
 * rescale acc * alpha[:, None] (qk_plan) */
static void qk_rescale(BkGpuEm *em, int id)
{
    int v = em->mvar[id], S;
    char slot[160];
    bk_gpu_mma_slot(em, v, "blk_r", slot, sizeof slot, &S);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_r = 0; blk_r < %d; blk_r++) var%d[blk_r] = (var%d[blk_r] * "
                "blk_qa%d[%s]); /* v%d's acc * alpha[:, None], deferred */",
                bk_gpu_mma_nregs(&em->vmma[v]), v, v, id, slot, id);
}

/* compiler fences on the A fragments blk_ra of S k steps x mt m-blocks */
static void ra_fence(BkGpuEm *em, int mt, long long S)
{
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_r = 0; blk_r < %lld; blk_r++) blk_wgmma_reg_fence((&blk_ra[0][0][0])[blk_r]);",
                S * mt * 4);
}

/* The A fragments of wgmma dot id with a from registers, blk_ra[k step][m-
 * block][4], packed from the MMA-layout registers of a's value: the
 * m16n8 n-tiles 2 s and 2 s + 1 of m-block i (registers (i nt + 2 s) * 4
 * .. + 7: c0 c1 = row g, c2 c3 = row g + 8) are a0 a1 / a2 a3 / a4 a5 / a6
 * a7 of k step s (PTX ISA 9.7.15.5.1.1.1: rows g, g + 8 x columns 2q..,
 * 2q + 8..), fenced before the wgmma.fence. */
static void rs_frags(BkGpuEm *em, int id, int mt, long long S)
{
    int Q = BK_GPU_RV_VAR(em, em->f->ins[id].opnd[0]);
    if (em->wgk[id] > 0) /* the array before the loop: live across its back edge */
        bk_gpu_line(em, "unsigned (&blk_ra)[%lld][%d][4] = blk_rk%d; /* A from the registers of "
                    "v%d (var%d), read by the group in flight until the next wait */", S, mt, id,
                    em->f->ins[id].opnd[0], Q);
    else
        bk_gpu_line(em, "unsigned blk_ra[%lld][%d][4]; /* A from the registers of v%d (var%d) */",
                    S, mt, em->f->ins[id].opnd[0], Q);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k++)", S);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int i = 0; i < %d; i++)", mt);
    bk_gpu_line(em, "        #pragma unroll");
    bk_gpu_line(em, "        for (int j = 0; j < 4; j++) {");
    bk_gpu_line(em, "            const int blk_f = (i * %d + 2 * k) * 4 + 2 * j;", em->vmma[Q].nt);
    bk_gpu_line(em, "            blk_ra[k][i][j] = blk_pack2(var%d[blk_f], var%d[blk_f + 1]);", Q, Q);
    bk_gpu_line(em, "        }");
    ra_fence(em, mt, S);
}

/* The register-A issue of dot id into var v: K / 16 k steps x mt
 * m-blocks, A from blk_ra or `arr` (the kept array), b at descriptor
 * blk_db (file comment: b's panels and k steps), scale-d the C
 * expression scale_d (of k, the k step) */
static void rs_issue(BkGpuEm *em, int id, int v, const char *arr, const char *scale_d)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    bool kmaj;
    int b = b_src(em, id, &kmaj), sb = em->wgs[b], mt = em->vmma[v].mt;
    long long N = in->type.shape[1], K = f->ins[in->opnd[0]].type.shape[1];
    long long bp = kmaj ? sb / 2 : K, bx = kmaj ? N * sb : 0, bk = kmaj ? 32 : 16 * sb;
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k++)", K / 16);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int i = 0; i < %d; i++) /* descriptors: start address + bytes / 16 */",
                mt);
    bk_gpu_line(em, "        blk_wgmma_m64n%lldk16_f32_%s_rs<%d>(&var%d[i * %lld], %s[k][i], "
                "blk_db + (unsigned long long)(k * 16 / %lld * %lld + k * 16 %% %lld * %lld / 16), %s);",
                N, ptx_type(f->ins[in->opnd[0]].type.dtype), kmaj ? 0 : 1, v, N / 2, arr,
                bp, bx / 16, bp, bk / 16, scale_d);
}

/* The deferred p v of kept dot id (qk_plan): its accumulator fenced,
 * wgmma.fence, b from its ring slot `slot` (a C expression), A from
 * blk_rk<id>, commit. */
static void qk_issue(BkGpuEm *em, int id, const char *slot)
{
    const IrFunc *f = em->f;
    bool kmaj;
    int v = em->mvar[id], L = b_src(em, id, &kmaj), sb = em->wgs[L];
    long long K = f->ins[f->ins[id].opnd[0]].type.shape[1];
    const char *t = bk_gpu_stype(f->ins[L].type.dtype);
    char arr[32];
    bk_gpu_line(em, "{ /* v%d deferred: the p v of the previous step, A from blk_rk%d, b from "
                "its ring slot */", id, id);
    em->indent++;
    reg_fence(em, v);
    bk_gpu_line(em, "blk_wgmma_fence();");
    bk_gpu_line(em, "const %s *blk_B = (const %s *)(blk_smem + %lld + (long long)(%s) * %lld);",
                t, t, em->off[L], slot, bk_gpu_pipe_slot(em, L));
    bk_gpu_line(em, "const unsigned long long blk_db = blk_wg_desc(blk_B, %lld, %lld) | %dull << 62;",
                kmaj ? 16 : K * sb, 8LL * sb, sb == 128 ? 1 : sb == 64 ? 2 : 3);
    snprintf(arr, sizeof arr, "blk_rk%d", id);
    char sd[48] = "1"; /* in place; the first real p v overwrites a zeroed acc */
    if (em->wgqz[id])
        snprintf(sd, sizeof sd, "%s != 1 || k > 0", bk_gpu_persist_it(em, em->wgk[id] - 1));
    rs_issue(em, id, v, arr, sd);
    bk_gpu_line(em, "blk_wgmma_commit();");
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_wgmma_dot(BkGpuEm *em, int id, int v)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const BkGpuMma *g = &em->vmma[v];
    const bool ar = em->areg && em->areg[id];
    bool kmaj;
    b_src(em, id, &kmaj);
    long long M = in->type.shape[0], N = in->type.shape[1];
    long long K = f->ins[in->opnd[0]].type.shape[1];
    int mt = g->mt; /* a warp's fragments of 16 rows = its warpgroup's m-blocks of 64 */
    const int sa = em->wgs[in->opnd[0]], sb = em->wgs[b_src(em, id, &kmaj)], es = esize(em, id);
    /* per operand (file comment): the descriptor's LBO and SBO, the start
     * address's advance per m-block (a), and per k step of ks = 32 / es
     * columns (16 of 2 bytes, 32 of fp8: 32 bytes either way) "(k * ks /
     * P) * X + (k * ks % P) / ks * Sk" bytes: P columns per panel, X bytes
     * per panel, Sk bytes per ks columns within one */
    const int ks = 32 / es;
    const long long alo = 16, aso = 8 * sa, am = 64 * sa, ap = sa / es, ax = M * sa, ak = 32;
    long long blo, bso, bp, bx, bk;
    char nm[64], wr[32];
    bk_gpu_wgmma_name(em, id, nm, sizeof nm);
    ab_type(em, id, wr, sizeof wr);
    if (kmaj) { /* [N][K]: as a */
        blo = 16, bso = 8 * sb, bp = sb / es, bx = N * sb, bk = 32;
    } else {    /* [K][N] (16-bit only): N-major, panels of N at LBO, 8-row groups of K at SBO */
        blo = K * sb, bso = 8 * sb, bp = K, bx = 0, bk = 16 * sb;
    }
    const int amode = sa == 128 ? 1 : sa == 64 ? 2 : 3, bmode = sb == 128 ? 1 : sb == 64 ? 2 : 3;
    dsl_buf_printf(em->o, "#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n");
    char ad[48];
    if (ar)
        snprintf(ad, sizeof ad, "a from registers");
    else
        snprintf(ad, sizeof ad, "a K-major in the %dB swizzle", sa);
    bk_gpu_line(em, "/* sm_90a: wgmma.mma_async %s, %d m-block%s of 64 rows per "
                "warpgroup (blk_warp / 4) x %lld k steps; %s, b %s-major "
                "in the %dB swizzle (PTX ISA 9.7.15.5.1.2) */", nm, mt,
                mt > 1 ? "s" : "", K / ks, ad, kmaj ? "K" : "N", sb);
    const int kq = em->wgk[id] < 0 && bk_gpu_wgmma_deferred(em, -em->wgk[id] - 1)
                       ? -em->wgk[id] - 1 : -1; /* the p v deferred behind this dot */
    if (bk_gpu_wgmma_deferred(em, id)) { /* qk_plan: issued in the next step */
        char rv[64];
        bk_gpu_line(em, "blk_wgmma_wait<0>(); /* retires the previous step's p v, issued behind "
                    "this step's q k^T (and that q k^T, retired already) */");
        keep_fence(em, id);
        rs_frags(em, id, mt, K / ks);
        bk_gpu_mrow_reg(em, em->wgq[id] - 1, rv, sizeof rv);
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) blk_qa%d[blk_s] = %s[blk_s];",
                    bk_gpu_mrow_regs(em, em->mrow[em->wgq[id] - 1]), id, rv);
        bk_gpu_line(em, "/* no p v issued here: the next step issues it behind its q k^T, after "
                    "the loop the drain (v%d's ring prefetches %d iteration(s) ahead: slot "
                    "blk_it %% %d is not refilled before) */", em->wgk[id] - 1,
                    bk_gpu_pipe_dist(em, em->wgk[id] - 1), em->stages);
        return;
    }
    if (kq >= 0) /* acc is not in flight here: rescaling it between this issue and p v's
                    would make ptxas serialize the wgmma */
        qk_rescale(em, kq);
    if (ar) {
        rs_frags(em, id, mt, K / ks);
        bk_gpu_line(em, "const unsigned long long blk_db = blk_wg_desc(blk_B, %lld, %lld) | %dull << 62;",
                    blo, bso, bmode);
    } else {
        bk_gpu_line(em, "const unsigned long long blk_da = (blk_wg_desc(blk_A, %lld, %lld) | %dull << 62) + "
                    "(unsigned long long)(blk_warp / 4 * %lld),", alo, aso, amode, mt * am / 16);
        bk_gpu_line(em, "                         blk_db = blk_wg_desc(blk_B, %lld, %lld) | %dull << 62;",
                    blo, bso, bmode);
    }
    reg_fence(em, v);
    bk_gpu_line(em, "blk_wgmma_fence();");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k++)", K / ks);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int i = 0; i < %d; i++) /* descriptors: start address + bytes / 16 */",
                mt);
    char ta[16] = "", sd[128];
    if (es == 2)
        snprintf(ta, sizeof ta, "<0, %d>", kmaj ? 0 : 1);
    bk_gpu_persist_scale_d(em, id, sd, sizeof sd); /* "1": in place */
    if (ar)
        bk_gpu_line(em, "        blk_wgmma_m64n%lldk16_f32_%s_rs<%d>(&var%d[i * %lld], blk_ra[k][i], "
                    "blk_db + (unsigned long long)(k * %d / %lld * %lld + k * %d %% %lld * %lld / %d), %s);",
                    N, ptx_type(f->ins[in->opnd[0]].type.dtype), kmaj ? 0 : 1, v, N / 2,
                    ks, bp, bx / 16, ks, bp, bk / 16, ks, sd);
    else
    bk_gpu_line(em, "        blk_wgmma_m64n%lld%s%s(&var%d[i * %lld], "
                "blk_da + (unsigned long long)(i * %lld + k * %d / %lld * %lld + "
                "k * %d %% %lld * %lld / %d), "
                "blk_db + (unsigned long long)(k * %d / %lld * %lld + k * %d %% %lld * %lld / %d), %s);",
                N, wr, ta, v, N / 2, am / 16, ks, ap, ax / 16, ks, ap, ak / 16, ks,
                ks, bp, bx / 16, ks, bp, bk / 16, ks, sd);
    bk_gpu_line(em, "blk_wgmma_commit();");
    if (kq >= 0) { /* qk_plan: the previous step's p v behind it, then S alone retired */
        char sl[128];
        int fr = em->wgk[kq] - 1, S = em->stages;
        snprintf(sl, sizeof sl, "(blk_it%d + %d + (%s == 0)) %% %d", fr, S - 1, bk_gpu_persist_it(em, fr), S);
        qk_issue(em, kq, sl);
        bk_gpu_line(em, "blk_wgmma_wait<1>(); /* the accumulator is read after the dot; the p v "
                    "just issued stays in flight under what follows (the first step's: zeros "
                    "on slot 0) */");
        reg_fence(em, v);
        return;
    }
    if (em->wgk[id] > 0) { /* keep_plan: retired by the next step's first wait or the drain */
        bk_gpu_line(em, "/* no wait: this group stays in flight across the back edge (v%d's ring "
                    "prefetches %d iteration(s) ahead, so its slot is not refilled before the "
                    "next step's wgmma.wait_group 0 retires it) */",
                    em->wgk[id] - 1, bk_gpu_pipe_dist(em, em->wgk[id] - 1));
        return;
    }
    if (em->wga[id])
        bk_gpu_line(em, "blk_wgmma_wait<1>(); /* this step's group stays in flight; the "
                    "previous step's is retired, so its ring slot may be refilled %s */",
                    em->ws ? "once released (the empty mbarrier below)" : "after the next barrier");
    else
        bk_gpu_line(em, "blk_wgmma_wait<0>(); /* the accumulator is read after the dot%s%s */",
                    ar ? "; A's registers may change after it (PTX ISA 9.7.15.7.3)" : "",
                    em->wgk[id] < 0 ? "; also retires the previous step's group kept in flight" : "");
    reg_fence(em, v);
    if (ar)
        ra_fence(em, mt, K / ks);
    if (em->wgk[id] < 0) /* the kept group's registers are the program's again */
        keep_fence(em, -em->wgk[id] - 1);
}

void bk_gpu_wgmma_drain(BkGpuEm *em, int fr)
{
    int id = em->wga[fr] ? em->wga[fr] - 1 : em->wgk[fr] - 1;
    dsl_buf_printf(em->o, "#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n");
    if (!em->wga[fr] && bk_gpu_wgmma_deferred(em, id)) { /* the last step's p v */
        char sl[64];
        snprintf(sl, sizeof sl, "(blk_it%d + %d) %% %d", fr, em->stages - 1, em->stages);
        bk_gpu_line(em, "if (%s > 0) { /* the last step's p v, deferred (qk_plan) */", bk_gpu_persist_it(em, fr));
        em->indent++;
        qk_rescale(em, id);
        qk_issue(em, id, sl);
        em->indent--;
        bk_gpu_line(em, "}");
    }
    bk_gpu_line(em, "blk_wgmma_wait<0>(); /* the last step's group: the accumulator is read "
                "after the loop */");
    if (em->wga[fr])
        reg_fence(em, em->mvar[id]);
    else
        keep_fence(em, id);
    dsl_buf_printf(em->o, "#endif\n");
}
