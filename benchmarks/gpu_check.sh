#!/usr/bin/env bash
# gpu_check.sh — the GPU check, for a machine with an NVIDIA GPU, its driver
# and (for the ratios) PyTorch. Fits in 8 minutes; every step has its own
# timeout and a part that cannot run prints a "SKIP:" line instead.
#
#   1. configure + build blkc (cmake --preset default, build/)
#   2. ctest -L 'gpu|nvrtc' (GPU execution suite vs the CPU, NVRTC compiles),
#      then the GPU execution tests again with BLKC_GPU_NOVEC=1
#      BLKC_GPU_NOPIPE=1 BLKC_GPU_NOSYNCELIM=1 (the old code paths);
#      gpu_vec_exec runs the vector / cp.async forms itself, both ways
#   3. ratios measured in this run, blkc on cuda:0 vs PyTorch on the same GPU:
#      - bf16 GEMM 4096^3: blkc time vs torch.matmul (cuBLAS)   goal >= 0.7x
#      - softmax 8192x8192 f32: blkc bandwidth vs a device-to-device copy
#                                                                goal >= 0.8x
#      - flash-attention forward (f16, [32, 4096, 64]) vs torch SDPA
#
# GPU_CHECK_SKIP_BUILD=1 reuses an existing build/ (a rerun).
# Results go to benchmarks/results/gpu-<date>.txt and, when $OUT is set, to
# $OUT/gpu-check.txt. Exit 0 when build and tests passed (ratios below the
# goals are reported, not failed), 1 otherwise.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
STAMP=$(date +%Y%m%d-%H%M%S)
mkdir -p benchmarks/results
RES=$ROOT/benchmarks/results/gpu-$STAMP.txt
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-gpucheck.XXXXXX")
BLKC=$ROOT/build/blkc
DEV=${BLKC_GPU_DEVICE:-cuda:0}
START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET_S:-460}
status=0
: >"$RES"

log() { printf '%s\n' "$*" | tee -a "$RES"; }
elapsed() { echo $(($(date +%s) - START)); }
# left N: the seconds left of the budget, at most N
left() { local l=$((BUDGET - $(elapsed))); [ "$l" -gt "$1" ] && l=$1; echo "$l"; }
finish() {
  log "total: $(elapsed) s"
  if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$RES" "$OUT/gpu-check.txt"; fi
  rm -rf "$T"
  exit "$status"
}
trap finish EXIT

log "blkc GPU check $STAMP on $(hostname)"
log "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if command -v nvidia-smi >/dev/null 2>&1; then
  log "gpu: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2)"
else
  log "gpu: nvidia-smi not found"
fi

# ------------------------------------------------------------ build
JOBS=$(nproc 2>/dev/null || echo 4)
if [ "${GPU_CHECK_SKIP_BUILD:-0}" = 1 ] && [ -x "$BLKC" ]; then
  log "build: skipped (GPU_CHECK_SKIP_BUILD=1)"
elif ! timeout "$(left 240)" bash -c "cmake --preset default >'$T/cfg.log' 2>&1 && cmake --build build -j$JOBS >'$T/build.log' 2>&1"; then
  log "FAIL: build (last lines below)"
  tail -20 "$T/cfg.log" "$T/build.log" 2>/dev/null | tee -a "$RES"
  status=1
  exit 1
else
  log "build: ok ($(elapsed) s)"
fi

# ------------------------------------------------------------ tests
if timeout "$(left 200)" ctest --test-dir build -L 'gpu|nvrtc' -j"$JOBS" --timeout 180 \
     --output-on-failure >"$T/ctest.log" 2>&1; then
  log "ctest -L 'gpu|nvrtc': $(grep -E 'tests passed' "$T/ctest.log" | tail -1)"
else
  status=1
  log "FAIL: ctest -L 'gpu|nvrtc': $(grep -E 'tests passed' "$T/ctest.log" | tail -1)"
  grep -E 'FAIL|Failed|\*\*\*' "$T/ctest.log" | head -40 | tee -a "$RES"
fi
grep -E 'Skipped|Not Run' "$T/ctest.log" | sed 's/^/  note: /' | tee -a "$RES"

