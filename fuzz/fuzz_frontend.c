/* fuzz_frontend.c — libFuzzer target over the front end, the checker, the
 * passes and the IR verifier, through the public API only: every input is
 * compiled with blkc_emit(..., "core"); inputs that compile are also
 * printed with "ast". Anything but a clean status (a crash, an ASan/UBSan
 * report, a leak, a hang) is a bug. The library must also keep its promise
 * that a failure always leaves a message in blkc_last_error().
 *
 * Inputs that compile (and are at most GPU_MAX_LEN bytes: the GPU emitters
 * are the heavy part) are also emitted by the GPU backends: stages "gpu-ir"
 * and "cuda" for CUDA sm_80 and sm_90a (wgmma, TMA, warp specialization),
 * "gpu-ir" and "hip" for HIP gfx90a. None of them needs a GPU or NVRTC.
 * A kernel the backend cannot emit may fail, but only with a message, and
 * not with an internal error (a compiler bug, docs: STYLE.md).
 *
 * An input whose first line is `//! NAME=VALUE` is compiled a second time
 * with that line passed as a -D define, so the fuzzer also reaches the
 * compile-time parameter overrides. Built by fuzz/CMakeLists.txt (clang,
 * -fsanitize=fuzzer,address,undefined); run by fuzz/run.sh.
 *
 * With BLKC_FUZZ_REPLAY defined (any compiler, no libFuzzer) it has a main
 * that runs each file named on the command line (or each file in a named
 * directory) through the same checks once: tests/fuzz replays every crash
 * the fuzzer ever found that way, also under ASan. */
#include <blkc/blkc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_failure(blkc_status s, const char *what)
{
    const char *msg = blkc_last_error();
    if (s != BLKC_OK && (!msg || !*msg)) {
        fprintf(stderr, "fuzz_frontend: %s failed with status %s but no message\n",
                what, blkc_status_string(s));
        abort();
    }
    if (s == BLKC_ERR_USAGE || s == BLKC_ERR_NOT_FOUND || s == BLKC_ERR_UNSUPPORTED) {
        /* the input can be any bytes, but the call itself is always valid */
        if (strstr(msg, "too large") == NULL) {
            fprintf(stderr, "fuzz_frontend: %s: unexpected status %s: %s\n", what,
                    blkc_status_string(s), msg);
            abort();
        }
    }
}

/* text stages: the output is NUL-terminated and *outlen long */
static void check_text(const char *out, size_t outlen, const char *what)
{
    if (!out || strlen(out) != outlen) {
        fprintf(stderr, "fuzz_frontend: %s output length mismatch\n", what);
        abort();
    }
}

#define GPU_MAX_LEN 16384

static const struct {
    blkc_target target;
    const char *arch;
    const char *stage;
} gpu_emits[] = {
    {BLKC_TARGET_CUDA, "sm_80", "gpu-ir"},  {BLKC_TARGET_CUDA, "sm_80", "cuda"},
    {BLKC_TARGET_CUDA, "sm_90a", "gpu-ir"}, {BLKC_TARGET_CUDA, "sm_90a", "cuda"},
    {BLKC_TARGET_HIP, "gfx90a", "gpu-ir"},  {BLKC_TARGET_HIP, "gfx90a", "hip"},
};

static void emit_gpu(const char *src, size_t len, const blkc_compile_options *o)
{
    for (size_t i = 0; i < sizeof gpu_emits / sizeof gpu_emits[0]; i++) {
        blkc_compile_options g = *o;
        g.target = gpu_emits[i].target;
        g.arch = gpu_emits[i].arch;
        char what[64];
        snprintf(what, sizeof what, "%s %s", gpu_emits[i].arch,
                 gpu_emits[i].stage);
        char *out = NULL;
        size_t outlen = 0;
        blkc_status s = blkc_emit(src, len, &g, gpu_emits[i].stage, &out, &outlen);
        check_failure(s, what);
        /* the message is "STAGE: ERR"; "STAGE: internal..." is a bug */
        const char *msg = blkc_last_error();
        size_t sl = strlen(gpu_emits[i].stage);
        if (s != BLKC_OK && strncmp(msg, gpu_emits[i].stage, sl) == 0 &&
            strncmp(msg + sl, ": internal", 10) == 0) {
            fprintf(stderr, "fuzz_frontend: %s: %s\n", what, msg);
            abort();
        }
        if (s == BLKC_OK)
            check_text(out, outlen, what);
        blkc_free(out);
    }
}

static void emit(const char *src, size_t len, const blkc_compile_options *o)
{
    char *out = NULL;
    size_t outlen = 0;
    blkc_status s = blkc_emit(src, len, o, "core", &out, &outlen);
    check_failure(s, "core");
    if (s == BLKC_OK) {
        check_text(out, outlen, "core");
        blkc_free(out);
        out = NULL;
        s = blkc_emit(src, len, o, "ast", &out, &outlen);
        check_failure(s, "ast");
        if (s != BLKC_OK) {
            fprintf(stderr, "fuzz_frontend: core compiled but ast failed: %s\n",
                    blkc_last_error());
            abort();
        }
        if (len <= GPU_MAX_LEN)
            emit_gpu(src, len, o);
    }
    blkc_free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a length of 0 means a NUL-terminated source (blkc.h): the empty
     * input is passed as "" (data need not be readable then) */
    const char *src = size ? (const char *)data : "";
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.filename = "fuzz.blk";
    emit(src, size, &o);

    /* `//! NAME=VALUE` first line: again with that define */
    if (size > 4 && memcmp(data, "//! ", 4) == 0) {
        const uint8_t *eol = memchr(data, '\n', size);
        size_t n = eol ? (size_t)(eol - data) - 4 : size - 4;
        if (n > 0 && n < 256) {
            char def[256];
            memcpy(def, data + 4, n);
            def[n] = 0;
            const char *defs[1] = {def};
            o.defines = defs;
            o.ndefines = 1;
            char *out = NULL;
            blkc_status s = blkc_emit(src, size, &o, "core", &out, NULL);
            /* a malformed define is a usage error by contract */
            if (s != BLKC_ERR_USAGE)
                check_failure(s, "core with define");
            blkc_free(out);
        }
    }
    return 0;
}

#ifdef BLKC_FUZZ_REPLAY
#include <dirent.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *b2 = realloc(buf, cap * 2);
            if (!b2)
                break;
            buf = b2;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    printf("ok %s (%zu bytes)\n", path, n);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int bad = 0, runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cannot stat %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= replay_file(argv[i]);
            runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d)
            return 1;
        char **names = NULL;
        size_t nn = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.' || strcmp(e->d_name, "README") == 0)
                continue;
            char **n2 = realloc(names, (nn + 1) * sizeof *names);
            if (!n2)
                return 1;
            names = n2;
            size_t l = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[nn] = malloc(l);
            snprintf(names[nn++], l, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        if (nn)
            qsort(names, nn, sizeof *names, cmp_str);
        for (size_t k = 0; k < nn; k++) {
            bad |= replay_file(names[k]);
            runs++;
            free(names[k]);
        }
        free(names);
    }
    printf("%d inputs replayed\n", runs);
    return bad;
}
#endif
