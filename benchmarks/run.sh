#!/usr/bin/env bash
# run.sh — `make bench`: runs build/benchmarks/blkc_bench single-threaded
# (BLKC_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1) with a private JIT cache so
# the compile-time numbers are cold. Extra arguments go to blkc_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BLKC_BENCH:-build/benchmarks/blkc_bench}
if [ ! -x "$BIN" ]; then
  echo "bench: $BIN not found; build first (make build)" >&2
  exit 2
fi
# OpenBLAS picks its kernels from CPUID; under some hypervisors it falls back
# to an SSE3 "Prescott" kernel, an unfair baseline. Name the core from the
# CPU flags unless the caller did.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -r /proc/cpuinfo ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  case "$flags" in
    *avx512f*) export OPENBLAS_CORETYPE=SkylakeX ;;
    *avx2*) export OPENBLAS_CORETYPE=Haswell ;;
  esac
fi
cache=$(mktemp -d "${TMPDIR:-/tmp}/blkc-bench-cache.XXXXXX")
trap 'rm -rf "$cache"' EXIT
echo "machine: $(nproc) cores, OpenBLAS core ${OPENBLAS_CORETYPE:-auto}, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
BLKC_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 BLKC_CACHE_DIR="$cache" \
  "$BIN" "$@"
