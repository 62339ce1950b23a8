/* rank_coll.c — collectives over the ranks of a world (barrier, all_reduce,
 * all_gather, reduce_scatter, all_to_all, broadcast; reduce, gather and
 * scatter to and from a root), the element-wise reductions they use, for
 * every dtype, and rt_coll_agree: their checks and agreement alone, for
 * collectives that another library runs (NCCL on GPU ranks).
 *
 * Every collective is built on the staging of rank_agree.c: each rank publishes
 * its buffer pointers, a barrier makes them visible, every rank reads its
 * peers' buffers directly, and a closing barrier keeps the buffers alive
 * until all have finished. all_reduce is a reduce-scatter followed by an
 * all-gather: rank q reduces the q-th slice (cache-line aligned) of every
 * rank's buffer in place, then each rank copies the other slices, so every
 * rank touches about 2x its buffer instead of N x. Values are combined in
 * rank order so that results are bit-identical everywhere. */
#include "ranks.h"

#include "../dsl/dsl.h"

#include <math.h>
#include <string.h>

#define CH 512 /* elements per reduction chunk (fits L1 with its inputs) */

/* ------------------------------------------------------------ small floats */

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f16_dec(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) {
        float v = (float)m * 0x1p-24f;
        return s ? -v : v;
    }
    if (e == 31)
        return bits_f32(s | 0x7f800000u | (m << 13));
    return bits_f32(s | ((e + 112) << 23) | (m << 13));
}

/* Round to nearest even in one step. */
static uint16_t f16_enc(float x)
{
    uint32_t u = f32_bits(x);
    uint32_t s = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(s | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000u)       /* >= 65520 (and inf) rounds to inf */
        return (uint16_t)(s | 0x7c00);
    if (a < 0x38800000u) {      /* below 2^-14: subnormal or zero */
        float v = bits_f32(a) * 0x1p24f; /* exact */
        return (uint16_t)(s | (uint32_t)nearbyintf(v));
    }
    return (uint16_t)(s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1)) >> 13));
}

