/* vmath.c — inline, branch-free, call-free LLVM IR for exp, exp2, log,
 * log2, sigmoid and tanh on f32 / f64 scalars. LLVM 15 on this platform has
 * no vector math library, so a call to expf (or llvm.exp, which becomes
 * one) in an elementwise loop stops the loop vectorizer; these sequences
 * use only fmul/fadd/fmuladd/fdiv, integer ops on the exponent
 * bits and selects, which the vectorizer widens to AVX2 / AVX-512 code.
 *
 * Algorithms (Cody-Waite range reduction + Cephes / FreeBSD polynomials):
 *   exp(x)  = 2^n * e^r, n = rint(x*log2(e)), r = x - n*ln2_hi - n*ln2_lo,
 *             e^r = 1 + r + r^2*P(r) (f32: P of degree 4, a relative-error
 *             minimax for |r| <= ln2/2 with 1 + r fixed, evaluated as
 *             (P(r)*r + 1)*r + 1 with fused multiply-adds; f64: Taylor
 *             to r^13); 2^n applied as two exact power-of-two factors built
 *             from exponent bits so that subnormal results round once (on
 *             AVX-512 hosts one vscalefps / vscalefpd: the same bits).
 *             x is clamped first (-inf -> 0, +inf -> +inf; NaN passes);
 *             n is rounded with the 1.5*2^p shifter, so no fptosi / rint
 *             (a NaN flows through as NaN, never as poison).
 *   exp2(x) = same with n = rint(x), r = (x - n)*ln2 (f64: Taylor in r with
 *             coefficients ln2^k/k!, no product rounding).
 *   log(x)  (f32) FreeBSD/musl __logf: x = 2^k*m, m in [sqrt(1/2), sqrt(2)),
 *             s = f/(2+f), polynomial in s^2; subnormals pre-scaled by 2^25.
 *   sigmoid = 1/(1+exp(-x)) for x >= 0, exp(x)/(1+exp(x)) for x < 0.
 *   tanh    |x| < 0.625: x + x^3*P(x^2) (f32 Cephes tanhf; f64 Cephes
 *             rational P/Q), else sign(x)*(1 - 2/(exp(2|x|)+1)).
 * Accuracy (tests/cpu/test_vmath.c, vs libm over dense sweeps): see the
 * test for the bounds it enforces (f32 exp/exp2 <= 1 ulp, f64 <= 4 ulp,
 * log/log2/sigmoid/tanh <= 4 ulp). */
#include "cpu.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static LLVMValueRef K(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

static LLVMValueRef fmuladd(CpuGen *g, LLVMValueRef a, LLVMValueRef b,
                            LLVMValueRef c)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef ops[3] = {a, b, c};
    return cpu_intrin(g, "llvm.fmuladd", &t, 1, ops, 3);
}

/* Horner: c[0] + x*(c[1] + x*(... c[n-1])) */
static LLVMValueRef horner(CpuGen *g, LLVMValueRef x, const double *c, int n)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef s = K(t, c[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        s = fmuladd(g, s, x, K(t, c[i]));
    return s;
}

static LLVMValueRef fsel(CpuGen *g, LLVMRealPredicate p, LLVMValueRef a,
                         LLVMValueRef b, LLVMValueRef t, LLVMValueRef f)
{
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, p, a, b, ""), t, f, "");
}

/* 2^n as a float of type t for integer n (an SSA int of the bits width)
 * within the normal exponent range. */
static LLVMValueRef pow2i(CpuGen *g, LLVMValueRef n, LLVMTypeRef t)
{
    bool dbl = t == g->f64;
    LLVMTypeRef it = dbl ? g->i64 : g->i32;
    LLVMValueRef e = LLVMBuildAdd(g->b, n, LLVMConstInt(it, dbl ? 1023 : 127, 0), "");
    e = LLVMBuildShl(g->b, e, LLVMConstInt(it, dbl ? 52 : 23, 0), "");
    return LLVMBuildBitCast(g->b, e, t, "");
}

