/* gpu_mem.c — loads and stores of the GPU emitter (CUDA and HIP).
 *
 * Three forms:
 *  - scalar: one element per iteration of the block-strided loop, each
 *    element's address from the strides, bounds and mask tested per element;
 *  - vector: when the specialization facts of the tensor argument
 *    (IrParam.assume, computed at launch by compiler/cache.c) prove that the
 *    view's innermost run is contiguous and 16-byte aligned, each thread
 *    moves 16 bytes (W = 16 / element size elements) at once (uint4:
 *    ld.global.v4 / st.global.v4 on CUDA, global_load_dwordx4 on AMD);
 *    a vector cut by the bounds or by the mask falls back to elements;
 *  - cp.async ring (CUDA sm_80+): vector loads in the body of a loop of a
 *    `stages(S)` kernel that feed a `dot` are issued S - 1 iterations ahead
 *    into an S-deep ring of shared-memory buffers (bk_gpu_pipe_*).
 * BLKC_GPU_NOVEC=1 / BLKC_GPU_NOPIPE=1 keep the scalar / unpipelined forms. */
#include "gpu_emit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ facts */

/* The largest power of two (at most 64) dividing k; 64 for 0. */
static int pow2_div(long long k)
{
    int d = 1;
    if (k == 0)
        return 64;
    while (d < 64 && k % (2 * d) == 0)
        d *= 2;
    return d;
}

/* The largest power of two (capped at 64) known to divide the integer
 * scalar v whenever it is computed. Two's-complement wrap-around keeps
 * divisibility by 2^k (k <= 32), so i32 overflow does not break it. */
static int known_div(const BkGpuEm *em, int v, int depth)
{
    if (v < 0 || depth > 24)
        return 1;
    const IrInstr *in = &em->f->ins[v];
    if (in->type.rank != 0 || !dsl_is_int(in->type.dtype))
        return 1;
    int a = in->opnd[0], b = in->opnd[1], c = in->opnd[2];
    int x, y;
    switch (in->op) {
    case IR_CONST:
        return pow2_div((long long)in->ival);
    case IR_ADD: case IR_SUB: case IR_MAX: case IR_MIN:
        x = known_div(em, a, depth + 1);
        y = known_div(em, b, depth + 1);
        return x < y ? x : y;
    case IR_MUL:
        x = known_div(em, a, depth + 1) * known_div(em, b, depth + 1);
        return x > 64 ? 64 : x;
    case IR_NEG:
        return known_div(em, a, depth + 1);
    case IR_CVT: /* int -> int: divisibility by 2^k survives truncation */
        return dsl_is_int(em->f->ins[a].type.dtype) ? known_div(em, a, depth + 1) : 1;
    case IR_SELECT:
        x = known_div(em, b, depth + 1);
        y = known_div(em, c, depth + 1);
        return x < y ? x : y;
    case IR_FOR: /* lo + i * step */
        x = known_div(em, a, depth + 1);
        y = known_div(em, c, depth + 1);
        return x < y ? x : y;
    case IR_SIZE: {
        const IrParam *p = &em->f->params[in->param];
        if (p->dims[in->attr] >= 0)
            return pow2_div(p->dims[in->attr]);
        return (p->assume & IR_ASSUME_DIM16(in->attr)) ? 16 : 1;
    }
    default:
        return 1;
    }
}

/* Vector width (elements) for load/store id, or 0.
 *
 * The element offset of view element (c_0, ..., c_{R-1}) is
 * sum_d c_d * stride[d]. Take W = 16 / element size and a vector of W
 * consecutive view elements along the innermost dim, starting at flat view
 * element e with e % W == 0. It is one aligned 16-byte access when:
 *  - the innermost index is a range `s +: L` with L % W == 0: then the W
 *    elements lie in one row (e % L is a multiple of W and <= L - W) and
 *    their innermost coordinates are c, c+1, ..., c+W-1 with
 *    c = s + e % L;
 *  - stride[R-1] == 1 (IR_ASSUME_UNIT_INNER): consecutive addresses;
 *  - data is 16-byte aligned (IR_ASSUME_ALIGN16), every outer stride is a
 *    multiple of 16 elements (IR_ASSUME_STRIDE16(d), hence of W, W <= 16),
 *    and s is a multiple of W (known_div): the first element's offset is a
 *    multiple of W elements = 16 bytes, so the address is 16-byte aligned.
 * Whether the vector is in bounds is decided per vector at run time: the
 * outer coordinates are shared by its W elements and c is a multiple of W,
 * so c < 0 means all W are out (c <= -W) and c + W <= shape means all in;
 * otherwise (a tail) and when a mask is off for any of the W elements, that
 * vector is moved element by element. Peer views are never vectorized. */
int bk_gpu_vec_width(const BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    if (em->novec || (in->op != IR_LOAD && in->op != IR_STORE) || in->view < 0 ||
        in->opnd[3] >= 0)
        return 0;
    const IrParam *p = &f->params[in->param];
    const IrView *v = &f->views[in->view];
    int R = v->ndims, sz = dsl_dtype_bytes(p->dtype);
    if (p->kind != PK_TENSOR || R < 1 || R != p->rank || sz <= 0 || 16 % sz)
        return 0;
    int W = 16 / sz;
    if (W < 2 || !(p->assume & IR_ASSUME_ALIGN16) || !(p->assume & IR_ASSUME_UNIT_INNER))
        return 0;
    if (in->op == IR_LOAD && (in->type.rank == 0 || in->type.dtype != p->dtype))
        return 0;
    if (v->d[R - 1].kind != IDX_RANGE || v->d[R - 1].len <= 0 || v->d[R - 1].len % W)
        return 0;
    for (int d = 0; d < R - 1; d++)
        if (!(p->assume & IR_ASSUME_STRIDE16(d)))
            return 0;
    if (known_div(em, v->d[R - 1].val, 0) < W)
        return 0;
    return W;
}

/* ------------------------------------------------------------ views */

/* Whether scalar v can be written as an expression at a future iteration
 * of FOR fr: defined outside the loop, the induction variable, or a pure
 * scalar op of the loop's body over such values. */
static bool future_ok(const BkGpuEm *em, int v, int fr, int depth)
{
    const IrFunc *f = em->f;
    if (v == fr)
        return true;
    if (em->pos[v] <= em->pos[fr] || em->pos[v] > em->end[fr])
        return true; /* defined before the loop: visible, invariant */
    const IrInstr *in = &f->ins[v];
    if (depth > 16 || in->type.rank != 0 || in->dead)
        return false;
    if (in->op == IR_CONST)
        return true;
    if (!(ir_op_flags[in->op] & F_ELEM) || em->pos[v] > em->end[fr])
        return false;
    /* directly in the loop's body: not inside a nested if or loop */
    const IrRegion *reg = &f->regions[f->ins[fr].region[0]];
    bool direct = false;
    for (int i = 0; i < reg->n && !direct; i++)
        direct = reg->ins[i] == v;
    if (!direct)
        return false;
    for (int j = 0; j < ir_op_nopnd[in->op] && j < 3; j++)
        if (in->opnd[j] >= 0 && !future_ok(em, in->opnd[j], fr, depth + 1))
            return false;
    return true;
}

