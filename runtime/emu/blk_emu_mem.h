/* blk_emu_mem.h - memory-access counts of blk_emu.h (--stats): with
 * BLK_EMU_MEMSTATS the module is compiled by clang++ with
 * -fsanitize=thread and none of ThreadSanitizer's runtime (atomics,
 * and function entry/exit not instrumented); the
 * __tsan_readN / __tsan_writeN hooks below receive every load and store of
 * the kernel code with its address and return address, __tsan_memcpy /
 * memmove / memset its block copies (struct copies: a read and a write of
 * up to 16 bytes per 16-byte piece). The emulation's
 * own functions are not instrumented (the no_sanitize pragma of
 * blk_emu.h). An access inside the block's shared memory counts as shared,
 * one inside a tensor argument's extent as global; anything else (locals,
 * the emulator's state) is ignored. Accesses are grouped into warp-wide
 * instructions by (warp, return address, per-lane occurrence number) at
 * the end of each block: a shared group costs the wavefronts of the
 * bank-conflict rule (blk_emu_wavefronts), a global group the distinct
 * 32-byte sectors it touches (L2 traffic); sectors never touched before
 * in the launch are counted apart (gmem_unique: DRAM traffic when the L2
 * holds the reuse). cp.async is logged by the wrapper itself
 * (its global read at issue, its shared write when it lands). Counting
 * changes no result. Included by blk_emu.h only. */
#ifndef BLK_EMU_MEM_H
#define BLK_EMU_MEM_H

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

struct BlkEmuAcc {
    uintptr_t pc;
    unsigned k;        /* occurrence of pc in this thread, this block */
    unsigned char size, shared;
    long long addr;    /* shared: offset in the block's buffer; global: address */
};
struct BlkEmuLog {
    std::unordered_map<uintptr_t, unsigned> occ;
    std::vector<BlkEmuAcc> v;
};
BLK_EMU_VAR BlkEmuLog *blk_emu_log;                  /* the running thread's (blk_emu_resume) */
BLK_EMU_VAR std::vector<BlkEmuLog> blk_emu_logs;     /* per thread of the block */
BLK_EMU_VAR std::unordered_set<long long> blk_emu_seen; /* global sectors of this launch */
BLK_EMU_VAR long long blk_emu_glo[64], blk_emu_ghi[64];
BLK_EMU_VAR int blk_emu_nglobal;

static inline void blk_emu_mem_thread(int t)
{
    blk_emu_log = t < 0 ? nullptr : &blk_emu_logs[(size_t)t];
}

BLK_EMU_FN void blk_emu_note(uintptr_t pc, long long a, int size, bool shared)
#if BLK_EMU_SPLIT != 1
{
    BlkEmuLog *l = blk_emu_log;
    if (!l)
        return;
    BlkEmuAcc x;
    x.pc = pc;
    x.k = l->occ[pc]++;
    x.size = (unsigned char)size;
    x.shared = shared;
    x.addr = a;
    l->v.push_back(x);
}
#else
;
#endif

static inline void blk_emu_access(const void *p, int size, void *ret)
{
    const long long a = (long long)(uintptr_t)p;
    const long long s0 = (long long)(uintptr_t)blk_emu_smem_base;
    if (!blk_emu_log)
        return;
    if (a >= s0 && a < s0 + blk_emu_m->smem_bytes) {
        blk_emu_note((uintptr_t)ret, a - s0, size, true);
        return;
    }
    for (int i = 0; i < blk_emu_nglobal; i++)
        if (a >= blk_emu_glo[i] && a < blk_emu_ghi[i]) {
            blk_emu_note((uintptr_t)ret, a, size, false);
            return;
        }
}

/* the extent of a tensor argument (other arguments: nothing) */
template <class T> static inline void blk_emu_reg(const T &) {}
template <class T, int R> static inline void blk_emu_reg(const BlkTensor<T, R> &t)
{
    long long lo = 0, hi = 0;
    for (int d = 0; d < R; d++) {
        if (t.shape[d] <= 0)
            return;
        const long long e = (t.shape[d] - 1) * t.stride[d];
        (e < 0 ? lo : hi) += e;
    }
    if (blk_emu_nglobal < 64) {
        blk_emu_glo[blk_emu_nglobal] = (long long)(uintptr_t)(t.data + lo);
        blk_emu_ghi[blk_emu_nglobal++] = (long long)(uintptr_t)(t.data + hi + 1);
    }
}

/* At the end of a block (every thread done, the caller alone): the warp
 * instructions of the block's logs. */
