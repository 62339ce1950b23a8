/* t_plrace.cpp — the race check of plain shared-memory loads and stores
 * (runtime/emu/blk_emu_race.h: blk_emu_sld / blk_emu_sst, what the
 * generated code's BLK_SLD / BLK_SST become under the emulators; ctest
 * emu_plrace, emu.sh mode plrace), compiled twice: cuda-emu (warps of 32)
 * and hip-emu (-DBLK_EMU_HIP: wavefronts of 64). Kernels written by hand
 * from the memory model: two accesses of one byte by different warps, one
 * of them a store, race unless a barrier both take part in orders them.
 *   - RAW, WAR, WAW between warps 0 and 1 (and 3 and 2): no barrier
 *     fails naming the kind, both warps, both operations and the byte;
 *     __syncthreads, bar.sync 1 of the two, or a chain of named barriers
 *     through a third warp passes; barriers that leave the two apart
 *     (warp 0 with 2, warp 1 with 3) fail;
 *   - false sharing: four warps storing and loading different bytes of
 *     one 16-byte chunk (4, 2 and 1 bytes each) with no barrier pass; a
 *     store overlapping another warp's in one byte fails at that byte;
 *   - one warp storing and loading alone passes without a barrier; a
 *     plain access outside the dynamic shared memory is not tracked;
 *   - epochs: warp 1 loads bytes 0..3, a barrier, warp 1 loads bytes
 *     4..7 while warp 0 stores bytes 0..3 passes (the older load is
 *     ordered); warp 0 storing bytes 4..7 there fails;
 *   - a tile loop (the HIP dot's shape: every warp stores its rows, a
 *     barrier, every warp loads rows of the others, a barrier) passes and
 *     sums right; without the first barrier it fails read-after-write,
 *     without the second it fails too (the next step's stores race with
 *     the loads of the step before);
 *   - cuda-emu: a plain store and a cp.async / ldmatrix of another warp
 *     in one chunk, unordered, fail; ordered pass;
 *   - static __shared__ variables (the generated reductions' blk_redN
 *     and scalar atomics' blk_atomN, in blk_emu.h's section
 *     blk_emu_shared): a reduction's per-warp partials stored, a barrier,
 *     read by every warp, a barrier, twice (the loop back edge), and a
 *     cell stored by thread 0 and read by all, pass and sum right;
 *     without the barrier after the stores, the back edge's, or the
 *     cell's, the launch fails naming a byte of the static __shared__
 *     variables.
 * Exit 0 when every check holds. */
#include "blk_emu.h"
#include "emu_check.h"

#define BLK_SLD(x) blk_emu_sld(x)
#define BLK_SST(x) blk_emu_sst(x)

enum { W = BLK_EMU_WARP, NW = 4, SMEM = 4096, X = 256 }; /* X: the byte raced on */
#ifdef BLK_EMU_HIP
static const char *dev = "hip-emu";
#else
static const char *dev = "cuda-emu";
#endif

static int launch(void (*k)(int), char *err, size_t n)
{
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    err[0] = 0;
    return blk_emu_launch(k, grid, NW * W, SMEM, params, nullptr, err, n);
}
static void run(void (*k)(int), const char *what)
{
    char err[512];
    if (launch(k, err, sizeof err))
        CHECK(false, "%s %s: launch: %s", dev, what, err);
}
/* the launch must fail with `want` in its message */
static void refuse(void (*k)(int), const char *want, const char *what)
{
    char err[512];
    int rc = launch(k, err, sizeof err);
    CHECK(rc != 0 && strstr(err, want), "%s %s: expected a failure with '%s': rc %d, '%s'", dev,
          what, want, rc, err);
}
/* Give the other warps the host thread a while (not a synchronization). */
static void later(void)
{
    for (int i = 0; i < 8; i++)
        __nanosleep(0);
}
static int warp() { return (int)threadIdx.x / W; }
static int lane() { return (int)threadIdx.x % W; }

/* ------------------------------------------------ one access, a sync, one access */

enum { RAW, WAR, WAW };
enum { S_NONE, S_BLOCK, S_NAMED, S_SPLIT, S_CHAIN };
static int order, how, wa, wb;
static float got;

/* S_SPLIT: wa with x at barrier 1, wb with y at barrier 2; S_CHAIN: wa
 * with x at 1, then x with wb at 2 (x, y the two other warps) */
