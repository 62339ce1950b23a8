/* gpu_mrows.c — row values of MMA tiles in registers (layout MROW): the
 * result of sum / max / min along the last axis of a register value
 * (gpu_rvals.c: em->rred, whose warps own whole rows), the stored
 * elementwise ops over such results, and the tile vars set only to them
 * (flash attention's running max m_i and sum l_i), held as each lane's
 * rows of that MMA layout, as Triton's slice-of-mma layout.
 *
 * Lane l of warp w holds S registers, register s the row
 *   CUDA m16n8 (PTX ISA, mma.m16n8k16 accumulators: groupID = l >> 2 holds
 *     rows groupID and groupID + 8 of each m-fragment):
 *     w * WM + (s / 2) * 16 + (l >> 2) + (s % 2) * 8,  S = 2 mt;
 *   HIP MFMA 16x16 (lane l holds rows 4 (l / 16) .. + 3 of column l % 16):
 *     w * WM + (s / 4) * 16 + (l >> 4) * 4 + s % 4,  S = 4 mt;
 *   HIP MFMA 32x32 (element j of lane l: row 8 (j / 4) + 4 (l / 32) + j % 4):
 *     w * WM + (s / 16) * 32 + (s % 16 >> 2) * 8 + (l >> 5) * 4 + s % 4,
 *     S = 16 mt;
 * the same row numbering as bk_gpu_mma_slot's, so a broadcast back
 * x[:, None] read per register R of an MMA tile of the same rows is
 * register slot(R) of x: no shared memory, no barrier. Every lane of a
 * row holds it (the reduction ends with an xor butterfly over the lanes
 * of a row), so no lane owns a row alone: values are the same in all.
 * Only warps owning whole rows (wn = 1) qualify; a tile split over warps
 * along the reduced axis keeps the shared path.
 * Readers other than MROW ops, var.sets of MROW vars and broadcasts back
 * read per register of an MMA tile of the same rows (a register value, an
 * MMA var.set, the epilogue store, a reduction from registers) read a
 * shared copy v<id>_s written where the value is made (em->mrcvt: convert
 * mma rows -> shared; one lane per row writes it).
 * Entries: bk_gpu_mrows (after the register values, before SLICE),
 * bk_gpu_mrow_cvts (after BLOCKED); the emission helpers below.
 * BLKC_GPU_NOMROW=1 turns it off (row values through shared memory). */
#include "gpu_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool bk_gpu_same_rows(const BkGpuEm *em, int a, int b)
{
    const BkGpuMma *x = &em->vmma[a], *y = &em->vmma[b];
    return x->on && y->on && x->wn == 1 && y->wn == 1 && x->wm == y->wm && x->WM == y->WM &&
           x->fm == y->fm && x->M == y->M;
}

int bk_gpu_mrow_regs(const BkGpuEm *em, int v)
{
    char buf[160];
    int S = 0;
    bk_gpu_mma_slot(em, v, "0", buf, sizeof buf, &S);
    return S;
}

int bk_gpu_mrow_root(const BkGpuEm *em, int v)
{
    if (!em->lay || !em->mrow)
        return -1;
    for (int k = 0; k < 8 && em->alias[v] != v; k++)
        v = em->alias[v];
    return em->lay[v] == BK_LAY_MROW ? v : -1;
}

void bk_gpu_mrow_reg(const BkGpuEm *em, int r, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[r];
    if (in->op == IR_VGET && em->var_of[r] >= 0)
        snprintf(buf, n, "var%d", in->param);
    else
        snprintf(buf, n, "v%d", r);
}

/* The row of register `s` of the rows of (pseudo-)var P (see the top). */
static void row_of(const BkGpuEm *em, int P, const char *s, char *buf, size_t n)
{
    const BkGpuMma *g = &em->vmma[P];
    if (em->dl->kind == BK_GPU_CUDA)
        snprintf(buf, n, "(blk_warp * %d + (%s) / 2 * 16 + (blk_lane >> 2) + (%s) %% 2 * 8)",
                 g->WM, s, s);
    else if (g->fm == 32)
        snprintf(buf, n, "(blk_warp * %d + (%s) / 16 * 32 + ((%s) %% 16 >> 2) * 8 + "
                 "(blk_lane >> 5) * 4 + (%s) %% 4)", g->WM, s, s, s);
    else
        snprintf(buf, n, "(blk_warp * %d + (%s) / 4 * 16 + (blk_lane >> 4) * 4 + (%s) %% 4)",
                 g->WM, s, s);
}

