/* gpu_slices.c — the SLICE part of the GPU layout pass (gpu_layouts.c has
 * the overview of all layouts): the result of sum/max/min along the last
 * axis of a tile of type P (P's blocked geometry, bk_gpu_slice_geom) held
 * as vID[K] per thread, register k the row of P's run k in P's blocked
 * loop; stored elementwise ops over slices of one parent; tile vars set
 * only to such values (held across loop iterations, flash attention's
 * running max and sum when they are not over register values). Read from
 * registers in a slice loop or, as x[:, None], in a loop over P's
 * registers; any other reader reads a shared copy written where the value
 * is made (scvt: convert slice -> shared).
 * Entries: bk_gpu_slices (before the BLOCKED pass), bk_gpu_slice_cvts
 * (after it: which slices need the shared copy depends on what is
 * BLOCKED). */
#include "gpu_emit.h"

#include <string.h>

/* Whether the expression x (through fused operands) reads an MMA register
 * tile. */
static bool has_mma(const BkGpuEm *em, int x, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (em->lay[x] == BK_LAY_MMA || BK_GPU_RV(em, x))
        return true;
    if (!em->virt[x] || depth > 8)
        return false;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0 && has_mma(em, in->opnd[j], depth + 1))
            return true;
    return false;
}

/* Whether the expression x (through fused operands) reads a SLICE value. */
static bool has_slice(const BkGpuEm *em, int x, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (bk_gpu_slice_root(em, x) >= 0)
        return true;
    if (!em->virt[x] || depth > 8 || in->op == IR_CONST)
        return false;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0 && has_slice(em, in->opnd[j], depth + 1))
            return true;
    return false;
}

int bk_gpu_slice_geom(const BkGpuEm *em, const IrType *p, int *R)
{
    if (p->rank < 2 || bk_gpu_blk_regs(em, p) > BK_GPU_BLK_REGS)
        return 0;
    long long n = p->shape[p->rank - 1], W = bk_gpu_blk_w(em, p);
    if (n % W || (em->nt & (em->nt - 1)))
        return 0;
    long long r = n / W;
    if (r < 1 || (r & (r - 1)) || (r > em->nt && r % em->nt))
        return 0;
    *R = (int)r;
    return 1;
}

int bk_gpu_slice_root(const BkGpuEm *em, int v)
{
    if (!em->lay)
        return -1;
    for (int k = 0; k < 8 && em->alias[v] != v; k++)
        v = em->alias[v];
    return em->lay[v] == BK_LAY_SLICE ? v : -1;
}

/* Whether reduction x may be SLICE: sum / max / min along the last axis
 * of a tile whose blocked loop the geometry allows, no MMA register read
 * in its operand. */
static bool slice_red_ok(const BkGpuEm *em, int x, const int *regof)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    int R;
    if (in->dead || regof[x] < 0 || in->op != IR_REDUCE || in->type.rank == 0 ||
        (in->attr != RED_SUM && in->attr != RED_MAX && in->attr != RED_MIN))
        return false;
    const IrType *p = &f->ins[in->opnd[0]].type;
    return in->axis == p->rank - 1 && bk_gpu_slice_geom(em, p, &R) &&
           !has_mma(em, in->opnd[0], 0);
}

/* The parent of the SLICE leaves of elementwise x's expression (through
 * fused operands), -1 if none or mixed, -2 if a leaf cannot be read in
 * a slice loop (a register tile of another layout). */
static int slice_leaves(const BkGpuEm *em, int x, int depth)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    int par = -1;
    if (depth > 8)
        return -2;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++) {
        int o = in->opnd[j], p;
        if (o < 0 || f->ins[o].type.rank == 0)
            continue;
        int r = bk_gpu_slice_root(em, o);
        if (r >= 0) {
            if (!ir_shape_eq(&f->ins[o].type, &in->type))
                return -2;
            p = em->spar[r];
        } else if (em->virt[o] && (ir_op_flags[f->ins[o].op] & F_ELEM)) {
            p = slice_leaves(em, o, depth + 1);
            if (p == -2)
                return -2;
        } else if (em->lay[o] == BK_LAY_MMA || em->lay[o] == BK_LAY_BLOCKED || BK_GPU_RV(em, o) ||
                   bk_gpu_mrow_root(em, o) >= 0 ||
                   (em->virt[o] && f->ins[o].op == IR_BCAST &&
                    has_slice(em, f->ins[o].opnd[0], 0))) {
            return -2;
        } else {
            continue; /* shared tiles, splats, broadcasts of shared tiles */
        }
        if (p >= 0 && par >= 0 && !ir_shape_eq(&f->ins[p].type, &f->ins[par].type))
            return -2;
        if (p >= 0)
            par = p;
    }
    return par;
}

