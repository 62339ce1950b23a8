/* tile.c — tile-shaped ops on the CPU: ARANGE, BCAST / RESHAPE / PERMUTE
 * (strided copies), REDUCE and SCAN (loops with an accumulator slot that
 * mem2reg promotes; a row of accumulators for a non-innermost axis, in
 * vector registers for f32 / f64 tiles in memory), and DOT as a
 * register-blocked micro-kernel: a rank-2 DOT packs B into k-major panels
 * of NR columns (converted to the accumulation type) and reads A in
 * place, then MR rows x NRV vectors of columns (CPU_DOT_BLOCKS, by the
 * host's vector width) are accumulated in SSA vectors with k innermost;
 * batched DOTs (and BLKC_CPU_NOPACK=1) use operands converted into padded
 * row-major buffers. */
#include "cpu.h"

#include <llvm-c/DebugInfo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static LLVMTypeRef et_of(CpuGen *g, int id)
{
    return cpu_mtype(g, g->f->ins[id].type.dtype);
}

/* dst[row-major over rt] = src[sum iv_i * sstr[i]] */
static void strided_copy(CpuGen *g, LLVMValueRef dst, LLVMValueRef src,
                         LLVMTypeRef et, const IrType *rt, const int64_t *sstr)
{
    LLVMBuilderRef b = g->b;
    CpuLoop l[IR_MAX_RANK];
    LLVMValueRef lin = cpu_i64(g, 0), off = cpu_i64(g, 0);
    for (int i = 0; i < rt->rank; i++) {
        cpu_loop_open(g, &l[i], cpu_i64(g, 0), cpu_i64(g, rt->shape[i]));
        lin = LLVMBuildAdd(b, LLVMBuildMul(b, lin, cpu_i64(g, rt->shape[i]), ""),
                           l[i].iv, "");
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, l[i].iv, cpu_i64(g, sstr[i]), ""), "");
    }
    LLVMValueRef v = LLVMBuildLoad2(b, et, cpu_gep(g, et, src, off), "");
    LLVMBuildStore(b, v, cpu_gep(g, et, dst, lin));
    for (int i = rt->rank - 1; i >= 0; i--)
        cpu_loop_close(g, &l[i]);
}

static void rowmajor_strides(const IrType *t, int64_t *s)
{
    int64_t st = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        s[i] = st;
        st *= t->shape[i];
    }
}

static void splat_fill(CpuGen *g, LLVMValueRef dst, const IrType *rt, LLVMValueRef v)
{
    CpuLoop l;
    cpu_loop_open(g, &l, cpu_i64(g, 0), cpu_i64(g, ir_numel(rt)));
    cpu_mstore(g, v, cpu_gep(g, cpu_mtype(g, rt->dtype), dst, l.iv), rt->dtype);
    cpu_loop_close(g, &l);
}

static int gen_shape(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    const IrType *rt = &in->type, *ot = &g->f->ins[in->opnd[0]].type;
    LLVMTypeRef et = et_of(g, in->opnd[0]);
    LLVMValueRef src = g->val[in->opnd[0]];
    if (rt->rank == 0) { /* e.g. reshape of a 1-element tile to a scalar */
        g->val[id] = ot->rank ? cpu_elem(g, in->opnd[0], cpu_i64(g, 0)) : src;
        return 0;
    }
    /* trans(B) of a DOT (fuse.c trans_b): the operand's buffer, its rows
     * B's columns */
    if (in->op == IR_PERMUTE && g->tdot && g->tdot[id]) {
        g->val[id] = src;
        g->vld[id] = g->vld[in->opnd[0]] ? g->vld[in->opnd[0]] : cpu_i64(g, ot->shape[1]);
        return 0;
    }
    /* a RESHAPE of a contiguous buffer is that buffer (a tile, or a tile
     * read in place without strided rows: fuse.c's last_read counts the
     * RESHAPE's readers as the LOAD's); tiles are never written after
     * they are computed, so the two names cannot drift apart */
    if (in->op == IR_RESHAPE && ot->rank > 0 && !g->inl[in->opnd[0]] &&
        !g->vld[in->opnd[0]] && !g->vkn[in->opnd[0]] && !cpu_switch(CPU_SW_NOALIAS)) {
        g->val[id] = src;
        return 0;
    }
    LLVMValueRef dst = cpu_tile_buf(g, rt);
    g->val[id] = dst;
    if (ot->rank == 0) {
        splat_fill(g, dst, rt, src);
        return 0;
    }
    int64_t os[IR_MAX_RANK], ss[IR_MAX_RANK];
    rowmajor_strides(ot, os);
    if (in->op == IR_RESHAPE) {
        LLVMBuildMemCpy(g->b, dst, 4, src, 4,
                        cpu_i64(g, ir_numel(rt) * dsl_dtype_bytes(rt->dtype)));
        return 0;
    }
    for (int i = 0; i < rt->rank; i++) {
        if (in->op == IR_PERMUTE) {
            ss[i] = os[in->perm[i]];
        } else {
            int k = i - (rt->rank - ot->rank);
            ss[i] = (k >= 0 && ot->shape[k] != 1) ? os[k] : 0;
        }
    }
    strided_copy(g, dst, src, et, rt, ss);
    return 0;
}

static LLVMValueRef splat(CpuGen *g, LLVMValueRef x, int vw);

/* max/min with NaN propagation on scalars or vectors (as float_op):
 * isnan(a) ? a : (a > b ? a : b); a NaN b loses the compare -> b. */
static LLVMValueRef fmaxmin(CpuGen *g, bool mx, LLVMValueRef a, LLVMValueRef v)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef c = LLVMBuildFCmp(b, mx ? LLVMRealOGT : LLVMRealOLT, a, v, "");
    LLVMValueRef r = LLVMBuildSelect(b, c, a, v, "");
    LLVMValueRef n = LLVMBuildFCmp(b, LLVMRealUNO, a, a, "");
    return LLVMBuildSelect(b, n, a, r, "");
}

static LLVMValueRef red_op(CpuGen *g, int kind, LLVMValueRef a, LLVMValueRef v)
{
    if (kind == RED_SUM)
        return LLVMBuildFAdd(g->b, a, v, "");
    return fmaxmin(g, kind == RED_MAX, a, v);
}

/* Float SUM / MAX / MIN over contiguous rows (inner == 1) of an f32/f64
 * tile: L partial results in a vector accumulator (L = two SIMD registers),
 * combined at the end by a halving tree, then the len % L tail in order.
 * NOTE: the float sum is therefore NOT in strict left-to-right order (lane
 * j sums elements j, j+L, j+2L, ...); results agree with the sequential sum
 * within normal float rounding tolerance, as on the GPU backends, which also
 * reduce as trees. MAX/MIN are exact whatever the order, and a NaN anywhere
 * still gives NaN (the vector loop keeps a NaN flag per lane beside its
 * one-compare maximum; fmaxmin keeps a NaN accumulator and a NaN element
 * wins the select); only the sign of a zero max/min of (+0, -0) and a
 * NaN's payload may differ. */
