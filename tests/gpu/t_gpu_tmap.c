/* t_gpu_tmap.c — the tensor maps of TMA kernels are cached per launch
 * signature (runtime/gpu_launch.c, gpu.h "Tensor maps"), checked through
 * the public C API on a cuda:0 context backed by fake_cuda.c's
 * libcuda.so.1 (ctest sets LD_LIBRARY_PATH): compute capability 9.0, so
 * the runtime compiles sm_90a cubins with NVRTC and the aligned launches
 * below run the TMA variant of a wgmma GEMM (maps of A and B); the fake
 * runs no kernel (FAKE_CUDA_LAUNCH_NOOP) and writes a line per
 * cuTensorMapEncodeTiled call to DIR/tmaps. Checks, counting those calls:
 * the first launch encodes 2 maps, the same launch again none; A at
 * another address or with another shape encodes A's map only; the first
 * arguments again encode nothing; a failed encoding fails the launch with
 * the tensor's name and is not cached (the same launch then encodes and
 * succeeds); four threads launching a new address at once encode it once;
 * 16 new addresses of A evict the oldest A map but not B's, used at every
 * launch (least recently used); a batch of GEMMs over rank-3 tensors
 * encodes rank-3 maps (dims innermost first, byte strides, a box of 1 on
 * the batch). Exit 77 without NVRTC. */
#include <blkc/blkc.h>

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
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

/* tests/emu/twgmma.blk's twg_bf16: 64 x 64 x 32 tiles, one warpgroup */
static const char *src =
    "kernel twg_bf16<BM = 64, BN = 64, BK = 32>(A: bf16[M, K], B: bf16[K, N], C: f32[M, N])\n"
    "    grid(cdiv(M, BM), cdiv(N, BN)) warps(4) stages(3)\n"
    "{\n"
    "    let m = program_id(0) * BM;\n"
    "    let n = program_id(1) * BN;\n"
    "    var acc = zeros(f32, BM, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        acc = dot(A[m +: BM, k +: BK], B[k +: BK, n +: BN], acc);\n"
    "    }\n"
    "    C[m +: BM, n +: BN] = acc;\n"
    "}\n"
    "kernel twg_batched<BM = 64, BN = 64, BK = 32>(A: bf16[Bt, M, K], B: bf16[Bt, K, N],\n"
    "                                              C: f32[Bt, M, N])\n"
    "    grid(cdiv(M, BM), cdiv(N, BN), Bt) warps(4) stages(3)\n"
    "{\n"
    "    let m = program_id(0) * BM;\n"
    "    let n = program_id(1) * BN;\n"
    "    let b = program_id(2);\n"
    "    var acc = zeros(f32, BM, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        acc = dot(A[b, m +: BM, k +: BK], B[b, k +: BK, n +: BN], acc);\n"
    "    }\n"
    "    C[b, m +: BM, n +: BN] = acc;\n"
    "}\n";

/* cuTensorMapEncodeTiled calls so far (lines of DIR/tmaps). */
static int encodes(void)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/tmaps", dir);
    FILE *fp = fopen(path, "r");
    int n = 0;
    while (fp && fgets(line, sizeof line, fp))
        n += !strncmp(line, "tmap ", 5);
    if (fp)
        fclose(fp);
    return n;
}

typedef struct Mat {
    DLTensor t;
    int64_t shape[2];
} Mat;

/* A compact rows x cols "device" matrix at p (the fake's device memory is
 * host memory, and no kernel reads it: only the address matters). */
static void mat(Mat *m, void *p, int64_t rows, int64_t cols, int bits, int code)
{
    memset(m, 0, sizeof *m);
    m->shape[0] = rows;
    m->shape[1] = cols;
    m->t.data = p;
    m->t.device.device_type = kDLCUDA;
    m->t.ndim = 2;
    m->t.dtype.code = (uint8_t)code;
    m->t.dtype.bits = (uint8_t)bits;
    m->t.dtype.lanes = 1;
    m->t.shape = m->shape;
}

enum { K = 64, N = 64, MAXM = 128, NA = 24 };
static blkc_kernel *kern;
static char *abuf, *bbuf, *cbuf;

