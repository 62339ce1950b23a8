#!/usr/bin/env bash
# setup.sh — install what blkc needs on a Debian machine, idempotently:
# apt-get runs only for packages that are missing.
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
# hipcc/libamdhip64-dev/rocm-device-libs: HIP C for gfx90a (compile tests);
# the CUDA toolkit (NVRTC, ptxas) is not a Debian package: found if present.
# openmpi-bin/libopenmpi-dev: ranks as processes under mpirun (optional at
# build time; about 12 MB to download, 53 MB installed).
for p in build-essential cmake ninja-build flex bison pkg-config llvm-15-dev \
         clang libclang-rt-14-dev libopenblas-dev python3 python3-numpy \
         python3-pytest hipcc libamdhip64-dev rocm-device-libs \
         openmpi-bin libopenmpi-dev; do
  have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
echo "setup: ok"
