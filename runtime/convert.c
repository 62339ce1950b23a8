/* convert.c — element access and dtype conversion for host-side I/O: the
 * CLI's .npy inputs/outputs, random fills and scalar arguments. Small floats
 * (f16, bf16, f8) are encoded from double in one rounding step (nearest
 * even), so f64 data never suffers double rounding. */
#include "rt.h"

#include <math.h>
#include <string.h>

/* Format of a small float: exponent bits, mantissa bits, and whether the
 * all-ones exponent means inf/NaN (IEEE) or only 0x7f/0xff is NaN (e4m3fn). */
typedef struct {
    int ebits, mbits;
    bool ieee;
} SmallFmt;

static bool small_fmt(int dtype, SmallFmt *f)
{
    switch (dtype) {
    case DT_F16: *f = (SmallFmt){5, 10, true}; return true;
    case DT_BF16: *f = (SmallFmt){8, 7, true}; return true;
    case DT_F8E4M3: *f = (SmallFmt){4, 3, false}; return true;
    case DT_F8E5M2: *f = (SmallFmt){5, 2, true}; return true;
    default: return false;
    }
}

uint32_t rt_small_float_encode(double x, int dtype)
{
    SmallFmt f;
    if (!small_fmt(dtype, &f))
        return 0;
    int bias = (1 << (f.ebits - 1)) - 1;
    uint32_t sign = signbit(x) ? 1u << (f.ebits + f.mbits) : 0;
    uint32_t expmax = (1u << f.ebits) - 1; /* all-ones exponent field */
    uint32_t nan = f.ieee ? (expmax << f.mbits) | (1u << (f.mbits - 1))
                          : (expmax << f.mbits) | ((1u << f.mbits) - 1);
    uint32_t inf = f.ieee ? expmax << f.mbits : nan;
    if (isnan(x))
        return sign | nan;
    double a = fabs(x);
    if (isinf(a))
        return sign | inf;
    if (a == 0)
        return sign;
    int k;
    frexp(a, &k);
    int e = k - 1;                 /* a in [2^e, 2^(e+1)) */
    int emin = 1 - bias;
    if (e < emin)
        e = emin;                  /* subnormal range */
    double r = rint(ldexp(a, f.mbits - e)); /* mantissa with hidden bit */
    if (r >= ldexp(1.0, f.mbits + 1)) {     /* rounded up a binade */
        e++;
        r = ldexp(r, -1);
    }
    if (r == 0)
        return sign;
    int emax = f.ieee ? (int)expmax - 1 - bias : (int)expmax - bias;
    if (e > emax)
        return sign | inf;
    uint32_t m = (uint32_t)r;
    uint32_t bits;
    if (m < (1u << f.mbits))
        bits = m;                  /* subnormal: exponent field 0 */
    else
        bits = ((uint32_t)(e + bias) << f.mbits) | (m - (1u << f.mbits));
    if (!f.ieee && (bits & nan) == nan)
        return sign | nan;         /* e4m3fn: above 448 is NaN */
    return sign | bits;
}

double rt_small_float_decode(uint32_t bits, int dtype)
{
    SmallFmt f;
    if (!small_fmt(dtype, &f))
        return 0;
    int bias = (1 << (f.ebits - 1)) - 1;
    uint32_t expmax = (1u << f.ebits) - 1;
    bool neg = (bits >> (f.ebits + f.mbits)) & 1;
    uint32_t ex = (bits >> f.mbits) & expmax;
    uint32_t m = bits & ((1u << f.mbits) - 1);
    double v;
    if (f.ieee && ex == expmax)
        v = m ? NAN : INFINITY;
    else if (!f.ieee && ex == expmax && m == (1u << f.mbits) - 1)
        v = NAN;
    else if (ex == 0)
        v = ldexp((double)m, 1 - bias - f.mbits);
    else
        v = ldexp((double)(m | (1u << f.mbits)), (int)ex - bias - f.mbits);
    return neg ? -v : v;
}

double rt_load_f64(const void *p, int dtype)
{
    switch (dtype) {
    case DT_F32: { float v; memcpy(&v, p, 4); return v; }
    case DT_F64: { double v; memcpy(&v, p, 8); return v; }
    case DT_F16: case DT_BF16: {
        uint16_t b; memcpy(&b, p, 2);
        return rt_small_float_decode(b, dtype);
    }
    case DT_F8E4M3: case DT_F8E5M2:
        return rt_small_float_decode(*(const uint8_t *)p, dtype);
    case DT_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    default: return (double)rt_load_i64(p, dtype);
    }
}

