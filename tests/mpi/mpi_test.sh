#!/usr/bin/env bash
# mpi_test.sh NP HAVE_MPI PROGRAM ARGS... — run PROGRAM ARGS under
# `mpirun -np NP` (oversubscribed, allowed as root, no core binding, at most
# 20 s). Exits 77 (skip) when blkc was built without MPI (HAVE_MPI is not
# ON) or there is no mpirun.
set -u
[ "${BLKC_SANITIZED:-}" = 1 ] && { echo "skipped: sanitizer build"; exit 77; }
np=$1 have=$2
shift 2
if [ "$have" != ON ]; then echo "skipped: blkc was built without MPI"; exit 77; fi
if ! command -v mpirun >/dev/null 2>&1; then echo "skipped: no mpirun"; exit 77; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
flags=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  flags=(--oversubscribe --bind-to none)
fi
exec timeout 20 mpirun "${flags[@]}" -np "$np" "$@"
