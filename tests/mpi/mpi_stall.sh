#!/usr/bin/env bash
# mpi_stall.sh NP HAVE_MPI T_MPI_STALL — a rank that stops for 60 s where
# the other processes of an MPI world wait for it outside a run
# (t_mpi_stall.c: MPI_Init, world setup, the start of a run, teardown,
# MPI_Finalize) or inside a run while the others returned (the end of the
# run, BLKC_COLL_TIMEOUT_MS=D as well): with BLKC_MPI_SETUP_TIMEOUT_MS=D (3000, 3 x a stall-free
# job's time when longer, or $MPI_STALL_DEADLINE_MS) every such job ends with exit 3 and exactly one
# "blkc: error: rank R: ..." line naming the waiting rank, where it waits
# and, past MPI_Init, the ranks that did not arrive (two of them on 4
# ranks), in under D + a stall-free job's time + 7 s (the other ranks' 2 s
# grace or the watchdog's stagger, mpirun's teardown on a loaded machine). The deadline covers the
# processes' start too: MPI_Init takes 0.3-0.5 s here, 2-3.5 s under ASan
# (tests/mpi/CMakeLists.txt gives it 10 s there). Exits 77 without MPI or
# mpirun.
set -u
NP=$1 HAVE=$2 PROG=$3
. "$(dirname "$0")/mpi_prelude.sh" "$HAVE"
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-stall.XXXXXX")
trap 'rm -rf "$T"' EXIT
# the deadline covers the processes' start, so it must exceed what a job
# without a stall takes here: 3000 ms, or 3 x one stall-free job's time
# when that is longer (a loaded machine, or a root without /etc/hosts,
# where every MPI start waited for DNS: 3 s was too short there);
# $MPI_STALL_DEADLINE_MS raises the 3000 ms floor (ASan: 10000)
t0=$(date +%s%N)
BLKC_MPI_SETUP_TIMEOUT_MS=60000 timeout 90 "${MPI[@]}" -np "$NP" "$PROG" none 1 >/dev/null 2>&1
cal=$(( ($(date +%s%N) - t0) / 1000000 ))
D=$(( (3 * cal + 999) / 1000 * 1000 ))
[ "$D" -ge "${MPI_STALL_DEADLINE_MS:-3000}" ] || D=${MPI_STALL_DEADLINE_MS:-3000}
echo "deadline $D ms (a stall-free job took $cal ms)"
# a job ends within the deadline, plus its own start and teardown (the
# stall-free job's time), plus 7 s (the others' 2 s grace or the watchdog's
# stagger, mpirun's teardown on a loaded machine)
LIMIT=$(( (D + cal + 999) / 1000 + 7 ))
pass=0 failed=0
ok()  { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# stall MODE RANK CODE PATTERN: exit status, the one error line, the time
stall() {
  local mode=$1 rank=$2 code=$3 pat=$4
  local t0=$(date +%s%N)
  BLKC_MPI_SETUP_TIMEOUT_MS=$D timeout $((LIMIT + 30)) "${MPI[@]}" -np "$NP" "$PROG" "$mode" "$rank" \
    >"$T/out" 2>"$T/err"
  local rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local lines=$(grep -c "^blkc: error:" "$T/err")
  echo "stall $mode rank $rank: exit $rc in $ms ms"
  if [ "$rc" != "$code" ]; then
    bad "$mode/$rank: exit $rc, wanted $code: $(cat "$T/out" "$T/err")"; return
  fi
  if [ -n "$pat" ] && { [ "$lines" != 1 ] || ! grep -Eq -- "$pat" "$T/err"; }; then
    bad "$mode/$rank: wanted one line /$pat/, got $lines: $(grep "^blkc:" "$T/err")"; return
  fi
  if [ "$ms" -ge $((LIMIT * 1000)) ]; then
    bad "$mode/$rank: took $ms ms, more than $LIMIT s"; return
  fi
  ok
}

L=$((NP - 1))
stall none 1 0 ""
stall init 1 3 "^blkc: error: rank 0: MPI_Init timed out after $D ms: rank 0 waits \(MPI does not tell which ranks did not arrive\)$"
if [ "$NP" -ge 4 ]; then
  # four ranks: two missing at once; the single-rank stalls are -np 2's
  # cases on the same code (each stalled job costs the deadline, serially)
  stall run 1,3 3 "^blkc: error: rank 0: the start of a run timed out after $D ms: rank 0 waits, ranks 1, 3 did not arrive$"
  stall setup 0,1 3 "^blkc: error: rank 2: MPI world setup timed out after $D ms: rank 2 waits, ranks 0, 1 did not arrive$"
  BLKC_COLL_TIMEOUT_MS=$D stall end 1,3 3 "^blkc: error: rank ([02]): the end of the run timed out after $D ms: rank \1 waits, ranks 1, 3 did not arrive$"
  echo "mpi_stall -np $NP: $pass passed, $failed failed"
  [ "$failed" = 0 ]; exit
fi
# (MPI_STALL_QUICK=1, the ASan build: every stalled job costs the 10 s
# deadline there, so the stalls on the other rank, the world setup's and
# the two teardown gates, the same code (rt_mpig_gate) as the start of a
# run's, are left to the default build)
if [ -z "${MPI_STALL_QUICK:-}" ]; then
  stall init 0 3 "^blkc: error: rank 1: MPI_Init timed out after $D ms: rank 1 waits \(MPI does not tell which ranks did not arrive\)$"
  stall setup 1 3 "^blkc: error: rank 0: MPI world setup timed out after $D ms: rank 0 waits, rank 1 did not arrive$"
  stall setup 0 3 "^blkc: error: rank 1: MPI world setup timed out after $D ms: rank 1 waits, rank 0 did not arrive$"
fi
stall run $L 3 "^blkc: error: rank 0: the start of a run timed out after $D ms: rank 0 waits, rank $L did not arrive$"
if [ -z "${MPI_STALL_QUICK:-}" ]; then
  stall free 1 3 "^blkc: error: rank 0: MPI world teardown timed out after $D ms: rank 0 waits, rank 1 did not arrive$"
  stall exit 1 3 "^blkc: error: rank 0: MPI_Finalize timed out after $D ms: rank 0 waits, rank 1 did not arrive$"
fi
# a rank computing in the run's function while the others returned: the
# end of the run, after the collectives' deadline (any waiting rank reports)
BLKC_COLL_TIMEOUT_MS=$D stall end $L 3 "^blkc: error: rank ([0-9]+): the end of the run timed out after $D ms: rank \1 waits, rank $L did not arrive$"
echo "mpi_stall -np $NP: $pass passed, $failed failed"
[ "$failed" = 0 ]