static float bf16_dec(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

static uint16_t bf16_enc(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/* f8: e4m3 is the "fn" variant (no inf, 0x7f/0xff NaN, max 448), e5m2 is
 * IEEE-like. Overflow gives inf (e5m2) or NaN (e4m3), as in convert.c. */
static float f8_dec(uint8_t b, int dt)
{
    int eb = dt == DT_F8E4M3 ? 4 : 5, mb = 7 - eb;
    int bias = (1 << (eb - 1)) - 1, emax = (1 << eb) - 1;
    int neg = b >> 7, e = (b >> mb) & emax, m = b & ((1 << mb) - 1);
    float v;
    if (dt == DT_F8E5M2 && e == emax)
        v = m ? NAN : INFINITY;
    else if (dt == DT_F8E4M3 && e == emax && m == (1 << mb) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexpf((float)m, 1 - bias - mb);
    else
        v = ldexpf((float)(m | (1 << mb)), e - bias - mb);
    return neg ? -v : v;
}

static uint8_t f8_enc(float x, int dt)
{
    int ieee = dt == DT_F8E5M2;
    int eb = ieee ? 5 : 4, mb = 7 - eb;
    int bias = (1 << (eb - 1)) - 1;
    uint32_t emaxf = (1u << eb) - 1;
    uint32_t sign = signbit(x) ? 0x80u : 0;
    uint32_t nan = ieee ? (emaxf << mb) | (1u << (mb - 1))
                        : (emaxf << mb) | ((1u << mb) - 1);
    uint32_t inf = ieee ? emaxf << mb : nan;
    if (isnan(x))
        return (uint8_t)(sign | nan);
    float a = fabsf(x);
    if (isinf(a))
        return (uint8_t)(sign | inf);
    if (a == 0)
        return (uint8_t)sign;
    int k;
    frexpf(a, &k);
    int e = k - 1;
    if (e < 1 - bias)
        e = 1 - bias;
    float r = nearbyintf(ldexpf(a, mb - e)); /* exact scaling, one rounding */
    if (r >= ldexpf(1.0f, mb + 1)) {
        e++;
        r = ldexpf(r, -1);
    }
    if (r == 0)
        return (uint8_t)sign;
    int emax = ieee ? (int)emaxf - 1 - bias : (int)emaxf - bias;
    if (e > emax)
        return (uint8_t)(sign | inf);
    uint32_t m = (uint32_t)r, bits;
    if (m < (1u << mb))
        bits = m;
    else
        bits = ((uint32_t)(e + bias) << mb) | (m - (1u << mb));
    if (!ieee && (bits & nan) == nan)
        return (uint8_t)(sign | nan);
    return (uint8_t)(sign | bits);
}

static void small_dec(float *dst, const void *src, size_t n, int dt)
{
    const uint16_t *h = src;
    const uint8_t *b = src;
    switch (dt) {
    case DT_F16: for (size_t i = 0; i < n; i++) dst[i] = f16_dec(h[i]); break;
    case DT_BF16: for (size_t i = 0; i < n; i++) dst[i] = bf16_dec(h[i]); break;
    default: for (size_t i = 0; i < n; i++) dst[i] = f8_dec(b[i], dt); break;
    }
}

static void small_enc(void *dst, const float *src, size_t n, int dt)
{
    uint16_t *h = dst;
    uint8_t *b = dst;
    switch (dt) {
    case DT_F16: for (size_t i = 0; i < n; i++) h[i] = f16_enc(src[i]); break;
    case DT_BF16: for (size_t i = 0; i < n; i++) h[i] = bf16_enc(src[i]); break;
    default: for (size_t i = 0; i < n; i++) b[i] = f8_enc(src[i], dt); break;
    }
}

/* ------------------------------------------------------------ reductions */

/* Integers: sums and products wrap (through the unsigned type), max/min
 * compare in T, avg is the wrapped sum divided by the rank count (C
 * division: truncated toward zero). */
#define RED_INT(NAME, T, UT)                                                  \
    static void NAME(void *out, const void *const *in, int n, size_t cnt,    \
                     int op)                                                 \
    {                                                                        \
        T acc[CH];                                                           \
        for (size_t b = 0; b < cnt; b += CH) {                               \
            size_t m = cnt - b < CH ? cnt - b : CH;                          \
            memcpy(acc, (const T *)in[0] + b, m * sizeof(T));                \
            for (int k = 1; k < n; k++) {                                    \
                const T *x = (const T *)in[k] + b;                           \
                if (op == RT_RED_SUM && m == CH)                             \
                    for (size_t i = 0; i < CH; i++) /* vectorizes at -O2 */  \
                        acc[i] = (T)((UT)acc[i] + (UT)x[i]);                 \
                else if (op == RT_RED_SUM)                                   \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] = (T)((UT)acc[i] + (UT)x[i]);                 \
                else if (op == RT_RED_AVG)                                   \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] = (T)((UT)acc[i] + (UT)x[i]);                 \
                else if (op == RT_RED_PROD)                                  \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] = (T)((UT)acc[i] * (UT)x[i]);                 \
                else if (op == RT_RED_MAX)                                   \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] = x[i] > acc[i] ? x[i] : acc[i];              \
                else                                                         \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] = x[i] < acc[i] ? x[i] : acc[i];              \
            }                                                                \
            if (op == RT_RED_AVG) /* the wrapped sum / n, truncated */      \
                for (size_t i = 0; i < m; i++)                               \
                    acc[i] = (T)(acc[i] / (T)n);                             \
            memcpy((T *)out + b, acc, m * sizeof(T));                        \
        }                                                                    \
    }

RED_INT(red_i8, int8_t, uint8_t)
RED_INT(red_i16, int16_t, uint16_t)
RED_INT(red_i32, int32_t, uint32_t)
RED_INT(red_i64, int64_t, uint64_t)
RED_INT(red_u8, uint8_t, uint8_t)
RED_INT(red_u16, uint16_t, uint16_t)
RED_INT(red_u32, uint32_t, uint32_t)
RED_INT(red_u64, uint64_t, uint64_t)

/* Floats in their own precision; max/min propagate NaN; avg divides the
 * rank-order sum by the rank count once. */
