/* fuse.c — elementwise fusion for the CPU backend.
 *
 * Without it every tile op is its own loop over a stack buffer. Here:
 *
 *  1. Inline values (cpu_fuse_analyze sets g->inl): an elementwise op (any
 *     F_ELEM op, CVT and SELECT included), a BCAST, a RESHAPE or a tile
 *     CONST whose only use is an elementwise op of the same shape in the
 *     same region (a tile CONST or ARANGE: whose every use is such an op,
 *     anywhere), or whose several uses are all such ops (or stores) in its
 *     region when it costs at most REMAT_OPS cheap ops per element
 *     (remat_cost: adds, compares, selects ...; no exp, no division):
 *     recomputing `where(inside, x - mean, 0)` in each user costs less
 *     than writing it to a buffer and reading it back.
 *     Such a value gets no loop and no buffer: cpu_elem() recomputes it per
 *     element inside its consumer's loop (cpu_fused_elem), recursively, so
 *     a chain like `exp(x - m)` becomes one loop with the intermediate in a
 *     register. Each op still goes through cpu_scalar_op, so f16 / bf16 /
 *     f8 results are rounded after every op exactly as when materialized.
 *     Safe because tile buffers are never written after their defining
 *     instruction (the only aliasing buffer, the in-place DOT accumulator's
 *     VGET, is used by that DOT alone), and the consumer runs after the
 *     value in the same region, where every operand still holds the value
 *     it had at the definition.
 *
 *  2. Reductions fused into their producer (g->fred): a REDUCE sum / max /
 *     min of a materialized f32/f64 elementwise value v over contiguous rows,
 *     in v's region, is computed in v's own loop (cpu_gen_elem_reduce); v's
 *     buffer is not even written when the REDUCE is its only use. The
 *     accumulation order is the one of tile.c's vector reduction (lane j of
 *     L partial results sums elements j, j+L, ...; halving tree; tail in
 *     order), so fused and unfused results agree bit for bit (up to the sign
 *     of a zero max/min and NaN payloads).
 *
 *  3. A STORE's value may be inline too: it is then computed per element in
 *     the store's own loop and written straight to the tensor, e.g. the
 *     `e / sum(e)` of softmax.
 *
 *  4. Loads read in place (g->inpl, inplace_load): a LOAD whose tile nobody
 *     could see change before its last read keeps its tile in the tensor;
 *     mem.c then points the value at global memory when the view is in
 *     bounds and contiguous at run time (and copies otherwise).
 *
 *  5. Next-tile prefetch (g->pfn, mark_prefetch): a program that reads a
 *     large row in place (softmax: X[pid, 0 +: BLOCK]) then
 *     computes on it from L1 while the memory system idles, and the next
 *     program starts with a cold row. The loop that reads such a tile
 *     last (a fused elementwise + reduce loop or a store's loop) prefetches
 *     the same bytes of the tile that follows it in memory, the next
 *     program's row when programs walk rows (chunks of consecutive program
 *     ids run on one thread, runtime/pool.c), a line per 64 bytes spread
 *     over the loop (that reader: a materialized elementwise value, its
 *     reduce fused or not). Prefetches never fault; a wrong guess costs
 *     bandwidth only.
 *
 *  6. trans(B) read as it lies (g->tdot, trans_b): a PERMUTE (1, 0) read
 *     only as a DOT's B is not copied (BLKC_CPU_NOTRANSB=1 off).
 *
 * BLKC_CPU_NOFUSE=1 in the environment disables all six (for
 * comparisons), BLKC_CPU_NOINPLACE=1 the fourth and fifth,
 * BLKC_CPU_NOPREFETCH=1 the fifth, BLKC_CPU_NOREMAT=1 the recomputing of
 * values with several users. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

/* the most ops a value used more than once may cost to be recomputed in
 * each user rather than stored and read back */
enum { REMAT_OPS = 4 };

static bool pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* BCAST whose per-element source index is cheap: a 1-element source, or
 * every extent a power of two (div/rem become shifts and masks). */
