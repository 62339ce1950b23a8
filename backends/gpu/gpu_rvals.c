/* gpu_rvals.c — register values: tiles computed from a register dot in
 * that dot's own MMA layout and kept there, as Triton keeps attention's
 * score tile (s = q kᵀ; where / max / exp2 / sum over it; p fed to the
 * next dot) in the registers of the mma accumulator.
 *
 * A register value x has the registers of pseudo-var BK_GPU_RV_VAR(em, x)
 * (var<P>[...], storage type), laid out like its root: the dot value
 * (bk_gpu_dot_regs, not an MMA var's) it is computed from. Roots are the
 * dot values with f32 results; then, to a fixpoint, every stored
 * elementwise op of the root's shape whose expression (through fused
 * operands) reads register values of one root, and otherwise only
 * constants, scalars, broadcasts of non-register values and shared tiles
 * (read at the register's (row, col)). Its readers:
 *   - register values of the same root, directly or through fused
 *     elementwise expressions: per register, no shared memory;
 *   - a sum / max / min along the last axis (f32): per lane over its
 *     registers of each row, then the lanes that share the row (shuffles),
 *     into each lane's row registers (em->rred; layout MROW, gpu_mrows.c)
 *     — when the root's warps each own whole rows (wn = 1);
 *   - operand a of a register dot (CUDA, f16 / bf16): the m16n8 accumulator
 *     pair (row g | g + 8, columns 2q, 2q + 1) of n-tiles 2k, 2k + 1 is the
 *     m16k16 A fragment a0..a3 of k step k (PTX ISA, mma.m16n8k16), so
 *     the dot packs its a fragments from the registers (em->areg) — when
 *     both dots' warps own the same whole rows; the FMA path of
 *     pre-sm_80 code reads a shared copy written only there (em->rfb);
 * any other reader reads its shared tile, written from the registers
 * where the value is made (em->rcvt: convert mma -> shared). A root whose
 * values have a reduction or dot reader gets the wm = warps, wn = 1 grid
 * (and so does the dot taking a from it) when that grid fits.
 * Values with no shared tile have layout REG. BLKC_GPU_NORV=1 turns the
 * pass off (dot values then go through their shared tiles, as before).
 * Entry: bk_gpu_reg_values (from bk_gpu_layouts). */
#include "gpu_emit.h"

#include <stdlib.h>
#include <string.h>

bool bk_gpu_same_grid(const BkGpuEm *em, int a, int b)
{
    const BkGpuMma *x = &em->vmma[a], *y = &em->vmma[b];
    return x->on && y->on && x->wm == y->wm && x->wn == y->wn && x->WM == y->WM &&
           x->WN == y->WN && x->fm == y->fm && x->fn == y->fn && x->M == y->M && x->N == y->N;
}

/* The grid of dot d's registers: its MMA var's, or its pseudo-var's. */
static BkGpuMma *dot_grid(BkGpuEm *em, int d)
{
    return em->lay[d] == BK_LAY_MMA ? &em->vmma[em->mvar[d]] : &em->vmma[BK_GPU_DOT_VAR(em, d)];
}

static bool dot_f32(const BkGpuEm *em, int d)
{
    return em->f->ins[em->f->ins[d].opnd[0]].type.dtype == DT_F32;
}

/* The root of the register values expression x reads (through fused
 * operands): >= 0 the root, -1 none, -2 not computable per register. */
static int tree(const BkGpuEm *em, int x, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (depth > 16)
        return -2;
    if (in->type.rank == 0)
        return -1;
    if (em->rroot[x] >= 0)
        return em->rroot[x];
    if (!em->virt[x]) /* a tile read at (row, col); not another register layout */
        return em->lay[x] == BK_LAY_MMA ? -2 : -1;
    if (bk_gpu_free_leaf(em, x))
        return -1;
    if (in->op == IR_BCAST)
        return tree(em, in->opnd[0], depth + 1) == -1 ? -1 : -2;
    if (!(ir_op_flags[in->op] & F_ELEM))
        return -2;
    int r = -1;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++) {
        if (in->opnd[j] < 0)
            continue;
        int t = tree(em, in->opnd[j], depth + 1);
        if (t == -2 || (t >= 0 && r >= 0 && t != r))
            return -2;
        if (t >= 0)
            r = t;
    }
    return r;
}

