/* mega.c — megakernel mode on CPU ranks: one persistent tile-task graph per
 * rank instead of one launch per op.
 *
 * The Device IR interpreter (plan.c) hands each LAUNCH of the rank's
 * program to rt_mega_launch instead of running its grid. The launch is
 * bound once (runtime/launch.c: arguments, grid, its BkLaunchCtx) and
 * becomes tile-tasks: one per program id, or per run of consecutive
 * linear program ids when the grid has more than max_tiles. Each tile's
 * footprint is computed from the kernel's Core IR: for every load / store
 * / atomic of a tensor parameter, each view dim's start is evaluated for
 * the tile's program ids (constants, program_id, num_programs, sizes,
 * scalar parameters, rank/world, + - * / % min max); a start that depends
 * on anything else (a loop variable, a loaded value) makes that dim whole.
 * A parameter's footprint is the bounding element interval of its boxes,
 * as addresses, with a read / write flag; signal parameters and kernels
 * with notify / wait count as writing the whole signal buffer. A new tile
 * gets an edge from every pending tile of an earlier launch whose
 * footprint overlaps its own with a write on either side (RAW, WAR, WAW),
 * so e.g. row block i of a GEMM's consumer waits for row block i of the
 * GEMM only; tiles of one launch never depend on each other (their order
 * is free in the launch-per-op mode too).
 *
 * rt_mega_flush runs the graph: the rank's thread and workers-1 threads
 * take ready tiles from a queue, run the kernel's range entry for the
 * tile's program ids, and decrement their dependents' counters (atomics;
 * a tile reaching 0 is queued). Waits are bounded: idle workers poll the
 * world's abort flag every 20 ms, a kernel's own waits keep their
 * BLKC_WAIT_TIMEOUT_MS deadline, and an empty queue with nothing running
 * and tiles left is reported at once (it cannot happen in a DAG). The
 * interpreter flushes before every step the graph does not hold
 * (collectives, copies, signals, async blocks) and records it as a
 * boundary; the record (per op: tile-tasks, edges, producers; the
 * critical path) is what `blkc plan --megakernel` prints. */
#include "mega.h"
#include "ranks.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct CEnt {
    uint64_t key;                /* the step's signature */
    int *edges, nedges;          /* (from, to) tile pairs added for it */
} CEnt;

struct RtMegaCache {
    CEnt *e;
    int n, cap;
};

typedef struct Fp {              /* one parameter's footprint in one tile */
    uintptr_t lo, hi;            /* bytes [lo, hi): the bounding interval */
    const void *buf;             /* the tensor's data, or NULL (bytes only) */
    const int64_t *stride;       /* its strides (the bound BkTensorDesc) */
    int64_t blo[IR_MAX_RANK], bhi[IR_MAX_RANK]; /* the box of elements */
    int16_t param;
    uint8_t w;                   /* written */
    uint8_t rank;
} Fp;

typedef struct Launch {
    const IrFunc *f;
    BkRangeFn fn;
    RtBind b;                    /* never moved: Launch is malloc'd alone */
    BkLaunchCtx ctx;
    int64_t grid[3], total, chunk;
    int tile0, ntiles, step;     /* first tile; record step or -1 */
    int fp_per_tile;             /* footprint entries of each tile */
    int *acc, nacc;              /* the kernel's memory / signal instructions */
    int *accslot;                /* their footprint slots */
    bool fp_done;                /* fp / uni computed (lazily on a cache hit) */
    bool sigk;                   /* it notifies or waits */
    Fp *fp;                      /* [ntiles * fp_per_tile] */
    Fp *uni;                     /* [fp_per_tile]: union over the tiles */
    int (*op)(void *arg);        /* a copy / collective (rt_mega_op), or NULL */
    void *arg;                   /* its argument (owned) */
    bool remote, fence;
    char name[48];               /* kernel / op name */
} Launch;

typedef struct Tile {
    int launch;
    int64_t first, last;         /* linear program ids */
    int pending;                 /* atomic: unfinished producers */
    int *succ, nsucc, capsucc;
    int dist, pred;              /* longest chain ending here, its predecessor */
} Tile;

struct RtMega {
    RtMegaRec *rec;
    RtMegaLog *log;              /* NULL: no record */
    RtWorldView wv;
    int workers, max_tiles;
    Launch **l;
    int nl, capl;
    Tile *t;
    int nt, capt;
    int seg_first_step;          /* the segment's first record step */
    int last_remote;             /* tile of the last collective, or -1 */
    /* the table kept between runs (RtMegaRec.cache): step `seq` of this
     * run reuses the cached tiles and edges while every step so far had
     * the cached signature */
    struct RtMegaCache *cache;
    int seq;
    bool cache_ok;
    uintptr_t (*reg)[2];         /* buffers seen in this run: [lo, hi) */
    int nreg, capreg;
    int *ecap_buf, necap, capecap;  /* edges added for the current step */
    bool capture;
    /* the run */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int *q, nq, done, running, idle;   /* q: a min-heap of ready tiles (program
                                    order first) */
    int failed;                  /* 1: stop; msg in ferr */
    char ferr[512];
};

