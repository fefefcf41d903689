#!/usr/bin/env bash
# int8ab window 3 (branch int8ab, commit in $H/COMMIT; issue 22): the final commit (no lab knobs;
# chunks of at least bm values of K; the input QuantizeLinear fused by default) against main's build
# ($H/main, 7708d85). (1) tests; (2) the four nets, main / branch alternating, twice; (3) GPU ms per
# kernel file of the narrow net at 56 and 112.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8ab-cache3
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-90} ]; }
MAIN="env LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8ab-cache3m $H/main/bin/gltensor_model_bench"
echo "=== (1) tests"
ok 20 && timeout 45 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Which|xception|what" | head -20
ok 50 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 25 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) the four nets: main / this build, twice"
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  echo "main $i"; ok 80 && timeout 10 $MAIN $M 2>&1 | grep -v "^|---"
  echo "branch $i"; ok 80 && timeout 10 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== (3) per kernel, the narrow net"
L="--qdq-loads 1 --runs 10"
F='^[0-9] (f32|int8)|^\| [0-9]'
k() { echo "## $*"; ok 92 && timeout 6 "$@" 2>&1 | grep -E "$F"; }
k $B/gltensor_model_bench $L --qdq-net narrow --qdq-size 56
k $B/gltensor_model_bench $L --qdq-net narrow
echo "--- end t=${SECONDS}s"
