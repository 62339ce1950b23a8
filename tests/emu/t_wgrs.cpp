/* t_wgrs.cpp — wgmma with A from registers in the emulator
 * (runtime/emu/blk_emu_wgmma.h; ctest emu_wgrs, emu.sh mode wgrs),
 * written by hand against the wrappers, the layouts from the PTX ISA
 * rather than from blkc's generator:
 *   - the A fragment (9.7.15.5.1.1.1, "Multiplicand A in registers",
 *     Figure 148): four .f16x2 registers a0..a7 (low half first); warp w
 *     of the warpgroup holds rows 16 w .. 16 w + 15 in the pattern of
 *     mma.m16n8k16's A (9.7.14.5.8): row = groupID for a0, a1, a4, a5,
 *     groupID + 8 otherwise; col = 2 threadID_in_group + (i & 1) for
 *     i < 4, + 8 for i >= 4;
 *   - m64n64k16 .f32.f16.f16 with B N-major (imm-trans-b 1: B as [K][N]
 *     rows of 128 bytes in the 128B swizzle, 8-row groups of K at SBO =
 *     1024), 4 k steps of a 64 x 64 A, the first with scale-d 0 over
 *     garbage in D;
 *   - m64n32k16 .f32.bf16.bf16 with B K-major (imm-trans-b 0: B as
 *     [N][K], rows of 128 bytes), 4 k steps, each 32 bytes further;
 *   - --stats' counts: wgmma 8, 2 x 64 x N x 16 FLOP each.
 * Elements are small multiples of 1/8 (exact in f16 and bf16) so every
 * product and sum is exact; D against sums in double rounded to f32 once
 * per mma_async. Exit 0 when every check holds. Built with
 * -DBLK_EMU_BREAK_AREG (the emulator's table broken) it must fail. */
#include "blk_emu.h"
#include "emu_check.h"

static unsigned rng = 777;
static float val()
{
    rng = rng * 1103515245u + 12345u;
    return (float)((int)((rng >> 16) % 33) - 16) / 8.0f; /* -2 .. 2 in steps of 1/8 */
}
/* a float exact in 16 bits: f16 (5 exponent, 10 mantissa bits) or bf16
 * (the top half of the f32) */
static unsigned short bits16(float x, bool bf)
{
    unsigned u;
    memcpy(&u, &x, 4);
    if (bf)
        return (unsigned short)(u >> 16);
    if (x == 0)
        return (unsigned short)(u >> 16 & 0x8000);
    const unsigned s = u >> 31, e = (u >> 23) & 0xff, m = u & 0x7fffff;
    return (unsigned short)(s << 15 | (e - 127 + 15) << 10 | m >> 13);
}

enum { SMEM = 16384, K = 64 };
static float A[64][K], B[K][64]; /* A [M][K]; B [K][N] */
static int N;
static bool BF, KMAJ;
static float got[64][64];

/* B's byte offset of (k, n): N-major [K][N] rows of 128 bytes, or K-major
 * [N][K] rows of 128 bytes; then Swizzle<3, 4, 3>: bits [4, 7) ^= [7, 10) */
static long long boff(int k, int n)
{
    long long a = KMAJ ? (long long)n * 128 + k * 2 : (long long)k * 128 + n * 2;
    return a ^ (((a >> 7) & 7) << 4);
}
static unsigned long long bdesc(long long start)
{
    const long long lbo = KMAJ ? 16 : K * 128, sbo = 1024;
    return (unsigned long long)(start >> 4) | (unsigned long long)(lbo >> 4) << 16 |
           (unsigned long long)(sbo >> 4) << 32 | 1ull << 62;
}

static void k_rs(int)
{
    BLK_DYNAMIC_SMEM(sm);
    for (int e = (int)threadIdx.x; e < K * N; e += 128) {
        const int k = e / N, n = e % N;
        const unsigned short h = bits16(B[k][n], BF);
        memcpy(sm + boff(k, n), &h, 2);
    }
    blk_fence_proxy_async();
    __syncthreads();
    const int t = (int)threadIdx.x, w = t / 32, lane = t % 32, g = lane >> 2, q = lane & 3;
    unsigned a[K / 16][4];
    for (int s = 0; s < K / 16; s++)
        for (int i = 0; i < 8; i++) {
            const int row = 16 * w + ((i < 2 || (i >= 4 && i < 6)) ? g : g + 8);
            const int col = 16 * s + 2 * q + (i & 1) + (i >= 4 ? 8 : 0);
            const unsigned h = bits16(A[row][col], BF);
            if (i & 1)
                a[s][i / 2] |= h << 16;
            else
                a[s][i / 2] = h;
        }
    float d[32];
    for (int i = 0; i < 32; i++)
        d[i] = 1e30f; /* scale-d 0 at the first step: never read */
    blk_wgmma_fence();
    for (int s = 0; s < K / 16; s++) {
        /* k step s: 16 rows further (N-major, 2048 bytes) or 32 bytes (K-major) */
        const unsigned long long db = bdesc(KMAJ ? 32 * s : 2048 * s);
        if (N == 64)
            blk_wgmma_m64n64k16_f32_f16_rs<1>(d, a[s], db, s > 0);
        else
            blk_wgmma_m64n32k16_f32_bf16_rs<0>(d, a[s], db, s > 0);
    }
    blk_wgmma_commit();
    blk_wgmma_wait<0>();
    for (int i = 0; i < N / 2; i++)
        got[16 * w + g + 8 * ((i >> 1) & 1)][8 * (i >> 2) + 2 * q + (i & 1)] = d[i];
}

static void one(int n, bool bf, bool kmaj, const char *what)
{
    N = n, BF = bf, KMAJ = kmaj;
    for (int r = 0; r < 64; r++)
        for (int k = 0; k < K; k++) {
            A[r][k] = val();
            B[k][r] = val();
        }
    memset(got, 0, sizeof got);
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    char err[512] = "";
    BlkEmuStats st;
    memset(&st, 0, sizeof st);
    if (blk_emu_launch(k_rs, grid, 128, SMEM, params, &st, err, sizeof err)) {
        CHECK(false, "%s: launch: %s", what, err);
        return;
    }
    int bad = 0;
    for (int m = 0; m < 64; m++)
        for (int j = 0; j < N; j++) {
            float want = 0;
            for (int s = 0; s < K / 16; s++) {
                double acc = 0;
                for (int k = 16 * s; k < 16 * s + 16; k++)
                    acc += (double)A[m][k] * B[k][j];
                want = (float)(acc + want);
            }
            if (got[m][j] != want && bad++ < 3)
                CHECK(false, "%s: D[%d][%d] = %.9g, expected %.9g", what, m, j, got[m][j], want);
        }
    CHECK(st.wgmma == K / 16 && st.wgmma_flops == 2LL * 64 * N * 16 * (K / 16),
          "%s: --stats wgmma %lld (%lld FLOP), expected %d", what, st.wgmma, st.wgmma_flops,
          K / 16);
}

int main()
{
    one(64, false, false, "m64n64k16 f16, A from registers, B N-major (imm-trans-b 1)");
    one(32, true, true, "m64n32k16 bf16, A from registers, B K-major");
    printf("%s cuda-emu wgmma with A from registers\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
