/* isolate.c — compile isolation through the public API (docs/limits.md):
 * with blkc_compile_options.isolate the LLVM stage runs in the blkc-cc
 * worker. Checks: a module whose LLVM compile needs more memory than a
 * small cap fails with "compile worker died: out of memory (limit N MB)"
 * while a small kernel fits the same cap, the process survives, no child,
 * file descriptor or cache temp file is left, and later compiles work;
 * isolated objects of every example are byte-identical to in-process ones
 * and isolated modules compute bit-identical results; a missing worker,
 * workers that return garbage, a truncated or altered result, die by a
 * signal or exit non-zero, or never read the request, each give a clear
 * error; BLKC_COMPILE_ISOLATE and the option's precedence; bad option
 * values; several threads compiling isolated at once. */
#include <blkc/blkc.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api_test.h"

#define EXPECT_ERR(call, sub)                                                \
    do {                                                                     \
        blkc_status st_ = (call);                                            \
        CHECK(st_ != BLKC_OK);                                               \
        CHECK(strstr(blkc_last_error(), (sub)) != NULL);                     \
        printf("     error: %.200s\n", blkc_last_error());                   \
    } while (0)

static char tmp[256];   /* scratch directory: fake workers */
static char cache[300]; /* BLKC_CACHE_DIR */

static const char *small =
    "kernel addone(X: f32[N], Y: f32[N]) grid(cdiv(N, 64)) {\n"
    "    let o = program_id(0) * 64;\n"
    "    Y[o +: 64] = X[o +: 64] + 1.0;\n"
    "}\n";

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, fp);
    b[*len] = 0;
    fclose(fp);
    return b;
}

/* 150 softmax-like kernels plus a 200 kB comment (more than a pipe holds):
 * its LLVM compile needs 32-64 MB beyond the worker's footprint here, a
 * small kernel 5-8 MB. */
static char *big_source(void)
{
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "// ");
    for (int i = 0; i < 200000; i++)
        b[n++] = 'x';
    b[n++] = '\n';
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(b + n, cap - n,
            "kernel k%d<BLOCK = 256>(X: f32[R, N], Y: f32[R, N]) grid(R) {\n"
            "    let r = program_id(0);\n"
            "    let x = load(X[r, 0 +: BLOCK], pad = -inf);\n"
            "    let e = exp(x - max(x)) * %d.0;\n"
            "    Y[r, 0 +: BLOCK] = e / sum(e) + tanh(x) * sigmoid(x);\n"
            "}\n", i, i + 1);
    b[n] = 0;
    return b;
}

static blkc_compile_options opts(int isolate, int mem_mb)
{
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.isolate = isolate;
    o.compile_mem_mb = mem_mb;
    return o;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* No child left (reaped) and nothing but cache entries in the cache. */
static void check_clean(const char *what)
{
    errno = 0;
    CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
    DIR *d = opendir(cache);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' ||
            (l > 5 && strcmp(e->d_name + l - 5, ".blkc") == 0))
            continue;
        fprintf(stderr, "%s: stray file in the cache: %s\n", what, e->d_name);
        failures++;
    }
    if (d)
        closedir(d);
}

/* Launch addone on 1000 elements; Y must be X + 1. */
static void run_small(blkc_module *m)
{
    blkc_kernel *k;
    CHECK(blkc_module_get_kernel(m, "addone", &k) == BLKC_OK);
    float x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)i * 0.5f, y[i] = 0;
    int64_t shape[1] = {1000};
    DLTensor tx = {.data = x, .device = {kDLCPU, 0}, .ndim = 1,
                   .dtype = {kDLFloat, 32, 1}, .shape = shape};
    DLTensor ty = tx;
    ty.data = y;
    blkc_arg a[2] = {{BLKC_ARG_TENSOR, {.tensor = &tx}},
                     {BLKC_ARG_TENSOR, {.tensor = &ty}}};
    CHECK(blkc_kernel_launch(k, a, 2, NULL) == BLKC_OK);
    int bad = 0;
    for (int i = 0; i < 1000; i++)
        bad += y[i] != x[i] + 1.0f;
    CHECK(bad == 0);
}