static bool cheap_bcast(const IrFunc *f, const IrInstr *in)
{
    const IrType *rt = &in->type, *ot = &f->ins[in->opnd[0]].type;
    if (ir_numel(ot) == 1)
        return true;
    if (ot->rank > rt->rank)
        return false;
    for (int i = 0; i < rt->rank; i++)
        if (!pow2(rt->shape[i]))
            return false;
    return true;
}

/* Ops cheap enough to compute again in each user's loop (remat). */
static bool cheap_op(int op)
{
    switch (op) {
    case IR_NEG: case IR_NOT: case IR_ABS: case IR_ADD: case IR_SUB: case IR_MUL:
    case IR_FMA: case IR_AND: case IR_OR: case IR_XOR: case IR_EQ: case IR_NE:
    case IR_LT: case IR_LE: case IR_GT: case IR_GE: case IR_MAX: case IR_MIN:
    case IR_SELECT: case IR_CONST: case IR_ARANGE: case IR_BCAST: case IR_RESHAPE:
        return true;
    default:
        return false;
    }
}

/* The ops an inline value v costs per element (scalar operands and
 * materialized tiles free; a splat, reshape, constant or arange free),
 * 99 when one of them is not a cheap_op. */
static int remat_cost(const CpuGen *g, int v, int depth)
{
    const IrInstr *in = &g->f->ins[v];
    if (!cheap_op(in->op) || depth > 8)
        return 99;
    int c = in->op == IR_CONST || in->op == IR_ARANGE || in->op == IR_BCAST ||
            in->op == IR_RESHAPE ? 0 : 1;
    for (int k = 0; k < ir_op_nopnd[in->op] && k < 4 && c < 99; k++) {
        int o = in->opnd[k];
        if (o >= 0 && g->f->ins[o].type.rank > 0 && g->inl[o])
            c += remat_cost(g, o, depth + 1);
    }
    return c;
}

/* Every user of v is in region r (v's uses through views excluded by the
 * caller's elem_only). */
static bool users_in(const IrFunc *f, const int *reg, int v, int r)
{
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *in = &f->ins[u];
        for (int k = 0; k < 4 && !in->dead; k++)
            if (in->opnd[k] == v && reg[u] != r)
                return false;
    }
    return true;
}

/* REDUCE r is fusible into its operand's loop: sum/max/min of an f32/f64
 * value over its last axis or over all of it (contiguous rows), a sum in
 * the same dtype, rows of at least L elements: tile.c's vector path. */
static bool fusible_reduce(CpuGen *g, int r, int L)
{
    const IrInstr *in = &g->f->ins[r];
    if (in->op != IR_REDUCE || in->dead)
        return false;
    const IrType *t = &g->f->ins[in->opnd[0]].type;
    int idt = t->dtype, kind = in->attr;
    if (idt != DT_F32 && idt != DT_F64)
        return false;
    if (kind != RED_SUM && kind != RED_MAX && kind != RED_MIN)
        return false;
    if (kind == RED_SUM && in->type.dtype != idt)
        return false;
    int64_t len = ir_numel(t);
    if (in->axis >= 0 && t->rank > 0) {
        if (in->axis != t->rank - 1)
            return false;
        len = t->shape[t->rank - 1];
    }
    return len >= L;
}

/* ------------------------------------------------------------ in place */

static bool writes_memory(int op)
{
    return op == IR_STORE || op == IR_ATOMIC || op == IR_NOTIFY ||
           op == IR_WAIT || op == IR_ASSERT || op == IR_PRINT;
}

static bool region_writes(const IrFunc *f, int r)
{
    if (r < 0 || r >= f->nregions)
        return false;
    for (int i = 0; i < f->regions[r].n; i++) {
        const IrInstr *in = &f->ins[f->regions[r].ins[i]];
        if (in->dead)
            continue;
        if (writes_memory(in->op) || region_writes(f, in->region[0]) ||
            region_writes(f, in->region[1]))
            return true;
    }
    return false;
}