#define RED_FLT(NAME, T)                                                      \
    static void NAME(void *out, const void *const *in, int n, size_t cnt,    \
                     int op)                                                 \
    {                                                                        \
        T acc[CH];                                                           \
        for (size_t b = 0; b < cnt; b += CH) {                               \
            size_t m = cnt - b < CH ? cnt - b : CH;                          \
            memcpy(acc, (const T *)in[0] + b, m * sizeof(T));                \
            for (int k = 1; k < n; k++) {                                    \
                const T *x = (const T *)in[k] + b;                           \
                if (op == RT_RED_SUM && m == CH)                             \
                    for (size_t i = 0; i < CH; i++) /* vectorizes at -O2 */  \
                        acc[i] += x[i];                                      \
                else if (op == RT_RED_SUM)                                   \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] += x[i];                                      \
                else if (op == RT_RED_AVG)                                   \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] += x[i];                                      \
                else if (op == RT_RED_PROD)                                  \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] *= x[i];                                      \
                else if (op == RT_RED_MAX)                                   \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] = (x[i] > acc[i] || x[i] != x[i]) ? x[i]      \
                                                                 : acc[i];   \
                else                                                         \
                    for (size_t i = 0; i < m; i++)                           \
                        acc[i] = (x[i] < acc[i] || x[i] != x[i]) ? x[i]      \
                                                                 : acc[i];   \
            }                                                                \
            if (op == RT_RED_AVG) /* the sum in rank order, / n */          \
                for (size_t i = 0; i < m; i++)                               \
                    acc[i] /= (T)n;                                          \
            memcpy((T *)out + b, acc, m * sizeof(T));                        \
        }                                                                    \
    }

RED_FLT(red_f32, float)
RED_FLT(red_f64, double)

/* f16, bf16, f8: accumulate in f32, round once at the end. */
static void red_small(void *out, const void *const *in, int n, size_t cnt,
                      int op, int dt)
{
    float acc[CH], x[CH];
    size_t es = (size_t)dsl_dtype_bytes(dt);
    for (size_t b = 0; b < cnt; b += CH) {
        size_t m = cnt - b < CH ? cnt - b : CH;
        small_dec(acc, (const char *)in[0] + b * es, m, dt);
        for (int k = 1; k < n; k++) {
            small_dec(x, (const char *)in[k] + b * es, m, dt);
            if (op == RT_RED_SUM || op == RT_RED_AVG)
                for (size_t i = 0; i < m; i++)
                    acc[i] += x[i];
            else if (op == RT_RED_PROD)
                for (size_t i = 0; i < m; i++)
                    acc[i] *= x[i];
            else if (op == RT_RED_MAX)
                for (size_t i = 0; i < m; i++)
                    acc[i] = (x[i] > acc[i] || x[i] != x[i]) ? x[i] : acc[i];
            else
                for (size_t i = 0; i < m; i++)
                    acc[i] = (x[i] < acc[i] || x[i] != x[i]) ? x[i] : acc[i];
        }
        if (op == RT_RED_AVG)
            for (size_t i = 0; i < m; i++)
                acc[i] /= (float)n;
        small_enc((char *)out + b * es, acc, m, dt);
    }
}

/* bool: sum and max are or, min and prod are and (avg is refused). */
static void red_bool(void *out, const void *const *in, int n, size_t cnt,
                     int op)
{
    uint8_t acc[CH];
    for (size_t b = 0; b < cnt; b += CH) {
        size_t m = cnt - b < CH ? cnt - b : CH;
        const uint8_t *x0 = (const uint8_t *)in[0] + b;
        for (size_t i = 0; i < m; i++)
            acc[i] = x0[i] != 0;
        for (int k = 1; k < n; k++) {
            const uint8_t *x = (const uint8_t *)in[k] + b;
            if (op == RT_RED_MIN || op == RT_RED_PROD)
                for (size_t i = 0; i < m; i++)
                    acc[i] &= x[i] != 0;
            else
                for (size_t i = 0; i < m; i++)
                    acc[i] |= x[i] != 0;
        }
        memcpy((uint8_t *)out + b, acc, m);
    }
}

