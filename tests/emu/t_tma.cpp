/* t_tma.cpp — the tensor memory accelerator of runtime/emu/blk_emu_tma.h
 * alone (ctest label emu, emu.sh mode tma), each check written from the
 * vendor's documents, not from the header:
 *   - cuTensorMapEncodeTiled's argument rules (CUDA Driver API 6.30): each
 *     broken rule is CUDA_ERROR_INVALID_VALUE, interleave NOT_SUPPORTED
 *     (rank 6; at rank 5 each globalStrides entry, any order allowed);
 *   - mbarrier phases (PTX ISA "mbarrier"): waiters block until the last
 *     expected arrival; parity P of the immediately preceding phase is
 *     already complete; a phase with all arrivals but bytes outstanding is
 *     not; a wait nobody can end is a deadlock report, not a hang;
 *   - cp.async.bulk.tensor tile loads (1-D, 2-D with every swizzle mode,
 *     3-D, 4-D, 5-D: globalStrides with padding, or not in dim order as a
 *     [B, S, H, D] tensor read as (D, S, H, B) has; boxes of extent 1 on
 *     the dims an attention kernel indexes by a scalar, a plane index past
 *     the tensor) at coordinates inside and across the tensor's edges: every
 *     element of the box where the tensor-copy swizzle puts it (16-byte
 *     chunk c of 128-byte line L of the span's pattern goes to chunk c ^
 *     (L mod 2, 4, 8) for 32B, 64B, 128B), zeros outside the tensor, NaN
 *     with OOB fill NAN_REQUEST_ZERO_FMA, the old bytes before the wait;
 *   - tile stores (bulk_group, 2-D and 4-D): nothing written before the
 *     group is waited for, then exactly the box's elements inside the
 *     tensor;
 *   - the Hopper GEMM main loop: A and B tiles by TMA into a 2-stage ring
 *     (128B swizzle, one mbarrier per stage, phases alternating as the
 *     stages are reused) read by wgmma m64n64k16 through 128B-swizzle
 *     K-major descriptors (PTX ISA 9.7.15.5.1.2), D equal to a scalar
 *     product;
 *   - misuse fails the launch with its message: an unaligned destination,
 *     a map of another rank (3-D and 5-D copies), a map never encoded,
 *     an mbarrier never initialized, an arrival beyond the count, a block
 *     ending with a load in flight or a store not waited for.
 * Exit 0 when every check holds. */
#include "blk_emu.h"
#include "emu_check.h"

static int launch(void (*k)(int), int threads, long long smem, char *err, size_t n)
{
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    err[0] = 0;
    return blk_emu_launch(k, grid, threads, smem, params, nullptr, err, n);
}
static void run(void (*k)(int), int threads, long long smem, const char *what)
{
    char err[512];
    if (launch(k, threads, smem, err, sizeof err))
        CHECK(false, "%s: launch: %s", what, err);
}
/* the launch must fail with `want` in its message */
static void refuse(void (*k)(int), int threads, long long smem, const char *want)
{
    char err[512];
    int rc = launch(k, threads, smem, err, sizeof err);
    CHECK(rc != 0 && strstr(err, want), "expected a failure with '%s': rc %d, '%s'", want, rc, err);
}

static unsigned short bf(double v) { return __float2bfloat16_rn((float)v).x; }
static double unbf(unsigned short h) { return (double)blk_emu_bf16(h); }

/* CUtensorMapDataType */
enum { U8 = 0, U16 = 1, I32 = 3, F16 = 6, F32 = 7, BF16 = 9 };

/* ------------------------------------------------------------ encode rules */

