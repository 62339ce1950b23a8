/* mem.c — LOAD / STORE / ATOMIC through an IrView on the CPU. A loop nest
 * walks the view in row-major order; each element's tensor coordinates come
 * from the view's scalar / range / gather indices, and an element is touched
 * only when 0 <= coord < shape on every dim (and its mask is set). Loads and
 * stores without masks get a runtime fast path: when every index is in
 * bounds and the innermost dim is contiguous, a plain copy loop that LLVM
 * vectorizes; a store computes its value there (fuse.c's inline values go
 * straight to memory, a row at a time through stream.c, which gives large
 * tensors non-temporal stores), and a load that fuse.c marks in place
 * (g->inpl) copies nothing when the whole view is contiguous and overlaps
 * no tensor stored to before its last read: its tile is the tensor's
 * memory. Other views of ranges and scalars without a mask (partly out of
 * bounds, or a strided last range) are copied row by row with the last
 * range clipped to the tensor (clipped); views with tile indices or masks
 * test every element. */
#include "cpu.h"

#include <string.h>

typedef struct MemCtx {
    CpuGen *g;
    const IrInstr *in;
    int id;                     /* in's value id */
    const IrView *v;
    int p, dt;                  /* tensor param, element dtype */
    LLVMTypeRef et;             /* memory type of an element */
    IrType vt;                  /* the view's type */
    int64_t vstr[IR_MAX_RANK];  /* row-major strides of the view */
    LLVMValueRef iv[IR_MAX_RANK];
    LLVMValueRef res;           /* result buffer (LOAD/ATOMIC) */
    LLVMValueRef data;          /* element pointer of the tensor (or of
                                   the peer's copy) */
    LLVMValueRef pok;           /* i1: the peer rank is valid */
    LLVMValueRef off;           /* element offset of the current element */
} MemCtx;

static LLVMValueRef to_i64(CpuGen *g, int id)
{
    return cpu_cvt(g, g->val[id], g->f->ins[id].type.dtype, DT_I64);
}

/* Tensor coordinate of dim d at the current loop position; *vj is the first
 * view dim belonging to d (advanced past it). */
static LLVMValueRef coord(MemCtx *c, int d, int *vj)
{
    CpuGen *g = c->g;
    int id = c->v->d[d].val;
    switch (c->v->d[d].kind) {
    case IDX_SCALAR: return to_i64(g, id);
    case IDX_RANGE: return LLVMBuildAdd(g->b, to_i64(g, id), c->iv[(*vj)++], "");
    default: {
        const IrType *t = &g->f->ins[id].type;
        LLVMValueRef lin = cpu_i64(g, 0);
        for (int k = 0; k < t->rank; k++) {
            lin = LLVMBuildMul(g->b, lin, cpu_i64(g, t->shape[k]), "");
            lin = LLVMBuildAdd(g->b, lin, c->iv[(*vj)++], "");
        }
        return cpu_cvt(g, cpu_elem(g, id, lin), t->dtype, DT_I64);
    }
    }
}

