/* cuda.c — the CUDA backend: the CUDA C dialect of the GPU emitter
 * (gpu_emit.c) and in-process compilation with NVRTC, loaded with dlopen so
 * that the build links no CUDA library.
 *
 * Stages: "gpu-ir" (Core IR with the GPU layouts), "cuda" (CUDA C text), "ptx" (PTX text for compute_XX), "cubin"
 * (the default: a cubin for real archs sm_XX, PTX for compute_XX archs).
 * --arch defaults to sm_80. */
#include "../gpu/gpu_emit.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ dialect */

static const char *const cuda_prelude[] = {
    "#ifndef BLK_EMU /* cuda-emu: runtime/emu/blk_emu.h supplies these */\n",
    "#include <cuda_fp16.h>\n",
    "#include <cuda_bf16.h>\n",
    "#endif\n",
    "\n",
    "typedef __half blk_f16;\n",
    "typedef __nv_bfloat16 blk_bf16;\n",
    "__device__ inline float blk_f16_to_f32(blk_f16 x) { return __half2float(x); }\n",
    "__device__ inline blk_f16 blk_f32_to_f16(float x) { return __float2half_rn(x); }\n",
    "__device__ inline float blk_bf16_to_f32(blk_bf16 x) { return __bfloat162float(x); }\n",
    "__device__ inline blk_bf16 blk_f32_to_bf16(float x) { return __float2bfloat16_rn(x); }\n",
    "\n",
    "#define BLK_SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))\n",
    "#define BLK_SHFL_UP(v, d) __shfl_up_sync(0xffffffffu, (v), (d))\n",
    "#define BLK_SHFL(v, l) __shfl_sync(0xffffffffu, (v), (l))\n",
    "#ifndef BLK_EMU\n",
    "#define BLK_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]\n",
    "#define BLK_DYNAMIC_SMEM_1K(name) extern __shared__ __align__(1024) unsigned char name[]\n",
    "#endif\n",
    "#define BLK_MEMCPY memcpy\n",
    "\n",
    "/* signals (rank builtins): system-scope acquire/release on u64 cells;\n",
    " * BLK_TICKS is %globaltimer (ns), the unit of BlkRankCtx.timeout */\n",
    "#ifndef BLK_EMU\n",
    "__device__ inline long long blk_ticks(void)\n",
    "{\n",
    "    unsigned long long t;\n",
    "    asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n",
    "    return (long long)t;\n",
    "}\n",
    "#endif\n",
    "#define BLK_TICKS() blk_ticks()\n",
    "#define BLK_TICKS_DEFAULT 5000000000LL /* 5 s */\n",
    "#ifndef BLK_EMU\n",
    "__device__ inline unsigned long long blk_sig_load(const unsigned long long *p)\n",
    "{\n",
    "    unsigned long long v;\n",
    "    asm volatile(\"ld.acquire.sys.u64 %0, [%1];\" : \"=l\"(v) : \"l\"(p) : \"memory\");\n",
    "    return v;\n",
    "}\n",
    "__device__ inline void blk_sig_set(unsigned long long *p, unsigned long long v)\n",
    "{\n",
    "    __threadfence_system();\n",
    "    asm volatile(\"st.release.sys.u64 [%0], %1;\" : : \"l\"(p), \"l\"(v) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_sig_add(unsigned long long *p, unsigned long long v)\n",
    "{\n",
    "    __threadfence_system();\n",
    "    asm volatile(\"red.release.sys.add.u64 [%0], %1;\" : : \"l\"(p), \"l\"(v) : \"memory\");\n",
    "}\n",
    "#endif\n",
    "__device__ inline void blk_pause(void) { __nanosleep(100); }\n",
    "\n",
    "#if __CUDA_ARCH__ >= 800 && !defined(BLK_EMU) /* cuda-emu: blk_emu.h */\n",
    "/* tensor-core fragments (PTX ISA, mma.m16n8k16 / m16n8k8 / m16n8k32) */\n",
    "__device__ inline void blk_ldmatrix_x4(unsigned r[4], const void *p)\n",
    "{\n",
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n",
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n",
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n",
    "}\n",
    "__device__ inline void blk_ldmatrix_x2_trans(unsigned r[2], const void *p)\n",
    "{\n",
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n",
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\\n\"\n",
    "                 : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a));\n",
    "}\n",
    "__device__ inline void blk_ldmatrix_x1(unsigned r[1], const void *p)\n",
    "{\n",
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n",
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\\n\"\n",
    "                 : \"=r\"(r[0]) : \"r\"(a));\n",
    "}\n",
    "__device__ inline void blk_ldmatrix_x2(unsigned r[2], const void *p)\n",
    "{\n",
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n",
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\\n\"\n",
    "                 : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a));\n",
    "}\n",
    "__device__ inline void blk_ldmatrix_x1_trans(unsigned r[1], const void *p)\n",
    "{\n",
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n",
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\\n\"\n",
    "                 : \"=r\"(r[0]) : \"r\"(a));\n",
    "}\n",
    "__device__ inline void blk_ldmatrix_x4_trans(unsigned r[4], const void *p)\n",
    "{\n",
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n",
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n",
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n",
    "}\n",
    "__device__ inline void blk_mma_f16(float c[4], const unsigned a[4], const unsigned b[2])\n",
    "{\n",
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n",
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n",
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n",
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n",
    "}\n",
    "__device__ inline void blk_mma_bf16(float c[4], const unsigned a[4], const unsigned b[2])\n",
    "{\n",
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n",
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n",
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n",
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n",
    "}\n",
    "__device__ inline void blk_mma_tf32(float c[4], const unsigned a[4], const unsigned b[2])\n",
    "{\n",
    "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 \"\n",
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n",
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n",
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n",
    "}\n",
    "__device__ inline void blk_mma_s8(int c[4], const unsigned a[4], const unsigned b[2])\n",
    "{\n",
    "    asm volatile(\"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 \"\n",
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n",
    "                 : \"+r\"(c[0]), \"+r\"(c[1]), \"+r\"(c[2]), \"+r\"(c[3])\n",
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n",
    "}\n",
    "/* x = hi + lo with both parts tf32 (3xTF32 keeps f32 accuracy) */\n",
    "__device__ inline void blk_tf32_split(float x, unsigned &hi, unsigned &lo)\n",
    "{\n",
    "    asm(\"cvt.rna.tf32.f32 %0, %1;\\n\" : \"=r\"(hi) : \"f\"(x));\n",
    "    const float r = x - __uint_as_float(hi);\n",
    "    asm(\"cvt.rna.tf32.f32 %0, %1;\\n\" : \"=r\"(lo) : \"f\"(r));\n",
    "}\n",
    "#endif\n",
    "#if __CUDA_ARCH__ >= 800\n",
    "/* two 16-bit values as one b32 mma operand register, lo first */\n",
    "template <class T> __device__ inline unsigned blk_pack2(T lo, T hi)\n",
    "{\n",
    "    return (unsigned)*reinterpret_cast<const unsigned short *>(&lo) |\n",
    "           (unsigned)*reinterpret_cast<const unsigned short *>(&hi) << 16;\n",
    "}\n",
    "/* four i8 of a column, k-consecutive, packed low byte first */\n",
    "__device__ inline unsigned blk_pack4(const signed char *p, long long stride)\n",
    "{\n",
    "    return (unsigned)(unsigned char)p[0] | (unsigned)(unsigned char)p[stride] << 8 |\n",
    "           (unsigned)(unsigned char)p[2 * stride] << 16 | (unsigned)(unsigned char)p[3 * stride] << 24;\n",
    "}\n",
    "#endif\n",
    "\n",
    "/* wgmma operand tiles (gpu_wgmma.c): the element index of element e of\n",
    " * an [R][C] tile of E-byte elements (2, or 1: fp8) in the canonical layout\n",
    " * of swizzle span S bytes (32, 64, 128; the tile aligned to 8 S bytes):\n",
    " * rows of S / E elements, panels of R rows along C, 8-row atoms of 8 S bytes, the\n",
    " * 16-byte chunks of an atom's row r XOR'd with r (address bits [4, 7) ^=\n",
    " * [7, 10) for 128B: PTX ISA 9.7.15.5.1.2.1.3, the swizzle TMA writes);\n",
    " * mt > 0: the atoms of warp w's fragment i (of mt) form m-block i of\n",
    " * warpgroup w / 4 (8 atoms: 2 per warp of the group) */\n",
    "__device__ inline int blk_wgs(int e, int C, int R, int mt, int S, int E)\n",
    "{\n",
    "    const int r = e / C, c = e % C, tr = r >> 3, P = S / E;\n",
    "    int s = tr;\n",
    "    if (mt) {\n",
    "        const int w = tr / (2 * mt), j = tr % (2 * mt);\n",
    "        s = ((w >> 2) * mt + (j >> 1)) * 8 + (w & 3) * 2 + (j & 1);\n",
    "    }\n",
    "    const int x = (((c / P) * (R >> 3) + s) * 8 * P + (r & 7) * P + c % P) * E;\n",
    "    return (x ^ ((x >> 7) & ((S >> 4) - 1)) << 4) / E; /* bytes [4, 7) ^= [7, 10) */\n",
    "}\n",
    "#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(BLK_EMU)\n",
    "/* sm_90a (PTX ISA 9.7.15): warpgroup MMA; cuda-emu: runtime/emu/blk_emu_wgmma.h */\n",
    "__device__ inline unsigned blk_smem_addr(const void *p)\n",
    "{\n",
    "    return (unsigned)__cvta_generic_to_shared(p);\n",
    "}\n",
    "__device__ inline void blk_fence_proxy_async(void)\n",
    "{\n",
    "    asm volatile(\"fence.proxy.async.shared::cta;\\n\" : : : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_wgmma_fence(void) { asm volatile(\"wgmma.fence.sync.aligned;\\n\" : : : \"memory\"); }\n",
    "__device__ inline void blk_wgmma_commit(void) { asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" : : : \"memory\"); }\n",
    "template <int N> __device__ inline void blk_wgmma_wait(void)\n",
    "{\n",
    "    asm volatile(\"wgmma.wait_group.sync.aligned %0;\\n\" : : \"n\"(N) : \"memory\");\n",
    "}\n",
    "/* keeps the compiler from moving accumulator accesses across the\n",
    " * asynchronous wgmma (their asm does not name the registers) */\n",
    "__device__ inline void blk_wgmma_reg_fence(float &x) { asm volatile(\"\" : \"+f\"(x) : : \"memory\"); }\n",
    "/* and A's fragment registers, live until the wait that retires them */\n",
    "__device__ inline void blk_wgmma_reg_fence(unsigned &x) { asm volatile(\"\" : \"+r\"(x) : : \"memory\"); }\n",
    "#elif defined(BLK_EMU)\n",
    "static inline void blk_wgmma_reg_fence(float &) {}\n",
    "static inline void blk_wgmma_reg_fence(unsigned &) {}\n",
    "#else\n",
    "__device__ inline void blk_fence_proxy_async(void) {}\n",
    "#endif\n",
    "#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)\n",
    "/* a wgmma matrix descriptor (PTX ISA 9.7.15.5.1.2.2): start address,\n",
    " * leading and stride dimension byte offsets, each (x & 0x3FFFF) >> 4, in\n",
    " * bits 13-0, 29-16, 45-32; base offset 0; swizzle mode 0 (none) */\n",
    "__device__ inline unsigned long long blk_wg_desc(const void *p, unsigned lbo, unsigned sbo)\n",
    "{\n",
    "    return (unsigned long long)((blk_smem_addr(p) & 0x3FFFFu) >> 4) |\n",
    "           (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 |\n",
    "           (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32;\n",
    "}\n",
    "#endif\n",
    "/* warp specialization (backends/gpu/gpu_ws.c): setmaxnreg (PTX ISA\n",
    " * \"setmaxnreg\", sm_90a; a hint elsewhere: nothing), the named barrier\n",
    " * `bar.sync id, n` of n threads (whole warps). cuda-emu: blk_emu.h,\n",
    " * blk_emu_wgmma.h */\n",
    "#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(BLK_EMU)\n",
    "template <int N> __device__ inline void blk_setmaxnreg_inc(void)\n",
    "{\n",
    "    asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\\n\" : : \"n\"(N));\n",
    "}\n",
    "template <int N> __device__ inline void blk_setmaxnreg_dec(void)\n",
    "{\n",
    "    asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\\n\" : : \"n\"(N));\n",
    "}\n",
    "#elif !defined(BLK_EMU)\n",
    "template <int N> __device__ inline void blk_setmaxnreg_inc(void) {}\n",
    "template <int N> __device__ inline void blk_setmaxnreg_dec(void) {}\n",
    "#endif\n",
    "#ifndef BLK_EMU\n",
    "__device__ inline void blk_bar_sync(int id, int n)\n",
    "{\n",
    "    asm volatile(\"bar.sync %0, %1;\\n\" : : \"r\"(id), \"r\"(n) : \"memory\");\n",
    "}\n",
    "/* threadIdx.x read where it is called: a persistent kernel's tile loop\n",
    " * (backends/gpu/gpu_persist.c) recomputes its per-thread addresses per\n",
    " * tile instead of keeping them all live across it */\n",
    "__device__ inline int blk_tid_fresh(void)\n",
    "{\n",
    "    unsigned t;\n",
    "    asm volatile(\"mov.u32 %0, %%tid.x;\\n\" : \"=r\"(t));\n",
    "    return (int)t;\n",
    "}\n",
    "#endif\n",
    "\n",
    "/* sm_90 tensor memory access (PTX ISA \"mbarrier\", \"cp.async.bulk.tensor\"):\n",
    " * a tensor map is 128 opaque bytes (CUtensorMap) the host encodes; an\n",
    " * mbarrier is 8 bytes of shared memory. cuda-emu: runtime/emu/blk_emu_tma.h */\n",
    "#ifndef BLK_EMU\n",
    "struct __align__(64) BlkTensorMap { unsigned long long opaque[16]; };\n",
    "#endif\n",
    "#if __CUDA_ARCH__ >= 900 && !defined(BLK_EMU)\n",
    "__device__ inline unsigned blk_sa(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }\n",
    "__device__ inline void blk_mbar_init(unsigned long long *bar, unsigned count)\n",
    "{\n",
    "    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" : : \"r\"(blk_sa(bar)), \"r\"(count) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_fence_mbar_init(void)\n",
    "{\n",
    "    asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" : : : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_mbar_arrive(unsigned long long *bar)\n",
    "{\n",
    "    asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\\n\" : : \"r\"(blk_sa(bar)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_mbar_arrive_expect_tx(unsigned long long *bar, unsigned bytes)\n",
    "{\n",
    "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n\"\n",
    "                 : : \"r\"(blk_sa(bar)), \"r\"(bytes) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_mbar_expect_tx(unsigned long long *bar, unsigned bytes)\n",
    "{\n",
    "    asm volatile(\"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\\n\"\n",
    "                 : : \"r\"(blk_sa(bar)), \"r\"(bytes) : \"memory\");\n",
    "}\n",
    "__device__ inline bool blk_mbar_try_wait_parity(unsigned long long *bar, unsigned parity)\n",
    "{\n",
    "    unsigned ok;\n",
    "    asm volatile(\"{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n\"\n",
    "                 \" selp.u32 %0, 1, 0, p;\\n}\\n\"\n",
    "                 : \"=r\"(ok) : \"r\"(blk_sa(bar)), \"r\"(parity) : \"memory\");\n",
    "    return ok != 0;\n",
    "}\n",
    "__device__ inline void blk_mbar_wait_parity(unsigned long long *bar, unsigned parity)\n",
    "{\n",
    "    while (!blk_mbar_try_wait_parity(bar, parity)) {\n",
    "    }\n",
    "}\n",
    "__device__ inline void blk_tma_load_1d(void *dst, const BlkTensorMap *map, int c0, unsigned long long *bar)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\"\n",
    "                 \" [%0], [%1, {%2}], [%3];\\n\"\n",
    "                 : : \"r\"(blk_sa(dst)), \"l\"(map), \"r\"(c0), \"r\"(blk_sa(bar)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_load_2d(void *dst, const BlkTensorMap *map, int c0, int c1,\n",
    "                                       unsigned long long *bar)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\"\n",
    "                 \" [%0], [%1, {%2, %3}], [%4];\\n\"\n",
    "                 : : \"r\"(blk_sa(dst)), \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(blk_sa(bar)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_load_3d(void *dst, const BlkTensorMap *map, int c0, int c1, int c2,\n",
    "                                       unsigned long long *bar)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\"\n",
    "                 \" [%0], [%1, {%2, %3, %4}], [%5];\\n\"\n",
    "                 : : \"r\"(blk_sa(dst)), \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(blk_sa(bar))\n",
    "                 : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_load_4d(void *dst, const BlkTensorMap *map, int c0, int c1, int c2,\n",
    "                                       int c3, unsigned long long *bar)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\"\n",
    "                 \" [%0], [%1, {%2, %3, %4, %5}], [%6];\\n\"\n",
    "                 : : \"r\"(blk_sa(dst)), \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3),\n",
    "                   \"r\"(blk_sa(bar)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_load_5d(void *dst, const BlkTensorMap *map, int c0, int c1, int c2,\n",
    "                                       int c3, int c4, unsigned long long *bar)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\"\n",
    "                 \" [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\\n\"\n",
    "                 : : \"r\"(blk_sa(dst)), \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3),\n",
    "                   \"r\"(c4), \"r\"(blk_sa(bar)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_store_1d(const BlkTensorMap *map, int c0, const void *src)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%1}], [%2];\\n\"\n",
    "                 : : \"l\"(map), \"r\"(c0), \"r\"(blk_sa(src)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_store_2d(const BlkTensorMap *map, int c0, int c1, const void *src)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\\n\"\n",
    "                 : : \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(blk_sa(src)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_store_3d(const BlkTensorMap *map, int c0, int c1, int c2, const void *src)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];\\n\"\n",
    "                 : : \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(blk_sa(src)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_store_4d(const BlkTensorMap *map, int c0, int c1, int c2, int c3,\n",
    "                                        const void *src)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];\\n\"\n",
    "                 : : \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(blk_sa(src)) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_tma_store_5d(const BlkTensorMap *map, int c0, int c1, int c2, int c3,\n",
    "                                        int c4, const void *src)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group\"\n",
    "                 \" [%0, {%1, %2, %3, %4, %5}], [%6];\\n\"\n",
    "                 : : \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4), \"r\"(blk_sa(src))\n",
    "                 : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_bulk_commit(void) { asm volatile(\"cp.async.bulk.commit_group;\\n\" : : : \"memory\"); }\n",
    "template <int N> __device__ inline void blk_bulk_wait(void)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.wait_group %0;\\n\" : : \"n\"(N) : \"memory\");\n",
    "}\n",
    "template <int N> __device__ inline void blk_bulk_wait_read(void)\n",
    "{\n",
    "    asm volatile(\"cp.async.bulk.wait_group.read %0;\\n\" : : \"n\"(N) : \"memory\");\n",
    "}\n",
    "#endif\n",
    "\n",
    "/* stages(S) pipelines (gpu_mem.c): 16 bytes global -> shared, the first\n",
    " * `src` of them read and the rest zero-filled; groups of copies */\n",
    "#if defined(BLK_EMU) /* cuda-emu: blk_emu.h, with real group semantics */\n",
    "#elif __CUDA_ARCH__ >= 800\n",
    "__device__ inline void blk_cp_async16(void *dst, const void *src, int nbytes)\n",
    "{\n",
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(dst);\n",
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\"\n",
    "                 : : \"r\"(a), \"l\"(src), \"r\"(nbytes) : \"memory\");\n",
    "}\n",
    "__device__ inline void blk_cp_commit(void) { asm volatile(\"cp.async.commit_group;\\n\" : : : \"memory\"); }\n",
    "template <int N> __device__ inline void blk_cp_wait(void)\n",
    "{\n",
    "    asm volatile(\"cp.async.wait_group %0;\\n\" : : \"n\"(N) : \"memory\");\n",
    "}\n",
    "#else /* no cp.async: a plain copy, complete when issued */\n",
    "__device__ inline void blk_cp_async16(void *dst, const void *src, int nbytes)\n",
    "{\n",
    "    for (int i = 0; i < 16; i++)\n",
    "        ((unsigned char *)dst)[i] = i < nbytes ? ((const unsigned char *)src)[i] : 0;\n",
    "}\n",
    "__device__ inline void blk_cp_commit(void) {}\n",
    "template <int N> __device__ inline void blk_cp_wait(void) {}\n",
    "#endif\n",
    NULL,
};