/* The scalar v as C text: its name, or (see future_ok) its expression with
 * FOR fr's induction variable written as iv. */
void bk_gpu_sval(BkGpuEm *em, int v, int fr, const char *iv, char *buf, size_t n)
{
    const IrFunc *f = em->f;
    if (fr < 0 || (v != fr && (em->pos[v] <= em->pos[fr] || em->pos[v] > em->end[fr]))) {
        snprintf(buf, n, "v%d", v);
        return;
    }
    if (v == fr) {
        snprintf(buf, n, "%s", iv);
        return;
    }
    const IrInstr *in = &f->ins[v];
    /* every piece ends up inside buf (an op that drops an operand drops
     * it whole), so pieces of n bytes each suffice and one check of the
     * result finds any cut; the planner keeps ring loads whose indices
     * fit BK_GPU_SVAL (sval_fits) */
    char *r = malloc(6 * n);
    if (!r) {
        snprintf(buf, n, "0");
        bk_gpu_fail(em, "out of memory");
        return;
    }
    char *o[3] = {r + n, r + 2 * n, r + 3 * n}, *x = r + 4 * n, *s = r + 5 * n;
    if (in->op == IR_CONST) {
        bk_gpu_literal(x, n, in->type.dtype, in);
    } else {
        for (int j = 0; j < 3; j++) {
            o[j][0] = 0;
            if (j < ir_op_nopnd[in->op] && in->opnd[j] >= 0) {
                bk_gpu_sval(em, in->opnd[j], fr, iv, r, n);
                bk_gpu_to_c(o[j], n, f->ins[in->opnd[j]].type.dtype, r);
            }
        }
        bk_gpu_elem_expr(em, v, o[0], o[1], o[2], x, n);
    }
    bk_gpu_to_s(s, n, in->type.dtype, x);
    if ((size_t)snprintf(buf, n, "(%s)", s) >= n)
        bk_gpu_fail(em, "internal: a prefetch index of kernel %s is too long",
                    f->name);
    free(r);
}

/* Whether scalar v at a future iteration of FOR fr fits BK_GPU_SVAL bytes
 * (bk_gpu_sval, by a trial run): chains that repeat an operand (integer
 * abs, division) grow exponentially within future_ok's depth of 16, and a
 * load whose index does not fit stays out of the ring (issue 12). */
static bool sval_fits(BkGpuEm *em, int v, int fr)
{
    char *b = malloc(BK_GPU_SVAL);
    if (!b)
        return false;
    int failed = em->fail;
    em->fail = 0;
    bk_gpu_sval(em, v, fr, "blk_fiv", b, BK_GPU_SVAL);
    bool ok = !em->fail;
    if (!failed && !ok && em->errlen)
        em->err[0] = 0; /* the trial's message is not an error */
    em->fail = failed;
    free(b);
    return ok;
}

void bk_gpu_view_at(BkGpuEm *em, int id, const char *ename, int forid,
                    const char *iv, char *ok, size_t okn, char *addr,
                    size_t addrn)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrView *v = &f->views[in->view];
    const IrParam *pp = &f->params[in->param];
    const char *p = pp->name;
    IrType vt;
    memset(&vt, 0, sizeof vt);
    ir_view_shape(f, v, &vt);
    int k = 0;
    size_t ko = 0, ka = 0;
    ok[0] = addr[0] = 0;
    if (in->opnd[3] >= 0) { /* peer view: rank opnd3's copy */
        bk_gpu_line(em, "bool blk_pok;");
        bk_gpu_line(em, "%s *const blk_pd = blk_peer(blk_rc, p_%s.data, (long long)v%d, blk_pok);",
                    bk_gpu_stype(pp->dtype), p, in->opnd[3]);
        ko = (size_t)snprintf(ok, okn, "blk_pok && ");
    }
    for (int d = 0; d < v->ndims; d++) {
        char c[200], t[BK_GPU_EXPR / 4], sv[BK_GPU_SVAL]; /* c: a coordinate of ename ("e") */
        switch (v->d[d].kind) {
        case IDX_SCALAR:
            bk_gpu_sval(em, v->d[d].val, forid, iv, sv, sizeof sv);
            bk_gpu_line(em, "const long long c%d = %s;", d, sv);
            break;
        case IDX_RANGE:
            bk_gpu_sval(em, v->d[d].val, forid, iv, sv, sizeof sv);
            bk_gpu_coord(c, sizeof c, &vt, k++, ename);
            bk_gpu_line(em, "const long long c%d = (long long)%s + %s;", d, sv, c);
            break;
        case IDX_TILE: {
            const IrType *tt = &f->ins[v->d[d].val].type;
            size_t kt = 0;
            long long st = 1;
            t[0] = 0;
            for (int j = tt->rank - 1; j >= 0; j--) {
                bk_gpu_coord(c, sizeof c, &vt, k + j, ename);
                kt += (size_t)snprintf(t + kt, sizeof t - kt, "%s%s * %lld",
                                       kt ? " + " : "", c, st);
                st *= tt->shape[j];
                if (kt >= sizeof t)
                    break;
            }
            if (kt >= sizeof t) /* IR_MAX_RANK terms of a coordinate of ename */
                bk_gpu_fail(em, "internal: a gather index of kernel %s is too long", f->name);
            k += tt->rank;
            bk_gpu_line(em, "const long long c%d = BLK_SLD(v%d[%s]);", d, v->d[d].val, t);
            break;
        }
        }
        /* 0 <= c < shape as one unsigned compare (shapes are >= 0) */
        ko += (size_t)snprintf(ok + ko, okn > ko ? okn - ko : 0,
                               "%s(unsigned long long)c%d < (unsigned long long)p_%s.shape[%d]",
                               d ? " && " : "", d, p, d);
        /* IR_ASSUME_UNIT_INNER: the launch guarantees stride[R-1] == 1 */
        if (d == v->ndims - 1 && (pp->assume & IR_ASSUME_UNIT_INNER))
            ka += (size_t)snprintf(addr + ka, addrn > ka ? addrn - ka : 0,
                                   "%sc%d", d ? " + " : "", d);
        else
            ka += (size_t)snprintf(addr + ka, addrn > ka ? addrn - ka : 0,
                                   "%sc%d * p_%s.stride[%d]", d ? " + " : "", d,
                                   p, d);
    }
    if (!v->ndims) {
        snprintf(ok, okn, in->opnd[3] >= 0 ? "blk_pok" : "true");
        snprintf(addr, addrn, "0");
    }
    if (ko >= okn || ka >= addrn) /* callers hold BK_GPU_VIEW bytes */
        bk_gpu_fail(em, "internal: the bounds test or address of a view of %s in kernel %s "
                    "is too long", p, f->name);
}

void bk_gpu_view(BkGpuEm *em, int id, char *ok, size_t okn, char *addr,
                 size_t addrn)
{
    bk_gpu_view_at(em, id, "e", -1, NULL, ok, okn, addr, addrn);
}

