/* blk_emu_tma.h - the Hopper tensor memory accelerator of blk_emu.h
 * (cuda-emu): tensor maps, mbarriers with transaction counts, and the
 * tiled bulk tensor copies between global and shared memory, modelled from
 * the vendor's written specifications, never from what blkc's generator
 * emits:
 *
 *   CUDA Driver API 6.30 "Tensor Map Object Management",
 *   cuTensorMapEncodeTiled: blk_emu_tmap.h (shared with the runtime,
 *     which encodes the maps of a launch there).
 *   PTX ISA "Parallel Synchronization and Communication Instructions:
 *   mbarrier": an mbarrier object (64 bits of shared memory, opaque) has a
 *     current phase, a pending arrival count, an expected arrival count and
 *     a tx-count. init(count): phase 0, pending = expected = count, tx 0.
 *     arrive: pending -= 1. expect_tx(b): tx += b. complete_tx(b) (the
 *     asynchronous copies): tx -= b. The phase completes when pending and
 *     tx are both 0: the phase advances and pending = expected again.
 *     test_wait/try_wait.parity P: true once the phase of parity P (the
 *     current or the immediately preceding one) has completed.
 *   PTX ISA "Data Movement: cp.async.bulk.tensor" and "Tensor Access
 *   Modes / Tensor-copy swizzling modes": .1d to .5d (the map's rank),
 *     tile mode copies the box at the given signed 32-bit element
 *     coordinates (innermost first), ceil(boxDim[i] /
 *     elementStrides[i]) elements along dimension i, dense in shared
 *     memory, innermost dimension fastest; elements outside the tensor read
 *     as the OOB fill and are not written by a store; a load signals
 *     complete_tx of the whole box's bytes on its mbarrier; the shared
 *     address is 128-byte aligned; the swizzle modes permute 16-byte
 *     chunks by shared-memory address: bits [4, 4 + b) ^= bits [7, 7 + b),
 *     b = 1, 2, 3 for 32B, 64B, 128B (the same pattern the wgmma
 *     descriptors read, blk_emu_wgmma.h). A store (bulk_group) reads shared
 *     memory until cp.async.bulk.wait_group.read retires its group.
 *
 * Modelled: a load reads global memory when issued and lands in shared
 * memory, with complete_tx on its mbarrier, only once some thread waits on
 * that mbarrier (a thread that reads the destination without waiting sees
 * the old bytes, as it may on hardware); a store reads shared memory and
 * writes global memory when its bulk group is waited for. A waiting thread
 * blocks (try_wait's time limit is never reached), so a wait that can
 * never complete is reported as a deadlock naming the mbarrier wait. An
 * arrive that completes a phase hands the host thread to the waiters it
 * released before the arriving thread (or its warpgroup) goes on: the
 * most eager interleaving the ISA allows, so an arrival placed before the
 * work it announces (a ring slot released before the wgmma.wait_group that
 * retires its reader) lets the waiter act in that window.
 * A wgmma.mma_async that reads a shared byte such a load will write (its
 * mbarrier not waited on since: the bytes may land at any time) fails
 * the launch (blk_emu_wgmma.h blk_emu_wg_pending): the race a ring
 * refilled too early makes when the slot's wgmma is issued after the
 * refill, which the check at the copy's issue (an operand of a group in
 * flight) cannot see.
 * Failures, each a failed launch with the thread named: an mbarrier that
 * was never initialized, init while copies are in flight on it, an arrive
 * beyond the expected count, a copy whose shared address is not 128-byte
 * aligned or whose box leaves the block's shared memory, a map not made by
 * blk_emu_tmap_encode or of another rank, a block that ends with a load in
 * flight or a store not waited for. Not modelled: multicast and clusters
 * (shared::cluster is this block), im2col, reductions, L2 promotion and
 * cache hints, the async proxy (fence.proxy.async is a no-op),
 * fence.mbarrier_init, the token forms of arrive/test_wait, timing.
 * Included by blk_emu.h only, after blk_emu_wgmma.h. */
#ifndef BLK_EMU_TMA_H
#define BLK_EMU_TMA_H

#ifndef BLK_EMU_HIP

#include "blk_emu_tmap.h"

/* CUtensorMap: 128 opaque bytes, 64-byte aligned; here a BlkEmuTmap
 * (blk_emu_tmap.h, which the runtime shares to encode maps for launches). */
