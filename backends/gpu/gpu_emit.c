/* gpu_emit.c — Core IR -> CUDA C / HIP C (the part both dialects share).
 *
 * The scheme favours obvious correctness: scalars are registers computed
 * redundantly by every thread (control flow is uniform per block); a tile
 * lives in dynamic shared memory, row-major, unless the layout pass
 * (gpu_layouts.c) keeps it in registers (gpu_mma.c); a shared tile op is
 * one block-strided loop `for (e = tid; e < N; e += NT)` followed by
 * __syncthreads() where gpu_sync.c cannot leave it out. Shared memory is reused between tiles whose live ranges
 * do not overlap (first fit over linear positions, where a use inside a loop
 * keeps a value defined outside it alive to the loop's end). RESHAPE and,
 * when no store to the var intervenes, VGET of a tile var alias storage.
 * Reductions, scans, dot and atomics are in gpu_ops.c; print in
 * gpu_print.c; expressions and type helpers in gpu_expr.c. */
#include "gpu_emit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------ emission */

void bk_gpu_sync(BkGpuEm *em)
{
    if (em->wgmma) /* generic-proxy writes before wgmma's async-proxy reads */
        bk_gpu_line(em, "blk_fence_proxy_async();");
    bk_gpu_bar(em);
    em->nacc = 0;
    em->seg_gread = em->seg_gwrite = em->pending = false;
}

static void sync(BkGpuEm *em)
{
    bk_gpu_sync(em);
}

/* Declare tile value id's storage pointer. */
void bk_gpu_decl_tile(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    const char *t = bk_gpu_stype(in->type.dtype);
    char ty[128];
    ir_type_str(&in->type, ty, sizeof ty);
    int sr = bk_gpu_slice_root(em, id);
    if (bk_gpu_mrow_root(em, id) >= 0) {
        bk_gpu_mrow_decl(em, id);
    } else if (em->lay[id] == BK_LAY_BLOCKED) {
        bk_gpu_line(em, "alignas(16) %s v%d[%d]; /* %s, blocked: registers, runs of %d */",
                    t, id, bk_gpu_blk_regs(em, &in->type), ty, bk_gpu_blk_w(em, &in->type));
    } else if (sr == id) {
        const IrType *p = &em->f->ins[em->spar[id]].type;
        int R = 1;
        bk_gpu_slice_geom(em, p, &R);
        if (in->op == IR_VGET && em->var_of[id] >= 0)
            bk_gpu_line(em, "/* v%d: %s, slice: var%d's registers in place */", id, ty, in->param);
        else
            bk_gpu_line(em, "%s v%d[%d]; /* %s, slice: register k holds row (tid + k * %d) / %d */",
                        t, id, bk_gpu_blk_regs(em, p) / bk_gpu_blk_w(em, p), ty, em->nt, R);
        if (em->scvt[id])
            bk_gpu_line(em, "%s *v%d_s = (%s *)(blk_smem + %lld); /* its shared copy */", t, id,
                        t, em->off[id]);
    } else if (sr >= 0) {
        if (em->scvt[sr])
            bk_gpu_line(em, "%s *v%d = v%d_s; /* %s, reshape of slice v%d's copy */", t, id,
                        sr, ty, sr);
        else
            bk_gpu_line(em, "/* v%d: %s, reshape of slice v%d (its registers) */", id, ty, sr);
    }
    else if (em->var_of[id] >= 0)
        bk_gpu_line(em, "%s *v%d = var%d; /* %s, reads the var in place */", t,
                    id, em->var_of[id], ty);
    else if (em->alias[id] != id)
        bk_gpu_line(em, "%s *v%d = v%d; /* %s, same storage */", t, id,
                    em->f->ins[id].opnd[0], ty);
    else
        bk_gpu_line(em, "%s *v%d = (%s *)(blk_smem + %lld); /* %s */", t, id, t,
                    em->off[id], ty);
}

int bk_gpu_minblocks(void)
{
    const char *e = getenv("BLKC_GPU_MINBLOCKS");
    int n = e ? atoi(e) : 0;
    return n >= 1 && n <= 8 ? n : 0;
}

bool bk_gpu_nofma(void)
{
    const char *e = getenv("BLKC_GPU_NOFMA");
    return e && *e && strcmp(e, "0");
}

void bk_gpu_for_e(BkGpuEm *em, int W, long long N, const char *note)
{
    long long step = (long long)em->nt * W, trips = (N + step - 1) / step;
    if (trips > 16) { /* a long walk: a plain loop */
        bk_gpu_line(em, "for (int e = blk_tid * %d; e < %lld; e += %lld) {%s", W,
                    N, step, note);
        return;
    }
    /* a fixed trip count the compiler unrolls: no loop control, and the
     * addresses of every trip computed once outside the kernel's loops */
    char cond[64] = "";
    if (N % step)
        snprintf(cond, sizeof cond, " && e < %lld", N);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_i = 0, e = blk_tid * %d; blk_i < %lld%s; blk_i++, e += %lld) {%s",
                W, trips, cond, step, note);
}

void bk_gpu_loop_open(BkGpuEm *em, const IrType *t)
{
    bk_gpu_for_e(em, 1, (long long)ir_numel(t), "");
    em->indent++;
}

int bk_gpu_blk_regs(const BkGpuEm *em, const IrType *t)
{
    long long W = bk_gpu_blk_w(em, t), runs = (ir_numel(t) + W - 1) / W;
    return (int)((runs + em->nt - 1) / em->nt * W);
}

