/* t_cprace.cpp — the cross-warp cp.async / ldmatrix race check of
 * cuda-emu (runtime/emu/blk_emu_race.h; ctest emu_cprace, emu.sh mode
 * cprace), kernels written by hand against the wrappers, from the PTX
 * ISA's memory consistency model: a cp.async's bytes are visible to
 * another warp only after the issuing thread's wait_group and a barrier
 * both warps take part in, and a slot may be refilled only after a
 * barrier that follows every other warp's read of it.
 *   - write-after-read: warp 1 ldmatrix-reads 32 rows, warp 0 then
 *     cp.asyncs into them: with no barrier between, the launch fails
 *     naming both warps, the op and offset; __syncthreads between passes;
 *   - read-after-write: warp 0's cp.async lands (its wait_group), warp 1
 *     ldmatrix-reads it: no barrier fails, __syncthreads passes (and the
 *     read sees the copied bytes); a read while the copy is in flight
 *     (a barrier, but before the wait_group) fails;
 *   - one warp writing and reading alone passes without any barrier;
 *   - named barriers: bar.sync 1, 64 taken by the two warps passes;
 *     warp 0 with warp 1 at barrier 1 and warp 2 with warp 3 at barrier
 *     2 leaves 0 and 2 unordered (fails); barrier 1 by 0 and 1, then
 *     barrier 2 by 1 and 2, orders 0 before 2 (passes);
 *   - a 2-slot ring of 2 warps, each warp reading the half the other
 *     warp copied (the shape of gpu_mem.c's cp.async ring, D = S - 1):
 *     the barrier after the wait_group and before the refill passes and
 *     computes the right sum; no barrier fails (read-after-write); the
 *     barrier placed after the refill fails (write-after-read).
 * Exit 0 when every check holds. */
#include "blk_emu.h"
#include "emu_check.h"

enum { SMEM = 4096, R = 1024 }; /* the rows read: 32 chunks at R */
static int launch(void (*k)(int), int threads, char *err, size_t n)
{
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    err[0] = 0;
    return blk_emu_launch(k, grid, threads, SMEM, params, nullptr, err, n);
}
static void run(void (*k)(int), int threads, const char *what)
{
    char err[512];
    if (launch(k, threads, err, sizeof err))
        CHECK(false, "%s: launch: %s", what, err);
}
/* the launch must fail with `want` in its message */
static void refuse(void (*k)(int), int threads, const char *want, const char *what)
{
    char err[512];
    int rc = launch(k, threads, err, sizeof err);
    CHECK(rc != 0 && strstr(err, want), "%s: expected a failure with '%s': rc %d, '%s'", what,
          want, rc, err);
}

alignas(16) static unsigned gsrc[64 * 4 * 8]; /* 16 bytes per chunk, 8 steps */

/* Warp-wide: lane l copies 16 bytes of gsrc into row l at R and waits. */
static void copy_rows(unsigned char *sm)
{
    const int l = (int)threadIdx.x % 32;
    blk_cp_async16(sm + R + 16 * l, &gsrc[4 * l], 16);
    blk_cp_commit();
    blk_cp_wait<0>();
}
static unsigned seen; /* lane 0's first register of the last read */
/* Warp-wide: ldmatrix.x4 of the 32 rows at R. */
static void read_rows(unsigned char *sm)
{
    unsigned r[4];
    blk_ldmatrix_x4(r, sm + R + 16 * ((int)threadIdx.x % 32));
    if (threadIdx.x % 32 == 0)
        seen = r[0];
}
/* Give the other warps the host thread a while (not a synchronization). */
static void later(void)
{
    for (int i = 0; i < 8; i++)
        __nanosleep(0);
}

/* ------------------------------------------------ one access, a sync, one access */

enum { RAW, WAR, INFLIGHT };
enum { S_NONE, S_BLOCK, S_NAMED, S_SPLIT, S_CHAIN };
static int order, how, wa, wb; /* warp wa's access, the sync, warp wb's */

/* S_SPLIT: wa with x at barrier 1, wb with y at barrier 2; S_CHAIN: wa
 * with x at 1, then x with wb at 2 (x, y the two other warps of four) */
