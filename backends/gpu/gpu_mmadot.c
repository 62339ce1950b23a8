/* gpu_mmadot.c — the dots on MMA-layout registers (gpu_layouts.c chose
 * them): bk_gpu_mma_dot accumulates into an MMA var's registers in place,
 * bk_gpu_mma_dot_value computes a dot value in registers, in one warp grid
 * or a part at a time (batched dots, tiles no grid of every warp covers),
 * and writes it to its shared tile where it has one. Operands come from
 * shared memory: ldmatrix -> mma.sync m16n8k16 on CUDA sm_80+, LDS -> MFMA
 * 16x16x16 / 32x32x8 on gfx90a; f32 operands as 3xTF32 m16n8k8 / MFMA
 * 16x16x4; i8 into int registers as m16n8k32 .s8 on CUDA, MFMA 16x16x16i8
 * on HIP; an FMA loop per register under the arch guard's #else. Register
 * numbering: gpu_mma.c. */
#include "gpu_emit.h"

#include <stdio.h>
#include <string.h>

/* Append "E * S + " to buf (E = blk_b / D % R, the parts simplified away) */
static void off_term(char *buf, size_t n, long long D, long long R, long long S)
{
    size_t l = strlen(buf);
    if (R == 1 || S == 0)
        return;
    char e[64];
    if (D == 1)
        snprintf(e, sizeof e, "blk_b");
    else
        snprintf(e, sizeof e, "blk_b / %lld", D);
    if (R > 0)
        snprintf(e + strlen(e), sizeof e - strlen(e), " %% %lld", R);
    snprintf(buf + l, n - l, "%s * %lld + ", e, S);
}

/* The flat offset of part blk_b (gpu_emit.h BkGpuMma: B parts, cm x cn
 * per matrix) in operand j (0: a, 1: b, 2: the result and accumulator) of
 * dot id computed a part at a time in the registers of v ("... + "):
 * matrix blk_b / (cm cn) (a, b: if batched), rows blk_b / cn % cm (a, the
 * result), columns blk_b % cn (b, the result); "" for a dot in one grid. */
static void batch_off(const BkGpuEm *em, int id, int v, int j, char *buf, size_t n)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    const IrType *at = &em->f->ins[in->opnd[0]].type, *rt = &in->type;
    long long K = at->shape[at->rank - 1], M = rt->shape[rt->rank - 2],
              N = rt->shape[rt->rank - 1];
    buf[0] = 0;
    if (g->wb <= 0) /* one grid: cm, cn are 0 */
        return;
    long long per = (long long)g->cm * g->cn, nb = g->B / per;
    bool tb = bk_gpu_dot_tsrc(em, in->opnd[1]) >= 0;
    bool bat = j == 2 || em->f->ins[in->opnd[j < 2 ? j : 0]].type.rank == 3;
    long long smat = j == 0 ? M * K : j == 1 ? K * N : M * N;
    if (bat && nb > 1) /* the matrix; the last term needs no % */
        off_term(buf, n, per, -1, smat);
    if (j != 1)
        off_term(buf, n, g->cn, g->cm == 1 || nb > 1 ? g->cm : -1, g->M * (j == 0 ? K : N));
    if (j != 0)
        off_term(buf, n, 1, g->cn == 1 || nb > 1 || g->cm > 1 ? g->cn : -1,
                 g->N * (j == 1 && tb ? K : 1));
}

/* The per-register FMA form (no tensor cores, and under #else). */
static void dot_fma(BkGpuEm *em, int id, int v, long long K, long long N)
{
    const IrInstr *in = &em->f->ins[id];
    char x[BK_GPU_EXPR], y[BK_GPU_EXPR], ia[256], ib[256];
    const char *ct = bk_gpu_ctype(in->type.dtype); /* float, or int (i8 dots) */
    bk_gpu_mma_loop_open(em, v);
    bk_gpu_line(em, "%s blk_s = var%d[blk_r];", ct, v);
    int t = bk_gpu_dot_tsrc(em, in->opnd[1]);
    char oa[160], ob[160], ea[256], eb[256];
    batch_off(em, id, v, 0, oa, sizeof oa);
    batch_off(em, id, v, 1, ob, sizeof ob);
    snprintf(ea, sizeof ea, "%sblk_row * K_ + k", oa);
    snprintf(eb, sizeof eb, "%s%s", ob, t >= 0 ? "blk_col * K_ + k" : "k * N_ + blk_col");
    bk_gpu_swz_idx(em, in->opnd[0], ea, ia, sizeof ia);
    bk_gpu_swz_idx(em, t >= 0 ? t : in->opnd[1], eb, ib, sizeof ib);
    bk_gpu_read(em, in->opnd[0], ia, x, sizeof x);
    bk_gpu_read(em, t >= 0 ? t : in->opnd[1], ib, y, sizeof y);
    bk_gpu_line(em, "const int K_ = %lld, N_ = %lld;", K, N);
    bk_gpu_line(em, "for (int k = 0; k < K_; k++)");
    int ad = em->f->ins[in->opnd[0]].type.dtype, bd = em->f->ins[in->opnd[1]].type.dtype;
    if (dsl_dtype_bytes(ad) == 1 && ad != DT_I8) { /* fp8 (wgmma's fallback): bytes, decoded */
        char cx[600], cy[600];
        bk_gpu_to_c(cx, sizeof cx, ad, x);
        bk_gpu_to_c(cy, sizeof cy, bd, y);
        bk_gpu_line(em, "    blk_s = blk_s + %s * %s;", cx, cy);
    } else {
        bk_gpu_line(em, "    blk_s = blk_s + (%s)%s * (%s)%s;", ct, x, ct, y);
    }
    bk_gpu_line(em, "var%d[blk_r] = blk_s;", v);
    bk_gpu_mma_loop_close(em);
}

