#!/usr/bin/env bash
# mpi_task.sh NP HAVE_MPI BLKC TASK_REF SRCDIR — tasks under
# `mpirun -np NP blkc run FILE --entry=TASK --ranks=NP` (docs/task.md "MPI"):
# the tensor-parallel MLP (placement by cost and forced overlap), a task
# with a split second result, a task calling a kernel and tasks on a 2-D
# mesh (mlp_mesh, attention_mesh, call_mesh, coll_mesh, mlp_sp_mesh) and the
# mixture of experts (moe_ep: random routing and all logits tied; moe_mesh
# and moe_group on mesh(dp, ep) against moe_ep.blk) equal their 1-rank local results (1e-4); output files come from rank 0 only;
# --ranks other than -np is an error. Exits 77 without MPI or mpirun.
set -u
NP=$1 HAVE=$2 BLKC=$3 REF=$4 SRC=$5
. "$(dirname "$0")/mpi_prelude.sh" "$HAVE"
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-mpitask.XXXXXX")
trap 'rm -rf "$T"' EXIT
export BLKC_CACHE_DIR=${BLKC_CACHE_DIR:-$T/cache} # make test: the suite's cache
pass=0 failed=0
ok()  { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
D=$SRC/tests/task

# run_cmp NAME FILE ENTRY "SIZES" RESULTS... — mpirun vs 1 local rank
run_cmp() {
  local name=$1 file=$2 entry=$3 sizes=$4; shift 4
  local lo=() mo=()
  for o in "$@"; do lo+=(--out "$o=$T/$name.$o.l.npy"); mo+=(--out "$o=$T/$name.$o.m.npy"); done
  # shellcheck disable=SC2086
  "$BLKC" run "$D/$file" --entry="$entry" --ranks=1 --random $sizes "${lo[@]}" >/dev/null \
    2>"$T/lerr" || { bad "$name on 1 local rank: $(cat "$T/lerr")"; return; }
  # shellcheck disable=SC2086
  # (MEGA=--megakernel: the megakernel mode under mpirun)
  if ! timeout 30 "${MPI[@]}" -np "$NP" "$BLKC" run "$D/$file" --entry="$entry" --ranks="$NP" \
      --random $sizes ${MEGA:-} "${mo[@]}" >"$T/out" 2>"$T/err"; then
    bad "mpirun -np $NP $name: $(cat "$T/out" "$T/err")"; return
  fi
  for o in "$@"; do
    echo -n "$name $o, mpirun -np $NP (overlap ${BLKC_TASK_OVERLAP:-auto}): "
    "$REF" cmp "$T/$name.$o.m.npy" "$T/$name.$o.l.npy" 1e-4 && ok || bad "$name $o differs"
  done
}

run_cmp mlp mlp.blk mlp "T=16 H=16 F=32" result
BLKC_TASK_OVERLAP=always run_cmp mlp_ov mlp.blk mlp "T=16 H=16 F=32" result
BLKC_TASK_OVERLAP=always run_cmp mlp_sp mlp_sp.blk mlp_sp "T=32 H=16 F=32" result
run_cmp two two_results.blk mlp2 "T=16 H=16 F=32" result0 result1
run_cmp call call_kernel.blk mlp_call "T=16 H=16 F=64" result
MEGA=--megakernel run_cmp mlp_mega mlp.blk mlp "T=16 H=16 F=32" result
MEGA=--megakernel BLKC_TASK_OVERLAP=always run_cmp mlp_sp_mega mlp_sp.blk mlp_sp "T=32 H=16 F=32" result

# run_mesh NAME FILE ENTRY "SIZES" DP TP — a task on mesh(dp = DP, tp = TP)
# under mpirun vs the same task on 1 local rank (DP=1 TP=1)
run_mesh() {
  local name=$1 file=$2 entry=$3 sizes=$4 dp=$5 tp=$6
  # shellcheck disable=SC2086
  "$BLKC" run "$D/$file" --entry="$entry" --ranks=1 --random $sizes DP=1 TP=1 \
    --out "result=$T/$name.l.npy" >/dev/null 2>"$T/lerr" \
    || { bad "$name on 1 local rank: $(cat "$T/lerr")"; return; }
  # shellcheck disable=SC2086
  if ! timeout 30 "${MPI[@]}" -np "$NP" "$BLKC" run "$D/$file" --entry="$entry" --ranks="$NP" \
      --random $sizes DP=$dp TP=$tp --out "result=$T/$name.m.npy" >"$T/out" 2>"$T/err"; then
    bad "mpirun -np $NP $name: $(cat "$T/out" "$T/err")"; return
  fi
  echo -n "$name, mesh(dp = $dp, tp = $tp), mpirun -np $NP (overlap ${BLKC_TASK_OVERLAP:-auto}): "
  "$REF" cmp "$T/$name.m.npy" "$T/$name.l.npy" 1e-4 && ok || bad "$name differs"
}

run_mesh mlp_mesh mlp_mesh.blk mlp "T=16 H=16 F=32" $((NP / 2)) 2
run_mesh mlp_mesh_dp mlp_mesh.blk mlp "T=16 H=16 F=32" "$NP" 1
run_mesh attention_mesh attention_mesh.blk attention "T=16 H=16 NH=8 D=8" $((NP / 2)) 2
run_mesh call_mesh call_mesh.blk call_mesh "T=16 H=16 F=64" $((NP / 2)) 2
run_mesh coll_mesh coll_mesh.blk coll_mesh "T=16 H=16 F=32" $((NP / 2)) 2
run_mesh mlp_sp_mesh mlp_sp_mesh.blk mlp_sp "T=32 H=16 F=32" $((NP / 2)) 2
BLKC_TASK_OVERLAP=always run_mesh mlp_sp_mesh_ov mlp_sp_mesh.blk mlp_sp "T=32 H=16 F=32" \
  $((NP / 2)) 2
BLKC_TASK_OVERLAP=always run_mesh mlp_mesh_ov mlp_mesh.blk mlp "T=16 H=16 F=32" $((NP / 2)) 2

# mixture of experts: the uneven all_to_all dispatch / combine between processes
run_cmp moe moe_ep.blk moe_ep "T=32 H=16 F=24 E=8" result
if "$REF" fill "$T/wr0.npy" 0 16 8; then # every token to experts 0 and 1 (rank 0)
  run_cmp moe_tie moe_ep.blk moe_ep "T=32 H=16 F=24 E=8 wr=@$T/wr0.npy" result
else bad "moe: zero router"; fi
"$BLKC" run "$D/moe_ep.blk" --ranks=1 --random T=32 H=16 F=24 E=8 --out "result=$T/moe1.npy" \
  >/dev/null 2>"$T/lerr" || bad "moe_ep on 1 local rank: $(cat "$T/lerr")"
if timeout 30 "${MPI[@]}" -np "$NP" "$BLKC" run "$D/moe_mesh.blk" --ranks="$NP" --random \
    T=32 H=16 F=24 E=8 DP=$((NP / 2)) EP=2 --out "result=$T/moem.npy" >"$T/out" 2>"$T/err"; then
  echo -n "moe_mesh, mesh(dp = $((NP / 2)), ep = 2), mpirun -np $NP vs moe_ep.blk on 1 rank: "
  "$REF" cmp "$T/moem.npy" "$T/moe1.npy" 1e-4 && ok || bad "moe_mesh differs"
else bad "mpirun -np $NP moe_mesh: $(cat "$T/out" "$T/err")"; fi
if timeout 30 "${MPI[@]}" -np "$NP" "$BLKC" run "$D/moe_group.blk" --ranks="$NP" --random \
    T=32 H=16 F=24 E=8 DP=$((NP / 2)) EP=2 --out "result=$T/moeg.npy" >"$T/out" 2>"$T/err"; then
  echo -n "moe_group, mesh(dp = $((NP / 2)), ep = 2), mpirun -np $NP vs moe_ep.blk on 1 rank: "
  "$REF" cmp "$T/moeg.npy" "$T/moe1.npy" 1e-4 && ok || bad "moe_group differs"
else bad "mpirun -np $NP moe_group: $(cat "$T/out" "$T/err")"; fi

# without --out: one summary line, from rank 0 only
timeout 30 "${MPI[@]}" -np "$NP" "$BLKC" run "$D/mlp.blk" --ranks="$NP" --random T=16 H=16 F=32 \
  >"$T/out" 2>"$T/err"
n=$(grep -c "task on $NP ranks" "$T/out")
[ "$n" = 1 ] && ok || bad "expected one summary line from rank 0, got $n: $(cat "$T/out" "$T/err")"

# --ranks must equal -np
timeout 30 "${MPI[@]}" -np "$NP" "$BLKC" run "$D/mlp.blk" --ranks=$((NP + 1)) --random \
  T=16 H=16 F=32 >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" = 3 ] && grep -q -- "--ranks must equal -np" "$T/err"; then ok
else bad "--ranks != -np: exit $rc: $(cat "$T/err")"; fi

echo "mpi_task -np $NP: $pass passed, $failed failed"
[ "$failed" = 0 ]