void bk_gpu_base(BkGpuEm *em, int id, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[id];
    if (in->opnd[3] >= 0)
        snprintf(buf, n, "blk_pd");
    else
        snprintf(buf, n, "p_%s.data", em->f->params[in->param].name);
}

/* " && vM[E]" for a mask tile at flat element E, " && vM" for a scalar */
static void mask_term_at(BkGpuEm *em, int mask, const char *ename, char *buf,
                         size_t n)
{
    buf[0] = 0;
    if (mask < 0)
        return;
    if (em->f->ins[mask].type.rank > 0)
        snprintf(buf, n, " && BLK_SLD(v%d[%s])", mask, ename);
    else
        snprintf(buf, n, " && v%d", mask);
}

/* Opens the loop over the vectors of an N-element tile (thread t takes
 * vectors t, t + NT, ...: flat elements [e, e + W)), and declares
 * blk_mall = the mask is on for all W elements (" && blk_mall" in m). */
static void vec_open(BkGpuEm *em, long long N, int W, int mask, char *m, size_t mn)
{
    char note[64];
    snprintf(note, sizeof note, " /* %d-element (16-byte) vectors */", W);
    bk_gpu_for_e(em, W, N, note);
    em->indent++;
    m[0] = 0;
    if (mask >= 0 && em->f->ins[mask].type.rank > 0) {
        bk_gpu_line(em, "bool blk_mall = true;");
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) blk_mall = blk_mall && BLK_SLD(v%d[e + blk_j]);",
                    W, mask);
        snprintf(m, mn, " && blk_mall");
    } else {
        mask_term_at(em, mask, "e", m, mn);
    }
    bk_gpu_line(em, "bool blk_full;");
}

/* vec_open for a BLOCKED tile of type t: one iteration per run of its
 * registers (its runs are the 16-byte vectors). */
static void blk_vec_open(BkGpuEm *em, const IrType *t, int mask, char *m, size_t mn)
{
    int W = bk_gpu_blk_w(em, t);
    bk_gpu_blk_open(em, t, true);
    m[0] = 0;
    if (mask >= 0 && em->f->ins[mask].type.rank > 0) {
        bk_gpu_line(em, "bool blk_mall = true;");
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) blk_mall = blk_mall && BLK_SLD(v%d[e + blk_j]);",
                    W, mask);
        snprintf(m, mn, " && blk_mall");
    } else {
        mask_term_at(em, mask, "e", m, mn);
    }
    bk_gpu_line(em, "bool blk_full;");
}

/* ------------------------------------------------------------ load / store */

static void load_scalar(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    int dt = in->type.dtype;
    char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], m[64], pad[128], base[BK_GPU_NAME + 16];
    bk_gpu_base(em, id, base, sizeof base);
    mask_term_at(em, in->opnd[0], "e", m, sizeof m);
    if (in->opnd[1] >= 0)
        snprintf(pad, sizeof pad, "v%d", in->opnd[1]);
    else
        bk_gpu_to_s(pad, sizeof pad, dt, "0");
    if (in->type.rank == 0) {
        bk_gpu_line(em, "%s v%d;", bk_gpu_stype(dt), id);
        bk_gpu_line(em, "{");
        em->indent++;
        bk_gpu_view(em, id, ok, sizeof ok, addr, sizeof addr);
        bk_gpu_line(em, "v%d = (%s%s) ? %s[%s] : %s;", id, ok, m, base, addr,
                    pad);
        em->indent--;
        bk_gpu_line(em, "}");
        return;
    }
    char se[128];
    bk_gpu_swz_idx(em, id, "e", se, sizeof se);
    bk_gpu_decl_tile(em, id);
    if (em->lay[id] == BK_LAY_BLOCKED) {
        snprintf(se, sizeof se, "blk_q");
        bk_gpu_blk_open(em, &in->type, false);
    } else {
        bk_gpu_loop_open(em, &in->type);
    }
    bk_gpu_view(em, id, ok, sizeof ok, addr, sizeof addr);
    bk_gpu_line(em, "BLK_SST(v%d[%s]) = (%s%s) ? %s[%s] : %s;", id, se, ok, m, base, addr,
                pad);
    bk_gpu_loop_close(em);
}

/* The body of a vector load or store of instruction id after vec_open (m:
 * its mask term over the W elements at e): one 16-byte access when they
 * are all in bounds and on (blk_full), else element by element with the
 * per-element mask. pad: a load into vID, pad where an element is cut;
 * NULL: a store of blk_vb. Closes vec_open's loop. */
static void vec_access(BkGpuEm *em, int id, int W, int mask, const char *m,
                       const char *base, const char *pad)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const char *p = f->params[in->param].name;
    int I = f->views[in->view].ndims - 1;
    char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], mj[64];
    bk_gpu_line(em, "{");
    em->indent++;
    bk_gpu_view_at(em, id, "e", -1, NULL, ok, sizeof ok, addr, sizeof addr);
    /* c is a multiple of W: with the innermost extent a multiple of 16
     * (IR_ASSUME_DIM16), c < shape already means c + W <= shape */
    if (f->params[in->param].assume & IR_ASSUME_DIM16(I))
        bk_gpu_line(em, "blk_full = %s%s;", ok, m);
    else
        bk_gpu_line(em, "blk_full = %s && c%d + %d <= p_%s.shape[%d]%s;", ok, I,
                    W, p, I, m);
    char se[128], sj[128];
    bk_gpu_swz_idx(em, id, "e", se, sizeof se);
    bk_gpu_swz_idx(em, id, "blk_e", sj, sizeof sj);
    if (em->lay[id] == BK_LAY_BLOCKED) { /* straight into this thread's registers */
        snprintf(se, sizeof se, "blk_k * %d", W);
        snprintf(sj, sizeof sj, "blk_k * %d + blk_j", W);
    }
    if (pad)
        bk_gpu_line(em, "if (blk_full) BLK_SST(*(uint4 *)&v%d[%s]) = *(const uint4 *)&%s[%s];",
                    id, se, base, addr);
    else
        bk_gpu_line(em, "if (blk_full) *(uint4 *)&%s[%s] = *(const uint4 *)blk_vb;", base,
                    addr);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "if (!blk_full) { /* cut by the bounds or the mask */");
    em->indent++;
    bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) {", W);
    em->indent++;
    bk_gpu_line(em, "const int blk_e = e + blk_j;");
    bk_gpu_view_at(em, id, "blk_e", -1, NULL, ok, sizeof ok, addr, sizeof addr);
    mask_term_at(em, mask, "blk_e", mj, sizeof mj);
    if (pad)
        bk_gpu_line(em, "BLK_SST(v%d[%s]) = (%s%s) ? %s[%s] : %s;", id, sj, ok, mj, base, addr, pad);
    else
        bk_gpu_line(em, "if (%s%s) %s[%s] = blk_vb[blk_j];", ok, mj, base, addr);
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_loop_close(em);
}

/* The vector form (see bk_gpu_vec_width). The tile's shared-memory storage
 * is 16-byte aligned (offsets are multiples of 16) and e % W == 0, so
 * &vID[e] is 16-byte aligned too. */
