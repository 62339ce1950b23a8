/* gpu_layouts.c — the layout pass of the GPU emitter: which tile values
 * live distributed over the threads' registers, and which in shared memory.
 *
 * Layouts (BkGpuLay):
 *   SHARED  the tile is in shared memory, row-major; the op that makes it
 *           is a block-strided loop (thread t owns flat elements t, t + NT,
 *           ...; vector forms runs of W). Fused values (em->virt) have no
 *           storage: they are computed where they are read.
 *   MMA     the tensor-core accumulator layout, in registers: the output
 *           is split over a wm x wn grid of warps, each owning a WM x WN
 *           block, held as mt x nt fragments of fm x fn (CUDA mma.sync
 *           m16n8k16: 16x8, lane l holds rows l/4 and l/4 + 8, columns
 *           2(l%4), 2(l%4)+1; HIP MFMA 16x16x16: 16x16, lane l holds rows
 *           4(l/16) .. 4(l/16)+3 of column l%16; MFMA 32x32x8 when the
 *           warp tile holds whole 32x32 fragments: lane l holds column
 *           l%32, element j row 8(j/4) + 4(l/32) + j%4). See
 *           bk_gpu_mma_rowcol.
 *
 *   BLOCKED in registers, vID[K * W] per thread: runs of W = bk_gpu_blk_w
 *           (4 when every global access of the shape moves 16-byte
 *           vectors of 4, else 1, which keeps scalar accesses coalesced); thread t
 *           owns runs t, t + NT, ...; register k * W + j is flat element
 *           (t + k * NT) * W + j (the loop of bk_gpu_blk_open; tails skip).
 *           Global loads / stores move 16-byte vectors straight to / from
 *           registers where bk_gpu_vec_width == W.
 *
 * A tile is BLOCKED (blocked()) when it is a plain load, a stored (not
 * virtual: gpu_layout.c computes index arithmetic where read) arange or a
 * stored elementwise op, at most BK_GPU_BLK_REGS registers per thread, and
 * every read of it, directly or through fused elementwise expressions, is
 * the owner's element: a BLOCKED elementwise op of the same shape, the
 * value of a store of that shape, a whole-tile sum/max/min (those two run
 * in the blocked loop: em->inblk). Any other reader (broadcast, axis
 * reduction, scan, dot, mask, gather index, reshape, var) leaves it
 * SHARED: the fallback, decided by dropping candidates to a fixpoint. A
 * stored SHARED elementwise op of the same shape reading it runs in its
 * blocked loop and writes its shared tile there (convert blocked ->
 * shared, shared_in_blk), and a SLICE reduction reads it in place.
 *
 *   SLICE   the result of sum/max/min along the last axis of a tile of
 *           type P (slice_red_ok, bk_gpu_slice_geom): vID[K] per thread,
 *           register k the row of P's run k in P's blocked loop; stored
 *           elementwise ops over slices of one parent, and tile vars set
 *           only to such values (slice_vars: held across loop
 *           iterations). Read from registers in a slice loop or, as
 *           x[:, None], in a loop over P's registers; any other reader
 *           reads a shared copy written where the value is made (scvt:
 *           convert slice -> shared).
 *
 * A tile var is MMA (held in registers across loop iterations) when every
 * var.set (vset_ok) stores
 *   - a splat constant;
 *   - dot(a, b, var.get v): a tensor-core dot whose accumulator is a
 *     var.get used by it alone, the dot used by the var.set alone, in the
 *     same region, no other var.get / var.set of v in between: the dot
 *     accumulates in place in v's registers where it is;
 *   - a fused elementwise expression E (reg_expr) of var.gets of v (used
 *     by E alone, no var.set of v since), constants, scalars and shared
 *     tiles or broadcasts not involving v: computed per register;
 *   - E + dot(a, b): E per register, then the dot accumulates into the
 *     registers at the var.set (its operands kept live until then);
 * and at least one var.set has a dot. Those var.gets and dots are MMA.
 * A var whose var.set scales its rows (acc * alpha[:, None]) gets the
 * grid of whole rows per warp (wn = 1) when it fits, so that row values
 * held in registers (MROW, gpu_mrows.c) are read there in place.
 * A var.get stored whole to global memory, as is or through a fused
 * elementwise expression (a cast to bf16 / f16, a scale: store_of), is
 * MMA too: the epilogue computes the expression per register and writes
 * each lane's registers (column pairs as 8-byte f32 / 4-byte bf16x2 and
 * f16x2 stores on CUDA), with no shared-memory round trip.
 * Every other var.get of an MMA var is SHARED: one explicit conversion,
 * each thread writing its fragments into the value's shared tile
 * (em->cvt). Everything else not BLOCKED is SHARED. A kernel with an MMA var also
 * gets grouped program ids (em->group_m, emitted by gpu_emit.c).
 * BLKC_GPU_SMEM=1 turns the pass off (every tile SHARED, the old path).
 * The SLICE part is gpu_slices.c (bk_gpu_slices before the BLOCKED pass,
 * bk_gpu_slice_cvts after it); register values are gpu_rvals.c, row
 * values of MMA tiles (MROW) gpu_mrows.c (before SLICE; their shared
 * copies after BLOCKED).
 * Entry: bk_gpu_layouts. */
