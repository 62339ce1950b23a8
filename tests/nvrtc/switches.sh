#!/usr/bin/env bash
# switches.sh BLKC SRCDIR — the GPU compiler switches (docs/backends.md):
# BLKC_GPU_NOFMA=1: by default NVRTC contracts X * a + b into fma.rn.f32;
# with the switch the PTX has a separately rounded mul.rn / add.rn and no
# fma. BLKC_GPU_MINBLOCKS=N: __launch_bounds__(threads, N), which the PTX
# shows as .minnctapersm N. The module cache keeps every setting apart (each
# compile below shares one cache and must not reuse another's module).
# Exit 77 without NVRTC.
set -u
BLKC=$1 SRC=$2
K=$SRC/tests/nvrtc/data/axpb.blk
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-switches.XXXXXX")
trap 'rm -rf "$T"' EXIT
export BLKC_CACHE_DIR=$T/cache
if ! "$BLKC" compile "$K" --target=cuda --arch=sm_90 --emit=ptx >"$T/fma.ptx" 2>"$T/err"; then
  grep -q "NVRTC not found" "$T/err" && { echo "skip: $(cat "$T/err")"; exit 77; }
  echo "FAIL: compile: $(cat "$T/err")"; exit 1
fi
BLKC_GPU_NOFMA=1 "$BLKC" compile "$K" --target=cuda --arch=sm_90 --emit=ptx >"$T/nofma.ptx" 2>&1 ||
  { echo "FAIL: compile with BLKC_GPU_NOFMA=1: $(cat "$T/nofma.ptx")"; exit 1; }
for n in 2 3; do
  BLKC_GPU_MINBLOCKS=$n "$BLKC" compile "$K" --target=cuda --arch=sm_90 --emit=ptx >"$T/mb$n.ptx" 2>&1 ||
    { echo "FAIL: compile with BLKC_GPU_MINBLOCKS=$n: $(cat "$T/mb$n.ptx")"; exit 1; }
done
fails=0
check() { if eval "$2"; then echo "ok $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
check "default: fma.rn.f32" "grep -q 'fma.rn.f32' '$T/fma.ptx'"
check "nofma: no fma" "! grep -q 'fma\.' '$T/nofma.ptx'"
check "nofma: mul.rn.f32 and add.rn.f32" "grep -q 'mul.rn.f32' '$T/nofma.ptx' && grep -q 'add.rn.f32' '$T/nofma.ptx'"
check "default: no .minnctapersm" "! grep -q 'minnctapersm' '$T/fma.ptx'"
check "minblocks 2: .minnctapersm 2" "grep -q 'minnctapersm 2' '$T/mb2.ptx'"
check "minblocks 3: .minnctapersm 3" "grep -q 'minnctapersm 3' '$T/mb3.ptx'"
echo "$((6 - fails)) passed, $fails failed"
[ $fails = 0 ]
