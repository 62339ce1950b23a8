/* bcast.c — ir_pass_bcast: make numpy broadcasting explicit.
 *
 * The lowering leaves elementwise tile operands, store values and masks in
 * any shape that broadcasts to the one needed. This pass inserts a BCAST right
 * before each such user (same region) so that afterwards every F_ELEM tile
 * operand has exactly the result's shape and every STORE/ATOMIC value and
 * memory mask has exactly the view's shape. Rank-0 elementwise operands and
 * rank-0 masks stay scalars; a rank-0 store value is broadcast to the view. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct Pass {
    IrFunc *f;
    char *err;
    size_t errlen;
    int r;             /* region being rebuilt */
    int32_t *out;      /* its new instruction list */
    int nout, cap;
} Pass;

static bool push(Pass *p, int id)
{
    if (p->nout == p->cap) {
        int ncap = p->cap ? p->cap * 2 : 16;
        int32_t *q = realloc(p->out, sizeof(int32_t) * (size_t)ncap);
        if (!q)
            return false;
        p->out = q;
        p->cap = ncap;
    }
    p->out[p->nout++] = id;
    return true;
}

static bool bcastable(const IrType *from, const IrType *to)
{
    if (from->rank > to->rank)
        return false;
    int off = to->rank - from->rank;
    for (int i = 0; i < from->rank; i++)
        if (from->shape[i] != 1 && from->shape[i] != to->shape[off + i])
            return false;
    return true;
}

/* Make operand `slot` of instruction `user` have shape `want` (keeping its
 * dtype), emitting a BCAST placed before `user`. */
static int widen(Pass *p, int user, int slot, const IrType *want,
                 bool keep_scalar)
{
    IrFunc *f = p->f;
    int v = f->ins[user].opnd[slot];
    if (v < 0)
        return 0;
    IrType t = f->ins[v].type;
    if (ir_shape_eq(&t, want) || (keep_scalar && t.rank == 0))
        return 0;
    if (!bcastable(&t, want)) {
        char a[128], b[128];
        ir_type_str(&t, a, sizeof a);
        ir_type_str(want, b, sizeof b);
        return IR_BUG(p->err, p->errlen,
                      "in kernel %s, %%%d (%s): operand %%%d of type %s does "
                      "not broadcast to %s", f->name, user,
                      ir_op_names[f->ins[user].op], v, a, b);
    }
    IrType nt = *want;
    nt.dtype = t.dtype;
    DslLoc loc = f->ins[user].loc;
    int id = ir_emit(f, p->r, IR_BCAST, nt, loc); /* may move f->ins */
    if (id < 0 || !push(p, id))
        return IR_BUG(p->err, p->errlen, "out of memory");
    f->regions[p->r].n--; /* it was appended; our list places it */
    f->ins[id].opnd[0] = v;
    f->ins[user].opnd[slot] = id;
    return 0;
}

static int fix_instr(Pass *p, int id)
{
    IrFunc *f = p->f;
    IrInstr *in = &f->ins[id];
    int op = in->op;
    if (ir_op_flags[op] & F_ELEM) {
        IrType want = in->type;
        for (int i = 0; i < ir_op_nopnd[op]; i++)
            if (widen(p, id, i, &want, true))
                return -1;
        return 0;
    }
    if (op != IR_LOAD && op != IR_STORE && op != IR_ATOMIC)
        return 0;
    if (in->view < 0 || in->view >= f->nviews)
        return IR_BUG(p->err, p->errlen, "in kernel %s, %%%d (%s): no view",
                      f->name, id, ir_op_names[op]);
    IrType vt;
    memset(&vt, 0, sizeof vt);
    ir_view_shape(f, &f->views[in->view], &vt);
    int mask = op == IR_LOAD ? 0 : op == IR_STORE ? 1 : 2;
    if (op == IR_STORE || op == IR_ATOMIC) {
        if (widen(p, id, 0, &vt, false))
            return -1;
        if (op == IR_ATOMIC && widen(p, id, 1, &vt, false))
            return -1;
    }
    return widen(p, id, mask, &vt, true);
}

int ir_pass_bcast(IrFunc *f, char *err, size_t errlen)
{
    Pass p = {.f = f, .err = err, .errlen = errlen};
    int rc = 0;
    for (int r = 0; r < f->nregions && rc == 0; r++) {
        IrRegion *reg = &f->regions[r];
        int n = reg->n;
        int32_t *old = reg->ins;
        p.r = r;
        p.out = NULL;
        p.nout = p.cap = 0;
        /* work on a copy: ir_emit appends to (and may move) reg->ins */
        int32_t *copy = n ? malloc(sizeof(int32_t) * (size_t)n) : NULL;
        if (n && !copy)
            return IR_BUG(err, errlen, "out of memory");
        if (n)
            memcpy(copy, old, sizeof(int32_t) * (size_t)n);
        for (int k = 0; k < n && rc == 0; k++) {
            int id = copy[k];
            if (!f->ins[id].dead && fix_instr(&p, id))
                rc = -1;
            else if (!push(&p, id))
                rc = IR_BUG(err, errlen, "out of memory");
        }
        free(copy);
        reg = &f->regions[r];
        if (rc == 0 && p.nout > n) {
            free(reg->ins);
            reg->ins = p.out;
            reg->n = p.nout;
            reg->cap = p.cap;
        } else {
            free(p.out); /* nothing inserted: keep the original list */
        }
    }
    return rc;
}