#include "gpu_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of output tiles per group of program ids in kernels whose body
 * accumulates a dot in registers (Triton's GROUP_M). */
#define GROUP_M 8

/* The most accumulator registers one thread may hold (f32 each). */
#define MAX_ACC_REGS 128

static bool dot_types_ok(const BkGpuEm *em, int id, int fn);

/* Whether dot id can accumulate in registers on this dialect. */
static bool dot_ok(const BkGpuEm *em, int id, int fn)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrType *at = &f->ins[in->opnd[0]].type, *bt = &f->ins[in->opnd[1]].type;
    if (in->type.rank != 2 || at->rank != 2 || bt->rank != 2)
        return false;
    return dot_types_ok(em, id, fn);
}

/* Whether batched dot id ([B, M, N] from [B, M, K] or [M, K] times
 * [B, K, N] or [K, N]) can accumulate in registers, a batch index at a
 * time. */
static bool dot_batch_ok(const BkGpuEm *em, int id, int fn)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrType *at = &f->ins[in->opnd[0]].type, *bt = &f->ins[in->opnd[1]].type;
    if (in->type.rank != 3 || at->rank < 2 || at->rank > 3 || bt->rank < 2 || bt->rank > 3 ||
        (at->rank == 2 && bt->rank == 2))
        return false;
    return dot_types_ok(em, id, fn);
}

/* The dtypes and the M, N, K steps of dot id (of rank 2 or 3) */
static bool dot_types_ok(const BkGpuEm *em, int id, int fn)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrType *at = &f->ins[in->opnd[0]].type, *bt = &f->ins[in->opnd[1]].type;
    int r = in->type.rank;
    /* i8 -> i32: mma.sync m16n8k32 .s8 (CUDA), v_mfma_i32_16x16x16i8
     * (HIP); else f32 results */
    bool i8 = at->dtype == DT_I8 && in->type.dtype == DT_I32;
    bool fl = (at->dtype == DT_F16 || at->dtype == DT_BF16 || at->dtype == DT_F32) &&
              in->type.dtype == DT_F32;
    /* fp8 -> f32: wgmma m64nNk32 on sm_90a alone (gpu_wgmma.c); else the
     * shared-memory FMA path */
    if ((at->dtype == DT_F8E4M3 || at->dtype == DT_F8E5M2) && in->type.dtype == DT_F32)
        return em->sm90a && bk_gpu_wgmma_f8(em, id);
    if (at->dtype != bt->dtype || !(i8 || fl))
        return false;
    /* k steps: 16 (f16 / bf16, HIP i8), 8 (f32 as 3xTF32 m16n8k8), 4 (f32
     * MFMA 16x16x4), 32 (CUDA i8) */
    bool cuda = em->dl->kind == BK_GPU_CUDA;
    int ks = at->dtype == DT_F32 ? (cuda ? 8 : 4) : i8 && cuda ? 32 : 16;
    return in->type.shape[r - 2] % 16 == 0 && in->type.shape[r - 1] % fn == 0 &&
           at->shape[at->rank - 1] % ks == 0;
}

/* Whether register dot id (dot_ok) keeps 16x16 fragments on HIP: f32
 * operands (16x16x4) and i8 (16x16x16i8; no 32x32 i8 path). */
static bool dot_f32(const BkGpuEm *em, int id)
{
    int dt = em->f->ins[em->f->ins[id].opnd[0]].type.dtype;
    return dt == DT_F32 || dt == DT_I8;
}

/* the warp grid of an accumulator (gpu_emit.h) */
static int pick_grid_nw(const BkGpuEm *em, BkGpuMma *g, long long M, long long N, bool f32,
                        bool rows, int nw, long long *costp)
{
    int fm = 16, fn = em->dl->kind == BK_GPU_CUDA ? 8 : 16;
    long long best = -1;
    for (int wm = rows ? nw : 1; wm <= nw; wm++) {
        if (nw % wm)
            continue;
        int wn = nw / wm;
        if (M % (fm * wm) || N % (fn * wn))
            continue;
        long long WM = M / wm, WN = N / wn;
        if (WM * WN / em->dl->warp > MAX_ACC_REGS)
            continue;
        /* CUDA loads B fragments two at a time (ldmatrix.x4.trans) */
        long long cost = WM / fm + WN / 16 + (WN % 16 ? 1 : 0);
        if (best < 0 || cost < best) {
            best = cost;
            g->wm = wm;
            g->wn = wn;
            g->WM = (int)WM;
            g->WN = (int)WN;
        }
    }
    if (best < 0)
        return 0;
    /* HIP: MFMA 32x32x8 where the warp tile holds whole 32x32 fragments
     * (16-bit operands; f32 dots keep 16x16x4):
     * the same operand loads per warp tile and the same CDNA2 matrix rate,
     * half the MFMA instructions issued (16K FLOP each, 16x16x16: 8K) */
    if (em->dl->kind == BK_GPU_HIP && g->WM % 32 == 0 && g->WN % 32 == 0 && !f32)
        fm = fn = 32;
    g->fm = fm;
    g->fn = fn;
    g->mt = g->WM / fm;
    g->nt = g->WN / fn;
    g->M = M;
    g->N = N;
    if (costp)
        *costp = best;
    return 1;
}

int bk_gpu_pick_grid(const BkGpuEm *em, BkGpuMma *g, long long M, long long N, bool f32,
                     bool rows)
{
    return pick_grid_nw(em, g, M, N, f32, rows, em->nw, NULL);
}

