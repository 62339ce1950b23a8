/* shim.h — just enough CUDA to run the body of a generated kernel on the
 * CPU (tests/nvrtc/emu.sh): every thread of a block is a std::thread,
 * __syncthreads() a pthread barrier, dynamic shared memory one buffer per
 * block, blocks one after the other. __CUDA_ARCH__ stays undefined, so the
 * generated code takes its portable paths (FMA dot, cp.async as a plain
 * copy complete when issued). Good for indexing, ring-slot and barrier
 * logic; says nothing about real memory ordering or the tensor-core path. */
#ifndef BLKC_EMU_SHIM_H
#define BLKC_EMU_SHIM_H

#include <pthread.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __constant__
#define __launch_bounds__(n)
#define __forceinline__ inline
#define __shared__ static /* one block at a time: shared by its threads */

struct EmuDim { unsigned x, y, z; };
static thread_local EmuDim threadIdx;
static EmuDim blockIdx, gridDim, blockDim;
static pthread_barrier_t emu_bar;
static unsigned char *emu_smem;
#define __syncthreads() pthread_barrier_wait(&emu_bar)
#define BLK_DYNAMIC_SMEM(name) unsigned char *name = emu_smem

struct alignas(16) uint4 { unsigned x, y, z, w; };

template <class T, int R> struct BlkTensor {
    T *data;
    long long shape[R];
    long long stride[R];
};

struct blk_f16 { unsigned short x; };
static inline float blk_f16_to_f32(blk_f16 h)
{
    unsigned s = (h.x >> 15) & 1, e = (h.x >> 10) & 31, m = h.x & 1023;
    float v = e == 0 ? std::ldexp((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : std::ldexp((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}
static inline blk_f16 blk_f32_to_f16(float f)
{
    /* round to nearest even through double: exact for the test values */
    blk_f16 r;
    unsigned s = std::signbit(f) ? 0x8000u : 0;
    double a = std::fabs((double)f);
    if (std::isnan(f)) { r.x = 0x7e00; return r; }
    if (a >= 65520.0) { r.x = (unsigned short)(s | 0x7c00); return r; }
    int e;
    std::frexp(a, &e);              /* a = f * 2^e, f in [0.5, 1) */
    int ex = e - 1;                 /* a in [2^ex, 2^(ex+1)) */
    if (ex < -14) ex = -14;         /* subnormal spacing 2^-24 */
    double q = std::nearbyint(a / std::ldexp(1.0, ex - 10)); /* RNE */
    unsigned bits;
    if (q >= 2048) { q /= 2; ex++; }
    if (q < 1024) bits = (unsigned)q; /* subnormal */
    else bits = (unsigned)((ex + 15) << 10) | ((unsigned)q - 1024);
    r.x = (unsigned short)(s | bits);
    return r;
}

static inline float __int_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
/* swizzled shared tiles: the common prelude's blk_swz (gpu_prelude.c) */
static inline int blk_swz(int e, int C, int W, int rpl, int pm)
{
    const int row = e / C, ch = e % C / W;
    return row * C + (ch ^ (row / rpl & pm)) * W + e % W;
}
static inline float blk_max(float a, float b) { return a != a || b != b ? a + b : (a > b ? a : b); }
static inline float blk_min(float a, float b) { return a != a || b != b ? a + b : (a < b ? a : b); }

/* warp shuffles: the 32 lanes of a warp meet at the warp's barrier */
struct EmuWarp { pthread_barrier_t bar; unsigned long long slot[32]; };
static EmuWarp emu_warps[32];
template <class T> static T emu_shfl_xor(T v, int m)
{
    unsigned t = threadIdx.x;
    EmuWarp *w = &emu_warps[t / 32];
    memcpy(&w->slot[t % 32], &v, sizeof v);
    pthread_barrier_wait(&w->bar);
    T r;
    memcpy(&r, &w->slot[(t % 32) ^ (unsigned)m], sizeof r);
    pthread_barrier_wait(&w->bar);
    return r;
}
#define BLK_SHFL_XOR(v, m) emu_shfl_xor((v), (m))

static inline void blk_cp_async16(void *dst, const void *src, int nbytes)
{
    for (int i = 0; i < 16; i++)
        ((unsigned char *)dst)[i] = i < nbytes ? ((const unsigned char *)src)[i] : 0;
}
static inline void blk_cp_commit(void) {}
template <int N> static inline void blk_cp_wait(void) {}

/* Runs f on a gx x gy grid of nt-thread blocks with smem bytes of dynamic
 * shared memory (filled with garbage first, as a GPU's would be). */
template <class F> static void emu_launch(F f, unsigned gx, unsigned gy, int nt,
                                          long long smem)
{
    emu_smem = (unsigned char *)aligned_alloc(16, (size_t)((smem + 15) & ~15LL) + 16);
    gridDim = {gx, gy, 1};
    blockDim = {(unsigned)nt, 1, 1};
    pthread_barrier_init(&emu_bar, NULL, (unsigned)nt);
    for (int w = 0; w < nt / 32; w++)
        pthread_barrier_init(&emu_warps[w].bar, NULL, 32);
    for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) {
            memset(emu_smem, 0x7f, (size_t)smem);
            blockIdx = {bx, by, 0};
            std::vector<std::thread> th;
            for (int t = 0; t < nt; t++)
                th.emplace_back([=] { threadIdx = {(unsigned)t, 0, 0}; f(); });
            for (auto &x : th)
                x.join();
        }
    pthread_barrier_destroy(&emu_bar);
    for (int w = 0; w < nt / 32; w++)
        pthread_barrier_destroy(&emu_warps[w].bar);
    free(emu_smem);
}

#endif