/* ------------------------------------------------------------ footprints */

/* Value `id` of kernel f for the program ids pid; false when it depends on
 * something other than the grid, sizes and scalar parameters. */
static bool ev(const RtMega *m, const Launch *L, int id, const int64_t *pid, int64_t *out,
               int depth)
{
    const IrFunc *f = L->f;
    if (id < 0 || id >= f->nins || depth > 64)
        return false;
    const IrInstr *in = &f->ins[id];
    if (in->type.rank != 0 || dsl_is_float(in->type.dtype))
        return false;
    int64_t a = 0, b = 0;
    if (in->nopnd >= 1 && in->op != IR_CONST && in->op != IR_PARAM && in->op != IR_SIZE &&
        !ev(m, L, in->opnd[0], pid, &a, depth + 1))
        return false;
    if (in->nopnd >= 2 && !ev(m, L, in->opnd[1], pid, &b, depth + 1))
        return false;
    switch (in->op) {
    case IR_CONST: *out = in->ival; return true;
    case IR_PID: *out = pid[in->attr]; return true;
    case IR_NPROG: *out = L->grid[in->attr]; return true;
    case IR_SIZE: *out = L->b.shapes[in->param][in->attr]; return true;
    case IR_PARAM:
        if (dsl_is_float(f->params[in->param].dtype))
            return false;
        *out = L->b.sv[in->param].i;
        return true;
    case IR_RANK: *out = m->wv.rank; return true;
    case IR_WORLD: *out = m->wv.world; return true;
    case IR_CVT: *out = a; return true;
    case IR_NEG: *out = -a; return true;
    case IR_ADD: *out = a + b; return true;
    case IR_SUB: *out = a - b; return true;
    case IR_MUL: *out = a * b; return true;
    case IR_DIV: *out = b ? a / b : 0; return true;
    case IR_REM: *out = b ? a % b : 0; return true;
    case IR_MIN: *out = a < b ? a : b; return true;
    case IR_MAX: *out = a > b ? a : b; return true;
    default: return false;
    }
}

/* Slot of param p in a tile's footprint entries, by first use. */
static int fp_slot(Launch *L, int *slot_of, int p)
{
    if (slot_of[p] < 0)
        slot_of[p] = L->fp_per_tile++;
    return slot_of[p];
}

/* The footprint of program instance `lin` merged into fp[slot_of[p]]. */
static void footprint(const RtMega *m, Launch *L, int64_t lin, Fp *fp)
{
    const IrFunc *f = L->f;
    /* the order of the kernel's range function (ir_grid_fast_axis) */
    const char *no = getenv("BLKC_CPU_NOGRIDORDER");
    int fa = no && *no && strcmp(no, "0") != 0 ? 0 : ir_grid_fast_axis(f);
    int64_t na = L->grid[fa], nb = L->grid[1 - fa];
    int64_t pid[3];
    pid[fa] = lin % na;
    pid[1 - fa] = lin / na % nb;
    pid[2] = lin / (na * nb);
    bool sigk = L->sigk;
    for (int ai = 0; ai < L->nacc; ai++) {
        const IrInstr *in = &f->ins[L->acc[ai]];
        bool mem = in->op == IR_LOAD || in->op == IR_STORE || in->op == IR_ATOMIC;
        int p = in->param;
        const IrParam *ip = &f->params[p];
        const BkTensorDesc *d = &L->b.desc[p];
        int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
        bool whole = !mem || ip->mem == MEM_SIGNAL || (in->opnd[3] >= 0 && mem);
        const IrView *v = in->view >= 0 && in->view < f->nviews ? &f->views[in->view] : NULL;
        for (int k = 0; k < ip->rank; k++) {
            lo[k] = 0;
            hi[k] = d->shape[k];
            if (whole || !v || k >= v->ndims)
                continue;
            int64_t s;
            int kind = v->d[k].kind;
            if (kind == IDX_TILE || !ev(m, L, v->d[k].val, pid, &s, 0))
                continue;
            int64_t len = kind == IDX_SCALAR ? 1 : v->d[k].len;
            if (len <= 0)
                continue;
            lo[k] = s < 0 ? 0 : s > d->shape[k] ? d->shape[k] : s;
            hi[k] = s + len < 0 ? 0 : s + len > d->shape[k] ? d->shape[k] : s + len;
        }
        /* the bounding byte interval of the box */
        int64_t a = 0, b = 0;
        bool empty = false;
        for (int k = 0; k < ip->rank; k++) {
            if (hi[k] <= lo[k])
                empty = true;
            int64_t st = d->stride[k];
            a += (st >= 0 ? lo[k] : hi[k] - 1) * st;
            b += (st >= 0 ? hi[k] - 1 : lo[k]) * st;
        }
        if (empty)
            continue;
        size_t esz = (size_t)dsl_dtype_bytes(ip->dtype);
        uintptr_t base = (uintptr_t)d->data;
        Fp *e = &fp[L->accslot[ai]];
        uintptr_t elo = base + (uintptr_t)(a * (int64_t)esz);
        uintptr_t ehi = base + (uintptr_t)((b + 1) * (int64_t)esz);
        if (e->hi == 0) {
            e->lo = elo;
            e->hi = ehi;
            e->buf = d->data;
            e->stride = d->stride;
            e->rank = ip->rank;
            memcpy(e->blo, lo, sizeof lo);
            memcpy(e->bhi, hi, sizeof hi);
        } else {
            e->lo = elo < e->lo ? elo : e->lo;
            e->hi = ehi > e->hi ? ehi : e->hi;
            for (int k = 0; k < ip->rank; k++) {
                e->blo[k] = lo[k] < e->blo[k] ? lo[k] : e->blo[k];
                e->bhi[k] = hi[k] > e->bhi[k] ? hi[k] : e->bhi[k];
            }
        }
        e->param = (int16_t)p;
        e->w |= in->op != IR_LOAD || ip->mem == MEM_SIGNAL || sigk;
    }
}

