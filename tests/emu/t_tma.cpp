/* t_tma.cpp — the tensor memory accelerator of runtime/emu/blk_emu_tma.h
 * alone (ctest label emu, emu.sh mode tma), each check written from the
 * vendor's documents, not from the header:
 *   - cuTensorMapEncodeTiled's argument rules (CUDA Driver API 6.30): each
 *     broken rule is CUDA_ERROR_INVALID_VALUE, interleave NOT_SUPPORTED;
 *   - mbarrier phases (PTX ISA "mbarrier"): waiters block until the last
 *     expected arrival; parity P of the immediately preceding phase is
 *     already complete; a phase with all arrivals but bytes outstanding is
 *     not; a wait nobody can end is a deadlock report, not a hang;
 *   - cp.async.bulk.tensor tile loads (1-D, 2-D with every swizzle mode,
 *     3-D) at coordinates inside and across the tensor's edges: every
 *     element of the box where the tensor-copy swizzle puts it (16-byte
 *     chunk c of 128-byte line L of the span's pattern goes to chunk c ^
 *     (L mod 2, 4, 8) for 32B, 64B, 128B), zeros outside the tensor, NaN
 *     with OOB fill NAN_REQUEST_ZERO_FMA, the old bytes before the wait;
 *   - tile stores (bulk_group): nothing written before the group is waited
 *     for, then exactly the box's elements inside the tensor;
 *   - the Hopper GEMM main loop: A and B tiles by TMA into a 2-stage ring
 *     (128B swizzle, one mbarrier per stage, phases alternating as the
 *     stages are reused) read by wgmma m64n64k16 through 128B-swizzle
 *     K-major descriptors (PTX ISA 9.7.15.5.1.2), D equal to a scalar
 *     product;
 *   - misuse fails the launch with its message: an unaligned destination,
 *     a map of another rank, a map never encoded, an mbarrier never
 *     initialized, an arrival beyond the count, a block ending with a load
 *     in flight or a store not waited for.
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
        int dtype; unsigned rank; unsigned char *addr; unsigned long long dim[2], stride[1];
        unsigned box[2], estr[2]; int inter, swz, l2, oob; BlkTensorMap *map;
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

/* the global tensor: value of element (x0, x1, x2) (innermost first),
 * small integers exact in bf16 and never 0 */
static double gval(long long x0, long long x1, long long x2)
{
    return (double)((x0 * 7 + x1 * 31 + x2 * 11) % 200 + 1);
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

struct LoadCase {
    int rank, dtype, swz, oob;           /* swz: 0, 32, 64, 128 bytes */
    unsigned long long dim[3], pitch[3]; /* pitch in elements */
    unsigned box[3];
    int c[3];
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
        blk_mbar_arrive_expect_tx(bar, (unsigned)bytes);
        if (L.rank == 1)
            blk_tma_load_1d(sm + ld_dst, &ld_map, L.c[0], bar);
        else if (L.rank == 2)
            blk_tma_load_2d(sm + ld_dst, &ld_map, L.c[0], L.c[1], bar);
        else
            blk_tma_load_3d(sm + ld_dst, &ld_map, L.c[0], L.c[1], L.c[2], bar);
        /* no thread has waited yet: the old bytes */
        ld_oldseen = sm[ld_dst] == 0x5a && sm[ld_dst + bytes - 1] == 0x5a;
    }
    __syncthreads();
    blk_mbar_wait_parity(bar, 0);
    if (threadIdx.x == 0)
        ld_after.assign(sm + ld_dst, sm + ld_dst + bytes);
}

