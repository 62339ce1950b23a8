/* khelp.c — the C helpers that compiled CPU kernels call by name: f16,
 * bf16 and f8 conversions LLVM has no type or single-rounding path for, and
 * notify/wait on u64 signal cells. No LLVM here: the same file serves the
 * JIT (backends/cpu registers these addresses as absolute symbols) and
 * libblkc_runtime (AOT output links them by name). */
#include "khelp.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>

/* Round x to a float format with `eb` exponent and `mb` mantissa bits, ties
 * to even, once. fn = e4m3fn style: no infinities, the all-ones code is NaN
 * and overflow gives NaN. */
static uint32_t round_mini(double x, int eb, int mb, bool fn)
{
    uint32_t sign = signbit(x) ? 1u << (eb + mb) : 0;
    int bias = (1 << (eb - 1)) - 1;
    uint32_t expmax = (1u << eb) - 1;
    uint32_t nanv = fn ? (1u << (eb + mb)) - 1 : (expmax << mb) | (1u << (mb - 1));
    uint32_t infv = fn ? nanv : expmax << mb;
    if (isnan(x))
        return sign | nanv;
    double a = fabs(x);
    if (isinf(a))
        return sign | infv;
    if (a == 0)
        return sign;
    int e;
    (void)frexp(a, &e);
    int E = e - 1, emin = 1 - bias;
    if (E > 4 * (int)expmax + 64)
        return sign | infv;
    int qe = (E >= emin ? E : emin) - mb;
    double r = nearbyint(ldexp(a, -qe));
    uint64_t ri = (uint64_t)r;
    int Eq = qe + mb;
    if (ri >= (2ull << mb)) {
        ri >>= 1;
        Eq++;
    }
    if (ri < (1ull << mb))
        return sign | (uint32_t)ri; /* subnormal */
    int64_t be = (int64_t)Eq + bias;
    uint32_t man = (uint32_t)(ri - (1ull << mb));
    if (fn) {
        if (be > (int64_t)expmax || (be == (int64_t)expmax && man == (1u << mb) - 1))
            return sign | nanv;
    } else if (be >= (int64_t)expmax) {
        return sign | infv;
    }
    return sign | ((uint32_t)be << mb) | man;
}

static float decode_mini(uint32_t v, int eb, int mb, bool fn)
{
    uint32_t sign = (v >> (eb + mb)) & 1, ex = (v >> mb) & ((1u << eb) - 1);
    uint32_t man = v & ((1u << mb) - 1), expmax = (1u << eb) - 1;
    int bias = (1 << (eb - 1)) - 1;
    float r;
    if (fn && ex == expmax && man == (1u << mb) - 1)
        r = NAN;
    else if (!fn && ex == expmax)
        r = man ? NAN : INFINITY;
    else if (ex == 0)
        r = ldexpf((float)man, 1 - bias - mb);
    else
        r = ldexpf((float)(man | (1u << mb)), (int)ex - bias - mb);
    return sign ? -r : r;
}

KH_API uint16_t blkc_cpu_f64_to_f16(double x) { return (uint16_t)round_mini(x, 5, 10, false); }
KH_API uint16_t blkc_cpu_f64_to_bf16(double x) { return (uint16_t)round_mini(x, 8, 7, false); }
KH_API uint8_t blkc_cpu_f64_to_e4m3(double x) { return (uint8_t)round_mini(x, 4, 3, true); }
KH_API uint8_t blkc_cpu_f64_to_e5m2(double x) { return (uint8_t)round_mini(x, 5, 2, false); }
KH_API uint8_t blkc_cpu_f32_to_e4m3(float x) { return blkc_cpu_f64_to_e4m3(x); }
KH_API uint8_t blkc_cpu_f32_to_e5m2(float x) { return blkc_cpu_f64_to_e5m2(x); }
KH_API float blkc_cpu_e4m3_to_f32(uint8_t x) { return decode_mini(x, 4, 3, true); }
KH_API float blkc_cpu_e5m2_to_f32(uint8_t x) { return decode_mini(x, 5, 2, false); }
KH_API float blkc_cpu_f16_to_f32(uint16_t x) { return decode_mini(x, 5, 10, false); }
KH_API uint16_t blkc_cpu_f32_to_f16(float x) { return blkc_cpu_f64_to_f16(x); }

/* ------------------------------------------------------------ signals
 * A wait spins, then yields, then sleeps briefly, and gives up after the
 * launch's timeout or when the run is aborted; the first failure is
 * recorded in the BkLaunchCtx so that the runtime can name the rank, the
 * signal and the values. */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool satisfied(uint64_t seen, int32_t cmp, uint64_t v)
{
    return cmp == WAIT_EQ ? seen == v : seen >= v;
}

KH_API void blkc_cpu_notify(uint64_t *cell, int32_t op, uint64_t v)
{
    if (op == SIG_ADD)
        __atomic_fetch_add(cell, v, __ATOMIC_RELEASE);
    else
        __atomic_store_n(cell, v, __ATOMIC_RELEASE);
}