static void load_vec(BkGpuEm *em, int id, int W)
{
    const IrInstr *in = &em->f->ins[id];
    int dt = in->type.dtype;
    char m[64], pad[128], base[BK_GPU_NAME + 16];
    bk_gpu_base(em, id, base, sizeof base);
    if (in->opnd[1] >= 0)
        snprintf(pad, sizeof pad, "v%d", in->opnd[1]);
    else
        bk_gpu_to_s(pad, sizeof pad, dt, "0");
    bk_gpu_decl_tile(em, id);
    if (em->lay[id] == BK_LAY_BLOCKED)
        blk_vec_open(em, &in->type, in->opnd[0], m, sizeof m);
    else
        vec_open(em, ir_numel(&in->type), W, in->opnd[0], m, sizeof m);
    vec_access(em, id, W, in->opnd[0], m, base, pad);
}

void bk_gpu_emit_load(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    if (em->pipe[id] >= 0) { /* its data arrives in the ring (pipe_top) */
        const char *t = bk_gpu_stype(in->type.dtype);
        char ty[128];
        ir_type_str(&in->type, ty, sizeof ty);
        bk_gpu_line(em, "%s *v%d = (%s *)(blk_smem + %lld + (long long)(blk_it%d %% %d) * %lld); "
                    "/* %s, %s ring slot of this iteration */", t, id, t,
                    em->off[id], em->pipe[id], bk_gpu_pipe_slots(em),
                    bk_gpu_pipe_slot(em, id), ty,
                    em->tma && em->tma[id] ? "TMA" : em->dl->kind == BK_GPU_HIP ? "register-staged" : "cp.async");
        return;
    }
    if (id == em->tmaq) { /* by TMA from the producer (gpu_persist.c) */
        bk_gpu_persist_qwait(em, id);
        return;
    }
    int W = in->type.rank > 0 ? bk_gpu_vec_width(em, id) : 0;
    if (W && em->lay[id] == BK_LAY_BLOCKED && W != bk_gpu_blk_w(em, &in->type))
        W = 0; /* runs of another width: element by element */
    if (W)
        load_vec(em, id, W);
    else
        load_scalar(em, id);
}

void bk_gpu_emit_store(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], m[64], base[BK_GPU_NAME + 16];
    int val = in->opnd[0];
    const IrParam *pp = &f->params[in->param];
    bk_gpu_base(em, id, base, sizeof base);
    IrType vt;
    memset(&vt, 0, sizeof vt);
    ir_view_shape(f, &f->views[in->view], &vt);
    mask_term_at(em, in->opnd[1], "e", m, sizeof m);
    if (vt.rank == 0) {
        bk_gpu_line(em, "if (blk_tid == 0) {");
        em->indent++;
        bk_gpu_view(em, id, ok, sizeof ok, addr, sizeof addr);
        bk_gpu_line(em, "if (%s%s) %s[%s] = v%d;", ok, m, base, addr, val);
        em->indent--;
        bk_gpu_line(em, "}");
        bk_gpu_sync(em);
        return;
    }
    char rv[BK_GPU_EXPR];
    int W = bk_gpu_vec_width(em, id);
    if (em->inblk[id] && W != bk_gpu_blk_w(em, &vt))
        W = 0;
    if (!W) {
        if (em->inblk[id])
            bk_gpu_blk_open(em, &vt, false);
        else
            bk_gpu_loop_open(em, &vt);
        bk_gpu_view(em, id, ok, sizeof ok, addr, sizeof addr);
        bk_gpu_raw(em, val, "e", rv, sizeof rv);
        bk_gpu_line(em, "if (%s%s) %s[%s] = %s;", ok, m, base, addr, rv);
        bk_gpu_loop_close(em);
        return;
    }
    /* vector form: the W values first (in the tensor's storage type, as the
     * scalar form's assignment converts them), then one 16-byte store */
    if (em->inblk[id])
        blk_vec_open(em, &vt, in->opnd[1], m, sizeof m);
    else
        vec_open(em, ir_numel(&vt), W, in->opnd[1], m, sizeof m);
    bk_gpu_line(em, "alignas(16) %s blk_vb[%d];", bk_gpu_stype(pp->dtype), W);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_raw(em, val, "e + blk_j", rv, sizeof rv);
    bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) blk_vb[blk_j] = %s;", W, rv);
    vec_access(em, id, W, in->opnd[1], m, base, NULL);
}

/* ------------------------------------------------------------ cp.async
 *
 * A FOR with a constant step st in a kernel with stages(S), S >= 2, on
 * CUDA: each tile load directly in its body that
 *   - has the vector form (16-byte aligned runs: cp.async.cg moves 16),
 *   - has no mask, pad 0 (cp.async zero-fills), no peer view,
 *   - reads a tensor the kernel never writes (so reading it early cannot
 *     see a different value),
 *   - has only scalar / range indices computable at a future iteration
 *     (future_ok),
 *   - is an operand of a `dot` inside the loop,
 * lives in a ring of S buffers. Iteration i (counted from 0 by blk_itF)
 * reads slot i % S. Groups: the prologue commits S - 1 groups (iterations
 * 0 .. S-2, empty if the loop is shorter); the top of iteration i waits
 * until at most S - 2 groups are pending, i.e. groups 0 .. i are complete
 * (S - 1 + i committed so far), then __syncthreads() (every thread's copies
 * of iteration i are visible, and every thread is done with iteration
 * i - 1, so slot (i - 1) % S == (i + S - 1) % S is free), then issues and
 * commits iteration i + S - 1 (an empty group past the end, so the count
 * stays uniform). Loops end with nothing in flight: the last real group is
 * waited for by its own iteration. When the loop's wgmma dot keeps its
 * group in flight across steps (gpu_wgmma.c), slot (i - 1) % S is still
 * being read at the top of iteration i: the ring prefetches D = S - 2
 * iterations ahead instead (bk_gpu_pipe_dist; wait_group D - 1, refill
 * slot (i - 2) % S, whose group every warpgroup retired before the
 * barrier). */

static bool pad_is_zero(const BkGpuEm *em, int pad)
{
    if (pad < 0)
        return true;
    const IrInstr *c = &em->f->ins[pad];
    if (c->op != IR_CONST)
        return false;
    if (dsl_is_float(c->type.dtype))
        return c->fval == 0 && !signbit(c->fval);
    return c->ival == 0;
}

/* HIP (no cp.async): a ring load's 16-byte copies per thread and
 * iteration, held in registers from the loop top to its bottom
 * (hip_stage); at most HIP_STAGE_COPIES (32 VGPRs) per load */
#define HIP_STAGE_COPIES 8
static long long hip_copies(const BkGpuEm *em, int id)
{
    long long step = (long long)em->nt * bk_gpu_vec_width(em, id);
    return (ir_numel(&em->f->ins[id].type) + step - 1) / step;
}

