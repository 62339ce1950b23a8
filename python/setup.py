"""setup.py — `pip install ./python`: build libblkc with CMake, ship it inside.

The build step (build_py) configures the blkc source tree (the parent of
this directory, or $BLKC_SOURCE_DIR) in its own build directory, builds the
library, the compile worker and the CLI, and copies them into the package:

    blkc/libblkc.so   found by blkc.load() next to __init__.py
    blkc/blkc-cc      found by libblkc next to itself (compiler/isolate.c)
    blkc/blkc         the CLI, run by `python -m blkc`

so the installed package needs neither LD_LIBRARY_PATH nor the source tree.
The wheel is platform-specific (it holds native code).

Environment:
    BLKC_SOURCE_DIR        the blkc source tree (default: ..)
    BLKC_CMAKE_BUILD_DIR   build here instead of build/cmake; an existing,
                           configured tree (e.g. the checkout's build/) is
                           only rebuilt, never reconfigured
    BLKC_CMAKE_ARGS        extra configure arguments (split like a shell)
    CMAKE_BUILD_PARALLEL_LEVEL, CMAKE_GENERATOR   as CMake reads them
"""
import os
import re
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = "blkc_python"  # libblkc, blkc-cc and the CLI (CMakeLists.txt)
# (file in the CMake build directory, name inside the package)
OUTPUTS = (("libblkc.so", "libblkc.so"), ("blkc-cc", "blkc-cc"),
           ("blkc", "blkc"))


def _source_dir():
    src = os.path.abspath(os.environ.get("BLKC_SOURCE_DIR") or
                          os.path.dirname(HERE))
    if not os.path.isfile(os.path.join(src, "include", "blkc", "blkc.h")):
        raise SystemExit(
            "blkc: no blkc source tree at %s (install from a checkout: "
            "pip install ./python, or set BLKC_SOURCE_DIR)" % src)
    return src


def _version(src):
    with open(os.path.join(src, "CMakeLists.txt")) as f:
        m = re.search(r"project\(blkc VERSION ([0-9.]+)", f.read())
    if not m:
        raise SystemExit("blkc: no project(blkc VERSION ...) in %s" %
                         os.path.join(src, "CMakeLists.txt"))
    return m.group(1)


def _run(cmd):
    print("blkc:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.check_call(cmd)


class BuildWithCMake(build_py):
    """build_py, then CMake; the native files land in build_lib/blkc."""

    def run(self):
        super().run()
        src = _source_dir()
        bdir = os.path.abspath(os.environ.get("BLKC_CMAKE_BUILD_DIR") or
                               os.path.join(HERE, "build", "cmake"))
        if shutil.which("cmake") is None:
            raise SystemExit("blkc: cmake not found (apt-get install cmake, "
                             "or run scripts/setup.sh)")
        if not os.path.isfile(os.path.join(bdir, "CMakeCache.txt")):
            cfg = ["cmake", "-S", src, "-B", bdir,
                   "-DCMAKE_BUILD_TYPE=Release", "-DBLKC_BUILD_TESTS=OFF"]
            if "CMAKE_GENERATOR" not in os.environ and shutil.which("ninja"):
                cfg += ["-G", "Ninja"]
            cfg += shlex.split(os.environ.get("BLKC_CMAKE_ARGS", ""))
            _run(cfg)
        build = ["cmake", "--build", bdir, "--target", TARGET]
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ:
            build += ["-j", str(os.cpu_count() or 2)]
        _run(build)
        pkg = os.path.join(self.build_lib, "blkc")
        os.makedirs(pkg, exist_ok=True)
        for name, dest in OUTPUTS:
            path = os.path.join(bdir, name)
            if not os.path.exists(path):
                raise SystemExit("blkc: the CMake build made no %s" % path)
            # the real file, not the libblkc.so -> .so.0 symlinks
            shutil.copyfile(os.path.realpath(path), os.path.join(pkg, dest))
            shutil.copymode(os.path.realpath(path), os.path.join(pkg, dest))


class NativeDistribution(Distribution):
    """Native code inside: a platform wheel, installed to platlib."""

    def has_ext_modules(self):
        return True


setup(version=_version(_source_dir()),
      cmdclass={"build_py": BuildWithCMake},
      distclass=NativeDistribution)
