#!/usr/bin/env bash
# int8ab window 2 (branch int8ab, commit in $H/COMMIT; issue 22): plan_iwarp_split's defaults from
# window 1 (target 528 workgroups, 64-row tiles where M <= 64, K >= 512, below 256 tiles) against
# main's build ($H/main, 7708d85). (1) tests; (2) the four nets, main / branch alternating, three
# times; (3) the branch with GLTENSOR_FUSE_QDQ_INPUT=1 (now quantized first where the warp path takes
# the first conv), twice; (4) GPU ms per kernel file, the branch's defaults, and lab knobs
# (GLTENSOR_IWARP_CHUNK, _TARGET) on the narrow net at 56.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8ab-cache2
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-120} ]; }
MAIN="env LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8ab-cache2m $H/main/bin/gltensor_model_bench"
echo "=== (1) tests"
ok 30 && timeout 45 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Which|xception|what" | head -20
ok 55 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 30 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) the four nets: main / this build, three times"
M="--qdq --runs 20 --gpu-time"
for i in 1 2 3; do
  echo "main $i"; ok 100 && timeout 12 $MAIN $M 2>&1 | grep -v "^|---"
  echo "branch $i"; ok 100 && timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== (3) the branch with GLTENSOR_FUSE_QDQ_INPUT=1, twice"
for i in 1 2; do ok 110 && GLTENSOR_FUSE_QDQ_INPUT=1 timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"; done
echo "=== (4) per kernel"
L="--qdq-loads 1 --runs 10"
F='^[0-9] (f32|int8)|^\| [0-9]'
k() { echo "## $*"; ok 130 && timeout 8 "$@" 2>&1 | grep -E "$F"; }
k $B/gltensor_model_bench $L --qdq-net wide --qdq-size 56
k $B/gltensor_model_bench $L --qdq-net narrow --qdq-size 56
k $B/gltensor_model_bench $L --qdq-net narrow
for e in GLTENSOR_IWARP_CHUNK=64 GLTENSOR_IWARP_CHUNK=32 "GLTENSOR_IWARP_CHUNK=64 GLTENSOR_IWARP_TARGET=1056" GLTENSOR_IWARP_OFF=1; do
  k env $e $B/gltensor_model_bench $L --qdq-net narrow --qdq-size 56
done
k env GLTENSOR_FUSE_QDQ_INPUT=1 $B/gltensor_model_bench $L --qdq-net narrow --qdq-size 56
k env GLTENSOR_IWARP_CHUNK=64 $B/gltensor_model_bench $L --qdq-net wide --qdq-size 56
echo "--- end t=${SECONDS}s"
