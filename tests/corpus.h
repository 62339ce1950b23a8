/* corpus.h — the golden-text corpus format shared by the errors and golden
 * drivers (STYLE.md item 9):
 *
 *     === name
 *     <input lines>
 *     ---
 *     <expected output lines>
 *
 * Cases run in file order. BLKC_BLESS=1 rewrites the file with the actual
 * outputs (the inputs are kept byte for byte). Static helpers only. */
#ifndef BLKC_TESTS_CORPUS_H
#define BLKC_TESTS_CORPUS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct CorpusCase {
    char *name;      /* after "=== " */
    char *input;     /* lines up to "---" (each with its '\n') */
    char *expected;  /* lines after "---" up to the next "===", trailing
                        blank lines dropped */
    char *actual;    /* filled by the driver (malloc'd) */
} CorpusCase;

typedef struct Corpus {
    char *text;          /* the whole file */
    CorpusCase *cases;
    int n;
} Corpus;

static char *corpus_dup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* drop trailing blank lines but keep one final '\n' when non-empty */
static void corpus_trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    if (n > 0)
        s[n++] = '\n';
    s[n] = 0;
}

static int corpus_load(const char *path, Corpus *c)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); return -1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    c->text = malloc((size_t)n + 1);
    if (!c->text || fread(c->text, 1, (size_t)n, f) != (size_t)n) { fclose(f); return -1; }
    c->text[n] = 0;
    fclose(f);
    int cap = 0;
    const char *p = c->text;
    CorpusCase *cur = NULL;
    const char *in_start = NULL, *exp_start = NULL;
    while (*p) {
        const char *eol = strchr(p, '\n');
        const char *next = eol ? eol + 1 : p + strlen(p);
        size_t len = (size_t)(next - p);
        if (!strncmp(p, "=== ", 4)) {
            if (cur) {
                if (exp_start) {
                    cur->expected = corpus_dup(exp_start, (size_t)(p - exp_start));
                } else {
                    fprintf(stderr, "%s: case '%s' has no '---' line\n", path, cur->name);
                    return -1;
                }
                corpus_trim(cur->expected);
            }
            if (c->n == cap) {
                cap = cap ? cap * 2 : 16;
                c->cases = realloc(c->cases, sizeof *c->cases * (size_t)cap);
            }
            cur = &c->cases[c->n++];
            memset(cur, 0, sizeof *cur);
            size_t nl = len - 4;
            while (nl > 0 && (p[4 + nl - 1] == '\n' || p[4 + nl - 1] == '\r' || p[4 + nl - 1] == ' '))
                nl--;
            cur->name = corpus_dup(p + 4, nl);
            in_start = next;
            exp_start = NULL;
        } else if (cur && !exp_start && (!strncmp(p, "---\n", 4) || !strcmp(p, "---"))) {
            cur->input = corpus_dup(in_start, (size_t)(p - in_start));
            exp_start = next;
        }
        p = next;
    }
    if (cur) {
        if (!exp_start) {
            fprintf(stderr, "%s: case '%s' has no '---' line\n", path, cur->name);
            return -1;
        }
        cur->expected = corpus_dup(exp_start, (size_t)(p - exp_start));
        corpus_trim(cur->expected);
    }
    return 0;
}

/* rewrite the file with each case's actual output */
static int corpus_bless(const char *path, const Corpus *c)
{
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "cannot write %s\n", path); return -1; }
    /* keep anything before the first case (a header comment) */
    const char *first = strstr(c->text, "=== ");
    while (first && first != c->text && first[-1] != '\n')
        first = strstr(first + 1, "=== ");
    if (first)
        fwrite(c->text, 1, (size_t)(first - c->text), f);
    for (int i = 0; i < c->n; i++) {
        char *act = corpus_dup(c->cases[i].actual ? c->cases[i].actual : "",
                               strlen(c->cases[i].actual ? c->cases[i].actual : ""));
        corpus_trim(act);
        fprintf(f, "=== %s\n%s---\n%s%s", c->cases[i].name, c->cases[i].input, act,
                i + 1 < c->n ? "\n" : "");
        free(act);
    }
    fclose(f);
    return 0;
}

static void corpus_free(Corpus *c)
{
    for (int i = 0; i < c->n; i++) {
        free(c->cases[i].name);
        free(c->cases[i].input);
        free(c->cases[i].expected);
        free(c->cases[i].actual);
    }
    free(c->cases);
    free(c->text);
    memset(c, 0, sizeof *c);
}

/* print a unified-ish diff of expected vs actual */
static void corpus_report(const char *path, const CorpusCase *k)
{
    fprintf(stderr, "FAIL %s: case '%s'\n--- expected\n%s--- actual\n%s---\n", path, k->name,
            k->expected, k->actual ? k->actual : "(none)\n");
}
#endif