/* Context of a read of a SLICE value (slice_reads_ok). */
enum { CTX_SLICE, CTX_RESHAPED, CTX_PARENT };

/* Whether every read of w (the SLICE value s, a fused expression over it,
 * a reshape or broadcast of it) is one of its registers: a SLICE op of the
 * same parent, or a broadcast [:, None] to the parent type read in a loop
 * over the parent's registers (a BLOCKED op, a store or reduction in the
 * blocked loop, a SLICE reduction). Otherwise s needs its shared copy. */
static bool slice_reads_ok(const BkGpuEm *em, int s, int w, int ctx, const int *regof,
                           int depth)
{
    const IrFunc *f = em->f;
    const IrType *p = &f->ins[em->spar[s]].type, *t = &f->ins[w].type;
    if (depth > 8)
        return false;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (o->dead || regof[u] < 0)
            continue;
        int rd = bk_gpu_reads_of(f, o, w);
        if (rd < 0)
            return false; /* a gather index */
        if (!rd)
            continue;
        bool elem = (ir_op_flags[o->op] & F_ELEM) && ir_shape_eq(&o->type, t);
        if (elem && em->virt[u] && ctx != CTX_RESHAPED) {
            if (!slice_reads_ok(em, s, u, ctx, regof, depth + 1))
                return false;
            continue;
        }
        if (ctx == CTX_SLICE) {
            if (elem && em->lay[u] == BK_LAY_SLICE &&
                ir_shape_eq(&f->ins[em->spar[u]].type, p))
                continue;
            if (o->op == IR_VSET && o->opnd[0] == w && em->vsl[o->param] >= 0 &&
                ir_shape_eq(&f->ins[em->vsl[o->param]].type, p))
                continue;
            if (o->op == IR_RESHAPE && em->alias[u] == w && o->type.rank == p->rank &&
                o->type.shape[p->rank - 1] == 1 &&
                slice_reads_ok(em, s, u, CTX_RESHAPED, regof, depth + 1))
                continue;
            return false;
        }
        if (ctx == CTX_RESHAPED) {
            if (o->op == IR_BCAST && em->virt[u] && ir_shape_eq(&o->type, p) &&
                slice_reads_ok(em, s, u, CTX_PARENT, regof, depth + 1))
                continue;
            return false;
        }
        /* CTX_PARENT: a value of the parent type */
        if (elem && (em->lay[u] == BK_LAY_BLOCKED || em->inblk[u]))
            continue;
        if (o->op == IR_REDUCE && o->opnd[0] == w &&
            (em->lay[u] == BK_LAY_SLICE || (o->type.rank == 0 && em->inblk[u])))
            continue;
        if (o->op == IR_STORE && o->opnd[0] == w && o->opnd[1] != w && em->inblk[u]) {
            IrType vt;
            memset(&vt, 0, sizeof vt);
            ir_view_shape(f, &f->views[o->view], &vt);
            if (ir_shape_eq(&vt, p))
                continue;
        }
        return false;
    }
    return true;
}

/* SLICE: reductions along the last axis (slice_red_ok), then stored
 * elementwise ops over SLICE values of one parent (and shared tiles,
 * scalars). */
static void slices(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    for (int x = 0; x < f->nins; x++)
        if (slice_red_ok(em, x, regof)) {
            em->lay[x] = BK_LAY_SLICE;
            em->spar[x] = f->ins[x].opnd[0];
        }
    for (bool changed = true; changed;) {
        changed = false;
        for (int x = 0; x < f->nins; x++) {
            const IrInstr *in = &f->ins[x];
            if (in->dead || regof[x] < 0 || in->type.rank == 0 || em->lay[x] != BK_LAY_SHARED ||
                em->virt[x] || em->alias[x] != x || em->var_of[x] >= 0 || em->cvt[x] ||
                BK_GPU_RV(em, x) || !(ir_op_flags[in->op] & F_ELEM))
                continue;
            int par = slice_leaves(em, x, 0);
            if (par < 0)
                continue;
            em->lay[x] = BK_LAY_SLICE;
            em->spar[x] = par;
            changed = true;
        }
    }
}

