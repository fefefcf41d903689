#!/usr/bin/env bash
# gemm5's GPU pack, window 2 (under 100 s): the branch's final commit confirmed.
# bin/lib: this branch (plain runs' fused-MLP outputs in host-visible buffers; the subgroup slice
# sums of window 1 reverted). bin-main/lib-main: /work/main/build (7708d85).
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4, main's
#    build and the branch's alternating, the order swapped, 3 rounds, every process reported;
# 2. the branch's bench with --loops e2e,split on main's library and on the branch's (the phases
#    with a synchronize before to_vector); 3. --gpu-time --loops none, main and branch;
# 4. tests (GLES, then desktop GL 4.6); 5. PyTorch's CUDA graph on the same model.
set -f
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
B=$H/bin
pick() { grep -E "^\| Model::run(, ModelOptions::replay)?(, GLTENSOR_(FUSED_MLP=[0-9x]+|HOST_IO=copy))? \||issue 21 goal|e2e phases|e2e split|GPU time per"; }
main() { echo "-- main $*"; LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 15 "$H/bin-main/gltensor_model_bench" "$@" 2>&1 | pick; }
branch() { echo "-- branch $*"; timeout 15 "$B/gltensor_model_bench" "$@" 2>&1 | pick; }
M="--runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4"
for r in 1 2 3; do
  echo "=== round $r after $SECONDS s"
  if [ $((r % 2)) = 1 ]; then main $M; branch $M; else branch $M; main $M; fi
done
echo "=== split after $SECONDS s"
echo "-- main's library, the branch's bench"
LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 15 "$B/gltensor_model_bench" --runs 500 --loops e2e,split 2>&1 | pick | grep -v GLTENSOR_
branch --runs 500 --loops e2e,split | grep -v GLTENSOR_
echo "=== GPU time after $SECONDS s"
main --runs 500 --loops none --gpu-time | grep "GPU time"
branch --runs 500 --loops none --gpu-time | grep "GPU time"
run_test() {  # program, arguments
  timeout 30 "$@" > /tmp/gemm5-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' /tmp/gemm5-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/gemm5-t.log | head -24
  return 0
}
echo "=== tests after $SECONDS s"
for t in test_fused_mlp test_model_host_io test_model_replay test_recording test_model_run; do
  [ $SECONDS -lt 75 ] && run_test $B/$t
done
echo "=== desktop GL after $SECONDS s"
for t in test_fused_mlp test_model_host_io test_model_replay; do
  [ $SECONDS -lt 85 ] && GLTENSOR_API=gl run_test $B/$t
done
echo "=== torch after $SECONDS s"
[ $SECONDS -lt 90 ] && timeout 10 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -1
echo "gemm5 done after $SECONDS s"