const BkGpuDialect bk_gpu_cuda_dialect = {
    BK_GPU_CUDA, "CUDA C", cuda_prelude, 32,
};

/* ------------------------------------------------------------ NVRTC */

typedef struct _nvrtcProgram *nvrtcProgram;
typedef int nvrtcResult;

static struct {
    void *lib;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int,
                          const char *const *, const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
    nvrtcResult (*ptx)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    const char *(*errstr)(nvrtcResult);
    char include[512]; /* -I option for the CUDA headers, "" if none */
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void *open_first(const char *const *names, const char *dir)
{
    char path[512];
    for (int i = 0; names[i]; i++) {
        void *h;
        if (dir) {
            if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path)
                continue; /* a path this long is not a library we look for */
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        } else {
            h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        }
        if (h)
            return h;
    }
    return NULL;
}

/* The CUDA toolkit root: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda. */
static const char *cuda_root(void)
{
    const char *env[] = {"CUDA_HOME", "CUDA_PATH"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(env[i]);
        if (v && *v)
            return v;
    }
    return "/usr/local/cuda";
}

static void nv_load(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                        "libnvrtc.so", NULL};
    char dir[512];
    nv.lib = open_first(names, NULL);
    if (!nv.lib) {
        snprintf(dir, sizeof dir, "%s/lib64", cuda_root());
        nv.lib = open_first(names, dir);
    }
    if (!nv.lib)
        return;
