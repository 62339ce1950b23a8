/* blk_emu_race.h - the cross-warp shared-memory race check of cuda-emu
 * and hip-emu (blk_emu.h): a cp.async ring slot refilled before another
 * warp finished reading it, a tile stored by one warp and read by another
 * with no barrier between, two warps' stores to one byte unordered. The
 * fibers of blk_emu.h run in one friendly order, so such a kernel
 * computes the right numbers here and races on a GPU; this check fails
 * the launch instead, from the memory models (never from the shape of the
 * generated code): the PTX ISA's memory consistency model and, for
 * hip-emu, the HSA / AMDGPU model of LDS (the same rules for what follows):
 *   - cp.async ("Data Movement: cp.async"): the copy is performed
 *     asynchronously; its writes are complete, for the issuing thread,
 *     only at the cp.async.wait_group / wait_all that completes its group
 *     (blk_emu_mma.h lands the bytes there);
 *   - "Memory Consistency Model", causality order: a write of thread A is
 *     visible to thread B (and a read of B is ordered before a write of A)
 *     only through a synchronizing operation between them. For shared
 *     memory that is a barrier both take part in, A's access before its
 *     arrival and B's after its own: bar.sync / __syncthreads (barrier 0,
 *     the whole block; s_barrier on AMD) or bar.sync id, n (only the warps
 *     that arrive at that instance). Orders compose transitively; two
 *     conflicting accesses (one a write, the same byte) of different
 *     threads that are not ordered are a data race.
 * Model: vector clocks per warp (a warp is the unit: its lanes' accesses
 * are ordered by the warp's own program order, as the collectives here
 * run them, so same-warp accesses are never flagged; a warp is a wavefront
 * of 64 on hip-emu). blk_emu_vc[w][v] is the latest epoch of warp v that
 * warp w has synchronized with; a barrier instance joins its
 * participants' clocks and starts a new epoch in each.
 * Every 16-byte chunk of the block's dynamic shared memory (the unit of
 * cp.async, of an ldmatrix row and of a wgmma core-matrix row) records
 * the warp whose cp.async landed there last and its epoch at that wait,
 * the cp.async copies in flight into it, and per warp the epoch of its
 * last read since the last write was issued. Plain loads and stores (the
 * generated code's BLK_SLD / BLK_SST, gpu_prelude.c: blk_emu_sld / _sst
 * below) are tracked per byte for stores (the warp and epoch of the last
 * store of each byte) and per chunk and warp for loads (a mask of the
 * bytes read at the warp's latest reading epoch, and one of those read at
 * earlier epochs with the latest of those), so warps storing or loading
 * different bytes of one chunk never conflict. Checked:
 *   WAR  a cp.async issued by warp A into a chunk that warp B != A read
 *        (ldmatrix; a wgmma.mma_async of B's warpgroup, at the
 *        wait_group that retired it; a plain load of any of its bytes)
 *        with no barrier joining B after the read and A before the issue
 *        (the copy may land at any time after its issue); a plain store
 *        of A to a byte B read (plain load; ldmatrix or wgmma: any byte of
 *        the chunk) the same way;
 *   RAW  an ldmatrix of warp B (a wgmma.mma_async of B's warpgroup, a
 *        plain load of B) that reads a chunk a cp.async of warp A != B
 *        landed, or a byte a plain store of A wrote, with no barrier
 *        joining A after its wait_group (its store) and B before the read;
 *        a read of a chunk whose cp.async is still in flight (issued, its
 *        group not yet waited on by its thread), whoever issued it;
 *   WAW  a cp.async into a chunk another warp's cp.async is in flight
 *        into, or landed with no barrier joining them since; a plain
 *        store to a chunk with a cp.async in flight (whoever issued it),
 *        or to a byte of a landed cp.async / a plain store of another warp
 *        with no barrier joining them since; a cp.async over another
 *        warp's unordered plain store.
 * For a wgmma read the reader is the warpgroup: a write by one of its own
 * warps after the retiring wait_group is ordered (each thread's
 * wait_group observes the completion), and one barrier joining the writer
 * with any warp of the warpgroup orders the two.
 * Static __shared__ variables (blk_emu.h puts them in the section
 * blk_emu_shared: the reductions' and scalar atomics' cells of the
 * generated code) are tracked as plain accesses too, as bytes after the
 * dynamic shared memory (offsets from the next multiple of 16).
 * Not seen: generated accesses not routed through BLK_SLD / BLK_SST
 * (docs/backends.md lists them), hand-written plain accesses, TMA writes
 * (blk_emu_tma.h checks those against wgmma itself), mbarrier
 * arrive / wait as an ordering (the generator orders its rings by
 * barriers only; a ring ordered by mbarriers would be reported), memory
 * fences, atomics. Granularity: cp.async, ldmatrix and wgmma reads count
 * as the whole chunk (they move whole chunks); a warp's plain loads of one
 * chunk at three or more epochs keep the older ones merged at the latest
 * of them (a store ordered after the oldest read but not after a later
 * read of other bytes of that chunk is reported: conservative). The cost:
 * a range compare per plain access outside the shared memory, a few
 * compares per byte inside it (one for a load of bytes the warp already
 * read at its current epoch), per cp.async and per ldmatrix row; a join
 * of nwarps x nwarps clocks per barrier; the shadow is reset per block by
 * a generation stamp. Included by blk_emu.h only. */
