#!/usr/bin/env bash
# gpu_run_deadline.sh BLKC SRCDIR FAKEDIR [VENDOR] — the deadline of
# `blkc run --device=GPU`'s wait for its kernel (runtime/gpu_launch.c,
# kernel_wait), over the fake libcuda.so.1 (VENDOR cuda, the default) or
# libamdhip64.so (hip) in FAKEDIR: the kernel is a no-op launch and the
# default stream never drains ($FAKE_GPU_SYNC_HANG=0, tests/gpu/fake_mem.h),
# as if the kernel never ended. With BLKC_COLL_TIMEOUT_MS, or only
# BLKC_WAIT_TIMEOUT_MS (4 x, at least 1 s), set: exit 3 and one line
# naming the kernel and the deadline; the --bench runs get the deadline
# once per run; the uploads, the copies back and the read of a kernel's
# failure record get it for each chunk. Exact messages, no window on the
# time (each run is killed
# after 60 s). Exit 77 when the kernel cannot be compiled (no NVRTC).
set -u
BLKC=$1 SRC=$2 FAKE=$3 VENDOR=${4:-cuda}
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-gdeadline.XXXXXX")
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FAKE_CUDA_LAUNCH_NOOP=1 FAKE_HIP_LAUNCH_NOOP=1
unset BLKC_COLL_TIMEOUT_MS BLKC_WAIT_TIMEOUT_MS FAKE_GPU_SYNC_HANG FAKE_GPU_STREAM_HANG
V=$SRC/tests/cli/data/vadd.blk DEV=$VENDOR:0
fails=0 n=0
# the kernel runs (no hang, no deadline): else skip (no NVRTC here)
if ! timeout 120 "$BLKC" run "$V" N=4 --device="$DEV" >"$T/log" 2>&1; then
  echo "skip: $(cat "$T/log")"; exit 77
fi
# exact NAME LINE ARGS...: exit 3, the output exactly LINE
exact() {
  local name=$1 line=$2 rc; shift 2
  n=$((n + 1))
  timeout 60 "$BLKC" "$@" >"$T/log" 2>&1; rc=$?
  if [ $rc -ne 3 ] || [ "$(cat "$T/log")" != "$line" ]; then
    echo "FAIL $name: wanted exit 3 and '$line', got $rc: $(cat "$T/log")"
    fails=$((fails + 1)); return
  fi
  echo "ok $name ($line)"
}
SETS="(the deadline that BLKC_COLL_TIMEOUT_MS or BLKC_WAIT_TIMEOUT_MS sets)"
FAKE_GPU_SYNC_HANG=0 BLKC_COLL_TIMEOUT_MS=300 exact coll_timeout \
  "blkc: error: kernel vadd did not complete within 300 ms $SETS" \
  run "$V" N=4 --device="$DEV"
FAKE_GPU_SYNC_HANG=0 BLKC_WAIT_TIMEOUT_MS=300 exact wait_timeout \
  "blkc: error: kernel vadd did not complete within 1200 ms $SETS" \
  run "$V" N=4 --device="$DEV"
FAKE_GPU_SYNC_HANG=0 BLKC_WAIT_TIMEOUT_MS=100 BLKC_COLL_TIMEOUT_MS=250 exact both_set \
  "blkc: error: kernel vadd did not complete within 250 ms $SETS" \
  run "$V" N=4 --device="$DEV"
# the first run drains, the bench's wait never does
FAKE_GPU_SYNC_HANG=0@2 BLKC_COLL_TIMEOUT_MS=300 exact bench_timeout \
  "blkc: error: the 3 --bench runs of kernel vadd did not complete within 900 ms $SETS" \
  run "$V" N=4 --bench=3 --device="$DEV"
# with a deadline the copies go through a pinned staging buffer, each an
# asynchronous copy on a stream of the run's own (runtime/gpu_run.c,
# host_copy): that stream never drains from its N-th wait on
# ($FAKE_GPU_STREAM_HANG=0@N, fake_mem.h; vadd's waits: 1..3 the uploads
# of A, B, C, 4..6 the copies back): exit 3 at the deadline, naming the
# copy. Not under the sanitizers (BLKC_SANITIZED=1).
if [ "${BLKC_SANITIZED:-}" != 1 ]; then
  FAKE_GPU_STREAM_HANG=0@1 BLKC_COLL_TIMEOUT_MS=300 exact upload_timeout \
    "blkc: error: the upload of A to the device did not complete within 300 ms $SETS" \
    run "$V" N=4 --device="$DEV"
  FAKE_GPU_STREAM_HANG=0@6 BLKC_COLL_TIMEOUT_MS=300 exact results_timeout \
    "blkc: error: the copy of C to the host did not complete within 300 ms $SETS" \
    run "$V" N=4 --device="$DEV"
  # a lone kernel with rank builtins (gforever.blk's spin: rank 0 of 1):
  # the read of its failure record once it ended is staged the same way,
  # on the module's own stream (runtime/gpu_launch.c, check_fail); the
  # waits: 1 the upload of x, 2 that read
  FAKE_GPU_STREAM_HANG=0@2 BLKC_COLL_TIMEOUT_MS=300 exact fail_record_timeout \
    "blkc: error: the read of kernel spin's failure record did not complete within 300 ms $SETS" \
    run "$SRC/tests/gpu/data/gforever.blk" --entry=spin N=16 --device="$DEV"
fi
# the record that staged read gets is the kernel's: the fakes' stand-in
# kernel (FAKE_GPU_WAIT_KERNEL=spin, tests/gpu/fake_mem.h; rank 0 of 1)
# times out its wait and says so in it
FAKE_GPU_WAIT_KERNEL=spin BLKC_WAIT_TIMEOUT_MS=200 exact fail_record_read \
  "blkc: error: kernel spin on rank 0: wait on x[0] timed out after 200 ms (waiting for 1, saw 0)" \
  run "$SRC/tests/gpu/data/gforever.blk" --entry=spin N=16 --device="$DEV"
# a deadline set and a kernel that ends: the run as usual
n=$((n + 1))
if BLKC_COLL_TIMEOUT_MS=300 timeout 60 "$BLKC" run "$V" N=4 --bench=2 --device="$DEV" >"$T/log" 2>&1 &&
   grep -q "^vadd: bench 2 runs" "$T/log"; then
  echo "ok deadline_kept"
else
  echo "FAIL deadline_kept: $(cat "$T/log")"; fails=$((fails + 1))
fi
echo "$((n - fails))/$n passed"
[ $fails = 0 ]
