/* matvec.c — DOT of a matrix with a column vector, `dot(w: [M, K], x: [K])`
 * (LANGUAGE.md §7; the front end makes it [M, K] x [K, 1]): the decode
 * case, bound by reading w once. tile.c's GEMM micro-kernel would pad the
 * single column to a whole vector (16x the arithmetic) and copy x into a
 * padded panel; here each row of w is a contiguous dot product instead:
 * RB rows at a time, each with U vector accumulators of VW lanes along K
 * (loads of w straight from its tile or, read in place, from the tensor
 * with its row stride), a halving tree across the lanes at the end, then
 * the K % (U*VW) tail in order. w may be f16 / bf16 (widened in registers,
 * no converted copy of the tile) or f32 / f64 like the result.
 *
 * Summation order: per row, lane j of accumulator u sums k = j + u*VW
 * (mod U*VW), then the tree, then the tail — not the order of tile.c's
 * micro-kernel (which sums k in order per element); the results differ
 * from it by rounding only.
 *
 * The skinny DOT [M, K] x [K, N] with M <= 4 rows (M = 1: `dot(x: [K],
 * w: [K, N])`, attention's p V in a decode step; M = 2..16: a few tokens;
 * more than 4 with AVX-512's 32 registers, more than 12 in two passes) is
 * bound by reading w = B once
 * too; tile.c would pack B into panels (a copy as large as the read) and
 * pad A to 8 rows. Here B is read in place, row by row, into M x NV
 * vector accumulators (16 or 24 registers in all) that sum k in order
 * from the accumulator: the micro-kernel's order, so the results equal
 * tile.c's to the bit.
 *
 * The skinny DOT on a transposed B, [M <= 8, K] x trans(S [N, K]) (a
 * linear layer's x W^T with W as PyTorch stores it; fuse.c's trans_b
 * leaves the PERMUTE uncopied): out[m, n] = A[m, :] . S[n, :], dot
 * products along S's rows like the matvec's, RB rows of S and up to 4
 * rows of A at a time (16 vector accumulators), the lanes summed by the
 * row tree. With 9 to 16 rows of A (f32, AVX-512) the same DOT turned
 * around (bcast_t): a vector of A's column times broadcasts of S's
 * elements, S read once, row by row, into an L1 buffer. Entry:
 * cpu_gen_matvec. */
#include "cpu.h"

/* RB rows at a time: 8 rows keep 8 streams of w in flight (4 rows read
 * 0.80x of the read bandwidth at 4096 x 4096 on an AMD EPYC, 8 rows
 * 0.96x), and each line of w loaded is matched by a prefetch into L2 of
 * the line RB rows down, the next row block's, so that a row's stream is
 * in flight before its first load (short rows gave the hardware
 * prefetchers too little to train on: the decode step's K = 768 matvecs
 * read at ~0.7x of the C loop, which walks one row after the other;
 * benchmarks/README.md, round 15). Not on Intel hosts, where the
 * prefetches cost 7-9% (round 22; CpuIsa.mvpf: BLKC_CPU_NOMVPF=1 off
 * everywhere, BLKC_CPU_MVPF=1 on everywhere). U = 2 vectors
 * per row where there are 32 vector registers (AVX-512), else 1 (AVX2's
 * 16). */
enum { MV_RB = 8, MV_UMAX = 2 };
enum { SK_M = 4 };     /* rows of a skinny DOT (16 vector registers) */
enum { SK_MMAX = 12 }; /* ... with 32 vector registers, in one pass */
enum { SK_M2 = 16 };   /* ... in passes of 8 rows */
enum { SK_NV = 16 };   /* vector accumulators of a skinny DOT of <= SK_M rows */
enum { SK_ACC = 24 };  /* ... of more rows (of 32 registers) */
enum { SK_PFD = 32 };  /* B's rows prefetched this far ahead (cols) */
enum { SKT_M = 8 };   /* rows of a skinny DOT on trans(B) */
enum { SKT_MC = 4 };  /* ... taken this many at a time */
enum { SKT_ACC = 16 }; /* ... with at most this many vector accumulators */

static int mv_u(const CpuGen *g)
{
    return g->vecw_bytes >= 64 ? 2 : 1;
}

static LLVMValueRef splatv(CpuGen *g, LLVMValueRef x, int vw)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), (unsigned)vw);
    LLVMValueRef v = LLVMBuildInsertElement(g->b, LLVMGetUndef(vt), x,
                                            cpu_i32c(g, 0), "");
    LLVMValueRef mask = LLVMConstNull(LLVMVectorType(g->i32, (unsigned)vw));
    return LLVMBuildShuffleVector(g->b, v, LLVMGetUndef(vt), mask, "");
}

/* sum of the lanes of v by halving */
static LLVMValueRef hsum(CpuGen *g, LLVMValueRef v, int w)
{
    LLVMBuilderRef b = g->b;
    while (w > 1) {
        int h = w / 2;
        LLVMValueRef lo[32], hi[32];
        for (int i = 0; i < h; i++) {
            lo[i] = cpu_i32c(g, i);
            hi[i] = cpu_i32c(g, h + i);
        }
        LLVMValueRef a = LLVMBuildShuffleVector(b, v, LLVMGetUndef(LLVMTypeOf(v)),
                                                LLVMConstVector(lo, (unsigned)h), "");
        LLVMValueRef c = LLVMBuildShuffleVector(b, v, LLVMGetUndef(LLVMTypeOf(v)),
                                                LLVMConstVector(hi, (unsigned)h), "");
        v = LLVMBuildFAdd(b, a, c, "");
        w = h;
    }
    return LLVMBuildExtractElement(b, v, cpu_i32c(g, 0), "");
}

/* s[r] = the sum of the lanes of v[r] for r < n (a power of two, at most
 * w): pairs of vectors are interleaved and added, each level halving the
 * partial sums per row and doubling the rows per vector (lane l holds row
 * l % c), until one vector holds them all; halving it then leaves row r in
 * lane r. 2(n - 1) two-source shuffles and log2(w / n) halvings for the n
 * rows, against log2(w) shuffles, extracts and inserts per row for hsum
 * (AVX-512 does each shuffle in one vpermt2ps). */
static void hsum_rows(CpuGen *g, const LLVMValueRef *v, int n, int w, LLVMValueRef *s)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef cur[64] = {0};
    for (int i = 0; i < n; i++)
        cur[i] = v[i];
    for (int c = 1, cnt = n; cnt > 1; c *= 2, cnt /= 2)
        for (int i = 0; i < cnt / 2; i++) {
            LLVMValueRef ma[64], mb[64];
            for (int l = 0; l < w; l++) {
                int rr = l % (2 * c), p = l / (2 * c);
                int a = (rr < c ? 0 : w) + p * c + rr % c;
                ma[l] = cpu_i32c(g, a);
                mb[l] = cpu_i32c(g, a + w / 2);
            }
            LLVMValueRef x = cur[2 * i], y = cur[2 * i + 1];
            cur[i] = LLVMBuildFAdd(b,
                LLVMBuildShuffleVector(b, x, y, LLVMConstVector(ma, (unsigned)w), ""),
                LLVMBuildShuffleVector(b, x, y, LLVMConstVector(mb, (unsigned)w), ""), "");
        }
    LLVMValueRef z = cur[0];
    for (int lanes = w; lanes > n; lanes /= 2) {
        LLVMValueRef lo[32], hi[32];
        for (int i = 0; i < lanes / 2; i++) {
            lo[i] = cpu_i32c(g, i);
            hi[i] = cpu_i32c(g, lanes / 2 + i);
        }
        LLVMValueRef u = LLVMGetUndef(LLVMTypeOf(z));
        z = LLVMBuildFAdd(b, LLVMBuildShuffleVector(b, z, u, LLVMConstVector(lo, (unsigned)lanes / 2), ""),
                          LLVMBuildShuffleVector(b, z, u, LLVMConstVector(hi, (unsigned)lanes / 2), ""), "");
    }
    for (int r = 0; r < n; r++)
        s[r] = LLVMBuildExtractElement(b, z, cpu_i32c(g, r), "");
}

