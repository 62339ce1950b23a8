#!/usr/bin/env bash
# nofma.sh BLKC SRCDIR — BLKC_GPU_NOFMA=1 (docs/backends.md): by default
# NVRTC contracts X * a + b into fma.rn.f32; with the switch the PTX has a
# separately rounded mul.rn / add.rn and no fma, and the module cache keeps
# the two apart (the second compile must not reuse the first). Exit 77
# without NVRTC.
set -u
BLKC=$1 SRC=$2
K=$SRC/tests/nvrtc/data/axpb.blk
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-nofma.XXXXXX")
trap 'rm -rf "$T"' EXIT
export BLKC_CACHE_DIR=$T/cache
if ! "$BLKC" compile "$K" --target=cuda --arch=sm_90 --emit=ptx >"$T/fma.ptx" 2>"$T/err"; then
  grep -q "NVRTC not found" "$T/err" && { echo "skip: $(cat "$T/err")"; exit 77; }
  echo "FAIL: compile: $(cat "$T/err")"; exit 1
fi
BLKC_GPU_NOFMA=1 "$BLKC" compile "$K" --target=cuda --arch=sm_90 --emit=ptx >"$T/nofma.ptx" 2>&1 ||
  { echo "FAIL: compile with BLKC_GPU_NOFMA=1: $(cat "$T/nofma.ptx")"; exit 1; }
fails=0
check() { if eval "$2"; then echo "ok $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
check "default: fma.rn.f32" "grep -q 'fma.rn.f32' '$T/fma.ptx'"
check "nofma: no fma" "! grep -q 'fma\.' '$T/nofma.ptx'"
check "nofma: mul.rn.f32 and add.rn.f32" "grep -q 'mul.rn.f32' '$T/nofma.ptx' && grep -q 'add.rn.f32' '$T/nofma.ptx'"
echo "$((3 - fails)) passed, $fails failed"
[ $fails = 0 ]
