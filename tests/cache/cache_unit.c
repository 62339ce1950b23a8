/* cache_unit.c — the JIT cache through the public API: cold, hot (same
 * context) and warm (disk, new context) module creation; a corrupt entry is
 * recompiled; specialized variants give the same results as the generic
 * code (aligned/unaligned, 16-divisible or not, strided); autotuning picks
 * and remembers a configuration; a BLKC_CPU_* codegen switch is part of
 * the key (memory and disk); cache stats and clear. */
#include <blkc/blkc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#define CHECK(c)                                                        \
    do {                                                                \
        if (!(c)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, \
                    __LINE__, #c, blkc_last_error());                   \
            exit(1);                                                    \
        }                                                               \
    } while (0)

static const char *src =
    "kernel vadd<BLOCK = 64>(A: f32[N], B: f32[N], C: f32[N])\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK] * 2.0;\n"
    "}\n";

static void vec(DLTensor *t, float *data, int64_t *shape, int64_t *strides)
{
    memset(t, 0, sizeof *t);
    t->data = data;
    t->device.device_type = kDLCPU;
    t->ndim = 1;
    t->dtype.code = kDLFloat;
    t->dtype.bits = 32;
    t->dtype.lanes = 1;
    t->shape = shape;
    t->strides = strides;
}

/* C = A + 2B over n elements with stride s, data offset off (floats). */
static void check_run(blkc_kernel *k, int64_t n, int64_t s, int off)
{
    size_t cap = (size_t)(n * s + off + 1);
    float *a = calloc(cap, 4), *b = calloc(cap, 4), *c = calloc(cap, 4);
    CHECK(a && b && c);
    for (int64_t i = 0; i < n; i++) {
        a[off + i * s] = (float)i;
        b[off + i * s] = (float)(3 * i + 1);
    }
    int64_t shape[1] = {n}, str[1] = {s};
    DLTensor ta, tb, tc;
    vec(&ta, a + off, shape, s == 1 ? NULL : str);
    vec(&tb, b + off, shape, s == 1 ? NULL : str);
    vec(&tc, c + off, shape, s == 1 ? NULL : str);
    blkc_arg args[3] = {{BLKC_ARG_TENSOR, {.tensor = &ta}},
                        {BLKC_ARG_TENSOR, {.tensor = &tb}},
                        {BLKC_ARG_TENSOR, {.tensor = &tc}}};
    CHECK(blkc_kernel_launch(k, args, 3, NULL) == BLKC_OK);
    for (int64_t i = 0; i < n; i++)
        CHECK(c[off + i * s] == (float)(i + 2 * (3 * i + 1)));
    free(a);
    free(b);
    free(c);
}

static blkc_module *make(blkc_context *ctx, const char *text, int want_how)
{
    blkc_module *m;
    CHECK(blkc_module_create(ctx, text, strlen(text), NULL, &m) == BLKC_OK);
    int how = blkc_module_cache_source();
    if (want_how >= 0 && how != want_how) {
        fprintf(stderr, "cache source %d, expected %d\n", how, want_how);
        exit(1);
    }
    return m;
}