/* Index in region r of the instruction of r that is e or contains e
 * (through nested regions), or -1. */
static int index_in(const IrFunc *f, const int *reg, int e, int r)
{
    for (int guard = 0; guard < f->nins && e >= 0; guard++) {
        if (reg[e] == r) {
            for (int i = 0; i < f->regions[r].n; i++)
                if (f->regions[r].ins[i] == e)
                    return i;
            return -1;
        }
        int rr = reg[e], owner = -1;
        if (rr < 0)
            return -1;
        for (int i = 0; i < f->nins && owner < 0; i++)
            if (!f->ins[i].dead && (f->ins[i].region[0] == rr ||
                                    f->ins[i].region[1] == rr))
                owner = i;
        e = owner;
    }
    return -1;
}

/* The largest index in region r at which value v's buffer is read: by v's
 * consumers, or, for an inline consumer, where that one is computed (its
 * own consumers, recursively). -2: read outside r or before `after`. */
static int last_read(CpuGen *g, const int *reg, int v, int r, int after,
                     int depth)
{
    const IrFunc *f = g->f;
    int last = after;
    if (depth > 64)
        return -2;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *in = &f->ins[u];
        if (in->dead)
            continue;
        bool reads = false;
        for (int k = 0; k < 4; k++)
            reads |= in->opnd[k] == v;
        if (!reads)
            continue;
        int at;
        if (g->inl[u] || in->op == IR_RESHAPE || g->tdot[u]) { /* tile.c: may alias v */
            at = last_read(g, reg, u, r, after, depth + 1);
        } else {
            at = index_in(f, reg, u, r);
            if (at <= after)
                at = -2;
        }
        if (at == -2)
            return -2;
        if (at > last)
            last = at;
    }
    return last;
}

/* LOAD v may leave its tile in the tensor (mem.c reads global memory in
 * place when the view is in bounds and contiguous at run time): unmasked,
 * not from a peer, and no memory write (nor a region holding one) from the
 * load up to and including the last instruction that reads the tile but
 * plain STOREs to this rank's tensors; those tensors (g->inplw, a bit per
 * param) may overlap the tile only as far as the compiler knows (a STORE
 * computing an inline value from the tile writes while it reads), so
 * mem.c checks at run time that none does and copies the tile otherwise.
 * 1: in place when contiguous; 2: also with strided rows (no STOREs in
 * between). */
/* Whether value x is a LOAD (or a RESHAPE of one) without a pad value:
 * its elements out of bounds read 0, so a product with them adds 0. */
static bool zero_pad(const IrFunc *f, int x)
{
    if (x >= 0 && f->ins[x].op == IR_RESHAPE)
        x = f->ins[x].opnd[0];
    return x >= 0 && f->ins[x].op == IR_LOAD && f->ins[x].opnd[0] < 0 && f->ins[x].opnd[1] < 0;
}

