/* cli_stats.c — `blkc run --stats` on an emulated device (cuda-emu,
 * hip-emu): the counts of the run's kernel (runtime/gpu_emu.c) and the
 * bound they imply on a named GPU, from the figures of gpu_table (sources
 * there and in docs/backends.md, "Emulated devices"): per unit, time =
 * count / rate; the slowest unit limits; with one block per SM (CU) in
 * waves, the limiting unit runs at blocks / (waves * SMs) of its peak.
 * Units: the tensor cores (FLOP of the matrix instructions at the rate of
 * the instruction blkc emits), shared memory (128-byte wavefronts; on
 * cuda-emu as sm_90a these include wgmma's operand reads, a core matrix
 * a wavefront when conflict-free: runtime/emu/blk_emu_wgmma.h), L2
 * (every global 32-byte sector a warp instruction touches) and DRAM (the
 * distinct sectors of the launch: its compulsory traffic, the L2 holding
 * the reuse, as grouped program ids aim for; when the distinct bytes
 * exceed the L2 this is optimistic and the line says so). The TMA kernels'
 * tensor maps are counted over the whole run (every --bench launch):
 * encoded, or taken from the module's cache (runtime/gpu.h). */
#include "cli.h"
#include "../runtime/gpu.h"

#include <stdio.h>

/* name, SMs/CUs, matrix f16 FLOP/s of the instruction emitted, shared-
 * memory wavefronts/s (128 bytes each: SMs x clock), L2 bytes/s, DRAM
 * bytes/s, L2 bytes.
 * H200 (H100's SM array, 132 SMs at 1.83 GHz boost; HBM3e 4.8 TB/s): the
 * dense f16 peak of 989.4 TFLOP/s needs wgmma; blkc emits the sm_80
 * mma.sync, with which Hopper "tops out at around 63% of its peak"
 * (Spector et al., "GPUs Go Brrr", hazyresearch.stanford.edu/blog/
 * 2024-05-12-tk), so 0.63 x 989.4; wgmma.mma_async (cuda-emu as sm_90a)
 * at the full 989.4. L2: "50 MB of L2 cache with 12 TB/s
 * of bandwidth" (same post, its H100 SXM list, rechecked this round; it
 * gives shared memory + L1 "about 33 TB/s", against which 132 x 1.83 GHz
 * x 128 B = 30.9 TB/s here is the conservative side).
 * MI250X (2 GCDs, 220 CUs at 1.7 GHz, HBM2e 3.2768 TB/s): MFMA is the
 * native matrix instruction, dense f16 383 TFLOP/s; L2 per GCD 16
 * channels x 128 B per clock, 8 MB (AMD CDNA2 white paper). */
#define GPU_TABLE(X)                                                                    \
    X("H200", 132, 0.63 * 989.4e12, 989.4e12, 132 * 1.83e9, 12.0e12, 4.8e12, 50e6)      \
    X("MI250X", 220, 383.0e12, 383.0e12, 220 * 1.7e9, 2 * 16 * 128 * 1.7e9, 3.2768e12,   \
      2 * 8e6)

typedef struct GpuFig {
    const char *name;
    int sms;
    double mma_flops, wgmma_flops, smem_wf, l2, dram, l2_bytes;
} GpuFig;

static const GpuFig gpu_table[] = {
#define ROW(n, s, f, g, w, l, d, c) {n, s, f, g, w, l, d, c},
    GPU_TABLE(ROW)
#undef ROW
};

#define NUNIT 4
static const char *const unit_name[NUNIT] = {"tensor cores", "shared memory", "L2", "DRAM"};

/* A sampled launch (--stats-sample): each count times grid / run; the
 * distinct sectors, shared between blocks, at most the sectors the tensor
 * arguments span (exact when the launch touches them all). */
static void scale_sample(RtGpuEmuStats *s)
{
    double f = (double)s->grid_blocks / (double)s->blocks;
    long long *c[] = {&s->mma, &s->mma_flops, &s->ldmatrix, &s->smem_wavefronts,
                      &s->smem_requests, &s->gmem_sectors, &s->gmem_requests,
                      &s->barriers, &s->shuffles, &s->cp_async, &s->wgmma, &s->wgmma_flops, &s->tma};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        *c[i] = (long long)((double)*c[i] * f + 0.5);
    long long u = (long long)((double)s->gmem_unique * f + 0.5);
    s->gmem_unique = s->gmem_extent > 0 && u > s->gmem_extent ? s->gmem_extent : u;
    s->blocks = s->grid_blocks;
}