#ifndef BLK_EMU_RACE_H
#define BLK_EMU_RACE_H

enum { BLK_EMU_RW = 32, BLK_EMU_RNONE = 0xff }; /* warps of a block at most */

struct BlkEmuChunk {
    unsigned gen;             /* the block it belongs to: else empty */
    unsigned char writer;     /* warp whose cp.async landed last, or NONE */
    unsigned char pwarp;      /* warp of a cp.async in flight (pending > 0) */
    unsigned short pending;   /* cp.async copies issued, not landed */
    unsigned wepoch;          /* writer's epoch at its wait_group */
    unsigned readers;         /* warps that read by ldmatrix since the last write */
    unsigned wgreaders;       /* warpgroups whose wgmma read it since then */
    unsigned preaders;        /* warps with a plain-load record (blk_emu_rpl) */
};
/* A warp's plain loads of one chunk: bytes m1 read at its epoch e1 (the
 * latest it read at), bytes m0 read before (latest at e0). A store of a
 * byte, ordered after them, drops it from every record. */
struct BlkEmuPlainRd {
    unsigned e1, e0;
    unsigned short m1, m0;
};

BLK_EMU_VAR std::vector<BlkEmuChunk> blk_emu_rc;     /* per 16-byte chunk */
BLK_EMU_VAR std::vector<unsigned> blk_emu_rep;       /* [chunk][warp]: epoch of its last read */
BLK_EMU_VAR std::vector<BlkEmuPlainRd> blk_emu_rpl;  /* [chunk][warp]: its plain loads */
BLK_EMU_VAR std::vector<unsigned char> blk_emu_pw;   /* per byte: warp of the last plain store, or NONE */
BLK_EMU_VAR std::vector<unsigned> blk_emu_pwe;       /* per byte: that warp's epoch at the store */
BLK_EMU_VAR unsigned blk_emu_vc[BLK_EMU_RW][BLK_EMU_RW];
BLK_EMU_VAR unsigned blk_emu_rgen;                    /* the block in progress */
BLK_EMU_VAR int blk_emu_rnw;                          /* warps of the launch */
BLK_EMU_VAR long long blk_emu_rbytes;                 /* its dynamic shared memory */
BLK_EMU_VAR long long blk_emu_rstatic;                /* where the static bytes start (16-aligned) */
BLK_EMU_VAR long long blk_emu_rtotal;                 /* that plus the static bytes */
/* the static __shared__ variables of this module (null without any) */
extern "C" unsigned char __start_blk_emu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" unsigned char __stop_blk_emu_shared[] __attribute__((weak, visibility("hidden")));

/* A launch (before any block) and every fresh block (thread 0, between the
 * end barriers): the shadow empty, the clocks at 0. */
BLK_EMU_FN void blk_emu_race_block(const BlkEmuMachine *m)
#if BLK_EMU_SPLIT != 1
{
    blk_emu_rnw = m->nwarps;
    blk_emu_rbytes = m->smem_bytes;
    blk_emu_rstatic = (m->smem_bytes + 15) & ~15LL;
    blk_emu_rtotal = blk_emu_rstatic;
    if (__start_blk_emu_shared && __stop_blk_emu_shared > __start_blk_emu_shared)
        blk_emu_rtotal += (long long)(__stop_blk_emu_shared - __start_blk_emu_shared);
    const size_t nc = (size_t)(blk_emu_rtotal + 15) / 16;
    if (blk_emu_rc.size() < nc) {
        blk_emu_rc.resize(nc);
        blk_emu_rep.resize(nc * BLK_EMU_RW);
        blk_emu_rpl.resize(nc * BLK_EMU_RW);
        blk_emu_pw.resize(nc * 16);
        blk_emu_pwe.resize(nc * 16);
    }
    if (++blk_emu_rgen == 0) { /* wrapped: no stamp may match */
        for (BlkEmuChunk &c : blk_emu_rc)
            c.gen = 0;
        blk_emu_rgen = 1;
    }
    memset(blk_emu_vc, 0, sizeof blk_emu_vc);
}
#else
;
#endif

