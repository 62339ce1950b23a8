/* gpu_layout.c — where the GPU emitter keeps each value: linear positions
 * of the instructions, live ranges (a use inside a loop keeps a value
 * defined outside it alive to the loop's end), fused values (splat CONSTs,
 * BCASTs and single-use elementwise ops computed where they are read),
 * storage aliases (RESHAPE; VGET reading its var in place) and the first-fit
 * shared-memory offsets of everything else (after the layout pass of
 * gpu_layouts.c has taken the register-resident tiles out). Entry:
 * bk_gpu_analyze. */
#include "gpu_emit.h"

#include <limits.h>

#include <stdlib.h>
#include <string.h>

static bool is_tile(const IrInstr *in)
{
    return in->type.dtype != DT_VOID && in->type.rank > 0;
}


static void number_region(BkGpuEm *em, int r, int *p, int *regof, int *owner)
{
    const IrFunc *f = em->f;
    const IrRegion *reg = &f->regions[r];
    for (int i = 0; i < reg->n; i++) {
        int id = reg->ins[i];
        const IrInstr *in = &f->ins[id];
        regof[id] = r;
        em->pos[id] = (*p)++;
        for (int k = 0; k < 2; k++)
            if (in->region[k] >= 0) {
                owner[in->region[k]] = id;
                number_region(em, in->region[k], p, regof, owner);
            }
        em->end[id] = *p - 1;
    }
}

/* Every value operand of instruction id (ops and view indices). */
static int operands(const IrFunc *f, int id, int out[4 + IR_MAX_RANK])
{
    const IrInstr *in = &f->ins[id];
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (in->opnd[i] >= 0)
            out[n++] = in->opnd[i];
    if (in->view >= 0) {
        const IrView *v = &f->views[in->view];
        for (int d = 0; d < v->ndims; d++)
            out[n++] = v->d[d].val;
    }
    return n;
}


static int in_root(const BkGpuEm *em, int v)
{
    while (em->alias[v] != v)
        v = em->alias[v];
    return v;
}

/* Value v is read at instruction u: extend its storage root's live range
 * (to the end of any loop between u and v's definition). Fused (virtual)
 * values are read through their operands. */
static void use(BkGpuEm *em, int v, int u, const int *regof, const int *owner)
{
    const IrFunc *f = em->f;
    if (em->virt[v]) {
        for (int j = 0; j < 3; j++)
            if (f->ins[v].opnd[j] >= 0 &&
                (f->ins[v].op == IR_BCAST || f->ins[v].op == IR_PERMUTE ||
                 f->ins[v].op == IR_RESHAPE || (ir_op_flags[f->ins[v].op] & F_ELEM)))
                use(em, f->ins[v].opnd[j], u, regof, owner);
        return;
    }
    int root = in_root(em, v);
    int q = em->pos[u];
    for (int r = regof[u]; r >= 0 && r != regof[root]; r = f->regions[r].parent) {
        int own = owner[r];
        if (own >= 0 && (f->ins[own].op == IR_FOR || f->ins[own].op == IR_WHILE) &&
            em->end[own] > q)
            q = em->end[own];
    }
    if (q > em->last[root])
        em->last[root] = q;
}

/* Whether PERMUTE p is trans(t) of a 2-D tile t with its own storage,
 * read only as operand b of register dots (bk_gpu_dot_regs). */
static bool tdot_ok(const BkGpuEm *em, int p, const int *regof)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[p];
    if (regof[p] < 0 || in->dead || in->op != IR_PERMUTE || in->type.rank != 2 ||
        in->perm[0] != 1 || in->perm[1] != 0 || em->virt[in->opnd[0]] ||
        f->ins[in->opnd[0]].type.rank != 2)
        return false;
    int users = 0;
    for (int u = 0; u < f->nins; u++) {
        if (regof[u] < 0 || f->ins[u].dead)
            continue;
        int ops[4 + IR_MAX_RANK];
        int k = operands(f, u, ops);
        for (int j = 0; j < k; j++) {
            if (ops[j] != p)
                continue;
            const IrInstr *o = &f->ins[u];
            if (o->op != IR_DOT || o->opnd[1] != p || o->opnd[0] == p || o->opnd[2] == p ||
                o->view >= 0 || !bk_gpu_dot_regs(em, u))
                return false;
            users++;
        }
    }
    return users > 0;
}

