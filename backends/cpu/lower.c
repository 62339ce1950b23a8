/* lower.c — Core IR -> LLVM IR for the CPU: one LLVM function per IrFunc
 * (plus its NAME__range driver), structured control flow as basic blocks,
 * scalars as SSA values, tiles as entry-block allocas walked by flat loops,
 * and the elementwise ops. Memory ops live in mem.c, shape/reduction/dot ops
 * in tile.c, dtype conversions in dtype.c. */
#include "cpu.h"

#include <llvm/Config/llvm-config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu_fail(CpuGen *g, const char *fmt, ...)
{
    if (!g->failed) {
        va_list ap;
        va_start(ap, fmt);
        int k = snprintf(g->err, g->errlen, "cpu backend: %s: ", g->f->name);
        if (k >= 0 && (size_t)k < g->errlen)
            vsnprintf(g->err + k, g->errlen - (size_t)k, fmt, ap);
        va_end(ap);
        g->failed = true;
    }
    return -1;
}

LLVMValueRef cpu_i64(CpuGen *g, int64_t v)
{
    return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}

LLVMValueRef cpu_i32c(CpuGen *g, int64_t v)
{
    return LLVMConstInt(g->i32, (unsigned long long)v, 1);
}

void cpu_loop_open(CpuGen *g, CpuLoop *l, LLVMValueRef lo, LLVMValueRef hi)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    l->head = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "loop");
    l->body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "body");
    l->exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
    LLVMBuildBr(g->b, l->head);
    LLVMPositionBuilderAtEnd(g->b, l->head);
    l->iv = LLVMBuildPhi(g->b, g->i64, "i");
    LLVMAddIncoming(l->iv, &lo, &pre, 1);
    LLVMValueRef c = LLVMBuildICmp(g->b, LLVMIntSLT, l->iv, hi, "");
    LLVMBuildCondBr(g->b, c, l->body, l->exit);
    LLVMPositionBuilderAtEnd(g->b, l->body);
}

void cpu_loop_close(CpuGen *g, CpuLoop *l)
{
    LLVMValueRef next = LLVMBuildNSWAdd(g->b, l->iv, cpu_i64(g, 1), "");
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->b);
    LLVMAddIncoming(l->iv, &next, &cur, 1);
    LLVMBuildBr(g->b, l->head);
    LLVMPositionBuilderAtEnd(g->b, l->exit);
}

LLVMValueRef cpu_alloca(CpuGen *g, LLVMTypeRef t, int64_t n)
{
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->b);
    LLVMPositionBuilderAtEnd(g->b, g->entry);
    LLVMValueRef a;
    if (n == 1) {
        a = LLVMBuildAlloca(g->b, t, "");
    } else {
        a = LLVMBuildAlloca(g->b, LLVMArrayType(t, (unsigned)n), "");
        LLVMSetAlignment(a, 64);
        a = LLVMBuildBitCast(g->b, a, LLVMPointerType(t, 0), "");
    }
    LLVMPositionBuilderAtEnd(g->b, cur);
    return a;
}

LLVMValueRef cpu_tile_buf(CpuGen *g, const IrType *t)
{
    return cpu_alloca(g, cpu_mtype(g, t->dtype), ir_numel(t));
}

LLVMValueRef cpu_gep(CpuGen *g, LLVMTypeRef et, LLVMValueRef p, LLVMValueRef idx)
{
    return LLVMBuildInBoundsGEP2(g->b, et, p, &idx, 1, "");
}

LLVMValueRef cpu_opaque_ptr(CpuGen *g, LLVMValueRef p)
{
    LLVMTypeRef ft = LLVMFunctionType(g->ptr, &g->ptr, 1, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(ft, (char *)"", 0, (char *)"=r,0", 4, 0, 0,
                                         LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(g->b, ft, asmv, &p, 1, "");
}

LLVMValueRef cpu_elem(CpuGen *g, int id, LLVMValueRef lin)
{
    const IrType *t = &g->f->ins[id].type;
    if (t->rank == 0)
        return g->val[id];
    if (g->mtrue && g->mtrue[id]) /* a compare true in every lane (masks.c) */
        return LLVMConstInt(g->i1, 1, 0);
    if (g->inl && g->inl[id])
        return cpu_fused_elem(g, id, lin);
    return cpu_mload(g, cpu_gep(g, cpu_mtype(g, t->dtype), g->val[id], lin),
                     t->dtype);
}

/* One piece of print(...) (see ops.def): a value is copied to a
 * row-major buffer and formatted by blkc_cpu_print_val. */
static int gen_print(CpuGen *g, const IrInstr *in)
{
    LLVMBuilderRef b = g->b;
    if (in->attr == 0) {
        LLVMValueRef a[1] = {LLVMGetParam(g->fn, 1)};
        cpu_call(g, "blkc_cpu_print_begin", g->vd, a, 1);
    } else if (in->attr == 1) {
        LLVMValueRef a[1] = {LLVMBuildGlobalStringPtr(b, g->f->msgs[in->ival], "")};
        cpu_call(g, "blkc_cpu_print_text", g->vd, a, 1);
    } else if (in->attr == 3) {
        cpu_call(g, "blkc_cpu_print_end", g->vd, NULL, 0);
    } else {
        const IrType *t = &g->f->ins[in->opnd[0]].type;
        int32_t one = 1;
        IrType bt = t->rank ? *t : ir_tile(t->dtype, 1, &one);
        int64_t n = ir_numel(&bt);
        LLVMValueRef buf = cpu_tile_buf(g, &bt);
        LLVMTypeRef mt = cpu_mtype(g, t->dtype);
        CpuLoop l;
        cpu_loop_open(g, &l, cpu_i64(g, 0), cpu_i64(g, n));
        cpu_mstore(g, cpu_elem(g, in->opnd[0], l.iv), cpu_gep(g, mt, buf, l.iv), t->dtype);
        cpu_loop_close(g, &l);
        LLVMValueRef dims[IR_MAX_RANK];
        for (int d = 0; d < bt.rank; d++)
            dims[d] = cpu_i64(g, bt.shape[d]);
        LLVMTypeRef at = LLVMArrayType(g->i64, (unsigned)bt.rank);
        LLVMValueRef gv = LLVMAddGlobal(g->mod, at, "");
        LLVMSetInitializer(gv, LLVMConstArray(g->i64, dims, (unsigned)bt.rank));
        LLVMSetGlobalConstant(gv, 1);
        LLVMSetLinkage(gv, LLVMPrivateLinkage);
        LLVMValueRef a[4] = {buf, cpu_i32c(g, t->dtype), cpu_i32c(g, t->rank), gv};
        cpu_call(g, "blkc_cpu_print_val", g->vd, a, 4);
    }
    return 0;
}

static LLVMValueRef declare(CpuGen *g, const char *name, LLVMTypeRef fty)
{
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(g->mod, name, fty);
        /* "no memory access": readnone until LLVM 15, memory(none) (the
         * memory attribute with no effects, value 0) from LLVM 16 */
#if LLVM_VERSION_MAJOR >= 16
        const char *attrs[] = {"memory", "nounwind", "willreturn"};
#else
        const char *attrs[] = {"readnone", "nounwind", "willreturn"};
#endif
        /* helpers with side effects (signals) keep no attributes */
        bool effects = strncmp(name, "blkc_cpu_notify", 15) == 0 ||
                       strncmp(name, "blkc_cpu_wait", 13) == 0 ||
                       strncmp(name, "blkc_cpu_assert", 15) == 0 ||
                       strncmp(name, "blkc_cpu_print", 14) == 0;
        for (int i = 0; i < 3 && !effects; i++) {
            unsigned k = LLVMGetEnumAttributeKindForName(attrs[i],
                                                         strlen(attrs[i]));
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(g->ctx, k, 0));
        }
    }
    return fn;
}

