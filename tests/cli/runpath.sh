#!/usr/bin/env bash
# runpath.sh BLKC LIBBLKC BLKC_CC — no empty entry in the RUNPATH of the
# installed binaries as built (an empty entry is the working directory to
# the dynamic loader: CMake's padding for the install-time rewrite left a
# trailing ':'), and blkc run from a directory holding a libm.so.6 of its
# own loads the system's. Exit 77 without readelf or a C compiler.
set -u
CC=${CC:-cc}
command -v readelf >/dev/null 2>&1 || { echo "skip: no readelf"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "skip: no C compiler"; exit 77; }
fail=0
for f in "$@"; do
  rp=$(readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p;s/.*(RPATH).*\[\(.*\)\]$/\1/p')
  case ":$rp:" in
    *::*) [ -z "$rp" ] || { echo "FAIL $(basename "$f"): RUNPATH '$rp' has an empty entry"; fail=1; } ;;
  esac
done
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-runpath.XXXXXX")
trap 'rm -rf "$T"' EXIT
echo 'int blkc_fake_libm;' >"$T/f.c"
"$CC" -shared -fPIC -o "$T/libm.so.6" "$T/f.c" || { echo "skip: cannot build a shared library"; exit 77; }
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$(cd "$T" && "$B" --version 2>&1); rc=$?
if [ $rc != 0 ] || printf '%s\n' "$out" | grep -q 'libm.so.6'; then
  echo "FAIL blkc --version from a directory with a libm.so.6 (exit $rc): $out"; fail=1
fi
[ $fail = 0 ] && echo "ok: $# RUNPATHs without an empty entry; the working directory's libm.so.6 not loaded"
exit $fail