static int inplace_load(CpuGen *g, const int *reg, int v)
{
    const IrFunc *f = g->f;
    const IrInstr *in = &f->ins[v];
    if (in->dead || in->op != IR_LOAD || in->type.rank == 0 ||
        in->opnd[0] >= 0 || in->opnd[3] >= 0 || in->view < 0 || reg[v] < 0)
        return 0;
    const IrView *vw = &f->views[in->view];
    if (vw->ndims < 1 || vw->d[vw->ndims - 1].kind != IDX_RANGE)
        return 0;
    for (int d = 0; d < vw->ndims; d++)
        if (vw->d[d].kind == IDX_TILE)
            return 0;
    int r = reg[v], at = index_in(f, reg, v, r);
    if (at < 0)
        return 0;
    int last = last_read(g, reg, v, r, at, 0);
    if (last < 0)
        return 0;
    uint64_t w = 0;
    for (int i = at + 1; i <= last; i++) {
        const IrInstr *o = &f->ins[f->regions[r].ins[i]];
        if (o->dead)
            continue;
        if (region_writes(f, o->region[0]) || region_writes(f, o->region[1]))
            return 0;
        if (o->op == IR_STORE && o->opnd[3] < 0 && o->param >= 0 && o->param < 64)
            w |= (uint64_t)1 << o->param;
        else if (writes_memory(o->op))
            return 0;
    }
    g->inplw[v] = w;
    /* strided rows: a 2-D view of two ranges read only as a rank-2 DOT's
     * operand (tile.c's micro-kernel takes A's row stride; B is packed
     * from the tensor into panels). With BLKC_CPU_NOPACK=1 only A: that
     * micro-kernel walks B's rows, which in a tensor lie a large power of
     * two apart and fight over the same L1 sets (BN=128 ran 25-35% slower
     * with B read in place); its copy was the panel */
    if (w || vw->ndims != 2 || vw->d[0].kind != IDX_RANGE || in->type.rank != 2)
        return 1;
    int maxk = cpu_switch(CPU_SW_NOPACK) ? 0 : 1;
    /* every reader a matvec's w, the x of each a tile padded with 0 */
    bool mv = !cpu_switch(CPU_SW_NOMATVEC) && in->opnd[1] < 0;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (o->dead)
            continue;
        for (int k = 0; k < 4; k++)
            if (o->opnd[k] == v) {
                if (g->tdot[u]) { /* its DOT reads the rows as B's columns */
                    mv = false;
                    continue;
                }
                if (o->op != IR_DOT || k > maxk || o->type.rank != 2 || g->inl[u])
                    return 1;
                mv = mv && k == 0 && o->type.shape[1] == 1 && zero_pad(f, o->opnd[1]) &&
                     cpu_matvec_applies(g, o);
            }
    }
    /* 3: matvec.c reads only the columns in bounds (g->vkn), so a last K
     * step past the tensor's end is read in place too */
    return mv ? 3 : 2;
}

/* ------------------------------------------------------------ trans(B) */

/* A PERMUTE (1, 0) of a rank-2 tile read only as one rank-2 DOT's B
 * (`dot(q, trans(K[...]))`, a linear layer's `dot(x, trans(W[...]))`):
 * g->tdot, no copy. The DOT reads B's columns as its operand's rows:
 * tile.c packs its panels from them, matvec.c takes dot products along
 * them; an in-place LOAD under it keeps its tensor's rows (inplace_load
 * follows it to the DOT). Before, the PERMUTE copied the tile transposed
 * (column by column, from a tensor a row stride apart) and the DOT then
 * packed that copy again. */
static bool trans_b(CpuGen *g, int v)
{
    const IrFunc *f = g->f;
    const IrInstr *in = &f->ins[v];
    if (in->dead || in->op != IR_PERMUTE || in->type.rank != 2 || in->perm[0] != 1 ||
        in->perm[1] != 0 || g->inl[v] || g->uses[v] != 1)
        return false;
    int x = in->opnd[0];
    if (x < 0 || g->inl[x] || f->ins[x].type.rank != 2)
        return false;
    int readers = 0;
    for (int u = 0; u < f->nins; u++) {
        const IrInstr *o = &f->ins[u];
        if (o->dead)
            continue;
        for (int k = 0; k < 4; k++)
            if (o->opnd[k] == v) {
                if (o->op != IR_DOT || k != 1 || o->type.rank != 2 || o->opnd[0] == v ||
                    o->opnd[2] == v)
                    return false;
                readers++;
            }
        if (o->view >= 0)
            for (int d = 0; d < f->views[o->view].ndims; d++)
                if (f->views[o->view].d[d].val == v)
                    return false;
    }
    return readers == 1;
}

/* ------------------------------------------------------------ next tile */

#define PF_MIN_BYTES 4096

/* Whether value v is computed from program_id (memo: 0 unknown, 1 in
 * progress or no, 2 yes). */
static bool from_pid(const IrFunc *f, uint8_t *memo, int v)
{
    if (v < 0 || v >= f->nins)
        return false;
    if (memo[v])
        return memo[v] == 2;
    memo[v] = 1;
    const IrInstr *in = &f->ins[v];
    bool y = in->op == IR_PID;
    for (int k = 0; k < 4 && !y; k++)
        y = from_pid(f, memo, in->opnd[k]);
    memo[v] = y ? 2 : 1;
    return y;
}

