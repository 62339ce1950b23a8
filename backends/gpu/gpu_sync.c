/* gpu_sync.c — which __syncthreads() between tile ops the GPU emitter may
 * leave out.
 *
 * Every tile op is a loop in which thread t handles flat elements
 * e = t, t + NT, ... (map 1) or, in vector form, the W-element runs starting
 * at e = t*W, (t + NT)*W, ... (map W). A barrier after op A is only needed
 * when a later op, before the next barrier, touches memory that another
 * thread touched since the last barrier, with at least one of the two
 * accesses a write (RAW, WAR, WAW). So the emitter keeps, per barrier-free
 * segment, the shared-memory byte ranges read and written (BkGpuAcc) and
 * whether global memory was read / written, and puts a barrier before op B
 * only when one of B's accesses conflicts:
 *  - shared memory: two overlapping accesses, one a write, conflict unless
 *    both have the same map k > 0, the same base offset and element size:
 *    then byte b of element e is touched only by thread (e / k) % NT in both
 *    (elementwise chains: `x = load; y = exp(x); z = y * 2` need no barrier);
 *  - global memory: tensor arguments may alias and views map elements to
 *    addresses arbitrarily, so a global write conflicts with any earlier
 *    global access of the segment, a global read with an earlier write.
 * Reads through a broadcast, a permute, a gather index or a reduction are
 * map 0 (any thread), so they conflict with writes of the segment. A dot
 * into registers (an MMA var's, or a register value with no shared tile)
 * only reads its operands; other dots,
 * reductions, scans, atomics, signals and scalar stores keep their own
 * barriers and are never merged into a segment (bk_gpu_barrier_before puts
 * the owed barrier before them). Control flow (for, while, if, return)
 * and the end of every nested region pay the owed barrier too, so loop
 * back edges and branches never see a half-finished segment.
 * BLKC_GPU_NOSYNCELIM=1 keeps a barrier after every tile op. */
#include "gpu_emit.h"

#include <string.h>

typedef struct {
    BkGpuAcc a[24];
    int n;
    bool gread, gwrite;
    bool bad;          /* an access could not be described */
} Accs;

static void add(Accs *s, long long off, long long bytes, int sz, int map, bool write)
{
    if (s->n >= (int)(sizeof s->a / sizeof s->a[0]) || off < 0) {
        s->bad = true;
        return;
    }
    BkGpuAcc *a = &s->a[s->n++];
    a->off = off;
    a->bytes = bytes;
    a->sz = sz;
    a->map = map;
    a->write = write;
}

/* The shared-memory storage of tile value v (see decl_tile in gpu_emit.c). */
static void tile_acc(const BkGpuEm *em, Accs *s, int v, int map, bool write)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[v];
    int r = v;
    while (em->alias[r] != r)
        r = em->alias[r];
    int sz = dsl_dtype_bytes(in->type.dtype);
    long long bytes = ir_numel(&in->type) * sz;
    if (em->swz && em->swz[r])
        map = 0; /* swizzled: element e's bytes are elsewhere */
    if (em->lay[r] == BK_LAY_BLOCKED || em->lay[r] == BK_LAY_REG)
        return; /* registers of the thread that owns the element */
    if (BK_GPU_RV(em, r) && em->rfb[r] && !em->rcvt[r])
        return; /* only the FMA path's copy, with barriers of its own */
    if (BK_GPU_RV(em, r))
        map = 0; /* written from an MMA layout's registers */
    if (em->lay[r] == BK_LAY_MROW) { /* registers; the copy by one lane a row */
        if (em->mrcvt[r])
            add(s, em->off[r], bytes, sz, 0, write);
        return;
    }
    if (em->lay[r] == BK_LAY_SLICE) { /* registers; the copy by any thread */
        if (em->scvt[r])
            add(s, em->off[r], bytes, sz, 0, write);
        return;
    }
    if (em->var_of[r] >= 0) {
        add(s, em->var_off[em->var_of[r]], bytes, sz, map, write);
    } else if (f->ins[r].op == IR_LOAD && em->pipe[r] >= 0) {
        /* a cp.async ring: which slot is a run-time value; the whole ring
         * as touched by any thread */
        add(s, em->off[r], bk_gpu_pipe_slot(em, r) * bk_gpu_pipe_slots(em), sz, 0, write);
    } else {
        add(s, em->off[r], bytes, sz, map, write);
    }
}

