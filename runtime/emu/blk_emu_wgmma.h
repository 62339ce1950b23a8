/* blk_emu_wgmma.h - the Hopper warpgroup MMA of blk_emu.h (cuda-emu with
 * BLKC_EMU_ARCH=sm_90a): wgmma.fence / commit_group / wait_group and
 * wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} and
 * .m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2} with A and B in shared memory
 * through matrix descriptors, and m64nNk16 f16 / bf16 with A from
 * registers (blk_emu_wg_areg), modelled from the PTX ISA
 * (9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
 * Instructions"), never from what blkc's generator emits:
 *
 *   9.7.15.5.1.2.2 "Matrix Descriptor Format" (a 64-bit register):
 *     bits 13-0  matrix-descriptor-encode(matrix start address)
 *     bits 29-16 matrix-descriptor-encode(leading dimension byte offset, LBO)
 *     bits 45-32 matrix-descriptor-encode(stride dimension byte offset, SBO)
 *     bits 51-49 matrix base offset (0: the swizzle pattern starts on its
 *                boundary: 1024 / 512 / 256 bytes for 128B / 64B / 32B)
 *     bits 63-62 swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
 *     where matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4.
 *   9.7.15.5.2 syntax: the 16-bit types take "d, a-desc, b-desc, scale-d,
 *     imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b" with shapes
 *     .m64nNk16; the "FP8 floating point type" takes "d, a-desc, b-desc,
 *     scale-d, imm-scale-a, imm-scale-b" with shapes .m64nNk32, .atype and
 *     .btype each .e4m3 or .e5m2 (they may differ: ".atype and .btype must
 *     be the same for all floating point wgmma.mma_async variants except
 *     for the FP8 floating point variants"); "The transpose operation is
 *     only supported for the wgmma.mma_async variants with .f16/.bf16
 *     types on matrices accessed from shared memory using matrix
 *     descriptors": fp8 A and B are K-major, always.
 *   5.2.5.1 "Alternate Floating Point Data Formats" (.e4m3 and .e5m2 as in
 *     "FP8 Formats for Deep Learning", Table 1): e4m3: sign, 4 exponent
 *     bits of bias 7, 3 mantissa bits, no infinities, S.1111.111 the only
 *     NaN (largest finite S.1111.110 = 448); e5m2: sign, 5 exponent bits of
 *     bias 15, 2 mantissa bits, IEEE-like: exponent 11111 is inf (mantissa
 *     0) or NaN; both with subnormals (exponent 0: m * 2^(1 - bias - mbits)).
 *   9.7.15.5.1.2.1.3 "Canonical Layouts" (CuTe notation, T = 128 / element
 *     bits = 8 for f16/bf16, 16 for e4m3/e5m2 (a 16-byte row chunk either
 *     way), offsets in elements, LBO/SBO in bytes here):
 *     K-major,  none:  ((8,m),(T,2k)):((1T,SBO),(1,LBO))
 *     K-major,  32B/64B/128B: ((8,m),(T,2k)):((cT,SBO),(1,T)), c = 2/4/8
 *     MN-major, none:  ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
 *     MN-major, 32B/64B/128B: ((T,c,m),(8,k)):((1,T,LBO),(cT,SBO))
 *     then Swizzle<1|2|3, 4, 3> on the byte address: bits [4, 4 + b) ^=
 *     bits [7, 7 + b). imm-trans-a / imm-trans-b = 0: K-major ("matrices
 *     A and B are stored in row-major and column-major format"), 1:
 *     M-major A / N-major B (9.7.15.5.1.2 "Shared Memory Matrix Layout").
 *   9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16",
 *     Figure 149 (accumulator D, .f32: N/2 registers d0..d(N/2-1)): warp w
 *     (%warpid % 4) of the warpgroup owns rows 16w .. 16w+15 (the same
 *     warp-to-rows assignment as 9.7.15.6.2's table); within the warp the
 *     m16n8 accumulator pattern repeats over the N/8 column blocks:
 *       groupID = %laneid >> 2, threadID_in_group = %laneid % 4
 *       row = 16 w + groupID + 8 * ((i >> 1) & 1)
 *       col = 8 * (i >> 2) + 2 * threadID_in_group + (i & 1)
 *   9.7.15.5.2 "wgmma.mma_async": D = A*B + D, or D = A*B when the
 *     predicate scale-d is false; .sync.aligned: every thread of the
 *     warpgroup executes it; the descriptors must be the same across the
 *     warps of the warpgroup; wgmma.fence must order the accumulator's
 *     earlier register accesses before it; the results may be accessed
 *     only after a wgmma.wait_group retires the wgmma-group
 *     (wgmma.commit_group) holding it.
 *
 *   9.7.15.7.3 "wgmma.wait_group": "wait until only N or fewer of the
 *     most recent wgmma-groups are pending and all the prior wgmma-groups
 *     committed by the executing threads are complete"; "Accessing the
 *     accumulator register or the input register containing the fragments
 *     of matrix A of a wgmma.mma_async instruction without first performing
 *     a wgmma.wait_group instruction that waits on a wgmma-group including
 *     that wgmma.mma_async instruction is undefined behavior."
 *   9.7.15.4 "Async Proxy": "The wgmma.mma_async operations are performed
 *     in the asynchronous proxy"; "The completion of a wgmma.mma_async
 *     operation is followed by an implicit generic-async proxy fence";
 *     "wgmma.commit_group and wgmma.wait_group operations must be used to
 *     wait for the completion of the wgmma.mma_async instructions."
 *   So the ISA gives no point before the retiring wait_group at which the
 *   shared-memory operands have been read: the async proxy may read them
 *   at any time until the operation completes, and a write to them in that
 *   window (a ring slot refilled by cp.async, TMA or a store while the
 *   group reading it is in flight) races with the read. (The text quoted
 *   names the registers as undefined; for shared memory it is the race
 *   that the completion rule implies, as CUTLASS's sm90 mainloop releases
 *   a stage to its producer only after the warpgroup_wait that retires
 *   the MMAs reading it.)
 *
 * Modelled: every mma_async is a warpgroup collective (128 consecutive
 * threads, 4 warps) that reads A and B from shared memory at issue and
 * keeps each thread's new D fragment in a pending record; consecutive
 * mma_async on the same accumulator chain through the pending records
 * (the hardware accumulates in issue order); commit_group gives the
 * uncommitted records a group number; wait_group N writes the records of
 * all but the N most recent groups into the registers, in issue order.
 * A read before the wait therefore sees the old accumulator. The race
 * above: each mma_async keeps a copy of the 16-byte chunks of shared
 * memory it read (core-matrix rows, read whole) until the wait_group that
 * retires its group; a cp.async or TMA load issued into one of them
 * meanwhile (blk_emu_wg_write), or a chunk whose bytes differ at the
 * retiring wait (any other store), fails the launch naming wgmma and the
 * shared byte offset (a store of the very bytes already there is not
 * seen); so does an mma_async that reads a chunk a TMA load in flight
 * will write (blk_emu_wg_pending: issued, its mbarrier not waited on). An
 * mma_async with no wgmma.fence since the thread's last wait_group (or
 * the start of the block) fails the launch, as do descriptors that differ
 * between the warps, a non-zero base offset (not modelled), a read
 * outside the block's shared memory, and a block that is not whole
 * warpgroups. Products are exact in double, summed in k order and
 * rounded to f32 once with the old D (the hardware's internal order and
 * rounding are unspecified); fp8 elements decode exactly (blk_emu_f8), a
 * NaN or inf operand gives what double arithmetic gives. A from
 * registers (f16 / bf16, blk_emu_wg_areg): the fragments are taken at
 * issue - a write to them before the retiring wait_group (undefined,
 * 9.7.15.7.3) is not seen. Not modelled: fp8 A from registers, tf32, integer types, f16 accumulators of fp8, f16 accumulators, imm-scale (-1), sparse, the async
 * proxy (fence.proxy.async is a no-op: one host thread runs all).
 * --stats counts each mma_async's operand reads as shared-memory
 * wavefronts, a core matrix at a time (blk_emu_wg_wavefronts: how the
 * tensor cores fetch is not documented; the model is theirs at the banks'
 * 128 bytes per clock). Included by blk_emu.h only. */