void rt_rank_reduce(void *out, const void *const *in, int n, size_t count,
                    int dtype, int op)
{
    if (n == 1 && out == in[0] && dtype != DT_BOOL)
        return;
    switch (dtype) {
    case DT_BOOL: red_bool(out, in, n, count, op); break;
    case DT_I8: red_i8(out, in, n, count, op); break;
    case DT_I16: red_i16(out, in, n, count, op); break;
    case DT_I32: red_i32(out, in, n, count, op); break;
    case DT_I64: red_i64(out, in, n, count, op); break;
    case DT_U8: red_u8(out, in, n, count, op); break;
    case DT_U16: red_u16(out, in, n, count, op); break;
    case DT_U32: red_u32(out, in, n, count, op); break;
    case DT_U64: red_u64(out, in, n, count, op); break;
    case DT_F32: red_f32(out, in, n, count, op); break;
    case DT_F64: red_f64(out, in, n, count, op); break;
    case DT_F16: case DT_BF16: case DT_F8E4M3: case DT_F8E5M2:
        red_small(out, in, n, count, op, dtype);
        break;
    default: break;
    }
}

const char *rt_rank_op_name(int op)
{
    switch (op) {
    case RT_RED_SUM: return "sum";
    case RT_RED_MAX: return "max";
    case RT_RED_MIN: return "min";
    case RT_RED_PROD: return "prod";
    case RT_RED_AVG: return "avg";
    default: return "?";
    }
}

/* ------------------------------------------------------------ checks */

static int check_dtype(RtRank *r, const char *what, int dtype, size_t count,
                       size_t mult, size_t *bytes)
{
    if (dtype <= DT_VOID || dtype >= DT_COUNT)
        return rt_rank_fail(r, "%s: invalid dtype %d", what, dtype);
    size_t es = (size_t)dsl_dtype_bytes(dtype);
    if (mult && count > SIZE_MAX / es / mult)
        return rt_rank_fail(r, "%s: %zu x %zu elements of %s overflow", what,
                            count, mult, dsl_dtype_name(dtype));
    if (bytes)
        *bytes = count * es;
    return 0;
}

static int check_op(RtRank *r, const char *what, int op, int dtype)
{
    if (op < RT_RED_SUM || op > RT_RED_AVG)
        return rt_rank_fail(r, "%s: invalid reduction op %d", what, op);
    if (op == RT_RED_AVG && dtype == DT_BOOL)
        return rt_rank_fail(r, "%s: op avg is not defined for bool", what);
    return 0;
}

/* Slice q of count elements split N ways on boundaries of whole cache
 * lines (64 bytes), so that ranks write disjoint lines. */
static void slice(size_t count, size_t es, int N, int q, size_t *lo,
                  size_t *hi)
{
    size_t unit = es >= 64 ? 1 : 64 / es;
    size_t units = (count + unit - 1) / unit;
    size_t a = units / (size_t)N * (size_t)q +
               units % (size_t)N * (size_t)q / (size_t)N;
    size_t b = units / (size_t)N * (size_t)(q + 1) +
               units % (size_t)N * (size_t)(q + 1) / (size_t)N;
    *lo = a * unit < count ? a * unit : count;
    *hi = b * unit < count ? b * unit : count;
}

/* ------------------------------------------------------------ collectives */

int rt_barrier(RtRank *r)
{
    RtRankColl d = {.kind = RT_COLL_BARRIER, .dtype = -1, .op = -1,
                    .root = -1};
    return rt_rank_coll_begin(r, &d);
}

int rt_all_reduce(RtRank *r, void *buf, size_t count, int dtype, int op)
{
    size_t bytes;
    if (check_dtype(r, "all_reduce", dtype, count, 1, &bytes) ||
        check_op(r, "all_reduce", op, dtype))
        return -1;
    RtRankColl d = {.kind = RT_COLL_ALL_REDUCE, .dtype = dtype, .op = op,
                    .root = -1, .count = count, .dst = buf};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t es = (size_t)dsl_dtype_bytes(dtype);
    if (count == 0 || N == 1) {
        if (N == 1 && count)
            rt_rank_reduce(buf, (const void *const *)&buf, 1, count, dtype,
                           op);
        return rt_rank_coll_end(r);
    }
    const void *in[RT_RANK_MAX];
    for (int q = 0; q < N; q++) {
        in[q] = rt_rank_coll_peer(r, q)->dst;
        if (q != me && in[q] == buf) {
            rt_rank_fail(r, "all_reduce: ranks %d and %d passed the same "
                         "buffer", q < me ? q : me, q < me ? me : q);
            rt_rank_coll_end(r);
            return -1;
        }
    }
    size_t lo, hi;
    slice(count, es, N, me, &lo, &hi);
    if (hi > lo) {
        const void *part[RT_RANK_MAX];
        for (int q = 0; q < N; q++)
            part[q] = (const char *)in[q] + lo * es;
        rt_rank_reduce((char *)buf + lo * es, part, N, hi - lo, dtype, op);
    }
    if (rt_rank_coll_sync(r))
        return -1;
    for (int i = 1; i < N; i++) {
        int q = (me + i) % N; /* start at different peers: spread the load */
        slice(count, es, N, q, &lo, &hi);
        if (hi > lo)
            memcpy((char *)buf + lo * es, (const char *)in[q] + lo * es,
                   (hi - lo) * es);
    }
    return rt_rank_coll_end(r);
}