/* C = A B with A (M x K) at abuf + 256 * slot. */
static blkc_status launch(int slot, int64_t m)
{
    Mat a, b, c;
    mat(&a, abuf + 256 * (size_t)slot, m, K, 16, kDLBfloat);
    mat(&b, bbuf, K, N, 16, kDLBfloat);
    mat(&c, cbuf, m, N, 32, kDLFloat);
    blkc_arg args[3] = {{BLKC_ARG_TENSOR, {.tensor = &a.t}},
                        {BLKC_ARG_TENSOR, {.tensor = &b.t}},
                        {BLKC_ARG_TENSOR, {.tensor = &c.t}}};
    return blkc_kernel_launch(kern, args, 3, NULL);
}

/* twg_batched over rank-3 tensors (Bt = 2, M = 96, K = N = 64, compact):
 * rank-3 maps, dims innermost first, the two strides in bytes, a box of 1
 * on the batch dim: A's 32 (64-byte rows: the 64B swizzle) x 64 rows, B's
 * 64 (128B swizzle) x 32 rows. */
static void rank3(blkc_module *m)
{
    blkc_kernel *kb;
    if (blkc_module_get_kernel(m, "twg_batched", &kb) != BLKC_OK) {
        CHECK(0, "no kernel twg_batched: %s", blkc_last_error());
        return;
    }
    int64_t sa[3] = {2, 96, K}, sb[3] = {2, K, N}, sc[3] = {2, 96, N};
    DLTensor t[3];
    int64_t *shp[3] = {sa, sb, sc};
    char *buf[3] = {abuf, bbuf, cbuf};
    for (int i = 0; i < 3; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].data = buf[i];
        t[i].device.device_type = kDLCUDA;
        t[i].ndim = 3;
        t[i].dtype.code = (uint8_t)(i < 2 ? kDLBfloat : kDLFloat);
        t[i].dtype.bits = (uint8_t)(i < 2 ? 16 : 32);
        t[i].dtype.lanes = 1;
        t[i].shape = shp[i];
    }
    blkc_arg args[3] = {{BLKC_ARG_TENSOR, {.tensor = &t[0]}},
                        {BLKC_ARG_TENSOR, {.tensor = &t[1]}},
                        {BLKC_ARG_TENSOR, {.tensor = &t[2]}}};
    blkc_status st = blkc_kernel_launch(kb, args, 3, NULL);
    CHECK(st == BLKC_OK, "twg_batched: %s", blkc_last_error());
    char path[512], line[256], want[2][160];
    snprintf(want[0], sizeof want[0], "tmap rank 3 %p 64x96x2 strides 128,12288 box 32x64x1 "
             "swizzle 2\n", (void *)abuf);
    snprintf(want[1], sizeof want[1], "tmap rank 3 %p 64x64x2 strides 128,8192 box 64x32x1 "
             "swizzle 3\n", (void *)bbuf);
    snprintf(path, sizeof path, "%s/tmaps", dir);
    FILE *fp = fopen(path, "r");
    int seen[2] = {0, 0};
    while (fp && fgets(line, sizeof line, fp))
        for (int i = 0; i < 2; i++)
            seen[i] += !strcmp(line, want[i]);
    if (fp)
        fclose(fp);
    CHECK(seen[0] == 1 && seen[1] == 1, "twg_batched: want one each of '%s' and '%s' in %s "
          "(seen %d, %d)", want[0], want[1], path, seen[0], seen[1]);
}

static void *thread_main(void *arg)
{
    *(int *)arg = launch(5, MAXM);
    return NULL;
}