static int gen_reduce_vec(CpuGen *g, int id, int64_t outer, int64_t len, int L)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBuilderRef b = g->b;
    int x = in->opnd[0], kind = in->attr, dt = g->f->ins[x].type.dtype;
    const IrType *rt = &in->type;
    LLVMTypeRef et = cpu_stype(g, dt), vt = LLVMVectorType(et, (unsigned)L);
    unsigned al = (unsigned)dsl_dtype_bytes(dt);
    LLVMValueRef src = g->val[x];
    LLVMValueRef vacc = cpu_alloca(g, vt, 1), sacc = cpu_alloca(g, et, 1);
    LLVMTypeRef bt = LLVMVectorType(g->i1, (unsigned)L);
    LLVMValueRef nacc = cpu_alloca(g, bt, 1);
    LLVMValueRef dst = rt->rank ? cpu_tile_buf(g, rt) : cpu_alloca(g, et, 1);
    int64_t nv = len / L;
    CpuLoop lo, lv, lt;
    cpu_loop_open(g, &lo, cpu_i64(g, 0), cpu_i64(g, outer));
    LLVMValueRef row = cpu_gep(g, et, src, LLVMBuildMul(b, lo.iv, cpu_i64(g, len), ""));
    LLVMValueRef init = kind == RED_SUM ? LLVMConstNull(vt)
                      : splat(g, LLVMBuildLoad2(b, et, row, ""), L);
    LLVMBuildStore(b, init, vacc);
    LLVMBuildStore(b, LLVMConstNull(bt), nacc);
    cpu_loop_open(g, &lv, cpu_i64(g, 0), cpu_i64(g, nv));
    LLVMValueRef p = cpu_gep(g, et, row, LLVMBuildMul(b, lv.iv, cpu_i64(g, L), ""));
    p = LLVMBuildBitCast(b, p, LLVMPointerType(vt, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(b, vt, p, "");
    LLVMSetAlignment(v, al);
    LLVMValueRef a = LLVMBuildLoad2(b, vt, vacc, "");
    if (kind == RED_SUM) {
        LLVMBuildStore(b, red_op(g, kind, a, v), vacc);
    } else {
        /* v > a ? v : a (one maxps: NaN v loses, a NaN a stays), the NaNs
         * of v or'ed into nacc off the accumulator's dependence chain */
        LLVMValueRef c = LLVMBuildFCmp(b, kind == RED_MAX ? LLVMRealOGT
                                                          : LLVMRealOLT, v, a, "");
        LLVMBuildStore(b, LLVMBuildSelect(b, c, v, a, ""), vacc);
        LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, bt, nacc, ""),
                       LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), ""), nacc);
    }
    cpu_loop_close(g, &lv);
    /* halving tree over the lanes */
    a = LLVMBuildLoad2(b, vt, vacc, "");
    if (kind != RED_SUM) /* a NaN seen: NaN in its lane */
        a = LLVMBuildSelect(b, LLVMBuildLoad2(b, bt, nacc, ""),
                            LLVMConstReal(vt, NAN), a, "");
    for (int w = L / 2; w >= 1; w /= 2) {
        LLVMValueRef ml[32], mh[32];
        for (int i = 0; i < w; i++) {
            ml[i] = cpu_i32c(g, i);
            mh[i] = cpu_i32c(g, w + i);
        }
        LLVMValueRef lo_h = LLVMBuildShuffleVector(b, a, LLVMGetUndef(LLVMTypeOf(a)),
                                                   LLVMConstVector(ml, (unsigned)w), "");
        LLVMValueRef hi_h = LLVMBuildShuffleVector(b, a, LLVMGetUndef(LLVMTypeOf(a)),
                                                   LLVMConstVector(mh, (unsigned)w), "");
        a = red_op(g, kind, lo_h, hi_h);
    }
    LLVMBuildStore(b, LLVMBuildExtractElement(b, a, cpu_i32c(g, 0), ""), sacc);
    cpu_loop_open(g, &lt, cpu_i64(g, nv * L), cpu_i64(g, len));
    LLVMValueRef e = LLVMBuildLoad2(b, et, cpu_gep(g, et, row, lt.iv), "");
    LLVMBuildStore(b, red_op(g, kind, LLVMBuildLoad2(b, et, sacc, ""), e), sacc);
    cpu_loop_close(g, &lt);
    LLVMValueRef r = cpu_cvt(g, LLVMBuildLoad2(b, et, sacc, ""), dt, rt->dtype);
    cpu_mstore(g, r, cpu_gep(g, cpu_mtype(g, rt->dtype), dst, lo.iv), rt->dtype);
    cpu_loop_close(g, &lo);
    g->val[id] = rt->rank ? dst : cpu_mload(g, dst, rt->dtype);
    return g->failed ? -1 : 0;
}

/* SUM / MAX / MIN over a non-innermost axis (inner > 1): a row of inner
 * accumulators, each row of the input added in turn (the inner loop is
 * contiguous and vectorizes). Each accumulator sees its elements in the
 * same order as gen_reduce's scalar loop, so results are the same. */
static int gen_reduce_cols(CpuGen *g, int id, int64_t outer, int64_t len,
                           int64_t inner, int accdt)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBuilderRef b = g->b;
    int x = in->opnd[0], kind = in->attr;
    int idt = g->f->ins[x].type.dtype, rdt = in->type.dtype;
    const IrType *rt = &in->type;
    LLVMTypeRef at = cpu_stype(g, accdt), rmt = cpu_mtype(g, rdt);
    LLVMValueRef acc = cpu_alloca(g, at, inner);
    LLVMValueRef dst = rt->rank ? cpu_tile_buf(g, rt) : cpu_alloca(g, rmt, 1);
    CpuLoop lo, li, lr;
    cpu_loop_open(g, &lo, cpu_i64(g, 0), cpu_i64(g, outer));
    LLVMValueRef base = LLVMBuildMul(b, lo.iv, cpu_i64(g, len * inner), "");
    cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, inner));
    LLVMValueRef init = kind == RED_SUM ? LLVMConstNull(at)
                      : cpu_elem(g, x, LLVMBuildAdd(b, base, li.iv, ""));
    LLVMBuildStore(b, init, cpu_gep(g, at, acc, li.iv));
    cpu_loop_close(g, &li);
    cpu_loop_open(g, &lr, cpu_i64(g, kind == RED_SUM ? 0 : 1), cpu_i64(g, len));
    LLVMValueRef row = LLVMBuildAdd(b, base, LLVMBuildMul(b, lr.iv, cpu_i64(g, inner), ""), "");
    cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, inner));
    LLVMValueRef e = cpu_elem(g, x, LLVMBuildAdd(b, row, li.iv, ""));
    LLVMValueRef ap = cpu_gep(g, at, acc, li.iv);
    LLVMValueRef a = LLVMBuildLoad2(b, at, ap, ""), r;
    if (kind == RED_SUM) {
        LLVMValueRef ev = cpu_cvt(g, e, idt, accdt);
        r = dsl_is_float(accdt) ? LLVMBuildFAdd(b, a, ev, "") : LLVMBuildAdd(b, a, ev, "");
    } else {
        IrInstr fake;
        memset(&fake, 0, sizeof fake);
        fake.op = kind == RED_MAX ? IR_MAX : IR_MIN;
        fake.type = ir_scalar(idt);
        fake.opnd[0] = x;
        LLVMValueRef ops[2] = {a, e};
        r = cpu_scalar_op(g, &fake, ops);
    }
    if (r)
        LLVMBuildStore(b, r, ap);
    cpu_loop_close(g, &li);
    cpu_loop_close(g, &lr);
    cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, inner));
    LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, lo.iv, cpu_i64(g, inner), ""), li.iv, "");
    LLVMValueRef v = cpu_cvt(g, LLVMBuildLoad2(b, at, cpu_gep(g, at, acc, li.iv), ""),
                             accdt, rdt);
    cpu_mstore(g, v, cpu_gep(g, rmt, dst, o), rdt);
    cpu_loop_close(g, &li);
    cpu_loop_close(g, &lo);
    g->val[id] = rt->rank ? dst : cpu_mload(g, dst, rdt);
    return g->failed ? -1 : 0;
}

/* Loop metadata on br, the latch of a loop: llvm.loop.unroll.disable. */
static void no_unroll(CpuGen *g, LLVMValueRef br)
{
    LLVMContextRef c = g->ctx;
    LLVMMetadataRef dis = LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(c, &dis, 1)};
    LLVMMetadataRef loop = LLVMMDNodeInContext2(c, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, loop);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c, "llvm.loop", 9),
                    LLVMMetadataAsValue(c, loop));
}

/* The same reduction with the row of accumulators in vector registers:
 * one SSA vector across the loop over rows (an alloca of vector type,
 * which mem2reg promotes; gen_reduce_cols's array stays in memory, a
 * store and a reload per element and row). Same order per accumulator,
 * so the same results. For an f32 / f64 tile in memory (not an inline
 * value) whose inner extent is a multiple of the vector width and fits
 * in 16 vector registers (AVX-512; 12 of AVX2's 16): wider rows would
 * need passes over column blocks, which read a tile from DRAM 2x slower
 * than one pass (benchmarks/README.md, round 20). The row loop is not
 * unrolled: LLVM's unroll by 85 rows (each load instruction then runs 3
 * times per tile) read from DRAM 2.5x slower. 0: not taken. */
