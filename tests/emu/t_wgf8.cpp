/* t_wgf8.cpp — fp8 wgmma of the emulator (runtime/emu/blk_emu_wgmma.h;
 * ctest emu_wgf8, emu.sh mode wgf8), written by hand against the
 * wrappers, the layouts from the PTX ISA rather than from blkc's
 * generator:
 *   - the fp8 decode (5.2.5.1): e4m3 (bias 7, no infinities, S.1111.111
 *     NaN, 448 the largest) and e5m2 (bias 15, IEEE-like inf / NaN), their
 *     subnormals and signed zeros, all 256 codes of each against a decode
 *     through f32 bits written here;
 *   - wgmma.mma_async m64n64k32 .f32.e4m3.e4m3, 4 k steps over a 64 x 128
 *     A and a 64 x 128 B (B as [N][K]: K-major, the only fp8 layout) in
 *     the 128B swizzle (16 one-byte elements per 16-byte chunk, the
 *     chunks of row r XOR'd with r % 8), each k step's descriptors 32
 *     bytes further;
 *   - m64n24k32 .f32.e5m2.e4m3 (mixed) in the 32B swizzle (rows of 32
 *     bytes, chunk bit 4 ^= address bit 7);
 *   - --stats' counts: wgmma 5, 2 x 64 x N x 32 FLOP each.
 * Every random finite code; D against products summed exactly in double
 * and rounded to f32 once per mma_async (exact: 32 fp8 products fit a
 * double). Exit 0 when every check holds. */
#include "blk_emu.h"
#include "emu_check.h"

