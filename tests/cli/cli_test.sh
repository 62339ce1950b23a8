#!/usr/bin/env bash
# cli_test.sh BLKC NPYTOOL DATADIR CASE — one CLI test case (a function
# below): runs `blkc`, checks its exit status, its message and, for runs
# that write --out files, the .npy bytes (read back with npytool, which is
# independent of blkc's runtime). Registered case by case in CMakeLists.txt.
set -u
BLKC=$1 NPY=$2 DATA=$3 CASE=$4
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL [$CASE]: $*" >&2; exit 1; }

# expect CODE PATTERN -- blkc args...: exit status CODE and PATTERN (grep -E)
# in stdout+stderr ("" = anything).
expect() {
  local code=$1 pat=$2; shift 3
  "$BLKC" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  cat "$T/out" "$T/err" >"$T/all"
  [ "$rc" = "$code" ] || { cat "$T/all" >&2; fail "blkc $* exited $rc, wanted $code"; }
  if [ -n "$pat" ] && ! grep -Eq -- "$pat" "$T/all"; then
    cat "$T/all" >&2; fail "blkc $* did not print /$pat/"
  fi
}
# runtime errors are one line: blkc: error: ...
one_line_error() {
  [ "$(wc -l <"$T/err")" = 1 ] && grep -q '^blkc: error: ' "$T/err" ||
    { cat "$T/err" >&2; fail "not a one-line 'blkc: error:' message"; }
}
# dump FILE EXPECTED: the npytool dump of FILE equals EXPECTED
dump_is() {
  local got; got=$("$NPY" dump "$1") || fail "cannot read $1"
  [ "$got" = "$2" ] || fail "$1: got '$got', wanted '$2'"
}
seq8() { echo 0 1 2 3 4 5 6 7; }
# raw_npy DICT [DATA]: a version 1.0 .npy image with header DICT on stdout
raw_npy() {
  local n=$(( ${#1} + 1 ))
  printf '\x93NUMPY\x01\x00'
  printf "\\$(printf %03o $((n & 255)))\\$(printf %03o $((n >> 8)))"
  printf '%s\n%s' "$1" "${2:-}"
}
vadd_inputs() {
  "$NPY" write "$T/a.npy" '<f4' 8 $(seq8)
  "$NPY" write "$T/b.npy" '<f4' 8 10 10 10 10 10 10 10 0.5
}

# ------------------------------------------------------------ usage: exit 2
case_no_args()          { expect 2 "usage" -- ; }
case_unknown_command()  { expect 2 "unknown command 'frobnicate'" -- frobnicate x.blk; }
case_unknown_flag()     { expect 2 "unknown option '--frob'" -- run "$DATA/vadd.blk" --frob; }
case_flag_wrong_cmd()   { expect 2 "unknown option '--emit'" -- run "$DATA/vadd.blk" --emit=core; }
case_missing_file_arg() { expect 2 "missing FILE" -- run --random; }
case_bad_define()       { expect 2 "bad -D '3x=1'" -- check "$DATA/vadd.blk" -D 3x=1; }
case_bad_define_value() { expect 2 "bad -D 'BLOCK=abc'" -- check "$DATA/vadd.blk" -DBLOCK=abc; }
case_bad_define_noeq()  { expect 2 "bad -D" -- check "$DATA/vadd.blk" -D BLOCK; }
case_bad_ab() {
  expect 2 "^blkc: error: bad --ab 'x': expected NAME=VALUE \(an environment variable\) \(see 'blkc run --help'\)$" -- run "$DATA/vadd.blk" N=4 --bench=2 --ab=x
  one_line_error
  expect 2 "^blkc: error: bad --ab '3X=1'" -- run "$DATA/vadd.blk" N=4 --bench=2 --ab=3X=1
  expect 2 "^blkc: error: bad --ab '=1'" -- run "$DATA/vadd.blk" N=4 --bench=2 --ab==1
  local need="^blkc: error: --ab times one kernel on the CPU against its B build: it needs --bench=N, and no --device, --ranks or --tune \(see 'blkc run --help'\)$"
  expect 2 "$need" -- run "$DATA/vadd.blk" N=4 --ab=BLKC_CPU_NOFUSE=1
  one_line_error
  expect 2 "$need" -- run "$DATA/vadd.blk" N=4 --bench=2 --ab=BLKC_CPU_NOFUSE=1 --device=cuda-emu
  expect 2 "$need" -- run "$DATA/vadd.blk" N=4 --bench=2 --ab=BLKC_CPU_NOFUSE=1 --ranks=2
  expect 2 "^blkc: error: --ab times one kernel: 'attention' is a task \(see 'blkc run --help'\)$" -- \
    run "$DATA/../../task/attention.blk" --bench=2 --ab=BLKC_CPU_NOFUSE=1
}
case_bad_grid()         { expect 2 "bad --grid '0,1'" -- run "$DATA/vadd.blk" N=4 --grid=0,1; }
case_bad_grid_text() {
  expect 2 "bad --grid 'a'" -- run "$DATA/vadd.blk" N=4 --grid=a
  expect 2 "bad --grid ''" -- run "$DATA/vadd.blk" N=4 --grid=
  expect 2 "bad --grid '1,'" -- run "$DATA/vadd.blk" N=4 --grid=1,
}
case_bad_grid_four()    { expect 2 "bad --grid" -- run "$DATA/vadd.blk" N=4 --grid=1,1,1,1; }
case_bad_device()       { expect 2 "bad --device 'tpu'" -- run "$DATA/vadd.blk" N=4 --device=tpu; }
case_bad_ranks()        { expect 2 "bad --ranks" -- run "$DATA/vadd.blk" N=4 --ranks=0; }
case_bad_bench()        { expect 2 "bad --bench" -- run "$DATA/vadd.blk" N=4 --bench=x; }
case_bad_out()          { expect 2 "bad --out" -- run "$DATA/vadd.blk" N=4 --out C; }
case_out_not_tensor()   { expect 2 "no tensor parameter Q" -- run "$DATA/vadd.blk" N=4 --out Q=q.npy; }
case_ambiguous_entry()  { expect 2 "2 kernels.*kernel first, kernel second" -- run "$DATA/two.blk" N=4; }
case_unknown_entry()    { expect 2 "no kernel or device function named 'nope'" -- run "$DATA/two.blk" --entry=nope N=4; }
case_missing_size()     { expect 2 "missing size N" -- run "$DATA/vadd.blk"; }
case_unknown_arg()      { expect 2 "no parameter or size 'Q'" -- run "$DATA/vadd.blk" Q=3; }
case_bad_arg()          { expect 2 "bad argument 'oops'" -- run "$DATA/vadd.blk" oops; }
case_tensor_needs_at()  { expect 2 "A is a tensor" -- run "$DATA/vadd.blk" A=3; }
case_scalar_no_at()     { expect 2 "a is a f32 scalar" -- run "$DATA/scale.blk" N=8 a=@x.npy b=1; }
case_missing_scalar()   { expect 2 "missing value for scalar parameter a" -- run "$DATA/scale.blk" N=8 b=1; }
case_bad_scalar()       { expect 2 "bad value 'x' for b" -- run "$DATA/scale.blk" N=8 a=1 b=x; }
case_scalar_range()     { expect 2 "bad value '99999999999' for b" -- run "$DATA/scale.blk" N=8 a=1 b=99999999999; }
case_twice()            { expect 2 "given twice" -- run "$DATA/vadd.blk" N=4 N=5; }
case_bad_stage()        { expect 2 "unknown stage 'bogus'" -- compile "$DATA/vadd.blk" --emit=bogus; }
case_bad_target()       { expect 2 "bad --target 'tpu'" -- compile "$DATA/vadd.blk" --target=tpu; }
case_extra_arg()        { expect 2 "unexpected argument" -- check "$DATA/vadd.blk" more.blk; }
case_plan()             { expect 2 "no task named 'vadd'" -- plan "$DATA/vadd.blk" --entry=vadd --ranks=2; }
case_needs_value()      { expect 2 "needs a value" -- run "$DATA/vadd.blk" --seed; }

# ------------------------------------------------------------ compile: exit 1
case_compile_error() {
  expect 1 "bad.blk:4:[0-9]+: error: " -- check "$DATA/bad.blk"
  grep -q 'undefined_thing' "$T/err" || fail "no source line"
  grep -q '^ *\^$' "$T/err" || fail "no caret line"
  expect 1 "bad.blk:4:[0-9]+: error: " -- run "$DATA/bad.blk" N=4
}
case_missing_source() { expect 3 "cannot read" -- check "$T/nope.blk"; one_line_error; }

# ------------------------------------------------------------ runtime: exit 3
case_npy_missing() { expect 3 "cannot open" -- run "$DATA/vadd.blk" A=@"$T/none.npy" N=8; one_line_error; }
case_assert_fails() {
  "$NPY" write "$T/a.npy" '<f4' 8 0 1 2 3 4 -5 6 7
  expect 3 "assert\\.blk:5: kernel chk: assertion failed in program \\(1, 0, 0\\): A must be non-negative" \
    -- run "$DATA/assert.blk" A=@"$T/a.npy" --out C="$T/c.npy"
  one_line_error
  "$NPY" write "$T/a.npy" '<f4' 8 0 1 2 3 4 5 6 7
  expect 0 "" -- run "$DATA/assert.blk" A=@"$T/a.npy" --out C="$T/c.npy"
  dump_is "$T/c.npy" "<f4 (8,): 0 1 2 3 4 5 6 7"
}
case_run_print() {
  "$NPY" write "$T/a.npy" '<f4' 8 0 1 2 3 4 -5 6 7
  expect 0 "" -- run "$DATA/print.blk" A=@"$T/a.npy" --out C="$T/c.npy"
  local got; got=$(sort "$T/err")
  local want='pid (0, 0, 0): 100% "sum" 6 big false at 0
pid (1, 0, 0): 100% "sum" 12 big true at 4'
  [ "$got" = "$want" ] || fail "print lines: '$got'"
  local dev
  for dev in cuda-emu hip-emu; do # the device printf: stdout (the host's on the emulators)
    expect 0 "" -- run "$DATA/print.blk" A=@"$T/a.npy" --out C="$T/c.npy" --device=$dev
    got=$(sort "$T/all")
    [ "$got" = "$want" ] || fail "$dev print lines: '$got'"
  done
}
case_npy_garbled() {
  echo "this is not numpy" >"$T/g.npy"
  expect 3 "bad magic" -- run "$DATA/vadd.blk" A=@"$T/g.npy"; one_line_error
}
case_npy_truncated() {
  vadd_inputs; head -c 150 "$T/a.npy" >"$T/t.npy"
  expect 3 "truncated data" -- run "$DATA/vadd.blk" A=@"$T/t.npy"; one_line_error
}
case_npy_truncated_header() {
  vadd_inputs; head -c 40 "$T/a.npy" >"$T/t.npy"
  expect 3 "truncated header" -- run "$DATA/vadd.blk" A=@"$T/t.npy"; one_line_error
}
case_npy_extra_data() {
  vadd_inputs; cat "$T/a.npy" "$T/a.npy" >"$T/x.npy"
  expect 3 "extra data" -- run "$DATA/vadd.blk" A=@"$T/x.npy"; one_line_error
}
case_npy_bad_header() {
  raw_npy "{garbage}" >"$T/h.npy"
  expect 3 "malformed header" -- run "$DATA/vadd.blk" A=@"$T/h.npy"; one_line_error
}
case_npy_fortran() {
  raw_npy "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }" 1234 >"$T/f.npy"
  expect 3 "Fortran-order" -- run "$DATA/vadd.blk" A=@"$T/f.npy"; one_line_error
}
case_npy_complex() {
  raw_npy "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }" 12345678 >"$T/c.npy"
  expect 3 "unsupported dtype '<c8'" -- run "$DATA/vadd.blk" A=@"$T/c.npy"; one_line_error
}
case_npy_absurd_shape() {
  raw_npy "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,), }" >"$T/s.npy"
  expect 3 "truncated data" -- run "$DATA/vadd.blk" A=@"$T/s.npy"; one_line_error
  raw_npy "{'descr': '<f4', 'fortran_order': False, 'shape': (9999999999, 9999999999), }" >"$T/s.npy"
  expect 3 "absurd" -- run "$DATA/madd.blk" A=@"$T/s.npy"; one_line_error
  raw_npy "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }" 1234 >"$T/s.npy"
  expect 3 "more than 8 dimensions" -- run "$DATA/madd.blk" A=@"$T/s.npy"; one_line_error
  raw_npy "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }" >"$T/s.npy"
  expect 3 "malformed header" -- run "$DATA/vadd.blk" A=@"$T/s.npy"; one_line_error
}
case_wrong_dtype() {
  "$NPY" write "$T/a.npy" '<f8' 8 $(seq8)
  expect 3 "dtype mismatch: parameter A is f32 but .* holds f64" -- run "$DATA/vadd.blk" A=@"$T/a.npy"
  one_line_error
}
case_wrong_rank() {
  "$NPY" write "$T/a.npy" '<f4' 2x4 $(seq8)
  expect 3 "shape mismatch: parameter A has 1 dims" -- run "$DATA/vadd.blk" A=@"$T/a.npy"; one_line_error
}
case_wrong_static_extent() {
  "$NPY" write "$T/x.npy" '<i4' 4 1 2 3 4
  expect 3 "shape mismatch: parameter X dim 0 is 8" -- run "$DATA/ints.blk" X=@"$T/x.npy" k=1; one_line_error
}
case_size_mismatch() {
  "$NPY" write "$T/a.npy" '<f4' 8 $(seq8)
  "$NPY" write "$T/b.npy" '<f4' 4 1 2 3 4
  expect 3 "size mismatch: N is 8 from A but 4 from B" -- run "$DATA/vadd.blk" A=@"$T/a.npy" B=@"$T/b.npy"
  one_line_error
}
case_size_mismatch_cli() {
  "$NPY" write "$T/a.npy" '<f4' 8 $(seq8)
  expect 3 "size mismatch: N is 4 from the command line but 8 from A" -- run "$DATA/vadd.blk" N=4 A=@"$T/a.npy"
}
case_device_cuda() { expect 3 "not supported" -- run "$DATA/vadd.blk" N=4 --device=cuda:0; one_line_error; }
case_device_cuda_ranks() { # GPU ranks without a GPU (or without NCCL)
  expect 3 "running 2 ranks on cuda:0 is not supported here" -- run "$DATA/vadd.blk" N=4 --ranks=2 --device=cuda:0; one_line_error
  BLKC_NCCL_LIB=/nonexistent BLKC_GPU_COLL=nccl expect 3 "running 2 ranks on cuda:0 is not supported here" -- run "$DATA/vadd.blk" N=4 --ranks=2 --device=cuda:0; one_line_error
}
case_ranks()       { expect 0 "vadd: 2 ranks" -- run "$DATA/vadd.blk" N=4 --ranks=2; }
case_out_unwritable() { expect 3 "cannot write" -- run "$DATA/vadd.blk" N=4 --out C="$T/no/such/dir/c.npy"; one_line_error; }

# ------------------------------------------------------------ good runs: exit 0
case_version() { expect 0 "^blkc [0-9]+\.[0-9]+\.[0-9]+" -- --version; }
case_help()    { expect 0 "commands:" -- --help; expect 0 "NAME=@PATH.npy" -- run --help; }
case_check_ok() {
  expect 0 "" -- check "$DATA/vadd.blk"
  [ ! -s "$T/all" ] || fail "check printed something"
  expect 0 "" -- check "$DATA/vadd.blk" -D BLOCK=8
}
case_run_vadd() {
  vadd_inputs
  expect 0 "" -- run "$DATA/vadd.blk" A=@"$T/a.npy" B=@"$T/b.npy" --out C="$T/c.npy"
  dump_is "$T/c.npy" "<f4 (8,): 10 11 12 13 14 15 16 7.5"
}
case_run_vadd_tail() { # N = 20 is not a multiple of BLOCK = 16
  "$NPY" write "$T/a.npy" '<f4' 20 $(seq 1 20)
  expect 0 "" -- run "$DATA/vadd.blk" A=@"$T/a.npy" --out C="$T/c.npy" --out A="$T/a2.npy"
  dump_is "$T/c.npy" "<f4 (20,): $(seq -s ' ' 1 20)"
  cmp -s "$T/a.npy" "$T/a2.npy" || fail "A did not round-trip byte for byte"
}
case_run_summary() { expect 0 "^vadd: grid \(3, 1, 1\), [0-9.]+ ms" -- run "$DATA/vadd.blk" N=40; }
case_run_define()  { expect 0 "^vadd: grid \(5, 1, 1\)" -- run "$DATA/vadd.blk" N=40 -D BLOCK=8; }
case_run_bench()   { expect 0 "bench 3 runs: min [0-9.]+ ms, median [0-9.]+ ms" -- run "$DATA/vadd.blk" N=40 --bench=3; }
# --ab: both builds timed, alternated; --out writes A's results (the same
# bytes as a plain run), for an odd and an even number of pairs
case_run_ab() {
  local n
  for n in 3 4; do
    expect 0 "" -- run "$DATA/vadd.blk" N=40 --random --seed=5 --out C="$T/c.npy"
    expect 0 "" -- run "$DATA/vadd.blk" N=40 --random --seed=5 --bench=$n --ab=BLKC_CPU_NOFUSE=1 \
      --out C="$T/c_ab.npy"
    grep -Eq "^vadd: bench $n runs: min [0-9.]+ ms, median [0-9.]+ ms$" "$T/out" &&
      grep -Eq "^vadd: bench B \(BLKC_CPU_NOFUSE=1\): min [0-9.]+ ms, median [0-9.]+ ms$" "$T/out" &&
      grep -Eq "^vadd: bench B / A: [0-9.]+ \(median of $n alternated pairs\)$" "$T/out" ||
      { cat "$T/all" >&2; fail "--bench=$n --ab: not the three bench lines"; }
    cmp -s "$T/c.npy" "$T/c_ab.npy" || fail "--ab --out: not A's results"
  done
}
case_run_random() {
  expect 0 "" -- run "$DATA/vadd.blk" N=8 --random --seed=5 --out C="$T/c1.npy"
  expect 0 "" -- run "$DATA/vadd.blk" N=8 --random --seed=5 --out C="$T/c2.npy"
  expect 0 "" -- run "$DATA/vadd.blk" N=8 --random --seed=6 --out C="$T/c3.npy"
  expect 0 "" -- run "$DATA/vadd.blk" N=8 --random --seed=5 --out A="$T/a.npy"
  cmp -s "$T/c1.npy" "$T/c2.npy" || fail "same seed, different data"
  cmp -s "$T/c1.npy" "$T/c3.npy" && fail "different seeds, same data"
  "$NPY" dump "$T/a.npy" | tr ' ' '\n' | tail -n +3 |
    awk '{ if ($1 < -1 || $1 >= 1) bad = 1 } END { exit bad }' || fail "random value outside [-1, 1)"
  expect 0 "" -- run "$DATA/vadd.blk" N=8 --out C="$T/z.npy"
  dump_is "$T/z.npy" "<f4 (8,): 0 0 0 0 0 0 0 0"
}
case_run_scalars() {
  "$NPY" write "$T/x.npy" '<f4' 8 $(seq8)
  expect 0 "" -- run "$DATA/scale.blk" X=@"$T/x.npy" a=2.5 b=-1 --out Y="$T/y.npy"
  dump_is "$T/y.npy" "<f4 (8,): -1 1.5 4 6.5 9 11.5 14 16.5"
}
case_run_ints() {
  "$NPY" write "$T/x.npy" '<i4' 8 $(seq8)
  expect 0 "" -- run "$DATA/ints.blk" X=@"$T/x.npy" k=-3 --out Y="$T/y.npy"
  dump_is "$T/y.npy" "<i4 (8,): -3 -2 -1 0 1 2 3 4"
}
case_run_half() {
  # bf16: 1.00390625 = 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> even (1);
  # 1.01171875 = 1 + 3*2^-8 ties -> 1 + 2^-6 (even mantissa 2). Results are f32.
  "$NPY" write "$T/x.npy" '<f8' 8 1.00390625 1.01171875 -2 0.5 3 0 -0.25 100
  "$NPY" write "$T/h.npy" '<f4' 8 1 0.5 -2 1.00048828125 65504 0 0.1 7
  expect 0 "" -- run "$DATA/half.blk" X=@"$T/x.npy" H=@"$T/h.npy" --out Y="$T/y.npy" --out G="$T/g.npy"
  dump_is "$T/y.npy" "<f4 (8,): 1 1.015625 -2 0.5 3 0 -0.25 100"
  # f16: 1 + 2^-11 ties to 1; 0.1 -> 0.0999755859 (nearest f16)
  dump_is "$T/g.npy" "<f2 (8,): 1 0.5 -2 1 65504 0 0.0999755859 7"
}
case_run_2d() {
  "$NPY" write "$T/a.npy" '<f4' 2x3 1 2 3 4 5 6
  "$NPY" write "$T/b.npy" '<f4' 2x3 10 20 30 40 50 60
  expect 0 "" -- run "$DATA/madd.blk" A=@"$T/a.npy" B=@"$T/b.npy" --out C="$T/c.npy"
  dump_is "$T/c.npy" "<f4 (2, 3): 11 22 33 44 55 66"
}
case_run_grid_override() {
  "$NPY" write "$T/a.npy" '<f4' 20 $(seq 1 20)
  expect 0 "" -- run "$DATA/vadd.blk" A=@"$T/a.npy" --grid=1 --out C="$T/c.npy"
  dump_is "$T/c.npy" "<f4 (20,): $(seq -s ' ' 1 16) 0 0 0 0"
}
case_run_entry() {
  expect 0 "" -- run "$DATA/two.blk" --entry=second N=4 --out X="$T/x.npy"
  dump_is "$T/x.npy" "<f4 (4,): 2 2 2 2"
}
case_run_rank_path() {
  expect 0 "" -- run "$DATA/vadd.blk" N=2 --out C="$T/c{rank}.npy"
  [ -f "$T/c0.npy" ] || fail "{rank} was not replaced by 0"
}
case_compile_stages() {
  expect 0 "vadd" -- compile "$DATA/vadd.blk" --emit=ast
  expect 0 "vadd" -- compile "$DATA/vadd.blk" --emit=core
  expect 0 "vadd" -- compile "$DATA/vadd.blk" --emit=core --entry=vadd -o -
  expect 0 "define" -- compile "$DATA/vadd.blk" --emit=llvm
  expect 0 "" -- compile "$DATA/vadd.blk" --emit=core -o "$T/v.core"
  grep -q vadd "$T/v.core" || fail "-o did not write the core IR"
  expect 0 "" -- compile "$DATA/vadd.blk" --emit=obj -o "$T/v.o"
  [ -s "$T/v.o" ] || fail "no object file"
  expect 2 "no kernel named 'zz'" -- compile "$DATA/vadd.blk" --emit=core --entry=zz
  expect 2 "has no task" -- compile "$DATA/vadd.blk" --emit=task
  expect 0 "all_reduce %5 \[inserted\]" -- compile "$DATA/../../task/mlp.blk" --emit=task
  # gpu-ir: Core IR with the GPU layouts (the stage selects cuda)
  expect 0 "// kernel vadd \(CUDA C\): blockDim.x = 128" -- compile "$DATA/vadd.blk" --emit=gpu-ir
  expect 0 "// kernel vadd \(HIP C\): blockDim.x = 256" -- compile "$DATA/vadd.blk" --target=hip --emit=gpu-ir
  expect 2 "no stage 'gpu-ir' for target cpu" -- compile "$DATA/vadd.blk" --target=cpu --emit=gpu-ir
}

declare -F "case_$CASE" >/dev/null || fail "no such case"
"case_$CASE"
echo "ok [$CASE]"