static int gen_reduce_colvec(CpuGen *g, int id, int64_t outer, int64_t len,
                             int64_t inner)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBuilderRef b = g->b;
    int x = in->opnd[0], kind = in->attr, dt = in->type.dtype;
    int64_t es = dsl_dtype_bytes(dt), VL = g->vecw_bytes / es;
    if ((dt != DT_F32 && dt != DT_F64) || g->f->ins[x].type.dtype != dt ||
        (g->inl && g->inl[x]) || VL < 2 || inner % VL ||
        inner > (g->vecw_bytes >= 64 ? 16 : 12) * VL || cpu_switch(CPU_SW_NOCOLVEC))
        return 0;
    LLVMTypeRef et = cpu_stype(g, dt), vt = LLVMVectorType(et, (unsigned)inner);
    LLVMValueRef acc = cpu_alloca(g, vt, 1), src = g->val[x];
    LLVMValueRef dst = cpu_tile_buf(g, &in->type);
    CpuLoop lo, lr;
    cpu_loop_open(g, &lo, cpu_i64(g, 0), cpu_i64(g, outer));
    LLVMValueRef base = LLVMBuildMul(b, lo.iv, cpu_i64(g, len * inner), "");
    LLVMValueRef v = LLVMBuildLoad2(b, vt, cpu_gep(g, et, src, base), "");
    LLVMSetAlignment(v, (unsigned)es);
    LLVMBuildStore(b, kind == RED_SUM ? red_op(g, kind, LLVMConstNull(vt), v) : v, acc);
    cpu_loop_open(g, &lr, cpu_i64(g, 1), cpu_i64(g, len));
    LLVMValueRef row = LLVMBuildAdd(b, base, LLVMBuildMul(b, lr.iv, cpu_i64(g, inner), ""), "");
    v = LLVMBuildLoad2(b, vt, cpu_gep(g, et, src, row), "");
    LLVMSetAlignment(v, (unsigned)es);
    LLVMBuildStore(b, red_op(g, kind, LLVMBuildLoad2(b, vt, acc, ""), v), acc);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    cpu_loop_close(g, &lr);
    no_unroll(g, LLVMGetBasicBlockTerminator(latch));
    LLVMValueRef p = cpu_gep(g, et, dst, LLVMBuildMul(b, lo.iv, cpu_i64(g, inner), ""));
    LLVMSetAlignment(LLVMBuildStore(b, LLVMBuildLoad2(b, vt, acc, ""), p), (unsigned)es);
    cpu_loop_close(g, &lo);
    g->val[id] = dst;
    return g->failed ? -1 : 1;
}

/* REDUCE and SCAN over (outer, len, inner). */
static int gen_reduce(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBuilderRef b = g->b;
    int x = in->opnd[0];
    const IrType *t = &g->f->ins[x].type, *rt = &in->type;
    int idt = t->dtype, rdt = rt->dtype, kind = in->op == IR_SCAN ? RED_SUM : in->attr;
    int64_t outer = 1, len = ir_numel(t), inner = 1;
    if (in->axis >= 0 && t->rank > 0) {
        if (in->axis >= t->rank)
            return cpu_fail(g, "reduce axis out of range");
        outer = inner = 1;
        for (int i = 0; i < in->axis; i++)
            outer *= t->shape[i];
        len = t->shape[in->axis];
        for (int i = in->axis + 1; i < t->rank; i++)
            inner *= t->shape[i];
    }
    bool arg = kind == RED_ARGMAX || kind == RED_ARGMIN;
    if (in->op == IR_REDUCE && inner == 1 && (idt == DT_F32 || idt == DT_F64) &&
        (kind == RED_SUM || kind == RED_MAX || kind == RED_MIN) &&
        (kind != RED_SUM || rdt == idt)) {
        int L = 2 * g->vecw_bytes / dsl_dtype_bytes(idt);
        if (L < 8)
            L = 8;
        if (L > 32)
            L = 32;
        if (len >= L)
            return gen_reduce_vec(g, id, outer, len, L);
    }
    int accdt = kind == RED_SUM ? (cpu_is_narrow(rdt) ? DT_F32 : rdt) : idt;
    if (in->op == IR_REDUCE && inner > 1 && len > 0 && !arg &&
        (kind == RED_SUM || kind == RED_MAX || kind == RED_MIN) &&
        !cpu_switch(CPU_SW_NOCOLRED)) {
        int rc = accdt == idt && accdt == rdt ? gen_reduce_colvec(g, id, outer, len, inner) : 0;
        return rc ? (rc < 0 ? -1 : 0) : gen_reduce_cols(g, id, outer, len, inner, accdt);
    }
    LLVMTypeRef at = arg ? cpu_ctype(g, idt) : cpu_stype(g, accdt);
    LLVMValueRef acc = cpu_alloca(g, at, 1), aidx = cpu_alloca(g, g->i64, 1);
    LLVMValueRef dst = rt->rank ? cpu_tile_buf(g, rt)
                                : cpu_alloca(g, cpu_mtype(g, rdt), 1);
    LLVMTypeRef rmt = cpu_mtype(g, rdt);
    CpuLoop lo, li, lr;
    cpu_loop_open(g, &lo, cpu_i64(g, 0), cpu_i64(g, outer));
    cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, inner));
    LLVMValueRef base = LLVMBuildAdd(b, LLVMBuildMul(b, lo.iv, cpu_i64(g, len * inner), ""),
                                     li.iv, "");
    LLVMValueRef first = cpu_elem(g, x, base);
    if (kind == RED_SUM)
        LLVMBuildStore(b, LLVMConstNull(at), acc);
    else if (arg)
        LLVMBuildStore(b, cpu_widen(g, first, idt), acc);
    else
        LLVMBuildStore(b, first, acc);
    LLVMBuildStore(b, cpu_i64(g, 0), aidx);
    cpu_loop_open(g, &lr, cpu_i64(g, kind == RED_SUM ? 0 : 1), cpu_i64(g, len));
    LLVMValueRef lin = LLVMBuildAdd(b, base, LLVMBuildMul(b, lr.iv, cpu_i64(g, inner), ""), "");
    LLVMValueRef e = cpu_elem(g, x, lin);
    LLVMValueRef a = LLVMBuildLoad2(b, at, acc, "");
    if (kind == RED_SUM) {
        IrInstr fake;
        memset(&fake, 0, sizeof fake);
        fake.op = IR_ADD;
        fake.type = ir_scalar(accdt);
        fake.opnd[0] = x;
        /* add in the accumulation dtype (f32 for narrow floats) */
        LLVMValueRef ev = cpu_cvt(g, e, idt, accdt);
        LLVMValueRef r = dsl_is_float(accdt) ? LLVMBuildFAdd(b, a, ev, "")
                                             : LLVMBuildAdd(b, a, ev, "");
        LLVMBuildStore(b, r, acc);
        if (in->op == IR_SCAN) {
            LLVMValueRef o = cpu_cvt(g, r, accdt, rdt);
            cpu_mstore(g, o, cpu_gep(g, rmt, dst, lin), rdt);
        }
    } else if (!arg) {
        IrInstr fake;
        memset(&fake, 0, sizeof fake);
        fake.op = kind == RED_MAX ? IR_MAX : IR_MIN;
        fake.type = ir_scalar(idt);
        fake.opnd[0] = x;
        LLVMValueRef ops[2] = {a, e};
        LLVMBuildStore(b, cpu_scalar_op(g, &fake, ops), acc);
    } else {
        LLVMValueRef w = cpu_widen(g, e, idt);
        LLVMValueRef better;
        bool mx = kind == RED_ARGMAX;
        if (dsl_is_float(idt)) {
            LLVMValueRef c = LLVMBuildFCmp(b, mx ? LLVMRealOGT : LLVMRealOLT, w, a, "");
            LLVMValueRef wn = LLVMBuildFCmp(b, LLVMRealUNO, w, w, "");
            LLVMValueRef an = LLVMBuildFCmp(b, LLVMRealUNO, a, a, "");
            /* NaN counts as the largest value */
            LLVMValueRef nanwin = mx ? LLVMBuildAnd(b, wn, LLVMBuildNot(b, an, ""), "")
                                     : LLVMBuildAnd(b, an, LLVMBuildNot(b, wn, ""), "");
            better = LLVMBuildOr(b, c, nanwin, "");
        } else {
            bool s = cpu_is_signed(idt);
            LLVMIntPredicate p = mx ? (s ? LLVMIntSGT : LLVMIntUGT)
                                    : (s ? LLVMIntSLT : LLVMIntULT);
            better = LLVMBuildICmp(b, p, w, a, "");
        }
        LLVMBuildStore(b, LLVMBuildSelect(b, better, w, a, ""), acc);
        LLVMValueRef ci = LLVMBuildLoad2(b, g->i64, aidx, "");
        LLVMBuildStore(b, LLVMBuildSelect(b, better, lr.iv, ci, ""), aidx);
    }
    cpu_loop_close(g, &lr);
    if (in->op == IR_REDUCE) {
        LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, lo.iv, cpu_i64(g, inner), ""),
                                      li.iv, "");
        LLVMValueRef r;
        if (arg)
            r = cpu_cvt(g, LLVMBuildLoad2(b, g->i64, aidx, ""), DT_I64, rdt);
        else
            r = cpu_cvt(g, LLVMBuildLoad2(b, at, acc, ""), accdt, rdt);
        cpu_mstore(g, r, cpu_gep(g, rmt, dst, o), rdt);
    }
    cpu_loop_close(g, &li);
    cpu_loop_close(g, &lo);
    g->val[id] = rt->rank ? dst : cpu_mload(g, dst, rdt);
    return g->failed ? -1 : 0;
}

