#!/usr/bin/env bash
# gpu-prep.sh [BUILD_DIR] — `make gpu-prep`: what the GPU build (preset gpu,
# docs/gpu.md) needs from a machine that has LLVM, flex and bison, written
# to build-gpu-prep/ (ignored by git; carry it to the GPU machine):
#   gen/   lexer.c lexer.h parser.c parser.h from dsl/lexer.l, dsl/parser.y
#          (CMake uses them where flex/bison are missing)
#   refs/  the CPU oracle's outputs of every gpu_exec / gpu_ranks case
#          (tests/gpu/gpu_ref.sh), the references of the GPU tests there
#   STAMP  the commit and the source digest they were made from
# BUILD_DIR (default build/) is a configured default build with blkc and
# gpu_npycmp built (`make gpu-prep` builds them first).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build}
P=$ROOT/build-gpu-prep
cd "$ROOT"
for t in flex bison; do
  command -v $t >/dev/null || { echo "gpu-prep: missing $t (apt-get install $t)" >&2; exit 1; }
done
[ -x "$B/blkc" ] && [ -x "$B/tests/gpu/gpu_npycmp" ] ||
  { echo "gpu-prep: no $B/blkc or $B/tests/gpu/gpu_npycmp: run make build first" >&2; exit 1; }
rm -rf "$P.tmp"
mkdir -p "$P.tmp/gen" "$P.tmp/refs"
flex -o "$P.tmp/gen/lexer.c" --header-file="$P.tmp/gen/lexer.h" dsl/lexer.l
bison -o "$P.tmp/gen/parser.c" --defines="$P.tmp/gen/parser.h" dsl/parser.y
# the generated files name their source path in #line directives: make
# them relative, so that they do not name this machine's folders
sed -i "s|$ROOT/||g" "$P.tmp"/gen/*
export BLKC_CACHE_DIR=${BLKC_CACHE_DIR:-$B/test-cache}
export BLKC_GPU_REFS_WRITE=$P.tmp/refs
unset BLKC_GPU_REFS
bash tests/gpu/gpu_exec.sh "$B/blkc" "$B/tests/gpu/gpu_npycmp" "$ROOT" >"$P.tmp/exec.log" 2>&1 ||
  { echo "gpu-prep: gpu_exec.sh failed writing references:" >&2; grep FAIL "$P.tmp/exec.log" >&2; exit 1; }
bash tests/gpu/gpu_ranks.sh "$B/blkc" "$B/tests/gpu/gpu_npycmp" "$ROOT" >"$P.tmp/ranks.log" 2>&1 ||
  { echo "gpu-prep: gpu_ranks.sh failed writing references:" >&2; grep FAIL "$P.tmp/ranks.log" >&2; exit 1; }
{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- 2>/dev/null || echo ' (modified)')"
  echo "sources $(cat dsl/lexer.l dsl/parser.y | sha256sum | cut -c1-16)"
  echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$P.tmp/STAMP"
rm -rf "$P"
mv "$P.tmp" "$P"
n=$(ls "$P/refs" | wc -l)
echo "gpu-prep: ok — $P: gen/ (lexer, parser), refs/ ($n .npy, $(du -sh "$P" | cut -f1) in all)"