/* Whether two footprints overlap: their boxes when both are boxes of one
 * tensor (same data and strides), else their bounding intervals. */
static bool overlap(const Fp *a, const Fp *b)
{
    if (!(a->lo < b->hi && b->lo < a->hi))
        return false;
    if (!a->buf || a->buf != b->buf || a->rank != b->rank)
        return true;
    for (int k = 0; k < a->rank; k++)
        if (a->stride[k] != b->stride[k])
            return true;
    for (int k = 0; k < a->rank; k++)
        if (a->bhi[k] <= b->blo[k] || b->bhi[k] <= a->blo[k])
            return false;
    return true;
}

/* Whether some footprint of a conflicts with one of b (overlap + a write). */
static bool conflict(const Fp *a, int na, const Fp *b, int nb)
{
    for (int i = 0; i < na; i++) {
        if (a[i].hi == 0)
            continue;
        for (int j = 0; j < nb; j++)
            if (b[j].hi && (a[i].w || b[j].w) && overlap(&a[i], &b[j]))
                return true;
    }
    return false;
}

/* ------------------------------------------------------------ the graph */

RtMega *rt_mega_new(RtMegaRec *rec, const RtWorldView *wv)
{
    RtMega *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->rec = rec;
    m->wv = *wv;
    if (rec->record && wv->rank >= 0 && wv->rank < RT_MEGA_MAX_RANKS)
        m->log = &rec->log[wv->rank];
    const char *s = getenv("BLKC_MEGA_WORKERS");
    int w = s && *s ? atoi(s) : rec->workers;
    if (w <= 0) {
        const char *nt = getenv("BLKC_NUM_THREADS");
        long n = nt && atoi(nt) > 0 ? atol(nt) : sysconf(_SC_NPROCESSORS_ONLN);
        w = (int)(n > 0 ? n : 1) / (wv->world > 0 ? wv->world : 1);
    }
    m->workers = w < 1 ? 1 : w > 256 ? 256 : w;
    const char *mt = getenv("BLKC_MEGA_TILES");
    m->max_tiles = mt && atoi(mt) > 0 ? atoi(mt) : rec->max_tiles > 0 ? rec->max_tiles : 32;
    m->last_remote = -1;
    if (!rec->record && rec->cache_on && wv->rank >= 0 && wv->rank < RT_MEGA_MAX_RANKS) {
        if (!rec->cache[wv->rank])
            rec->cache[wv->rank] = calloc(1, sizeof *rec->cache[wv->rank]);
        m->cache = rec->cache[wv->rank];
        m->cache_ok = true;
    }
    if (m->log) {
        m->log->workers = m->workers;
        m->seg_first_step = m->log->n;
    }
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    return m;
}

static RtMegaStep *new_step(RtMega *m)
{
    RtMegaLog *g = m->log;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        RtMegaStep *s = realloc(g->s, (size_t)cap * sizeof *s);
        if (!s)
            return NULL;
        g->s = s;
        g->cap = cap;
    }
    RtMegaStep *s = &g->s[g->n++];
    memset(s, 0, sizeof *s);
    s->segment = g->segments;
    return s;
}

static int add_edge(RtMega *m, int from, int to)
{
    Tile *u = &m->t[from];
    if (u->nsucc == u->capsucc) {
        int cap = u->capsucc ? 2 * u->capsucc : 4;
        int *s = realloc(u->succ, (size_t)cap * sizeof *s);
        if (!s)
            return -1;
        u->succ = s;
        u->capsucc = cap;
    }
    u->succ[u->nsucc++] = to;
    m->t[to].pending++;
    if (m->capture) {
        if (m->necap + 2 > m->capecap) {
            int cap = m->capecap ? 2 * m->capecap : 64;
            int *e = realloc(m->ecap_buf, (size_t)cap * sizeof *e);
            if (!e)
                return -1;
            m->ecap_buf = e;
            m->capecap = cap;
        }
        m->ecap_buf[m->necap++] = from;
        m->ecap_buf[m->necap++] = to;
    }
    if (u->dist + 1 > m->t[to].dist) {
        m->t[to].dist = u->dist + 1;
        m->t[to].pred = from;
    }
    return 0;
}

