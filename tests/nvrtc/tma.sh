#!/usr/bin/env bash
# tma.sh BLKC SRCDIR — the CUDA prelude's tensor-memory wrappers
# (backends/cuda/cuda.c: mbarrier init / arrive / arrive.expect_tx /
# expect_tx / try_wait.parity, cp.async.bulk.tensor 1-5-D loads and stores,
# bulk commit / wait_group[.read]) in a hand-written kernel appended to the
# generated CUDA C of tests/emu/twgmma.blk: nvcc gives PTX for compute_90
# and compute_90a holding each instruction, which ptxas -arch=sm_90 /
# sm_90a assembles. Their emulation (runtime/emu/blk_emu_tma.h) is checked
# by emu_tma. Then a generated TMA kernel (backends/gpu/gpu_tma.c): the
# variant cuda-emu as sm_90a compiles for a launch whose strides allow
# tensor maps (BLKC_GPU_DUMP keeps its CUDA C) — 128 x 128 tiles on 4
# warps: A in 16-row boxes, B in 2 panels — through nvcc and ptxas for
# sm_90a: its cp.async.bulk.tensor.2d, mbarrier.try_wait.parity,
# wgmma.mma_async and wgmma.wait_group 1 (a group in flight across k
# steps) in the PTX, no spills, no "wgmma ... serialized" from ptxas; the
# same for the cp.async ring's variant (BLKC_GPU_NOTMA=1); the
# warp-specialized variant (gpu_ws.c) on 4 and 8 consumer warps:
# setmaxnreg and the consumers' named barrier, no spills (and none of
# that with BLKC_GPU_NOWS=1), persistent (gpu_persist.c: the producer's
# and the consumers' tile loops) unless BLKC_GPU_NOPERSIST=1. Exit 77
# without nvcc or ptxas.
set -u
BLKC=$1 SRC=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-tma.XXXXXX")
trap 'rm -rf "$T"' EXIT
export BLKC_CACHE_DIR=$T/cache
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA/bin/ptxas" ] && [ -x "$CUDA/bin/nvcc" ] || { echo "skip: no nvcc / ptxas"; exit 77; }
"$BLKC" compile "$SRC/tests/emu/twgmma.blk" --entry=twg_bf16 --target=cuda --arch=sm_90a \
  --emit=cuda >"$T/k.cu" || { echo "FAIL: blkc --emit=cuda"; exit 1; }
cat >>"$T/k.cu" <<'CU'
extern "C" __global__ void __launch_bounds__(128) tma_probe(const __grid_constant__ BlkTensorMap a,
                                                            const __grid_constant__ BlkTensorMap b,
                                                            const __grid_constant__ BlkTensorMap c,
                                                            float *out)
{
    BLK_DYNAMIC_SMEM(sm);
    unsigned long long *bar = (unsigned long long *)sm;
    if (threadIdx.x == 0) {
        blk_mbar_init(bar, 1);
        blk_fence_mbar_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        blk_mbar_expect_tx(bar, 1024);
        blk_mbar_arrive_expect_tx(bar, 8192 + 1024);
        blk_tma_load_1d(sm + 1024, &a, 0, bar);
        blk_tma_load_2d(sm + 2048, &b, 64, 0, bar);
        blk_tma_load_3d(sm + 10240, &c, 0, 4, 2, bar);
        blk_tma_load_4d(sm + 10240, &c, 0, 4, 2, 1, bar);
        blk_tma_load_5d(sm + 10240, &c, 0, 4, 2, 1, 3, bar);
    }
    blk_mbar_wait_parity(bar, 0);
    out[threadIdx.x] = ((float *)(sm + 1024))[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        blk_fence_proxy_async();
        blk_tma_store_1d(&a, 32, sm + 1024);
        blk_tma_store_2d(&b, 0, 8, sm + 2048);
        blk_tma_store_3d(&c, 0, 0, 1, sm + 10240);
        blk_tma_store_4d(&c, 0, 0, 1, 2, sm + 10240);
        blk_tma_store_5d(&c, 0, 0, 1, 2, 3, sm + 10240);
        blk_bulk_commit();
        blk_bulk_wait_read<0>();
        blk_bulk_wait<0>();
        blk_mbar_arrive(bar);
    }
}
CU
fails=0
for a in 90 90a; do
  if ! "$CUDA/bin/nvcc" -arch=compute_$a -ptx "$T/k.cu" -o "$T/k$a.ptx" >"$T/err" 2>&1; then
    echo "FAIL compute_$a: nvcc: $(head -20 "$T/err")"; fails=$((fails + 1)); continue
  fi
  for ins in mbarrier.init.shared::cta.b64 fence.mbarrier_init.release.cluster \
             mbarrier.arrive.shared::cta.b64 mbarrier.arrive.expect_tx.shared::cta.b64 \
             mbarrier.expect_tx.relaxed.cta.shared::cta.b64 mbarrier.try_wait.parity.shared::cta.b64 \
             cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group \
             cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group \
             cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group \
             cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group \
             cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group \
             cp.async.bulk.commit_group "cp.async.bulk.wait_group.read 0" "cp.async.bulk.wait_group 0"; do
    grep -qF "$ins" "$T/k$a.ptx" || { echo "FAIL compute_$a: no $ins in the PTX"; fails=$((fails + 1)); }
  done
  if ! "$CUDA/bin/ptxas" -arch=sm_$a "$T/k$a.ptx" -o "$T/k$a.cubin" >"$T/err" 2>&1; then
    echo "FAIL sm_$a: ptxas: $(head -20 "$T/err")"; fails=$((fails + 1)); continue
  fi
  echo "ok sm_$a: ptxas assembles the mbarrier and cp.async.bulk.tensor wrappers"
