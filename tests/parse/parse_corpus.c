/* parse_corpus.c — golden tests of the front end. Reads a corpus in the
 * format of STYLE.md item 9 (`=== name`, input lines, `---`, expected
 * lines), parses each input as "<name>.blk" and compares either the
 * dsl_print_ast text (mode "ast") or the rendered diagnostics (mode
 * "errors"). In both texts `\xNN` stands for the byte NN, so that inputs
 * with invalid UTF-8 or control bytes can be written down.
 *
 * usage: parse_corpus [CORPUS [ast|errors [--print]]] (defaults from
 * PARSE_CORPUS and PARSE_MODE). Prints a diff-ish report per mismatch, then
 * "N passed, N failed"; exit 1 on any failure. With --print, writes the
 * corpus back to stdout with the actual outputs (to review, then commit). */
#include "dsl/dsl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PARSE_CORPUS
#define PARSE_CORPUS "ast.golden"
#endif
#ifndef PARSE_MODE
#define PARSE_MODE "ast"
#endif

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    DslBuf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsl_buf_put(&b, chunk, n);
    fclose(f);
    if (!b.data)
        dsl_buf_put(&b, "", 0);
    *len = b.len;
    return b.data;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Append a line with \xNN escapes decoded. */
static void put_unescaped(DslBuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 3 < n + 0 && s[i + 1] == 'x' &&
            hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
            char c = (char)(hexval(s[i + 2]) * 16 + hexval(s[i + 3]));
            dsl_buf_put(b, &c, 1);
            i += 3;
        } else {
            dsl_buf_put(b, s + i, 1);
        }
    }
}

/* The inverse of put_unescaped for --print: control bytes and bytes that
 * are not valid UTF-8 become \xNN. */
static void print_escaped(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p < 0x80) {
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                printf("\\x%02X", *p);
            else
                putchar(*p);
            p++;
            continue;
        }
        size_t len = (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3
                   : (*p >> 3) == 30 ? 4 : 1;
        size_t avail = strnlen((const char *)p, len);
        if (avail == len && dsl_utf8_valid((const char *)p, len, NULL)) {
            fwrite(p, 1, len, stdout);
            p += len;
        } else {
            printf("\\x%02X", *p);
            p++;
        }
    }
}

static void strip_trailing_newlines(DslBuf *b)
{
    while (b->len > 0 && b->data[b->len - 1] == '\n')
        b->data[--b->len] = 0;
}

/* Show the first differing line of two texts. */
static void report_diff(const char *name, const char *want, const char *got)
{
    int line = 1;
    const char *w = want, *g = got;
    while (*w && *g) {
        const char *we = strchr(w, '\n'), *ge = strchr(g, '\n');
        size_t wl = we ? (size_t)(we - w) : strlen(w);
        size_t gl = ge ? (size_t)(ge - g) : strlen(g);
        if (wl != gl || memcmp(w, g, wl) != 0)
            break;
        w += wl + (we ? 1 : 0);
        g += gl + (ge ? 1 : 0);
        line++;
    }
    printf("FAIL %s: first difference at expected line %d\n", name, line);
    printf("--- expected\n%s\n--- got\n%s\n---\n", want, got);
}

static bool run_case(const char *name, const char *input, size_t len,
                     const char *want, bool errors, const char *raw_in,
                     size_t raw_len, bool print)
{
    char fname[256];
    snprintf(fname, sizeof fname, "%s.blk", name);
    DslSource src = {fname, input, len};
    DslArena arena = {0};
    DslDiags diags = {0};
    diags.src = &src;
    AstProgram *prog = dsl_parse(&arena, &diags, &src);
    DslBuf got = {0};
    if (!prog) {
        dsl_buf_printf(&got, "<out of memory>");
    } else if (errors) {
        if (diags.out.len)
            dsl_buf_put(&got, diags.out.data, diags.out.len);
        else
            dsl_buf_printf(&got, "<no errors>");
    } else {
        if (diags.nerrors)
            dsl_buf_put(&got, diags.out.data, diags.out.len);
        dsl_print_ast(&got, prog);
    }
    dsl_buf_put(&got, "", 0);
    strip_trailing_newlines(&got);
    bool ok = strcmp(got.data, want) == 0;
    if (print) {
        printf("=== %s\n%.*s---\n", name, (int)raw_len, raw_in);
        print_escaped(got.data);
        printf("\n\n");
    } else if (!ok) {
        report_diff(name, want, got.data);
    }
    dsl_buf_free(&got);
    dsl_diags_free(&diags);
    dsl_arena_free(&arena);
    return ok;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : PARSE_CORPUS;
    const char *mode = argc > 2 ? argv[2] : PARSE_MODE;
    bool errors = strcmp(mode, "errors") == 0;
    bool print = argc > 3 && strcmp(argv[3], "--print") == 0;
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    int passed = 0, failed = 0;
    char *p = text, *end = text + len;
    /* skip anything before the first case */
    while (p < end && strncmp(p, "=== ", 4) != 0) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        char name[200];
        snprintf(name, sizeof name, "%.*s", (int)(le - p - 4), p + 4);
        p = nl ? nl + 1 : end;
        DslBuf in = {0}, want = {0};
        const char *raw = p;
        size_t raw_len = 0;
        int part = 0; /* 0 input, 1 expected */
        while (p < end && strncmp(p, "=== ", 4) != 0) {
            nl = memchr(p, '\n', (size_t)(end - p));
            le = nl ? nl : end;
            if (part == 0 && le - p == 3 && strncmp(p, "---", 3) == 0) {
                part = 1;
                raw_len = (size_t)(p - raw);
            } else {
                DslBuf *b = part ? &want : &in;
                put_unescaped(b, p, (size_t)(le - p));
                dsl_buf_put(b, "\n", 1);
            }
            p = nl ? nl + 1 : end;
        }
        dsl_buf_put(&in, "", 0);
        dsl_buf_put(&want, "", 0);
        strip_trailing_newlines(&want);
        if (part == 0) {
            printf("FAIL %s: no --- line\n", name);
            failed++;
        } else if (run_case(name, in.data, in.len, want.data, errors, raw,
                            raw_len, print)) {
            passed++;
        } else {
            failed++;
        }
        dsl_buf_free(&in);
        dsl_buf_free(&want);
    }
    free(text);
    if (!print)
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