/* Find the loop that reads in-place LOAD v (contiguous as a whole) last
 * and make it prefetch the next tile (see the top of the file): v in the
 * kernel's body (not a loop's), at least PF_MIN_BYTES, its view moving
 * with program_id; the reader a materialized elementwise value of as many
 * elements (its reduce fused or not). A STORE never reads an in-place
 * tile (inplace_load), so stores are no such readers. */
static void mark_prefetch(CpuGen *g, const int *reg, uint8_t *memo, int v)
{
    const IrFunc *f = g->f;
    const IrInstr *in = &f->ins[v];
    if (reg[v] != 0 || ir_numel(&in->type) *
                       dsl_dtype_bytes(in->type.dtype) < PF_MIN_BYTES)
        return;
    const IrView *vw = &f->views[in->view];
    bool moves = false;
    for (int d = 0; d < vw->ndims && !moves; d++)
        moves = from_pid(f, memo, vw->d[d].val);
    int at = index_in(f, reg, v, 0);
    int last = at < 0 ? -1 : last_read(g, reg, v, 0, at, 0);
    if (!moves || last <= at)
        return;
    int site = f->regions[0].ins[last];
    const IrInstr *s = &f->ins[site];
    bool loop = g->fred[site] || ((ir_op_flags[s->op] & F_ELEM) && !g->inl[site] &&
                                  s->type.rank > 0);
    if (loop && ir_numel(&s->type) == ir_numel(&in->type) && !g->pfn[site])
        g->pfn[site] = v + 1;
}

void cpu_prefetch_next(CpuGen *g, int site, LLVMValueRef lin, int64_t n)
{
    if (!g->pfn || !g->pfn[site])
        return;
    int ld = g->pfn[site] - 1;
    const IrType *t = &g->f->ins[ld].type;
    int es = dsl_dtype_bytes(t->dtype);
    LLVMBuilderRef b = g->b;
    LLVMValueRef p = LLVMBuildBitCast(b, g->val[ld], LLVMPointerType(g->i8, 0), "");
    LLVMValueRef off = LLVMBuildAdd(b, cpu_i64(g, ir_numel(t) * es),
                                    LLVMBuildMul(b, lin, cpu_i64(g, es), ""), "");
    int64_t lines = (n * es + 63) / 64;
    for (int64_t q = 0; q < lines; q++) {
        LLVMValueRef o = LLVMBuildAdd(b, off, cpu_i64(g, 64 * q), "");
        cpu_prefetch(g, LLVMBuildGEP2(b, g->i8, p, &o, 1, "pf"), 3);
    }
}

int cpu_red_lanes(CpuGen *g, int dt)
{
    int L = 2 * g->vecw_bytes / dsl_dtype_bytes(dt);
    return L < 8 ? 8 : L > 32 ? 32 : L;
}

