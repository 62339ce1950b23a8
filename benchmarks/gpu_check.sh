#!/usr/bin/env bash
# gpu_check.sh — the GPU check, for a machine with an NVIDIA GPU, its driver,
# the CUDA toolkit, gcc, cmake, ninja and (for the ratios) PyTorch, but no
# LLVM, flex, bison or network (docs/gpu.md). Its one command:
#   bash benchmarks/gpu_check.sh        (carry build-gpu-prep: make gpu-prep)
# Fits in 8 minutes; every step has its own timeout and a part that cannot
# run prints a "SKIP:" line instead.
#
#   1. configure + build the GPU build (cmake --preset gpu, build-gpu/: no
#      CPU backend, no LLVM; the lexer and parser from build-gpu-prep/gen)
#   2. ctest -L gpu (GPU execution vs the CPU references saved in
#      build-gpu-prep/refs, gpu_vec_exec vs C), then the GPU execution tests
#      again with BLKC_GPU_NOVEC=1 BLKC_GPU_NOPIPE=1 BLKC_GPU_NOSYNCELIM=1
#      (the old code paths); gpu_vec_exec runs both forms itself
#   3. ratios, blkc on cuda:0 vs PyTorch on the same GPU, the two run
#      alternately (GPU_CHECK_ROUNDS rounds, default 3; medians):
#      - bf16 GEMM 4096^3: blkc vs torch.matmul (cuBLAS)        goal >= 0.6x
#      - on a Hopper GPU (compute capability 9.0: blkc compiles for sm_90a,
#        wgmma with TMA operand rings), bf16 GEMM 4096^3 and 8192^3 at the
#        Hopper tile (GPU_CHECK_GEMM_H, default 128 x 256 x 64 on 8 warps,
#        4 stages: one wgmma group in flight, the ring 2 ahead) vs cuBLAS
#                                                                goal >= 0.9x
#        and an fp8 GEMM 4096^3 (e4m3 operands, b as [N, K]: wgmma
#        m64n256k32 .e4m3, f32 accumulation, bf16 out; GPU_CHECK_GEMM_F8,
#        default 128 x 256 x 128 on 8 warps, 4 stages) vs cuBLASLt through
#        torch._scaled_mm with unit scales (skipped, with the reason, where
#        torch lacks it or float8_e4m3fn)                       goal >= 0.7x
#      - softmax 8192x8192 f32: blkc bandwidth vs a device-to-device copy
#                                                                goal >= 0.8x
#      - flash-attention forward, f16 [Z = batch*heads 32, S 4096, D 128],
#        causal and not: blkc vs torch SDPA                      goal >= 0.5x
#      Beside each figure: the emulator's predicted bound, when the file
#      $GPU_CHECK_PREDICTED (default benchmarks/predicted-bounds.txt) has a
#      line "NAME MS [WHAT]" for it (predicted_bound below; NAMEs gemm_bf16,
#      softmax, flash_fwd, flash_fwd_causal), else "predicted: n/a".
#   4. GPU ranks (tests/gpu/gpu_ranks.sh) case by case, for the record
#
# GPU_CHECK_PARTS (default "tests old ratios sweep ranks"; the build always
# runs) picks the steps: tests = ctest -L gpu (gpu_exec, gpu_ranks,
# gpu_vec_exec and every tests/exec program on the GPU, gpux_*), old = the
# old-path rerun, ratios = the goals above, sweep = bf16 GEMM 4096^3 and
# flash attention at several block shapes / warps / stages (blkc alone,
# TFLOP/s: the data to choose defaults from), ranks = step 4; ncu (not in
# the default) = Nsight Compute sections of one GEMM and one flash launch.
# GPU_CHECK_SKIP_BUILD=1 reuses an existing build-gpu/ (a rerun);
# GPU_CHECK_PRESET=default builds the full tree instead (needs LLVM).
# Results go to benchmarks/results/gpu-<date>.txt and, when $OUT is set, to
# $OUT/gpu-check.txt. Ends with a summary of what passed, failed and was
# skipped; exit 0 when build and tests passed (ratios below the goals are
# reported, not failed), 1 otherwise.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
STAMP=$(date +%Y%m%d-%H%M%S)
mkdir -p benchmarks/results
RES=$ROOT/benchmarks/results/gpu-$STAMP.txt
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-gpucheck.XXXXXX")
PRESET=${GPU_CHECK_PRESET:-gpu}
if [ "$PRESET" = gpu ]; then B=$ROOT/build-gpu; else B=$ROOT/build; fi
BLKC=$B/blkc
DEV=${BLKC_GPU_DEVICE:-cuda:0}
ROUNDS=${GPU_CHECK_ROUNDS:-3}
PREDICTED=${GPU_CHECK_PREDICTED:-$ROOT/benchmarks/predicted-bounds.txt}
PARTS=" ${GPU_CHECK_PARTS:-tests old ratios sweep ranks} "
want() { case $PARTS in *" $1 "*) return 0 ;; esac; return 1; }
export BLKC_CACHE_DIR=${BLKC_CACHE_DIR:-$B/test-cache}
START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET_S:-460}
status=0
PASSED=() FAILED=() SKIPPED=()
: >"$RES"