/* Round v to an integer with the shifter trick (no rint, no fptosi, so a
 * NaN never reaches a poison-producing conversion): t = v + 1.5*2^p
 * (p = 23 / 52) rounds v to nearest-even into the low mantissa bits; returns
 * the integer (bits(t) - bits(1.5*2^p)) and *nf = t - 1.5*2^p. When a
 * multiply feeds v, pass it as a*b so it fuses into one fmuladd. Valid for
 * |v| < 2^(p-1); a NaN gives a NaN *nf and an arbitrary integer. */
static LLVMValueRef round_shift(CpuGen *g, LLVMValueRef a, LLVMValueRef bm,
                                LLVMValueRef *nf)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    bool dbl = t == g->f64;
    LLVMTypeRef it = dbl ? g->i64 : g->i32;
    double sh = dbl ? 6755399441055744.0 : 12582912.0; /* 1.5*2^52, 1.5*2^23 */
    LLVMValueRef tv = bm ? fmuladd(g, a, bm, K(t, sh))
                         : LLVMBuildFAdd(g->b, a, K(t, sh), "");
    *nf = LLVMBuildFSub(g->b, tv, K(t, sh), "");
    return LLVMBuildSub(g->b, LLVMBuildBitCast(g->b, tv, it, ""),
                        LLVMConstInt(it, dbl ? 0x4338000000000000ull : 0x4b400000u, 0), "");
}

/* ------------------------------------------------- AVX-512 vscalefps
 * y * 2^n is one instruction on AVX-512 (vscalefps / vscalefpd: rounded
 * once, overflow to inf, subnormal results exact as IEEE says), but the
 * elementwise code here is scalar IR that the loop vectorizer widens, and
 * it does not widen a target intrinsic. So the scalar form is a call of a
 * small function (blkc_scalef_f32 / _f64) whose call sites name vector
 * variants of it (the "vector-function-abi-variant" attribute, VF 4 / 8 /
 * 16 for f32, 2 / 4 / 8 for f64): the vectorizer calls the variant of the
 * width it picks. All are noinline until the O3 pipeline has run, then
 * cpu_vm_finish makes them alwaysinline and jit.c inlines them. The vector
 * variants are kept alive until then by llvm.compiler.used (cpu_vm_keep).
 * Results are bit for bit those of the two-factor scale below. */
typedef struct Scalef {
    int lanes;                  /* 1: the scalar function */
    const char *intrin;
    int mask_bits;              /* the intrinsic's mask operand */
    bool rounding;              /* it takes a rounding operand (4: current) */
} Scalef;

static const Scalef scalef_f32[] = {
    {1, "llvm.x86.avx512.mask.scalef.ss", 8, true},
    {4, "llvm.x86.avx512.mask.scalef.ps.128", 8, false},
    {8, "llvm.x86.avx512.mask.scalef.ps.256", 8, false},
    {16, "llvm.x86.avx512.mask.scalef.ps.512", 16, true},
};
static const Scalef scalef_f64[] = {
    {1, "llvm.x86.avx512.mask.scalef.sd", 8, true},
    {2, "llvm.x86.avx512.mask.scalef.pd.128", 8, false},
    {4, "llvm.x86.avx512.mask.scalef.pd.256", 8, false},
    {8, "llvm.x86.avx512.mask.scalef.pd.512", 8, true},
};

static void add_fn_attr(CpuGen *g, LLVMValueRef fn, const char *name)
{
    unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(g->ctx, k, 0));
}

/* The function NAME (lanes of et, or et itself when lanes == 1) computing
 * scalef with sf's intrinsic. */
