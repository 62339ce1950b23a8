/* verify.c — the Core IR verifier (ir_verify), run between passes.
 *
 * Checks structure (regions, ids, scoping), operand counts and the types of
 * every live instruction. IR_VERIFY_FINAL adds the invariants a backend
 * relies on after the pipeline (exact elementwise shapes, equal operand
 * dtypes, store values and masks of the view's shape). Every failure is a
 * compiler bug and is reported through IR_BUG. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Ver {
    const IrFunc *f;
    int flags;
    char *err;
    size_t errlen;
    int *owner;        /* region of each instruction, -1 = none */
    int *regowner;     /* instruction owning each region, -1 = none */
    bool *visible;     /* value visible at the current point of the walk */
    int depth;         /* region nesting, bounded against cycles */
} Ver;

/* Report "in kernel K, %ID (op): what" (id < 0: no instruction). */
static int fail(Ver *v, int id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(Ver *v, int id, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *name = v->f->name ? v->f->name : "?";
    if (id < 0)
        return IR_BUG(v->err, v->errlen, "in kernel %s: %s", name, what);
    int op = v->f->ins[id].op;
    return IR_BUG(v->err, v->errlen, "in kernel %s, %%%d (%s): %s", name, id,
                  op < IR_OP_COUNT ? ir_op_names[op] : "?", what);
}

static const char *tystr(const IrType *t, char *buf)
{
    ir_type_str(t, buf, 128);
    return buf;
}

static bool type_ok(const IrType *t)
{
    if (t->dtype >= DT_COUNT || t->rank > IR_MAX_RANK)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] < 1)
            return false;
    return true;
}

/* numpy rule: `from` broadcasts to `to` (right-aligned, 1 or missing). */
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

static bool is_int_scalar(const IrType *t)
{
    return t->rank == 0 && dsl_is_int(t->dtype);
}

static bool is_bool_scalar(const IrType *t)
{
    return t->rank == 0 && t->dtype == DT_BOOL;
}

static const IrType *ty(const Ver *v, int id) { return &v->f->ins[id].type; }

/* Operand positions that must be present, per op (bit i = opnd i). */
static unsigned required_mask(const IrInstr *in)
{
    int op = in->op;
    if (ir_op_flags[op] & F_ELEM)
        return (1u << ir_op_nopnd[op]) - 1;
    switch (op) {
    case IR_BCAST: case IR_RESHAPE: case IR_PERMUTE: case IR_REDUCE:
    case IR_SCAN: case IR_VSET: case IR_IF:
        return 1;
    case IR_DOT: return 3;
    case IR_STORE: case IR_NOTIFY: case IR_WAIT: case IR_ASSERT: return 1;
    case IR_PRINT: return in->attr == 2;
    case IR_ATOMIC: return in->attr == ATOM_CAS ? 3 : 1;
    case IR_FOR: return 7;
    case IR_YIELD: return (1u << in->nopnd) - 1;
    default: return 0;
    }
}

/* Shape rule for a value that the pipeline makes exactly `want` (elementwise
 * result, view shape): before FINAL it may be broadcastable. */
static int check_shape_to(Ver *v, int id, int opnd, const IrType *want,
                          bool scalar_ok, const char *what)
{
    char a[128], b[128];
    const IrType *t = ty(v, opnd);
    if (t->rank == 0 && scalar_ok)
        return 0;
    if (ir_shape_eq(t, want))
        return 0;
    if (!(v->flags & IR_VERIFY_FINAL) && bcastable(t, want))
        return 0;
    return fail(v, id, "%s %%%d has type %s, %s %s", what, opnd, tystr(t, a),
                (v->flags & IR_VERIFY_FINAL) ? "expected the shape of"
                                             : "not broadcastable to",
                tystr(want, b));
}