/* s[i] = the sum of the lanes of v[i] for i < n: in groups of a power of
 * two <= w by hsum_rows (BLKC_CPU_NOROWTREE=1: each alone by hsum) */
static void hsum_all(CpuGen *g, const LLVMValueRef *v, int n, int w, LLVMValueRef *s)
{
    for (int i = 0; i < n;) {
        int c = 1;
        while (c * 2 <= n - i && c * 2 <= w && c * 2 <= 64 && !cpu_switch(CPU_SW_NOROWTREE))
            c *= 2;
        if (c > 1)
            hsum_rows(g, v + i, c, w, s + i);
        else
            s[i] = hsum(g, v[i], w);
        i += c;
    }
}

/* a + E-typed A element (dtype adt) at p times x[k] */
static LLVMValueRef fma1(CpuGen *g, LLVMValueRef p, int adt, LLVMValueRef x, LLVMValueRef k,
                         LLVMTypeRef E, LLVMValueRef a)
{
    LLVMValueRef w = cpu_widen(g, cpu_mload(g, p, adt), adt);
    if (LLVMTypeOf(w) != E)
        w = LLVMBuildFPExt(g->b, w, E, "");
    LLVMValueRef xe = LLVMBuildLoad2(g->b, E, cpu_gep(g, E, x, k), "");
    LLVMValueRef ops[3] = {w, xe, a};
    return cpu_intrin(g, "llvm.fma", &E, 1, ops, 3);
}

/* dst[m0 + r] (+)= A[m0 + r, :kv] . x for r < RB; kv: the columns of A
 * in its tensor (g->vkn: a last K step read in place past the end, whose
 * other columns are 0), NULL: all K */
static void rows(CpuGen *g, LLVMValueRef A, int adt, LLVMValueRef lda,
                 LLVMValueRef x, LLVMValueRef dst, LLVMValueRef acc_ptr,
                 LLVMValueRef m0, int RB, int64_t K, LLVMValueRef kv, int VW, LLVMTypeRef E)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW);
    LLVMTypeRef at = cpu_mtype(g, adt);
    int U = mv_u(g);
    int64_t step = (int64_t)U * VW, nv = K / step;
    LLVMValueRef nvv = kv ? LLVMBuildUDiv(b, kv, cpu_i64(g, step), "") : cpu_i64(g, nv);
    LLVMValueRef slot[MV_RB][MV_UMAX], arow[MV_RB], prow[MV_RB];
    bool pf = g->mvpf;
    for (int r = 0; r < RB; r++) {
        arow[r] = cpu_opaque_ptr(g, cpu_gep(g, at, A, LLVMBuildMul(b, LLVMBuildAdd(b, m0,
                                 cpu_i64(g, r), ""), lda, "")));
        if (pf) { /* MV_RB rows down: the next row block's (non-faulting) */
            LLVMValueRef off = LLVMBuildMul(b, cpu_i64(g, MV_RB), lda, "");
            prow[r] = cpu_opaque_ptr(g, LLVMBuildGEP2(b, at, arow[r], &off, 1, ""));
        }
        for (int u = 0; u < U; u++) {
            slot[r][u] = cpu_alloca(g, vt, 1);
            LLVMBuildStore(b, LLVMConstNull(vt), slot[r][u]);
        }
    }
    if (nv > 0) {
        CpuLoop lk;
        cpu_loop_open(g, &lk, cpu_i64(g, 0), nvv);
        LLVMValueRef k0 = LLVMBuildMul(b, lk.iv, cpu_i64(g, step), "");
        for (int u = 0; u < U; u++) {
            LLVMValueRef ku = LLVMBuildAdd(b, k0, cpu_i64(g, (int64_t)u * VW), "");
            LLVMValueRef q = LLVMBuildBitCast(b, cpu_gep(g, E, x, ku), LLVMPointerType(vt, 0), "");
            LLVMValueRef xw = LLVMBuildLoad2(b, vt, q, "");
            LLVMSetAlignment(xw, (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), E));
            for (int r = 0; r < RB; r++) {
                if (pf && (u * VW * dsl_dtype_bytes(adt)) % 64 == 0) /* a line, into L2 */
                    cpu_prefetch(g, LLVMBuildGEP2(b, at, prow[r], &ku, 1, ""), 2);
                LLVMValueRef av = cpu_load_wide(g, cpu_gep(g, at, arow[r], ku), adt, E, VW);
                LLVMValueRef ops[3] = {av, xw, LLVMBuildLoad2(b, vt, slot[r][u], "")};
                LLVMBuildStore(b, cpu_intrin(g, "llvm.fma", &vt, 1, ops, 3), slot[r][u]);
            }
        }
        cpu_loop_close(g, &lk);
    }
    LLVMValueRef s[MV_RB] = {0}, vs[MV_RB] = {0};
    for (int r = 0; r < RB; r++) {
        vs[r] = LLVMBuildLoad2(b, vt, slot[r][0], "");
        for (int u = 1; u < U; u++)
            vs[r] = LLVMBuildFAdd(b, vs[r], LLVMBuildLoad2(b, vt, slot[r][u], ""), "");
    }
    hsum_all(g, vs, RB, VW, s);
    if (kv) { /* the tail of the columns in bounds, in order */
        LLVMValueRef ss[MV_RB];
        for (int r = 0; r < RB; r++) {
            ss[r] = cpu_alloca(g, E, 1);
            LLVMBuildStore(b, s[r], ss[r]);
        }
        CpuLoop lt;
        cpu_loop_open(g, &lt, LLVMBuildMul(b, nvv, cpu_i64(g, step), ""), kv);
        for (int r = 0; r < RB; r++)
            LLVMBuildStore(b, fma1(g, cpu_gep(g, at, arow[r], lt.iv), adt, x, lt.iv, E,
                                   LLVMBuildLoad2(b, E, ss[r], "")), ss[r]);
        cpu_loop_close(g, &lt);
        for (int r = 0; r < RB; r++)
            s[r] = LLVMBuildLoad2(b, E, ss[r], "");
    }
    for (int64_t k = nv * step; k < K && !kv; k++) /* the tail, constant count */
        for (int r = 0; r < RB; r++)
            s[r] = fma1(g, cpu_gep(g, at, arow[r], cpu_i64(g, k)), adt, x, cpu_i64(g, k), E,
                        s[r]);
    for (int r = 0; r < RB; r++) {
        LLVMValueRef m = LLVMBuildAdd(b, m0, cpu_i64(g, r), "");
        LLVMValueRef v = s[r];
        if (acc_ptr)
            v = LLVMBuildFAdd(b, LLVMBuildLoad2(b, E, cpu_gep(g, E, acc_ptr, m), ""), v, "");
        LLVMBuildStore(b, v, cpu_gep(g, E, dst, m));
    }
}