int bk_gpu_pipe_plan(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    for (int i = 0; i < f->nins; i++)
        em->pipe[i] = f->ins[i].op == IR_FOR ? 0 : -1;
    bool hip = em->dl->kind == BK_GPU_HIP;
    if ((em->dl->kind != BK_GPU_CUDA && !hip) || (hip && em->nohipstage) || em->nopipe ||
        em->novec || em->stages < 2)
        return 0;
    for (int fr = 0; fr < f->nins; fr++) {
        const IrInstr *F = &f->ins[fr];
        if (F->op != IR_FOR || F->dead || F->region[0] < 0)
            continue;
        const IrInstr *st = &f->ins[F->opnd[2]];
        if (st->op != IR_CONST || st->type.rank != 0 || st->ival == 0 || (hip && st->ival < 0))
            continue;
        const IrRegion *reg = &f->regions[F->region[0]];
        for (int j = 0; j < reg->n; j++) {
            int id = reg->ins[j];
            const IrInstr *in = &f->ins[id];
            if (in->dead || in->op != IR_LOAD || in->type.rank == 0 ||
                in->opnd[0] >= 0 || in->opnd[3] >= 0 || !pad_is_zero(em, in->opnd[1]) ||
                f->params[in->param].written || !bk_gpu_vec_width(em, id))
                continue;
            const IrView *v = &f->views[in->view];
            bool ok = true;
            for (int d = 0; d < v->ndims && ok; d++)
                ok = v->d[d].kind != IDX_TILE && future_ok(em, v->d[d].val, fr, 0) &&
                     sval_fits(em, v->d[d].val, fr);
            bool feeds_dot = false;
            for (int u = 0; u < f->nins && ok && !feeds_dot; u++) {
                const IrInstr *o = &f->ins[u];
                int b = o->opnd[1]; /* dot(a, trans(load)) reads the load too */
                feeds_dot = !o->dead && o->op == IR_DOT &&
                            (o->opnd[0] == id || b == id ||
                             (f->ins[b].op == IR_PERMUTE && f->ins[b].opnd[0] == id)) &&
                            em->pos[u] > em->pos[fr] && em->pos[u] <= em->end[fr];
            }
            if (!ok || !feeds_dot || (hip && hip_copies(em, id) > HIP_STAGE_COPIES))
                continue;
            em->pipe[id] = fr;
            em->pipe[fr]++;
        }
    }
    return 0;
}

int bk_gpu_pipe_dist(const BkGpuEm *em, int fr)
{
    return em->stages - 1 - ((em->wga && em->wga[fr]) || (em->wgk && em->wgk[fr]) ? 1 : 0);
}

int bk_gpu_pipe_slots(const BkGpuEm *em)
{
    return em->dl->kind == BK_GPU_HIP ? 2 : em->stages;
}

long long bk_gpu_pipe_slot(const BkGpuEm *em, int id)
{
    const IrType *t = &em->f->ins[id].type;
    return (ir_numel(t) * dsl_dtype_bytes(t->dtype) + 15) & ~15LL;
}

/* The hoisted form of ring load id's prefetch (issue 12: fewer
 * instructions per mma): when exactly one view dimension dI is indexed by
 * FOR fr's induction variable itself, every other index is loop-invariant,
 * the copies are a fixed unrolled count and the run at the inner end is
 * whole (IR_ASSUME_DIM16), each copy's source pointer, its dI coordinate
 * minus the induction variable and the bounds test of the other dimensions
 * are computed once before the loop; the prefetch at the loop top then
 * tests that offset against this step's limits and advances the pointer
 * by step * stride[dI].
 * Returns dI, or -1 for the general form. */
/* Whether dim d of tensor p is a multiple of 16: the launch says so
 * (IR_ASSUME_DIM16) or its extent is static (checked at binding). */
static bool dim16(const IrParam *p, int d)
{
    return (p->assume & IR_ASSUME_DIM16(d)) || (p->dims[d] >= 0 && p->dims[d] % 16 == 0);
}

static int hoist_dim(const BkGpuEm *em, int id, int fr)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrView *v = &f->views[in->view];
    const IrParam *p = &f->params[in->param];
    int W = bk_gpu_vec_width(em, id), dI = -1;
    long long step = (long long)em->nt * W;
    if (em->nohoist || !W || f->ins[fr].type.dtype != DT_I32 || ir_numel(&in->type) > 16 * step || in->opnd[3] >= 0 ||
        !dim16(p, v->ndims - 1))
        return -1;
    for (int d = 0; d < v->ndims; d++) {
        int x = v->d[d].val;
        if (v->d[d].kind == IDX_TILE)
            return -1;
        if (x == fr && dI < 0)
            dI = d;
        else if (x == fr || (f->ins[x].op != IR_CONST && em->pos[x] > em->pos[fr] &&
                             em->pos[x] <= em->end[fr]))
            return -1;
    }
    return dI;
}

/* Whether FOR fr's hoisted copies test their limits in 32 bits (issue 12,
 * benchmarks/README.md round 18): its step is positive and its start a
 * constant with start + D * step >= 0, so every prefetched iteration has
 * 0 <= blk_fl < its i32 end: blk_fiv is exact, the lower limit is 0 and the
 * upper one is min(shape, INT_MAX) - blk_fiv, one subtract and one max per
 * k step on the loop-invariant clamp (BLKC_GPU_NOCPLIM32=1: both limits
 * clamped in 64 bits each step). The same test while shape <= INT_MAX;
 * past that the loop's i32 end already cuts the extent. */
static bool lim32(const BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[fr];
    const IrInstr *a = &f->ins[F->opnd[0]];
    long long st = (long long)f->ins[F->opnd[2]].ival;
    return !em->nocplim32 && st > 0 && a->op == IR_CONST && a->type.rank == 0 &&
           (long long)a->ival + st * bk_gpu_pipe_dist(em, fr) >= 0;
}

/* Whether the loop top of FOR fr tests "this prefetch is in the loop" as
 * iv < end - D * step on an i32 computed once (issue 12, round 18), not in
 * 64 bits per k step: exact for an i32 loop with a positive step (the
 * difference clamped at INT_MIN, where no iv passes; BLKC_GPU_NOCPGUARD32=1
 * keeps the 64-bit test). */
static bool guard32(const BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[fr];
    long long st = (long long)f->ins[F->opnd[2]].ival;
    return !em->nocpguard32 && F->type.dtype == DT_I32 && st > 0 &&
           st * bk_gpu_pipe_dist(em, fr) < (1LL << 30);
}

/* Before FOR fr (after its prologue): the hoisted copy state of each ring
 * load with a hoist_dim, at the first iteration the loop top prefetches
 * (induction variable start + (S - 1) * step). */