static int check_view(Ver *v, int id, const IrInstr *in, IrType *vt)
{
    const IrFunc *f = v->f;
    if (in->param < 0 || in->param >= f->nparams)
        return fail(v, id, "tensor param index %d out of range", in->param);
    const IrParam *p = &f->params[in->param];
    if (p->kind != PK_TENSOR)
        return fail(v, id, "param %s is not a tensor", p->name);
    if (in->view < 0 || in->view >= f->nviews)
        return fail(v, id, "view index %d out of range", in->view);
    const IrView *w = &f->views[in->view];
    if (w->ndims != p->rank)
        return fail(v, id, "view has %d indices, tensor %s has rank %d",
                    w->ndims, p->name, p->rank);
    int rank = 0;
    for (int d = 0; d < w->ndims; d++) {
        int val = w->d[d].val;
        if (val < 0 || val >= f->nins)
            return fail(v, id, "view index %d uses value %%%d out of range",
                        d, val);
        if (f->ins[val].dead)
            return fail(v, id, "view index %d uses dead value %%%d", d, val);
        if (!v->visible[val])
            return fail(v, id, "view index %d uses %%%d, not visible here", d,
                        val);
        const IrType *t = ty(v, val);
        switch (w->d[d].kind) {
        case IDX_SCALAR: case IDX_RANGE:
            if (!is_int_scalar(t))
                return fail(v, id, "view index %d: %%%d is not an int scalar",
                            d, val);
            if (w->d[d].kind == IDX_RANGE && w->d[d].len == 0 &&
                f->is_device) {
                int lv = w->d[d].lenv;
                if (lv < 0 || lv >= f->nins || !v->visible[lv] ||
                    !is_int_scalar(ty(v, lv)))
                    return fail(v, id, "view index %d: bad dynamic length", d);
            } else if (w->d[d].kind == IDX_RANGE && w->d[d].len < 1) {
                return fail(v, id, "view index %d: range length %d", d,
                            (int)w->d[d].len);
            }
            rank += w->d[d].kind == IDX_RANGE;
            break;
        case IDX_TILE:
            if (t->rank < 1 || !dsl_is_int(t->dtype))
                return fail(v, id, "view index %d: %%%d is not an int tile", d,
                            val);
            rank += t->rank;
            break;
        default:
            return fail(v, id, "view index %d has bad kind %d", d,
                        w->d[d].kind);
        }
    }
    if (rank > IR_MAX_RANK)
        return fail(v, id, "view has rank %d", rank);
    memset(vt, 0, sizeof *vt);
    ir_view_shape(f, w, vt);
    vt->dtype = p->dtype;
    return 0;
}

static int check_mask(Ver *v, int id, int m, const IrType *vt)
{
    if (m < 0)
        return 0;
    if (ty(v, m)->dtype != DT_BOOL)
        return fail(v, id, "mask %%%d is not bool", m);
    return check_shape_to(v, id, m, vt, true, "mask");
}

/* The dtype a DOT of operand dtype `dt` accumulates in. */
static bool dot_acc_ok(int in_dt, int out_dt)
{
    if (dsl_is_float(in_dt))
        return in_dt == DT_F64 ? out_dt == DT_F64 : out_dt == DT_F32;
    if (dsl_is_int(in_dt))
        return (out_dt == DT_I32 || out_dt == DT_I64) &&
               dsl_dtype_bytes(in_dt) <= dsl_dtype_bytes(out_dt);
    return false;
}

