#!/bin/bash
# cache_cli.sh BLKC SRCDIR WORKDIR — the CLI goes through the cache: a
# second `compile` is a hit; `cache stats|clear`; an unwritable cache dir
# degrades to memory only without an error; BLKC_CACHE_DISABLE=1; device
# functions on ranks and tasks are cached as kernels are.
set -u
blkc=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
export BLKC_CACHE_DIR=$work/c
fail() { echo "FAIL: $*"; exit 1; }
"$blkc" compile "$src/examples/matmul.blk" -o "$work/a.o" || fail "compile 1"
n1=$("$blkc" cache stats | awk '/^entries:/ {print $2}')
[ "$n1" -ge 1 ] || fail "no entry after compile ($n1)"
"$blkc" compile "$src/examples/matmul.blk" -o "$work/b.o" || fail "compile 2"
cmp -s "$work/a.o" "$work/b.o" || fail "cached object differs"
n2=$("$blkc" cache stats | awk '/^entries:/ {print $2}')
[ "$n1" = "$n2" ] || fail "second compile added entries ($n1 -> $n2)"
"$blkc" run "$src/examples/vector_add.blk" N=1000 --random --out C="$work/c1.npy" || fail "run 1"
"$blkc" run "$src/examples/vector_add.blk" N=1000 --random --out C="$work/c2.npy" || fail "run 2"
cmp -s "$work/c1.npy" "$work/c2.npy" || fail "cached run differs"
# corrupt every entry: still correct, entries rewritten
for f in "$work"/c/*.blkc; do printf 'garbage' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null; done
"$blkc" run "$src/examples/vector_add.blk" N=1000 --random --out C="$work/c3.npy" || fail "run after corruption"
cmp -s "$work/c1.npy" "$work/c3.npy" || fail "run after corruption differs"
# truncated entries too
for f in "$work"/c/*.blkc; do truncate -s 50 "$f"; done
"$blkc" compile "$src/examples/matmul.blk" -o "$work/d.o" || fail "compile after truncation"
cmp -s "$work/a.o" "$work/d.o" || fail "object after truncation differs"
"$blkc" run "$src/examples/vector_add.blk" N=1000 --random --tune BLOCK=128,256 --out C="$work/c4.npy" 2>"$work/tune1.txt" || fail "tune 1"
grep -q "tune: best" "$work/tune1.txt" || fail "no tune result"
cmp -s "$work/c1.npy" "$work/c4.npy" || fail "tuned run differs"
"$blkc" run "$src/examples/vector_add.blk" N=1000 --random --tune BLOCK=128,256 2>"$work/tune2.txt" >/dev/null || fail "tune 2"
grep -q "(cached)" "$work/tune2.txt" || fail "tune choice not cached"
# device functions on ranks and tasks go through the cache too: a rerun
# adds no entry and gives the same bits. rerun FILE OUT ARGS...: OUT is an
# --out spec with @ for the file's stem
rerun() {
  local f=$1 out=$2 n0 n1 n2 o; shift 2
  n0=$("$blkc" cache stats | awk '/^entries:/ {print $2}')
  "$blkc" run "$src/$f" --random "$@" --out "${out/@/$work/r1}" >/dev/null || fail "$f run 1"
  n1=$("$blkc" cache stats | awk '/^entries:/ {print $2}')
  [ "$n1" -gt "$n0" ] || fail "$f: no entry after the first run ($n0 -> $n1)"
  "$blkc" run "$src/$f" --random "$@" --out "${out/@/$work/r2}" >/dev/null || fail "$f run 2"
  n2=$("$blkc" cache stats | awk '/^entries:/ {print $2}')
  [ "$n1" = "$n2" ] || fail "$f: the second run added entries ($n1 -> $n2)"
  for o in "$work"/r1*.npy; do cmp -s "$o" "${o/r1/r2}" || fail "$f: cached run differs ($o)"; done
  rm -f "$work"/r[12]*.npy
}
rerun lib/allreduce.blk "y=@_{rank}.npy" --entry=allreduce_twoshot --ranks=2 N=1001 op=0
rerun tests/task/mlp.blk "result=@.npy" --ranks=2 T=16 H=16 F=32
# every GPU emitter switch is in the key (compiler/cache.c JC_GPU_SWITCHES):
# a compile under each adds its own entry, a second one under it none
gent() { "$blkc" cache stats | awk '/^entries:/ {print $2}'; }
if "$blkc" compile "$src/examples/matmul.blk" --target=cuda --emit=ptx >/dev/null 2>&1; then
for sw in SMEM NORV NOMROW NOFMA NOPERSIST NOTMASTORE NOEX2FTZ NOLDSMXOR NOCPIMM NOWGREG \
          NOVEC NOPIPE NOSYNCELIM NOHOIST NOTMA WGSYNC NOWS NOLOOPSPLIT NOCPLIM32 NOCPGUARD32 \
          NOWGKEEP NOQKPIPE NOTMAQ NOFRAGPIPE NOHIPSTAGE; do
  gb=$(gent)
  env "BLKC_GPU_$sw=1" "$blkc" compile "$src/examples/matmul.blk" --target=cuda --emit=ptx >/dev/null ||
    fail "cuda compile with BLKC_GPU_$sw"
  gc=$(gent)
  [ "$gc" -gt "$gb" ] || fail "BLKC_GPU_$sw=1 reused another setting's entry ($gb -> $gc)"
  env "BLKC_GPU_$sw=1" "$blkc" compile "$src/examples/matmul.blk" --target=cuda --emit=ptx >/dev/null
  [ "$(gent)" = "$gc" ] || fail "BLKC_GPU_$sw=1: the second compile added an entry"
done
else
  echo "skip: the GPU switches in the key (no NVRTC: --target=cuda --emit=ptx failed)"
fi
"$blkc" cache clear | grep -q "removed" || fail "clear"
n3=$("$blkc" cache stats | awk '/^entries:/ {print $2}')
[ "$n3" = 0 ] || fail "entries after clear: $n3"
BLKC_CACHE_DIR=/proc/blkc-unwritable "$blkc" run "$src/examples/vector_add.blk" N=100 >/dev/null || fail "unwritable dir"
BLKC_CACHE_DISABLE=1 "$blkc" cache stats | grep -q disabled || fail "disable"
echo ok
