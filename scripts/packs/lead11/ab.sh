#!/usr/bin/env bash
# The lead's final A/B of 2026-11-27 17:40 (bench/RESULTS.md): the same gltensor_bench with main
# 1af164c's kernels (GLTENSOR_GLSL_DIR=glsl-main) against this tree's embedded ones, interleaved.
# Pack: `bash scripts/pack_gpu.sh; git archive 1af164c glsl | tar -x -C /tmp && mv /tmp/glsl
# gpu-pack/glsl-main; cp scripts/packs/lead11/ab.sh gpu-pack/`; run after `bash gpu-pack/run.sh info`
# (which installs NVIDIA's EGL from .gl): `bash gpu-pack/ab.sh`.
P=$(cd "$(dirname "$0")" && pwd)
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
F='BM_sdpa|BM_matmul/f32/(1024|4096)/|BM_conv2d/|BM_softmax|BM_rows'
for r in 1 2; do
  for v in old new; do
    echo "== $v round $r"
    if [ $v = old ]; then export GLTENSOR_GLSL_DIR=$P/glsl-main; else unset GLTENSOR_GLSL_DIR; fi
    GLTENSOR_CACHE_DIR=/tmp/ab-$v timeout 100 "$P/bin/gltensor_bench" --benchmark_min_time=0.05 --benchmark_filter="$F" 2>&1 | grep -E "^BM_"
  done
done
