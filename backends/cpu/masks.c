/* masks.c — bounds masks that hold for a whole tile: the condition under
 * which every lane of a fused `arange(...) < n`-style compare is true.
 *
 * Kernels mask their tails with compares of an arange against a size:
 * `where(arange(BLOCK) < N, x - mean, 0.0)`. Computed per element, the
 * compare costs more than the arithmetic it guards once vectorized (the
 * lane indices are built as 64-bit vectors: 6 extra instructions per 16
 * lanes in a layernorm's variance, 16 in its store). lower.c emits a
 * STORE, a scalar REDUCE, or an elementwise op with one fused in, whose
 * operands hold such compares twice: once with them true, taken when
 * cpu_masks_true's test passes (it does for every full tile), and once as
 * written; cpu_elem reads CpuGen.mtrue. BLKC_CPU_NOMASKS=1: never.
 *
 * A compare qualifies when it is computed inline (or read from its buffer
 * by an inline consumer: a mask broadcast over rows), compares signed
 * integers, and one side is an arange expression (arange, a broadcast or
 * reshape of one, plus or minus a scalar, a widening cast) whose range
 * [lo, hi] is known before the loop, the other a scalar. Entry:
 * cpu_masks_true. */
#include "cpu.h"

#include <stdint.h>
#include <stdlib.h>

enum { MASK_DEPTH = 12 };

static bool sint(int dt) { return dsl_dtype_kind(dt) == 'i'; }

/* the LLVM scalar of a rank-0 integer value v, or of a broadcast of one,
 * as i64; NULL if v is neither */
static LLVMValueRef scalar_of(CpuGen *g, int v)
{
    const IrInstr *in = &g->f->ins[v];
    if (in->op == IR_BCAST && ir_numel(&g->f->ins[in->opnd[0]].type) == 1)
        return scalar_of(g, in->opnd[0]);
    if (in->type.rank != 0 || !sint(in->type.dtype) || !g->val[v] || g->inl[v])
        return NULL;
    return cpu_cvt(g, g->val[v], in->type.dtype, DT_I64);
}

/* [lo, hi] (i64) of the values of arange expression v */
static bool range_of(CpuGen *g, int v, LLVMValueRef *lo, LLVMValueRef *hi, int depth)
{
    const IrInstr *in = &g->f->ins[v];
    LLVMBuilderRef b = g->b;
    if (depth > MASK_DEPTH || !sint(in->type.dtype))
        return false;
    switch (in->op) {
    case IR_ARANGE: {
        int64_t n = ir_numel(&in->type);
        if (n < 1)
            return false;
        *lo = cpu_i64(g, in->ival);
        *hi = cpu_i64(g, in->ival + n - 1);
        return true;
    }
    case IR_BCAST: case IR_RESHAPE:
        return in->type.rank > 0 && range_of(g, in->opnd[0], lo, hi, depth + 1);
    case IR_CVT: { /* a widening (or same-width) signed cast keeps values */
        int s = g->f->ins[in->opnd[0]].type.dtype;
        return sint(s) && dsl_dtype_bytes(s) <= dsl_dtype_bytes(in->type.dtype) &&
               range_of(g, in->opnd[0], lo, hi, depth + 1);
    }
    case IR_ADD: case IR_SUB: {
        for (int k = 0; k < 2; k++) {
            if (in->op == IR_SUB && k == 1)
                break; /* s - arange: not needed yet */
            LLVMValueRef s = scalar_of(g, in->opnd[1 - k]);
            if (s && range_of(g, in->opnd[k], lo, hi, depth + 1)) {
                if (in->op == IR_ADD) {
                    *lo = LLVMBuildAdd(b, *lo, s, "");
                    *hi = LLVMBuildAdd(b, *hi, s, "");
                } else {
                    *lo = LLVMBuildSub(b, *lo, s, "");
                    *hi = LLVMBuildSub(b, *hi, s, "");
                }
                return true;
            }
        }
        return false;
    }
    default:
        return false;
    }
}