int64_t rt_load_i64(const void *p, int dtype)
{
    switch (dtype) {
    case DT_BOOL: return *(const uint8_t *)p != 0;
    case DT_I8: return *(const int8_t *)p;
    case DT_U8: return *(const uint8_t *)p;
    case DT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case DT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case DT_I64: case DT_U64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: {
        double d = rt_load_f64(p, dtype);
        if (isnan(d))
            return 0;
        if (d >= 9.2233720368547758e18)
            return INT64_MAX;
        if (d <= -9.2233720368547758e18)
            return INT64_MIN;
        return (int64_t)d;
    }
    }
}

void rt_store_i64(void *p, int dtype, int64_t v)
{
    switch (dtype) {
    case DT_BOOL: *(uint8_t *)p = v != 0; break;
    case DT_I8: case DT_U8: *(uint8_t *)p = (uint8_t)v; break;
    case DT_I16: case DT_U16: { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); break; }
    case DT_I32: case DT_U32: { uint32_t w = (uint32_t)v; memcpy(p, &w, 4); break; }
    case DT_I64: case DT_U64: memcpy(p, &v, 8); break;
    default: rt_store_f64(p, dtype, (double)v); break;
    }
}

void rt_store_f64(void *p, int dtype, double v)
{
    switch (dtype) {
    case DT_F32: { float w = (float)v; memcpy(p, &w, 4); break; }
    case DT_F64: memcpy(p, &v, 8); break;
    case DT_F16: case DT_BF16: {
        uint16_t b = (uint16_t)rt_small_float_encode(v, dtype);
        memcpy(p, &b, 2);
        break;
    }
    case DT_F8E4M3: case DT_F8E5M2:
        *(uint8_t *)p = (uint8_t)rt_small_float_encode(v, dtype);
        break;
    case DT_BOOL: *(uint8_t *)p = v != 0; break;
    case DT_U64:
        if (isnan(v) || v <= 0) { uint64_t w = 0; memcpy(p, &w, 8); }
        else if (v >= 1.8446744073709552e19) { uint64_t w = UINT64_MAX; memcpy(p, &w, 8); }
        else { uint64_t w = (uint64_t)v; memcpy(p, &w, 8); }
        break;
    default: {
        int64_t i;
        if (isnan(v))
            i = 0;
        else if (v >= 9.2233720368547758e18)
            i = INT64_MAX;
        else if (v <= -9.2233720368547758e18)
            i = INT64_MIN;
        else
            i = (int64_t)v;
        rt_store_i64(p, dtype, i);
        break;
    }
    }
}

void rt_convert(void *dst, int ddt, const void *src, int sdt, int64_t n)
{
    size_t db = (size_t)dsl_dtype_bytes(ddt), sb = (size_t)dsl_dtype_bytes(sdt);
    if (ddt == sdt) {
        memcpy(dst, src, (size_t)n * db);
        return;
    }
    char *d = dst;
    const char *s = src;
    bool via_float = dsl_is_float(sdt) || dsl_is_float(ddt);
    for (int64_t i = 0; i < n; i++, d += db, s += sb) {
        if (via_float)
            rt_store_f64(d, ddt, rt_load_f64(s, sdt));
        else
            rt_store_i64(d, ddt, rt_load_i64(s, sdt));
    }
}

int rt_dtype_from_dl(DLDataType t)
{
    if (t.lanes != 1)
        return -1;
    switch (t.code) {
    case kDLBool: return t.bits == 8 ? DT_BOOL : -1;
    case kDLInt:
        return t.bits == 8 ? DT_I8 : t.bits == 16 ? DT_I16
             : t.bits == 32 ? DT_I32 : t.bits == 64 ? DT_I64 : -1;
    case kDLUInt:
        return t.bits == 8 ? DT_U8 : t.bits == 16 ? DT_U16
             : t.bits == 32 ? DT_U32 : t.bits == 64 ? DT_U64 : -1;
    case kDLFloat:
        return t.bits == 16 ? DT_F16 : t.bits == 32 ? DT_F32
             : t.bits == 64 ? DT_F64 : -1;
    case kDLBfloat: return t.bits == 16 ? DT_BF16 : -1;
    case 10: return t.bits == 8 ? DT_F8E4M3 : -1; /* kDLFloat8_e4m3fn */
    case 12: return t.bits == 8 ? DT_F8E5M2 : -1; /* kDLFloat8_e5m2 */
    default: return -1;
    }
}

DLDataType rt_dtype_to_dl(int dtype)
{
    DLDataType t = {0, (uint8_t)(dsl_dtype_bytes(dtype) * 8), 1};
    switch (dsl_dtype_kind(dtype)) {
    case 'b': t.code = kDLBool; break;
    case 'i': t.code = kDLInt; break;
    case 'u': t.code = kDLUInt; break;
    default:
        t.code = dtype == DT_BF16 ? kDLBfloat : dtype == DT_F8E4M3 ? 10
               : dtype == DT_F8E5M2 ? 12 : kDLFloat;
        break;
    }
    return t;
}
