/* t_wgrace.cpp — the shared-memory operands of wgmma.mma_async while its
 * group is in flight (runtime/emu/blk_emu_wgmma.h; ctest emu_wgrace, emu.sh
 * mode wgrace), kernels written by hand against the wrappers. PTX ISA
 * 9.7.15.4 / 9.7.15.7.3: the async proxy completes an mma_async only when a
 * wgmma.wait_group retires its group, so its operands may be read until
 * then and a write to them before that wait races with the read:
 *   - a generic store to an operand byte before the retiring wait fails
 *     the launch with the byte's offset; the same store after the wait,
 *     or to a byte of the tile the mma_async does not read, passes;
 *   - with two groups in flight (one per ring slot), wait_group 1 retires
 *     exactly the older: the accumulator holds its product alone, its slot
 *     may be written, the younger's may not (the failure comes at the
 *     wait_group 0 that retires it, naming the younger slot's offset);
 *   - a cp.async or a TMA load issued into an operand not yet retired
 *     fails at issue (the copy may land at any time), naming the offset.
 * Exit 0 when every check holds. */
#include "blk_emu.h"
#include "emu_check.h"

enum { SMEM = 32768 + 64, SLOT = 16384 };
static int launch(void (*k)(int), char *err, size_t n)
{
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    err[0] = 0;
    return blk_emu_launch(k, grid, 128, SMEM, params, nullptr, err, n);
}
static void run(void (*k)(int), const char *what)
{
    char err[512];
    if (launch(k, err, sizeof err))
        CHECK(false, "%s: launch: %s", what, err);
}
/* the launch must fail with `want` in its message */
static void refuse(void (*k)(int), const char *want, const char *what)
{
    char err[512];
    int rc = launch(k, err, sizeof err);
    CHECK(rc != 0 && strstr(err, want), "%s: expected a failure with '%s': rc %d, '%s'", what,
          want, rc, err);
}

static unsigned short bf(double v) { return __float2bfloat16_rn((float)v).x; }
/* slot s's A (64 x 64) and B (64 rows of n, 64 of k): small integers */
static double Av(int s, int m, int k) { return (double)((m * 5 + k * 3 + s) % 9 - 4); }
static double Bv(int s, int k, int n) { return (double)((k * 7 + n + 2 * s) % 5 - 2); }

/* Byte offset of element (r, k) of a 64 x 64 bf16 K-major tile at `base`
 * in the 128B swizzle (PTX ISA 9.7.15.5.1.2.1.3: rows of 128 bytes, the
 * 16-byte chunks of row r XOR'd with r % 8). */
static long long at(long long base, int r, int k)
{
    return base + r * 128 + ((k / 8) ^ (r % 8)) * 16 + k % 8 * 2;
}
/* its descriptor: start >> 4, LBO 16 (unused), SBO 1024, mode 1 */
static unsigned long long desc128(long long start)
{
    return (unsigned long long)(start >> 4) | (16ull >> 4) << 16 | (1024ull >> 4) << 32 |
           1ull << 62;
}

/* Every thread fills slot s (A at SLOT s, B at SLOT s + 8192). */
static void fill(unsigned char *sm, int s)
{
    for (int e = (int)threadIdx.x; e < 64 * 64; e += 128) {
        const int r = e / 64, k = e % 64;
        unsigned short a = bf(Av(s, r, k)), b = bf(Bv(s, k, r));
        memcpy(sm + at((long long)SLOT * s, r, k), &a, 2);
        memcpy(sm + at((long long)SLOT * s + 8192, r, k), &b, 2);
    }
}
/* One wgmma m64n64k16 on slot s's first 16 k, then commit. */
static void mma(float *d, int s)
{
    blk_wgmma_m64n64k16_f32_bf16<0, 0>(d, desc128((long long)SLOT * s),
                                       desc128((long long)SLOT * s + 8192), 1);
    blk_wgmma_commit();
}

static float got[2][64][64]; /* D after the first / the last wait */
/* Figure 149: d_i of warp w, lane at row 16 w + lane / 4 + 8 ((i >> 1) & 1),
 * column 8 (i >> 2) + 2 (lane % 4) + (i & 1) */
static void store_d(const float *d, int which)
{
    const int t = (int)threadIdx.x, w = t / 32, lane = t % 32;
    for (int i = 0; i < 32; i++)
        got[which][16 * w + lane / 4 + 8 * ((i >> 1) & 1)][8 * (i >> 2) + 2 * (lane % 4) + (i & 1)] =
            d[i];
}
static double want(int slots, int m, int n)
{
    double v = 0;
    for (int s = 0; s < slots; s++)
        for (int k = 0; k < 16; k++)
            v += (double)(float)Av(s, m, k) * Bv(s, k, n);
    return v;
}
static void check_d(int which, int slots, const char *what)
{
    int bad = 0;
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < 64; n++)
            if (got[which][m][n] != (float)want(slots, m, n) && bad++ < 3)
                CHECK(false, "%s: D[%d][%d] = %g, expected %g", what, m, n, got[which][m][n],
                      want(slots, m, n));
}

