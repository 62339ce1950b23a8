#!/usr/bin/env bash
# gpu_ranks.sh BLKC NPYCMP SRCDIR [FAKEDIR [VENDOR]] — GPU ranks (runtime/gpu_ranks.c)
# against CPU ranks: every case runs one device function through
# `blkc run --ranks=N` with the same random inputs on the CPU and on
# $BLKC_GPU_DEVICE (default cuda:0) and compares every rank's outputs.
#
# Without FAKEDIR (ctest label gpu): a real GPU; exit 77 when the device
# cannot be used here. Runs tests/gpu/data/granks.blk, the groups and
# send/recv of tests/dist/groups.blk and p2p.blk, and the lib/ patterns
# allreduce (one-shot, two-shot) and ag_gemm (overlapped, plain) on 2 and
# 4 ranks (all sharing cuda:0 on a one-GPU machine).
#
# With FAKEDIR (label dist): FAKEDIR holds fake_cuda.c's libcuda.so.1
# (VENDOR cuda, the default: on cuda:0) or fake_hip.c's libamdhip64.so
# (VENDOR hip: on hip:0), which run no kernels; only the kernel-free
# granks.blk cases run, which exercise the host side (heaps, peers,
# copies, signals, staged collectives, CUDA/HIP IPC under mpirun, errors)
# on 1 and several fake devices; programs with kernels must fail at the
# launch, cleanly. With fake_nccl.c's libfakenccl.so next to FAKEDIR
# (../fakenccl) the same cases run once more with one fake device per
# rank, so that the NCCL/RCCL path (and its groups and exchanges) runs.
# On the NCCL path also the deadlines of nonblocking communicators
# (FAKE_NCCL_HANG_RANK: exit 3 at 4 x BLKC_WAIT_TIMEOUT_MS); and a kernel
# waiting on a failed peer stops at once (gabort.blk, timed_fail); a rank
# that waits in a barrier before a copy from a stuck peer ends at the
# deadline (gstuck.blk). World collectives the ranks disagree on (mm_*)
# fail with the CPU ranks' "collective mismatch", also before NCCL.
# The CPU side can come from saved references (gpu_ref.sh).
# GRANKS_PART=cases runs every case but the timed ones (timed_fail) and
# those under mpirun, GRANKS_PART=timed only those (ctest: gpu_ranks_fake
# and gpu_ranks_fake_timed, the second alone on the machine: timed
# windows, and mpirun's processes spin on the cores while they wait);
# unset: all.
set -u
BLKC=$1 NPYCMP=$2 SRC=$3 FAKE=${4:-} VENDOR=${5:-cuda}
DEV=${BLKC_GPU_DEVICE:-cuda:0}
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-granks.XXXXXX")
trap 'rm -rf "$T"' EXIT
# a FAIL line, kept to be repeated under the summary (a CI log that keeps
# only the output's head and tail still shows which case failed and why)
say_fail() { echo "$*"; echo "$*" >>"$T/fails"; }
G=$SRC/tests/gpu/data/granks.blk LIB=$SRC/lib
if [ -n "$FAKE" ]; then
  # the fake driver must be there, or the machine's real one answers
  if [ "$VENDOR" = hip ]; then flib=libamdhip64.so; else flib=libcuda.so.1; fi
  [ -e "$FAKE/$flib" ] || { say_fail "FAIL: no fake driver $FAKE/$flib (build its target first)"; exit 1; }
  export LD_LIBRARY_PATH=$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  DEV=$VENDOR:0
fi
. "$SRC/tests/gpu/gpu_ref.sh"
if [ -z "$FAKE" ] && [ -z "$REF_WRITE" ]; then
  # skip unless the device runs a trivial kernel
  . "$SRC/tests/gpu/gpu_probe.sh"
fi

