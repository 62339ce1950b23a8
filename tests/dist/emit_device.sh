#!/usr/bin/env bash
# emit_device.sh BLKC SRCDIR — `blkc compile --emit=device` of
# tests/dist/device_ir.blk must equal tests/dist/device_ir.golden (the
# printer's form of copy signals with value/op, call and checkdim).
# BLKC_BLESS=1 rewrites the golden.
set -u
BLKC=$1 SRC=$2
out=$("$BLKC" compile "$SRC/tests/dist/device_ir.blk" --emit=device) || { echo "FAIL: blkc exited $?"; exit 1; }
if [ -n "${BLKC_BLESS:-}" ]; then
  printf '%s\n' "$out" >"$SRC/tests/dist/device_ir.golden"
  echo "blessed"; exit 0
fi
if ! diff -u "$SRC/tests/dist/device_ir.golden" <(printf '%s\n' "$out"); then
  echo "FAIL: --emit=device differs from device_ir.golden"; exit 1
fi
echo "emit_device: ok"