static void sync_stage(void)
{
    const int w = warp();
    int x = 0, y;
    while (x == wa || x == wb)
        x++;
    y = 6 - wa - wb - x;
    switch (how) {
    case S_BLOCK: __syncthreads(); break;
    case S_NAMED:
        if (w == wa || w == wb)
            blk_bar_sync(1, 2 * W);
        break;
    case S_SPLIT:
        if (w == wa || w == x)
            blk_bar_sync(1, 2 * W);
        if (w == wb || w == y)
            blk_bar_sync(2, 2 * W);
        break;
    case S_CHAIN:
        if (w == wa || w == x)
            blk_bar_sync(1, 2 * W);
        if (w == wb || w == x)
            blk_bar_sync(2, 2 * W);
        break;
    }
}
/* lane 0 of warp wa accesses the float at X, then lane 1 of warp wb */
static void k_pair(int)
{
    BLK_DYNAMIC_SMEM(sm);
    float *f = (float *)(sm + X);
    const int w = warp(), l = lane();
    if (w == wa && l == 0) {
        if (order == WAR)
            got = BLK_SLD(*f);
        else
            BLK_SST(*f) = 1.5f;
    }
    if (w != wa)
        later();
    sync_stage();
    if (w == wb && l == 1) {
        if (order == RAW)
            got = BLK_SLD(*f);
        else
            BLK_SST(*f) = 2.5f;
    }
    __syncthreads();
}
static void pair(int o, int h, int a, int b, bool ok, const char *what)
{
    static const char *kind[] = {"read-after-write", "write-after-read", "write-after-write"};
    static const char *op[][2] = {{"a plain load", "a plain store"},
                                  {"a plain store", "a plain load"},
                                  {"a plain store", "a plain store"}};
    order = o, how = h, wa = a, wb = b;
    if (ok) {
        got = 0;
        run(k_pair, what);
        if (o == RAW)
            CHECK(got == 1.5f, "%s %s: the load saw %g, not the store's 1.5", dev, what, got);
        return;
    }
    char want[300];
    snprintf(want, sizeof want, "shared-memory race (%s) at shared byte offset %d: %s of warp %d, "
             "%s of warp %d, no barrier joining them since the %s", kind[o], X, op[o][0], b,
             op[o][1], a, o == WAR ? "load" : "store");
    refuse(k_pair, want, what);
}
static void pair_tests()
{
    for (int o = RAW; o <= WAW; o++) {
        pair(o, S_NONE, 0, 1, false, "no barrier");
        pair(o, S_NONE, 3, 2, false, "no barrier (warps 3, 2)");
        pair(o, S_BLOCK, 0, 1, true, "__syncthreads");
        pair(o, S_NAMED, 0, 1, true, "bar.sync 1 of the two warps");
        pair(o, S_SPLIT, 0, 1, false, "barriers 1 (warps 0, 2) and 2 (warps 1, 3)");
        pair(o, S_CHAIN, 0, 1, true, "barrier 1 (warps 0, 2), then 2 (warps 2, 1)");
        pair(o, S_NONE, 1, 1, true, "one warp alone");
    }
}

/* ------------------------------------------------ bytes of one chunk */

static int variant;
/* lane 0 of each warp w: its own bytes of the chunk at X, no barrier;
 * variant 0: 4 bytes at 4w, 1: 2 bytes at 2w, 2: 1 byte at w, 3: warp
 * 1's 4 bytes start at byte 3 (overlapping warp 0's last byte) */
static void k_bytes(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const int w = warp();
    if (lane() != 0) {
        __syncthreads();
        return;
    }
    if (w & 1)
        later();
    unsigned char *c = sm + X;
    switch (variant) {
    case 0: case 3: {
        unsigned *p = (unsigned *)(c + (variant == 3 && w == 1 ? 3 : 4 * w));
        BLK_SST(*p) = (unsigned)w;
        BLK_SST(*p) = BLK_SLD(*p) + 1;
        break;
    }
    case 1: {
        unsigned short *p = (unsigned short *)(c + 2 * w);
        BLK_SST(*p) = (unsigned short)w;
        BLK_SST(*p) = (unsigned short)(BLK_SLD(*p) + 1);
        break;
    }
    case 2:
        BLK_SST(c[w]) = (unsigned char)w;
        BLK_SST(c[w]) = (unsigned char)(BLK_SLD(c[w]) + 1);
        break;
    }
    __syncthreads();
}
/* warp 1 loads bytes 0..3 of the chunk, a barrier, then warp 1 loads
 * bytes 4..7 and warp 0 stores bytes 4 * variant .. + 3 */