int bk_gpu_pick_batch(const BkGpuEm *em, BkGpuMma *g, long long B, long long M, long long N,
                      bool f32)
{
    long long best = -1;
    int fn = em->dl->kind == BK_GPU_CUDA ? 8 : 16;
    for (int cn = 1; cn <= N / fn; cn++)
        for (int cm = 1; cm <= M / 16; cm++) {
            if (M % cm || (M / cm) % 16 || N % cn || (N / cn) % fn)
                continue;
            for (int wb = 1; wb <= em->nw; wb++) {
                BkGpuMma t = {0};
                long long c;
                if (em->nw % wb ||
                    !pick_grid_nw(em, &t, M / cm, N / cn, f32, false, em->nw / wb, &c))
                    continue;
                /* per warp: its parts times its fragments' operand loads
                 * plus mma steps per k step */
                long long bw = (B * cm * cn + wb - 1) / wb;
                c = bw * (c + (long long)t.mt * t.nt);
                if (best < 0 || c < best) {
                    best = c;
                    *g = t;
                    g->wb = wb;
                    g->B = B * cm * cn;
                    g->cm = cm;
                    g->cn = cn;
                }
            }
        }
    return best >= 0;
}

/* Whether the layout pass is off: BLKC_GPU_SMEM=1 keeps every tile SHARED
 * (the old path; a dot is still computed in registers from and into its
 * shared tiles, dot_values). */
static bool smem_only(void)
{
    const char *e = getenv("BLKC_GPU_SMEM");
    return e && *e && strcmp(e, "0");
}

/* Whether dot id fits the register path (bk_gpu_dot_regs without the
 * switch): with dot_ok / dot_batch_ok, some part always fits (16 x fn
 * parts on one warp). */
static bool dot_fits(const BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    BkGpuMma g;
    if (in->op != IR_DOT || in->dead)
        return false;
    int fn = em->dl->kind == BK_GPU_CUDA ? 8 : 16;
    if (in->type.rank == 3)
        return dot_batch_ok(em, id, fn) &&
               bk_gpu_pick_batch(em, &g, in->type.shape[0], in->type.shape[1],
                                 in->type.shape[2], dot_f32(em, id));
    if (!dot_ok(em, id, fn))
        return false;
    return bk_gpu_pick_grid(em, &g, in->type.shape[0], in->type.shape[1], dot_f32(em, id),
                            false) ||
           bk_gpu_pick_batch(em, &g, 1, in->type.shape[0], in->type.shape[1], dot_f32(em, id));
}

bool bk_gpu_dot_regs(const BkGpuEm *em, int id)
{
    return !smem_only() && dot_fits(em, id);
}

int bk_gpu_dot_tsrc(const BkGpuEm *em, int x)
{
    const IrInstr *in = &em->f->ins[x];
    if (in->op != IR_PERMUTE || !em->virt[x] || in->type.rank != 2)
        return -1;
    return in->opnd[0];
}

/* The single user of value v, or -1 (none or several). */
static int only_user(const IrFunc *f, int v)
{
    int who = -1;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *in = &f->ins[u];
        if (in->dead)
            continue;
        int n = in->op == IR_YIELD ? in->nopnd : ir_op_nopnd[in->op];
        for (int i = 0; i < n && i < 4; i++)
            if (in->opnd[i] == v) {
                if (who >= 0 && who != u)
                    return -1;
                who = u;
            }
        if (in->view >= 0)
            for (int d = 0; d < f->views[in->view].ndims; d++)
                if (f->views[in->view].d[d].val == v)
                    return -1;
    }
    return who;
}

/* Whether the fused expression x contains a var.get of var v. */
static bool has_vget(const BkGpuEm *em, int x, int v, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (in->op == IR_VGET)
        return in->param == v;
    if (!em->virt[x] || depth > 16)
        return false;
    for (int j = 0; j < 3; j++)
        if (in->opnd[j] >= 0 && has_vget(em, in->opnd[j], v, depth + 1))
            return true;
    return false;
}

/* Whether x (read by `parent`) can be computed per register of MMA var v
 * set at var.set s: a fused elementwise tree over splat constants,
 * broadcasts and shared tiles that do not involve v, and var.gets of v
 * used by that tree alone with no var.set of v since. mark: set their
 * layout to MMA. */
static bool reg_expr(BkGpuEm *em, int x, int parent, int v, int s, const int *regof,
                     bool mark, int depth)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    if (depth > 16)
        return false;
    if (in->op == IR_VGET && in->param == v) {
        if (only_user(f, x) != parent || regof[x] != regof[s])
            return false;
        for (int u = 0; u < f->nins; u++) {
            const IrInstr *o = &f->ins[u];
            if (!o->dead && regof[u] >= 0 && o->op == IR_VSET && o->param == v &&
                u != s && em->pos[u] > em->pos[x] && em->pos[u] < em->pos[s])
                return false;
        }
        if (mark) {
            em->lay[x] = BK_LAY_MMA;
            em->mvar[x] = v;
        }
        return true;
    }
    if (!em->virt[x])
        return in->op != IR_DOT; /* a shared tile, read at (row, col) */
    if (bk_gpu_free_leaf(em, x))
        return true;
    if (in->op == IR_BCAST)
        return !has_vget(em, in->opnd[0], v, 0);
    if (!(ir_op_flags[in->op] & F_ELEM))
        return false;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0 &&
            !reg_expr(em, in->opnd[j], x, v, s, regof, mark, depth + 1))
            return false;
    return true;
}

