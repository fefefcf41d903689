#!/usr/bin/env bash
# int8x window 2 (branch int8x, commit in $H/COMMIT): K split over the workgroups (GLTENSOR_IMATMUL_KSPLIT:
# each workgroup one exact block of 256 values of K, int32 atomics, no int32 totals beside the f32 sums, so
# that 8 x 8 per invocation can take K tiles in pairs, unrolled: window 1 found the 8 x 8 forms' K step a
# REP loop with its shared-memory addresses computed at run time; the epilogue by each tile's last chunk).
# (1) window 1's extensions not again; (2) the driver's assembly of the forms (each form's programs
# in its own program cache, summarized by nvasm.py; the texts to $OUT/int8x-asm.tar.xz); (3) the integer
# GEMM alone against f32 matmul (--gemm), the 3x3 QDQ layers and the wide chain under the forms; (4) the
# four QDQ nets int8 / f32 (default, KSPLIT=2, KSPLIT=1), the wide net's GPU time per node; (5) the tests.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-215} ]; }
echo "=== assembly per form (one program cache each)"
for f in implicit-8x8-ksplit implicit-8x8-ksplit-pairs implicit-4x8-ksplit-pairs implicit-8x8t128-ksplit-pairs; do
  ok 60 || break
  GLTENSOR_CACHE_DIR=/tmp/int8x-asm/$f timeout 30 $B/gltensor_iconv_forms_bench --size 112 --rounds 1 --min-ms 1 --forms $f > /dev/null 2>&1
done
timeout 30 python3 $H/nvasm.py /tmp/int8x-asm/* --dump /tmp/int8x-asmtxt 2>&1 | head -c 16000
(cd /tmp && tar cJf $OUT/int8x-asm.tar.xz int8x-asmtxt 2>/dev/null; ls -la $OUT)
export GLTENSOR_CACHE_DIR=/tmp/int8x-cache
echo "=== the integer GEMM alone"
G=default,im2col-8x8-regs,implicit-8x8-ksplit,implicit-8x8-ksplit-pairs,implicit-4x8-ksplit-pairs,implicit-8x8t128-ksplit,implicit-8x8t128-ksplit-pairs,im2col-8x8-blocks
ok && timeout 45 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms $G --chain-only --gemm 2>&1 | grep -v "^|---"
echo "=== tests"
ok && timeout 25 $B/test_imatmul_forms --gtest_filter='*KSplit*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|form" | head -12
ok 150 && timeout 40 $B/test_iconv_implicit --gtest_filter='*GpuTilings*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed|form" | head -12
echo "=== the QDQ nets: default, KSPLIT=2, KSPLIT=1"
M="--qdq --runs 20 --gpu-time"
for k in 0 2 1 0 2; do
  echo "--- KSPLIT=$k"
  ok && GLTENSOR_IMATMUL_KSPLIT=$k timeout 25 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---" | head -30
done
echo "=== the layers and the wide chain"
F=default,implicit-8x8-regs,implicit-8x8-ksplit-pairs,implicit-4x8-ksplit-pairs,implicit-8x8t128-ksplit-pairs,implicit-8x8-ksplit
ok && timeout 45 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms $F --chain 10 2>&1 | grep -v "^|---"
echo "=== per node, the wide net at 112: default, KSPLIT=2"
for k in 0 2; do
  ok && GLTENSOR_IMATMUL_KSPLIT=$k timeout 30 $B/gltensor_model_bench --qdq-loads 1 --runs 10 2>&1 | grep -v "^|---" | tail -24
done
echo "--- end t=${SECONDS}s"