int rt_all_gather(RtRank *r, void *dst, const void *src,
                  size_t count_per_rank, int dtype)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t bytes;
    if (check_dtype(r, "all_gather", dtype, count_per_rank, (size_t)N,
                    &bytes))
        return -1;
    RtRankColl d = {.kind = RT_COLL_ALL_GATHER, .dtype = dtype, .op = -1,
                    .root = -1, .count = count_per_rank, .src = src,
                    .dst = dst};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    for (int i = 0; i < N; i++) {
        int q = (me + i) % N;
        const void *s = rt_rank_coll_peer(r, q)->src;
        char *t = (char *)dst + (size_t)q * bytes;
        if (bytes && t != s)
            memcpy(t, s, bytes);
    }
    return rt_rank_coll_end(r);
}

/* Rank q's block of a reduce_scatter: from counts or the even split. */
static void rs_block(const size_t *counts, size_t total, int N, int q,
                     size_t *off, size_t *n)
{
    if (!counts) {
        size_t base = total / (size_t)N, extra = total % (size_t)N;
        size_t uq = (size_t)q;
        *off = base * uq + (uq < extra ? uq : extra);
        *n = base + (uq < extra ? 1 : 0);
        return;
    }
    size_t o = 0;
    for (int k = 0; k < q; k++)
        o += counts[k];
    *off = o;
    *n = counts[q];
}

int rt_reduce_scatter(RtRank *r, void *dst, const void *src, size_t total,
                      const size_t *counts, int dtype, int op)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    if (check_dtype(r, "reduce_scatter", dtype, total, 1, NULL) ||
        check_op(r, "reduce_scatter", op, dtype))
        return -1;
    if (counts) {
        size_t sum = 0;
        for (int q = 0; q < N; q++) {
            if (counts[q] > total - sum)
                return rt_rank_fail(r, "reduce_scatter: the counts add up to "
                                    "more than the %zu elements of src",
                                    total);
            sum += counts[q];
        }
        if (sum != total)
            return rt_rank_fail(r, "reduce_scatter: the counts add up to %zu, "
                                "not the %zu elements of src",
                                sum, total);
    }
    RtRankColl d = {.kind = RT_COLL_REDUCE_SCATTER, .dtype = dtype, .op = op,
                    .root = -1, .count = total, .src = src, .dst = dst,
                    .counts = counts};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    /* every rank must split the same way; each rank checks every pair, so
     * all reach the same verdict, and fail only after a barrier: the
     * counts are the callers' arrays, which a failed rank takes with it
     * (as in a2a_counts_agree) */
    const size_t *c0 = rt_rank_coll_peer(r, 0)->counts;
    int bk = -1, bq = -1;
    size_t b0 = 0, bn = 0;
    for (int q = 1; q < N && bq < 0; q++) {
        const size_t *cq = rt_rank_coll_peer(r, q)->counts;
        for (int k = 0; k < N; k++) {
            size_t o0, n0, oq, nq;
            rs_block(c0, total, N, k, &o0, &n0);
            rs_block(cq, total, N, k, &oq, &nq);
            if (n0 != nq) {
                bk = k, bq = q, b0 = n0, bn = nq;
                break;
            }
        }
    }
    if (rt_rank_coll_sync(r))
        return -1;
    if (bq >= 0) {
        rt_rank_fail(r, "reduce_scatter: rank 0 gives rank %d %zu elements but "
                     "rank %d gives it %zu", bk, b0, bq, bn);
        rt_rank_coll_end(r);
        return -1;
    }
    size_t off, n, es = (size_t)dsl_dtype_bytes(dtype);
    rs_block(counts, total, N, me, &off, &n);
    if (n) {
        const void *part[RT_RANK_MAX];
        for (int q = 0; q < N; q++)
            part[q] = (const char *)rt_rank_coll_peer(r, q)->src + off * es;
        rt_rank_reduce(dst, part, N, n, dtype, op);
    }
    return rt_rank_coll_end(r);
}