#ifndef BLK_EMU_WGMMA_H
#define BLK_EMU_WGMMA_H

#ifndef BLK_EMU_HIP

/* The shared-state-space address of p (cvta.to.shared): its offset in the
 * block's shared memory, which starts at shared address 0 here. */
static inline unsigned blk_smem_addr(const void *p)
{
    return (unsigned)((const unsigned char *)p - blk_emu_smem_base);
}
/* fence.proxy.async.shared::cta: orders generic-proxy shared writes before
 * async-proxy reads (wgmma); memory order is not modelled */
static inline void blk_fence_proxy_async(void) {}

enum { BLK_EMU_WG = 4 * BLK_EMU_WARP, BLK_EMU_WG_MAXD = 128 };

/* one thread's pending mma_async: its new D fragment, not yet retired */
struct BlkEmuWgRec { float *d; int nd; long long group; float v[BLK_EMU_WG_MAXD]; };
struct BlkEmuWgState { std::vector<BlkEmuWgRec> v; long long committed; bool fenced; };
BLK_EMU_VAR BlkEmuWgState blk_emu_wgs[1024]; /* per thread of the block */

/* The operand chunks of a warpgroup's mma_async not yet retired: the
 * shared offset / 16 of each 16-byte chunk read and its bytes at issue;
 * group as in BlkEmuWgRec. busy[c]: how many records read chunk c. */
struct BlkEmuWgSnap { long long group; std::vector<long long> at; std::vector<unsigned char> b; };
BLK_EMU_VAR std::vector<BlkEmuWgSnap> blk_emu_wgsnap[1024 / BLK_EMU_WG]; /* per warpgroup */
BLK_EMU_VAR std::vector<unsigned short> blk_emu_wg_busy;
/* per 16-byte chunk: the cp.async.bulk.tensor loads in flight that will
 * write it (blk_emu_tma.h; they land when a thread waits on their
 * mbarrier) */
