/* stream.c — the stores of one view row of a STORE's value, for mem.c's
 * fast path (cpu_store_row): plain stores, or, for a tensor that mem.c
 * found large, non-temporal ones.
 *
 * Streaming (non-temporal) stores: a store whose tensor is larger than the
 * last-level cache gains nothing from the lines it writes staying cached,
 * and a plain store first reads every line it writes (read for
 * ownership): 1.5x the traffic of the data. A store whose view rows hold
 * at least CPU_STREAM_CHUNK bytes (CPU_STREAM_LINES for a cheap value,
 * below; x86 hosts with AVX; BLKC_CPU_NOSTREAM=1
 * turns it off) computes its values a window of CPU_STREAM_CHUNK bytes at a
 * time into a stack buffer (L1) and copies them out, so the value's code
 * is emitted once, in a loop of constant trip count:
 *   - tensors spanning less than mem.c's STREAM_MIN_BYTES (32 MB, decided
 *     at run time): windows at the row's multiples of CPU_STREAM_CHUNK,
 *     each copied with plain 64-byte stores; the last, partial one is
 *     computed as the row's final CPU_STREAM_CHUNK bytes, overlapping the
 *     one before, whose bytes it writes again with the same values;
 *   - larger ones: the first window ends at the last 64-byte boundary of
 *     the destination inside it, the others start at such boundaries, so
 *     every whole line is written by one non-temporal store, and a line
 *     is never written both ways (a plain store into a line being written
 *     non-temporally costs a flush); the row's partial first and last
 *     lines get plain stores.
 * A cheap value (value_cost) into a large tensor skips the window:
 * stream_lines computes each whole line into registers and stores it
 * non-temporally (BLKC_CPU_NOLINEST=1: the window). Results are the same
 * bits every way. */
#include "cpu.h"

typedef struct Row {
    CpuGen *g;
    const CpuRowStore *rs;
} Row;

/* Plain stores of the row's elements [lo, hi). */
static void store_range(const Row *c, LLVMValueRef lo, LLVMValueRef hi)
{
    CpuGen *g = c->g;
    LLVMValueRef base = c->rs->base, lin0 = c->rs->lin0;
    CpuLoop in;
    cpu_loop_open(g, &in, lo, hi);
    LLVMValueRef lin = LLVMBuildAdd(g->b, lin0, in.iv, "");
    cpu_mstore(g, cpu_elem(g, c->rs->value, lin), cpu_gep(g, c->rs->et, base, in.iv),
               c->rs->dt);
    cpu_loop_close(g, &in);
}

/* 64 bytes from buf + off to dst + off (byte offsets): a non-temporal
 * store (dst + off 64-byte aligned) or a plain one. */
static void copy_block(CpuGen *g, LLVMValueRef buf, LLVMValueRef dst,
                       LLVMValueRef off, bool nt)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef vt = LLVMVectorType(g->i64, 8), vp = LLVMPointerType(vt, 0);
    LLVMValueRef sp = LLVMBuildGEP2(b, g->i8, buf, &off, 1, "");
    LLVMValueRef dp = LLVMBuildGEP2(b, g->i8, dst, &off, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(b, vt, LLVMBuildBitCast(b, sp, vp, ""), "");
    LLVMSetAlignment(v, 1);
    LLVMValueRef st = LLVMBuildStore(b, v, LLVMBuildBitCast(b, dp, vp, ""));
    LLVMSetAlignment(st, nt ? 64 : 1);
    if (nt) {
        unsigned k = LLVMGetMDKindIDInContext(g->ctx, "nontemporal", 11);
        LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(g->i32, 1, 0));
        LLVMSetMetadata(st, k, LLVMMetadataAsValue(g->ctx,
                        LLVMMDNodeInContext2(g->ctx, &one, 1)));
    }
}

