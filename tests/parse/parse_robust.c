/* parse_robust.c — the front end must never crash, hang or leak: random
 * bytes, random token soup, pathological nesting and long chains, an
 * over-size source, and several threads parsing at once. Each input is
 * parsed and, when a program comes back, printed (also after errors, so
 * partial ASTs are exercised too). */
#include "dsl/dsl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                    \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
            failures++;                                                    \
        }                                                                  \
    } while (0)

/* Parse and print; return the number of errors and, if wanted, a copy of
 * the diagnostics + AST text. */
static int parse_text(const char *text, size_t len, char **text_out)
{
    DslSource src = {"robust.blk", text, len};
    DslArena arena = {0};
    DslDiags diags = {0};
    diags.src = &src;
    AstProgram *prog = dsl_parse(&arena, &diags, &src);
    CHECK(prog != NULL, "dsl_parse returned NULL");
    DslBuf out = {0};
    dsl_print_ast(&out, prog);
    int n = diags.nerrors;
    if (text_out) {
        DslBuf all = {0};
        dsl_buf_put(&all, diags.out.data ? diags.out.data : "", diags.out.len);
        dsl_buf_put(&all, out.data ? out.data : "", out.len);
        *text_out = all.data;
    }
    dsl_buf_free(&out);
    dsl_diags_free(&diags);
    dsl_arena_free(&arena);
    return n;
}

static int parse_buf(DslBuf *b) { return parse_text(b->data, b->len, NULL); }

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void random_bytes(void)
{
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = rnd() % 300;
        char *s = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            s[i] = (char)(iter % 2 ? rnd() % 256 : 32 + rnd() % 95);
        s[n] = 0;
        parse_text(s, n, NULL);
        free(s);
    }
}

static void token_soup(void)
{
    static const char *toks[] = {
        "kernel", "device", "task", "const", "let", "var", "for", "in",
        "step", "while", "if", "else", "return", "as", "grid", "warps",
        "stages", "symmetric", "signal", "split", "replicated", "async",
        "sync", "launch", "true", "false", "inf", "nan", "x", "f32", "N",
        "None", "0", "1", "0x1F", "1.5", ".5", "1e-5", "99999999999999999999",
        "+:", "..", "->", "@", "&&", "||", "<<", ">>", "==", "!=", "<=",
        ">=", "+=", "-=", "*=", "/=", "+", "-", "*", "/", "%", "<", ">", "=",
        "!", "~", "&", "|", "^", "(", ")", "[", "]", "{", "}", ",", ";", ":",
        ".", "/*", "*/", "//", "\n", "$", "\xC3\xA9",
    };
    int nt = (int)(sizeof toks / sizeof toks[0]);
    for (int iter = 0; iter < 3000; iter++) {
        DslBuf b = {0};
        int n = (int)(rnd() % 80);
        /* half of them start like a function so that bodies get reached */
        if (iter % 2)
            dsl_buf_printf(&b, "kernel k<A = 1>(x: f32[N]) grid(1) { ");
        for (int i = 0; i < n; i++)
            dsl_buf_printf(&b, "%s ", toks[rnd() % (unsigned)nt]);
        dsl_buf_put(&b, "", 0);
        parse_buf(&b);
        dsl_buf_free(&b);
    }
}

static void repeat(DslBuf *b, const char *s, int n)
{
    for (int i = 0; i < n; i++)
        dsl_buf_printf(b, "%s", s);
}

