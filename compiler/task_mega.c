/* task_mega.c — `blkc plan --megakernel`: the tile-task graph of a task in
 * megakernel mode (docs/task.md "Megakernel mode").
 *
 * The graph is what the runtime builds (runtime/mega.c): its footprints are
 * computed on the bound buffers, so the task is compiled and run once on
 * zero inputs on its local CPU ranks with the megakernel's record on, and
 * the record is printed: per step of rank 0's program, the launch's
 * tile-tasks (grid, program ids per tile), the local edges into them and
 * from which earlier launches, the parameters whose footprint is the whole
 * buffer in every tile (the conservative case), and the boundaries
 * (collectives: remote dependencies; copies, signals, async blocks: local)
 * where every tile before finishes first; then totals over every rank and
 * the critical path (tile-tasks and boundaries on the longest chain). */
#include "task.h"

#include "../runtime/mega.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "%3 matmul" for the generated kernel __k3 (suffixes: fused forms). */
static void kernel_what(const TkTask *t, const char *name, char *out, size_t n)
{
    int id = -1, len = 0;
    if (sscanf(name, "__k%d%n", &id, &len) != 1 || id < 0 || id >= t->nn) {
        snprintf(out, n, "call");
        return;
    }
    const char *sfx = name + len;
    snprintf(out, n, "%%%d %s%s%s", id, tk_op_name(t->n[id].op), *sfx ? " " : "",
             !strcmp(sfx, "_agw") ? "(AllGather+GEMM)"
             : !strcmp(sfx, "_rows") ? "(GEMM+ReduceScatter rows)"
             : !strcmp(sfx, "_red") ? "(reduction of the pushed slots)" : sfx);
}

static bool remote_boundary(const char *what)
{
    static const char *const coll[] = {"all_reduce", "all_gather", "reduce_scatter",
                                       "all_to_all", "broadcast", "barrier", "reduce",
                                       "gather", "scatter", "exchange", "notify", "wait"};
    for (size_t i = 0; i < sizeof coll / sizeof *coll; i++)
        if (!strcmp(what, coll[i]))
            return true;
    return false;
}