/* the rows x cols operand v (a skinny DOT's A) readable as elements of
 * type rdt with row stride *ld: the tile itself, or a converted copy */
static LLVMValueRef rows_e(CpuGen *g, int v, int64_t rows, int64_t cols, int rdt,
                           LLVMValueRef *ld)
{
    int dt = g->f->ins[v].type.dtype;
    *ld = g->vld[v] ? g->vld[v] : cpu_i64(g, cols);
    if (dt == rdt)
        return g->val[v];
    LLVMValueRef buf = cpu_alloca(g, cpu_stype(g, rdt), rows * cols);
    cpu_convert_block(g, buf, cols, g->val[v], dt, *ld, rows, cols, rdt);
    *ld = cpu_i64(g, cols);
    return buf;
}

/* rows_e's operand always copied, its rows an odd number of cache lines
 * apart. Read in place, its rows lie a tensor row apart, often a large
 * power of two: all of them and B's fall in one set of L1 (12 lines in its
 * 12 ways at 8 rows) and evict each other's lines (skinny_t at M = 8, K =
 * N = 4096: 4.8 / 3.7 ms copied against 8.7 / 8.6 in place, alternated) */
static LLVMValueRef rows_odd(CpuGen *g, int v, int64_t rows, int64_t cols, int rdt,
                             LLVMValueRef *ld)
{
    int eb = dsl_dtype_bytes(rdt);
    int64_t lines = (cols * eb + 63) / 64;
    if (lines % 2 == 0)
        lines++;
    int64_t n = lines * 64 / eb;
    LLVMValueRef buf = cpu_alloca(g, cpu_stype(g, rdt), rows * n);
    LLVMSetAlignment(buf, 64);
    cpu_convert_block(g, buf, n, g->val[v], g->f->ins[v].type.dtype,
                      g->vld[v] ? g->vld[v] : cpu_i64(g, cols), rows, cols, rdt);
    *ld = cpu_i64(g, n);
    return buf;
}

/* dst[m, j0 + v*VW ..] (+)= A[m, :] B[:, j0 + v*VW ..] for m < M, v < NV:
 * M*NV vector accumulators, each summing k in order from the accumulator
 * (the GEMM micro-kernel's order: the same results to the bit); pfd > 0:
 * B's rows prefetched that far ahead */
static void cols(CpuGen *g, LLVMValueRef A, LLVMValueRef lda, LLVMValueRef B, int bdt,
                 LLVMValueRef ldb, LLVMValueRef dst, LLVMValueRef acc_ptr, int64_t N,
                 LLVMValueRef j0, int M, int NV, int64_t K, int VW, LLVMTypeRef E, int pfd)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW);
    LLVMTypeRef bt = cpu_mtype(g, bdt);
    unsigned eal = (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), E);
    LLVMValueRef slot[SK_MMAX][SK_ACC], out[SK_MMAX][SK_ACC];
    for (int m = 0; m < M; m++)
        for (int v = 0; v < NV; v++) {
            LLVMValueRef c = LLVMBuildAdd(b, j0, cpu_i64(g, m * N + (int64_t)v * VW), "");
            out[m][v] = LLVMBuildBitCast(b, cpu_gep(g, E, dst, c), LLVMPointerType(vt, 0), "");
            slot[m][v] = cpu_alloca(g, vt, 1);
            LLVMValueRef init = LLVMConstNull(vt);
            if (acc_ptr) {
                LLVMValueRef q = LLVMBuildBitCast(b, cpu_gep(g, E, acc_ptr, c),
                                                  LLVMPointerType(vt, 0), "");
                init = LLVMBuildLoad2(b, vt, q, "");
                LLVMSetAlignment(init, eal);
            }
            LLVMBuildStore(b, init, slot[m][v]);
        }
    CpuLoop lk;
    cpu_loop_open(g, &lk, cpu_i64(g, 0), cpu_i64(g, K));
    LLVMValueRef brow = cpu_gep(g, bt, B, LLVMBuildAdd(b, LLVMBuildMul(b, lk.iv, ldb, ""), j0, ""));
    if (pfd > 0) {
        /* row k + pfd of this column chunk (past K: of the next chunk,
         * which starts over at row 0), its lines into L2 */
        LLVMValueRef r = LLVMBuildAdd(b, lk.iv, cpu_i64(g, pfd), "");
        LLVMValueRef wrap = LLVMBuildICmp(b, LLVMIntSGE, r, cpu_i64(g, K), "");
        r = LLVMBuildSelect(b, wrap, LLVMBuildSub(b, r, cpu_i64(g, K), ""), r, "");
        LLVMValueRef jc = LLVMBuildSelect(b, wrap, LLVMBuildAdd(b, j0,
                                          cpu_i64(g, (int64_t)NV * VW), ""), j0, "");
        LLVMValueRef prow = cpu_gep(g, bt, B, LLVMBuildAdd(b, LLVMBuildMul(b, r, ldb, ""), jc, ""));
        int vb = VW * dsl_dtype_bytes(bdt), step = vb >= 64 ? 1 : 64 / vb;
        for (int v = 0; v < NV; v += step)
            cpu_prefetch(g, cpu_gep(g, bt, prow, cpu_i64(g, (int64_t)v * VW)), 2);
    }
    LLVMValueRef bv[SK_ACC];
    for (int v = 0; v < NV; v++)
        bv[v] = cpu_load_wide(g, cpu_gep(g, bt, brow, cpu_i64(g, (int64_t)v * VW)), bdt, E, VW);
    for (int m = 0; m < M; m++) {
        LLVMValueRef ak = LLVMBuildAdd(b, LLVMBuildMul(b, cpu_i64(g, m), lda, ""), lk.iv, "");
        LLVMValueRef as = splatv(g, LLVMBuildLoad2(b, E, cpu_gep(g, E, A, ak), ""), VW);
        for (int v = 0; v < NV; v++) {
            LLVMValueRef ops[3] = {as, bv[v], LLVMBuildLoad2(b, vt, slot[m][v], "")};
            LLVMBuildStore(b, cpu_intrin(g, "llvm.fma", &vt, 1, ops, 3), slot[m][v]);
        }
    }
    cpu_loop_close(g, &lk);
    for (int m = 0; m < M; m++)
        for (int v = 0; v < NV; v++)
            LLVMSetAlignment(LLVMBuildStore(b, LLVMBuildLoad2(b, vt, slot[m][v], ""), out[m][v]),
                             eal);
}