static LLVMValueRef atomic_op(MemCtx *c, LLVMValueRef ptr, LLVMValueRef x,
                              LLVMValueRef cmp)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    const LLVMAtomicOrdering ar = LLVMAtomicOrderingAcquireRelease;
    const LLVMAtomicOrdering aq = LLVMAtomicOrderingAcquire;
    int kind = c->in->attr, dt = c->dt;
    bool fl = dsl_is_float(dt), s = cpu_is_signed(dt);
    LLVMTypeRef it = LLVMIntTypeInContext(g->ctx, (unsigned)dsl_dtype_bytes(dt) * 8);
    LLVMValueRef ip = fl ? LLVMBuildBitCast(b, ptr, LLVMPointerType(it, 0), "") : ptr;
    if (fl && kind == ATOM_ADD && !cpu_is_narrow(dt))
        return LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpFAdd, ptr, x, ar, 0);
    LLVMValueRef xi = fl ? LLVMBuildBitCast(b, x, it, "") : x;
    if (kind == ATOM_CAS) {
        LLVMValueRef ci = fl ? LLVMBuildBitCast(b, cmp, it, "") : cmp;
        LLVMValueRef r = LLVMBuildAtomicCmpXchg(b, ip, ci, xi, ar, aq, 0);
        r = LLVMBuildExtractValue(b, r, 0, "");
        return fl ? LLVMBuildBitCast(b, r, c->et, "") : r;
    }
    if (kind == ATOM_XCHG) {
        LLVMValueRef r = LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpXchg, ip, xi, ar, 0);
        return fl ? LLVMBuildBitCast(b, r, c->et, "") : r;
    }
    if (!fl) {
        LLVMAtomicRMWBinOp op = kind == ATOM_ADD ? LLVMAtomicRMWBinOpAdd
            : kind == ATOM_AND ? LLVMAtomicRMWBinOpAnd
            : kind == ATOM_OR ? LLVMAtomicRMWBinOpOr
            : kind == ATOM_XOR ? LLVMAtomicRMWBinOpXor
            : kind == ATOM_MAX ? (s ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax)
            : (s ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin);
        return LLVMBuildAtomicRMW(b, op, ip, x, ar, 0);
    }
    /* float max/min (NaN propagates) and f16/bf16 add (in f32, rounded
     * once): compare-exchange loop */
    LLVMValueRef init = LLVMBuildLoad2(b, it, ip, "");
    LLVMSetOrdering(init, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(init, (unsigned)dsl_dtype_bytes(dt));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "cas");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "cas.done");
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef old = LLVMBuildPhi(b, it, "");
    LLVMAddIncoming(old, &init, &pre, 1);
    LLVMValueRef of = LLVMBuildBitCast(b, old, c->et, "");
    IrInstr fake;
    memset(&fake, 0, sizeof fake);
    fake.op = kind == ATOM_ADD ? IR_ADD : kind == ATOM_MAX ? IR_MAX : IR_MIN;
    fake.type = ir_scalar(dt);
    fake.opnd[0] = c->in->opnd[0];
    LLVMValueRef ops[2] = {of, x};
    LLVMValueRef nf = cpu_scalar_op(g, &fake, ops);
    LLVMValueRef r = LLVMBuildAtomicCmpXchg(b, ip, old, LLVMBuildBitCast(b, nf, it, ""),
                                            ar, aq, 0);
    LLVMValueRef got = LLVMBuildExtractValue(b, r, 0, "");
    LLVMValueRef okx = LLVMBuildExtractValue(b, r, 1, "");
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(b);
    LLVMAddIncoming(old, &got, &cur, 1);
    LLVMBuildCondBr(b, okx, done, loop);
    LLVMPositionBuilderAtEnd(b, done);
    return of;
}

/* One element at view index lin (i64) and tensor element pointer ptr,
 * guarded by ok. */
static void element(MemCtx *c, LLVMValueRef lin, LLVMValueRef ptr, LLVMValueRef ok)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    const IrInstr *in = c->in;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef act = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "m.do");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "m.join");
    LLVMBuildCondBr(b, ok, act, join);
    LLVMPositionBuilderAtEnd(b, act);
    LLVMValueRef got = NULL, other = NULL;
    if (in->op == IR_NOTIFY || in->op == IR_WAIT) {
        LLVMValueRef v = g->val[in->opnd[0]];
        if (in->op == IR_NOTIFY) {
            LLVMValueRef a[3] = {ptr, cpu_i32c(g, in->attr), v};
            cpu_call(g, "blkc_cpu_notify", g->vd, a, 3);
        } else {
            LLVMValueRef a[6] = {cpu_launch_ctx(g), ptr, cpu_i32c(g, in->attr),
                                 v, cpu_i64(g, in->param), c->off};
            cpu_call(g, "blkc_cpu_wait", g->i32, a, 6);
        }
    } else if (in->op == IR_LOAD) {
        got = LLVMBuildLoad2(b, c->et, ptr, "");
        other = in->opnd[1] >= 0 ? g->val[in->opnd[1]] : cpu_zero(g, c->dt);
        if (c->dt == DT_BOOL)
            other = LLVMBuildZExt(b, other, g->i8, "");
    } else if (in->op == IR_STORE) {
        cpu_mstore(g, cpu_elem(g, in->opnd[0], lin), ptr, c->dt);
    } else {
        LLVMValueRef cmp = in->opnd[1] >= 0 ? cpu_elem(g, in->opnd[1], lin) : NULL;
        got = atomic_op(c, ptr, cpu_elem(g, in->opnd[0], lin), cmp);
        other = LLVMConstNull(c->et);
    }
    LLVMBasicBlockRef actend = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    if (!got)
        return;
    LLVMValueRef phi = LLVMBuildPhi(b, c->et, "");
    LLVMValueRef vals[2] = {got, other};
    LLVMBasicBlockRef bbs[2] = {actend, pre};
    LLVMAddIncoming(phi, vals, bbs, 2);
    LLVMBuildStore(b, phi, cpu_gep(g, c->et, c->res, lin));
}