/* Inside all_to_all's staging: recv_counts[q] (NULL: anything) must be
 * what rank q sends here. The peers' send counts live in their callers'
 * memory (a stack frame, say) and a rank that fails leaves the collective
 * at once, so every rank reads them first and only after a barrier that
 * every rank passes does a rank that found a mismatch fail. The caller
 * then passes one more barrier before it reads a peer's buffers, which a
 * failed rank never reaches (ASan caught rank 0 reading rank 1's freed
 * counts, gpu_ranks_fake mm_a2a). */
static int a2a_counts_agree(RtRank *r, const size_t *recv_counts)
{
    int N = rt_rank_size(r), me = rt_rank_id(r), bad = -1;
    size_t sent = 0;
    for (int q = 0; q < N && recv_counts && bad < 0; q++) {
        size_t n = rt_rank_coll_peer(r, q)->counts[me];
        if (recv_counts[q] != n) {
            bad = q;
            sent = n;
        }
    }
    if (rt_rank_coll_sync(r))
        return -1;
    if (bad >= 0)
        return rt_rank_fail(r, "all_to_all: rank %d sends %zu elements to "
                            "rank %d but rank %d expects %zu",
                            bad, sent, me, me, recv_counts[bad]);
    return 0;
}

int rt_all_to_all(RtRank *r, void *dst, const size_t *recv_counts,
                  const void *src, const size_t *send_counts, int dtype)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    if (check_dtype(r, "all_to_all", dtype, 1, 1, NULL))
        return -1;
    if (!send_counts)
        return rt_rank_fail(r, "all_to_all: send_counts is NULL");
    size_t es = (size_t)dsl_dtype_bytes(dtype);
    RtRankColl d = {.kind = RT_COLL_ALL_TO_ALL, .dtype = dtype, .op = -1,
                    .root = -1, .count = 0, .src = src, .dst = dst,
                    .counts = send_counts, .counts2 = recv_counts};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    /* a rank that found a mismatch fails instead of reaching this barrier */
    if (a2a_counts_agree(r, recv_counts) || rt_rank_coll_sync(r)) {
        rt_rank_coll_end(r);
        return -1;
    }
    size_t doff = 0;
    for (int q = 0; q < N; q++) {
        const RtRankColl *p = rt_rank_coll_peer(r, q);
        size_t n = p->counts[me];
        size_t soff = 0;
        for (int k = 0; k < me; k++)
            soff += p->counts[k];
        if (n)
            memcpy((char *)dst + doff * es, (const char *)p->src + soff * es,
                   n * es);
        doff += n;
    }
    return rt_rank_coll_end(r);
}

int rt_all_to_all_counts(RtRank *r, size_t *recv_counts,
                         const size_t *send_counts)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    RtRankColl d = {.kind = RT_COLL_ALL_TO_ALL, .dtype = -1, .op = -1,
                    .root = -1, .count = (size_t)N, .counts = send_counts};
    if (!send_counts)
        return rt_rank_fail(r, "all_to_all: send_counts is NULL");
    if (rt_rank_coll_begin(r, &d))
        return -1;
    for (int q = 0; q < N; q++)
        recv_counts[q] = rt_rank_coll_peer(r, q)->counts[me];
    return rt_rank_coll_end(r);
}

int rt_broadcast(RtRank *r, void *buf, size_t count, int dtype, int root)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t bytes;
    if (check_dtype(r, "broadcast", dtype, count, 1, &bytes))
        return -1;
    if (root < 0 || root >= N)
        return rt_rank_fail(r, "broadcast: root %d is not a rank of this "
                            "world of %d", root, N);
    RtRankColl d = {.kind = RT_COLL_BROADCAST, .dtype = dtype, .op = -1,
                    .root = root, .count = count, .dst = buf};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    const void *s = rt_rank_coll_peer(r, root)->dst;
    if (me != root && bytes && s != buf)
        memcpy(buf, s, bytes);
    return rt_rank_coll_end(r);
}