struct alignas(64) BlkTensorMap { unsigned long long opaque[16]; };
static_assert(sizeof(BlkEmuTmap) <= sizeof(BlkTensorMap), "tensor map image");

/* ------------------------------------------------------------ mbarrier */

/* The 64-bit object: bits 0-19 pending arrivals, 20-39 expected arrivals,
 * 40-60 tx-count (two's complement, 21 bits), 61 set and 62 clear once
 * initialized (shared memory starts as 0x7f bytes), 63 the phase parity. */
static inline unsigned long long blk_emu_mb_pack(unsigned pend, unsigned exp, long long tx,
                                                 unsigned phase)
{
    return (unsigned long long)pend | (unsigned long long)exp << 20 |
           ((unsigned long long)tx & 0x1fffff) << 40 | 1ull << 61 | (unsigned long long)phase << 63;
}
static inline unsigned blk_emu_mb_pend(unsigned long long w) { return (unsigned)(w & 0xfffff); }
static inline unsigned blk_emu_mb_exp(unsigned long long w) { return (unsigned)(w >> 20 & 0xfffff); }
static inline long long blk_emu_mb_tx(unsigned long long w)
{
    long long t = (long long)(w >> 40 & 0x1fffff);
    return t >= (1 << 20) ? t - (1 << 21) : t;
}
static inline unsigned blk_emu_mb_phase(unsigned long long w) { return (unsigned)(w >> 63); }

/* a shared-memory byte address after the swizzle mode's permutation */
static inline long long blk_emu_swz(long long a, int mode)
{
    return mode ? a ^ ((a >> 7) & ((1 << mode) - 1)) << 4 : a;
}

/* a load in flight: its bytes, where they land, the mbarrier it completes */
struct BlkEmuTmaLoad {
    unsigned long long *bar;
    long long dst;                 /* 128-byte aligned */
    int swizzle;
    std::vector<unsigned char> data; /* the box, dense (before swizzling) */
};
BLK_EMU_VAR std::vector<BlkEmuTmaLoad> blk_emu_tma_loads;
/* a store not yet performed: the map, the box's coordinates, its shared offset */
struct BlkEmuTmaStore { BlkEmuTmap map; int c[5]; long long src; long long group; };
struct BlkEmuBulkState { std::vector<BlkEmuTmaStore> v; long long committed; };
BLK_EMU_VAR BlkEmuBulkState blk_emu_bulk[1024]; /* per thread */
BLK_EMU_VAR unsigned long long *blk_emu_mbar_at[1024]; /* what a blocked thread waits on */

/* The offset of p in the block's shared memory, checked: n bytes there. */
BLK_EMU_FN long long blk_emu_tma_smem(const void *p, long long n, const char *what)
#if BLK_EMU_SPLIT != 1
{
    const long long off = (long long)((const unsigned char *)p - blk_emu_smem_base);
    if (!p || off < 0 || off + n > blk_emu_m->smem_bytes) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s outside the block's dynamic shared memory", what);
        blk_emu_thread_fail(msg);
    }
    return off;
}
#else
;
#endif

BLK_EMU_FN unsigned long long &blk_emu_mb_word(unsigned long long *bar)
#if BLK_EMU_SPLIT != 1
{
    const long long off = blk_emu_tma_smem(bar, 8, "an mbarrier");
    if (off % 8)
        blk_emu_thread_fail("an mbarrier not 8-byte aligned");
    if ((*bar >> 61 & 3) != 1)
        blk_emu_thread_fail("an mbarrier used before mbarrier.init");
    return *bar;
}
#else
;
#endif

/* The phase completes when pending arrivals and tx-count are both 0;
 * threads blocked on it run again. */
BLK_EMU_FN void blk_emu_mb_settle(unsigned long long *bar)
#if BLK_EMU_SPLIT != 1
{
    unsigned long long w = *bar;
    if (blk_emu_mb_pend(w) || blk_emu_mb_tx(w))
        return;
    *bar = blk_emu_mb_pack(blk_emu_mb_exp(w), blk_emu_mb_exp(w), 0, blk_emu_mb_phase(w) ^ 1);
    BlkEmuMachine *m = blk_emu_m;
    for (int t = 0; t < m->nthreads; t++)
        if (m->where[t] == BLK_EMU_TAG_MBAR && blk_emu_mbar_at[t] == bar) {
            m->where[t] = 0;
            blk_emu_mbar_at[t] = nullptr;
            m->running++;
            if (m->nhandoff < m->nthreads)
                m->handoff[m->nhandoff++] = t;
        }
}
#else
;
#endif

