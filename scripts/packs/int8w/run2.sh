#!/usr/bin/env bash
# int8w window 2 (branch int8w, commit in $H/COMMIT): the integer GEMM (imatmul.comp) with two K tiles per
# trip of its loop (constant shared-buffer index) and its loops unrolled ($H/v1, as matmul_warp.comp),
# and the same with a warp's invocations on 8 x 4 (tx, ty) neighbours ($H/v2), through GLTENSOR_GLSL_DIR,
# against the branch's committed kernel ($H/v0) and main's build ($H/main: the lead's /work/main/build,
# 14:21, 1af164c's library code), alternating; the GPU tests with v2. Steps are skipped past 215 s.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
export GLTENSOR_CACHE_DIR=/tmp/int8w-cache
B=$H/bin
F=default,implicit-4x4-regs,implicit-8x8-regs,implicit-8x8-local,implicit-8x8t128-local
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt 215 ]; }
for v in v0 v2 v1; do
  ok || break
  echo "=== forms, $v"
  GLTENSOR_GLSL_DIR=$H/$v timeout 35 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms $F --chain 10 2>&1 | grep -v "^|---"
done
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  ok && { echo "=== model, main ($i)"; LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH timeout 20 $H/main/bin/gltensor_model_bench $M 2>&1 | grep -v "^|---"; }
  for v in v2 v1; do
    ok && { echo "=== model, $v ($i)"; GLTENSOR_GLSL_DIR=$H/$v timeout 20 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"; }
  done
done
ok && { echo "=== model wide 112, v2, 8 x 8 on 64 x 128 everywhere"; GLTENSOR_GLSL_DIR=$H/v2 GLTENSOR_IMATMUL_TILE=128 GLTENSOR_IMATMUL=regs timeout 15 $B/gltensor_model_bench --qdq --qdq-net wide --qdq-size 112 --runs 20 --gpu-time 2>&1 | grep -v "^|---"; }
ok && GLTENSOR_GLSL_DIR=$H/v2 timeout 25 $B/test_iconv_implicit --gtest_filter='*GpuTilings*:*GpuFewTiles*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|form" | head -20
ok && GLTENSOR_GLSL_DIR=$H/v2 timeout 15 $B/test_imatmul_forms 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed" | head -10
ok && GLTENSOR_ORT_PYTHON=$H/ort_run.py GLTENSOR_GLSL_DIR=$H/v2 timeout 20 $B/test_model --gtest_filter='*Qdq*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|seed|Skipped" | head -20
echo "--- end t=${SECONDS}s"
