/* matvec.c — DOT of a matrix with a column vector, `dot(w: [M, K], x: [K])`
 * (LANGUAGE.md §7; the front end makes it [M, K] x [K, 1]): the decode
 * case, bound by reading w once. tile.c's GEMM micro-kernel would pad the
 * single column to a whole vector (16x the arithmetic) and copy x into a
 * padded panel; here each row of w is a contiguous dot product instead:
 * RB rows at a time, each with U vector accumulators of VW lanes along K
 * (loads of w straight from its tile or, read in place, from the tensor
 * with its row stride), a halving tree across the lanes at the end, then
 * the K % (U*VW) tail in order. w may be f16 / bf16 (widened in registers,
 * no converted copy of the tile) or f32 / f64 like the result.
 *
 * Summation order: per row, lane j of accumulator u sums k = j + u*VW
 * (mod U*VW), then the tree, then the tail — not the order of tile.c's
 * micro-kernel (which sums k in order per element); the results differ
 * from it by rounding only. Entry: cpu_gen_matvec. */
#include "cpu.h"

enum { MV_RB = 4, MV_U = 2 };

static LLVMValueRef splatv(CpuGen *g, LLVMValueRef x, int vw)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), (unsigned)vw);
    LLVMValueRef v = LLVMBuildInsertElement(g->b, LLVMGetUndef(vt), x,
                                            cpu_i32c(g, 0), "");
    LLVMValueRef mask = LLVMConstNull(LLVMVectorType(g->i32, (unsigned)vw));
    return LLVMBuildShuffleVector(g->b, v, LLVMGetUndef(vt), mask, "");
}

/* VW elements of dtype adt at p, as a vector of the accumulation type E */
static LLVMValueRef load_wide(CpuGen *g, LLVMValueRef p, int adt, LLVMTypeRef E, int VW)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef mt = cpu_mtype(g, adt);
    LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)VW);
    LLVMValueRef q = LLVMBuildBitCast(b, p, LLVMPointerType(vt, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(b, vt, q, "");
    LLVMSetAlignment(v, (unsigned)dsl_dtype_bytes(adt));
    LLVMTypeRef et = LLVMVectorType(E, (unsigned)VW);
    if (adt == DT_BF16) { /* bf16 bits are the high half of an f32 */
        LLVMTypeRef it = LLVMVectorType(g->i32, (unsigned)VW);
        v = LLVMBuildZExt(b, v, it, "");
        v = LLVMBuildShl(b, v, splatv(g, cpu_i32c(g, 16), VW), "");
        return LLVMBuildBitCast(b, v, et, "");
    }
    return mt == E ? v : LLVMBuildFPExt(b, v, et, "");
}

/* sum of the lanes of v by halving */
static LLVMValueRef hsum(CpuGen *g, LLVMValueRef v, int w)
{
    LLVMBuilderRef b = g->b;
    while (w > 1) {
        int h = w / 2;
        LLVMValueRef lo[32], hi[32];
        for (int i = 0; i < h; i++) {
            lo[i] = cpu_i32c(g, i);
            hi[i] = cpu_i32c(g, h + i);
        }
        LLVMValueRef a = LLVMBuildShuffleVector(b, v, LLVMGetUndef(LLVMTypeOf(v)),
                                                LLVMConstVector(lo, (unsigned)h), "");
        LLVMValueRef c = LLVMBuildShuffleVector(b, v, LLVMGetUndef(LLVMTypeOf(v)),
                                                LLVMConstVector(hi, (unsigned)h), "");
        v = LLVMBuildFAdd(b, a, c, "");
        w = h;
    }
    return LLVMBuildExtractElement(b, v, cpu_i32c(g, 0), "");
}

/* dst[m0 + r] (+)= A[m0 + r, :] . x for r < RB */
static void rows(CpuGen *g, LLVMValueRef A, int adt, LLVMValueRef lda,
                 LLVMValueRef x, LLVMValueRef dst, LLVMValueRef acc_ptr,
                 LLVMValueRef m0, int RB, int64_t K, int VW, LLVMTypeRef E)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW);
    LLVMTypeRef at = cpu_mtype(g, adt);
    int64_t step = (int64_t)MV_U * VW, nv = K / step;
    LLVMValueRef slot[MV_RB][MV_U], arow[MV_RB];
    for (int r = 0; r < RB; r++) {
        arow[r] = cpu_gep(g, at, A, LLVMBuildMul(b, LLVMBuildAdd(b, m0, cpu_i64(g, r), ""),
                                                 lda, ""));
        for (int u = 0; u < MV_U; u++) {
            slot[r][u] = cpu_alloca(g, vt, 1);
            LLVMBuildStore(b, LLVMConstNull(vt), slot[r][u]);
        }
    }
    if (nv > 0) {
        CpuLoop lk;
        cpu_loop_open(g, &lk, cpu_i64(g, 0), cpu_i64(g, nv));
        LLVMValueRef k0 = LLVMBuildMul(b, lk.iv, cpu_i64(g, step), "");
        for (int u = 0; u < MV_U; u++) {
            LLVMValueRef ku = LLVMBuildAdd(b, k0, cpu_i64(g, (int64_t)u * VW), "");
            LLVMValueRef q = LLVMBuildBitCast(b, cpu_gep(g, E, x, ku), LLVMPointerType(vt, 0), "");
            LLVMValueRef xw = LLVMBuildLoad2(b, vt, q, "");
            LLVMSetAlignment(xw, (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), E));
            for (int r = 0; r < RB; r++) {
                LLVMValueRef av = load_wide(g, cpu_gep(g, at, arow[r], ku), adt, E, VW);
                LLVMValueRef ops[3] = {av, xw, LLVMBuildLoad2(b, vt, slot[r][u], "")};
                LLVMBuildStore(b, cpu_intrin(g, "llvm.fma", &vt, 1, ops, 3), slot[r][u]);
            }
        }
        cpu_loop_close(g, &lk);
    }
    LLVMValueRef s[MV_RB];
    for (int r = 0; r < RB; r++) {
        LLVMValueRef v = LLVMBuildLoad2(b, vt, slot[r][0], "");
        for (int u = 1; u < MV_U; u++)
            v = LLVMBuildFAdd(b, v, LLVMBuildLoad2(b, vt, slot[r][u], ""), "");
        s[r] = hsum(g, v, VW);
    }
    for (int64_t k = nv * step; k < K; k++) /* the tail, constant count */
        for (int r = 0; r < RB; r++) {
            LLVMValueRef a = cpu_widen(g, cpu_mload(g, cpu_gep(g, at, arow[r], cpu_i64(g, k)),
                                                    adt), adt);
            if (LLVMTypeOf(a) != E)
                a = LLVMBuildFPExt(b, a, E, "");
            LLVMValueRef xe = LLVMBuildLoad2(b, E, cpu_gep(g, E, x, cpu_i64(g, k)), "");
            LLVMValueRef ops[3] = {a, xe, s[r]};
            s[r] = cpu_intrin(g, "llvm.fma", &E, 1, ops, 3);
        }
    for (int r = 0; r < RB; r++) {
        LLVMValueRef m = LLVMBuildAdd(b, m0, cpu_i64(g, r), "");
        LLVMValueRef v = s[r];
        if (acc_ptr)
            v = LLVMBuildFAdd(b, LLVMBuildLoad2(b, E, cpu_gep(g, E, acc_ptr, m), ""), v, "");
        LLVMBuildStore(b, v, cpu_gep(g, E, dst, m));
    }
}

