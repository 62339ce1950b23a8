/* cli_stats.c — `blkc run --stats` on an emulated device (cuda-emu,
 * hip-emu): the counts of the run's kernel (runtime/gpu_emu.c) and the
 * bound they imply on a named GPU, from the figures of gpu_table (sources
 * in docs/backends.md, "Emulated devices"): per unit, time = count / rate;
 * the slowest unit limits; with one block per SM (CU) in waves, the
 * limiting unit runs at blocks / (waves * SMs) of its peak. */
#include "cli.h"
#include "../runtime/gpu.h"

#include <stdio.h>

/* name, SMs/CUs, matrix f16 FLOP/s (dense), shared-memory wavefronts/s
 * (128 bytes each: SMs x clock), DRAM bytes/s */
#define GPU_TABLE(X)                                             \
    X("H200", 132, 989.4e12, 132 * 1.83e9, 4.8e12)               \
    X("MI250X", 220, 383.0e12, 220 * 1.7e9, 3.2768e12)

typedef struct GpuFig {
    const char *name;
    int sms;
    double mma_flops, smem_wf, dram;
} GpuFig;

static const GpuFig gpu_table[] = {
#define ROW(n, s, f, w, d) {n, s, f, w, d},
    GPU_TABLE(ROW)
#undef ROW
};

void cli_print_emu_stats(const char *kernel)
{
    RtGpuEmuStats s;
    rt_gpu_emu_last_stats(&s);
    printf("%s: stats: %lld blocks of %lld threads\n", kernel, s.blocks,
           s.blocks ? s.threads / s.blocks : 0);
    printf("%s: stats: tensor-core instructions %lld (%lld FLOP), ldmatrix %lld\n",
           kernel, s.mma, s.mma_flops, s.ldmatrix);
    printf("%s: stats: shared-memory wavefronts %lld (in %lld requests), global "
           "32-byte sectors %lld (in %lld requests)\n", kernel, s.smem_wavefronts,
           s.smem_requests, s.gmem_sectors, s.gmem_requests);
    printf("%s: stats: barriers %lld, shuffles/votes %lld, cp.async %lld\n", kernel,
           s.barriers, s.shuffles, s.cp_async);
    for (size_t i = 0; i < sizeof gpu_table / sizeof *gpu_table; i++) {
        const GpuFig *g = &gpu_table[i];
        const char *unit[3] = {"tensor cores", "shared memory", "DRAM"};
        double t[3] = {(double)s.mma_flops / g->mma_flops,
                       (double)s.smem_wavefronts / g->smem_wf,
                       (double)s.gmem_sectors * 32.0 / g->dram};
        int lim = 0;
        for (int u = 1; u < 3; u++)
            if (t[u] > t[lim])
                lim = u;
        long long waves = (s.blocks + g->sms - 1) / g->sms;
        double frac = waves ? (double)s.blocks / (double)(waves * g->sms) : 0;
        if (t[lim] <= 0) {
            printf("%s: bound on %s: no counted work\n", kernel, g->name);
            continue;
        }
        printf("%s: bound on %s: tensor cores %.3g us, shared memory %.3g us, DRAM "
               "%.3g us; limited by %s: %.3g us, %.0f%% of its peak (%lld block%s "
               "on %d SMs)\n", kernel, g->name, t[0] * 1e6, t[1] * 1e6, t[2] * 1e6,
               unit[lim], t[lim] / frac * 1e6, frac * 100, s.blocks,
               s.blocks == 1 ? "" : "s", g->sms);
    }
}