/* The dot of `var.set v, x` that accumulates in v's registers: x itself
 * (dot(a, b, var.get v)) or the dot operand of x = add(E, dot(a, b)) /
 * add(dot(a, b), E); -1 if none. *rest = E (or -1). */
int bk_gpu_set_dot(const BkGpuEm *em, int x, int *rest)
{
    const IrFunc *f = em->f;
    const IrInstr *xi = &f->ins[x];
    *rest = -1;
    if (xi->op == IR_DOT)
        return x;
    if (xi->op != IR_ADD || !em->virt[x])
        return -1;
    for (int j = 0; j < 2; j++) {
        int d = xi->opnd[j];
        if (f->ins[d].op == IR_DOT && f->ins[d].opnd[2] < 0 && !em->virt[d]) {
            *rest = xi->opnd[1 - j];
            return d;
        }
    }
    return -1;
}

/* Whether var.set s of var v can run in registers; mark: set the layouts
 * (its dot and var.gets MMA, the dot's operands live to s). */
static bool vset_ok(BkGpuEm *em, int s, int v, const int *regof, int fn, bool mark,
                    bool *dot)
{
    const IrFunc *f = em->f;
    int x = f->ins[s].opnd[0];
    const IrInstr *xi = &f->ins[x];
    if (xi->op == IR_CONST && em->virt[x])
        return true; /* splat constant */
    int rest, d = bk_gpu_set_dot(em, x, &rest);
    if (d >= 0) {
        if (!dot_ok(em, d, fn) || only_user(f, d) != (d == x ? s : x) || regof[d] != regof[s])
            return false;
        const IrInstr *di = &f->ins[d];
        if (d == x) { /* dot(a, b, var.get v), accumulating where it is */
            int g = di->opnd[2];
            if (g < 0 || f->ins[g].op != IR_VGET || !reg_expr(em, g, d, v, s, regof, mark, 0))
                return false;
            for (int u = 0; u < f->nins; u++) /* no other read of v meanwhile */
                if (u != g && !f->ins[u].dead && regof[u] >= 0 && f->ins[u].op == IR_VGET &&
                    f->ins[u].param == v && em->pos[u] > em->pos[g] && em->pos[u] < em->pos[s])
                    return false;
        } else if (has_vget(em, di->opnd[0], v, 0) || has_vget(em, di->opnd[1], v, 0) ||
                   !reg_expr(em, rest, x, v, s, regof, mark, 0)) {
            return false;
        }
        *dot = true;
        if (mark) {
            em->lay[d] = BK_LAY_MMA;
            em->mvar[d] = v;
            em->mvar[s] = v;
            /* the dot runs at the var.set: its operands live until then */
            for (int j = 0; j < 2; j++) {
                int r = di->opnd[j];
                while (em->alias[r] != r)
                    r = em->alias[r];
                if (em->last[r] < em->pos[s])
                    em->last[r] = em->pos[s];
            }
        }
        return true;
    }
    /* a fused elementwise expression of the var (acc = acc * alpha) */
    if (!em->virt[x] || !(ir_op_flags[xi->op] & F_ELEM) || regof[x] != regof[s] ||
        !reg_expr(em, x, s, v, s, regof, mark, 0))
        return false;
    if (mark)
        em->mvar[s] = v;
    return true;
}

/* Whether t is an fp8 tile whose rows are a wgmma swizzle span (32, 64
 * or a multiple of 128 bytes): gpu_wgmma.c stores it by blk_wgs, never
 * blk_swz. */
static bool swz_f8(const IrType *t)
{
    return t->rank == 2 && (t->dtype == DT_F8E4M3 || t->dtype == DT_F8E5M2) &&
           (t->shape[1] == 32 || t->shape[1] == 64 || t->shape[1] % 128 == 0);
}

/* The swizzle of a [R][C] tile of 16-bit elements: W = 8 per 16-byte
 * chunk, nc = C / W chunks per row (a power of 2, at least 2), rpl rows
 * per 128-byte line of banks, phase mask pm. 0 if it does not apply. */
static int swz_geom(const IrType *t, int *C, int *rpl, int *pm)
{
    if (t->rank != 2 || dsl_dtype_bytes(t->dtype) != 2 || t->shape[1] % 8)
        return 0;
    int nc = (int)(t->shape[1] / 8);
    if (nc < 2 || (nc & (nc - 1)))
        return 0;
    *C = (int)t->shape[1];
    *rpl = nc >= 8 ? 1 : 8 / nc;
    *pm = (nc < 8 ? nc : 8) - 1;
    return 1;
}

/* Whether dot u was put on the register path (bk_gpu_layouts): an MMA
 * var's, or a dot value with its pseudo-var's registers. */
static bool reg_dot(const BkGpuEm *em, int u)
{
    return em->lay[u] == BK_LAY_MMA || em->vmma[BK_GPU_DOT_VAR(em, u)].on;
}

/* Whether load or stored elementwise op x (its one write: the load's
 * copy, assign() in gpu_emit.c) can be stored swizzled: its own storage, read only by
 * register dots (bk_gpu_dot_regs), directly or as the transposed operand
 * of a fused permute (bk_gpu_dot_tsrc), which read it through ldmatrix. */