int main(void)
{
    char dir[] = "/tmp/blkc-cache-unit-XXXXXX";
    CHECK(mkdtemp(dir));
    setenv("BLKC_CACHE_DIR", dir, 1);
    unsetenv("BLKC_CACHE_DISABLE");
    const char *sw[] = {"BLKC_CPU_NOFUSE", "BLKC_CPU_NOINPLACE",
                        "BLKC_CPU_NOCOLRED", "BLKC_CPU_VEC256",
                        "BLKC_CPU_NOSTREAM"};
    for (int i = 0; i < 5; i++)
        unsetenv(sw[i]);
    blkc_context *c1, *c2, *c3;
    CHECK(blkc_context_create("cpu", &c1) == BLKC_OK);
    CHECK(blkc_context_create("cpu", &c2) == BLKC_OK);
    CHECK(blkc_context_create("cpu", &c3) == BLKC_OK);

    blkc_module *m1 = make(c1, src, 0);   /* cold */
    blkc_module *m2 = make(c1, src, 2);   /* hot */
    blkc_module *m3 = make(c2, src, 1);   /* warm: disk */
    blkc_kernel *k;
    CHECK(blkc_module_get_kernel(m3, "vadd", &k) == BLKC_OK);
    check_run(k, 1000, 1, 0);
    /* specialization: every variant must agree */
    check_run(k, 1024, 1, 0);
    check_run(k, 1024, 1, 1);
    check_run(k, 100, 3, 0);
    check_run(k, 160, 16, 0);
    check_run(k, 1024, 1, 0);
    CHECK(blkc_module_get_kernel(m2, NULL, &k) == BLKC_OK);
    check_run(k, 77, 1, 3);

    /* each switch is its own key: cold, then hot in the same context and
     * warm in another; "0" is off (the switch-free unit again, hot) */
    blkc_module *ms[5];
    for (int i = 0; i < 5; i++) {
        setenv(sw[i], "1", 1);
        ms[i] = make(c1, src, 0);
        blkc_module_destroy(make(c1, src, 2));
        blkc_module_destroy(make(c2, src, 1));
        CHECK(blkc_module_get_kernel(ms[i], "vadd", &k) == BLKC_OK);
        check_run(k, 1000, 1, 0);
        setenv(sw[i], "0", 1);
        blkc_module_destroy(make(c1, src, 2));
        unsetenv(sw[i]);
    }
    setenv(sw[0], "1", 1);
    setenv(sw[3], "1", 1);
    blkc_module_destroy(make(c1, src, 0)); /* a pair is a key of its own */
    unsetenv(sw[0]);
    unsetenv(sw[3]);
    for (int i = 0; i < 5; i++)
        blkc_module_destroy(ms[i]);
    blkc_module_destroy(make(c1, src, 2));

    blkc_cache_stats st;
    CHECK(blkc_cache_stats_get(&st) == BLKC_OK);
    CHECK(strcmp(st.dir, dir) == 0);
    CHECK(st.entries >= 2 && st.disk_hits >= 1);

    /* corrupt every entry: a new context recompiles and stays correct */
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d))) {
        if (!strstr(de->d_name, ".blkc"))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        FILE *fp = fopen(p, "r+b");
        CHECK(fp);
        fseek(fp, 120, SEEK_SET);
        fputs("corrupt", fp);
        fclose(fp);
        n++;
    }
    if (d)
        closedir(d);
    CHECK(n >= 2);
    blkc_module *m4 = make(c3, src, 0);
    CHECK(blkc_module_get_kernel(m4, NULL, &k) == BLKC_OK);
    check_run(k, 1000, 1, 0);
    CHECK(blkc_cache_stats_get(&st) == BLKC_OK);
    CHECK(st.disk_corrupt >= 1);

    /* autotuning */
    float *a = calloc(4096, 4), *b = calloc(4096, 4), *c = calloc(4096, 4);
    for (int i = 0; i < 4096; i++) {
        a[i] = (float)i;
        b[i] = 1;
        c[i] = -7;
    }
    int64_t shape[1] = {4096};
    DLTensor ta, tb, tc;
    vec(&ta, a, shape, NULL);
    vec(&tb, b, shape, NULL);
    vec(&tc, c, shape, NULL);
    blkc_arg args[3] = {{BLKC_ARG_TENSOR, {.tensor = &ta}},
                        {BLKC_ARG_TENSOR, {.tensor = &tb}},
                        {BLKC_ARG_TENSOR, {.tensor = &tc}}};
    const char *space[] = {"BLOCK=64,256,1024"};
    char cfg[128], cfg2[128];
    blkc_module *tm;
    CHECK(blkc_kernel_autotune(c1, src, strlen(src), NULL, "vadd", space, 1,
                               args, 3, NULL, &tm, cfg, sizeof cfg) ==
          BLKC_OK);
    CHECK(strncmp(cfg, "BLOCK=", 6) == 0);
    CHECK(c[5] == -7); /* restored */
    CHECK(blkc_module_get_kernel(tm, "vadd", &k) == BLKC_OK);
    CHECK(blkc_kernel_launch(k, args, 3, NULL) == BLKC_OK);
    CHECK(c[5] == 7.0f);
    blkc_module_destroy(tm);
    CHECK(blkc_kernel_autotune(c2, src, strlen(src), NULL, "vadd", space, 1,
                               args, 3, NULL, &tm, cfg2, sizeof cfg2) ==
          BLKC_OK);
    CHECK(strcmp(cfg, cfg2) == 0); /* the remembered choice */
    blkc_module_destroy(tm);
    const char *bad[] = {"BLOCK"};
    CHECK(blkc_kernel_autotune(c1, src, strlen(src), NULL, "vadd", bad, 1,
                               args, 3, NULL, &tm, NULL, 0) == BLKC_ERR_USAGE);
    CHECK(strstr(blkc_last_error(), "NAME=V1"));
    free(a);
    free(b);
    free(c);

    /* compile errors are not cached and keep their diagnostics */
    blkc_module *bm;
    CHECK(blkc_module_create(c1, "kernel k(", 9, NULL, &bm) ==
          BLKC_ERR_COMPILE);
    CHECK(strstr(blkc_last_error(), "error"));

    blkc_module_destroy(m1);
    blkc_module_destroy(m2);
    blkc_module_destroy(m3);
    blkc_module_destroy(m4);
    blkc_context_destroy(c1);
    blkc_context_destroy(c2);
    blkc_context_destroy(c3);
    int removed;
    CHECK(blkc_cache_clear(&removed) == BLKC_OK && removed >= 2);
    CHECK(blkc_cache_stats_get(&st) == BLKC_OK && st.entries == 0);
    rmdir(dir);
    puts("ok");
    return 0;
}
