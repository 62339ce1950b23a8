#!/usr/bin/env bash
# emu.sh MODE BLKC NPYCMP SRCDIR — the emulated devices (ctest label emu).
#   wrappers-cuda / wrappers-hip   tests/emu/t_wrappers.cpp built with the
#       host C++ compiler against runtime/emu/blk_emu.h and run; then built
#       with -DBLK_EMU_BREAK_LAYOUT (a wrong fragment table) and required
#       to fail
#   exec-cuda-emu / exec-hip-emu   tests/gpu/gpu_exec.sh on that device
#       (every case against --device=cpu; small shapes with tails)
#   paths   examples/ and tests/emu/tchain.blk on cuda-emu against the
#       CPU on the default code paths and under each BLKC_GPU_NOPIPE,
#       BLKC_GPU_NOHOIST, BLKC_GPU_NOVEC, BLKC_GPU_NOSYNCELIM, BLKC_GPU_SMEM (the all-shared
#       path; the coverage nvrtc_emu had); flash attention and matmul
#       byte-identical under BLKC_GPU_NOLDSMXOR / NOCPIMM / NOEX2FTZ, and
#       under BLKC_GPU_NOLOOPSPLIT (flash attention at S with and without
#       a tail, causal too, the ring loop of gpu_check's configuration);
#       gpu_check's bf16 GEMM, matmul and flash attention under
#       BLKC_GPU_NOCPLIM32 / NOCPGUARD32; the GEMM and a linear layer
#       (trans(W)) under BLKC_GPU_NOFRAGPIPE, and that form in the CUDA C;
#       on hip-emu the same under BLKC_GPU_NOHIPSTAGE (HIP's register-staged
#       rings), the ring in the HIP C, none in flash attention's
#   lib-cuda-emu / lib-hip-emu   kernels of lib/*.blk on one rank (their
#       device functions need GPU ranks, which the emulated devices refuse)
#   bufs    tests/emu/tbufs.blk on cuda-emu and hip-emu against the CPU:
#       generated expressions longer than the emitters' old fixed buffers
#       (nested broadcasts of 8-D tiles under a reduction, parameter names
#       of 256 characters, ring loads with long indices)
#   knames  tests/gpu/data/knames.blk (kernels named memcpy, tanf, printf,
#       main, int, BlkTensor, threads, addr, ...) through blkc run on the
#       CPU, cuda-emu and hip-emu; run output, --stats and a refusal name
#       the kernel as written, the CUDA C defines blk_k_NAME; a kernel name
#       of 256 characters runs, 257 are refused
#   layouts   tests/emu/tblocked.blk (BLOCKED register tiles with tails,
#       the SHARED fallback) and tests/emu/tslice.blk (SLICE: row
#       reductions in registers), tcols.blk (slice / flip / cat along the
#       last axis), tmrow.blk (row values of MMA tiles) and
#       tparts.blk (register dots a part at a time) on cuda-emu and hip-emu
#       against the CPU, the
#       layouts --emit=gpu-ir reports for it, and no shared-memory tile
#       round trip left in examples/softmax.blk and layernorm.blk (only
#       the barriers of their reductions' cross-warp step)
#   stats-cuda-emu / stats-hip-emu  --stats shows tensor-core instructions
#       for examples/matmul.blk and examples/flash_attention.blk; exact
#       counts of a 128 x 128 matmul block (cuda-emu)
#   mfma    tests/emu/tmfma.blk and matmul 128 x 128 on hip-emu against
#       the CPU: MFMA 32x32x8 (whole 32x32 fragments) and 16x16x16
#   debug   tests/gpu/data/tprint.blk: print(...) of f32/f64/f16/bf16/int/
#       bool tiles and scalars on cuda-emu and hip-emu (device printf, on
#       stdout) gives exactly the lines of the CPU (glibc's %g, on stderr);
#       tests/gpu/data/tassert.blk: assert of a 32 x 32 tile whose failing
#       element sits in a late warp, in the first, a middle and the tail
#       block: exit 3 and the CPU's exact message; none failing: exit 0
#   sample-stats  --stats-sample=N: scaled counts equal the full run's on
#       uniform blocks; examples/matmul.blk at 128 x 128 x 32, 1024^3, is
#       limited by the tensor cores on the H200; --out refused
#   tma     tests/emu/t_tma.cpp built with the host C++ compiler against
#       runtime/emu/blk_emu_tma.h (tensor maps of rank 1 to 5, mbarriers,
#       cp.async.bulk.tensor loads and stores, a TMA ring feeding wgmma)
#       and run
#   wgrace  tests/emu/t_wgrace.cpp, the same way: stores, cp.async and TMA
#       into the shared operands of a wgmma group in flight fail, after
#       the retiring wait_group they pass; wait_group 1 retires the older;
#       B of a wgmma with A from registers the same; a 3-slot ring of
#       register-A groups kept across the back edge (keep_plan's shape):
#       refilled 1 step ahead passes, 2 steps ahead fails at the cp.async
#   cprace  tests/emu/t_cprace.cpp, the same way: cp.async / ldmatrix
#       across warps (runtime/emu/blk_emu_race.h): a refill of rows another
#       warp read, a read of rows another warp's cp.async landed, with no
#       barrier joining them, fail; __syncthreads or bar.sync 1, n taken by
#       both warps (or a chain of named barriers) passes; one warp alone
#       passes; a 2-slot ring with the barrier missing or after the refill
#       fails, in place passes
#   plrace  tests/emu/t_plrace.cpp, built twice (cuda-emu: warps of 32;
#       hip-emu, -DBLK_EMU_HIP: wavefronts of 64) and run: plain
#       shared-memory loads / stores across warps (blk_emu_sld / _sst,
#       the generated BLK_SLD / BLK_SST): RAW, WAR, WAW with and without
#       barriers, different bytes of one chunk, a tile loop, static
#       __shared__ partials and cells (the reductions' blk_redN, scalar
#       atomics' blk_atomN) with each barrier left out, and (CUDA)
#       against cp.async / ldmatrix
#   ws      tests/emu/t_ws.cpp, the same way: named barriers (bar.sync id, n),
#       setmaxnreg's rules and register pool, the mbarrier arrival hand-off
#   wgf8    tests/emu/t_wgf8.cpp, the same way: the fp8 decode (all codes of
#       e4m3 and e5m2) and hand-written m64nNk32 e4m3 / e5m2 wgmma in the
#       128B and 32B swizzles against exact sums
#   wgrs    tests/emu/t_wgrs.cpp: hand-written wgmma with A from registers
#       (f16 with B N-major, bf16 with B K-major) against exact sums; built
#       with the emulator's A fragment table broken it must fail
#   wgmma   cuda-emu as sm_90a (BLKC_EMU_ARCH): tests/emu/twgmma.blk (bf16,
#       f16, b transposed; 64 x 64 on 4 warps, 128 x 128 on 4 and on 8
#       warps) and examples/matmul.blk against the CPU, their dots on
#       wgmma.mma_async (gpu-ir; --stats: exact wgmma counts), none on the
#       default sm_80; a bad BLKC_EMU_ARCH is exit 3; three launches of a
#       TMA kernel encode its 2 tensor maps once (--stats); one wgmma group
#       in flight across k steps: TMA and cp.async rings at stages(2..4)
#       against the CPU, wait_group 1 in the ring loop and 0 after it in
#       the CUDA C the launch ran (wait_group 0 in it for stages(2) and
#       BLKC_GPU_WGSYNC=1); the warp-specialized TMA ring (a producer
#       warpgroup, setmaxnreg, empty mbarriers, no block barrier in the
#       loop: --stats barriers exact) against the CPU, BLKC_GPU_NOWS=1 not;
#       a batch of GEMMs over rank-3 tensors (twg_batched): rank-3 tensor
#       maps, warp-specialized
#   persist cuda-emu as sm_90a: the persistent grid (backends/gpu/gpu_persist.c)
#       of the warp-specialized wgmma GEMMs of twgmma.blk, tpersist.blk and
#       benchmarks/gpu_check.sh against the CPU: min(programs,
#       $BLKC_EMU_SMS) blocks each looping over tiles (--stats), tile
#       counts not divisible by the blocks, M / N / K tails, bf16 / f16 /
#       fp8, 4 and 8 consumer warps, a 1-D grid, a 3-D one (program_id(2),
#       num_programs), tiles of different trip counts (none in the first
#       row); the tile loop in the CUDA C the launch ran (the accumulator
#       zeroed by the tile's first wgmma: scale-d 0); the
#       kernels it must refuse (an atomic, a return) and BLKC_GPU_NOPERSIST=1
#       keep a block per program
#   wgflash cuda-emu as sm_90a: flash attention (examples/flash_attention.blk
#       f16 stages(3), tests/emu/tflash.blk bf16; causal or not, BN 32 / 64,
#       D 64 / 128, stages 2 to 4, 4 or 8 warps; tails in S; K and V packed
#       in one tensor, the [B, S, H, D] layout) against the CPU with both
#       dots on wgmma (S = q k^T from shared memory, acc += p v with p from
#       the registers): gpu-ir, --stats' exact wgmma count, no ldmatrix, and
#       in the CUDA C the launch ran the p v group kept in flight across the
#       back edge (stages >= 3) or not (stages(2), BLKC_GPU_NOWGKEEP=1,
#       BLKC_GPU_WGSYNC=1):
#       wait_group counts and the ring's prefetch distance; the K / V ring
#       on TMA (rank-3 and rank-4 tensor maps; --stats' exact box count),
#       on cp.async with BLKC_GPU_NOTMA=1, none when the rows' stride is
#       not a multiple of 16 elements;
#       BLKC_GPU_NOWGREG=1 and sm_80 leave both on mma.sync
#   pch     the shared precompiled emulator header (runtime/gpu_emu.c): a
#       fresh cache gets one per compiler and dialect; a damaged one
#       (GCC ignores it, clang rejects it: set aside, nopch) never fails a
#       module, with the host compiler and with clang++ (--stats); the
#       emulator's runtime object (rt/blk_emu_rt.o, linked into every
#       module; --stats has its own) is built, and a damaged one never
#       fails a module either (set aside: rt/nort)
# Exit 77 without a C++ compiler.
set -u
MODE=$1 BLKC=$2 NPYCMP=$3 SRC=$4
CXX=${CXX:-c++}
command -v "$CXX" >/dev/null 2>&1 || { echo "skip: no C++ compiler"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-emu.XXXXXX")
trap 'rm -rf "$T"' EXIT
# lone KERNEL "OUTS" ARGS...: kernel KERNEL of $F on the CPU, cuda-emu and
# hip-emu (--random --seed=4), outputs OUTS compared within LTOL
lone() {
  local k=$1 outs=$2 dev o i; shift 2
  local oc=()
  i=0; for o in $outs; do oc+=(--out "$o=$T/c.$((i++)).npy"); done
  if ! timeout 120 "$BLKC" run "$F" --entry="$k" "$@" --random --seed=4 "${oc[@]}" >"$T/log" 2>&1; then
    echo "FAIL $k on the CPU: $(cat "$T/log")"; fail=1; return
  fi
  for dev in cuda-emu hip-emu; do
    local oe=()
    i=0; for o in $outs; do oe+=(--out "$o=$T/e.$((i++)).npy"); done
    if ! timeout 120 "$BLKC" run "$F" --entry="$k" "$@" --random --seed=4 --device=$dev "${oe[@]}" >"$T/log" 2>&1; then
      echo "FAIL $k on $dev: $(cat "$T/log")"; fail=1; continue
    fi
    i=0; for o in $outs; do
      "$NPYCMP" "$T/e.$i.npy" "$T/c.$i.npy" ${LTOL:-1e-5 1e-5} >"$T/cmp" 2>&1 ||
        { echo "FAIL $k on $dev output $o: $(cat "$T/cmp")"; fail=1; continue 2; }
      i=$((i + 1))
    done
    echo "ok $k on $dev"
  done
}
# refused FILE MESSAGE "TARGET ARGS"...: compiling FILE for each target
# fails with MESSAGE (a grep pattern)
refused() {
  local f=$1 msg=$2 t; shift 2
  for t in "$@"; do
    # shellcheck disable=SC2086
    if "$BLKC" compile "$f" --target=$t >"$T/log" 2>&1 || ! grep -q "$msg" "$T/log"; then
      echo "FAIL $f --target=$t should say '$msg': $(cat "$T/log")"; fail=1
    fi
  done
}
case $MODE in
wrappers-*)
  if [ "$MODE" = wrappers-hip ]; then defs="-DBLK_EMU_HIP=1 -D__gfx90a__=1"; else defs="-D__CUDA_ARCH__=800"; fi
  # shellcheck disable=SC2086
  "$CXX" -std=c++17 -O1 -pthread -DBLK_EMU=1 $defs -I"$SRC/runtime/emu" \
    "$SRC/tests/emu/t_wrappers.cpp" -o "$T/t" || { echo "FAIL: compile"; exit 1; }
  timeout 120 "$T/t" || exit 1
  # the same with the portable fiber switch (ucontext, not the x86-64 assembly)
  # shellcheck disable=SC2086
  "$CXX" -std=c++17 -O1 -pthread -DBLK_EMU=1 -DBLK_EMU_UCONTEXT $defs -I"$SRC/runtime/emu" \
    "$SRC/tests/emu/t_wrappers.cpp" -o "$T/tu" || { echo "FAIL: compile (ucontext)"; exit 1; }
  timeout 120 "$T/tu" >"$T/log" 2>&1 || { echo "FAIL with ucontext fibers:"; cat "$T/log"; exit 1; }
  # shellcheck disable=SC2086
  "$CXX" -std=c++17 -O1 -pthread -DBLK_EMU=1 -DBLK_EMU_BREAK_LAYOUT $defs -I"$SRC/runtime/emu" \
    "$SRC/tests/emu/t_wrappers.cpp" -o "$T/tb" || { echo "FAIL: compile (broken layout)"; exit 1; }
  if timeout 120 "$T/tb" >"$T/log" 2>&1; then
    echo "FAIL: a swapped fragment mapping (BLK_EMU_BREAK_LAYOUT) went unnoticed"; exit 1
  fi
  echo "ok: the swapped fragment mapping fails: $(head -1 "$T/log")"
  ;;
wgrs)
  # A from registers (t_wgrs.cpp), and with the emulator's fragment table
  # broken (BLK_EMU_BREAK_AREG) the same test must fail
  for d in "" -DBLK_EMU_BREAK_AREG; do
    # shellcheck disable=SC2086
    "$CXX" -std=c++17 -O1 -pthread -DBLK_EMU=1 -D__CUDA_ARCH__=900 -D__CUDA_ARCH_FEAT_SM90_ALL=1 $d \
      -I"$SRC/runtime/emu" "$SRC/tests/emu/t_wgrs.cpp" -o "$T/t" || { echo "FAIL: compile $d"; exit 1; }
    if [ -z "$d" ]; then
      timeout 120 "$T/t" || exit 1
    elif timeout 120 "$T/t" >"$T/log" 2>&1; then
      echo "FAIL: a broken A fragment table (BLK_EMU_BREAK_AREG) went unnoticed"; exit 1
    else
      echo "ok: the broken A fragment table fails: $(head -1 "$T/log")"
    fi
  done
  ;;
tma|wgrace|cprace|ws|wgf8)
  src=$SRC/tests/emu/t_tma.cpp
  [ "$MODE" = wgrace ] && src=$SRC/tests/emu/t_wgrace.cpp
  [ "$MODE" = cprace ] && src=$SRC/tests/emu/t_cprace.cpp
  [ "$MODE" = ws ] && src=$SRC/tests/emu/t_ws.cpp
  [ "$MODE" = wgf8 ] && src=$SRC/tests/emu/t_wgf8.cpp
  "$CXX" -std=c++17 -O1 -pthread -DBLK_EMU=1 -D__CUDA_ARCH__=900 -D__CUDA_ARCH_FEAT_SM90_ALL=1 \
    -I"$SRC/runtime/emu" "$src" -o "$T/t" || { echo "FAIL: compile"; exit 1; }
  timeout 120 "$T/t" || exit 1
  ;;
plrace)
  for defs in "-D__CUDA_ARCH__=800" "-DBLK_EMU_HIP=1 -D__gfx90a__=1"; do
    "$CXX" -std=c++17 -O1 -pthread -DBLK_EMU=1 $defs -I"$SRC/runtime/emu" \
      "$SRC/tests/emu/t_plrace.cpp" -o "$T/t" || { echo "FAIL: compile ($defs)"; exit 1; }
    timeout 120 "$T/t" || exit 1
  done
  ;;
