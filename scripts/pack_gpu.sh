#!/usr/bin/env bash
# Packs what the lent GPU machine needs into gpu-pack/ (ignored by git): binaries built here
# (same x86-64), the extra shared libraries they load, the Fashion-MNIST files (or, with
# --onnx, the ONNX node tests instead, to stay under the 64 MiB carry limit), PyTorch's reference
# script and scripts/gpu_run.sh. Then, with `.gl` from ../shared/gpu/fetch-gl-runtime.sh:
#   run with carry [".gl", "gpu-pack"]:  bash gpu-pack/run.sh tests onnx bench mlp cnn interop
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGLTENSOR_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
grep -qx '/gpu-pack/' .git/info/exclude 2>/dev/null || echo '/gpu-pack/' >> .git/info/exclude
rm -rf gpu-pack && mkdir -p gpu-pack/bin gpu-pack/lib
cp "$build"/tests/test_* "$build"/tools/gltensor-info "$build"/bench/gltensor_bench "$build"/bench/gltensor_kernel_lab \
   "$build"/bench/gltensor_train_profile "$build"/bench/gltensor_interop_bench "$build"/demos/fashion_mnist gpu-pack/bin/
cp -L "$build"/libgltensor.so.0 gpu-pack/lib/  # the shared library (BUILD_SHARED_LIBS, the default)
[ -x "$build/tools/gltensor-onnx-test" ] && cp "$build/tools/gltensor-onnx-test" gpu-pack/bin/
rm -f gpu-pack/bin/test_interop_glx  # needs an X display and GLFW's X11 libraries
strip gpu-pack/bin/*
for lib in libbenchmark.so.1debian libstb.so.0 libonnx_proto.so.1 libprotobuf.so.32; do
  [ -e "/lib/x86_64-linux-gnu/$lib" ] && cp "/lib/x86_64-linux-gnu/$lib" gpu-pack/lib/
done
if [ "${1:-}" = "--onnx" ]; then cp -r /usr/share/libonnx-testdata/data/node gpu-pack/onnx-node
else mkdir -p gpu-pack/data && cp /usr/share/datasets/fashion-mnist/*.gz gpu-pack/data/; fi
cp ../shared/gpu/torch_reference.py ../shared/gpu/torch_train_reference.py bench/compare.py gpu-pack/
cp scripts/gpu_run.sh gpu-pack/run.sh
du -sh gpu-pack
