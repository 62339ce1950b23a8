#!/usr/bin/env bash
# gpu-dry-run.sh — `make gpu-dry-run`: run benchmarks/gpu_check.sh exactly as
# the GPU machine will, before spending GPU time on it. That machine has the
# CUDA toolkit, gcc, cmake, ninja and Python with numpy, but no LLVM, flex,
# bison, apt or network; it gets the working tree (tracked files plus the
# untracked ones git does not ignore) and the carried ignored paths (64 MiB
# in all), runs one command in the repository root and returns $OUT.
#
# Here: the fresh-check base root (scripts/lib/root.sh) plus gcc, g++,
# cmake, ninja and python3-numpy — and no LLVM, flex or bison — with the
# CUDA toolkit bound in; the working tree copied as the tool copies it with
# the carried paths (GPU_DRY_RUN_CARRY, default build-gpu-prep: make
# gpu-prep); then, without network, `bash benchmarks/gpu_check.sh` with
# $OUT set. Checks: configure and build succeed, every GPU test skips
# (exit 77: no GPU here), the script exits 0, prints its summary and writes
# $OUT/gpu-check.txt. Prints one result line; the log is
# build/fresh/gpu-dry-run.log.
set -euo pipefail
FR_NAME=gpu-dry-run
FR_REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$FR_REPO/scripts/lib/root.sh"
fr_in_namespace "$@"

START=$(date +%s)
R=$FR_DIR/gpu-root
LOG=$FR_DIR/gpu-dry-run.log
CARRY=${GPU_DRY_RUN_CARRY:-build-gpu-prep}
GPU_PKGS="gcc g++ libc6-dev cmake ninja-build python3 python3-numpy"
result=FAIL
summary="did not start"

finish() {
  local rc=$?
  set +e
  fr_umount
  [ -d "$R" ] && fr_assert_unmounted "$R" && rm -rf "$R"
  [ "$result" = PASS ] || [ $rc -ne 0 ] || rc=1
  echo "gpu-dry-run: $result in $(fr_fmt $(($(date +%s) - START))) — $summary"
  exit $rc
}
trap finish EXIT
trap 'summary="interrupted"; exit 130' INT TERM HUP

mkdir -p "$FR_DIR"
: >"$LOG"
cd "$FR_REPO"
for c in $CARRY; do
  [ -e "$c" ] || { summary="carried path $c is missing (make gpu-prep)"; exit 1; }
done

# ---- the GPU machine's root: base + compilers, cmake, ninja, numpy
summary="building the root"
fr_base >>"$LOG" 2>&1
GTAR=$FR_DIR/gpu-base.tar
if [ ! -s "$GTAR" ] || [ "$(cat "$GTAR.pkgs" 2>/dev/null)" != "$GPU_PKGS" ]; then
  fr_fresh "$R"
  fr_mount "$R"
  fr_chroot "$R" "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
    apt-get install -y -qq --no-install-recommends $GPU_PKGS >/dev/null" >>"$LOG" 2>&1 ||
    { summary="apt-get install $GPU_PKGS failed in the root (see $LOG)"; exit 1; }
  fr_umount
  rm -rf "$R"/var/lib/apt/lists/*
  tar -C "$R" -cf "$GTAR.part" . && mv "$GTAR.part" "$GTAR"
  echo "$GPU_PKGS" >"$GTAR.pkgs"
fi
fr_fresh "$R" "$GTAR"
for t in flex bison llvm-config clang; do
  if chroot "$R" /bin/sh -c "command -v $t || ls /usr/bin/$t-[0-9]*" >/dev/null 2>&1; then
    summary="the root has $t: not the GPU machine"; exit 1
  fi
done
# nothing of LLVM at all (libLLVM, headers)
if ls "$R"/usr/lib/llvm-* "$R"/usr/lib/x86_64-linux-gnu/libLLVM* >/dev/null 2>&1; then
  summary="the root has an LLVM: not the GPU machine"; exit 1
fi
fr_mount "$R"

# ---- the working tree as the tool copies it, plus the carried paths
summary="copying the tree"
W=$R/root/repo
mkdir -p "$W" "$R/root/out"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -C "$W" -xf -
carried=0
for c in $CARRY; do
  tar -cf - "$c" | tar -C "$W" -xf -
  carried=$((carried + $(du -sk "$c" | cut -f1)))
done
if [ $carried -gt $((64 * 1024)) ]; then
  summary="the carried paths ($CARRY) are $((carried / 1024)) MiB, over the tool's 64 MiB"; exit 1
fi

# ---- the command, as the tool runs it: repo root, $OUT, no network
summary="gpu_check.sh did not finish"
set +e
FR_EXTRA_ENV="OUT=/root/out" \
  timeout 600 unshare --net -- bash -c "$(declare -f fr_chroot); fr_chroot '$R' 'cd /root/repo && bash benchmarks/gpu_check.sh'" \
  >>"$LOG" 2>&1
rc=$?
set -e

# ---- the checks
bad=()
grep -q '^build: ok' "$LOG" || bad+=("build did not succeed")
grep -q '^build: ok.*no CPU backend' "$LOG" || bad+=("not the GPU build")
gpu_tests=$(sed -n "s/^summary: skipped: //p" "$LOG" | tr ',' '\n' | grep -c 'ctest -L gpu:' || true)
for t in gpu_exec gpu_ranks gpu_vec_exec; do
  grep -q "summary: skipped:.*ctest -L gpu:$t" "$LOG" || bad+=("$t did not skip")
done
grep -q "summary: passed:.*ctest -L gpu:" "$LOG" && bad+=("a GPU test passed without a GPU")
grep -q '^summary: failed: none' "$LOG" || bad+=("$(sed -n 's/^summary: failed: /failed: /p' "$LOG")")
grep -q '^gpu-check: ' "$LOG" || bad+=("no summary line")
[ -s "$R/root/out/gpu-check.txt" ] || bad+=("no \$OUT/gpu-check.txt")
[ $rc -eq 0 ] || bad+=("gpu_check.sh exit $rc")
build_s=$(sed -n 's/^build: ok (\([0-9]*\) s.*/\1/p' "$LOG")
if [ ${#bad[@]} -eq 0 ]; then
  result=PASS
  summary="configure+build ok in ${build_s}s without LLVM/flex/bison; ctest -L gpu: $gpu_tests GPU tests skipped (77); gpu_check.sh exit 0, summary printed, \$OUT/gpu-check.txt written; carried $CARRY $((carried / 1024)) MiB"
else
  summary="$(IFS=';'; echo "${bad[*]}"); log $LOG"
fi
