#!/usr/bin/env bash
# int8aa window 1 (issue 22): imatmul_warp.comp's 8-bit loads. Default build = IW_FORM 2 (B's zero
# point read once per invocation through matmul_warp.comp's KERNEL_SETUP hook, and bytes 1 and 3 of
# each word masked in place and scaled by 1/256: one shift per word). Lab copies via
# GLTENSOR_GLSL_DIR: f0 = main's conversions, f1 = hoisted zero point only, f3 = masks only;
# default's quant_int.comp has a per-tensor shortcut in param_index (no integer divisions), q0 = main's; e0 = the
# requantizing epilogue as main's (int conversions), default: its 8-bit value kept a float, packed
# through 1.5 2^23 + v.
# (1) tests; (2) the four nets, main's build and this one alternating, twice; (3) GPU ms per kernel
# file at 112 by form; (4) glsl-q0; (5) wide 56 under the exact path's GLTENSOR_IMATMUL_* knobs.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8aa-cache1
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-120} ]; }
F='^[0-9] (f32|int8)|^\| [0-9]'
echo "=== (1) tests"
ok 30 && timeout 40 $B/test_iconv_warp 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Which|xception|what" | head -20
ok 50 && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 30 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what|Which" | head -16
echo "=== (2) the four nets: main / this build, twice"
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  ok 80 && LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8aa-cache1m timeout 12 $H/main/bin/gltensor_model_bench $M 2>&1 | grep -v "^|---"
  ok 80 && timeout 12 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
L="--qdq-loads 1 --runs 10"
run() {  # form net [size] [env...]
  local v=$1 net=$2 s=${3:-112}; shift 3
  echo "form $v $net $s $*"
  D=""; [ $v != default ] && D=$H/glsl-$v
  ok ${LIM:-100} && env GLTENSOR_GLSL_DIR=$D "$@" timeout 8 $B/gltensor_model_bench $L --qdq-net $net --qdq-size $s 2>&1 | grep -E "$F"
}
echo "=== (3) per kernel at 112 by form"
for i in 1 2 3; do for v in f0 f1 default f3 e0; do run $v wide 112; done; done
for v in f0 default e0; do run $v narrow 112; done
echo "=== (4) quant_int.comp as main (glsl-q0, against default in (3))"
LIM=112; run q0 wide 112; run q0 narrow 112
echo "=== (5) wide 56, the exact path's knobs"
LIM=130
for k in GLTENSOR_IMATMUL_TILE=64 GLTENSOR_IMATMUL_TILE=128 GLTENSOR_IMATMUL_SLICES=2 GLTENSOR_IMATMUL_BLOCKS=2 GLTENSOR_IMATMUL_RB=2 GLTENSOR_IMATMUL_BK=8 X=default; do
  run default wide 56 $k
done
echo "--- end t=${SECONDS}s"
