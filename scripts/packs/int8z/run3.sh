#!/usr/bin/env bash
# int8z window 3 (branch int8z, commit in $H/COMMIT; issue 22): icol.comp gathers a tap's bytes
# before storing its words (window 2's stored each word before the next word's loads), and its
# invocation's shape through the lab knob GLTENSOR_INT8Z_ICOL=words,local,one_tap (default
# 4,64,0: 4 words of each of a channel's 9 rows per invocation, 64 per workgroup). (1) tests;
# (2) GPU ms per kernel file, wide and narrow nets at 112, per icol form; (3) the four nets: main,
# this build (default), this build with 4,256,1, twice.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8z-cache3
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-200} ]; }
echo "=== (1) tests"
ok 60 && timeout 60 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|Which|warp path|x \[|xception|what" | head -24
ok 60 && GLTENSOR_INT8Z_ICOL=4,256,1 timeout 30 $B/test_iconv_warp --gtest_filter='*MatchesExact*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|Which|xception|what" | head -10
ok 100 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 40 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) per node and per kernel at 112, by icol form (words,local,one_tap)"
L="--qdq-loads 1 --runs 10"
F='^[0-9] (f32|int8)|^\| [0-9]'
for v in 4,64,0 4,256,1 4,128,1 2,128,1 1,64,1 1,256,1 8,64,0 4,64,1 4,128,0; do for net in wide narrow; do
  echo "icol $v $net"
  ok 150 && GLTENSOR_INT8Z_ICOL=$v timeout 15 $B/gltensor_model_bench $L --qdq-net $net 2>&1 | grep -E "$F" | grep -E "^2 |\| 2 "
done; done
echo "=== (3) the four nets: main / this build / this build with icol 4,256,1, twice"
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  ok 190 && LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8z-cache3m timeout 20 $H/main/bin/gltensor_model_bench $M 2>&1 | grep -v "^|---"
  ok 190 && timeout 20 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
  ok 190 && GLTENSOR_INT8Z_ICOL=4,256,1 timeout 20 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "--- end t=${SECONDS}s"
