#!/usr/bin/env bash
# suite40c's GPU pack (issue 21): GLTENSOR_IMATMUL_BLOCKS=1 (llvmpipe's integer matmul at 4 x 4 per
# invocation in ctest's incidental entries; GPUs keep their plan) on the GPU. 1) test_plans and
# test_nn_plans (the setting's parse and plan, host-only) on GLES; 2) the capped entries' tests as
# ctest runs them (test_model's Qdq* with ONNX Runtime through python3, test_iconv_warp's
# LargeSums, test_iconv_direct, test_iconv_implicit) with GLTENSOR_IMATMUL_BLOCKS=1, GLES; 3) the
# same with llvmpipe's capped form forced on the GPU (GLTENSOR_IMATMUL_TILE=64 and
# GLTENSOR_IMATMUL_SWIZZLE=0: 64 x 64 tiles of 4 x 4, one K slice, totals in registers, A not
# swizzled); 4) test_model's Qdq* on desktop GL with the cap; 5) the entries that the branch runs
# with GLTENSOR_MATMUL_REG_BLOCK=4x1 (REG at 4 x 4; test_matmul's own cap), as ctest runs them, GLES. The lead runs it as
# `bash gpu-multi/suite40c/run.sh` ($H the pack); about 100-120 s on the H200, at most 135 s (per-run
# timeouts, a hard end). F=FILTER replaces every gtest filter (a short local try on llvmpipe).
set -u
W=/tmp/suite40cw; rm -rf "$W"; mkdir -p "$W"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
summary() { grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|^\[  SKIPPED \]|Failure|seed|tests ran" "$1" | head -30; }
run() {  # NAME LIMIT BINARY FILTER [VAR=value ...]
  local name=$1 lim=$2 bin=$3 filt=${F:-$4}; shift 4
  [ $SECONDS -ge 125 ] && { step "$name: skipped (hard end)"; return; }
  [ $((SECONDS + lim)) -gt 133 ] && lim=$((133 - SECONDS))
  step "$name ($*)"
  (cd "$W" && env "$@" GLTENSOR_ORT_PYTHON="$H/py/ort_run.py" GLTENSOR_REQUIRE_MODELS=1 \
    timeout $lim "$H/bin/$bin" --gtest_brief=1 --gtest_filter="$filt" > "$W/$name.txt" 2>&1); echo "rc $?"
  summary "$W/$name.txt"
}
# PARTS: which steps of "plans implicit imatmul reg" (window 3 ran "plans imatmul", result-w3.txt; the default, for
# window 4: the plan tests, test_iconv_implicit with the cap alone (45 s: w3's cold run passed its 25 s, rc 124, before
# any failure), then the REG steps).
PARTS=${PARTS:-plans implicit reg}
has() { [[ " $PARTS " == *" $1 "* ]]; }
has plans && run plans 10 test_plans 'Settings.*:Plan*' GLTENSOR_API=gles
has plans && run nn_plans 10 test_nn_plans 'PlanIMatmul.*' GLTENSOR_API=gles
cap=GLTENSOR_IMATMUL_BLOCKS=1
has implicit && run implicit-cap 45 test_iconv_implicit '*' GLTENSOR_API=gles $cap
has imatmul && for form in cap forced; do
  extra=(); [ $form = forced ] && extra=(GLTENSOR_IMATMUL_TILE=64 GLTENSOR_IMATMUL_SWIZZLE=0)
  run model-$form 30 test_model 'Model.Qdq*:Model.DynamicQuantizedMatMul*:Model.QLinear*' GLTENSOR_API=gles $cap "${extra[@]}"
  run warp-$form 20 test_iconv_warp 'IConvWarp.LargeSums' GLTENSOR_API=gles $cap "${extra[@]}"
  run direct-$form 20 test_iconv_direct '*' GLTENSOR_API=gles $cap "${extra[@]}"
  run implicit-$form 25 test_iconv_implicit '*' GLTENSOR_API=gles $cap "${extra[@]}"
done
has imatmul && run model-cap-gl 30 test_model 'Model.Qdq*' GLTENSOR_API=gl $cap
reg=GLTENSOR_MATMUL_REG_BLOCK=4x1
has reg && {
run reg-model_run 10 test_model_run '*' GLTENSOR_API=gles $reg
run reg-model_replay 10 test_model_replay '*' GLTENSOR_API=gles $reg
run reg-conv_winograd 15 test_conv_winograd '*' GLTENSOR_API=gles $reg
run reg-lora 10 test_lora '*' GLTENSOR_API=gles GLTENSOR_CHECK_LOOPS=1 $reg
run reg-model_attention 10 test_model_attention '*' GLTENSOR_API=gles GLTENSOR_CHECK_LOOPS=1 $reg
run reg-rnn 15 test_rnn '*' GLTENSOR_API=gles GLTENSOR_CHECK_LOOPS=1 $reg
run reg-signal_ops 10 test_model_signal_ops 'SignalOps.LogMel*' GLTENSOR_API=gles GLTENSOR_CHECK_LOOPS=1 $reg
}
step "done"