/* Open loops over view dims [from, rank) with lo 0. */
static void open_loops(MemCtx *c, CpuLoop *l, int from, int to)
{
    for (int j = from; j < to; j++) {
        cpu_loop_open(c->g, &l[j], cpu_i64(c->g, 0), cpu_i64(c->g, c->vt.shape[j]));
        c->iv[j] = l[j].iv;
    }
}

static void close_loops(MemCtx *c, CpuLoop *l, int from, int to)
{
    for (int j = to - 1; j >= from; j--)
        cpu_loop_close(c->g, &l[j]);
}

static LLVMValueRef view_lin(MemCtx *c, int n)
{
    LLVMValueRef lin = cpu_i64(c->g, 0);
    for (int j = 0; j < n; j++)
        lin = LLVMBuildAdd(c->g->b, lin, LLVMBuildMul(c->g->b, c->iv[j],
                           cpu_i64(c->g, c->vstr[j]), ""), "");
    return lin;
}

/* Address rank `peer`'s copy of a symmetric tensor: the same offset in its
 * heap, i.e. data + (heap_base[peer] - heap_base[rank]). Without a heap
 * table (a launch without ranks) only peer == rank is valid. */
static void peer_base(MemCtx *c, int peer_id)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    LLVMValueRef ctx = cpu_launch_ctx(g);
    LLVMValueRef rank = LLVMBuildSExt(b, LLVMBuildLoad2(b, g->i32,
        cpu_gep(g, g->i32, ctx, cpu_i64(g, 3)), ""), g->i64, "");
    LLVMValueRef world = LLVMBuildSExt(b, LLVMBuildLoad2(b, g->i32,
        cpu_gep(g, g->i32, ctx, cpu_i64(g, 4)), ""), g->i64, "");
    LLVMValueRef peer = to_i64(g, peer_id);
    c->pok = LLVMBuildICmp(b, LLVMIntULT, peer, world, "");
    LLVMValueRef pctx = LLVMBuildBitCast(b, ctx, LLVMPointerType(g->ptr, 0), "");
    LLVMValueRef hbp = LLVMBuildLoad2(b, g->ptr,
        cpu_gep(g, g->ptr, pctx, cpu_i64(g, 3)), "heap_base"); /* byte 24 */
    LLVMValueRef has = LLVMBuildIsNotNull(b, hbp, "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "peer.heap");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "peer.join");
    LLVMBuildCondBr(b, LLVMBuildAnd(b, has, c->pok, ""), yes, join);
    LLVMPositionBuilderAtEnd(b, yes);
    LLVMValueRef hp = LLVMBuildBitCast(b, hbp, LLVMPointerType(g->i64, 0), "");
    LLVMValueRef bp = LLVMBuildLoad2(b, g->i64, cpu_gep(g, g->i64, hp, peer), "");
    LLVMValueRef br = LLVMBuildLoad2(b, g->i64, cpu_gep(g, g->i64, hp, rank), "");
    LLVMValueRef dyes = LLVMBuildSub(b, bp, br, "");
    LLVMBasicBlockRef yend = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    LLVMValueRef delta = LLVMBuildPhi(b, g->i64, "delta");
    LLVMValueRef vals[2] = {dyes, cpu_i64(g, 0)};
    LLVMBasicBlockRef bbs[2] = {yend, pre};
    LLVMAddIncoming(delta, vals, bbs, 2);
    /* without a heap table, a peer other than this rank is invalid */
    LLVMValueRef self = LLVMBuildICmp(b, LLVMIntEQ, peer, rank, "");
    c->pok = LLVMBuildAnd(b, c->pok, LLVMBuildOr(b, has, self, ""), "");
    LLVMValueRef raw = LLVMBuildBitCast(b, c->data, LLVMPointerType(g->i8, 0), "");
    raw = LLVMBuildGEP2(b, g->i8, raw, &delta, 1, "peer.data");
    c->data = LLVMBuildBitCast(b, raw, LLVMTypeOf(c->data), "");
}

