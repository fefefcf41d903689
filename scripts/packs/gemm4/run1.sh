#!/usr/bin/env bash
# gemm4's GPU pack, window 1 (the lead's window: `bash gpu-multi/gemm4/run.sh` from the repo root,
# $H this folder, $H/lib first in LD_LIBRARY_PATH). Under 140 s. Issue 21: the three-Gemm model end
# to end (Tensor::from_host, Model::run, to_vector) <= 50 us on the H100: the fused MLP kernel's
# prefetch form (each invocation's weights of a layer in registers, the next layer's loaded during
# this one's sums; activations by row quad in vec4 shared memory).
# bin/lib: the branch at 9baed07 built with exp1.diff (switches read from the environment, unset =
# the commit's behaviour): GEMM4_PF=0 the loop form (main's kernel) in the same build;
# GEMM4_HOST_OUT=1 replays of Model::run write their outputs (<= 256 KiB) in host-visible buffers.
# bin-main/lib-main: /work/main/build (b79f694's code).
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4:
#    main, branch, branch GEMM4_PF=0, branch GEMM4_HOST_OUT=1, 3 rounds, the order rotated;
# 2. each of main / branch / branch PF=0 once with --gpu-time --loops none (kernel GPU time);
# 3. test_fused_mlp, test_model_host_io, test_model_replay, test_recording (GLES), test_fused_mlp on
#    desktop GL 4.6; test_model_replay with GEMM4_HOST_OUT=1;
# 4. PyTorch's CUDA graph on the same model (onnx_torch_bench.py) if time is left.
set -x
set -f
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
ARGS="--runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4"
pick() { grep -E "^\| Model::run(, ModelOptions::replay)?(, GLTENSOR_FUSED_MLP=[0-9x]+)? \||issue 21 goal|e2e phases|GPU time per"; }
bench() {  # label, arguments
  local who=$1
  shift
  echo "== $who $*"
  case $who in
    main) LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 25 "$H/bin-main/gltensor_model_bench" "$@" 2>&1 | pick ;;
    branch) timeout 25 "$B/gltensor_model_bench" "$@" 2>&1 | pick ;;
    pf0) GEMM4_PF=0 timeout 25 "$B/gltensor_model_bench" "$@" 2>&1 | pick ;;
    hostout) GEMM4_HOST_OUT=1 timeout 25 "$B/gltensor_model_bench" "$@" 2>&1 | pick ;;
  esac
}
order=(main branch pf0 hostout)
for r in 0 1 2; do
  echo "=== round $((r + 1)) after $SECONDS s"
  for i in 0 1 2 3; do bench "${order[$(((i + r) % 4))]}" $ARGS; done
done
echo "rounds done after $SECONDS s"
for who in main branch pf0; do bench $who --runs 500 --loops none --gpu-time; done
run_test() {  # program, arguments
  timeout 40 "$@" > /tmp/gemm4-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/gemm4-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/gemm4-t.log | head -60
  return 0
}
set +x
echo "tests from $SECONDS s"
for t in test_fused_mlp test_model_host_io test_model_replay test_recording; do
  run_test $B/$t
done
[ $SECONDS -lt 120 ] && GEMM4_HOST_OUT=1 run_test $B/test_model_replay
[ $SECONDS -lt 125 ] && GLTENSOR_API=gl run_test $B/test_fused_mlp
echo "tests done after $SECONDS s"
[ $SECONDS -lt 115 ] && timeout 25 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -6
echo "gemm4 done after $SECONDS s"