static int check_elem(Ver *v, int id, const IrInstr *in)
{
    char a[128], b[128];
    const IrType *rt = &in->type;
    bool final = v->flags & IR_VERIFY_FINAL;
    int op = in->op, n = ir_op_nopnd[op];
    for (int i = 0; i < n; i++)
        if (check_shape_to(v, id, in->opnd[i], rt, true, "operand"))
            return -1;
    int d0 = ty(v, in->opnd[0])->dtype, rd = rt->dtype;
    switch (op) {
    case IR_CVT:
        return 0;
    case IR_BITCAST:
        if (d0 == DT_BOOL || rd == DT_BOOL ||
            dsl_dtype_bytes(d0) != dsl_dtype_bytes(rd))
            return fail(v, id, "bitcast of %s to %s", dsl_dtype_name(d0),
                        dsl_dtype_name(rd));
        return 0;
    case IR_NOT:
        if (d0 != DT_BOOL || rd != DT_BOOL)
            return fail(v, id, "not needs bool operand and result");
        return 0;
    case IR_BITNOT:
        if (!dsl_is_int(rd) || d0 != rd)
            return fail(v, id, "bitnot needs an int operand of the result "
                        "dtype");
        return 0;
    case IR_NEG: case IR_ABS:
        if (rd == DT_BOOL || d0 != rd)
            return fail(v, id, "operand dtype %s, result %s",
                        dsl_dtype_name(d0), dsl_dtype_name(rd));
        return 0;
    case IR_SELECT:
        if (d0 != DT_BOOL)
            return fail(v, id, "condition %%%d is not bool", in->opnd[0]);
        if (final && (ty(v, in->opnd[1])->dtype != rd ||
                      ty(v, in->opnd[2])->dtype != rd))
            return fail(v, id, "branches %s, %s differ from the result %s",
                        tystr(ty(v, in->opnd[1]), a),
                        tystr(ty(v, in->opnd[2]), b), dsl_dtype_name(rd));
        return 0;
    case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
        if (rd != DT_BOOL)
            return fail(v, id, "comparison gives %s, not bool",
                        dsl_dtype_name(rd));
        if (final && ty(v, in->opnd[1])->dtype != d0)
            return fail(v, id, "operand dtypes %s and %s differ",
                        dsl_dtype_name(d0),
                        dsl_dtype_name(ty(v, in->opnd[1])->dtype));
        return 0;
    default:
        break;
    }
    if (n == 1) { /* float math */
        if (!dsl_is_float(rd) || d0 != rd)
            return fail(v, id, "float math on %s giving %s",
                        dsl_dtype_name(d0), dsl_dtype_name(rd));
        return 0;
    }
    if (rd == DT_VOID)
        return fail(v, id, "no result type");
    if ((op == IR_POW || op == IR_ATAN2) && !dsl_is_float(rd))
        return fail(v, id, "float math on %s", dsl_dtype_name(rd));
    if ((op == IR_SHL || op == IR_SHR) && !dsl_is_int(rd))
        return fail(v, id, "shift of %s", dsl_dtype_name(rd));
    if ((op == IR_AND || op == IR_OR || op == IR_XOR) && dsl_is_float(rd))
        return fail(v, id, "bitwise op on %s", dsl_dtype_name(rd));
    if (final)
        for (int i = 0; i < n; i++)
            if (ty(v, in->opnd[i])->dtype != rd)
                return fail(v, id, "operand %%%d has dtype %s, result %s",
                            in->opnd[i],
                            dsl_dtype_name(ty(v, in->opnd[i])->dtype),
                            dsl_dtype_name(rd));
    return 0;
}