static LLVMValueRef scalef_define(CpuGen *g, const char *name, LLVMTypeRef et,
                                  const Scalef *sf)
{
    LLVMTypeRef vt = sf->lanes > 1 ? LLVMVectorType(et, (unsigned)sf->lanes)
                                   : LLVMVectorType(et, et == g->f32 ? 4 : 2);
    LLVMTypeRef at = sf->lanes > 1 ? vt : et;
    LLVMTypeRef ps[2] = {at, at};
    LLVMTypeRef ft = LLVMFunctionType(at, ps, 2, 0);
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, ft);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_fn_attr(g, fn, "noinline");
    add_fn_attr(g, fn, "nounwind");
    add_fn_attr(g, fn, "readnone");
    add_fn_attr(g, fn, "willreturn");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMValueRef y = LLVMGetParam(fn, 0), n = LLVMGetParam(fn, 1);
    if (sf->lanes == 1) {
        LLVMValueRef z = LLVMConstInt(g->i32, 0, 0);
        y = LLVMBuildInsertElement(b, LLVMGetUndef(vt), y, z, "");
        n = LLVMBuildInsertElement(b, LLVMGetUndef(vt), n, z, "");
    }
    LLVMTypeRef mt = LLVMIntTypeInContext(g->ctx, (unsigned)sf->mask_bits);
    LLVMTypeRef its[5] = {vt, vt, vt, mt, g->i32};
    LLVMValueRef args[5] = {y, n, LLVMGetUndef(vt), LLVMConstAllOnes(mt),
                            LLVMConstInt(g->i32, 4, 0)};
    int na = sf->rounding ? 5 : 4;
    LLVMValueRef in = LLVMGetNamedFunction(g->mod, sf->intrin);
    LLVMTypeRef it = LLVMFunctionType(vt, its, (unsigned)na, 0);
    if (!in)
        in = LLVMAddFunction(g->mod, sf->intrin, it);
    LLVMValueRef r = LLVMBuildCall2(b, it, in, args, (unsigned)na, "");
    if (sf->lanes == 1)
        r = LLVMBuildExtractElement(b, r, LLVMConstInt(g->i32, 0, 0), "");
    LLVMBuildRet(b, r);
    LLVMDisposeBuilder(b);
    return fn;
}

/* y * 2^nf (nf integral) through blkc_scalef_f32 / _f64, defining it and
 * its vector variants on first use in this module. */
static LLVMValueRef scalef_call(CpuGen *g, LLVMValueRef y, LLVMValueRef nf)
{
    LLVMTypeRef t = LLVMTypeOf(y);
    bool dbl = t == g->f64;
    const Scalef *sf = dbl ? scalef_f64 : scalef_f32;
    const char *base = dbl ? "blkc_scalef_f64" : "blkc_scalef_f32";
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, base);
    if (!fn) {
        fn = scalef_define(g, base, t, &sf[0]);
        for (int i = 1; i < 4; i++) {
            char vn[64];
            snprintf(vn, sizeof vn, "%s_v%d", base, sf[i].lanes);
            scalef_define(g, vn, t, &sf[i]);
        }
    }
    LLVMTypeRef ps[2] = {t, t};
    LLVMValueRef args[2] = {y, nf};
    LLVMValueRef c = LLVMBuildCall2(g->b, LLVMFunctionType(t, ps, 2, 0), fn, args, 2, "");
    char v[512];
    int o = 0;
    for (int i = 1; i < 4; i++)
        o += snprintf(v + o, sizeof v - (size_t)o, "%s_ZGV_LLVM_N%dvv_%s(%s_v%d)",
                      i > 1 ? "," : "", sf[i].lanes, base, base, sf[i].lanes);
    static const char key[] = "vector-function-abi-variant";
    LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(g->ctx, key, sizeof key - 1, v, (unsigned)o));
    return c;
}

static bool is_scalef(LLVMValueRef fn, bool vec_only)
{
    size_t n;
    const char *name = LLVMGetValueName2(fn, &n);
    return n > 12 && strncmp(name, "blkc_scalef_", 12) == 0 &&
           (!vec_only || strstr(name, "_v"));
}