/* The tiles the expression of v at element e reads (fused ops included). */
static void reads(const BkGpuEm *em, Accs *s, int v, int map, int depth)
{
    const IrInstr *in = &em->f->ins[v];
    if (in->type.rank == 0 || (em->lay[v] == BK_LAY_MMA && !em->virt[v]) ||
        em->lay[v] == BK_LAY_REG)
        return; /* scalars, registers (an MMA var.get, a dot, a register value) */
    if (em->lay[v] == BK_LAY_MMA)
        map = 0; /* an expression per MMA register: its elements are the
                  * lane's fragment elements, not the block-strided map */
    if (depth > 8) {
        s->bad = true;
        return;
    }
    if (em->virt[v]) {
        if (in->op == IR_CONST)
            return;
        if (in->op == IR_BCAST || in->op == IR_PERMUTE) { /* the index changes: any thread */
            reads(em, s, in->opnd[0], 0, depth + 1);
            return;
        }
        for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
            if (in->opnd[j] >= 0)
                reads(em, s, in->opnd[j], map, depth + 1);
        return;
    }
    tile_acc(em, s, v, map, false);
}

/* reads() of the operand x of a register op (a register value, a
 * reduction from registers, a dot taking a from registers): the register
 * values there are read in place, not from their shared copies. */
static void rv_reads(const BkGpuEm *em, Accs *s, int x, int depth)
{
    const IrInstr *in = &em->f->ins[x];
    if (BK_GPU_RV(em, x) && !em->virt[x])
        return;
    if (!em->virt[x] || in->op == IR_BCAST || depth > 8 || !(ir_op_flags[in->op] & F_ELEM)) {
        reads(em, s, x, 0, depth);
        return;
    }
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0)
            rv_reads(em, s, in->opnd[j], depth + 1);
}

/* Gather index tiles of a memory op's view: read at derived indices. */
static void view_reads(const BkGpuEm *em, Accs *s, const IrInstr *in)
{
    const IrView *v = &em->f->views[in->view];
    for (int d = 0; d < v->ndims; d++)
        if (v->d[d].kind == IDX_TILE)
            tile_acc(em, s, v->d[d].val, 0, false);
}

/* The thread map of op id's loop over a tile of type t: runs of W in the
 * blocked loop (thread (e / W) % NT), else 1. */
static int blk_map(const BkGpuEm *em, int id, const IrType *t)
{
    if (em->lay[id] == BK_LAY_MROW)
        return 0; /* a lane's rows: shared tiles read there by any thread */
    return em->lay[id] == BK_LAY_BLOCKED || em->inblk[id] ? bk_gpu_blk_w(em, t) : 1;
}

/* 1: emits no memory access (scalar registers, pointer declarations,
 * fused values); 0: a checked op, accesses in s; -1: anything else. */