static inline void blk_emu_mb_tx_add(unsigned long long *bar, long long d)
{
    unsigned long long w = blk_emu_mb_word(bar);
    const long long tx = blk_emu_mb_tx(w) + d;
    if (tx >= (1 << 20) || tx <= -(1 << 20))
        blk_emu_thread_fail("mbarrier tx-count out of range (2^20 - 1 bytes)");
    *bar = blk_emu_mb_pack(blk_emu_mb_pend(w), blk_emu_mb_exp(w), tx, blk_emu_mb_phase(w));
}

/* The loads on bar land (complete_tx), then the phase may complete. */
BLK_EMU_FN void blk_emu_mb_progress(unsigned long long *bar)
#if BLK_EMU_SPLIT != 1
{
    size_t keep = 0;
    for (size_t i = 0; i < blk_emu_tma_loads.size(); i++) {
        BlkEmuTmaLoad &l = blk_emu_tma_loads[i];
        if (l.bar != bar) {
            if (keep != i)
                blk_emu_tma_loads[keep] = std::move(l);
            keep++;
            continue;
        }
        for (size_t j = 0; j < l.data.size(); j += 16) /* 16-byte chunks, permuted */
            memcpy(blk_emu_smem_base + blk_emu_swz(l.dst + (long long)j, l.swizzle),
                   l.data.data() + j, 16);
        blk_emu_wg_pending(l.dst, (long long)l.data.size(), l.swizzle, -1);
        /* --stats: written a 128-byte line at a time (whole lines: the box
         * is dense and 128-byte aligned) */
        blk_emu_count(blk_emu_m->st.smem_wavefronts, ((long long)l.data.size() + 127) / 128);
        blk_emu_count(blk_emu_m->st.smem_requests, 1);
        blk_emu_mb_tx_add(bar, -(long long)l.data.size());
    }
    blk_emu_tma_loads.resize(keep);
    blk_emu_mb_settle(bar);
}
#else
;
#endif

/* Is a thread blocked on bar? Then what it waits for may progress now. */
static inline bool blk_emu_mb_waited(const unsigned long long *bar)
{
    BlkEmuMachine *m = blk_emu_m;
    for (int t = 0; t < m->nthreads; t++)
        if (m->where[t] == BLK_EMU_TAG_MBAR && blk_emu_mbar_at[t] == bar)
            return true;
    return false;
}

/* mbarrier.init.shared::cta.b64 [bar], count */
BLK_EMU_FN void blk_mbar_init(unsigned long long *bar, unsigned count)
#if BLK_EMU_SPLIT != 1
{
    const long long off = blk_emu_tma_smem(bar, 8, "an mbarrier");
    if (off % 8)
        blk_emu_thread_fail("an mbarrier not 8-byte aligned");
    if (count < 1 || count > (1u << 20) - 1)
        blk_emu_thread_fail("mbarrier.init: the count must be 1 .. 2^20 - 1");
    for (const BlkEmuTmaLoad &l : blk_emu_tma_loads)
        if (l.bar == bar)
            blk_emu_thread_fail("mbarrier.init on an mbarrier with a tensor copy in flight");
    *bar = blk_emu_mb_pack(count, count, 0, 0);
}
#else
;
#endif
/* fence.mbarrier_init.release.cluster: memory order is not modelled */
static inline void blk_fence_mbar_init(void) {}

BLK_EMU_FN void blk_emu_mb_arrive(unsigned long long *bar, long long tx)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    unsigned long long w = blk_emu_mb_word(bar);
    if (blk_emu_mb_pend(w) == 0)
        blk_emu_thread_fail("mbarrier arrive beyond the expected arrival count of the phase");
    if (tx)
        blk_emu_mb_tx_add(bar, tx);
    w = *bar;
    *bar = blk_emu_mb_pack(blk_emu_mb_pend(w) - 1, blk_emu_mb_exp(w), blk_emu_mb_tx(w),
                           blk_emu_mb_phase(w));
    if (blk_emu_mb_waited(bar))
        blk_emu_mb_progress(bar);
    else
        blk_emu_mb_settle(bar);
    if (m->nhandoff > 0 && blk_emu_cur) /* the released waiters run first */
        blk_emu_pause();
}
#else
;
#endif
/* mbarrier.arrive.shared::cta.b64 _, [bar] */
static inline void blk_mbar_arrive(unsigned long long *bar) { blk_emu_mb_arrive(bar, 0); }
/* mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes: expect, then arrive */
static inline void blk_mbar_arrive_expect_tx(unsigned long long *bar, unsigned bytes)
{
    blk_emu_mb_arrive(bar, bytes);
}
/* mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], bytes */
static inline void blk_mbar_expect_tx(unsigned long long *bar, unsigned bytes)
{
    blk_emu_mb_tx_add(bar, bytes);
}