BLK_EMU_VAR std::vector<unsigned short> blk_emu_wg_pend;

/* what each thread deposits at an mma_async; ka / kb: the element kinds
 * of A / B (BLK_EMU_WG_F16 ..) */
struct BlkEmuWgIn { unsigned long long da, db; int n, ka, kb, ta, tb; };
enum { BLK_EMU_WG_F16, BLK_EMU_WG_BF16, BLK_EMU_WG_E4M3, BLK_EMU_WG_E5M2 };
/* the element bytes and the k of one mma_async (16 or 32) of a kind */
static inline int blk_emu_wg_esize(int kind) { return kind >= BLK_EMU_WG_E4M3 ? 1 : 2; }
static inline int blk_emu_wg_k(int kind) { return 32 / blk_emu_wg_esize(kind); }

/* An fp8 byte's value (5.2.5.1 above): e5m2 false: e4m3 */
static inline double blk_emu_f8(unsigned char x, bool e5m2)
{
    const int mb = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
    const int e = (x & 0x7f) >> mb, m = x & ((1 << mb) - 1);
    const double s = x & 0x80 ? -1.0 : 1.0;
    if (e5m2 && e == 31)
        return m ? NAN : s * INFINITY;
    if (!e5m2 && (x & 0x7f) == 0x7f)
        return NAN;
    if (e == 0)
        return s * ldexp((double)m, 1 - bias - mb);
    return s * ldexp((double)((1 << mb) + m), e - bias - mb);
}

/* A block of whole warpgroups, else the launch fails. */
BLK_EMU_FN void blk_emu_wg_check(void)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    if (m->nthreads % BLK_EMU_WG) {
        char msg[160];
        snprintf(msg, sizeof msg, "wgmma needs whole warpgroups of %d threads; the block has %d",
                 BLK_EMU_WG, m->nthreads);
        blk_emu_fail(m, msg);
        blk_emu_abandon();
    }
}
#else
;
#endif
/* The warpgroup barrier: the first warp of the group holds it. */
static inline void blk_emu_wg_bar(void)
{
    blk_emu_wg_check();
    blk_emu_bar_wait(blk_emu_m->warps[threadIdx.x / BLK_EMU_WG * 4].wgbar, BLK_EMU_WG,
                     BLK_EMU_TAG_WGMMA);
}

/* The shared byte address of element (mn, k) of an operand of es-byte
 * elements (2, or 1: K-major only) through descriptor desc: mn is A's row
 * m or B's column n; mnmajor: imm-trans = 1 (canonical layouts above:
 * T = 16 / es elements per 16-byte chunk). */