static void encode_tests()
{
    alignas(64) static unsigned char mapbuf[256];
    alignas(16) static unsigned char g[1 << 16];
    BlkTensorMap *map = (BlkTensorMap *)mapbuf;
    struct Args {
        int dtype; unsigned rank; unsigned char *addr; unsigned long long dim[5], stride[4];
        unsigned box[5], estr[5]; int inter, swz, l2, oob; BlkTensorMap *map;
    };
    const Args ok = {BF16, 2, g, {64, 32}, {128}, {64, 16}, {1, 1}, 0, 3, 0, 0, map};
    auto enc = [](const Args &a) {
        return blk_emu_tmap_encode(a.map, a.dtype, a.rank, a.addr, a.dim, a.stride, a.box, a.estr,
                                   a.inter, a.swz, a.l2, a.oob);
    };
    struct Case { const char *what; Args a; int want; };
    std::vector<Case> cs;
    auto with = [&](const char *what, int want, auto f) {
        Args a = ok;
        f(a);
        cs.push_back({what, a, want});
    };
    with("valid: bf16 64 x 32, box 64 x 16, 128B swizzle", 0, [](Args &) {});
    with("map not 64-byte aligned", 1, [&](Args &a) { a.map = (BlkTensorMap *)(mapbuf + 32); });
    with("rank 0", 1, [](Args &a) { a.rank = 0; });
    with("rank 6", 1, [](Args &a) { a.rank = 6; });
    with("global address not 16-byte aligned", 1, [](Args &a) { a.addr += 8; });
    with("globalDim 0", 1, [](Args &a) { a.dim[1] = 0; });
    with("globalDim 2^32 + 1", 1, [](Args &a) { a.dim[1] = (1ull << 32) + 1; });
    with("globalDim 2^32", 0, [](Args &a) { a.dim[1] = 1ull << 32; });
    with("globalStrides not a multiple of 16", 1, [](Args &a) { a.stride[0] = 136; });
    with("globalStrides 2^40", 1, [](Args &a) { a.stride[0] = 1ull << 40; });
    with("boxDim 0", 1, [](Args &a) { a.box[1] = 0; });
    with("boxDim 257", 1, [](Args &a) { a.box[1] = 257; });
    with("boxDim 256", 0, [](Args &a) { a.box[1] = 256; });
    with("inner box 8 bytes (not a multiple of 16)", 1, [](Args &a) { a.box[0] = 4, a.swz = 0; });
    with("elementStrides 0", 1, [](Args &a) { a.estr[1] = 0; });
    with("elementStrides 9", 1, [](Args &a) { a.estr[0] = 9; });
    with("128B swizzle, inner box 256 bytes", 1, [](Args &a) { a.box[0] = 128; });
    with("64B swizzle, inner box 128 bytes", 1, [](Args &a) { a.swz = 2; });
    with("64B swizzle, inner box 64 bytes", 0, [](Args &a) { a.swz = 2, a.box[0] = 32; });
    with("32B swizzle, inner box 32 bytes", 0, [](Args &a) { a.swz = 1, a.box[0] = 16; });
    with("no swizzle, inner box 512 bytes", 0, [](Args &a) { a.swz = 0, a.box[0] = 256; });
    with("swizzle mode 4", 1, [](Args &a) { a.swz = 4; });
    with("NaN OOB fill on an integer type", 1, [](Args &a) { a.dtype = I32, a.box[0] = 32, a.oob = 1; });
    with("NaN OOB fill on bf16", 0, [](Args &a) { a.oob = 1; });
    with("data type 13", 1, [](Args &a) { a.dtype = 13; });
    with("interleave 32B (not modelled)", 801, [](Args &a) { a.inter = 2; });
    /* rank 5: every globalStrides entry is checked, none is ordered */
    auto r5 = [](Args &a) {
        a.rank = 5;
        const unsigned long long d[5] = {64, 30, 3, 2, 2}, st[4] = {384, 128, 11520, 23040};
        for (int i = 0; i < 5; i++)
            a.dim[i] = d[i], a.box[i] = i ? 1 : 64, a.estr[i] = 1;
        for (int i = 0; i < 4; i++)
            a.stride[i] = st[i];
    };
    with("valid: rank 5, strides out of dim order", 0, r5);
    with("rank 5, globalStrides[3] not a multiple of 16", 1, [&](Args &a) { r5(a), a.stride[3] = 23048; });
    with("rank 5, globalStrides[1] 2^40", 1, [&](Args &a) { r5(a), a.stride[1] = 1ull << 40; });
    with("rank 5, boxDim[4] 257", 1, [&](Args &a) { r5(a), a.box[4] = 257; });
    with("rank 5, globalDim[3] 0", 1, [&](Args &a) { r5(a), a.dim[3] = 0; });
    with("rank 3, box 1 on dim 2", 0, [&](Args &a) { r5(a), a.rank = 3, a.box[1] = 16; });
    for (const Case &c : cs) {
        int rc = enc(c.a);
        CHECK(rc == c.want, "cuTensorMapEncodeTiled %s: %d, expected %d", c.what, rc, c.want);
    }
}

/* ------------------------------------------------------------ mbarrier */