static void general(MemCtx *c, int mask)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    CpuLoop l[IR_MAX_RANK];
    int R = c->vt.rank;
    open_loops(c, l, 0, R);
    LLVMValueRef lin = view_lin(c, R);
    LLVMValueRef off = cpu_i64(g, 0), ok = LLVMConstInt(g->i1, 1, 0);
    int vj = 0;
    for (int d = 0; d < c->v->ndims; d++) {
        LLVMValueRef cd = coord(c, d, &vj);
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, cd,
                                               g->tshape[c->p][d], ""), "");
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, cd, g->tstride[c->p][d], ""), "");
    }
    if (mask >= 0)
        ok = LLVMBuildAnd(b, ok, cpu_elem(g, mask, lin), "");
    ok = LLVMBuildAnd(b, ok, c->pok, "");
    c->off = off;
    element(c, lin, cpu_gep(g, c->et, c->data, off), ok);
    close_loops(c, l, 0, R);
}

/* The unmasked load or store of a view of ranges and scalars (no tile
 * index) that the fast path does not take — partly out of bounds, or its
 * last range not the tensor's contiguous last dim (`Q[0 +: BP, 0]`, a
 * column): row by row, the last range clipped to the tensor, [lo, hi) in
 * view indices, copied by a loop with that range's stride and the rest of
 * a loaded row filled with the load's other value; a row whose other
 * coordinates are out of bounds is all fill (load) or skipped (store).
 * general() would test every element behind a branch: a tile with a short
 * last K step (`W[m +: 16, k +: 512]` with K = 768) cost 10x a whole one,
 * and RoPE's columns of [P, 2] (decode step, P = 384) 5 us against the C
 * loop's 0.4. */
static LLVMValueRef smin(CpuGen *g, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, a, b, ""), a, b, "");
}
static LLVMValueRef smax(CpuGen *g, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, a, b, ""), a, b, "");
}

