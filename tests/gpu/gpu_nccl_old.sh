#!/usr/bin/env bash
# gpu_nccl_old.sh BLKC NPYCMP SRCDIR FAKEDIR [VENDOR] — GPU ranks over an
# older NCCL (no ncclCommInitRankConfig: blocking communicators), i.e.
# fake_nccl.c built with -DFAKE_NCCL_OLD (../fakenccl/libfakenccl_old.so
# next to FAKEDIR, which holds fake_cuda.c's libcuda.so.1, or with VENDOR
# hip fake_hip.c's libamdhip64.so: the same library as an old RCCL, on
# hip:0), on 2 ranks with one fake device each (runtime/gpu_nccl_wait.c runs every NCCL call on a
# helper thread and waits for it with the collectives' deadline):
#   - the collectives, exchanges and groups (staged: NCCL 2.13 has no
#     ncclCommSplit) give exactly the CPU ranks' results, through
#     ncclCommInitRank and the NCCL collectives (old_used);
#   - FAKE_NCCL_HANG_RANK=1 makes rank 1 a peer that never arrives
#     (FAKE_NCCL_HANG_AT=init: in ncclCommInitRank; =coll: in its
#     collective or exchange), or whose collective's kernel never ends
#     (=stream), also with an ncclCommAbort that hangs (FAKE_NCCL_ABORT_MS):
#     exit 3 and one line naming the waiting rank and the call, within
#     BLKC_COLL_TIMEOUT_MS + 10 s (bounded only from above: a loaded
#     machine is slow), never a hang (each run is killed at 60 s).
set -u
BLKC=$1 NPYCMP=$2 SRC=$3 FAKE=$4 VENDOR=${5:-cuda}
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-ncclold.XXXXXX")
trap 'rm -rf "$T"' EXIT
FN=$FAKE/../fakenccl/libfakenccl_old.so
if [ "$VENDOR" = hip ]; then
  FLIB=libamdhip64.so NDEV=FAKE_HIP_DEVICES LIBVAR=BLKC_RCCL_LIB DEV=hip:0 COLL=RCCL
else
  FLIB=libcuda.so.1 NDEV=FAKE_CUDA_DEVICES LIBVAR=BLKC_NCCL_LIB DEV=cuda:0 COLL=NCCL
fi
for f in "$FAKE/$FLIB" "$FN"; do
  [ -e "$f" ] || { echo "FAIL: no $f (build its target first)"; exit 1; }
done
export LD_LIBRARY_PATH=$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export "$NDEV=2" "$LIBVAR=$FN" BLKC_GPU_COLL=nccl
unset FAKE_NCCL_HANG_RANK FAKE_NCCL_HANG_AT FAKE_NCCL_ABORT_MS BLKC_COLL_TIMEOUT_MS BLKC_WAIT_TIMEOUT_MS
G=$SRC/tests/gpu/data/granks.blk
P2P=$SRC/tests/dist/p2p.blk GRP=$SRC/tests/dist/groups.blk
SLACK=10000
[ "${BLKC_SANITIZED:-}" = 1 ] && SLACK=20000
fails=0 n=0

# run_case NAME FILE "OUT..." ARGS...: 2 ranks on the fake devices vs CPU
# ranks, every output of every rank exactly equal
run_case() {
  local name=$1 file=$2 outs=$3 o r ok=1; shift 3
  local oc=() og=()
  for o in $outs; do
    oc+=(--out "$o=$T/$name.cpu.$o.{rank}.npy")
    og+=(--out "$o=$T/$name.gpu.$o.{rank}.npy")
  done
  n=$((n + 1))
  if ! BLKC_GPU_COLL= timeout 60 "$BLKC" run "$file" --ranks=2 "$@" --random --seed=11 "${oc[@]}" >"$T/log" 2>&1; then
    echo "FAIL $name: cpu run: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  if ! timeout 60 "$BLKC" run "$file" --ranks=2 "$@" --random --seed=11 --device=$DEV "${og[@]}" >"$T/log" 2>&1; then
    echo "FAIL $name: $DEV run: $(cat "$T/log")"; fails=$((fails + 1)); return
  fi
  for o in $outs; do
    for r in 0 1; do
      if ! "$NPYCMP" "$T/$name.gpu.$o.$r.npy" "$T/$name.cpu.$o.$r.npy" 0 0 >"$T/cmp" 2>&1; then
        echo "FAIL $name: output $o of rank $r: $(cat "$T/cmp")"; ok=0
      fi
    done
  done
  if [ $ok = 1 ]; then echo "ok $name"; else fails=$((fails + 1)); fi
}