#define SYM(field, name)                                                  \
    do {                                                                  \
        *(void **)&nv.field = dlsym(nv.lib, name);                        \
        if (!nv.field) {                                                  \
            dlclose(nv.lib);                                              \
            nv.lib = NULL;                                                \
            return;                                                       \
        }                                                                 \
    } while (0)
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(ptx_size, "nvrtcGetPTXSize");
    SYM(ptx, "nvrtcGetPTX");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(errstr, "nvrtcGetErrorString");
#undef SYM
    /* NVRTC ships cuda_fp16.h/cuda_bf16.h as built-in headers since 12.x;
     * the toolkit's include dir is a fallback for older versions */
    snprintf(dir, sizeof dir, "%s/include/cuda_fp16.h", cuda_root());
    if (access(dir, R_OK) == 0)
        snprintf(nv.include, sizeof nv.include, "-I%s/include", cuda_root());
}

/* Largest dynamic shared memory per block of an arch (bytes). */
static long long smem_limit(int sm)
{
    if (sm >= 90)
        return 232448;     /* 227 KiB */
    if (sm == 80 || sm == 87)
        return 166912;     /* 163 KiB */
    if (sm >= 86)
        return 101376;     /* 99 KiB */
    if (sm >= 75)
        return 65536;
    return 49152;
}

