#!/bin/bash
# pip_install.sh SRCDIR BUILDDIR WORKDIR — `pip install ./python` into a
# fresh venv and use the installed package from outside the source tree:
# the venv (WORKDIR/venv) is seeded from the system site-packages
# (setuptools, wheel, numpy, pytest: scripts/setup.sh), so pip runs offline
# (--no-index --no-build-isolation). setup.py drives CMake on BUILDDIR,
# the tree this suite was built in (only rebuilt, never reconfigured), so
# the package holds the library the suite tests. Then: import blkc finds
# its own libblkc.so (no LD_LIBRARY_PATH, no BLKC_LIB), a kernel runs
# against numpy, `python -m blkc` is the CLI, and the pytest suite passes
# against the installed package. Exit 77 only when python3-venv is missing.
set -u
[ "${BLKC_SANITIZED:-}" = 1 ] && { echo "skipped: sanitizer build"; exit 77; }
src=$1 build=$2 work=$3
py=
for c in "${BLKC_PYTHON:-}" /usr/bin/python3 python3; do
    [ -n "$c" ] || continue
    if "$c" -c "import venv, ensurepip" >/dev/null 2>&1; then py=$c; break; fi
done
if [ -z "$py" ]; then
    echo "skipped: no python3 with venv and ensurepip (apt-get install python3-venv)"
    exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work/run" || fail "cannot create $work"
"$py" -m venv --system-site-packages "$work/venv" || fail "python3 -m venv"
vpy=$work/venv/bin/python
"$vpy" -c "import setuptools, wheel, numpy" ||
    fail "the venv lacks setuptools, wheel or numpy (scripts/setup.sh)"
unset BLKC_LIB LD_LIBRARY_PATH PYTHONPATH
export BLKC_CACHE_DIR=$work/cache PIP_DISABLE_PIP_VERSION_CHECK=1
BLKC_CMAKE_BUILD_DIR=$build CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "$vpy" -m pip install -q --no-index --no-build-isolation "$src/python" ||
    fail "pip install $src/python"

cd "$work/run" || fail "cd $work/run"
"$vpy" - "$work/venv" <<'EOF' || fail "the installed package"
import os, sys
import numpy as np
import blkc

venv = os.path.realpath(sys.argv[1])
pkg = os.path.dirname(os.path.realpath(blkc.__file__))
lib = os.path.realpath(blkc.load()._name)
assert pkg.startswith(venv + os.sep), "blkc imported from %s" % pkg
assert lib == os.path.join(pkg, "libblkc.so"), "libblkc from %s" % lib
src = """
kernel saxpy<BLOCK = 128>(X: f32[N], Y: f32[N], Z: f32[N], a: f32)
    grid(cdiv(N, BLOCK))
{
    let o = program_id(0) * BLOCK;
    Z[o +: BLOCK] = X[o +: BLOCK] * a + Y[o +: BLOCK];
}
"""
k = blkc.Context("cpu").compile(src).kernel("saxpy")
rng = np.random.default_rng(7)
x = rng.standard_normal(1000).astype(np.float32)   # a tail: 1000 % 128
y = rng.standard_normal(1000).astype(np.float32)
z = np.zeros(1000, np.float32)
k(x, y, z, 1.5)
ref = x * np.float32(1.5) + y
assert np.allclose(z, ref, rtol=1e-6, atol=1e-6), np.abs(z - ref).max()
print("installed blkc", blkc.version(), "from", pkg)
EOF

# the compile worker blkc-cc: libblkc looks next to itself first
BLKC_COMPILE_ISOLATE=1 BLKC_CACHE_DIR=$work/cache-iso "$vpy" -c '
import numpy as np, blkc
k = blkc.Context("cpu").compile("""
kernel neg(X: f32[N], Y: f32[N]) grid(cdiv(N, 64)) {
    let o = program_id(0) * 64;
    Y[o +: 64] = -X[o +: 64];
}""").kernel("neg")
x = np.arange(100, dtype=np.float32); y = np.zeros_like(x)
k(x, y)
assert (y == -x).all()
' || fail "an isolated compile (BLKC_COMPILE_ISOLATE=1) with the packaged blkc-cc"

want=$(grep -o 'project(blkc VERSION [0-9.]*' "$src/CMakeLists.txt" | awk '{print $3}')
out=$("$vpy" -m blkc --version 2>&1) || fail "python -m blkc --version: $out"
case $out in *"$want"*) ;; *) fail "python -m blkc --version printed '$out', want $want" ;; esac

if "$vpy" -c "import pytest" >/dev/null 2>&1; then
    # tests/python is not a package and python/ is not on sys.path here:
    # `import blkc` in the suite is the installed one
    "$vpy" -m pytest -q -p no:cacheprovider "$src/tests/python"
    rc=$?
    [ $rc = 5 ] && fail "pytest collected no tests"
    [ $rc = 0 ] || fail "pytest against the installed package (exit $rc)"
fi
echo "ok: pip install ./python"