static void sync_stage(void)
{
    const int w = (int)threadIdx.x / 32;
    int x = 0, y;
    while (x == wa || x == wb)
        x++;
    y = 6 - wa - wb - x;
    switch (how) {
    case S_BLOCK: __syncthreads(); break;
    case S_NAMED:
        if (w == wa || w == wb)
            blk_bar_sync(1, 64);
        break;
    case S_SPLIT:
        if (w == wa || w == x)
            blk_bar_sync(1, 64);
        if (w == wb || w == y)
            blk_bar_sync(2, 64);
        break;
    case S_CHAIN:
        if (w == wa || w == x)
            blk_bar_sync(1, 64);
        if (w == wb || w == x)
            blk_bar_sync(2, 64);
        break;
    }
}
static void k_pair(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const int w = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32;
    if (w == wa) {
        if (order == RAW)
            copy_rows(sm);
        else if (order == WAR)
            read_rows(sm);
        else { /* issued and committed, not waited on until after the read */
            blk_cp_async16(sm + R + 16 * l, &gsrc[4 * l], 16);
            blk_cp_commit();
        }
    }
    if (w != wa)
        later();
    sync_stage();
    if (w == wb) {
        if (order == WAR)
            copy_rows(sm);
        else
            read_rows(sm);
    }
    if (order == INFLIGHT && w == wa) {
        later(); /* the read comes first */
        blk_cp_wait<0>();
    }
    __syncthreads();
}
static void pair(int o, int h, int a, int b, bool ok, const char *want, const char *what)
{
    order = o, how = h, wa = a, wb = b;
    seen = 0;
    if (ok) {
        run(k_pair, 128, what);
        if (o == RAW)
            CHECK(seen == gsrc[0], "%s: the read saw %#x, the copy %#x", what, seen, gsrc[0]);
    } else {
        refuse(k_pair, 128, want, what);
    }
}

static void pair_tests()
{
    /* warp 0's cp.async, lane 0 first: row 0 at R */
    pair(WAR, S_NONE, 1, 0, false,
         "shared-memory race (write-after-read) at shared byte offset 1024: a cp.async of warp "
         "0, an ldmatrix read of warp 1, no barrier joining them since the read",
         "a cp.async into rows another warp read, no barrier");
    pair(WAR, S_BLOCK, 1, 0, true, "", "a cp.async into rows another warp read, __syncthreads");
    pair(RAW, S_NONE, 0, 1, false,
         "shared-memory race (read-after-write) at shared byte offset 1024: an ldmatrix read of "
         "warp 1, a landed cp.async of warp 0, no barrier joining them since its wait_group",
         "an ldmatrix of rows another warp's cp.async landed, no barrier");
    pair(RAW, S_BLOCK, 0, 1, true, "", "an ldmatrix of rows another warp's cp.async landed, "
         "__syncthreads");
    pair(INFLIGHT, S_BLOCK, 0, 1, false,
         "shared-memory race (read-after-write) at shared byte offset 1024: an ldmatrix read of "
         "warp 1, a cp.async in flight of warp 0",
         "an ldmatrix of rows a cp.async in flight writes, before its wait_group");
    pair(RAW, S_NONE, 0, 0, true, "", "one warp's cp.async, wait_group, ldmatrix");
    pair(WAR, S_NONE, 0, 0, true, "", "one warp's ldmatrix, then cp.async into the rows");
    pair(RAW, S_NAMED, 0, 1, true, "", "read-after-write, bar.sync 1, 64 by both warps");
    pair(WAR, S_NAMED, 1, 0, true, "", "write-after-read, bar.sync 1, 64 by both warps");
    pair(RAW, S_SPLIT, 0, 2, false, "read-after-write) at shared byte offset 1024: an ldmatrix "
         "read of warp 2, a landed cp.async of warp 0", "read-after-write, warp 0 at barrier 1 "
         "and warp 2 at barrier 2");
    pair(WAR, S_SPLIT, 2, 0, false, "write-after-read) at shared byte offset 1024: a cp.async of "
         "warp 0, an ldmatrix read of warp 2", "write-after-read, warp 2 at barrier 1 and warp 0 "
         "at barrier 2");
    pair(RAW, S_CHAIN, 0, 2, true, "", "read-after-write ordered through warp 1 (barriers 1, 2)");
    pair(WAR, S_CHAIN, 2, 0, true, "", "write-after-read ordered through warp 1 (barriers 1, 2)");
}