void bk_gpu_blk_open(BkGpuEm *em, const IrType *t, bool vec)
{
    long long N = ir_numel(t);
    int W = bk_gpu_blk_w(em, t), K = bk_gpu_blk_regs(em, t) / W;
    bool tail = N % ((long long)em->nt * W) != 0;
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_k = 0; blk_k < %d; blk_k++) { /* blocked: runs of %d */", K, W);
    em->indent++;
    em->blk = 1;
    em->blk_t = t;
    if (vec) {
        bk_gpu_line(em, "const int e = (blk_tid + blk_k * %d) * %d;", em->nt, W);
    } else {
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) {", W);
        em->indent++;
        em->blk = 2;
        bk_gpu_line(em, "const int blk_q = blk_k * %d + blk_j;", W);
        bk_gpu_line(em, "const int e = (blk_tid + blk_k * %d) * %d + blk_j;", em->nt, W);
        bk_gpu_line(em, "(void)blk_q; (void)e;");
    }
    if (tail) { /* the last runs: only threads inside the tile */
        bk_gpu_line(em, "if (e >= %lld) continue;", N);
    }
}

/* The barrier after a tile op's loop is left to gpu_sync.c when the op was
 * checked (bk_gpu_barrier_before): the next op adds it if it must. A
 * blocked loop touches registers (and global memory) only. */
void bk_gpu_slice_open(BkGpuEm *em, int id)
{
    bk_gpu_slice_open_of(em, em->spar[id], ir_numel(&em->f->ins[id].type));
}

void bk_gpu_slice_reg(const BkGpuEm *em, int r, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[r];
    if (in->op == IR_VGET && em->var_of[r] >= 0)
        snprintf(buf, n, "var%d", in->param);
    else
        snprintf(buf, n, "v%d", r);
}

void bk_gpu_slice_open_of(BkGpuEm *em, int par, long long M)
{
    const IrType *p = &em->f->ins[par].type;
    int R = 1, K = bk_gpu_blk_regs(em, p) / bk_gpu_blk_w(em, p);
    bk_gpu_slice_geom(em, p, &R);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_k = 0; blk_k < %d; blk_k++) { /* slice: its registers */", K);
    em->indent++;
    em->blk = 1;
    em->sl_par = p;
    bk_gpu_line(em, "const int e = (blk_tid + blk_k * %d) / %d;", em->nt, R);
    if ((long long)K * em->nt > M * R)
        bk_gpu_line(em, "if (e >= %lld) continue;", M);
}

void bk_gpu_loop_close(BkGpuEm *em)
{
    for (; em->blk > 1; em->blk--) {
        em->indent--;
        bk_gpu_line(em, "}");
    }
    em->blk = 0;
    em->blk_t = NULL;
    em->sl_par = NULL;
    em->indent--;
    bk_gpu_line(em, "}");
    if (em->nosyncelim || !em->seg_ok)
        sync(em);
    else if (!em->seg_none)
        em->pending = true;
}

/* Assign the compute-typed expression `x` to value id (tile: at [e]). */
static void assign(BkGpuEm *em, int id, const char *x)
{
    const IrInstr *in = &em->f->ins[id];
    char s[BK_GPU_EXPR];
    bk_gpu_to_s(s, sizeof s, in->type.dtype, x);
    if (in->type.rank > 0 && em->lay[id] == BK_LAY_BLOCKED)
        bk_gpu_line(em, "v%d[blk_q] = %s;", id, s);
    else if (in->type.rank > 0 && em->lay[id] == BK_LAY_SLICE)
        bk_gpu_line(em, "v%d[blk_k] = %s;", id, s);
    else if (in->type.rank > 0) {
        char se[256]; /* bounded: blk_swz / blk_wgs of "e" and five numbers */
        bk_gpu_swz_idx(em, id, "e", se, sizeof se); /* a dot operand: swizzled */
        bk_gpu_line(em, "BLK_SST(v%d[%s]) = %s;", id, se, s);
    } else
        bk_gpu_line(em, "const %s v%d = %s;", bk_gpu_stype(in->type.dtype), id, s);
}


static void emit_elem(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    char o[3][BK_GPU_EXPR / 4], x[BK_GPU_EXPR];
    int k = ir_op_nopnd[in->op];
    /* bool & | ^ give int in C++; the assignment converts back */
    if (in->type.rank > 0 && em->virt[id]) {
        bk_gpu_line(em, "/* v%d = %s: fused into its use */", id, ir_op_names[in->op]);
        return;
    }
    if (BK_GPU_RV(em, id)) { /* per register of an MMA layout */
        bk_gpu_mma_value(em, id);
        return;
    }
    if (em->lay[id] == BK_LAY_MROW) { /* per row register of an MMA layout */
        bk_gpu_mrow_elem(em, id);
        return;
    }
    if (in->type.rank > 0) {
        bk_gpu_decl_tile(em, id);
        if (em->lay[id] == BK_LAY_SHARED && em->inblk[id])
            bk_gpu_line(em, "/* layout conversion: blocked -> shared (v%d, written in the "
                        "blocked loop of its operands) */", id);
        if (em->lay[id] == BK_LAY_BLOCKED || em->inblk[id])
            bk_gpu_blk_open(em, &in->type, false);
        else if (em->lay[id] == BK_LAY_SLICE)
            bk_gpu_slice_open(em, id);
        else
            bk_gpu_loop_open(em, &in->type);
    }
    for (int i = 0; i < 3; i++)
        o[i][0] = 0;
    for (int i = 0; i < k && i < 3; i++)
        bk_gpu_read(em, in->opnd[i], "e", o[i], sizeof o[i]);
    bk_gpu_elem_expr(em, id, o[0], o[1], o[2], x, sizeof x);
    if (in->type.rank == 0) {
        assign(em, id, x);
        return;
    }
    assign(em, id, x);
    bk_gpu_loop_close(em);
    if (em->lay[id] == BK_LAY_SLICE && em->scvt[id])
        bk_gpu_slice_to_shared(em, id);
}

static void emit_const(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    char lit[128];
    bk_gpu_literal(lit, sizeof lit, in->type.dtype, in);
    if (in->type.rank == 0) {
        assign(em, id, lit);
        return;
    }
    if (em->virt[id]) {
        bk_gpu_line(em, "/* v%d = splat %s, computed where it is read */", id, lit);
        return;
    }
    bk_gpu_decl_tile(em, id);
    bk_gpu_loop_open(em, &in->type);
    assign(em, id, lit);
    bk_gpu_loop_close(em);
}

