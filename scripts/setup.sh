#!/usr/bin/env bash
# setup.sh — install what blkc needs on a Debian 12 machine, idempotently:
# apt-get runs only for the packages that are missing, and anything still
# missing afterwards is one line naming its package, e.g.
#   setup: missing flex (apt-get install flex)
# with exit status 1. The LLVM is the one cmake/llvm.cmake names
# (BLKC_LLVM_MAJOR): its number is read from there, never written here.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MAJOR=$(sed -n 's/^ *set(BLKC_LLVM_MAJOR \([0-9][0-9]*\)).*/\1/p' "$ROOT/cmake/llvm.cmake")
if [ -z "$MAJOR" ]; then
  echo "setup: cannot read BLKC_LLVM_MAJOR from cmake/llvm.cmake" >&2
  exit 1
fi
# clang's runtimes (libFuzzer, the sanitizers) have a package of their own
# from LLVM 16 on; up to 15 they are in libclang-common-N-dev
if [ "$MAJOR" -ge 16 ]; then RTPKG=libclang-rt-$MAJOR-dev; else RTPKG=libclang-common-$MAJOR-dev; fi

# package  command-or-file that proves it works  (why)
#   build-essential cmake ninja-build flex bison pkg-config: the build
#   llvm-N-dev: the CPU backend (headers, libLLVM, llvm-config-N)
#   clang-N libclang-rt-N-dev (N <= 15: libclang-common-N-dev): the libFuzzer smoke run (fuzz/run.sh, label
#     fuzz) — the same LLVM N, so no second LLVM is installed for it
#   libopenblas-dev: the GEMM baseline of blkc_bench (optional there)
#   python3 python3-numpy python3-pytest: the Python binding's tests and
#     the numpy references of the test suite
#   python3-venv python3-pip python3-setuptools python3-wheel: pip install
#     ./python offline in a venv (ctest python_pip_install)
#   hipcc libamdhip64-dev rocm-device-libs: HIP C for gfx90a (compile
#     tests; hipcc brings its own llvm-15, which blkc ignores)
#   openmpi-bin libopenmpi-dev: ranks as processes under mpirun
#     (optional at build time; about 12 MB to download, 53 MB installed)
#   iproute2 util-linux: ip netns and unshare for the two-host MPI test
#     (tests/mpi/mpi_hosts.sh; skipped without them or without root)
# The CUDA toolkit (NVRTC, ptxas) is not a Debian package: found if present.
PKGS=(
  "build-essential  cc"
  "cmake            cmake"
  "ninja-build      ninja"
  "flex             flex"
  "bison            bison"
  "pkg-config       pkg-config"
  "llvm-$MAJOR-dev  /usr/lib/llvm-$MAJOR/include/llvm-c/Core.h"
  "clang-$MAJOR     clang-$MAJOR"
  "$RTPKG /usr/lib/llvm-$MAJOR/lib/clang"
  "libopenblas-dev  -"
  "python3          python3"
  "python3-numpy    -"
  "python3-pytest   -"
  "python3-venv     -"
  "python3-pip      -"
  "python3-setuptools -"
  "python3-wheel    -"
  "hipcc            hipcc"
  "libamdhip64-dev  -"
  "rocm-device-libs -"
  "openmpi-bin      mpirun"
  "libopenmpi-dev   -"
  "iproute2         ip"
  "util-linux       unshare"
)

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
have_proof() {
  case $1 in
    -) return 0 ;;
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

need=()
for entry in "${PKGS[@]}"; do
  set -- $entry
  have_pkg "$1" || need+=("$1")
done

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo
    else
      for p in "${need[@]}"; do echo "setup: missing $p (apt-get install $p; not root and no sudo)" >&2; done
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp "${TMPDIR:-/tmp}/blkc-setup.XXXXXX")
  if ! { $SUDO apt-get update -qq && \
         $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
    echo "setup: apt-get failed; its last lines:" >&2
    tail -5 "$log" | sed 's/^/setup:   /' >&2
  fi
  rm -f "$log"
fi

# whatever is still missing, one line each
bad=0
for entry in "${PKGS[@]}"; do
  set -- $entry
  if ! have_pkg "$1" || ! have_proof "$2"; then
    echo "setup: missing $1 (apt-get install $1)" >&2
    bad=1
  fi
done
[ $bad -eq 0 ] || exit 1
echo "setup: ok (LLVM $MAJOR)"