void cpu_fuse_analyze(CpuGen *g)
{
    const IrFunc *f = g->f;
    int n = f->nins;
    if (n <= 0 || cpu_switch(CPU_SW_NOFUSE))
        return;
    int *reg = malloc((size_t)n * sizeof *reg);
    int *user = malloc((size_t)n * sizeof *user);
    int *red = malloc((size_t)n * sizeof *red);
    uint8_t *elem_only = malloc((size_t)n);
    if (!reg || !user || !red || !elem_only) {
        free(reg);
        free(user);
        free(red);
        free(elem_only);
        return; /* no fusion: still correct */
    }
    for (int i = 0; i < n; i++) {
        reg[i] = -1;
        user[i] = -1;
        red[i] = -1;
        elem_only[i] = 1;
    }
    for (int r = 0; r < f->nregions; r++)
        for (int k = 0; k < f->regions[r].n; k++) {
            int id = f->regions[r].ins[k];
            if (id >= 0 && id < n)
                reg[id] = r;
        }
    for (int i = 0; i < n; i++) {
        const IrInstr *in = &f->ins[i];
        if (in->dead)
            continue;
        bool el = (ir_op_flags[in->op] & F_ELEM) && in->type.rank > 0;
        for (int k = 0; k < 4; k++) {
            int o = in->opnd[k];
            if (o < 0 || o >= n)
                continue;
            user[o] = user[o] == -1 || user[o] == i ? i : -2;
            if (in->op == IR_REDUCE && k == 0 && red[o] < 0)
                red[o] = i;
            /* a STORE computes an inline value on its way to memory */
            bool st = in->op == IR_STORE && k == 0;
            if (!st && (!el || !ir_shape_eq(&in->type, &f->ins[o].type)))
                elem_only[o] = 0;
        }
        if (in->view >= 0)
            for (int d = 0; d < f->views[in->view].ndims; d++) {
                int o = f->views[in->view].d[d].val;
                if (o >= 0 && o < n) {
                    user[o] = -2;
                    elem_only[o] = 0;
                }
            }
    }
    for (int v = 0; v < n; v++) {
        const IrInstr *in = &f->ins[v];
        if (in->dead || in->type.rank == 0 || g->skip[v] || reg[v] < 0)
            continue;
        bool el = (ir_op_flags[in->op] & F_ELEM) != 0;
        if (in->op == IR_CONST || in->op == IR_ARANGE) {
            if (g->uses[v] > 0 && elem_only[v])
                g->inl[v] = 1;
            continue;
        }
        if (!el && in->op != IR_BCAST && in->op != IR_RESHAPE)
            continue;
        if (in->op == IR_RESHAPE && f->ins[in->opnd[0]].type.rank == 0)
            continue;
        if (in->op == IR_BCAST && !cheap_bcast(f, in))
            continue;
        int u = user[v];
        if (g->uses[v] == 1 && u >= 0 && elem_only[v] && reg[u] == reg[v]) {
            g->inl[v] = 1;
            continue;
        }
        /* used by several elementwise ops (or stores) of its region, and
         * cheap: computed again in each (layernorm's d = x - mean, masked,
         * read by sum(d * d) and by the store: no buffer written and read
         * back twice) */
        if (g->uses[v] > 1 && elem_only[v] && !cpu_switch(CPU_SW_NOREMAT) &&
            users_in(f, reg, v, reg[v]) && remat_cost(g, v, 0) <= REMAT_OPS) {
            g->inl[v] = 1;
            continue;
        }
        /* a materialized elementwise value: fuse one REDUCE of it */
        if (!el || (in->type.dtype != DT_F32 && in->type.dtype != DT_F64))
            continue;
        int r = red[v];
        if (r >= 0 && reg[r] == reg[v] &&
            fusible_reduce(g, r, cpu_red_lanes(g, in->type.dtype))) {
            g->fred[v] = r + 1;
            g->skip[r] = 3;
        }
    }
    if (!cpu_switch(CPU_SW_NOTRANSB) && !cpu_switch(CPU_SW_NOPACK))
        for (int v = 0; v < n; v++)
            g->tdot[v] = trans_b(g, v);
    if (g->inpl && !cpu_switch(CPU_SW_NOINPLACE))
        for (int v = 0; v < n; v++)
            g->inpl[v] = (uint8_t)inplace_load(g, reg, v);
    uint8_t *memo = calloc((size_t)n, 1);
    if (g->inpl && g->pfn && memo && !cpu_switch(CPU_SW_NOPREFETCH))
        for (int v = 0; v < n; v++)
            if (g->inpl[v] == 1)
                mark_prefetch(g, reg, memo, v);
    free(memo);
    free(reg);
    free(user);
    free(red);
    free(elem_only);
}