static void pipe_hoist(BkGpuEm *em, int fr)
{
    const IrFunc *f = em->f;
    const IrInstr *F = &f->ins[fr];
    long long st = (long long)f->ins[F->opnd[2]].ival;
    for (int id = 0; id < f->nins; id++) {
        int dI;
        if (f->ins[id].op != IR_LOAD || em->pipe[id] != fr || (dI = hoist_dim(em, id, fr)) < 0)
            continue;
        const IrInstr *in = &f->ins[id];
        const IrView *v = &f->views[in->view];
        const IrParam *p = &f->params[in->param];
        const char *t = bk_gpu_stype(p->dtype);
        int W = bk_gpu_vec_width(em, id);
        long long N = ir_numel(&in->type), step = (long long)em->nt * W;
        long long trips = (N + step - 1) / step;
        char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], base[BK_GPU_NAME + 16], rest[BK_GPU_VIEW];
        size_t ko = 0;
        bk_gpu_base(em, id, base, sizeof base);
        bk_gpu_line(em, "/* v%d: %s, the prefetch's copies hoisted (coordinate %d follows the loop) */",
                    id, p->name, dI);
        bk_gpu_line(em, "const %s *blk_hp%d[%lld]; int blk_ho%d[%lld];", t, id, trips, id, trips);
        bk_gpu_line(em, "const long long blk_hd%d = %lldLL * p_%s.stride[%d];", id, st,
                    p->name, dI);
        if (lim32(em, fr))
            bk_gpu_line(em, "const int blk_sc%d = p_%s.shape[%d] < 2147483647LL ? (int)p_%s.shape[%d] : 2147483647;",
                        id, p->name, dI, p->name, dI);
        bk_gpu_line(em, "{");
        em->indent++;
        bk_gpu_line(em, "const long long blk_fl = (long long)v%d + %lldLL;", F->opnd[0],
                    st * bk_gpu_pipe_dist(em, fr));
        bk_gpu_line(em, "const %s blk_fiv = (%s)blk_fl;", bk_gpu_stype(F->type.dtype),
                    bk_gpu_stype(F->type.dtype));
        bk_gpu_for_e(em, W, N, "");
        em->indent++;
        bk_gpu_view_at(em, id, "e", fr, "blk_fiv", ok, sizeof ok, addr, sizeof addr);
        rest[0] = 0;
        for (int d = 0; d < v->ndims; d++)
            if (d != dI)
                ko += (size_t)snprintf(rest + ko, sizeof rest > ko ? sizeof rest - ko : 0,
                                       "%s(unsigned long long)c%d < (unsigned long long)p_%s.shape[%d]",
                                       ko ? " && " : "", d, p->name, d);
        bk_gpu_line(em, "blk_hp%d[blk_i] = %s + (%s);", id, base, addr);
        /* the other dimensions out of bounds: -1, below every iteration's
         * lower limit (pipe_issue_hoisted) */
        if (ko)
            bk_gpu_line(em, "blk_ho%d[blk_i] = (%s) ? (int)(c%d - blk_fl) : -1;", id, rest, dI);
        else
            bk_gpu_line(em, "blk_ho%d[blk_i] = (int)(c%d - blk_fl);", id, dI);
        em->indent--;
        bk_gpu_line(em, "}");
        em->indent--;
        bk_gpu_line(em, "}");
    }
}

/* The loop top's copies of hoisted ring load id (see hoist_dim). */
static void pipe_issue_hoisted(BkGpuEm *em, int fr, int id, int dI, const char *slot)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrParam *p = &f->params[in->param];
    int W = bk_gpu_vec_width(em, id), sz = dsl_dtype_bytes(p->dtype);
    char base[BK_GPU_NAME + 16], se[128];
    bk_gpu_base(em, id, base, sizeof base);
    bk_gpu_swz_idx(em, id, "e", se, sizeof se);
    bk_gpu_line(em, "{ /* v%d: %s, hoisted */", id, p->name);
    em->indent++;
    bk_gpu_line(em, "unsigned char *const blk_ring = blk_smem + %lld + (long long)(%s) * %lld;",
                em->off[id], slot, bk_gpu_pipe_slot(em, id));
    /* 0 <= blk_fl + ho < shape as lo <= ho < hi, both limits clamped to
     * [0, INT_MAX] (ho is small or -1), one unsigned 32-bit compare per
     * copy against limits computed once per k step */
    bool l32 = lim32(em, fr);
    if (l32) { /* blk_fl >= 0: no lower limit (see lim32) */
        /* as a difference then a clamp: `sc > fiv ? sc - fiv : 0` costs
         * the GEMM 16 instructions a step more (nvcc, sm_90) */
        bk_gpu_line(em, "const int blk_hx = blk_sc%d - blk_fiv;", id);
        bk_gpu_line(em, "const unsigned blk_hr = (unsigned)(blk_hx > 0 ? blk_hx : 0);");
    } else {
        bk_gpu_line(em, "const long long blk_lo = blk_fl >= 0 ? 0 : blk_fl < -2147483647LL ? 2147483647LL : -blk_fl;");
        bk_gpu_line(em, "const long long blk_hi = p_%s.shape[%d] - blk_fl;", p->name, dI);
        bk_gpu_line(em, "const unsigned blk_hr = (unsigned)((blk_hi < 0 ? 0 : blk_hi > 2147483647LL ? 2147483647LL : blk_hi) - blk_lo);");
    }
    /* a tile swizzled by blk_swz repeats its XOR phase every 8 rows: when a
     * trip of the copy loop moves whole periods (step a multiple of 8
     * rows), copy blk_i's shared offset is the first's plus blk_i * step,
     * an immediate, where blk_swz per copy cost a register each and two
     * adds (BLKC_GPU_NOCPIMM=1 keeps that) */
    long long step = (long long)em->nt * W;
    int C = bk_gpu_swz_cols(em, id);
    if (!em->nocpimm && C && step % (8LL * C) == 0) {
        char e0[64];
        snprintf(e0, sizeof e0, "blk_tid * %d", W);
        bk_gpu_swz_idx(em, id, e0, se, sizeof se);
        bk_gpu_line(em, "const int blk_se = %s; /* copy blk_i: + blk_i * %lld */", se, step);
        snprintf(se, sizeof se, "(blk_se + blk_i * %lld)", step);
    }
    bk_gpu_for_e(em, W, (long long)ir_numel(&in->type), "");
    em->indent++;
    if (l32) /* ho = -1 (another dimension out): above every limit */
        bk_gpu_line(em, "const int blk_nb = (unsigned)blk_ho%d[blk_i] < blk_hr ? %d : 0;", id, W * sz);
    else
        bk_gpu_line(em, "const int blk_nb = (unsigned)(blk_ho%d[blk_i] - (int)blk_lo) < blk_hr ? %d : 0;",
                    id, W * sz);
    /* the source as it is even when out of bounds: with src-size 0
     * cp.async reads nothing (CUTLASS's cp_async_zfill does the same) */
    bk_gpu_line(em, "blk_cp_async16(blk_ring + (long long)%s * %d, (const void *)blk_hp%d[blk_i], blk_nb);",
                se, sz, id);
    bk_gpu_line(em, "blk_hp%d[blk_i] += blk_hd%d;", id, id);
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
}

/* Issues the cp.async copies of every ring load of FOR fr for the
 * iteration whose induction variable is `iv`, into slot `slot`; at the
 * loop top (top), hoisted loads take their hoisted form. */