/* Bytes per row 2C of operand x of a dot on var v when its ldmatrix
 * addresses can be a lane base XOR a constant (dot_mma): x swizzled by
 * blk_swz as [R][C] with C == cols (C a power of 2, so rows are whole
 * 2C-byte blocks), in one grid (no part offset) and at a smem offset (and
 * ring slot size) that is a multiple of 2C, so a row starts at a multiple
 * of 2C from blk_smem and XOR only touches the chunk bits; else 0. */
static long long xor_rowbytes(const BkGpuEm *em, int v, int x, long long cols)
{
    int C = bk_gpu_swz_cols(em, x);
    long long rb = 2LL * C;
    if (em->noldsmxor || em->vmma[v].wb > 0 || !C || C != cols || em->alias[x] != x ||
        em->off[x] < 0 || em->off[x] % rb ||
        (em->pipe[x] >= 0 && bk_gpu_pipe_slot(em, x) % rb))
        return 0;
    return rb;
}

/* The fragment loads of a CUDA m16n8k16 dot (dot_mma, gpu_fragpipe.c).
 * Swizzled operands (xor_rowbytes): the chunk of row r, column c is
 * (c / 8) ^ phase(r), and the phase is the same every 16 rows, so from a
 * lane's address at k = 0 (i = 0, j = 0), k's (A; B read as is: k / 8
 * even, the lane's chunk 0 or 1) is that XOR 2k bytes, i's (A) is + 16i
 * rows, j's (B read .trans: chunk c0 + j, no carry since j is even and
 * c0 = wc / 8 + 0|1 has zero bits where j has ones when wn == 1 or nt is
 * a power of 2) XOR 16j bytes, k's + k rows: one LOP3 per k step (or j)
 * and an immediate per ldmatrix, where blk_swz per ldmatrix costs an add
 * each. */
void bk_gpu_mma_frag_plan(const BkGpuEm *em, int id, int v, BkGpuFrag *fr)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    const IrType *at = &em->f->ins[in->opnd[0]].type;
    long long K = at->shape[at->rank - 1], N = in->type.shape[in->type.rank - 1];
    fr->t = bk_gpu_dot_tsrc(em, in->opnd[1]);
    fr->bs = fr->t >= 0 ? fr->t : in->opnd[1];
    fr->K = K;
    fr->N = N;
    fr->areg = em->areg && em->areg[id];
    fr->xa = fr->areg ? 0 : xor_rowbytes(em, v, in->opnd[0], K);
    fr->xb = g->nt >= 2 ? xor_rowbytes(em, v, fr->bs, fr->t >= 0 ? K : N) : 0;
    if (fr->t < 0 && g->wn > 1 && (g->nt & (g->nt - 1)))
        fr->xb = 0;
}

/* `const unsigned NAME = (unsigned)(BASE) + 2u * <the lane's swizzled
 * element at k = 0>` of operand j (0: a, 1: b) in the xor form */
void bk_gpu_mma_frag_base(BkGpuEm *em, int id, int v, int j, const BkGpuFrag *fr,
                          const char *name, const char *base)
{
    const IrInstr *in = &em->f->ins[id];
    char e[256], x[512];
    if (j == 0)
        snprintf(e, sizeof e, "(blk_wr%d + (blk_lane & 15)) * %lld + (blk_lane >> 4) * 8", v, fr->K);
    else if (fr->t >= 0)
        snprintf(e, sizeof e, "(blk_wc%d + (blk_lane >> 4) * 8 + (blk_lane & 7)) * %lld + ((blk_lane >> 3) & 1) * 8",
                 v, fr->K);
    else
        snprintf(e, sizeof e, "(blk_lane & 15) * %lld + blk_wc%d + (blk_lane >> 4) * 8", fr->N, v);
    bk_gpu_swz_idx(em, j == 0 ? in->opnd[0] : fr->bs, e, x, sizeof x);
    bk_gpu_line(em, "const unsigned %s = (unsigned)(%s) + 2u * %s;", name, base, x);
}

/* The ldmatrix lines of k step K (a C expression) into fragment arrays
 * A[mt][4] and B[nt][2] (or A from a register value's registers); the
 * xor form from lane bases blk_xa / blk_xb */
