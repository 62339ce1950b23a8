/* api_behind.c — a server that survives a rank left behind (issue 14): a
 * run on 2 local ranks (blkc_kernel_run_ranks) whose rank 1 computes past
 * the end of the run's deadline is left behind; the caller then destroys
 * the module and its context at once, as a server would. The module is
 * held by the run (deferred free: its code still runs, a device function's
 * plan is still read), while every other module compiled and freed after it
 * is freed at once (jc_code_live: the JIT code objects alive stays flat).
 * When the rank returns, its world, the module, the unit and the code go
 * too (jc_code_live back to where it started; under ASan, no leak and no
 * use after free). Twice: a kernel entry, and a device function that
 * launches the kernel on rank 1.
 *
 * Rank 1 computes n steps, n calibrated on one rank to take ~4 s (left
 * behind at ~1.5 s: 300 ms end-of-run deadline, then 200 ms + 1 s of
 * grace); a rank that returns in time anyway is retried with 4x n (at most
 * 3 tries). Every wait is bounded (60 s). Internal: links blkc_internal
 * for jc_code_live and rt_ranks_left_behind. */
#include "api/api_test.h"
#include "compiler/cache.h"
#include "runtime/ranks.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *spin_src =
    "kernel spin_last(x: f32[16], n: i64) grid(1) {\n"
    "    var a = zeros(f32, 16);\n"
    "    if rank() == world() - 1 {\n"
    "        for i in 0 .. n {\n"
    "            a = a * 0.999 + 1.0;\n"
    "        }\n"
    "    }\n"
    "    x[0 +: 16] = a;\n"
    "}\n"
    "device dspin(x: f32[16], n: i64) {\n"
    "    launch spin_last(x, n);\n"
    "}\n";

/* rank r's x: static, the rank left behind writes it after the call */
static float xs[2][16];
static int64_t shp[1] = {16};
static DLTensor tx[2];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void set_args(blkc_arg *a, int nranks, int64_t n)
{
    for (int r = 0; r < nranks; r++) {
        memset(&tx[r], 0, sizeof tx[r]);
        tx[r].data = xs[r];
        tx[r].device.device_type = kDLCPU;
        tx[r].ndim = 1;
        tx[r].dtype.code = kDLFloat;
        tx[r].dtype.bits = 32;
        tx[r].dtype.lanes = 1;
        tx[r].shape = shp;
        a[r * 2].kind = BLKC_ARG_TENSOR;
        a[r * 2].v.tensor = &tx[r];
        a[r * 2 + 1].kind = BLKC_ARG_INT;
        a[r * 2 + 1].v.i = n;
    }
}

/* Steps that take rank 1 about `secs` (one rank, timed). */
static int64_t calibrate(blkc_kernel *k, double secs)
{
    blkc_arg a[2];
    int64_t n = 1 << 20;
    for (int t = 0; t < 12; t++, n *= 4) {
        set_args(a, 1, n);
        double t0 = now_s();
        CHECK(blkc_kernel_run_ranks(k, 1, a, 2, NULL) == BLKC_OK);
        double dt = now_s() - t0;
        if (dt > 0.05)
            return (int64_t)((double)n * secs / dt);
    }
    return n;
}

static void scenario(const char *entry, int64_t base)
{
    blkc_context *ctx = NULL;
    blkc_module *m = NULL;
    blkc_kernel *k = NULL;
    CHECK(blkc_context_create("cpu", &ctx) == BLKC_OK);
    CHECK(blkc_module_create(ctx, spin_src, strlen(spin_src), NULL, &m) == BLKC_OK);
    CHECK(m && blkc_module_get_kernel(m, entry, &k) == BLKC_OK);
    if (!k)
        return;
    int64_t n = calibrate(k, 4.0);
    int64_t live_a = jc_code_live();
    int behind0 = rt_ranks_left_behind(), tries = 0;
    blkc_arg a[4];
    while (rt_ranks_left_behind() == behind0 && tries++ < 3) {
        set_args(a, 2, n);
        EXPECT_MSG(blkc_kernel_run_ranks(k, 2, a, 2, NULL), BLKC_ERR_RUNTIME,
                   "rank 0: the end of the run timed out after 300 ms: rank 0 "
                   "waits, rank 1 did not arrive");
        n *= 4;
    }
    CHECK(rt_ranks_left_behind() == behind0 + 1);
    double t_behind = now_s();
    /* the server goes on: the module and context go at once */
    blkc_module_destroy(m);
    blkc_context_destroy(ctx);
    int64_t kept = jc_code_live();
    CHECK(kept == live_a);
    /* other modules, compiled, run and freed meanwhile, are freed */
    int64_t most = 0, most_after = base;
    int made = 0;
    for (int i = 0; i < 40 && now_s() - t_behind < 1.0; i++, made++) {
        blkc_context *c2 = NULL;
        blkc_module *m2 = NULL;
        blkc_kernel *k2 = NULL;
        CHECK(blkc_context_create("cpu", &c2) == BLKC_OK);
        CHECK(blkc_module_create(c2, API_TWICE_SRC, strlen(API_TWICE_SRC), NULL,
                                 &m2) == BLKC_OK);
        CHECK(m2 && blkc_module_get_kernel(m2, "twice", &k2) == BLKC_OK);
        float X[64], Y[64];
        for (int j = 0; j < 64; j++)
            X[j] = (float)j;
        int64_t s64[1] = {64};
        DLTensor dx = {.data = X, .device = {kDLCPU, 0}, .ndim = 1,
                       .dtype = {kDLFloat, 32, 1}, .shape = s64};
        DLTensor dy = dx;
        dy.data = Y;
        blkc_arg la[2] = {{.kind = BLKC_ARG_TENSOR, .v.tensor = &dx},
                          {.kind = BLKC_ARG_TENSOR, .v.tensor = &dy}};
        if (k2) {
            CHECK(blkc_kernel_launch(k2, la, 2, NULL) == BLKC_OK);
            CHECK(Y[63] == 127.0f);
        }
        int64_t live = jc_code_live();
        most = live > most ? live : most;
        blkc_module_destroy(m2);
        blkc_context_destroy(c2);
        /* at most the module left behind: fewer once the rank returned
         * (it may, before this loop ends, on a slow machine) */
        int64_t after = jc_code_live();
        CHECK(after <= kept && after >= base);
        most_after = after > most_after ? after : most_after;
    }
    CHECK(made >= 1);
    /* the rank returns: its world, the module and its code are freed */
    double t0 = now_s();
    while (jc_code_live() != base && now_s() - t0 < 60.0)
        usleep(10000);
    CHECK(jc_code_live() == base);
    CHECK(xs[1][0] > 900.0f); /* rank 1 computed to the end */
    printf("api_behind %s: JIT code objects alive: %lld before, %lld with the "
           "module left behind (destroyed), at most %lld while %d other "
           "modules were made and freed, at most %lld after each, %lld once "
           "the rank returned %.1f s later (n %lld)\n", entry, (long long)base,
           (long long)kept, (long long)most, made, (long long)most_after,
           (long long)jc_code_live(), now_s() - t_behind, (long long)(n / 4));
}

int main(void)
{
    setenv("BLKC_COLL_TIMEOUT_MS", "300", 1);
    setenv("BLKC_WAIT_TIMEOUT_MS", "200", 1);
    int64_t base = jc_code_live();
    scenario("spin_last", base);
    scenario("dspin", base);
    printf("api_behind: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