exec-*)
  BLKC_GPU_DEVICE=${MODE#exec-} exec bash "$SRC/tests/gpu/gpu_exec.sh" "$BLKC" "$NPYCMP" "$SRC"
  ;;
paths)
  fail=0 EX=$SRC/examples
  # NAME FILE "RTOL ATOL" OUTS ARGS...
  one() {
    local name=$1 file=$2 tol=$3 outs=$4 o; shift 4
    local oc=() oe=()
    for o in $outs; do oc+=(--out "$o=$T/c.$o.npy"); oe+=(--out "$o=$T/e.$o.npy"); done
    if ! timeout 120 "$BLKC" run "$file" "$@" --random --seed=3 "${oc[@]}" >"$T/log" 2>&1 ||
       ! timeout 120 "$BLKC" run "$file" "$@" --random --seed=3 --device=cuda-emu "${oe[@]}" >"$T/log" 2>&1; then
      echo "FAIL $name ($path): $(cat "$T/log")"; fail=1; return
    fi
    for o in $outs; do
      # shellcheck disable=SC2086
      "$NPYCMP" "$T/e.$o.npy" "$T/c.$o.npy" $tol >"$T/cmp" 2>&1 ||
        { echo "FAIL $name ($path) output $o: $(cat "$T/cmp")"; fail=1; return; }
    done
    echo "ok $name ($path)"
  }
  for path in default BLKC_GPU_NOPIPE BLKC_GPU_NOHOIST BLKC_GPU_NOVEC BLKC_GPU_NOSYNCELIM BLKC_GPU_SMEM; do
    if [ $path != default ]; then export "$path=1"; fi
    one vector_add "$EX/vector_add.blk" "1e-6 1e-6" C N=1003
    one matmul "$EX/matmul.blk" "1e-4 1e-4" C M=200 N=144 K=112
    if [ $path = default ]; then # reductions / two dots: the default path only (time)
      one softmax "$EX/softmax.blk" "1e-5 1e-6" Y R=5 N=1008
      one flash_attention "$EX/flash_attention.blk" "2e-2 2e-2" O Z=1 S=130 scale=0.125
      # a 10 x 3 grid: two groups of grouped program ids (GROUP_M = 8)
      one matmul_groups "$EX/matmul.blk" "1e-4 1e-4" C M=600 N=144 K=112
      # 128 x 128 blocks, the epilogue from registers: column pairs cut by
      # N = 136 (8-byte stores and the element-by-element tail), M, K tails
      one matmul_128 "$EX/matmul.blk" "1e-4 1e-4" C -D BM=128 -D BN=128 M=200 N=136 K=72
      # the bf16 / f16 epilogue from the registers (a cast, a scale and a
      # cast, per register): bf16x2 / f16x2 pairs and the tails, on both
      # emulated devices (exact: the same f32 sums rounded once)
      for k in tepi_bf16 tepi_f16; do
        for dev in cuda-emu hip-emu; do
          if ! timeout 200 "$BLKC" run "$SRC/tests/emu/tepi.blk" --entry=$k M=200 N=136 K=72 --random --seed=3 --out C="$T/c.C.npy" >"$T/log" 2>&1 ||
             ! timeout 200 "$BLKC" run "$SRC/tests/emu/tepi.blk" --entry=$k M=200 N=136 K=72 --random --seed=3 --device=$dev --out C="$T/e.C.npy" >"$T/log" 2>&1 ||
             ! "$NPYCMP" "$T/e.C.npy" "$T/c.C.npy" 1e-2 1e-2 >"$T/log" 2>&1; then
            echo "FAIL $k on $dev: $(cat "$T/log")"; fail=1
          else
            echo "ok $k on $dev: $(cat "$T/log")"
          fi
        done
      done
    fi
    one tchain "$SRC/tests/emu/tchain.blk" "1e-5 1e-5" "Y Z"
    if [ $path != default ]; then unset "$path"; fi
  done
  # issue 12's forms (benchmarks/README.md round 16): ldmatrix lane base XOR
  # k, cp.async ring offsets + an immediate, f32 exp2 as ex2.approx.ftz;
  # turning each off must give the same bytes on cuda-emu (flash attention
  # uses all three, matmul 128 x 128 the first)
  same() { # name switch file out args...
    local name=$1 sw=$2 file=$3 o=$4; shift 4
    if ! timeout 120 "$BLKC" run "$file" "$@" --random --seed=3 --device=cuda-emu --out "$o=$T/a.npy" >"$T/log" 2>&1 ||
       ! env "$sw=1" timeout 120 "$BLKC" run "$file" "$@" --random --seed=3 --device=cuda-emu --out "$o=$T/b.npy" >"$T/log" 2>&1; then
      echo "FAIL $name ($sw): $(cat "$T/log")"; fail=1; return
    fi
    if cmp -s "$T/a.npy" "$T/b.npy"; then echo "ok $name: same bytes under $sw=1"
    else echo "FAIL $name: $sw=1 changes the output"; fail=1; fi
  }
  for sw in BLKC_GPU_NOLDSMXOR BLKC_GPU_NOCPIMM BLKC_GPU_NOEX2FTZ; do
    same flash_attention $sw "$EX/flash_attention.blk" O Z=1 S=130 scale=0.125
  done
  same matmul_128 BLKC_GPU_NOLDSMXOR "$EX/matmul.blk" C -D BM=128 -D BN=128 M=200 N=136 K=72
  # the loop split at flash attention's bounds mask (gpu_split.c): the
  # body with the mask folded in the steps with every key in range, the
  # body masked in the others (one loop, two bodies); S with a tail
  # step (130, 200, 333) and without (256), causal or not, the plain loop
  # and gpu_check's cp.async ring loop (BM=128 BN=64 W=8 stages 2)
  sed -e 's/CAUSAL = false>(/CAUSAL = false, W = 4, ST = 2>(/' \
      -e 's/grid(cdiv(S, BM), Z)$/grid(cdiv(S, BM), Z) warps(W) stages(ST)/' \
      "$EX/flash_attention.blk" >"$T/flash_w.blk"
  for S in 130 256; do
    for c in false true; do
      same "flash_attention S=$S causal=$c" BLKC_GPU_NOLOOPSPLIT "$EX/flash_attention.blk" O Z=2 S=$S scale=0.125 -D CAUSAL=$c
    done
  done
  for S in 200 333; do
    same "flash_attention ring S=$S" BLKC_GPU_NOLOOPSPLIT "$T/flash_w.blk" O Z=1 S=$S scale=0.125 -D BM=128 -D BN=64 -D W=8
  done
  same "flash_attention ring S=256 causal" BLKC_GPU_NOLOOPSPLIT "$T/flash_w.blk" O Z=1 S=256 scale=0.125 -D BM=128 -D BN=64 -D W=8 -D CAUSAL=true
  # round 18 (issue 12): the hoisted cp.async copies' k-step limit in 32
  # bits (BLKC_GPU_NOCPLIM32: clamped in 64) and the loop top's prefetch
  # test against an i32 bound (BLKC_GPU_NOCPGUARD32: in 64 bits);
  # gpu_check's bf16 GEMM at K a multiple of BK and not (208: the last
  # step's copies half out), below the prefetch distance (48), M / N
  # edges, two tile shapes; matmul.blk (f16); flash attention's ring loop
  sed -n "/^cat >\"\$T\/gemm_bf16.blk\" <<'EOF'$/,/^EOF$/p" "$SRC/benchmarks/gpu_check.sh" | sed '1d;$d' >"$T/gemm_bf16.blk"
  for sw in BLKC_GPU_NOCPLIM32 BLKC_GPU_NOCPGUARD32; do
    for sh in "M=256 N=256 K=256" "M=200 N=136 K=208"; do
      same "gemm_bf16 128x128x32 $sh" $sw "$T/gemm_bf16.blk" C $sh -D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=4
    done
    same "gemm_bf16 64x64x32 M=64 N=300 K=48" $sw "$T/gemm_bf16.blk" C M=64 N=300 K=48 -D BM=64 -D BN=64 -D BK=32 -D W=4 -D S=3
    same "matmul_128 M=200 N=136 K=208" $sw "$EX/matmul.blk" C -D BM=128 -D BN=128 M=200 N=136 K=208
    same "flash_attention ring S=200" $sw "$T/flash_w.blk" O Z=1 S=200 scale=0.125 -D BM=128 -D BN=64 -D W=8
  done
  # gpu_fragpipe.c (issue 12, round 29): a ring loop's ldmatrix fragments
  # double-buffered across its barrier; BLKC_GPU_NOFRAGPIPE=1 must give the
  # same bytes: gpu_check's GEMM at K a multiple of BK, below the ring's
  # distance (48) and of one step (16), stages 2-4, 8 warps at 128 x 256,
  # BK 64, and b read through trans (a linear layer's W [N, K]); the form
  # itself must be in the CUDA C the launch compiled
  cat >"$T/lin.blk" <<'EOF'