# the same GPU execution tests on the old code paths (docs/backends.md):
# scalar loads/stores, no cp.async, a barrier after every tile op. The
# default paths ran above; gpu_vec_exec runs both itself (every variable),
# gpu_exec (blkc run on the GPU vs the CPU) needs this second run. A result
# that differs only here or only above points at the new paths.
if [ "$(left 150)" -ge 30 ]; then
  # BLKC_CACHE_DISABLE: cached GPU modules do not key on these variables
  if BLKC_CACHE_DISABLE=1 BLKC_GPU_NOVEC=1 BLKC_GPU_NOPIPE=1 BLKC_GPU_NOSYNCELIM=1 \
     timeout "$(left 150)" ctest --test-dir build -R '^gpu_' -L gpu -j"$JOBS" --timeout 140 \
       --output-on-failure >"$T/ctest-old.log" 2>&1; then
    log "ctest -L gpu, BLKC_GPU_NOVEC=1 NOPIPE=1 NOSYNCELIM=1: $(grep -E 'tests passed' "$T/ctest-old.log" | tail -1)"
  else
    status=1
    log "FAIL: ctest -L gpu, BLKC_GPU_NOVEC=1 NOPIPE=1 NOSYNCELIM=1: $(grep -E 'tests passed' "$T/ctest-old.log" | tail -1)"
    grep -E 'FAIL|Failed|\*\*\*' "$T/ctest-old.log" | head -40 | tee -a "$RES"
  fi
  if [ -x build/tests/nvrtc/gpu_vec_exec ]; then # its lines, for the record
    timeout "$(left 60)" build/tests/nvrtc/gpu_vec_exec >"$T/vec.log" 2>&1
    sed 's/^/  gpu_vec_exec: /' "$T/vec.log" | head -20 | tee -a "$RES"
  fi
else
  log "SKIP: old-path rerun of the GPU tests (budget)"
fi

# ------------------------------------------------------------ ratios
HAVE_TORCH=0
if timeout 60 python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  HAVE_TORCH=1
  log "torch: $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tail -1)"
else
  log "SKIP: PyTorch with CUDA is not available (python3 -c 'import torch'): no reference timings"
fi

# median ms of `blkc run ... --bench=N` (device-event time per launch)
blkc_ms() {
  local to=$1; shift
  if [ "$(left "$to")" -lt 10 ]; then echo "budget" >"$T/blkc.log"; return 1; fi
  timeout "$(left "$to")" "$BLKC" run "$@" --device="$DEV" --random >"$T/blkc.log" 2>&1 || return 1
  sed -n 's/.*median \([0-9.eE+-]*\) ms.*/\1/p' "$T/blkc.log" | tail -1
}
# torch_ms WHAT: median ms of a PyTorch reference (gemm, copy, sdpa)
torch_ms() {
  [ $HAVE_TORCH = 1 ] || return 1
  [ "$(left 90)" -ge 15 ] || return 1
  timeout "$(left 90)" python3 - "$1" >"$T/torch.log" 2>&1 <<'PYEOF' || return 1
import sys, torch
import torch.nn.functional as F
what = sys.argv[1]
dev = "cuda"
torch.manual_seed(0)
if what == "gemm":
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    fn = lambda: torch.matmul(a, b)
elif what == "copy":
    x = torch.randn(8192, 8192, device=dev, dtype=torch.float32)
    y = torch.empty_like(x)
    fn = lambda: y.copy_(x)
elif what == "sdpa":
    q, k, v = (torch.randn(4, 8, 4096, 64, device=dev, dtype=torch.float16) for _ in range(3))
    fn = lambda: F.scaled_dot_product_attention(q, k, v, scale=0.125)
else:
    raise SystemExit("unknown " + what)
for _ in range(5):
    fn()
torch.cuda.synchronize()
ts = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); e.synchronize()
    ts.append(s.elapsed_time(e))
