#!/usr/bin/env bash
# aot_test.sh cpu|cuda BLKC SRC_DIR INCLUDE_DIR RUNTIME_DIR CC WORK_DIR
# cpu:  compile kernels.blk with --emit=aot, build the pair with plain
#       `cc -std=c11` plus aot_driver.c, link libblkc_runtime only (shared,
#       then static), run. Also checks that two AOT files link together.
# cuda: --target=cuda --emit=aot, compile the .c and link it with
#       libblkc_runtime (not run). Exit 77 when NVRTC is absent.
set -eu
[ "${BLKC_SANITIZED:-}" = 1 ] && { echo "skipped: sanitizer build"; exit 77; }
mode=$1 blkc=$2 src=$3 inc=$4 rtdir=$5 cc=$6 work=$7
rm -rf "$work"
mkdir -p "$work"
cd "$work"
cflags=(-std=c11 -O1 -Wall -Wextra -pedantic -Werror -I"$inc" -I.)

if [ "$mode" = cuda ]; then
    if ! "$blkc" compile "$src/kernels.blk" --target=cuda --arch=sm_90 \
            --emit=aot -o kcu 2>err.txt; then
        cat err.txt >&2
        if grep -q "NVRTC not found" err.txt; then
            echo "skip: NVRTC is not installed"
            exit 77
        fi
        exit 1
    fi
    grep -q "blkc_rt_cuda_launch(&kcu_image, kernel, grid" kcu.c
    "$cc" "${cflags[@]}" -c kcu.c -o kcu.o
    # a program that calls both launchers links with libblkc_runtime alone
    cat > main.c <<'C'
#include "kcu.h"
#include <stdio.h>
int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) { /* never run by the test: needs a GPU and device memory */
        int rc = kcu_axpy(NULL, NULL, NULL, 1.0f, NULL);
        rc |= kcu_matmul(NULL, NULL, NULL, NULL);
        printf("%d %s\n", rc, blkc_rt_last_error());
    }
    return 0;
}
C
    "$cc" "${cflags[@]}" -c main.c -o main.o
    "$cc" kcu.o main.o -L"$rtdir" -lblkc_runtime -lm -Wl,-rpath,"$rtdir" -o cuda_prog
    ./cuda_prog
    echo "aot cuda: compiled and linked"
    exit 0
fi

"$blkc" compile "$src/kernels.blk" --emit=aot -o kern
test -s kern.h && test -s kern.c
"$cc" "${cflags[@]}" -c kern.c -o kern.o
"$cc" "${cflags[@]}" -c "$src/aot_driver.c" -o driver.o
"$cc" kern.o driver.o -L"$rtdir" -lblkc_runtime -lm -Wl,-rpath,"$rtdir" -o prog
if ldd ./prog | grep -Eq "libblkc\.so|LLVM"; then
    echo "FAIL: the AOT program links more than libblkc_runtime" >&2
    ldd ./prog >&2
    exit 1
fi
./prog
"$cc" kern.o driver.o "$rtdir/libblkc_runtime.a" -lpthread -ldl -lm -o prog_static
./prog_static
# a second AOT file of the same kernels links into the same program
"$blkc" compile "$src/kernels.blk" --emit=aot -o other
"$cc" "${cflags[@]}" -c other.c -o other.o
"$cc" kern.o other.o driver.o -L"$rtdir" -lblkc_runtime -lm -Wl,-rpath,"$rtdir" -o prog2
./prog2
