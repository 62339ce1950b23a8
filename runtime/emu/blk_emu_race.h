/* blk_emu_race.h - the cross-warp shared-memory race check of cuda-emu
 * (blk_emu.h): a cp.async ring slot refilled before another warp finished
 * reading it, or read by another warp before a barrier made its copies
 * visible. The fibers of blk_emu.h run in one friendly order, so such a
 * kernel computes the right numbers here and races on a GPU; this check
 * fails the launch instead, from the PTX ISA's memory consistency model
 * (never from the shape of the generated code):
 *   - cp.async ("Data Movement: cp.async"): the copy is performed
 *     asynchronously; its writes are complete, for the issuing thread,
 *     only at the cp.async.wait_group / wait_all that completes its group
 *     (blk_emu_mma.h lands the bytes there);
 *   - "Memory Consistency Model", causality order: a write of thread A is
 *     visible to thread B (and a read of B is ordered before a write of A)
 *     only through a synchronizing operation between them. For shared
 *     memory that is a barrier both take part in, A's access before its
 *     arrival and B's after its own: bar.sync / __syncthreads (barrier 0,
 *     the whole block) or bar.sync id, n (only the warps that arrive at
 *     that instance). Orders compose transitively.
 * Model: vector clocks per warp (a warp is the unit: its lanes' accesses
 * are ordered by the warp's own program order, as the collectives here
 * run them, so same-warp accesses are never flagged). blk_emu_vc[w][v] is
 * the latest epoch of warp v that warp w has synchronized with; a barrier
 * instance joins its participants' clocks and starts a new epoch in each.
 * Every 16-byte chunk of the block's dynamic shared memory (the unit of
 * cp.async, of an ldmatrix row and of a wgmma core-matrix row) records
 * the warp whose cp.async landed there last and its epoch at that wait,
 * the cp.async copies in flight into it, and per warp the epoch of its
 * last read since the last write was issued. Checked:
 *   WAR  a cp.async issued by warp A into a chunk that warp B != A read
 *        (ldmatrix; a wgmma.mma_async of B's warpgroup, at the
 *        wait_group that retired it) with no barrier joining B after the
 *        read and A before the issue (the copy may land at any time after
 *        its issue);
 *   RAW  an ldmatrix of warp B (a wgmma.mma_async of B's warpgroup) that
 *        reads a chunk a cp.async of warp A != B landed with no barrier
 *        joining A after its wait_group and B before the read; a read of
 *        a chunk whose cp.async is still in flight (issued, its group not
 *        yet waited on by its thread), whoever issued it;
 *   WAW  a cp.async into a chunk another warp's cp.async is in flight
 *        into, or landed with no barrier joining them since.
 * For a wgmma read the reader is the warpgroup: a write by one of its own
 * warps after the retiring wait_group is ordered (each thread's
 * wait_group observes the completion), and one barrier joining the writer
 * with any warp of the warpgroup orders the two.
 * Not seen: plain C++ loads and stores of shared memory (generated code's
 * ordinary accesses; the emulator sees only its wrappers), TMA writes
 * (blk_emu_tma.h checks those against wgmma itself), static __shared__
 * arrays (host statics, outside the dynamic shared memory), mbarrier
 * arrive / wait as an ordering (the generator orders cp.async rings by
 * barriers only; a ring ordered by mbarriers would be reported), memory
 * fences. The cost: a few compares per cp.async and per ldmatrix row, a
 * join of nwarps x nwarps clocks per barrier; the shadow is reset per
 * block by a generation stamp. Included by blk_emu.h only. */
#ifndef BLK_EMU_RACE_H
#define BLK_EMU_RACE_H

#ifndef BLK_EMU_HIP

enum { BLK_EMU_RW = 32, BLK_EMU_RNONE = 0xff }; /* warps of a CUDA block at most */

struct BlkEmuChunk {
    unsigned gen;             /* the block it belongs to: else empty */
    unsigned char writer;     /* warp whose cp.async landed last, or NONE */
    unsigned char pwarp;      /* warp of a cp.async in flight (pending > 0) */
    unsigned short pending;   /* cp.async copies issued, not landed */
    unsigned wepoch;          /* writer's epoch at its wait_group */
    unsigned readers;         /* warps that read by ldmatrix since the last write */
    unsigned wgreaders;       /* warpgroups whose wgmma read it since then */
};

