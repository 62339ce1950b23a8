/* t_gpu_stage.c — the staged copies of runtime/gpu_copy.c
 * (rt_gpu_stage_copy), without a GPU: over a driver table whose device
 * memory is host memory and whose asynchronous copies complete at once.
 * The data round trips in chunks of the staging buffer, one wait per
 * chunk; the buffer grows once (to RT_GPU_STAGE_MAX) and nothing is freed
 * before rt_gpu_stage_free (freeing pinned memory may wait for the whole
 * device); a failed growth goes on in the first buffer's chunks; a wait
 * that fails is -2, a driver error -1 with its message; without mapped
 * host memory, the synchronous copies. */
#include "../../runtime/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_check.h"

/* what the stub driver saw */
static int maps, frees, syncs, asyncs, waits;
static size_t mapped;            /* bytes of the last map */
static int map_fail_from = -1;   /* the map with this index on fails */
static int async_fail;           /* the asynchronous copies fail */
static int wait_fail_at = -1;    /* the wait with this index fails */

static int s_h2d(void *dev, uint64_t dst, const void *src, size_t n, char *err,
                 size_t errlen)
{
    syncs++;
    memcpy((void *)(uintptr_t)dst, src, n);
    return 0;
}

static int s_d2h(void *dev, void *dst, uint64_t src, size_t n, char *err,
                 size_t errlen)
{
    syncs++;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return 0;
}

static int s_map(void *dev, size_t bytes, void **host, char *err, size_t errlen)
{
    if (map_fail_from >= 0 && maps >= map_fail_from) {
        snprintf(err, errlen, "no pinned memory");
        return -1;
    }
    maps++;
    mapped = bytes;
    *host = malloc(bytes);
    return *host ? 0 : -1;
}

static void s_free(void *dev, void *host)
{
    frees++;
    free(host);
}

static int s_query(void *dev, void *stream, char *err, size_t errlen)
{
    return 0;
}

static int s_h2d_async(void *dev, uint64_t dst, const void *src, size_t n,
                       void *stream, char *err, size_t errlen)
{
    if (async_fail) {
        snprintf(err, errlen, "cuMemcpyHtoDAsync: an error");
        return -1;
    }
    asyncs++;
    memcpy((void *)(uintptr_t)dst, src, n);
    return 0;
}

static int s_d2h_async(void *dev, void *dst, uint64_t src, size_t n,
                       void *stream, char *err, size_t errlen)
{
    asyncs++;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return 0;
}

static int s_wait(void *cx, void *stream, const char *what, char *err,
                  size_t errlen)
{
    CHECK(stream == cx);
    if (waits++ == wait_fail_at) {
        snprintf(err, errlen, "%s did not complete within 1 ms", what);
        return -1;
    }
    return 0;
}

static void fill(char *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(i * 31 + (size_t)seed);
}

/* a copy of n bytes up (host a -> "device" b) and back down (b -> c) */
static int round_trip(const RtGpuOps *ops, RtGpuStage *s, size_t n, int seed)
{
    char *a = malloc(n), *b = malloc(n), *c = malloc(n);
    char err[256] = "";
    int rc = -1;
    if (a && b && c) {
        fill(a, n, seed);
        void *st = &maps; /* the stream: any token */
        rc = rt_gpu_stage_copy(ops, NULL, s, st, true, (uint64_t)(uintptr_t)b,
                               a, n, "up", s_wait, st, err, sizeof err);
        if (!rc)
            rc = rt_gpu_stage_copy(ops, NULL, s, st, false,
                                   (uint64_t)(uintptr_t)b, c, n, "down",
                                   s_wait, st, err, sizeof err);
        if (!rc && memcmp(a, c, n))
            rc = -3;
    }
    free(a);
    free(b);
    free(c);
    return rc;
}

int main(void)
{
    RtGpuOps ops = {
        .vendor = "stub", .h2d = s_h2d, .d2h = s_d2h, .host_map = s_map,
        .host_free = s_free, .query = s_query, .h2d_async = s_h2d_async,
        .d2h_async = s_d2h_async,
    };
    const size_t M = RT_GPU_STAGE_MAX;
    RtGpuStage s;
    memset(&s, 0, sizeof s);

    /* a small copy: a first buffer of 4 KiB, one chunk each way */
    CHECK(round_trip(&ops, &s, 100, 1) == 0);
    CHECK(maps == 1 && mapped == 4096 && waits == 2 && syncs == 0);
    /* 6000 bytes: the first buffer is outgrown, kept; the next is
     * RT_GPU_STAGE_MAX */
    CHECK(round_trip(&ops, &s, 6000, 2) == 0);
    CHECK(maps == 2 && mapped == M && frees == 0 && s.old && s.bytes == M);
    /* 2.5 x RT_GPU_STAGE_MAX: three chunks each way, no more maps */
    waits = 0;
    CHECK(round_trip(&ops, &s, M * 5 / 2, 3) == 0);
    CHECK(maps == 2 && frees == 0 && waits == 6);
    /* a wait that fails ends the copy at that chunk: -2, err from it */
    char buf[64], err[256] = "";
    uint64_t dev = (uint64_t)(uintptr_t)buf;
    waits = 0;
    wait_fail_at = 0;
    void *st = &maps;
    CHECK(rt_gpu_stage_copy(&ops, NULL, &s, st, true, dev, buf, sizeof buf,
                            "the upload", s_wait, st, err, sizeof err) == -2);
    CHECK(!strcmp(err, "the upload did not complete within 1 ms"));
    wait_fail_at = -1;
    /* a driver error: -1 and its message */
    async_fail = 1;
    CHECK(rt_gpu_stage_copy(&ops, NULL, &s, st, true, dev, buf, sizeof buf,
                            "the upload", s_wait, st, err, sizeof err) == -1);
    CHECK(!strcmp(err, "cuMemcpyHtoDAsync: an error"));
    async_fail = 0;
    /* both buffers go with the stage, and nothing before */
    CHECK(frees == 0);
    rt_gpu_stage_free(&ops, NULL, &s);
    CHECK(frees == 2 && !s.buf && !s.old);

    /* the larger buffer cannot be mapped: on in the first one's chunks,
     * and no map is tried again */
    maps = frees = waits = 0;
    map_fail_from = 1;
    CHECK(round_trip(&ops, &s, 1000, 4) == 0);
    CHECK(round_trip(&ops, &s, 10000, 5) == 0);
    CHECK(maps == 1 && s.bytes == 4096 && s.grown && waits == 2 + 2 * 3);
    CHECK(round_trip(&ops, &s, M, 6) == 0);
    CHECK(maps == 1 && syncs == 0);
    rt_gpu_stage_free(&ops, NULL, &s);
    CHECK(frees == 1);

    /* no staging buffer can be had: the synchronous copies */
    maps = waits = 0;
    map_fail_from = 0;
    CHECK(round_trip(&ops, &s, 5000, 7) == 0);
    CHECK(s.none && syncs == 2 && waits == 0);
    rt_gpu_stage_free(&ops, NULL, &s);
    map_fail_from = -1;
    /* nor where the driver lacks the asynchronous copies */
    ops.d2h_async = NULL;
    syncs = 0;
    CHECK(round_trip(&ops, &s, 5000, 8) == 0);
    CHECK(syncs == 2 && maps == 0 && !s.buf);

    if (fails)
        fprintf(stderr, "%d checks failed\n", fails);
    else
        printf("ok\n");
    return fails ? 1 : 0;
}
