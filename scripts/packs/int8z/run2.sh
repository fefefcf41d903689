#!/usr/bin/env bash
# int8z window 2 (branch int8z, commit in $H/COMMIT; issue 22): icol.comp at 4 words of a
# channel's 9 rows per invocation (was one word per invocation: launch-bound). (1) test_iconv_warp,
# test_model's QDQ tests against ONNX Runtime; (2) the four nets, main's build and this one
# alternating, three times each; (3) GPU ms per node and per kernel file for the four nets; (4) the
# narrow net at 112 with its 64-row layers forced onto the warp path (lab knob GLTENSOR_INT8Z_EDGE=64).
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8z-cache2
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-200} ]; }
echo "=== (1) tests"
ok 60 && timeout 60 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|Which|warp path|x \[|xception|what" | head -24
ok 100 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 40 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) the four nets: main / this build, three times"
M="--qdq --runs 20 --gpu-time"
for i in 1 2 3; do
  ok 150 && LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8z-cache2m timeout 20 $H/main/bin/gltensor_model_bench $M 2>&1 | grep -v "^|---"
  ok 150 && timeout 20 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== (3) per node and per kernel"
L="--qdq-loads 1 --runs 10"
F='^[0-9] (f32|int8)|^\| [0-9]'
for net in wide narrow; do for s in 112 56; do
  ok 175 && timeout 15 $B/gltensor_model_bench $L --qdq-net $net --qdq-size $s 2>&1 | grep -E "$F|^device"
done; done
echo "=== (4) narrow 112, its 64-row layers on the warp path (lab)"
ok 190 && GLTENSOR_INT8Z_EDGE=64 timeout 15 $B/gltensor_model_bench $L --qdq-net narrow 2>&1 | grep -E "$F"
echo "--- end t=${SECONDS}s"
