/* fake_mem.h — the "device memory" of the fake drivers (fake_cuda.c,
 * fake_hip.c): host memory from memfd mappings, so that an IPC handle
 * (pid, fd, size: the first bytes of the driver's 64-byte handle) can be
 * opened by another process of the same user through /proc/PID/fd/FD (GPU
 * ranks under mpirun); mapped pinned host memory; the notify kernels and
 * a stand-in for a generated kernel that waits (fake_wait_kernel), or
 * that computes for ever on some ranks (fake_spin_rank); a default stream
 * or the ranks' streams that never drain on some devices (fake_hang), and
 * signal polls that never complete (fake_poll_read).
 * Included once by each fake; every int function returns 0 or -1. */
#ifndef BLKC_FAKE_MEM_H
#define BLKC_FAKE_MEM_H

#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* the live allocations (and mapped handles): address, size, memfd */
typedef struct FakeMem { uintptr_t p; size_t n; int fd; } FakeMem;
static FakeMem fake_mems[4096];
static pthread_mutex_t fake_mem_lock = PTHREAD_MUTEX_INITIALIZER;

static void fake_mem_add(void *p, size_t n, int fd)
{
    pthread_mutex_lock(&fake_mem_lock);
    for (int i = 0; i < 4096; i++)
        if (!fake_mems[i].p) {
            fake_mems[i] = (FakeMem){(uintptr_t)p, n, fd};
            break;
        }
    pthread_mutex_unlock(&fake_mem_lock);
}

static FakeMem fake_mem_take(uintptr_t p, int remove)
{
    FakeMem m = {0, 0, -1};
    pthread_mutex_lock(&fake_mem_lock);
    for (int i = 0; i < 4096; i++)
        if (fake_mems[i].p == p) {
            m = fake_mems[i];
            if (remove)
                fake_mems[i].p = 0;
            break;
        }
    pthread_mutex_unlock(&fake_mem_lock);
    return m;
}

