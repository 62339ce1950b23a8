#!/usr/bin/env bash
# mpi_hosts.sh NP HAVE_MPI BLKC NPYTOOL TASK_REF SRCDIR — ranks
# on two "hosts" on this one machine: two network namespaces joined by a
# veth pair with addresses this script gives them (10.213.X.1 and .2/24),
# each with its own host name (unshare --uts), so MPI sees two nodes and
# blkc takes its RMA path (runtime/rank_mpi.c) without BLKC_MPI_RMA.
# mpirun runs in the first namespace and starts the second's processes
# through an rsh agent script (ip netns exec + unshare --uts); MPI talks
# only over the veth (btl tcp,self and the oob on it; one-sided through
# osc/ucx over UCX's tcp transport on it). NP/2 ranks per host. Checked:
# the ranks see both host names; lib/ag_gemm.blk
# (overlapped and plain), a device all_reduce and a task write the same
# bytes as the same run on local ranks; a kernel that loads peers' memory
# stops with exit 3 and the "needs all ranks on one node" line; a rank busy
# in a kernel while the others wait in all_reduce ends the job with exit 3
# and the timeout line naming it. Every run is bounded (timeout); the
# namespaces and whatever still runs in them go on exit (trap). Exits 77
# without MPI, when not root, without ip/unshare, or when namespaces cannot
# be made.
set -u
NP=$1 HAVE=$2 BLKC=$3 NPY=$4 REF=$5 SRC=$6
. "$(dirname "$0")/mpi_prelude.sh" "$HAVE"
[ "$(id -u)" = 0 ] || { echo "skipped: needs root for network namespaces"; exit 77; }
for c in ip unshare hostname timeout; do
  command -v $c >/dev/null 2>&1 || { echo "skipped: no $c"; exit 77; }
done
mpirun --version 2>&1 | grep -q "Open MPI" || { echo "skipped: needs Open MPI's mpirun"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-hosts.XXXXXX")
id=$$
NA=blkc_h${id}_a NB=blkc_h${id}_b   # namespaces
HA=blkc-h${id}-a HB=blkc-h${id}-b   # their host names
X=$((id % 200 + 20))                # 10.213.X.0/24
AA=10.213.$X.1 AB=10.213.$X.2
DEV=bkh0                            # the veth end's name in each namespace
# `ip netns add` makes /run/netns a bind mount of itself when it is not one
# yet; it stays after `ip netns del`. Undo it when this script made it and
# no namespace is left, so nothing stays mounted (fresh-check's root).
netns_mounted=0
mountpoint -q /run/netns 2>/dev/null && netns_mounted=1
cleanup() {
  for ns in "$NA" "$NB"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  if [ "$netns_mounted" = 0 ] && [ -z "$(ip netns list 2>/dev/null)" ] &&
     mountpoint -q /run/netns 2>/dev/null; then
    umount /run/netns 2>/dev/null || umount -l /run/netns 2>/dev/null
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! { ip netns add "$NA" && ip netns add "$NB" &&
       ip link add "$DEV" netns "$NA" type veth peer name "$DEV" netns "$NB" &&
       ip -n "$NA" addr add "$AA/24" dev "$DEV" && ip -n "$NB" addr add "$AB/24" dev "$DEV" &&
       ip -n "$NA" link set lo up && ip -n "$NB" link set lo up &&
       ip -n "$NA" link set "$DEV" up && ip -n "$NB" link set "$DEV" up; } 2>"$T/nserr"; then
  echo "skipped: cannot make network namespaces: $(cat "$T/nserr")"; exit 77
fi

# the rsh agent: AGENT [options] HOST COMMAND... runs COMMAND in HOST's
# namespace under HOST's name (mpirun gives the command as words of one
# shell line)
cat >"$T/agent" <<EOF
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
case \$1 in
  $AA) ns=$NA hn=$HA ;;
  $AB) ns=$NB hn=$HB ;;
  *) echo "agent: unknown host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec \$ns unshare --uts sh -c "hostname \$hn && exec \$*"
EOF
chmod +x "$T/agent"
printf '%s slots=%d\n%s slots=%d\n' "$AA" $((NP / 2)) "$AB" $((NP / 2)) >"$T/hosts"
export BLKC_CACHE_DIR=$T/cache UCX_TLS=tcp,sm,self UCX_NET_DEVICES=$DEV UCX_WARN_UNUSED_ENV_VARS=n
unset BLKC_MPI_RMA
HMPI=(mpirun --oversubscribe --bind-to none -np "$NP" --hostfile "$T/hosts"
      --mca plm_rsh_agent "$T/agent" --mca pml ob1 --mca btl tcp,self
      --mca btl_tcp_if_include "$DEV" --mca oob_tcp_if_include "$DEV" --mca osc ucx)