void cpu_vm_keep(CpuGen *g)
{
    LLVMValueRef keep[8];
    unsigned n = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(g->mod); fn && n < 8;
         fn = LLVMGetNextFunction(fn))
        if (is_scalef(fn, true))
            keep[n++] = fn;
    if (!n)
        return;
    LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMArrayType(g->ptr, n), "llvm.compiler.used");
    LLVMSetLinkage(gv, LLVMAppendingLinkage);
    LLVMSetSection(gv, "llvm.metadata");
    LLVMSetInitializer(gv, LLVMConstArray(g->ptr, keep, n));
}

int cpu_vm_finish(LLVMModuleRef mod)
{
    int n = 0;
    unsigned ni = LLVMGetEnumAttributeKindForName("noinline", 8);
    unsigned ai = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (!is_scalef(fn, false) || LLVMIsDeclaration(fn))
            continue;
        LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, ni);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
            LLVMCreateEnumAttribute(LLVMGetModuleContext(mod), ai, 0));
        n++;
    }
    LLVMValueRef used = LLVMGetNamedGlobal(mod, "llvm.compiler.used");
    if (n && used)
        LLVMDeleteGlobal(used);
    return n;
}

/* y * 2^n (n an integer within the clamp range, nf the same as a float):
 * two exact power-of-two factors so that overflow gives inf and subnormal
 * results are rounded once (or vscalef, above, which does the same). A
 * NaN y stays NaN whatever n is. */
static LLVMValueRef scale(CpuGen *g, LLVMValueRef y, LLVMValueRef n, LLVMValueRef nf)
{
    if (g->scalef)
        return scalef_call(g, y, nf);
    LLVMTypeRef t = LLVMTypeOf(y);
    LLVMTypeRef it = t == g->f64 ? g->i64 : g->i32;
    LLVMValueRef n1 = LLVMBuildAShr(g->b, n, LLVMConstInt(it, 1, 0), "");
    LLVMValueRef n2 = LLVMBuildSub(g->b, n, n1, "");
    y = LLVMBuildFMul(g->b, y, pow2i(g, n1, t), "");
    return LLVMBuildFMul(g->b, y, pow2i(g, n2, t), "");
}

/* Clamp x to [lo, hi]; NaN stays NaN (both compares are false). */
static LLVMValueRef clamp(CpuGen *g, LLVMValueRef x, double lo, double hi)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef c = fsel(g, LLVMRealOLT, x, K(t, lo), K(t, lo), x);
    return fsel(g, LLVMRealOGT, c, K(t, hi), K(t, hi), c);
}

static LLVMValueRef keep_nan(CpuGen *g, LLVMValueRef x, LLVMValueRef r)
{
    return fsel(g, LLVMRealUNO, x, x, x, r);
}

/* f64: e^r - 1 - r = r^2 * P(r) for |r| <= ln2/2 (Taylor) */
static LLVMValueRef expm1_tail(CpuGen *g, LLVMValueRef r)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef r2 = LLVMBuildFMul(b, r, r, "");
    double c[12];
    double f = 1.0;
    for (int k = 2; k <= 13; k++) {
        f *= k;
        c[k - 2] = 1.0 / f;
    }
    return LLVMBuildFMul(b, horner(g, r, c, 12), r2, "");
}

/* e^r for |r| <= ln2/2. f32: e^r = 1 + r + r^2 P(r) evaluated as
 * (P(r) r + 1) r + 1, two fused multiply-adds instead of r^2, a multiply
 * and two adds (softmax's inner loop is mostly this); the rounding of
 * P(r) r + 1 is scaled by r. P has degree 4: a minimax of the relative
 * error (e^r - 1 - r - r^2 P(r)) / e^r over [-ln2/2, ln2/2] (Remez
 * exchange, 3.1e-9 = 0.026 ulp of 1 before the coefficients are rounded
 * to f32), 6 fused multiply-adds in all. With the reduction below, f32
 * exp and exp2 stay within 0.89 ulp of the exact result (test_vmath's
 * sweeps; the degree-5 Cephes P of rounds 1-18, one multiply-add more,
 * the same: BLKC_CPU_EXPDEG7=1). A degree-3 P, one fewer again, reaches
 * 2.2 ulp in a C model of this sequence: not taken. f64: 1 + r +
 * (e^r - 1 - r). */
