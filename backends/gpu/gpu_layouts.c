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
 *           4(l/16) .. 4(l/16)+3 of column l%16). See bk_gpu_mma_rowcol.
 *
 * A tile var is MMA (held in registers across loop iterations) when every
 * var.set stores a splat constant or the result of a tensor-core `dot`
 * whose accumulator operand is a var.get of the same var used by that dot
 * alone, in the same region, the dot's result used by that var.set alone,
 * with no other var.get / var.set of the var in between. Such var.gets and
 * dots are MMA (the dot accumulates in place in the var's registers).
 * Every other var.get of an MMA var is SHARED: one explicit conversion,
 * each thread writing its fragments into the value's shared tile
 * (em->cvt). Everything else is SHARED. A kernel with an MMA var also
 * gets grouped program ids (em->group_m, emitted by gpu_emit.c).
 * BLKC_GPU_SMEM=1 turns the pass off (every tile SHARED, the old path).
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

/* Whether dot id can accumulate in registers on this dialect. */
static bool dot_ok(const BkGpuEm *em, int id, int fn)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrType *at = &f->ins[in->opnd[0]].type, *bt = &f->ins[in->opnd[1]].type;
    if (in->type.rank != 2 || at->rank != 2 || bt->rank != 2 || in->opnd[2] < 0)
        return false;
    if (at->dtype != bt->dtype || (at->dtype != DT_F16 && at->dtype != DT_BF16) ||
        in->type.dtype != DT_F32)
        return false;
    return in->type.shape[0] % 16 == 0 && in->type.shape[1] % fn == 0 &&
           at->shape[1] % 16 == 0;
}

/* The warp grid for an M x N accumulator: every warp owns a block of
 * whole fragments; the squarest block (fewest operand fragments loaded
 * per k step). 0 when none fits. */
