#!/usr/bin/env bash
# e2e3's GPU pack, window 3 (the lead's window: `bash gpu-multi/e2e3/run.sh` from the repo root, $H
# this folder, $H/lib first in LD_LIBRARY_PATH). Under 240 s. Issue 21: the three-Gemm model end to
# end (Tensor::from_host, Model::run, to_vector) <= 50 us on the H100.
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4, main's
#    build (bin-main, lib-main) and the branch's alternating, 3 rounds, each round also the branch
#    with E2E3_SPIN_US=2 (2 us between the fence wait's polls; experimental, not the default);
# 2. PyTorch's eager and CUDA-graph reference on the same model (onnx_torch_bench.py);
# 3. where the time goes: the branch's bench with --gpu-time (the kernel's GPU time), the GL calls
#    of one e2e run (e2e_calls under the gl_count.c shim), gltensor_transfer_lab;
# 4. the host I/O tests on the GPU.
set -x
set -f
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
bench() {  # label, then env assignments
  local label=$1
  shift
  echo "== $label $*"
  if [ "$label" = main ]; then
    env LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH "$@" timeout 40 "$H/bin-main/gltensor_model_bench" --runs 500 \
      --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1
  else
    env "$@" timeout 40 "$B/gltensor_model_bench" --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1
  fi
}
for r in 1 2 3; do
  echo "=== round $r"
  bench main
  bench branch
  bench branch E2E3_SPIN_US=2 | sed -n '1,12p'
done
timeout 60 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -6
timeout 40 "$B/gltensor_model_bench" --runs 500 --loops read,e2e --gpu-time 2>&1 | sed -n '1,12p'
echo "== GL calls: branch"
LD_PRELOAD=$B/libgl_count.so timeout 30 "$B/e2e_calls" /tmp/three_gemm.onnx 500 2>&1 | grep -v warm-up
timeout 40 "$B/gltensor_transfer_lab" 2>&1 | tail -20
run_test() {  # program, arguments
  timeout 60 "$@" > /tmp/e2e3-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/e2e3-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/e2e3-t.log | head -60
  return 0
}
for t in test_pool test_model_host_io test_views test_recording test_interop_state test_interop_buffers; do
  run_test $B/$t
done
echo "e2e3 done after $SECONDS s"