static int fake_alloc(uintptr_t *p, size_t n)
{
    size_t sz = n ? n : 1;
    int fd = memfd_create("fake-gpu", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    void *q = ftruncate(fd, (off_t)sz) == 0
                  ? mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    if (q == MAP_FAILED) {
        close(fd);
        return -1;
    }
    fake_mem_add(q, sz, fd);
    *p = (uintptr_t)q;
    return 0;
}

/* frees an allocation or unmaps an opened handle */
static int fake_free(uintptr_t p)
{
    FakeMem m = fake_mem_take(p, 1);
    if (!m.p)
        return -1;
    munmap((void *)m.p, m.n);
    close(m.fd);
    return 0;
}

typedef struct { int32_t pid, fd; uint64_t n; } FakeHandle;

static int fake_ipc_get(char handle[64], uintptr_t p)
{
    FakeMem m = fake_mem_take(p, 0);
    if (!m.p)
        return -1;
    FakeHandle d = {(int32_t)getpid(), m.fd, m.n};
    memset(handle, 0, 64);
    memcpy(handle, &d, sizeof d);
    return 0;
}

static int fake_ipc_open(uintptr_t *p, const char handle[64])
{
    FakeHandle d;
    memcpy(&d, handle, sizeof d);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d.pid, (int)d.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    void *q = mmap(NULL, d.n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (q == MAP_FAILED) {
        close(fd);
        return -1;
    }
    fake_mem_add(q, d.n, fd);
    *p = (uintptr_t)q;
    return 0;
}

/* a read of 8 bytes is signal polling: atomic, as on a GPU */
static void fake_read(void *dst, const void *src, size_t n)
{
    if (n == 8)
        *(uint64_t *)dst = __atomic_load_n((const uint64_t *)src, __ATOMIC_ACQUIRE);
    else
        memcpy(dst, src, n);
}

/* the notify kernels of gpu_ranks.c: blk_sig_set (add = 0), blk_sig_add */
static void fake_notify(uint64_t cell, uint64_t v, int add)
{
    uint64_t *c = (uint64_t *)(uintptr_t)cell;
    if (add)
        __atomic_fetch_add(c, v, __ATOMIC_RELEASE);
    else
        __atomic_store_n(c, v, __ATOMIC_RELEASE);
}

/* The fakes' live host allocations and streams, kept reachable from
 * here: after a deadline the runtime leaves a device in use and
 * deliberately frees nothing of it (gpu_run.c, gpu_ranks.c), as it would
 * leave a real driver's objects, and LeakSanitizer would otherwise report
 * them as the test's leaks. Past FAKE_LIVE live objects the rest are
 * simply not registered. */
#define FAKE_LIVE 4096
static pthread_mutex_t fake_live_mu = PTHREAD_MUTEX_INITIALIZER;
static void *fake_live[FAKE_LIVE];

/* Replaces the entry `from` of the table by `to` (add: from NULL, to p;
 * delete: from p, to NULL). */
static void fake_live_swap(const void *from, void *to)
{
    pthread_mutex_lock(&fake_live_mu);
    for (int i = 0; i < FAKE_LIVE; i++)
        if (fake_live[i] == from) {
            fake_live[i] = to;
            break;
        }
    pthread_mutex_unlock(&fake_live_mu);
}

static void fake_live_add(void *p) { if (p) fake_live_swap(NULL, p); }
static void fake_live_del(void *p) { if (p) fake_live_swap(p, NULL); }

/* Mapped pinned host memory (cuMemHostAlloc / hipHostMalloc): plain
 * host memory whose "device address" is itself. $FAKE_GPU_NO_HOSTMAP=1
 * makes the allocation fail (a driver without it). The allocations of 8
 * bytes are GPU ranks' poll slots (gpu_copy.c): an asynchronous read into
 * one is a signal poll (fake_poll_read). */
#define FAKE_SLOTS 256
static pthread_mutex_t fake_slot_mu = PTHREAD_MUTEX_INITIALIZER;
static void *fake_slots[FAKE_SLOTS]; /* the live poll slots */

static int fake_host_alloc(void **p, size_t n)
{
    const char *no = getenv("FAKE_GPU_NO_HOSTMAP");
    if (no && *no && strcmp(no, "0"))
        return -1;
    *p = calloc(1, n ? n : 1);
    fake_live_add(*p);
    pthread_mutex_lock(&fake_slot_mu);
    for (int i = 0; i < FAKE_SLOTS && *p && n == 8; i++)
        if (!fake_slots[i]) {
            fake_slots[i] = *p;
            break;
        }
    pthread_mutex_unlock(&fake_slot_mu);
    return *p ? 0 : -1;
}

static void fake_host_free(void *p)
{
    pthread_mutex_lock(&fake_slot_mu);
    for (int i = 0; i < FAKE_SLOTS && p; i++)
        if (fake_slots[i] == p)
            fake_slots[i] = NULL;
    pthread_mutex_unlock(&fake_slot_mu);
    fake_live_del(p);
    free(p);
}

static int fake_is_slot(const void *p)
{
    int is = 0;
    pthread_mutex_lock(&fake_slot_mu);
    for (int i = 0; i < FAKE_SLOTS && p && !is; i++)
        is = fake_slots[i] == p;
    pthread_mutex_unlock(&fake_slot_mu);
    return is;
}

/* The waiting kernel: the kernel named $FAKE_GPU_WAIT_KERNEL runs as a
 * stand-in for a generated kernel that waits on a signal nobody sets,
 * except on rank $FAKE_GPU_FAIL_RANK (default 1), where it fails an
 * assert (the first message of the kernel, line 0) as soon as every other
 * rank of the process waits (5 s at most: on a loaded machine it could
 * otherwise fail before they launched, and they would never wait; the
 * ranks of one process are threads sharing fake_waiting). rc is its
 * BkGpuRankCtx (backends/gpu/gpu_emit.h, the last 40 bytes of the packed
 * arguments). The wait polls rc->abort_flag with a volatile load, as
 * blk_wait of backends/gpu/gpu_prelude.c does, and gives up when it is
 * non-zero (aborted) or after rc->timeout ticks of ticks_per_ms (the
 * device clock the driver reports), writing the failure record as
 * blk_wait does. "Device memory" is host memory: the pointers are used as
 * they are. */
typedef struct FakeRankCtx {
    int32_t rank, world;
    uint64_t heap_base, fail, abort_flag;
    int64_t timeout;
} FakeRankCtx;
typedef struct FakeFail {
    int32_t failed, aborted;
    int64_t param, cell;
    uint64_t expected, seen;
    int32_t asserted, amsg, aline, apid[3];
} FakeFail;

/* The calling thread's current device (cuCtxSetCurrent, hipSetDevice; 0
 * until set), in a table rather than a _Thread_local: under ASan, the TLS
 * of a dlopen'ed library made LeakSanitizer fail at the exit of a process
 * with a thread left inside the fake NCCL (gpu_nccl_old_fake*,
 * old_hang_init: "Tracer caught signal 11"). Threads that ended keep
 * their slot; when the table is full the oldest slot is taken again. */
#define FAKE_CUR_MAX 256
static pthread_mutex_t fake_cur_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { pthread_t t; int dev, used; } fake_cur_tab[FAKE_CUR_MAX];
static int fake_cur_next; /* the slot taken again when the table is full */

static int fake_cur_find(void) /* under fake_cur_mu; -1 when not there */
{
    for (int i = 0; i < FAKE_CUR_MAX; i++)
        if (fake_cur_tab[i].used && pthread_equal(fake_cur_tab[i].t, pthread_self()))
            return i;
    return -1;
}

static int fake_cur_get(void)
{
    pthread_mutex_lock(&fake_cur_mu);
    int i = fake_cur_find(), d = i < 0 ? 0 : fake_cur_tab[i].dev;
    pthread_mutex_unlock(&fake_cur_mu);
    return d;
}

static void fake_cur_set(int dev)
{
    pthread_mutex_lock(&fake_cur_mu);
    int i = fake_cur_find();
    for (int j = 0; j < FAKE_CUR_MAX && i < 0; j++)
        if (!fake_cur_tab[j].used)
            i = j;
    if (i < 0) {
        i = fake_cur_next;
        fake_cur_next = (fake_cur_next + 1) % FAKE_CUR_MAX;
    }
    fake_cur_tab[i].t = pthread_self();
    fake_cur_tab[i].dev = dev;
    fake_cur_tab[i].used = 1;
    pthread_mutex_unlock(&fake_cur_mu);
}

/* Whether v is in the list $name ("1" or "1,3"); -1 when it is unset. */
static int fake_in_list(const char *name, long v)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return -1;
    for (const char *p = s; *p;) {
        char *end;
        long q = strtol(p, &end, 10);
        if (end == p)
            break;
        if (q == v)
            return 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* $FAKE_GPU_SYNC_HANG ("1", "1,3", "1@2,3"): the legacy default stream
 * (NULL) of those devices never drains, as if a copy never ended: its
 * query answers not ready, a synchronize waits (30 s at most, then an
 * error). "D@N": device D's default stream drains for its first N - 1
 * waits (a query answered ready, a synchronize that returned) and never
 * from the N-th on; "D" is "D@1". On a device with one rank the uploads'
 * wait is the first, the copy back of the first staged collective, group
 * collective or exchange the second. $FAKE_GPU_STREAM_HANG, the same for
 * the streams a device's ranks made (cuStreamCreate, hipStreamCreate-
 * WithFlags: the ranks' own and their async blocks'), counted together
 * per device: from the N-th wait for any of them on, none drains (on a
 * device with one rank: the heap table's copy first, then one wait for
 * each buffer's zeroing and each chunk of a staged copy, one before an
 * async block and at its end, one before a staged collective, group
 * collective or exchange; not the poll streams: fake_stream_hang).
 * fake_hang(var, counts, dev) is called once
 * per answer about such a stream of dev: 1, not drained (a drained answer
 * is counted in counts[dev]). */
#define FAKE_DEV_MAX 64
static pthread_mutex_t fake_hang_mu = PTHREAD_MUTEX_INITIALIZER;
static int fake_drained[FAKE_DEV_MAX];  /* default streams, under fake_hang_mu */
static int fake_sdrained[FAKE_DEV_MAX]; /* the ranks' streams, the same */

static int fake_hang(const char *var, int *counts, int dev)
{
    const char *s = getenv(var);
    long from = 0; /* 0: dev is not in the list */
    for (const char *p = s ? s : ""; *p;) {
        char *end;
        long q = strtol(p, &end, 10), n = 1;
        if (end == p)
            break;
        if (*end == '@') {
            p = end + 1;
            n = strtol(p, &end, 10);
            if (end == p)
                break;
        }
        if (q == dev)
            from = n > 0 ? n : 1;
        p = *end ? end + 1 : end;
    }
    if (dev < 0 || dev >= FAKE_DEV_MAX)
        return from > 0;
    pthread_mutex_lock(&fake_hang_mu);
    int hang = from > 0 && counts[dev] >= from - 1;
    if (!hang)
        counts[dev]++;
    pthread_mutex_unlock(&fake_hang_mu);
    return hang;
}

static int fake_sync_hang(int dev)
{
    return fake_hang("FAKE_GPU_SYNC_HANG", fake_drained, dev);
}

/* A stream of the fakes: the device it was made on (fake_cur_get);
 * whether it carries signal polls (a poll stream: fake_poll_read), and
 * then whether one of them never completes. */
typedef struct FakeStream { int dev, poll, hung; } FakeStream;

static void *fake_stream_new(void)
{
    FakeStream *s = calloc(1, sizeof *s);
    if (s)
        s->dev = fake_cur_get();
    fake_live_add(s);
    return s;
}

static void fake_stream_free(void *s)
{
    fake_live_del(s);
    free(s);
}

/* Whether stream s (NULL: the default stream of the current device) is
 * to be answered not drained by $FAKE_GPU_SYNC_HANG / _STREAM_HANG; a
 * poll stream only by $FAKE_GPU_POLL_HANG (its answers not counted for
 * _STREAM_HANG: their number depends on the timing). */
static int fake_stream_hang(void *s)
{
    if (!s)
        return fake_sync_hang(fake_cur_get());
    FakeStream *fs = s;
    if (__atomic_load_n(&fs->poll, __ATOMIC_ACQUIRE))
        return __atomic_load_n(&fs->hung, __ATOMIC_ACQUIRE);
    return fake_hang("FAKE_GPU_STREAM_HANG", fake_sdrained, fs->dev);
}

/* $FAKE_GPU_POLL_HANG ("D@N", fake_hang's syntax): from the N-th signal
 * poll on device D on (an asynchronous 8-byte read into a poll slot, or
 * a synchronous 8-byte read), the reads never complete: the poll stream
 * never drains again and nothing is copied; a synchronous read waits 30 s,
 * then fails. fake_poll_read(stream, dst, n) is called by each
 * asynchronous read from the device: 1, drop the copy. fake_poll_sync(n)
 * by each synchronous one: -1, fail it (after the 30 s). */
static int fake_polled[FAKE_DEV_MAX]; /* under fake_hang_mu */

/* (unused where the fake has no asynchronous copies, FAKE_NO_ASYNC_COPY) */
__attribute__((unused)) static int fake_poll_read(void *st, const void *dst, size_t n)
{
    FakeStream *s = st;
    if (!s || n != 8 || !fake_is_slot(dst))
        return 0;
    __atomic_store_n(&s->poll, 1, __ATOMIC_RELEASE);
    if (!__atomic_load_n(&s->hung, __ATOMIC_ACQUIRE) &&
        fake_hang("FAKE_GPU_POLL_HANG", fake_polled, s->dev))
        __atomic_store_n(&s->hung, 1, __ATOMIC_RELEASE);
    return __atomic_load_n(&s->hung, __ATOMIC_ACQUIRE);
}

static int fake_poll_sync(size_t n)
{
    if (n != 8 || !fake_hang("FAKE_GPU_POLL_HANG", fake_polled, fake_cur_get()))
        return 0;
    struct timespec ts = {30, 0};
    nanosleep(&ts, NULL);
    return -1;
}

/* $FAKE_GPU_SPIN_RANK ("1" or "1,3"): the stand-in kernel computes for
 * ever on those ranks (the fake holds its stream: it never drains, and
 * the kernel looks at nothing, not even the abort flag) and does nothing
 * on the others. -1 when unset, else 1 for such a rank, 0 for another. */
static int fake_spin_rank(const FakeRankCtx *rcp)
{
    FakeRankCtx rc;
    memcpy(&rc, rcp, sizeof rc);
    return fake_in_list("FAKE_GPU_SPIN_RANK", rc.rank);
}

/* name is the kernel's symbol, blk_k_NAME (backends/backend.h) */
static int fake_is_wait_kernel(const char *name)
{
    const char *w = getenv("FAKE_GPU_WAIT_KERNEL");
    return w && *w && !strncmp(name, "blk_k_", 6) && !strcmp(w, name + 6);
}

static int fake_waiting; /* ranks inside fake_wait_kernel's wait (atomic) */

static void fake_wait_kernel(const FakeRankCtx *rcp, double ticks_per_ms)
{
    FakeRankCtx rc;
    memcpy(&rc, rcp, sizeof rc);
    FakeFail *fr = (FakeFail *)(uintptr_t)rc.fail;
    const char *fs = getenv("FAKE_GPU_FAIL_RANK");
    int fail_rank = fs && *fs ? atoi(fs) : 1;
    if (rc.rank == fail_rank) {
        for (int i = 0; i < 50000 && __atomic_load_n(&fake_waiting, __ATOMIC_ACQUIRE) <
                                         rc.world - 1; i++) {
            struct timespec nap = {0, 100000}; /* 0.1 ms, 5 s in all */
            nanosleep(&nap, NULL);
        }
        if (fr)
            __atomic_store_n(&fr->asserted, 1, __ATOMIC_RELEASE);
        return;
    }
    const volatile int *af = (const volatile int *)(uintptr_t)rc.abort_flag;
    double limit = rc.timeout > 0 ? (double)rc.timeout / ticks_per_ms : 5000;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    __atomic_add_fetch(&fake_waiting, 1, __ATOMIC_ACQ_REL);
    int aborted = 0;
    for (long i = 0;; i++) {
        /* The host sets the flag with an atomic store (ranks.c); this
         * thread stands in for the device, so it reads it atomically. */
        if (af && __atomic_load_n(af, __ATOMIC_ACQUIRE)) {
            aborted = 1;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) * 1e3 +
                (double)(t.tv_nsec - t0.tv_nsec) * 1e-6 > limit)
            break;
        struct timespec nap = {0, 100000}; /* 0.1 ms */
        nanosleep(&nap, NULL);
    }
    if (fr) {
        fr->aborted = aborted;
        fr->param = 0;
        fr->cell = 0;
        fr->expected = 1;
        fr->seen = 0;
        __atomic_store_n(&fr->failed, 1, __ATOMIC_RELEASE);
    }
}

#endif
