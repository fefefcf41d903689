#!/usr/bin/env bash
# suite41d's GPU pack (issue 21: the cold suite's runs): the branch's changed tests on the GPU, on
# GLES and desktop GL: test_reduce whole (Softmax.AnyDimViewsAndSpecials' reference, the [70001, 3]
# rows of ContiguousRowsFastPath in f32 only), test_pool whole (test_pool's entry; its data from a
# SplitMix stream) and as the test_pool_staging_copy entry now runs it (GLTENSOR_STAGING=copy and its
# gtest filter), test_model_signal_ops whole (ref_stft's DFT table) (window 2 on). The lead
# runs it as `bash gpu-multi/suite41d/run.sh` ($H the pack: bin/ the branch's stripped tests, lib/
# its libgltensor.so.0); about 20-40 s on the H200, at most 130 s (per-run timeouts).
set -u
W=/tmp/suite41dw; rm -rf "$W"; mkdir -p "$W"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
summary() { grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|^\[  SKIPPED \]|Failure|seed|tests ran|CUDA memory" "$1" | head -30; }
run() {  # NAME LIMIT BINARY FILTER [VAR=value ...]
  local name=$1 lim=$2 bin=$3 filt=$4; shift 4
  [ $SECONDS -ge 120 ] && { step "$name: skipped (hard end)"; return; }
  [ $((SECONDS + lim)) -gt 128 ] && lim=$((128 - SECONDS))
  step "$name ($*)"
  (cd "$W" && env "$@" timeout $lim "$H/bin/$bin" --gtest_brief=1 --gtest_filter="$filt" > "$W/$name.txt" 2>&1); echo "rc $?"
  summary "$W/$name.txt"
}
COPY_FILTER='-Pool.StreamCopy*:Pool.ParallelCopy*:Pool.AnUploadWithNoDispatch*:Pool.AReadBackClears*:Pool.LargeBuffersOn*:Pool.LargeBuffersGoTo*'
for api in gles gl; do
  run reduce-$api 40 test_reduce '*' GLTENSOR_API=$api
  run pool-$api 30 test_pool '*' GLTENSOR_API=$api
  run pool-copy-$api 30 test_pool "$COPY_FILTER" GLTENSOR_API=$api GLTENSOR_STAGING=copy
  [ -x "$H/bin/test_model_signal_ops" ] && run signal-$api 30 test_model_signal_ops '*' GLTENSOR_API=$api
done
step done
