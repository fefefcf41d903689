#!/usr/bin/env bash
# A kernel broken on purpose, through GLTENSOR_GLSL_DIR (a folder searched by file name before the
# embedded sources), and a test run against it: the standards' sabotage check without a rebuild.
# Usage: scripts/sabotage.sh glsl/ops/gemv.comp 'OLD TEXT' 'NEW TEXT' TEST_BINARY [GTEST_FILTER]
# Replaces the first OLD TEXT (exact, may span lines) by NEW TEXT in a copy of the kernel, runs
# build/tests/TEST_BINARY (or a path) with it, and prints CAUGHT (the test failed, with the
# failing tests) or SURVIVED (a test to strengthen). Exit 0 either way, 2 where OLD TEXT is absent.
# Environment passes through (GLTENSOR_PRECISION=f16-emulate for the f16 kernels, ...).
set -u
[ $# -ge 4 ] || { sed -n '2,9p' "$0"; exit 2; }
kernel=$1 old=$2 new=$3 bin=$4 filter=${5:-*}
[ -x "$bin" ] || bin=build/tests/$bin
dir=$(mktemp -d "${TMPDIR:-/tmp}/sabotage.XXXXXX")
python3 - "$kernel" "$dir/$(basename "$kernel")" "$old" "$new" <<'PY' || { echo "not found in $kernel: $old"; exit 2; }
import sys
src, dst, old, new = sys.argv[1:]
s = open(src).read()
if old not in s:
    sys.exit(1)
open(dst, "w").write(s.replace(old, new, 1))
PY
t0=$(date +%s)
GLTENSOR_GLSL_DIR=$dir timeout "${SABOTAGE_TIMEOUT:-900}" "$bin" --gtest_filter="$filter" > "$dir/log" 2>&1
rc=$?
secs=$(( $(date +%s) - t0 ))
if [ $rc -ne 0 ]; then
  echo "CAUGHT (rc $rc, ${secs} s): $(grep -E '^\[  FAILED  \] [A-Za-z]' "$dir/log" | sed 's/\[  FAILED  \] //; s/ (.*//; s/, where GetParam.*//' | sort -u | tr '\n' ' ')"
else
  echo "SURVIVED (${secs} s): $(grep -E '^\[  PASSED' "$dir/log")"
fi
echo "log: $dir/log"
