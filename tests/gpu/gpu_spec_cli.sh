#!/usr/bin/env bash
# gpu_spec_cli.sh BLKC SRCDIR FAKEDIR — `blkc run --device=cuda:0` and GPU
# ranks specialize their launches (runtime/gpu_launch.c), over the fake
# libcuda.so.1 in FAKEDIR (tests/gpu/fake_cuda.c: loaded images saved as
# PTX, no-op launches recorded by module). Checks: a run loads the generic
# module and one variant with ld/st.global.v4, and the first launch and
# every --bench launch run the variant; examples/matmul.blk (stages(3))
# runs a variant with cp.async; 2 GPU ranks compile the variant
# once and both launch it; a variant that fails to load runs the generic
# kernel with a warning on stderr. Exit 77 without NVRTC.
set -u
BLKC=$1 SRC=$2 FAKE=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-gspec-cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FAKE_CUDA_CC=99 FAKE_CUDA_LAUNCH_NOOP=1
V=$SRC/tests/cli/data/vadd.blk
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# the module of every recorded launch in $1, as "2 2 2"
mods() { sed 's/launch //' "$1/launches" 2>/dev/null | tr '\n' ' ' | sed 's/ $//'; }
has() { grep -q "$2" "$1" 2>/dev/null; }

# one device: generic (image 1) + the variant (image 2), 1 + 3 launches
D=$T/run; mkdir "$D"
if ! FAKE_CUDA_IMAGE_DIR=$D "$BLKC" run "$V" N=4096 --random --bench=3 \
     --device=cuda:0 >"$T/out" 2>&1; then
  if grep -q "not supported here" "$T/out"; then
    echo "skip: $(cat "$T/out")"; exit 77
  fi
  fail "run: $(cat "$T/out")"
fi
[ "$(ls "$D" | grep -c '^image-')" = 2 ] || fail "run: images $(ls "$D")"
has "$D/image-1.ptx" "ld.global.v4" && fail "run: the generic module has ld.global.v4"
has "$D/image-2.ptx" "ld.global.v4" || fail "run: the variant has no ld.global.v4"
has "$D/image-2.ptx" "st.global.v4" || fail "run: the variant has no st.global.v4"
[ "$(mods "$D")" = "2 2 2 2" ] || fail "run: launches ran modules '$(mods "$D")', want '2 2 2 2'"
grep -q warning "$T/out" && fail "run: unexpected warning: $(cat "$T/out")"

# a stages(3) dot loop: the variant pipelines it with cp.async
D=$T/mm; mkdir "$D"
FAKE_CUDA_IMAGE_DIR=$D "$BLKC" run "$SRC/examples/matmul.blk" M=128 N=128 K=128 \
  --random --device=cuda:0 >"$T/out" 2>&1 || fail "matmul: $(cat "$T/out")"
has "$D/image-1.ptx" "cp.async.cg.shared.global" && fail "matmul: the generic module has cp.async"
has "$D/image-2.ptx" "cp.async.cg.shared.global" || fail "matmul: the variant has no cp.async"
[ "$(mods "$D")" = 2 ] || fail "matmul: launches ran modules '$(mods "$D")', want '2'"

# two GPU ranks on one fake device: one generic module, the signal
# kernels' module, one variant (compiled once) launched by both ranks
D=$T/ranks; mkdir "$D"
FAKE_CUDA_IMAGE_DIR=$D "$BLKC" run "$V" N=4096 --ranks=2 --device=cuda:0 \
  >"$T/out" 2>&1 || fail "ranks: $(cat "$T/out")"
last=$(ls "$D" | grep -c '^image-')
[ "$last" = 3 ] || fail "ranks: $last images, want 3: $(ls "$D")"
has "$D/image-$last.ptx" "ld.global.v4" || fail "ranks: the variant has no ld.global.v4"
[ "$(mods "$D")" = "$last $last" ] || fail "ranks: launches ran modules '$(mods "$D")', want '$last $last'"

# the variant cannot be loaded: the generic kernel runs, with a warning
D=$T/fail; mkdir "$D"
FAKE_CUDA_IMAGE_DIR=$D FAKE_CUDA_LOAD_FAIL_FROM=2 "$BLKC" run "$V" N=4096 \
  --random --device=cuda:0 >"$T/out" 2>"$T/err" || fail "fail: $(cat "$T/out" "$T/err")"
grep -q "^blkc: warning: kernel vadd: the variant specialized for these arguments could not be built (.*cuModuleLoadData.*); running the generic one$" "$T/err" \
  || fail "fail: no warning: $(cat "$T/err")"
[ "$(mods "$D")" = 1 ] || fail "fail: launches ran modules '$(mods "$D")', want '1'"

[ $fails = 0 ] && echo "ok: run, --bench, cp.async matmul, 2 ranks, failed variant"
[ $fails = 0 ]
