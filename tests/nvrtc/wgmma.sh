#!/usr/bin/env bash
# wgmma.sh BLKC SRCDIR — the dots on wgmma (--arch=sm_90a, backends/gpu/
# gpu_wgmma.c) through NVRTC and ptxas: tests/emu/twgmma.blk and
# examples/matmul.blk at 64 x 64 (warps 4), 128 x 128 (warps 4: 2 m-blocks
# per warpgroup) and 128 x 128 x 64 (warps 8: 2 warpgroups) give PTX for
# compute_90a with mt x K / 16 wgmma.mma_async of the right shape, that
# ptxas -arch=sm_90a assembles spilling no more than the mma.sync code of
# compute_90 (which has no wgmma; the generic 64 x 64 kernels, without
# launch facts, spill on both), and (the first) a cubin for sm_90a. fp8 (twg_e4m3,
# twg_f8mix: m64nNk32 .e4m3 / .e5m2, K / 32 per m-block) must not spill at
# all (compute_90 has no fp8 tensor-core path here: the FMA loop). Flash
# attention (examples/flash_attention.blk f16, tests/emu/tflash.blk bf16):
# both dots on wgmma, the second with A from registers ("{%r..}" in the
# PTX), no more spills than mma.sync, in one loop body and split at the
# bounds mask (twice the counts); with the KV ring of a launch (nvcc
# needed: K and V by TMA, or cp.async with BLKC_GPU_NOTMA=1) the p v group
# kept in flight across the back edge for stages >= 3, no spills; the TMA
# ring warp-specialized and persistent (the tile loops in the CUDA C, no
# "wgmma ... serialized"; q by TMA) but with BLKC_GPU_NOWS=1 /
# BLKC_GPU_NOQKPIPE=1.
# Exit 77 without NVRTC or ptxas.
set -u
BLKC=$1 SRC=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-wgmma.XXXXXX")
trap 'rm -rf "$T"' EXIT
export BLKC_CACHE_DIR=$T/cache
PTXAS=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
[ -x "$PTXAS" ] || { echo "skip: no ptxas"; exit 77; }
fails=0
# FILE ENTRY "DEFINES" SHAPE COUNT
one() {
  local f=$1 k=$2 d=$3 shape=$4 want=$((${5} * ${X:-1})) what
  what="$k $d${X:+ (split: x$X)}"
  # shellcheck disable=SC2086
  if ! "$BLKC" compile "$f" --entry=$k $d --target=cuda --arch=compute_90a --emit=ptx >"$T/p.ptx" 2>"$T/err"; then
    grep -q "NVRTC not found" "$T/err" && { echo "skip: $(cat "$T/err")"; exit 77; }
    echo "FAIL $what: $(cat "$T/err")"; fails=$((fails + 1)); return
  fi
  local n
  n=$(grep -c "wgmma.mma_async.sync.aligned.$shape" "$T/p.ptx")
  if [ "$n" != "$want" ]; then
    echo "FAIL $what: $n wgmma.mma_async.$shape in the PTX, want $want"; fails=$((fails + 1)); return
  fi
  if ! "$PTXAS" -v -arch=sm_90a "$T/p.ptx" -o /dev/null >"$T/v" 2>&1; then
    echo "FAIL $what: ptxas -arch=sm_90a: $(cat "$T/v")"; fails=$((fails + 1)); return
  fi
  # the cubin (NVRTC's own ptxas on the same PTX) for the first case only:
  # `blkc compile -o K.cubin`; nvrtc_blk compiles every kernel of twgmma.blk
  # and the examples to sm_90a cubins
  # shellcheck disable=SC2086
  if [ -z "${cubin_done:-}" ] && { ! "$BLKC" compile "$f" --entry=$k $d --target=cuda --arch=sm_90a -o "$T/k.cubin" >"$T/err" 2>&1 ||
     [ ! -s "$T/k.cubin" ]; }; then
    echo "FAIL $what: cubin for sm_90a: $(cat "$T/err")"; fails=$((fails + 1)); return
  fi
  cubin_done=1
  # shellcheck disable=SC2086
  "$BLKC" compile "$f" --entry=$k $d --target=cuda --arch=compute_90 --emit=ptx >"$T/q.ptx" 2>&1
  if grep -q wgmma "$T/q.ptx"; then
    echo "FAIL $what: wgmma in the compute_90 PTX"; fails=$((fails + 1)); return
  fi
  "$PTXAS" -v -arch=sm_90 "$T/q.ptx" -o /dev/null >"$T/w" 2>&1
  local sa sb
  sa=$(grep -o '[0-9]* bytes spill stores' "$T/v" | grep -o '^[0-9]*')
  sb=$(grep -o '[0-9]* bytes spill stores' "$T/w" | grep -o '^[0-9]*')
  [ "${NOSPILL:-}" ] && sb=0
  if [ "${sa:-x}" -gt "${sb:-0}" ] 2>/dev/null || [ -z "$sa" ]; then
    echo "FAIL $what: sm_90a spills ${sa:-?} bytes, the mma.sync code ${sb:-?}"; fails=$((fails + 1)); return
  fi
  local rs
  rs=$(grep -c "wgmma.mma_async.sync.aligned.*}, {%r" "$T/p.ptx")
  if [ "$rs" != "$((${RS:-0} * ${X:-1}))" ]; then
    echo "FAIL $what: $rs wgmma.mma_async with A from registers, want $((${RS:-0} * ${X:-1}))"; fails=$((fails + 1)); return
  fi
  echo "ok $what: $n wgmma.mma_async.$shape ($rs with A from registers), $(grep -o 'Used [0-9]* registers' "$T/v"), spills $sa bytes (mma.sync: $sb)"
}
F=$SRC/tests/emu/twgmma.blk
for k in twg_bf16 twg_f16 twg_bt; do
  t=$([ $k = twg_f16 ] && echo f16 || echo bf16)
  one "$F" $k "" "m64n64k16.f32.$t.$t" 2
  one "$F" $k "-D BM=128 -D BN=128" "m64n128k16.f32.$t.$t" 4
  one "$F" $k "-D BM=128 -D BN=128 -D BK=64 -D W=8" "m64n128k16.f32.$t.$t" 4