# hang NAME AT PATTERN ARGS...: rank 1 hangs at AT; exit 3, exactly one
# line, matching PATTERN, in under 1200 ms + SLACK
hang() {
  local name=$1 at=$2 pat=$3 rc t0 ms; shift 3
  n=$((n + 1))
  t0=$(date +%s%N)
  FAKE_NCCL_HANG_RANK=1 FAKE_NCCL_HANG_AT=$at BLKC_COLL_TIMEOUT_MS=1200 \
    timeout 60 "$BLKC" run "$@" --ranks=2 --device=$DEV >"$T/log" 2>&1; rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  if [ $rc -ne 3 ] || [ "$(wc -l <"$T/log")" -ne 1 ] || ! grep -q "$pat" "$T/log" ||
     [ $ms -gt $((1200 + SLACK)) ]; then
    echo "FAIL $name: wanted exit 3 and one line '$pat' in < $((1200 + SLACK)) ms, got $rc in $ms ms: $(cat "$T/log")"
    fails=$((fails + 1)); return
  fi
  echo "ok $name ($ms ms: $(cat "$T/log"))"
}

# (c) the normal path: blocking communicators, results as on CPU ranks
export FAKE_NCCL_LOG=$T/nccl.log
run_case ar_sum "$G" b --entry=ar_sum N=1000
run_case ar_max_i32 "$G" b --entry=ar_max_i32 N=77
run_case ag "$G" dst --entry=ag S=37 D=74
run_case rs "$G" dst --entry=rs S=10 D=5
run_case a2a "$G" dst --entry=a2a S=12
run_case bc "$G" b --entry=bc N=50 root=1
run_case red "$G" b --entry=red N=333 root=0
run_case gat "$G" dst --entry=gat S=37 D=74 root=0
run_case sca "$G" dst --entry=sca S=37 D=74 root=1
run_case p2p_ring "$P2P" b --entry=ring N=513
run_case p2p_rotate "$P2P" b --entry=rotate N=100 s=3
run_case grp_coll "$GRP" "ag bc red gat sca rs a2b" --entry=g_coll C=2 S=6 D=6 N=5 root=0
n=$((n + 1))
if grep -q "^ncclCommInitRank$" "$T/nccl.log" && ! grep -q "ncclCommInitRankConfig\|ncclCommSplit" "$T/nccl.log" &&
   grep -q ncclAllReduce "$T/nccl.log" && grep -q ncclSend "$T/nccl.log"; then
  echo "ok old_used ($(sort "$T/nccl.log" | uniq -c | tr -s ' \n' ' '))"
else
  echo "FAIL old_used: NCCL calls: $(sort -u "$T/nccl.log" 2>/dev/null | tr '\n' ' ')"; fails=$((fails + 1))
fi
unset FAKE_NCCL_LOG

# (a), (b): a peer that never arrives; the stream of a collective that
# never ends. Rank 1 is late by 200 ms (init, coll) or done (stream), so
# the first rank at its deadline is the one named.
TAIL="did not complete within 1200 ms (a peer failed, hangs or called another collective); the $COLL communicator is"
hang old_hang_init init "^blkc: error: rank 0: ncclCommInitRank $TAIL abandoned\$" \
  "$G" --entry=ar_sum N=4
hang old_hang_coll coll "^blkc: error: rank 0: all_reduce $TAIL aborted\$" \
  "$G" --entry=ar_sum N=4
hang old_hang_exchange coll "^blkc: error: rank 0: exchange (ncclSend/ncclRecv) $TAIL aborted\$" \
  "$P2P" --entry=ring N=4
hang old_hang_stream stream "^blkc: error: rank 1: all_reduce $TAIL aborted\$" \
  "$G" --entry=ar_sum N=4
# ... and ncclCommAbort itself hangs (20 s): bounded too (the abort's
# helper is left behind, the world's devices kept), exit 3 all the same
FAKE_NCCL_ABORT_MS=20000 hang old_hang_abort stream "^blkc: error: rank 1: all_reduce $TAIL aborted\$" \
  "$G" --entry=ar_sum N=4

echo "$VENDOR: $((n - fails))/$n passed"
[ $fails = 0 ]