bool cpu_matvec_applies(CpuGen *g, const IrInstr *in)
{
    const IrType *ta = &g->f->ins[in->opnd[0]].type, *rt = &in->type;
    int adt = ta->dtype, rdt = rt->dtype;
    if (rt->rank != 2 || rt->shape[1] != 1 || (rdt != DT_F32 && rdt != DT_F64))
        return false;
    if (adt == rdt)
        return true;
    return rdt == DT_F32 && (adt == DT_BF16 || adt == DT_F16);
}

int cpu_gen_matvec(CpuGen *g, const IrInstr *in, LLVMValueRef dst, LLVMValueRef acc_ptr)
{
    LLVMBuilderRef b = g->b;
    const IrType *ta = &g->f->ins[in->opnd[0]].type;
    const IrType *tb = &g->f->ins[in->opnd[1]].type, *rt = &in->type;
    int rdt = rt->dtype, adt = ta->dtype;
    int64_t M = rt->shape[0], K = ta->shape[1];
    LLVMTypeRef E = cpu_stype(g, rdt);
    int VW = g->vecw_bytes / dsl_dtype_bytes(rdt);
    if (VW < 1)
        VW = 1;
    LLVMValueRef A = g->val[in->opnd[0]], x = g->val[in->opnd[1]];
    LLVMValueRef lda = g->vld[in->opnd[0]] ? g->vld[in->opnd[0]] : cpu_i64(g, K);
    if (tb->dtype != rdt || g->vld[in->opnd[1]]) { /* x contiguous, type E */
        LLVMValueRef buf = cpu_alloca(g, E, K);
        LLVMValueRef ldb = g->vld[in->opnd[1]] ? g->vld[in->opnd[1]] : cpu_i64(g, 1);
        CpuLoop l;
        cpu_loop_open(g, &l, cpu_i64(g, 0), cpu_i64(g, K));
        LLVMValueRef v = cpu_mload(g, cpu_gep(g, cpu_mtype(g, tb->dtype), x,
                                              LLVMBuildMul(b, l.iv, ldb, "")), tb->dtype);
        cpu_mstore(g, cpu_cvt(g, v, tb->dtype, rdt), cpu_gep(g, E, buf, l.iv), rdt);
        cpu_loop_close(g, &l);
        x = buf;
    }
    int64_t nb = M / MV_RB;
    if (nb > 0) {
        CpuLoop lm;
        cpu_loop_open(g, &lm, cpu_i64(g, 0), cpu_i64(g, nb));
        rows(g, A, adt, lda, x, dst, acc_ptr,
             LLVMBuildMul(b, lm.iv, cpu_i64(g, MV_RB), ""), MV_RB, K, VW, E);
        cpu_loop_close(g, &lm);
    }
    if (M % MV_RB)
        rows(g, A, adt, lda, x, dst, acc_ptr, cpu_i64(g, nb * MV_RB), (int)(M % MV_RB),
             K, VW, E);
    return g->failed ? -1 : 0;
}