static void launch_free(Launch *L)
{
    if (!L)
        return;
    if (!L->op)
        rt_bind_free(&L->b);
    free(L->arg);
    free(L->acc);
    free(L->accslot);
    free(L->fp);
    free(L->uni);
    free(L);
}

/* ------------------------------------------------------------ the cache */

static int link_launch(RtMega *m, Launch *L, const char *name, char *err, size_t errlen);

#define HASH0 1469598103934665603ull

static uint64_t hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* key + the buffer holding [p, p + bytes): its ordinal among the buffers
 * this run has seen and the offset in it. */
static uint64_t reg_key(RtMega *m, uint64_t key, const void *ptr, size_t bytes)
{
    uintptr_t p = (uintptr_t)ptr;
    int ord = -1;
    for (int i = 0; i < m->nreg && ord < 0; i++)
        if (m->reg[i][0] <= p && p < m->reg[i][1])
            ord = i;
    if (ord < 0) {
        if (m->nreg == m->capreg) {
            int cap = m->capreg ? 2 * m->capreg : 32;
            uintptr_t(*r)[2] = realloc(m->reg, (size_t)cap * sizeof *r);
            if (!r)
                return key ^ 0x5bd1e995u; /* no registry: hashes the pointer */
            m->reg = r;
            m->capreg = cap;
        }
        m->reg[m->nreg][0] = p;
        m->reg[m->nreg][1] = p + (bytes ? bytes : 1);
        ord = m->nreg++;
    }
    uint64_t off = p - m->reg[ord][0];
    key = hash(key, &ord, sizeof ord);
    return hash(key, &off, sizeof off);
}

static void cache_truncate(RtMega *m)
{
    struct RtMegaCache *c = m->cache;
    m->cache_ok = false;
    for (int i = m->seq; i < c->n; i++)
        free(c->e[i].edges);
    if (c->n > m->seq)
        c->n = m->seq;
}

/* Step `seq` has signature key: when the cache holds it (and every step
 * before matched), L's tiles get the cached edges (1); else 0 (-1: out of
 * memory). */
static int cache_hit(RtMega *m, Launch *L, uint64_t key)
{
    struct RtMegaCache *c = m->cache;
    if (!c || !m->cache_ok || m->seq >= c->n || c->e[m->seq].key != key)
        return 0;
    const CEnt *e = &c->e[m->seq];
    for (int k = 0; k < e->nedges; k++)
        if (add_edge(m, e->edges[2 * k], e->edges[2 * k + 1]))
            return -1;
    if (L->remote)
        m->last_remote = L->tile0;
    m->nt += L->ntiles;
    m->seq++;
    return 1;
}

/* A step not in the cache: link it (link_launch, its edges captured) and
 * make it the cache's step `seq` (what follows is dropped). */
static int cache_link(RtMega *m, Launch *L, const char *name, uint64_t key, char *err,
                      size_t errlen)
{
    if (m->cache)
        cache_truncate(m);
    m->capture = m->cache != NULL;
    m->necap = 0;
    int rc = link_launch(m, L, name, err, errlen);
    m->capture = false;
    struct RtMegaCache *c = m->cache;
    if (rc == 0 && c) {
        if (c->n == c->cap) {
            int cap = c->cap ? 2 * c->cap : 16;
            CEnt *e = realloc(c->e, (size_t)cap * sizeof *e);
            if (!e) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            c->e = e;
            c->cap = cap;
        }
        CEnt *e = &c->e[c->n];
        e->key = key;
        e->nedges = m->necap / 2;
        e->edges = malloc(sizeof *e->edges * (size_t)(m->necap ? m->necap : 1));
        if (!e->edges) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (m->necap > 0)
            memcpy(e->edges, m->ecap_buf, sizeof *e->edges * (size_t)m->necap);
        c->n++;
    }
    m->seq++;
    return rc;
}

/* A boundary as a cached step (no tiles). */
static void cache_boundary(RtMega *m, const char *what)
{
    struct RtMegaCache *c = m->cache;
    if (!c)
        return;
    uint64_t key = hash(HASH0 ^ 1, what, strlen(what));
    if (m->cache_ok && m->seq < c->n && c->e[m->seq].key == key) {
        m->seq++;
        return;
    }
    cache_truncate(m);
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        CEnt *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (!e)
            return; /* the cache ends here */
        c->e = e;
        c->cap = cap;
    }
    c->e[c->n++] = (CEnt){key, NULL, 0};
    m->seq++;
}

