#!/usr/bin/env bash
# int8ab window 1 (branch int8ab, commit in $H/COMMIT; issue 22): the QDQ warp GEMM with K in chunks
# (imatmul_warp.comp IW_SPLIT + IW_SUM; the integer planner's plan_iwarp_split) against main's build
# ($H/main, 7708d85). Lab knobs (this build only): GLTENSOR_IWARP_TARGET (workgroups, 264),
# _CHUNK (min K per chunk, 128), _MINM (128), _MAXTILES (132), _BM (128; 64 where M <= 64), _BK (8),
# _OFF. (1) tests; (2) GPU ms per kernel file at 56 (wide, narrow) and 112 (narrow), main / branch
# and the knobs; (3) the four nets, main / branch alternating, twice; (4) GLTENSOR_FUSE_QDQ_INPUT=1 once.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8ab-cache1
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-120} ]; }
MAIN="env LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8ab-cache1m $H/main/bin/gltensor_model_bench"
echo "=== (1) tests"
ok 30 && timeout 45 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Which|xception|what" | head -20
ok 55 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 30 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) per kernel"
L="--qdq-loads 1 --runs 10"
F='^[0-9] (f32|int8)|^\| [0-9]'
k() { echo "## $*"; ok 110 && timeout 8 "$@" 2>&1 | grep -E "$F"; }
k $MAIN $L --qdq-net wide --qdq-size 56
k $B/gltensor_model_bench $L --qdq-net wide --qdq-size 56
for e in GLTENSOR_IWARP_TARGET=132 GLTENSOR_IWARP_TARGET=528 GLTENSOR_IWARP_TARGET=1056 GLTENSOR_IWARP_CHUNK=256 \
         GLTENSOR_IWARP_CHUNK=64 GLTENSOR_IWARP_BK=16 "GLTENSOR_IWARP_BK=16 GLTENSOR_IWARP_TARGET=528"; do
  k env $e $B/gltensor_model_bench $L --qdq-net wide --qdq-size 56
done
k $MAIN $L --qdq-net wide --qdq-size 56
k $B/gltensor_model_bench $L --qdq-net wide --qdq-size 56
k $MAIN $L --qdq-net narrow --qdq-size 56
k $B/gltensor_model_bench $L --qdq-net narrow --qdq-size 56
for e in GLTENSOR_IWARP_MINM=64 "GLTENSOR_IWARP_MINM=64 GLTENSOR_IWARP_TARGET=528" "GLTENSOR_IWARP_MINM=64 GLTENSOR_IWARP_BM=128"; do
  k env $e $B/gltensor_model_bench $L --qdq-net narrow --qdq-size 56
done
k $MAIN $L --qdq-net narrow
k $B/gltensor_model_bench $L --qdq-net narrow
for e in "GLTENSOR_IWARP_MINM=64 GLTENSOR_IWARP_MAXTILES=100000" "GLTENSOR_IWARP_MINM=64 GLTENSOR_IWARP_MAXTILES=100000 GLTENSOR_IWARP_TARGET=528"; do
  k env $e $B/gltensor_model_bench $L --qdq-net narrow
done
echo "=== (3) the four nets: main / this build, twice"
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  echo "main $i"; ok 130 && timeout 12 $MAIN $M 2>&1 | grep -v "^|---"
  echo "branch $i"; ok 130 && timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== (4) the branch with GLTENSOR_FUSE_QDQ_INPUT=1"
ok 135 && GLTENSOR_FUSE_QDQ_INPUT=1 timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
echo "--- end t=${SECONDS}s"
