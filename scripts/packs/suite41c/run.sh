#!/usr/bin/env bash
# suite41c's GPU pack (issue 21): the branch's test_matmul, whole, on GLES and desktop GL. The branch narrows
# Matmul.EveryKernelPath on software rasterizers only (GEMV and warp forced: the half-storage cases); on a GPU it
# runs every case as before, so this checks that the GPU path is unchanged and the binary passes there.
# The lead runs it as `bash gpu-multi/suite41c/run.sh` ($H the pack, made by make_pack.sh).
# (Window 1: the whole GLES run passed 55 s cold; now 85 s for GLES, 45 for GL, the last test named on a timeout.)
set -u
W=/tmp/suite41cw; rm -rf "$W"; mkdir -p "$W"
export LD_LIBRARY_PATH=$H/lib:${LD_LIBRARY_PATH:-}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
for api_t in gles:85 gl:45; do
  api=${api_t%:*} t=${api_t#*:}
  echo; echo "=== [$SECONDS s] test_matmul, GLTENSOR_API=$api (timeout $t s)"
  (cd "$W" && GLTENSOR_API=$api timeout "$t" "$H/bin/test_matmul" > "$W/$api.log" 2>&1; echo "rc $?")
  grep -cE "^\[       OK \]" "$W/$api.log" | sed 's/^/tests OK: /'
  grep -E "^\[ +(FAILED|PASSED|SKIPPED) |Failure|seed=" "$W/$api.log" | head -30
  grep -E "^\[       OK \] Matmul\.(EveryKernelPath|GemvKernel|WarpTiledKernel) " "$W/$api.log"
  grep -E "^\[ RUN      \]" "$W/$api.log" | tail -1 | sed 's/^/last started: /'
done
echo "=== [$SECONDS s] done"
