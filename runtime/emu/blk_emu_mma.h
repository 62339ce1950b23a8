/* blk_emu_mma.h - the matrix and async-copy wrappers of blk_emu.h (which
 * lists them with their specification sections): ldmatrix, mma.sync,
 * cvt.rna.tf32, cp.async groups (CUDA) and v_mfma (HIP), each a warp
 * collective computing the lane's fragment from the vendor's layout
 * tables. Included by blk_emu.h only. */
#ifndef BLK_EMU_MMA_H
#define BLK_EMU_MMA_H

/* Fragment index helpers (PTX ISA, mma.m16n8kK): groupID = lane >> 2,
 * threadID_in_group = lane % 4. BLK_EMU_BREAK_LAYOUT swaps two lanes of
 * the A fragment: tests/emu uses it to prove the tests catch a wrong table. */
static inline int blk_emu_g(int lane) { return lane >> 2; }
static inline int blk_emu_q(int lane) { return lane & 3; }
#ifdef BLK_EMU_BREAK_LAYOUT
static inline int blk_emu_alane(int l) { return l == 1 ? 2 : l == 2 ? 1 : l; }
#else
static inline int blk_emu_alane(int l) { return l; }
#endif

#ifndef BLK_EMU_HIP
/* ------------------------------------------------------------ ldmatrix */

/* ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16: lanes 8i..8i+7 give
 * the addresses of the 8 rows (16 bytes each) of matrix i; lane l receives
 * in r[i] row l/4, columns 2(l%4) and 2(l%4)+1 of matrix i (.trans: the
 * transposed matrix, i.e. rows 2(l%4), 2(l%4)+1 of column l/4). */
BLK_EMU_FN void blk_emu_ldmatrix(unsigned *r, const void *p, int num, bool trans)
#if BLK_EMU_SPLIT != 1
{
    const int lane = blk_emu_lane();
    if (blk_emu_leader()) {
        blk_emu_count(blk_emu_m->st.ldmatrix, 1);
    }
    blk_emu_collective(BLK_EMU_TAG_LDMATRIX, &p, sizeof p, [&](BlkEmuSlot *s) {
        for (int i = 0; i < num; i++) {
            const unsigned char *row[8];
            for (int j = 0; j < 8; j++)
                memcpy(&row[j], s[8 * i + j].b, sizeof row[j]);
            unsigned short lo, hi;
            if (!trans) {
                memcpy(&lo, row[lane / 4] + 4 * (lane % 4), 2);
                memcpy(&hi, row[lane / 4] + 4 * (lane % 4) + 2, 2);
            } else {
                memcpy(&lo, row[2 * (lane % 4)] + 2 * (lane / 4), 2);
                memcpy(&hi, row[2 * (lane % 4) + 1] + 2 * (lane / 4), 2);
            }
            r[i] = (unsigned)lo | (unsigned)hi << 16;
        }
        if (lane == 0) { /* each 8x8 matrix: 8 rows of 16 bytes */
            long long a[32];
            for (int l = 0; l < 32; l++) {
                const unsigned char *q;
                memcpy(&q, s[l].b, sizeof q);
                a[l] = l < 8 * num ? (long long)(q - blk_emu_smem_base) : -1;
                if (l < 8 * num) /* the rows' cross-warp order (blk_emu_race.h) */
                    blk_emu_race_ldmatrix(a[l]);
            }
            int wf = 0;
            for (int i = 0; i < num; i++) { /* 16-byte rows: 4 words each */
                long long rows[32];
                for (int l = 0; l < 32; l++)
                    rows[l] = l / 8 == i ? a[l] : -1;
                wf += blk_emu_wavefronts(rows, 32, 16);
            }
            blk_emu_count(blk_emu_m->st.smem_wavefronts, wf);
            blk_emu_count(blk_emu_m->st.smem_requests, 1);
        }
    });
}
#else
;
#endif
static inline void blk_ldmatrix_x1(unsigned r[1], const void *p) { blk_emu_ldmatrix(r, p, 1, false); }
static inline void blk_ldmatrix_x2(unsigned r[2], const void *p) { blk_emu_ldmatrix(r, p, 2, false); }
static inline void blk_ldmatrix_x4(unsigned r[4], const void *p) { blk_emu_ldmatrix(r, p, 4, false); }
static inline void blk_ldmatrix_x1_trans(unsigned r[1], const void *p) { blk_emu_ldmatrix(r, p, 1, true); }
static inline void blk_ldmatrix_x2_trans(unsigned r[2], const void *p) { blk_emu_ldmatrix(r, p, 2, true); }
static inline void blk_ldmatrix_x4_trans(unsigned r[4], const void *p) { blk_emu_ldmatrix(r, p, 4, true); }