/* fp8 -> f32 through the f32 bit pattern (mb mantissa bits, bias) */
static float dec(unsigned x, bool e5m2)
{
    const unsigned mb = e5m2 ? 2 : 3, eb = 7 - mb, bias = e5m2 ? 15 : 7;
    const unsigned s = x >> 7, e = (x >> mb) & ((1u << eb) - 1), m = x & ((1u << mb) - 1);
    unsigned u;
    if (e == (1u << eb) - 1 && (e5m2 || m == 7)) /* e5m2: inf / NaN; e4m3: NaN */
        u = e5m2 && !m ? 0x7f800000u : 0x7fc00000u;
    else if (e == 0) { /* m * 2^(1 - bias - mb): exact in f32 */
        float v = (float)m / (float)(1u << (bias - 1 + mb));
        memcpy(&u, &v, 4);
    } else
        u = (e - bias + 127) << 23 | m << (23 - mb);
    u |= s << 31;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void decode_tests()
{
    for (int e5 = 0; e5 < 2; e5++)
        for (unsigned x = 0; x < 256; x++) {
            double got = blk_emu_f8((unsigned char)x, e5), want = dec(x, e5);
            CHECK((std::isnan(got) && std::isnan(want)) ||
                      (got == want && std::signbit(got) == std::signbit(want)),
                  "%s 0x%02x: %.9g, expected %.9g", e5 ? "e5m2" : "e4m3", x, got, want);
        }
    /* the documented points */
    CHECK(blk_emu_f8(0x7e, false) == 448 && std::isnan(blk_emu_f8(0x7f, false)) &&
              std::isnan(blk_emu_f8(0xff, false)) && blk_emu_f8(0x78, false) == 256 &&
              blk_emu_f8(0x38, false) == 1 && blk_emu_f8(0x01, false) == std::ldexp(1.0, -9) &&
              blk_emu_f8(0x08, false) == std::ldexp(1.0, -6) && blk_emu_f8(0xb8, false) == -1,
          "e4m3: 448, NaN, 256, 1, 2^-9, 2^-6, -1");
    CHECK(blk_emu_f8(0x7c, true) == INFINITY && blk_emu_f8(0xfc, true) == -INFINITY &&
              std::isnan(blk_emu_f8(0x7d, true)) && blk_emu_f8(0x7b, true) == 57344 &&
              blk_emu_f8(0x3c, true) == 1 && blk_emu_f8(0x01, true) == std::ldexp(1.0, -16) &&
              blk_emu_f8(0x04, true) == std::ldexp(1.0, -14),
          "e5m2: inf, -inf, NaN, 57344, 1, 2^-16, 2^-14");
}

/* a finite code (no NaN / inf) from a small generator */
static unsigned rng = 12345;
static unsigned char code(bool e5m2)
{
    for (;;) {
        rng = rng * 1103515245u + 12345u;
        unsigned x = (rng >> 16) & 0xff;
        if (!std::isnan(dec(x, e5m2)) && !std::isinf(dec(x, e5m2)))
            return (unsigned char)x;
    }
}

enum { SMEM = 16384 };
static unsigned char A[64][128], B[64][128]; /* [M][K], [N][K] */
static int N, K, S, KA, KB;                    /* shape, swizzle span bytes, kinds */
static float got[64][64];

/* Byte offset of element (r, k) of an R x (S bytes) K-major tile of
 * one-byte elements at base (1024-aligned), canonical layout of span S:
 * row r at r * S, 16-byte chunk k / 16; then Swizzle<b, 4, 3> on the
 * address: bits [4, 4 + b) ^= bits [7, 7 + b), b = log2(S / 16). */
static long long at(long long base, int r, int k)
{
    long long a = base + (long long)r * S + k;
    const int mask = S / 16 - 1;
    return a ^ (((a >> 7) & mask) << 4);
}
static unsigned long long desc(long long start)
{
    const unsigned long long mode = S == 128 ? 1 : S == 64 ? 2 : 3;
    return (unsigned long long)(start >> 4) | (16ull >> 4) << 16 |
           (unsigned long long)(8 * S >> 4) << 32 | mode << 62;
}

static void k_f8(int)
{
    BLK_DYNAMIC_SMEM(sm);
    for (int e = (int)threadIdx.x; e < 64 * K; e += 128) {
        const int r = e / K, k = e % K;
        sm[at(0, r, k)] = A[r][k];
        if (r < N)
            sm[at(8192, r, k)] = B[r][k];
    }
    blk_fence_proxy_async();
    __syncthreads();
    float d[32] = {0};
    blk_wgmma_fence();
    for (int j = 0; j < K / 32; j++) { /* k step j: 32 bytes further in each row */
        const unsigned long long da = desc(32 * j), db = desc(8192 + 32 * j);
        if (N == 64 && KA == 2)
            blk_wgmma_m64n64k32_f32_e4m3_e4m3(d, da, db, 1);
        else
            blk_wgmma_m64n24k32_f32_e5m2_e4m3(d, da, db, 1);
    }
    blk_wgmma_commit();
    blk_wgmma_wait<0>();
    const int t = (int)threadIdx.x, w = t / 32, lane = t % 32;
    for (int i = 0; i < N / 2; i++)
        got[16 * w + lane / 4 + 8 * ((i >> 1) & 1)][8 * (i >> 2) + 2 * (lane % 4) + (i & 1)] = d[i];
}

static void one(int n, int kk, int span, int ka, int kb, const char *what)
{
    N = n, K = kk, S = span, KA = ka, KB = kb;
    for (int r = 0; r < 64; r++)
        for (int k = 0; k < K; k++) {
            A[r][k] = code(ka == 3);
            B[r][k] = code(kb == 3);
        }
    memset(got, 0, sizeof got);
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    char err[512] = "";
    BlkEmuStats st;
    memset(&st, 0, sizeof st);
    if (blk_emu_launch(k_f8, grid, 128, SMEM, params, &st, err, sizeof err)) {
        CHECK(false, "%s: launch: %s", what, err);
        return;
    }
    int bad = 0;
    for (int m = 0; m < 64; m++)
        for (int j = 0; j < N; j++) {
            float want = 0;
            for (int s = 0; s < K / 32; s++) { /* one f32 rounding per mma_async */
                double acc = 0;
                for (int k = 32 * s; k < 32 * s + 32; k++)
                    acc += (double)dec(A[m][k], ka == 3) * dec(B[j][k], kb == 3);
                want = (float)(acc + want);
            }
            if (got[m][j] != want && bad++ < 3)
                CHECK(false, "%s: D[%d][%d] = %.9g, expected %.9g", what, m, j, got[m][j], want);
        }
    CHECK(st.wgmma == K / 32 && st.wgmma_flops == 2LL * 64 * N * 32 * (K / 32),
          "%s: --stats wgmma %lld (%lld FLOP), expected %d (%lld)", what, st.wgmma,
          st.wgmma_flops, K / 32, 2LL * 64 * N * 32 * (K / 32));
}

int main()
{
    decode_tests();
    one(64, 128, 128, 2, 2, "m64n64k32 e4m3.e4m3, 128B swizzle, 4 k steps");
    one(24, 32, 32, 3, 2, "m64n24k32 e5m2.e4m3, 32B swizzle");
    printf("%s cuda-emu fp8 wgmma\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