fails=0 n=0
want() { [ -z "${GRANKS_PART:-}" ] || [ "$GRANKS_PART" = "$1" ]; }
# run_case NAME RANKS FILE "RTOL ATOL" "OUT..." ARGS...: outputs per rank
run_case() {
  want cases || return 0
  local name=$1 R=$2 file=$3 tol=$4 outs=$5; shift 5
  local o r oc og ok=1 msg=""
  oc=() og=()
  for o in $outs; do
    oc+=(--out "$o=$T/$name.cpu.$o.{rank}.npy")
    og+=(--out "$o=$T/$name.gpu.$o.{rank}.npy")
  done
  n=$((n + 1))
  if ! cpu_ref "$name" "$file" --ranks="$R" "$@" --random --seed=11 "${oc[@]}" >"$T/log" 2>&1; then
    say_fail "FAIL $name: cpu run: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  [ -z "$REF_WRITE" ] || { echo "ref $name"; return; }
  if ! timeout 120 "$BLKC" run "$file" --ranks="$R" "$@" --random --seed=11 --device="$DEV" "${og[@]}" >"$T/log" 2>&1; then
    say_fail "FAIL $name: $DEV run: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  for o in $outs; do
    for ((r = 0; r < R; r++)); do
      # shellcheck disable=SC2086
      if ! "$NPYCMP" "$T/$name.gpu.$o.$r.npy" "$T/$name.cpu.$o.$r.npy" $tol >"$T/cmp" 2>&1; then
        say_fail "FAIL $name: output $o of rank $r: $(cat "$T/cmp")"; ok=0
      fi
    done
  done
  msg=$(tail -1 "$T/cmp")
  if [ $ok = 1 ]; then echo "ok $name ($msg)"; else fails=$((fails + 1)); fi
}
# mpi_case NAME NP FILE "RTOL ATOL" OUT ARGS...: GPU ranks as mpirun's
# processes (heaps shared with CUDA IPC) vs local CPU ranks; skipped
# without mpirun or without MPI in this blkc
MPI=()
if command -v mpirun >/dev/null 2>&1 && [ "${BLKC_SANITIZED:-}" != 1 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  MPI=(mpirun)
  mpirun --version 2>&1 | grep -q "Open MPI" && MPI=(mpirun --oversubscribe --bind-to none -x LD_LIBRARY_PATH -x BLKC_WAIT_TIMEOUT_MS)
fi
mpi_case() {
  want timed || return 0
  local name=$1 np=$2 file=$3 tol=$4 o=$5 r; shift 5
  if [ ${#MPI[@]} = 0 ] && [ -z "$REF_WRITE" ]; then echo "skip $name: no mpirun"; return; fi
  n=$((n + 1))
  if ! cpu_ref "$name" "$file" --ranks="$np" "$@" --random --seed=11 --out "$o=$T/$name.cpu.{rank}.npy" >"$T/log" 2>&1; then
    say_fail "FAIL $name: cpu run: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  [ -z "$REF_WRITE" ] || { echo "ref $name"; return; }
  timeout 120 "${MPI[@]}" -np "$np" "$BLKC" run "$file" --ranks="$np" "$@" --random --seed=11 \
    --device="$DEV" --out "$o=$T/$name.gpu.{rank}.npy" >"$T/log" 2>&1
  local rc=$?
  if [ $rc != 0 ] && grep -q "built without MPI" "$T/log"; then
    n=$((n - 1)); echo "skip $name: blkc built without MPI"; return
  fi
  if [ $rc != 0 ]; then
    say_fail "FAIL $name: mpirun -np $np on $DEV: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  for ((r = 0; r < np; r++)); do
    # shellcheck disable=SC2086
    if ! "$NPYCMP" "$T/$name.gpu.$r.npy" "$T/$name.cpu.$r.npy" $tol >"$T/cmp" 2>&1; then
      say_fail "FAIL $name: rank $r: $(cat "$T/cmp")"; fails=$((fails + 1)); return
    fi
  done
  echo "ok $name ($(tail -1 "$T/cmp"))"
}
# expect_fail NAME PATTERN ARGS...: exit 3, one line matching PATTERN
expect_fail() {
  want cases || return 0
  local name=$1 pat=$2 rc; shift 2
  [ -z "$REF_WRITE" ] || return 0
  n=$((n + 1))
  BLKC_WAIT_TIMEOUT_MS=300 timeout 60 "$BLKC" "$@" >"$T/log" 2>&1; rc=$?
  if [ $rc -ne 3 ] || ! grep -q "$pat" "$T/log" || [ "$(wc -l <"$T/log")" -ne 1 ]; then
    say_fail "FAIL $name: wanted exit 3 and one line with '$pat', got $rc: $(cat "$T/log")"
    fails=$((fails + 1)); return
  fi
  echo "ok $name ($(cat "$T/log"))"
}

# timed_fail NAME PATTERN MIN_MS MAX_MS TIMEOUT_MS ARGS...: exit 3 and one
# line matching PATTERN, with BLKC_WAIT_TIMEOUT_MS=TIMEOUT_MS, in MIN_MS to
# MAX_MS of wall time (the run is killed after 60 s). A run right but out
# of the window is tried once more (a loaded machine), and said so under
# the summary; a wrong exit, message or line count fails at once.
timed_fail() {
  want timed || return 0
  local name=$1 pat=$2 lo=$3 hi=$4 tmo=$5 rc t0 ms try; shift 5
  [ -z "$REF_WRITE" ] || return 0
  n=$((n + 1))
  for try in 1 2; do
    t0=$(date +%s%N)
    BLKC_WAIT_TIMEOUT_MS=$tmo timeout 60 "$BLKC" "$@" >"$T/log" 2>&1; rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $rc -ne 3 ] || ! grep -q "$pat" "$T/log" || [ "$(wc -l <"$T/log")" -ne 1 ]; then
      say_fail "FAIL $name: wanted exit 3, one line with '$pat', got $rc in $ms ms: $(cat "$T/log")"
      fails=$((fails + 1)); return
    fi
    [ $ms -lt "$lo" ] || [ $ms -gt "$hi" ] || break
    if [ $try = 2 ]; then
      say_fail "FAIL $name: wanted $lo..$hi ms, took $ms ms twice: $(cat "$T/log")"
      fails=$((fails + 1)); return
    fi
    echo "retry $name: $ms ms, outside $lo..$hi" | tee -a "$T/retried"
  done
  echo "ok $name ($ms ms: $(cat "$T/log"))"
}
# exact_fail NAME LINE ARGS...: exit 3 and the output exactly LINE (one
# line); no window on the time it took (the run is killed after 60 s). A
# timed case: deadlines that race with the peers' (alone on the machine).
exact_fail() {
  want timed || return 0
  local name=$1 line=$2 rc; shift 2
  [ -z "$REF_WRITE" ] || return 0
  n=$((n + 1))
  timeout 60 "$BLKC" "$@" >"$T/log" 2>&1; rc=$?
  if [ $rc -ne 3 ] || [ "$(cat "$T/log")" != "$line" ]; then
    say_fail "FAIL $name: wanted exit 3 and '$line', got $rc: $(cat "$T/log")"
    fails=$((fails + 1)); return
  fi
  echo "ok $name ($line)"
}

# a kernel waiting on a failed peer (tests/gpu/data/gabort.blk) gives up at
# once: 3 ranks, rank 1 asserts, ranks 0 and 2 wait with a 20 s timeout
ABORT_PAT="^blkc: error: rank 1: launch wait_fail: .*kernel wait_fail: assertion failed in program (0, 0, 0): rank 1 fails at once$"

granks_cases() { # RANKS SUFFIX
  local R=$1 s=$2
  run_case "ar_sum$s" "$R" "$G" "1e-6 1e-6" b --entry=ar_sum N=1000
  run_case "ar_max_i32$s" "$R" "$G" "0 0" b --entry=ar_max_i32 N=77
  run_case "ar_sum_f16$s" "$R" "$G" "0 0" b --entry=ar_sum_f16 N=300
  run_case "ag$s" "$R" "$G" "0 0" dst --entry=ag S=37 D=$((37 * R))
  run_case "rs$s" "$R" "$G" "1e-6 1e-6" dst --entry=rs S=$((5 * R)) D=5
  run_case "a2a$s" "$R" "$G" "0 0" dst --entry=a2a S=$((6 * R))
  run_case "bc$s" "$R" "$G" "0 0" b --entry=bc N=50 root=$((R - 1))
  run_case "red$s" "$R" "$G" "1e-6 1e-6" b --entry=red N=333 root=0
  run_case "gat$s" "$R" "$G" "0 0" dst --entry=gat S=37 D=$((37 * R)) root=0
  run_case "sca$s" "$R" "$G" "0 0" dst --entry=sca S=37 D=$((37 * R)) root=$((R - 1))
  run_case "ar_sym_2d$s" "$R" "$G" "1e-6 1e-6" y --entry=ar_sym_2d R=7 C=9
  run_case "ring_pull$s" "$R" "$G" "0 0" y --entry=ring_pull N=513
  run_case "ring_push$s" "$R" "$G" "0 0" y --entry=ring_push N=300
  run_case "async_loop$s" "$R" "$G" "0 0" y --entry=async_loop N=300
  run_case "sub_copy$s" "$R" "$G" "0 0" y --entry=sub_copy R=6 C=8 r0=2 c0=3
}

# groups and send/recv (tests/dist/groups.blk, p2p.blk: kernel-free
# entries), exact: staged through the CPU ranks' code, or NCCL's copies
P2P=$SRC/tests/dist/p2p.blk GRP=$SRC/tests/dist/groups.blk
pg_cases() { # RANKS SUFFIX
  local R=$1 s=$2 C
  run_case "p2p_ring$s" "$R" "$P2P" "0 0" b --entry=ring N=513
  run_case "p2p_both$s" "$R" "$P2P" "0 0" "lo hi me" --entry=both N=77 M=33
  run_case "p2p_rotate$s" "$R" "$P2P" "0 0" b --entry=rotate N=100 s=3
  run_case "p2p_star$s" "$R" "$P2P" "0 0" g --entry=star N=50
  for C in 1 2; do
    [ $((R % C)) = 0 ] || continue
    local G=$((R / C))
    run_case "grp_coll.c$C$s" "$R" "$GRP" "0 0" "ag bc red gat sca rs a2b" \
      --entry=g_coll C=$C S=6 D=$((6 * G)) N=5 root=$((G - 1))
    run_case "grp_mixed.c$C$s" "$R" "$GRP" "0 0" b --entry=g_mixed N=40 C=$C
    run_case "grp_then_world.c$C$s" "$R" "$GRP" "0 0" "b w" --entry=g_then_world N=30 C=$C
  done
}

# GRANKS_RANKS / GRANKS_NCCL_RANKS: the rank counts of the case lists
# (tests/gpu/CMakeLists.txt: 2 for the hip variant in the sanitizer builds)
for R in ${GRANKS_RANKS:-1 2 4}; do granks_cases "$R" ".r$R"; pg_cases "$R" ".r$R"; done
for NP in 2 4; do
  mpi_case "mpi_ring_pull.np$NP" "$NP" "$G" "0 0" y --entry=ring_pull N=513
  mpi_case "mpi_ring_push.np$NP" "$NP" "$G" "0 0" y --entry=ring_push N=300
  mpi_case "mpi_ar_sum.np$NP" "$NP" "$G" "1e-6 1e-6" b --entry=ar_sum N=1000
  mpi_case "mpi_ag.np$NP" "$NP" "$G" "0 0" dst --entry=ag S=37 D=$((37 * NP))
  mpi_case "mpi_a2a.np$NP" "$NP" "$G" "0 0" dst --entry=a2a S=$((6 * NP))
done
if [ ${#MPI[@]} != 0 ] && [ -z "$REF_WRITE" ] && want timed; then # a timed-out wait ends every process: exit 3
  n=$((n + 1))
  BLKC_WAIT_TIMEOUT_MS=300 timeout 60 "${MPI[@]}" -np 2 "$BLKC" run "$G" --entry=never \
    --ranks=2 N=4 --device="$DEV" >"$T/out" 2>"$T/log"
  rc=$?
  if grep -q "built without MPI" "$T/log"; then
    n=$((n - 1)); echo "skip mpi_never: blkc built without MPI"
  elif [ $rc = 3 ] && grep -q "^blkc: error: rank [01]: wait on signal sig\[0\] timed out after 300 ms" "$T/log"; then
    echo "ok mpi_never ($(grep '^blkc: error' "$T/log" | head -1))"
  else
    say_fail "FAIL mpi_never: exit $rc: $(head -c 600 "$T/log")"; fails=$((fails + 1))
  fi
fi
expect_fail never_times_out "wait on signal sig\[0\] timed out after 300 ms" \
  run "$G" --entry=never --ranks=2 N=4 --device="$DEV"
# an exchange or group collective that the ranks do not agree on
expect_fail p2p_lone_send "rank 0 sends 1 message (.* bytes) to rank 1, but rank 1 receives 0" \
  run "$P2P" --entry=lone_send --ranks=2 N=4 --device="$DEV"
expect_fail p2p_skip "rank 1 left the run (returned early) while rank 0 waits in exchange" \
  run "$P2P" --entry=skip --ranks=2 N=4 --device="$DEV"
expect_fail grp_mismatch "exchange mismatch: rank 0 sends 1 message (20 bytes) to rank 1" \
  run "$GRP" --entry=g_mismatch --ranks=2 N=4 M=5 --device="$DEV"
# world collectives the ranks disagree on (granks.blk mm_*): the CPU
# ranks' message, on every path (staged here; NCCL below)
MM="^blkc: error: rank [01]: collective mismatch: rank 0 called"
# npy_i64 PATH V...: a 1-D little-endian int64 .npy of small non-negative values
npy_i64() {
  local path=$1 v h hl; shift
  h="{'descr': '<i8', 'fortran_order': False, 'shape': ($#,), }"
  while [ $(((10 + ${#h} + 1) % 64)) -ne 0 ]; do h="$h "; done
  hl=$((${#h} + 1))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((hl & 255)))\\x$(printf %02x $((hl >> 8)))"
    printf '%s\n' "$h"
    for v in "$@"; do printf "\\x$(printf %02x "$v")\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; done
  } >"$path"
}
npy_i64 "$T/a2a_sc.npy" 3 3
npy_i64 "$T/a2a_rc.npy" 3 2
mm_cases() { # SUFFIX
  expect_fail "mm_size$1" "$MM all_reduce(count 100, f32, sum) but rank 1 called all_reduce(count 80, f32, sum)\$" \
    run "$G" --entry=mm_size --ranks=2 N=100 --device="$DEV"
  expect_fail "mm_dtype$1" "$MM all_reduce(count 100, f32, sum) but rank 1 called all_reduce(count 100, i32, sum)\$" \
    run "$G" --entry=mm_dtype --ranks=2 N=100 --device="$DEV"
  expect_fail "mm_op$1" "$MM all_reduce(count 100, f32, sum) but rank 1 called all_reduce(count 100, f32, max)\$" \
    run "$G" --entry=mm_op --ranks=2 N=100 --device="$DEV"
  expect_fail "mm_root$1" "$MM broadcast(count 100, f32, root 0) but rank 1 called broadcast(count 100, f32, root 1)\$" \
    run "$G" --entry=mm_root --ranks=2 N=100 --device="$DEV"
  expect_fail "mm_sym$1" "$MM sym_alloc(count 400) but rank 1 called sym_alloc(count 320)\$" \
    run "$G" --entry=mm_sym --ranks=2 N=100 --random --device="$DEV"
  # all_to_all's receive counts: rank 1 sends 3 elements where 2 are expected
  expect_fail "mm_a2a$1" "^blkc: error: rank [01]: all_to_all: rank 1 sends 3 elements to rank [01] but rank [01] expects 2\$" \
    run "$G" --entry=mm_a2a --ranks=2 S=6 D=5 sc=@"$T/a2a_sc.npy" rc=@"$T/a2a_rc.npy" --random --device="$DEV"
}
mm_cases ""

if [ -n "$FAKE" ]; then
  # the vendor's names: device count, NCCL/RCCL, launch
  if [ "$VENDOR" = hip ]; then
    NDEV=FAKE_HIP_DEVICES LIBVAR=BLKC_RCCL_LIB COLL=RCCL VN=HIP LAUNCH=hipModuleLaunchKernel
  else
    NDEV=FAKE_CUDA_DEVICES LIBVAR=BLKC_NCCL_LIB COLL=NCCL VN=CUDA LAUNCH=cuLaunchKernel
  fi
  # several devices (rank r on device r % 3), NCCL/RCCL absent: staged
  # ($NDEV and $LIBVAR are names: exported around the cases that need them)
  export "$NDEV=3" "$LIBVAR=/nonexistent/libcoll.so"
  granks_cases 4 ".dev3"
  pg_cases 4 ".dev3"
  # the copies between host and device without a staging buffer (no mapped
  # host memory) and with a driver that lacks the asynchronous copies
  # (FAKEDIR's sibling *_nocopy/, -DFAKE_NO_ASYNC_COPY): the synchronous
  # copies, the same results; and copies larger than the 4 MiB staging
  # buffer (6 MB: two chunks each way)
  run_case ar_sum.chunks 2 "$G" "1e-6 1e-6" b --entry=ar_sum N=1500000
  FAKE_GPU_NO_HOSTMAP=1 run_case ar_sum.nostage 2 "$G" "1e-6 1e-6" b --entry=ar_sum N=1000
  FAKE_GPU_NO_HOSTMAP=1 run_case ring_push.nostage 2 "$G" "0 0" y --entry=ring_push N=300
  FAKE_GPU_NO_HOSTMAP=1 run_case grp_coll.nostage 2 "$GRP" "0 0" "ag bc red gat sca rs a2b" \
    --entry=g_coll C=1 S=6 D=12 N=5 root=1
  NC=${FAKE}_nocopy
  if [ -e "$NC/$flib" ]; then
    LD_LIBRARY_PATH=$NC:$LD_LIBRARY_PATH run_case ar_sum.nocopy 2 "$G" "1e-6 1e-6" b --entry=ar_sum N=1000
    LD_LIBRARY_PATH=$NC:$LD_LIBRARY_PATH run_case p2p_ring.nocopy 2 "$P2P" "0 0" b --entry=ring N=513
    LD_LIBRARY_PATH=$NC:$LD_LIBRARY_PATH run_case grp_coll.nocopy 2 "$GRP" "0 0" "ag bc red gat sca rs a2b" \
      --entry=g_coll C=1 S=6 D=12 N=5 root=1
  else
    echo "skip nocopy: no $NC/$flib"
  fi
  # the NCCL path over fake_nccl.c (one fake device per rank): the world's
  # collectives, groups (ncclCommSplit) and exchange blocks (grouped
  # ncclSend/ncclRecv after the host exchange of the sizes)
  FN=$FAKE/../fakenccl/libfakenccl.so
  if [ -e "$FN" ]; then
    export "$NDEV=4" "$LIBVAR=$FN" FAKE_NCCL_LOG=$T/nccl.log
    for R in ${GRANKS_NCCL_RANKS:-2 4}; do granks_cases "$R" ".nccl$R"; pg_cases "$R" ".nccl$R"; done
    expect_fail nccl_lone_send "rank 0 sends 1 message (8 bytes) to rank 1, but rank 1 receives 0" \
      run "$P2P" --entry=lone_send --ranks=2 N=4 --device="$DEV"
    expect_fail nccl_size_mismatch "exchange mismatch: rank [01] sends 16 bytes to rank [01], but its recv wants 20" \
      run "$P2P" --entry=size_mismatch --ranks=2 N=4 M=5 --device="$DEV"
    expect_fail nccl_skip "rank 1 left the run (returned early) while rank 0 waits in exchange" \
      run "$P2P" --entry=skip --ranks=2 N=4 --device="$DEV"
    # a world collective the ranks disagree on fails on the host before
    # NCCL is called (a real NCCL would hang or corrupt): no NCCL
    # collective call (nccl_mm_no_call; only the group's setup)
    FAKE_NCCL_LOG=$T/mm.log mm_cases .nccl
    # in a group on its ncclCommSplit communicator: agreed within the group
    FAKE_NCCL_LOG=$T/mm.log expect_fail nccl_grp_mismatch \
      "^blkc: error: rank [01]: collective mismatch in a group: group rank 0 (rank 0) called all_reduce(count 5, f32, sum) but group rank 1 (rank 1) called all_reduce(count 4, f32, sum)\$" \
      run "$GRP" --entry=g_mismatch --ranks=2 N=4 M=5 --device="$DEV"
    if want cases; then
      n=$((n + 1))
      if grep -qv "ncclGetUniqueId\|ncclCommInitRankConfig\|ncclCommSplit\|ncclCommAbort\|ncclCommDestroy" "$T/mm.log" 2>/dev/null; then
        say_fail "FAIL nccl_mm_no_call: $COLL was called: $(sort -u "$T/mm.log" | tr '\n' ' ')"; fails=$((fails + 1))
      else
        echo "ok nccl_mm_no_call"
      fi
    fi
    # nonblocking communicators (ncclCommInitRankConfig): a rank whose init,
    # collective or exchange never completes fails at the collectives'
    # deadline (4 x 300 ms) and aborts its communicator; exit 3, no hang
    export FAKE_NCCL_HANG_RANK=1
    FAKE_NCCL_HANG_AT=init timed_fail nccl_hang_init \
      "^blkc: error: rank 1: ncclCommInitRankConfig did not complete within 1200 ms" 1200 10000 300 \
      run "$G" --entry=ar_sum --ranks=2 N=4 --device="$DEV"
    FAKE_NCCL_HANG_AT=coll timed_fail nccl_hang_coll \
      "^blkc: error: rank 1: all_reduce did not complete within 1200 ms" 1200 10000 300 \
      run "$G" --entry=ar_sum --ranks=2 N=4 --device="$DEV"
    FAKE_NCCL_HANG_AT=coll timed_fail nccl_hang_exchange \
      "^blkc: error: rank 1: exchange (ncclSend/ncclRecv) did not complete within 1200 ms" 1200 10000 300 \
      run "$P2P" --entry=ring --ranks=2 N=4 --device="$DEV"
    unset FAKE_NCCL_HANG_RANK
    if want cases; then
      n=$((n + 1))
      if grep -q ncclCommInitRankConfig "$T/nccl.log" && grep -q ncclCommSplit "$T/nccl.log" && grep -q ncclSend "$T/nccl.log" &&
         grep -q ncclAllReduce "$T/nccl.log"; then
        echo "ok nccl_used ($(sort "$T/nccl.log" | uniq -c | tr -s ' \n' ' '))"
      else
        say_fail "FAIL nccl_used: $COLL calls: $(sort -u "$T/nccl.log" 2>/dev/null | tr '\n' ' ')"; fails=$((fails + 1))
      fi
    fi
    unset FAKE_NCCL_LOG
    export "$NDEV=3" "$LIBVAR=/nonexistent/libcoll.so"
  else
    echo "skip nccl_fake: no $FN"
  fi
  BLKC_GPU_COLL=nccl \
    expect_fail nccl_required "BLKC_GPU_COLL=nccl, but $COLL cannot be used: $COLL not found" \
    run "$G" --entry=ar_sum --ranks=2 N=4 --device="$DEV"
  unset "$LIBVAR"
  export "$NDEV=1"
  # the refusal once NCCL/RCCL loaded: skipped where it is not installed
  if BLKC_GPU_COLL=nccl "$BLKC" run "$G" --entry=ar_sum --ranks=2 N=4 \
       --device="$DEV" 2>&1 | grep -q "$COLL not found"; then
    echo "skip nccl_shared_gpu: no $COLL library here"
  else
    BLKC_GPU_COLL=nccl \
      expect_fail nccl_shared_gpu "NCCL needs one device per rank" \
      run "$G" --entry=ar_sum --ranks=2 N=4 --device="$DEV"
  fi
  export "$NDEV=0"
  expect_fail no_device "running 2 ranks on $DEV is not supported here: no $VN device" \
    run "$G" --entry=ar_sum --ranks=2 N=4 --device="$DEV"
  export "$NDEV=3"
  # kernels compile (NVRTC for sm_90; the fake hiprtc of fake_hip.c), load
  # and are packed, then the fake refuses to run them: the launch error
  # names the rank and the kernel
  expect_fail fake_kernel_entry "rank [01]: launch vadd: $VN: $LAUNCH failed: operation not supported" \
    run "$SRC/tests/cli/data/vadd.blk" N=4 --ranks=2 --device="$DEV"
  expect_fail fake_kernel_in_device "rank [01]: .*launch sig_barrier: $VN: $LAUNCH failed: operation not supported" \
    run "$LIB/allreduce.blk" --entry=allreduce_oneshot N=100 op=0 --ranks=2 --device="$DEV"
  # the fake's stand-in for wait_fail polls BkGpuRankCtx.abort_flag (the
  # world's flag in the fake's mapped host memory) as blk_wait does
  export FAKE_GPU_WAIT_KERNEL=wait_fail
  timed_fail abort_flag_wait "$ABORT_PAT" 0 5000 20000 \
    run "$SRC/tests/gpu/data/gabort.blk" --entry=abort_wait N=4 --ranks=3 --device="$DEV"
  # without mapped host memory the flag is 0: the waits run to their timeout
  FAKE_GPU_NO_HOSTMAP=1 timed_fail abort_flag_absent "$ABORT_PAT" 1500 20000 1500 \
    run "$SRC/tests/gpu/data/gabort.blk" --entry=abort_wait N=4 --ranks=3 --device="$DEV"
  unset FAKE_GPU_WAIT_KERNEL
  # a copy from a peer that waits for it in a barrier while the peer is
  # stuck in a waiting kernel (tests/gpu/data/gstuck.blk): the waiting rank
  # fails at the collectives' deadline naming itself, the barrier and the
  # peer, and the abort flag stops the peer's kernel long before its own
  # 5 s timeout; with only BLKC_WAIT_TIMEOUT_MS the stuck kernel's wait
  # ends first (the barrier's deadline is 4 x) and names rank 1
  export FAKE_GPU_WAIT_KERNEL=stuck FAKE_GPU_FAIL_RANK=-1
  BLKC_COLL_TIMEOUT_MS=300 timed_fail pull_stuck \
    "^blkc: error: rank 0: barrier timed out after 300 ms: rank 0 waits, rank 1 did not arrive$" 300 4500 5000 \
    run "$SRC/tests/gpu/data/gstuck.blk" --entry=pull_stuck N=4 --random --ranks=2 --device="$DEV"
  timed_fail pull_stuck_wait \
    "^blkc: error: rank 1: launch stuck: kernel stuck: wait on S\[0\] timed out after 300 ms (waiting for 1, saw 0)$" 300 4500 300 \
    run "$SRC/tests/gpu/data/gstuck.blk" --entry=pull_stuck N=4 --random --ranks=2 --device="$DEV"
  unset FAKE_GPU_WAIT_KERNEL FAKE_GPU_FAIL_RANK
  # ranks whose kernel never ends (computing for ever: the fake holds their
  # stream) while the others finish (tests/gpu/data/gforever.blk): the
  # others name them at the end of the run at the collectives' deadline,
  # one line, exit 3; the stuck ranks stop polling their stream 1 s after
  # the failure (a kernel entry, and a device function on 4 ranks)
  # (under a sanitizer a 2 s deadline: with 300 ms under TSan rank 2, which
  # does return, was once counted among those that did not)
  export FAKE_GPU_WAIT_KERNEL=spin
  et=300
  [ "${BLKC_SANITIZED:-}" != 1 ] || et=2000
  FAKE_GPU_SPIN_RANK=1 BLKC_COLL_TIMEOUT_MS=$et timed_fail end_forever \
    "^blkc: error: rank 0: the end of the run timed out after $et ms: rank 0 waits, rank 1 did not arrive$" $et $((et + 6000)) 5000 \
    run "$SRC/tests/gpu/data/gforever.blk" --entry=spin N=16 --ranks=2 --device="$DEV"
  # (4 ranks: at least 1 s, so that rank 2, which returns, arrives in time
  # on a loaded machine: at 300 ms it was once named with 1 and 3)
  et4=$((et < 1000 ? 1000 : et))
  FAKE_GPU_SPIN_RANK=1,3 BLKC_COLL_TIMEOUT_MS=$et4 timed_fail end_forever_4 \
    "^blkc: error: rank \([02]\): the end of the run timed out after $et4 ms: rank \1 waits, ranks 1, 3 did not arrive$" $et4 $((et4 + 6000)) 5000 \
    run "$SRC/tests/gpu/data/gforever.blk" --entry=spin_all N=16 --ranks=4 --device="$DEV"
  # a rank whose uploads never complete (the fake's default stream of
  # device 1 never drains): polled, it names itself at the collectives'
  # deadline (a peer's barrier gives a rank in a wait longer), one line,
  # exit 3, and stops polling 1 s later
  FAKE_GPU_SYNC_HANG=1 BLKC_COLL_TIMEOUT_MS=$et timed_fail upload_forever \
    "^blkc: error: rank 1: the uploads to the device did not complete within $et ms$" $et $((et + 6000)) 5000 \
    run "$SRC/tests/gpu/data/gforever.blk" --entry=spin N=16 --ranks=2 --device="$DEV"
  unset FAKE_GPU_WAIT_KERNEL
  # the same for the copy back of a staged collective, group collective
  # and exchange: the default stream drains for the uploads, never from
  # its second wait on (FAKE_GPU_SYNC_HANG=D@2); the group case on the
  # first device (rank 0)
  FAKE_GPU_SYNC_HANG=1@2 BLKC_GPU_COLL=host BLKC_COLL_TIMEOUT_MS=$et timed_fail copy_back_coll \
    "^blkc: error: rank 1: the copy of all_reduce's result to the device did not complete within $et ms$" $et $((et + 6000)) 5000 \
    run "$G" --entry=ar_sum N=16 --random --ranks=2 --device="$DEV"
  FAKE_GPU_SYNC_HANG=0@2 BLKC_GPU_COLL=host BLKC_COLL_TIMEOUT_MS=$et timed_fail copy_back_group \
    "^blkc: error: rank 0: the copy of a group all_reduce's result to the device did not complete within $et ms$" $et $((et + 6000)) 5000 \
    run "$GRP" --entry=g_mixed N=16 C=1 --random --ranks=2 --device="$DEV"
  FAKE_GPU_SYNC_HANG=1@2 BLKC_GPU_COLL=host BLKC_COLL_TIMEOUT_MS=$et timed_fail copy_back_exchange \
    "^blkc: error: rank 1: the copy of the exchange's received messages to the device did not complete within $et ms$" $et $((et + 6000)) 5000 \
    run "$P2P" --entry=ring N=16 --random --ranks=2 --device="$DEV"
  # the waits for a rank's own stream (rt_gpur_sync: its queued copies,
  # zeroings and notifies) before the host reads it and at an async
  # block's fork and join, and for the copies between host and device
  # (gpu_copy.c: through a pinned staging buffer, an asynchronous copy on
  # the rank's stream): polled, the rank names itself and what it waited
  # for at the collectives' deadline, exit 3. FAKE_GPU_STREAM_HANG=1@N:
  # the streams of device 1 (rank 1's) drain for its first N - 1 waits,
  # never after. ar_sum's waits: 1 the copy of the heap table, 2 the
  # zeroing of b, 3 its upload, 4 the stream before the staged all_reduce,
  # 5 the copy of its input down, 6 the copy of its result back, 7 and 8
  # the ends of the plan and of the rank, 9 the copy of the results to the
  # host, 10 the stream before the rank's memory goes, 11 its end
  # (ctx_free). g_mixed's and ring's: the same for the group all_reduce
  # and the exchange (ring: 2 zeroings and uploads first). ring_push: the
  # table, 10 zeroings and uploads, 12 the async block's fork, 13 its
  # join. mm_a2a: the table, 8 zeroings and uploads, 10 the stream before
  # the read of the counts, 11 the read.
  export BLKC_WAIT_TIMEOUT_MS=5000 BLKC_COLL_TIMEOUT_MS=$et
  # Under the sanitizers (BLKC_SANITIZED=1: 2 s deadlines, slow
  # processes) one case per kind of wait (a zeroing, a copy back of each
  # staged kind, an async join, a read) keeps their memory and threads
  # checked; the default build runs every site's exact message over the
  # fake CUDA driver, and the same six over the fake HIP one (the waits
  # are rt_gpur_sync's code behind the vendor's table; each case costs
  # the deadline and the 1 s end grace, alone on the machine)
  SW_SAN=" stream_zero stream_coll_back stream_group_back stream_exchange_back stream_async_join stream_read "
  sw_case() { # NAME N LINE-AFTER-"rank 1: " ARGS...
    local name=$1 at=$2 line=$3; shift 3
    if { [ "${BLKC_SANITIZED:-}" = 1 ] || [ "$VENDOR" = hip ]; } && [ "${SW_SAN#* $name }" = "$SW_SAN" ]; then
      echo "skip $name (sanitized build or the HIP vendor: one case per kind of wait)"; return 0
    fi
    FAKE_GPU_STREAM_HANG=1@$at BLKC_GPU_COLL=host exact_fail "$name" \
      "blkc: error: rank 1: $line did not complete within $et ms" "$@" --random --ranks=2 --device="$DEV"
  }
  sw_case stream_table 1 "the copy of the heap table to the device" run "$G" --entry=ar_sum N=16
  sw_case stream_zero 2 "the zeroing of a new buffer" run "$G" --entry=ar_sum N=16
  sw_case stream_upload 3 "the uploads to the device" run "$G" --entry=ar_sum N=16
  sw_case stream_before_coll 4 "the work queued before all_reduce" run "$G" --entry=ar_sum N=16
  sw_case stream_coll_down 5 "the copy of all_reduce's input to the host" run "$G" --entry=ar_sum N=16
  sw_case stream_coll_back 6 "the copy of all_reduce's result to the device" run "$G" --entry=ar_sum N=16
  sw_case stream_results 9 "the copy of the results to the host" run "$G" --entry=ar_sum N=16
  sw_case stream_before_group 4 "the work queued before a group all_reduce" \
    run "$GRP" --entry=g_mixed N=16 C=1
  sw_case stream_group_down 5 "the copy of a group all_reduce's buffers to the host" \
    run "$GRP" --entry=g_mixed N=16 C=1
  sw_case stream_group_back 6 "the copy of a group all_reduce's result to the device" \
    run "$GRP" --entry=g_mixed N=16 C=1
  sw_case stream_before_exchange 6 "the work queued before the exchange" run "$P2P" --entry=ring N=16
  sw_case stream_exchange_down 7 "the copy of the exchange's messages to the host" \
    run "$P2P" --entry=ring N=16
  sw_case stream_exchange_back 8 "the copy of the exchange's received messages to the device" \
    run "$P2P" --entry=ring N=16
  sw_case stream_async_fork 12 "the work queued before an async block" run "$G" --entry=ring_push N=16
  sw_case stream_async_join 13 "the async block's work" run "$G" --entry=ring_push N=16
  sw_case stream_read_wait 10 "the work queued before a read from the device" \
    run "$G" --entry=mm_a2a S=6 D=6 sc=@"$T/a2a_sc.npy" rc=@"$T/a2a_sc.npy"
  sw_case stream_read 11 "a read from the device" \
    run "$G" --entry=mm_a2a S=6 D=6 sc=@"$T/a2a_sc.npy" rc=@"$T/a2a_sc.npy"
  # the rank's last wait for its stream, before its stream and failure
  # record go (ar_sum's 11th): no deadline of its own, the peer names the
  # rank at the end of the run, and the rank stops waiting 1 s after (it
  # used to synchronize)
  FAKE_GPU_STREAM_HANG=1@11 BLKC_GPU_COLL=host exact_fail stream_end \
    "blkc: error: rank 0: the end of the run timed out after $et ms: rank 0 waits, rank 1 did not arrive" \
    run "$G" --entry=ar_sum N=16 --random --ranks=2 --device="$DEV"
  # a lone rank whose kernel never ends (no peer to name it): the deadline
  # of a lone kernel, where one is set (here BLKC_COLL_TIMEOUT_MS)
  FAKE_GPU_WAIT_KERNEL=spin FAKE_GPU_SPIN_RANK=0 exact_fail lone_rank_forever \
    "blkc: error: rank 0: kernel spin did not complete within $et ms" \
    run "$SRC/tests/gpu/data/gforever.blk" --entry=spin_all N=16 --ranks=1 --device="$DEV"
  # the read of a kernel's failure record once it ended (through the
  # staging buffer: the collectives' deadline): the stand-in kernel does
  # nothing (no rank spins), and the lone rank's 5th wait for its stream
  # never ends (1 the heap table, 2 the zeroing of x, 3 its upload, 4 the
  # kernel, 5 the read). Not under the sanitizers.
  if [ "${BLKC_SANITIZED:-}" != 1 ]; then
    FAKE_GPU_WAIT_KERNEL=spin FAKE_GPU_SPIN_RANK=-1 FAKE_GPU_STREAM_HANG=0@5 exact_fail fail_record_stuck \
      "blkc: error: rank 0: the read of kernel spin's failure record did not complete within $et ms" \
      run "$SRC/tests/gpu/data/gforever.blk" --entry=spin_all N=16 --ranks=1 --device="$DEV"
  fi
  unset BLKC_WAIT_TIMEOUT_MS BLKC_COLL_TIMEOUT_MS
  # the host's polls of a signal cell in a device function's wait (8-byte
  # reads from the device, each an asynchronous copy on a stream of the
  # rank's own): from the 2nd on they never complete
  # (FAKE_GPU_POLL_HANG=0@2, fake_mem.h); the wait ends at its timeout
  # with its own message, exit 3, and stops polling 1 s later (it used to
  # wait in the driver's synchronous read). Not under the sanitizers.
  if [ "${BLKC_SANITIZED:-}" != 1 ]; then
    FAKE_GPU_POLL_HANG=0@2 BLKC_WAIT_TIMEOUT_MS=300 exact_fail poll_stuck \
      "blkc: error: rank 0: wait on signal sig[0] timed out after 300 ms: expected >= 1, saw 0" \
      run "$G" --entry=never --ranks=1 N=4 --device="$DEV"
  fi
  # HIP: a real hiprtc on this machine (libhiprtc.so, or ROCm 5's
  # libamdhip64.so.5 that carries it) compiles the notify kernels and a
  # module into real code objects, which the fake checks are AMD GPU ELF
  if [ "$VENDOR" = hip ]; then
    RTC=
    for lib in $(ldconfig -p 2>/dev/null | awk '/libhiprtc\.so|libamdhip64\.so\./ {print $NF}'); do
      if nm -D --defined-only "$lib" 2>/dev/null | grep -q " hiprtcCreateProgram\(@\|$\)"; then RTC=$lib; break; fi
    done
    if [ -z "$RTC" ]; then
      echo "skip real_hiprtc: no hiprtc here"
    else
      mkdir -p "$T/rtc" && ln -sf "$RTC" "$T/rtc/libhiprtc.so"
      LD_LIBRARY_PATH=$FAKE:$T/rtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        run_case "real_hiprtc.r2" 2 "$G" "0 0" y --entry=ring_push N=300
      LD_LIBRARY_PATH=$FAKE:$T/rtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        expect_fail real_hiprtc_kernel "rank [01]: launch vadd: $VN: $LAUNCH failed: operation not supported" \
        run "$SRC/tests/cli/data/vadd.blk" N=4 --ranks=2 --device="$DEV"
    fi
  fi
else
  # the NCCL path: forced on one rank (NCCL refuses two ranks on one GPU);
  # with one GPU per rank (several GPUs) the 2-rank cases above used it
  BLKC_GPU_COLL=nccl run_case nccl_ar_sum.r1 1 "$G" "1e-6 1e-6" b --entry=ar_sum N=1000
  BLKC_GPU_COLL=nccl run_case nccl_ag.r1 1 "$G" "0 0" dst --entry=ag S=37 D=37
  BLKC_GPU_COLL=nccl run_case nccl_a2a.r1 1 "$G" "0 0" dst --entry=a2a S=6
  timed_fail abort_flag_wait "$ABORT_PAT" 0 5000 20000 \
    run "$SRC/tests/gpu/data/gabort.blk" --entry=abort_wait N=4 --ranks=3 --device="$DEV"
  for R in 2 4; do
    run_case "allreduce_oneshot.r$R" "$R" "$LIB/allreduce.blk" "1e-5 1e-5" y \
      --entry=allreduce_oneshot N=1000 op=0
    run_case "allreduce_oneshot_max.r$R" "$R" "$LIB/allreduce.blk" "0 0" y \
      --entry=allreduce_oneshot N=777 op=1
    run_case "allreduce_twoshot.r$R" "$R" "$LIB/allreduce.blk" "1e-5 1e-5" y \
      --entry=allreduce_twoshot N=1000 op=0
    run_case "ag_gemm.r$R" "$R" "$LIB/ag_gemm.blk" "1e-4 1e-4" c \
      --entry=ag_gemm M=100 K=64 N=96 MW=$((100 * R))
    run_case "ag_gemm_plain.r$R" "$R" "$LIB/ag_gemm.blk" "1e-4 1e-4" c \
      --entry=ag_gemm_plain M=100 K=64 N=96 MW=$((100 * R))
    run_case "vadd_kernel.r$R" "$R" "$SRC/tests/cli/data/vadd.blk" "0 0" C N=1000
    mpi_case "mpi_allreduce_oneshot.np$R" "$R" "$LIB/allreduce.blk" "1e-5 1e-5" y \
      --entry=allreduce_oneshot N=1000 op=0
    mpi_case "mpi_ag_gemm.np$R" "$R" "$LIB/ag_gemm.blk" "1e-4 1e-4" c \
      --entry=ag_gemm M=100 K=64 N=96 MW=$((100 * R))
  done
fi
echo "$((n - fails))/$n passed"
[ ! -s "$T/retried" ] || { echo "retried:"; cat "$T/retried"; }
[ ! -s "$T/fails" ] || { echo "failed:"; cat "$T/fails"; }
[ $fails = 0 ]