void bk_gpu_mma_frag_load(BkGpuEm *em, int id, int v, const BkGpuFrag *fr, const char *k,
                          const char *a, const char *b)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    long long K = fr->K, N = fr->N;
    int t = fr->t;
    char e[256], x[512];
    snprintf(e, sizeof e, "(blk_wr%d + i * 16 + (blk_lane & 15)) * %lld + %s + (blk_lane >> 4) * 8",
             v, K, k);
    bk_gpu_swz_idx(em, in->opnd[0], e, x, sizeof x);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->mt);
    if (fr->areg) {
        /* a from register value Q: n-tiles 2k', 2k'+1 of its m16n8 layout
         * (c0 c1 = row g, c2 c3 = row g + 8) are a0 a1 / a2 a3 of k step k' */
        int Q = BK_GPU_RV_VAR(em, in->opnd[0]);
        bk_gpu_line(em, "{ /* a from the registers of v%d (var%d) */", in->opnd[0], Q);
        bk_gpu_line(em, "    const int blk_f = (i * %d + %s / 8) * 4;", em->vmma[Q].nt, k);
        bk_gpu_line(em, "    %s[i][0] = blk_pack2(var%d[blk_f], var%d[blk_f + 1]); %s[i][1] = blk_pack2(var%d[blk_f + 2], var%d[blk_f + 3]);",
                    a, Q, Q, a, Q, Q);
        bk_gpu_line(em, "    %s[i][2] = blk_pack2(var%d[blk_f + 4], var%d[blk_f + 5]); %s[i][3] = blk_pack2(var%d[blk_f + 6], var%d[blk_f + 7]);",
                    a, Q, Q, a, Q, Q);
        bk_gpu_line(em, "}");
    } else if (fr->xa) {
        bk_gpu_line(em, "    blk_ldmatrix_x4(%s[i], blk_smem + ((blk_xa ^ (unsigned)(%s * 2)) + i * %lld));",
                    a, k, 16 * fr->xa);
    } else {
        bk_gpu_line(em, "    blk_ldmatrix_x4(%s[i], &blk_A[%s]);", a, x);
    }
    /* B = trans(T), T[N][K] row-major: the 8x8 matrices are (n, k) blocks
     * of T as they are (no .trans): lanes 8i..8i+7 give rows n of matrix
     * i = (n-tile j + i / 2, k half i % 2), so b0/b1 = k 2q.., k 2q+8.. of
     * column n = g, the fragment's */
    if (g->nt >= 2) {
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int j = 0; j + 1 < %d; j += 2) {", g->nt);
        em->indent++;
        bk_gpu_line(em, "unsigned t[4];");
        if (t >= 0)
            snprintf(e, sizeof e, "(blk_wc%d + j * 8 + (blk_lane >> 4) * 8 + (blk_lane & 7)) * %lld + %s + ((blk_lane >> 3) & 1) * 8",
                     v, K, k);
        else
            snprintf(e, sizeof e, "(%s + (blk_lane & 15)) * %lld + blk_wc%d + j * 8 + (blk_lane >> 4) * 8",
                     k, N, v);
        bk_gpu_swz_idx(em, fr->bs, e, x, sizeof x);
        if (fr->xb && t >= 0)
            bk_gpu_line(em, "blk_ldmatrix_x4(t, blk_smem + ((blk_xb ^ (unsigned)(%s * 2)) + j * %lld));",
                        k, 8 * fr->xb);
        else if (fr->xb)
            bk_gpu_line(em, "blk_ldmatrix_x4_trans(t, blk_smem + ((blk_xb ^ (unsigned)(j * 16)) + %s * %lld));",
                        k, fr->xb);
        else
            bk_gpu_line(em, "blk_ldmatrix_x4%s(t, &blk_B[%s]);", t >= 0 ? "" : "_trans", x);
        bk_gpu_line(em, "%s[j][0] = t[0]; %s[j][1] = t[1]; %s[j + 1][0] = t[2]; %s[j + 1][1] = t[3];",
                    b, b, b, b);
        em->indent--;
        bk_gpu_line(em, "}");
    }
    if (g->nt % 2) {
        if (t >= 0)
            snprintf(e, sizeof e, "(blk_wc%d + %d + (blk_lane & 7)) * %lld + %s + ((blk_lane >> 3) & 1) * 8",
                     v, (g->nt - 1) * 8, K, k);
        else
            snprintf(e, sizeof e, "(%s + (blk_lane & 15)) * %lld + blk_wc%d + %d", k, N, v,
                     (g->nt - 1) * 8);
        bk_gpu_swz_idx(em, fr->bs, e, x, sizeof x);
        bk_gpu_line(em, "blk_ldmatrix_x2%s(%s[%d], &blk_B[%s]);", t >= 0 ? "" : "_trans",
                    b, g->nt - 1, x);
    }
}