done
NOSPILL=1
one "$F" twg_e4m3 "" "m64n64k32.f32.e4m3.e4m3" 2
one "$F" twg_e4m3 "-D BM=128 -D BN=128 -D BK=128 -D W=8" "m64n128k32.f32.e4m3.e4m3" 4
one "$F" twg_f8mix "-D BM=128 -D BN=128" "m64n128k32.f32.e4m3.e5m2" 4
NOSPILL=
one "$SRC/examples/matmul.blk" matmul "" "m64n64k16.f32.f16.f16" 2
one "$SRC/examples/matmul.blk" matmul "-D BM=128 -D BN=128" "m64n128k16.f32.f16.f16" 4
# flash attention: both dots on wgmma, K / 16 each per KV block (S =
# q k^T: K = D, from shared memory; acc += p v: K = BN, A from registers)
# In one loop body (BLKC_GPU_NOLOOPSPLIT=1), then split at the bounds
# mask `cols < S` (gpu_split.c): the KV step's body twice, X = 2
FA=$SRC/examples/flash_attention.blk
for x in 1 2; do
  export BLKC_GPU_NOLOOPSPLIT=$((2 - x)) X=$x
  [ $x = 1 ] && X=
  RS=4 one "$FA" flash_attention "" "m64n64k16.f32.f16.f16" 8
  RS=4 one "$FA" flash_attention "-D CAUSAL=true -D D=128" "m64n128k16.f32.f16.f16" 4
  RS=2 one "$SRC/tests/emu/tflash.blk" tflash_bf16 "-D BN=32" "m64n.*k16.f32.bf16.bf16" 6