/* How the value computed for x at element e reads value g: 0 not at all,
 * 1 only at element e (through fused elementwise ops), 2 otherwise. */
static int reads_at(const BkGpuEm *em, int x, int g)
{
    const IrInstr *in = &em->f->ins[x];
    if (x == g)
        return 1;
    if (!em->virt[x] || in->type.rank == 0)
        return 0;
    int worst = 0;
    for (int j = 0; j < 3; j++) {
        int v = in->opnd[j];
        if (v < 0)
            continue;
        int r = reads_at(em, v, g);
        if (r && !(ir_op_flags[in->op] & F_ELEM))
            r = 2; /* a BCAST changes the index */
        if (r > worst)
            worst = r;
    }
    return worst;
}

/* v is index arithmetic: aranges, splats and scalars under elementwise
 * ops (a reshape of one reads no layout's registers: any thread can
 * compute any element) */
static bool index_expr(const IrFunc *f, int v, int depth)
{
    const IrInstr *in = &f->ins[v];
    if (in->type.rank == 0 || in->op == IR_ARANGE || in->op == IR_CONST)
        return true;
    if (!(ir_op_flags[in->op] & F_ELEM) || depth > 4)
        return false;
    for (int j = 0; j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0 && !index_expr(f, in->opnd[j], depth + 1))
            return false;
    return true;
}

/* One pass: a virtual tile whose reader does not read it by element index
 * (an elementwise op, a var.set, a reduction, a scan, a broadcast, a
 * transpose, a virtual reshape, a stored value, a dot's splat accumulator)
 * gets storage. Returns whether any did. */
static bool unfuse_readers(BkGpuEm *em, const int *regof)
{
    const IrFunc *f = em->f;
    bool changed = false;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *in = &f->ins[u];
        if (regof[u] < 0 || in->dead)
            continue;
        int ops[4 + IR_MAX_RANK];
        int k = operands(f, u, ops);
        for (int j = 0; j < k; j++) {
            int v = ops[j];
            bool ok = (ir_op_flags[in->op] & F_ELEM) || in->op == IR_VSET ||
                      (in->op == IR_RESHAPE && em->virt[u]) ||
                      in->op == IR_REDUCE || in->op == IR_SCAN ||
                      in->op == IR_BCAST || in->op == IR_PERMUTE ||
                      (in->op == IR_STORE && v == in->opnd[0] && v != in->opnd[1]) ||
                      /* a splat accumulator: the dot starts from its value */
                      (in->op == IR_DOT && v == in->opnd[2] && v != in->opnd[0] &&
                       v != in->opnd[1] && f->ins[v].op == IR_CONST);
            if (in->view >= 0 && in->op != IR_STORE)
                ok = false;
            if (in->view >= 0) /* a gather index is read directly */
                for (int d = 0; d < f->views[in->view].ndims; d++)
                    if (f->views[in->view].d[d].val == v)
                        ok = false;
            if (!ok && em->virt[v]) {
                em->virt[v] = false;
                changed = true;
            }
        }
    }
    return changed;
}

bool bk_gpu_free_leaf(const BkGpuEm *em, int x)
{
    int op = em->f->ins[x].op;
    return em->virt[x] && (op == IR_CONST || op == IR_ARANGE || op == IR_RESHAPE);
}