static int pick_grid(BkGpuEm *em, BkGpuMma *g, long long M, long long N)
{
    int nw = em->nw, fm = 16, fn = em->dl->kind == BK_GPU_CUDA ? 8 : 16;
    long long best = -1;
    for (int wm = 1; wm <= nw; wm++) {
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
    g->fm = fm;
    g->fn = fn;
    g->mt = g->WM / fm;
    g->nt = g->WN / fn;
    g->M = M;
    g->N = N;
    return 1;
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

/* Whether var v can be MMA; marks its dots and their var.gets. */
static bool var_mma(BkGpuEm *em, int v, const int *regof, int fn)
{
    const IrFunc *f = em->f;
    bool any_dot = false;
    for (int s = 0; s < f->nins; s++) {
        const IrInstr *in = &f->ins[s];
        if (in->dead || regof[s] < 0 || in->op != IR_VSET || in->param != v)
            continue;
        int x = in->opnd[0];
        const IrInstr *xi = &f->ins[x];
        if (xi->op == IR_CONST && em->virt[x])
            continue; /* splat constant */
        if (xi->op != IR_DOT || !dot_ok(em, x, fn) || only_user(f, x) != s ||
            regof[x] != regof[s])
            return false;
        int g = xi->opnd[2];
        const IrInstr *gi = &f->ins[g];
        if (gi->op != IR_VGET || gi->param != v || only_user(f, g) != x ||
            regof[g] != regof[s])
            return false;
        /* nothing else touches the var between the var.get and the var.set */
        for (int u = 0; u < f->nins; u++) {
            const IrInstr *o = &f->ins[u];
            if (u != g && u != s && !o->dead && regof[u] >= 0 &&
                (o->op == IR_VGET || o->op == IR_VSET) && o->param == v &&
                em->pos[u] > em->pos[g] && em->pos[u] < em->pos[s])
                return false;
        }
        any_dot = true;
    }
    return any_dot;
}

int bk_gpu_layouts(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    int n = f->nins;
    em->lay = calloc((size_t)n + 1, sizeof(int));
    em->cvt = calloc((size_t)n + 1, sizeof(bool));
    em->vmma = calloc((size_t)f->nvars + 1, sizeof(BkGpuMma));
    if (!em->lay || !em->cvt || !em->vmma) {
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    em->group_m = 0;
    for (int i = 0; i < n; i++)
        em->lay[i] = f->ins[i].type.rank > 0 ? BK_LAY_SHARED : BK_LAY_NONE;
    const char *e = getenv("BLKC_GPU_SMEM");
    if (e && *e && strcmp(e, "0"))
        return 0;
    int fn = em->dl->kind == BK_GPU_CUDA ? 8 : 16;
    for (int v = 0; v < f->nvars; v++) {
        const IrType *t = &f->vars[v].type;
        if (t->rank != 2 || t->dtype != DT_F32 || !var_mma(em, v, regof, fn) ||
            !pick_grid(em, &em->vmma[v], t->shape[0], t->shape[1]))
            continue;
        em->vmma[v].on = true;
        em->group_m = GROUP_M; /* a dot loop: grouped program ids */
        for (int i = 0; i < n; i++) {
            const IrInstr *in = &f->ins[i];
            if (in->dead || regof[i] < 0 || in->param != v)
                continue;
            if (in->op == IR_VSET && f->ins[in->opnd[0]].op == IR_DOT) {
                int x = in->opnd[0];
                em->lay[x] = BK_LAY_MMA;
                em->lay[f->ins[x].opnd[2]] = BK_LAY_MMA;
            }
        }
        for (int i = 0; i < n; i++) {
            const IrInstr *in = &f->ins[i];
            if (!in->dead && regof[i] >= 0 && in->op == IR_VGET && in->param == v &&
                em->lay[i] != BK_LAY_MMA) {
                em->cvt[i] = true; /* mma -> shared */
                em->var_of[i] = -1;
            }
        }
    }
    return 0;
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
    } else {
        snprintf(row, rn, "(blk_wr%d + (%s) * 16 + (blk_lane >> 4) * 4 + (%s))", v,
                 mt, i);
        snprintf(col, cn, "(blk_wc%d + (%s) * 16 + (blk_lane & 15))", v, nt);
    }
    (void)g;
}

void bk_gpu_lay_str(const BkGpuEm *em, int id, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[id];
    buf[0] = 0;
    if (in->type.rank == 0 || in->dead)
        return;
    if (em->lay[id] == BK_LAY_MMA) {
        const BkGpuMma *g = &em->vmma[in->op == IR_VGET ? in->param
                                                       : em->f->ins[in->opnd[2]].param];
        snprintf(buf, n, "mma(%dx%d warps, %dx%d fragments of %dx%d, registers)",
                 g->wm, g->wn, g->mt, g->nt, g->fm, g->fn);
    } else if (em->cvt[id]) {
        snprintf(buf, n, "shared+%lld  ; convert mma -> shared", em->off[id]);
    } else if (em->virt[id]) {
        snprintf(buf, n, "fused (computed where read)");
    } else if (em->var_of[id] >= 0) {
        snprintf(buf, n, "shared = var %s", em->f->vars[em->var_of[id]].name);
    } else if (em->alias[id] != id) {
        snprintf(buf, n, "shared = %%%d", em->alias[id]);
    } else if (in->op == IR_LOAD && em->pipe[id] >= 0) {
        snprintf(buf, n, "shared+%lld, cp.async ring of %d", em->off[id], em->f->stages);
    } else {
        snprintf(buf, n, "shared+%lld", em->off[id]);
    }
}

void bk_gpu_var_lay_str(const BkGpuEm *em, int v, char *buf, size_t n)
{
    const BkGpuMma *g = &em->vmma[v];
    if (em->f->vars[v].type.rank == 0)
        snprintf(buf, n, "register (scalar)");
    else if (g->on)
        snprintf(buf, n, "mma(%dx%d warps of %dx%d, %dx%d fragments of %dx%d, "
                 "%d registers per thread)", g->wm, g->wn, g->WM, g->WN, g->mt,
                 g->nt, g->fm, g->fn, g->mt * g->nt * g->fm * g->fn / em->dl->warp);
    else
        snprintf(buf, n, "shared+%lld", em->var_off[v]);
}

int bk_gpu_emit_gpu_ir(const IrModule *m, const BkGpuDialect *dl, DslBuf *out,
                       char *err, size_t errlen)
{
    for (int k = 0, nk = 0; k < m->nfuncs; k++) {
        const IrFunc *f = m->funcs[k];
        if (f->is_device)
            continue;
        BkGpuEm em;
        if (bk_gpu_em_init(&em, f, dl, NULL, err, errlen) < 0)
            return -1;
        char **notes = calloc((size_t)f->nins + 1, sizeof(char *));
        char **vnotes = calloc((size_t)f->nvars + 1, sizeof(char *));
        bool oom = !notes || !vnotes;
        for (int i = 0; i < f->nins && !oom; i++) {
            char b[256];
            bk_gpu_lay_str(&em, i, b, sizeof b);
            oom = b[0] && !(notes[i] = strdup(b));
        }
        for (int v = 0; v < f->nvars && !oom; v++) {
            char b[256];
            bk_gpu_var_lay_str(&em, v, b, sizeof b);
            oom = !(vnotes[v] = strdup(b));
        }
        if (!oom) {
            dsl_buf_printf(out, "%s// kernel %s (%s): blockDim.x = %d (%d warps of %d), "
                           "dynamic shared memory = %lld bytes\n", nk++ ? "\n" : "",
                           f->name, dl->name, em.nt, em.nw, dl->warp, em.smem);
            ir_print_func_notes(out, f, (const char *const *)notes,
                                (const char *const *)vnotes);
        }
        for (int i = 0; notes && i < f->nins; i++)
            free(notes[i]);
        for (int v = 0; vnotes && v < f->nvars; v++)
            free(vnotes[v]);
        free(notes);
        free(vnotes);
        bk_gpu_em_free(&em);
        if (oom) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
