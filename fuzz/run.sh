#!/usr/bin/env bash
# fuzz/run.sh [BUILD_DIR] — build fuzz_frontend (clang, libFuzzer, ASan+UBSan)
# into BUILD_DIR (default build/fuzz-build) if needed, make a seed corpus from
# examples/*.blk and the .blk snippets of the test suite, and fuzz for
# BLKC_FUZZ_SECONDS (default 60) seconds. Inputs the fuzzer adds are kept in
# BUILD_DIR/corpus across runs; crashes are written to BUILD_DIR/crashes/.
# Exit: 0 clean, 1 a crash/leak/timeout was found (reproducer printed),
# 77 no clang with -fsanitize=fuzzer here (a ctest skip), 2 build failure.
# Env: BLKC_FUZZ_SECONDS, BLKC_FUZZ_JOBS (build parallelism, default 2),
#      CLANG (the compiler to use).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build/fuzz-build}
SECONDS_TO_RUN=${BLKC_FUZZ_SECONDS:-60}
JOBS=${BLKC_FUZZ_JOBS:-2}
mkdir -p "$B"

# ---- a clang whose fuzzer runtime is installed
pick_clang() {
  local c
  for c in ${CLANG:-} ${CC:-} clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
    command -v "$c" >/dev/null 2>&1 || continue
    printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' \
      >"$B/probe.c"
    if "$c" -fsanitize=fuzzer,address,undefined "$B/probe.c" -o "$B/probe" \
         >/dev/null 2>&1; then
      echo "$c"; return 0
    fi
  done
  return 1
}
if [ ! -x "$B/fuzz_frontend" ] || [ -n "$(find "$ROOT/dsl" "$ROOT/compiler" \
     "$ROOT/backends" "$ROOT/include" "$ROOT/fuzz" -newer "$B/fuzz_frontend" -type f 2>/dev/null | head -1)" ]; then
  CC_FUZZ=$(pick_clang) || {
    echo "fuzz: no clang with a libFuzzer runtime (apt-get install clang libclang-rt-dev); skipping"
    exit 77
  }
  CXX_FUZZ=${CC_FUZZ/clang/clang++}
  command -v "$CXX_FUZZ" >/dev/null 2>&1 || CXX_FUZZ=$CC_FUZZ
  if [ ! -f "$B/CMakeCache.txt" ]; then
    # the front end and the GPU emitters only: no CPU backend (LLVM) or MPI
    cmake -S "$ROOT/fuzz" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
      -DBLKC_CPU_BACKEND=OFF -DBLKC_MPI=OFF \
      >"$B/configure.log" 2>&1 || { cat "$B/configure.log"; exit 2; }
  fi
  echo "fuzz: building fuzz_frontend with $CC_FUZZ"
  cmake --build "$B" --target fuzz_frontend -j "$JOBS" >"$B/build.log" 2>&1 ||
    { tail -40 "$B/build.log"; exit 2; }
fi

# ---- seed corpus: example programs, test .blk files, and every case of the
# text corpora (the lines between `=== name` and `---`)
S=$B/seeds
rm -rf "$S"; mkdir -p "$S" "$B/corpus" "$B/crashes"
i=0
for f in "$ROOT"/examples/*.blk "$ROOT"/lib/*.blk "$ROOT"/benchmarks/*.blk $(find "$ROOT/tests" -name '*.blk' -not -path '*/fuzz/pending/*'); do
  cp "$f" "$S/file_$i.blk"; i=$((i + 1))
done
for f in "$ROOT"/tests/errors/*.txt "$ROOT"/tests/golden/*.txt \
         "$ROOT"/tests/parse/*.golden; do
  [ -f "$f" ] || continue
  case $f in */CMakeLists.txt) continue ;; esac
  awk -v out="$S/$(basename "$f" | tr . _)" '
    /^=== / { n++; inside = 1; next }
    /^---$/ { inside = 0; next }
    inside  { print > (out "_" n ".blk") }' "$f"
done
# kernels embedded as C strings in the exec tests: lines of "..."\n literals
for f in "$ROOT"/tests/exec/*.c; do
  sed -n 's/^ *"\(.*\)\\n" *;\{0,1\}$/\1/p' "$f" | sed 's/\\"/"/g' \
    >"$S/exec_$(basename "$f" .c).blk"
  [ -s "$S/exec_$(basename "$f" .c).blk" ] || rm -f "$S/exec_$(basename "$f" .c).blk"
done
echo "fuzz: $(ls "$S" | wc -l) seeds, $(ls "$B/corpus" | wc -l) inputs kept from earlier runs"

# ---- fuzz
"$B/fuzz_frontend" -max_total_time="$SECONDS_TO_RUN" -timeout=10 \
  -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
  -dict="$ROOT/fuzz/blk.dict" -artifact_prefix="$B/crashes/" \
  "$B/corpus" "$S" >"$B/fuzz.log" 2>&1
rc=$?
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$B/fuzz.log"
grep -E 'INITED|DONE' "$B/fuzz.log" | tail -2
if [ $rc -ne 0 ]; then
  tail -60 "$B/fuzz.log"
  echo "fuzz: FAILED (rc $rc); reproducers in $B/crashes/:"
  ls -l "$B/crashes/"
  echo "add each to tests/fuzz/regressions/ once fixed"
  exit 1
fi
echo "fuzz: clean after ${SECONDS_TO_RUN}s"