static void k_epochs(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned *p = (unsigned *)(sm + X);
    const int w = warp();
    if (w == 1 && lane() == 0)
        got = (float)BLK_SLD(p[0]);
    __syncthreads();
    if (w == 1 && lane() == 0)
        got = (float)BLK_SLD(p[1]);
    if (w == 0 && lane() == 0) {
        later();
        BLK_SST(p[variant]) = 7;
    }
    __syncthreads();
}
/* a plain store to a thread's own array (not shared memory), no barrier */
static void k_local(int)
{
    float a[4];
    BLK_SST(a[lane() % 4]) = 1.0f;
    got = BLK_SLD(a[lane() % 4]);
}
static void byte_tests()
{
    variant = 0;
    run(k_bytes, "four warps, 4 bytes each of one chunk");
    variant = 1;
    run(k_bytes, "four warps, 2 bytes each of one chunk");
    variant = 2;
    run(k_bytes, "four warps, 1 byte each of one chunk");
    variant = 3;
    refuse(k_bytes, "shared-memory race (write-after-write) at shared byte offset 259: a plain "
           "store of warp 1, a plain store of warp 0", "warp 1's store overlapping warp 0's by a byte");
    variant = 0;
    run(k_epochs, "a store of bytes warp 1 loaded before the barrier");
    variant = 1;
    refuse(k_epochs, "shared-memory race (write-after-read) at shared byte offset 260: a plain "
           "store of warp 0, a plain load of warp 1, no barrier joining them since the load",
           "a store of bytes warp 1 loads after the barrier");
    run(k_local, "stores and loads outside the shared memory");
}

/* ------------------------------------------------ a tile loop */

enum { STEPS = 3, ROWS = 8 }; /* ROWS floats per warp, one row per lane < ROWS */
static int drop; /* 0: both barriers; 1: not the one after the stores; 2: not the one after the loads */
static float tsum[NW * 64];
static void k_tiles(int)
{
    BLK_DYNAMIC_SMEM(sm);
    float *t = (float *)sm;
    const int w = warp(), l = lane();
    float s = 0;
    for (int i = 0; i < STEPS; i++) {
        if (l < ROWS)
            BLK_SST(t[w * ROWS + l]) = (float)(100 * i + w * ROWS + l);
        if (drop != 1)
            __syncthreads();
        else
            later(); /* every warp stores first */
        if (l < ROWS) /* the rows of the next warp */
            s += BLK_SLD(t[(w + 1) % NW * ROWS + l]);
        if (drop != 2)
            __syncthreads();
    }
    tsum[threadIdx.x] = s;
}
static void tile_tests()
{
    drop = 0;
    run(k_tiles, "a tile loop, both barriers");
    for (int w = 0; w < NW; w++)
        for (int l = 0; l < ROWS; l++) {
            float v = 0;
            for (int i = 0; i < STEPS; i++)
                v += (float)(100 * i + (w + 1) % NW * ROWS + l);
            CHECK(tsum[w * W + l] == v, "%s tile loop: thread %d summed %g, expected %g", dev,
                  w * W + l, tsum[w * W + l], v);
        }
    drop = 1;
    refuse(k_tiles, "shared-memory race (read-after-write) at shared byte offset 32: a plain "
           "load of warp 0, a plain store of warp 1", "a tile loop, no barrier after the stores");
    drop = 2;
    /* a warp's next stores race with the loads of its rows by the warp
     * before it, which may come before or after them */
    refuse(k_tiles, "shared-memory race (", "a tile loop, no barrier after the loads");
}

/* ------------------------------------------------ static __shared__ (blk_redN, blk_atomN) */

/* which barrier k_red leaves out: 0 none, 1 after the partials' stores,
 * 2 the loop back edge's, 3 after the cell's store */
