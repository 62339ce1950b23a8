/* fold.c — ir_pass_fold: constant folding and exact algebraic identities.
 *
 * A scalar or splat CONST flowing into an elementwise op, CVT, BCAST,
 * RESHAPE or PERMUTE is evaluated at compile time with the runtime's exact
 * semantics (ir_scalar_*, scalar.c): ints wrap at their width (two's
 * complement), int x/0 and x%0 give 0, f16/bf16 arithmetic is done in f32
 * and rounded to nearest even after each op, float->int truncates. A folded instruction is rewritten in
 * place into a CONST, so its users need no rewiring. Identities that are
 * exact (int x+0, x*1, int x*0, ...) forward the other operand instead.
 *
 * Not folded, on purpose: transcendental math (exp, log, sin, tanh, ...,
 * rsqrt), whose results differ between backends by an ulp; anything on f8
 * dtypes; narrow-float FMA; float->int conversions out of the target's
 * range (unspecified at runtime); max/min of +0 and -0. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ numerics */
/* The arithmetic itself is ir_scalar_* (scalar.c, shared with eval.c); what
 * is here is the choice of what to fold. */

typedef IrScalarVal Val;

static bool foldable_dtype(int dt)
{
    return dt != DT_VOID && dt != DT_F8E4M3 && dt != DT_F8E5M2;
}

/* CVT of v (dtype `from`) to dtype `to`; false if not foldable. */
static bool convert(int from, int to, Val v, Val *out)
{
    return ir_scalar_cvt(from, to, v, out) == IR_SCALAR_OK;
}

/* Op on operands of dtype dt, result of dtype dt (bool for comparisons);
 * false if not foldable. Int x/0 and x%0 fold to 0, like the runtime;
 * arithmetic on bools other than the logical ops is left alone. */
static bool scalar_op(int op, int dt, const Val *a, Val *r)
{
    if (dt == DT_BOOL && op != IR_NOT && op != IR_AND && op != IR_OR &&
        op != IR_XOR && op != IR_EQ && op != IR_NE)
        return false;
    IrScalarStatus st = ir_scalar_op(op, dt, a, r);
    return st == IR_SCALAR_OK || st == IR_SCALAR_DIV_ZERO;
}

/* ------------------------------------------------------------ the pass */

typedef struct Fold {
    IrFunc *f;
    int32_t *repl;   /* value id -> its replacement (itself if none) */
} Fold;

static bool is_const(const IrFunc *f, int v)
{
    return v >= 0 && f->ins[v].op == IR_CONST && !f->ins[v].dead;
}

/* The value of CONST v, normalized to its dtype. */
static Val const_val(const IrFunc *f, int v)
{
    return ir_scalar_const(&f->ins[v]);
}

static void make_const(IrInstr *in, Val v)
{
    in->op = IR_CONST;
    for (int i = 0; i < 4; i++)
        in->opnd[i] = -1;
    in->nopnd = 0;
    in->param = -1;
    in->attr = 0;
    in->axis = -1;
    in->view = -1;
    in->region[0] = in->region[1] = -1;
    memset(in->perm, 0, sizeof in->perm);
    in->ival = dsl_is_float(in->type.dtype) ? 0 : v.i;
    in->fval = dsl_is_float(in->type.dtype) ? v.f : 0;
}

/* Forward `by` to every use of `id` (by has id's exact type). */
static void forward(Fold *p, int id, int by)
{
    p->repl[id] = by;
    p->f->ins[id].dead = true;
}

/* CONST v equals the int/bool/float number k. */
static bool const_is(const IrFunc *f, int v, double k)
{
    if (!is_const(f, v))
        return false;
    int dt = f->ins[v].type.dtype;
    Val x = const_val(f, v);
    if (dsl_is_float(dt))
        return x.f == k && !signbit(x.f) == !signbit(k);
    if (dt == DT_BOOL)
        return x.i == (k != 0);
    if (k == -1) /* all ones */
        return ir_scalar_wrap(dt, UINT64_MAX) == x.i;
    return x.i == (int64_t)k;
}

