/* api_test.h — the checks the public-API tests share (api_server, api_task, api_errors,
 * tests/faults/isolate.c): CHECK counts a failure and prints the library's
 * last error; EXPECT wants a status and a substring of the last error,
 * EXPECT_MSG the status and exactly that message. Each test prints its own
 * summary from `failures` and exits non-zero when it is not 0.
 *
 * Everything is static: include it from exactly one file of a test. */
#ifndef BLKC_TESTS_API_TEST_H
#define BLKC_TESTS_API_TEST_H

#include <blkc/blkc.h>

#include <stdio.h>
#include <string.h>

static int failures;

/* Y = 2X + 1 over one 1-D tensor (api_omp, api_pin) */
#define API_TWICE_SRC                                                        \
    "kernel twice<BLOCK = 64>(X: f32[N], Y: f32[N]) grid(cdiv(N, BLOCK))\n"  \
    "{\n"                                                                    \
    "    let o = program_id(0) * BLOCK;\n"                                   \
    "    Y[o +: BLOCK] = X[o +: BLOCK] * 2.0 + 1.0;\n"                        \
    "}\n"

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n",    \
                    __FILE__, __LINE__, #cond, blkc_last_error());           \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* status s and last error containing `sub` */
#define EXPECT(call, s, sub)                                                 \
    do {                                                                     \
        blkc_status st_ = (call);                                            \
        CHECK(st_ == (s));                                                   \
        if (!strstr(blkc_last_error(), (sub))) {                             \
            fprintf(stderr, "%s:%d: expected '%s' in: %s\n", __FILE__,       \
                    __LINE__, (sub), blkc_last_error());                     \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* status s and exactly this last error */
#define EXPECT_MSG(call, s, msg)                                             \
    do {                                                                     \
        blkc_status st_ = (call);                                            \
        CHECK(st_ == (s));                                                   \
        if (strcmp(blkc_last_error(), (msg)) != 0) {                         \
            fprintf(stderr, "%s:%d: message\n  got:  %s\n  want: %s\n",      \
                    __FILE__, __LINE__, blkc_last_error(), (msg));           \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#endif