static void load_case(const LoadCase &L, const char *what)
{
    const long long esz = L.dtype == F32 ? 4 : 2;
    long long total = 1;
    for (int i = 0; i < L.rank; i++)
        total *= (long long)L.pitch[i] * (i == L.rank - 1 ? (long long)L.dim[i] : 1);
    std::vector<unsigned char> g((size_t)(total * esz + 64));
    ld_g = (unsigned char *)(((uintptr_t)g.data() + 15) & ~(uintptr_t)15);
    /* fill every element, padding included */
    long long n0 = (long long)L.pitch[0], n1 = L.rank > 1 ? (long long)L.pitch[1] : 1;
    for (long long e = 0; e < total; e++) {
        const long long x0 = e % n0, x1 = e / n0 % n1, x2 = e / (n0 * n1);
        const double v = gval(x0, x1, x2);
        if (esz == 4) {
            float f = (float)v;
            memcpy(ld_g + e * 4, &f, 4);
        } else {
            unsigned short h = L.dtype == BF16 ? bf(v) : __float2half_rn((float)v).x;
            memcpy(ld_g + e * 2, &h, 2);
        }
    }
    unsigned long long strides[2] = {L.pitch[0] * esz, L.pitch[0] * L.pitch[1] * esz};
    const unsigned estr[3] = {1, 1, 1};
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
    const long long b0 = L.box[0], b1 = L.rank > 1 ? L.box[1] : 1, b2 = L.rank > 2 ? L.box[2] : 1;
    int bad = 0;
    for (long long j2 = 0; j2 < b2; j2++)
        for (long long j1 = 0; j1 < b1; j1++)
            for (long long j0 = 0; j0 < b0; j0++) {
                const long long x0 = L.c[0] + j0, x1 = L.rank > 1 ? L.c[1] + j1 : 0,
                                x2 = L.rank > 2 ? L.c[2] + j2 : 0;
                const bool in = x0 >= 0 && x0 < (long long)L.dim[0] &&
                                (L.rank < 2 || (x1 >= 0 && x1 < (long long)L.dim[1])) &&
                                (L.rank < 3 || (x2 >= 0 && x2 < (long long)L.dim[2]));
                const long long pre = ld_dst + ((j2 * b1 + j1) * b0 + j0) * esz;
                const long long at = swz_ref(pre, L.swz) - ld_dst;
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
                const double want = in ? gval(x0, x1, x2) : L.oob ? NAN : 0.0;
                const bool ok = std::isnan(want) ? std::isnan(got) : got == want;
                if (!ok && bad++ < 3)
                    CHECK(false, "%s: box element (%lld, %lld, %lld) at byte %lld is %g, expected %g",
                          what, j0, j1, j2, at, got, want);
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
            LoadCase L = {2, BF16, swz[s], 0, {72, 40, 1}, {80, 40, 1},
                          {(unsigned)(swz[s] ? swz[s] / 2 : 24), 16, 1}, {at[a][0], at[a][1], 0}};
            char what[160];
            snprintf(what, sizeof what, "load 2-D bf16 swizzle %dB box %u x 16 at (%d, %d)",
                     swz[s], L.box[0], at[a][0], at[a][1]);
            load_case(L, what);
        }
    LoadCase f32 = {2, F32, 128, 1, {20, 9, 1}, {36, 9, 1}, {32, 8, 1}, {-4, 3, 0}};
    load_case(f32, "load 2-D f32 128B swizzle, NaN OOB fill, across the right and bottom edges");
    LoadCase f16 = {2, F16, 64, 0, {40, 40, 1}, {40, 40, 1}, {32, 12, 1}, {16, -6, 0}};
    load_case(f16, "load 2-D f16 64B swizzle across the top edge");
    LoadCase one = {1, F32, 0, 0, {100, 1, 1}, {100, 1, 1}, {40, 1, 1}, {76, 0, 0}};
    load_case(one, "load 1-D f32 across the end");
    LoadCase three = {3, F32, 0, 0, {12, 5, 3}, {12, 6, 3}, {8, 4, 2}, {6, 3, 2}};
    load_case(three, "load 3-D f32 across three edges");
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
enum { M_UNALIGNED, M_RANK, M_NOMAP, M_INFLIGHT };
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