/* lo and hi within dtype dt: the i64 range is the values' (no wraps) */
static LLVMValueRef fits(CpuGen *g, int dt, LLVMValueRef lo, LLVMValueRef hi)
{
    LLVMBuilderRef b = g->b;
    if (dsl_dtype_bytes(dt) >= 8)
        return LLVMConstInt(g->i1, 1, 0);
    int bits = 8 * dsl_dtype_bytes(dt);
    LLVMValueRef mn = cpu_i64(g, -((int64_t)1 << (bits - 1)));
    LLVMValueRef mx = cpu_i64(g, ((int64_t)1 << (bits - 1)) - 1);
    return LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, lo, mn, ""),
                        LLVMBuildICmp(b, LLVMIntSLE, hi, mx, ""), "");
}

/* i1: every lane of compare c is true, or NULL if c does not qualify */
static LLVMValueRef all_true(CpuGen *g, int c)
{
    const IrInstr *in = &g->f->ins[c];
    LLVMBuilderRef b = g->b;
    if (in->op != IR_LT && in->op != IR_LE && in->op != IR_GT && in->op != IR_GE)
        return NULL;
    int dt = g->f->ins[in->opnd[0]].type.dtype;
    if (!sint(dt) || g->f->ins[in->opnd[1]].type.dtype != dt)
        return NULL;
    LLVMValueRef lo, hi, s;
    for (int k = 0; k < 2; k++) { /* k = 0: arange OP s; 1: s OP arange */
        s = scalar_of(g, in->opnd[1 - k]);
        if (!s || !range_of(g, in->opnd[k], &lo, &hi, 0))
            continue;
        LLVMIntPredicate p;
        LLVMValueRef x;
        switch (in->op) { /* the lane that decides: max for <, min for > */
        case IR_LT: p = LLVMIntSLT; x = k ? lo : hi; break;
        case IR_LE: p = LLVMIntSLE; x = k ? lo : hi; break;
        case IR_GT: p = LLVMIntSGT; x = k ? hi : lo; break;
        default: p = LLVMIntSGE; x = k ? hi : lo; break;
        }
        LLVMValueRef t = k ? LLVMBuildICmp(b, p, s, x, "") : LLVMBuildICmp(b, p, x, s, "");
        return LLVMBuildAnd(b, t, fits(g, dt, lo, hi), "");
    }
    return NULL;
}

/* all_true of a compare, or of a reshape or broadcast of one (a mask in a
 * buffer read across rows) */
static LLVMValueRef mask_true(CpuGen *g, int v, int depth)
{
    const IrInstr *in = &g->f->ins[v];
    if ((in->op == IR_RESHAPE || in->op == IR_BCAST) && in->type.rank > 0 &&
        depth < MASK_DEPTH && in->type.dtype == DT_BOOL)
        return mask_true(g, in->opnd[0], depth + 1);
    return all_true(g, v);
}

static void collect(CpuGen *g, int v, int *ids, int max, int *n, LLVMValueRef *cond,
                    int depth)
{
    if (v < 0 || v >= g->f->nins || depth > MASK_DEPTH || *n >= max)
        return;
    for (int i = 0; i < *n; i++)
        if (ids[i] == v)
            return;
    LLVMValueRef t = mask_true(g, v, 0); /* inline, or a mask in a buffer */
    if (t) {
        ids[(*n)++] = v;
        *cond = *cond ? LLVMBuildAnd(g->b, *cond, t, "") : t;
        return;
    }
    if (!g->inl[v])
        return;
    const IrInstr *in = &g->f->ins[v];
    for (int k = 0; k < 3; k++)
        collect(g, in->opnd[k], ids, max, n, cond, depth + 1);
}

LLVMValueRef cpu_masks_true(CpuGen *g, int id, int *ids, int max, int *n)
{
    *n = 0;
    if (!g->mtrue || cpu_switch(CPU_SW_NOMASKS))
        return NULL;
    LLVMValueRef cond = NULL;
    const IrInstr *in = &g->f->ins[id];
    for (int k = 0; k < 4; k++)
        collect(g, in->opnd[k], ids, max, n, &cond, 0);
    return *n ? cond : NULL;
}