static volatile int mb_seen[256];
static void k_mbar(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)sm;
    int *x = (int *)(sm + 64);
    const int t = (int)threadIdx.x;
    if (t == 0) {
        blk_mbar_init(bar, 2);
        *x = 0;
    }
    __syncthreads();
    for (int ph = 0; ph < 4; ph++) {
        if (t == 1)
            blk_mbar_arrive(bar);
        if (t == 0) {
            *x = 100 + ph; /* before the last arrival: every waiter must see it */
            blk_mbar_arrive(bar);
        }
        blk_mbar_wait_parity(bar, (unsigned)ph & 1);
        if (*x != 100 + ph)
            mb_seen[t] = -1;
        /* the phase just completed is the immediately preceding one now */
        blk_mbar_wait_parity(bar, (unsigned)ph & 1);
        __syncthreads();
    }
    if (t == 0)
        mb_seen[0] = mb_seen[0] == -1 ? -1 : 1;
}
/* count 2 but one arrival: the waiters can never go on */
static void k_mbar_deadlock(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)sm;
    if (threadIdx.x == 0)
        blk_mbar_init(bar, 2);
    __syncthreads();
    if (threadIdx.x == 1)
        blk_mbar_arrive(bar);
    blk_mbar_wait_parity(bar, 0);
}
/* all arrivals made, 16 bytes expected and never transferred */
static void k_mbar_tx_pending(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)sm;
    if (threadIdx.x == 0) {
        blk_mbar_init(bar, 1);
        blk_mbar_arrive_expect_tx(bar, 16);
        blk_mbar_wait_parity(bar, 0);
    }
}
static void k_mbar_overarrive(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)sm;
    if (threadIdx.x == 0) {
        blk_mbar_init(bar, 1);
        blk_mbar_arrive_expect_tx(bar, 16);
        blk_mbar_arrive(bar);
    }
}
static void k_mbar_uninit(int)
{
    BLK_DYNAMIC_SMEM(sm);
    if (threadIdx.x == 0)
        blk_mbar_arrive((unsigned long long *)sm);
}

static void mbar_tests()
{
    memset((void *)mb_seen, 0, sizeof mb_seen);
    run(k_mbar, 128, 1024, "mbarrier phases");
    int bad = 0;
    for (int t = 0; t < 128; t++)
        bad += mb_seen[t] == -1;
    CHECK(bad == 0 && mb_seen[0] == 1,
          "mbarrier phases: %d threads went past a wait before the last arrival", bad);
    refuse(k_mbar_deadlock, 64, 1024, "at an mbarrier wait");
    refuse(k_mbar_tx_pending, 32, 1024, "thread 0 at an mbarrier wait");
    refuse(k_mbar_overarrive, 32, 1024, "arrive beyond the expected arrival count");
    refuse(k_mbar_uninit, 32, 1024, "used before mbarrier.init");
}

/* ------------------------------------------------------------ loads */

/* the global tensor: value of element x (innermost first, rank up to 5),
 * small integers exact in bf16 and never 0 */
static double gval(const long long *x)
{
    return (double)((x[0] * 7 + x[1] * 31 + x[2] * 11 + x[3] * 13 + x[4] * 17) % 200 + 1);
}
/* where the tensor-copy swizzle puts shared byte a: chunk c of 128-byte
 * line L goes to chunk c ^ (L mod span / 16) */
static long long swz_ref(long long a, int span)
{
    if (!span)
        return a;
    const long long line = a / 128, chunk = a / 16 % 8, rep = span / 16;
    return line * 128 + ((chunk ^ (line % rep)) * 16) + a % 16;
}

/* A box of a tensor of rank 1..5 in global memory: element x (innermost
 * first) at element offset sum x[i] * step[i], step[0] = 1; the other steps
 * are the driver's globalStrides[i - 1] / element size, in any order (a
 * [B, S, H, D] tensor read as (D, S, H, B) has step[1] = H * D > step[2] =
 * D); 0 for the default, the dims below packed with padding pad[i]
 * elements after each run of dim i. */