/* mbarrier.try_wait.parity.shared::cta.b64: blocks until the phase of
 * parity `parity` has completed (the time limit is never reached). */
BLK_EMU_FN bool blk_mbar_try_wait_parity(unsigned long long *bar, unsigned parity)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    if (m->failed)
        blk_emu_abandon();
    blk_emu_mb_word(bar);
    blk_emu_mb_progress(bar);
    while (blk_emu_mb_phase(*bar) == (parity & 1)) {
        const int t = blk_emu_tid();
        m->where[t] = BLK_EMU_TAG_MBAR;
        blk_emu_mbar_at[t] = bar;
        if (--m->running == 0) {
            blk_emu_deadlock(m);
            blk_emu_abandon();
        }
        while (m->where[t] && !m->failed)
            blk_emu_yield(); /* blk_emu_mb_settle runs it again */
        if (m->failed)
            blk_emu_abandon();
    }
    return true;
}
#else
;
#endif
static inline void blk_mbar_wait_parity(unsigned long long *bar, unsigned parity)
{
    while (!blk_mbar_try_wait_parity(bar, parity)) {
    }
}

/* ------------------------------------------------------------ tensor copies */

BLK_EMU_FN const BlkEmuTmap &blk_emu_tmap(const BlkTensorMap *map, int rank)
#if BLK_EMU_SPLIT != 1
{
    static thread_local BlkEmuTmap t;
    if (!map || (uintptr_t)map % 64)
        blk_emu_thread_fail("cp.async.bulk.tensor: the tensor map is not 64-byte aligned");
    memcpy(&t, map, sizeof t);
    if (t.magic != BLK_EMU_TMAP_MAGIC)
        blk_emu_thread_fail("cp.async.bulk.tensor: not a tensor map made by cuTensorMapEncodeTiled");
    if (t.rank != rank) {
        char msg[120];
        snprintf(msg, sizeof msg, "cp.async.bulk.tensor.%dd with a tensor map of rank %d", rank,
                 t.rank);
        blk_emu_thread_fail(msg);
    }
    return t;
}
#else
;
#endif

/* Walk the box: f(shared byte offset before swizzling, global address or
 * null when outside the tensor). Returns the box's bytes. */
template <class F> static long long blk_emu_box(const BlkEmuTmap &t, const int *c, F f)
{
    long long n[5] = {1, 1, 1, 1, 1}, total = 1;
    for (int i = 0; i < t.rank; i++) {
        n[i] = (t.box[i] + t.estr[i] - 1) / t.estr[i];
        total *= n[i];
    }
    for (long long e = 0; e < total; e++) {
        long long r = e, ga = (long long)t.addr;
        bool in = true;
        for (int i = 0; i < t.rank; i++) {
            const long long x = c[i] + (r % n[i]) * t.estr[i];
            r /= n[i];
            in = in && x >= 0 && x < (long long)t.dim[i];
            ga += x * (long long)t.stride[i];
        }
        f(e * t.esize, in ? (unsigned char *)(uintptr_t)ga : nullptr);
    }
    return total * t.esize;
}

BLK_EMU_FN void blk_emu_tma_load(void *dst, const BlkTensorMap *map, const int *c, int rank,
                             unsigned long long *bar)
