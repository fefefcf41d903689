#!/usr/bin/env bash
# The lead's last GPU check (2026-11-28): loose16's argument checks and the ONNX ConvTranspose 1-D path.
P=$PWD/gpu-pack
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json LD_LIBRARY_PATH=$P/lib GLTENSOR_CACHE_DIR=/tmp/glt-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for api in gles gl; do for t in $P/bin/test_*; do
  echo "$api $(basename $t) $(GLTENSOR_API=$api timeout 100 $t --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED) |Failure|seed=' | tr '\n' ' ')"
done; done