/* L's footprints per tile and their union (kernels: on first need). */
static void ensure_fp(RtMega *m, Launch *L)
{
    if (L->fp_done || L->op)
        return;
    L->fp_done = true;
    int F = L->fp_per_tile;
    L->fp = calloc((size_t)L->ntiles * (size_t)(F ? F : 1), sizeof *L->fp);
    L->uni = calloc((size_t)(F ? F : 1), sizeof *L->uni);
    if (!L->fp || !L->uni) { /* conservative: after everything, before everything */
        L->fence = true;
        return;
    }
    for (int k = 0; k < L->ntiles; k++) {
        const Tile *t = &m->t[L->tile0 + k];
        Fp *fp = &L->fp[(size_t)k * F];
        for (int64_t p = t->first; p < t->last; p++)
            footprint(m, L, p, fp);
        for (int j = 0; j < F; j++) {
            Fp *u = &L->uni[j];
            if (!fp[j].hi)
                continue;
            if (!u->hi) {
                *u = fp[j];
                continue;
            }
            u->lo = fp[j].lo < u->lo ? fp[j].lo : u->lo;
            u->hi = fp[j].hi > u->hi ? fp[j].hi : u->hi;
            u->w |= fp[j].w;
            for (int e = 0; e < u->rank; e++) {
                u->blo[e] = fp[j].blo[e] < u->blo[e] ? fp[j].blo[e] : u->blo[e];
                u->bhi[e] = fp[j].bhi[e] > u->bhi[e] ? fp[j].bhi[e] : u->bhi[e];
            }
        }
    }
}

/* The tiles of L (the last launch, its footprints computed) join the
 * graph: edges from every conflicting earlier tile, and its record step. */
static int link_launch(RtMega *m, Launch *L, const char *name, char *err, size_t errlen)
{
    int F = L->fp_per_tile;
    int64_t edges = 0, redges = 0;
    snprintf(L->name, sizeof L->name, "%s", name);
    uint64_t from = 0;
    for (int pl = 0; pl + 1 < m->nl; pl++) {
        Launch *P = m->l[pl];
        ensure_fp(m, P);
        bool all = P->fence || L->fence;
        if (!P->ntiles || (!all && !conflict(P->uni, P->fp_per_tile, L->uni, F)))
            continue;
        for (int k = 0; k < L->ntiles; k++)
            for (int j = 0; j < P->ntiles; j++)
                if (all || conflict(&P->fp[(size_t)j * P->fp_per_tile], P->fp_per_tile,
                                    &L->fp[(size_t)k * F], F)) {
                    if (add_edge(m, P->tile0 + j, m->nt + k)) {
                        snprintf(err, errlen, "out of memory");
                        return -1;
                    }
                    *(P->remote ? &redges : &edges) += 1;
                    if (P->step >= 0) {
                        int b = P->step - m->seg_first_step;
                        from |= 1ull << (b < 63 ? b : 63);
                    }
                }
    }
    if (L->remote) { /* collectives in program order */
        if (m->last_remote >= 0) {
            if (add_edge(m, m->last_remote, m->nt)) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            redges++;
        }
        m->last_remote = m->nt;
    }
    m->nt += L->ntiles;
    if (m->log) {
        RtMegaStep *s = new_step(m);
        if (!s) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        snprintf(s->name, sizeof s->name, "%s", name);
        s->tiles = L->ntiles;
        memcpy(s->grid, L->grid, sizeof s->grid);
        s->edges = edges;
        s->redges = redges;
        s->from = from;
        s->op = L->op != NULL;
        s->remote = L->remote;
        s->fence = L->fence;
        /* parameters whose footprint is the whole buffer in every tile */
        for (int j = 0; j < F && L->ntiles > 1 && !L->op; j++) {
            const BkTensorDesc *d = &L->b.desc[L->uni[j].param];
            const IrParam *ip = &L->f->params[L->uni[j].param];
            int64_t n = 1;
            for (int k = 0; k < ip->rank; k++)
                n *= d->shape[k];
            uintptr_t whole = (uintptr_t)n * (uintptr_t)dsl_dtype_bytes(ip->dtype);
            bool all = ip->mem != MEM_SIGNAL;
            for (int k = 0; k < L->ntiles && all; k++) {
                const Fp *e = &L->fp[(size_t)k * F + j];
                all = e->hi && e->hi - e->lo >= whole;
            }
            s->fallback += all;
        }
        m->log->tiles += L->ntiles;
        m->log->edges += edges;
        m->log->redges += redges;
        m->log->fallback += s->fallback;
        L->step = m->log->n - 1;
    }
    return 0;
}

static int grow_tiles(RtMega *m, int n)
{
    if (m->nt + n <= m->capt)
        return 0;
    int cap = m->capt ? m->capt : 64;
    while (cap < m->nt + n)
        cap *= 2;
    Tile *t = realloc(m->t, (size_t)cap * sizeof *t);
    if (!t)
        return -1;
    m->t = t;
    m->capt = cap;
    return 0;
}