/* BCAST, PERMUTE, and RESHAPE that cannot alias (scalar on either side). */
static void emit_shape(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    const IrInstr *a = &em->f->ins[in->opnd[0]];
    /* idx bounded: IR_MAX_RANK terms "((e / S) % N) * S" of at most 60 */
    char idx[600], c[128], rd[BK_GPU_EXPR];
    if (in->type.rank == 0) { /* reshape of a one-element tile to a scalar */
        snprintf(c, sizeof c, "BLK_SLD(v%d[0])", in->opnd[0]);
        bk_gpu_line(em, "const %s v%d = %s;", bk_gpu_stype(in->type.dtype), id, c);
        return;
    }
    if (in->op == IR_RESHAPE && em->alias[id] != id) {
        bk_gpu_decl_tile(em, id);
        return;
    }
    if (em->virt[id]) {
        bk_gpu_line(em, "/* v%d = %s of v%d, %s */", id,
                    in->op == IR_PERMUTE ? "transpose"
                    : in->op == IR_RESHAPE ? "reshape" : "broadcast", in->opnd[0],
                    in->op == IR_PERMUTE ? "read by the dots in place (ldmatrix without .trans)"
                                         : "computed where it is read");
        return;
    }
    if (a->type.rank == 0) {
        snprintf(idx, sizeof idx, "0");
    } else if (in->op == IR_RESHAPE) {
        snprintf(idx, sizeof idx, "e");
    } else {
        /* operand element offset from the result coordinates */
        long long ost[IR_MAX_RANK], s = 1;
        for (int j = a->type.rank - 1; j >= 0; j--) {
            ost[j] = s;
            s *= a->type.shape[j];
        }
        size_t k = 0;
        idx[0] = 0;
        for (int i = 0; i < in->type.rank; i++) {
            int j;
            if (in->op == IR_PERMUTE)
                j = in->perm[i];
            else {
                j = i - (in->type.rank - a->type.rank);
                if (j < 0 || a->type.shape[j] == 1)
                    continue;
            }
            bk_gpu_coord(c, sizeof c, &in->type, i, "e");
            k += (size_t)snprintf(idx + k, sizeof idx - k, "%s%s * %lld",
                                  k ? " + " : "", c, ost[j]);
            if (k >= sizeof idx) {
                bk_gpu_fail(em, "internal: a shape index of kernel %s is too long", em->f->name);
                break;
            }
        }
        if (!k)
            snprintf(idx, sizeof idx, "0");
    }
    bk_gpu_decl_tile(em, id);
    bk_gpu_loop_open(em, &in->type);
    bk_gpu_raw(em, in->opnd[0], idx, rd, sizeof rd);
    bk_gpu_line(em, "BLK_SST(v%d[e]) = %s;", id, rd);
    bk_gpu_loop_close(em);
}

static void emit_arange(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    if (em->virt[id]) {
        bk_gpu_line(em, "/* v%d = arange from %lld, computed where it is read */", id,
                    (long long)in->ival);
        return;
    }
    bk_gpu_decl_tile(em, id);
    if (em->lay[id] == BK_LAY_BLOCKED) {
        bk_gpu_blk_open(em, &in->type, false);
        bk_gpu_line(em, "v%d[blk_q] = %lld + e;", id, (long long)in->ival);
    } else {
        bk_gpu_loop_open(em, &in->type);
        bk_gpu_line(em, "BLK_SST(v%d[e]) = %lld + e;", id, (long long)in->ival);
    }
    bk_gpu_loop_close(em);
}

/* ------------------------------------------------------------ memory
 * Loads, stores and views are in gpu_mem.c. */

bool bk_gpu_uses_ranks(const IrFunc *f)
{
    for (int i = 0; i < f->nins; i++) {
        const IrInstr *in = &f->ins[i];
        if (in->dead)
            continue;
        if (in->op == IR_RANK || in->op == IR_WORLD || in->op == IR_NOTIFY ||
            in->op == IR_WAIT || in->op == IR_ASSERT)
            return true;
        if ((in->op == IR_LOAD || in->op == IR_STORE || in->op == IR_ATOMIC) &&
            in->opnd[3] >= 0)
            return true;
    }
    return false;
}

static bool has_wait(const IrFunc *f)
{
    for (int i = 0; i < f->nins; i++)
        if (!f->ins[i].dead && f->ins[i].op == IR_WAIT)
            return true;
    return false;
}

/* ------------------------------------------------------------ signals
 * notify / wait on u64 signal cells, done by thread 0 of the block for
 * every cell of the view in row-major order, between __syncthreads() (the
 * block's earlier writes are complete before a notify; a wait's acquire by
 * thread 0 is ordered before the other threads' later reads by the
 * barrier). A wait that fails (timeout, abort, an earlier failure) ends the
 * program instance, like the CPU's. */