static std::vector<BlkEmuChunk> blk_emu_rc;     /* per 16-byte chunk */
static std::vector<unsigned> blk_emu_rep;       /* [chunk][warp]: epoch of its last read */
static unsigned blk_emu_vc[BLK_EMU_RW][BLK_EMU_RW];
static unsigned blk_emu_rgen;                    /* the block in progress */
static int blk_emu_rnw;                          /* warps of the launch */

/* A launch (before any block) and every fresh block (thread 0, between the
 * end barriers): the shadow empty, the clocks at 0. */
static inline void blk_emu_race_block(const BlkEmuMachine *m)
{
    const size_t nc = (size_t)(m->smem_bytes + 15) / 16;
    blk_emu_rnw = m->nwarps;
    if (blk_emu_rc.size() < nc) {
        blk_emu_rc.resize(nc);
        blk_emu_rep.resize(nc * BLK_EMU_RW);
    }
    if (++blk_emu_rgen == 0) { /* wrapped: no stamp may match */
        for (BlkEmuChunk &c : blk_emu_rc)
            c.gen = 0;
        blk_emu_rgen = 1;
    }
    memset(blk_emu_vc, 0, sizeof blk_emu_vc);
}

/* A barrier instance completed by the warps of mask: each closes its
 * epoch (its accesses so far come before the barrier), then learns what
 * every other participant knows. */
static inline void blk_emu_race_sync(unsigned mask)
{
    unsigned j[BLK_EMU_RW] = {0};
    const int nw = blk_emu_rnw;
    for (int w = 0; w < nw; w++)
        if (mask >> w & 1) {
            blk_emu_vc[w][w]++;
            for (int v = 0; v < nw; v++)
                j[v] = std::max(j[v], blk_emu_vc[w][v]);
        }
    for (int w = 0; w < nw; w++)
        if (mask >> w & 1)
            memcpy(blk_emu_vc[w], j, sizeof(unsigned) * (size_t)nw);
}

/* The chunk of shared byte offset off, emptied if stale; nullptr outside
 * the block's dynamic shared memory. */
static inline BlkEmuChunk *blk_emu_race_at(long long off)
{
    if (off < 0 || off >= blk_emu_m->smem_bytes || (size_t)(off >> 4) >= blk_emu_rc.size())
        return nullptr;
    BlkEmuChunk *c = &blk_emu_rc[(size_t)(off >> 4)];
    if (c->gen != blk_emu_rgen) {
        c->gen = blk_emu_rgen;
        c->writer = c->pwarp = BLK_EMU_RNONE;
        c->pending = 0;
        c->readers = c->wgreaders = 0;
    }
    return c;
}
/* has warp w synchronized with warp v since v's epoch e? */
static inline bool blk_emu_race_after(int w, int v, unsigned e) { return w == v || blk_emu_vc[w][v] > e; }

[[noreturn]] static void blk_emu_race_fail(const char *kind, int wa, const char *opa, int wb,
                                           const char *opb, long long off, const char *how)
{
    char msg[300];
    snprintf(msg, sizeof msg, "shared-memory race (%s) at shared byte offset %lld: %s of warp %d, "
             "%s of warp %d, no barrier joining them %s (PTX ISA memory consistency model, "
             "cp.async)", kind, off & ~15LL, opa, wa, opb, wb, how);
    blk_emu_thread_fail(msg);
}

