/* driver.c — the golden suite: each case of a corpus file is a .blk
 * program; its Core IR text (blkc_emit stage "core", after the pipeline's
 * passes) must equal the expected block. BLKC_BLESS=1 rewrites the expected
 * blocks with the actual output.
 * Usage: golden_driver CORPUS.txt */
#include <blkc/blkc.h>
#include "../corpus.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS.txt\n", argv[0]);
        return 2;
    }
    Corpus c;
    if (corpus_load(argv[1], &c))
        return 1;
    int pass = 0, fail = 0;
    for (int i = 0; i < c.n; i++) {
        CorpusCase *k = &c.cases[i];
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        o.filename = "t.blk";
        char *out = NULL;
        size_t len = 0;
        blkc_status s = blkc_emit(k->input, strlen(k->input), &o, "core", &out, &len);
        if (s != BLKC_OK) {
            size_t n = strlen(blkc_last_error()) + 64;
            k->actual = malloc(n);
            snprintf(k->actual, n, "(status %s)\n%s\n", blkc_status_string(s), blkc_last_error());
        } else {
            k->actual = corpus_dup(out, len);
            blkc_free(out);
        }
        corpus_trim(k->actual);
        if (s == BLKC_OK && !strcmp(k->actual, k->expected)) {
            pass++;
        } else {
            fail++;
            if (!getenv("BLKC_BLESS") || s != BLKC_OK)
                corpus_report(argv[1], k);
        }
    }
    if (getenv("BLKC_BLESS") && atoi(getenv("BLKC_BLESS")) && fail) {
        corpus_bless(argv[1], &c);
        printf("blessed %s\n", argv[1]);
    }
    printf("%d passed, %d failed\n", pass, fail);
    corpus_free(&c);
    return fail ? 1 : 0;
}