/* the last N % VW columns: one scalar accumulator per element, k in order */
static void col_tail(CpuGen *g, LLVMValueRef A, LLVMValueRef lda, LLVMValueRef B, int bdt,
                     LLVMValueRef ldb, LLVMValueRef dst, LLVMValueRef acc_ptr, int64_t N,
                     int64_t j, int M, int64_t K, LLVMTypeRef E)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef bt = cpu_mtype(g, bdt);
    for (int m = 0; m < M; m++) {
        LLVMValueRef c = cpu_i64(g, m * N + j);
        LLVMValueRef slot = cpu_alloca(g, E, 1);
        LLVMBuildStore(b, acc_ptr ? LLVMBuildLoad2(b, E, cpu_gep(g, E, acc_ptr, c), "")
                                  : LLVMConstNull(E), slot);
        CpuLoop lk;
        cpu_loop_open(g, &lk, cpu_i64(g, 0), cpu_i64(g, K));
        LLVMValueRef bk = cpu_widen(g, cpu_mload(g, cpu_gep(g, bt, B,
                              LLVMBuildAdd(b, LLVMBuildMul(b, lk.iv, ldb, ""), cpu_i64(g, j), "")),
                              bdt), bdt);
        if (LLVMTypeOf(bk) != E)
            bk = LLVMBuildFPExt(b, bk, E, "");
        LLVMValueRef ak = LLVMBuildAdd(b, LLVMBuildMul(b, cpu_i64(g, m), lda, ""), lk.iv, "");
        LLVMValueRef ops[3] = {LLVMBuildLoad2(b, E, cpu_gep(g, E, A, ak), ""), bk,
                               LLVMBuildLoad2(b, E, slot, "")};
        LLVMBuildStore(b, cpu_intrin(g, "llvm.fma", &E, 1, ops, 3), slot);
        cpu_loop_close(g, &lk);
        LLVMBuildStore(b, LLVMBuildLoad2(b, E, slot, ""), cpu_gep(g, E, dst, c));
    }
}

/* a float result, and w (the big operand) of its dtype or a 16-bit float
 * widened to f32 */
static bool dtypes_ok(int wdt, int rdt)
{
    if (rdt != DT_F32 && rdt != DT_F64)
        return false;
    return wdt == rdt || (rdt == DT_F32 && (wdt == DT_BF16 || wdt == DT_F16));
}

/* bcast_t's DOTs: 9 .. 16 rows of f32 on AVX-512 */
static bool bcast_applies(const CpuGen *g, int64_t M, int rdt)
{
    return M > SKT_M && rdt == DT_F32 && g->vecw_bytes >= 64 && M <= g->vecw_bytes / 4 &&
           !cpu_switch(CPU_SW_NOBCAST);
}

bool cpu_matvec_applies(CpuGen *g, const IrInstr *in)
{
    const IrType *ta = &g->f->ins[in->opnd[0]].type, *rt = &in->type;
    const IrType *tb = &g->f->ins[in->opnd[1]].type;
    if (rt->rank != 2)
        return false;
    if (rt->shape[1] == 1)
        return dtypes_ok(ta->dtype, rt->dtype);
    if (g->tdot && g->tdot[in->opnd[1]]) /* B = trans(S): rows of S */
        return (rt->shape[0] <= SKT_M || bcast_applies(g, rt->shape[0], rt->dtype)) &&
               dtypes_ok(tb->dtype, rt->dtype) && dsl_is_float(ta->dtype);
    int VW = g->vecw_bytes / dsl_dtype_bytes(rt->dtype);
    int skm = g->vecw_bytes >= 64 && !cpu_switch(CPU_SW_NOSK16) ? SK_M2 : SK_M;
    return rt->shape[0] <= skm && rt->shape[1] >= VW && dtypes_ok(tb->dtype, rt->dtype) &&
           dsl_is_float(ta->dtype);
}

/* cols for A's M rows in passes of at most mch (A, dst and acc_ptr
 * offset to each pass's first row) */
static void cols_passes(CpuGen *g, LLVMValueRef A, LLVMValueRef lda, LLVMValueRef B, int bdt,
                        LLVMValueRef ldb, LLVMValueRef dst, LLVMValueRef acc_ptr, int64_t N,
                        LLVMValueRef j0, int M, int mch, int NV, int64_t K, int VW,
                        LLVMTypeRef E, int pfd)
{
    for (int m0 = 0; m0 < M; m0 += mch) {
        LLVMValueRef Ac = cpu_gep(g, E, A, LLVMBuildMul(g->b, cpu_i64(g, m0), lda, ""));
        LLVMValueRef dc = cpu_gep(g, E, dst, cpu_i64(g, m0 * N));
        LLVMValueRef ac = acc_ptr ? cpu_gep(g, E, acc_ptr, cpu_i64(g, m0 * N)) : NULL;
        cols(g, Ac, lda, B, bdt, ldb, dc, ac, N, j0, M - m0 < mch ? M - m0 : mch, NV, K, VW,
             E, pfd);
    }
}

/* the skinny DOT [M, K] x [K, N], M <= SK_M (SK_MMAX with 32 vector
 * registers): B read once, in place, NV vector columns at a time (a chunk
 * walks all K rows of B, then the next) */
static int skinny(CpuGen *g, const IrInstr *in, LLVMValueRef dst, LLVMValueRef acc_ptr)
{
    const IrType *tb = &g->f->ins[in->opnd[1]].type, *rt = &in->type;
    int rdt = rt->dtype, M = (int)rt->shape[0];
    int64_t N = rt->shape[1], K = tb->shape[0];
    LLVMTypeRef E = cpu_stype(g, rdt);
    int VW = g->vecw_bytes / dsl_dtype_bytes(rdt);
    LLVMValueRef lda, ldb = g->vld[in->opnd[1]] ? g->vld[in->opnd[1]] : cpu_i64(g, N);
    LLVMValueRef A, B = g->val[in->opnd[1]];
    int va = in->opnd[0], adt = g->f->ins[va].type.dtype;
    /* more rows: A's a fixed distance apart (one pointer, immediate
     * offsets for the broadcasts) */
    if (M > SK_M && (g->vld[va] || adt != rdt))
        A = rows_odd(g, va, M, K, rdt, &lda);
    else
        A = rows_e(g, va, M, K, rdt, &lda);
    /* 13 .. 16 rows: two passes of at most 8 over each chunk of columns,
     * the second reading its lines from L1. One pass with one vector per
     * row and 16 accumulators lost to the packed GEMM (M = 16: 1.05x its
     * time); two passes 1.27-1.36x faster than it at M = 16, 1.47-1.64x
     * at M = 13 (W [K, N] 4096 x 4096, one thread, `--ab`; the prefetch
     * in the second pass too: 0.97x) */
    int mch = M > SK_MMAX ? 8 : M;
    int64_t nvec = N / VW;
    int NV = SK_NV / M < nvec ? SK_NV / M : (int)nvec;
    if (M > SK_M) {
        /* more vectors per row of B, fewer chunks: each visit of a row
         * (a tensor row apart from the last) reads more lines. Linear
         * layer with W [K, N], 4096 x 4096, one thread, 24 accumulators
         * against 16: M = 5 0.85-0.88x the time, M = 12 0.68-0.73x
         * (`--ab`, benchmarks/README.md round 28); NV divides the vectors
         * (M = 8 at BN = 64 as 3 + 1 vectors lost 1.13x) */
        NV = SK_ACC / mch < nvec ? SK_ACC / mch : (int)nvec;
        while (NV > 1 && nvec % NV)
            NV--;
    }
    /* B read in place, a chunk of at most 4 lines per row: each row is a
     * page of its own at a 4 KB+ stride, where the hardware prefetchers
     * see no stream, so rows SK_PFD ahead go to L2 (M = 4 / 5 / 8 / 12, W
     * [K, N] 4096 x 4096, one thread: off 1.84-2.69x the time; 8 rows
     * ahead into L1 1.36-1.41x, 16 into L2 1.15-1.22x). Not for fewer
     * rows: longer chunks the hardware follows (M = 1 / 2 with it:
     * 0.90-1.06), and a short one costs more than it saves (the decode
     * step's attention p V, M = 1 on 4 lines of V's rows: 230 -> 280 us) */
    int pfd = g->vld[in->opnd[1]] && M >= SK_M &&
              (int64_t)NV * VW * dsl_dtype_bytes(tb->dtype) <= 256 &&
              !cpu_switch(CPU_SW_NOSKPF) ? SK_PFD : 0;
    int64_t nch = nvec / NV, rest = nvec % NV;
    if (nch > 0) {
        CpuLoop lj;
        cpu_loop_open(g, &lj, cpu_i64(g, 0), cpu_i64(g, nch));
        cols_passes(g, A, lda, B, tb->dtype, ldb, dst, acc_ptr, N,
                    LLVMBuildMul(g->b, lj.iv, cpu_i64(g, (int64_t)NV * VW), ""), M, mch, NV, K,
                    VW, E, pfd);
        cpu_loop_close(g, &lj);
    }
    if (rest)
        cols_passes(g, A, lda, B, tb->dtype, ldb, dst, acc_ptr, N, cpu_i64(g, nch * NV * VW), M,
                    mch, (int)rest, K, VW, E, pfd);
    for (int64_t j = nvec * VW; j < N; j++) /* scalar accumulators: all rows at once */
        col_tail(g, A, lda, B, tb->dtype, ldb, dst, acc_ptr, N, j, M, K, E);
    return g->failed ? -1 : 0;
}