#if BLK_EMU_SPLIT != 1
{
    const BlkEmuTmap &t = blk_emu_tmap(map, rank);
    long long bytes = t.esize;
    for (int i = 0; i < rank; i++)
        bytes *= (t.box[i] + t.estr[i] - 1) / t.estr[i];
    const long long off = blk_emu_tma_smem(dst, bytes, "cp.async.bulk.tensor: the box");
    if (off % 128)
        blk_emu_thread_fail("cp.async.bulk.tensor: the shared-memory address is not 128-byte aligned");
    blk_emu_mb_word(bar);
    blk_emu_wg_write(off, bytes, t.swizzle, "cp.async.bulk.tensor");
    BlkEmuTmaLoad l;
    l.bar = bar;
    l.dst = off;
    l.swizzle = t.swizzle;
    l.data.resize((size_t)bytes);
    blk_emu_box(t, c, [&](long long e, const unsigned char *g) {
        static const unsigned nan32 = 0x7fffffffu;
        static const unsigned short nan16 = 0x7fff; /* f16 and bf16 */
        unsigned char *s = l.data.data() + e;
        if (g)
            memcpy(s, g, t.esize);
        else if (!t.oobfill)
            memset(s, 0, t.esize);
        else if (t.esize == 2)
            memcpy(s, &nan16, 2);
        else if (t.esize == 4)
            memcpy(s, &nan32, 4);
        else
            memset(s, 0xff, t.esize);
    });
#ifdef BLK_EMU_MEMSTATS
    /* --stats: the box's global sectors (L2), new ones of the launch (DRAM) */
    blk_emu_count(blk_emu_m->st.gmem_requests, 1);
    blk_emu_box(t, c, [&](long long e, const unsigned char *g) {
        const long long a = (long long)(uintptr_t)g;
        /* a sector starts at a row's first element or on a 32-byte boundary */
        if (!g || (e % ((long long)t.box[0] * t.esize) && a % 32))
            return;
        blk_emu_count(blk_emu_m->st.gmem_sectors, 1);
        if (blk_emu_seen.insert(a / 32).second)
            blk_emu_count(blk_emu_m->st.gmem_unique, 1);
    });
#endif
    blk_emu_count(blk_emu_m->st.tma, 1);
    blk_emu_wg_pending(off, bytes, t.swizzle, 1);
    blk_emu_tma_loads.push_back(std::move(l));
    if (blk_emu_mb_waited(bar))
        blk_emu_mb_progress(bar);
}
#else
;
#endif

/* cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
 * [dst], [map, {c0, ...}], [bar] */
static inline void blk_tma_load_1d(void *dst, const BlkTensorMap *map, int c0,
                                   unsigned long long *bar)
{
    const int c[1] = {c0};
    blk_emu_tma_load(dst, map, c, 1, bar);
}
static inline void blk_tma_load_2d(void *dst, const BlkTensorMap *map, int c0, int c1,
                                   unsigned long long *bar)
{
    const int c[2] = {c0, c1};
    blk_emu_tma_load(dst, map, c, 2, bar);
}
static inline void blk_tma_load_3d(void *dst, const BlkTensorMap *map, int c0, int c1, int c2,
                                   unsigned long long *bar)
{
    const int c[3] = {c0, c1, c2};
    blk_emu_tma_load(dst, map, c, 3, bar);
}
static inline void blk_tma_load_4d(void *dst, const BlkTensorMap *map, int c0, int c1, int c2,
                                   int c3, unsigned long long *bar)
{
    const int c[4] = {c0, c1, c2, c3};
    blk_emu_tma_load(dst, map, c, 4, bar);
}
static inline void blk_tma_load_5d(void *dst, const BlkTensorMap *map, int c0, int c1, int c2,
                                   int c3, int c4, unsigned long long *bar)
{
    const int c[5] = {c0, c1, c2, c3, c4};
    blk_emu_tma_load(dst, map, c, 5, bar);
}

/* cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {c0, ...}], [src]:
 * recorded; shared memory is read when its group is waited for */
