#!/usr/bin/env bash
# int8aa window 2 (branch int8aa, commit in $H/COMMIT; issue 22): the branch's imatmul_warp.comp (B's
# zero point once per invocation, bytes 1 and 3 masked in place, the requantized value kept a
# float) against main's build (d481e7a, $H/main). (1) tests; (2) the four nets, main / branch
# alternating, three times; (3) GPU ms per kernel file at 112, main / branch, twice; (4) the
# branch with GLTENSOR_FUSE_QDQ_INPUT=1 (the input QuantizeLinear fused into the first conv's
# implicit GEMM, off by default), twice.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8aa-cache2
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-120} ]; }
MAIN="env LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8aa-cache2m $H/main/bin/gltensor_model_bench"
echo "=== (1) tests"
ok 30 && timeout 45 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Which|xception|what" | head -20
ok 55 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 30 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) the four nets: main / this build, three times"
M="--qdq --runs 20 --gpu-time"
for i in 1 2 3; do
  echo "main $i"; ok 95 && timeout 12 $MAIN $M 2>&1 | grep -v "^|---"
  echo "branch $i"; ok 95 && timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== (3) per kernel at 112: main / branch"
L="--qdq-loads 1 --runs 10"
F='^[0-9] (f32|int8)|^\| [0-9]'
for i in 1 2; do for net in wide narrow; do
  echo "main $net $i"; ok 110 && timeout 8 $MAIN $L --qdq-net $net 2>&1 | grep -E "$F"
  echo "branch $net $i"; ok 110 && timeout 8 $B/gltensor_model_bench $L --qdq-net $net 2>&1 | grep -E "$F"
done; done
echo "=== (4) the branch with GLTENSOR_FUSE_QDQ_INPUT=1"
for i in 1 2; do ok 125 && GLTENSOR_FUSE_QDQ_INPUT=1 timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"; done
echo "--- end t=${SECONDS}s"