static void cleanup(void)
{
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
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/blkc-gtmap.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("FAKE_CUDA_IMAGE_DIR", dir, 1);
    setenv("FAKE_CUDA_CC", "90", 1);
    setenv("FAKE_CUDA_LAUNCH_NOOP", "1", 1);
    unsetenv("BLKC_GPU_ARCH");
    unsetenv("BLKC_GPU_NOTMA");
    unsetenv("BLKC_SPECIALIZE");
    blkc_context *ctx;
    blkc_status st = blkc_context_create("cuda:0", &ctx);
    if (st != BLKC_OK) {
        fprintf(stderr, "FAIL: cuda:0 over the fake libcuda: %s\n", blkc_last_error());
        return 1;
    }
    blkc_module *m;
    st = blkc_module_create(ctx, src, strlen(src), NULL, &m);
    if (st == BLKC_ERR_UNSUPPORTED) {
        printf("skip: %s\n", blkc_last_error());
        blkc_context_destroy(ctx);
        cleanup();
        return 77;
    }
    if (st != BLKC_OK || blkc_module_get_kernel(m, "twg_bf16", &kern) != BLKC_OK) {
        fprintf(stderr, "FAIL: module: %s\n", blkc_last_error());
        return 1;
    }
    abuf = aligned_alloc(256, (size_t)MAXM * K * 2 + 256 * NA);
    bbuf = aligned_alloc(256, (size_t)K * N * 2);
    cbuf = aligned_alloc(256, (size_t)MAXM * N * 4);
    if (!abuf || !bbuf || !cbuf) {
        fprintf(stderr, "FAIL: out of memory\n");
        return 1;
    }

    /* the TMA variant: the maps of A and B */
    st = launch(0, MAXM);
    CHECK(st == BLKC_OK, "first launch: %s", blkc_last_error());
    CHECK(encodes() == 2, "first launch: %d encodings, want 2 (A, B)", encodes());
    /* the same arguments: from the cache */
    for (int i = 0; i < 3; i++) {
        st = launch(0, MAXM);
        CHECK(st == BLKC_OK && encodes() == 2, "same launch %d: status %d, %d encodings, "
              "want 2", i, (int)st, encodes());
    }
    /* A elsewhere: A's map only */
    st = launch(1, MAXM);
    CHECK(st == BLKC_OK && encodes() == 3, "A moved: status %d, %d encodings, want 3",
          (int)st, encodes());
    /* A with fewer rows (C too; B the same): A's map only */
    st = launch(0, 64);
    CHECK(st == BLKC_OK && encodes() == 4, "A reshaped: status %d, %d encodings, want 4",
          (int)st, encodes());
    /* the first arguments again: still cached */
    st = launch(0, MAXM);
    CHECK(st == BLKC_OK && encodes() == 4, "first arguments again: status %d, %d "
          "encodings, want 4", (int)st, encodes());

    /* a failed encoding fails the launch, naming the tensor; not cached */
    setenv("FAKE_CUDA_TMAP_FAIL", "1", 1);
    st = launch(2, MAXM);
    CHECK(st == BLKC_ERR_RUNTIME && strstr(blkc_last_error(), "kernel twg_bf16: no tensor "
          "map for A (shape 128 x 64, row stride 64)") &&
          strstr(blkc_last_error(), "cuTensorMapEncodeTiled"),
          "failed encoding: status %d: %s", (int)st, blkc_last_error());
    CHECK(encodes() == 5, "failed encoding: %d calls, want 5", encodes());
    unsetenv("FAKE_CUDA_TMAP_FAIL");
    st = launch(2, MAXM);
    CHECK(st == BLKC_OK && encodes() == 6, "after the failure: status %d, %d encodings, "
          "want 6 (the failure was not cached): %s", (int)st, encodes(), blkc_last_error());
    st = launch(2, MAXM);
    CHECK(st == BLKC_OK && encodes() == 6, "after the failure, again: status %d, %d "
          "encodings, want 6", (int)st, encodes());

    /* four threads, one new address of A: encoded once */
    pthread_t th[4];
    int rs[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_main, &rs[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(rs[i] == BLKC_OK, "thread %d: status %d", i, rs[i]);
    }
    CHECK(encodes() == 7, "4 threads, one new address: %d encodings, want 7", encodes());

    /* 16 maps in the cache: B's (used by every launch) and the 15 newest
     * of A; 16 more addresses of A push out the first one */
    for (int i = 0; i < 16; i++) {
        st = launch(8 + i, MAXM);
        CHECK(st == BLKC_OK && encodes() == 8 + i, "address %d: status %d, %d encodings, "
              "want %d", 8 + i, (int)st, encodes(), 8 + i);
    }
    st = launch(0, MAXM);
    CHECK(st == BLKC_OK && encodes() == 24, "first arguments after 16 others: status %d, "
          "%d encodings, want 24 (A evicted, B kept)", (int)st, encodes());
    st = launch(23, MAXM);
    CHECK(st == BLKC_OK && encodes() == 24, "the newest address: status %d, %d encodings, "
          "want 24", (int)st, encodes());

    rank3(m);
    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
    free(abuf);
    free(bbuf);
    free(cbuf);
    if (fails) {
        fprintf(stderr, "calls kept in %s/tmaps\n", dir);
        return 1;
    }
    cleanup();
    printf("ok: 2 maps encoded once, moved / reshaped A re-encoded alone, a failed "
           "encoding not cached, 4 threads encode once, least recently used evicted, "
           "rank-3 maps\n");
    return 0;
}