int cpu_gen_tileop(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    switch (in->op) {
    case IR_ARANGE: {
        LLVMValueRef dst = cpu_tile_buf(g, &in->type);
        CpuLoop l;
        cpu_loop_open(g, &l, cpu_i64(g, 0), cpu_i64(g, ir_numel(&in->type)));
        LLVMValueRef v = LLVMBuildAdd(g->b, l.iv, cpu_i64(g, in->ival), "");
        v = cpu_cvt(g, v, DT_I64, in->type.dtype);
        cpu_mstore(g, v, cpu_gep(g, cpu_mtype(g, in->type.dtype), dst, l.iv),
                   in->type.dtype);
        cpu_loop_close(g, &l);
        g->val[id] = dst;
        return 0;
    }
    case IR_BCAST: case IR_RESHAPE: case IR_PERMUTE: return gen_shape(g, id);
    case IR_REDUCE: case IR_SCAN: return gen_reduce(g, id);
    default: return cpu_fail(g, "not a tile op");
    }
}

/* ------------------------------------------------------------ dot */

/* Convert rows x cols of src (dtype sdt, row stride scols) into dst of type
 * E with row stride dcols; the padding was zeroed before. */
void cpu_convert_block(CpuGen *g, LLVMValueRef dst, int64_t dcols,
                          LLVMValueRef src, int sdt, LLVMValueRef sld,
                          int64_t rows, int64_t scols, int ddt)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef st = cpu_mtype(g, sdt), dt = cpu_mtype(g, ddt);
    CpuLoop lr, lc;
    cpu_loop_open(g, &lr, cpu_i64(g, 0), cpu_i64(g, rows));
    LLVMValueRef sr = cpu_gep(g, st, src, LLVMBuildMul(b, lr.iv, sld, ""));
    LLVMValueRef dr = cpu_gep(g, dt, dst, LLVMBuildMul(b, lr.iv, cpu_i64(g, dcols), ""));
    cpu_loop_open(g, &lc, cpu_i64(g, 0), cpu_i64(g, scols));
    LLVMValueRef v = cpu_mload(g, cpu_gep(g, st, sr, lc.iv), sdt);
    cpu_mstore(g, cpu_cvt(g, v, sdt, ddt), cpu_gep(g, dt, dr, lc.iv), ddt);
    cpu_loop_close(g, &lc);
    cpu_loop_close(g, &lr);
}

static LLVMValueRef splat(CpuGen *g, LLVMValueRef x, int vw)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), (unsigned)vw);
    LLVMValueRef v = LLVMBuildInsertElement(g->b, LLVMGetUndef(vt), x,
                                            cpu_i32c(g, 0), "");
    LLVMValueRef mask = LLVMConstNull(LLVMVectorType(g->i32, (unsigned)vw));
    return LLVMBuildShuffleVector(g->b, v, LLVMGetUndef(vt), mask, "");
}

static LLVMValueRef vload(CpuGen *g, LLVMTypeRef vt, LLVMValueRef p, unsigned al)
{
    LLVMValueRef q = LLVMBuildBitCast(g->b, p, LLVMPointerType(vt, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(g->b, vt, q, "");
    LLVMSetAlignment(v, al);
    return v;
}

static void vstore(CpuGen *g, LLVMValueRef v, LLVMValueRef p, unsigned al)
{
    LLVMValueRef q = LLVMBuildBitCast(g->b, p, LLVMPointerType(LLVMTypeOf(v), 0), "");
    LLVMSetAlignment(LLVMBuildStore(g->b, v, q), al);
}

enum { MAXMR = 16, MAXNRV = 4 };

/* One k step of the micro-kernel: acc[r][v] += A(r) * B[v*VW ..], with
 * ap[r] pointing at A(r) and brow at the k-th row of the B columns. */
static void micro_k(CpuGen *g, LLVMValueRef *ap, LLVMValueRef brow,
                    LLVMValueRef (*acc)[MAXNRV], int MR, int NRV, int VW,
                    LLVMTypeRef E, unsigned al, bool fl)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW);
    LLVMValueRef bv[MAXNRV];
    for (int v = 0; v < NRV; v++)
        bv[v] = vload(g, vt, cpu_gep(g, E, brow, cpu_i64(g, v * VW)), al);
    for (int r = 0; r < MR; r++) {
        LLVMValueRef as = splat(g, LLVMBuildLoad2(b, E, ap[r], ""), VW);
        for (int v = 0; v < NRV; v++) {
            if (fl) {
                LLVMValueRef ops[3] = {as, bv[v], acc[r][v]};
                acc[r][v] = cpu_intrin(g, "llvm.fma", &vt, 1, ops, 3);
            } else {
                acc[r][v] = LLVMBuildAdd(b, LLVMBuildMul(b, as, bv[v], ""),
                                         acc[r][v], "");
            }
        }
    }
}

/* Lines to prefetch into L2 over a micro-kernel's k loop: lines 0 ..
 * total - 1, line i at base + (i / lpr) * ld + (i % lpr) * 64 (ld in
 * bytes), shared out evenly among the ncall calls of one DOT (this is call
 * q) and their loop iterations. */
typedef struct PfStream {
    LLVMValueRef base, ld, q; /* i8 pointer, i64 bytes, i64 call index */
    int64_t total, lpr, ncall;
} PfStream;

/* C[i0.., j0..] (MR x NRV*VW, row stride ldc) += A[ai.., :K] * B[:K, j0..]
 * (row strides lda, ldb: a tile's width, or a tensor's stride when the
 * operand is read in place; ai: A's first row). aw > 0: A is a packed
 * sliver of MR rows in chunks of aw columns (A(r, k) at
 * (k / aw) * MR * aw + r * aw + k % aw; lda, ai unused), and the k loop
 * runs over chunks with aw steps unrolled, so every A and B address in a
 * chunk is one pointer plus a small constant (an 8-bit displacement). */