struct LoadCase {
    int rank, dtype, swz, oob;           /* swz: 0, 32, 64, 128 bytes */
    unsigned long long dim[5], pad[5];   /* pad: elements after each run of dim i */
    unsigned box[5];
    int c[5];
    unsigned long long step[5];          /* 0: dims packed (with pad) */
};
alignas(64) static BlkTensorMap ld_map;
static LoadCase ld_case;
static long long ld_dst = 256;
static unsigned char *ld_g;
static std::vector<unsigned char> ld_before, ld_after;
static bool ld_oldseen;
static void k_load(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)(sm + 8);
    const LoadCase &L = ld_case;
    const long long esz = L.dtype == F32 ? 4 : 2;
    long long bytes = esz;
    for (int i = 0; i < L.rank; i++)
        bytes *= L.box[i];
    if (threadIdx.x == 0) {
        blk_mbar_init(bar, 1);
        blk_fence_mbar_init();
        memset(sm + ld_dst, 0x5a, (size_t)bytes);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const int *c = L.c;
        blk_mbar_arrive_expect_tx(bar, (unsigned)bytes);
        if (L.rank == 1)
            blk_tma_load_1d(sm + ld_dst, &ld_map, c[0], bar);
        else if (L.rank == 2)
            blk_tma_load_2d(sm + ld_dst, &ld_map, c[0], c[1], bar);
        else if (L.rank == 3)
            blk_tma_load_3d(sm + ld_dst, &ld_map, c[0], c[1], c[2], bar);
        else if (L.rank == 4)
            blk_tma_load_4d(sm + ld_dst, &ld_map, c[0], c[1], c[2], c[3], bar);
        else
            blk_tma_load_5d(sm + ld_dst, &ld_map, c[0], c[1], c[2], c[3], c[4], bar);
        /* no thread has waited yet: the old bytes */
        ld_oldseen = sm[ld_dst] == 0x5a && sm[ld_dst + bytes - 1] == 0x5a;
    }
    __syncthreads();
    blk_mbar_wait_parity(bar, 0);
    if (threadIdx.x == 0)
        ld_after.assign(sm + ld_dst, sm + ld_dst + bytes);
}

static void put(unsigned char *at, int dtype, double v)
{
    if (dtype == F32) {
        float f = (float)v;
        memcpy(at, &f, 4);
    } else {
        unsigned short h = dtype == BF16 ? bf(v) : __float2half_rn((float)v).x;
        memcpy(at, &h, 2);
    }
}

static void load_case(const LoadCase &L0, const char *what)
{
    LoadCase L = L0;
    const long long esz = L.dtype == F32 ? 4 : 2;
    for (int i = L.rank; i < 5; i++) /* dims past the rank: one element */
        L.dim[i] = 1, L.box[i] = 1, L.c[i] = 0, L.step[i] = 0;
    long long span = 1; /* elements the tensor covers (last one + 1) */
    for (int i = 0; i < 5; i++) {
        if (!L.step[i])
            L.step[i] = i ? L.step[i - 1] * (L.dim[i - 1] + L.pad[i - 1]) : 1;
        span += (long long)(L.dim[i] - 1) * (long long)L.step[i];
    }
    std::vector<unsigned char> g((size_t)((span + 8) * esz + 64));
    ld_g = (unsigned char *)(((uintptr_t)g.data() + 15) & ~(uintptr_t)15);
    /* padding reads as 999: a box element taken from it is wrong */
    for (long long e = 0; e < span + 8; e++)
        put(ld_g + e * esz, L.dtype, 999);
    long long x[5];
    for (x[4] = 0; x[4] < (long long)L.dim[4]; x[4]++)
        for (x[3] = 0; x[3] < (long long)L.dim[3]; x[3]++)
            for (x[2] = 0; x[2] < (long long)L.dim[2]; x[2]++)
                for (x[1] = 0; x[1] < (long long)L.dim[1]; x[1]++)
                    for (x[0] = 0; x[0] < (long long)L.dim[0]; x[0]++) {
                        long long e = 0;
                        for (int i = 0; i < 5; i++)
                            e += x[i] * (long long)L.step[i];
                        put(ld_g + e * esz, L.dtype, gval(x));
                    }
    unsigned long long strides[4];
    for (int i = 1; i < 5; i++)
        strides[i - 1] = L.step[i] * (unsigned long long)esz;
    const unsigned estr[5] = {1, 1, 1, 1, 1};
    const int swzmode = L.swz == 128 ? 3 : L.swz == 64 ? 2 : L.swz == 32 ? 1 : 0;
    int rc = blk_emu_tmap_encode(&ld_map, L.dtype, (unsigned)L.rank, ld_g, L.dim, strides, L.box,
                                 estr, 0, swzmode, 0, L.oob);
    CHECK(rc == 0, "%s: encode %d", what, rc);
    ld_case = L;
    ld_oldseen = false;
    ld_after.clear();
    run(k_load, 64, 8192, what);
    CHECK(ld_oldseen, "%s: the destination changed before any thread waited", what);
    if (ld_after.empty())
        return;
    /* box element j (innermost first) lands at dense offset sum j[i] *
     * (box[0] * ... * box[i - 1]), then swizzled */
    int bad = 0;
    long long j[5], n = 0;
    for (j[4] = 0; j[4] < L.box[4]; j[4]++)
        for (j[3] = 0; j[3] < L.box[3]; j[3]++)
            for (j[2] = 0; j[2] < L.box[2]; j[2]++)
                for (j[1] = 0; j[1] < L.box[1]; j[1]++)
                    for (j[0] = 0; j[0] < L.box[0]; j[0]++, n++) {
                        bool in = true;
                        for (int i = 0; i < 5; i++) {
                            x[i] = L.c[i] + j[i];
                            in = in && x[i] >= 0 && x[i] < (long long)L.dim[i];
                        }
                        const long long at = swz_ref(ld_dst + n * esz, L.swz) - ld_dst;
                        double got;
                        if (esz == 4) {
                            float f;
                            memcpy(&f, &ld_after[(size_t)at], 4);
                            got = f;
                        } else {
                            unsigned short h;
                            memcpy(&h, &ld_after[(size_t)at], 2);
                            got = L.dtype == BF16 ? unbf(h) : (double)blk_emu_f16(h);
                        }
                        const double want = in ? gval(x) : L.oob ? NAN : 0.0;
                        const bool ok = std::isnan(want) ? std::isnan(got) : got == want;
                        if (!ok && bad++ < 3)
                            CHECK(false, "%s: box element (%lld, %lld, %lld, %lld, %lld) at byte "
                                  "%lld is %g, expected %g", what, j[0], j[1], j[2], j[3], j[4],
                                  at, got, want);
                    }
}