/* Element lin of value id computed from its operands (id's own op). */
static LLVMValueRef compute(CpuGen *g, int id, LLVMValueRef lin)
{
    const IrInstr *in = &g->f->ins[id];
    LLVMBuilderRef b = g->b;
    if (in->op == IR_CONST)
        return cpu_const(g, in->type.dtype, in->ival, in->fval);
    if (in->op == IR_ARANGE)
        return cpu_cvt(g, LLVMBuildAdd(b, lin, cpu_i64(g, in->ival), ""), DT_I64,
                       in->type.dtype);
    if (in->op == IR_RESHAPE)
        return cpu_elem(g, in->opnd[0], lin);
    if (in->op == IR_BCAST) {
        const IrType *rt = &in->type, *ot = &g->f->ins[in->opnd[0]].type;
        if (ir_numel(ot) == 1)
            return cpu_elem(g, in->opnd[0], cpu_i64(g, 0));
        int64_t os = 1;
        LLVMValueRef rest = lin, src = cpu_i64(g, 0);
        for (int i = rt->rank - 1; i >= 0; i--) {
            int k = i - (rt->rank - ot->rank);
            LLVMValueRef ext = cpu_i64(g, rt->shape[i]);
            if (k >= 0 && ot->shape[k] != 1) {
                LLVMValueRef c = i == 0 ? rest : LLVMBuildURem(b, rest, ext, "");
                src = LLVMBuildAdd(b, src, LLVMBuildMul(b, c, cpu_i64(g, os), ""), "");
            }
            if (k >= 0)
                os *= ot->shape[k];
            if (i > 0)
                rest = LLVMBuildUDiv(b, rest, ext, "");
        }
        return cpu_elem(g, in->opnd[0], src);
    }
    int nop = ir_op_nopnd[in->op];
    LLVMValueRef a[3];
    for (int i = 0; i < nop && i < 3; i++)
        a[i] = cpu_elem(g, in->opnd[i], lin);
    LLVMValueRef r = cpu_scalar_op(g, in, a);
    /* on failure the error is recorded; keep the builder's input valid */
    return r ? r : LLVMGetUndef(cpu_stype(g, in->type.dtype));
}

LLVMValueRef cpu_fused_elem(CpuGen *g, int id, LLVMValueRef lin)
{
    return compute(g, id, lin);
}

/* ------------------------------------------------------------ reductions */

static LLVMValueRef red_op(CpuGen *g, int kind, LLVMValueRef a, LLVMValueRef v)
{
    LLVMBuilderRef b = g->b;
    if (kind == RED_SUM)
        return LLVMBuildFAdd(b, a, v, "");
    /* as tile.c's fmaxmin: isnan(a) ? a : (a > v ? a : v) */
    LLVMValueRef c = LLVMBuildFCmp(b, kind == RED_MAX ? LLVMRealOGT : LLVMRealOLT,
                                   a, v, "");
    LLVMValueRef r = LLVMBuildSelect(b, c, a, v, "");
    LLVMValueRef nn = LLVMBuildFCmp(b, LLVMRealUNO, a, a, "");
    return LLVMBuildSelect(b, nn, a, r, "");
}

/* Element lin of v (computed), stored to buf when buf != NULL. */
static LLVMValueRef produce(CpuGen *g, int v, LLVMValueRef buf, LLVMValueRef lin)
{
    int dt = g->f->ins[v].type.dtype;
    LLVMValueRef e = compute(g, v, lin);
    if (buf)
        cpu_mstore(g, e, cpu_gep(g, cpu_mtype(g, dt), buf, lin), dt);
    return e;
}

