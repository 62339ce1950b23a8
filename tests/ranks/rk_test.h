/* rk_test.h — helpers shared by the rank runtime tests: a failure counter
 * safe to bump from rank threads, deterministic per-rank data for every
 * dtype, element access, and single-threaded reference reductions computed
 * in plain C (small floats encoded from double in one rounding, written
 * independently of the runtime's own conversions).
 *
 * Everything is static: include it from exactly one test file. */
#ifndef BLKC_TESTS_RK_TEST_H
#define BLKC_TESTS_RK_TEST_H

#include "runtime/ranks.h"
#include "dsl/dsl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int t_failures;   /* atomic */
static int t_checks;     /* atomic */

#define T_CHECK(cond, ...)                                                   \
    do {                                                                     \
        __atomic_add_fetch(&t_checks, 1, __ATOMIC_RELAXED);                  \
        if (!(cond)) {                                                       \
            if (__atomic_add_fetch(&t_failures, 1, __ATOMIC_RELAXED) <= 20) { \
                fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);        \
                fprintf(stderr, __VA_ARGS__);                                \
                fputc('\n', stderr);                                         \
            }                                                                \
        }                                                                    \
    } while (0)

static inline int t_done(const char *name)
{
    int f = __atomic_load_n(&t_failures, __ATOMIC_RELAXED);
    int c = __atomic_load_n(&t_checks, __ATOMIC_RELAXED);
    printf("%s: %d passed, %d failed\n", name, c - f, f);
    return f ? 1 : 0;
}

static inline double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void *t_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* ------------------------------------------------------------ small floats */
static inline void t_fmt(int dt, int *eb, int *mb, int *ieee)
{
    switch (dt) {
    case DT_F16: *eb = 5, *mb = 10, *ieee = 1; break;
    case DT_BF16: *eb = 8, *mb = 7, *ieee = 1; break;
    case DT_F8E4M3: *eb = 4, *mb = 3, *ieee = 0; break;
    default: *eb = 5, *mb = 2, *ieee = 1; break;
    }
}

/* Encode by searching the nearest representable value (ties to even). */
static inline uint32_t t_enc(double x, int dt)
{
    int eb, mb, ieee;
    t_fmt(dt, &eb, &mb, &ieee);
    int bias = (1 << (eb - 1)) - 1;
    uint32_t sign = signbit(x) ? 1u << (eb + mb) : 0;
    uint32_t emask = (1u << eb) - 1;
    if (isnan(x))
        return sign | (emask << mb) | (ieee ? 1u << (mb - 1) : (1u << mb) - 1);
    double a = fabs(x);
    /* largest finite magnitude */
    uint32_t maxbits = ieee ? ((emask - 1) << mb) | ((1u << mb) - 1)
                            : (emask << mb) | ((1u << mb) - 2);
    double maxv = ldexp((double)((maxbits & ((1u << mb) - 1)) | (1u << mb)),
                        (int)(maxbits >> mb) - bias - mb);
    double ulp_top = ldexp(1.0, (int)(maxbits >> mb) - bias - mb);
    if (a >= maxv + ulp_top / 2 && !(a == maxv + ulp_top / 2 && !(maxbits & 1)))
        return sign | (ieee ? emask << mb
                            : (emask << mb) | ((1u << mb) - 1));
    /* binary search over the monotone finite codes */
    uint32_t lo = 0, hi = maxbits;
    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) / 2;
        uint32_t e = mid >> mb, m = mid & ((1u << mb) - 1);
        double v = e ? ldexp((double)(m | (1u << mb)), (int)e - bias - mb)
                     : ldexp((double)m, 1 - bias - mb);
        if (v <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint32_t b = lo;
    if (b < maxbits) {
        uint32_t e = b >> mb, m = b & ((1u << mb) - 1);
        double v0 = e ? ldexp((double)(m | (1u << mb)), (int)e - bias - mb)
                      : ldexp((double)m, 1 - bias - mb);
        uint32_t e1 = (b + 1) >> mb, m1 = (b + 1) & ((1u << mb) - 1);
        double v1 = e1 ? ldexp((double)(m1 | (1u << mb)), (int)e1 - bias - mb)
                       : ldexp((double)m1, 1 - bias - mb);
        if (a - v0 > v1 - a || (a - v0 == v1 - a && (b & 1)))
            b++;
    }
    return sign | b;
}