static void load_tests()
{
    /* 2-D bf16, 40 rows of 72 (pitch 80), each swizzle mode with its
     * widest inner box, inside and across every edge */
    const int swz[4] = {0, 32, 64, 128};
    const int at[4][2] = {{8, 4}, {-8, -4}, {48, 30}, {0, 0}};
    for (int s = 0; s < 4; s++)
        for (int a = 0; a < 4; a++) {
            LoadCase L = {2, BF16, swz[s], 0, {72, 40}, {8}, {(unsigned)(swz[s] ? swz[s] / 2 : 24), 16},
                          {at[a][0], at[a][1]}, {}};
            char what[160];
            snprintf(what, sizeof what, "load 2-D bf16 swizzle %dB box %u x 16 at (%d, %d)",
                     swz[s], L.box[0], at[a][0], at[a][1]);
            load_case(L, what);
        }
    LoadCase f32 = {2, F32, 128, 1, {20, 9}, {16}, {32, 8}, {-4, 3}, {}};
    load_case(f32, "load 2-D f32 128B swizzle, NaN OOB fill, across the right and bottom edges");
    LoadCase f16 = {2, F16, 64, 0, {40, 40}, {}, {32, 12}, {16, -6}, {}};
    load_case(f16, "load 2-D f16 64B swizzle across the top edge");
    LoadCase one = {1, F32, 0, 0, {100}, {}, {40}, {76}, {}};
    load_case(one, "load 1-D f32 across the end");
    LoadCase three = {3, F32, 0, 0, {12, 5, 3}, {0, 1}, {8, 4, 2}, {6, 3, 2}, {}};
    load_case(three, "load 3-D f32 across three edges");
    /* rank 3, the attention operand K[z, n +: 64, :] of f16[Z, S, D]: a
     * box of 64 x 16 rows x 1 plane (the scalar-indexed dim) */
    LoadCase k3 = {3, F16, 128, 0, {64, 50, 3}, {}, {64, 16, 1}, {0, 48, 2}, {}};
    load_case(k3, "load 3-D f16 128B swizzle, 16 rows of plane 2, the last 2 rows in the tensor");
    /* the same with a non-unit outer stride (planes 56 rows apart, 6 of
     * padding: a slice of a longer sequence) and a 64B swizzle */
    LoadCase k3p = {3, BF16, 64, 0, {32, 50, 3}, {0, 6}, {32, 32, 1}, {0, 40, 1}, {}};
    load_case(k3p, "load 3-D bf16 64B swizzle, planes 56 rows apart, across the bottom edge");
    /* a plane index past the tensor: the whole box is the fill */
    LoadCase k3o = {3, BF16, 128, 1, {64, 20, 2}, {}, {64, 8, 1}, {0, 4, 2}, {}};
    load_case(k3o, "load 3-D bf16 NaN OOB fill, plane 2 of 2 (outside)");
    /* rank 5 (D, S, H, B, E) of a [E, B, S, H, D] tensor, H inside S in
     * memory: strides not ordered by dim (S's step H * D > H's step D) */
    LoadCase k5 = {5, F16, 128, 0, {64, 30, 3, 2, 2}, {}, {64, 16, 1, 1, 1}, {0, 24, 1, 1, 1},
                   {1, 3 * 64, 64, 30 * 3 * 64, 2 * 30 * 3 * 64}};
    load_case(k5, "load 5-D f16 128B swizzle, strides out of dim order, 6 of 16 rows in the tensor");
    /* rank 5 with a box of extent > 1 on every dim, at a tail of each */
    LoadCase k5t = {5, F32, 0, 1, {8, 5, 4, 3, 2}, {4, 0, 1, 0, 0}, {4, 2, 2, 2, 2}, {6, 4, 3, 2, 1},
                    {}};
    load_case(k5t, "load 5-D f32 NaN OOB fill, a box across the end of all 5 dims");
    LoadCase k4 = {4, BF16, 32, 0, {16, 9, 2, 3}, {0, 3}, {16, 8, 1, 1}, {0, -4, 1, 2}, {}};
    load_case(k4, "load 4-D bf16 32B swizzle across the top edge");
}