/* ------------------------------------------------------------ the pass */

/* The rows (pseudo-)var of the MROW leaves of elementwise x's expression
 * (through fused operands): >= 0 that var, -1 none, -2 a leaf that cannot
 * be read per row register (another register layout, mixed rows, a
 * broadcast of a tile). Shared tiles of x's shape are read at the row. */
static int leaves(const BkGpuEm *em, int x, int depth)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    int P = -1;
    if (depth > 8)
        return -2;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++) {
        int o = in->opnd[j], p;
        if (o < 0 || f->ins[o].type.rank == 0)
            continue;
        const IrInstr *oi = &f->ins[o];
        int r = bk_gpu_mrow_root(em, o);
        if (r >= 0) {
            if (!ir_shape_eq(&oi->type, &in->type))
                return -2;
            p = em->mrow[r];
        } else if (bk_gpu_free_leaf(em, o)) {
            continue; /* a splat, index arithmetic */
        } else if (em->virt[o] && (ir_op_flags[oi->op] & F_ELEM)) {
            p = leaves(em, o, depth + 1);
            if (p == -2)
                return -2;
        } else if (em->virt[o] && oi->op == IR_BCAST && f->ins[oi->opnd[0]].type.rank == 0) {
            continue; /* a scalar */
        } else if (!em->virt[o] && em->lay[o] == BK_LAY_SHARED && !BK_GPU_RV(em, o) &&
                   ir_shape_eq(&oi->type, &in->type)) {
            continue; /* a shared tile, read at the row */
        } else {
            return -2;
        }
        if (p >= 0 && P >= 0 && !bk_gpu_same_rows(em, p, P))
            return -2;
        if (p >= 0)
            P = p;
    }
    return P;
}

static bool op_cand(const BkGpuEm *em, int x, const int *regof)
{
    const IrInstr *in = &em->f->ins[x];
    return !in->dead && regof[x] >= 0 && (ir_op_flags[in->op] & F_ELEM) && !em->virt[x] &&
           in->type.rank == 1 && em->lay[x] == BK_LAY_SHARED && em->alias[x] == x &&
           em->var_of[x] < 0 && !em->cvt[x] && !BK_GPU_RV(em, x);
}

/* stored elementwise ops over MROW values of one layout's rows */
static bool ops(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    bool any = false;
    for (bool changed = true; changed;) {
        changed = false;
        for (int x = 0; x < f->nins; x++) {
            if (!op_cand(em, x, regof))
                continue;
            int P = leaves(em, x, 0);
            if (P < 0 || em->vmma[P].M != f->ins[x].type.shape[0])
                continue;
            em->lay[x] = BK_LAY_MROW;
            em->mrow[x] = P;
            changed = any = true;
        }
    }
    return any;
}

/* The rows var of value x stored by a var.set: -1 a splat, -2 not per
 * row register, else the rows (pseudo-)var. */
static int set_rows(const BkGpuEm *em, int x)
{
    const IrInstr *in = &em->f->ins[x];
    if (in->op == IR_CONST && em->virt[x])
        return -1;
    int r = bk_gpu_mrow_root(em, x);
    if (r >= 0)
        return em->mrow[r];
    if (em->virt[x] && (ir_op_flags[in->op] & F_ELEM)) {
        int p = leaves(em, x, 0);
        return p >= 0 ? p : -2;
    }
    return -2;
}

/* Whether every MROW op still reads one layout's rows (after var.gets of
 * a var were made MROW). */
static bool ops_consistent(const BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    for (int x = 0; x < f->nins; x++) {
        const IrInstr *in = &f->ins[x];
        if (in->dead || regof[x] < 0 || em->lay[x] != BK_LAY_MROW || in->op == IR_REDUCE ||
            in->op == IR_VGET)
            continue;
        int P = leaves(em, x, 0);
        if (P < 0 || !bk_gpu_same_rows(em, P, em->mrow[x]))
            return false;
    }
    return true;
}

