/* blk_emu.h - the emulated GPU devices cuda-emu and hip-emu: just enough of
 * the CUDA / HIP device environment to compile the CUDA C / HIP C that blkc
 * generates with the host C++ compiler and run it on the CPU, each GPU
 * thread a fiber on the launching host thread, with the GPU code paths
 * (tensor cores, ldmatrix, cp.async, shuffles, atomics) emulated lane by
 * lane from the vendors' instruction specifications. runtime/gpu_emu.c compiles every module with
 *   -include blk_emu.h -DBLK_EMU=1 -D__CUDA_ARCH__=800      (cuda-emu)
 *   ... -D__CUDA_ARCH__=900 -D__CUDA_ARCH_FEAT_SM90_ALL=1      (cuda-emu, BLKC_EMU_ARCH=sm_90a)
 *   -include blk_emu.h -DBLK_EMU=1 -DBLK_EMU_HIP=1 -D__gfx90a__=1 (hip-emu)
 * and the dialect preludes (backends/cuda/cuda.c, backends/hip/hip.c) leave
 * out their inline asm / builtin definitions under BLK_EMU.
 *
 * The wrappers emulated here, keyed on their names (never on the shape of
 * the emitter's code), with the specification section each follows:
 *   CUDA (PTX ISA 8.x, "Warp Level Matrix Multiply-Accumulate Instructions")
 *     blk_ldmatrix_x1/_x2/_x4(unsigned r[], const void *p)  ldmatrix.sync.aligned.m8n8.xN.shared.b16
 *     blk_ldmatrix_x1/_x2/_x4_trans                           ... .trans ("Warp-level matrix load instruction: ldmatrix")
 *     blk_mma_f16(float c[4], const unsigned a[4], const unsigned b[2])   mma.m16n8k16 .row.col f32.f16.f16.f32
 *     blk_mma_bf16(...)                                                   mma.m16n8k16 .row.col f32.bf16.bf16.f32
 *                                     ("Matrix Fragments for mma.m16n8k16 with floating point type")
 *     blk_mma_tf32(float c[4], const unsigned a[4], const unsigned b[2])  mma.m16n8k8 .row.col f32.tf32.tf32.f32
 *                                     ("Matrix Fragments for mma.m16n8k8")
 *     blk_mma_s8(int c[4], const unsigned a[4], const unsigned b[2])      mma.m16n8k32 .row.col s32.s8.s8.s32
 *                                     ("Matrix Fragments for mma.m16n8k32")
 *     blk_tf32_split(float x, unsigned &hi, unsigned &lo)                 cvt.rna.tf32.f32
 *   CUDA sm_90a (PTX ISA 9.7.15, "Asynchronous Warpgroup Level Matrix ..."; blk_emu_wgmma.h)
 *     blk_wgmma_m64n<N>k16_f32_bf16/_f16<TA, TB>(float d[N/2], a-desc, b-desc, scale-d)
 *                                     wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 / .f16.f16
 *     blk_wgmma_fence(), blk_wgmma_commit(), blk_wgmma_wait<N>()  wgmma.fence / commit_group / wait_group
 *     blk_smem_addr(p) (cvta.to.shared), blk_fence_proxy_async() (fence.proxy.async.shared::cta)
 *   CUDA sm_90 tensor memory access (PTX ISA "mbarrier", "cp.async.bulk.tensor"; blk_emu_tma.h)
 *     BlkTensorMap (CUtensorMap), blk_emu_tmap_encode(...)     cuTensorMapEncodeTiled (driver API)
 *     blk_mbar_init(bar, count), blk_mbar_arrive(bar), blk_mbar_arrive_expect_tx(bar, bytes),
 *     blk_mbar_expect_tx(bar, bytes), blk_mbar_try_wait_parity / blk_mbar_wait_parity(bar, parity)
 *                                     mbarrier.init / arrive / arrive.expect_tx / expect_tx / try_wait.parity
 *     blk_tma_load_1d/_2d/_3d(dst, map, c..., bar)  cp.async.bulk.tensor.Nd.shared::cluster.global.tile
 *                                                   .mbarrier::complete_tx::bytes
 *     blk_tma_store_1d/_2d/_3d(map, c..., src)      cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group
 *     blk_bulk_commit(), blk_bulk_wait<N>(), blk_bulk_wait_read<N>()
 *                                     cp.async.bulk.commit_group, cp.async.bulk.wait_group[.read] N
 *     blk_max_nan_f32(a, b), blk_min_nan_f32(a, b)                        max.NaN.f32, min.NaN.f32
 *     blk_ex2_ftz_f32(x)                                                  ex2.approx.ftz.f32
 *     blk_cp_async16(dst, src, nbytes), blk_cp_commit(), blk_cp_wait<N>() cp.async.cg.shared.global 16 (src-size),
 *                                     cp.async.commit_group, cp.async.wait_group N ("Data Movement: cp.async")
 *     blk_ticks (%globaltimer), blk_sig_load/_set/_add (ld.acquire / st.release / red.release .sys)
 *     __shfl_sync/_xor/_up/_down (with width), __ballot_sync/__any_sync/__all_sync, __syncwarp,
 *     __syncthreads, atomic*, __threadfence*, __nanosleep, clock64, __half / __nv_bfloat16
 *   HIP (AMD "CDNA2 Instruction Set Architecture", section 7 "Matrix Arithmetic Instructions",
 *        and the AMD matrix instruction calculator's register layouts)
 *     blk_mfma_16x16x16_f16(blk_half4 a, blk_half4 b, blk_float4 c)     v_mfma_f32_16x16x16f16
 *     blk_mfma_16x16x16_bf16(blk_short4 a, blk_short4 b, blk_float4 c)  v_mfma_f32_16x16x16bf16_1k
 *     blk_mfma_16x16x4_f32(float a, float b, blk_float4 c)              v_mfma_f32_16x16x4f32
 *     blk_mfma_32x32x8_f16(blk_half4, blk_half4, blk_float16)           v_mfma_f32_32x32x8f16
 *     blk_mfma_32x32x8_bf16(blk_short4, blk_short4, blk_float16)        v_mfma_f32_32x32x8bf16_1k
 *     blk_mfma_32x32x2_f32(float, float, blk_float16)                   v_mfma_f32_32x32x2f32
 *     blk_mfma_16x16x16_i8(int a, int b, blk_int4 c)                    v_mfma_i32_16x16x16i8
 *     __shfl/_xor/_up/_down (width 64), __ballot/__any/__all, __syncthreads, atomics, clock64
 *
 * Collectives: each lane deposits its operands in its warp's exchange area,
 * meets the other lanes at the warp barrier, computes its own output
 * fragment from the specification's tables, and meets them again. Every
 * barrier (warp, block, the end of a block) is bounded: lanes arriving at
 * different collectives, threads waiting at __syncthreads while others
 * finished the block, or all threads blocked with no barrier complete are
 * reported ("barrier mismatch", "deadlock") instead of hanging. Cross-warp
 * shared-memory races (cp.async, ldmatrix / wgmma reads, the generated
 * BLK_SLD / BLK_SST) fail the launch (blk_emu_race.h). Not modelled: memory
 * ordering between threads (one host thread runs them all, switching only
 * where a thread waits), timing, warp divergence /
 * reconvergence order, and warps that are partial or have exited lanes
 * (collectives need every lane).
 *
 * A module is two translation units (BLK_EMU_SPLIT, below): the kernels,
 * and the emulator's runtime compiled once per header set and linked into
 * every module; nothing is exported from a module but its entry points. */