static bool swz_ok(const BkGpuEm *em, int x)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    int C, rpl, pm;
    if ((in->op != IR_LOAD && !(ir_op_flags[in->op] & F_ELEM)) || em->alias[x] != x ||
        em->var_of[x] >= 0 || em->virt[x] ||
        (!swz_geom(&in->type, &C, &rpl, &pm) && !swz_f8(&in->type)))
        return false;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (o->dead)
            continue;
        int k = o->op == IR_YIELD ? o->nopnd : ir_op_nopnd[o->op];
        bool reads = false;
        for (int i = 0; i < k && i < 4; i++)
            reads |= o->opnd[i] == x;
        if (o->view >= 0)
            for (int d = 0; d < f->views[o->view].ndims; d++)
                reads |= f->views[o->view].d[d].val == x;
        if (reads && !(o->op == IR_DOT && reg_dot(em, u) &&
                       (o->opnd[0] == x || o->opnd[1] == x) && o->opnd[2] != x) &&
            !(o->op == IR_PERMUTE && bk_gpu_dot_tsrc(em, u) == x))
            return false;
        if (o->op == IR_RESHAPE && o->opnd[0] == x)
            return false;
    }
    return true;
}

void bk_gpu_swz_idx(const BkGpuEm *em, int v, const char *e, char *buf, size_t n)
{
    int C, rpl, pm;
    const IrType *t = &em->f->ins[v].type;
    if (em->wgl && em->wgl[v]) /* a wgmma operand (gpu_wgmma.c) */
        snprintf(buf, n, "blk_wgs(%s, %lld, %lld, %d, %d, %d)", e, (long long)t->shape[1],
                 (long long)t->shape[0], em->wgl[v] - 1, em->wgs[v], dsl_dtype_bytes(t->dtype));
    else if (em->swz && em->swz[v] && swz_geom(t, &C, &rpl, &pm))
        snprintf(buf, n, "blk_swz(%s, %d, 8, %d, %d)", e, C, rpl, pm);
    else
        snprintf(buf, n, "%s", e);
}

int bk_gpu_swz_cols(const BkGpuEm *em, int v)
{
    int C, rpl, pm;
    const IrType *t = &em->f->ins[v].type;
    if ((em->wgl && em->wgl[v]) || !em->swz || !em->swz[v] || !swz_geom(t, &C, &rpl, &pm))
        return 0;
    return C;
}

/* Whether a dot var v's var.sets accumulate has f32 operands. */
static bool var_f32(const BkGpuEm *em, int v, const int *regof)
{
    const IrFunc *f = em->f;
    for (int s = 0; s < f->nins; s++) {
        int rest, d;
        if (f->ins[s].dead || regof[s] < 0 || f->ins[s].op != IR_VSET || f->ins[s].param != v)
            continue;
        d = bk_gpu_set_dot(em, f->ins[s].opnd[0], &rest);
        if (d >= 0 && dot_f32(em, d))
            return true;
    }
    return false;
}

/* Whether the fused expression x reads a row broadcast x[:, None] of an
 * [M, 1] tile onto the M x N tile. */
static bool has_rowbcast(const BkGpuEm *em, int x, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (!em->virt[x] || depth > 16 || in->op == IR_CONST)
        return false;
    if (in->op == IR_BCAST) {
        const IrType *a = &em->f->ins[in->opnd[0]].type;
        return a->rank == 2 && a->shape[1] == 1 && in->type.rank == 2 && in->type.shape[1] > 1;
    }
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0 && has_rowbcast(em, in->opnd[j], depth + 1))
            return true;
    return false;
}

/* Whether a var.set of var v scales its rows (acc * alpha[:, None], the
 * online softmax): its warps should own whole rows, so that a row value
 * held in registers (gpu_mrows.c) is read there without shared memory. */
static bool var_rows(const BkGpuEm *em, int v, const int *regof)
{
    const IrFunc *f = em->f;
    for (int s = 0; s < f->nins; s++)
        if (!f->ins[s].dead && regof[s] >= 0 && f->ins[s].op == IR_VSET &&
            f->ins[s].param == v && has_rowbcast(em, f->ins[s].opnd[0], 0))
            return true;
    return false;
}

/* Whether var v can be MMA (at least one var.set accumulates a dot). */
static bool var_mma(BkGpuEm *em, int v, const int *regof, int fn, bool mark)
{
    const IrFunc *f = em->f;
    bool any_dot = false;
    for (int s = 0; s < f->nins; s++) {
        const IrInstr *in = &f->ins[s];
        if (in->dead || regof[s] < 0 || in->op != IR_VSET || in->param != v)
            continue;
        if (!vset_ok(em, s, v, regof, fn, mark, &any_dot))
            return false;
    }
    return any_dot;
}

/* Whether the store expression x has only var.gets, constants, scalars,
 * broadcasts (x[:, None] of a slice reads its shared copy at the
 * register's row; gpu_sync.c sees those reads) and fused elementwise ops;
 * other shared tiles there are left to the shared path. */
static bool plain_expr(const BkGpuEm *em, int x, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (depth > 16)
        return false;
    if (in->op == IR_VGET || in->op == IR_CONST || in->type.rank == 0 ||
        bk_gpu_free_leaf(em, x))
        return true;
    if (em->virt[x] && in->op == IR_BCAST)
        return true;
    if (!em->virt[x] || !(ir_op_flags[in->op] & F_ELEM))
        return false;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0 && !plain_expr(em, in->opnd[j], depth + 1))
            return false;
    return true;
}