/* A barrier instance completed by the warps of mask: each closes its
 * epoch (its accesses so far come before the barrier), then learns what
 * every other participant knows. */
BLK_EMU_FN void blk_emu_race_sync(unsigned mask)
#if BLK_EMU_SPLIT != 1
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
#else
;
#endif

/* The chunk of shared byte offset off, emptied if stale; nullptr outside
 * the block's shared memory (dynamic, then static). */
BLK_EMU_FN BlkEmuChunk *blk_emu_race_at(long long off)
#if BLK_EMU_SPLIT != 1
{
    if (off < 0 || off >= blk_emu_rtotal || (size_t)(off >> 4) >= blk_emu_rc.size())
        return nullptr;
    BlkEmuChunk *c = &blk_emu_rc[(size_t)(off >> 4)];
    if (c->gen != blk_emu_rgen) {
        c->gen = blk_emu_rgen;
        c->writer = c->pwarp = BLK_EMU_RNONE;
        c->pending = 0;
        c->readers = c->wgreaders = c->preaders = 0;
        memset(&blk_emu_pw[(size_t)(off >> 4) * 16], BLK_EMU_RNONE, 16);
    }
    return c;
}
#else
;
#endif
/* has warp w synchronized with warp v since v's epoch e? */
static inline bool blk_emu_race_after(int w, int v, unsigned e) { return w == v || blk_emu_vc[w][v] > e; }

[[noreturn]] BLK_EMU_FN void blk_emu_race_fail(const char *kind, int wa, const char *opa, int wb,
                                           const char *opb, long long off, const char *how)
#if BLK_EMU_SPLIT != 1
{
    char msg[340], at[80];
#ifdef BLK_EMU_HIP
    const char *model = "HSA / AMDGPU memory model, LDS";
#else
    const char *model = "PTX ISA memory consistency model";
#endif
    if (off >= blk_emu_rstatic)
        snprintf(at, sizeof at, "byte %lld of the static __shared__ variables",
                 off - blk_emu_rstatic);
    else
        snprintf(at, sizeof at, "shared byte offset %lld", off);
    snprintf(msg, sizeof msg, "shared-memory race (%s) at %s: %s of warp %d, "
             "%s of warp %d, no barrier joining them %s (%s)", kind, at, opa, wa, opb, wb, how,
             model);
    blk_emu_thread_fail(msg);
}
#else
;
#endif

/* Bytes [lo, hi) of chunk ch (absolute offsets) accessed by warp a (its
 * warpgroup a .. a + 3 if wg: ordered if any is): the plain stores of
 * other warps there must be ordered before. */
BLK_EMU_FN void blk_emu_race_pw_check(long long lo, long long hi, int a, bool wg,
                                         const char *kind, const char *what)
#if BLK_EMU_SPLIT != 1
{
    for (long long o = lo; o < hi; o++) {
        const int v = blk_emu_pw[(size_t)o];
        if (v == BLK_EMU_RNONE)
            continue;
        bool ok = false;
        for (int w = a; w < (wg ? a + 4 : a + 1) && w < blk_emu_rnw && !ok; w++)
            ok = blk_emu_race_after(w, v, blk_emu_pwe[(size_t)o]);
        if (!ok)
            blk_emu_race_fail(kind, a, what, v, "a plain store", o, "since the store");
    }
}
#else
;
#endif
/* Warp a writes the bytes of mask m of chunk c (at off): every read by
 * another warp (ldmatrix, wgmma: the whole chunk; plain loads: their
 * bytes) must be ordered before. */
BLK_EMU_FN void blk_emu_race_war(BlkEmuChunk *c, long long off, int a, unsigned m,
                                    const char *what)