static LLVMValueRef exp_r(CpuGen *g, LLVMValueRef r)
{
    LLVMTypeRef t = LLVMTypeOf(r);
    if (t == g->f32) {
        static const double c6[] = {4.9999993451700546E-1, 1.6666520689843029E-1,
                                    4.1668387362868736E-2, 8.3687098232002384E-3,
                                    1.3814613180291448E-3};
        static const double c7[] = {5.0000001201E-1, 1.6666665459E-1,
                                    4.1665795894E-2, 8.3334519073E-3,
                                    1.3981999507E-3, 1.9875691500E-4};
        LLVMValueRef p = cpu_switch(CPU_SW_EXPDEG7) ? horner(g, r, c7, 6)
                                                    : horner(g, r, c6, 5);
        return fmuladd(g, fmuladd(g, p, r, K(t, 1.0)), r, K(t, 1.0));
    }
    return LLVMBuildFAdd(g->b, LLVMBuildFAdd(g->b, expm1_tail(g, r), r, ""),
                         K(t, 1.0), "");
}

LLVMValueRef cpu_vm_exp(CpuGen *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    bool dbl = t == g->f64;
    /* ln2 split so n*ln2_hi is exact for |n| <= 2^11 (f64) / 2^15 (f32) */
    double hi = dbl ? 6.93147180369123816490e-01 : 0.693359375;
    double lo = dbl ? 1.90821492927058770002e-10 : -2.12194440e-4;
    LLVMValueRef xc = dbl ? clamp(g, x, -746.0, 710.0) : clamp(g, x, -104.0, 89.0);
    LLVMValueRef nf;
    LLVMValueRef n = round_shift(g, xc, K(t, 1.4426950408889634), &nf);
    /* n*ln2_hi is exact, so fusing or not gives the same r */
    LLVMValueRef r = fmuladd(g, LLVMBuildFNeg(b, nf, ""), K(t, hi), xc);
    r = fmuladd(g, LLVMBuildFNeg(b, nf, ""), K(t, lo), r);
    return scale(g, exp_r(g, r), n, nf); /* NaN x -> NaN r -> NaN y */
}

LLVMValueRef cpu_vm_exp2(CpuGen *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    bool dbl = t == g->f64;
    LLVMValueRef xc = dbl ? clamp(g, x, -1076.0, 1025.0) : clamp(g, x, -151.0, 129.0);
    LLVMValueRef nf;
    LLVMValueRef n = round_shift(g, xc, NULL, &nf);
    LLVMValueRef f = LLVMBuildFSub(b, xc, nf, ""); /* exact, |f| <= 1/2 */
    LLVMValueRef y;
    if (dbl) { /* 2^f = sum (f ln2)^k / k! with exact coefficients */
        double c[14], l = 0.69314718055994530942, p = 1.0, fact = 1.0;
        for (int k = 0; k <= 13; k++) {
            if (k) {
                p *= l;
                fact *= k;
            }
            c[k] = p / fact;
        }
        /* 1 + f*(c1 + f*(...)) keeping the leading 1 separate */
        LLVMValueRef s = horner(g, f, c + 1, 13);
        y = LLVMBuildFAdd(b, LLVMBuildFMul(b, s, f, ""), K(t, 1.0), "");
    } else {
        y = exp_r(g, LLVMBuildFMul(b, f, K(t, 0.69314718055994530942), ""));
    }
    return scale(g, y, n, nf);
}