/* mt x nt mma.sync m16n8k16 of fragments A, B into var v's registers */
void bk_gpu_mma_frag_mma(BkGpuEm *em, int v, const char *ab, const char *a, const char *b)
{
    const BkGpuMma *g = &em->vmma[v];
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->mt);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int j = 0; j < %d; j++)", g->nt);
    bk_gpu_line(em, "        blk_mma_%s(&var%d[(i * %d + j) * 4], %s[i], %s[j]);", ab, v, g->nt, a, b);
}

/* CUDA: per k step of 16, the warp's A fragments (ldmatrix.x4, rows of
 * A[M][K]) and B fragments (ldmatrix.x4.trans: two n-tiles of B[K][N] at
 * once; .x2.trans for an odd last one), then mt x nt mma.sync m16n8k16.
 * PTX ISA fragment tables: a0..a3 = (rows g, g+8) x (k 2q.., k 2q+8..) are
 * the 8x8 matrices delivered by lanes 0-7, 8-15, 16-23, 24-31; b0, b1 =
 * k rows 0-7 / 8-15 of column g, transposed from row-major B. */
static void dot_mma(BkGpuEm *em, int id, int v, long long K, long long N)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    const char *ab = em->f->ins[in->opnd[0]].type.dtype == DT_F16 ? "f16" : "bf16";
    BkGpuFrag fr;
    bk_gpu_mma_frag_plan(em, id, v, &fr);
    if (fr.xa)
        bk_gpu_mma_frag_base(em, id, v, 0, &fr, "blk_xa", "(const unsigned char *)blk_A - blk_smem");
    if (fr.xb)
        bk_gpu_mma_frag_base(em, id, v, 1, &fr, "blk_xb", "(const unsigned char *)blk_B - blk_smem");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k += 16) {", K);
    em->indent++;
    bk_gpu_line(em, "unsigned a[%d][4], b[%d][2];", g->mt, g->nt);
    bk_gpu_mma_frag_load(em, id, v, &fr, "k", "a", "b");
    bk_gpu_mma_frag_mma(em, v, ab, "a", "b");
    em->indent--;
    bk_gpu_line(em, "}");
    (void)N;
}

/* CUDA, f32 operands: per k step of 8, 3xTF32 (x = hi + lo, both tf32;
 * a*b ~ lo*hi + hi*lo + hi*hi keeps f32 accuracy) on mma.sync m16n8k8.
 * PTX ISA fragments of m16n8k8 .tf32: a0..a3 = A (g, q), (g + 8, q),
 * (g, q + 4), (g + 8, q + 4); b0, b1 = B (k q, n g), (k q + 4, n g);
 * g = lane / 4, q = lane % 4. Operands read element by element. */
static void dot_tf32(BkGpuEm *em, int id, int v, long long K, long long N)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    int t = bk_gpu_dot_tsrc(em, in->opnd[1]);
    char b0[256], b1[256];
    if (t >= 0) { /* B = trans(T): T[n][k] */
        snprintf(b0, sizeof b0, "blk_B[(blk_wc%d + j * 8 + blk_g) * %lld + k + blk_q]", v, K);
        snprintf(b1, sizeof b1, "blk_B[(blk_wc%d + j * 8 + blk_g) * %lld + k + blk_q + 4]", v, K);
    } else {
        snprintf(b0, sizeof b0, "blk_B[(k + blk_q) * %lld + blk_wc%d + j * 8 + blk_g]", N, v);
        snprintf(b1, sizeof b1, "blk_B[(k + blk_q + 4) * %lld + blk_wc%d + j * 8 + blk_g]", N, v);
    }
    bk_gpu_line(em, "const int blk_g = blk_lane >> 2, blk_q = blk_lane & 3;");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k += 8) {", K);
    em->indent++;
    bk_gpu_line(em, "unsigned ah[%d][4], al[%d][4], bh[%d][2], bl[%d][2];", g->mt, g->mt,
                g->nt, g->nt);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++) {", g->mt);
    bk_gpu_line(em, "    const float *r = &blk_A[(blk_wr%d + i * 16 + blk_g) * %lld + k + blk_q];", v, K);
    bk_gpu_line(em, "    blk_tf32_split(BLK_SLD(r[0]), ah[i][0], al[i][0]);");
    bk_gpu_line(em, "    blk_tf32_split(BLK_SLD(r[8 * %lld]), ah[i][1], al[i][1]);", K);
    bk_gpu_line(em, "    blk_tf32_split(BLK_SLD(r[4]), ah[i][2], al[i][2]);");
    bk_gpu_line(em, "    blk_tf32_split(BLK_SLD(r[8 * %lld + 4]), ah[i][3], al[i][3]);", K);
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int j = 0; j < %d; j++) {", g->nt);
    bk_gpu_line(em, "    blk_tf32_split(BLK_SLD(%s), bh[j][0], bl[j][0]);", b0);
    bk_gpu_line(em, "    blk_tf32_split(BLK_SLD(%s), bh[j][1], bl[j][1]);", b1);
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->mt);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int j = 0; j < %d; j++) {", g->nt);
    bk_gpu_line(em, "        float *c = &var%d[(i * %d + j) * 4];", v, g->nt);
    bk_gpu_line(em, "        blk_mma_tf32(c, al[i], bh[j]);");
    bk_gpu_line(em, "        blk_mma_tf32(c, ah[i], bl[j]);");
    bk_gpu_line(em, "        blk_mma_tf32(c, ah[i], bh[j]);");
    bk_gpu_line(em, "    }");
    em->indent--;
    bk_gpu_line(em, "}");
}