static void deep_inputs(void)
{
    DslBuf b = {0};
    /* 10000 nested parentheses */
    dsl_buf_printf(&b, "const X = ");
    repeat(&b, "(", 10000);
    dsl_buf_printf(&b, "1");
    repeat(&b, ")", 10000);
    dsl_buf_printf(&b, ";");
    CHECK(parse_buf(&b) == 1, "10000 parens: one error");
    dsl_buf_free(&b);

    /* 10000 nested blocks, and brackets */
    dsl_buf_printf(&b, "kernel k() ");
    repeat(&b, "{", 10000);
    repeat(&b, "}", 10000);
    CHECK(parse_buf(&b) == 1, "10000 blocks: one error");
    dsl_buf_free(&b);
    dsl_buf_printf(&b, "kernel k() { let a = x");
    repeat(&b, "[x", 10000);
    CHECK(parse_buf(&b) == 1, "10000 index brackets: one error");
    dsl_buf_free(&b);

    /* 100000 prefix operators: bounded stack, one error */
    dsl_buf_printf(&b, "kernel k() { let a = ");
    repeat(&b, "- ", 100000);
    dsl_buf_printf(&b, "x; }");
    CHECK(parse_buf(&b) == 1, "100000 unary minus: one error");
    dsl_buf_free(&b);

    /* 2000 prefix operators: within the stack, over the depth limit */
    dsl_buf_printf(&b, "kernel k() { let a = ");
    repeat(&b, "!", 2000);
    dsl_buf_printf(&b, "x; }");
    CHECK(parse_buf(&b) == 1, "2000 unary not: one error");
    dsl_buf_free(&b);

    /* a 100000-term sum: left-deep tree capped, printing stays bounded */
    dsl_buf_printf(&b, "kernel k() { let a = x");
    repeat(&b, " + x", 100000);
    dsl_buf_printf(&b, "; let b = y");
    repeat(&b, " as f32", 5000);
    dsl_buf_printf(&b, "; }");
    CHECK(parse_buf(&b) == 1, "100000-term sum: one error");
    dsl_buf_free(&b);

    /* a long but legal sum */
    dsl_buf_printf(&b, "kernel k() { let a = x");
    repeat(&b, " + x", 500);
    dsl_buf_printf(&b, "; }");
    CHECK(parse_buf(&b) == 0, "500-term sum is fine");
    dsl_buf_free(&b);

    /* many statements and functions (lists grow) */
    for (int i = 0; i < 2000; i++)
        dsl_buf_printf(&b, "const C%d = %d;\nkernel k%d(x%d: f32[N]) { let a = %d; }\n",
                       i, i, i, i, i);
    CHECK(parse_buf(&b) == 0, "many functions");
    dsl_buf_free(&b);

    /* a long identifier and a long token in a message */
    dsl_buf_printf(&b, "kernel k() { let a = 1 ");
    repeat(&b, "z", 5000);
    dsl_buf_printf(&b, "; }");
    CHECK(parse_buf(&b) == 1, "long identifier");
    dsl_buf_free(&b);

    /* several hundred errors: stops after DSL_MAX_ERRORS */
    dsl_buf_printf(&b, "kernel k() {\n");
    repeat(&b, "let a = ;\n", 500);
    dsl_buf_printf(&b, "}\n");
    CHECK(parse_buf(&b) == DSL_MAX_ERRORS + 1, "error cap");
    dsl_buf_free(&b);

    /* over-size source: rejected before it is read */
    DslSource src = {"big.blk", "", DSL_MAX_SOURCE + 1u};
    DslArena arena = {0};
    DslDiags diags = {0};
    diags.src = &src;
    AstProgram *prog = dsl_parse(&arena, &diags, &src);
    CHECK(prog && diags.nerrors == 1 && strstr(diags.out.data, "source too large"),
          "source too large");
    dsl_diags_free(&diags);
    dsl_arena_free(&arena);
}

/* ------------------------------------------------------------ threads */

static const char *thread_src =
    "kernel matmul<BM = 64, BN = 64, BK = 32>(A: f16[M, K], B: f16[K, N], C: f16[M, N])\n"
    "    grid(cdiv(M, BM), cdiv(N, BN)) warps(4) stages(3)\n"
    "{\n"
    "    var acc = zeros(f32, BM, BN);\n"
    "    for k in 0 .. K step BK { acc = dot(A[m +: BM, k +: BK], B[k +: BK, n +: BN], acc); }\n"
    "    C[m +: BM, n +: BN] = acc as f16;\n"
    "    let bad = ;\n"
    "}\n";

static void *thread_main(void *arg)
{
    char *ref = arg;
    for (int i = 0; i < 200; i++) {
        char *got = NULL;
        parse_text(thread_src, strlen(thread_src), &got);
        if (!got || strcmp(got, ref) != 0) {
            free(got);
            return (void *)1;
        }
        free(got);
    }
    return NULL;
}

static void threads(void)
{
    char *ref = NULL;
    CHECK(parse_text(thread_src, strlen(thread_src), &ref) == 1, "thread src");
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_main, ref);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        CHECK(r == NULL, "thread %d output differs", i);
    }
    free(ref);
}

int main(void)
{
    random_bytes();
    token_soup();
    deep_inputs();
    threads();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