/* f32 only: ln(x), or log2(x) when want2. */
static LLVMValueRef vm_logf(CpuGen *g, LLVMValueRef x, bool want2)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = g->f32, it = g->i32;
    LLVMValueRef sub = LLVMBuildFCmp(b, LLVMRealOLT, x, K(t, 1.17549435e-38), "");
    LLVMValueRef xs = LLVMBuildSelect(b, sub, LLVMBuildFMul(b, x, K(t, 33554432.0), ""),
                                      x, "");
    LLVMValueRef k0 = LLVMBuildSelect(b, sub, LLVMConstInt(it, (unsigned long long)-25, 1),
                                      LLVMConstInt(it, 0, 0), "");
    LLVMValueRef ix = LLVMBuildBitCast(b, xs, it, "");
    ix = LLVMBuildAdd(b, ix, LLVMConstInt(it, 0x3f800000 - 0x3f3504f3, 0), "");
    LLVMValueRef k = LLVMBuildSub(b, LLVMBuildLShr(b, ix, LLVMConstInt(it, 23, 0), ""),
                                  LLVMConstInt(it, 0x7f, 0), "");
    k = LLVMBuildAdd(b, k, k0, "");
    LLVMValueRef mi = LLVMBuildAdd(b, LLVMBuildAnd(b, ix, LLVMConstInt(it, 0x007fffff, 0), ""),
                                   LLVMConstInt(it, 0x3f3504f3, 0), "");
    LLVMValueRef m = LLVMBuildBitCast(b, mi, t, "");
    LLVMValueRef f = LLVMBuildFSub(b, m, K(t, 1.0), "");
    LLVMValueRef s = LLVMBuildFDiv(b, f, LLVMBuildFAdd(b, K(t, 2.0), f, ""), "");
    LLVMValueRef z = LLVMBuildFMul(b, s, s, "");
    LLVMValueRef w = LLVMBuildFMul(b, z, z, "");
    static const double c1[] = {0.66666662693, 0.28498786688};  /* Lg1, Lg3 */
    static const double c2[] = {0.40000972152, 0.24279078841};  /* Lg2, Lg4 */
    LLVMValueRef t1 = LLVMBuildFMul(b, w, horner(g, w, c2, 2), "");
    LLVMValueRef t2 = LLVMBuildFMul(b, z, horner(g, w, c1, 2), "");
    LLVMValueRef R = LLVMBuildFAdd(b, t2, t1, "");
    LLVMValueRef hfsq = LLVMBuildFMul(b, K(t, 0.5), LLVMBuildFMul(b, f, f, ""), "");
    LLVMValueRef dk = LLVMBuildSIToFP(b, k, t, "");
    LLVMValueRef r;
    /* log(m) = f - hfsq + s*(hfsq + R) */
    LLVMValueRef sr = LLVMBuildFMul(b, s, LLVMBuildFAdd(b, hfsq, R, ""), "");
    if (!want2) {
        r = LLVMBuildFAdd(b, sr, LLVMBuildFMul(b, dk, K(t, 9.0580006145e-06), ""), "");
        r = LLVMBuildFSub(b, r, hfsq, "");
        r = LLVMBuildFAdd(b, r, f, "");
        r = LLVMBuildFAdd(b, r, LLVMBuildFMul(b, dk, K(t, 6.9313812256e-01), ""), "");
    } else {
        /* log2 = k + (f - hfsq)*ivln2 + (s*(hfsq+R))*ivln2, with f - hfsq
         * split so that the leading part is exact */
        LLVMValueRef hi = LLVMBuildFSub(b, f, hfsq, "");
        LLVMValueRef hib = LLVMBuildAnd(b, LLVMBuildBitCast(b, hi, it, ""),
                                        LLVMConstInt(it, 0xfffff000, 0), "");
        hi = LLVMBuildBitCast(b, hib, t, "");
        LLVMValueRef lo = LLVMBuildFAdd(b, LLVMBuildFSub(b,
            LLVMBuildFSub(b, f, hi, ""), hfsq, ""), sr, "");
        const double ivhi = 1.4428710938e+00, ivlo = -1.7605285393e-04;
        r = LLVMBuildFMul(b, LLVMBuildFAdd(b, lo, hi, ""), K(t, ivlo), "");
        r = LLVMBuildFAdd(b, r, LLVMBuildFMul(b, lo, K(t, ivhi), ""), "");
        r = LLVMBuildFAdd(b, r, LLVMBuildFMul(b, hi, K(t, ivhi), ""), "");
        r = LLVMBuildFAdd(b, r, dk, "");
    }
    /* specials: x < 0 -> NaN, 0 -> -inf, +inf -> +inf, NaN -> NaN */
    r = fsel(g, LLVMRealOEQ, x, K(t, INFINITY), x, r);
    r = fsel(g, LLVMRealOEQ, x, K(t, 0.0), K(t, -INFINITY), r);
    r = fsel(g, LLVMRealOLT, x, K(t, 0.0), K(t, NAN), r);
    return keep_nan(g, x, r);
}