BLK_EMU_FN void blk_emu_tma_store(const BlkTensorMap *map, const int *c, int rank, const void *src)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuTmaStore st;
    st.map = blk_emu_tmap(map, rank);
    long long bytes = st.map.esize;
    for (int i = 0; i < rank; i++)
        bytes *= (st.map.box[i] + st.map.estr[i] - 1) / st.map.estr[i];
    st.src = blk_emu_tma_smem(src, bytes, "cp.async.bulk.tensor: the box");
    if (st.src % 128)
        blk_emu_thread_fail("cp.async.bulk.tensor: the shared-memory address is not 128-byte aligned");
    for (int i = 0; i < 5; i++)
        st.c[i] = i < rank ? c[i] : 0;
    st.group = -1;
    blk_emu_bulk[blk_emu_tid()].v.push_back(st);
}
#else
;
#endif
static inline void blk_tma_store_1d(const BlkTensorMap *map, int c0, const void *src)
{
    const int c[1] = {c0};
    blk_emu_tma_store(map, c, 1, src);
}
static inline void blk_tma_store_2d(const BlkTensorMap *map, int c0, int c1, const void *src)
{
    const int c[2] = {c0, c1};
    blk_emu_tma_store(map, c, 2, src);
}
static inline void blk_tma_store_3d(const BlkTensorMap *map, int c0, int c1, int c2,
                                    const void *src)
{
    const int c[3] = {c0, c1, c2};
    blk_emu_tma_store(map, c, 3, src);
}
static inline void blk_tma_store_4d(const BlkTensorMap *map, int c0, int c1, int c2, int c3,
                                    const void *src)
{
    const int c[4] = {c0, c1, c2, c3};
    blk_emu_tma_store(map, c, 4, src);
}
static inline void blk_tma_store_5d(const BlkTensorMap *map, int c0, int c1, int c2, int c3,
                                    int c4, const void *src)
{
    const int c[5] = {c0, c1, c2, c3, c4};
    blk_emu_tma_store(map, c, 5, src);
}
/* cp.async.bulk.commit_group: this thread's uncommitted stores form a group */
BLK_EMU_FN void blk_bulk_commit(void)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuBulkState &s = blk_emu_bulk[blk_emu_tid()];
    s.committed++;
    for (BlkEmuTmaStore &st : s.v)
        if (st.group < 0)
            st.group = s.committed;
}
#else
;
#endif
/* cp.async.bulk.wait_group[.read] N: all but the N most recent groups
 * done (their shared memory read, their global writes made) */
BLK_EMU_FN void blk_emu_bulk_wait(int n)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuBulkState &s = blk_emu_bulk[blk_emu_tid()];
    size_t keep = 0;
    for (size_t i = 0; i < s.v.size(); i++) {
        BlkEmuTmaStore &st = s.v[i];
        if (st.group < 0 || st.group > s.committed - n) {
            s.v[keep++] = st;
            continue;
        }
        blk_emu_box(st.map, st.c, [&](long long e, unsigned char *g) {
            if (g)
                memcpy(g, blk_emu_smem_base + blk_emu_swz(st.src + e, st.map.swizzle),
                       st.map.esize);
        });
    }
    s.v.resize(keep);
}
#else
;
#endif
template <int N> static inline void blk_bulk_wait(void)
{
    static_assert(N >= 0 && N <= 63, "cp.async.bulk.wait_group N: 0..63");
    blk_emu_bulk_wait(N);
}
template <int N> static inline void blk_bulk_wait_read(void)
{
    static_assert(N >= 0 && N <= 63, "cp.async.bulk.wait_group.read N: 0..63");
    blk_emu_bulk_wait(N);
}

#endif /* !BLK_EMU_HIP */

/* At the end of a block (thread 0, the others past the end barrier): a
 * load still in flight or a store not waited for fails the launch; at a
 * launch (check false): nothing left from a failed one. */
BLK_EMU_FN void blk_emu_tma_block_end(BlkEmuMachine *m, bool check = true)
#if BLK_EMU_SPLIT != 1
{
#ifndef BLK_EMU_HIP
    const char *what = nullptr;
    if (!blk_emu_tma_loads.empty())
        what = "a cp.async.bulk.tensor load still in flight (no thread waited on its mbarrier)";
    for (int t = 0; t < m->nthreads && !what; t++)
        if (!blk_emu_bulk[t].v.empty())
            what = "a cp.async.bulk.tensor store not waited for (cp.async.bulk.wait_group)";
    if (what && check && !m->failed) {
        char msg[300];
        snprintf(msg, sizeof msg, "block (%u, %u, %u) ended with %s", blockIdx.x, blockIdx.y,
                 blockIdx.z, what);
        blk_emu_fail(m, msg);
    }
    blk_emu_tma_loads.clear();
    blk_emu_wg_pend.assign(blk_emu_wg_pend.size(), 0);
    for (int t = 0; t < m->nthreads; t++) {
        blk_emu_bulk[t].v.clear();
        blk_emu_bulk[t].committed = 0;
        blk_emu_mbar_at[t] = nullptr;
    }
#else
    (void)m, (void)check;
#endif
}
#else
;
#endif

#endif