#ifndef BLK_EMU_H
#define BLK_EMU_H

/* few and light: every module loads them (as the precompiled header) */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <pthread.h>
#include <time.h>

#include <sys/mman.h>
#include <unistd.h>
/* the fiber switch: x86-64 assembly, else (or with -DBLK_EMU_UCONTEXT, as
 * tests/emu/emu.sh builds it once) ucontext */
#if defined(__x86_64__) && !defined(BLK_EMU_UCONTEXT)
#define BLK_EMU_FIBER_ASM 1
#else
#include <ucontext.h>
#endif

/* BLK_EMU_SPLIT: unset, one translation unit holds everything (the
 * emulator's own tests, and a module whose runtime object could not be
 * built); 1, a module's
 * kernels: the emulator's out-of-line functions (BLK_EMU_FN, their bodies
 * under `#if BLK_EMU_SPLIT != 1`) are declarations and its state
 * (BLK_EMU_VAR) is extern; 2, the runtime object runtime/gpu_emu.c
 * compiles once per header set and links into every module, which defines
 * both. Each module is one shared object with its own copy of both, as
 * when it was one unit: hidden, so modules never share state. A module
 * compiles in a fifth of the time: most of its code was the emulator. */
#if BLK_EMU_SPLIT == 1
#define BLK_EMU_FN __attribute__((visibility("hidden")))
#define BLK_EMU_VAR extern __attribute__((visibility("hidden")))
#elif BLK_EMU_SPLIT == 2
#define BLK_EMU_FN __attribute__((visibility("hidden")))
#define BLK_EMU_VAR __attribute__((visibility("hidden")))
#else
#define BLK_EMU_FN static inline
#define BLK_EMU_VAR static
#endif

/* the emulator itself is not instrumented for --stats (blk_emu_mem.h) */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((no_sanitize("thread"))), apply_to = function)
#endif

template <typename T, int R> struct BlkTensor; /* gpu_prelude.c defines it */

#ifdef BLK_EMU_HIP
#define BLK_EMU_WARP 64
#else
#define BLK_EMU_WARP 32
#endif

#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
/* blocks run one after another: one copy; in a section of their own, so
 * that the race check (blk_emu_race.h) knows their bytes as shared */
#define __shared__ static __attribute__((section("blk_emu_shared")))
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __grid_constant__ /* a kernel parameter (tensor maps) */

/* ------------------------------------------------------------ statistics */

/* Per launch (runtime/gpu_emu.c reads it: keep the layout in step with
 * RtEmuStats there). Counts are warp-level instructions. */
struct BlkEmuStats {
    long long mma;          /* mma.sync / v_mfma instructions */
    long long mma_flops;    /* 2*M*N*K per instruction */
    long long ldmatrix;     /* ldmatrix instructions */
    long long smem_wavefronts; /* shared-memory wavefronts (bank conflicts serialize) */
    long long smem_requests;   /* warp-wide shared accesses counted */
    long long gmem_sectors;    /* global 32-byte sectors */
    long long gmem_requests;   /* warp-wide global accesses counted */
    long long barriers;     /* __syncthreads per block, summed */
    long long shuffles;     /* warp shuffles / votes */
    long long cp_async;     /* cp.async (16 B) per thread */
    long long blocks, threads; /* blocks run (all, or the sample), threads of the grid */
    long long gmem_unique;     /* distinct global 32-byte sectors (DRAM if L2 holds the reuse) */
    long long grid_blocks;     /* blocks of the grid: blocks < grid_blocks when sampled */
    long long gmem_extent;     /* 32-byte sectors spanned by the tensor arguments */
    long long wgmma;           /* of mma: wgmma.mma_async (warpgroup instructions) */
    long long wgmma_flops;     /* of mma_flops: theirs */
    long long tma;             /* cp.async.bulk.tensor loads (boxes, blk_emu_tma.h) */
};

/* ------------------------------------------------------------ the machine */

struct blk_emu_dim3 { unsigned x, y, z; };

/* the vector types generated code copies through (128-bit loads/stores) */
#ifdef BLK_EMU_MEMSTATS
/* clang 15 / 16's ThreadSanitizer pass turns a 16-byte struct copy into a
 * plain call of memcpy, which blk_emu_mem.h's hooks never see (clang 17+
 * calls __tsan_memcpy); a uint4 is therefore copied as one 16-byte integer,
 * a __tsan_read16 and a __tsan_write16 with every clang. Instrumented like
 * the kernel code it is inlined into (outside the no_sanitize region). */
#pragma clang attribute pop
typedef unsigned __int128 __attribute__((may_alias)) blk_emu_u128;
struct alignas(16) uint4 {
    unsigned x, y, z, w;
    uint4() = default;
    uint4(const uint4 &o) { *(blk_emu_u128 *)this = *(const blk_emu_u128 *)&o; }
    uint4 &operator=(const uint4 &o)
    {
        *(blk_emu_u128 *)this = *(const blk_emu_u128 *)&o;
        return *this;
    }
};
#pragma clang attribute push(__attribute__((no_sanitize("thread"))), apply_to = function)
#else
struct alignas(16) uint4 { unsigned x, y, z, w; };
#endif
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(8) int2 { int x, y; };
struct alignas(8) float2 { float x, y; };

