#!/usr/bin/env bash
# int8w window 3 (branch int8w, commit in $H/COMMIT): the branch's plan (K_PAIRS, two K tiles per loop trip
# and loops unrolled, for the 4 x 8 two-slice form of the wide net's 256-channel layers) against the same
# build with K_PAIRS ignored ($H/nopairs: GLTENSOR_GLSL_DIR, the kernel's '#ifdef K_PAIRS' renamed) and
# main's build ($H/main: the lead's /work/main/build, 14:21), alternating; the GPU tests.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
export GLTENSOR_CACHE_DIR=/tmp/int8w-cache
B=$H/bin
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt 200 ]; }
F=default,implicit-4x4-regs,implicit-4x8-sliced
for v in branch nopairs branch; do
  ok || break
  echo "=== forms, $v"
  D=; [ $v = nopairs ] && D=$H/nopairs
  GLTENSOR_GLSL_DIR=$D timeout 30 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms $F --chain 10 2>&1 | grep -v "^|---"
done
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  ok && { echo "=== model, main ($i)"; LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH timeout 20 $H/main/bin/gltensor_model_bench $M 2>&1 | grep -v "^|---"; }
  ok && { echo "=== model, branch ($i)"; timeout 20 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"; }
  ok && { echo "=== model, nopairs ($i)"; GLTENSOR_GLSL_DIR=$H/nopairs timeout 20 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"; }
done
ok && GLTENSOR_ORT_PYTHON=$H/ort_run.py timeout 30 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped|what" | head -20
ok && timeout 45 $B/test_iconv_implicit --gtest_filter='*GpuTilings*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|form" | head -20
ok && timeout 30 $B/test_imatmul_forms 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed" | head -10
echo "--- end t=${SECONDS}s"
