/* pipeline.c — the whole compiler pipeline in one place:
 *   parse -> check + lower to Core IR -> bcast -> fold -> cse/dce
 * with the verifier between passes (always: it is cheap next to LLVM). */
#include "ir.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef int (*IrPass)(IrFunc *f, char *err, size_t errlen);

/* An upper bound of one program instance's tile storage: every live tile
 * value and var at 8 bytes an element, doubled for the conversions and
 * temporaries a backend may add (dot operands, reductions). */
static int64_t frame_estimate(const IrFunc *f)
{
    int64_t n = 0;
    for (int i = 0; i < f->nins; i++)
        if (!f->ins[i].dead && f->ins[i].type.rank > 0)
            n += ir_numel(&f->ins[i].type);
    for (int v = 0; v < f->nvars; v++)
        n += ir_numel(&f->vars[v].type);
    return 16 * n + 4096;
}

static const struct {
    const char *name;
    IrPass run;
} passes[] = {
    {"bcast", ir_pass_bcast},
    {"fold", ir_pass_fold},
    {"cse", ir_pass_cse},
};

/* Run every pass over f, verifying after each; 0 or -1 with err set. */
static int run_passes(IrFunc *f, char *err, size_t errlen)
{
    if (ir_verify(f, 0, err, errlen))
        return -1;
    for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
        if (passes[i].run(f, err, errlen))
            return -1;
        if (ir_verify(f, i + 1 == sizeof passes / sizeof passes[0]
                             ? IR_VERIFY_FINAL : 0, err, errlen))
            return -1;
    }
    return 0;
}

IrModule *ir_compile_source(const DslSource *src, DslDiags *diags,
                            const char *const *defines, int ndefines,
                            IrTiming *timing)
{
    DslArena ast_arena = {0};
    double t0 = now_ms();
    diags->src = src;
    AstProgram *prog = dsl_parse(&ast_arena, diags, src);
    double t1 = now_ms();
    if (!prog || diags->nerrors) {
        if (!prog && !diags->nerrors)
            dsl_error(diags, (DslLoc){0, 0}, "out of memory");
        dsl_arena_free(&ast_arena);
        return NULL;
    }
    IrModule *m = ir_lower(prog, diags, defines, ndefines);
    double t2 = now_ms();
    if (!m) {
        if (!diags->nerrors)
            dsl_error(diags, (DslLoc){0, 0}, "out of memory");
        dsl_arena_free(&ast_arena);
        return NULL;
    }
    /* names in the IR point into the AST arena: keep it with the module */
    dsl_arena_adopt(&m->arena, &ast_arena);
    char err[512];
    for (int i = 0; i < m->nfuncs; i++) {
        /* device functions are small host plans: verified, not optimised */
        int rc = m->funcs[i]->is_device
                     ? ir_verify(m->funcs[i], 0, err, sizeof err)
                     : run_passes(m->funcs[i], err, sizeof err);
        m->funcs[i]->frame_bytes = frame_estimate(m->funcs[i]);
        if (rc) {
            dsl_error(diags, m->funcs[i]->loc, "%s", err);
            ir_module_free(m);
            return NULL;
        }
    }
    if (timing) {
        timing->parse_ms = t1 - t0;
        timing->lower_ms = t2 - t1;
        timing->passes_ms = now_ms() - t2;
    }
    return m;
}