LLVMValueRef cpu_call(CpuGen *g, const char *name, LLVMTypeRef ret,
                      LLVMValueRef *args, int n)
{
    LLVMTypeRef pt[8];
    for (int i = 0; i < n && i < 8; i++)
        pt[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, pt, (unsigned)n, 0);
    return LLVMBuildCall2(g->b, fty, declare(g, name, fty), args, (unsigned)n, "");
}

LLVMValueRef cpu_intrin(CpuGen *g, const char *name, LLVMTypeRef *ovl,
                        int novl, LLVMValueRef *args, int n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, ovl, (size_t)novl);
    LLVMTypeRef fty = LLVMIntrinsicGetType(g->ctx, id, ovl, (size_t)novl);
    return LLVMBuildCall2(g->b, fty, fn, args, (unsigned)n, "");
}

LLVMValueRef cpu_intrin1(CpuGen *g, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    return cpu_intrin(g, name, &t, 1, &x, 1);
}

void cpu_prefetch(CpuGen *g, LLVMValueRef p, int locality)
{
    LLVMValueRef a[4] = {p, cpu_i32c(g, 0), cpu_i32c(g, locality), cpu_i32c(g, 1)};
    LLVMTypeRef pt = LLVMTypeOf(p);
    cpu_intrin(g, "llvm.prefetch", &pt, 1, a, 4);
}

/* ------------------------------------------------------------ scalar ops */

static LLVMValueRef float_op(CpuGen *g, int op, LLVMValueRef *a, int n)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = LLVMTypeOf(a[0]);
    bool dbl = t == g->f64;
    LLVMValueRef one = LLVMConstReal(t, 1.0);
    switch (op) {
    case IR_NEG: return LLVMBuildFNeg(b, a[0], "");
    case IR_ABS: return cpu_intrin1(g, "llvm.fabs", a[0]);
    /* exp/exp2/log/log2/sigmoid/tanh: inline vectorizable code (vmath.c) */
    case IR_EXP: return cpu_vm_exp(g, a[0]);
    case IR_EXP2: return cpu_vm_exp2(g, a[0]);
    case IR_LOG: return cpu_vm_log(g, a[0]);
    case IR_LOG2: return cpu_vm_log2(g, a[0]);
    case IR_SQRT: return cpu_intrin1(g, "llvm.sqrt", a[0]);
    case IR_RSQRT:
        return LLVMBuildFDiv(b, one, cpu_intrin1(g, "llvm.sqrt", a[0]), "");
    case IR_SIN: return cpu_intrin1(g, "llvm.sin", a[0]);
    case IR_COS: return cpu_intrin1(g, "llvm.cos", a[0]);
    case IR_TANH: return cpu_vm_tanh(g, a[0]);
    case IR_ERF: return cpu_call(g, dbl ? "erf" : "erff", t, a, 1);
    case IR_FLOOR: return cpu_intrin1(g, "llvm.floor", a[0]);
    case IR_CEIL: return cpu_intrin1(g, "llvm.ceil", a[0]);
    case IR_SIGMOID: return cpu_vm_sigmoid(g, a[0]);
    case IR_LOG1P: return cpu_call(g, dbl ? "log1p" : "log1pf", t, a, 1);
    case IR_EXPM1: return cpu_call(g, dbl ? "expm1" : "expm1f", t, a, 1);
    case IR_TAN: return cpu_call(g, dbl ? "tan" : "tanf", t, a, 1);
    case IR_ATAN: return cpu_call(g, dbl ? "atan" : "atanf", t, a, 1);
    case IR_SINH: return cpu_call(g, dbl ? "sinh" : "sinhf", t, a, 1);
    case IR_COSH: return cpu_call(g, dbl ? "cosh" : "coshf", t, a, 1);
    case IR_ROUND: return cpu_intrin1(g, "llvm.roundeven", a[0]);
    case IR_TRUNC: return cpu_intrin1(g, "llvm.trunc", a[0]);
    case IR_POW: return cpu_call(g, dbl ? "pow" : "powf", t, a, 2);
    case IR_ATAN2: return cpu_call(g, dbl ? "atan2" : "atan2f", t, a, 2);
    case IR_ADD: return LLVMBuildFAdd(b, a[0], a[1], "");
    case IR_SUB: return LLVMBuildFSub(b, a[0], a[1], "");
    case IR_MUL: return LLVMBuildFMul(b, a[0], a[1], "");
    case IR_DIV: return LLVMBuildFDiv(b, a[0], a[1], "");
    case IR_REM: return LLVMBuildFRem(b, a[0], a[1], "");
    case IR_MAX: case IR_MIN: {
        LLVMValueRef c = LLVMBuildFCmp(b, op == IR_MAX ? LLVMRealOGT : LLVMRealOLT,
                                       a[0], a[1], "");
        LLVMValueRef r = LLVMBuildSelect(b, c, a[0], a[1], "");
        LLVMValueRef n0 = LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], "");
        return LLVMBuildSelect(b, n0, a[0], r, "");
    }
    case IR_FMA: return cpu_intrin(g, "llvm.fma", &t, 1, a, 3);
    default: (void)n; return NULL;
    }
}

