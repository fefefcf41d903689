#!/usr/bin/env bash
# int8y window 3 (branch int8y, commit in $H/COMMIT): the warp path with its define count cut
# (window 2: "more than 32 defines" in test_iconv_warp's first case on the H100), the planner's
# all-zero weight zero points dropped (no per-row zero-point loads in the A loads: window 2's
# nodiv copy ran the wide net at 1.106 against 1.141 ms). (1) test_iconv_warp, test_model's QDQ tests
# against ONNX Runtime; (2) the four nets: warp / implicit (GLTENSOR_ICONV_GEMM=implicit) / warp /
# implicit; (3) the layers and the wide chain at 112 (gltensor_iconv_forms_bench): the exact
# implicit GEMM (default form), the warp path, the warp path on float32 operands converted first
# (lab); (4) the wide net at 112 per node and per kernel (GLTENSOR_PROFILE=1).
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8y-cache3
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-215} ]; }
echo "=== tests"
ok && timeout 60 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|Which|warp path|x \[|xception|what" | head -24
ok && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 40 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== the QDQ nets: warp (default) / implicit (GLTENSOR_ICONV_GEMM=implicit) / warp / implicit"
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  ok 170 && timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
  ok 170 && GLTENSOR_ICONV_GEMM=implicit timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== the layers and the wide chain at 112: implicit (default form), warp, warp on f32 operands (lab)"
ok 190 && timeout 50 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms default,warp,warp-f32cols --chain 10 2>&1 | grep -v "^|---"
echo "=== per node and per kernel, the wide net at 112"
ok 225 && GLTENSOR_PROFILE=1 timeout 15 $B/gltensor_model_bench --qdq-loads 1 --runs 10 2>&1 | grep -v "^|---" | grep -v "^trace" | tail -70
echo "--- end t=${SECONDS}s"