static void emit_signal(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], base[BK_GPU_NAME + 16];
    IrType vt;
    memset(&vt, 0, sizeof vt);
    ir_view_shape(f, &f->views[in->view], &vt);
    bool wait = in->op == IR_WAIT;
    bk_gpu_base(em, id, base, sizeof base);
    sync(em);
    bk_gpu_line(em, "if (blk_tid == 0) {");
    em->indent++;
    if (wait)
        bk_gpu_line(em, "int blk_bad = 0;");
    bk_gpu_line(em, "for (int e = 0; e < %lld%s; e++) {", (long long)ir_numel(&vt),
                wait ? " && !blk_bad" : "");
    em->indent++;
    bk_gpu_view(em, id, ok, sizeof ok, addr, sizeof addr);
    if (wait)
        bk_gpu_line(em, "if (%s) blk_bad = blk_wait(blk_rc, (unsigned long long *)&%s[%s], "
                    "%d, (unsigned long long)v%d, %d, (long long)(%s));", ok, base, addr,
                    in->attr == WAIT_EQ, in->opnd[0], in->param, addr);
    else
        bk_gpu_line(em, "if (%s) blk_notify((unsigned long long *)&%s[%s], %d, "
                    "(unsigned long long)v%d);", ok, base, addr, in->attr == SIG_ADD,
                    in->opnd[0]);
    bk_gpu_line(em, "(void)e;");
    em->indent--;
    bk_gpu_line(em, "}");
    if (wait)
        bk_gpu_line(em, "BLK_SST(blk_wfail) = blk_bad;");
    em->indent--;
    bk_gpu_line(em, "}");
    sync(em);
    if (wait) {
        bk_gpu_line(em, "if (BLK_SLD(blk_wfail)) return; /* uniform: the whole block */");
        sync(em); /* every thread has read blk_wfail before a later wait */
    }
}

/* ------------------------------------------------------------ print
 * print(...) is in gpu_print.c. */

/* ------------------------------------------------------------ control */

static void emit_region(BkGpuEm *em, int r);

/* Whether FOR id's body loads a tile directly (for the HIP stages note). */
static bool loop_loads_tiles(const BkGpuEm *em, int id)
{
    const IrRegion *reg = &em->f->regions[em->f->ins[id].region[0]];
    for (int i = 0; i < reg->n; i++) {
        const IrInstr *x = &em->f->ins[reg->ins[i]];
        if (!x->dead && x->op == IR_LOAD && x->type.rank > 0)
            return true;
    }
    return false;
}

/* FOR id's body; with sp (a split, gpu_split.c) twice under a uniform
 * branch: `if (iv < blk_fs) {` the body with the compares sp->cmp
 * emitted as `true` `} else {` the body as it is `}`. */
static void for_body(BkGpuEm *em, int id, const BkGpuSplit *sp)
{
    const IrInstr *in = &em->f->ins[id];
    if (!sp) {
        emit_region(em, in->region[0]);
        return;
    }
    /* both bodies from the same barrier state (gpu_sync.c): each path
     * through the branch is the one body the single form had, and
     * folding a compare changes no memory access */
    BkGpuEm s0 = *em;
    int nf = em->nfold;
    bk_gpu_line(em, "if ((long long)v%d < blk_fs%d) { /* every bounds compare true */", id, id);
    em->indent++;
    for (int i = 0; i < sp->n && em->nfold < 2 * BK_GPU_MAXFOLD; i++)
        em->fold[em->nfold++] = sp->cmp[i];
    em->last_line = -1;
    emit_region(em, in->region[0]);
    em->nfold = nf;
    em->indent--;
    bk_gpu_line(em, "} else { /* the steps with a bounds mask */");
    em->indent++;
    memcpy(em->acc, s0.acc, sizeof em->acc);
    em->nacc = s0.nacc;
    em->seg_gread = s0.seg_gread;
    em->seg_gwrite = s0.seg_gwrite;
    em->pending = s0.pending;
    em->seg_ok = s0.seg_ok;
    em->seg_none = s0.seg_none;
    em->last_line = -1;
    emit_region(em, in->region[0]);
    em->indent--;
    bk_gpu_line(em, "}");
}

static void emit_for(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrInstr *stp = &f->ins[in->opnd[2]];
    const char *t = bk_gpu_stype(in->type.dtype);
    char cond[256]; /* bounded: six value names */
    if (stp->op == IR_CONST && stp->type.rank == 0 && stp->ival > 0)
        snprintf(cond, sizeof cond, "v%d < v%d", id, in->opnd[1]);
    else if (stp->op == IR_CONST && stp->type.rank == 0 && stp->ival < 0)
        snprintf(cond, sizeof cond, "v%d > v%d", id, in->opnd[1]);
    else
        snprintf(cond, sizeof cond, "v%d > 0 ? v%d < v%d : (v%d < 0 && v%d > v%d)",
                 in->opnd[2], id, in->opnd[1], in->opnd[2], id, in->opnd[1]);
    BkGpuSplit sp;
    bool split = bk_gpu_split_plan(em, id, &sp) > 0;
    if (split) { /* gpu_split.c: the steps below blk_fs have every compare true */
        const IrInstr *b = &f->ins[sp.bound];
        char bnd[BK_GPU_EXPR];
        if (b->op == IR_CONST)
            snprintf(bnd, sizeof bnd, "%lldLL", (long long)b->ival);
        else
            bk_gpu_read(em, sp.bound, "0", bnd, sizeof bnd);
        bk_gpu_line(em, "const long long blk_fs%d = (long long)(%s) - %lldLL; "
                    "/* loop split at %d bounds compare(s) (gpu_split.c) */", id, bnd, sp.lim, sp.n);
    }
    if (em->pipe[id] > 0) {
        if (em->wgk && em->wgk[id])
            bk_gpu_wgmma_keep_decl(em, id);
        bk_gpu_pipe_prologue(em, id);
        if (!split && bk_gpu_fragpipe_plan(em, id) >= 0)
            bk_gpu_fragpipe_prologue(em, id);
        bk_gpu_line(em, "for (%s v%d = v%d; %s; v%d += v%d, blk_it%d++) {", t,
                    id, in->opnd[0], cond, id, in->opnd[2], id);
        em->indent++;
        bk_gpu_pipe_top(em, id);
    } else {
        if (em->dl->kind == BK_GPU_HIP && em->stages > 1 &&
            em->pipe[id] == 0 && loop_loads_tiles(em, id))
            bk_gpu_line(em, "// stages(%d) ignored: no cp.async on AMD GPUs; "
                        "loads go through registers", em->stages);
        bk_gpu_line(em, "for (%s v%d = v%d; %s; v%d += v%d) {", t, id,
                    in->opnd[0], cond, id, in->opnd[2]);
        em->indent++;
    }
    /* a pipelined body starts with a barrier (pipe_top), which covers
     * the back edge: what the body still owes is paid after the loop */
    int saved = em->noflush_region;
    em->noflush_region = em->pipe[id] > 0 ? in->region[0] : -1;
    for_body(em, id, split ? &sp : NULL);
    bk_gpu_pipe_bottom(em, id); /* HIP: the staged tiles into the next slot */
    em->noflush_region = saved;
    if (em->ws && em->tma_fr == id)
        bk_gpu_ws_release(em, id);
    em->indent--;
    bk_gpu_line(em, "}");
    if ((em->wga && em->wga[id]) || (em->wgk && em->wgk[id]))
        bk_gpu_wgmma_drain(em, id);
    if (em->persist && em->tma_fr == id)
        bk_gpu_persist_release(em, id);
    bk_gpu_barrier_flush(em);
}