/* ------------------------------------------------------------ mma.sync */

struct BlkEmuMmaIn { unsigned a[4], b[2]; };

/* Element (row, col) of A / (k, n) of B from the deposits, per type:
 * kind 0 f16, 1 bf16 (m16n8k16: 2 per register), 2 tf32 (m16n8k8: 1 per
 * register), 3 s8 (m16n8k32: 4 per register). */
static inline double blk_emu_elem(unsigned reg, int kind, int idx)
{
    switch (kind) {
    case 0: return blk_emu_f16((unsigned short)(reg >> (16 * idx)));
    case 1: return blk_emu_bf16((unsigned short)(reg >> (16 * idx)));
    case 2: return __uint_as_float(reg & 0xffffe000u); /* tf32: the top 19 bits */
    default: return (double)(signed char)(reg >> (8 * idx));
    }
}

/* A[row][col] of the 16 x K operand from the lanes' registers. */
static inline double blk_emu_mma_a(BlkEmuSlot *s, int kind, int row, int col)
{
    BlkEmuMmaIn in;
    int lane, reg, idx;
    if (kind <= 1) {          /* m16n8k16: a0..a7, 2 per register */
        lane = (row % 8) * 4 + (col % 8) / 2;
        reg = (row >= 8) + 2 * (col >= 8);
        idx = col % 2;
    } else if (kind == 2) {   /* m16n8k8 tf32: a0..a3 */
        lane = (row % 8) * 4 + col % 4;
        reg = (row >= 8) + 2 * (col >= 4);
        idx = 0;
    } else {                  /* m16n8k32 s8: a0..a15, 4 per register */
        lane = (row % 8) * 4 + (col % 16) / 4;
        reg = (row >= 8) + 2 * (col >= 16);
        idx = col % 4;
    }
    memcpy(&in, s[blk_emu_alane(lane)].b, sizeof in);
    return blk_emu_elem(in.a[reg], kind, idx);
}
/* B[k][n] of the K x 8 operand. */
static inline double blk_emu_mma_b(BlkEmuSlot *s, int kind, int k, int n)
{
    BlkEmuMmaIn in;
    int lane, reg, idx;
    if (kind <= 1) {          /* b0..b3: k = 2q + i (+8 for b2, b3), n = g */
        lane = n * 4 + (k % 8) / 2;
        reg = k >= 8;
        idx = k % 2;
    } else if (kind == 2) {   /* b0, b1: k = q (+4), n = g */
        lane = n * 4 + k % 4;
        reg = k >= 4;
        idx = 0;
    } else {                  /* b0..b7: k = 4q + i (+16), n = g */
        lane = n * 4 + (k % 16) / 4;
        reg = k >= 16;
        idx = k % 4;
    }
    memcpy(&in, s[lane].b, sizeof in);
    return blk_emu_elem(in.b[reg], kind, idx);
}

/* D = A * B + C for m16n8kK; this lane's c0..c3 are rows g, g, g+8, g+8
 * and columns 2q, 2q+1, 2q, 2q+1. Products are exact in double and summed
 * in k order, then rounded to f32 once (the hardware's internal order and
 * rounding are unspecified; this is the exactly rounded result). */
