#!/usr/bin/env bash
# package_test.sh BUILD_DIR SRC_DIR WORK_DIR CMAKE CC
# Installs the build into a temp prefix, then builds two consumers: a CMake
# project using find_package(blkc) with blkc::blkc and blkc::runtime, and
# the same sources with pkg-config (blkc, blkc_runtime; the .pc files must
# find the prefix themselves). Both run.
set -eu
[ "${BLKC_SANITIZED:-}" = 1 ] && { echo "skipped: sanitizer build"; exit 77; }
build=$1 src=$2 work=$3 cmake=$4 cc=$5
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
libdir=$(dirname "$(find "$prefix" -name 'libblkc_runtime.so' | head -1)")
test -f "$prefix/include/blkc/blkc_runtime.h"
test -f "$libdir/cmake/blkc/blkcConfig.cmake"

# the installed blkc writes the AOT pair the consumers build
mkdir -p "$work/aot"
LD_LIBRARY_PATH=$libdir "$prefix/bin/blkc" compile "$src/kernels.blk" \
    --emit=aot -o "$work/aot/kern"

# 1. CMake: find_package(blkc)
"$cmake" -S "$src/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DAOT_DIR="$work/aot" -DDRIVER="$src/aot_driver.c" \
    >"$work/cmake.log"
"$cmake" --build "$work/cmake" >>"$work/cmake.log"
LD_LIBRARY_PATH=$libdir "$work/cmake/use_blkc"
LD_LIBRARY_PATH=$libdir "$work/cmake/use_aot"

# 2. pkg-config
if ! command -v pkg-config >/dev/null; then
    echo "skip: no pkg-config"
    exit 77
fi
# relocatable .pc files: the prefix comes from ${pcfiledir}, not from the
# configure-time CMAKE_INSTALL_PREFIX
export PKG_CONFIG_PATH=$libdir/pkgconfig
for p in blkc blkc_runtime; do
    grep -q '^prefix=${pcfiledir}/' "$libdir/pkgconfig/$p.pc" ||
        { echo "$p.pc is not relocatable:"; cat "$libdir/pkgconfig/$p.pc"; exit 1; }
    got=$(cd "$(pkg-config --variable=prefix $p)" && pwd -P)
    [ "$got" = "$(cd "$prefix" && pwd -P)" ] ||
        { echo "$p.pc: prefix $got, expected $prefix"; exit 1; }
done
# shellcheck disable=SC2046
"$cc" -std=c11 "$src/consumer/use_blkc.c" $(pkg-config --cflags --libs blkc) \
    -o "$work/use_blkc_pc"
# shellcheck disable=SC2046
"$cc" -std=c11 -I"$work/aot" "$work/aot/kern.c" "$src/aot_driver.c" \
    $(pkg-config --cflags --libs blkc_runtime) -o "$work/use_aot_pc"
LD_LIBRARY_PATH=$libdir "$work/use_blkc_pc"
LD_LIBRARY_PATH=$libdir "$work/use_aot_pc"
echo "package: ok"