static LLVMValueRef int_op(CpuGen *g, int op, int dt, LLVMValueRef *a)
{
    LLVMBuilderRef b = g->b;
    bool s = cpu_is_signed(dt);
    LLVMTypeRef t = LLVMTypeOf(a[0]);
    LLVMValueRef zero = LLVMConstNull(t);
    switch (op) {
    case IR_NEG: return LLVMBuildNeg(b, a[0], "");
    case IR_BITNOT: return LLVMBuildNot(b, a[0], "");
    case IR_ABS:
        if (!s)
            return a[0];
        return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a[0], zero, ""),
                               LLVMBuildNeg(b, a[0], ""), a[0], "");
    case IR_ADD: return LLVMBuildAdd(b, a[0], a[1], "");
    case IR_SUB: return LLVMBuildSub(b, a[0], a[1], "");
    case IR_MUL: return LLVMBuildMul(b, a[0], a[1], "");
    case IR_FMA: return LLVMBuildAdd(b, LLVMBuildMul(b, a[0], a[1], ""), a[2], "");
    case IR_DIV: case IR_REM: {
        /* x/0 = 0, x%0 = 0; signed x/-1 = -x, x%-1 = 0 (no INT_MIN trap) */
        LLVMValueRef one = LLVMConstInt(t, 1, 0);
        LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, a[1], zero, "");
        LLVMValueRef bad = z, m1 = NULL;
        if (s && t != g->i1) {
            m1 = LLVMBuildICmp(b, LLVMIntEQ, a[1], LLVMConstAllOnes(t), "");
            bad = LLVMBuildOr(b, z, m1, "");
        }
        LLVMValueRef d = LLVMBuildSelect(b, bad, one, a[1], "");
        LLVMValueRef r;
        if (op == IR_DIV)
            r = s ? LLVMBuildSDiv(b, a[0], d, "") : LLVMBuildUDiv(b, a[0], d, "");
        else
            r = s ? LLVMBuildSRem(b, a[0], d, "") : LLVMBuildURem(b, a[0], d, "");
        if (m1)
            r = LLVMBuildSelect(b, m1, op == IR_DIV ? LLVMBuildNeg(b, a[0], "")
                                                    : zero, r, "");
        return LLVMBuildSelect(b, z, zero, r, "");
    }
    case IR_AND: return LLVMBuildAnd(b, a[0], a[1], "");
    case IR_OR: return LLVMBuildOr(b, a[0], a[1], "");
    case IR_XOR: return LLVMBuildXor(b, a[0], a[1], "");
    case IR_SHL: case IR_SHR: {
        unsigned w = LLVMGetIntTypeWidth(t);
        LLVMValueRef c = LLVMBuildAnd(b, a[1], LLVMConstInt(t, w - 1, 0), "");
        if (op == IR_SHL)
            return LLVMBuildShl(b, a[0], c, "");
        return s ? LLVMBuildAShr(b, a[0], c, "") : LLVMBuildLShr(b, a[0], c, "");
    }
    case IR_MAX: case IR_MIN: {
        LLVMIntPredicate p = op == IR_MAX ? (s ? LLVMIntSGT : LLVMIntUGT)
                                          : (s ? LLVMIntSLT : LLVMIntULT);
        return LLVMBuildSelect(b, LLVMBuildICmp(b, p, a[0], a[1], ""), a[0],
                               a[1], "");
    }
    default: return NULL;
    }
}

static LLVMValueRef compare(CpuGen *g, int op, int dt, LLVMValueRef x,
                            LLVMValueRef y)
{
    if (dsl_is_float(dt)) {
        static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE,
            LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
        return LLVMBuildFCmp(g->b, fp[op - IR_EQ], cpu_widen(g, x, dt),
                             cpu_widen(g, y, dt), "");
    }
    bool s = cpu_is_signed(dt);
    LLVMIntPredicate p;
    switch (op) {
    case IR_EQ: p = LLVMIntEQ; break;
    case IR_NE: p = LLVMIntNE; break;
    case IR_LT: p = s ? LLVMIntSLT : LLVMIntULT; break;
    case IR_LE: p = s ? LLVMIntSLE : LLVMIntULE; break;
    case IR_GT: p = s ? LLVMIntSGT : LLVMIntUGT; break;
    default: p = s ? LLVMIntSGE : LLVMIntUGE; break;
    }
    return LLVMBuildICmp(g->b, p, x, y, "");
}

LLVMValueRef cpu_scalar_op(CpuGen *g, const IrInstr *in, LLVMValueRef *a)
{
    int op = in->op, rdt = in->type.dtype;
    int odt = g->f->ins[in->opnd[op == IR_SELECT ? 1 : 0]].type.dtype;
    int n = ir_op_nopnd[op];
    LLVMValueRef r = NULL;
    switch (op) {
    case IR_CVT: return cpu_cvt(g, a[0], odt, rdt);
    case IR_BITCAST: {
        LLVMTypeRef rt = cpu_stype(g, rdt);
        return LLVMTypeOf(a[0]) == rt ? a[0] : LLVMBuildBitCast(g->b, a[0], rt, "");
    }
    case IR_SELECT: return LLVMBuildSelect(g->b, a[0], a[1], a[2], "");
    case IR_NOT: return LLVMBuildXor(g->b, a[0], LLVMConstInt(g->i1, 1, 0), "");
    case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
        return compare(g, op, odt, a[0], a[1]);
    default: break;
    }
    if (dsl_is_float(odt)) {
        LLVMValueRef w[3];
        for (int i = 0; i < n; i++)
            w[i] = cpu_widen(g, a[i], odt);
        r = float_op(g, op, w, n);
        if (r)
            r = cpu_narrow(g, r, rdt);
    } else {
        r = int_op(g, op, odt, a);
    }
    if (!r)
        cpu_fail(g, "op %s not supported for %s", ir_op_names[op],
                 dsl_dtype_name(odt));
    return r;
}

