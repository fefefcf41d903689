#!/usr/bin/env bash
# int8y window 4 (branch int8y, commit in $H/COMMIT): window 3's pack after the fixes of its two
# test failures (imatmul.comp's variants within 32 define entries: test_iconv_warp's exact path on
# the H100; the warp model test against ONNX Runtime within two quanta) and of its 56x56 regression
# (a fill dispatch per conv for the dropped weight zero points: now left absent, iconv_direct's
# ZW_NONE): (1) test_iconv_warp,
# test_model's QDQ tests; (2) the four nets, warp / implicit twice; (3) the layers and the wide chain
# (default, warp, warp-f32cols); (4) per node and per kernel, the wide net at 112.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8y-cache4
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