static void pipe_issue(BkGpuEm *em, int fr, const char *slot, const char *iv, bool top)
{
    const IrFunc *f = em->f;
    for (int id = 0; id < f->nins; id++) {
        if (f->ins[id].op != IR_LOAD || em->pipe[id] != fr)
            continue;
        int dI = top ? hoist_dim(em, id, fr) : -1;
        if (dI >= 0) {
            pipe_issue_hoisted(em, fr, id, dI, slot);
            continue;
        }
        const IrInstr *in = &f->ins[id];
        const IrParam *p = &f->params[in->param];
        int W = bk_gpu_vec_width(em, id), sz = dsl_dtype_bytes(p->dtype);
        int I = f->views[in->view].ndims - 1;
        char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], base[BK_GPU_NAME + 16];
        bk_gpu_base(em, id, base, sizeof base);
        bk_gpu_line(em, "{ /* v%d: %s */", id, p->name);
        em->indent++;
        bk_gpu_line(em, "unsigned char *const blk_ring = blk_smem + %lld + (long long)(%s) * %lld;",
                    em->off[id], slot, bk_gpu_pipe_slot(em, id));
        bk_gpu_for_e(em, W, (long long)ir_numel(&in->type), "");
        em->indent++;
        bk_gpu_view_at(em, id, "e", fr, iv, ok, sizeof ok, addr, sizeof addr);
        /* c%d is a multiple of W: in bounds at its start means the first
         * min(W, shape - c) elements are; cp.async zero-fills the rest */
        if (p->assume & IR_ASSUME_DIM16(I)) /* the W all in, as in vec_access */
            bk_gpu_line(em, "const int blk_nb = (%s) ? %d : 0;", ok, W * sz);
        else
            bk_gpu_line(em, "const int blk_nb = (%s) ? (int)(p_%s.shape[%d] - c%d >= %d ? %d : p_%s.shape[%d] - c%d) * %d : 0;",
                        ok, p->name, I, I, W, W, p->name, I, I, sz);
        char se[128];
        bk_gpu_swz_idx(em, id, "e", se, sizeof se);
        bk_gpu_line(em, "blk_cp_async16(blk_ring + (long long)%s * %d, blk_nb ? (const void *)&%s[%s] : (const void *)%s, blk_nb);",
                    se, sz, base, addr, base);
        em->indent--;
        bk_gpu_line(em, "}");
        em->indent--;
        bk_gpu_line(em, "}");
    }
}

/* ------------------------------------------------------------ HIP rings
 *
 * AMD GPUs have no cp.async: a ring load's next tile is staged through
 * registers instead (the usual LDS double buffer). The prologue copies
 * iteration 0 into slot 0 and meets a barrier; the top of iteration i
 * loads iteration i + 1's 16-byte vectors into registers (blk_pr<id>,
 * zeros where a vector is out of bounds, element by element where it is
 * cut), so the global loads are in flight while the body computes on
 * slot i % 2; the bottom stores them into slot (i + 1) % 2 and meets the
 * barrier that makes them visible. That slot was last read in iteration
 * i - 1, before that iteration's bottom barrier. Two slots whatever S
 * (the distance is one iteration), one barrier per iteration; where the
 * second slot would leave one block per CU (64 KiB of LDS) and the loads
 * in the body two, the kernel keeps those (bk_gpu_em_init), as it does
 * with BLKC_GPU_NOHIPSTAGE=1. */

/* Load iteration `fiv`'s vectors of ring load id into blk_pr<id> */
static void hip_load(BkGpuEm *em, int fr, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrParam *p = &f->params[in->param];
    int W = bk_gpu_vec_width(em, id), I = f->views[in->view].ndims - 1;
    char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], base[BK_GPU_NAME + 16];
    const char *t = bk_gpu_stype(p->dtype);
    bk_gpu_base(em, id, base, sizeof base);
    bk_gpu_line(em, "{ /* v%d: %s, into registers */", id, p->name);
    em->indent++;
    bk_gpu_for_e(em, W, (long long)ir_numel(&in->type), "");
    em->indent++;
    bk_gpu_line(em, "bool blk_full;");
    bk_gpu_line(em, "{");
    em->indent++;
    bk_gpu_view_at(em, id, "e", fr, "blk_fiv", ok, sizeof ok, addr, sizeof addr);
    if (p->assume & IR_ASSUME_DIM16(I)) /* c < shape means c + W <= shape */
        bk_gpu_line(em, "blk_full = %s;", ok);
    else
        bk_gpu_line(em, "blk_full = %s && c%d + %d <= p_%s.shape[%d];", ok, I, W, p->name, I);
    bk_gpu_line(em, "if (blk_full) blk_pr%d[blk_i] = *(const uint4 *)&%s[%s];", id, base, addr);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "if (!blk_full) { /* cut by the bounds: element by element, zeros outside */");
    em->indent++;
    bk_gpu_line(em, "alignas(16) %s blk_vb[%d];", t, W);
    bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) {", W);
    em->indent++;
    bk_gpu_line(em, "const int blk_e = e + blk_j;");
    bk_gpu_view_at(em, id, "blk_e", fr, "blk_fiv", ok, sizeof ok, addr, sizeof addr);
    char zero[64];
    bk_gpu_to_s(zero, sizeof zero, p->dtype, "0");
    bk_gpu_line(em, "blk_vb[blk_j] = (%s) ? %s[%s] : %s;", ok, base, addr, zero);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "blk_pr%d[blk_i] = *(const uint4 *)blk_vb;", id);
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
}

/* Store blk_pr<id> of every ring load of fr into slot SLOT */
static void hip_store(BkGpuEm *em, int fr, const char *slot)
{
    const IrFunc *f = em->f;
    for (int id = 0; id < f->nins; id++) {
        if (f->ins[id].op != IR_LOAD || em->pipe[id] != fr)
            continue;
        int W = bk_gpu_vec_width(em, id), sz = dsl_dtype_bytes(f->ins[id].type.dtype);
        char se[128];
        bk_gpu_swz_idx(em, id, "e", se, sizeof se);
        bk_gpu_line(em, "{ /* v%d: %s, registers -> slot %s */", id,
                    f->params[f->ins[id].param].name, slot);
        em->indent++;
        bk_gpu_line(em, "unsigned char *const blk_ring = blk_smem + %lld + (long long)(%s) * %lld;",
                    em->off[id], slot, bk_gpu_pipe_slot(em, id));
        bk_gpu_for_e(em, W, (long long)ir_numel(&f->ins[id].type), "");
        bk_gpu_line(em, "    BLK_SST(*(uint4 *)(blk_ring + (long long)(%s) * %d)) = blk_pr%d[blk_i];",
                    se, sz, id);
        bk_gpu_line(em, "}");
        em->indent--;
        bk_gpu_line(em, "}");
    }
}

/* `uint4 blk_pr<id>[copies];` for every ring load of fr */
static void hip_regs(BkGpuEm *em, int fr)
{
    for (int id = 0; id < em->f->nins; id++)
        if (em->f->ins[id].op == IR_LOAD && em->pipe[id] == fr)
            bk_gpu_line(em, "uint4 blk_pr%d[%lld]; /* v%d's next tile (16-byte vectors) */", id,
                        hip_copies(em, id), id);
}

static void hip_load_all(BkGpuEm *em, int fr)
{
    for (int id = 0; id < em->f->nins; id++)
        if (em->f->ins[id].op == IR_LOAD && em->pipe[id] == fr)
            hip_load(em, fr, id);
}