/* ------------------------------------------------------------ one group */

enum { W_BEFORE, W_AFTER, W_UNREAD, W_CPASYNC, W_CPASYNC_AFTER, W_TMA };
static int what;
alignas(64) static BlkTensorMap map;
alignas(16) static unsigned short gsrc[64 * 64];
static void k_one(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)(sm + 32768);
    const unsigned short x = bf(100);
    float d[32] = {0};
    if (threadIdx.x == 0) {
        blk_mbar_init(bar, 1);
        blk_fence_mbar_init();
    }
    fill(sm, 0);
    blk_fence_proxy_async();
    __syncthreads();
    blk_wgmma_fence();
    mma(d, 0);
    if (threadIdx.x == 0) {
        if (what == W_BEFORE) /* A[0][0]: read by this mma_async */
            memcpy(sm + at(0, 0, 0), &x, 2);
        else if (what == W_UNREAD) /* A[0][16] and B[5][40]: k >= 16, not read */
            memcpy(sm + at(0, 0, 16), &x, 2), memcpy(sm + at(8192, 5, 40), &x, 2);
        else if (what == W_CPASYNC) /* 16 bytes onto B row 3's chunk 1 */
            blk_cp_async16(sm + at(8192, 3, 8), gsrc, 16);
        else if (what == W_TMA) { /* a box onto the whole slot's A */
            blk_mbar_arrive_expect_tx(bar, 8192);
            blk_tma_load_2d(sm, &map, 0, 0, bar);
        }
    }
    blk_wgmma_wait<0>();
    store_d(d, 0);
    if (threadIdx.x == 0 && what == W_AFTER)
        memcpy(sm + at(0, 0, 0), &x, 2);
    if (threadIdx.x == 0 && what == W_CPASYNC_AFTER) {
        blk_cp_async16(sm + at(8192, 3, 8), gsrc, 16);
        blk_cp_commit();
        blk_cp_wait<0>();
    }
    __syncthreads();
}

static void one_tests()
{
    unsigned long long dim[2] = {64, 64}, str[1] = {128};
    unsigned box[2] = {64, 64}, es[2] = {1, 1};
    CHECK(blk_emu_tmap_encode(&map, 9 /* BF16 */, 2, gsrc, dim, str, box, es, 0, 3, 0, 0) == 0,
          "encode");
    what = W_BEFORE;
    refuse(k_one, "shared byte offset 0, an operand of a wgmma.mma_async, changed "
                  "before the wgmma.wait_group that retires it", "a store before the wait");
    what = W_AFTER;
    run(k_one, "a store after the wait");
    check_d(0, 1, "a store after the wait");
    what = W_UNREAD;
    run(k_one, "a store to bytes the mma_async does not read");
    check_d(0, 1, "a store to bytes the mma_async does not read");
    /* B row 3, k 8..15: chunk 1 ^ 3 = 2 of row 3: 8192 + 3 * 128 + 32 */
    what = W_CPASYNC;
    refuse(k_one, "cp.async writes shared byte offset 8608, an operand of a wgmma.mma_async not "
                  "yet retired by a wgmma.wait_group", "cp.async before the wait");
    what = W_CPASYNC_AFTER;
    run(k_one, "cp.async after the wait");
    what = W_TMA;
    refuse(k_one, "cp.async.bulk.tensor writes shared byte offset 0, an operand of a "
                  "wgmma.mma_async not yet retired", "TMA before the wait");
}

/* ------------------------------------------------------------ two groups */

static int late; /* which slot thread 0 writes after wait_group 1 */
static void k_two(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const unsigned short x = bf(100);
    float d[32] = {0};
    fill(sm, 0);
    fill(sm, 1);
    blk_fence_proxy_async();
    __syncthreads();
    blk_wgmma_fence();
    mma(d, 0); /* group 1 reads slot 0 */
    mma(d, 1); /* group 2 reads slot 1 */
    blk_wgmma_wait<1>();
    store_d(d, 0); /* group 1 only */
    if (threadIdx.x == 0)
        memcpy(sm + at((long long)SLOT * late + 8192, 7, 0), &x, 2); /* B[7][0] */
    blk_wgmma_wait<0>();
    store_d(d, 1);
}

static void two_tests()
{
    late = 0;
    run(k_two, "wait_group 1, then a store to the older group's slot");
    check_d(0, 1, "after wait_group 1 (the older group)");
    check_d(1, 2, "after wait_group 0 (both)");
    late = 1; /* B[7][0] of slot 1: 16384 + 8192 + 7 * 128 + (0 ^ 7) * 16 */
    refuse(k_two, "shared byte offset 25584, an operand of a wgmma.mma_async, changed before "
                  "the wgmma.wait_group that retires it", "wait_group 1, then a store to the "
                  "younger group's slot");
}

int main()
{
    one_tests();
    two_tests();
    printf("%s cuda-emu wgmma operands in flight\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
