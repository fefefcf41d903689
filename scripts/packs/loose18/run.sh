#!/usr/bin/env bash
# loose18: signal ops (STFT/DFT matrices once per node and sizes, frames as a view) on the GPU.
set -x
cd "$(dirname "$0")/../.." 2>/dev/null || true
B=$H/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat $H/COMMIT
timeout 60 $B/test_model_signal_ops --gtest_brief=1 2>&1 | tail -25
timeout 30 $B/gltensor-onnx-test $H/data/node 2>&1 | tail -25
timeout 60 $B/test_nn --gtest_brief=1 --gtest_filter='Conv2d.GradientRows*:Conv2d.Transpose*' 2>&1 | tail -8
timeout 60 $B/test_reduce --gtest_brief=1 --gtest_filter='Reduce.Segmented*' 2>&1 | tail -8
W=/tmp/loose18; mkdir -p $W
for L in ${LENGTHS:-160000}; do
  timeout 30 python3 $H/gen_logmel.py $W/logmel_$L.onnx $L || continue
  for lib in main loose18; do
    LP=$H/lib; [ $lib = main ] && LP=$H/lib-main:$H/lib
    for mode in plain replay; do
      R=""; [ $mode = replay ] && R=--replay
      echo "== logmel L=$L lib=$lib mode=$mode"
      LD_LIBRARY_PATH=$LP:$LD_LIBRARY_PATH timeout 40 $B/gltensor-run $W/logmel_$L.onnx --input x=$W/logmel_${L}_x.npy \
        --output-dir $W/out_${L}_${lib}_$mode --bench 300 $R 2>&1 | grep -E "^(bench|run:|dispatches|memory|output|gltensor-run)"
      timeout 30 python3 $H/cmp.py $W/logmel_$L.onnx $W/logmel_${L}_x.npy $W/out_${L}_${lib}_$mode/y.npy $W/out_${L}_main_$mode/y.npy
    done
  done
done