LLVMValueRef cpu_vm_log(CpuGen *g, LLVMValueRef x)
{
    if (LLVMTypeOf(x) != g->f32)
        return cpu_intrin1(g, "llvm.log", x);
    return vm_logf(g, x, false);
}

LLVMValueRef cpu_vm_log2(CpuGen *g, LLVMValueRef x)
{
    if (LLVMTypeOf(x) != g->f32)
        return cpu_intrin1(g, "llvm.log2", x);
    return vm_logf(g, x, true);
}

LLVMValueRef cpu_vm_sigmoid(CpuGen *g, LLVMValueRef x)
{
    /* e = exp(-|x|) never overflows: x >= 0: 1/(1+e); x < 0: e/(1+e)
     * (keeps the tiny results for x < -88.7 instead of 1/inf = 0) */
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef ax = cpu_intrin1(g, "llvm.fabs", x);
    LLVMValueRef e = cpu_vm_exp(g, LLVMBuildFNeg(g->b, ax, ""));
    LLVMValueRef num = fsel(g, LLVMRealOLT, x, K(t, 0.0), e, K(t, 1.0));
    return LLVMBuildFDiv(g->b, num, LLVMBuildFAdd(g->b, K(t, 1.0), e, ""), "");
}

LLVMValueRef cpu_vm_tanh(CpuGen *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef ax = cpu_intrin1(g, "llvm.fabs", x);
    LLVMValueRef z = LLVMBuildFMul(b, x, x, "");
    LLVMValueRef small;
    if (t == g->f32) {
        static const double c[] = {-3.33332819422E-1, 1.33314422036E-1,
                                   -5.37397155531E-2, 2.06390887954E-2,
                                   -5.70498872745E-3};
        LLVMValueRef p = LLVMBuildFMul(b, horner(g, z, c, 5), z, "");
        small = fmuladd(g, p, x, x);
    } else {
        static const double P[] = {-1.61468768441708447952E3,
                                   -9.92877231001918586564E1,
                                   -9.64399179425052238628E-1};
        static const double Q[] = {4.84406305325125486048E3,
                                   2.23548839060100448583E3,
                                   1.12811678491632931402E2, 1.0};
        LLVMValueRef pq = LLVMBuildFDiv(b, horner(g, z, P, 3), horner(g, z, Q, 4), "");
        small = fmuladd(g, LLVMBuildFMul(b, z, pq, ""), x, x);
    }
    /* |x| >= 0.625: 1 - 2/(exp(2|x|)+1), exp overflow -> 1 */
    LLVMValueRef e = cpu_vm_exp(g, LLVMBuildFAdd(b, ax, ax, ""));
    LLVMValueRef big = LLVMBuildFSub(b, K(t, 1.0),
        LLVMBuildFDiv(b, K(t, 2.0), LLVMBuildFAdd(b, e, K(t, 1.0), ""), ""), "");
    /* NaN: the compare is false -> big, which is NaN already; copysign
     * gives big its sign and tanh(-0) = -0 */
    LLVMValueRef sb[2] = {fsel(g, LLVMRealOLT, ax, K(t, 0.625), small, big), x};
    LLVMTypeRef tt = t;
    return cpu_intrin(g, "llvm.copysign", &tt, 1, sb, 2);
}
