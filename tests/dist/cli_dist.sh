#!/usr/bin/env bash
# cli_dist.sh BLKC NPYTOOL SRCDIR — `blkc run --ranks=N` on the lib/
# patterns and the fault programs: exit 0 for good runs (one .npy per rank
# with {rank}; the overlapped and plain variants write identical bytes),
# 3 with a one-line error for runtime failures (a wait timeout naming the
# rank, the signal and the values; a rank that returns early; symmetric
# heap exhaustion; ranks computing for ever at the end of a run), 2 for a
# bad --ranks. One ctest entry (label dist).
set -u
BLKC=$1 NPY=$2 SRC=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-dist.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0 failed=0
ok()  { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# expect CODE PATTERN -- args: exit status and a pattern in stdout+stderr
expect() {
  local code=$1 pat=$2; shift 3
  "$BLKC" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  cat "$T/out" "$T/err" >"$T/all"
  if [ "$rc" != "$code" ]; then bad "blkc $* exited $rc, wanted $code: $(cat "$T/all")"; return; fi
  if [ -n "$pat" ] && ! grep -Eq -- "$pat" "$T/all"; then
    bad "blkc $* did not print /$pat/: $(cat "$T/all")"; return
  fi
  if [ "$code" = 3 ] && ! { [ "$(wc -l <"$T/err")" = 1 ] && grep -q '^blkc: error: rank ' "$T/err"; }; then
    bad "blkc $*: not a one-line 'blkc: error: rank ...' message: $(cat "$T/err")"; return
  fi
  ok
}

L=$SRC/lib F=$SRC/tests/dist/faults.blk
for W in 1 3 4; do
  rm -f "$T"/*.npy   # no stale outputs of a previous rank count
  # ag_gemm with per-rank A files: shard r is all (r + 1), B is all ones
  for r in $(seq 0 $((W - 1))); do
    "$NPY" write "$T/a$r.npy" '<f4' 3x2 $(for i in 1 2 3 4 5 6; do echo $((r + 1)); done)
  done
  "$NPY" write "$T/b.npy" '<f4' 2x2 1 1 1 1
  for e in ag_gemm ag_gemm_plain; do
    expect 0 "" -- run "$L/ag_gemm.blk" --entry=$e --ranks=$W M=3 K=2 N=2 MW=$((3 * W)) \
      "a=@$T/a{rank}.npy" "b=@$T/b.npy" --out "c=$T/$e{rank}.npy"
  done
  want="<f4 ($((3 * W)), 2):"
  for r in $(seq 0 $((W - 1))); do want="$want $(for i in 1 2 3 4 5 6; do printf '%s ' $((2 * (r + 1))); done)"; done
  want=$(echo "$want" | sed 's/ *$//; s/  */ /g')
  for r in $(seq 0 $((W - 1))); do
    got=$("$NPY" dump "$T/ag_gemm$r.npy" 2>&1)
    [ "$got" = "$want" ] && ok || bad "ag_gemm W=$W rank $r: '$got', wanted '$want'"
    cmp -s "$T/ag_gemm$r.npy" "$T/ag_gemm_plain$r.npy" && ok || bad "ag_gemm W=$W rank $r differs from ag_gemm_plain"
  done
  MC=$(( (37 + W - 1) / W ))
  for e in gemm_rs gemm_rs_plain; do
    expect 0 "" -- run "$L/gemm_rs.blk" --entry=$e --ranks=$W M=37 KL=20 N=19 MC=$MC --random --out "c=$T/$e{rank}.npy"
  done
  for e in allreduce_oneshot allreduce_twoshot; do
    expect 0 "" -- run "$L/allreduce.blk" --entry=$e --ranks=$W N=1001 op=0 --random --out "y=$T/$e{rank}.npy"
  done
  for r in $(seq 0 $((W - 1))); do
    cmp -s "$T/allreduce_oneshot$r.npy" "$T/allreduce_twoshot$r.npy" && ok || bad "allreduce W=$W rank $r: one-shot != two-shot"
    cmp -s "$T/allreduce_oneshot0.npy" "$T/allreduce_oneshot$r.npy" && ok || bad "allreduce W=$W rank $r != rank 0"
  done
  expect 0 "moe: $W rank" -- run "$L/moe.blk" --ranks=$W T=20 H=16 TOPK=2 EL=2 cap=8 --random
  # LANGUAGE.md §5 verbatim; the same typed c: f16[M * world(), N] (given as
  # a file, which binds the expression; a wrong extent is a one-line error)
  expect 0 "ag_gemm: $W rank" -- run "$SRC/tests/dist/lang5.blk" --entry=ag_gemm --ranks=$W M=5 K=8 N=6 MW=$((5 * W)) --random
  "$NPY" write "$T/c.npy" '<f2' $((5 * W))x6 $(for i in $(seq $((30 * W))); do echo 0; done)
  expect 0 "ag_gemm_expr: $W rank" -- run "$SRC/tests/dist/lang5.blk" --entry=ag_gemm_expr --ranks=$W M=5 K=8 N=6 "c=@$T/c.npy" --random
  "$NPY" write "$T/c.npy" '<f2' $((5 * W + 1))x6 $(for i in $(seq $((30 * W + 6))); do echo 0; done)
  expect 3 "'c' dim 0 is $((5 * W + 1)), but its type says M \* world\(\) = $((5 * W))" -- \
    run "$SRC/tests/dist/lang5.blk" --entry=ag_gemm_expr --ranks=$W M=5 K=8 N=6 "c=@$T/c.npy" --random
  # faults: exit 3 with a one-line error
  BLKC_WAIT_TIMEOUT_MS=200 expect 3 "rank $((W - 1)): .*wait on S\[0\] timed out after 200 ms.*1.*saw 0" -- \
    run "$F" --entry=never_signalled --ranks=$W N=4
  # rooted collectives: a root outside the world, a gather of the wrong size
  expect 3 "^blkc: error: rank [0-9]+: gather: root $W is not a rank of this world of $W$" -- \
    run "$SRC/tests/gpu/data/granks.blk" --entry=gat --ranks=$W S=4 D=$((4 * W)) root=$W
  expect 3 "gather: dst has $((4 * W + 1)) elements, expected $W x 4$" -- \
    run "$SRC/tests/gpu/data/granks.blk" --entry=gat --ranks=$W S=4 D=$((4 * W + 1)) root=0
  # a device function's wait names the cell, like a kernel's
  BLKC_WAIT_TIMEOUT_MS=200 expect 3 "^blkc: error: rank [0-9]+: wait on signal sig\[0\] timed out after 200 ms: expected >= 1, saw 0$" -- \
    run "$SRC/tests/gpu/data/granks.blk" --entry=never --ranks=$W N=4
  expect 3 "symmetric heap out of memory" -- run "$F" --entry=sym_oom --ranks=$W N=4 n=100000000
  if [ "$W" -gt 1 ]; then
    expect 3 "^blkc: error: rank ([02-9]): rank 1 left the run \(returned early\) while rank \1 waits in all_reduce$" -- \
      run "$F" --entry=early_return --ranks=$W N=4
    # rank 1 busy in a ~15-30 s kernel: the others time out in all_reduce,
    # one message, exit 3, and the busy grid stops (well inside 10 s)
    t0=$(date +%s)
    BLKC_COLL_TIMEOUT_MS=300 expect 3 "^blkc: error: rank ([02-9]): all_reduce timed out after 300 ms: rank \1 waits, rank 1 did not arrive$" -- \
      run "$F" --entry=busy_peer --ranks=$W N=16
    [ $(( $(date +%s) - t0 )) -lt 10 ] && ok || bad "busy_peer W=$W took $(( $(date +%s) - t0 )) s"
  fi
done
# the end of a run: ranks computing for ever (one program instance, nothing
# to interrupt) while the others return; the end of the run times out after
# the collectives' deadline naming them, one line, exit 3, and the run ends
# (deadline + the 300 ms signal-wait deadline and 1 s for the failed ranks
# + compile and start) well inside 10 s
for W in 2 4; do
  last=$((W - 1)) odd="rank 1"
  [ "$W" = 4 ] && odd="ranks 1, 3"
  for e in forever_last forever_odd; do
    if [ $e = forever_last ]; then who="rank $last" waits="[0-$((last - 1))]"; else who=$odd waits="[02]"; fi
    t0=$(date +%s%N)
    BLKC_COLL_TIMEOUT_MS=300 BLKC_WAIT_TIMEOUT_MS=300 expect 3 "^blkc: error: rank ($waits): the end of the run timed out after 300 ms: rank \1 waits, $who did not arrive$" -- \
      run "$F" --entry=$e --ranks=$W N=16
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ "$ms" -ge 300 ] && [ "$ms" -lt 10000 ] && ok || bad "$e W=$W took $ms ms"
  done
done
expect 2 "ranks" -- run "$L/allreduce.blk" --entry=allreduce_oneshot --ranks=0 N=4 op=0
expect 2 "ranks" -- run "$L/allreduce.blk" --entry=allreduce_oneshot --ranks=x N=4 op=0
echo "cli_dist: $pass passed, $failed failed"
[ "$failed" = 0 ]