static void test_oom(void)
{
    printf("== a compile that needs more memory than the cap\n");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("     skipped: sanitizer allocators map memory in large chunks\n");
    return;
#endif
    char *big = big_source();
    int fds = count_fds();
    blkc_compile_options o = opts(1, 24);
    blkc_module *m = NULL;
    EXPECT_ERR(blkc_module_create(NULL, big, strlen(big), &o, &m),
               "compile worker died: out of memory (limit 24 MB)");
    CHECK(m == NULL);
    CHECK(count_fds() == fds);
    check_clean("after the OOM");
    /* the same cap fits a small kernel: the cap, not the worker, failed */
    CHECK(blkc_module_create(NULL, small, strlen(small), &o, &m) == BLKC_OK);
    if (m) {
        run_small(m);
        blkc_module_destroy(m);
    }
    CHECK(blkc_cache_clear(NULL) == BLKC_OK);
    /* and a normal, in-process compile works afterwards */
    o = opts(-1, 0);
    m = NULL;
    blkc_context *c;
    CHECK(blkc_context_create("cpu", &c) == BLKC_OK);
    CHECK(blkc_module_create(c, small, strlen(small), &o, &m) == BLKC_OK);
    CHECK(blkc_module_cache_source() == 0); /* compiled, here */
    if (m) {
        run_small(m);
        blkc_module_destroy(m);
    }
    blkc_context_destroy(c);
    CHECK(count_fds() == fds);
    check_clean("after the later compiles");
    free(big);
}

/* Isolated and in-process objects of every example: byte-identical. */
static void test_identical(void)
{
    printf("== examples: isolated objects == in-process objects\n");
    const char *ex[] = {"vector_add", "softmax", "layernorm", "matmul",
                        "flash_attention"};
    for (int i = 0; i < 5; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s.blk", BLKC_SOURCE_DIR,
                 ex[i]);
        size_t len;
        char *src = slurp(path, &len);
        CHECK(src != NULL);
        if (!src)
            continue;
        char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        blkc_compile_options oi = opts(1, 0), op = opts(-1, 0);
        CHECK(blkc_emit(src, len, &op, "obj", &a, &la) == BLKC_OK);
        CHECK(blkc_emit(src, len, &oi, "obj", &b, &lb) == BLKC_OK);
        bool same = a && b && la == lb && la > 0 && memcmp(a, b, la) == 0;
        CHECK(same);
        printf("%s %s: %zu-byte object, %s\n", same ? "ok  " : "FAIL", ex[i],
               la, same ? "identical" : "DIFFERENT");
        blkc_free(a);
        blkc_free(b);
        free(src);
    }
}