done
unset BLKC_GPU_NOLOOPSPLIT X
# flash attention with its KV ring (the launch's facts: the variant
# cuda-emu as sm_90a compiles, kept by BLKC_GPU_DUMP) through nvcc for
# sm_90a: with stages >= 3 the p v group is deferred behind the next
# step's q k^T (gpu_wgmma.c qk_plan): 3 wgmma.wait_group 0 (at p v's
# var.set in the two bodies of the split loop, one after it) and 2
# wgmma.wait_group 1 (q k^T's: p v stays in flight under the softmax);
# BLKC_GPU_NOQKPIPE=1: p v in flight across the back edge (keep_plan), 3
# wait_group 0 (the S dot's) and none of 1; 4 and 0 with
# BLKC_GPU_NOWGKEEP=1; no spills, no "wgmma ... serialized" from ptxas.
# The launch's tensors allow tensor maps: K and V come by TMA (rank-3
# maps: cp.async.bulk.tensor.3d in the PTX, 2 per K / V tile of 256-byte
# rows; rank 4 for tflash_bshd); BLKC_GPU_NOTMA=1 keeps the cp.async ring
# (none of them), the registers ptxas reports beside
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
# FILE ENTRY "DEFINES" ENV WAITS0 WAITS1 [TENSOR-COPY DIM: 3, 4 or 0 = none]
flash_ring() {
  local f=$1 k=$2 d=$3 en=$4 want=$5 want1=$6 dim=${7:-3} what="$2 $3 $4 (ring)" sz="Z=1 S=130"
  [ "$k" = tflash_bshd ] && sz="B=1 H=2 S=130"
  rm -rf "$T/dump"; mkdir -p "$T/dump"
  # shellcheck disable=SC2086
  if ! env $en BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP="$T/dump" BLKC_EMU_ARCH=sm_90a timeout 300 \
       "$BLKC" run "$f" --entry=$k $d $sz scale=0.125 --random --device=cuda-emu >"$T/err" 2>&1; then
    echo "FAIL $what: cuda-emu: $(cat "$T/err")"; fails=$((fails + 1)); return
  fi
  local cu
  cu=$(ls "$T"/dump/*.cu | sort -t. -k2 -n | tail -1)
  if ! "$NVCC" -ptx -arch=sm_90a -o "$T/r.ptx" "$cu" >"$T/err" 2>&1 ||
     ! "$PTXAS" -v -arch=sm_90a "$T/r.ptx" -o /dev/null >"$T/v" 2>&1; then
    echo "FAIL $what: nvcc / ptxas: $(cat "$T/err" "$T/v")"; fails=$((fails + 1)); return
  fi
  local n0 n1 sp nt na nr wr=0 pe=0 np
  # and persistent (gpu_persist.c: the producer's and the consumers' tile
  # loops) unless BLKC_GPU_NOWS=1 or BLKC_GPU_NOQKPIPE=1 (keep_plan)
  [ "$dim" != 0 ] && ! grep -q 'NOWS=1\|NOQKPIPE=1' <<<"$en" && pe=2
  np=$(grep -c 'for (int blk_t = (int)blockIdx.x; blk_t < blk_tiles; blk_t += (int)gridDim.x) {' "$cu")
  # persistent: q by TMA too (the consumers wait on q's full mbarrier)
  [ $pe = 2 ] && ! grep -q 'blk_mbar_wait_parity(&blk_tq\[0\]' "$cu" && np=no-q-by-TMA
  # a TMA ring is warp-specialized (gpu_ws.c's top split) unless
  # BLKC_GPU_NOWS=1: the producer's setmaxnreg.dec 40, the consumers' .inc 232
  [ "$dim" != 0 ] && ! grep -q NOWS=1 <<<"$en" && wr=2
  nr=$(grep -c "setmaxnreg.dec.sync.aligned.u32 40;\|setmaxnreg.inc.sync.aligned.u32 232;" "$T/r.ptx")
  n0=$(grep -c "wgmma.wait_group.sync.aligned 0;" "$T/r.ptx")
  n1=$(grep -c "wgmma.wait_group.sync.aligned 1;" "$T/r.ptx")
  sp=$(grep -o '[0-9]* bytes spill stores' "$T/v" | grep -o '^[0-9]*')
  nt=$(grep -c "cp.async.bulk.tensor.${dim}d.shared::cluster.global.tile" "$T/r.ptx")
  na=$(grep -c "cp.async.bulk.tensor" "$T/r.ptx")
  if [ "$n0 $n1" != "$want $want1" ] || [ "${sp:-x}" != 0 ] || grep -qi serialized "$T/v" || [ "$nr" != $wr ] || [ "$np" != $pe ] ||
     { [ "$dim" = 0 ] && [ "$na" != 0 ]; } || { [ "$dim" != 0 ] && { [ "$nt" -lt 2 ] || [ "$nt" != "$na" ]; }; }; then
    echo "FAIL $what: $n0 wgmma.wait_group 0, $n1 of 1 (want $want $want1), setmaxnreg $nr (want $wr), tile loops $np (want $pe), spills ${sp:-?} bytes," \
         "$nt of $na tensor copies ${dim}-D: $(cat "$T/v")"
    fails=$((fails + 1)); return
  fi
  [ "$dim" = 0 ] && nt="the cp.async ring" || nt="$na cp.async.bulk.tensor.${dim}d"
  [ $wr = 2 ] && nt="$nt, warp-specialized (setmaxnreg 40 / 232)"
  [ $pe = 2 ] && nt="$nt, persistent"
  echo "ok $what: $n0 wgmma.wait_group 0, $n1 of 1, $nt, $(grep -o 'Used [0-9]* registers' "$T/v"), no spills"
}
if [ -x "$NVCC" ]; then
  TF=$SRC/tests/emu/tflash.blk
  flash_ring "$FA" flash_attention "" BLKC_GPU_NOWGKEEP=0 3 2
  flash_ring "$FA" flash_attention "" BLKC_GPU_NOTMA=1 3 2 0
  flash_ring "$FA" flash_attention "" BLKC_GPU_NOQKPIPE=1 3 0
  flash_ring "$FA" flash_attention "" BLKC_GPU_NOWGKEEP=1 4 0
  flash_ring "$FA" flash_attention "" BLKC_GPU_NOWS=1 3 2
  # (the switches on f16 D 64; the larger shapes with the default plan
  # only: their registers, what matters (TMA ring without warp
  # specialization: 151 / 150 / 123 at round 20; 205 / 173 / 158 on the
  # cp.async ring at round 19); warp-specialized, ptxas reports the
  # setmaxnreg ceiling, 232, or 168 at 384 threads: docs/backends.md
  # gives the consumers' own count, measured by hand)
  flash_ring "$FA" flash_attention "-D D=128" BLKC_GPU_NOWGKEEP=0 3 2
  flash_ring "$TF" tflash_bf16 "-D BM=128 -D W=8 -D D=128" BLKC_GPU_NOWGKEEP=0 3 2
  flash_ring "$TF" tflash_bf16 "-D CAUSAL=true -D BN=32 -D D=128" BLKC_GPU_NOWGKEEP=0 3 2
  flash_ring "$TF" tflash_bshd "-D D=128" BLKC_GPU_NOWGKEEP=0 3 2 4
else
  echo "skip: flash attention with its ring (no nvcc)"
fi
echo "$fails failed"
[ $fails = 0 ]
