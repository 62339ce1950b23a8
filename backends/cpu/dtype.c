/* dtype.c — how each blkc dtype lives in LLVM IR (SSA, memory and compute
 * types), conversions between dtypes (the semantics of CVT), and the table
 * of C helpers (runtime/khelp.c) the JIT registers as absolute symbols. */
#include "cpu.h"
#include "../../runtime/khelp.h"

#include <math.h>
#include <string.h>

const CpuHelper cpu_helpers[] = {
    {"blkc_cpu_f64_to_f16", (void (*)(void))blkc_cpu_f64_to_f16},
    {"blkc_cpu_f64_to_bf16", (void (*)(void))blkc_cpu_f64_to_bf16},
    {"blkc_cpu_f64_to_e4m3", (void (*)(void))blkc_cpu_f64_to_e4m3},
    {"blkc_cpu_f64_to_e5m2", (void (*)(void))blkc_cpu_f64_to_e5m2},
    {"blkc_cpu_f32_to_e4m3", (void (*)(void))blkc_cpu_f32_to_e4m3},
    {"blkc_cpu_f32_to_e5m2", (void (*)(void))blkc_cpu_f32_to_e5m2},
    {"blkc_cpu_e4m3_to_f32", (void (*)(void))blkc_cpu_e4m3_to_f32},
    {"blkc_cpu_e5m2_to_f32", (void (*)(void))blkc_cpu_e5m2_to_f32},
    {"blkc_cpu_notify", (void (*)(void))blkc_cpu_notify},
    {"blkc_cpu_wait", (void (*)(void))blkc_cpu_wait},
    {"blkc_cpu_assert", (void (*)(void))blkc_cpu_assert},
    {"blkc_cpu_print_begin", (void (*)(void))blkc_cpu_print_begin},
    {"blkc_cpu_print_text", (void (*)(void))blkc_cpu_print_text},
    {"blkc_cpu_print_val", (void (*)(void))blkc_cpu_print_val},
    {"blkc_cpu_print_end", (void (*)(void))blkc_cpu_print_end},
    /* compiler-rt names LLVM may call for half conversions without F16C */
    {"__gnu_h2f_ieee", (void (*)(void))blkc_cpu_f16_to_f32},
    {"__extendhfsf2", (void (*)(void))blkc_cpu_f16_to_f32},
    {"__gnu_f2h_ieee", (void (*)(void))blkc_cpu_f32_to_f16},
    {"__truncsfhf2", (void (*)(void))blkc_cpu_f32_to_f16},
    {"__truncdfhf2", (void (*)(void))blkc_cpu_f64_to_f16},
    {NULL, NULL},
};

/* ------------------------------------------------------------ types */

bool cpu_is_signed(int dt) { return dsl_dtype_kind(dt) == 'i'; }

bool cpu_is_narrow(int dt)
{
    return dt == DT_F16 || dt == DT_BF16 || dt == DT_F8E4M3 || dt == DT_F8E5M2;
}

LLVMTypeRef cpu_stype(CpuGen *g, int dt)
{
    switch (dt) {
    case DT_BOOL: return g->i1;
    case DT_I8: case DT_U8: case DT_F8E4M3: case DT_F8E5M2: return g->i8;
    case DT_I16: case DT_U16: case DT_BF16: return g->i16;
    case DT_I32: case DT_U32: return g->i32;
    case DT_I64: case DT_U64: return g->i64;
    case DT_F16: return g->f16;
    case DT_F32: return g->f32;
    case DT_F64: return g->f64;
    default: return g->vd;
    }
}

LLVMTypeRef cpu_mtype(CpuGen *g, int dt)
{
    return dt == DT_BOOL ? g->i8 : cpu_stype(g, dt);
}

LLVMTypeRef cpu_ctype(CpuGen *g, int dt)
{
    return cpu_is_narrow(dt) ? g->f32 : cpu_stype(g, dt);
}

/* ------------------------------------------------------------ conversions */

