# mpi_prelude.sh HAVE_MPI — sourced by the scripts that run under mpirun
# (mpi_test.sh, mpi_cli.sh, mpi_task.sh): exits 77 (skip) in a sanitizer
# build that cannot run MPI (BLKC_SANITIZED=1), when blkc was built without
# MPI (HAVE_MPI is not ON) or when there is no mpirun; otherwise allows
# mpirun as root and sets MPI=(mpirun [flags]): oversubscribed and without
# core binding under Open MPI.
[ "${BLKC_SANITIZED:-}" = 1 ] && { echo "skipped: sanitizer build"; exit 77; }
if [ "$1" != ON ]; then echo "skipped: blkc was built without MPI"; exit 77; fi
if ! command -v mpirun >/dev/null 2>&1; then echo "skipped: no mpirun"; exit 77; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI=(mpirun)
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  MPI=(mpirun --oversubscribe --bind-to none)
fi
