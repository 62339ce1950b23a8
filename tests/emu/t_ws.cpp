/* t_ws.cpp — what warp specialization uses of the emulator
 * (runtime/emu/blk_emu.h, blk_emu_wgmma.h, blk_emu_tma.h; ctest emu_ws,
 * emu.sh mode ws), kernels written by hand against the wrappers, from the
 * PTX ISA's "bar, barrier", "setmaxnreg" and "mbarrier" sections:
 *   - bar.sync 1, n: the first n threads meet while the rest never come
 *     (they end their block); a count not a multiple of 32, two counts at
 *     one barrier, a barrier beyond 15 fail; n above the arrivals that
 *     can come is a deadlock report;
 *   - setmaxnreg: a 384-thread block holds 168 registers per thread; the
 *     consumers' .inc 232 waits until the producer's .dec 40 gave the
 *     pool enough (either order of arrival works), .inc 240 by both
 *     consumer warpgroups never fits (deadlock); a count outside [24, 256]
 *     or not a multiple of 8, warps of one warpgroup giving different
 *     counts, a .dec above the current count fail;
 *   - an mbarrier arrival that completes a phase runs the waiter it
 *     released before the arriving thread goes on.
 * Exit 0 when every check holds. */
#include "blk_emu.h"
#include "emu_check.h"

static int launch(void (*k)(int), int threads, char *err, size_t n)
{
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    err[0] = 0;
    return blk_emu_launch(k, grid, threads, 64, params, nullptr, err, n);
}
static void run(void (*k)(int), int threads, const char *what)
{
    char err[512];
    if (launch(k, threads, err, sizeof err))
        CHECK(false, "%s: launch: %s", what, err);
}
static void refuse(void (*k)(int), int threads, const char *want, const char *what)
{
    char err[512];
    int rc = launch(k, threads, err, sizeof err);
    CHECK(rc != 0 && strstr(err, want), "%s: expected a failure with '%s': rc %d, '%s'", what,
          want, rc, err);
}

/* ------------------------------------------------------------ named barriers */
static int seen[1024], after[1024];
static void k_named(int)
{
    const int t = (int)threadIdx.x;
    if (t >= 256)
        return; /* the producer's warpgroup leaves */
    seen[t] = 1;
    blk_bar_sync(1, 256);
    int n = 0;
    for (int u = 0; u < 256; u++)
        n += seen[u];
    after[t] = n; /* every consumer arrived before any left */
    blk_bar_sync(1, 256);
}
static void k_named_odd(int) { blk_bar_sync(1, 48); }
static void k_named_two(int) { blk_bar_sync(2, threadIdx.x < 64 ? 128 : 96); }
static void k_named_id(int) { blk_bar_sync(16, 128); }
static void k_named_many(int) { blk_bar_sync(1, 160); }

/* ------------------------------------------------------------ setmaxnreg */
static int order_first; /* 0: the producer reaches setmaxnreg first, 1: the consumers */
static int got_regs[3];
static void k_regs(int)
{
    const int t = (int)threadIdx.x;
    if (t >= 256) {
        if (order_first == 1)
            __nanosleep(1000); /* the consumers go first and must wait */
        blk_setmaxnreg_dec<40>();
        return;
    }
    blk_setmaxnreg_inc<232>();
    if (t % 128 == 0)
        got_regs[t / 128] = blk_emu_nreg[t / 128];
}
static void k_regs_greedy(int)
{
    if (threadIdx.x >= 256)
        blk_setmaxnreg_dec<40>();
    else
        blk_setmaxnreg_inc<240>(); /* 2 x 240 + 40 warpgroups of 128 > 64K */
}
static void k_regs_range(int) { blk_setmaxnreg_dec<20>(); }
static void k_regs_mult(int) { blk_setmaxnreg_dec<44>(); }
static void k_regs_mixed(int)
{
    if (threadIdx.x / 32 == 1)
        blk_setmaxnreg_dec<48>();
    else
        blk_setmaxnreg_dec<40>();
}
static void k_regs_dec_up(int) { blk_setmaxnreg_dec<256>(); } /* 384 threads: 168 at entry */

/* ------------------------------------------------------------ arrival hand-off */
static int trace[8], ntrace;
static void k_handoff(int)
{
    unsigned long long &bar = *(unsigned long long *)blk_emu_smem_base;
    const int t = (int)threadIdx.x;
    if (t == 0) {
        blk_mbar_init(&bar, 1);
        blk_fence_mbar_init();
    }
    __syncthreads();
    if (t == 32) {
        blk_mbar_wait_parity(&bar, 0);
        trace[ntrace++] = 2; /* the waiter, released */
    }
    if (t == 0) {
        __nanosleep(1000); /* thread 32 waits first */
        trace[ntrace++] = 1;
        blk_mbar_arrive(&bar);
        trace[ntrace++] = 3; /* the arriving thread, after the waiter */
    }
}

int main()
{
    run(k_named, 384, "bar.sync 1, 256 of 384 threads");
    int bad = 0;
    for (int t = 0; t < 256; t++)
        bad += after[t] != 256;
    CHECK(bad == 0, "bar.sync 1, 256: %d consumers left before all arrived", bad);
    refuse(k_named_odd, 128, "multiple of 32", "bar.sync 1, 48");
    refuse(k_named_two, 128, "with count", "bar.sync 2 with counts 128 and 96");
    refuse(k_named_id, 128, "0..15", "bar.sync 16");
    refuse(k_named_many, 128, "the block's 128", "bar.sync 1, 160 of 128 threads");

    for (order_first = 0; order_first < 2; order_first++) {
        got_regs[0] = got_regs[1] = 0;
        run(k_regs, 384, order_first ? "setmaxnreg, the consumers first" : "setmaxnreg");
        CHECK(got_regs[0] == 232 && got_regs[1] == 232, "setmaxnreg.inc 232: %d, %d", got_regs[0],
              got_regs[1]);
    }
    refuse(k_regs_greedy, 384, "deadlock", "setmaxnreg.inc 240 x 2 + 40");
    refuse(k_regs_range, 128, "multiple of 8 in [24, 256]", "setmaxnreg.dec 20");
    refuse(k_regs_mult, 128, "multiple of 8 in [24, 256]", "setmaxnreg.dec 44");
    refuse(k_regs_mixed, 128, "different setmaxnreg", "setmaxnreg 40 and 48 in one warpgroup");
    refuse(k_regs_dec_up, 384, "above the warpgroup's 168", "setmaxnreg.dec 256");

    run(k_handoff, 64, "an arrival releasing a waiter");
    CHECK(ntrace == 3 && trace[0] == 1 && trace[1] == 2 && trace[2] == 3,
          "the released waiter runs before the arriving thread goes on: %d %d %d", trace[0],
          trace[1], trace[2]);
    if (!fails)
        printf("ok: named barriers, setmaxnreg, mbarrier arrival hand-off\n");
    return fails != 0;
}