/* softmax compiled isolated and in-process: bit-identical outputs. */
static void test_results(void)
{
    printf("== softmax: isolated and in-process modules agree bit for bit\n");
    char path[512];
    snprintf(path, sizeof path, "%s/examples/softmax.blk", BLKC_SOURCE_DIR);
    size_t len;
    char *src = slurp(path, &len);
    enum { R = 7, N = 1000 };
    static float x[R * N], y[2][R * N];
    unsigned s = 12345;
    for (int i = 0; i < R * N; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = (float)((s >> 8) & 0xffff) / 4096.0f - 8.0f;
    }
    for (int v = 0; v < 2; v++) {
        CHECK(blkc_cache_clear(NULL) == BLKC_OK); /* compile both times */
        blkc_context *c;
        CHECK(blkc_context_create("cpu", &c) == BLKC_OK);
        blkc_compile_options o = opts(v ? 1 : -1, 0);
        blkc_module *m = NULL;
        blkc_kernel *k = NULL;
        CHECK(blkc_module_create(c, src, len, &o, &m) == BLKC_OK);
        CHECK(blkc_module_cache_source() == 0);
        CHECK(m && blkc_module_get_kernel(m, "softmax", &k) == BLKC_OK);
        int64_t shape[2] = {R, N};
        DLTensor tx = {.data = x, .device = {kDLCPU, 0}, .ndim = 2,
                       .dtype = {kDLFloat, 32, 1}, .shape = shape};
        DLTensor ty = tx;
        ty.data = y[v];
        blkc_arg a[2] = {{BLKC_ARG_TENSOR, {.tensor = &tx}},
                         {BLKC_ARG_TENSOR, {.tensor = &ty}}};
        CHECK(k && blkc_kernel_launch(k, a, 2, NULL) == BLKC_OK);
        blkc_module_destroy(m);
        blkc_context_destroy(c);
    }
    CHECK(memcmp(y[0], y[1], sizeof y[0]) == 0);
    double sum = 0;
    for (int j = 0; j < N; j++)
        sum += y[1][j];
    CHECK(sum > 0.999 && sum < 1.001); /* and it is a softmax */
    free(src);
}

/* A fake worker: a shell script in tmp. */
static const char *fake(const char *name, const char *body)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    FILE *fp = fopen(path, "w");
    fprintf(fp, "#!/bin/sh\n%s\n", body);
    fclose(fp);
    chmod(path, 0755);
    return path;
}

/* compile `small` isolated with worker w: the error must contain sub */
static void with_worker(const char *w, const char *sub, const char *source)
{
    setenv("BLKC_COMPILE_WORKER", w, 1);
    CHECK(blkc_cache_clear(NULL) == BLKC_OK);
    int fds = count_fds();
    blkc_context *c;
    blkc_context_create("cpu", &c);
    blkc_compile_options o = opts(1, 0);
    blkc_module *m = NULL;
    EXPECT_ERR(blkc_module_create(c, source, strlen(source), &o, &m), sub);
    CHECK(m == NULL);
    blkc_context_destroy(c);
    CHECK(count_fds() == fds);
    check_clean(w);
    unsetenv("BLKC_COMPILE_WORKER");
}

static void test_bad_workers(void)
{
    printf("== missing and misbehaving workers\n");
    char *big = big_source();
    with_worker("/nonexistent/blkc-cc", "compile worker '/nonexistent/blkc-cc' "
                "(BLKC_COMPILE_WORKER) cannot be run: No such file", small);
    char plain[512];
    snprintf(plain, sizeof plain, "%s/not-executable", tmp);
    fclose(fopen(plain, "w"));
    with_worker(plain, "cannot be run: Permission denied", small);
    with_worker(fake("garbage", "cat >/dev/null; echo garbage"),
                "compile worker returned a corrupt result (8 bytes, no valid "
                "header)", small);
    char body[1024];
    snprintf(body, sizeof body,
             "\"%s\" \"$@\" > \"%s/out\" || exit $?\nhead -c 100 \"%s/out\"",
             BLKC_CC, tmp, tmp);
    with_worker(fake("truncated", body), "compile worker returned a corrupt "
                "result (52 payload bytes, the header says", small);
    snprintf(body, sizeof body,
             "\"%s\" \"$@\" > \"%s/out\" || exit $?\n"
             "printf Z | dd of=\"%s/out\" bs=1 seek=200 conv=notrunc "
             "2>/dev/null\ncat \"%s/out\"", BLKC_CC, tmp, tmp, tmp);
    with_worker(fake("altered", body), "compile worker returned a corrupt "
                "result (checksum mismatch)", small);
    with_worker(fake("segv", "kill -SEGV $$"),
                "compile worker died: signal 11 (Segmentation fault)", small);
    with_worker(fake("fails", "echo 'something broke' >&2; exit 3"),
                "compile worker failed (exit 3): something broke", small);
    /* exits without reading a request larger than a pipe: EPIPE here, and
     * SIGPIPE must not end this process */
    with_worker(fake("deaf", "exit 0"), "corrupt result (0 bytes", big);
    with_worker(fake("deaf-oom", "echo 'LLVM ERROR: out of memory' >&2; "
                     "kill -ABRT $$"),
                "compile worker died: out of memory (no BLKC_COMPILE_MEM_MB "
                "limit): LLVM ERROR: out of memory", big);
    free(big);
}