static int check_types(Ver *v, int id, const IrInstr *in)
{
    const IrFunc *f = v->f;
    const IrType *rt = &in->type;
    char a[128], b[128];
    IrType vt;
    bool final = v->flags & IR_VERIFY_FINAL;
    int op = in->op;
    bool void_op = op == IR_STORE || op == IR_VSET || op == IR_WHILE ||
                   op == IR_IF || op == IR_YIELD || op == IR_RET ||
                   op == IR_NOTIFY || op == IR_WAIT || op == IR_ASSERT ||
                   op == IR_PRINT ||
                   ((ir_op_flags[op] & F_DEV) && op != IR_GROUP &&
                    op != IR_GRANK && op != IR_GWORLD);
    if ((ir_op_flags[op] & F_DEV) && !f->is_device)
        return fail(v, id, "device-tier op in a kernel");
    if (void_op != (rt->dtype == DT_VOID))
        return fail(v, id, void_op ? "has a result type %s" : "has no result "
                    "type%s", void_op ? tystr(rt, a) : "");
    if (!type_ok(rt))
        return fail(v, id, "bad result type");
    if (ir_op_flags[op] & F_ELEM)
        return check_elem(v, id, in);
    const IrType *t0 = in->opnd[0] >= 0 ? ty(v, in->opnd[0]) : NULL;
    switch (op) {
    case IR_CONST:
        return 0;
    case IR_PARAM:
        if (in->param < 0 || in->param >= f->nparams)
            return fail(v, id, "param index %d out of range", in->param);
        if (f->params[in->param].kind != PK_SCALAR || rt->rank != 0 ||
            rt->dtype != f->params[in->param].dtype)
            return fail(v, id, "param %s is not a scalar of type %s",
                        f->params[in->param].name, tystr(rt, a));
        return 0;
    case IR_SIZE:
        if (in->param < 0 || in->param >= f->nparams ||
            f->params[in->param].kind != PK_TENSOR)
            return fail(v, id, "param index %d is not a tensor", in->param);
        if (in->attr < 0 || in->attr >= f->params[in->param].rank)
            return fail(v, id, "dim %d out of range", in->attr);
        if (rt->rank != 0 || rt->dtype != DT_I32)
            return fail(v, id, "result %s, not i32", tystr(rt, a));
        return 0;
    case IR_PID: case IR_NPROG:
        if (in->attr < 0 || in->attr > 2)
            return fail(v, id, "axis %d out of range", in->attr);
        if (rt->rank != 0 || rt->dtype != DT_I32)
            return fail(v, id, "result %s, not i32", tystr(rt, a));
        return 0;
    case IR_ARANGE:
        if (rt->rank != 1 || rt->dtype != DT_I32)
            return fail(v, id, "result %s, not i32[n]", tystr(rt, a));
        return 0;
    case IR_BCAST:
        if (t0->dtype != rt->dtype || !bcastable(t0, rt))
            return fail(v, id, "cannot broadcast %s to %s", tystr(t0, a),
                        tystr(rt, b));
        return 0;
    case IR_RESHAPE:
        if (t0->dtype != rt->dtype || ir_numel(t0) != ir_numel(rt))
            return fail(v, id, "cannot reshape %s to %s", tystr(t0, a),
                        tystr(rt, b));
        return 0;
    case IR_PERMUTE: {
        unsigned seen = 0;
        if (t0->dtype != rt->dtype || t0->rank != rt->rank)
            return fail(v, id, "cannot permute %s to %s", tystr(t0, a),
                        tystr(rt, b));
        for (int i = 0; i < rt->rank; i++) {
            int p = in->perm[i];
            if (p >= rt->rank || (seen & (1u << p)))
                return fail(v, id, "perm is not a permutation");
            seen |= 1u << p;
            if (rt->shape[i] != t0->shape[p])
                return fail(v, id, "result %s is not %s permuted",
                            tystr(rt, a), tystr(t0, b));
        }
        return 0;
    }
    case IR_REDUCE: case IR_SCAN: {
        if (op == IR_REDUCE && (in->attr < RED_SUM || in->attr > RED_ARGMIN))
            return fail(v, id, "bad reduction kind %d", in->attr);
        bool arg = op == IR_REDUCE &&
                   (in->attr == RED_ARGMAX || in->attr == RED_ARGMIN);
        if (arg ? rt->dtype != DT_I32
                : !(rt->dtype == t0->dtype ||
                    (dsl_is_float(rt->dtype) && dsl_is_float(t0->dtype)) ||
                    (dsl_is_int(rt->dtype) && !dsl_is_float(t0->dtype))))
            return fail(v, id, "result dtype %s for operand %s",
                        dsl_dtype_name(rt->dtype), tystr(t0, a));
        IrType want = *t0;
        if (op == IR_SCAN || in->axis >= 0) {
            if (in->axis < 0 || in->axis >= t0->rank)
                return fail(v, id, "axis %d out of range for %s", in->axis,
                            tystr(t0, a));
            if (op == IR_REDUCE) {
                for (int i = in->axis; i + 1 < t0->rank; i++)
                    want.shape[i] = t0->shape[i + 1];
                want.rank--;
            }
        } else {
            if (in->axis != -1)
                return fail(v, id, "axis %d", in->axis);
            want.rank = 0;
        }
        if (!ir_shape_eq(&want, rt))
            return fail(v, id, "result %s, expected shape of %s",
                        tystr(rt, a), tystr(&want, b));
        return 0;
    }
    case IR_DOT: {
        const IrType *t1 = ty(v, in->opnd[1]);
        int r = rt->rank;
        if ((r != 2 && r != 3) || t0->rank != r || t1->rank != r)
            return fail(v, id, "ranks %d x %d -> %d", t0->rank, t1->rank, r);
        bool ok = t0->shape[r - 1] == t1->shape[r - 2] &&
                  rt->shape[r - 2] == t0->shape[r - 2] &&
                  rt->shape[r - 1] == t1->shape[r - 1];
        if (r == 3)
            ok = ok && t0->shape[0] == rt->shape[0] &&
                 t1->shape[0] == rt->shape[0];
        if (!ok)
            return fail(v, id, "shapes %s x %s -> %s", tystr(t0, a),
                        tystr(t1, b), tystr(rt, (char[128]){0}));
        if (!dot_acc_ok(t0->dtype, rt->dtype) ||
            !dot_acc_ok(t1->dtype, rt->dtype))
            return fail(v, id, "dtypes %s x %s -> %s",
                        dsl_dtype_name(t0->dtype), dsl_dtype_name(t1->dtype),
                        dsl_dtype_name(rt->dtype));
        if (in->opnd[2] >= 0 && !ir_type_eq(ty(v, in->opnd[2]), rt))
            return fail(v, id, "acc %s, result %s",
                        tystr(ty(v, in->opnd[2]), a), tystr(rt, b));
        return 0;
    }
    case IR_LOAD:
        if (check_view(v, id, in, &vt))
            return -1;
        if (!ir_type_eq(&vt, rt))
            return fail(v, id, "result %s, view gives %s", tystr(rt, a),
                        tystr(&vt, b));
        if (in->opnd[1] >= 0 && (ty(v, in->opnd[1])->rank != 0 ||
                                 ty(v, in->opnd[1])->dtype != vt.dtype))
            return fail(v, id, "pad %s, expected %s scalar",
                        tystr(ty(v, in->opnd[1]), a),
                        dsl_dtype_name(vt.dtype));
        return check_mask(v, id, in->opnd[0], &vt);
    case IR_STORE: case IR_ATOMIC: {
        if (check_view(v, id, in, &vt))
            return -1;
        if (!f->params[in->param].written)
            return fail(v, id, "tensor %s is not marked written",
                        f->params[in->param].name);
        if (op == IR_ATOMIC) {
            if (in->attr < ATOM_ADD || in->attr > ATOM_XOR)
                return fail(v, id, "bad atomic kind %d", in->attr);
            if (!ir_type_eq(&vt, rt))
                return fail(v, id, "result %s, view gives %s", tystr(rt, a),
                            tystr(&vt, b));
        }
        int nval = op == IR_ATOMIC && in->attr == ATOM_CAS ? 2 : 1;
        for (int i = 0; i < nval; i++) {
            const IrType *t = ty(v, in->opnd[i]);
            if (check_shape_to(v, id, in->opnd[i], &vt, false, "value"))
                return -1;
            if (final && t->dtype != vt.dtype)
                return fail(v, id, "value %%%d has dtype %s, tensor %s",
                            in->opnd[i], dsl_dtype_name(t->dtype),
                            dsl_dtype_name(vt.dtype));
        }
        return check_mask(v, id, in->opnd[op == IR_STORE ? 1 : 2], &vt);
    }
    case IR_ALLOC: case IR_COPY: case IR_LAUNCH: case IR_ASYNC: case IR_SYNC:
    case IR_XCHG:
    case IR_COLL: case IR_CALL:
        if ((op == IR_ALLOC || op == IR_COPY) &&
            (in->param < 0 || in->param >= f->nparams))
            return fail(v, id, "buffer index %d out of range", in->param);
        if (op == IR_COPY && (in->xparam[0] < 0 || in->xparam[0] >= f->nparams ||
                              in->xview[0] < 0 || in->xview[0] >= f->nviews))
            return fail(v, id, "copy without a source view");
        if (op == IR_COPY && in->xparam[1] >= 0 &&
            (in->xparam[1] >= f->nparams || in->xview[1] < 0 || in->xview[1] >= f->nviews ||
             f->params[in->xparam[1]].mem != MEM_SIGNAL))
            return fail(v, id, "copy signal is not a cell of a signal array");
        if (op == IR_COPY && (in->attr != SIG_SET && in->attr != SIG_ADD))
            return fail(v, id, "bad signal mode %d", in->attr);
        if (op == IR_COPY && in->opnd[0] >= 0 &&
            (in->xparam[1] < 0 || t0->rank != 0 || t0->dtype != DT_U64))
            return fail(v, id, "copy signal value must be a u64 scalar with a signal");
        if ((op == IR_LAUNCH || op == IR_CALL) && (in->xoff < 0 || in->xn < 0 ||
                                in->xoff + in->xn > f->nextra))
            return fail(v, id, "launch arguments out of range");
        return 0;
    case IR_CHECKDIM:
        if (in->param < 0 || in->param >= f->nparams ||
            f->params[in->param].kind != PK_TENSOR ||
            in->attr < 0 || in->attr >= f->params[in->param].rank ||
            in->axis < 0 || in->axis >= f->nsyms)
            return fail(v, id, "checkdim of a bad param, dim or size");
        if (t0->rank != 0 || t0->dtype != DT_I64)
            return fail(v, id, "checkdim value must be an i64 scalar");
        return 0;
    case IR_PRINT:
        if (in->attr < 0 || in->attr > 3 || (in->attr == 1 && (in->ival < 0 ||
                                                              in->ival >= f->nmsgs)))
            return fail(v, id, "bad print piece");
        return 0;
    case IR_ASSERT:
        if (t0->rank != 0 || t0->dtype != DT_BOOL)
            return fail(v, id, "assert condition must be a bool scalar");
        if (in->ival < 0 || in->ival >= f->nmsgs)
            return fail(v, id, "assert message out of range");
        return 0;
    case IR_RANK: case IR_WORLD: case IR_GROUP: case IR_GRANK: case IR_GWORLD:
        if (rt->rank != 0 || rt->dtype != DT_I32)
            return fail(v, id, "result must be i32");
        return 0;
    case IR_NOTIFY: case IR_WAIT:
        if (check_view(v, id, in, &vt))
            return -1;
        if (f->params[in->param].mem != MEM_SIGNAL)
            return fail(v, id, "%s is not a signal array",
                        f->params[in->param].name);
        if (t0->rank != 0 || t0->dtype != DT_U64)
            return fail(v, id, "value must be a u64 scalar");
        if (in->attr != 0 && in->attr != 1)
            return fail(v, id, "bad mode %d", in->attr);
        return 0;
    case IR_VGET: case IR_VSET:
        if (in->param < 0 || in->param >= f->nvars)
            return fail(v, id, "var index %d out of range", in->param);
        if (!ir_type_eq(op == IR_VGET ? rt : t0, &f->vars[in->param].type))
            return fail(v, id, "type %s, var %s is %s",
                        tystr(op == IR_VGET ? rt : t0, a),
                        f->vars[in->param].name,
                        tystr(&f->vars[in->param].type, b));
        return 0;
    case IR_FOR:
        if (!is_int_scalar(rt))
            return fail(v, id, "induction variable %s", tystr(rt, a));
        for (int i = 0; i < 3; i++)
            if (!ir_type_eq(ty(v, in->opnd[i]), rt))
                return fail(v, id, "bound %%%d is %s, not %s", in->opnd[i],
                            tystr(ty(v, in->opnd[i]), a), tystr(rt, b));
        return 0;
    case IR_IF:
        if (!is_bool_scalar(t0))
            return fail(v, id, "condition is %s", tystr(t0, a));
        return 0;
    default:
        return 0;
    }
}