static inline double t_dec(uint32_t bits, int dt)
{
    int eb, mb, ieee;
    t_fmt(dt, &eb, &mb, &ieee);
    int bias = (1 << (eb - 1)) - 1;
    uint32_t emask = (1u << eb) - 1;
    int neg = (bits >> (eb + mb)) & 1;
    uint32_t e = (bits >> mb) & emask, m = bits & ((1u << mb) - 1);
    double v;
    if (ieee && e == emask)
        v = m ? NAN : INFINITY;
    else if (!ieee && e == emask && m == (1u << mb) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - mb);
    else
        v = ldexp((double)(m | (1u << mb)), (int)e - bias - mb);
    return neg ? -v : v;
}

/* ------------------------------------------------------------ elements */
static inline size_t t_es(int dt) { return (size_t)dsl_dtype_bytes(dt); }

static inline double t_getf(const void *base, size_t i, int dt)
{
    const char *p = (const char *)base + i * t_es(dt);
    switch (dt) {
    case DT_F32: { float f; memcpy(&f, p, 4); return f; }
    case DT_F64: { double d; memcpy(&d, p, 8); return d; }
    case DT_F16: case DT_BF16: { uint16_t h; memcpy(&h, p, 2); return t_dec(h, dt); }
    default: return t_dec(*(const uint8_t *)p, dt);
    }
}

static inline void t_putf(void *base, size_t i, int dt, double v)
{
    char *p = (char *)base + i * t_es(dt);
    switch (dt) {
    case DT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case DT_F64: memcpy(p, &v, 8); break;
    case DT_F16: case DT_BF16: { uint16_t h = (uint16_t)t_enc(v, dt); memcpy(p, &h, 2); break; }
    default: *(uint8_t *)p = (uint8_t)t_enc(v, dt); break;
    }
}

/* integers: the value sign- or zero-extended to 64 bits */
static inline uint64_t t_geti(const void *base, size_t i, int dt)
{
    const char *p = (const char *)base + i * t_es(dt);
    switch (dt) {
    case DT_BOOL: case DT_U8: return *(const uint8_t *)p;
    case DT_I8: return (uint64_t)(int64_t)*(const int8_t *)p;
    case DT_I16: { int16_t v; memcpy(&v, p, 2); return (uint64_t)(int64_t)v; }
    case DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case DT_I32: { int32_t v; memcpy(&v, p, 4); return (uint64_t)(int64_t)v; }
    case DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void t_puti(void *base, size_t i, int dt, uint64_t v)
{
    char *p = (char *)base + i * t_es(dt);
    memcpy(p, &v, t_es(dt)); /* little-endian truncation */
}

/* Deterministic value of element i on rank q. */
static inline void t_gen(void *buf, size_t n, int dt, int q, int seed)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == DT_BOOL) {
            t_puti(buf, i, dt, ((size_t)q * 5 + i + (size_t)seed) % 3 == 0);
        } else if (dsl_is_float(dt)) {
            double v = (double)((int)(((size_t)q * 37 + i * 11 +
                                       (size_t)seed * 7) % 29) - 14) * 0.37 +
                       q / 7.0;
            t_putf(buf, i, dt, v);
        } else {
            uint64_t u = (uint64_t)q * 0x9E3779B97F4A7C15ull +
                         (uint64_t)i * 0xBF58476D1CE4E5B9ull +
                         (uint64_t)seed * 0x94D049BB133111EBull;
            u ^= u >> 29;
            t_puti(buf, i, dt, u);
        }
    }
}

/* ref[i] = rank 0's gen op rank 1's gen op ... (n elements starting at
 * element `first` of the generated arrays), computed element by element. */