/* A cp.async of the running thread issued into the chunk at off. */
static inline void blk_emu_race_cp_issue(long long off)
{
    BlkEmuChunk *c = blk_emu_race_at(off);
    if (!c)
        return;
    const int a = (int)threadIdx.x / BLK_EMU_WARP;
    if (c->pending && c->pwarp != a)
        blk_emu_race_fail("write-after-write", a, "a cp.async", c->pwarp, "a cp.async in flight",
                          off, "(both copies in flight)");
    if (c->writer != BLK_EMU_RNONE && !blk_emu_race_after(a, c->writer, c->wepoch))
        blk_emu_race_fail("write-after-write", a, "a cp.async", c->writer, "a landed cp.async",
                          off, "since its wait_group");
    const unsigned *rep = &blk_emu_rep[(size_t)(off >> 4) * BLK_EMU_RW];
    for (unsigned r = c->readers; r; r &= r - 1) {
        const int b = __builtin_ctz(r);
        if (!blk_emu_race_after(a, b, rep[b]))
            blk_emu_race_fail("write-after-read", a, "a cp.async", b, "an ldmatrix read", off,
                              "since the read: the slot is refilled while it may still be read");
    }
    for (unsigned g = c->wgreaders; g; g &= g - 1) {
        const int wg = __builtin_ctz(g);
        bool ok = a / 4 == wg;
        for (int b = 4 * wg; b < 4 * wg + 4 && b < blk_emu_rnw && !ok; b++)
            ok = blk_emu_race_after(a, b, rep[b]);
        if (!ok)
            blk_emu_race_fail("write-after-read", a, "a cp.async", 4 * wg,
                              "a wgmma.mma_async read (warpgroup)", off,
                              "since the wait_group that retired it");
    }
    c->readers = c->wgreaders = 0;
    c->pending++;
    c->pwarp = (unsigned char)a;
}

/* The running thread's cp.async into the chunk at off landed (its wait_group). */
static inline void blk_emu_race_cp_land(long long off)
{
    BlkEmuChunk *c = blk_emu_race_at(off);
    if (!c)
        return;
    const int a = (int)threadIdx.x / BLK_EMU_WARP;
    if (c->pending)
        c->pending--;
    c->writer = (unsigned char)a;
    c->wepoch = blk_emu_vc[a][a];
}

/* Warp b's read (what: the op) of the chunk at off: every cp.async into
 * it landed and ordered before; wg: the reader is b's warpgroup (b its
 * first warp). */
static inline BlkEmuChunk *blk_emu_race_read_check(long long off, int b, bool wg, const char *what)
{
    BlkEmuChunk *c = blk_emu_race_at(off);
    if (!c)
        return nullptr;
    if (c->pending)
        blk_emu_race_fail("read-after-write", b, what, c->pwarp, "a cp.async in flight", off,
                          "(its group not yet waited on by its thread)");
    if (c->writer == BLK_EMU_RNONE)
        return c;
    bool ok = false;
    for (int v = b; v < (wg ? b + 4 : b + 1) && v < blk_emu_rnw && !ok; v++)
        ok = blk_emu_race_after(v, c->writer, c->wepoch);
    if (!ok)
        blk_emu_race_fail("read-after-write", b, what, c->writer, "a landed cp.async", off,
                          "since its wait_group");
    return c;
}
/* an ldmatrix row of the running warp */
static inline void blk_emu_race_ldmatrix(long long off)
{
    const int b = (int)threadIdx.x / BLK_EMU_WARP;
    BlkEmuChunk *c = blk_emu_race_read_check(off, b, false, "an ldmatrix read");
    if (!c)
        return;
    c->readers |= 1u << b;
    blk_emu_rep[(size_t)(off >> 4) * BLK_EMU_RW + (size_t)b] = blk_emu_vc[b][b];
}
/* chunk ch (offset / 16) of a wgmma.mma_async of the running warpgroup:
 * at issue (its read may happen from then on) and at the wait_group that
 * retires it (the read is complete) */
static inline void blk_emu_race_wg_issue(long long ch)
{
    blk_emu_race_read_check(ch * 16, (int)threadIdx.x / (4 * BLK_EMU_WARP) * 4, true,
                            "a wgmma.mma_async read (warpgroup)");
}
static inline void blk_emu_race_wg_retire(long long ch)
{
    BlkEmuChunk *c = blk_emu_race_at(ch * 16);
    if (!c)
        return;
    const int wg = (int)threadIdx.x / (4 * BLK_EMU_WARP);
    c->wgreaders |= 1u << wg;
    for (int b = 4 * wg; b < 4 * wg + 4 && b < blk_emu_rnw; b++)
        blk_emu_rep[(size_t)ch * BLK_EMU_RW + (size_t)b] = blk_emu_vc[b][b];
}

#else /* HIP: no cp.async, no ldmatrix */
static inline void blk_emu_race_block(const BlkEmuMachine *) {}
static inline void blk_emu_race_sync(unsigned) {}
#endif

#endif
