/* spec_codegen.c — specialization changes the CPU code: the LLVM IR of a
 * kernel compiled with launch facts (IrParam.assume) against the same
 * kernel without them (unit inner stride: a constant 1, no stride load;
 * 16-byte alignment: !align on the data pointer; extents and outer strides
 * that are multiples of 16: their low bits cleared), before and after
 * optimization; then the variants' results against a reference: the unit
 * picks the specialized code only for arguments that fit, and the general
 * code for a strided argument gives the right answer. */
#include "compiler/cache.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c)                                                          \
    do {                                                                  \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,        \
                    __LINE__, #c);                                        \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static const char *vadd_src =
    "kernel vadd<BLOCK = 64>(A: f32[N], B: f32[N], C: f32[N])\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK] * 2.0;\n"
    "}\n";
static const char *rows_src =
    "kernel rows<BLOCK = 32>(X: f32[R, N], Y: f32[R, N])\n"
    "    grid(R, cdiv(N, BLOCK))\n"
    "{\n"
    "    let r = program_id(0);\n"
    "    let o = program_id(1) * BLOCK;\n"
    "    Y[r, o +: BLOCK] = X[r, o +: BLOCK] * 3.0;\n"
    "}\n";

#define ALL_FACTS                                                         \
    (IR_ASSUME_ALIGN16 | IR_ASSUME_UNIT_INNER | IR_ASSUME_DIM16(0) |      \
     IR_ASSUME_DIM16(1) | IR_ASSUME_STRIDE16(0))

/* The `stage` text of src's kernel with `assume` on every tensor param. */
static char *emit(const char *src, uint32_t assume, const char *stage)
{
    DslSource s = {"spec", src, strlen(src)};
    DslDiags d;
    memset(&d, 0, sizeof d);
    IrModule *m = ir_compile_source(&s, &d, NULL, 0, NULL);
    dsl_diags_free(&d);
    if (!m)
        return NULL;
    for (int p = 0; p < m->funcs[0]->nparams; p++)
        m->funcs[0]->params[p].assume = assume;
    DslBuf b;
    memset(&b, 0, sizeof b);
    char err[512];
    BkOptions bo = {NULL, 3};
    int rc = bk_cpu_backend.emit(m, &bo, stage, &b, err, sizeof err);
    ir_module_free(m);
    if (rc != 0) {
        fprintf(stderr, "emit %s: %s\n", stage, err);
        dsl_buf_free(&b);
        return NULL;
    }
    return b.data; /* NUL-terminated text */
}

static bool has(const char *text, const char *needle)
{
    return text && strstr(text, needle) != NULL;
}

static int lines(const char *text)
{
    int n = 0;
    for (const char *p = text; p && *p; p++)
        n += *p == '\n';
    return n;
}

static void test_ir(void)
{
    char *g = emit(vadd_src, 0, "llvm-unopt");
    char *u = emit(vadd_src, IR_ASSUME_UNIT_INNER, "llvm-unopt");
    char *a = emit(vadd_src, IR_ASSUME_ALIGN16, "llvm-unopt");
    char *x = emit(vadd_src, IR_ASSUME_DIM16(0), "llvm-unopt");
    CHECK(g && u && a && x);
    /* general: every stride and extent comes from the descriptor */
    CHECK(has(g, "%A.stride0 = load i64"));
    CHECK(has(g, "%C.stride0 = load i64"));
    CHECK(!has(g, "!align") && !has(g, ".x16"));
    /* unit inner stride: no stride load, and nothing else changes */
    CHECK(!has(u, ".stride0 = load"));
    CHECK(has(u, "%A.shape0 = load i64") && !has(u, "!align"));
    /* alignment: !align 16 on each data pointer load */
    CHECK(has(a, "%A.data = load ptr") && has(a, "!align"));
    CHECK(has(a, "!{i64 16}"));
    CHECK(has(a, "%A.stride0 = load i64"));
    /* N % 16 == 0: the extent's low bits cleared */
    CHECK(has(x, "%A.shape0.x16 = and i64 %A.shape0, -16"));
    CHECK(!has(g, "A.shape0.x16"));

    /* after O3: the general code still tests the stride (stride == 1 fast
     * path and a general path); the specialized code has no stride left
     * and is smaller */
    char *go = emit(vadd_src, 0, "llvm");
    char *so = emit(vadd_src, ALL_FACTS, "llvm");
    CHECK(go && so);
    CHECK(has(go, "A.stride0"));
    CHECK(!has(so, "stride"));
    CHECK(lines(so) < lines(go));
    printf("vadd O3 IR: general %d lines, specialized %d lines\n", lines(go),
           lines(so));

    /* rank 2: the outer stride multiple of 16, the inner one a constant */
    char *r2 = emit(rows_src, ALL_FACTS, "llvm-unopt");
    char *r0 = emit(rows_src, 0, "llvm-unopt");
    CHECK(r2 && r0);
    CHECK(has(r2, "%X.stride0.x16 = and i64 %X.stride0, -16"));
    CHECK(!has(r2, "X.stride1") && has(r0, "%X.stride1 = load i64"));
    CHECK(has(r2, "%X.shape1.x16 = and i64 %X.shape1, -16"));
    free(g); free(u); free(a); free(x); free(go); free(so); free(r2);
    free(r0);
}

/* Run rows (Y = 3X) through unit u with an R x N view whose rows are `ld`
 * floats apart and whose elements are `step` apart, data offset by off
 * floats; returns the assume bits of the variant the unit picked. */
static uint32_t run_rows(JcUnit *u, int64_t R, int64_t N, int64_t ld,
                         int64_t step, int off)
{
    /* aligned_alloc wants a size that is a multiple of the alignment */
    size_t cap = (size_t)((R - 1) * ld + (N - 1) * step + off + 64 + 15) & ~(size_t)15;
    float *x = aligned_alloc(64, cap * 4), *y = aligned_alloc(64, cap * 4);
    for (size_t i = 0; i < cap; i++) {
        x[i] = (float)(i % 97) - 40.0f;
        y[i] = -1.0f;
    }
    int64_t shape[2] = {R, N}, str[2] = {ld, step};
    DLTensor tx = {.data = x + off, .device = {kDLCPU, 0}, .ndim = 2,
                   .dtype = {kDLFloat, 32, 1}, .shape = shape,
                   .strides = str};
    DLTensor ty = tx;
    ty.data = y + off;
    blkc_arg args[2] = {{BLKC_ARG_TENSOR, {.tensor = &tx}},
                        {BLKC_ARG_TENSOR, {.tensor = &ty}}};
    uint32_t sig[2];
    CHECK(rt_signature(u->ir->funcs[0], args, 2, sig));
    const IrFunc *f = u->ir->funcs[0];
    BkRangeFn fn = jc_code_range(u->code, f->name);
    jc_unit_pick(u, 0, sig, BLKC_SPECIALIZE_DEFAULT, &f, &fn);
    /* the picked code's facts must all hold for these arguments */
    for (int p = 0; p < 2; p++)
        CHECK((f->params[p].assume & ~sig[p]) == 0);
    char err[256];
    CHECK(rt_cpu_launch(f, fn, args, 2, NULL, NULL, err, sizeof err) ==
          BLKC_OK);
    bool *in_view = calloc(cap, 1);
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < N; c++) {
            size_t i = (size_t)(off + r * ld + c * step);
            in_view[i] = true;
            CHECK(y[i] == 3.0f * x[i]);
        }
    for (size_t i = 0; i < cap; i++)
        if (!in_view[i])
            CHECK(y[i] == -1.0f); /* nothing outside the view written */
    uint32_t picked = f->params[0].assume;
    free(in_view);
    free(x);
    free(y);
    return picked;
}

