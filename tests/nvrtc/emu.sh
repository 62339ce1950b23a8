#!/bin/sh
# emu.sh DRIVER — runs generated CUDA kernels on the CPU (tests/nvrtc/emu:
# shim.h, harness.cpp): vector_add and matmul_f16 stages(3), specialized
# (16-byte aligned, unit inner stride, outer strides % 16 — true of the
# harness's arguments), on the default paths and under each of
# BLKC_GPU_NOPIPE, BLKC_GPU_NOVEC, BLKC_GPU_NOSYNCELIM, BLKC_GPU_SMEM (every
# tile in shared memory: the old path); softmax too (warp
# shuffles through per-warp barriers), and emu/tchain.blk (elementwise
# chains and transposes: where barriers may and may not be left out),
# examples/matmul.blk and examples/flash_attention.blk. Checks the vector
# indexing, cp.async ring slots/prefetch indices (copies complete when
# issued) and, with real threads and barriers, the barrier elision.
# Exit 77 without a C++ compiler.
set -u
drv=$1
here=$(cd "$(dirname "$0")" && pwd)
CXX=${CXX:-c++}
command -v "$CXX" >/dev/null 2>&1 || { echo "skip: no C++ compiler"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-emu.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
for path in default BLKC_GPU_NOPIPE BLKC_GPU_NOVEC BLKC_GPU_NOSYNCELIM BLKC_GPU_SMEM; do
  for k in vector_add:0:K_VECTOR_ADD matmul_f16:3:K_MATMUL softmax:0:K_SOFTMAX \
           "$here/emu/tchain.blk:0:K_TCHAIN" "$here/../../examples/matmul.blk:0:K_EXMATMUL" \
           "$here/../../examples/flash_attention.blk:0:K_FLASH"; do
    name=${k%%:*}; rest=${k#*:}; stages=${rest%%:*}; def=${rest#*:}
    if [ "$path" = default ]; then
      "$drv" emit "$name" "$stages" "$T/k.inc" >"$T/emit.log" 2>&1
    else
      env "$path=1" "$drv" emit "$name" "$stages" "$T/k.inc" >"$T/emit.log" 2>&1
    fi || { echo "FAIL emit $name $path"; cat "$T/emit.log"; fail=1; continue; }
    if ! "$CXX" -std=c++17 -O1 -pthread -fno-strict-aliasing -w -I"$here/emu" \
         -DKFILE="\"$T/k.inc\"" -D"$def" "$here/emu/harness.cpp" -o "$T/run" \
         >"$T/cc.log" 2>&1; then
      echo "FAIL compile $name $path"; head -30 "$T/cc.log"; fail=1; continue
    fi
    "$T/run" "$path" || fail=1
  done
done
exit $fail
