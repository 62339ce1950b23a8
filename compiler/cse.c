/* cse.c — ir_pass_cse: common-subexpression elimination, then dead-code
 * elimination.
 *
 * CSE is scoped by region: walking the regions in program order, a pure
 * instruction equal to one already available (same op, type, operands and
 * attributes) in its own region or an enclosing one is replaced by it. LOADs
 * are never merged (memory may change between them) and region ops are never
 * merged. DCE then marks dead, to a fixed point, every pure instruction
 * (LOAD included) and every VGET whose value nobody live uses. Stores,
 * atomics, VSET, control flow, YIELD and RET always stay. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct Cse {
    IrFunc *f;
    int32_t *repl;     /* value id -> survivor */
    int32_t *stack;    /* available candidates, innermost last */
    int32_t *link;     /* per stack slot: previous slot of the same bucket */
    int32_t *head;     /* per bucket: newest stack slot, -1 = none */
    int nstack;
    unsigned nbuckets; /* a power of two */
} Cse;

static bool candidate(const IrInstr *in)
{
    int fl = ir_op_flags[in->op];
    return (fl & F_PURE) && !(fl & F_REGION) && in->op != IR_LOAD;
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_instr(const IrInstr *in)
{
    uint64_t h = in->op;
    h = mix(h, in->type.dtype);
    h = mix(h, in->type.rank);
    for (int i = 0; i < in->type.rank; i++)
        h = mix(h, (uint64_t)in->type.shape[i]);
    for (int i = 0; i < 4; i++)
        h = mix(h, (uint64_t)(int64_t)in->opnd[i]);
    h = mix(h, (uint64_t)(int64_t)in->param);
    h = mix(h, (uint64_t)(int64_t)in->attr);
    h = mix(h, (uint64_t)(int64_t)in->axis);
    h = mix(h, (uint64_t)in->ival);
    uint64_t fb;
    memcpy(&fb, &in->fval, sizeof fb);
    h = mix(h, fb);
    return h;
}

static bool same_instr(const IrInstr *a, const IrInstr *b)
{
    if (a->op != b->op || !ir_type_eq(&a->type, &b->type) ||
        a->nopnd != b->nopnd || a->param != b->param || a->attr != b->attr ||
        a->axis != b->axis || a->ival != b->ival || a->view != b->view)
        return false;
    for (int i = 0; i < 4; i++)
        if (a->opnd[i] != b->opnd[i])
            return false;
    if (memcmp(&a->fval, &b->fval, sizeof a->fval))
        return false; /* bitwise: -0.0 and 0.0 differ */
    if (a->op == IR_PERMUTE &&
        memcmp(a->perm, b->perm, (size_t)a->type.rank))
        return false;
    return true;
}

static int lookup_or_add(Cse *c, int id)
{
    const IrInstr *in = &c->f->ins[id];
    unsigned b = (unsigned)hash_instr(in) & (c->nbuckets - 1);
    for (int s = c->head[b]; s >= 0; s = c->link[s])
        if (same_instr(&c->f->ins[c->stack[s]], in))
            return c->stack[s];
    c->stack[c->nstack] = id;
    c->link[c->nstack] = c->head[b];
    c->head[b] = c->nstack++;
    return -1;
}

/* Drop candidates pushed after `mark` (leaving a region). */
static void pop_to(Cse *c, int mark)
{
    while (c->nstack > mark) {
        int s = --c->nstack;
        unsigned b = (unsigned)hash_instr(&c->f->ins[c->stack[s]]) &
                     (c->nbuckets - 1);
        c->head[b] = c->link[s];
    }
}

static void walk(Cse *c, int r)
{
    IrFunc *f = c->f;
    int mark = c->nstack;
    for (int k = 0; k < f->regions[r].n; k++) {
        int id = f->regions[r].ins[k];
        IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        ir_rewrite_uses(f, in, c->repl);
        if (candidate(in)) {
            int s = lookup_or_add(c, id);
            if (s >= 0) {
                c->repl[id] = s;
                in->dead = true;
                continue;
            }
        }
        for (int j = 0; j < 2; j++)
            if (in->region[j] >= 0)
                walk(c, in->region[j]);
    }
    pop_to(c, mark);
}

static void use(const IrFunc *f, int32_t *uses, const IrInstr *in, int delta)
{
    int n = in->op == IR_YIELD ? in->nopnd : ir_op_nopnd[in->op];
    for (int i = 0; i < n && i < 4; i++)
        if (in->opnd[i] >= 0)
            uses[in->opnd[i]] += delta;
    if (in->view >= 0) {
        const IrView *w = &f->views[in->view];
        for (int d = 0; d < w->ndims; d++)
            uses[w->d[d].val] += delta;
    }
}

static bool droppable(const IrInstr *in)
{
    int fl = ir_op_flags[in->op];
    return ((fl & F_PURE) && !(fl & F_REGION)) || in->op == IR_VGET;
}

static int dce(IrFunc *f, char *err, size_t errlen)
{
    int32_t *uses = calloc((size_t)f->nins + 1, sizeof(int32_t));
    int32_t *work = malloc(sizeof(int32_t) * ((size_t)f->nins + 1));
    if (!uses || !work) {
        free(uses);
        free(work);
        return IR_BUG(err, errlen, "out of memory");
    }
    for (int i = 0; i < f->nins; i++)
        if (!f->ins[i].dead)
            use(f, uses, &f->ins[i], 1);
    int nw = 0;
    for (int i = 0; i < f->nins; i++)
        if (!f->ins[i].dead && uses[i] == 0 && droppable(&f->ins[i]))
            work[nw++] = i;
    while (nw > 0) {
        int id = work[--nw];
        IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        in->dead = true;
        int n = in->op == IR_YIELD ? in->nopnd : ir_op_nopnd[in->op];
        for (int i = 0; i < n && i < 4; i++) {
            int o = in->opnd[i];
            if (o >= 0 && --uses[o] == 0 && droppable(&f->ins[o]))
                work[nw++] = o;
        }
        if (in->view >= 0) {
            const IrView *w = &f->views[in->view];
            for (int d = 0; d < w->ndims; d++) {
                int o = w->d[d].val;
                if (--uses[o] == 0 && droppable(&f->ins[o]))
                    work[nw++] = o;
            }
        }
    }
    free(uses);
    free(work);
    return 0;
}

int ir_pass_cse(IrFunc *f, char *err, size_t errlen)
{
    Cse c = {.f = f};
    size_t n = (size_t)f->nins + 1;
    c.nbuckets = 16;
    while (c.nbuckets < n)
        c.nbuckets <<= 1;
    c.repl = malloc(sizeof(int32_t) * n);
    c.stack = malloc(sizeof(int32_t) * n);
    c.link = malloc(sizeof(int32_t) * n);
    c.head = malloc(sizeof(int32_t) * c.nbuckets);
    int rc = 0;
    if (!c.repl || !c.stack || !c.link || !c.head) {
        rc = IR_BUG(err, errlen, "out of memory");
    } else {
        for (int i = 0; i < f->nins; i++)
            c.repl[i] = i;
        for (unsigned b = 0; b < c.nbuckets; b++)
            c.head[b] = -1;
        if (f->grid_region >= 0)
            walk(&c, f->grid_region);
        if (f->nregions > 0)
            walk(&c, 0);
    }
    free(c.repl);
    free(c.stack);
    free(c.link);
    free(c.head);
    return rc ? rc : dce(f, err, errlen);
}