log() { printf '%s\n' "$*" | tee -a "$RES"; }
pass() { PASSED+=("$1"); }
fail() { FAILED+=("$1"); status=1; }
skip() { SKIPPED+=("$1"); }
elapsed() { echo $(($(date +%s) - START)); }
# left N: the seconds left of the budget, at most N
left() { local l=$((BUDGET - $(elapsed))); [ "$l" -gt "$1" ] && l=$1; echo "$l"; }
join() { local IFS=','; echo "${*:-none}" | sed 's/,/, /g'; }
finish() {
  log "summary: passed: $(join "${PASSED[@]}")"
  log "summary: failed: $(join "${FAILED[@]}")"
  log "summary: skipped: $(join "${SKIPPED[@]}")"
  log "gpu-check: $([ $status = 0 ] && echo PASS || echo FAIL) in $(elapsed) s (${#PASSED[@]} passed, ${#FAILED[@]} failed, ${#SKIPPED[@]} skipped)"
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" && cp "$RES" "$OUT/gpu-check.txt"
    # every step's log (build, ctest, blkc and torch runs) for a later look
    tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$T" . 2>/dev/null
  fi
  rm -rf "$T"
  exit "$status"
}
trap finish EXIT

log "blkc GPU check $STAMP on $(hostname)"
# the device machine's copy of the tree may carry a stale .git: the commit
# build-gpu-prep was made from (its STAMP) is the one that counts
prep=$([ -f build-gpu-prep/STAMP ] && sed -n 's/^commit \([0-9a-f]\{10\}\).*/\1/p' build-gpu-prep/STAMP)
log "commit: ${prep:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}${prep:+ (build-gpu-prep/STAMP)}, preset $PRESET"
if command -v nvidia-smi >/dev/null 2>&1; then
  log "gpu: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2)"
else
  log "gpu: nvidia-smi not found"
fi
if [ "$PRESET" = gpu ]; then
  if [ -f build-gpu-prep/STAMP ]; then
    log "build-gpu-prep: $(tr '\n' ';' <build-gpu-prep/STAMP)"
  else
    log "build-gpu-prep: missing (make gpu-prep, and carry build-gpu-prep): needs flex/bison here and has no GPU test references"
  fi
fi

# ------------------------------------------------------------ build
JOBS=$(nproc 2>/dev/null || echo 4)
if [ "${GPU_CHECK_SKIP_BUILD:-0}" = 1 ] && [ -x "$BLKC" ]; then
  log "build: skipped (GPU_CHECK_SKIP_BUILD=1)"
elif ! timeout "$(left 240)" bash -c "cmake --preset $PRESET >'$T/cfg.log' 2>&1 && cmake --build '$B' -j$JOBS >'$T/build.log' 2>&1"; then
  log "FAIL: build (last lines below)"
  tail -20 "$T/cfg.log" "$T/build.log" 2>/dev/null | tee -a "$RES"
  fail build
  exit 1