kernel lin<BM = 128, BN = 128, BK = 32>(X: f16[M, K], W: f16[N, K], Y: f32[M, N])
    grid(cdiv(M, BM), cdiv(N, BN)) warps(4) stages(3)
{
    let m = program_id(0) * BM;
    let n = program_id(1) * BN;
    var acc = zeros(f32, BM, BN);
    for k in 0 .. K step BK {
        acc = dot(X[m +: BM, k +: BK], trans(W[n +: BN, k +: BK]), acc);
    }
    Y[m +: BM, n +: BN] = acc;
}
EOF
  for a in "M=256 N=256 K=256 -D S=4" "M=256 N=256 K=256 -D BN=128 -D W=4 -D S=2" \
           "M=128 N=128 K=48 -D BN=128 -D W=4 -D S=4" "M=128 N=128 K=16 -D BN=128 -D W=4 -D S=3" \
           "M=256 N=256 K=192 -D BK=64 -D BN=128 -D W=4 -D S=3"; do
    # shellcheck disable=SC2086
    same "gemm_bf16 fragpipe $a" BLKC_GPU_NOFRAGPIPE "$T/gemm_bf16.blk" C $a
  done
  same "lin (trans W) fragpipe M=256 N=256 K=160" BLKC_GPU_NOFRAGPIPE "$T/lin.blk" Y M=256 N=256 K=160
  # HIP rings staged through registers (gpu_mem.c, round 29): hip-emu with
  # BLKC_GPU_NOHIPSTAGE=1 must give the same bytes (K a multiple of BK and
  # not, one step, stages 2 and 4, b read through trans), the ring must be
  # in the HIP C, and the example's flash attention keeps its loads in the
  # body (a second slot would leave one block per CU)
  samehip() { # name args... (file C ...)
    local name=$1 file=$2 o=$3; shift 3
    if ! timeout 120 "$BLKC" run "$file" "$@" --random --seed=3 --device=hip-emu --out "$o=$T/a.npy" >"$T/log" 2>&1 ||
       ! BLKC_GPU_NOHIPSTAGE=1 timeout 120 "$BLKC" run "$file" "$@" --random --seed=3 --device=hip-emu --out "$o=$T/b.npy" >"$T/log" 2>&1; then
      echo "FAIL $name (hip-emu): $(cat "$T/log")"; fail=1; return
    fi
    if cmp -s "$T/a.npy" "$T/b.npy"; then echo "ok $name: same bytes on hip-emu under BLKC_GPU_NOHIPSTAGE=1"
    else echo "FAIL $name: BLKC_GPU_NOHIPSTAGE=1 changes the hip-emu output"; fail=1; fi
  }
  for a in "M=256 N=256 K=256 -D S=3" "M=200 N=136 K=208 -D S=2" "M=128 N=128 K=16 -D S=4"; do
    # shellcheck disable=SC2086
    samehip "gemm_bf16 128x128 $a" "$T/gemm_bf16.blk" C $a -D BN=128 -D W=4
  done
  samehip "lin (trans W) M=256 N=256 K=160" "$T/lin.blk" Y M=256 N=256 K=160 -D BM=64 -D BN=64
  samehip "matmul M=130 N=72 K=100" "$EX/matmul.blk" C M=130 N=72 K=100
  mkdir -p "$T/hipdump"
  if BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP="$T/hipdump" timeout 120 "$BLKC" run "$T/gemm_bf16.blk" M=256 N=256 K=256 \
       -D BN=128 -D W=4 --random --device=hip-emu >"$T/log" 2>&1 &&
     grep -q 'staged through registers one iteration ahead' "$T"/hipdump/*.hip; then
    echo "ok gemm_bf16: a register-staged ring in the HIP C"
  else
    echo "FAIL gemm_bf16: no register-staged ring in the HIP C ($(tail -1 "$T/log"))"; fail=1
  fi
  rm -f "$T"/hipdump/*
  if BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP="$T/hipdump" timeout 120 "$BLKC" run "$EX/flash_attention.blk" Z=1 S=256 \
       scale=0.125 --random --device=hip-emu >"$T/log" 2>&1 &&
     ! grep -q 'staged through registers one iteration ahead' "$T"/hipdump/*.hip; then
    echo "ok flash attention on hip-emu: loads in the body (24 KiB of LDS; a ring: 40)"
  else
    echo "FAIL flash attention on hip-emu: a register-staged ring past 32 KiB of LDS, or no run ($(tail -1 "$T/log"))"; fail=1
  fi
  # a ring whose stages(4) would pass sm_80's shared memory takes 3 (was:
  # no ring at all, a kernel ptxas spilled 7.7 KB of; 37x slower on the
  # H200): gpu_check's GEMM at 128 x 256 x 64 on 8 warps against the CPU
  mkdir -p "$T/s4dump"
  if BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP="$T/s4dump" timeout 120 "$BLKC" run "$T/gemm_bf16.blk" M=256 N=256 K=320 \
       -D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=4 --random --seed=3 --device=cuda-emu --out C="$T/a.npy" >"$T/log" 2>&1 &&
     timeout 120 "$BLKC" run "$T/gemm_bf16.blk" M=256 N=256 K=320 -D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=4 \
       --random --seed=3 --out C="$T/b.npy" >>"$T/log" 2>&1 &&
     "$NPYCMP" "$T/a.npy" "$T/b.npy" 1e-2 1e-2 >>"$T/log" 2>&1 &&
     grep -q '// stages(3): 2 cp.async ring load' "$T"/s4dump/*.cu; then
    echo "ok gemm_bf16 128x256x64 stages(4): a ring of 3, equal to the CPU"
  else
    echo "FAIL gemm_bf16 128x256x64 stages(4): $(tail -2 "$T/log")"; fail=1
  fi
  mkdir -p "$T/fpdump"
  if BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP="$T/fpdump" timeout 120 "$BLKC" run "$T/gemm_bf16.blk" M=256 N=256 K=256 \
       -D BN=128 -D W=4 -D S=4 --random --device=cuda-emu >"$T/log" 2>&1 &&
     grep -q 'fragments double-buffered (gpu_fragpipe.c)' "$T"/fpdump/*.cu; then
    echo "ok gemm_bf16: fragments double-buffered in the CUDA C"
  else
    echo "FAIL gemm_bf16: no gpu_fragpipe.c form in the CUDA C ($(tail -1 "$T/log"))"; fail=1
  fi
  path=default
  one "gemm_bf16 128x128x32 M=200 N=136 K=208" "$T/gemm_bf16.blk" "1e-2 1e-2" C M=200 N=136 K=208 -D BM=128 -D BN=128 -D BK=32 -D W=4 -D S=4
  # the split form itself against the CPU (tail steps and causal)
  path=default
  one "flash_attention S=333 causal" "$EX/flash_attention.blk" "2e-2 2e-2" O Z=1 S=333 scale=0.125 -D CAUSAL=true
  one "flash_attention ring S=200" "$T/flash_w.blk" "2e-2 2e-2" O Z=1 S=200 scale=0.125 -D BM=128 -D BN=64 -D W=8
  exit $fail
  ;;
debug)
  fail=0 D=$SRC/tests/gpu/data
  args=(X=@"$D/print_x.npy" W=@"$D/print_w.npy" I=@"$D/print_i.npy")
  timeout 120 "$BLKC" run "$D/tprint.blk" "${args[@]}" 2>"$T/cpu" >/dev/null ||
    { echo "FAIL on the CPU: $(cat "$T/cpu")"; exit 1; }
  # s is sum(x) over a block holding +NaN, -NaN and inf, -inf: IEEE 754
  # leaves the sign of the NaN it returns open (x86 returns one operand's,
  # which hangs on the order the C++ compiler picks; a GPU its canonical
  # NaN), so that one field compares without the sign
  nosign() { grep '^pid ' "$1" | sed 's/ s -nan / s nan /' | sort; }
  nosign "$T/cpu" >"$T/want"
  [ "$(wc -l <"$T/want")" -eq 6 ] || { echo "FAIL: the CPU printed $(wc -l <"$T/want") lines, want 6"; exit 1; }
  for dev in cuda-emu hip-emu; do
    if ! timeout 120 "$BLKC" run "$D/tprint.blk" "${args[@]}" --device=$dev >"$T/out" 2>"$T/err"; then
      echo "FAIL on $dev: $(cat "$T/err")"; fail=1; continue
    fi
    nosign "$T/out" >"$T/got"
    if ! cmp -s "$T/got" "$T/want" || grep -q '^pid ' "$T/err"; then
      echo "FAIL on $dev: lines differ from the CPU's:"; diff "$T/got" "$T/want" | head -20; fail=1; continue
    fi
    echo "ok print on $dev ($(wc -l <"$T/got") lines equal to the CPU's)"
  done
  for at in 1023 1990 0 -1; do
    want=0 msg=""
    if [ "$at" -ge 0 ]; then
      want=3 msg="blkc: error: $D/tassert.blk:6: kernel chk: assertion failed in program ($((at / 1024)), 0, 0): A must be non-negative"
    fi
    for dev in cpu cuda-emu hip-emu; do
      timeout 120 "$BLKC" run "$D/tassert.blk" N=2000 at="$at" --device=$dev >"$T/out" 2>"$T/err"
      rc=$? got=$(grep -v ' ms on ' "$T/err")
      if [ $rc -ne $want ] || [ "$got" != "$msg" ]; then
        echo "FAIL assert at=$at on $dev: exit $rc (want $want), stderr: $got"; fail=1; continue
      fi
      echo "ok assert at=$at on $dev: exit $rc"
    done
  done
  exit $fail
  ;;
bufs)
  # fused expressions longer than the GPU emitters' old fixed buffers
  # (tests/emu/tbufs.blk, issue 12)
  fail=0 F=$SRC/tests/emu/tbufs.blk
  lone tbf_bcast8 O N=3
  # ring loads with long future indices: correct everywhere, and on
  # cuda-emu the specialized variant builds (no warning) with B's load in
  # the ring (idx4: 2 x 1536 copies) or not (idx5: A's 1536 only)
  LTOL="1e-4 1e-4" lone tbf_ring_idx4 C M=64 N=64 K=96
  LTOL="1e-4 1e-4" lone tbf_ring_idx5 C M=64 N=64 K=96
  for k in "tbf_ring_idx4 3072" "tbf_ring_idx5 1536"; do
    set -- $k
    "$BLKC" run "$F" --entry="$1" M=64 N=64 K=96 --random --device=cuda-emu --stats >"$T/log" 2>&1
    if grep -qi warning "$T/log" || ! grep -q "cp.async $2\$" "$T/log"; then
      echo "FAIL $1 on cuda-emu: wanted no warning and cp.async $2: $(cat "$T/log")"; fail=1
    else
      echo "ok $1: cp.async $2"
    fi
  done
  # the tbf_names_* kernels with every parameter X_N renamed to 256
  # characters (BK_GPU_NAME), then to 257: refused on every GPU target
  L=$(printf 'n%.0s' $(seq 254))
  sed -E "s/\b([A-Z])_N\b/\1_$L/g" "$SRC/tests/emu/tbufs.blk" >"$T/names.blk"
  F=$T/names.blk
  LTOL="1e-5 1e-5" lone tbf_names_rows "Y_$L S_$L T_$L" B=3 R=5 N=100
  LTOL="1e-4 1e-4" lone tbf_names_mm "C_$L" M=70 N=40 K=96
  "$BLKC" run "$F" --entry=tbf_names_mm M=70 N=40 K=96 --random --seed=4 --out "C_$L=$T/c.mm.npy" >"$T/log" 2>&1 &&
    BLKC_EMU_ARCH=sm_90a "$BLKC" run "$F" --entry=tbf_names_mm M=70 N=40 K=96 --random --seed=4 \
      --device=cuda-emu --out "C_$L=$T/e.mm.npy" >>"$T/log" 2>&1 &&
    "$NPYCMP" "$T/e.mm.npy" "$T/c.mm.npy" 1e-4 1e-4 >>"$T/log" 2>&1 ||
    { echo "FAIL tbf_names_mm on cuda-emu as sm_90a: $(cat "$T/log")"; fail=1; }
  sed -E "s/\b([A-Z])_N\b/\1_${L}n/g" "$SRC/tests/emu/tbufs.blk" >"$T/long.blk"
  refused "$T/long.blk" "is 257 characters long; the GPU backends take at most 256" \
    "cuda --emit=cuda --entry=tbf_names_mm" "cuda --emit=cuda --arch=sm_90a --entry=tbf_names_mm" \
    "hip --emit=hip --entry=tbf_names_mm"
  [ $fail = 0 ] && echo "ok 256-character names run, 257 are refused"
  exit $fail
  ;;
knames)
  # kernels named like the C library, libm, device builtins, C++ keywords
  # and the prelude (tests/gpu/data/knames.blk, issue 12) through blkc run:
  # the code is blk_k_NAME (backends/backend.h), the user sees NAME
  fail=0 F=$SRC/tests/gpu/data/knames.blk
  for k in memcpy tanf printf free main int BlkTensor threads; do
    LTOL="1e-6 1e-5" lone $k Y N=300
  done
  LTOL="1e-4 1e-4" lone addr C M=70 N=40 K=48
  for dev in cuda-emu hip-emu; do
    "$BLKC" run "$F" --entry=printf N=300 --random --device=$dev --stats >"$T/log" 2>&1 || {
      echo "FAIL printf --stats on $dev: $(cat "$T/log")"; fail=1; continue; }
    if ! grep -q "^printf: grid (2, 1, 1)" "$T/log" || ! grep -q "^printf: stats: 2 blocks" "$T/log" ||
       grep -q blk_k_ "$T/log"; then
      echo "FAIL printf on $dev: the output should name the kernel printf: $(cat "$T/log")"; fail=1
    fi
  done
  "$BLKC" run "$F" --entry=addr -D BM=256 -D BN=256 -D BK=64 M=64 N=64 K=64 --random \
    --device=hip-emu >"$T/log" 2>&1
  grep -q "kernel addr needs [0-9]* bytes of shared memory" "$T/log" ||
    { echo "FAIL the shared-memory refusal should name the kernel addr: $(cat "$T/log")"; fail=1; }
  "$BLKC" compile "$F" --target=cuda --emit=cuda >"$T/src" 2>&1 || { cat "$T/src"; exit 1; }
  grep -q '^extern "C" __global__ void __launch_bounds__(128) blk_k_memcpy($' "$T/src" &&
    grep -q '^extern "C" __constant__ int blk_smem_blk_k_memcpy = 0;$' "$T/src" ||
    { echo "FAIL the CUDA C should define blk_k_memcpy and blk_smem_blk_k_memcpy"; fail=1; }
  # a kernel name of 256 characters (BK_GPU_NAME) runs; 257 are refused
  L=k$(printf 'n%.0s' $(seq 255))
  sed "s/^kernel memcpy</kernel $L</" "$F" >"$T/names.blk"
  F=$T/names.blk
  lone "$L" Y N=300
  sed "s/^kernel memcpy</kernel ${L}n</" "$SRC/tests/gpu/data/knames.blk" >"$T/long.blk"
  refused "$T/long.blk" "kernel name 'knnn.*' is 257 characters long; the GPU backends take at most 256" \
    "cuda --emit=cuda" "hip --emit=hip"
  [ $fail = 0 ] && echo "ok user names shown, blk_k_ symbols, 256-character kernel names run, 257 refused"
  exit $fail
  ;;
layouts)
  fail=0 F=$SRC/tests/emu/tblocked.blk
  lone tblk_tail "Y S" R=3 N=997
  lone tblk_2d "Y Z W RS CS" M=5 N=71
  # SLICE: row reductions in registers (tests/emu/tslice.blk)
  F=$SRC/tests/emu/tslice.blk
  lone tsl_softmax Y M=37 N=61
  lone tsl_rows "Y RS RM" M=7 N=250
  lone tsl_wide Y M=5 N=1001
  lone tsl_online Y M=19 N=75
  # slice / flip / cat along the last axis (tests/emu/tcols.blk)
  F=$SRC/tests/emu/tcols.blk
  lone tcs_slice "Y Z" M=70 N=100
  # register dots: values converted to shared, trans(b), swizzled a
  F=$SRC/tests/emu/tdotv.blk
  lone tdv_tvar C M=100 N=100 K=72
  LTOL="2e-3 2e-3" lone tdv_val "S O" M=70 N=100
  LTOL="1e-4 1e-4" lone tdv_f32 "C D" M=50 N=40 K=40
  LTOL="0 0" lone tdv_i8 "C D" M=50 N=40 K=72
  LTOL="2e-3 2e-3" lone tdv_rv "MX MN SM O" M=70 N=100
  # MROW: row reductions of MMA tiles in registers (tests/emu/tmrow.blk)
  F=$SRC/tests/emu/tmrow.blk
  LTOL="2e-3 2e-3" lone tmr_rows "MX MN SM P" M=100 N=27
  LTOL="2e-3 2e-3" lone tmr_split "MX P" M=40 N=50
  LTOL="2e-3 2e-3" lone tmr_loop "L O" M=70 N=100
  # register dots a part at a time (tests/emu/tparts.blk; gpu-ir goldens too)
  F=$SRC/tests/emu/tparts.blk
  LTOL="1e-4 1e-4" lone tpt_small C M=40 N=40 K=32
  LTOL="1e-4 1e-4" lone tpt_rows C M=70 N=256 K=16
  LTOL="1e-4 1e-4" lone tpt_cols C M=20 N=320 K=16
  LTOL="1e-4 1e-4" lone tpt_batch C Z=3 M=16 N=32 K=32
  F=$SRC/tests/emu/tslice.blk
  "$BLKC" compile "$F" --target=cuda --emit=gpu-ir >"$T/ir" 2>&1 || { cat "$T/ir"; exit 1; }
  want() { # PATTERN: a line of the gpu-ir must match
    grep -Eq "$1" "$T/ir" || { echo "FAIL gpu-ir: no line matches '$1':"; cat "$T/ir"; fail=1; }
  }
  want 'reduce max %16 axis=1 : f32\[16\] @ slice\(of f32\[16, 64\], 8 registers per thread\)$'
  want 'exp %19 : f32\[16, 64\] @ blocked'
  want 'div %22, %21 : f32\[16\] @ slice\(of f32\[16, 64\]'
  want 'reshape %23 : f32\[16, 1\] @ slice = %23'
  want 'reduce sum %15 axis=1 : f32\[4\] @ slice\(of f32\[4, 256\], 8 registers per thread\)  ; convert slice -> shared\+0'
  want 'mul %16, %23 : f32\[4\] @ slice'
  want 'reduce sum %15 axis=1 : f32\[2\] @ slice\(of f32\[2, 1024\], 16 registers per thread\)$'
  want 'var m_i : f32\[8\] @ slice\(of f32\[8, 32\], 2 registers per thread\)'
  want 'var l_i : f32\[8\] @ slice\(of f32\[8, 32\], 2 registers per thread\)'
  # barriers: only the cross-warp steps of rows that span warps (CUDA: 64
  # runs of 1 are two warps; HIP: one wavefront, then the store's barrier
  # after the load, tensors may alias); no shared tile but the converted rows
  for c in "cuda tsl_softmax 2 0" "hip tsl_softmax 1 0" "cuda tsl_rows 4 2" "cuda tsl_wide 2 0" \
           "cuda tsl_online 2 2"; do
    set -- $c
    "$BLKC" compile "$F" --target=$1 --emit=$1 >"$T/src" 2>&1 || { cat "$T/src"; exit 1; }
    sed -n "/__global__ void __launch_bounds__([0-9]*) blk_k_$2(/,/^}/p" "$T/src" >"$T/k"
    nb=$(grep -c '__syncthreads()' "$T/k") ns=$(grep -c 'blk_smem + ' "$T/k")
    if [ "$nb" != "$3" ] || [ "$ns" != "$4" ]; then
      echo "FAIL $1 $2: $nb barriers (want $3), $ns shared tiles (want $4):"; cat "$T/k"; fail=1
    else
      echo "ok $1 $2: $nb barriers, $ns shared tiles"
    fi
  done
  "$BLKC" compile "$SRC/tests/emu/tdotv.blk" --target=cuda --emit=gpu-ir >"$T/ir" 2>&1 || { cat "$T/ir"; exit 1; }
  want 'permute %[0-9]+ perm\(1, 0\) : bf16\[32, 48\] @ fused \(the dots read %[0-9]+ transposed\)'
  want 'dot %[0-9]+, %[0-9]+, %[0-9]+ : f32\[64, 48\] @ mma\(2x2 warps, 2x3 fragments of 16x8, registers\)$'
  # a dot value read by a store (its shared copy) and by p: warps own whole rows
  want 'dot %[0-9]+, %[0-9]+, %[0-9]+ : f32\[64, 64\] @ mma\(4x1 warps, 1x8 fragments of 16x8, registers\)  ; convert mma -> shared\+[0-9]+$'
  want 'cvt %[0-9]+ : f16\[64, 64\] @ mma\(4x1 warps, 1x8 fragments of 16x8, registers, per register\)  ; a dot reads it as a from registers'
  want 'dot %[0-9]+, %[0-9]+, %[0-9]+ : f32\[64, 32\] @ mma\(4x1 warps, 1x4 fragments of 16x8, registers\), a from registers$'
  want 'dot %[0-9]+, %[0-9]+ : f32\[32, 32\] @ mma\(2x2 warps, 1x2 fragments of 16x8, registers\)  ; convert mma -> shared'
  # tdv_rv: the score tile never in shared memory; reductions from registers
  want 'dot %[0-9]+, %[0-9]+ : f32\[64, 32\] @ mma\(4x1 warps, 1x4 fragments of 16x8, registers\)$'
  want 'where %[0-9]+, %[0-9]+, %[0-9]+ : f32\[64, 32\] @ mma\(4x1 warps, 1x4 fragments of 16x8, registers, per register\)$'
  # ... into the lanes' row registers (MROW), the vars mx, mn, sm too
  R='rows of mma\(4x1 warps of 16 rows, fragments of 16\), 2 registers per thread'
  want "reduce max %[0-9]+ axis=1 : f32\\[64\\] @ $R  ; from the registers of %[0-9]+ \\(in-lane, then shuffles\\)\$"
  want "reduce min %[0-9]+ axis=1 : f32\\[64\\] @ $R  ; from the registers of %[0-9]+ \\(in-lane, then shuffles\\)\$"
  want "reduce sum %[0-9]+ axis=1 : f32\\[64\\] @ $R  ; from the registers of %[0-9]+ \\(in-lane, then shuffles\\)\$"
  want "var mx : f32\\[64\\] @ $R\$"
  want 'dot %[0-9]+, %[0-9]+, %[0-9]+ : i32\[32, 32\] @ shared\+[0-9]+  ; computed in mma\(2x2 warps, 1x2 fragments of 16x8'
  want 'load K\[.*\] : f16\[64, 32\] @ shared\+[0-9]+, swizzled'
  "$BLKC" compile "$SRC/tests/emu/tmrow.blk" --target=cuda --emit=gpu-ir >"$T/ir" 2>&1 || { cat "$T/ir"; exit 1; }
  want "div %[0-9]+, %[0-9]+ : f32\\[64\\] @ $R  ; convert mma rows -> shared\\+[0-9]+\$"
  want 'reduce max %[0-9]+ axis=1 : f32\[16\] @ shared\+[0-9]+$'  # tmr_split: 1x4 warps, rows span warps
  want "var mi : f32\\[64\\] @ $R\$"
  want "var li : f32\\[64\\] @ $R\$"
  # flash attention (CUDA; BM = 64 and BM = 128, BN = 32, D = 128): the
  # running max / sum and both row reductions in registers, no row value
  # in shared memory, 6 barriers in the kernel (3 per KV step on sm_80+,
  # 2 more only on the FMA path; 11 with the row values in shared memory,
  # 7 with the key columns `n + arange(BN)` of the mask in a shared tile;
  # in one loop: BLKC_GPU_NOLOOPSPLIT=1)
  for sh in "" "-D BM=128 -D BN=32 -D D=128"; do
    "$BLKC" compile "$SRC/examples/flash_attention.blk" $sh --target=cuda --emit=gpu-ir >"$T/ir" 2>&1 ||
      { cat "$T/ir"; exit 1; }
    FR='rows of mma\(4x1 warps of (16|32) rows, fragments of 16\), (2|4) registers per thread'
    want "var m_i : f32\\[[0-9]+\\] @ $FR\$"
    want "var l_i : f32\\[[0-9]+\\] @ $FR\$"
    want "reduce max %[0-9]+ axis=1 : f32\\[[0-9]+\\] @ $FR  ; from the registers of %[0-9]+ \\(in-lane, then shuffles\\)\$"
    want "reduce sum %[0-9]+ axis=1 : f32\\[[0-9]+\\] @ $FR  ; from the registers of %[0-9]+ \\(in-lane, then shuffles\\)\$"
    if grep -E 'f32\[[0-9]+\] @ (shared|slice)|convert (mma rows|slice) -> shared' "$T/ir"; then
      echo "FAIL flash_attention $sh: a row value in shared memory"; fail=1
    fi
    # HIP too: the accumulator's warps own whole rows (4x1), as the score tile's
    "$BLKC" compile "$SRC/examples/flash_attention.blk" $sh --target=hip --emit=gpu-ir >"$T/irh" 2>&1 ||
      { cat "$T/irh"; exit 1; }
    if ! grep -Eq 'var acc : .* @ mma\(4x1 warps' "$T/irh" ||
       grep -E 'f32\[[0-9]+\] @ (shared|slice)|convert (mma rows|slice) -> shared' "$T/irh"; then
      echo "FAIL flash_attention $sh on HIP: a row value in shared memory:"; cat "$T/irh"; fail=1
    fi
    # counted in one loop (BLKC_GPU_NOLOOPSPLIT=1); split at the bounds
    # mask (gpu_split.c) the KV step's body is there twice: 1 + 2 x 5
    BLKC_GPU_NOLOOPSPLIT=1 "$BLKC" compile "$SRC/examples/flash_attention.blk" $sh --target=cuda --emit=cuda >"$T/src" 2>&1 ||
      { cat "$T/src"; exit 1; }
    nb=$(sed -n '/__global__ void __launch_bounds__([0-9]*) blk_k_flash_attention(/,/^}/p' "$T/src" | grep -c '__syncthreads()')
    "$BLKC" compile "$SRC/examples/flash_attention.blk" $sh --target=cuda --emit=cuda >"$T/src" 2>&1 ||
      { cat "$T/src"; exit 1; }
    ns=$(sed -n '/__global__ void __launch_bounds__([0-9]*) blk_k_flash_attention(/,/^}/p' "$T/src" | grep -c '__syncthreads()')
    if [ "$nb" != 6 ] || [ "$ns" != 11 ]; then
      echo "FAIL flash_attention $sh: $nb barriers in one loop (want 6), $ns split (want 11)"; fail=1
    else
      echo "ok flash_attention $sh: row values in registers, $nb barriers ($ns split)"
    fi
  done
  F=$SRC/tests/emu/tblocked.blk
  # the layouts chosen: registers where every read is the owner's element
  "$BLKC" compile "$F" --target=cuda --emit=gpu-ir >"$T/ir" 2>&1 || { cat "$T/ir"; exit 1; }
  want 'load X\[%5, %6 \+: 1000\] : f32\[1000\] @ blocked\(runs of 1, 8 registers per thread\)'
  want 'cvt %9 : f32\[1000\] @ blocked'
  want 'arange 0 : i32\[1000\] @ fused \(computed where read\)'  # index arithmetic
  want 'load V\[.*\] : f32\[6, 70\] @ blocked\(runs of 1, 4 registers per thread\)'
  want 'load X\[.*\+: 70\] : f32\[6, 70\] @ blocked'   # y below is converted from its registers
  want 'sub %8, %43 : f32\[6, 70\] @ shared\+[0-9]+  ; convert blocked -> shared'  # read by axis reductions
  want 'load B\[.*\] : f32\[70\] @ shared\+'             # read through a broadcast
  want 'reduce sum %10 axis=1 : f32\[6\] @ shared'
  [ $fail = 0 ] && echo "ok gpu-ir layouts"
  # softmax / layernorm: no tile in shared memory, barriers only in the
  # reductions (plus layernorm's before its store: tensors may alias)
  for c in "softmax 2" "layernorm 3"; do
    set -- $c
    BLKC_CACHE_DIR=$T/cache "$BLKC" compile "$SRC/examples/$1.blk" --target=cuda --emit=cuda >"$T/cu" 2>&1
    nb=$(sed -n '/^extern "C" __global__/,$p' "$T/cu" | grep -c '__syncthreads()')
    if grep -q 'blk_smem + ' "$T/cu" || [ "$nb" != "$2" ]; then
      echo "FAIL $1: $nb barriers (want $2) or a shared tile:"; grep -n 'blk_smem + \|__syncthreads' "$T/cu"; fail=1
    else
      echo "ok $1: $nb barriers, no shared-memory tile"
    fi
  done
  exit $fail
  ;;
wgmma)
  fail=0 F=$SRC/tests/emu/twgmma.blk
  # NAME FILE TOL "OUTS" ARGS...: the CPU against cuda-emu as sm_90a
  # (WONE_STATS=1: the emulated run with --stats, its output in $T/elog)
  wone() {
    local name=$1 file=$2 tol=$3; shift 3
    if ! timeout 300 "$BLKC" run "$file" "$@" --random --seed=7 --out C="$T/c.npy" >"$T/log" 2>&1; then
      echo "FAIL $name: cpu: $(cat "$T/log")"; fail=1; return
    fi
    if ! BLKC_EMU_ARCH=sm_90a timeout 300 "$BLKC" run "$file" "$@" --random --seed=7 --device=cuda-emu \
           ${WONE_STATS:+--stats} --out C="$T/e.npy" >"$T/elog" 2>&1; then
      echo "FAIL $name: $(cat "$T/elog")"; fail=1; return
    fi
    if ! "$NPYCMP" "$T/e.npy" "$T/c.npy" $tol >"$T/log" 2>&1; then
      echo "FAIL $name: $(cat "$T/log")"; fail=1
    else
      echo "ok $name: $(cat "$T/log")"
    fi
  }
  # "ENTRIES|SHAPE|ARGS"...: wone for each entry of each row, on $F
  wtable() {
    local c ks shape args k
    for c in "$@"; do
      IFS='|' read -r ks shape args <<<"$c"
      for k in $ks; do
        # shellcheck disable=SC2086
        wone "$k $shape" "$F" "1e-4 1e-4" --entry=$k $args
      done
    done
  }
  # row strides that are multiples of 16 elements (K, N = 144) make tensor
  # maps possible: the operands come by TMA (gpu_tma.c); 72 / 136 do not:
  # cp.async; tails in M, N and K either way
  # (bf16 every shape; f16 and b transposed the shapes that differ for
  # them: the operand type, the transposed b's layout with and without TMA)
  wtable "twg_bf16 twg_bt|64x64 warps(4)|M=200 N=136 K=72" \
         "twg_bf16|128x128 warps(4)|-D BM=128 -D BN=128 M=200 N=136 K=72" \
         "twg_bf16 twg_f16 twg_bt|128x128 warps(8)|-D BM=128 -D BN=128 -D BK=64 -D W=8 M=200 N=136 K=136" \
         "twg_bf16 twg_f16|64x64 warps(4) TMA|M=200 N=144 K=144" \
         "twg_bf16 twg_bt|128x128 warps(4) TMA|-D BM=128 -D BN=128 M=200 N=144 K=144" \
         "twg_bf16|128x128 warps(8) TMA|-D BM=128 -D BN=128 -D BK=64 -D W=8 M=200 N=144 K=208"
  # rank-3 operands (a batch index): rank-3 tensor maps, the ring
  # warp-specialized and persistent (gpu_ws.c, gpu_persist.c); a in
  # 16-row boxes at BM = 128: its cp.async.bulk.tensor.3d boxes in the
  # CUDA C the launch ran
  for c in "2|-" "10|-D BM=128 -D BN=128"; do
    IFS='|' read -r n3 d <<<"$c"
    [ "$d" = - ] && d=
    rm -rf "$T/dump"; mkdir -p "$T/dump"
    # shellcheck disable=SC2086
    BLKC_GPU_DUMP="$T/dump" BLKC_CACHE_DISABLE=1 wone "twg_batched $d TMA" "$F" "1e-4 1e-4" \
      --entry=twg_batched $d Bt=3 M=200 N=144 K=144
    cu=$(ls "$T"/dump/*.cu | sort -t. -k2 -n | tail -1)
    if [ "$(grep -c 'blk_tma_load_3d(blk_ring' "$cu")" != "$n3" ] || ! grep -q 'producer warpgroup' "$cu"; then
      echo "FAIL twg_batched $d: want $n3 3-D tensor copies and a producer warpgroup:" \
           "$(grep -c 'blk_tma_load_3d(blk_ring' "$cu"), $(grep -c 'producer warpgroup' "$cu")"; fail=1
    fi
  done
  # the spans: a in 32-byte rows, b in 64; a in two panels of 64 columns,
  # b in four
  wone "twg_bf16 BK=16 BN=32" "$F" "1e-4 1e-4" --entry=twg_bf16 -D BK=16 -D BN=32 M=200 N=100 K=72
  wone "twg_bt BK=16 BN=32" "$F" "1e-4 1e-4" --entry=twg_bt -D BK=16 -D BN=32 M=200 N=100 K=72
  wone "twg_bf16 128x256 BK=128 warps(8)" "$F" "1e-4 1e-4" --entry=twg_bf16 -D BM=128 -D BN=256 -D BK=128 -D W=8 M=130 N=304 K=208
  wone "matmul 64x64" "$SRC/examples/matmul.blk" "1e-4 1e-4" M=130 N=72 K=48
  wone "matmul 128x128" "$SRC/examples/matmul.blk" "1e-4 1e-4" -D BM=128 -D BN=128 M=130 N=72 K=48
  # acc = acc * 0.5 + dot (the dot accumulates at the var.set): wgmma too
  wone "twg_scale" "$F" "1e-4 1e-4" --entry=twg_scale M=100 N=72 K=96
  "$BLKC" compile "$F" --entry=twg_scale --target=cuda --arch=sm_90a --emit=gpu-ir >"$T/ir" 2>&1
  grep -q "accumulates at the var.set  ; wgmma.mma_async" "$T/ir" ||
    { echo "FAIL twg_scale: not on wgmma: $(grep ' dot ' "$T/ir")"; fail=1; }
  # fp8 (m64nNk32, gpu_wgmma.c): e4m3, e5m2 and mixed, b the transpose of
  # an [N, K] tile (K-major, the one fp8 layout); products are exact in
  # f32 and double, the CPU sums them in f32 one at a time, the emulator
  # exactly per k32 step: the bf16 cases' tolerance. Strides of 16-byte
  # multiples (N = 144, K = 160 / 208): TMA, else cp.async; tails in M, N, K
  # (e4m3 every shape, e5m2 and mixed two: the operand decode is the same
  # code in each shape; the ring loop below runs both again)
  wtable "twg_e4m3 twg_e5m2 twg_f8mix|64x64 warps(4)|M=200 N=136 K=72" \
         "twg_e4m3 twg_f8mix|128x128 warps(4) TMA|-D BM=128 -D BN=128 M=200 N=144 K=160" \
         "twg_e4m3 twg_e5m2|128x128 BK=128 warps(8) TMA|-D BM=128 -D BN=128 -D BK=128 -D W=8 M=200 N=144 K=208" \
         "twg_e4m3|128x128 BK=32 warps(8)|-D BM=128 -D BN=128 -D BK=32 -D W=8 M=200 N=136 K=72"
  # fp8 with b as [K, N]: no wgmma (8-bit operands are K-major only), the
  # shared-memory FMA path it had before, on sm_90a and sm_80
  wone "twg_f8kn sm_90a" "$F" "1e-4 1e-4" --entry=twg_f8kn M=200 N=136 K=72
  # one wgmma group in flight across the k steps of a stages(S) ring loop
  # (gpu_wgmma.c): with S >= 3 the dot waits for all but its own group
  # (wait_group 1), the ring prefetches S - 2 ahead (the slot of the group
  # in flight is refilled a step later), wait_group 0 follows the loop;
  # stages(2) and BLKC_GPU_WGSYNC=1 keep wait_group 0 in every step. The
  # TMA ring (strides of 144 / 208) and the cp.async ring
  # (BLKC_GPU_NOTMA=1); f16, bf16 and b transposed; 4 and 8 warps; mt = 2
  # (128 rows on 4 warps, 256 on 8); a loop shorter than the prefetch.
  # Results against the CPU and the schedule in the CUDA C the launch ran
  # (BLKC_GPU_DUMP: the variant with the ring).
  # ENV|ENTRY|DEFINES|SIZES|RING|SCHEDULE
  for c in "-|twg_bf16|-D S=3|M=200 N=144 K=144|TMA|async" \
           "BLKC_GPU_NOTMA=1|twg_f16|-D S=3|M=200 N=144 K=144|cp.async|async" \
           "-|twg_f16|-D BM=128 -D BN=128 -D S=4|M=200 N=144 K=208|TMA|async" \
           "BLKC_GPU_NOTMA=1|twg_bt|-D BM=128 -D BN=128 -D BK=64 -D W=8 -D S=3|M=200 N=144 K=208|cp.async|async" \
           "-|twg_bf16|-D BM=256 -D BN=128 -D BK=64 -D W=8 -D S=3|M=300 N=144 K=208|TMA|async" \
           "-|twg_bf16|-D S=4|M=64 N=64 K=16|TMA|async" \
           "-|twg_bf16|-D S=2|M=200 N=144 K=144|TMA|sync" \
           "BLKC_GPU_WGSYNC=1|twg_bf16|-D S=3|M=200 N=144 K=144|TMA|sync" \
           "-|twg_e4m3|-D BM=128 -D BN=128 -D S=4|M=200 N=144 K=208|TMA|async" \
           "BLKC_GPU_NOTMA=1|twg_f8mix|-D BM=128 -D BN=128 -D W=8 -D S=3|M=200 N=144 K=208|cp.async|async" \
           "BLKC_GPU_NOTMA=1|twg_e5m2|-D S=2|M=200 N=144 K=160|cp.async|sync"; do
    IFS='|' read -r e k d sz ring sched <<<"$c"
    rm -rf "$T/dump"; mkdir -p "$T/dump"
    [ "$e" != - ] && export "$e"
    # shellcheck disable=SC2086
    BLKC_GPU_NOPERSIST=1 BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump wone "$k $d $sz $e" "$F" "1e-4 1e-4" --entry=$k $d $sz
    [ "$e" != - ] && unset "${e%%=*}"
    f=$(grep -l "$ring ring load" "$T"/dump/*.cu | head -1)
    if [ -z "$f" ]; then echo "FAIL $k $d $e: no $ring ring among $(ls "$T/dump")"; fail=1; continue; fi
    # the ring loop (at the kernel body's level) and the second line after it
    loop=$(awk '/^    for \(.*blk_it[0-9]*\+\+\) \{$/ { on = 1 } on { print } on && $0 == "    }" { exit }' "$f")
    n1=$(grep -c 'blk_wgmma_wait<1>' <<<"$loop") n0=$(grep -c 'blk_wgmma_wait<0>' <<<"$loop")
    after=$(awk '/^    for \(.*blk_it[0-9]*\+\+\) \{$/ { on = 1 } on && $0 == "    }" { getline; getline; print; exit }' "$f")
    if [ $sched = async ] && { [ "$n1" != 1 ] || [ "$n0" != 0 ] || ! grep -q 'blk_wgmma_wait<0>(); /\* the last step' <<<"$after"; }; then
      echo "FAIL $k $d $e: want wait_group 1 in the loop, 0 right after it: $n1 / $n0 in the loop; after it: $after"; fail=1
    elif [ $sched = sync ] && { [ "$n1" != 0 ] || [ "$n0" != 1 ] || grep -q 'the last step' "$f"; }; then
      echo "FAIL $k $d $e: want wait_group 0 in the loop only: $n1 / $n0"; fail=1
    else
      echo "ok $k $d $e: $ring ring, $sched ($(grep -o 'issued [0-9]* iteration(s) ahead' "$f" | head -1))"
    fi
  done
  # (BLKC_GPU_NOPERSIST=1 above and below: the kernel with a block per
  # program; its persistent form is checked by emu_persist)
  # warp specialization (backends/gpu/gpu_ws.c): the TMA ring loop gets a
  # producer warpgroup (blockDim NT + 128, __launch_bounds__(NT + 128, 1))
  # that waits on empty[] and issues the boxes, setmaxnreg.dec 40 there and
  # .inc 232 in the NT consumer threads, which wait on full[] and arrive on
  # empty[] after the wait_group 1 that retires the previous step's group;
  # no block barrier in the loop, the consumers' named barrier after it.
  # bf16 / f16 / b transposed, 4 and 8 consumer warps, S = 3 and 4, mt = 2,
  # a loop shorter than the ring, M and N tails; against the CPU, with the
  # emulator's operand-race check on every TMA issue. BLKC_GPU_NOWS=1: the
  # ring of gpu_tma.c (no setmaxnreg, 128 x W threads). --stats: 2 barriers
  # per block (the mbarriers' initialization, the one after the loop)
  # instead of 2 + one per k step: 24 for 12 blocks and 5 k steps, 84
  # without; counted (a clang++ build, ~1.5 s more) in 4 of the 8 cases,
  # the others take the threads from __launch_bounds__
  # (ENV|ENTRY|DEFINES|SIZES|THREADS|BARRIERS or -)
  for c in "-|twg_bf16|-D S=3|M=200 N=144 K=144|256|24" \
           "BLKC_GPU_NOWS=1|twg_bf16|-D S=3|M=200 N=144 K=144|128|84" \
           "-|twg_f16|-D BM=128 -D BN=128 -D S=4|M=200 N=144 K=208|256|-" \
           "-|twg_bt|-D BM=128 -D BN=128 -D BK=64 -D W=8 -D S=3|M=200 N=144 K=208|384|8" \
           "-|twg_bf16|-D BM=256 -D BN=128 -D BK=64 -D W=8 -D S=3|M=300 N=144 K=208|384|-" \
           "-|twg_f16|-D BM=128 -D BN=128 -D BK=64 -D W=8 -D S=4|M=130 N=144 K=48|384|-" \
           "-|twg_bt|-D BM=128 -D BN=128 -D W=8 -D S=4|M=200 N=144 K=208|384|-" \
           "-|twg_bf16|-D S=4|M=64 N=64 K=16|256|2"; do
    IFS='|' read -r e k d sz nt nb <<<"$c"
    rm -rf "$T/dump"; mkdir -p "$T/dump"
    [ "$e" != - ] && export "$e"
    # shellcheck disable=SC2086
    WONE_STATS=$([ "$nb" = - ] || echo 1) BLKC_GPU_NOPERSIST=1 BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump \
      wone "ws $k $d $sz $e" "$F" "1e-4 1e-4" --entry=$k $d $sz
    [ "$e" != - ] && unset "${e%%=*}"
    f=$(grep -l "TMA ring load" "$T"/dump/*.cu | head -1)
    if [ -z "$f" ]; then echo "FAIL ws $k $d $e: no TMA ring among $(ls "$T/dump")"; fail=1; continue; fi
    loop=$(awk '/^    for \(.*blk_it[0-9]*\+\+\) \{$/ { on = 1 } on { print } on && $0 == "    }" { exit }' "$f")
    kern=$(sed -n '/^extern "C" __global__/,$p' "$f") # the kernel, not the prelude's wrappers
    c=$((nt - 128))
    if [ "$nb" != - ] && { ! grep -q "blocks of $nt threads" "$T/elog" || ! grep -q "barriers $nb," "$T/elog"; }; then
      echo "FAIL ws $k $d $e: want $nt threads, $nb barriers: $(grep 'blocks of\|barriers' "$T/elog")"; fail=1
    elif [ "$e" = BLKC_GPU_NOWS=1 ]; then
      if grep -q 'setmaxnreg\|blk_bar_sync\|blk_te[0-9]' <<<"$kern" || ! grep -q "__launch_bounds__($nt) blk_k_$k(" "$f"; then
        echo "FAIL ws $k $d $e: warp-specialized code with BLKC_GPU_NOWS=1"; fail=1
      else
        echo "ok ws $k $d $e: the ring of gpu_tma.c, $nb barriers"
      fi
    elif ! grep -q "__launch_bounds__($nt, 1) blk_k_$k(" "$f" ||
         ! grep -q "if (blk_tid >= $c) { /\* the producer warpgroup" "$f" ||
         ! grep -q "blk_setmaxnreg_dec<40>();" "$f" || ! grep -q "blk_setmaxnreg_inc<232>();" "$f" ||
         ! grep -q "blk_mbar_wait_parity(&blk_te[0-9]*\[blk_pj" "$f" ||
         ! grep -q "blk_mbar_init(&blk_te[0-9]*\[blk_s\], $((c / 128)));" "$f" ||
         grep -q '__syncthreads\|blk_bar_sync' <<<"$loop" ||
         ! grep -q 'blk_mbar_arrive(&blk_te' <<<"$loop" ||
         [ "$(grep -c 'blk_wgmma_wait<1>' <<<"$loop")" != 1 ] ||
         ! grep -q "blk_bar_sync(1, $c);" "$f"; then
      echo "FAIL ws $k $d $e: want the producer warpgroup, setmaxnreg, empty barriers, no block barrier in the loop:"
      grep -n 'launch_bounds\|blk_tid >=\|setmaxnreg\|blk_te\|__syncthreads\|blk_bar_sync' "$f"; fail=1
    else
      echo "ok ws $k $d: $nt threads, producer + $((c / 128)) consumer warpgroup(s), setmaxnreg 40 / 232, $nb barriers"
    fi
  done
  # the dots took wgmma on sm_90a, and only there
  for k in twg_bf16 twg_f16 twg_bt; do
    "$BLKC" compile "$F" --entry=$k --target=cuda --arch=sm_90a --emit=gpu-ir >"$T/ir" 2>&1
    grep -q "; wgmma.mma_async m64n64k16 .f32.$([ $k = twg_f16 ] && echo f16 || echo bf16) (sm_90a)" "$T/ir" &&
      [ "$(grep -c 'wgmma [0-9]*B swizzle' "$T/ir")" = 2 ] ||
      { echo "FAIL $k: no wgmma dot in the sm_90a gpu-ir:"; cat "$T/ir"; fail=1; }
    "$BLKC" compile "$F" --entry=$k --target=cuda --emit=gpu-ir >"$T/ir" 2>&1
    if grep -q wgmma "$T/ir"; then echo "FAIL $k: wgmma on the default sm_80"; fail=1; fi
  done
  # fp8: m64nNk32 with the operand types, in the gpu-ir and as the PTX
  # the CUDA C writes; none on sm_80; none for b as [K, N]
  # ENTRY|DEFINES|GPU-IR|PTX
  for c in "twg_e4m3|-D_BK=64|m64n64k32 .f32.e4m3.e4m3 (sm_90a)|m64n64k32.f32.e4m3.e4m3" \
           "twg_e5m2|-D_BN=128 -D_BK=128|m64n128k32 .f32.e5m2.e5m2 (sm_90a)|m64n128k32.f32.e5m2.e5m2" \
           "twg_f8mix|-D_BK=32 -D_BN=32|m64n32k32 .f32.e4m3.e5m2 (sm_90a)|m64n32k32.f32.e4m3.e5m2"; do
    IFS='|' read -r k d ir ptx <<<"$c"
    # shellcheck disable=SC2086
    "$BLKC" compile "$F" --entry=$k ${d//_/ } --target=cuda --arch=sm_90a --emit=gpu-ir >"$T/ir" 2>&1
    # shellcheck disable=SC2086
    "$BLKC" compile "$F" --entry=$k ${d//_/ } --target=cuda --arch=sm_90a --emit=cuda >"$T/cu" 2>&1
    if ! grep -q "; wgmma.mma_async $ir" "$T/ir" || [ "$(grep -c 'wgmma [0-9]*B swizzle' "$T/ir")" != 2 ] ||
       ! grep -q "wgmma.mma_async.sync.aligned.$ptx {" "$T/cu" || grep -q "imm-trans TA" "$T/cu"; then
      echo "FAIL $k $d: want $ir in the gpu-ir, $ptx in the CUDA C:"; grep "dot\|load" "$T/ir"; fail=1
    else
      echo "ok $k $d: $ir"
    fi
    "$BLKC" compile "$F" --entry=$k --target=cuda --emit=gpu-ir >"$T/ir" 2>&1
    if grep -q wgmma "$T/ir"; then echo "FAIL $k: wgmma on the default sm_80"; fail=1; fi
  done
  "$BLKC" compile "$F" --entry=twg_f8kn --target=cuda --arch=sm_90a --emit=gpu-ir >"$T/ir" 2>&1
  if grep -q "wgmma\|mma(" "$T/ir" || ! grep -q "dot .*@ shared" "$T/ir"; then
    echo "FAIL twg_f8kn: b as [K, N] in fp8 must keep the shared-memory dot:"; grep "dot" "$T/ir"; fail=1
  fi
  # the operand layouts: the swizzle span is the row (a: BK, b as [K, N]:
  # BN elements of 2 bytes) up to 128 bytes
  # DEFINES|LAYOUT OF A|LAYOUT OF B
  for c in "-D_BK=32|64B swizzle|128B swizzle" "-D_BK=64|128B swizzle|128B swizzle" \
           "-D_BK=16|32B swizzle|128B swizzle" "-D_BN=32|64B swizzle|64B swizzle" \
           "-D_BK=128 -D_BN=128|128B swizzle|128B swizzle"; do
    IFS='|' read -r d la lb <<<"$c"
    "$BLKC" compile "$F" --entry=twg_bf16 ${d//_/ } --target=cuda --arch=sm_90a --emit=gpu-ir >"$T/ir" 2>&1
    if ! grep -q "load A.*wgmma $la" "$T/ir" || ! grep -q "load B.*wgmma $lb" "$T/ir"; then
      echo "FAIL twg_bf16 $d: want a in $la, b in $lb:"; grep 'load [AB]' "$T/ir"; fail=1
    fi
  done
  # 2 warps: no warpgroup, the mma.sync path
  "$BLKC" compile "$F" --entry=twg_bf16 -D W=2 --target=cuda --arch=sm_90a --emit=gpu-ir >"$T/ir" 2>&1
  if grep -q wgmma "$T/ir"; then echo "FAIL twg_bf16 warps(2): wgmma without a warpgroup"; fail=1; fi
  BLKC_EMU_ARCH=sm_75 "$BLKC" run "$F" --entry=twg_bf16 M=64 N=64 K=32 --random --device=cuda-emu >"$T/log" 2>&1
  rc=$?
  if [ $rc != 3 ] || ! grep -q "BLKC_EMU_ARCH=sm_75: cuda-emu emulates sm_80 (the default) or sm_90a" "$T/log"; then
    echo "FAIL BLKC_EMU_ARCH=sm_75: exit $rc, $(cat "$T/log")"; fail=1
  fi
  # --stats (clang++): a 128 x 128 block, K = 32: 2 m-blocks x 2 k steps,
  # 64 x 128 x 16 each: 4 wgmma.mma_async, 1048576 FLOP; none on sm_80.
  # Shared memory: each wgmma reads A (64 x 16 x 2 bytes) and B (128 x 16 x
  # 2), 48 core matrices of 128 bytes, one wavefront each in the swizzled
  # layouts: 192 in 8 requests; the writes of A and B (32 x 128 x 2 bytes
  # each): by TMA 128 lines in 10 boxes (A: 8 boxes of 16 rows, its atoms
  # permuted for 2 m-blocks per warpgroup; B: 2 panels of 64 columns), by
  # cp.async (BLKC_GPU_NOTMA=1) 128 conflict-free wavefronts in 32 warp
  # requests
  # (BLKC_GPU_NOTMASTORE=1 here and in the fp8 count below: the epilogue
  # from the registers; the staging tile's writes are emu_persist's)
  if BLKC_GPU_NOTMASTORE=1 BLKC_CACHE_DISABLE=1 BLKC_EMU_ARCH=sm_90a "$BLKC" run "$SRC/examples/matmul.blk" -D BM=128 -D BN=128 M=128 N=128 K=32 \
       --random --device=cuda-emu --stats >"$T/log" 2>&1; then
    if ! grep -q "tensor-core instructions 4 (1048576 FLOP), of them wgmma.mma_async 4 (1048576 FLOP), ldmatrix 0" "$T/log" ||
       ! grep -q "shared-memory wavefronts 320 (in 18 requests)" "$T/log" ||
       ! grep -q "cp.async 0, TMA boxes 10" "$T/log"; then
      echo "FAIL matmul 128x128 sm_90a --stats: want 4 wgmma:"; cat "$T/log"; fail=1
    else
      echo "ok matmul 128x128 sm_90a: $(grep "tensor-core\|wavefronts\|TMA" "$T/log")"
    fi
  else
    echo "FAIL matmul --stats on sm_90a: $(cat "$T/log")"; fail=1
  fi
  # fp8 --stats: a 128 x 128 block, K = 64: 2 m-blocks x 2 k steps of
  # 32: 4 wgmma m64n128k32, 2 x 64 x 128 x 32 each (2097152 FLOP). Each
  # reads A (64 rows of 32 bytes) and B (128 of 32): 48 core matrices of
  # 128 bytes, one wavefront each; the writes of A and B (128 rows of 64
  # bytes each) 128 more. TMA: A in 8 boxes of 16 rows (2 m-blocks per
  # warpgroup), B one box of its 128 rows of 64 bytes; cp.async: 16 KiB in
  # 16-byte copies
  if BLKC_GPU_NOTMASTORE=1 BLKC_CACHE_DISABLE=1 BLKC_EMU_ARCH=sm_90a "$BLKC" run "$F" --entry=twg_e4m3 -D BM=128 -D BN=128 M=128 N=128 K=64 \
       --random --device=cuda-emu --stats >"$T/log" 2>&1 &&
     grep -q "tensor-core instructions 4 (2097152 FLOP), of them wgmma.mma_async 4 (2097152 FLOP), ldmatrix 0" "$T/log" &&
     grep -q "shared-memory wavefronts 320 (in 17 requests)" "$T/log" && grep -q "cp.async 0, TMA boxes 9" "$T/log" &&
     BLKC_GPU_NOTMA=1 BLKC_CACHE_DISABLE=1 BLKC_EMU_ARCH=sm_90a "$BLKC" run "$F" --entry=twg_e4m3 -D BM=128 \
       -D BN=128 M=128 N=128 K=64 --random --device=cuda-emu --stats >"$T/log2" 2>&1 &&
     grep -q "of them wgmma.mma_async 4 (2097152 FLOP)" "$T/log2" && grep -q "cp.async 1024$" "$T/log2"; then
    echo "ok twg_e4m3 128x128 K=64 --stats: 4 wgmma m64n128k32, 9 TMA boxes / 1024 cp.async"
  else
    echo "FAIL twg_e4m3 --stats on sm_90a: want 4 wgmma:"; cat "$T/log" "$T/log2"; fail=1
  fi
  if BLKC_GPU_NOTMA=1 BLKC_CACHE_DISABLE=1 BLKC_EMU_ARCH=sm_90a "$BLKC" run "$SRC/examples/matmul.blk" \
       -D BM=128 -D BN=128 M=128 N=128 K=32 --random --device=cuda-emu --stats >"$T/log" 2>&1 &&
     grep -q "shared-memory wavefronts 320 (in 40 requests)" "$T/log" && grep -q "cp.async 1024$" "$T/log" &&
     ! grep -q "tensor maps" "$T/log"; then
    echo "ok matmul 128x128 sm_90a BLKC_GPU_NOTMA=1: $(grep "wavefronts\|cp.async" "$T/log")"
  else
    echo "FAIL matmul --stats on sm_90a, BLKC_GPU_NOTMA=1: want cp.async:"; cat "$T/log"; fail=1
  fi
  # tensor maps cached per launch signature (runtime/gpu_launch.c): 3
  # launches (--bench=2) with the same tensors encode the maps of A and B
  # once, then take them from the module's cache; the last launch's C (a
  # cached map's) is the CPU's (BLKC_GPU_NOTMASTORE=1: C's map for the
  # persistent kernel's TMA-store epilogue would make 3; emu_persist)
  if BLKC_GPU_NOTMASTORE=1 BLKC_CACHE_DISABLE=1 BLKC_EMU_ARCH=sm_90a "$BLKC" run "$F" --entry=twg_bf16 M=100 N=64 K=64 \
       --random --seed=7 --device=cuda-emu --stats --bench=2 --out C="$T/e.npy" >"$T/log" 2>&1 &&
     grep -q "twg_bf16: stats: tensor maps 2 encoded, 4 from the cache$" "$T/log" &&
     grep -q "TMA boxes 8$" "$T/log" &&
     "$BLKC" run "$F" --entry=twg_bf16 M=100 N=64 K=64 --random --seed=7 --out C="$T/c.npy" >"$T/log" 2>&1 &&
     "$NPYCMP" "$T/e.npy" "$T/c.npy" 1e-4 1e-4 >"$T/log" 2>&1; then
    echo "ok twg_bf16 --bench=2: tensor maps 2 encoded, 4 from the cache ($(cat "$T/log"))"
  else
    echo "FAIL twg_bf16 --bench=2 --stats: want 2 maps encoded, 4 from the cache:"; cat "$T/log"; fail=1
  fi
  # an assert that fails inside the K loop ends the block: the loop keeps
  # cp.async, not TMA (gpu_tma.c leaves_in_loop; with TMA the boxes of the
  # next steps would still be in flight, which cuda-emu refuses), so the
  # run ends with the CPU's assertion message; failing after the loop, the
  # TMA ring has drained and stays
  awk '/^kernel twg_bf16</ { on = 1 } on { print } on && /^}$/ { exit }' "$F" |
    sed 's|C: f32\[M, N\])$|C: f32[M, N], lim: i32)|' >"$T/tw.blk"
  sed 's|^        acc = dot(.*$|        assert(k < lim, "k below the limit");\n&|' "$T/tw.blk" >"$T/twa.blk"
  sed 's|^    C\[m +: BM, n +: BN\] = acc;$|    assert(K < lim, "K below the limit");\n&|' "$T/tw.blk" >"$T/twc.blk"
  for c in "twa|8|k below|no" "twc|10|K below|a"; do
    IFS='|' read -r f line what ring <<<"$c"
    msg="blkc: error: $T/$f.blk:$line: kernel twg_bf16: assertion failed in program (0, 0, 0): $what the limit"
    rm -rf "$T/dump" && mkdir "$T/dump"
    BLKC_GPU_DUMP="$T/dump" BLKC_CACHE_DISABLE=1 BLKC_EMU_ARCH=sm_90a timeout 300 "$BLKC" run "$T/$f.blk" \
      --entry=twg_bf16 M=64 N=64 K=256 lim=96 --random --device=cuda-emu >"$T/out" 2>"$T/err"
    rc=$? got=$(grep -v ' ms on ' "$T/err")
    tma=$(cat "$T"/dump/*.cu | grep -c 'blk_tma_load_2d(blk_ring')
    if [ $rc -ne 3 ] || [ "$got" != "$msg" ]; then
      echo "FAIL assert in $f on sm_90a: exit $rc (want 3), stderr: $got (want $msg)"; fail=1
    elif { [ "$ring" = no ] && [ "$tma" != 0 ]; } || { [ "$ring" = a ] && [ "$tma" = 0 ]; }; then
      echo "FAIL assert in $f on sm_90a: want $ring TMA ring, the CUDA C has $tma TMA loads"; fail=1
    else
      echo "ok assert in $f on sm_90a: exit 3, the CPU's message, $ring TMA ring ($tma loads in the CUDA C)"
    fi
  done
  exit $fail
  ;;
wgflash)
  fail=0 EX=$SRC/examples/flash_attention.blk TF=$SRC/tests/emu/tflash.blk
  # FILE|ENTRY|DEFINES|SIZES|WGMMA (per block: 2 dots x k steps per KV
  # block, BM / 64 m-blocks each; with KEEP 2 one p v more, of zeros, in
  # each block's first step)|ENV|KEEP AHEAD: in the CUDA C the launch ran
  # (BLKC_GPU_DUMP), KEEP 2: p v is deferred behind the next step's q k^T
  # (gpu_wgmma.c qk_plan: in both bodies of the split loop, q k^T's commit,
  # then p v's, wait_group 1; at p v's var.set a wait_group 0 and no issue;
  # after the loop the last p v and a wait_group 0: 5 commits, 3 waits of
  # 0, 2 of 1), KEEP 1 (BLKC_GPU_NOQKPIPE=1): p v's group stays in flight
  # across the back edge (no wait after its commit in either body, the S
  # dot's wait_group 0 retires it, one more after the loop: 3 waits), 0: 4
  # wait_group 0 and nothing left in flight; the ring issued AHEAD
  # iteration(s) ahead (stages - 2 with KEEP 1 or 2; stages(2) and
  # BLKC_GPU_NOWGKEEP=1 keep the wait) by RING: TMA (gpu_tma.c: the
  # launch's contiguous tensors allow tensor maps of rank 3 or 4, K and V
  # fed by cp.async.bulk.tensor; BOXES in --stats, 1 box per K / V tile
  # of 128-byte rows, 2 for D = 128), cp.async (BLKC_GPU_NOTMA=1) or none
  # (tflash_kv with rows of DKV = 136: no tensor map and no vector copy
  # without 16-element strides, so no ring). The emulator fails a cp.async
  # or TMA load into an operand of a group not yet retired
  # (blk_emu_wgmma.h), so a too-early refill cannot pass. A TMA ring is
  # warp-specialized (gpu_ws.c's top split: the producer warpgroup, up to
  # AHEAD iterations ahead as well, runs the scalars before the loop and
  # the boxes; the consumers load q, named barrier 1) unless ENV (one or
  # more settings) has BLKC_GPU_NOWS=1: the producer's branch, and the
  # consumers release slot i at the end of step i + 1 with a p v kept in
  # flight (KEEP 1 or 2: it reads slot i until the next step's waits), at
  # the end of step i with none (KEEP 0); one __syncthreads (before the
  # split), never barrier 0 after it. An assert in the body (a consumer
  # that leaves would leave the producer waiting) keeps the ring of
  # gpu_tma.c (NOWS after the ring: checked as BLKC_GPU_NOWS=1 is).
  # A warp-specialized case is persistent (gpu_persist.c) unless ENV has
  # BLKC_GPU_NOPERSIST=1 or KEEP is 1 (keep_plan: ptxas would serialize
  # the wgmma): --stats says "persistent: T tiles (programs) on B blocks"
  # with T = cdiv(S, BM) x Z (or B x H) and B = min(T, SMS), the optional
  # last field (BLKC_EMU_SMS; 4 when absent), chosen so that blocks loop;
  # the CUDA C the launch ran has the producer's and the consumers' tile
  # loops, the deferred p v's first step counted from the tile's first
  # (blk_it - blk_first) and, for CAUSAL, the largest program_id(0) first
  # in both loops (else the grouped order); a release of the tile's last
  # slot after the loop with a kept group; q comes by TMA (the producer's
  # D / 64 boxes per tile more in --stats, the q mbarriers' wait and
  # release in the CUDA C) unless ENV has BLKC_GPU_NOTMAQ=1. Not
  # persistent: neither.
  sed 's|^    let z = program_id(1);$|&\n    assert(start < S, "a block of queries in range");|' "$EX" >"$T/fa_assert.blk"
  grep -q '^    assert(start' "$T/fa_assert.blk" || { echo "FAIL: no assert put in $EX"; fail=1; }
  for c in "$EX|-|-|Z=2 S=130|168|-|2 1 TMA 36" \
           "$EX|-|-D CAUSAL=true -D D=128 -D BN=32|Z=1 S=200|198|-|2 1 TMA 76|2" \
           "$EX|-|-|Z=1 S=130|72|BLKC_GPU_NOWGKEEP=1|0 2 TMA 18|1" \
           "$EX|-|-|Z=1 S=130|72|BLKC_GPU_WGSYNC=1 BLKC_GPU_NOTMAQ=1|0 2 TMA 18" \
           "$EX|-|-|Z=2 S=130|144|BLKC_GPU_NOQKPIPE=1|1 1 TMA 36" \
           "$EX|-|-|Z=2 S=130|168|BLKC_GPU_NOTMA=1|2 1 cp.async 0" \
           "$EX|-|-|Z=2 S=130|168|BLKC_GPU_NOWS=1|2 1 TMA 36" \
           "$EX|-|-|Z=1 S=130|84|BLKC_GPU_NOPERSIST=1|2 1 TMA 18|1" \
           "$T/fa_assert.blk|-|-|Z=1 S=130|84|-|2 1 TMA 18 NOWS" \
           "$EX|-|-D CAUSAL=true -D D=128 -D BN=32|Z=1 S=200|198|BLKC_GPU_NOWS=1 BLKC_GPU_NOQKPIPE=0|2 1 TMA 76" \
           "$TF|--entry=tflash_bf16|-D BM=128 -D W=8|Z=1 S=200|144|-|2 1 TMA 16|1" \
           "$TF|--entry=tflash_bf16|-D BM=128 -D W=8 -D D=128|Z=1 S=200|208|-|2 1 TMA 32" \
           "$TF|--entry=tflash_bf16|-D BM=128 -D W=8 -D D=128|Z=1 S=200|192|BLKC_GPU_NOQKPIPE=1|1 1 TMA 32" \
           "$TF|--entry=tflash_bf16|-D BM=128 -D W=8 -D D=128|Z=1 S=200|192|BLKC_GPU_NOQKPIPE=1 BLKC_GPU_NOWS=1|1 1 TMA 32" \
           "$TF|--entry=tflash_bf16|-D BM=128 -D W=8 -D D=128 -D BN=32 -D CAUSAL=true -D ST=4|Z=1 S=177|208|-|2 2 TMA 40" \
           "$TF|--entry=tflash_bf16|-D CAUSAL=true -D BN=32 -D D=128|Z=1 S=150|116|-|2 1 TMA 44" \
           "$TF|--entry=tflash_bf16|-D ST=4|Z=1 S=200|144|-|2 2 TMA 32" \
           "$TF|--entry=tflash_bf16|-D CAUSAL=true -D BN=32 -D ST=4|Z=2 S=97|80|-|2 2 TMA 24|3" \
           "$TF|--entry=tflash_bf16|-D BN=32|Z=1 S=130|90|BLKC_GPU_NOWGKEEP=1|0 2 TMA 30" \
           "$TF|--entry=tflash_bf16|-D ST=2|Z=1 S=130|72|-|0 1 TMA 18|2" \
           "$TF|--entry=tflash_bf16|-D ST=2 -D W=8 -D BM=128|Z=1 S=130|96|BLKC_GPU_NOWS=1|0 1 TMA 12" \
           "$TF|--entry=tflash_kv|-|Z=1 S=130 DKV=128|84|-|2 1 TMA 18|2" \
           "$TF|--entry=tflash_kv|-|Z=1 S=130 DKV=136|72|-|0 - none 0" \
           "$TF|--entry=tflash_bshd|-D CAUSAL=true -D BN=32|B=1 H=3 S=100|120|-|2 1 TMA 36" \
           "$TF|--entry=tflash_bshd|-D D=128|B=1 H=2 S=130|216|BLKC_GPU_NOQKPIPE=1|1 1 TMA 72"; do
    IFS='|' read -r f e d sz nw en ka sms <<<"$c"
    [ "$e" = - ] && e=
    [ "$d" = - ] && d=
    [ "$en" = - ] && en=BLKC_GPU_NOWGKEEP=0
    read -r keep ahead ring boxes nows <<<"$ka"
    # shellcheck disable=SC2086
    "$BLKC" compile "$f" $e $d --target=cuda --arch=sm_90a --emit=gpu-ir >"$T/ir" 2>&1
    # shellcheck disable=SC2086
    if ! grep -q "dot .*wgmma.mma_async .*a and b from shared memory" "$T/ir" ||
       ! grep -q "dot .*a from registers  ; wgmma.mma_async .*b from shared memory" "$T/ir"; then
      echo "FAIL flash $e $d: both dots on wgmma in gpu-ir:"; grep " dot " "$T/ir"; fail=1; continue
    fi
    # shellcheck disable=SC2086
    rm -rf "$T/dump"; mkdir -p "$T/dump"
    # shellcheck disable=SC2086
    if ! timeout 120 "$BLKC" run "$f" $e $d $sz scale=0.125 --random --seed=5 --out O="$T/c.npy" >"$T/log" 2>&1 ||
       ! env $en BLKC_EMU_SMS="${sms:-4}" BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP="$T/dump" BLKC_EMU_ARCH=sm_90a \
           timeout 300 "$BLKC" run "$f" $e $d $sz scale=0.125 --random --seed=5 \
           --device=cuda-emu --stats --out O="$T/e.npy" >"$T/log" 2>&1 ||
       ! "$NPYCMP" "$T/e.npy" "$T/c.npy" 2e-2 2e-2 >"$T/cmp" 2>&1; then
      echo "FAIL flash $en $e $d $sz: $(cat "$T/log" "$T/cmp" 2>/dev/null)"; fail=1; continue
    fi
    if ! grep -q "of them wgmma.mma_async $nw (.*ldmatrix 0$" "$T/log"; then
      echo "FAIL flash $e $d $sz: want $nw wgmma, no ldmatrix: $(grep tensor-core "$T/log")"; fail=1; continue
    fi
    cu=$(ls "$T"/dump/*.cu | sort -t. -k2 -n | tail -1)
    nk=$(grep -c "blk_wgmma_commit();" "$cu") n0=$(grep -c "blk_wgmma_wait<0>();" "$cu")
    nf=$(grep -c "no wait: this group stays in flight" "$cu") n1=$(grep -c "blk_wgmma_wait<1>" "$cu")
    nr=$(grep -c "also retires the previous step's group kept in flight" "$cu")
    case $keep in 2) want="5 3 0 2 0" ;; 1) want="4 3 2 0 2" ;; *) want="4 4 0 0 0" ;; esac
    nb=$(grep -o 'TMA boxes [0-9]*' "$T/log" | grep -o '[0-9]*$')
    ws=$([ "$ring" = TMA ] && [ -z "$nows" ] && ! grep -q NOWS=1 <<<"$en" && echo 1)
    pe=$([ -n "$ws" ] && [ "$keep" != 1 ] && ! grep -q NOPERSIST=1 <<<"$en" && echo 1)
    bm=$(grep -o 'BM=[0-9]*' <<<"$d" | grep -o '[0-9]*'); bm=${bm:-64}
    dd=$(grep -o 'D=[0-9]*' <<<"$d" | grep -o '[0-9]*'); dd=${dd:-64}
    s=$(grep -o 'S=[0-9]*' <<<"$sz" | grep -o '[0-9]*')
    zz=$(grep -o 'Z=[0-9]*' <<<"$sz" | grep -o '[0-9]*')
    [ -z "$zz" ] && zz=$(($(grep -o 'B=[0-9]*' <<<"$sz" | grep -o '[0-9]*') * $(grep -o 'H=[0-9]*' <<<"$sz" | grep -o '[0-9]*')))
    tiles=$(((s + bm - 1) / bm * zz)) blocks=$(((s + bm - 1) / bm * zz < ${sms:-4} ? (s + bm - 1) / bm * zz : ${sms:-4}))
    # persistent: q by TMA too, D / 64 boxes (128-byte panels) per tile
    # (BLKC_GPU_NOTMAQ=1: the consumers' loads)
    tq=$([ -n "$pe" ] && ! grep -q NOTMAQ=1 <<<"$en" && echo 1)
    [ -n "$tq" ] && boxes=$((boxes + tiles * dd / 64))
    if [ "$ring" = none ]; then ringok=$(! grep -q "ring load(s), issued" "$cu" && echo 1)
    elif [ -z "$ws" ]; then
      ringok=$(grep -q "stages([0-9]*): [0-9]* $ring ring load(s), issued $ahead iteration(s) ahead" "$cu" &&
               ! grep -q "producer warpgroup" "$cu" && echo 1)
    else # the top split; the release one step later with a p v in flight
      rel="blk_te[0-9]*\[blk_it[0-9]* %" && [ "$keep" != 0 ] && rel="blk_te[0-9]*\[(blk_it[0-9]* - 1) %"
      ringok=$(grep -q "stages([0-9]*): [0-9]* TMA ring load(s), issued up to $ahead iteration(s) ahead by the producer warpgroup" "$cu" &&
               grep -q "^    if (blk_tid >= [0-9]*) { /\* the producer warpgroup" "$cu" &&
               grep -q "blk_mbar_wait_parity(&blk_te[0-9]*\[blk_pj" "$cu" &&
               grep -q "blk_mbar_arrive(&$rel" "$cu" &&
               [ "$(sed -n '/^extern "C" __global__/,$p' "$cu" | grep -c '__syncthreads()')" = 1 ] && echo 1)
    fi
    if [ "$nk $n0 $nf $n1 $nr" != "$want" ] || [ -z "$ringok" ] || [ "${nb:-0}" != "$boxes" ]; then
      echo "FAIL flash $en $e $d $sz: commits, wait_group 0, kept, wait_group 1, retiring waits $nk $n0 $nf $n1 $nr, want $want;" \
           "ring: $(grep -o '[a-zA-Z.]* ring load(s), issued .*' "$cu"), want $ring $ahead ahead; TMA boxes ${nb:-0}, want $boxes"
      fail=1; continue
    fi
    # persistent (gpu_persist.c): the tiles, the blocks, the tile loops
    read -r pt pb <<<"$(sed -n 's/.*persistent: \([0-9]*\) tiles (programs) on \([0-9]*\) blocks.*/\1 \2/p' "$T/log")"
    lpt="const int blk_pl = blk_t % (blk_np1 \* blk_np2), blk_pid0 = blk_np0 - 1 - blk_t / (blk_np1 \* blk_np2);"
    nl=$(grep -c "$lpt" "$cu") causal=$(grep -q CAUSAL=true <<<"$d" && echo 2 || echo 0)
    if [ -n "$pe" ]; then
      if [ "$pt $pb" != "$tiles $blocks" ] || ! grep -q "stats: $blocks blocks of" "$T/log" ||
         { [ -n "$tq" ] && { ! grep -q 'blk_mbar_wait_parity(&blk_tq\[0\]' "$cu" || ! grep -q 'blk_mbar_arrive(&blk_tq\[1\])' "$cu"; }; } ||
         { [ -z "$tq" ] && grep -q 'blk_tq' "$cu"; } ||
         [ "$(grep -c 'for (int blk_t = (int)blockIdx.x; blk_t < blk_tiles; blk_t += (int)gridDim.x) {' "$cu")" != 2 ] ||
         [ "$nl" != "$causal" ] || { [ "$keep" = 2 ] && ! grep -q "(blk_it[0-9]* - blk_first[0-9]* == 0)) % " "$cu"; } ||
         { [ "$keep" != 0 ] && ! grep -q "if (blk_it[0-9]* > blk_first[0-9]* && blk_tid % 128 == 0)" "$cu"; }; then
        echo "FAIL flash $en $e $d $sz: want persistent, $tiles tiles on $blocks blocks (have ${pt:-?} on ${pb:-?}), q by TMA ${tq:-0}, the tile loops," \
             "$causal LPT orders (have $nl), the tile's first step: $(grep -c 'blk_first' "$cu") blk_first"; fail=1; continue
      fi
    elif [ -n "$pt" ] || grep -q blk_tiles "$cu"; then
      echo "FAIL flash $en $e $d $sz: want a block per program: $(grep persistent "$T/log")"; fail=1; continue
    fi
    echo "ok flash $en $e $d $sz: $(cat "$T/cmp"); $nw wgmma.mma_async; kept in flight: $keep (2: deferred behind q k^T), $ring ring $ahead ahead${ws:+ (producer warpgroup)}, $boxes TMA boxes${pe:+, persistent: $tiles tiles on $blocks blocks}${tq:+, q by TMA}"
  done
  # an inf in v's first KV block (v all 1 but V[0, 3, 5], non-causal: every
  # p > 0): the CPU's column 5 is inf, the rest 1. The deferred p v's
  # step 0 issues a p v of zeros on v_0's slot; 0 * inf = nan must not
  # reach the output (qk_plan: a zeroed acc's first real p v has scale-d
  # 0), with the loop (S = 130) and after it (S = 64: one step, the drain);
  # on one emulated SM, so that the persistent kernel's later tiles (each
  # reads v_0 first) count their first step from the tile's (blk_first)
  for S in 130 64; do
    {
      h="{'descr': '<f2', 'fortran_order': False, 'shape': (1, $S, 64), }"
      while [ $(((10 + ${#h} + 1) % 64)) -ne 0 ]; do h="$h "; done
      printf '\x93NUMPY\x01\x00'
      printf "\\x$(printf %02x $(((${#h} + 1) & 255)))\\x$(printf %02x $(((${#h} + 1) >> 8)))"
      printf '%s\n' "$h"
      for ((i = 0; i < S * 64; i++)); do
        if [ $i = $((3 * 64 + 5)) ]; then printf '\x00\x7c'; else printf '\x00\x3c'; fi
      done
    } >"$T/vinf.npy"
    for en in BLKC_GPU_NOQKPIPE=0 BLKC_GPU_NOQKPIPE=1; do
      if ! "$BLKC" run "$EX" Z=1 S=$S scale=0.125 --random --seed=5 V=@"$T/vinf.npy" \
             --out O="$T/c.npy" >"$T/log" 2>&1 ||
         ! env $en BLKC_EMU_SMS=1 BLKC_EMU_ARCH=sm_90a timeout 300 "$BLKC" run "$EX" Z=1 S=$S scale=0.125 --random \
             --seed=5 V=@"$T/vinf.npy" --device=cuda-emu --out O="$T/e.npy" >"$T/log" 2>&1 ||
         ! "$NPYCMP" "$T/e.npy" "$T/c.npy" 2e-2 2e-2 >"$T/cmp" 2>&1; then
        echo "FAIL flash inf in v_0, $en S=$S: $(cat "$T/log" "$T/cmp" 2>/dev/null)"; fail=1
      else
        echo "ok flash inf in v_0, $en S=$S: $(cat "$T/cmp")"
      fi
    done
  done
  # BLKC_GPU_NOWGREG=1 and sm_80: both dots on mma.sync
  for c in "BLKC_GPU_NOWGREG=1|sm_90a" "BLKC_GPU_NOWGREG=0|sm_80"; do
    IFS='|' read -r e a <<<"$c"
    env "$e" "$BLKC" compile "$EX" --target=cuda --arch=$a --emit=gpu-ir >"$T/ir" 2>&1
    env "$e" "$BLKC" compile "$EX" --target=cuda --arch=$a --emit=cuda >"$T/cu" 2>&1
    if grep -q wgmma "$T/ir" || grep -q 'blk_wgmma_m64n' "$T/cu"; then
      echo "FAIL flash $e --arch=$a: want both dots on mma.sync:"; grep " dot " "$T/ir"; fail=1
    else
      echo "ok flash $e --arch=$a: both dots on mma.sync"
    fi
  done
  exit $fail
  ;;
persist)
  fail=0 TW=$SRC/tests/emu/twgmma.blk TP=$SRC/tests/emu/tpersist.blk
  # the Hopper GEMMs of benchmarks/gpu_check.sh, as it writes them
  for g in gemm_bf16 gemm_f8; do
    sed -n "/^cat >\"\$T\/$g.blk\" <<'EOF'\$/,/^EOF\$/p" "$SRC/benchmarks/gpu_check.sh" | sed '1d;$d' >"$T/$g.blk"
    grep -q "^kernel $g<" "$T/$g.blk" || { echo "FAIL: no kernel $g in benchmarks/gpu_check.sh"; fail=1; }
  done
  # SMS|FILE|ENTRY|DEFINES|SIZES|OUTS|TOL|TILES|BLOCKS|TS: the CPU against
  # cuda-emu as sm_90a with BLKC_EMU_SMS=SMS (-: unset, 4), --stats,
  # and the CUDA C the launch ran (BLKC_GPU_DUMP); TS 1: the epilogue by
  # TMA (a staging tile, wait_group.read before refilling it, the boxes,
  # wait_group 0 before the block ends), 0: from the registers (a rank-3
  # C, or no room beside the ring for the staging tile)
  for c in "-|$TW|twg_bf16|-D S=3|M=264 N=144 K=144|C|1e-4 1e-4|15|4|1" \
           "5|$TW|twg_bf16|-D S=4|M=200 N=144 K=208|C|1e-4 1e-4|12|5|1" \
           "3|$TW|twg_f16|-D BM=128 -D BN=128 -D S=4|M=200 N=144 K=208|C|1e-4 1e-4|4|3|1" \
           "3|$TW|twg_bt|-D BM=128 -D BN=128 -D BK=64 -D W=8 -D S=3|M=330 N=144 K=208|C|1e-4 1e-4|6|3|1" \
           "4|$TW|twg_bf16|-D BM=256 -D BN=128 -D BK=64 -D W=8 -D S=3|M=300 N=272 K=208|C|1e-4 1e-4|6|4|0" \
           "3|$TW|twg_e4m3|-D BM=128 -D BN=128 -D S=4|M=200 N=144 K=208|C|1e-4 1e-4|4|3|1" \
           "4|$TW|twg_e5m2|-D BM=128 -D BN=128 -D BK=128 -D W=8|M=520 N=144 K=208|C|1e-4 1e-4|10|4|1" \
           "4|$TW|twg_bf16|-D S=4|M=64 N=64 K=16|C|1e-4 1e-4|1|1|1" \
           "4|$TP|tpr_np|-|M=130 N=144 K=80 Z=3|C|1e-4 1e-4|27|4|0" \
           "4|$TP|tpr_tri|-|M=330 N=144 K=144|C|1e-4 1e-4|18|4|1" \
           "4|$TP|tpr_1d|-|M=330 K=144|C|1e-4 1e-4|6|4|1" \
           "3|$TP|tpr_tri|-D BM=128 -D BN=128 -D BK=64 -D W=8 -D S=4|M=520 N=144 K=208|C|1e-4 1e-4|10|3|1" \
           "-|$T/gemm_bf16.blk|gemm_bf16|-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=4|M=520 N=528 K=208|C|1e-2 1e-2|15|4|0" \
           "3|$T/gemm_bf16.blk|gemm_bf16|-D BM=128 -D BN=256 -D BK=64 -D W=8 -D S=3|M=260 N=528 K=208|C|1e-2 1e-2|9|3|1" \
           "3|$T/gemm_f8.blk|gemm_f8|-D BM=128 -D BN=256 -D BK=128 -D W=8 -D S=4|M=260 N=528 K=272|C|1e-2 1e-2|9|3|0"; do
    IFS='|' read -r sms f k d sz outs tol tiles nb ts <<<"$c"
    [ "$d" = - ] && d=""
    rm -rf "$T/dump"; mkdir -p "$T/dump"
    oc=() oe=()
    for o in $outs; do oc+=(--out "$o=$T/c.$o.npy"); oe+=(--out "$o=$T/e.$o.npy"); done
    if [ "$sms" = - ]; then unset BLKC_EMU_SMS; else export BLKC_EMU_SMS=$sms; fi
    # shellcheck disable=SC2086
    if ! timeout 300 "$BLKC" run "$f" --entry=$k $d $sz --random --seed=7 "${oc[@]}" >"$T/log" 2>&1 ||
       ! BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump BLKC_EMU_ARCH=sm_90a timeout 300 "$BLKC" run "$f" \
           --entry=$k $d $sz --random --seed=7 --device=cuda-emu --stats "${oe[@]}" >"$T/log" 2>&1; then
      echo "FAIL $k $d $sz: $(cat "$T/log")"; fail=1; unset BLKC_EMU_SMS; continue
    fi
    unset BLKC_EMU_SMS
    cmpok=1
    for o in $outs; do
      # shellcheck disable=SC2086
      "$NPYCMP" "$T/e.$o.npy" "$T/c.$o.npy" $tol >"$T/cmp" 2>&1 || { cmpok=0; break; }
    done
    if [ $cmpok = 0 ]; then echo "FAIL $k $d $sz: $(cat "$T/cmp")"; fail=1; continue; fi
    lo=$((tiles / nb)) hi=$(((tiles + nb - 1) / nb))
    cu=$(grep -l 'blk_tiles' "$T"/dump/*.cu | head -1)
    # the consumers' ring loop (in their tile loop) and what follows it
    loop=$(awk '/^        for \(.*blk_it[0-9]*\+\+\) \{$/ { on = 1 } on { print } on && $0 == "        }" { exit }' "${cu:-/dev/null}")
    after=$(awk '/^        for \(.*blk_it[0-9]*\+\+\) \{$/ { on = 1 } on && $0 == "        }" { for (i = 0; i < 8; i++) { getline; print } exit }' "${cu:-/dev/null}")
    if ! grep -q "stats: $nb blocks of" "$T/log" ||
       ! grep -q "persistent: $tiles tiles (programs) on $nb blocks, $lo to $hi per block" "$T/log"; then
      echo "FAIL $k $d $sz: want $tiles tiles on $nb blocks: $(grep 'blocks of\|persistent' "$T/log")"; fail=1
    elif [ -z "$cu" ] ||
         [ "$(grep -c 'for (int blk_t = (int)blockIdx.x; blk_t < blk_tiles; blk_t += (int)gridDim.x) {' "$cu")" != 2 ] ||
         ! grep -q 'const int blk_np0, const int blk_np1, const int blk_np2' "$cu" ||
         grep -q 'gridDim\.[yz]\|blockIdx\.[yz]' "$cu" ||
         ! grep -q 'blk_mbar_wait_parity(&blk_te[0-9]*\[blk_pj' "$cu" ||
         [ "$(grep -c 'blk_wgmma_wait<1>' <<<"$loop")" != 1 ] || grep -q '__syncthreads\|blk_bar_sync' <<<"$loop" ||
         ! grep -q 'if (blk_it[0-9]* > blk_first[0-9]* && blk_tid % 128 == 0)' <<<"$loop" ||
         ! grep -q 'blk_wgmma_wait<0>(); /\* the last step' <<<"$after" ||
         ! grep -q 'blk_wgmma_m64n[0-9]*.*, blk_it[0-9]* > blk_first[0-9]* || k > 0);$' <<<"$loop" ||
         ! grep -q 'if (blk_it[0-9]* > blk_first[0-9]* && blk_tid % 128 == 0)' <<<"$after"; then
      echo "FAIL $k $d $sz: want the tile loops (producer, consumers), the grid parameters, the ring's releases in and after the loop:"
      grep -n 'blk_t \|blk_np\|gridDim\|blk_first\|blk_wgmma_wait' "${cu:-/dev/null}" | head -20; fail=1
    elif nst=$(grep -c 'blk_tma_store_2d(&blk_tm' "$cu");
         { [ "$ts" = 1 ] && { [ "$nst" = 0 ] || ! grep -q 'blk_bulk_wait_read<0>();' "$cu" ||
                              ! grep -q 'blk_bulk_wait<0>();' "$cu" || ! grep -q 'blk_fence_proxy_async(); /\* the generic-proxy writes' "$cu"; }; } ||
         { [ "$ts" = 0 ] && [ "$nst" != 0 ]; }; then
      echo "FAIL $k $d $sz: want the TMA-store epilogue $ts: $nst boxes"; fail=1
    else
      echo "ok $k $d $sz: $(cat "$T/cmp"); $tiles tiles on $nb blocks ($lo to $hi each), the ring across tiles, $nst TMA-store boxes per tile"
    fi
  done
  # the staging tile's writes (--stats, clang++): matmul 128 x 128, K = 32
  # has the 320 wavefronts of its operands (emu_wgmma) and 512 more for
  # the 64 KiB of f32 staging: 128 bytes each, no bank conflict (a lane's
  # column pair as one 8-byte store into the 128B-swizzled panels), in 256
  # warp requests
  if BLKC_CACHE_DISABLE=1 BLKC_EMU_ARCH=sm_90a "$BLKC" run "$SRC/examples/matmul.blk" -D BM=128 -D BN=128 \
       M=128 N=128 K=32 --random --device=cuda-emu --stats >"$T/log" 2>&1 &&
     grep -q "shared-memory wavefronts 832 (in 274 requests)" "$T/log"; then
    echo "ok matmul 128x128 TMA-store epilogue --stats: $(grep -o 'shared-memory wavefronts [0-9]* (in [0-9]* requests)' "$T/log")"
  else
    echo "FAIL matmul 128x128 TMA-store epilogue --stats: want 832 wavefronts in 274 requests: $(grep 'wavefronts' "$T/log")"; fail=1
  fi
  # BLKC_GPU_NOTMASTORE=1: the epilogue from the registers, the same C
  rm -rf "$T/dump"; mkdir -p "$T/dump"
  if BLKC_GPU_NOTMASTORE=1 BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump BLKC_EMU_ARCH=sm_90a timeout 300 "$BLKC" run \
       "$TW" --entry=twg_bf16 M=264 N=144 K=144 --random --seed=7 --device=cuda-emu --out C="$T/e.C.npy" >"$T/log" 2>&1 &&
     "$BLKC" run "$TW" --entry=twg_bf16 M=264 N=144 K=144 --random --seed=7 --out C="$T/c.C.npy" >"$T/log" 2>&1 &&
     "$NPYCMP" "$T/e.C.npy" "$T/c.C.npy" 1e-4 1e-4 >"$T/cmp" 2>&1 && grep -q blk_tiles "$T"/dump/*.cu &&
     ! grep -q 'blk_tma_store_2d(&blk_tm' "$T"/dump/*.cu; then
    echo "ok twg_bf16 BLKC_GPU_NOTMASTORE=1: persistent, the epilogue from the registers ($(cat "$T/cmp"))"
  else
    echo "FAIL twg_bf16 BLKC_GPU_NOTMASTORE=1: $(cat "$T/log" "$T/cmp" 2>/dev/null)"; fail=1
  fi
  # one block per program: BLKC_GPU_NOPERSIST=1, and the kernels refused
  # (an atomic, a return that depends on the program id), which stay
  # warp-specialized (ENV|FILE|ENTRY|SIZES|OUTS|BLOCKS)
  for c in "BLKC_GPU_NOPERSIST=1|$TW|twg_bf16|M=200 N=144 K=144|C|12" \
           "-|$TP|tpr_atomic|M=200 N=144 K=144|C Cnt|12" \
           "-|$TP|tpr_ret|M=200 N=144 K=144|C|12"; do
    IFS='|' read -r e f k sz outs nb <<<"$c"
    rm -rf "$T/dump"; mkdir -p "$T/dump"
    oc=() oe=()
    for o in $outs; do oc+=(--out "$o=$T/c.$o.npy"); oe+=(--out "$o=$T/e.$o.npy"); done
    [ "$e" != - ] && export "$e"
    # shellcheck disable=SC2086
    timeout 300 "$BLKC" run "$f" --entry=$k $sz --random --seed=7 "${oc[@]}" >"$T/log" 2>&1 &&
      BLKC_CACHE_DISABLE=1 BLKC_GPU_DUMP=$T/dump BLKC_EMU_ARCH=sm_90a timeout 300 "$BLKC" run "$f" \
        --entry=$k $sz --random --seed=7 --device=cuda-emu --stats "${oe[@]}" >"$T/log" 2>&1
    rc=$?
    [ "$e" != - ] && unset "${e%%=*}"
    ok=1
    for o in $outs; do "$NPYCMP" "$T/e.$o.npy" "$T/c.$o.npy" 1e-4 1e-4 >"$T/cmp" 2>&1 || ok=0; done
    if [ $rc != 0 ] || [ $ok = 0 ]; then
      echo "FAIL $k $e: $(cat "$T/log" "$T/cmp")"; fail=1
    elif ! grep -q "stats: $nb blocks of" "$T/log" || grep -q 'persistent' "$T/log" ||
         grep -q 'blk_tiles' "$T"/dump/*.cu || ! grep -q 'blk_setmaxnreg_dec<40>' "$T"/dump/*.cu; then
      echo "FAIL $k $e: want $nb blocks, warp-specialized, not persistent: $(grep 'blocks of\|persistent' "$T/log")"; fail=1
    else
      echo "ok $k $e: a block per program ($nb), warp-specialized"
    fi
  done
  exit $fail
  ;;
lib-*)
  dev=${MODE#lib-} fail=0
  # NAME FILE OUT ARGS...
  for c in "gemm_pad gemm_rs.blk P M=70 KL=40 N=50 MP=96" \
           "oneshot_reduce allreduce.blk Y N=1000 op=0" \
           "moe_expert moe.blk out R=40 H=64 EW=2 EL=2 cap=16"; do
    set -- $c
    k=$1 f=$2 o=$3; shift 3
    if ! timeout 120 "$BLKC" run "$SRC/lib/$f" --entry="$k" "$@" --random --seed=5 --out "$o=$T/c.npy" >"$T/log" 2>&1 ||
       ! timeout 120 "$BLKC" run "$SRC/lib/$f" --entry="$k" "$@" --random --seed=5 --device="$dev" --out "$o=$T/e.npy" >"$T/log" 2>&1 ||
       ! "$NPYCMP" "$T/e.npy" "$T/c.npy" 1e-4 1e-4 >"$T/log" 2>&1; then
      echo "FAIL lib/$f $k on $dev: $(cat "$T/log")"; fail=1
    else
      echo "ok lib/$f $k on $dev ($(cat "$T/log"))"
    fi
  done
  if "$BLKC" run "$SRC/lib/allreduce.blk" --entry=allreduce_oneshot --ranks=2 N=64 op=0 --random \
       --device="$dev" >"$T/log" 2>&1 || ! grep -q "not supported here" "$T/log"; then
    echo "FAIL: GPU ranks on $dev not refused: $(cat "$T/log")"; fail=1
  fi
  exit $fail
  ;;
stats-*)
  dev=${MODE#stats-} fail=0
  for c in "matmul.blk M=72 N=40 K=48" "flash_attention.blk Z=1 S=70 scale=0.125"; do
    set -- $c
    f=$1; shift
    if ! timeout 120 "$BLKC" run "$SRC/examples/$f" "$@" --random --device="$dev" --stats >"$T/log" 2>&1; then
      echo "FAIL $f on $dev: $(cat "$T/log")"; fail=1; continue
    fi
    if ! grep -Eq "tensor-core instructions [1-9]" "$T/log" || ! grep -q "bound on H200: .*limited by" "$T/log" ||
       ! grep -q "bound on MI250X" "$T/log"; then
      echo "FAIL $f on $dev: no tensor-core instructions or bounds in --stats:"; cat "$T/log"; fail=1; continue
    fi
    echo "ok $f on $dev: $(grep "tensor-core" "$T/log")"
  done
  # (gpu_emu.c's search: clang++-15 .. clang++-20, then a clang++ with _Float16)
  have_clang=
  for c in clang++-20 clang++-19 clang++-18 clang++-17 clang++-16 clang++-15; do
    command -v $c >/dev/null 2>&1 && have_clang=1
  done
  # loads/stores (clang++ with blk_emu_mem.h's hooks; uint4 copies are
  # 16-byte integer moves, seen by clang 15's TSan pass too): 3 f32
  # tensors of 1024 elements, coalesced: exactly 384 sectors; --stats
  # changes no result
  if [ -n "$have_clang" ]; then
    "$BLKC" run "$SRC/examples/vector_add.blk" N=1024 --random --device="$dev" --stats --out C="$T/e.npy" >"$T/log" 2>&1
    if ! grep -q "global 32-byte sectors 384 " "$T/log"; then
      echo "FAIL vector_add --stats on $dev: want 384 global sectors:"; cat "$T/log"; fail=1
    else
      echo "ok vector_add on $dev: $(grep "sectors" "$T/log")"
    fi
    "$BLKC" run "$SRC/examples/matmul.blk" M=72 N=40 K=48 --random --device="$dev" --stats --out C="$T/m1.npy" >"$T/log" 2>&1 &&
      "$BLKC" run "$SRC/examples/matmul.blk" M=72 N=40 K=48 --random --out C="$T/m2.npy" >"$T/log" 2>&1 &&
      "$NPYCMP" "$T/m1.npy" "$T/m2.npy" 1e-4 1e-4 >"$T/log" 2>&1 || { echo "FAIL matmul --stats result: $(cat "$T/log")"; fail=1; }
  fi
  if [ -n "$have_clang" ] && [ "$dev" = cuda-emu ]; then
    # one 128 x 128 block, K = 32 (4 warps of 64 x 64): shared memory only
    # for the operands (ldmatrix.x4 256 + cp.async 128 wavefronts, no
    # epilogue round trip); global: A, B (512 sectors) and C stored from
    # the registers as 8-byte column pairs, 32 bytes a row (2048 sectors)
    "$BLKC" run "$SRC/examples/matmul.blk" -D BM=128 -D BN=128 M=128 N=128 K=32 --random \
      --device="$dev" --stats >"$T/log" 2>&1
    if ! grep -q "shared-memory wavefronts 384 (in 96 requests), global 32-byte sectors 2560 " "$T/log"; then
      echo "FAIL matmul 128x128 --stats: want 384 wavefronts, 2560 sectors:"; cat "$T/log"; fail=1
    else
      echo "ok matmul 128x128 on $dev: $(grep "wavefronts" "$T/log")"
    fi
  fi
  if [ -n "$have_clang" ] && [ "$dev" = cuda-emu ]; then
    # the same block with a bf16 C (acc as bf16, tests/emu/tepi.blk): the
    # epilogue from the registers too (bf16x2 4-byte stores, 16 bytes a
    # row: 2048 sectors, 1536 distinct): the same 384 wavefronts, no
    # conversion through shared memory (8192 more before)
    "$BLKC" run "$SRC/tests/emu/tepi.blk" --entry=tepi_bf16 M=128 N=128 K=32 --random \
      --device="$dev" --stats >"$T/log" 2>&1
    if ! grep -q "shared-memory wavefronts 384 (in 96 requests), global 32-byte sectors 2560 (in 288 requests), 1536 distinct" "$T/log"; then
      echo "FAIL tepi_bf16 128x128 --stats: want 384 wavefronts, 2560 sectors:"; cat "$T/log"; fail=1
    else
      echo "ok tepi_bf16 128x128 on $dev: $(grep "wavefronts" "$T/log")"
    fi
  fi
  # no C++ compiler: exit 3, "not supported here"
  CXX=/nonexistent/c++ "$BLKC" run "$SRC/examples/vector_add.blk" N=10 --device="$dev" >"$T/log" 2>&1
  rc=$?
  if [ $rc != 3 ] || ! grep -q "not supported here: $dev needs a C++ compiler" "$T/log"; then
    echo "FAIL: without a C++ compiler: exit $rc: $(cat "$T/log")"; fail=1
  fi
  if "$BLKC" run "$SRC/examples/vector_add.blk" N=10 --stats >"$T/log" 2>&1 || ! grep -q "needs an emulated device" "$T/log"; then
    echo "FAIL: --stats on the CPU: $(cat "$T/log")"; fail=1
  fi
  exit $fail
  ;;
mfma)
  # HIP register accumulators: MFMA 32x32x8 for warp tiles of whole 32x32
  # fragments, 16x16x16 otherwise, on hip-emu against the CPU (tails in
  # M, N, K), and the fragment shapes --emit=gpu-ir reports
  fail=0 F=$SRC/tests/emu/tmfma.blk
  # NAME FILE ENTRY-OPTS LAYOUT ARGS...
  mone() {
    local name=$1 file=$2 opts=$3 lay=$4; shift 4
    # shellcheck disable=SC2086
    "$BLKC" compile "$file" $opts --target=hip --emit=gpu-ir >"$T/ir" 2>&1
    if ! grep -q "var acc : .*fragments of $lay" "$T/ir"; then
      echo "FAIL $name: want fragments of $lay:"; grep "var acc" "$T/ir"; fail=1; return
    fi
    # shellcheck disable=SC2086
    if ! timeout 300 "$BLKC" run "$file" $opts "$@" --random --seed=6 --out C="$T/c.npy" >"$T/log" 2>&1 ||
       ! timeout 300 "$BLKC" run "$file" $opts "$@" --random --seed=6 --device=hip-emu --out C="$T/e.npy" >"$T/log" 2>&1 ||
       ! "$NPYCMP" "$T/e.npy" "$T/c.npy" 1e-4 1e-4 >"$T/log" 2>&1; then
      echo "FAIL $name on hip-emu: $(cat "$T/log")"; fail=1; return
    fi
    echo "ok $name ($lay): $(cat "$T/log")"
  }
  mone matmul_128 "$SRC/examples/matmul.blk" "-D BM=128 -D BN=128" 32x32 M=200 N=136 K=72
  mone bf16_64 "$F" --entry=tmfma_bf16 32x32 M=100 N=70 K=40
  mone f16_48 "$F" --entry=tmfma_f16_48 16x16 M=50 N=97 K=64
  "$BLKC" compile "$SRC/examples/matmul.blk" -D BM=128 -D BN=128 --target=hip --emit=hip >"$T/hip" 2>&1
  if ! grep -q "cc = blk_mfma_32x32x8_f16(a\[i\], b\[j\], cc);" "$T/hip" ||
     ! grep -q "__builtin_amdgcn_mfma_f32_32x32x8f16" "$T/hip"; then
    echo "FAIL: no MFMA 32x32x8 in the HIP C of matmul 128 x 128"; fail=1
  fi
  exit $fail
  ;;
pch)
  fail=0
  for st in 0 1; do
    export BLKC_CACHE_DIR=$T/c$st
    what=plain; sa=()
    if [ $st = 1 ]; then what="--stats (clang++)"; sa=(--stats); fi
    if ! "$BLKC" run "$SRC/examples/vector_add.blk" N=100 --random --device=cuda-emu "${sa[@]}" >"$T/log" 2>&1; then
      echo "FAIL $what: first run: $(cat "$T/log")"; fail=1; continue
    fi
    gs=$(ls "$BLKC_CACHE_DIR"/emu/h*/pch/blk_emu.h.gch 2>/dev/null)
    if [ -z "$gs" ]; then echo "FAIL $what: no precompiled header in $BLKC_CACHE_DIR/emu"; fail=1; continue; fi
    # the emulator's runtime object
    rs=$(ls "$BLKC_CACHE_DIR"/emu/h*/rt/blk_emu_rt.o 2>/dev/null)
    if [ -z "$rs" ]; then
      echo "FAIL $what: no runtime object in $BLKC_CACHE_DIR/emu: $(cat "$BLKC_CACHE_DIR"/emu/h*/rt/nort 2>/dev/null)"; fail=1; continue
    fi
    for g in $gs $rs; do echo damaged >"$g"; done
    rm -f "$BLKC_CACHE_DIR"/emu/k*.so "$BLKC_CACHE_DIR"/*.blkc  # compiled again
    "$BLKC" run "$SRC/examples/vector_add.blk" N=4100 --random --seed=5 --out C="$T/cpu.npy" >/dev/null 2>&1
    if ! "$BLKC" run "$SRC/examples/vector_add.blk" N=4100 --random --seed=5 --device=cuda-emu "${sa[@]}" \
           --out C="$T/emu.npy" >"$T/log" 2>&1 ||
       ! "$NPYCMP" "$T/emu.npy" "$T/cpu.npy" 0 0 >/dev/null; then
      echo "FAIL $what: a damaged precompiled header${rs:+ and runtime object} failed a module: $(cat "$T/log")"; fail=1; continue
    fi
    if [ -n "$rs" ] && ! ls "$BLKC_CACHE_DIR"/emu/h*/rt/nort >/dev/null 2>&1; then
      echo "FAIL $what: the damaged runtime object was not set aside ($(cd "$BLKC_CACHE_DIR/emu" && echo h*/rt/*))"; fail=1; continue
    fi
    echo "ok $what: a damaged precompiled header${rs:+ and runtime object} did not fail a module ($(cd "$BLKC_CACHE_DIR/emu" && ls -d h*/pch/* h*/rt/* 2>/dev/null | tr "\n" " "))"
  done
  exit $fail
  ;;
sample-stats)
  # --stats-sample=N (blk_emu.h's BLKC_EMU_SAMPLE): N blocks plus the first
  # and last, counts scaled to the grid. Needs clang++ (load/store counts).
  have_clang=
  for c in clang++-20 clang++-19 clang++-18 clang++-17 clang++-16 clang++-15; do
    command -v $c >/dev/null 2>&1 && have_clang=1
  done
  [ -n "$have_clang" ] || { echo "skip: no clang++ for the load/store counts"; exit 77; }
  fail=0 MM="$SRC/examples/matmul.blk -D BM=128 -D BN=128 -D BK=32"
  # uniform blocks (512^2, 16 of them): the sample's scaled counts and
  # bounds equal the full run's
  # shellcheck disable=SC2086
  timeout 300 "$BLKC" run $MM M=512 N=512 K=64 --random --device=cuda-emu --stats >"$T/full" 2>&1 &&
    timeout 300 "$BLKC" run $MM M=512 N=512 K=64 --random --device=cuda-emu --stats-sample=2 >"$T/samp" 2>&1 ||
    { echo "FAIL: run: $(cat "$T/full" "$T/samp")"; exit 1; }
  if ! grep -q "sampled 4 of 16 blocks, counts scaled by 4 " "$T/samp" ||
     ! diff <(grep -E "tensor-core|wavefronts|bound on" "$T/full") \
            <(grep -E "tensor-core|wavefronts|bound on" "$T/samp") >"$T/d"; then
    echo "FAIL: sampled counts differ from the full run's:"; cat "$T/d" "$T/samp"; fail=1
  else
    echo "ok sampled = full: $(grep "bound on H200" "$T/samp")"
  fi
  # the matmul at 1024^3, 128 x 128 x 32, stages 3, 4 warps: tensor-bound
  # on the H200 (examples/matmul.blk's defaults: warps(4) stages(3))
  # shellcheck disable=SC2086
  timeout 500 "$BLKC" run $MM M=1024 N=1024 K=1024 --random --device=cuda-emu --stats-sample=1 >"$T/log" 2>&1 ||
    { echo "FAIL: matmul 1024^3: $(cat "$T/log")"; exit 1; }
  if ! grep -q "sampled 3 of 64 blocks" "$T/log" || ! grep -q "tensor-core instructions 524288 " "$T/log" ||
     ! grep -q "bound on H200: .*limited by tensor cores" "$T/log"; then
    echo "FAIL: matmul 1024^3 not tensor-bound on H200:"; cat "$T/log"; fail=1
  else
    echo "ok matmul 1024^3: $(grep "bound on H200" "$T/log")"
  fi
  # the margin: the tensor cores' time at least 5% above every other unit's
  # (128 x 128 x 32 tiles: 1.5 wavefronts per mma against 1.59 clocks of
  # tensor time, docs/backends.md; L2 at 1024^3 about 9% below)
  if ! grep "bound on H200" "$T/log" | sed 's/.*H200: tensor cores //; s/ us, shared memory / /; s/ us, L2 / /; s/ us, DRAM / /; s/ us;.*//' |
       awk '{ m = $2; if ($3 > m) m = $3; if ($4 > m) m = $4; exit !($1 >= 1.05 * m) }'; then
    echo "FAIL: matmul 1024^3: the tensor cores lead by less than 5%:"; grep "bound on H200" "$T/log"; fail=1
  fi
  # the outputs of a sample are partial: --out is refused (usage, exit 2)
  # shellcheck disable=SC2086
  "$BLKC" run $MM M=256 N=256 K=32 --device=cuda-emu --stats-sample=1 --out C="$T/c.npy" >"$T/log" 2>&1
  rc=$?
  if [ $rc != 2 ] || ! grep -q "blkc: error: --stats-sample runs only some blocks, so the outputs are partial: --out is refused" "$T/log"; then
    echo "FAIL: --stats-sample with --out: exit $rc: $(cat "$T/log")"; fail=1
  fi
  "$BLKC" run $MM M=256 N=256 K=32 --device=cuda-emu --stats-sample=0 >"$T/log" 2>&1
  rc=$?
  if [ $rc != 2 ] || ! grep -q "bad --stats-sample '0': expected a positive integer" "$T/log"; then
    echo "FAIL: --stats-sample=0: exit $rc: $(cat "$T/log")"; fail=1
  fi
  exit $fail
  ;;
*) echo "emu.sh: unknown mode $MODE"; exit 2 ;;
esac