/* A [M, K] x trans(S), S [N, K] (row stride lds), M <= SKT_M: out[m, n]
 * = A[m, :] . S[n, :], dot products along S's rows as the matvec's,
 * for RB rows of S and MC rows of A at a time (RB * MC vector
 * accumulators), the row block outer so that its rows are reused from L1
 * by every chunk of A's rows (one row of A: 16 rows of S at a time, 16
 * streams of S in flight) */
static void trows(CpuGen *g, LLVMValueRef S, int sdt, LLVMValueRef lds, LLVMValueRef A,
                  LLVMValueRef lda, LLVMValueRef dst, LLVMValueRef acc_ptr, int64_t N,
                  LLVMValueRef n0, int RB, LLVMValueRef m0, int MC, int64_t K, int VW,
                  LLVMTypeRef E, bool pf)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW);
    LLVMTypeRef st = cpu_mtype(g, sdt);
    unsigned eal = (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), E);
    int64_t nv = K / VW;
    LLVMValueRef srow[SKT_ACC], arow[SKT_ACC], slot[SKT_ACC];
    for (int r = 0; r < RB; r++)
        srow[r] = cpu_gep(g, st, S, LLVMBuildMul(b, LLVMBuildAdd(b, n0, cpu_i64(g, r), ""),
                                                 lds, ""));
    for (int c = 0; c < MC; c++)
        arow[c] = cpu_gep(g, E, A, LLVMBuildMul(b, LLVMBuildAdd(b, m0, cpu_i64(g, c), ""),
                                                lda, ""));
    for (int i = 0; i < RB * MC; i++) {
        slot[i] = cpu_alloca(g, vt, 1);
        LLVMBuildStore(b, LLVMConstNull(vt), slot[i]);
    }
    if (nv > 0) {
        CpuLoop lk;
        cpu_loop_open(g, &lk, cpu_i64(g, 0), cpu_i64(g, nv));
        LLVMValueRef k0 = LLVMBuildMul(b, lk.iv, cpu_i64(g, VW), "");
        LLVMValueRef xv[SKT_ACC];
        for (int c = 0; c < MC; c++) {
            LLVMValueRef q = LLVMBuildBitCast(b, cpu_gep(g, E, arow[c], k0),
                                              LLVMPointerType(vt, 0), "");
            xv[c] = LLVMBuildLoad2(b, vt, q, "");
            LLVMSetAlignment(xv[c], eal);
        }
        /* (pf) the next row block's lines at this k, into L1 */
        LLVMValueRef nk = pf ? LLVMBuildAdd(b, k0, LLVMBuildMul(b, cpu_i64(g, RB), lds, ""), "")
                             : NULL;
        for (int r = 0; r < RB; r++) {
            if (pf)
                cpu_prefetch(g, cpu_gep(g, st, srow[r], nk), 3);
            LLVMValueRef wv = cpu_load_wide(g, cpu_gep(g, st, srow[r], k0), sdt, E, VW);
            for (int c = 0; c < MC; c++) {
                LLVMValueRef ops[3] = {wv, xv[c], LLVMBuildLoad2(b, vt, slot[r * MC + c], "")};
                LLVMBuildStore(b, cpu_intrin(g, "llvm.fma", &vt, 1, ops, 3), slot[r * MC + c]);
            }
        }
        cpu_loop_close(g, &lk);
    }
    LLVMValueRef vs[SKT_ACC] = {0}, s[SKT_ACC] = {0};
    for (int i = 0; i < RB * MC; i++)
        vs[i] = LLVMBuildLoad2(b, vt, slot[i], "");
    hsum_all(g, vs, RB * MC, VW, s);
    for (int64_t k = nv * VW; k < K; k++) /* the tail, in order */
        for (int r = 0; r < RB; r++) {
            LLVMValueRef w = cpu_widen(g, cpu_mload(g, cpu_gep(g, st, srow[r], cpu_i64(g, k)), sdt),
                                       sdt);
            if (LLVMTypeOf(w) != E)
                w = LLVMBuildFPExt(b, w, E, "");
            for (int c = 0; c < MC; c++) {
                LLVMValueRef x = LLVMBuildLoad2(b, E, cpu_gep(g, E, arow[c], cpu_i64(g, k)), "");
                LLVMValueRef ops[3] = {w, x, s[r * MC + c]};
                s[r * MC + c] = cpu_intrin(g, "llvm.fma", &E, 1, ops, 3);
            }
        }
    for (int r = 0; r < RB; r++)
        for (int c = 0; c < MC; c++) {
            LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, m0, cpu_i64(g, c), ""),
                                                          cpu_i64(g, N), ""),
                                          LLVMBuildAdd(b, n0, cpu_i64(g, r), ""), "");
            LLVMValueRef v = s[r * MC + c];
            if (acc_ptr)
                v = LLVMBuildFAdd(b, LLVMBuildLoad2(b, E, cpu_gep(g, E, acc_ptr, o), ""), v, "");
            LLVMBuildStore(b, v, cpu_gep(g, E, dst, o));
        }
}

/* the DOT A [M, K] x trans(S [N, K]), M <= SKT_M: S read once, row by row
 * (in place when its LOAD is), no panel; A's rows in chunks of MC */