BLK_EMU_FN long long blk_emu_wg_addr(unsigned long long desc, bool mnmajor, int mn, int k, int es = 2)
#if BLK_EMU_SPLIT != 1
{
    const long long start = (long long)(desc & 0x3fff) << 4;
    const long long lbo = (long long)((desc >> 16) & 0x3fff) << 4;
    const long long sbo = (long long)((desc >> 32) & 0x3fff) << 4;
    const int base = (int)((desc >> 49) & 7), mode = (int)(desc >> 62);
    const int c = mode == 1 ? 8 : mode == 2 ? 4 : mode == 3 ? 2 : 0; /* 16-byte chunks per row */
    const int T = 16 / es;
    long long off;
    if (base != 0)
        blk_emu_thread_fail("wgmma matrix descriptor with a non-zero base offset (not modelled)");
    if (!mnmajor && !c)
        off = (mn % 8) * 16 + (mn / 8) * sbo + (k % T) * es + (k / T) * lbo;
    else if (!mnmajor)
        off = (mn % 8) * 16 * c + (mn / 8) * sbo + (k % T) * es + (k / T) * 16;
    else if (!c)
        off = (mn % 8) * 2 + (mn / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo;
    else
        off = (mn % 8) * 2 + (mn / 8 % c) * 16 + (mn / (8 * c)) * lbo + (k % 8) * 16 * c +
              (k / 8) * sbo;
    long long a = start + off;
    if (c)
        a ^= ((a >> 7) & (c - 1)) << 4;
    if (a < 0 || a + es > blk_emu_m->smem_bytes)
        blk_emu_thread_fail("wgmma reads outside the block's shared memory");
    return a;
}
#else
;
#endif
BLK_EMU_FN double blk_emu_wg_elem(unsigned long long desc, bool mnmajor, int mn, int k, int kind)
#if BLK_EMU_SPLIT != 1
{
    if (kind >= BLK_EMU_WG_E4M3)
        return blk_emu_f8(blk_emu_smem_base[blk_emu_wg_addr(desc, false, mn, k, 1)],
                          kind == BLK_EMU_WG_E5M2);
    unsigned short h;
    memcpy(&h, blk_emu_smem_base + blk_emu_wg_addr(desc, mnmajor, mn, k), 2);
    return kind == BLK_EMU_WG_BF16 ? blk_emu_bf16(h) : blk_emu_f16(h);
}
#else
;
#endif

/* --stats: the shared-memory wavefronts of reading an MN x k operand
 * (k = 16 of 2-byte or 32 of 1-byte elements), one core matrix (8 rows of
 * 16 bytes) at a time, as if through the
 * same 32 banks of 4 bytes as the other accesses (an assumption: the PTX
 * ISA does not say how the tensor cores fetch; a canonical layout is 1
 * wavefront per core matrix, bytes / 128) */
BLK_EMU_FN long long blk_emu_wg_wavefronts(unsigned long long desc, bool mnmajor, int mn, int es)
#if BLK_EMU_SPLIT != 1
{
    long long wf = 0;
    for (int m0 = 0; m0 < mn; m0 += 8)
        for (int k0 = 0; k0 < 32 / es; k0 += 16 / es) {
            long long rows[8];
            for (int i = 0; i < 8; i++) /* a 16-byte run of 16 / es elements */
                rows[i] = mnmajor ? blk_emu_wg_addr(desc, true, m0, k0 + i)
                                  : blk_emu_wg_addr(desc, false, m0 + i, k0, es);
            wf += blk_emu_wavefronts(rows, 8, 16);
        }
    return wf;
}
#else
;
#endif

/* The warpgroup's copy of what an mma_async reads (A: 64 x K, B: n x K
 * through their descriptors, K = 16 or 32 of es-byte elements), kept until
 * its group is retired. */
BLK_EMU_FN void blk_emu_wg_snap(unsigned long long da, bool ta, unsigned long long db, bool tb, int n,
                            int es, bool areg = false)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuWgSnap sn;
    sn.group = -1;
    for (int k = 0; k < 32 / es; k++) {
        for (int m = 0; m < 64 && !areg; m++)
            sn.at.push_back(blk_emu_wg_addr(da, ta, m, k, es) >> 4);
        for (int j = 0; j < n; j++)
            sn.at.push_back(blk_emu_wg_addr(db, tb, j, k, es) >> 4);
    }
    std::sort(sn.at.begin(), sn.at.end());
    sn.at.erase(std::unique(sn.at.begin(), sn.at.end()), sn.at.end());
    const size_t nc = (size_t)(blk_emu_m->smem_bytes + 15) / 16;
    if (blk_emu_wg_busy.size() < nc)
        blk_emu_wg_busy.resize(nc, 0);
    sn.b.resize(sn.at.size() * 16);
    for (size_t i = 0; i < sn.at.size(); i++) {
        if ((size_t)sn.at[i] < blk_emu_wg_pend.size() && blk_emu_wg_pend[(size_t)sn.at[i]]) {
            char msg[300];
            snprintf(msg, sizeof msg, "wgmma.mma_async reads shared byte offset %lld, which a "
                     "cp.async.bulk.tensor load in flight writes (no thread has waited on its "
                     "mbarrier since it was issued: PTX ISA cp.async.bulk.tensor, mbarrier complete_tx)",
                     sn.at[i] * 16);
            blk_emu_thread_fail(msg);
        }
        blk_emu_race_wg_issue(sn.at[i]);
        memcpy(&sn.b[i * 16], blk_emu_smem_base + sn.at[i] * 16, 16);
        blk_emu_wg_busy[(size_t)sn.at[i]]++;
    }
    blk_emu_wgsnap[threadIdx.x / BLK_EMU_WG].push_back(std::move(sn));
}
#else
;
#endif
BLK_EMU_FN void blk_emu_wg_unsnap(const BlkEmuWgSnap &sn)
#if BLK_EMU_SPLIT != 1
{
    for (long long c : sn.at)
        blk_emu_wg_busy[(size_t)c]--;
}
#else
;
#endif

/* A tensor copy into shared bytes [off, off + n) (16-byte chunks,
 * swizzled by mode) issued (d = 1) or landed (d = -1). */
BLK_EMU_FN void blk_emu_wg_pending(long long off, long long n, int mode, int d)
#if BLK_EMU_SPLIT != 1
{
    const size_t nc = (size_t)(blk_emu_m->smem_bytes + 15) / 16;
    if (blk_emu_wg_pend.size() < nc)
        blk_emu_wg_pend.resize(nc, 0);
    for (long long j = 0; j < n; j += 16) {
        long long a = off + j;
        if (mode)
            a ^= ((a >> 7) & ((1 << mode) - 1)) << 4;
        if (a >= 0 && (size_t)(a >> 4) < nc) {
            unsigned short &n16 = blk_emu_wg_pend[(size_t)(a >> 4)];
            n16 = (unsigned short)(n16 + d);
        }
    }
}
#else
;
#endif

/* An asynchronous copy (`who`) issued into shared bytes [off, off + n),
 * 16-byte chunks, swizzled by mode (TMA) as blk_emu_swz: none may be an
 * operand of an mma_async not yet retired. */
