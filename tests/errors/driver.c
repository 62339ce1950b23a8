/* driver.c — the errors suite: every case of a corpus file is a bad .blk
 * program; compiling it with blkc_module_create must fail with
 * BLKC_ERR_COMPILE, and the `file:line:col: error: message` lines of
 * blkc_last_error() (the source lines and carets are not compared; the
 * column is) must equal the expected block. The file name shown is
 * "t.blk". BLKC_BLESS=1 rewrites the expected blocks with the actual
 * diagnostics.
 * Usage: errors_driver CORPUS.txt */
#include <blkc/blkc.h>
#include "../corpus.h"

/* keep only the diagnostic header lines */
static char *diag_lines(const char *msg)
{
    size_t n = strlen(msg);
    char *out = malloc(n + 2), *o = out;
    const char *p = msg;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *e = strstr(p, ": error: ");
        if (e && (size_t)(e - p) < len) {
            memcpy(o, p, len);
            o += len;
            *o++ = '\n';
        }
        p += len + (eol ? 1 : 0);
    }
    *o = 0;
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS.txt\n", argv[0]);
        return 2;
    }
    Corpus c;
    if (corpus_load(argv[1], &c))
        return 1;
    blkc_context *ctx = NULL;
    if (blkc_context_create("cpu", &ctx) != BLKC_OK) {
        fprintf(stderr, "context: %s\n", blkc_last_error());
        return 1;
    }
    int pass = 0, fail = 0;
    for (int i = 0; i < c.n; i++) {
        CorpusCase *k = &c.cases[i];
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        o.filename = "t.blk";
        blkc_module *m = NULL;
        blkc_status s = blkc_module_create(ctx, k->input, strlen(k->input), &o, &m);
        if (s == BLKC_OK) {
            blkc_module_destroy(m);
            k->actual = corpus_dup("(compiled without errors)\n", 26);
        } else if (s != BLKC_ERR_COMPILE) {
            size_t n = strlen(blkc_last_error()) + 64;
            k->actual = malloc(n);
            snprintf(k->actual, n, "(status %s) %s\n", blkc_status_string(s), blkc_last_error());
        } else {
            k->actual = diag_lines(blkc_last_error());
            if (!*k->actual) {
                free(k->actual);
                k->actual = corpus_dup("(no file:line:col: error: line)\n", 33);
            }
        }
        corpus_trim(k->actual);
        if (s == BLKC_ERR_COMPILE && !strcmp(k->actual, k->expected)) {
            pass++;
        } else {
            fail++;
            if (!getenv("BLKC_BLESS") || s != BLKC_ERR_COMPILE)
                corpus_report(argv[1], k);
        }
    }
    if (getenv("BLKC_BLESS") && atoi(getenv("BLKC_BLESS")) && fail) {
        corpus_bless(argv[1], &c);
        printf("blessed %s\n", argv[1]);
    }
    printf("%d passed, %d failed\n", pass, fail);
    blkc_context_destroy(ctx);
    corpus_free(&c);
    return fail ? 1 : 0;
}