static void clipped(MemCtx *c)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    CpuLoop l[IR_MAX_RANK], in;
    int R = c->vt.rank, nd = c->v->ndims;
    for (int j = 0; j < R; j++)
        c->iv[j] = cpu_i64(g, 0);
    open_loops(c, l, 0, R - 1);
    LLVMValueRef lin0 = view_lin(c, R - 1);
    LLVMValueRef off = cpu_i64(g, 0), ok = c->pok, zero = cpu_i64(g, 0);
    int vj = 0, dl = nd - 1; /* dl: the last range, view dim R - 1 */
    while (dl > 0 && c->v->d[dl].kind != IDX_RANGE)
        dl--;
    for (int d = 0; d < nd; d++) {
        LLVMValueRef cd = coord(c, d, &vj);
        if (d != dl)
            ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, cd, g->tshape[c->p][d], ""), "");
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, cd, g->tstride[c->p][d], ""), "");
    }
    /* off: the element at view column 0 (coordinate s of dim dl, maybe < 0) */
    LLVMValueRef s = to_i64(g, c->v->d[dl].val), L = cpu_i64(g, c->vt.shape[R - 1]);
    LLVMValueRef st = g->tstride[c->p][dl];
    LLVMValueRef lo = smin(g, smax(g, LLVMBuildNeg(b, s, ""), zero), L);
    LLVMValueRef hi = smin(g, smax(g, LLVMBuildSub(b, g->tshape[c->p][dl], s, ""),
                                           zero), L);
    hi = LLVMBuildSelect(b, ok, smax(g, hi, lo), lo, "");
    if (c->in->op == IR_LOAD) {
        LLVMValueRef other = c->in->opnd[1] >= 0 ? g->val[c->in->opnd[1]] : cpu_zero(g, c->dt);
        if (c->dt == DT_BOOL)
            other = LLVMBuildZExt(b, other, g->i8, "");
        LLVMValueRef row = cpu_gep(g, c->et, c->res, lin0);
        LLVMValueRef bounds[4] = {zero, lo, hi, L};
        for (int part = 0; part < 3; part++) { /* fill, copy, fill */
            cpu_loop_open(g, &in, bounds[part], bounds[part + 1]);
            LLVMValueRef v = part != 1 ? other
                : LLVMBuildLoad2(b, c->et, cpu_gep(g, c->et, c->data, LLVMBuildAdd(b, off,
                                 LLVMBuildMul(b, in.iv, st, ""), "")), "");
            LLVMBuildStore(b, v, cpu_gep(g, c->et, row, in.iv));
            cpu_loop_close(g, &in);
        }
    } else {
        cpu_loop_open(g, &in, lo, hi);
        cpu_mstore(g, cpu_elem(g, c->in->opnd[0], LLVMBuildAdd(b, lin0, in.iv, "")),
                   cpu_gep(g, c->et, c->data, LLVMBuildAdd(b, off,
                           LLVMBuildMul(b, in.iv, st, ""), "")), c->dt);
        cpu_loop_close(g, &in);
    }
    close_loops(c, l, 0, R - 1);
}

/* Streaming (non-temporal) stores, stream.c: a store whose tensor spans
 * STREAM_MIN_BYTES or more (decided at run time, below) and whose view rows
 * hold at least cpu_stream_min_row bytes gets them; the rest of the policy
 * is stream.c's. */
#define STREAM_MIN_BYTES ((int64_t)32 << 20)

/* i1: this store may stream (the tensor's byte span is large and its data
 * pointer element-aligned), or NULL when its rows are written without the
 * window buffer (short rows, no AVX, a peer's tensor, the switch). */
static LLVMValueRef stream_cond(MemCtx *c)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    int es = dsl_dtype_bytes(c->dt), R = c->vt.rank;
    if (g->vecw_bytes < 32 || cpu_switch(CPU_SW_NOSTREAM) || R < 1 || es < 1 ||
        64 % es != 0 || c->vt.shape[R - 1] * es < cpu_stream_min_row(g, c->in->opnd[0]) ||
        c->in->opnd[3] >= 0)
        return NULL;
    LLVMValueRef span = cpu_i64(g, 1);
    for (int d = 0; d < c->v->ndims; d++) {
        LLVMValueRef ext = LLVMBuildSub(b, g->tshape[c->p][d], cpu_i64(g, 1), "");
        span = LLVMBuildAdd(b, span, LLVMBuildMul(b, ext, g->tstride[c->p][d], ""), "");
    }
    LLVMValueRef big = LLVMBuildICmp(b, LLVMIntSGE, span,
                                     cpu_i64(g, STREAM_MIN_BYTES / es), "");
    LLVMValueRef addr = LLVMBuildPtrToInt(b, c->data, g->i64, "");
    LLVMValueRef al = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, addr,
                                    cpu_i64(g, es - 1), ""), cpu_i64(g, 0), "");
    return LLVMBuildAnd(b, big, al, "stream");
}

/* Copy loop for an in-bounds, unmasked view whose last dim is a contiguous
 * range; a STORE computes its value per element (an inline value goes
 * straight to the tensor). inplace: a LOAD whose view is contiguous as a
 * whole; no copy, returns the tensor's pointer to the first element. */