BLK_EMU_FN void blk_emu_wg_write(long long off, long long n, int mode, const char *who)
#if BLK_EMU_SPLIT != 1
{
    if (blk_emu_wg_busy.empty())
        return;
    for (long long j = 0; j < n; j += 16) {
        long long a = off + j;
        if (mode)
            a ^= ((a >> 7) & ((1 << mode) - 1)) << 4;
        if (a >= 0 && (size_t)(a >> 4) < blk_emu_wg_busy.size() && blk_emu_wg_busy[(size_t)(a >> 4)]) {
            char msg[240];
            snprintf(msg, sizeof msg, "%s writes shared byte offset %lld, an operand of a "
                     "wgmma.mma_async not yet retired by a wgmma.wait_group (PTX ISA 9.7.15.4, "
                     "9.7.15.7.3)", who, a & ~15LL);
            blk_emu_thread_fail(msg);
        }
    }
}
#else
;
#endif

#ifdef BLK_EMU_BREAK_LAYOUT
static inline int blk_emu_wg_row(int r) { return r == 1 ? 2 : r == 2 ? 1 : r; }
#else
static inline int blk_emu_wg_row(int r) { return r; }
#endif

/* Multiplicand A in registers (9.7.15.5.1.1.1, "Multiplicand A in
 * registers", Figure 148: four .f16x2 registers a0..a7, low half first):
 * warp w of the warpgroup holds rows 16 w .. 16 w + 15, in the pattern of
 * mma.m16n8k16's A (9.7.14.5.8, Figure 79):
 *   row = 16 w + groupID (+ 8 for a2, a3, a6, a7)
 *   col = 2 threadID_in_group + (i & 1) (+ 8 for a4 .. a7)
 * Each thread deposits its registers at issue (blk_emu_wga); element
 * (row, k) is then read from the thread that holds it. */
BLK_EMU_VAR unsigned blk_emu_wga[1024][4];
BLK_EMU_FN double blk_emu_wg_areg(int wg0, int row, int k, int kind)
#if BLK_EMU_SPLIT != 1
{
    const int w = row / 16, r = row % 16;
#ifdef BLK_EMU_BREAK_AREG /* a wrong table (the hi / lo k halves swapped): tests must fail */
    const int i = 4 * (1 - k / 8) + 2 * (r / 8) + (k & 1);
#else
    const int i = 4 * (k / 8) + 2 * (r / 8) + (k & 1);
#endif
    const int lane = 4 * (r % 8) + (k % 8) / 2;
    const unsigned x = blk_emu_wga[wg0 + 32 * w + lane][i / 2];
    const unsigned short h = (unsigned short)(i & 1 ? x >> 16 : x & 0xffff);
    return kind == BLK_EMU_WG_BF16 ? blk_emu_bf16(h) : blk_emu_f16(h);
}
#else
;
#endif

/* wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} d,
 * a-desc, b-desc, scale-d, 1, 1, ta, tb (ka == kb), and
 * .m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2} d, a-desc, b-desc, scale-d, 1, 1
 * (ta = tb = 0); ka / kb: BLK_EMU_WG_F16 .. */
BLK_EMU_FN void blk_emu_wgmma(float *d, int n, unsigned long long da, unsigned long long db,
                          int scale_d, int ta, int tb, int ka, int kb, const unsigned *ar = nullptr)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuWgState &s = blk_emu_wgs[threadIdx.x];
    blk_emu_wg_check();
    if (!s.fenced)
        blk_emu_thread_fail("wgmma.mma_async without a wgmma.fence since the accumulator "
                        "registers were last accessible (a wait_group or the block's start)");
    if (n < 8 || n > 256 || n % 8)
        blk_emu_thread_fail("wgmma.mma_async: N must be a multiple of 8 up to 256");
    const int es = blk_emu_wg_esize(ka), K = blk_emu_wg_k(ka);
    if (blk_emu_wg_esize(kb) != es || (es == 2 && ka != kb))
        blk_emu_thread_fail("wgmma.mma_async: .atype and .btype differ outside the fp8 variants");
    if (es == 1 && (ta || tb))
        blk_emu_thread_fail("wgmma.mma_async: fp8 operands are K-major (no imm-trans)");
    if (ar && es != 2)
        blk_emu_thread_fail("wgmma.mma_async: A from registers is modelled for f16 / bf16 only");
    const int t = (int)threadIdx.x, lane = blk_emu_lane(), w = t / BLK_EMU_WARP % 4;
    if (ar) /* the thread's A fragment, read by the warpgroup after the barrier */
        memcpy(blk_emu_wga[t], ar, sizeof blk_emu_wga[t]);
    if (t % BLK_EMU_WG == 0) {
        blk_emu_count(blk_emu_m->st.mma, 1);
        blk_emu_count(blk_emu_m->st.mma_flops, 2LL * 64 * n * K);
        blk_emu_count(blk_emu_m->st.wgmma, 1);
        blk_emu_count(blk_emu_m->st.wgmma_flops, 2LL * 64 * n * K);
        blk_emu_count(blk_emu_m->st.smem_wavefronts,
                      (ar ? 0 : blk_emu_wg_wavefronts(da, ta != 0, 64, es)) +
                          blk_emu_wg_wavefronts(db, tb != 0, n, es));
        blk_emu_count(blk_emu_m->st.smem_requests, ar ? 1 : 2);
    }
    BlkEmuWgIn in;
    memset(&in, 0, sizeof in); /* compared with memcmp: no stray padding */
    in.da = ar ? ~0ull : da, in.db = db, in.n = n, in.ka = ka, in.kb = kb, in.ta = ta, in.tb = tb;
    BlkEmuWarp &wp = blk_emu_warp();
    memcpy(wp.slot[lane].b, &in, sizeof in);
    blk_emu_wg_bar();
    BlkEmuWgIn lead;
    memcpy(&lead, blk_emu_m->warps[t / BLK_EMU_WG * 4].slot[0].b, sizeof lead);
    if (memcmp(&lead, &in, sizeof in))
        blk_emu_thread_fail("wgmma.mma_async: the threads of a warpgroup gave different "
                        "descriptors or shapes");
    /* the input accumulator: the latest pending record of d, else d */
    const float *old = d;
    for (size_t i = s.v.size(); i-- > 0;)
        if (s.v[i].d == d) {
            old = s.v[i].v;
            break;
        }
    BlkEmuWgRec r;
    r.d = d;
    r.nd = n / 2;
    r.group = -1;
    const int g = lane >> 2, q = lane & 3;
    for (int i = 0; i < n / 2; i++) {
        const int row = 16 * w + blk_emu_wg_row(g + 8 * ((i >> 1) & 1));
        const int col = 8 * (i >> 2) + 2 * q + (i & 1);
        double acc = 0;
        for (int k = 0; k < K; k++)
            acc += (ar ? blk_emu_wg_areg(t / BLK_EMU_WG * BLK_EMU_WG, row, k, ka)
                       : blk_emu_wg_elem(da, ta != 0, row, k, ka)) *
                   blk_emu_wg_elem(db, tb != 0, col, k, kb);
        r.v[i] = (float)(acc + (scale_d ? (double)old[i] : 0.0));
    }
    s.v.push_back(r);
    if (t % BLK_EMU_WG == 0)
        blk_emu_wg_snap(da, ta != 0, db, tb != 0, n, es, ar != nullptr);
    blk_emu_wg_bar();
}
#else
;
#endif

