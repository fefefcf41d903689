#!/usr/bin/env bash
# gemm5's GPU pack, window 1 (under 140 s): the three-Gemm model's plain run (issue 21).
# bin/lib: this branch (plain runs' fused-MLP outputs in host-visible buffers; the prefetch form's
# slice sums by subgroup shuffles, SG). bin-main/lib-main: /work/main/build (7708d85).
# 1. gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4: main,
#    branch, branch with GLTENSOR_SUBGROUPS=0 (host outputs alone), the order rotated, 3 rounds,
#    every process reported;
# 2. --gpu-time --loops none: the kernel's GPU time, main / branch / branch without subgroups, and
#    the branch with 4x8, 4x2 and 8x4 (rows x slices);
# 3. tests (GLES, then desktop GL 4.6), the SG test against sabotaged kernels (GLTENSOR_GLSL_DIR:
#    each must fail); 4. PyTorch's CUDA graph on the same model.
set -f
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
B=$H/bin
pick() { grep -E "^\| Model::run(, ModelOptions::replay)?(, GLTENSOR_(FUSED_MLP=[0-9x]+|HOST_IO=copy))? \||issue 21 goal|e2e phases|GPU time per"; }
main() { echo "-- main $*"; LD_LIBRARY_PATH=$H/lib-main:$LD_LIBRARY_PATH timeout 15 "$H/bin-main/gltensor_model_bench" "$@" 2>&1 | pick; }
branch() { echo "-- branch $*"; timeout 15 "$B/gltensor_model_bench" "$@" 2>&1 | pick; }
nosg() { echo "-- branch GLTENSOR_SUBGROUPS=0 $*"; GLTENSOR_SUBGROUPS=0 timeout 15 "$B/gltensor_model_bench" "$@" 2>&1 | pick; }
M="--runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4"
for r in 1 2 3; do
  echo "=== round $r after $SECONDS s"
  case $r in
    1) main $M; branch $M; nosg $M ;;
    2) branch $M; nosg $M; main $M ;;
    3) nosg $M; main $M; branch $M ;;
  esac
done
echo "=== GPU time after $SECONDS s"
main --runs 500 --loops none --gpu-time
branch --runs 500 --loops none --gpu-time
nosg --runs 500 --loops none --gpu-time
for f in 4x8 4x2 8x4; do  # other row blocks and slices of the prefetch form (SG where a power of 2)
  echo "-- branch GLTENSOR_FUSED_MLP=$f"; GLTENSOR_FUSED_MLP=$f timeout 15 "$B/gltensor_model_bench" --runs 500 --loops none --gpu-time 2>&1 | pick
done
run_test() {  # program, arguments
  timeout 30 "$@" > /tmp/gemm5-t.log 2>&1
  local rc=$?
  echo "== $* rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/gemm5-t.log | tr '\n' ' ')"
  [ $rc -ne 0 ] && grep -E -B2 -A10 "Failure|error|exception" /tmp/gemm5-t.log | head -24
  return 0
}
echo "=== tests after $SECONDS s"
for t in test_fused_mlp test_model_host_io test_model_replay test_recording test_model_run test_model_fusion test_model; do
  [ $SECONDS -lt 100 ] && run_test $B/$t
done
echo "=== sabotage (each must FAIL) after $SECONDS s"
for s in sab1 sab2 sab3; do
  [ $SECONDS -lt 108 ] && GLTENSOR_GLSL_DIR=$H/$s GLTENSOR_CACHE_DIR=/tmp/gemm5-cache-$s run_test $B/test_fused_mlp --gtest_filter='*SubgroupSums*'
done
echo "=== desktop GL after $SECONDS s"
for t in test_fused_mlp test_model_host_io test_model_replay; do
  [ $SECONDS -lt 118 ] && GLTENSOR_API=gl run_test $B/$t
done
echo "=== torch after $SECONDS s"
[ $SECONDS -lt 122 ] && timeout 15 python3 "$H/onnx_torch_bench.py" /tmp/three_gemm.onnx --shape x=1x34x96 --reps 200 2>&1 | tail -3
echo "gemm5 done after $SECONDS s"