#if BLK_EMU_SPLIT != 1
{
    const size_t ch = (size_t)(off >> 4);
    const unsigned *rep = &blk_emu_rep[ch * BLK_EMU_RW];
    for (unsigned r = c->readers; r; r &= r - 1) {
        const int b = __builtin_ctz(r);
        if (!blk_emu_race_after(a, b, rep[b]))
            blk_emu_race_fail("write-after-read", a, what, b, "an ldmatrix read", off & ~15LL,
                              "since the read: the slot is refilled while it may still be read");
    }
    for (unsigned g = c->wgreaders; g; g &= g - 1) {
        const int wg = __builtin_ctz(g);
        bool ok = a / 4 == wg;
        for (int b = 4 * wg; b < 4 * wg + 4 && b < blk_emu_rnw && !ok; b++)
            ok = blk_emu_race_after(a, b, rep[b]);
        if (!ok)
            blk_emu_race_fail("write-after-read", a, what, 4 * wg,
                              "a wgmma.mma_async read (warpgroup)", off & ~15LL,
                              "since the wait_group that retired it");
    }
    const BlkEmuPlainRd *pr = &blk_emu_rpl[ch * BLK_EMU_RW];
    for (unsigned r = c->preaders & ~(1u << a); r; r &= r - 1) {
        const int b = __builtin_ctz(r);
        const unsigned hit1 = pr[b].m1 & m, hit0 = pr[b].m0 & m & ~pr[b].m1;
        unsigned bad = 0;
        if (hit1 && !blk_emu_race_after(a, b, pr[b].e1))
            bad = hit1;
        else if (hit0 && !blk_emu_race_after(a, b, pr[b].e0))
            bad = hit0;
        if (bad)
            blk_emu_race_fail("write-after-read", a, what, b, "a plain load",
                              (off & ~15LL) + __builtin_ctz(bad), "since the load");
    }
}
#else
;
#endif
/* The write of mask m by warp a passed: the loads of those bytes are
 * ordered before it, so later writes need not check them again. */
BLK_EMU_FN void blk_emu_race_rd_drop(BlkEmuChunk *c, size_t ch, unsigned m)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuPlainRd *pr = &blk_emu_rpl[ch * BLK_EMU_RW];
    for (unsigned r = c->preaders; r; r &= r - 1) {
        const int b = __builtin_ctz(r);
        pr[b].m1 = (unsigned short)(pr[b].m1 & ~m);
        pr[b].m0 = (unsigned short)(pr[b].m0 & ~m);
        if (!pr[b].m1 && !pr[b].m0)
            c->preaders &= ~(1u << b);
    }
}
#else
;
#endif

/* A cp.async of the running thread issued into the chunk at off. */
BLK_EMU_FN void blk_emu_race_cp_issue(long long off)
#if BLK_EMU_SPLIT != 1
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
    blk_emu_race_pw_check(off & ~15LL, (off & ~15LL) + 16, a, false, "write-after-write",
                          "a cp.async");
    blk_emu_race_war(c, off, a, 0xffff, "a cp.async");
    c->readers = c->wgreaders = c->preaders = 0;
    memset(&blk_emu_pw[(size_t)(off >> 4) * 16], BLK_EMU_RNONE, 16);
    c->pending++;
    c->pwarp = (unsigned char)a;
}
#else
;
#endif

/* The running thread's cp.async into the chunk at off landed (its wait_group). */
BLK_EMU_FN void blk_emu_race_cp_land(long long off)
#if BLK_EMU_SPLIT != 1
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
#else
;
#endif

/* Warp b's read (what: the op) of the chunk at off: every cp.async into
 * it landed and ordered before, every plain store too; wg: the reader is
 * b's warpgroup (b its first warp). */
BLK_EMU_FN BlkEmuChunk *blk_emu_race_read_check(long long off, int b, bool wg, const char *what)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuChunk *c = blk_emu_race_at(off);
    if (!c)
        return nullptr;
    if (c->pending)
        blk_emu_race_fail("read-after-write", b, what, c->pwarp, "a cp.async in flight", off,
                          "(its group not yet waited on by its thread)");
    blk_emu_race_pw_check(off & ~15LL, (off & ~15LL) + 16, b, wg, "read-after-write", what);
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
#else
;
#endif
/* an ldmatrix row of the running warp */
BLK_EMU_FN void blk_emu_race_ldmatrix(long long off)
#if BLK_EMU_SPLIT != 1
{
    const int b = (int)threadIdx.x / BLK_EMU_WARP;
    BlkEmuChunk *c = blk_emu_race_read_check(off & ~15LL, b, false, "an ldmatrix read");
    if (!c)
        return;
    c->readers |= 1u << b;
    blk_emu_rep[(size_t)(off >> 4) * BLK_EMU_RW + (size_t)b] = blk_emu_vc[b][b];
}
#else
;
#endif
/* chunk ch (offset / 16) of a wgmma.mma_async of the running warpgroup:
 * at issue (its read may happen from then on) and at the wait_group that
 * retires it (the read is complete) */
