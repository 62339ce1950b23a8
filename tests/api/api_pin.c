/* api_pin.c — blkc_context_options.pin_threads: with num_threads 2 and
 * pin_threads 1, the first launch starts exactly two pool workers, and
 * worker i may run only on CPU i (mod the online CPUs). The threads that
 * appear after the launch are read from /proc/self/task and their
 * affinity with sched_getaffinity; the launch's result is checked
 * against C. Public API only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <blkc/blkc.h>

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "api/api_test.h"

static const char *src = API_TWICE_SRC;

/* the thread ids of this process, up to max */
static int tids(pid_t *out, int max)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max)
        if (e->d_name[0] != '.')
            out[n++] = (pid_t)atoi(e->d_name);
    if (d)
        closedir(d);
    return n;
}

static int known(const pid_t *v, int n, pid_t t)
{
    for (int i = 0; i < n; i++)
        if (v[i] == t)
            return 1;
    return 0;
}

int main(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0 || ncpu < 1 ||
        CPU_COUNT(&mine) < (ncpu < 2 ? ncpu : 2)) {
        printf("api_pin: skipped (this process may not run on CPUs 0 and 1)\n");
        return 77;
    }
    pid_t before[64], after[64];
    int nb = tids(before, 64);

    blkc_context_options co;
    blkc_context_options_init(&co);
    co.num_threads = 2;
    co.pin_threads = 1;
    co.specialize = BLKC_SPECIALIZE_OFF; /* no background compiler thread */
    blkc_context *ctx;
    blkc_module *m;
    blkc_kernel *k;
    CHECK(blkc_context_create_ex("cpu", &co, &ctx) == BLKC_OK);
    CHECK(blkc_module_create(ctx, src, 0, NULL, &m) == BLKC_OK);
    CHECK(blkc_module_get_kernel(m, NULL, &k) == BLKC_OK);
    enum { N = 1000 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 37) - 18, y[i] = -1;
    CHECK(blkc_kernel_launchf(k, "f32[#] f32[#]", x, N, y, N) == BLKC_OK);
    for (int i = 0; i < N; i++)
        if (y[i] != x[i] * 2 + 1) {
            CHECK(y[i] == x[i] * 2 + 1);
            break;
        }

    int na = tids(after, 64), workers = 0, cpus_seen = 0;
    for (int i = 0; i < na; i++) {
        if (known(before, nb, after[i]))
            continue;
        cpu_set_t s;
        CHECK(sched_getaffinity(after[i], sizeof s, &s) == 0);
        int count = CPU_COUNT(&s), cpu = -1;
        for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
            if (CPU_ISSET(c, &s))
                cpu = c;
        printf("api_pin: new thread %d may run on %d CPU%s (first %d)\n",
               (int)after[i], count, count == 1 ? "" : "s", cpu);
        CHECK(count == 1);
        if (count == 1 && cpu >= 0 && cpu < 32)
            cpus_seen |= 1 << cpu;
        workers++;
    }
    CHECK(workers == 2);
    /* worker i on CPU i % ncpu: CPUs 0 and 1 (both 0 on a 1-CPU machine) */
    CHECK(cpus_seen == (ncpu >= 2 ? 3 : 1));
    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
    printf("api_pin: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