/* ------------------------------------------------------------ instrs */

static int gen_region(CpuGen *g, int r);

static int gen_elem(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    int n = ir_op_nopnd[in->op];
    LLVMValueRef a[3];
    if (in->type.rank == 0) {
        for (int i = 0; i < n; i++)
            a[i] = g->val[in->opnd[i]];
        g->val[id] = cpu_scalar_op(g, in, a);
        return g->val[id] ? 0 : -1;
    }
    if (g->fred[id])
        return cpu_gen_elem_reduce(g, id);
    LLVMValueRef buf = cpu_tile_buf(g, &in->type);
    /* a prefetch site (fuse.c) walks chunks of PF_ELEMS, a prefetch each */
    int64_t len = ir_numel(&in->type), ch = g->pfn[id] ? PF_ELEMS : len;
    int64_t nch = len / ch;
    CpuLoop lc, l;
    cpu_loop_open(g, &lc, cpu_i64(g, 0), cpu_i64(g, nch));
    LLVMValueRef c0 = LLVMBuildMul(g->b, lc.iv, cpu_i64(g, ch), "");
    cpu_prefetch_next(g, id, c0, ch);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            cpu_loop_open(g, &l, c0, LLVMBuildAdd(g->b, c0, cpu_i64(g, ch), ""));
        else if (len % ch)
            cpu_loop_open(g, &l, cpu_i64(g, nch * ch), cpu_i64(g, len));
        else
            break;
        for (int i = 0; i < n; i++)
            a[i] = cpu_elem(g, in->opnd[i], l.iv);
        LLVMValueRef r = cpu_scalar_op(g, in, a);
        if (!r)
            return -1;
        cpu_mstore(g, r, cpu_gep(g, cpu_mtype(g, in->type.dtype), buf, l.iv),
                   in->type.dtype);
        cpu_loop_close(g, &l);
        if (pass == 0)
            cpu_loop_close(g, &lc);
    }
    g->val[id] = buf;
    return 0;
}

static void fill(CpuGen *g, LLVMValueRef buf, const IrType *t, LLVMValueRef v)
{
    CpuLoop l;
    cpu_loop_open(g, &l, cpu_i64(g, 0), cpu_i64(g, ir_numel(t)));
    cpu_mstore(g, v, cpu_gep(g, cpu_mtype(g, t->dtype), buf, l.iv), t->dtype);
    cpu_loop_close(g, &l);
}

static void copy_tile(CpuGen *g, LLVMValueRef dst, LLVMValueRef src,
                      const IrType *t)
{
    int64_t bytes = ir_numel(t) * dsl_dtype_bytes(t->dtype);
    LLVMBuildMemCpy(g->b, dst, 4, src, 4, cpu_i64(g, bytes));
}

static int gen_for(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBuilderRef b = g->b;
    LLVMValueRef lo = g->val[in->opnd[0]], hi = g->val[in->opnd[1]];
    LLVMValueRef step = g->val[in->opnd[2]];
    bool s = cpu_is_signed(in->type.dtype);
    LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(step));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "for");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "for.body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "for.end");
    LLVMValueRef pos = LLVMBuildICmp(b, s ? LLVMIntSGT : LLVMIntNE, step, zero, "");
    LLVMValueRef neg = s ? LLVMBuildICmp(b, LLVMIntSLT, step, zero, "")
                         : LLVMConstInt(g->i1, 0, 0);
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef iv = LLVMBuildPhi(b, LLVMTypeOf(lo), "iv");
    LLVMAddIncoming(iv, &lo, &pre, 1);
    LLVMValueRef up = LLVMBuildICmp(b, s ? LLVMIntSLT : LLVMIntULT, iv, hi, "");
    LLVMValueRef down = LLVMBuildICmp(b, LLVMIntSGT, iv, hi, "");
    LLVMValueRef c = LLVMBuildSelect(b, pos, up,
        LLVMBuildAnd(b, neg, down, ""), "");
    LLVMBuildCondBr(b, c, body, exit);
    LLVMPositionBuilderAtEnd(b, body);
    g->val[id] = iv;
    if (gen_region(g, in->region[0]))
        return -1;
    LLVMValueRef next = LLVMBuildAdd(b, iv, step, "");
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(b);
    LLVMAddIncoming(iv, &next, &cur, 1);
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, exit);
    return 0;
}

static int gen_while(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    const IrRegion *cr = &g->f->regions[in->region[0]];
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "while");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "while.body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "while.end");
    LLVMBuildBr(g->b, head);
    LLVMPositionBuilderAtEnd(g->b, head);
    if (gen_region(g, in->region[0]))
        return -1;
    int y = -1;
    for (int i = cr->n - 1; i >= 0 && y < 0; i--)
        if (!g->f->ins[cr->ins[i]].dead && g->f->ins[cr->ins[i]].op == IR_YIELD)
            y = cr->ins[i];
    if (y < 0)
        return cpu_fail(g, "while without yield");
    LLVMBuildCondBr(g->b, g->val[g->f->ins[y].opnd[0]], body, exit);
    LLVMPositionBuilderAtEnd(g->b, body);
    if (in->region[1] >= 0 && gen_region(g, in->region[1]))
        return -1;
    LLVMBuildBr(g->b, head);
    LLVMPositionBuilderAtEnd(g->b, exit);
    return 0;
}

static int gen_if(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBasicBlockRef th = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "then");
    LLVMBasicBlockRef el = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "else");
    LLVMBasicBlockRef end = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "endif");
    LLVMBuildCondBr(g->b, g->val[in->opnd[0]], th, el);
    LLVMPositionBuilderAtEnd(g->b, th);
    if (in->region[0] >= 0 && gen_region(g, in->region[0]))
        return -1;
    LLVMBuildBr(g->b, end);
    LLVMPositionBuilderAtEnd(g->b, el);
    if (in->region[1] >= 0 && gen_region(g, in->region[1]))
        return -1;
    LLVMBuildBr(g->b, end);
    LLVMPositionBuilderAtEnd(g->b, end);
    return 0;
}

static int gen_op(CpuGen *g, int id);

/* A STORE, a REDUCE to a scalar, or an elementwise op with such a REDUCE
 * fused into its loop, whose fused operands compare an arange with a size
 * (masks.c): emitted twice, with those compares true where the
 * test before them says every lane passes (a full tile), and as written.
 * Versioning stops at one level: the compares' ids stay marked only while
 * the first copy is emitted. */