static void emit_instr(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    if (in->loc.line > 0 && in->loc.line != em->last_line) {
        bk_gpu_line(em, "// line %d", in->loc.line);
        em->last_line = in->loc.line;
    }
    bk_gpu_barrier_before(em, id);
    if (ir_op_flags[in->op] & F_ELEM) {
        emit_elem(em, id);
        return;
    }
    const char *st = bk_gpu_stype(in->type.dtype);
    switch (in->op) {
    case IR_CONST: emit_const(em, id); break;
    case IR_PARAM:
        bk_gpu_line(em, "const %s v%d = p_%s;", st, id, f->params[in->param].name);
        break;
    case IR_SIZE:
        bk_gpu_line(em, "const int v%d = (int)p_%s.shape[%d];", id,
                    f->params[in->param].name, in->attr);
        break;
    case IR_PID:
        if (em->persist) /* the tile the block is on (gpu_persist.c) */
            bk_gpu_line(em, "const int v%d = blk_pid%d;", id, in->attr % 3);
        else if (em->group_m && in->attr < 2)
            bk_gpu_line(em, "const int v%d = blk_pid%d;", id, in->attr);
        else
            bk_gpu_line(em, "const int v%d = (int)blockIdx.%c;", id, "xyz"[in->attr % 3]);
        break;
    case IR_NPROG:
        if (em->persist) /* the grid of programs, not the blocks launched */
            bk_gpu_line(em, "const int v%d = blk_np%d;", id, in->attr % 3);
        else
            bk_gpu_line(em, "const int v%d = (int)gridDim.%c;", id, "xyz"[in->attr % 3]);
        break;
    case IR_ARANGE: emit_arange(em, id); break;
    case IR_BCAST: case IR_RESHAPE: case IR_PERMUTE: emit_shape(em, id); break;
    case IR_REDUCE: bk_gpu_emit_reduce(em, id); break;
    case IR_SCAN: bk_gpu_emit_scan(em, id); break;
    case IR_DOT:
        if (em->lay[id] == BK_LAY_MMA && in->opnd[2] >= 0)
            bk_gpu_mma_dot(em, id, em->mvar[id]);
        else if (em->lay[id] == BK_LAY_MMA)
            bk_gpu_line(em, "/* v%d = dot, layout mma: accumulated into var%d at its var.set */",
                        id, em->mvar[id]);
        else
            bk_gpu_emit_dot(em, id);
        break;
    case IR_LOAD: bk_gpu_emit_load(em, id); break;
    case IR_STORE:
        if (em->lay[in->opnd[0]] == BK_LAY_MMA)
            bk_gpu_mma_store(em, id);
        else
            bk_gpu_emit_store(em, id);
        break;
    case IR_ATOMIC: bk_gpu_emit_atomic(em, id); break;
    case IR_VGET:
        if (em->lay[id] == BK_LAY_MMA) {
            bk_gpu_line(em, "/* v%d = var%d, layout mma: read in place (registers) */",
                        id, in->param);
        } else if (em->cvt[id]) {
            bk_gpu_mma_to_shared(em, id);
        } else if (em->lay[id] == BK_LAY_MROW) { /* an MROW var's registers */
            bk_gpu_mrow_vget(em, id);
        } else if (em->lay[id] == BK_LAY_SLICE) { /* a SLICE var's registers */
            bk_gpu_decl_tile(em, id);
            if (em->var_of[id] < 0) {
                bk_gpu_slice_open(em, id);
                bk_gpu_line(em, "v%d[blk_k] = var%d[blk_k];", id, in->param);
                bk_gpu_loop_close(em);
            }
            if (em->scvt[id])
                bk_gpu_slice_to_shared(em, id);
        } else if (in->type.rank == 0) {
            bk_gpu_line(em, "const %s v%d = var%d;", st, id, in->param);
        } else if (em->var_of[id] >= 0) {
            bk_gpu_decl_tile(em, id);
        } else {
            bk_gpu_decl_tile(em, id);
            bk_gpu_loop_open(em, &in->type);
            bk_gpu_line(em, "BLK_SST(v%d[e]) = BLK_SLD(var%d[e]);", id, in->param);
            bk_gpu_loop_close(em);
        }
        break;
    case IR_VSET:
        if (em->vmma[in->param].on) {
            bk_gpu_mma_vset(em, id);
        } else if (em->vmrow[in->param] >= 0) { /* per row register */
            bk_gpu_mrow_vset(em, id);
        } else if (em->vsl[in->param] >= 0) { /* per slice register */
            char rv[BK_GPU_EXPR];
            bk_gpu_slice_open_of(em, em->vsl[in->param], ir_numel(&f->vars[in->param].type));
            bk_gpu_raw(em, in->opnd[0], "e", rv, sizeof rv);
            bk_gpu_line(em, "var%d[blk_k] = %s;", in->param, rv);
            bk_gpu_loop_close(em);
        } else if (f->vars[in->param].type.rank == 0) {
            bk_gpu_line(em, "var%d = v%d;", in->param, in->opnd[0]);
        } else {
            bk_gpu_loop_open(em, &f->vars[in->param].type);
            char rv[BK_GPU_EXPR];
            bk_gpu_raw(em, in->opnd[0], "e", rv, sizeof rv);
            bk_gpu_line(em, "BLK_SST(var%d[e]) = %s;", in->param, rv);
            bk_gpu_loop_close(em);
        }
        break;
    case IR_FOR: emit_for(em, id); break;
    case IR_WHILE:
        bk_gpu_line(em, "while (true) {");
        em->indent++;
        emit_region(em, in->region[0]);
        if (in->region[1] >= 0)
            emit_region(em, in->region[1]);
        em->indent--;
        bk_gpu_line(em, "}");
        break;
    case IR_IF:
        bk_gpu_line(em, "if (v%d) {", in->opnd[0]);
        em->indent++;
        emit_region(em, in->region[0]);
        em->indent--;
        if (in->region[1] >= 0 && f->regions[in->region[1]].n > 0) {
            bk_gpu_line(em, "} else {");
            em->indent++;
            emit_region(em, in->region[1]);
            em->indent--;
        }
        bk_gpu_line(em, "}");
        break;
    case IR_YIELD:
        /* only a WHILE condition region reaches here (the grid region is
         * evaluated on the host); the body follows in the same C loop */
        bk_gpu_line(em, "if (!v%d) break;", in->opnd[0]);
        break;
    case IR_RET: bk_gpu_line(em, "return;"); break;
    case IR_RANK: bk_gpu_line(em, "const int v%d = blk_rc.rank;", id); break;
    case IR_WORLD: bk_gpu_line(em, "const int v%d = blk_rc.world;", id); break;
    case IR_NOTIFY: case IR_WAIT: emit_signal(em, id); break;
    case IR_PRINT: bk_gpu_emit_print(em, id); break;
    case IR_ASSERT: /* the condition is uniform over the block: all return */
        bk_gpu_line(em, "if (!v%d) {", in->opnd[0]);
        bk_gpu_line(em, "    if (blk_tid == 0) blk_assert(blk_rc, %d, %d, %s, %s, (int)blockIdx.z);",
                    (int)in->ival, in->loc.line, em->group_m ? "blk_pid0" : "(int)blockIdx.x",
                    em->group_m ? "blk_pid1" : "(int)blockIdx.y");
        bk_gpu_line(em, "    return;");
        bk_gpu_line(em, "}");
        break;
    default:
        bk_gpu_fail(em, "cuda/hip backend: op %s is not supported", ir_op_names[in->op]);
        break;
    }
}

