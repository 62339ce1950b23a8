#!/usr/bin/env bash
# gpu_refs.sh BLKC NPYCMP SRCDIR — the saved-reference path of gpu_exec.sh
# (tests/gpu/gpu_ref.sh), which the GPU build (preset gpu) uses and no GPU
# is needed to check: write the references (BLKC_GPU_REFS_WRITE, as
# scripts/gpu-prep.sh does), then run the suite with BLKC_GPU_REFS on the
# CPU as the "device": every case must find its reference and match it
# exactly, and a missing reference must fail naming scripts/gpu-prep.sh.
set -u
BLKC=$1 NPYCMP=$2 SRC=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-gpurefs.XXXXXX")
trap 'rm -rf "$T"' EXIT
if ! BLKC_GPU_REFS_WRITE=$T/refs bash "$SRC/tests/gpu/gpu_exec.sh" "$BLKC" "$NPYCMP" "$SRC" >"$T/w.log" 2>&1; then
  echo "FAIL: writing the references:"; cat "$T/w.log"; exit 1
fi
nw=$(grep -c '^ref ' "$T/w.log")
nf=$(ls "$T/refs" | wc -l)
echo "wrote $nw cases, $nf files"
[ "$nw" -ge 14 ] && [ "$nf" -ge 16 ] || { echo "FAIL: too few references"; exit 1; }
if ! BLKC_GPU_DEVICE=cpu BLKC_GPU_REFS=$T/refs bash "$SRC/tests/gpu/gpu_exec.sh" "$BLKC" "$NPYCMP" "$SRC" >"$T/r.log" 2>&1; then
  echo "FAIL: the suite against the saved references:"; cat "$T/r.log"; exit 1
fi
tail -1 "$T/r.log"
grep -q '^17 cases, 0 failure(s)$' "$T/r.log" || { echo "FAIL: want 17 cases"; exit 1; }
rm -f "$T/refs/softmax.cpu."*
BLKC_GPU_DEVICE=cpu BLKC_GPU_REFS=$T/refs bash "$SRC/tests/gpu/gpu_exec.sh" "$BLKC" "$NPYCMP" "$SRC" >"$T/m.log" 2>&1
rc=$?
want="FAIL softmax: cpu run: no reference $T/refs/softmax.cpu.*.npy (run scripts/gpu-prep.sh and carry build-gpu-prep)"
if [ $rc -eq 0 ] || ! grep -qxF "$want" "$T/m.log"; then
  echo "FAIL: a missing reference: exit $rc, wanted the line: $want"; cat "$T/m.log"; exit 1
fi
echo "ok: a missing reference fails the case: $(grep -c '^FAIL' "$T/m.log") failure"
