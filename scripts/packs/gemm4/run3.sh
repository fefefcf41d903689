#!/usr/bin/env bash
# gemm4's GPU pack, window 3 (the session's last: under 70 s): the branch's last commit confirmed.
# bin/lib: the branch's last commit (the fused MLP's prefetch form with 4 slices of K for the
# three-Gemm model; replayed run() outputs in host-visible buffers), no experimental switch.
# bin-main/lib-main: /work/main/build (b79f694's code).
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4, main's
#    build and the branch's alternating, the order swapped, 2 rounds, every process reported;
# 2. --gpu-time --loops none, main and branch;
# 3. test_fused_mlp, test_model_host_io, test_model_replay, test_recording (GLES), test_fused_mlp on
#    desktop GL 4.6 if time is left.
set -x
set -f
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
pick() { grep -E "^\| Model::run(, ModelOptions::replay)?(, GLTENSOR_(FUSED_MLP=[0-9x]+|HOST_IO=copy))? \||issue 21 goal|e2e phases|GPU time per"; }
main() { LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 15 "$H/bin-main/gltensor_model_bench" "$@" 2>&1 | pick; }
branch() { timeout 15 "$B/gltensor_model_bench" "$@" 2>&1 | pick; }
M="--runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4"
for r in 1 2; do
  echo "=== round $r after $SECONDS s"
  if [ $((r % 2)) = 1 ]; then main $M; branch $M; else branch $M; main $M; fi
done
main --runs 500 --loops none --gpu-time
branch --runs 500 --loops none --gpu-time
run_test() {  # program, arguments
  timeout 25 "$@" > /tmp/gemm4-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/gemm4-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A12 "Failure|error|exception" /tmp/gemm4-t.log | head -40
  return 0
}
set +x
echo "tests from $SECONDS s"
for t in test_fused_mlp test_model_host_io test_model_replay test_recording; do
  [ $SECONDS -lt 62 ] && run_test $B/$t
done
[ $SECONDS -lt 55 ] && GLTENSOR_API=gl run_test $B/test_fused_mlp
echo "gemm4 done after $SECONDS s"