enum { BLK_EMU_TAG_NONE, BLK_EMU_TAG_SYNC, BLK_EMU_TAG_END, BLK_EMU_TAG_SHFL,
       BLK_EMU_TAG_VOTE, BLK_EMU_TAG_SYNCWARP, BLK_EMU_TAG_LDMATRIX, BLK_EMU_TAG_MMA,
       BLK_EMU_TAG_WGMMA, BLK_EMU_TAG_MBAR, BLK_EMU_TAG_NAMED, BLK_EMU_TAG_REGS };
static const char *const blk_emu_tag_name[] = {
    "?", "__syncthreads", "the end of the kernel", "a warp shuffle",
    "a warp vote", "__syncwarp", "ldmatrix", "mma/mfma", "a wgmma instruction",
    "an mbarrier wait", "a named barrier (bar.sync id, n)", "setmaxnreg"};

struct BlkEmuBar {
    int count = 0, tag = 0, width = 0;
    unsigned gen = 0;
};

struct alignas(16) BlkEmuSlot { unsigned char b[128]; };

struct BlkEmuWarp {
    BlkEmuBar bar;
    BlkEmuBar wgbar;               /* the warpgroup's (warps 4i only; blk_emu_wgmma.h) */
    BlkEmuSlot slot[BLK_EMU_WARP];
};

struct BlkEmuMachine {
    int nthreads = 0, nwarps = 0;
    /* threads not blocked at a barrier: a completed barrier adds its
     * waiters back, so 0 means all blocked for good */
    int running = 0;
    BlkEmuBar block;               /* __syncthreads and the end of a block */
    BlkEmuBar named[16];           /* bar.sync id, n: barriers 1..15 */
    BlkEmuWarp *warps = nullptr;
    int *where = nullptr;          /* per thread: the tag it waits at, 0 running */
    int *named_at = nullptr;       /* per thread: the named barrier it waits at */
    int *handoff = nullptr;        /* threads an mbarrier arrival released, to run */
    int nhandoff = 0;              /* next (blk_emu_schedule) */
    bool failed = false;
    char err[512] = "";
    unsigned char *smem = nullptr;
    long long smem_bytes = 0;
    BlkEmuStats st{};
};

BLK_EMU_VAR BlkEmuMachine *blk_emu_m;   /* the launch in progress (one at a time) */
#if BLK_EMU_SPLIT != 1 /* blk_emu_run's */
BLK_EMU_VAR pthread_mutex_t blk_emu_launch_mu = PTHREAD_MUTEX_INITIALIZER;
#endif
/* the running fiber's (blk_emu_resume sets them) */
BLK_EMU_VAR blk_emu_dim3 threadIdx, blockIdx;
BLK_EMU_VAR blk_emu_dim3 gridDim, blockDim;
BLK_EMU_VAR unsigned char *blk_emu_smem_base;

static inline int blk_emu_tid() { return (int)threadIdx.x; }
static inline int blk_emu_lane() { return (int)threadIdx.x % BLK_EMU_WARP; }
static inline BlkEmuWarp &blk_emu_warp() { return blk_emu_m->warps[threadIdx.x / BLK_EMU_WARP]; }

/* ------------------------------------------------------------ fibers */

/* Every GPU thread of a launch is a fiber on the launching host thread:
 * its own stack, run until it waits (a barrier, a warp collective, a
 * signal poll, __nanosleep), then the scheduler (blk_emu_run_block)
 * resumes the next thread that can go on, round robin. A switch saves
 * the callee-saved registers on the old stack and loads the new stack
 * pointer (x86-64: the System V ABI's rbx, rbp, r12-r15; elsewhere
 * ucontext). A thread that fails is abandoned where it stands, never
 * unwound: nothing the emulator or generated code holds at a wait
 * owns a resource. */
enum { BLK_EMU_STACK = 2 << 20 };  /* bytes per fiber, a guard page below */

struct BlkEmuFiber {
    void *sp;                      /* saved stack pointer (x86-64) */
    unsigned char *stack;          /* BLK_EMU_STACK bytes above a guard page */
    blk_emu_dim3 bid;
    bool done;
#if !defined(BLK_EMU_FIBER_ASM)
    ucontext_t uc;
#endif
};

BLK_EMU_VAR BlkEmuFiber *blk_emu_fibers; /* of the launch in progress, one per thread */
BLK_EMU_VAR BlkEmuFiber *blk_emu_cur;    /* running, or nullptr in the scheduler */
BLK_EMU_VAR void *blk_emu_sched_sp;
#if !defined(BLK_EMU_FIBER_ASM)
BLK_EMU_VAR ucontext_t blk_emu_sched_uc;
#endif

#if defined(BLK_EMU_FIBER_ASM)
extern "C" __attribute__((visibility("hidden"))) void blk_emu_swap(void **save_sp, void *to_sp);
#endif
#if defined(BLK_EMU_FIBER_ASM) && BLK_EMU_SPLIT != 1
#if BLK_EMU_SPLIT == 2 /* the module's kernels call it */
#define BLK_EMU_SWAP_LINK ".globl blk_emu_swap\n"
#else
#define BLK_EMU_SWAP_LINK ""
#endif
__asm__(".text\n"
        ".p2align 4\n"
        BLK_EMU_SWAP_LINK
        ".type blk_emu_swap,@function\n"
        ".hidden blk_emu_swap\n"
        "blk_emu_swap:\n"          /* rdi: where to save this rsp, rsi: the rsp to load */
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size blk_emu_swap, .-blk_emu_swap\n");
#endif

/* Give the host thread back to the scheduler. */
static inline void blk_emu_yield()
{
    BlkEmuFiber *f = blk_emu_cur;
#if defined(BLK_EMU_FIBER_ASM)
    blk_emu_swap(&f->sp, blk_emu_sched_sp);
#else
    swapcontext(&f->uc, &blk_emu_sched_uc);
#endif
}

static inline void blk_emu_mem_thread(int t); /* blk_emu_mem.h: whose accesses count (-1 none) */
BLK_EMU_FN void blk_emu_race_sync(unsigned mask); /* blk_emu_race.h: warps a barrier joined */

/* A wait that is not a barrier (a signal poll, __nanosleep): the other
 * threads run meanwhile; a failed launch ends the wait. */
[[noreturn]] BLK_EMU_FN void blk_emu_abandon();
static inline void blk_emu_pause();

/* The scheduler: run fiber t until it yields. */
static inline void blk_emu_resume(int t)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuFiber *f = &blk_emu_fibers[t];
    threadIdx = {(unsigned)t, 0, 0};
    blockIdx = f->bid;
    blk_emu_cur = f;
    blk_emu_mem_thread(t);
#if defined(BLK_EMU_FIBER_ASM)
    blk_emu_swap(&blk_emu_sched_sp, f->sp);
#else
    swapcontext(&blk_emu_sched_uc, &f->uc);
#endif
    blk_emu_cur = nullptr;
    blk_emu_mem_thread(-1); /* the scheduler's own accesses are not the kernel's */
}
#else
;
#endif