LLVMValueRef cpu_widen(CpuGen *g, LLVMValueRef v, int dt)
{
    LLVMBuilderRef b = g->b;
    switch (dt) {
    case DT_F16: return LLVMBuildFPExt(b, v, g->f32, "");
    case DT_BF16: {
        LLVMValueRef w = LLVMBuildZExt(b, v, g->i32, "");
        w = LLVMBuildShl(b, w, cpu_i32c(g, 16), "");
        return LLVMBuildBitCast(b, w, g->f32, "");
    }
    case DT_F8E4M3: return cpu_call(g, "blkc_cpu_e4m3_to_f32", g->f32, &v, 1);
    case DT_F8E5M2: return cpu_call(g, "blkc_cpu_e5m2_to_f32", g->f32, &v, 1);
    default: return v;
    }
}

/* f32 -> bf16 bits, round to nearest even; NaN stays (quiet) NaN. */
static LLVMValueRef f32_to_bf16(CpuGen *g, LLVMValueRef v)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef bits = LLVMBuildBitCast(b, v, g->i32, "");
    LLVMValueRef hi = LLVMBuildLShr(b, bits, cpu_i32c(g, 16), "");
    LLVMValueRef lsb = LLVMBuildAnd(b, hi, cpu_i32c(g, 1), "");
    LLVMValueRef r = LLVMBuildAdd(b, bits, cpu_i32c(g, 0x7fff), "");
    r = LLVMBuildAdd(b, r, lsb, "");
    r = LLVMBuildLShr(b, r, cpu_i32c(g, 16), "");
    LLVMValueRef nan = LLVMBuildOr(b, hi, cpu_i32c(g, 0x40), "");
    LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
    r = LLVMBuildSelect(b, isnan, nan, r, "");
    return LLVMBuildTrunc(b, r, g->i16, "");
}

LLVMValueRef cpu_narrow(CpuGen *g, LLVMValueRef v, int dt)
{
    LLVMBuilderRef b = g->b;
    bool dbl = LLVMTypeOf(v) == g->f64;
    switch (dt) {
    case DT_F16:
        if (!dbl)
            return LLVMBuildFPTrunc(b, v, g->f16, "");
        return LLVMBuildBitCast(
            b, cpu_call(g, "blkc_cpu_f64_to_f16", g->i16, &v, 1), g->f16, "");
    case DT_BF16:
        return dbl ? cpu_call(g, "blkc_cpu_f64_to_bf16", g->i16, &v, 1)
                   : f32_to_bf16(g, v);
    case DT_F8E4M3:
        return cpu_call(g, dbl ? "blkc_cpu_f64_to_e4m3" : "blkc_cpu_f32_to_e4m3",
                        g->i8, &v, 1);
    case DT_F8E5M2:
        return cpu_call(g, dbl ? "blkc_cpu_f64_to_e5m2" : "blkc_cpu_f32_to_e5m2",
                        g->i8, &v, 1);
    case DT_F32:
        return dbl ? LLVMBuildFPTrunc(b, v, g->f32, "") : v;
    case DT_F64:
        return dbl ? v : LLVMBuildFPExt(b, v, g->f64, "");
    default: return v;
    }
}