static bool cand(const BkGpuEm *em, int x, const int *regof)
{
    const IrInstr *in = &em->f->ins[x];
    return !in->dead && regof[x] >= 0 && (ir_op_flags[in->op] & F_ELEM) && !em->virt[x] &&
           in->type.rank == 2 && em->lay[x] == BK_LAY_SHARED && em->alias[x] == x &&
           em->var_of[x] < 0 && !em->cvt[x] && em->rroot[x] < 0;
}

/* reader kinds */
enum { RD_REG, RD_RED, RD_DOTA, RD_OTHER };

/* The dot taking register value x (dtype f16 / bf16) as operand a from
 * registers, if u is one (CUDA). */
static bool dota(const BkGpuEm *em, int x, int u)
{
    const IrFunc *f = em->f;
    const IrInstr *o = &f->ins[u], *xi = &f->ins[x];
    if (em->dl->kind != BK_GPU_CUDA || o->op != IR_DOT || o->opnd[0] != x ||
        o->opnd[1] == x || o->opnd[2] == x || em->virt[x] ||
        (xi->type.dtype != DT_F16 && xi->type.dtype != DT_BF16))
        return false;
    return em->lay[u] == BK_LAY_MMA ||
           (em->vmma[BK_GPU_DOT_VAR(em, u)].on && em->vmma[BK_GPU_DOT_VAR(em, u)].wb == 0);
}

/* Whether reduction u of w can run from the registers of root (as far as
 * u itself goes: the root's grid is checked apart). */
static bool red_ok(const BkGpuEm *em, int u, int w, int root)
{
    const IrFunc *f = em->f;
    const IrInstr *o = &f->ins[u];
    return o->op == IR_REDUCE && o->opnd[0] == w && o->axis == 1 && o->type.rank == 1 &&
           f->ins[w].type.rank == 2 &&
           (o->attr == RED_SUM || o->attr == RED_MAX || o->attr == RED_MIN) &&
           o->type.dtype == DT_F32 && f->ins[w].type.dtype == DT_F32 && tree(em, w, 0) == root;
}

/* What kind of reader u of w (x's value or a fused expression over it)
 * is; rows: the roots whose warps own whole rows (NULL: any may). */
static int reader(const BkGpuEm *em, int x, int w, int u, int root, const int *regof,
                  const bool *rows, int depth)
{
    const IrFunc *f = em->f;
    const IrInstr *o = &f->ins[u];
    if (bk_gpu_reads_of(f, o, w) < 0 || depth > 16)
        return RD_OTHER;
    if (em->virt[u] && (ir_op_flags[o->op] & F_ELEM) && o->op != IR_CONST) {
        int k = RD_REG;
        for (int v = 0; v < f->nins; v++) { /* every reader of the fused op */
            if (f->ins[v].dead || regof[v] < 0 || !bk_gpu_reads_of(f, &f->ins[v], u))
                continue;
            int r = reader(em, x, u, v, root, regof, rows, depth + 1);
            if (r == RD_OTHER || r == RD_DOTA)
                return RD_OTHER;
            if (r == RD_RED)
                k = RD_RED;
        }
        return k;
    }
    if (!em->virt[u] && em->rroot[u] == root)
        return RD_REG;
    if (red_ok(em, u, w, root) && (!rows || rows[root]))
        return RD_RED;
    if (w == x && dota(em, x, u))
        return RD_DOTA;
    return RD_OTHER;
}

/* Whether dot u's warps own the same whole rows as root's. */
static bool same_rows(BkGpuEm *em, int u, int root)
{
    const BkGpuMma *a = dot_grid(em, u), *r = &em->vmma[BK_GPU_DOT_VAR(em, root)];
    return a->wn == 1 && r->wn == 1 && a->wm == r->wm && a->WM == r->WM && a->fm == r->fm;
}

/* The phases over every (register value x, reader u): which roots want
 * whole rows; the grids of the dots taking a from them; the marks. */
enum { PH_WANT, PH_ROWS, PH_MARK };

static void each_read(BkGpuEm *em, const int *regof, int ph, bool *want)
{
    const IrFunc *f = em->f;
    for (int x = 0; x < f->nins; x++) {
        int r = em->rroot[x];
        if (r < 0)
            continue;
        for (int u = 0; u < f->nins; u++) {
            const IrInstr *o = &f->ins[u];
            if (o->dead || regof[u] < 0 || !bk_gpu_reads_of(f, o, x))
                continue;
            int kind = reader(em, x, x, u, r, regof, ph == PH_MARK ? want : NULL, 0);
            if (ph == PH_WANT) {
                want[r] |= kind == RD_RED || kind == RD_DOTA;
            } else if (ph == PH_ROWS) {
                if (kind != RD_DOTA || !want[r] || o->type.shape[0] != f->ins[r].type.shape[0])
                    continue;
                BkGpuMma *g = dot_grid(em, u), t = *g;
                if (bk_gpu_pick_grid(em, &t, o->type.shape[0], o->type.shape[1], dot_f32(em, u),
                                     true))
                    *g = t;
            } else if (kind == RD_RED) {
                /* marked below, with those of fused operands */
            } else if (kind == RD_DOTA && want[r] && same_rows(em, u, r)) {
                em->areg[u] = em->rfb[x] = true;
            } else if (kind != RD_REG) {
                em->rcvt[x] = true;
            }
        }
    }
}