else
  log "build: ok ($(elapsed) s; $(grep -m1 'no CPU backend' "$T/cfg.log" >/dev/null && echo 'no CPU backend, no LLVM' || echo 'with the CPU backend'))"
  pass build
fi

# ------------------------------------------------------------ tests
# ctest_run NAME LOG ARGS...: one ctest run, its counts in the summary
ctest_run() {
  local name=$1 lg=$2; shift 2
  if timeout "$(left 200)" ctest --test-dir "$B" "$@" -j"$JOBS" --output-on-failure >"$lg" 2>&1; then
    log "$name: $(grep -E 'tests passed' "$lg" | tail -1)"
  else
    log "FAIL: $name: $(grep -E 'tests passed' "$lg" | tail -1)"
    grep -E 'FAIL|Failed|\*\*\*' "$lg" | head -40 | tee -a "$RES"
    fail "$name"
  fi
  local t
  for t in $(sed -n 's/^.*Test *#[0-9]*: *\([^ ]*\) .*Passed.*/\1/p' "$lg"); do pass "$name:$t"; done
  for t in $(sed -n 's/^.*Test *#[0-9]*: *\([^ ]*\) .*\*\*\*Skipped.*/\1/p' "$lg"); do skip "$name:$t"; done
  grep -E 'Skipped|Not Run' "$lg" | sed 's/^/  note: /' | tee -a "$RES"
}
if want tests; then
  # without the ranks step, its ctest twin gpu_ranks is left out too
  ex=(); want ranks || ex=(-E '^gpu_ranks$')
  ctest_run "ctest -L gpu" "$T/ctest.log" -L gpu "${ex[@]}" --timeout 180
else
  log "SKIP: ctest -L gpu (GPU_CHECK_PARTS)"; skip "ctest -L gpu"
fi

# the same GPU execution tests on the old code paths (docs/backends.md):
# scalar loads/stores, no cp.async, a barrier after every tile op. A result
# that differs only here or only above points at the new paths.
if ! want old; then
  log "SKIP: old-path rerun of the GPU tests (GPU_CHECK_PARTS)"; skip "old-path rerun"
elif [ "$(left 150)" -ge 30 ]; then
  # BLKC_CACHE_DISABLE: cached GPU modules do not key on these variables
  BLKC_CACHE_DISABLE=1 BLKC_GPU_NOVEC=1 BLKC_GPU_NOPIPE=1 BLKC_GPU_NOSYNCELIM=1 \
    ctest_run "ctest -L gpu old paths" "$T/ctest-old.log" -R '^gpu_' -L gpu --timeout 140
  if [ -x "$B/tests/nvrtc/gpu_vec_exec" ]; then # its lines, for the record
    timeout "$(left 60)" "$B/tests/nvrtc/gpu_vec_exec" >"$T/vec.log" 2>&1
    sed 's/^/  gpu_vec_exec: /' "$T/vec.log" | head -20 | tee -a "$RES"
  fi
else
  log "SKIP: old-path rerun of the GPU tests (budget)"; skip "old-path rerun"
fi

# ------------------------------------------------------------ ratios
HAVE_TORCH=0
if timeout 60 python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  HAVE_TORCH=1
  log "torch: $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tail -1)"
else
  log "SKIP: PyTorch with CUDA is not available (python3 -c 'import torch'): no reference timings"
fi