/* CUDA, i8 operands, i32 registers: per k step of 32, mma.sync
 * m16n8k32 .s8. PTX ISA fragments: a0..a3 = 4 bytes each of A (g, k 4q..),
 * (g + 8, 4q..), (g, 16 + 4q..), (g + 8, 16 + 4q..); b0, b1 = B (k 4q..
 * 4q+3, n g), (k 16 + 4q.., n g), packed from 4 rows (blk_pack4), or 4
 * contiguous bytes of t's row n for b = trans(t). */
static void dot_s8(BkGpuEm *em, int id, int v, long long K, long long N)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    int t = bk_gpu_dot_tsrc(em, in->opnd[1]);
    bk_gpu_line(em, "const int blk_g = blk_lane >> 2, blk_q = blk_lane & 3;");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k += 32) {", K);
    em->indent++;
    bk_gpu_line(em, "unsigned a[%d][4], b[%d][2];", g->mt, g->nt);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++) {", g->mt);
    bk_gpu_line(em, "    const signed char *r = &blk_A[(blk_wr%d + i * 16 + blk_g) * %lld + k + 4 * blk_q];",
                v, K);
    bk_gpu_line(em, "    a[i][0] = BLK_SLD(*(const unsigned *)r); a[i][1] = BLK_SLD(*(const unsigned *)(r + 8 * %lld));", K);
    bk_gpu_line(em, "    a[i][2] = BLK_SLD(*(const unsigned *)(r + 16)); a[i][3] = BLK_SLD(*(const unsigned *)(r + 8 * %lld + 16));", K);
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int j = 0; j < %d; j++) {", g->nt);
    if (t >= 0) {
        bk_gpu_line(em, "    const signed char *p = &blk_B[(blk_wc%d + j * 8 + blk_g) * %lld + k + 4 * blk_q];",
                    v, K);
        bk_gpu_line(em, "    b[j][0] = BLK_SLD(*(const unsigned *)p); b[j][1] = BLK_SLD(*(const unsigned *)(p + 16));");
    } else {
        bk_gpu_line(em, "    b[j][0] = blk_pack4(&blk_B[(k + 4 * blk_q) * %lld + blk_wc%d + j * 8 + blk_g], %lld);",
                    N, v, N);
        bk_gpu_line(em, "    b[j][1] = blk_pack4(&blk_B[(k + 16 + 4 * blk_q) * %lld + blk_wc%d + j * 8 + blk_g], %lld);",
                    N, v, N);
    }
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->mt);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int j = 0; j < %d; j++)", g->nt);
    bk_gpu_line(em, "        blk_mma_s8(&var%d[(i * %d + j) * 4], a[i], b[j]);", v, g->nt);
    em->indent--;
    bk_gpu_line(em, "}");
}

/* HIP, f32 operands: v_mfma_f32_16x16x4f32 per 16x16 fragment (AMD
 * CDNA2 ISA): lane l gives A row l%16, k l/16 and B column l%16, the same
 * k; k steps of 4; the accumulator layout of 16x16x16. */
static void dot_mfma_f32(BkGpuEm *em, int id, int v, long long K, long long N)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    bk_gpu_line(em, "const int blk_fr = blk_lane & 15, blk_fk = blk_lane >> 4;");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k += 4) {", K);
    em->indent++;
    bk_gpu_line(em, "float a[%d], b[%d];", g->mt, g->nt);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++) a[i] = BLK_SLD(blk_A[(blk_wr%d + i * 16 + blk_fr) * %lld + k + blk_fk]);",
                g->mt, v, K);
    bk_gpu_line(em, "#pragma unroll");
    if (bk_gpu_dot_tsrc(em, in->opnd[1]) >= 0)
        bk_gpu_line(em, "for (int j = 0; j < %d; j++) b[j] = BLK_SLD(blk_B[(blk_wc%d + j * 16 + blk_fr) * %lld + k + blk_fk]);",
                    g->nt, v, K);
    else
        bk_gpu_line(em, "for (int j = 0; j < %d; j++) b[j] = BLK_SLD(blk_B[(k + blk_fk) * %lld + blk_wc%d + j * 16 + blk_fr]);",
                    g->nt, N, v);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->mt);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int j = 0; j < %d; j++) {", g->nt);
    bk_gpu_line(em, "        float *c = &var%d[(i * %d + j) * 4];", v, g->nt);
    bk_gpu_line(em, "        blk_float4 cc = {c[0], c[1], c[2], c[3]};");
    bk_gpu_line(em, "        cc = blk_mfma_16x16x4_f32(a[i], b[j], cc);");
    bk_gpu_line(em, "        for (int e = 0; e < 4; e++) c[e] = cc[e];");
    bk_gpu_line(em, "    }");
    em->indent--;
    bk_gpu_line(em, "}");
}

