#!/usr/bin/env bash
# loose17 window 2 (issues 21, 22), branch loose17 at 834fd75: (1) the four test binaries that window
# 1's 30 s cut short, against lib-assert (Storage::upload's barrier_for_host aborting with
# LOOSE17-ASSERT if it issues a barrier; main's d481e7a tests), 4 at a time, up to 110 s each;
# (2) beside them, the branch's own tests of its changes with its library (upload without the
# barrier: test_pool, test_recording, test_model_host_io also with GLTENSOR_HOST_IO=copy,
# test_views; the 1-D ops' checks: test_window_sizes, test_nn, test_model_ops; icol: test_iconv_warp).
[ -n "${LOOSE17_INNER:-}" ] || LOOSE17_INNER=1 exec timeout 135 bash "$0"
set -x
B=$H/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
T=$(mktemp -d /tmp/loose17.XXXXXX)
tar xJf $H/main-tests.tar.xz -C $T test_attention test_conv_direct test_iconv_implicit test_matmul
one() {
  local t=$1 s=$(date +%s)
  LD_LIBRARY_PATH=$H/lib-assert:$LD_LIBRARY_PATH timeout 110 $T/$t --gtest_brief=1 > $T/$t.log 2>&1
  local rc=$?
  echo "ASSERT-RUN $t rc=$rc $(( $(date +%s) - s ))s assert=$(grep -c LOOSE17-ASSERT $T/$t.log) $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' $T/$t.log | head -3 | tr '\n' ' ') $(grep -E '^\[  FAILED  \] [A-Z]' $T/$t.log | head -3 | tr '\n' ' ')"
}
export -f one; export T H
(ls $T | xargs -P 4 -I{} bash -c 'one {}') > $T/assert.txt 2>&1 &
bg=$!
for t in test_pool test_recording test_model_host_io test_views test_window_sizes test_iconv_warp; do
  timeout 60 $B/$t --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|Failure' | head -5 | sed "s/^/$t: /"
done
GLTENSOR_HOST_IO=copy timeout 30 $B/test_model_host_io --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' | sed 's/^/host_io=copy: /'
timeout 60 $B/test_nn --gtest_brief=1 --gtest_filter='Conv2d.Transpose*:Pool2d.*' 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|Failure' | head -5 | sed 's/^/test_nn: /'
timeout 30 $B/test_model_ops --gtest_brief=1 --gtest_filter='Conv1d.*' 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|Failure' | sed 's/^/test_model_ops: /'
date -u
wait $bg
cat $T/assert.txt
echo "total assert lines: $(cat $T/*.log | grep -c LOOSE17-ASSERT)"
date -u
