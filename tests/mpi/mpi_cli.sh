#!/usr/bin/env bash
# mpi_cli.sh NP HAVE_MPI BLKC NPYTOOL SRCDIR — `blkc run --ranks=NP` under
# `mpirun -np NP`: lib/allreduce.blk one-shot and lib/ag_gemm.blk (per-rank
# {rank} inputs) write the same bytes as the same run on local ranks;
# outputs without {rank} come from rank 0 only; a wait that times out and a
# rank that returns early, and a peer busy in a kernel while the others
# wait in all_reduce, a send nobody receives and a peer busy while the
# others wait in an exchange, and a rank computing for ever at the end of
# the run, end every process with exit 3 and a "blkc: error: rank R: ..."
# line, and so does a process that never starts
# blkc (MPI_Init's deadline); --ranks other than -np is an error.
# Exits 77 without MPI or mpirun.
set -u
NP=$1 HAVE=$2 BLKC=$3 NPY=$4 SRC=$5
. "$(dirname "$0")/mpi_prelude.sh" "$HAVE"
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-mpi.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0 failed=0
ok()  { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# mpi CODE PATTERN -- blkc args: under mpirun, exit status and a line of stderr
mpi() {
  local code=$1 pat=$2; shift 3
  timeout 20 "${MPI[@]}" -np "$NP" "$BLKC" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$code" ]; then
    bad "mpirun -np $NP blkc $* exited $rc, wanted $code: $(cat "$T/out" "$T/err")"; return
  fi
  if [ -n "$pat" ] && ! grep -Eq -- "$pat" "$T/err"; then
    bad "mpirun -np $NP blkc $*: no line /$pat/ on stderr: $(cat "$T/err")"; return
  fi
  ok
}
loc() { "$BLKC" "$@" >/dev/null 2>"$T/lerr" || bad "blkc $* (local): $(cat "$T/lerr")"; }

L=$SRC/lib
# one-shot all-reduce: per-rank outputs and a rank-0 output
mpi 0 "" -- run "$L/allreduce.blk" --entry=allreduce_oneshot --ranks=$NP N=1001 op=0 \
  --random --out "y=$T/m{rank}.npy" --out "y=$T/m_all.npy"
loc run "$L/allreduce.blk" --entry=allreduce_oneshot --ranks=$NP N=1001 op=0 \
  --random --out "y=$T/l{rank}.npy"
for r in $(seq 0 $((NP - 1))); do
  cmp -s "$T/m$r.npy" "$T/l$r.npy" && ok || bad "allreduce_oneshot rank $r: mpirun and local results differ"
done
cmp -s "$T/m_all.npy" "$T/l0.npy" && ok || bad "allreduce_oneshot: the output without {rank} is not rank 0's"

# ag_gemm: each process reads its own a{rank}.npy
for r in $(seq 0 $((NP - 1))); do
  "$NPY" write "$T/a$r.npy" '<f4' 3x2 $(for i in 1 2 3 4 5 6; do echo $((r + 1)); done)
done
"$NPY" write "$T/b.npy" '<f4' 2x2 1 1 1 1
mpi 0 "" -- run "$L/ag_gemm.blk" --entry=ag_gemm --ranks=$NP M=3 K=2 N=2 MW=$((3 * NP)) \
  "a=@$T/a{rank}.npy" "b=@$T/b.npy" --out "c=$T/agm{rank}.npy"
loc run "$L/ag_gemm.blk" --entry=ag_gemm --ranks=$NP M=3 K=2 N=2 MW=$((3 * NP)) \
  "a=@$T/a{rank}.npy" "b=@$T/b.npy" --out "c=$T/agl{rank}.npy"
for r in $(seq 0 $((NP - 1))); do
  cmp -s "$T/agm$r.npy" "$T/agl$r.npy" && ok || bad "ag_gemm rank $r: mpirun and local results differ"
done

# faults end every process with exit 3 and the failing rank's message
F=$SRC/tests/dist/faults.blk
BLKC_WAIT_TIMEOUT_MS=200 mpi 3 "^blkc: error: rank $((NP - 1)): .*timed out after 200 ms" -- \
  run "$F" --entry=never_signalled --ranks=$NP N=4
mpi 3 "^blkc: error: rank [0-9]+: " -- run "$F" --entry=early_return --ranks=$NP N=4
# rank 1 busy in a ~15-30 s kernel: a waiter's all_reduce times out naming
# it, well inside mpi()'s 20 s limit
BLKC_COLL_TIMEOUT_MS=300 mpi 3 "^blkc: error: rank ([02-9]): all_reduce timed out after 300 ms: rank \1 waits, rank 1 did not arrive$" -- \
  run "$F" --entry=busy_peer --ranks=$NP N=16
# the last rank computes for ever (one program instance) while the others
# finish: the end of the run times out naming it, one line, exit 3
t0=$(date +%s%N)
BLKC_COLL_TIMEOUT_MS=300 timeout 20 "${MPI[@]}" -np "$NP" "$BLKC" run "$F" --entry=forever_last \
  --ranks=$NP N=16 >"$T/out" 2>"$T/err"
rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$rc" = 3 ] && [ "$(grep -c '^blkc: error:' "$T/err")" = 1 ] && [ "$ms" -lt 10000 ] &&
   grep -Eq "^blkc: error: rank ([0-9]+): the end of the run timed out after 300 ms: rank \1 waits, rank $((NP - 1)) did not arrive$" "$T/err"; then ok
else bad "forever_last: exit $rc in $ms ms: $(cat "$T/err")"; fi
# a send nobody receives: every rank names the pair
P=$SRC/tests/dist/p2p.blk
mpi 3 "^blkc: error: rank [0-9]+: exchange mismatch: rank 0 sends 1 message \(16 bytes\) to rank 1, but rank 1 receives 0 \(0 bytes\) from rank 0$" -- \
  run "$P" --entry=lone_send --ranks=$NP N=4
BLKC_COLL_TIMEOUT_MS=300 mpi 3 "^blkc: error: rank ([02-9]): exchange timed out after 300 ms: rank \1 waits, rank 1 did not arrive$" -- \
  run "$P" --entry=busy_ring --ranks=$NP N=16
# the last process never starts blkc (a stand-in that sleeps 60 s): the
# others' MPI_Init gives up at BLKC_MPI_SETUP_TIMEOUT_MS, one line, exit 3
t0=$(date +%s%N)
BLKC_MPI_SETUP_TIMEOUT_MS=1000 timeout 20 "${MPI[@]}" -np $((NP - 1)) "$BLKC" run "$L/allreduce.blk" \
  --entry=allreduce_oneshot --ranks=$NP N=4 op=0 : -np 1 sleep 60 >"$T/out" 2>"$T/err"
rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$rc" = 3 ] && [ "$(grep -c '^blkc: error:' "$T/err")" = 1 ] && [ "$ms" -lt 8000 ] &&
   grep -q "^blkc: error: rank 0: MPI_Init timed out after 1000 ms: rank 0 waits" "$T/err"; then ok
else bad "a process that never starts: exit $rc in $ms ms: $(cat "$T/err")"; fi
mpi 3 "^blkc: error: .*--ranks must equal -np" -- \
  run "$L/allreduce.blk" --entry=allreduce_oneshot --ranks=$((NP + 1)) N=4 op=0

echo "mpi_cli -np $NP: $pass passed, $failed failed"
[ "$failed" = 0 ]