static int skinny_t(CpuGen *g, const IrInstr *in, LLVMValueRef dst, LLVMValueRef acc_ptr)
{
    LLVMBuilderRef b = g->b;
    const IrType *tb = &g->f->ins[in->opnd[1]].type, *rt = &in->type;
    int rdt = rt->dtype, M = (int)rt->shape[0];
    int64_t N = rt->shape[1], K = tb->shape[0];
    LLVMTypeRef E = cpu_stype(g, rdt);
    int VW = g->vecw_bytes / dsl_dtype_bytes(rdt);
    if (VW < 1)
        VW = 1;
    LLVMValueRef lda, lds = g->vld[in->opnd[1]], S = g->val[in->opnd[1]];
    int sdt = tb->dtype;
    /* accumulators: 16 of AVX-512's 32 registers, 8 of AVX2's 16 */
    int acc = g->vecw_bytes >= 64 ? 16 : 8;
    int MC = M < SKT_MC ? M : SKT_MC;
    if (acc == 8 && MC > 2)
        MC = 2;
    /* S widened (bf16 / f16 to f32): every chunk of A's rows would widen
     * it again, so all of them at once (up to 8 rows x 2 of S): linear
     * layer with W [4096, 4096] bf16, one thread, M = 5 / 6 / 8, the
     * chunks 1.09-1.43x the time over block shapes (`--ab=BLKC_CPU_NOSKTONE=1`,
     * benchmarks/README.md round 27); f32 S loses this way (round 26) */
    if (sdt != rdt && acc == 16 && !cpu_switch(CPU_SW_NOSKTONE))
        MC = M;
    LLVMValueRef A;
    int va = in->opnd[0], adt = g->f->ins[va].type.dtype;
    if (M > MC && (g->vld[va] || adt != rdt)) /* several chunks of A's rows */
        A = rows_odd(g, va, M, K, rdt, &lda);
    else
        A = rows_e(g, va, M, K, rdt, &lda);
    int RB = acc / MC;
    int64_t nb = N / RB;
    /* Several chunks of A's rows: the first reads the row block from
     * memory, the others from L1 with no load of memory in flight, and the
     * next block's rows lie elsewhere (a tensor row apart), where the
     * hardware prefetchers do not look. So the first chunk prefetches the
     * next block's line at each k into L1: linear layer at M = 6 / 8, W
     * [4096, 4096] f32, one thread, B / A 0.76-0.89 over block shapes
     * (`blkc run --bench=21 --ab=BLKC_CPU_NOSKTPF=1`, benchmarks/README.md
     * round 26). Not for one chunk (M = 1: 1.13, one pass from memory) nor
     * a converted B (bf16 at M = 8: 1.03, its chunks widen it again) */
    bool pf = M > MC && sdt == rdt && !cpu_switch(CPU_SW_NOSKTPF);
    if (nb > 0) {
        CpuLoop ln;
        cpu_loop_open(g, &ln, cpu_i64(g, 0), cpu_i64(g, nb));
        LLVMValueRef n0 = LLVMBuildMul(b, ln.iv, cpu_i64(g, RB), "");
        for (int m = 0; m < M; m += MC)
            trows(g, S, sdt, lds, A, lda, dst, acc_ptr, N, n0, RB, cpu_i64(g, m),
                  M - m < MC ? M - m : MC, K, VW, E, m == 0 && pf);
        cpu_loop_close(g, &ln);
    }
    for (int m = 0; m < M && N % RB; m += MC)
        trows(g, S, sdt, lds, A, lda, dst, acc_ptr, N, cpu_i64(g, nb * RB), (int)(N % RB),
              cpu_i64(g, m), M - m < MC ? M - m : MC, K, VW, E, false);
    return g->failed ? -1 : 0;
}

/* The DOT A [M, K] x trans(S [N, K]) with SKT_M < M <= VW (9 to 16 rows,
 * f32 on AVX-512): out^T = S A^T, the GEMM turned around so that the
 * vector runs along A's rows. A's columns are packed once per DOT into
 * At [K][VW] (VW x VW blocks transposed in registers, lanes past M zero);
 * then for each block of BC_NR rows of S, chunks of BC_KC columns of them
 * are copied (bf16 / f16 widened) into a buffer in L1, and each k takes
 * one vector of At and BC_NR broadcasts of S's elements (an FMA's memory
 * operand) into BC_NR vector accumulators, out[:, n] for the block's n.
 * Every element of S is one FMA of VW lanes; tile.c's packed path
 * transposes every element of S into its panels (64 shuffles per 256) for
 * two row blocks of 8 rows of A. The accumulators start from the
 * accumulator tile (transposed) and sum k in order: tile.c's results to
 * the bit. While a chunk's FMAs run, the next chunk's lines (after the
 * last, the next row block's first) are prefetched into L1 among them: its
 * rows lie a tensor row apart. Linear layer, W [4096, 4096], one thread,
 * M = 16: 1.16-1.27x faster than the packed path with f32 W, 1.27-1.36x
 * with bf16, 1.44x at M = 9 / 12; the prefetch 1.18-1.28x of it; reading
 * S in place (16 row pointers) instead of the copy lost 1.17x
 * (benchmarks/README.md round 28). */
enum { BC_NR = 16, BC_KC = 64, BC_U = 4 };

/* At[k * VW + m] = A[m, k] for m < M, 0 for M <= m < VW */
static void bc_pack_at(CpuGen *g, LLVMValueRef At, LLVMValueRef A, LLVMValueRef lda, int M,
                       int64_t K, int VW, LLVMTypeRef E)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW), pt = LLVMPointerType(vt, 0);
    int64_t nb = K / VW;
    LLVMValueRef v[64];
    if (nb > 0) {
        CpuLoop lk;
        cpu_loop_open(g, &lk, cpu_i64(g, 0), cpu_i64(g, nb));
        LLVMValueRef k0 = LLVMBuildMul(b, lk.iv, cpu_i64(g, VW), "");
        for (int m = 0; m < VW; m++) {
            if (m >= M) {
                v[m] = LLVMConstNull(vt);
                continue;
            }
            LLVMValueRef p = cpu_gep(g, E, A, LLVMBuildAdd(b, LLVMBuildMul(b, cpu_i64(g, m),
                                                                            lda, ""), k0, ""));
            v[m] = LLVMBuildLoad2(b, vt, LLVMBuildBitCast(b, p, pt, ""), "");
            LLVMSetAlignment(v[m], 4);
        }
        cpu_transpose_sq(g, v, VW);
        for (int j = 0; j < VW; j++) {
            LLVMValueRef p = cpu_gep(g, E, At, LLVMBuildMul(b, LLVMBuildAdd(b, k0,
                                     cpu_i64(g, j), ""), cpu_i64(g, VW), ""));
            LLVMSetAlignment(LLVMBuildStore(b, v[j], LLVMBuildBitCast(b, p, pt, "")), 64);
        }
        cpu_loop_close(g, &lk);
    }
    for (int64_t k = nb * VW; k < K; k++) {
        LLVMValueRef x = LLVMConstNull(vt);
        for (int m = 0; m < M; m++) {
            LLVMValueRef p = cpu_gep(g, E, A, LLVMBuildAdd(b, LLVMBuildMul(b, cpu_i64(g, m),
                                                                            lda, ""),
                                                            cpu_i64(g, k), ""));
            x = LLVMBuildInsertElement(b, x, LLVMBuildLoad2(b, E, p, ""), cpu_i32c(g, m), "");
        }
        LLVMValueRef p = cpu_gep(g, E, At, cpu_i64(g, k * VW));
        LLVMSetAlignment(LLVMBuildStore(b, x, LLVMBuildBitCast(b, p, pt, "")), 64);
    }
}