/* ------------------------------------------------------------ stores */

alignas(64) static BlkTensorMap st_map;
static float *st_g;
static float st_seen_before;
static const int SR = 24, SC = 40, SP = 48; /* rows, columns, pitch (f32) */
static void k_store(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const int t = (int)threadIdx.x;
    /* the 16 x 32 box, 128-byte rows in the 128B swizzle layout */
    for (int e = t; e < 16 * 32; e += (int)blockDim.x) {
        const float v = (float)(1000 + e);
        memcpy(sm + 1024 + swz_ref(e * 4, 128), &v, 4);
    }
    __syncthreads();
    if (t == 0) {
        blk_fence_proxy_async();
        blk_tma_store_2d(&st_map, SC - 16, SR - 8, sm + 1024);
        blk_bulk_commit();
        st_seen_before = st_g[(SR - 8) * SP + SC - 16];
        blk_bulk_wait_read<0>();
        blk_bulk_wait<0>();
    }
}
static void k_store_nowait(int)
{
    BLK_DYNAMIC_SMEM(sm);
    if (threadIdx.x == 0) {
        blk_tma_store_2d(&st_map, 0, 0, sm + 1024);
        blk_bulk_commit();
    }
}

/* waited for, but never committed: no group covers it */
static void k_store_nocommit(int)
{
    BLK_DYNAMIC_SMEM(sm);
    if (threadIdx.x == 0) {
        blk_tma_store_2d(&st_map, 0, 0, sm + 1024);
        blk_bulk_wait<0>();
    }
}

/* A 4-D store: f32 (16, 12, 3, 2) innermost first, rows of 16 with a
 * pitch of 20, planes of 13 rows (one of padding); a box of 16 x 8 x 1 x
 * 1 at (0, 8, 2, 1): rows 8..11 of plane 2 of block 1 are written, rows
 * 12..15 fall outside the tensor (not written: the padding row keeps its
 * value), nothing else changes. */
alignas(64) static BlkTensorMap st4_map;
enum { S4C = 16, S4P = 20, S4R = 12, S4RP = 13, S4H = 3, S4B = 2 };
static void k_store4(int)
{
    BLK_DYNAMIC_SMEM(sm);
    for (int e = (int)threadIdx.x; e < 16 * 8; e += (int)blockDim.x) {
        const float v = (float)(2000 + e);
        memcpy(sm + 1024 + e * 4, &v, 4);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        blk_fence_proxy_async();
        blk_tma_store_4d(&st4_map, 0, 8, 2, 1, sm + 1024);
        blk_bulk_commit();
        blk_bulk_wait<0>();
    }
}
static void store4_test()
{
    const int n = S4P * S4RP * S4H * S4B;
    std::vector<float> g((size_t)n + 16);
    float *p = (float *)(((uintptr_t)g.data() + 15) & ~(uintptr_t)15);
    for (int i = 0; i < n; i++)
        p[i] = -1.0f;
    const unsigned long long dim[4] = {S4C, S4R, S4H, S4B},
                             str[3] = {S4P * 4, S4P * S4RP * 4, S4P * S4RP * S4H * 4};
    const unsigned box[4] = {16, 8, 1, 1}, es[4] = {1, 1, 1, 1};
    int rc = blk_emu_tmap_encode(&st4_map, F32, 4, p, dim, str, box, es, 0, 0, 0, 0);
    CHECK(rc == 0, "store 4-D map: encode %d", rc);
    run(k_store4, 64, 8192, "store 4-D");
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const int c = i % S4P, r = i / S4P % S4RP, h = i / (S4P * S4RP) % S4H,
                  b = i / (S4P * S4RP * S4H);
        const bool in = c < S4C && r >= 8 && r < S4R && h == 2 && b == 1;
        const float want = in ? (float)(2000 + (r - 8) * 16 + c) : -1.0f;
        if (p[i] != want && bad++ < 3)
            CHECK(false, "store 4-D: element (%d, %d, %d, %d) is %g, expected %g", c, r, h, b,
                  p[i], want);
    }
}