static LLVMValueRef fast(MemCtx *c, bool inplace)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    CpuLoop l[IR_MAX_RANK];
    int R = c->vt.rank, nd = c->v->ndims;
    LLVMValueRef stream = c->in->op == IR_STORE ? stream_cond(c) : NULL;
    int outer = inplace ? 0 : R - 1; /* in place: the first element only */
    for (int j = 0; j < R; j++)
        c->iv[j] = cpu_i64(g, 0);
    open_loops(c, l, 0, outer);
    LLVMValueRef lin0 = view_lin(c, R - 1);
    LLVMValueRef off = cpu_i64(g, 0);
    int vj = 0;
    for (int d = 0; d < nd; d++)
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, coord(c, d, &vj),
                                                g->tstride[c->p][d], ""), "");
    LLVMValueRef base = cpu_gep(g, c->et, c->data, off);
    if (inplace)
        return base;
    int64_t L = c->vt.shape[R - 1];
    if (c->in->op == IR_LOAD) {
        CpuLoop in;
        cpu_loop_open(g, &in, cpu_i64(g, 0), cpu_i64(g, L));
        LLVMValueRef tp = cpu_gep(g, c->et, base, in.iv);
        LLVMValueRef rp = cpu_gep(g, c->et, cpu_gep(g, c->et, c->res, lin0), in.iv);
        LLVMBuildStore(b, LLVMBuildLoad2(b, c->et, tp, ""), rp);
        cpu_loop_close(g, &in);
    } else {
        CpuRowStore rs = {c->in->opnd[0], c->dt, c->et, base, lin0, L, stream};
        cpu_store_row(g, &rs);
    }
    close_loops(c, l, 0, R - 1);
    if (stream) /* streaming stores are weakly ordered: order them before
                   whatever this instance does next (a signal, its end);
                   after plain ones it costs next to nothing */
        cpu_intrin(g, "llvm.x86.sse.sfence", NULL, 0, NULL, 0);
    return NULL;
}

/* [lo, hi) bytes of tensor param q (extents of 0: empty, at its data) */
static void tensor_bytes(CpuGen *g, int q, LLVMValueRef *lo, LLVMValueRef *hi)
{
    LLVMBuilderRef b = g->b;
    const IrParam *pq = &g->f->params[q];
    LLVMValueRef es = cpu_i64(g, dsl_dtype_bytes(pq->dtype));
    LLVMValueRef a = LLVMBuildPtrToInt(b, g->tdata[q], g->i64, "");
    LLVMValueRef l = a, h = LLVMBuildAdd(b, a, es, ""), empty = LLVMConstInt(g->i1, 0, 0);
    for (int d = 0; d < pq->rank; d++) {
        LLVMValueRef n = g->tshape[q][d];
        empty = LLVMBuildOr(b, empty, LLVMBuildICmp(b, LLVMIntSLE, n, cpu_i64(g, 0), ""), "");
        LLVMValueRef e = LLVMBuildMul(b, LLVMBuildMul(b, LLVMBuildSub(b, n, cpu_i64(g, 1), ""),
                                      g->tstride[q][d], ""), es, "");
        LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, e, cpu_i64(g, 0), "");
        l = LLVMBuildAdd(b, l, LLVMBuildSelect(b, neg, e, cpu_i64(g, 0), ""), "");
        h = LLVMBuildAdd(b, h, LLVMBuildSelect(b, neg, cpu_i64(g, 0), e, ""), "");
    }
    *lo = l;
    *hi = LLVMBuildSelect(b, empty, l, h, "");
}

/* i1: the tile of an in-place LOAD (contiguous, starting at the view's
 * first element) overlaps none of the tensors stored to before its last
 * read (g->inplw) */
