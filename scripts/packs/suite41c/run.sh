#!/usr/bin/env bash
# suite41c's GPU pack (issue 21): the branch's test_matmul, whole, on GLES and desktop GL. The branch narrows
# Matmul.EveryKernelPath on software rasterizers only (GEMV and warp forced: the half-storage cases); on a GPU it
# runs every case as before, so this checks that the GPU path is unchanged and the binary passes there.
# The lead runs it as `bash gpu-multi/suite41c/run.sh` ($H the pack, made by make_pack.sh).
set -u
W=/tmp/suite41cw; rm -rf "$W"; mkdir -p "$W"
export LD_LIBRARY_PATH=$H/lib:${LD_LIBRARY_PATH:-}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
for api in gles gl; do
  echo; echo "=== [$SECONDS s] test_matmul, GLTENSOR_API=$api"
  (cd "$W" && GLTENSOR_API=$api timeout 55 "$H/bin/test_matmul" --gtest_brief=1 > "$W/$api.log" 2>&1; echo "rc $?")
  grep -E "^\[ +(FAILED|PASSED|SKIPPED) |Failure|seed=|tests? ran" "$W/$api.log" | head -30
  (cd "$W" && GLTENSOR_API=$api timeout 20 "$H/bin/test_matmul" --gtest_filter='Matmul.EveryKernelPath:Matmul.GemvKernel:Matmul.WarpTiledKernel' 2>&1 |
    grep -E "^\[ +(OK|FAILED) " | head -10)
done
echo "=== [$SECONDS s] done"