static void micro(CpuGen *g, LLVMValueRef A, LLVMValueRef ai, LLVMValueRef B,
                  LLVMValueRef C, LLVMValueRef i0, LLVMValueRef j0, int64_t bj, int64_t K,
                  LLVMValueRef lda, LLVMValueRef ldb, int aw,
                  int64_t ldc, int MR, int NRV, int VW, LLVMTypeRef E, bool fl,
                  const PfStream *pf)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW);
    unsigned al = (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), E);
    if (!al)
        al = 4;
    LLVMValueRef acc[MAXMR][MAXNRV], cp[MAXMR][MAXNRV], ar[MAXMR];
    for (int r = 0; r < MR; r++) {
        LLVMValueRef row = LLVMBuildAdd(b, i0, cpu_i64(g, r), "");
        if (!aw)
            ar[r] = cpu_opaque_ptr(g, cpu_gep(g, E, A, LLVMBuildMul(b,
                                   LLVMBuildAdd(b, ai, cpu_i64(g, r), ""), lda, "")));
        LLVMValueRef crow = cpu_gep(g, E, C, LLVMBuildMul(b, row, cpu_i64(g, ldc), ""));
        for (int v = 0; v < NRV; v++) {
            cp[r][v] = cpu_gep(g, E, crow, LLVMBuildAdd(b, j0, cpu_i64(g, v * VW), ""));
            acc[r][v] = vload(g, vt, cp[r][v], al);
        }
    }
    LLVMValueRef bcol = bj < 0 ? cpu_gep(g, E, B, j0) : cpu_gep(g, E, B, cpu_i64(g, bj));
    /* A in place: U k steps per iteration, so each row's address is
     * computed once per U steps and the rest are displacements */
    int U = !aw && K % 8 == 0 ? 8 : !aw && K % 4 == 0 ? 4 : 1;
    int64_t step = aw ? aw : U, nloop = K / step;
    if (nloop > 0) {
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
        LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "k");
        LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "k.done");
        LLVMBuildBr(b, loop);
        LLVMPositionBuilderAtEnd(b, loop);
        LLVMValueRef c = LLVMBuildPhi(b, g->i64, "k");
        LLVMValueRef phi[MAXMR][MAXNRV], nacc[MAXMR][MAXNRV];
        for (int r = 0; r < MR; r++)
            for (int v = 0; v < NRV; v++)
                nacc[r][v] = phi[r][v] = LLVMBuildPhi(b, vt, "");
        if (pf) { /* this iteration's share of the stream */
            int64_t slots = pf->ncall * nloop, per = (pf->total + slots - 1) / slots;
            LLVMValueRef i0p = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, pf->q,
                                   cpu_i64(g, nloop), ""), c, ""), cpu_i64(g, per), "");
            for (int64_t t = 0; t < per; t++) {
                LLVMValueRef i = LLVMBuildAdd(b, i0p, cpu_i64(g, t), "");
                LLVMValueRef row = LLVMBuildUDiv(b, i, cpu_i64(g, pf->lpr), "");
                LLVMValueRef col = LLVMBuildURem(b, i, cpu_i64(g, pf->lpr), "");
                LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, row, pf->ld, ""),
                                                LLVMBuildMul(b, col, cpu_i64(g, 64), ""), "");
                cpu_prefetch(g, cpu_gep(g, g->i8, pf->base, off), 2);
            }
        }
        if (!aw) {
            LLVMValueRef k0 = LLVMBuildMul(b, c, cpu_i64(g, U), ""), ab[MAXMR];
            for (int r = 0; r < MR; r++)
                ab[r] = cpu_gep(g, E, ar[r], k0);
            LLVMValueRef bbase = cpu_gep(g, E, bcol, LLVMBuildMul(b, k0, ldb, ""));
            for (int kk = 0; kk < U; kk++) {
                LLVMValueRef ap[MAXMR];
                for (int r = 0; r < MR; r++)
                    ap[r] = cpu_gep(g, E, ab[r], cpu_i64(g, kk));
                micro_k(g, ap, cpu_gep(g, E, bbase, LLVMBuildMul(b, cpu_i64(g, kk), ldb, "")),
                        nacc, MR, NRV, VW, E, al, fl);
            }
        } else {
            LLVMValueRef abase = cpu_gep(g, E, A, LLVMBuildMul(b, c, cpu_i64(g, MR * aw), ""));
            LLVMValueRef bbase = cpu_gep(g, E, bcol, LLVMBuildMul(b,
                LLVMBuildMul(b, c, cpu_i64(g, aw), ""), ldb, ""));
            for (int kk = 0; kk < aw; kk++) {
                LLVMValueRef ap[MAXMR];
                for (int r = 0; r < MR; r++)
                    ap[r] = cpu_gep(g, E, abase, cpu_i64(g, r * aw + kk));
                micro_k(g, ap, cpu_gep(g, E, bbase, LLVMBuildMul(b, cpu_i64(g, kk), ldb, "")),
                        nacc, MR, NRV, VW, E, al, fl);
            }
        }
        LLVMValueRef cn = LLVMBuildNSWAdd(b, c, cpu_i64(g, 1), "");
        LLVMValueRef cond = LLVMBuildICmp(b, LLVMIntSLT, cn, cpu_i64(g, nloop), "");
        LLVMBasicBlockRef end = LLVMGetInsertBlock(b);
        LLVMValueRef zero = cpu_i64(g, 0);
        LLVMAddIncoming(c, &zero, &pre, 1);
        LLVMAddIncoming(c, &cn, &end, 1);
        for (int r = 0; r < MR; r++)
            for (int v = 0; v < NRV; v++) {
                LLVMAddIncoming(phi[r][v], &acc[r][v], &pre, 1);
                LLVMAddIncoming(phi[r][v], &nacc[r][v], &end, 1);
                acc[r][v] = nacc[r][v];
            }
        LLVMBuildCondBr(b, cond, loop, done);
        LLVMPositionBuilderAtEnd(b, done);
    }
    /* the last K % aw steps of a chunked sliver, unrolled */
    for (int64_t kk = 0; aw && kk < K % aw; kk++) {
        LLVMValueRef ap[MAXMR];
        for (int r = 0; r < MR; r++)
            ap[r] = cpu_gep(g, E, A, cpu_i64(g, nloop * MR * aw + r * aw + kk));
        micro_k(g, ap, cpu_gep(g, E, bcol, LLVMBuildMul(b, cpu_i64(g, nloop * aw + kk), ldb, "")),
                acc, MR, NRV, VW, E, al, fl);
    }
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NRV; v++)
            vstore(g, acc[r][v], cp[r][v], al);
}

/* Register blocks of the packed DOT, keyed by the host's vector width and
 * vector register count: MR rows x NRV vectors of accumulators, with MR*NRV
 * + NRV + 1 registers live in the k loop. MR2 is used instead of MR when
 * MR does not divide the tile's rows (no padded rows) and MR2 does. */
#define CPU_DOT_BLOCKS(X)                                                  \
    X(64, 32, 8, 8, 2, "AVX-512: 8x32 f32 (16 of 32 zmm)")                 \
    X(32, 16, 6, 4, 2, "AVX2: 6x16 f32 (12 of 16 ymm); 4x16 for BM=2^k")  \
    X(16, 32, 8, 8, 2, "NEON: 8x8 f32 (16 of 32 q registers)")            \
    X(16, 16, 4, 4, 2, "SSE: 4x8 f32 (8 of 16 xmm)")

typedef struct DotBlock { int vecw, nregs, mr, mr2, nrv; } DotBlock;

static const DotBlock dot_blocks[] = {
#define X(vecw, nregs, mr, mr2, nrv, doc) {vecw, nregs, mr, mr2, nrv},
    CPU_DOT_BLOCKS(X)
#undef X
};

static DotBlock dot_block(int vecw, int64_t M)
{
#if defined(__aarch64__)
    int nregs = 32;
#else
    int nregs = vecw >= 64 ? 32 : 16;
#endif
    DotBlock d = {vecw, nregs, 4, 4, 2};
    for (size_t i = 0; i < sizeof dot_blocks / sizeof dot_blocks[0]; i++)
        if (dot_blocks[i].vecw == vecw && dot_blocks[i].nregs == nregs) {
            d = dot_blocks[i];
            break;
        }
    if (M % d.mr != 0 && M % d.mr2 == 0)
        d.mr = d.mr2;
    return d;
}

/* Pack rows x cols of B (dtype sdt, row stride ldb) into panels of NR
 * columns, k-major: Bp[(j / NR) * K * NR + k * NR + j % NR], converted to
 * ddt and zero past cols (the last panel). (The next K step's rows are
 * prefetched by dot_packed's row loop.) */
static void pack_b(CpuGen *g, LLVMValueRef Bp, LLVMValueRef B, int sdt,
                   LLVMValueRef ldb, int64_t K, int64_t cols, int NR, int ddt)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef st = cpu_mtype(g, sdt), dt = cpu_mtype(g, ddt);
    int64_t full = cols / NR, rest = cols % NR;
    CpuLoop lk, lj, lc;
    cpu_loop_open(g, &lk, cpu_i64(g, 0), cpu_i64(g, K));
    LLVMValueRef srow = cpu_gep(g, st, B, LLVMBuildMul(b, lk.iv, ldb, ""));
    LLVMValueRef drow = cpu_gep(g, dt, Bp, LLVMBuildMul(b, lk.iv, cpu_i64(g, NR), ""));
    if (full > 0) {
        cpu_loop_open(g, &lj, cpu_i64(g, 0), cpu_i64(g, full));
        LLVMValueRef s = cpu_gep(g, st, srow, LLVMBuildMul(b, lj.iv, cpu_i64(g, NR), ""));
        LLVMValueRef d = cpu_gep(g, dt, drow, LLVMBuildMul(b, lj.iv, cpu_i64(g, K * NR), ""));
        cpu_loop_open(g, &lc, cpu_i64(g, 0), cpu_i64(g, NR));
        LLVMValueRef v = cpu_mload(g, cpu_gep(g, st, s, lc.iv), sdt);
        cpu_mstore(g, cpu_cvt(g, v, sdt, ddt), cpu_gep(g, dt, d, lc.iv), ddt);
        cpu_loop_close(g, &lc);
        cpu_loop_close(g, &lj);
    }
    if (rest > 0) {
        LLVMValueRef s = cpu_gep(g, st, srow, cpu_i64(g, full * NR));
        LLVMValueRef d = cpu_gep(g, dt, drow, cpu_i64(g, full * K * NR));
        for (int64_t c = 0; c < NR; c++) {
            LLVMValueRef v = c < rest
                ? cpu_cvt(g, cpu_mload(g, cpu_gep(g, st, s, cpu_i64(g, c)), sdt), sdt, ddt)
                : cpu_zero(g, ddt);
            cpu_mstore(g, v, cpu_gep(g, dt, d, cpu_i64(g, c)), ddt);
        }
    }
    cpu_loop_close(g, &lk);
}

