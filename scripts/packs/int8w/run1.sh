#!/usr/bin/env bash
# int8w window 1 (branch int8w, commit in $H/COMMIT): the integer GEMM's int32 totals in local memory
# ($H/local/imatmul.comp through GLTENSOR_GLSL_DIR: the built-in kernel with the totals array indexed
# at run time) against registers (the built-in kernel; its default plan is main's), per form and
# in the wide QDQ net at 112x112; 128 x 128 tiles of 8 x 8 (new lab form); GPU tests of the forms.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
export GLTENSOR_CACHE_DIR=/tmp/int8w-cache
B=$H/bin
L=$H/local
F=default,implicit-4x8-sliced,implicit-4x4-regs,implicit-8x8-regs,implicit-8x8t128-regs,implicit-8x8t128-mem,implicit-8x8-sliced
echo "=== forms, built-in kernel (totals in registers)"
timeout 45 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 20 --forms $F --chain 10
echo "=== forms, local totals"
GLTENSOR_GLSL_DIR=$L timeout 45 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 20 --forms $F --chain 10
M="--qdq --qdq-net wide --qdq-size 112 --runs 20 --gpu-time"
for i in 1 2; do
  echo "=== model wide 112, built-in ($i)"
  timeout 20 $B/gltensor_model_bench $M
  echo "=== model wide 112, local totals ($i)"
  GLTENSOR_GLSL_DIR=$L timeout 20 $B/gltensor_model_bench $M
done
echo "=== model wide 112, local totals, 8 x 8 on 64 x 128 everywhere"
GLTENSOR_GLSL_DIR=$L GLTENSOR_IMATMUL_TILE=128 GLTENSOR_IMATMUL=regs timeout 20 $B/gltensor_model_bench $M
echo "=== tests, local totals"
GLTENSOR_GLSL_DIR=$L timeout 25 $B/test_imatmul_forms 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed" | head -20
GLTENSOR_GLSL_DIR=$L timeout 35 $B/test_iconv_implicit --gtest_filter='*GpuTilings*:*GpuFewTiles*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|form" | head -30