/* HIP: one MFMA per fragment (AMD CDNA2 ISA). 16x16 fragments use
 * v_mfma_f32_16x16x16{f16,bf16_1k} and v_mfma_i32_16x16x16i8: lane l reads
 * A row l%16, k 4(l/16)..+3 and B column l%16, the same k (i8: the four
 * bytes packed into one 32-bit register, k%4 in byte k%4); 4 accumulators,
 * k step 16. 32x32 fragments (16-bit operands) use
 * v_mfma_f32_32x32x8{f16,bf16_1k}: A row l%32, k 4(l/32)..+3, B column
 * l%32; 16 accumulators, k step 8. */
static void dot_mfma(BkGpuEm *em, int id, int v, long long K, long long N)
{
    const BkGpuMma *g = &em->vmma[v];
    const IrInstr *in = &em->f->ins[id];
    int adt = em->f->ins[in->opnd[0]].type.dtype;
    bool h = adt == DT_F16, i8 = adt == DT_I8;
    const char *et = h ? "_Float16" : i8 ? "signed char" : "short";
    const char *vt = h ? "blk_half4" : i8 ? "int" : "blk_short4";
    const char *ft = i8 ? "int" : "float", *ct = i8 ? "blk_int" : "blk_float";
    const char *wn = h ? "f16" : i8 ? "i8" : "bf16";
    bool big = g->fm == 32;
    int fm = big ? 32 : 16, ks = big ? 8 : 16, ne = big ? 16 : 4;
    bk_gpu_line(em, "const %s *blk_Ae = (const %s *)blk_A, *blk_Be = (const %s *)blk_B;",
                et, et, et);
    bk_gpu_line(em, "const int blk_fr = blk_lane & %d, blk_fk = 4 * (blk_lane >> %d);",
                fm - 1, big ? 5 : 4);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int k = 0; k < %lld; k += %d) {", K, ks);
    em->indent++;
    /* element j of a fragment: a vector lane, or (i8) byte j of an int */
    const char *pa = i8 ? "    for (int j = 0; j < 4; j++) a[i] |= (int)((unsigned)(unsigned char)%s << (8 * j));"
                        : "    for (int j = 0; j < 4; j++) a[i][j] = %s;";
    const char *pb = i8 ? "    for (int j = 0; j < 4; j++) b[i] |= (int)((unsigned)(unsigned char)%s << (8 * j));"
                        : "    for (int j = 0; j < 4; j++) b[i][j] = %s;";
    char x[160];
    bk_gpu_line(em, "%s a[%d], b[%d];", vt, g->mt, g->nt);
    if (i8)
        bk_gpu_line(em, "for (int i = 0; i < %d; i++) a[i] = 0; for (int i = 0; i < %d; i++) b[i] = 0;",
                    g->mt, g->nt);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->mt);
    snprintf(x, sizeof x, "BLK_SLD(blk_Ae[(blk_wr%d + i * %d + blk_fr) * %lld + k + blk_fk + j])", v, fm, K);
    bk_gpu_line(em, pa, x);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->nt);
    if (bk_gpu_dot_tsrc(em, in->opnd[1]) >= 0) /* B = trans(T): T[n][k..k+3] */
        snprintf(x, sizeof x, "BLK_SLD(blk_Be[(blk_wc%d + i * %d + blk_fr) * %lld + k + blk_fk + j])", v, fm, K);
    else
        snprintf(x, sizeof x, "BLK_SLD(blk_Be[(k + blk_fk + j) * %lld + blk_wc%d + i * %d + blk_fr])", N, v, fm);
    bk_gpu_line(em, pb, x);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int i = 0; i < %d; i++)", g->mt);
    bk_gpu_line(em, "    #pragma unroll");
    bk_gpu_line(em, "    for (int j = 0; j < %d; j++) {", g->nt);
    bk_gpu_line(em, "        %s *c = &var%d[(i * %d + j) * %d];", ft, v, g->nt, ne);
    bk_gpu_line(em, "        %s%d cc;", ct, ne);
    bk_gpu_line(em, "        for (int e = 0; e < %d; e++) cc[e] = c[e];", ne);
    bk_gpu_line(em, "        cc = blk_mfma_%s_%s(a[i], b[j], cc);", big ? "32x32x8" : "16x16x16", wn);
    bk_gpu_line(em, "        for (int e = 0; e < %d; e++) c[e] = cc[e];", ne);
    bk_gpu_line(em, "    }");
    em->indent--;
    bk_gpu_line(em, "}");
}