int bk_gpu_reg_values(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    int n = f->nins;
    em->rroot = malloc(sizeof(int) * ((size_t)n + 1));
    em->rcvt = calloc((size_t)n + 1, sizeof(bool));
    em->rfb = calloc((size_t)n + 1, sizeof(bool));
    em->rred = calloc((size_t)n + 1, sizeof(bool));
    em->areg = calloc((size_t)n + 1, sizeof(bool));
    em->rowc = calloc((size_t)n + 1, sizeof(int));
    bool *want = calloc((size_t)n + 1, sizeof(bool));
    if (!em->rroot || !em->rcvt || !em->rfb || !em->rred || !em->areg || !em->rowc || !want) {
        free(want);
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    const char *off = getenv("BLKC_GPU_NORV"); /* the old path, for comparisons */
    bool on = !(off && *off && strcmp(off, "0"));
    for (int i = 0; i < n; i++) {
        const IrInstr *in = &f->ins[i];
        em->rroot[i] = -1;
        if (on && !in->dead && regof[i] >= 0 && in->op == IR_DOT && em->lay[i] != BK_LAY_MMA &&
            in->type.dtype == DT_F32 && em->vmma[BK_GPU_DOT_VAR(em, i)].on &&
            em->vmma[BK_GPU_DOT_VAR(em, i)].wb == 0)
            em->rroot[i] = i;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int x = 0; x < n; x++) {
            if (!cand(em, x, regof))
                continue;
            const IrInstr *in = &f->ins[x];
            int r = -1;
            for (int j = 0; j < 3 && j < ir_op_nopnd[in->op] && r != -2; j++) {
                int t = in->opnd[j] >= 0 ? tree(em, in->opnd[j], 0) : -1;
                r = t == -2 || (t >= 0 && r >= 0 && t != r) ? -2 : t >= 0 ? t : r;
            }
            if (r >= 0 && ir_shape_eq(&in->type, &f->ins[r].type)) {
                em->rroot[x] = r;
                changed = true;
            }
        }
    }
    /* roots read by reductions or dots: warps owning whole rows */
    each_read(em, regof, PH_WANT, want);
    for (int r = 0; r < n; r++) {
        if (!want[r])
            continue;
        const IrInstr *in = &f->ins[r];
        BkGpuMma *g = &em->vmma[BK_GPU_DOT_VAR(em, r)];
        want[r] = bk_gpu_pick_grid(em, g, in->type.shape[0], in->type.shape[1], dot_f32(em, r), true);
    }
    each_read(em, regof, PH_ROWS, want); /* the dots taking a: the same rows */
    for (int x = 0; x < n; x++) /* every register value in its root's grid */
        if (em->rroot[x] >= 0 && em->rroot[x] != x)
            em->vmma[BK_GPU_RV_VAR(em, x)] = em->vmma[BK_GPU_DOT_VAR(em, em->rroot[x])];
    for (int r = 0; r < n; r++) /* whole rows: the forced grid, or one warp column */
        want[r] = em->rroot[r] == r && em->vmma[BK_GPU_DOT_VAR(em, r)].wn == 1;
    each_read(em, regof, PH_MARK, want);
    for (int u = 0; u < n; u++) {
        const IrInstr *o = &f->ins[u];
        int r = o->dead || regof[u] < 0 || o->op != IR_REDUCE ? -1 : tree(em, o->opnd[0], 0);
        em->rred[u] = r >= 0 && want[r] && red_ok(em, u, o->opnd[0], r);
    }
    for (int x = 0; x < n; x++)
        if (em->rroot[x] >= 0 && !em->rcvt[x] && !em->rfb[x])
            em->lay[x] = BK_LAY_REG;
    free(want);
    return 0;
}

int bk_gpu_rv_root(const BkGpuEm *em, int x)
{
    return em->rroot ? tree(em, x, 0) : -1;
}
