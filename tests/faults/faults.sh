#!/usr/bin/env bash
# faults.sh BLKC DATADIR CASE — fault injection at the CLI, no LD_PRELOAD:
#   alloc_sweep   the CLI under `ulimit -v` from 150 MB to 400 MB: every run
#                 ends in exit 0/1/2/3 (127 when the loader itself cannot map
#                 a library), never an abort or a segfault; LLVM's own OOM
#                 abort (bad_alloc) is KNOWN, its fatal "Unable to allocate
#                 section memory!" (the JIT's code memory) fails the case
#   alloc_tensor  a tensor too big for the address space: exit 3, one line
#   out_unwritable --out to /dev/full (disk full), under a regular file, into
#                 /proc, into a read-only directory (when not root): exit 3,
#                 one line, no file left
#   out_fsize     --out past the file-size limit (`ulimit -f`, SIGXFSZ
#                 ignored: the "disk fills up mid-write" case): exit 3, no
#                 partial file left
#   readonly_cwd  a run (there is no compile cache) from a read-only working
#                 directory: it works and writes nothing there
#   wait_timeout  a signal never notified (BLKC_WAIT_TIMEOUT_MS=300), on 1
#                 and 2 ranks: exit 3 naming the rank and the signal, fast
#   rank_dies     one rank of 3 fails (its wait times out) while the others
#                 wait for it: exit 3 within a bounded time, no hang
#   compile_oom   `blkc compile --emit=obj` of a 20-kernel module with
#                 compile isolation (BLKC_COMPILE_ISOLATE=1) under `ulimit -v`
#                 rising 2 MB at a time until it succeeds: never an abort;
#                 where LLVM runs out of memory, exit 3 "compile worker died:
#                 out of memory" (in-process, the same limit aborts, as
#                 documented); LLVM aborting in the parent itself: KNOWN;
#                 BLKC_COMPILE_MEM_MB=4 fails the same way, 512 succeeds
#                 with the in-process object, a missing worker is exit 3
# Known failures found here and reported (the fix is outside tests/) print
# KNOWN and do not fail the case; BLKC_FAULTS_STRICT=1 makes them fail.
set -u
BLKC=$1 DATA=$2 CASE=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-faults.XXXXXX")
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
bad=0
fail() { echo "FAIL [$CASE]: $*"; bad=1; }
known() {
  echo "KNOWN [$CASE]: $*"
  [ "${BLKC_FAULTS_STRICT:-0}" = 1 ] && bad=1
}
sanitized() { ldd "$BLKC" 2>/dev/null | grep -Eq 'lib(a|t)san'; }
# run_blkc ARGS...: rc in $rc, stderr in $T/err
run_blkc() { timeout 120 "$BLKC" "$@" >"$T/out" 2>"$T/err"; rc=$?; }
one_line() { [ "$(wc -l <"$T/err")" = 1 ] && grep -q '^blkc: error: ' "$T/err"; }
expect3() { # WHAT PATTERN
  if [ $rc != 3 ] || ! one_line || ! grep -Eq -- "$2" "$T/err"; then
    fail "$1: exit $rc, wanted 3 and one line /$2/: $(head -3 "$T/err")"
  else
    echo "ok   $1: $(cat "$T/err")"
  fi
}

case_alloc_sweep() {
  sanitized && { echo "skip: sanitizer builds reserve terabytes of shadow memory"; exit 77; }
  local v r n
  for v in $(seq 150000 2000 260000) $(seq 270000 10000 400000); do
   for n in 1000 100000; do
    r=$( (ulimit -v $v; timeout 120 "$BLKC" run "$DATA/vadd.blk" N=$n --random \
          --out C="$T/c.npy" >/dev/null 2>"$T/err"; echo $?) )
    case $r in
      0|1|2|3) ;;
      127) # the loader could not map a library, or (at the band's
           # edge) allocate the initial thread's TLS
           grep -Eq 'error while loading shared libraries|cannot allocate TLS data structures' "$T/err" ||
             fail "ulimit -v $v: exit 127: $(head -1 "$T/err")" ;;
      134) if grep -Eq 'std::bad_alloc|LLVM ERROR: out of memory' "$T/err"; then
             known "ulimit -v $v: LLVM ran out of memory and aborted the process (exit 134): $(head -1 "$T/err")"
           elif [ "$( (ulimit -v $v; "$BLKC" --version >/dev/null 2>&1; echo $?) )" != 0 ]; then
             : # blkc cannot even start at this limit (the shared libraries'
               # static constructors fail): the edge of the exit-127 band
           else fail "ulimit -v $v: aborted: $(head -2 "$T/err")"; fi ;;
      *) fail "ulimit -v $v: exit $r: $(head -2 "$T/err")" ;;
    esac
    [ "$r" = 3 ] && ! one_line && fail "ulimit -v $v: exit 3 without a one-line message"
    echo "     ulimit -v $v, N=$n: exit $r $(head -1 "$T/err" | cut -c1-100)"
   done
  done
}

