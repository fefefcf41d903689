#!/usr/bin/env bash
# suite16's GPU pack (issue 21): test_matmul and test_plans of the branch on OpenGL ES and desktop GL
# (GPUs keep the planner's REG blocks; RegisterBlockedKernel's new GPU-block cases run there), then
# test_matmul with GLTENSOR_MATMUL_REG_BLOCK=4x1 (the cap llvmpipe's tests run under) on GLES.
# The lead runs it as `bash gpu-multi/suite16/run.sh` ($H the pack); at most 125 s (timeouts 10 and 35 s a run). F=FILTER: a
# gtest filter for both binaries (a short local try on llvmpipe).
set -u
W=/tmp/suite16w; rm -rf "$W"; mkdir -p "$W"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
summary() { grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|seed|tests ran" "$1" | head -40; }
for api in gles gl; do
  for t in test_plans test_matmul; do
    step "$t, GLTENSOR_API=$api"
    lim=35; [ $t = test_plans ] && lim=10
    (cd "$W" && GLTENSOR_API=$api timeout $lim "$H/bin/$t" --gtest_brief=1 --gtest_filter="${F:-*}" > "$W/$t-$api.txt" 2>&1); echo "rc $?"
    summary "$W/$t-$api.txt"
  done
done
step "test_matmul, GLTENSOR_MATMUL_REG_BLOCK=4x1, GLES"
(cd "$W" && GLTENSOR_MATMUL_REG_BLOCK=4x1 timeout 35 "$H/bin/test_matmul" --gtest_brief=1 --gtest_filter="${F:-*}" > "$W/capped.txt" 2>&1); echo "rc $?"
summary "$W/capped.txt"
step "done"
