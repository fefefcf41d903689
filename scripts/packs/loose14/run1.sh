#!/usr/bin/env bash
# loose14's GPU pack, window 1 (the lead's window: `bash gpu-multi/loose14/run.sh` from the repo
# root, $H this folder, $H/lib first in LD_LIBRARY_PATH). Under 140 s. Issue 21: the three-Gemm
# model end to end (Tensor::from_host, Model::run, to_vector) <= 50 us on the H100, after the
# read-back's second barrier went (Queue::barrier_for_copy).
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4, main's
#    build (bin-main, lib-main: /work/main/build, 889dfda's code) and the branch's alternating, 3
#    rounds, each round also readback_probe (to_vector taken apart with host timestamps);
# 2. the runtime's and the model runtime's tests on the GPU;
# 3. PyTorch's CUDA-graph reference on the same model (onnx_torch_bench.py).
set -x
set -f
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
bench() {  # label
  echo "== $1"
  if [ "$1" = main ]; then
    LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 30 "$H/bin-main/gltensor_model_bench" --runs 500 \
      --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1
  else
    timeout 30 "$B/gltensor_model_bench" --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1
  fi
}
for r in 1 2 3; do
  echo "=== round $r"
  if [ $((r % 2)) = 1 ]; then bench main; bench branch; else bench branch; bench main; fi
  timeout 20 "$B/readback_probe" /tmp/three_gemm.onnx 500 2>&1
done
run_test() {  # program, arguments
  timeout 40 "$@" > /tmp/loose14-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/loose14-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/loose14-t.log | head -60
  return 0
}
for t in test_pool test_recording test_kv_cache test_model_run test_model_replay test_model_host_io test_interop_state test_views; do
  run_test $B/$t
done
echo "tests done after $SECONDS s"
[ $SECONDS -lt 100 ] && timeout 35 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -6
echo "loose14 done after $SECONDS s"