case_alloc_tensor() {
  sanitized && { echo "skip: sanitizer builds reserve terabytes of shadow memory"; exit 77; }
  rc=$( (ulimit -v 4000000; timeout 120 "$BLKC" run "$DATA/vadd.blk" N=2000000000 --random \
         >"$T/out" 2>"$T/err"; echo $?) )
  expect3 "3 x 8 GB tensors under a 4 GB limit" "out of memory"
  # (never without a limit: with overcommit the allocation succeeds and the
  # OOM killer ends the process, and perhaps a neighbour)
  rc=$( (ulimit -v 1000000; timeout 120 "$BLKC" run "$DATA/vadd.blk" N=100000000 --random \
         --out C="$T/c.npy" >"$T/out" 2>"$T/err"; echo $?) )
  expect3 "3 x 400 MB tensors under a 1 GB limit" "out of memory"
  [ -e "$T/c.npy" ] && fail "an output file was written after the failure"
}

case_out_unwritable() {
  run_blkc run "$DATA/vadd.blk" N=4096 --random --out C=/dev/full
  expect3 "--out to /dev/full (no space)" "cannot write.*(No space|full)"
  touch "$T/plain"
  run_blkc run "$DATA/vadd.blk" N=4 --out C="$T/plain/c.npy"
  expect3 "--out under a regular file" "cannot write.*Not a directory"
  [ -e "$T/plain/c.npy" ] && fail "file left under a regular file"
  run_blkc run "$DATA/vadd.blk" N=4 --out C=/proc/blkc-test-c.npy
  expect3 "--out into /proc" "cannot write"
  mkdir "$T/ro"; chmod 555 "$T/ro"
  if touch "$T/ro/probe" 2>/dev/null; then
    rm -f "$T/ro/probe"
    echo "     (running as root: a read-only directory is writable; that sub-case is skipped)"
  else
    run_blkc run "$DATA/vadd.blk" N=4 --out C="$T/ro/c.npy"
    expect3 "--out into a read-only directory" "cannot write.*Permission denied"
    [ -z "$(ls -A "$T/ro")" ] || fail "files left in the read-only directory: $(ls "$T/ro")"
  fi
  # an error in a later --out must not leave the earlier outputs half-written
  run_blkc run "$DATA/vadd.blk" N=4 --out C="$T/c_ok.npy" --out A=/dev/full
  [ $rc = 3 ] || fail "second --out to /dev/full: exit $rc"
}

case_out_fsize() {
  # 400 kB of output under a 64 kB file-size limit, SIGXFSZ ignored so that
  # write() fails with EFBIG the way a full disk fails with ENOSPC
  rc=$( (ulimit -f 64; trap '' XFSZ; timeout 120 "$BLKC" run "$DATA/vadd.blk" N=100000 \
         --random --out C="$T/c.npy" >"$T/out" 2>"$T/err"; echo $?) )
  expect3 "--out past the file-size limit" "cannot write.*(too large|File too large)"
  if [ -e "$T/c.npy" ]; then
    known "a partial $(stat -c %s "$T/c.npy")-byte $T/c.npy is left after the failed write (runtime/npy.c writes in place; write a temporary file and rename it, unlink on failure)"
  fi
  # the default action of SIGXFSZ kills the process: still no core dump or abort
  rc=$( (ulimit -f 64; timeout 120 "$BLKC" run "$DATA/vadd.blk" N=100000 --random \
         --out C="$T/d.npy" >"$T/out" 2>"$T/err"; echo $?) )
  case $rc in
    3) echo "ok   SIGXFSZ not ignored: exit 3: $(cat "$T/err")" ;;
    153) known "SIGXFSZ not ignored: killed by SIGXFSZ (exit 153); blkc could ignore SIGXFSZ to report EFBIG" ;;
    *) fail "SIGXFSZ not ignored: exit $rc" ;;
  esac
}

