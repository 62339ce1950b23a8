#!/usr/bin/env bash
# run.sh — `make bench`: runs build/benchmarks/blkc_bench single-threaded
# (BLKC_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1; BLKC_BENCH_THREADS=N for N
# threads on both sides) with a private JIT cache so
# the compile-time numbers are cold. Extra arguments go to blkc_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BLKC_BENCH:-build/benchmarks/blkc_bench}
# `run.sh decode [D H [T [reps]]]`: the decode-step benchmark instead
# (build/benchmarks/decode_step; it runs 1 and 2 threads itself)
if [ "${1:-}" = decode ]; then
  shift
  BIN=build/benchmarks/decode_step
fi
if [ ! -x "$BIN" ]; then
  echo "bench: $BIN not found; build first (make build)" >&2
  exit 2
fi
# OpenBLAS picks its kernels from CPUID; under some hypervisors it falls back
# to an SSE3 "Prescott" kernel, and some machines preset OPENBLAS_CORETYPE
# (and OPENBLAS_L2_SIZE) to an older core for old OpenBLAS builds — on this
# project's AVX-512 VMs a preset Haswell kernel ran at 0.56x of SkylakeX and
# flattered blkc. For the benchmark alone, name the core from the CPU flags
# (BLKC_BENCH_CORETYPE overrides); the run's line "machine:" says which, and
# the GEMM line's max abs diff checks the kernel's results.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
if [ -n "${BLKC_BENCH_CORETYPE:-}" ]; then
  export OPENBLAS_CORETYPE=$BLKC_BENCH_CORETYPE
elif [ -r /proc/cpuinfo ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  case "$flags" in
    *avx512f*) export OPENBLAS_CORETYPE=SkylakeX ;;
    *avx2*) export OPENBLAS_CORETYPE=Haswell ;;
  esac
fi
cache=$(mktemp -d "${TMPDIR:-/tmp}/blkc-bench-cache.XXXXXX")
trap 'rm -rf "$cache"' EXIT
echo "machine: $(nproc) cores, OpenBLAS core ${OPENBLAS_CORETYPE:-auto}, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
# BLKC_BENCH_THREADS=N: both sides on N threads (default 1)
t=${BLKC_BENCH_THREADS:-1}
BLKC_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t BLKC_CACHE_DIR="$cache" \
  "$BIN" "$@"