/* Tile vars held in row registers across iterations: every var.set
 * stores a splat or a value per row register of one layout's rows (at
 * least one not a splat); then its var.gets are MROW too. Undone when an
 * MROW op would then mix rows, or a var.set its rows. */
static bool vars(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    bool any = false;
    for (int v = 0; v < f->nvars; v++) {
        const IrType *t = &f->vars[v].type;
        if (t->rank != 1 || em->vmma[v].on || em->vmrow[v] >= 0)
            continue;
        int P = -1;
        bool ok = true;
        for (int s = 0; s < f->nins && ok; s++) {
            const IrInstr *in = &f->ins[s];
            if (in->dead || regof[s] < 0 || in->op != IR_VSET || in->param != v)
                continue;
            int p = set_rows(em, in->opnd[0]);
            if (p == -2 || (p >= 0 && P >= 0 && !bk_gpu_same_rows(em, p, P)))
                ok = false;
            else if (p >= 0)
                P = p;
        }
        if (!ok || P < 0 || em->vmma[P].M != t->shape[0])
            continue;
        for (int g = 0; g < f->nins; g++) /* tentatively */
            if (!f->ins[g].dead && regof[g] >= 0 && f->ins[g].op == IR_VGET &&
                f->ins[g].param == v && em->lay[g] == BK_LAY_SHARED) {
                em->lay[g] = BK_LAY_MROW;
                em->mrow[g] = P;
            }
        em->vmrow[v] = P;
        for (int s = 0; s < f->nins && ok; s++) {
            const IrInstr *in = &f->ins[s];
            if (!in->dead && regof[s] >= 0 && in->op == IR_VSET && in->param == v) {
                int p = set_rows(em, in->opnd[0]);
                ok = p == -1 || (p >= 0 && bk_gpu_same_rows(em, p, P));
            }
        }
        if (!ok || !ops_consistent(em, regof)) {
            em->vmrow[v] = -1;
            for (int g = 0; g < f->nins; g++)
                if (f->ins[g].op == IR_VGET && f->ins[g].param == v &&
                    em->lay[g] == BK_LAY_MROW) {
                    em->lay[g] = BK_LAY_SHARED;
                    em->mrow[g] = -1;
                }
            continue;
        }
        any = true;
    }
    return any;
}