case_readonly_cwd() {
  mkdir "$T/ro"; cp "$DATA/vadd.blk" "$T/ro/"; chmod 555 "$T/ro"
  (cd "$T/ro" && timeout 120 "$BLKC" run vadd.blk N=100 --random --out C="$T/c.npy" \
     >"$T/out" 2>"$T/err"); rc=$?
  [ $rc = 0 ] || fail "run in a read-only directory: exit $rc: $(cat "$T/err")"
  [ "$(ls -A "$T/ro")" = vadd.blk ] || fail "files written to the working directory: $(ls -A "$T/ro")"
  [ -s "$T/c.npy" ] || fail "no output"
  (cd "$T/ro" && HOME="$T/ro" XDG_CACHE_HOME="$T/ro" timeout 120 "$BLKC" check vadd.blk \
     >"$T/out" 2>"$T/err"); rc=$?
  [ $rc = 0 ] || fail "check with HOME and XDG_CACHE_HOME read-only: exit $rc: $(cat "$T/err")"
  echo "ok   runs from a read-only directory and writes nothing there"
}

cat >"$T/wait.blk" <<'BLK'
kernel waiter(S: signal[4], X: f32[4]) grid(1) {
    wait(S[rank()] >= 1);
    X[0 +: 4] = zeros(f32, 4);
}
BLK
cat >"$T/dies.blk" <<'BLK'
kernel dies(S: signal[4], X: f32[4]) grid(1) {
    if rank() == 1 {
        wait(S[1] >= 1);
    } else {
        wait(peer(S, 1)[2] >= 1);
    }
    X[0 +: 4] = zeros(f32, 4);
}
BLK

need_ranks() {
  run_blkc run "$DATA/vadd.blk" N=4 --ranks=2
  if grep -q 'need the device tier' "$T/err"; then
    echo "skip: this blkc has no --ranks=N runs yet"; exit 77
  fi
}

case_wait_timeout() {
  local t0 t1
  t0=$(date +%s%N)
  BLKC_WAIT_TIMEOUT_MS=300 run_blkc run "$T/wait.blk"
  t1=$(date +%s%N)
  expect3 "wait never notified, 1 rank" "wait on S\[0\] timed out after 300 ms"
  [ $(( (t1 - t0) / 1000000 )) -lt 5000 ] || fail "took $(( (t1 - t0) / 1000000 )) ms"
  need_ranks
  BLKC_WAIT_TIMEOUT_MS=300 run_blkc run "$T/wait.blk" --ranks=2
  expect3 "wait never notified, 2 ranks" "rank [01].*wait on S\[[01]\] timed out after 300 ms"
  BLKC_WAIT_TIMEOUT_MS=0 run_blkc run "$T/wait.blk"
  echo "     BLKC_WAIT_TIMEOUT_MS=0: exit $rc $(head -1 "$T/err")"
  [ $rc = 3 ] || [ $rc = 2 ] || fail "BLKC_WAIT_TIMEOUT_MS=0: exit $rc"
  BLKC_WAIT_TIMEOUT_MS=banana run_blkc run "$T/wait.blk"
  echo "     BLKC_WAIT_TIMEOUT_MS=banana: exit $rc $(head -1 "$T/err")"
  case $rc in 2|3) ;; *) fail "BLKC_WAIT_TIMEOUT_MS=banana: exit $rc" ;; esac
}

case_rank_dies() {
  need_ranks
  local t0 t1 ms
  t0=$(date +%s%N)
  BLKC_WAIT_TIMEOUT_MS=1000 run_blkc run "$T/dies.blk" --ranks=3
  t1=$(date +%s%N); ms=$(( (t1 - t0) / 1000000 ))
  expect3 "rank 1 fails while ranks 0 and 2 wait on it" "rank [0-2].*timed out|rank [0-2].*failed|aborted"
  [ $ms -lt 6000 ] || fail "the world took $ms ms to stop (timeout 1000 ms)"
  echo "     stopped after $ms ms"
}

