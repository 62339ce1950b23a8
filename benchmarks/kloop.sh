#!/usr/bin/env bash
# kloop.sh — static instruction count of a GEMM kernel's inner k loop on the
# host's ISA: compiles benchmarks/gemm_f32.blk to assembly and prints, for
# the loop block with the most FMAs (the DOT micro-kernel's k loop, from its
# label to the branch back to it), its instructions, FMAs, broadcasts and
# integer adds. A timing-free figure for AVX-512 code, which valgrind cannot
# run (under valgrind the CPU reports AVX2 only). Extra arguments are
# -D NAME=VALUE pairs; BLKC_CPU_* switches apply as usual.
#   bash benchmarks/kloop.sh -D BM=256 -D BN=128 -D BK=64
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BLKC=${BLKC:-$ROOT/build/blkc}
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-kloop.XXXXXX")
trap 'rm -rf "$T"' EXIT
BLKC_CACHE_DISABLE=1 "$BLKC" compile "$ROOT/benchmarks/gemm_f32.blk" --emit=asm "$@" -o "$T/k.s"
awk '
function flush() {
    if (lab != "" && nf > bf) { bf = nf; bl = lab; bn = n; bb = nb; ba = na }
}
/^\.?[A-Za-z_][A-Za-z0-9_.]*:/ {
    if (open) flush()
    lab = $1; sub(/:$/, "", lab); n = nf = nb = na = 0; open = 1; next
}
open && /^\t[a-z]/ {
    n++
    if ($1 ~ /^vfmadd/) nf++
    if ($1 ~ /^vbroadcast/) nb++
    if ($1 ~ /^(add|lea|sub|inc)/) na++
    if ($1 ~ /^j/ && $NF == lab) { flush(); open = 0 }
}
END {
    if (open) flush()
    if (bf == 0) { print "kloop.sh: no FMA loop found" > "/dev/stderr"; exit 1 }
    printf "k loop %s: %d instructions, %d FMAs (%.3f per FMA), %d broadcasts, %d add/lea/sub/inc\n",
           bl, bn, bf, bn / bf, bb, ba
}' "$T/k.s"