static int gen_instr(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBuilderRef b = g->b;
    enum { MAXF = 8 };
    int ids[MAXF], n = 0;
    int r = g->fred[id] ? g->fred[id] - 1 : -1; /* a REDUCE fused into id's loop */
    bool site = !g->inl[id] && g->skip[id] != 3 &&
                (r < 0 ? in->op == IR_STORE || (in->op == IR_REDUCE && in->type.rank == 0)
                       : g->f->ins[r].type.rank == 0);
    LLVMValueRef cond = site && !g->mcopy ? cpu_masks_true(g, id, ids, MAXF, &n) : NULL;
    if (!cond)
        return gen_op(g, id);
    LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "masks.all");
    LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "masks.some");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "masks.end");
    LLVMBuildCondBr(b, cond, yes, no);
    LLVMPositionBuilderAtEnd(b, yes);
    g->mcopy = true;
    for (int i = 0; i < n; i++)
        g->mtrue[ids[i]] = 1;
    int rc = gen_op(g, id);
    for (int i = 0; i < n; i++)
        g->mtrue[ids[i]] = 0;
    g->mcopy = false;
    int out[2] = {id, r}; /* the values the op sets: its own, a fused REDUCE's */
    LLVMValueRef v1[2] = {g->val[id], r >= 0 ? g->val[r] : NULL};
    LLVMBasicBlockRef e1 = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, no);
    if (!rc)
        rc = gen_op(g, id);
    LLVMBasicBlockRef e2 = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    for (int k = 0; k < 2 && !rc; k++) { /* a scalar, or a buffer (two allocas) */
        LLVMValueRef v2 = out[k] >= 0 ? g->val[out[k]] : NULL;
        if (!v1[k] || !v2 || v1[k] == v2)
            continue;
        LLVMValueRef phi = LLVMBuildPhi(b, LLVMTypeOf(v2), "");
        LLVMValueRef vs[2] = {v1[k], v2};
        LLVMBasicBlockRef bs[2] = {e1, e2};
        LLVMAddIncoming(phi, vs, bs, 2);
        g->val[out[k]] = phi;
    }
    return rc;
}

static int gen_op(CpuGen *g, int id)
{
    const IrInstr *in = &g->f->ins[id];
    const IrFunc *f = g->f;
    LLVMBuilderRef b = g->b;
    if (g->inl[id] || g->skip[id] == 3)
        return 0; /* computed in its consumer's / producer's loop (fuse.c) */
    if (ir_op_flags[in->op] & F_ELEM)
        return gen_elem(g, id);
    switch (in->op) {
    case IR_CONST: {
        LLVMValueRef c = cpu_const(g, in->type.dtype, in->ival, in->fval);
        if (in->type.rank == 0) {
            g->val[id] = c;
        } else {
            g->val[id] = cpu_tile_buf(g, &in->type);
            fill(g, g->val[id], &in->type, c);
        }
        return 0;
    }
    case IR_PARAM:
        g->val[id] = cpu_mload(g, g->tdata[in->param], in->type.dtype);
        return 0;
    case IR_SIZE:
        if (in->param < 0 || in->param >= f->nparams ||
            in->attr >= f->params[in->param].rank)
            return cpu_fail(g, "bad size operand");
        g->val[id] = LLVMBuildTrunc(b, g->tshape[in->param][in->attr],
                                    cpu_stype(g, in->type.dtype), "");
        return 0;
    case IR_PID: case IR_NPROG: {
        LLVMValueRef p = LLVMGetParam(g->fn, in->op == IR_PID ? 1 : 2);
        LLVMValueRef v = LLVMBuildLoad2(
            b, g->i32, cpu_gep(g, g->i32, p, cpu_i64(g, in->attr)), "");
        g->val[id] = cpu_cvt(g, v, DT_I32, in->type.dtype);
        return 0;
    }
    case IR_ARANGE: case IR_BCAST: case IR_RESHAPE: case IR_PERMUTE:
    case IR_REDUCE: case IR_SCAN:
        return cpu_gen_tileop(g, id);
    case IR_DOT: {
        if (g->skip[id] == 2) { /* accumulate in place in the var slot */
            LLVMValueRef slot = g->var[f->ins[in->opnd[2]].param];
            g->val[id] = slot;
            return cpu_gen_dot(g, in, slot, slot);
        }
        g->val[id] = cpu_tile_buf(g, &in->type);
        return cpu_gen_dot(g, in, g->val[id],
                           in->opnd[2] >= 0 ? g->val[in->opnd[2]] : NULL);
    }
    case IR_LOAD: case IR_STORE: case IR_ATOMIC: case IR_NOTIFY: case IR_WAIT:
        return cpu_gen_memop(g, id);
    case IR_PRINT:
        return gen_print(g, in);
    case IR_ASSERT: { /* false: record it and end this program instance */
        LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "assert.fail");
        LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "assert.ok");
        LLVMBuildCondBr(b, g->val[in->opnd[0]], ok, bad);
        LLVMPositionBuilderAtEnd(b, bad);
        LLVMValueRef a[4] = {cpu_launch_ctx(g), LLVMGetParam(g->fn, 1),
                             cpu_i32c(g, (int)in->ival), cpu_i32c(g, in->loc.line)};
        cpu_call(g, "blkc_cpu_assert", g->vd, a, 4);
        LLVMBuildBr(b, g->exit);
        LLVMPositionBuilderAtEnd(b, ok);
        return 0;
    }
    case IR_RANK: case IR_WORLD: {
        LLVMValueRef p = cpu_gep(g, g->i32, cpu_launch_ctx(g),
                                 cpu_i64(g, in->op == IR_RANK ? 3 : 4));
        g->val[id] = LLVMBuildLoad2(b, g->i32, p, "");
        return 0;
    }
    case IR_VGET: {
        LLVMValueRef slot = g->var[in->param];
        if (g->skip[id]) {
            g->val[id] = slot;
        } else if (in->type.rank == 0) {
            g->val[id] = LLVMBuildLoad2(b, cpu_stype(g, in->type.dtype), slot, "");
        } else {
            g->val[id] = cpu_tile_buf(g, &in->type);
            copy_tile(g, g->val[id], slot, &in->type);
        }
        return 0;
    }
    case IR_VSET: {
        LLVMValueRef slot = g->var[in->param];
        const IrType *t = &f->vars[in->param].type;
        if (g->skip[id])
            return 0;
        if (t->rank == 0)
            LLVMBuildStore(b, g->val[in->opnd[0]], slot);
        else
            copy_tile(g, slot, g->val[in->opnd[0]], t);
        return 0;
    }
    case IR_FOR: return gen_for(g, id);
    case IR_WHILE: return gen_while(g, id);
    case IR_IF: return gen_if(g, id);
    case IR_YIELD: return 0;
    case IR_RET:
        LLVMBuildBr(b, g->exit);
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, g->fn,
                                                                  "dead"));
        return 0;
    default:
        return cpu_fail(g, "unsupported op %s", ir_op_names[in->op]);
    }
}

