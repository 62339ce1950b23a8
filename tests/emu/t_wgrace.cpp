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
 *     fails at issue (the copy may land at any time), naming the offset;
 *   - an mma_async that reads what a TMA load in flight writes (its
 *     mbarrier not waited on yet) fails; after the wait it passes;
 *   - the same for B of a wgmma with A from registers (9.7.15.5.2 "d, a,
 *     b-desc": only B is in shared memory), the operand flash attention's
 *     p v group keeps in flight (gpu_wgmma.c keep_plan);
 *   - a 3-slot cp.async ring of such groups, each kept in flight across
 *     the loop's back edge until the next step's wait_group 0 (the shape
 *     of keep_plan, written here without the generator): refilling the
 *     slot S - 2 = 1 step ahead passes, S - 1 = 2 steps ahead writes the
 *     slot of the group still in flight and fails at the cp.async.
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

/* The block's mbarrier (after 32 KiB of tiles) initialized for one
 * arrival, the tiles zeroed and made visible to the async proxy. */
static unsigned long long *bar_and_zeros(unsigned char *sm)
{
    unsigned long long *bar = (unsigned long long *)(sm + 32768);
    if (threadIdx.x == 0) {
        blk_mbar_init(bar, 1);
        blk_fence_mbar_init();
    }
    fill(sm, 0);
    blk_fence_proxy_async();
    __syncthreads();
    return bar;
}

enum { W_BEFORE, W_AFTER, W_UNREAD, W_CPASYNC, W_CPASYNC_AFTER, W_TMA };
static int what;
alignas(64) static BlkTensorMap map;
alignas(16) static unsigned short gsrc[64 * 64];
static void k_one(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = bar_and_zeros(sm);
    const unsigned short x = bf(100);
    float d[32] = {0};
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

/* ------------------------------------------------------------ a TMA load in flight */

/* A box by TMA onto the slot's A, then (after the barrier, with no thread
 * waiting on its mbarrier) an mma_async that reads it: the copy may land
 * before or after the read, so the read races with it (the shape of a ring
 * refilled one step too early whose wgmma is issued after the refill, as
 * flash attention's deferred p v is). Waiting first passes. */
static bool early_wait;
static void k_early(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = bar_and_zeros(sm);
    float d[32] = {0};
    if (threadIdx.x == 0) {
        blk_mbar_arrive_expect_tx(bar, 8192);
        blk_tma_load_2d(sm, &map, 0, 0, bar);
    }
    __syncthreads();
    if (early_wait)
        blk_mbar_wait_parity(bar, 0);
    blk_wgmma_fence();
    mma(d, 0);
    blk_wgmma_wait<0>();
    if (!early_wait)
        blk_mbar_wait_parity(bar, 0);
    __syncthreads();
}

static void early_tests()
{
    early_wait = false;
    refuse(k_early, "wgmma.mma_async reads shared byte offset 0, which a cp.async.bulk.tensor "
                    "load in flight writes", "wgmma before the TMA load's mbarrier wait");
    early_wait = true;
    run(k_early, "wgmma after the TMA load's mbarrier wait");
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

/* ------------------------------------------------- A from registers */

/* Thread t's A fragment of k step 0 (Figure 148: warp w rows 16 w + g,
 * + 8 for a2 a3 a6 a7; columns 2 q + (i & 1), + 8 for a4 .. a7) of slot
 * s's A, four .f16x2 registers, low half first. */
static void afrag(unsigned a[4], int s)
{
    const int t = (int)threadIdx.x, w = t / 32, g = t % 32 / 4, q = t % 4;
    for (int i = 0; i < 8; i++) {
        const int row = 16 * w + g + ((i >> 1) & 1) * 8, col = 2 * q + (i & 1) + (i >= 4 ? 8 : 0);
        const unsigned h = bf(Av(s, row, col));
        a[i / 2] = i & 1 ? a[i / 2] | h << 16 : h;
    }
}

enum { R_BEFORE, R_CPASYNC, R_AFTER };
static void k_rs(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const unsigned short x = bf(100);
    float d[32] = {0};
    unsigned a[4];
    fill(sm, 0);
    afrag(a, 0);
    blk_fence_proxy_async();
    __syncthreads();
    blk_wgmma_fence();
    blk_wgmma_m64n64k16_f32_bf16_rs<0>(d, a, desc128(8192), 1);
    blk_wgmma_commit();
    if (threadIdx.x == 0 && what == R_BEFORE) /* B[7][0]: 8192 + 7 * 128 + (0 ^ 7) * 16 */
        memcpy(sm + at(8192, 7, 0), &x, 2);
    else if (threadIdx.x == 0 && what == R_CPASYNC) /* B row 5, k 0..7: chunk 0 ^ 5 */
        blk_cp_async16(sm + at(8192, 5, 0), gsrc, 16);
    blk_wgmma_wait<0>();
    store_d(d, 0);
    if (threadIdx.x == 0 && what == R_AFTER) {
        blk_cp_async16(sm + at(8192, 5, 0), gsrc, 16);
        blk_cp_commit();
        blk_cp_wait<0>();
    }
    __syncthreads();
}

static void rs_tests()
{
    what = R_BEFORE;
    refuse(k_rs, "shared byte offset 9200, an operand of a wgmma.mma_async, changed before the "
                 "wgmma.wait_group that retires it", "A from registers: a store to B before the "
                 "wait");
    what = R_CPASYNC;
    refuse(k_rs, "cp.async writes shared byte offset 8912, an operand of a wgmma.mma_async not "
                 "yet retired by a wgmma.wait_group", "A from registers: cp.async into B before "
                 "the wait");
    what = R_AFTER;
    run(k_rs, "A from registers: cp.async into B after the wait");
    check_d(0, 1, "A from registers: cp.async into B after the wait");
}

/* -------------------------- a ring of register-A groups kept in flight */

enum { STEPS = 6, RING = 3, BSLOT = 8192 }; /* B of slot j at j * 8192 */
static int dist; /* how many steps ahead the ring is refilled */
static unsigned short gring[STEPS][64 * 64]; /* step i's B, [N][K] */
/* step i's B element (n, k) and its A */
static double Bs(int i, int n, int k) { return (double)((k * 3 + n + 5 * i) % 7 - 3); }
static double As(int i, int m, int k) { return (double)((m + 2 * k + i) % 5 - 2); }

/* Step i's B into ring slot i % RING by thread 0 alone (so that the
 * first chunk written is row 0's first, whatever order the threads run
 * in): 64 rows of 128 bytes, 8 chunks each, in the 128B swizzle, one
 * 16-byte cp.async a chunk. */
static void ring_load(unsigned char *sm, int i)
{
    for (int c = 0; c < 64 * 8 && threadIdx.x == 0; c++) {
        const int n = c / 8, k = c % 8 * 8;
        blk_cp_async16(sm + at((long long)BSLOT * (i % RING), n, k), &gring[i][n * 64 + k], 16);
    }
}
/* acc += A_i B_i over STEPS steps (k 0..15 of each), each group kept in
 * flight across the back edge until the next step's wait_group 0, as
 * gpu_wgmma.c keep_plan emits it: the ring is refilled `dist` steps ahead
 * at the top of each step, after the barrier and before that wait, so
 * the refill of step i + dist lands in slot (i + dist) % 3 while step i -
 * 1's group still reads slot (i - 1) % 3 */
static void k_ring(int)
{
    BLK_DYNAMIC_SMEM(sm);
    float d[32] = {0};
    unsigned a[4]; /* live across the back edge: the group in flight reads it */
    for (int i = 0; i < dist; i++) {
        ring_load(sm, i);
        blk_cp_commit();
    }
    for (int i = 0; i < STEPS; i++) {
        blk_cp_wait<0>(); /* this thread's copies of step i have landed */
        blk_fence_proxy_async();
        __syncthreads(); /* ... and every thread's */
        if (i + dist < STEPS)
            ring_load(sm, i + dist);
        blk_cp_commit();
        /* flash attention's S = q k^T would be issued here; its wait: */
        blk_wgmma_wait<0>(); /* retires step i - 1's group */
        const int t = (int)threadIdx.x, w = t / 32, g = t % 32 / 4, q = t % 4;
        for (int j = 0; j < 8; j++) {
            const int row = 16 * w + g + ((j >> 1) & 1) * 8, col = 2 * q + (j & 1) + (j >= 4 ? 8 : 0);
            const unsigned h = bf(As(i, row, col));
            a[j / 2] = j & 1 ? a[j / 2] | h << 16 : h;
        }
        blk_wgmma_fence();
        blk_wgmma_m64n64k16_f32_bf16_rs<0>(d, a, desc128((long long)BSLOT * (i % RING)), 1);
        blk_wgmma_commit(); /* no wait: in flight across the back edge */
    }
    blk_wgmma_wait<0>();
    store_d(d, 0);
}

static void ring_tests()
{
    for (int i = 0; i < STEPS; i++)
        for (int n = 0; n < 64; n++)
            for (int k = 0; k < 64; k++)
                gring[i][n * 64 + k] = bf(Bs(i, n, k));
    dist = RING - 2;
    run(k_ring, "a 3-slot ring refilled 1 step ahead under a group kept in flight");
    int bad = 0;
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < 64; n++) {
            double v = 0;
            for (int i = 0; i < STEPS; i++) {
                double p = 0;
                for (int k = 0; k < 16; k++)
                    p += As(i, m, k) * Bs(i, n, k);
                v = (float)(v + p);
            }
            if (got[0][m][n] != (float)v && bad++ < 3)
                CHECK(false, "ring: D[%d][%d] = %g, expected %g", m, n, got[0][m][n], v);
        }
    /* step 1 refills slot (1 + 2) % 3 = 0 while step 0's group reads it:
     * thread 0's first chunk, B row 0 k 0..7, at offset 0 */
    dist = RING - 1;
    refuse(k_ring, "cp.async writes shared byte offset 0, an operand of a wgmma.mma_async not "
                   "yet retired by a wgmma.wait_group", "a 3-slot ring refilled 2 steps ahead "
                   "under a group kept in flight");
}

int main()
{
    one_tests();
    early_tests();
    two_tests();
    rs_tests();
    ring_tests();
    printf("%s cuda-emu wgmma operands in flight\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
