/* t_wrappers.cpp — the wrappers of runtime/emu/blk_emu.h alone (ctest label
 * emu): for every mma / mfma shape, each lane builds its A, B, C fragments
 * from known matrices by the fragment tables as the vendor documents them
 * (written out here independently of the header), runs the collective,
 * and its D fragment is compared with D = A*B + C computed by a scalar
 * loop; ldmatrix (which lane receives which elements, plain and .trans),
 * cp.async groups (a read before the matching wait sees the old data),
 * shuffles with width, a thread skipping __syncthreads (reported as a
 * barrier mismatch, not a hang), a deadlock (reported with where the
 * threads wait) and a signal poll that a later thread ends (the fibers
 * switch at a poll). Built twice by emu.sh: CUDA (this file
 * with -D__CUDA_ARCH__=800) and HIP (-DBLK_EMU_HIP); with
 * -DBLK_EMU_BREAK_LAYOUT (two lanes of the A table swapped in the header)
 * it must fail. Exit 0 when every check holds. */
#include "blk_emu.h"

#include <mutex>

static int fails;
static std::mutex fmu;
static void check(bool ok, const char *what, int lane, int i, double got, double want)
{
    if (ok)
        return;
    std::lock_guard<std::mutex> lk(fmu);
    if (fails++ < 8)
        printf("FAIL %s: lane %d element %d is %g, expected %g\n", what, lane, i, got, want);
}

typedef void (*Kern)(int);
static void run(void (*k)(int), int threads, long long smem, const char *what)
{
    int arg = 0;
    void *params[1] = {&arg};
    long long grid[3] = {1, 1, 1};
    char err[512] = "";
    if (blk_emu_launch(k, grid, threads, smem, params, nullptr, err, sizeof err)) {
        printf("FAIL %s: launch: %s\n", what, err);
        fails++;
    }
}

/* the known matrices: small integers (exact in every type here) */
static double Aval(int m, int k) { return (double)((m * 7 + k * 3) % 11 - 5); }
static double Bval(int k, int n) { return (double)((k * 5 + n * 9) % 13 - 6); }
static double Cval(int m, int n) { return (double)((m * 3 + n) % 7 - 3); }
static double Dref(int m, int n, int K)
{
    double s = Cval(m, n);
    for (int k = 0; k < K; k++)
        s += Aval(m, k) * Bval(k, n);
    return s;
}

#ifndef BLK_EMU_HIP
static unsigned short h16(double v) { return __float2half_rn((float)v).x; }
static unsigned short b16(double v) { return __float2bfloat16_rn((float)v).x; }

/* PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type":
 * groupID g = lane >> 2, threadID_in_group q = lane % 4;
 * A: a0..a7 (a_i in register i/2, half i%2): row = g for a0,a1,a4,a5 and
 *    g+8 for a2,a3,a6,a7; col = 2q + (i & 1) for i < 4, + 8 for i >= 4.
 * B: b0..b3: row = 2q + (i & 1) for i < 2, + 8 for i >= 2; col = g.
 * C, D: c0..c3: row = g for i < 2, g+8 otherwise; col = 2q + (i & 1). */
template <bool BF> static void k_mma16(int)
{
    const int lane = (int)threadIdx.x, g = lane >> 2, q = lane % 4;
    unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    for (int i = 0; i < 8; i++) {
        int row = (i == 2 || i == 3 || i == 6 || i == 7) ? g + 8 : g;
        int col = 2 * q + (i & 1) + (i >= 4 ? 8 : 0);
        unsigned v = BF ? b16(Aval(row, col)) : h16(Aval(row, col));
        a[i / 2] |= v << (16 * (i % 2));
    }
    for (int i = 0; i < 4; i++) {
        int row = 2 * q + (i & 1) + (i >= 2 ? 8 : 0);
        unsigned v = BF ? b16(Bval(row, g)) : h16(Bval(row, g));
        b[i / 2] |= v << (16 * (i % 2));
    }
    float c[4];
    for (int i = 0; i < 4; i++)
        c[i] = (float)Cval(i < 2 ? g : g + 8, 2 * q + (i & 1));
    if (BF)
        blk_mma_bf16(c, a, b);
    else
        blk_mma_f16(c, a, b);
    for (int i = 0; i < 4; i++) {
        double want = Dref(i < 2 ? g : g + 8, 2 * q + (i & 1), 16);
        check(c[i] == want, BF ? "mma m16n8k16 bf16" : "mma m16n8k16 f16", lane, i, c[i], want);
    }
}