/* The store that writes var.get g of MMA var v from the registers, -1 if
 * none: g, or a fused elementwise expression of it (a cast to bf16 / f16,
 * a scale; reg_expr: per register, no var.set of v before the store), the
 * only value of a store (not its mask) over the whole M x N tile in the
 * same region, its other leaves constants and scalars (plain_expr).
 * *x = the stored value. mark: its var.gets MMA. The store
 * then writes each lane's registers directly (bk_gpu_mma_store): no
 * shared tile. */
static int store_of(BkGpuEm *em, int g, int v, const int *regof, int *x, bool mark)
{
    const IrFunc *f = em->f;
    int r = g, u = only_user(f, g);
    for (int d = 0; d < 16 && u >= 0 && em->virt[u] && (ir_op_flags[f->ins[u].op] & F_ELEM);
         d++) {
        r = u;
        u = only_user(f, u);
    }
    if (u < 0 || f->ins[u].op != IR_STORE || f->ins[u].opnd[0] != r ||
        f->ins[u].opnd[1] == r || f->ins[u].view < 0 || regof[u] != regof[g])
        return -1;
    IrType vt;
    memset(&vt, 0, sizeof vt);
    ir_view_shape(f, &f->views[f->ins[u].view], &vt);
    if (ir_numel(&vt) != em->vmma[v].M * em->vmma[v].N || vt.rank < 1 ||
        vt.shape[vt.rank - 1] != em->vmma[v].N)
        return -1;
    if (r == g) {
        for (int s = 0; s < f->nins; s++)
            if (!f->ins[s].dead && f->ins[s].op == IR_VSET && f->ins[s].param == v &&
                em->pos[s] > em->pos[g] && em->pos[s] < em->pos[u])
                return -1;
        if (mark) {
            em->lay[g] = BK_LAY_MMA;
            em->mvar[g] = v;
        }
    } else if (!plain_expr(em, r, 0) || !reg_expr(em, r, u, v, u, regof, false, 0)) {
        return -1;
    } else if (mark) {
        reg_expr(em, r, u, v, u, regof, true, 0);
        em->lay[r] = BK_LAY_MMA; /* the store's value: read per register */
        em->mvar[r] = v;
    }
    *x = r;
    return u;
}

/* ------------------------------------------------------------ blocked */

int bk_gpu_blk_w(const BkGpuEm *em, const IrType *t)
{
    const IrFunc *f = em->f;
    if (t->rank == 0 || t->shape[t->rank - 1] % 4)
        return 1;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (o->dead || (o->op != IR_LOAD && o->op != IR_STORE) || o->view < 0)
            continue;
        IrType vt;
        memset(&vt, 0, sizeof vt);
        ir_view_shape(f, &f->views[o->view], &vt);
        if (ir_shape_eq(o->op == IR_LOAD ? &o->type : &vt, t) && bk_gpu_vec_width(em, u) != 4)
            return 1; /* runs of 4 read one by one: 16-byte lane strides */
    }
    return 4;
}

/* Whether the expression of x (through fused elementwise operands) reads
 * a SLICE value directly (not through a broadcast). */
static bool reads_slice(const BkGpuEm *em, int x, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (depth > 8 || !(ir_op_flags[in->op] & F_ELEM))
        return false;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++) {
        int o = in->opnd[j];
        if (o >= 0 && (bk_gpu_slice_root(em, o) >= 0 ||
                       (em->virt[o] && reads_slice(em, o, depth + 1))))
            return true;
    }
    return false;
}

/* Whether a tile op may produce a BLOCKED value: a plain (unpipelined,
 * unswizzled) load, an arange or a stored elementwise op with storage of
 * its own. */
static bool blk_cand(const BkGpuEm *em, int x, const int *regof)
{
    const IrInstr *in = &em->f->ins[x];
    if (in->dead || regof[x] < 0 || in->type.rank == 0 || em->lay[x] != BK_LAY_SHARED ||
        em->virt[x] || em->alias[x] != x || em->var_of[x] >= 0 || em->cvt[x] ||
        em->swz[x] || BK_GPU_RV(em, x) || bk_gpu_blk_regs(em, &in->type) > BK_GPU_BLK_REGS)
        return false;
    if (in->op == IR_LOAD)
        return em->pipe[x] < 0;
    if (in->op == IR_ARANGE)
        return true;
    return (ir_op_flags[in->op] & F_ELEM) != 0 && !reads_slice(em, x, 0);
}

int bk_gpu_reads_of(const IrFunc *f, const IrInstr *o, int w)
{
    int k = o->op == IR_YIELD ? o->nopnd : ir_op_nopnd[o->op], reads = 0;
    for (int i = 0; i < k && i < 4; i++)
        reads |= o->opnd[i] == w;
    if (o->view >= 0)
        for (int d = 0; d < f->views[o->view].ndims; d++)
            if (f->views[o->view].d[d].val == w)
                return -1;
    return reads;
}

/* Whether stored elementwise op u may keep its SHARED tile but run in the
 * blocked loop of its type, reading BLOCKED operands from registers and
 * writing its shared tile there (the conversion blocked -> shared). */
static bool shared_in_blk(const BkGpuEm *em, int u)
{
    const IrInstr *in = &em->f->ins[u];
    return em->lay[u] == BK_LAY_SHARED && !em->virt[u] && em->alias[u] == u &&
           em->var_of[u] < 0 && !em->cvt[u] && !BK_GPU_RV(em, u) && (ir_op_flags[in->op] & F_ELEM) &&
           in->type.rank > 0 && bk_gpu_blk_regs(em, &in->type) <= BK_GPU_BLK_REGS;
}