# predicted_bound NAME: the emulator's predicted bound for NAME (the hook
# for `blkc run --device=cuda-emu --stats`, which writes $PREDICTED lines
# "NAME MS [WHAT]"); "n/a" while there is no such file or line
predicted_bound() {
  local l
  l=$([ -f "$PREDICTED" ] && awk -v n="$1" '$1 == n { $1 = ""; sub(/^ /, ""); print; exit }' "$PREDICTED")
  if [ -n "$l" ]; then echo "predicted: $l"; else echo "predicted: n/a"; fi
}
# blkc_ms TIMEOUT ARGS...: median ms of `blkc run ... --bench=N`, with the
# variables of RUN_ENV (NAME=VALUE words) set
RUN_ENV=()
blkc_ms() {
  local to=$1; shift
  if [ "$(left "$to")" -lt 10 ]; then echo "budget" >"$T/blkc.log"; return 1; fi
  local rc=0
  timeout "$(left "$to")" env "${RUN_ENV[@]}" "$BLKC" run "$@" --device="$DEV" --random >"$T/blkc.log" 2>&1 || rc=$?
  { echo "== ${RUN_ENV[*]} blkc run $* (exit $rc)"; cat "$T/blkc.log"; } >>"$T/blkc-all.log"
  [ $rc = 0 ] || return 1
  sed -n 's/.*median \([0-9.eE+-]*\) ms.*/\1/p' "$T/blkc.log" | tail -1
}
# torch_ms WHAT: median ms of a PyTorch reference (gemm, copy, sdpa, sdpa_causal)
torch_ms() {
  [ $HAVE_TORCH = 1 ] || { echo "no torch" >"$T/torch.log"; return 1; }
  [ "$(left 90)" -ge 15 ] || { echo "budget" >"$T/torch.log"; return 1; }
  timeout "$(left 90)" python3 - "$1" >"$T/torch.log" 2>&1 <<'PYEOF' || return 1
import sys, torch
import torch.nn.functional as F
what = sys.argv[1]
dev = "cuda"
torch.manual_seed(0)
if what == "gemm_f8":
    # a [M, K] row-major, b [N, K] row-major: b.t() is the column-major
    # [K, N] operand cuBLASLt's fp8 GEMM takes; unit scales
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        raise SystemExit("torch %s lacks torch._scaled_mm / float8_e4m3fn" % torch.__version__)
    n = 4096
    a = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
    one = torch.ones((), device=dev, dtype=torch.float32)
    fn = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
elif what in ("gemm", "gemm8192"):
    n = 8192 if what == "gemm8192" else 4096
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    fn = lambda: torch.matmul(a, b)
elif what == "copy":
    x = torch.randn(8192, 8192, device=dev, dtype=torch.float32)
    y = torch.empty_like(x)
    fn = lambda: y.copy_(x)
elif what in ("sdpa", "sdpa_causal"):
    q, k, v = (torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.float16) for _ in range(3))
    c = what == "sdpa_causal"
    fn = lambda: F.scaled_dot_product_attention(q, k, v, scale=128 ** -0.5, is_causal=c)
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
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# bench NAME TORCH-WHAT GOAL WORK-EXPR UNIT BLKC-ARGS...: GPU_CHECK_ROUNDS
# rounds of blkc then torch, alternately; logs the medians, the ratio
# torch/blkc (a speed ratio: > 1 is blkc faster) against GOAL and the
# predicted bound. WORK-EXPR is an awk expression of t (ms) for the rate.
bench() {
  local name=$1 what=$2 goal=$3 work=$4 unit=$5; shift 5
  local r b c bs=() cs=() why=""
  for ((r = 0; r < ROUNDS; r++)); do
    if b=$(blkc_ms 150 "$@") && [ -n "$b" ]; then bs+=("$b"); else why=$(head -c 300 "$T/blkc.log" | tr '\n' ' '); break; fi
    if c=$(torch_ms "$what") && [ -n "$c" ]; then cs+=("$c"); fi
  done
  if [ ${#bs[@]} = 0 ]; then
    log "SKIP: $name on blkc: $why"; skip "$name"; return
  fi
  b=$(median "${bs[@]}")
  local rate
  rate=$(awk -v t="$b" "BEGIN { printf \"%.1f\", $work }")
  if [ ${#cs[@]} = 0 ]; then
    log "$name: blkc $b ms ($rate $unit; ${#bs[@]} rounds); $(predicted_bound "$name")"
    log "SKIP: $name reference ($what): $(tail -2 "$T/torch.log" 2>/dev/null | tr '\n' ' ')"
    skip "$name reference"; pass "$name"
    return
  fi
  c=$(median "${cs[@]}")
  local q
  q=$(ratio "$c" "$b")
  log "$name: blkc $b ms ($rate $unit), $what $c ms, ratio $q (goal >= $goal; ${#bs[@]} rounds alternating); $(predicted_bound "$name")"
  pass "$name"
  if awk -v q="$q" -v g="$goal" 'BEGIN { exit !(q >= g) }'; then pass "$name goal"; else
    log "  below the goal: $name $q < $goal"; skip "$name goal (below: $q)"; fi
}

# 128x256 blocks, 8 warps of 64x64: per K step the warps read 64 KB of
# operands through ldmatrix and cp.async writes 24 KB, against 2.1 MFLOP of
# mma -- the tensor cores limit (blkc run --device=cuda-emu --stats); at
# 128x128 with 8 warps (64x32 each) shared memory does (512 wavefronts per
# 1.05 MFLOP, above the H200's mma.sync rate)
cat >"$T/gemm_bf16.blk" <<'EOF'
kernel gemm_bf16<BM = 128, BN = 256, BK = 32, W = 8, S = 3>(A: bf16[M, K], B: bf16[K, N], C: bf16[M, N])
    grid(cdiv(M, BM), cdiv(N, BN)) warps(W) stages(S)
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
# fp8 (sm_90a only: wgmma m64nNk32 .e4m3 wants both operands K-major, so
# b is the transpose of an [N, K] tile; f32 accumulation, bf16 out)
cat >"$T/gemm_f8.blk" <<'EOF'
kernel gemm_f8<BM = 128, BN = 256, BK = 128, W = 8, S = 4>(A: f8e4m3[M, K], Bt: f8e4m3[N, K], C: bf16[M, N])
    grid(cdiv(M, BM), cdiv(N, BN)) warps(W) stages(S)
{
    let m = program_id(0) * BM;
    let n = program_id(1) * BN;
    var acc = zeros(f32, BM, BN);
    for k in 0 .. K step BK {
        acc = dot(A[m +: BM, k +: BK], trans(Bt[n +: BN, k +: BK]), acc);
    }
    C[m +: BM, n +: BN] = acc as bf16;
}
EOF
# examples/flash_attention.blk with its warps and stages as parameters W and
# ST (the example: 4 warps, the default, and stages(3), which on sm_90a
# lets its p v wgmma group stay in flight across the loop's back edge)
sed -e 's/CAUSAL = false>(/CAUSAL = false, W = 4, ST = 3>(/' -e 's/grid(cdiv(S, BM), Z) stages(3)$/grid(cdiv(S, BM), Z) warps(W) stages(ST)/' \
  examples/flash_attention.blk >"$T/flash_w.blk"
grep -q 'warps(W)' "$T/flash_w.blk" || cp examples/flash_attention.blk "$T/flash_w.blk"
# the configurations of the ratios below (GPU_CHECK_GEMM / GPU_CHECK_FLASH:
# -D lists, e.g. from the sweep's best line of an earlier run)
# The defaults are the best of the H200 sweep of 2026-12-04
# (benchmarks/results/gpu-20261204-162946.txt): GEMM 128x128x32 on 4 warps
# with 4 stages (0.446 ms; 128x256x32 on 8 warps, 3 stages: 0.509 ms),
# flash attention BM=128 BN=64 on 8 warps (1.526 ms; BN=32 on 4: 1.709 ms;
# both at 2 stages, before the example asked for 3: the default now runs 3)
read -r -a GEMM_DEFS <<<"${GPU_CHECK_GEMM:--D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=4}"
read -r -a FLASH_DEFS <<<"${GPU_CHECK_FLASH:--D BM=128 -D BN=64 -D W=8}"
# Hopper (issue 17): two consumer warpgroups of m64n256k16, 128B-swizzled
# operands by TMA, 4 x 48 KiB of ring (sm_90a keeps rings up to its
# 227 KiB), a producer warpgroup, a persistent grid (one block per SM,
# each looping over tiles in grouped order: backends/gpu/gpu_persist.c;
# the sweep times it against BLKC_GPU_NOPERSIST=1, and the 3-stage ring,
# which leaves room for the TMA-store epilogue's staging tile); never run
# on a GPU before. emu_persist runs this kernel on cuda-emu as sm_90a
read -r -a GEMM_H_DEFS <<<"${GPU_CHECK_GEMM_H:--D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=4}"
# fp8: the same m64n256 tile, 128-byte K rows (BK = 128 one-byte
# elements): 4 x 48 KiB of ring (never run on a GPU before)
read -r -a GEMM_F8_DEFS <<<"${GPU_CHECK_GEMM_F8:--D BM=128 -D BN=256 -D BK=128 -D W=8 -D S=4}"
FLASH_ARGS=(Z=32 S=4096 scale=0.08838834764831845 -D D=128)

if want ratios; then
  bench gemm_bf16 gemm 0.6 '2*4096^3/(t*1e-3)/1e12' TFLOP/s \
    "$T/gemm_bf16.blk" M=4096 N=4096 K=4096 "${GEMM_DEFS[@]}" --bench=10
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
  if [ -z "$cc" ] || [ "$cc" = 9.0 ]; then
    bench gemm_bf16_h gemm 0.9 '2*4096^3/(t*1e-3)/1e12' TFLOP/s \
      "$T/gemm_bf16.blk" M=4096 N=4096 K=4096 "${GEMM_H_DEFS[@]}" --bench=10
    bench gemm_bf16_h8192 gemm8192 0.9 '2*8192^3/(t*1e-3)/1e12' TFLOP/s \
      "$T/gemm_bf16.blk" M=8192 N=8192 K=8192 "${GEMM_H_DEFS[@]}" --bench=5
    bench gemm_f8_h gemm_f8 0.7 '2*4096^3/(t*1e-3)/1e12' TFLOP/s \
      "$T/gemm_f8.blk" M=4096 N=4096 K=4096 "${GEMM_F8_DEFS[@]}" --bench=10
  else
    log "SKIP: gemm_bf16_h, gemm_f8_h (compute capability $cc, not 9.0: no sm_90a)"
    skip gemm_bf16_h; skip gemm_f8_h
  fi
  # softmax: the ratio of times is the ratio of bandwidths (same bytes)
  bench softmax copy 0.8 '2*8192*8192*4/(t*1e-3)/1e9' 'GB/s read+write' \
    examples/softmax.blk R=8192 N=8192 -D BLOCK=8192 --bench=10
  # flash attention at BM=128 BN=32 (4 warps of 32 query rows: the score
  # tile, p and the row max / sum stay in mma registers; K and V are read
  # once per 32 rows)
  bench flash_fwd sdpa 0.5 '4*32*4096*4096*128/(t*1e-3)/1e12' TFLOP/s \
    "$T/flash_w.blk" "${FLASH_ARGS[@]}" "${FLASH_DEFS[@]}" --bench=5
  bench flash_fwd_causal sdpa_causal 0.5 '2*32*4096*4096*128/(t*1e-3)/1e12' TFLOP/s \
    "$T/flash_w.blk" "${FLASH_ARGS[@]}" "${FLASH_DEFS[@]}" -D CAUSAL=true --bench=5
else
  log "SKIP: ratios (GPU_CHECK_PARTS)"; skip ratios
fi

# (the GEMM's BLKC_GPU_NOFRAGPIPE=1 lines time its ring loop with the
# ldmatrix fragments loaded after the loop top's barrier, the form of the
# H200 run of 2026-12-04, against gpu_fragpipe.c's double buffers;
# on sm_90a flash attention's ring is warp-specialized, one block per
# SM: the two BLKC_GPU_NOWS=1 lines of its sweep time the old ring, which
# may fit more blocks, against it; and persistent, min(programs, SMs)
# blocks looping over tiles, causal ones longest first: the
# BLKC_GPU_NOPERSIST=1 lines time a block per program against it)
# sweep NAME WORK-EXPR CONFIG-LIST FILE ARGS...: blkc alone at each
# configuration (";"-separated -D lists; a word env:NAME=VALUE sets that
# variable for the run, e.g. env:BLKC_GPU_MINBLOCKS=2), TFLOP/s each, then
# the best
sweep() {
  local name=$1 work=$2 list=$3 file=$4; shift 4
  local cfg t rate best="" bestt="" cfgs=() w
  IFS=';' read -r -a cfgs <<<"$list"
  for cfg in "${cfgs[@]}"; do
    local defs=() words=()
    read -r -a words <<<"$cfg"
    RUN_ENV=()
    for w in "${words[@]}"; do
      case $w in env:*) RUN_ENV+=("${w#env:}") ;; *) defs+=("$w") ;; esac
    done
    if t=$(blkc_ms 60 "$file" "$@" "${defs[@]}" --bench=5) && [ -n "$t" ]; then
      rate=$(awk -v t="$t" "BEGIN { printf \"%.1f\", $work }")
      log "sweep $name: $cfg: $t ms, $rate TFLOP/s"
      if [ -z "$bestt" ] || awk -v a="$t" -v b="$bestt" 'BEGIN { exit !(a < b) }'; then
        best=$cfg bestt=$t
      fi
    else
      log "sweep $name: $cfg: failed: $(grep -v '^ *$' "$T/blkc.log" | tail -2 | tr '\n' ' ' | head -c 300)"
    fi
  done
  RUN_ENV=()
  [ -z "$best" ] || log "sweep $name: best $best ($bestt ms)"
}
if want sweep; then
  sweep gemm_bf16 '2*4096^3/(t*1e-3)/1e12' \
    "-D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=4;env:BLKC_GPU_NOFRAGPIPE=1 -D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=4;env:BLKC_GPU_NOFRAGPIPE=1 -D BM=128 -D BN=256 -D BK=32 -D W=8 -D S=3;-D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=3;-D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=5;-D BM=128 -D BN=128 -D BK=32 -D W=8 -D S=4;-D BM=128 -D BN=256 -D BK=32 -D W=8 -D S=4;-D BM=256 -D BN=128 -D BK=32 -D W=8 -D S=4;-D BM=128 -D BN=256 -D BK=32 -D W=8 -D S=3;-D BM=128 -D BN=64 -D BK=32 -D W=4 -D S=4;-D BM=128 -D BN=128 -D BK=64 -D W=4 -D S=3;-D BM=128 -D BN=256 -D BK=32 -D W=8 -D S=5;-D BM=256 -D BN=128 -D BK=32 -D W=8 -D S=5;env:BLKC_GPU_MINBLOCKS=3 -D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=4;-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=4;env:BLKC_GPU_NOPERSIST=1 -D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=4;-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=3" \
    "$T/gemm_bf16.blk" M=4096 N=4096 K=4096
  sweep flash_fwd '4*32*4096*4096*128/(t*1e-3)/1e12' \
    "-D BM=128 -D BN=64 -D W=8 -D ST=2;-D BM=128 -D BN=64 -D W=8 -D ST=3;-D BM=128 -D BN=64 -D W=8 -D ST=4;env:BLKC_GPU_NOWGKEEP=1 -D BM=128 -D BN=64 -D W=8 -D ST=3;env:BLKC_GPU_NOQKPIPE=1 -D BM=128 -D BN=64 -D W=8 -D ST=3;-D BM=128 -D BN=32 -D W=8 -D ST=2;-D BM=128 -D BN=32 -D W=4 -D ST=3;-D BM=64 -D BN=64 -D W=4 -D ST=2;-D BM=64 -D BN=32 -D W=4 -D ST=3;-D BM=128 -D BN=128 -D W=8 -D ST=1;env:BLKC_GPU_MINBLOCKS=2 -D BM=128 -D BN=64 -D W=8 -D ST=2;env:BLKC_GPU_MINBLOCKS=3 -D BM=64 -D BN=64 -D W=4 -D ST=2;env:BLKC_GPU_NOWS=1 -D BM=128 -D BN=64 -D W=8 -D ST=3;env:BLKC_GPU_NOWS=1 -D BM=64 -D BN=64 -D W=4 -D ST=2;env:BLKC_GPU_NOPERSIST=1 -D BM=128 -D BN=64 -D W=8 -D ST=3" \
    "$T/flash_w.blk" "${FLASH_ARGS[@]}"
  sweep flash_fwd_causal '2*32*4096*4096*128/(t*1e-3)/1e12' \
    "-D CAUSAL=true -D BM=128 -D BN=64 -D W=8 -D ST=3;env:BLKC_GPU_NOPERSIST=1 -D CAUSAL=true -D BM=128 -D BN=64 -D W=8 -D ST=3" \
    "$T/flash_w.blk" "${FLASH_ARGS[@]}"
else
  log "SKIP: sweep (GPU_CHECK_PARTS)"; skip sweep
fi
# ncu: Nsight Compute's Speed Of Light, warp-state and memory sections of
# one launch of the ratios' GEMM and flash attention (GPU_CHECK_PARTS
# "ncu"; where the toolkit has ncu), into $OUT/ncu-*.txt: which unit
# limits on the real GPU, beside the emulator's prediction
if want ncu; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -z "$NCU" ]; then
    log "SKIP: ncu (no Nsight Compute here)"; skip ncu
  else
    for w in gemm flash; do
      if [ "$(left 90)" -lt 30 ]; then log "SKIP: ncu $w (budget)"; skip "ncu $w"; continue; fi
      if [ $w = gemm ]; then a=("$T/gemm_bf16.blk" M=4096 N=4096 K=4096 "${GEMM_DEFS[@]}");
      else a=("$T/flash_w.blk" "${FLASH_ARGS[@]}" "${FLASH_DEFS[@]}"); fi
      timeout "$(left 90)" "$NCU" --launch-skip 1 --launch-count 1 --section SpeedOfLight \
        --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats \
        --section Occupancy "$BLKC" run "${a[@]}" --bench=2 --device="$DEV" --random >"$T/ncu-$w.txt" 2>&1
      rc=$?
      [ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$T/ncu-$w.txt" "$OUT/ncu-$w.txt"
      if [ $rc = 0 ]; then
        log "ncu $w: $(grep -E 'Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Registers Per Thread|Achieved Occupancy' "$T/ncu-$w.txt" | tr -s ' ' | tr '\n' ';' | head -c 600)"
        pass "ncu $w"
      else
        log "ncu $w: exit $rc: $(tail -3 "$T/ncu-$w.txt" | tr '\n' ' ' | head -c 300)"; skip "ncu $w"
      fi
    done
  fi
fi
log "results: $RES"

# ------------------------------------------------------------ GPU ranks
# tests/gpu/gpu_ranks.sh (also ctest gpu_ranks above): device functions
# and lib/ patterns on 1, 2 and 4 ranks of $DEV vs the CPU references,
# each case's line in the results; NCCL is forced on one rank.
if ! want ranks; then
  log "SKIP: GPU ranks (GPU_CHECK_PARTS)"; skip "GPU ranks"
elif [ "$(left 200)" -lt 60 ]; then
  log "SKIP: GPU ranks (budget)"; skip "GPU ranks"
else
  refs=()
  [ "$PRESET" = gpu ] && refs=(env "BLKC_GPU_REFS=$ROOT/build-gpu-prep/refs")
  timeout "$(left 200)" "${refs[@]}" bash tests/gpu/gpu_ranks.sh "$BLKC" "$B/tests/gpu/gpu_npycmp" "$ROOT" \
    >"$T/granks.log" 2>&1
  grc=$?
  sed 's/^/  granks: /' "$T/granks.log" >>"$RES"
  case $grc in
    0) log "GPU ranks: $(tail -1 "$T/granks.log")"; pass "GPU ranks" ;;
    77) log "SKIP: GPU ranks: $(head -1 "$T/granks.log")"; skip "GPU ranks" ;;
    *) log "FAIL: GPU ranks (exit $grc): $(grep -c '^FAIL' "$T/granks.log") failing cases"; fail "GPU ranks" ;;
  esac
fi
