#!/usr/bin/env bash
# loose10 (branch loose10 at COMMIT below): the CUDA-memory pool test (review10's finding 4), the GEMV
# kernel's tail loads (gemv.comp clamped + select) and its sabotage on the GPU, and the tests the
# sabotage audit strengthened (ternary ops, cross_entropy's Inf logits, batch_norm's eval eps).
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version --format=csv
timeout 60 $H/bin/test_pool 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Skipped|CUDA|Failure|seed=|Expected|Which|buffer" | head -40
GLTENSOR_CUDA_MEMORY=0 timeout 30 $H/bin/test_pool --gtest_filter='Pool.LargeBuffers*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Skipped|CUDA|Failure" | head -12
timeout 60 $H/bin/test_matmul --gtest_filter='Matmul.Gemv*:Matmul.EveryKernelPath' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|K = |seed=" | head -20
echo "--- sabotage: gemv.comp's b_quad select dropped (must FAIL)"
GLTENSOR_GLSL_DIR=$H/sab_gemv timeout 60 $H/bin/test_matmul --gtest_filter='Matmul.GemvKernel' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |K = " | head -12
timeout 40 $H/bin/test_elementwise --gtest_filter='TernaryOps.*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=" | head
timeout 40 $H/bin/test_cross_entropy 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=" | head
timeout 40 $H/bin/test_batch_norm 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=" | head -12