/* wgmma.fence.sync.aligned */
static inline void blk_wgmma_fence(void)
{
    blk_emu_wg_bar();
    blk_emu_wgs[threadIdx.x].fenced = true;
}
/* wgmma.commit_group.sync.aligned: the uncommitted mma_async form a group */
BLK_EMU_FN void blk_wgmma_commit(void)
#if BLK_EMU_SPLIT != 1
{
    blk_emu_wg_bar();
    BlkEmuWgState &s = blk_emu_wgs[threadIdx.x];
    s.committed++;
    for (BlkEmuWgRec &r : s.v)
        if (r.group < 0)
            r.group = s.committed;
    /* the first thread of the warpgroup to run after the barrier (the
     * others find nothing left to number) */
    for (BlkEmuWgSnap &sn : blk_emu_wgsnap[threadIdx.x / BLK_EMU_WG])
        if (sn.group < 0)
            sn.group = s.committed;
}
#else
;
#endif
/* wgmma.wait_group.sync.aligned N: all but the N most recent groups done */
BLK_EMU_FN void blk_emu_wgmma_wait(int N)
#if BLK_EMU_SPLIT != 1
{
    blk_emu_wg_bar();
    BlkEmuWgState &s = blk_emu_wgs[threadIdx.x];
    size_t keep = 0;
    for (size_t i = 0; i < s.v.size(); i++) {
        BlkEmuWgRec &r = s.v[i];
        if (r.group >= 0 && r.group <= s.committed - N)
            memcpy(r.d, r.v, sizeof(float) * (size_t)r.nd);
        else
            s.v[keep++] = r;
    }
    s.v.resize(keep);
    s.fenced = false;
    /* the retired groups' operands: unchanged since their issue, else the
     * launch fails. The first thread of the warpgroup to run after the
     * barrier checks, before any of them can write again. */
    std::vector<BlkEmuWgSnap> &g = blk_emu_wgsnap[threadIdx.x / BLK_EMU_WG];
    long long bad = -1;
    keep = 0;
    for (size_t i = 0; i < g.size(); i++) {
        BlkEmuWgSnap &sn = g[i];
        if (sn.group < 0 || sn.group > s.committed - N) {
            if (keep != i)
                g[keep] = std::move(sn);
            keep++;
            continue;
        }
        for (size_t c = 0; c < sn.at.size() && bad < 0; c++)
            for (int j = 0; j < 16 && bad < 0; j++)
                if (blk_emu_smem_base[sn.at[c] * 16 + j] != sn.b[c * 16 + j])
                    bad = sn.at[c] * 16 + j;
        for (long long c : sn.at) /* the read is complete (blk_emu_race.h) */
            blk_emu_race_wg_retire(c);
        blk_emu_wg_unsnap(sn);
    }
    g.resize(keep);
    if (bad >= 0) {
        char msg[240];
        snprintf(msg, sizeof msg, "shared byte offset %lld, an operand of a wgmma.mma_async, "
                 "changed before the wgmma.wait_group that retires it (PTX ISA 9.7.15.4, "
                 "9.7.15.7.3)", bad);
        blk_emu_thread_fail(msg);
    }
}
#else
;
#endif
template <int N> static inline void blk_wgmma_wait(void)
{
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group N: 0..7");
    blk_emu_wgmma_wait(N);
}