# on_hosts LIMIT_S COMMAND... — mpirun on the two hosts, from the first
on_hosts() {
  local lim=$1; shift
  timeout -k 5 "$lim" ip netns exec "$NA" unshare --uts \
    sh -c 'hostname "$0" && exec "$@"' "$HA" "${HMPI[@]}" "$@"
}

pass=0 failed=0
ok()  { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# hosts CODE PATTERN -- blkc args: exit status and a line of stderr
hosts() {
  local code=$1 pat=$2; shift 3
  on_hosts 60 "$BLKC" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$code" ]; then
    bad "blkc $* on 2 hosts exited $rc, wanted $code: $(cat "$T/out" "$T/err")"; return 1
  fi
  if [ -n "$pat" ] && ! grep -Eq -- "$pat" "$T/err"; then
    bad "blkc $* on 2 hosts: no line /$pat/ on stderr: $(cat "$T/err")"; return 1
  fi
  ok
}
loc() { "$BLKC" "$@" >/dev/null 2>"$T/lerr" || bad "blkc $* (local): $(cat "$T/lerr")"; }
same() { # same NAME PREFIX_HOSTS PREFIX_LOCAL: per-rank files equal bytewise
  for r in $(seq 0 $((NP - 1))); do
    cmp -s "$T/$2$r.npy" "$T/$3$r.npy" && ok || bad "$1 rank $r: 2 hosts and local ranks differ"
  done
}

# two nodes as MPI sees them
on_hosts 30 hostname >"$T/names" 2>"$T/err" || bad "mpirun hostname: $(cat "$T/err")"
for h in "$HA" "$HB"; do
  [ "$(grep -cx "$h" "$T/names")" = $((NP / 2)) ] && ok || bad "expected $((NP / 2)) ranks on $h: $(cat "$T/names")"
done

# (t_mpi_dist rma is not run here: its ~40 runs take minutes over TCP;
# mpi_rma_np2/np4 run it on one node with BLKC_MPI_RMA=1)

# lib/ag_gemm.blk, overlapped (peer copies + signals) and plain (all_gather)
L=$SRC/lib
for r in $(seq 0 $((NP - 1))); do
  "$NPY" write "$T/a$r.npy" '<f4' 5x3 $(for i in $(seq 15); do echo "$((r + 1)).$i"; done)
done
"$NPY" write "$T/b.npy" '<f4' 3x4 1 2 3 4 5 6 7 8 9 10 11 12
for e in ag_gemm ag_gemm_plain; do
  args=(run "$L/ag_gemm.blk" --entry=$e --ranks=$NP M=5 K=3 N=4 MW=$((5 * NP))
        "a=@$T/a{rank}.npy" "b=@$T/b.npy")
  hosts 0 "" -- "${args[@]}" --out "c=$T/${e}_h{rank}.npy" &&
    { loc "${args[@]}" --out "c=$T/${e}_l{rank}.npy"; same $e ${e}_h ${e}_l; }
done
# a device all_reduce (fixed rank order: bit for bit)
args=(run "$SRC/tests/dist/coll.blk" --entry=ar_sum_f32 --ranks=$NP N=1001 --random)
hosts 0 "" -- "${args[@]}" --out "b=$T/ar_h{rank}.npy" &&
  { loc "${args[@]}" --out "b=$T/ar_l{rank}.npy"; same all_reduce ar_h ar_l; }
# a task: equal to its 1-rank local result
D=$SRC/tests/task
if hosts 0 "" -- run "$D/mlp.blk" --entry=mlp --ranks=$NP --random T=16 H=16 F=32 \
     --out "result=$T/mlp_h.npy"; then
  loc run "$D/mlp.blk" --entry=mlp --ranks=1 --random T=16 H=16 F=32 --out "result=$T/mlp_l.npy"
  "$REF" cmp "$T/mlp_h.npy" "$T/mlp_l.npy" 1e-4 >/dev/null && ok || bad "task mlp: 2 hosts and 1 local rank differ"
fi

# lib/allreduce.blk's kernels load peers' memory: one node only, said so
hosts 3 "^blkc: error: rank [0-9]+: a load or store reached rank [0-9]+'s symmetric heap directly .*needs all ranks on one node" -- \
  run "$L/allreduce.blk" --entry=allreduce_oneshot --ranks=$NP N=1001 op=0 --random
# rank 1 busy in a 15-30 s kernel never enters all_reduce: a waiter on the
# other host (or its own) times out naming it (3 s: the ranks' start-up
# collectives over TCP are not in lockstep to 500 ms)
BLKC_COLL_TIMEOUT_MS=3000 hosts 3 "^blkc: error: rank ([02-9]): all_reduce timed out after 3000 ms: rank \1 waits, rank 1 did not arrive$" -- \
  run "$SRC/tests/dist/faults.blk" --entry=busy_peer --ranks=$NP N=16

echo "mpi_hosts -np $NP (2 hosts): $pass passed, $failed failed"
[ "$failed" = 0 ]