/* Whether every read of w (x itself, or a fused elementwise expression
 * over it) is at the reader's own element in x's blocked loop: a BLOCKED
 * elementwise op of the same shape, the value of a store of that shape or
 * a whole-tile reduction (both then run in the blocked loop: inblk). */
static bool blk_reads_ok(const BkGpuEm *em, int x, int w, const int *regof, int depth)
{
    const IrFunc *f = em->f;
    const IrType *t = &f->ins[x].type;
    if (depth > 8)
        return false;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (o->dead || regof[u] < 0)
            continue;
        int reads = bk_gpu_reads_of(f, o, w);
        if (reads < 0)
            return false; /* a gather index */
        if (!reads)
            continue;
        if ((ir_op_flags[o->op] & F_ELEM) && ir_shape_eq(&o->type, t)) {
            if (em->virt[u] ? !blk_reads_ok(em, x, u, regof, depth + 1)
                            : !(em->lay[u] == BK_LAY_BLOCKED || shared_in_blk(em, u)))
                return false;
            continue;
        }
        if (o->op == IR_STORE && o->opnd[0] == w && o->opnd[1] != w) {
            IrType vt;
            memset(&vt, 0, sizeof vt);
            ir_view_shape(f, &f->views[o->view], &vt);
            if (ir_shape_eq(&vt, t))
                continue;
        }
        if (o->op == IR_REDUCE && o->type.rank == 0 && o->attr != RED_ARGMAX &&
            o->attr != RED_ARGMIN)
            continue;
        if (o->op == IR_REDUCE && em->lay[u] == BK_LAY_SLICE)
            continue; /* reads its operand in the operand's blocked loop */
        return false;
    }
    return true;
}

/* Marks stores and reductions whose value reads BLOCKED tiles (inblk). */
static bool blk_reads_any(const BkGpuEm *em, int w, int depth)
{
    const IrInstr *in = &em->f->ins[w];
    if (em->lay[w] == BK_LAY_BLOCKED)
        return true;
    if (!em->virt[w] || !(ir_op_flags[in->op] & F_ELEM) || depth > 8)
        return false;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0 && blk_reads_any(em, in->opnd[j], depth + 1))
            return true;
    return false;
}

/* BLOCKED: start from every candidate, drop those read any other way
 * until nothing changes (dropping one may disqualify its operands). */
static void blocked(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    for (int x = 0; x < f->nins; x++)
        if (blk_cand(em, x, regof))
            em->lay[x] = BK_LAY_BLOCKED;
    for (bool changed = true; changed;) {
        changed = false;
        for (int x = 0; x < f->nins; x++)
            if (em->lay[x] == BK_LAY_BLOCKED && !blk_reads_ok(em, x, x, regof, 0)) {
                em->lay[x] = BK_LAY_SHARED;
                changed = true;
            }
    }
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (!o->dead && regof[u] >= 0 && (o->op == IR_STORE || o->op == IR_REDUCE) &&
            o->opnd[0] >= 0 && f->ins[o->opnd[0]].type.rank > 0)
            em->inblk[u] = blk_reads_any(em, o->opnd[0], 0);
        if (!o->dead && regof[u] >= 0 && shared_in_blk(em, u))
            for (int j = 0; j < 3 && j < ir_op_nopnd[o->op]; j++)
                if (o->opnd[j] >= 0 && ir_shape_eq(&f->ins[o->opnd[j]].type, &o->type))
                    em->inblk[u] |= blk_reads_any(em, o->opnd[j], 0);
    }
}

/* The register grids of the dots that are not an mma var's: every dot
 * that fits is computed in registers (bk_gpu_mma_dot_value), in one grid
 * of every warp or a part at a time (batched, or a tile no such grid
 * covers). */
static void dot_values(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    for (int i = 0; i < f->nins; i++) {
        const IrInstr *in = &f->ins[i];
        if (regof[i] < 0 || em->lay[i] == BK_LAY_MMA || !dot_fits(em, i))
            continue;
        BkGpuMma *g = &em->vmma[BK_GPU_DOT_VAR(em, i)];
        if (in->type.rank == 3) /* batched: parts per warp group */
            bk_gpu_pick_batch(em, g, in->type.shape[0], in->type.shape[1], in->type.shape[2],
                              dot_f32(em, i));
        else if (!bk_gpu_pick_grid(em, g, in->type.shape[0], in->type.shape[1],
                                   dot_f32(em, i), false)) /* a part at a time */
            bk_gpu_pick_batch(em, g, 1, in->type.shape[0], in->type.shape[1], dot_f32(em, i));
        g->on = true;
    }
}

