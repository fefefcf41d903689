#!/usr/bin/env bash
# int8y window 1 (branch int8y, commit in $H/COMMIT): the QDQ convs on the f32 warp kernel over
# im2col's 8-bit columns (glsl/nn/imatmul_warp.comp, IntRequant::f32_sums) on the H100.
# (1) the SPIR-V extensions of a desktop GL 4.6 context (SPV_KHR_integer_dot_product?);
# (2) the tests: test_iconv_warp (3), test_model's QDQ tests against ONNX Runtime (python3);
# (3) the four QDQ nets int8 / f32, the warp path (default) and the exact implicit GEMM
#     (GLTENSOR_ICONV_GEMM=implicit) alternating, one process each; (4) the wide net at 112 per node.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8y-cache
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-215} ]; }
echo "=== SPIR-V extensions"
timeout 20 python3 $H/spirv_probe.py 2>&1 | head -40
echo "=== tests"
ok && timeout 50 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|Which|warp path|x \[" | head -20
ok && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 40 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== the QDQ nets: warp (default) / implicit (GLTENSOR_ICONV_GEMM=implicit) / warp"
M="--qdq --runs 20 --gpu-time"
ok 200 && timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
ok 200 && GLTENSOR_ICONV_GEMM=implicit timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
ok 200 && timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
echo "=== per node, the wide net at 112 (warp)"
ok 215 && timeout 22 $B/gltensor_model_bench --qdq-loads 1 --runs 10 2>&1 | grep -v "^|---" | tail -40
echo "--- end t=${SECONDS}s"
