/* t_gpu_spec.c — GPU launches specialize on their arguments' facts
 * (runtime/gpu_launch.c), checked through the public C API on a cuda:0
 * context backed by fake_cuda.c's libcuda.so.1 (ctest sets
 * LD_LIBRARY_PATH): the fake writes every loaded image to a directory and
 * records which module each (no-op) launch used. The device reports an
 * arch NVRTC does not know (FAKE_CUDA_CC=99), so the runtime loads PTX,
 * which is text to look into. Checks: the generic module has no 128-bit
 * accesses; aligned contiguous buffers load a variant with ld/st.global.v4
 * and run it; the same facts again compile nothing new; strided unaligned
 * arguments (no facts) run the generic kernel; unaligned contiguous ones
 * get a variant without vector accesses; four threads launching a new
 * signature at once compile it once; a variant that fails to load
 * (FAKE_CUDA_LOAD_FAIL_FROM) runs the generic kernel with a note in
 * blkc_last_error(), and is not retried; once 16 signatures fill the
 * table a new one compiles nothing and gets a note. Exit 77 without
 * NVRTC. */
#include <blkc/blkc.h>

#include <dirent.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails;
static char dir[256];

#define CHECK(c, ...)                                                         \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            fails++;                                                          \
        }                                                                     \
    } while (0)

static const char *src =
    "kernel vector_add<BLOCK = 1024>(A: f32[N], B: f32[N], C: f32[N])\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK];\n"
    "}\n";

/* Images loaded so far (image-N.* files). */
static int images(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, "image-", 6) == 0;
    if (d)
        closedir(d);
    return n;
}

/* Whether image i (PTX) contains s; -1 if it is not there. */
static int image_has(int i, const char *s)
{
    char path[512];
    snprintf(path, sizeof path, "%s/image-%d.ptx", dir, i);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    return strstr(buf, s) != NULL;
}

/* The module of the last recorded launch, 0 if none. */
static int last_launch(void)
{
    char path[512], line[64];
    snprintf(path, sizeof path, "%s/launches", dir);
    FILE *fp = fopen(path, "r");
    int m = 0;
    while (fp && fgets(line, sizeof line, fp))
        sscanf(line, "launch %d", &m);
    if (fp)
        fclose(fp);
    return m;
}

typedef struct Vec {
    DLTensor t;
    int64_t shape[1], stride[1];
} Vec;

/* A 1-D f32 "device" tensor of n elements at base + off bytes, stride s
 * (0: contiguous, strides NULL). The fake's device memory is host memory
 * and the fake runs no kernels: only the addresses matter. */
static void vec(Vec *v, char *base, size_t off, int64_t n, int64_t s)
{
    memset(v, 0, sizeof *v);
    v->shape[0] = n;
    v->stride[0] = s;
    v->t.data = base + off;
    v->t.device.device_type = kDLCUDA;
    v->t.device.device_id = 0;
    v->t.ndim = 1;
    v->t.dtype.code = kDLFloat;
    v->t.dtype.bits = 32;
    v->t.dtype.lanes = 1;
    v->t.shape = v->shape;
    v->t.strides = s ? v->stride : NULL;
}

static blkc_kernel *kern;
static char *mem[3];

static blkc_status launch(size_t off, int64_t n, int64_t s)
{
    Vec v[3];
    blkc_arg a[3];
    for (int i = 0; i < 3; i++) {
        vec(&v[i], mem[i], off, n, s);
        a[i].kind = BLKC_ARG_TENSOR;
        a[i].v.tensor = &v[i].t;
    }
    return blkc_kernel_launch(kern, a, 3, NULL);
}

/* Tensor i at offset off[i] bytes with stride st[i] (1: contiguous). */
static blkc_status launch3(const int *off, const int *st, int64_t n)
{
    Vec v[3];
    blkc_arg a[3];
    for (int i = 0; i < 3; i++) {
        vec(&v[i], mem[i], (size_t)off[i], n, st[i] == 1 ? 0 : st[i]);
        a[i].kind = BLKC_ARG_TENSOR;
        a[i].v.tensor = &v[i].t;
    }
    return blkc_kernel_launch(kern, a, 3, NULL);
}