/* Parse "sm_90a" / "compute_80": returns the number, *real = sm_. */
static int parse_arch(const char *arch, bool *real, char *suffix, size_t n)
{
    const char *p;
    suffix[0] = 0;
    if (!strncmp(arch, "sm_", 3)) {
        *real = true;
        p = arch + 3;
    } else if (!strncmp(arch, "compute_", 8)) {
        *real = false;
        p = arch + 8;
    } else {
        return -1;
    }
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 50 || v > 999 || strlen(end) > 1 ||
        (*end && *end != 'a' && *end != 'f'))
        return -1;
    snprintf(suffix, n, "%s", end);
    return (int)v;
}

static int nvrtc_compile(const IrModule *m, const char *src, const char *arch,
                         bool want_ptx, DslBuf *out, char *err, size_t errlen)
{
    bool real;
    char sfx[4];
    int sm = parse_arch(arch, &real, sfx, sizeof sfx);
    if (sm < 0) {
        snprintf(err, errlen, "cuda: unknown --arch '%s' (use sm_80, sm_90, "
                 "or compute_XX)", arch);
        return -1;
    }
    for (int i = 0; i < m->nfuncs; i++) {
        BkGpuKernelInfo ki;
        if (m->funcs[i]->is_device)
            continue;
        if (bk_gpu_kernel_info(m->funcs[i], &bk_gpu_cuda_dialect, arch, &ki, err,
                               errlen) < 0)
            return -1;
        if (ki.smem_bytes > smem_limit(sm)) {
            snprintf(err, errlen, "kernel %s needs %lld bytes of shared memory; "
                     "%s allows %lld per block (use smaller tiles)",
                     m->funcs[i]->name, ki.smem_bytes, arch, smem_limit(sm));
            return -1;
        }
    }
    pthread_once(&nv_once, nv_load);
    if (!nv.lib) {
        snprintf(err, errlen, "NVRTC not found (libnvrtc.so): install the CUDA "
                 "toolkit");
        return -1;
    }
    bool cubin = real && !want_ptx;
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s_%d%s",
             cubin ? "sm" : "compute", sm, sfx);
    const char *opts[8];
    int nopt = 0;
    opts[nopt++] = archopt;
    opts[nopt++] = "--std=c++17";
    if (bk_gpu_nofma())
        opts[nopt++] = "--fmad=false";
    if (nv.include[0])
        opts[nopt++] = nv.include;
    nvrtcProgram prog;
    nvrtcResult rc = nv.create(&prog, src, "blkc.cu", 0, NULL, NULL);
    if (rc) {
        snprintf(err, errlen, "NVRTC: %s", nv.errstr(rc));
        return -1;
    }
    rc = nv.compile(prog, nopt, opts);
    if (rc) {
        size_t ln = 0;
        char *log = NULL;
        if (!nv.log_size(prog, &ln) && ln && (log = malloc(ln + 1))) {
            nv.log(prog, log);
            log[ln] = 0;
            for (char *q = log; *q; q++)
                if (*q == '\n' && q[1])
                    *q = ' ';
        }
        snprintf(err, errlen, "NVRTC (%s): %s: %s", archopt + 19, nv.errstr(rc),
                 log ? log : "");
        free(log);
        nv.destroy(&prog);
        return -1;
    }
    size_t n = 0;
    rc = cubin ? nv.cubin_size(prog, &n) : nv.ptx_size(prog, &n);
    char *bin = rc ? NULL : malloc(n ? n : 1);
    if (!bin || (cubin ? nv.cubin(prog, bin) : nv.ptx(prog, bin))) {
        free(bin);
        nv.destroy(&prog);
        snprintf(err, errlen, "NVRTC: could not read the %s", cubin ? "cubin" : "PTX");
        return -1;
    }
    if (!cubin && n && bin[n - 1] == 0)
        n--; /* text: DslBuf adds its own NUL */
    dsl_buf_put(out, bin, n);
    free(bin);
    nv.destroy(&prog);
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ backend */