/* "Matrix Fragments for mma.m16n8k8" (.tf32): A: a0..a3: row = g for a0,
 * a2 and g+8 for a1, a3; col = q for a0, a1 and q+4 for a2, a3.
 * B: b0: row q, b1: row q+4; col g. C as above. */
static void k_mma_tf32(int)
{
    const int lane = (int)threadIdx.x, g = lane >> 2, q = lane % 4;
    unsigned a[4], b[2];
    for (int i = 0; i < 4; i++)
        a[i] = __float_as_uint((float)Aval(i % 2 ? g + 8 : g, i >= 2 ? q + 4 : q));
    for (int i = 0; i < 2; i++)
        b[i] = __float_as_uint((float)Bval(i ? q + 4 : q, g));
    float c[4];
    for (int i = 0; i < 4; i++)
        c[i] = (float)Cval(i < 2 ? g : g + 8, 2 * q + (i & 1));
    blk_mma_tf32(c, a, b);
    for (int i = 0; i < 4; i++) {
        double want = Dref(i < 2 ? g : g + 8, 2 * q + (i & 1), 8);
        check(c[i] == want, "mma m16n8k8 tf32", lane, i, c[i], want);
    }
}

/* "Matrix Fragments for mma.m16n8k32" (.s8): A: a0..a15, 4 per register
 * (a_i in register i/4, byte i%4): row = g for a0..a3 and a8..a11, g+8
 * for a4..a7 and a12..a15; col = 4q + (i % 4) for i < 8, + 16 for i >= 8.
 * B: b0..b7: row = 4q + (i % 4) for i < 4, + 16 for i >= 4; col = g. */
static void k_mma_s8(int)
{
    const int lane = (int)threadIdx.x, g = lane >> 2, q = lane % 4;
    unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    for (int i = 0; i < 16; i++) {
        int row = (i / 4) % 2 ? g + 8 : g, col = 4 * q + i % 4 + (i >= 8 ? 16 : 0);
        a[i / 4] |= (unsigned)(unsigned char)(signed char)Aval(row, col) << (8 * (i % 4));
    }
    for (int i = 0; i < 8; i++) {
        int row = 4 * q + i % 4 + (i >= 4 ? 16 : 0);
        b[i / 4] |= (unsigned)(unsigned char)(signed char)Bval(row, g) << (8 * (i % 4));
    }
    int c[4];
    for (int i = 0; i < 4; i++)
        c[i] = (int)Cval(i < 2 ? g : g + 8, 2 * q + (i & 1));
    blk_mma_s8(c, a, b);
    for (int i = 0; i < 4; i++) {
        double want = Dref(i < 2 ? g : g + 8, 2 * q + (i & 1), 32);
        check(c[i] == want, "mma m16n8k32 s8", lane, i, c[i], want);
    }
}

/* "ldmatrix": lanes 8i..8i+7 address rows 0..7 of matrix i; lane l gets
 * in r[i] the elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of matrix i;
 * .trans: of the transposed matrix. Shared memory holds 4 matrices of
 * 8 x 8 b16 with value 64*i + 8*row + col, rows 48 bytes apart. */
template <int N, bool T> static void k_ldmatrix(int)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned short *e = (unsigned short *)sm;
    const int lane = (int)threadIdx.x, ld = 24;
    for (int x = lane; x < 4 * 8 * 8; x += 32) {
        int i = x / 64, r = x / 8 % 8, c = x % 8;
        e[(i * 8 + r) * ld + c] = (unsigned short)(64 * i + 8 * r + c);
    }
    __syncwarp();
    const void *p = &e[((lane / 8) * 8 + lane % 8) * ld];
    unsigned r[4] = {0, 0, 0, 0};
    if (N == 1) T ? blk_ldmatrix_x1_trans(r, p) : blk_ldmatrix_x1(r, p);
    if (N == 2) T ? blk_ldmatrix_x2_trans(r, p) : blk_ldmatrix_x2(r, p);
    if (N == 4) T ? blk_ldmatrix_x4_trans(r, p) : blk_ldmatrix_x4(r, p);
    for (int i = 0; i < N; i++)
        for (int h = 0; h < 2; h++) {
            int row = lane / 4, col = 2 * (lane % 4) + h;
            unsigned want = T ? 64u * i + 8u * col + row : 64u * i + 8u * row + col;
            unsigned got = (r[i] >> (16 * h)) & 0xffff;
            check(got == want, T ? "ldmatrix .trans" : "ldmatrix", lane, 2 * i + h, got, want);
        }
}

