#!/usr/bin/env bash
# sass_count.sh — static SASS instruction count of the GPU main loops, without
# a GPU: runs (a) gpu_check.sh's bf16 GEMM and (b) examples/flash_attention.blk
# at gpu_check.sh's configuration (small shapes) on cuda-emu with
# BLKC_GPU_DUMP, compiles each dumped specialized .cu with
# `nvcc -cubin -arch=sm_90 -Xptxas -v`, disassembles it with `cuobjdump -sass`
# and prints, for the loop with the most HMMA (the range from a backward
# branch's target to the branch), its instructions, HMMAs, instructions per
# HMMA, and the kernel's registers and spill bytes. A timing-free figure for
# issue 12 (fewer instructions per mma). Exit 77 when nvcc or cuobjdump (PyPI
# nvidia-cuda-cuobjdump, which needs nvidia-cuda-nvdisasm) is missing.
#   bash benchmarks/sass_count.sh            # both kernels
#   bash benchmarks/sass_count.sh gemm       # or: flash
# GPU_CHECK_GEMM / GPU_CHECK_FLASH (-D lists) override the configurations as
# in gpu_check.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BLKC=${BLKC:-$ROOT/build/blkc}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || true)}
if [ ! -x "$NVCC" ] || [ -z "$CUOBJDUMP" ]; then
  echo "sass_count.sh: skipped: nvcc ($NVCC) or cuobjdump not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; put its bin on PATH)" >&2
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-sass.XXXXXX")
trap 'rm -rf "$T"' EXIT

# the kernels exactly as gpu_check.sh writes them
sed -n "/^cat >\"\$T\/gemm_bf16.blk\" <<'EOF'$/,/^EOF$/p" "$ROOT/benchmarks/gpu_check.sh" | sed '1d;$d' >"$T/gemm_bf16.blk"
sed -e 's/CAUSAL = false>(/CAUSAL = false, W = 4, ST = 3>(/' \
    -e 's/grid(cdiv(S, BM), Z) stages(3)$/grid(cdiv(S, BM), Z) warps(W) stages(ST)/' \
    "$ROOT/examples/flash_attention.blk" >"$T/flash_w.blk"
read -r -a GEMM_DEFS <<<"${GPU_CHECK_GEMM:--D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=4}"
read -r -a FLASH_DEFS <<<"${GPU_CHECK_FLASH:--D BM=128 -D BN=64 -D W=8}"

# count NAME ARGS...: dump, compile the last (most specialized) module, count
count() {
  local name=$1; shift
  local d="$T/$name"
  mkdir -p "$d"
  BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP="$d" "$BLKC" run "$@" --random --device=cuda-emu >/dev/null
  local cu
  cu=$(ls "$d"/*.cu | sort -t. -k2 -n | tail -1)
  "$NVCC" -cubin -arch=sm_90 -Xptxas -v -o "$d/k.cubin" "$cu" >"$d/ptxas.txt" 2>&1
  "$CUOBJDUMP" -sass "$d/k.cubin" >"$d/k.sass"
  local regs spill
  regs=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$d/ptxas.txt" | head -1)
  spill=$(sed -n 's/.* \([0-9]*\) bytes spill stores, \([0-9]*\) bytes spill loads.*/\1+\2/p' "$d/ptxas.txt" | head -1)
  # mawk has no strtonum: hex() converts the addresses
  awk -v name="$name" -v cu="$(basename "$cu")" -v regs="$regs" -v spill="$spill" '
  function relax(i, k) {
    if (cost[k] < 0 || cost[i] + 1 < cost[k]) { cost[k] = cost[i] + 1; ph[k] = ph[i] + (op[k] ~ /^HMMA/) }
  }
  function hex(s,   v, i) {
    sub(/^0x/, "", s); v = 0
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return v
  }
  match($0, /\/\*[0-9a-f]+\*\/ +[@!A-Z]/) {
    a = substr($0, RSTART + 2); sub(/\*.*/, "", a)
    ins = substr($0, RSTART + RLENGTH - 1); sub(/ *;.*/, "", ins)
    p = ins ~ /^@!?U?P[0-9]+ / # predicated (not @PT): may fall through
    sub(/^@!?U?P[T0-9]+ +/, "", ins)
    nf = split(ins, f, / +/)
    n++; addr[n] = hex(a); op[n] = f[1]; pr[n] = p
    # the target is the last operand: "BRA 0x..." or "BRA P1, 0x..." (a
    # second predicate, as nvcc writes a loop test of two conditions)
    if (f[1] == "BRA" && f[nf] ~ /^0x/) tgt[n] = hex(f[nf])
  }
  END {
    best = -1
    for (i = 1; i <= n; i++) {
      if (!(i in tgt) || tgt[i] > addr[i]) continue
      c = h = 0
      for (j = 1; j <= i; j++)
        if (addr[j] >= tgt[i]) { c++; if (op[j] ~ /^HMMA/) h++ }
      if (h > bh || (h == bh && h > 0 && c < bc)) { bh = h; bc = c; best = i }
    }
    if (best < 0) { printf "%s: no loop with HMMA found\n", name > "/dev/stderr"; exit 1 }
    # one step of the loop: the shortest path from its top to its back
    # branch that falls through every conditional forward branch except
    # one jumping over HMMA (a loop split at a bounds mask, gpu_split.c:
    # `if (full) {...} else {...}`, the two bodies; the guards of the
    # prefetch copies etc. are counted); a loop without such a branch
    # counts whole, as before
    for (s = 1; addr[s] < tgt[best]; s++) ;
    for (i = s; i <= best; i++) { idx[addr[i]] = i; cost[i] = -1 }
    cost[s] = 1; ph[s] = op[s] ~ /^HMMA/
    for (i = s; i < best; i++) {
      if (cost[i] < 0) continue
      if (!(op[i] == "BRA" && !pr[i])) relax(i, i + 1)
      if (op[i] == "BRA" && (i in tgt) && tgt[i] > addr[i] && (tgt[i] in idx)) {
        k = idx[tgt[i]]; jh = 0
        for (j = i + 1; j < k; j++) if (op[j] ~ /^HMMA/) jh = 1
        if (!pr[i] || jh) relax(i, k)
      }
    }
    bc = cost[best]; bh = ph[best]
    printf "%-6s %-22s loop 0x%x-0x%x: %4d instructions, %3d HMMA, %6.2f per HMMA; %s registers, spill %s bytes\n",
           name, cu, tgt[best], addr[best], bc, bh, bc / bh, regs, spill
  }' "$d/k.sass"
}

sel=${1:-all}
if [ "$sel" = all ] || [ "$sel" = gemm ]; then
  count gemm "$T/gemm_bf16.blk" M=256 N=256 K=256 "${GEMM_DEFS[@]}"
fi
if [ "$sel" = all ] || [ "$sel" = flash ]; then
  count flash "$T/flash_w.blk" Z=1 S=256 scale=0.08838834764831845 -D D=128 "${FLASH_DEFS[@]}"
fi