/* the instruction wrappers generated code calls: blk_wgmma_m64n<N>k16_f32_
 * <bf16|f16><TA, TB>(float d[N / 2], a-desc, b-desc, scale-d),
 * blk_wgmma_m64n<N>k16_f32_<bf16|f16>_rs<TB>(d, const unsigned a[4],
 * b-desc, scale-d) (A from registers: "d, a, b-desc, scale-d,
 * imm-scale-a, imm-scale-b, imm-trans-b") and
 * blk_wgmma_m64n<N>k32_f32_<e4m3|e5m2>_<e4m3|e5m2>(d, a-desc, b-desc,
 * scale-d) */
#define BLK_EMU_WGMMA_F8(N, A, B, KA, KB)                                                      \
    static inline void blk_wgmma_m64n##N##k32_f32_##A##_##B(float *d, unsigned long long a,   \
                                                            unsigned long long b, int scale_d) \
    { blk_emu_wgmma(d, N, a, b, scale_d, 0, 0, KA, KB); }
#define BLK_EMU_WGMMA_N(N)                                                                     \
    template <int TA, int TB>                                                                  \
    static inline void blk_wgmma_m64n##N##k16_f32_bf16(float *d, unsigned long long a,         \
                                                       unsigned long long b, int scale_d)      \
    { blk_emu_wgmma(d, N, a, b, scale_d, TA, TB, BLK_EMU_WG_BF16, BLK_EMU_WG_BF16); }          \
    template <int TA, int TB>                                                                  \
    static inline void blk_wgmma_m64n##N##k16_f32_f16(float *d, unsigned long long a,          \
                                                      unsigned long long b, int scale_d)       \
    { blk_emu_wgmma(d, N, a, b, scale_d, TA, TB, BLK_EMU_WG_F16, BLK_EMU_WG_F16); }            \
    template <int TB>                                                                          \
    static inline void blk_wgmma_m64n##N##k16_f32_bf16_rs(float *d, const unsigned *a,         \
                                                          unsigned long long b, int scale_d)   \
    { blk_emu_wgmma(d, N, 0, b, scale_d, 0, TB, BLK_EMU_WG_BF16, BLK_EMU_WG_BF16, a); }        \
    template <int TB>                                                                          \
    static inline void blk_wgmma_m64n##N##k16_f32_f16_rs(float *d, const unsigned *a,          \
                                                         unsigned long long b, int scale_d)    \
    { blk_emu_wgmma(d, N, 0, b, scale_d, 0, TB, BLK_EMU_WG_F16, BLK_EMU_WG_F16, a); }          \
    BLK_EMU_WGMMA_F8(N, e4m3, e4m3, BLK_EMU_WG_E4M3, BLK_EMU_WG_E4M3)                          \
    BLK_EMU_WGMMA_F8(N, e4m3, e5m2, BLK_EMU_WG_E4M3, BLK_EMU_WG_E5M2)                          \
    BLK_EMU_WGMMA_F8(N, e5m2, e4m3, BLK_EMU_WG_E5M2, BLK_EMU_WG_E4M3)                          \
    BLK_EMU_WGMMA_F8(N, e5m2, e5m2, BLK_EMU_WG_E5M2, BLK_EMU_WG_E5M2)
#define BLK_EMU_WGMMA_N4(a, b, c, d) BLK_EMU_WGMMA_N(a) BLK_EMU_WGMMA_N(b) BLK_EMU_WGMMA_N(c) BLK_EMU_WGMMA_N(d)
BLK_EMU_WGMMA_N4(8, 16, 24, 32)
BLK_EMU_WGMMA_N4(40, 48, 56, 64)
BLK_EMU_WGMMA_N4(72, 80, 88, 96)
BLK_EMU_WGMMA_N4(104, 112, 120, 128)
BLK_EMU_WGMMA_N4(136, 144, 152, 160)
BLK_EMU_WGMMA_N4(168, 176, 184, 192)
BLK_EMU_WGMMA_N4(200, 208, 216, 224)
BLK_EMU_WGMMA_N4(232, 240, 248, 256)
#undef BLK_EMU_WGMMA_N4
#undef BLK_EMU_WGMMA_N
#undef BLK_EMU_WGMMA_F8

/* setmaxnreg.{inc,dec}.sync.aligned.u32 N (PTX ISA "setmaxnreg", sm_90a):
 * the per-thread register count of the executing warpgroup becomes N, a
 * multiple of 8 in [24, 256]; every warp of the warpgroup executes the
 * same instruction. Registers come from and go back to a pool per CTA:
 * .dec releases them, .inc blocks until the pool has them. The count at
 * entry is ptxas's choice, unknown here: the model takes the most a block
 * of this size can hold with one block per SM (__launch_bounds__(n, 1):
 * 64K registers / n, a multiple of 8, at most 256), so a .dec above it
 * fails and an .inc at or below it asks for nothing. Misuse fails the
 * launch; waiting for registers that never come is a deadlock report. */
