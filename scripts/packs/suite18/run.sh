#!/usr/bin/env bash
# suite18's GPU pack (issue 21): the test programs whose tests the branch changed, and those of the
# planners that now share one ceil_div, on OpenGL ES and desktop GL. No kernel changed (the branch cuts the
# cold suite's CPU on llvmpipe): test_ocr_models (the sample page's host run shared by two tests, the
# recognizer in the cheapest cut's two calls; its ONNX Runtime comparisons skip without node),
# test_attention (FiniteDifferences' first case at Masks' head dims), test_quant (GridPastOneDispatch
# under a dispatch limit of 5 workgroups per axis: on GPUs its grids split too now), test_plans,
# test_nn_plans, test_kv_cache, test_model_signal_ops, test_model_se, test_fused_mlp. The lead runs it as
# `bash gpu-multi/suite18/run.sh` ($H the pack); at most about 130 s (timeouts a run). F=FILTER: a gtest
# filter for every binary (a short local try).
set -u
W=/tmp/suite18w; rm -rf "$W"; mkdir -p "$W/bin" "$W/lib" "$W/cache"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
for f in "$H"/bin/*.xz; do xz -dc "$f" > "$W/bin/$(basename "$f" .xz)"; done
chmod +x "$W"/bin/*
xz -dc "$H/lib/libgltensor.so.0.xz" > "$W/lib/libgltensor.so.0"
mkdir -p "$W/cache/models/ocr"
for f in "$H"/models/models/ocr/*.xz; do xz -dc "$f" > "$W/cache/models/ocr/$(basename "$f" .xz)"; done
export LD_LIBRARY_PATH=$W/lib:${LD_LIBRARY_PATH:-} GLTENSOR_MODEL_CACHE=$W/cache
summary() { grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|Failure|seed|tests ran" "$1" | head -30; }
for api in gles gl; do
  for t in test_quant test_attention test_ocr_models test_plans test_nn_plans test_kv_cache test_model_signal_ops \
    test_model_se test_fused_mlp; do
    step "$t, GLTENSOR_API=$api"
    (cd "$W" && GLTENSOR_API=$api timeout 60 "$W/bin/$t" --gtest_brief=1 --gtest_filter="${F:-*}" > "$W/$t-$api.txt" 2>&1)
    echo "rc $?"
    summary "$W/$t-$api.txt"
  done
done
step "done"