static int gen_region(CpuGen *g, int r)
{
    const IrRegion *reg = &g->f->regions[r];
    for (int i = 0; i < reg->n; i++) {
        int id = reg->ins[i];
        if (g->f->ins[id].dead)
            continue;
        if (gen_instr(g, id) || g->failed)
            return cpu_fail(g, "lowering failed");
    }
    return 0;
}

/* ------------------------------------------------------------ analysis */

static void count_uses(CpuGen *g)
{
    const IrFunc *f = g->f;
    for (int i = 0; i < f->nins; i++) {
        const IrInstr *in = &f->ins[i];
        if (in->dead)
            continue;
        for (int k = 0; k < 4; k++)
            if (in->opnd[k] >= 0 && in->opnd[k] < f->nins)
                g->uses[in->opnd[k]]++;
        if (in->view >= 0)
            for (int d = 0; d < f->views[in->view].ndims; d++)
                g->uses[f->views[in->view].d[d].val]++;
    }
}

/* `VSET v (DOT a b (VGET v))` with single uses and nothing touching v in
 * between: let the DOT accumulate in the var slot itself. */
static void find_inplace_dots(CpuGen *g)
{
    const IrFunc *f = g->f;
    for (int r = 0; r < f->nregions; r++) {
        const IrRegion *reg = &f->regions[r];
        for (int i = 0; i < reg->n; i++) {
            const IrInstr *s = &f->ins[reg->ins[i]];
            if (s->dead || s->op != IR_VSET)
                continue;
            int x = s->opnd[0];
            const IrInstr *d = &f->ins[x];
            if (d->op != IR_DOT || g->uses[x] != 1 || d->opnd[2] < 0)
                continue;
            int acc = d->opnd[2];
            const IrInstr *v = &f->ins[acc];
            if (v->op != IR_VGET || v->param != s->param || g->uses[acc] != 1)
                continue;
            int j = i - 1;
            bool ok = false;
            for (; j >= 0; j--) {
                const IrInstr *o = &f->ins[reg->ins[j]];
                if (reg->ins[j] == acc) {
                    ok = true;
                    break;
                }
                if (!o->dead && ((ir_op_flags[o->op] & F_REGION) ||
                                 (o->op == IR_VSET && o->param == s->param)))
                    break;
            }
            if (!ok || f->ins[d->opnd[0]].op == IR_VGET ||
                f->ins[d->opnd[1]].op == IR_VGET)
                continue;
            g->skip[acc] = 1;
            g->skip[reg->ins[i]] = 1;
            g->skip[x] = 2;
        }
    }
}

/* A VGET of a tile read only by STOREs later in its region, with no VSET
 * of its var (nor a region, which may hold one) in between: the STOREs
 * read the var slot itself, not a copy (a GEMM's `C[..] = acc` after its
 * K loop copied the whole accumulator first). */
static void find_store_vgets(CpuGen *g)
{
    const IrFunc *f = g->f;
    if (cpu_switch(CPU_SW_NOALIAS))
        return;
    for (int r = 0; r < f->nregions; r++) {
        const IrRegion *reg = &f->regions[r];
        for (int i = 0; i < reg->n; i++) {
            int v = reg->ins[i];
            const IrInstr *in = &f->ins[v];
            if (in->dead || in->op != IR_VGET || in->type.rank == 0 || g->skip[v] ||
                g->inl[v] || g->uses[v] < 1)
                continue;
            int seen = 0;
            for (int j = i + 1; j < reg->n && seen < g->uses[v]; j++) {
                const IrInstr *o = &f->ins[reg->ins[j]];
                if (o->dead)
                    continue;
                int n = 0;
                for (int k = 0; k < 4; k++)
                    n += o->opnd[k] == v;
                if (o->view >= 0)
                    for (int d = 0; d < f->views[o->view].ndims; d++)
                        n += f->views[o->view].d[d].val == v;
                if (n && o->op != IR_STORE)
                    break;
                seen += n;
                if ((ir_op_flags[o->op] & F_REGION) ||
                    (o->op == IR_VSET && o->param == in->param))
                    break;
            }
            if (seen == g->uses[v])
                g->skip[v] = 1;
        }
    }
}

LLVMValueRef cpu_launch_ctx(CpuGen *g) { return LLVMGetParam(g->fn, 2); }

/* ------------------------------------------------------------ functions */

/* !align metadata on a load of a pointer: the pointer is aligned to
 * `bytes` (what LLVM's known-bits analysis reads from it). */
static void set_align_md(CpuGen *g, LLVMValueRef load, unsigned bytes)
{
    static const char kind[] = "align";
    LLVMMetadataRef n = LLVMValueAsMetadata(LLVMConstInt(g->i64, bytes, 0));
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->ctx, kind,
                                                   sizeof kind - 1),
                    LLVMMetadataAsValue(g->ctx,
                                        LLVMMDNodeInContext2(g->ctx, &n, 1)));
    static const char nu[] = "noundef";
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->ctx, nu, sizeof nu - 1),
                    LLVMMetadataAsValue(g->ctx,
                                        LLVMMDNodeInContext2(g->ctx, NULL, 0)));
}

/* Load every parameter: scalars by address, tensors as their descriptor's
 * data pointer, extents and strides. The launch's specialization facts
 * (IrParam.assume) replace loads by constants (unit inner stride) or add
 * what LLVM can use (alignment, multiples of 16); a variant with facts is
 * only ever called with arguments that have them (compiler/cache.c). */