static int red_drop;
static float rsum[NW * 64];
static unsigned long long rcell[NW * 64];
static void k_red(int)
{
    __shared__ float red[NW];
    __shared__ unsigned long long cell;
    const int w = warp(), l = lane();
    float total = 0;
    for (int step = 0; step < 2; step++) {
        if (l == 0)
            BLK_SST(red[w]) = (float)(10 * step + w + 1);
        if (w != 0)
            later();
        if (red_drop != 1)
            __syncthreads();
        float acc = BLK_SLD(red[0]);
        for (int i = 1; i < NW; i++)
            acc = acc + BLK_SLD(red[i]);
        total += acc;
        if (red_drop != 2)
            __syncthreads();
    }
    rsum[threadIdx.x] = total;
    if (threadIdx.x == 0) {
        const unsigned long long v = 7;
        memcpy(&BLK_SST(cell), &v, sizeof v);
    }
    if (red_drop != 3)
        __syncthreads();
    unsigned long long v;
    memcpy(&v, &BLK_SLD(cell), sizeof v);
    rcell[threadIdx.x] = v;
    __syncthreads();
}
/* the launch must fail with both texts in its message */
static void refuse2(void (*k)(int), const char *want, const char *want2, const char *what)
{
    char err[512];
    int rc = launch(k, err, sizeof err);
    CHECK(rc != 0 && strstr(err, want) && strstr(err, want2),
          "%s %s: expected a failure with '%s' ... '%s': rc %d, '%s'", dev, what, want, want2, rc,
          err);
}
static void static_tests()
{
    red_drop = 0;
    run(k_red, "static __shared__ partials and cell, every barrier");
    float want = 0;
    for (int step = 0; step < 2; step++)
        for (int w = 0; w < NW; w++)
            want += (float)(10 * step + w + 1);
    for (int t = 0; t < NW * W; t++)
        CHECK(rsum[t] == want && rcell[t] == 7, "%s static __shared__: thread %d got %g and %llu, "
              "expected %g and 7", dev, t, rsum[t], rcell[t], want);
    /* which access fails first follows the fibers' order (warp 0 loads
     * before warp 1 stores, or warp 3 loads the cell before thread 0
     * stores it): either kind names the static bytes */
    static const char *what[] = {"", "no barrier after the partials",
                                 "no barrier at the back edge", "no barrier after the cell"};
    for (red_drop = 1; red_drop <= 3; red_drop++)
        refuse2(k_red, "shared-memory race (", " of the static __shared__ variables: a plain ",
                what[red_drop]);
}

#ifndef BLK_EMU_HIP
/* ------------------------------------------------ with cp.async / ldmatrix (CUDA) */

alignas(16) static unsigned gsrc[W * 4];
/* 0: warp 0 stores plainly into row 0 of the rows at X, warp 1 then
 * cp.asyncs into it; 1: warp 0 stores the 32 rows plainly, warp 1
 * ldmatrix-reads them; sync: a __syncthreads between */
static int sync_between;
static void k_mixed(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const int w = warp(), l = lane();
    if (w == 0)
        BLK_SST(*(unsigned *)(sm + X + 16 * l)) = 5u;
    if (w != 0)
        later();
    if (sync_between)
        __syncthreads();
    if (w == 1) {
        if (variant == 0) {
            blk_cp_async16(sm + X + 16 * l, &gsrc[4 * l], 16);
            blk_cp_commit();
            blk_cp_wait<0>();
        } else {
            unsigned r[4];
            blk_ldmatrix_x4(r, sm + X + 16 * l);
        }
    }
    __syncthreads();
}
static void mixed_tests()
{
    variant = 0, sync_between = 0;
    refuse(k_mixed, "shared-memory race (write-after-write) at shared byte offset 256: a "
           "cp.async of warp 1, a plain store of warp 0", "a cp.async over another warp's store");
    variant = 1;
    refuse(k_mixed, "shared-memory race (read-after-write) at shared byte offset 256: an "
           "ldmatrix read of warp 1, a plain store of warp 0", "an ldmatrix of another warp's store");
    sync_between = 1;
    run(k_mixed, "an ldmatrix of another warp's store after __syncthreads");
    variant = 0;
    run(k_mixed, "a cp.async over another warp's store after __syncthreads");
}
#endif

int main()
{
    pair_tests();
    byte_tests();
    tile_tests();
    static_tests();
#ifndef BLK_EMU_HIP
    mixed_tests();
#endif
    printf("%s %s plain shared-memory loads / stores across warps\n", fails ? "FAIL" : "ok", dev);
    return fails ? 1 : 0;
}
