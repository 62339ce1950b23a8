# gpu_probe.sh — sourced by the GPU execution scripts (gpu_exec.sh,
# gpu_ranks.sh) with BLKC, SRC, DEV and T (a scratch directory) set: runs a
# trivial kernel (tests/cli/data/vadd.blk) on $DEV and exits 77 (skip) when
# the device is not supported here, 1 when it fails otherwise.
if ! "$BLKC" run "$SRC/tests/cli/data/vadd.blk" N=4 --device="$DEV" >"$T/probe" 2>&1; then
  if grep -q "not supported here" "$T/probe"; then
    echo "skip: $(cat "$T/probe")"
    exit 77
  fi
  echo "FAIL: probe on $DEV:"; cat "$T/probe"; exit 1
fi