template <class T> static inline void blk_emu_mma(T c[4], const unsigned a[4], const unsigned b[2], int kind)
{
    const int K = kind <= 1 ? 16 : kind == 2 ? 8 : 32;
    const int lane = blk_emu_lane();
    BlkEmuMmaIn in;
    memcpy(in.a, a, sizeof in.a);
    memcpy(in.b, b, sizeof in.b);
    if (blk_emu_leader()) {
        blk_emu_count(blk_emu_m->st.mma, 1);
        blk_emu_count(blk_emu_m->st.mma_flops, 2LL * 16 * 8 * K);
    }
    blk_emu_collective(BLK_EMU_TAG_MMA, &in, sizeof in, [&](BlkEmuSlot *s) {
        for (int i = 0; i < 4; i++) {
            const int row = blk_emu_g(lane) + 8 * (i / 2), col = 2 * blk_emu_q(lane) + i % 2;
            if (kind == 3) {
                long long acc = c[i];
                for (int k = 0; k < K; k++)
                    acc += (long long)blk_emu_mma_a(s, kind, row, k) *
                           (long long)blk_emu_mma_b(s, kind, k, col);
                c[i] = (T)(int)(unsigned)acc; /* s32 wraps */
            } else {
                double acc = 0;
                for (int k = 0; k < K; k++)
                    acc += blk_emu_mma_a(s, kind, row, k) * blk_emu_mma_b(s, kind, k, col);
                c[i] = (T)(float)(acc + (double)c[i]);
            }
        }
    });
}
static inline void blk_mma_f16(float c[4], const unsigned a[4], const unsigned b[2]) { blk_emu_mma(c, a, b, 0); }
static inline void blk_mma_bf16(float c[4], const unsigned a[4], const unsigned b[2]) { blk_emu_mma(c, a, b, 1); }
static inline void blk_mma_tf32(float c[4], const unsigned a[4], const unsigned b[2]) { blk_emu_mma(c, a, b, 2); }
static inline void blk_mma_s8(int c[4], const unsigned a[4], const unsigned b[2]) { blk_emu_mma(c, a, b, 3); }

/* cvt.rna.tf32.f32: round to nearest, ties away from zero, to 10 mantissa
 * bits (the low 13 bits cleared); NaN and inf unchanged */
static inline unsigned blk_emu_tf32(float x)
{
    unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return u;
    return (u + 0x1000u) & 0xffffe000u;
}
static inline void blk_tf32_split(float x, unsigned &hi, unsigned &lo)
{
    hi = blk_emu_tf32(x);
    lo = blk_emu_tf32(x - __uint_as_float(hi));
}

/* ------------------------------------------------------------ cp.async */

/* Per thread: copies issued and not yet landed. A copy's 16 bytes are read
 * at issue (the first nbytes of src, the rest zero) and written to shared
 * memory only when its group completes at a blk_cp_wait<N> that allows
 * it (cp.async.wait_group N: all but the N most recent committed groups),
 * so a read before the matching wait sees the old contents. Copies not
 * yet committed belong to no group and no wait completes them. */
struct BlkEmuCopy { unsigned char *dst; unsigned char data[16]; long long group; };
struct BlkEmuCopies { std::vector<BlkEmuCopy> v; long long committed; };
BLK_EMU_VAR BlkEmuCopies blk_emu_cps[1024]; /* per thread of the block */
#define blk_emu_copies (blk_emu_cps[threadIdx.x].v)
#define blk_emu_committed (blk_emu_cps[threadIdx.x].committed)

