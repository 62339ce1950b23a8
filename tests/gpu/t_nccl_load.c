/* t_nccl_load.c — NCCL through dlopen (runtime/nccl.c), without a GPU:
 * the NCCL of the CUDA toolkit (/usr/local/cuda, or $BLKC_TEST_NCCL) loads,
 * every entry point of the table resolves, ncclGetVersion agrees with the
 * toolkit's nccl.h, ncclGetUniqueId works (it needs no GPU); the dtype/op
 * mapping matches nccl.h's enums; a missing library and a library without
 * the symbols give clear messages. Exit 77 when no NCCL is installed. */
#include "../../runtime/gpu.h"
#include "../../runtime/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit_check.h"

/* NCCL_MAJOR / MINOR / PATCH of a header, as ncclGetVersion reports it. */
static int header_version(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    int maj = -1, min = -1, pat = -1;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "#define NCCL_MAJOR %d", &maj);
        sscanf(line, "#define NCCL_MINOR %d", &min);
        sscanf(line, "#define NCCL_PATCH %d", &pat);
    }
    fclose(f);
    if (maj < 0 || min < 0 || pat < 0)
        return -1;
    return maj <= 2 && min < 9 ? maj * 1000 + min * 100 + pat
                               : maj * 10000 + min * 100 + pat;
}

/* In a child process (the library is loaded once per process): load RCCL
 * from `lib` and expect failure with `want` in the message. */
static void expect_load_error(const char *lib, const char *want)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("BLKC_RCCL_LIB", lib, 1);
        char err[512] = "";
        int rc = rt_nccl_load(BLKC_TARGET_HIP, err, sizeof err);
        if (rc != -2 || !strstr(err, want)) {
            fprintf(stderr, "load %s: rc %d, message '%s', wanted '%s'\n", lib,
                    rc, err, want);
            _exit(1);
        }
        printf("ok: %s -> %s\n", lib, err);
        fflush(stdout);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    const char *lib = getenv("BLKC_TEST_NCCL");
    if (!lib)
        lib = "/usr/local/cuda/lib64/libnccl.so.2";
    if (access(lib, R_OK) != 0) {
        printf("skip: no NCCL at %s\n", lib);
        return 77;
    }
    setenv("BLKC_NCCL_LIB", lib, 1);
    char err[512] = "";
    int rc = rt_nccl_load(BLKC_TARGET_CUDA, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "loading %s: %s\n", lib, err);
        return 1;
    }
    int n = 0;
    for (const char *const *s = rt_nccl_symbol_names(); *s; s++, n++)
        if (!rt_nccl_symbol(BLKC_TARGET_CUDA, *s)) {
            fprintf(stderr, "unresolved: %s\n", *s);
            fails++;
        }
    CHECK(n == 16);
    CHECK(rt_nccl_symbol(BLKC_TARGET_CUDA, "ncclNoSuchThing") == NULL);

    int v = 0;
    CHECK(rt_nccl_version(BLKC_TARGET_CUDA, &v, err, sizeof err) == 0);
    CHECK(v >= 20700);
    int hv = header_version("/usr/local/cuda/include/nccl.h");
    printf("NCCL version %d (header %d), %d entry points\n", v, hv, n);
    if (hv > 0 && strstr(lib, "/usr/local/cuda"))
        CHECK(v == hv);

    unsigned char id[RT_NCCL_ID_BYTES];
    memset(id, 0, sizeof id);
    if (rt_nccl_unique_id(BLKC_TARGET_CUDA, id, err, sizeof err) == 0) {
        int nz = 0;
        for (int i = 0; i < RT_NCCL_ID_BYTES; i++)
            nz += id[i] != 0;
        CHECK(nz > 0);
        printf("ncclGetUniqueId: ok (%d non-zero bytes)\n", nz);
    } else {
        printf("ncclGetUniqueId without a GPU: %s (not checked)\n", err);
    }

    /* nccl.h: ncclInt8 0, Uint8 1, Int32 2, Uint32 3, Int64 4, Uint64 5,
     * Float16 6, Float32 7, Float64 8, Bfloat16 9; ncclSum 0, Max 2, Min 3 */
    CHECK(rt_nccl_dtype(DT_I8) == 0 && rt_nccl_dtype(DT_U8) == 1);
    CHECK(rt_nccl_dtype(DT_I32) == 2 && rt_nccl_dtype(DT_U32) == 3);
    CHECK(rt_nccl_dtype(DT_I64) == 4 && rt_nccl_dtype(DT_U64) == 5);
    CHECK(rt_nccl_dtype(DT_F16) == 6 && rt_nccl_dtype(DT_F32) == 7);
    CHECK(rt_nccl_dtype(DT_F64) == 8 && rt_nccl_dtype(DT_BF16) == 9);
    CHECK(rt_nccl_dtype(DT_I16) == -1 && rt_nccl_dtype(DT_U16) == -1);
    CHECK(rt_nccl_op(RT_RED_SUM) == 0 && rt_nccl_op(RT_RED_MAX) == 2 &&
          rt_nccl_op(RT_RED_MIN) == 3 && rt_nccl_op(7) == -1);
    CHECK(rt_nccl_supports(DT_F32, RT_RED_SUM));
    CHECK(rt_nccl_supports(DT_F16, -1));          /* gathers move bytes */
    CHECK(!rt_nccl_supports(DT_F16, RT_RED_SUM)); /* one rounding: staged */
    CHECK(!rt_nccl_supports(DT_BOOL, RT_RED_SUM));
    CHECK(rt_nccl_supports(DT_BOOL, RT_RED_MAX));
    CHECK(!rt_nccl_supports(DT_I16, -1));

    expect_load_error("/nonexistent/librccl.so", "RCCL not found");
    expect_load_error("libm.so.6", "lacks ncclGetVersion");
    if (fails) {
        fprintf(stderr, "%d check(s) failed\n", fails);
        return 1;
    }
    printf("ok\n");
    return 0;
}
