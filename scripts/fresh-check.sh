#!/usr/bin/env bash
# fresh-check.sh — `make fresh-check`: prove that a fresh Debian 12 machine
# builds and tests blkc with the README's two commands. A clean bookworm
# root (debootstrap minbase + git, make, ca-certificates; scripts/lib/root.sh)
# gets a `git clone` of this checkout's committed HEAD, then `make demo` and
# `make test` run there as root with CI=true and no standard input, exactly
# as a new user (or CI) would: everything else must come from
# scripts/setup.sh. Prints ONE final line, e.g.
#   fresh-check: PASS in 23m10s — demo ok; ctest default 223/223 (3 skipped), asan 222/222, tsan 37/37
#
#   FRESH_CHECK_QUICK=1   `make demo` and `make test-fast` only (development)
#   FRESH_CHECK_KEEP=1    keep the root afterwards (build/fresh/root)
# The log of the run: build/fresh/fresh-check.log. Needs root and
# debootstrap (installed if missing); nothing else on the host.
set -euo pipefail
FR_NAME=fresh-check
FR_REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$FR_REPO/scripts/lib/root.sh"
fr_in_namespace "$@"

START=$(date +%s)
R=$FR_DIR/root
LOG=$FR_DIR/fresh-check.log
QUICK=${FRESH_CHECK_QUICK:-0}
result=FAIL
summary="did not start"

finish() {
  local rc=$?
  set +e
  fr_umount
  if [ "${FRESH_CHECK_KEEP:-0}" != 1 ] && [ -d "$R" ]; then
    fr_assert_unmounted "$R" && rm -rf "$R"
  fi
  [ "$result" = PASS ] || [ $rc -ne 0 ] || rc=1
  echo "fresh-check: $result in $(fr_fmt $(($(date +%s) - START)))$([ "$QUICK" = 1 ] && echo ' (quick)') — $summary"
  exit $rc
}
trap finish EXIT
trap 'summary="interrupted"; exit 130' INT TERM HUP

mkdir -p "$FR_DIR"
: >"$LOG"
fr_base >>"$LOG" 2>&1 || { summary="base root: $(tail -1 "$LOG")"; exit 1; }
fr_fresh "$R"
fr_mount "$R"

# the committed HEAD, as `git clone` gives it to a new user
head=$(git -C "$FR_REPO" rev-parse --short HEAD)
git -C "$FR_REPO" bundle create "$R/root/blkc.bundle" HEAD >>"$LOG" 2>&1 ||
  { summary="git bundle of HEAD failed"; exit 1; }
echo "fresh-check: HEAD $head, root $R, log $LOG" >&2

if [ "$QUICK" = 1 ]; then second=test-fast; else second=test; fi
set +e
fr_chroot "$R" "cd /root && git clone -q blkc.bundle blkc && cd blkc && git log --oneline -1 &&
  echo '=== make demo' && make demo && echo '=== demo ok' &&
  echo '=== make $second' && make $second && echo '=== test ok'" >>"$LOG" 2>&1
rc=$?
set -e

# --------------------------------------------------------------- summary
# each ctest run starts with "Test project"; count its tests, failures and
# skips in the order `make test` runs them: default, asan, tsan (two runs)
counts=$(awk '
  /^Test project/ { n++ }
  n && /\*\*\*Skipped/ { sk[n]++ }
  n && /tests passed, [0-9]+ tests? failed out of/ {
    f = $0; sub(/.*passed, /, "", f); split(f, w, " "); fail[n] = w[1]; tot[n] = $NF }
  END { for (i = 1; i <= n; i++) printf "%d %d %d\n", tot[i] - fail[i], tot[i], sk[i] + 0 }' "$LOG")
fmt() { # "p t s" -> "p/t (s skipped)"
  set -- $1
  [ -n "${2:-}" ] || { echo "not run"; return; }
  printf '%s/%s' "$1" "$2"; [ "$3" -gt 0 ] && printf ' (%s skipped)' "$3"; return 0
}
line() { sed -n "${1}p" <<<"$counts"; }
if grep -q '^=== demo ok' "$LOG"; then demo="demo ok"; else demo="demo FAILED"; fi
if [ "$QUICK" = 1 ]; then
  summary="$demo; ctest test-fast $(fmt "$(line 1)")"
else
  t3=$(line 3); t4=$(line 4)
  tsan="not run"
  if [ -n "$t3" ]; then
    set -- $t3; p=$1 t=$2 s=$3
    if [ -n "$t4" ]; then set -- $t4; p=$((p + $1)) t=$((t + $2)) s=$((s + $3)); fi
    tsan=$(fmt "$p $t $s")
  fi
  summary="$demo; ctest default $(fmt "$(line 1)"), asan $(fmt "$(line 2)"), tsan $tsan"
fi
if [ $rc -eq 0 ] && grep -q '^=== test ok' "$LOG"; then
  result=PASS
else
  summary="$summary; exit $rc, last lines in $LOG: $(grep -v '^\s*$' "$LOG" | tail -1 | cut -c1-160)"
fi