BLK_EMU_FN void blk_emu_wg_write(long long off, long long n, int mode, const char *who);
BLK_EMU_FN void blk_cp_async16(void *dst, const void *src, int nbytes)
#if BLK_EMU_SPLIT != 1
{
    blk_emu_wg_write((long long)((unsigned char *)dst - blk_emu_smem_base), 16, 0, "cp.async");
    blk_emu_race_cp_issue((long long)((unsigned char *)dst - blk_emu_smem_base));
    BlkEmuCopy c;
    c.dst = (unsigned char *)dst;
    c.group = -1;
    for (int i = 0; i < 16; i++)
        c.data[i] = i < nbytes ? ((const unsigned char *)src)[i] : 0;
    blk_emu_copies.push_back(c);
    blk_emu_count(blk_emu_m->st.cp_async, 1);
    if (nbytes > 0) /* its global read (--stats), grouped per lane occurrence */
        blk_emu_note(1, (long long)(uintptr_t)src, nbytes > 16 ? 16 : nbytes, false);
}
#else
;
#endif
BLK_EMU_FN void blk_cp_commit(void)
#if BLK_EMU_SPLIT != 1
{
    blk_emu_committed++;
    for (auto &c : blk_emu_copies)
        if (c.group < 0)
            c.group = blk_emu_committed;
}
#else
;
#endif
BLK_EMU_FN void blk_emu_cp_wait(int N)
#if BLK_EMU_SPLIT != 1
{
    size_t keep = 0;
    for (size_t i = 0; i < blk_emu_copies.size(); i++) {
        BlkEmuCopy &c = blk_emu_copies[i];
        if (c.group >= 0 && c.group <= blk_emu_committed - N) {
            memcpy(c.dst, c.data, 16);
            blk_emu_race_cp_land((long long)(c.dst - blk_emu_smem_base));
            blk_emu_note(2, (long long)(c.dst - blk_emu_smem_base), 16, true);
        }
        else
            blk_emu_copies[keep++] = c;
    }
    blk_emu_copies.resize(keep);
}
#else
;
#endif
template <int N> static inline void blk_cp_wait(void) { blk_emu_cp_wait(N); }
#endif /* !BLK_EMU_HIP */

/* At the end of a thread's block: copies still in flight are dropped. */
static inline void blk_emu_cp_drop(void)
{
#ifndef BLK_EMU_HIP
    blk_emu_copies.clear();
    blk_emu_committed = 0;
#endif
}
/* At a launch: thread t starts with no copies (one failed midway may have left some). */
static inline void blk_emu_cp_reset(int t)
{
#ifndef BLK_EMU_HIP
    blk_emu_cps[t].v.clear();
    blk_emu_cps[t].committed = 0;
#else
    (void)t;
#endif
}

#ifdef BLK_EMU_HIP
/* ------------------------------------------------------------ MFMA */

typedef _Float16 blk_half4 __attribute__((vector_size(8)));
typedef short blk_short4 __attribute__((vector_size(8)));
typedef float blk_float4 __attribute__((vector_size(16)));
typedef float blk_float16 __attribute__((vector_size(64)));
typedef int blk_int4 __attribute__((vector_size(16)));

/* Operand layouts (CDNA2 ISA; AMD matrix instruction calculator), for a
 * wave of 64 lanes, j the element within the lane's register(s):
 *   16x16xK (K = 4 per block of 16 lanes times kpl elements per lane):
 *     A[m][k]: lane = m + 16 * (k / kpl), element k % kpl
 *     B[k][n]: lane = n + 16 * (k / kpl), element k % kpl
 *     D[m][n]: lane = n + 16 * (m / 4), element m % 4
 *   32x32xK (2 blocks of 32 lanes in K):
 *     A[m][k]: lane = m + 32 * (k / kpl), element k % kpl
 *     B[k][n]: lane = n + 32 * (k / kpl), element k % kpl
 *     D[m][n]: lane = n + 32 * ((m / 4) % 2), element 4 * (m / 8) + m % 4
 * (kpl: 4 for f16/bf16_1k and i8 (four bytes of one 32-bit register, k % 4
 * in bits 8 (k % 4) .. +7), 1 for f32). */
struct BlkEmuMfmaIn { float a[4], b[4]; };

