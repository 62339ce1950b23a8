/* signal.c — notify/wait on u64 signal cells for CPU kernels. The generated
 * code calls these helpers (registered with the JIT as absolute symbols) for
 * every cell of a notify(...) / wait(...) view. A wait spins, then yields,
 * then sleeps briefly, and gives up after the launch's timeout or when the
 * run is aborted; the first failure is recorded in the BkLaunchCtx so that
 * the runtime can name the rank, the signal and the values. */
#include "cpu.h"

#include <sched.h>
#include <time.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool satisfied(uint64_t seen, int32_t cmp, uint64_t v)
{
    return cmp == WAIT_EQ ? seen == v : seen >= v;
}

void cpu_notify_cell(uint64_t *cell, int32_t op, uint64_t v)
{
    if (op == SIG_ADD)
        __atomic_fetch_add(cell, v, __ATOMIC_RELEASE);
    else
        __atomic_store_n(cell, v, __ATOMIC_RELEASE);
}

int32_t cpu_wait_cell(BkLaunchCtx *ctx, uint64_t *cell, int32_t cmp,
                      uint64_t v, int64_t param, int64_t index)
{
    uint64_t seen = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
    if (satisfied(seen, cmp, v))
        return 0;
    int64_t limit = ctx->timeout_ms > 0 ? ctx->timeout_ms : 5000;
    int64_t start = now_ms();
    int aborted = 0;
    for (unsigned long i = 1;; i++) {
        if (__atomic_load_n(&ctx->failed, __ATOMIC_ACQUIRE))
            return 1;
        seen = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
        if (satisfied(seen, cmp, v))
            return 0;
        if (i < 1000)
            continue;
        if (i < 2000) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
        if (ctx->abort_flag && *ctx->abort_flag) {
            aborted = 1;
            break;
        }
        if (now_ms() - start > limit)
            break;
    }
    int32_t zero = 0;
    if (__atomic_compare_exchange_n(&ctx->failed, &zero, 1, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        ctx->fail_param = param;
        ctx->fail_cell = index;
        ctx->fail_expected = v;
        ctx->fail_seen = seen;
        ctx->fail_aborted = aborted;
    }
    return 1;
}