/* Exact algebraic identities; returns true if `id` was simplified. */
static bool identity(Fold *p, int id)
{
    IrFunc *f = p->f;
    IrInstr *in = &f->ins[id];
    int op = in->op, dt = in->type.dtype;
    int a = in->opnd[0], b = in->opnd[1];
    const IrType *rt = &in->type;
    bool fl = dsl_is_float(dt), in_ = dsl_is_int(dt), bo = dt == DT_BOOL;
#define SAME(v) ((v) >= 0 && ir_type_eq(&f->ins[v].type, rt))
    if (op == IR_CVT && SAME(a)) {
        forward(p, id, a);
        return true;
    }
    if (op == IR_BCAST && SAME(a)) {
        forward(p, id, a);
        return true;
    }
    if (op == IR_SELECT) {
        if (is_const(f, a)) {
            int pick = const_val(f, a).i ? b : in->opnd[2];
            if (SAME(pick)) {
                forward(p, id, pick);
                return true;
            }
        }
        if (b == in->opnd[2] && SAME(b)) {
            forward(p, id, b);
            return true;
        }
        return false;
    }
    if (ir_op_nopnd[op] != 2 || !(ir_op_flags[op] & F_ELEM) ||
        ir_scalar_is_cmp(op))
        return false;
    /* x op k -> x, and k op x -> x for commutative ops */
    for (int s = 0; s < 2; s++) {
        int x = s ? b : a, k = s ? a : b;
        bool right = s == 0;
        bool comm = op == IR_ADD || op == IR_MUL || op == IR_AND ||
                    op == IR_OR || op == IR_XOR;
        if (!right && !comm)
            break;
        bool keep = false, zero = false;
        switch (op) {
        case IR_ADD:
            keep = (in_ && const_is(f, k, 0)) || (fl && const_is(f, k, -0.0));
            break;
        case IR_SUB:
            keep = (in_ || fl) && const_is(f, k, 0);
            break;
        case IR_MUL:
            keep = (in_ || fl) && const_is(f, k, 1);
            zero = in_ && const_is(f, k, 0);
            break;
        case IR_DIV:
            keep = (in_ || fl) && const_is(f, k, 1);
            break;
        case IR_REM:
            zero = in_ && const_is(f, k, 1);
            break;
        case IR_AND:
            keep = (in_ && const_is(f, k, -1)) || (bo && const_is(f, k, 1));
            zero = (in_ || bo) && const_is(f, k, 0);
            break;
        case IR_OR:
            keep = (in_ || bo) && const_is(f, k, 0);
            if (bo && const_is(f, k, 1)) {
                make_const(in, (Val){.i = 1});
                return true;
            }
            break;
        case IR_XOR:
            keep = (in_ || bo) && const_is(f, k, 0);
            break;
        case IR_SHL: case IR_SHR:
            keep = in_ && const_is(f, k, 0);
            break;
        default:
            break;
        }
        if (keep && SAME(x)) {
            forward(p, id, x);
            return true;
        }
        if (zero) {
            make_const(in, (Val){.i = 0});
            return true;
        }
    }
#undef SAME
    return false;
}

/* Fold instruction `id` if its operands are constants. */
static void fold_instr(Fold *p, int id)
{
    IrFunc *f = p->f;
    IrInstr *in = &f->ins[id];
    int op = in->op;
    if (op == IR_BCAST || op == IR_RESHAPE || op == IR_PERMUTE) {
        if (is_const(f, in->opnd[0])) {
            make_const(in, const_val(f, in->opnd[0]));
            return;
        }
        identity(p, id);
        return;
    }
    if (!(ir_op_flags[op] & F_ELEM))
        return;
    int n = ir_op_nopnd[op];
    Val v[3];
    bool all = true;
    for (int i = 0; i < n; i++) {
        if (!is_const(f, in->opnd[i]) ||
            !foldable_dtype(f->ins[in->opnd[i]].type.dtype))
            all = false;
    }
    if (!all || !foldable_dtype(in->type.dtype)) {
        identity(p, id);
        return;
    }
    for (int i = 0; i < n; i++)
        v[i] = const_val(f, in->opnd[i]);
    Val r = {.i = 0};
    int rd = in->type.dtype;
    bool ok;
    if (op == IR_CVT) {
        ok = convert(f->ins[in->opnd[0]].type.dtype, rd, v[0], &r);
    } else if (op == IR_SELECT) {
        r = v[0].i ? v[1] : v[2];
        ok = f->ins[in->opnd[1]].type.dtype == rd &&
             f->ins[in->opnd[2]].type.dtype == rd;
    } else {
        int od = f->ins[in->opnd[0]].type.dtype;
        ok = true;
        for (int i = 1; i < n; i++)
            ok = ok && f->ins[in->opnd[i]].type.dtype == od;
        ok = ok && scalar_op(op, od, v, &r);
        if (ok && !ir_scalar_is_cmp(op) && od != rd)
            ok = false; /* mixed dtypes: leave to a later lowering fix */
    }
    if (ok)
        make_const(in, r);
    else
        identity(p, id);
}

static void walk(Fold *p, int r)
{
    IrFunc *f = p->f;
    for (int k = 0; k < f->regions[r].n; k++) {
        int id = f->regions[r].ins[k];
        IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        ir_rewrite_uses(f, in, p->repl);
        fold_instr(p, id);
        for (int j = 0; j < 2; j++)
            if (in->region[j] >= 0)
                walk(p, in->region[j]);
    }
}

int ir_pass_fold(IrFunc *f, char *err, size_t errlen)
{
    Fold p = {.f = f};
    p.repl = malloc(sizeof(int32_t) * ((size_t)f->nins + 1));
    if (!p.repl)
        return IR_BUG(err, errlen, "out of memory");
    for (int i = 0; i < f->nins; i++)
        p.repl[i] = i;
    if (f->grid_region >= 0)
        walk(&p, f->grid_region);
    if (f->nregions > 0)
        walk(&p, 0);
    free(p.repl);
    return 0;
}