/* Sw[r * BC_KC + e] = S[n0 + r, k0 + e] (widened to E) for r < nr, e <
 * BC_KC, in whole vectors (the K tail: cpu_convert_block) */
static void bc_copy(CpuGen *g, LLVMValueRef Sw, LLVMValueRef S, int sdt, LLVMValueRef lds,
                    LLVMValueRef n0, int nr, LLVMValueRef k0, int VW, LLVMTypeRef E)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef st = cpu_mtype(g, sdt), vt = LLVMVectorType(E, (unsigned)VW);
    for (int r = 0; r < nr; r++) {
        LLVMValueRef row = cpu_gep(g, st, S, LLVMBuildAdd(b, LLVMBuildMul(b,
                                   LLVMBuildAdd(b, n0, cpu_i64(g, r), ""), lds, ""), k0, ""));
        for (int64_t e = 0; e < BC_KC; e += VW) {
            LLVMValueRef v = cpu_load_wide(g, cpu_gep(g, st, row, cpu_i64(g, e)), sdt, E, VW);
            LLVMValueRef p = cpu_gep(g, E, Sw, cpu_i64(g, r * BC_KC + e));
            LLVMSetAlignment(LLVMBuildStore(b, v, LLVMBuildBitCast(b, p,
                                            LLVMPointerType(vt, 0), "")), 64);
        }
    }
}

/* slot[r] += At[k0 + k] * S[n0 + r, k0 + k] for r < nr, k < L from Sw,
 * U k's per iteration; next (or NULL): the next chunk's lines, lpr per
 * row (byte offsets row * ldsb + line * 64 from it), prefetched into L1
 * a few per iteration */
static void bc_fma(CpuGen *g, LLVMValueRef *slot, LLVMValueRef At, LLVMValueRef k0,
                   LLVMValueRef Sw, int nr, int64_t L, int U, int VW, LLVMTypeRef E,
                   LLVMValueRef next, LLVMValueRef ldsb, int lpr)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW), pt = LLVMPointerType(vt, 0);
    int64_t its = L / U;
    int per = next ? (int)((nr * lpr + its - 1) / its) : 0;
    CpuLoop li;
    cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, its));
    for (int p = 0; p < per; p++) {
        LLVMValueRef q = LLVMBuildAdd(b, LLVMBuildMul(b, li.iv, cpu_i64(g, per), ""),
                                      cpu_i64(g, p), "");
        LLVMValueRef off = LLVMBuildAdd(b,
            LLVMBuildMul(b, LLVMBuildUDiv(b, q, cpu_i64(g, lpr), ""), ldsb, ""),
            LLVMBuildMul(b, LLVMBuildURem(b, q, cpu_i64(g, lpr), ""), cpu_i64(g, 64), ""), "");
        cpu_prefetch(g, cpu_gep(g, g->i8, next, off), 3);
    }
    for (int u = 0; u < U; u++) {
        LLVMValueRef k = LLVMBuildAdd(b, LLVMBuildMul(b, li.iv, cpu_i64(g, U), ""),
                                      cpu_i64(g, u), "");
        LLVMValueRef pa = cpu_gep(g, E, At, LLVMBuildMul(b, LLVMBuildAdd(b, k0, k, ""),
                                                         cpu_i64(g, VW), ""));
        LLVMValueRef a = LLVMBuildLoad2(b, vt, LLVMBuildBitCast(b, pa, pt, ""), "");
        LLVMSetAlignment(a, 64);
        for (int r = 0; r < nr; r++) {
            LLVMValueRef s = LLVMBuildLoad2(b, E, cpu_gep(g, E, Sw, LLVMBuildAdd(b, k,
                                            cpu_i64(g, (int64_t)r * BC_KC), "")), "");
            LLVMValueRef ops[3] = {splatv(g, s, VW), a, LLVMBuildLoad2(b, vt, slot[r], "")};
            LLVMBuildStore(b, cpu_intrin(g, "llvm.fma", &vt, 1, ops, 3), slot[r]);
        }
    }
    cpu_loop_close(g, &li);
}

/* C[m, n0 + j] for m < M, j < nr (row stride N) as vectors over m:
 * slot[j] = column j (load) or the reverse (store), VW columns at a time
 * transposed in registers; lanes past M are 0 on load, dropped on store */
static void bc_columns(CpuGen *g, LLVMValueRef *slot, LLVMValueRef C, int64_t N,
                       LLVMValueRef n0, int nr, int M, int VW, LLVMTypeRef E, bool store)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW), pt = LLVMPointerType(vt, 0);
    unsigned eal = (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), E);
    LLVMValueRef v[64];
    for (int c0 = 0; c0 < nr; c0 += VW) {
        int cn = nr - c0 < VW ? nr - c0 : VW;
        LLVMValueRef p[64];
        for (int m = 0; m < M; m++)
            p[m] = cpu_gep(g, E, C, LLVMBuildAdd(b, n0, cpu_i64(g, m * N + c0), ""));
        if (store) {
            for (int j = 0; j < VW; j++)
                v[j] = j < cn ? LLVMBuildLoad2(b, vt, slot[c0 + j], "") : LLVMConstNull(vt);
            cpu_transpose_sq(g, v, VW);
            for (int m = 0; m < M; m++) {
                if (cn == VW) {
                    LLVMSetAlignment(LLVMBuildStore(b, v[m], LLVMBuildBitCast(b, p[m], pt, "")),
                                     eal);
                    continue;
                }
                for (int j = 0; j < cn; j++)
                    LLVMBuildStore(b, LLVMBuildExtractElement(b, v[m], cpu_i32c(g, j), ""),
                                   cpu_gep(g, E, p[m], cpu_i64(g, j)));
            }
            continue;
        }
        for (int m = 0; m < VW; m++) {
            v[m] = LLVMConstNull(vt);
            if (m >= M)
                continue;
            if (cn == VW) {
                v[m] = LLVMBuildLoad2(b, vt, LLVMBuildBitCast(b, p[m], pt, ""), "");
                LLVMSetAlignment(v[m], eal);
                continue;
            }
            for (int j = 0; j < cn; j++)
                v[m] = LLVMBuildInsertElement(b, v[m], LLVMBuildLoad2(b, E,
                           cpu_gep(g, E, p[m], cpu_i64(g, j)), ""), cpu_i32c(g, j), "");
        }
        cpu_transpose_sq(g, v, VW);
        for (int j = 0; j < cn; j++)
            LLVMBuildStore(b, v[j], slot[c0 + j]);
    }
}