/* Plain byte copy of [lo, hi) from buf to dst (at most a partial line). */
static void copy_bytes(CpuGen *g, LLVMValueRef buf, LLVMValueRef dst,
                       LLVMValueRef lo, LLVMValueRef hi)
{
    CpuLoop r;
    cpu_loop_open(g, &r, lo, hi);
    LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, g->i8, cpu_gep(g, g->i8, buf, r.iv), ""),
                   cpu_gep(g, g->i8, dst, r.iv));
    cpu_loop_close(g, &r);
}

/* The code size of inline value id per element, roughly (a call-free
 * transcendental counts 16): a store of a value up to CHEAP_VALUE gets
 * a plain loop of its own beside the window loop. */
#define CHEAP_VALUE 8
static int value_cost(CpuGen *g, int id, int depth)
{
    if (id < 0 || !g->inl[id])
        return 0;
    if (depth > 16)
        return CHEAP_VALUE + 1;
    const IrInstr *in = &g->f->ins[id];
    int cost = 1;
    switch (in->op) {
    case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2: case IR_SIN:
    case IR_COS: case IR_TANH: case IR_ERF: case IR_SIGMOID: case IR_LOG1P:
    case IR_EXPM1: case IR_TAN: case IR_ATAN: case IR_SINH: case IR_COSH:
    case IR_POW: case IR_ATAN2:
        cost = 16;
        break;
    default:
        break;
    }
    for (int k = 0; k < 3 && cost <= CHEAP_VALUE; k++)
        cost += value_cost(g, in->opnd[k], depth + 1);
    return cost;
}

/* The row through the window buffer (see the top of the file); nt: i1,
 * non-temporal stores (else plain ones). */