/* The dot id accumulating into the registers of var (or pseudo-var) v. */
static void dot_regs(BkGpuEm *em, int id, int v)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrType *at = &f->ins[in->opnd[0]].type;
    long long K = at->shape[at->rank - 1], N = in->type.shape[in->type.rank - 1];
    const char *st = bk_gpu_stype(at->dtype);
    int t = bk_gpu_dot_tsrc(em, in->opnd[1]);
    char oa[160], ob[160];
    bool part = em->vmma[v].wb > 0;
    batch_off(em, id, v, 0, oa, sizeof oa);
    batch_off(em, id, v, 1, ob, sizeof ob);
    bk_gpu_line(em, "{ /* dot, layout mma: accumulates in place in var%d (registers); "
                "operands from shared memory%s%s */", v, t >= 0 ? ", b read transposed" : "",
                part ? "; part blk_b" : "");
    em->indent++;
    if (part) /* a part at a time: the rows of a and the matrix b of part blk_b */
        bk_gpu_line(em, "const %s *blk_A = v%d + %s0, *blk_B = v%d + %s0;", st, in->opnd[0], oa,
                    t >= 0 ? t : in->opnd[1], ob);
    else
        bk_gpu_line(em, "const %s *blk_A = v%d, *blk_B = v%d;", st, in->opnd[0],
                    t >= 0 ? t : in->opnd[1]);
    bk_gpu_line(em, "(void)blk_A; (void)blk_B;");
    bool cuda = em->dl->kind == BK_GPU_CUDA;
    bool f32 = f->ins[in->opnd[0]].type.dtype == DT_F32;
    if (em->wgd && em->wgd[id]) { /* sm_90a (gpu_wgmma.c): its operand layouts only */
        bk_gpu_wgmma_dot(em, id, v);
        if (em->areg && em->areg[id]) { /* a from registers: mma.sync off sm_90a */
            dsl_buf_printf(em->o, "#elif __CUDA_ARCH__ >= 800\n");
            dot_mma(em, id, v, K, N);
        }
        dsl_buf_printf(em->o, "#else\n");
        dot_fma(em, id, v, K, N);
        dsl_buf_printf(em->o, "#endif\n");
        em->indent--;
        bk_gpu_line(em, "}");
        return;
    }
    dsl_buf_printf(em->o, "%s\n", cuda ? "#if __CUDA_ARCH__ >= 800" : "#if BLK_HAVE_MFMA");
    if (em->fp_dot == id) /* gpu_fragpipe.c (f16 / bf16 on CUDA) */
        bk_gpu_fragpipe_dot(em, id, v);
    else if (cuda && f->ins[in->opnd[0]].type.dtype == DT_I8)
        dot_s8(em, id, v, K, N);
    else if (cuda)
        (f32 ? dot_tf32 : dot_mma)(em, id, v, K, N);
    else
        (f32 ? dot_mfma_f32 : dot_mfma)(em, id, v, K, N);
    dsl_buf_printf(em->o, "#else\n");
    dot_fma(em, id, v, K, N);
    if (em->fp_dot == id)
        bk_gpu_fragpipe_wait(em); /* the FMA form read the slot */
    dsl_buf_printf(em->o, "#endif\n");
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_mma_dot(BkGpuEm *em, int id, int v)
{
    dot_regs(em, id, v);
    bk_gpu_mma_op_done(em);
}

/* A dot whose value is not an MMA var's: its registers (the layout of
 * pseudo-var P) start from the accumulator operand, or 0; the dot
 * accumulates into them, then each lane writes its registers into the
 * value's shared tile (column pairs as one 8-byte store on CUDA). The
 * caller owes the barrier after it. */
/* Dot id computed a part at a time (gpu_layouts.c bk_gpu_pick_batch: a
 * batched dot, or one whose tile no grid of every warp covers): warp group
 * w of wb takes parts blk_b = w, w + wb, ... (M rows of a matrix of the
 * result each): per part its registers start from the accumulator's
 * elements (or 0), the dot of the part's rows of a and its matrix of b
 * accumulates into them, and the lanes write them into the part of the
 * value's shared tile (column pairs as 8-byte stores on CUDA). */