static void test_env(void)
{
    printf("== BLKC_COMPILE_ISOLATE and the option\n");
    setenv("BLKC_COMPILE_WORKER", "/nonexistent/w", 1);
    setenv("BLKC_COMPILE_ISOLATE", "1", 1);
    blkc_compile_options o = opts(0, 0);
    blkc_module *m = NULL;
    CHECK(blkc_cache_clear(NULL) == BLKC_OK);
    blkc_context *c;
    blkc_context_create("cpu", &c);
    /* the environment turns it on: the (missing) worker is used */
    EXPECT_ERR(blkc_module_create(c, small, strlen(small), &o, &m),
               "/nonexistent/w");
    /* the option -1 wins over the environment */
    o = opts(-1, 0);
    CHECK(blkc_module_create(c, small, strlen(small), &o, &m) == BLKC_OK);
    blkc_module_destroy(m);
    blkc_context_destroy(c);
    /* "0" and anything but "1" leave it off */
    setenv("BLKC_COMPILE_ISOLATE", "yes", 1);
    CHECK(blkc_cache_clear(NULL) == BLKC_OK);
    blkc_context_create("cpu", &c);
    o = opts(0, 0);
    CHECK(blkc_module_create(c, small, strlen(small), &o, &m) == BLKC_OK);
    blkc_module_destroy(m);
    blkc_context_destroy(c);
    unsetenv("BLKC_COMPILE_ISOLATE");
    unsetenv("BLKC_COMPILE_WORKER");
    /* bad option values */
    o = opts(2, 0);
    EXPECT_ERR(blkc_module_create(NULL, small, strlen(small), &o, &m),
               "isolate 2 is not -1, 0 or 1");
    o = opts(1, -5);
    EXPECT_ERR(blkc_module_create(NULL, small, strlen(small), &o, &m),
               "compile_mem_mb -5 is negative");
}

static void *compile_thread(void *arg)
{
    int i = (int)(intptr_t)arg;
    char src[512];
    snprintf(src, sizeof src,
             "kernel addone(X: f32[N], Y: f32[N]) grid(cdiv(N, 64)) {\n"
             "    let o = program_id(0) * 64;\n"
             "    Y[o +: 64] = X[o +: 64] + (%d.0 - %d.0 + 1.0);\n}\n",
             i, i);
    blkc_context *c;
    blkc_context_create("cpu", &c);
    blkc_compile_options o = opts(1, 0);
    blkc_module *m = NULL;
    intptr_t ok = blkc_module_create(c, src, strlen(src), &o, &m) == BLKC_OK;
    if (m)
        run_small(m);
    blkc_module_destroy(m);
    blkc_context_destroy(c);
    return (void *)ok;
}

static void test_threads(void)
{
    printf("== 4 threads compiling isolated at once\n");
    int fds = count_fds();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, compile_thread, (void *)(intptr_t)i);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        CHECK(r == (void *)1);
    }
    CHECK(count_fds() == fds);
    check_clean("after the threads");
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "%s/blkc-iso.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp))
        return 1;
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    setenv("BLKC_CACHE_DIR", cache, 1);
    unsetenv("BLKC_CACHE_DISABLE");
    unsetenv("BLKC_COMPILE_ISOLATE");
    unsetenv("BLKC_COMPILE_MEM_MB");
    unsetenv("BLKC_COMPILE_WORKER");
    test_oom();
    test_identical();
    test_results();
    test_bad_workers();
    test_env();
    test_threads();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        failures++;
    printf("%s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