static void store_tests()
{
    std::vector<float> g((size_t)(SR * SP + 16));
    st_g = (float *)(((uintptr_t)g.data() + 15) & ~(uintptr_t)15);
    for (int i = 0; i < SR * SP; i++)
        st_g[i] = -1.0f;
    unsigned long long dim[2] = {SC, SR}, str[1] = {SP * 4};
    unsigned box[2] = {32, 16}, es[2] = {1, 1};
    int rc = blk_emu_tmap_encode(&st_map, F32, 2, st_g, dim, str, box, es, 0, 3, 0, 0);
    CHECK(rc == 0, "store map: encode %d", rc);
    run(k_store, 64, 8192, "store 2-D");
    CHECK(st_seen_before == -1.0f, "store 2-D: global memory written before the wait (%g)",
          st_seen_before);
    int bad = 0;
    for (int r = 0; r < SR; r++)
        for (int c = 0; c < SP; c++) {
            const int j1 = r - (SR - 8), j0 = c - (SC - 16);
            const bool inbox = j1 >= 0 && j1 < 16 && j0 >= 0 && j0 < 32 && c < SC;
            const float want = inbox ? (float)(1000 + j1 * 32 + j0) : -1.0f;
            if (st_g[r * SP + c] != want && bad++ < 3)
                CHECK(false, "store 2-D: element (%d, %d) is %g, expected %g", r, c,
                      st_g[r * SP + c], want);
        }
    refuse(k_store_nowait, 32, 8192, "store not waited for");
    refuse(k_store_nocommit, 32, 8192, "store not waited for");
    store4_test();
}

/* ------------------------------------------------------------ TMA + wgmma */

enum { GM = 64, GN = 64, GK = 256, KB = 64 };
alignas(64) static BlkTensorMap gm_a, gm_b;
static float gm_d[GM][GN];
static double Av(int m, int k) { return (double)((m * 5 + k * 3) % 9 - 4); }
static double Bv(int k, int n) { return (double)((k * 7 + n) % 5 - 2); }
/* a K-major operand of 64 rows of 128 bytes, 128B swizzle (PTX ISA
 * 9.7.15.5.1.2.2): start >> 4, LBO 16 (unused), SBO 1024 (8 rows), mode 1 */
static unsigned long long desc128(long long start)
{
    return (unsigned long long)(start >> 4) | (16ull >> 4) << 16 | (1024ull >> 4) << 32 |
           1ull << 62;
}
static void k_gemm(int)
{
    BLK_DYNAMIC_SMEM(sm);
    /* stage s: A at 16384 s, B at 16384 s + 8192; barriers at 32768 */
    unsigned long long *bar = (unsigned long long *)(sm + 32768);
    const int t = (int)threadIdx.x, nk = GK / KB;
    if (t == 0) {
        blk_mbar_init(&bar[0], 1);
        blk_mbar_init(&bar[1], 1);
        blk_fence_mbar_init();
        for (int s = 0; s < 2; s++) {
            blk_mbar_arrive_expect_tx(&bar[s], 2 * 8192);
            blk_tma_load_2d(sm + 16384 * s, &gm_a, s * KB, 0, &bar[s]);
            blk_tma_load_2d(sm + 16384 * s + 8192, &gm_b, s * KB, 0, &bar[s]);
        }
    }
    __syncthreads();
    float d[32];
    for (int i = 0; i < 32; i++)
        d[i] = 0;
    for (int kb = 0; kb < nk; kb++) {
        const int s = kb % 2;
        blk_mbar_wait_parity(&bar[s], (unsigned)(kb / 2) & 1);
        blk_wgmma_fence();
        for (int ks = 0; ks < KB / 16; ks++)
            blk_wgmma_m64n64k16_f32_bf16<0, 0>(d, desc128(16384 * s + 32 * ks),
                                               desc128(16384 * s + 8192 + 32 * ks), 1);
        blk_wgmma_commit();
        blk_wgmma_wait<0>();
        __syncthreads(); /* the stage is free: refill it */
        if (t == 0 && kb + 2 < nk) {
            blk_mbar_arrive_expect_tx(&bar[s], 2 * 8192);
            blk_tma_load_2d(sm + 16384 * s, &gm_a, (kb + 2) * KB, 0, &bar[s]);
            blk_tma_load_2d(sm + 16384 * s + 8192, &gm_b, (kb + 2) * KB, 0, &bar[s]);
        }
    }
    /* Figure 149: warp w, lane: d_i at row 16w + lane/4 + 8 ((i >> 1) & 1),
     * column 8 (i >> 2) + 2 (lane % 4) + (i & 1) */
    const int w = t / 32, lane = t % 32;
    for (int i = 0; i < 32; i++)
        gm_d[16 * w + lane / 4 + 8 * ((i >> 1) & 1)][8 * (i >> 2) + 2 * (lane % 4) + (i & 1)] = d[i];
}