/* ------------------------------------------------------------ rooted */

static int check_root(RtRank *r, const char *what, int root)
{
    int N = rt_rank_size(r);
    if (root < 0 || root >= N)
        return rt_rank_fail(r, "%s: root %d is not a rank of this world of "
                            "%d", what, root, N);
    return 0;
}

int rt_reduce(RtRank *r, void *buf, size_t count, int dtype, int op, int root)
{
    size_t bytes;
    if (check_dtype(r, "reduce", dtype, count, 1, &bytes) ||
        check_op(r, "reduce", op, dtype) || check_root(r, "reduce", root))
        return -1;
    RtRankColl d = {.kind = RT_COLL_REDUCE, .dtype = dtype, .op = op,
                    .root = root, .count = count, .src = buf, .dst = buf};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    int N = rt_rank_size(r), me = rt_rank_id(r);
    if (me == root && count) {
        const void *in[RT_RANK_MAX];
        for (int q = 0; q < N; q++)
            in[q] = q == me ? buf : rt_rank_coll_peer(r, q)->src;
        rt_rank_reduce(buf, in, N, count, dtype, op); /* in rank order */
    }
    return rt_rank_coll_end(r);
}

int rt_gather(RtRank *r, void *dst, const void *src, size_t count_per_rank,
              int dtype, int root)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t bytes;
    if (check_dtype(r, "gather", dtype, count_per_rank, (size_t)N, &bytes) ||
        check_root(r, "gather", root))
        return -1;
    RtRankColl d = {.kind = RT_COLL_GATHER, .dtype = dtype, .op = -1,
                    .root = root, .count = count_per_rank, .src = src,
                    .dst = dst};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    if (me == root)
        for (int q = 0; q < N && bytes; q++) {
            const void *s = q == me ? src : rt_rank_coll_peer(r, q)->src;
            char *t = (char *)dst + (size_t)q * bytes;
            if (t != s)
                memmove(t, s, bytes);
        }
    return rt_rank_coll_end(r);
}

int rt_scatter(RtRank *r, void *dst, const void *src, size_t count_per_rank,
               int dtype, int root)
{
    int N = rt_rank_size(r), me = rt_rank_id(r);
    size_t bytes;
    if (check_dtype(r, "scatter", dtype, count_per_rank, (size_t)N, &bytes) ||
        check_root(r, "scatter", root))
        return -1;
    RtRankColl d = {.kind = RT_COLL_SCATTER, .dtype = dtype, .op = -1,
                    .root = root, .count = count_per_rank, .src = src,
                    .dst = dst};
    if (rt_rank_coll_begin(r, &d))
        return -1;
    const char *s = me == root ? src : rt_rank_coll_peer(r, root)->src;
    if (bytes && s + (size_t)me * bytes != (const char *)dst)
        memmove(dst, s + (size_t)me * bytes, bytes);
    return rt_rank_coll_end(r);
}

/* ------------------------------------------------------------ agreement */

int rt_coll_agree(RtRank *r, const RtRankColl *desc)
{
    RtRankColl d = *desc; /* peers read only the descriptor */
    d.src = NULL;
    d.dst = NULL;
    const char *what = rt_rank_coll_name(d.kind);
    int a2a = d.kind == RT_COLL_ALL_TO_ALL;
    if (!a2a) {
        d.counts = NULL;
        d.counts2 = NULL;
    }
    if (d.kind != RT_COLL_BARRIER &&
        check_dtype(r, what, d.dtype, d.count, 1, NULL))
        return -1;
    if (d.op != -1 && check_op(r, what, d.op, d.dtype))
        return -1;
    if (d.root != -1 && check_root(r, what, d.root))
        return -1;
    if (a2a && !d.counts)
        return rt_rank_fail(r, "all_to_all: send_counts is NULL");
    if (rt_rank_coll_begin(r, &d))
        return -1;
    int rc = a2a ? a2a_counts_agree(r, d.counts2) : 0;
    /* a rank that failed the check leaves; the others wait here for it */
    if (rt_rank_coll_end(r))
        return -1;
    return rc;
}