int bk_gpu_mrows(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    int n = f->nins;
    em->mrow = malloc(sizeof(int) * ((size_t)n + 1));
    em->mrcvt = calloc((size_t)n + 1, sizeof(bool));
    em->vmrow = malloc(sizeof(int) * ((size_t)f->nvars + 1));
    if (!em->mrow || !em->mrcvt || !em->vmrow) {
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        em->mrow[i] = -1;
    for (int v = 0; v < f->nvars; v++)
        em->vmrow[v] = -1;
    const char *off = getenv("BLKC_GPU_NOMROW"); /* the old path, for comparisons */
    if (!regof || (off && *off && strcmp(off, "0")))
        return 0;
    /* the reductions from registers (gpu_rvals.c): rows of their root */
    for (int u = 0; u < n; u++) {
        if (!em->rred[u])
            continue;
        int r = bk_gpu_rv_root(em, f->ins[u].opnd[0]);
        if (r < 0 || em->vmma[BK_GPU_DOT_VAR(em, r)].wn != 1)
            continue;
        em->lay[u] = BK_LAY_MROW;
        em->mrow[u] = BK_GPU_DOT_VAR(em, r);
    }
    while (ops(em, regof) | vars(em, regof))
        ;
    return 0;
}

/* Read contexts of an MROW value (reads_ok): the value itself (or a fused
 * expression of its shape), its [M, 1] reshape, a broadcast [M, N]. */
enum { CTX_ROWS, CTX_RESHAPED, CTX_BCAST };

/* The (pseudo-)var whose registers reader u computes its value w per
 * register of: a register value, an MMA var.set, the epilogue store (its
 * value, not its mask), a reduction from registers; else -1. */
static int reg_loop_of(const BkGpuEm *em, int u, int w)
{
    const IrInstr *o = &em->f->ins[u];
    if (BK_GPU_RV(em, u) && !em->virt[u])
        return BK_GPU_RV_VAR(em, u);
    if (o->opnd[0] != w)
        return -1;
    if (o->op == IR_VSET && em->vmma[o->param].on)
        return o->param;
    if (o->op == IR_STORE && o->opnd[1] != w && em->lay[w] == BK_LAY_MMA)
        return em->mvar[w];
    if (o->op == IR_REDUCE && em->rred[u]) {
        int r = bk_gpu_rv_root(em, o->opnd[0]);
        return r >= 0 ? BK_GPU_DOT_VAR(em, r) : -1;
    }
    return -1;
}

/* Whether every read of w (MROW value s, a fused expression, a reshape or
 * broadcast of it) is one of s's row registers. */
static bool reads_ok(const BkGpuEm *em, int s, int w, int ctx, const int *regof, int depth)
{
    const IrFunc *f = em->f;
    const IrType *t = &f->ins[w].type;
    int P = em->mrow[s];
    if (depth > 12)
        return false;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (o->dead || regof[u] < 0)
            continue;
        int rd = bk_gpu_reads_of(f, o, w);
        if (rd < 0)
            return false;
        if (!rd)
            continue;
        bool elem = (ir_op_flags[o->op] & F_ELEM) && ir_shape_eq(&o->type, t);
        if (elem && em->virt[u] && ctx != CTX_RESHAPED) {
            if (!reads_ok(em, s, u, ctx, regof, depth + 1))
                return false;
            continue;
        }
        if (ctx == CTX_ROWS) {
            if (elem && em->lay[u] == BK_LAY_MROW && bk_gpu_same_rows(em, em->mrow[u], P))
                continue;
            if (o->op == IR_VSET && o->opnd[0] == w && em->vmrow[o->param] >= 0 &&
                bk_gpu_same_rows(em, em->vmrow[o->param], P))
                continue;
            if (o->op == IR_RESHAPE && em->alias[u] == w && o->type.rank == 2 &&
                o->type.shape[1] == 1 && reads_ok(em, s, u, CTX_RESHAPED, regof, depth + 1))
                continue;
            return false;
        }
        if (ctx == CTX_RESHAPED) {
            if (o->op == IR_BCAST && em->virt[u] && o->type.rank == 2 &&
                o->type.shape[0] == t->shape[0] &&
                reads_ok(em, s, u, CTX_BCAST, regof, depth + 1))
                continue;
            return false;
        }
        /* CTX_BCAST: read per register of an MMA tile of the same rows */
        int L = reg_loop_of(em, u, w);
        if (L >= 0 && bk_gpu_same_rows(em, L, P))
            continue;
        return false;
    }
    return true;
}

void bk_gpu_mrow_cvts(BkGpuEm *em, const int *regof)
{
    for (int x = 0; x < em->f->nins; x++)
        if (em->lay[x] == BK_LAY_MROW)
            em->mrcvt[x] = !reads_ok(em, x, x, CTX_ROWS, regof, 0);
}

/* ------------------------------------------------------------ emission */

void bk_gpu_mrow_str(const BkGpuEm *em, int P, char *buf, size_t n)
{
    const BkGpuMma *g = &em->vmma[P];
    snprintf(buf, n, "rows of mma(%dx1 warps of %d rows, fragments of %d), %d registers per thread",
             g->wm, g->WM, g->fm, bk_gpu_mrow_regs(em, P));
}

void bk_gpu_mrow_decl(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    const char *t = bk_gpu_stype(in->type.dtype);
    char ty[128], lay[160];
    int r = bk_gpu_mrow_root(em, id);
    ir_type_str(&in->type, ty, sizeof ty);
    if (r != id) {
        if (em->mrcvt[r])
            bk_gpu_line(em, "%s *v%d = v%d_s; /* %s, reshape of row value v%d's copy */", t, id,
                        r, ty, r);
        else
            bk_gpu_line(em, "/* v%d: %s, reshape of row value v%d (its registers) */", id, ty, r);
        return;
    }
    bk_gpu_mrow_str(em, em->mrow[id], lay, sizeof lay);
    if (in->op == IR_VGET && em->var_of[id] >= 0)
        bk_gpu_line(em, "/* v%d: %s, %s: var%d's registers in place */", id, ty, lay, in->param);
    else
        bk_gpu_line(em, "%s v%d[%d]; /* %s, %s */", t, id, bk_gpu_mrow_regs(em, em->mrow[id]),
                    ty, lay);
    if (em->mrcvt[id])
        bk_gpu_line(em, "%s *v%d_s = (%s *)(blk_smem + %lld); /* its shared copy */", t, id, t,
                    em->off[id]);
}

