/* t_promote_int.c — integer dtype pairs follow C's usual arithmetic
 * conversions (i8 + i8 is computed in i32, i32 with u32 gives u32, i64 with
 * u32 gives i64, u64 with i64 gives u64, ...). The reference is plain C on
 * the same C types; results are stored into i64 (u64 when C's result is
 * unsigned 64-bit), so a wrong result dtype shows as a different wrap,
 * sign or comparison. */
#include "harness.h"

#pragma GCC diagnostic ignored "-Wsign-compare" /* C semantics on purpose */

#define NOPS 9
static const char *const opsrc[NOPS] = {"+", "-", "*", "/", "%", "<", "&", "|", "^"};

#define REF(TA, TB, x0, y0, out)                                              \
    do {                                                                      \
        TA x = (TA)(x0);                                                      \
        TB y = (TB)(y0);                                                      \
        out[0] = (int64_t)(x + y); out[1] = (int64_t)(x - y);                 \
        out[2] = (int64_t)(x * y); out[3] = (int64_t)(x / y);                 \
        out[4] = (int64_t)(x % y); out[5] = (int64_t)(x < y);                 \
        out[6] = (int64_t)(x & y); out[7] = (int64_t)(x | y);                 \
        out[8] = (int64_t)(x ^ y);                                            \
        unsigned_result = _Generic(x + y, unsigned long: 1,                   \
                                   unsigned long long: 1, default: 0);        \
    } while (0)

typedef struct { const char *a, *b; } Pair;
static const Pair pairs[] = {
    {"i8", "i8"},   {"i8", "u8"},   {"u8", "u8"},   {"i16", "u16"}, {"u16", "u16"},
    {"i32", "u32"}, {"i32", "i64"}, {"u32", "i64"}, {"u64", "i64"}, {"u32", "u32"},
    {"i64", "u64"}, {"u16", "i32"}, {"i8", "u64"},  {"u8", "i16"},  {"i64", "i64"},
    {"i32", "i32"}, {"u32", "i8"},
};
#define NPAIRS (int)(sizeof pairs / sizeof pairs[0])

/* values that keep C's signed arithmetic free of overflow */
static int64_t gen(const char *t)
{
    if (!strcmp(t, "i8")) return h_randi(-128, 127);
    if (!strcmp(t, "u8")) return h_randi(0, 255);
    if (!strcmp(t, "i16")) return h_randi(-32768, 32767);
    if (!strcmp(t, "u16")) return h_randi(0, 40000);
    if (!strcmp(t, "i32")) return h_randi(-30000, 30000);
    if (!strcmp(t, "u32")) return h_randi(0, 4294967295LL);
    if (!strcmp(t, "i64")) return h_randi(-(1LL << 30), 1LL << 30);
    return (int64_t)h_rand_u64(); /* u64 */
}

static int reference(int p, int64_t xa, int64_t yb, int64_t *out)
{
    int unsigned_result = 0;
#define CASE(i, TA, TB) case i: REF(TA, TB, xa, yb, out); break;
    switch (p) {
    CASE(0, int8_t, int8_t) CASE(1, int8_t, uint8_t) CASE(2, uint8_t, uint8_t)
    CASE(3, int16_t, uint16_t) CASE(4, uint16_t, uint16_t)
    CASE(5, int32_t, uint32_t) CASE(6, int32_t, int64_t)
    CASE(7, uint32_t, int64_t) CASE(8, uint64_t, int64_t)
    CASE(9, uint32_t, uint32_t) CASE(10, int64_t, uint64_t)
    CASE(11, uint16_t, int32_t) CASE(12, int8_t, uint64_t)
    CASE(13, uint8_t, int16_t) CASE(14, int64_t, int64_t)
    CASE(15, int32_t, int32_t) CASE(16, uint32_t, int8_t)
    }
#undef CASE
    return unsigned_result;
}

static void put_raw(void *p, DLDataType t, int i, int64_t v)
{
    switch (t.bits) {
    case 8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = (uint64_t)v; break;
    }
}

int main(void)
{
    enum { N = 200 };
    h_seed(2);
    char *src = h_alloc(128 * 1024);
    size_t len = 0;
    int outu[NPAIRS];
    for (int p = 0; p < NPAIRS; p++) {
        int64_t dummy[NOPS];
        outu[p] = reference(p, 1, 1, dummy);
        len += (size_t)snprintf(src + len, 128 * 1024 - len,
            "kernel p%d<BLOCK = 32>(A: %s[N], B: %s[N], O: %s[%d, N]) grid(cdiv(N, BLOCK)) {\n"
            "    let o = program_id(0) * BLOCK;\n"
            "    let a = A[o +: BLOCK];\n"
            "    let b = B[o +: BLOCK];\n",
            p, pairs[p].a, pairs[p].b, outu[p] ? "u64" : "i64", NOPS);
        for (int k = 0; k < NOPS; k++)
            len += (size_t)snprintf(src + len, 128 * 1024 - len,
                                    "    O[%d, o +: BLOCK] = a %s b;\n", k, opsrc[k]);
        len += (size_t)snprintf(src + len, 128 * 1024 - len, "}\n");
    }
    blkc_module *m = h_compile(src, NULL);
    for (int p = 0; p < NPAIRS; p++) {
        DLDataType ta = h_dtype(pairs[p].a), tb = h_dtype(pairs[p].b);
        DLDataType to = outu[p] ? H_U64 : H_I64;
        void *a = h_array(ta, N), *b = h_array(tb, N);
        int64_t *o = h_alloc(8 * NOPS * N), *ref = h_alloc(8 * NOPS * N);
        for (int i = 0; i < N; i++) {
            int64_t x = gen(pairs[p].a), y = gen(pairs[p].b);
            if (y == 0)
                y = 3;
            put_raw(a, ta, i, x);
            put_raw(b, tb, i, y);
            int64_t r[NOPS];
            reference(p, h_geti(a, ta, i), h_geti(b, tb, i), r);
            for (int k = 0; k < NOPS; k++)
                ref[k * N + i] = r[k];
        }
        char name[16];
        snprintf(name, sizeof name, "p%d", p);
        H_LAUNCH(h_kernel(m, name), h_ten(h_t1(a, ta, N)), h_ten(h_t1(b, tb, N)),
                 h_ten(h_t2(o, to, NOPS, N)));
        for (int k = 0; k < NOPS; k++) {
            char what[96];
            snprintf(what, sizeof what, "%s %s %s (C conversions)", pairs[p].a,
                     opsrc[k], pairs[p].b);
            h_check_i(what, o + k * N, to, ref + k * N, N);
        }
    }
    return h_done();
}