LLVMValueRef cpu_cvt(CpuGen *g, LLVMValueRef v, int from, int to)
{
    LLVMBuilderRef b = g->b;
    char kf = dsl_dtype_kind(from), kt = dsl_dtype_kind(to);
    if (from == to)
        return v;
    if (to == DT_BOOL) {
        if (kf == 'f') {
            LLVMValueRef w = cpu_widen(g, v, from);
            return LLVMBuildFCmp(b, LLVMRealUNE, w, LLVMConstNull(LLVMTypeOf(w)), "");
        }
        return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    }
    if (from == DT_BOOL) {
        if (kt != 'f')
            return LLVMBuildZExt(b, v, cpu_stype(g, to), "");
        LLVMValueRef w = LLVMBuildUIToFP(b, v, to == DT_F64 ? g->f64 : g->f32, "");
        return cpu_narrow(g, w, to);
    }
    if (kf != 'f' && kt != 'f') {
        int wf = dsl_dtype_bytes(from), wt = dsl_dtype_bytes(to);
        LLVMTypeRef t = cpu_stype(g, to);
        if (wt < wf)
            return LLVMBuildTrunc(b, v, t, "");
        if (wt == wf)
            return v;
        return kf == 'i' ? LLVMBuildSExt(b, v, t, "") : LLVMBuildZExt(b, v, t, "");
    }
    if (kf != 'f') { /* int -> float */
        LLVMTypeRef t = (to == DT_F32) ? g->f32 : g->f64;
        LLVMValueRef w = kf == 'i' ? LLVMBuildSIToFP(b, v, t, "")
                                   : LLVMBuildUIToFP(b, v, t, "");
        return cpu_narrow(g, w, to);
    }
    LLVMValueRef w = cpu_widen(g, v, from);
    if (kt != 'f') { /* float -> int: truncate, saturate, NaN -> 0 */
        LLVMTypeRef ov[2] = {cpu_stype(g, to), LLVMTypeOf(w)};
        return cpu_intrin(g, kt == 'i' ? "llvm.fptosi.sat" : "llvm.fptoui.sat",
                          ov, 2, &w, 1);
    }
    return cpu_narrow(g, w, to);
}

LLVMValueRef cpu_mload(CpuGen *g, LLVMValueRef p, int dt)
{
    LLVMValueRef v = LLVMBuildLoad2(g->b, cpu_mtype(g, dt), p, "");
    if (dt == DT_BOOL)
        v = LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->i8, 0, 0), "");
    return v;
}

void cpu_mstore(CpuGen *g, LLVMValueRef v, LLVMValueRef p, int dt)
{
    if (dt == DT_BOOL)
        v = LLVMBuildZExt(g->b, v, g->i8, "");
    LLVMBuildStore(g->b, v, p);
}

LLVMValueRef cpu_const(CpuGen *g, int dt, int64_t ival, double fval)
{
    LLVMTypeRef t = cpu_stype(g, dt);
    switch (dt) {
    case DT_BOOL: return LLVMConstInt(t, ival != 0, 0);
    case DT_F16: return LLVMConstBitCast(
                     LLVMConstInt(g->i16, blkc_cpu_f64_to_f16(fval), 0), g->f16);
    case DT_BF16: return LLVMConstInt(t, blkc_cpu_f64_to_bf16(fval), 0);
    case DT_F8E4M3: return LLVMConstInt(t, blkc_cpu_f64_to_e4m3(fval), 0);
    case DT_F8E5M2: return LLVMConstInt(t, blkc_cpu_f64_to_e5m2(fval), 0);
    case DT_F32: return LLVMConstReal(t, (double)(float)fval);
    case DT_F64: return LLVMConstReal(t, fval);
    default: return LLVMConstInt(t, (unsigned long long)ival, 1);
    }
}

LLVMValueRef cpu_zero(CpuGen *g, int dt)
{
    return LLVMConstNull(cpu_stype(g, dt));
}

/* VW (<= 64) elements of dtype adt at p as a vector of E: loaded as they
 * are, bf16 widened by a shift, f16 / f32 by fpext (matvec.c, tile.c) */
LLVMValueRef cpu_load_wide(CpuGen *g, LLVMValueRef p, int adt, LLVMTypeRef E, int VW)
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
        LLVMValueRef sh[64];
        for (int i = 0; i < VW && i < 64; i++)
            sh[i] = LLVMConstInt(g->i32, 16, 0);
        v = LLVMBuildShl(b, v, LLVMConstVector(sh, (unsigned)VW), "");
        return LLVMBuildBitCast(b, v, et, "");
    }
    return mt == E ? v : LLVMBuildFPExt(b, v, et, "");
}