/* Structural checks of one instruction (before its operands are used). */
static int check_instr(Ver *v, int id, int r)
{
    const IrFunc *f = v->f;
    const IrInstr *in = &f->ins[id];
    if (in->op >= IR_OP_COUNT)
        return fail(v, id, "bad opcode %d", in->op);
    int op = in->op;
    int n = ir_op_nopnd[op];
    if (op == IR_YIELD) {
        if (in->nopnd < 1 || in->nopnd > 3)
            return fail(v, id, "%d operands", in->nopnd);
        n = in->nopnd;
    } else if (in->nopnd != n) {
        return fail(v, id, "%d operands, expected %d", in->nopnd, n);
    }
    unsigned req = required_mask(in);
    for (int i = 0; i < 4; i++) {
        int o = in->opnd[i];
        if (i >= n || o < 0) {
            if (o != -1 || (req & (1u << i)))
                return fail(v, id, "operand %d is %d", i, o);
            continue;
        }
        if (o >= f->nins)
            return fail(v, id, "operand %%%d out of range", o);
        if (f->ins[o].dead)
            return fail(v, id, "uses dead value %%%d", o);
        if (f->ins[o].type.dtype == DT_VOID)
            return fail(v, id, "uses %%%d, which has no value", o);
        if (!v->visible[o])
            return fail(v, id, "uses %%%d, not defined before in a visible "
                        "region", o);
    }
    if (op == IR_YIELD) {
        const IrRegion *reg = &f->regions[r];
        bool at_end = reg->ins[reg->n - 1] == id;
        bool in_cond = v->regowner[r] >= 0 &&
                       f->ins[v->regowner[r]].op == IR_WHILE &&
                       f->ins[v->regowner[r]].region[0] == r;
        if (!at_end || (!in_cond && r != f->grid_region))
            return fail(v, id, "yield only ends a while condition or the "
                        "grid region");
        if (in_cond && (n != 1 || !is_bool_scalar(ty(v, in->opnd[0]))))
            return fail(v, id, "a while condition yields one bool scalar");
    }
    if (op == IR_ATOMIC && in->attr != ATOM_CAS && in->opnd[1] != -1)
        return fail(v, id, "cmp operand without cas");
    bool mem = op == IR_LOAD || op == IR_STORE || op == IR_ATOMIC ||
               op == IR_NOTIFY || op == IR_WAIT || op == IR_ALLOC ||
               op == IR_COPY;
    if (f->is_device && (op == IR_LOAD || op == IR_STORE || op == IR_ATOMIC ||
                         op == IR_PID ||
                         op == IR_NPROG || in->type.rank != 0))
        return fail(v, id, "kernel op in a device function");
    if (!mem && in->view != -1)
        return fail(v, id, "has a view");
    if (mem && in->opnd[3] >= 0) {
        if (!is_int_scalar(ty(v, in->opnd[3])))
            return fail(v, id, "peer rank %%%d is not an int scalar",
                        in->opnd[3]);
        if (f->params[in->param].mem == MEM_GLOBAL)
            return fail(v, id, "peer access to non-symmetric %s",
                        f->params[in->param].name);
    }
    if ((op == IR_LOAD || op == IR_STORE) && in->opnd[2] != -1)
        return fail(v, id, "operand 2 is unused");
    bool has_reg = ir_op_flags[op] & F_REGION;
    if (!has_reg && (in->region[0] != -1 || in->region[1] != -1))
        return fail(v, id, "has regions");
    if (has_reg) {
        if (in->region[0] < 0 ||
            (op == IR_WHILE && in->region[1] < 0) ||
            (op == IR_FOR && in->region[1] != -1))
            return fail(v, id, "missing or extra region");
        if (op == IR_WHILE) {
            const IrRegion *c = &f->regions[in->region[0]];
            if (c->n == 0 || f->ins[c->ins[c->n - 1]].op != IR_YIELD)
                return fail(v, id, "condition region does not end in yield");
        }
    }
    if (r == f->grid_region && op != IR_YIELD &&
        (!(ir_op_flags[op] & F_PURE) || in->type.rank != 0 ||
         op == IR_LOAD || op == IR_PID || op == IR_NPROG ||
         op == IR_ARANGE))
        return fail(v, id, "not a scalar op in the grid region");
    if (r == f->grid_region && op == IR_YIELD)
        for (int i = 0; i < n; i++)
            if (!is_int_scalar(ty(v, in->opnd[i])))
                return fail(v, id, "grid extent %%%d is not an int scalar",
                            in->opnd[i]);
    return check_types(v, id, in);
}