static void emit_region(BkGpuEm *em, int r)
{
    const IrFunc *f = em->f;
    const IrRegion *reg = &f->regions[r];
    for (int i = 0; i < reg->n; i++)
        if (!f->ins[reg->ins[i]].dead)
            emit_instr(em, reg->ins[i]);
    /* a nested region ends in a barrier if one is owed (loop back edges,
     * code after an if); the kernel's end needs none */
    if (r != 0 && r != em->noflush_region)
        bk_gpu_barrier_flush(em);
}

void bk_gpu_emit_instr(BkGpuEm *em, int id)
{
    emit_instr(em, id);
}

void bk_gpu_emit_region(BkGpuEm *em, int r)
{
    emit_region(em, r);
}

static void emit_func(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    bk_gpu_line(em, "// kernel %s (.blk line %d): blockDim.x = %d (%d warps of %d%s),",
                f->name, f->loc.line, bk_gpu_threads(em), em->nw, em->dl->warp,
                em->ws ? ", then the TMA producer warpgroup" : "");
    if (em->persist)
        bk_gpu_line(em, "// gridDim.x = min(programs, SMs): each block loops over tiles, the grid of "
                    "ir_eval_grid in blk_np0..2; dynamic shared memory = %lld bytes", em->smem);
    else
        bk_gpu_line(em, "// gridDim = the grid of ir_eval_grid, dynamic shared memory = %lld bytes",
                    em->smem);
    /* the symbols are blk_k_NAME (backend.h): no clash with the C library,
     * the device builtins or the prelude, whatever the kernel's name */
    bk_gpu_line(em, "extern \"C\" __constant__ int blk_smem_" BK_KERNEL_PREFIX "%s = %lld;",
                f->name, em->smem);
    bk_gpu_wgmma_decls(em);
    DslBuf *o = em->o;
    int mb = bk_gpu_minblocks();
    if (mb > 1 && em->dl->kind == BK_GPU_CUDA) /* registers capped for mb blocks per SM */
        dsl_buf_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d, %d) "
                       BK_KERNEL_PREFIX "%s(", em->nt, mb, f->name);
    else if (em->ws) /* setmaxnreg needs the count at entry fixed: one block per SM */
        dsl_buf_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d, 1) "
                       BK_KERNEL_PREFIX "%s(", bk_gpu_threads(em), f->name);
    else
        dsl_buf_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) "
                       BK_KERNEL_PREFIX "%s(", em->nt, f->name);
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (i)
            dsl_buf_printf(o, ",");
        dsl_buf_printf(o, "\n    ");
        if (p->kind == PK_TENSOR)
            dsl_buf_printf(o, "BlkTensor<%s, %d> p_%s", bk_gpu_stype(p->dtype),
                           p->rank, p->name);
        else
            dsl_buf_printf(o, "%s p_%s", bk_gpu_stype(p->dtype), p->name);
    }
    if (bk_gpu_uses_ranks(f))
        dsl_buf_printf(o, "%s\n    BlkRankCtx blk_rc /* rank builtins */",
                       f->nparams ? "," : "");
    bk_gpu_tma_params(em);
    bk_gpu_persist_params(em);
    dsl_buf_printf(o, ")\n{\n");
    em->indent = 1;
    /* swizzled wgmma operands: the pattern is on address bits */
    bk_gpu_line(em, em->wgmma ? "BLK_DYNAMIC_SMEM_1K(blk_smem);" : "BLK_DYNAMIC_SMEM(blk_smem);");
    bk_gpu_line(em, "const int blk_tid = threadIdx.x;");
    bk_gpu_line(em, "const int blk_lane = blk_tid %% %d, blk_warp = blk_tid / %d;",
                em->dl->warp, em->dl->warp);
    bk_gpu_line(em, "(void)blk_lane; (void)blk_warp; (void)blk_smem;");
    if (has_wait(f))
        bk_gpu_line(em, "__shared__ int blk_wfail; /* a wait of this block failed */");
    for (int v = 0; v < f->nvars; v++) {
        const IrVar *var = &f->vars[v];
        const char *t = bk_gpu_stype(var->type.dtype);
        char ty[128];
        ir_type_str(&var->type, ty, sizeof ty);
        if (var->type.rank == 0)
            bk_gpu_line(em, "%s var%d; /* var %s : %s */", t, v, var->name, ty);
        else if (em->vmma[v].on)
            bk_gpu_mma_decl(em, v);
        else if (em->vmrow[v] >= 0)
            bk_gpu_mrow_var_decl(em, v);
        else if (em->vsl[v] >= 0)
            bk_gpu_line(em, "%s var%d[%d]; /* var %s : %s, slice: registers across iterations */",
                        t, v, bk_gpu_blk_regs(em, &f->ins[em->vsl[v]].type) /
                            bk_gpu_blk_w(em, &f->ins[em->vsl[v]].type),
                        var->name, ty);
        else
            bk_gpu_line(em, "%s *var%d = (%s *)(blk_smem + %lld); /* var %s : %s */",
                        t, v, t, em->var_off[v], var->name, ty);
    }
    if (em->persist) { /* a loop over tiles (gpu_persist.c) */
        bk_gpu_persist_body(em);
        em->indent = 0;
        dsl_buf_printf(o, "}\n");
        return;
    }
    if (em->group_m) {
        /* grouped ordering (as Triton's GROUP_M): blocks dispatched one after
         * another (x fastest) walk down GROUP_M rows of output tiles before
         * moving right, so they share their A rows and B columns in L2. A
         * bijection of (blockIdx.x, blockIdx.y): every program runs once. */
        bk_gpu_line(em, "// program ids in groups of %d along program_id(0) (L2 reuse)", em->group_m);
        bk_gpu_line(em, "int blk_pid0, blk_pid1;");
        bk_gpu_line(em, "{");
        em->indent++;
        bk_gpu_line(em, "const int np0 = (int)gridDim.x, np1 = (int)gridDim.y;");
        bk_gpu_line(em, "const int lin = (int)blockIdx.x + (int)blockIdx.y * np0;");
        bk_gpu_line(em, "const int first = lin / (%d * np1) * %d;", em->group_m, em->group_m);
        bk_gpu_line(em, "const int gs = np0 - first < %d ? np0 - first : %d;", em->group_m,
                    em->group_m);
        bk_gpu_line(em, "const int r = lin %% (%d * np1);", em->group_m);
        bk_gpu_line(em, "blk_pid0 = first + r %% gs;");
        bk_gpu_line(em, "blk_pid1 = r / gs;");
        em->indent--;
        bk_gpu_line(em, "}");
    }
    if (em->ws_top) /* the producer warpgroup splits off here (gpu_ws.c) */
        bk_gpu_ws_head(em);
    emit_region(em, 0);
    em->indent = 0;
    dsl_buf_printf(o, "}\n");
}