void cli_print_emu_stats(const char *kernel)
{
    RtGpuEmuStats s;
    rt_gpu_emu_last_stats(&s);
    if (s.blocks > 0 && s.grid_blocks > s.blocks) {
        printf("%s: stats: sampled %lld of %lld blocks, counts scaled by %.4g "
               "(distinct sectors capped at the arguments' %lld); results not "
               "checked: the blocks left out wrote nothing\n", kernel, s.blocks,
               s.grid_blocks, (double)s.grid_blocks / (double)s.blocks, s.gmem_extent);
        scale_sample(&s);
    }
    printf("%s: stats: %lld blocks of %lld threads\n", kernel, s.blocks,
           s.blocks ? s.threads / s.blocks : 0);
    long long pb, pt; /* a persistent kernel (gpu_persist.c): tiles per block */
    rt_gpu_persist_last(&pb, &pt);
    if (pb > 0)
        printf("%s: stats: persistent: %lld tiles (programs) on %lld blocks, %lld to %lld "
               "per block\n", kernel, pt, pb, pt / pb, (pt + pb - 1) / pb);
    if (s.wgmma) /* warpgroup instructions among them */
        printf("%s: stats: tensor-core instructions %lld (%lld FLOP), of them wgmma.mma_async "
               "%lld (%lld FLOP), ldmatrix %lld\n", kernel, s.mma, s.mma_flops, s.wgmma,
               s.wgmma_flops, s.ldmatrix);
    else
        printf("%s: stats: tensor-core instructions %lld (%lld FLOP), ldmatrix %lld\n",
               kernel, s.mma, s.mma_flops, s.ldmatrix);
    printf("%s: stats: shared-memory wavefronts %lld (in %lld requests), global "
           "32-byte sectors %lld (in %lld requests), %lld distinct\n", kernel,
           s.smem_wavefronts, s.smem_requests, s.gmem_sectors, s.gmem_requests,
           s.gmem_unique);
    printf("%s: stats: barriers %lld, shuffles/votes %lld, cp.async %lld", kernel,
           s.barriers, s.shuffles, s.cp_async);
    if (s.tma) /* cuda-emu as sm_90a */
        printf(", TMA boxes %lld", s.tma);
    printf("\n");
    long long enc, cached; /* of the whole run (--bench: every launch) */
    rt_gpu_tmap_counts(&enc, &cached);
    if (enc || cached)
        printf("%s: stats: tensor maps %lld encoded, %lld from the cache\n", kernel, enc,
               cached);
    for (size_t i = 0; i < sizeof gpu_table / sizeof *gpu_table; i++) {
        const GpuFig *g = &gpu_table[i];
        double t[NUNIT] = {(double)(s.mma_flops - s.wgmma_flops) / g->mma_flops +
                               (double)s.wgmma_flops / g->wgmma_flops,
                           (double)s.smem_wavefronts / g->smem_wf,
                           (double)s.gmem_sectors * 32.0 / g->l2,
                           (double)s.gmem_unique * 32.0 / g->dram};
        int lim = 0;
        for (int u = 1; u < NUNIT; u++)
            if (t[u] > t[lim])
                lim = u;
        /* a persistent launch runs min(tiles, SMs) blocks on that GPU,
         * not the emulated launch's (BLKC_EMU_SMS): its tiles fill the
         * SMs as the blocks of a block per program would */
        const long long units = pb > 0 ? pt : s.blocks;
        long long waves = (units + g->sms - 1) / g->sms;
        double frac = waves ? (double)units / (double)(waves * g->sms) : 0;
        if (t[lim] <= 0) {
            printf("%s: bound on %s: no counted work\n", kernel, g->name);
            continue;
        }
        printf("%s: bound on %s: tensor cores %.3g us, shared memory %.3g us, L2 %.3g us, "
               "DRAM %.3g us; limited by %s: %.3g us, %.0f%% of its peak (%lld %s%s "
               "on %d SMs)%s\n", kernel, g->name, t[0] * 1e6, t[1] * 1e6, t[2] * 1e6,
               t[3] * 1e6, unit_name[lim], t[lim] / frac * 1e6, frac * 100, units,
               pb > 0 ? "persistent tile" : "block", units == 1 ? "" : "s", g->sms,
               (double)s.gmem_unique * 32.0 > g->l2_bytes
                   ? "; the data exceed the L2: DRAM optimistic" : "");
    }
}
