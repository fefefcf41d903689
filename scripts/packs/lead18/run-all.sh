#!/usr/bin/env bash
# The lead's helper window on the GPU machine (repo root): ONLY="a b" T=120 OUT=$OUT bash gpu-multi/run-all.sh
# For each pack gpu-multi/NAME (carried): H=its path, LD_LIBRARY_PATH=H/lib:gpu-multi/common-lib, NVIDIA's EGL,
# its own program cache; `bash H/run.sh` with timeout T, output OUT/NAME.txt; summary OUT/info.txt.
set -u
R=$(cd "$(dirname "$0")" && pwd)
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader > "$OUT/info.txt" 2>&1
base_ld=${LD_LIBRARY_PATH:-}
for n in ${ONLY:-}; do
  [ -f "$R/$n/run.sh" ] || { echo "$n: no run.sh" >> "$OUT/info.txt"; continue; }
  t0=$SECONDS
  ( cd "$R/.." && H=$R/$n LD_LIBRARY_PATH=$R/$n/lib:$R/common-lib:$base_ld GLTENSOR_CACHE_DIR=/tmp/gc-$n \
      timeout "${T:-120}" bash "$R/$n/run.sh" ) > "$OUT/$n.txt" 2>&1
  echo "$n rc=$? $((SECONDS - t0)) s" >> "$OUT/info.txt"
done
