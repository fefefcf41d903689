#!/usr/bin/env bash
# gemm4's GPU pack, window 2 (the lead's window: `bash gpu-multi/gemm4/run.sh` from the repo root,
# $H this folder, $H/lib first in LD_LIBRARY_PATH). Under 140 s. Issue 21: the three-Gemm model end
# to end <= 50 us on the H100. bin/lib: the branch's last commit (no experimental switch): the fused
# MLP's prefetch form (vec4 activations, a slice past K reads nothing, up to 96 weights an
# invocation) and replays of Model::run writing their outputs of up to 256 KiB in host-visible
# buffers. bin-main/lib-main: /work/main/build (b79f694's code).
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 (main),
#    the same with --mlp-variants 4x4 4 4x2 4x1 (branch: the prefetch form with 8, 4, 2, 1 slices
#    of K), alternating, the order swapped every round, 4 rounds, every process reported;
# 2. --gpu-time --loops none: main, branch, branch with GLTENSOR_FUSED_MLP=4x4, 4x2, 4x1;
# 3. test_fused_mlp, test_model_host_io, test_model_replay, test_recording (GLES), test_fused_mlp and
#    test_model_replay on desktop GL 4.6;
# 4. PyTorch's CUDA graph on the same model (onnx_torch_bench.py) if time is left.
set -x
set -f
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
pick() { grep -E "^\| Model::run(, ModelOptions::replay)?(, GLTENSOR_(FUSED_MLP=[0-9x]+|HOST_IO=copy))? \||issue 21 goal|e2e phases|GPU time per"; }
main() { LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 25 "$H/bin-main/gltensor_model_bench" "$@" 2>&1 | pick; }
branch() { timeout 25 "$B/gltensor_model_bench" "$@" 2>&1 | pick; }
M="--runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4"
for r in 1 2 3 4; do
  echo "=== round $r after $SECONDS s"
  if [ $((r % 2)) = 1 ]; then main $M; branch $M 4x2 4x1; else branch $M 4x2 4x1; main $M; fi
done
echo "rounds done after $SECONDS s"
main --runs 500 --loops none --gpu-time
branch --runs 500 --loops none --gpu-time
for v in 4x4 4x2 4x1; do GLTENSOR_FUSED_MLP=$v branch --runs 500 --loops none --gpu-time; done
run_test() {  # program, arguments
  timeout 40 "$@" > /tmp/gemm4-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/gemm4-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A12 "Failure|error|exception" /tmp/gemm4-t.log | head -60
  return 0
}
set +x
echo "tests from $SECONDS s"
for t in test_fused_mlp test_model_host_io test_model_replay test_recording; do
  run_test $B/$t
done
[ $SECONDS -lt 120 ] && GLTENSOR_API=gl run_test $B/test_fused_mlp
[ $SECONDS -lt 125 ] && GLTENSOR_API=gl run_test $B/test_model_replay
echo "tests done after $SECONDS s"
[ $SECONDS -lt 118 ] && timeout 20 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -2
echo "gemm4 done after $SECONDS s"