/* The analysis again after a switch of em's changed (em->fail cleared);
 * em freed on failure */
static int reanalyze(BkGpuEm *em)
{
    bk_gpu_em_free(em);
    em->fail = 0;
    if (bk_gpu_analyze(em) < 0) {
        bk_gpu_em_free(em);
        return -1;
    }
    return 0;
}

/* Whether some load lives in a ring */
static bool piped(const BkGpuEm *em)
{
    for (int i = 0; i < em->f->nins; i++)
        if (em->pipe[i] >= 0 && em->f->ins[i].op == IR_LOAD)
            return true;
    return false;
}

int bk_gpu_em_init(BkGpuEm *em, const IrFunc *f, const BkGpuDialect *dl,
                   const char *arch, DslBuf *out, char *err, size_t errlen)
{
    memset(em, 0, sizeof *em);
    em->f = f;
    em->dl = dl;
    em->sm90a = dl->kind == BK_GPU_CUDA && arch &&
                (!strcmp(arch, "sm_90a") || !strcmp(arch, "compute_90a"));
    em->o = out;
    em->err = err;
    em->errlen = errlen;
    em->nw = f->warps > 0 ? f->warps : 4;
    em->nt = em->nw * dl->warp;
    if (em->nt > 1024) {
        snprintf(err, errlen, "kernel %s: warps(%d) gives %d threads per block; "
                 "the most is 1024", f->name, f->warps, em->nt);
        return -1;
    }
    if (strlen(f->name) > BK_GPU_NAME) {
        snprintf(err, errlen, "kernel name '%.40s...' is %zu characters long; the GPU "
                 "backends take at most %d", f->name, strlen(f->name), BK_GPU_NAME);
        return -1;
    }
    for (int i = 0; i < f->nparams; i++)
        if (strlen(f->params[i].name) > BK_GPU_NAME) {
            snprintf(err, errlen, "kernel %s: parameter name '%.40s...' is %zu characters "
                     "long; the GPU backends take at most %d", f->name, f->params[i].name,
                     strlen(f->params[i].name), BK_GPU_NAME);
            return -1;
        }
    em->last_line = -1;
    em->noflush_region = -1;
    em->reg_var = -1;
    em->mr_loop = -1;
    em->pzero = -1;
    em->tstore = -1;
    em->tmaq = -1;
    em->fp_fr = em->fp_dot = -1;
    em->stages = f->stages;
    /* the old paths stay selectable (docs/backends.md) */
    const char *e;
    em->novec = (e = getenv("BLKC_GPU_NOVEC")) && *e && strcmp(e, "0");
    em->nopipe = (e = getenv("BLKC_GPU_NOPIPE")) && *e && strcmp(e, "0");
    em->nosyncelim = (e = getenv("BLKC_GPU_NOSYNCELIM")) && *e && strcmp(e, "0");
    em->nohoist = (e = getenv("BLKC_GPU_NOHOIST")) && *e && strcmp(e, "0");
    em->notma = (e = getenv("BLKC_GPU_NOTMA")) && *e && strcmp(e, "0");
    em->noex2ftz = (e = getenv("BLKC_GPU_NOEX2FTZ")) && *e && strcmp(e, "0");
    em->noldsmxor = (e = getenv("BLKC_GPU_NOLDSMXOR")) && *e && strcmp(e, "0");
    em->nocpimm = (e = getenv("BLKC_GPU_NOCPIMM")) && *e && strcmp(e, "0");
    em->nocplim32 = (e = getenv("BLKC_GPU_NOCPLIM32")) && *e && strcmp(e, "0");
    em->nocpguard32 = (e = getenv("BLKC_GPU_NOCPGUARD32")) && *e && strcmp(e, "0");
    em->noloopsplit = (e = getenv("BLKC_GPU_NOLOOPSPLIT")) && *e && strcmp(e, "0");
    em->nofragpipe = (e = getenv("BLKC_GPU_NOFRAGPIPE")) && *e && strcmp(e, "0");
    em->nohipstage = (e = getenv("BLKC_GPU_NOHIPSTAGE")) && *e && strcmp(e, "0");
    em->wgsync = (e = getenv("BLKC_GPU_WGSYNC")) && *e && strcmp(e, "0");
    em->nowgreg = (e = getenv("BLKC_GPU_NOWGREG")) && *e && strcmp(e, "0");
    em->nowgkeep = (e = getenv("BLKC_GPU_NOWGKEEP")) && *e && strcmp(e, "0");
    em->noqkpipe = (e = getenv("BLKC_GPU_NOQKPIPE")) && *e && strcmp(e, "0");
    if (bk_gpu_analyze(em) < 0) {
        bk_gpu_em_free(em);
        return -1;
    }
    /* rings multiply the loads' shared memory by stages(S): past the
     * smallest per-block limit (sm_80: 163 KiB; sm_90a code runs on sm_90
     * alone: 227 KiB; gfx90a's LDS: 64 KiB) keep the kernel loadable with
     * fewer stages (down to 2), else give up the pipeline */
    long long lim = dl->kind == BK_GPU_HIP ? 65536 : em->sm90a ? 232448 : 160 * 1024;
    while (piped(em) && em->smem > lim && dl->kind == BK_GPU_CUDA && em->stages > 2) {
        em->stages--;
        if (reanalyze(em) < 0)
            return -1;
    }
    if (piped(em) && em->smem > lim) {
        em->nopipe = true;
        return reanalyze(em);
    }
    if (piped(em) && dl->kind == BK_GPU_HIP && em->smem > 32768) {
        /* a HIP ring's second slot (gpu_mem.c) must not leave one block
         * per CU (64 KiB of LDS) where the loads in the body left two:
         * then those (flash attention's K and V); one block either way:
         * back to the ring */
        em->nohipstage = true;
        if (reanalyze(em) < 0)
            return -1;
        if (em->smem > 32768) {
            em->nohipstage = false;
            return reanalyze(em);
        }
    }
    return 0;
}