static void stream_row(const Row *c, LLVMValueRef nt)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    LLVMValueRef base = c->rs->base, lin0 = c->rs->lin0;
    int64_t L = c->rs->len;
    int es = dsl_dtype_bytes(c->rs->dt);
    int64_t n = CPU_STREAM_CHUNK / es;
    LLVMValueRef buf = cpu_alloca(g, c->rs->et, n);
    LLVMValueRef bb = LLVMBuildBitCast(b, buf, LLVMPointerType(g->i8, 0), "");
    LLVMValueRef db = LLVMBuildBitCast(b, base, LLVMPointerType(g->i8, 0), "");
    /* bytes: the row's head up to its first line boundary, and where the
     * first window ends (its last line boundary; the whole window when
     * the row is aligned or the stores are plain) */
    LLVMValueRef hb = LLVMBuildAnd(b, LLVMBuildSub(b, cpu_i64(g, 0),
        LLVMBuildPtrToInt(b, db, g->i64, ""), ""), cpu_i64(g, 63), "");
    hb = LLVMBuildSelect(b, nt, hb, cpu_i64(g, 0), "hb");
    LLVMValueRef e0 = LLVMBuildAdd(b, hb, LLVMBuildAnd(b, LLVMBuildSub(b,
        cpu_i64(g, CPU_STREAM_CHUNK), hb, ""), cpu_i64(g, -64), ""), "e0");
    LLVMValueRef rest = LLVMBuildSub(b, cpu_i64(g, L * es), e0, "");
    LLVMValueRef nw = LLVMBuildAdd(b, cpu_i64(g, 1), LLVMBuildUDiv(b,
        LLVMBuildAdd(b, rest, cpu_i64(g, CPU_STREAM_CHUNK - 1), ""),
        cpu_i64(g, CPU_STREAM_CHUNK), ""), "nw");
    CpuLoop k;
    cpu_loop_open(g, &k, cpu_i64(g, 0), nw);
    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, k.iv, cpu_i64(g, 0), "");
    /* this window's new bytes [p, e) of the row, computed as [w, w + n) */
    LLVMValueRef p = LLVMBuildSelect(b, first, cpu_i64(g, 0), LLVMBuildAdd(b, e0,
        LLVMBuildMul(b, LLVMBuildSub(b, k.iv, cpu_i64(g, 1), ""),
                     cpu_i64(g, CPU_STREAM_CHUNK), ""), ""), "p");
    LLVMValueRef e = LLVMBuildSelect(b, first, e0, LLVMBuildAdd(b, p,
        cpu_i64(g, CPU_STREAM_CHUNK), ""), "");
    e = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, e, cpu_i64(g, L * es), ""),
                        e, cpu_i64(g, L * es), "e");
    LLVMValueRef pw = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, p,
        cpu_i64(g, (L - n) * es), ""), p, cpu_i64(g, (L - n) * es), "");
    LLVMValueRef w = LLVMBuildUDiv(b, pw, cpu_i64(g, es), "w");
    LLVMValueRef lw = LLVMBuildAdd(b, lin0, w, "");
    CpuLoop j;
    cpu_loop_open(g, &j, cpu_i64(g, 0), cpu_i64(g, n));
    cpu_mstore(g, cpu_elem(g, c->rs->value, LLVMBuildAdd(b, lw, j.iv, "")),
               cpu_gep(g, c->rs->et, buf, j.iv), c->rs->dt);
    cpu_loop_close(g, &j);
    LLVMValueRef dw = LLVMBuildGEP2(b, g->i8, db, &pw, 1, "");
    LLVMBasicBlockRef ntb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.nt");
    LLVMBasicBlockRef pb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.plain");
    LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.next");
    LLVMBuildCondBr(b, nt, ntb, pb);
    /* non-temporal: [p, e) as a partial head line, whole lines, a partial
     * tail line (offsets below are in the buffer: minus pw) */
    LLVMPositionBuilderAtEnd(b, ntb);
    LLVMValueRef a0 = LLVMBuildSub(b, p, pw, ""), a1 = LLVMBuildSub(b, e, pw, "");
    LLVMValueRef h = LLVMBuildAnd(b, LLVMBuildSub(b, cpu_i64(g, 0), LLVMBuildPtrToInt(b,
        LLVMBuildGEP2(b, g->i8, dw, &a0, 1, ""), g->i64, ""), ""), cpu_i64(g, 63), "");
    LLVMValueRef len = LLVMBuildSub(b, a1, a0, "");
    h = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, h, len, ""), h, len, "");
    LLVMValueRef m0 = LLVMBuildAdd(b, a0, h, "");
    copy_bytes(g, bb, dw, a0, m0);
    LLVMValueRef lines = LLVMBuildUDiv(b, LLVMBuildSub(b, a1, m0, ""), cpu_i64(g, 64), "");
    CpuLoop q;
    cpu_loop_open(g, &q, cpu_i64(g, 0), lines);
    copy_block(g, bb, dw, LLVMBuildAdd(b, m0, LLVMBuildShl(b, q.iv, cpu_i64(g, 6), ""), ""),
               true);
    cpu_loop_close(g, &q);
    copy_bytes(g, bb, dw, LLVMBuildAdd(b, m0, LLVMBuildShl(b, lines, cpu_i64(g, 6), ""), ""),
               a1);
    LLVMBuildBr(b, jb);
    /* plain: the whole window, bytes before p written again */
    LLVMPositionBuilderAtEnd(b, pb);
    for (int i = 0; i < CPU_STREAM_CHUNK / 64; i++)
        copy_block(g, bb, dw, cpu_i64(g, 64 * i), false);
    LLVMBuildBr(b, jb);
    LLVMPositionBuilderAtEnd(b, jb);
    cpu_loop_close(g, &k);
}

/* A cheap value's view row of L elements at base, streamed without the
 * window (BLKC_CPU_NOLINEST=1: stream_row): plain stores up to the first
 * 64-byte line and after the last whole one; each whole line computed into
 * a one-line buffer (one vector store once vectorized, forwarded by O3 to
 * the non-temporal store that copies it out): registers to memory. */