BLK_EMU_FN void blk_emu_mem_block(BlkEmuMachine *m)
#if BLK_EMU_SPLIT != 1
{
    std::vector<std::pair<BlkEmuAcc, int>> all;
    for (int w = 0; w < m->nwarps; w++) {
        all.clear();
        for (int l = 0; l < BLK_EMU_WARP; l++)
            for (const BlkEmuAcc &x : blk_emu_logs[(size_t)(w * BLK_EMU_WARP + l)].v)
                all.push_back({x, l});
        std::sort(all.begin(), all.end(), [](const std::pair<BlkEmuAcc, int> &a,
                                             const std::pair<BlkEmuAcc, int> &b) {
            return a.first.pc != b.first.pc ? a.first.pc < b.first.pc : a.first.k < b.first.k;
        });
        for (size_t i = 0; i < all.size();) {
            size_t j = i;
            long long addr[64];
            for (int l = 0; l < 64; l++)
                addr[l] = -1;
            while (j < all.size() && all[j].first.pc == all[i].first.pc &&
                   all[j].first.k == all[i].first.k) {
                addr[all[j].second] = all[j].first.addr;
                j++;
            }
            const BlkEmuAcc &x = all[i].first;
            if (x.shared) {
                m->st.smem_wavefronts += blk_emu_wavefronts(addr, BLK_EMU_WARP, x.size < 4 ? 4 : x.size);
                m->st.smem_requests++;
            } else {
                long long sec[64 * 2];
                int ns = 0;
                for (int l = 0; l < BLK_EMU_WARP; l++) {
                    if (addr[l] < 0)
                        continue;
                    for (long long s = addr[l] / 32; s <= (addr[l] + x.size - 1) / 32; s++) {
                        bool seen = false;
                        for (int q = 0; q < ns && !seen; q++)
                            seen = sec[q] == s;
                        if (!seen && ns < 128)
                            sec[ns++] = s;
                    }
                }
                m->st.gmem_sectors += ns;
                for (int q = 0; q < ns; q++)
                    m->st.gmem_unique += blk_emu_seen.insert(sec[q]).second;
                m->st.gmem_requests++;
            }
            i = j;
        }
    }
    for (BlkEmuLog &l : blk_emu_logs) {
        l.occ.clear();
        l.v.clear();
    }
}
#else
;
#endif

#if BLK_EMU_SPLIT != 1 /* the hooks: in the runtime object of a split module */
extern "C" {
void __tsan_init(void) {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **, void *) {}
void __tsan_vptr_read(void **) {}
#define BLK_EMU_HOOK(n)                                                                      \
    void __tsan_read##n(void *p) { blk_emu_access(p, n, __builtin_return_address(0)); }      \
    void __tsan_write##n(void *p) { blk_emu_access(p, n, __builtin_return_address(0)); }     \
    void __tsan_unaligned_read##n(void *p) { blk_emu_access(p, n, __builtin_return_address(0)); } \
    void __tsan_unaligned_write##n(void *p) { blk_emu_access(p, n, __builtin_return_address(0)); }
BLK_EMU_HOOK(1)
BLK_EMU_HOOK(2)
BLK_EMU_HOOK(4)
BLK_EMU_HOOK(8)
BLK_EMU_HOOK(16)
#undef BLK_EMU_HOOK
static void blk_emu_copy_note(void *d, const void *s, size_t n, void *ret)
{
    for (size_t o = 0; o < n; o += 16) {
        const int k = (int)(n - o < 16 ? n - o : 16);
        if (s)
            blk_emu_access((const char *)s + o, k, ret);
        blk_emu_access((char *)d + o, k, (char *)ret + 1); /* the store: its own pc */
    }
}
void *__tsan_memcpy(void *d, const void *s, size_t n)
{
    blk_emu_copy_note(d, s, n, __builtin_return_address(0));
    return memcpy(d, s, n);
}
void *__tsan_memmove(void *d, const void *s, size_t n)
{
    blk_emu_copy_note(d, s, n, __builtin_return_address(0));
    return memmove(d, s, n);
}
void *__tsan_memset(void *d, int c, size_t n)
{
    blk_emu_copy_note(d, nullptr, n, __builtin_return_address(0));
    return memset(d, c, n);
}
void __tsan_read_range(void *p, unsigned long n) { blk_emu_access(p, (int)(n > 16 ? 16 : n), __builtin_return_address(0)); }
void __tsan_write_range(void *p, unsigned long n) { blk_emu_access(p, (int)(n > 16 ? 16 : n), __builtin_return_address(0)); }
}
#endif

#endif