int bk_gpu_kernel_info(const IrFunc *f, const BkGpuDialect *dl, const char *arch,
                       BkGpuKernelInfo *info, char *err, size_t errlen)
{
    BkGpuEm em;
    if (bk_gpu_em_init(&em, f, dl, arch, NULL, err, errlen) < 0)
        return -1;
    info->threads = bk_gpu_threads(&em); /* the producer warpgroup too (gpu_ws.c) */
    info->smem_bytes = em.smem;
    info->rank_ctx = bk_gpu_uses_ranks(f);
    bk_gpu_tma_info(&em, info);
    info->persist = em.persist;
    bk_gpu_em_free(&em);
    return 0;
}

int bk_gpu_emit_module(const IrModule *m, const BkGpuDialect *dl, const char *arch,
                       DslBuf *out, char *err, size_t errlen)
{
    dsl_buf_printf(out, "// Generated by blkc: %s, one __global__ function per kernel.\n"
                        "// Tiles live in shared memory (each tile op a block-strided loop) unless\n"
                        "// their layout puts them in registers (dot accumulators, blocked tiles).\n",
                   dl->name);
    for (int i = 0; dl->prelude[i]; i++)
        dsl_buf_put(out, dl->prelude[i], strlen(dl->prelude[i]));
    for (int i = 0; bk_gpu_common_prelude[i]; i++)
        dsl_buf_put(out, bk_gpu_common_prelude[i], strlen(bk_gpu_common_prelude[i]));
    if (bk_gpu_print_tiles(m))
        for (int i = 0; bk_gpu_print_prelude[i]; i++)
            dsl_buf_put(out, bk_gpu_print_prelude[i], strlen(bk_gpu_print_prelude[i]));
    for (int i = 0; i < m->nfuncs; i++) {
        BkGpuEm em;
        if (m->funcs[i]->is_device)
            continue; /* Device IR: run by the runtime's plan interpreter */
        dsl_buf_printf(out, "\n");
        if (bk_gpu_em_init(&em, m->funcs[i], dl, arch, out, err, errlen) < 0)
            return -1;
        emit_func(&em);
        bk_gpu_em_free(&em);
        if (em.fail)
            return -1;
    }
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
