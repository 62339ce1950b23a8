#!/usr/bin/env bash
# predict_bounds.sh — benchmarks/predicted-bounds.txt: the H200 bound that
# `blkc run --device=cuda-emu --stats-sample=N` predicts for each workload
# of gpu_check.sh, one line "NAME MS WHAT" (gpu_check.sh's predicted_bound
# prints it beside the measured figure). The kernels, arguments and block
# configurations are gpu_check.sh's own: the bf16 GEMM's source is read out
# of its heredoc, GEMM_DEFS / FLASH_DEFS out of its lines.
#   bash benchmarks/predict_bounds.sh [BLKC] > benchmarks/predicted-bounds.txt
# Needs clang++ for the load/store counts; about 10 minutes on 2 cores.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BLKC=${1:-$ROOT/build/blkc}
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-predict.XXXXXX")
trap 'rm -rf "$T"' EXIT
export BLKC_CACHE_DIR=${BLKC_CACHE_DIR:-$T/cache}
sed -n '/^cat >"\$T\/gemm_bf16.blk" <<.EOF.$/,/^EOF$/p' "$ROOT/benchmarks/gpu_check.sh" | sed '1d;$d' >"$T/gemm_bf16.blk"
[ -s "$T/gemm_bf16.blk" ] || { echo "predict_bounds.sh: no gemm_bf16 kernel in gpu_check.sh" >&2; exit 1; }
# gpu_check.sh's flash_w.blk (warps W, stages ST) and the configurations
# of its ratio lines (GEMM_DEFS, FLASH_DEFS; GPU_CHECK_GEMM / GPU_CHECK_FLASH
# override them there and here)
sed -e 's/CAUSAL = false>(/CAUSAL = false, W = 4, ST = 3>(/' -e 's/grid(cdiv(S, BM), Z) stages(3)$/grid(cdiv(S, BM), Z) warps(W) stages(ST)/' \
  "$ROOT/examples/flash_attention.blk" >"$T/flash_w.blk"
grep -q 'warps(W)' "$T/flash_w.blk" || cp "$ROOT/examples/flash_attention.blk" "$T/flash_w.blk"
eval "$(grep -E '^read -r -a (GEMM|FLASH)_DEFS <<<' "$ROOT/benchmarks/gpu_check.sh")"
[ "${#GEMM_DEFS[@]}" -gt 0 ] && [ "${#FLASH_DEFS[@]}" -gt 0 ] ||
  { echo "predict_bounds.sh: no GEMM_DEFS / FLASH_DEFS in gpu_check.sh" >&2; exit 1; }
echo "# H200 bounds predicted by blkc run --device=cuda-emu --stats-sample (benchmarks/predict_bounds.sh);"
echo "# NAME MS WHAT; the time of the limiting unit at the predicted fraction of its peak"
# NAME SAMPLE ARGS...
one() {
  local name=$1 n=$2 l us; shift 2
  if ! "$BLKC" run "$@" --random --device=cuda-emu --stats-sample="$n" >"$T/log" 2>&1; then
    echo "predict_bounds.sh: $name: $(tail -3 "$T/log")" >&2; return 1
  fi
  l=$(grep "bound on H200" "$T/log" | tail -1)
  us=$(echo "$l" | sed -n 's/.*limited by [a-zA-Z0-9 ]*: \([0-9.e+-]*\) us.*/\1/p')
  [ -n "$us" ] || { echo "predict_bounds.sh: $name: no H200 bound: $l" >&2; return 1; }
  echo "$name $(awk -v u="$us" 'BEGIN { printf "%.4g", u / 1000 }') ms ($(echo "$l" | sed 's/.*limited by //; s/ (.*//'); $(grep -o 'sampled [0-9]* of [0-9]* blocks' "$T/log"))"
}
one gemm_bf16 1 "$T/gemm_bf16.blk" M=4096 N=4096 K=4096 "${GEMM_DEFS[@]}"
# softmax with scalar accesses (BLKC_GPU_NOVEC=1): clang++-15's TSan does
# not instrument 16-byte vector loads/stores, so the vector form counts no
# sectors there; coalesced scalar accesses touch the same sectors
BLKC_GPU_NOVEC=1 one softmax 8 "$ROOT/examples/softmax.blk" R=8192 N=8192 -D BLOCK=8192
one flash_fwd 1 "$T/flash_w.blk" Z=32 S=4096 scale=0.08838834764831845 -D D=128 "${FLASH_DEFS[@]}"
one flash_fwd_causal 4 "$T/flash_w.blk" Z=32 S=4096 scale=0.08838834764831845 -D D=128 "${FLASH_DEFS[@]}" -D CAUSAL=true
