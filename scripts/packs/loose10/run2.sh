#!/usr/bin/env bash
# loose10, window 2 (branch loose10 at COMMIT below): the lab knobs moved into Settings (imatmul
# swizzle, the pool's smallest class, the model planner's passes) on the GPU; the CUDA-memory test
# against a library whose path is off on purpose (must FAIL); the integer convolutions' ties.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version --format=csv
F='^\[ *(OK|FAILED|PASSED|SKIPPED) |Skipped|Failure|seed=|CUDA memory|differ'
timeout 40 $H/bin/test_pool 2>&1 | grep -E "$F" | head -24
echo "--- sabotage: libgltensor with CudaMemory::make() returning false (the path silently off; must FAIL)"
LD_LIBRARY_PATH=$H/sablib:$LD_LIBRARY_PATH timeout 30 $H/bin/test_pool --gtest_filter='Pool.LargeBuffers*' 2>&1 | grep -E "$F|Expected|Which is|not on CUDA" | head -16
timeout 100 $H/bin/test_iconv_implicit --gtest_filter='IConvImplicit.GpuTilings' 2>&1 | grep -E "$F" | head -10
timeout 40 $H/bin/test_iconv_direct 2>&1 | grep -E "$F" | head -10
timeout 60 $H/bin/test_model_fusion 2>&1 | grep -E "^\[ *(FAILED|PASSED|SKIPPED) |Failure|seed=" | head -10
timeout 30 $H/bin/test_model_layernorm 2>&1 | grep -E "^\[ *(FAILED|PASSED|SKIPPED) |Failure|seed=" | head -6
timeout 30 $H/bin/test_model_attention 2>&1 | grep -E "^\[ *(FAILED|PASSED|SKIPPED) |Failure|seed=" | head -6
timeout 20 $H/bin/test_plans --gtest_filter='Settings.*' 2>&1 | grep -E "$F" | head -6