/* Record the first error; waiting threads see `failed` when resumed. */
BLK_EMU_FN void blk_emu_fail(BlkEmuMachine *m, const char *msg)
#if BLK_EMU_SPLIT != 1
{
    if (!m->failed) {
        snprintf(m->err, sizeof m->err, "%s", msg);
        m->failed = true;
    }
}
#else
;
#endif

/* The running thread stops for good (after an error). */
[[noreturn]] BLK_EMU_FN void blk_emu_abandon()
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    m->running--;
    blk_emu_fail(m, "aborted");
    blk_emu_cur->done = true;
    for (;;)
        blk_emu_yield();
}
#else
;
#endif

/* The running thread fails the launch with `what`, named by its block and
 * thread, and stops (the emulated instructions' misuse). */
[[noreturn]] BLK_EMU_FN void blk_emu_thread_fail(const char *what)
#if BLK_EMU_SPLIT != 1
{
    char msg[480];
    snprintf(msg, sizeof msg, "block (%u, %u, %u) thread %d: %s", blockIdx.x, blockIdx.y,
             blockIdx.z, blk_emu_tid(), what);
    blk_emu_fail(blk_emu_m, msg);
    blk_emu_abandon();
}
#else
;
#endif

static inline void blk_emu_pause()
{
    blk_emu_yield();
    if (blk_emu_m->failed)
        blk_emu_abandon();
}

/* What every blocked thread waits at, for a deadlock report. */
BLK_EMU_FN void blk_emu_deadlock(BlkEmuMachine *m)
#if BLK_EMU_SPLIT != 1
{
    char msg[512];
    int n = snprintf(msg, sizeof msg, "deadlock in block (%u, %u, %u): every thread waits and no "
                     "barrier can complete:", blockIdx.x, blockIdx.y, blockIdx.z);
    int shown = 0;
    for (int t = 0; t < m->nthreads && shown < 4 && n < (int)sizeof msg - 80; t++) {
        const int wt = m->where[t];
        if (wt == 0 || (t > 0 && wt == m->where[t - 1] && t % BLK_EMU_WARP))
            continue;
        n += snprintf(msg + n, sizeof msg - (size_t)n, "%s thread %d at %s", shown ? "," : "",
                      t, blk_emu_tag_name[wt]);
        shown++;
    }
    blk_emu_fail(m, msg);
}
#else
;
#endif

/* Wait at barrier b of `width` threads with tag. */
BLK_EMU_FN void blk_emu_bar_wait(BlkEmuBar &b, int width, int tag)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    if (m->failed)
        blk_emu_abandon();
    if (b.count == 0) {
        b.tag = tag;
        b.width = width;
    } else if (b.tag != tag) {
        char msg[256];
        snprintf(msg, sizeof msg, "barrier mismatch in block (%u, %u, %u): thread %d reached %s "
                 "while others wait at %s", blockIdx.x, blockIdx.y, blockIdx.z, blk_emu_tid(),
                 blk_emu_tag_name[tag], blk_emu_tag_name[b.tag]);
        blk_emu_fail(m, msg);
        blk_emu_abandon();
    }
    if (++b.count == width) {
        b.count = 0;
        b.gen++;
        m->running += width - 1; /* the waiters run again */
        if (tag == BLK_EMU_TAG_SYNC) /* __syncthreads orders the whole block */
            blk_emu_race_sync(m->nwarps >= 32 ? ~0u : (1u << m->nwarps) - 1);
        /* a warp's or warpgroup's threads: width consecutive ones */
        const int t0 = &b == &m->block ? 0 : (int)threadIdx.x / width * width;
        for (int t = t0; t < t0 + width; t++)
            m->where[t] = 0;
        return;
    }
    const unsigned gen = b.gen;
    m->where[blk_emu_tid()] = tag;
    if (--m->running == 0) {
        blk_emu_deadlock(m);
        blk_emu_abandon();
    }
    while (b.gen == gen && !m->failed)
        blk_emu_yield();   /* the scheduler resumes it once released */
    if (b.gen == gen)      /* failed */
        blk_emu_abandon();
}
#else
;
#endif

static inline void blk_emu_warp_bar(int tag)
{
    blk_emu_bar_wait(blk_emu_warp().bar, BLK_EMU_WARP, tag);
}

/* A warp collective: deposit `n` bytes, meet, f(slots) computes this lane's
 * result from every lane's deposit, meet again. */
template <class F> static inline void blk_emu_collective(int tag, const void *in, size_t n, F f)
{
    BlkEmuWarp &w = blk_emu_warp();
    memcpy(w.slot[blk_emu_lane()].b, in, n);
    blk_emu_warp_bar(tag);
    f(w.slot);
    blk_emu_warp_bar(tag);
}

static inline bool blk_emu_leader() { return blk_emu_lane() == 0; }
static inline void blk_emu_count(long long &c, long long v)
{
    __atomic_fetch_add(&c, v, __ATOMIC_RELAXED);
}

/* Shared-memory wavefronts of one warp-wide access: 32 banks of 4 bytes;
 * per 128-byte-wide pass, distinct words in one bank serialize (the
 * same word is a broadcast). addr[i] < 0: lane i inactive. */