BLK_EMU_FN void blk_emu_race_wg_issue(long long ch)
#if BLK_EMU_SPLIT != 1
{
    blk_emu_race_read_check(ch * 16, (int)threadIdx.x / (4 * BLK_EMU_WARP) * 4, true,
                            "a wgmma.mma_async read (warpgroup)");
}
#else
;
#endif
BLK_EMU_FN void blk_emu_race_wg_retire(long long ch)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuChunk *c = blk_emu_race_at(ch * 16);
    if (!c)
        return;
    const int wg = (int)threadIdx.x / (4 * BLK_EMU_WARP);
    c->wgreaders |= 1u << wg;
    for (int b = 4 * wg; b < 4 * wg + 4 && b < blk_emu_rnw; b++)
        blk_emu_rep[(size_t)ch * BLK_EMU_RW + (size_t)b] = blk_emu_vc[b][b];
}
#else
;
#endif

/* A plain load (st false) or store of n bytes at p by the running thread:
 * nothing outside the shared memory (dynamic, or a static __shared__). */
BLK_EMU_FN void blk_emu_race_plain(const void *p, size_t n, bool st)
#if BLK_EMU_SPLIT != 1
{
    long long off0 = (long long)((uintptr_t)p - (uintptr_t)blk_emu_smem_base), lim = blk_emu_rbytes;
    if (off0 < 0 || off0 >= blk_emu_rbytes) {
        const unsigned char *b = (const unsigned char *)p;
        if (!__start_blk_emu_shared || b < __start_blk_emu_shared || b >= __stop_blk_emu_shared)
            return;
        off0 = blk_emu_rstatic + (long long)(b - __start_blk_emu_shared);
        lim = blk_emu_rtotal;
    }
    const int a = (int)threadIdx.x / BLK_EMU_WARP;
    const long long end = std::min(off0 + (long long)n, lim);
    const char *what = st ? "a plain store" : "a plain load";
    for (long long lo = off0; lo < end;) {
        const long long hi = std::min(end, (lo & ~15LL) + 16);
        const size_t ch = (size_t)(lo >> 4);
        const unsigned m = ((1u << (hi - lo)) - 1) << (lo & 15);
        BlkEmuChunk *c = blk_emu_race_at(lo);
        const unsigned e = blk_emu_vc[a][a];
        BlkEmuPlainRd *r = &blk_emu_rpl[ch * BLK_EMU_RW + (size_t)a];
        if (!st && (c->preaders >> a & 1) && r->e1 == e && (r->m1 & m) == m) {
            lo = hi; /* read already at this epoch: a write since would have */
            continue; /* failed against that read (or dropped it) */
        }
        const char *kind = st ? "write-after-write" : "read-after-write";
        if (c->pending)
            blk_emu_race_fail(kind, a, what, c->pwarp, "a cp.async in flight", lo,
                              "(its group not yet waited on by its thread)");
        if (c->writer != BLK_EMU_RNONE && !blk_emu_race_after(a, c->writer, c->wepoch))
            blk_emu_race_fail(kind, a, what, c->writer, "a landed cp.async", lo,
                              "since its wait_group");
        blk_emu_race_pw_check(lo, hi, a, false, kind, what);
        if (st) {
            blk_emu_race_war(c, lo, a, m, what);
            blk_emu_race_rd_drop(c, ch, m);
            memset(&blk_emu_pw[(size_t)lo], a, (size_t)(hi - lo));
            for (long long o = lo; o < hi; o++)
                blk_emu_pwe[(size_t)o] = e;
        } else {
            if (!(c->preaders >> a & 1)) {
                *r = BlkEmuPlainRd{e, 0, (unsigned short)m, 0};
                c->preaders |= 1u << a;
            } else if (r->e1 == e) {
                r->m1 = (unsigned short)(r->m1 | m);
            } else { /* a later epoch: the older bytes merge (the latest of them) */
                r->m0 = (unsigned short)((r->m0 | r->m1) & ~m);
                r->e0 = r->e1;
                r->m1 = (unsigned short)m;
                r->e1 = e;
            }
        }
        lo = hi;
    }
}
#else
;
#endif
/* BLK_SLD / BLK_SST of the generated code (gpu_prelude.c): the access
 * itself, recorded */
template <class T> static inline T &blk_emu_sld(T &x)
{
    blk_emu_race_plain(&x, sizeof x, false);
    return x;
}
template <class T> static inline T &blk_emu_sst(T &x)
{
    blk_emu_race_plain(&x, sizeof x, true);
    return x;
}

#endif
