#!/usr/bin/env bash
# loose14's GPU pack, window 2 (the lead's window: `bash gpu-multi/loose14/run.sh` from the repo
# root, $H this folder, $H/lib first in LD_LIBRARY_PATH). Under 100 s. Issue 21: the three-Gemm
# model end to end (Tensor::from_host, Model::run, to_vector) <= 50 us on the H100: the read-back's
# one barrier (Queue::barrier_for_copy) and a replay's first step without its captured barrier.
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4, main's
#    build (bin-main, lib-main: /work/main/build, 889dfda's code) and the branch's alternating
#    (the order swapped every round), 5 rounds; then readback_probe once;
# 2. the runtime's and the model runtime's tests, GLES, and four of them on desktop GL 4.6.
set -x
set -f
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
bench() {  # label
  echo "== $1"
  if [ "$1" = main ]; then
    LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 20 "$H/bin-main/gltensor_model_bench" --runs 500 \
      --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1 | grep -E "^\| Model::run(, ModelOptions::replay)? \||issue 21 goal|e2e phases"
  else
    timeout 20 "$B/gltensor_model_bench" --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1 |
      grep -E "^\| Model::run(, ModelOptions::replay)? \||issue 21 goal|e2e phases"
  fi
}
for r in 1 2 3 4 5; do
  echo "=== round $r"
  if [ $((r % 2)) = 1 ]; then bench main; bench branch; else bench branch; bench main; fi
done
timeout 20 "$B/readback_probe" /tmp/three_gemm.onnx 500 2>&1
run_test() {  # program, arguments
  timeout 40 "$@" > /tmp/loose14-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/loose14-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/loose14-t.log | head -60
  return 0
}
set +x
for t in test_pool test_recording test_kv_cache test_model_run test_model_replay test_model_host_io test_interop_state test_views; do
  run_test $B/$t
done
echo "GLES tests done after $SECONDS s"
for t in test_pool test_recording test_model_replay test_model_host_io; do
  GLTENSOR_API=gl run_test $B/$t
done
echo "loose14 done after $SECONDS s"
