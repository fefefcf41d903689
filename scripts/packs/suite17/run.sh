#!/usr/bin/env bash
# suite17's GPU pack (issue 21): test_plans and test_conv_direct of the branch on OpenGL ES and desktop GL.
# The branch plans conv_direct's ubo layout (software rasterizers' layout; GPUs run it only where
# GLTENSOR_CONV_DIRECT=ubo forces it, as test_conv_direct's ubo cases do) with 16 or 8 positions per
# invocation, no longer 32: no kernel changed, so no speed A/B; the forced-ubo cases and the planner's
# expectations on both APIs. The lead runs it as `bash gpu-multi/suite17/run.sh` ($H the pack); at most
# about 110 s (timeouts 10 and 45 s a run). F=FILTER: a gtest filter for both binaries (a short local try).
set -u
W=/tmp/suite17w; rm -rf "$W"; mkdir -p "$W"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
summary() { grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|seed|tests ran" "$1" | head -40; }
for api in gles gl; do
  for t in test_plans test_conv_direct; do
    step "$t, GLTENSOR_API=$api"
    lim=45; [ $t = test_plans ] && lim=10
    (cd "$W" && GLTENSOR_API=$api timeout $lim "$H/bin/$t" --gtest_brief=1 --gtest_filter="${F:-*}" > "$W/$t-$api.txt" 2>&1); echo "rc $?"
    summary "$W/$t-$api.txt"
  done
done
step "done"
