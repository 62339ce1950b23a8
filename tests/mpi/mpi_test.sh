#!/usr/bin/env bash
# mpi_test.sh NP HAVE_MPI PROGRAM ARGS... — run PROGRAM ARGS under
# `mpirun -np NP` (oversubscribed, allowed as root, no core binding, at most
# 20 s, or BLKC_MPI_LIMIT_S). Exits 77 (skip) when blkc was built without MPI (HAVE_MPI is not
# ON) or there is no mpirun.
set -u
np=$1 have=$2
shift 2
. "$(dirname "$0")/mpi_prelude.sh" "$have"
exec timeout "${BLKC_MPI_LIMIT_S:-20}" "${MPI[@]}" -np "$np" "$@"