template <int MN, int K, class V>
static inline V blk_emu_mfma(const float *a, const float *b, int kpl, V c)
{
    const int lane = blk_emu_lane();
    BlkEmuMfmaIn in;
    memset(&in, 0, sizeof in);
    memcpy(in.a, a, sizeof(float) * (size_t)kpl);
    memcpy(in.b, b, sizeof(float) * (size_t)kpl);
    if (blk_emu_leader()) {
        blk_emu_count(blk_emu_m->st.mma, 1);
        blk_emu_count(blk_emu_m->st.mma_flops, 2LL * MN * MN * K);
    }
    V d = c;
    blk_emu_collective(BLK_EMU_TAG_MMA, &in, sizeof in, [&](BlkEmuSlot *s) {
        const int nreg = MN == 16 ? 4 : 16;
        for (int j = 0; j < nreg; j++) {
            int m, n = lane % MN;
            if (MN == 16)
                m = 4 * (lane / 16) + j;
            else
                m = 8 * (j / 4) + 4 * (lane / 32) + j % 4;
            double acc = 0;
            for (int k = 0; k < K; k++) {
                BlkEmuMfmaIn ia, ib;
                memcpy(&ia, s[blk_emu_alane(m + MN * (k / kpl))].b, sizeof ia);
                memcpy(&ib, s[n + MN * (k / kpl)].b, sizeof ib);
                acc += (double)ia.a[k % kpl] * (double)ib.b[k % kpl];
            }
            d[j] = (float)(acc + (double)c[j]);
        }
    });
    return d;
}
static inline blk_float4 blk_mfma_16x16x16_f16(blk_half4 a, blk_half4 b, blk_float4 c)
{
    float fa[4], fb[4];
    for (int j = 0; j < 4; j++) { fa[j] = (float)a[j]; fb[j] = (float)b[j]; }
    return blk_emu_mfma<16, 16>(fa, fb, 4, c);
}
static inline blk_float4 blk_mfma_16x16x16_bf16(blk_short4 a, blk_short4 b, blk_float4 c)
{
    float fa[4], fb[4];
    for (int j = 0; j < 4; j++) {
        fa[j] = blk_emu_bf16((unsigned short)a[j]);
        fb[j] = blk_emu_bf16((unsigned short)b[j]);
    }
    return blk_emu_mfma<16, 16>(fa, fb, 4, c);
}
static inline blk_float4 blk_mfma_16x16x4_f32(float a, float b, blk_float4 c)
{
    return blk_emu_mfma<16, 4>(&a, &b, 1, c);
}
/* v_mfma_i32_16x16x16i8: the 16x16x16 layouts, four signed bytes per lane
 * and operand, exact i32 accumulation (wrapping, as the CPU's i32 dot) */
static inline blk_int4 blk_mfma_16x16x16_i8(int a, int b, blk_int4 c)
{
    const int lane = blk_emu_lane();
    int in[2] = {a, b};
    if (blk_emu_leader()) {
        blk_emu_count(blk_emu_m->st.mma, 1);
        blk_emu_count(blk_emu_m->st.mma_flops, 2LL * 16 * 16 * 16);
    }
    blk_int4 d = c;
    blk_emu_collective(BLK_EMU_TAG_MMA, in, sizeof in, [&](BlkEmuSlot *s) {
        for (int j = 0; j < 4; j++) {
            int m = 4 * (lane / 16) + j, n = lane % 16;
            unsigned acc = (unsigned)c[j];
            for (int k = 0; k < 16; k++) {
                int ia[2], ib[2];
                memcpy(ia, s[blk_emu_alane(m + 16 * (k / 4))].b, sizeof ia);
                memcpy(ib, s[n + 16 * (k / 4)].b, sizeof ib);
                int x = (signed char)((unsigned)ia[0] >> (8 * (k % 4)));
                int y = (signed char)((unsigned)ib[1] >> (8 * (k % 4)));
                acc += (unsigned)(x * y);
            }
            d[j] = (int)acc;
        }
    });
    return d;
}
static inline blk_float16 blk_mfma_32x32x8_f16(blk_half4 a, blk_half4 b, blk_float16 c)
{
    float fa[4], fb[4];
    for (int j = 0; j < 4; j++) { fa[j] = (float)a[j]; fb[j] = (float)b[j]; }
    return blk_emu_mfma<32, 8>(fa, fb, 4, c);
}
static inline blk_float16 blk_mfma_32x32x8_bf16(blk_short4 a, blk_short4 b, blk_float16 c)
{
    float fa[4], fb[4];
    for (int j = 0; j < 4; j++) {
        fa[j] = blk_emu_bf16((unsigned short)a[j]);
        fb[j] = blk_emu_bf16((unsigned short)b[j]);
    }
    return blk_emu_mfma<32, 8>(fa, fb, 4, c);
}
static inline blk_float16 blk_mfma_32x32x2_f32(float a, float b, blk_float16 c)
{
    return blk_emu_mfma<32, 2>(&a, &b, 1, c);
}
#endif /* BLK_EMU_HIP */

#endif
