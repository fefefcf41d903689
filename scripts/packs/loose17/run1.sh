#!/usr/bin/env bash
# loose17 (issues 21, 22), branch loose17 at b677db1: (1) test_iconv_warp on the H100 with icol.comp's
# one taken form (the other forms removed) and the new IcolStoresNothingPastItsRows; (2) icol.comp's
# guard for the word past a row removed (a copy through GLTENSOR_GLSL_DIR): which tests catch it on
# the GPU; (3) Storage::upload's barrier_for_host under a temporary assertion (lib-assert: abort with
# LOOSE17-ASSERT if it issues a barrier), a positive control first, then main's test binaries
# (d481e7a's tests, stripped, in main-tests.tar.xz) against it, 10 at a time, each under 30 s.
[ -n "${LOOSE17_INNER:-}" ] || LOOSE17_INNER=1 exec timeout 135 bash "$0"
set -x
B=$H/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
echo "== (1) test_iconv_warp (branch)"
timeout 60 $B/test_iconv_warp --gtest_brief=1 2>&1 | tail -6
echo "== (2) icol.comp's guard removed"
S() { SABOTAGE_TIMEOUT=30 bash $H/sabotage.sh "$@" | head -1; }
S $H/glsl/icol.comp 'if (q0 + uint(w) < u_PQ) {' 'if (true) {' $B/test_iconv_warp 'IConvWarp.IcolStoresNothingPastItsRows'
S $H/glsl/icol.comp 'if (q0 + uint(w) < u_PQ) {' 'if (true) {' $B/test_iconv_warp 'IConvWarp.MatchesExactAndFloat64:IConvWarp.GridsSplitUnderALoweredDispatchLimit:IConvWarp.LargeSums'
date -u
echo "== (3) the upload barrier's assertion"
LD_LIBRARY_PATH=$H/lib-assert:$LD_LIBRARY_PATH timeout 20 $B/control; echo "control rc=$? (134: the assertion fires)"
T=$(mktemp -d /tmp/loose17.XXXXXX)
tar xJf $H/main-tests.tar.xz -C $T
ls $T | wc -l
one() {
  local t=$1 s=$(date +%s)
  LD_LIBRARY_PATH=$H/lib-assert:$LD_LIBRARY_PATH GLTENSOR_MODEL_CACHE=${GLTENSOR_MODEL_CACHE:-} timeout 30 $T/$t --gtest_brief=1 > $T/$t.log 2>&1
  local rc=$?
  echo "$t rc=$rc $(( $(date +%s) - s ))s assert=$(grep -c LOOSE17-ASSERT $T/$t.log) $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' $T/$t.log | head -3 | tr '\n' ' ')"
}
export -f one; export T H
timeout 95 bash -c "ls $T | grep -v '\.log$' | xargs -P 10 -I{} bash -c 'one {}'"
echo "total assert lines: $(cat $T/*.log | grep -c LOOSE17-ASSERT)"
date -u
