/* t_philox.c — randint / rand / randn (LANGUAGE.md §7) against a C
 * Philox4x32-10 written from the Random123 paper (bump the key before
 * rounds 2..10), itself checked first against Random123's known-answer
 * vectors (kat_vectors: counter 0 / key 0, all ones, the pi digits). The
 * u32 words and the f32 of rand must match bit for bit; randn within a
 * few ulp (libm log/cos differ between backends). Shapes with tails:
 * [5, 37] offsets from a row-major index, 64-bit seeds, i64 offsets. */
#include "harness.h"

static void philox_ref(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1;
        c[3] = (uint32_t)p0;
        c[0] = n0;
        c[2] = n2;
    }
    memcpy(out, c, sizeof c);
}

static float uniform_ref(uint32_t w)
{
    int32_t x;
    memcpy(&x, &w, 4);
    if (x < 0)
        x = (int32_t)(-(int64_t)x - 1);
    return (float)x * 4.656613e-10f;
}

static const char *src =
    "kernel rng(S: u32[R, C], F: f32[R, C], G: f32[R, C], seed: u64) grid(1) {\n"
    "    let off = arange(0, 8)[:, None] * 37 + arange(0, 40)[None, :];\n"
    "    S[0 +: 8, 0 +: 40] = randint(seed, off);\n"
    "    F[0 +: 8, 0 +: 40] = rand(seed, off);\n"
    "    G[0 +: 8, 0 +: 40] = randn(seed, off);\n"
    "}\n"
    "kernel rng64(S: u32[N], base: i64, seed: i32) {\n"
    "    S[0 +: 64] = randint(seed, arange(0, 64) as i64 + base);\n"
    "}\n";

int main(void)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
         0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
         0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        philox_ref(kat[i], kat[i] + 4, out);
        h_ok(memcmp(out, kat[i] + 6, sizeof out) == 0, "C reference: Random123 KAT %d", i);
    }
    enum { R = 5, C = 37, E = R * C };
    blkc_module *m = h_compile(src, NULL);
    const uint64_t seeds[3] = {0, 42, 0x123456789abcdef0ull};
    for (int si = 0; si < 3; si++) {
        uint32_t *s = h_array(H_U32, E);
        float *f = h_array(H_F32, E), *g = h_array(H_F32, E);
        H_LAUNCH(h_kernel(m, "rng"), h_ten(h_t2(s, H_U32, R, C)), h_ten(h_t2(f, H_F32, R, C)),
                 h_ten(h_t2(g, H_F32, R, C)), h_int((int64_t)seeds[si]));
        int64_t *rs = h_alloc(8 * E), *rf = h_alloc(8 * E);
        int64_t *gotf = h_alloc(8 * E);
        double *rg = h_alloc(8 * E);
        uint32_t key[2] = {(uint32_t)seeds[si], (uint32_t)(seeds[si] >> 32)};
        for (int i = 0; i < E; i++) {
            uint32_t ctr[4] = {(uint32_t)(i / C * 37 + i % C), 0, 0, 0}, o[4];
            philox_ref(ctr, key, o);
            rs[i] = o[0];
            rf[i] = h_f2u(uniform_ref(o[0]));
            gotf[i] = h_f2u(f[i]);
            float u1 = uniform_ref(o[0]), u2 = uniform_ref(o[1]);
            if (u1 < 1e-7f)
                u1 = 1e-7f;
            rg[i] = sqrt(-2.0 * log((double)u1)) * cos(6.283185307179586 * (double)u2);
        }
        char what[96];
        snprintf(what, sizeof what, "randint seed %#llx: the words", (unsigned long long)seeds[si]);
        h_check_i(what, s, H_U32, rs, E);
        if (si == 0)
            h_ok(s[0] == 0x6627e8d5u, "randint(0, 0) is the KAT counter 0 / key 0 word 0x6627e8d5 (got %#x)", s[0]);
        snprintf(what, sizeof what, "rand seed %#llx: f32 bits", (unsigned long long)seeds[si]);
        h_check_i(what, gotf, H_I64, rf, E);
        snprintf(what, sizeof what, "randn seed %#llx", (unsigned long long)seeds[si]);
        h_check(what, g, H_F32, rg, E, 2e-5, 2e-5);
        bool in01 = true;
        for (int i = 0; i < E; i++)
            in01 &= f[i] >= 0.0f && f[i] < 1.0f;
        h_ok(in01, "rand in [0, 1)");
    }
    /* i64 offsets: counter (low, high, 0, 0) */
    enum { N = 50 };
    uint32_t *s64 = h_array(H_U32, N);
    int64_t base = (int64_t)0x300000000ll - 20, rs64[N];
    H_LAUNCH(h_kernel(m, "rng64"), h_ten(h_t1(s64, H_U32, N)), h_int(base), h_int(-7));
    for (int i = 0; i < N; i++) {
        uint64_t o64 = (uint64_t)(base + i);
        uint32_t ctr[4] = {(uint32_t)o64, (uint32_t)(o64 >> 32), 0, 0}, o[4];
        uint32_t key[2] = {(uint32_t)-7, 0xffffffffu}; /* i32 -7 widened */
        philox_ref(ctr, key, o);
        rs64[i] = o[0];
    }
    h_check_i("randint with i64 offsets crossing 2^32, negative i32 seed", s64, H_U32, rs64, N);
    return h_done();
}
