/* blk_emu_tmap.h - cuda-emu's CUtensorMap: the 128 opaque bytes of a tensor
 * map as the emulated device reads them (a BlkEmuTmap) and
 * cuTensorMapEncodeTiled, which writes them after checking its documented
 * argument rules (CUDA Driver API 6.30 "Tensor Map Object Management"):
 * the map 64-byte aligned; rank 1..5; globalAddress 16-byte aligned;
 * globalDim[i] in 1..2^32; globalStrides[i] (bytes, dims 1..rank-1) a
 * multiple of 16 below 2^40 (in any order: the rules order none, and a
 * tensor map may walk dims of a tensor whose memory order differs);
 * boxDim[i] in 1..256, boxDim[0] * element size a multiple of 16 bytes;
 * elementStrides[i] in 1..8; swizzle NONE 0, 32B 1,
 * 64B 2, 128B 3 with the inner box no wider than the span; oobFill NONE 0
 * or NAN_REQUEST_ZERO_FMA 1 (floating types only); else
 * CUDA_ERROR_INVALID_VALUE (1); interleaved layouts CUDA_ERROR_NOT_SUPPORTED
 * (801: not modelled). Plain C, shared by the emulator (blk_emu_tma.h, C++)
 * and the runtime (runtime/gpu_emu.c builds the maps of a launch). */
#ifndef BLK_EMU_TMAP_H
#define BLK_EMU_TMAP_H

#include <stdint.h>
#include <string.h>

enum { BLK_EMU_TMAP_MAGIC = 0x544d4150, BLK_EMU_TMAP_BYTES = 128 };
typedef struct BlkEmuTmap {
    unsigned magic;
    unsigned char dtype, rank, swizzle, oobfill, esize;
    unsigned long long addr;
    unsigned long long dim[5], stride[5]; /* bytes; stride[0] = the element size */
    unsigned short box[5];
    unsigned char estr[5];
} BlkEmuTmap;

/* CUtensorMapDataType 0..12: element bytes; 6.. are floating */
static const unsigned char blk_emu_tmap_esize[13] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

/* cuTensorMapEncodeTiled into the 128 bytes at map: 0, 1 or 801 */
static inline int blk_emu_tmap_encode(void *map, int dtype, unsigned rank, void *addr,
                                      const unsigned long long *dim,
                                      const unsigned long long *strides, const unsigned *box,
                                      const unsigned *estr, int interleave, int swizzle,
                                      int l2promo, int oobfill)
{
    if (!map || (uintptr_t)map % 64 || dtype < 0 || dtype > 12 || rank < 1 || rank > 5 ||
        !addr || (uintptr_t)addr % 16 || !dim || !box || !estr || (rank > 1 && !strides) ||
        interleave < 0 || interleave > 2 || swizzle < 0 || swizzle > 3 || l2promo < 0 ||
        l2promo > 3 || oobfill < 0 || oobfill > 1 || (oobfill && dtype < 6))
        return 1;
    if (interleave)
        return 801;
    BlkEmuTmap t;
    memset(&t, 0, sizeof t);
    t.magic = BLK_EMU_TMAP_MAGIC;
    t.dtype = (unsigned char)dtype;
    t.rank = (unsigned char)rank;
    t.swizzle = (unsigned char)swizzle;
    t.oobfill = (unsigned char)oobfill;
    t.esize = blk_emu_tmap_esize[dtype];
    t.addr = (unsigned long long)(uintptr_t)addr;
    for (unsigned i = 0; i < rank; i++) {
        if (dim[i] == 0 || dim[i] > (1ull << 32) || box[i] == 0 || box[i] > 256 ||
            estr[i] == 0 || estr[i] > 8)
            return 1;
        if (i > 0 && (strides[i - 1] % 16 || strides[i - 1] >= (1ull << 40)))
            return 1;
        t.dim[i] = dim[i];
        t.stride[i] = i ? strides[i - 1] : t.esize;
        t.box[i] = (unsigned short)box[i];
        t.estr[i] = (unsigned char)estr[i];
    }
    const unsigned inner = box[0] * t.esize;
    if (inner % 16 || (swizzle && inner > (16u << swizzle)))
        return 1;
    memset(map, 0, BLK_EMU_TMAP_BYTES);
    memcpy(map, &t, sizeof t);
    return 0;
}

#endif