static int walk(Ver *v, int r)
{
    const IrFunc *f = v->f;
    const IrRegion *reg = &f->regions[r];
    if (++v->depth > f->nregions)
        return fail(v, -1, "region nesting is cyclic");
    for (int k = 0; k < reg->n; k++) {
        int id = reg->ins[k];
        const IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        if (check_instr(v, id, r))
            return -1;
        for (int j = 0; j < 2; j++) {
            int sub = in->region[j];
            if (sub < 0)
                continue;
            if (in->op == IR_FOR)
                v->visible[id] = true;
            if (walk(v, sub))
                return -1;
            v->visible[id] = false;
            /* values of the nested region go out of scope */
            const IrRegion *s = &f->regions[sub];
            for (int q = 0; q < s->n; q++)
                v->visible[s->ins[q]] = false;
        }
        if (in->type.dtype != DT_VOID && in->op != IR_FOR)
            v->visible[id] = true;
    }
    v->depth--;
    return 0;
}

/* Ownership: each instruction in one region, each region in one parent. */
static int check_structure(Ver *v)
{
    const IrFunc *f = v->f;
    if (f->nregions < 1)
        return fail(v, -1, "no body region");
    if (f->grid_region == 0 || f->grid_region < -1 ||
        f->grid_region >= f->nregions)
        return fail(v, -1, "bad grid region %d", f->grid_region);
    for (int r = 0; r < f->nregions; r++) {
        const IrRegion *reg = &f->regions[r];
        if (reg->n < 0 || (reg->n > 0 && !reg->ins))
            return fail(v, -1, "region %d is malformed", r);
        for (int k = 0; k < reg->n; k++) {
            int id = reg->ins[k];
            if (id < 0 || id >= f->nins)
                return fail(v, -1, "region %d lists %%%d, out of range", r, id);
            if (v->owner[id] >= 0)
                return fail(v, id, "in regions %d and %d", v->owner[id], r);
            v->owner[id] = r;
        }
    }
    for (int id = 0; id < f->nins; id++) {
        const IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        if (v->owner[id] < 0)
            return fail(v, id, "in no region");
        if (in->op >= IR_OP_COUNT)
            return fail(v, id, "bad opcode %d", in->op);
        for (int j = 0; j < 2; j++) {
            int s = in->region[j];
            if (s == -1)
                continue;
            if (s < 0 || s >= f->nregions || s == 0 || s == f->grid_region)
                return fail(v, id, "region %d out of range", s);
            if (v->regowner[s] >= 0)
                return fail(v, id, "region %d also owned by %%%d", s,
                            v->regowner[s]);
            v->regowner[s] = id;
            if (f->regions[s].parent != v->owner[id])
                return fail(v, id, "region %d has parent %d, expected %d", s,
                            f->regions[s].parent, v->owner[id]);
        }
    }
    for (int r = 0; r < f->nregions; r++) {
        const IrRegion *reg = &f->regions[r];
        bool root = r == 0 || r == f->grid_region;
        if (root && reg->parent != -1)
            return fail(v, -1, "root region %d has parent %d", r, reg->parent);
        if (root || v->regowner[r] >= 0)
            continue;
        for (int k = 0; k < reg->n; k++)
            if (!f->ins[reg->ins[k]].dead)
                return fail(v, reg->ins[k], "in region %d, which no "
                            "instruction owns", r);
    }
    return 0;
}

