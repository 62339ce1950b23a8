#!/bin/bash
# run_pytest.sh LIBBLKC SRCDIR CACHEDIR — run tests/python with the first
# interpreter that has numpy and pytest ($BLKC_PYTHON, python3 on PATH,
# /usr/bin/python3); exit 77 when there is none. pytest's exit 5 (no tests
# collected) is a failure.
[ "${BLKC_SANITIZED:-}" = 1 ] && { echo "skipped: sanitizer build"; exit 77; }
lib=$1 src=$2 cache=$3
py=
for c in "${BLKC_PYTHON:-}" python3 /usr/bin/python3 python; do
    [ -n "$c" ] || continue
    if "$c" -c "import numpy, pytest" >/dev/null 2>&1; then py=$c; break; fi
done
if [ -z "$py" ]; then
    echo "skipped: no python with numpy and pytest (pip install numpy pytest)"
    exit 77
fi
rm -rf "$cache"
export BLKC_LIB=$lib BLKC_CACHE_DIR=$cache PYTHONPATH=$src/python${PYTHONPATH:+:$PYTHONPATH}
"$py" -m pytest -q -p no:cacheprovider "$src/tests/python"
rc=$?
[ $rc = 5 ] && { echo "pytest collected no tests"; exit 1; }
exit $rc