static int classify(const BkGpuEm *em, int id, Accs *s)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    bool tile = in->type.rank > 0;
    memset(s, 0, sizeof *s);
    if (ir_op_flags[in->op] & F_ELEM) {
        if (!tile || em->virt[id])
            return 1;
        if (BK_GPU_RV(em, id)) { /* per register: its leaves by any thread */
            for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
                if (in->opnd[j] >= 0)
                    rv_reads(em, s, in->opnd[j], 0);
            tile_acc(em, s, id, 0, true);
            return s->bad ? -1 : 0;
        }
        for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
            if (in->opnd[j] >= 0)
                reads(em, s, in->opnd[j], blk_map(em, id, &in->type), 0);
        tile_acc(em, s, id, blk_map(em, id, &in->type), true);
        return s->bad ? -1 : 0;
    }
    switch (in->op) {
    case IR_PARAM: case IR_SIZE: case IR_PID: case IR_NPROG: case IR_RANK:
    case IR_WORLD:
        return 1;
    case IR_CONST:
        if (!tile || em->virt[id])
            return 1;
        tile_acc(em, s, id, 1, true);
        break;
    case IR_ARANGE:
        if (em->virt[id])
            return 1; /* computed where read: no code */
        tile_acc(em, s, id, 1, true);
        break;
    case IR_BCAST: case IR_RESHAPE: case IR_PERMUTE: {
        const IrInstr *a = &f->ins[in->opnd[0]];
        if (tile && (em->virt[id] || em->alias[id] != id))
            return 1; /* computed where read / same storage: no code */
        if (a->type.rank > 0)
            reads(em, s, in->opnd[0], 0, 0);
        if (tile)
            tile_acc(em, s, id, 1, true);
        break;
    }
    case IR_VGET:
        if (tile && em->lay[id] == BK_LAY_MROW && em->mrcvt[id]) {
            tile_acc(em, s, id, 0, true); /* registers -> its copy, one lane a row */
            break;
        }
        if (tile && (em->lay[id] == BK_LAY_SLICE || em->lay[id] == BK_LAY_MROW))
            return 1; /* registers (a conversion notes its own write) */
        if (tile && em->cvt[id]) { /* registers -> its tile, by fragment */
            tile_acc(em, s, id, 0, true);
            break;
        }
        if (!tile || em->var_of[id] >= 0 || em->lay[id] == BK_LAY_MMA)
            return 1;
        add(s, em->var_off[in->param], ir_numel(&in->type) * dsl_dtype_bytes(in->type.dtype),
            dsl_dtype_bytes(in->type.dtype), 1, false);
        tile_acc(em, s, id, 1, true);
        break;
    case IR_VSET: {
        const IrType *vt = &f->vars[in->param].type;
        if (em->vmma[in->param].on) { /* registers: what its expression reads */
            int x = in->opnd[0], rest = -1, d = bk_gpu_set_dot(em, x, &rest);
            if (d == x || (f->ins[x].op == IR_CONST && em->virt[x]))
                return 1;
            reads(em, s, d >= 0 ? rest : x, 0, 0);
            if (d >= 0) {
                reads(em, s, f->ins[d].opnd[0], 0, 0);
                reads(em, s, f->ins[d].opnd[1], 0, 0);
            }
            break;
        }
        if (vt->rank == 0)
            return 1;
        if (em->vsl[in->param] >= 0 || em->vmrow[in->param] >= 0) { /* registers: what its value reads */
            reads(em, s, in->opnd[0], 0, 0);
            break;
        }
        reads(em, s, in->opnd[0], 1, 0);
        add(s, em->var_off[in->param], ir_numel(vt) * dsl_dtype_bytes(vt->dtype),
            dsl_dtype_bytes(vt->dtype), 1, true);
        break;
    }
    case IR_REDUCE:
        if (em->rred && em->rred[id]) { /* registers; one lane writes each row */
            rv_reads(em, s, in->opnd[0], 0);
            tile_acc(em, s, id, 0, true);
            break;
        }
        if (em->lay[id] == BK_LAY_SLICE) { /* registers (the conversion to
                                           * shared is noted when emitted) */
            reads(em, s, in->opnd[0], 0, 0);
            break;
        }
        /* whole tile: the operand read by any thread; its own
                     * barrier before the per-warp results are combined */
        if (tile || f->ins[in->opnd[0]].type.rank == 0)
            return -1;
        reads(em, s, in->opnd[0], 0, 0);
        break;
    case IR_DOT: /* accumulating in registers: reads its operands only */
        if (em->lay[id] == BK_LAY_REG) { /* a register value: no shared tile */
            for (int j = 0; j < 3; j++) {
                if (in->opnd[j] >= 0 && BK_GPU_RV(em, in->opnd[j]) && em->rfb[in->opnd[j]])
                    return -1; /* the FMA path reads a copy gpu_sync.c does not track */
                if (in->opnd[j] >= 0)
                    reads(em, s, in->opnd[j], 0, 0);
            }
            break;
        }
        if (em->lay[id] != BK_LAY_MMA)
            return -1;
        if (in->opnd[2] < 0)
            return 1; /* runs at its var.set */
        reads(em, s, in->opnd[0], 0, 0);
        reads(em, s, in->opnd[1], 0, 0);
        break;
    case IR_LOAD: {
        if (em->pipe[id] >= 0)
            return 1; /* a pointer into its ring (filled by cp.async) */
        int map = tile ? bk_gpu_vec_width(em, id) : 0;
        if (!map)
            map = 1;
        if (em->swz[id])
            map = 0; /* swizzled: element e's bytes are elsewhere */
        if (em->lay[id] == BK_LAY_BLOCKED)
            map = bk_gpu_blk_w(em, &in->type);
        s->gread = true;
        view_reads(em, s, in);
        if (tile) {
            if (in->opnd[0] >= 0)
                reads(em, s, in->opnd[0], map, 0);
            tile_acc(em, s, id, map, true);
        }
        break;
    }
    case IR_STORE: {
        IrType vt;
        memset(&vt, 0, sizeof vt);
        ir_view_shape(f, &f->views[in->view], &vt);
        if (vt.rank == 0)
            return -1; /* thread 0, with its own barrier */
        int map = bk_gpu_vec_width(em, id);
        if (!map)
            map = 1;
        if (em->inblk[id])
            map = bk_gpu_blk_w(em, &vt);
        s->gwrite = true;
        view_reads(em, s, in);
        reads(em, s, in->opnd[0], map, 0);
        if (in->opnd[1] >= 0)
            reads(em, s, in->opnd[1], map, 0);
        break;
    }
    default:
        return -1;
    }
    return s->bad ? -1 : 0;
}