static void gemm_test()
{
    alignas(16) static unsigned short a[GM][GK], b[GN][GK]; /* B as N rows of K */
    for (int m = 0; m < GM; m++)
        for (int k = 0; k < GK; k++)
            a[m][k] = bf(Av(m, k));
    for (int n = 0; n < GN; n++)
        for (int k = 0; k < GK; k++)
            b[n][k] = bf(Bv(k, n));
    unsigned long long dim[2] = {GK, GM}, str[1] = {GK * 2};
    unsigned box[2] = {KB, 64}, es[2] = {1, 1};
    int ra = blk_emu_tmap_encode(&gm_a, BF16, 2, a, dim, str, box, es, 0, 3, 0, 0);
    int rb = blk_emu_tmap_encode(&gm_b, BF16, 2, b, dim, str, box, es, 0, 3, 0, 0);
    CHECK(ra == 0 && rb == 0, "gemm maps: encode %d %d", ra, rb);
    memset(gm_d, 0, sizeof gm_d);
    run(k_gemm, 128, 32768 + 64, "TMA ring + wgmma GEMM");
    int bad = 0;
    for (int m = 0; m < GM; m++)
        for (int n = 0; n < GN; n++) {
            double want = 0;
            for (int k = 0; k < GK; k++)
                want += Av(m, k) * Bv(k, n);
            if (gm_d[m][n] != (float)want && bad++ < 3)
                CHECK(false, "TMA ring + wgmma GEMM: D[%d][%d] = %g, expected %g", m, n,
                      gm_d[m][n], want);
        }
}

/* ------------------------------------------------------------ misuse */

alignas(64) static BlkTensorMap zero_map;
/* one misuse per launch, thread 0 after initializing an mbarrier */
enum { M_UNALIGNED, M_RANK, M_RANK5, M_NOMAP, M_INFLIGHT };
static int misuse;
static void k_misuse(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)sm;
    if (threadIdx.x != 0)
        return;
    blk_mbar_init(bar, 1);
    if (misuse == M_UNALIGNED)
        blk_tma_load_2d(sm + 192, &gm_a, 0, 0, bar);
    else if (misuse == M_RANK)
        blk_tma_load_3d(sm + 128, &gm_a, 0, 0, 0, bar);
    else if (misuse == M_RANK5) /* a rank-4 map */
        blk_tma_load_5d(sm + 128, &st4_map, 0, 0, 0, 0, 0, bar);
    else if (misuse == M_NOMAP)
        blk_tma_load_2d(sm + 128, &zero_map, 0, 0, bar);
    else { /* a load nobody waits for */
        blk_mbar_arrive_expect_tx(bar, 8192);
        blk_tma_load_2d(sm + 128, &gm_a, 0, 0, bar);
    }
}
static void misuse_tests()
{
    misuse = M_UNALIGNED;
    refuse(k_misuse, 32, 16384, "not 128-byte aligned");
    misuse = M_RANK;
    refuse(k_misuse, 32, 16384, "cp.async.bulk.tensor.3d with a tensor map of rank 2");
    misuse = M_RANK5;
    refuse(k_misuse, 32, 16384, "cp.async.bulk.tensor.5d with a tensor map of rank 4");
    misuse = M_NOMAP;
    refuse(k_misuse, 32, 16384, "not a tensor map made by cuTensorMapEncodeTiled");
    misuse = M_INFLIGHT;
    refuse(k_misuse, 32, 16384, "ended with a cp.async.bulk.tensor load still in flight");
    /* the box past the end of shared memory */
    refuse(k_misuse, 32, 4096, "the box outside the block's dynamic shared memory");
}

int main()
{
    encode_tests();
    mbar_tests();
    load_tests();
    store_tests();
    gemm_test();
    misuse_tests();
    printf("%s cuda-emu TMA and mbarrier\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