static const char *const cuda_stages[] = {"gpu-ir", "cuda", "ptx", "cubin", NULL};

static bool cuda_stage_is_text(const char *stage)
{
    return !strcmp(stage, "cuda") || !strcmp(stage, "ptx") || !strcmp(stage, "gpu-ir");
}

static int cuda_emit(const IrModule *m, const BkOptions *o, const char *stage,
                     DslBuf *out, char *err, size_t errlen)
{
    const char *arch = o && o->arch ? o->arch : "sm_80";
    if (!stage)
        stage = "cubin";
    if (strcmp(stage, "cuda") && strcmp(stage, "ptx") && strcmp(stage, "cubin") &&
        strcmp(stage, "gpu-ir")) {
        snprintf(err, errlen, "cuda: unknown stage '%s' (gpu-ir, cuda, ptx, cubin)", stage);
        return -1;
    }
    if (!strcmp(stage, "gpu-ir"))
        return bk_gpu_emit_gpu_ir(m, &bk_gpu_cuda_dialect, arch, out, err, errlen);
    if (!strcmp(stage, "cuda"))
        return bk_gpu_emit_module(m, &bk_gpu_cuda_dialect, arch, out, err, errlen);
    DslBuf src = {0};
    if (bk_gpu_emit_module(m, &bk_gpu_cuda_dialect, arch, &src, err, errlen) < 0) {
        dsl_buf_free(&src);
        return -1;
    }
    int rc = nvrtc_compile(m, src.data ? src.data : "", arch,
                           !strcmp(stage, "ptx"), out, err, errlen);
    dsl_buf_free(&src);
    return rc;
}

const BkBackend bk_cuda_backend = {
    "cuda", cuda_stages, "cubin", cuda_stage_is_text, cuda_emit,
};