static void hip_prologue(BkGpuEm *em, int fr)
{
    const IrInstr *F = &em->f->ins[fr];
    const char *t = bk_gpu_stype(F->type.dtype);
    bk_gpu_line(em, "// stages(%d) on an AMD GPU: %d ring load(s) of 2 slots, staged through "
                "registers one iteration ahead (no cp.async)", em->stages, em->pipe[fr]);
    bk_gpu_line(em, "int blk_it%d = 0; /* iteration number: ring slot blk_it %% 2 */", fr);
    bk_gpu_line(em, "if (v%d < v%d) { /* iteration 0 into slot 0 */", F->opnd[0], F->opnd[1]);
    em->indent++;
    bk_gpu_line(em, "const %s blk_fiv = v%d;", t, F->opnd[0]);
    hip_regs(em, fr);
    hip_load_all(em, fr);
    hip_store(em, fr, "0");
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_sync(em);
}

static void hip_top(BkGpuEm *em, int fr)
{
    const IrInstr *F = &em->f->ins[fr];
    const char *t = bk_gpu_stype(F->type.dtype);
    hip_regs(em, fr);
    bk_gpu_line(em, "const bool blk_nx%d = (long long)v%d + %lldLL < (long long)v%d; /* a next iteration */",
                fr, fr, (long long)em->f->ins[F->opnd[2]].ival, F->opnd[1]);
    bk_gpu_line(em, "if (blk_nx%d) { /* its tiles into registers, in flight during the body */", fr);
    em->indent++;
    bk_gpu_line(em, "const %s blk_fiv = (%s)(v%d + v%d);", t, t, fr, F->opnd[2]);
    hip_load_all(em, fr);
    em->indent--;
    bk_gpu_line(em, "}");
}

void bk_gpu_pipe_bottom(BkGpuEm *em, int fr)
{
    if (em->dl->kind != BK_GPU_HIP || em->pipe[fr] <= 0)
        return;
    char slot[64];
    snprintf(slot, sizeof slot, "(blk_it%d + 1) %% 2", fr);
    bk_gpu_line(em, "if (blk_nx%d) { /* the next iteration's tiles into its slot */", fr);
    em->indent++;
    hip_store(em, fr, slot);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_sync(em); /* they are visible; every wave is done with this slot */
}

void bk_gpu_pipe_ahead(BkGpuEm *em, int fr, int base, const char *ahead)
{
    const IrInstr *F = &em->f->ins[fr];
    const char *t = bk_gpu_stype(F->type.dtype);
    bool up = em->f->ins[F->opnd[2]].ival > 0;
    bk_gpu_line(em, "const long long blk_fl = (long long)v%d + %s;", base, ahead);
    bk_gpu_line(em, "if (blk_fl %s (long long)v%d) {", up ? "<" : ">", F->opnd[1]);
    em->indent++;
    bk_gpu_line(em, "const %s blk_fiv = (%s)blk_fl;", t, t);
}

void bk_gpu_pipe_prologue(BkGpuEm *em, int fr)
{
    if (em->tma_fr == fr) { /* the ring of wgmma operands TMA fills */
        bk_gpu_tma_prologue(em, fr);
        return;
    }
    if (em->dl->kind == BK_GPU_HIP) {
        hip_prologue(em, fr);
        return;
    }
    const IrInstr *F = &em->f->ins[fr];
    int S = em->stages, D = bk_gpu_pipe_dist(em, fr);
    long long st = (long long)em->f->ins[F->opnd[2]].ival;
    char ahead[64];
    bk_gpu_line(em, "// stages(%d): %d cp.async ring load(s), issued %d iteration(s) ahead%s",
                S, em->pipe[fr], D, D < S - 1 ? " (a slot stays with the wgmma group in flight)" : "");
    if (S < em->f->stages)
        bk_gpu_line(em, "// (the kernel asks for stages(%d): %d slots of these rings would pass "
                    "the shared memory a block may have)", em->f->stages, em->f->stages);
    bk_gpu_line(em, "int blk_it%d = 0; /* iteration number: ring slot blk_it %% %d */",
                fr, S);
    bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) {", D);
    em->indent++;
    snprintf(ahead, sizeof ahead, "(long long)blk_s * %lldLL", st);
    bk_gpu_pipe_ahead(em, fr, F->opnd[0], ahead);
    pipe_issue(em, fr, "blk_s", "blk_fiv", false);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "blk_cp_commit(); /* group blk_s, maybe empty */");
    em->indent--;
    bk_gpu_line(em, "}");
    pipe_hoist(em, fr);
    if (guard32(em, fr)) {
        long long ah = st * D;
        bk_gpu_line(em, "const int blk_pe%d = v%d > %lld ? v%d - %lld : -2147483647 - 1; /* prefetch while iv < this */",
                    fr, F->opnd[1], ah - 2147483648LL, F->opnd[1], ah);
    }
}

void bk_gpu_pipe_top(BkGpuEm *em, int fr)
{
    if (em->tma_fr == fr) {
        bk_gpu_tma_top(em, fr);
        return;
    }
    if (em->dl->kind == BK_GPU_HIP) {
        hip_top(em, fr);
        return;
    }
    const IrInstr *F = &em->f->ins[fr];
    int S = em->stages, D = bk_gpu_pipe_dist(em, fr);
    long long st = (long long)em->f->ins[F->opnd[2]].ival;
    char ahead[64], slot[64];
    if (em->fp_fr == fr) { /* in the dot's last k step (gpu_fragpipe.c) */
        bk_gpu_line(em, "/* group blk_it%d landed, and the barrier met, in the last k step before */",
                    fr);
    } else {
        bk_gpu_line(em, "blk_cp_wait<%d>(); /* this thread's copies of group blk_it%d have landed */",
                    D - 1, fr);
        /* ... everyone's; slot (blk_it + D) % S is free: iteration blk_it - 1
         * (D = S - 1) or, with a wgmma group in flight, blk_it - 2 (D = S - 2,
         * retired by every warpgroup's wait_group 1 in iteration blk_it - 1) */
        bk_gpu_sync(em);
    }
    bk_gpu_line(em, "{ /* prefetch iteration blk_it%d + %d */", fr, D);
    em->indent++;
    snprintf(ahead, sizeof ahead, "%lldLL", st * D);
    if (guard32(em, fr)) {
        bk_gpu_line(em, "const long long blk_fl = (long long)v%d + %s;", fr, ahead);
        bk_gpu_line(em, "if (v%d < blk_pe%d) {", fr, fr);
        em->indent++;
        bk_gpu_line(em, "const int blk_fiv = (int)blk_fl;");
    } else {
        bk_gpu_pipe_ahead(em, fr, fr, ahead);
    }
    bk_gpu_line(em, "(void)blk_fiv; /* unused when every load is hoisted */");
    snprintf(slot, sizeof slot, "(blk_it%d + %d) %% %d", fr, D, S);
    pipe_issue(em, fr, slot, "blk_fiv", true);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_line(em, "blk_cp_commit();");
    em->indent--;
    bk_gpu_line(em, "}");
}