static void print_graph(DslBuf *o, const TkTask *t, const RtMegaRec *rec)
{
    int R = t->nranks < RT_MEGA_MAX_RANKS ? t->nranks : RT_MEGA_MAX_RANKS;
    const RtMegaLog *g = &rec->log[0];
    dsl_buf_printf(o, "megakernel: one tile-task graph per rank, %d worker thread%s per rank "
                   "(CPU ranks; rank 0's graph)\n", g->workers, g->workers == 1 ? "" : "s");
    int seg = -1, first = 0;
    for (int i = 0; i < g->n; i++) {
        const RtMegaStep *s = &g->s[i];
        if (s->segment != seg) {
            seg = s->segment;
            first = i;
        }
        if (s->boundary) {
            bool rem = remote_boundary(s->name);
            dsl_buf_printf(o, "  step %d: %s — boundary, %s\n", i, s->name,
                           rem ? "remote (signals from the peer ranks; every tile-task "
                                 "before it on this rank finishes first)"
                               : "local (every tile-task before it finishes first)");
            continue;
        }
        char what[96];
        int64_t total = s->grid[0] * s->grid[1] * s->grid[2];
        if (s->op) {
            dsl_buf_printf(o, "  step %d: %s: 1 tile-task (%s)", i, s->name,
                           s->remote ? "collective, remote: done when the peers' data arrived"
                                     : "local copy");
        } else {
            kernel_what(t, s->name, what, sizeof what);
            dsl_buf_printf(o, "  step %d: %s (%s%s) grid %lldx%lldx%lld: %d tile-task%s", i,
                           s->name, what, s->fence ? ", signals or peer access: a fence" : "",
                           (long long)s->grid[0], (long long)s->grid[1],
                           (long long)s->grid[2], s->tiles, s->tiles == 1 ? "" : "s");
            if (s->tiles && total > s->tiles)
                dsl_buf_printf(o, " of %lld programs",
                               (long long)((total + s->tiles - 1) / s->tiles));
        }
        dsl_buf_printf(o, "; edges in: %lld local, %lld remote", (long long)s->edges,
                       (long long)s->redges);
        if (s->from) {
            dsl_buf_printf(o, " from");
            for (int b = 0; b < 64; b++)
                if (s->from >> b & 1)
                    dsl_buf_printf(o, " step %d%s", first + b, b == 63 ? "+" : "");
        }
        if (s->fallback)
            dsl_buf_printf(o, "; %d param%s whole-buffer", s->fallback,
                           s->fallback == 1 ? "" : "s");
        dsl_buf_printf(o, "\n");
    }
    int64_t tiles = 0, edges = 0, redges = 0, fb = 0, nb = 0, nrem = 0, ncoll = 0;
    for (int r = 0; r < R; r++) {
        tiles += rec->log[r].tiles;
        edges += rec->log[r].edges;
        redges += rec->log[r].redges;
        fb += rec->log[r].fallback;
    }
    for (int i = 0; i < g->n; i++) {
        ncoll += g->s[i].remote;
        if (g->s[i].boundary) {
            nb++;
            nrem += remote_boundary(g->s[i].name);
        }
    }
    dsl_buf_printf(o, "  rank 0: %lld tile-tasks (%lld collectives), edges %lld local + %lld "
                   "remote, %lld boundar%s (%lld remote), %lld whole-buffer footprints\n",
                   (long long)g->tiles, (long long)ncoll, (long long)g->edges,
                   (long long)g->redges, (long long)nb, nb == 1 ? "y" : "ies", (long long)nrem,
                   (long long)g->fallback);
    if (R > 1)
        dsl_buf_printf(o, "  all %d ranks: %lld tile-tasks, edges %lld local + %lld remote, %lld "
                       "whole-buffer footprints\n", R, (long long)tiles, (long long)edges,
                       (long long)redges, (long long)fb);
    dsl_buf_printf(o, "  critical path (rank 0): %lld steps: %s\n", (long long)g->crit,
                   g->crit_path ? g->crit_path : "(empty)");
}

int tk_mega_plan(DslBuf *out, TkTask *t, char *err, size_t errlen)
{
    if (t->nranks > RT_MEGA_MAX_RANKS) {
        snprintf(err, errlen, "plan --megakernel: at most %d ranks", RT_MEGA_MAX_RANKS);
        return -1;
    }
    int np = 0;
    for (int i = 0; i < t->nn; i++)
        if ((t->n[i].op == TK_PARAM || t->n[i].op == TK_SCALAR) && t->n[i].param + 1 > np)
            np = t->n[i].param + 1;
    TkArg *args = calloc((size_t)np + 1, sizeof *args);
    TkArg *res = calloc((size_t)t->nresults + 1, sizeof *res);
    RtMegaRec *rec = calloc(1, sizeof *rec);
    int rc = -1;
    if (!args || !res || !rec) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (pass ? t->nresults : t->nn); i++) {
            const TkNode *n = pass ? &t->n[t->results[i]] : &t->n[i];
            if (!pass && n->op != TK_PARAM)
                continue;
            TkArg *a = pass ? &res[i] : &args[n->param];
            memcpy(a->shape, n->dims, sizeof a->shape);
            a->data = calloc((size_t)tk_numel(n) + 1, (size_t)dsl_dtype_bytes(n->dtype));
            if (!a->data) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
        }
    rec->record = true;
    t->megakernel = true;
    t->mega_rec = rec;
    rc = tk_run(t, args, res, err, errlen);
    t->mega_rec = NULL;
    if (rc == 0)
        print_graph(out, t, rec);
out:
    for (int i = 0; args && i < np; i++)
        free(args[i].data);
    for (int i = 0; res && i < t->nresults; i++)
        free(res[i].data);
    free(args);
    free(res);
    if (rec)
        rt_mega_rec_free(rec);
    free(rec);
    return rc;
}