/* cp.async: group 1 writes 1s, group 2 writes 2s; before any wait the
 * destination still holds 0; wait_group 1 lands group 1 only; wait_group
 * 0 lands both; a copy with src-size 4 zero-fills bytes 4..15. */
static void k_cp_async(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const int t = (int)threadIdx.x;
    int *d = (int *)sm + 8 * t;
    static int src[32][8];
    for (int j = 0; j < 8; j++) {
        d[j] = 0;
        src[t][j] = j < 4 ? 1 : 2;
    }
    blk_cp_async16(d, &src[t][0], 16);
    blk_cp_commit();
    blk_cp_async16(d + 4, &src[t][4], 4);
    blk_cp_commit();
    check(d[0] == 0 && d[4] == 0, "cp.async before its wait (old data)", t, 0, d[0], 0);
    blk_cp_wait<1>();
    check(d[0] == 1 && d[3] == 1, "cp.async group 1 after wait_group 1", t, 0, d[0], 1);
    check(d[4] == 0, "cp.async group 2 before wait_group 0 (old data)", t, 4, d[4], 0);
    d[5] = 77; /* overwritten by the zero fill when group 2 lands */
    blk_cp_wait<0>();
    check(d[4] == 2 && d[5] == 0 && d[7] == 0, "cp.async group 2 (zero-filled past src-size)",
          t, 5, d[5], 0);
}

/* ------------------------------------------------------------ wgmma (sm_90a)
 * PTX ISA 9.7.15.5.1.2 "Shared Memory Matrix Layout": the canonical
 * layouts of 9.7.15.5.1.2.1.3, written here as the table's CuTe
 * shape:stride pairs (T = 8 elements of 16 bits, offsets in elements, SBO
 * and LBO in elements), evaluated by a small CuTe evaluator, then the
 * table's Swizzle<B, 4, 3> functor x ^ ((x & (((1 << B) - 1) << 7)) >> 3)
 * on the byte address (the pattern repeats every 1024 / 512 / 256 bytes:
 * 9.7.15.5.1.2.2, base offset 0). Descriptor bits of 9.7.15.5.1.2.2:
 * start >> 4 in 13..0, LBO >> 4 in 29..16, SBO >> 4 in 45..32, swizzle
 * mode in 63..62 (0 none, 1 128B, 2 64B, 3 32B). The D fragment of
 * Figure 149: warp w of the warpgroup, d_i at row 16w + groupID + 8 *
 * ((i >> 1) & 1), column 8 (i >> 2) + 2 threadID_in_group + (i & 1). */
struct WgMode { int n; long long size[3], stride[3]; };
/* coordinate x of a CuTe mode (colexicographic: the first size fastest) */
static long long cute_mode(const WgMode &md, long long x)
{
    long long off = 0;
    for (int i = 0; i < md.n; i++) {
        off += (x % md.size[i]) * md.stride[i];
        x /= md.size[i];
    }
    return off;
}
/* a 16-bit operand of MN (rows of A / columns of B) x K in shared memory:
 * mn-major (imm-trans 1) or K-major; sw 0 / 32 / 64 / 128 bytes */
struct WgLay { bool mnmaj; int sw; long long lbo, sbo, start; };
static long long wg_byte(const WgLay &L, int mn, int k, int MN)
{
    const long long T = 8, c = L.sw / 16, lbo = L.lbo / 2, sbo = L.sbo / 2;
    WgMode mmn, mk;
    if (!L.mnmaj && !L.sw) {        /* ((8,m),(T,2k)):((1T,SBO),(1,LBO)) */
        mmn = {2, {8, MN / 8, 1}, {T, sbo, 0}};
        mk = {2, {T, 2, 1}, {1, lbo, 0}};
    } else if (!L.mnmaj) {          /* ((8,m),(T,2k)):((cT,SBO),(1,T)) */
        mmn = {2, {8, MN / 8, 1}, {c * T, sbo, 0}};
        mk = {2, {T, 2, 1}, {1, T, 0}};
    } else if (!L.sw) {             /* ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) */
        mmn = {3, {T, 1, MN / T}, {1, T, sbo}};
        mk = {2, {8, 2, 1}, {T, lbo, 0}};
    } else {                        /* ((T,c,m),(8,k)):((1,T,LBO),(cT,SBO)) */
        mmn = {3, {T, c, (MN + T * c - 1) / (T * c)}, {1, T, lbo}};
        mk = {2, {8, 2, 1}, {c * T, sbo, 0}};
    }
    long long x = L.start + 2 * (cute_mode(mmn, mn) + cute_mode(mk, k));
    if (L.sw) {
        const long long B = L.sw == 128 ? 3 : L.sw == 64 ? 2 : 1;
        x ^= (x & (((1LL << B) - 1) << 7)) >> 3;
    }
    return x;
}
static unsigned long long wg_desc(const WgLay &L)
{
    const unsigned long long mode = L.sw == 128 ? 1 : L.sw == 64 ? 2 : L.sw == 32 ? 3 : 0;
    const unsigned long long lbo = L.sw && !L.mnmaj ? 16 : (unsigned long long)L.lbo;
    return ((unsigned long long)(L.start & 0x3ffff) >> 4) | ((lbo & 0x3ffff) >> 4) << 16 |
           ((unsigned long long)(L.sbo & 0x3ffff) >> 4) << 32 | mode << 62;
}
/* a layout of each kind for an MN x 16 operand at `start` (a multiple of 1024),
 * strides with gaps where the layout allows them */