/* Copy rows r0 .. r0+MR-1 of A (row stride lda, K elements of E each)
 * into the sliver S in chunks of aw columns: A(r0 + r, k) goes to
 * S[(k / aw) * MR * aw + r * aw + k % aw] (one cache line per row and
 * chunk, for aw = 64 bytes' worth). */
static void copy_sliver(CpuGen *g, LLVMValueRef S, LLVMValueRef A, LLVMValueRef r0,
                        LLVMValueRef lda, int MR, int64_t K, int aw, LLVMTypeRef E)
{
    LLVMBuilderRef b = g->b;
    int64_t eb = (int64_t)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), E);
    int64_t nc = K / aw, rest = K % aw;
    LLVMValueRef rows[MAXMR];
    for (int r = 0; r < MR; r++)
        rows[r] = cpu_gep(g, E, A, LLVMBuildMul(b, LLVMBuildAdd(b, r0, cpu_i64(g, r), ""),
                                                lda, ""));
    if (nc > 0) {
        CpuLoop lc;
        cpu_loop_open(g, &lc, cpu_i64(g, 0), cpu_i64(g, nc));
        LLVMValueRef so = LLVMBuildMul(b, lc.iv, cpu_i64(g, MR * aw), "");
        LLVMValueRef ao = LLVMBuildMul(b, lc.iv, cpu_i64(g, aw), "");
        for (int r = 0; r < MR; r++)
            LLVMBuildMemCpy(b, cpu_gep(g, E, S, LLVMBuildAdd(b, so, cpu_i64(g, r * aw), "")), 64,
                            cpu_gep(g, E, rows[r], ao), (unsigned)eb, cpu_i64(g, aw * eb));
        cpu_loop_close(g, &lc);
    }
    for (int r = 0; rest > 0 && r < MR; r++)
        LLVMBuildMemCpy(b, cpu_gep(g, E, S, cpu_i64(g, nc * MR * aw + r * aw)), 64,
                        cpu_gep(g, E, rows[r], cpu_i64(g, nc * aw)), (unsigned)eb,
                        cpu_i64(g, rest * eb));
}

/* v[i] for i < n (n = VW, a power of two): the n x n block whose rows they
 * are, transposed in registers. Stage d swaps, in every 2d x 2d block, the
 * d x d block right of the diagonal with the one below it: one two-source
 * shuffle per row (vpermt2ps / vshufps / vunpck on x86). */
void cpu_transpose_sq(CpuGen *g, LLVMValueRef *v, int n)
{
    LLVMBuilderRef b = g->b;
    for (int d = 1; d < n; d *= 2)
        for (int a = 0; a < n; a++) {
            if (a & d)
                continue;
            LLVMValueRef ma[64], mb[64];
            for (int l = 0; l < n; l++) {
                ma[l] = cpu_i32c(g, (l & d) ? n + (l ^ d) : l);
                mb[l] = cpu_i32c(g, (l & d) ? n + l : (l ^ d));
            }
            LLVMValueRef x = v[a], y = v[a + d];
            v[a] = LLVMBuildShuffleVector(b, x, y, LLVMConstVector(ma, (unsigned)n), "");
            v[a + d] = LLVMBuildShuffleVector(b, x, y, LLVMConstVector(mb, (unsigned)n), "");
        }
}

/* pack_b for B = trans(S): B's column j is row j of S (row stride lds),
 * read along K. Blocks of VW rows x VW columns of S are loaded as VW
 * vectors (bf16 / f16 widened to f32 on the way), transposed in registers
 * and stored as VW panel rows; the K % VW and cols % VW edges (and other
 * conversions) go element by element; the last panel's columns past cols
 * are 0. */
static void pack_b_t(CpuGen *g, LLVMValueRef Bp, LLVMValueRef S, int sdt, LLVMValueRef lds,
                     int64_t K, int64_t cols, int NR, int ddt, int VW)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef st = cpu_mtype(g, sdt), dt = cpu_mtype(g, ddt);
    LLVMTypeRef vt = LLVMVectorType(dt, (unsigned)VW);
    int db = dsl_dtype_bytes(ddt);
    int64_t np = (cols + NR - 1) / NR;
    if (cols % NR) /* the last panel's padding */
        LLVMBuildMemSet(b, cpu_gep(g, dt, Bp, cpu_i64(g, (np - 1) * K * NR)),
                        LLVMConstInt(g->i8, 0, 0), cpu_i64(g, K * NR * db), 4);
    int64_t jb = cols / VW, kb = K / VW;
    bool wide = sdt == ddt || (ddt == DT_F32 && (sdt == DT_BF16 || sdt == DT_F16));
    bool vec = wide && VW > 1 && VW <= 64 && (VW & (VW - 1)) == 0 && NR % VW == 0;
    if (!vec)
        jb = kb = 0;
    if (jb > 0 && kb > 0) {
        CpuLoop lj, lk;
        cpu_loop_open(g, &lj, cpu_i64(g, 0), cpu_i64(g, jb));
        LLVMValueRef j0 = LLVMBuildMul(b, lj.iv, cpu_i64(g, VW), "");
        /* column j0 of B: panel j0 / NR, lane j0 % NR */
        LLVMValueRef dcol = LLVMBuildAdd(b,
            LLVMBuildMul(b, LLVMBuildUDiv(b, j0, cpu_i64(g, NR), ""), cpu_i64(g, K * NR), ""),
            LLVMBuildURem(b, j0, cpu_i64(g, NR), ""), "");
        LLVMValueRef srow = cpu_gep(g, st, S, LLVMBuildMul(b, j0, lds, ""));
        cpu_loop_open(g, &lk, cpu_i64(g, 0), cpu_i64(g, kb));
        LLVMValueRef k0 = LLVMBuildMul(b, lk.iv, cpu_i64(g, VW), "");
        LLVMValueRef v[64];
        for (int r = 0; r < VW; r++) {
            LLVMValueRef p = cpu_gep(g, st, srow, LLVMBuildAdd(b,
                                 LLVMBuildMul(b, cpu_i64(g, r), lds, ""), k0, ""));
            v[r] = cpu_load_wide(g, p, sdt, dt, VW);
        }
        cpu_transpose_sq(g, v, VW);
        LLVMValueRef d0 = LLVMBuildAdd(b, dcol, LLVMBuildMul(b, k0, cpu_i64(g, NR), ""), "");
        for (int c = 0; c < VW; c++) {
            LLVMValueRef p = cpu_gep(g, dt, Bp, LLVMBuildAdd(b, d0, cpu_i64(g, (int64_t)c * NR), ""));
            LLVMValueRef st1 = LLVMBuildStore(b, v[c], LLVMBuildBitCast(b, p,
                                              LLVMPointerType(vt, 0), ""));
            LLVMSetAlignment(st1, (unsigned)db);
        }
        cpu_loop_close(g, &lk);
        cpu_loop_close(g, &lj);
    }
    /* the rest, element by element: columns jb*VW.. at every k, and the
     * k's kb*VW.. of the columns before them */
    for (int part = 0; part < 2; part++) {
        int64_t jlo = part ? jb * VW : 0, jhi = part ? cols : jb * VW;
        int64_t klo = part ? 0 : kb * VW;
        if (jlo >= jhi || klo >= K)
            continue;
        CpuLoop lj, lk;
        cpu_loop_open(g, &lj, cpu_i64(g, jlo), cpu_i64(g, jhi));
        LLVMValueRef srow = cpu_gep(g, st, S, LLVMBuildMul(b, lj.iv, lds, ""));
        LLVMValueRef dcol = LLVMBuildAdd(b,
            LLVMBuildMul(b, LLVMBuildUDiv(b, lj.iv, cpu_i64(g, NR), ""), cpu_i64(g, K * NR), ""),
            LLVMBuildURem(b, lj.iv, cpu_i64(g, NR), ""), "");
        cpu_loop_open(g, &lk, cpu_i64(g, klo), cpu_i64(g, K));
        LLVMValueRef x = cpu_mload(g, cpu_gep(g, st, srow, lk.iv), sdt);
        cpu_mstore(g, cpu_cvt(g, x, sdt, ddt), cpu_gep(g, dt, Bp, LLVMBuildAdd(b, dcol,
                   LLVMBuildMul(b, lk.iv, cpu_i64(g, NR), ""), "")), ddt);
        cpu_loop_close(g, &lk);
        cpu_loop_close(g, &lj);
    }
}