int bk_gpu_analyze(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    int n = f->nins;
    int *regof = malloc(sizeof(int) * (size_t)(n + 1));
    int *owner = malloc(sizeof(int) * (size_t)(f->nregions + 1));
    em->tma_fr = -1; /* gpu_tma.c decides, at the end of the layout pass */
    em->pos = calloc((size_t)n + 1, sizeof(int));
    em->end = calloc((size_t)n + 1, sizeof(int));
    em->last = calloc((size_t)n + 1, sizeof(int));
    em->alias = calloc((size_t)n + 1, sizeof(int));
    em->var_of = calloc((size_t)n + 1, sizeof(int));
    em->virt = calloc((size_t)n + 1, sizeof(bool));
    em->off = calloc((size_t)n + 1, sizeof(long long));
    em->var_off = calloc((size_t)f->nvars + 1, sizeof(long long));
    em->pipe = calloc((size_t)n + 1, sizeof(int));
    if (!em->pipe || !regof || !owner || !em->pos || !em->end || !em->last || !em->alias ||
        !em->var_of || !em->off || !em->var_off || !em->virt) {
        free(regof);
        free(owner);
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        regof[i] = -1;
        em->alias[i] = i;
        em->var_of[i] = -1;
        em->off[i] = -1;
    }
    for (int r = 0; r < f->nregions; r++)
        owner[r] = -1;
    int p = 0;
    number_region(em, 0, &p, regof, owner);
    bk_gpu_pipe_plan(em); /* cp.async rings (gpu_mem.c) */

    /* virtual tiles: splat CONSTs and BCASTs whose every use reads them by
     * element index (elementwise ops, reductions, scans, stored values,
     * var stores, other BCASTs/PERMUTEs) */
    int *uses = calloc((size_t)n + 1, sizeof(int));
    int *user = calloc((size_t)n + 1, sizeof(int));
    if (!uses || !user) {
        free(uses);
        free(user);
        free(regof);
        free(owner);
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    for (int u = 0; u < n; u++) {
        if (regof[u] < 0 || f->ins[u].dead)
            continue;
        int ops[4 + IR_MAX_RANK];
        int k = operands(f, u, ops);
        for (int j = 0; j < k; j++) {
            uses[ops[j]]++;
            user[ops[j]] = u;
        }
    }
    for (int i = 0; i < n; i++) {
        const IrInstr *in = &f->ins[i];
        bool live = regof[i] >= 0 && !in->dead && is_tile(in);
        /* an arange and a reshape of a tile are index arithmetic too: an
         * arange's element e is start + e, a reshape's its operand's
         * element e (e.g. flash attention's `cols = n + arange(BN)` read as
         * cols[None, :] by a mask: no shared tile, no barrier) */
        em->virt[i] = live && (in->op == IR_CONST || in->op == IR_BCAST ||
                               in->op == IR_ARANGE ||
                               (in->op == IR_RESHAPE && is_tile(&f->ins[in->opnd[0]]) &&
                                index_expr(f, in->opnd[0], 0)));
        /* an elementwise tile used once, in its own region: fused into the
         * expression of its user */
        if (live && (ir_op_flags[in->op] & F_ELEM) && uses[i] == 1 &&
            regof[user[i]] == regof[i])
            em->virt[i] = true;
    }
    free(uses);
    free(user);
    /* until nothing changes: a reshape reads its operand by element index
     * only while it is virtual itself (else it shares the storage) */
    while (unfuse_readers(em, regof))
        ;
    /* trans(t) read only as an operand b of register dots (gpu_mmadot.c reads
     * t itself, ldmatrix without .trans): no storage, no loop */
    for (int i = 0; i < n; i++)
        if (tdot_ok(em, i, regof))
            em->virt[i] = true;
    /* bound the size of fused expressions: at most 3 fused ops deep */
    int *depth = calloc((size_t)n + 1, sizeof(int));
    if (depth) {
        for (int i = 0; i < n; i++) {
            if (!em->virt[i])
                continue;
            int dmax = 0;
            for (int j = 0; j < 3; j++) {
                int v = f->ins[i].opnd[j];
                if (v >= 0 && v < i && em->virt[v] && depth[v] > dmax)
                    dmax = depth[v];
            }
            /* an arange is a leaf like a splat; a reshape adds no op */
            depth[i] = f->ins[i].op == IR_ARANGE ? 0
                       : f->ins[i].op == IR_RESHAPE ? dmax : dmax + 1;
            if (depth[i] > 3 && f->ins[i].op != IR_CONST) {
                em->virt[i] = false;
                depth[i] = 0;
            }
        }
        free(depth);
    }

    /* aliases: RESHAPE of a tile to a tile shares its operand's storage */
    for (int i = 0; i < n; i++) {
        const IrInstr *in = &f->ins[i];
        if (regof[i] < 0 || in->dead)
            continue;
        if (in->op == IR_RESHAPE && is_tile(in) && is_tile(&f->ins[in->opnd[0]]) &&
            !em->virt[i])
            em->alias[i] = in_root(em, in->opnd[0]);
        em->last[i] = em->pos[i];
    }
    /* live ranges of storage roots */
    for (int u = 0; u < n; u++) {
        if (regof[u] < 0 || f->ins[u].dead)
            continue;
        int ops[4 + IR_MAX_RANK];
        int k = operands(f, u, ops);
        for (int j = 0; j < k; j++)
            use(em, ops[j], u, regof, owner);
    }
    /* VGET of a tile var reads the var's storage in place when no VSET of
     * that var falls inside the value's live range */
    for (int i = 0; i < n; i++) {
        const IrInstr *in = &f->ins[i];
        if (regof[i] < 0 || in->dead || in->op != IR_VGET || !is_tile(in) ||
            em->alias[i] != i)
            continue;
        bool clobbered = false;
        for (int u = 0; u < n && !clobbered; u++)
            if (regof[u] >= 0 && !f->ins[u].dead && f->ins[u].op == IR_VSET &&
                f->ins[u].param == in->param && em->pos[u] > em->pos[i] &&
                em->pos[u] <= em->last[i]) {
                /* `var = f(var)` with f fused and elementwise: each thread
                 * reads element e of the var before it writes element e */
                bool in_place = em->pos[u] == em->last[i] &&
                                regof[u] == regof[i] &&
                                reads_at(em, f->ins[u].opnd[0], i) < 2;
                if (!in_place)
                    clobbered = true;
            }
        if (!clobbered)
            em->var_of[i] = in->param;
    }

    /* which tiles live in registers (gpu_layouts.c) */
    if (bk_gpu_layouts(em, regof) < 0) {
        free(regof);
        free(owner);
        return -1;
    }
    /* shared memory: tile vars first (live throughout), then first fit */
    long long top = 0;
    for (int v = 0; v < f->nvars; v++) {
        em->var_off[v] = -1;
        if (f->vars[v].type.rank == 0 || em->vmma[v].on || em->vsl[v] >= 0 || em->vmrow[v] >= 0)
            continue;
        em->var_off[v] = top;
        top += (ir_numel(&f->vars[v].type) *
                    dsl_dtype_bytes(f->vars[v].type.dtype) + 15) & ~15LL;
    }
    long long base = top;
    long long *sz = calloc((size_t)n + 1, sizeof(long long));
    int *order = malloc(sizeof(int) * (size_t)(n + 1));
    int *first = malloc(sizeof(int) * (size_t)(n + 1)); /* live from */
    int nord = 0;
    if (!sz || !order || !first) {
        free(first);
        free(sz);
        free(order);
        free(regof);
        free(owner);
        bk_gpu_fail(em, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        first[i] = em->pos[i];
    for (int i = 0; i < n; i++) {
        const IrInstr *in = &f->ins[i];
        if (regof[i] < 0 || in->dead || !is_tile(in) || em->alias[i] != i ||
            (em->var_of[i] >= 0 && em->lay[i] != BK_LAY_SLICE && em->lay[i] != BK_LAY_MROW) || em->virt[i] ||
            em->lay[i] == BK_LAY_MMA || em->lay[i] == BK_LAY_BLOCKED || em->lay[i] == BK_LAY_REG ||
            (em->lay[i] == BK_LAY_SLICE && !em->scvt[i]) ||
            (em->lay[i] == BK_LAY_MROW && !em->mrcvt[i]))
            continue;
        sz[i] = (ir_numel(&in->type) * dsl_dtype_bytes(in->type.dtype) + 15) &
                ~15LL;
        order[nord++] = i;
        /* a cp.async ring: stages(S) slots, written from the prologue
         * before its loop to the loop's last iteration */
        if (in->op == IR_LOAD && em->pipe[i] >= 0) {
            int fr = em->pipe[i];
            sz[i] *= bk_gpu_pipe_slots(em);
            first[i] = em->pos[fr];
            if (em->last[i] < em->end[fr])
                em->last[i] = em->end[fr];
            /* a persistent kernel's producer refills it for the next
             * tile while the consumers run this tile's epilogue */
            if (em->persist && em->tma[i])
                em->last[i] = INT_MAX / 2;
            /* split at the top (gpu_ws.c): the producer fills it while
             * the consumers run the body before the loop */
            if (em->ws_top && em->tma[i])
                first[i] = 0;
        }
        /* persistent flash attention's q by TMA (gpu_persist.c): the
         * producer writes it for the next tile while the consumers finish
         * this one */
        if (i == em->tmaq) {
            first[i] = 0;
            em->last[i] = INT_MAX / 2;
        }
    }
    /* by position (insertion sort; kernels are small) */
    for (int a = 1; a < nord; a++) {
        int x = order[a], b = a - 1;
        while (b >= 0 && first[order[b]] > first[x]) {
            order[b + 1] = order[b];
            b--;
        }
        order[b + 1] = x;
    }
    for (int a = 0; a < nord; a++) {
        int x = order[a];
        /* a swizzled wgmma operand starts on its pattern (8 rows of its
         * span: the swizzle is on address bits, gpu_wgmma.c) */
        const long long al = em->wgs && em->wgs[x] ? 8LL * em->wgs[x] : 16;
        long long at = (base + al - 1) / al * al;
        bool moved = true;
        while (moved) {
            moved = false;
            for (int b = 0; b < a; b++) {
                int y = order[b];
                bool overlap = first[y] <= em->last[x] &&
                               first[x] <= em->last[y];
                if (overlap && at < em->off[y] + sz[y] && em->off[y] < at + sz[x]) {
                    at = (em->off[y] + sz[y] + al - 1) / al * al;
                    moved = true;
                }
            }
        }
        em->off[x] = at;
        if (at + sz[x] > top)
            top = at + sz[x];
    }
    if (em->tma_fr >= 0) { /* the TMA ring's mbarriers (gpu_tma.c) */
        em->tma_bar = (top + 7) & ~7LL;
        top = em->tma_bar + 8LL * em->stages * (em->ws ? 2 : 1); /* full[], empty[] */
        if (em->tmaq >= 0) /* q's full and empty (gpu_persist.c) */
            top += 16;
    }
    if (em->tstore >= 0) { /* the TMA-store epilogue's staging tile (gpu_persist.c) */
        const long long at = (top + 1023) & ~1023LL; /* the 128B swizzle's pattern */
        if (at + bk_gpu_tstore_bytes(em) <= 232448) { /* sm_90's 227 KiB */
            em->tst_off = at;
            top = at + bk_gpu_tstore_bytes(em);
        } else {
            em->tstore = -1; /* the epilogue from the registers */
        }
    }
    em->smem = top;
    free(first);
    free(sz);
    free(order);
    free(regof);
    free(owner);
    return 0;
}

void bk_gpu_em_free(BkGpuEm *em)
{
    free(em->pos);
    free(em->end);
    free(em->last);
    free(em->alias);
    free(em->var_of);
    free(em->virt);
    free(em->off);
    free(em->var_off);
    free(em->pipe);
    free(em->lay);
    free(em->cvt);
    free(em->vmma);
    free(em->mvar);
    free(em->swz);
    free(em->inblk);
    free(em->spar);
    free(em->scvt);
    free(em->vsl);
    free(em->rroot);
    free(em->rcvt);
    free(em->rfb);
    free(em->rred);
    free(em->areg);
    free(em->rowc);
    free(em->mrow);
    free(em->mrcvt);
    free(em->vmrow);
    free(em->wgl);
    free(em->wgs);
    free(em->tma);
    free(em->wgd);
    free(em->wga);
    free(em->wgk);
    em->wgk = NULL;
    free(em->wgq);
    em->wgq = NULL;
    free(em->wgqz);
    em->wgqz = NULL;
    em->wgl = NULL;
    em->wgd = NULL;
    em->wga = NULL;
    em->mrow = em->vmrow = NULL;
    em->mrcvt = NULL;
    em->rowc = NULL;
    em->rroot = NULL;
    em->rcvt = em->rfb = em->rred = em->areg = NULL;
    em->vsl = NULL;
    em->spar = NULL;
    em->scvt = NULL;
    em->inblk = NULL;
    em->mvar = NULL;
    em->swz = NULL;
    em->pipe = NULL;
    em->lay = NULL;
    em->cvt = NULL;
    em->vmma = NULL;
}