static LLVMValueRef tile_disjoint(MemCtx *c, uint64_t mask)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    for (int j = 0; j < c->vt.rank; j++)
        c->iv[j] = cpu_i64(g, 0);
    LLVMValueRef off = cpu_i64(g, 0);
    int vj = 0;
    for (int d = 0; d < c->v->ndims; d++)
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, coord(c, d, &vj),
                                                g->tstride[c->p][d], ""), "");
    int es = dsl_dtype_bytes(c->dt);
    LLVMValueRef t0 = LLVMBuildAdd(b, LLVMBuildPtrToInt(b, c->data, g->i64, ""),
                                   LLVMBuildMul(b, off, cpu_i64(g, es), ""), "");
    LLVMValueRef t1 = LLVMBuildAdd(b, t0, cpu_i64(g, ir_numel(&c->vt) * es), "");
    LLVMValueRef ok = LLVMConstInt(g->i1, 1, 0);
    for (int q = 0; q < 64 && q < g->f->nparams; q++) {
        if (!(mask >> q & 1))
            continue;
        LLVMValueRef lo, hi;
        tensor_bytes(g, q, &lo, &hi);
        LLVMValueRef dis = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntULE, t1, lo, ""),
                                       LLVMBuildICmp(b, LLVMIntULE, hi, t0, ""), "");
        ok = LLVMBuildAnd(b, ok, dis, "");
    }
    return ok;
}