int ir_verify(const IrFunc *f, int flags, char *err, size_t errlen)
{
    Ver v = {.f = f, .flags = flags, .err = err, .errlen = errlen};
    size_t ni = (size_t)f->nins + 1, nr = (size_t)f->nregions + 1;
    v.owner = malloc(sizeof(int) * ni);
    v.regowner = malloc(sizeof(int) * nr);
    v.visible = calloc(ni, sizeof(bool));
    int rc = -1;
    if (!v.owner || !v.regowner || !v.visible) {
        IR_BUG(err, errlen, "out of memory in the verifier");
        goto out;
    }
    for (size_t i = 0; i < ni; i++)
        v.owner[i] = -1;
    for (size_t i = 0; i < nr; i++)
        v.regowner[i] = -1;
    if (check_structure(&v))
        goto out;
    if (f->grid_region >= 0) {
        const IrRegion *g = &f->regions[f->grid_region];
        if (g->n == 0 || f->ins[g->ins[g->n - 1]].op != IR_YIELD ||
            f->ins[g->ins[g->n - 1]].dead) {
            fail(&v, -1, "grid region does not end in yield");
            goto out;
        }
        if (walk(&v, f->grid_region))
            goto out;
        memset(v.visible, 0, ni * sizeof(bool));
    }
    rc = walk(&v, 0);
out:
    free(v.owner);
    free(v.regowner);
    free(v.visible);
    return rc;
}
