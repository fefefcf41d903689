#!/usr/bin/env bash
# e2e3's GPU pack, window 1 (the lead's window: `bash gpu-multi/e2e3/run.sh` from the repo root, $H
# this folder, $H/lib first in LD_LIBRARY_PATH). Under 240 s. Issue 21: the three-Gemm model end to
# end (Tensor::from_host, Model::run, to_vector) <= 50 us on the H100.
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4, main's
#    build (bin-main, lib-main) and the branch's alternating, 2 rounds; the branch also with its
#    experimental switches: E2E3_UP=subdata (uploads by glBufferSubData into the pool buffer),
#    E2E3_UP=host (small from_host tensors in host-visible buffers: kernels read host memory),
#    E2E3_READ=two (the read-back's old two fences);
# 2. PyTorch's eager and CUDA-graph reference on the same model;
# 3. gltensor_transfer_lab (raw GL latencies of small transfers);
# 4. the host I/O tests on the GPU under each switch.
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
      --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1 | sed -n '1,12p'
  else
    env "$@" timeout 40 "$B/gltensor_model_bench" --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1 |
      sed -n '1,12p'
  fi
}
for r in 1 2; do
  echo "=== round $r"
  bench main
  bench branch
  bench branch E2E3_UP=subdata
  bench branch E2E3_UP=host
  bench branch E2E3_READ=two
  bench branch E2E3_UP=subdata E2E3_READ=two
done
timeout 60 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -6
timeout 30 "$B/gltensor_transfer_lab" 2>&1 | tail -20
run_test() {  # env..., program, arguments
  timeout 60 env "$@" > /tmp/e2e3-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/e2e3-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/e2e3-t.log | head -60
  return 0
}
for m in E2E3_UP=ring E2E3_UP=subdata E2E3_UP=host; do
  run_test $m $B/test_model_host_io
  run_test $m $B/test_pool
  run_test $m $B/test_views
  run_test $m $B/test_recording
  run_test $m $B/test_interop_state
  [ $SECONDS -gt 215 ] && break
done
echo "e2e3 done after $SECONDS s"
