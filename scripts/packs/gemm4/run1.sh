#!/usr/bin/env bash
# gemm4's GPU pack, window 1 (the lead's window: `bash gpu-multi/gemm4/run.sh` from the repo root,
# $H this folder, $H/lib first in LD_LIBRARY_PATH). Under 140 s. Issue 21: the three-Gemm model end
# to end (Tensor::from_host, Model::run, to_vector) <= 50 us on the H100: the fused MLP kernel's
# prefetch form (each invocation's weights of a layer in registers, the next layer's loaded during
# this one's sums).
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4, main's
#    build (bin-main, lib-main: /work/main/build, b79f694's code) and the branch's alternating
#    (the order swapped every round), 4 rounds, every process reported;
# 2. each build once with --gpu-time --loops none (the fused kernel's GPU time, timer queries);
# 3. test_fused_mlp, test_model_host_io, test_model_replay, test_recording (GLES; test_fused_mlp
#    also on desktop GL 4.6);
# 4. PyTorch's CUDA graph on the same model (onnx_torch_bench.py) if time is left.
set -x
set -f
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
ARGS="--runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4"
pick() { grep -E "^\| Model::run(, ModelOptions::replay)?(, GLTENSOR_FUSED_MLP=[0-9x]+)? \||issue 21 goal|e2e phases|GPU time per"; }
bench() {  # label, extra arguments
  local who=$1
  shift
  echo "== $who $*"
  if [ "$who" = main ]; then
    LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 25 "$H/bin-main/gltensor_model_bench" "$@" 2>&1 | pick
  else
    timeout 25 "$B/gltensor_model_bench" "$@" 2>&1 | pick
  fi
}
for r in 1 2 3 4; do
  echo "=== round $r"
  if [ $((r % 2)) = 1 ]; then bench main $ARGS; bench branch $ARGS; else bench branch $ARGS; bench main $ARGS; fi
done
echo "rounds done after $SECONDS s"
bench main --runs 500 --loops none --gpu-time
bench branch --runs 500 --loops none --gpu-time
run_test() {  # program, arguments
  timeout 40 "$@" > /tmp/gemm4-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/gemm4-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/gemm4-t.log | head -60
  return 0
}
set +x
for t in test_fused_mlp test_model_host_io test_model_replay test_recording; do
  run_test $B/$t
done
[ $SECONDS -lt 115 ] && GLTENSOR_API=gl run_test $B/test_fused_mlp
echo "tests done after $SECONDS s"
[ $SECONDS -lt 110 ] && timeout 25 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -6
echo "gemm4 done after $SECONDS s"