static void test_results(void)
{
    JcMem *mc = jc_mem_new();
    JcSrc js = {rows_src, strlen(rows_src), NULL, 0, "cpu", NULL, 3, 0, 0};
    JcUnit *u;
    int how;
    char err[1024];
    CHECK(jc_unit_get(mc, &js, "rows.blk", &u, &how, err, sizeof err) ==
          BLKC_OK);
    /* every fact: the variant compiled for them runs */
    uint32_t p = run_rows(u, 16, 64, 64, 1, 0);
    CHECK(p == (IR_ASSUME_ALIGN16 | IR_ASSUME_UNIT_INNER |
                IR_ASSUME_DIM16(0) | IR_ASSUME_DIM16(1) |
                IR_ASSUME_STRIDE16(0)));
    /* strided rows and columns: never the unit-stride code */
    p = run_rows(u, 16, 64, 160, 2, 0);
    CHECK(!(p & IR_ASSUME_UNIT_INNER));
    p = run_rows(u, 5, 40, 43, 1, 1);    /* unaligned, odd sizes */
    CHECK(!(p & (IR_ASSUME_ALIGN16 | IR_ASSUME_DIM16(1) |
                 IR_ASSUME_STRIDE16(0))));
    p = run_rows(u, 3, 48, 48, 3, 4);
    CHECK(!(p & IR_ASSUME_UNIT_INNER));
    run_rows(u, 16, 64, 64, 1, 0);       /* again, after the others */
    jc_unit_unref(u);
    jc_mem_free(mc);
}

int main(void)
{
    setenv("BLKC_CACHE_DISABLE", "1", 1);
    jc_disk_reset();
    test_ir();
    test_results();
    printf("spec_codegen: %s (%d failures)\n", failures ? "FAILED" : "ok",
           failures);
    return failures != 0;
}