/* ------------------------------------------------------------ a ring */

enum { STEPS = 6, SLOT = 1024 }; /* slot s at s * SLOT: 64 chunks, thread t's chunk t */
enum { B_RIGHT, B_NONE, B_LATE };
static int bar_at;
static unsigned sum[64];
/* step i's chunk of thread t into slot i % 2 */
static void ring_copy(unsigned char *sm, int i)
{
    const int t = (int)threadIdx.x;
    blk_cp_async16(sm + (i % 2) * SLOT + 16 * t, &gsrc[(i * 64 + t) * 4 % (64 * 4 * 8)], 16);
}
/* Each warp reads with ldmatrix.x4 the 32 rows of the other warp's half
 * of slot i % 2; refilled one step ahead (D = S - 1). Each warp lets the
 * other read before it goes on: then a late barrier shows as a refill of
 * rows the other warp read the step before (else it could show as a read
 * of rows whose refill is in flight, the same bug). */
static void k_ring(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const int t = (int)threadIdx.x, w = t / 32, l = t % 32;
    unsigned acc = 0;
    ring_copy(sm, 0);
    blk_cp_commit();
    for (int i = 0; i < STEPS; i++) {
        blk_cp_wait<0>(); /* this thread's copies of step i have landed */
        if (bar_at == B_RIGHT)
            __syncthreads(); /* ... everyone's; slot (i + 1) % 2's readers are done */
        if (i + 1 < STEPS)
            ring_copy(sm, i + 1);
        blk_cp_commit();
        if (bar_at == B_LATE)
            __syncthreads(); /* after the refill: too late for its slot */
        unsigned r[4];
        blk_ldmatrix_x4(r, sm + (i % 2) * SLOT + 16 * (32 * (1 - w) + l));
        acc += r[0] + r[1] + r[2] + r[3];
        later(); /* the other warp's reads of step i come first */
    }
    sum[t] = acc;
}
static void ring_tests()
{
    bar_at = B_RIGHT;
    run(k_ring, 64, "a 2-slot ring, the barrier after the wait_group, before the refill");
    for (int t = 0; t < 64; t++) { /* lane l's registers: a 32-bit word of each matrix */
        const int w = t / 32, l = t % 32;
        unsigned v = 0;
        for (int i = 0; i < STEPS; i++)
            for (int m = 0; m < 4; m++) { /* row 8m + l / 4 of the other half, word l % 4 */
                const int row = 32 * (1 - w) + 8 * m + l / 4;
                v += gsrc[(i * 64 + row) * 4 % (64 * 4 * 8) + l % 4];
            }
        CHECK(sum[t] == v, "ring: thread %d summed %#x, expected %#x", t, sum[t], v);
    }
    bar_at = B_NONE;
    /* warp 0 reads warp 1's half of slot 0 (row 32 at 512), landed at
     * step 0's wait */
    refuse(k_ring, 64, "shared-memory race (read-after-write) at shared byte offset 512: an "
           "ldmatrix read of warp 0, a landed cp.async of warp 1, no barrier joining them since "
           "its wait_group", "a 2-slot ring, no barrier between the wait_group and the reads");
    /* step 1 refills slot 0's half 0, read by warp 1 at step 0: the first
     * copy issued is thread 30's (the last of warp 0 to reach the
     * barrier runs on first), row 30 at 480 */
    bar_at = B_LATE;
    refuse(k_ring, 64, "shared-memory race (write-after-read) at shared byte offset 480: a "
           "cp.async of warp 0, an ldmatrix read of warp 1, no barrier joining them since the "
           "read", "a 2-slot ring, the barrier after the refill");
}

int main()
{
    for (unsigned i = 0; i < sizeof gsrc / sizeof gsrc[0]; i++)
        gsrc[i] = 0x01000193u * (i + 1);
    pair_tests();
    ring_tests();
    printf("%s cuda-emu cp.async / ldmatrix races across warps\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