case_compile_oom() {
  sanitized && { echo "skip: sanitizer builds reserve terabytes of shadow memory"; exit 77; }
  local v r r0 i n_oom=0 n_known=0 n_parent=0 done_ok=0
  for i in $(seq 0 19); do
    printf 'kernel k%d<BLOCK = 256>(X: f32[R, N], Y: f32[R, N]) grid(R) {\n' $i
    printf '    let r = program_id(0);\n'
    printf '    let x = load(X[r, 0 +: BLOCK], pad = -inf);\n'
    printf '    let e = exp(x - max(x)) * %d.0;\n' $((i + 1))
    printf '    Y[r, 0 +: BLOCK] = e / sum(e) + tanh(x) * sigmoid(x);\n}\n'
  done >"$T/big.blk"
  export BLKC_CACHE_DISABLE=1
  for v in $(seq 150000 2000 400000); do
    r=$( (ulimit -v $v; BLKC_COMPILE_ISOLATE=1 timeout 120 "$BLKC" compile "$T/big.blk" \
          --emit=obj -o "$T/big.o" >/dev/null 2>"$T/err"; echo $?) )
    case $r in
      0) done_ok=1 ;;
      1|2) ;;
      3) one_line || fail "ulimit -v $v: exit 3 without a one-line message"
         if grep -q 'compile worker died: out of memory' "$T/err"; then
           n_oom=$((n_oom + 1))
           # the same limit without isolation
           r0=$( (ulimit -v $v; BLKC_COMPILE_ISOLATE=0 timeout 120 "$BLKC" compile "$T/big.blk" \
                  --emit=obj -o "$T/big.o" >/dev/null 2>"$T/err0"; echo $?) )
           [ "$r0" = 134 ] && n_known=$((n_known + 1))
         fi ;;
      134) # the parent still runs a little LLVM itself (target setup for
           # the cache key, ORC to link the object): input-independent,
           # a few MB, and within that band it can still abort
           if grep -q 'compile worker' "$T/err"; then
             fail "ulimit -v $v: the worker failed and then the parent aborted: $(head -2 "$T/err")"
           elif grep -Eq 'std::bad_alloc|LLVM ERROR: out of memory' "$T/err"; then
             n_parent=$((n_parent + 1))
           elif [ "$( (ulimit -v $v; "$BLKC" --version >/dev/null 2>&1; echo $?) )" != 0 ]; then
             : # at this limit blkc cannot even start (the shared libraries'
               # static constructors fail, e.g. "terminate called without
               # an active exception"): the edge of the exit-127 band
           else fail "ulimit -v $v: aborted: $(head -2 "$T/err")"; fi ;;
      127) # the loader could not map a library, or (at the band's
           # edge) allocate the initial thread's TLS
           grep -Eq 'error while loading shared libraries|cannot allocate TLS data structures' "$T/err" ||
             fail "ulimit -v $v: exit 127: $(head -1 "$T/err")" ;;
      *) fail "ulimit -v $v (isolated): exit $r: $(head -2 "$T/err")" ;;
    esac
    [ $r = 0 ] || echo "     ulimit -v $v: exit $r $(head -1 "$T/err" | cut -c1-110)"
    [ $done_ok = 1 ] && break
  done
  [ $done_ok = 1 ] || fail "the isolated compile never succeeded up to ulimit -v 400000"
  [ $n_oom -gt 0 ] || fail "no limit made the worker run out of memory"
  echo "     $n_oom limits: the worker ran out of memory and blkc exited 3; in-process, $n_known of them aborted (exit 134)"
  # (in-process compilation cannot survive LLVM's OOM abort: documented
  # in docs/limits.md, not a defect to fix, so not KNOWN)
  [ $n_parent -gt 0 ] && known "at $n_parent limit(s) LLVM aborted in the parent itself (target setup or ORC linking, before or after the worker), exit 134"
  run_blkc compile "$T/big.blk" --emit=obj -o "$T/big.o"
  BLKC_COMPILE_ISOLATE=1 BLKC_COMPILE_MEM_MB=4 run_blkc compile "$T/big.blk" --emit=obj -o "$T/big2.o"
  expect3 "BLKC_COMPILE_MEM_MB=4" "compile worker died: out of memory \(limit 4 MB\)"
  [ -e "$T/big2.o" ] && fail "an object was written after the failure"
  BLKC_COMPILE_ISOLATE=1 BLKC_COMPILE_MEM_MB=512 run_blkc compile "$T/big.blk" --emit=obj -o "$T/big2.o"
  [ $rc = 0 ] && cmp -s "$T/big.o" "$T/big2.o" ||
    fail "BLKC_COMPILE_MEM_MB=512: exit $rc, or an object unlike the in-process one"
  BLKC_COMPILE_ISOLATE=1 BLKC_COMPILE_WORKER=/nonexistent/blkc-cc run_blkc compile "$T/big.blk" --emit=obj -o "$T/big3.o"
  expect3 "a missing worker" "compile worker '/nonexistent/blkc-cc' \(BLKC_COMPILE_WORKER\) cannot be run"
  return 0
}

declare -F "case_$CASE" >/dev/null || { echo "no such case $CASE"; exit 2; }
"case_$CASE"
[ $bad = 0 ] && echo "ok [$CASE]"
exit $bad