BLK_EMU_VAR int blk_emu_nreg[1024 / BLK_EMU_WG]; /* per warpgroup: registers per thread */
BLK_EMU_VAR long long blk_emu_reg_pool;          /* the CTA's free registers */
BLK_EMU_VAR bool blk_emu_reg_wait[1024 / BLK_EMU_WG]; /* its leader waits for registers */

static inline int blk_emu_reg_entry(const BlkEmuMachine *m)
{
    const int e = 65536 / m->nthreads / 8 * 8;
    return e > 256 ? 256 : e;
}
BLK_EMU_FN void blk_emu_setmaxnreg(int n, bool inc)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    const int t = (int)threadIdx.x, wg = t / BLK_EMU_WG, lead = wg * 4;
    char msg[200];
    if (n < 24 || n > 256 || n % 8) {
        snprintf(msg, sizeof msg, "setmaxnreg.%s %d: the count must be a multiple of 8 in "
                 "[24, 256]", inc ? "inc" : "dec", n);
        blk_emu_thread_fail(msg);
    }
    blk_emu_wg_check();
    const int in[2] = {n, inc};
    memcpy(blk_emu_warp().slot[blk_emu_lane()].b, in, sizeof in);
    blk_emu_bar_wait(m->warps[lead].wgbar, BLK_EMU_WG, BLK_EMU_TAG_REGS);
    if (memcmp(m->warps[lead].slot[0].b, in, sizeof in))
        blk_emu_thread_fail("setmaxnreg: the warps of a warpgroup executed different "
                            "setmaxnreg instructions");
    if (t % BLK_EMU_WG == 0) {
        int &cur = blk_emu_nreg[wg];
        if (!inc && n > cur) {
            snprintf(msg, sizeof msg, "setmaxnreg.dec %d above the warpgroup's %d registers "
                     "per thread", n, cur);
            blk_emu_thread_fail(msg);
        }
        if (!inc) {
            blk_emu_reg_pool += (long long)(cur - n) * BLK_EMU_WG;
            cur = n;
            for (int w = 0; w < m->nthreads / BLK_EMU_WG; w++) /* .inc waiters look again */
                if (blk_emu_reg_wait[w]) {
                    blk_emu_reg_wait[w] = false;
                    m->where[w * BLK_EMU_WG] = 0;
                    m->running++;
                }
        }
        while (inc && n > cur && blk_emu_reg_pool < (long long)(n - cur) * BLK_EMU_WG) {
            m->where[t] = BLK_EMU_TAG_REGS;
            blk_emu_reg_wait[wg] = true;
            if (--m->running == 0) {
                blk_emu_deadlock(m);
                blk_emu_abandon();
            }
            while (m->where[t] && !m->failed)
                blk_emu_yield();
            if (m->failed)
                blk_emu_abandon();
        }
        if (inc && n > cur) {
            blk_emu_reg_pool -= (long long)(n - cur) * BLK_EMU_WG;
            cur = n;
        }
    }
    blk_emu_bar_wait(m->warps[lead].wgbar, BLK_EMU_WG, BLK_EMU_TAG_REGS);
}
#else
;
#endif
template <int N> static inline void blk_setmaxnreg_inc(void) { blk_emu_setmaxnreg(N, true); }
template <int N> static inline void blk_setmaxnreg_dec(void) { blk_emu_setmaxnreg(N, false); }
#endif /* !BLK_EMU_HIP */

/* A fresh block (thread 0, between the end barriers) or launch: every
 * warpgroup at the entry count, the pool what the SM's 64K leave. */
BLK_EMU_FN void blk_emu_regs_reset(BlkEmuMachine *m)
#if BLK_EMU_SPLIT != 1
{
#ifndef BLK_EMU_HIP
    const int e = blk_emu_reg_entry(m);
    for (int w = 0; w < 1024 / BLK_EMU_WG; w++) {
        blk_emu_nreg[w] = e;
        blk_emu_reg_wait[w] = false;
    }
    blk_emu_reg_pool = 65536 - (long long)e * m->nthreads;
#else
    (void)m;
#endif
}
#else
;
#endif

/* At the end of a thread's block: mma_async still pending are dropped. */
BLK_EMU_FN void blk_emu_wg_drop(int t)
#if BLK_EMU_SPLIT != 1
{
#ifndef BLK_EMU_HIP
    blk_emu_wgs[t].v.clear();
    blk_emu_wgs[t].committed = 0;
    blk_emu_wgs[t].fenced = false;
    if (t % BLK_EMU_WG == 0) {
        for (const BlkEmuWgSnap &sn : blk_emu_wgsnap[t / BLK_EMU_WG])
            blk_emu_wg_unsnap(sn);
        blk_emu_wgsnap[t / BLK_EMU_WG].clear();
    }
#else
    (void)t;
#endif
}
#else
;
#endif

#endif