/* rows n0 .. n0 + nr - 1 of S: out[:, n0 ..] = acc + A S[n0 .., :]^T */
static void bc_rows(CpuGen *g, LLVMValueRef At, LLVMValueRef Sw, LLVMValueRef S, int sdt,
                    LLVMValueRef lds, LLVMValueRef dst, LLVMValueRef acc_ptr, int M, int64_t N,
                    int64_t K, LLVMValueRef n0, int nr, int VW, LLVMTypeRef E, bool pf)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(E, (unsigned)VW);
    LLVMValueRef slot[BC_NR];
    for (int r = 0; r < nr; r++) {
        slot[r] = cpu_alloca(g, vt, 1);
        LLVMBuildStore(b, LLVMConstNull(vt), slot[r]);
    }
    if (acc_ptr)
        bc_columns(g, slot, acc_ptr, N, n0, nr, M, VW, E, false);
    int64_t nch = K / BC_KC, kt = K % BC_KC;
    int sb = dsl_dtype_bytes(sdt);
    if (nch > 0) {
        CpuLoop lc;
        cpu_loop_open(g, &lc, cpu_i64(g, 0), cpu_i64(g, nch));
        LLVMValueRef k0 = LLVMBuildMul(b, lc.iv, cpu_i64(g, BC_KC), "");
        bc_copy(g, Sw, S, sdt, lds, n0, nr, k0, VW, E);
        LLVMValueRef next = NULL, ldsb = NULL;
        if (pf) {
            /* this block's next chunk; after the last, the next block's first */
            LLVMTypeRef st = cpu_mtype(g, sdt);
            LLVMValueRef last = LLVMBuildICmp(b, LLVMIntEQ, lc.iv, cpu_i64(g, nch - 1), "");
            LLVMValueRef row = LLVMBuildSelect(b, last, LLVMBuildAdd(b, n0, cpu_i64(g, nr), ""),
                                               n0, "");
            LLVMValueRef col = LLVMBuildSelect(b, last, cpu_i64(g, 0),
                                               LLVMBuildAdd(b, k0, cpu_i64(g, BC_KC), ""), "");
            next = cpu_gep(g, st, S, LLVMBuildAdd(b, LLVMBuildMul(b, row, lds, ""), col, ""));
            ldsb = LLVMBuildMul(b, lds, cpu_i64(g, sb), "");
        }
        bc_fma(g, slot, At, k0, Sw, nr, BC_KC, BC_U, VW, E, next, ldsb, BC_KC * sb / 64);
        cpu_loop_close(g, &lc);
    }
    if (kt > 0) {
        LLVMValueRef s0 = cpu_gep(g, cpu_mtype(g, sdt), S,
                                  LLVMBuildAdd(b, LLVMBuildMul(b, n0, lds, ""),
                                               cpu_i64(g, nch * BC_KC), ""));
        cpu_convert_block(g, Sw, BC_KC, s0, sdt, lds, nr, kt, DT_F32);
        bc_fma(g, slot, At, cpu_i64(g, nch * BC_KC), Sw, nr, kt, 1, VW, E, NULL, NULL, 0);
    }
    bc_columns(g, slot, dst, N, n0, nr, M, VW, E, true);
}

/* the DOT turned around (above): A's columns packed, then S in row
 * blocks of BC_NR and a remainder */
static int bcast_t(CpuGen *g, const IrInstr *in, LLVMValueRef dst, LLVMValueRef acc_ptr)
{
    LLVMBuilderRef b = g->b;
    const IrType *tb = &g->f->ins[in->opnd[1]].type, *rt = &in->type;
    int rdt = rt->dtype, M = (int)rt->shape[0];
    int64_t N = rt->shape[1], K = tb->shape[0];
    LLVMTypeRef E = cpu_stype(g, rdt);
    int VW = g->vecw_bytes / dsl_dtype_bytes(rdt);
    LLVMValueRef lda, A = rows_e(g, in->opnd[0], M, K, rdt, &lda);
    LLVMValueRef At = cpu_alloca(g, E, K * VW), Sw = cpu_alloca(g, E, BC_NR * BC_KC);
    LLVMSetAlignment(At, 64);
    LLVMSetAlignment(Sw, 64);
    bc_pack_at(g, At, A, lda, M, K, VW, E);
    LLVMValueRef S = g->val[in->opnd[1]], lds = g->vld[in->opnd[1]];
    int sdt = tb->dtype;
    int64_t nb = N / BC_NR;
    bool pf = !cpu_switch(CPU_SW_NOBCPF);
    if (nb > 0) {
        CpuLoop ln;
        cpu_loop_open(g, &ln, cpu_i64(g, 0), cpu_i64(g, nb));
        bc_rows(g, At, Sw, S, sdt, lds, dst, acc_ptr, M, N, K,
                LLVMBuildMul(b, ln.iv, cpu_i64(g, BC_NR), ""), BC_NR, VW, E, pf);
        cpu_loop_close(g, &ln);
    }
    if (N % BC_NR)
        bc_rows(g, At, Sw, S, sdt, lds, dst, acc_ptr, M, N, K, cpu_i64(g, nb * BC_NR),
                (int)(N % BC_NR), VW, E, false);
    return g->failed ? -1 : 0;
}

int cpu_gen_matvec(CpuGen *g, const IrInstr *in, LLVMValueRef dst, LLVMValueRef acc_ptr)
{
    LLVMBuilderRef b = g->b;
    const IrType *ta = &g->f->ins[in->opnd[0]].type, *rt = &in->type;
    if (rt->shape[1] != 1 && g->tdot && g->tdot[in->opnd[1]])
        return rt->shape[0] > SKT_M ? bcast_t(g, in, dst, acc_ptr)
                                    : skinny_t(g, in, dst, acc_ptr);
    if (rt->shape[1] != 1)
        return skinny(g, in, dst, acc_ptr);
    int rdt = rt->dtype, adt = ta->dtype;
    int64_t M = rt->shape[0], K = ta->shape[1];
    LLVMTypeRef E = cpu_stype(g, rdt);
    int VW = g->vecw_bytes / dsl_dtype_bytes(rdt);
    if (VW < 1)
        VW = 1;
    LLVMValueRef A = g->val[in->opnd[0]], x = g->val[in->opnd[1]];
    LLVMValueRef lda = g->vld[in->opnd[0]] ? g->vld[in->opnd[0]] : cpu_i64(g, K);
    LLVMValueRef kv = g->vkn[in->opnd[0]];
    const IrType *tb = &g->f->ins[in->opnd[1]].type;
    /* x = trans(S) with S [1, K]: S's row, contiguous */
    bool xt = g->tdot && g->tdot[in->opnd[1]];
    if (tb->dtype != rdt || (g->vld[in->opnd[1]] && !xt)) { /* x contiguous, type E: */
        LLVMValueRef buf = cpu_alloca(g, E, K);  /* K rows of one element */
        LLVMValueRef ldb = g->vld[in->opnd[1]] && !xt ? g->vld[in->opnd[1]] : cpu_i64(g, 1);
        cpu_convert_block(g, buf, 1, x, tb->dtype, ldb, K, 1, rdt);
        x = buf;
    }
    int64_t nb = M / MV_RB;
    if (nb > 0) {
        CpuLoop lm;
        cpu_loop_open(g, &lm, cpu_i64(g, 0), cpu_i64(g, nb));
        rows(g, A, adt, lda, x, dst, acc_ptr,
             LLVMBuildMul(b, lm.iv, cpu_i64(g, MV_RB), ""), MV_RB, K, kv, VW, E);
        cpu_loop_close(g, &lm);
    }
    if (M % MV_RB)
        rows(g, A, adt, lda, x, dst, acc_ptr, cpu_i64(g, nb * MV_RB), (int)(M % MV_RB),
             K, kv, VW, E);
    return g->failed ? -1 : 0;
}