static void gen_prologue(CpuGen *g)
{
    const IrFunc *f = g->f;
    LLVMBuilderRef b = g->b;
    LLVMValueRef args = LLVMGetParam(g->fn, 0);
    LLVMTypeRef i64a = LLVMArrayType(g->i64, IR_MAX_RANK);
    LLVMTypeRef fields[3] = {g->ptr, i64a, i64a};
    LLVMTypeRef desc = LLVMStructTypeInContext(g->ctx, fields, 3, 0);
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pa = &f->params[p];
        LLVMValueRef ap = LLVMBuildLoad2(
            b, g->ptr, cpu_gep(g, g->ptr, args, cpu_i64(g, p)), pa->name);
        LLVMTypeRef et = cpu_mtype(g, pa->dtype);
        if (pa->kind == PK_SCALAR) {
            g->tdata[p] = LLVMBuildBitCast(b, ap, LLVMPointerType(et, 0), "");
            continue;
        }
        LLVMValueRef dp = LLVMBuildBitCast(b, ap, LLVMPointerType(desc, 0), "");
        char nm[300];
        snprintf(nm, sizeof nm, "%s.data", pa->name);
        LLVMValueRef data = LLVMBuildLoad2(
            b, g->ptr, LLVMBuildStructGEP2(b, desc, dp, 0, ""), nm);
        if (pa->assume & IR_ASSUME_ALIGN16)
            set_align_md(g, data, 16);
        g->tdata[p] = LLVMBuildBitCast(b, data, LLVMPointerType(et, 0), "");
        for (int d = 0; d < pa->rank; d++) {
            for (int k = 1; k <= 2; k++) {
                bool inner = k == 2 && d == pa->rank - 1;
                if (inner && (pa->assume & IR_ASSUME_UNIT_INNER)) {
                    g->tstride[p][d] = cpu_i64(g, 1);
                    continue;
                }
                /* a symbolic extent (or outer stride) known to be a
                 * multiple of 16: clearing its low bits changes nothing at
                 * run time and tells LLVM (known bits) */
                bool x16 = k == 1 ? pa->dims[d] < 0 &&
                                        (pa->assume & IR_ASSUME_DIM16(d))
                                  : !inner &&
                                        (pa->assume & IR_ASSUME_STRIDE16(d));
                LLVMValueRef idx[3] = {cpu_i32c(g, 0), cpu_i32c(g, k),
                                       cpu_i32c(g, d)};
                LLVMValueRef q = LLVMBuildInBoundsGEP2(b, desc, dp, idx, 3, "");
                snprintf(nm, sizeof nm, "%s.%s%d", pa->name,
                         k == 1 ? "shape" : "stride", d);
                LLVMValueRef v = LLVMBuildLoad2(b, g->i64, q, nm);
                if (x16) {
                    snprintf(nm + strlen(nm), sizeof nm - strlen(nm), ".x16");
                    v = LLVMBuildAnd(b, v, cpu_i64(g, -16), nm);
                }
                if (k == 1)
                    g->tshape[p][d] = v;
                else
                    g->tstride[p][d] = v;
            }
        }
    }
    for (int v = 0; v < f->nvars; v++) {
        const IrType *t = &f->vars[v].type;
        g->var[v] = t->rank ? cpu_tile_buf(g, t)
                            : cpu_alloca(g, cpu_stype(g, t->dtype), 1);
    }
}

static int gen_range_fn(CpuGen *g, LLVMTypeRef kty)
{
    LLVMBuilderRef b = g->b;
    char *name = bk_kernel_sym(g->f->name, "__range");
    if (!name)
        return cpu_fail(g, "out of memory");
    LLVMTypeRef pt[4] = {LLVMPointerType(g->ptr, 0), g->i64, g->i64,
                         LLVMPointerType(g->i32, 0)};
    LLVMValueRef kfn = g->fn;
    g->fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->vd, pt, 4, 0));
    free(name);
    g->entry = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "start");
    LLVMPositionBuilderAtEnd(b, start);
    LLVMValueRef nprog = LLVMGetParam(g->fn, 3);
    LLVMValueRef pid = cpu_alloca(g, g->i32, 3);
    LLVMValueRef n0 = LLVMBuildSExt(b, LLVMBuildLoad2(b, g->i32, nprog, ""), g->i64, "");
    LLVMValueRef n1 = LLVMBuildSExt(b, LLVMBuildLoad2(b, g->i32,
        cpu_gep(g, g->i32, nprog, cpu_i64(g, 1)), ""), g->i64, "");
    CpuLoop l;
    cpu_loop_open(g, &l, LLVMGetParam(g->fn, 1), LLVMGetParam(g->fn, 2));
    /* the linear index: axis 0 fastest, or axis 1 (ir_grid_fast_axis;
     * runtime/mega.c maps tile-task ranges the same way) */
    int fast = cpu_switch(CPU_SW_NOGRIDORDER) ? 0 : ir_grid_fast_axis(g->f);
    LLVMValueRef na = fast ? n1 : n0, nb = fast ? n0 : n1;
    LLVMValueRef pa = LLVMBuildSRem(b, l.iv, na, "");
    LLVMValueRef t = LLVMBuildSDiv(b, l.iv, na, "");
    LLVMValueRef pb = LLVMBuildSRem(b, t, nb, "");
    LLVMValueRef p2 = LLVMBuildSDiv(b, t, nb, "");
    LLVMValueRef ps[3] = {fast ? pb : pa, fast ? pa : pb, p2};
    for (int i = 0; i < 3; i++)
        LLVMBuildStore(b, LLVMBuildTrunc(b, ps[i], g->i32, ""),
                       cpu_gep(g, g->i32, pid, cpu_i64(g, i)));
    LLVMValueRef cargs[3] = {LLVMGetParam(g->fn, 0), pid, nprog};
    LLVMBuildCall2(b, kty, kfn, cargs, 3, "");
    cpu_loop_close(g, &l);
    LLVMBuildRetVoid(b);
    LLVMPositionBuilderAtEnd(b, g->entry);
    LLVMBuildBr(b, start);
    return 0;
}