static void dot_value_parts(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    int P = BK_GPU_DOT_VAR(em, id);
    const BkGpuMma *g = &em->vmma[P];
    bool i32 = in->type.dtype == DT_I32; /* an i8 dot */
    char off[160], idx[256], rv[BK_GPU_EXPR];
    batch_off(em, id, P, 2, off, sizeof off);
    snprintf(idx, sizeof idx, "%sblk_row * %lld + blk_col", off,
             (long long)in->type.shape[in->type.rank - 1]);
    bk_gpu_line(em, "/* v%d = dot in registers (var%d), a part at a time: %d group%s of "
                "mma(%dx%d warps, %dx%d fragments of %dx%d) over %lld part%s of %lldx%lld, "
                "then convert mma -> shared */", id, P, g->wb, g->wb > 1 ? "s" : "", g->wm, g->wn,
                g->mt, g->nt, g->fm, g->fn, g->B, g->B > 1 ? "s" : "", g->M, g->N);
    bk_gpu_line(em, "for (int blk_b = blk_warp / %d; blk_b < %lld; blk_b += %d) {",
                g->wm * g->wn, g->B, g->wb);
    em->indent++;
    bk_gpu_mma_decl_regs(em, P, i32 ? "int" : "float");
    bk_gpu_mma_loop_open(em, P);
    if (in->opnd[2] >= 0) {
        bk_gpu_read(em, in->opnd[2], idx, rv, sizeof rv);
        bk_gpu_line(em, "var%d[blk_r] = %s;", P, rv);
    } else {
        bk_gpu_line(em, "var%d[blk_r] = 0;", P);
    }
    bk_gpu_mma_loop_close(em);
    dot_regs(em, id, P);
    if (em->dl->kind == BK_GPU_CUDA) { /* registers 2i, 2i + 1: columns c, c + 1 */
        char row[256], col[256], mt[64], nt[64], fi[64];
        bk_gpu_mma_split(em, g, "blk_r", mt, nt, fi, sizeof mt);
        bk_gpu_mma_rowcol(em, P, mt, nt, fi, row, sizeof row, col, sizeof col);
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_r = 0; blk_r < %d; blk_r += 2) {", bk_gpu_mma_nregs(g));
        em->indent++;
        bk_gpu_line(em, "const int blk_row = %s, blk_col = %s;", row, col);
        bk_gpu_line(em, "BLK_SST(*(unsigned long long *)&v%d[%s]) = (unsigned long long)%s(var%d[blk_r + 1]) << 32 | %s(var%d[blk_r]);",
                    id, idx, i32 ? "(unsigned)" : "__float_as_uint", P,
                    i32 ? "(unsigned)" : "__float_as_uint", P);
        bk_gpu_mma_loop_close(em);
    } else {
        bk_gpu_mma_loop_open(em, P);
        bk_gpu_line(em, "BLK_SST(v%d[%s]) = var%d[blk_r];", id, idx, P);
        bk_gpu_mma_loop_close(em);
    }
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_mma_dot_value(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    int P = BK_GPU_DOT_VAR(em, id);
    const BkGpuMma *g = &em->vmma[P];
    bool sh = em->lay[id] == BK_LAY_SHARED;
    bool i32 = in->type.dtype == DT_I32; /* an i8 dot */
    if (g->wb > 0) {
        dot_value_parts(em, id);
        return;
    }
    bk_gpu_line(em, "/* v%d = dot in registers (var%d): mma(%dx%d warps, %dx%d fragments of %dx%d)%s */",
                id, P, g->wm, g->wn, g->mt, g->nt, g->fm, g->fn,
                sh ? ", then convert mma -> shared" : "");
    bk_gpu_mma_decl_regs(em, P, i32 ? "int" : "float");
    bk_gpu_line(em, "{");
    em->indent++;
    bk_gpu_mma_loop_open(em, P);
    if (in->opnd[2] >= 0) {
        char idx[128], rv[BK_GPU_EXPR];
        snprintf(idx, sizeof idx, "blk_row * %lld + blk_col", g->N);
        bk_gpu_read(em, in->opnd[2], idx, rv, sizeof rv);
        bk_gpu_line(em, "var%d[blk_r] = %s;", P, rv);
    } else {
        bk_gpu_line(em, "var%d[blk_r] = 0;", P);
    }
    bk_gpu_mma_loop_close(em);
    dot_regs(em, id, P);
    if (sh && em->dl->kind == BK_GPU_CUDA) { /* registers 2i, 2i + 1: columns c, c + 1 */
        char row[256], col[256], mt[64], nt[64], fi[64];
        bk_gpu_mma_split(em, g, "blk_r", mt, nt, fi, sizeof mt);
        bk_gpu_mma_rowcol(em, P, mt, nt, fi, row, sizeof row, col, sizeof col);
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_r = 0; blk_r < %d; blk_r += 2) {", bk_gpu_mma_nregs(g));
        em->indent++;
        bk_gpu_line(em, "const int blk_row = %s, blk_col = %s;", row, col);
        if (i32)
            bk_gpu_line(em, "BLK_SST(*(unsigned long long *)&v%d[blk_row * %lld + blk_col]) = "
                        "(unsigned long long)(unsigned)var%d[blk_r + 1] << 32 | (unsigned)var%d[blk_r];",
                        id, g->N, P, P);
        else
            bk_gpu_line(em, "BLK_SST(*(unsigned long long *)&v%d[blk_row * %lld + blk_col]) = "
                        "(unsigned long long)__float_as_uint(var%d[blk_r + 1]) << 32 | __float_as_uint(var%d[blk_r]);",
                        id, g->N, P, P);
        bk_gpu_mma_loop_close(em);
    } else if (sh) {
        bk_gpu_mma_loop_open(em, P);
        bk_gpu_line(em, "BLK_SST(v%d[blk_row * %lld + blk_col]) = var%d[blk_r];", id, g->N, P);
        bk_gpu_mma_loop_close(em);
    }
    em->indent--;
    bk_gpu_line(em, "}");
}
