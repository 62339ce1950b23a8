#!/bin/bash
# cache_cli.sh BLKC SRCDIR WORKDIR — the CLI goes through the cache: a
# second `compile` is a hit; `cache stats|clear`; an unwritable cache dir
# degrades to memory only without an error; BLKC_CACHE_DISABLE=1.
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
"$blkc" cache clear | grep -q "removed" || fail "clear"
n3=$("$blkc" cache stats | awk '/^entries:/ {print $2}')
[ "$n3" = 0 ] || fail "entries after clear: $n3"
BLKC_CACHE_DIR=/proc/blkc-unwritable "$blkc" run "$src/examples/vector_add.blk" N=100 >/dev/null || fail "unwritable dir"
BLKC_CACHE_DISABLE=1 "$blkc" cache stats | grep -q disabled || fail "disable"
echo ok