static bool conflicts(const BkGpuEm *em, const Accs *s)
{
    if ((s->gwrite && (em->seg_gread || em->seg_gwrite)) || (s->gread && em->seg_gwrite))
        return true;
    for (int i = 0; i < s->n; i++) {
        const BkGpuAcc *a = &s->a[i];
        for (int j = 0; j < em->nacc; j++) {
            const BkGpuAcc *x = &em->acc[j];
            if (!a->write && !x->write)
                continue;
            if (a->off >= x->off + x->bytes || x->off >= a->off + a->bytes)
                continue; /* disjoint */
            if (a->map > 0 && a->map == x->map && a->off == x->off && a->sz == x->sz)
                continue; /* same bytes, same thread */
            return true;
        }
    }
    return em->nacc + s->n > BK_GPU_MAXACC;
}

void bk_gpu_note_write(BkGpuEm *em, int id)
{
    Accs s;
    memset(&s, 0, sizeof s);
    tile_acc(em, &s, id, 0, true);
    if (s.bad || em->nacc + s.n > BK_GPU_MAXACC || em->nosyncelim) {
        bk_gpu_sync(em);
        return;
    }
    if (!em->pending) {
        em->nacc = 0;
        em->seg_gread = em->seg_gwrite = false;
    }
    for (int i = 0; i < s.n; i++)
        em->acc[em->nacc++] = s.a[i];
    em->pending = true;
}

void bk_gpu_barrier_flush(BkGpuEm *em)
{
    if (em->pending)
        bk_gpu_sync(em);
}

void bk_gpu_barrier_before(BkGpuEm *em, int id)
{
    Accs s;
    int k = classify(em, id, &s);
    em->seg_ok = false;
    em->seg_none = k == 0 && s.n == 0 && !s.gread && !s.gwrite;
    if (em->seg_none && !em->nosyncelim) {
        em->seg_ok = true; /* registers only: nothing to record or owe */
        return;
    }
    if (k == 1) {
        em->seg_ok = true; /* no loop of its own; nothing to record */
        return;
    }
    if (k < 0 || em->nosyncelim) {
        bk_gpu_barrier_flush(em);
        return;
    }
    if (em->pending && conflicts(em, &s))
        bk_gpu_sync(em);
    if (!em->pending) { /* a barrier was just passed: a new segment */
        em->nacc = 0;
        em->seg_gread = em->seg_gwrite = false;
    }
    for (int i = 0; i < s.n; i++)
        em->acc[em->nacc++] = s.a[i];
    em->seg_gread |= s.gread;
    em->seg_gwrite |= s.gwrite;
    em->seg_ok = true;
    /* owed from now on, also by ops without a loop (a scalar load, a
     * tile element read into a scalar): a later conflicting op pays it */
    em->pending = true;
}