static void stream_lines(const Row *c)
{
    CpuGen *g = c->g;
    LLVMBuilderRef b = g->b;
    LLVMValueRef base = c->rs->base, lin0 = c->rs->lin0;
    int64_t L = c->rs->len;
    int es = dsl_dtype_bytes(c->rs->dt);
    int64_t V = 64 / es;
    LLVMValueRef buf = cpu_alloca(g, c->rs->et, V);
    LLVMValueRef bb = LLVMBuildBitCast(b, buf, LLVMPointerType(g->i8, 0), "");
    LLVMValueRef db = LLVMBuildBitCast(b, base, LLVMPointerType(g->i8, 0), "");
    LLVMValueRef hb = LLVMBuildAnd(b, LLVMBuildSub(b, cpu_i64(g, 0),
        LLVMBuildPtrToInt(b, db, g->i64, ""), ""), cpu_i64(g, 63), "");
    LLVMValueRef h = LLVMBuildUDiv(b, hb, cpu_i64(g, es), "h");
    store_range(c, cpu_i64(g, 0), h);
    LLVMValueRef nl = LLVMBuildUDiv(b, LLVMBuildSub(b, cpu_i64(g, L), h, ""),
                                    cpu_i64(g, V), "nl");
    CpuLoop q, j;
    cpu_loop_open(g, &q, cpu_i64(g, 0), nl);
    LLVMValueRef s = LLVMBuildAdd(b, h, LLVMBuildMul(b, q.iv, cpu_i64(g, V), ""), "");
    LLVMValueRef ls = LLVMBuildAdd(b, lin0, s, "");
    cpu_loop_open(g, &j, cpu_i64(g, 0), cpu_i64(g, V));
    cpu_mstore(g, cpu_elem(g, c->rs->value, LLVMBuildAdd(b, ls, j.iv, "")),
               cpu_gep(g, c->rs->et, buf, j.iv), c->rs->dt);
    cpu_loop_close(g, &j);
    copy_block(g, bb, cpu_gep(g, c->rs->et, base, s), cpu_i64(g, 0), true);
    cpu_loop_close(g, &q);
    store_range(c, LLVMBuildAdd(b, h, LLVMBuildMul(b, nl, cpu_i64(g, V), ""), ""),
                cpu_i64(g, L));
}

/* A cheap value streams line by line (stream_lines) from rows of
 * CPU_STREAM_LINES bytes (a GEMM's C block of 128 f32 columns: 512 B rows
 * into a 64 MB tensor read each line before writing it, 6% of the run),
 * a dear one through the window from CPU_STREAM_CHUNK. */
int64_t cpu_stream_min_row(CpuGen *g, int value)
{
    return !cpu_switch(CPU_SW_NOLINEST) && value_cost(g, value, 0) <= CHEAP_VALUE
               ? CPU_STREAM_LINES : CPU_STREAM_CHUNK;
}

/* The stores of one view row of a STORE (see the top of the file), for
 * each row of mem.c's fast path. */
void cpu_store_row(CpuGen *g, const CpuRowStore *rs)
{
    LLVMBuilderRef b = g->b;
    Row c = {g, rs};
    if (rs->stream && value_cost(g, rs->value, 0) <= CHEAP_VALUE) {
        /* a cheap value: its code twice costs little compile time, and a
         * tensor in cache then skips the window buffer */
        LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.nt");
        LLVMBasicBlockRef nb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.plain");
        LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "st.end");
        LLVMBuildCondBr(b, rs->stream, sb, nb);
        LLVMPositionBuilderAtEnd(b, sb);
        if (cpu_switch(CPU_SW_NOLINEST))
            stream_row(&c, LLVMConstInt(g->i1, 1, 0));
        else
            stream_lines(&c);
        LLVMBuildBr(b, jb);
        LLVMPositionBuilderAtEnd(b, nb);
        store_range(&c, cpu_i64(g, 0), cpu_i64(g, rs->len));
        LLVMBuildBr(b, jb);
        LLVMPositionBuilderAtEnd(b, jb);
    } else if (rs->stream) {
        stream_row(&c, rs->stream);
    } else {
        store_range(&c, cpu_i64(g, 0), cpu_i64(g, rs->len));
    }
}