int cpu_gen_memop(CpuGen *g, int id)
{
    const IrFunc *f = g->f;
    const IrInstr *in = &f->ins[id];
    MemCtx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.in = in;
    c.id = id;
    if (in->view < 0 || in->view >= f->nviews || in->param < 0 ||
        in->param >= f->nparams || f->params[in->param].kind != PK_TENSOR)
        return cpu_fail(g, "bad memory operand");
    c.v = &f->views[in->view];
    c.p = in->param;
    c.dt = f->params[c.p].dtype;
    c.et = cpu_mtype(g, c.dt);
    if (c.v->ndims != f->params[c.p].rank)
        return cpu_fail(g, "view rank mismatch");
    ir_view_shape(f, c.v, &c.vt);
    c.vt.dtype = (uint8_t)c.dt;
    int64_t st = 1;
    for (int j = c.vt.rank - 1; j >= 0; j--) {
        c.vstr[j] = st;
        st *= c.vt.shape[j];
    }
    if (in->op == IR_ATOMIC) {
        char k = dsl_dtype_kind(c.dt);
        bool okt = k == 'i' || k == 'u' ||
                   c.dt == DT_F32 || c.dt == DT_F64 ||
                   ((c.dt == DT_F16 || c.dt == DT_BF16) && in->attr == ATOM_ADD);
        if (!okt)
            return cpu_fail(g, "atomic on %s tensors is not supported",
                            dsl_dtype_name(c.dt));
    }
    c.data = g->tdata[c.p];
    c.pok = LLVMConstInt(g->i1, 1, 0);
    if (in->opnd[3] >= 0)
        peer_base(&c, in->opnd[3]);
    bool sig = in->op == IR_NOTIFY || in->op == IR_WAIT;
    if (in->op != IR_STORE && !sig)
        c.res = c.vt.rank ? cpu_tile_buf(g, &c.vt) : cpu_alloca(g, c.et, 1);
    int mask = in->op == IR_LOAD ? in->opnd[0]
             : in->op == IR_STORE ? in->opnd[1]
             : in->op == IR_ATOMIC ? in->opnd[2] : -1;
    bool can_clip = in->op != IR_ATOMIC && !sig && mask < 0 && c.vt.rank > 0;
    for (int d = 0; d < c.v->ndims && can_clip; d++)
        if (c.v->d[d].kind == IDX_TILE)
            can_clip = false;
    bool can_fast = can_clip && c.v->d[c.v->ndims - 1].kind == IDX_RANGE;
    if (can_fast) {
        LLVMBuilderRef b = g->b;
        LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntEQ,
            g->tstride[c.p][c.v->ndims - 1], cpu_i64(g, 1), "");
        ok = LLVMBuildAnd(b, ok, c.pok, "");
        /* in place: every range dim but the innermost one spans whole
         * rows of the ones inside it (len 1 dims excepted); part (inpl 3,
         * a matvec's w): also when the last columns are past the end */
        bool inplace = in->op == IR_LOAD && g->inpl && g->inpl[id];
        bool strided = inplace && g->inpl[id] >= 2, part = inplace && g->inpl[id] == 3;
        LLVMValueRef kv = NULL; /* part: the columns in bounds */
        for (int d = 0; d < c.v->ndims; d++) {
            LLVMValueRef s = to_i64(g, c.v->d[d].val), sh = g->tshape[c.p][d];
            if (c.v->d[d].kind == IDX_SCALAR) {
                ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, s, sh, ""), "");
            } else if (part && d == c.v->ndims - 1) {
                ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, s, sh, ""), "");
                kv = smin(g, LLVMBuildSub(b, sh, s, ""), cpu_i64(g, c.v->d[d].len));
            } else {
                LLVMValueRef e = LLVMBuildAdd(b, s, cpu_i64(g, c.v->d[d].len), "");
                ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSGE, s,
                                                       cpu_i64(g, 0), ""), "");
                ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSLE, e, sh, ""), "");
            }
        }
        if (inplace && g->inplw[id])
            ok = LLVMBuildAnd(b, ok, tile_disjoint(&c, g->inplw[id]), "");
        int64_t span = 1;
        for (int d = c.v->ndims - 1; d >= 0 && inplace && !strided; d--) {
            if (c.v->d[d].kind != IDX_RANGE)
                continue;
            if (span > 1 && c.v->d[d].len > 1)
                ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ,
                    g->tstride[c.p][d], cpu_i64(g, span), ""), "");
            span *= c.v->d[d].len;
        }
        LLVMBasicBlockRef fb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "fast");
        LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "slow");
        LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "mem.end");
        LLVMBuildCondBr(b, ok, fb, sb);
        LLVMPositionBuilderAtEnd(b, fb);
        LLVMValueRef base = fast(&c, inplace);
        LLVMBasicBlockRef fend = LLVMGetInsertBlock(b);
        LLVMBuildBr(b, jb);
        LLVMPositionBuilderAtEnd(b, sb);
        clipped(&c);
        LLVMBasicBlockRef send = LLVMGetInsertBlock(b);
        LLVMBuildBr(b, jb);
        LLVMPositionBuilderAtEnd(b, jb);
        if (inplace) { /* the tile: the tensor itself, or the copy */
            LLVMValueRef phi = LLVMBuildPhi(b, LLVMTypeOf(c.res), "tile");
            LLVMValueRef vals[2] = {base, c.res};
            LLVMBasicBlockRef bbs[2] = {fend, send};
            LLVMAddIncoming(phi, vals, bbs, 2);
            c.res = phi;
        }
        if (strided) { /* its row stride: the tensor's, or the copy's */
            LLVMValueRef phi = LLVMBuildPhi(b, g->i64, "tile.ld");
            LLVMValueRef vals[2] = {g->tstride[c.p][0], cpu_i64(g, c.vt.shape[1])};
            LLVMBasicBlockRef bbs[2] = {fend, send};
            LLVMAddIncoming(phi, vals, bbs, 2);
            g->vld[id] = phi;
        }
        if (part) { /* its columns in bounds: kv in place, all in the copy */
            LLVMValueRef phi = LLVMBuildPhi(b, g->i64, "tile.kv");
            LLVMValueRef vals[2] = {kv, cpu_i64(g, c.vt.shape[1])};
            LLVMBasicBlockRef bbs[2] = {fend, send};
            LLVMAddIncoming(phi, vals, bbs, 2);
            g->vkn[id] = phi;
        }
    } else if (can_clip) {
        clipped(&c);
    } else {
        general(&c, mask);
    }
    if (in->op == IR_WAIT) { /* a failed wait ends this program instance */
        LLVMBuilderRef b = g->b;
        LLVMValueRef fp = cpu_gep(g, g->i32, cpu_launch_ctx(g), cpu_i64(g, 5));
        LLVMValueRef failed = LLVMBuildLoad2(b, g->i32, fp, "");
        LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "wait.ok");
        LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, failed, cpu_i32c(g, 0), ""),
                        g->exit, cont);
        LLVMPositionBuilderAtEnd(b, cont);
    }
    if (in->op != IR_STORE && !sig)
        g->val[id] = c.vt.rank ? c.res : cpu_mload(g, c.res, c.dt);
    return g->failed ? -1 : 0;
}