done
mkdir -p "$T/dump"
if ! BLKC_GPU_DUMP=$T/dump BLKC_EMU_ARCH=sm_90a "$BLKC" run "$SRC/tests/emu/twgmma.blk" --entry=twg_bf16 \
     -D BM=128 -D BN=128 M=144 N=144 K=144 --random --device=cuda-emu >"$T/err" 2>&1; then
  echo "FAIL: twg_bf16 on cuda-emu as sm_90a: $(cat "$T/err")"; fails=$((fails + 1))
else
  f=$(grep -l 'BlkTensorMap blk_tm' "$T"/dump/*.cu | head -1)
  if [ -z "$f" ]; then
    echo "FAIL: no TMA variant among $(ls "$T/dump")"; fails=$((fails + 1))
  elif ! "$CUDA/bin/nvcc" -arch=compute_90a -ptx "$f" -o "$T/g.ptx" >"$T/err" 2>&1 ||
       ! "$CUDA/bin/ptxas" -v -arch=sm_90a "$T/g.ptx" -o "$T/g.cubin" >"$T/v" 2>&1; then
    echo "FAIL: the TMA kernel through nvcc / ptxas: $(grep -i error "$T/err" "$T/v" | head -5)"
    fails=$((fails + 1))
  else
    nb=$(grep -c 'cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes' "$T/g.ptx")
    nw=$(grep -c 'mbarrier.try_wait.parity' "$T/g.ptx")
    nm=$(grep -c 'wgmma.mma_async' "$T/g.ptx")
    nw1=$(grep -c 'wgmma.wait_group.sync.aligned 1;' "$T/g.ptx")
    if [ "$nb" -lt 10 ] || [ "$nw" -lt 1 ] || [ "$nm" -lt 4 ] || [ "$nw1" -lt 1 ] ||
       ! grep -q ' 0 bytes spill stores' "$T/v" || grep -qi 'serializ' "$T/v"; then
      echo "FAIL: the TMA kernel: $nb tensor copies, $nw mbarrier waits, $nm wgmma, $nw1 wait_group 1; $(grep -i 'spill\|serializ' "$T/v")"
      fails=$((fails + 1))
    else
      echo "ok the TMA kernel of twg_bf16 128x128: $nb cp.async.bulk.tensor, $nm wgmma.mma_async, $nw1 wgmma.wait_group 1 (a group in flight across k steps), $(grep -o 'Used [0-9]* registers' "$T/v"), no spills, no wgmma serialization"
    fi
  fi
fi
# warp specialization (backends/gpu/gpu_ws.c): the TMA kernel above is the
# warp-specialized one; here 4 and 8 consumer warps (256 / 384 threads)
# and BLKC_GPU_NOWS=1: setmaxnreg.dec 40 / .inc 232 and the consumers'
# named barrier in the PTX (none with NOWS), no spills, the registers
# ptxas reports (-v: the count at entry, which setmaxnreg then moves)
# The warp-specialized kernels are persistent (gpu_persist.c: the tile
# loops, the grid parameters); BLKC_GPU_NOPERSIST=1 keeps a block per
# program; 128 x 256 x 64 on 4 stages (192 KiB of ring: sm_90a's limit)
# is benchmarks/gpu_check.sh's Hopper GEMM.
# TS 1: the epilogue by TMA from a staging tile (the 128 x 128 f32 tile;
# 128 x 256 leaves it no room beside the ring): its stores and
# wait_group.read in the PTX; BLKC_GPU_NOTMASTORE=1 none.
# NAME|ENV|DEFINES|WS|PERSIST|TS
for c in "ws 4 warps|-|-D BM=128 -D BN=128|1|1|1" "ws 8 warps|-|-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=3|1|1|0" \
         "ws 8 warps S=4|-|-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=4|1|1|0" \
         "NOTMASTORE 4 warps|BLKC_GPU_NOTMASTORE=1|-D BM=128 -D BN=128|1|1|0" \
         "NOPERSIST 8 warps|BLKC_GPU_NOPERSIST=1|-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=3|1|0|0" \
         "NOWS 8 warps|BLKC_GPU_NOWS=1|-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=3|0|0|0"; do
  IFS='|' read -r name e d ws pe ts <<<"$c"
  rm -rf "$T/dump"; mkdir -p "$T/dump"
  [ "$e" != - ] && export "$e"
  # shellcheck disable=SC2086
  BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump BLKC_EMU_ARCH=sm_90a "$BLKC" run "$SRC/tests/emu/twgmma.blk" \
    --entry=twg_bf16 $d M=144 N=272 K=272 --random --device=cuda-emu >"$T/err" 2>&1
  rc=$?
  [ "$e" != - ] && unset "${e%%=*}"
  f=$(grep -l 'BlkTensorMap blk_tm' "$T"/dump/*.cu | head -1)
  if [ $rc != 0 ] || [ -z "$f" ] || ! "$CUDA/bin/nvcc" -arch=compute_90a -ptx "$f" -o "$T/w.ptx" >"$T/err2" 2>&1 ||
     ! "$CUDA/bin/ptxas" -v -arch=sm_90a "$T/w.ptx" -o "$T/w.cubin" >"$T/v" 2>&1; then
    echo "FAIL $name: $(cat "$T/err") $(grep -i error "$T/err2" "$T/v" 2>/dev/null | head -5)"; fails=$((fails + 1)); continue
  fi
  nd=$(grep -c 'setmaxnreg.dec.sync.aligned.u32 40;' "$T/w.ptx")
  ni=$(grep -c 'setmaxnreg.inc.sync.aligned.u32 232;' "$T/w.ptx")
  nn=$(grep -Ec "bar.sync[[:space:]]+(%r[0-9]+|1), " "$T/w.ptx")
  np=$(grep -c 'for (int blk_t = (int)blockIdx.x; blk_t < blk_tiles; blk_t += (int)gridDim.x) {' "$f")
  nts=$(grep -c 'cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group' "$T/w.ptx")
  if ! grep -q ' 0 bytes spill stores' "$T/v" || grep -qi 'serializ\|C7508' "$T/v" ||
     { [ "$ws" = 1 ] && { [ "$nd" -lt 1 ] || [ "$ni" -lt 1 ] || [ "$nn" -lt 1 ]; }; } ||
     { [ "$ws" = 0 ] && [ "$((nd + ni))" != 0 ]; } ||
     { [ "$pe" = 1 ] && [ "$np" != 2 ]; } || { [ "$pe" = 0 ] && [ "$np" != 0 ]; } ||
     { [ "$ts" = 1 ] && { [ "$nts" -lt 4 ] || ! grep -q 'cp.async.bulk.wait_group.read 0' "$T/w.ptx"; }; } ||
     { [ "$ts" = 0 ] && [ "$nts" != 0 ]; }; then
    echo "FAIL $name: setmaxnreg dec $nd inc $ni, named barriers $nn, tile loops $np, TMA stores $nts; $(grep -i 'spill\|serializ\|C7508\|registers' "$T/v")"
    fails=$((fails + 1))
  else
    echo "ok $name: setmaxnreg dec $nd / inc $ni, named barriers $nn, $np tile loops, $nts TMA stores, $(grep -o 'Used [0-9]* registers' "$T/v"), no spills"
  fi
done
# the cp.async ring's variant (BLKC_GPU_NOTMA=1) with its group in flight
rm -rf "$T/dump"; mkdir -p "$T/dump"
if ! BLKC_GPU_NOTMA=1 BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump BLKC_EMU_ARCH=sm_90a "$BLKC" run \
     "$SRC/tests/emu/twgmma.blk" --entry=twg_bf16 -D BM=128 -D BN=128 M=144 N=144 K=144 --random \
     --device=cuda-emu >"$T/err" 2>&1; then
  echo "FAIL: twg_bf16 BLKC_GPU_NOTMA=1 on cuda-emu as sm_90a: $(cat "$T/err")"; fails=$((fails + 1))
else
  f=$(grep -l 'cp.async ring load' "$T"/dump/*.cu | head -1)
  if [ -z "$f" ] || ! "$CUDA/bin/nvcc" -arch=compute_90a -ptx "$f" -o "$T/h.ptx" >"$T/err" 2>&1 ||
     ! "$CUDA/bin/ptxas" -v -arch=sm_90a "$T/h.ptx" -o "$T/h.cubin" >"$T/v" 2>&1; then
    echo "FAIL: the cp.async ring kernel through nvcc / ptxas: ${f:-none} $(grep -i error "$T/err" "$T/v" | head -5)"
    fails=$((fails + 1))
  elif [ "$(grep -c 'wgmma.wait_group.sync.aligned 1;' "$T/h.ptx")" -lt 1 ] ||
       ! grep -q ' 0 bytes spill stores' "$T/v" || grep -qi 'serializ' "$T/v"; then
    echo "FAIL: the cp.async ring kernel: no wait_group 1, spills or serialized wgmma: $(grep -i 'spill\|serializ' "$T/v")"
    fails=$((fails + 1))
  else
    echo "ok the cp.async ring kernel of twg_bf16 128x128: wgmma.wait_group 1 in the loop, $(grep -o 'Used [0-9]* registers' "$T/v"), no spills, no wgmma serialization"
  fi
fi
# fp8: the TMA variant of twg_e4m3 128 x 128 x 64 (one-byte tensor maps,
# boxes of 64-byte rows, m64n128k32 .e4m3): through nvcc and ptxas, no
# spills, no wgmma serialization
rm -rf "$T/dump"; mkdir -p "$T/dump"
if ! BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump BLKC_EMU_ARCH=sm_90a "$BLKC" run "$SRC/tests/emu/twgmma.blk" \
     --entry=twg_e4m3 -D BM=128 -D BN=128 M=144 N=144 K=160 --random --device=cuda-emu >"$T/err" 2>&1; then
  echo "FAIL: twg_e4m3 on cuda-emu as sm_90a: $(cat "$T/err")"; fails=$((fails + 1))
else
  f=$(grep -l 'BlkTensorMap blk_tm' "$T"/dump/*.cu | head -1)
  if [ -z "$f" ] || ! "$CUDA/bin/nvcc" -arch=compute_90a -ptx "$f" -o "$T/e.ptx" >"$T/err" 2>&1 ||
     ! "$CUDA/bin/ptxas" -v -arch=sm_90a "$T/e.ptx" -o "$T/e.cubin" >"$T/v" 2>&1; then
    echo "FAIL: the fp8 TMA kernel through nvcc / ptxas: ${f:-none} $(grep -i error "$T/err" "$T/v" | head -5)"
    fails=$((fails + 1))
  elif [ "$(grep -c 'wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3' "$T/e.ptx")" -lt 4 ] ||
       [ "$(grep -c 'cp.async.bulk.tensor.2d' "$T/e.ptx")" -lt 9 ] ||
       ! grep -q ' 0 bytes spill stores' "$T/v" || grep -qi 'serializ' "$T/v"; then
    echo "FAIL: the fp8 TMA kernel: e4m3 wgmma / tensor copies missing, spills or serialized: $(grep -i 'spill\|serializ' "$T/v")"
    fails=$((fails + 1))
  else
    echo "ok the TMA kernel of twg_e4m3 128x128: m64n128k32.f32.e4m3.e4m3, $(grep -o 'Used [0-9]* registers' "$T/v"), no spills, no wgmma serialization"
  fi
fi
echo "$fails failed"
[ $fails = 0 ]