int bk_gpu_layouts(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    int n = f->nins;
    em->lay = calloc((size_t)n + 1, sizeof(int));
    em->cvt = calloc((size_t)n + 1, sizeof(bool));
    em->vmma = calloc((size_t)f->nvars + (size_t)n + 1, sizeof(BkGpuMma));
    em->mvar = malloc(sizeof(int) * ((size_t)n + 1));
    em->swz = calloc((size_t)n + 1, sizeof(bool));
    em->inblk = calloc((size_t)n + 1, sizeof(bool));
    em->spar = malloc(sizeof(int) * ((size_t)n + 1));
    em->scvt = calloc((size_t)n + 1, sizeof(bool));
    em->vsl = malloc(sizeof(int) * ((size_t)f->nvars + 1));
    for (int v = 0; em->vsl && v < f->nvars; v++)
        em->vsl[v] = -1;
    if (!em->lay || !em->cvt || !em->vmma || !em->mvar || !em->swz || !em->inblk ||
        !em->spar || !em->scvt || !em->vsl) {
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    em->group_m = 0;
    for (int i = 0; i < n; i++) {
        em->lay[i] = f->ins[i].type.rank > 0 ? BK_LAY_SHARED : BK_LAY_NONE;
        em->mvar[i] = -1;
        em->spar[i] = -1;
    }
    if (smem_only()) {
        dot_values(em, regof);
        return bk_gpu_mrows(em, NULL); /* none */
    }
    int fn = em->dl->kind == BK_GPU_CUDA ? 8 : 16;
    for (int v = 0; v < f->nvars; v++) {
        const IrType *t = &f->vars[v].type;
        if (t->rank != 2 || t->dtype != DT_F32 || !var_mma(em, v, regof, fn, false))
            continue;
        bool f32 = var_f32(em, v, regof);
        /* wgmma's accumulator (gpu_wgmma.c): every warp whole rows */
        bool wg = bk_gpu_wgmma_var(em, v) &&
                  bk_gpu_pick_grid(em, &em->vmma[v], t->shape[0], t->shape[1], f32, true);
        if (!wg && !(var_rows(em, v, regof) &&
              bk_gpu_pick_grid(em, &em->vmma[v], t->shape[0], t->shape[1], f32, true)) &&
            !bk_gpu_pick_grid(em, &em->vmma[v], t->shape[0], t->shape[1], f32, false))
            continue;
        em->vmma[v].on = true;
        em->group_m = GROUP_M; /* a dot loop: grouped program ids */
        var_mma(em, v, regof, fn, true);
        for (int i = 0; i < n; i++) {
            const IrInstr *in = &f->ins[i];
            if (!in->dead && regof[i] >= 0 && in->op == IR_VGET && in->param == v &&
                em->lay[i] != BK_LAY_MMA) {
                int x;
                if (store_of(em, i, v, regof, &x, true) >= 0) /* the epilogue, from registers */
                    continue;
                em->cvt[i] = true; /* mma -> shared */
                em->var_of[i] = -1;
            }
        }
    }
    /* the other register dots: computed in registers, then converted to
     * their shared tile (bk_gpu_mma_dot_value); operands swizzled */
    dot_values(em, regof);
    if (bk_gpu_reg_values(em, regof) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        const IrInstr *in = &f->ins[i];
        if (regof[i] < 0 || in->dead || in->op != IR_DOT || !reg_dot(em, i))
            continue;
        for (int j = 0; j < 2 && em->dl->kind == BK_GPU_CUDA; j++) {
            int x = in->opnd[j];
            if (bk_gpu_dot_tsrc(em, x) >= 0)
                x = bk_gpu_dot_tsrc(em, x);
            em->swz[x] |= swz_ok(em, x);
        }
    }
    for (int i = 0; i < n; i++) { /* parts of A's rows / B's columns: ldmatrix from an offset */
        const IrInstr *in = &f->ins[i];
        const BkGpuMma *g = &em->vmma[BK_GPU_DOT_VAR(em, i)];
        if (regof[i] < 0 || in->dead || in->op != IR_DOT || em->lay[i] == BK_LAY_MMA || !g->on)
            continue;
        if (g->cm > 1)
            em->swz[in->opnd[0]] = false;
        if (g->cn > 1) {
            int b = bk_gpu_dot_tsrc(em, in->opnd[1]);
            em->swz[b >= 0 ? b : in->opnd[1]] = false;
        }
    }
    if (bk_gpu_mrows(em, regof) < 0)
        return -1;
    bk_gpu_slices(em, regof);
    blocked(em, regof);
    bk_gpu_slice_cvts(em, regof);
    bk_gpu_mrow_cvts(em, regof);
    for (int i = 0; i < n; i++) /* only shared tiles are stored swizzled */
        em->swz[i] &= em->lay[i] == BK_LAY_SHARED;
    return bk_gpu_wgmma_plan(em);
}

void bk_gpu_mma_rowcol(const BkGpuEm *em, int v, const char *mt, const char *nt,
                       const char *i, char *row, size_t rn, char *col, size_t cn)
{
    const BkGpuMma *g = &em->vmma[v];
    if (em->dl->kind == BK_GPU_CUDA) {
        snprintf(row, rn, "(blk_wr%d + (%s) * 16 + (blk_lane >> 2) + ((%s) >> 1) * 8)",
                 v, mt, i);
        snprintf(col, cn, "(blk_wc%d + (%s) * 8 + (blk_lane & 3) * 2 + ((%s) & 1))",
                 v, nt, i);
    } else if (g->fm == 32) { /* D[m][n]: lane n + 32 ((m / 4) % 2), element 4 (m / 8) + m % 4 */
        snprintf(row, rn, "(blk_wr%d + (%s) * 32 + ((%s) >> 2) * 8 + (blk_lane >> 5) * 4 + ((%s) & 3))",
                 v, mt, i, i);
        snprintf(col, cn, "(blk_wc%d + (%s) * 32 + (blk_lane & 31))", v, nt);
    } else {
        snprintf(row, rn, "(blk_wr%d + (%s) * 16 + (blk_lane >> 4) * 4 + (%s))", v,
                 mt, i);
        snprintf(col, cn, "(blk_wc%d + (%s) * 16 + (blk_lane & 15))", v, nt);
    }
}
