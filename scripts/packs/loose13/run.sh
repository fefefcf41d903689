#!/usr/bin/env bash
# loose13's GPU pack (the lead's window: `bash gpu-multi/loose13/run.sh` from the repo root, $H this
# folder, $H/lib first in LD_LIBRARY_PATH). Under 240 s:
# 1. the branch's tests on the GPU: batch norm and max pooling near 128 MiB and on split grids
#    (cnn29's kernels past 65535 per channel / 128 MiB: closing note 12), the KV cache's host count
#    under replays, the Recording's host steps, the integer matmul's tile rows (plan test), the
#    model's Conv filters' uploads (GPUs: no ubo layout, so buffers of their own size);
# 2. issue 21's three-Gemm model end to end (`gltensor_model_bench --runs 500 --save-model
#    /tmp/three_gemm.onnx --mlp-variants 4x4 4`, as the --ocr pack's replay phase runs it), 3
#    rounds, main's build (bin-main, lib-main) and the branch's alternating, then PyTorch's eager
#    and CUDA-graph reference on the same model (onnx_torch_bench.py --reps 200);
# 3. with the time left, test_quant_int (imatmul.comp with the shared IMATMUL_TILE_ROWS).
set -x
set -f  # (the gtest filters' stars)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=$H/bin
run_test() {  # limit, program, arguments...
  local limit=$1 t=$2
  shift 2
  timeout "$limit" "$B/$t" "$@" > /tmp/loose13-t.log 2>&1
  local rc=$?
  echo "== $t $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/loose13-t.log | tr '\n' ' ')"
  grep -E "^\[ +(OK|SKIPPED) \].*(NearThe|GridsSplit|HostCount|TileRows|ConvFilters)" /tmp/loose13-t.log
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/loose13-t.log | head -80
  return 0
}
run_test 60 test_batch_norm
run_test 60 test_nn --gtest_filter=Pool2d.*
run_test 30 test_kv_cache
run_test 30 test_recording
run_test 20 test_nn_plans --gtest_filter=PlanIMatmul.*
run_test 30 test_model --gtest_filter=Model.ConvFilters*:Model.F16*:Model.Liveness*
for r in 1 2 3; do
  for b in main branch; do
    if [ $b = main ]; then bin=$H/bin-main/gltensor_model_bench lib=$H/lib-main; else bin=$B/gltensor_model_bench lib=$H/lib; fi
    echo "== round $r: $b"
    LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 30 "$bin" --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1
  done
done
timeout 60 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -6
left=$((228 - SECONDS))
[ $left -gt 10 ] && run_test $left test_quant_int
echo "loose13 done after $SECONDS s"