/* Whether the value x stored by a var.set of a SLICE var of parent par
 * can be computed per slice register: a splat, a SLICE value of that
 * parent, or a fused elementwise expression of such. */
static bool slice_set_ok(const BkGpuEm *em, int x, int par)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    if (in->op == IR_CONST && em->virt[x])
        return true;
    int r = bk_gpu_slice_root(em, x), p;
    if (r >= 0)
        p = em->spar[r];
    else if (em->virt[x] && (ir_op_flags[in->op] & F_ELEM))
        p = slice_leaves(em, x, 0);
    else
        return false;
    return p >= 0 && ir_shape_eq(&f->ins[p].type, &f->ins[par].type);
}

/* Tile vars held in SLICE registers across loop iterations: every
 * var.set stores a splat or a value computed per register of one slice
 * layout (slice_set_ok, at least one not a splat); its var.gets are then
 * SLICE values too (reading the var's registers in place, or a copy).
 * Tried per var; undone when a SLICE op would then mix two parents. */
static void slice_vars(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    for (int v = 0; v < f->nvars; v++) {
        const IrType *t = &f->vars[v].type;
        if (t->rank == 0 || em->vmma[v].on || em->vmrow[v] >= 0)
            continue;
        int par = -1;
        for (int s = 0; s < f->nins && par < 0; s++) {
            const IrInstr *in = &f->ins[s];
            if (in->dead || regof[s] < 0 || in->op != IR_VSET || in->param != v)
                continue;
            int r = bk_gpu_slice_root(em, in->opnd[0]);
            if (r >= 0)
                par = em->spar[r];
            else if (em->virt[in->opnd[0]] && (ir_op_flags[f->ins[in->opnd[0]].op] & F_ELEM))
                par = slice_leaves(em, in->opnd[0], 0);
        }
        if (par < 0)
            continue;
        for (int g = 0; g < f->nins; g++) /* tentatively */
            if (!f->ins[g].dead && regof[g] >= 0 && f->ins[g].op == IR_VGET &&
                f->ins[g].param == v && em->lay[g] == BK_LAY_SHARED) {
                em->lay[g] = BK_LAY_SLICE;
                em->spar[g] = par;
            }
        em->vsl[v] = par;
        bool ok = true;
        for (int s = 0; s < f->nins && ok; s++) {
            const IrInstr *in = &f->ins[s];
            if (in->dead || regof[s] < 0)
                continue;
            if (in->op == IR_VSET && in->param == v)
                ok = slice_set_ok(em, in->opnd[0], par);
            else if (em->lay[s] == BK_LAY_SLICE && in->op != IR_REDUCE && in->op != IR_VGET)
                ok = slice_leaves(em, s, 0) >= 0 &&
                     ir_shape_eq(&f->ins[slice_leaves(em, s, 0)].type, &f->ins[em->spar[s]].type);
        }
        if (!ok) {
            em->vsl[v] = -1;
            for (int g = 0; g < f->nins; g++)
                if (f->ins[g].op == IR_VGET && f->ins[g].param == v && em->lay[g] == BK_LAY_SLICE) {
                    em->lay[g] = BK_LAY_SHARED;
                    em->spar[g] = -1;
                }
        }
    }
}

/* SLICE reductions and elementwise ops, then SLICE vars, then the ops
 * those vars make possible */
void bk_gpu_slices(BkGpuEm *em, const int *regof)
{
    slices(em, regof);
    slice_vars(em, regof);
    slices(em, regof);
}

/* after the BLOCKED pass: the SLICE values read any other way than from
 * their registers get a shared copy (scvt) */
void bk_gpu_slice_cvts(BkGpuEm *em, const int *regof)
{
    for (int x = 0; x < em->f->nins; x++)
        if (em->lay[x] == BK_LAY_SLICE)
            em->scvt[x] = !slice_reads_ok(em, x, x, CTX_SLICE, regof, 0);
}
