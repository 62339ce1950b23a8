#!/usr/bin/env bash
# gpu_exec.sh BLKC NPYCMP SRCDIR — the GPU execution suite (ctest label gpu).
# Every case runs one kernel through `blkc run` twice with the same random
# inputs (--random --seed), on the CPU (the reference backend) and on
# $BLKC_GPU_DEVICE (default cuda:0; cuda-emu / hip-emu in tests/emu), writes the named outputs, and compares
# them with npycmp within the case's tolerance. Exit 77 (skip) when the
# device cannot be used here: no driver library or no device. The CPU side
# can come from saved references instead (gpu_ref.sh: BLKC_GPU_REFS for the
# GPU build, which has no CPU backend; BLKC_GPU_REFS_WRITE saves them).
set -u
BLKC=$1 NPYCMP=$2 SRC=$3
DEV=${BLKC_GPU_DEVICE:-cuda:0}
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-gpu.XXXXXX")
trap 'rm -rf "$T"' EXIT
EX=$SRC/examples CD=$SRC/tests/cli/data GD=$SRC/tests/gpu/data

. "$SRC/tests/gpu/gpu_ref.sh"
# skip unless the device runs a trivial kernel
[ -n "$REF_WRITE" ] || . "$SRC/tests/gpu/gpu_probe.sh"

fails=0 n=0
# run_case NAME FILE "RTOL ATOL" "OUT1 OUT2 ..." ARGS...
run_case() {
  local name=$1 file=$2 tol=$3 outs=$4; shift 4
  local o oc og ok=1
  oc=() og=()
  for o in $outs; do oc+=(--out "$o=$T/$name.cpu.$o.npy"); og+=(--out "$o=$T/$name.gpu.$o.npy"); done
  n=$((n + 1))
  if ! cpu_ref "$name" "$file" "$@" --random --seed=7 "${oc[@]}" >"$T/log" 2>&1; then
    echo "FAIL $name: cpu run: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  [ -z "$REF_WRITE" ] || { echo "ref $name"; return; }
  if ! timeout 120 "$BLKC" run "$file" "$@" --random --seed=7 --device="$DEV" "${og[@]}" >"$T/log" 2>&1; then
    echo "FAIL $name: $DEV run: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  for o in $outs; do
    # shellcheck disable=SC2086
    if ! "$NPYCMP" "$T/$name.gpu.$o.npy" "$T/$name.cpu.$o.npy" $tol >"$T/cmp" 2>&1; then
      echo "FAIL $name: output $o: $(cat "$T/cmp")"; ok=0
    fi
  done
  if [ $ok = 1 ]; then echo "ok $name ($(tail -1 "$T/cmp"))"; else fails=$((fails + 1)); fi
}
# expect_fail NAME PATTERN FILE ARGS...: the run fails on both with PATTERN
expect_fail() {
  local name=$1 pat=$2 file=$3 d; shift 3
  n=$((n + 1))
  [ -z "$REF_WRITE" ] || return 0
  for d in $([ -z "$REF_DIR" ] && echo cpu) "$DEV"; do
    if BLKC_WAIT_TIMEOUT_MS=300 timeout 60 "$BLKC" run "$file" "$@" --device="$d" >"$T/log" 2>&1 ||
       ! grep -q "$pat" "$T/log"; then
      echo "FAIL $name on $d: wanted an error with '$pat': $(cat "$T/log")"
      fails=$((fails + 1)); return
    fi
  done
  echo "ok $name (both: $(head -1 "$T/log"))"
}

# examples/
run_case vector_add     "$EX/vector_add.blk"      "1e-6 1e-6" "C"  N=5000
run_case vector_add_1   "$EX/vector_add.blk"      "1e-6 1e-6" "C"  N=1
run_case softmax        "$EX/softmax.blk"         "1e-5 1e-6" "Y"  R=64 N=1000
run_case layernorm      "$EX/layernorm.blk"       "1e-4 1e-5" "Y"  R=33 N=1000 eps=1e-5
run_case matmul         "$EX/matmul.blk"          "1e-4 1e-4" "C"  M=200 N=136 K=96
case $DEV in *-emu) ;; *) # emulated devices: too slow for 512^3
run_case matmul_big     "$EX/matmul.blk"          "1e-4 1e-3" "C"  M=512 N=512 K=512 ;;
esac
run_case flash_attn     "$EX/flash_attention.blk" "2e-2 2e-2" "O"  Z=2 S=200 scale=0.125
run_case flash_causal   "$EX/flash_attention.blk" "2e-2 2e-2" "O"  Z=1 S=130 scale=0.125 -D CAUSAL=true
run_case linear         "$EX/linear.blk"          "1e-4 1e-4" "Y"  M=3 N=100 K=300
run_case linear_8       "$EX/linear.blk"          "1e-4 1e-4" "Y"  M=13 N=70 K=200 -D BM=8
# the CLI's test programs
run_case madd           "$CD/madd.blk"            "1e-6 1e-6" "C"  M=17 N=32
run_case scale          "$CD/scale.blk"           "1e-6 1e-6" "Y"  N=100 a=1.5 b=3
run_case halfcopy       "$CD/half.blk"            "0 0"       "Y G" N=64 --entry=halfcopy
run_case ints           "$CD/ints.blk"            "0 0"       "Y"  k=5 --entry=addk
# rank builtins on one rank (peer(T, 0) is T; notify/wait on own signals)
run_case ring_shift     "$GD/allreduce.blk"       "0 0"       "Y Z S" --entry=ring_shift
run_case allreduce_1    "$GD/allreduce.blk"       "0 0"       "Y S" --entry=allreduce_oneshot N=256 epoch=1
expect_fail wait_timeout "timed out" "$GD/allreduce.blk" --entry=allreduce_oneshot N=256 epoch=2

echo "$n cases, $fails failure(s)"
[ $fails = 0 ]