/* `for (blk_s ...) {` over the row registers of P, e = the row */
static void loop_open(BkGpuEm *em, int P)
{
    char row[256];
    row_of(em, P, "blk_s", row, sizeof row);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) { /* this lane's rows */",
                bk_gpu_mrow_regs(em, P));
    em->indent++;
    bk_gpu_line(em, "const int e = %s;", row);
    bk_gpu_line(em, "(void)e;");
    em->mr_loop = P;
}

static void loop_close(BkGpuEm *em)
{
    em->mr_loop = -1;
    bk_gpu_loop_close(em);
}

void bk_gpu_mrow_to_shared(BkGpuEm *em, int id)
{
    const BkGpuMma *g = &em->vmma[em->mrow[id]];
    char row[256], rg[32];
    int span = em->dl->kind == BK_GPU_CUDA ? 4 : g->fn;
    row_of(em, em->mrow[id], "blk_s", row, sizeof row);
    bk_gpu_mrow_reg(em, id, rg, sizeof rg);
    bk_gpu_line(em, "/* layout conversion: v%d mma rows (registers) -> shared, one lane a row */",
                id);
    bk_gpu_line(em, "if (blk_lane %% %d == 0)", span);
    bk_gpu_line(em, "    for (int blk_s = 0; blk_s < %d; blk_s++) BLK_SST(v%d_s[%s]) = %s[blk_s];",
                bk_gpu_mrow_regs(em, em->mrow[id]), id, row, rg);
    bk_gpu_note_write(em, id);
}

void bk_gpu_mrow_elem(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    char o[3][BK_GPU_EXPR / 4], x[BK_GPU_EXPR], s[BK_GPU_EXPR];
    bk_gpu_mrow_decl(em, id);
    loop_open(em, em->mrow[id]);
    for (int i = 0; i < 3; i++) {
        o[i][0] = 0;
        if (i < ir_op_nopnd[in->op] && in->opnd[i] >= 0)
            bk_gpu_read(em, in->opnd[i], "e", o[i], sizeof o[i]);
    }
    bk_gpu_elem_expr(em, id, o[0], o[1], o[2], x, sizeof x);
    bk_gpu_to_s(s, sizeof s, in->type.dtype, x);
    bk_gpu_line(em, "v%d[blk_s] = %s;", id, s);
    loop_close(em);
    if (em->mrcvt[id])
        bk_gpu_mrow_to_shared(em, id);
}

void bk_gpu_mrow_vget(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    bk_gpu_mrow_decl(em, id);
    if (em->var_of[id] < 0) {
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) v%d[blk_s] = var%d[blk_s];",
                    bk_gpu_mrow_regs(em, em->mrow[id]), id, in->param);
    }
    if (em->mrcvt[id])
        bk_gpu_mrow_to_shared(em, id);
}

void bk_gpu_mrow_vset(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    char rv[BK_GPU_EXPR];
    loop_open(em, em->vmrow[in->param]);
    bk_gpu_raw(em, in->opnd[0], "e", rv, sizeof rv);
    bk_gpu_line(em, "var%d[blk_s] = %s;", in->param, rv);
    loop_close(em);
}

void bk_gpu_mrow_var_decl(BkGpuEm *em, int v)
{
    const IrVar *var = &em->f->vars[v];
    char ty[128], lay[160];
    ir_type_str(&var->type, ty, sizeof ty);
    bk_gpu_mrow_str(em, em->vmrow[v], lay, sizeof lay);
    bk_gpu_line(em, "%s var%d[%d]; /* var %s : %s, %s, across iterations */",
                bk_gpu_stype(var->type.dtype), v, bk_gpu_mrow_regs(em, em->vmrow[v]), var->name,
                ty, lay);
}