KH_API int32_t blkc_cpu_wait(BkLaunchCtx *ctx, uint64_t *cell, int32_t cmp,
                             uint64_t v, int64_t param, int64_t index)
{
    uint64_t seen = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
    if (satisfied(seen, cmp, v))
        return 0;
    int64_t limit = ctx->timeout_ms > 0 ? ctx->timeout_ms : 5000;
    int64_t start = now_ms();
    int aborted = 0;
    if (ctx->in_wait)
        __atomic_add_fetch(ctx->in_wait, 1, __ATOMIC_ACQ_REL);
    for (unsigned long i = 1;; i++) {
        if (__atomic_load_n(&ctx->failed, __ATOMIC_ACQUIRE))
            return 1;
        seen = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
        if (satisfied(seen, cmp, v))
            return 0;
        if (i < 1000)
            continue;
        if (i < 2000) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
        if (ctx->abort_flag && *ctx->abort_flag) {
            aborted = 1;
            break;
        }
        if (now_ms() - start > limit)
            break;
    }
    if (ctx->in_wait)
        __atomic_sub_fetch(ctx->in_wait, 1, __ATOMIC_ACQ_REL);
    int32_t zero = 0;
    if (__atomic_compare_exchange_n(&ctx->failed, &zero, 1, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        ctx->fail_param = param;
        ctx->fail_cell = index;
        ctx->fail_expected = v;
        ctx->fail_seen = seen;
        ctx->fail_aborted = aborted;
    }
    return 1;
}

KH_API void blkc_cpu_assert(BkLaunchCtx *ctx, const int32_t *pid, int32_t msg,
                            int32_t line)
{
    int32_t zero = 0;
    if (!__atomic_compare_exchange_n(&ctx->assert_failed, &zero, 2, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    ctx->assert_msg = msg;
    ctx->assert_line = line;
    for (int a = 0; a < 3; a++)
        ctx->assert_pid[a] = pid[a];
    __atomic_store_n(&ctx->assert_failed, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ print */

static _Thread_local char pline[16384];
static _Thread_local size_t plen;

static void pput(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void pput(const char *fmt, ...)
{
    if (plen >= sizeof pline - 8)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(pline + plen, sizeof pline - 8 - plen, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    plen += (size_t)n < sizeof pline - 8 - plen ? (size_t)n : sizeof pline - 8 - plen;
    if (plen >= sizeof pline - 9)
        plen += (size_t)snprintf(pline + plen, 8, "...");
}

KH_API void blkc_cpu_print_begin(const int32_t *pid)
{
    plen = 0;
    pput("pid (%d, %d, %d):", (int)pid[0], (int)pid[1], (int)pid[2]);
}

KH_API void blkc_cpu_print_text(const char *s)
{
    pput(" %s", s);
}

static void pelem(const unsigned char *p, int dt)
{
    switch (dt) {
    case DT_BOOL: pput("%s", *p ? "true" : "false"); return;
    case DT_I8: pput("%d", (int)*(const int8_t *)p); return;
    case DT_I16: pput("%d", (int)*(const int16_t *)p); return;
    case DT_I32: pput("%d", (int)*(const int32_t *)p); return;
    case DT_I64: pput("%lld", (long long)*(const int64_t *)p); return;
    case DT_U8: pput("%u", (unsigned)*p); return;
    case DT_U16: pput("%u", (unsigned)*(const uint16_t *)p); return;
    case DT_U32: pput("%u", (unsigned)*(const uint32_t *)p); return;
    case DT_U64: pput("%llu", (unsigned long long)*(const uint64_t *)p); return;
    case DT_F16: pput("%g", (double)blkc_cpu_f16_to_f32(*(const uint16_t *)p)); return;
    case DT_BF16: {
        uint32_t w = (uint32_t)*(const uint16_t *)p << 16;
        float f;
        memcpy(&f, &w, sizeof f);
        pput("%g", (double)f);
        return;
    }
    case DT_F32: pput("%g", (double)*(const float *)p); return;
    case DT_F64: pput("%g", *(const double *)p); return;
    case DT_F8E4M3: pput("%g", (double)blkc_cpu_e4m3_to_f32(*p)); return;
    case DT_F8E5M2: pput("%g", (double)blkc_cpu_e5m2_to_f32(*p)); return;
    default: pput("?"); return;
    }
}

/* A tile as nested lists, row-major, then its shape when rank >= 2:
 * [[1, 2], [3, 4]] (shape [2, 2]) */
KH_API void blkc_cpu_print_val(const void *p, int32_t dtype, int32_t rank,
                               const int64_t *shape)
{
    const unsigned char *b = p;
    size_t es = dtype == DT_I64 || dtype == DT_U64 || dtype == DT_F64 ? 8
                : dtype == DT_I32 || dtype == DT_U32 || dtype == DT_F32 ? 4
                : dtype == DT_I16 || dtype == DT_U16 || dtype == DT_F16 ||
                          dtype == DT_BF16 ? 2 : 1;
    pput(" ");
    if (rank <= 0) {
        pelem(b, dtype);
        return;
    }
    int64_t n = 1, idx[IR_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++)
        n *= shape[d];
    for (int d = 0; d < rank; d++)
        pput("[");
    for (int64_t i = 0; i < n; i++) {
        pelem(b + (size_t)i * es, dtype);
        int d = rank - 1;
        while (d >= 0 && ++idx[d] == shape[d]) {
            idx[d--] = 0;
            pput("]");
        }
        if (d >= 0) {
            pput(", ");
            for (int k = d + 1; k < rank; k++)
                pput("[");
        }
    }
    if (rank >= 2) {
        pput(" (shape [");
        for (int d = 0; d < rank; d++)
            pput("%s%lld", d ? ", " : "", (long long)shape[d]);
        pput("])");
    }
}

KH_API void blkc_cpu_print_end(void)
{
    pline[plen++] = '\n';
    ssize_t w = write(2, pline, plen);
    (void)w;
    plen = 0;
}