/* A rank-2 DOT on packed B panels (BLKC_CPU_NOPACK=1: the row-major path
 * below). A is read in place with its row stride when its dtype is the
 * accumulation type and no rows are padded, else converted into a buffer;
 * B is packed into NR-column panels (converting f16/bf16 on the way); C
 * is the accumulator tile itself unless M or N needs padding. */
static int dot_packed(CpuGen *g, const IrInstr *in, LLVMValueRef dst,
                      LLVMValueRef acc_ptr)
{
    LLVMBuilderRef b = g->b;
    const IrType *ta = &g->f->ins[in->opnd[0]].type;
    const IrType *tb = &g->f->ins[in->opnd[1]].type, *rt = &in->type;
    int rdt = rt->dtype;
    int64_t M = rt->shape[0], N = rt->shape[1], K = ta->shape[1];
    LLVMTypeRef E = cpu_stype(g, rdt);
    int eb = dsl_dtype_bytes(rdt);
    int VW = g->vecw_bytes / eb;
    if (VW < 1)
        VW = 1;
    DotBlock blk = dot_block(g->vecw_bytes, M);
    int MR = blk.mr, NRV = blk.nrv, NR = NRV * VW;
    int64_t Mp = (M + MR - 1) / MR * MR, Np = (N + NR - 1) / NR * NR;
    bool fl = dsl_is_float(rdt);
    LLVMValueRef A = g->val[in->opnd[0]], B = g->val[in->opnd[1]];
    LLVMValueRef lda = g->vld[in->opnd[0]] ? g->vld[in->opnd[0]] : cpu_i64(g, K);
    LLVMValueRef ldb = g->vld[in->opnd[1]] ? g->vld[in->opnd[1]] : cpu_i64(g, N);
    bool ain = g->vld[in->opnd[0]] && ta->dtype == rdt && Mp == M;
    bool bt = g->tdot && g->tdot[in->opnd[1]]; /* B = trans(S), ldb S's */
    if (ta->dtype != rdt || Mp != M) {
        LLVMValueRef buf = cpu_alloca(g, E, Mp * K);
        if (Mp != M)
            LLVMBuildMemSet(b, buf, LLVMConstInt(g->i8, 0, 0),
                            cpu_i64(g, Mp * K * eb), 4);
        cpu_convert_block(g, buf, K, A, ta->dtype, lda, M, K, rdt);
        A = buf;
        lda = cpu_i64(g, K);
    }
    LLVMValueRef Bp = cpu_alloca(g, E, K * Np), Ap = NULL;
    LLVMSetAlignment(Bp, 64);
    int aw = 64 / eb > 0 ? 64 / eb : 1;          /* sliver chunk: one line */
    int64_t sl = MR * ((K + aw - 1) / aw * aw);  /* sliver elements */
    if (ain && cpu_switch(CPU_SW_PACKA)) {
        Ap = cpu_alloca(g, E, 2 * sl);
        LLVMSetAlignment(Ap, 64);
        copy_sliver(g, Ap, A, cpu_i64(g, 0), lda, MR, K, aw, E);
    } else {
        aw = 0;
    }
    if (bt)
        pack_b_t(g, Bp, B, tb->dtype, ldb, K, N, NR, rdt, VW);
    else
        pack_b(g, Bp, B, tb->dtype, ldb, K, N, NR, rdt);
    LLVMValueRef C = dst;
    int64_t ldc = N;
    bool padded = Mp != M || Np != N;
    if (padded) {
        C = cpu_alloca(g, E, Mp * Np);
        ldc = Np;
        LLVMBuildMemSet(b, C, LLVMConstInt(g->i8, 0, 0), cpu_i64(g, Mp * Np * eb), 4);
        if (acc_ptr)
            cpu_convert_block(g, C, Np, acc_ptr, rdt, cpu_i64(g, N), M, N, rdt);
    } else if (!acc_ptr) {
        LLVMBuildMemSet(b, C, LLVMConstInt(g->i8, 0, 0), cpu_i64(g, M * N * eb), 4);
    } else if (acc_ptr != dst) {
        LLVMBuildMemCpy(b, C, 4, acc_ptr, 4, cpu_i64(g, M * N * eb));
    }
    /* B = trans(S) read in place: S's rows at the next K step (the usual
     * loop's next tile, each row's next K columns), spread over the
     * micro-kernel's k loops into L2 — pack_b_t would otherwise wait on
     * them from memory, rows a tensor row apart that the hardware
     * prefetchers do not follow (the analogue of NOBPF's B prefetch
     * below, which trans(B) skips) */
    PfStream pfs = {0};
    if (bt && g->vld[in->opnd[1]] && !cpu_switch(CPU_SW_NOBTPF)) {
        int sb = dsl_dtype_bytes(tb->dtype);
        pfs.base = cpu_gep(g, g->i8, B, cpu_i64(g, K * sb));
        pfs.ld = LLVMBuildMul(b, ldb, cpu_i64(g, sb), "");
        pfs.lpr = (K * sb + 63) / 64;
        pfs.total = N * pfs.lpr;
        pfs.ncall = (Mp / MR) * (Np / NR);
    }
    /* i outer: the whole of Bp (K x Np) stays in L1 while A's MR rows are
     * swept once per panel */
    CpuLoop li, lj;
    cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, Mp / MR));
    LLVMValueRef i0 = LLVMBuildMul(b, li.iv, cpu_i64(g, MR), "");
    if (ain) /* these rows' next K step (the usual loop), into L2 */
        for (int r = 0; r < MR; r++) {
            LLVMValueRef row = LLVMBuildMul(b, LLVMBuildAdd(b, i0, cpu_i64(g, r), ""), lda, "");
            LLVMValueRef p = cpu_gep(g, E, A, LLVMBuildAdd(b, row, cpu_i64(g, K), ""));
            for (int64_t off = 0; off < K * eb; off += 64)
                cpu_prefetch(g, cpu_gep(g, g->i8, p, cpu_i64(g, off)), 2);
        }
    /* BLKC_CPU_PACKA=1 (off by default): an A read in place has its MR
     * rows copied into a sliver (chunks of one cache line per row) reused
     * by every panel, so the micro-kernel addresses all MR rows from one
     * pointer with 8-bit displacements instead of a chain of adds of the
     * run-time row stride. Two slivers alternate: the next one is copied
     * while this one is used, so no broadcast reads a store in flight.
     * Fewer instructions, but 5-10% slower on the AMD EPYC (Zen 4) VM it
     * was measured on (benchmarks/README.md, round 6), hence opt-in. */
    LLVMValueRef As = A, ai = i0, alda = lda;
    if (Ap) {
        LLVMValueRef one = cpu_i64(g, 1);
        LLVMValueRef nx = LLVMBuildAdd(b, li.iv, one, "");
        LLVMValueRef last = LLVMBuildICmp(b, LLVMIntSGE, nx, cpu_i64(g, Mp / MR), "");
        nx = LLVMBuildSelect(b, last, li.iv, nx, "");
        LLVMValueRef par = LLVMBuildAnd(b, li.iv, one, "");
        As = cpu_gep(g, E, Ap, LLVMBuildMul(b, par, cpu_i64(g, sl), ""));
        copy_sliver(g, cpu_gep(g, E, Ap, LLVMBuildMul(b, LLVMBuildXor(b, par, one, ""),
                                                       cpu_i64(g, sl), "")),
                    A, LLVMBuildMul(b, nx, cpu_i64(g, MR), ""), lda, MR, K, aw, E);
        ai = cpu_i64(g, 0);
        alda = cpu_i64(g, K);
    }
    cpu_loop_open(g, &lj, cpu_i64(g, 0), cpu_i64(g, Np / NR));
    if (g->vld[in->opnd[1]] && !bt && !cpu_switch(CPU_SW_NOBPF)) {
        /* B's next K step (rows K .. 2K-1 of the view, the usual loop's
         * next tile), a few rows per row block, into L2: its rows lie a
         * large stride apart, which the hardware prefetchers do not
         * follow, and pack_b would otherwise wait on each from L3. Each
         * row's lines are spread over the row block's panels: a row is a
         * page of its own when the stride is 4 KB or more, and a
         * prefetch that walks the page table holds up retirement; among a
         * panel's FMAs the walk is hidden, in a burst of 16 before the
         * panels it was not (4096x4096x1024: 243-246 ms against 247-251,
         * benchmarks/README.md round 23) */
        int64_t nb = Mp / MR, per = (K + nb - 1) / nb;
        int sb = dsl_dtype_bytes(tb->dtype);
        int64_t np = Np / NR, lines = (N * sb + 63) / 64, lpp = (lines + np - 1) / np;
        LLVMValueRef q0 = LLVMBuildAdd(b, cpu_i64(g, K), LLVMBuildMul(b, li.iv, cpu_i64(g, per), ""), "");
        for (int64_t q = 0; q < per; q++) {
            LLVMValueRef p = cpu_gep(g, cpu_mtype(g, tb->dtype), g->val[in->opnd[1]],
                                     LLVMBuildMul(b, LLVMBuildAdd(b, q0, cpu_i64(g, q), ""), ldb, ""));
            p = cpu_gep(g, g->i8, p, LLVMBuildMul(b, lj.iv, cpu_i64(g, lpp * 64), ""));
            for (int64_t l = 0; l < lpp; l++)
                cpu_prefetch(g, cpu_gep(g, g->i8, p, cpu_i64(g, l * 64)), 2);
        }
    }
    LLVMValueRef panel = cpu_gep(g, E, Bp, LLVMBuildMul(b, lj.iv, cpu_i64(g, K * NR), ""));
    LLVMValueRef j0 = LLVMBuildMul(b, lj.iv, cpu_i64(g, NR), "");
    if (pfs.base) /* this call's index among the DOT's */
        pfs.q = LLVMBuildAdd(b, LLVMBuildMul(b, li.iv, cpu_i64(g, Np / NR), ""), lj.iv, "");
    micro(g, As, ai, panel, C, i0, j0, 0, K, alda, cpu_i64(g, NR), aw, ldc, MR, NRV, VW, E, fl,
          pfs.base ? &pfs : NULL);
    cpu_loop_close(g, &lj);
    cpu_loop_close(g, &li);
    if (padded)
        cpu_convert_block(g, dst, N, C, rdt, cpu_i64(g, Np), M, N, rdt);
    return g->failed ? -1 : 0;
}

