#!/usr/bin/env bash
# The lead's call of 2026-11-28 08:11 UTC on the H100 (bench/RESULTS.md): seq19's sequences and optionals on
# main ee5c5f0: the ONNX node and simple folders and the model tests, GLES then desktop GL. gpu-pack/ =
# `scripts/pack_gpu.sh` with only these binaries, plus onnx/node and onnx/simple from libonnx-testdata.
P=$PWD/gpu-pack
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json LD_LIBRARY_PATH=$P/lib GLTENSOR_CACHE_DIR=/tmp/glt-seq
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for api in gles gl; do
  [ $api = gl ] && export GLTENSOR_API=gl
  echo "=== $api"
  for f in node simple; do echo "== $f"; timeout 150 $P/bin/gltensor-onnx-test --quiet $P/onnx/$f 2>&1 | grep -v "performance warning" | grep -E "FAIL|passed" | tail -8; done
  for t in test_model_sequences test_model test_model_run test_model_replay test_model_host_io test_recording; do echo "$t: $(timeout 60 $P/bin/$t --gtest_brief=1 2>&1 | grep -E "PASSED|FAILED|Failure" | tr '\n' ' ')"; done
done