int cpu_gen_elem_reduce(CpuGen *g, int v)
{
    const IrFunc *f = g->f;
    const IrInstr *vin = &f->ins[v];
    int r = g->fred[v] - 1;
    const IrInstr *rin = &f->ins[r];
    LLVMBuilderRef b = g->b;
    int dt = vin->type.dtype, rdt = rin->type.dtype, kind = rin->attr;
    int L = cpu_red_lanes(g, dt);
    int64_t n = ir_numel(&vin->type), len = n;
    if (rin->axis >= 0 && vin->type.rank > 0)
        len = vin->type.shape[vin->type.rank - 1];
    int64_t outer = n / len, nv = len / L;
    LLVMTypeRef et = cpu_stype(g, dt), vt = LLVMVectorType(et, (unsigned)L);
    LLVMValueRef buf = g->uses[v] > 1 ? cpu_tile_buf(g, &vin->type) : NULL;
    LLVMValueRef accv = cpu_alloca(g, et, L), sacc = cpu_alloca(g, et, 1);
    LLVMValueRef dst = rin->type.rank ? cpu_tile_buf(g, &rin->type)
                                      : cpu_alloca(g, cpu_mtype(g, rdt), 1);
    LLVMValueRef init = kind == RED_SUM ? LLVMConstNull(et)
                      : LLVMConstReal(et, kind == RED_MAX ? -1.0 / 0.0 : 1.0 / 0.0);
    CpuLoop lo, li, lc, lj, lt;
    cpu_loop_open(g, &lo, cpu_i64(g, 0), cpu_i64(g, outer));
    LLVMValueRef row = LLVMBuildMul(b, lo.iv, cpu_i64(g, len), "");
    cpu_loop_open(g, &li, cpu_i64(g, 0), cpu_i64(g, L));
    LLVMBuildStore(b, init, cpu_gep(g, et, accv, li.iv));
    cpu_loop_close(g, &li);
    cpu_loop_open(g, &lc, cpu_i64(g, 0), cpu_i64(g, nv));
    LLVMValueRef chunk = LLVMBuildAdd(b, row,
        LLVMBuildMul(b, lc.iv, cpu_i64(g, L), ""), "");
    cpu_prefetch_next(g, v, chunk, L);
    cpu_loop_open(g, &lj, cpu_i64(g, 0), cpu_i64(g, L));
    LLVMValueRef e = produce(g, v, buf, LLVMBuildAdd(b, chunk, lj.iv, ""));
    LLVMValueRef ap = cpu_gep(g, et, accv, lj.iv);
    LLVMBuildStore(b, red_op(g, kind, LLVMBuildLoad2(b, et, ap, ""), e), ap);
    cpu_loop_close(g, &lj);
    cpu_loop_close(g, &lc);
    /* halving tree over the L partial results */
    LLVMValueRef a = LLVMBuildLoad2(b, vt,
        LLVMBuildBitCast(b, accv, LLVMPointerType(vt, 0), ""), "");
    for (int w = L / 2; w >= 1; w /= 2) {
        LLVMValueRef ml[32], mh[32];
        for (int i = 0; i < w; i++) {
            ml[i] = cpu_i32c(g, i);
            mh[i] = cpu_i32c(g, w + i);
        }
        LLVMValueRef lo_h = LLVMBuildShuffleVector(b, a, LLVMGetUndef(LLVMTypeOf(a)),
                                                   LLVMConstVector(ml, (unsigned)w), "");
        LLVMValueRef hi_h = LLVMBuildShuffleVector(b, a, LLVMGetUndef(LLVMTypeOf(a)),
                                                   LLVMConstVector(mh, (unsigned)w), "");
        a = red_op(g, kind, lo_h, hi_h);
    }
    LLVMBuildStore(b, LLVMBuildExtractElement(b, a, cpu_i32c(g, 0), ""), sacc);
    cpu_loop_open(g, &lt, cpu_i64(g, nv * L), cpu_i64(g, len));
    e = produce(g, v, buf, LLVMBuildAdd(b, row, lt.iv, ""));
    LLVMBuildStore(b, red_op(g, kind, LLVMBuildLoad2(b, et, sacc, ""), e), sacc);
    cpu_loop_close(g, &lt);
    LLVMValueRef res = cpu_cvt(g, LLVMBuildLoad2(b, et, sacc, ""), dt, rdt);
    cpu_mstore(g, res, cpu_gep(g, cpu_mtype(g, rdt), dst, lo.iv), rdt);
    cpu_loop_close(g, &lo);
    g->val[v] = buf;
    g->val[r] = rin->type.rank ? dst : cpu_mload(g, dst, rdt);
    return g->failed ? -1 : 0;
}
