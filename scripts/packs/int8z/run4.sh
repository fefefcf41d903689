#!/usr/bin/env bash
# int8z window 4, the last (branch int8z, commit in $H/COMMIT; issue 22): icol.comp's default now
# 2 words of one row per invocation, 128 per workgroup (window 3's fastest), each word of stride-1
# rows read as one or two aligned words of the image row instead of four byte loads. (1) tests;
# (2) the four nets, main's build and this one alternating, twice; (3) GPU ms per kernel file at 112
# for the default and (lab knob GLTENSOR_INT8Z_ICOL) the byte loads, 4,256,1 and window 2's 4,64,0.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8z-cache4
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-80} ]; }
echo "=== (1) tests"
ok 30 && timeout 40 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|Which|xception|what" | head -20
ok 50 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 30 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) the four nets: main / this build, twice"
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  ok 70 && LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8z-cache4m timeout 12 $H/main/bin/gltensor_model_bench $M 2>&1 | grep -v "^|---"
  ok 70 && timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== (3) per node and per kernel at 112 by icol form (words,local,one_tap,bytes; default 2,128,1,0)"
L="--qdq-loads 1 --runs 10"
for v in default 2,128,1,1 4,256,1,0 4,64,0,1; do for net in wide narrow; do
  echo "icol $v $net"
  ok 85 && GLTENSOR_INT8Z_ICOL=$v timeout 8 $B/gltensor_model_bench $L --qdq-net $net 2>&1 | grep -E '^[0-9] (f32|int8)|^\| [0-9]'
done; done
echo "--- end t=${SECONDS}s"
