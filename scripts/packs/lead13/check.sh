#!/usr/bin/env bash
# The lead's last check of main (read-back barrier be0d160, review15) on the GPU: a test subset
# on GLES and the three-Gemm model's bench, 2 rounds.
P=$PWD/gpu-pack
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json LD_LIBRARY_PATH=$P/lib GLTENSOR_CACHE_DIR=/tmp/glt-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in test_pool test_recording test_kv_cache test_random test_quant test_model_host_io test_views test_interop_state test_interop_buffers test_model_run test_matmul; do
  echo "$t $(timeout 120 $P/bin/$t --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED) |Failure|seed=' | tr '\n' ' ')"
done
for r in 1 2; do timeout 60 $P/bin/gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1 | grep -E "^issue 21 goal|^e2e phases"; done