int cpu_gen_dot(CpuGen *g, const IrInstr *in, LLVMValueRef dst, LLVMValueRef acc_ptr)
{
    LLVMBuilderRef b = g->b;
    const IrType *ta = &g->f->ins[in->opnd[0]].type;
    const IrType *tb = &g->f->ins[in->opnd[1]].type, *rt = &in->type;
    int R = rt->rank, rdt = rt->dtype;
    if ((R != 2 && R != 3) || ta->rank != R || tb->rank != R)
        return cpu_fail(g, "dot needs rank-2 or rank-3 tiles");
    if (rdt != DT_F32 && rdt != DT_F64 && rdt != DT_I32 && rdt != DT_I64)
        return cpu_fail(g, "dot result dtype %s not supported", dsl_dtype_name(rdt));
    if (R == 2 && !cpu_switch(CPU_SW_NOMATVEC) && cpu_matvec_applies(g, in))
        return cpu_gen_matvec(g, in, dst, acc_ptr);
    if (R == 2 && !cpu_switch(CPU_SW_NOPACK)) /* (fuse.c marks no trans(B) under NOPACK) */
        return dot_packed(g, in, dst, acc_ptr);
    int64_t NB = R == 3 ? rt->shape[0] : 1;
    int64_t M = rt->shape[R - 2], N = rt->shape[R - 1], K = ta->shape[R - 1];
    LLVMTypeRef E = cpu_stype(g, rdt);
    int eb = dsl_dtype_bytes(rdt);
    int VW = g->vecw_bytes / eb;
    if (VW < 1)
        VW = 1;
    int MR = g->vecw_bytes >= 64 ? 8 : 4;
    int64_t Mp = (M + MR - 1) / MR * MR, Np = (N + VW - 1) / VW * VW;
    bool fl = dsl_is_float(rdt);
    /* operands in the accumulation type, padded to Mp rows / Np columns */
    LLVMValueRef A = g->val[in->opnd[0]], B = g->val[in->opnd[1]];
    /* row strides: a 2-D operand read in place (mem.c) has the tensor's */
    LLVMValueRef lda = R == 2 && g->vld[in->opnd[0]] ? g->vld[in->opnd[0]]
                                                     : cpu_i64(g, K);
    LLVMValueRef ldb = R == 2 && g->vld[in->opnd[1]] ? g->vld[in->opnd[1]]
                                                     : cpu_i64(g, N);
    if (ta->dtype != rdt || Mp != M) {
        LLVMValueRef buf = cpu_alloca(g, E, NB * Mp * K);
        if (Mp != M)
            LLVMBuildMemSet(b, buf, LLVMConstInt(g->i8, 0, 0),
                            cpu_i64(g, NB * Mp * K * eb), 4);
        for (int64_t bi = 0; bi < NB; bi++)
            cpu_convert_block(g, cpu_gep(g, E, buf, cpu_i64(g, bi * Mp * K)), K,
                          cpu_gep(g, cpu_mtype(g, ta->dtype), A, cpu_i64(g, bi * M * K)),
                          ta->dtype, lda, M, K, rdt);
        A = buf;
        lda = cpu_i64(g, K);
    }
    if (tb->dtype != rdt || Np != N) {
        LLVMValueRef buf = cpu_alloca(g, E, NB * K * Np);
        if (Np != N)
            LLVMBuildMemSet(b, buf, LLVMConstInt(g->i8, 0, 0),
                            cpu_i64(g, NB * K * Np * eb), 4);
        for (int64_t bi = 0; bi < NB; bi++)
            cpu_convert_block(g, cpu_gep(g, E, buf, cpu_i64(g, bi * K * Np)), Np,
                          cpu_gep(g, cpu_mtype(g, tb->dtype), B, cpu_i64(g, bi * K * N)),
                          tb->dtype, ldb, K, N, rdt);
        B = buf;
        ldb = cpu_i64(g, Np);
    }
    LLVMValueRef C = dst;
    bool padded = Mp != M || Np != N;
    if (padded) {
        C = cpu_alloca(g, E, NB * Mp * Np);
        LLVMBuildMemSet(b, C, LLVMConstInt(g->i8, 0, 0), cpu_i64(g, NB * Mp * Np * eb), 4);
        if (acc_ptr)
            for (int64_t bi = 0; bi < NB; bi++)
                cpu_convert_block(g, cpu_gep(g, E, C, cpu_i64(g, bi * Mp * Np)), Np,
                              cpu_gep(g, E, acc_ptr, cpu_i64(g, bi * M * N)), rdt,
                              cpu_i64(g, N), M, N,
                              rdt);
    } else if (!acc_ptr) {
        LLVMBuildMemSet(b, C, LLVMConstInt(g->i8, 0, 0), cpu_i64(g, NB * M * N * eb), 4);
    } else if (acc_ptr != dst) {
        LLVMBuildMemCpy(b, C, 4, acc_ptr, 4, cpu_i64(g, NB * M * N * eb));
    }
    int64_t nfull = Np / (2 * VW);
    bool tail = Np % (2 * VW) != 0;
    for (int64_t bi = 0; bi < NB; bi++) {
        LLVMValueRef Ab = cpu_gep(g, E, A, cpu_i64(g, bi * Mp * K));
        LLVMValueRef Bb = cpu_gep(g, E, B, cpu_i64(g, bi * K * Np));
        LLVMValueRef Cb = cpu_gep(g, E, C, cpu_i64(g, bi * Mp * Np));
        CpuLoop li, lj;
        cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, Mp / MR));
        LLVMValueRef i0 = LLVMBuildMul(b, li.iv, cpu_i64(g, MR), "");
        if (nfull > 0) {
            cpu_loop_open(g, &lj, cpu_i64(g, 0), cpu_i64(g, nfull));
            LLVMValueRef j0 = LLVMBuildMul(b, lj.iv, cpu_i64(g, 2 * VW), "");
            micro(g, Ab, i0, Bb, Cb, i0, j0, -1, K, lda, ldb, 0, Np, MR, 2, VW, E, fl, NULL);
            cpu_loop_close(g, &lj);
        }
        if (tail)
            micro(g, Ab, i0, Bb, Cb, i0, cpu_i64(g, Np - VW), -1, K, lda, ldb, 0, Np, MR, 1,
                  VW, E, fl, NULL);
        cpu_loop_close(g, &li);
    }
    if (padded)
        for (int64_t bi = 0; bi < NB; bi++)
            cpu_convert_block(g, cpu_gep(g, E, dst, cpu_i64(g, bi * M * N)), N,
                          cpu_gep(g, E, C, cpu_i64(g, bi * Mp * Np)), rdt,
                          cpu_i64(g, Np), M, N, rdt);
    return g->failed ? -1 : 0;
}