BLK_EMU_FN int blk_emu_wavefronts(const long long *addr, int n, int bytes)
#if BLK_EMU_SPLIT != 1
{
    int most = 0;
    long long words[64 * 4];
    int nw = 0;
    for (int i = 0; i < n; i++) {
        if (addr[i] < 0)
            continue;
        for (int b = 0; b < bytes; b += 4)
            words[nw++] = (addr[i] + b) / 4;
    }
    for (int bank = 0; bank < 32; bank++) {
        int distinct = 0;
        for (int i = 0; i < nw; i++) {
            if (words[i] % 32 != bank)
                continue;
            bool seen = false;
            for (int j = 0; j < i && !seen; j++)
                seen = words[j] == words[i];
            distinct += !seen;
        }
        if (distinct > most)
            most = distinct;
    }
    return most ? most : (nw ? 1 : 0);
}
#else
;
#endif

#ifdef BLK_EMU_MEMSTATS
#include "blk_emu_mem.h"
#else
static inline void blk_emu_note(uintptr_t, long long, int, bool) {}
static inline void blk_emu_mem_thread(int) {}
#endif

/* ------------------------------------------------------------ block barrier */

static inline void __syncthreads()
{
    BlkEmuMachine *m = blk_emu_m;
    if (m->block.count == 0)
        m->st.barriers++;
    blk_emu_bar_wait(m->block, m->nthreads, BLK_EMU_TAG_SYNC);
}
/* blk_tid_fresh(): threadIdx.x, read where it is called (CUDA: a volatile
 * mov from %tid.x that the compiler cannot hoist out of a loop) */
static inline int blk_tid_fresh() { return (int)threadIdx.x; }
/* bar.sync id, n (PTX ISA "bar, barrier"): barrier id (0..15) completes
 * once n threads have arrived, counted in whole warps (n a multiple of the
 * warp size); the threads of one barrier instance must give the same n.
 * Barrier 0 is __syncthreads' (n = the block). Counted in --stats as
 * barriers, as __syncthreads is. */
BLK_EMU_FN void blk_bar_sync(int id, int n)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    char msg[200];
    if (id < 0 || id > 15 || n <= 0 || n % BLK_EMU_WARP || n > m->nthreads) {
        snprintf(msg, sizeof msg, "bar.sync %d, %d: the barrier must be 0..15 and the count a "
                 "multiple of %d up to the block's %d threads", id, n, BLK_EMU_WARP, m->nthreads);
        blk_emu_thread_fail(msg);
    }
    if (id == 0) {
        if (n != m->nthreads)
            blk_emu_thread_fail("bar.sync 0 with fewer threads than the block: barrier 0 is "
                                "__syncthreads'");
        __syncthreads();
        return;
    }
    BlkEmuBar &b = m->named[id];
    if (m->failed)
        blk_emu_abandon();
    if (b.count && b.width != n) {
        snprintf(msg, sizeof msg, "bar.sync %d, %d while other threads wait at it with count %d",
                 id, n, b.width);
        blk_emu_thread_fail(msg);
    }
    if (b.count == 0) {
        b.width = n;
        b.tag = BLK_EMU_TAG_NAMED;
        m->st.barriers++;
    }
    const int t = blk_emu_tid();
    if (++b.count == n) {
        b.count = 0;
        b.gen++;
        unsigned joined = 1u << (t / BLK_EMU_WARP); /* the warps of this instance */
        for (int u = 0; u < m->nthreads; u++)
            if (m->where[u] == BLK_EMU_TAG_NAMED && m->named_at[u] == id) {
                m->where[u] = 0;
                m->running++;
                joined |= 1u << (u / BLK_EMU_WARP);
            }
        blk_emu_race_sync(joined);
        return;
    }
    const unsigned gen = b.gen;
    m->where[t] = BLK_EMU_TAG_NAMED;
    m->named_at[t] = id;
    if (--m->running == 0) {
        blk_emu_deadlock(m);
        blk_emu_abandon();
    }
    while (b.gen == gen && !m->failed)
        blk_emu_yield();
    if (b.gen == gen)
        blk_emu_abandon();
}
#else
;
#endif
static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)mask;
    blk_emu_warp_bar(BLK_EMU_TAG_SYNCWARP);
}
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __nanosleep(unsigned ns) /* the other threads run meanwhile */
{
    blk_emu_pause();
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, nullptr);
}
static inline long long clock64()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}


/* ------------------------------------------------------------ bits */

static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline unsigned __float_as_uint(float x) { unsigned i; memcpy(&i, &x, 4); return i; }
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __ffs(int x) { return __builtin_ffs(x); }


/* PTX max.NaN.f32 / min.NaN.f32 (sm_80+; the prelude's blk_max / blk_min
 * of f32 on CUDA): a NaN input gives the canonical NaN 0x7fffffff; else the
 * larger / smaller, -0.0 ordered below +0.0 (IEEE 754-2019 maximum /
 * minimum, which LLVM's NVPTX backend lowers to these instructions) */
static inline float blk_max_nan_f32(float a, float b)
{
    if (a != a || b != b)
        return __uint_as_float(0x7fffffffu);
    if (a == b) /* equal: only the sign of a zero can differ */
        return std::signbit(a) ? b : a;
    return a > b ? a : b;
}
static inline float blk_min_nan_f32(float a, float b)
{
    if (a != a || b != b)
        return __uint_as_float(0x7fffffffu);
    if (a == b)
        return std::signbit(a) ? a : b;
    return a < b ? a : b;
}

/* PTX ex2.approx.ftz.f32 (the prelude's blk_exp2f of f32 on CUDA): 2^x
 * with subnormal inputs and results flushed to zero (same sign); here the
 * host's exp2f (the hardware's is within 2 ulp of it) */
static inline float blk_ex2_ftz_f32(float x)
{
    if (std::fpclassify(x) == FP_SUBNORMAL)
        x = 0.0f;
    const float r = exp2f(x);
    return std::fpclassify(r) == FP_SUBNORMAL ? 0.0f : r;
}

static inline float __fdividef(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }

/* f16 / bf16: bit containers, converted with round to nearest even */
struct __half { unsigned short x; };
struct __nv_bfloat16 { unsigned short x; };
static inline float __half2float(__half h) { _Float16 f; memcpy(&f, &h.x, 2); return (float)f; }
static inline __half __float2half_rn(float x)
{
    _Float16 f = (_Float16)x;
    __half h;
    memcpy(&h.x, &f, 2);
    return h;
}
static inline __half __float2half(float x) { return __float2half_rn(x); }
static inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((unsigned)b.x << 16); }
static inline __nv_bfloat16 __float2bfloat16_rn(float x)
{
    unsigned u = __float_as_uint(x);
    __nv_bfloat16 r;
    if (x != x)
        r.x = (unsigned short)((u >> 16) | 0x40);
    else
        r.x = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return r;
}
static inline float blk_emu_bf16(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
static inline float blk_emu_f16(unsigned short b) { __half h = {b}; return __half2float(h); }

/* ------------------------------------------------------------ atomics */

template <class T> static inline T blk_emu_atomic_op(T *p, T v, int op)
{
    T old;
    memcpy(&old, p, sizeof(T)); /* refreshed by a failing CAS */
    for (;;) {
        T nv;
        switch (op) {
        case 0: nv = old + v; break;
        case 1: nv = old > v ? old : v; break;
        case 2: nv = old < v ? old : v; break;
        default: nv = v; break;
        }
        if (__atomic_compare_exchange(p, &old, &nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return old;
    }
}
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{ return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline long long atomicAdd(long long *p, long long v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline float atomicAdd(float *p, float v) { return blk_emu_atomic_op(p, v, 0); }
static inline double atomicAdd(double *p, double v) { return blk_emu_atomic_op(p, v, 0); }
#define BLK_EMU_MINMAX(T)                                                            \
    static inline T atomicMax(T *p, T v) { return blk_emu_atomic_op(p, v, 1); }    \
    static inline T atomicMin(T *p, T v) { return blk_emu_atomic_op(p, v, 2); }
BLK_EMU_MINMAX(int)
BLK_EMU_MINMAX(unsigned)
BLK_EMU_MINMAX(long long)
BLK_EMU_MINMAX(unsigned long long)
#undef BLK_EMU_MINMAX
#define BLK_EMU_BITS(T)                                                                         \
    static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }   \
    static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicCAS(T *p, T c, T v)                                                   \
    {                                                                                           \
        __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
        return c;                                                                               \
    }
BLK_EMU_BITS(int)
BLK_EMU_BITS(unsigned)
BLK_EMU_BITS(unsigned long long)
BLK_EMU_BITS(long long)
#undef BLK_EMU_BITS
static inline float atomicExch(float *p, float v) { return blk_emu_atomic_op(p, v, 3); }

/* signals (rank builtins) */
/* a signal poll lets the block's other threads run (blk_wait spins on it) */
static inline unsigned long long blk_sig_load(const unsigned long long *p)
{
    blk_emu_pause();
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void blk_sig_set(unsigned long long *p, unsigned long long v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline void blk_sig_add(unsigned long long *p, unsigned long long v)
{
    __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
}
static inline long long blk_ticks(void) { return clock64(); } /* ns, as %globaltimer */

/* ------------------------------------------------------------ shuffles, votes */

/* The source lane of a shuffle (CUDA Programming Guide, "Warp Shuffle
 * Functions"): lanes form segments of `width`; kind 0 indexed, 1 up,
 * 2 down, 3 xor; out of the segment: the lane's own value. */
static inline int blk_emu_src_lane(int lane, int kind, int v, int width)
{
    if (width <= 0 || width > BLK_EMU_WARP)
        width = BLK_EMU_WARP;
    const int base = lane & ~(width - 1);
    int s;
    switch (kind) {
    case 0: return base + (v & (width - 1));
    case 1: s = lane - v; return s < base ? lane : s;
    case 2: s = lane + v; return s >= base + width ? lane : s;
    default: s = lane ^ v; return s >= base + width ? lane : s;
    }
}
template <class T> static inline T blk_emu_shfl(T v, int kind, int x, int width)
{
    static_assert(sizeof(T) <= sizeof(BlkEmuSlot), "shuffle of a large type");
    T r;
    const int lane = blk_emu_lane();
    if (blk_emu_leader())
        blk_emu_count(blk_emu_m->st.shuffles, 1);
    blk_emu_collective(BLK_EMU_TAG_SHFL, &v, sizeof v, [&](BlkEmuSlot *s) {
        memcpy(&r, s[blk_emu_src_lane(lane, kind, x, width)].b, sizeof r);
    });
    return r;
}
template <class T> static inline T __shfl_sync(unsigned, T v, int l, int w = 32) { return blk_emu_shfl(v, 0, l, w); }
template <class T> static inline T __shfl_up_sync(unsigned, T v, unsigned d, int w = 32) { return blk_emu_shfl(v, 1, (int)d, w); }
template <class T> static inline T __shfl_down_sync(unsigned, T v, unsigned d, int w = 32) { return blk_emu_shfl(v, 2, (int)d, w); }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int m, int w = 32) { return blk_emu_shfl(v, 3, m, w); }
template <class T> static inline T __shfl(T v, int l, int w = BLK_EMU_WARP) { return blk_emu_shfl(v, 0, l, w); }
template <class T> static inline T __shfl_up(T v, unsigned d, int w = BLK_EMU_WARP) { return blk_emu_shfl(v, 1, (int)d, w); }
template <class T> static inline T __shfl_down(T v, unsigned d, int w = BLK_EMU_WARP) { return blk_emu_shfl(v, 2, (int)d, w); }
template <class T> static inline T __shfl_xor(T v, int m, int w = BLK_EMU_WARP) { return blk_emu_shfl(v, 3, m, w); }

static inline unsigned long long blk_emu_ballot(int pred)
{
    unsigned long long r = 0;
    int p = pred != 0;
    if (blk_emu_leader())
        blk_emu_count(blk_emu_m->st.shuffles, 1);
    blk_emu_collective(BLK_EMU_TAG_VOTE, &p, sizeof p, [&](BlkEmuSlot *s) {
        for (int i = 0; i < BLK_EMU_WARP; i++) {
            int q;
            memcpy(&q, s[i].b, sizeof q);
            r |= (unsigned long long)(q != 0) << i;
        }
    });
    return r;
}
static inline unsigned __ballot_sync(unsigned mask, int p) { return (unsigned)blk_emu_ballot(p) & mask; }
static inline int __any_sync(unsigned mask, int p) { return ((unsigned)blk_emu_ballot(p) & mask) != 0; }
static inline int __all_sync(unsigned mask, int p) { return ((unsigned)blk_emu_ballot(p) & mask) == mask; }
static inline unsigned long long __ballot(int p) { return blk_emu_ballot(p); }
static inline int __any(int p) { return blk_emu_ballot(p) != 0; }
static inline int __all(int p) { return blk_emu_ballot(p) == (BLK_EMU_WARP == 64 ? ~0ull : 0xffffffffull); }

#include "blk_emu_race.h"
#include "blk_emu_mma.h"
#include "blk_emu_wgmma.h"
#include "blk_emu_tma.h"

/* ------------------------------------------------------------ launch */

/* Kernel parameters: params[i] points at argument i in the kernel ABI of
 * backends/gpu/gpu_emit.h (the image the GPU launcher packs). */
template <class... A, size_t... I>
static inline void blk_emu_call(void (*k)(A...), void **params, std::index_sequence<I...>)
{
    k(*(typename std::remove_reference<A>::type *)params[I]...);
}

template <class... A, size_t... I>
static inline void blk_emu_reg_all(void (*)(A...), void **params, std::index_sequence<I...>)
{
#ifdef BLK_EMU_MEMSTATS
    blk_emu_nglobal = 0;
    blk_emu_seen.clear();
    (blk_emu_reg(*(typename std::remove_reference<A>::type *)params[I]), ...);
#else
    (void)params;
#endif
}

/* The blocks a launch runs: all of them, or with $BLKC_EMU_SAMPLE=N
 * (blkc run --stats-sample=N) the first, the last and N evenly spread
 * between them, in order (--stats scales the counts by grid / run; the
 * blocks left out write nothing, so the results are partial). */
BLK_EMU_FN std::vector<long long> blk_emu_sample(long long nb)
#if BLK_EMU_SPLIT != 1
{
    std::vector<long long> v;
    const char *e = getenv("BLKC_EMU_SAMPLE");
    const long long n = e ? atoll(e) : 0;
    if (n <= 0 || n + 2 >= nb) {
        for (long long b = 0; b < nb; b++)
            v.push_back(b);
        return v;
    }
    for (long long i = 0; i <= n + 1; i++) {
        const long long b = (long long)((double)i * (double)(nb - 1) / (double)(n + 1) + 0.5);
        if (v.empty() || v.back() != b)
            v.push_back(b);
    }
    return v;
}
#else
;
#endif

/* What the fibers of the launch in progress run. */
BLK_EMU_VAR const long long *blk_emu_grid;
BLK_EMU_VAR const std::vector<long long> *blk_emu_blocks;
BLK_EMU_VAR void (*blk_emu_body)(void (*)(), void **); /* calls the kernel: */
BLK_EMU_VAR void (*blk_emu_kernel)();
BLK_EMU_VAR void **blk_emu_params;

/* A fiber's whole life: thread threadIdx.x of every block the launch runs. */
BLK_EMU_FN void blk_emu_fiber_main()
#if BLK_EMU_SPLIT != 1
{
    BlkEmuMachine *m = blk_emu_m;
    BlkEmuFiber *f = blk_emu_cur;
    const int t = blk_emu_tid();
    const long long *grid = blk_emu_grid;
    for (long long b : *blk_emu_blocks) {
        f->bid = blockIdx = {(unsigned)(b % grid[0]), (unsigned)(b / grid[0] % grid[1]),
                             (unsigned)(b / (grid[0] * grid[1]))};
        blk_emu_body(blk_emu_kernel, blk_emu_params);
        blk_emu_cp_drop();
        blk_emu_wg_drop(t);
        blk_emu_bar_wait(m->block, m->nthreads, BLK_EMU_TAG_END);
        if (t == 0) { /* a fresh block: shared memory is garbage again */
            blk_emu_tma_block_end(m);
            blk_emu_regs_reset(m);
            blk_emu_race_block(m);
#ifdef BLK_EMU_MEMSTATS
            blk_emu_mem_block(m);
#endif
            memset(m->smem, 0x7f, (size_t)m->smem_bytes);
            m->st.blocks++;
        }
        blk_emu_bar_wait(m->block, m->nthreads, BLK_EMU_TAG_END);
    }
    m->running--;
    f->done = true;
    for (;;)
        blk_emu_yield();
}
#else
;
#endif

/* Fiber stacks, kept for the module's next launches: mapped on first
 * use, pages touched only as deep as a thread's frames go. */
BLK_EMU_VAR unsigned char *blk_emu_stacks[1024];

BLK_EMU_FN bool blk_emu_fiber_init(BlkEmuFiber *f, int t)
#if BLK_EMU_SPLIT != 1
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!blk_emu_stacks[t]) {
        void *p = mmap(nullptr, BLK_EMU_STACK + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return false;
        mprotect(p, page, PROT_NONE); /* an overflow faults instead of running on */
        blk_emu_stacks[t] = (unsigned char *)p + page;
    }
    f->stack = blk_emu_stacks[t];
    f->done = false;
    f->bid = {0, 0, 0};
#if defined(BLK_EMU_FIBER_ASM)
    /* what blk_emu_swap pops: six registers, then the return address; the
     * slot above stands for the caller's return address (rsp % 16 == 8 at
     * the entry, as after a call) */
    void **sp = (void **)(((uintptr_t)(f->stack + BLK_EMU_STACK) & ~(uintptr_t)15) - 64);
    for (int i = 0; i < 8; i++)
        sp[i] = nullptr;
    sp[6] = (void *)blk_emu_fiber_main;
    f->sp = sp;
#else
    if (getcontext(&f->uc) != 0)
        return false;
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = BLK_EMU_STACK;
    f->uc.uc_link = nullptr;
    makecontext(&f->uc, blk_emu_fiber_main, 0);
#endif
    return true;
}
#else
;
#endif

/* Round robin over the threads that can go on (not waiting, or the
 * launch failed: they abandon) until every one is done. */
BLK_EMU_FN void blk_emu_schedule(BlkEmuMachine *m)
#if BLK_EMU_SPLIT != 1
{
    int live = m->nthreads;
    while (live > 0) {
        bool ran = false;
        for (int t = 0; t < m->nthreads; t++) {
            BlkEmuFiber *f = &blk_emu_fibers[t];
            if (f->done || (m->where[t] && !m->failed))
                continue;
            blk_emu_resume(t);
            ran = true;
            live -= f->done;
            /* threads an mbarrier arrival released run before anyone
             * else (blk_emu_tma.h: the most eager legal interleaving) */
            while (m->nhandoff > 0) {
                const int u = m->handoff[--m->nhandoff];
                BlkEmuFiber *g = &blk_emu_fibers[u];
                if (g->done || (m->where[u] && !m->failed))
                    continue;
                blk_emu_resume(u);
                live -= g->done;
            }
        }
        if (!ran && !m->failed) /* bar_wait reports this first; kept as a net */
            blk_emu_deadlock(m);
    }
}
#else
;
#endif

/* Run body(k, params) (kernel k, blk_emu_thunk) on `grid` blocks of
 * `threads` threads with smem bytes of dynamic shared memory; reg(k,
 * params) (blk_emu_regthunk) first. 0, or -1 with err set. */
BLK_EMU_FN int blk_emu_run(void (*body)(void (*)(), void **), void (*reg)(void (*)(), void **),
                           void (*k)(), void **params, const long long grid[3], int threads,
                           long long smem, BlkEmuStats *stats, char *err, size_t errlen)
#if BLK_EMU_SPLIT != 1
{
    struct Lock { /* one launch at a time */
        Lock() { pthread_mutex_lock(&blk_emu_launch_mu); }
        ~Lock() { pthread_mutex_unlock(&blk_emu_launch_mu); }
    } one;
    if (threads <= 0 || threads % BLK_EMU_WARP || threads > 1024) {
        snprintf(err, errlen, "emu: %d threads per block (a multiple of %d up to 1024)",
                 threads, BLK_EMU_WARP);
        return -1;
    }
    BlkEmuMachine m;
    m.nthreads = threads;
    m.nwarps = threads / BLK_EMU_WARP;
    m.running = threads;
    std::vector<BlkEmuWarp> warps((size_t)m.nwarps);
    std::vector<int> where((size_t)threads, 0), named_at((size_t)threads, 0),
        handoff((size_t)threads, 0);
    std::vector<BlkEmuFiber> fibers((size_t)threads);
    for (int t = 0; t < threads; t++)
        if (!blk_emu_fiber_init(&fibers[(size_t)t], t)) {
            snprintf(err, errlen, "emu: out of memory for thread stacks");
            return -1;
        }
    m.warps = warps.data();
    m.where = where.data();
    m.named_at = named_at.data();
    m.handoff = handoff.data();
    m.smem_bytes = smem;
    m.smem = (unsigned char *)aligned_alloc(128, (size_t)((smem + 127) / 128 * 128) + 128);
    if (!m.smem) {
        snprintf(err, errlen, "emu: out of memory");
        return -1;
    }
    memset(m.smem, 0x7f, (size_t)smem);
    blk_emu_smem_base = m.smem;
    gridDim = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
    blockDim = {(unsigned)threads, 1, 1};
    blk_emu_m = &m;
    reg(k, params);
#ifdef BLK_EMU_MEMSTATS
    blk_emu_logs.assign((size_t)threads, BlkEmuLog());
#endif
    const std::vector<long long> blocks = blk_emu_sample(grid[0] * grid[1] * grid[2]);
    blk_emu_grid = grid;
    blk_emu_blocks = &blocks;
    blk_emu_body = body;
    blk_emu_kernel = k;
    blk_emu_params = params;
    blk_emu_fibers = fibers.data();
    for (int t = 0; t < threads; t++) {
        blk_emu_cp_reset(t);
        blk_emu_wg_drop(t);
    }
    blk_emu_tma_block_end(&m, false);
    blk_emu_regs_reset(&m);
    blk_emu_race_block(&m);
    blk_emu_schedule(&m);
    blk_emu_fibers = nullptr;
    blk_emu_m = nullptr;
    free(m.smem);
    m.st.threads = (long long)threads * grid[0] * grid[1] * grid[2];
    m.st.grid_blocks = grid[0] * grid[1] * grid[2];
#ifdef BLK_EMU_MEMSTATS
    for (int i = 0; i < blk_emu_nglobal; i++)
        m.st.gmem_extent += (blk_emu_ghi[i] - 1) / 32 - blk_emu_glo[i] / 32 + 1;
#endif
    if (stats)
        *stats = m.st;
    if (m.failed) {
        snprintf(err, errlen, "%s", m.err);
        return -1;
    }
    return 0;
}
#else
;
#endif

/* A kernel of parameters A... as blk_emu_run calls it: k's arguments
 * unpacked from params. */
template <class... A> static void blk_emu_thunk(void (*k)(), void **params)
{
    blk_emu_call(reinterpret_cast<void (*)(A...)>(k), params, std::index_sequence_for<A...>{});
}
template <class... A> static void blk_emu_regthunk(void (*k)(), void **params)
{
    blk_emu_reg_all(reinterpret_cast<void (*)(A...)>(k), params,
                    std::index_sequence_for<A...>{});
}

/* Run kernel k on `grid` blocks of `threads` threads with smem bytes of
 * dynamic shared memory. 0, or -1 with err set. */
template <class... A>
static int blk_emu_launch(void (*k)(A...), const long long grid[3], int threads,
                          long long smem, void **params, BlkEmuStats *stats, char *err,
                          size_t errlen)
{
    return blk_emu_run(blk_emu_thunk<A...>, blk_emu_regthunk<A...>,
                       reinterpret_cast<void (*)()>(k), params, grid, threads, smem, stats,
                       err, errlen);
}

#define BLK_DYNAMIC_SMEM(name) unsigned char *name = blk_emu_smem_base
/* 1024-byte aligned on a GPU; here addresses are offsets from the base */
#define BLK_DYNAMIC_SMEM_1K(name) BLK_DYNAMIC_SMEM(name)

/* The entry point runtime/gpu_emu.c calls for the kernel whose symbol is
 * `name` (blk_k_NAME, backends/backend.h; gpu_launch.c appends one line
 * per kernel to the module text). */
#define BLK_EMU_ENTRY(name)                                                              \
    extern "C" int blk_emu_entry_##name(const long long grid[3], int threads,            \
                                        long long smem, void **params, BlkEmuStats *st,  \
                                        char *err, size_t errlen)                        \
    {                                                                                    \
        return blk_emu_launch(name, grid, threads, smem, params, st, err, errlen);       \
    }

#if defined(__clang__)
#pragma clang attribute pop
#endif

#endif