static int push_launch(RtMega *m, Launch *L, char *err, size_t errlen)
{
    if (m->nl == m->capl) {
        int cap = m->capl ? 2 * m->capl : 16;
        Launch **l = realloc(m->l, (size_t)cap * sizeof *l);
        if (!l) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        m->l = l;
        m->capl = cap;
    }
    m->l[m->nl++] = L;
    return 0;
}

int rt_mega_op(RtMega *m, const char *name, bool remote, int (*run)(void *arg), const void *arg,
               size_t argsize, const RtMegaSpan *spans, int nspans, char *err, size_t errlen)
{
    Launch *L = calloc(1, sizeof *L);
    if (!L || push_launch(m, L, err, errlen)) {
        free(L);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    L->op = run;
    L->remote = remote;
    L->step = -1;
    L->grid[0] = L->grid[1] = L->grid[2] = 1;
    L->total = L->chunk = L->ntiles = 1;
    L->fp_per_tile = nspans;
    L->fp_done = true;
    L->arg = malloc(argsize ? argsize : 1);
    L->fp = calloc((size_t)(nspans ? nspans : 1), sizeof *L->fp);
    L->uni = calloc((size_t)(nspans ? nspans : 1), sizeof *L->uni);
    if (!L->arg || !L->fp || !L->uni || grow_tiles(m, 1)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(L->arg, arg, argsize);
    for (int i = 0; i < nspans; i++) {
        L->fp[i].lo = (uintptr_t)spans[i].lo;
        L->fp[i].hi = (uintptr_t)spans[i].lo + (spans[i].bytes ? spans[i].bytes : 1);
        L->fp[i].w = spans[i].write;
        L->uni[i] = L->fp[i];
    }
    L->tile0 = m->nt;
    Tile *t = &m->t[m->nt];
    memset(t, 0, sizeof *t);
    t->launch = m->nl - 1;
    t->last = 1;
    t->pred = -1;
    uint64_t key = hash(HASH0 ^ 2, name, strlen(name));
    key = hash(key, &remote, sizeof remote);
    for (int i = 0; i < nspans; i++) {
        key = reg_key(m, key, spans[i].lo, spans[i].bytes);
        key = hash(key, &spans[i].bytes, sizeof spans[i].bytes);
        key = hash(key, &spans[i].write, sizeof spans[i].write);
    }
    int hit = cache_hit(m, L, key);
    if (hit)
        return hit < 0 ? -1 : 0;
    return cache_link(m, L, name, key, err, errlen);
}

int rt_mega_launch(RtMega *m, const IrFunc *f, BkRangeFn fn, const blkc_arg *args, int nargs,
                   const blkc_launch_options *opts, char *err, size_t errlen)
{
    Launch *L = calloc(1, sizeof *L);
    if (!L) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    L->f = f;
    L->fn = fn;
    L->step = -1;
    if (rt_cpu_launch_bind(f, args, nargs, opts, &m->wv, &L->b, L->grid, &L->ctx, err, errlen) !=
        BLKC_OK) {
        launch_free(L);
        return -1;
    }
    if (push_launch(m, L, err, errlen)) {
        launch_free(L);
        return -1;
    }
    L->total = L->grid[0] * L->grid[1] * L->grid[2];
    if (L->total <= 0) {
        L->tile0 = m->nt;
        return 0;
    }
    L->chunk = (L->total + m->max_tiles - 1) / m->max_tiles;
    L->ntiles = (int)((L->total + L->chunk - 1) / L->chunk);
    int slot_of[256];
    for (int p = 0; p < 256; p++)
        slot_of[p] = -1;
    L->acc = malloc(sizeof *L->acc * (size_t)(f->nins + 1));
    L->accslot = malloc(sizeof *L->accslot * (size_t)(f->nins + 1));
    if (!L->acc || !L->accslot) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < f->nins; i++) {
        const IrInstr *in = &f->ins[i];
        if (!in->dead && in->param >= 0 && in->param < 256 &&
            (in->op == IR_LOAD || in->op == IR_STORE || in->op == IR_ATOMIC ||
             in->op == IR_NOTIFY || in->op == IR_WAIT)) {
            L->accslot[L->nacc] = fp_slot(L, slot_of, in->param);
            L->acc[L->nacc++] = i;
            L->sigk |= in->op == IR_NOTIFY || in->op == IR_WAIT;
        }
        /* signals or peer access: a fence */
        L->fence |= !in->dead && (in->op == IR_NOTIFY || in->op == IR_WAIT ||
                                  ((in->op == IR_LOAD || in->op == IR_STORE ||
                                    in->op == IR_ATOMIC) && in->opnd[3] >= 0));
    }
    if (grow_tiles(m, L->ntiles)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    L->tile0 = m->nt;
    for (int k = 0; k < L->ntiles; k++) {
        Tile *t = &m->t[m->nt + k];
        memset(t, 0, sizeof *t);
        t->launch = m->nl - 1;
        t->first = (int64_t)k * L->chunk;
        t->last = t->first + L->chunk < L->total ? t->first + L->chunk : L->total;
        t->pred = -1;
    }
    /* the signature: kernel, grid, tiles, and per parameter the buffer
     * (its ordinal in this run and the offset), extents and strides, or
     * the scalar's bits */
    uint64_t key = hash(HASH0, &f, sizeof f);
    key = hash(key, L->grid, sizeof L->grid);
    key = hash(key, &L->chunk, sizeof L->chunk);
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *ip = &f->params[p];
        if (ip->kind != PK_TENSOR) {
            key = hash(key, &L->b.slots[p], sizeof L->b.slots[p]);
            continue;
        }
        const BkTensorDesc *d = &L->b.desc[p];
        int64_t n = 1;
        for (int k = 0; k < ip->rank; k++)
            n += (d->shape[k] - 1) * (d->stride[k] < 0 ? -d->stride[k] : d->stride[k]);
        key = reg_key(m, key, d->data, (size_t)n * (size_t)dsl_dtype_bytes(ip->dtype));
        key = hash(key, d->shape, sizeof d->shape[0] * ip->rank);
        key = hash(key, d->stride, sizeof d->stride[0] * ip->rank);
    }
    int hit = cache_hit(m, L, key);
    if (hit) {
        if (hit < 0)
            snprintf(err, errlen, "out of memory");
        return hit < 0 ? -1 : 0;
    }
    ensure_fp(m, L);
    return cache_link(m, L, f->name, key, err, errlen);
}


/* ------------------------------------------------------------ the run */

/* The ready heap: the lowest tile (program order) first, so the rank's
 * steps, collectives included, start in about the order of the
 * launch-per-op mode and the critical path is not starved. */
static void push_locked(RtMega *m, int t)
{
    int i = m->nq++;
    while (i > 0 && m->q[(i - 1) / 2] > t) {
        m->q[i] = m->q[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->q[i] = t;
}

static int pop_locked(RtMega *m)
{
    int top = m->q[0], last = m->q[--m->nq], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= m->nq)
            break;
        if (c + 1 < m->nq && m->q[c + 1] < m->q[c])
            c++;
        if (last <= m->q[c])
            break;
        m->q[i] = m->q[c];
        i = c;
    }
    if (m->nq)
        m->q[i] = last;
    return top;
}

static void fail_locked(RtMega *m, const char *fmt, const char *what)
{
    if (m->failed)
        return;
    m->failed = 1;
    snprintf(m->ferr, sizeof m->ferr, fmt, m->wv.rank, m->done, m->nt, what);
    pthread_cond_broadcast(&m->cv);
}

static void *worker(void *arg)
{
    RtMega *m = arg;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        if (m->failed || m->done == m->nt)
            break;
        if (m->nq == 0) {
            if (m->running == 0) {
                fail_locked(m, "megakernel on rank %d: after %d of %d tile-tasks none is ready "
                            "(internal)%s", "");
                break;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            m->idle++;
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
            m->idle--;
            if (m->wv.abort_flag && __atomic_load_n(m->wv.abort_flag, __ATOMIC_ACQUIRE))
                fail_locked(m, "megakernel on rank %d: stopped after %d of %d tile-tasks: "
                            "another rank failed%s", "");
            continue;
        }
        int ti = pop_locked(m);
        m->running++;
        pthread_mutex_unlock(&m->mu);
        Tile *t = &m->t[ti];
        Launch *L = m->l[t->launch];
        bool stop = m->wv.abort_flag && __atomic_load_n(m->wv.abort_flag, __ATOMIC_ACQUIRE);
        int rc = 0;
        if (!stop && L->op)
            rc = L->op(L->arg);
        else if (!stop)
            L->fn((void *const *)L->b.argv, t->first, t->last, L->ctx.nprog);
        pthread_mutex_lock(&m->mu);
        m->running--;
        m->done++;
        if (stop)
            fail_locked(m, "megakernel on rank %d: stopped after %d of %d tile-tasks: another "
                        "rank failed%s", "");
        else if (rc)
            fail_locked(m, "megakernel on rank %d: %d of %d tile-tasks done when a copy or "
                        "collective failed%s", "");
        else if (!L->op && (__atomic_load_n(&L->ctx.assert_failed, __ATOMIC_ACQUIRE) ||
                            __atomic_load_n(&L->ctx.failed, __ATOMIC_ACQUIRE)))
            fail_locked(m, "megakernel on rank %d: %d of %d tile-tasks done when kernel %s "
                        "failed", L->f->name); /* stop here: its status has the message */
        int woke = 0;
        for (int k = 0; k < t->nsucc && !m->failed; k++)
            if (__atomic_sub_fetch(&m->t[t->succ[k]].pending, 1, __ATOMIC_ACQ_REL) == 0) {
                push_locked(m, t->succ[k]);
                if (woke++ < m->idle) /* wake only as many as there is work */
                    pthread_cond_signal(&m->cv);
            }
        if (m->done == m->nt || m->failed)
            pthread_cond_broadcast(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* The longest chain of the segment as "k3 x2 -> k5 x2". */
static void record_segment(RtMega *m)
{
    RtMegaLog *g = m->log;
    int best = -1;
    for (int i = 0; i < m->nt; i++)
        if (best < 0 || m->t[i].dist > m->t[best].dist)
            best = i;
    if (best < 0)
        return;
    g->crit += m->t[best].dist + 1;
    int chain[4096], n = 0;
    for (int i = best; i >= 0 && n < 4096; i = m->t[i].pred)
        chain[n++] = i;
    char buf[1024];
    size_t len = 0;
    buf[0] = 0;
    for (int k = n - 1; k >= 0;) {
        int l = m->t[chain[k]].launch, c = 0;
        while (k >= 0 && m->t[chain[k]].launch == l) {
            c++;
            k--;
        }
        len += (size_t)snprintf(buf + len, len < sizeof buf ? sizeof buf - len : 0, "%s%s x%d",
                                g->crit_path || len ? " -> " : "", m->l[l]->name, c);
        if (len >= sizeof buf)
            break;
    }
    size_t old = g->crit_path ? strlen(g->crit_path) : 0;
    char *p = realloc(g->crit_path, old + strlen(buf) + 1);
    if (p) {
        if (!old)
            p[0] = 0;
        strcat(p, buf);
        g->crit_path = p;
    }
}

static void record_boundary(RtMega *m, const char *what)
{
    RtMegaLog *g = m->log;
    RtMegaStep *s = new_step(m);
    if (s) {
        snprintf(s->name, sizeof s->name, "%s", what);
        s->boundary = true;
    }
    g->crit++;
    size_t old = g->crit_path ? strlen(g->crit_path) : 0;
    char *p = realloc(g->crit_path, old + strlen(what) + 5);
    if (p) {
        if (!old)
            p[0] = 0;
        strcat(strcat(p, old ? " -> " : ""), what);
        g->crit_path = p;
    }
    g->segments++;
    m->seg_first_step = g->n;
}

static void reset(RtMega *m)
{
    for (int i = 0; i < m->nt; i++)
        free(m->t[i].succ);
    for (int i = 0; i < m->nl; i++)
        launch_free(m->l[i]);
    m->nt = m->nl = 0;
    m->last_remote = -1;
}

int rt_mega_flush(RtMega *m, const char *what, char *err, size_t errlen)
{
    int rc = 0;
    if (m->nt) {
        m->q = malloc((size_t)m->nt * sizeof *m->q);
        if (!m->q) {
            snprintf(err, errlen, "out of memory");
            reset(m);
            return -1;
        }
        m->nq = m->done = m->running = m->failed = m->idle = 0;
        for (int i = 0; i < m->nt; i++)
            if (m->t[i].pending == 0)
                push_locked(m, i);
        int nw = m->workers - 1 < m->nt - 1 ? m->workers - 1 : m->nt - 1;
        pthread_t th[256];
        int started = 0;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, RT_RANK_STACK);
        for (int i = 0; i < nw; i++)
            if (pthread_create(&th[started], &attr, worker, m) == 0)
                started++;
        pthread_attr_destroy(&attr);
        worker(m);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        free(m->q);
        m->q = NULL;
        for (int i = 0; i < m->nl && rc == 0; i++) /* a kernel's own message first */
            if (m->l[i]->ntiles && !m->l[i]->op &&
                rt_cpu_launch_status(m->l[i]->f, &m->l[i]->ctx, err, errlen) != BLKC_OK)
                rc = -1;
        if (m->failed && rc == 0) {
            snprintf(err, errlen, "%s", m->ferr);
            rc = -1;
        }
        if (m->log)
            record_segment(m);
    }
    reset(m);
    if (what && m->log)
        record_boundary(m, what);
    if (what)
        cache_boundary(m, what);
    return rc;
}

int rt_mega_workers(const RtMega *m)
{
    return m->workers;
}

void rt_mega_free(RtMega *m)
{
    if (!m)
        return;
    reset(m);
    free(m->t);
    free(m->l);
    free(m->reg);
    free(m->ecap_buf);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

void rt_mega_rec_free(RtMegaRec *rec)
{
    for (int r = 0; r < RT_MEGA_MAX_RANKS; r++) {
        free(rec->log[r].s);
        free(rec->log[r].crit_path);
        memset(&rec->log[r], 0, sizeof rec->log[r]);
        struct RtMegaCache *c = rec->cache[r];
        for (int i = 0; c && i < c->n; i++)
            free(c->e[i].edges);
        if (c)
            free(c->e);
        free(c);
        rec->cache[r] = NULL;
    }
}
