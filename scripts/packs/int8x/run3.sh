#!/usr/bin/env bash
# int8x window 3 (branch int8x, commit in $H/COMMIT): the branch's final code (GLTENSOR_IMATMUL=local and the
# 128 x 128 lab tiles removed, the K split dropped) on the H100: the integer matmul's tests, the QDQ nets
# against f32 and the GEMM alone (the default form), to see nothing moved.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8x-cache3
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-215} ]; }
ok && timeout 40 $B/test_imatmul_forms 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|form" | head -12
ok && timeout 60 $B/test_iconv_implicit 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|form" | head -16
ok && timeout 20 $B/test_nn_plans --gtest_filter='PlanIMatmul*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure" | head -6
ok && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 40 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what" | head -12
for i in 1 2; do
  ok 200 && timeout 25 $B/gltensor_model_bench --qdq --runs 20 --gpu-time 2>&1 | grep -v "^|---"
done
ok 210 && timeout 25 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms default --chain-only --gemm 2>&1 | grep -v "^|---"
echo "--- end t=${SECONDS}s"