static void *thread_main(void *arg)
{
    blkc_status st = launch(0, 4008, 0);
    *(int *)arg = st;
    return NULL;
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/blkc-gspec.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("FAKE_CUDA_IMAGE_DIR", dir, 1);
    setenv("FAKE_CUDA_CC", "99", 1);
    setenv("FAKE_CUDA_LAUNCH_NOOP", "1", 1);
    blkc_context *ctx;
    blkc_status st = blkc_context_create("cuda:0", &ctx);
    if (st != BLKC_OK) {
        fprintf(stderr, "FAIL: cuda:0 over the fake libcuda: %s\n",
                blkc_last_error());
        return 1;
    }
    blkc_module *m;
    st = blkc_module_create(ctx, src, strlen(src), NULL, &m);
    if (st == BLKC_ERR_UNSUPPORTED) {
        printf("skip: %s\n", blkc_last_error());
        blkc_context_destroy(ctx);
        return 77;
    }
    if (st != BLKC_OK) {
        fprintf(stderr, "FAIL: module: %s\n", blkc_last_error());
        return 1;
    }
    if (images() != 1) {
        fprintf(stderr, "FAIL: %d images after loading the module (is the "
                "fake libcuda.so.1 loaded?)\n", images());
        return 1;
    }
    CHECK(image_has(1, ".entry") == 1, "image 1 is not PTX with an entry");
    CHECK(image_has(1, "ld.global.v4") == 0,
          "the generic kernel already has vector loads: nothing to test");
    st = blkc_module_get_kernel(m, "vector_add", &kern);
    CHECK(st == BLKC_OK, "get_kernel: %s", blkc_last_error());
    for (int i = 0; i < 3; i++)
        mem[i] = aligned_alloc(256, 8 * 4096 + 256);

    /* aligned, contiguous, N % 16 == 0: a variant with 128-bit accesses */
    st = launch(0, 4096, 0);
    CHECK(st == BLKC_OK, "aligned launch: %s", blkc_last_error());
    CHECK(images() == 2, "aligned launch: %d images, want 2", images());
    CHECK(image_has(2, "ld.global.v4") == 1, "variant has no ld.global.v4");
    CHECK(image_has(2, "st.global.v4") == 1, "variant has no st.global.v4");
    CHECK(last_launch() == 2, "aligned launch ran module %d, want 2",
          last_launch());
    /* the same facts (other addresses, other N % 16 == 0): nothing new */
    st = launch(16, 2048, 0);
    CHECK(st == BLKC_OK, "second launch: %s", blkc_last_error());
    CHECK(images() == 2, "same facts compiled again: %d images", images());
    CHECK(last_launch() == 2, "second launch ran module %d, want 2",
          last_launch());
    /* strided (2), unaligned, N = 100: no facts, the generic kernel */
    st = launch(4, 100, 2);
    CHECK(st == BLKC_OK, "strided launch: %s", blkc_last_error());
    CHECK(images() == 2, "strided launch compiled: %d images", images());
    CHECK(last_launch() == 1, "strided launch ran module %d, want 1 "
          "(generic)", last_launch());
    /* unaligned, contiguous: a variant of its own, scalar accesses */
    st = launch(4, 4096, 0);
    CHECK(st == BLKC_OK, "unaligned launch: %s", blkc_last_error());
    CHECK(images() == 3, "unaligned launch: %d images, want 3", images());
    CHECK(image_has(3, "ld.global.v4") == 0,
          "unaligned variant has vector loads");
    CHECK(last_launch() == 3, "unaligned launch ran module %d, want 3",
          last_launch());
    /* back to the first signature: its variant, still nothing new */
    st = launch(0, 4096, 0);
    CHECK(st == BLKC_OK && images() == 3 && last_launch() == 2,
          "aligned again: status %d, %d images, module %d", (int)st, images(),
          last_launch());
    /* four threads with a new signature (N % 16 != 0) at once: one compile */
    pthread_t th[4];
    int rs[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_main, &rs[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(rs[i] == BLKC_OK, "thread %d: status %d", i, rs[i]);
    }
    CHECK(images() == 4, "4 threads, one new signature: %d images, want 4",
          images());
    CHECK(last_launch() == 4, "threads ran module %d, want 4", last_launch());
    /* a variant that cannot be loaded: the launch runs the generic kernel,
     * succeeds, and says why in blkc_last_error(); never retried */
    setenv("FAKE_CUDA_LOAD_FAIL_FROM", "5", 1);
    st = launch(4, 4008, 0); /* unit inner stride only: a new signature */
    CHECK(st == BLKC_OK, "failed variant: status %d: %s", (int)st,
          blkc_last_error());
    CHECK(strstr(blkc_last_error(), "kernel vector_add: the variant "
                 "specialized for these arguments could not be built") &&
          strstr(blkc_last_error(), "cuModuleLoadData") &&
          strstr(blkc_last_error(), "running the generic one"),
          "failed variant: note '%s'", blkc_last_error());
    CHECK(images() == 5 && last_launch() == 1, "failed variant: %d images "
          "(want 5), module %d (want 1)", images(), last_launch());
    st = launch(4, 4008, 0);
    CHECK(st == BLKC_OK && images() == 5 && last_launch() == 1,
          "failed variant again: status %d, %d images (want 5: not retried), "
          "module %d", (int)st, images(), last_launch());
    unsetenv("FAKE_CUDA_LOAD_FAIL_FROM");
    /* the working variants are still used */
    st = launch(0, 4096, 0);
    CHECK(st == BLKC_OK && images() == 5 && last_launch() == 2,
          "aligned after the failure: status %d, %d images, module %d",
          (int)st, images(), last_launch());
    /* fill the table (16 entries: 3 variants and the failed one so far)
     * with per-tensor mixes of offset 0/4 and stride 1/2 (N = 4008) */
    int filled = 4, combo = 0, c[3];
    while (filled < 16 && combo < 64) {
        int off[3], str[3];
        for (int i = 0, x = combo; i < 3; i++, x /= 4) {
            c[i] = x % 4;
            off[i] = c[i] & 1 ? 4 : 0;
            str[i] = c[i] & 2 ? 2 : 1;
        }
        combo++;
        bool same = c[0] == c[1] && c[1] == c[2];
        if (same) /* all the same: already seen (or no facts) */
            continue;
        int before = images();
        st = launch3(off, str, 4008);
        CHECK(st == BLKC_OK && images() == before + 1 &&
              last_launch() == before + 1, "fill %d: status %d, %d images "
              "(want %d), module %d: %s", filled, (int)st, images(),
              before + 1, last_launch(), blkc_last_error());
        filled++;
    }
    /* full: a new signature compiles nothing, runs, and says so once */
    int before = images();
    int off3[3] = {4, 0, 0}, str3[3] = {1, 1, 2};
    st = launch3(off3, str3, 4096); /* DIM16 now: a new signature */
    CHECK(st == BLKC_OK, "full table: status %d: %s", (int)st,
          blkc_last_error());
    CHECK(strstr(blkc_last_error(), "kernel vector_add: 16 specialized "
                 "variants exist (the limit)"), "full table: note '%s'",
          blkc_last_error());
    CHECK(images() == before, "full table: %d images, want %d", images(),
          before);

    /* the synchronised launch's deadline, where one is set: the fake's
     * default stream never drains (FAKE_GPU_SYNC_HANG=0); an error, no
     * hang, and the device is kept (busy). Not under the sanitizers. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    setenv("FAKE_GPU_SYNC_HANG", "0", 1);
    setenv("BLKC_COLL_TIMEOUT_MS", "300", 1);
    st = launch(0, 4096, 0);
    CHECK(st == BLKC_ERR_RUNTIME &&
          !strcmp(blkc_last_error(), "kernel vector_add did not complete "
                  "within 300 ms (the deadline that BLKC_COLL_TIMEOUT_MS or "
                  "BLKC_WAIT_TIMEOUT_MS sets)"),
          "stuck launch: status %d: '%s'", (int)st, blkc_last_error());
    unsetenv("BLKC_COLL_TIMEOUT_MS");
    unsetenv("FAKE_GPU_SYNC_HANG");
#endif

    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
    for (int i = 0; i < 3; i++)
        free(mem[i]);
    if (!fails) { /* leave the images behind on failure, for a look */
        DIR *d = opendir(dir);
        char path[600];
        for (struct dirent *e; d && (e = readdir(d));)
            if (e->d_name[0] != '.') {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        if (d)
            closedir(d);
        rmdir(dir);
        printf("ok: generic, 3 variants, strided -> generic, 1 compile for 4 "
               "threads, a failed variant -> generic with a note, a full "
               "table with a note, a stuck launch's deadline\n");
    } else {
        fprintf(stderr, "images kept in %s\n", dir);
    }
    return fails ? 1 : 0;
}