static inline void t_ref_reduce(void *ref, size_t first, size_t n, int dt,
                                int op, int N, int seed)
{
    size_t es = t_es(dt);
    size_t len = (first + n) * es;
    char *all = t_xmalloc(len * (size_t)N);
    for (int q = 0; q < N; q++)
        t_gen(all + len * (size_t)q, first + n, dt, q, seed);
    char k = dsl_dtype_kind(dt);
    for (size_t i = 0; i < n; i++) {
        double fa = 0;
        float sa = 0;
        uint64_t ia = 0;
        for (int q = 0; q < N; q++) {
            const char *tmp = all + len * (size_t)q;
            size_t j = first + i;
            if (dt == DT_BOOL) {
                uint64_t x = t_geti(tmp, j, dt) != 0;
                ia = q == 0 ? x : op == RT_RED_MIN || op == RT_RED_PROD ? (ia & x) : (ia | x);
            } else if (k == 'f' && dt == DT_F64) {
                double x = t_getf(tmp, j, dt);
                fa = q == 0 ? x : op == RT_RED_SUM || op == RT_RED_AVG ? fa + x
                                : op == RT_RED_PROD ? fa * x
                                : op == RT_RED_MAX ? (x > fa ? x : fa)
                                                   : (x < fa ? x : fa);
            } else if (k == 'f') {
                float x = (float)t_getf(tmp, j, dt);
                sa = q == 0 ? x : op == RT_RED_SUM || op == RT_RED_AVG ? sa + x
                                : op == RT_RED_PROD ? sa * x
                                : op == RT_RED_MAX ? (x > sa ? x : sa)
                                                   : (x < sa ? x : sa);
            } else {
                uint64_t x = t_geti(tmp, j, dt);
                if (q == 0)
                    ia = x;
                else if (op == RT_RED_SUM || op == RT_RED_AVG)
                    ia += x;
                else if (op == RT_RED_PROD)
                    ia *= x;
                else if (k == 'i')
                    ia = (op == RT_RED_MAX) == ((int64_t)x > (int64_t)ia) ? x
                                                                          : ia;
                else
                    ia = (op == RT_RED_MAX) == (x > ia) ? x : ia;
            }
        }
        if (op == RT_RED_AVG && dt != DT_BOOL && k != 'f') {
            /* the sum wrapped to the dtype's width, then / N truncated */
            int bits = (int)t_es(dt) * 8;
            uint64_t w = bits == 64 ? ia : ia & ((UINT64_C(1) << bits) - 1);
            if (k == 'i') {
                int64_t sv = bits == 64 ? (int64_t)w
                           : (int64_t)(w << (64 - bits)) >> (64 - bits);
                ia = (uint64_t)(sv / N);
            } else {
                ia = w / (uint64_t)N;
            }
        }
        if (op == RT_RED_AVG && k == 'f') {
            fa /= N;
            sa /= (float)N;
        }
        if (dt == DT_BOOL || k != 'f')
            t_puti(ref, i, dt, ia);
        else if (dt == DT_F64)
            t_putf(ref, i, dt, fa);
        else
            t_putf(ref, i, dt, sa);
    }
    free(all);
}

/* Bitwise comparison; reports the first differing element. */
static inline int t_same(const void *got, const void *want, size_t n,
                         int dt, const char *what, int rank)
{
    size_t es = t_es(dt);
    for (size_t i = 0; i < n; i++) {
        if (memcmp((const char *)got + i * es, (const char *)want + i * es,
                   es)) {
            double g = dsl_is_float(dt) ? t_getf(got, i, dt)
                                        : (double)(int64_t)t_geti(got, i, dt);
            double w = dsl_is_float(dt) ? t_getf(want, i, dt)
                                        : (double)(int64_t)t_geti(want, i, dt);
            T_CHECK(0, "%s (%s) rank %d: element %zu of %zu is %g, want %g",
                    what, dsl_dtype_name(dt), rank, i, n, g, w);
            return 0;
        }
    }
    T_CHECK(1, "ok");
    return 1;
}

#endif