/* Target attributes of a kernel function. With AVX-512 the loop vectorizer
 * otherwise prefers 256-bit vectors (LLVM's default for Skylake-X and later,
 * to avoid the frequency drop of 512-bit code); the kernels here are
 * compute-dense loops, where 512-bit vectors halve the instruction count
 * (softmax 0.35-0.37x -> 0.40-0.46x of memcpy; GEMM unchanged: its DOT
 * micro-kernel uses explicit vectors). BLKC_CPU_VEC256=1: off. */
static void set_fn_attrs(CpuGen *g)
{
    if (g->vecw_bytes >= 64 && !cpu_switch(CPU_SW_VEC256)) {
        static const char k[] = "prefer-vector-width", v[] = "512";
        LLVMAddAttributeAtIndex(g->fn, LLVMAttributeFunctionIndex,
            LLVMCreateStringAttribute(g->ctx, k, sizeof k - 1, v, sizeof v - 1));
    }
}

static int gen_func(CpuGen *g)
{
    const IrFunc *f = g->f;
    int n = f->nins > 0 ? f->nins : 1, np = f->nparams > 0 ? f->nparams : 1;
    g->val = calloc((size_t)n, sizeof *g->val);
    g->uses = calloc((size_t)n, sizeof *g->uses);
    g->skip = calloc((size_t)n, 1);
    g->inl = calloc((size_t)n, 1);
    g->inpl = calloc((size_t)n, 1);
    g->inplw = calloc((size_t)n, sizeof *g->inplw);
    g->vld = calloc((size_t)n, sizeof *g->vld);
    g->vkn = calloc((size_t)n, sizeof *g->vkn);
    g->fred = calloc((size_t)n, sizeof *g->fred);
    g->mtrue = calloc((size_t)n, 1);
    g->tdot = calloc((size_t)n, 1);
    g->pfn = calloc((size_t)n, sizeof *g->pfn);
    g->var = calloc((size_t)(f->nvars + 1), sizeof *g->var);
    g->tdata = calloc((size_t)np, sizeof *g->tdata);
    g->tshape = calloc((size_t)np, sizeof *g->tshape);
    g->tstride = calloc((size_t)np, sizeof *g->tstride);
    int rc = -1;
    if (!g->val || !g->uses || !g->skip || !g->inl || !g->inpl || !g->inplw || !g->vld || !g->vkn ||
        !g->fred || !g->pfn || !g->mtrue || !g->tdot ||
        !g->var ||
        !g->tdata || !g->tshape || !g->tstride) {
        cpu_fail(g, "out of memory");
        goto done;
    }
    if (f->nregions < 1) {
        cpu_fail(g, "function has no body");
        goto done;
    }
    count_uses(g);
    find_inplace_dots(g);
    cpu_fuse_analyze(g);
    find_store_vgets(g);
    LLVMTypeRef pt[3] = {LLVMPointerType(g->ptr, 0), LLVMPointerType(g->i32, 0),
                         LLVMPointerType(g->i32, 0)};
    LLVMTypeRef kty = LLVMFunctionType(g->vd, pt, 3, 0);
    char *sym = bk_kernel_sym(f->name, ""); /* not libm's tanf, say (backend.h) */
    if (!sym) {
        cpu_fail(g, "out of memory");
        goto done;
    }
    g->fn = LLVMAddFunction(g->mod, sym, kty);
    free(sym);
    set_fn_attrs(g);
    g->entry = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "entry");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "start");
    g->exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "exit");
    LLVMPositionBuilderAtEnd(g->b, g->entry);
    gen_prologue(g);
    LLVMPositionBuilderAtEnd(g->b, body);
    if (gen_region(g, 0))
        goto done;
    LLVMBuildBr(g->b, g->exit);
    LLVMPositionBuilderAtEnd(g->b, g->exit);
    LLVMBuildRetVoid(g->b);
    LLVMPositionBuilderAtEnd(g->b, g->entry);
    LLVMBuildBr(g->b, body);
    if (gen_range_fn(g, kty))
        goto done;
    rc = 0;
done:
    free(g->val);
    free(g->uses);
    free(g->skip);
    free(g->inl);
    free(g->inpl);
    free(g->inplw);
    free(g->vld);
    free(g->vkn);
    free(g->fred);
    free(g->mtrue);
    free(g->tdot);
    free(g->pfn);
    g->inl = NULL;
    g->inpl = NULL;
    g->inplw = NULL;
    g->vld = NULL;
    g->vkn = NULL;
    g->fred = NULL;
    g->mtrue = NULL;
    g->tdot = NULL;
    g->pfn = NULL;
    free(g->var);
    free(g->tdata);
    free(g->tshape);
    free(g->tstride);
    return rc;
}

int cpu_lower_module(const IrModule *m, LLVMContextRef ctx, const CpuIsa *isa,
                     LLVMModuleRef *out, char *err, size_t errlen)
{
    CpuGen g;
    memset(&g, 0, sizeof g);
    g.ctx = ctx;
    g.mod = LLVMModuleCreateWithNameInContext("blkc", ctx);
    g.b = LLVMCreateBuilderInContext(ctx);
    g.vecw_bytes = isa->vecw;
    g.scalef = isa->scalef;
    g.mvpf = isa->mvpf;
    g.err = err;
    g.errlen = errlen;
    g.i1 = LLVMInt1TypeInContext(ctx);
    g.i8 = LLVMInt8TypeInContext(ctx);
    g.i16 = LLVMInt16TypeInContext(ctx);
    g.i32 = LLVMInt32TypeInContext(ctx);
    g.i64 = LLVMInt64TypeInContext(ctx);
    g.f16 = LLVMHalfTypeInContext(ctx);
    g.f32 = LLVMFloatTypeInContext(ctx);
    g.f64 = LLVMDoubleTypeInContext(ctx);
    g.vd = LLVMVoidTypeInContext(ctx);
    g.ptr = LLVMPointerType(g.i8, 0);
    int rc = 0;
    for (int i = 0; i < m->nfuncs && rc == 0; i++) {
        if (m->funcs[i]->is_device)
            continue; /* device functions are run by the plan interpreter */
        g.f = m->funcs[i];
        rc = gen_func(&g);
    }
    if (rc == 0)
        cpu_vm_keep(&g);
    LLVMDisposeBuilder(g.b);
    if (rc) {
        LLVMDisposeModule(g.mod);
        return -1;
    }
    *out = g.mod;
    return 0;
}