static WgLay wg_lay(bool mnmaj, int sw, int MN, long long start)
{
    if (!sw)   /* core matrices of 8 x 16 bytes: K-major cores along K at LBO */
        return mnmaj ? WgLay{true, 0, 160, 2 * 160 + 32, start}
                     : WgLay{false, 0, 144, 2 * 144 + 16, start};
    if (!mnmaj) /* rows of sw bytes (2 chunks used), 8-row atoms at SBO */
        return WgLay{false, sw, 0, 8 * sw, start};
    /* mn-major: atoms of 8 k-rows of sw bytes; along K at SBO, MN at LBO */
    (void)MN;
    return WgLay{true, sw, 2 * 8 * sw, 8 * sw, start};
}

struct WgCase { int kind, n; bool amn, bmn; int asw, bsw; };
static WgCase wg_case;
static const char *wg_name;

static void wg_issue(float *d, int n, unsigned long long da, unsigned long long db, int sd,
                     bool ta, bool tb, int kind)
{
#define WG_CALL(N)                                                                         \
    if (n == N) {                                                                          \
        if (kind)                                                                          \
            ta ? (tb ? blk_wgmma_m64n##N##k16_f32_bf16<1, 1>(d, da, db, sd)                \
                     : blk_wgmma_m64n##N##k16_f32_bf16<1, 0>(d, da, db, sd))               \
               : (tb ? blk_wgmma_m64n##N##k16_f32_bf16<0, 1>(d, da, db, sd)                \
                     : blk_wgmma_m64n##N##k16_f32_bf16<0, 0>(d, da, db, sd));              \
        else                                                                               \
            ta ? (tb ? blk_wgmma_m64n##N##k16_f32_f16<1, 1>(d, da, db, sd)                 \
                     : blk_wgmma_m64n##N##k16_f32_f16<1, 0>(d, da, db, sd))                \
               : (tb ? blk_wgmma_m64n##N##k16_f32_f16<0, 1>(d, da, db, sd)                 \
                     : blk_wgmma_m64n##N##k16_f32_f16<0, 0>(d, da, db, sd));               \
        return;                                                                            \
    }
    WG_CALL(8) WG_CALL(24) WG_CALL(64) WG_CALL(128) WG_CALL(256)
#undef WG_CALL
    printf("FAIL wgmma test: no wrapper call for N = %d\n", n);
    fails++;
}

/* Two warpgroups (256 threads), each its own 64 rows of A (rows 64 g ..),
 * the same B; two k-steps (K = 32: A and B of each step at their own
 * addresses) chained on one accumulator, D = A0 B0 + A1 B1 + C; a read
 * before the wait sees C; then scale-d = 0 (D = A0 B0) */
static void k_wgmma(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const WgCase c = wg_case;
    const int t = (int)threadIdx.x, wg = t / 128, w = t / 32 % 4, lane = t % 32;
    const int g = lane >> 2, q = lane & 3, N = c.n;
    WgLay la[2][2], lb[2];
    for (int s = 0; s < 2; s++) {
        for (int h = 0; h < 2; h++) /* A: per step, per warpgroup */
            la[s][h] = wg_lay(c.amn, c.asw, 64, 16384LL * (2 * s + h));
        lb[s] = wg_lay(c.bmn, c.bsw, N, 65536 + 32768LL * s);
    }
    unsigned short *e = (unsigned short *)sm;
    for (int s = 0; s < 2; s++) {
        for (int x = t; x < 128 * 16; x += 256) { /* A[m][k] of step s */
            const int m = x / 16, k = x % 16;
            const double v = Aval(m, 16 * s + k);
            e[wg_byte(la[s][m / 64], m % 64, k, 64) / 2] = c.kind ? b16(v) : h16(v);
        }
        for (int x = t; x < 16 * N; x += 256) { /* B[k][n] of step s */
            const int k = x / N, n = x % N;
            const double v = Bval(16 * s + k, n);
            e[wg_byte(lb[s], n, k, N) / 2] = c.kind ? b16(v) : h16(v);
        }
    }
    blk_fence_proxy_async();
    __syncthreads();
    float d[128];
    for (int i = 0; i < N / 2; i++)
        d[i] = (float)Cval(64 * wg + 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * q + (i & 1));
    blk_wgmma_fence();
    for (int s = 0; s < 2; s++)
        wg_issue(d, N, wg_desc(la[s][wg]), wg_desc(lb[s]), 1, c.amn, c.bmn, c.kind);
    blk_wgmma_commit();
    for (int i = 0; i < N / 2; i++) { /* not yet retired: the old accumulator */
        const int row = 64 * wg + 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * q + (i & 1);
        check(d[i] == (float)Cval(row, col), "wgmma: before wait_group (old accumulator)", t, i,
              d[i], Cval(row, col));
    }
    blk_wgmma_wait<0>();
    for (int i = 0; i < N / 2; i++) {
        const int row = 64 * wg + 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * q + (i & 1);
        const double want = Dref(row, col, 32);
        check(d[i] == want, wg_name, t, i, d[i], want);
    }
    /* scale-d = 0: D = A0 B0, the accumulator's value ignored */
    blk_wgmma_fence();
    wg_issue(d, N, wg_desc(la[0][wg]), wg_desc(lb[0]), 0, c.amn, c.bmn, c.kind);
    blk_wgmma_commit();
    blk_wgmma_wait<0>();
    for (int i = 0; i < N / 2; i++) {
        const int row = 64 * wg + 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * q + (i & 1);
        const double want = Dref(row, col, 16) - Cval(row, col);
        check(d[i] == want, "wgmma scale-d = 0", t, i, d[i], want);
    }
}

/* wait_group 1 with two groups in flight retires the first only: group 1
 * into d0, group 2 into d1 (B all ones, A row m = m: d = 16 m) */
static void k_wgmma_groups(int)
{
    BLK_DYNAMIC_SMEM(sm);
    const int t = (int)threadIdx.x, w = t / 32, g = (t % 32) >> 2;
    const WgLay la = wg_lay(false, 0, 64, 0), lb = wg_lay(false, 128, 8, 16384);
    unsigned short *e = (unsigned short *)sm;
    for (int x = t; x < 64 * 16; x += 128)
        e[wg_byte(la, x / 16, x % 16, 64) / 2] = b16(x / 16);
    for (int x = t; x < 8 * 16; x += 128)
        e[wg_byte(lb, x % 8, x / 8, 8) / 2] = b16(1);
    __syncthreads();
    float d0[4] = {-1, -1, -1, -1}, d1[4] = {-2, -2, -2, -2};
    blk_wgmma_fence();
    blk_wgmma_m64n8k16_f32_bf16<0, 0>(d0, wg_desc(la), wg_desc(lb), 0);
    blk_wgmma_commit();
    blk_wgmma_m64n8k16_f32_bf16<0, 0>(d1, wg_desc(la), wg_desc(lb), 0);
    blk_wgmma_commit();
    blk_wgmma_wait<1>();
    const int r0 = 16 * w + g;
    check(d0[0] == 16.0f * r0 && d0[2] == 16.0f * (r0 + 8), "wgmma group 1 after wait_group 1",
          t, 0, d0[0], 16.0 * r0);
    check(d1[0] == -2.0f, "wgmma group 2 before its wait (old accumulator)", t, 0, d1[0], -2);
    blk_wgmma_wait<0>();
    check(d1[3] == 16.0f * (r0 + 8), "wgmma group 2 after wait_group 0", t, 3, d1[3],
          16.0 * (r0 + 8));
}

/* an mma_async with no wgmma.fence before it: refused */
static void k_wgmma_nofence(int)
{
    float d[4] = {0, 0, 0, 0};
    blk_wgmma_m64n8k16_f32_bf16<0, 0>(d, 0, 0, 1);
}

static void wgmma_tests()
{
    static const int sws[] = {0, 32, 64, 128};
    int ncase = 0;
    for (int kind = 0; kind < 2; kind++)
        for (int amn = 0; amn < 2; amn++)
            for (int bmn = 0; bmn < 2; bmn++)
                for (int ia = 0; ia < 4; ia++)
                    for (int ib = 0; ib < 4; ib++) {
                        /* N: every width on the plain layouts, else one each */
                        static const int ns[] = {8, 24, 64, 128, 256};
                        for (int in = 0; in < 5; in++) {
                            const int n = ns[in];
                            if ((ia || ib) && n != (kind ? 64 : 128) && !(ia == 3 && ib == 3 && n == 256))
                                continue;
                            if (bmn && sws[ib] && n % (sws[ib] / 2)) /* whole mn-major atoms */
                                continue;
                            wg_case = {kind, n, amn != 0, bmn != 0, sws[ia], sws[ib]};
                            static char name[160];
                            snprintf(name, sizeof name, "wgmma m64n%dk16 %s A %s-major %dB, B %s-major %dB",
                                     n, kind ? "bf16" : "f16", amn ? "M" : "K", sws[ia],
                                     bmn ? "N" : "K", sws[ib]);
                            wg_name = name;
                            const int before = fails;
                            run(k_wgmma, 256, 131072, name);
                            if (fails != before)
                                printf("  (in %s)\n", name);
                            ncase++;
                        }
                    }
    run(k_wgmma_groups, 128, 32768, "wgmma groups");
    {
        int arg = 0;
        void *params[1] = {&arg};
        long long grid[3] = {1, 1, 1};
        char err[512] = "";
        int rc = blk_emu_launch(k_wgmma_nofence, grid, 128, 0, params, nullptr, err, sizeof err);
        if (rc == 0 || !strstr(err, "without a wgmma.fence")) {
            printf("FAIL wgmma without fence: rc %d, '%s'\n", rc, err);
            fails++;
        }
        rc = blk_emu_launch(k_wgmma_nofence, grid, 64, 0, params, nullptr, err, sizeof err);
        if (rc == 0 || !strstr(err, "whole warpgroups")) {
            printf("FAIL wgmma in a 64-thread block: rc %d, '%s'\n", rc, err);
            fails++;
        }
    }
    printf("ok %d wgmma layout cases\n", ncase);
}
#else
/* AMD CDNA2 ISA / matrix instruction calculator layouts (wave of 64):
 * v_mfma_f32_16x16x{16f16,16bf16_1k,4f32}: A[i][k] in lane i + 16*(k/kpl)
 * element k%kpl; B[k][j] in lane j + 16*(k/kpl); D[i][j] in lane j +
 * 16*(i/4), element i%4. 32x32x{8f16,8bf16_1k,2f32}: A[i][k] in lane
 * i + 32*(k/kpl); B[k][j] in lane j + 32*(k/kpl); D[i][j] in lane j +
 * 32*((i/4)%2), element 4*(i/8) + i%4. kpl = 4 (f16, bf16) or 1 (f32). */
template <int MN, int K, int TY> static void k_mfma(int)
{
    const int lane = (int)threadIdx.x, kpl = TY == 2 ? 1 : 4, blocks = 64 / MN;
    (void)blocks;
    const int i = lane % MN, kb = lane / MN; /* row of A = col of B = lane % MN */
    float fa[4], fb[4];
    for (int e = 0; e < kpl; e++) {
        fa[e] = (float)Aval(i, kb * kpl + e);
        fb[e] = (float)Bval(kb * kpl + e, i);
    }
    float d[16];
    const int nreg = MN == 16 ? 4 : 16;
    auto rowof = [&](int e) { return MN == 16 ? 4 * (lane / 16) + e : 8 * (e / 4) + 4 * (lane / 32) + e % 4; };
    if (MN == 16) {
        blk_float4 c;
        for (int e = 0; e < 4; e++) c[e] = (float)Cval(rowof(e), lane % 16);
        if (TY == 0) {
            blk_half4 a, b;
            for (int e = 0; e < 4; e++) { a[e] = (_Float16)fa[e]; b[e] = (_Float16)fb[e]; }
            c = blk_mfma_16x16x16_f16(a, b, c);
        } else if (TY == 1) {
            blk_short4 a, b;
            for (int e = 0; e < 4; e++) {
                a[e] = (short)__float2bfloat16_rn(fa[e]).x;
                b[e] = (short)__float2bfloat16_rn(fb[e]).x;
            }
            c = blk_mfma_16x16x16_bf16(a, b, c);
        } else {
            c = blk_mfma_16x16x4_f32(fa[0], fb[0], c);
        }
        for (int e = 0; e < 4; e++) d[e] = c[e];
    } else {
        blk_float16 c;
        for (int e = 0; e < 16; e++) c[e] = (float)Cval(rowof(e), lane % 32);
        if (TY == 0) {
            blk_half4 a, b;
            for (int e = 0; e < 4; e++) { a[e] = (_Float16)fa[e]; b[e] = (_Float16)fb[e]; }
            c = blk_mfma_32x32x8_f16(a, b, c);
        } else if (TY == 1) {
            blk_short4 a, b;
            for (int e = 0; e < 4; e++) {
                a[e] = (short)__float2bfloat16_rn(fa[e]).x;
                b[e] = (short)__float2bfloat16_rn(fb[e]).x;
            }
            c = blk_mfma_32x32x8_bf16(a, b, c);
        } else {
            c = blk_mfma_32x32x2_f32(fa[0], fb[0], c);
        }
        for (int e = 0; e < 16; e++) d[e] = c[e];
    }
    static const char *const names[2][3] = {
        {"mfma 16x16x16 f16", "mfma 16x16x16 bf16_1k", "mfma 16x16x4 f32"},
        {"mfma 32x32x8 f16", "mfma 32x32x8 bf16_1k", "mfma 32x32x2 f32"}};
    for (int e = 0; e < nreg; e++) {
        double want = Dref(rowof(e), lane % MN, K);
        check(d[e] == want, names[MN == 32][TY], lane, e, d[e], want);
    }
}

/* v_mfma_i32_16x16x16i8: the 16x16x16 tables with four signed bytes per
 * lane in one 32-bit register, A[i][k] in lane i + 16*(k/4), byte k%4;
 * B[k][j] in lane j + 16*(k/4), byte k%4; D as f32's, in i32 */
static void k_mfma_i8(int)
{
    const int lane = (int)threadIdx.x, i = lane % 16, kb = lane / 16;
    unsigned a = 0, b = 0;
    for (int e = 0; e < 4; e++) {
        a |= (unsigned)(unsigned char)(signed char)Aval(i, 4 * kb + e) << (8 * e);
        b |= (unsigned)(unsigned char)(signed char)Bval(4 * kb + e, i) << (8 * e);
    }
    blk_int4 c;
    for (int e = 0; e < 4; e++) c[e] = (int)Cval(4 * (lane / 16) + e, i);
    c = blk_mfma_16x16x16_i8((int)a, (int)b, c);
    for (int e = 0; e < 4; e++) {
        double want = Dref(4 * (lane / 16) + e, i, 16);
        check(c[e] == want, "mfma 16x16x16 i8", lane, e, c[e], want);
    }
}
#endif

/* shuffles: width 16 segments; up/down keep the lane's value at edges */
static void k_shfl(int)
{
    const int lane = (int)threadIdx.x % BLK_EMU_WARP;
#ifdef BLK_EMU_HIP
    int x = __shfl_xor(lane, 1, 16), u = __shfl_up(lane, 3, 16), dn = __shfl_down(lane, 3, 16),
        ix = __shfl(lane, 5, 16);
#else
    int x = __shfl_xor_sync(~0u, lane, 1, 16), u = __shfl_up_sync(~0u, lane, 3, 16),
        dn = __shfl_down_sync(~0u, lane, 3, 16), ix = __shfl_sync(~0u, lane, 5, 16);
#endif
    check(x == (lane ^ 1), "shfl_xor width 16", lane, 0, x, lane ^ 1);
    int wu = lane % 16 >= 3 ? lane - 3 : lane, wd = lane % 16 < 13 ? lane + 3 : lane;
    check(u == wu, "shfl_up width 16", lane, 0, u, wu);
    check(dn == wd, "shfl_down width 16", lane, 0, dn, wd);
    check(ix == (lane & ~15) + 5, "shfl width 16", lane, 0, ix, (lane & ~15) + 5);
}

/* thread 3 skips the barrier: reported, not a hang */
static void k_skip_barrier(int)
{
    if (threadIdx.x != 3)
        __syncthreads();
}

/* A thread polling a signal that a later thread of the block sets: the
 * poll must let the other threads run (one host thread runs them all). */
static unsigned long long flag;
static int seen;
static void k_poll(int)
{
    if (threadIdx.x == 0) {
        while (blk_sig_load(&flag) == 0) {
        }
        seen = 1;
    }
    if (threadIdx.x == blockDim.x - 1)
        blk_sig_set(&flag, 1);
}

/* Every thread waits at a warp shuffle except one at __syncthreads: no
 * barrier can complete, reported as a deadlock with where they wait. */
static void k_deadlock(int)
{
    if (threadIdx.x == 0)
        __syncthreads();
    else
        (void)__shfl_xor_sync(0xffffffffu, 1, 1);
}

int main()
{
#ifndef BLK_EMU_HIP
    run(k_mma16<false>, 32, 0, "mma f16");
    run(k_mma16<true>, 32, 0, "mma bf16");
    run(k_mma_tf32, 32, 0, "mma tf32");
    run(k_mma_s8, 32, 0, "mma s8");
    run(k_ldmatrix<1, false>, 32, 4096, "ldmatrix x1");
    run(k_ldmatrix<2, false>, 32, 4096, "ldmatrix x2");
    run(k_ldmatrix<4, false>, 32, 4096, "ldmatrix x4");
    run(k_ldmatrix<1, true>, 32, 4096, "ldmatrix x1.trans");
    run(k_ldmatrix<2, true>, 32, 4096, "ldmatrix x2.trans");
    run(k_ldmatrix<4, true>, 32, 4096, "ldmatrix x4.trans");
    run(k_cp_async, 32, 1024, "cp.async");
    unsigned hi, lo; /* cvt.rna: ties away from zero at bit 13 */
    blk_tf32_split(__uint_as_float(0x3f801000u), hi, lo);
    check(hi == 0x3f802000u, "cvt.rna.tf32 tie", 0, 0, hi, 0x3f802000u);
    check(__uint_as_float(hi) + __uint_as_float(lo) == __uint_as_float(0x3f801000u),
          "tf32 split hi + lo", 0, 0, __uint_as_float(lo), 0);
    wgmma_tests();
#else
    run(k_mfma<16, 16, 0>, 64, 0, "mfma 16x16x16 f16");
    run(k_mfma<16, 16, 1>, 64, 0, "mfma 16x16x16 bf16");
    run(k_mfma<16, 4, 2>, 64, 0, "mfma 16x16x4 f32");
    run(k_mfma<32, 8, 0>, 64, 0, "mfma 32x32x8 f16");
    run(k_mfma<32, 8, 1>, 64, 0, "mfma 32x32x8 bf16");
    run(k_mfma<32, 2, 2>, 64, 0, "mfma 32x32x2 f32");
    run(k_mfma_i8, 64, 0, "mfma 16x16x16 i8");
#endif
    run(k_shfl, 2 * BLK_EMU_WARP, 0, "shuffles");
    {
        int arg = 0;
        void *params[1] = {&arg};
        long long grid[3] = {2, 1, 1};
        char err[512] = "";
        int rc = blk_emu_launch(k_skip_barrier, grid, BLK_EMU_WARP, 0, params, nullptr, err,
                                sizeof err);
        if (rc == 0 || !strstr(err, "barrier mismatch")) {
            printf("FAIL skipped __syncthreads: rc %d, '%s'\n", rc, err);
            fails++;
        }
    }
    run(k_poll, 2 * BLK_EMU_WARP, 0, "signal poll");
    if (!seen) {
        printf("FAIL signal poll: thread 0 never saw the flag\n");
        fails++;
    }
    {
        int arg = 0;
        void *params[1] = {&arg};
        long long grid[3] = {1, 1, 1};
        char err[512] = "";
        int rc = blk_emu_launch(k_deadlock, grid, BLK_EMU_WARP, 0, params, nullptr, err,
                                sizeof err);
        const char *want = "deadlock in block (0, 0, 0): every thread waits and no barrier "
                           "can complete: thread 0 at __syncthreads, thread 1 at a warp shuffle";
        if (rc == 0 || strcmp(err, want)) {
            printf("FAIL deadlock: rc %d, '%s'\n", rc, err);
            fails++;
        }
    }
    printf("%s %s wrappers\n", fails ? "FAIL" : "ok",
#ifdef BLK_EMU_HIP
           "hip-emu"
#else
           "cuda-emu"
#endif
    );
    return fails ? 1 : 0;
}
