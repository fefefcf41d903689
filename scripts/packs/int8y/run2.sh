#!/usr/bin/env bash
# int8y window 2 (branch int8y, commit in $H/COMMIT): im2col's columns one word per invocation
# (glsl/nn/icol.comp; window 1's quant_int.comp ICOL divided per byte). (1) test_iconv_warp (with
# the exceptions' text), test_model's QDQ tests against ONNX Runtime; (2) GPU time per kernel
# (GLTENSOR_PROFILE=1) of the wide net at 112, f32 and int8; (3) the four nets: warp / implicit
# (GLTENSOR_ICONV_GEMM=implicit) / warp; (4) the wide net at 112 per node under kernel copies
# (GLTENSOR_GLSL_DIR): imatmul_warp.comp without the row division of A's zero point (nodiv; the
# bench's zero points are all 0), with restrict aliases of A and B (restrict), both; (5) the layers
# and the wide chain (gltensor_iconv_forms_bench): the exact implicit GEMM, the warp path, and the
# warp path on float32 operands converted first (IntRequant::f32_columns, a lab form).
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8y-cache2
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-215} ]; }
echo "=== tests"
ok && timeout 60 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|Which|warp path|x \[|xception|what" | head -24
ok && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 40 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== GPU time per kernel, the wide net at 112 (f32 and int8 loads)"
ok && GLTENSOR_PROFILE=1 timeout 25 $B/gltensor_model_bench --qdq-loads 1 --runs 10 2>&1 | grep -v "^|---" | tail -60
echo "=== the QDQ nets: warp (default) / implicit (GLTENSOR_ICONV_GEMM=implicit) / warp"
M="--qdq --runs 20 --gpu-time"
ok 190 && timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
ok 190 && GLTENSOR_ICONV_GEMM=implicit timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
ok 190 && timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
echo "=== the layers and the wide chain at 112: exact implicit GEMM (default form), warp, warp on f32 operands (lab)"
ok 200 && timeout 60 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms default,warp,warp-f32cols --chain 10 2>&1 | grep -v "^|---"
echo "=== kernel copies, the wide net at 112 per node"
for v in nodiv restrict both; do
  ok 225 && GLTENSOR_GLSL_DIR=$H/glsl-$v timeout 15 $B/gltensor_model_bench --qdq-loads 1 --runs 10 2>&1 | grep -E "^\| [0-9]|^[0-9] (f32|int8)" | tail -6
done
echo "--- end t=${SECONDS}s"