ts.sort()
print("%.6f" % ts[len(ts) // 2])
PYEOF
  tail -1 "$T/torch.log"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }'; }

# bf16 GEMM 4096^3
cat >"$T/gemm_bf16.blk" <<'EOF'
kernel gemm_bf16<BM = 128, BN = 128, BK = 32>(A: bf16[M, K], B: bf16[K, N], C: bf16[M, N])
    grid(cdiv(M, BM), cdiv(N, BN)) warps(8) stages(3)
{
    let m = program_id(0) * BM;
    let n = program_id(1) * BN;
    var acc = zeros(f32, BM, BN);
    for k in 0 .. K step BK {
        acc = dot(A[m +: BM, k +: BK], B[k +: BK, n +: BN], acc);
    }
    C[m +: BM, n +: BN] = acc as bf16;
}
EOF
g=$(blkc_ms 150 "$T/gemm_bf16.blk" M=4096 N=4096 K=4096 --bench=10) ||
  g=$(blkc_ms 150 "$T/gemm_bf16.blk" M=4096 N=4096 K=4096 -D BM=64 -D BN=64 --bench=10) ||
  g=""
if [ -z "$g" ]; then
  log "SKIP: bf16 GEMM 4096^3 on blkc: $(head -c 400 "$T/blkc.log")"
else
  log "gemm bf16 4096^3: blkc $g ms ($(awk -v t="$g" 'BEGIN{printf "%.1f", 2*4096^3/(t*1e-3)/1e12}') TFLOP/s)"
  if c=$(torch_ms gemm) && [ -n "$c" ]; then
    log "gemm bf16 4096^3: torch.matmul $c ms; blkc/cuBLAS speed ratio $(ratio "$c" "$g") (goal >= 0.7)"
  else
    log "SKIP: torch.matmul reference: $(tail -3 "$T/torch.log" 2>/dev/null | tr '\n' ' ')"
  fi
fi

# softmax 8192 x 8192 f32 vs copy bandwidth
s=$(blkc_ms 120 examples/softmax.blk R=8192 N=8192 -D BLOCK=8192 --bench=10) || s=""
if [ -z "$s" ]; then
  log "SKIP: softmax 8192x8192 on blkc: $(head -c 400 "$T/blkc.log")"
else
  bw=$(awk -v t="$s" 'BEGIN{printf "%.1f", 2*8192*8192*4/(t*1e-3)/1e9}')
  log "softmax 8192x8192 f32: blkc $s ms ($bw GB/s read+write)"
  if c=$(torch_ms copy) && [ -n "$c" ]; then
    cbw=$(awk -v t="$c" 'BEGIN{printf "%.1f", 2*8192*8192*4/(t*1e-3)/1e9}')
    log "copy 8192x8192 f32 (device to device): $c ms ($cbw GB/s); softmax/copy bandwidth ratio $(ratio "$c" "$s") (goal >= 0.8)"
  else
    log "SKIP: copy bandwidth reference: $(tail -3 "$T/torch.log" 2>/dev/null | tr '\n' ' ')"
  fi
fi

# flash attention forward, [Z = 4*8, S = 4096, D = 64] f16
f=$(blkc_ms 120 examples/flash_attention.blk Z=32 S=4096 scale=0.125 --bench=5) || f=""
if [ -z "$f" ]; then
  log "SKIP: flash attention on blkc: $(head -c 400 "$T/blkc.log")"
else
  log "flash-attn fwd f16 [32x4096x64]: blkc $f ms ($(awk -v t="$f" 'BEGIN{printf "%.1f", 4*32*4096*4096*64/(t*1e-3)/1e12}') TFLOP/s)"
  if c=$(torch_ms sdpa) && [ -n "$c" ]; then
    log "flash-attn fwd: torch SDPA $c ms; blkc/SDPA speed ratio $(ratio "$c" "$f")"
  else
    log "SKIP: SDPA reference: $(tail -3 "$T/torch.log" 2>/dev/null | tr '\n' ' ')"
  fi
fi
log "results: $RES"

# ------------------------------------------------------------ GPU ranks
# tests/gpu/gpu_ranks.sh (also ctest gpu_ranks above): device functions
# and lib/ patterns (allreduce, ag_gemm) on 1, 2 and 4 ranks of $DEV vs
# CPU ranks, each case's line in the results; NCCL is forced on one rank.
if [ "$(left 200)" -lt 60 ]; then
  log "SKIP: GPU ranks (budget)"
else
  timeout "$(left 200)" bash tests/gpu/gpu_ranks.sh "$BLKC" build/tests/gpu/gpu_npycmp "$ROOT" \
    >"$T/granks.log" 2>&1
  grc=$?
  sed 's/^/  granks: /' "$T/granks.log" >>"$RES"
  case $grc in
    0) log "GPU ranks: $(tail -1 "$T/granks.log")" ;;
    77) log "SKIP: GPU ranks: $(head -1 "$T/granks.log")" ;;
    *) status=1; log "FAIL: GPU ranks (exit $grc): $(grep -c '^FAIL' "$T/granks.log") failing cases" ;;
  esac
fi
